#include <elf.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <ember/ember.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/plugin/elf_check.h"

namespace fs = std::filesystem;

namespace ember {
namespace {

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct RunResult {
  int exit_code;
  std::string out;
};

// Runs the ember CLI with extra environment assignments; captures stdout.
RunResult run_cli(const std::string& env, const std::string& args) {
  const std::string cmd = env + " " + EMBER_CLI + " " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// A plugin directory with every fixture plus a directory, a dangling symlink and a symlink to
// the real CPU plugin (all named like plugins).
class PluginDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ember-plugins-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const auto& e : fs::directory_iterator(EMBER_FIXTURE_DIR)) {
      fs::copy_file(e.path(), dir_ / e.path().filename());
    }
    fs::create_directory(dir_ / "libember-dir.so");
    fs::create_symlink(dir_ / "does-not-exist.so", dir_ / "libember-dangling.so");
    fs::create_symlink(EMBER_CPU_PLUGIN, dir_ / "libember-cpulink.so");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::map<std::string, nlohmann::json> report(const std::string& extra_env = "") {
    RunResult r = run_cli("EMBER_PLUGIN_PATH=" + dir_.string() + " " + extra_env, "plugins --json");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    nlohmann::json j = nlohmann::json::parse(r.out);
    std::map<std::string, nlohmann::json> by_file;
    for (const auto& p : j["plugins"])
      by_file[fs::path(p["file"].get<std::string>()).filename()] = p;
    return by_file;
  }

  fs::path dir_;
};

TEST_F(PluginDir, EveryBadCandidateIsReportedAndCpuStillLoads) {
  auto r = report();
  auto outcome = [&](const std::string& f) { return r.at(f)["outcome"].get<std::string>(); };
  auto reason = [&](const std::string& f) { return r.at(f)["reason"].get<std::string>(); };
  // EMBER_PLUGIN_PATH is searched before the core library dir, so the symlink to the CPU
  // plugin loads first and the real file behind it is recorded as shadowed.
  EXPECT_EQ(outcome("libember-cpulink.so"), "loaded");
  EXPECT_EQ(outcome("libember-cpu.so"), "shadowed");
  EXPECT_NE(reason("libember-cpu.so").find("already loaded"), std::string::npos);
  EXPECT_EQ(outcome("libember-text.so"), "not_a_plugin");
  EXPECT_EQ(reason("libember-text.so"), "not an ELF file");
  EXPECT_EQ(outcome("libember-empty.so"), "not_a_plugin");
  EXPECT_EQ(reason("libember-empty.so"), "empty file");
  EXPECT_EQ(outcome("libember-truncated.so"), "corrupt_file");
  EXPECT_NE(reason("libember-truncated.so").find("corrupt: 4096 of "), std::string::npos);
  EXPECT_EQ(outcome("libember-noentry.so"), "not_a_plugin");
  EXPECT_NE(reason("libember-noentry.so").find("not an Ember plugin"), std::string::npos);
  EXPECT_EQ(outcome("libember-fixture-needsdep.so"), "missing_dependency");
  EXPECT_EQ(reason("libember-fixture-needsdep.so"), "missing dependency libember_phantom_dep.so");
  EXPECT_EQ(outcome("libember-fixture-initfail.so"), "init_failed");
  EXPECT_NE(reason("libember-fixture-initfail.so").find("fixture refuses to start"),
            std::string::npos);
  EXPECT_EQ(outcome("libember-fixture-abi2.so"), "rejected_abi");
  EXPECT_NE(reason("libember-fixture-abi2.so").find("built for ABI 2.0, this core provides 1."),
            std::string::npos);
  EXPECT_EQ(outcome("libember-dir.so"), "not_a_plugin");
  EXPECT_EQ(outcome("libember-dangling.so"), "not_a_plugin");
  EXPECT_NE(reason("libember-dangling.so").find("dangling symlink"), std::string::npos);
}

TEST_F(PluginDir, CpuPluginStillRunsOps) {
  RunResult r = run_cli("EMBER_PLUGIN_PATH=" + dir_.string(), "ops --json");
  ASSERT_EQ(r.exit_code, 0);
  nlohmann::json ops = nlohmann::json::parse(r.out);
  bool found_add = false;
  for (const auto& op : ops) {
    if (op["name"] == "add") found_add = op["kernels"].contains("cpu");
  }
  EXPECT_TRUE(found_add);
}

TEST_F(PluginDir, StrictModeMakesAnyFailureFatal) {
  RunResult r =
      run_cli("EMBER_PLUGIN_PATH=" + dir_.string() + " EMBER_PLUGINS_STRICT=1", "plugins --json");
  EXPECT_EQ(r.exit_code, 1);
}

TEST_F(PluginDir, DisabledPluginIsRecordedNotLoaded) {
  auto r = report("EMBER_PLUGINS_DISABLE=initfail,abi*");
  EXPECT_EQ(r.at("libember-fixture-initfail.so")["outcome"], "disabled");
  EXPECT_EQ(r.at("libember-fixture-abi2.so")["outcome"], "rejected_abi");  // ABI check comes first
  EXPECT_EQ(r.at("libember-cpulink.so")["outcome"], "loaded");
}

TEST(PluginControl, RequireDeviceFailsFastWhenAbsent) {
  RunResult ok = run_cli("EMBER_REQUIRE_DEVICE=cpu", "devices");
  EXPECT_EQ(ok.exit_code, 0);
  RunResult bad = run_cli("EMBER_REQUIRE_DEVICE=nosuchdevice", "devices");
  EXPECT_EQ(bad.exit_code, 1);
}

TEST(PluginReport, SearchPathNamesTheCoreLibraryDir) {
  RunResult r = run_cli("", "plugins --json");
  ASSERT_EQ(r.exit_code, 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["search_path"].empty());
  EXPECT_EQ(j["search_path"][0]["source"], "core library dir");
  EXPECT_EQ(fs::path(j["search_path"][0]["dir"].get<std::string>()).filename(), "ember-plugins");
  EXPECT_EQ(j["plugins"][0]["name"], "cpu");
  EXPECT_EQ(j["plugins"][0]["outcome"], "loaded");
}

TEST(ElfCheck, RealPluginPasses) {
  auto bytes = read_file(EMBER_CPU_PLUGIN);
  EXPECT_TRUE(check_elf_bytes(bytes.data(), bytes.size()).ok);
  EXPECT_TRUE(check_elf_file(EMBER_CPU_PLUGIN).ok);
}

TEST(ElfCheck, TruncatedFileIsCorruptWithByteCounts) {
  auto bytes = read_file(EMBER_CPU_PLUGIN);
  ElfCheck c = check_elf_bytes(bytes.data(), 10000);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.outcome, PluginOutcome::CorruptFile);
  EXPECT_NE(c.reason.find("corrupt: 10000 of "), std::string::npos) << c.reason;
}

TEST(ElfCheck, ForeignMachineIsWrongArch) {
  auto bytes = read_file(EMBER_CPU_PLUGIN);
  auto* eh = reinterpret_cast<Elf64_Ehdr*>(bytes.data());
  eh->e_machine = EM_AARCH64;
  ElfCheck c = check_elf_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(c.outcome, PluginOutcome::WrongArch);
  EXPECT_EQ(c.reason, "built for aarch64, this host is x86_64");
}

TEST(ElfCheck, Elf32IsWrongArch) {
  auto bytes = read_file(EMBER_CPU_PLUGIN);
  bytes[EI_CLASS] = ELFCLASS32;
  ElfCheck c = check_elf_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(c.outcome, PluginOutcome::WrongArch);
  EXPECT_NE(c.reason.find("ELF32"), std::string::npos);
}

TEST(ElfCheck, GarbageIsNotAPlugin) {
  const unsigned char text[] = "hello world, not an ELF";
  EXPECT_EQ(check_elf_bytes(text, sizeof(text)).outcome, PluginOutcome::NotAPlugin);
  EXPECT_EQ(check_elf_bytes(text, 0).reason, "empty file");
}

}  // namespace
}  // namespace ember
