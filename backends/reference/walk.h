// Index walking for the reference kernels: every loop visits a shape in row-major order and
// turns a multi-index into an element offset with the descriptor's strides. Nothing clever on
// purpose: a reader checks a kernel against its formula, not against an optimisation.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_ops.hpp"

namespace ember::reference {

/** Calls fn(idx) for every multi-index of `sizes` in row-major order (once for ndim 0, never
 *  when a size is 0). */
template <typename Fn>
void for_each_index(int32_t ndim, const int64_t* sizes, Fn&& fn) {
  for (int32_t d = 0; d < ndim; ++d) {
    if (sizes[d] == 0) return;
  }
  std::vector<int64_t> idx(static_cast<size_t>(ndim) + 1, 0);  // +1: never empty
  while (true) {
    fn(static_cast<const int64_t*>(idx.data()));
    int32_t d = ndim - 1;
    for (; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < sizes[d]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
    if (d < 0) return;
  }
}

/** Element offset of the first `ndim` entries of `idx` in t (a size-1 dim always reads index
 *  0, so an operand broadcast by size 1 rather than by stride 0 reads correctly too). */
inline int64_t offset(const ember_tensor& t, const int64_t* idx) {
  int64_t off = 0;
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (t.sizes[d] != 1) off += idx[d] * t.strides[d];
  }
  return off;
}

/** The element of t at multi-index idx. */
template <typename T>
T& at(const ember_tensor& t, const int64_t* idx) {
  return sdk::data<T>(t)[offset(t, idx)];
}

/** Element (i0, i1, i2, i3) of a 4-d descriptor. */
template <typename T>
T& at4(const ember_tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  const int64_t idx[4] = {i0, i1, i2, i3};
  return at<T>(t, idx);
}

/** Widens an element to double (through float for the half types). */
template <typename T>
double to_double(T v) {
  return static_cast<double>(static_cast<sdk::Compute<T>>(v));
}

/** Rounds a double to a floating element type (through float for the half types). */
template <typename T>
T from_double(double v) {
  if constexpr (sdk::kIsHalf<T>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

/** True for a NaN (never for integers and bool). */
template <typename C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

/** True if the element is non-zero. */
template <typename T>
bool truthy(T v) {
  return static_cast<sdk::Compute<T>>(v) != sdk::Compute<T>(0);
}

/** Calls fn(TypeTag<T>{}) for a floating dtype; EMBER_ERR_UNSUPPORTED for any other. */
template <typename Fn>
int32_t visit_floating(const ember_kernel_call* call, int32_t dtype, const char* name, Fn&& fn) {
  return sdk::visit_floating(call, dtype, name, fn);
}

/** Calls fn(TypeTag<T>{}) for every dtype but bool; EMBER_ERR_UNSUPPORTED for bool. */
template <typename Fn>
int32_t visit_numeric(const ember_kernel_call* call, int32_t dtype, const char* name, Fn&& fn) {
  bool ok = false;
  sdk::visit_dtype(dtype, [&](auto tag) {
    if constexpr (!std::is_same_v<typename decltype(tag)::type, bool>) {
      ok = true;
      fn(tag);
    }
  });
  return ok ? EMBER_OK
            : sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: dtype %s is not supported", name,
                        sdk::dtype_name(dtype));
}

/** Calls fn(TypeTag<T>{}) for any dtype; EMBER_ERR_UNSUPPORTED for an unknown one. */
template <typename Fn>
int32_t visit_any(const ember_kernel_call* call, int32_t dtype, const char* name, Fn&& fn) {
  return sdk::visit_dtype(dtype, fn)
             ? EMBER_OK
             : sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: unknown dtype %d", name, dtype);
}

}  // namespace ember::reference
