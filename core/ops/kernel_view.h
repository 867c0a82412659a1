// Views an op makes only to feed its kernel (Note [Views inside ops] in core/ops/view.cpp).
#pragma once

#include "ember/tensor/tensor.h"

namespace ember::detail {

/** `t` broadcast to `shape` as Tensor::expand does (`t` itself if it has that shape), for a
 *  kernel's input inside an op: the view never leaves the op, so autograd does not track it. */
Tensor expand_for_kernel(const Tensor& t, IntList shape);

}  // namespace ember::detail
