// Helpers for what every plugin declares once: its descriptor, its entry symbol and, for a
// device backend, its device-type table. Header-only, like the rest of the SDK.
#pragma once

#include <cstdint>

#include "ember/plugin_abi.h"

namespace ember::sdk {

/** A plugin descriptor for this header's ABI major: the plugin's name, version and build line,
 *  the oldest core minor it runs on, its init and its (optional) shutdown. */
constexpr ember_plugin_v1 plugin_descriptor(
    uint16_t abi_minor_min, const char* name, const char* version, const char* build_info,
    decltype(ember_plugin_v1::init) init, decltype(ember_plugin_v1::shutdown) shutdown = nullptr) {
  return {sizeof(ember_plugin_v1),
          EMBER_ABI_MAJOR,
          abi_minor_min,
          name,
          version,
          build_info,
          init,
          shutdown};
}

/** A device-type table with the entries every device type has (name, priority, whether the host
 *  reads its memory, count, alloc, free, copy, synchronize) and every optional entry unset; the
 *  caller sets the optional entries its device provides on the copy it gets. */
inline ember_device_type_v1 device_type(const char* name, int32_t priority, bool host_accessible,
                                        decltype(ember_device_type_v1::device_count) device_count,
                                        decltype(ember_device_type_v1::alloc) alloc,
                                        decltype(ember_device_type_v1::free) free,
                                        decltype(ember_device_type_v1::copy) copy,
                                        decltype(ember_device_type_v1::synchronize) synchronize) {
  ember_device_type_v1 t{};
  t.struct_size = sizeof(t);
  t.name = name;
  t.priority = priority;
  t.host_accessible = host_accessible ? 1 : 0;
  t.device_count = device_count;
  t.alloc = alloc;
  t.free = free;
  t.copy = copy;
  t.synchronize = synchronize;
  return t;
}

}  // namespace ember::sdk

/** Defines the plugin's one exported symbol, returning `descriptor` (a const ember_plugin_v1 with
 *  static storage). Use it at global scope. */
#define EMBER_PLUGIN_DEFINE_ENTRY(descriptor)                                         \
  extern "C" EMBER_PLUGIN_EXPORT const ember_plugin_v1* ember_plugin_entry_v1(void) { \
    return &(descriptor);                                                             \
  }
