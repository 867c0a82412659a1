// Normalisation ops against float64 reference loops written here: batch_norm in training (batch
// statistics, running-stat update with the unbiased variance and momentum, version bumps) and
// eval (running statistics), layer_norm over one or more trailing dims, group_norm; optional
// affine parameters, 2-d to 5-d, strided and empty inputs, float32 vs float64; every check.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

Tensor random(IntList sizes, DType dt, uint64_t seed, double scale = 1.0, double shift = 0.0) {
  Generator gen(seed);
  return add(mul(randn(sizes, {dt}, &gen), scale), shift);
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "at " << i;
  }
}

// Normalises groups of x: element e belongs to set set_of(e) and uses parameter param_of(e).
template <typename SetOf, typename ParamOf>
std::vector<double> ref_norm(const std::vector<double>& x, int64_t nsets, SetOf set_of,
                             ParamOf param_of, const std::vector<double>& w,
                             const std::vector<double>& b, double eps,
                             std::vector<double>* mean_out = nullptr,
                             std::vector<double>* var_out = nullptr) {
  std::vector<double> s(nsets, 0), q(nsets, 0), cnt(nsets, 0);
  for (size_t e = 0; e < x.size(); ++e) {
    s[set_of(e)] += x[e];
    cnt[set_of(e)] += 1;
  }
  for (int64_t i = 0; i < nsets; ++i) s[i] /= cnt[i];
  for (size_t e = 0; e < x.size(); ++e)
    q[set_of(e)] += (x[e] - s[set_of(e)]) * (x[e] - s[set_of(e)]);
  for (int64_t i = 0; i < nsets; ++i) q[i] /= cnt[i];
  std::vector<double> y(x.size());
  for (size_t e = 0; e < x.size(); ++e) {
    const int64_t k = set_of(e), p = param_of(e);
    y[e] =
        (x[e] - s[k]) / std::sqrt(q[k] + eps) * (w.empty() ? 1.0 : w[p]) + (b.empty() ? 0.0 : b[p]);
  }
  if (mean_out) *mean_out = s;
  if (var_out) *var_out = q;
  return y;
}

// ---- batch_norm ---------------------------------------------------------------------------

TEST(NormTest, BatchNormTrainingMatchesReference) {
  for (DType dt : {f32, f64}) {
    for (const Shape& shape :
         {Shape{8, 5}, Shape{4, 3, 7}, Shape{3, 4, 5, 6}, Shape{2, 3, 2, 3, 4}}) {
      const int64_t n = shape[0], c = shape[1];
      const int64_t s = Tensor(zeros(shape)).numel() / (n * c);
      const Tensor x = random(shape, dt, 1, 2.0, 3.0);
      const Tensor w = random({c}, dt, 2), b = random({c}, dt, 3);
      Tensor rm = random({c}, f32, 4), rv = add(random({c}, f32, 5, 0.1), 1.0);
      const std::vector<double> rm0 = values(rm), rv0 = values(rv);
      const uint32_t v0 = rm.version();
      const Tensor y = batch_norm(x, w, b, rm, rv, /*training=*/true, 0.2, 1e-3);
      std::vector<double> mean, var;
      auto set_of = [&](size_t e) { return static_cast<int64_t>(e / s) % c; };
      const std::vector<double> want =
          ref_norm(values(x), c, set_of, set_of, values(w), values(b), 1e-3, &mean, &var);
      EXPECT_EQ(y.sizes(), shape);
      EXPECT_EQ(y.dtype(), dt);
      expect_near(values(y), want, dt == f32 ? 1e-5 : 1e-12);
      // Running statistics: momentum 0.2, unbiased variance.
      const double m = static_cast<double>(n * s);
      std::vector<double> want_rm, want_rv;
      for (int64_t i = 0; i < c; ++i) {
        want_rm.push_back(0.8 * rm0[i] + 0.2 * mean[i]);
        want_rv.push_back(0.8 * rv0[i] + 0.2 * var[i] * m / (m - 1));
      }
      expect_near(values(rm), want_rm, 1e-5);
      expect_near(values(rv), want_rv, 1e-5);
      EXPECT_GT(rm.version(), v0);
      EXPECT_EQ(rm.dtype(), f32);
    }
  }
}

TEST(NormTest, BatchNormEvalUsesRunningStats) {
  const Tensor x = random({3, 4, 5}, f64, 6);
  const Tensor rm = random({4}, f64, 7), rv = add(random({4}, f64, 8, 0.1), 1.0);
  const Tensor w = random({4}, f64, 9), b = random({4}, f64, 10);
  const std::vector<double> xv = values(x), m = values(rm), v = values(rv), wv = values(w),
                            bv = values(b);
  const uint32_t version = rm.version();
  const Tensor y = batch_norm(x, w, b, rm, rv, /*training=*/false, 0.1, 1e-5);
  std::vector<double> want(xv.size());
  for (size_t e = 0; e < xv.size(); ++e) {
    const size_t c = (e / 5) % 4;
    want[e] = (xv[e] - m[c]) / std::sqrt(v[c] + 1e-5) * wv[c] + bv[c];
  }
  expect_near(values(y), want, 1e-12);
  EXPECT_EQ(rm.version(), version);
  expect_near(values(rm), m, 0);
  // float32 input with float64 running statistics and no affine parameters.
  const Tensor y32 = batch_norm(x.to(f32), {}, {}, rm, rv, false);
  for (size_t e = 0; e < xv.size(); ++e) {
    const size_t c = (e / 5) % 4;
    want[e] = (xv[e] - m[c]) / std::sqrt(v[c] + 1e-5);
  }
  expect_near(values(y32), want, 1e-5);
}

TEST(NormTest, BatchNormWithoutAffineOrRunningStatsAndStrided) {
  const Tensor base = random({4, 6, 3, 5}, f32, 11);
  const Tensor x = base.transpose(0, 1).transpose(1, 2);  // [6, 3, 4, 5], non-contiguous
  ASSERT_FALSE(x.is_contiguous());
  const Tensor y = batch_norm(x, {}, {}, {}, {}, true);
  auto set_of = [&](size_t e) { return static_cast<int64_t>(e / 20) % 3; };
  expect_near(values(y), ref_norm(values(x), 3, set_of, set_of, {}, {}, 1e-5), 1e-5);
}

TEST(NormTest, BatchNormEmptyBatch) {
  Tensor rm = zeros({3}), rv = ones({3});
  const Tensor y = batch_norm(zeros({0, 3, 4}), ones({3}), zeros({3}), rm, rv, true);
  EXPECT_EQ(y.sizes(), (Shape{0, 3, 4}));
  EXPECT_EQ(values(rv), (std::vector<double>{1, 1, 1}));
}

TEST(NormTest, BatchNormLargeMeanStaysAccurate) {
  // Two-pass statistics: a mean 1e4 times the spread loses nothing in float64 and little in
  // float32 (rounding of the input itself dominates).
  const Tensor x = random({16, 2, 64}, f64, 12, 1.0, 1e4);
  const Tensor y = batch_norm(x, {}, {}, {}, {}, true);
  auto set_of = [&](size_t e) { return static_cast<int64_t>(e / 64) % 2; };
  expect_near(values(y), ref_norm(values(x), 2, set_of, set_of, {}, {}, 1e-5), 1e-9);
}

TEST(NormTest, BatchNormBadArguments) {
  const Tensor x = zeros({2, 3, 4});
  expect_error([&] { batch_norm(zeros({3}), {}, {}, {}, {}, true); }, {"[batch_norm]", "[3]"});
  expect_error([&] { batch_norm(x, zeros({4}), {}, {}, {}, true); },
               {"[batch_norm]", "weight", "[3]", "[4]"});
  expect_error(
      [&] {
        batch_norm(x, {}, zeros({2, 3}), {}, {}, true);
      },
      {"[batch_norm]", "bias", "[2, 3]"});
  expect_error([&] { batch_norm(x, {}, {}, zeros({5}), {}, true); },
               {"[batch_norm]", "running_mean", "[5]"});
  expect_error([&] { batch_norm(x, {}, {}, zeros({3}), zeros({1}), true); },
               {"[batch_norm]", "running_var", "[1]"});
  expect_error([&] { batch_norm(x, {}, {}, {}, {}, false); },
               {"[batch_norm]", "evaluation mode", "undefined"});
  expect_error(
      [&] {
        batch_norm(zeros({1, 3}), {}, {}, {}, {}, true);
      },
      {"[batch_norm]", "more than 1 value per channel", "[1, 3]"});
  expect_error([&] { batch_norm(x, {}, {}, {}, {}, true, 0.1, 0.0); }, {"[batch_norm]", "eps"});
  expect_error(
      [&] {
        batch_norm(zeros({2, 3}, {i64}), {}, {}, {}, {}, true);
      },
      {"[batch_norm]", "int64"});
}

// ---- layer_norm ---------------------------------------------------------------------------

TEST(NormTest, LayerNormMatchesReference) {
  for (DType dt : {f32, f64}) {
    const Tensor x = random({3, 4, 5, 6}, dt, 13, 2.0, -1.0);
    // One trailing dim, with affine parameters.
    const Tensor w = random({6}, dt, 14), b = random({6}, dt, 15);
    auto row6 = [](size_t e) { return static_cast<int64_t>(e / 6); };
    auto col6 = [](size_t e) { return static_cast<int64_t>(e % 6); };
    expect_near(values(layer_norm(x, {6}, w, b, 1e-5)),
                ref_norm(values(x), 60, row6, col6, values(w), values(b), 1e-5),
                dt == f32 ? 1e-5 : 1e-12);
    // Two trailing dims, weight only.
    const Tensor w2 = random({5, 6}, dt, 16);
    auto row30 = [](size_t e) { return static_cast<int64_t>(e / 30); };
    auto col30 = [](size_t e) { return static_cast<int64_t>(e % 30); };
    expect_near(values(layer_norm(x, {5, 6}, w2, {}, 1e-3)),
                ref_norm(values(x), 12, row30, col30, values(w2), {}, 1e-3),
                dt == f32 ? 1e-5 : 1e-12);
    // Every dim, no affine parameters.
    auto all = [](size_t) { return int64_t{0}; };
    auto idx = [](size_t e) { return static_cast<int64_t>(e); };
    expect_near(values(layer_norm(x, {3, 4, 5, 6})), ref_norm(values(x), 1, all, idx, {}, {}, 1e-5),
                dt == f32 ? 1e-5 : 1e-12);
  }
  // A strided input and a large row.
  const Tensor xt = random({7, 300}, f32, 17).t();
  auto row7 = [](size_t e) { return static_cast<int64_t>(e / 7); };
  auto col7 = [](size_t e) { return static_cast<int64_t>(e % 7); };
  expect_near(values(layer_norm(xt, {7})), ref_norm(values(xt), 300, row7, col7, {}, {}, 1e-5),
              1e-5);
  const Tensor big = random({2, 5000}, f32, 18, 1.0, 50.0);
  auto row5k = [](size_t e) { return static_cast<int64_t>(e / 5000); };
  expect_near(values(layer_norm(big, {5000})), ref_norm(values(big), 2, row5k, row5k, {}, {}, 1e-5),
              1e-4);
}

TEST(NormTest, LayerNormEmptyAndBadArguments) {
  EXPECT_EQ(layer_norm(zeros({0, 4}), {4}).sizes(), (Shape{0, 4}));
  const Tensor x = zeros({2, 3, 4});
  expect_error([&] { layer_norm(x, {3}); }, {"[layer_norm]", "[3]", "[2, 3, 4]"});
  expect_error([&] { layer_norm(x, {1, 2, 3, 4}); }, {"[layer_norm]", "[1, 2, 3, 4]"});
  expect_error([&] { layer_norm(x, {}); }, {"[layer_norm]", "at least 1"});
  expect_error([&] { layer_norm(x, {4}, zeros({3})); }, {"[layer_norm]", "weight", "[4]", "[3]"});
  expect_error(
      [&] {
        layer_norm(x, {3, 4}, {}, zeros({12}));
      },
      {"[layer_norm]", "bias", "[3, 4]", "[12]"});
  expect_error([&] { layer_norm(x, {4}, {}, {}, -1.0); }, {"[layer_norm]", "eps", "-1"});
  expect_error([&] { layer_norm(zeros({2, 4}, {i32}), {4}); }, {"[layer_norm]", "int32"});
}

// ---- group_norm ---------------------------------------------------------------------------

TEST(NormTest, GroupNormMatchesReference) {
  for (DType dt : {f32, f64}) {
    for (int64_t g : {1, 2, 3, 6}) {
      const Tensor x = random({2, 6, 4, 5}, dt, 19, 3.0, 1.0);
      const Tensor w = random({6}, dt, 20), b = random({6}, dt, 21);
      const int64_t per = 6 / g;
      auto set_of = [&](size_t e) {
        const int64_t n = static_cast<int64_t>(e) / 120, c = (static_cast<int64_t>(e) / 20) % 6;
        return n * g + c / per;
      };
      auto param_of = [](size_t e) { return (static_cast<int64_t>(e) / 20) % 6; };
      expect_near(values(group_norm(x, g, w, b, 1e-5)),
                  ref_norm(values(x), 2 * g, set_of, param_of, values(w), values(b), 1e-5),
                  dt == f32 ? 1e-5 : 1e-12);
    }
  }
  // 2-d input (no spatial dims), no affine, and a strided input.
  const Tensor x2 = random({4, 6}, f64, 22);
  auto set2 = [](size_t e) { return static_cast<int64_t>(e / 3); };
  expect_near(values(group_norm(x2, 2)), ref_norm(values(x2), 8, set2, set2, {}, {}, 1e-5), 1e-12);
  const Tensor xt = random({3, 4, 2, 8}, f32, 23).transpose(2, 3);
  auto set_t = [](size_t e) { return static_cast<int64_t>(e / 32); };
  expect_near(values(group_norm(xt, 2)), ref_norm(values(xt), 6, set_t, set_t, {}, {}, 1e-5), 1e-5);
  EXPECT_EQ(group_norm(zeros({0, 4, 3}), 2).sizes(), (Shape{0, 4, 3}));
  // No channels: every num_groups divides C = 0, even one whose product with N overflows.
  EXPECT_EQ(group_norm(zeros({5, 0, 3}), std::numeric_limits<int64_t>::max()).sizes(),
            (Shape{5, 0, 3}));
}

TEST(NormTest, GroupNormBadArguments) {
  const Tensor x = zeros({2, 6, 3});
  expect_error([&] { group_norm(x, 4); }, {"[group_norm]", "num_groups=4", "C=6"});
  expect_error([&] { group_norm(x, 0); }, {"[group_norm]", "num_groups=0"});
  expect_error([&] { group_norm(zeros({6}), 2); }, {"[group_norm]", "[6]"});
  expect_error([&] { group_norm(x, 2, zeros({3})); }, {"[group_norm]", "weight", "[6]", "[3]"});
  expect_error([&] { group_norm(x, 2, {}, zeros({7})); }, {"[group_norm]", "bias", "[7]"});
  expect_error([&] { group_norm(x, 2, {}, {}, 0.0); }, {"[group_norm]", "eps"});
}

TEST(NormTest, Float32AgreesWithFloat64) {
  const Tensor x = random({8, 16, 9, 9}, f64, 24, 1.5, 0.5);
  const Tensor x32 = x.to(f32);
  expect_near(values(batch_norm(x32, {}, {}, {}, {}, true)),
              values(batch_norm(x, {}, {}, {}, {}, true)), 1e-5);
  expect_near(values(layer_norm(x32, {9, 9})), values(layer_norm(x, {9, 9})), 1e-5);
  expect_near(values(group_norm(x32, 4)), values(group_norm(x, 4)), 1e-5);
}

// Affine parameters take the input's dtype (float32 also for a half input, PyTorch's mixed
// types): a float64 input with float32 weights was silently promoted.
TEST(NormTest, AffineParametersTakeTheInputsDtype) {
  const Tensor x = random({2, 4, 3}, f64, 21);
  const Tensor w = random({4}, f32, 22), b = random({4}, f32, 23);
  EXPECT_THROW(layer_norm(x, {3}, random({3}, f32, 24)), TypeError);
  EXPECT_THROW(group_norm(x, 2, w, b), TypeError);
  EXPECT_THROW(batch_norm(x, w, {}, {}, {}, true), TypeError);
  EXPECT_EQ(layer_norm(x.to(f16), {3}, random({3}, f32, 24)).dtype(), f16);
  EXPECT_EQ(group_norm(x.to(f32), 2, w, b).dtype(), f32);
}

}  // namespace
}  // namespace ember::testing
