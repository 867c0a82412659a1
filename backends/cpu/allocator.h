// The CPU caching allocator: freed blocks are kept by size and handed out again, so an op's
// output does not pay for freshly faulted pages on every call.
#pragma once

#include <cstddef>

#include "ember/plugin_abi.h"

namespace ember::cpu {

/** 64-byte aligned memory from the cache or the system; never null for bytes == 0. `scratch`:
 *  a kernel's temporary, counted in `reserved` but not in `allocated` (which is tensors'). */
void* cached_alloc(size_t bytes, bool scratch = false);
/** Returns a block to the cache (or to the system when the cache is over its bound or its list
 *  cannot grow); never throws. `scratch` as it was allocated. */
void cached_free(void* ptr, size_t bytes, bool scratch = false);
/** Current statistics. */
ember_memory_stats cached_stats();
/** Returns every cached block to the system. */
void cached_release_all();

}  // namespace ember::cpu
