// The profiler's hook in the backward engine: the range of one backward node, reached only behind
// profiler::is_enabled() (Note [One branch when the profiler is off] in
// ember/dispatch/profiling.h); the profiler defines it (core/profiler/profiler.cpp), above
// autograd.
#pragma once

#include <vector>

#include "ember/autograd/node.h"
#include "ember/dispatch/profiling.h"
#include "ember/tensor/tensor.h"

namespace ember::profiler::detail {

/** Begins the range of backward node `node` on its incoming gradients; null if no profiler
 *  records. */
PendingEvent* begin_backward(const autograd::Node& node, const std::vector<Tensor>& grads);

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
