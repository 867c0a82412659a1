// The report: outcome names, the log lines discovery writes, strict mode's verdict, the error
// for a process with no backend, and the report as JSON.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/plugin/loading.h"
#include "ember/dispatch/device_registry.h"
#include "ember/dispatch/runtime.h"
#include "ember/util/enum_name.h"
#include "ember/util/error.h"

namespace fs = std::filesystem;

namespace ember {

const char* outcome_name(PluginOutcome o) {
  static constexpr const char* kNames[] = {
      "loaded",           "not_a_plugin", "corrupt_file", "wrong_arch", "missing_dependency",
      "undefined_symbol", "rejected_abi", "init_failed",  "unusable",   "shadowed",
      "disabled",         "unreadable",   "insecure",     "crashed"};
  return enum_name<PluginOutcome::Crashed>(o, kNames, "unknown");
}

namespace loading {

bool is_failure(PluginOutcome o) {
  return o != PluginOutcome::Loaded && o != PluginOutcome::Shadowed &&
         o != PluginOutcome::Disabled && o != PluginOutcome::Unusable;
}

std::string file_label(const PluginRecord& p) {
  return fs::path(p.file).filename().string();
}

std::string summary(const PluginReport& r) {
  std::vector<std::string> loaded, failed;
  int shadowed = 0, disabled = 0;
  for (const PluginRecord& p : r.plugins) {
    const std::string label = p.name.empty() ? file_label(p) : p.name;
    if (p.outcome == PluginOutcome::Loaded)
      loaded.push_back(label);
    else if (p.outcome == PluginOutcome::Unusable)
      loaded.push_back(label + " (0 devices)");
    else if (p.outcome == PluginOutcome::Shadowed)
      ++shadowed;
    else if (p.outcome == PluginOutcome::Disabled)
      ++disabled;
    else
      failed.push_back(fmt::format("{}: {}", file_label(p), outcome_name(p.outcome)));
  }
  return fmt::format(
      "[plugin] {} loaded ({}), {} failed{}{}, {} shadowed, {} disabled "
      "(`ember plugins` for details)",
      loaded.size(), fmt::join(loaded, ", "), failed.size(), failed.empty() ? "" : ": ",
      fmt::join(failed, "; "), shadowed, disabled);
}

std::string not_loaded_line(const PluginRecord& p) {
  return fmt::format("[plugin] {} not loaded: {}", file_label(p), p.reason);
}

std::string warning_line(const PluginRecord& p) {
  return fmt::format("[plugin] {} warning: {}", file_label(p), p.warning);
}

// Strict mode and a required device; returns the fatal message, or "".
std::string strict_and_required(const PluginReport& r) {
  if (r.strict) {
    for (const PluginRecord& p : r.plugins) {
      if (is_failure(p.outcome)) {
        return fmt::format("{} (fatal: strict mode, EMBER_PLUGINS_STRICT=1; file {})",
                           not_loaded_line(p), p.file);
      }
    }
  }
  if (!r.require_device.empty()) {
    const int16_t id = find_device_type(r.require_device);
    if (id < 0 || device_type(id).count == 0) {
      return fmt::format("[plugin] EMBER_REQUIRE_DEVICE={} but {} (see `ember plugins`)",
                         r.require_device,
                         id < 0 ? std::string("no plugin provides it")
                                : "it has 0 devices: " + device_type(id).unusable_reason);
    }
  }
  return {};
}

}  // namespace loading

// Note [No backend installed]
// When no plugin registered a kernel (no backend package, or ember-plugins/ left behind), the
// error names what to install and where, not a "no kernel for add" that reads like a missing op.
void detail::explain_no_backend(std::string_view op) {
  const PluginReport r = plugin_report();
  for (const PluginRecord& p : r.plugins) {
    if (!p.ops.empty()) return;  // some backend is there: the usual missing-kernel message
  }
  std::vector<std::string> dirs;
  for (const SearchDir& d : r.search_path) dirs.push_back(d.dir);
  throw NotImplementedError(fmt::format(
      "[{}] no backend is installed: {} plugin file(s) found in [{}]{}, none registered a kernel "
      "(install a backend next to the core library: the ember-backend-cpu or "
      "ember-backend-reference package, or lib/ember-plugins/libember-cpu.so of an Ember "
      "install; or name one in EMBER_PLUGIN_PATH; `ember plugins` shows what was found)",
      op, r.plugins.size(), fmt::join(dirs, ", "),
      r.autoload ? "" : " (autoload is off: EMBER_PLUGIN_AUTOLOAD=0)"));
}

std::string plugin_report_json(const PluginReport& r) {
  nlohmann::json j;
  j["search_path"] = nlohmann::json::array();
  for (const SearchDir& d : r.search_path)
    j["search_path"].push_back(nlohmann::json{{"dir", d.dir}, {"source", d.source}});
  j["plugins"] = nlohmann::json::array();
  for (const PluginRecord& p : r.plugins) {
    j["plugins"].push_back(nlohmann::json{{"file", p.file},
                                          {"name", p.name},
                                          {"version", p.version},
                                          {"abi", p.abi},
                                          {"build_info", p.build_info},
                                          {"outcome", outcome_name(p.outcome)},
                                          {"reason", p.reason},
                                          {"warning", p.warning},
                                          {"devices", p.devices},
                                          {"ops", p.ops},
                                          {"kernels", p.kernels},
                                          {"communication", p.communication}});
  }
  for (size_t i = 0; i < r.search_path.size(); ++i) {
    j["search_path"][i]["exists"] = r.search_path[i].exists;
    j["search_path"][i]["candidates"] = r.search_path[i].candidates;
  }
  j["conflicts"] = r.conflicts;
  j["autoload"] = r.autoload;
  j["strict"] = r.strict;
  j["disabled"] = r.disabled;
  j["only"] = r.only;
  j["require_device"] = r.require_device;
  j["controls"] = r.controls;
  return j.dump(2);
}

}  // namespace ember
