// Commit: what a plugin's init staged becomes visible, in the order that keeps every registry
// consistent: op schemas (all or none), device types, kernels (by priority, a replaced device
// type losing its old owner's kernels), communication backends; then the plugin's outcome.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/plugin/loading.h"
#include "ember/dispatch/device_registry.h"
#include "ember/dispatch/op.h"

namespace ember::loading {
namespace {

// When a plugin took over device type `id` from plugin `loser`, the loser's kernels for the type
// would run on memory they did not allocate: they are removed (the winner registers its own
// right after). The built-in "core" CPU entry is plain host memory and has no kernels.
void drop_kernels_of_replaced_type(PluginReport& report, int16_t id, const std::string& loser) {
  for (size_t owner = 0; owner < report.plugins.size(); ++owner) {
    const PluginRecord& rec = report.plugins[owner];
    if (rec.name != loser) continue;
    for (const std::string& name : rec.ops) {
      Op& op = op_handle(name);
      for (int d = 0; d < kNumDTypes; ++d) {
        KernelEntry& slot = op.kernels().slot(id, static_cast<DType>(d));
        if (!slot.get() || slot.plugin != static_cast<int16_t>(owner)) continue;
        report.conflicts.push_back(fmt::format(
            "kernel {} on {} for {} of plugin {} dropped: its device type was replaced by plugin "
            "{}",
            name, device_type(id).name, static_cast<DType>(d), rec.name, device_type(id).plugin));
        slot.publish(nullptr);
      }
    }
  }
}

}  // namespace

Step commit(Loader& L, PluginRecord& rec, LoadedPlugin& plugin, const ember_plugin_v1* desc,
            Staging& staging) {
  PluginReport& report = L.report;
  // ABI 1.1: commit the plugin's op schemas (all, or none and init counts as failed) before
  // anything else; kernels it staged for an op another plugin defined first are dropped with
  // the rejected schema (Note [Names of ops defined by plugins]).
  {
    detail::CommittedOpSchemas schemas = detail::commit_op_schemas(staging.op_schemas, rec.name);
    if (!schemas.error.empty()) {
      return Stop{PluginOutcome::InitFailed, fmt::format("init failed: {}", schemas.error)};
    }
    report.conflicts.insert(report.conflicts.end(), schemas.conflicts.begin(),
                            schemas.conflicts.end());
    std::erase_if(staging.kernels,
                  [&](const StagedKernel& k) { return schemas.rejected.count(k.op) > 0; });
  }
  plugin.name = rec.name;
  plugin.desc = desc;
  const int16_t plugin_index = static_cast<int16_t>(report.plugins.size() - 1);

  std::vector<int16_t> ids;
  int usable = 0;
  std::string unusable_reason;
  for (size_t i = 0; i < staging.device_types.size(); ++i) {
    staging.device_types[i].name = staging.device_names[i].c_str();
    std::string conflict;
    const int16_t before = find_device_type(staging.device_names[i]);
    const std::string old_owner = before >= 0 ? device_type(before).plugin : "";
    const int16_t id = detail::register_device_type(staging.device_types[i], rec.name, &conflict);
    if (!conflict.empty()) report.conflicts.push_back(conflict);
    if (id >= 0 && device_type(id).plugin != rec.name) {
      // Note [A device type that lost its name keeps no kernels]
      // The kernels this plugin staged for its own device type expect its own memory; the
      // winner's memory is not it. They are dropped rather than attached to the winner.
      report.conflicts.push_back(fmt::format(
          "kernels of plugin {} for device type '{}' dropped: that device type belongs to {}",
          rec.name, staging.device_names[i], device_type(id).plugin));
      ids.push_back(-1);
      continue;
    }
    if (id >= 0 && !old_owner.empty() && old_owner != "core" && old_owner != rec.name)
      drop_kernels_of_replaced_type(report, id, old_owner);
    ids.push_back(id);
    if (id < 0) continue;
    const DeviceTypeEntry& e = device_type(id);
    if (e.count > 0)
      ++usable;
    else
      unusable_reason = e.unusable_reason;
    rec.devices.push_back(
        e.count > 0 ? fmt::format("{} ({} device{})", e.name, e.count, e.count == 1 ? "" : "s")
                    : fmt::format("{} (0 devices: {})", e.name, e.unusable_reason));
  }
  std::set<std::string> op_names;
  const int32_t num_types = static_cast<int32_t>(device_types().size());
  for (const StagedKernel& k : staging.kernels) {
    int32_t dt = k.device_type;
    if (dt >= kStagedBase) {
      const size_t idx = static_cast<size_t>(dt - kStagedBase);
      dt = idx < ids.size() ? ids[idx] : -1;
    }
    if (dt < 0 || dt >= kMaxDeviceTypes || dt >= num_types) {
      continue;
    }
    Op& op = op_handle(k.op);
    op_names.insert(k.op);
    L.kernel_notes.resize(report.plugins.size());
    L.kernel_notes[static_cast<size_t>(plugin_index)].push_back(
        {k.op, dt, k.dtype_mask, k.priority, k.fn, k.flags});
    for (int d = 0; d < kNumDTypes; ++d) {
      if (!(k.dtype_mask & (1u << d))) continue;
      KernelEntry& slot = op.kernels().slot(static_cast<int16_t>(dt), static_cast<DType>(d));
      // A plugin's own later registration of a slot at the same priority replaces its earlier
      // one (a backend re-registers some kernels with flags after registering them all).
      const bool own_again = slot.plugin == plugin_index && slot.priority == k.priority;
      if (slot.get() && slot.priority >= k.priority && !own_again) {
        if (slot.plugin != plugin_index) {
          report.conflicts.push_back(
              fmt::format("kernel {} on {} for {}: kept {} (priority {}) over {} (priority {})",
                          k.op, device_type(static_cast<int16_t>(dt)).name, static_cast<DType>(d),
                          slot.plugin >= 0 ? report.plugins[slot.plugin].name : "?", slot.priority,
                          rec.name, k.priority));
        }
        continue;
      }
      if (slot.get() && slot.plugin != plugin_index) {
        report.conflicts.push_back(fmt::format(
            "kernel {} on {} for {}: {} (priority {}) replaces {} (priority {})", k.op,
            device_type(static_cast<int16_t>(dt)).name, static_cast<DType>(d), rec.name, k.priority,
            slot.plugin >= 0 ? report.plugins[slot.plugin].name : "?", slot.priority));
      }
      slot.publish(k.fn, k.priority, plugin_index, k.flags);
    }
  }
  rec.ops.assign(op_names.begin(), op_names.end());
  // ABI 1.5: communication backends; a name already taken stays with its first owner unless the
  // newcomer has a higher priority (as kernels do).
  for (CommBackend& b : staging.comm) {
    char why[512] = {0};
    b.plugin = rec.name;
    b.usable = !b.table.available || b.table.available(b.table.ctx, why, sizeof(why)) != 0;
    if (!b.usable) b.reason = why[0] ? why : "not usable here (no reason given)";
    rec.communication.push_back(
        b.usable ? fmt::format("{} ({})", b.name, fmt::join(b.device_types, ", "))
                 : fmt::format("{} (unusable: {})", b.name, b.reason));
    auto same = std::find_if(L.comm.begin(), L.comm.end(),
                             [&](const CommBackend& o) { return o.name == b.name; });
    if (same == L.comm.end()) {
      L.comm.push_back(b);
    } else if (b.table.priority > same->table.priority) {
      report.conflicts.push_back(
          fmt::format("communication backend {}: {} replaces {}", b.name, rec.name, same->plugin));
      *same = b;
    } else {
      report.conflicts.push_back(
          fmt::format("communication backend {}: kept {} over {}", b.name, same->plugin, rec.name));
    }
    if (b.usable)
      ++usable;
    else
      unusable_reason = b.reason;
  }
  if ((!staging.device_types.empty() || !staging.comm.empty()) && usable == 0) {
    rec.outcome = PluginOutcome::Unusable;
    rec.reason = unusable_reason.empty() ? "no devices" : unusable_reason;
  } else {
    rec.outcome = PluginOutcome::Loaded;
  }
  return std::nullopt;
}

}  // namespace ember::loading
