// Custom differentiable functions, as torch::autograd::Function<T>:
//
//   struct Cube : ember::autograd::Function<Cube> {
//     static Tensor forward(AutogradContext* ctx, const Tensor& x) {
//       ctx->save_for_backward({x});
//       return x * x * x;
//     }
//     static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
//       Tensor x = ctx->get_saved_variables()[0];
//       return {g[0] * 3.0 * x * x};
//     }
//   };
//   Tensor y = Cube::apply(x);
#pragma once

#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "ember/autograd/record.h"

namespace ember::autograd {

/** What forward hands to backward: saved tensors (version-checked) and plain values. */
class EMBER_API AutogradContext {
 public:
  /** Saves tensors for backward (inputs or outputs of forward). */
  void save_for_backward(std::vector<Tensor> tensors) { pending_ = std::move(tensors); }
  /** The saved tensors; throws if one was modified in place since. */
  std::vector<Tensor> get_saved_variables() const;
  /** Outputs that get no gradient (e.g. integer indices). */
  void mark_non_differentiable(const std::vector<Tensor>& outputs);
  /** Plain values for backward (sizes, flags, scalars). */
  std::map<std::string, double> saved_data;

  // Used by Function<T>::apply.
  /** Turns pending saves into SavedTensors once the outputs have their grad_fn. */
  void finalize(const std::vector<Tensor>& outputs, const Node* node);
  /** True if `t` was marked non-differentiable. */
  bool is_non_differentiable(const Tensor& t) const;

 private:
  std::vector<Tensor> pending_;
  std::vector<SavedTensor> saved_;
  std::vector<const TensorImpl*> non_differentiable_;
  const Node* node_ = nullptr;
};

/** Replaces each output that is one of the inputs itself by a detached alias of it, so that
 *  recording a custom function never makes its node the grad_fn of the caller's input (PyTorch
 *  returns a view there). */
EMBER_API void alias_returned_inputs(const std::vector<Tensor>& inputs,
                                     const std::vector<Tensor*>& outputs);

namespace detail {
inline void collect_tensors(std::vector<Tensor>&) {}
template <typename A, typename... Rest>
void collect_tensors(std::vector<Tensor>& out, const A& a, const Rest&... rest) {
  if constexpr (std::is_same_v<std::decay_t<A>, Tensor>) out.push_back(a);
  collect_tensors(out, rest...);
}
}  // namespace detail

/** Base of a custom function T with static forward(ctx, args...) and backward(ctx, grads). */
template <class T>
struct Function {
  /** Runs T::forward below autograd and records T::backward for the tensor arguments. */
  template <typename... Args>
  static auto apply(Args&&... args) {
    auto ctx = std::make_shared<AutogradContext>();
    std::vector<Tensor> inputs;
    detail::collect_tensors(inputs, args...);
    using Out = decltype(T::forward(ctx.get(), std::forward<Args>(args)...));
    Out out;
    {
      NoGradGuard below_autograd;
      out = T::forward(ctx.get(), std::forward<Args>(args)...);
    }
    std::vector<Tensor*> outputs;
    if constexpr (std::is_same_v<Out, Tensor>) {
      outputs.push_back(&out);
    } else {
      for (Tensor& t : out) outputs.push_back(&t);
    }
    alias_returned_inputs(inputs, outputs);
    bool any = false;
    if (is_grad_enabled()) {
      for (const Tensor& t : inputs) any = any || (t.defined() && t.requires_grad());
    }
    if (any) {
      std::vector<Tensor*> differentiable;
      for (Tensor* t : outputs) {
        if (!ctx->is_non_differentiable(*t) && is_floating(t->dtype())) differentiable.push_back(t);
      }
      const size_t n_in = inputs.size();
      auto node =
          record(std::string(typeid(T).name()) + "Backward", "custom Function", inputs,
                 differentiable, [ctx, n_in](const std::vector<Tensor>& g, const LambdaNode&) {
                   std::vector<Tensor> r = T::backward(ctx.get(), g);
                   EMBER_CHECK(r.size() == n_in,
                               "[autograd::Function] backward returned {} gradients for "
                               "{} tensor inputs",
                               r.size(), n_in);
                   return r;
                 });
      std::vector<Tensor> outs;
      for (Tensor* t : outputs) outs.push_back(*t);
      ctx->finalize(outs, node.get());
    } else {
      ctx->finalize({}, nullptr);
    }
    return out;
  }
};

}  // namespace ember::autograd
