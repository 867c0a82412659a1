// The computations autograd needs from the ops (core/autograd/op_math.h): summing and seeding
// gradients, the generator states checkpoint replays, and the gradients of views that record.h
// declares (sum_to, reduce_grad, as_strided_backward, CopySlices). They are ops, so they live in
// the ops layer, above autograd.
#include <algorithm>
#include <climits>
#include <utility>
#include <vector>

#include "core/autograd/op_math.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/reduce.h"

namespace ember::autograd {
namespace {

int64_t numel_of(const Shape& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// The storage span [lo, hi) that two geometries' elements cover (strides are never negative).
std::pair<int64_t, int64_t> span_of(const TensorGeometry& a, const TensorGeometry& b) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const TensorGeometry* g : {&a, &b}) {
    if (numel_of(g->sizes) == 0) continue;
    int64_t last = g->offset;
    for (size_t i = 0; i < g->sizes.size(); ++i) last += (g->sizes[i] - 1) * g->strides[i];
    lo = std::min(lo, g->offset);
    hi = std::max(hi, last + 1);
  }
  return {lo, hi};
}

// The places, relative to `lo`, of the elements of `g` in row-major order: int64 of shape [numel].
Tensor storage_positions(const TensorGeometry& g, int64_t lo, Device device) {
  const TensorOptions opts(DType::Int64, device);
  Tensor pos = full({}, Scalar(g.offset - lo), opts);
  for (size_t i = 0; i < g.sizes.size(); ++i) {
    Shape at(g.sizes.size(), 1);
    at[i] = g.sizes[i];
    pos = add(pos, mul(arange(Scalar(int64_t{0}), Scalar(g.sizes[i]), Scalar(int64_t{1}), opts),
                       Scalar(g.strides[i]))
                       .reshape(at));
  }
  return pos.reshape({-1});
}

// Note [In-place ops and CopySlices]
// An in-place op on a tensor autograd tracks is recorded as its out-of-place form on a clone of
// the old value, r = f(x.clone()); x's data becomes r's and x takes over r's history. If x is a
// view (Note [Views see their base's history]), its base changed too: the base's new grad_fn is a
// CopySlices node whose backward passes the gradient through unchanged outside the view's
// region, to the base's old history, and sends the region's part to r (whose own graph reaches
// the old values through the clone). The view's grad_fn then becomes an AsStridedBackward of the
// new base history. The region is addressed through a buffer laid out as the storage span the
// base and the view cover, so the base may have any geometry without overlap (channels-last,
// transposed, sliced); a base or view whose elements overlap is refused before anything is
// written. With create_graph the gradient is built from scatter and gather, which are
// differentiable again; otherwise by copies into the buffer.
class CopySlices : public Node {
 public:
  CopySlices(TensorGeometry base, TensorGeometry view)
      : base_(std::move(base)), view_(std::move(view)) {}
  std::string name() const override { return "CopySlices"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    const Tensor& g = grads[0];
    const TensorOptions opts(g.dtype(), g.device());
    if (numel_of(base_.sizes) == 0 || numel_of(view_.sizes) == 0) {
      return {g, zeros(view_.sizes, opts)};
    }
    const auto [lo, hi] = span_of(base_, view_);
    if (!is_grad_enabled()) {
      Tensor flat = zeros({hi - lo}, opts);
      Tensor result = flat.as_strided(base_.sizes, base_.strides, base_.offset - lo);
      result.copy_(g);
      Tensor region = flat.as_strided(view_.sizes, view_.strides, view_.offset - lo);
      Tensor to_r = region.clone();
      region.zero_();
      return {result, to_r};
    }
    const Tensor base_pos = storage_positions(base_, lo, g.device());
    const Tensor view_pos = storage_positions(view_, lo, g.device());
    Tensor flat = scatter(zeros({hi - lo}, opts), 0, base_pos, g.reshape({-1}));
    Tensor to_r = gather(flat, 0, view_pos).reshape(view_.sizes);
    flat = scatter(flat, 0, view_pos, zeros({view_pos.numel()}, opts));
    return {gather(flat, 0, base_pos).reshape(base_.sizes), to_r};
  }

 private:
  TensorGeometry base_, view_;
};

}  // namespace

Tensor detail::add_grads(const Tensor& a, const Tensor& b) {
  return add(a, b);
}

Tensor detail::zeros_grad(const OutputMeta& meta) {
  return zeros(meta.sizes, {meta.dtype, meta.device});
}

Tensor detail::ones_grad(const Tensor& t) {
  return ones_like(t);
}

std::vector<Tensor> detail::generator_states(const std::vector<Device>& devices) {
  std::vector<Tensor> out;
  for (Device d : devices) out.push_back(default_generator(d).get_state());
  return out;
}

void detail::set_generator_states(const std::vector<Device>& devices,
                                  const std::vector<Tensor>& states) {
  for (size_t i = 0; i < devices.size(); ++i) default_generator(devices[i]).set_state(states[i]);
}

std::shared_ptr<Node> detail::copy_slices(TensorGeometry base, TensorGeometry view) {
  return std::make_shared<CopySlices>(std::move(base), std::move(view));
}

Tensor sum_to(const Tensor& grad, IntList sizes) {
  if (grad.sizes() == Shape(sizes)) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(sizes.size());
  EMBER_ASSERT(lead >= 0);
  Shape dims;
  for (int64_t i = 0; i < grad.dim(); ++i) {
    if (i < lead || (sizes[i - lead] == 1 && grad.sizes()[i] != 1)) dims.push_back(i);
  }
  Tensor r = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return r.reshape(sizes);
}

Tensor reduce_grad(const Tensor& grad, const Tensor& t) {
  return reduce_grad(grad, TensorMeta(t));
}

Tensor reduce_grad(const Tensor& grad, const TensorMeta& t) {
  Tensor g = sum_to(grad, t.sizes);
  return g.dtype() == t.dtype ? g : g.to(t.dtype);
}

Tensor as_strided_backward(const Tensor& grad, const TensorGeometry& in,
                           const TensorGeometry& out) {
  const TensorOptions opts(grad.dtype(), grad.device());
  if (numel_of(in.sizes) == 0 || numel_of(out.sizes) == 0) return zeros(in.sizes, opts);
  const auto [lo, hi] = span_of(in, out);
  const bool in_overlaps = detail::may_overlap(in);
  if (!is_grad_enabled() && !in_overlaps && !detail::may_overlap(out)) {
    Tensor flat = zeros({hi - lo}, opts);
    flat.as_strided(out.sizes, out.strides, out.offset - lo).copy_(grad);
    return flat.as_strided(in.sizes, in.strides, in.offset - lo);
  }
  // Places the view reads more than once sum their gradients; places the input holds more than
  // once share theirs equally (PyTorch's as_strided_backward).
  const Tensor in_pos = storage_positions(in, lo, grad.device());
  Tensor flat = scatter_add(zeros({hi - lo}, opts), 0, storage_positions(out, lo, grad.device()),
                            grad.reshape({-1}));
  if (in_overlaps) {
    const Tensor count =
        scatter_add(zeros({hi - lo}, opts), 0, in_pos, ones({in_pos.numel()}, opts));
    flat = div(flat, clamp(count, Scalar(1), std::nullopt));
  }
  return gather(flat, 0, in_pos).reshape(in.sizes);
}

}  // namespace ember::autograd
