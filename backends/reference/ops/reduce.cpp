// Reference reductions. Layout contract (core/ops/reduce.cpp): the reduced dims are the last
// reduced_dims dims of the input (any strides) and the output holds the kept dims. Each output is
// one plain loop over its reduced positions: floating sums and products in double, integer
// ones in int64 (wrapping modulo 2^64 like PyTorch), then rounded once to the output dtype.
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/reference/ops/ops.h"
#include "backends/reference/walk.h"
#include "ember/plugin_sdk_sort.hpp"

namespace ember::reference {
namespace {

using sdk::Compute;

/** Calls visit(out_idx_into_y, reduce) per output: reduce(fn) calls fn(element) over the
 *  reduced positions of that output, in row-major order. */
template <typename T, typename PerOutput>
void for_each_output(const ember_tensor& x, const ember_tensor& y, int64_t k,
                     PerOutput per_output) {
  const int32_t kept = x.ndim - static_cast<int32_t>(k);
  std::vector<int64_t> full(static_cast<size_t>(x.ndim) + 1, 0);
  for_each_index(kept, x.sizes, [&](const int64_t* out_idx) {
    for (int32_t d = 0; d < kept; ++d) full[static_cast<size_t>(d)] = out_idx[d];
    int64_t y_off = 0;
    for (int32_t d = 0; d < kept; ++d) y_off += out_idx[d] * y.strides[d];
    auto reduce = [&](auto fn) {
      for_each_index(static_cast<int32_t>(k), x.sizes + kept, [&](const int64_t* red_idx) {
        for (int32_t d = 0; d < k; ++d) full[static_cast<size_t>(kept + d)] = red_idx[d];
        fn(at<T>(x, full.data()));
      });
    };
    per_output(y_off, reduce);
  });
}

/** Integer addition and multiplication modulo 2^64. */
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

/** Runs per_output(tag, y_off, reduce) for each output of the reduction A (see for_each_output),
 *  T = the input's element type: every dtype but bool when kNumeric, any dtype otherwise. */
template <typename A, bool kNumeric, typename PerOutput>
int32_t reduce_outputs(const ember_kernel_call* call, PerOutput per_output) {
  const char* name = ops::kInfo[A::kOp].name;
  const int64_t k = sdk::attrs<A>(call).reduced_dims;
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& y = call->outputs[0];
  auto each = [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_output<T>(x, y, k,
                       [&](int64_t y_off, auto reduce) { per_output(tag, y_off, reduce); });
  };
  if constexpr (kNumeric) return visit_numeric(call, x.dtype, name, each);
  return visit_any(call, x.dtype, name, each);
}

/** sum (kProd false) or prod of the reduced positions. */
template <typename A, bool kProd>
int32_t sum_or_prod(const ember_kernel_call* call) {
  return reduce_outputs<A, true>(call, [&](auto tag, int64_t y_off, auto reduce) {
    using T = typename decltype(tag)::type;
    T* out = sdk::data<T>(call->outputs[0]);
    if constexpr (sdk::kIsFloating<T>) {
      double acc = kProd ? 1.0 : 0.0;
      reduce([&](T v) { acc = kProd ? acc * to_double(v) : acc + to_double(v); });
      out[y_off] = from_double<T>(acc);
    } else {
      int64_t acc = kProd ? 1 : 0;
      reduce([&](T v) {
        acc =
            kProd ? wrap_mul(acc, static_cast<int64_t>(v)) : wrap_add(acc, static_cast<int64_t>(v));
      });
      out[y_off] = static_cast<T>(acc);
    }
  });
}

/** amax (kMax) or amin: the first NaN met wins, else the extreme value; an empty reduction
 *  gives -inf/+inf (floating) or the type's lowest/highest value. */
template <typename A, bool kMax>
int32_t extremum(const ember_kernel_call* call) {
  return reduce_outputs<A, false>(call, [&](auto tag, int64_t y_off, auto reduce) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    C best;
    if constexpr (std::is_floating_point_v<C>) {
      best = kMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
    } else {
      best = kMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
    }
    bool seen_nan = false;
    reduce([&](T t) {
      const C v = static_cast<C>(t);
      if (seen_nan) return;
      if (is_nan(v)) {
        seen_nan = true;
        best = v;
      } else if (kMax ? v > best : v < best) {
        best = v;
      }
    });
    sdk::data<T>(call->outputs[0])[y_off] = T(best);
  });
}

/** all (kAll) or any: a bool per output, true/false for an empty reduction. */
template <typename A, bool kAll>
int32_t logical_reduce(const ember_kernel_call* call) {
  return reduce_outputs<A, false>(call, [&](auto tag, int64_t y_off, auto reduce) {
    using T = typename decltype(tag)::type;
    bool acc = kAll;
    reduce([&](T v) { acc = kAll ? (acc && truthy(v)) : (acc || truthy(v)); });
    sdk::data<bool>(call->outputs[0])[y_off] = acc;
  });
}

/** argmax/argmin ({indices}) or max_dim/min_dim ({values, indices}) over the one trailing
 *  reduced dim: the first NaN wins, else the first extreme value (ties go to the lowest
 *  index). Indices are int64. */
template <typename A, bool kMax, bool kValues>
int32_t arg_reduce(const ember_kernel_call* call) {
  if (const int32_t st = sdk::check_arg_reduce<A, kValues>(call); st != EMBER_OK) return st;
  const char* name = ops::kInfo[A::kOp].name;
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& ind = call->outputs[kValues ? 1 : 0];
  const int64_t n = x.sizes[x.ndim - 1];
  int64_t outputs = 1;
  for (int32_t d = 0; d + 1 < x.ndim; ++d) outputs *= x.sizes[d];
  if (outputs == 0) return EMBER_OK;
  if (n == 0) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: cannot reduce over a zero-size dim", name);
  }
  return visit_any(call, x.dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    for_each_output<T>(x, ind, 1, [&](int64_t y_off, auto reduce) {
      C best{};
      int64_t best_i = -1, i = 0;
      bool done = false;  // a NaN was found
      reduce([&](T t) {
        const C v = static_cast<C>(t);
        if (!done) {
          if (is_nan(v)) {
            best = v;
            best_i = i;
            done = true;
          } else if (best_i < 0 || (kMax ? v > best : v < best)) {
            best = v;
            best_i = i;
          }
        }
        ++i;
      });
      sdk::data<int64_t>(ind)[y_off] = best_i;
      // The values output has the indices' (contiguous) layout.
      if constexpr (kValues) sdk::data<T>(call->outputs[0])[y_off] = T(best);
    });
  });
}

}  // namespace

int32_t sum(const ember_kernel_call* c) {
  return sum_or_prod<attrs::sum, false>(c);
}
int32_t prod(const ember_kernel_call* c) {
  return sum_or_prod<attrs::prod, true>(c);
}
int32_t amax(const ember_kernel_call* c) {
  return extremum<attrs::amax, true>(c);
}
int32_t amin(const ember_kernel_call* c) {
  return extremum<attrs::amin, false>(c);
}
int32_t all(const ember_kernel_call* c) {
  return logical_reduce<attrs::all, true>(c);
}
int32_t any(const ember_kernel_call* c) {
  return logical_reduce<attrs::any, false>(c);
}
int32_t argmax(const ember_kernel_call* c) {
  return arg_reduce<attrs::argmax, true, false>(c);
}
int32_t argmin(const ember_kernel_call* c) {
  return arg_reduce<attrs::argmin, false, false>(c);
}
int32_t max_dim(const ember_kernel_call* c) {
  return arg_reduce<attrs::max_dim, true, true>(c);
}
int32_t min_dim(const ember_kernel_call* c) {
  return arg_reduce<attrs::min_dim, false, true>(c);
}

// Running sum (kProduct false) or product along the last dim (a 0-d input is its own):
// double for floating dtypes, wrapping int64 for integers.
namespace {
template <bool kProduct>
int32_t cumulative(const ember_kernel_call* call, const char* name) {
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& y = call->outputs[0];
  if (x.ndim == 0) return copy(call);
  return visit_numeric(call, x.dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int32_t last = x.ndim - 1;
    const int64_t n = x.sizes[last];
    std::vector<int64_t> idx(static_cast<size_t>(x.ndim), 0);
    for_each_index(last, x.sizes, [&](const int64_t* row) {
      for (int32_t d = 0; d < last; ++d) idx[static_cast<size_t>(d)] = row[d];
      double facc = kProduct ? 1 : 0;
      int64_t iacc = kProduct ? 1 : 0;
      for (int64_t i = 0; i < n; ++i) {
        idx[static_cast<size_t>(last)] = i;
        const T v = at<T>(x, idx.data());
        if constexpr (sdk::kIsFloating<T>) {
          facc = kProduct ? facc * to_double(v) : facc + to_double(v);
          at<T>(y, idx.data()) = from_double<T>(facc);
        } else {
          const auto w = static_cast<int64_t>(v);
          iacc = kProduct ? wrap_mul(iacc, w) : wrap_add(iacc, w);
          at<T>(y, idx.data()) = static_cast<T>(iacc);
        }
      }
    });
  });
}
}  // namespace

int32_t cumsum(const ember_kernel_call* call) {
  return cumulative<false>(call, "cumsum");
}
int32_t cumprod(const ember_kernel_call* call) {
  return cumulative<true>(call, "cumprod");
}

}  // namespace ember::reference
