// Gradients of the normalisation layers: gradcheck cases (first and second order) for
// batch_norm in training and eval, with and without affine parameters, 2-d to 4-d;
// layer_norm over one and two trailing dims; group_norm with several group counts. Also checks
// that the fused backward kernels and the differentiable formulas (used under create_graph)
// give the same gradients, and that running statistics are updated without history.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/core/autograd/gradcheck_cases.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

using V = std::vector<Tensor>;

// ---- batch_norm ---------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"batch_norm", "training, 4-d, weight and bias",
                      [](const V& in) {
                        Tensor rm = on(in[0], zeros({3}, {f64})), rv = on(in[0], ones({3}, {f64}));
                        return batch_norm(in[0], in[1], in[2], rm, rv, true, 0.1, 1e-3);
                      },
                      [] {
                        return V{input({2, 3, 2, 3}, 1), input({3}, 2), input({3}, 3)};
                      }});
EMBER_GRADCHECK_CASE({"batch_norm", "training, 2-d, no affine",
                      [](const V& in) { return batch_norm(in[0], {}, {}, {}, {}, true); },
                      [] {
                        return V{input({5, 3}, 4)};
                      }});
EMBER_GRADCHECK_CASE({"batch_norm", "training, 3-d transposed input, weight only",
                      [](const V& in) {
                        return batch_norm(in[0].transpose(0, 2), in[1], {}, {}, {}, true);
                      },
                      [] {
                        return V{input({4, 2, 3}, 5), input({2}, 6)};
                      }});
EMBER_GRADCHECK_CASE({"batch_norm", "eval, running statistics",
                      [](const V& in) {
                        const Tensor rm = on(in[0], make({0.1, -0.2, 0.3}, {3}, f64));
                        const Tensor rv = on(in[0], make({0.5, 1.5, 2.0}, {3}, f64));
                        return batch_norm(in[0], in[1], in[2], rm, rv, false);
                      },
                      [] {
                        return V{input({2, 3, 4}, 7), input({3}, 8), input({3}, 9)};
                      }});

// ---- layer_norm ---------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"layer_norm", "last dim, weight and bias",
                      [](const V& in) { return layer_norm(in[0], {4}, in[1], in[2], 1e-3); },
                      [] {
                        return V{input({2, 3, 4}, 10), input({4}, 11), input({4}, 12)};
                      }});
EMBER_GRADCHECK_CASE({"layer_norm", "two trailing dims, no affine, transposed input",
                      [](const V& in) {
                        return layer_norm(in[0].transpose(0, 1), {3, 2});
                      },
                      [] {
                        return V{input({3, 2, 2}, 13)};
                      }});

// ---- group_norm ---------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"group_norm", "2 groups of 2 channels, weight and bias",
                      [](const V& in) { return group_norm(in[0], 2, in[1], in[2], 1e-3); },
                      [] {
                        return V{input({2, 4, 3}, 14), input({4}, 15), input({4}, 16)};
                      }});
EMBER_GRADCHECK_CASE({"group_norm", "1 group (layer norm over C, H, W), weight only",
                      [](const V& in) { return group_norm(in[0], 1, in[1]); },
                      [] {
                        return V{input({2, 3, 2, 2}, 17), input({3}, 18)};
                      }});
EMBER_GRADCHECK_CASE({"group_norm", "one group per channel (instance norm)",
                      [](const V& in) { return group_norm(in[0], 4); },
                      [] {
                        return V{input({3, 4, 3}, 19)};
                      }});

// Gradients of sum(y * r) through the kernels (no create_graph) and the formulas (create_graph).
void expect_paths_agree(const std::function<Tensor(const V&)>& fn, const V& in) {
  const Tensor y = fn(in);
  const Tensor r = rand(y.sizes(), {f64});
  const V fused = autograd::grad({sum(mul(y, r))}, in);
  const Tensor y2 = fn(in);
  const V formula = autograd::grad({sum(mul(y2, r))}, in, {}, {}, /*create_graph=*/true);
  ASSERT_EQ(fused.size(), formula.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    const std::vector<double> a = values(fused[i]), b = values(formula[i]);
    ASSERT_EQ(a.size(), b.size());
    for (size_t e = 0; e < a.size(); ++e) EXPECT_NEAR(a[e], b[e], 1e-10) << i << " at " << e;
  }
}

TEST(NormGradTest, FusedBackwardMatchesFormula) {
  expect_paths_agree([](const V& in) { return batch_norm(in[0], in[1], in[2], {}, {}, true); },
                     {input({4, 3, 5}, 20), input({3}, 21), input({3}, 22)});
  expect_paths_agree(
      [](const V& in) {
        return batch_norm(in[0], in[1], in[2], zeros({3}, {f64}), ones({3}, {f64}), false);
      },
      {input({4, 3, 5}, 23), input({3}, 24), input({3}, 25)});
  expect_paths_agree([](const V& in) { return layer_norm(in[0], {6}, in[1], in[2]); },
                     {input({5, 6}, 26), input({6}, 27), input({6}, 28)});
  expect_paths_agree([](const V& in) { return group_norm(in[0], 3, in[1], in[2]); },
                     {input({2, 6, 7}, 29), input({6}, 30), input({6}, 31)});
}

TEST(NormGradTest, RunningStatsHaveNoHistory) {
  Tensor x = input({4, 2, 3}, 32);
  Tensor rm = zeros({2}, {f64}), rv = ones({2}, {f64});
  const Tensor y = batch_norm(x, {}, {}, rm, rv, true);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(rm.requires_grad());
  EXPECT_FALSE(rv.requires_grad());
  autograd::backward({sum(mul(y, y))});
  EXPECT_TRUE(x.grad().defined());
}

TEST(NormGradTest, EmptyBatchGivesZeroGradients) {
  Tensor x = zeros({0, 3, 2}, {f64}).requires_grad_(true);
  Tensor w = ones({3}, {f64}).requires_grad_(true);
  autograd::backward({sum(batch_norm(x, w, {}, {}, {}, true))});
  EXPECT_EQ(values(w.grad()), (std::vector<double>{0, 0, 0}));
  Tensor w2 = ones({3}, {f64}).requires_grad_(true);
  autograd::backward({sum(group_norm(x, 3, w2))});
  EXPECT_EQ(values(w2.grad()), (std::vector<double>{0, 0, 0}));
}

// ---- local_response_norm -------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"local_response_norm", "size 3 over 5 channels, 4-d",
                      [](const V& in) { return local_response_norm(in[0], 3, 0.1, 0.75, 2.0); },
                      [] {
                        return V{input({2, 5, 3, 2}, 230)};
                      }});
EMBER_GRADCHECK_CASE({"local_response_norm", "even size 2, 3-d",
                      [](const V& in) { return local_response_norm(in[0], 2, 0.5, 0.5, 1.0); },
                      [] {
                        return V{input({2, 4, 3}, 231)};
                      }});

TEST(LocalResponseNorm, EqualsTheLoops) {
  const Tensor x = input({2, 5, 3}, 232).detach();
  const int64_t size = 4;
  const double alpha = 0.3, beta = 0.6, k = 1.5;
  const std::vector<double> xv = values(x),
                            y = values(local_response_norm(x, size, alpha, beta, k));
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t c = 0; c < 5; ++c) {
      for (int64_t l = 0; l < 3; ++l) {
        // Channels [c - size / 2, c + (size - 1) / 2], zeros beyond the ends, divided by size.
        double s = 0;
        for (int64_t j = c - size / 2; j <= c + (size - 1) / 2; ++j) {
          if (j < 0 || j >= 5) continue;
          const double v = xv[static_cast<size_t>((n * 5 + j) * 3 + l)];
          s += v * v;
        }
        const size_t at = static_cast<size_t>((n * 5 + c) * 3 + l);
        EXPECT_NEAR(y[at], xv[at] / std::pow(k + alpha * s / size, beta), 1e-14);
      }
    }
  }
  EXPECT_THROW(local_response_norm(ones({2, 3}), 2), ValueError);
  EXPECT_THROW(local_response_norm(ones({2, 3, 3}), 0), ValueError);
}

// ---- instance_norm, rms_norm and bilinear -----------------------------------------------------
EMBER_GRADCHECK_CASE({"instance_norm", "3-d, weight, bias and running statistics",
                      [](const V& in) {
                        Tensor rm = on(in[0], zeros({3}, {f64})), rv = on(in[0], ones({3}, {f64}));
                        return instance_norm(in[0], in[1], in[2], rm, rv, true, 0.1, 1e-3);
                      },
                      [] {
                        return V{input({2, 3, 4}, 901), input({3}, 902), input({3}, 903)};
                      }});
EMBER_GRADCHECK_CASE({"instance_norm", "4-d, no affine",
                      [](const V& in) { return instance_norm(in[0]); },
                      [] {
                        return V{input({2, 2, 3, 2}, 904)};
                      }});
EMBER_GRADCHECK_CASE({"rms_norm", "two trailing dims, weight",
                      [](const V& in) {
                        return rms_norm(in[0], {2, 3}, in[1], 1e-3);
                      },
                      [] {
                        return V{input({2, 2, 3}, 905), input({2, 3}, 906)};
                      }});
EMBER_GRADCHECK_CASE({"bilinear", "batched, bias",
                      [](const V& in) { return bilinear(in[0], in[1], in[2], in[3]); },
                      [] {
                        return V{input({2, 3, 2}, 907), input({2, 3, 4}, 908),
                                 input({3, 2, 4}, 909), input({3}, 910)};
                      }});

TEST(InstanceNorm, EqualsTheLoopsAndUpdatesRunningStatistics) {
  const int64_t n = 2, c = 3, l = 5;
  const Tensor x = input({n, c, l}, 911).detach();
  const Tensor w = input({c}, 912).detach(), b = input({c}, 913).detach();
  Tensor rm = zeros({c}, {f64}), rv = ones({c}, {f64});
  const std::vector<double> xv = values(x), wv = values(w), bv = values(b),
                            y = values(instance_norm(x, w, b, rm, rv, true, 0.25, 1e-5));
  std::vector<double> mean_sum(c, 0), var_sum(c, 0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      double m = 0, v = 0;
      for (int64_t k = 0; k < l; ++k) m += xv[static_cast<size_t>((i * c + j) * l + k)] / l;
      for (int64_t k = 0; k < l; ++k) {
        const double d = xv[static_cast<size_t>((i * c + j) * l + k)] - m;
        v += d * d / l;
      }
      mean_sum[j] += m;
      var_sum[j] += v * l / (l - 1);  // the running variance is unbiased
      for (int64_t k = 0; k < l; ++k) {
        const size_t at = static_cast<size_t>((i * c + j) * l + k);
        EXPECT_NEAR(y[at], (xv[at] - m) / std::sqrt(v + 1e-5) * wv[j] + bv[j], 1e-12);
      }
    }
  }
  // Each channel's statistics: 0.75 old + 0.25 the mean over the batch of the instances'.
  const std::vector<double> rmv = values(rm), rvv = values(rv);
  for (int64_t j = 0; j < c; ++j) {
    EXPECT_NEAR(rmv[j], 0.25 * mean_sum[j] / n, 1e-14);
    EXPECT_NEAR(rvv[j], 0.75 + 0.25 * var_sum[j] / n, 1e-14);
  }
  // Without input statistics every sample is normalised with the running ones.
  const std::vector<double> e = values(instance_norm(x, {}, {}, rm, rv, false));
  EXPECT_NEAR(e[7], (xv[7] - rmv[1]) / std::sqrt(rvv[1] + 1e-5), 1e-12);
  EXPECT_THROW(instance_norm(ones({2, 3})), ValueError);         // no spatial dim
  EXPECT_THROW(instance_norm(ones({2, 3, 1})), ValueError);      // one value per instance
  EXPECT_THROW(instance_norm(x, ones({4}, {f64})), ValueError);  // weight of the wrong size
}

TEST(RmsNormAndBilinear, EqualTheLoops) {
  const Tensor x = input({2, 4}, 914).detach(), w = input({4}, 915).detach();
  const std::vector<double> xv = values(x), wv = values(w), y = values(rms_norm(x, {4}, w, 1e-6));
  for (int64_t i = 0; i < 2; ++i) {
    double ms = 0;
    for (int64_t k = 0; k < 4; ++k) ms += xv[static_cast<size_t>(i * 4 + k)] * xv[i * 4 + k] / 4;
    for (int64_t k = 0; k < 4; ++k) {
      const size_t at = static_cast<size_t>(i * 4 + k);
      EXPECT_NEAR(y[at], xv[at] / std::sqrt(ms + 1e-6) * wv[k], 1e-14);
    }
  }
  // No eps: the dtype's machine epsilon, so an all-zero row stays finite.
  EXPECT_EQ(values(rms_norm(zeros({1, 3}, {f64}), {3})), (std::vector<double>{0, 0, 0}));
  EXPECT_THROW(rms_norm(x, {3}), ValueError);
  const Tensor a = input({3, 2}, 916).detach(), c = input({3, 3}, 917).detach();
  const Tensor wt = input({2, 2, 3}, 918).detach(), bias = input({2}, 919).detach();
  const std::vector<double> av = values(a), cv = values(c), wtv = values(wt), biv = values(bias),
                            z = values(bilinear(a, c, wt, bias));
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t o = 0; o < 2; ++o) {
      double s = biv[o];
      for (int64_t i = 0; i < 2; ++i) {
        for (int64_t j = 0; j < 3; ++j) {
          s += av[r * 2 + i] * wtv[(o * 2 + i) * 3 + j] * cv[r * 3 + j];
        }
      }
      EXPECT_NEAR(z[static_cast<size_t>(r * 2 + o)], s, 1e-13);
    }
  }
  EXPECT_THROW(bilinear(a, a, wt), ValueError);  // input2 of the wrong width
}

}  // namespace
}  // namespace ember::testing
