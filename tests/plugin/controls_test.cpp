// Plugin controls through the environment and through the API (PluginOptions; API over
// environment), explicit load_plugin, and the default device.
#include <string>

#include <ember/ember.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ember/dispatch/device_registry.h"
#include "tests/plugin/plugin_test_util.h"

namespace ember {
namespace {

using test::has;
using test::run_probe;

const std::string kDir = EMBER_FIXTURE_DIR;

nlohmann::json probe_ok(const std::string& env, const std::string& args) {
  test::RunResult r = run_probe(env, args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

std::string outcome(const nlohmann::json& j, const std::string& file) {
  return test::by_file(j["report"]).at(file)["outcome"];
}
std::string reason(const nlohmann::json& j, const std::string& file) {
  return test::by_file(j["report"]).at(file)["reason"];
}

TEST(EnvControls, PluginPathTakesFilesAndDirectories) {
  auto j = probe_ok("EMBER_PLUGIN_PATH=" + kDir + "/libember-fixture-good.so", "");
  EXPECT_EQ(outcome(j, "libember-fixture-good.so"), "loaded");
  EXPECT_EQ(j["report"]["search_path"][0]["source"], "core library dir");  // a file adds no dir
  j = probe_ok("EMBER_PLUGIN_PATH=" + kDir, "");
  EXPECT_EQ(j["report"]["search_path"][0]["source"], "EMBER_PLUGIN_PATH");
  EXPECT_GT(j["report"]["search_path"][0]["candidates"].get<int>(), 10);
}

TEST(EnvControls, DisableTakesCommaSeparatedGlobs) {
  auto j = probe_ok("EMBER_PLUGIN_PATH=" + kDir + " EMBER_PLUGINS_DISABLE=good,conflict-*", "");
  EXPECT_EQ(outcome(j, "libember-fixture-good.so"), "disabled");
  EXPECT_EQ(reason(j, "libember-fixture-good.so"), "disabled by EMBER_PLUGINS_DISABLE");
  EXPECT_EQ(outcome(j, "libember-fixture-conflict-a.so"), "disabled");
  EXPECT_EQ(outcome(j, "libember-fixture-conflict-b.so"), "disabled");
  EXPECT_EQ(outcome(j, "libember-fixture-abi2.so"), "rejected_abi");  // the ABI check comes first
  EXPECT_EQ(outcome(j, "libember-cpu.so"), "loaded");
}

TEST(EnvControls, DisabledByFileNameIsNeverOpened) {
  auto j = probe_ok("EMBER_PLUGIN_PATH=" + kDir + " EMBER_PLUGINS_DISABLE=fixture-good", "");
  EXPECT_EQ(outcome(j, "libember-fixture-good.so"), "disabled");
  EXPECT_EQ(reason(j, "libember-fixture-good.so"),
            "disabled by EMBER_PLUGINS_DISABLE (file name, not loaded)");
}

TEST(EnvControls, OnlyAllowsListedPlugins) {
  auto j = probe_ok("EMBER_PLUGIN_PATH=" + kDir + " EMBER_PLUGINS_ONLY=cpu,goo?", "");
  EXPECT_EQ(outcome(j, "libember-fixture-good.so"), "loaded");
  EXPECT_EQ(outcome(j, "libember-fixture-conflict-a.so"), "disabled");
  EXPECT_EQ(reason(j, "libember-fixture-conflict-a.so"), "not in EMBER_PLUGINS_ONLY");
  EXPECT_EQ(outcome(j, "libember-cpu.so"), "loaded");
  EXPECT_EQ(j["add"], 2.0);
}

TEST(EnvControls, AutoloadOffLoadsOnlyWhatIsNamed) {
  test::RunResult r = run_probe("EMBER_PLUGIN_AUTOLOAD=0", "");
  EXPECT_EQ(r.exit_code, 3);  // no plugin, so no kernels at all: Note [No backend installed]
  EXPECT_TRUE(has(r.err, "no backend is installed")) << r.err;
  EXPECT_TRUE(has(r.err, "autoload is off")) << r.err;
  auto j =
      probe_ok(std::string("EMBER_PLUGIN_AUTOLOAD=0 EMBER_PLUGIN_PATH=") + EMBER_CPU_PLUGIN, "");
  EXPECT_EQ(j["report"]["autoload"], false);
  EXPECT_EQ(j["report"]["plugins"].size(), 1u);
  EXPECT_TRUE(j["report"]["search_path"].empty());
  EXPECT_EQ(j["add"], 2.0);
}

TEST(EnvControls, StrictIsFatal) {
  test::RunResult r = run_probe("EMBER_PLUGINS_STRICT=1 EMBER_PLUGIN_PATH=" + kDir, "");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(has(r.err, "not loaded: ")) << r.err;
}

TEST(EnvControls, RequireDeviceFailsFast) {
  EXPECT_EQ(run_probe("EMBER_REQUIRE_DEVICE=cpu", "").exit_code, 0);
  test::RunResult r = run_probe("EMBER_REQUIRE_DEVICE=cuda EMBER_PLUGINS_DISABLE=cuda", "");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(has(r.err, "[plugin] EMBER_REQUIRE_DEVICE=cuda but no plugin provides it")) << r.err;
  test::RunResult cli = test::run_cli("EMBER_REQUIRE_DEVICE=nosuchdevice", "devices");
  EXPECT_EQ(cli.exit_code, 1);
}

TEST(ApiControls, OptionsWinOverTheEnvironment) {
  // The environment disables good; the API's list replaces it.
  auto j = probe_ok("EMBER_PLUGINS_DISABLE=good", "--path " + kDir + " --disable conflict-a");
  EXPECT_EQ(outcome(j, "libember-fixture-good.so"), "loaded");
  EXPECT_EQ(outcome(j, "libember-fixture-conflict-a.so"), "disabled");
  EXPECT_EQ(reason(j, "libember-fixture-conflict-a.so"), "disabled by PluginOptions::disable");
  EXPECT_EQ(j["report"]["search_path"][0]["source"], "API");
  // Strict in the environment, off through the API: the fixture dir is survivable.
  j = probe_ok("EMBER_PLUGINS_STRICT=1", "--path " + kDir + " --strict 0");
  EXPECT_EQ(j["report"]["strict"], false);
  // Autoload off in the environment, on through the API.
  j = probe_ok("EMBER_PLUGIN_AUTOLOAD=0", "--autoload 1");
  EXPECT_EQ(j["add"], 2.0);
  // Only through the API.
  j = probe_ok("", "--path " + kDir + " --only cpu");
  EXPECT_EQ(reason(j, "libember-fixture-good.so"), "not in PluginOptions::only");
}

TEST(ApiControls, StrictAndRequireThroughTheApi) {
  test::RunResult r = run_probe("", "--path " + kDir + " --strict 1");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(has(r.err, "strict mode")) << r.err;
  r = run_probe("EMBER_REQUIRE_DEVICE=cpu", "--require nosuchdevice");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(has(r.err, "EMBER_REQUIRE_DEVICE=nosuchdevice")) << r.err;
}

TEST(ApiControls, InitWithOptionsAfterDiscoveryThrows) {
  init();
  try {
    init(PluginOptions{});
    FAIL() << "expected ember::Error";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "[plugin] init(options) called after plugins were loaded"))
        << e.what();
  }
}

TEST(ApiControls, LoadPluginReturnsAStatusRecord) {
  PluginRecord bad = load_plugin(kDir + "/libember-text.so");
  EXPECT_EQ(bad.outcome, PluginOutcome::NotAPlugin);
  EXPECT_EQ(bad.reason, "not an ELF file");
  PluginRecord cpu_again = load_plugin(EMBER_CPU_PLUGIN);
  EXPECT_EQ(cpu_again.outcome, PluginOutcome::Shadowed);
}

TEST(BestDevice, IsTheAvailableTypeWithTheHighestPriority) {
  init();
  int16_t best = kCpuType;
  const auto types = device_types();
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i].count > 0 && types[i].table.priority > types[best].table.priority)
      best = static_cast<int16_t>(i);
  }
  EXPECT_EQ(best_device(), Device(best, 0));
  // The factories' default is a separate value: setting it leaves the best device alone.
  const int16_t ref = find_device_type("reference");
  ASSERT_GE(ref, 0);
  set_default_device(Device(ref, 0));
  EXPECT_EQ(default_device(), Device(ref, 0));
  EXPECT_EQ(best_device(), Device(best, 0));
  reset_default_device();
  EXPECT_EQ(default_device(), Device::cpu());
  EXPECT_THROW(set_default_device(Device(kCpuType, 5)), Error);
  EXPECT_EQ(default_device(), Device::cpu());  // a refused device changes nothing
}

TEST(BestDevice, AcceleratorOverCpuAndEnvironmentOverride) {
  // fixdev (conflict-b) declares priority 300, the CPU plugin 100.
  auto j = probe_ok("EMBER_PLUGIN_PATH=" + kDir, "");
  EXPECT_EQ(j["best_device"], "fixdev:0");
  EXPECT_EQ(j["default_device"], "cpu");  // factories stay on the CPU unless told
  j = probe_ok("EMBER_PLUGIN_PATH=" + kDir + " EMBER_DEVICE=cpu", "");
  EXPECT_EQ(j["best_device"], "cpu");
  j = probe_ok("EMBER_PLUGIN_PATH=" + kDir + " EMBER_DEVICE=cpu", "--set-default fixdev");
  EXPECT_EQ(j["default_device"], "fixdev:0");  // the factories' default is not EMBER_DEVICE
  EXPECT_EQ(j["best_device"], "cpu");
  test::RunResult r = run_probe("EMBER_DEVICE=nosuch", "");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(has(r.err, "[device] EMBER_DEVICE=nosuch")) << r.err;
}

}  // namespace
}  // namespace ember
