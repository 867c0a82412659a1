// The profiler's hooks in the dispatcher: the kernel call (run_kernel) and storage bytes
// (allocate_storage and its deleter). Each is reached only behind profiler::is_enabled() (Note
// [One branch when the profiler is off] in ember/dispatch/profiling.h); the profiler defines
// them (core/profiler/profiler.cpp), above this layer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ember/dispatch/op.h"
#include "ember/dispatch/profiling.h"
#include "ember/plugin_abi.h"

namespace ember::profiler::detail {

/** Returns fn(&call), recorded as the range "<device type>::<op>" with the shapes of the
 *  call's inputs, the dtype, device and stream; on a device type with timing events, also timed
 *  on the device (Note [Device time in the host's time base] in core/profiler/profiler.cpp). */
int32_t run_kernel_profiled(const Op& op, DType dtype, Device device, ember_kernel_fn fn,
                            const ember_kernel_call& call);
/** Counts `bytes` of storage allocated on this thread (allocate_storage). */
void count_allocated(size_t bytes);
/** Counts `bytes` of storage freed on this thread (the deleter of allocate_storage's storage). */
void count_freed(size_t bytes);

}  // namespace ember::profiler::detail
