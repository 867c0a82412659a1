// The factorizations of torch.linalg (kernel contract in core/ops/linalg_decomp.cpp) through
// LAPACK: getrf/getrs, potrf, geqrf/orgqr, syevd and gesdd, one matrix of the batch at a time,
// each copied between Ember's row-major layout and LAPACK's column-major one.
//
// Note [LAPACK in the CPU backend]
// The plugin links the system's liblapack.so.3 (find_package(LAPACK)), and its Debian package
// depends on libopenblas0-openmp, which provides it. Measured on the 2-core development machine
// (float64, best of 5 at 256 and of 2 at 1024, one thread, the machine shared with other builds):
//                         solve (n right-hand sides)   svd (gesdd)    eigh (syevd)
//   reference LAPACK 256           23.4 ms                71.8 ms        27.8 ms
//   OpenBLAS (pthread)              1.6 ms                15.2 ms         8.5 ms
//   OpenBLAS (openmp)               1.7 ms                14.2 ms         4.5 ms
//   reference LAPACK 1024        1215   ms              3756   ms      1718   ms
//   OpenBLAS (pthread)            117   ms               607   ms       235   ms
//   OpenBLAS (openmp)             141   ms               734   ms       323   ms
// OpenBLAS is 5 to 15 times faster than the reference LAPACK. Of its two threaded builds the
// OpenMP one runs on GNU OpenMP, the runtime of Ember's own loops and of oneDNN, so all three
// share one pool (Note [One thread pool] in plugin.cpp) and one thread count: OpenBLAS asks
// omp_get_max_threads() on every call, so set_num_threads reaches it, and so does the one
// thread of a forked child (Note [Forked children run on one thread]; an SVD, solve and eigh in
// a child forked after large ones in the parent run). The pthread build would start a pool of
// its own and oversubscribe the cores whenever both are busy. With the cores oversubscribed by
// other processes (load 12 on 2 cores), two OpenMP threads wait for each other as Ember's loops
// do: a 256 SVD took 3.7 s against 70 ms on one thread, and 100 ms with OMP_WAIT_POLICY=passive;
// set_num_threads(1) or that policy is the remedy there. LAPACK's integers are 32-bit (LP64): a
// matrix with a dimension over INT32_MAX is refused.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "backends/cpu/ops/ops.h"

extern "C" {
// LAPACK's Fortran symbols; each character argument has a hidden length argument at the end.
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a, const int* lda,
             const int* ipiv, float* b, const int* ldb, int* info, size_t);
void dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* lda,
             const int* ipiv, double* b, const int* ldb, int* info, size_t);
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work,
             const int* lwork, int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
             const int* lwork, int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau,
             float* work, const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau,
             double* work, const int* lwork, int* info);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w,
             float* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t,
             size_t);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
             double* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t,
             size_t);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s,
             float* u, const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork,
             int* iwork, int* info, size_t);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s,
             double* u, const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork,
             int* iwork, int* info, size_t);
}

namespace ember::cpu {
namespace {

// One overload set per routine, so the kernels are written once for float and double.
void getrf(int m, int n, float* a, int* ipiv, int* info) {
  sgetrf_(&m, &n, a, &m, ipiv, info);
}
void getrf(int m, int n, double* a, int* ipiv, int* info) {
  dgetrf_(&m, &n, a, &m, ipiv, info);
}
void getrs(char t, int n, int k, const float* a, const int* ipiv, float* b, int* info) {
  sgetrs_(&t, &n, &k, a, &n, ipiv, b, &n, info, 1);
}
void getrs(char t, int n, int k, const double* a, const int* ipiv, double* b, int* info) {
  dgetrs_(&t, &n, &k, a, &n, ipiv, b, &n, info, 1);
}
void potrf(int n, float* a, int* info) {
  spotrf_("L", &n, a, &n, info, 1);
}
void potrf(int n, double* a, int* info) {
  dpotrf_("L", &n, a, &n, info, 1);
}
void geqrf(int m, int n, float* a, float* tau, float* work, int lwork, int* info) {
  sgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
}
void geqrf(int m, int n, double* a, double* tau, double* work, int lwork, int* info) {
  dgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, float* a, const float* tau, float* work, int lwork, int* info) {
  sorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, double* a, const double* tau, double* work, int lwork, int* info) {
  dorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}
void syevd(char uplo, int n, float* a, float* w, float* work, int lwork, int* iwork, int liwork,
           int* info) {
  ssyevd_("V", &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
}
void syevd(char uplo, int n, double* a, double* w, double* work, int lwork, int* iwork, int liwork,
           int* info) {
  dsyevd_("V", &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
}
void gesdd(char jobz, int m, int n, float* a, float* s, float* u, int ldu, float* vt, int ldvt,
           float* work, int lwork, int* iwork, int* info) {
  sgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}
void gesdd(char jobz, int m, int n, double* a, double* s, double* u, int ldu, double* vt, int ldvt,
           double* work, int lwork, int* iwork, int* info) {
  dgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}

/** Matrix b of a [B, r, c] row-major batch into a column-major buffer. */
template <typename T>
void to_col_major(const ember_tensor& t, int64_t b, std::vector<T>& out) {
  const int64_t r = t.sizes[1], c = t.sizes[2];
  const T* p = static_cast<const T*>(t.data) + b * r * c;
  out.resize(static_cast<size_t>(r * c));
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) out[static_cast<size_t>(i + j * r)] = p[i * c + j];
  }
}

/** A column-major buffer (leading dimension ld) into matrix b of a [B, r, c] row-major batch. */
template <typename T>
void from_col_major(const T* src, int64_t ld, const ember_tensor& t, int64_t b) {
  const int64_t r = t.sizes[1], c = t.sizes[2];
  T* p = static_cast<T*>(t.data) + b * r * c;
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) p[i * c + j] = src[i + j * ld];
  }
}

int32_t check_operands(const ember_kernel_call* call, const char* name) {
  for (int32_t i = 0; i < call->num_inputs + call->num_outputs; ++i) {
    const ember_tensor& t =
        i < call->num_inputs ? call->inputs[i] : call->outputs[i - call->num_inputs];
    int64_t expect = 1;
    for (int32_t d = t.ndim - 1; d >= 0; --d) {
      if (t.sizes[d] > INT_MAX) {
        return sdk::fail(call, EMBER_ERR_UNSUPPORTED,
                         "%s: a dimension of %lld is beyond LAPACK's 32-bit integers", name,
                         static_cast<long long>(t.sizes[d]));
      }
      if (t.sizes[d] != 1 && t.strides[d] != expect) {
        return sdk::fail(call, EMBER_ERR_INVALID, "%s: operand %d is not contiguous", name, i);
      }
      expect *= t.sizes[d];
    }
  }
  return EMBER_OK;
}

template <typename Fn>
int32_t by_dtype(const ember_kernel_call* call, const char* name, Fn&& fn) {
  if (const int32_t st = check_operands(call, name); st != EMBER_OK) return st;
  switch (call->inputs[0].dtype) {
    case EMBER_F32:
      return fn(float{});
    case EMBER_F64:
      return fn(double{});
    default:
      return sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: float32 and float64 only", name);
  }
}

int64_t* int64_data(const ember_tensor& t) {
  return static_cast<int64_t*>(t.data);
}

/** The size LAPACK asked for in a workspace query (at least 1). */
template <typename T>
int work_size(T query) {
  return std::max(1, static_cast<int>(query));
}

}  // namespace

EMBER_KERNEL(linalg_lu_factor) {
  return by_dtype(call, "linalg_lu_factor", [&](auto tag) -> int32_t {
    using T = decltype(tag);
    const ember_tensor& a = call->inputs[0];
    const int n = static_cast<int>(a.sizes[1]);
    std::vector<T> buf;
    std::vector<int> ipiv(static_cast<size_t>(n));
    for (int64_t b = 0; b < a.sizes[0]; ++b) {
      to_col_major(a, b, buf);
      int info = 0;
      getrf(n, n, buf.data(), ipiv.data(), &info);
      if (info < 0) return sdk::fail(call, EMBER_ERR_INTERNAL, "getrf: argument %d", -info);
      from_col_major(buf.data(), n, call->outputs[0], b);
      std::copy(ipiv.begin(), ipiv.end(), int64_data(call->outputs[1]) + b * n);
      int64_data(call->outputs[2])[b] = info;
    }
    return EMBER_OK;
  });
}

EMBER_KERNEL(linalg_lu_solve) {
  return by_dtype(call, "linalg_lu_solve", [&](auto tag) -> int32_t {
    using T = decltype(tag);
    const ember_tensor &lu = call->inputs[0], &y = call->inputs[2];
    const int n = static_cast<int>(lu.sizes[1]), k = static_cast<int>(y.sizes[2]);
    const char trans = sdk::attrs<attrs::linalg_lu_solve>(call).adjoint != 0 ? 'T' : 'N';
    std::vector<T> a, rhs;
    std::vector<int> ipiv(static_cast<size_t>(n));
    for (int64_t b = 0; b < lu.sizes[0]; ++b) {
      to_col_major(lu, b, a);
      to_col_major(y, b, rhs);
      const int64_t* piv = int64_data(call->inputs[1]) + b * n;
      for (int i = 0; i < n; ++i) ipiv[static_cast<size_t>(i)] = static_cast<int>(piv[i]);
      int info = 0;
      getrs(trans, n, k, a.data(), ipiv.data(), rhs.data(), &info);
      if (info < 0) return sdk::fail(call, EMBER_ERR_INTERNAL, "getrs: argument %d", -info);
      from_col_major(rhs.data(), n, call->outputs[0], b);
    }
    return EMBER_OK;
  });
}

EMBER_KERNEL(linalg_cholesky) {
  return by_dtype(call, "linalg_cholesky", [&](auto tag) -> int32_t {
    using T = decltype(tag);
    const ember_tensor& a = call->inputs[0];
    const int n = static_cast<int>(a.sizes[1]);
    std::vector<T> buf;
    for (int64_t b = 0; b < a.sizes[0]; ++b) {
      to_col_major(a, b, buf);
      int info = 0;
      potrf(n, buf.data(), &info);
      if (info < 0) return sdk::fail(call, EMBER_ERR_INTERNAL, "potrf: argument %d", -info);
      // OpenBLAS's potrf takes a NaN pivot for a positive one (the reference LAPACK does not);
      // a NaN anywhere in the lower triangle reaches the diagonal, so the contract's "not
      // positive (or NaN)" is checked there.
      for (int j = 0; j < n && info == 0; ++j) {
        if (!(buf[static_cast<size_t>(j + j * n)] > T(0))) info = j + 1;
      }
      for (int j = 0; j < n; ++j) {  // potrf leaves the upper triangle as it was
        for (int i = 0; i < j; ++i) buf[static_cast<size_t>(i + j * n)] = T(0);
      }
      from_col_major(buf.data(), n, call->outputs[0], b);
      int64_data(call->outputs[1])[b] = info;
    }
    return EMBER_OK;
  });
}

EMBER_KERNEL(linalg_qr) {
  return by_dtype(call, "linalg_qr", [&](auto tag) -> int32_t {
    using T = decltype(tag);
    const ember_tensor& a = call->inputs[0];
    const int m = static_cast<int>(a.sizes[1]), n = static_cast<int>(a.sizes[2]);
    const int k = std::min(m, n);
    const int c = static_cast<int>(call->outputs[0].sizes[2]);  // m (complete) or k
    std::vector<T> buf, tau(static_cast<size_t>(std::max(k, 1))), q, r;
    for (int64_t b = 0; b < a.sizes[0]; ++b) {
      to_col_major(a, b, buf);
      int info = 0;
      T query{};
      geqrf(m, n, buf.data(), tau.data(), &query, -1, &info);
      std::vector<T> work(static_cast<size_t>(work_size(query)));
      geqrf(m, n, buf.data(), tau.data(), work.data(), static_cast<int>(work.size()), &info);
      if (info < 0) return sdk::fail(call, EMBER_ERR_INTERNAL, "geqrf: argument %d", -info);
      // R: the upper triangle of the first c rows.
      r.assign(static_cast<size_t>(c) * static_cast<size_t>(n), T(0));
      for (int j = 0; j < n; ++j) {
        for (int i = 0; i <= std::min(j, k - 1); ++i) {
          r[static_cast<size_t>(i + j * c)] = buf[static_cast<size_t>(i + j * m)];
        }
      }
      from_col_major(r.data(), c, call->outputs[1], b);
      // Q: the reflectors in the first min(c, n) columns of an m x c buffer, formed by orgqr.
      q.assign(static_cast<size_t>(m) * static_cast<size_t>(c), T(0));
      std::copy_n(buf.begin(), static_cast<size_t>(m) * static_cast<size_t>(std::min(c, n)),
                  q.begin());
      orgqr(m, c, k, q.data(), tau.data(), &query, -1, &info);
      work.resize(static_cast<size_t>(work_size(query)));
      orgqr(m, c, k, q.data(), tau.data(), work.data(), static_cast<int>(work.size()), &info);
      if (info < 0) return sdk::fail(call, EMBER_ERR_INTERNAL, "orgqr: argument %d", -info);
      from_col_major(q.data(), m, call->outputs[0], b);
    }
    return EMBER_OK;
  });
}

EMBER_KERNEL(linalg_eigh) {
  return by_dtype(call, "linalg_eigh", [&](auto tag) -> int32_t {
    using T = decltype(tag);
    const ember_tensor& a = call->inputs[0];
    const int n = static_cast<int>(a.sizes[1]);
    const char uplo = sdk::attrs<attrs::linalg_eigh>(call).upper != 0 ? 'U' : 'L';
    std::vector<T> buf;
    for (int64_t b = 0; b < a.sizes[0]; ++b) {
      to_col_major(a, b, buf);
      T* w = static_cast<T*>(call->outputs[0].data) + b * n;
      int info = 0, iquery = 0;
      T query{};
      syevd(uplo, n, buf.data(), w, &query, -1, &iquery, -1, &info);
      std::vector<T> work(static_cast<size_t>(work_size(query)));
      std::vector<int> iwork(static_cast<size_t>(std::max(1, iquery)));
      syevd(uplo, n, buf.data(), w, work.data(), static_cast<int>(work.size()), iwork.data(),
            static_cast<int>(iwork.size()), &info);
      if (info < 0) return sdk::fail(call, EMBER_ERR_INTERNAL, "syevd: argument %d", -info);
      from_col_major(buf.data(), n, call->outputs[1], b);
      int64_data(call->outputs[2])[b] = info;
    }
    return EMBER_OK;
  });
}

EMBER_KERNEL(linalg_svd) {
  return by_dtype(call, "linalg_svd", [&](auto tag) -> int32_t {
    using T = decltype(tag);
    const ember_tensor& a = call->inputs[0];
    const int m = static_cast<int>(a.sizes[1]), n = static_cast<int>(a.sizes[2]);
    const int k = std::min(m, n);
    const bool full = sdk::attrs<attrs::linalg_svd>(call).full_matrices != 0;
    const int cu = full ? m : k, cv = full ? n : k;
    const char jobz = full ? 'A' : 'S';
    std::vector<T> buf, u(static_cast<size_t>(m) * static_cast<size_t>(cu)),
        vt(static_cast<size_t>(cv) * static_cast<size_t>(n));
    std::vector<int> iwork(static_cast<size_t>(8 * std::max(k, 1)));
    for (int64_t b = 0; b < a.sizes[0]; ++b) {
      to_col_major(a, b, buf);
      T* s = static_cast<T*>(call->outputs[1].data) + b * k;
      int info = 0;
      T query{};
      gesdd(jobz, m, n, buf.data(), s, u.data(), m, vt.data(), cv, &query, -1, iwork.data(), &info);
      std::vector<T> work(static_cast<size_t>(work_size(query)));
      gesdd(jobz, m, n, buf.data(), s, u.data(), m, vt.data(), cv, work.data(),
            static_cast<int>(work.size()), iwork.data(), &info);
      if (info < 0) return sdk::fail(call, EMBER_ERR_INTERNAL, "gesdd: argument %d", -info);
      from_col_major(u.data(), m, call->outputs[0], b);
      from_col_major(vt.data(), cv, call->outputs[2], b);
      int64_data(call->outputs[3])[b] = info;
    }
    return EMBER_OK;
  });
}

}  // namespace ember::cpu
