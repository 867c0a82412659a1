// The runtime: the discovery flag, the host services table, and memory statistics and thread
// control forwarded to every backend that offers them.
#include "ember/dispatch/runtime.h"

#include <algorithm>
#include <cstdlib>

#include "core/util/log.h"
#include "ember/dispatch/device_registry.h"
#include "ember/util/error.h"
#include "ember/version.h"

namespace ember {

std::atomic<bool> detail::g_plugins_loaded{false};

namespace {

// Host services for plugins.
void host_log(int32_t level, const char* message) {
  log_message(static_cast<LogLevel>(std::clamp(level, 0, 3)), "{}", message ? message : "");
}
void* host_scratch_alloc(size_t bytes) {
  return std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64));
}
void host_scratch_free(void* p, size_t) {
  std::free(p);
}

const ember_host_v1 kHost = {sizeof(ember_host_v1), EMBER_ABI_MAJOR, EMBER_ABI_MINOR,
                             EMBER_VERSION_STRING,  host_log,        host_scratch_alloc,
                             host_scratch_free};

}  // namespace

const ember_host_v1* detail::host_table() {
  return &kHost;
}

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
