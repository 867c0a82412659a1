// The cuDNN paths of batch norm, softmax and average pooling (cudnn_ops.cpp), planned by
// cudnn_plan.cpp. Each path either runs the op or declines it, and the own kernel in norm.cu /
// softmax.cu / pool.cu then runs instead (Note [cuDNN where own kernels exist too]).
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/check.h"
#include "ember/plugin_abi.h"
#include "ember/plugin_sdk_ops.hpp"

namespace ember::cuda {

// Each runs on `stream`, the kernel's (Note [The kernel's stream]), on the output's device,
// which the caller made current.

/** softmax / log_softmax along `dim` (the kernel contract of softmax.cu) through
 * cudnnSoftmaxForward; `*done` is false when the path declined and the caller's own kernel
 * must run. */
Status cudnn_softmax(const ember_kernel_call* call, int64_t dim, bool log, cudaStream_t stream,
                     bool* done);

/** avg_pool2d (`window`: its attributes, the same for its backward) or, with `window` null,
 * adaptive_avg_pool2d, and their backward passes (the contract of pool.cu) through
 * cudnnPoolingForward / cudnnPoolingBackward; `*done` as above. */
Status cudnn_avg_pool2d(const ember_kernel_call* call, const attrs::avg_pool2d* window,
                        bool backward, cudaStream_t stream, bool* done);

/** batch_norm (training and eval) and its training backward (the contract of norm.cu) through
 * cuDNN's batch normalization; `*done` as above. */
Status cudnn_batch_norm(const ember_kernel_call* call, bool training, double eps, bool backward,
                        cudaStream_t stream, bool* done);

}  // namespace ember::cuda
