#include "ember/autograd/record.h"

#include <mutex>

#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/reduce.h"
#include "ember/tensor/overlap.h"

namespace ember::autograd {
namespace {

std::mutex g_accumulator_mu;

void set_history(Tensor& out, const std::shared_ptr<Node>& node, uint32_t output_nr) {
  AutogradMeta& m = out.impl()->ensure_autograd_meta();
  m.grad_fn = node;
  m.output_nr = output_nr;
  out.impl()->set_requires_grad_flag(true);
}

// Note [In-place ops and CopySlices]
// An in-place op on a tensor that requires grad is recorded as its out-of-place form on a
// clone of the old value, r = f(x.clone()); x's data becomes r's and x takes over r's history.
// If x is a view of a base that requires grad, the base changed too: its new grad_fn is a
// CopySlices node whose backward passes the gradient through unchanged outside the view's
// region and sends the region's part to r (whose own graph reaches the old values through the
// clone). The view then becomes a fresh view of the new base. The region is addressed with
// the view's geometry relative to a contiguous copy of the base gradient, so the base must be
// contiguous.
class CopySlices : public Node {
 public:
  CopySlices(Shape sizes, Shape strides, int64_t offset)
      : sizes_(std::move(sizes)), strides_(std::move(strides)), offset_(offset) {}
  std::string name() const override { return "CopySlices"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    Tensor result = grads[0].contiguous().clone();
    Tensor region = result.as_strided(sizes_, strides_, offset_);
    Tensor to_r = region.clone();
    {
      NoGradGuard no_grad;
      region.zero_();
    }
    return {result, to_r};
  }

 private:
  Shape sizes_, strides_;
  int64_t offset_;
};

std::shared_ptr<LambdaNode> record_impl(std::string name, const char* forward_op,
                                        const Tensor* const* inputs, size_t n_in,
                                        std::span<Tensor* const> outputs, BackwardFn fn) {
  for (size_t i = 0; i < n_in; ++i) {
    EMBER_CHECK(!inputs[i]->defined() || !inputs[i]->is_inference(),
                "[{}] an inference tensor cannot be used in an operation autograd records (it was "
                "made inside inference_mode; clone() it outside inference_mode to get a normal "
                "tensor)",
                forward_op ? forward_op : name.c_str());
  }
  auto node = std::make_shared<LambdaNode>(std::move(name), std::move(fn));
  node->forward_op = forward_op;
  node->next_edges.reserve(n_in);
  for (size_t i = 0; i < n_in; ++i) node->next_edges.push_back(gradient_edge(*inputs[i]));
  uint32_t nr = 0;
  for (Tensor* out : outputs) {
    node->outputs.push_back({out->sizes(), out->dtype(), out->device()});
    set_history(*out, node, nr++);
  }
  return node;
}

}  // namespace

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  AutogradMeta* m = t.autograd_meta();
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  std::lock_guard lock(g_accumulator_mu);
  std::shared_ptr<Node> acc = m->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    m->grad_accumulator = acc;
  }
  return {acc, 0};
}

std::shared_ptr<LambdaNode> record(std::string name, const char* forward_op,
                                   std::initializer_list<const Tensor*> inputs,
                                   std::initializer_list<Tensor*> outputs, BackwardFn fn) {
  return record_impl(std::move(name), forward_op, inputs.begin(), inputs.size(),
                     std::span<Tensor* const>(outputs.begin(), outputs.size()), std::move(fn));
}

std::shared_ptr<LambdaNode> record(std::string name, const char* forward_op,
                                   const std::vector<Tensor>& inputs,
                                   std::initializer_list<Tensor*> outputs, BackwardFn fn) {
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  return record_impl(std::move(name), forward_op, ptrs.data(), ptrs.size(),
                     std::span<Tensor* const>(outputs.begin(), outputs.size()), std::move(fn));
}

std::shared_ptr<LambdaNode> record(std::string name, const char* forward_op,
                                   const std::vector<Tensor>& inputs,
                                   const std::vector<Tensor*>& outputs, BackwardFn fn) {
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  return record_impl(std::move(name), forward_op, ptrs.data(), ptrs.size(), outputs, std::move(fn));
}

Tensor as_strided_backward(const Tensor& g, IntList base_sizes, IntList sizes, IntList strides,
                           int64_t offset) {
  NoGradGuard no_grad;
  Tensor out = zeros(base_sizes, {g.dtype(), g.device()});
  Tensor region = out.as_strided(sizes, strides, offset);
  if (internal_overlap(region) == InternalOverlap::No) {
    region.copy_(g);
    return out;
  }
  // Writing through an overlapping region would be refused (Note [Overlapping operands] in
  // core/dispatch/call.cpp) and would keep one gradient per place: each element's gradient is
  // added at its place instead.
  const Tensor places = arange(0, out.numel(), 1, TensorOptions(DType::Int64, g.device()))
                            .as_strided(sizes, strides, offset)
                            .reshape({-1});
  return scatter_add(out.reshape({-1}), 0, places, g.reshape({-1})).view(base_sizes);
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

void check_writable(const Tensor& t, const char* op) {
  EMBER_CHECK(!t.is_inference() || is_inference_mode(),
              "[{}] an inference tensor cannot be modified in place outside inference_mode (it "
              "was made inside one; clone() it to get a normal tensor)",
              op);
}

void check_inplace(const Tensor& t, const char* op) {
  check_writable(t, op);
  if (!is_grad_enabled() || !t.requires_grad()) return;
  AutogradMeta* m = t.autograd_meta();
  EMBER_CHECK(m->grad_fn != nullptr || m->is_view,
              "[{}] a leaf tensor that requires grad is being used in an in-place operation "
              "(do it under NoGradGuard, or on a clone)",
              op);
  if (m->is_view && m->base.defined()) {
    AutogradMeta* bm = m->base.autograd_meta();
    EMBER_CHECK(!(bm && bm->requires_grad && !bm->grad_fn),
                "[{}] a view of a leaf tensor that requires grad is being used in an in-place "
                "operation (do it under NoGradGuard, or on a clone)",
                op);
  }
}

void rebase_history(Tensor& x, const Tensor& r) {
  AutogradMeta* m = x.autograd_meta();
  const bool view_of_grad_base = m && m->is_view && m->base.defined() && m->base.requires_grad();
  if (!view_of_grad_base) {
    if (!r.requires_grad()) return;
    AutogradMeta& xm = x.impl()->ensure_autograd_meta();
    xm.grad_fn = r.grad_fn();
    xm.output_nr = r.output_nr();
    x.impl()->set_requires_grad_flag(true);
    return;
  }
  Tensor base = m->base;
  EMBER_CHECK_NOT_IMPLEMENTED(
      base.is_contiguous(),
      "[autograd] in-place operation on a view of a non-contiguous tensor that requires "
      "grad is not supported (make the base contiguous first)");
  const int64_t offset = x.storage_offset() - base.storage_offset();
  auto cs = std::make_shared<CopySlices>(x.sizes(), x.strides(), offset);
  cs->forward_op = r.grad_fn() ? r.grad_fn()->forward_op : "copy_";
  cs->outputs.push_back({base.sizes(), base.dtype(), base.device()});
  cs->next_edges.push_back(gradient_edge(base));
  cs->next_edges.push_back(gradient_edge(r));
  set_history(base, cs, 0);
  const Shape sizes = x.sizes(), strides = x.strides();
  auto view_node = std::make_shared<LambdaNode>(
      "AsStridedBackward", [base_sizes = base.sizes(), sizes, strides, offset](
                               const std::vector<Tensor>& g, const LambdaNode&) {
        return std::vector<Tensor>{as_strided_backward(g[0], base_sizes, sizes, strides, offset)};
      });
  view_node->forward_op = cs->forward_op;
  view_node->outputs.push_back({x.sizes(), x.dtype(), x.device()});
  view_node->next_edges.push_back(gradient_edge(base));
  set_history(x, view_node, 0);
}

void record_view(const char* name, const Tensor& base, Tensor& view, BackwardFn fn) {
  record_views(name, base, {&view}, std::move(fn));
}

void record_views(const char* name, const Tensor& base, const std::vector<Tensor*>& views,
                  BackwardFn fn) {
  if (!needs_grad(base)) return;
  record(name, name, std::vector<Tensor>{base}, views, std::move(fn));
  AutogradMeta* bm = base.autograd_meta();
  const Tensor& root = bm && bm->is_view && bm->base.defined() ? bm->base : base;
  for (Tensor* view : views) {
    AutogradMeta& m = view->impl()->ensure_autograd_meta();
    m.is_view = true;
    m.base = root;
  }
}

}  // namespace ember::autograd
