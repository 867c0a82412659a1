// Pre-dlopen validation of a candidate plugin file: dlopen on a truncated or foreign file can
// kill the process (SIGBUS), so the ELF header and the extents it claims are read first.
#pragma once

#include <string>

#include "core/plugin/loader.h"
#include "core/util/export.h"

namespace ember {

/** Result of checking a file: ok, or the outcome and reason it must be skipped with. */
struct ElfCheck {
  bool ok = false;
  PluginOutcome outcome = PluginOutcome::NotAPlugin;
  std::string reason;
};

/** Checks that `path` is a readable, complete ELF shared object for this host. */
EMBER_API ElfCheck check_elf_file(const std::string& path);

/** Same check over bytes in memory (`file_size` is the full size the bytes claim to be). */
EMBER_API ElfCheck check_elf_bytes(const unsigned char* data, size_t size);

}  // namespace ember
