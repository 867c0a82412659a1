// Gradcheck cases for elementwise ops, copies/conversions and views.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/core/autograd/gradcheck_cases.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

using V = std::vector<Tensor>;

// Binary ops: same shapes, broadcasting against a row and a 0-d tensor, and a transposed input.
#define BINARY_CASES(OP, LO, HI)                                                          \
  EMBER_GRADCHECK_CASE({#OP, "same shape", [](const V& in) { return OP(in[0], in[1]); },  \
                        [] {                                                              \
                          return V{input({2, 3}, 1, LO, HI), input({2, 3}, 2, LO, HI)};   \
                        }});                                                              \
  EMBER_GRADCHECK_CASE(                                                                   \
      {#OP, "broadcast [2,3] x [3] x 0-d",                                                \
       [](const V& in) { return OP(OP(in[0], in[1]), in[2]); },                           \
       [] {                                                                               \
         return V{input({2, 3}, 3, LO, HI), input({3}, 4, LO, HI), input({}, 5, LO, HI)}; \
       }});                                                                               \
  EMBER_GRADCHECK_CASE({#OP, "transposed operand",                                        \
                        [](const V& in) { return OP(in[0].t(), in[1]); },                 \
                        [] {                                                              \
                          return V{input({3, 2}, 6, LO, HI), input({2, 3}, 7, LO, HI)};   \
                        }})

BINARY_CASES(add, -1.0, 1.0);
BINARY_CASES(sub, -1.0, 1.0);
BINARY_CASES(mul, -1.0, 1.0);
BINARY_CASES(div, 0.5, 2.0);
BINARY_CASES(pow, 0.5, 2.0);
BINARY_CASES(maximum, -1.0, 1.0);
BINARY_CASES(minimum, -1.0, 1.0);
BINARY_CASES(atan2, 0.5, 2.0);
BINARY_CASES(hypot, 0.5, 2.0);
BINARY_CASES(logaddexp, -2.0, 2.0);
#undef BINARY_CASES

// atan2 in all four quadrants, hypot with negative legs, logaddexp far apart (one term
// dominating: the gradient is nearly 1 and 0).
EMBER_GRADCHECK_CASE({"atan2", "four quadrants", [](const V& in) { return atan2(in[0], in[1]); },
                      [] {
                        return V{
                            tensor({1.5, 0.7, -0.4, -2.0}, DType::Float64).requires_grad_(true),
                            tensor({0.8, -1.2, -0.9, 1.1}, DType::Float64).requires_grad_(true)};
                      }});
EMBER_GRADCHECK_CASE({"hypot", "negative legs", [](const V& in) { return hypot(in[0], in[1]); },
                      [] {
                        return V{tensor({-1.5, 0.7, -0.4}, DType::Float64).requires_grad_(true),
                                 tensor({0.8, -1.2, -0.9}, DType::Float64).requires_grad_(true)};
                      }});
EMBER_GRADCHECK_CASE({"logaddexp", "far apart", [](const V& in) { return logaddexp(in[0], in[1]); },
                      [] {
                        return V{tensor({-30.0, 40.0, 0.5}, DType::Float64).requires_grad_(true),
                                 tensor({10.0, -5.0, 0.25}, DType::Float64).requires_grad_(true)};
                      }});

EMBER_GRADCHECK_CASE({"where", "broadcast condition",
                      [](const V& in) { return where(gt(in[0], 0.0), in[0], in[1]); },
                      [] {
                        return V{input({2, 3}, 8), input({3}, 9)};
                      }});

// Unary ops on their domains.
#define UNARY_CASE(OP, LO, HI)                                                        \
  EMBER_GRADCHECK_CASE({#OP, "2x3", [](const V& in) { return OP(in[0]); },            \
                        [] {                                                          \
                          return V{input({2, 3}, 10, LO, HI)};                        \
                        }});                                                          \
  EMBER_GRADCHECK_CASE({#OP, "transposed", [](const V& in) { return OP(in[0].t()); }, \
                        [] {                                                          \
                          return V{input({3, 2}, 11, LO, HI)};                        \
                        }})

UNARY_CASE(neg, -1.0, 1.0);
UNARY_CASE(abs, 0.1, 1.0);
UNARY_CASE(exp, -1.0, 1.0);
UNARY_CASE(log, 0.5, 2.0);
UNARY_CASE(log1p, -0.5, 2.0);
UNARY_CASE(expm1, -1.0, 1.0);
UNARY_CASE(log2, 0.5, 2.0);
UNARY_CASE(log10, 0.5, 2.0);
UNARY_CASE(exp2, -1.0, 1.0);
UNARY_CASE(sqrt, 0.5, 2.0);
UNARY_CASE(rsqrt, 0.5, 2.0);
UNARY_CASE(sin, -2.0, 2.0);
UNARY_CASE(cos, -2.0, 2.0);
UNARY_CASE(tan, -1.2, 1.2);
UNARY_CASE(asin, -0.9, 0.9);
UNARY_CASE(acos, -0.9, 0.9);
UNARY_CASE(atan, -2.0, 2.0);
UNARY_CASE(sinh, -2.0, 2.0);
UNARY_CASE(cosh, -2.0, 2.0);
UNARY_CASE(asinh, -2.0, 2.0);
UNARY_CASE(acosh, 1.2, 3.0);
UNARY_CASE(atanh, -0.9, 0.9);
UNARY_CASE(tanh, -2.0, 2.0);
UNARY_CASE(sigmoid, -3.0, 3.0);
UNARY_CASE(relu, 0.1, 1.0);
UNARY_CASE(silu, -3.0, 3.0);
UNARY_CASE(erf, -2.0, 2.0);
UNARY_CASE(erfinv, -0.9, 0.9);
UNARY_CASE(erfc, -2.0, 2.0);
UNARY_CASE(lgamma, 0.5, 3.0);
UNARY_CASE(digamma, 0.5, 3.0);
EMBER_GRADCHECK_CASE({"lgamma", "negative, between poles",
                      [](const V& in) { return lgamma(in[0]); },
                      [] {
                        return V{input({2, 3}, 132, -2.9, -2.1)};
                      }});
EMBER_GRADCHECK_CASE({"polygamma", "n = 2", [](const V& in) { return polygamma(2, in[0]); },
                      [] {
                        return V{input({2, 3}, 133, 0.5, 3.0)};
                      }});
UNARY_CASE(sign, 0.1, 1.0);
UNARY_CASE(floor, 0.1, 0.9);
UNARY_CASE(ceil, 0.1, 0.9);
UNARY_CASE(round, 0.1, 0.4);
#undef UNARY_CASE

EMBER_GRADCHECK_CASE(
    {"relu", "both signs", [](const V& in) { return relu(in[0]); },
     [] {
       return V{tensor({-0.7, 0.3, -0.2, 0.9}, DType::Float64).requires_grad_(true)};
     }});
EMBER_GRADCHECK_CASE(
    {"softplus", "both branches", [](const V& in) { return softplus(in[0], 2, 3); },
     [] {
       return V{tensor({-2.0, -0.3, 0.4, 1.2, 1.7, 2.5}, DType::Float64).requires_grad_(true)};
     }});
EMBER_GRADCHECK_CASE({"gelu", "erf form", [](const V& in) { return gelu(in[0]); },
                      [] {
                        return V{input({2, 3}, 12, -3.0, 3.0)};
                      }});
EMBER_GRADCHECK_CASE({"gelu", "tanh form", [](const V& in) { return gelu(in[0], "tanh"); },
                      [] {
                        return V{input({2, 3}, 13, -3.0, 3.0)};
                      }});
EMBER_GRADCHECK_CASE(
    {"clamp", "both bounds", [](const V& in) { return clamp(in[0], -0.5, 0.5); },
     [] {
       return V{tensor({-0.9, -0.3, 0.1, 0.45, 0.8}, DType::Float64).requires_grad_(true)};
     }});
EMBER_GRADCHECK_CASE({"clamp", "lower bound only",
                      [](const V& in) { return clamp(in[0], 0.0, std::nullopt); },
                      [] {
                        return V{tensor({-0.9, 0.3}, DType::Float64).requires_grad_(true)};
                      }});

// Copies and conversions.
EMBER_GRADCHECK_CASE({"clone", "then square", [](const V& in) { return square(in[0].clone()); },
                      [] {
                        return V{input({2, 3}, 14)};
                      }});
EMBER_GRADCHECK_CASE({"contiguous", "of a transpose",
                      [](const V& in) { return square(in[0].t().contiguous()); },
                      [] {
                        return V{input({2, 3}, 15)};
                      }});
EMBER_GRADCHECK_CASE({"to",
                      "float64 -> float32 -> float64",
                      [](const V& in) { return in[0].to(DType::Float32).to(DType::Float64); },
                      [] { return V{input({4}, 16)}; },
                      true,
                      {1e-2, 1e-4, 1e-3}});
EMBER_GRADCHECK_CASE({"copy_", "into a fresh tensor, broadcast",
                      [](const V& in) {
                        Tensor out = zeros({2, 3}, DType::Float64);
                        out.copy_(in[0]);
                        return mul(out, out);
                      },
                      [] { return V{input({3}, 17)}; }});

// Views.
EMBER_GRADCHECK_CASE({"view", "[2,3] -> [3,2]",
                      [](const V& in) {
                        return square(in[0].view({3, 2}));
                      },
                      [] {
                        return V{input({2, 3}, 18)};
                      }});
EMBER_GRADCHECK_CASE({"reshape", "of a transpose (copies)",
                      [](const V& in) { return square(in[0].t().reshape({6})); },
                      [] {
                        return V{input({2, 3}, 19)};
                      }});
EMBER_GRADCHECK_CASE({"transpose", "dims 0, 2",
                      [](const V& in) { return mul(in[0].transpose(0, 2), in[1]); },
                      [] {
                        return V{input({2, 1, 3}, 20), input({3, 1, 2}, 21)};
                      }});
EMBER_GRADCHECK_CASE({"permute", "[2,0,1]",
                      [](const V& in) {
                        return square(in[0].permute({2, 0, 1}));
                      },
                      [] {
                        return V{input({2, 1, 3}, 22)};
                      }});
EMBER_GRADCHECK_CASE({"slice", "step 1", [](const V& in) { return square(in[0].slice(1, 1, 3)); },
                      [] {
                        return V{input({2, 4}, 23)};
                      }});
EMBER_GRADCHECK_CASE({"slice", "step 2",
                      [](const V& in) { return square(in[0].slice(0, 0, 5, 2)); },
                      [] { return V{input({5}, 24)}; }});
EMBER_GRADCHECK_CASE({"slice", "step 3 of dim 1, 2-d",
                      [](const V& in) { return square(in[0].slice(1, 1, 5, 3)); },
                      [] {
                        return V{input({2, 5}, 33)};
                      }});
EMBER_GRADCHECK_CASE({"narrow", "dim -1",
                      [](const V& in) { return square(in[0].narrow(-1, 1, 2)); },
                      [] {
                        return V{input({2, 4}, 25)};
                      }});
EMBER_GRADCHECK_CASE({"select", "row 1", [](const V& in) { return square(in[0].select(0, 1)); },
                      [] {
                        return V{input({3, 2}, 26)};
                      }});
EMBER_GRADCHECK_CASE({"expand", "[3,1] -> [2,3,4]",
                      [](const V& in) {
                        return mul(in[0].expand({2, 3, 4}), in[1]);
                      },
                      [] {
                        return V{input({3, 1}, 27), input({2, 3, 4}, 28)};
                      }});
EMBER_GRADCHECK_CASE({"squeeze", "all", [](const V& in) { return square(in[0].squeeze()); },
                      [] {
                        return V{input({1, 3, 1}, 29)};
                      }});
EMBER_GRADCHECK_CASE({"unsqueeze", "dim 1", [](const V& in) { return square(in[0].unsqueeze(1)); },
                      [] { return V{input({3}, 30)}; }});
EMBER_GRADCHECK_CASE({"flatten", "dims 1..2", [](const V& in) { return square(in[0].flatten(1)); },
                      [] {
                        return V{input({2, 2, 2}, 31)};
                      }});
EMBER_GRADCHECK_CASE({"as_strided", "overlapping-free window",
                      [](const V& in) {
                        return square(in[0].as_strided({2, 2}, {3, 1}, 1));
                      },
                      [] {
                        return V{input({2, 3}, 32)};
                      }});
EMBER_GRADCHECK_CASE({"as_strided", "overlapping window of a transposed input",
                      [](const V& in) {
                        return square(in[0].t().as_strided({3, 2}, {1, 1}, 0));
                      },
                      [] {
                        return V{input({2, 3}, 33)};
                      }});

EMBER_GRADCHECK_CASE({"as_strided", "overlapping windows (first order)",
                      [](const V& in) {
                        return square(in[0].as_strided({3, 2}, {1, 1}, 1));
                      },
                      [] {
                        return V{input({2, 3}, 33)};
                      },
                      false});

TEST(ElementwiseGrad, AsStridedWindowsThatOverlapSumTheirGradients) {
  // Windows [x0 x1], [x1 x2], [x2 x3]: the middle elements are read twice (PyTorch's gradient);
  // the backward used to copy into the overlapping region, keeping one gradient per place.
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}).requires_grad_(true);
  sum(x.as_strided({3, 2}, {1, 1})).backward();
  const float expected[] = {1, 2, 2, 1};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(x.grad().data_ptr<float>()[i], expected[i]) << i;
}

TEST(ElementwiseGrad, MulOfSameTensorAccumulates) {
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_(true);
  sum(mul(x, x)).backward();
  const float expected[] = {2, 4, 6};
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(x.grad().data_ptr<float>()[i], expected[i]);
}

TEST(ElementwiseGrad, PromotedInputGetsItsOwnDtype) {
  Tensor a = tensor({1.0, 2.0}).requires_grad_(true);                  // float32
  Tensor b = tensor({3.0, 4.0}, DType::Float64).requires_grad_(true);  // float64
  sum(mul(a, b)).backward();
  EXPECT_EQ(a.grad().dtype(), DType::Float32);
  EXPECT_EQ(b.grad().dtype(), DType::Float64);
  EXPECT_FLOAT_EQ(a.grad().data_ptr<float>()[1], 4.0f);
}

// Note [Fused ReLU backward]: the one-pass kernel (plain backward) and the composite form
// (create_graph) agree, and follow PyTorch's threshold_backward at 0 and NaN.
TEST(ElementwiseGrad, ReluBackwardFusedMatchesComposite) {
  for (DType dt : {DType::Float32, DType::Float64, DType::BFloat16}) {
    Tensor x = tensor({-1.0, 0.0, 2.0, NAN, 3.5, -0.25}, dt).requires_grad_(true);
    const Tensor w = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, dt);
    const Tensor fused = autograd::grad({sum(mul(relu(x), w))}, {x})[0];
    const Tensor composite =
        autograd::grad({sum(mul(relu(x), w))}, {x}, {}, {}, /*create_graph=*/true)[0];
    const std::vector<double> want = {0, 0, 3, 4, 5, 0};  // y <= 0: 0; NaN y passes g
    EXPECT_EQ(values(fused), want) << dtype_name(dt);
    EXPECT_EQ(values(composite), want) << dtype_name(dt);
    EXPECT_EQ(fused.dtype(), dt);
  }
  // A broadcast (stride-0) incoming gradient goes through the kernel's strided path.
  Tensor x = tensor({{-1.0, 2.0}, {3.0, -4.0}}).requires_grad_(true);
  sum(relu(x)).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 1, 1, 0}));
}

TEST(ElementwiseGrad, PowZeroBaseGivesZeroExponentGradient) {
  Tensor a = tensor({0.0, 2.0}, DType::Float64).requires_grad_(true);
  Tensor b = tensor({2.0, 3.0}, DType::Float64).requires_grad_(true);
  sum(pow(a, b)).backward();
  EXPECT_EQ(b.grad().data_ptr<double>()[0], 0.0);  // not nan
  EXPECT_NEAR(b.grad().data_ptr<double>()[1], 8.0 * std::log(2.0), 1e-12);
}

// ---- activations of PyTorch's nn.functional, remainders --------------------------------------
EMBER_GRADCHECK_CASE(
    {"leaky_relu", "both sides", [](const V& in) { return leaky_relu(in[0], 0.2); },
     [] {
       return V{tensor({-1.5, -0.2, 0.3, 1.1}, DType::Float64).requires_grad_(true)};
     }});
EMBER_GRADCHECK_CASE(
    {"elu", "alpha 1.5", [](const V& in) { return elu(in[0], 1.5); },
     [] {
       return V{tensor({-2.0, -0.4, 0.3, 1.2}, DType::Float64).requires_grad_(true)};
     }});
EMBER_GRADCHECK_CASE(
    {"elu", "selu", [](const V& in) { return selu(in[0]); },
     [] {
       return V{tensor({-2.0, -0.4, 0.3, 1.2}, DType::Float64).requires_grad_(true)};
     }});
EMBER_GRADCHECK_CASE(
    {"elu", "celu alpha 0.5", [](const V& in) { return celu(in[0], 0.5); },
     [] {
       return V{tensor({-2.0, -0.4, 0.3, 1.2}, DType::Float64).requires_grad_(true)};
     }});
EMBER_GRADCHECK_CASE({"logsigmoid", "wide range", [](const V& in) { return logsigmoid(in[0]); },
                      [] {
                        return V{input({2, 3}, 130, -8.0, 8.0)};
                      }});
EMBER_GRADCHECK_CASE({"mish", "both sides", [](const V& in) { return mish(in[0]); },
                      [] {
                        return V{input({2, 3}, 131, -4.0, 4.0)};
                      }});
EMBER_GRADCHECK_CASE(
    {"hardtanh", "inside and beyond", [](const V& in) { return hardtanh(in[0], -0.5, 0.8); },
     [] {
       return V{tensor({-1.5, -0.3, 0.2, 0.7, 1.4}, DType::Float64).requires_grad_(true)};
     }});
EMBER_GRADCHECK_CASE(
    {"hardsigmoid", "inside and beyond", [](const V& in) { return hardsigmoid(in[0]); },
     [] {
       return V{tensor({-4.0, -2.5, 0.3, 2.0, 3.5}, DType::Float64).requires_grad_(true)};
     }});
EMBER_GRADCHECK_CASE(
    {"hardswish", "inside and beyond", [](const V& in) { return hardswish(in[0]); },
     [] {
       return V{tensor({-4.0, -2.5, 0.3, 2.0, 3.5}, DType::Float64).requires_grad_(true)};
     }});
EMBER_GRADCHECK_CASE(
    {"remainder", "both signs, broadcast", [](const V& in) { return remainder(in[0], in[1]); },
     [] {
       return V{tensor({{-3.7, 2.2, 5.1}, {0.4, -1.3, 4.6}}, DType::Float64).requires_grad_(true),
                tensor({1.5, -2.5, 0.7}, DType::Float64).requires_grad_(true)};
     }});
EMBER_GRADCHECK_CASE(
    {"fmod", "both signs, broadcast", [](const V& in) { return fmod(in[0], in[1]); },
     [] {
       return V{tensor({{-3.7, 2.2, 5.1}, {0.4, -1.3, 4.6}}, DType::Float64).requires_grad_(true),
                tensor({1.5, -2.5, 0.7}, DType::Float64).requires_grad_(true)};
     }});

TEST(Activations, MatchHandComputedValues) {
  const Tensor x = tensor({-2.0, 0.0, 1.5}, DType::Float64);
  EXPECT_EQ(values(leaky_relu(x, 0.1)), (std::vector<double>{-0.2, 0.0, 1.5}));
  const std::vector<double> e = values(elu(x, 2.0));
  EXPECT_NEAR(e[0], 2.0 * (std::exp(-2.0) - 1), 1e-15);
  EXPECT_EQ(e[1], 0.0);
  EXPECT_EQ(e[2], 1.5);
  const std::vector<double> s = values(selu(x));
  EXPECT_NEAR(s[0], 1.0507009873554805 * 1.6732632423543772 * (std::exp(-2.0) - 1), 1e-14);
  EXPECT_NEAR(s[2], 1.0507009873554805 * 1.5, 1e-14);
  EXPECT_NEAR(values(celu(x, 0.5))[0], 0.5 * (std::exp(-4.0) - 1), 1e-15);
  // logsigmoid stays finite where log(sigmoid(x)) would be log(0).
  const std::vector<double> ls = values(logsigmoid(tensor({-800.0, 0.0, 40.0}, DType::Float64)));
  EXPECT_EQ(ls[0], -800.0);
  EXPECT_NEAR(ls[1], -std::log(2.0), 1e-15);
  EXPECT_NEAR(ls[2], -std::exp(-40.0), 1e-30);
  EXPECT_NEAR(values(mish(x))[2], 1.5 * std::tanh(std::log1p(std::exp(1.5))), 1e-15);
  EXPECT_EQ(values(hardtanh(x)), (std::vector<double>{-1.0, 0.0, 1.0}));
  EXPECT_EQ(values(relu6(tensor({-1.0, 3.0, 7.0}, DType::Float64))),
            (std::vector<double>{0.0, 3.0, 6.0}));
  const Tensor h = tensor({-4.0, 0.0, 1.5, 3.0}, DType::Float64);
  EXPECT_EQ(values(hardsigmoid(h)), (std::vector<double>{0.0, 0.5, 0.75, 1.0}));
  EXPECT_EQ(values(hardswish(h)), (std::vector<double>{0.0, 0.0, 1.125, 3.0}));
}

TEST(Activations, HardtanhGradientIsZeroAtTheBoundsUnlikeClamp) {
  Tensor x = tensor({-1.0, 0.0, 1.0}, DType::Float64).requires_grad_(true);
  sum(hardtanh(x)).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0.0, 1.0, 0.0}));
  Tensor y = tensor({-1.0, 0.0, 1.0}, DType::Float64).requires_grad_(true);
  sum(clamp(y, -1.0, 1.0)).backward();
  EXPECT_EQ(values(y.grad()), (std::vector<double>{1.0, 1.0, 1.0}));
}

TEST(Remainders, FollowTheDivisorOrTheDividendSign) {
  // Python: -7 % 3 == 2, 7 % -3 == -2; C: fmod(-7, 3) == -1, fmod(7, -3) == 1.
  const Tensor a = tensor({-7, 7, -7, 7, 6}, DType::Int64);
  const Tensor b = tensor({3, -3, -3, 3, 3}, DType::Int64);
  EXPECT_EQ(values(remainder(a, b)), (std::vector<double>{2, -2, -1, 1, 0}));
  EXPECT_EQ(values(fmod(a, b)), (std::vector<double>{-1, 1, -1, 1, 0}));
  EXPECT_EQ(remainder(a, b).dtype(), DType::Int64);
  const Tensor fa = tensor({-7.5, 7.5, -0.0}, DType::Float32);
  EXPECT_EQ(values(remainder(fa, 2.0)), (std::vector<double>{0.5, 1.5, 0.0}));
  EXPECT_EQ(values(fmod(fa, 2.0)), (std::vector<double>{-1.5, 1.5, 0.0}));
  // INT64_MIN % -1 would trap in C; it is 0.
  const Tensor lo = tensor({std::numeric_limits<int64_t>::min()}, DType::Int64);
  EXPECT_EQ(values(remainder(lo, tensor({-1}, DType::Int64)))[0], 0.0);
  // An integer 0 divisor is an error, a floating one NaN.
  EXPECT_THROW(remainder(a, tensor({0}, DType::Int64)), Error);
  EXPECT_THROW(fmod(a, 0), Error);
  EXPECT_TRUE(std::isnan(values(fmod(fa, 0.0))[0]));
}

// ---- Composites: lerp, addcmul, addcdiv, nan_to_num, clamp with tensor bounds ------------------
EMBER_GRADCHECK_CASE({"lerp", "tensor weight on both branches, broadcast",
                      [](const V& in) { return lerp(in[0], in[1], in[2]); },
                      [] {
                        return V{input({2, 3}, 160), input({3}, 161),
                                 tensor({0.1, 0.7, 1.3}, DType::Float64).requires_grad_(true)};
                      }});
EMBER_GRADCHECK_CASE({"lerp", "number weight >= 0.5",
                      [](const V& in) { return lerp(in[0], in[1], 0.75); },
                      [] {
                        return V{input({4}, 162), input({4}, 163)};
                      }});
EMBER_GRADCHECK_CASE({"addcmul", "broadcast, value 0.5",
                      [](const V& in) { return addcmul(in[0], in[1], in[2], 0.5); },
                      [] {
                        return V{input({2, 3}, 164), input({3}, 165), input({2, 1}, 166)};
                      }});
EMBER_GRADCHECK_CASE({"addcdiv", "broadcast, value -2",
                      [](const V& in) { return addcdiv(in[0], in[1], in[2], -2); },
                      [] {
                        return V{input({2, 3}, 167), input({2, 3}, 168), input({3}, 169, 0.5, 2.0)};
                      }});
EMBER_GRADCHECK_CASE({"nan_to_num", "finite values pass through",
                      [](const V& in) { return nan_to_num(in[0], 0.0, 1.0, -1.0); },
                      [] {
                        return V{input({2, 3}, 170)};
                      }});
EMBER_GRADCHECK_CASE(
    {"clamp", "tensor bounds, broadcast", [](const V& in) { return clamp(in[0], in[1], in[2]); },
     [] {
       return V{tensor({{-0.9, 0.1, 0.8}, {0.4, -0.2, 0.95}}, DType::Float64).requires_grad_(true),
                tensor({-0.5, 0.0, 0.3}, DType::Float64).requires_grad_(true),
                tensor({{0.6}, {0.5}}, DType::Float64).requires_grad_(true)};
     }});

// ---- Activations as composites: threshold, the shrinks, prelu, glu, softmin -------------------
EMBER_GRADCHECK_CASE({"threshold", "0.3 -> -2",
                      [](const V& in) { return threshold(in[0], 0.3, -2.0); },
                      [] {
                        return V{input({3, 4}, 750)};
                      }});
EMBER_GRADCHECK_CASE({"hardshrink", "lambd 0.5", [](const V& in) { return hardshrink(in[0]); },
                      [] {
                        return V{input({3, 4}, 751)};
                      }});
EMBER_GRADCHECK_CASE({"softshrink", "lambd 0.3", [](const V& in) { return softshrink(in[0], 0.3); },
                      [] {
                        return V{input({3, 4}, 752)};
                      }});
EMBER_GRADCHECK_CASE({"tanhshrink", "", [](const V& in) { return tanhshrink(in[0]); },
                      [] { return V{input({5}, 753)}; }});
EMBER_GRADCHECK_CASE({"softsign", "", [](const V& in) { return softsign(in[0]); },
                      [] {
                        return V{input({3, 4}, 790)};
                      }});
EMBER_GRADCHECK_CASE({"prelu", "one weight per channel",
                      [](const V& in) { return prelu(in[0], in[1]); },
                      [] {
                        return V{input({2, 3, 2}, 754), input({3}, 755)};
                      }});
EMBER_GRADCHECK_CASE({"prelu", "one weight, 1-d input",
                      [](const V& in) { return prelu(in[0], in[1]); },
                      [] {
                        return V{input({4}, 756), input({1}, 757)};
                      }});
EMBER_GRADCHECK_CASE({"glu", "dim 1", [](const V& in) { return glu(in[0], 1); },
                      [] {
                        return V{input({2, 4, 3}, 758)};
                      }});
EMBER_GRADCHECK_CASE({"softmin", "dim 0", [](const V& in) { return softmin(in[0], 0); },
                      [] {
                        return V{input({3, 2}, 759)};
                      }});

TEST(Activations, MatchHandComputedValuesAndRefuseWhatPyTorchRefuses) {
  const Tensor x = tensor({-2.0, -0.5, 0.25, 1.0, 3.0}, DType::Float64);
  EXPECT_EQ(values(threshold(x, 0.25, 9.0)), (std::vector<double>{9, 9, 9, 1, 3}));
  EXPECT_EQ(values(hardshrink(x, 0.5)), (std::vector<double>{-2, 0, 0, 1, 3}));
  EXPECT_EQ(values(softshrink(x, 0.5)), (std::vector<double>{-1.5, 0, 0, 0.5, 2.5}));
  EXPECT_EQ(values(prelu(x, tensor({0.5}, DType::Float64))),
            (std::vector<double>{-1, -0.25, 0.25, 1, 3}));
  const Tensor m = tensor({{-1.0, -2.0}, {-3.0, 4.0}}, DType::Float64);
  EXPECT_EQ(values(prelu(m, tensor({0.5, 2.0}, DType::Float64))),
            (std::vector<double>{-0.5, -4, -1.5, 4}));
  const Tensor g = glu(tensor({{1.0, 2.0, 0.0, 100.0}}, DType::Float64));
  EXPECT_NEAR(values(g)[0], 0.5, 1e-15);
  EXPECT_NEAR(values(g)[1], 2.0, 1e-15);
  EXPECT_THROW(softshrink(x, -1.0), ValueError);
  EXPECT_THROW(glu(tensor({1.0, 2.0, 3.0})), ValueError);  // odd size
  EXPECT_THROW(glu(full(Shape{}, 1.0)), ValueError);       // 0-d
  EXPECT_THROW(glu(zeros({2, 2}), 2), IndexError);
  EXPECT_THROW(prelu(zeros({2, 3, 4}), zeros({2})), ValueError);
  EXPECT_THROW(prelu(zeros({3}), zeros({3})), ValueError);  // a 1-d input has one channel
  EXPECT_THROW(prelu(zeros({2, 3}), zeros({1, 3})), ValueError);
}

TEST(Composites, NanToNumSendsNoGradientToReplacedElements) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = tensor({1.0, NAN, inf, -inf}, DType::Float64).requires_grad_(true);
  sum(nan_to_num(x)).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 0, 0, 0}));
  EXPECT_EQ(values(nan_to_num(x.detach())),
            (std::vector<double>{1, 0, std::numeric_limits<double>::max(),
                                 -std::numeric_limits<double>::max()}));
  EXPECT_EQ(nan_to_num(tensor({1.0, inf}, DType::Float16)).to(DType::Float64).data_ptr<double>()[1],
            65504.0);
}

TEST(Composites, LerpReachesEndExactlyAtWeightOne) {
  // start + 1 * (end - start) rounds; PyTorch's second branch gives end itself.
  const Tensor start = tensor({0.1f, 1e8f}), end = tensor({0.7f, 3.0f});
  EXPECT_EQ(values(lerp(start, end, 1.0)), values(end));
  EXPECT_EQ(values(lerp(start, end, tensor({1.0f, 1.0f}))), values(end));
}

TEST(Composites, ClampWithTensorBoundsSendsTheGradientToTheBoundCrossed) {
  Tensor x = tensor({-2.0, 0.5, 3.0}, DType::Float64).requires_grad_(true);
  Tensor lo = tensor({-1.0, -1.0, -1.0}, DType::Float64).requires_grad_(true);
  Tensor hi = tensor({1.0}, DType::Float64).requires_grad_(true);
  Tensor y = clamp(x, lo, hi);
  EXPECT_EQ(values(y), (std::vector<double>{-1, 0.5, 1}));
  sum(y).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(values(lo.grad()), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(values(hi.grad()), (std::vector<double>{1}));
  // NaN in x or a bound propagates, as maximum / minimum do.
  const Tensor r = clamp(tensor({NAN, 0.0}), tensor({0.0, NAN}), Tensor());
  EXPECT_TRUE(std::isnan(values(r)[0]) && std::isnan(values(r)[1]));
}

}  // namespace
}  // namespace ember::testing
