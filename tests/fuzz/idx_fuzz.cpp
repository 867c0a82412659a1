// Fuzz target: the IDX reader (data::read_idx), raw and gzipped. Every input must read or throw
// an ember::Error starting with "[data.idx]"; anything else is a finding.
#include <cstdint>
#include <cstdlib>

#include <ember/ember.h>

#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  fuzz::MemFile file(data, size);
  try {
    const Tensor t = data::read_idx(file.path());
    // What was read is what the header announced: uint8 of 1 or 3 dims.
    if (t.dtype() != DType::UInt8 || (t.dim() != 1 && t.dim() != 3)) std::abort();
    if (t.numel() > 0 && t.data_ptr() == nullptr) std::abort();
  } catch (const Error& e) {
    fuzz::expect_prefix(e.what(), "[data.idx]");
  }
  return 0;
}
