// The cuDNN paths' plans (backends/cuda/ops/cudnn_plan.cpp) against the real cuDNN library, with
// no GPU: descriptor setup needs neither a device nor a handle. These decide which softmax,
// average pooling and batch norm calls cuDNN takes (Note [cuDNN where own kernels exist too]);
// the pooling windows are checked against PyTorch's output-size rule written out here. Also:
// which cuDNN answers decline (Note [Which cuDNN answers decline]), how convolutions split
// their batch (Note [Convolutions in batch chunks]) and walk cuDNN's algorithm ranking (Note
// [Walking cuDNN's algorithm ranking]), and the RNN descriptors of a recurrent layer (Note
// [cuDNN's RNN descriptors]).
#include "backends/cuda/ops/cudnn_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace ember::cuda {
namespace {

// An ember_tensor without data, dense unless `strides` are given.
struct Shape {
  std::vector<int64_t> sizes, strides;
  ember_tensor t{};
  explicit Shape(std::vector<int64_t> s, int32_t dtype = EMBER_F32, std::vector<int64_t> st = {})
      : sizes(std::move(s)), strides(std::move(st)) {
    if (strides.empty()) {
      strides.assign(sizes.size(), 1);
      for (int d = static_cast<int>(sizes.size()) - 2; d >= 0; --d) {
        strides[d] = strides[d + 1] * sizes[d + 1];
      }
    }
    t = ember_tensor{
        nullptr, dtype, static_cast<int32_t>(sizes.size()), sizes.data(), strides.data(), 0, 0};
  }
};

struct Dims {
  cudnnDataType_t type;
  int n, c, h, w;
};

Dims dims_of(cudnnTensorDescriptor_t d) {
  Dims r{};
  int s[4];
  EXPECT_EQ(
      cudnnGetTensor4dDescriptor(d, &r.type, &r.n, &r.c, &r.h, &r.w, &s[0], &s[1], &s[2], &s[3]),
      CUDNN_STATUS_SUCCESS);
  return r;
}

const int32_t kFloating[] = {EMBER_F32, EMBER_F64, EMBER_F16, EMBER_BF16};

TEST(CudnnPlan, SoftmaxViewsTheDimAsChannelsBetweenOuterAndInner) {
  const cudnnDataType_t types[] = {CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE, CUDNN_DATA_HALF,
                                   CUDNN_DATA_BFLOAT16};
  for (int i = 0; i < 4; ++i) {
    const Shape x({6, 50, 7}, kFloating[i]);
    struct Want {
      int64_t dim;
      int n, c, h;
    };
    for (const Want& want : {Want{0, 1, 6, 350}, Want{1, 6, 50, 7}, Want{2, 300, 7, 1}}) {
      SoftmaxPlan plan;
      ASSERT_TRUE(plan_softmax(x.t, want.dim, &plan).ok());
      ASSERT_EQ(plan.why, nullptr);
      const Dims d = dims_of(plan.desc.get());
      EXPECT_EQ(d.type, types[i]);
      EXPECT_EQ(d.n, want.n) << want.dim;
      EXPECT_EQ(d.c, want.c) << want.dim;
      EXPECT_EQ(d.h, want.h) << want.dim;
      EXPECT_EQ(d.w, 1);
    }
  }
}

TEST(CudnnPlan, SoftmaxDeclinesStridedAndHugeInputs) {
  const Shape transposed({7, 50}, EMBER_F32, {1, 7});
  SoftmaxPlan a;
  ASSERT_TRUE(plan_softmax(transposed.t, 1, &a).ok());
  EXPECT_STREQ(a.why, "a strided input");
  const Shape huge({3, int64_t{1} << 30});
  SoftmaxPlan b;
  ASSERT_TRUE(plan_softmax(huge.t, 1, &b).ok());
  EXPECT_STREQ(b.why, "sizes beyond 32 bits");
  // A size-1 dim with any stride is still dense.
  const Shape column({5, 1}, EMBER_F32, {1, 99});
  SoftmaxPlan c;
  ASSERT_TRUE(plan_softmax(column.t, 0, &c).ok());
  EXPECT_EQ(c.why, nullptr);
}

// PyTorch's pooling output size (pooling_output_shape): the last window must start inside the
// input or the left padding.
int64_t pytorch_out(int64_t in, int64_t k, int64_t s, int64_t p, bool ceil) {
  const int64_t span = in + 2 * p - k;
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (out - 1) * s >= in + p) --out;
  return out;
}

TEST(CudnnPlan, AveragePoolingTakesExactlyTheFloorModeWindows) {
  int taken = 0, declined = 0;
  for (int64_t in : {5, 7, 8, 11, 12}) {
    for (int64_t k : {1, 2, 3, 4}) {
      for (int64_t s : {1, 2, 3}) {
        for (int64_t p = 0; p <= k / 2; ++p) {
          for (bool ceil : {false, true}) {
            for (bool include : {false, true}) {
              const int64_t out = pytorch_out(in, k, s, p, ceil);
              if (out <= 0) continue;
              const Shape x({2, 3, in, in + 1}, EMBER_F16);
              const int64_t out_w = pytorch_out(in + 1, k, s, p, ceil);
              const Shape y({2, 3, out, out_w}, EMBER_F16);
              attrs::avg_pool2d window;
              window.kernel_h = window.kernel_w = k;
              window.stride_h = window.stride_w = s;
              window.pad_h = window.pad_w = p;
              window.count_include_pad = include ? 1 : 0;
              PoolPlan plan;
              ASSERT_TRUE(plan_avg_pool2d(x.t, y.t, &window, &plan).ok());
              const bool floor_sized = out == pytorch_out(in, k, s, p, false) &&
                                       out_w == pytorch_out(in + 1, k, s, p, false);
              const std::string what = "in " + std::to_string(in) + " k " + std::to_string(k) +
                                       " s " + std::to_string(s) + " p " + std::to_string(p) +
                                       (ceil ? " ceil" : "");
              if (floor_sized) {
                EXPECT_EQ(plan.why, nullptr) << what << ": " << plan.why;
                ++taken;
              } else {
                EXPECT_STREQ(plan.why, "ceil-mode windows") << what;
                ++declined;
                continue;
              }
              cudnnPoolingMode_t mode;
              cudnnNanPropagation_t nan;
              int wh, ww, ph, pw, sh, sw;
              ASSERT_EQ(cudnnGetPooling2dDescriptor(plan.pool.get(), &mode, &nan, &wh, &ww, &ph,
                                                    &pw, &sh, &sw),
                        CUDNN_STATUS_SUCCESS);
              EXPECT_EQ(mode, include ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                      : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING);
              EXPECT_EQ(nan, CUDNN_PROPAGATE_NAN);
              EXPECT_EQ(wh, k);
              EXPECT_EQ(ph, p);
              EXPECT_EQ(sh, s);
              EXPECT_EQ(dims_of(plan.y.get()).h, out);
              EXPECT_EQ(dims_of(plan.x.get()).type, CUDNN_DATA_HALF);
            }
          }
        }
      }
    }
  }
  // Both kinds occur, so the test proves the decline as well as the take.
  EXPECT_GT(taken, 100);
  EXPECT_GT(declined, 10);
}

TEST(CudnnPlan, AdaptivePoolingTakesEvenlyDividedWindowsOnly) {
  const Shape x({2, 3, 12, 14});
  struct Case {
    int64_t oh, ow;
    bool taken;
  };
  for (const Case& c : {Case{1, 1, true}, Case{6, 7, true}, Case{12, 14, true}, Case{5, 7, false},
                        Case{4, 5, false}, Case{13, 14, false}}) {
    const Shape y({2, 3, c.oh, c.ow});
    PoolPlan plan;
    ASSERT_TRUE(plan_avg_pool2d(x.t, y.t, nullptr, &plan).ok());
    if (!c.taken) {
      EXPECT_STREQ(plan.why, "uneven adaptive windows") << c.oh << "x" << c.ow;
      continue;
    }
    ASSERT_EQ(plan.why, nullptr) << c.oh << "x" << c.ow;
    cudnnPoolingMode_t mode;
    cudnnNanPropagation_t nan;
    int wh, ww, ph, pw, sh, sw;
    ASSERT_EQ(
        cudnnGetPooling2dDescriptor(plan.pool.get(), &mode, &nan, &wh, &ww, &ph, &pw, &sh, &sw),
        CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(wh, 12 / c.oh);
    EXPECT_EQ(ww, 14 / c.ow);
    EXPECT_EQ(sh, wh);
    EXPECT_EQ(sw, ww);
    EXPECT_EQ(ph + pw, 0);
  }
}

TEST(CudnnPlan, BatchNormParametersAreFloatForHalfTypesAndDoubleForFloat64) {
  // cudnn_ops.cpp and the statistics kernels in norm.cu rely on exactly this mapping.
  const int32_t want[] = {EMBER_F32, EMBER_F64, EMBER_F32, EMBER_F32};
  for (int i = 0; i < 4; ++i) {
    const Shape x({4, 5, 21}, kFloating[i]);
    for (bool backward : {false, true}) {
      BatchNormPlan plan;
      ASSERT_TRUE(plan_batch_norm(x.t, /*training=*/true, backward, 1e-5, &plan).ok());
      ASSERT_EQ(plan.why, nullptr);
      EXPECT_EQ(plan.param_dtype, want[i]) << kFloating[i];
      const Dims p = dims_of(plan.param.get());
      EXPECT_EQ(p.n, 1);
      EXPECT_EQ(p.c, 5);
      EXPECT_EQ(p.h * p.w, 1);
      const Dims d = dims_of(plan.x.get());
      EXPECT_EQ(d.n, 4);
      EXPECT_EQ(d.c, 5);
      EXPECT_EQ(d.h, 21);
      EXPECT_EQ(d.w, 1);
    }
  }
}

TEST(CudnnPlan, BatchNormDeclinesWhatCudnnDoesNotComputeAlike) {
  const Shape x({4, 5, 21});
  BatchNormPlan eval_backward;
  ASSERT_TRUE(
      plan_batch_norm(x.t, /*training=*/false, /*backward=*/true, 1e-5, &eval_backward).ok());
  EXPECT_STREQ(eval_backward.why, "the eval-mode backward");
  BatchNormPlan eval_forward;
  ASSERT_TRUE(plan_batch_norm(x.t, false, false, 1e-5, &eval_forward).ok());
  EXPECT_EQ(eval_forward.why, nullptr);
  BatchNormPlan negative_eps;
  ASSERT_TRUE(plan_batch_norm(x.t, true, false, -1e-3, &negative_eps).ok());
  EXPECT_STREQ(negative_eps.why, "epsilon below cuDNN's minimum");
  const Shape single({1, 5, 1});
  BatchNormPlan one_value;
  ASSERT_TRUE(plan_batch_norm(single.t, true, false, 1e-5, &one_value).ok());
  EXPECT_STREQ(one_value.why, "one value per channel");
  const Shape huge({2, 3, int64_t{1} << 29});
  BatchNormPlan big;
  ASSERT_TRUE(plan_batch_norm(huge.t, true, false, 1e-5, &big).ok());
  EXPECT_STREQ(big.why, "sizes beyond 32 bits");
}

// Note [Which cuDNN answers decline]: only "not supported" answers about the case fall back to
// the own kernels; BAD_PARAM and a broken installation are errors with cuDNN's message.
TEST(CudnnPlan, OnlyNotSupportedAnswersAboutTheCaseDecline) {
  for (cudnnStatus_t s :
       {CUDNN_STATUS_NOT_SUPPORTED, CUDNN_STATUS_NOT_SUPPORTED_SHAPE,
        CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, CUDNN_STATUS_NOT_SUPPORTED_LAYOUT,
        CUDNN_STATUS_NOT_SUPPORTED_PADDING, CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT,
        CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH}) {
    EXPECT_TRUE(declined_by_cudnn(s)) << cudnnGetErrorString(s);
  }
  for (cudnnStatus_t s :
       {CUDNN_STATUS_SUCCESS, CUDNN_STATUS_BAD_PARAM, CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
        CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE,
        CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER,
        CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART,
        CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING, CUDNN_STATUS_NOT_INITIALIZED,
        CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED, CUDNN_STATUS_INTERNAL_ERROR,
        CUDNN_STATUS_EXECUTION_FAILED, CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED}) {
    EXPECT_FALSE(declined_by_cudnn(s)) << cudnnGetErrorString(s);
  }
}

// A real BAD_PARAM from the library: an error naming the call and cuDNN's answer, not a decline.
TEST(CudnnPlan, BadParamIsAnErrorWithCudnnsMessage) {
  cudnnTensorDescriptor_t t = nullptr;
  ASSERT_EQ(cudnnCreateTensorDescriptor(&t), CUDNN_STATUS_SUCCESS);
  const TensorDesc owned(t);
  const cudnnStatus_t st = cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 0, 3,
                                                      4, 5);  // an empty dim
  ASSERT_NE(st, CUDNN_STATUS_SUCCESS);
  EXPECT_FALSE(declined_by_cudnn(st)) << cudnnGetErrorString(st);
  const Status s = cudnn_failure(st, "cudnnSetTensor4dDescriptor(t, ...)", "/x/plan.cpp", 7);
  EXPECT_EQ(s.code, EMBER_ERR_DEVICE);
  EXPECT_NE(s.message.find("[cuda] cudnnSetTensor4dDescriptor failed: CUDNN_STATUS_BAD_PARAM"),
            std::string::npos)
      << s.message;
  EXPECT_NE(s.message.find("(plan.cpp:7)"), std::string::npos) << s.message;
  // The status codes of the other answers.
  EXPECT_EQ(cudnn_failure(CUDNN_STATUS_NOT_SUPPORTED_SHAPE, "f()", "a.cpp", 1).code,
            EMBER_ERR_UNSUPPORTED);
  EXPECT_EQ(
      cudnn_failure(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE, "f()", "a.cpp", 1).code,
      EMBER_ERR_DEVICE);
  EXPECT_EQ(
      cudnn_failure(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED, "f()", "a.cpp", 1).code,
      EMBER_ERR_OUT_OF_MEMORY);
}

// Shapes cuDNN cannot describe are declined by the plans before cuDNN is asked, so no planning
// call ever meets a BAD_PARAM (which is an error now).
TEST(CudnnPlan, EmptyTensorsAndWindowsCudnnRejectsAreDeclinedBeforeAsking) {
  SoftmaxPlan softmax;
  ASSERT_TRUE(plan_softmax(Shape({0, 7}).t, 1, &softmax).ok());
  EXPECT_STREQ(softmax.why, "an empty tensor");
  BatchNormPlan bn;
  ASSERT_TRUE(plan_batch_norm(Shape({4, 0, 3}).t, true, false, 1e-5, &bn).ok());
  EXPECT_STREQ(bn.why, "an empty tensor");
  attrs::avg_pool2d window{};
  window.kernel_h = window.kernel_w = 2;
  window.stride_h = window.stride_w = 2;
  PoolPlan empty;
  ASSERT_TRUE(plan_avg_pool2d(Shape({0, 3, 8, 8}).t, Shape({0, 3, 4, 4}).t, &window, &empty).ok());
  EXPECT_STREQ(empty.why, "an empty tensor");
  window.pad_h = 2;  // padding as large as the window
  PoolPlan padded;
  ASSERT_TRUE(plan_avg_pool2d(Shape({1, 3, 8, 8}).t, Shape({1, 3, 6, 4}).t, &window, &padded).ok());
  EXPECT_STREQ(padded.why, "a window cuDNN cannot describe");
}

// kCudnnMaxElements is cuDNN's own limit: a packed descriptor of INT_MAX elements is accepted,
// one more element is not (the convolutions split their batch at exactly this size).
TEST(CudnnPlan, TensorDescriptorsHoldAtMostIntMaxElements) {
  TensorDesc d;
  EXPECT_TRUE(make_tensor_desc(CUDNN_DATA_FLOAT, 1, 1, 1, INT_MAX, &d).ok());
  EXPECT_TRUE(make_tensor_desc(CUDNN_DATA_FLOAT, 7, 1, 1, INT_MAX / 7, &d).ok());
  const Status over = make_tensor_desc(CUDNN_DATA_FLOAT, 2, 1, 1, int64_t{1} << 30, &d);
  EXPECT_FALSE(over.ok()) << "2^31 elements in one descriptor";
  const Status per_sample = make_tensor_desc(CUDNN_DATA_FLOAT, 1, 2, 1, int64_t{1} << 30, &d);
  EXPECT_FALSE(per_sample.ok()) << "a per-sample stride of 2^31";
}

// Note [Channels-last convolutions through cuDNN]: an NHWC descriptor keeps the dims [N, C, H, W]
// and gives them a channels-last tensor's strides (a sample still C*H*W consecutive elements).
TEST(CudnnPlan, NhwcDescriptorsHaveChannelsLastStrides) {
  for (const bool nhwc : {false, true}) {
    TensorDesc d;
    ASSERT_TRUE(make_tensor_desc(CUDNN_DATA_FLOAT, 2, 3, 4, 5, &d,
                                 nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW)
                    .ok());
    cudnnDataType_t type;
    int n, c, h, w, sn, sc, sh, sw;
    ASSERT_EQ(cudnnGetTensor4dDescriptor(d.get(), &type, &n, &c, &h, &w, &sn, &sc, &sh, &sw),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(std::vector<int>({n, c, h, w}), std::vector<int>({2, 3, 4, 5}));
    const std::vector<int> strides{sn, sc, sh, sw};
    EXPECT_EQ(strides, nhwc ? std::vector<int>({60, 1, 15, 3}) : std::vector<int>({60, 20, 5, 1}))
        << (nhwc ? "NHWC" : "NCHW");
  }
}

// What cuDNN reads back from a layer's descriptors is PyTorch's layer: one unidirectional layer,
// linear input, two biases, no projection, sequence-major data of N sequences of L steps.
TEST(CudnnPlan, RnnDescriptorsDescribePyTorchsLayer) {
  struct Case {
    int32_t dtype;
    bool lstm, tf32;
    cudnnDataType_t data, compute;
    cudnnMathType_t math;
  };
  for (const Case& k :
       {Case{EMBER_F32, true, false, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH},
        Case{EMBER_F32, false, true, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH},
        Case{EMBER_F64, true, false, CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH},
        Case{EMBER_F16, false, false, CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH}}) {
    SCOPED_TRACE(std::string(k.lstm ? "LSTM " : "GRU ") + std::to_string(k.dtype));
    RnnPlan plan;
    const Status st = plan_rnn(k.dtype, k.lstm, 5, 3, 7, 11, k.tf32, "rnn_layer", &plan);
    ASSERT_TRUE(st.ok()) << st.message;
    EXPECT_EQ(plan.gates, k.lstm ? 4 : 3);
    cudnnRNNAlgo_t algo;
    cudnnRNNMode_t cell;
    cudnnRNNBiasMode_t bias;
    cudnnDirectionMode_t dir;
    cudnnRNNInputMode_t input;
    cudnnDataType_t data, compute;
    cudnnMathType_t math;
    int32_t in_size, hidden, proj, layers;
    cudnnDropoutDescriptor_t dropout;
    uint32_t aux;
    ASSERT_EQ(
        cudnnGetRNNDescriptor_v8(plan.rnn.get(), &algo, &cell, &bias, &dir, &input, &data, &compute,
                                 &math, &in_size, &hidden, &proj, &layers, &dropout, &aux),
        CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(algo, CUDNN_RNN_ALGO_STANDARD);
    EXPECT_EQ(cell, k.lstm ? CUDNN_LSTM : CUDNN_GRU);
    EXPECT_EQ(bias, CUDNN_RNN_DOUBLE_BIAS);
    EXPECT_EQ(dir, CUDNN_UNIDIRECTIONAL);
    EXPECT_EQ(input, CUDNN_LINEAR_INPUT);
    EXPECT_EQ(data, k.data);
    EXPECT_EQ(compute, k.compute);
    EXPECT_EQ(math, k.math);
    EXPECT_EQ(std::vector<int32_t>({in_size, hidden, proj, layers}),
              std::vector<int32_t>({7, 11, 11, 1}));
    EXPECT_EQ(aux, static_cast<uint32_t>(CUDNN_RNN_PADDED_IO_DISABLED));
    for (const auto& [desc, features] : {std::pair{plan.x.get(), 7}, {plan.y.get(), 11}}) {
      cudnnRNNDataLayout_t layout;
      int max_len = 0, batch = 0, vec = 0;
      int lengths[3] = {};
      double fill = 0;  // cuDNN writes the (unused) padding symbol here
      ASSERT_EQ(cudnnGetRNNDataDescriptor(desc, &data, &layout, &max_len, &batch, &vec, 3, lengths,
                                          &fill),
                CUDNN_STATUS_SUCCESS);
      EXPECT_EQ(layout, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED);
      EXPECT_EQ(std::vector<int>({max_len, batch, vec}), std::vector<int>({5, 3, features}));
      EXPECT_EQ(std::vector<int>(lengths, lengths + 3), std::vector<int>({5, 5, 5}));
    }
    EXPECT_EQ(plan.lengths, std::vector<int32_t>({5, 5, 5}));
    int nd = 0, dims[3], strides[3];
    ASSERT_EQ(cudnnGetTensorNdDescriptor(plan.state.get(), 3, &data, &nd, dims, strides),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(std::vector<int>(dims, dims + 3), std::vector<int>({1, 3, 11}));
    EXPECT_EQ(std::vector<int>(strides, strides + 3), std::vector<int>({33, 11, 1}));
  }
}

TEST(CudnnPlan, RnnSizesBeyondCudnnsIntAreRefusedByName) {
  RnnPlan plan;
  const Status big =
      plan_rnn(EMBER_F32, true, int64_t{1} << 20, 4096, 1024, 256, false, "rnn_layer", &plan);
  EXPECT_EQ(big.code, EMBER_ERR_INVALID);
  EXPECT_NE(big.message.find("[cuda] rnn_layer: steps 1048576, batch 4096"), std::string::npos)
      << big.message;
  EXPECT_FALSE(plan_rnn(EMBER_I64, true, 2, 2, 2, 2, false, "rnn_layer", &plan).ok());
}

ConvBatchSplit split_of(std::initializer_list<int64_t> x, std::initializer_list<int64_t> y,
                        std::initializer_list<int64_t> w, int64_t limit = kCudnnMaxElements,
                        Status* status = nullptr) {
  int64_t xs[4], ys[4], ws[4];
  std::copy(x.begin(), x.end(), xs);
  std::copy(y.begin(), y.end(), ys);
  std::copy(w.begin(), w.end(), ws);
  ConvBatchSplit split;
  const Status s = plan_conv_batch_split("conv2d", xs, ys, ws, limit, &split);
  if (status) {
    *status = s;
  } else {
    EXPECT_TRUE(s.ok()) << s.message;
  }
  return split;
}

// Note [Convolutions in batch chunks]: the fewest chunks whose tensors each fit, evenly sized.
TEST(CudnnPlan, ConvolutionsSplitTheBatchIntoTheFewestChunksThatFit) {
  const int64_t k29 = int64_t{1} << 29;  // 64 * 2048 * 4096 elements per sample
  // Just under the limit: 3 * 2^29 = 1.61e9 elements, one call.
  ConvBatchSplit s = split_of({3, 64, 2048, 4096}, {3, 64, 2048, 4096}, {64, 64, 3, 3});
  EXPECT_EQ(s.chunks, 1);
  EXPECT_EQ(s.chunk, 3);
  // Just over: 4 * 2^29 = 2^31 elements, two calls of two samples.
  s = split_of({4, 64, 2048, 4096}, {4, 64, 2048, 4096}, {64, 64, 3, 3});
  EXPECT_EQ(s.chunks, 2);
  EXPECT_EQ(s.chunk, 2);
  EXPECT_LE(s.chunk * k29, INT_MAX);
  // The larger of input and output decides: a 1x1 convolution widening 3 channels to 64.
  s = split_of({5000, 3, 112, 112}, {5000, 64, 112, 112}, {64, 3, 1, 1});
  const int64_t most = INT_MAX / (int64_t{64} * 112 * 112);  // 2674 samples per call
  EXPECT_EQ(s.chunks, (5000 + most - 1) / most);
  EXPECT_EQ(s.chunk, 2500);
  EXPECT_EQ(split_of({2674, 3, 112, 112}, {2674, 64, 112, 112}, {64, 3, 1, 1}).chunks, 1);
  EXPECT_EQ(split_of({2675, 3, 112, 112}, {2675, 64, 112, 112}, {64, 3, 1, 1}).chunks, 2);
  // A sample of exactly INT_MAX elements: one call per sample.
  s = split_of({5, 1, 1, INT_MAX}, {5, 1, 1, INT_MAX}, {1, 1, 1, 1});
  EXPECT_EQ(s.chunks, 5);
  EXPECT_EQ(s.chunk, 1);
  // A small limit (the GPU tests' hook): 50 elements per sample of y, 2 samples per call.
  s = split_of({7, 1, 5, 5}, {7, 2, 5, 5}, {2, 1, 3, 3}, 100);
  EXPECT_EQ(s.chunks, 4);
  EXPECT_EQ(s.chunk, 2);  // 2 + 2 + 2 + 1
  s = split_of({10, 1, 5, 5}, {10, 2, 5, 5}, {2, 1, 3, 3}, 150);
  EXPECT_EQ(s.chunks, 4);
  EXPECT_EQ(s.chunk, 3);  // 3 + 3 + 3 + 1
  // Nothing to split: an empty batch.
  EXPECT_EQ(split_of({0, 3, 8, 8}, {0, 4, 8, 8}, {4, 3, 3, 3}).chunks, 0);
}

TEST(CudnnPlan, ASampleOrAFilterBeyondCudnnsLimitIsAnErrorNamingTheShape) {
  Status s;
  split_of({2, 1, 2, int64_t{1} << 30}, {2, 1, 2, int64_t{1} << 30}, {1, 1, 1, 1},
           kCudnnMaxElements, &s);
  EXPECT_EQ(s.code, EMBER_ERR_UNSUPPORTED);
  for (const char* part : {"[conv2d] one sample is too large for cuDNN", "[2, 1, 2, 1073741824]",
                           "2147483648 elements per sample", "at most 2147483647"}) {
    EXPECT_NE(s.message.find(part), std::string::npos) << part << " in " << s.message;
  }
  // The output side alone over the limit.
  split_of({1, 1, 1, 1 << 20}, {1, 4096, 1, 1 << 20}, {4096, 1, 1, 1}, kCudnnMaxElements, &s);
  EXPECT_EQ(s.code, EMBER_ERR_UNSUPPORTED);
  EXPECT_NE(s.message.find("output [1, 4096, 1, 1048576] 4294967296"), std::string::npos)
      << s.message;
  // A filter cannot be split either.
  split_of({1, 65536, 1, 1}, {1, 65536, 1, 1}, {65536, 65536, 1, 1}, kCudnnMaxElements, &s);
  EXPECT_EQ(s.code, EMBER_ERR_UNSUPPORTED);
  EXPECT_NE(s.message.find("[conv2d] the weight is too large for cuDNN: [65536, 65536, 1, 1]"),
            std::string::npos)
      << s.message;
}

// Note [TF32 in cuDNN convolutions]: float32 without TF32 keeps only FMA-math algorithms.
TEST(CudnnPlan, TheRankingKeepsOfferedAlgorithmsInOrderWithoutTf32ForFloat32) {
  cudnnConvolutionFwdAlgoPerf_t perf[4] = {};
  perf[0] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
             CUDNN_STATUS_SUCCESS,
             0.1f,
             1 << 20,
             CUDNN_DETERMINISTIC,
             CUDNN_TENSOR_OP_MATH,
             {}};
  perf[1] = {CUDNN_CONVOLUTION_FWD_ALGO_FFT,
             CUDNN_STATUS_NOT_SUPPORTED,
             0.2f,
             0,
             CUDNN_DETERMINISTIC,
             CUDNN_FMA_MATH,
             {}};
  perf[2] = {CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
             CUDNN_STATUS_SUCCESS,
             0.3f,
             4096,
             CUDNN_DETERMINISTIC,
             CUDNN_FMA_MATH,
             {}};
  perf[3] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
             CUDNN_STATUS_SUCCESS,
             0.4f,
             0,
             CUDNN_DETERMINISTIC,
             CUDNN_DEFAULT_MATH,
             {}};
  const std::vector<ConvAlgo> f32 = acceptable_conv_algos(perf, 4, EMBER_F32, /*tf32=*/false);
  ASSERT_EQ(f32.size(), 2u);
  EXPECT_EQ(f32[0].algo, CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
  EXPECT_EQ(f32[1].algo, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
  const std::vector<ConvAlgo> half = acceptable_conv_algos(perf, 4, EMBER_F16, false);
  ASSERT_EQ(half.size(), 3u);
  EXPECT_EQ(half[0].algo, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
  EXPECT_EQ(half[0].math, CUDNN_TENSOR_OP_MATH);
  EXPECT_EQ(acceptable_conv_algos(perf, 4, EMBER_F32, /*tf32=*/true).size(), 3u);
}

// Note [Walking cuDNN's algorithm ranking]: a candidate whose workspace cannot be had (or
// which cuDNN does not support) gives way to the next; other failures stop the walk.
TEST(CudnnPlan, TheAlgorithmWalkFallsBackWhenAWorkspaceDoesNotFit) {
  const std::vector<ConvAlgo> ranking = {
      {1, CUDNN_FMA_MATH}, {0, CUDNN_FMA_MATH}, {6, CUDNN_DEFAULT_MATH}};
  std::vector<int> tried;
  auto walk = [&](std::vector<int32_t> answers, size_t* chosen) {
    tried.clear();
    return run_first_working_algo(
        "conv2d", ranking,
        [&](const ConvAlgo& a) -> Status {
          const int32_t code = answers[tried.size()];
          tried.push_back(a.algo);
          if (code == EMBER_OK) return {};
          return status_error(code, "answer for algorithm %d", a.algo);
        },
        chosen);
  };
  size_t chosen = 99;
  // The best one's workspace is out of memory: the second runs.
  Status s = walk({EMBER_ERR_OUT_OF_MEMORY, EMBER_OK, EMBER_OK}, &chosen);
  EXPECT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(chosen, 1u);
  EXPECT_EQ(tried, (std::vector<int>{1, 0}));
  // Not supported, then out of memory, then the last one runs.
  s = walk({EMBER_ERR_UNSUPPORTED, EMBER_ERR_OUT_OF_MEMORY, EMBER_OK}, &chosen);
  EXPECT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(chosen, 2u);
  // The first that works is taken: nothing after it is tried.
  s = walk({EMBER_OK, EMBER_OK, EMBER_OK}, &chosen);
  EXPECT_EQ(chosen, 0u);
  EXPECT_EQ(tried.size(), 1u);
  // A device failure is not a reason to try another algorithm.
  s = walk({EMBER_ERR_DEVICE, EMBER_OK, EMBER_OK}, &chosen);
  EXPECT_EQ(s.code, EMBER_ERR_DEVICE);
  EXPECT_EQ(s.message, "answer for algorithm 1");
  EXPECT_EQ(tried.size(), 1u);
  // None fits: out of memory, naming the op, the number tried and the last answer.
  s = walk({EMBER_ERR_OUT_OF_MEMORY, EMBER_ERR_OUT_OF_MEMORY, EMBER_ERR_OUT_OF_MEMORY}, &chosen);
  EXPECT_EQ(s.code, EMBER_ERR_OUT_OF_MEMORY);
  for (const char* part : {"[conv2d] none of the 3 cuDNN algorithms", "answer for algorithm 6"}) {
    EXPECT_NE(s.message.find(part), std::string::npos) << part << " in " << s.message;
  }
  // An empty ranking.
  s = run_first_working_algo(
      "conv2d_backward_weight", {}, [](const ConvAlgo&) { return Status{}; }, &chosen);
  EXPECT_EQ(s.code, EMBER_ERR_UNSUPPORTED);
  EXPECT_NE(s.message.find("[conv2d_backward_weight] cuDNN offers no usable algorithm"),
            std::string::npos)
      << s.message;
}

TEST(CudnnPlan, UnsupportedDtypesAreErrorsNamingTheOp) {
  const Shape x({6, 50}, EMBER_I64);
  SoftmaxPlan plan;
  const Status s = plan_softmax(x.t, 1, &plan);
  EXPECT_EQ(s.code, EMBER_ERR_UNSUPPORTED);
  EXPECT_NE(s.message.find("[cuda] softmax: dtype"), std::string::npos) << s.message;
}

}  // namespace
}  // namespace ember::cuda
