// cuDNN paths of batch norm, softmax and average pooling: the plans of cudnn_plan.cpp carried
// out on the kernel's stream. The kernel contracts are those of the own kernels (norm.cu,
// softmax.cu, pool.cu), which validate the call before asking here.
#include "backends/cuda/ops/cudnn_ops.h"

#include <cstdio>
#include <mutex>

#include "backends/cuda/device.h"
#include "backends/cuda/ops/cudnn_plan.h"
#include "backends/cuda/ops/ops.h"
#include "backends/cuda/options.h"

namespace ember::cuda {

// Note [cuDNN where own kernels exist too]
// Batch norm, softmax and average pooling have two implementations: cuDNN's, used by default
// (option cudnn.enabled, PyTorch's torch.backends.cudnn.enabled), and own kernels that
// reproduce the CPU plugin's loops. A cuDNN path declines, and the own kernel runs, when
//  - the option is off;
//  - the case is outside what cuDNN computes with the same meaning: a strided softmax input,
//    ceil-mode or uneven adaptive pooling windows, the eval-mode batch norm backward (cuDNN's
//    backward always differentiates the batch statistics), sizes beyond 32 bits, empty
//    tensors, windows cuDNN's descriptors do not take;
//  - cuDNN says it does not support the dtype or shape (CUDNN_STATUS_NOT_SUPPORTED or one of
//    its sub-codes about the case, given before any work is queued). Any other cuDNN answer,
//    BAD_PARAM and a broken installation included, is an error with cuDNN's message (Note
//    [Which cuDNN answers decline] in check.cpp).
// Every decline while enabled counts in the read-only option cudnn.fallbacks and the first few
// are logged at debug level, so a test can tell which implementation ran. Max pooling always
// runs its own kernel: the core's backward needs PyTorch's indices, which cuDNN does not
// return. Both implementations agree with the CPU within the GPU suite's per-dtype tolerances:
// cuDNN accumulates in float for float32 and the half types, the own kernels in double.

namespace {

bool enabled() {
  return options().cudnn_enabled.load(std::memory_order_relaxed);
}

// Declines the call (Note [cuDNN where own kernels exist too]).
Status decline(const char* op, const char* why, bool* done) {
  *done = false;
  const uint64_t n = options().cudnn_fallbacks.fetch_add(1, std::memory_order_relaxed);
  if (n < 8) {
    char msg[256];
    std::snprintf(msg, sizeof(msg), "[cuda] %s: own kernel instead of cuDNN (%s)", op, why);
    log(0, msg);
  }
  return {};
}

// A 1-d tensor of `c` elements at `data`, for launch_copy's conversions.
struct Vec {
  int64_t size, stride = 1;
  ember_tensor t;
  Vec(void* data, int32_t dtype, int64_t c, int index) : size(c) {
    t = ember_tensor{data, dtype, 1, &size, &stride, 0, index};
  }
};

// Copies `c` elements from `src` (dtype `from`) to `dst` (dtype `to`), converting.
Status convert(void* dst, int32_t to, const void* src, int32_t from, int64_t c, int index,
               cudaStream_t stream) {
  const Vec d(dst, to, c, index), s(const_cast<void*>(src), from, c, index);
  return launch_copy(d.t, s.t, stream);
}

}  // namespace

/** Runs a cuDNN call; a "not this case" answer (given before any work is queued) declines,
 * any other failure is an error. Needs `op` and `done` in scope. */
#define EMBER_CUDNN_OR_DECLINE(expr)                                                   \
  do {                                                                                 \
    const cudnnStatus_t ember_cudnn_st_ = (expr);                                      \
    if (ember_cudnn_st_ != CUDNN_STATUS_SUCCESS) {                                     \
      if (declined_by_cudnn(ember_cudnn_st_))                                          \
        return decline(op, cudnnGetErrorString(ember_cudnn_st_), done);                \
      return ::ember::cuda::cudnn_failure(ember_cudnn_st_, #expr, __FILE__, __LINE__); \
    }                                                                                  \
  } while (0)

Status cudnn_softmax(const ember_kernel_call* call, int64_t dim, bool log, cudaStream_t stream,
                     bool* done) {
  *done = false;
  if (!enabled()) return {};
  const char* op = log ? "log_softmax" : "softmax";
  const ember_tensor &x = call->inputs[0], &y = call->outputs[0];
  SoftmaxPlan plan;
  EMBER_CUDA_RETURN_IF_ERROR(plan_softmax(x, dim, &plan));
  if (plan.why) return decline(op, plan.why, done);
  cudnnHandle_t h = nullptr;
  std::unique_lock<std::mutex> lock;
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_handle(y.device_index, stream, &h, &lock));
  const Blend b = blend_for(x.dtype);
  note_launch(op);
  EMBER_CUDNN_OR_DECLINE(cudnnSoftmaxForward(h, log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                             CUDNN_SOFTMAX_MODE_CHANNEL, b.one, plan.desc.get(),
                                             x.data, b.zero, plan.desc.get(), y.data));
  *done = true;
  return {};
}

Status cudnn_avg_pool2d(const ember_kernel_call* call, const attrs::avg_pool2d* window,
                        bool backward, cudaStream_t stream, bool* done) {
  *done = false;
  if (!enabled()) return {};
  const bool adaptive = window == nullptr;
  const char* op = adaptive ? (backward ? "adaptive_avg_pool2d_backward" : "adaptive_avg_pool2d")
                            : (backward ? "avg_pool2d_backward" : "avg_pool2d");
  const ember_tensor &src = call->inputs[0], &dst = call->outputs[0];
  PoolPlan plan;  // x: the input side [N, C, H, W]; y: the output side [N, C, oH, oW]
  EMBER_CUDA_RETURN_IF_ERROR(
      plan_avg_pool2d(backward ? dst : src, backward ? src : dst, window, &plan));
  if (plan.why) return decline(op, plan.why, done);
  cudnnHandle_t h = nullptr;
  std::unique_lock<std::mutex> lock;
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_handle(dst.device_index, stream, &h, &lock));
  const Blend b = blend_for(src.dtype);
  note_launch(op);
  if (!backward) {
    EMBER_CUDNN_OR_DECLINE(cudnnPoolingForward(h, plan.pool.get(), b.one, plan.x.get(), src.data,
                                               b.zero, plan.y.get(), dst.data));
  } else {
    // Average pooling's gradient reads dy only; y and x (which max pooling needs) are passed
    // as dy and dx, valid memory of their shapes.
    EMBER_CUDNN_OR_DECLINE(cudnnPoolingBackward(h, plan.pool.get(), b.one, plan.y.get(), src.data,
                                                plan.y.get(), src.data, plan.x.get(), dst.data,
                                                b.zero, plan.x.get(), dst.data));
  }
  *done = true;
  return {};
}

// Note [Batch norm through cuDNN]
// The core's contract hands batch statistics back as outputs in x's dtype (mean and biased
// variance, from which it updates the running statistics itself) and gives them to the
// backward. cuDNN keeps per-channel parameters and statistics in float (double for float64)
// and reports the batch statistics only as running averages. So:
//  - training forward: cudnnBatchNormalizationForwardTraining with averaging factor 1 on
//    zeroed buffers leaves exactly the batch mean and the unbiased batch variance there (the
//    running variance cuDNN keeps, as PyTorch's, is unbiased); one small kernel writes the mean
//    and var * (m - 1) / m in x's dtype, m = N * S values per channel;
//  - eval forward: cudnnBatchNormalizationForwardInference with the given statistics;
//  - training backward: cudnnBatchNormalizationBackward, given the saved mean and
//    1 / sqrt(var + eps) that a small kernel derives from the op's statistics;
//  - float16 and bfloat16 parameters and parameter gradients are converted to and from float.
// x is viewed as NCHW [N, C, S, 1], statistics per channel (CUDNN_BATCHNORM_SPATIAL).
Status cudnn_batch_norm(const ember_kernel_call* call, bool training, double eps, bool backward,
                        cudaStream_t stream, bool* done) {
  *done = false;
  if (!enabled()) return {};
  const char* op = backward ? "batch_norm_backward" : "batch_norm";
  const ember_tensor* in = call->inputs;
  const ember_tensor* out = call->outputs;
  const ember_tensor& x = in[backward ? 1 : 0];
  const int64_t n = x.sizes[0], c = x.sizes[1], s = x.sizes[2];
  BatchNormPlan plan;
  EMBER_CUDA_RETURN_IF_ERROR(plan_batch_norm(x, training, backward, eps, &plan));
  if (plan.why) return decline(op, plan.why, done);
  // The statistics kernels (norm.cu) work in double for float64 and float otherwise, which is
  // what cuDNN derives (checked in CI by cudnn_plan_test).
  if (plan.param_dtype != (x.dtype == EMBER_F64 ? EMBER_F64 : EMBER_F32)) {
    return decline(op, "an unexpected parameter type", done);
  }
  const int index = out[0].device_index;

  // Per-channel scratch in the parameter type: weight, bias, mean, var (or invstd), dw, db.
  const int32_t ptype = plan.param_dtype;
  const bool same = ptype == x.dtype;  // parameters can be used in place
  const size_t pitem = ptype == EMBER_F64 ? 8 : 4;
  DeviceBuffer scratch;
  EMBER_CUDA_RETURN_IF_ERROR(scratch.allocate(index, 6 * static_cast<size_t>(c) * pitem, stream));
  auto slot = [&](int i) {
    return static_cast<void*>(static_cast<char*>(scratch.get()) + i * c * pitem);
  };
  // The parameter-typed version of input `i`, in slot `k` when it needs converting.
  auto param = [&](int i, int k, const void** p) -> Status {
    if (same) {
      *p = in[i].data;
      return {};
    }
    *p = slot(k);
    return convert(slot(k), ptype, in[i].data, x.dtype, c, index, stream);
  };
  cudnnHandle_t h = nullptr;
  std::unique_lock<std::mutex> lock;
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_handle(index, stream, &h, &lock));
  const Blend b = blend_for(x.dtype);
  const void *scale = nullptr, *bias = nullptr;

  if (backward) {  // {dy, x, weight, mean, var} -> {dx, dweight, dbias}
    EMBER_CUDA_RETURN_IF_ERROR(param(2, 0, &scale));
    EMBER_CUDA_RETURN_IF_ERROR(launch_bn_stats_to_cudnn(x.dtype, in[3].data, in[4].data, c, eps,
                                                        slot(2), slot(3), stream));
    void* dw = same ? out[1].data : slot(4);
    void* db = same ? out[2].data : slot(5);
    note_launch(op);
    EMBER_CUDNN_OR_DECLINE(cudnnBatchNormalizationBackward(
        h, CUDNN_BATCHNORM_SPATIAL, b.one, b.zero, b.one, b.zero, plan.x.get(), x.data,
        plan.x.get(), in[0].data, plan.x.get(), out[0].data, plan.param.get(), scale, dw, db, eps,
        slot(2), slot(3)));
    if (!same) {
      EMBER_CUDA_RETURN_IF_ERROR(convert(out[1].data, x.dtype, dw, ptype, c, index, stream));
      EMBER_CUDA_RETURN_IF_ERROR(convert(out[2].data, x.dtype, db, ptype, c, index, stream));
    }
  } else if (training) {  // {x, weight, bias} -> {y, mean, var}
    EMBER_CUDA_RETURN_IF_ERROR(param(1, 0, &scale));
    EMBER_CUDA_RETURN_IF_ERROR(param(2, 1, &bias));
    void* mean = same ? out[1].data : slot(2);
    void* var = same ? out[2].data : slot(3);
    // Factor 1 gives new = batch * 1 + old * 0: the old contents must not be NaN.
    EMBER_CUDA_CHECK(cudaMemsetAsync(mean, 0, c * pitem, stream));
    EMBER_CUDA_CHECK(cudaMemsetAsync(var, 0, c * pitem, stream));
    note_launch(op);
    EMBER_CUDNN_OR_DECLINE(cudnnBatchNormalizationForwardTraining(
        h, CUDNN_BATCHNORM_SPATIAL, b.one, b.zero, plan.x.get(), x.data, plan.x.get(), out[0].data,
        plan.param.get(), scale, bias, 1.0, mean, var, eps, nullptr, nullptr));
    EMBER_CUDA_RETURN_IF_ERROR(
        launch_bn_stats_from_cudnn(x.dtype, mean, var, c, n * s, out[1].data, out[2].data, stream));
  } else {  // {x, weight, bias, mean, var} -> {y}
    const void *mean = nullptr, *var = nullptr;
    EMBER_CUDA_RETURN_IF_ERROR(param(1, 0, &scale));
    EMBER_CUDA_RETURN_IF_ERROR(param(2, 1, &bias));
    EMBER_CUDA_RETURN_IF_ERROR(param(3, 2, &mean));
    EMBER_CUDA_RETURN_IF_ERROR(param(4, 3, &var));
    note_launch(op);
    EMBER_CUDNN_OR_DECLINE(cudnnBatchNormalizationForwardInference(
        h, CUDNN_BATCHNORM_SPATIAL, b.one, b.zero, plan.x.get(), x.data, plan.x.get(), out[0].data,
        plan.param.get(), scale, bias, mean, var, eps));
  }
  *done = true;
  return {};
}

}  // namespace ember::cuda
