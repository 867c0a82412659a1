// Reference factorizations (kernel contract in core/ops/linalg_decomp.cpp), textbook algorithms
// in double, independent of LAPACK, one matrix of the batch at a time: LU with partial pivoting
// (Doolittle, as getf2) and its triangular solves, Cholesky (as potf2), Householder QR (as geqr2
// and org2r, with LAPACK's sign convention), the cyclic Jacobi eigenvalue method for symmetric
// matrices and one-sided (Hestenes) Jacobi for the SVD.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "backends/reference/ops/ops.h"
#include "backends/reference/walk.h"

namespace ember::reference {
namespace {

/** A dense row-major matrix of doubles. */
struct Mat {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  Mat(int64_t r, int64_t c) : rows(r), cols(c), v(static_cast<size_t>(r * c), 0.0) {}
  double& operator()(int64_t i, int64_t j) { return v[static_cast<size_t>(i * cols + j)]; }
  double operator()(int64_t i, int64_t j) const { return v[static_cast<size_t>(i * cols + j)]; }
};

constexpr int kMaxSweeps = 100;

bool is_dense(const ember_tensor& t) {
  int64_t expect = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (t.sizes[d] != 1 && t.strides[d] != expect) return false;
    expect *= t.sizes[d];
  }
  return true;
}

/** Checks the operands are contiguous 3-d batches of float32/float64 (the contract). */
int32_t check_operands(const ember_kernel_call* call, const char* name) {
  for (int32_t i = 0; i < call->num_inputs; ++i) {
    if (!is_dense(call->inputs[i])) {
      return sdk::fail(call, EMBER_ERR_INVALID, "%s: input %d is not contiguous", name, i);
    }
  }
  for (int32_t i = 0; i < call->num_outputs; ++i) {
    if (!is_dense(call->outputs[i])) {
      return sdk::fail(call, EMBER_ERR_INVALID, "%s: output %d is not contiguous", name, i);
    }
  }
  const int32_t dt = call->inputs[0].dtype;
  if (dt != EMBER_F32 && dt != EMBER_F64) {
    return sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: float32 and float64 only", name);
  }
  return EMBER_OK;
}

template <typename T>
Mat load(const ember_tensor& t, int64_t b) {
  const int64_t r = t.sizes[1], c = t.sizes[2];
  Mat m(r, c);
  const T* p = static_cast<const T*>(t.data) + b * r * c;
  for (int64_t i = 0; i < r * c; ++i) m.v[static_cast<size_t>(i)] = static_cast<double>(p[i]);
  return m;
}

template <typename T>
void store(const ember_tensor& t, int64_t b, const Mat& m) {
  T* p = static_cast<T*>(t.data) + b * m.rows * m.cols;
  for (int64_t i = 0; i < m.rows * m.cols; ++i) p[i] = static_cast<T>(m.v[static_cast<size_t>(i)]);
}

template <typename T>
void store_vec(const ember_tensor& t, int64_t b, const std::vector<double>& x) {
  T* p = static_cast<T*>(t.data) + b * static_cast<int64_t>(x.size());
  for (size_t i = 0; i < x.size(); ++i) p[i] = static_cast<T>(x[i]);
}

int64_t* int64_data(const ember_tensor& t) {
  return static_cast<int64_t*>(t.data);
}

/** Runs fn<T>() for the call's dtype (float32 or float64). */
template <typename Fn>
int32_t by_dtype(const ember_kernel_call* call, Fn&& fn) {
  if (call->inputs[0].dtype == EMBER_F32) {
    fn(float{});
  } else {
    fn(double{});
  }
  return EMBER_OK;
}

// ---- LU --------------------------------------------------------------------------------------

/** In place: A = P L U; returns info (0 or the first 1-based k with U[k-1, k-1] == 0). */
int64_t lu(Mat& a, std::vector<int64_t>& piv) {
  const int64_t n = a.rows;
  int64_t info = 0;
  for (int64_t j = 0; j < n; ++j) {
    int64_t p = j;
    for (int64_t i = j + 1; i < n; ++i) {
      if (std::abs(a(i, j)) > std::abs(a(p, j))) p = i;
    }
    piv[static_cast<size_t>(j)] = p + 1;
    if (a(p, j) != 0.0) {
      if (p != j) {
        for (int64_t c = 0; c < n; ++c) std::swap(a(p, c), a(j, c));
      }
      for (int64_t i = j + 1; i < n; ++i) a(i, j) /= a(j, j);
    } else if (info == 0) {
      info = j + 1;
    }
    for (int64_t i = j + 1; i < n; ++i) {
      for (int64_t c = j + 1; c < n; ++c) a(i, c) -= a(i, j) * a(j, c);
    }
  }
  return info;
}

/** Solves A X = Y (or A^T X = Y) in place in y, A given by its LU factors and pivots. */
void lu_solve(const Mat& lu, const int64_t* piv, Mat& y, bool adjoint) {
  const int64_t n = lu.rows, k = y.cols;
  auto swap_rows = [&](int64_t i) {
    const int64_t p = piv[i] - 1;
    if (p != i) {
      for (int64_t c = 0; c < k; ++c) std::swap(y(i, c), y(p, c));
    }
  };
  if (!adjoint) {
    for (int64_t i = 0; i < n; ++i) swap_rows(i);
    for (int64_t c = 0; c < k; ++c) {
      for (int64_t i = 0; i < n; ++i) {  // L z = y, L unit lower
        for (int64_t j = 0; j < i; ++j) y(i, c) -= lu(i, j) * y(j, c);
      }
      for (int64_t i = n - 1; i >= 0; --i) {  // U x = z
        for (int64_t j = i + 1; j < n; ++j) y(i, c) -= lu(i, j) * y(j, c);
        y(i, c) /= lu(i, i);
      }
    }
    return;
  }
  // A^T = U^T L^T P^T: U^T z = y, L^T w = z, x = P w.
  for (int64_t c = 0; c < k; ++c) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < i; ++j) y(i, c) -= lu(j, i) * y(j, c);
      y(i, c) /= lu(i, i);
    }
    for (int64_t i = n - 1; i >= 0; --i) {
      for (int64_t j = i + 1; j < n; ++j) y(i, c) -= lu(j, i) * y(j, c);
    }
  }
  for (int64_t i = n - 1; i >= 0; --i) swap_rows(i);
}

// ---- Householder QR ---------------------------------------------------------------------------

/** Q [m, c] and R [c, n] of A by Householder reflections (LAPACK's geqr2 and org2r). */
void householder_qr(Mat a, int64_t c, Mat& q, Mat& r) {
  const int64_t m = a.rows, n = a.cols, k = std::min(m, n);
  std::vector<double> tau(static_cast<size_t>(k), 0.0);
  for (int64_t j = 0; j < k; ++j) {
    double xnorm = 0;
    for (int64_t i = j + 1; i < m; ++i) xnorm = std::hypot(xnorm, a(i, j));
    if (xnorm == 0.0) continue;  // H = I: the column is already reduced
    const double alpha = a(j, j);
    const double beta = -std::copysign(std::hypot(alpha, xnorm), alpha);
    tau[static_cast<size_t>(j)] = (beta - alpha) / beta;
    for (int64_t i = j + 1; i < m; ++i) a(i, j) /= alpha - beta;  // v below the implicit 1
    a(j, j) = beta;
    for (int64_t col = j + 1; col < n; ++col) {
      double w = a(j, col);
      for (int64_t i = j + 1; i < m; ++i) w += a(i, j) * a(i, col);
      w *= tau[static_cast<size_t>(j)];
      a(j, col) -= w;
      for (int64_t i = j + 1; i < m; ++i) a(i, col) -= a(i, j) * w;
    }
  }
  for (int64_t i = 0; i < c; ++i) {
    for (int64_t j = 0; j < n; ++j) r(i, j) = j >= i && i < k ? a(i, j) : 0.0;
  }
  // Q = H_0 ... H_{k-1} I[:, :c], applied from the last reflector on.
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < c; ++j) q(i, j) = i == j ? 1.0 : 0.0;
  }
  for (int64_t j = k - 1; j >= 0; --j) {
    const double t = tau[static_cast<size_t>(j)];
    if (t == 0.0) continue;
    for (int64_t col = 0; col < c; ++col) {
      double w = q(j, col);
      for (int64_t i = j + 1; i < m; ++i) w += a(i, j) * q(i, col);
      w *= t;
      q(j, col) -= w;
      for (int64_t i = j + 1; i < m; ++i) q(i, col) -= a(i, j) * w;
    }
  }
}

// ---- Jacobi -----------------------------------------------------------------------------------

/** Eigenvalues (ascending) and eigenvectors (columns of v) of symmetric a by cyclic Jacobi
 *  rotations; false if it did not converge in kMaxSweeps sweeps. */
bool jacobi_eigen(Mat a, std::vector<double>& w, Mat& v) {
  const int64_t n = a.rows;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) v(i, j) = i == j ? 1.0 : 0.0;
  }
  // A pair is rotated while its off-diagonal element is not negligible next to its diagonal
  // ones (Demmel and Veselic's relative test); a rotated pair's element is zero exactly.
  const double eps = std::numeric_limits<double>::epsilon();
  double frob2 = 0;
  for (double x : a.v) frob2 += x * x;
  // Below eps ||A|| / 1000 an off-diagonal element moves no eigenvalue by more than rounding.
  const double tiny =
      std::max(std::numeric_limits<double>::min() / eps, eps * 1e-3 * std::sqrt(frob2));
  bool converged = false;
  for (int sweep = 0; sweep < kMaxSweeps && !converged; ++sweep) {
    converged = true;
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = a(p, q);
        if (std::abs(apq) <= eps * std::sqrt(std::abs(a(p, p) * a(q, q))) || std::abs(apq) < tiny) {
          a(p, q) = a(q, p) = 0.0;
          continue;
        }
        converged = false;
        const double theta = (a(q, q) - a(p, p)) / (2 * apq);
        const double t = std::copysign(1.0, theta) / (std::abs(theta) + std::hypot(theta, 1.0));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int64_t k = 0; k < n; ++k) {  // A <- A J (columns p, q)
          const double akp = a(k, p), akq = a(k, q);
          a(k, p) = c * akp - s * akq;
          a(k, q) = s * akp + c * akq;
        }
        for (int64_t k = 0; k < n; ++k) {  // A <- J^T A (rows p, q)
          const double apk = a(p, k), aqk = a(q, k);
          a(p, k) = c * apk - s * aqk;
          a(q, k) = s * apk + c * aqk;
        }
        a(p, q) = a(q, p) = 0.0;
        for (int64_t k = 0; k < n; ++k) {  // V <- V J
          const double vkp = v(k, p), vkq = v(k, q);
          v(k, p) = c * vkp - s * vkq;
          v(k, q) = s * vkp + c * vkq;
        }
      }
    }
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return a(x, x) < a(y, y); });
  Mat sorted(n, n);
  w.assign(static_cast<size_t>(n), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t from = order[static_cast<size_t>(j)];
    w[static_cast<size_t>(j)] = a(from, from);
    for (int64_t i = 0; i < n; ++i) sorted(i, j) = v(i, from);
  }
  v = sorted;
  return converged;
}

/** Fills the columns of q [m, c] not in `have` with an orthonormal completion (Gram-Schmidt of
 *  the unit vectors against the columns present, twice for accuracy). */
void complete_basis(Mat& q, std::vector<bool> have) {
  const int64_t m = q.rows, c = q.cols;
  int64_t next_unit = 0;
  for (int64_t j = 0; j < c; ++j) {
    if (have[static_cast<size_t>(j)]) continue;
    for (; next_unit < m; ++next_unit) {
      std::vector<double> x(static_cast<size_t>(m), 0.0);
      x[static_cast<size_t>(next_unit)] = 1.0;
      for (int pass = 0; pass < 2; ++pass) {
        for (int64_t o = 0; o < c; ++o) {
          if (!have[static_cast<size_t>(o)]) continue;
          double d = 0;
          for (int64_t i = 0; i < m; ++i) d += q(i, o) * x[static_cast<size_t>(i)];
          for (int64_t i = 0; i < m; ++i) x[static_cast<size_t>(i)] -= d * q(i, o);
        }
      }
      double norm = 0;
      for (double e : x) norm += e * e;
      norm = std::sqrt(norm);
      if (norm > 0.5) {
        for (int64_t i = 0; i < m; ++i) q(i, j) = x[static_cast<size_t>(i)] / norm;
        have[static_cast<size_t>(j)] = true;
        ++next_unit;
        break;
      }
    }
  }
}

/** SVD of a (m >= n) by one-sided Jacobi: u [m, cu], s [n] descending, v [n, n] (A = U S V^T);
 *  false if it did not converge. */
bool jacobi_svd_tall(Mat w, int64_t cu, Mat& u, std::vector<double>& s, Mat& v) {
  const int64_t m = w.rows, n = w.cols;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) v(i, j) = i == j ? 1.0 : 0.0;
  }
  const double eps = std::numeric_limits<double>::epsilon();
  double frob2 = 0;
  for (double x : w.v) frob2 += x * x;
  const double negligible = eps * eps * frob2;
  bool converged = false;
  for (int sweep = 0; sweep < kMaxSweeps && !converged; ++sweep) {
    converged = true;
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) {
        double alpha = 0, beta = 0, gamma = 0;
        for (int64_t i = 0; i < m; ++i) {
          alpha += w(i, p) * w(i, p);
          beta += w(i, q) * w(i, q);
          gamma += w(i, p) * w(i, q);
        }
        // Rounding leaves |gamma| near m eps sqrt(alpha beta) after a rotation; a column of
        // norm below eps ||A|| is zero to rounding (rank deficiency) and rotating it against
        // another only stirs the rounding noise, so neither is rotated.
        if (gamma == 0.0 || std::min(alpha, beta) <= negligible ||
            std::abs(gamma) <= 4 * eps * static_cast<double>(m) * std::sqrt(alpha * beta)) {
          continue;
        }
        converged = false;
        const double zeta = (beta - alpha) / (2 * gamma);
        const double t = std::copysign(1.0, zeta) / (std::abs(zeta) + std::hypot(zeta, 1.0));
        const double c = 1 / std::sqrt(1 + t * t), sn = c * t;
        for (int64_t i = 0; i < m; ++i) {
          const double wp = w(i, p), wq = w(i, q);
          w(i, p) = c * wp - sn * wq;
          w(i, q) = sn * wp + c * wq;
        }
        for (int64_t i = 0; i < n; ++i) {
          const double vp = v(i, p), vq = v(i, q);
          v(i, p) = c * vp - sn * vq;
          v(i, q) = sn * vp + c * vq;
        }
      }
    }
  }
  std::vector<double> norms(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    double x = 0;
    for (int64_t i = 0; i < m; ++i) x += w(i, j) * w(i, j);
    norms[static_cast<size_t>(j)] = std::sqrt(x);
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
    return norms[static_cast<size_t>(x)] > norms[static_cast<size_t>(y)];
  });
  const double smax = n > 0 ? norms[static_cast<size_t>(order[0])] : 0.0;
  Mat vs(n, n);
  s.assign(static_cast<size_t>(n), 0.0);
  std::vector<bool> have(static_cast<size_t>(cu), false);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t from = order[static_cast<size_t>(j)];
    const double sj = norms[static_cast<size_t>(from)];
    s[static_cast<size_t>(j)] = sj;
    for (int64_t i = 0; i < n; ++i) vs(i, j) = v(i, from);
    // A column whose singular value is zero (to rounding) has no direction of its own.
    if (sj > smax * eps * static_cast<double>(m) && sj > 0.0) {
      for (int64_t i = 0; i < m; ++i) u(i, j) = w(i, from) / sj;
      have[static_cast<size_t>(j)] = true;
    }
  }
  complete_basis(u, have);
  v = vs;
  return converged;
}

/** SVD of any a: u [m, cu], s [k], vh [cv, n]. */
bool jacobi_svd(const Mat& a, bool full, Mat& u, std::vector<double>& s, Mat& vh) {
  const int64_t m = a.rows, n = a.cols;
  if (m >= n) {
    Mat v(n, n);
    const bool ok = jacobi_svd_tall(a, full ? m : n, u, s, v);
    for (int64_t i = 0; i < vh.rows; ++i) {
      for (int64_t j = 0; j < n; ++j) vh(i, j) = v(j, i);
    }
    return ok;
  }
  // A^T = U' S V'^T, so A = V' S U'^T.
  Mat at(n, m);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) at(j, i) = a(i, j);
  }
  Mat up(n, full ? n : m), vp(m, m);
  const bool ok = jacobi_svd_tall(at, full ? n : m, up, s, vp);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < u.cols; ++j) u(i, j) = vp(i, j);
  }
  for (int64_t i = 0; i < vh.rows; ++i) {
    for (int64_t j = 0; j < n; ++j) vh(i, j) = up(j, i);
  }
  return ok;
}

}  // namespace

int32_t linalg_lu_factor(const ember_kernel_call* call) {
  if (const int32_t st = check_operands(call, "linalg_lu_factor"); st != EMBER_OK) return st;
  const ember_tensor &a = call->inputs[0], &out = call->outputs[0];
  const int64_t batch = a.sizes[0], n = a.sizes[1];
  return by_dtype(call, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < batch; ++b) {
      Mat m = load<T>(a, b);
      std::vector<int64_t> piv(static_cast<size_t>(n));
      int64_data(call->outputs[2])[b] = lu(m, piv);
      store<T>(out, b, m);
      std::copy(piv.begin(), piv.end(), int64_data(call->outputs[1]) + b * n);
    }
  });
}

int32_t linalg_lu_solve(const ember_kernel_call* call) {
  if (const int32_t st = check_operands(call, "linalg_lu_solve"); st != EMBER_OK) return st;
  const bool adjoint = sdk::attrs<attrs::linalg_lu_solve>(call).adjoint != 0;
  const ember_tensor &a = call->inputs[0], &rhs = call->inputs[2];
  const int64_t n = a.sizes[1];
  return by_dtype(call, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < a.sizes[0]; ++b) {
      const Mat lu = load<T>(a, b);
      Mat y = load<T>(rhs, b);
      lu_solve(lu, int64_data(call->inputs[1]) + b * n, y, adjoint);
      store<T>(call->outputs[0], b, y);
    }
  });
}

int32_t linalg_cholesky(const ember_kernel_call* call) {
  if (const int32_t st = check_operands(call, "linalg_cholesky"); st != EMBER_OK) return st;
  const ember_tensor& a = call->inputs[0];
  const int64_t n = a.sizes[1];
  return by_dtype(call, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < a.sizes[0]; ++b) {
      const Mat m = load<T>(a, b);
      Mat l(n, n);
      int64_t info = 0;
      for (int64_t j = 0; j < n && info == 0; ++j) {
        double d = m(j, j);
        for (int64_t k = 0; k < j; ++k) d -= l(j, k) * l(j, k);
        if (!(d > 0.0)) {  // NaN too
          info = j + 1;
          break;
        }
        l(j, j) = std::sqrt(d);
        for (int64_t i = j + 1; i < n; ++i) {
          double x = m(i, j);  // the lower triangle only
          for (int64_t k = 0; k < j; ++k) x -= l(i, k) * l(j, k);
          l(i, j) = x / l(j, j);
        }
      }
      int64_data(call->outputs[1])[b] = info;
      store<T>(call->outputs[0], b, l);
    }
  });
}

int32_t linalg_qr(const ember_kernel_call* call) {
  if (const int32_t st = check_operands(call, "linalg_qr"); st != EMBER_OK) return st;
  const ember_tensor& a = call->inputs[0];
  const int64_t m = a.sizes[1], n = a.sizes[2];
  const int64_t c = sdk::attrs<attrs::linalg_qr>(call).complete != 0 ? m : std::min(m, n);
  return by_dtype(call, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < a.sizes[0]; ++b) {
      Mat q(m, c), r(c, n);
      householder_qr(load<T>(a, b), c, q, r);
      store<T>(call->outputs[0], b, q);
      store<T>(call->outputs[1], b, r);
    }
  });
}

int32_t linalg_eigh(const ember_kernel_call* call) {
  if (const int32_t st = check_operands(call, "linalg_eigh"); st != EMBER_OK) return st;
  const ember_tensor& a = call->inputs[0];
  const bool upper = sdk::attrs<attrs::linalg_eigh>(call).upper != 0;
  const int64_t n = a.sizes[1];
  return by_dtype(call, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < a.sizes[0]; ++b) {
      const Mat m = load<T>(a, b);
      Mat sym(n, n), v(n, n);
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j <= i; ++j) sym(i, j) = sym(j, i) = upper ? m(j, i) : m(i, j);
      }
      std::vector<double> w;
      int64_data(call->outputs[2])[b] = jacobi_eigen(sym, w, v) ? 0 : 1;
      store_vec<T>(call->outputs[0], b, w);
      store<T>(call->outputs[1], b, v);
    }
  });
}

int32_t linalg_svd(const ember_kernel_call* call) {
  if (const int32_t st = check_operands(call, "linalg_svd"); st != EMBER_OK) return st;
  const ember_tensor& a = call->inputs[0];
  const bool full = sdk::attrs<attrs::linalg_svd>(call).full_matrices != 0;
  const int64_t m = a.sizes[1], n = a.sizes[2], k = std::min(m, n);
  return by_dtype(call, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < a.sizes[0]; ++b) {
      Mat u(m, full ? m : k), vh(full ? n : k, n);
      std::vector<double> s;
      int64_data(call->outputs[3])[b] = jacobi_svd(load<T>(a, b), full, u, s, vh) ? 0 : 1;
      store<T>(call->outputs[0], b, u);
      store_vec<T>(call->outputs[1], b, s);
      store<T>(call->outputs[2], b, vh);
    }
  });
}

}  // namespace ember::reference
