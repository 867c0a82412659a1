// Fuzz target: the safetensors reader (io::load, io::load_metadata) on arbitrary bytes. Every
// input must load or throw an ember::Error starting with "[io.load]"; anything else is a finding.
#include <cstdint>
#include <cstdlib>

#include <ember/ember.h>

#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  fuzz::MemFile file(data, size);
  bool header_ok = false;
  try {
    io::load_metadata(file.path());
    header_ok = true;
  } catch (const Error& e) {
    fuzz::expect_prefix(e.what(), "[io.load]");
  }
  try {
    const StateDict tensors = io::load(file.path());
    // A loaded file passed the same header checks.
    if (!header_ok) std::abort();
    uint64_t bytes = 0;
    for (const auto& [name, t] : tensors) {
      if (t.device() != Device::cpu() || !t.is_contiguous()) std::abort();
      bytes += t.nbytes();
    }
    // The tensors cover the data section exactly: the file is length, header, tensor bytes.
    uint64_t header = 0;
    for (int i = 7; i >= 0; --i) header = (header << 8) | data[i];
    if (size < 8 || 8 + header + bytes != size) std::abort();
  } catch (const Error& e) {
    fuzz::expect_prefix(e.what(), "[io.load]");
  }
  return 0;
}
