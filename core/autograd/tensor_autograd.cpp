// The autograd members of Tensor: requires_grad, grad, grad_fn, backward, detach, hooks.
#include "core/autograd/op_math.h"
#include "core/autograd/retain_grad.h"
#include "ember/autograd/engine.h"
#include "ember/autograd/node.h"
#include "ember/autograd/record.h"
#include "ember/tensor/tensor.h"

namespace ember {

using autograd::AutogradMeta;

autograd::AutogradMeta& TensorImpl::ensure_autograd_meta() {
  if (!autograd_) autograd_.reset(new AutogradMeta());
  return *autograd_;
}

void autograd::AutogradMetaDeleter::operator()(AutogradMeta* meta) const {
  delete meta;
}

Tensor& Tensor::requires_grad_(bool on) {
  EMBER_CHECK_TYPE(
      !on || is_floating(dtype()),
      "[requires_grad_] only tensors of floating point dtype can require gradients: got "
      "{}",
      dtype());
  EMBER_CHECK(!on || !is_inference() || autograd::is_inference_mode(),
              "[requires_grad_] setting requires_grad=True on an inference tensor outside "
              "inference_mode is not allowed (clone() it to get a normal tensor)");
  AutogradMeta& m = impl_->ensure_autograd_meta();
  EMBER_CHECK(on || !m.grad_fn,
              "[requires_grad_] you can only change requires_grad of leaf tensors (use detach() "
              "to get a tensor that does not require grad)");
  m.requires_grad = on;
  impl_->set_requires_grad_flag(on || m.grad_fn != nullptr);
  return *this;
}

bool Tensor::is_inference() const {
  return defined() && impl_->storage() && impl_->storage()->inference();
}

const Tensor& Tensor::grad() const {
  static const Tensor kUndefined;
  const AutogradMeta* m = impl_->autograd_meta();
  if (!m) return kUndefined;
  if (m->retains_grad && impl_->view_base() != nullptr) grad_fn();  // moves to a rebuilt history
  if (m->retains_grad && m->grad_fn && m->output_nr < m->grad_fn->retained_grads.size()) {
    return m->grad_fn->retained_grads[m->output_nr];
  }
  return m->grad;
}

Tensor& Tensor::mutable_grad() const {
  return impl_->ensure_autograd_meta().grad;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  if (impl_->view_base() != nullptr) return autograd::view_grad_fn(*this);
  const AutogradMeta* m = impl_->autograd_meta();
  return m ? m->grad_fn : nullptr;
}

bool Tensor::is_leaf() const {
  return grad_fn() == nullptr;
}

uint32_t Tensor::output_nr() const {
  if (impl_->view_base() != nullptr) grad_fn();  // a rebuilt history has output 0
  const AutogradMeta* m = impl_->autograd_meta();
  return m ? m->output_nr : 0;
}

bool Tensor::is_view() const {
  return impl_->view_base() != nullptr;
}

Tensor Tensor::base() const {
  TensorImpl* b = impl_->view_base();
  return b ? Tensor(IntrusivePtr<TensorImpl>(b)) : Tensor();
}

autograd::AutogradMeta* Tensor::autograd_meta() const {
  return impl_->autograd_meta();
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph);
}

Tensor Tensor::detach() const {
  return Tensor(
      make_intrusive<TensorImpl>(storage(), sizes(), strides(), storage_offset(), dtype()));
}

// Note [Replacing a tensor's data]
// set_data swaps what a TensorImpl points at (storage, geometry, dtype) under every handle to it,
// which is how a module converts its parameters (Module::to) without making new tensors: an
// optimizer, a Python object or a user's map keyed by the parameter keep working. The autograd
// state stays; an accumulator made for the old dtype or device is dropped (a graph recorded
// before keeps it, and AccumulateGrad stores in the leaf's current dtype), as PyTorch's set_data
// does. Views made of the tensor before keep the old storage.
void Tensor::set_data(const Tensor& data) const {
  EMBER_CHECK_TYPE(defined() && data.defined(), "[set_data] undefined tensor");
  EMBER_CHECK_TYPE(!requires_grad() || is_floating(data.dtype()),
                   "[set_data] data set to a tensor that requires gradients must be floating "
                   "point: got {}",
                   data.dtype());
  if (AutogradMeta* m = impl_->autograd_meta()) {
    if (data.dtype() != dtype() || data.device() != device()) m->grad_accumulator.reset();
  }
  impl_->set_data(*data.impl());
}

void Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  EMBER_CHECK(requires_grad(),
              "[register_hook] cannot register a hook on a tensor that doesn't require gradient");
  if (std::shared_ptr<autograd::Node> fn = grad_fn()) {
    fn->pre_hooks.emplace_back(output_nr(), std::move(hook));
  } else {
    impl_->ensure_autograd_meta().leaf_hooks.push_back(std::move(hook));
  }
}

void Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  EMBER_CHECK(requires_grad() && !grad_fn(),
              "[register_post_accumulate_grad_hook] the tensor must be a leaf that requires "
              "grad: requires_grad={}, has grad_fn={}",
              requires_grad(), grad_fn() != nullptr);
  impl_->ensure_autograd_meta().post_accumulate_hooks.push_back(std::move(hook));
}

// Note [retain_grad stores in the node]
// A non-leaf's retained gradient lives in its grad_fn (Node::retained_grads), written by a
// pre-hook the node owns. Storing it in the tensor would need the hook to reference the
// tensor, and the tensor references the node: a cycle that never frees.
void Tensor::retain_grad() const {
  EMBER_CHECK(requires_grad(),
              "[retain_grad] can't retain_grad on a tensor that has requires_grad=false");
  if (impl_->view_base() != nullptr) grad_fn();  // bring a view's history up to date first
  autograd::retain_grad_in_node(impl_->ensure_autograd_meta());
}

namespace autograd {

void retain_grad_in_node(AutogradMeta& m) {
  if (!m.grad_fn || m.retains_grad) return;  // leaves keep their grad anyway
  m.retains_grad = true;
  Node* node = m.grad_fn.get();
  const uint32_t nr = m.output_nr;
  if (node->retained_grads.size() <= nr) node->retained_grads.resize(nr + 1);
  node->pre_hooks.emplace_back(nr, [node, nr](const Tensor& g) {
    Tensor& slot = node->retained_grads[nr];
    slot = slot.defined() ? detail::add_grads(slot, g.detach()) : g.detach();
    return Tensor();
  });
}

}  // namespace autograd

}  // namespace ember
