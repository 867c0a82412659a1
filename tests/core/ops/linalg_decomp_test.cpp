// torch.linalg (core/ops/linalg_decomp.cpp) on every backend that has the factorizations (cpu
// and reference), both dtypes: hand-computed values, the defining identities of each
// factorization (A = P L U, A = Q R with orthonormal Q, A V = V diag(w), A = U diag(S) Vh),
// LAPACK's sign convention for R, empty and batched inputs, and the LinAlgError of matrices
// that cannot be factored, naming the batch element.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <ember/ember.h>

namespace ember {
namespace {

std::vector<double> values(const Tensor& t) {
  const Tensor d = t.to(Device::cpu()).to(DType::Float64).contiguous();
  const double* p = d.numel() > 0 ? d.data_ptr<double>() : nullptr;
  return std::vector<double>(p, p + d.numel());
}

Tensor mT(const Tensor& t) {
  return t.transpose(-2, -1);
}

/** max |a - b| over all elements. */
double max_diff(const Tensor& a, const Tensor& b) {
  return max(abs(sub(a.to(DType::Float64), b.to(DType::Float64)))).to(Device::cpu()).item();
}

struct Param {
  const char* device;
  DType dtype;
};

class Linalg : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override { init(); }
  Device dev() const { return Device(GetParam().device); }
  DType dt() const { return GetParam().dtype; }
  double tol() const { return dt() == DType::Float32 ? 1e-4 : 1e-10; }
  /** A tensor of `v` with `sizes` on the device under test. */
  Tensor t(std::vector<double> v, IntList sizes) const {
    const Tensor h = empty({static_cast<int64_t>(v.size())}, DType::Float64);
    std::copy(v.begin(), v.end(), h.data_ptr<double>());
    return h.reshape(sizes).to(dt()).to(dev());
  }
  Tensor randn_(IntList sizes, uint64_t seed) const {
    Generator gen(seed);
    return randn(sizes, DType::Float64, &gen).to(dt()).to(dev());
  }
  Tensor eye_(int64_t n) const { return eye(n, n, {dt(), dev()}); }
};

TEST_P(Linalg, DetInvSolveOfHandComputedMatrices) {
  const Tensor a = t({4, 7, 2, 6}, {2, 2});  // det 10, inverse [[6, -7], [-2, 4]] / 10
  EXPECT_NEAR(linalg::det(a).item(), 10.0, tol());
  EXPECT_NEAR(det(a).item(), 10.0, tol());
  const std::vector<double> inv = values(linalg::inv(a));
  const std::vector<double> want{0.6, -0.7, -0.2, 0.4};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(inv[i], want[i], tol());
  EXPECT_LT(max_diff(inverse(a), linalg::inv(a)), tol());
  // 4x + 7y = 1, 2x + 6y = 2: x = -0.8, y = 0.6.
  const std::vector<double> x = values(linalg::solve(a, t({1, 2}, {2})));
  EXPECT_NEAR(x[0], -0.8, tol());
  EXPECT_NEAR(x[1], 0.6, tol());
  // A row swap is needed (the first pivot is 0): det [[0, 1], [1, 0]] = -1.
  EXPECT_NEAR(linalg::det(t({0, 1, 1, 0}, {2, 2})).item(), -1.0, tol());
  auto [sign, logabs] = linalg::slogdet(t({0, 2, 3, 0}, {2, 2}));
  EXPECT_EQ(sign.item(), -1.0);
  EXPECT_NEAR(logabs.item(), std::log(6.0), tol());
  // Singular: det 0, slogdet (0, -inf).
  EXPECT_EQ(linalg::det(t({1, 2, 2, 4}, {2, 2})).item(), 0.0);
  auto [s0, l0] = linalg::slogdet(t({1, 2, 2, 4}, {2, 2}));
  EXPECT_EQ(s0.item(), 0.0);
  EXPECT_EQ(l0.item(), -std::numeric_limits<double>::infinity());
}

TEST_P(Linalg, BatchedSolveAndInverseAgreeWithTheIdentity) {
  const Tensor a = add(randn_({2, 3, 4, 4}, 1), mul(eye_(4), 4.0));
  const Tensor b = randn_({3, 4, 2}, 2);  // broadcast over the first batch dim
  const Tensor x = linalg::solve(a, b);
  ASSERT_EQ(x.sizes(), (Shape{2, 3, 4, 2}));
  EXPECT_LT(max_diff(matmul(a, x), b.expand({2, 3, 4, 2})), 10 * tol());
  EXPECT_LT(max_diff(matmul(a, linalg::inv(a)), eye_(4).expand({2, 3, 4, 4})), 10 * tol());
  const Tensor xr = linalg::solve(a, b.transpose(-2, -1).narrow(-2, 0, 1), /*left=*/false);
  EXPECT_LT(max_diff(matmul(xr, a), b.transpose(-2, -1).narrow(-2, 0, 1).expand({2, 3, 1, 4})),
            10 * tol());
  // det of a batch is the product of the eigenvalues of each (through eigh for symmetric).
  const Tensor s = add(matmul(a, mT(a)), eye_(4));
  const Tensor prod_w = prod(linalg::eigvalsh(s), {-1});
  EXPECT_LT(max_diff(div(linalg::det(s), prod_w), ones({2, 3}, {dt(), dev()})), 100 * tol());
}

TEST_P(Linalg, CholeskyOfAHandComputedMatrix) {
  const Tensor a = t({4, 2, 2, 3}, {2, 2});  // L = [[2, 0], [1, sqrt(2)]]
  const std::vector<double> l = values(linalg::cholesky(a));
  EXPECT_NEAR(l[0], 2.0, tol());
  EXPECT_EQ(l[1], 0.0);
  EXPECT_NEAR(l[2], 1.0, tol());
  EXPECT_NEAR(l[3], std::sqrt(2.0), tol());
  const std::vector<double> u = values(linalg::cholesky(a, /*upper=*/true));
  EXPECT_NEAR(u[1], 1.0, tol());
  EXPECT_EQ(u[2], 0.0);
  // Only the lower triangle is read.
  EXPECT_LT(max_diff(linalg::cholesky(t({4, 100, 2, 3}, {2, 2})), linalg::cholesky(a)), tol());
}

TEST_P(Linalg, QrFollowsLapacksSignsAndReconstructs) {
  // One reflection of [3, 4]: beta = -sign(3) * 5, so R = [[-5]] and Q = [[-0.6], [-0.8]].
  auto [q1, r1] = linalg::qr(t({3, 4}, {2, 1}));
  EXPECT_NEAR(r1.item(), -5.0, tol());
  const std::vector<double> qv = values(q1);
  EXPECT_NEAR(qv[0], -0.6, tol());
  EXPECT_NEAR(qv[1], -0.8, tol());
  for (const char* mode : {"reduced", "complete"}) {
    for (Shape shape : {Shape{2, 5, 3}, Shape{2, 3, 5}, Shape{4, 4}}) {
      const Tensor a = randn_(shape, 3);
      auto [q, r] = linalg::qr(a, mode);
      const int64_t m = a.size(-2), n = a.size(-1);
      const int64_t c = std::string(mode) == "complete" ? m : std::min(m, n);
      EXPECT_EQ(q.size(-1), c) << mode;
      EXPECT_EQ(r.size(-2), c) << mode;
      EXPECT_LT(max_diff(matmul(q, r), a), 10 * tol()) << mode << " " << shape_str(shape);
      EXPECT_LT(max_diff(matmul(mT(q), q), eye_(c)), 10 * tol()) << mode;
      EXPECT_LT(max_diff(r, triu(r)), tol()) << mode;
    }
  }
  auto [qe, re] = linalg::qr(randn_({3, 2}, 4), "r");
  EXPECT_EQ(qe.numel(), 0);
  EXPECT_EQ(re.sizes(), (Shape{2, 2}));
}

TEST_P(Linalg, EighAndSvdReconstruct) {
  auto [w2, v2] = linalg::eigh(t({2, 1, 1, 2}, {2, 2}));
  const std::vector<double> w2v = values(w2);
  EXPECT_NEAR(w2v[0], 1.0, tol());
  EXPECT_NEAR(w2v[1], 3.0, tol());
  const Tensor g = randn_({3, 5, 5}, 5);
  const Tensor s = add(g, mT(g));
  for (const char* uplo : {"L", "U"}) {
    auto [w, v] = linalg::eigh(s, uplo);
    EXPECT_LT(max_diff(matmul(s, v), mul(v, w.unsqueeze(-2))), 100 * tol()) << uplo;
    EXPECT_LT(max_diff(matmul(mT(v), v), eye_(5)), 100 * tol()) << uplo;
    const std::vector<double> wv = values(w);
    for (size_t i = 0; i + 1 < wv.size(); ++i) {
      if (i % 5 != 4) {
        EXPECT_LE(wv[i], wv[i + 1]) << "ascending";
      }
    }
  }
  // eigh reads one triangle only: garbage in the other changes nothing.
  const Tensor lower_only = add(tril(s), triu(full({3, 5, 5}, 7.0, {dt(), dev()}), 1));
  EXPECT_LT(max_diff(linalg::eigvalsh(lower_only), linalg::eigvalsh(s)), 100 * tol());
  // svd of diag(3, -2): singular values 3, 2.
  const std::vector<double> sv = values(linalg::svdvals(t({3, 0, 0, -2}, {2, 2})));
  EXPECT_NEAR(sv[0], 3.0, tol());
  EXPECT_NEAR(sv[1], 2.0, tol());
  for (bool full : {false, true}) {
    for (Shape shape : {Shape{2, 6, 4}, Shape{2, 4, 6}, Shape{5, 5}}) {
      const Tensor a = randn_(shape, 6);
      auto [u, sg, vh] = linalg::svd(a, full);
      const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
      EXPECT_EQ(u.size(-1), full ? m : k);
      EXPECT_EQ(vh.size(-2), full ? n : k);
      EXPECT_LT(max_diff(matmul(mT(u), u), eye_(u.size(-1))), 100 * tol());
      EXPECT_LT(max_diff(matmul(vh, mT(vh)), eye_(vh.size(-2))), 100 * tol());
      const Tensor us = mul(u.narrow(-1, 0, k), sg.unsqueeze(-2));
      EXPECT_LT(max_diff(matmul(us, vh.narrow(-2, 0, k)), a), 100 * tol()) << shape_str(shape);
    }
  }
  // A rank-1 matrix: one nonzero singular value, U and Vh still orthonormal.
  const Tensor r1 = matmul(randn_({4, 1}, 7), randn_({1, 3}, 8));
  auto [u, sg, vh] = linalg::svd(r1, true);
  EXPECT_LT(values(sg)[1], 10 * tol());
  EXPECT_LT(max_diff(matmul(mT(u), u), eye_(4)), 100 * tol());
}

TEST_P(Linalg, PinvLstsqAndNorms) {
  const Tensor a = randn_({5, 3}, 9);
  const Tensor p = linalg::pinv(a);
  EXPECT_LT(max_diff(matmul(p, a), eye_(3)), 100 * tol());
  EXPECT_LT(max_diff(matmul(matmul(a, p), a), a), 100 * tol());
  const Tensor s = add(matmul(a, mT(a)), eye_(5));
  EXPECT_LT(max_diff(linalg::pinv(s, {}, {}, /*hermitian=*/true), linalg::inv(s)), 100 * tol());
  // lstsq of a consistent overdetermined system finds the solution; residuals ~ 0.
  const Tensor x0 = randn_({3, 2}, 10);
  auto [x, res, rank, sv] = linalg::lstsq(a, matmul(a, x0), {}, "gelsd");
  EXPECT_LT(max_diff(x, x0), 100 * tol());
  EXPECT_EQ(res.sizes(), (Shape{2}));
  EXPECT_LT(values(res)[0], 100 * tol());
  EXPECT_EQ(rank.item<int64_t>(), 3);
  EXPECT_EQ(sv.numel(), 3);
  auto [xy, resy, ranky, svy] = linalg::lstsq(a, matmul(a, x0));  // gelsy: no singular values
  EXPECT_EQ(svy.numel(), 0);
  EXPECT_EQ(ranky.item<int64_t>(), 3);
  // Norms of [[1, -2], [3, 4]].
  const Tensor m = t({1, -2, 3, 4}, {2, 2});
  EXPECT_NEAR(linalg::matrix_norm(m).item(), std::sqrt(30.0), tol());
  EXPECT_NEAR(linalg::matrix_norm(m, 1.0).item(), 6.0, tol());  // largest column sum
  EXPECT_NEAR(linalg::matrix_norm(m, -1.0).item(), 4.0, tol());
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_NEAR(linalg::matrix_norm(m, inf).item(), 7.0, tol());  // largest row sum
  EXPECT_NEAR(linalg::matrix_norm(m, -inf).item(), 3.0, tol());
  // Singular values of m: sqrt(15 +- sqrt(125)).
  const double s1 = std::sqrt(15 + std::sqrt(125.0)), s2 = std::sqrt(15 - std::sqrt(125.0));
  EXPECT_NEAR(linalg::matrix_norm(m, 2.0).item(), s1, tol());
  EXPECT_NEAR(linalg::matrix_norm(m, -2.0).item(), s2, tol());
  EXPECT_NEAR(linalg::matrix_norm(m, "nuc").item(), s1 + s2, tol());
  EXPECT_NEAR(linalg::norm(m).item(), std::sqrt(30.0), tol());
  EXPECT_NEAR(linalg::vector_norm(m, inf).item(), 4.0, tol());
  EXPECT_NEAR(sum(linalg::vector_norm(m, 1.0, {1})).item(), 10.0, tol());
  EXPECT_EQ(linalg::matrix_norm(m.unsqueeze(0), "fro", {-2, -1}, true).sizes(), (Shape{1, 1, 1}));
}

TEST_P(Linalg, EmptyInputs) {
  EXPECT_EQ(linalg::det(zeros({3, 0, 0}, {dt(), dev()})).sizes(), (Shape{3}));
  EXPECT_EQ(values(linalg::det(zeros({2, 0, 0}, {dt(), dev()}))), (std::vector<double>{1, 1}));
  EXPECT_EQ(linalg::inv(zeros({0, 3, 3}, {dt(), dev()})).sizes(), (Shape{0, 3, 3}));
  EXPECT_EQ(linalg::solve(eye_(2), zeros({2, 0}, {dt(), dev()})).sizes(), (Shape{2, 0}));
  auto [q, r] = linalg::qr(zeros({3, 0}, {dt(), dev()}), "complete");
  EXPECT_EQ(q.sizes(), (Shape{3, 3}));
  EXPECT_EQ(r.sizes(), (Shape{3, 0}));
  EXPECT_EQ(linalg::svdvals(zeros({2, 0, 4}, {dt(), dev()})).sizes(), (Shape{2, 0}));
  EXPECT_EQ(linalg::pinv(zeros({4, 0}, {dt(), dev()})).sizes(), (Shape{0, 4}));
}

TEST_P(Linalg, MatricesThatCannotBeFactoredAreLinAlgErrors) {
  const Tensor batch = stack({eye_(3), t({1, 2, 3, 2, 4, 6, 0, 0, 1}, {3, 3})});
  try {
    linalg::inv(batch);
    FAIL() << "expected a LinAlgError";
  } catch (const LinAlgError& e) {
    EXPECT_EQ(std::string(e.what()),
              "[linalg.inv] (batch element 1) the matrix is singular: U[1, 1] of its LU "
              "factorization is exactly zero (use linalg.pinv or linalg.lstsq for singular "
              "systems)");
    EXPECT_EQ(e.kind(), ErrorKind::Value);
  }
  EXPECT_THROW(linalg::solve(batch, ones({2, 3}, {dt(), dev()})), LinAlgError);
  try {
    linalg::cholesky(t({1, 2, 2, 1}, {2, 2}));  // eigenvalues 3 and -1
    FAIL() << "expected a LinAlgError";
  } catch (const LinAlgError& e) {
    EXPECT_EQ(std::string(e.what()),
              "[linalg.cholesky] the matrix is not positive-definite: its leading minor of order 2 "
              "is not positive");
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(linalg::eigh(t({1, nan, nan, 1}, {2, 2})), LinAlgError);
  EXPECT_THROW(linalg::svd(t({1, 0, 0, std::numeric_limits<double>::infinity()}, {2, 2})),
               LinAlgError);
  // inv of a NaN matrix is NaN, as in PyTorch (nothing singular was seen).
  EXPECT_TRUE(std::isnan(values(linalg::inv(t({nan, 1, 1, 1}, {2, 2})))[0]));
}

/** X with T X = B by substitution in float64 (T n x n triangular, read from its `upper` or lower
 *  triangle, with a unit diagonal if `unit`; B n x k), row-major. */
std::vector<double> substitute(const std::vector<double>& t, const std::vector<double>& b,
                               int64_t n, int64_t k, bool upper, bool unit) {
  std::vector<double> x(b);
  for (int64_t s = 0; s < n; ++s) {
    const int64_t i = upper ? n - 1 - s : s;
    for (int64_t c = 0; c < k; ++c) {
      double v = b[i * k + c];
      for (int64_t j = 0; j < n; ++j) {
        if (j != i && (upper ? j > i : j < i)) v -= t[i * n + j] * x[j * k + c];
      }
      x[i * k + c] = unit ? v : v / t[i * n + i];
    }
  }
  return x;
}

TEST_P(Linalg, TriangularSolvesMatchSubstitution) {
  const int64_t n = 5, k = 3;
  // A well-conditioned matrix whose other triangle is garbage the solve must not read.
  const Tensor a = add(randn_({n, n}, 1), mul(eye_(n), 4.0));
  const Tensor b = randn_({n, k}, 2);
  const std::vector<double> av = values(a), bv = values(b);
  for (bool upper : {false, true}) {
    for (bool unit : {false, true}) {
      const std::vector<double> want = substitute(av, bv, n, k, upper, unit);
      const std::vector<double> got = values(linalg::solve_triangular(a, b, upper, true, unit));
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol()) << i;
      // X A = B is A^T X^T = B^T.
      const Tensor bt = randn_({k, n}, 3);
      const Tensor right = linalg::solve_triangular(a, bt, upper, false, unit);
      const Tensor tri = upper ? triu(a, unit ? 1 : 0) : tril(a, unit ? -1 : 0);
      const Tensor full = unit ? add(tri, eye_(n)) : tri;
      EXPECT_LT(max_diff(matmul(right, full), bt), 10 * tol());
      // triangular_solve: A^T X = B with transpose, and a copy of A.
      auto [x, copy] = triangular_solve(b, a, upper, true, unit);
      EXPECT_LT(max_diff(matmul(mT(full), x), b), 10 * tol());
      EXPECT_EQ(max_diff(copy, a), 0.0);
    }
  }
  // Batch dims broadcast; a zero on the diagonal is a LinAlgError.
  const Tensor batched = linalg::solve_triangular(stack({a, mul(a, 2.0)}), b, false);
  EXPECT_EQ(batched.sizes(), Shape({2, n, k}));
  EXPECT_LT(max_diff(batched.select(0, 1), mul(linalg::solve_triangular(a, b, false), 0.5)),
            10 * tol());
  EXPECT_THROW(linalg::solve_triangular(t({1, 0, 0, 0}, {2, 2}), eye_(2), true), LinAlgError);
}

TEST_P(Linalg, CholeskySolveAndInverseOfAFactor) {
  const int64_t n = 4;
  const Tensor m = randn_({n, n}, 5);
  const Tensor spd = add(matmul(m, mT(m)), mul(eye_(n), 0.5));
  const Tensor l = linalg::cholesky(spd), u = linalg::cholesky(spd, true);
  const Tensor b = randn_({n, 2}, 6);
  const Tensor want = linalg::solve(spd, b);
  EXPECT_LT(max_diff(cholesky_solve(b, l), want), 100 * tol());
  EXPECT_LT(max_diff(cholesky_solve(b, u, true), want), 100 * tol());
  EXPECT_LT(max_diff(cholesky_inverse(l), linalg::inv(spd)), 100 * tol());
  EXPECT_LT(max_diff(cholesky_inverse(u, true), linalg::inv(spd)), 100 * tol());
}

TEST(LinalgComposites, TriangularSolvesAndCholeskySolveDifferentiate) {
  init();
  Generator gen(11);
  const Tensor a = add(randn({3, 3}, DType::Float64, &gen), mul(eye(3, 3, DType::Float64), 3.0))
                       .requires_grad_(true);
  const Tensor b = randn({3, 2}, DType::Float64, &gen).requires_grad_(true);
  for (bool upper : {false, true}) {
    for (bool left : {false, true}) {
      const Tensor rhs = left ? b : mT(b).detach().contiguous().requires_grad_(true);
      const autograd::GradcheckResult r = autograd::gradcheck(
          [upper, left](const std::vector<Tensor>& in) {
            return linalg::solve_triangular(in[0], in[1], upper, left);
          },
          {a, rhs});
      EXPECT_TRUE(r.ok) << r.message;
    }
  }
  // The gradient of A lies in the triangle read.
  sum(linalg::solve_triangular(a, b, true)).backward();
  EXPECT_EQ(values(tril(a.grad(), -1)), std::vector<double>(9, 0.0));
  const Tensor l =
      tril(add(randn({3, 3}, DType::Float64, &gen), mul(eye(3, 3, DType::Float64), 3.0)))
          .requires_grad_(true);
  const autograd::GradcheckResult r = autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return cholesky_solve(in[1], tril(in[0])); }, {l, b});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(LinalgComposites, TensorinvAndTensorsolveReshapeToInvAndSolve) {
  init();
  Generator gen(13);
  const Tensor a = add(randn({6, 6}, DType::Float64, &gen), mul(eye(6, 6, DType::Float64), 4.0));
  const Tensor a4 = a.reshape({2, 3, 6});
  const Tensor ainv = linalg::tensorinv(a4, 2);
  EXPECT_EQ(ainv.sizes(), Shape({6, 2, 3}));
  EXPECT_LT(max_diff(ainv.reshape({6, 6}), linalg::inv(a)), 1e-12);
  const Tensor b = randn({2, 3}, DType::Float64, &gen);
  const Tensor x = linalg::tensorsolve(a.reshape({2, 3, 2, 3}), b);
  EXPECT_EQ(x.sizes(), Shape({2, 3}));
  EXPECT_LT(max_diff(x.reshape({6}), linalg::solve(a, b.reshape({6}))), 1e-12);
  // dims of A moved to the end first.
  const Tensor moved =
      linalg::tensorsolve(a.reshape({2, 3, 2, 3}).permute({2, 3, 0, 1}), b, {0, 1});
  EXPECT_LT(max_diff(moved, x), 1e-12);
  EXPECT_THROW(linalg::tensorinv(a.reshape({4, 9}), 1), ValueError);
  EXPECT_THROW(linalg::tensorsolve(a, randn({5}, DType::Float64, &gen)), ValueError);
}

TEST_P(Linalg, LuFactorUnpackAndSolve) {
  const int64_t n = 4;
  const Tensor a = randn_({2, n, n}, 21);
  auto [packed, piv] = linalg::lu_factor(a);
  EXPECT_EQ(piv.dtype(), DType::Int32);
  EXPECT_EQ(piv.sizes(), Shape({2, n}));
  auto [p, l, u] = lu_unpack(packed, piv);
  EXPECT_LT(max_diff(matmul(matmul(p, l), u), a), 10 * tol());
  EXPECT_EQ(max_diff(tril(u, -1), zeros_like(u)), 0.0);
  EXPECT_EQ(max_diff(diagonal(l, 0, -2, -1), ones({2, n}, {dt(), dev()})), 0.0);
  // P is a permutation: P^T P = I.
  EXPECT_EQ(max_diff(matmul(mT(p), p), eye_(n).expand({2, n, n})), 0.0);
  auto [p2, l2, u2] = linalg::lu(a);
  EXPECT_EQ(max_diff(l2, l), 0.0);
  const Tensor b = randn_({2, n, 3}, 22);
  EXPECT_LT(max_diff(linalg::lu_solve(packed, piv, b), linalg::solve(a, b)), 100 * tol());
  EXPECT_LT(max_diff(linalg::lu_solve(packed, piv, b, true, true), linalg::solve(mT(a), b)),
            100 * tol());
  const Tensor bt = randn_({2, 3, n}, 23);
  EXPECT_LT(max_diff(matmul(linalg::lu_solve(packed, piv, bt, false), a), bt), 100 * tol());
  // A singular matrix: lu_factor refuses, lu_factor_ex reports it in info.
  const Tensor singular = t({1, 2, 2, 4}, {2, 2});
  EXPECT_THROW(linalg::lu_factor(singular), LinAlgError);
  auto [sp, spiv, info] = linalg::lu_factor_ex(singular);
  EXPECT_EQ(info.item<int32_t>(), 2);
  EXPECT_THROW(linalg::lu_factor(a, false), NotImplementedError);
}

TEST(LinalgComposites, LuFactorAndLuSolveDifferentiate) {
  init();
  Generator gen(17);
  const Tensor a = add(randn({3, 3}, DType::Float64, &gen), mul(eye(3, 3, DType::Float64), 2.0))
                       .requires_grad_(true);
  const autograd::GradcheckResult r = autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return std::get<0>(linalg::lu_factor(in[0])); }, {a});
  EXPECT_TRUE(r.ok) << r.message;
  const autograd::GradcheckResult plu = autograd::gradcheck(
      [](const std::vector<Tensor>& in) {
        auto [p, l, u] = linalg::lu(in[0]);
        return add(l, u);
      },
      {a});
  EXPECT_TRUE(plu.ok) << plu.message;
  auto [packed, piv] = linalg::lu_factor(a.detach());
  const Tensor lu_leaf = packed.clone().requires_grad_(true);
  const Tensor b = randn({3, 2}, DType::Float64, &gen).requires_grad_(true);
  for (bool adjoint : {false, true}) {
    const autograd::GradcheckResult s = autograd::gradcheck(
        [piv = piv, adjoint](const std::vector<Tensor>& in) {
          return linalg::lu_solve(in[0], piv, in[1], true, adjoint);
        },
        {lu_leaf, b});
    EXPECT_TRUE(s.ok) << s.message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Backends, Linalg,
    ::testing::Values(Param{"cpu", DType::Float64}, Param{"cpu", DType::Float32},
                      Param{"reference", DType::Float64}, Param{"reference", DType::Float32}),
    [](const ::testing::TestParamInfo<Param>& i) {
      return std::string(i.param.device) + (i.param.dtype == DType::Float32 ? "_f32" : "_f64");
    });

}  // namespace
}  // namespace ember
