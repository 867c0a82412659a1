// Helpers of the tests that run the `ember` command: a scratch directory and the CLI runner.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/testing/build_paths.h"

namespace ember::testing {

/** A fresh directory under the temp dir for one test, removed with its contents. */
struct ScratchDir {
  /** ember-<what>-test-<pid>, created empty. */
  explicit ScratchDir(const std::string& what)
      : path(std::filesystem::temp_directory_path() /
             ("ember-" + what + "-test-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::filesystem::path path;
};

/** Runs the `ember` command at `cli` with `args` (each quoted); its exit status and output. */
inline std::pair<int, std::string> run_cli(const std::string& cli,
                                           const std::vector<std::string>& args) {
  std::string cmd = cli;
  for (const std::string& a : args) cmd += " '" + a + "'";
  cmd += " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; p != nullptr && (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  const int status = p != nullptr ? ::pclose(p) : -1;
  return {status, out};
}

}  // namespace ember::testing
