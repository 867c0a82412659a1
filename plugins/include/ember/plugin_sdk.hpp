// Header-only C++ helpers over the C plugin ABI. Plugins may use them; they never link the
// core. The core uses the same half-precision types so both sides agree on the bits.
#pragma once

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "ember/plugin_abi.h"

namespace ember::sdk {

/** IEEE 754 binary16 stored as bits; arithmetic goes through float. */
struct Half {
  uint16_t bits = 0;
  Half() = default;
  /** Rounds a float to nearest even. */
  Half(float f) : bits(from_float(f)) {}  // NOLINT(google-explicit-constructor)
  /** Widens to float exactly. */
  operator float() const { return to_float(bits); }  // NOLINT(google-explicit-constructor)

  /** Converts float to binary16 bits, rounding to nearest even. */
  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    if (x >= 0x7f800000u) return static_cast<uint16_t>(sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
    if (x < 0x38800000u) {                                               // subnormal or zero
      float a;
      std::memcpy(&a, &x, 4);
      const float scaled = a * 16777216.0f;  // 2^24: subnormal step is 2^-24
      return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
    }
    const uint32_t mant_odd = (x >> 13) & 1u;
    x += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
    return static_cast<uint16_t>(sign | (x >> 13));
  }
  /** Converts binary16 bits to float exactly. */
  static float to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    uint32_t out;
    if (exp == 0) {
      const float v = static_cast<float>(mant) / 16777216.0f;
      std::memcpy(&out, &v, 4);
      out |= sign;
    } else if (exp == 31) {
      out = sign | 0x7f800000u | (mant << 13);
    } else {
      out = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &out, 4);
    return f;
  }
};

/** bfloat16 stored as bits: the top half of a float, rounded to nearest even. */
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  /** Rounds a float to nearest even (NaN stays NaN). */
  BFloat16(float f) {  // NOLINT(google-explicit-constructor)
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<uint16_t>((x >> 16) | 0x40u);
      return;
    }
    x += 0x7fffu + ((x >> 16) & 1u);
    bits = static_cast<uint16_t>(x >> 16);
  }
  /** Widens to float exactly. */
  operator float() const {  // NOLINT(google-explicit-constructor)
    const uint32_t x = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

/** Maps an ember_dtype to its C++ element type. */
template <int D>
struct DTypeTraits;
template <> struct DTypeTraits<EMBER_F32> { using type = float; };
template <> struct DTypeTraits<EMBER_F64> { using type = double; };
template <> struct DTypeTraits<EMBER_F16> { using type = Half; };
template <> struct DTypeTraits<EMBER_BF16> { using type = BFloat16; };
template <> struct DTypeTraits<EMBER_I64> { using type = int64_t; };
template <> struct DTypeTraits<EMBER_I32> { using type = int32_t; };
template <> struct DTypeTraits<EMBER_I8> { using type = int8_t; };
template <> struct DTypeTraits<EMBER_U8> { using type = uint8_t; };
template <> struct DTypeTraits<EMBER_BOOL> { using type = bool; };

/** A tag carrying an element type through a generic lambda. */
template <typename T>
struct TypeTag {
  using type = T;
};

/** True for the floating element types, half precision included. */
template <typename T>
inline constexpr bool kIsFloating = std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                                    std::is_same_v<T, BFloat16>;

/** Type used to compute on T: float for half types, T otherwise. */
template <typename T>
using Compute = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

/** Calls fn(TypeTag<T>{}) for the element type of `dtype`; returns false if unknown. */
template <typename Fn>
bool visit_dtype(int32_t dtype, Fn&& fn) {
  switch (dtype) {
    case EMBER_F32: fn(TypeTag<float>{}); return true;
    case EMBER_F64: fn(TypeTag<double>{}); return true;
    case EMBER_F16: fn(TypeTag<Half>{}); return true;
    case EMBER_BF16: fn(TypeTag<BFloat16>{}); return true;
    case EMBER_I64: fn(TypeTag<int64_t>{}); return true;
    case EMBER_I32: fn(TypeTag<int32_t>{}); return true;
    case EMBER_I8: fn(TypeTag<int8_t>{}); return true;
    case EMBER_U8: fn(TypeTag<uint8_t>{}); return true;
    case EMBER_BOOL: fn(TypeTag<bool>{}); return true;
    default: return false;
  }
}

/** Bit mask of dtypes for kernel registration. */
constexpr uint32_t dtype_bit(ember_dtype d) { return 1u << static_cast<uint32_t>(d); }
/** Floating dtypes, half precision included. */
inline constexpr uint32_t kFloatingMask =
    dtype_bit(EMBER_F32) | dtype_bit(EMBER_F64) | dtype_bit(EMBER_F16) | dtype_bit(EMBER_BF16);
/** Signed and unsigned integer dtypes (bool excluded). */
inline constexpr uint32_t kIntegerMask =
    dtype_bit(EMBER_I64) | dtype_bit(EMBER_I32) | dtype_bit(EMBER_I8) | dtype_bit(EMBER_U8);
/** Every numeric dtype (bool excluded). */
inline constexpr uint32_t kNumericMask = kFloatingMask | kIntegerMask;
/** Every dtype. */
inline constexpr uint32_t kAllMask = kNumericMask | dtype_bit(EMBER_BOOL);

/** Writes a printf-style message into the call's error buffer and returns `status`. */
inline int32_t fail(const ember_kernel_call* call, int32_t status, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
inline int32_t fail(const ember_kernel_call* call, int32_t status, const char* fmt, ...) {
  if (call->error && call->error_capacity > 0) {
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(call->error, call->error_capacity, fmt, args);
    va_end(args);
  }
  return status;
}

/** Number of elements of a tensor descriptor. */
inline int64_t numel(const ember_tensor& t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.ndim; ++i) n *= t.sizes[i];
  return n;
}

/** True if the descriptor is dense row-major. */
inline bool is_contiguous(const ember_tensor& t) {
  int64_t expected = 1;
  for (int32_t i = t.ndim - 1; i >= 0; --i) {
    if (t.sizes[i] != 1 && t.strides[i] != expected) return false;
    expected *= t.sizes[i];
  }
  return true;
}

/** Typed pointer to element 0 of a descriptor. */
template <typename T>
T* data(const ember_tensor& t) {
  return static_cast<T*>(t.data);
}

}  // namespace ember::sdk
