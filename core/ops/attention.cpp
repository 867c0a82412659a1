// scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal, scale), PyTorch's semantics:
//   scores = q k^T * scale, plus a float mask, -inf where a bool mask is false or (causal) where
//   key j > query i; weights = softmax(scores) over the keys, a row whose every score is -inf
//   giving zero weights (PyTorch's fused kernels and its math path since 2.5 do the same);
//   dropout on the weights; out = weights v. Batch dims of q, k, v and the mask broadcast.
//
// Kernel contract ("scaled_dot_product_attention"): inputs {q [B, L, E], k [B, S, E],
// v [B, S, Ev]}, contiguous, of one dtype (float32 or float64: the core widens the half types),
// and optionally {mask [B, L, S]} of that dtype with any strides (0 along broadcast dims), added
// to the scaled scores; outputs {out [B, L, Ev], lse [B, L]}, contiguous, lse[b, i] =
// log(sum_j exp(score_ij)) (-inf for a row without a key, whose out is 0). ints {is_causal},
// floats {scale}. B * L * Ev > 0; S and E may be 0.
// "scaled_dot_product_attention_backward": inputs {dout, q, k, v, out, lse} (+ {mask}), the
// forward's tensors, contiguous but the mask; outputs {dq, dk, dv} of q's, k's and v's shapes,
// every element written. With P = exp(scores - lse) and D_i = sum_e dout_ie out_ie:
//   dv = P^T dout,  dS = P * (dout v^T - D),  dq = dS k * scale,  dk = dS^T q * scale.
// Note [Attention without the score matrix] in backends/cpu/ops/attention.cpp says how the CPU
// kernels keep their memory O(L + S) per batch row.
#include "ember/ops/attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include "core/dispatch/call.h"
#include "ember/amp/autocast.h"
#include "ember/autograd/record.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/linalg.h"
#include "ember/ops/nn.h"
#include "ember/ops/reduce.h"

namespace ember {
namespace {

using autograd::LambdaNode;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

constexpr const char* kName = "scaled_dot_product_attention";
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/** The problem's sizes: the broadcast batch dims, their product B, and L, S, E, Ev. */
struct Dims {
  std::vector<int64_t> batch;
  int64_t B = 1, L = 0, S = 0, E = 0, Ev = 0;
  /** batch + {rows, cols}. */
  std::vector<int64_t> with(int64_t rows, int64_t cols) const {
    std::vector<int64_t> s = batch;
    s.push_back(rows);
    s.push_back(cols);
    return s;
  }
};

std::vector<int64_t> batch_of(const Tensor& t) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end() - 2);
}

/** `t` [..., rows, cols] in dtype ct, broadcast to the batch and flattened: [B, rows, cols],
 *  contiguous (a view when it already is). */
Tensor flat(const Tensor& t, const Dims& d, int64_t rows, int64_t cols, DType ct) {
  return t.to(ct).expand(d.with(rows, cols)).reshape({d.B, rows, cols}).contiguous();
}

/** The mask as scores to add, in dtype ct: a bool mask becomes 0 (keep) and -inf. */
Tensor additive_mask(const Tensor& mask, DType ct) {
  if (mask.dtype() != DType::Bool) return mask.to(ct);
  return where(mask, zeros({}, {ct, mask.device()}), kNegInf);
}

/** softmax over the last dim, rows of only -inf giving zeros (not NaN); differentiable. */
Tensor safe_softmax(const Tensor& s) {
  const Tensor m = amax(s, {s.dim() - 1}, /*keepdim=*/true).detach();
  const Tensor e = exp(sub(s, where(eq(m, kNegInf), zeros({}, {m.dtype(), m.device()}), m)));
  const Tensor z = sum(e, {s.dim() - 1}, /*keepdim=*/true);
  return div(e, where(eq(z, 0.0), ones({}, {z.dtype(), z.device()}), z));
}

/** The attention weights from public ops: softmax(q k^T * scale + mask) with the causal
 *  pattern, for q [..., L, E] and k [..., S, E] in one floating dtype. */
Tensor weights_composite(const Tensor& q, const Tensor& k, const Tensor& mask_add, bool causal,
                         double scale) {
  Tensor s = mul(matmul(q, k.transpose(-2, -1)), scale);
  if (mask_add.defined()) s = add(s, mask_add);
  if (causal) {
    const int64_t L = q.size(-2), S = k.size(-2);
    const TensorOptions io{DType::Int64, q.device()};
    const Tensor keep = ge(arange(L, io).view({L, 1}), arange(S, io).view({1, S}));
    s = where(keep, s, kNegInf);
  }
  return safe_softmax(s);
}

/** The gradients {dq, dk, dv} ([B, ...]) from public ops, so that they are differentiable
 *  again (Note [Backward of the normalisation layers] makes the same choice). */
Grads backward_formula(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& mask_add, bool causal, double scale) {
  const Tensor p = weights_composite(q, k, mask_add, causal, scale);
  const Tensor dv = matmul(p.transpose(1, 2), dout);
  const Tensor dp = matmul(dout, v.transpose(1, 2));
  const Tensor ds = mul(p, sub(dp, sum(mul(dp, p), {2}, /*keepdim=*/true)));
  return {mul(matmul(ds, k), scale), mul(matmul(ds.transpose(1, 2), q), scale), dv};
}

/** A gradient [B, rows, cols] back to the input `t` it belongs to (batch summed, dtype). */
Tensor grad_to(const Tensor& g, const Dims& d, int64_t rows, int64_t cols, const Tensor& t) {
  return autograd::sum_to(g.reshape(d.with(rows, cols)), t.sizes()).to(t.dtype());
}

Tensor fused(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
             double scale, const Dims& d, DType ct) {
  const Device dev = q.device();
  auto prepare_mask = [&d, ct](const Tensor& m) {
    // A view when the broadcast batch dims merge; otherwise a copy of [B, L, S].
    return m.defined() ? additive_mask(m, ct).expand(d.with(d.L, d.S)).reshape({d.B, d.L, d.S})
                       : Tensor();
  };
  const attrs::scaled_dot_product_attention a{.is_causal = causal ? 1 : 0, .scale = scale};
  Tensor out, lse, mask_b;
  {
    autograd::NoGradGuard below_autograd;
    const Tensor qb = flat(q, d, d.L, d.E, ct), kb = flat(k, d, d.S, d.E, ct),
                 vb = flat(v, d, d.S, d.Ev, ct);
    mask_b = prepare_mask(mask);
    out = empty({d.B, d.L, d.Ev}, {ct, dev});
    lse = empty({d.B, d.L}, {ct, dev});
    if (mask_b.defined()) {
      run_kernel(a, ct, {&qb, &kb, &vb, &mask_b}, {&out, &lse});
    } else {
      run_kernel(a, ct, {&qb, &kb, &vb}, {&out, &lse});
    }
  }
  Tensor result = out.view(d.with(d.L, d.Ev)).to(q.dtype());
  if (!autograd::any_requires_grad({&q, &k, &v})) return result;
  auto node = autograd::record(
      "ScaledDotProductAttentionBackward", kName, {&q, &k, &v}, {&result},
      [sq = SavedTensor(q), sk = SavedTensor(k), sv = SavedTensor(v), lse, mask_b, causal, scale, d,
       ct, a](const Grads& g, const LambdaNode& self) {
        const Tensor q = self.unpack(sq), k = self.unpack(sk), v = self.unpack(sv);
        const Tensor qb = flat(q, d, d.L, d.E, ct), kb = flat(k, d, d.S, d.E, ct),
                     vb = flat(v, d, d.S, d.Ev, ct);
        const Tensor dout = g[0].to(ct).reshape({d.B, d.L, d.Ev}).contiguous();
        Grads r;
        if (autograd::is_grad_enabled()) {
          r = backward_formula(dout, qb, kb, vb, mask_b, causal, scale);
        } else {
          const Tensor o = self.saved_output(0).to(ct).reshape({d.B, d.L, d.Ev}).contiguous();
          r = {empty({d.B, d.L, d.E}, {ct, q.device()}), empty({d.B, d.S, d.E}, {ct, q.device()}),
               empty({d.B, d.S, d.Ev}, {ct, q.device()})};
          const attrs::scaled_dot_product_attention_backward ab{.is_causal = a.is_causal,
                                                                .scale = a.scale};
          if (mask_b.defined()) {
            run_kernel(ab, ct, {&dout, &qb, &kb, &vb, &o, &lse, &mask_b}, {&r[0], &r[1], &r[2]});
          } else {
            run_kernel(ab, ct, {&dout, &qb, &kb, &vb, &o, &lse}, {&r[0], &r[1], &r[2]});
          }
        }
        return Grads{grad_to(r[0], d, d.L, d.E, q), grad_to(r[1], d, d.S, d.E, k),
                     grad_to(r[2], d, d.S, d.Ev, v)};
      });
  node->save_output(result);
  return result;
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, Generator* gen) {
  // Under autocast, in the lower type as PyTorch lists it (a bool mask stays bool).
  if (q.defined()) {
    EMBER_AUTOCAST(Lower, scaled_dot_product_attention, q, q, k, v, attn_mask, dropout_p, is_causal,
                   scale, gen);
  }
  EMBER_CHECK_TYPE(q.defined() && k.defined() && v.defined(),
                   "[{}] undefined tensor argument: query, key and value are required", kName);
  EMBER_CHECK_TYPE(is_floating(q.dtype()),
                   "[{}] query, key and value must be floating: got dtype {} (convert with "
                   ".to(ember::f32))",
                   kName, q.dtype());
  EMBER_CHECK_TYPE(k.dtype() == q.dtype() && v.dtype() == q.dtype(),
                   "[{}] query, key and value must have one dtype: got {}, {} and {} (convert "
                   "them with .to())",
                   kName, q.dtype(), k.dtype(), v.dtype());
  if (attn_mask.defined()) {
    common_device({&q, &k, &v, &attn_mask}, kName);
  } else {
    common_device({&q, &k, &v}, kName);
  }
  EMBER_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2,
              "[{}] query, key and value need at least 2 dims ([..., L, E], [..., S, E], "
              "[..., S, Ev]): got shapes {}, {} and {}",
              kName, shape_str(q.sizes()), shape_str(k.sizes()), shape_str(v.sizes()));
  Dims d;
  d.L = q.size(-2);
  d.E = q.size(-1);
  d.S = k.size(-2);
  d.Ev = v.size(-1);
  EMBER_CHECK(k.size(-1) == d.E,
              "[{}] query and key must have the same embedding size: query has E={} but key "
              "has E={} (shapes {} and {})",
              kName, d.E, k.size(-1), shape_str(q.sizes()), shape_str(k.sizes()));
  EMBER_CHECK(v.size(-2) == d.S,
              "[{}] key and value must have the same sequence length: key has S={} but value "
              "has S={} (shapes {} and {})",
              kName, d.S, v.size(-2), shape_str(k.sizes()), shape_str(v.sizes()));
  const Shape batch =
      broadcast_shapes(broadcast_shapes(batch_of(q), batch_of(k), kName), batch_of(v), kName);
  d.batch.assign(batch.begin(), batch.end());
  for (int64_t s : d.batch) d.B *= s;
  EMBER_CHECK(dropout_p >= 0.0 && dropout_p <= 1.0, "[{}] dropout_p must be in [0, 1]: got {}",
              kName, dropout_p);
  if (attn_mask.defined()) {
    EMBER_CHECK(!is_causal,
                "[{}] attn_mask and is_causal cannot both be set: got a mask of shape {} and "
                "is_causal=true (build the causal pattern into the mask)",
                kName, shape_str(attn_mask.sizes()));
    EMBER_CHECK_TYPE(attn_mask.dtype() == DType::Bool || attn_mask.dtype() == q.dtype(),
                     "[{}] attn_mask must be bool or of the query's dtype {}: got {}", kName,
                     q.dtype(), attn_mask.dtype());
    const std::vector<int64_t> scores = d.with(d.L, d.S);
    bool fits = attn_mask.dim() <= static_cast<int64_t>(scores.size());
    for (int64_t i = 1; fits && i <= attn_mask.dim(); ++i) {
      const int64_t m = attn_mask.size(-i), s = scores[scores.size() - static_cast<size_t>(i)];
      fits = m == s || m == 1;
    }
    EMBER_CHECK(fits,
                "[{}] attn_mask of shape {} does not broadcast to the scores' shape {} "
                "([..., L, S])",
                kName, shape_str(attn_mask.sizes()), shape_str(scores));
  }
  const double sc = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(d.E));
  // The half types compute in float32 (their sums and exponentials need its range).
  const DType ct =
      q.dtype() == DType::Float16 || q.dtype() == DType::BFloat16 ? DType::Float32 : q.dtype();
  if (d.S == 0) {
    // No key: every row's weights are empty and the output is 0 (gradients 0 or empty).
    return matmul(zeros(d.with(d.L, 0), {q.dtype(), q.device()}), v);
  }
  const bool empty_out = d.B * d.L * d.Ev == 0;
  // Note [Attention's composite path]
  // The fused kernels cover dropout_p == 0 and a mask that needs no gradient. Dropout draws a
  // mask of the weights' shape, and a mask's gradient is the score gradient itself, so both
  // materialize [..., L, S] anyway: they run as matmul, softmax, dropout, matmul (whose autograd
  // gives every gradient), as does an empty output.
  if (dropout_p > 0.0 || autograd::needs_grad(attn_mask) || empty_out) {
    const Tensor mask_add = attn_mask.defined() ? additive_mask(attn_mask, ct) : Tensor();
    Tensor w = weights_composite(q.to(ct), k.to(ct), mask_add, is_causal, sc);
    if (dropout_p > 0.0) w = dropout(w, dropout_p, /*training=*/true, gen);
    return matmul(w, v.to(ct)).to(q.dtype());
  }
  return fused(q, k, v, attn_mask, is_causal, sc, d, ct);
}

}  // namespace ember
