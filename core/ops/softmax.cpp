// softmax: y = exp(x - max) / sum(exp(x - max)) along dim.
// log_softmax: y = x - max - log(sum(exp(x - max))) along dim.
// Kernel contract ("softmax", "log_softmax"): inputs {x} of a floating dtype, rank >= 1, any
// strides; outputs {y} of x's shape and dtype, contiguous; ints[0] = dim, already wrapped into
// [0, rank). Integer input is promoted to float32 here; bool is rejected. A 0-d input runs as
// [1] (its softmax is 1, its log_softmax 0). Empty inputs never reach a kernel.
#include "core/ops/softmax.h"

#include "core/dispatch/call.h"
#include "core/ops/factory.h"

namespace ember {
namespace {

const Op& softmax_op() {
  static const Op& op = op_handle("softmax");
  return op;
}
const Op& log_softmax_op() {
  static const Op& op = op_handle("log_softmax");
  return op;
}

Tensor run_softmax(const Op& op, const char* name, const Tensor& x, int64_t dim) {
  EMBER_CHECK(x.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK(x.dtype() != DType::Bool,
              "[{}] not implemented for bool tensors (convert with .to(ember::f32))", name);
  const int64_t d = wrap_dim(dim, x.dim() == 0 ? 1 : x.dim(), name);
  const Tensor in = is_floating(x.dtype()) ? x : x.to(kDefaultFloat);
  const Tensor in1 = in.dim() == 0 ? in.unsqueeze(0) : in;
  Tensor out = empty(in1.sizes(), {in1.dtype(), in1.device()});
  if (out.numel() > 0) run_kernel(op, in1.dtype(), {&in1}, {&out}, {{&d, 1}, {}});
  return x.dim() == 0 ? out.squeeze(0) : out;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) {
  return run_softmax(softmax_op(), "softmax", x, dim);
}

Tensor log_softmax(const Tensor& x, int64_t dim) {
  return run_softmax(log_softmax_op(), "log_softmax", x, dim);
}

}  // namespace ember
