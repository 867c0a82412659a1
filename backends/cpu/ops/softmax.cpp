// CPU softmax and log_softmax: float32 along the innermost dim through oneDNN's softmax_forward
// (softmax_accurate / softmax_log); everything else through an own max-subtracting loop split over
// OpenMP.
//
// Note [Which softmax runs where]
// oneDNN has a JIT (AVX2/AVX-512) softmax only for a dense array reduced along its last dim
// (measured with 2.6); along any other dim it picks its reference implementation, which measured
// ~25x slower than the column-blocked own loop below (1024 x 1024 float32 along dim 0: 212 ms
// vs 8.5 ms, one thread). So float32 goes to oneDNN when inner == 1 and to the own loop otherwise,
// as do the other dtypes and any geometry oneDNN declines.
#include <oneapi/dnnl/dnnl.hpp>

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backends/cpu/loops.h"
#include "backends/cpu/ops/ops.h"

namespace ember::cpu {
namespace {

// Note [Softmax of a strided input]
// The output is contiguous, so a non-contiguous input is first copied into the output (same
// dtype, a plain strided copy) and the softmax then runs in place there: every path reads an
// element before writing the same position, so in-place is exact. Every path below therefore
// sees a dense [outer, len, inner] array, whatever the input's strides.
void copy_into_output(const ember_tensor& x, const ember_tensor& y) {
  const ember_tensor* ops[2] = {&y, &x};
  StridedIter<2> it(ops);
  const size_t item = sdk::itemsize(x.dtype);
  it.run([item](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
    if (s[0] == static_cast<int64_t>(item) && s[1] == static_cast<int64_t>(item)) {
      std::memcpy(p[0], p[1], static_cast<size_t>(n) * item);
      return;
    }
    for (int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * s[0], p[1] + i * s[1], item);
  });
}

// NaN-propagating running maximum.
template <typename C>
inline C max_nan(C m, C v) {
  return (v > m || v != v) ? v : m;
}

// Own loop over a dense [outer, len, inner] array; src may alias dst.
template <typename T, bool Log>
void softmax_loop(const T* src, T* dst, int64_t outer, int64_t len, int64_t inner) {
  using C = sdk::Compute<T>;
  const bool parallel = go_parallel(outer * len * inner);
  if (inner == 1) {
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t o = 0; o < outer; ++o) {
      const T* x = src + o * len;
      T* y = dst + o * len;
      C m = -std::numeric_limits<C>::infinity();
      for (int64_t l = 0; l < len; ++l) m = max_nan(m, static_cast<C>(x[l]));
      C sum = 0;
      for (int64_t l = 0; l < len; ++l) sum += std::exp(static_cast<C>(x[l]) - m);
      if constexpr (Log) {
        const C shift = m + std::log(sum);
        for (int64_t l = 0; l < len; ++l) y[l] = store<T>(static_cast<C>(x[l]) - shift);
      } else {
        const C inv = C(1) / sum;
        for (int64_t l = 0; l < len; ++l) y[l] = store<T>(std::exp(static_cast<C>(x[l]) - m) * inv);
      }
    }
    return;
  }
  // inner > 1: a task is one outer index and a block of kJB inner columns, reduced together so
  // the inner loops run over unit-stride columns.
  constexpr int64_t kJB = 64;
  const int64_t jblocks = (inner + kJB - 1) / kJB;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < outer * jblocks; ++t) {
    const int64_t o = t / jblocks, j0 = (t % jblocks) * kJB, nj = std::min(kJB, inner - j0);
    const T* x = src + o * len * inner + j0;
    T* y = dst + o * len * inner + j0;
    C m[kJB], sum[kJB];
    for (int64_t j = 0; j < nj; ++j) {
      m[j] = -std::numeric_limits<C>::infinity();
      sum[j] = 0;
    }
    for (int64_t l = 0; l < len; ++l) {
      for (int64_t j = 0; j < nj; ++j) m[j] = max_nan(m[j], static_cast<C>(x[l * inner + j]));
    }
    for (int64_t l = 0; l < len; ++l) {
      for (int64_t j = 0; j < nj; ++j) sum[j] += std::exp(static_cast<C>(x[l * inner + j]) - m[j]);
    }
    if constexpr (Log) {
      for (int64_t j = 0; j < nj; ++j) m[j] += std::log(sum[j]);
      for (int64_t l = 0; l < len; ++l) {
        for (int64_t j = 0; j < nj; ++j) {
          y[l * inner + j] = store<T>(static_cast<C>(x[l * inner + j]) - m[j]);
        }
      }
    } else {
      for (int64_t j = 0; j < nj; ++j) sum[j] = C(1) / sum[j];
      for (int64_t l = 0; l < len; ++l) {
        for (int64_t j = 0; j < nj; ++j) {
          y[l * inner + j] = store<T>(std::exp(static_cast<C>(x[l * inner + j]) - m[j]) * sum[j]);
        }
      }
    }
  }
}

// float32 through oneDNN; false when oneDNN has no implementation for this geometry.
template <bool Log>
bool dnnl_softmax(const ember_kernel_call* call, const float* src, float* dst, int64_t outer,
                  int64_t len, int64_t inner) {
  const int64_t key[] = {Log ? 3 : 2, outer, len, inner};  // Note [oneDNN primitive cache]
  const int32_t kn = static_cast<int32_t>(sizeof(key) / sizeof(key[0]));
  const dnnl::memory::desc md =
      inner == 1 ? dnnl::memory::desc({outer, len}, dnnl::memory::data_type::f32,
                                      dnnl::memory::format_tag::ab)
                 : dnnl::memory::desc({outer, len, inner}, dnnl::memory::data_type::f32,
                                      dnnl::memory::format_tag::abc);
  dnnl::primitive prim;
  if (!dnnl_cache_find(key, kn, &prim)) {
    try {
      const dnnl::engine& eng = dnnl_engine();
      const auto algorithm = Log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate;
      prim = dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(
          eng, dnnl::prop_kind::forward_inference, algorithm, md, md, 1, dnnl_attr()));
    } catch (const dnnl::error& e) {
      if (e.status != dnnl_unimplemented) throw;
      prim = dnnl::primitive();
    }
    dnnl_cache_put(key, kn, prim);
  }
  if (!prim) return false;
  const dnnl::engine& eng = dnnl_engine();
  dnnl::memory ms(md, eng, const_cast<float*>(src)), md_out(md, eng, dst);
  dnnl_execute(call, prim, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_DST, md_out}});
  return true;
}

// Note [NaN rows of oneDNN's softmax]
// The contract (and PyTorch) makes a whole row NaN when it holds a NaN or a +inf (whose
// x - max is inf - inf). oneDNN's softmax leaves the NaN at that element and gives the rest of
// the row 0 (softmax) or -inf (log_softmax); the GPU backend and the own loop give the whole row
// NaN. So each row oneDNN wrote is checked for a NaN, in cache right after it was written, and
// such a row is filled with NaN.
void nan_rows(float* y, int64_t outer, int64_t len) {
#pragma omp parallel for schedule(static) if (outer * len >= kGrainSize && !omp_in_parallel())
  for (int64_t r = 0; r < outer; ++r) {
    float* row = y + r * len;
    bool nan = false;
    for (int64_t j = 0; j < len; ++j) nan |= row[j] != row[j];
    if (nan) std::fill(row, row + len, std::numeric_limits<float>::quiet_NaN());
  }
}

// softmax or log_softmax (op A) along the dim its attribute names.
template <typename A>
int32_t softmax_kernel(const ember_kernel_call* call) {
  constexpr bool Log = A::kOp == ops::log_softmax;
  const char* name = ops::kInfo[A::kOp].name;
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& y = call->outputs[0];
  const int64_t dim = sdk::attrs<A>(call).dim;
  if (x.ndim < 1 || dim < 0 || dim >= x.ndim || y.ndim != x.ndim || y.dtype != x.dtype ||
      !sdk::is_contiguous(y)) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: bad arguments (rank %d, dim %lld)", name, x.ndim,
                     static_cast<long long>(dim));
  }
  if (sdk::numel(x) == 0) return EMBER_OK;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= x.sizes[d];
  for (int d = static_cast<int>(dim) + 1; d < x.ndim; ++d) inner *= x.sizes[d];
  const int64_t len = x.sizes[dim];
  const void* src = x.data;
  if (!sdk::is_contiguous(x)) {
    copy_into_output(x, y);
    src = y.data;
  }
  if (x.dtype == EMBER_F32 && inner == 1) {
    // A failure of oneDNN is the vendor library's (EMBER_ERR_DEVICE); anything else, out of
    // memory included, reaches the kernel's guard.
    try {
      if (dnnl_softmax<Log>(call, static_cast<const float*>(src), static_cast<float*>(y.data),
                            outer, len, inner)) {
        nan_rows(static_cast<float*>(y.data), outer, len);
        return EMBER_OK;
      }
    } catch (const dnnl::error& e) {
      return sdk::fail(call, EMBER_ERR_DEVICE, "oneDNN %s failed: %s (status %d)", name, e.what(),
                       static_cast<int>(e.status));
    }
  }
  return sdk::visit_floating(call, x.dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_loop<T, Log>(static_cast<const T*>(src), static_cast<T*>(y.data), outer, len, inner);
  });
}

}  // namespace

EMBER_KERNEL(softmax) {
  return softmax_kernel<attrs::softmax>(call);
}
EMBER_KERNEL(log_softmax) {
  return softmax_kernel<attrs::log_softmax>(call);
}

}  // namespace ember::cpu
