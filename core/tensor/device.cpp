#include "ember/tensor/device.h"

#include <charconv>

#include "ember/dispatch/device_registry.h"
#include "ember/plugin/loader.h"
#include "ember/util/error.h"

namespace ember {

std::atomic<Device> detail::g_default_device{Device::cpu()};
static_assert(std::atomic<Device>::is_always_lock_free, "the default device is read lock-free");

namespace {

// Note [The current device]
// Each thread has a current index per device type (0 until set_current_device), and a device
// named without an index ("cuda") means it, as torch.device("cuda") means the current CUDA
// device. Tensors always carry a full Device, so the current device only matters where a name
// is parsed; kernels make their tensors' device current in their backend themselves.
thread_local int16_t t_current_index[kMaxDeviceTypes] = {};

}  // namespace

int16_t current_device_index(int16_t type) {
  return type >= 0 && type < kMaxDeviceTypes ? t_current_index[type] : 0;
}

void set_current_device(Device device) {
  check_device(device, "set_current_device");
  t_current_index[device.type] = device.index;
}

DeviceGuard::DeviceGuard(Device device)
    : previous_(device.type, current_device_index(device.type)) {
  set_current_device(device);
}

DeviceGuard::~DeviceGuard() {
  t_current_index[previous_.type] = previous_.index;
}

Device::Device(std::string_view spec) {
  ensure_plugins_loaded();
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  int index = -1;
  if (colon != std::string_view::npos) {
    const std::string_view num = spec.substr(colon + 1);
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), index);
    EMBER_CHECK(ec == std::errc() && ptr == num.data() + num.size() && index >= 0,
                "[device] invalid device index in '{}' (expected e.g. 'cuda:0')", spec);
  }
  const int16_t id = find_device_type(name);
  if (id < 0) {
    std::string known;
    for (const DeviceTypeEntry& e : device_types()) known += (known.empty() ? "" : ", ") + e.name;
    throw DeviceError(
        fmt::format("[device] unknown device type '{}': registered types are {} (is its "
                    "plugin loaded? see `ember plugins`)",
                    name, known));
  }
  type = id;
  // An index the user wrote must exist now (cpu has only cpu:0), or the mistake would surface
  // far from here, at the first allocation; a bare name means the current device.
  if (index >= 0) {
    const DeviceTypeEntry& e = device_type(id);
    EMBER_CHECK_DEVICE(index < e.count,
                       "[device] device '{}' does not exist: {} has {} device(s){}", spec, e.name,
                       e.count, e.unusable_reason.empty() ? "" : " (" + e.unusable_reason + ")");
  }
  this->index = index < 0 ? current_device_index(id) : static_cast<int16_t>(index);
}

std::string Device::str() const {
  const std::string_view name = type_name();
  if (type == kCpuType && index == 0) return std::string(name);
  return fmt::format("{}:{}", name, index);
}

std::string_view Device::type_name() const {
  if (type < 0 || type >= kMaxDeviceTypes) return "invalid";
  return detail::device_type_unchecked(type).name;
}

}  // namespace ember
