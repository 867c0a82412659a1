// Gradients of matrix products and softmax: gradcheck cases (first and second order) for every
// NumPy case of matmul (1-d operands, broadcast batch dims), mm, bmm, non-contiguous operands
// and softmax/log_softmax over every dim of a 3-d input; value tests against float64 loops for
// broadcast batch operands, mixed dtypes, an empty inner dim and softmax's saved output.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/core/autograd/gradcheck_cases.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

using V = std::vector<Tensor>;

// ---- matmul -------------------------------------------------------------------------------
Tensor matmul_of(const V& in) {
  return matmul(in[0], in[1]);
}

EMBER_GRADCHECK_CASE({"matmul", "2-d x 2-d", matmul_of, [] {
                        return V{input({2, 3}, 1), input({3, 4}, 2)};
                      }});
EMBER_GRADCHECK_CASE({"matmul", "1-d x 1-d (dot)", matmul_of, [] {
                        return V{input({4}, 3), input({4}, 4)};
                      }});
EMBER_GRADCHECK_CASE({"matmul", "1-d x 2-d", matmul_of, [] {
                        return V{input({3}, 5), input({3, 4}, 6)};
                      }});
EMBER_GRADCHECK_CASE({"matmul", "2-d x 1-d", matmul_of, [] {
                        return V{input({2, 3}, 7), input({3}, 8)};
                      }});
EMBER_GRADCHECK_CASE({"matmul", "3-d x 3-d", matmul_of, [] {
                        return V{input({2, 2, 3}, 9), input({2, 3, 2}, 10)};
                      }});
EMBER_GRADCHECK_CASE({"matmul", "3-d x 2-d (right operand broadcast over the batch)", matmul_of,
                      [] {
                        return V{input({2, 2, 3}, 11), input({3, 2}, 12)};
                      }});
EMBER_GRADCHECK_CASE({"matmul", "2-d x 3-d (left operand broadcast over the batch)", matmul_of, [] {
                        return V{input({2, 3}, 13), input({2, 3, 2}, 14)};
                      }});
EMBER_GRADCHECK_CASE({"matmul", "batch dims [2,1] x [3] broadcast both ways", matmul_of, [] {
                        return V{input({2, 1, 2, 2}, 15), input({3, 2, 2}, 16)};
                      }});
EMBER_GRADCHECK_CASE({"matmul", "batch dims [1,2] x [2,1]", matmul_of, [] {
                        return V{input({1, 2, 2, 3}, 17), input({2, 1, 3, 1}, 18)};
                      }});
EMBER_GRADCHECK_CASE({"matmul", "1-d x 3-d", matmul_of, [] {
                        return V{input({3}, 19), input({2, 3, 2}, 20)};
                      }});
EMBER_GRADCHECK_CASE({"matmul", "3-d x 1-d", matmul_of, [] {
                        return V{input({2, 2, 3}, 21), input({3}, 22)};
                      }});
EMBER_GRADCHECK_CASE({"matmul", "transposed operands",
                      [](const V& in) { return matmul(in[0].t(), in[1].t()); },
                      [] {
                        return V{input({3, 2}, 23), input({4, 3}, 24)};
                      }});
EMBER_GRADCHECK_CASE({"matmul", "batch-transposed and sliced operands",
                      [](const V& in) {
                        return matmul(in[0].transpose(0, 1), in[1].slice(-1, 1, 3));
                      },
                      [] {
                        return V{input({2, 2, 3}, 25), input({2, 3, 4}, 26)};
                      }});
EMBER_GRADCHECK_CASE({"matmul", "same operand twice (x^T x)",
                      [](const V& in) { return matmul(in[0].t(), in[0]); },
                      [] {
                        return V{input({3, 2}, 27)};
                      }});
EMBER_GRADCHECK_CASE({"matmul", "only the right operand requires grad",
                      [](const V& in) { return matmul(in[0], in[1]); },
                      [] {
                        return V{input({2, 3}, 28).detach(), input({3, 2}, 29)};
                      }});

// ---- mm, bmm ------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"mm", "[2,3] x [3,4]", [](const V& in) { return mm(in[0], in[1]); },
                      [] {
                        return V{input({2, 3}, 30), input({3, 4}, 31)};
                      }});
EMBER_GRADCHECK_CASE({"mm", "transposed operands",
                      [](const V& in) { return mm(in[0].t(), in[1].t()); },
                      [] {
                        return V{input({3, 2}, 32), input({2, 3}, 33)};
                      }});
EMBER_GRADCHECK_CASE({"bmm", "[2,2,3] x [2,3,2]", [](const V& in) { return bmm(in[0], in[1]); },
                      [] {
                        return V{input({2, 2, 3}, 34), input({2, 3, 2}, 35)};
                      }});
EMBER_GRADCHECK_CASE({"bmm", "transposed operands",
                      [](const V& in) { return bmm(in[0].transpose(1, 2), in[1].transpose(0, 1)); },
                      [] {
                        return V{input({2, 3, 2}, 36), input({3, 2, 2}, 37)};
                      }});

// ---- softmax, log_softmax -----------------------------------------------------------------
// Every dim of a [2, 3, 4] input, positive and negative, plus 1-d, 0-d and non-contiguous.
#define EMBER_SOFTMAX_DIM_CASES(op, seed)                                                 \
  EMBER_GRADCHECK_CASE({#op, "3-d, dim 0", [](const V& in) { return op(in[0], 0); },      \
                        [] {                                                              \
                          return V{input({2, 3, 4}, seed)};                               \
                        }});                                                              \
  EMBER_GRADCHECK_CASE({#op, "3-d, dim 1", [](const V& in) { return op(in[0], 1); },      \
                        [] {                                                              \
                          return V{input({2, 3, 4}, seed + 1)};                           \
                        }});                                                              \
  EMBER_GRADCHECK_CASE({#op, "3-d, dim 2", [](const V& in) { return op(in[0], 2); },      \
                        [] {                                                              \
                          return V{input({2, 3, 4}, seed + 2)};                           \
                        }});                                                              \
  EMBER_GRADCHECK_CASE({#op, "3-d, dim -1", [](const V& in) { return op(in[0], -1); },    \
                        [] {                                                              \
                          return V{input({2, 3, 4}, seed + 3)};                           \
                        }});                                                              \
  EMBER_GRADCHECK_CASE({#op, "3-d, dim -2", [](const V& in) { return op(in[0], -2); },    \
                        [] {                                                              \
                          return V{input({2, 3, 4}, seed + 4)};                           \
                        }});                                                              \
  EMBER_GRADCHECK_CASE({#op, "3-d, dim -3", [](const V& in) { return op(in[0], -3); },    \
                        [] {                                                              \
                          return V{input({2, 3, 4}, seed + 5)};                           \
                        }});                                                              \
  EMBER_GRADCHECK_CASE({#op, "1-d, wide range", [](const V& in) { return op(in[0], 0); }, \
                        [] { return V{input({5}, seed + 6, -3.0, 3.0)}; }});              \
  EMBER_GRADCHECK_CASE({#op, "0-d", [](const V& in) { return op(in[0], 0); },             \
                        [] { return V{input({}, seed + 7)}; }});                          \
  EMBER_GRADCHECK_CASE({#op, "transposed 3-d, dim 1",                                     \
                        [](const V& in) { return op(in[0].transpose(0, 2), 1); },         \
                        [] {                                                              \
                          return V{input({4, 3, 2}, seed + 8)};                           \
                        }});                                                              \
  EMBER_GRADCHECK_CASE({#op, "of a matmul, dim -1",                                       \
                        [](const V& in) { return op(matmul(in[0], in[1]), -1); },         \
                        [] {                                                              \
                          return V{input({2, 3}, seed + 9), input({3, 4}, seed + 10)};    \
                        }})

EMBER_SOFTMAX_DIM_CASES(softmax, 40);
EMBER_SOFTMAX_DIM_CASES(log_softmax, 60);
#undef EMBER_SOFTMAX_DIM_CASES

// ---- value tests --------------------------------------------------------------------------
/** A float64 tensor's elements in row-major order. */
std::vector<double> values(const Tensor& t) {
  const Tensor c = t.to(DType::Float64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

TEST(LinalgGrad, BroadcastBatchOperandGetsTheSumOverTheBatch) {
  // a [2, 3] is broadcast over b's batch of 4: dA = sum over the batch of dC B^T.
  Tensor a = input({2, 3}, 101), b = input({4, 3, 2}, 102), dc = input({4, 2, 2}, 103).detach();
  matmul(a, b).backward(dc);
  ASSERT_EQ(a.grad().sizes(), Shape({2, 3}));
  ASSERT_EQ(b.grad().sizes(), Shape({4, 3, 2}));
  const std::vector<double> av = values(a), bv = values(b), gv = values(dc);
  const std::vector<double> ga = values(a.grad()), gb = values(b.grad());
  for (int i = 0; i < 2; ++i) {
    for (int k = 0; k < 3; ++k) {
      double ref = 0;
      for (int n = 0; n < 4; ++n) {
        for (int j = 0; j < 2; ++j) ref += gv[(n * 2 + i) * 2 + j] * bv[(n * 3 + k) * 2 + j];
      }
      EXPECT_NEAR(ga[i * 3 + k], ref, 1e-12) << i << "," << k;
    }
  }
  for (int n = 0; n < 4; ++n) {
    for (int k = 0; k < 3; ++k) {
      for (int j = 0; j < 2; ++j) {
        double ref = 0;
        for (int i = 0; i < 2; ++i) ref += av[i * 3 + k] * gv[(n * 2 + i) * 2 + j];
        EXPECT_NEAR(gb[(n * 3 + k) * 2 + j], ref, 1e-12) << n << "," << k << "," << j;
      }
    }
  }
}

TEST(LinalgGrad, VectorOperandsGetVectorGradients) {
  Tensor a = tensor({1.0, 2.0, 3.0}, DType::Float64).requires_grad_(true);
  Tensor b = tensor({4.0, 5.0, 6.0}, DType::Float64).requires_grad_(true);
  Tensor y = matmul(a, b);
  EXPECT_EQ(y.dim(), 0);
  y.backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{1, 2, 3}));
}

// matmul takes one dtype (Note [Ops that take one dtype]); converting one input first still
// gives each input a gradient of its own dtype.
TEST(LinalgGrad, MixedDtypeMatmulGivesEachInputItsOwnDtype) {
  Tensor a = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, DType::Float32).requires_grad_(true);
  Tensor b = tensor({{1.0, -1.0}, {0.5, 2.0}, {-2.0, 1.0}}, DType::Float64).requires_grad_(true);
  EXPECT_THROW(matmul(a, b), TypeError);
  Tensor y = matmul(a.to(DType::Float64), b);
  EXPECT_EQ(y.dtype(), DType::Float64);
  sum(y).backward();
  EXPECT_EQ(a.grad().dtype(), DType::Float32);
  EXPECT_EQ(b.grad().dtype(), DType::Float64);
  // d sum(AB)/dA[i,k] = sum_j B[k,j]; d sum(AB)/dB[k,j] = sum_i A[i,k].
  EXPECT_EQ(values(a.grad()), (std::vector<double>{0, 2.5, -1, 0, 2.5, -1}));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{5, 5, 7, 7, 9, 9}));
}

TEST(LinalgGrad, EmptyInnerDimGivesEmptyGradients) {
  Tensor a = zeros({2, 0}, DType::Float64).requires_grad_(true);
  Tensor b = zeros({0, 3}, DType::Float64).requires_grad_(true);
  Tensor w = input({2, 3}, 104).detach();
  sum(mul(matmul(a, b), w)).backward();
  EXPECT_EQ(a.grad().sizes(), Shape({2, 0}));
  EXPECT_EQ(b.grad().sizes(), Shape({0, 3}));
}

TEST(LinalgGrad, ProductsNameTheirNodes) {
  Tensor a = input({2, 2, 2}, 105), b = input({2, 2, 2}, 106);
  EXPECT_EQ(matmul(a, b).grad_fn()->name(), "MatmulBackward");
  EXPECT_EQ(bmm(a, b).grad_fn()->name(), "BmmBackward");
  EXPECT_EQ(mm(a.select(0, 0), b.select(0, 1)).grad_fn()->name(), "MmBackward");
}

TEST(LinalgGrad, SecondDerivativeOfAQuadraticForm) {
  // f(x) = x^T A x: grad = (A + A^T) x, and the gradient of sum(grad) w.r.t. x is
  // (A + A^T)^T 1, the column sums of A + A^T = [[2, 5], [5, 8]].
  Tensor amat = tensor({{1.0, 2.0}, {3.0, 4.0}}, DType::Float64);
  Tensor x = tensor({0.5, -1.0}, DType::Float64).requires_grad_(true);
  Tensor f = matmul(x, matmul(amat, x));
  Tensor g = autograd::grad({f}, {x}, {}, {}, /*create_graph=*/true)[0];
  EXPECT_EQ(values(g), (std::vector<double>{2.0 * 0.5 + 5.0 * -1.0, 5.0 * 0.5 + 8.0 * -1.0}));
  Tensor h = autograd::grad({sum(g)}, {x})[0];
  EXPECT_EQ(values(h), (std::vector<double>{7.0, 13.0}));
}

TEST(SoftmaxGrad, MatchesTheJacobianOfAReferenceLoop) {
  const std::vector<double> xv = {1.0, 2.0, 0.5, -1.0};
  const std::vector<double> dy = {0.3, -1.0, 2.0, 0.5};
  double z = 0;
  for (double v : xv) z += std::exp(v);
  std::vector<double> y;
  for (double v : xv) y.push_back(std::exp(v) / z);
  Tensor x = tensor({1.0, 2.0, 0.5, -1.0}, DType::Float64).requires_grad_(true);
  Tensor g = tensor({0.3, -1.0, 2.0, 0.5}, DType::Float64);
  softmax(x, 0).backward(g);
  std::vector<double> got = values(x.grad());
  x.mutable_grad() = Tensor();
  log_softmax(x, -1).backward(g);
  std::vector<double> got_log = values(x.grad());
  double sum_dy = 0;
  for (double v : dy) sum_dy += v;
  for (int i = 0; i < 4; ++i) {
    double ref = 0, ref_log = 0;  // sum_j dy_j dy_j/dx_i
    for (int j = 0; j < 4; ++j) {
      ref += dy[j] * y[j] * ((i == j) - y[i]);
      ref_log += dy[j] * ((i == j) - y[i]);
    }
    EXPECT_NEAR(got[i], ref, 1e-12) << i;
    EXPECT_NEAR(got_log[i], ref_log, 1e-12) << i;
    EXPECT_NEAR(ref_log, dy[i] - y[i] * sum_dy, 1e-12) << i;
  }
}

TEST(SoftmaxGrad, SavesOnlyItsOutput) {
  // The input may change after the forward (only y is saved); the output may not.
  Tensor x = input({2, 3}, 107);
  Tensor h = mul(x, 1.0);
  Tensor y = softmax(h, 1);
  add_(h, 1.0);
  sum(mul(y, input({2, 3}, 108).detach())).backward();
  EXPECT_EQ(x.grad().sizes(), Shape({2, 3}));

  Tensor y2 = log_softmax(mul(x, 1.0), 0);
  add_(y2, 1.0);
  std::string msg;
  try {
    sum(y2).backward();
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("modified by an inplace operation"), std::string::npos) << msg;
  EXPECT_NE(msg.find("LogSoftmaxBackward"), std::string::npos) << msg;
}

TEST(SoftmaxGrad, IntegerInputRecordsNothing) {
  Tensor y = softmax(tensor({1, 2, 3}), 0);
  EXPECT_EQ(y.dtype(), DType::Float32);
  EXPECT_FALSE(y.requires_grad());
}

// ---- einsum -------------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"einsum", "batched attention scores",
                      [](const V& in) {
                        return einsum("bhqd,bhkd->bhqk", {in[0], in[1]});
                      },
                      [] {
                        return V{input({2, 2, 3, 4}, 170), input({2, 2, 5, 4}, 171)};
                      }});
EMBER_GRADCHECK_CASE({"einsum", "three operands, a trace and an ellipsis",
                      [](const V& in) {
                        return einsum("...ij,jk,kk->...i", {in[0], in[1], in[2]});
                      },
                      [] {
                        return V{input({2, 3, 4}, 172), input({4, 2}, 173), input({2, 2}, 174)};
                      }});

TEST(Einsum, MatchesExplicitLoops) {
  const Tensor a = input({2, 3, 4}, 175).detach(), b = input({4, 5}, 176).detach();
  // "bij,jk->bik" is a batched matmul; implicit output of "bij,jk" is "bik" too.
  const Tensor want = matmul(a, b);
  const std::vector<double> w = values(want);
  for (const char* eq : {"bij,jk->bik", "bij,jk"}) {
    const std::vector<double> got = values(einsum(eq, {a, b}));
    ASSERT_EQ(got.size(), w.size()) << eq;
    for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(got[i], w[i], 1e-12) << eq;
  }
  // Transpose, trace, diagonal, outer product, full contraction.
  const Tensor m = input({3, 3}, 177).detach();
  const std::vector<double> mv = values(m);
  EXPECT_EQ(values(einsum("ij->ji", {m})), values(m.transpose(0, 1).contiguous()));
  EXPECT_NEAR(values(einsum("ii", {m}))[0], mv[0] + mv[4] + mv[8], 1e-12);
  EXPECT_EQ(values(einsum("ii->i", {m})), (std::vector<double>{mv[0], mv[4], mv[8]}));
  const Tensor u = tensor({1.0, 2.0}, DType::Float64), v = tensor({3.0, 4.0, 5.0}, DType::Float64);
  EXPECT_EQ(values(einsum("i,j->ij", {u, v})), (std::vector<double>{3, 4, 5, 6, 8, 10}));
  EXPECT_EQ(values(einsum("i,i->", {u, u}))[0], 5.0);
  EXPECT_EQ(values(einsum("ij->", {m}))[0], values(sum(m))[0]);
  // Implicit output sorts upper case first: "Ba" -> "Ba", "aB" -> "Ba" (a transpose).
  const Tensor r = input({2, 3}, 178).detach();
  EXPECT_EQ(values(einsum("aB", {r})), values(r.transpose(0, 1).contiguous()));
  // Errors name the problem.
  EXPECT_THROW(einsum("ij,jk->ik", {a, b}), Error);  // a is 3-d
  EXPECT_THROW(einsum("ij,jk->ik", {m}), Error);     // one tensor for two terms
  EXPECT_THROW(einsum("ij->k", {m}), Error);         // k is in no operand
  EXPECT_THROW(einsum("ij->ii", {m}), Error);        // repeated output label
  EXPECT_THROW(einsum("i1->i", {u}), Error);         // not a letter
  EXPECT_THROW(einsum("ij,jk->ik", {m, b}), Error);  // 3 against 4
}

// ---- cdist -------------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"cdist", "p 2, batched", [](const V& in) { return cdist(in[0], in[1]); },
                      [] {
                        return V{input({2, 3, 4}, 190), input({2, 2, 4}, 191)};
                      }});
EMBER_GRADCHECK_CASE({"cdist", "p 1", [](const V& in) { return cdist(in[0], in[1], 1.0); },
                      [] {
                        return V{input({3, 2}, 192), input({4, 2}, 193)};
                      }});
EMBER_GRADCHECK_CASE({"cdist", "p inf",
                      [](const V& in) {
                        return cdist(in[0], in[1], std::numeric_limits<double>::infinity());
                      },
                      [] {
                        return V{input({3, 2}, 194), input({2, 2}, 195)};
                      }});
EMBER_GRADCHECK_CASE({"cdist", "p 3, batch broadcast",
                      [](const V& in) { return cdist(in[0], in[1], 3.0); },
                      [] {
                        return V{input({1, 3, 2}, 196), input({2, 2, 2}, 197)};
                      }});

// ---- the add*-products ------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"addmm", "broadcast input, beta 0.5, alpha 2",
                      [](const V& in) { return addmm(in[0], in[1], in[2], 0.5, 2.0); },
                      [] {
                        return V{input({4}, 710), input({3, 2}, 711), input({2, 4}, 712)};
                      }});
EMBER_GRADCHECK_CASE({"baddbmm", "beta 2",
                      [](const V& in) { return baddbmm(in[0], in[1], in[2], 2.0); },
                      [] {
                        return V{input({3, 1}, 713), input({2, 3, 2}, 714), input({2, 2, 1}, 715)};
                      }});
EMBER_GRADCHECK_CASE({"addbmm", "alpha -1",
                      [](const V& in) { return addbmm(in[0], in[1], in[2], 1, -1.0); },
                      [] {
                        return V{input({2, 3}, 716), input({3, 2, 2}, 717), input({3, 2, 3}, 718)};
                      }});
EMBER_GRADCHECK_CASE({"addmv", "beta 0", [](const V& in) { return addmv(in[0], in[1], in[2], 0); },
                      [] {
                        return V{input({3}, 719), input({3, 2}, 720), input({2}, 721)};
                      }});
EMBER_GRADCHECK_CASE({"addr", "beta 3, alpha 0.5",
                      [](const V& in) { return addr(in[0], in[1], in[2], 3.0, 0.5); },
                      [] {
                        return V{input({3, 2}, 722), input({3}, 723), input({2}, 724)};
                      }});

TEST(AddProducts, MatchLoopsAndAZeroScaleDropsItsTermWithNaN) {
  const Tensor in = tensor({{1.0, 2.0}, {3.0, 4.0}}, DType::Float64);
  const Tensor m = tensor({{1.0, 2.0}, {0.0, -1.0}}, DType::Float64);
  const Tensor v = tensor({3.0, 5.0}, DType::Float64);
  // 2 * in + 3 * m @ m = 2 * in + 3 * [[1, 0], [0, 1]].
  EXPECT_EQ(values(addmm(in, m, m, 2, 3)), (std::vector<double>{5, 4, 6, 11}));
  EXPECT_EQ(values(addmv(v, m, v, 1, -1)), (std::vector<double>{-10, 10}));
  EXPECT_EQ(values(addr(in, v, v, 0, 1)), (std::vector<double>{9, 15, 15, 25}));
  const Tensor b = stack({m, m});
  EXPECT_EQ(values(addbmm(in, b, b, 1, 1)), (std::vector<double>{3, 2, 3, 6}));
  EXPECT_EQ(values(baddbmm(in, b, b, 1, 1)), (std::vector<double>{2, 2, 3, 5, 2, 2, 3, 5}));
  // beta 0 never reads input; alpha 0 never reads the product; the gradient there is zero.
  Tensor nan = full({2, 2}, std::nan(""), DType::Float64).requires_grad_(true);
  const Tensor r = addmm(nan, m, m, 0, 1);
  EXPECT_EQ(values(r), (std::vector<double>{1, 0, 0, 1}));
  sum(r).backward();
  EXPECT_EQ(values(nan.grad()), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(values(addmm(in, mul(m, std::nan("")), m, 1, 0)), values(in));
}

TEST(AddProducts, RejectShapesAndDtypesPyTorchRejects) {
  const Tensor m = zeros({2, 3}), n = zeros({3, 4});
  EXPECT_THROW(addmm(zeros({5, 4}), m, n), ValueError);           // input does not broadcast
  EXPECT_THROW(addmm(zeros({2, 2, 4}), m, n), ValueError);        // input has more dims
  EXPECT_THROW(addmm(zeros({2, 4}), zeros({3}), n), ValueError);  // mat1 is 1-d
  EXPECT_THROW(addmm(zeros({2, 4}, DType::Float64), m, n), TypeError);
  EXPECT_THROW(addmv(zeros({2}), m, zeros({4})), ValueError);
  EXPECT_THROW(addr(zeros({2, 3}), zeros({2, 1}), zeros({3})), ValueError);
  EXPECT_THROW(baddbmm(zeros({3, 4}), zeros({3, 5}), zeros({2, 5, 4})), ValueError);
  EXPECT_THROW(baddbmm(zeros({3, 4}), zeros({2, 3, 5}), zeros({3, 5, 4})), ValueError);
  EXPECT_THROW(addbmm(zeros({2, 3, 4}), zeros({2, 3, 5}), zeros({2, 5, 4})), ValueError);
}

TEST(Cdist, MatchesLoopsAndHasNoNaNGradientAtZeroDistance) {
  const Tensor a = tensor({{0.0, 0.0}, {3.0, 4.0}}, DType::Float64);
  const Tensor b = tensor({{0.0, 0.0}, {1.0, 1.0}, {-3.0, 4.0}}, DType::Float64);
  EXPECT_EQ(values(cdist(a, b)),
            (std::vector<double>{0, std::sqrt(2.0), 5, 5, std::sqrt(13.0), 6}));
  EXPECT_EQ(values(cdist(a, b, 1.0)), (std::vector<double>{0, 2, 7, 7, 5, 6}));
  EXPECT_EQ(values(cdist(a, b, std::numeric_limits<double>::infinity())),
            (std::vector<double>{0, 1, 4, 4, 3, 6}));
  EXPECT_EQ(values(cdist(a, b, 0.0)), (std::vector<double>{0, 2, 2, 2, 2, 1}));
  Tensor x = a.clone().requires_grad_(true);
  sum(cdist(x, b)).backward();
  for (double g : values(x.grad())) EXPECT_FALSE(std::isnan(g));
  EXPECT_EQ(cdist(zeros({2, 0}), zeros({3, 0})).sizes(), (Shape{2, 3}));
}

}  // namespace
}  // namespace ember::testing
