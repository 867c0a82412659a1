// Header-only C++ helpers over the C plugin ABI. Plugins may use them; they never link the
// core. The core uses the same half-precision types so both sides agree on the bits.
#pragma once

#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <type_traits>

#include "ember/plugin_abi.h"

/** Marks an SDK helper that CUDA kernels may call too (host and device code under nvcc). */
#if defined(__CUDACC__)
#define EMBER_SDK_HOST_DEVICE __host__ __device__
#else
#define EMBER_SDK_HOST_DEVICE
#endif

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
    if (x >= 0x7f800000u)
      return static_cast<uint16_t>(sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u));
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
template <>
struct DTypeTraits<EMBER_F32> {
  using type = float;
};
template <>
struct DTypeTraits<EMBER_F64> {
  using type = double;
};
template <>
struct DTypeTraits<EMBER_F16> {
  using type = Half;
};
template <>
struct DTypeTraits<EMBER_BF16> {
  using type = BFloat16;
};
template <>
struct DTypeTraits<EMBER_I64> {
  using type = int64_t;
};
template <>
struct DTypeTraits<EMBER_I32> {
  using type = int32_t;
};
template <>
struct DTypeTraits<EMBER_I8> {
  using type = int8_t;
};
template <>
struct DTypeTraits<EMBER_U8> {
  using type = uint8_t;
};
template <>
struct DTypeTraits<EMBER_BOOL> {
  using type = bool;
};

/** A tag carrying an element type through a generic lambda. */
template <typename T>
struct TypeTag {
  using type = T;
};

/** True for the 16-bit floating types, which compute through float. */
template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/** True for the floating element types, half precision included. */
template <typename T>
inline constexpr bool kIsFloating = std::is_floating_point_v<T> || kIsHalf<T>;

/** Type used to compute on T: float for half types, T otherwise. */
template <typename T>
using Compute = std::conditional_t<kIsHalf<T>, float, T>;

/** A non-NaN double bound (e.g. clamp's) as C, saturating at C's range for integer C: a plain
 *  cast of a double outside an integer type's range is undefined behaviour. */
template <typename C>
inline C saturating_bound(double v) {
  if constexpr (std::is_integral_v<C>) {
    // Both limits are exact powers of two (or 0/1 for bool) as doubles; >= max also catches
    // 2^63, which is what INT64_MAX rounds to.
    if (v <= static_cast<double>(std::numeric_limits<C>::min())) {
      return std::numeric_limits<C>::min();
    }
    if (v >= static_cast<double>(std::numeric_limits<C>::max())) {
      return std::numeric_limits<C>::max();
    }
  }
  return static_cast<C>(v);
}

/** An int64 bound (clamp's, for integer tensors) as the integer type C, saturating at C's
 *  range: exact, where a double bound rounds above 2^53. */
template <typename C>
EMBER_SDK_HOST_DEVICE inline C saturating_int_bound(int64_t v) {
  // The limits from the type's bits: std::numeric_limits is host-only in CUDA device code.
  using U = std::make_unsigned_t<C>;
  if constexpr (std::is_unsigned_v<C>) {
    constexpr uint64_t kMax = static_cast<U>(~U(0));
    if (v < 0) return C(0);
    if (static_cast<uint64_t>(v) > kMax) return static_cast<C>(kMax);
  } else {
    constexpr int64_t kMax = static_cast<int64_t>(static_cast<U>(~U(0)) >> 1);
    if (v < -kMax - 1) return static_cast<C>(-kMax - 1);
    if (v > kMax) return static_cast<C>(kMax);
  }
  return static_cast<C>(v);
}

/** Bytes per element of an ember_dtype (0 for an unknown value). */
constexpr size_t itemsize(int32_t dtype) {
  constexpr size_t sizes[] = {4, 8, 2, 2, 8, 4, 1, 1, 1};
  return dtype >= 0 && dtype < EMBER_NUM_DTYPES ? sizes[dtype] : 0;
}

/** Calls fn(TypeTag<T>{}) for the element type of `dtype`; returns false if unknown. */
template <typename Fn>
bool visit_dtype(int32_t dtype, Fn&& fn) {
  switch (dtype) {
    case EMBER_F32:
      fn(TypeTag<float>{});
      return true;
    case EMBER_F64:
      fn(TypeTag<double>{});
      return true;
    case EMBER_F16:
      fn(TypeTag<Half>{});
      return true;
    case EMBER_BF16:
      fn(TypeTag<BFloat16>{});
      return true;
    case EMBER_I64:
      fn(TypeTag<int64_t>{});
      return true;
    case EMBER_I32:
      fn(TypeTag<int32_t>{});
      return true;
    case EMBER_I8:
      fn(TypeTag<int8_t>{});
      return true;
    case EMBER_U8:
      fn(TypeTag<uint8_t>{});
      return true;
    case EMBER_BOOL:
      fn(TypeTag<bool>{});
      return true;
    default:
      return false;
  }
}

// Note [Float to integer conversion]
// C++ leaves converting a NaN, an infinity or an out-of-range double to an integer undefined
// (the op fuzzer reached it through pow(int tensor, nan) -> fill_), and a GPU's conversion
// saturates instead. Ember defines it as PyTorch behaves on x86 for int64, which is what the
// cvttsd2si instruction gives: truncation toward zero, and INT64_MIN (the "integer indefinite"
// value) for NaN, +-inf and anything outside [-2^63, 2^63). Narrower integer dtypes take the low
// bits of that int64, as a static_cast from int64 does, so x.to(int32) == x.to(int64).to(int32)
// and fill_ (which passes kernels the int64 of its scalar) agrees with to(). (PyTorch's 32-bit
// conversions give INT32_MIN instead, in some paths only; one rule everywhere is worth that
// difference.) The core's Scalar and every backend's conversions call these two functions, so
// the conformance kit sees one answer.

/** A double as int64 by Note [Float to integer conversion] (NaN, out of range -> INT64_MIN). */
EMBER_SDK_HOST_DEVICE inline int64_t float_to_int64(double v) {
  // 0x1p63 is 2^63; the negated test is also true for NaN.
  if (!(v >= -0x1p63 && v < 0x1p63)) return INT64_MIN;
  return static_cast<int64_t>(v);
}

/** A double as the integer type D by Note [Float to integer conversion]: the low bits of
 *  float_to_int64(v). */
template <typename D>
EMBER_SDK_HOST_DEVICE inline D float_to_int(double v) {
  return static_cast<D>(float_to_int64(v));
}

/** Bit mask of dtypes for kernel registration. */
constexpr uint32_t dtype_bit(ember_dtype d) {
  return 1u << static_cast<uint32_t>(d);
}
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

/** Runs fn(tag) for a floating `dtype` and returns EMBER_OK; for any other dtype returns
 *  EMBER_ERR_UNSUPPORTED with "<name>: dtype <d> is not floating". */
template <typename Fn>
int32_t visit_floating(const ember_kernel_call* call, int32_t dtype, const char* name, Fn&& fn) {
  bool floating = false;
  visit_dtype(dtype, [&](auto tag) {
    if constexpr (kIsFloating<typename decltype(tag)::type>) {
      floating = true;
      fn(tag);
    }
  });
  return floating ? EMBER_OK
                  : fail(call, EMBER_ERR_UNSUPPORTED, "%s: dtype %d is not floating", name, dtype);
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

/** True if the descriptor is a 4-d [N, C, H, W] tensor dense in channels-last order (strides
 *  [H*W*C, 1, W*C, C]; size-1 dims may have any stride). */
inline bool is_channels_last(const ember_tensor& t) {
  if (t.ndim != 4) return false;
  int64_t expected = 1;
  for (const int d : {1, 3, 2, 0}) {
    if (t.sizes[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
}

/** Typed pointer to element 0 of a descriptor. */
template <typename T>
T* data(const ember_tensor& t) {
  return static_cast<T*>(t.data);
}

/** A matmul C[..., M, N] = A[..., M, K] B[..., K, N] reduced to its essentials: the batch
 *  dims of C with size-1 dims dropped and adjacent dims merged wherever every operand allows
 *  it (outermost first), then the matrix sizes and strides (in elements). */
struct MatmulGeometry {
  static constexpr int kMaxDims = EMBER_MAX_DIMS;
  int nb = 0;               // batch dims after merging
  int64_t batch[kMaxDims];  // their sizes
  int64_t sa[kMaxDims], sb[kMaxDims], sc[kMaxDims];
  int64_t m = 0, n = 0, k = 0;
  int64_t am = 0, ak = 0, bk = 0, bn = 0, cm = 0, cn = 0;
  int64_t batch_count = 1;
};

/** The geometry of a matmul whose batch dims the core already broadcast to C's. */
inline MatmulGeometry matmul_geometry(const ember_tensor& a, const ember_tensor& b,
                                      const ember_tensor& c) {
  MatmulGeometry g;
  const int nd = c.ndim;
  g.m = c.sizes[nd - 2];
  g.n = c.sizes[nd - 1];
  g.k = a.sizes[nd - 1];
  g.am = a.strides[nd - 2];
  g.ak = a.strides[nd - 1];
  g.bk = b.strides[nd - 2];
  g.bn = b.strides[nd - 1];
  g.cm = c.strides[nd - 2];
  g.cn = c.strides[nd - 1];
  // Walk the batch dims innermost first, merging dim d into the one inside it when, for each
  // operand, both are broadcast (stride 0) or d's stride is the inner stride times its size.
  int64_t size[MatmulGeometry::kMaxDims], sa[MatmulGeometry::kMaxDims],
      sb[MatmulGeometry::kMaxDims], sc[MatmulGeometry::kMaxDims];
  int cnt = 0;
  for (int d = nd - 3; d >= 0; --d) {
    const int64_t s = c.sizes[d];
    if (s == 1) continue;
    const int64_t xa = a.strides[d], xb = b.strides[d], xc = c.strides[d];
    if (cnt > 0) {
      const int i = cnt - 1;
      auto fits = [&](int64_t outer, int64_t inner) {
        return (outer == 0 && inner == 0) || (outer != 0 && inner != 0 && outer == inner * size[i]);
      };
      if (fits(xa, sa[i]) && fits(xb, sb[i]) && fits(xc, sc[i])) {
        size[i] *= s;
        continue;
      }
    }
    size[cnt] = s;
    sa[cnt] = xa;
    sb[cnt] = xb;
    sc[cnt] = xc;
    ++cnt;
  }
  g.nb = cnt;
  for (int i = 0; i < cnt; ++i) {  // store outermost first
    const int j = cnt - 1 - i;
    g.batch[i] = size[j];
    g.sa[i] = sa[j];
    g.sb[i] = sb[j];
    g.sc[i] = sc[j];
    g.batch_count *= size[j];
  }
  return g;
}

/** Element offsets of batch entry `index` into A, B and C. */
EMBER_SDK_HOST_DEVICE inline void batch_offsets(const MatmulGeometry& g, int64_t index, int64_t* oa,
                                                int64_t* ob, int64_t* oc) {
  *oa = *ob = *oc = 0;
  for (int d = g.nb - 1; d >= 0; --d) {
    const int64_t i = index % g.batch[d];
    index /= g.batch[d];
    *oa += i * g.sa[d];
    *ob += i * g.sb[d];
    *oc += i * g.sc[d];
  }
}

// ---------------------------------------------------------------------------------------------
// Ops defined by plugins (ABI 1.1): schemas and shape inference.

/** A schema with the common defaults: no attributes, no flags, not differentiable. */
inline ember_op_schema_v1 op_schema(const char* name, int32_t num_inputs, int32_t num_outputs,
                                    ember_infer_fn infer, const char* doc = nullptr) {
  ember_op_schema_v1 s{};
  s.struct_size = sizeof(s);
  s.name = name;
  s.doc = doc;
  s.num_inputs = num_inputs;
  s.num_outputs = num_outputs;
  s.infer = infer;
  return s;
}

/** Bit i set for each listed index: mask({0, 1}) == 0b11, for the schema's input masks. */
constexpr uint32_t mask(std::initializer_list<int> bits) {
  uint32_t m = 0;
  for (int b : bits) m |= 1u << b;
  return m;
}

/** True if this core's registrar has op_schema (ABI >= 1.1). */
inline bool has_op_schema(const ember_registrar_v1* reg) {
  return reg->struct_size >= offsetof(ember_registrar_v1, op_schema) + sizeof(reg->op_schema) &&
         reg->op_schema != nullptr;
}

/** Registers `schema`, writing the reason into `error` on failure (an older core, or the
 *  core's reason for rejecting the schema); returns the status for init to return. */
inline int32_t register_op(const ember_registrar_v1* reg, const ember_op_schema_v1& schema,
                           char* error, size_t error_capacity) {
  if (!has_op_schema(reg)) {
    std::snprintf(error, error_capacity, "this Ember core predates ABI 1.1: cannot define op %s",
                  schema.name ? schema.name : "?");
    return EMBER_ERR_UNSUPPORTED;
  }
  return reg->op_schema(reg->ctx, &schema, error, error_capacity);
}

/** Writes a printf-style message into the infer call's error buffer; returns
 *  EMBER_ERR_INVALID. The core prefixes it with "[op] ". */
inline int32_t infer_fail(const ember_infer_call* call, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
inline int32_t infer_fail(const ember_infer_call* call, const char* fmt, ...) {
  if (call->error && call->error_capacity > 0) {
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(call->error, call->error_capacity, fmt, args);
    va_end(args);
  }
  return EMBER_ERR_INVALID;
}

/** Sizes formatted as "[2, 3]" for messages. */
struct SizesStr {
  char text[256];
  /** The formatted text. */
  const char* c_str() const { return text; }
};

/** Formats `ndim` sizes as "[2, 3]" (cut short with "...]" if very long). */
inline SizesStr sizes_str(int32_t ndim, const int64_t* sizes) {
  SizesStr out{};
  constexpr size_t cap = sizeof(out.text);
  size_t pos = 0;
  out.text[pos++] = '[';
  for (int32_t i = 0; i < ndim && pos < cap; ++i) {
    const int n = std::snprintf(out.text + pos, cap - pos, i == 0 ? "%lld" : ", %lld",
                                static_cast<long long>(sizes[i]));
    pos = n < 0 ? cap : pos + static_cast<size_t>(n);
  }
  if (pos + 2 <= cap) {
    out.text[pos] = ']';
    out.text[pos + 1] = '\0';
  } else {
    std::memcpy(out.text + cap - 5, "...]", 5);
  }
  return out;
}

/** Sizes of a descriptor formatted as "[2, 3]". */
inline SizesStr sizes_str(const ember_tensor& t) {
  return sizes_str(t.ndim, t.sizes);
}

/** Name of a dtype for messages ("float32", ...). */
inline const char* dtype_name(int32_t dtype) {
  constexpr const char* names[] = {"float32", "float64", "float16", "bfloat16", "int64",
                                   "int32",   "int8",    "uint8",   "bool"};
  return dtype >= 0 && dtype < EMBER_NUM_DTYPES ? names[dtype] : "unknown dtype";
}

/** Sets output `i` to `ndim` sizes and `dtype`. */
inline void set_output(const ember_infer_call* call, int32_t i, int32_t dtype, int32_t ndim,
                       const int64_t* sizes) {
  ember_output_info& o = call->outputs[i];
  o.dtype = dtype;
  o.ndim = ndim;
  for (int32_t d = 0; d < ndim && d < EMBER_MAX_DIMS; ++d) o.sizes[d] = sizes[d];
}

/** Sets output `out` to the shape and dtype of input `in`. */
inline void output_like_input(const ember_infer_call* call, int32_t out, int32_t in) {
  const ember_tensor& t = call->inputs[in];
  set_output(call, out, t.dtype, t.ndim, t.sizes);
}

/** True if two descriptors have the same sizes. */
inline bool same_sizes(const ember_tensor& a, const ember_tensor& b) {
  if (a.ndim != b.ndim) return false;
  for (int32_t i = 0; i < a.ndim; ++i) {
    if (a.sizes[i] != b.sizes[i]) return false;
  }
  return true;
}

}  // namespace ember::sdk
