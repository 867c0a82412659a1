// CUDA kernels of myext::fused_bias_gelu and its backward (float32, float64). Built only when
// CMake finds nvcc; inputs are contiguous (EMBER_OP_CONTIGUOUS_INPUTS) and live on the device
// given by their descriptors.
#include <cuda_runtime.h>

#include <cstdint>

#include "ember/plugin_sdk.hpp"
#include "kernels.h"

namespace fused_bias_gelu {
namespace {

template <typename T>
__device__ __forceinline__ T gelu(T z) {
  return T(0.5) * z * (T(1) + erf(z * T(M_SQRT1_2)));
}

template <typename T>
__device__ __forceinline__ T gelu_grad(T z) {
  const T cdf = T(0.5) * (T(1) + erf(z * T(M_SQRT1_2)));
  const T pdf = exp(T(-0.5) * z * z) * T(0.5 * M_2_SQRTPI * M_SQRT1_2);
  return cdf + z * pdf;
}

template <typename T>
__global__ void forward_kernel(const T* x, const T* b, T* out, int64_t total, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(blockDim.x) * gridDim.x) {
    out[i] = gelu(x[i] + b[i % n]);
  }
}

template <typename T>
__global__ void grad_x_kernel(const T* g, const T* x, const T* b, T* gx, int64_t total, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(blockDim.x) * gridDim.x) {
    gx[i] = g[i] * gelu_grad(x[i] + b[i % n]);
  }
}

// One thread per column, rows in order: deterministic, coalesced across the threads of a warp.
// A grid-stride loop over the columns, as the kernels above: the grid is capped at 65535
// blocks (blocks_for), so a thread sums every (blocks * threads)-th column of a wider input.
template <typename T>
__global__ void grad_bias_kernel(const T* gx, T* gb, int64_t rows, int64_t n) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n;
       j += int64_t(blockDim.x) * gridDim.x) {
    double acc = 0;
    for (int64_t r = 0; r < rows; ++r) acc += static_cast<double>(gx[r * n + j]);
    gb[j] = static_cast<T>(acc);
  }
}

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over `total` items: enough for one item per thread, capped at
// 65535 (every kernel here loops over the rest).
int blocks_for(int64_t total) {
  const int64_t b = (total + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

// Note [Streams of extension kernels]
// A core of ABI 1.4 or later passes the device's current stream (call->stream), the one the
// CUDA backend's own kernels use on this thread: the kernels are queued on it, after the work
// that produced their inputs and before the work that reads their outputs, and nothing waits.
// An older core passes NULL while the backend computes on a stream of its own, so then the
// kernels synchronize the device before and after their work: correct with any backend stream,
// at the price of two synchronizations.
class DeviceScope {
 public:
  explicit DeviceScope(const ember_kernel_call* call) : call_(call) {
    cudaGetDevice(&prev_);
    cudaSetDevice(call->outputs[0].device_index);
    stream_ = static_cast<cudaStream_t>(call->stream);
    if (!stream_) cudaDeviceSynchronize();
  }
  ~DeviceScope() { cudaSetDevice(prev_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  cudaStream_t stream() const { return stream_; }
  // Reports a launch or execution error as the kernel's status.
  int32_t finish(const char* what) {
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess && !call_->stream) e = cudaStreamSynchronize(nullptr);
    if (e != cudaSuccess) {
      return ember::sdk::fail(call_, EMBER_ERR_DEVICE, "%s: %s", what, cudaGetErrorString(e));
    }
    return EMBER_OK;
  }

 private:
  const ember_kernel_call* call_;
  int prev_ = 0;
  cudaStream_t stream_ = nullptr;
};

template <typename T>
int32_t forward(const ember_kernel_call* call) {
  DeviceScope scope(call);
  const ember_tensor& x = call->inputs[0];
  const int64_t total = ember::sdk::numel(x), n = x.sizes[x.ndim - 1];
  forward_kernel<T><<<blocks_for(total), kThreads, 0, scope.stream()>>>(
      ember::sdk::data<T>(x), ember::sdk::data<T>(call->inputs[1]),
      ember::sdk::data<T>(call->outputs[0]), total, n);
  return scope.finish("fused_bias_gelu forward");
}

template <typename T>
int32_t backward(const ember_kernel_call* call) {
  DeviceScope scope(call);
  const ember_tensor& x = call->inputs[1];
  const int64_t total = ember::sdk::numel(x), n = x.sizes[x.ndim - 1];
  const int64_t rows = n == 0 ? 0 : total / n;
  T* gx = ember::sdk::data<T>(call->outputs[0]);
  grad_x_kernel<T><<<blocks_for(total), kThreads, 0, scope.stream()>>>(
      ember::sdk::data<T>(call->inputs[0]), ember::sdk::data<T>(x),
      ember::sdk::data<T>(call->inputs[2]), gx, total, n);
  grad_bias_kernel<T><<<blocks_for(n), kThreads, 0, scope.stream()>>>(
      gx, ember::sdk::data<T>(call->outputs[1]), rows, n);
  return scope.finish("fused_bias_gelu backward");
}

}  // namespace

int32_t forward_cuda(const ember_kernel_call* call) {
  switch (call->inputs[0].dtype) {
    case EMBER_F32:
      return forward<float>(call);
    case EMBER_F64:
      return forward<double>(call);
    default:
      return ember::sdk::fail(call, EMBER_ERR_UNSUPPORTED, "forward: no CUDA kernel for %s",
                              ember::sdk::dtype_name(call->inputs[0].dtype));
  }
}

int32_t backward_cuda(const ember_kernel_call* call) {
  switch (call->inputs[0].dtype) {
    case EMBER_F32:
      return backward<float>(call);
    case EMBER_F64:
      return backward<double>(call);
    default:
      return ember::sdk::fail(call, EMBER_ERR_UNSUPPORTED, "backward: no CUDA kernel for %s",
                              ember::sdk::dtype_name(call->inputs[0].dtype));
  }
}

}  // namespace fused_bias_gelu
