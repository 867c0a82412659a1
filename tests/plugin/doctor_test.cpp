// Diagnostics: `ember plugins -v`, `ember plugins doctor` (child-process loads, every missing
// library) and the start-up summary line. Concurrent first use is in
// tests/reliability/concurrency_test.cpp.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/plugin/plugin_test_util.h"

namespace ember {
namespace {

using test::has;
using test::run_cli;

TEST(Doctor, CrashInAStaticInitialiserIsReportedAndTheCallerLives) {
  test::RunResult r = run_cli(
      "", std::string("plugins doctor ") + EMBER_FIXTURE_CRASH_DIR + "/libember-fixture-crash.so");
  EXPECT_EQ(r.exit_code, 1) << r.err;  // problems found, but the doctor itself did not die
  EXPECT_TRUE(has(r.out, "crashed: SIGSEGV during load")) << r.out;
  EXPECT_TRUE(has(r.out, "1 candidate(s) checked, 1 with problems")) << r.out;
}

TEST(Doctor, ChecksEveryCandidateAndListsEveryMissingLibrary) {
  test::RunResult r =
      run_cli(std::string("EMBER_PLUGIN_PATH=") + EMBER_FIXTURE_DIR, "plugins doctor --json");
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const auto all = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> by;
  for (const auto& rec : all)
    by[std::filesystem::path(rec["file"].get<std::string>()).filename()] = rec;
  ASSERT_TRUE(by.count("libember-cpu.so"));
  EXPECT_EQ(by["libember-cpu.so"]["outcome"], "loaded");
  EXPECT_TRUE(by["libember-cpu.so"]["missing_libraries"].empty());
  const auto& needs = by.at("libember-fixture-needsdep.so");
  EXPECT_EQ(needs["outcome"], "missing_dependency");
  ASSERT_EQ(needs["missing_libraries"].size(), 2u) << needs;
  EXPECT_TRUE(has(needs["missing_libraries"][0], "libember_phantom_dep.so"));
  EXPECT_TRUE(has(needs["missing_libraries"][1], "libember_phantom_dep2.so"));
  EXPECT_EQ(by.at("libember-fixture-undefined.so")["outcome"], "undefined_symbol");
  EXPECT_EQ(by.at("libember-truncated.so")["outcome"], "corrupt_file");
  EXPECT_EQ(by.at("libember-fixture-good.so")["outcome"], "loaded");
  // Each candidate loads in its own process: the symlink to good is not shadowed there.
  EXPECT_EQ(by.at("libember-goodlink.so")["outcome"], "loaded");
}

TEST(Doctor, TextOutputNamesMissingLibraries) {
  test::RunResult r = run_cli(
      "", std::string("plugins doctor ") + EMBER_FIXTURE_DIR + "/libember-fixture-needsdep.so");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has(r.out,
                  "missing library: libember_phantom_dep2.so (needed by "
                  "libember-fixture-needsdep.so)"))
      << r.out;
}

TEST(PluginsCommand, VerboseAddsBuildInfoKernelsAndSearchDetails) {
  test::RunResult r = run_cli("", "plugins -v");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "build: ")) << r.out;
  EXPECT_TRUE(has(r.out, "kernel: add on cpu: float32")) << r.out;
  EXPECT_TRUE(has(r.out, "candidate file(s)")) << r.out;
  EXPECT_TRUE(has(r.out, "Controls: autoload=1 (environment)")) << r.out;
  test::RunResult plain = run_cli("", "plugins");
  EXPECT_FALSE(has(plain.out, "kernel: add on cpu")) << plain.out;
}

TEST(StartupLog, OneSummaryLineInEveryBuild) {
  test::RunResult r = run_cli("EMBER_LOG_LEVEL=info", "devices");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_TRUE(has(r.err, "ember info: [plugin] ")) << r.err;
  EXPECT_TRUE(has(r.err, " loaded (cpu")) << r.err;
  // Failures are warnings: shown at the default level, each with its own line.
  test::RunResult bad = run_cli(std::string("EMBER_PLUGIN_PATH=") + EMBER_FIXTURE_DIR, "devices");
  EXPECT_TRUE(has(bad.err, "ember warning: [plugin] libember-text.so not loaded: not an ELF file"))
      << bad.err;
  EXPECT_TRUE(has(bad.err, "failed: ")) << bad.err;
}

}  // namespace
}  // namespace ember
