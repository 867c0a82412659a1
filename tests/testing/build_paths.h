// Paths of files of the build tree, found at run time from the test binary's own place; the
// macros of ember_test_paths (tests/CMakeLists.txt) expand to build_path("<relative path>").
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <string>

namespace ember::testing {

/** The build tree's root: the parent of the directory holding this executable (bin/). */
inline const std::filesystem::path& build_root() {
  static const std::filesystem::path root =
      std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path();
  return root;
}

/** `relative` (to the build tree's root) made absolute; the pointer lives as long as the
 *  process, so it can stand wherever a string literal did. */
inline const char* build_path(const char* relative) {
  static std::mutex mutex;
  static std::map<std::string, std::string> paths;  // node-based: c_str() stays put
  const std::lock_guard<std::mutex> lock(mutex);
  auto [it, fresh] = paths.try_emplace(relative);
  if (fresh) it->second = (build_root() / relative).lexically_normal().string();
  return it->second.c_str();
}

}  // namespace ember::testing
