// The profiler's hooks inside the core: the kernel call (run_kernel), backward nodes (the
// engine) and storage bytes (allocate_storage). Each is reached only behind is_enabled() (Note
// [One branch when the profiler is off] in ember/profiler/record_function.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ember/dispatch/op.h"
#include "ember/plugin_abi.h"
#include "ember/profiler/record_function.h"
#include "ember/tensor/tensor.h"

namespace ember::autograd {
class Node;
}

namespace ember::profiler::detail {

/** Returns fn(&call), recorded as the range "<device type>::<op>" with the shapes of the
 *  call's inputs, the dtype, device and stream; on a device type with timing events, also timed
 *  on the device (Note [Device time in the host's time base] in core/profiler/profiler.cpp). */
int32_t run_kernel_profiled(const Op& op, DType dtype, Device device, ember_kernel_fn fn,
                            const ember_kernel_call& call);

/** Begins the range of backward node `node` on its incoming gradients; null if no profiler
 *  records. */
PendingEvent* begin_backward(const autograd::Node& node, const std::vector<Tensor>& grads);

/** Counts `bytes` of storage allocated on this thread (allocate_storage). */
void count_allocated(size_t bytes);
/** Counts `bytes` of storage freed on this thread (the deleter of allocate_storage's storage). */
void count_freed(size_t bytes);

/** The range of one backward node, around Node::apply in the engine's loop. */
class BackwardRange {
 public:
  /** Begins `node`'s range. */
  BackwardRange(const autograd::Node& node, const std::vector<Tensor>& grads)
      : event_(begin_backward(node, grads)) {}
  /** Ends it. */
  ~BackwardRange() {
    if (event_) end_range(event_);
  }
  BackwardRange(const BackwardRange&) = delete;
  BackwardRange& operator=(const BackwardRange&) = delete;

 private:
  PendingEvent* event_;
};

}  // namespace ember::profiler::detail
