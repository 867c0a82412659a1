// searchsorted, bucketize, histc, unique and unique_consecutive against plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
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

}  // namespace
}  // namespace ember::testing
