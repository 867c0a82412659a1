// Reference index and ordering kernels: index_select, gather, scatter, scatter_add,
// count_nonzero, nonzero, sort, topk (contracts in core/ops/index.cpp). Index tensors are
// int64 and are all checked before anything is written, so a bad index fails the call cleanly
// (EMBER_ERR_INDEX for a value out of range, EMBER_ERR_INVALID for a wrong dtype or rank).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/reference/ops/ops.h"
#include "backends/reference/walk.h"
#include "ember/plugin_sdk_sort.hpp"

namespace ember::reference {
namespace {

using sdk::Compute;

/** Checks every element of an int64 index tensor lies in [0, limit): EMBER_ERR_INDEX if one
 *  does not. */
int32_t check_indices(const ember_kernel_call* call, const ember_tensor& index, int64_t limit,
                      int64_t dim) {
  if (index.dtype != EMBER_I64) {
    return sdk::fail(call, EMBER_ERR_INVALID, "index must be int64: got dtype %d", index.dtype);
  }
  bool bad = false;
  int64_t bad_value = 0;
  for_each_index(index.ndim, index.sizes, [&](const int64_t* idx) {
    const int64_t v = at<int64_t>(index, idx);
    if (!bad && (v < 0 || v >= limit)) {
      bad = true;
      bad_value = v;
    }
  });
  if (bad) {
    return sdk::fail(call, EMBER_ERR_INDEX, "index %lld is out of range for dim %lld of size %lld",
                     static_cast<long long>(bad_value), static_cast<long long>(dim),
                     static_cast<long long>(limit));
  }
  return EMBER_OK;
}

/** scatter (kAdd false: y[.., index[i], ..] = src[i]) or scatter_add (+=), walking the index in
 *  row-major order so a repeated index keeps the last write / adds in order. */
template <typename A, bool kAdd>
int32_t scatter_kernel(const ember_kernel_call* call) {
  const char* name = ops::kInfo[A::kOp].name;
  const ember_tensor& index = call->inputs[0];
  const ember_tensor& src = call->inputs[1];
  const ember_tensor& y = call->outputs[0];
  const int32_t d = static_cast<int32_t>(sdk::attrs<A>(call).dim);
  if (const int32_t st = check_indices(call, index, y.sizes[d], d); st != EMBER_OK) return st;
  std::vector<int64_t> target(static_cast<size_t>(y.ndim));
  return visit_any(call, y.dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    for_each_index(index.ndim, index.sizes, [&](const int64_t* idx) {
      target.assign(idx, idx + index.ndim);
      target[static_cast<size_t>(d)] = at<int64_t>(index, idx);
      T& dst = at<T>(y, target.data());
      const T v = at<T>(src, idx);
      if constexpr (!kAdd) {
        dst = v;
      } else if constexpr (std::is_same_v<T, bool>) {
        dst = dst || v;
      } else {
        dst = T(static_cast<C>(static_cast<C>(dst) + static_cast<C>(v)));
      }
    });
  });
}

// NaN orders as the largest value (Note [NaN sorts as the largest value] in plugin_sdk_sort.hpp).
using sdk::sort_greater;
using sdk::sort_less;

/** Stable-sorts each row of x along its last dim (descending if asked) and calls
 *  fn(row_idx, order) with the source positions in sorted order. */
template <typename T, typename Fn>
void for_sorted_rows(const ember_tensor& x, bool descending, Fn&& fn) {
  using C = Compute<T>;
  const int32_t last = x.ndim - 1;
  const int64_t n = x.sizes[last];
  std::vector<int64_t> idx(static_cast<size_t>(x.ndim));
  std::vector<std::pair<C, int64_t>> row(static_cast<size_t>(n));
  for_each_index(last, x.sizes, [&](const int64_t* r) {
    idx.assign(r, r + x.ndim);  // the entry at `last` is set below
    for (int64_t j = 0; j < n; ++j) {
      idx[static_cast<size_t>(last)] = j;
      row[static_cast<size_t>(j)] = {static_cast<C>(at<T>(x, idx.data())), j};
    }
    std::stable_sort(row.begin(), row.end(), [descending](const auto& a, const auto& b) {
      return descending ? sort_greater(a.first, b.first) : sort_less(a.first, b.first);
    });
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      order[static_cast<size_t>(j)] = row[static_cast<size_t>(j)].second;
    fn(idx, order);
  });
}

/** Writes values[row, j] = x[row, order[j]] and indices[row, j] = order[j] for j < m. Values
 *  are copied element by element so half-precision bits come through unchanged. */
template <typename T>
void store_row(const ember_kernel_call* call, std::vector<int64_t>& idx,
               const std::vector<int64_t>& order, int64_t m) {
  const ember_tensor& x = call->inputs[0];
  const size_t last = static_cast<size_t>(x.ndim - 1);
  std::vector<int64_t> src = idx;
  for (int64_t j = 0; j < m; ++j) {
    src[last] = order[static_cast<size_t>(j)];
    idx[last] = j;
    at<T>(call->outputs[0], idx.data()) = at<T>(x, src.data());
    at<int64_t>(call->outputs[1], idx.data()) = order[static_cast<size_t>(j)];
  }
}

}  // namespace

// inputs {x, index (1-d)}: y[.., i, ..] = x[.., index[i], ..] along dim.
int32_t index_select(const ember_kernel_call* call) {
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& index = call->inputs[1];
  const ember_tensor& y = call->outputs[0];
  const int32_t d = static_cast<int32_t>(sdk::attrs<attrs::index_select>(call).dim);
  if (index.ndim != 1) {
    return sdk::fail(call, EMBER_ERR_INVALID, "index must be 1-d: got %d dims", index.ndim);
  }
  if (const int32_t st = check_indices(call, index, x.sizes[d], d); st != EMBER_OK) return st;
  std::vector<int64_t> src(static_cast<size_t>(y.ndim));
  return visit_any(call, y.dtype, "index_select", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_index(y.ndim, y.sizes, [&](const int64_t* idx) {
      src.assign(idx, idx + y.ndim);
      src[static_cast<size_t>(d)] = sdk::data<const int64_t>(index)[idx[d] * index.strides[0]];
      at<T>(y, idx) = at<T>(x, src.data());
    });
  });
}

// inputs {x, index (y's shape)}: y[i] = x[i with i[dim] = index[i]].
int32_t gather(const ember_kernel_call* call) {
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& index = call->inputs[1];
  const ember_tensor& y = call->outputs[0];
  const int32_t d = static_cast<int32_t>(sdk::attrs<attrs::gather>(call).dim);
  if (const int32_t st = check_indices(call, index, x.sizes[d], d); st != EMBER_OK) return st;
  std::vector<int64_t> src(static_cast<size_t>(y.ndim));
  return visit_any(call, y.dtype, "gather", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_index(y.ndim, y.sizes, [&](const int64_t* idx) {
      src.assign(idx, idx + y.ndim);
      src[static_cast<size_t>(d)] = at<int64_t>(index, idx);
      at<T>(y, idx) = at<T>(x, src.data());
    });
  });
}

// inputs {index, src}, output y (holding x already), along dim.
int32_t scatter(const ember_kernel_call* call) {
  return scatter_kernel<attrs::scatter, false>(call);
}
int32_t scatter_add(const ember_kernel_call* call) {
  return scatter_kernel<attrs::scatter_add, true>(call);
}

// output: a 0-d int64, the number of non-zero elements.
int32_t count_nonzero(const ember_kernel_call* call) {
  const ember_tensor& x = call->inputs[0];
  int64_t count = 0;
  const int32_t st = visit_any(call, x.dtype, "count_nonzero", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_index(x.ndim, x.sizes, [&](const int64_t* idx) { count += truthy(at<T>(x, idx)); });
  });
  if (st == EMBER_OK) *sdk::data<int64_t>(call->outputs[0]) = count;
  return st;
}

// output: int64 [count, ndim], the coordinates of each non-zero element in row-major order.
int32_t nonzero(const ember_kernel_call* call) {
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& out = call->outputs[0];
  int64_t row = 0;
  const int32_t st = visit_any(call, x.dtype, "nonzero", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_index(x.ndim, x.sizes, [&](const int64_t* idx) {
      if (!truthy(at<T>(x, idx))) return;
      if (row < out.sizes[0]) {
        for (int32_t d = 0; d < x.ndim; ++d) {
          sdk::data<int64_t>(out)[row * out.strides[0] + d * out.strides[1]] = idx[d];
        }
      }
      ++row;
    });
  });
  if (st != EMBER_OK) return st;
  if (row != out.sizes[0]) {
    return sdk::fail(call, EMBER_ERR_INVALID,
                     "output has %lld rows but the input has %lld non-zero elements",
                     static_cast<long long>(out.sizes[0]), static_cast<long long>(row));
  }
  return EMBER_OK;
}

// Along the last dim, descending if asked; outputs {values, indices}. Stable: equal values keep
// their order.
int32_t sort(const ember_kernel_call* call) {
  if (const int32_t st = sdk::check_sort_layout(call); st != EMBER_OK) return st;
  const ember_tensor& x = call->inputs[0];
  const bool descending = sdk::attrs<attrs::sort>(call).descending != 0;
  const int64_t n = x.sizes[x.ndim - 1];
  return visit_any(call, x.dtype, "sort", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_sorted_rows<T>(x, descending,
                       [&](std::vector<int64_t>& idx, const std::vector<int64_t>& order) {
                         store_row<T>(call, idx, order, n);
                       });
  });
}

// Along the last dim: the first k of a stable sort (descending for largest), so ties go to the
// earlier position; unsorted results are in position order.
int32_t topk(const ember_kernel_call* call) {
  if (const int32_t st = sdk::check_sort_layout(call); st != EMBER_OK) return st;
  const auto a = sdk::attrs<attrs::topk>(call);
  const ember_tensor& x = call->inputs[0];
  const int64_t k = a.k;
  const bool largest = a.largest != 0, sorted = a.sorted != 0;
  const int64_t n = x.sizes[x.ndim - 1];
  if (k < 0 || k > n) {
    return sdk::fail(call, EMBER_ERR_INVALID, "k %lld is out of range for a dim of size %lld",
                     static_cast<long long>(k), static_cast<long long>(n));
  }
  return visit_any(call, x.dtype, "topk", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_sorted_rows<T>(x, largest,
                       [&](std::vector<int64_t>& idx, const std::vector<int64_t>& order) {
                         std::vector<int64_t> top(order.begin(), order.begin() + k);
                         if (!sorted) std::sort(top.begin(), top.end());
                         store_row<T>(call, idx, top, k);
                       });
  });
}

}  // namespace ember::reference
