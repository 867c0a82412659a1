// The kernel contract of the normalisation ops (batch_norm, layer_norm, group_norm and their
// backward passes), checked once for every backend that implements them (the contract itself is
// in core/ops/norm.cpp).
#pragma once

#include <cstdint>

#include "ember/plugin_sdk.hpp"

namespace ember::sdk {

/** True if every input and output of the call is dense row-major and of input 0's dtype. */
inline bool all_dense(const ember_kernel_call* call) {
  for (int32_t i = 0; i < call->num_inputs; ++i) {
    if (!is_contiguous(call->inputs[i]) || call->inputs[i].dtype != call->inputs[0].dtype) {
      return false;
    }
  }
  for (int32_t i = 0; i < call->num_outputs; ++i) {
    if (!is_contiguous(call->outputs[i]) || call->outputs[i].dtype != call->inputs[0].dtype) {
      return false;
    }
  }
  return true;
}

/** True if a batch_norm call (backward: batch_norm_backward) of at least 3 inputs has its mode's
 *  operands, x [N, C, S] among them: backward {dy, x, w, mean, var} -> {dx, dw, db}; training
 *  {x, w, b} -> {y, mean, var}; eval {x, w, b, running_mean, running_var} -> {y}. */
inline bool batch_norm_arity_ok(const ember_kernel_call* call, bool backward, bool training) {
  const bool arity_ok = backward ? call->num_inputs == 5 && call->num_outputs == 3
                                 : (training ? call->num_inputs == 3 && call->num_outputs == 3
                                             : call->num_inputs == 5 && call->num_outputs == 1);
  return arity_ok && call->inputs[backward ? 1 : 0].ndim == 3;
}

/** The rows R of a layer_norm / group_norm call (backward: inputs {dy, x, w, mean, rstd}, else
 *  {x, w, b}; three outputs; all dense) whose x holds R * K * S elements with R a multiple of
 *  the G groups (G, K, S from the attributes); -1 if the call is not such a call. */
inline int64_t norm_rows(const ember_kernel_call* call, bool backward, int64_t G, int64_t K,
                         int64_t S) {
  if (call->num_inputs != (backward ? 5 : 3) || call->num_outputs != 3 || !all_dense(call)) {
    return -1;
  }
  const int64_t n = numel(call->inputs[backward ? 1 : 0]);
  if (G <= 0 || K <= 0 || S <= 0 || n % (K * S) != 0 || (n / (K * S)) % G != 0) return -1;
  return n / (K * S);
}

}  // namespace ember::sdk
