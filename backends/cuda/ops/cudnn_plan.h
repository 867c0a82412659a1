// cuDNN descriptors for the layers that have a cuDNN path beside an own kernel (cudnn_ops.cpp),
// and the descriptor pieces conv.cpp shares. Planning needs the cuDNN library but no GPU, no
// handle and no stream, so the decisions (which calls cuDNN takes, and with which descriptors)
// are unit-tested in CI against the real library (tests/backends/cuda/cudnn_plan_test.cpp).
#pragma once

#include <cudnn.h>

#include <cstdint>

#include "backends/cuda/check.h"
#include "backends/cuda/stream.h"
#include "ember/plugin_abi.h"
#include "ember/plugin_sdk_ops.hpp"

namespace ember::cuda {

/** An owned cuDNN tensor descriptor. */
using TensorDesc = UniqueHandle<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
/** An owned cuDNN pooling descriptor. */
using PoolDesc = UniqueHandle<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;

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

/** True for cuDNN's "not this case" answers: NOT_SUPPORTED* (3xxx) and BAD_PARAM* (2xxx). */
bool declined_by_cudnn(cudnnStatus_t status);

/** softmax along `dim` of a dense x: one descriptor of [outer, len, inner, 1] for
 * CUDNN_SOFTMAX_MODE_CHANNEL. `why` names the reason when cuDNN does not apply. */
struct SoftmaxPlan {
  TensorDesc desc;
  const char* why = nullptr;  // static storage
};
/** Plans softmax/log_softmax of `x` (floating) along `dim` in [0, rank). */
Status plan_softmax(const ember_tensor& x, int64_t dim, SoftmaxPlan* plan);

/** Average pooling from `x` [N, C, H, W] to `y` [N, C, oH, oW]. */
struct PoolPlan {
  PoolDesc pool;
  TensorDesc x, y;
  const char* why = nullptr;  // static storage
};
/** Plans avg_pool2d (`window`: its attributes, which its backward shares) or, with `window`
 * null, adaptive_avg_pool2d. Declines windows cuDNN does not form as PyTorch does. */
Status plan_avg_pool2d(const ember_tensor& x, const ember_tensor& y,
                       const attrs::avg_pool2d* window, PoolPlan* plan);

/** Batch norm of x [N, C, S] viewed as NCHW [N, C, S, 1], statistics per channel. */
struct BatchNormPlan {
  TensorDesc x, param;              // param: cuDNN's derived [1, C, 1, 1] descriptor
  int32_t param_dtype = EMBER_F32;  // the dtype of cuDNN's per-channel tensors
  const char* why = nullptr;        // static storage
};
/** Plans batch_norm (`backward`: batch_norm_backward) of x in training or eval mode. */
Status plan_batch_norm(const ember_tensor& x, bool training, bool backward, double eps,
                       BatchNormPlan* plan);

}  // namespace ember::cuda
