// What autograd computes with ops. The ops record into autograd, so autograd sits below them
// (ARCHITECTURE.md, "Layers") and may not include their headers: it declares here the few
// computations it needs, and the ops layer defines them in core/ops/autograd_math.cpp, beside
// the view gradients (sum_to, as_strided_backward, CopySlices) it computes for record.h.
#pragma once

#include <memory>
#include <vector>

#include "ember/autograd/node.h"
#include "ember/autograd/record.h"
#include "ember/tensor/tensor.h"

namespace ember::autograd::detail {

/** a + b: two gradients of one tensor summed (the engine's buffers, AccumulateGrad). */
Tensor add_grads(const Tensor& a, const Tensor& b);
/** Zeros of `meta`'s sizes, dtype and device: the gradient of an output nothing used. */
Tensor zeros_grad(const OutputMeta& meta);
/** Ones shaped like `t`: the gradient backward starts from for a scalar root. */
Tensor ones_grad(const Tensor& t);
/** The states of the default generators of `devices`, in order (checkpoint's replay). */
std::vector<Tensor> generator_states(const std::vector<Device>& devices);
/** Puts back states generator_states returned for the same `devices`. */
void set_generator_states(const std::vector<Device>& devices, const std::vector<Tensor>& states);
/** True unless the elements of `g` are known to sit at distinct places (defined in
 *  core/autograd/record.cpp, which refuses in-place writes through overlapping views). */
bool may_overlap(const TensorGeometry& g);
/** The node that routes the gradient of an in-place change of view `view` of `base` (Note
 *  [In-place ops and CopySlices] in core/ops/autograd_math.cpp). */
std::shared_ptr<Node> copy_slices(TensorGeometry base, TensorGeometry view);

}  // namespace ember::autograd::detail
