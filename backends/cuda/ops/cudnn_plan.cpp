#include "backends/cuda/ops/cudnn_plan.h"
#include "ember/plugin_sdk.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <string>

namespace ember::cuda {
namespace {

bool fits_int(int64_t v) {
  return v >= 0 && v <= INT_MAX;
}

constexpr const char* kBeyond32Bits = "sizes beyond 32 bits";
constexpr const char* kEmpty = "an empty tensor";

// a * b for sizes (>= 0), saturating at INT64_MAX.
int64_t mul_sat(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > INT64_MAX / b ? INT64_MAX : a * b;
}

int64_t numel3(const int64_t (&s)[4]) {
  return mul_sat(mul_sat(s[1], s[2]), s[3]);
}

std::string shape_str(const int64_t (&s)[4]) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "[%lld, %lld, %lld, %lld]", static_cast<long long>(s[0]),
                static_cast<long long>(s[1]), static_cast<long long>(s[2]),
                static_cast<long long>(s[3]));
  return buf;
}

}  // namespace

/** Runs a cuDNN planning call: a "not this case" answer sets plan->why and returns, any other
 * failure is an error. */
#define EMBER_CUDNN_PLAN(expr)                                                           \
  do {                                                                                   \
    const cudnnStatus_t ember_cudnn_st_ = (expr);                                        \
    if (ember_cudnn_st_ != CUDNN_STATUS_SUCCESS) {                                       \
      if (!declined_by_cudnn(ember_cudnn_st_))                                           \
        return ::ember::cuda::cudnn_failure(ember_cudnn_st_, #expr, __FILE__, __LINE__); \
      plan->why = cudnnGetErrorString(ember_cudnn_st_);                                  \
      return {};                                                                         \
    }                                                                                    \
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
                        TensorDesc* out, cudnnTensorFormat_t format) {
  cudnnTensorDescriptor_t t = nullptr;
  EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&t));
  *out = TensorDesc(t);
  EMBER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(t, format, data, static_cast<int>(n),
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

Status plan_conv_batch_split(const char* op, const int64_t (&x)[4], const int64_t (&y)[4],
                             const int64_t (&w)[4], int64_t limit, ConvBatchSplit* out) {
  *out = {};
  const int64_t weight = mul_sat(w[0], numel3(w));
  if (weight > limit) {
    return status_error(EMBER_ERR_UNSUPPORTED,
                        "[%s] the weight is too large for cuDNN: %s has %lld elements, cuDNN "
                        "describes at most %lld (use fewer channels or a smaller kernel)",
                        op, shape_str(w).c_str(), static_cast<long long>(weight),
                        static_cast<long long>(limit));
  }
  const int64_t n = x[0], x_sample = numel3(x), y_sample = numel3(y);
  if (n <= 0 || x_sample == 0 || y_sample == 0) return {};  // nothing for cuDNN to do
  const int64_t sample = std::max(x_sample, y_sample);
  if (sample > limit) {
    return status_error(EMBER_ERR_UNSUPPORTED,
                        "[%s] one sample is too large for cuDNN: input %s has %lld elements per "
                        "sample and output %s %lld, cuDNN describes at most %lld per tensor (the "
                        "batch is split across calls, a sample cannot be; use smaller inputs or "
                        "fewer channels)",
                        op, shape_str(x).c_str(), static_cast<long long>(x_sample),
                        shape_str(y).c_str(), static_cast<long long>(y_sample),
                        static_cast<long long>(limit));
  }
  const int64_t most = limit / sample;  // samples per call, >= 1
  out->chunks = (n + most - 1) / most;
  out->chunk = (n + out->chunks - 1) / out->chunks;  // as even as the fewest calls allow
  return {};
}

bool conv_algo_acceptable(cudnnStatus_t status, cudnnMathType_t math, int32_t dtype, bool tf32) {
  if (status != CUDNN_STATUS_SUCCESS) return false;
  if (dtype == EMBER_F32 && !tf32)
    return math != CUDNN_TENSOR_OP_MATH && math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
  return true;
}

// Note [Walking cuDNN's algorithm ranking]
// cudnnGetConvolution*Algorithm_v7 ranks every algorithm for the shape (and cudnn.benchmark
// ranks them by measured time); each needs its own workspace, from nothing to several GiB. The
// best one's workspace may not fit next to the model, while the next one runs in a few MiB, so,
// as PyTorch does, the convolution walks the ranking: each candidate gets its workspace from the
// caching allocator (which frees its cached blocks and retries before it reports out of memory)
// and runs; an out-of-memory answer, or cuDNN's "not supported" for that algorithm, moves on to
// the next candidate, any other failure is returned at once. The ranking is cached per shape and
// walked from the top on every call: the memory free for a workspace changes from call to call.
Status run_first_working_algo(const char* op, const std::vector<ConvAlgo>& candidates,
                              const std::function<Status(const ConvAlgo&)>& run, size_t* chosen) {
  if (candidates.empty()) {
    return status_error(EMBER_ERR_UNSUPPORTED,
                        "[%s] cuDNN offers no usable algorithm for this convolution: its ranking "
                        "is empty once TF32 algorithms are left out for float32 (set the option "
                        "cudnn.allow_tf32 to allow them)",
                        op);
  }
  Status last;
  for (size_t i = 0; i < candidates.size(); ++i) {
    Status s = run(candidates[i]);
    if (s.ok()) {
      *chosen = i;
      return {};
    }
    if (s.code != EMBER_ERR_OUT_OF_MEMORY && s.code != EMBER_ERR_UNSUPPORTED) return s;
    last = std::move(s);
  }
  return status_error(last.code,
                      "[%s] none of the %zu cuDNN algorithms ranked for this convolution could "
                      "run (each ran out of workspace memory or was not supported); the last "
                      "answer: %s",
                      op, candidates.size(), last.message.c_str());
}

Status plan_softmax(const ember_tensor& x, int64_t dim, SoftmaxPlan* plan) {
  if (!sdk::is_contiguous(x)) {
    plan->why = "a strided input";
    return {};
  }
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= x.sizes[d];
  for (int d = static_cast<int>(dim) + 1; d < x.ndim; ++d) inner *= x.sizes[d];
  const int64_t len = x.sizes[dim];
  if (outer == 0 || len == 0 || inner == 0) {
    plan->why = kEmpty;  // cuDNN describes no zero-sized dim; the kernel returns early anyway
    return {};
  }
  if (!fits_int(outer) || !fits_int(len) || !fits_int(inner) || outer * len * inner > INT_MAX) {
    plan->why = kBeyond32Bits;
    return {};
  }
  cudnnDataType_t data = CUDNN_DATA_FLOAT, compute = CUDNN_DATA_FLOAT;
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_types(x.dtype, "softmax", &data, &compute));
  // [outer, len, inner, 1] with CHANNEL mode: a softmax over len for every (outer, inner).
  return make_tensor_desc(data, outer, len, inner, 1, &plan->desc);
}

Status plan_avg_pool2d(const ember_tensor& x, const ember_tensor& y,
                       const attrs::avg_pool2d* window, PoolPlan* plan) {
  const int64_t n = x.sizes[0], c = x.sizes[1], ih = x.sizes[2], iw = x.sizes[3];
  const int64_t oh = y.sizes[2], ow = y.sizes[3];
  int64_t kh, kw, sh, sw, ph = 0, pw = 0;
  bool include_pad = true;
  if (!window) {
    // Adaptive windows [floor(i H / oH), ceil((i + 1) H / oH)) are the plain k = H / oH
    // windows when oH divides H.
    if (oh <= 0 || ow <= 0 || ih % oh != 0 || iw % ow != 0) {
      plan->why = "uneven adaptive windows";
      return {};
    }
    kh = sh = ih / oh;
    kw = sw = iw / ow;
  } else {
    kh = window->kernel_h, kw = window->kernel_w, sh = window->stride_h, sw = window->stride_w;
    ph = window->pad_h, pw = window->pad_w;
    include_pad = window->count_include_pad != 0;
  }
  if (n <= 0 || c <= 0 || ih <= 0 || iw <= 0 || oh <= 0 || ow <= 0) {
    plan->why = kEmpty;
    return {};
  }
  for (int64_t v : {n, c, ih, iw, oh, ow, kh, kw, sh, sw, ph, pw}) {
    if (!fits_int(v)) {
      plan->why = kBeyond32Bits;
      return {};
    }
  }
  // What cuDNN's pooling descriptor accepts (it answers BAD_PARAM otherwise, an error, Note
  // [Which cuDNN answers decline]): positive windows and strides, padding smaller than the
  // window, and a padded input at least one window long. The core's own checks (padding at most
  // half the window, a positive output size) keep every call it makes inside these.
  if (kh < 1 || kw < 1 || sh < 1 || sw < 1 || ph < 0 || pw < 0 || ph >= kh || pw >= kw ||
      ih + 2 * ph < kh || iw + 2 * pw < kw) {
    plan->why = "a window cuDNN cannot describe";
    return {};
  }
  if (n * c * ih * iw > INT_MAX || n * c * oh * ow > INT_MAX) {
    plan->why = kBeyond32Bits;
    return {};
  }
  cudnnDataType_t data = CUDNN_DATA_FLOAT, compute = CUDNN_DATA_FLOAT;
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_types(x.dtype, "avg_pool2d", &data, &compute));
  cudnnPoolingDescriptor_t p = nullptr;
  EMBER_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&p));
  plan->pool = PoolDesc(p);
  EMBER_CUDNN_PLAN(cudnnSetPooling2dDescriptor(
      p,
      include_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                  : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
      CUDNN_PROPAGATE_NAN, static_cast<int>(kh), static_cast<int>(kw), static_cast<int>(ph),
      static_cast<int>(pw), static_cast<int>(sh), static_cast<int>(sw)));
  EMBER_CUDA_RETURN_IF_ERROR(make_tensor_desc(data, n, c, ih, iw, &plan->x));
  EMBER_CUDA_RETURN_IF_ERROR(make_tensor_desc(data, n, c, oh, ow, &plan->y));
  // cuDNN forms the floor-mode windows. A ceil-mode output with an extra, clipped window has
  // a divisor cuDNN does not compute as PyTorch does; a ceil-mode output without one is the
  // floor-mode output.
  int dn = 0, dc = 0, dh = 0, dw = 0;
  EMBER_CUDNN_PLAN(cudnnGetPooling2dForwardOutputDim(p, plan->x.get(), &dn, &dc, &dh, &dw));
  if (dh != oh || dw != ow) plan->why = "ceil-mode windows";
  return {};
}

Status plan_batch_norm(const ember_tensor& x, bool training, bool backward, double eps,
                       BatchNormPlan* plan) {
  if (backward && !training) {
    plan->why = "the eval-mode backward";  // cuDNN's backward differentiates batch statistics
    return {};
  }
  const int64_t n = x.sizes[0], c = x.sizes[1], s = x.sizes[2];
  if (n == 0 || c == 0 || s == 0) {
    plan->why = kEmpty;
    return {};
  }
  if (!fits_int(n) || !fits_int(c) || !fits_int(s) || n * c * s > INT_MAX) {
    plan->why = kBeyond32Bits;
    return {};
  }
  if (!(eps >= CUDNN_BN_MIN_EPSILON)) {
    plan->why = "epsilon below cuDNN's minimum";
    return {};
  }
  if (training && n * s < 2) {
    plan->why = "one value per channel";
    return {};
  }
  cudnnDataType_t data = CUDNN_DATA_FLOAT, compute = CUDNN_DATA_FLOAT;
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_types(x.dtype, "batch_norm", &data, &compute));
  EMBER_CUDA_RETURN_IF_ERROR(make_tensor_desc(data, n, c, s, 1, &plan->x));
  cudnnTensorDescriptor_t t = nullptr;
  EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&t));
  plan->param = TensorDesc(t);
  EMBER_CUDNN_PLAN(cudnnDeriveBNTensorDescriptor(t, plan->x.get(), CUDNN_BATCHNORM_SPATIAL));
  cudnnDataType_t ptype = CUDNN_DATA_FLOAT;
  int dims[4], strides[4];
  EMBER_CUDNN_CHECK(cudnnGetTensor4dDescriptor(t, &ptype, &dims[0], &dims[1], &dims[2], &dims[3],
                                               &strides[0], &strides[1], &strides[2], &strides[3]));
  if (ptype == CUDNN_DATA_DOUBLE) {
    plan->param_dtype = EMBER_F64;
  } else if (ptype == CUDNN_DATA_FLOAT) {
    plan->param_dtype = EMBER_F32;
  } else {
    plan->why = "an unexpected parameter type";
  }
  return {};
}

// Note [cuDNN's RNN descriptors]
// A layer is cuDNN's standard algorithm over one unidirectional layer with linear input (cuDNN
// multiplies x by w_ih itself) and two bias vectors, exactly PyTorch's equations for the LSTM
// and the GRU (cuDNN's GRU applies r to w_hh h + b_hh, as PyTorch does). No dropout descriptor:
// dropout between layers is nn's, and a single layer has none. Sequences are all L steps long
// (no packing), sequence-major, so x, y and the states are the contract's contiguous tensors.
// Math as the convolutions' (Note [TF32 in cuDNN convolutions] in conv.cpp): float32 FMA only
// unless TF32 is allowed, tensor cores for the half types, float compute for them.
Status plan_rnn(int32_t dtype, bool lstm, int64_t L, int64_t N, int64_t I, int64_t H, bool tf32,
                const char* op, RnnPlan* plan) {
  cudnnDataType_t data = CUDNN_DATA_FLOAT, compute = CUDNN_DATA_FLOAT;
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_types(dtype, op, &data, &compute));
  const int64_t G = lstm ? 4 : 3;
  // cuDNN's sizes are int; its tensors must also be describable (L N max(I, G H) elements).
  if (L <= 0 || N <= 0 || I <= 0 || H <= 0 || L > INT_MAX || N > INT_MAX || I > INT_MAX ||
      G * H > INT_MAX || L * N > kCudnnMaxElements / std::max(I, G * H)) {
    return status_error(
        EMBER_ERR_INVALID,
        "[cuda] %s: steps %lld, batch %lld, input %lld, hidden %lld are beyond what "
        "cuDNN's RNN describes (int sizes, at most %lld elements per tensor)",
        op, static_cast<long long>(L), static_cast<long long>(N), static_cast<long long>(I),
        static_cast<long long>(H), static_cast<long long>(kCudnnMaxElements));
  }
  plan->gates = static_cast<int>(G);
  const cudnnMathType_t math = dtype == EMBER_F32   ? (tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH)
                               : dtype == EMBER_F64 ? CUDNN_DEFAULT_MATH
                                                    : CUDNN_TENSOR_OP_MATH;
  cudnnRNNDescriptor_t r = nullptr;
  EMBER_CUDNN_CHECK(cudnnCreateRNNDescriptor(&r));
  plan->rnn = RnnDesc(r);
  const auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  EMBER_CUDNN_CHECK(cudnnSetRNNDescriptor_v8(
      r, CUDNN_RNN_ALGO_STANDARD, lstm ? CUDNN_LSTM : CUDNN_GRU, CUDNN_RNN_DOUBLE_BIAS,
      CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, data, compute, math, i32(I), i32(H), i32(H),
      /*numLayers=*/1, /*dropoutDesc=*/nullptr, CUDNN_RNN_PADDED_IO_DISABLED));
  plan->lengths.assign(static_cast<size_t>(N), i32(L));
  const auto data_desc = [&](int64_t features, RnnDataDesc* out) -> Status {
    cudnnRNNDataDescriptor_t d = nullptr;
    EMBER_CUDNN_CHECK(cudnnCreateRNNDataDescriptor(&d));
    *out = RnnDataDesc(d);
    // No padding fill: every sequence is L steps long, so there is no padding.
    EMBER_CUDNN_CHECK(cudnnSetRNNDataDescriptor(d, data, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED,
                                                i32(L), i32(N), i32(features), plan->lengths.data(),
                                                nullptr));
    return {};
  };
  EMBER_CUDA_RETURN_IF_ERROR(data_desc(I, &plan->x));
  EMBER_CUDA_RETURN_IF_ERROR(data_desc(H, &plan->y));
  cudnnTensorDescriptor_t t = nullptr;
  EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&t));
  plan->state = TensorDesc(t);
  const int dims[3] = {1, i32(N), i32(H)}, strides[3] = {i32(N * H), i32(H), 1};
  EMBER_CUDNN_CHECK(cudnnSetTensorNdDescriptor(t, data, 3, dims, strides));
  return {};
}

}  // namespace ember::cuda
