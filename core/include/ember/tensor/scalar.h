// Scalar: a number passed to an op, remembering whether it was written as integer, float or bool.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "ember/tensor/dtype.h"
#include "ember/util/export.h"

namespace ember {

/** A double as int64 by Note [Float to integer conversion] in <ember/plugin_sdk.hpp> (NaN, out
 *  of range -> INT64_MIN): the rule every backend uses too. */
using sdk::float_to_int64;

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
    return kind_ == Kind::Float ? default_dtype() : kind_ == Kind::Int ? DType::Int64 : DType::Bool;
  }

 private:
  Kind kind_ = Kind::Int;
  int64_t i_ = 0;
  double d_ = 0;
};

/** Throws ValueError "[op] value V cannot be converted to type D without overflow" unless `s`
 *  fits `dtype` (Note [Scalars that do not fit] in core/tensor/dtype.cpp, PyTorch's rule). */
EMBER_API void check_scalar_fits(Scalar s, DType dtype, const char* op);

}  // namespace ember
