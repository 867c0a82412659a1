#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

using testing::expect_close;
using testing::expect_error;
using testing::values;

// Softmax (or log-softmax) in float64 along `dim` of a row-major array of `sizes`.
std::vector<double> reference(const Tensor& x, int64_t dim, bool log) {
  const std::vector<double> v = values(x);
  const int64_t nd = x.dim();
  if (dim < 0) dim += nd;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
  for (int64_t d = dim + 1; d < nd; ++d) inner *= x.size(d);
  const int64_t len = x.size(dim);
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t l) { return static_cast<size_t>((o * len + l) * inner + j); };
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t l = 0; l < len; ++l) m = std::max(m, v[at(l)]);
      double s = 0;
      for (int64_t l = 0; l < len; ++l) s += std::exp(v[at(l)] - m);
      for (int64_t l = 0; l < len; ++l) {
        out[at(l)] = log ? v[at(l)] - m - std::log(s) : std::exp(v[at(l)] - m) / s;
      }
    }
  }
  return out;
}

void check(const Tensor& x, int64_t dim, double tol, const std::string& what) {
  const Tensor y = softmax(x, dim);
  ASSERT_EQ(y.sizes(), x.sizes()) << what;
  EXPECT_EQ(y.dtype(), x.dtype()) << what;
  EXPECT_TRUE(y.is_contiguous()) << what;
  expect_close(y, reference(x, dim, false), tol, what + " softmax");
  const Tensor z = log_softmax(x, dim);
  ASSERT_EQ(z.sizes(), x.sizes()) << what;
  expect_close(z, reference(x, dim, true), tol, what + " log_softmax");
}

class SoftmaxDTypes : public ::testing::TestWithParam<DType> {
 protected:
  double tol() const {
    const DType d = GetParam();
    // oneDNN's float32 kernels use polynomial exp/log: a few 1e-6 off, like PyTorch's.
    return d == f64 ? 1e-13 : d == f32 ? 1e-5 : d == f16 ? 2e-3 : 1e-2;
  }
};

TEST_P(SoftmaxDTypes, EveryDimOfA3dTensor) {
  const Tensor x = (randn({3, 4, 5}) * 3.0).to(GetParam());
  for (int64_t dim = -3; dim < 3; ++dim) check(x, dim, tol(), "dim " + std::to_string(dim));
}

TEST_P(SoftmaxDTypes, NonContiguousInputs) {
  const Tensor x = (randn({4, 6, 5}) * 2.0).to(GetParam());
  check(x.transpose(0, 2), 0, tol(), "transposed, dim 0");
  check(x.transpose(0, 2), -1, tol(), "transposed, last dim");
  check(x.slice(1, 0, 6, 2), 1, tol(), "stepped slice");
  check(x.select(2, 1), 0, tol(), "select");
  check(randn({1, 5}).to(GetParam()).expand({3, 5}), 1, tol(), "expanded rows");
}

TEST_P(SoftmaxDTypes, RowsSumToOne) {
  const Tensor x = (randn({8, 33}) * 5.0).to(GetParam());
  const std::vector<double> rows = values(softmax(x, 1)), cols = values(softmax(x, 0));
  for (int64_t i = 0; i < 8; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 33; ++j) s += rows[i * 33 + j];
    EXPECT_NEAR(s, 1.0, 50 * tol()) << "row " << i;
  }
  for (int64_t j = 0; j < 33; ++j) {
    double s = 0;
    for (int64_t i = 0; i < 8; ++i) s += cols[i * 33 + j];
    EXPECT_NEAR(s, 1.0, 50 * tol()) << "column " << j;
  }
}

TEST_P(SoftmaxDTypes, LargeInputsStayFinite) {
  const Tensor x = tensor({{1000.0, 1001.0, 1002.0}, {-1000.0, -1001.0, -1002.0}}).to(GetParam());
  check(x, 1, tol(), "+-1000");  // against float64 on the (possibly rounded) input
  const std::vector<double> y = values(softmax(x, 1)), z = values(log_softmax(x, 1));
  for (size_t i = 0; i < y.size(); ++i) EXPECT_TRUE(std::isfinite(y[i]) && std::isfinite(z[i]));
  if (GetParam() == f32 || GetParam() == f64) {  // 1000, 1001, 1002 are exact in both
    const double w[] = {0.09003057317038046, 0.24472847105479767, 0.6652409557748219};
    const double lw[] = {-2.4076059644443806, -1.4076059644443806, -0.40760596444438054};
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(y[i], w[i], 1e-6);
      EXPECT_NEAR(y[3 + i], w[2 - i], 1e-6);
      EXPECT_NEAR(z[i], lw[i], 1e-5);
      EXPECT_NEAR(z[3 + i], lw[2 - i], 1e-5);
    }
  }
}

TEST_P(SoftmaxDTypes, LargeTensorsAlongEachDim) {
  const Tensor x = randn({96, 700}).to(GetParam());
  check(x, 1, tol(), "rows");
  check(x, 0, tol(), "columns");
}

INSTANTIATE_TEST_SUITE_P(Softmax, SoftmaxDTypes, ::testing::Values(f32, f64, f16, bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Softmax, HandComputedValues) {
  const Tensor x = tensor({{0.0, 0.0}, {0.0, std::log(3.0)}}, TensorOptions(f64));
  expect_close(softmax(x, 1), {0.5, 0.5, 0.25, 0.75}, 1e-15, "softmax");
  expect_close(log_softmax(x, -1), {std::log(0.5), std::log(0.5), std::log(0.25), std::log(0.75)},
               1e-15, "log_softmax");
}

TEST(Softmax, NegativeInfinityGetsZeroProbability) {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = tensor({-inf, 0.0, -inf});
  expect_close(softmax(x, 0), {0.0, 1.0, 0.0}, 0, "softmax");
  const std::vector<double> z = values(log_softmax(x, 0));
  EXPECT_EQ(z[0], -inf);
  EXPECT_NEAR(z[1], 0.0, 1e-5);
}

// Note [NaN rows of oneDNN's softmax]: a NaN or a +inf makes its whole row NaN in every dtype
// (float32 runs oneDNN, float64 the own loop), as in PyTorch; other rows are untouched.
TEST(Softmax, ANanOrPlusInfinityMakesItsWholeRowNan) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const Tensor x64 =
      tensor({{nan, 1.0, 2.0}, {inf, 1.0, 2.0}, {-inf, -inf, -inf}, {0.0, 1.0, 2.0}});
  for (DType dt : {DType::Float32, DType::Float64}) {
    const Tensor x = x64.to(dt);
    for (const Tensor& y : {softmax(x, 1), log_softmax(x, 1)}) {
      const std::vector<double> v = values(y);
      for (size_t i = 0; i < 9; ++i) EXPECT_TRUE(std::isnan(v[i])) << dtype_name(dt) << " at " << i;
      for (size_t i = 9; i < 12; ++i)
        EXPECT_FALSE(std::isnan(v[i])) << dtype_name(dt) << " at " << i;
    }
  }
}

TEST(Softmax, IntegerInputIsPromotedToFloat32) {
  const Tensor x = tensor({{1, 2, 3}, {4, 4, 4}});
  const Tensor y = softmax(x, 1);
  EXPECT_EQ(y.dtype(), f32);
  expect_close(y, reference(x, 1, false), 1e-6, "int64");
  EXPECT_EQ(log_softmax(x, 0).dtype(), f32);
}

TEST(Softmax, ScalarsAndEmptyTensors) {
  const Tensor s = full({}, 3.5);
  EXPECT_EQ(softmax(s, 0).dim(), 0);
  EXPECT_EQ(softmax(s, -1).item(), 1.0);
  EXPECT_NEAR(log_softmax(s, 0).item(), 0.0, 1e-5);
  EXPECT_EQ(softmax(zeros({0, 3}), 1).sizes(), Shape({0, 3}));
  EXPECT_EQ(log_softmax(zeros({2, 0}), 1).sizes(), Shape({2, 0}));
}

TEST(Softmax, BadArgumentsThrow) {
  expect_error([] { softmax(zeros({2, 3}), 2); }, {"[softmax]"});
  expect_error([] { log_softmax(zeros({2, 3}), -3); }, {"[log_softmax]"});
  expect_error([] { softmax(ones({2}).to(DType::Bool), 0); }, {"[softmax] not defined for bool"});
}

}  // namespace
}  // namespace ember
