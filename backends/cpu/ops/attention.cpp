// CPU scaled_dot_product_attention and its backward (contract in
// core/ops/attention.cpp): float32 and float64 through one tiled template,
// OpenMP over (batch row, block), the tiles' products through oneDNN's sgemm
// (float32) or a plain loop (float64). The half types never get here: the core
// widens them to float32.
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/cpu/dense_math.h"
#include "backends/cpu/ops/ops.h"
#include "ember/plugin_sdk_attention.hpp"

namespace ember::cpu {
namespace {

// Note [Attention without the score matrix]
// The scores of one batch row are an L x S matrix: 64 MiB in float32 at L = S =
// 4096, per head. The forward never holds more of it than one tile of kBlockQ
// queries by kBlockK keys per thread. It walks the key blocks of a query block
// keeping, per query row, the running maximum m and the running sum l of
// exp(score - m), and the output accumulated with weights exp(score - m); when
// a new block raises the maximum, the sum and the accumulator are rescaled by
// exp(m_old - m_new) ("online softmax", Milakov and Gimelshein 2018;
// FlashAttention). The row ends as out = acc / l and saves lse = m + log(l),
// one number per row. The backward (FlashAttention-2's) recomputes each tile's
// weights as P = exp(score - lse), needing neither the matrix nor the per-block
// maxima, and uses D_i = sum_e dout_ie out_ie for the softmax's Jacobian: dS =
// P * (dout v^T - D). dq sums over keys and dk, dv over queries, so instead of
// atomics or per-thread copies of dq it runs two passes that each own their
// output rows: one over query blocks (dq += dS k), one over key blocks (dv +=
// P^T dout, dk += dS^T q), each recomputing its tiles. Extra memory is
// therefore O(threads * tile) plus D (B * L), never O(L * S). The tile products
// are small row-major gemms (oneDNN's sgemm in float32; nested in the OpenMP
// region it runs on the calling thread). A score of -inf (masked) gives weight
// 0; a row with no key left keeps m = -inf, is never rescaled (that would be
// exp(-inf + inf)), has its tile zeroed before the product and ends with out =
// 0 and lse = -inf, which the backward skips. Causal masking stops each query
// block at its last query's key, and the dk/dv pass starts at the query block
// holding the key block's first key.
constexpr int64_t kBlockQ = 64;
constexpr int64_t kBlockK = 64;

template <typename T>
struct Problem {
  int64_t B, L, S, E, Ev;
  bool causal;
  T scale;
  const T *q, *k, *v;
  const T* mask;  // null or [B, L, S] with strides ms
  int64_t ms[3];
  /** Elements of scratch each thread uses: two score tiles, the output
   * accumulator, m and l. */
  int64_t per_thread() const { return 2 * kBlockQ * kBlockK + kBlockQ * Ev + 2 * kBlockQ; }
  /** Keys that query block [i0, i0 + bq) may see: all, or up to its last query
   * (causal). */
  int64_t key_end(int64_t i0, int64_t bq) const { return causal ? std::min(S, i0 + bq) : S; }
};

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/** x[j] = exp(x[j] - shift) for j < n; returns their sum. */
[[gnu::always_inline]] inline float exp_shifted(float* x, int64_t n, float shift) {
  // Two loops: the first vectorizes, the sum in lanes (Note [Reductions in lanes]).
  for (int64_t j = 0; j < n; ++j) x[j] = exp_approx(x[j] - shift);
  return row_sum(x, n);
}
[[gnu::always_inline]] inline double exp_shifted(double* x, int64_t n, double shift) {
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    x[j] = std::exp(x[j] - shift);
    sum += x[j];
  }
  return sum;
}

/** exp(x - shift): exp_approx for float, std::exp for double. */
[[gnu::always_inline]] inline float exp_shifted_one(float x, float shift) {
  return exp_approx(x - shift);
}
[[gnu::always_inline]] inline double exp_shifted_one(double x, double shift) {
  return std::exp(x - shift);
}

/** Adds the mask and the causal -inf to the scaled scores of query i, keys [j0,
 * j0 + bk). */
template <typename T>
void finish_scores(const Problem<T>& p, int64_t b, int64_t i, int64_t j0, int64_t bk, T* s) {
  if (p.mask != nullptr) {
    const T* mrow = p.mask + b * p.ms[0] + i * p.ms[1] + j0 * p.ms[2];
    for (int64_t jj = 0; jj < bk; ++jj) s[jj] += mrow[jj * p.ms[2]];
  }
  if (p.causal) {
    for (int64_t jj = std::max<int64_t>(0, i - j0 + 1); jj < bk; ++jj) s[jj] = T(kNegInf);
  }
}

/** Row max of a block of scores; float in lanes (Note [Reductions in lanes]). */
[[gnu::always_inline]] inline float block_max_of(const float* x, int64_t n) {
  return row_max(x, n);
}
[[gnu::always_inline]] inline double block_max_of(const double* x, int64_t n) {
  double r = kNegInf;
  for (int64_t j = 0; j < n; ++j) r = std::max(r, x[j]);
  return r;
}

/** The online-softmax step of a query block over key block [j0, j0 + bk) (Note [Attention
 *  without the score matrix]): the scores s become weights exp(s - m_new), the running max m,
 *  sum l and accumulator acc are rescaled. */
template <typename T>
[[gnu::always_inline]] inline void online_softmax_rows(const Problem<T>& p, int64_t b, int64_t i0,
                                                       int64_t bq, int64_t j0, int64_t bk, T* s,
                                                       T* acc, T* m, T* l) {
  const int64_t Ev = p.Ev;
  for (int64_t ii = 0; ii < bq; ++ii) {
    T* srow = s + ii * kBlockK;
    finish_scores(p, b, i0 + ii, j0, bk, srow);
    const T m_new = std::max(m[ii], block_max_of(srow, bk));
    if (m_new == T(kNegInf)) {  // every key so far is masked: no weight, no rescaling
      std::fill(srow, srow + bk, T(0));
      continue;
    }
    const T alpha = std::exp(m[ii] - m_new);
    const T sum = exp_shifted(srow, bk, m_new);
    l[ii] = l[ii] * alpha + sum;
    m[ii] = m_new;
    if (alpha != T(1)) {
      T* a = acc + ii * Ev;
      for (int64_t c = 0; c < Ev; ++c) a[c] *= alpha;
    }
  }
}

/** The weights P = exp(s - lse) of a tile into s and dS = P * (ds - D) into ds (ds holding
 *  dout v^T on entry), rows without a key zeroed. */
template <typename T>
[[gnu::always_inline]] inline void weights_and_dscores_rows(const Problem<T>& p, int64_t b,
                                                            int64_t i0, int64_t bq, int64_t j0,
                                                            int64_t bk, const T* lse, const T* dsum,
                                                            T* s, T* ds) {
  const int64_t r0 = b * p.L + i0;
  for (int64_t ii = 0; ii < bq; ++ii) {
    T* srow = s + ii * kBlockK;
    T* dsrow = ds + ii * kBlockK;
    const T lse_i = lse[r0 + ii], d_i = dsum[r0 + ii];
    if (lse_i == T(kNegInf)) {  // no key: out is 0 whatever the inputs
      std::fill(srow, srow + bk, T(0));
      std::fill(dsrow, dsrow + bk, T(0));
      continue;
    }
    finish_scores(p, b, i0 + ii, j0, bk, srow);
    for (int64_t jj = 0; jj < bk; ++jj) srow[jj] = exp_shifted_one(srow[jj], lse_i);
    for (int64_t jj = 0; jj < bk; ++jj) dsrow[jj] = srow[jj] * (dsrow[jj] - d_i);
  }
}

// The row loops of float32 in an AVX2 copy where the CPU has it (Note [AVX2 clones of hot
// loops]); the tile products stay oneDNN's.
EMBER_CPU_AVX2 void online_softmax_avx2(const Problem<float>& p, int64_t b, int64_t i0, int64_t bq,
                                        int64_t j0, int64_t bk, float* s, float* acc, float* m,
                                        float* l) {
  online_softmax_rows(p, b, i0, bq, j0, bk, s, acc, m, l);
}
EMBER_CPU_AVX2 void weights_and_dscores_avx2(const Problem<float>& p, int64_t b, int64_t i0,
                                             int64_t bq, int64_t j0, int64_t bk, const float* lse,
                                             const float* dsum, float* s, float* ds) {
  weights_and_dscores_rows(p, b, i0, bq, j0, bk, lse, dsum, s, ds);
}

template <typename T>
void online_softmax(const Problem<T>& p, int64_t b, int64_t i0, int64_t bq, int64_t j0, int64_t bk,
                    T* s, T* acc, T* m, T* l) {
  if constexpr (std::is_same_v<T, float>) {
    if (cpu_has_avx2()) return online_softmax_avx2(p, b, i0, bq, j0, bk, s, acc, m, l);
  }
  online_softmax_rows(p, b, i0, bq, j0, bk, s, acc, m, l);
}
template <typename T>
void weights_and_dscores(const Problem<T>& p, int64_t b, int64_t i0, int64_t bq, int64_t j0,
                         int64_t bk, const T* lse, const T* dsum, T* s, T* ds) {
  if constexpr (std::is_same_v<T, float>) {
    if (cpu_has_avx2()) return weights_and_dscores_avx2(p, b, i0, bq, j0, bk, lse, dsum, s, ds);
  }
  weights_and_dscores_rows(p, b, i0, bq, j0, bk, lse, dsum, s, ds);
}

template <typename T>
void forward_block(const Problem<T>& p, int64_t b, int64_t i0, T* out, T* lse, T* scratch) {
  const int64_t bq = std::min(kBlockQ, p.L - i0), E = p.E, Ev = p.Ev;
  T* s = scratch;
  T* acc = s + 2 * kBlockQ * kBlockK;
  T* m = acc + kBlockQ * Ev;
  T* l = m + kBlockQ;
  std::fill(acc, acc + bq * Ev, T(0));
  std::fill(m, m + bq, T(kNegInf));
  std::fill(l, l + bq, T(0));
  const T* qb = p.q + (b * p.L + i0) * E;
  const T* kb = p.k + b * p.S * E;
  const T* vb = p.v + b * p.S * Ev;
  const int64_t s_end = p.key_end(i0, bq);
  for (int64_t j0 = 0; j0 < s_end; j0 += kBlockK) {
    const int64_t bk = std::min(kBlockK, s_end - j0);
    gemm('N', 'T', bq, bk, E, p.scale, qb, E, kb + j0 * E, E, T(0), s, kBlockK);
    online_softmax(p, b, i0, bq, j0, bk, s, acc, m, l);
    gemm('N', 'N', bq, Ev, bk, T(1), s, kBlockK, vb + j0 * Ev, Ev, T(1), acc, Ev);
  }
  for (int64_t ii = 0; ii < bq; ++ii) {
    T* o = out + (b * p.L + i0 + ii) * Ev;
    const T* a = acc + ii * Ev;
    if (l[ii] == T(0)) {
      std::fill(o, o + Ev, T(0));
      lse[b * p.L + i0 + ii] = T(kNegInf);
      continue;
    }
    const T inv = T(1) / l[ii];
    for (int64_t c = 0; c < Ev; ++c) o[c] = a[c] * inv;
    lse[b * p.L + i0 + ii] = m[ii] + std::log(l[ii]);
  }
}

/** The tile of queries [i0, i0 + bq) and keys [j0, j0 + bk): the weights P into
 * s and dS = P * (dout v^T - D) into ds, rows without a key zeroed. */
template <typename T>
void grad_tile(const Problem<T>& p, int64_t b, int64_t i0, int64_t bq, int64_t j0, int64_t bk,
               const T* dout, const T* lse, const T* dsum, T* s, T* ds) {
  const int64_t E = p.E, Ev = p.Ev, r0 = b * p.L + i0;
  gemm('N', 'T', bq, bk, E, p.scale, p.q + r0 * E, E, p.k + (b * p.S + j0) * E, E, T(0), s,
       kBlockK);
  gemm('N', 'T', bq, bk, Ev, T(1), dout + r0 * Ev, Ev, p.v + (b * p.S + j0) * Ev, Ev, T(0), ds,
       kBlockK);
  weights_and_dscores(p, b, i0, bq, j0, bk, lse, dsum, s, ds);
}

/** dq of query block [i0, i0 + bq): sum over the keys of dS k, times scale. */
template <typename T>
void backward_dq_block(const Problem<T>& p, int64_t b, int64_t i0, const T* dout, const T* lse,
                       const T* dsum, T* dq, T* scratch) {
  const int64_t bq = std::min(kBlockQ, p.L - i0), E = p.E;
  T* s = scratch;
  T* ds = s + kBlockQ * kBlockK;
  T* dqb = dq + (b * p.L + i0) * E;
  std::fill(dqb, dqb + bq * E, T(0));
  const int64_t s_end = p.key_end(i0, bq);
  for (int64_t j0 = 0; j0 < s_end; j0 += kBlockK) {
    const int64_t bk = std::min(kBlockK, s_end - j0);
    grad_tile(p, b, i0, bq, j0, bk, dout, lse, dsum, s, ds);
    gemm('N', 'N', bq, E, bk, p.scale, ds, kBlockK, p.k + (b * p.S + j0) * E, E, T(1), dqb, E);
  }
}

/** dk and dv of key block [j0, j0 + bk): sums over the queries that see it. */
template <typename T>
void backward_dkv_block(const Problem<T>& p, int64_t b, int64_t j0, const T* dout, const T* lse,
                        const T* dsum, T* dk, T* dv, T* scratch) {
  const int64_t bk = std::min(kBlockK, p.S - j0), E = p.E, Ev = p.Ev;
  T* s = scratch;
  T* ds = s + kBlockQ * kBlockK;
  T* dkb = dk + (b * p.S + j0) * E;
  T* dvb = dv + (b * p.S + j0) * Ev;
  std::fill(dkb, dkb + bk * E, T(0));
  std::fill(dvb, dvb + bk * Ev, T(0));
  // Causal: query i sees key j only when j <= i, so blocks of queries before j0
  // see none.
  for (int64_t i0 = p.causal ? j0 / kBlockQ * kBlockQ : 0; i0 < p.L; i0 += kBlockQ) {
    const int64_t bq = std::min(kBlockQ, p.L - i0), r0 = b * p.L + i0;
    grad_tile(p, b, i0, bq, j0, bk, dout, lse, dsum, s, ds);
    gemm('T', 'N', bk, Ev, bq, T(1), s, kBlockK, dout + r0 * Ev, Ev, T(1), dvb, Ev);
    gemm('T', 'N', bk, E, bq, p.scale, ds, kBlockK, p.q + r0 * E, E, T(1), dkb, E);
  }
}

/** dq, dk and dv of batch row b in one sweep, five products per tile (FlashAttention-2's
 *  schedule): the task owns all of row b's gradients, so nothing is recomputed for a second
 *  pass and no two tasks write the same rows (Note [Two backward schedules]). */
template <typename T>
void backward_row(const Problem<T>& p, int64_t b, const T* dout, const T* lse, const T* dsum, T* dq,
                  T* dk, T* dv, T* scratch) {
  const int64_t E = p.E, Ev = p.Ev;
  T* s = scratch;
  T* ds = s + kBlockQ * kBlockK;
  T* dqr = dq + b * p.L * E;
  T* dkr = dk + b * p.S * E;
  T* dvr = dv + b * p.S * Ev;
  std::fill(dqr, dqr + p.L * E, T(0));
  std::fill(dkr, dkr + p.S * E, T(0));
  std::fill(dvr, dvr + p.S * Ev, T(0));
  for (int64_t i0 = 0; i0 < p.L; i0 += kBlockQ) {
    const int64_t bq = std::min(kBlockQ, p.L - i0), r0 = b * p.L + i0;
    const int64_t s_end = p.key_end(i0, bq);
    for (int64_t j0 = 0; j0 < s_end; j0 += kBlockK) {
      const int64_t bk = std::min(kBlockK, s_end - j0);
      grad_tile(p, b, i0, bq, j0, bk, dout, lse, dsum, s, ds);
      gemm('N', 'N', bq, E, bk, p.scale, ds, kBlockK, p.k + (b * p.S + j0) * E, E, T(1),
           dqr + i0 * E, E);
      gemm('T', 'N', bk, Ev, bq, T(1), s, kBlockK, dout + r0 * Ev, Ev, T(1), dvr + j0 * Ev, Ev);
      gemm('T', 'N', bk, E, bq, p.scale, ds, kBlockK, p.q + r0 * E, E, T(1), dkr + j0 * E, E);
    }
  }
}

/** Runs fn(task, scratch) for every task in [0, n) over the OpenMP threads,
 * each thread with its own `per_thread` elements of one buffer allocated here
 * (before the parallel region). */
template <typename T, typename Fn>
int32_t for_tasks(const ember_kernel_call* call, const char* name, int64_t n, int64_t per_thread,
                  Fn fn) {
  const int threads =
      static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(omp_get_max_threads(), n)));
  ScratchGuard scratch{call};
  if (!scratch.alloc(sizeof(T) * static_cast<size_t>(per_thread) * threads)) {
    return sdk::fail(call, EMBER_ERR_OUT_OF_MEMORY, "%s: no memory for %d tiles", name, threads);
  }
  T* base = static_cast<T*>(scratch.ptr);
#pragma omp parallel for schedule(dynamic) num_threads(threads) if (threads > 1)
  for (int64_t t = 0; t < n; ++t) fn(t, base + omp_get_thread_num() * per_thread);
  return EMBER_OK;
}

template <typename T>
Problem<T> problem(const ember_kernel_call* call, int first, double scale, bool causal,
                   int mask_input) {
  const ember_tensor &q = call->inputs[first], &k = call->inputs[first + 1],
                     &v = call->inputs[first + 2];
  Problem<T> p{q.sizes[0],
               q.sizes[1],
               k.sizes[1],
               q.sizes[2],
               v.sizes[2],
               causal,
               static_cast<T>(scale),
               sdk::data<const T>(q),
               sdk::data<const T>(k),
               sdk::data<const T>(v),
               nullptr,
               {0, 0, 0}};
  if (call->num_inputs > mask_input) {
    const ember_tensor& m = call->inputs[mask_input];
    p.mask = sdk::data<const T>(m);
    for (int d = 0; d < 3; ++d) p.ms[d] = m.sizes[d] == 1 ? 0 : m.strides[d];
  }
  return p;
}

int32_t unsupported_dtype(const ember_kernel_call* call, const char* name, int32_t dtype) {
  return sdk::fail(call, EMBER_ERR_UNSUPPORTED,
                   "%s: dtype %s is not supported (the core computes the half "
                   "types in float32)",
                   name, sdk::dtype_name(dtype));
}

template <typename T>
int32_t forward(const ember_kernel_call* call) {
  const auto a = sdk::attrs<attrs::scaled_dot_product_attention>(call);
  const Problem<T> p = problem<T>(call, 0, a.scale, a.is_causal != 0, 3);
  T* out = sdk::data<T>(call->outputs[0]);
  T* lse = sdk::data<T>(call->outputs[1]);
  const int64_t nqb = (p.L + kBlockQ - 1) / kBlockQ;
  return for_tasks<T>(call, "scaled_dot_product_attention", p.B * nqb, p.per_thread(),
                      [&](int64_t t, T* scratch) {
                        forward_block(p, t / nqb, (t % nqb) * kBlockQ, out, lse, scratch);
                      });
}

template <typename T>
int32_t backward(const ember_kernel_call* call) {
  const char* name = "scaled_dot_product_attention_backward";
  const auto a = sdk::attrs<attrs::scaled_dot_product_attention_backward>(call);
  const Problem<T> p = problem<T>(call, 1, a.scale, a.is_causal != 0, 6);
  const T* dout = sdk::data<const T>(call->inputs[0]);
  const T* out = sdk::data<const T>(call->inputs[4]);
  const T* lse = sdk::data<const T>(call->inputs[5]);
  T* dq = sdk::data<T>(call->outputs[0]);
  T* dk = sdk::data<T>(call->outputs[1]);
  T* dv = sdk::data<T>(call->outputs[2]);
  const int64_t rows = p.B * p.L;
  ScratchGuard d_buf{call};
  if (!d_buf.alloc(sizeof(T) * static_cast<size_t>(rows))) {
    return sdk::fail(call, EMBER_ERR_OUT_OF_MEMORY, "%s: no memory for D", name);
  }
  T* dsum = static_cast<T*>(d_buf.ptr);
#pragma omp parallel for schedule(static) if (rows * p.Ev > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    T acc = 0;
    for (int64_t c = 0; c < p.Ev; ++c) acc += dout[r * p.Ev + c] * out[r * p.Ev + c];
    dsum[r] = acc;
  }
  // Note [Two backward schedules]
  // With enough batch rows to share out evenly, each thread takes whole rows and computes dq,
  // dk and dv together (five tile products). With few rows (one long sequence on many
  // threads), the work is split by query blocks for dq and by key blocks for dk and dv, each
  // pass owning its output rows at the price of recomputing the tiles (seven products).
  const int64_t threads = omp_get_max_threads();
  if (p.B % threads == 0 || p.B >= 4 * threads) {
    return for_tasks<T>(call, name, p.B, p.per_thread(), [&](int64_t b, T* s) {
      backward_row(p, b, dout, lse, dsum, dq, dk, dv, s);
    });
  }
  const int64_t nqb = (p.L + kBlockQ - 1) / kBlockQ, nkb = (p.S + kBlockK - 1) / kBlockK;
  const int32_t status = for_tasks<T>(call, name, p.B * nqb, p.per_thread(), [&](int64_t t, T* s) {
    backward_dq_block(p, t / nqb, (t % nqb) * kBlockQ, dout, lse, dsum, dq, s);
  });
  if (status != EMBER_OK) return status;
  return for_tasks<T>(call, name, p.B * nkb, p.per_thread(), [&](int64_t t, T* s) {
    backward_dkv_block(p, t / nkb, (t % nkb) * kBlockK, dout, lse, dsum, dk, dv, s);
  });
}

}  // namespace

EMBER_KERNEL(scaled_dot_product_attention) {
  const char* name = "scaled_dot_product_attention";
  if (call->num_outputs != 2 || !sdk::attention_call_ok(call, 0, 3)) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: bad arguments", name);
  }
  switch (call->inputs[0].dtype) {
    case EMBER_F32:
      return forward<float>(call);
    case EMBER_F64:
      return forward<double>(call);
    default:
      return unsupported_dtype(call, name, call->inputs[0].dtype);
  }
}

EMBER_KERNEL(scaled_dot_product_attention_backward) {
  const char* name = "scaled_dot_product_attention_backward";
  if (call->num_outputs != 3 || !sdk::attention_call_ok(call, 1, 6)) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: bad arguments", name);
  }
  switch (call->inputs[1].dtype) {
    case EMBER_F32:
      return backward<float>(call);
    case EMBER_F64:
      return backward<double>(call);
    default:
      return unsupported_dtype(call, name, call->inputs[1].dtype);
  }
}

}  // namespace ember::cpu
