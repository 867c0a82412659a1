// Gradients of the losses: gradcheck cases (first and second order) for every reduction,
// class weights, ignore_index, label smoothing, spatial dims, unbatched and probability
// targets, and for the binary losses' weights and pos_weight; value tests for nll_loss's
// scatter-shaped gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/core/autograd/gradcheck_cases.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

using V = std::vector<Tensor>;

Tensor targets_2x3() {
  return tensor({{0, 2, 1}, {-100, 2, 0}});  // [N=2, d=3]
}

// ---- nll_loss ---------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"nll_loss", "mean",
                      [](const V& in) {
                        return nll_loss(in[0], on(in[0], tensor({1, 0, 2})));
                      },
                      [] {
                        return V{input({3, 4}, 1)};
                      }});
EMBER_GRADCHECK_CASE({"nll_loss", "sum, weights",
                      [](const V& in) {
                        return nll_loss(in[0], on(in[0], tensor({1, 0, 2})),
                                        on(in[0], tensor({0.5, 2., 1., 3.}, f64)), -100,
                                        Reduction::Sum);
                      },
                      [] {
                        return V{input({3, 4}, 2)};
                      }});
EMBER_GRADCHECK_CASE(
    {"nll_loss", "none, ignore_index",
     [](const V& in) {
       return nll_loss(in[0], on(in[0], tensor({1, 3, 2})), Tensor(), 3, Reduction::None);
     },
     [] {
       return V{input({3, 4}, 3)};
     }});
EMBER_GRADCHECK_CASE(
    {"nll_loss", "mean, weights, ignore_index, [N, C, d]",
     [](const V& in) {
       return nll_loss(in[0], on(in[0], targets_2x3()), on(in[0], tensor({0.5, 2., 1.}, f64)));
     },
     [] {
       return V{input({2, 3, 3}, 4)};
     }});
EMBER_GRADCHECK_CASE({"nll_loss", "unbatched",
                      [](const V& in) {
                        return nll_loss(in[0], on(in[0], tensor({2}).reshape({})));
                      },
                      [] { return V{input({4}, 5)}; }});

// ---- cross_entropy ----------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"cross_entropy", "mean",
                      [](const V& in) {
                        return cross_entropy(in[0], on(in[0], tensor({1, 0, 2})));
                      },
                      [] {
                        return V{input({3, 4}, 10)};
                      }});
EMBER_GRADCHECK_CASE({"cross_entropy", "none, weights, ignore_index, [N, C, d]",
                      [](const V& in) {
                        return cross_entropy(in[0], on(in[0], targets_2x3()),
                                             on(in[0], tensor({0.5, 2., 1.}, f64)), -100,
                                             Reduction::None);
                      },
                      [] {
                        return V{input({2, 3, 3}, 11)};
                      }});
EMBER_GRADCHECK_CASE({"cross_entropy", "mean, label smoothing, weights, ignore_index",
                      [](const V& in) {
                        return cross_entropy(in[0], on(in[0], targets_2x3()),
                                             on(in[0], tensor({0.5, 2., 1.}, f64)), -100,
                                             Reduction::Mean, 0.2);
                      },
                      [] {
                        return V{input({2, 3, 3}, 12)};
                      }});
EMBER_GRADCHECK_CASE(
    {"cross_entropy", "sum, label smoothing",
     [](const V& in) {
       return cross_entropy(in[0], on(in[0], tensor({3, 1})), Tensor(), -100, Reduction::Sum, 0.1);
     },
     [] {
       return V{input({2, 4}, 13)};
     }});
EMBER_GRADCHECK_CASE({"cross_entropy", "probability targets, weights, smoothing",
                      [](const V& in) {
                        return cross_entropy(in[0], softmax(in[1], 1),
                                             on(in[0], tensor({0.5, 2., 1.}, f64)), -100,
                                             Reduction::Mean, 0.1);
                      },
                      [] {
                        return V{input({2, 3}, 14), input({2, 3}, 15)};
                      }});
EMBER_GRADCHECK_CASE({"cross_entropy", "unbatched, transposed-free 1-d",
                      [](const V& in) {
                        return cross_entropy(in[0], on(in[0], tensor({0}).reshape({})));
                      },
                      [] { return V{input({3}, 16)}; }});

// ---- mse, l1 ----------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"mse_loss", "mean, both require grad",
                      [](const V& in) { return mse_loss(in[0], in[1]); },
                      [] {
                        return V{input({2, 3}, 20), input({2, 3}, 21)};
                      }});
EMBER_GRADCHECK_CASE({"mse_loss", "none, transposed target",
                      [](const V& in) { return mse_loss(in[0], in[1].t(), Reduction::None); },
                      [] {
                        return V{input({2, 3}, 22), input({3, 2}, 23)};
                      }});
// x and target kept apart so |x - t| has no kink within the finite-difference step.
EMBER_GRADCHECK_CASE({"l1_loss", "sum",
                      [](const V& in) { return l1_loss(in[0], in[1], Reduction::Sum); },
                      [] {
                        return V{input({2, 3}, 24, 0.5, 1.0), input({2, 3}, 25, -1.0, 0.0)};
                      }});
EMBER_GRADCHECK_CASE(
    {"l1_loss", "mean, mixed signs", [](const V& in) { return l1_loss(in[0], in[1].detach()); },
     [] {
       return V{tensor({0.5, -0.7, 0.9}, f64).requires_grad_(true), tensor({0.1, 0.3, -0.2}, f64)};
     }});

// ---- binary losses ----------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"binary_cross_entropy", "mean, p and target require grad",
                      [](const V& in) { return binary_cross_entropy(in[0], in[1]); },
                      [] {
                        return V{input({2, 3}, 30, 0.1, 0.9), input({2, 3}, 31, 0.0, 1.0)};
                      }});
EMBER_GRADCHECK_CASE({"binary_cross_entropy", "none, broadcast weight requiring grad",
                      [](const V& in) {
                        return binary_cross_entropy(in[0], in[1], in[2], Reduction::None);
                      },
                      [] {
                        return V{input({2, 3}, 32, 0.1, 0.9), input({2, 3}, 33, 0.0, 1.0).detach(),
                                 input({3}, 34, 0.5, 2.0)};
                      }});
EMBER_GRADCHECK_CASE({"binary_cross_entropy_with_logits", "mean",
                      [](const V& in) { return binary_cross_entropy_with_logits(in[0], in[1]); },
                      [] {
                        return V{input({2, 3}, 40, -3.0, 3.0), input({2, 3}, 41, 0.0, 1.0)};
                      }});
EMBER_GRADCHECK_CASE({"binary_cross_entropy_with_logits", "sum, weight and pos_weight",
                      [](const V& in) {
                        return binary_cross_entropy_with_logits(in[0], in[1], in[2], in[3],
                                                                Reduction::Sum);
                      },
                      [] {
                        return V{input({2, 3}, 42, -3.0, 3.0), input({2, 3}, 43, 0.0, 1.0),
                                 input({2, 1}, 44, 0.5, 2.0), input({3}, 45, 0.5, 3.0)};
                      }});
EMBER_GRADCHECK_CASE(
    {"binary_cross_entropy_with_logits", "none, large |x|",
     [](const V& in) {
       return binary_cross_entropy_with_logits(in[0], in[1].detach(), {}, {}, Reduction::None);
     },
     [] {
       return V{tensor({40., -40., 25.}, f64).requires_grad_(true), tensor({0.2, 0.7, 1.0}, f64)};
     }});

// ---- value tests ------------------------------------------------------------------------------

// ---- margin and embedding losses --------------------------------------------------------------
EMBER_GRADCHECK_CASE(
    {"margin_ranking_loss", "margin 0.2, mean",
     [](const V& in) {
       return margin_ranking_loss(in[0], in[1], on(in[0], tensor({1., -1., 1., -1.}, f64)), 0.2);
     },
     [] {
       return V{input({4}, 760), input({4}, 761)};
     }});
EMBER_GRADCHECK_CASE({"hinge_embedding_loss", "margin 0.5, sum",
                      [](const V& in) {
                        return hinge_embedding_loss(
                            in[0], on(in[0], tensor({{1., -1., -1.}, {-1., 1., -1.}}, f64)), 0.5,
                            Reduction::Sum);
                      },
                      [] {
                        return V{input({2, 3}, 762)};
                      }});
EMBER_GRADCHECK_CASE(
    {"soft_margin_loss", "none",
     [](const V& in) {
       return soft_margin_loss(in[0], on(in[0], tensor({1., -1., -1., 1.}, f64)), Reduction::None);
     },
     [] { return V{input({4}, 763)}; }});
EMBER_GRADCHECK_CASE({"multilabel_soft_margin_loss", "weights, mean",
                      [](const V& in) {
                        return multilabel_soft_margin_loss(
                            in[0], on(in[0], tensor({{1., 0., 1.}, {0., 0., 1.}}, f64)),
                            on(in[0], tensor({0.5, 2., 1.}, f64)));
                      },
                      [] {
                        return V{input({2, 3}, 764)};
                      }});
EMBER_GRADCHECK_CASE(
    {"cosine_embedding_loss", "margin 0.1",
     [](const V& in) {
       return cosine_embedding_loss(in[0], in[1], on(in[0], tensor({1., -1., -1.}, f64)), 0.1);
     },
     [] {
       return V{input({3, 4}, 765), input({3, 4}, 766)};
     }});
EMBER_GRADCHECK_CASE({"triplet_margin_loss", "swap, p 1",
                      [](const V& in) {
                        return triplet_margin_loss(in[0], in[1], in[2], 0.5, 1.0, 1e-6, true);
                      },
                      [] {
                        return V{input({3, 4}, 767), input({3, 4}, 768), input({3, 4}, 769)};
                      }});
EMBER_GRADCHECK_CASE(
    {"poisson_nll_loss", "full, rates",
     [](const V& in) {
       return poisson_nll_loss(in[0], on(in[0], tensor({0., 1., 3., 7.}, f64)), false, true);
     },
     [] { return V{input({4}, 770, 0.5, 2.0)}; }});

TEST(LossGrad, MarginLossesMatchHandComputedValues) {
  const Tensor x1 = tensor({1., 2., 3.}, f64), x2 = tensor({2., 2., 1.}, f64);
  const Tensor y = tensor({1., -1., -1.}, f64);
  // max(0, -y (x1 - x2) + 0.5) = max(0, 1.5), max(0, 0.5), max(0, 2.5).
  EXPECT_EQ(values(margin_ranking_loss(x1, x2, y, 0.5, Reduction::None)),
            (std::vector<double>{1.5, 0.5, 2.5}));
  // y = 1 keeps x, y = -1 gives max(0, 1 - x).
  EXPECT_EQ(values(hinge_embedding_loss(tensor({0.25, 0.25, 2.}, f64), y, 1.0, Reduction::None)),
            (std::vector<double>{0.25, 0.75, 0}));
  EXPECT_NEAR(values(soft_margin_loss(tensor({0.}, f64), tensor({1.}, f64)))[0], std::log(2.0),
              1e-15);
  // Parallel vectors: cos 1, so 1 - cos = 0 for y = 1 and max(0, 1 - 0.5) for y = -1.
  const Tensor a = tensor({{1., 2.}, {1., 2.}}, f64);
  const std::vector<double> c =
      values(cosine_embedding_loss(a, mul(a, 3.0), tensor({1., -1.}, f64), 0.5, Reduction::None));
  EXPECT_NEAR(c[0], 0.0, 1e-12);
  EXPECT_NEAR(c[1], 0.5, 1e-12);
  EXPECT_NEAR(values(poisson_nll_loss(tensor({0.}, f64), tensor({2.}, f64)))[0], 1.0, 1e-15);
  EXPECT_THROW(margin_ranking_loss(zeros({2}), zeros({2, 1}), zeros({2})), ValueError);
  EXPECT_THROW(cosine_embedding_loss(zeros({2, 2, 2}), zeros({2, 2, 2}), zeros({2, 2})),
               ValueError);
  EXPECT_THROW(cosine_embedding_loss(zeros({2, 3}), zeros({2, 3}), zeros({2, 1})), ValueError);
  EXPECT_THROW(triplet_margin_loss(zeros({2, 3}), zeros({3}), zeros({2, 3})), ValueError);
}

TEST(LossGrad, NllLossGradientIsAScatterOfWeightsOverTheirSum) {
  Tensor x = zeros({3, 3}, f64).requires_grad_(true);
  nll_loss(x, tensor({2, 0, -100}), tensor({1., 2., 3.}, f64)).backward();
  // denominator w[2] + w[0] = 4; the ignored row gets nothing.
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0, -0.75, -0.25, 0, 0, 0, 0, 0}));
}

TEST(LossGrad, CrossEntropyGradientIsSoftmaxMinusOneHot) {
  Tensor x = tensor({{1., 2., 3.}}, f64).requires_grad_(true);
  cross_entropy(x, tensor({2})).backward();
  const std::vector<double> s = values(softmax(x.detach(), 1));
  const std::vector<double> g = values(x.grad());
  EXPECT_NEAR(g[0], s[0], 1e-12);
  EXPECT_NEAR(g[1], s[1], 1e-12);
  EXPECT_NEAR(g[2], s[2] - 1, 1e-12);
}

// Note [Class weights take no gradient]: refused while recording, in every mode, as in PyTorch;
// a detached weight, or the same call under NoGradGuard, still works.
TEST(LossGrad, ClassWeightThatRequiresGradIsRefused) {
  const Tensor x = tensor({{1., 2., 3.}, {0., -1., 2.}}, f64).requires_grad_(true);
  const Tensor w = tensor({1., 2., 3.}, f64).requires_grad_(true);
  const Tensor t = tensor({2, 0});
  const Tensor probs = softmax(tensor({{1., 0., 0.}, {0., 1., 2.}}, f64), 1);
  for (double smoothing : {0.0, 0.1}) {
    EXPECT_THROW(cross_entropy(x, t, w, -100, Reduction::Mean, smoothing), NotImplementedError);
    EXPECT_THROW(cross_entropy(x, probs, w, -100, Reduction::Mean, smoothing), NotImplementedError);
  }
  EXPECT_THROW(nll_loss(log_softmax(x, 1), t, w), NotImplementedError);
  try {
    nll_loss(log_softmax(x, 1), t, w);
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("weight.detach()"), std::string::npos) << e.what();
  }
  const Tensor loss = cross_entropy(x, t, w.detach(), -100, Reduction::Mean, 0.1);
  loss.backward();
  EXPECT_TRUE(x.grad().defined());
  {
    autograd::NoGradGuard no_grad;
    EXPECT_NO_THROW(cross_entropy(x, t, w));
  }
}

// ---- kl_div, smooth_l1_loss, huber_loss -----------------------------------------------------
EMBER_GRADCHECK_CASE({"kl_div", "probabilities with a zero, batchmean",
                      [](const V& in) { return kl_div(in[0], in[1], Reduction::BatchMean); },
                      [] {
                        // t log t has no derivative at t = 0: the target is a constant here.
                        return V{input({2, 3}, 140, -2.0, -0.1),
                                 tensor({{0.2, 0.0, 0.8}, {0.5, 0.3, 0.2}}, DType::Float64)};
                      }});
EMBER_GRADCHECK_CASE({"kl_div", "positive probabilities, sum",
                      [](const V& in) { return kl_div(in[0], in[1], Reduction::Sum); },
                      [] {
                        return V{input({2, 3}, 143, -2.0, -0.1), input({2, 3}, 144, 0.1, 0.9)};
                      }});
EMBER_GRADCHECK_CASE({"kl_div", "log targets, none",
                      [](const V& in) { return kl_div(in[0], in[1], Reduction::None, true); },
                      [] {
                        return V{input({2, 3}, 141, -2.0, -0.1), input({2, 3}, 142, -2.0, -0.1)};
                      }});
EMBER_GRADCHECK_CASE({"smooth_l1_loss", "both branches, beta 0.5",
                      [](const V& in) {
                        return smooth_l1_loss(in[0], in[1], Reduction::Mean, 0.5);
                      },
                      [] {
                        return V{tensor({-1.0, 0.1, 0.6, 2.0}, DType::Float64).requires_grad_(true),
                                 tensor({0.2, 0.0, 0.5, 0.3}, DType::Float64).requires_grad_(true)};
                      }});
EMBER_GRADCHECK_CASE({"huber_loss", "both branches, delta 0.5",
                      [](const V& in) { return huber_loss(in[0], in[1], Reduction::Sum, 0.5); },
                      [] {
                        return V{tensor({-1.0, 0.1, 0.6, 2.0}, DType::Float64).requires_grad_(true),
                                 tensor({0.2, 0.0, 0.5, 0.3}, DType::Float64).requires_grad_(true)};
                      }});

TEST(RegressionLosses, MatchHandComputedValues) {
  const Tensor x = tensor({0.0, 0.3, 3.0}, DType::Float64), t = zeros({3}, DType::Float64);
  // beta 1: 0, 0.5 * 0.09, 3 - 0.5.
  EXPECT_EQ(values(smooth_l1_loss(x, t, Reduction::None)), (std::vector<double>{0, 0.045, 2.5}));
  // delta 2: 0, 0.045, 2 * (3 - 1).
  EXPECT_EQ(values(huber_loss(x, t, Reduction::None, 2.0)), (std::vector<double>{0, 0.045, 4.0}));
  EXPECT_NEAR(values(smooth_l1_loss(x, t, Reduction::Mean, 0.0))[0], 3.3 / 3, 1e-15);
  EXPECT_THROW(huber_loss(x, t, Reduction::Mean, -1.0), Error);
  EXPECT_THROW(mse_loss(x, t, Reduction::BatchMean), Error);
  EXPECT_THROW(
      cross_entropy(zeros({2, 3}), tensor({0, 1}, DType::Int64), {}, -100, Reduction::BatchMean),
      Error);
}

TEST(KlDiv, MatchesTheDefinitionAndTreatsZeroTargetsAsZero) {
  const Tensor logq = log(tensor({{0.25, 0.75}, {0.5, 0.5}}, DType::Float64));
  const Tensor p = tensor({{0.0, 1.0}, {0.5, 0.5}}, DType::Float64);
  const std::vector<double> l = values(kl_div(logq, p, Reduction::None));
  EXPECT_EQ(l[0], 0.0);
  EXPECT_NEAR(l[1], std::log(1 / 0.75), 1e-15);
  EXPECT_NEAR(l[2], 0.0, 1e-15);
  const double total = std::log(1 / 0.75);
  EXPECT_NEAR(values(kl_div(logq, p, Reduction::BatchMean))[0], total / 2, 1e-15);
  EXPECT_NEAR(values(kl_div(logq, p, Reduction::Mean))[0], total / 4, 1e-15);
  // Log targets: exp(t) (t - x), here with no zero probability.
  const Tensor p2 = tensor({{0.5, 0.5}, {0.25, 0.75}}, DType::Float64);
  const std::vector<double> l2 = values(kl_div(logq, log(p2), Reduction::None, true));
  EXPECT_NEAR(l2[0], 0.5 * std::log(0.5 / 0.25), 1e-15);
  EXPECT_NEAR(l2[3], 0.75 * std::log(0.75 / 0.5), 1e-15);
}

EMBER_GRADCHECK_CASE({"gaussian_nll_loss", "full, var one dim short",
                      [](const V& in) {
                        return gaussian_nll_loss(in[0], in[1], in[2], true, 1e-6, Reduction::Sum);
                      },
                      [] {
                        return V{input({3, 4}, 771), input({3, 4}, 772), input({3}, 773, 0.5, 2.)};
                      }});
EMBER_GRADCHECK_CASE(
    {"gaussian_nll_loss", "per-element var, no reduction",
     [](const V& in) {
       return gaussian_nll_loss(in[0], in[1], in[2], false, 1e-6, Reduction::None);
     },
     [] {
       return V{input({2, 3}, 774), input({2, 3}, 775), input({2, 3}, 776, 0.5, 2.)};
     }});

// ctc_loss: unnormalized log_probs are fine for the check (the loss is defined for any values).
EMBER_GRADCHECK_CASE({"ctc_loss", "padded targets, repeats, mixed lengths",
                      [](const V& in) {
                        const Tensor tg = on(in[0], tensor({{1, 1, 2}, {2, 0, 0}}));
                        return ctc_loss(in[0], tg, {5, 3}, {3, 1}, 0, Reduction::None);
                      },
                      [] {
                        return V{input({5, 2, 3}, 780)};
                      }});
EMBER_GRADCHECK_CASE({"ctc_loss", "concatenated targets, blank 2, mean",
                      [](const V& in) {
                        const Tensor tg = on(in[0], tensor({0, 1, 1}));
                        return ctc_loss(in[0], tg, {4, 4}, {2, 1}, 2, Reduction::Mean);
                      },
                      [] {
                        return V{input({4, 2, 3}, 781)};
                      }});

TEST(LossGrad, GaussianNllLossMatchesItsFormula) {
  const Tensor x = tensor({{1., 2.}, {0., -1.}}, f64), t = tensor({{0., 2.}, {1., 1.}}, f64);
  // var [2] (one dim short) broadcasts per row: (log v + (x - t)^2 / v) / 2.
  const Tensor v = tensor({2., 0.5}, f64);
  const std::vector<double> got = values(gaussian_nll_loss(x, t, v, false, 1e-6, Reduction::None));
  const std::vector<double> want{0.5 * (std::log(2.0) + 0.5), 0.5 * std::log(2.0),
                                 0.5 * (std::log(0.5) + 2.0), 0.5 * (std::log(0.5) + 8.0)};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-14) << i;
  // full adds log(2 pi) / 2; var [2, 1] is the same homoscedastic case.
  const double mean = (want[0] + want[1] + want[2] + want[3]) / 4 + 0.5 * std::log(2 * M_PI);
  EXPECT_NEAR(values(gaussian_nll_loss(x, t, v.unsqueeze(1), true))[0], mean, 1e-14);
  // var is clamped at eps in value, the gradient passing as if unclamped.
  const Tensor small = tensor({1e-9}, f64).requires_grad_(true);
  const Tensor l = gaussian_nll_loss(tensor({0.}, f64), tensor({0.}, f64), small, false, 1e-3);
  EXPECT_NEAR(values(l)[0], 0.5 * std::log(1e-3), 1e-12);
  l.backward();
  EXPECT_NEAR(values(small.grad())[0], 0.5 / 1e-3, 1e-9);
  // One variance for every element; a size-1 dim anywhere is homoscedastic too.
  EXPECT_NEAR(values(gaussian_nll_loss(x, t, 2.0, false, 1e-6, Reduction::Sum))[0],
              values(gaussian_nll_loss(x, t, full_like(x, 2.0), false, 1e-6, Reduction::Sum))[0],
              1e-14);
  EXPECT_EQ(
      gaussian_nll_loss(x, t, ones({1, 2}, DType::Float64), false, 1e-6, Reduction::None).sizes(),
      Shape({2, 2}));
  EXPECT_THROW(gaussian_nll_loss(x, t, -1.0), ValueError);
  EXPECT_THROW(gaussian_nll_loss(x, t, ones({3}, DType::Float64)), ValueError);
  EXPECT_THROW(gaussian_nll_loss(x, t, tensor({1., -1.}, f64)), ValueError);
  EXPECT_THROW(gaussian_nll_loss(x, t, v, false, 1e-6, Reduction::BatchMean), ValueError);
}

}  // namespace
}  // namespace ember::testing
