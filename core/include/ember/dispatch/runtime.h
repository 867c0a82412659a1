// The loaded backends' runtime controls, reached through their device-type tables: memory
// statistics, the allocator cache and the number of threads.
#pragma once

#include "ember/plugin_abi.h"
#include "ember/tensor/device.h"
#include "ember/util/export.h"

namespace ember {

/** Allocator statistics of one device (zeros if its backend keeps none). */
EMBER_API ember_memory_stats memory_stats(Device device = Device::cpu());
/** Returns cached, unused memory of `device` to the system. */
EMBER_API void empty_cache(Device device = Device::cpu());
/** Sets the number of threads every backend uses for intra-op parallelism. */
EMBER_API void set_num_threads(int n);
/** Threads the CPU backend uses. */
EMBER_API int get_num_threads();

}  // namespace ember
