#include "ember/autograd/node.h"

#include <atomic>

#include "core/autograd/op_math.h"
#include "ember/autograd/grad_mode.h"
#include "ember/util/error.h"

namespace ember::autograd {
namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
}  // namespace

Node::Node() : sequence_nr(g_next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

// Note [Freeing deep graphs]
// A node owns the nodes its edges point at, so dropping the last tensor of a chain of a million
// ops would free a million nodes recursively, each destructor inside the previous one, and
// overflow the stack near 40,000. Instead a node that is the last owner of a next node hands it
// to a per-thread list of orphans, and the outermost destructor on the thread frees the list
// one node at a time; each of those hands on its own orphans the same way, so the stack stays
// flat whatever the depth. The derived class's members (the closure and its saved tensors) are
// gone by the time this body runs, so a next node that a saved input also held is counted with
// that reference already dropped. Moving an edge's pointer is safe whatever its count: the count
// only decides whether the node could die here, and a pointer moved needlessly is released a
// moment later by the loop.
Node::~Node() {
  thread_local std::vector<std::shared_ptr<Node>>* t_orphans = nullptr;
  std::vector<std::shared_ptr<Node>> orphans;
  std::vector<std::shared_ptr<Node>>& sink = t_orphans != nullptr ? *t_orphans : orphans;
  for (Edge& e : next_edges) {
    if (e.fn && e.fn.use_count() == 1) sink.push_back(std::move(e.fn));
  }
  if (t_orphans != nullptr || orphans.empty()) return;
  t_orphans = &orphans;
  while (!orphans.empty()) {
    std::shared_ptr<Node> n = std::move(orphans.back());
    orphans.pop_back();
    n.reset();  // may append to `orphans`
  }
  t_orphans = nullptr;
}

Tensor apply_grad_hook(const GradHook& hook, const Tensor& grad) {
  Tensor r = hook(grad);
  if (!r.defined()) return grad;
  EMBER_CHECK(r.sizes() == grad.sizes(),
              "[autograd] a gradient hook changed the gradient's shape: was {}, got {} (return a "
              "tensor of the same shape, or None)",
              shape_str(grad.sizes()), shape_str(r.sizes()));
  EMBER_CHECK_TYPE(r.dtype() == grad.dtype() && r.device() == grad.device(),
                   "[autograd] a gradient hook changed the gradient's type: was {} on {}, got {} "
                   "on {} (convert the result back)",
                   grad.dtype(), grad.device(), r.dtype(), r.device());
  return r;
}

std::vector<Tensor> LambdaNode::apply(std::vector<Tensor>&& grads) {
  EMBER_CHECK(!released_,
              "[autograd] trying to backward through {} a second time: its saved tensors were "
              "freed after the first backward (pass retain_graph=true the first time)",
              name_);
  return fn_(grads, *this);
}

void LambdaNode::release_saved() {
  fn_ = nullptr;
  saved_outputs_.clear();
  released_ = true;
}

Tensor LambdaNode::saved_output(size_t i) const {
  EMBER_ASSERT(i < saved_outputs_.size());
  return saved_outputs_[i].unpack(this);
}

AccumulateGrad::AccumulateGrad(Tensor leaf) : variable_(std::move(leaf)) {
  sequence_nr = UINT64_MAX;  // run as soon as ready
  outputs.push_back({variable_.sizes(), variable_.dtype(), variable_.device()});
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  Tensor g = std::move(grads[0]);
  AutogradMeta* meta = variable_.autograd_meta();
  EMBER_ASSERT(meta != nullptr);
  {
    std::lock_guard lock(mu_);
    for (const GradHook& hook : meta->leaf_hooks) g = apply_grad_hook(hook, g);
    if (!g.defined()) return {};
    // The engine has made g the leaf's shape, dtype and device as they were when this node was
    // made (Note [Gradients are checked where they enter a node]); the leaf may have been
    // converted since (Module::to), so .grad is kept in the leaf's own dtype.
    EMBER_CHECK(g.sizes() == variable_.sizes() && g.device() == variable_.device(),
                "[autograd] a gradient of shape {} on {} reached a leaf of shape {} on {} (was the "
                "leaf's data replaced after the graph was recorded?)",
                shape_str(g.sizes()), g.device(), shape_str(variable_.sizes()), variable_.device());
    if (g.dtype() != variable_.dtype()) g = g.to(variable_.dtype());
    if (meta->grad.defined()) {
      EMBER_CHECK(
          meta->grad.sizes() == variable_.sizes() && meta->grad.device() == variable_.device(),
          "[autograd] the .grad of a leaf of shape {} on {} has shape {} on {} (assign a "
          "gradient like the leaf, or None)",
          shape_str(variable_.sizes()), variable_.device(), shape_str(meta->grad.sizes()),
          meta->grad.device());
    }
    if (!is_grad_enabled()) g = g.detach();
    // Out of place: the previous .grad may be shared with user code or another graph.
    // Note [The layout of .grad]
    // As PyTorch's AccumulateGrad does, a first gradient is made dense in its leaf's format: a
    // gradient that is not dense (sum's backward returns an expanded view) is copied so an
    // optimizer's in-place update touches each element once, and a channels-last parameter gets
    // a channels-last .grad (and a contiguous one a contiguous .grad) whatever layout the backward
    // produced, so the optimizer steps them as one dense run. Later gradients are added to it and
    // the sum keeps the first operand's format.
    const MemoryFormat format = variable_.suggest_memory_format();
    meta->grad = meta->grad.defined() ? detail::add_grads(meta->grad, g)
                                      : (g.is_contiguous(format) ? g : g.contiguous(format));
    if (meta->grad.dtype() != variable_.dtype()) meta->grad = meta->grad.to(variable_.dtype());
  }
  for (const auto& hook : meta->post_accumulate_hooks) hook(variable_);
  return {};
}

// Note [Saving a node's own output]
// A node that saves its own output (exp saves exp(x)) must not hold that tensor's grad_fn
// strongly: the output's grad_fn is the node itself, a reference cycle. The output is saved as
// a plain alias of its storage (version counter shared) plus a weak pointer to the node, and
// unpacking rebuilds a tensor with that grad_fn so double backward still sees the history.
SavedTensor::SavedTensor(const Tensor& t, bool is_output) : is_output_(is_output) {
  if (!t.defined()) return;
  version_ = t.version();
  if (!is_output) {
    data_ = t;
    return;
  }
  data_ = t.detach();
  grad_fn_ = t.grad_fn();
  output_nr_ = t.output_nr();
  requires_grad_ = t.requires_grad();
}

Tensor SavedTensor::unpack(const Node* saved_by) const {
  if (!data_.defined()) return data_;
  EMBER_CHECK(data_.version() == version_,
              "[autograd] one of the tensors needed for gradient computation has been modified "
              "by an inplace operation: [{} {}] is at version {}; expected version {} instead "
              "(saved by {} for the forward op '{}'; clone it before modifying it in place)",
              data_.dtype(), shape_str(data_.sizes()), data_.version(), version_,
              saved_by ? saved_by->name() : "a backward node",
              saved_by ? saved_by->forward_op : "?");
  if (!is_output_) return data_;
  std::shared_ptr<Node> fn = grad_fn_.lock();
  if (!fn) return data_;
  Tensor t = data_.detach();
  AutogradMeta& m = t.impl()->ensure_autograd_meta();
  m.grad_fn = std::move(fn);
  m.output_nr = output_nr_;
  t.impl()->set_requires_grad_flag(true);
  return t;
}

}  // namespace ember::autograd

#include "ember/autograd/function.h"

namespace ember::autograd {

std::vector<Tensor> AutogradContext::get_saved_variables() const {
  std::vector<Tensor> out;
  for (const SavedTensor& s : saved_) out.push_back(s.unpack(node_));
  return out;
}

void AutogradContext::mark_non_differentiable(const std::vector<Tensor>& outputs) {
  for (const Tensor& t : outputs) non_differentiable_.push_back(t.impl());
}

bool AutogradContext::is_non_differentiable(const Tensor& t) const {
  for (const TensorImpl* p : non_differentiable_) {
    if (p == t.impl()) return true;
  }
  return false;
}

void alias_returned_inputs(const std::vector<Tensor>& inputs, const std::vector<Tensor*>& outputs) {
  for (Tensor* out : outputs) {
    for (const Tensor& in : inputs) {
      if (out->defined() && in.defined() && out->is_same(in)) *out = out->detach();
    }
  }
}

void AutogradContext::finalize(const std::vector<Tensor>& outputs, const Node* node) {
  node_ = node;
  for (const Tensor& t : pending_) {
    bool is_output = false;
    for (const Tensor& o : outputs) is_output = is_output || o.impl() == t.impl();
    saved_.emplace_back(t, is_output);
  }
  pending_.clear();
}

}  // namespace ember::autograd
