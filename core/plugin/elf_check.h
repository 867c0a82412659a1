// Pre-dlopen validation of a candidate plugin file: dlopen on a truncated or foreign file can
// kill the process (SIGBUS), so the ELF header and the extents it claims are read first.
#pragma once

#include <string>
#include <vector>

#include "ember/plugin/loader.h"
#include "ember/util/export.h"

namespace ember {

/** Result of checking a file: ok, or the outcome and reason it must be skipped with. */
struct ElfCheck {
  bool ok = false;
  PluginOutcome outcome = PluginOutcome::NotAPlugin;
  std::string reason;
};

/** Checks that `path` is a readable, complete ELF shared object for this host. */
EMBER_API ElfCheck check_elf_file(const std::string& path);

/** What the dynamic loader would find for a file's DT_NEEDED entries, followed recursively. */
struct DependencyScan {
  std::vector<std::string> missing;  // "libcudnn.so.9 (needed by libember-cuda.so)", in BFS order
  std::vector<std::string> missing_names;                  // "libcudnn.so.9"
  std::vector<std::pair<std::string, std::string>> found;  // soname -> resolved path
};

/** Walks DT_NEEDED of `path` recursively with the loader's rules (DT_RPATH, LD_LIBRARY_PATH,
 *  DT_RUNPATH with $ORIGIN, already-loaded objects, ld.so.cache, default dirs) without loading
 *  anything, and lists every library that cannot be found. */
EMBER_API DependencyScan scan_dependencies(const std::string& path);

/** Same check over bytes in memory (`file_size` is the full size the bytes claim to be). */
EMBER_API ElfCheck check_elf_bytes(const unsigned char* data, size_t size);

}  // namespace ember
