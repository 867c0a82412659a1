// KernelTable: the kernels of one op, indexed by device-type id and dtype.
#pragma once

#include <array>
#include <cstdint>
#include <limits>

#include "ember/dispatch/device_registry.h"
#include "ember/plugin_abi.h"
#include "ember/tensor/dtype.h"

namespace ember {

/** One registered kernel and who registered it. */
struct KernelEntry {
  ember_kernel_fn fn = nullptr;
  int32_t priority = std::numeric_limits<int32_t>::min();
  int16_t plugin = -1;  // index into the plugin report
};

// Note [Kernel lookup is two array indexes]
// The hot path (ARCHITECTURE.md, "The path of one op call") finds a kernel with
// table[device_type][dtype]: no strings, maps or locks. Device-type ids are small integers handed
// out at load time (no closed enum of backends), so the table is a fixed array of kMaxDeviceTypes
// rows.
/** Kernels of one op. */
class KernelTable {
 public:
  /** The kernel for (device type, dtype), or null. */
  const KernelEntry& lookup(int16_t device_type, DType dtype) const {
    return table_[device_type][static_cast<int>(dtype)];
  }
  /** Mutable slot, for registration. */
  KernelEntry& slot(int16_t device_type, DType dtype) {
    return table_[device_type][static_cast<int>(dtype)];
  }

 private:
  std::array<std::array<KernelEntry, kNumDTypes>, kMaxDeviceTypes> table_{};
};

}  // namespace ember
