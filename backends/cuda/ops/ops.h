// Every CUDA kernel, one C-ABI function per core op, declared from the op list (ember/ops.def);
// kernels.cpp registers them. Kernels run on the stream the call carries (Note [The kernel's
// stream] in stream.cpp) on the output's device and report launch errors through their status.
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/check.h"
#include "ember/plugin_abi.h"
#include "ember/plugin_sdk_ops.hpp"

namespace ember::cuda {

// One kernel per core op (Note [Kernels of a backend] in plugin_sdk_ops.hpp), defined in
// elementwise.cu (copies, fills, arithmetic, comparison, unary math), reduce.cu, softmax.cu,
// index.cu, sort.cu (ordering, counting), pool.cu, norm.cu, random.cu, optim.cu, conv.cpp and
// rnn.cpp (cuDNN) and matmul.cpp (cuBLAS). A mandatory op without a definition is a link error.
#define EMBER_OP(name, ...) EMBER_KERNEL(name);
#include "ember/ops.def"
#undef EMBER_OP

/** Enqueues C = A B for integer dtypes (matmul_int.cu, Note [Integer matmul on the GPU]). */
Status launch_integer_matmul(const ember_tensor& a, const ember_tensor& b, const ember_tensor& c,
                             cudaStream_t stream);

/** Writes batch_norm's mean and biased variance (x's `dtype`) from cuDNN's per-channel mean
 * and unbiased variance (double for float64, float otherwise) over `m` values per channel. */
Status launch_bn_stats_from_cudnn(int32_t dtype, const void* mean, const void* unbiased_var,
                                  int64_t c, int64_t m, void* out_mean, void* out_var,
                                  cudaStream_t stream);
/** Writes cuDNN's saved mean and 1 / sqrt(var + eps) (double for float64, float otherwise)
 * from batch_norm's statistics in x's `dtype`. */
Status launch_bn_stats_to_cudnn(int32_t dtype, const void* mean, const void* var, int64_t c,
                                double eps, void* saved_mean, void* saved_invstd,
                                cudaStream_t stream);

/** Enqueues dst = src (any strides, dtype conversion) on `stream`; used to pack operands. */
Status launch_copy(const ember_tensor& dst, const ember_tensor& src, cudaStream_t stream);

}  // namespace ember::cuda
