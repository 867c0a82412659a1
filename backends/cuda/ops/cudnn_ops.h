// The cuDNN paths of batch norm, softmax and average pooling (cudnn_ops.cpp), planned by
// cudnn_plan.cpp. Each path either runs the op or declines it, and the own kernel in norm.cu /
// softmax.cu / pool.cu then runs instead (Note [cuDNN where own kernels exist too]).
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/check.h"
#include "ember/plugin_abi.h"

namespace ember::cuda {

/** softmax / log_softmax (the kernel contract of softmax.cu) through cudnnSoftmaxForward;
 * `*done` is false when the path declined and the caller's own kernel must run. */
Status cudnn_softmax(const ember_kernel_call* call, bool log, bool* done);

/** avg_pool2d / adaptive_avg_pool2d and their backward passes (the contract of pool.cu)
 * through cudnnPoolingForward / cudnnPoolingBackward; `*done` as above. */
Status cudnn_avg_pool2d(const ember_kernel_call* call, bool adaptive, bool backward, bool* done);

/** batch_norm (training and eval) and its training backward (the contract of norm.cu) through
 * cuDNN's batch normalization, on `stream` (the output device's current stream, which the
 * caller made current); `*done` as above. */
Status cudnn_batch_norm(const ember_kernel_call* call, bool backward, cudaStream_t stream,
                        bool* done);

}  // namespace ember::cuda
