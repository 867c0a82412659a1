// Fuzz target: the plugin file pre-validator (check_elf_bytes, check_elf_file) and, for files
// it accepts, the DT_NEEDED scan. Both must agree and neither may throw or read out of bounds.
#include <cstdint>
#include <cstdlib>

#include <ember/ember.h>

#include "core/plugin/elf_check.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  const ElfCheck in_memory = check_elf_bytes(data, size);
  fuzz::MemFile file(data, size);
  const ElfCheck on_disk = check_elf_file(file.path());
  if (in_memory.ok != on_disk.ok || in_memory.outcome != on_disk.outcome ||
      in_memory.reason != on_disk.reason) {
    std::abort();
  }
  // Accepted files carry no reason; refused ones always say why.
  if (in_memory.ok != in_memory.reason.empty()) std::abort();
  if (on_disk.ok) (void)scan_dependencies(file.path());
  return 0;
}
