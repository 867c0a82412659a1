// Device: a device type id (assigned at load time) and an index.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "ember/util/export.h"
#include "ember/util/text_formatter.h"

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

// Note [The default device]
// Factories (empty, zeros, full, arange, linspace, eye, rand, randn, randint, tensor(...), and
// the modules whose constructors call them) put their tensor on default_device() when the
// caller names no device, as torch.set_default_device does; the *_like factories keep their
// input's device instead. It is the CPU until set_default_device() says otherwise. It is one
// process-wide value (PyTorch keeps it per thread, in a function mode): a relaxed atomic read
// on the factory path, written only by set_default_device / reset_default_device, so a thread
// sees its own setting at once and others see it from their next factory call. It is never
// the "best" device: best_device() (ember/dispatch/device_registry.h) answers which device to
// run on when nobody chose one (EMBER_DEVICE, else the accelerator of highest priority), and
// factories never consult it.
namespace detail {
/** The factories' default device (Note [The default device]); set_default_device writes it. */
EMBER_API extern std::atomic<Device> g_default_device;
}  // namespace detail

/** The device factories use when given none: the CPU unless set_default_device changed it. */
inline Device default_device() {
  return detail::g_default_device.load(std::memory_order_relaxed);
}

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
struct fmt::formatter<ember::Device> : ember::TextFormatter {
  auto format(const ember::Device& d, format_context& ctx) const {
    return format_text(d.str(), ctx);
  }
};
