// CUDA softmax and log_softmax along one dim (core/ops/softmax.cpp: any input strides, a
// contiguous output of x's shape and dtype, attribute dim in [0, rank)), computed as the CPU
// plugin's own loop: max (NaN wins), sum of exp(x - max) in the compute type (float for
// float32 and the half types, double for float64), one rounding per output. Dense inputs go
// through cuDNN first (cudnn_ops.cpp, Note [cuDNN where own kernels exist too]). The backward
// passes are composites in the core.
#include <cstdint>
#include <type_traits>

#include "backends/cuda/ops/common.cuh"
#include "backends/cuda/ops/cudnn_ops.h"
#include "backends/cuda/ops/ops.h"
#include "ember/plugin_sdk.hpp"

namespace ember::cuda {
namespace {

using namespace kern;  // NOLINT: the shared kernel helpers

template <typename C>
__device__ __forceinline__ C max_nan(C m, C v) {
  return (v > m || v != v) ? v : m;
}
__device__ __forceinline__ float exp_c(float x) {
  return expf(x);
}
__device__ __forceinline__ double exp_c(double x) {
  return ::exp(x);
}
__device__ __forceinline__ float log_c(float x) {
  return logf(x);
}
__device__ __forceinline__ double log_c(double x) {
  return ::log(x);
}

// Combines `v` over the G threads of each group (all threads of the block must call it).
template <int G, bool kMax, typename C>
__device__ C group_reduce(C* sh, C v) {
  if constexpr (G == 1) {
    return v;
  } else {
    const int t = static_cast<int>(threadIdx.x), lane = t % G;
    sh[t] = v;
    __syncthreads();
    for (int s = G / 2; s > 0; s >>= 1) {
      if (lane < s) sh[t] = kMax ? max_nan(sh[t], sh[t + s]) : sh[t] + sh[t + s];
      __syncthreads();
    }
    const C r = sh[t - lane];
    __syncthreads();
    return r;
  }
}

// Note [Softmax grid]
// A dense [outer, len, inner] array has outer * inner rows of len elements, stride inner. A
// group of G threads handles one row (G = 1 when inner > 1: neighbouring threads then own
// neighbouring rows, which are neighbours in memory). `x` may equal `y` (in place after a
// strided input was copied into the output): every read of a row precedes its writes, which
// follow the group's last reduction.
template <typename T, bool kLog, int G>
__global__ void softmax_kernel(const T* x, T* y, int64_t rows, int64_t len, int64_t inner) {
  using C = Acc<T>;
  __shared__ C sh[kThreads];
  constexpr int kGroups = kThreads / G;
  const int group = static_cast<int>(threadIdx.x) / G, lane = static_cast<int>(threadIdx.x) % G;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kGroups; base < rows;
       base += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t row = base + group;
    const bool active = row < rows;
    const int64_t off = active ? (row / inner) * len * inner + row % inner : 0;
    C m = -INFINITY;
    if (active) {
      for (int64_t l = lane; l < len; l += G)
        m = max_nan(m, static_cast<C>(widen(x[off + l * inner])));
    }
    m = group_reduce<G, true>(sh, m);
    C sum = 0;
    if (active) {
      for (int64_t l = lane; l < len; l += G)
        sum += exp_c(static_cast<C>(widen(x[off + l * inner])) - m);
    }
    sum = group_reduce<G, false>(sh, sum);
    if (active) {
      if constexpr (kLog) {
        const C shift = m + log_c(sum);
        for (int64_t l = lane; l < len; l += G) {
          y[off + l * inner] = narrow<T>(static_cast<C>(widen(x[off + l * inner])) - shift);
        }
      } else {
        const C inv = C(1) / sum;
        for (int64_t l = lane; l < len; l += G) {
          y[off + l * inner] =
              narrow<T>(exp_c(static_cast<C>(widen(x[off + l * inner])) - m) * inv);
        }
      }
    }
  }
}

template <bool kLog>
int32_t softmax_impl(const ember_kernel_call* call) {
  const char* name = kLog ? "log_softmax" : "softmax";
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& y = call->outputs[0];
  using A = std::conditional_t<kLog, attrs::log_softmax, attrs::softmax>;
  const int64_t dim = sdk::attrs<A>(call).dim;
  if (x.ndim < 1 || dim < 0 || dim >= x.ndim || y.ndim != x.ndim || y.dtype != x.dtype ||
      !sdk::is_contiguous(y)) {
    return write_status(
        status_error(EMBER_ERR_INVALID, "[cuda] %s: bad arguments (rank %d, dim %lld)", name,
                     x.ndim, static_cast<long long>(dim)),
        call);
  }
  cudaStream_t stream = nullptr;
  Status s = prepare(call, &stream);
  if (!s.ok()) return write_status(s, call);
  if (numel(x) == 0) return EMBER_OK;
  bool done = false;  // Note [cuDNN where own kernels exist too]
  s = cudnn_softmax(call, dim, kLog, stream, &done);
  if (!s.ok() || done) return write_status(s, call);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= x.sizes[d];
  for (int d = static_cast<int>(dim) + 1; d < x.ndim; ++d) inner *= x.sizes[d];
  const int64_t len = x.sizes[dim], rows = outer * inner;
  const void* src = x.data;
  if (!sdk::is_contiguous(
          x)) {  // copy into the output and run in place there (Note [Softmax grid])
    s = launch_copy(y, x, stream);
    if (!s.ok()) return write_status(s, call);
    src = y.data;
  }
  s = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d is not supported", name, x.dtype);
  visit(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kFloating<T>) {
      const T* px = static_cast<const T*>(src);
      T* py = static_cast<T*>(y.data);
      const int group = inner > 1 || len <= 16 ? 1 : (len >= 2048 ? kThreads : 32);
      const int64_t per_block = kThreads / group;
      const unsigned blocks =
          static_cast<unsigned>(std::min<int64_t>((rows + per_block - 1) / per_block, kMaxBlocks));
      if (group == 1)
        softmax_kernel<T, kLog, 1><<<blocks, kThreads, 0, stream>>>(px, py, rows, len, inner);
      else if (group == 32)
        softmax_kernel<T, kLog, 32><<<blocks, kThreads, 0, stream>>>(px, py, rows, len, inner);
      else
        softmax_kernel<T, kLog, kThreads>
            <<<blocks, kThreads, 0, stream>>>(px, py, rows, len, inner);
      s = launch_status(name);
    }
  });
  return write_status(s, call);
}

}  // namespace

int32_t softmax(const ember_kernel_call* call) {
  return softmax_impl<false>(call);
}
int32_t log_softmax(const ember_kernel_call* call) {
  return softmax_impl<true>(call);
}

}  // namespace ember::cuda
