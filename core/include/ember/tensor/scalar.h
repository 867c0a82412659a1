// Scalar: a number passed to an op, remembering whether it was written as integer, float or bool.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "ember/tensor/dtype.h"

namespace ember {

// Note [Float to integer conversion]
// C++ leaves converting a NaN, an infinity or an out-of-range double to an integer undefined
// (the op fuzzer reached it through pow(int tensor, nan) -> fill_). Ember defines it as PyTorch
// behaves on x86 for int64, which is what the cvttsd2si instruction gives: truncation toward
// zero, and INT64_MIN (the "integer indefinite" value) for NaN, +-inf and anything outside
// [-2^63, 2^63). Narrower integer dtypes take the low bits of that int64, as a static_cast from
// int64 does, so x.to(int32) == x.to(int64).to(int32) and fill_ (which passes kernels the int64
// of its scalar) agrees with to(). (PyTorch's 32-bit conversions give INT32_MIN instead, in
// some paths only; one rule everywhere is worth that difference.) The CPU and reference backends
// convert float elements to integers with this same rule (float_to_int in their elementwise
// kernels), so the conformance kit sees one answer.

/** A double as int64 by Note [Float to integer conversion] (NaN, out of range -> INT64_MIN). */
inline int64_t float_to_int64(double v) {
  // 0x1p63 is 2^63; the negated test is also true for NaN.
  if (!(v >= -0x1p63 && v < 0x1p63)) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

/** A Python-like number: bool, integer or floating. */
class Scalar {
 public:
  /** Kinds of number, in promotion order. */
  enum class Kind : uint8_t { Bool, Int, Float };

  Scalar() = default;
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  Scalar(T v) {  // NOLINT(google-explicit-constructor)
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::Bool;
      i_ = v;
    } else if constexpr (std::is_integral_v<T>) {
      kind_ = Kind::Int;
      i_ = static_cast<int64_t>(v);
    } else {
      kind_ = Kind::Float;
      d_ = static_cast<double>(v);
    }
  }

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Float; }
  /** The value as double. */
  double to_double() const { return kind_ == Kind::Float ? d_ : static_cast<double>(i_); }
  /** The value as int64 (floats truncate; NaN and out of range give INT64_MIN, see
   *  Note [Float to integer conversion]). */
  int64_t to_int() const { return kind_ == Kind::Float ? float_to_int64(d_) : i_; }
  /** The dtype a tensor made from this scalar alone would have. */
  DType natural_dtype() const {
    return kind_ == Kind::Float ? kDefaultFloat : kind_ == Kind::Int ? DType::Int64 : DType::Bool;
  }

 private:
  Kind kind_ = Kind::Int;
  int64_t i_ = 0;
  double d_ = 0;
};

}  // namespace ember
