// Gradients of reductions: gradcheck cases (first and second order) over keepdim, negative and
// multiple dims, full reductions and non-contiguous inputs, and value tests for the special
// points: ties of max/min, zeros of prod, std of a constant, the norm of a zero vector.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/core/autograd/gradcheck_cases.h"

namespace ember::testing {
namespace {

using V = std::vector<Tensor>;

/** A float64 leaf requiring grad, from values. */
Tensor leaf(NestedList<double> values) {
  return tensor(std::move(values), DType::Float64).requires_grad_(true);
}

// ---- sum ----------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"sum", "all", [](const V& in) { return sum(in[0]); },
                      [] {
                        return V{input({2, 3}, 1)};
                      }});
EMBER_GRADCHECK_CASE({"sum", "dims {0} keepdim", [](const V& in) { return sum(in[0], {0}, true); },
                      [] {
                        return V{input({3, 4}, 2)};
                      }});
EMBER_GRADCHECK_CASE({"sum", "dims {-1}", [](const V& in) { return sum(in[0], {-1}); },
                      [] {
                        return V{input({3, 4}, 3)};
                      }});
EMBER_GRADCHECK_CASE({"sum", "dims {0, 2} of 3-d",
                      [](const V& in) {
                        return sum(in[0], {0, 2});
                      },
                      [] {
                        return V{input({2, 3, 4}, 4)};
                      }});
EMBER_GRADCHECK_CASE({"sum", "transposed, dims {1} keepdim",
                      [](const V& in) { return sum(in[0].t(), {1}, true); },
                      [] {
                        return V{input({4, 3}, 5)};
                      }});
EMBER_GRADCHECK_CASE({"sum", "0-d", [](const V& in) { return sum(in[0]); },
                      [] { return V{input({}, 6)}; }});
// The gradient of a sum, used again: the second derivative of sum(x)^2 is all ones.
EMBER_GRADCHECK_CASE({"sum", "squared (nonzero second derivative)",
                      [](const V& in) {
                        const Tensor s = sum(in[0], {1});
                        return mul(s, s);
                      },
                      [] {
                        return V{input({2, 3}, 7)};
                      }});

// ---- prod ---------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"prod", "all", [](const V& in) { return prod(in[0]); },
                      [] {
                        return V{input({2, 3}, 10, 0.5, 1.5)};
                      }});
EMBER_GRADCHECK_CASE({"prod", "dims {1} keepdim, signs",
                      [](const V& in) { return prod(in[0], {1}, true); },
                      [] {
                        return V{input({3, 4}, 11)};
                      }});
EMBER_GRADCHECK_CASE({"prod", "dims {0, -1} of 3-d",
                      [](const V& in) {
                        return prod(in[0], {0, -1});
                      },
                      [] {
                        return V{input({2, 3, 2}, 12, 0.5, 1.5)};
                      }});
EMBER_GRADCHECK_CASE({"prod", "transposed, dims {0}",
                      [](const V& in) { return prod(in[0].t(), {0}); },
                      [] {
                        return V{input({4, 3}, 13, 0.5, 1.5)};
                      }});
// Rows with no, one, two and three zeros: the products of the others (and their derivatives)
// at the zeros must come out exactly, not as 0 * inf.
EMBER_GRADCHECK_CASE({"prod", "rows with 0, 1, 2 and 3 zeros, dims {1}",
                      [](const V& in) { return prod(in[0], {1}); },
                      [] {
                        return V{leaf({{0.5, -1.5, 2.0, 0.7},
                                       {0.5, 0.0, 2.0, -0.7},
                                       {0.0, 1.5, 0.0, 0.7},
                                       {0.0, 0.0, 0.0, 0.7}})};
                      }});
EMBER_GRADCHECK_CASE({"prod", "one zero, all", [](const V& in) { return prod(in[0]); },
                      [] {
                        return V{leaf({{1.5, 0.0, -2.0}, {0.5, 1.25, 0.75}})};
                      }});
EMBER_GRADCHECK_CASE({"prod", "two zeros, all, transposed",
                      [](const V& in) { return prod(in[0].t()); },
                      [] {
                        return V{leaf({{1.5, 0.0, -2.0}, {0.5, 0.0, 0.75}})};
                      }});

// ---- mean ---------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"mean", "all", [](const V& in) { return mean(in[0]); },
                      [] {
                        return V{input({2, 3}, 20)};
                      }});
EMBER_GRADCHECK_CASE({"mean", "dims {1} keepdim",
                      [](const V& in) { return mean(in[0], {1}, true); },
                      [] {
                        return V{input({3, 4}, 21)};
                      }});
EMBER_GRADCHECK_CASE({"mean", "dims {-1, 0} of 3-d",
                      [](const V& in) {
                        return mean(in[0], {-1, 0});
                      },
                      [] {
                        return V{input({2, 3, 2}, 22)};
                      }});
EMBER_GRADCHECK_CASE({"mean", "sliced", [](const V& in) { return mean(in[0].slice(1, 1, 3), {0}); },
                      [] {
                        return V{input({3, 4}, 23)};
                      }});
// A strided slice (step 2) under the reduction.
EMBER_GRADCHECK_CASE({"mean", "slice with step 2",
                      [](const V& in) { return mean(in[0].slice(1, 0, 4, 2), {0}); },
                      [] {
                        return V{input({3, 4}, 24)};
                      }});

// ---- amax / amin (random inputs: no ties, where finite differences would disagree) --------
#define AMAX_CASES(OP)                                                                             \
  EMBER_GRADCHECK_CASE({#OP, "all", [](const V& in) { return OP(in[0]); },                         \
                        [] {                                                                       \
                          return V{input({2, 3}, 30)};                                             \
                        }});                                                                       \
  EMBER_GRADCHECK_CASE({#OP, "dims {1} keepdim", [](const V& in) { return OP(in[0], {1}, true); }, \
                        [] {                                                                       \
                          return V{input({3, 4}, 31)};                                             \
                        }});                                                                       \
  EMBER_GRADCHECK_CASE({#OP, "dims {0, -1} of 3-d",                                                \
                        [](const V& in) {                                                          \
                          return OP(in[0], {0, -1});                                               \
                        },                                                                         \
                        [] {                                                                       \
                          return V{input({2, 3, 2}, 32)};                                          \
                        }});                                                                       \
  EMBER_GRADCHECK_CASE({#OP, "transposed, dims {0}",                                               \
                        [](const V& in) { return OP(in[0].t(), {0}); },                            \
                        [] {                                                                       \
                          return V{input({4, 3}, 33)};                                             \
                        }});                                                                       \
  EMBER_GRADCHECK_CASE({#OP, "times x (nonzero second derivative)",                                \
                        [](const V& in) { return mul(OP(in[0], {1}, true), in[0]); },              \
                        [] {                                                                       \
                          return V{input({3, 4}, 34)};                                             \
                        }})
AMAX_CASES(amax);
AMAX_CASES(amin);
#undef AMAX_CASES

// ---- max / min: over all elements, and (values, indices) along a dim ----------------------
#define MAX_CASES(OP)                                                                            \
  EMBER_GRADCHECK_CASE({#OP, "all", [](const V& in) { return OP(in[0]); },                       \
                        [] {                                                                     \
                          return V{input({2, 3}, 40)};                                           \
                        }});                                                                     \
  EMBER_GRADCHECK_CASE({#OP, "all, transposed", [](const V& in) { return OP(in[0].t()); },       \
                        [] {                                                                     \
                          return V{input({3, 2}, 41)};                                           \
                        }});                                                                     \
  EMBER_GRADCHECK_CASE({#OP, "dim 1", [](const V& in) { return std::get<0>(OP(in[0], 1)); },     \
                        [] {                                                                     \
                          return V{input({3, 4}, 42)};                                           \
                        }});                                                                     \
  EMBER_GRADCHECK_CASE({#OP, "dim -1 keepdim of 3-d",                                            \
                        [](const V& in) { return std::get<0>(OP(in[0], -1, true)); },            \
                        [] {                                                                     \
                          return V{input({2, 3, 2}, 43)};                                        \
                        }});                                                                     \
  EMBER_GRADCHECK_CASE({#OP, "dim 0 of transposed",                                              \
                        [](const V& in) { return std::get<0>(OP(in[0].t(), 0)); },               \
                        [] {                                                                     \
                          return V{input({4, 3}, 44)};                                           \
                        }});                                                                     \
  EMBER_GRADCHECK_CASE({#OP, "dim 0 of 0-d",                                                     \
                        [](const V& in) { return std::get<0>(OP(in[0], 0)); },                   \
                        [] { return V{input({}, 45)}; }});                                       \
  EMBER_GRADCHECK_CASE({#OP, "dim 1 times x (nonzero second derivative)",                        \
                        [](const V& in) { return mul(std::get<0>(OP(in[0], 1, true)), in[0]); }, \
                        [] {                                                                     \
                          return V{input({3, 4}, 46)};                                           \
                        }})
MAX_CASES(max);
MAX_CASES(min);
#undef MAX_CASES

// ---- var / std ----------------------------------------------------------------------------
#define VAR_CASES(OP)                                                        \
  EMBER_GRADCHECK_CASE({#OP, "all", [](const V& in) { return OP(in[0]); },   \
                        [] {                                                 \
                          return V{input({2, 3}, 50)};                       \
                        }});                                                 \
  EMBER_GRADCHECK_CASE({#OP, "dims {1} keepdim",                             \
                        [](const V& in) { return OP(in[0], {1}, 1, true); }, \
                        [] {                                                 \
                          return V{input({3, 4}, 51)};                       \
                        }});                                                 \
  EMBER_GRADCHECK_CASE({#OP, "dims {0, -1} correction 0",                    \
                        [](const V& in) {                                    \
                          return OP(in[0], {0, -1}, 0);                      \
                        },                                                   \
                        [] {                                                 \
                          return V{input({2, 3, 2}, 52)};                    \
                        }});                                                 \
  EMBER_GRADCHECK_CASE({#OP, "transposed, dims {0} correction 2",            \
                        [](const V& in) { return OP(in[0].t(), {0}, 2); },   \
                        [] {                                                 \
                          return V{input({4, 3}, 53)};                       \
                        }})
VAR_CASES(var);
VAR_CASES(std);
#undef VAR_CASES

// ---- norm ---------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"norm", "p=2 all", [](const V& in) { return norm(in[0]); },
                      [] {
                        return V{input({2, 3}, 60)};
                      }});
EMBER_GRADCHECK_CASE({"norm", "p=2 dims {1} keepdim",
                      [](const V& in) { return norm(in[0], 2.0, {1}, true); },
                      [] {
                        return V{input({3, 4}, 61)};
                      }});
EMBER_GRADCHECK_CASE({"norm", "p=2 dims {0, -1}, transposed",
                      [](const V& in) {
                        return norm(in[0].transpose(0, 2), 2.0, {0, -1});
                      },
                      [] {
                        return V{input({2, 3, 2}, 62)};
                      }});
EMBER_GRADCHECK_CASE({"norm", "p=1 dims {0}", [](const V& in) { return norm(in[0], 1.0, {0}); },
                      [] {
                        return V{input({3, 4}, 63, 0.2, 1.0)};
                      }});
EMBER_GRADCHECK_CASE({"norm", "p=1 signs", [](const V& in) { return norm(in[0], 1.0); },
                      [] {
                        return V{leaf({{0.5, -1.5, 2.0}, {-0.7, 0.3, -0.2}})};
                      }});
EMBER_GRADCHECK_CASE({"norm", "p=inf dims {1}",
                      [](const V& in) { return norm(in[0], INFINITY, {1}); },
                      [] {
                        return V{input({3, 4}, 64)};
                      }});
EMBER_GRADCHECK_CASE({"norm", "p=-inf all, sliced",
                      [](const V& in) { return norm(in[0].slice(0, 1, 3), -INFINITY); },
                      [] {
                        return V{input({3, 4}, 65)};
                      }});
EMBER_GRADCHECK_CASE({"norm", "p=3 dims {-1} keepdim",
                      [](const V& in) { return norm(in[0], 3.0, {-1}, true); },
                      [] {
                        return V{input({3, 4}, 66)};
                      }});
EMBER_GRADCHECK_CASE({"norm", "p=1.5 all", [](const V& in) { return norm(in[0], 1.5); },
                      [] {
                        return V{leaf({{0.5, -1.5, 2.0}, {-0.7, 0.3, -0.2}})};
                      }});
EMBER_GRADCHECK_CASE({"norm", "p=0.5 dims {0}", [](const V& in) { return norm(in[0], 0.5, {0}); },
                      [] {
                        return V{leaf({{0.5, -1.5, 2.0}, {-0.7, 0.3, -0.2}})};
                      }});
EMBER_GRADCHECK_CASE({"norm", "p=0 (a count: gradient 0)",
                      [](const V& in) { return norm(in[0], 0.0, {1}); },
                      [] {
                        return V{input({2, 3}, 67)};
                      }});

// ---- logsumexp ----------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"logsumexp", "dims {1}", [](const V& in) { return logsumexp(in[0], {1}); },
                      [] {
                        return V{input({3, 4}, 70, -2.0, 2.0)};
                      }});
EMBER_GRADCHECK_CASE({"logsumexp", "dims {0, -1} keepdim of 3-d",
                      [](const V& in) {
                        return logsumexp(in[0], {0, -1}, true);
                      },
                      [] {
                        return V{input({2, 3, 2}, 71, -2.0, 2.0)};
                      }});
EMBER_GRADCHECK_CASE({"logsumexp", "transposed, dims {0}",
                      [](const V& in) { return logsumexp(in[0].t(), {0}); },
                      [] {
                        return V{input({4, 3}, 72, -2.0, 2.0)};
                      }});
EMBER_GRADCHECK_CASE({"logsumexp", "large values (shifted by the max)",
                      [](const V& in) { return logsumexp(add(in[0], 500.0), {1}); },
                      [] {
                        return V{input({2, 3}, 73)};
                      }});

// ---- cumsum -------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"cumsum", "dim 0", [](const V& in) { return cumsum(in[0], 0); },
                      [] {
                        return V{input({4, 3}, 80)};
                      }});
EMBER_GRADCHECK_CASE({"cumsum", "dim -1", [](const V& in) { return cumsum(in[0], -1); },
                      [] {
                        return V{input({3, 4}, 81)};
                      }});
EMBER_GRADCHECK_CASE({"cumsum", "middle dim of 3-d, transposed",
                      [](const V& in) { return cumsum(in[0].transpose(0, 2), 1); },
                      [] {
                        return V{input({2, 3, 2}, 82)};
                      }});
EMBER_GRADCHECK_CASE({"cumsum", "0-d", [](const V& in) { return cumsum(in[0], 0); },
                      [] { return V{input({}, 83)}; }});
EMBER_GRADCHECK_CASE({"cumsum", "squared (nonzero second derivative)",
                      [](const V& in) {
                        const Tensor c = cumsum(in[0], 1);
                        return mul(c, c);
                      },
                      [] {
                        return V{input({2, 4}, 84)};
                      }});

// ---- values at special points -------------------------------------------------------------

/** The elements of a tensor as float64 values, row-major. */
std::vector<double> values(const Tensor& t) {
  const Tensor c = t.to(DType::Float64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

/** d sum(w * f(x)) / dx for the fixed weights w = 1, 2, 3, ... (in the output's order). */
std::vector<double> grad_of(const Tensor& x, const Tensor& y) {
  const Tensor w = arange(1, y.numel() + 1, 1, TensorOptions(DType::Float64)).reshape(y.sizes());
  return values(autograd::grad({y}, {x}, {w})[0]);
}

using Vals = std::vector<double>;

/** Elementwise EXPECT_NEAR of two lists of values. */
void expect_near(const Vals& got, const Vals& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(ReduceGrad, SumExpandsTheGradient) {
  Tensor x = leaf({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(grad_of(x, sum(x, {0})), (Vals{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(grad_of(x, sum(x, {-1}, true)), (Vals{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(grad_of(x, sum(x)), (Vals{1, 1, 1, 1, 1, 1}));
}

TEST(ReduceGrad, IntegerSumHasNoHistory) {
  const Tensor x = tensor({1, 2, 3});
  EXPECT_FALSE(sum(x).requires_grad());
  EXPECT_FALSE(prod(x).requires_grad());
  EXPECT_FALSE(cumsum(x, 0).requires_grad());
}

TEST(ReduceGrad, AmaxSplitsTheGradientEvenlyAmongTies) {
  Tensor x = leaf({{1.0, 3.0, 3.0, 2.0}, {5.0, 5.0, 5.0, 5.0}});
  EXPECT_EQ(grad_of(x, amax(x, {1})), (Vals{0, 0.5, 0.5, 0, 0.5, 0.5, 0.5, 0.5}));
  EXPECT_EQ(grad_of(x, amin(x, {1}, true)), (Vals{1, 0, 0, 0, 0.5, 0.5, 0.5, 0.5}));
  Tensor y = leaf({{1.0, 3.0}, {3.0, 3.0}});
  EXPECT_EQ(grad_of(y, max(y)), (Vals{0, 1.0 / 3, 1.0 / 3, 1.0 / 3}));
  EXPECT_EQ(grad_of(y, min(y)), (Vals{1, 0, 0, 0}));
  EXPECT_EQ(grad_of(y, amax(y, {0, 1})), (Vals{0, 1.0 / 3, 1.0 / 3, 1.0 / 3}));
}

TEST(ReduceGrad, MaxAlongADimSendsTheGradientToTheReturnedIndex) {
  Tensor x = leaf({{1.0, 3.0, 3.0}, {7.0, 2.0, 7.0}});
  auto [v, i] = max(x, 1);
  EXPECT_TRUE(v.requires_grad());
  EXPECT_FALSE(i.requires_grad());
  EXPECT_EQ(values(i), (Vals{1, 0}));  // the first index wins ties
  EXPECT_EQ(grad_of(x, v), (Vals{0, 1, 0, 2, 0, 0}));
  auto [vk, ik] = min(x, 0, true);
  EXPECT_EQ(grad_of(x, vk), (Vals{1, 0, 3, 0, 2, 0}));  // minima at rows 0, 1, 0
  Tensor s = leaf(2.5);
  EXPECT_EQ(grad_of(s, std::get<0>(max(s, 0))), (Vals{1}));
}

TEST(ReduceGrad, ArgReductionsAndLogicalOnesCarryNoGradient) {
  Tensor x = leaf({{1.0, 3.0}, {0.0, 2.0}});
  EXPECT_FALSE(argmax(x).requires_grad());
  EXPECT_FALSE(argmin(x, 1).requires_grad());
  EXPECT_FALSE(all(x).requires_grad());
  EXPECT_FALSE(any(x, {0}).requires_grad());
}

TEST(ReduceGrad, ProdWithZerosIsTheProductOfTheOthers) {
  Tensor x = leaf({{2.0, 0.0, 3.0}, {0.0, 0.0, 4.0}, {2.0, 5.0, 0.5}});
  // rows: one zero -> 6 at it; two zeros -> 0; none -> prod / x
  EXPECT_EQ(grad_of(x, prod(x, {1})), (Vals{0, 6, 0, 0, 0, 0, 3 * 2.5, 3 * 1.0, 3 * 10.0}));
  Tensor y = leaf({{2.0, 0.0}, {3.0, 4.0}});
  EXPECT_EQ(grad_of(y, prod(y)), (Vals{0, 24, 0, 0}));
}

TEST(ReduceGrad, ProdSecondDerivativeAtTwoZeros) {
  // d2 prod / dx_a dx_b at a = b = 0 elements is the product of the rest: 3 * 4.
  Tensor x = leaf({0.0, 3.0, 0.0, 4.0});
  Tensor g = autograd::grad({prod(x)}, {x}, {}, {}, /*create_graph=*/true)[0];
  EXPECT_EQ(values(g), (Vals{0, 0, 0, 0}));
  Tensor h = autograd::grad({sum(g.narrow(0, 0, 1))}, {x})[0];
  EXPECT_EQ(values(h), (Vals{0, 0, 12, 0}));
}

TEST(ReduceGrad, StdOfAConstantHasZeroGradient) {
  Tensor x = leaf({{2.0, 2.0, 2.0}, {1.0, 2.0, 3.0}});
  const Vals g = grad_of(x, std(x, {1}));
  EXPECT_EQ(Vals(g.begin(), g.begin() + 3), (Vals{0, 0, 0}));
  // second row: std = 1, d std / dx = (x - mean) / ((n - 1) std), weighted by 2
  EXPECT_DOUBLE_EQ(g[3], -1.0);
  EXPECT_DOUBLE_EQ(g[4], 0.0);
  EXPECT_DOUBLE_EQ(g[5], 1.0);
}

TEST(ReduceGrad, VarGradient) {
  Tensor x = leaf({1.0, 2.0, 6.0});              // mean 3
  expect_near(grad_of(x, var(x)), {-2, -1, 3});  // 2 (x - mean) / 2
  expect_near(grad_of(x, var(x, {}, 0)), {-4.0 / 3, -2.0 / 3, 2});
}

TEST(ReduceGrad, NormOfAZeroVectorHasZeroGradient) {
  for (double p : Vals{2.0, 3.0, 1.5, 1.0, 0.5, INFINITY, 0.0}) {
    SCOPED_TRACE(p);
    Tensor x = leaf({{0.0, 0.0, 0.0}, {3.0, 0.0, -4.0}});
    Tensor n = norm(x, p, {1});
    Tensor g = autograd::grad({sum(n)}, {x}, {}, {}, /*create_graph=*/true)[0];
    for (double v : values(g)) EXPECT_FALSE(std::isnan(v));
    EXPECT_EQ(values(g.narrow(0, 0, 1)), (Vals{0, 0, 0}));
    // For p >= 2 (and the piecewise linear p = 1, inf) the second derivative is finite too;
    // for p < 2 it is infinite at x = 0, where PyTorch also gives nan.
    if (p < 2 && p != 1) continue;
    Tensor h = autograd::grad({sum(g)}, {x})[0];
    for (double v : values(h)) EXPECT_FALSE(std::isnan(v));
  }
  Tensor x = leaf({3.0, 0.0, -4.0});
  expect_near(grad_of(x, norm(x)), {0.6, 0, -0.8});
  EXPECT_EQ(grad_of(x, norm(x, 1.0)), (Vals{1, 0, -1}));
  EXPECT_EQ(grad_of(x, norm(x, INFINITY)), (Vals{0, 0, -1}));
  EXPECT_EQ(grad_of(x, norm(x, 0.0)), (Vals{0, 0, 0}));
  // p = 3: x |x| / norm^2
  const double n3 = std::cbrt(27.0 + 64.0);
  expect_near(grad_of(x, norm(x, 3.0)), {9 / (n3 * n3), 0, -16 / (n3 * n3)});
  Tensor t = leaf({3.0, -3.0, 1.0});  // ties of |x| share the gradient, with x's sign
  EXPECT_EQ(grad_of(t, norm(t, INFINITY)), (Vals{0.5, -0.5, 0}));
}

TEST(ReduceGrad, LogsumexpGradientIsSoftmax) {
  Tensor x = leaf({{0.0, std::log(3.0)}, {1000.0, 1000.0}});
  // row 1: weight 2, split in half (1000 would overflow a naive exp)
  expect_near(grad_of(x, logsumexp(x, {1})), {0.25, 0.75, 1.0, 1.0});
}

TEST(ReduceGrad, CumsumGradientIsTheReversedRunningSum) {
  Tensor x = leaf({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(grad_of(x, sum(cumsum(x, 1))), (Vals{3, 2, 1, 3, 2, 1}));
  // weights 1..6: row 0 gets (1+2+3, 2+3, 3), row 1 (4+5+6, 5+6, 6)
  EXPECT_EQ(grad_of(x, cumsum(x, -1)), (Vals{6, 5, 3, 15, 11, 6}));
  EXPECT_EQ(grad_of(x, cumsum(x, 0)), (Vals{5, 7, 9, 4, 5, 6}));
}

TEST(ReduceGrad, MeanOfFloat32KeepsItsDtype) {
  Tensor x = tensor({{1.0, 2.0}, {3.0, 4.0}}).requires_grad_(true);
  mean(x).backward();
  EXPECT_EQ(x.grad().dtype(), DType::Float32);
  EXPECT_EQ(values(x.grad()), (Vals{0.25, 0.25, 0.25, 0.25}));
}

TEST(ReduceGrad, EmptyReductionsGiveEmptyGradients) {
  Tensor x = zeros({0, 3}, DType::Float64).requires_grad_(true);
  sum(sum(x, {0})).backward();
  EXPECT_EQ(x.grad().sizes(), Shape({0, 3}));
  Tensor y = zeros({0, 3}, DType::Float64).requires_grad_(true);
  sum(prod(y, {0})).backward();
  EXPECT_EQ(y.grad().sizes(), Shape({0, 3}));
}

// ---- cumprod -------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"cumprod", "no zeros, dim 1", [](const V& in) { return cumprod(in[0], 1); },
                      [] {
                        return V{input({3, 4}, 90, 0.5, 1.5)};
                      }});
// Note [The gradient of cumprod]: one zero, two zeros, and a zero first in its line.
EMBER_GRADCHECK_CASE(
    {"cumprod", "zeros", [](const V& in) { return cumprod(in[0], -1); },
     [] {
       return V{tensor({{0.7, 0.0, 1.3, -0.8}, {1.1, 0.0, 0.9, 0.0}, {0.0, 1.2, -0.6, 0.5}},
                       DType::Float64)
                    .requires_grad_(true)};
     },
     /*second_order=*/false});

TEST(Cumprod, ValuesAndTheGradientAtZeros) {
  const Tensor x = tensor({{2, 3, 0, 5}, {-1, 2, 2, 2}}, DType::Int64);
  EXPECT_EQ(values(cumprod(x, 1)), (std::vector<double>{2, 6, 0, 0, -1, -2, -4, -8}));
  EXPECT_EQ(values(cumprod(x, 0)), (std::vector<double>{2, 3, 0, 5, -2, 6, 0, 10}));
  EXPECT_EQ(cumprod(x.to(DType::Bool), 0).dtype(), DType::Int64);
  // d/dx of sum(cumprod(x)) for x = (2, 0, 3): 1 + 0 + 0, 2 + 2*3, 0.
  Tensor v = tensor({2.0, 0.0, 3.0}, DType::Float64).requires_grad_(true);
  sum(cumprod(v, 0)).backward();
  EXPECT_EQ(values(v.grad()), (std::vector<double>{1.0, 8.0, 0.0}));
}

// ---- nansum, nanmean
// -----------------------------------------------------------------------------
EMBER_GRADCHECK_CASE(
    {"nansum", "dim 1, a NaN masked out",
     [](const V& in) {
       const Tensor nan_mask = on(in[0], tensor({{false, true, false}, {false, false, false}}));
       return nansum(masked_fill(in[0], nan_mask, NAN), {1});
     },
     [] {
       return V{input({2, 3}, 180)};
     }});
EMBER_GRADCHECK_CASE(
    {"nanmean", "all dims, a NaN masked out",
     [](const V& in) {
       const Tensor nan_mask = on(in[0], tensor({{false, false, true}, {false, false, false}}));
       return nanmean(masked_fill(in[0], nan_mask, NAN), {0}, true);
     },
     [] {
       return V{input({2, 3}, 181)};
     }});

TEST(NanReductions, SkipNaNAndKeepIntegers) {
  const Tensor x = tensor({{1.0, NAN, 3.0}, {NAN, NAN, 4.0}}, DType::Float64);
  EXPECT_EQ(values(nansum(x, {1})), (std::vector<double>{4, 4}));
  EXPECT_EQ(values(nanmean(x, {1})), (std::vector<double>{2, 4}));
  EXPECT_TRUE(std::isnan(values(nanmean(x, {0}))[1]));  // only NaNs: 0 / 0
  const Tensor i = tensor({1, 2, 3});
  EXPECT_EQ(nansum(i).dtype(), DType::Int64);
  EXPECT_EQ(nansum(i).item<int64_t>(), 6);
  EXPECT_THROW(nanmean(i), TypeError);
}

}  // namespace
}  // namespace ember::testing
