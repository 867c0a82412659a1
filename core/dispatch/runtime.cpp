// Memory statistics and thread control, forwarded to every backend that offers them.
#include "ember/dispatch/runtime.h"

#include "ember/dispatch/device_registry.h"
#include "ember/plugin/loader.h"
#include "ember/util/error.h"

namespace ember {

ember_memory_stats memory_stats(Device device) {
  ensure_plugins_loaded();
  const DeviceTypeEntry& e = device_type(device.type);
  ember_memory_stats s{};
  if (e.table.memory_stats) e.table.memory_stats(e.table.ctx, device.index, &s);
  return s;
}

void empty_cache(Device device) {
  ensure_plugins_loaded();
  const DeviceTypeEntry& e = device_type(device.type);
  if (e.table.empty_cache) e.table.empty_cache(e.table.ctx, device.index);
}

void set_num_threads(int n) {
  ensure_plugins_loaded();
  EMBER_CHECK(n >= 1, "[set_num_threads] expected at least 1 thread: got {}", n);
  for (const DeviceTypeEntry& e : device_types()) {
    if (e.table.set_num_threads) e.table.set_num_threads(e.table.ctx, n);
  }
}

int get_num_threads() {
  ensure_plugins_loaded();
  const DeviceTypeEntry& e = device_type(kCpuType);
  return e.table.get_num_threads ? e.table.get_num_threads(e.table.ctx) : 1;
}

}  // namespace ember
