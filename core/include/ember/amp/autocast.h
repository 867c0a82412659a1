// Automatic mixed precision, as torch.autocast: inside an autocast scope, ops that gain from a
// lower precision (matmul, convolution, linear) run in float16 or bfloat16, and ops that need
// range or accuracy (softmax, norms, losses, reductions) run in float32 (Note [Autocast]).
#pragma once

#include <atomic>
#include <optional>
#include <string_view>
#include <type_traits>

#include "ember/tensor/tensor.h"
#include "ember/util/export.h"

namespace ember::amp {

/** An autocast scope for one device type, as `with torch.autocast(device_type, dtype)`: scopes
 *  nest, each restoring what was there before; the state is per thread. `dtype` defaults to
 *  bfloat16 on the CPU and float16 elsewhere; only float16 and bfloat16 are allowed. */
class EMBER_API autocast {
 public:
  /** Enters (or, with `enabled` false, leaves) autocast for `device_type` ("cpu", "cuda"). */
  explicit autocast(std::string_view device_type = "cpu", std::optional<DType> dtype = std::nullopt,
                    bool enabled = true);
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  int16_t type_;
  bool was_enabled_;
  DType was_dtype_;
};

/** Whether autocast is on for `device_type` on this thread. */
EMBER_API bool is_autocast_enabled(std::string_view device_type = "cpu");
/** The lower-precision dtype autocast uses for `device_type` on this thread. */
EMBER_API DType get_autocast_dtype(std::string_view device_type = "cpu");

namespace detail {

/** Live autocast scopes in the process: while 0, ops pay one load and one branch. */
EMBER_API extern std::atomic<int> g_scopes;

/** What an op does to its floating tensor arguments under autocast. */
enum class Policy {
  Lower,    ///< cast to the autocast dtype (matmul, convolution, linear)
  Float32,  ///< cast float16/bfloat16 to float32 (softmax, norms, losses, reductions)
  Promote,  ///< cast to the widest floating dtype among them (cat, stack)
};

/** The dtype autocast gives `t`'s device under `policy` (`widest`: for Promote), or nullopt
 *  when autocast is off there or `t` is not floating. */
EMBER_API std::optional<DType> target_dtype(const Tensor& t, Policy policy, DType widest);
/** Whether autocast is on for the device of `t` on this thread and not suspended. */
EMBER_API bool active_for(const Tensor& t);

/** Suspends autocast on this thread while an op it cast runs (nested ops are not cast again). */
class EMBER_API Suspend {
 public:
  Suspend();
  ~Suspend();
  Suspend(const Suspend&) = delete;
  Suspend& operator=(const Suspend&) = delete;
};

/** `t` cast as `policy` says (unchanged when nothing applies). */
inline Tensor cast(const Tensor& t, Policy policy, DType widest) {
  if (!t.defined()) return t;
  const std::optional<DType> to = target_dtype(t, policy, widest);
  return to && *to != t.dtype() ? t.to(*to) : t;
}

/** An argument of an op, cast if it is a tensor or a list of tensors. */
template <typename A>
decltype(auto) cast_arg(const A& a, Policy policy, DType widest) {
  if constexpr (std::is_same_v<A, Tensor>) {
    return cast(a, policy, widest);
  } else if constexpr (std::is_same_v<A, std::vector<Tensor>>) {
    std::vector<Tensor> out;
    for (const Tensor& t : a) out.push_back(cast(t, policy, widest));
    return out;
  } else {
    return (a);
  }
}

/** The widest floating dtype among tensor arguments (float32 if there is none). */
EMBER_API DType widest_floating(const std::vector<Tensor>& tensors);

/** Runs `op` with its arguments cast under `policy`, autocast suspended inside; returns what
 *  the op returns (a tensor, or a tuple of them). */
template <typename Op, typename... A>
auto run(Policy policy, Op&& op, const A&... args) {
  DType widest = DType::Float32;
  if (policy == Policy::Promote) {
    std::vector<Tensor> all;
    auto gather = [&all](const auto& a) {
      using T = std::decay_t<decltype(a)>;
      if constexpr (std::is_same_v<T, Tensor>) all.push_back(a);
      if constexpr (std::is_same_v<T, std::vector<Tensor>>)
        all.insert(all.end(), a.begin(), a.end());
    };
    (gather(args), ...);
    widest = widest_floating(all);
  }
  const Suspend suspend;
  return op(cast_arg(args, policy, widest)...);
}

}  // namespace detail
}  // namespace ember::amp

/** At the top of an op that autocast covers: when autocast is on for the device of tensor
 *  `FIRST`, re-runs the op `FN` on its arguments cast as POLICY (Lower, Float32, Promote) says,
 *  and returns that (Note [Autocast]). Off, one load and one predictable branch. */
#define EMBER_AUTOCAST(POLICY, FN, FIRST, ...)                                              \
  do {                                                                                      \
    if (::ember::amp::detail::g_scopes.load(std::memory_order_relaxed) != 0) [[unlikely]] { \
      if (::ember::amp::detail::active_for(FIRST)) {                                        \
        return ::ember::amp::detail::run(                                                   \
            ::ember::amp::detail::Policy::POLICY,                                           \
            [&](const auto&... ember_autocast_args) { return FN(ember_autocast_args...); }, \
            __VA_ARGS__);                                                                   \
      }                                                                                     \
    }                                                                                       \
  } while (false)
