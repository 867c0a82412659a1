// Matrix products, einsum, and torch.linalg (ember::linalg): factorizations, solves, norms.
#pragma once

#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "ember/tensor/tensor.h"

namespace ember {

/** Matrix product with NumPy semantics: 1-d operands, broadcast batch dims. */
EMBER_API Tensor matmul(const Tensor& a, const Tensor& b);
/** 2-d matrix product [n, k] x [k, m]. */
EMBER_API Tensor mm(const Tensor& a, const Tensor& b);
/** Batched product [b, n, k] x [b, k, m]. */
EMBER_API Tensor bmm(const Tensor& a, const Tensor& b);
/** Einstein summation (PyTorch's einsum): "ij,jk->ik", "bhqd,bhkd->bhqk", "ii->i", "...ij->...ji";
 *  implicit output (no "->") is the ellipsis then the labels used once, in order. */
EMBER_API Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands);

// The add*-products: beta * input + alpha * product, input broadcast to the product's shape
// (Note [beta and alpha of the add*-products] in core/ops/linalg.cpp: a zero beta or alpha drops
// its term, NaN and inf included).
/** beta * input + alpha * (mat1 @ mat2) for mat1 [n, k], mat2 [k, m] (torch.addmm). */
EMBER_API Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, Scalar beta = 1,
                       Scalar alpha = 1);
/** beta * input + alpha * bmm(batch1, batch2) for batch1 [b, n, k], batch2 [b, k, m]. */
EMBER_API Tensor baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2,
                         Scalar beta = 1, Scalar alpha = 1);
/** beta * input + alpha * sum_b batch1[b] @ batch2[b], an [n, m] result (torch.addbmm). */
EMBER_API Tensor addbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2,
                        Scalar beta = 1, Scalar alpha = 1);
/** beta * input + alpha * (mat @ vec) for mat [n, m], vec [m] (torch.addmv). */
EMBER_API Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta = 1,
                       Scalar alpha = 1);
/** beta * input + alpha * outer(vec1, vec2) for 1-d vec1 [n], vec2 [m] (torch.addr). */
EMBER_API Tensor addr(const Tensor& input, const Tensor& vec1, const Tensor& vec2, Scalar beta = 1,
                      Scalar alpha = 1);

/** In place: input = addmm(input, mat1, mat2, beta, alpha) (apply_inplace's rules). */
EMBER_API Tensor& addmm_(Tensor& input, const Tensor& mat1, const Tensor& mat2, Scalar beta = 1,
                         Scalar alpha = 1);
/** In place: input = baddbmm(input, batch1, batch2, beta, alpha). */
EMBER_API Tensor& baddbmm_(Tensor& input, const Tensor& batch1, const Tensor& batch2,
                           Scalar beta = 1, Scalar alpha = 1);
/** In place: input = addbmm(input, batch1, batch2, beta, alpha). */
EMBER_API Tensor& addbmm_(Tensor& input, const Tensor& batch1, const Tensor& batch2,
                          Scalar beta = 1, Scalar alpha = 1);
/** In place: input = addmv(input, mat, vec, beta, alpha). */
EMBER_API Tensor& addmv_(Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta = 1,
                         Scalar alpha = 1);
/** In place: input = addr(input, vec1, vec2, beta, alpha). */
EMBER_API Tensor& addr_(Tensor& input, const Tensor& vec1, const Tensor& vec2, Scalar beta = 1,
                        Scalar alpha = 1);

/** The p-norm distances between the rows of x1 [..., P, M] and of x2 [..., R, M] as
 *  [..., P, R] (batch dims broadcast); p >= 0, inf included; floating inputs. */
EMBER_API Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2.0);
/** The inner product of two 1-d tensors of one length (torch.dot). */
EMBER_API Tensor dot(const Tensor& a, const Tensor& b);
/** dot(a, b) (torch.vdot; the conjugate of a is a itself for real dtypes). */
EMBER_API Tensor vdot(const Tensor& a, const Tensor& b);
/** The outer product of 1-d a [n] and b [m]: [n, m] (torch.outer). */
EMBER_API Tensor outer(const Tensor& a, const Tensor& b);
/** The product of a matrix [n, m] and a vector [m]: [n] (torch.mv). */
EMBER_API Tensor mv(const Tensor& mat, const Tensor& vec);
/** The sum of a 2-d tensor's diagonal (torch.trace). */
EMBER_API Tensor trace(const Tensor& x);

/** Determinant of a batch of square matrices: torch.det, linalg::det. */
EMBER_API Tensor det(const Tensor& a);
/** Inverse of a batch of square matrices: torch.inverse, linalg::inv. */
EMBER_API Tensor inverse(const Tensor& a);
/** (sign, log|det|) of a batch of square matrices: torch.slogdet, linalg::slogdet. */
EMBER_API std::tuple<Tensor, Tensor> slogdet(const Tensor& a);
/** log(det(a)) of a batch of square matrices: NaN where det < 0, -inf where it is 0. */
EMBER_API Tensor logdet(const Tensor& a);
/** The last two dims swapped (torch.adjoint: the conjugate transpose, for real dtypes a view). */
EMBER_API Tensor adjoint(const Tensor& a);
/** x with each slice along dim whose p-norm exceeds maxnorm scaled down to maxnorm (torch.renorm,
 *  PyTorch's 1e-7 in the divisor included). */
EMBER_API Tensor renorm(const Tensor& x, double p, int64_t dim, double maxnorm);
/** The Vandermonde matrix of 1-d x: columns x^(N-1), ..., x^1, x^0 (x^0 first with increasing),
 *  N = x's length by default (torch.vander; integers and bools give int64). */
EMBER_API Tensor vander(const Tensor& x, std::optional<int64_t> n = {}, bool increasing = false);
/** (P, L, U) from lu_factor's LU [.., m, n] and pivots (torch.lu_unpack): P [m, m], L [m, k]
 *  unit lower, U [k, n] upper, k = min(m, n); P is empty without unpack_pivots, L and U without
 *  unpack_data. */
EMBER_API std::tuple<Tensor, Tensor, Tensor> lu_unpack(const Tensor& lu, const Tensor& pivots,
                                                       bool unpack_data = true,
                                                       bool unpack_pivots = true);
/** (X, A) with op(A) X = b for triangular A (upper or lower; op(A) = A^T with transpose; a unit
 *  diagonal assumed with unitriangular): torch.triangular_solve, A broadcast to the batch. */
EMBER_API std::tuple<Tensor, Tensor> triangular_solve(const Tensor& b, const Tensor& a,
                                                      bool upper = true, bool transpose = false,
                                                      bool unitriangular = false);
/** X with A X = b for A = L L^T (or U^T U with upper) given its Cholesky factor. */
EMBER_API Tensor cholesky_solve(const Tensor& b, const Tensor& factor, bool upper = false);
/** A^-1 for A = L L^T (or U^T U with upper) given its Cholesky factor. */
EMBER_API Tensor cholesky_inverse(const Tensor& factor, bool upper = false);

}  // namespace ember

// Note [torch.linalg in Ember]
// ember::linalg follows torch.linalg: operands are batches of matrices [..., m, n] (leading dims
// are batch dims) of float32 or float64. Six factorizations are ops with kernels (LU with partial
// pivoting and its solve, Cholesky, Householder QR, the symmetric eigendecomposition, the SVD;
// ember/ops.def); everything else is composed of them and public ops in
// core/ops/linalg_decomp.cpp, so every backend with the six gets all of it, gradients included.
// A singular or not positive-definite matrix where the op needs otherwise is a LinAlgError naming
// the batch element, as PyTorch's torch.linalg.LinAlgError.
namespace ember::linalg {

/** Inverse of a batch of square matrices; a singular one is a LinAlgError. */
EMBER_API Tensor inv(const Tensor& a);
/** Determinant of a batch of square matrices (0 for a singular one). */
EMBER_API Tensor det(const Tensor& a);
/** (sign, log|det|): sign is -1, 0 or 1, log|det| is -inf for a singular matrix. */
EMBER_API std::tuple<Tensor, Tensor> slogdet(const Tensor& a);
/** X with A X = B (left) or X A = B; B is a batch of vectors when b.dim() == 1 or b's shape is
 *  a's without the last dim. Batch dims broadcast; a singular A is a LinAlgError. */
EMBER_API Tensor solve(const Tensor& a, const Tensor& b, bool left = true);
/** X with A X = B (left) or X A = B for triangular A, reading only its upper or lower triangle
 *  (and taking its diagonal as ones with unitriangular); B is a batch of matrices, batch dims
 *  broadcast. A zero on the diagonal is a LinAlgError. */
EMBER_API Tensor solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool left = true,
                                  bool unitriangular = false);
/** The inverse of A as a tensor map: A's first `ind` dims against the rest (their sizes' products
 *  equal), the result shaped A.shape[ind:] + A.shape[:ind]. */
EMBER_API Tensor tensorinv(const Tensor& a, int64_t ind = 2);
/** X with tensordot(A, X, X.dim()) = B, X of shape A.shape[B.dim():]; `dims` of A are moved to
 *  the end first. */
EMBER_API Tensor tensorsolve(const Tensor& a, const Tensor& b, IntList dims = {});
/** LU with partial pivoting of square matrices, as torch.linalg.lu_factor_ex: (LU, pivots, info)
 *  with L (unit, below the diagonal) and U packed in LU, pivots 1-based int32 (row i swapped with
 *  pivots[i] in turn), info int32, k where U[k-1, k-1] is exactly zero, else 0; with
 *  check_errors such a matrix is a LinAlgError. pivot=false (no pivoting) is a
 *  NotImplementedError, as on PyTorch's CPU. Differentiable in A. */
EMBER_API std::tuple<Tensor, Tensor, Tensor> lu_factor_ex(const Tensor& a, bool pivot = true,
                                                          bool check_errors = false);
/** (LU, pivots) of lu_factor_ex; a singular matrix is a LinAlgError (torch.linalg.lu_factor). */
EMBER_API std::tuple<Tensor, Tensor> lu_factor(const Tensor& a, bool pivot = true);
/** (P, L, U) with A = P L U, L unit lower and U upper triangular (torch.linalg.lu). */
EMBER_API std::tuple<Tensor, Tensor, Tensor> lu(const Tensor& a, bool pivot = true);
/** X with A X = B (A^T X = B with adjoint; X A = B unless left) for the A that lu_factor's LU
 *  and pivots factor. Differentiable in LU and B. */
EMBER_API Tensor lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool left = true,
                          bool adjoint = false);
/** Cholesky factor of symmetric positive-definite matrices: lower L (A = L L^T), or upper U
 *  (A = U^T U); only the lower triangle of A is read. Not positive-definite: a LinAlgError. */
EMBER_API Tensor cholesky(const Tensor& a, bool upper = false);
/** QR by Householder reflections, mode "reduced" (Q [m, k], R [k, n], k = min(m, n)),
 *  "complete" (Q [m, m], R [m, n]) or "r" (R only; Q is empty). */
EMBER_API std::tuple<Tensor, Tensor> qr(const Tensor& a, std::string_view mode = "reduced");
/** Eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices, reading the
 *  triangle `uplo` ("L" or "U"). */
EMBER_API std::tuple<Tensor, Tensor> eigh(const Tensor& a, std::string_view uplo = "L");
/** The eigenvalues of eigh, ascending. */
EMBER_API Tensor eigvalsh(const Tensor& a, std::string_view uplo = "L");
/** A = U diag(S) Vh, S descending; full_matrices gives U [m, m] and Vh [n, n], otherwise
 *  [m, k] and [k, n]. */
EMBER_API std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a, bool full_matrices = true);
/** The singular values of svd, descending. */
EMBER_API Tensor svdvals(const Tensor& a);
/** Moore-Penrose pseudo-inverse through the SVD (the eigendecomposition if hermitian); singular
 *  values at most max(atol, rtol * largest) count as zero (rtol defaults to eps * max(m, n)
 *  when neither is given). */
EMBER_API Tensor pinv(const Tensor& a, std::optional<double> atol = {},
                      std::optional<double> rtol = {}, bool hermitian = false);
/** Least-squares solution of A X = B, PyTorch's (solution, residuals, rank, singular_values):
 *  residuals when m > n and every A has full rank, rank unless driver is "gels", singular
 *  values for "gelsd" and "gelss"; the others are empty. rcond defaults to eps * max(m, n). */
EMBER_API std::tuple<Tensor, Tensor, Tensor, Tensor> lstsq(
    const Tensor& a, const Tensor& b, std::optional<double> rcond = {},
    std::optional<std::string_view> driver = {});
/** Vector norm of order `ord` over `dims` (every dim when empty), in `dtype` if given. */
EMBER_API Tensor vector_norm(const Tensor& x, double ord = 2, IntList dims = {},
                             bool keepdim = false, std::optional<DType> dtype = {});
/** Matrix norm over the two `dims`: ord "fro" or "nuc". */
EMBER_API Tensor matrix_norm(const Tensor& a, std::string_view ord = "fro", IntList dims = {-2, -1},
                             bool keepdim = false, std::optional<DType> dtype = {});
/** Matrix norm over the two `dims`: ord 1, -1, 2, -2, inf or -inf. */
EMBER_API Tensor matrix_norm(const Tensor& a, double ord, IntList dims = {-2, -1},
                             bool keepdim = false, std::optional<DType> dtype = {});
/** torch.linalg.norm with a numeric or no ord: a vector norm, or a matrix norm when `dims` has
 *  two dims (or, with ord given and no dims, the input is 2-d). */
EMBER_API Tensor norm(const Tensor& a, std::optional<double> ord = {}, IntList dims = {},
                      bool keepdim = false, std::optional<DType> dtype = {});
/** torch.linalg.norm with ord "fro" or "nuc": a matrix norm. */
EMBER_API Tensor norm(const Tensor& a, std::string_view ord, IntList dims = {},
                      bool keepdim = false, std::optional<DType> dtype = {});

}  // namespace ember::linalg
