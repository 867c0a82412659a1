// The factories' default device; Device's functions that need the registered device types
// (parsing names, the current device) live with them in core/dispatch/device_registry.cpp.
#include "ember/tensor/device.h"

namespace ember {

std::atomic<Device> detail::g_default_device{Device::cpu()};
static_assert(std::atomic<Device>::is_always_lock_free, "the default device is read lock-free");

}  // namespace ember
