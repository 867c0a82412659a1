// Gradients of torch.linalg (core/ops/linalg_decomp.cpp): gradcheck cases, first and second
// order, for every differentiable linalg op, batched and not. Symmetric inputs are made inside
// the case (A + A^T, A A^T + n I) since eigh and cholesky read one triangle; cases of eigh and
// svd check only what does not depend on the signs of the vectors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/core/autograd/gradcheck_cases.h"

namespace ember::testing {
namespace {

using V = std::vector<Tensor>;

Tensor mT(const Tensor& t) {
  return t.transpose(-2, -1);
}

/** A + A^T. */
Tensor sym(const Tensor& a) {
  return add(a, mT(a));
}

/** A A^T + n I: symmetric positive-definite. */
Tensor spd(const Tensor& a) {
  const int64_t n = a.size(-1);
  return add(matmul(a, mT(a)), on(a, mul(eye(n, n, DType::Float64), static_cast<double>(n))));
}

/** A + 3 I, comfortably invertible for entries in [-1, 1). */
Tensor well_conditioned(const Tensor& a) {
  const int64_t n = a.size(-1);
  return add(a, on(a, mul(eye(n, n, DType::Float64), 3.0)));
}

// ---- inv, det, slogdet, solve ------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"linalg_inv", "3x3", [](const V& in) { return linalg::inv(in[0]); },
                      [] {
                        return V{input({3, 3}, 400)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_inv", "batch [2, 2] of 2x2 through well_conditioned",
                      [](const V& in) { return linalg::inv(well_conditioned(in[0])); },
                      [] {
                        return V{input({2, 2, 2, 2}, 401)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_det", "batch of 3x3", [](const V& in) { return linalg::det(in[0]); },
                      [] {
                        return V{input({2, 3, 3}, 402)};
                      }});
// A singular matrix takes the SVD form of the gradient (Note [Backward of det]). Its last row is
// in[0]'s scaled by in[1] = 0, so det is exactly 0 and its derivative along in[1] is the
// determinant with that row unscaled, which only the adjugate (through the SVD) gives.
EMBER_GRADCHECK_CASE(
    {"linalg_det", "singular (a zero row, rank 2 of 3)",
     [](const V& in) {
       const Tensor last = mul(in[0].narrow(0, 2, 1), in[1]);
       return linalg::det(cat({in[0].narrow(0, 0, 2), last}, 0));
     },
     [] {
       return V{input({3, 3}, 403), zeros({1}, DType::Float64).requires_grad_(true)};
     },
     /*second_order=*/false});
EMBER_GRADCHECK_CASE({"linalg_slogdet", "log|det| of a batch",
                      [](const V& in) { return std::get<1>(linalg::slogdet(in[0])); },
                      [] {
                        return V{input({2, 3, 3}, 404)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_solve", "matrix right-hand side",
                      [](const V& in) { return linalg::solve(well_conditioned(in[0]), in[1]); },
                      [] {
                        return V{input({3, 3}, 405), input({3, 2}, 406)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_solve", "batch of vectors (B has A's shape without the last dim)",
                      [](const V& in) { return linalg::solve(well_conditioned(in[0]), in[1]); },
                      [] {
                        return V{input({2, 3, 3}, 407), input({2, 3}, 408)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_solve", "A broadcast over B's batch",
                      [](const V& in) { return linalg::solve(well_conditioned(in[0]), in[1]); },
                      [] {
                        return V{input({3, 3}, 409), input({2, 3, 2}, 410)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_solve", "left=False (X A = B)",
                      [](const V& in) {
                        return linalg::solve(well_conditioned(in[0]), in[1], /*left=*/false);
                      },
                      [] {
                        return V{input({3, 3}, 411), input({2, 3}, 412)};
                      }});

// ---- cholesky, qr -----------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"linalg_cholesky", "lower, batch",
                      [](const V& in) { return linalg::cholesky(spd(in[0])); },
                      [] {
                        return V{input({2, 3, 3}, 413)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_cholesky", "upper",
                      [](const V& in) { return linalg::cholesky(spd(in[0]), /*upper=*/true); },
                      [] {
                        return V{input({3, 3}, 414)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_qr", "tall: Q and R",
                      [](const V& in) {
                        auto [q, r] = linalg::qr(in[0]);
                        return cat({q.flatten(), r.flatten()}, 0);
                      },
                      [] {
                        return V{input({4, 3}, 415)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_qr", "wide, batch: Q and R",
                      [](const V& in) {
                        auto [q, r] = linalg::qr(in[0]);
                        return cat({q.flatten(), r.flatten()}, 0);
                      },
                      [] {
                        return V{input({2, 2, 4}, 416)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_qr", "square, mode complete: R",
                      [](const V& in) { return std::get<1>(linalg::qr(in[0], "complete")); },
                      [] {
                        return V{input({3, 3}, 417)};
                      }});

// ---- eigh, svd --------------------------------------------------------------------------------
// The squares of the eigenvectors' entries do not depend on their signs.
EMBER_GRADCHECK_CASE({"linalg_eigh", "eigenvalues and squared eigenvectors, batch",
                      [](const V& in) {
                        auto [w, v] = linalg::eigh(sym(in[0]));
                        return cat({w.flatten(), mul(v, v).flatten()}, 0);
                      },
                      [] {
                        return V{input({2, 3, 3}, 418)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_eigh", "upper triangle",
                      [](const V& in) {
                        auto [w, v] = linalg::eigh(sym(in[0]), "U");
                        return cat({w, mul(v, v).flatten()}, 0);
                      },
                      [] {
                        return V{input({3, 3}, 419)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_eigvalsh", "batch",
                      [](const V& in) { return linalg::eigvalsh(sym(in[0])); },
                      [] {
                        return V{input({2, 4, 4}, 420)};
                      }});
// u_i v_i^T is the same whichever sign the pair takes.
Tensor svd_invariants(const Tensor& a, bool full) {
  auto [u, s, vh] = linalg::svd(a, full);
  const int64_t k = s.size(-1);
  std::vector<Tensor> parts{s.flatten()};
  for (int64_t i = 0; i < k; ++i) {
    parts.push_back(matmul(u.narrow(-1, i, 1), vh.narrow(-2, i, 1)).flatten());
  }
  return cat(parts, 0);
}
EMBER_GRADCHECK_CASE({"linalg_svd", "tall, reduced",
                      [](const V& in) { return svd_invariants(in[0], false); },
                      [] {
                        return V{input({4, 3}, 421)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_svd", "wide, full_matrices, batch",
                      [](const V& in) { return svd_invariants(in[0], true); },
                      [] {
                        return V{input({2, 2, 3}, 422)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_svd", "square: U S Vh",
                      [](const V& in) {
                        auto [u, s, vh] = linalg::svd(in[0], false);
                        return matmul(mul(u, s.unsqueeze(-2)), vh);
                      },
                      [] {
                        return V{input({3, 3}, 423)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_svdvals", "wide batch",
                      [](const V& in) { return linalg::svdvals(in[0]); },
                      [] {
                        return V{input({2, 3, 5}, 424)};
                      }});

// ---- pinv, lstsq ------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"linalg_pinv", "tall", [](const V& in) { return linalg::pinv(in[0]); },
                      [] {
                        return V{input({4, 3}, 425)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_pinv", "hermitian",
                      [](const V& in) {
                        return linalg::pinv(sym(in[0]), {}, {}, /*hermitian=*/true);
                      },
                      [] {
                        return V{input({3, 3}, 426)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_lstsq", "overdetermined, batch",
                      [](const V& in) { return std::get<0>(linalg::lstsq(in[0], in[1])); },
                      [] {
                        return V{input({2, 5, 3}, 427), input({2, 5, 2}, 428)};
                      }});

// ---- norms ------------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"linalg_vector_norm", "ord 3 over dim 1",
                      [](const V& in) { return linalg::vector_norm(in[0], 3.0, {1}); },
                      [] {
                        return V{input({2, 4}, 429)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_matrix_norm", "nuclear, batch",
                      [](const V& in) { return linalg::matrix_norm(in[0], "nuc"); },
                      [] {
                        return V{input({2, 3, 3}, 430)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_matrix_norm", "ord 2 over dims (0, 2)",
                      [](const V& in) {
                        return linalg::matrix_norm(in[0], 2.0, {0, 2});
                      },
                      [] {
                        return V{input({3, 2, 4}, 431)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_matrix_norm", "ord -inf",
                      [](const V& in) {
                        return linalg::matrix_norm(in[0], -std::numeric_limits<double>::infinity());
                      },
                      [] {
                        return V{input({3, 4}, 432)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_norm", "flattened 2-norm",
                      [](const V& in) { return linalg::norm(in[0]); },
                      [] {
                        return V{input({2, 3}, 433)};
                      }});
EMBER_GRADCHECK_CASE({"linalg_norm", "ord 1 of a matrix",
                      [](const V& in) { return linalg::norm(in[0], 1.0); },
                      [] {
                        return V{input({3, 3}, 434)};
                      }});

// ---- errors of the backward -------------------------------------------------------------------
TEST(LinalgGrad, QrModeRAndCompleteTallHaveNoGradient) {
  const Tensor a = input({4, 3}, 435);
  EXPECT_THROW(sum(std::get<1>(linalg::qr(a, "r"))).backward(), NotImplementedError);
  EXPECT_THROW(sum(std::get<1>(linalg::qr(a, "complete"))).backward(), NotImplementedError);
  sum(std::get<1>(linalg::qr(a, "reduced"))).backward();
  EXPECT_TRUE(a.grad().defined());
}

TEST(LinalgGrad, InvOfASingularMatrixInBackwardIsALinAlgError) {
  // slogdet's backward needs A^-1: a singular A fails there, naming the op.
  const Tensor a = zeros({2, 2}, DType::Float64).requires_grad_(true);
  try {
    std::get<1>(linalg::slogdet(a)).backward();
    FAIL() << "expected a LinAlgError";
  } catch (const LinAlgError& e) {
    EXPECT_NE(std::string(e.what()).find("[linalg.inv]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember::testing
