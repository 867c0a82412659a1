// Fuzz target: the torch.save reader (io::load_torch, io::load) on arbitrary bytes. An input that
// starts like a zip (or the legacy format) is the whole file; any other is a bare pickle, stored
// as data.pkl beside four fixed storages (Note [Fuzzing the unpickler behind a zip]). Every input
// must load or throw an ember::Error starting with "[io.load]"; anything else is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <ember/ember.h>

#include "ember/io.h"
#include "tests/api/io/torch_files.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string file =
      torch_files::is_whole_file(input) ? input : torch_files::wrap_pickle(input);
  fuzz::MemFile mem(reinterpret_cast<const uint8_t*>(file.data()), file.size());
  try {
    const io::TorchFile loaded = io::load_torch(mem.path());
    uint64_t bytes = 0;
    for (const auto& [name, t] : loaded.tensors) {
      if (name.empty() || t.device() != Device::cpu() || !t.is_contiguous()) std::abort();
      bytes += t.nbytes();
    }
    for (const auto& [name, v] : loaded.values) {
      if (name.empty() || loaded.tensors.contains(name)) std::abort();
    }
    // Views share their storage and copies are bounded by the file: what loads is bounded by
    // the file's size times the number of names (a tensor may be listed under several).
    if (bytes > file.size() * (loaded.tensors.size() + 1)) std::abort();
    // io::load reads torch.save files too, and finds the same tensors.
    if (io::load(mem.path()).size() != loaded.tensors.size()) std::abort();
  } catch (const Error& e) {
    fuzz::expect_prefix(e.what(), "[io.load]");
  }
  return 0;
}
