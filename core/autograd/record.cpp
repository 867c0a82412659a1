#include "ember/autograd/record.h"

#include <algorithm>
#include <climits>
#include <mutex>

#include "core/autograd/op_math.h"
#include "core/autograd/retain_grad.h"
#include "ember/tensor/overlap.h"

namespace ember::autograd {
namespace {

std::mutex g_accumulator_mu;

// Gives `t` the history (node, output_nr). A gradient retained on the old history moves to the
// new one (PyTorch's update_tensor_hooks_on_new_gradfn); hooks stay with the node they were
// registered on, so a hook registered before an in-place op sees the old value's gradient.
void set_grad_fn(const Tensor& t, std::shared_ptr<Node> node, uint32_t output_nr) {
  AutogradMeta& m = t.impl()->ensure_autograd_meta();
  const bool retained = m.retains_grad && m.grad_fn != node;
  m.grad_fn = std::move(node);
  m.output_nr = output_nr;
  t.impl()->set_requires_grad_flag(true);
  if (retained) {
    m.retains_grad = false;
    retain_grad_in_node(m);
  }
}

// An op's output gets its history. It is not a view for autograd even if the op's forward made
// it as a view of an input below autograd: its grad_fn is the op's (only view ops, through
// record_views, make outputs that follow their base).
void set_history(Tensor& out, const std::shared_ptr<Node>& node, uint32_t output_nr) {
  out.impl()->clear_view_base();
  set_grad_fn(out, node, output_nr);
}

std::mutex g_view_mu;

// The grad_fn of `view` rebuilt from its base's current history (one AsStridedBackward node).
void regenerate_view_grad_fn(const Tensor& view) {
  const Tensor base{IntrusivePtr<TensorImpl>(view.impl()->view_base())};
  auto node = std::make_shared<LambdaNode>(
      "AsStridedBackward", [in = TensorGeometry(base), out = TensorGeometry(view)](
                               const std::vector<Tensor>& g, const LambdaNode&) {
        return std::vector<Tensor>{as_strided_backward(g[0], in, out)};
      });
  node->forward_op = "as_strided";
  node->outputs.push_back({view.sizes(), view.dtype(), view.device()});
  node->next_edges.push_back(gradient_edge(base));
  set_grad_fn(view, std::move(node), 0);
  // Published after the grad_fn: a reader that sees this version reads the new grad_fn.
  view.impl()->set_view_version(view.version());
}

// Refuses to rebase a view made under no_grad or in inference mode (Note [Views see their base's
// history]); `indirect` when the base or another view was changed, not this one.
void check_view_creation(const TensorImpl& view, const char* op, bool indirect) {
  const ViewCreation how = view.view_creation();
  if (how == ViewCreation::Default) return;
  const char* made = how == ViewCreation::NoGrad ? "under no_grad" : "in inference mode";
  const char* mode = how == ViewCreation::NoGrad ? "with grad mode on" : "outside inference mode";
  if (indirect) {
    throw ValueError(fmt::format(
        "[{}] a view made {} is used after its base or another view of its base was modified "
        "in place, and its base requires grad: whether its history should follow the change is "
        "ambiguous (make the view outside {}, or clone it)",
        op, made, how == ViewCreation::NoGrad ? "no_grad" : "inference mode"));
  }
  throw ValueError(fmt::format(
      "[{}] a view made {} is being modified in place {}: whether the change should be "
      "recorded is ambiguous (make the view and the in-place operation both inside {} or both "
      "outside it, or clone the view)",
      op, made, mode, how == ViewCreation::NoGrad ? "no_grad" : "inference mode"));
}

std::shared_ptr<LambdaNode> record_impl(std::string name, const char* forward_op,
                                        const Tensor* const* inputs, size_t n_in,
                                        std::span<Tensor* const> outputs, BackwardFn fn,
                                        bool views = false) {
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
    if (views) {
      out->impl()->set_view_creation(ViewCreation::Default);
      set_grad_fn(*out, node, nr++);
      out->impl()->set_view_version(out->version());
    } else {
      set_history(*out, node, nr++);
    }
  }
  return node;
}

}  // namespace

// True unless the elements of `g` are known to sit at distinct places: sorted by stride, each
// dim (of size > 1) must step past everything the smaller dims reach. Interleavings this cannot
// prove distinct count as overlapping, which only sends them down the general path.
bool detail::may_overlap(const TensorGeometry& g) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (size_t i = 0; i < g.sizes.size(); ++i) {
    if (g.sizes[i] == 0) return false;
    if (g.sizes[i] > 1) dims.emplace_back(g.strides[i], g.sizes[i]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;
  for (auto [stride, size] : dims) {
    if (stride <= reach) return true;
    reach += (size - 1) * stride;
  }
  return false;
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  if (std::shared_ptr<Node> fn = t.grad_fn()) return {std::move(fn), t.output_nr()};
  AutogradMeta* m = t.autograd_meta();
  // A view that requires grad only through its base, with no history of its own (made before
  // its base required grad, or under no_grad): no gradient flows to it, as in PyTorch.
  if (m == nullptr || !m->requires_grad) return {};
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

std::shared_ptr<LambdaNode> record_saving_outputs(std::string name, const char* forward_op,
                                                  std::initializer_list<const Tensor*> inputs,
                                                  std::initializer_list<Tensor*> outputs,
                                                  BackwardFn fn) {
  auto node = record(std::move(name), forward_op, inputs, outputs, std::move(fn));
  for (Tensor* out : outputs) node->save_output(*out);
  return node;
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

void check_writable(const Tensor& t, const char* op) {
  EMBER_CHECK(!t.is_inference() || is_inference_mode(),
              "[{}] an inference tensor cannot be modified in place outside inference_mode (it "
              "was made inside one; clone() it to get a normal tensor)",
              op);
}

void check_inplace(const Tensor& t, const char* op) {
  check_writable(t, op);
  if (!is_grad_enabled()) return;
  if (const TensorImpl* base = t.impl()->view_base()) {
    check_view_creation(*t.impl(), op, /*indirect=*/false);
    const AutogradMeta* bm = base->autograd_meta();
    EMBER_CHECK(!(t.requires_grad() && !(bm && bm->grad_fn)),
                "[{}] a view of a leaf tensor that requires grad is being used in an in-place "
                "operation (do it under NoGradGuard, or on a clone)",
                op);
    EMBER_CHECK_NOT_IMPLEMENTED(
        !detail::may_overlap(TensorGeometry(t)) &&
            !detail::may_overlap(
                TensorGeometry(Tensor(IntrusivePtr<TensorImpl>(t.impl()->view_base())))),
        "[{}] in-place operation on a view whose elements (or whose base's elements) overlap in "
        "memory, e.g. an expanded tensor, while autograd records: sizes {} strides {} (clone() "
        "it first)",
        op, shape_str(t.sizes()), shape_str(t.strides()));
    return;
  }
  if (!t.requires_grad()) return;
  EMBER_CHECK(t.grad_fn() != nullptr,
              "[{}] a leaf tensor that requires grad is being used in an in-place operation "
              "(do it under NoGradGuard, or on a clone)",
              op);
}

void rebase_history(Tensor& x, const Tensor& r) {
  if (!r.requires_grad()) return;
  TensorImpl* base_impl = x.impl()->view_base();
  if (base_impl == nullptr) {
    set_grad_fn(x, r.grad_fn(), r.output_nr());
    return;
  }
  const Tensor base{IntrusivePtr<TensorImpl>(base_impl)};
  auto cs = detail::copy_slices(TensorGeometry(base), TensorGeometry(x));
  cs->forward_op = r.grad_fn() ? r.grad_fn()->forward_op : "copy_";
  cs->outputs.push_back({base.sizes(), base.dtype(), base.device()});
  cs->next_edges.push_back(gradient_edge(base));
  cs->next_edges.push_back(gradient_edge(r));
  set_grad_fn(base, std::move(cs), 0);
  std::lock_guard lock(g_view_mu);
  regenerate_view_grad_fn(x);
}

// Note [Views see their base's history]
// A view shares its base's storage, so an in-place change of the base, or of any other view of
// it, changes the view's values, and its gradient must go through that change (PyTorch's
// view + in-place semantics). mark_view gives every view of a floating tensor, in its
// TensorImpl (no allocation), a pointer to its base (the first non-view tensor of its chain of
// views, which the view keeps alive as PyTorch's _base), the grad mode it was made in and the
// storage version at which its grad_fn was set. The version counter is the storage's, shared by
// the base and all its views, so a version past the recorded one means an alias was written in
// place since. Then:
//  - requires_grad() of a view is its own or its base's (TensorImpl::requires_grad), so writing
//    a value that requires grad into y makes every view of y require grad;
//  - grad_fn() of such a view, when it or its base has history, is rebuilt on access
//    (view_grad_fn) as one AsStridedBackward node on the base's current history: the view's
//    geometry says where its elements are in the base's storage, whatever chain of views made
//    it, as PyTorch does for strided tensors;
//  - an in-place op recorded on a view rewrites the base's history and rebuilds the view's at
//    once (Note [In-place ops and CopySlices]).
// A view made under no_grad or in inference mode may not be rebased: recording an in-place op
// on it, or reading its grad_fn once an alias changed while its base requires grad, is an error
// (whether the change should count is ambiguous), as in PyTorch. A view made before its base
// required grad, with no history of its own, requires grad through the base but no gradient
// flows to it until an alias changes (gradient_edge). The rebuild runs under one mutex and
// publishes the version after the grad_fn, so readers that see the version see the node.
void mark_view(Tensor& view, const Tensor& base) {
  if (!is_floating(view.dtype()) || base.is_inference()) return;
  TensorImpl* root = base.impl();
  // Grad mode first (inference mode turns it off): the common case reads one flag.
  ViewCreation how = is_grad_enabled()     ? ViewCreation::Default
                     : is_inference_mode() ? ViewCreation::Inference
                                           : ViewCreation::NoGrad;
  if (TensorImpl* b = root->view_base()) {
    // A view of a view made without grad mode is as ambiguous as its parent (PyTorch's
    // propagate_creation_meta).
    if (how == ViewCreation::Default || root->view_creation() == ViewCreation::Inference) {
      how = root->view_creation();
    }
    root = b;
  }
  view.impl()->set_view_base(IntrusivePtr<TensorImpl>(root), how);
  view.impl()->set_view_version(view.version());
}

std::shared_ptr<Node> view_grad_fn(const Tensor& view) {
  TensorImpl* impl = view.impl();
  const AutogradMeta* m = impl->autograd_meta();
  const bool has_fn = m != nullptr && m->grad_fn != nullptr;
  if (!has_fn && !impl->view_base()->requires_grad()) return nullptr;
  const uint32_t version = view.version();
  if (impl->view_version() == version) return has_fn ? m->grad_fn : nullptr;
  std::lock_guard lock(g_view_mu);
  if (impl->view_version() != version) {
    check_view_creation(*impl, "autograd", /*indirect=*/true);
    regenerate_view_grad_fn(view);
  }
  return impl->autograd_meta()->grad_fn;
}

void record_view(const char* name, const Tensor& base, Tensor& view, BackwardFn fn) {
  record_views(name, base, {&view}, std::move(fn));
}

void record_views(const char* name, const Tensor& base, const std::vector<Tensor*>& views,
                  BackwardFn fn) {
  if (!needs_grad(base)) return;
  const Tensor* in = &base;
  record_impl(name, name, &in, 1, views, std::move(fn), /*views=*/true);
}

}  // namespace ember::autograd
