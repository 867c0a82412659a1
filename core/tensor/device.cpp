#include "core/tensor/device.h"

#include <charconv>

#include "core/dispatch/device_registry.h"
#include "core/plugin/loader.h"
#include "core/util/error.h"

namespace ember {

Device::Device(std::string_view spec) {
  ensure_plugins_loaded();
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  int index = 0;
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
  this->index = static_cast<int16_t>(index);
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
