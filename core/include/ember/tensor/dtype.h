// DType: the element type of a tensor; values match ember_dtype in the plugin ABI.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ember/plugin_sdk.hpp"
#include "ember/util/export.h"
#include "ember/util/text_formatter.h"

namespace ember {

/** Element types, numbered as in the plugin ABI. */
enum class DType : int8_t {
  Float32 = EMBER_F32,
  Float64 = EMBER_F64,
  Float16 = EMBER_F16,
  BFloat16 = EMBER_BF16,
  Int64 = EMBER_I64,
  Int32 = EMBER_I32,
  Int8 = EMBER_I8,
  UInt8 = EMBER_U8,
  Bool = EMBER_BOOL,
};

/** Number of dtypes. */
inline constexpr int kNumDTypes = EMBER_NUM_DTYPES;

/** Short aliases, as users write them: ember::f32. */
inline constexpr DType f32 = DType::Float32, f64 = DType::Float64, f16 = DType::Float16,
                       bf16 = DType::BFloat16, i64 = DType::Int64, i32 = DType::Int32,
                       i8 = DType::Int8, u8 = DType::UInt8, boolean = DType::Bool;

/** Bytes per element. */
constexpr size_t itemsize(DType d) {
  return sdk::itemsize(static_cast<int32_t>(d));
}
/** True for float32/64, float16 and bfloat16. */
constexpr bool is_floating(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}
/** True for the integer types (bool excluded). */
constexpr bool is_integral(DType d) {
  return d == DType::Int64 || d == DType::Int32 || d == DType::Int8 || d == DType::UInt8;
}
/** True for the dtypes with negative values: the floating ones and int8..int64. */
constexpr bool is_signed(DType d) {
  return is_floating(d) || d == DType::Int64 || d == DType::Int32 || d == DType::Int8;
}
/** Name as PyTorch prints it: "float32", "int64", "bool". */
EMBER_API std::string_view dtype_name(DType d);
/** The dtype two operands promote to, on PyTorch's rules. */
EMBER_API DType promote_types(DType a, DType b);
/** Whether a value of `from` may be written into `to` without changing its kind, on PyTorch's
 *  rule (torch.can_cast): a floating value never into an integer or bool, nor a number into bool.
 */
EMBER_API bool can_cast(DType from, DType to);
/** Parses a dtype name ("float32", "f32", "int64", ...); throws on unknown names. */
EMBER_API DType parse_dtype(std::string_view name);
/** The numbers a floating dtype represents, as torch.finfo gives them. */
struct FloatInfo {
  DType dtype;        ///< the dtype described
  int bits;           ///< bits per element
  double eps;         ///< the gap between 1 and the next larger number
  double max;         ///< the largest finite number
  double min;         ///< the most negative finite number (-max)
  double tiny;        ///< the smallest positive normal number (torch's smallest_normal)
  double resolution;  ///< 10^-digits, the decimal precision
};
/** FloatInfo of a floating dtype; a TypeError for the others. */
EMBER_API FloatInfo finfo(DType d);

/** The range of an integer dtype, as torch.iinfo gives it. */
struct IntInfo {
  DType dtype;  ///< the dtype described
  int bits;     ///< bits per element
  int64_t min;  ///< the smallest value
  int64_t max;  ///< the largest value
};
/** IntInfo of an integer dtype (uint8, int8, int32, int64); a TypeError for the others. */
EMBER_API IntInfo iinfo(DType d);

// Note [The default dtype]
// The floating dtype that factories and conversions pick when nobody names one: a tensor made
// from Python floats, zeros/rand/arange/linspace/full with a float value, module parameters, a
// float scalar's dtype in type promotion, and the float an integer input is promoted to (true
// division, exp, mean). It is float32 until set_default_dtype (torch.set_default_dtype) says
// otherwise, and only a floating dtype is accepted. Like the default device (Note [The default
// device] in ember/tensor/device.h) it is one process-wide relaxed atomic, read on the factory
// and promotion paths and written only by set_default_dtype.
namespace detail {
/** The default floating dtype (Note [The default dtype]); set_default_dtype writes it. */
EMBER_API extern std::atomic<DType> g_default_dtype;
}  // namespace detail

/** The default floating dtype: float32 unless set_default_dtype changed it. */
inline DType default_dtype() {
  return detail::g_default_dtype.load(std::memory_order_relaxed);
}
/** Makes `d` the default floating dtype (torch.set_default_dtype); a TypeError unless `d` is
 *  floating. */
EMBER_API void set_default_dtype(DType d);

/** The C++ element type of a DType. */
template <DType D>
using cpp_type_t = typename sdk::DTypeTraits<static_cast<int>(D)>::type;

/** The DType of a C++ element type. */
template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return DType::Float32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::Float64;
  else if constexpr (std::is_same_v<T, sdk::Half>)
    return DType::Float16;
  else if constexpr (std::is_same_v<T, sdk::BFloat16>)
    return DType::BFloat16;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::Int64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::Int32;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DType::Int8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::UInt8;
  else if constexpr (std::is_same_v<T, bool>)
    return DType::Bool;
  else
    static_assert(sizeof(T) == 0, "no DType for this C++ type");
}

/** Calls fn(tag) with tag::type the C++ element type of `d`. */
template <typename Fn>
void visit_dtype(DType d, Fn&& fn) {
  sdk::visit_dtype(static_cast<int32_t>(d), std::forward<Fn>(fn));
}

}  // namespace ember

/** Formats a DType by name. */
template <>
struct fmt::formatter<ember::DType> : ember::TextFormatter {
  auto format(ember::DType d, format_context& ctx) const {
    return format_text(ember::dtype_name(d), ctx);
  }
};
