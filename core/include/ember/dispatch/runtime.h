// The runtime the backends plug into: plugin discovery on first use, the host services every
// kernel call carries, and the loaded backends' controls reached through their device-type
// tables (memory statistics, the allocator cache, the number of threads).
#pragma once

#include <atomic>
#include <string_view>

#include "ember/plugin_abi.h"
#include "ember/tensor/device.h"
#include "ember/util/export.h"

namespace ember {

/** Allocator statistics of one device (zeros if its backend keeps none). */
EMBER_API ember_memory_stats memory_stats(Device device = Device::cpu());
/** Returns cached, unused memory of `device` to the system. */
EMBER_API void empty_cache(Device device = Device::cpu());
/** Sets the number of threads every backend uses for intra-op parallelism. */
EMBER_API void set_num_threads(int n);
/** Threads the CPU backend uses. */
EMBER_API int get_num_threads();

// Note [Discovery is the plugin layer's]
// Devices, ops and streams (this layer and the tensor layer's Device names) need plugin discovery
// to have run before their first use, but discovery lives in the plugin layer above them
// (core/plugin/loader.cpp), which they may not include (ARCHITECTURE.md, "Layers"). So the
// runtime declares what it needs here and the plugin layer defines it: load_plugins_once (run
// discovery once, throw its fatal error) and explain_no_backend (the error for a process with
// no backend at all). Calls go straight to the definitions, with no pointer to install and no
// start-up order to get right; the fast path of ensure_plugins_loaded stays one acquire load.
namespace detail {
/** True once discovery ran without a fatal error. */
EMBER_API extern std::atomic<bool> g_plugins_loaded;
/** Slow path of ensure_plugins_loaded: runs discovery once (defined in core/plugin/loader.cpp). */
EMBER_API void load_plugins_once();
/** Throws NotImplementedError naming what to install if no plugin registered a kernel; returns
 *  otherwise (defined in core/plugin/loader.cpp, which has the report). */
void explain_no_backend(std::string_view op);
/** The host services table handed to plugins and kernels. */
EMBER_API const ember_host_v1* host_table();
}  // namespace detail

/** Makes sure discovery has run; one acquire load on the hot path. */
inline void ensure_plugins_loaded() {
  if (__builtin_expect(!detail::g_plugins_loaded.load(std::memory_order_acquire), 0)) {
    detail::load_plugins_once();
  }
}

}  // namespace ember
