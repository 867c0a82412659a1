// CUDA scaled_dot_product_attention and its backward (contract in core/ops/attention.cpp), own
// kernels for float32 and float64 (the core widens the half types). The same scheme as the CPU's
// (Note [Attention without the score matrix] in backends/cpu/ops/attention.cpp): a block of
// kWarps warps takes kWarps query rows of one batch row (one row per warp) and walks the keys
// in tiles staged in shared memory, one key per lane, keeping the row's running max and sum
// (online softmax) and its output accumulator in shared memory; nothing of size L x S is ever
// allocated. The backward runs two kernels that own their outputs: one warp per query row for
// dq, one warp per key row for dk and dv, each recomputing the weights from the saved
// logsumexp. A tile holds at most 32 keys (one per lane) and shrinks until it fits in 48 KiB
// of shared memory with the row's E and Ev.
#include <cmath>

#include "backends/cuda/ops/common.cuh"
#include "backends/cuda/ops/ops.h"
#include "ember/plugin_sdk_attention.hpp"

namespace ember::cuda {
namespace {

using kern::prepare;

constexpr int kWarps = 4;
constexpr int kLanes = 32;
constexpr size_t kSharedBytes = 48 * 1024;

template <typename T>
struct Geom {
  int64_t B, L, S, E, Ev;
  int causal;
  T scale;
  const T* mask;  // null or [B, L, S] with strides ms
  int64_t ms0, ms1, ms2;
  int tile;  // keys (or queries) per shared-memory tile, <= 32
};

template <typename T>
__device__ __forceinline__ T neg_inf() {
  return -static_cast<T>(INFINITY);
}

template <typename T>
__device__ __forceinline__ T warp_max(T v) {
  for (int o = kLanes / 2; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int o = kLanes / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float exp_of(float x) {
  return expf(x);
}
__device__ __forceinline__ double exp_of(double x) {
  return ::exp(x);
}
__device__ __forceinline__ float log_of(float x) {
  return logf(x);
}
__device__ __forceinline__ double log_of(double x) {
  return ::log(x);
}

/** The score of query i (row qi) against key j (row kj): scale * q.k + mask, -inf if causal
 *  hides it. */
template <typename T>
__device__ T score(const Geom<T>& g, const T* qi, const T* kj, int64_t b, int64_t i, int64_t j) {
  T dot = 0;
  for (int64_t e = 0; e < g.E; ++e) dot += qi[e] * kj[e];
  T x = dot * g.scale;
  if (g.mask != nullptr) x += g.mask[b * g.ms0 + i * g.ms1 + j * g.ms2];
  if (g.causal && j > i) x = neg_inf<T>();
  return x;
}

/** Copies rows [r0, r0 + n) of a [*, cols] matrix into shared memory, the whole block helping. */
template <typename T>
__device__ void stage(const T* src, int64_t r0, int64_t n, int64_t cols, T* dst) {
  for (int64_t x = threadIdx.x; x < n * cols; x += blockDim.x) dst[x] = src[r0 * cols + x];
}

// Forward: grid (ceil(L / kWarps), B); shared: K tile, V tile, accumulators, weights.
template <typename T>
__global__ void forward_kernel(Geom<T> g, const T* q, const T* k, const T* v, T* out, T* lse) {
  extern __shared__ unsigned char smem_raw[];
  T* ks = reinterpret_cast<T*>(smem_raw);
  T* vs = ks + g.tile * g.E;
  T* acc_all = vs + g.tile * g.Ev;
  T* p_all = acc_all + kWarps * g.Ev;
  const int warp = static_cast<int>(threadIdx.x) / kLanes, lane = threadIdx.x % kLanes;
  const int64_t b = blockIdx.y, first = static_cast<int64_t>(blockIdx.x) * kWarps;
  const int64_t i = first + warp;
  const bool active = i < g.L;
  T* acc = acc_all + warp * g.Ev;
  T* pw = p_all + warp * kLanes;
  for (int64_t c = lane; c < g.Ev; c += kLanes) acc[c] = 0;
  T m = neg_inf<T>(), l = 0;
  const T* qi = q + (b * g.L + (active ? i : 0)) * g.E;
  const int64_t last = min(g.L, first + kWarps) - 1;
  const int64_t s_end = g.causal ? min(g.S, last + 1) : g.S;
  for (int64_t j0 = 0; j0 < s_end; j0 += g.tile) {
    const int64_t bk = min(static_cast<int64_t>(g.tile), s_end - j0);
    __syncthreads();
    stage(k + b * g.S * g.E, j0, bk, g.E, ks);
    stage(v + b * g.S * g.Ev, j0, bk, g.Ev, vs);
    __syncthreads();
    if (!active) continue;
    const T s = lane < bk ? score(g, qi, ks + lane * g.E, b, i, j0 + lane) : neg_inf<T>();
    const T m_new = max(m, warp_max(s));
    if (m_new == neg_inf<T>()) continue;  // every key so far is masked
    const T alpha = exp_of(m - m_new);
    const T p = lane < bk ? exp_of(s - m_new) : T(0);
    l = l * alpha + warp_sum(p);
    m = m_new;
    pw[lane] = p;
    __syncwarp();
    for (int64_t c = lane; c < g.Ev; c += kLanes) {
      T x = acc[c] * alpha;
      for (int64_t jj = 0; jj < bk; ++jj) x += pw[jj] * vs[jj * g.Ev + c];
      acc[c] = x;
    }
    __syncwarp();
  }
  if (!active) return;
  T* o = out + (b * g.L + i) * g.Ev;
  for (int64_t c = lane; c < g.Ev; c += kLanes) o[c] = l > 0 ? acc[c] / l : T(0);
  if (lane == 0) lse[b * g.L + i] = l > 0 ? m + log_of(l) : neg_inf<T>();
}

/** sum_c dout_ic * out_ic for row r, reduced over the warp. */
template <typename T>
__device__ T row_d(const T* dout, const T* out, int64_t r, int64_t Ev, int lane) {
  T x = 0;
  for (int64_t c = lane; c < Ev; c += kLanes) x += dout[r * Ev + c] * out[r * Ev + c];
  return warp_sum(x);
}

// dq: grid (ceil(L / kWarps), B), one warp per query row; shared: K, V tiles, dq accumulators,
// dS of the tile.
template <typename T>
__global__ void backward_dq_kernel(Geom<T> g, const T* dout, const T* q, const T* k, const T* v,
                                   const T* out, const T* lse, T* dq) {
  extern __shared__ unsigned char smem_raw[];
  T* ks = reinterpret_cast<T*>(smem_raw);
  T* vs = ks + g.tile * g.E;
  T* acc_all = vs + g.tile * g.Ev;
  T* ds_all = acc_all + kWarps * g.E;
  const int warp = static_cast<int>(threadIdx.x) / kLanes, lane = threadIdx.x % kLanes;
  const int64_t b = blockIdx.y, first = static_cast<int64_t>(blockIdx.x) * kWarps;
  const int64_t i = first + warp, r = b * g.L + i;
  const bool active = i < g.L;
  T* acc = acc_all + warp * g.E;
  T* dsw = ds_all + warp * kLanes;
  for (int64_t c = lane; c < g.E; c += kLanes) acc[c] = 0;
  const T lse_i = active ? lse[r] : neg_inf<T>();
  const T d_i = active ? row_d(dout, out, r, g.Ev, lane) : T(0);
  const T* qi = q + (active ? r : 0) * g.E;
  const T* doi = dout + (active ? r : 0) * g.Ev;
  const int64_t last = min(g.L, first + kWarps) - 1;
  const int64_t s_end = g.causal ? min(g.S, last + 1) : g.S;
  for (int64_t j0 = 0; j0 < s_end; j0 += g.tile) {
    const int64_t bk = min(static_cast<int64_t>(g.tile), s_end - j0);
    __syncthreads();
    stage(k + b * g.S * g.E, j0, bk, g.E, ks);
    stage(v + b * g.S * g.Ev, j0, bk, g.Ev, vs);
    __syncthreads();
    if (!active || lse_i == neg_inf<T>()) continue;
    T ds = 0;
    if (lane < bk) {
      const T p = exp_of(score(g, qi, ks + lane * g.E, b, i, j0 + lane) - lse_i);
      T dp = 0;
      for (int64_t c = 0; c < g.Ev; ++c) dp += doi[c] * vs[lane * g.Ev + c];
      ds = p * (dp - d_i);
    }
    dsw[lane] = ds;
    __syncwarp();
    for (int64_t c = lane; c < g.E; c += kLanes) {
      T x = acc[c];
      for (int64_t jj = 0; jj < bk; ++jj) x += dsw[jj] * ks[jj * g.E + c];
      acc[c] = x;
    }
    __syncwarp();
  }
  if (!active) return;
  for (int64_t c = lane; c < g.E; c += kLanes) dq[r * g.E + c] = acc[c] * g.scale;
}

// dk, dv: grid (ceil(S / kWarps), B), one warp per key row; shared: Q, dout tiles, the tile's
// lse and D, dk and dv accumulators, P and dS of the tile.
template <typename T>
__global__ void backward_dkv_kernel(Geom<T> g, const T* dout, const T* q, const T* k, const T* v,
                                    const T* out, const T* lse, T* dk, T* dv) {
  extern __shared__ unsigned char smem_raw[];
  T* qs = reinterpret_cast<T*>(smem_raw);
  T* dos = qs + g.tile * g.E;
  T* lse_s = dos + g.tile * g.Ev;
  T* d_s = lse_s + g.tile;
  T* dk_all = d_s + g.tile;
  T* dv_all = dk_all + kWarps * g.E;
  T* p_all = dv_all + kWarps * g.Ev;
  T* ds_all = p_all + kWarps * kLanes;
  const int warp = static_cast<int>(threadIdx.x) / kLanes, lane = threadIdx.x % kLanes;
  const int64_t b = blockIdx.y, first = static_cast<int64_t>(blockIdx.x) * kWarps;
  const int64_t j = first + warp;
  const bool active = j < g.S;
  T* dka = dk_all + warp * g.E;
  T* dva = dv_all + warp * g.Ev;
  T* pw = p_all + warp * kLanes;
  T* dsw = ds_all + warp * kLanes;
  for (int64_t c = lane; c < g.E; c += kLanes) dka[c] = 0;
  for (int64_t c = lane; c < g.Ev; c += kLanes) dva[c] = 0;
  const T* kj = k + (b * g.S + (active ? j : 0)) * g.E;
  const T* vj = v + (b * g.S + (active ? j : 0)) * g.Ev;
  // Causal: query i sees key j only when j <= i, so queries before the block's first key see
  // none of its keys.
  for (int64_t i0 = g.causal ? first : 0; i0 < g.L; i0 += g.tile) {
    const int64_t bq = min(static_cast<int64_t>(g.tile), g.L - i0);
    __syncthreads();
    stage(q + b * g.L * g.E, i0, bq, g.E, qs);
    stage(dout + b * g.L * g.Ev, i0, bq, g.Ev, dos);
    for (int64_t ii = warp; ii < bq; ii += kWarps) {
      const T d = row_d(dout, out, b * g.L + i0 + ii, g.Ev, lane);
      if (lane == 0) {
        d_s[ii] = d;
        lse_s[ii] = lse[b * g.L + i0 + ii];
      }
    }
    __syncthreads();
    if (!active) continue;
    T p = 0, ds = 0;
    if (lane < bq && lse_s[lane] != neg_inf<T>()) {
      const int64_t i = i0 + lane;
      p = exp_of(score(g, qs + lane * g.E, kj, b, i, j) - lse_s[lane]);
      T dp = 0;
      for (int64_t c = 0; c < g.Ev; ++c) dp += dos[lane * g.Ev + c] * vj[c];
      ds = p * (dp - d_s[lane]);
    }
    pw[lane] = p;
    dsw[lane] = ds;
    __syncwarp();
    for (int64_t c = lane; c < g.Ev; c += kLanes) {
      T x = dva[c];
      for (int64_t ii = 0; ii < bq; ++ii) x += pw[ii] * dos[ii * g.Ev + c];
      dva[c] = x;
    }
    for (int64_t c = lane; c < g.E; c += kLanes) {
      T x = dka[c];
      for (int64_t ii = 0; ii < bq; ++ii) x += dsw[ii] * qs[ii * g.E + c];
      dka[c] = x;
    }
    __syncwarp();
  }
  if (!active) return;
  for (int64_t c = lane; c < g.E; c += kLanes) dk[(b * g.S + j) * g.E + c] = dka[c] * g.scale;
  for (int64_t c = lane; c < g.Ev; c += kLanes) dv[(b * g.S + j) * g.Ev + c] = dva[c];
}

/** Shared bytes of each kernel for a tile of t rows. */
template <typename T>
size_t shared_forward(const Geom<T>& g, int64_t t) {
  return sizeof(T) * static_cast<size_t>(t * (g.E + g.Ev) + kWarps * g.Ev + kWarps * kLanes);
}
template <typename T>
size_t shared_dq(const Geom<T>& g, int64_t t) {
  return sizeof(T) * static_cast<size_t>(t * (g.E + g.Ev) + kWarps * g.E + kWarps * kLanes);
}
template <typename T>
size_t shared_dkv(const Geom<T>& g, int64_t t) {
  return sizeof(T) *
         static_cast<size_t>(t * (g.E + g.Ev + 2) + kWarps * (g.E + g.Ev) + 2 * kWarps * kLanes);
}

/** The largest tile (<= 32 rows) whose shared memory fits every kernel; 0 if none does. */
template <typename T>
int pick_tile(const Geom<T>& g) {
  for (int t = kLanes; t >= 1; t /= 2) {
    if (shared_forward(g, t) <= kSharedBytes && shared_dq(g, t) <= kSharedBytes &&
        shared_dkv(g, t) <= kSharedBytes) {
      return t;
    }
  }
  return 0;
}

template <typename T>
Geom<T> geometry(const ember_kernel_call* call, int first, int mask_input, bool causal,
                 double scale) {
  const ember_tensor &q = call->inputs[first], &k = call->inputs[first + 1],
                     &v = call->inputs[first + 2];
  Geom<T> g{q.sizes[0],
            q.sizes[1],
            k.sizes[1],
            q.sizes[2],
            v.sizes[2],
            causal ? 1 : 0,
            static_cast<T>(scale),
            nullptr,
            0,
            0,
            0,
            0};
  if (call->num_inputs > mask_input) {
    const ember_tensor& m = call->inputs[mask_input];
    g.mask = static_cast<const T*>(m.data);
    g.ms0 = m.sizes[0] == 1 ? 0 : m.strides[0];
    g.ms1 = m.sizes[1] == 1 ? 0 : m.strides[1];
    g.ms2 = m.sizes[2] == 1 ? 0 : m.strides[2];
  }
  g.tile = pick_tile(g);
  return g;
}

template <typename T>
Status forward(const ember_kernel_call* call, cudaStream_t stream) {
  const auto a = sdk::attrs<attrs::scaled_dot_product_attention>(call);
  const Geom<T> g = geometry<T>(call, 0, 3, a.is_causal != 0, a.scale);
  if (g.tile == 0) {
    return status_error(EMBER_ERR_UNSUPPORTED,
                        "[cuda] scaled_dot_product_attention: E=%lld and Ev=%lld need more "
                        "shared memory than a block has",
                        static_cast<long long>(g.E), static_cast<long long>(g.Ev));
  }
  const dim3 grid(static_cast<unsigned>((g.L + kWarps - 1) / kWarps), static_cast<unsigned>(g.B));
  forward_kernel<T><<<grid, kWarps * kLanes, shared_forward(g, g.tile), stream>>>(
      g, static_cast<const T*>(call->inputs[0].data), static_cast<const T*>(call->inputs[1].data),
      static_cast<const T*>(call->inputs[2].data), static_cast<T*>(call->outputs[0].data),
      static_cast<T*>(call->outputs[1].data));
  return kern::launch_status("scaled_dot_product_attention");
}

template <typename T>
Status backward(const ember_kernel_call* call, cudaStream_t stream) {
  const char* name = "scaled_dot_product_attention_backward";
  const auto a = sdk::attrs<attrs::scaled_dot_product_attention_backward>(call);
  const Geom<T> g = geometry<T>(call, 1, 6, a.is_causal != 0, a.scale);
  if (g.tile == 0) {
    return status_error(EMBER_ERR_UNSUPPORTED,
                        "[cuda] %s: E=%lld and Ev=%lld need more shared memory than a block has",
                        name, static_cast<long long>(g.E), static_cast<long long>(g.Ev));
  }
  auto in = [&](int i) { return static_cast<const T*>(call->inputs[i].data); };
  auto out = [&](int i) { return static_cast<T*>(call->outputs[i].data); };
  const dim3 grid_q(static_cast<unsigned>((g.L + kWarps - 1) / kWarps), static_cast<unsigned>(g.B));
  backward_dq_kernel<T><<<grid_q, kWarps * kLanes, shared_dq(g, g.tile), stream>>>(
      g, in(0), in(1), in(2), in(3), in(4), in(5), out(0));
  Status s = kern::launch_status(name);
  if (!s.ok()) return s;
  if (g.S == 0) return {};
  const dim3 grid_k(static_cast<unsigned>((g.S + kWarps - 1) / kWarps), static_cast<unsigned>(g.B));
  backward_dkv_kernel<T><<<grid_k, kWarps * kLanes, shared_dkv(g, g.tile), stream>>>(
      g, in(0), in(1), in(2), in(3), in(4), in(5), out(1), out(2));
  return kern::launch_status(name);
}

template <bool kBackward>
int32_t run(const ember_kernel_call* call) {
  const char* name =
      kBackward ? "scaled_dot_product_attention_backward" : "scaled_dot_product_attention";
  const int first = kBackward ? 1 : 0;
  if (call->num_outputs != (kBackward ? 3 : 2) ||
      !sdk::attention_call_ok(call, first, kBackward ? 6 : 3)) {
    return write_status(status_error(EMBER_ERR_INVALID, "[cuda] %s: bad arguments", name), call);
  }
  const ember_tensor& q = call->inputs[first];
  if (q.sizes[0] == 0 || q.sizes[1] == 0) return EMBER_OK;
  cudaStream_t stream = nullptr;
  Status s = prepare(call, &stream);
  if (!s.ok()) return write_status(s, call);
  switch (q.dtype) {
    case EMBER_F32:
      s = kBackward ? backward<float>(call, stream) : forward<float>(call, stream);
      break;
    case EMBER_F64:
      s = kBackward ? backward<double>(call, stream) : forward<double>(call, stream);
      break;
    default:
      s = status_error(EMBER_ERR_UNSUPPORTED,
                       "[cuda] %s: dtype %s is not supported (the core computes the half types "
                       "in float32)",
                       name, sdk::dtype_name(q.dtype));
  }
  return write_status(s, call);
}

}  // namespace

int32_t scaled_dot_product_attention(const ember_kernel_call* call) {
  return run<false>(call);
}
int32_t scaled_dot_product_attention_backward(const ember_kernel_call* call) {
  return run<true>(call);
}

}  // namespace ember::cuda
