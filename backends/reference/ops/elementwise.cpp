// Reference elementwise kernels: copy/convert, fill, binary arithmetic and comparison, where,
// unary math. The core hands every input already expanded to the output's shape (stride 0
// where broadcast) and in the output's dtype (bool for a where condition), so each kernel is
// one walk over the output's indices: out[i] = f(in0[i], in1[i], ...). Arithmetic happens in
// the compute type (float for the half types), exactly as a pointwise formula reads.
#include <cmath>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

#include "backends/reference/ops/ops.h"
#include "backends/reference/walk.h"
#include "ember/plugin_sdk_binary_ops.hpp"

namespace ember::reference {
namespace {

using sdk::Compute;

/** outputs[0][i] = f(inputs[0][i], ...) with In... the input element types. */
template <typename Out, typename... In, typename F, size_t... I>
void map_impl(const ember_kernel_call* call, F f, std::index_sequence<I...>) {
  const ember_tensor& y = call->outputs[0];
  for_each_index(y.ndim, y.sizes,
                 [&](const int64_t* idx) { at<Out>(y, idx) = f(at<In>(call->inputs[I], idx)...); });
}

template <typename Out, typename... In, typename F>
void map(const ember_kernel_call* call, F f) {
  map_impl<Out, In...>(call, f, std::index_sequence_for<In...>{});
}

/** A binary op whose result has the input dtype; Op::supports<T> says which dtypes. */
template <typename Op>
int32_t binary(const ember_kernel_call* call, const char* name) {
  int32_t status = EMBER_OK;
  sdk::visit_dtype(call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if constexpr (Op::template supports<T>) {
      map<T, T, T>(call, [](T a, T b) { return T(Op{}(static_cast<C>(a), static_cast<C>(b))); });
    } else {
      status = sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: dtype %s is not supported", name,
                         sdk::dtype_name(call->inputs[0].dtype));
    }
  });
  return status;
}

using sdk::AddOp, sdk::SubOp, sdk::MulOp, sdk::DivOp, sdk::PowOp, sdk::MaximumOp, sdk::MinimumOp,
    sdk::ReluBackwardOp, sdk::RemainderOp, sdk::FmodOp, sdk::DivFloorOp, sdk::DivTruncOp;
using sdk::kNotBool;

template <typename Cmp>
int32_t compare(const ember_kernel_call* call, const char* name) {
  return visit_any(call, call->inputs[0].dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    map<bool, T, T>(call, [](T a, T b) { return Cmp{}(static_cast<C>(a), static_cast<C>(b)); });
  });
}

/** A unary op y = f(x) in the compute type; kFloatOnly rejects integers, bool is always out. */
template <bool kFloatOnly, typename F>
int32_t unary(const ember_kernel_call* call, const char* name, F f) {
  bool ok = false;
  sdk::visit_dtype(call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if constexpr (!std::is_same_v<T, bool> && (!kFloatOnly || sdk::kIsFloating<T>)) {
      ok = true;
      map<T, T>(call, [f](T a) { return T(f(static_cast<C>(a))); });
    }
  });
  return ok ? EMBER_OK
            : sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: dtype %s is not supported", name,
                        sdk::dtype_name(call->inputs[0].dtype));
}

}  // namespace

// ---- copy / fill ------------------------------------------------------------------------------

int32_t copy(const ember_kernel_call* call) {
  const int32_t sd = call->inputs[0].dtype, dd = call->outputs[0].dtype;
  return visit_any(call, sd, "copy", [&](auto st) {
    using S = typename decltype(st)::type;
    sdk::visit_dtype(dd, [&](auto dt) {
      using D = typename decltype(dt)::type;
      map<D, S>(call, [](S v) { return sdk::convert_element<S, D>(v); });
    });
  });
}

// int_value: the value for integer dtypes; value: for floating ones and bool (!= 0).
int32_t fill(const ember_kernel_call* call) {
  const auto a = sdk::attrs<attrs::fill>(call);
  const ember_tensor& y = call->outputs[0];
  return visit_any(call, y.dtype, "fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T value = sdk::fill_value<T>(a.value, a.int_value);
    for_each_index(y.ndim, y.sizes, [&](const int64_t* idx) { at<T>(y, idx) = value; });
  });
}

// ---- binary -----------------------------------------------------------------------------------

int32_t add(const ember_kernel_call* c) {
  return binary<AddOp>(c, "add");
}
int32_t sub(const ember_kernel_call* c) {
  return binary<SubOp>(c, "sub");
}
int32_t mul(const ember_kernel_call* c) {
  return binary<MulOp>(c, "mul");
}
int32_t div(const ember_kernel_call* c) {
  return binary<DivOp>(c, "div");
}
int32_t pow(const ember_kernel_call* c) {
  return binary<PowOp>(c, "pow");
}
int32_t maximum(const ember_kernel_call* c) {
  return binary<MaximumOp>(c, "maximum");
}
int32_t minimum(const ember_kernel_call* c) {
  return binary<MinimumOp>(c, "minimum");
}
int32_t relu_backward(const ember_kernel_call* c) {
  return binary<ReluBackwardOp>(c, "relu_backward");
}
int32_t gelu_backward(const ember_kernel_call* c) {
  return sdk::attrs<attrs::gelu_backward>(c).tanh_form == 1
             ? binary<sdk::GeluTanhBackwardOp>(c, "gelu_backward")
             : binary<sdk::GeluBackwardOp>(c, "gelu_backward");
}
int32_t remainder(const ember_kernel_call* c) {
  return binary<RemainderOp>(c, "remainder");
}
int32_t fmod(const ember_kernel_call* c) {
  return binary<FmodOp>(c, "fmod");
}
int32_t atan2(const ember_kernel_call* c) {
  return binary<sdk::Atan2Op>(c, "atan2");
}
int32_t hypot(const ember_kernel_call* c) {
  return binary<sdk::HypotOp>(c, "hypot");
}
int32_t logaddexp(const ember_kernel_call* c) {
  return binary<sdk::LogaddexpOp>(c, "logaddexp");
}
int32_t div_floor(const ember_kernel_call* c) {
  return binary<DivFloorOp>(c, "div_floor");
}
int32_t div_trunc(const ember_kernel_call* c) {
  return binary<DivTruncOp>(c, "div_trunc");
}

int32_t eq(const ember_kernel_call* c) {
  return compare<std::equal_to<>>(c, "eq");
}
int32_t ne(const ember_kernel_call* c) {
  return compare<std::not_equal_to<>>(c, "ne");
}
int32_t lt(const ember_kernel_call* c) {
  return compare<std::less<>>(c, "lt");
}
int32_t le(const ember_kernel_call* c) {
  return compare<std::less_equal<>>(c, "le");
}
int32_t gt(const ember_kernel_call* c) {
  return compare<std::greater<>>(c, "gt");
}
int32_t ge(const ember_kernel_call* c) {
  return compare<std::greater_equal<>>(c, "ge");
}

int32_t logical_and(const ember_kernel_call* call) {
  return visit_any(call, call->inputs[0].dtype, "logical_and", [&](auto tag) {
    using T = typename decltype(tag)::type;
    map<bool, T, T>(call, [](T a, T b) { return truthy(a) && truthy(b); });
  });
}
int32_t logical_or(const ember_kernel_call* call) {
  return visit_any(call, call->inputs[0].dtype, "logical_or", [&](auto tag) {
    using T = typename decltype(tag)::type;
    map<bool, T, T>(call, [](T a, T b) { return truthy(a) || truthy(b); });
  });
}
int32_t logical_not(const ember_kernel_call* call) {
  return visit_any(call, call->inputs[0].dtype, "logical_not", [&](auto tag) {
    using T = typename decltype(tag)::type;
    map<bool, T>(call, [](T a) { return !truthy(a); });
  });
}

// Note [Integer binary ops] (plugin_sdk_binary_ops.hpp) says what each kind is.
int32_t integer_binary(const ember_kernel_call* call) {
  return sdk::run_integer_binary(call, sdk::attrs<attrs::integer_binary>(call).kind, [&](auto op) {
    return binary<decltype(op)>(call, "integer_binary");
  });
}
int32_t bitwise_not(const ember_kernel_call* call) {
  int32_t status = EMBER_OK;
  sdk::visit_dtype(call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>)
      map<T, T>(call, [](T x) { return sdk::bitwise_not(x); });
    else
      status = sdk::fail(call, EMBER_ERR_UNSUPPORTED, "bitwise_not: dtype %s is not supported",
                         sdk::dtype_name(call->inputs[0].dtype));
  });
  return status;
}

// inputs: {cond (bool), a, b}; dispatched on the dtype of a.
int32_t where(const ember_kernel_call* call) {
  return visit_any(call, call->inputs[1].dtype, "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    map<T, bool, T, T>(call, [](bool c, T a, T b) { return c ? a : b; });
  });
}

// ---- unary ------------------------------------------------------------------------------------

#define EMBER_REF_UNARY_FLOAT(name, expr)                      \
  int32_t name(const ember_kernel_call* c) {                   \
    return unary<true>(c, #name, [](auto x) { return expr; }); \
  }

EMBER_REF_UNARY_FLOAT(exp, std::exp(x))
EMBER_REF_UNARY_FLOAT(log, std::log(x))
EMBER_REF_UNARY_FLOAT(log1p, std::log1p(x))
EMBER_REF_UNARY_FLOAT(expm1, std::expm1(x))
EMBER_REF_UNARY_FLOAT(log2, std::log2(x))
EMBER_REF_UNARY_FLOAT(log10, std::log10(x))
EMBER_REF_UNARY_FLOAT(exp2, std::exp2(x))
EMBER_REF_UNARY_FLOAT(sqrt, std::sqrt(x))
EMBER_REF_UNARY_FLOAT(rsqrt, decltype(x)(1) / std::sqrt(x))
EMBER_REF_UNARY_FLOAT(sin, std::sin(x))
EMBER_REF_UNARY_FLOAT(cos, std::cos(x))
EMBER_REF_UNARY_FLOAT(tan, std::tan(x))
EMBER_REF_UNARY_FLOAT(asin, std::asin(x))
EMBER_REF_UNARY_FLOAT(acos, std::acos(x))
EMBER_REF_UNARY_FLOAT(atan, std::atan(x))
EMBER_REF_UNARY_FLOAT(sinh, std::sinh(x))
EMBER_REF_UNARY_FLOAT(cosh, std::cosh(x))
EMBER_REF_UNARY_FLOAT(asinh, std::asinh(x))
EMBER_REF_UNARY_FLOAT(acosh, std::acosh(x))
EMBER_REF_UNARY_FLOAT(atanh, std::atanh(x))
EMBER_REF_UNARY_FLOAT(tanh, std::tanh(x))
EMBER_REF_UNARY_FLOAT(sigmoid, decltype(x)(1) / (decltype(x)(1) + std::exp(-x)))
EMBER_REF_UNARY_FLOAT(silu, x / (decltype(x)(1) + std::exp(-x)))
EMBER_REF_UNARY_FLOAT(floor, std::floor(x))
EMBER_REF_UNARY_FLOAT(ceil, std::ceil(x))
EMBER_REF_UNARY_FLOAT(round, std::nearbyint(x))  // halves to even
EMBER_REF_UNARY_FLOAT(erf, std::erf(x))
EMBER_REF_UNARY_FLOAT(erfinv, sdk::erfinv(x))
EMBER_REF_UNARY_FLOAT(erfc, std::erfc(x))
EMBER_REF_UNARY_FLOAT(lgamma, sdk::lgamma(x))
EMBER_REF_UNARY_FLOAT(hardsigmoid, sdk::hardsigmoid(x))
EMBER_REF_UNARY_FLOAT(hardswish, sdk::hardswish(x))
#undef EMBER_REF_UNARY_FLOAT

int32_t polygamma(const ember_kernel_call* c) {
  const int64_t n = sdk::attrs<attrs::polygamma>(c).n;
  return unary<true>(c, "polygamma", [n](auto x) { return sdk::polygamma(n, x); });
}

int32_t neg(const ember_kernel_call* c) {
  return unary<false>(c, "neg", [](auto x) { return sdk::wrap_neg(x); });
}
int32_t abs(const ember_kernel_call* c) {
  return unary<false>(c, "abs", [](auto x) { return sdk::wrap_abs(x); });
}
// sign: -1, 0 or 1; NaN stays NaN.
int32_t sign(const ember_kernel_call* c) {
  return unary<false>(c, "sign", [](auto x) {
    using C = decltype(x);
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(x)) return x;
    }
    return C((C(0) < x) - (x < C(0)));
  });
}
// relu: max(x, 0); NaN stays NaN.
int32_t relu(const ember_kernel_call* c) {
  return unary<false>(c, "relu", [](auto x) {
    using C = decltype(x);
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(x)) return x;
    }
    return x > C(0) ? x : C(0);
  });
}

// tanh_form == 1: the tanh approximation; otherwise the exact erf form.
// log1p(exp(beta x)) / beta, x itself where beta x > threshold.
int32_t softplus(const ember_kernel_call* c) {
  const auto a = sdk::attrs<attrs::softplus>(c);
  return unary<true>(c, "softplus", [beta = a.beta, threshold = a.threshold](auto x) {
    using C = decltype(x);
    const C bx = C(beta) * x;
    return bx > C(threshold) ? x : std::log1p(std::exp(bx)) / C(beta);
  });
}

int32_t leaky_relu(const ember_kernel_call* c) {
  const auto a = sdk::attrs<attrs::leaky_relu>(c);
  return unary<true>(c, "leaky_relu", [slope = a.negative_slope](auto x) {
    using C = decltype(x);
    return x > C(0) ? x : C(slope) * x;
  });
}
// scale * x where x > 0, else scale * alpha * expm1(input_scale * x) (exp(.) - 1 loses every
// digit near 0).
int32_t elu(const ember_kernel_call* c) {
  const auto a = sdk::attrs<attrs::elu>(c);
  return unary<true>(c, "elu", [a](auto x) {
    using C = decltype(x);
    return x > C(0) ? C(a.scale) * x : C(a.scale) * C(a.alpha) * std::expm1(C(a.input_scale) * x);
  });
}
// log(1 / (1 + exp(-x))), as written (the reference favours the plain formula).
int32_t logsigmoid(const ember_kernel_call* c) {
  return unary<true>(c, "logsigmoid", [](auto x) {
    using C = decltype(x);
    return x < C(-30) ? x - std::log1p(std::exp(x)) : -std::log1p(std::exp(-x));
  });
}
// x * tanh(log(1 + exp(x))).
int32_t mish(const ember_kernel_call* c) {
  return unary<true>(c, "mish", [](auto x) {
    using C = decltype(x);
    return x * std::tanh(x > C(30) ? x : std::log1p(std::exp(x)));
  });
}

int32_t gelu(const ember_kernel_call* c) {
  if (sdk::attrs<attrs::gelu>(c).tanh_form == 1) {
    return unary<true>(c, "gelu", [](auto x) {
      using C = decltype(x);
      const C k = C(0.7978845608028654);  // sqrt(2/pi)
      return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
    });
  }
  return unary<true>(c, "gelu", [](auto x) {
    using C = decltype(x);
    return C(0.5) * x * (C(1) + std::erf(x * C(0.7071067811865476)));  // 1/sqrt(2)
  });
}

// Bounds lo (if has_lo) and hi (if has_hi). NaN stays NaN.
int32_t clamp(const ember_kernel_call* call) {
  return unary<false>(call, "clamp", sdk::ClampRule(sdk::attrs<attrs::clamp>(call)));
}

}  // namespace ember::reference
