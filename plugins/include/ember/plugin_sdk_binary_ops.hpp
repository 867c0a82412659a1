// Scalar semantics of the core binary ops (PyTorch's), and of the math that has no std::
// function (erfinv), shared by every backend's loops.
#pragma once

#include <cmath>
#include <type_traits>

#include "ember/plugin_sdk.hpp"

namespace ember::sdk {

// Note [Binary op semantics]
// What one element of add/sub/mul/div/pow/maximum/minimum/div_floor/div_trunc is, in the
// compute type C: bool add is or and mul is and; integer pow wraps modulo 2^bits and a negative
// exponent tensor gives 0 except for the bases 1 and -1 (a negative integer exponent given as a
// number is refused by the core, as in PyTorch); maximum/minimum propagate NaN; integer
// division is exact (Note [Integer division is exact]). `supports<T>` says which storage
// dtypes the op takes. Backends differ in how they loop, vectorise and thread, not in this, so
// the reference backend checks the loops while these definitions are pinned by core tests.

// Note [Integer overflow wraps]
// PyTorch's integer add/sub/mul/neg/abs wrap modulo 2^bits (two's complement), so
// INT64_MAX + 1 is INT64_MIN and -INT64_MIN is INT64_MIN. In C++ signed overflow is undefined
// behaviour (and the optimiser uses that), so the wrapping forms below compute in the unsigned
// type, where the result is defined, and convert back (modular since C++20, and in every
// compiler the SDK supports before it). Types narrower than int are promoted first, so an int16
// product is done in unsigned int, not in uint16 promoted back to (overflowing) int.

/** C itself, as a type trait (std::type_identity is C++20; the SDK is C++17). */
template <typename C>
struct SameType {
  using type = C;
};

/** The unsigned type integer arithmetic on C is done in (C promoted first); C for others. */
template <typename C>
using WrapType =
    typename std::conditional_t<std::is_integral_v<C> && !std::is_same_v<C, bool>,
                                std::make_unsigned<decltype(C() + 0)>, SameType<C>>::type;

// The wrapping forms are also device functions, so the CUDA plugin's kernels share them.
#ifdef __CUDACC__
#define EMBER_SDK_HD __host__ __device__
#else
#define EMBER_SDK_HD
#endif

/** a + b, wrapping for integers (Note [Integer overflow wraps]). */
template <typename C>
EMBER_SDK_HD constexpr C wrap_add(C a, C b) {
  using U = WrapType<C>;
  return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
/** a - b, wrapping for integers. */
template <typename C>
EMBER_SDK_HD constexpr C wrap_sub(C a, C b) {
  using U = WrapType<C>;
  return static_cast<C>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
/** a * b, wrapping for integers. */
template <typename C>
EMBER_SDK_HD constexpr C wrap_mul(C a, C b) {
  using U = WrapType<C>;
  return static_cast<C>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}
/** -a, wrapping for integers (-INT64_MIN is INT64_MIN). */
template <typename C>
EMBER_SDK_HD constexpr C wrap_neg(C a) {
  if constexpr (std::is_integral_v<C>)
    return wrap_sub(C(0), a);
  else
    return -a;
}

/** |a|: wrapping for integers (|INT64_MIN| is INT64_MIN), the sign bit cleared for floating types
 *  (|-0.0| is +0.0, as fabs and PyTorch give). */
template <typename C>
EMBER_SDK_HD constexpr C wrap_abs(C a) {
  if constexpr (std::is_floating_point_v<C>)
    return std::fabs(a);
  else if constexpr (std::is_signed_v<C>)
    return a < C(0) ? wrap_neg(a) : a;
  else
    return a;
}

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
      return wrap_add(a, b);
  }
};
/** a - b; not bool. */
struct SubOp {
  template <typename T>
  static constexpr bool supports = kNotBool<T>;
  template <typename C>
  C operator()(C a, C b) const {
    return wrap_sub(a, b);
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
      return wrap_mul(a, b);
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
      // Products wrap modulo 2^bits as in PyTorch (Note [Integer overflow wraps]).
      if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
      C r = 1, x = a;
      for (C e = b; e > 0; e >>= 1) {
        if (e & 1) r = wrap_mul(r, x);
        if (e > 1) x = wrap_mul(x, x);
      }
      return r;
    }
  }
};
/** ReLU's gradient: g where the ReLU's output y is > 0, else 0 (PyTorch's threshold_backward:
 *  a NaN y passes g through). Inputs {g, y}. */
struct ReluBackwardOp {
  template <typename T>
  static constexpr bool supports = kNotBool<T>;
  template <typename C>
  C operator()(C g, C y) const {
    return y <= C(0) ? C(0) : g;
  }
};
/** a - trunc(a / b) * b, the dividend's sign (C's fmod); integer b == 0 never reaches it
 *  (the core refuses it) and gives 0, b == -1 gives 0 (INT_MIN % -1 overflows). */
struct FmodOp {
  template <typename T>
  static constexpr bool supports = kNotBool<T>;
  template <typename C>
  EMBER_SDK_HD C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return std::fmod(a, b);
    } else {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C(0);
      }
      return a % b;
    }
  }
};
// Note [Integer division is exact]
// Integer floor and trunc division are integer operations in every backend: a route through
// double (floor(double(a) / double(b))) rounds operands above 2^53, so 2^62 + 1 // 1 came out as
// 2^62. A divisor of 0 never reaches these loops (the core raises ZeroDivisionError first, as
// PyTorch does on the CPU; Note [Integer division by zero] in core/ops/elementwise.cpp), and
// INT_MIN // -1, which traps in C++, wraps to INT_MIN as the other integer ops do. Floating
// floor division is PyTorch's div_floor: from fmod, so that 1 // 0.1 is 9 as in Python, where
// floor(1 / 0.1) rounds the quotient up to 10 first.

/** floor(a / b), rounded toward negative infinity (Python's //); not bool. */
struct DivFloorOp {
  template <typename T>
  static constexpr bool supports = kNotBool<T>;
  template <typename C>
  EMBER_SDK_HD C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (b == C(0)) return a / b;
      const C mod = std::fmod(a, b);
      C div = (a - mod) / b;
      if (mod != C(0) && (b < C(0)) != (mod < C(0))) div -= C(1);
      if (div == C(0)) return std::copysign(C(0), a / b);
      C floordiv = std::floor(div);
      if (div - floordiv > C(0.5)) floordiv += C(1);
      return floordiv;
    } else {
      if (b == C(0)) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return wrap_neg(a);
        const C q = static_cast<C>(a / b);
        return static_cast<C>(a % b) != C(0) && ((a < C(0)) != (b < C(0))) ? C(q - 1) : q;
      } else {
        return static_cast<C>(a / b);
      }
    }
  }
};
/** trunc(a / b), rounded toward zero (C's integer division); not bool. */
struct DivTruncOp {
  template <typename T>
  static constexpr bool supports = kNotBool<T>;
  template <typename C>
  EMBER_SDK_HD C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return std::trunc(a / b);
    } else {
      if (b == C(0)) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return wrap_neg(a);
      }
      return static_cast<C>(a / b);
    }
  }
};
/** GELU's gradient, inputs {g, x}: g (Phi(x) + x phi(x)), Phi and phi the normal distribution's
 *  cdf and density (GELU's exact, erf form). */
struct GeluBackwardOp {
  template <typename T>
  static constexpr bool supports = kIsFloating<T>;
  template <typename C>
  C operator()(C g, C x) const {
    const C cdf = C(0.5) * (C(1) + std::erf(x * C(0.7071067811865476)));
    const C pdf = std::exp(C(-0.5) * x * x) * C(0.3989422804014327);
    return g * (cdf + x * pdf);
  }
};
/** GELU's gradient in its tanh form, y = x/2 (1 + tanh(u)), u = k (x + c x^3): inputs {g, x}. */
struct GeluTanhBackwardOp {
  template <typename T>
  static constexpr bool supports = kIsFloating<T>;
  template <typename C>
  C operator()(C g, C x) const {
    const C k = C(0.7978845608028654), c = C(0.044715);
    const C t = std::tanh(k * (x + c * x * x * x));
    const C du = k * (C(1) + C(3) * c * x * x);
    return g * (C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * du);
  }
};
/** a - floor(a / b) * b, the divisor's sign (Python's %): fmod moved by b where the signs
 *  differ, as PyTorch computes it. */
struct RemainderOp {
  template <typename T>
  static constexpr bool supports = kNotBool<T>;
  template <typename C>
  EMBER_SDK_HD C operator()(C a, C b) const {
    const C m = FmodOp{}(a, b);
    if constexpr (std::is_unsigned_v<C>) {
      return m;
    } else {
      return m != C(0) && ((b < C(0)) != (m < C(0))) ? C(m + b) : m;
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

// Note [Binary math ops]
// atan2, hypot and logaddexp take floating dtypes only (the core promotes integers, as for
// div). logaddexp is max + log1p(exp(-|a - b|)), which neither overflows nor loses the smaller
// term; where a == b the difference is 0 (or NaN for two infinities of one sign, whose sum is
// that infinity), so equal operands give a + log(2) directly, as NumPy's logaddexp does.

/** The angle of the point (b, a): atan(a / b) in the quadrant of (b, a), as C's atan2. */
struct Atan2Op {
  template <typename T>
  static constexpr bool supports = kIsFloating<T>;
  template <typename C>
  EMBER_SDK_HD C operator()(C a, C b) const {
    return std::atan2(a, b);
  }
};
/** sqrt(a^2 + b^2) without overflow or underflow in between, as C's hypot. */
struct HypotOp {
  template <typename T>
  static constexpr bool supports = kIsFloating<T>;
  template <typename C>
  EMBER_SDK_HD C operator()(C a, C b) const {
    return std::hypot(a, b);
  }
};
/** log(exp(a) + exp(b)), computed stably (Note [Binary math ops]). */
struct LogaddexpOp {
  template <typename T>
  static constexpr bool supports = kIsFloating<T>;
  template <typename C>
  EMBER_SDK_HD C operator()(C a, C b) const {
    if (a == b) return a + C(0.6931471805599453);  // ln 2; inf for two +infs, -inf for -infs
    const C m = a > b ? a : b;
    return m + std::log1p(std::exp(-std::fabs(a - b)));
  }
};

/** One element of dtype S as dtype D (copy's conversion): to bool by != 0, floating to integer by
 *  Note [Float to integer conversion] (float_to_int: a plain cast is undefined for NaN and
 *  out-of-range values), otherwise through S's compute type. */
template <typename S, typename D>
D convert_element(S v) {
  if constexpr (std::is_same_v<D, bool>) {
    return static_cast<Compute<S>>(v) != Compute<S>(0);
  } else if constexpr (kIsHalf<D>) {
    return D(static_cast<float>(static_cast<Compute<S>>(v)));
  } else if constexpr (std::is_integral_v<D> && !std::is_integral_v<Compute<S>>) {
    return float_to_int<D>(static_cast<double>(static_cast<Compute<S>>(v)));
  } else {
    return static_cast<D>(static_cast<Compute<S>>(v));
  }
}

/** fill's value as T: bool from the double value (!= 0), integers from the exact int64 value,
 *  floating types from the double value (through float for the 16-bit ones). */
template <typename T>
T fill_value(double value, int64_t int_value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value != 0;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(int_value);
  } else if constexpr (kIsHalf<T>) {
    return T(static_cast<float>(value));
  } else {
    return static_cast<T>(value);
  }
}

/** clamp on one element of the compute type C, on the host: a NaN x stays NaN; a bound not given,
 *  or NaN, clamps nothing (every comparison with it is false, as for floating x); integer
 *  tensors take their exact int64 bounds, floating ones the double bounds, each saturating at
 *  C's range. Built from clamp's attributes (has_lo, lo, int_lo, has_hi, hi, int_hi). */
struct ClampRule {
  bool has_lo, has_hi;
  double lo, hi;
  int64_t ilo, ihi;

  /** The rule of a clamp call's attributes. */
  template <typename Attrs>
  explicit ClampRule(const Attrs& a)
      : has_lo(a.has_lo != 0 && !std::isnan(a.lo)),
        has_hi(a.has_hi != 0 && !std::isnan(a.hi)),
        lo(a.lo),
        hi(a.hi),
        ilo(a.int_lo),
        ihi(a.int_hi) {}

  /** x clamped. */
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(x)) return x;
    }
    if constexpr (std::is_integral_v<C>) {
      if (has_lo && x < saturating_int_bound<C>(ilo)) x = saturating_int_bound<C>(ilo);
      if (has_hi && x > saturating_int_bound<C>(ihi)) x = saturating_int_bound<C>(ihi);
    } else {
      if (has_lo && x < saturating_bound<C>(lo)) x = saturating_bound<C>(lo);
      if (has_hi && x > saturating_bound<C>(hi)) x = saturating_bound<C>(hi);
    }
    return x;
  }
};

// Note [erfinv]
// C++ has no inverse error function. erfinv(x) starts from Giles' single-precision
// approximation ("Approximating the erfinv function", GPU Computing Gems, 2011: a polynomial
// in w = -log(1 - x^2), relative error ~4e-7 on float's range) and refines it in double to
// within 1 ulp of double (float results are then correctly rounded but for rare ties). For
// |x| < 0.5, two Halley steps on f(y) = erf(y) - |x|, which converge cubically. Above, erf(y)
// rounds toward 1 and f loses its digits, and in double's far tail (1 - |x| < 1e-7) the
// polynomial's guess is poor; there Newton runs on g(y) = log(erfc(y) / (1 - |x|)) (1 - |x|
// is exact for |x| >= 0.5, erfc keeps its relative accuracy, g is close to linear) until a
// step is below 1e-12 relative: two or three steps, up to six at 1 - 2^-53.
// erfinv(+-1) = +-inf, |x| > 1 or NaN gives NaN, as PyTorch.

/** The inverse of erf on [-1, 1] (Note [erfinv]). */
template <typename C>
EMBER_SDK_HD C erfinv(C x_in) {
  const double x = static_cast<double>(x_in);
  const double ax = std::fabs(x);
  if (!(ax <= 1.0)) return static_cast<C>(NAN);
  if (ax == 1.0) return static_cast<C>(x * static_cast<double>(INFINITY));
  if (ax == 0.0) return x_in;  // keeps the sign of zero
  const double one_minus = 1.0 - ax;
  double w = -std::log(one_minus * (1.0 + ax));
  double p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double y = p * ax;
  if (ax < 0.5) {
    for (int step = 0; step < 2; ++step) {
      // f = erf(y) - |x|, f' = 2 / sqrt(pi) exp(-y^2); Halley: y -= z / (1 + y z), z = f / f'.
      const double z = (std::erf(y) - ax) / (1.1283791670955126 * std::exp(-y * y));
      y -= z / (1.0 + y * z);
    }
  } else {
    for (int step = 0; step < 8; ++step) {
      // Newton on g = log(erfc(y) / (1 - |x|)), g' = -f' / erfc(y), which is close to linear
      // where f is exponential; a step below 1e-12 leaves an error far below 1 ulp.
      const double e = std::erfc(y);
      const double dy = std::log(e / one_minus) * e / (1.1283791670955126 * std::exp(-y * y));
      y += dy;
      if (std::fabs(dy) < 1e-12 * y) break;
    }
  }
  return static_cast<C>(x < 0 ? -y : y);
}

// Note [Integer binary ops]
// The kinds of the integer_binary kernel, PyTorch's semantics in each:
// - and, or, xor: bitwise on integers, logical on bool.
// - shift left and right (integers only): the count is read as unsigned, so a negative count,
//   like one of the type's width or more, shifts every bit out: left gives 0, right gives 0,
//   or -1 for a negative signed value (the sign fills). A left shift wraps (Note [Integer
//   overflow wraps]); a right shift of a signed value is arithmetic.
// - gcd and lcm (integers only): gcd is of the absolute values (gcd(0, 0) = 0); lcm is
//   |a / gcd(a, b) * b|, wrapping, and 0 if either is 0. -INT64_MIN wraps to itself, so
//   gcd(INT64_MIN, 0) is INT64_MIN, as in PyTorch.
// Each kind is its own functor, so a loop is specialised for one kind; run_integer_binary
// turns the kernel's `kind` attribute into that functor once per call.

/** Kinds of the integer_binary op (Note [Integer binary ops]). */
enum IntegerBinaryKind : int64_t {
  kBitAnd = 0,
  kBitOr = 1,
  kBitXor = 2,
  kShiftLeft = 3,
  kShiftRight = 4,
  kGcd = 5,
  kLcm = 6,
};

/** The integer dtypes, signed or not (bool excluded). */
template <typename T>
constexpr bool kIsInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>;

/** a & b (bool: and). */
struct BitAndOp {
  template <typename T>
  static constexpr bool supports = std::is_integral_v<T>;
  template <typename C>
  EMBER_SDK_HD C operator()(C a, C b) const {
    return static_cast<C>(a & b);
  }
};
/** a | b (bool: or). */
struct BitOrOp {
  template <typename T>
  static constexpr bool supports = std::is_integral_v<T>;
  template <typename C>
  EMBER_SDK_HD C operator()(C a, C b) const {
    return static_cast<C>(a | b);
  }
};
/** a ^ b (bool: xor). */
struct BitXorOp {
  template <typename T>
  static constexpr bool supports = std::is_integral_v<T>;
  template <typename C>
  EMBER_SDK_HD C operator()(C a, C b) const {
    return static_cast<C>(a ^ b);
  }
};
/** a << b, wrapping; 0 for a count outside [0, bits) (Note [Integer binary ops]). */
struct ShiftLeftOp {
  template <typename T>
  static constexpr bool supports = kIsInteger<T>;
  template <typename C>
  EMBER_SDK_HD C operator()(C a, C b) const {
    using U = WrapType<C>;
    constexpr int kBits = 8 * static_cast<int>(sizeof(C));
    if (static_cast<std::make_unsigned_t<C>>(b) >= static_cast<unsigned>(kBits)) return C(0);
    return static_cast<C>(static_cast<U>(static_cast<U>(a) << static_cast<int>(b)));
  }
};
/** a >> b, arithmetic for signed a; the sign alone for a count outside [0, bits). */
struct ShiftRightOp {
  template <typename T>
  static constexpr bool supports = kIsInteger<T>;
  template <typename C>
  EMBER_SDK_HD C operator()(C a, C b) const {
    constexpr int kBits = 8 * static_cast<int>(sizeof(C));
    if (static_cast<std::make_unsigned_t<C>>(b) >= static_cast<unsigned>(kBits)) {
      if constexpr (std::is_signed_v<C>) return a < C(0) ? C(-1) : C(0);
      return C(0);
    }
    return static_cast<C>(a >> static_cast<int>(b));
  }
};
/** The greatest common divisor of |a| and |b| (Note [Integer binary ops]). */
struct GcdOp {
  template <typename T>
  static constexpr bool supports = kIsInteger<T>;
  template <typename C>
  EMBER_SDK_HD C operator()(C a, C b) const {
    using P = decltype(C() + 0);  // C promoted, where |C's minimum| fits for the narrow types
    using U = std::make_unsigned_t<P>;
    U x = static_cast<U>(wrap_abs(static_cast<P>(a)));
    U y = static_cast<U>(wrap_abs(static_cast<P>(b)));
    while (x != 0) {
      const U r = y % x;
      y = x;
      x = r;
    }
    return static_cast<C>(y);
  }
};
/** |a / gcd(a, b) * b|, wrapping; 0 if either is 0. */
struct LcmOp {
  template <typename T>
  static constexpr bool supports = kIsInteger<T>;
  template <typename C>
  EMBER_SDK_HD C operator()(C a, C b) const {
    const C g = GcdOp{}(a, b);
    if (g == C(0)) return C(0);
    return wrap_abs(wrap_mul(static_cast<C>(a / g), b));
  }
};

/** A backend's integer_binary kernel: returns f(Op{}) (a status) with the functor of `kind`, or
 *  fails the call for an unknown kind. */
template <typename F>
int32_t run_integer_binary(const ember_kernel_call* call, int64_t kind, F&& f) {
  switch (kind) {
    case kBitAnd:
      return f(BitAndOp{});
    case kBitOr:
      return f(BitOrOp{});
    case kBitXor:
      return f(BitXorOp{});
    case kShiftLeft:
      return f(ShiftLeftOp{});
    case kShiftRight:
      return f(ShiftRightOp{});
    case kGcd:
      return f(GcdOp{});
    case kLcm:
      return f(LcmOp{});
    default:
      return fail(call, EMBER_ERR_INVALID, "integer_binary: unknown kind %lld",
                  static_cast<long long>(kind));
  }
}

/** ~x (bool: not x). */
template <typename C>
EMBER_SDK_HD constexpr C bitwise_not(C x) {
  if constexpr (std::is_same_v<C, bool>)
    return !x;
  else
    return static_cast<C>(~x);
}

/** x * relu6(x + 3) / 6; NaN stays NaN. */
template <typename C>
EMBER_SDK_HD C hardswish(C x) {
  return x <= C(-3) ? C(0) * x : x >= C(3) ? x : x * (x + C(3)) / C(6);
}
/** relu6(x + 3) / 6; NaN stays NaN. */
template <typename C>
EMBER_SDK_HD C hardsigmoid(C x) {
  return x <= C(-3) ? C(0) : x >= C(3) ? C(1) : (x + C(3)) / C(6);
}

/** log|Gamma(x)|, without C's lgamma's global sign variable (a data race between threads). */
template <typename C>
EMBER_SDK_HD C lgamma(C x) {
#if defined(__CUDA_ARCH__)
  return ::lgamma(x);
#elif defined(__GLIBC__)
  int sign = 0;
  if constexpr (std::is_same_v<C, float>)
    return ::lgammaf_r(x, &sign);
  else
    return ::lgamma_r(x, &sign);
#else
  return std::lgamma(x);
#endif
}

// Note [Polygamma]
// polygamma(n, x) is the n-th derivative of digamma = Gamma'/Gamma, PyTorch's definitions,
// computed in double for every dtype:
// - digamma (n = 0): -inf at +0 and +inf at -0, NaN at the negative integers; below 0 the
//   reflection psi(x) = psi(1 - x) - pi / tan(pi x); above, the recurrence psi(x) = psi(x + 1)
//   - 1/x up to x >= 10, then the asymptotic series ln x - 1/(2x) - sum B_2k / (2k x^2k)
//   (seven terms: the next, 3617 / (8160 x^16), is below 5e-17 there).
// - n >= 1: (-1)^(n+1) n! zeta(n + 1, x), with the Hurwitz zeta function summed directly
//   until x + i >= 9 (and at least 9 terms), then the Euler-Maclaurin tail with the Bernoulli
//   numbers' coefficients, as Cephes' zeta does; a pole (+inf) at x = 0 and the negative
//   integers.
// The derivative of polygamma(n) is polygamma(n + 1), so every order has a gradient.

/** digamma in double (Note [Polygamma]). */
EMBER_SDK_HD inline double digamma_f64(double x) {
  constexpr double kPi = 3.141592653589793;
  if (x == 0)
    return std::signbit(x) ? static_cast<double>(INFINITY) : -static_cast<double>(INFINITY);
  double result = 0;
  if (x < 0) {
    if (x == std::floor(x)) return static_cast<double>(NAN);
    result = -kPi / std::tan(kPi * x);
    x = 1 - x;
  }
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  const double z = 1 / (x * x);
  const double tail =
      z * (1.0 / 12 -
           z * (1.0 / 120 -
                z * (1.0 / 252 -
                     z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z * (1.0 / 12)))))));
  return result + std::log(x) - 0.5 / x - tail;
}

/** The Hurwitz zeta function zeta(s, q) = sum over k >= 0 of (q + k)^-s, for s > 1. */
EMBER_SDK_HD inline double hurwitz_zeta(double s, double q) {
  if (q <= 0) {
    if (q == std::floor(q)) return static_cast<double>(INFINITY);
    if (s != std::floor(s)) return static_cast<double>(NAN);
  }
  // (2k)! / B_2k, the Euler-Maclaurin coefficients.
  const double kA[12] = {12.0,
                         -720.0,
                         30240.0,
                         -1209600.0,
                         47900160.0,
                         -1.8924375803183791606e9,
                         7.47242496e10,
                         -2.950130727918164224e12,
                         1.1646782814350067249e14,
                         -4.5979787224074726105e15,
                         1.8152105401943546773e17,
                         -7.1661652561756670113e18};
  constexpr double kEps = 1.11022302462515654042e-16;
  double sum = std::pow(q, -s), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9) {
    ++i;
    a += 1;
    b = std::pow(a, -s);
    sum += b;
    if (std::fabs(b / sum) < kEps) return sum;
  }
  const double w = a;
  sum += b * w / (s - 1) - 0.5 * b;
  double fac = 1, k = 0;
  for (int j = 0; j < 12; ++j) {
    fac *= s + k;
    b /= w;
    const double t = fac * b / kA[j];
    sum += t;
    if (std::fabs(t / sum) < kEps) break;
    k += 1;
    fac *= s + k;
    b /= w;
    k += 1;
  }
  return sum;
}

/** The n-th derivative of digamma at x (Note [Polygamma]). */
template <typename C>
EMBER_SDK_HD C polygamma(int64_t n, C x_in) {
  const double x = static_cast<double>(x_in);
  if (n == 0) return static_cast<C>(digamma_f64(x));
  double factorial = 1;
  for (int64_t k = 2; k <= n; ++k) factorial *= static_cast<double>(k);
  const double sign = n % 2 == 1 ? 1.0 : -1.0;
  return static_cast<C>(sign * factorial * hurwitz_zeta(static_cast<double>(n + 1), x));
}

}  // namespace ember::sdk
