// The example's kernels, shared by plugin.cpp and (when built with CUDA) cuda_kernels.cu.
#pragma once

#include "ember/plugin_abi.h"

namespace fused_bias_gelu {

/** CPU: out = gelu(x + bias), bias broadcast over the last dim (float32, float64). */
int32_t forward_cpu(const ember_kernel_call* call);
/** CPU: (grad, x, bias) -> (grad_x, grad_bias). */
int32_t backward_cpu(const ember_kernel_call* call);

#ifdef FUSED_BIAS_GELU_WITH_CUDA
/** CUDA versions of the same kernels. */
int32_t forward_cuda(const ember_kernel_call* call);
int32_t backward_cuda(const ember_kernel_call* call);
#endif

}  // namespace fused_bias_gelu
