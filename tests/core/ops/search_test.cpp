// searchsorted, bucketize, histc, unique and unique_consecutive against plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

using Vals = std::vector<double>;

TEST(Searchsorted, MatchesBinarySearchWithTiesOnBothSides) {
  Generator gen(11);
  // Few distinct values, so ties between the sequence and the values are common.
  Tensor seq = std::get<0>(sort(randint(0, 6, {3, 9}, TensorOptions(DType::Int64), &gen)));
  const Tensor vals = randint(-1, 8, {3, 7}, TensorOptions(DType::Int64), &gen);
  const Vals sv = values(seq), vv = values(vals);
  for (bool right : {false, true}) {
    Vals want;
    for (int64_t r = 0; r < 3; ++r) {
      const auto b = sv.begin() + r * 9, e = b + 9;
      for (int64_t j = 0; j < 7; ++j) {
        const double v = vv[static_cast<size_t>(r * 7 + j)];
        want.push_back(static_cast<double>(
            (right ? std::upper_bound(b, e, v) : std::lower_bound(b, e, v)) - b));
      }
    }
    const Tensor got = searchsorted(seq, vals, false, right);
    EXPECT_EQ(got.dtype(), DType::Int64);
    EXPECT_EQ(values(got), want) << "right=" << right;
    EXPECT_EQ(
        values(searchsorted(seq.to(DType::Float32), vals, true, false, right ? "right" : "left")),
        want);
  }
}

TEST(Searchsorted, OneDimensionalSequenceTakesValuesOfAnyShape) {
  const Tensor seq = tensor({1.0, 3.0, 5.0, 7.0});
  EXPECT_EQ(values(searchsorted(seq, tensor({{0.0, 3.0}, {6.0, 9.0}}))), (Vals{0, 1, 3, 4}));
  const Tensor s0 = searchsorted(seq, Scalar(5.0), false, true);
  EXPECT_EQ(s0.dim(), 0);
  EXPECT_EQ(s0.item<int64_t>(), 3);
  EXPECT_EQ(values(searchsorted(zeros({0}), tensor({1.0, 2.0}))), (Vals{0, 0}));
  EXPECT_EQ(searchsorted(seq, zeros({0, 2})).sizes(), (Shape{0, 2}));
  // An unsorted sequence with the sorter that sorts it.
  const Tensor unsorted = tensor({7.0, 1.0, 5.0, 3.0});
  EXPECT_EQ(values(searchsorted(unsorted, tensor({4.0}), false, false, std::nullopt,
                                tensor({1, 3, 2, 0}))),
            (Vals{2}));
  EXPECT_EQ(values(bucketize(tensor({1, 5, 9}), tensor({1, 3, 5, 7, 9}))), (Vals{0, 2, 4}));
  EXPECT_EQ(values(bucketize(tensor({1, 5, 9}), tensor({1, 3, 5, 7, 9}), true, true)),
            (Vals{1, 3, 5}));
}

TEST(Histc, CountsAsPyTorchDoes) {
  EXPECT_EQ(values(histc(tensor({1.0, 2.0, 1.0}), 4, 0, 3)), (Vals{0, 2, 1, 0}));
  // max itself is in the last bin; outside and NaN are not counted.
  EXPECT_EQ(values(histc(tensor({0.0, 3.0, -1.0, 4.0, NAN}), 3, 0, 3)), (Vals{1, 0, 1}));
  // min == max: the data's range.
  EXPECT_EQ(values(histc(tensor({2.0, 4.0, 4.0}), 2)), (Vals{1, 2}));
  EXPECT_EQ(values(histc(tensor({5.0}), 2)), (Vals{0, 1}));  // [4, 6]
  EXPECT_EQ(histc(tensor({1.0}, DType::Float64)).dtype(), DType::Float64);
}

/** The histogram of `xs` over increasing `edges` by a plain loop: bin b holds edges[b] <= x <
 *  edges[b + 1], the last bin closed, each x counted with its weight. */
Vals histogram_loop(const Vals& xs, const Vals& edges, const Vals& ws) {
  const size_t n = edges.size() - 1;
  Vals h(n, 0.0);
  for (size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i];
    if (!(x >= edges.front() && x <= edges.back())) continue;
    size_t b = 0;
    while (b + 1 < n && x >= edges[b + 1]) ++b;
    h[b] += ws.empty() ? 1.0 : ws[i];
  }
  return h;
}

TEST(Histogram, EqualBinsWeightsAndDensityMatchALoop) {
  std::mt19937 rng(3);
  std::normal_distribution<double> normal;
  Vals xs(500), ws(500);
  for (double& x : xs) x = normal(rng);
  for (double& w : ws) w = std::abs(normal(rng));
  xs[7] = NAN;
  const Tensor x = make(xs, {20, 25}, DType::Float64), w = make(ws, {20, 25}, DType::Float64);
  // A NaN makes the data's range not finite (PyTorch's error); with a range given it is skipped.
  expect_error([&] { histogram(x, 10); }, {"[histogram] range of", "is not finite"});
  auto [h, edges] = histogram(x, 12, std::pair(-2.0, 2.5), w);
  EXPECT_EQ(h.dtype(), DType::Float64);
  EXPECT_EQ(edges.sizes(), Shape({13}));
  const Vals e = values(edges);
  EXPECT_DOUBLE_EQ(e.front(), -2.0);
  EXPECT_DOUBLE_EQ(e.back(), 2.5);
  const Vals want = histogram_loop(xs, e, ws);
  const Vals got = values(h);
  for (size_t b = 0; b < want.size(); ++b) EXPECT_NEAR(got[b], want[b], 1e-12) << b;
  // density: hist / (sum * width), so it integrates to 1.
  const Vals d = values(std::get<0>(histogram(x, 12, std::pair(-2.0, 2.5), w, true)));
  double total = 0;
  for (size_t b = 0; b < d.size(); ++b) total += d[b] * (e[b + 1] - e[b]);
  EXPECT_NEAR(total, 1.0, 1e-12);
  // The data's range, with the largest element in the last (closed) bin.
  auto [h2, e2] = histogram(tensor({1.0, 2.0, 2.0, 4.0}), 3);
  EXPECT_EQ(values(h2), (Vals{1, 2, 1}));
  EXPECT_EQ(values(e2), (Vals{1, 2, 3, 4}));
  EXPECT_EQ(h2.dtype(), DType::Float32);
  // One value widens by 0.5 each way (NumPy's rule); an empty input has [-0.5, 0.5].
  EXPECT_EQ(values(std::get<1>(histogram(tensor({3.0}), 2))), (Vals{2.5, 3, 3.5}));
  EXPECT_EQ(values(std::get<1>(histogram(zeros({0}), 2))), (Vals{-0.5, 0, 0.5}));
}

TEST(Histogram, GivenEdgesAndErrors) {
  const Vals xs{0.0, 0.5, 1.0, 1.5, 3.0, 9.0, -1.0, 10.0};
  const Vals edges{0.0, 1.0, 3.0, 10.0};
  auto [h, e] = histogram(make(xs, {8}, DType::Float32), make(edges, {4}, DType::Float32));
  EXPECT_EQ(values(h), histogram_loop(xs, edges, {}));
  EXPECT_EQ(values(h), (Vals{2, 2, 3}));
  EXPECT_EQ(values(e), edges);
  expect_error([&] { histogram(tensor({1.0}, DType::Int64), 3); },
               {"[histogram] expects a floating point input"});
  expect_error([&] { histogram(tensor({1.0}), 0); }, {"[histogram] bins must be > 0"});
  expect_error([&] { histogram(tensor({1.0}), 2, std::pair(2.0, 1.0)); },
               {"[histogram] max must be larger than min"});
  expect_error([&] { histogram(tensor({1.0}), tensor({1.0})); },
               {"[histogram] bins must be a 1-d tensor of at least 2 edges"});
  expect_error(
      [&] {
        histogram(tensor({1.0}), tensor({0.0, 1.0}, DType::Float64));
      },
      {"[histogram] bins must have the input's dtype"});
  expect_error(
      [&] {
        histogram(tensor({1.0, 2.0}), 2, std::nullopt, tensor({1.0}));
      },
      {"[histogram] weight must have the input's shape"});
}

TEST(Unique, ValuesInverseAndCountsMatchAMap) {
  Generator gen(3);
  const Tensor x = randint(-3, 4, {4, 5}, TensorOptions(DType::Int64), &gen);
  std::map<double, int64_t> counts;
  for (double v : values(x)) ++counts[v];
  const auto [u, inverse, c] = unique(x);
  Vals want_u, want_c;
  for (const auto& [v, n] : counts) {
    want_u.push_back(v);
    want_c.push_back(static_cast<double>(n));
  }
  EXPECT_EQ(values(u), want_u);
  EXPECT_EQ(values(c), want_c);
  EXPECT_EQ(inverse.sizes(), x.sizes());
  EXPECT_EQ(values(index_select(u, 0, inverse.reshape({-1}))), values(x));
}

TEST(Unique, SlicesAlongADimAndConsecutiveRuns) {
  const Tensor x = tensor({{1, 3, 1, 2}, {0, 0, 0, 5}});
  // The columns along dim 1: (1,0), (3,0), (1,0), (2,5) -> (1,0), (2,5), (3,0).
  const auto [u, inverse, c] = unique(x, true, 1);
  EXPECT_EQ(u.sizes(), (Shape{2, 3}));
  EXPECT_EQ(values(u), (Vals{1, 2, 3, 0, 5, 0}));
  EXPECT_EQ(values(inverse), (Vals{0, 2, 0, 1}));
  EXPECT_EQ(values(c), (Vals{2, 1, 1}));
  const auto [r, rinv, rc] = unique_consecutive(tensor({1, 1, 2, 2, 3, 1, 1, 2}));
  EXPECT_EQ(values(r), (Vals{1, 2, 3, 1, 2}));
  EXPECT_EQ(values(rinv), (Vals{0, 0, 1, 1, 2, 3, 3, 4}));
  EXPECT_EQ(values(rc), (Vals{2, 2, 1, 2, 1}));
  const auto [e, einv, ec] = unique(zeros({0, 3}));
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(einv.sizes(), (Shape{0, 3}));
  // Each NaN is its own value, as in PyTorch.
  EXPECT_EQ(std::get<0>(unique(tensor({NAN, 1.0, NAN}))).numel(), 3);
}

TEST(Isin, MatchesAPlainSearchWithPyTorchsPromotionAndNaN) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(-20, 20);
  Vals xs(300), ts(40);
  for (double& v : xs) v = pick(rng) / 2.0;
  for (double& v : ts) v = pick(rng) / 2.0;
  xs[0] = NAN;
  ts[0] = NAN;  // NaN equals nothing, itself included
  const Tensor x = from_vector(xs, {3, 100}, DType::Float64).to(DType::Float32);
  const Tensor t = from_vector(ts, {4, 10}, DType::Float64).to(DType::Float32);
  Vals want(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    want[i] = std::find(ts.begin(), ts.end(), xs[i]) != ts.end() ? 1 : 0;
  }
  const Tensor got = isin(x, t);
  EXPECT_EQ(got.dtype(), DType::Bool);
  EXPECT_EQ(got.sizes(), x.sizes());
  EXPECT_EQ(values(got), want);
  Vals inverted = want;
  for (double& v : inverted) v = 1 - v;
  EXPECT_EQ(values(isin(x, t, false, true)), inverted);
  // int64 elements against float test elements compare as floats: 2 is in {2.0}, 3 not in {2.5}.
  EXPECT_EQ(values(isin(tensor({2, 3}, DType::Int64), tensor({2.0, 2.5}))), (Vals{1, 0}));
  EXPECT_EQ(values(isin(tensor({1, 0}, DType::Bool), tensor({1}, DType::Bool))), (Vals{1, 0}));
  EXPECT_EQ(values(isin(tensor({1.0, 5.0}), Scalar(5))), (Vals{0, 1}));
  const Tensor one = isin(Scalar(4), tensor({1, 4}, DType::Int64));
  EXPECT_EQ(one.dim(), 0);
  EXPECT_EQ(one.item(), 1);
  EXPECT_EQ(values(isin(tensor({1.0}), zeros({0}))), (Vals{0}));
}

TEST(Bincount, CountsOrSumsWeightsWithPyTorchsDtypes) {
  const Tensor x = tensor({0, 1, 1, 3, 1}, DType::Int64);
  const Tensor c = bincount(x);
  EXPECT_EQ(c.dtype(), DType::Int64);
  EXPECT_EQ(values(c), (Vals{1, 3, 0, 1}));
  EXPECT_EQ(values(bincount(x, {}, 6)), (Vals{1, 3, 0, 1, 0, 0}));
  const Tensor w32 = bincount(x, tensor({0.5, 1.0, 2.0, 4.0, 8.0}));
  EXPECT_EQ(w32.dtype(), DType::Float32);
  EXPECT_EQ(values(w32), (Vals{0.5, 11.0, 0, 4.0}));
  EXPECT_EQ(bincount(x, tensor({1, 1, 1, 1, 1}, DType::Int64)).dtype(), DType::Float64);
  EXPECT_EQ(values(bincount(zeros({0}, DType::Int32), {}, 2)), (Vals{0, 0}));
  EXPECT_THROW(bincount(tensor({1, -1}, DType::Int64)), ValueError);
  EXPECT_THROW(bincount(tensor({1.0})), TypeError);
  EXPECT_THROW(bincount(x.reshape({5, 1})), ValueError);
  EXPECT_THROW(bincount(x, tensor({1.0})), ValueError);
}

TEST(UnravelIndex, CoordinatesOfFlatIndicesNegativeOnesFromTheEnd) {
  const std::vector<Tensor> rc = unravel_index(tensor({0, 5, 7, -1}, DType::Int64), {2, 4});
  ASSERT_EQ(rc.size(), 2u);
  EXPECT_EQ(values(rc[0]), (Vals{0, 1, 1, 1}));
  EXPECT_EQ(values(rc[1]), (Vals{0, 1, 3, 3}));
  EXPECT_EQ(rc[0].dtype(), DType::Int64);
  EXPECT_THROW(unravel_index(tensor({8}, DType::Int64), {2, 4}), IndexError);
  EXPECT_THROW(unravel_index(tensor({-9}, DType::Int64), {2, 4}), IndexError);
  EXPECT_THROW(unravel_index(tensor({1.0}), {2, 4}), TypeError);
  EXPECT_EQ(unravel_index(zeros({0}, DType::Int64), {0, 3})[0].numel(), 0);
  EXPECT_EQ(values(argwhere(tensor({{0.0, 1.0}, {2.0, 0.0}}))), (Vals{0, 1, 1, 0}));
}

}  // namespace
}  // namespace ember::testing
