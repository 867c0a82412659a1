// Device: a device type id (assigned at load time) and an index.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "ember/util/export.h"

namespace ember {

/** The device type id of the CPU; the core registers it before any plugin loads. */
inline constexpr int16_t kCpuType = 0;

/** Where a tensor lives: a device type id and an index within that type. */
struct EMBER_API Device {
  int16_t type = kCpuType;
  int16_t index = 0;

  Device() = default;
  /** A device by id. */
  constexpr Device(int16_t t, int16_t i) : type(t), index(i) {}
  /** Parses "cpu", "cuda", "cuda:1"; a name without an index means the calling thread's current
   *  device of that type (index 0 unless set_current_device said otherwise); throws
   *  DeviceError if no such device type is registered or an explicit index names no device of
   *  it ("cpu:1"). */
  Device(std::string_view spec);  // NOLINT(google-explicit-constructor)
  Device(const char* spec) : Device(std::string_view(spec)) {}         // NOLINT
  Device(const std::string& spec) : Device(std::string_view(spec)) {}  // NOLINT

  /** The CPU. */
  static constexpr Device cpu() { return {kCpuType, 0}; }
  /** "cpu", "cuda:0". */
  std::string str() const;
  /** Name of the device type: "cpu", "cuda". */
  std::string_view type_name() const;
  bool operator==(const Device&) const = default;
};

/** The calling thread's current device index of device type `type` (0 unless set). */
EMBER_API int16_t current_device_index(int16_t type);
/** Makes `device` the calling thread's current device of its type, so that "cuda" names it (as
 *  torch.cuda.set_device); throws if the device is not available. */
EMBER_API void set_current_device(Device device);

/** Makes a device current for the calling thread until the guard goes out of scope. */
class EMBER_API DeviceGuard {
 public:
  /** Makes `device` current, remembering the device it replaces. */
  explicit DeviceGuard(Device device);
  /** Restores the device that was current before. */
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  Device previous_;
};

}  // namespace ember

/** Formats a Device as "cpu" or "cuda:0". */
template <>
struct fmt::formatter<ember::Device> : fmt::formatter<std::string> {
  auto format(const ember::Device& d, format_context& ctx) const {
    return fmt::formatter<std::string>::format(d.str(), ctx);
  }
};
