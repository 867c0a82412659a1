#include "ember/tensor/dtype.h"

#include "ember/util/error.h"

namespace ember {

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

}  // namespace ember
