// cuDNN beside the own kernels: the shared descriptor pieces (used by conv.cpp too) and the
// cuDNN paths of batch norm, softmax and average pooling (cudnn_ops.cpp). Each path either runs
// the op or declines it, and the own kernel in norm.cu / softmax.cu / pool.cu then runs instead
// (Note [cuDNN where own kernels exist too]).
#pragma once

#include <cudnn.h>

#include <cstdint>

#include "backends/cuda/check.h"
#include "backends/cuda/stream.h"
#include "ember/plugin_abi.h"

namespace ember::cuda {

/** An owned cuDNN tensor descriptor. */
using TensorDesc = UniqueHandle<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;

/** cuDNN's storage and compute types of a floating `dtype` (float compute for the half types);
 * an unsupported dtype is an error naming `op`. */
Status cudnn_types(int32_t dtype, const char* op, cudnnDataType_t* data, cudnnDataType_t* compute);

/** A new packed NCHW descriptor [n, c, h, w] (each at most INT_MAX) of `data`. */
Status make_tensor_desc(cudnnDataType_t data, int64_t n, int64_t c, int64_t h, int64_t w,
                        TensorDesc* out);

/** The blend factors 1 and 0 in cuDNN's scaling type for `dtype` (double for float64). */
struct Blend {
  const void* one;   // alpha: the result counts once
  const void* zero;  // beta: the destination's old contents are ignored
};
/** Blend for `dtype`. */
Blend blend_for(int32_t dtype);

/** softmax / log_softmax (the kernel contract of softmax.cu) through cudnnSoftmaxForward;
 * `*done` is false when the path declined and the caller's own kernel must run. */
Status cudnn_softmax(const ember_kernel_call* call, bool log, bool* done);

/** avg_pool2d / adaptive_avg_pool2d and their backward passes (the contract of pool.cu)
 * through cudnnPoolingForward / cudnnPoolingBackward; `*done` as above. */
Status cudnn_avg_pool2d(const ember_kernel_call* call, bool adaptive, bool backward, bool* done);

/** batch_norm (training and eval) and its training backward (the contract of norm.cu) through
 * cuDNN's batch normalization; `*done` as above. */
Status cudnn_batch_norm(const ember_kernel_call* call, bool backward, bool* done);

}  // namespace ember::cuda
