// Pooling ops against float64 reference loops written here: max_pool2d(_with_indices) over
// kernel/stride/padding/dilation/ceil_mode variants (values and flat indices), avg_pool2d with
// and without count_include_pad, adaptive_avg_pool2d with uneven windows; unbatched, strided,
// integer, NaN and empty inputs; every argument check.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

struct Cfg {
  int64_t k, s, p, d;
  bool ceil;
};

int64_t ref_out(int64_t in, const Cfg& c) {
  const int64_t eff = c.d * (c.k - 1) + 1;
  const double v = static_cast<double>(in + 2 * c.p - eff) / static_cast<double>(c.s);
  int64_t o = static_cast<int64_t>(c.ceil ? std::ceil(v) : std::floor(v)) + 1;
  if (c.ceil && (o - 1) * c.s >= in + c.p) --o;
  return o;
}

// Reference max pooling of [P, H, W] planes: {values, indices}.
std::pair<std::vector<double>, std::vector<double>> ref_max(const std::vector<double>& x,
                                                            int64_t planes, int64_t H, int64_t W,
                                                            const Cfg& c) {
  const int64_t oH = ref_out(H, c), oW = ref_out(W, c);
  std::vector<double> y, idx;
  for (int64_t pl = 0; pl < planes; ++pl) {
    for (int64_t i = 0; i < oH; ++i) {
      for (int64_t j = 0; j < oW; ++j) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t bi = -1;
        for (int64_t a = 0; a < c.k; ++a) {
          for (int64_t b = 0; b < c.k; ++b) {
            const int64_t h = i * c.s - c.p + a * c.d, w = j * c.s - c.p + b * c.d;
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const double v = x[static_cast<size_t>(pl * H * W + h * W + w)];
            if (bi < 0 || v > best || std::isnan(v)) {
              best = v;
              bi = h * W + w;
            }
          }
        }
        y.push_back(best);
        idx.push_back(static_cast<double>(bi));
      }
    }
  }
  return {y, idx};
}

std::vector<double> ref_avg(const std::vector<double>& x, int64_t planes, int64_t H, int64_t W,
                            const Cfg& c, bool include_pad) {
  const int64_t oH = ref_out(H, c), oW = ref_out(W, c);
  std::vector<double> y;
  for (int64_t pl = 0; pl < planes; ++pl) {
    for (int64_t i = 0; i < oH; ++i) {
      for (int64_t j = 0; j < oW; ++j) {
        double s = 0;
        int64_t in_bounds = 0, padded = 0;
        for (int64_t a = 0; a < c.k; ++a) {
          for (int64_t b = 0; b < c.k; ++b) {
            const int64_t h = i * c.s - c.p + a, w = j * c.s - c.p + b;
            // taps past the far padding do not count, even with count_include_pad
            if (h >= H + c.p || w >= W + c.p) continue;
            ++padded;
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            ++in_bounds;
            s += x[static_cast<size_t>(pl * H * W + h * W + w)];
          }
        }
        y.push_back(s / static_cast<double>(include_pad ? padded : in_bounds));
      }
    }
  }
  return y;
}

std::vector<double> ref_adaptive(const std::vector<double>& x, int64_t planes, int64_t H, int64_t W,
                                 int64_t oH, int64_t oW) {
  std::vector<double> y;
  for (int64_t pl = 0; pl < planes; ++pl) {
    for (int64_t i = 0; i < oH; ++i) {
      const int64_t h0 = static_cast<int64_t>(std::floor(double(i) * H / oH));
      const int64_t h1 = static_cast<int64_t>(std::ceil(double(i + 1) * H / oH));
      for (int64_t j = 0; j < oW; ++j) {
        const int64_t w0 = static_cast<int64_t>(std::floor(double(j) * W / oW));
        const int64_t w1 = static_cast<int64_t>(std::ceil(double(j + 1) * W / oW));
        double s = 0;
        for (int64_t h = h0; h < h1; ++h) {
          for (int64_t w = w0; w < w1; ++w) s += x[static_cast<size_t>(pl * H * W + h * W + w)];
        }
        y.push_back(s / static_cast<double>((h1 - h0) * (w1 - w0)));
      }
    }
  }
  return y;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "at " << i;
    }
  }
}

Tensor random(IntList sizes, DType dt, uint64_t seed) {
  Generator gen(seed);
  return randn(sizes, {dt}, &gen);
}

const std::vector<Cfg> kConfigs = {{2, 2, 0, 1, false}, {3, 2, 1, 1, false}, {3, 1, 1, 1, false},
                                   {2, 2, 1, 1, true},  {3, 2, 0, 1, true},  {3, 3, 1, 2, false},
                                   {2, 1, 0, 2, true},  {4, 3, 2, 1, true},  {1, 2, 0, 1, false},
                                   {3, 2, 1, 1, true}};

TEST(PoolTest, MaxPoolMatchesReference) {
  for (DType dt : {f32, f64}) {
    for (const Cfg& c : kConfigs) {
      const Tensor x = random({2, 3, 7, 9}, dt, 1);
      auto [y, idx] = max_pool2d_with_indices(x, {c.k}, {c.s}, {c.p}, {c.d}, c.ceil);
      auto [ry, ri] = ref_max(values(x), 6, 7, 9, c);
      ASSERT_EQ(y.sizes(), (Shape{2, 3, ref_out(7, c), ref_out(9, c)}));
      EXPECT_EQ(idx.dtype(), i64);
      expect_near(values(y), ry, 0);
      expect_near(values(idx), ri, 0);
      expect_near(values(max_pool2d(x, {c.k}, {c.s}, {c.p}, {c.d}, c.ceil)), ry, 0);
    }
  }
}

// Rows wide enough for several blocks of interior columns (Note [Row-major max pooling in blocks
// of columns]), with many ties (values 0..3) and NaNs: values and indices equal the reference's,
// in every dtype the blocks run in.
TEST(PoolTest, MaxPoolWideRowsWithTiesAndNaNMatchReference) {
  const int64_t H = 6, W = 77;
  std::vector<double> xs(static_cast<size_t>(2 * H * W));
  for (size_t i = 0; i < xs.size(); ++i)
    xs[i] = i % 37 == 5 ? std::nan("") : static_cast<double>((i * 7 + i / 5) % 4);
  for (DType dt : {f32, f64, DType::Float16, DType::BFloat16}) {
    const Tensor x = from_vector(xs, {1, 2, H, W}, TensorOptions(DType::Float64)).to(dt);
    for (const Cfg& c : kConfigs) {
      auto [y, idx] = max_pool2d_with_indices(x, {c.k}, {c.s}, {c.p}, {c.d}, c.ceil);
      auto [ry, ri] = ref_max(xs, 2, H, W, c);
      expect_near(values(y), ry, 0);
      expect_near(values(idx), ri, 0);
    }
  }
}

TEST(PoolTest, MaxPoolHandComputed) {
  const Tensor x = make({1, 5, 2, 0, 3, 4, 8, 1, 9, 7, 6, 6, 2, 2, 6, 9}, {1, 1, 4, 4}, f32);
  auto [y, idx] = max_pool2d_with_indices(x, {2});
  EXPECT_EQ(values(y), (std::vector<double>{5, 8, 9, 9}));
  EXPECT_EQ(values(idx), (std::vector<double>{1, 6, 8, 15}));
  // Rectangular kernel with an explicit stride: windows of 1 x 4 stepping down 2 rows.
  EXPECT_EQ(values(max_pool2d(x, {1, 4}, {2, 1})), (std::vector<double>{5, 9}));
}

TEST(PoolTest, CeilModeDropsWindowsStartingInPadding) {
  const Tensor x = random({1, 1, 5, 5}, f32, 2);
  // (5 + 2 - 2 + 1) / 2 + 1 = 4 windows, but the 4th would start at 6 >= 5 + 1: dropped.
  EXPECT_EQ(max_pool2d(x, {2}, {2}, {1}, {1}, true).sizes(), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(avg_pool2d(x, {2}, {2}, {1}, true).sizes(), (Shape{1, 1, 3, 3}));
  // Without padding ceil_mode keeps the last, partial window.
  EXPECT_EQ(max_pool2d(x, {2}, {2}, {0}, {1}, true).sizes(), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(max_pool2d(x, {2}, {2}, {0}, {1}, false).sizes(), (Shape{1, 1, 2, 2}));
}

TEST(PoolTest, MaxPoolUnbatchedStridedIntegerAndNaN) {
  const Tensor x = random({3, 6, 5}, f64, 3);
  const Cfg c{3, 2, 1, 1, false};
  auto [y, idx] = max_pool2d_with_indices(x, {3}, {2}, {1});
  EXPECT_EQ(y.sizes(), (Shape{3, 3, 3}));
  expect_near(values(y), ref_max(values(x), 3, 6, 5, c).first, 0);
  // A transposed (non-contiguous) input.
  const Tensor xt = random({2, 2, 5, 6}, f32, 4).transpose(2, 3);
  expect_near(values(max_pool2d(xt, {2})),
              ref_max(values(xt), 4, 6, 5, Cfg{2, 2, 0, 1, false}).first, 0);
  // Integers.
  const Tensor xi = make({1, -5, 7, 3, 2, 2, -1, 0, 9}, {1, 3, 3}, i64);
  const Tensor yi = max_pool2d(xi, {2}, {1});
  EXPECT_EQ(yi.dtype(), i64);
  EXPECT_EQ(values(yi), (std::vector<double>{3, 7, 3, 9}));
  // NaN propagates and its index is reported.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto [yn, in] = max_pool2d_with_indices(make({1, nan, 3, 4}, {1, 1, 2, 2}, f32), {2});
  EXPECT_TRUE(std::isnan(values(yn)[0]));
  EXPECT_EQ(values(in)[0], 1);
}

TEST(PoolTest, AvgPoolMatchesReference) {
  for (DType dt : {f32, f64}) {
    for (const Cfg& c : kConfigs) {
      if (c.d != 1) continue;
      for (bool include_pad : {true, false}) {
        const Tensor x = random({2, 2, 8, 7}, dt, 5);
        const Tensor y = avg_pool2d(x, {c.k}, {c.s}, {c.p}, c.ceil, include_pad);
        ASSERT_EQ(y.sizes(), (Shape{2, 2, ref_out(8, c), ref_out(7, c)}));
        expect_near(values(y), ref_avg(values(x), 4, 8, 7, c, include_pad),
                    dt == f32 ? 1e-6 : 1e-12);
      }
    }
  }
  // Unbatched and strided, default stride = kernel.
  const Tensor x = random({2, 6, 6}, f32, 6).transpose(1, 2);
  expect_near(values(avg_pool2d(x, {3})), ref_avg(values(x), 2, 6, 6, {3, 3, 0, 1, false}, true),
              1e-6);
}

TEST(PoolTest, AvgPoolHandComputed) {
  const Tensor x = make({1, 2, 3, 4}, {1, 1, 2, 2}, f64);
  // padding 1, kernel 2, stride 2: windows of one real element each.
  EXPECT_EQ(values(avg_pool2d(x, {2}, {2}, {1}, false, true)),
            (std::vector<double>{0.25, 0.5, 0.75, 1.0}));
  EXPECT_EQ(values(avg_pool2d(x, {2}, {2}, {1}, false, false)), (std::vector<double>{1, 2, 3, 4}));
}

TEST(PoolTest, AdaptiveAvgPoolMatchesReference) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{7, 5}, {3, 2}}, {{6, 6}, {3, 3}}, {{3, 4}, {5, 7}}, {{9, 8}, {1, 1}}, {{5, 5}, {5, 5}}};
  for (DType dt : {f32, f64}) {
    for (const auto& [in, out] : cases) {
      const Tensor x = random({2, 3, in[0], in[1]}, dt, 7);
      const Tensor y = adaptive_avg_pool2d(x, out);
      ASSERT_EQ(y.sizes(), (Shape{2, 3, out[0], out[1]}));
      expect_near(values(y), ref_adaptive(values(x), 6, in[0], in[1], out[0], out[1]),
                  dt == f32 ? 1e-6 : 1e-12);
    }
  }
  const Tensor x = random({3, 5, 4}, f32, 8);
  EXPECT_EQ(adaptive_avg_pool2d(x, {2}).sizes(), (Shape{3, 2, 2}));
  expect_near(values(adaptive_avg_pool2d(x, {2})), ref_adaptive(values(x), 3, 5, 4, 2, 2), 1e-6);
}

TEST(PoolTest, Float32AgreesWithFloat64) {
  const Tensor x = random({4, 8, 15, 13}, f64, 9);
  const Tensor x32 = x.to(f32);
  expect_near(values(avg_pool2d(x32, {3}, {2}, {1}, true, false)),
              values(avg_pool2d(x, {3}, {2}, {1}, true, false)), 1e-6);
  expect_near(values(adaptive_avg_pool2d(x32, {4, 6})), values(adaptive_avg_pool2d(x, {4, 6})),
              1e-6);
  expect_near(values(max_pool2d(x32, {3}, {2}, {1})), values(max_pool2d(x, {3}, {2}, {1})), 1e-6);
}

TEST(PoolTest, EmptyBatch) {
  const Tensor x = zeros({0, 3, 4, 4});
  EXPECT_EQ(max_pool2d(x, {2}).sizes(), (Shape{0, 3, 2, 2}));
  EXPECT_EQ(std::get<1>(max_pool2d_with_indices(x, {2})).sizes(), (Shape{0, 3, 2, 2}));
  EXPECT_EQ(avg_pool2d(x, {2}).sizes(), (Shape{0, 3, 2, 2}));
  EXPECT_EQ(adaptive_avg_pool2d(x, {3}).sizes(), (Shape{0, 3, 3, 3}));
}

TEST(PoolTest, BadArguments) {
  const Tensor x = zeros({1, 2, 6, 6});
  expect_error([&] { max_pool2d(zeros({6, 6}), {2}); }, {"[max_pool2d]", "[6, 6]"});
  expect_error([&] { max_pool2d(x, {0}); }, {"[max_pool2d]", "kernel_size", "(0, 0)"});
  expect_error([&] { max_pool2d(x, {2, 2, 2}); }, {"[max_pool2d]", "kernel_size", "3 values"});
  expect_error([&] { max_pool2d(x, {2}, {0}); }, {"[max_pool2d]", "stride", "(0, 0)"});
  expect_error([&] { max_pool2d(x, {2}, {}, {2}); }, {"[max_pool2d]", "padding (2, 2)"});
  expect_error([&] { max_pool2d(x, {2}, {}, {-1}); }, {"[max_pool2d]", "padding (-1, -1)"});
  expect_error([&] { max_pool2d(x, {2}, {}, {0}, {0}); }, {"[max_pool2d]", "dilation"});
  expect_error(
      [&] {
        max_pool2d(zeros({1, 1, 2, 2}), {3});
      },
      {"[max_pool2d]", "too small", "[1, 1, 2, 2]"});
  expect_error([&] { max_pool2d(zeros({1, 0, 4, 4}), {2}); }, {"[max_pool2d]", "[1, 0, 4, 4]"});
  expect_error([&] { max_pool2d_with_indices(x, {0}); }, {"[max_pool2d_with_indices]", "(0, 0)"});
  expect_error(
      [&] {
        max_pool2d(zeros({1, 1, 4, 4}, {ember::DType::Bool}), {2});
      },
      {"[max_pool2d]", "bool"});
  expect_error([&] { avg_pool2d(zeros({1, 1, 4, 4}, {i64}), {2}); }, {"[avg_pool2d]", "int64"});
  expect_error([&] { avg_pool2d(x, {3}, {1}, {2}); }, {"[avg_pool2d]", "padding (2, 2)"});
  expect_error(
      [&] {
        avg_pool2d(zeros({2, 3, 4, 5, 6}), {2});
      },
      {"[avg_pool2d]", "[2, 3, 4, 5, 6]"});
  expect_error([&] { adaptive_avg_pool2d(x, {0, 2}); }, {"[adaptive_avg_pool2d]", "(0, 2)"});
  expect_error(
      [&] {
        adaptive_avg_pool2d(x, {1, 2, 3});
      },
      {"[adaptive_avg_pool2d]", "output_size"});
  expect_error([&] { adaptive_avg_pool2d(zeros({4}), {2}); }, {"[adaptive_avg_pool2d]", "[4]"});
}

}  // namespace
}  // namespace ember::testing
