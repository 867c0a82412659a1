// CPU elementwise kernels: copy/convert, fill, binary arithmetic and comparison, where, unary
// math. One strided loop (loops.h) serves them all; contiguous operands get unit-stride inner
// loops that the compiler vectorizes for the ISA this file is built for.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>
#include <utility>

#include "backends/cpu/dense_math.h"
#include "backends/cpu/loops.h"
#include "backends/cpu/ops/ops.h"
#include "ember/plugin_sdk_binary_ops.hpp"

namespace ember::cpu {
namespace {

using sdk::BFloat16;
using sdk::Compute;
using sdk::Half;

// Applies out = f(in...) with typed pointers over a StridedIter, with a unit-stride fast path.
template <typename Out, typename... In, typename F, size_t... I>
void map_impl(const ember_kernel_call* call, F f, std::index_sequence<I...>) {
  constexpr int N = 1 + sizeof...(In);
  const ember_tensor* ops[N];
  ops[0] = &call->outputs[0];
  for (int i = 1; i < N; ++i) ops[i] = &call->inputs[i - 1];
  StridedIter<N> it(ops, /*output_order=*/true);
  it.run([f](const std::array<char*, N>& p, const std::array<int64_t, N>& s, int64_t n) {
    const bool unit = s[0] == sizeof(Out) && ((s[I + 1] == sizeof(In)) && ...);
    if (unit) {
      Out* out = reinterpret_cast<Out*>(p[0]);
      for (int64_t i = 0; i < n; ++i) out[i] = f(reinterpret_cast<const In*>(p[I + 1])[i]...);
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      *reinterpret_cast<Out*>(p[0] + i * s[0]) =
          f(*reinterpret_cast<const In*>(p[I + 1] + i * s[I + 1])...);
    }
  });
}

template <typename Out, typename... In, typename F>
void map(const ember_kernel_call* call, F f) {
  map_impl<Out, In...>(call, f, std::index_sequence_for<In...>{});
}

}  // namespace

EMBER_KERNEL(copy) {
  const ember_tensor& dst = call->outputs[0];
  const ember_tensor& src = call->inputs[0];
  if (dst.dtype == src.dtype && sdk::is_contiguous(dst) && sdk::is_contiguous(src)) {
    const size_t bytes = static_cast<size_t>(sdk::numel(dst)) * sdk::itemsize(dst.dtype);
    char* d = static_cast<char*>(dst.data);
    const char* s = static_cast<const char*>(src.data);
    if (bytes < (size_t{1} << 20)) {
      std::memcpy(d, s, bytes);
    } else {
      const int64_t chunks = 64;
#pragma omp parallel for schedule(static)
      for (int64_t c = 0; c < chunks; ++c) {
        const size_t b = bytes * c / chunks, e = bytes * (c + 1) / chunks;
        std::memcpy(d + b, s + b, e - b);
      }
    }
    return EMBER_OK;
  }
  bool ok = sdk::visit_dtype(src.dtype, [&](auto st) {
    using S = typename decltype(st)::type;
    sdk::visit_dtype(dst.dtype, [&](auto dt) {
      using D = typename decltype(dt)::type;
      map<D, S>(call, [](S v) { return sdk::convert_element<S, D>(v); });
    });
  });
  return ok ? EMBER_OK : sdk::fail(call, EMBER_ERR_UNSUPPORTED, "unknown dtype %d", src.dtype);
}

EMBER_KERNEL(fill) {
  const ember_tensor& dst = call->outputs[0];
  const auto a = sdk::attrs<attrs::fill>(call);
  sdk::visit_dtype(dst.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T value = sdk::fill_value<T>(a.value, a.int_value);
    map<T>(call, [value]() { return value; });
  });
  return EMBER_OK;
}

// ---- binary -----------------------------------------------------------------------------------

namespace {

template <typename T, typename F>
int32_t binary_same(const ember_kernel_call* call, F f) {
  using C = Compute<T>;
  map<T, T, T>(call, [f](T a, T b) { return T(f(static_cast<C>(a), static_cast<C>(b))); });
  return EMBER_OK;
}

// Dispatches a binary op whose result has the input dtype.
template <typename Op>
int32_t binary(const ember_kernel_call* call) {
  int32_t status = EMBER_OK;
  sdk::visit_dtype(call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Op::template supports<T>)
      status = binary_same<T>(call, Op{});
    else
      status = sdk::fail(call, EMBER_ERR_UNSUPPORTED, "dtype not supported");
  });
  return status;
}

using sdk::AddOp, sdk::SubOp, sdk::MulOp, sdk::DivOp, sdk::PowOp, sdk::MaximumOp, sdk::MinimumOp,
    sdk::ReluBackwardOp, sdk::RemainderOp, sdk::FmodOp, sdk::DivFloorOp, sdk::DivTruncOp;
using sdk::kNotBool;

template <typename Cmp>
int32_t compare(const ember_kernel_call* call) {
  sdk::visit_dtype(call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    map<bool, T, T>(call, [](T a, T b) { return Cmp{}(static_cast<C>(a), static_cast<C>(b)); });
  });
  return EMBER_OK;
}

template <typename T>
bool truthy(T v) {
  return static_cast<Compute<T>>(v) != Compute<T>(0);
}

}  // namespace

EMBER_KERNEL(add) {
  return binary<AddOp>(call);
}
EMBER_KERNEL(sub) {
  return binary<SubOp>(call);
}
EMBER_KERNEL(mul) {
  return binary<MulOp>(call);
}
EMBER_KERNEL(div) {
  return binary<DivOp>(call);
}
EMBER_KERNEL(pow) {
  return binary<PowOp>(call);
}
EMBER_KERNEL(maximum) {
  return binary<MaximumOp>(call);
}
EMBER_KERNEL(minimum) {
  return binary<MinimumOp>(call);
}
EMBER_KERNEL(relu_backward) {
  return binary<ReluBackwardOp>(call);
}
EMBER_KERNEL(remainder) {
  return binary<RemainderOp>(call);
}
EMBER_KERNEL(fmod) {
  return binary<FmodOp>(call);
}
EMBER_KERNEL(atan2) {
  return binary<sdk::Atan2Op>(call);
}
EMBER_KERNEL(hypot) {
  return binary<sdk::HypotOp>(call);
}
EMBER_KERNEL(logaddexp) {
  return binary<sdk::LogaddexpOp>(call);
}
EMBER_KERNEL(div_floor) {
  return binary<DivFloorOp>(call);
}
EMBER_KERNEL(div_trunc) {
  return binary<DivTruncOp>(call);
}
EMBER_KERNEL(eq) {
  return compare<std::equal_to<>>(call);
}
EMBER_KERNEL(ne) {
  return compare<std::not_equal_to<>>(call);
}
EMBER_KERNEL(lt) {
  return compare<std::less<>>(call);
}
EMBER_KERNEL(le) {
  return compare<std::less_equal<>>(call);
}
EMBER_KERNEL(gt) {
  return compare<std::greater<>>(call);
}
EMBER_KERNEL(ge) {
  return compare<std::greater_equal<>>(call);
}

EMBER_KERNEL(logical_and) {
  sdk::visit_dtype(call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map<bool, T, T>(call, [](T a, T b) { return truthy(a) && truthy(b); });
  });
  return EMBER_OK;
}
EMBER_KERNEL(logical_or) {
  sdk::visit_dtype(call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map<bool, T, T>(call, [](T a, T b) { return truthy(a) || truthy(b); });
  });
  return EMBER_OK;
}
EMBER_KERNEL(logical_not) {
  sdk::visit_dtype(call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map<bool, T>(call, [](T a) { return !truthy(a); });
  });
  return EMBER_OK;
}

EMBER_KERNEL(integer_binary) {
  return sdk::run_integer_binary(call, sdk::attrs<attrs::integer_binary>(call).kind,
                                 [&](auto op) { return binary<decltype(op)>(call); });
}
EMBER_KERNEL(bitwise_not) {
  int32_t status = EMBER_OK;
  sdk::visit_dtype(call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>)
      map<T, T>(call, [](T x) { return sdk::bitwise_not(x); });
    else
      status =
          sdk::fail(call, EMBER_ERR_UNSUPPORTED, "bitwise_not: needs an integer or bool dtype");
  });
  return status;
}

EMBER_KERNEL(where) {
  sdk::visit_dtype(call->inputs[1].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // The condition is read as bytes (bool storage is 0 or 1): GCC does not vectorize a select
    // on a loaded bool, and the branch it emits instead mispredicts on a random mask (a
    // ReLU's, in backward) at several ns per element.
    map<T, uint8_t, T, T>(call, [](uint8_t c, T a, T b) { return c ? a : b; });
  });
  return EMBER_OK;
}

// ---- unary ------------------------------------------------------------------------------------

namespace {

template <typename T, typename F>
void unary_same(const ember_kernel_call* call, F f) {
  using C = Compute<T>;
  map<T, T>(call, [f](T a) { return T(f(static_cast<C>(a))); });
}

// A unary op on floating dtypes only (the core promotes integers first).
template <typename F>
int32_t unary_float(const ember_kernel_call* call, F f) {
  int32_t status = EMBER_OK;
  sdk::visit_dtype(call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (sdk::kIsFloating<T>)
      unary_same<T>(call, f);
    else
      status = sdk::fail(call, EMBER_ERR_UNSUPPORTED, "needs a floating dtype");
  });
  return status;
}

// A unary op on every numeric dtype.
template <typename F>
int32_t unary_numeric(const ember_kernel_call* call, F f) {
  int32_t status = EMBER_OK;
  sdk::visit_dtype(call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>)
      unary_same<T>(call, f);
    else
      status = sdk::fail(call, EMBER_ERR_UNSUPPORTED, "not defined for bool");
  });
  return status;
}

}  // namespace

#define EMBER_CPU_UNARY_FLOAT(name, expr)                  \
  EMBER_KERNEL(name) {                                     \
    return unary_float(call, [](auto x) { return expr; }); \
  }

EMBER_CPU_UNARY_FLOAT(exp, std::exp(x))
EMBER_CPU_UNARY_FLOAT(log, std::log(x))
EMBER_CPU_UNARY_FLOAT(log1p, std::log1p(x))
EMBER_CPU_UNARY_FLOAT(expm1, std::expm1(x))
EMBER_CPU_UNARY_FLOAT(log2, std::log2(x))
EMBER_CPU_UNARY_FLOAT(log10, std::log10(x))
EMBER_CPU_UNARY_FLOAT(exp2, std::exp2(x))
EMBER_CPU_UNARY_FLOAT(sqrt, std::sqrt(x))
EMBER_CPU_UNARY_FLOAT(rsqrt, decltype(x)(1) / std::sqrt(x))
EMBER_CPU_UNARY_FLOAT(sin, std::sin(x))
EMBER_CPU_UNARY_FLOAT(cos, std::cos(x))
EMBER_CPU_UNARY_FLOAT(tan, std::tan(x))
EMBER_CPU_UNARY_FLOAT(asin, std::asin(x))
EMBER_CPU_UNARY_FLOAT(acos, std::acos(x))
EMBER_CPU_UNARY_FLOAT(atan, std::atan(x))
EMBER_CPU_UNARY_FLOAT(sinh, std::sinh(x))
EMBER_CPU_UNARY_FLOAT(cosh, std::cosh(x))
EMBER_CPU_UNARY_FLOAT(asinh, std::asinh(x))
EMBER_CPU_UNARY_FLOAT(acosh, std::acosh(x))
EMBER_CPU_UNARY_FLOAT(atanh, std::atanh(x))
EMBER_CPU_UNARY_FLOAT(floor, std::floor(x))
EMBER_CPU_UNARY_FLOAT(ceil, std::ceil(x))
EMBER_CPU_UNARY_FLOAT(round, std::nearbyint(x))
EMBER_CPU_UNARY_FLOAT(erf, std::erf(x))
EMBER_CPU_UNARY_FLOAT(erfinv, sdk::erfinv(x))
EMBER_CPU_UNARY_FLOAT(erfc, std::erfc(x))
EMBER_CPU_UNARY_FLOAT(lgamma, sdk::lgamma(x))
EMBER_CPU_UNARY_FLOAT(hardsigmoid, sdk::hardsigmoid(x))
EMBER_CPU_UNARY_FLOAT(hardswish, sdk::hardswish(x))
#undef EMBER_CPU_UNARY_FLOAT

EMBER_KERNEL(polygamma) {
  const int64_t n = sdk::attrs<attrs::polygamma>(call).n;
  return unary_float(call, [n](auto x) { return sdk::polygamma(n, x); });
}

EMBER_KERNEL(neg) {
  return unary_numeric(call, [](auto x) { return sdk::wrap_neg(x); });
}
EMBER_KERNEL(abs) {
  return unary_numeric(call, [](auto x) { return sdk::wrap_abs(x); });
}
EMBER_KERNEL(sign) {
  return unary_numeric(call, [](auto x) {
    using C = decltype(x);
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(x)) return x;
    }
    return C((C(0) < x) - (x < C(0)));
  });
}
EMBER_KERNEL(relu) {
  return unary_numeric(call, [](auto x) {
    using C = decltype(x);
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(x)) return x;
    }
    return x > C(0) ? x : C(0);
  });
}

// log1p(exp(beta x)) / beta, x itself where beta x > threshold.
EMBER_KERNEL(softplus) {
  const auto a = sdk::attrs<attrs::softplus>(call);
  return unary_float(call, [beta = a.beta, threshold = a.threshold](auto x) {
    using C = decltype(x);
    const C bx = C(beta) * x;
    return bx > C(threshold) ? x : std::log1p(std::exp(bx)) / C(beta);
  });
}

EMBER_KERNEL(leaky_relu) {
  const auto a = sdk::attrs<attrs::leaky_relu>(call);
  return unary_float(call, [slope = a.negative_slope](auto x) {
    using C = decltype(x);
    return x > C(0) ? x : C(slope) * x;
  });
}

// scale * x where x > 0, else scale * alpha * (exp(input_scale * x) - 1).
EMBER_KERNEL(elu) {
  const auto a = sdk::attrs<attrs::elu>(call);
  return unary_float(call, [a](auto x) {
    using C = decltype(x);
    return x > C(0) ? C(a.scale) * x : C(a.scale) * C(a.alpha) * std::expm1(C(a.input_scale) * x);
  });
}

// min(x, 0) - log1p(exp(-|x|)): never overflows.
EMBER_KERNEL(logsigmoid) {
  return unary_float(call, [](auto x) {
    using C = decltype(x);
    return std::min(x, C(0)) - std::log1p(std::exp(-std::abs(x)));
  });
}

// x * tanh(softplus(x)), softplus linear above 20 as PyTorch's.
EMBER_KERNEL(mish) {
  return unary_float(call, [](auto x) {
    using C = decltype(x);
    return x * std::tanh(x > C(20) ? x : std::log1p(std::exp(x)));
  });
}

// Note [Vectorized GELU]
// GELU runs over a Transformer's widest activations, and std::erf is a call per element: with
// its backward it took a sixth of a GPT-sized layer's time. For float32 with dense operands, the
// forward and the fused backward run their own loops on erf_approx (PyTorch's vectorized erf)
// and tanh_approx, in an AVX2 copy where the CPU has it (Note [AVX2 clones of hot loops]);
// other dtypes and strided operands take the generic loops with std::erf and std::tanh.
namespace {

constexpr float kSqrtHalf = 0.7071067811865476f, kInvSqrt2Pi = 0.3989422804014327f;
constexpr float kTanhK = 0.7978845608028654f, kTanhC = 0.044715f;

template <bool TanhForm>
[[gnu::always_inline]] inline void gelu_impl(const float* __restrict x, float* __restrict y,
                                             int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if constexpr (TanhForm) {
      y[i] = 0.5f * v * (1.0f + tanh_approx(kTanhK * (v + kTanhC * v * v * v)));
    } else {
      y[i] = 0.5f * v * (1.0f + erf_approx(v * kSqrtHalf));
    }
  }
}

template <bool TanhForm>
[[gnu::always_inline]] inline void gelu_backward_impl(const float* __restrict g,
                                                      const float* __restrict x,
                                                      float* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if constexpr (TanhForm) {
      const float t = tanh_approx(kTanhK * (v + kTanhC * v * v * v));
      const float du = kTanhK * (1.0f + 3.0f * kTanhC * v * v);
      out[i] = g[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
    } else {
      const float cdf = 0.5f * (1.0f + erf_approx(v * kSqrtHalf));
      const float pdf = exp_approx(-0.5f * v * v) * kInvSqrt2Pi;
      out[i] = g[i] * (cdf + v * pdf);
    }
  }
}

EMBER_CPU_AVX2 void gelu_avx2(const float* x, float* y, int64_t n, bool tanh_form) {
  tanh_form ? gelu_impl<true>(x, y, n) : gelu_impl<false>(x, y, n);
}
EMBER_CPU_AVX2 void gelu_backward_avx2(const float* g, const float* x, float* out, int64_t n,
                                       bool tanh_form) {
  tanh_form ? gelu_backward_impl<true>(g, x, out, n) : gelu_backward_impl<false>(g, x, out, n);
}

// A GELU element costs several elementwise adds: threads split it at an eighth of their grain.
constexpr int64_t kGeluChunk = kGrainSize / 8;

/** True when every operand is float32 and of the output's shape, the output dense (row-major or
 *  channels-last) and every input laid out as it: the same elements in the same memory order. */
bool dense_f32(const ember_kernel_call* call) {
  const ember_tensor& out = call->outputs[0];
  if (out.dtype != EMBER_F32 || !(sdk::is_contiguous(out) || sdk::is_channels_last(out))) {
    return false;
  }
  for (int32_t i = 0; i < call->num_inputs; ++i) {
    const ember_tensor& in = call->inputs[i];
    if (in.dtype != EMBER_F32 || in.ndim != out.ndim) return false;
    for (int32_t d = 0; d < out.ndim; ++d) {
      if (in.sizes[d] != out.sizes[d] || (out.sizes[d] != 1 && in.strides[d] != out.strides[d])) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

// Note [Vectorized sigmoid, SiLU and tanh]
// EfficientNet-B0's SiLUs took 60% of its run (one thread, 430 us a call, std::exp per element)
// and GPT-2's tanh 17 ns an element. For float32 with dense operands they run their own loops on
// sigmoid_approx and tanh_approx (Note [A vectorizable exp]; relative error about 2e-7, NaN kept)
// in an AVX2 copy where the CPU has it, as GELU does (Note [Vectorized GELU]); other dtypes and
// strided operands take the generic loops with std::exp and std::tanh.
namespace {

enum class Pointwise { Sigmoid, Silu, Tanh };

template <Pointwise K>
[[gnu::always_inline]] inline void pointwise_impl(const float* __restrict x, float* __restrict y,
                                                  int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if constexpr (K == Pointwise::Sigmoid) {
      y[i] = sigmoid_approx(v);
    } else if constexpr (K == Pointwise::Silu) {
      y[i] = v * sigmoid_approx(v);
    } else {
      y[i] = tanh_approx(v);
    }
  }
}

template <Pointwise K>
EMBER_CPU_AVX2 void pointwise_avx2(const float* x, float* y, int64_t n) {
  pointwise_impl<K>(x, y, n);
}

/** The kernel of sigmoid, silu or tanh: the vectorized loop for dense float32, else `generic`. */
template <Pointwise K, class Generic>
int32_t pointwise_kernel(const ember_kernel_call* call, Generic generic) {
  if (!dense_f32(call)) return unary_float(call, generic);
  const float* x = sdk::data<const float>(call->inputs[0]);
  float* y = sdk::data<float>(call->outputs[0]);
  const bool avx2 = cpu_has_avx2();
  for_each_chunk(sdk::numel(call->outputs[0]), kGeluChunk, [&](int64_t b, int64_t e) {
    if (avx2) return pointwise_avx2<K>(x + b, y + b, e - b);
    pointwise_impl<K>(x + b, y + b, e - b);
  });
  return EMBER_OK;
}

}  // namespace

EMBER_KERNEL(tanh) {
  return pointwise_kernel<Pointwise::Tanh>(call, [](auto x) { return std::tanh(x); });
}
EMBER_KERNEL(sigmoid) {
  return pointwise_kernel<Pointwise::Sigmoid>(
      call, [](auto x) { return decltype(x)(1) / (decltype(x)(1) + std::exp(-x)); });
}
EMBER_KERNEL(silu) {
  return pointwise_kernel<Pointwise::Silu>(
      call, [](auto x) { return x / (decltype(x)(1) + std::exp(-x)); });
}

EMBER_KERNEL(gelu) {
  const bool tanh_form = sdk::attrs<attrs::gelu>(call).tanh_form == 1;
  if (dense_f32(call)) {
    const float* x = sdk::data<const float>(call->inputs[0]);
    float* y = sdk::data<float>(call->outputs[0]);
    const bool avx2 = cpu_has_avx2();
    for_each_chunk(sdk::numel(call->outputs[0]), kGeluChunk, [&](int64_t b, int64_t e) {
      if (avx2) return gelu_avx2(x + b, y + b, e - b, tanh_form);
      tanh_form ? gelu_impl<true>(x + b, y + b, e - b) : gelu_impl<false>(x + b, y + b, e - b);
    });
    return EMBER_OK;
  }
  if (tanh_form) {
    return unary_float(call, [](auto x) {
      using C = decltype(x);
      const C k = C(0.7978845608028654);  // sqrt(2/pi)
      return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
    });
  }
  return unary_float(call, [](auto x) {
    using C = decltype(x);
    return C(0.5) * x * (C(1) + std::erf(x * C(0.7071067811865476)));
  });
}

EMBER_KERNEL(gelu_backward) {
  const bool tanh_form = sdk::attrs<attrs::gelu_backward>(call).tanh_form == 1;
  if (dense_f32(call)) {
    const float* g = sdk::data<const float>(call->inputs[0]);
    const float* x = sdk::data<const float>(call->inputs[1]);
    float* out = sdk::data<float>(call->outputs[0]);
    const bool avx2 = cpu_has_avx2();
    for_each_chunk(sdk::numel(call->outputs[0]), kGeluChunk, [&](int64_t b, int64_t e) {
      if (avx2) return gelu_backward_avx2(g + b, x + b, out + b, e - b, tanh_form);
      tanh_form ? gelu_backward_impl<true>(g + b, x + b, out + b, e - b)
                : gelu_backward_impl<false>(g + b, x + b, out + b, e - b);
    });
    return EMBER_OK;
  }
  return tanh_form ? binary<sdk::GeluTanhBackwardOp>(call) : binary<sdk::GeluBackwardOp>(call);
}

EMBER_KERNEL(clamp) {
  return unary_numeric(call, sdk::ClampRule(sdk::attrs<attrs::clamp>(call)));
}

}  // namespace ember::cpu
