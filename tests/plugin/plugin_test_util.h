// Helpers for the plugin tests: run a program in a child process with a clean plugin
// environment and capture its exit status, stdout and stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/testing/build_paths.h"

namespace ember::test {

/** What a child process did. */
struct RunResult {
  int exit_code = -1;  // -1 if killed by a signal
  int signal = 0;
  std::string out, err;
};

/** Runs `program args` under `env` (assignments "A=1 B=2") with every EMBER_* control unset
 *  first, so the caller's environment cannot leak in. */
inline RunResult run(const std::string& env, const std::string& program, const std::string& args) {
  char err_path[] = "/tmp/ember-plugin-test-XXXXXX";
  const int fd = mkstemp(err_path);
  if (fd >= 0) close(fd);
  const std::string cmd =
      "env -u EMBER_PLUGIN_PATH -u EMBER_PLUGINS_DISABLE -u EMBER_PLUGINS_ONLY "
      "-u EMBER_PLUGIN_AUTOLOAD -u EMBER_PLUGINS_STRICT -u EMBER_REQUIRE_DEVICE -u EMBER_DEVICE "
      "-u EMBER_LOG_LEVEL " +
      env + " " + program + " " + args + " 2>" + err_path;
  FILE* p = popen(cmd.c_str(), "r");
  RunResult r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  std::ifstream in(err_path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  std::remove(err_path);
  // `env` reports a child killed by a signal as exit status 128 + signal.
  if (r.exit_code > 128) r.signal = r.exit_code - 128;
  return r;
}

#ifdef EMBER_CLI
/** Runs the ember CLI. */
inline RunResult run_cli(const std::string& env, const std::string& args) {
  return run(env, EMBER_CLI, args);
}
#endif

/** Runs plugin_probe. */
inline RunResult run_probe(const std::string& env, const std::string& args) {
  return run(env, EMBER_PROBE, args);
}

/** The report's plugin records keyed by file name (the first record of each name). */
inline std::map<std::string, nlohmann::json> by_file(const nlohmann::json& report) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& p : report["plugins"]) {
    out.emplace(std::filesystem::path(p["file"].get<std::string>()).filename().string(), p);
  }
  return out;
}

/** Every plugin record for files under `dir`. */
inline std::map<std::string, nlohmann::json> in_dir(const nlohmann::json& report,
                                                    const std::string& dir) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& p : report["plugins"]) {
    const std::filesystem::path f = p["file"].get<std::string>();
    if (f.parent_path() == std::filesystem::path(dir)) out.emplace(f.filename().string(), p);
  }
  return out;
}

/** True if `text` contains `part`. */
inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace ember::test
