// Device: a device type id (assigned at load time) and an index.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/util/export.h"

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
  /** Parses "cpu", "cuda", "cuda:1"; throws if no such device type is registered. */
  Device(std::string_view spec);  // NOLINT(google-explicit-constructor)
  Device(const char* spec) : Device(std::string_view(spec)) {}  // NOLINT
  Device(const std::string& spec) : Device(std::string_view(spec)) {}  // NOLINT

  /** The CPU. */
  static constexpr Device cpu() { return {kCpuType, 0}; }
  /** "cpu", "cuda:0". */
  std::string str() const;
  /** Name of the device type: "cpu", "cuda". */
  std::string_view type_name() const;
  bool operator==(const Device&) const = default;
};

}  // namespace ember

/** Formats a Device as "cpu" or "cuda:0". */
template <>
struct fmt::formatter<ember::Device> : fmt::formatter<std::string> {
  auto format(const ember::Device& d, format_context& ctx) const {
    return fmt::formatter<std::string>::format(d.str(), ctx);
  }
};
