// The failure table of ARCHITECTURE.md ("Discovery and loading"): every row has a fixture built by
// CMake. For each, the process survives, the CPU plugin still runs an op, the report names the
// outcome and the cause, and with EMBER_PLUGINS_STRICT=1 the same fixture is fatal with a clear
// message.
#include <filesystem>
#include <string>
#include <vector>

#include <ember/ember.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/plugin/plugin_test_util.h"

namespace fs = std::filesystem;

namespace ember {
namespace {

using test::has;
using test::run_cli;
using test::run_probe;

// One failing row: the fixture's file name, the outcome and a substring of the reason.
struct Row {
  const char* file;
  const char* outcome;
  const char* reason;
};

const std::vector<Row>& failing_rows() {
  static const std::vector<Row> rows = {
      {"libember-truncated.so", "corrupt_file", "corrupt: 4096 of "},
      {"libember-text.so", "not_a_plugin", "not an ELF file"},
      {"libember-empty.so", "not_a_plugin", "empty file"},
      {"libember-dir.so", "not_a_plugin", "a directory, not a file"},
      {"libember-dangling.so", "not_a_plugin", "dangling symlink"},
      {"libember-unreadable.so", "unreadable", "unreadable: permission bits deny read (mode 0200)"},
      {"libember-aarch64.so", "wrong_arch", "built for aarch64, this host is x86_64"},
      {"libember-elf32.so", "wrong_arch", "built as ELF32 (32-bit), this host is 64-bit x86_64"},
      {"libember-noentry.so", "not_a_plugin",
       "not an Ember plugin: no symbol ember_plugin_entry_v1"},
      {"libember-fixture-abi2.so", "rejected_abi", "built for ABI 2.0, this core provides 1."},
      {"libember-fixture-newminor.so", "rejected_abi", "needs ABI 1.99, this core provides 1."},
      {"libember-fixture-needsdep.so", "missing_dependency",
       "missing dependency libember_phantom_dep"},
      {"libember-fixture-undefined.so", "undefined_symbol",
       "undefined symbol: ember_core_function_removed_in_this_core"},
      {"libember-fixture-initfail.so", "init_failed", "init failed: fixture refuses to start"},
      {"libember-fixture-initthrows.so", "init_failed",
       "init failed: init threw: fixture threw from init"},
  };
  return rows;
}

// The whole fixture directory plus the second one, through EMBER_PLUGIN_PATH.
class FailureTable : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    test::RunResult r = run_probe(
        std::string("EMBER_PLUGIN_PATH=") + EMBER_FIXTURE_DIR + ":" + EMBER_FIXTURE_DIR2,
        "--run-op fixture_conflict_op --run-op fixture_good_op --run-op fixture_abi10_twice");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    probe_ = new nlohmann::json(nlohmann::json::parse(r.out));
    rows_ = new std::map<std::string, nlohmann::json>(
        test::in_dir((*probe_)["report"], EMBER_FIXTURE_DIR));
  }
  static void TearDownTestSuite() {
    delete probe_;
    delete rows_;
  }
  static const nlohmann::json& row(const std::string& file) { return rows_->at(file); }

  static nlohmann::json* probe_;
  static std::map<std::string, nlohmann::json>* rows_;
};
nlohmann::json* FailureTable::probe_ = nullptr;
std::map<std::string, nlohmann::json>* FailureTable::rows_ = nullptr;

TEST_F(FailureTable, EveryFailingRowIsReportedWithItsCause) {
  for (const Row& r : failing_rows()) {
    SCOPED_TRACE(r.file);
    ASSERT_TRUE(rows_->count(r.file)) << "no record for " << r.file;
    EXPECT_EQ(row(r.file)["outcome"], r.outcome);
    EXPECT_TRUE(has(row(r.file)["reason"], r.reason)) << row(r.file)["reason"];
  }
}

TEST_F(FailureTable, CpuStillRunsAnOp) {
  EXPECT_EQ((*probe_)["add"], 2.0);
  EXPECT_EQ(test::by_file((*probe_)["report"]).at("libember-cpu.so")["outcome"], "loaded");
}

TEST_F(FailureTable, AbiVersionsAreBothInTheMessage) {
  const std::string minor = std::to_string(EMBER_ABI_MINOR);
  EXPECT_EQ(
      row("libember-fixture-abi2.so")["reason"],
      "built for ABI 2.0, this core provides 1." + minor + " (rebuild it against this Ember)");
  EXPECT_EQ(row("libember-fixture-newminor.so")["reason"],
            "needs ABI 1.99, this core provides 1." + minor + " (update Ember)");
}

TEST_F(FailureTable, MissingDependencyNamesEveryMissingLibrary) {
  const std::string reason = row("libember-fixture-needsdep.so")["reason"];
  EXPECT_TRUE(has(reason, "libember_phantom_dep.so")) << reason;
  EXPECT_TRUE(has(reason, "libember_phantom_dep2.so")) << reason;
}

TEST_F(FailureTable, FailedInitLeavesNothingRegistered) {
  for (const auto& d : (*probe_)["device_types"]) {
    EXPECT_NE(d["name"], "initfail-device");
    EXPECT_NE(d["name"], "initthrows-device");
  }
  EXPECT_FALSE((*probe_)["fixture_kernels"].contains("fixture_staged_op"));
}

TEST_F(FailureTable, SamePluginTwiceLoadsOnce) {
  EXPECT_EQ(row("libember-fixture-good.so")["outcome"], "loaded");
  EXPECT_EQ((*probe_)["ops"]["fixture_good_op"], 7.0);
  // A symlink to it in the same directory, and a copy in the second directory.
  EXPECT_EQ(row("libember-goodlink.so")["outcome"], "shadowed");
  EXPECT_TRUE(has(row("libember-goodlink.so")["reason"], "same file as"))
      << row("libember-goodlink.so");
  const auto second = test::in_dir((*probe_)["report"], EMBER_FIXTURE_DIR2);
  ASSERT_TRUE(second.count("libember-fixture-good.so"));
  EXPECT_EQ(second.at("libember-fixture-good.so")["outcome"], "shadowed");
  EXPECT_TRUE(
      has(second.at("libember-fixture-good.so")["reason"], "plugin 'good' already loaded from"));
}

TEST_F(FailureTable, ConflictsHaveAWinnerByPriorityAndAreRecorded) {
  EXPECT_EQ(row("libember-fixture-conflict-a.so")["outcome"], "loaded");
  EXPECT_EQ(row("libember-fixture-conflict-b.so")["outcome"], "loaded");
  EXPECT_EQ((*probe_)["ops"]["fixture_conflict_op"], 300.0);  // conflict-b, priority 300
  std::string conflicts;
  for (const auto& c : (*probe_)["report"]["conflicts"]) conflicts += c.get<std::string>() + "\n";
  EXPECT_TRUE(
      has(conflicts, "device type 'fixdev' of plugin conflict-a replaced by plugin conflict-b"))
      << conflicts;
  EXPECT_TRUE(has(conflicts,
                  "kernel fixture_conflict_op on cpu for float32: conflict-b (priority "
                  "300) replaces conflict-a (priority 150)"))
      << conflicts;
  for (const auto& d : (*probe_)["device_types"]) {
    if (d["name"] == "fixdev") {
      EXPECT_EQ(d["plugin"], "conflict-b");
    }
  }
}

// The same two plugins loaded in the opposite order give the same winner.
TEST(Conflicts, WinnerDoesNotDependOnLoadOrder) {
  const std::string a = std::string(EMBER_FIXTURE_DIR) + "/libember-fixture-conflict-a.so";
  const std::string b = std::string(EMBER_FIXTURE_DIR) + "/libember-fixture-conflict-b.so";
  for (const auto& order : {a + " --load " + b, b + " --load " + a}) {
    SCOPED_TRACE(order);
    test::RunResult r = run_probe("", "--load " + order + " --run-op fixture_conflict_op");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["ops"]["fixture_conflict_op"], 300.0);
    for (const auto& d : j["device_types"]) {
      if (d["name"] == "fixdev") {
        EXPECT_EQ(d["plugin"], "conflict-b");
      }
    }
    EXPECT_FALSE(j["report"]["conflicts"].empty());
  }
}

// Strict mode: each failing fixture alone (through a directory holding a symlink of the same
// name) makes `ember plugins` exit non-zero with "[plugin] <file> not loaded: <reason>".
TEST(StrictMode, EveryFailingRowIsFatalWithAClearMessage) {
  const fs::path scratch = fs::temp_directory_path() / ("ember-strict-" + std::to_string(getpid()));
  for (const Row& r : failing_rows()) {
    SCOPED_TRACE(r.file);
    fs::remove_all(scratch);
    fs::create_directories(scratch);
    fs::create_symlink(fs::path(EMBER_FIXTURE_DIR) / r.file, scratch / r.file);
    test::RunResult res =
        run_cli("EMBER_PLUGINS_STRICT=1 EMBER_PLUGIN_PATH=" + scratch.string(), "plugins --json");
    EXPECT_EQ(res.exit_code, 1) << res.out;
    EXPECT_TRUE(has(res.err, std::string("[plugin] ") + r.file + " not loaded: ")) << res.err;
    EXPECT_TRUE(has(res.err, r.reason)) << res.err;
    EXPECT_TRUE(has(res.err, "strict mode, EMBER_PLUGINS_STRICT=1")) << res.err;
    // Without strict mode the same directory is survivable.
    test::RunResult lax = run_cli("EMBER_PLUGIN_PATH=" + scratch.string(), "plugins --json");
    EXPECT_EQ(lax.exit_code, 0) << lax.err;
  }
  fs::remove_all(scratch);
}

// Shadowing and conflicts are outcomes, not failures: never fatal.
TEST(StrictMode, DuplicatesAndConflictsAreNotFatal) {
  const std::string files =
      std::string(EMBER_FIXTURE_DIR) + "/libember-fixture-good.so:" + EMBER_FIXTURE_DIR +
      "/libember-goodlink.so:" + EMBER_FIXTURE_DIR2 + ":" + EMBER_FIXTURE_DIR +
      "/libember-fixture-conflict-a.so:" + EMBER_FIXTURE_DIR + "/libember-fixture-conflict-b.so";
  test::RunResult r = run_probe("EMBER_PLUGINS_STRICT=1 EMBER_PLUGIN_PATH=" + files,
                                "--run-op fixture_conflict_op");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ops"]["fixture_conflict_op"], 300.0);
  EXPECT_FALSE(j["report"]["conflicts"].empty());
}

TEST(StrictMode, LoadPluginThrowsInStrictMode) {
  test::RunResult r = run_probe("EMBER_PLUGINS_STRICT=1",
                                std::string("--load ") + EMBER_FIXTURE_DIR + "/libember-text.so");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(has(r.err, "[plugin] libember-text.so not loaded: not an ELF file")) << r.err;
}

TEST(PluginReport, SearchPathNamesTheCoreLibraryDir) {
  test::RunResult r = run_cli("", "plugins --json");
  ASSERT_EQ(r.exit_code, 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["search_path"].empty());
  EXPECT_EQ(j["search_path"][0]["source"], "core library dir");
  EXPECT_EQ(fs::path(j["search_path"][0]["dir"].get<std::string>()).filename(), "ember-plugins");
  EXPECT_EQ(j["search_path"][0]["exists"], true);
  EXPECT_EQ(j["plugins"][0]["name"], "cpu");
  EXPECT_EQ(j["plugins"][0]["outcome"], "loaded");
  EXPECT_FALSE(j["plugins"][0]["build_info"].get<std::string>().empty());
}

}  // namespace
}  // namespace ember
