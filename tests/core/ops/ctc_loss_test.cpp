// ctc_loss on hand-computed cases (alignments counted by hand), its gradient, the infinite and
// empty cases, the reductions, and every argument check. (PyTorch's values are compared in
// tests/python/test_grid_ctc.py.)
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

constexpr DType f64 = DType::Float64;
const double kInf = std::numeric_limits<double>::infinity();

/** log of the probabilities p [T, 1, C]. */
Tensor log_of(const std::vector<double>& p, int64_t frames, int64_t classes) {
  return log(make(p, {frames, 1, classes}, f64));
}

/** expect_close, with infinite values expected exactly. */
void expect_loss(const Tensor& got, const std::vector<double>& want, double tol,
                 const std::string& what) {
  const std::vector<double> v = values(got);
  ASSERT_EQ(v.size(), want.size()) << what;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(v[i], want[i]) << what << " at " << i;
    } else {
      EXPECT_NEAR(v[i], want[i], tol * (1.0 + std::abs(want[i]))) << what << " at " << i;
    }
  }
}

Tensor ints(const std::vector<double>& v, IntList sizes) {
  return make(v, sizes, DType::Int64);
}

TEST(CtcLoss, TwoFramesOneLabelSumsItsThreeAlignments) {
  // Frames p0 = (blank 0.4, label 0.6), p1 = (0.7, 0.3): "1 1", "_ 1" and "1 _" have probability
  // 0.18 + 0.12 + 0.42 = 0.72.
  Tensor lp = log_of({0.4, 0.6, 0.7, 0.3}, 2, 2).requires_grad_(true);
  const Tensor loss = ctc_loss(lp, ints({1}, {1, 1}), {2}, {1}, 0, Reduction::None);
  expect_loss(loss, {-std::log(0.72)}, 1e-15, "loss");
  loss.backward();
  // d loss / d lp_t(c): minus the share of the probability whose alignments pass (t, c).
  expect_loss(lp.grad(), {-0.12 / 0.72, -0.60 / 0.72, -0.42 / 0.72, -0.30 / 0.72}, 1e-14,
              "gradient");
}

TEST(CtcLoss, RepeatedLabelsNeedABlankBetweenThem) {
  // "1 1" in three frames has one alignment, "1 _ 1"; in two frames none (inf).
  const Tensor lp = log_of({0.2, 0.8, 0.9, 0.1, 0.3, 0.7}, 3, 2);
  expect_loss(ctc_loss(lp, ints({1, 1}, {1, 2}), {3}, {2}, 0, Reduction::None),
              {-std::log(0.8 * 0.9 * 0.7)}, 1e-14, "three frames");
  expect_loss(ctc_loss(lp, ints({1, 1}, {1, 2}), {2}, {2}, 0, Reduction::None), {kInf}, 0,
              "two frames");
}

TEST(CtcLoss, OneFrameAndTheBlankElsewhere) {
  // blank = 2: the target [0] in one frame is lp_0(0); an empty target the all-blank path.
  const Tensor lp = log_of({0.5, 0.2, 0.3, 0.1, 0.1, 0.8}, 2, 3);
  expect_loss(ctc_loss(lp, ints({0}, {1, 1}), {1}, {1}, 2, Reduction::None), {-std::log(0.5)},
              1e-15, "one frame");
  expect_loss(ctc_loss(lp, ints({0}, {1, 1}), {2}, {0}, 2, Reduction::None), {-std::log(0.3 * 0.8)},
              1e-15, "empty target");
}

TEST(CtcLoss, BatchesReductionsAndEmptyInputs) {
  // Two entries over the same frames: the second stops after one frame.
  const Tensor one = log_of({0.4, 0.6, 0.7, 0.3}, 2, 2);
  const Tensor lp = cat({one, one}, 1);
  const Tensor targets = ints({1, 0, 1, 0}, {2, 2});  // padded; the second entry's 0s unused
  const double l0 = -std::log(0.72), l1 = -std::log(0.6);
  expect_loss(ctc_loss(lp, targets, {2, 1}, {1, 1}, 0, Reduction::None), {l0, l1}, 1e-14, "none");
  expect_loss(ctc_loss(lp, targets, {2, 1}, {1, 1}, 0, Reduction::Sum), {l0 + l1}, 1e-14, "sum");
  // Mean divides by the target lengths first (at least 1): here lengths 1 and 0.
  const double e1 = -std::log(0.4);  // the empty target over one frame: blank
  expect_loss(ctc_loss(lp, targets, {2, 1}, {1, 0}, 0, Reduction::Mean), {(l0 + e1) / 2}, 1e-14,
              "mean");
  // Concatenated targets give the same as padded ones.
  expect_loss(ctc_loss(lp, ints({1, 1}, {2}), {2, 1}, {1, 1}, 0, Reduction::None), {l0, l1}, 1e-14,
              "concatenated");
  // Lengths as tensors give the same as lists.
  expect_loss(ctc_loss(lp, targets, ints({2, 1}, {2}), ints({1, 1}, {2}), 0, Reduction::None),
              {l0, l1}, 1e-14, "tensor lengths");
  // An input of length 0 costs 0 with an empty target, else inf.
  expect_loss(ctc_loss(lp, targets, {0, 0}, {0, 1}, 0, Reduction::None), {0, kInf}, 0, "empty");
}

TEST(CtcLoss, ZeroInfinityZeroesTheLossAndItsGradient) {
  Tensor lp = log_of({0.2, 0.8, 0.9, 0.1}, 2, 2).requires_grad_(true);
  const Tensor tg = ints({1, 1}, {1, 2});
  const Tensor inf_loss = ctc_loss(lp, tg, {2}, {2}, 0, Reduction::Sum);
  expect_loss(inf_loss, {kInf}, 0, "inf");
  const Tensor zeroed = ctc_loss(lp, tg, {2}, {2}, 0, Reduction::Sum, true);
  expect_loss(zeroed, {0}, 0, "zeroed");
  zeroed.backward();
  expect_loss(lp.grad(), {0, 0, 0, 0}, 0, "no NaN in the gradient");
}

TEST(CtcLoss, ATargetLongerThanItsInputCostsInfWithoutStates) {
  // A padded target of 2^40 labels (a zero-stride view): no table of 2^41 states is made.
  const int64_t huge = int64_t{1} << 40;
  const Tensor tg = ints({1}, {1, 1}).expand({2, huge});
  const Tensor lp = log_of({0.4, 0.6, 0.7, 0.3}, 2, 2);
  const Tensor loss = ctc_loss(cat({lp, lp}, 1), tg, {2, 2}, {huge, 1}, 0, Reduction::None);
  expect_loss(loss, {kInf, -std::log(0.72)}, 1e-14, "settled");
}

TEST(CtcLoss, UnbatchedInputAndFloat32) {
  const Tensor lp = log_of({0.4, 0.6, 0.7, 0.3}, 2, 2).squeeze(1);
  const Tensor none = ctc_loss(lp, ints({1}, {1}), {2}, {1}, 0, Reduction::None);
  EXPECT_EQ(none.dim(), 0);
  expect_loss(none, {-std::log(0.72)}, 1e-15, "unbatched");
  const Tensor f = ctc_loss(lp.to(DType::Float32), ints({1}, {1}), {2}, {1});
  EXPECT_EQ(f.dtype(), DType::Float32);
  expect_loss(f, {-std::log(0.72)}, 1e-6, "float32");
}

TEST(CtcLoss, RefusesBadArguments) {
  const Tensor lp = zeros({4, 2, 3}, f64), tg = ints({1, 2, 2, 1}, {2, 2});
  EXPECT_PRED2(contains, error_of<ValueError>([&] {
                 ctc_loss(lp, tg, {4, 5}, {2, 2});
               }),
               "[ctc_loss] input_lengths must be in [0, T] with T = 4 (log_probs shape "
               "[4, 2, 3]): got 5 for batch entry 1");
  EXPECT_PRED2(contains, error_of<ValueError>([&] {
                 ctc_loss(lp, tg, {4, 4}, {2, -1});
               }),
               "target_lengths must not be negative: got -1 for batch entry 1");
  EXPECT_PRED2(contains, error_of<ValueError>([&] {
                 ctc_loss(lp, tg, {4}, {2, 2});
               }),
               "input_lengths must hold one length per batch entry (2): got 1");
  EXPECT_PRED2(contains, error_of<ValueError>([&] {
                 ctc_loss(lp, tg, {4, 4}, {3, 2});
               }),
               "S at least the longest target length 3: got shape [2, 2]");
  EXPECT_PRED2(contains, error_of<ValueError>([&] {
                 ctc_loss(lp, ints({1, 2, 1}, {3}), {4, 4}, {2, 2});
               }),
               "concatenated targets hold 3 labels but target_lengths sum to 4");
  EXPECT_PRED2(contains, error_of<ValueError>([&] {
                 ctc_loss(lp, tg, {4, 4}, {2, 2}, 3);
               }),
               "blank must be a class in [0, 3): got 3");
  EXPECT_PRED2(contains, error_of<IndexError>([&] {
                 ctc_loss(lp, ints({1, 3, 2, 1}, {2, 2}), {4, 4}, {2, 2});
               }),
               "target label 3 of batch entry 0 is out of range for 3 classes");
  EXPECT_THROW(ctc_loss(zeros({4, 3}, f64), tg, {4}, {2}), ValueError);  // unbatched needs [S]
  EXPECT_THROW(ctc_loss(zeros({4}, f64), tg, {4}, {2}), ValueError);
  EXPECT_THROW(ctc_loss(lp, tg.to(f64), {4, 4}, {2, 2}), TypeError);
  EXPECT_THROW(ctc_loss(lp.to(DType::Int64), tg, {4, 4}, {2, 2}), TypeError);
  EXPECT_THROW(ctc_loss(lp, tg, zeros({2}, f64), ints({2, 2}, {2})), TypeError);
  EXPECT_THROW(ctc_loss(lp, tg, {4, 4}, {2, 2}, 0, Reduction::BatchMean), ValueError);
}

}  // namespace
}  // namespace ember::testing
