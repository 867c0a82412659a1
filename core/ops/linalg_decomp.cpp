// torch.linalg (Note [torch.linalg in Ember] in ember/ops/linalg.h): the factorizations' checks,
// kernel calls and backward formulas, and the ops composed of them.
// Kernel contract. Every operand is a contiguous batch [B, ...] of row-major matrices of the op's
// dtype, float32 or float64 (pivots and info int64); B >= 1 and no matrix is empty (the core
// answers empty inputs itself); eigh and svd see finite values only (the core checks first).
//   "linalg_lu_factor" {A [B, n, n]} -> {LU [B, n, n], pivots [B, n], info [B]}: A = P L U with
//       partial pivoting, as LAPACK's getrf: L unit lower (below LU's diagonal), U upper; pivots
//       1-based, row i swapped with row pivots[i] in turn; info 0, or k when U[k-1, k-1] is
//       exactly 0 (the first such k; the factorization is completed all the same).
//   "linalg_lu_solve" {LU, pivots, Y [B, n, k]} -> {X [B, n, k]}: A X = Y (adjoint 0) or
//       A^T X = Y (adjoint 1), for the A that LU and pivots factor.
//   "linalg_cholesky" {A [B, n, n]} -> {L [B, n, n], info [B]}: A = L L^T from A's lower
//       triangle, zeros above the diagonal; info 0, or the order k of the first leading minor
//       whose pivot is not positive (or NaN), as LAPACK's potrf.
//   "linalg_qr" {A [B, m, n]} -> {Q [B, m, c], R [B, c, n]}, c = m if complete, else min(m, n):
//       Householder reflections as LAPACK's geqrf and orgqr (H = I - tau v v^T, v[0] = 1, beta =
//       -sign(alpha) * norm; no reflection where the column below the diagonal is already zero),
//       so the signs of R's diagonal agree between backends.
//   "linalg_eigh" {A [B, n, n]} -> {w [B, n], V [B, n, n], info [B]}: A V = V diag(w), w
//       ascending, V's columns orthonormal, reading A's lower (upper 0) or upper triangle; info 0,
//       or nonzero when the iteration did not converge.
//   "linalg_svd" {A [B, m, n]} -> {U [B, m, cu], S [B, k], Vh [B, cv, n], info [B]}, k = min(m,
//       n), cu = m and cv = n if full_matrices, else k: A = U diag(S) Vh, S descending; info as
//       eigh's.
// Eigenvectors and singular vectors are defined up to sign (and within repeated values), so
// backends may differ there; the conformance cases compare what does not depend on it.
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "core/dispatch/call.h"
#include "ember/autograd/record.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/linalg.h"
#include "ember/ops/reduce.h"

namespace ember::linalg {
namespace {

using autograd::LambdaNode;
using autograd::SavedTensor;
using autograd::TensorMeta;
using Grads = std::vector<Tensor>;

Tensor mT(const Tensor& t) {
  return t.transpose(-2, -1);
}

void check_float(const Tensor& a, const char* op) {
  EMBER_CHECK_TYPE(a.defined(), "[{}] undefined tensor argument", op);
  EMBER_CHECK_TYPE(a.dtype() == DType::Float32 || a.dtype() == DType::Float64,
                   "[{}] expected a float32 or float64 tensor: got {} (convert it with "
                   ".to(float64) first)",
                   op, a.dtype());
}

void check_matrix(const Tensor& a, const char* op, bool square) {
  check_float(a, op);
  EMBER_CHECK(a.dim() >= 2,
              "[{}] expected a matrix or a batch of matrices (at least 2 dims): got shape {}", op,
              shape_str(a.sizes()));
  EMBER_CHECK(!square || a.size(-1) == a.size(-2),
              "[{}] expected a batch of square matrices: got shape {} ({} by {})", op,
              shape_str(a.sizes()), a.size(-2), a.size(-1));
}

/** The operands of a system A X = B: A square float matrices, B of A's dtype and device. */
void check_system(const Tensor& a, const Tensor& b, const char* op) {
  check_matrix(a, op, true);
  check_float(b, op);
  common_device({&a, &b}, op);
  EMBER_CHECK_TYPE(a.dtype() == b.dtype(), "[{}] A and B must have one dtype: got {} and {}", op,
                   a.dtype(), b.dtype());
}

Shape batch_of(const Tensor& a) {
  Shape b;
  for (int64_t i = 0; i + 2 < a.dim(); ++i) b.push_back(a.size(i));
  return b;
}

Shape with(IntList batch, std::initializer_list<int64_t> tail) {
  Shape s;
  for (int64_t d : batch) s.push_back(d);
  for (int64_t t : tail) s.push_back(t);
  return s;
}

int64_t count_of(IntList batch) {
  int64_t c = 1;
  for (int64_t d : batch) c *= d;
  return c;
}

/** Checks that the batch dims of `a` and `y` (b, or b as a column) broadcast, naming the
 *  operands' whole shapes. */
void check_batches(const Tensor& a, const Tensor& y, const Tensor& b, const char* op) {
  const Shape ba = batch_of(a), by = batch_of(y);
  for (size_t i = 1; i <= std::min(ba.size(), by.size()); ++i) {
    const int64_t da = ba[ba.size() - i], db = by[by.size() - i];
    EMBER_CHECK(da == db || da == 1 || db == 1,
                "[{}] the batch dims of A {} and B {} do not broadcast: {} vs {}", op,
                shape_str(a.sizes()), shape_str(b.sizes()), da, db);
  }
}

/** `a` as a contiguous [count, m, n]. */
Tensor flat3(const Tensor& a) {
  return a.reshape({count_of(batch_of(a)), a.size(-2), a.size(-1)}).contiguous();
}

// Note [Devices without the factorizations]
// The factorizations are optional ops (ember/ops.def): the CPU (LAPACK) and reference backends
// have them, CUDA does not yet. Asking before the kernel call lets the error name the linalg op
// the user called and say what to do, rather than a missing kernel of an op they never named.
void require_kernel(ops::Id id, const Tensor& a, const char* op) {
  if (has_kernel(core_op(id), a.device(), a.dtype())) return;
  throw NotImplementedError(fmt::format(
      "[{}] not available on device {}: its backend has no {} kernel for {} (the factorizations "
      "run on the cpu and reference backends; move the input there with .to(\"cpu\"))",
      op, a.device().str(), core_op(id).name(), a.dtype()));
}

Tensor int64_on(IntList sizes, const Tensor& like) {
  return empty(sizes, {DType::Int64, like.device()});
}

std::tuple<Tensor, Tensor, Tensor> lu_factor_raw(const Tensor& a3, const char* op) {
  require_kernel(ops::linalg_lu_factor, a3, op);
  const int64_t b = a3.size(0), n = a3.size(1);
  Tensor lu = empty({b, n, n}, {a3.dtype(), a3.device()});
  Tensor piv = int64_on({b, n}, a3), info = int64_on({b}, a3);
  run_kernel(attrs::linalg_lu_factor{}, a3.dtype(), {&a3}, {&lu, &piv, &info});
  return {lu, piv, info};
}

Tensor lu_solve_raw(const Tensor& lu, const Tensor& piv, const Tensor& y3, bool adjoint,
                    const char* op) {
  require_kernel(ops::linalg_lu_solve, lu, op);
  Tensor x = empty(y3.sizes(), {y3.dtype(), y3.device()});
  run_kernel(attrs::linalg_lu_solve{.adjoint = adjoint ? 1 : 0}, lu.dtype(), {&lu, &piv, &y3},
             {&x});
  return x;
}

// Note [LinAlgError names the batch element]
// A kernel reports a matrix it could not factor in `info` (one entry per matrix of the batch)
// instead of failing the call, so the core can say which matrix and what went wrong, as
// PyTorch does: "[linalg.inv] (batch element 2) the matrix is singular: U[1, 1] of its LU
// factorization is exactly zero". Reading info waits for the device; the factorization has
// been computed by then anyway.
template <typename Describe>
void check_info(const Tensor& info, IntList batch, const char* op, Describe describe) {
  const Tensor h = info.to(Device::cpu()).contiguous();
  const int64_t* p = h.data_ptr<int64_t>();
  for (int64_t i = 0; i < h.numel(); ++i) {
    if (p[i] == 0) continue;
    const std::string where = batch.empty() ? "" : fmt::format(" (batch element {})", i);
    throw LinAlgError(fmt::format("[{}]{} {}", op, where, describe(p[i])));
  }
}

void check_singular(const Tensor& info, IntList batch, const char* op) {
  check_info(info, batch, op, [](int64_t k) {
    return fmt::format(
        "the matrix is singular: U[{}, {}] of its LU factorization is exactly zero (use "
        "linalg.pinv or linalg.lstsq for singular systems)",
        k - 1, k - 1);
  });
}

// eigh and svd iterate; LAPACK's iterations may not end on NaN or inf, so those never reach a
// kernel (PyTorch checks the same for svd).
void check_finite(const Tensor& a3, IntList batch, const char* op) {
  const Tensor ok = all(eq(sub(a3, a3), 0.0), {1, 2});
  if (all(ok).item<bool>()) return;
  const int64_t i = argmin(ok.to(DType::Int64)).item<int64_t>();
  const std::string where = batch.empty() ? "" : fmt::format(" (batch element {})", i);
  throw LinAlgError(
      fmt::format("[{}]{} the input contains non-finite values (NaN or inf)", op, where));
}

/** The diagonal of a contiguous [B, n, n] as a [B, n] view. */
Tensor diag3(const Tensor& t3) {
  const int64_t n = t3.size(-1);
  return t3.as_strided({t3.size(0), n}, {n * n, n + 1}, t3.storage_offset());
}

/** True off the diagonal of an n x n matrix. */
Tensor off_diagonal(int64_t n, const Tensor& like) {
  return eq(eye(n, n, {like.dtype(), like.device()}), 0.0);
}

/** (-1)^(number of row swaps) of LU pivots [B, n], in `dtype`. */
Tensor pivot_sign(const Tensor& piv, DType dtype) {
  const int64_t n = piv.size(-1);
  const Tensor swaps =
      sum(ne(piv, arange(1, n + 1, 1, TensorOptions{DType::Int64, piv.device()})), {-1});
  return add(mul(remainder(swaps, 2), -2), 1).to(dtype);
}

// ---- inv, solve ----------------------------------------------------------------------------

Tensor inv_forward(const Tensor& a, const char* op) {
  check_matrix(a, op, true);
  const Shape batch = batch_of(a);
  const int64_t n = a.size(-1);
  if (a.numel() == 0) return empty(a.sizes(), {a.dtype(), a.device()});
  const Tensor a3 = flat3(a);
  auto [lu, piv, info] = lu_factor_raw(a3, op);
  check_singular(info, batch, op);
  const Tensor id = eye(n, n, {a.dtype(), a.device()}).expand({a3.size(0), n, n}).contiguous();
  return lu_solve_raw(lu, piv, id, false, op).view(a.sizes());
}

// X with A X = Y, A [..., n, n] and Y [..., n, k], batch dims broadcast.
Tensor solve_forward(const Tensor& a, const Tensor& y, const char* op) {
  const int64_t n = a.size(-1), k = y.size(-1);
  const Shape batch = broadcast_shapes(batch_of(a), batch_of(y), op);
  const Shape out = with(batch, {n, k});
  if (count_of(batch) == 0 || n == 0 || k == 0) return zeros(out, {a.dtype(), a.device()});
  const Tensor a3 = flat3(a.expand(with(batch, {n, n})));
  const Tensor y3 = flat3(y.expand(out));
  auto [lu, piv, info] = lu_factor_raw(a3, op);
  check_singular(info, batch, op);
  return lu_solve_raw(lu, piv, y3, false, op).view(out);
}

// Note [Backward of solve]
// X = A^-1 Y: gY = A^-T gX (one more solve, with the public op so it differentiates again) and
// gA = -gY X^T; both are summed back over the batch dims their operand was broadcast along.
Tensor solve_matrix(const Tensor& a, const Tensor& y, const char* op) {
  return autograd::differentiable(
      "LinalgSolveBackward", op, {&a, &y}, [&] { return solve_forward(a, y, op); },
      [&] {
        return [sa = SavedTensor(a), ma = TensorMeta(a), my = TensorMeta(y), ra = a.requires_grad(),
                ry = y.requires_grad()](const Grads& g, const LambdaNode& self) {
          const Tensor a = self.unpack(sa), x = self.saved_output(0);
          const Tensor gy = solve(mT(a), g[0]);
          Tensor ga, gyr;
          if (ra) ga = autograd::reduce_grad(neg(matmul(gy, mT(x))), ma);
          if (ry) gyr = autograd::reduce_grad(gy, my);
          return Grads{ga, gyr};
        };
      },
      /*save_output=*/true);
}

// ---- det, slogdet ---------------------------------------------------------------------------

/** {LU diagonal [count, n], pivot sign [count]} of square, non-empty a. */
std::tuple<Tensor, Tensor> lu_diag(const Tensor& a, const char* op) {
  const Tensor a3 = flat3(a);
  auto [lu, piv, info] = lu_factor_raw(a3, op);
  return {diag3(lu), pivot_sign(piv, a.dtype())};
}

Tensor det_forward(const Tensor& a, const char* op) {
  check_matrix(a, op, true);
  const Shape batch = batch_of(a);
  if (count_of(batch) == 0) return empty(batch, {a.dtype(), a.device()});
  if (a.size(-1) == 0) return ones(batch, {a.dtype(), a.device()});
  auto [d, s] = lu_diag(a, op);
  return mul(prod(d, {-1}), s).view(batch);
}

// Note [Backward of det]
// d det(A) / dA = det(A) A^-T where A is invertible; where some matrix of the batch is singular
// the whole batch takes the SVD form, which holds for every A: with A = U diag(S) Vh, the
// gradient is det(U) det(Vh) U diag(prod_{j != i} S_j) Vh (PyTorch does the same).
Tensor det_backward(const Tensor& g, const Tensor& a, const Tensor& d) {
  if (!any(eq(d, 0.0)).item<bool>()) {
    return mul(mul(g, d).unsqueeze(-1).unsqueeze(-1), mT(inv(a)));
  }
  auto [u, s, vh] = svd(a, false);
  const int64_t n = s.size(-1);
  const Tensor others = where(off_diagonal(n, s), s.unsqueeze(-2).expand(with(s.sizes(), {n})),
                              1.0);  // row i: S with S_i replaced by 1
  const Tensor p = prod(others, {-1});
  const Tensor alpha = mul(g, mul(linalg::det(u), linalg::det(vh)));
  return matmul(mul(u, mul(alpha.unsqueeze(-1), p).unsqueeze(-2)), vh);
}

}  // namespace

Tensor inv(const Tensor& a) {
  return autograd::differentiable(
      "LinalgInvBackward", "linalg.inv", {&a}, [&] { return inv_forward(a, "linalg.inv"); },
      [] {
        // d(A^-1) = -A^-1 dA A^-1, so gA = -A^-T g A^-T.
        return [](const Grads& g, const LambdaNode& self) {
          const Tensor ait = mT(self.saved_output(0));
          return Grads{neg(matmul(matmul(ait, g[0]), ait))};
        };
      },
      /*save_output=*/true);
}

Tensor solve(const Tensor& a, const Tensor& b, bool left) {
  const char* op = "linalg.solve";
  check_system(a, b, op);
  if (!left) {
    EMBER_CHECK(b.dim() >= 2, "[{}] B must be a batch of matrices when left=False: got shape {}",
                op, shape_str(b.sizes()));
    return mT(solve(mT(a), mT(b), true));
  }
  // B is a batch of vectors when it is 1-d or has A's shape without the last dim (PyTorch's rule).
  bool vector = b.dim() == 1;
  if (b.dim() == a.dim() - 1) {
    vector = true;
    for (int64_t i = 0; i < b.dim(); ++i) vector = vector && b.size(i) == a.size(i);
  }
  const Tensor y = vector ? b.unsqueeze(-1) : b;
  EMBER_CHECK(y.dim() >= 2 && y.size(-2) == a.size(-1),
              "[{}] incompatible shapes: A {} and B {} (B needs {} rows, or to be a vector of "
              "that size)",
              op, shape_str(a.sizes()), shape_str(b.sizes()), a.size(-1));
  check_batches(a, y, b, op);
  const Tensor x = solve_matrix(a, y, op);
  return vector ? x.squeeze(-1) : x;
}

// Note [Triangular solves through LU]
// Gaussian elimination of an upper triangular matrix has nothing to eliminate: every multiplier
// is exactly 0, partial pivoting never swaps (the column below the diagonal is zeros), and the
// LU factors are the matrix itself, so the LU solve is back substitution, with its rounding.
// A lower triangular L is solved as the upper triangular J L J (J reverses the order of rows and
// columns, flip() of both dims): L X = B is (J L J)(J X) = J B. So the solve needs no kernel of its
// own, and its gradients are solve's, passed through tril/triu (gA is triangular, as PyTorch's).
Tensor solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool left,
                        bool unitriangular) {
  const char* op = "linalg.solve_triangular";
  check_system(a, b, op);
  EMBER_CHECK(b.dim() >= 2, "[{}] B must be a matrix or a batch of matrices: got shape {}", op,
              shape_str(b.sizes()));
  if (!left) return mT(solve_triangular(mT(a), mT(b), !upper, true, unitriangular));
  EMBER_CHECK(b.size(-2) == a.size(-1), "[{}] incompatible shapes: A {} and B {} (B needs {} rows)",
              op, shape_str(a.sizes()), shape_str(b.sizes()), a.size(-1));
  check_batches(a, b, b, op);
  const int64_t n = a.size(-1);
  Tensor t = upper ? triu(a, unitriangular ? 1 : 0) : tril(a, unitriangular ? -1 : 0);
  if (unitriangular) t = add(t, eye(n, n, {a.dtype(), a.device()}));
  if (upper) return solve_matrix(t, b, op);
  return flip(solve_matrix(flip(t, {-2, -1}), flip(b, {-2}), op), {-2});
}

// ---- LU -----------------------------------------------------------------------------------------

namespace {

/** The permutation matrices [.., m, m] of LAPACK's pivots [.., k] (1-based, row i swapped with
 *  row pivots[i] in turn): A = P L U, so P[perm[c], c] = 1 where row c of L U is row perm[c]
 *  of A. */
Tensor permutation_of(const Tensor& pivots, int64_t m, DType dtype, Device device) {
  const int64_t k = pivots.dim() == 0 ? 0 : pivots.size(-1);
  const Tensor piv =
      pivots.reshape({-1, std::max<int64_t>(k, 1)}).to(Device::cpu()).to(DType::Int64).contiguous();
  const int64_t count = k == 0 ? 0 : piv.size(0);
  Tensor perm = empty({count, m}, DType::Int64);
  const int64_t* p = piv.data_ptr<int64_t>();
  int64_t* out = perm.data_ptr<int64_t>();
  for (int64_t b = 0; b < count; ++b) {
    int64_t* row = out + b * m;
    for (int64_t i = 0; i < m; ++i) row[i] = i;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t j = p[b * k + i] - 1;
      EMBER_CHECK_INDEX(j >= i && j < m,
                        "[lu_unpack] pivots[{}] = {} is out of range: a pivot of row {} is in "
                        "[{}, {}] (1-based)",
                        i, j + 1, i, i + 1, m);
      std::swap(row[i], row[j]);
    }
  }
  Shape batch;
  for (int64_t d = 0; d + 1 < pivots.dim(); ++d) batch.push_back(pivots.size(d));
  Shape full = batch;
  full.push_back(m);
  full.push_back(m);
  if (count == 0) return eye(m, m, {dtype, device}).expand(full).contiguous();
  const Tensor index = perm.to(device).view({count, 1, m});
  return scatter(zeros({count, m, m}, {dtype, device}), 1, index, Scalar(1)).view(full);
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> lu_factor_ex(const Tensor& a, bool pivot, bool check_errors) {
  const char* op = "linalg.lu_factor";
  check_matrix(a, op, true);
  EMBER_CHECK_NOT_IMPLEMENTED(pivot,
                              "[{}] LU without pivoting is not implemented (pass pivot=True)", op);
  const Shape batch = batch_of(a);
  const int64_t n = a.size(-1);
  Shape piv_shape = batch;
  piv_shape.push_back(n);
  Tensor piv, info;
  const Tensor packed = autograd::differentiable(
      "LinalgLuFactorExBackward", op, {&a},
      [&] {
        if (a.numel() == 0) {
          piv = ones(piv_shape, {DType::Int32, a.device()});
          info = zeros(batch, {DType::Int32, a.device()});
          return empty(a.sizes(), {a.dtype(), a.device()});
        }
        auto [lu3, piv3, info3] = lu_factor_raw(flat3(a), op);
        if (check_errors) check_singular(info3, batch, op);
        piv = piv3.to(DType::Int32).view(piv_shape);
        info = info3.to(DType::Int32).view(batch);
        return lu3.view(a.sizes());
      },
      [&] {
        // Note [Backward of lu_factor]
        // PyTorch's, for square A = P L U: gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T
        // with gL = tril(gLU, -1) and gU = triu(gLU); the solves are the public triangular ones.
        return [piv](const Grads& g, const LambdaNode& self) {
          const Tensor packed = self.saved_output(0);
          auto [p, l, u] = lu_unpack(packed, piv);
          Tensor phi =
              add(tril(matmul(mT(l), tril(g[0], -1)), -1), triu(matmul(triu(g[0]), mT(u))));
          phi = solve_triangular(mT(u), phi, false, false);
          phi = solve_triangular(mT(l), phi, true, true, true);
          return Grads{matmul(p, phi)};
        };
      },
      /*save_output=*/true);
  return {packed, piv, info};
}

std::tuple<Tensor, Tensor> lu_factor(const Tensor& a, bool pivot) {
  auto [packed, piv, info] = lu_factor_ex(a, pivot, true);
  return {packed, piv};
}

std::tuple<Tensor, Tensor, Tensor> lu(const Tensor& a, bool pivot) {
  auto [packed, piv, info] = lu_factor_ex(a, pivot, false);
  return lu_unpack(packed, piv);
}

// With A = P L U: A X = B is X = U^-1 L^-1 P^T B, A^T X = B is X = P L^-T U^-T B, and X A = B is
// the transpose of A^T X^T = B^T; the triangular solves differentiate in LU, P is constant.
Tensor lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool left, bool adjoint) {
  const char* op = "linalg.lu_solve";
  check_system(lu, b, op);
  EMBER_CHECK(b.dim() >= 2, "[{}] B must be a matrix or a batch of matrices: got shape {}", op,
              shape_str(b.sizes()));
  EMBER_CHECK_TYPE(pivots.defined() && is_integral(pivots.dtype()),
                   "[{}] pivots must be an integer tensor (lu_factor's)", op);
  EMBER_CHECK(pivots.dim() == lu.dim() - 1 && pivots.size(-1) == lu.size(-1),
              "[{}] pivots must have LU's batch and one entry per row: got {} for LU {}", op,
              shape_str(pivots.sizes()), shape_str(lu.sizes()));
  if (!left) return mT(lu_solve(lu, pivots, mT(b), true, !adjoint));
  auto [p, l, u] = lu_unpack(lu, pivots);
  if (!adjoint) {
    const Tensor y = solve_triangular(l, matmul(mT(p), b), false, true, true);
    return solve_triangular(u, y, true);
  }
  const Tensor y = solve_triangular(mT(u), b, false);
  return matmul(p, solve_triangular(mT(l), y, true, true, true));
}

namespace {

/** Sizes [from, to) of `sizes`. */
Shape sizes_between(IntList sizes, int64_t from, int64_t to) {
  Shape out;
  for (int64_t i = from; i < to; ++i) out.push_back(sizes[i]);
  return out;
}

}  // namespace

Tensor tensorinv(const Tensor& a, int64_t ind) {
  const char* op = "linalg.tensorinv";
  check_float(a, op);
  EMBER_CHECK(ind > 0 && ind <= a.dim(), "[{}] expected ind in 1..{}: got {}", op, a.dim(), ind);
  const Shape rows = sizes_between(a.sizes(), 0, ind),
              cols = sizes_between(a.sizes(), ind, a.dim());
  const int64_t p = count_of(rows), q = count_of(cols);
  EMBER_CHECK(p == q,
              "[{}] the product of the first ind dims must equal that of the rest: got {} and {} "
              "for shape {} and ind {}",
              op, p, q, shape_str(a.sizes()), ind);
  Shape out = cols;
  for (int64_t d : rows) out.push_back(d);
  return inv(a.reshape({p, q})).reshape(out);
}

Tensor tensorsolve(const Tensor& a, const Tensor& b, IntList dims) {
  const char* op = "linalg.tensorsolve";
  check_float(a, op);
  check_float(b, op);
  Tensor moved = a;
  if (!dims.empty()) {
    std::vector<int64_t> to;
    const int64_t k = static_cast<int64_t>(dims.size());
    for (int64_t i = 0; i < k; ++i) to.push_back(a.dim() - k + i);
    moved = movedim(a, dims, to);
  }
  EMBER_CHECK(b.dim() <= moved.dim() && sizes_between(moved.sizes(), 0, b.dim()) == b.sizes(),
              "[{}] A's leading dims must be B's shape: got A {} and B {}", op,
              shape_str(moved.sizes()), shape_str(b.sizes()));
  const Shape out = sizes_between(moved.sizes(), b.dim(), moved.dim());
  const int64_t m = b.numel(), n = count_of(out);
  EMBER_CHECK(m == n,
              "[{}] the product of A's trailing dims must equal B's number of elements: got {} "
              "and {} (A {}, B {})",
              op, n, m, shape_str(moved.sizes()), shape_str(b.sizes()));
  return solve(moved.reshape({m, n}), b.reshape({m})).reshape(out);
}

Tensor det(const Tensor& a) {
  return autograd::differentiable(
      "LinalgDetBackward", "linalg.det", {&a}, [&] { return det_forward(a, "linalg.det"); },
      [&] {
        return [sa = SavedTensor(a)](const Grads& g, const LambdaNode& self) {
          return Grads{det_backward(g[0], self.unpack(sa), self.saved_output(0))};
        };
      },
      /*save_output=*/true);
}

std::tuple<Tensor, Tensor> slogdet(const Tensor& a) {
  const char* op = "linalg.slogdet";
  check_matrix(a, op, true);
  const Shape batch = batch_of(a);
  Tensor sign, logabs;
  {
    autograd::NoGradGuard below_autograd;
    if (count_of(batch) == 0) {
      sign = empty(batch, {a.dtype(), a.device()});
      logabs = empty(batch, {a.dtype(), a.device()});
    } else if (a.size(-1) == 0) {
      sign = ones(batch, {a.dtype(), a.device()});
      logabs = zeros(batch, {a.dtype(), a.device()});
    } else {
      auto [d, s] = lu_diag(a, op);
      sign = mul(prod(ember::sign(d), {-1}), s).view(batch);
      logabs = sum(log(abs(d)), {-1}).view(batch);
    }
  }
  if (autograd::needs_grad(a)) {
    // d log|det A| / dA = A^-T; the sign is piecewise constant.
    autograd::record("LinalgSlogdetBackward", op, {&a}, {&logabs},
                     [sa = SavedTensor(a)](const Grads& g, const LambdaNode& self) {
                       const Tensor a = self.unpack(sa);
                       return Grads{mul(g[0].unsqueeze(-1).unsqueeze(-1), mT(inv(a)))};
                     });
  }
  return {sign, logabs};
}

// ---- cholesky ---------------------------------------------------------------------------------

Tensor cholesky(const Tensor& a, bool upper) {
  const char* op = "linalg.cholesky";
  check_matrix(a, op, true);
  const Tensor l = autograd::differentiable(
      "LinalgCholeskyBackward", op, {&a},
      [&] {
        if (a.numel() == 0) return empty(a.sizes(), {a.dtype(), a.device()});
        const Tensor a3 = flat3(a);
        require_kernel(ops::linalg_cholesky, a3, op);
        Tensor l3 = empty(a3.sizes(), {a.dtype(), a.device()}), info = int64_on({a3.size(0)}, a3);
        run_kernel(attrs::linalg_cholesky{}, a.dtype(), {&a3}, {&l3, &info});
        check_info(info, batch_of(a), op, [](int64_t k) {
          return fmt::format(
              "the matrix is not positive-definite: its leading minor of order {} is not "
              "positive",
              k);
        });
        return l3.view(a.sizes());
      },
      [] {
        // Note [Backward of cholesky]
        // PyTorch's (Murray, arXiv 1602.07527): with P = tril(L^T gL) and Phi(P) = P with its
        // diagonal halved, gA = L^-T sym(Phi(P)) L^-1, symmetric, as A is taken to be.
        return [](const Grads& g, const LambdaNode& self) {
          const Tensor l = self.saved_output(0);
          const Tensor p = tril(matmul(mT(l), g[0]));
          const Tensor phi = mul(add(p, mT(tril(p, -1))), 0.5);
          const Tensor linv = inv(l);
          return Grads{matmul(matmul(mT(linv), phi), linv)};
        };
      },
      /*save_output=*/true);
  return upper ? mT(l).contiguous() : l;
}

// ---- qr ---------------------------------------------------------------------------------------

namespace {

// Note [Backward of qr]
// For m >= n (Q [m, n], R [n, n]) the gradient of A = QR is TensorFlow's QrGrad:
//   gA = Q (gR + tril(Q^T gQ - gQ^T Q + R gR^T - gR R^T) R^-T) + (gQ - Q Q^T gQ) R^-T.
// A wide A = [X | Y] (m < n) has Q R = [Q U | Q V] with X = Q U square: gY = Q gV and gX is the
// square case with gQ + Y gV^T for gQ. Like PyTorch, mode "complete" with m > n (Q has columns
// A does not determine) and mode "r" (no Q) have no gradient.
Tensor qr_backward_deep(const Tensor& gq, const Tensor& gr, const Tensor& q, const Tensor& r) {
  const Tensor qdq = matmul(mT(q), gq);
  const Tensor rdr = matmul(r, mT(gr));
  const Tensor lower = tril(add(sub(qdq, mT(qdq)), sub(rdr, mT(rdr))));
  const Tensor rinv_t = mT(inv(r));
  return add(matmul(q, add(gr, matmul(lower, rinv_t))), matmul(sub(gq, matmul(q, qdq)), rinv_t));
}

Tensor qr_backward(const Tensor& gq, const Tensor& gr, const Tensor& q, const Tensor& r,
                   const Tensor& a) {
  const int64_t m = a.size(-2), n = a.size(-1);
  if (m >= n) return qr_backward_deep(gq, gr, q, r);
  const Tensor y = a.narrow(-1, m, n - m);
  const Tensor u = r.narrow(-1, 0, m);
  const Tensor gu = gr.narrow(-1, 0, m), gv = gr.narrow(-1, m, n - m);
  const Tensor gx = qr_backward_deep(add(gq, matmul(y, mT(gv))), gu, q, u);
  return cat({gx, matmul(q, gv)}, -1);
}

}  // namespace

std::tuple<Tensor, Tensor> qr(const Tensor& a, std::string_view mode) {
  const char* op = "linalg.qr";
  check_matrix(a, op, false);
  EMBER_CHECK(mode == "reduced" || mode == "complete" || mode == "r",
              "[{}] unrecognized mode '{}': expected 'reduced' (the default), 'complete' or 'r'",
              op, mode);
  const bool complete = mode == "complete";
  const Shape batch = batch_of(a);
  const int64_t m = a.size(-2), n = a.size(-1), c = complete ? m : std::min(m, n);
  Tensor q, r;
  {
    autograd::NoGradGuard below_autograd;
    if (a.numel() == 0) {
      // No reflections: Q is the identity's first c columns, R zero.
      q = eye(m, c, {a.dtype(), a.device()}).expand(with(batch, {m, c})).contiguous();
      r = zeros(with(batch, {c, n}), {a.dtype(), a.device()});
    } else {
      const Tensor a3 = flat3(a);
      require_kernel(ops::linalg_qr, a3, op);
      q = empty({a3.size(0), m, c}, {a.dtype(), a.device()});
      r = empty({a3.size(0), c, n}, {a.dtype(), a.device()});
      run_kernel(attrs::linalg_qr{.complete = complete ? 1 : 0}, a.dtype(), {&a3}, {&q, &r});
      q = q.view(with(batch, {m, c}));
      r = r.view(with(batch, {c, n}));
    }
  }
  if (autograd::needs_grad(a)) {
    std::string mode_s(mode);
    autograd::record_saving_outputs(
        "LinalgQrBackward", op, {&a}, {&q, &r},
        [sa = SavedTensor(a), mode_s](const Grads& g, const LambdaNode& self) {
          const Tensor a = self.unpack(sa);
          EMBER_CHECK_AS(NotImplementedError, mode_s != "r",
                         "[linalg.qr] the derivative of linalg.qr depends on Q, "
                         "which mode='r' does not compute (use mode='reduced')");
          EMBER_CHECK_AS(NotImplementedError, mode_s == "reduced" || a.size(-2) <= a.size(-1),
                         "[linalg.qr] mode='complete' with more rows than columns "
                         "({} > {}) is not differentiable (use mode='reduced')",
                         a.size(-2), a.size(-1));
          return Grads{qr_backward(g[0], g[1], self.saved_output(0), self.saved_output(1), a)};
        });
  }
  if (mode == "r") q = empty({0}, {a.dtype(), a.device()});
  return {q, r};
}

// ---- eigh -------------------------------------------------------------------------------------

std::tuple<Tensor, Tensor> eigh(const Tensor& a, std::string_view uplo) {
  const char* op = "linalg.eigh";
  check_matrix(a, op, true);
  EMBER_CHECK(uplo == "L" || uplo == "U", "[{}] UPLO must be 'L' or 'U': got '{}'", op, uplo);
  const Shape batch = batch_of(a);
  const int64_t n = a.size(-1);
  Tensor w, v;
  {
    autograd::NoGradGuard below_autograd;
    if (a.numel() == 0) {
      w = empty(with(batch, {n}), {a.dtype(), a.device()});
      v = empty(a.sizes(), {a.dtype(), a.device()});
    } else {
      const Tensor a3 = flat3(a);
      require_kernel(ops::linalg_eigh, a3, op);
      check_finite(a3, batch, op);
      w = empty({a3.size(0), n}, {a.dtype(), a.device()});
      v = empty(a3.sizes(), {a.dtype(), a.device()});
      Tensor info = int64_on({a3.size(0)}, a3);
      run_kernel(attrs::linalg_eigh{.upper = uplo == "U" ? 1 : 0}, a.dtype(), {&a3},
                 {&w, &v, &info});
      check_info(info, batch, op, [](int64_t k) {
        return fmt::format("the eigenvalue iteration did not converge (error code {})", k);
      });
      w = w.view(with(batch, {n}));
      v = v.view(a.sizes());
    }
  }
  if (autograd::needs_grad(a)) {
    // Note [Backward of eigh]
    // For symmetric A = V diag(w) V^T (PyTorch's formula, projected onto symmetric gradients):
    // gA = V (diag(gw) + F o skew(V^T gV)) V^T with skew(X) = (X - X^T) / 2 and F_ij =
    // 1 / (w_j - w_i) off the diagonal, 0 on it; repeated eigenvalues make it infinite, as in
    // PyTorch, when the loss depends on the eigenvectors.
    autograd::record_saving_outputs(
        "LinalgEighBackward", op, {&a}, {&w, &v}, [](const Grads& g, const LambdaNode& self) {
          const Tensor w = self.saved_output(0), v = self.saved_output(1);
          const int64_t n = w.size(-1);
          const Tensor vgv = matmul(mT(v), g[1]);
          const Tensor skew = mul(sub(vgv, mT(vgv)), 0.5);
          const Tensor off = off_diagonal(n, w);
          const Tensor e = sub(w.unsqueeze(-2), w.unsqueeze(-1));  // w_j - w_i
          const Tensor f = where(off, div(skew, where(off, e, 1.0)), 0.0);
          const Tensor inner = add(f, ember::diag_embed(g[0]));
          return Grads{matmul(v, matmul(inner, mT(v)))};
        });
  }
  return {w, v};
}

Tensor eigvalsh(const Tensor& a, std::string_view uplo) {
  return std::get<0>(eigh(a, uplo));
}

// ---- svd --------------------------------------------------------------------------------------

namespace {

// Note [Backward of svd]
// PyTorch's svd_backward for real matrices with distinct singular values, on the reduced
// factors (full_matrices=True narrows U and Vh to their first k columns and rows first, as
// PyTorch does: the others are any basis of a null space and carry no gradient):
//   J = (skew(U^T gU) S + S skew(Vh gVh^T)) / E + diag(gS), skew(X) = X - X^T, E_ij = S_j^2 -
//   S_i^2 (1 on the diagonal); gA = U J Vh, plus (I - U U^T) gU S^-1 Vh when m > n, or
//   U S^-1 gVh (I - Vh^T Vh) when m < n. The loss must not depend on the signs of singular
//   vectors (each pair (u_i, v_i) may flip together), as in PyTorch.
Tensor svd_backward(const Tensor& gu_full, const Tensor& gs, const Tensor& gvh_full,
                    const Tensor& u_full, const Tensor& s, const Tensor& vh_full) {
  const int64_t k = s.size(-1);
  const Tensor u = u_full.narrow(-1, 0, k), vh = vh_full.narrow(-2, 0, k);
  const Tensor gu = gu_full.narrow(-1, 0, k), gvh = gvh_full.narrow(-2, 0, k);
  const int64_t m = u.size(-2), n = vh.size(-1);
  const Tensor utgu = matmul(mT(u), gu), vhgv = matmul(vh, mT(gvh));
  const Tensor uhgu = sub(utgu, mT(utgu)), vskew = sub(vhgv, mT(vhgv));
  const Tensor s2 = mul(s, s);
  const Tensor off = off_diagonal(k, s);
  const Tensor e = where(off, sub(s2.unsqueeze(-2), s2.unsqueeze(-1)), 1.0);
  Tensor j = div(add(mul(uhgu, s.unsqueeze(-2)), mul(s.unsqueeze(-1), vskew)), e);
  j = add(j, ember::diag_embed(gs));
  if (m > n) {
    Tensor ga = matmul(u, j);
    const Tensor gus = div(gu, s.unsqueeze(-2));
    ga = sub(add(ga, gus), matmul(u, matmul(mT(u), gus)));
    return matmul(ga, vh);
  }
  if (m < n) {
    Tensor ga = matmul(j, vh);
    const Tensor sgvh = div(gvh, s.unsqueeze(-1));
    ga = sub(add(ga, sgvh), matmul(matmul(sgvh, mT(vh)), vh));
    return matmul(u, ga);
  }
  return matmul(u, matmul(j, vh));
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a, bool full_matrices) {
  const char* op = "linalg.svd";
  check_matrix(a, op, false);
  const Shape batch = batch_of(a);
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  const int64_t cu = full_matrices ? m : k, cv = full_matrices ? n : k;
  Tensor u, s, vh;
  {
    autograd::NoGradGuard below_autograd;
    const TensorOptions o{a.dtype(), a.device()};
    if (a.numel() == 0) {
      u = eye(m, cu, o).expand(with(batch, {m, cu})).contiguous();
      s = empty(with(batch, {k}), o);
      vh = eye(cv, n, o).expand(with(batch, {cv, n})).contiguous();
    } else {
      const Tensor a3 = flat3(a);
      require_kernel(ops::linalg_svd, a3, op);
      check_finite(a3, batch, op);
      const int64_t b = a3.size(0);
      u = empty({b, m, cu}, o);
      s = empty({b, k}, o);
      vh = empty({b, cv, n}, o);
      Tensor info = int64_on({b}, a3);
      run_kernel(attrs::linalg_svd{.full_matrices = full_matrices ? 1 : 0}, a.dtype(), {&a3},
                 {&u, &s, &vh, &info});
      check_info(info, batch, op, [](int64_t c) {
        return fmt::format("the singular value iteration did not converge (error code {})", c);
      });
      u = u.view(with(batch, {m, cu}));
      s = s.view(with(batch, {k}));
      vh = vh.view(with(batch, {cv, n}));
    }
  }
  if (autograd::needs_grad(a)) {
    autograd::record_saving_outputs(
        "LinalgSvdBackward", op, {&a}, {&u, &s, &vh}, [](const Grads& g, const LambdaNode& self) {
          return Grads{svd_backward(g[0], g[1], g[2], self.saved_output(0), self.saved_output(1),
                                    self.saved_output(2))};
        });
  }
  return {u, s, vh};
}

Tensor svdvals(const Tensor& a) {
  check_matrix(a, "linalg.svdvals", false);
  return std::get<1>(svd(a, false));
}

// ---- pinv, lstsq ------------------------------------------------------------------------------

namespace {

/** 1 / x where keep, 0 elsewhere, without an inf in the branch not taken (its gradient). */
Tensor safe_reciprocal(const Tensor& x, const Tensor& keep) {
  return where(keep, div(ones_like(x), where(keep, x, 1.0)), 0.0);
}

double default_rtol(const Tensor& a) {
  const double eps = a.dtype() == DType::Float32 ? std::numeric_limits<float>::epsilon()
                                                 : std::numeric_limits<double>::epsilon();
  return eps * static_cast<double>(std::max(a.size(-2), a.size(-1)));
}

/** The singular values kept: S > max(atol, rtol * max(S)) (per matrix). */
Tensor kept(const Tensor& s, double atol, double rtol) {
  const Tensor smax = amax(s, {-1}, /*keepdim=*/true);
  return gt(s, maximum(mul(smax, rtol), full({}, atol, {s.dtype(), s.device()})));
}

}  // namespace

Tensor pinv(const Tensor& a, std::optional<double> atol, std::optional<double> rtol,
            bool hermitian) {
  const char* op = "linalg.pinv";
  check_matrix(a, op, hermitian);
  const double at = atol.value_or(0.0);
  // PyTorch: rtol is eps * max(m, n) when neither is given, 0 when only atol is.
  const double rt = rtol ? *rtol : atol ? 0.0 : default_rtol(a);
  EMBER_CHECK(at >= 0 && rt >= 0, "[{}] atol and rtol must be non-negative: got {} and {}", op, at,
              rt);
  const Shape batch = batch_of(a);
  if (a.numel() == 0) {
    return zeros(with(batch, {a.size(-1), a.size(-2)}), {a.dtype(), a.device()});
  }
  if (hermitian) {
    auto [w, v] = eigh(a);
    const Tensor winv = safe_reciprocal(w, kept(abs(w), at, rt));
    return matmul(mul(v, winv.unsqueeze(-2)), mT(v));
  }
  auto [u, s, vh] = svd(a, false);
  const Tensor sinv = safe_reciprocal(s, kept(s, at, rt));
  return matmul(mul(mT(vh), sinv.unsqueeze(-2)), mT(u));
}

std::tuple<Tensor, Tensor, Tensor, Tensor> lstsq(const Tensor& a, const Tensor& b,
                                                 std::optional<double> rcond,
                                                 std::optional<std::string_view> driver) {
  const char* op = "linalg.lstsq";
  check_matrix(a, op, false);
  check_float(b, op);
  common_device({&a, &b}, op);
  EMBER_CHECK_TYPE(a.dtype() == b.dtype(), "[{}] A and B must have one dtype: got {} and {}", op,
                   a.dtype(), b.dtype());
  const std::string_view drv = driver.value_or("gelsy");
  EMBER_CHECK(drv == "gels" || drv == "gelsy" || drv == "gelsd" || drv == "gelss",
              "[{}] driver must be one of gels, gelsy, gelsd, gelss: got '{}'", op, drv);
  // PyTorch's rule: B is [..., m, k], or a batch of vectors [..., m] with one dim fewer than A.
  EMBER_CHECK(b.dim() == a.dim() || b.dim() == a.dim() - 1,
              "[{}] B must have as many dims as A or one fewer: got shapes {} and {}", op,
              shape_str(a.sizes()), shape_str(b.sizes()));
  const bool vector = b.dim() == a.dim() - 1;
  const Tensor y = vector ? b.unsqueeze(-1) : b;
  EMBER_CHECK(y.dim() >= 2 && y.size(-2) == a.size(-2),
              "[{}] incompatible shapes: A {} and B {} (B needs A's {} rows)", op,
              shape_str(a.sizes()), shape_str(b.sizes()), a.size(-2));
  check_batches(a, y, b, op);
  const double rc = rcond && *rcond > 0 ? *rcond : default_rtol(a);
  const int64_t m = a.size(-2), n = a.size(-1);
  const TensorOptions o{a.dtype(), a.device()};
  Tensor x, rank, s;
  if (a.numel() == 0) {
    const Shape batch = broadcast_shapes(batch_of(a), batch_of(y), op);
    x = zeros(with(batch, {n, y.size(-1)}), o);
    rank = zeros(batch_of(a), {DType::Int64, a.device()});
    s = empty(with(batch_of(a), {std::min(m, n)}), o);
  } else {
    // Through the SVD (what gelsd does): the minimum-norm solution for any rank.
    auto [u, sv, vh] = svd(a, false);
    const Tensor keep = kept(sv, 0.0, rc);
    const Tensor sinv = safe_reciprocal(sv, keep);
    x = matmul(mul(mT(vh), sinv.unsqueeze(-2)), matmul(mT(u), y));
    rank = sum(keep, {-1});
    s = sv;
  }
  Tensor residuals = empty({0}, o);
  if (m > n && a.numel() > 0 && all(eq(rank, n)).item<bool>()) {
    const Tensor r = sub(matmul(a, x), y);
    residuals = sum(mul(r, r), {-2});
    if (vector) residuals = residuals.squeeze(-1);
  }
  if (vector) x = x.squeeze(-1);
  if (drv == "gels") rank = empty({0}, {DType::Int64, a.device()});
  if (drv != "gelsd" && drv != "gelss") s = empty({0}, o);
  return {x, residuals, rank, s.detach()};
}

// ---- norms ------------------------------------------------------------------------------------

Tensor vector_norm(const Tensor& x, double ord, IntList dims, bool keepdim,
                   std::optional<DType> dtype) {
  const char* op = "linalg.vector_norm";
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", op);
  EMBER_CHECK_TYPE(is_floating(x.dtype()),
                   "[{}] expected a floating point tensor as input: got {} (convert it with "
                   ".to(float32) first)",
                   op, x.dtype());
  EMBER_CHECK_TYPE(!dtype || is_floating(*dtype), "[{}] dtype must be floating: got {}", op,
                   *dtype);
  return ember::norm(dtype ? x.to(*dtype) : x, ord, dims, keepdim);
}

namespace {

// The two matrix dims of a matrix norm, wrapped and distinct.
std::pair<int64_t, int64_t> matrix_dims(const Tensor& a, IntList dims, const char* op) {
  EMBER_CHECK(a.dim() >= 2, "[{}] expected a tensor with 2 or more dims: got shape {}", op,
              shape_str(a.sizes()));
  EMBER_CHECK(dims.size() == 2, "[{}] dim must be a 2-tuple: got {} dims", op, dims.size());
  const int64_t d0 = wrap_dim(dims[0], a.dim(), op), d1 = wrap_dim(dims[1], a.dim(), op);
  EMBER_CHECK(d0 != d1, "[{}] dims must be different: got ({}, {})", op, dims[0], dims[1]);
  return {d0, d1};
}

// f of the singular values of `a` with the matrix dims (d0, d1) moved last.
template <typename F>
Tensor of_singular_values(const Tensor& a, int64_t d0, int64_t d1, bool keepdim, F f) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < a.dim(); ++i) {
    if (i != d0 && i != d1) perm.push_back(i);
  }
  perm.push_back(d0);
  perm.push_back(d1);
  Tensor r = f(svdvals(a.permute(perm)));
  if (keepdim) {
    r = r.unsqueeze(std::min(d0, d1)).unsqueeze(std::max(d0, d1));
  }
  return r;
}

void check_matrix_norm_input(const Tensor& a, std::optional<DType> dtype, const char* op) {
  EMBER_CHECK_TYPE(a.defined(), "[{}] undefined tensor argument", op);
  EMBER_CHECK_TYPE(is_floating(a.dtype()),
                   "[{}] expected a floating point tensor as input: got {} (convert it with "
                   ".to(float32) first)",
                   op, a.dtype());
  EMBER_CHECK_TYPE(!dtype || is_floating(*dtype), "[{}] dtype must be floating: got {}", op,
                   *dtype);
}

}  // namespace

Tensor matrix_norm(const Tensor& a_in, std::string_view ord, IntList dims, bool keepdim,
                   std::optional<DType> dtype) {
  const char* op = "linalg.matrix_norm";
  check_matrix_norm_input(a_in, dtype, op);
  const Tensor a = dtype ? a_in.to(*dtype) : a_in;
  const auto [d0, d1] = matrix_dims(a, dims, op);
  EMBER_CHECK(ord == "fro" || ord == "nuc",
              "[{}] order '{}' not supported: expected 'fro', 'nuc' or a number", op, ord);
  if (ord == "fro") return ember::norm(a, 2.0, {d0, d1}, keepdim);
  return of_singular_values(a, d0, d1, keepdim, [](const Tensor& s) { return sum(s, {-1}); });
}

Tensor matrix_norm(const Tensor& a_in, double ord, IntList dims, bool keepdim,
                   std::optional<DType> dtype) {
  const char* op = "linalg.matrix_norm";
  check_matrix_norm_input(a_in, dtype, op);
  const Tensor a = dtype ? a_in.to(*dtype) : a_in;
  const auto [d0, d1] = matrix_dims(a, dims, op);
  const bool inf = std::isinf(ord);
  EMBER_CHECK(inf || ord == 1 || ord == -1 || ord == 2 || ord == -2,
              "[{}] order {} not supported: expected 1, -1, 2, -2, inf, -inf, 'fro' or 'nuc'", op,
              ord);
  if (std::abs(ord) == 2) {
    return of_singular_values(a, d0, d1, keepdim, [ord](const Tensor& s) {
      return ord > 0 ? amax(s, {-1}) : amin(s, {-1});
    });
  }
  // 1: the largest column sum (sum over d0, then the extreme over d1); inf: of row sums.
  const int64_t summed = inf ? d1 : d0, other = inf ? d0 : d1;
  const Tensor sums = sum(abs(a), {summed}, /*keepdim=*/true);
  Tensor r = ord > 0 ? amax(sums, {other}, /*keepdim=*/true) : amin(sums, {other}, true);
  if (!keepdim) r = r.squeeze(std::max(d0, d1)).squeeze(std::min(d0, d1));
  return r;
}

Tensor norm(const Tensor& a, std::optional<double> ord, IntList dims, bool keepdim,
            std::optional<DType> dtype) {
  const char* op = "linalg.norm";
  EMBER_CHECK_TYPE(a.defined(), "[{}] undefined tensor argument", op);
  EMBER_CHECK(dims.size() <= 2, "[{}] dim must be an int or a 2-tuple: got {} dims", op,
              dims.size());
  if (dims.size() == 2 || (dims.empty() && ord && a.dim() == 2)) {
    if (!ord) return matrix_norm(a, "fro", dims.empty() ? IntList{-2, -1} : dims, keepdim, dtype);
    return matrix_norm(a, *ord, dims.empty() ? IntList{-2, -1} : dims, keepdim, dtype);
  }
  EMBER_CHECK(!ord || !dims.empty() || a.dim() == 1,
              "[{}] with ord given and no dim the input must be 1-d or 2-d: got shape {}", op,
              shape_str(a.sizes()));
  return vector_norm(a, ord.value_or(2.0), dims, keepdim, dtype);
}

Tensor norm(const Tensor& a, std::string_view ord, IntList dims, bool keepdim,
            std::optional<DType> dtype) {
  const char* op = "linalg.norm";
  EMBER_CHECK_TYPE(a.defined(), "[{}] undefined tensor argument", op);
  EMBER_CHECK(!dims.empty() || a.dim() == 2,
              "[{}] with ord '{}' and no dim the input must be 2-d: got shape {}", op, ord,
              shape_str(a.sizes()));
  return matrix_norm(a, ord, dims.empty() ? IntList{-2, -1} : dims, keepdim, dtype);
}

}  // namespace ember::linalg

namespace ember {

Tensor det(const Tensor& a) {
  return linalg::det(a);
}

Tensor inverse(const Tensor& a) {
  return linalg::inv(a);
}

std::tuple<Tensor, Tensor> slogdet(const Tensor& a) {
  return linalg::slogdet(a);
}

std::tuple<Tensor, Tensor, Tensor> lu_unpack(const Tensor& lu, const Tensor& pivots,
                                             bool unpack_data, bool unpack_pivots) {
  const char* op = "lu_unpack";
  EMBER_CHECK_TYPE(lu.defined() && pivots.defined(), "[{}] undefined tensor argument", op);
  EMBER_CHECK(lu.dim() >= 2, "[{}] LU must be a matrix or a batch of matrices: got shape {}", op,
              shape_str(lu.sizes()));
  const int64_t m = lu.size(-2), n = lu.size(-1), k = std::min(m, n);
  EMBER_CHECK_TYPE(is_integral(pivots.dtype()), "[{}] pivots must be an integer tensor: got {}", op,
                   pivots.dtype());
  EMBER_CHECK(pivots.dim() == lu.dim() - 1 && pivots.size(-1) == k,
              "[{}] pivots must have LU's batch and min(m, n) = {} entries: got shape {}", op, k,
              shape_str(pivots.sizes()));
  const TensorOptions o{lu.dtype(), lu.device()};
  const Tensor p =
      unpack_pivots ? linalg::permutation_of(pivots, m, lu.dtype(), lu.device()) : empty({0}, o);
  if (!unpack_data) return {p, empty({0}, o), empty({0}, o)};
  return {p, add(tril(lu.narrow(-1, 0, k), -1), eye(m, k, o)), triu(lu.narrow(-2, 0, k))};
}

std::tuple<Tensor, Tensor> triangular_solve(const Tensor& b, const Tensor& a, bool upper,
                                            bool transpose, bool unitriangular) {
  // A^T of an upper triangular A is lower triangular, and the other way round.
  const Tensor x = linalg::solve_triangular(transpose ? a.transpose(-2, -1) : a, b,
                                            upper != transpose, true, unitriangular);
  Shape batch = x.sizes();
  batch[batch.size() - 2] = a.size(-2);
  batch[batch.size() - 1] = a.size(-1);
  return {x, a.expand(batch).clone()};
}

// Note [Backward of cholesky_solve]
// The forward reads only the factor's triangle (two triangular solves); the gradient is
// PyTorch's, which takes A = L L^T of the whole factor: gB = cholesky_solve(gX, L) and, with
// G = gB X^T + X gB^T, gL = -G L (gU = -U G with upper). On a triangular factor, the usual
// input, its triangle agrees with the derivative of the forward; the other entries are
// PyTorch's too.
Tensor cholesky_solve(const Tensor& b, const Tensor& factor, bool upper) {
  EMBER_CHECK_TYPE(b.defined() && factor.defined(), "[cholesky_solve] undefined tensor argument");
  return autograd::differentiable(
      "CholeskySolveBackward", "cholesky_solve", {&b, &factor},
      [&] {
        const Tensor l = upper ? factor.transpose(-2, -1) : factor;
        const Tensor y = linalg::solve_triangular(l, b, false);
        return linalg::solve_triangular(l.transpose(-2, -1), y, true);
      },
      [&] {
        return [sf = autograd::SavedTensor(factor), mb = autograd::TensorMeta(b),
                mf = autograd::TensorMeta(factor),
                upper](const std::vector<Tensor>& g, const autograd::LambdaNode& self) {
          const Tensor f = self.unpack(sf), x = self.saved_output(0);
          const Tensor gb = cholesky_solve(g[0], f, upper);
          const Tensor gx = matmul(gb, x.transpose(-2, -1));
          const Tensor common = add(gx, gx.transpose(-2, -1));
          const Tensor gf = neg(upper ? matmul(f, common) : matmul(common, f));
          return std::vector<Tensor>{autograd::reduce_grad(gb, mb), autograd::reduce_grad(gf, mf)};
        };
      },
      /*save_output=*/true);
}

Tensor cholesky_inverse(const Tensor& factor, bool upper) {
  EMBER_CHECK_TYPE(factor.defined(), "[cholesky_inverse] undefined tensor argument");
  EMBER_CHECK(factor.dim() >= 2 && factor.size(-1) == factor.size(-2),
              "[cholesky_inverse] expected a batch of square matrices: got shape {}",
              shape_str(factor.sizes()));
  const int64_t n = factor.size(-1);
  return cholesky_solve(eye(n, n, {factor.dtype(), factor.device()}), factor, upper);
}

Tensor logdet(const Tensor& a) {
  auto [sign, logabs] = linalg::slogdet(a);
  return where(ge(sign, 0), logabs, std::nan(""));
}

}  // namespace ember
