// The CUDA backend's options, set through ember::set_backend_option("cuda", key, value)
// (ember_device_type_v1::set_option) or, for their initial values, the environment.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ember::cuda {

/** Switches read by the kernels on every call (relaxed atomics: a change applies to later ops). */
struct Options {
  /** "matmul.allow_tf32": float32 matmul may use TF32 tensor cores (EMBER_CUDA_ALLOW_TF32=1). */
  std::atomic<bool> matmul_allow_tf32{false};
  /** "cudnn.allow_tf32": float32 convolutions may use TF32 (EMBER_CUDA_ALLOW_TF32=1). */
  std::atomic<bool> cudnn_allow_tf32{false};
  /** "cudnn.benchmark": time cuDNN's algorithms once per shape (EMBER_CUDNN_BENCHMARK=1). */
  std::atomic<bool> cudnn_benchmark{false};
  /** "cudnn.enabled": batch norm, softmax and average pooling run through cuDNN where it fits
   * (EMBER_CUDNN_ENABLED=0 turns it off); off, or where it does not fit, own kernels run.
   * Convolutions always use cuDNN (Note [cuDNN where own kernels exist too]). */
  std::atomic<bool> cudnn_enabled{true};
  /** "cudnn.fallbacks" (read-only): calls a cuDNN path declined to an own kernel while enabled. */
  std::atomic<uint64_t> cudnn_fallbacks{0};
  /** "testing.conv_max_elements": most elements of one tensor of a cuDNN convolution call;
   * larger batches are split (ops/conv.cpp). cuDNN's limit, INT_MAX, unless a test lowers it
   * to run the split on small tensors. */
  std::atomic<int64_t> conv_max_elements{kConvMaxElements};
  /** The default of conv_max_elements: INT_MAX, cuDNN's (kCudnnMaxElements). */
  static constexpr int64_t kConvMaxElements = 2147483647;
};

/** The process's options, read from the environment on first use. */
Options& options();

/** ember_device_type_v1::set_option: "1"/"true"/"on" or "0"/"false"/"off" for each switch, a
 * count in [1, INT_MAX] for testing.conv_max_elements. */
int32_t set_option(void* ctx, const char* key, const char* value, char* error, size_t cap);
/** ember_device_type_v1::get_option: "1" or "0" for switches, a decimal number for counters and
 * testing.conv_max_elements. */
int32_t get_option(void* ctx, const char* key, char* value, size_t cap);

}  // namespace ember::cuda
