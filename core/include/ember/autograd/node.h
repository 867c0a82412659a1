// Node: one recorded backward step; Edge: where its gradients go; SavedTensor: a tensor kept
// for backward with the version it had when saved.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/tensor/tensor.h"
#include "ember/util/export.h"

namespace ember::autograd {

class Node;

/** Input `input_nr` of node `fn`: where one gradient flows. */
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  /** True if the edge leads somewhere. */
  bool valid() const { return fn != nullptr; }
};

/** A hook on a gradient: returns a replacement, or an undefined tensor to keep it. */
using GradHook = std::function<Tensor(const Tensor&)>;

/** Runs `hook` on `grad`: its replacement, or `grad` if it returned none. A replacement of
 *  another shape, dtype or device is an error (as PyTorch checks a hook's result). */
EMBER_API Tensor apply_grad_hook(const GradHook& hook, const Tensor& grad);

/** Shape, dtype and device of a forward output, to make zeros for a missing gradient. */
struct OutputMeta {
  Shape sizes;
  DType dtype = default_dtype();
  Device device;
};

/** One recorded backward step: gradients of its forward outputs in, of its inputs out. */
class EMBER_API Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  /** Frees the nodes only this one kept alive without recursing on the graph's depth. */
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /** Gradients w.r.t. the forward inputs (one per next edge) from those of the outputs. */
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  /** Name like "MulBackward". */
  virtual std::string name() const = 0;
  /** Drops saved tensors after a backward without retain_graph. */
  virtual void release_saved() {}

  /** Where each input gradient goes, in forward-input order. */
  std::vector<Edge> next_edges;
  /** Metadata of each forward output. */
  std::vector<OutputMeta> outputs;
  /** Hooks on the incoming gradient of output i: (i, hook). */
  std::vector<std::pair<uint32_t, GradHook>> pre_hooks;
  /** Creation order; later nodes run first in backward. */
  uint64_t sequence_nr;
  /** The forward op that recorded this node (for anomaly messages). */
  std::string forward_op;
  /** Gradients kept for outputs whose tensors called retain_grad(). */
  std::vector<Tensor> retained_grads;
};

/** A tensor saved for backward; unpacking checks it was not modified in place since. */
class EMBER_API SavedTensor {
 public:
  SavedTensor() = default;
  /** Saves `t`; `is_output` if it is an output of the node that saves it (avoids a cycle). */
  SavedTensor(const Tensor& t, bool is_output = false);
  /** The saved tensor; throws (naming `saved_by`) if it was modified in place since. */
  Tensor unpack(const Node* saved_by = nullptr) const;
  /** True if something was saved. */
  bool defined() const { return data_.defined(); }

 private:
  Tensor data_;
  uint32_t version_ = 0;
  bool is_output_ = false;
  std::weak_ptr<Node> grad_fn_;
  uint32_t output_nr_ = 0;
  bool requires_grad_ = false;
};

class LambdaNode;

/** The backward function of a recorded op: (grads of outputs, the node) -> grads of inputs.
 *  Grads of outputs that received none arrive as zeros; return an undefined tensor for an
 *  input that gets no gradient. */
using BackwardFn =
    std::function<std::vector<Tensor>(const std::vector<Tensor>& grads, const LambdaNode& self)>;

/** A node whose backward is a closure; what the closure captures is its saved state. */
class EMBER_API LambdaNode : public Node {
 public:
  /** A node named `name` running `fn`. */
  LambdaNode(std::string name, BackwardFn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return name_; }
  void release_saved() override;

  /** Saves one of this node's own forward outputs (kept without a reference cycle). */
  void save_output(const Tensor& out) { saved_outputs_.emplace_back(out, /*is_output=*/true); }
  /** The i-th saved output, version-checked. */
  Tensor saved_output(size_t i) const;
  /** Unpacks a tensor this node's closure saved, naming this node if it changed. */
  Tensor unpack(const SavedTensor& s) const { return s.unpack(this); }
  /** The backward closure (empty once release_saved() ran); a language binding looks into it
   *  for the objects it holds (its garbage collector's traversal). */
  BackwardFn& backward_fn() { return fn_; }

 private:
  std::string name_;
  BackwardFn fn_;
  std::vector<SavedTensor> saved_outputs_;
  bool released_ = false;
};

/** Accumulates the gradient of a leaf tensor into its .grad. */
class EMBER_API AccumulateGrad : public Node {
 public:
  /** The node for `leaf`. */
  explicit AccumulateGrad(Tensor leaf);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }
  /** The leaf this node accumulates into. */
  const Tensor& variable() const { return variable_; }

 private:
  Tensor variable_;
  std::mutex mu_;  // backward passes on several threads may share a leaf
};

/** Per-tensor autograd state; allocated the first time a tensor takes part in autograd. */
struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  uint32_t output_nr = 0;
  std::weak_ptr<Node> grad_accumulator;
  std::vector<GradHook> leaf_hooks;  // hooks on a leaf's incoming gradient
  std::vector<std::function<void(const Tensor&)>> post_accumulate_hooks;  // leaf, after .grad
};

}  // namespace ember::autograd
