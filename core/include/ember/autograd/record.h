// Recording autograd history from the op layer: the one place ops talk to the engine.
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <string>

#include "ember/autograd/grad_mode.h"
#include "ember/autograd/node.h"
#include "ember/dispatch/profiling.h"
#include "ember/tensor/tensor.h"

namespace ember::autograd {

/** True if an op on these tensors must record: grad mode is on and one requires grad. */
template <typename... Ts>
bool needs_grad(const Ts&... ts) {
  return is_grad_enabled() && (... || (ts.defined() && ts.requires_grad()));
}

/** needs_grad over a list of tensor pointers (null and undefined entries are skipped). */
inline bool any_requires_grad(std::initializer_list<const Tensor*> ts) {
  if (!is_grad_enabled()) return false;
  for (const Tensor* t : ts) {
    if (t && t->defined() && t->requires_grad()) return true;
  }
  return false;
}

/** The edge a gradient for `t` flows into: its grad_fn, its accumulator, or none. */
EMBER_API Edge gradient_edge(const Tensor& t);

/** Records `fn` as the backward of op `forward_op`: a node named `name` with edges to
 *  `inputs` (undefined ones get none) becomes the grad_fn of every output. */
EMBER_API std::shared_ptr<LambdaNode> record(std::string name, const char* forward_op,
                                             std::initializer_list<const Tensor*> inputs,
                                             std::initializer_list<Tensor*> outputs, BackwardFn fn);
/** record() for a variable number of inputs. */
EMBER_API std::shared_ptr<LambdaNode> record(std::string name, const char* forward_op,
                                             const std::vector<Tensor>& inputs,
                                             std::initializer_list<Tensor*> outputs, BackwardFn fn);

/** record() for variable numbers of inputs and outputs. */
EMBER_API std::shared_ptr<LambdaNode> record(std::string name, const char* forward_op,
                                             const std::vector<Tensor>& inputs,
                                             const std::vector<Tensor*>& outputs, BackwardFn fn);

// Note [A closure never captures its own outputs]
// An output captured in the backward closure as a SavedTensor is held strongly, and its grad_fn
// is the closure's node: a cycle that leaks the graph whenever backward does not run (inference
// with parameters that require grad) or throws. Outputs the backward needs are saved on the node
// instead, weakly linked to it (SavedTensor's is_output), and read with self.saved_output(i).
// Gradcheck.EveryCaseFreesItsGraphWithoutBackward finds a closure that breaks this.
/** record() whose node also saves every output, in order, for its backward
 *  (LambdaNode::saved_output(i)); see Note [A closure never captures its own outputs]. */
EMBER_API std::shared_ptr<LambdaNode> record_saving_outputs(
    std::string name, const char* forward_op, std::initializer_list<const Tensor*> inputs,
    std::initializer_list<Tensor*> outputs, BackwardFn fn);

/** Sums a broadcast gradient back down to `sizes` (the shape of the op's input). */
EMBER_API Tensor sum_to(const Tensor& grad, IntList sizes);

/** Rejects, before anything is written, an in-place op that autograd would record on a leaf that
 *  requires grad, on a view of one, on a view made under no_grad or in inference mode, or on a
 *  view whose elements overlap; and one on an inference tensor outside inference mode
 *  (check_writable). */
EMBER_API void check_inplace(const Tensor& t, const char* op);

/** Rejects an in-place write to an inference tensor outside InferenceMode (Note [Inference
 *  tensors]); every in-place op calls it before it writes. */
EMBER_API void check_writable(const Tensor& t, const char* op);

/** After an in-place op wrote `r` (its out-of-place result) into `x`: x takes over r's history,
 *  or, if x is a view, its base's history becomes a CopySlices of r and x's is rebuilt from it
 *  (Note [In-place ops and CopySlices] in core/ops/autograd_math.cpp). */
EMBER_API void rebase_history(Tensor& x, const Tensor& r);

/** Sizes, strides and storage offset of a tensor: where its elements lie in its storage. */
struct TensorGeometry {
  Shape sizes;
  Shape strides;
  int64_t offset = 0;
  TensorGeometry() = default;
  /** The geometry of `t`. */
  explicit TensorGeometry(const Tensor& t)
      : sizes(t.sizes()), strides(t.strides()), offset(t.storage_offset()) {}
};

/** Marks `view`, just made from `base` by a view op, as a view for autograd: it follows the
 *  history of base's base (Note [Views see their base's history] in core/autograd/record.cpp). */
EMBER_API void mark_view(Tensor& view, const Tensor& base);

/** The grad_fn of a view, rebuilt from its base's history if an alias was changed in place since
 *  it was set; Tensor::grad_fn() calls it for views. */
EMBER_API std::shared_ptr<Node> view_grad_fn(const Tensor& view);

/** Gradient for a tensor of geometry `in` from the gradient `grad` of its as_strided view of
 *  geometry `out` (offsets in the same storage); differentiable when grad mode is on. */
EMBER_API Tensor as_strided_backward(const Tensor& grad, const TensorGeometry& in,
                                     const TensorGeometry& out);

/** Records an in-place op on `x` as out_of_place(x.clone()) written back into x. */
template <typename OutOfPlace>
Tensor& inplace(Tensor& x, const char* op, OutOfPlace&& out_of_place) {
  check_inplace(x, op);
  Tensor r = out_of_place(x.clone());
  EMBER_CHECK(r.sizes() == x.sizes(),
              "[{}] output with shape {} doesn't match the broadcast shape {}", op,
              shape_str(x.sizes()), shape_str(r.sizes()));
  if (r.dtype() != x.dtype()) r = r.to(x.dtype());
  {
    NoGradGuard no_grad;
    x.copy_(r);
  }
  rebase_history(x, r);
  return x;
}

/** Records the backward `fn` (named `name`) of `view`, made from `base` by a view op and marked by
 *  mark_view, when base requires grad. */
EMBER_API void record_view(const char* name, const Tensor& base, Tensor& view, BackwardFn fn);
/** The same for several views of `base` made by one op: one node with an output per view. */
EMBER_API void record_views(const char* name, const Tensor& base, const std::vector<Tensor*>& views,
                            BackwardFn fn);

namespace detail {
/** differentiable() without its profiler range (inlined into each op, as differentiable was). */
template <typename Forward, typename MakeBackward>
[[gnu::always_inline]] inline Tensor differentiable_body(
    const char* node, const char* op, std::initializer_list<const Tensor*> inputs, Forward& forward,
    MakeBackward& make_backward, bool save_output) {
  if (!any_requires_grad(inputs)) return forward();
  Tensor out;
  {
    NoGradGuard below_autograd;
    out = forward();
  }
  if (!is_floating(out.dtype())) return out;  // integer and bool results carry no gradient
  auto n = record(node, op, inputs, {&out}, make_backward());
  if (save_output) n->save_output(out);
  return out;
}

/** differentiable() while a profiler runs: the body inside the op's range, out of line and
 *  cold so that the op's own path keeps the body inlined behind one branch. */
template <typename Forward, typename MakeBackward>
[[gnu::noinline, gnu::cold]] Tensor differentiable_profiled(
    const char* node, const char* op, std::initializer_list<const Tensor*> inputs, Forward& forward,
    MakeBackward& make_backward, bool save_output) {
  profiler::detail::OpRange range(op, inputs);
  return differentiable_body(node, op, inputs, forward, make_backward, save_output);
}
}  // namespace detail

/** Runs `forward()` below autograd and, if an input requires grad, records the backward made
 *  by `make_backward()` (called only then, so saving costs nothing otherwise). With
 *  `save_output`, the node also keeps the result for its backward (LambdaNode::saved_output).
 *  While a profiler runs, the whole op is recorded as the range `op`. */
template <typename Forward, typename MakeBackward>
Tensor differentiable(const char* node, const char* op, std::initializer_list<const Tensor*> inputs,
                      Forward&& forward, MakeBackward&& make_backward, bool save_output = false) {
  // Note [One branch when the profiler is off] in ember/dispatch/profiling.h.
  if (profiler::is_enabled()) [[unlikely]] {
    return detail::differentiable_profiled(node, op, inputs, forward, make_backward, save_output);
  }
  return detail::differentiable_body(node, op, inputs, forward, make_backward, save_output);
}

// Note [Save only what backward needs]
// A closure keeps what it captures alive until the graph is freed, so an input captured only for
// its gradient's shape and dtype held a whole activation (both branches of every residual add
// did). Closures capture a TensorMeta for that, and an input's values only where a formula that
// will run reads them.
/** The sizes and dtype of a tensor: what reduce_grad needs of an input. */
struct TensorMeta {
  Shape sizes;
  DType dtype = DType::Float32;
  TensorMeta() = default;
  /** The meta of `t`. */
  explicit TensorMeta(const Tensor& t) : sizes(t.sizes()), dtype(t.dtype()) {}
};

/** Gradient for input `t` from a gradient of the (broadcast, promoted) result. */
EMBER_API Tensor reduce_grad(const Tensor& grad, const Tensor& t);
/** reduce_grad for an input known only by its sizes and dtype. */
EMBER_API Tensor reduce_grad(const Tensor& grad, const TensorMeta& t);

}  // namespace ember::autograd
