#include "ember/tensor/dtype.h"

#include <cmath>
#include <limits>

#include "ember/tensor/scalar.h"
#include "ember/util/error.h"

namespace ember {

std::atomic<DType> detail::g_default_dtype{DType::Float32};

void set_default_dtype(DType d) {
  EMBER_CHECK_TYPE(is_floating(d),
                   "[set_default_dtype] only floating-point types are supported as the default "
                   "type, got {}",
                   dtype_name(d));
  detail::g_default_dtype.store(d, std::memory_order_relaxed);
}

std::string_view dtype_name(DType d) {
  constexpr std::string_view names[] = {"float32", "float64", "float16", "bfloat16", "int64",
                                        "int32",   "int8",    "uint8",   "bool"};
  const int i = static_cast<int>(d);
  return i >= 0 && i < kNumDTypes ? names[i] : "invalid";
}

// Note [Type promotion]
// PyTorch's lattice: bool < uint8/int8 < int32 < int64 < float16/bfloat16 < float32 < float64.
// uint8 with int8 promotes to int16 in PyTorch; Ember has no int16, so it goes to int32.
// float16 with bfloat16 promotes to float32. Scalars (0-dim "wrapped numbers") are handled by
// the op layer before calling this.
DType promote_types(DType a, DType b) {
  if (a == b) return a;
  auto rank = [](DType d) {
    switch (d) {
      case DType::Bool:
        return 0;
      case DType::UInt8:
      case DType::Int8:
        return 1;
      case DType::Int32:
        return 2;
      case DType::Int64:
        return 3;
      case DType::Float16:
      case DType::BFloat16:
        return 4;
      case DType::Float32:
        return 5;
      case DType::Float64:
        return 6;
    }
    return -1;
  };
  const int ra = rank(a), rb = rank(b);
  if (ra == rb) return ra == 1 ? DType::Int32 : DType::Float32;  // u8+i8, f16+bf16
  return ra > rb ? a : b;
}

bool can_cast(DType from, DType to) {
  if (is_floating(from)) return is_floating(to);
  if (is_integral(from)) return to != DType::Bool;
  return true;  // bool goes anywhere
}

DType parse_dtype(std::string_view name) {
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  constexpr Alias aliases[] = {
      {"float32", DType::Float32},   {"f32", DType::Float32},   {"float", DType::Float32},
      {"float64", DType::Float64},   {"f64", DType::Float64},   {"double", DType::Float64},
      {"float16", DType::Float16},   {"f16", DType::Float16},   {"half", DType::Float16},
      {"bfloat16", DType::BFloat16}, {"bf16", DType::BFloat16}, {"int64", DType::Int64},
      {"i64", DType::Int64},         {"long", DType::Int64},    {"int32", DType::Int32},
      {"i32", DType::Int32},         {"int", DType::Int32},     {"int8", DType::Int8},
      {"i8", DType::Int8},           {"uint8", DType::UInt8},   {"u8", DType::UInt8},
      {"bool", DType::Bool}};
  for (const auto& a : aliases) {
    if (a.name == name) return a.dtype;
  }
  throw ValueError(
      fmt::format("[dtype] unknown dtype name: '{}' (try float32, float64, int64, bool)", name));
}

// The checked conversion of a number to a tensor element (ember/tensor/scalar.h).
namespace {

// Note [Scalars that do not fit]
// A number becomes a tensor element in full, full_like, fill_, masked_fill_, the number operand
// of an in-place integer op (x.add_(300) on uint8) and ember.tensor(...) of Python numbers with
// a dtype. A value the dtype cannot hold is an error there, as in PyTorch (c10::checked_convert:
// "value cannot be converted to type uint8_t without overflow"), never a wrapped or truncated
// element: full(300, uint8) gave 44 and fill_(nan) on int64 gave INT64_MIN. What fits is
// PyTorch's rule:
//   integer dtypes  an integer in [min, max], or for uint8 an integer down to -255, which wraps
//                   as PyTorch lets it (x.add_(-1) is x + 255); a floating number that is finite
//                   and in [min, max] before truncation (NaN and infinities do not fit);
//   floating dtypes a number of magnitude at most the largest finite value, or an infinity or
//                   NaN (1e40 does not fit float32, nor 70000 float16);
//   bool            anything.
// Conversions of tensors (to(), copies) are not checked: they follow Note [Float to integer
// conversion], as PyTorch's do. Out-of-place arithmetic with a number (x + 300 on uint8) wraps
// as in PyTorch, where the number's dtype only takes part in the promotion.

struct Range {
  double lo, hi;     // the finite values a floating number may take
  int64_t ilo, ihi;  // the integers an integer may take
};

Range range_of(DType d) {
  constexpr double kInt64Hi = 0x1p63;  // exclusive: the doubles below 2^63 fit int64
  switch (d) {
    case DType::Int64:
      return {-kInt64Hi, std::nextafter(kInt64Hi, 0.0), INT64_MIN, INT64_MAX};
    case DType::Int32:
      return {INT32_MIN, INT32_MAX, INT32_MIN, INT32_MAX};
    case DType::Int8:
      return {INT8_MIN, INT8_MAX, INT8_MIN, INT8_MAX};
    case DType::UInt8:
      return {0, UINT8_MAX, -int64_t{UINT8_MAX}, UINT8_MAX};
    case DType::Float16:
      return {-65504.0, 65504.0, INT64_MIN, INT64_MAX};
    case DType::BFloat16:
      return {-0x1.fep127, 0x1.fep127, INT64_MIN, INT64_MAX};
    case DType::Float32:
      return {-std::numeric_limits<float>::max(), std::numeric_limits<float>::max(), INT64_MIN,
              INT64_MAX};
    default:
      return {-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(),
              INT64_MIN, INT64_MAX};
  }
}

}  // namespace

void check_scalar_fits(Scalar s, DType dtype, const char* op) {
  if (dtype == DType::Bool || dtype == DType::Float64 || s.kind() == Scalar::Kind::Bool) return;
  const Range r = range_of(dtype);
  bool fits;
  if (s.kind() == Scalar::Kind::Int) {
    const int64_t v = s.to_int();
    // float16 is the one floating dtype an int64 can overflow.
    fits = is_floating(dtype) ? static_cast<double>(v) >= r.lo && static_cast<double>(v) <= r.hi
                              : v >= r.ilo && v <= r.ihi;
  } else {
    const double v = s.to_double();
    fits = is_floating(dtype) ? !(std::abs(v) > r.hi) || std::isinf(v) : v >= r.lo && v <= r.hi;
  }
  if (__builtin_expect(fits, 1)) return;
  const std::string value = s.kind() == Scalar::Kind::Int ? fmt::format("{}", s.to_int())
                                                          : fmt::format("{}", s.to_double());
  throw ValueError(fmt::format("[{}] value {} cannot be converted to type {} without overflow", op,
                               value, dtype));
}

FloatInfo finfo(DType d) {
  // eps = 2^-(mantissa bits), tiny = 2^(1 - bias), max = (2 - eps) * 2^bias; resolution is
  // 10^-floor(mantissa digits * log10(2)), PyTorch's (and NumPy's) figures.
  switch (d) {
    case DType::Float32:
      return {d, 32, 0x1p-23, 0x1.fffffep127, -0x1.fffffep127, 0x1p-126, 1e-6};
    case DType::Float64:
      return {d, 64, 0x1p-52, 0x1.fffffffffffffp1023, -0x1.fffffffffffffp1023, 0x1p-1022, 1e-15};
    case DType::Float16:
      return {d, 16, 0x1p-10, 65504.0, -65504.0, 0x1p-14, 1e-3};
    case DType::BFloat16:
      return {d, 16, 0x1p-7, 0x1.fep127, -0x1.fep127, 0x1p-126, 1e-2};
    default:
      throw TypeError(
          fmt::format("[finfo] {} is not supported by finfo (a floating dtype is: "
                      "float16, bfloat16, float32, float64; iinfo describes integers)",
                      dtype_name(d)));
  }
}

IntInfo iinfo(DType d) {
  switch (d) {
    case DType::UInt8:
      return {d, 8, 0, 255};
    case DType::Int8:
      return {d, 8, -128, 127};
    case DType::Int32:
      return {d, 32, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case DType::Int64:
      return {d, 64, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    default:
      throw TypeError(
          fmt::format("[iinfo] {} is not supported by iinfo (an integer dtype is: "
                      "uint8, int8, int32, int64; finfo describes floating types)",
                      dtype_name(d)));
  }
}

}  // namespace ember
