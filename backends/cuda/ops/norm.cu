// CUDA normalisation kernels: batch_norm (statistics per channel of [N, C, S]) and the row norms
// layer_norm / group_norm (statistics per row of [R, K * S]), forward and backward (contract
// in core/ops/norm.cpp), computing as the CPU plugin's loops (backends/cpu/ops/norm.cpp).
//
// Note [CUDA norm kernels]
// One block of kThreads threads per channel (batch_norm) or per row (row norms): two passes
// for the statistics (the mean, then the squared deviations, as the CPU, so a large mean does
// not cancel), each thread accumulating in double and the block adding the per-warp partials
// in a fixed order (deterministic run to run). The affine outputs use the CPU's formulas in
// the compute type (float for f16/bf16/f32, double for f64) with explicitly rounded multiply
// and add (`mul_rn`, `add_rn`): nvcc would otherwise contract them into an FMA the CPU does
// not use. The statistics are written in x's dtype (the CPU's mean/var/invstd outputs) and
// the backward kernels read them back from there, as the CPU does. Row-norm parameter
// gradients (dweight, dbias) sum over every row sharing the parameter: one block per
// parameter, a separate launch. Running statistics of training batch_norm are updated by the
// core from the mean/var outputs. batch_norm tries cuDNN first (cudnn_ops.cpp, Note [Batch
// norm through cuDNN]); these kernels run when it declines.
#include <cstdint>
#include <type_traits>

#include "backends/cuda/ops/common.cuh"
#include "backends/cuda/ops/cudnn_ops.h"
#include "backends/cuda/ops/ops.h"
#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_norm.hpp"

namespace ember::cuda {
namespace {

using namespace kern;  // NOLINT: the shared kernel helpers

template <typename C>
__device__ __forceinline__ C mul_rn(C a, C b) {
  if constexpr (std::is_same_v<C, float>)
    return __fmul_rn(a, b);
  else
    return __dmul_rn(a, b);
}
template <typename C>
__device__ __forceinline__ C add_rn(C a, C b) {
  if constexpr (std::is_same_v<C, float>)
    return __fadd_rn(a, b);
  else
    return __dadd_rn(a, b);
}
template <typename C>
__device__ __forceinline__ C sub_rn(C a, C b) {
  if constexpr (std::is_same_v<C, float>)
    return __fsub_rn(a, b);
  else
    return __dsub_rn(a, b);
}

template <typename T>
__device__ __forceinline__ double wd(T v) {
  return static_cast<double>(widen(v));
}

// Sums v[0..N) over the block (blockDim.x a multiple of 32, at most 1024); every thread gets
// the totals. Partials are added in warp order, so the result is the same on every run.
template <int N>
__device__ __forceinline__ void block_sum(double* v) {
  __shared__ double part[N][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int k = 0; k < N; ++k) {
    for (int off = 16; off > 0; off >>= 1) v[k] += __shfl_down_sync(0xffffffffu, v[k], off);
  }
  __syncthreads();  // readers of a previous call are done with `part`
  if (lane == 0) {
    for (int k = 0; k < N; ++k) part[k][warp] = v[k];
  }
  __syncthreads();
  const int warps = static_cast<int>(blockDim.x >> 5);
  for (int k = 0; k < N; ++k) {
    double t = 0;
    for (int w = 0; w < warps; ++w) t += part[k][w];
    v[k] = t;
  }
}

// ---- batch_norm ---------------------------------------------------------------------------

struct BnGeom {
  int64_t n, c, s;
  double eps;
};

// Element e of channel c, e in [0, N * S).
__device__ __forceinline__ int64_t bn_at(const BnGeom& g, int64_t c, int64_t e) {
  return ((e / g.s) * g.c + c) * g.s + e % g.s;
}

template <typename T>
__global__ void bn_train_kernel(BnGeom g, const T* x, const T* w, const T* b, T* y, T* mean,
                                T* var) {
  using C = Acc<T>;
  const int64_t m = g.n * g.s;
  for (int64_t c = blockIdx.x; c < g.c; c += gridDim.x) {
    double v[1] = {0};
    for (int64_t e = threadIdx.x; e < m; e += blockDim.x) v[0] += wd(x[bn_at(g, c, e)]);
    block_sum<1>(v);
    const double mu = v[0] / static_cast<double>(m);
    double q[1] = {0};
    for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
      const double d = wd(x[bn_at(g, c, e)]) - mu;
      q[0] += d * d;
    }
    block_sum<1>(q);
    const double vr = q[0] / static_cast<double>(m);
    const double a = wd(w[c]) / ::sqrt(vr + g.eps);
    const C ca = static_cast<C>(a), cs = static_cast<C>(wd(b[c]) - mu * a);
    for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
      const int64_t at = bn_at(g, c, e);
      y[at] = narrow<T>(add_rn(mul_rn(widen(x[at]), ca), cs));
    }
    if (threadIdx.x == 0) {
      mean[c] = narrow<T>(mu);
      var[c] = narrow<T>(vr);
    }
  }
}

template <typename T>
__global__ void bn_eval_kernel(BnGeom g, const T* x, const T* w, const T* b, const T* rm,
                               const T* rv, T* y) {
  using C = Acc<T>;
  EMBER_GRID_STRIDE_LOOP(e, g.n * g.c * g.s) {
    const int64_t c = (e / g.s) % g.c;
    const double a = wd(w[c]) / ::sqrt(wd(rv[c]) + g.eps);
    const double sh = wd(b[c]) - wd(rm[c]) * a;
    y[e] = narrow<T>(add_rn(mul_rn(widen(x[e]), static_cast<C>(a)), static_cast<C>(sh)));
  }
}

template <typename T>
__global__ void bn_backward_kernel(BnGeom g, bool training, const T* dy, const T* x, const T* w,
                                   const T* mean, const T* var, T* dx, T* dw, T* db) {
  using C = Acc<T>;
  const int64_t m = g.n * g.s;
  for (int64_t c = blockIdx.x; c < g.c; c += gridDim.x) {
    const double mu = wd(mean[c]);
    const double invstd = 1.0 / ::sqrt(wd(var[c]) + g.eps);
    double v[2] = {0, 0};  // sum(dy), sum(dy * (x - mu))
    for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
      const int64_t at = bn_at(g, c, e);
      const double gy = wd(dy[at]);
      v[0] += gy;
      v[1] += gy * (wd(x[at]) - mu);
    }
    block_sum<2>(v);
    const double s_dy = v[0], s_dyxhat = v[1] * invstd;
    if (threadIdx.x == 0) {
      dw[c] = narrow<T>(s_dyxhat);
      db[c] = narrow<T>(s_dy);
    }
    // The CPU's dx = k1 * dy + kx * x + k0 (kx = k0 = 0 in eval).
    const double k1 = wd(w[c]) * invstd;
    const double kx = training ? -k1 * invstd * s_dyxhat / static_cast<double>(m) : 0.0;
    const double k0 = training ? -k1 * s_dy / static_cast<double>(m) - kx * mu : 0.0;
    const C c1 = static_cast<C>(k1), cx = static_cast<C>(kx), c0 = static_cast<C>(k0);
    for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
      const int64_t at = bn_at(g, c, e);
      dx[at] = narrow<T>(add_rn(add_rn(mul_rn(widen(dy[at]), c1), mul_rn(widen(x[at]), cx)), c0));
    }
  }
}

// ---- layer_norm, group_norm ---------------------------------------------------------------

struct RowGeom {
  int64_t r, g, k, s;
  double eps;
};

template <typename T>
__global__ void rows_forward_kernel(RowGeom g, const T* x, const T* w, const T* b, T* y, T* mean,
                                    T* rstd) {
  using C = Acc<T>;
  const int64_t d = g.k * g.s;
  for (int64_t r = blockIdx.x; r < g.r; r += gridDim.x) {
    const T* xr = x + r * d;
    T* yr = y + r * d;
    double v[1] = {0};
    for (int64_t e = threadIdx.x; e < d; e += blockDim.x) v[0] += wd(xr[e]);
    block_sum<1>(v);
    const double mu = v[0] / static_cast<double>(d);
    double q[1] = {0};
    for (int64_t e = threadIdx.x; e < d; e += blockDim.x) {
      const double dv = wd(xr[e]) - mu;
      q[0] += dv * dv;
    }
    block_sum<1>(q);
    const double invstd = 1.0 / ::sqrt(q[0] / static_cast<double>(d) + g.eps);
    if (threadIdx.x == 0) {
      mean[r] = narrow<T>(mu);
      rstd[r] = narrow<T>(invstd);
    }
    const T* wr = w + (r % g.g) * g.k;
    const T* br = b + (r % g.g) * g.k;
    if (g.s == 1) {  // the CPU's (x - mean) * invstd * w + b
      const C cm = static_cast<C>(mu), ci = static_cast<C>(invstd);
      for (int64_t k = threadIdx.x; k < g.k; k += blockDim.x) {
        yr[k] = narrow<T>(
            add_rn(mul_rn(mul_rn(sub_rn(widen(xr[k]), cm), ci), widen(wr[k])), widen(br[k])));
      }
    } else {  // the CPU's affine x * a + (b - mean * a), a = w * invstd
      for (int64_t e = threadIdx.x; e < d; e += blockDim.x) {
        const int64_t k = e / g.s;
        const double a = wd(wr[k]) * invstd;
        const C ca = static_cast<C>(a), cs = static_cast<C>(wd(br[k]) - mu * a);
        yr[e] = narrow<T>(add_rn(mul_rn(widen(xr[e]), ca), cs));
      }
    }
  }
}

template <typename T>
__global__ void rows_backward_dx_kernel(RowGeom g, const T* dy, const T* x, const T* w,
                                        const T* mean, const T* rstd, T* dx) {
  using C = Acc<T>;
  const int64_t d = g.k * g.s;
  for (int64_t r = blockIdx.x; r < g.r; r += gridDim.x) {
    const T* dyr = dy + r * d;
    const T* xr = x + r * d;
    const T* wr = w + (r % g.g) * g.k;
    T* dxr = dx + r * d;
    const double mu = wd(mean[r]), invstd = wd(rstd[r]);
    double v[2] = {0, 0};  // sum(dy * w), sum(dy * w * xhat)
    for (int64_t e = threadIdx.x; e < d; e += blockDim.x) {
      const double gw = wd(dyr[e]) * wd(wr[e / g.s]);
      v[0] += gw;
      v[1] += gw * (wd(xr[e]) - mu) * invstd;
    }
    block_sum<2>(v);
    const double mg = v[0] / static_cast<double>(d), mgx = v[1] / static_cast<double>(d);
    if (g.s == 1) {  // the CPU's invstd * (dy * w - mean(g) - xhat * mean(g * xhat))
      const C cm = static_cast<C>(mu), ci = static_cast<C>(invstd);
      const C cg = static_cast<C>(mg), cgx = static_cast<C>(mgx);
      for (int64_t k = threadIdx.x; k < g.k; k += blockDim.x) {
        const C xh = mul_rn(sub_rn(widen(xr[k]), cm), ci);
        dxr[k] = narrow<T>(
            mul_rn(ci, sub_rn(sub_rn(mul_rn(widen(dyr[k]), widen(wr[k])), cg), mul_rn(xh, cgx))));
      }
    } else {  // the CPU's dy * (invstd * w) + x * kx + k0
      const double kx = -invstd * invstd * mgx;
      const C cx = static_cast<C>(kx), c0 = static_cast<C>(-invstd * mg - kx * mu);
      for (int64_t e = threadIdx.x; e < d; e += blockDim.x) {
        const C cb = static_cast<C>(invstd * wd(wr[e / g.s]));
        dxr[e] = narrow<T>(add_rn(add_rn(mul_rn(widen(dyr[e]), cb), mul_rn(widen(xr[e]), cx)), c0));
      }
    }
  }
}

// dweight[p] = sum(dy * xhat), dbias[p] = sum(dy) over the rows r with r % G == p / K.
template <typename T>
__global__ void rows_backward_params_kernel(RowGeom g, const T* dy, const T* x, const T* mean,
                                            const T* rstd, T* dw, T* db) {
  const int64_t d = g.k * g.s, per = (g.r / g.g) * g.s;
  for (int64_t p = blockIdx.x; p < g.g * g.k; p += gridDim.x) {
    const int64_t grp = p / g.k, k = p % g.k;
    double v[2] = {0, 0};
    for (int64_t e = threadIdx.x; e < per; e += blockDim.x) {
      const int64_t r = grp + (e / g.s) * g.g;
      const int64_t at = r * d + k * g.s + e % g.s;
      const double gy = wd(dy[at]);
      v[0] += gy * (wd(x[at]) - wd(mean[r])) * wd(rstd[r]);
      v[1] += gy;
    }
    block_sum<2>(v);
    if (threadIdx.x == 0) {
      dw[p] = narrow<T>(v[0]);
      db[p] = narrow<T>(v[1]);
    }
  }
}

// ---- entry points -------------------------------------------------------------------------

Status bad(const ember_kernel_call* call, const char* name) {
  return status_error(EMBER_ERR_INVALID, "[cuda] %s: bad arguments (%d inputs, %d outputs)", name,
                      call->num_inputs, call->num_outputs);
}

unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(n, 1), kMaxBlocks));
}

template <bool Backward>
Status batch_norm_impl(const ember_kernel_call* call, const char* name) {
  if (call->num_inputs < 3 || !sdk::all_dense(call)) return bad(call, name);
  using A = std::conditional_t<Backward, attrs::batch_norm_backward, attrs::batch_norm>;
  const auto a = sdk::attrs<A>(call);
  const bool training = a.training != 0;
  const ember_tensor& x = call->inputs[Backward ? 1 : 0];
  if (!sdk::batch_norm_arity_ok(call, Backward, training)) return bad(call, name);
  const BnGeom g{x.sizes[0], x.sizes[1], x.sizes[2], a.eps};
  if (g.n * g.c * g.s == 0) return {};
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(prepare(call, &stream));
  bool done = false;  // Note [cuDNN where own kernels exist too]
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_batch_norm(call, training, a.eps, Backward, stream, &done));
  if (done) return {};
  Status st = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d unsupported", name, x.dtype);
  const ember_tensor* in = call->inputs;
  const ember_tensor* out = call->outputs;
  visit(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kFloating<T>) {
      auto I = [&](int i) { return static_cast<const T*>(in[i].data); };
      auto O = [&](int i) { return static_cast<T*>(out[i].data); };
      if constexpr (Backward) {
        bn_backward_kernel<T><<<blocks_for(g.c), kThreads, 0, stream>>>(
            g, training, I(0), I(1), I(2), I(3), I(4), O(0), O(1), O(2));
        st = launch_status(name);
      } else if (training) {
        bn_train_kernel<T>
            <<<blocks_for(g.c), kThreads, 0, stream>>>(g, I(0), I(1), I(2), O(0), O(1), O(2));
        st = launch_status(name);
      } else {
        st = launch(name, g.n * g.c * g.s, stream, bn_eval_kernel<T>, g, I(0), I(1), I(2), I(3),
                    I(4), O(0));
      }
    }
  });
  return st;
}

// layer_norm, group_norm (A: the op's attributes) and their backward passes.
template <bool Backward, typename A>
Status rows_impl(const ember_kernel_call* call, const char* name) {
  const auto a = sdk::attrs<A>(call);
  const int64_t G = a.groups, K = a.group_size, S = a.spatial;
  const int64_t R = sdk::norm_rows(call, Backward, G, K, S);
  if (R < 0) return bad(call, name);
  const ember_tensor& x = call->inputs[Backward ? 1 : 0];
  const int64_t n = numel(x);
  const RowGeom g{R, G, K, S, a.eps};
  if (n == 0) return {};
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(prepare(call, &stream));
  Status st = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d unsupported", name, x.dtype);
  const ember_tensor* in = call->inputs;
  const ember_tensor* out = call->outputs;
  visit(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kFloating<T>) {
      auto I = [&](int i) { return static_cast<const T*>(in[i].data); };
      auto O = [&](int i) { return static_cast<T*>(out[i].data); };
      if constexpr (Backward) {
        rows_backward_dx_kernel<T>
            <<<blocks_for(g.r), kThreads, 0, stream>>>(g, I(0), I(1), I(2), I(3), I(4), O(0));
        st = launch_status(name);
        if (!st.ok()) return;
        rows_backward_params_kernel<T>
            <<<blocks_for(G * K), kThreads, 0, stream>>>(g, I(0), I(1), I(3), I(4), O(1), O(2));
        st = launch_status(name);
      } else {
        rows_forward_kernel<T>
            <<<blocks_for(g.r), kThreads, 0, stream>>>(g, I(0), I(1), I(2), O(0), O(1), O(2));
        st = launch_status(name);
      }
    }
  });
  return st;
}

// The cuDNN path's per-channel conversions (cudnn_ops.cpp, Note [Batch norm through cuDNN]).
// P is cuDNN's parameter type: double for float64, float otherwise.
template <typename T, typename P>
__global__ void bn_from_cudnn_kernel(const P* mean, const P* unbiased, int64_t c, double scale,
                                     T* out_mean, T* out_var) {
  EMBER_GRID_STRIDE_LOOP(i, c) {
    const P mu = mean[i], v = unbiased[i];
    out_mean[i] = narrow<T>(mu);
    out_var[i] = narrow<T>(static_cast<P>(v * scale));
  }
}

template <typename T, typename P>
__global__ void bn_to_cudnn_kernel(const T* mean, const T* var, int64_t c, double eps,
                                   P* saved_mean, P* saved_invstd) {
  EMBER_GRID_STRIDE_LOOP(i, c) {
    saved_mean[i] = static_cast<P>(widen(mean[i]));
    const P v = static_cast<P>(widen(var[i])) + static_cast<P>(eps);
    saved_invstd[i] = P(1) / ::sqrt(v);
  }
}

// Runs fn(Tag<T>, Tag<P>) for a floating dtype.
template <typename Fn>
Status with_param_type(int32_t dtype, const char* name, Fn&& fn) {
  Status st = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d unsupported", name, dtype);
  visit(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kFloating<T>) {
      using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
      st = fn(tag, Tag<P>{});
    }
  });
  return st;
}

}  // namespace

int32_t batch_norm(const ember_kernel_call* call) {
  return write_status(batch_norm_impl<false>(call, "batch_norm"), call);
}
int32_t batch_norm_backward(const ember_kernel_call* call) {
  return write_status(batch_norm_impl<true>(call, "batch_norm_backward"), call);
}
int32_t layer_norm(const ember_kernel_call* call) {
  return write_status(rows_impl<false, attrs::layer_norm>(call, "layer_norm"), call);
}
int32_t layer_norm_backward(const ember_kernel_call* call) {
  return write_status(rows_impl<true, attrs::layer_norm_backward>(call, "layer_norm_backward"),
                      call);
}
int32_t group_norm(const ember_kernel_call* call) {
  return write_status(rows_impl<false, attrs::group_norm>(call, "group_norm"), call);
}
int32_t group_norm_backward(const ember_kernel_call* call) {
  return write_status(rows_impl<true, attrs::group_norm_backward>(call, "group_norm_backward"),
                      call);
}

Status launch_bn_stats_from_cudnn(int32_t dtype, const void* mean, const void* unbiased_var,
                                  int64_t c, int64_t m, void* out_mean, void* out_var,
                                  cudaStream_t stream) {
  const char* name = "batch_norm (statistics)";
  return with_param_type(dtype, name, [&](auto t, auto p) {
    using T = typename decltype(t)::type;
    using P = typename decltype(p)::type;
    const double scale = static_cast<double>(m - 1) / static_cast<double>(m);
    return launch(name, c, stream, bn_from_cudnn_kernel<T, P>, static_cast<const P*>(mean),
                  static_cast<const P*>(unbiased_var), c, scale, static_cast<T*>(out_mean),
                  static_cast<T*>(out_var));
  });
}

Status launch_bn_stats_to_cudnn(int32_t dtype, const void* mean, const void* var, int64_t c,
                                double eps, void* saved_mean, void* saved_invstd,
                                cudaStream_t stream) {
  const char* name = "batch_norm_backward (statistics)";
  return with_param_type(dtype, name, [&](auto t, auto p) {
    using T = typename decltype(t)::type;
    using P = typename decltype(p)::type;
    return launch(name, c, stream, bn_to_cudnn_kernel<T, P>, static_cast<const T*>(mean),
                  static_cast<const T*>(var), c, eps, static_cast<P*>(saved_mean),
                  static_cast<P*>(saved_invstd));
  });
}

}  // namespace ember::cuda
