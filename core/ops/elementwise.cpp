// Elementwise ops: y = f(a, b) with NumPy broadcasting and PyTorch's type promotion.
// Kernel contract ("add", "sub", "mul", "div", "pow", "maximum", "minimum"): inputs {a, b} of
// the common dtype, already expanded to the output shape (stride 0 where broadcast); outputs
// {y} of that dtype (the comparison ops "eq".."ge", "logical_and/or": bool). Unary ops: inputs
// {x}, outputs {y} of x's dtype; "clamp": ints {has_lo, has_hi}, floats {lo, hi}; "gelu":
// ints {0 = erf form, 1 = tanh form}. "where": inputs {cond (bool), a, b}. In-place forms run
// the same kernel with the output aliasing the first input.
#include "core/ops/elementwise.h"

#include <string_view>

#include "core/dispatch/call.h"
#include "core/ops/factory.h"

namespace ember {
namespace {

enum class Kind { Arith, TrueDiv, Compare, Logical };

int category(DType d) {
  return d == DType::Bool ? 0 : is_integral(d) ? 1 : 2;
}

// PyTorch's result_type for two tensors: 0-d tensors only raise the category.
DType result_type(const Tensor& a, const Tensor& b) {
  const bool a0 = a.dim() == 0, b0 = b.dim() == 0;
  if (a0 == b0) return promote_types(a.dtype(), b.dtype());
  const Tensor& dim_t = a0 ? b : a;
  const Tensor& zero_t = a0 ? a : b;
  if (category(zero_t.dtype()) > category(dim_t.dtype())) return zero_t.dtype();
  return dim_t.dtype();
}

// bool + bool is "or" and bool * bool is "and", as in PyTorch; subtraction and powers have no
// bool meaning and are refused by name rather than by a missing kernel.
void check_bool_arith(const char* name) {
  const std::string_view n(name);
  EMBER_CHECK(n.substr(0, 3) != "sub" && n.substr(0, 3) != "pow",
              "[{}] not supported for bool tensors (to invert a mask use logical_not)", name);
}

Tensor binary(const Op& op, const char* name, const Tensor& a, const Tensor& b, Kind kind) {
  EMBER_CHECK(a.defined() && b.defined(), "[{}] undefined tensor argument", name);
  DType ct = a.dtype() == b.dtype() ? a.dtype() : result_type(a, b);
  if (kind == Kind::TrueDiv && !is_floating(ct)) ct = kDefaultFloat;
  const DType out_dtype = kind == Kind::Compare || kind == Kind::Logical ? DType::Bool : ct;
  const Device device = common_device({&a, &b}, name);
  if (ct == DType::Bool && kind == Kind::Arith) check_bool_arith(name);
  if (a.sizes() == b.sizes()) {
    Tensor out = empty(a.sizes(), {out_dtype, device});
    if (out.numel() == 0) return out;
    const Tensor a2 = a.to(ct), b2 = b.to(ct);
    run_kernel(op, ct, {&a2, &b2}, {&out});
    return out;
  }
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), name);
  Tensor out = empty(shape, {out_dtype, device});
  if (out.numel() == 0) return out;
  const Tensor a2 = a.to(ct).expand(shape), b2 = b.to(ct).expand(shape);
  run_kernel(op, ct, {&a2, &b2}, {&out});
  return out;
}

Tensor& binary_(const Op& op, const char* name, Tensor& a, const Tensor& b, Kind kind) {
  EMBER_CHECK(a.defined() && b.defined(), "[{}] undefined tensor argument", name);
  DType ct = result_type(a, b);
  if (kind == Kind::TrueDiv && !is_floating(ct)) ct = kDefaultFloat;
  EMBER_CHECK(category(ct) <= category(a.dtype()),
              "[{}] result type {} can't be cast to the desired output type {}", name, ct,
              a.dtype());
  common_device({&a, &b}, name);
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), name);
  EMBER_CHECK(shape == a.sizes(), "[{}] output with shape {} doesn't match the broadcast shape {}",
              name, shape_str(a.sizes()), shape_str(shape));
  if (a.dtype() == DType::Bool && kind == Kind::Arith) check_bool_arith(name);
  if (a.numel() == 0) return a;
  const Tensor b2 = b.to(a.dtype()).expand(a.sizes());
  // Note: with a.dtype() == ct this is exact; for a float16 `a` and float32 `b` PyTorch
  // computes in float32 and rounds once, while this rounds b first (difference <= 1 ulp).
  run_kernel(op, a.dtype(), {&a, &b2}, {&a});
  a.bump_version();
  return a;
}

Tensor unary(const Op& op, const char* name, const Tensor& x, bool promote_to_float,
             KernelAttrs attrs = {}) {
  EMBER_CHECK(x.defined(), "[{}] undefined tensor argument", name);
  const Tensor in = promote_to_float && !is_floating(x.dtype()) ? x.to(kDefaultFloat) : x;
  Tensor out = empty(in.sizes(), {in.dtype(), in.device()});
  if (out.numel() > 0) run_kernel(op, in.dtype(), {&in}, {&out}, attrs);
  return out;
}

Tensor& unary_(const Op& op, const char* name, Tensor& x, bool needs_float,
               KernelAttrs attrs = {}) {
  EMBER_CHECK(!needs_float || is_floating(x.dtype()),
              "[{}] result type float32 can't be cast to the desired output type {}", name,
              x.dtype());
  if (x.numel() > 0) run_kernel(op, x.dtype(), {&x}, {&x}, attrs);
  x.bump_version();
  return x;
}

#define EMBER_OP(name)                      \
  const Op& name##_op() {                   \
    static const Op& op = op_handle(#name); \
    return op;                              \
  }
EMBER_OP(add)
EMBER_OP(sub)
EMBER_OP(mul)
EMBER_OP(div)
EMBER_OP(pow)
EMBER_OP(maximum)
EMBER_OP(minimum)
EMBER_OP(eq)
EMBER_OP(ne)
EMBER_OP(lt)
EMBER_OP(le)
EMBER_OP(gt)
EMBER_OP(ge)
EMBER_OP(logical_and)
EMBER_OP(logical_or)
EMBER_OP(logical_not)
EMBER_OP(where)
EMBER_OP(neg)
EMBER_OP(abs)
EMBER_OP(exp)
EMBER_OP(log)
EMBER_OP(log1p)
EMBER_OP(sqrt)
EMBER_OP(rsqrt)
EMBER_OP(sin)
EMBER_OP(cos)
EMBER_OP(tanh)
EMBER_OP(sigmoid)
EMBER_OP(relu)
EMBER_OP(gelu)
EMBER_OP(silu)
EMBER_OP(clamp)
EMBER_OP(sign)
EMBER_OP(floor)
EMBER_OP(ceil)
EMBER_OP(round)
#undef EMBER_OP

}  // namespace

DType detail::promote_with_scalar(DType t, Scalar s) {
  const int sc = s.kind() == Scalar::Kind::Float ? 2 : s.kind() == Scalar::Kind::Int ? 1 : 0;
  if (sc > category(t)) return sc == 2 ? kDefaultFloat : DType::Int64;
  return t;
}

Tensor detail::scalar_tensor(Scalar s, DType other, Device device) {
  Tensor t = empty({}, {promote_with_scalar(other, s), device});
  t.fill_(s);
  return t;
}

#define EMBER_BINARY(name, kind)                                                                 \
  Tensor name(const Tensor& a, const Tensor& b) {                                                \
    return binary(name##_op(), #name, a, b, kind);                                               \
  }                                                                                              \
  Tensor name(const Tensor& a, Scalar b) {                                                       \
    return binary(name##_op(), #name, a, detail::scalar_tensor(b, a.dtype(), a.device()), kind); \
  }
EMBER_BINARY(add, Kind::Arith)
EMBER_BINARY(sub, Kind::Arith)
EMBER_BINARY(mul, Kind::Arith)
EMBER_BINARY(div, Kind::TrueDiv)
EMBER_BINARY(pow, Kind::Arith)
EMBER_BINARY(eq, Kind::Compare)
EMBER_BINARY(ne, Kind::Compare)
EMBER_BINARY(lt, Kind::Compare)
EMBER_BINARY(le, Kind::Compare)
EMBER_BINARY(gt, Kind::Compare)
EMBER_BINARY(ge, Kind::Compare)
#undef EMBER_BINARY

Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary(maximum_op(), "maximum", a, b, Kind::Arith);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary(minimum_op(), "minimum", a, b, Kind::Arith);
}
Tensor logical_and(const Tensor& a, const Tensor& b) {
  return binary(logical_and_op(), "logical_and", a, b, Kind::Logical);
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return binary(logical_or_op(), "logical_or", a, b, Kind::Logical);
}
Tensor logical_not(const Tensor& a) {
  EMBER_CHECK(a.defined(), "[logical_not] undefined tensor argument");
  Tensor out = empty(a.sizes(), {DType::Bool, a.device()});
  if (out.numel() > 0) run_kernel(logical_not_op(), a.dtype(), {&a}, {&out});
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  EMBER_CHECK(cond.defined() && a.defined() && b.defined(), "[where] undefined tensor argument");
  EMBER_CHECK(cond.dtype() == DType::Bool, "[where] condition must be bool: got {}", cond.dtype());
  const Device device = common_device({&cond, &a, &b}, "where");
  const DType ct = result_type(a, b);
  const Shape shape =
      broadcast_shapes(broadcast_shapes(cond.sizes(), a.sizes(), "where"), b.sizes(), "where");
  const Tensor c2 = cond.expand(shape), a2 = a.to(ct).expand(shape), b2 = b.to(ct).expand(shape);
  Tensor out = empty(shape, {ct, device});
  if (out.numel() > 0) run_kernel(where_op(), ct, {&c2, &a2, &b2}, {&out});
  return out;
}
Tensor where(const Tensor& cond, const Tensor& a, Scalar b) {
  return where(cond, a, detail::scalar_tensor(b, a.dtype(), a.device()));
}

Tensor neg(const Tensor& x) {
  EMBER_CHECK(x.dtype() != DType::Bool,
              "[neg] negation of a bool tensor is not supported (use logical_not)");
  return unary(neg_op(), "neg", x, false);
}
Tensor abs(const Tensor& x) {
  return x.dtype() == DType::Bool ? x.clone() : unary(abs_op(), "abs", x, false);
}
Tensor sign(const Tensor& x) {
  return x.dtype() == DType::Bool ? x.clone() : unary(sign_op(), "sign", x, false);
}
Tensor relu(const Tensor& x) {
  EMBER_CHECK(x.dtype() != DType::Bool, "[relu] not defined for bool tensors");
  return unary(relu_op(), "relu", x, false);
}
Tensor exp(const Tensor& x) {
  return unary(exp_op(), "exp", x, true);
}
Tensor log(const Tensor& x) {
  return unary(log_op(), "log", x, true);
}
Tensor log1p(const Tensor& x) {
  return unary(log1p_op(), "log1p", x, true);
}
Tensor sqrt(const Tensor& x) {
  return unary(sqrt_op(), "sqrt", x, true);
}
Tensor rsqrt(const Tensor& x) {
  return unary(rsqrt_op(), "rsqrt", x, true);
}
Tensor sin(const Tensor& x) {
  return unary(sin_op(), "sin", x, true);
}
Tensor cos(const Tensor& x) {
  return unary(cos_op(), "cos", x, true);
}
Tensor tanh(const Tensor& x) {
  return unary(tanh_op(), "tanh", x, true);
}
Tensor sigmoid(const Tensor& x) {
  return unary(sigmoid_op(), "sigmoid", x, true);
}
Tensor silu(const Tensor& x) {
  return unary(silu_op(), "silu", x, true);
}
Tensor gelu(const Tensor& x, std::string_view approximate) {
  EMBER_CHECK(approximate == "none" || approximate == "tanh",
              "[gelu] approximate must be 'none' or 'tanh': got '{}'", approximate);
  const int64_t form = approximate == "tanh" ? 1 : 0;
  return unary(gelu_op(), "gelu", x, true, {{&form, 1}, {}});
}
Tensor floor(const Tensor& x) {
  return is_floating(x.dtype()) ? unary(floor_op(), "floor", x, false) : x.clone();
}
Tensor ceil(const Tensor& x) {
  return is_floating(x.dtype()) ? unary(ceil_op(), "ceil", x, false) : x.clone();
}
Tensor round(const Tensor& x) {
  return is_floating(x.dtype()) ? unary(round_op(), "round", x, false) : x.clone();
}
Tensor square(const Tensor& x) {
  return mul(x, x);
}

namespace {
struct ClampArgs {
  int64_t ints[2];
  double floats[2];
  DType dtype;
};
ClampArgs clamp_args(DType x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  EMBER_CHECK(lo || hi, "[clamp] at least one of min and max must be given");
  DType d = x;
  if (lo) d = detail::promote_with_scalar(d, *lo);
  if (hi) d = detail::promote_with_scalar(d, *hi);
  EMBER_CHECK(x != DType::Bool, "[clamp] not defined for bool tensors");
  return {{lo ? 1 : 0, hi ? 1 : 0}, {lo ? lo->to_double() : 0.0, hi ? hi->to_double() : 0.0}, d};
}
}  // namespace

Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  const ClampArgs a = clamp_args(x.dtype(), lo, hi);
  return unary(clamp_op(), "clamp", x.to(a.dtype), false, {{a.ints, 2}, {a.floats, 2}});
}
Tensor& clamp_(Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  const ClampArgs a = clamp_args(x.dtype(), lo, hi);
  EMBER_CHECK(a.dtype == x.dtype(),
              "[clamp_] result type {} can't be cast to the desired output type {}", a.dtype,
              x.dtype());
  return unary_(clamp_op(), "clamp_", x, false, {{a.ints, 2}, {a.floats, 2}});
}

#define EMBER_BINARY_INPLACE(name, kind)                                                       \
  Tensor& name##_(Tensor& a, const Tensor& b) {                                                \
    return binary_(name##_op(), #name "_", a, b, kind);                                        \
  }                                                                                            \
  Tensor& name##_(Tensor& a, Scalar b) {                                                       \
    return binary_(name##_op(), #name "_", a, detail::scalar_tensor(b, a.dtype(), a.device()), \
                   kind);                                                                      \
  }
EMBER_BINARY_INPLACE(add, Kind::Arith)
EMBER_BINARY_INPLACE(sub, Kind::Arith)
EMBER_BINARY_INPLACE(mul, Kind::Arith)
EMBER_BINARY_INPLACE(div, Kind::TrueDiv)
#undef EMBER_BINARY_INPLACE

Tensor& neg_(Tensor& x) {
  EMBER_CHECK(x.dtype() != DType::Bool,
              "[neg_] negation of a bool tensor is not supported (use logical_not)");
  return unary_(neg_op(), "neg_", x, false);
}
Tensor& abs_(Tensor& x) {
  return unary_(abs_op(), "abs_", x, false);
}
Tensor& exp_(Tensor& x) {
  return unary_(exp_op(), "exp_", x, true);
}
Tensor& log_(Tensor& x) {
  return unary_(log_op(), "log_", x, true);
}
Tensor& sqrt_(Tensor& x) {
  return unary_(sqrt_op(), "sqrt_", x, true);
}
Tensor& tanh_(Tensor& x) {
  return unary_(tanh_op(), "tanh_", x, true);
}
Tensor& sigmoid_(Tensor& x) {
  return unary_(sigmoid_op(), "sigmoid_", x, true);
}
Tensor& relu_(Tensor& x) {
  return unary_(relu_op(), "relu_", x, false);
}

Tensor& masked_fill_(Tensor& x, const Tensor& mask, Scalar value) {
  EMBER_CHECK(mask.dtype() == DType::Bool, "[masked_fill_] mask must be bool: got {}",
              mask.dtype());
  const Shape shape = broadcast_shapes(x.sizes(), mask.sizes(), "masked_fill_");
  EMBER_CHECK(shape == x.sizes(), "[masked_fill_] mask of shape {} does not broadcast to {}",
              shape_str(mask.sizes()), shape_str(x.sizes()));
  const Tensor v = detail::scalar_tensor(value, x.dtype(), x.device()).to(x.dtype());
  const Tensor m = mask.expand(x.sizes()), vv = v.expand(x.sizes());
  if (x.numel() > 0) run_kernel(where_op(), x.dtype(), {&m, &vv, &x}, {&x});
  x.bump_version();
  return x;
}

Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
Tensor operator+(const Tensor& a, Scalar b) {
  return add(a, b);
}
Tensor operator-(const Tensor& a, Scalar b) {
  return sub(a, b);
}
Tensor operator*(const Tensor& a, Scalar b) {
  return mul(a, b);
}
Tensor operator/(const Tensor& a, Scalar b) {
  return div(a, b);
}
Tensor operator+(Scalar a, const Tensor& b) {
  return add(b, a);
}
Tensor operator-(Scalar a, const Tensor& b) {
  return sub(detail::scalar_tensor(a, b.dtype(), b.device()), b);
}
Tensor operator*(Scalar a, const Tensor& b) {
  return mul(b, a);
}
Tensor operator/(Scalar a, const Tensor& b) {
  return div(detail::scalar_tensor(a, b.dtype(), b.device()), b);
}
Tensor operator-(const Tensor& a) {
  return neg(a);
}
Tensor& operator+=(Tensor& a, const Tensor& b) {
  return add_(a, b);
}
Tensor& operator-=(Tensor& a, const Tensor& b) {
  return sub_(a, b);
}
Tensor& operator*=(Tensor& a, const Tensor& b) {
  return mul_(a, b);
}
Tensor& operator/=(Tensor& a, const Tensor& b) {
  return div_(a, b);
}

}  // namespace ember
