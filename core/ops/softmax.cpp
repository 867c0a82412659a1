// softmax: y = exp(x - max) / sum(exp(x - max)) along dim.
// log_softmax: y = x - max - log(sum(exp(x - max))) along dim.
// Kernel contract ("softmax", "log_softmax"): inputs {x} of a floating dtype, rank >= 1, any
// strides; outputs {y} of x's shape and dtype, contiguous; ints[0] = dim, already wrapped into
// [0, rank). Integer input is promoted to float32 here; bool is rejected. A 0-d input runs as
// [1] (its softmax is 1, its log_softmax 0). Empty inputs never reach a kernel.
// backward: softmax dx = y * (dy - sum(dy * y, dim, keepdim));
//           log_softmax dx = dy - exp(y) * sum(dy, dim, keepdim).
#include "ember/ops/softmax.h"

#include "core/dispatch/call.h"
#include "ember/amp/autocast.h"
#include "ember/autograd/record.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/reduce.h"

namespace ember {
namespace {

Tensor run_softmax(const Op& op, const char* name, const Tensor& x, int64_t dim) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK_TYPE(x.dtype() != DType::Bool,
                   "[{}] not defined for bool tensors (convert with .to(ember::f32))", name);
  const int64_t d = wrap_dim(dim, x.dim() == 0 ? 1 : x.dim(), name);
  const Tensor in = is_floating(x.dtype()) ? x : x.to(default_dtype());
  const Tensor in1 = in.dim() == 0 ? in.unsqueeze(0) : in;
  Tensor out = empty(in1.sizes(), {in1.dtype(), in1.device()});
  // softmax and log_softmax share one attribute layout.
  if (out.numel() > 0) {
    run_kernel(op, in1.dtype(), {&in1}, {&out}, PackedAttrs(attrs::softmax{.dim = d}));
  }
  return x.dim() == 0 ? out.squeeze(0) : out;
}

// Note [Backward of softmax]
// Both formulas need only the output y (saved with save_output, so the node keeps no copy of
// x) and are written with public ops, so they are differentiable again. The reduction runs
// over the op's dim; a 0-d input has a single element, reduced over all dims ({}).
template <typename Formula>
Tensor differentiable_softmax(const Op& op, const char* name, const char* node, const Tensor& x,
                              int64_t dim, Formula formula) {
  return autograd::differentiable(
      node, name, {&x}, [&] { return run_softmax(op, name, x, dim); },
      [&] {
        const int64_t d = x.dim() == 0 ? -1 : wrap_dim(dim, x.dim(), name);
        return [d, formula](const std::vector<Tensor>& g, const autograd::LambdaNode& self) {
          const Tensor y = self.saved_output(0);
          const Shape dims = d < 0 ? Shape{} : Shape{d};
          return std::vector<Tensor>{formula(g[0], y, dims)};
        };
      },
      /*save_output=*/true);
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) {
  EMBER_AUTOCAST(Float32, softmax, x, x, dim);
  return differentiable_softmax(core_op(ops::softmax), "softmax", "SoftmaxBackward", x, dim,
                                [](const Tensor& dy, const Tensor& y, IntList dims) {
                                  return mul(y, sub(dy, sum(mul(dy, y), dims, /*keepdim=*/true)));
                                });
}

Tensor log_softmax(const Tensor& x, int64_t dim) {
  EMBER_AUTOCAST(Float32, log_softmax, x, x, dim);
  return differentiable_softmax(core_op(ops::log_softmax), "log_softmax", "LogSoftmaxBackward", x,
                                dim, [](const Tensor& dy, const Tensor& y, IntList dims) {
                                  return sub(dy, mul(exp(y), sum(dy, dims, /*keepdim=*/true)));
                                });
}

Tensor softmin(const Tensor& x, int64_t dim) {
  EMBER_CHECK_TYPE(x.defined(), "[softmin] undefined tensor argument");
  return softmax(neg(x), dim);
}

}  // namespace ember
