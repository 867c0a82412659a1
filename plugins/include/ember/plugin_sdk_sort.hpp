// The kernel contracts of the ops that return values with their int64 indices (sort, topk and
// the arg reductions argmax, argmin, max_dim, min_dim), checked once for the backends that share
// these messages (the contracts themselves are in core/ops/index.cpp and core/ops/reduce.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_ops.hpp"

namespace ember::sdk {

// Note [NaN sorts as the largest value]
// As in PyTorch, NaN compares greater than every number (and equal to other NaNs), so an
// ascending sort puts NaNs last, a descending sort puts them first, and topk(largest) picks
// them first. These predicates are strict weak orderings even with NaNs present, so
// std::stable_sort is well defined.

/** a < b in the compute type C, NaN the largest value. */
template <typename C>
bool sort_less(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return !std::isnan(a) && (std::isnan(b) || a < b);
  } else {
    return a < b;
  }
}

/** a > b in the compute type C, NaN the largest value. */
template <typename C>
bool sort_greater(C a, C b) {
  return sort_less(b, a);
}

/** The layout sort and topk take: inputs {x}, outputs {values, indices} of x's ndim >= 1,
 *  indices int64. EMBER_OK, or the failure written into the call. */
inline int32_t check_sort_layout(const ember_kernel_call* call) {
  const ember_tensor& x = call->inputs[0];
  if (x.ndim < 1 || call->outputs[0].ndim != x.ndim || call->outputs[1].ndim != x.ndim) {
    return fail(call, EMBER_ERR_INVALID, "expected inputs and outputs of one ndim >= 1");
  }
  if (call->outputs[1].dtype != EMBER_I64) {
    return fail(call, EMBER_ERR_INVALID, "indices must be int64");
  }
  return EMBER_OK;
}

/** The operands of argmax / argmin (kValues false: outputs {indices}) or max_dim / min_dim
 *  (kValues true: outputs {values, indices}), op A: one input reduced over its one trailing dim,
 *  indices int64. EMBER_OK, or the failure written into the call, naming the op. */
template <typename A, bool kValues>
int32_t check_arg_reduce(const ember_kernel_call* call) {
  const char* name = ops::kInfo[A::kOp].name;
  const int nout = kValues ? 2 : 1;
  if (call->num_inputs != 1 || call->num_outputs != nout) {
    return fail(call, EMBER_ERR_INVALID, "%s: expects 1 input and %d outputs", name, nout);
  }
  if (attrs<A>(call).reduced_dims != 1) {
    return fail(call, EMBER_ERR_INVALID, "%s: expects exactly one trailing reduced dim", name);
  }
  if (call->outputs[kValues ? 1 : 0].dtype != EMBER_I64) {
    return fail(call, EMBER_ERR_INVALID, "%s: indices must be int64", name);
  }
  return EMBER_OK;
}

}  // namespace ember::sdk
