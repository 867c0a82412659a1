// cuDNN descriptors for the layers that have a cuDNN path beside an own kernel (cudnn_ops.cpp),
// and the descriptor pieces conv.cpp shares. Planning needs the cuDNN library but no GPU, no
// handle and no stream, so the decisions (which calls cuDNN takes, and with which descriptors)
// are unit-tested in CI against the real library (tests/backends/cuda/cudnn_plan_test.cpp).
#pragma once

#include <cudnn.h>

#include <climits>
#include <cstdint>
#include <functional>
#include <vector>

#include "backends/cuda/check.h"
#include "backends/cuda/stream.h"
#include "ember/plugin_abi.h"
#include "ember/plugin_sdk_ops.hpp"

namespace ember::cuda {

/** An owned cuDNN tensor descriptor. */
using TensorDesc = UniqueHandle<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
/** An owned cuDNN pooling descriptor. */
using PoolDesc = UniqueHandle<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;
/** An owned cuDNN RNN descriptor. */
using RnnDesc = UniqueHandle<cudnnRNNDescriptor_t, cudnnDestroyRNNDescriptor>;
/** An owned cuDNN RNN data descriptor. */
using RnnDataDesc = UniqueHandle<cudnnRNNDataDescriptor_t, cudnnDestroyRNNDataDescriptor>;

/** cuDNN's storage and compute types of a floating `dtype` (float compute for the half types);
 * an unsupported dtype is an error naming `op`. */
Status cudnn_types(int32_t dtype, const char* op, cudnnDataType_t* data, cudnnDataType_t* compute);

/** A new packed descriptor of dims [n, c, h, w] (each at most INT_MAX) of `data`, laid out as
 *  `format` (NCHW: row-major; NHWC: channels-last). */
Status make_tensor_desc(cudnnDataType_t data, int64_t n, int64_t c, int64_t h, int64_t w,
                        TensorDesc* out, cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW);

/** The blend factors 1 and 0 in cuDNN's scaling type for `dtype` (double for float64). */
struct Blend {
  const void* one;   // alpha: the result counts once
  const void* zero;  // beta: the destination's old contents are ignored
};
/** Blend for `dtype`. */
Blend blend_for(int32_t dtype);

/** Most elements one cuDNN tensor or filter descriptor may describe: its sizes and strides are
 * int, so a packed tensor holds at most INT_MAX elements (checked in cudnn_plan_test). */
inline constexpr int64_t kCudnnMaxElements = INT_MAX;

/** A convolution's batch cut into calls whose tensors cuDNN can describe. */
struct ConvBatchSplit {
  int64_t chunk = 0;   // samples per call; the last call takes the rest (at most `chunk`)
  int64_t chunks = 0;  // calls; 0 for an empty batch or empty samples
};
/** Plans the fewest, evenly sized batch chunks of a convolution with input x [N, C, H, W],
 * output y [N, O, OH, OW] (the full output cuDNN sees) and filter w [O, C/G, KH, KW] such that
 * each chunk's x and y hold at most `limit` elements (kCudnnMaxElements; tests pass less). An
 * error naming `op` and the shape when one sample, or the filter, is over the limit. */
Status plan_conv_batch_split(const char* op, const int64_t (&x)[4], const int64_t (&y)[4],
                             const int64_t (&w)[4], int64_t limit, ConvBatchSplit* out);

/** One convolution algorithm of cuDNN's ranking, with the math type it was ranked with. */
struct ConvAlgo {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};
/** Whether an algorithm of a ranking may run: cuDNN offers it (SUCCESS), and a float32
 * convolution without TF32 gets no tensor-op math (Note [TF32 in cuDNN convolutions]). */
bool conv_algo_acceptable(cudnnStatus_t status, cudnnMathType_t math, int32_t dtype, bool tf32);
/** The acceptable algorithms of a ranking (cudnnConvolution*AlgoPerf_t from the heuristics or
 * from timing), best first. */
template <typename Perf>
std::vector<ConvAlgo> acceptable_conv_algos(const Perf* perf, int n, int32_t dtype, bool tf32) {
  std::vector<ConvAlgo> out;
  for (int i = 0; i < n; ++i) {
    if (conv_algo_acceptable(perf[i].status, perf[i].mathType, dtype, tf32)) {
      out.push_back({static_cast<int>(perf[i].algo), perf[i].mathType});
    }
  }
  return out;
}
/** Runs the convolution with the first candidate that works (Note [Walking cuDNN's algorithm
 * ranking]): `run(candidate)` gets its workspace and runs it; an out-of-memory or unsupported
 * answer moves on to the next candidate, any other failure is returned as it is, and when no
 * candidate works the error names `op`, the candidates tried and the last answer. `*chosen` is
 * the index of the candidate that ran. */
Status run_first_working_algo(const char* op, const std::vector<ConvAlgo>& candidates,
                              const std::function<Status(const ConvAlgo&)>& run, size_t* chosen);

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

/** One recurrent layer in one direction (rnn_layer's contract, backends/cuda/ops/rnn.cpp) for
 *  cuDNN's RNN API: x [L, N, I] and y [L, N, H] sequence-major, every sequence L steps long,
 *  and the states [1, N, H]. */
struct RnnPlan {
  RnnDesc rnn;
  RnnDataDesc x, y;
  TensorDesc state;
  std::vector<int32_t> lengths;  // N copies of L: the sequence lengths, for the device's copy
  int gates = 4;                 // G: 4 for the LSTM, 3 for the GRU
};
/** Plans an LSTM (`lstm`) or GRU layer of `dtype` over L steps of N sequences, I input and H
 *  hidden features (each positive); `tf32`: float32 may use TF32 tensor cores. An error naming
 *  `op` when a size is beyond cuDNN's int or the dtype is not floating. */
Status plan_rnn(int32_t dtype, bool lstm, int64_t L, int64_t N, int64_t I, int64_t H, bool tf32,
                const char* op, RnnPlan* plan);

}  // namespace ember::cuda
