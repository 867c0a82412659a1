// Every CUDA kernel, one C-ABI function each; kernels.cpp registers them. Kernels run on the
// current stream of the output's device and report launch errors through their status.
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/check.h"
#include "ember/plugin_abi.h"

namespace ember::cuda {

/** Kernel signature shared by all entries below. */
#define EMBER_CUDA_KERNEL(name) int32_t name(const ember_kernel_call* call)

// elementwise.cu
EMBER_CUDA_KERNEL(copy);
EMBER_CUDA_KERNEL(fill);
EMBER_CUDA_KERNEL(add);
EMBER_CUDA_KERNEL(sub);
EMBER_CUDA_KERNEL(mul);
EMBER_CUDA_KERNEL(div);
EMBER_CUDA_KERNEL(pow);
EMBER_CUDA_KERNEL(maximum);
EMBER_CUDA_KERNEL(minimum);
EMBER_CUDA_KERNEL(relu_backward);
EMBER_CUDA_KERNEL(eq);
EMBER_CUDA_KERNEL(ne);
EMBER_CUDA_KERNEL(lt);
EMBER_CUDA_KERNEL(le);
EMBER_CUDA_KERNEL(gt);
EMBER_CUDA_KERNEL(ge);
EMBER_CUDA_KERNEL(logical_and);
EMBER_CUDA_KERNEL(logical_or);
EMBER_CUDA_KERNEL(logical_not);
EMBER_CUDA_KERNEL(where);
EMBER_CUDA_KERNEL(neg);
EMBER_CUDA_KERNEL(abs);
EMBER_CUDA_KERNEL(sign);
EMBER_CUDA_KERNEL(relu);
EMBER_CUDA_KERNEL(clamp);
EMBER_CUDA_KERNEL(exp);
EMBER_CUDA_KERNEL(log);
EMBER_CUDA_KERNEL(log1p);
EMBER_CUDA_KERNEL(sqrt);
EMBER_CUDA_KERNEL(rsqrt);
EMBER_CUDA_KERNEL(sin);
EMBER_CUDA_KERNEL(cos);
EMBER_CUDA_KERNEL(tanh);
EMBER_CUDA_KERNEL(sigmoid);
EMBER_CUDA_KERNEL(gelu);
EMBER_CUDA_KERNEL(silu);
EMBER_CUDA_KERNEL(floor);
EMBER_CUDA_KERNEL(ceil);
EMBER_CUDA_KERNEL(round);
EMBER_CUDA_KERNEL(erf);

// reduce.cu
EMBER_CUDA_KERNEL(sum);
EMBER_CUDA_KERNEL(prod);
EMBER_CUDA_KERNEL(amax);
EMBER_CUDA_KERNEL(amin);
EMBER_CUDA_KERNEL(all);
EMBER_CUDA_KERNEL(any);
EMBER_CUDA_KERNEL(argmax);
EMBER_CUDA_KERNEL(argmin);
EMBER_CUDA_KERNEL(max_dim);
EMBER_CUDA_KERNEL(min_dim);
EMBER_CUDA_KERNEL(cumsum);

// softmax.cu
EMBER_CUDA_KERNEL(softmax);
EMBER_CUDA_KERNEL(log_softmax);

// index.cu
EMBER_CUDA_KERNEL(index_select);
EMBER_CUDA_KERNEL(gather);
EMBER_CUDA_KERNEL(scatter);
EMBER_CUDA_KERNEL(scatter_add);

// pool.cu
EMBER_CUDA_KERNEL(max_pool2d);
EMBER_CUDA_KERNEL(max_pool2d_backward);
EMBER_CUDA_KERNEL(avg_pool2d);
EMBER_CUDA_KERNEL(avg_pool2d_backward);
EMBER_CUDA_KERNEL(adaptive_avg_pool2d);
EMBER_CUDA_KERNEL(adaptive_avg_pool2d_backward);

// norm.cu
EMBER_CUDA_KERNEL(batch_norm);
EMBER_CUDA_KERNEL(batch_norm_backward);
EMBER_CUDA_KERNEL(layer_norm);
EMBER_CUDA_KERNEL(layer_norm_backward);
EMBER_CUDA_KERNEL(group_norm);
EMBER_CUDA_KERNEL(group_norm_backward);

// sort.cu
EMBER_CUDA_KERNEL(sort);
EMBER_CUDA_KERNEL(topk);
EMBER_CUDA_KERNEL(count_nonzero);
EMBER_CUDA_KERNEL(nonzero);

// random.cu
EMBER_CUDA_KERNEL(random);

// conv.cpp (cuDNN)
EMBER_CUDA_KERNEL(conv2d);
EMBER_CUDA_KERNEL(conv2d_backward_input);
EMBER_CUDA_KERNEL(conv2d_backward_weight);

// matmul.cpp (cuBLAS, loaded on first use)
EMBER_CUDA_KERNEL(matmul);

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
