// CPU ordering kernels: sort and topk along the last dim (see Note [Ordering ops sort the last
// dim] in core/ops/index.cpp), one row per task, rows split over OpenMP when the work is large.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/cpu/loops.h"
#include "backends/cpu/ops/ops.h"
#include "ember/plugin_sdk_sort.hpp"

namespace ember::cpu {
namespace {

using sdk::Compute;

// NaN orders as the largest value (Note [NaN sorts as the largest value] in plugin_sdk_sort.hpp).
using sdk::sort_greater;
using sdk::sort_less;

// Offset (in elements) of row `row` of t: every dim but the last, in row-major order.
int64_t row_offset(const ember_tensor& t, int64_t row) {
  int64_t off = 0;
  for (int32_t d = t.ndim - 2; d >= 0; --d) {
    off += (row % t.sizes[d]) * t.strides[d];
    row /= t.sizes[d];
  }
  return off;
}

// A row as (value, position) pairs.
template <typename C>
using RowBuf = std::span<std::pair<C, int64_t>>;

// Runs fn(buffer, row) for each row of x, in parallel when the work is large; each thread
// keeps one (value, index) buffer of the row length. The buffers are allocated before the
// parallel region: an exception (std::bad_alloc) must not leave an OpenMP region, and a
// thread that skipped the loop below would leave the others waiting at its barrier.
template <typename C, typename Fn>
void for_rows(const ember_tensor& x, Fn&& fn) {
  const int64_t n = x.sizes[x.ndim - 1];
  const int64_t rows = n == 0 ? 0 : sdk::numel(x) / n;
  const bool parallel = rows > 1 && sdk::numel(x) >= kGrainSize && !omp_in_parallel();
  const int threads = parallel ? omp_get_max_threads() : 1;
  std::vector<std::pair<C, int64_t>> bufs(static_cast<size_t>(threads) * static_cast<size_t>(n));
#pragma omp parallel num_threads(threads) if (parallel)
  {
    const RowBuf<C> buf(bufs.data() + static_cast<size_t>(omp_get_thread_num()) * n,
                        static_cast<size_t>(n));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) fn(buf, r);
  }
}

// Loads row r of x into buf as (value, position) pairs.
template <typename T, typename C>
void load_row(const ember_tensor& x, int64_t r, RowBuf<C> buf) {
  const T* xr = sdk::data<const T>(x) + row_offset(x, r);
  const int64_t xs = x.strides[x.ndim - 1];
  for (size_t j = 0; j < buf.size(); ++j) {
    buf[j] = {static_cast<C>(xr[static_cast<int64_t>(j) * xs]), static_cast<int64_t>(j)};
  }
}

// Writes the first m entries of buf into row r of values/indices; values are copied from x so
// half-precision bits come through unchanged.
template <typename T, typename C>
void store_row(const ember_tensor& x, const ember_tensor& values, const ember_tensor& indices,
               int64_t r, RowBuf<C> buf, int64_t m) {
  const T* xr = sdk::data<const T>(x) + row_offset(x, r);
  const int64_t xs = x.strides[x.ndim - 1];
  T* vr = sdk::data<T>(values) + row_offset(values, r);
  int64_t* ir = sdk::data<int64_t>(indices) + row_offset(indices, r);
  const int64_t vs = values.strides[values.ndim - 1], is = indices.strides[indices.ndim - 1];
  for (int64_t j = 0; j < m; ++j) {
    const int64_t src = buf[static_cast<size_t>(j)].second;
    vr[j * vs] = xr[src * xs];
    ir[j * is] = src;
  }
}

}  // namespace

EMBER_KERNEL(sort) {
  if (const int32_t st = sdk::check_sort_layout(call); st != EMBER_OK) return st;
  const ember_tensor& x = call->inputs[0];
  const bool descending = sdk::attrs<attrs::sort>(call).descending != 0;
  const int64_t n = x.sizes[x.ndim - 1];
  bool ok = sdk::visit_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    for_rows<C>(x, [&](RowBuf<C> buf, int64_t r) {
      load_row<T>(x, r, buf);
      if (descending) {
        std::stable_sort(buf.begin(), buf.end(), [](const auto& a, const auto& b) {
          return sort_greater(a.first, b.first);
        });
      } else {
        std::stable_sort(buf.begin(), buf.end(),
                         [](const auto& a, const auto& b) { return sort_less(a.first, b.first); });
      }
      store_row<T>(x, call->outputs[0], call->outputs[1], r, buf, n);
    });
  });
  return ok ? EMBER_OK : sdk::fail(call, EMBER_ERR_UNSUPPORTED, "unknown dtype %d", x.dtype);
}

EMBER_KERNEL(topk) {
  if (const int32_t st = sdk::check_sort_layout(call); st != EMBER_OK) return st;
  const ember_tensor& x = call->inputs[0];
  const auto a = sdk::attrs<attrs::topk>(call);
  const int64_t k = a.k;
  const bool largest = a.largest != 0, sorted = a.sorted != 0;
  const int64_t n = x.sizes[x.ndim - 1];
  if (k < 0 || k > n) {
    return sdk::fail(call, EMBER_ERR_INVALID, "k %lld is out of range for a dim of size %lld",
                     static_cast<long long>(k), static_cast<long long>(n));
  }
  bool ok = sdk::visit_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    // Ties go to the earlier position, which makes the order total and the result the first k
    // of a stable sort.
    const auto better = [largest](const std::pair<C, int64_t>& a, const std::pair<C, int64_t>& b) {
      if (largest ? sort_greater(a.first, b.first) : sort_less(a.first, b.first)) return true;
      if (largest ? sort_greater(b.first, a.first) : sort_less(b.first, a.first)) return false;
      return a.second < b.second;
    };
    for_rows<C>(x, [&](RowBuf<C> buf, int64_t r) {
      load_row<T>(x, r, buf);
      if (sorted) {
        std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), better);
      } else {
        // Unsorted results keep the positions' original order.
        if (k < n) std::nth_element(buf.begin(), buf.begin() + k, buf.end(), better);
        std::sort(buf.begin(), buf.begin() + k,
                  [](const auto& a, const auto& b) { return a.second < b.second; });
      }
      store_row<T>(x, call->outputs[0], call->outputs[1], r, buf, k);
    });
  });
  return ok ? EMBER_OK : sdk::fail(call, EMBER_ERR_UNSUPPORTED, "unknown dtype %d", x.dtype);
}

}  // namespace ember::cpu
