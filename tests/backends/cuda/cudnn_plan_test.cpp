// The cuDNN paths' plans (backends/cuda/ops/cudnn_plan.cpp) against the real cuDNN library, with
// no GPU: descriptor setup needs neither a device nor a handle. These decide which softmax,
// average pooling and batch norm calls cuDNN takes (Note [cuDNN where own kernels exist too]);
// the pooling windows are checked against PyTorch's output-size rule written out here.
#include "backends/cuda/ops/cudnn_plan.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
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

TEST(CudnnPlan, OnlyNotSupportedAndBadParamAnswersDecline) {
  for (cudnnStatus_t s :
       {CUDNN_STATUS_BAD_PARAM, CUDNN_STATUS_BAD_PARAM_NULL_POINTER, CUDNN_STATUS_NOT_SUPPORTED,
        CUDNN_STATUS_NOT_SUPPORTED_SHAPE, CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
        CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE}) {
    EXPECT_TRUE(declined_by_cudnn(s)) << cudnnGetErrorString(s);
  }
  for (cudnnStatus_t s :
       {CUDNN_STATUS_SUCCESS, CUDNN_STATUS_NOT_INITIALIZED, CUDNN_STATUS_INTERNAL_ERROR,
        CUDNN_STATUS_EXECUTION_FAILED, CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED}) {
    EXPECT_FALSE(declined_by_cudnn(s)) << cudnnGetErrorString(s);
  }
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
