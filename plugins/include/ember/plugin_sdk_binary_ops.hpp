// Scalar semantics of the core binary ops (PyTorch's), shared by every backend's loops.
#pragma once

#include <cmath>
#include <type_traits>

#include "ember/plugin_sdk.hpp"

namespace ember::sdk {

// Note [Binary op semantics]
// What one element of add/sub/mul/div/pow/maximum/minimum is, in the compute type C: bool add
// is or and mul is and; integer pow wraps modulo 2^bits and a negative exponent gives 0 except
// for the bases 1 and -1; maximum/minimum propagate NaN. `supports<T>` says which storage
// dtypes the op takes. Backends differ in how they loop, vectorise and thread, not in this, so
// the reference backend checks the loops while these definitions are pinned by core tests.

/** Every dtype but bool. */
template <typename T>
constexpr bool kNotBool = !std::is_same_v<T, bool>;

/** a + b (bool: or). */
struct AddOp {
  template <typename T>
  static constexpr bool supports = true;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>)
      return a || b;
    else
      return a + b;
  }
};
/** a - b; not bool. */
struct SubOp {
  template <typename T>
  static constexpr bool supports = kNotBool<T>;
  template <typename C>
  C operator()(C a, C b) const {
    return a - b;
  }
};
/** a * b (bool: and). */
struct MulOp {
  template <typename T>
  static constexpr bool supports = true;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>)
      return a && b;
    else
      return a * b;
  }
};
/** a / b; floating dtypes only (the core promotes integers). */
struct DivOp {
  template <typename T>
  static constexpr bool supports = kIsFloating<T>;
  template <typename C>
  C operator()(C a, C b) const {
    return a / b;
  }
};
/** a ** b; integers wrap, negative exponents as PyTorch. */
struct PowOp {
  template <typename T>
  static constexpr bool supports = kNotBool<T>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return std::pow(a, b);
    } else {
      // Integer power by squaring; negative exponents give 0 except for bases 1 and -1.
      // Products wrap modulo 2^bits as in PyTorch; unsigned arithmetic keeps that defined.
      if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
      using U = std::make_unsigned_t<C>;
      U r = 1, x = static_cast<U>(a);
      for (C e = b; e > 0; e >>= 1) {
        if (e & 1) r = static_cast<U>(r * x);
        if (e > 1) x = static_cast<U>(x * x);
      }
      return static_cast<C>(r);
    }
  }
};
/** The larger of a and b; NaN if either is. */
struct MaximumOp {
  template <typename T>
  static constexpr bool supports = true;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return a > b ? a : b;
  }
};
/** The smaller of a and b; NaN if either is. */
struct MinimumOp {
  template <typename T>
  static constexpr bool supports = true;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return a < b ? a : b;
  }
};

}  // namespace ember::sdk
