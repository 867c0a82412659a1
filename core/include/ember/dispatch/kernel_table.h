// KernelTable: the kernels of one op, indexed by device-type id and dtype.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>

#include "ember/dispatch/device_registry.h"
#include "ember/plugin_abi.h"
#include "ember/tensor/dtype.h"

namespace ember {

// Note [Loading while computing]
// load_plugin may write a kernel slot while run_kernel reads it on another thread. Readers use
// only the function pointer, an atomic written last with release (after the plugin is mapped
// and initialised) and read with acquire, a plain load on x86 and ARM64: a reader sees the old
// kernel or the new one and never blocks. Priority and owner are touched under the loader's lock.
/** One registered kernel and who registered it. */
struct KernelEntry {
  std::atomic<ember_kernel_fn> fn{nullptr};  // published last (Note [Loading while computing])
  int32_t priority = std::numeric_limits<int32_t>::min();
  int16_t plugin = -1;  // index into the plugin report
  /** Set by the first call of the kernel (Note [Kernels at exit] in dispatch/call.cpp). */
  mutable std::atomic<bool> called{false};
  /** EMBER_KERNEL_* flags of the registration; written before fn. A reader that meets a kernel
   *  replaced while it reads may pair the new flags with the old function: the old kernel then
   *  refuses operands outside its contract with an error (its contract says to check them). */
  std::atomic<uint32_t> flags{0};
  /** The kernel, or null. */
  ember_kernel_fn get() const { return fn.load(std::memory_order_acquire); }
  /** True if the registration carries `flag` (EMBER_KERNEL_*). */
  bool has_flag(uint32_t flag) const { return (flags.load(std::memory_order_acquire) & flag) != 0; }
  /** Installs a kernel, or empties the slot with nullptr (loader's lock held): owner, priority
   *  and flags first, then the function. */
  void publish(ember_kernel_fn f, int32_t prio = std::numeric_limits<int32_t>::min(),
               int16_t owner = -1, uint32_t kernel_flags = 0) {
    priority = prio;
    plugin = owner;
    flags.store(kernel_flags, std::memory_order_release);
    called.store(false, std::memory_order_relaxed);
    fn.store(f, std::memory_order_release);
  }
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
