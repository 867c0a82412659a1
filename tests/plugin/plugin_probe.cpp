// A small program the plugin tests run in child processes: it applies plugin controls given on
// its command line through the API (PluginOptions), loads plugins, runs ops and prints one JSON
// object. A process per case, because discovery runs once per process.
//
//   plugin_probe [--path P]... [--disable G]... [--only G]... [--autoload 0|1] [--strict 0|1]
//                [--require D] [--load FILE]... [--set-default D] [--run-op NAME]...
//                [--olddev-stats] [--shutdown] [--concurrent N]
#include <cstdio>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include <ember/ember.h>
#include <nlohmann/json.hpp>

#include "core/dispatch/call.h"
#include "ember/dispatch/device_registry.h"
#include "ember/dispatch/runtime.h"

namespace {

// Every thread starts at once, then calls init, plugin_report and an op.
nlohmann::json concurrent(int n) {
  std::latch start(n);
  std::vector<std::string> reports(n);
  std::vector<double> sums(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      if (i % 3 == 0) ember::init();
      if (i % 3 == 1) sums[i] = ember::add(ember::ones({1}), ember::ones({1})).item();
      reports[i] = ember::plugin_report_json(ember::plugin_report());
      if (i % 3 != 1) sums[i] = ember::add(ember::ones({1}), ember::ones({1})).item();
    });
  }
  for (auto& t : threads) t.join();
  bool identical = true;
  for (const auto& r : reports) identical = identical && r == reports[0];
  return {
      {"identical", identical}, {"discoveries", ember::detail::discovery_runs()}, {"sums", sums}};
}

}  // namespace

int main(int argc, char** argv) {
  ember::PluginOptions opts;
  bool use_options = false, olddev_stats = false, shutdown = false;
  int threads = 0;
  std::vector<std::string> loads, run_ops;
  std::string set_default;
  auto flag = [](const std::string& v) { return v == "1"; };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--olddev-stats") {
      olddev_stats = true;
      continue;
    }
    if (a == "--shutdown") {
      shutdown = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "probe: %s needs a value\n", a.c_str());
      return 2;
    }
    const std::string v = argv[++i];
    use_options = use_options || a == "--path" || a == "--disable" || a == "--only" ||
                  a == "--autoload" || a == "--strict" || a == "--require";
    if (a == "--path") opts.paths.push_back(v);
    if (a == "--disable") {
      if (!opts.disable) opts.disable.emplace();
      opts.disable->push_back(v);
    }
    if (a == "--only") {
      if (!opts.only) opts.only.emplace();
      opts.only->push_back(v);
    }
    if (a == "--autoload") opts.autoload = flag(v);
    if (a == "--strict") opts.strict = flag(v);
    if (a == "--require") opts.require_device = v;
    if (a == "--load") loads.push_back(v);
    if (a == "--set-default") set_default = v;
    if (a == "--run-op") run_ops.push_back(v);
    if (a == "--concurrent") threads = std::stoi(v);
  }
  nlohmann::json out;
  try {
    if (threads > 0) {
      out["concurrent"] = concurrent(threads);
      std::printf("%s\n", out.dump().c_str());
      return 0;
    }
    if (use_options)
      ember::init(opts);
    else
      ember::init();
    for (const std::string& f : loads) {
      const ember::PluginRecord r = ember::load_plugin(f);
      out["loads"].push_back({{"file", r.file},
                              {"name", r.name},
                              {"outcome", ember::outcome_name(r.outcome)},
                              {"reason", r.reason}});
    }
    out["report"] = nlohmann::json::parse(ember::plugin_report_json(ember::plugin_report()));
    out["add"] = ember::add(ember::ones({1}), ember::ones({1})).item();
    for (const ember::DeviceTypeEntry& e : ember::device_types())
      out["device_types"].push_back({{"name", e.name}, {"plugin", e.plugin}, {"count", e.count}});
    out["fixture_kernels"] = nlohmann::json::object();
    for (const ember::OpInfo& op : ember::list_ops()) {
      if (op.name.rfind("fixture_", 0) != 0) continue;
      for (const auto& [dev, dtypes] : op.kernels) out["fixture_kernels"][op.name].push_back(dev);
    }
    if (!set_default.empty()) ember::set_default_device(ember::Device(set_default));
    out["default_device"] = ember::default_device().str();
    out["best_device"] = ember::best_device().str();
    for (const std::string& name : run_ops) {
      const ember::Tensor x = ember::ones({3});
      const ember::Tensor y = ember::empty({3});
      ember::run_kernel(ember::op_handle(name), ember::DType::Float32, {&x}, {&y});
      out["ops"][name] = y.contiguous().select(0, 2).item();
    }
    if (olddev_stats) {
      const ember_memory_stats s = ember::memory_stats(ember::Device("olddev"));
      out["olddev_stats"] = s.allocated + s.reserved + s.num_allocs;
    }
    if (shutdown) {
      ember::shutdown_plugins();
      out["shutdown"] = true;
    }
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "probe: %s\n", e.what());
    return 3;
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
