// The `ember` command: devices, plugins, ops.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include <ember/ember.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/dispatch/device_registry.h"

namespace {

int cmd_devices() {
  ember::init();
  fmt::print("{:<12} {:<8} {:<10} {}\n", "TYPE", "COUNT", "PLUGIN", "DETAILS");
  for (const ember::DeviceTypeEntry& e : ember::device_types()) {
    std::string details;
    if (e.count == 0) {
      details = e.unusable_reason;
    } else if (e.table.device_props) {
      ember_device_props props{};
      if (e.table.device_props(e.table.ctx, 0, &props) == EMBER_OK) {
        details = fmt::format("{}, {} cores, {:.1f} GiB", props.name, props.num_cores,
                              static_cast<double>(props.total_memory) / (1 << 30));
      }
    }
    fmt::print("{:<12} {:<8} {:<10} {}\n", e.name, e.count, e.plugin, details);
  }
  return 0;
}

int cmd_plugins(bool json) {
  const ember::PluginReport r = ember::plugin_report();
  if (json) {
    std::cout << ember::plugin_report_json(r) << "\n";
    return 0;
  }
  fmt::print("Search path:\n");
  for (const auto& d : r.search_path) fmt::print("  {}  ({})\n", d.dir, d.source);
  fmt::print("\n{:<10} {:<9} {:<5} {:<19} {}\n", "NAME", "VERSION", "ABI", "OUTCOME", "FILE");
  for (const auto& p : r.plugins) {
    fmt::print("{:<10} {:<9} {:<5} {:<19} {}\n", p.name.empty() ? "-" : p.name,
               p.version.empty() ? "-" : p.version, p.abi.empty() ? "-" : p.abi,
               ember::outcome_name(p.outcome), p.file);
    if (!p.reason.empty()) fmt::print("{:>47}{}\n", "reason: ", p.reason);
    if (!p.devices.empty()) fmt::print("{:>47}{}\n", "devices: ", fmt::join(p.devices, ", "));
    if (!p.ops.empty()) fmt::print("{:>47}{} ops\n", "kernels: ", p.ops.size());
  }
  for (const auto& c : r.conflicts) fmt::print("conflict: {}\n", c);
  return 0;
}

int cmd_ops(bool json) {
  const std::vector<ember::OpInfo> ops = ember::ops();
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& op : ops) {
      nlohmann::json kernels = nlohmann::json::object();
      for (const auto& [dev, dtypes] : op.kernels) {
        std::vector<std::string> names;
        for (ember::DType d : dtypes) names.emplace_back(ember::dtype_name(d));
        kernels[dev] = names;
      }
      j.push_back(nlohmann::json{{"name", op.name}, {"kernels", kernels}});
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  for (const auto& op : ops) {
    std::string where;
    for (const auto& [dev, dtypes] : op.kernels) {
      std::vector<std::string_view> names;
      for (ember::DType d : dtypes) names.push_back(ember::dtype_name(d));
      where += fmt::format("{}{} [{}]", where.empty() ? "" : "; ", dev, fmt::join(names, ", "));
    }
    fmt::print("{:<16} {}\n", op.name, where.empty() ? "(no kernels)" : where);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember: an eager deep-learning runtime with plugin backends"};
  app.require_subcommand(1);
  bool json = false;
  auto* devices = app.add_subcommand("devices", "List device types and devices");
  auto* plugins = app.add_subcommand("plugins", "Show plugin discovery: every candidate and its outcome");
  plugins->add_flag("--json", json, "Machine-readable report");
  auto* ops = app.add_subcommand("ops", "List ops and the device types/dtypes with kernels");
  ops->add_flag("--json", json, "Machine-readable list");
  CLI11_PARSE(app, argc, argv);
  try {
    if (*devices) return cmd_devices();
    if (*plugins) return cmd_plugins(json);
    if (*ops) return cmd_ops(json);
  } catch (const ember::Error& e) {
    fmt::print(stderr, "ember: {}\n", e.what());
    return 1;
  }
  return 0;
}
