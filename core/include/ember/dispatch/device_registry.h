// The device types known to the core: the built-in CPU and whatever plugins register.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ember/plugin_abi.h"
#include "ember/tensor/device.h"
#include "ember/util/error.h"
#include "ember/util/export.h"

namespace ember {

/** At most this many device types can be registered in one process. */
inline constexpr int kMaxDeviceTypes = 16;

/** One registered device type and the plugin table behind it. */
struct DeviceTypeEntry {
  std::string name;
  std::string plugin;           // "core" for the built-in CPU memory
  ember_device_type_v1 table;   // fields past the plugin's struct_size are zeroed
  int32_t count = 0;            // devices found at registration
  std::string unusable_reason;  // why count is 0, if it is
};

/** The entry for a device type id; throws for unknown ids. */
EMBER_API const DeviceTypeEntry& device_type(int16_t id);
/** Id of a device type by name, or -1. */
EMBER_API int16_t find_device_type(std::string_view name);
/** Snapshot of all registered device types, ordered by id. */
EMBER_API std::vector<DeviceTypeEntry> device_types();
/** Checks that `device` exists (type registered, index < count); throws otherwise. */
EMBER_API void check_device(Device device, const char* op);
/** Copies bytes between a device and the host (or within a device); throws on failure. */
EMBER_API void device_copy(Device device, void* dst, const void* src, size_t bytes, int32_t kind);
/** Like device_copy, but may return before the bytes moved when the host side is pinned memory
 *  (ember_device_type_v1::copy_async; a plain copy where the backend has none). */
EMBER_API void device_copy_async(Device device, void* dst, const void* src, size_t bytes,
                                 int32_t kind);
/** Waits for all queued work on `device`. */
EMBER_API void synchronize(Device device = Device::cpu());
/** The available device type whose host_alloc pinned memory comes from (highest priority), or
 *  -1 if no loaded backend with devices offers pinned memory. */
EMBER_API int16_t pinned_memory_device_type();
/** Sets an option of device type `type`'s backend (the "cuda" backend: "matmul.allow_tf32",
 *  "cudnn.allow_tf32", "cudnn.benchmark", each "0" or "1"); throws for unknown keys or values. */
EMBER_API void set_backend_option(std::string_view type, std::string_view key,
                                  std::string_view value);
/** The current value of a backend option; throws for unknown keys. */
EMBER_API std::string backend_option(std::string_view type, std::string_view key);

// Note [The best device]
// best_device() is where to run when nobody chose: EMBER_DEVICE ("cuda", "cuda:1", "cpu") if
// set; else device 0 of the available device type (count > 0) with the highest plugin-declared
// priority (ember_device_type_v1::priority: CUDA declares 200, the CPU plugin 100), so an
// accelerator is preferred over the CPU when one works. Ties go to the type registered first.
// Tools and examples ask for it (`ember train`, --device's default); factories do not: they use
// default_device() (Note [The default device] in ember/tensor/device.h), the CPU unless set.
/** The device to run on when the caller has no preference (see Note [The best device]). */
EMBER_API Device best_device();
/** Makes `device` the factories' default (torch.set_default_device); throws if it is not
 *  available (Note [The default device] in ember/tensor/device.h). */
EMBER_API void set_default_device(Device device);
/** Puts factories back on the CPU (torch.set_default_device(None)). */
EMBER_API void reset_default_device();

namespace detail {
/** Runs a plugin call `fn(reason, capacity)` that returns an ABI status; on failure throws the
 *  error kind of the status with "<what>: <reason>" (`what` is formatted only then). */
template <typename Fn, typename... Args>
void call_checked(Fn&& fn, fmt::format_string<Args...> what, Args&&... args) {
  char reason[512] = {0};
  const int32_t status = fn(reason, sizeof(reason));
  if (__builtin_expect(status != EMBER_OK, 0)) {
    throw_error(status_error_kind(status),
                fmt::format("{}: {}", fmt::format(what, std::forward<Args>(args)...),
                            reason[0] ? reason : "no reason given"));
  }
}
/** Registers or replaces a device type; returns its id. Loader use only. */
int16_t register_device_type(const ember_device_type_v1& table, const std::string& plugin,
                             std::string* conflict);
/** Direct table access on the allocation path; id must be valid. */
const DeviceTypeEntry& device_type_unchecked(int16_t id);
}  // namespace detail

}  // namespace ember
