// Losses against float64 reference loops and hand-computed cases: nll_loss and cross_entropy
// with class weights, ignore_index, label smoothing, every reduction, [N, C, d...] and
// unbatched inputs and probability targets; the binary losses with weights and pos_weight
// (stable at large |x|); mse and l1; and every argument check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include <ember/ember.h>

#include "core/ops/loss_testing.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

Tensor uniform(IntList sizes, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Generator g(seed);
  return add(mul(rand(sizes, f64, &g), hi - lo), lo);
}

std::vector<double> reduce(const std::vector<double>& l, Reduction r, double denom) {
  if (r == Reduction::None) return l;
  double s = 0;
  for (double v : l) s += v;
  return {r == Reduction::Sum ? s : s / denom};
}

// Cross entropy in float64 on logits [N, C, D] (D = product of the trailing dims) with class
// targets [N, D]; with `from_logits` false the input is already log-probabilities (nll_loss).
std::vector<double> ce_ref(const Tensor& x, const std::vector<int64_t>& t,
                           const std::vector<double>& w, int64_t ignore, Reduction r, double eps,
                           bool from_logits) {
  const std::vector<double> v = values(x);
  const int64_t n = x.size(0), c = x.size(1), d = x.numel() / std::max<int64_t>(n * c, 1);
  std::vector<double> l;
  double denom = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < d; ++k) {
      auto at = [&](int64_t j) { return v[static_cast<size_t>((i * c + j) * d + k)]; };
      double m = -1e300, s = 0;
      for (int64_t j = 0; j < c; ++j) m = std::max(m, at(j));
      for (int64_t j = 0; j < c; ++j) s += std::exp(at(j) - m);
      auto logp = [&](int64_t j) { return from_logits ? at(j) - m - std::log(s) : at(j); };
      const int64_t tk = t[static_cast<size_t>(i * d + k)];
      if (tk == ignore) {
        l.push_back(0);
        continue;
      }
      auto wc = [&](int64_t j) { return w.empty() ? 1.0 : w[static_cast<size_t>(j)]; };
      double smooth = 0;
      for (int64_t j = 0; j < c; ++j) smooth -= wc(j) * logp(j);
      l.push_back((1 - eps) * -wc(tk) * logp(tk) + eps / c * smooth);
      denom += wc(tk);
    }
  }
  return reduce(l, r, denom);
}

const Reduction kReductions[] = {Reduction::None, Reduction::Sum, Reduction::Mean};

TEST(CrossEntropy, HandComputed) {
  // log(e + e^2 + e^3) - 3.
  const double want = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0;
  EXPECT_NEAR(cross_entropy(tensor({{1., 2., 3.}}, f64), tensor({2})).item(), want, 1e-15);
  EXPECT_NEAR(cross_entropy(tensor({1., 2., 3.}, f64), tensor({2}).reshape({})).item(), want,
              1e-15);
  EXPECT_NEAR(cross_entropy(tensor({{1., 2., 3.}}), tensor({2})).item(), want, 1e-5);
  EXPECT_NEAR(nll_loss(tensor({{-1., -2., -3.}}), tensor({1})).item(), 2.0, 1e-12);
}

TEST(NllLoss, MatchesReferenceWithWeightsIgnoreAndReductions) {
  const Tensor x = log_softmax(uniform({4, 3, 2}, 1), 1);
  const std::vector<int64_t> t = {0, 2, 1, -100, 2, 2, -100, 1};
  const Tensor tt = tensor({{0, 2}, {1, -100}, {2, 2}, {-100, 1}});
  const std::vector<double> w = {0.2, 1.5, 0.7};
  for (Reduction r : kReductions) {
    expect_near(values(nll_loss(x, tt, Tensor(), -100, r)), ce_ref(x, t, {}, -100, r, 0, false),
                1e-12);
    expect_near(values(nll_loss(x, tt, tensor({0.2, 1.5, 0.7}, f64), -100, r)),
                ce_ref(x, t, w, -100, r, 0, false), 1e-12);
    // A class index as ignore_index; float32 agrees with float64.
    std::vector<int64_t> t2 = {0, 2, 1, 0, 2, 2, 0, 1};
    const Tensor tt2 = tensor({{0, 2}, {1, 0}, {2, 2}, {0, 1}});
    expect_near(values(nll_loss(x.to(f32), tt2, tensor({0.2, 1.5, 0.7}), 2, r)),
                ce_ref(x, t2, w, 2, r, 0, false), 1e-5);
  }
  // Non-contiguous input: [N, C] as the transpose of [C, N].
  const Tensor xt = log_softmax(uniform({3, 5}, 2), 0).t();
  const std::vector<int64_t> t5 = {2, 0, 1, 1, 0};
  expect_near(values(nll_loss(xt, tensor({2, 0, 1, 1, 0}))),
              ce_ref(xt.contiguous(), t5, {}, -100, Reduction::Mean, 0, false), 1e-12);
}

TEST(NllLoss, AllIgnoredMeanIsNanAndEmptyBatch) {
  const Tensor x = log_softmax(uniform({2, 3}, 3), 1);
  EXPECT_TRUE(std::isnan(nll_loss(x, tensor({-100, -100})).item()));
  EXPECT_EQ(nll_loss(x, tensor({-100, -100}), Tensor(), -100, Reduction::Sum).item(), 0.0);
  EXPECT_TRUE(std::isnan(nll_loss(x, tensor({-100, -100}), tensor({1., 2., 3.}, f64)).item()));
  EXPECT_TRUE(std::isnan(nll_loss(empty({0, 3}, f64), empty({0}, i64)).item()));
  EXPECT_EQ(nll_loss(empty({0, 3}, f64), empty({0}, i64), {}, -100, Reduction::None).sizes(),
            Shape({0}));
}

TEST(CrossEntropy, MatchesReferenceWithSmoothingWeightsAndSpatialDims) {
  const Tensor x = uniform({3, 4, 2, 2}, 10, -3, 3);
  const Tensor tt = tensor({{{0, 3}, {1, -100}}, {{2, 2}, {3, 0}}, {{-100, 1}, {1, 3}}});
  const std::vector<int64_t> t = {0, 3, 1, -100, 2, 2, 3, 0, -100, 1, 1, 3};
  const std::vector<double> w = {0.5, 2.0, 1.0, 0.25};
  const Tensor wt = tensor({0.5, 2.0, 1.0, 0.25}, f64);
  for (Reduction r : kReductions) {
    for (double eps : {0.0, 0.1, 1.0}) {
      expect_near(values(cross_entropy(x, tt, Tensor(), -100, r, eps)),
                  ce_ref(x, t, {}, -100, r, eps, true), 1e-12);
      expect_near(values(cross_entropy(x, tt, wt, -100, r, eps)),
                  ce_ref(x, t, w, -100, r, eps, true), 1e-12);
      expect_near(values(cross_entropy(x.to(f32), tt, wt.to(f32), -100, r, eps)),
                  ce_ref(x, t, w, -100, r, eps, true), 1e-5);
    }
  }
  // Unbatched [C] with a 0-d target, label smoothing.
  const Tensor x1 = uniform({4}, 11);
  expect_near(values(cross_entropy(x1, tensor({1}).reshape({}), wt, -100, Reduction::None, 0.2)),
              ce_ref(x1.view({1, 4}), {1}, w, -100, Reduction::None, 0.2, true), 1e-12);
}

TEST(CrossEntropy, ProbabilityTargets) {
  const Tensor x = uniform({3, 4, 2}, 12, -2, 2);
  const Tensor q = softmax(uniform({3, 4, 2}, 13), 1);
  const std::vector<double> xv = values(log_softmax(x, 1)), qv = values(q);
  const std::vector<double> w = {0.5, 2.0, 1.0, 0.25};
  for (double eps : {0.0, 0.3}) {
    for (bool weighted : {false, true}) {
      std::vector<double> l(6, 0.0);
      for (int64_t i = 0; i < 3; ++i) {
        for (int64_t j = 0; j < 4; ++j) {
          for (int64_t k = 0; k < 2; ++k) {
            const auto e = static_cast<size_t>((i * 4 + j) * 2 + k);
            const double qs = qv[e] * (1 - eps) + eps / 4;
            l[static_cast<size_t>(i * 2 + k)] -=
                (weighted ? w[static_cast<size_t>(j)] : 1.0) * qs * xv[e];
          }
        }
      }
      const Tensor wt = weighted ? tensor({0.5, 2.0, 1.0, 0.25}, f64) : Tensor();
      for (Reduction r : kReductions) {
        expect_near(values(cross_entropy(x, q, wt, -100, r, eps)), reduce(l, r, 6.0), 1e-12);
      }
    }
  }
}

TEST(CrossEntropy, BadArguments) {
  const Tensor x = uniform({2, 3}, 14);
  expect_error([&] { cross_entropy(x, tensor({0, 3})); }, {"[cross_entropy]", "target 3", "C=3"});
  expect_error([&] { nll_loss(x, tensor({-1, 0})); }, {"[nll_loss]", "target -1", "C=3"});
  expect_error([&] { nll_loss(x, tensor({1., 0.})); }, {"[nll_loss]", "int64", "float32"});
  expect_error([&] { cross_entropy(x, tensor({true, false})); }, {"[cross_entropy]", "bool"});
  expect_error(
      [&] {
        nll_loss(x, tensor({0, 1, 2}));
      },
      {"[nll_loss]", "target shape [3]", "input shape [2, 3]"});
  expect_error(
      [&] {
        nll_loss(x, tensor({0, 1}), tensor({1., 2.}, f64));
      },
      {"[nll_loss]", "weight", "C=3", "[2]"});
  expect_error(
      [&] {
        cross_entropy(x, uniform({2, 4}, 15));
      },
      {"[cross_entropy]", "probability targets", "[2, 4]"});
  expect_error(
      [&] {
        cross_entropy(x, tensor({0, 1}), {}, -100, Reduction::Mean, 1.5);
      },
      {"[cross_entropy]", "label_smoothing", "1.5"});
  expect_error(
      [&] {
        nll_loss(arange(6).view({2, 3}), tensor({0, 1}));
      },
      {"[nll_loss]", "floating", "int64"});
}

// ---- binary losses ----------------------------------------------------------------------------

TEST(BinaryCrossEntropy, MatchesReferenceWithWeightAndClamp) {
  const Tensor p = uniform({3, 4}, 20, 0.01, 0.99), t = uniform({3, 4}, 21, 0, 1);
  const Tensor w = uniform({4}, 22, 0.5, 2);
  const std::vector<double> pv = values(p), tv = values(t), wv = values(w);
  std::vector<double> l, lw;
  for (size_t i = 0; i < pv.size(); ++i) {
    const double e = -(tv[i] * std::log(pv[i]) + (1 - tv[i]) * std::log(1 - pv[i]));
    l.push_back(e);
    lw.push_back(e * wv[i % 4]);
  }
  for (Reduction r : kReductions) {
    expect_near(values(binary_cross_entropy(p, t, Tensor(), r)), reduce(l, r, 12), 1e-12);
    expect_near(values(binary_cross_entropy(p, t, w, r)), reduce(lw, r, 12), 1e-12);
    expect_near(values(binary_cross_entropy(p.to(f32), t.to(f32), w.to(f32), r)), reduce(lw, r, 12),
                1e-4);
  }
  // Logs clamp at -100: p = 0 with t = 1 costs 100, and p = 1, t = 1 costs 0.
  expect_near(values(binary_cross_entropy(tensor({0., 1.}, f64), tensor({1., 1.}, f64), {},
                                          Reduction::None)),
              {100, 0}, 1e-12);
}

TEST(BinaryCrossEntropyWithLogits, MatchesReferenceAndIsStable) {
  const Tensor x = uniform({3, 4}, 23, -5, 5), t = uniform({3, 4}, 24, 0, 1);
  const Tensor w = uniform({3, 1}, 25, 0.5, 2), pw = uniform({4}, 26, 0.5, 3);
  const std::vector<double> xv = values(x), tv = values(t), wv = values(w), pwv = values(pw);
  std::vector<double> l, lw;
  for (size_t i = 0; i < xv.size(); ++i) {
    const double s = 1 / (1 + std::exp(-xv[i]));
    const double pwi = pwv[i % 4];
    l.push_back(-(tv[i] * std::log(s) + (1 - tv[i]) * std::log(1 - s)));
    lw.push_back(-wv[i / 4] * (pwi * tv[i] * std::log(s) + (1 - tv[i]) * std::log(1 - s)));
  }
  for (Reduction r : kReductions) {
    expect_near(values(binary_cross_entropy_with_logits(x, t, {}, {}, r)), reduce(l, r, 12), 1e-12);
    expect_near(values(binary_cross_entropy_with_logits(x, t, w, pw, r)), reduce(lw, r, 12), 1e-12);
    expect_near(
        values(binary_cross_entropy_with_logits(x.to(f32), t.to(f32), w.to(f32), pw.to(f32), r)),
        reduce(lw, r, 12), 1e-4);
  }
  // Large |x|: finite, and equal to |x| when the target disagrees with the sign.
  const Tensor big = tensor({1000., -1000., 1000., -1000.}, f64);
  expect_near(values(binary_cross_entropy_with_logits(big, tensor({0., 1., 1., 0.}, f64), {}, {},
                                                      Reduction::None)),
              {1000, 1000, 0, 0}, 1e-9);
  // Large |x| in the gradient too.
  Tensor xg = tensor({1000., -1000.}, f64).requires_grad_(true);
  binary_cross_entropy_with_logits(xg, tensor({0., 0.}, f64), {}, {}, Reduction::Sum).backward();
  expect_near(values(xg.grad()), {1, 0}, 1e-12);
}

TEST(BinaryCrossEntropy, BadArguments) {
  const Tensor p = uniform({2, 3}, 27, 0.1, 0.9);
  expect_error(
      [&] {
        binary_cross_entropy(p, uniform({3, 2}, 28, 0, 1));
      },
      {"[binary_cross_entropy]", "[2, 3]", "[3, 2]", "must be the same"});
  expect_error([&] { binary_cross_entropy(p, p, uniform({4}, 29)); },
               {"[binary_cross_entropy]", "weight", "[4]"});
  expect_error([&] { binary_cross_entropy_with_logits(p, p, {}, uniform({2}, 30)); },
               {"[binary_cross_entropy_with_logits]", "pos_weight", "[2]"});
  expect_error([&] { binary_cross_entropy_with_logits(arange(3), arange(3)); },
               {"[binary_cross_entropy_with_logits]", "floating"});
}

// ---- regression losses ------------------------------------------------------------------------

TEST(MultiLabelMarginLoss, PyTorchsExampleAndALoop) {
  // PyTorch's documented example: targets 3 and 0 (then -1 ends the list) give 0.85.
  const Tensor x = tensor({{0.1, 0.2, 0.4, 0.8}}, f64);
  const Tensor y = tensor({{3.0, 0.0, -1.0, 1.0}}, DType::Int64);
  EXPECT_NEAR(multilabel_margin_loss(x, y).item(), 0.85, 1e-12);
  EXPECT_NEAR(multilabel_margin_loss(x.select(0, 0), y.select(0, 0), Reduction::None).item(), 0.85,
              1e-12);
  // A batch against a loop, repeated targets counted twice as PyTorch's kernel does.
  const Tensor xb = uniform({3, 5}, 4);
  const std::vector<std::vector<int64_t>> rows{{4, 1, -1, 0, 2}, {2, 2, 0, 1, 3}, {-1, 0, 0, 0, 0}};
  Tensor yb = empty({3, 5}, DType::Int64);
  for (int64_t n = 0; n < 3; ++n) {
    for (int64_t k = 0; k < 5; ++k) yb.data_ptr<int64_t>()[n * 5 + k] = rows[n][k];
  }
  const std::vector<double> xv = values(xb);
  std::vector<double> want;
  for (int64_t n = 0; n < 3; ++n) {
    std::vector<int64_t> listed;
    for (int64_t t : rows[n]) {
      if (t < 0) break;
      listed.push_back(t);
    }
    double l = 0;
    for (int64_t j : listed) {
      for (int64_t i = 0; i < 5; ++i) {
        if (std::find(listed.begin(), listed.end(), i) != listed.end()) continue;
        l += std::max(0.0, 1 - (xv[n * 5 + j] - xv[n * 5 + i]));
      }
    }
    want.push_back(l / 5);
  }
  expect_near(values(multilabel_margin_loss(xb, yb, Reduction::None)), want, 1e-12);
  EXPECT_NEAR(multilabel_margin_loss(xb, yb, Reduction::Sum).item(), want[0] + want[1] + want[2],
              1e-12);
  expect_error(
      [&] {
        multilabel_margin_loss(xb, tensor({{7.0, 0.0, 0.0, 0.0, 0.0}}, DType::Int64));
      },
      {"[multilabel_margin_loss] target must have the input's shape"});
  Tensor bad = yb.clone();
  bad.data_ptr<int64_t>()[0] = 5;
  expect_error([&] { multilabel_margin_loss(xb, bad); },
               {"[multilabel_margin_loss] target holds a class outside [-1, 5): got 5"});
  const Tensor leaf = xb.clone().requires_grad_(true);
  const autograd::GradcheckResult r = autograd::gradcheck(
      [&yb](const std::vector<Tensor>& in) { return multilabel_margin_loss(in[0], yb); }, {leaf});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(RegressionLosses, MseAndL1MatchReference) {
  const Tensor x = uniform({3, 5}, 40), t = uniform({5, 3}, 41).t();  // t non-contiguous
  const std::vector<double> xv = values(x), tv = values(t);
  std::vector<double> sq, ab;
  for (size_t i = 0; i < xv.size(); ++i) {
    sq.push_back((xv[i] - tv[i]) * (xv[i] - tv[i]));
    ab.push_back(std::abs(xv[i] - tv[i]));
  }
  for (Reduction r : kReductions) {
    expect_near(values(mse_loss(x, t, r)), reduce(sq, r, 15), 1e-12);
    expect_near(values(l1_loss(x, t, r)), reduce(ab, r, 15), 1e-12);
    expect_near(values(mse_loss(x.to(f32), t.to(f32), r)), reduce(sq, r, 15), 1e-5);
  }
  EXPECT_NEAR(mse_loss(tensor({1., 2.}), tensor({3., 5.})).item(), 6.5, 1e-6);
  EXPECT_NEAR(l1_loss(tensor({1., 2.}), tensor({3., 5.}), Reduction::Sum).item(), 5.0, 1e-6);
  EXPECT_EQ(mse_loss(empty({0}, f64), empty({0}, f64), Reduction::Sum).item(), 0.0);
}

TEST(RegressionLosses, BadArguments) {
  expect_error(
      [&] {
        mse_loss(uniform({2, 3}, 42), uniform({3}, 43));
      },
      {"[mse_loss]", "[2, 3]", "[3]", "must be the same"});
  expect_error(
      [&] {
        l1_loss(uniform({2}, 44), uniform({2, 1}, 45));
      },
      {"[l1_loss]", "[2]", "[2, 1]"});
}

// Note [Class targets stay on the device] in core/ops/loss.cpp: the path accelerators take,
// run here on the CPU, gives the host path's losses and gradients.
TEST(ClassTargetsOnTheDevice, SameLossesAndGradientsAsTheHostPath) {
  struct Restore {
    ~Restore() { detail::set_class_targets_on_host(std::nullopt); }
  } restore;
  const Tensor x0 = uniform({4, 3, 2}, 7, -2.0, 2.0);
  const Tensor t = tensor({0, 2, 1, -100, 2, 2, 1, 0}).reshape({4, 2});
  const Tensor w = tensor({0.5, 2.0, 1.5}, f64);
  for (const Tensor& weight : {Tensor(), w}) {
    for (Reduction r : {Reduction::None, Reduction::Sum, Reduction::Mean}) {
      for (double eps : {0.0, 0.2}) {
        std::vector<double> loss[2], grad[2];
        for (int on_host = 0; on_host < 2; ++on_host) {
          detail::set_class_targets_on_host(on_host == 1);
          Tensor x = x0.clone().requires_grad_(true);
          const Tensor l = cross_entropy(x, t, weight, -100, r, eps);
          sum(l).backward();
          loss[on_host] = values(l);
          grad[on_host] = values(x.grad());
        }
        SCOPED_TRACE(::testing::Message() << "weight " << weight.defined() << " reduction "
                                          << static_cast<int>(r) << " eps " << eps);
        expect_near(loss[0], loss[1], 1e-12);
        expect_near(grad[0], grad[1], 1e-12);
      }
    }
  }
  // nll_loss itself, every target ignored: the mean is 0 / 0 on both paths.
  detail::set_class_targets_on_host(false);
  const Tensor all_ignored = full({4, 2}, -100, TensorOptions(DType::Int64));
  EXPECT_TRUE(std::isnan(nll_loss(log_softmax(x0, 1), all_ignored).item()));
  // A class out of range is the gather's error there (the device reports it at the next
  // synchronization; the CPU at once).
  expect_error(
      [&] {
        cross_entropy(x0, full({4, 2}, 3, TensorOptions(DType::Int64)));
      },
      {"[gather]", "3"});
}

// PyTorch: "all elements of input should be between 0 and 1"; the clamped logs once made a
// finite, meaningless loss of them.
TEST(BinaryCrossEntropy, RefusesInputOutsideZeroOne) {
  expect_error(
      [] {
        binary_cross_entropy(tensor({0.5, 1.5}), tensor({0.0, 1.0}));
      },
      {"[binary_cross_entropy]", "between 0 and 1", "1.5"});
  expect_error([] { binary_cross_entropy(tensor({-0.1}), tensor({0.0})); },
               {"[binary_cross_entropy]", "-0.1"});
  EXPECT_THROW(binary_cross_entropy(tensor({NAN}), tensor({0.0})), ValueError);
  // The ends of [0, 1] are in: their logs clamp at -100.
  EXPECT_NEAR(binary_cross_entropy(tensor({0.0, 1.0}), tensor({1.0, 1.0})).item(), 50.0, 1e-4);
}

}  // namespace
}  // namespace ember::testing
