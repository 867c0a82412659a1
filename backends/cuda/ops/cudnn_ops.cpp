// cuDNN paths of batch norm, softmax and average pooling, and the descriptor pieces shared
// with conv.cpp. The kernel contracts are those of the own kernels (norm.cu, softmax.cu,
// pool.cu), which validate the call before asking here.
#include "backends/cuda/ops/cudnn_ops.h"

#include <climits>
#include <cstdio>
#include <mutex>

#include "backends/cuda/device.h"
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
//    backward always differentiates the batch statistics), sizes beyond 32 bits;
//  - cuDNN rejects the dtype or shape (a CUDNN_STATUS_NOT_SUPPORTED* or CUDNN_STATUS_BAD_PARAM*
//    answer, given before any work is queued).
// Every decline while enabled counts in the read-only option cudnn.fallbacks and the first few
// are logged at debug level, so a test can tell which implementation ran. Max pooling always
// runs its own kernel: the core's backward needs PyTorch's indices, which cuDNN does not
// return. Both implementations agree with the CPU within the GPU suite's per-dtype tolerances:
// cuDNN accumulates in float for float32 and the half types, the own kernels in double.

namespace {

bool enabled() {
  return options().cudnn_enabled.load(std::memory_order_relaxed);
}

bool fits_int(int64_t v) {
  return v >= 0 && v <= INT_MAX;
}

bool dense(const ember_tensor& t) {
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.sizes[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
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

// cuDNN's "not this case" answers: NOT_SUPPORTED* (3xxx) and BAD_PARAM* (2xxx).
bool declined_by_cudnn(cudnnStatus_t s) {
  const int category = static_cast<int>(s) / 1000;
  return category == 2 || category == 3;
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

/** Runs a cuDNN call; a "not this case" answer declines (returns from the enclosing path with
 * `*done` false), any other failure is an error. Needs `op` and `done` in scope. */
#define EMBER_CUDNN_OR_DECLINE(expr)                                                   \
  do {                                                                                 \
    const cudnnStatus_t ember_cudnn_st_ = (expr);                                      \
    if (ember_cudnn_st_ != CUDNN_STATUS_SUCCESS) {                                     \
      if (declined_by_cudnn(ember_cudnn_st_))                                          \
        return decline(op, cudnnGetErrorString(ember_cudnn_st_), done);                \
      return ::ember::cuda::cudnn_failure(ember_cudnn_st_, #expr, __FILE__, __LINE__); \
    }                                                                                  \
  } while (0)

Status cudnn_types(int32_t dtype, const char* op, cudnnDataType_t* data, cudnnDataType_t* compute) {
  switch (dtype) {
    case EMBER_F32:
      *data = CUDNN_DATA_FLOAT, *compute = CUDNN_DATA_FLOAT;
      return {};
    case EMBER_F64:
      *data = CUDNN_DATA_DOUBLE, *compute = CUDNN_DATA_DOUBLE;
      return {};
    case EMBER_F16:
      *data = CUDNN_DATA_HALF, *compute = CUDNN_DATA_FLOAT;
      return {};
    case EMBER_BF16:
      *data = CUDNN_DATA_BFLOAT16, *compute = CUDNN_DATA_FLOAT;
      return {};
    default:
      return status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d is not supported", op, dtype);
  }
}

Status make_tensor_desc(cudnnDataType_t data, int64_t n, int64_t c, int64_t h, int64_t w,
                        TensorDesc* out) {
  cudnnTensorDescriptor_t t = nullptr;
  EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&t));
  *out = TensorDesc(t);
  EMBER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, data, static_cast<int>(n),
                                               static_cast<int>(c), static_cast<int>(h),
                                               static_cast<int>(w)));
  return {};
}

Blend blend_for(int32_t dtype) {
  static const float one_f = 1.0f, zero_f = 0.0f;
  static const double one_d = 1.0, zero_d = 0.0;
  if (dtype == EMBER_F64) return {&one_d, &zero_d};
  return {&one_f, &zero_f};
}

Status cudnn_softmax(const ember_kernel_call* call, bool log, bool* done) {
  *done = false;
  if (!enabled()) return {};
  const char* op = log ? "log_softmax" : "softmax";
  const ember_tensor &x = call->inputs[0], &y = call->outputs[0];
  const int64_t dim = call->ints[0];
  if (!dense(x)) return decline(op, "a strided input", done);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= x.sizes[d];
  for (int d = static_cast<int>(dim) + 1; d < x.ndim; ++d) inner *= x.sizes[d];
  const int64_t len = x.sizes[dim];
  if (!fits_int(outer) || !fits_int(len) || !fits_int(inner) || outer * len * inner > INT_MAX) {
    return decline(op, "sizes beyond 32 bits", done);
  }
  cudnnDataType_t data = CUDNN_DATA_FLOAT, compute = CUDNN_DATA_FLOAT;
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_types(x.dtype, op, &data, &compute));
  TensorDesc desc;
  EMBER_CUDA_RETURN_IF_ERROR(make_tensor_desc(data, outer, len, inner, 1, &desc));
  cudnnHandle_t h = nullptr;
  std::unique_lock<std::mutex> lock;
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_handle(y.device_index, &h, &lock));
  const Blend b = blend_for(x.dtype);
  // [outer, len, inner, 1] with CHANNEL mode: a softmax over len for every (outer, inner).
  note_launch(op);
  EMBER_CUDNN_OR_DECLINE(cudnnSoftmaxForward(h, log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                             CUDNN_SOFTMAX_MODE_CHANNEL, b.one, desc.get(), x.data,
                                             b.zero, desc.get(), y.data));
  *done = true;
  return {};
}

namespace {
using PoolDesc = UniqueHandle<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;
}  // namespace

Status cudnn_avg_pool2d(const ember_kernel_call* call, bool adaptive, bool backward, bool* done) {
  *done = false;
  if (!enabled()) return {};
  const char* op = adaptive ? (backward ? "adaptive_avg_pool2d_backward" : "adaptive_avg_pool2d")
                            : (backward ? "avg_pool2d_backward" : "avg_pool2d");
  const ember_tensor &src = call->inputs[0], &dst = call->outputs[0];
  const ember_tensor& x = backward ? dst : src;  // the input side [N, C, H, W]
  const ember_tensor& y = backward ? src : dst;  // the output side [N, C, oH, oW]
  const int64_t n = x.sizes[0], c = x.sizes[1], ih = x.sizes[2], iw = x.sizes[3];
  const int64_t oh = y.sizes[2], ow = y.sizes[3];
  int64_t kh, kw, sh, sw, ph = 0, pw = 0;
  bool include_pad = true;
  if (adaptive) {
    // Windows [floor(i H / oH), ceil((i + 1) H / oH)) are the plain k = H / oH windows when oH
    // divides H.
    if (oh <= 0 || ow <= 0 || ih % oh != 0 || iw % ow != 0) {
      return decline(op, "uneven adaptive windows", done);
    }
    kh = sh = ih / oh;
    kw = sw = iw / ow;
  } else {
    const int64_t* a = call->ints;
    kh = a[0], kw = a[1], sh = a[2], sw = a[3], ph = a[4], pw = a[5], include_pad = a[6] != 0;
  }
  for (int64_t v : {n, c, ih, iw, oh, ow, kh, kw, sh, sw, ph, pw}) {
    if (!fits_int(v)) return decline(op, "sizes beyond 32 bits", done);
  }
  if (n * c * ih * iw > INT_MAX || n * c * oh * ow > INT_MAX) {
    return decline(op, "sizes beyond 32 bits", done);
  }
  cudnnDataType_t data = CUDNN_DATA_FLOAT, compute = CUDNN_DATA_FLOAT;
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_types(x.dtype, op, &data, &compute));
  cudnnPoolingDescriptor_t p = nullptr;
  EMBER_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&p));
  const PoolDesc pool(p);
  EMBER_CUDNN_OR_DECLINE(cudnnSetPooling2dDescriptor(
      p,
      include_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                  : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
      CUDNN_PROPAGATE_NAN, static_cast<int>(kh), static_cast<int>(kw), static_cast<int>(ph),
      static_cast<int>(pw), static_cast<int>(sh), static_cast<int>(sw)));
  TensorDesc xd, yd;
  EMBER_CUDA_RETURN_IF_ERROR(make_tensor_desc(data, n, c, ih, iw, &xd));
  EMBER_CUDA_RETURN_IF_ERROR(make_tensor_desc(data, n, c, oh, ow, &yd));
  // cuDNN's windows are the floor-mode ones; a ceil-mode output has an extra, clipped window
  // whose divisor cuDNN does not compute as PyTorch does.
  int dn = 0, dc = 0, dh = 0, dw = 0;
  EMBER_CUDNN_OR_DECLINE(cudnnGetPooling2dForwardOutputDim(p, xd.get(), &dn, &dc, &dh, &dw));
  if (dh != oh || dw != ow) return decline(op, "ceil-mode windows", done);
  cudnnHandle_t h = nullptr;
  std::unique_lock<std::mutex> lock;
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_handle(dst.device_index, &h, &lock));
  const Blend b = blend_for(x.dtype);
  note_launch(op);
  if (!backward) {
    EMBER_CUDNN_OR_DECLINE(
        cudnnPoolingForward(h, p, b.one, xd.get(), src.data, b.zero, yd.get(), dst.data));
  } else {
    // Average pooling's gradient reads dy only; y and x (which max pooling needs) are passed
    // as dy and dx, valid memory of their shapes.
    EMBER_CUDNN_OR_DECLINE(cudnnPoolingBackward(h, p, b.one, yd.get(), src.data, yd.get(), src.data,
                                                xd.get(), dst.data, b.zero, xd.get(), dst.data));
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
Status cudnn_batch_norm(const ember_kernel_call* call, bool backward, bool* done) {
  *done = false;
  if (!enabled()) return {};
  const char* op = backward ? "batch_norm_backward" : "batch_norm";
  const bool training = call->ints[0] != 0;
  if (backward && !training) return decline(op, "the eval-mode backward", done);
  const ember_tensor* in = call->inputs;
  const ember_tensor* out = call->outputs;
  const ember_tensor& x = in[backward ? 1 : 0];
  const int64_t n = x.sizes[0], c = x.sizes[1], s = x.sizes[2];
  const double eps = call->floats[0];
  if (!fits_int(n) || !fits_int(c) || !fits_int(s) || n * c * s > INT_MAX) {
    return decline(op, "sizes beyond 32 bits", done);
  }
  if (!(eps >= CUDNN_BN_MIN_EPSILON)) return decline(op, "epsilon below cuDNN's minimum", done);
  if (training && n * s < 2) return decline(op, "one value per channel", done);
  cudnnDataType_t data = CUDNN_DATA_FLOAT, compute = CUDNN_DATA_FLOAT;
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_types(x.dtype, op, &data, &compute));
  const int index = out[0].device_index;
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
  EMBER_CUDA_RETURN_IF_ERROR(current_stream(index, &stream));
  TensorDesc xd, pd;
  EMBER_CUDA_RETURN_IF_ERROR(make_tensor_desc(data, n, c, s, 1, &xd));
  cudnnTensorDescriptor_t t = nullptr;
  EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&t));
  pd = TensorDesc(t);
  EMBER_CUDNN_OR_DECLINE(cudnnDeriveBNTensorDescriptor(t, xd.get(), CUDNN_BATCHNORM_SPATIAL));

  // Per-channel scratch in the parameter type: weight, bias, mean, var (or invstd), dw, db.
  const int32_t ptype = x.dtype == EMBER_F64 ? EMBER_F64 : EMBER_F32;
  const bool same = ptype == x.dtype;  // parameters can be used in place
  const size_t pitem = ptype == EMBER_F64 ? 8 : 4;
  DeviceBuffer scratch;
  EMBER_CUDA_RETURN_IF_ERROR(scratch.allocate(index, 6 * static_cast<size_t>(c) * pitem));
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
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_handle(index, &h, &lock));
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
        h, CUDNN_BATCHNORM_SPATIAL, b.one, b.zero, b.one, b.zero, xd.get(), x.data, xd.get(),
        in[0].data, xd.get(), out[0].data, pd.get(), scale, dw, db, eps, slot(2), slot(3)));
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
        h, CUDNN_BATCHNORM_SPATIAL, b.one, b.zero, xd.get(), x.data, xd.get(), out[0].data,
        pd.get(), scale, bias, 1.0, mean, var, eps, nullptr, nullptr));
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
        h, CUDNN_BATCHNORM_SPATIAL, b.one, b.zero, xd.get(), x.data, xd.get(), out[0].data,
        pd.get(), scale, bias, mean, var, eps));
  }
  *done = true;
  return {};
}

}  // namespace ember::cuda
