// Shared pieces of the CUDA kernels (.cu files only): device element types per dtype, widening
// to the compute type and rounding back as the CPU plugin does, launch and stream helpers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/check.h"
#include "backends/cuda/stream.h"
#include "ember/plugin_abi.h"
#include "ember/plugin_sdk.hpp"

namespace ember::cuda::kern {

/** A type carried through a generic lambda. */
template <typename T>
struct Tag {
  using type = T;
};

/** Calls fn(Tag<T>{}) with the device element type of `dtype`; false if unknown. */
template <typename Fn>
bool visit(int32_t dtype, Fn&& fn) {
  switch (dtype) {
    case EMBER_F32:
      fn(Tag<float>{});
      return true;
    case EMBER_F64:
      fn(Tag<double>{});
      return true;
    case EMBER_F16:
      fn(Tag<__half>{});
      return true;
    case EMBER_BF16:
      fn(Tag<__nv_bfloat16>{});
      return true;
    case EMBER_I64:
      fn(Tag<int64_t>{});
      return true;
    case EMBER_I32:
      fn(Tag<int32_t>{});
      return true;
    case EMBER_I8:
      fn(Tag<int8_t>{});
      return true;
    case EMBER_U8:
      fn(Tag<uint8_t>{});
      return true;
    case EMBER_BOOL:
      fn(Tag<bool>{});
      return true;
    default:
      return false;
  }
}

/** True for the 16-bit floating types, which compute in float. */
template <typename T>
constexpr bool kHalf = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
/** True for every floating element type. */
template <typename T>
constexpr bool kFloating = kHalf<T> || std::is_floating_point_v<T>;

/** The type arithmetic on T happens in: float for the half types, T otherwise. */
template <typename T>
using Acc = std::conditional_t<kHalf<T>, float, T>;

/** T as its compute type. */
template <typename T>
__host__ __device__ __forceinline__ Acc<T> widen(T v) {
  if constexpr (std::is_same_v<T, __half>)
    return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat162float(v);
  else
    return v;
}

/** A compute-type value as D, as the CPU plugin converts: != 0 for bool, through float for the
 * half types (round to nearest even), Note [Float to integer conversion] for floating to
 * integer, a C++ conversion otherwise. */
template <typename D, typename A>
__host__ __device__ __forceinline__ D narrow(A v) {
  if constexpr (std::is_same_v<D, bool>) {
    return v != A(0);
  } else if constexpr (std::is_same_v<D, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<D, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<A>) {
    // The SDK's rule, on the device too (a plain cast saturates on the GPU instead).
    return sdk::float_to_int<D>(static_cast<double>(v));
  } else {
    return static_cast<D>(v);
  }
}

/** NaN test that is false for non-floating types. */
template <typename A>
__device__ __forceinline__ bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>)
    return v != v;
  else
    return false;
}

/** Threads per block of the grid-stride kernels. */
constexpr int kThreads = 256;
/** Most blocks one grid-stride launch uses. */
constexpr int64_t kMaxBlocks = int64_t{1} << 16;

/** A grid-stride loop over [0, n). */
#define EMBER_GRID_STRIDE_LOOP(i, n)                                                     \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

/** The Status of the last launch (named `name`, a string with static storage), which is
 * remembered as the device's last launch (Note [Asynchronous errors name the last launch]). */
inline Status launch_status(const char* name) {
  note_launch(name);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return status_error(EMBER_ERR_DEVICE, "[cuda] %s kernel launch failed: %s (%s)", name,
                        cudaGetErrorString(err), cudaGetErrorName(err));
  }
  return {};
}

/** Launches a grid-stride `kernel` covering `n` items with kThreads threads per block. */
template <typename Kernel, typename... Args>
Status launch(const char* name, int64_t n, cudaStream_t stream, Kernel kernel, Args... args) {
  if (n == 0) return {};
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks);
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args...);
  return launch_status(name);
}

/** Makes the call's output device current and returns the stream the kernel runs on (Note
 * [The kernel's stream]). */
inline Status prepare(const ember_kernel_call* call, cudaStream_t* stream) {
  const int index = call->num_outputs > 0 ? call->outputs[0].device_index : 0;
  EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
  return kernel_stream(call, index, stream);
}

/** Number of elements of `t`. */
inline int64_t numel(const ember_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.sizes[d];
  return n;
}

}  // namespace ember::cuda::kern
