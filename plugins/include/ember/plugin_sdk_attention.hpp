// The kernel contract of scaled_dot_product_attention and its backward, checked once for every
// backend that implements them (the contract itself is at the top of core/ops/attention.cpp).
#pragma once

#include "ember/plugin_sdk.hpp"

namespace ember::sdk {

/** True if an attention call has the contract's shapes: q [B, L, E], k [B, S, E], v [B, S, Ev]
 *  at inputs first.. (for the backward, first = 1: dout at 0, out at 4 [B, L, Ev], lse at 5
 *  [B, L]), the optional mask [B, L, S] at mask_input (any strides), everything of q's dtype and,
 *  the mask aside, contiguous. */
inline bool attention_call_ok(const ember_kernel_call* call, int first, int mask_input) {
  const ember_tensor &q = call->inputs[first], &k = call->inputs[first + 1],
                     &v = call->inputs[first + 2];
  if (q.ndim != 3 || k.ndim != 3 || v.ndim != 3) return false;
  const int64_t B = q.sizes[0], L = q.sizes[1], S = k.sizes[1], Ev = v.sizes[2];
  if (k.sizes[0] != B || v.sizes[0] != B || k.sizes[2] != q.sizes[2] || v.sizes[1] != S) {
    return false;
  }
  if (call->num_inputs > mask_input) {
    const ember_tensor& m = call->inputs[mask_input];
    if (m.ndim != 3 || m.sizes[0] != B || m.sizes[1] != L || m.sizes[2] != S) return false;
  }
  if (first == 1) {  // the backward: dout, out [B, L, Ev] and lse [B, L]
    for (int i : {0, 4}) {
      const ember_tensor& t = call->inputs[i];
      if (t.ndim != 3 || t.sizes[0] != B || t.sizes[1] != L || t.sizes[2] != Ev) return false;
    }
    const ember_tensor& lse = call->inputs[5];
    if (lse.ndim != 2 || lse.sizes[0] != B || lse.sizes[1] != L) return false;
  }
  for (int i = 0; i < call->num_inputs; ++i) {
    if (call->inputs[i].dtype != q.dtype) return false;
    if (i != mask_input && !is_contiguous(call->inputs[i])) return false;
  }
  for (int i = 0; i < call->num_outputs; ++i) {
    if (!is_contiguous(call->outputs[i]) || call->outputs[i].dtype != q.dtype) return false;
  }
  return true;
}

}  // namespace ember::sdk
