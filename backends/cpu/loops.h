// Strided loops for CPU kernels: dims are coalesced, contiguous runs get a unit-stride inner
// loop the compiler vectorizes, and large iteration spaces split over the OpenMP pool that
// oneDNN uses too (one pool for everything, see Note [One thread pool]).
#pragma once

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "ember/plugin_sdk.hpp"

namespace ember::cpu {

/** Below this many elements a loop runs on the calling thread. */
inline constexpr int64_t kGrainSize = 32768;

/** True when `work` elements are worth an OpenMP team: at least kGrainSize of them, more than one
 *  thread, and not already inside a parallel region. */
inline bool go_parallel(int64_t work) {
  return work >= kGrainSize && omp_get_max_threads() > 1 && !omp_in_parallel();
}

/** `v` (a double, or T's compute type) stored as T: through float for the 16-bit floating types. */
template <typename T, typename V>
inline T store(V v) {
  if constexpr (sdk::kIsHalf<T>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

/** Runs body(begin, end) over [0, n) in fixed chunks of `chunk` elements, across the threads when
 *  there is more than one chunk (on the calling thread inside a parallel region). For loops over
 *  dense elements whose results do not depend on the split. */
template <typename Body>
void for_each_chunk(int64_t n, int64_t chunk, Body&& body) {
  const int64_t chunks = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (chunks > 1 && !omp_in_parallel())
  for (int64_t c = 0; c < chunks; ++c) body(c * chunk, std::min(n, (c + 1) * chunk));
}

/** Up to 8 operands iterated together over one shape, strides in bytes. */
template <int N>
struct StridedIter {
  int ndim = 0;
  int64_t sizes[EMBER_MAX_DIMS];
  int64_t strides[N][EMBER_MAX_DIMS];  // bytes
  char* base[N];

  /** Builds from operand descriptors sharing `shape` (operand 0 defines it). With
   *  `output_order`, dims are visited in operand 0's memory order (largest stride outermost), so
   *  a channels-last output runs as dense rows too: for loops whose results do not depend on the
   *  order of the elements (elementwise maps). */
  explicit StridedIter(const ember_tensor* const* ops, bool output_order = false) {
    const ember_tensor& t0 = *ops[0];
    int perm[EMBER_MAX_DIMS];  // perm[i]: the dim visited at position i (innermost last)
    for (int d = 0; d < t0.ndim; ++d) perm[d] = d;
    if (output_order) {  // stable insertion sort by operand 0's stride, descending
      for (int i = 1; i < t0.ndim; ++i) {
        const int d = perm[i];
        int j = i;
        for (; j > 0 && t0.strides[perm[j - 1]] < t0.strides[d]; --j) perm[j] = perm[j - 1];
        perm[j] = d;
      }
    }
    int nd = 0;
    // Coalesce from the innermost dim outwards: merge d into d+1 when every operand's
    // stride(d) == stride(d+1) * size(d+1); drop size-1 dims.
    for (int i = t0.ndim - 1; i >= 0; --i) {
      const int d = perm[i];
      if (t0.sizes[d] == 1) continue;
      if (nd > 0) {
        bool merge = true;
        for (int k = 0; k < N; ++k) {
          const int64_t s = ops[k]->strides[d] * static_cast<int64_t>(sdk::itemsize(ops[k]->dtype));
          if (s != strides[k][nd - 1] * sizes[nd - 1]) merge = false;
        }
        if (merge) {
          sizes[nd - 1] *= t0.sizes[d];
          continue;
        }
      }
      sizes[nd] = t0.sizes[d];
      for (int k = 0; k < N; ++k) {
        strides[k][nd] = ops[k]->strides[d] * static_cast<int64_t>(sdk::itemsize(ops[k]->dtype));
      }
      ++nd;
    }
    if (nd == 0) {
      sizes[0] = 1;
      for (int k = 0; k < N; ++k) strides[k][0] = 0;
      nd = 1;
    }
    // Stored innermost-first; that is the order loops below use.
    ndim = nd;
    for (int k = 0; k < N; ++k) base[k] = static_cast<char*>(ops[k]->data);
  }

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }

  /** Calls inner(ptrs, strides0, n) over rows of the innermost dim for linear range [begin, end).
   */
  template <typename Inner>
  void run_range(int64_t begin, int64_t end, Inner& inner) const {
    const int64_t row = sizes[0];
    int64_t idx[EMBER_MAX_DIMS];  // idx[0] unused: the column is `col`
    int64_t lin = begin / row;
    for (int d = 1; d < ndim; ++d) {
      idx[d] = lin % sizes[d];
      lin /= sizes[d];
    }
    int64_t pos = begin;
    int64_t col = begin % row;
    while (pos < end) {
      std::array<char*, N> ptrs;
      for (int k = 0; k < N; ++k) {
        int64_t off = col * strides[k][0];
        for (int d = 1; d < ndim; ++d) off += idx[d] * strides[k][d];
        ptrs[k] = base[k] + off;
      }
      const int64_t n = std::min(row - col, end - pos);
      std::array<int64_t, N> s0;
      for (int k = 0; k < N; ++k) s0[k] = strides[k][0];
      inner(ptrs, s0, n);
      pos += n;
      col = 0;
      for (int d = 1; d < ndim; ++d) {
        if (++idx[d] < sizes[d]) break;
        idx[d] = 0;
      }
    }
  }

  /** Runs inner over everything, in parallel when large. */
  template <typename Inner>
  void run(Inner inner) const {
    const int64_t n = numel();
    if (n == 0) return;  // also keeps run_range from dividing by a zero-size row
    if (n < kGrainSize || omp_get_max_threads() == 1 || omp_in_parallel()) {
      run_range(0, n, inner);
      return;
    }
#pragma omp parallel
    {
      const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t chunk = (n + nt - 1) / nt;
      const int64_t b = std::min(n, t * chunk), e = std::min(n, b + chunk);
      Inner local = inner;
      if (b < e) run_range(b, e, local);
    }
  }
};

}  // namespace ember::cpu
