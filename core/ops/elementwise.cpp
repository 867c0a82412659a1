// Elementwise ops: y = f(a, b) with NumPy broadcasting and PyTorch's type promotion.
// Kernel contract ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "remainder",
// "fmod", "div_floor", "div_trunc", "atan2", "hypot", "logaddexp"; the remainders and rounded
// divisions are never called with an integer 0 divisor, Note [Integer division by zero]): inputs
// {a, b} of the common dtype, already expanded to the output shape (stride 0 where broadcast);
// outputs {y} of that dtype (the comparison ops "eq".."ge", "logical_and/or": bool). Unary ops:
// inputs {x}, outputs {y} of x's dtype, attributes as ops.def names them ("clamp": int_lo/int_hi
// are the bounds of an integer x, lo/hi those of a floating one). "where": inputs {cond (bool), a,
// b}. "relu_backward" (optional): {g, y} -> {g where y > 0, else 0}. In-place forms run the same
// kernel with the output aliasing the first input.
#include "ember/ops/elementwise.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <string_view>

#include "core/dispatch/call.h"
#include "core/ops/kernel_view.h"
#include "ember/autograd/record.h"
#include "ember/ops/factory.h"
#include "ember/ops/reduce.h"
#include "ember/plugin_sdk_binary_ops.hpp"

namespace ember {
namespace {

// How a binary op treats dtypes: Arith keeps the common dtype (bool only where it means
// something); TrueDiv computes integers in the default float; Compare and Logical give bool;
// Bitwise takes integers or bool and Integer integers only (Note [Integer binary ops]).
enum class Kind { Arith, TrueDiv, Compare, Logical, Bitwise, Integer };

int category(DType d) {
  return d == DType::Bool ? 0 : is_integral(d) ? 1 : 2;
}

// bool + bool is "or" and bool * bool is "and", as in PyTorch; subtraction and powers have no
// bool meaning and are refused by name rather than by a missing kernel.
void check_bool_arith(const char* name) {
  const std::string_view n(name);
  EMBER_CHECK_TYPE(n.substr(0, 3) != "sub" && n.substr(0, 3) != "pow",
                   "[{}] not supported for bool tensors (to invert a mask use logical_not)", name);
}

// The format of an elementwise result of `shape` (Note [Channels-last tensors]): that of the
// first operand of the result's shape.
MemoryFormat result_format(IntList shape, std::initializer_list<const Tensor*> operands) {
  if (shape.size() != 4) return MemoryFormat::Contiguous;
  for (const Tensor* t : operands) {
    if (t->sizes() == shape) return t->suggest_memory_format();
  }
  return MemoryFormat::Contiguous;
}

Tensor binary(const Op& op, const char* name, const Tensor& a, const Tensor& b, Kind kind,
              KernelAttrs attrs = {}) {
  EMBER_CHECK_TYPE(a.defined() && b.defined(), "[{}] undefined tensor argument", name);
  DType ct = a.dtype() == b.dtype() ? a.dtype() : result_type(a, b);
  if (kind == Kind::TrueDiv && !is_floating(ct)) ct = default_dtype();
  EMBER_CHECK_TYPE((kind != Kind::Bitwise && kind != Kind::Integer) || is_integral(ct) ||
                       (kind == Kind::Bitwise && ct == DType::Bool),
                   "[{}] takes integer{} tensors: got {} and {}", name,
                   kind == Kind::Bitwise ? " or bool" : "", a.dtype(), b.dtype());
  const DType out_dtype = kind == Kind::Compare || kind == Kind::Logical ? DType::Bool : ct;
  const Device device = common_device({&a, &b}, name);
  if (ct == DType::Bool && kind == Kind::Arith) check_bool_arith(name);
  if (a.sizes() == b.sizes()) {
    Tensor out = empty(a.sizes(), {out_dtype, device}, result_format(a.sizes(), {&a, &b}));
    if (out.numel() == 0) return out;
    const Tensor a2 = a.to(ct), b2 = b.to(ct);
    run_kernel(op, ct, {&a2, &b2}, {&out}, attrs);
    return out;
  }
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), name);
  Tensor out = empty(shape, {out_dtype, device}, result_format(shape, {&a, &b}));
  if (out.numel() == 0) return out;
  const Tensor a2 = detail::expand_for_kernel(a.to(ct), shape),
               b2 = detail::expand_for_kernel(b.to(ct), shape);
  run_kernel(op, ct, {&a2, &b2}, {&out}, attrs);
  return out;
}

// The checks of an in-place binary op: the result must keep a's dtype category and shape.
void binary_check_inplace(const Tensor& a, const Tensor& b, const char* name, Kind kind) {
  EMBER_CHECK_TYPE(a.defined() && b.defined(), "[{}] undefined tensor argument", name);
  DType ct = result_type(a, b);
  if (kind == Kind::TrueDiv && !is_floating(ct)) ct = default_dtype();
  EMBER_CHECK_TYPE(category(ct) <= category(a.dtype()),
                   "[{}] result type {} can't be cast to the desired output type {}", name, ct,
                   a.dtype());
  common_device({&a, &b}, name);
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), name);
  EMBER_CHECK(shape == a.sizes(), "[{}] output with shape {} doesn't match the broadcast shape {}",
              name, shape_str(a.sizes()), shape_str(shape));
}

Tensor& binary_(const Op& op, const char* name, Tensor& a, const Tensor& b, Kind kind) {
  binary_check_inplace(a, b, name, kind);
  autograd::check_writable(a, name);
  if (a.dtype() == DType::Bool && kind == Kind::Arith) check_bool_arith(name);
  if (a.numel() == 0) return a;
  const Tensor b2 = detail::expand_for_kernel(b.to(a.dtype()), a.sizes());
  // Note: with a.dtype() == ct this is exact; for a float16 `a` and float32 `b` PyTorch
  // computes in float32 and rounds once, while this rounds b first (difference <= 1 ulp).
  run_kernel(op, a.dtype(), {&a, &b2}, {&a});
  a.bump_version();
  return a;
}

Tensor unary(const Op& op, const char* name, const Tensor& x, bool promote_to_float,
             KernelAttrs attrs = {}) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", name);
  const Tensor in = promote_to_float && !is_floating(x.dtype()) ? x.to(default_dtype()) : x;
  Tensor out = empty_like(in);
  if (out.numel() > 0) run_kernel(op, in.dtype(), {&in}, {&out}, attrs);
  return out;
}

Tensor& unary_(const Op& op, const char* name, Tensor& x, bool needs_float,
               KernelAttrs attrs = {}) {
  EMBER_CHECK_TYPE(!needs_float || is_floating(x.dtype()),
                   "[{}] result type float32 can't be cast to the desired output type {}", name,
                   x.dtype());
  autograd::check_writable(x, name);
  if (x.numel() > 0) run_kernel(op, x.dtype(), {&x}, {&x}, attrs);
  x.bump_version();
  return x;
}

}  // namespace

// PyTorch's result_type for two tensors: 0-d tensors only raise the category.
DType result_type(const Tensor& a, const Tensor& b) {
  const bool a0 = a.dim() == 0, b0 = b.dim() == 0;
  if (a0 == b0) return promote_types(a.dtype(), b.dtype());
  const Tensor& dim_t = a0 ? b : a;
  const Tensor& zero_t = a0 ? a : b;
  if (category(zero_t.dtype()) > category(dim_t.dtype())) return zero_t.dtype();
  return dim_t.dtype();
}
DType result_type(const Tensor& a, Scalar b) {
  return detail::promote_with_scalar(a.dtype(), b);
}
DType result_type(Scalar a, const Tensor& b) {
  return detail::promote_with_scalar(b.dtype(), a);
}
DType result_type(Scalar a, Scalar b) {
  return promote_types(a.natural_dtype(), b.natural_dtype());
}

bool is_nonzero(const Tensor& x) {
  EMBER_CHECK_TYPE(x.defined(), "[is_nonzero] undefined tensor argument");
  EMBER_CHECK(x.numel() == 1,
              "[bool] the truth value of a tensor with {} elements is ambiguous (use any() or "
              "all())",
              x.numel());
  return x.item_scalar().to_double() != 0;
}

Tensor& apply_inplace(Tensor& x, const char* op, const std::function<Tensor(const Tensor&)>& fn) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", op);
  auto checked = [&](const Tensor& value) {
    const Tensor r = fn(value);
    EMBER_CHECK_TYPE(r.defined() && category(r.dtype()) <= category(x.dtype()),
                     "[{}] result type {} can't be cast to the desired output type {}", op,
                     r.defined() ? fmt::format("{}", r.dtype()) : "undefined", x.dtype());
    return r;
  };
  // autograd::inplace runs fn on a clone of x, so that a graph recorded through fn keeps x's old
  // value. Where x does not require grad, fn runs on x itself, and only a result that requires
  // grad (another operand does) is made again that way; nothing else pays for the clone.
  if (!autograd::is_grad_enabled() || !x.requires_grad()) {
    autograd::check_writable(x, op);
    const Tensor r = checked(x);
    if (!r.requires_grad()) {
      EMBER_CHECK(r.sizes() == x.sizes(),
                  "[{}] output with shape {} doesn't match the broadcast shape {}", op,
                  shape_str(x.sizes()), shape_str(r.sizes()));
      return x.copy_(r);
    }
  }
  return autograd::inplace(x, op, checked);
}

DType detail::promote_with_scalar(DType t, Scalar s) {
  const int sc = s.kind() == Scalar::Kind::Float ? 2 : s.kind() == Scalar::Kind::Int ? 1 : 0;
  if (sc > category(t)) return sc == 2 ? default_dtype() : DType::Int64;
  return t;
}

Tensor detail::scalar_tensor(Scalar s, DType other, Device device) {
  // The fill kernel, not fill_: an operand of out-of-place arithmetic converts as PyTorch's does
  // (uint8 + 300 wraps; Note [Scalars that do not fit]).
  Tensor t = empty({}, {promote_with_scalar(other, s), device});
  run_kernel(attrs::fill{.int_value = s.to_int(), .value = s.to_double()}, t.dtype(), {}, {&t});
  return t;
}

// Note [Backward formulas live with their ops]
// Each differentiable op below records its derivative through autograd::differentiable: the
// forward runs below autograd, and the closure (capturing SavedTensors, version-checked when
// unpacked) maps the output gradient to input gradients. reduce_grad undoes broadcasting and
// dtype promotion. Formulas are written with public ops, so they are differentiable again
// (create_graph) without extra work.

using autograd::differentiable;
using autograd::LambdaNode;
using autograd::reduce_grad;
using autograd::SavedTensor;
using autograd::TensorMeta;
using Grads = std::vector<Tensor>;

Tensor add(const Tensor& a, const Tensor& b) {
  return differentiable(
      "AddBackward", "add", {&a, &b},
      [&] { return binary(core_op(ops::add), "add", a, b, Kind::Arith); },
      [&] {
        // Note [Save only what backward needs]: shapes and dtypes, not the tensors.
        return [ma = TensorMeta(a), mb = TensorMeta(b)](const Grads& g, const LambdaNode&) {
          return Grads{reduce_grad(g[0], ma), reduce_grad(g[0], mb)};
        };
      });
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return differentiable(
      "SubBackward", "sub", {&a, &b},
      [&] { return binary(core_op(ops::sub), "sub", a, b, Kind::Arith); },
      [&] {
        return [ma = TensorMeta(a), mb = TensorMeta(b)](const Grads& g, const LambdaNode&) {
          return Grads{reduce_grad(g[0], ma), reduce_grad(neg(g[0]), mb)};
        };
      });
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return differentiable(
      "MulBackward", "mul", {&a, &b},
      [&] { return binary(core_op(ops::mul), "mul", a, b, Kind::Arith); },
      [&] {
        // Each input's values are needed only for the other's gradient.
        const bool ra = a.requires_grad(), rb = b.requires_grad();
        return [sa = rb ? SavedTensor(a) : SavedTensor(), sb = ra ? SavedTensor(b) : SavedTensor(),
                ma = TensorMeta(a), mb = TensorMeta(b), ra,
                rb](const Grads& g, const LambdaNode& self) {
          return Grads{ra ? reduce_grad(mul(g[0], self.unpack(sb)), ma) : Tensor(),
                       rb ? reduce_grad(mul(g[0], self.unpack(sa)), mb) : Tensor()};
        };
      });
}
Tensor div(const Tensor& a, const Tensor& b) {
  return differentiable(
      "DivBackward", "div", {&a, &b},
      [&] { return binary(core_op(ops::div), "div", a, b, Kind::TrueDiv); },
      [&] {
        // b is always read; a only for b's gradient.
        const bool rb = b.requires_grad();
        return [sa = rb ? SavedTensor(a) : SavedTensor(), sb = SavedTensor(b), ma = TensorMeta(a),
                mb = TensorMeta(b), rb](const Grads& g, const LambdaNode& self) {
          const Tensor b = self.unpack(sb);
          return Grads{
              reduce_grad(div(g[0], b), ma),
              rb ? reduce_grad(neg(div(mul(g[0], self.unpack(sa)), mul(b, b))), mb) : Tensor()};
        };
      });
}
// d(a^b)/da = b a^(b-1); d(a^b)/db = a^b log(a), taken as 0 where a == 0 (PyTorch's choice).
Tensor pow(const Tensor& a, const Tensor& b) {
  return differentiable(
      "PowBackward", "pow", {&a, &b},
      [&] { return binary(core_op(ops::pow), "pow", a, b, Kind::Arith); },
      [&] {
        return [sa = SavedTensor(a), sb = SavedTensor(b), rb = b.requires_grad()](
                   const Grads& g, const LambdaNode& self) {
          const Tensor a = self.unpack(sa), b = self.unpack(sb);
          Tensor ga = mul(g[0], mul(b, pow(a, sub(b, 1))));
          Tensor gb;
          if (rb) {
            const Tensor zero_base = eq(a, 0.0);
            gb = mul(g[0], where(zero_base, zeros_like(a),
                                 mul(pow(a, b), log(where(zero_base, ones_like(a), a)))));
          }
          return Grads{reduce_grad(ga, a), rb ? reduce_grad(gb, b) : Tensor()};
        };
      });
}
Tensor add(const Tensor& a, Scalar b) {
  return add(a, detail::scalar_tensor(b, a.dtype(), a.device()));
}
Tensor sub(const Tensor& a, Scalar b) {
  return sub(a, detail::scalar_tensor(b, a.dtype(), a.device()));
}
Tensor mul(const Tensor& a, Scalar b) {
  return mul(a, detail::scalar_tensor(b, a.dtype(), a.device()));
}
Tensor div(const Tensor& a, Scalar b) {
  return div(a, detail::scalar_tensor(b, a.dtype(), a.device()));
}
Tensor pow(const Tensor& a, Scalar b) {
  // PyTorch refuses an integer base with a negative integer exponent given as a number (an
  // exponent tensor gives 0 elementwise, except for the bases 1 and -1).
  EMBER_CHECK(!(is_integral(a.dtype()) && b.kind() == Scalar::Kind::Int && b.to_int() < 0),
              "[pow] integers to negative integer powers are not allowed: exponent {} for a {} "
              "tensor (use a floating base or exponent)",
              b.to_int(), a.dtype());
  return pow(a, detail::scalar_tensor(b, a.dtype(), a.device()));
}

// Note [alpha is the core's]
// add(a, b, alpha) and sub(a, b, alpha) are a + alpha * b and a - alpha * b as PyTorch defines
// them: b is converted to the result dtype of (a, b) first and scaled there, so integers stay
// integers and exact (alpha once went through a double, and int64 + 3 with alpha 2 came out
// float32). An integer result takes only an integer alpha and a non-bool result no bool alpha,
// as in PyTorch. Python's alpha= keyword calls these.
namespace {
bool is_one(Scalar alpha) {
  return alpha.kind() == Scalar::Kind::Float ? alpha.to_double() == 1.0 : alpha.to_int() == 1;
}
/** alpha * b in the result dtype of (a, b), or b itself for an alpha of 1; checks alpha. */
Tensor scaled(const Tensor& a, const Tensor& b, Scalar alpha, const char* name) {
  EMBER_CHECK_TYPE(a.defined() && b.defined(), "[{}] undefined tensor argument", name);
  const DType ct = a.dtype() == b.dtype() ? a.dtype() : result_type(a, b);
  EMBER_CHECK_TYPE(alpha.kind() != Scalar::Kind::Bool || ct == DType::Bool,
                   "[{}] a bool alpha is only supported for bool results: got {}", name, ct);
  EMBER_CHECK_TYPE(is_floating(ct) || alpha.kind() != Scalar::Kind::Float,
                   "[{}] for integral input tensors, argument alpha must not be a floating point "
                   "number: got {} for {}",
                   name, alpha.to_double(), ct);
  return is_one(alpha) ? b : mul(b.to(ct), alpha);
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha) {
  return add(a, scaled(a, b, alpha, "add"));
}
Tensor add(const Tensor& a, Scalar b, Scalar alpha) {
  return add(a, detail::scalar_tensor(b, a.dtype(), a.device()), alpha);
}
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha) {
  return sub(a, scaled(a, b, alpha, "sub"));
}
Tensor sub(const Tensor& a, Scalar b, Scalar alpha) {
  return sub(a, detail::scalar_tensor(b, a.dtype(), a.device()), alpha);
}

#define EMBER_COMPARE(name)                                                                      \
  Tensor name(const Tensor& a, const Tensor& b) {                                                \
    return binary(core_op(ops::name), #name, a, b, Kind::Compare);                               \
  }                                                                                              \
  Tensor name(const Tensor& a, Scalar b) {                                                       \
    return binary(core_op(ops::name), #name, a, detail::scalar_tensor(b, a.dtype(), a.device()), \
                  Kind::Compare);                                                                \
  }
EMBER_COMPARE(eq)
EMBER_COMPARE(ne)
EMBER_COMPARE(lt)
EMBER_COMPARE(le)
EMBER_COMPARE(gt)
EMBER_COMPARE(ge)
#undef EMBER_COMPARE

// maximum/minimum: the gradient goes to the larger (smaller) input, split evenly on ties.
namespace {
Tensor extremum(const Op& op, const char* name, const char* node, const Tensor& a, const Tensor& b,
                bool is_max) {
  return differentiable(
      node, name, {&a, &b}, [&] { return binary(op, name, a, b, Kind::Arith); },
      [&] {
        return [sa = SavedTensor(a), sb = SavedTensor(b), is_max](const Grads& g,
                                                                  const LambdaNode& self) {
          const Tensor a = self.unpack(sa), b = self.unpack(sb);
          const Tensor a_wins = is_max ? gt(a, b) : lt(a, b);
          const Tensor tie = eq(a, b);
          const Tensor half = mul(g[0], 0.5);
          const Tensor zero = zeros_like(g[0]);
          const Tensor ga = where(a_wins, g[0], where(tie, half, zero));
          const Tensor gb = where(a_wins, zero, where(tie, half, g[0]));
          return Grads{reduce_grad(ga, a), reduce_grad(gb, b)};
        };
      });
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) {
  return extremum(core_op(ops::maximum), "maximum", "MaximumBackward", a, b, true);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return extremum(core_op(ops::minimum), "minimum", "MinimumBackward", a, b, false);
}
// atan2, hypot and logaddexp: floating results (integers promote as for div), their element
// semantics shared by every backend (Note [Binary math ops] in plugin_sdk_binary_ops.hpp).
// d atan2(a, b) = (b da - a db) / (a^2 + b^2); d hypot = (a da + b db) / h;
// d logaddexp = sigmoid(a - b) da + sigmoid(b - a) db.
Tensor atan2(const Tensor& a, const Tensor& b) {
  return differentiable(
      "Atan2Backward", "atan2", {&a, &b},
      [&] { return binary(core_op(ops::atan2), "atan2", a, b, Kind::TrueDiv); },
      [&] {
        return [sa = SavedTensor(a), sb = SavedTensor(b)](const Grads& g, const LambdaNode& self) {
          const Tensor a = self.unpack(sa), b = self.unpack(sb);
          const Tensor scale = div(g[0], add(mul(a, a), mul(b, b)));
          return Grads{reduce_grad(mul(scale, b), a), reduce_grad(neg(mul(scale, a)), b)};
        };
      });
}
Tensor hypot(const Tensor& a, const Tensor& b) {
  return differentiable(
      "HypotBackward", "hypot", {&a, &b},
      [&] { return binary(core_op(ops::hypot), "hypot", a, b, Kind::TrueDiv); },
      [&] {
        return [sa = SavedTensor(a), sb = SavedTensor(b)](const Grads& g, const LambdaNode& self) {
          const Tensor a = self.unpack(sa), b = self.unpack(sb);
          const Tensor scale = div(g[0], self.saved_output(0));
          return Grads{reduce_grad(mul(scale, a), a), reduce_grad(mul(scale, b), b)};
        };
      },
      /*save_output=*/true);
}
Tensor logaddexp(const Tensor& a, const Tensor& b) {
  return differentiable(
      "LogaddexpBackward", "logaddexp", {&a, &b},
      [&] { return binary(core_op(ops::logaddexp), "logaddexp", a, b, Kind::TrueDiv); },
      [&] {
        return [sa = SavedTensor(a), sb = SavedTensor(b)](const Grads& g, const LambdaNode& self) {
          const Tensor a = self.unpack(sa), b = self.unpack(sb);
          return Grads{reduce_grad(mul(g[0], sigmoid(sub(a, b))), a),
                       reduce_grad(mul(g[0], sigmoid(sub(b, a))), b)};
        };
      });
}
// Note [Integer division by zero]
// An integer division, remainder or fmod by 0 has no value: PyTorch raises on the CPU
// ("ZeroDivisionError"), and Ember raises ember::ZeroDivisionError (a ValueError; Python's
// ZeroDivisionError too) on every device before any kernel runs, so the kernels never see a 0
// divisor (they return 0 for one; Note [Integer division is exact] in plugin_sdk_binary_ops.hpp).
// The check reads the divisor (one pass, and a synchronisation on an accelerator), so it runs
// only for integer results; floating ones give inf or NaN as IEEE says.
namespace {
void check_integer_divisor(const Tensor& b, DType ct, const char* name) {
  if (is_floating(ct)) return;
  const bool zero_divisor = b.numel() > 0 && any(eq(b, 0)).item<bool>();
  EMBER_CHECK_AS(
      ZeroDivisionError, !zero_divisor,
      "[{}] integer division by zero: the divisor holds a 0 (a floating divisor gives inf or NaN)",
      name);
}
}  // namespace

// The two remainders: d/da = 1, d/db = -floor(a / b) (remainder) or -trunc(a / b) (fmod).
// An integer divisor of 0 is an error, as in PyTorch (floating ones give NaN).
namespace {
Tensor remainder_like(const Tensor& a, const Tensor& b, bool floor_mode) {
  const char* name = floor_mode ? "remainder" : "fmod";
  EMBER_CHECK_TYPE(a.defined() && b.defined(), "[{}] undefined tensor argument", name);
  const DType ct = result_type(a, b);
  EMBER_CHECK_TYPE(ct != DType::Bool, "[{}] not defined for bool tensors", name);
  check_integer_divisor(b, ct, name);
  return differentiable(
      floor_mode ? "RemainderBackward" : "FmodBackward", name, {&a, &b},
      [&] {
        return binary(core_op(floor_mode ? ops::remainder : ops::fmod), name, a, b, Kind::Arith);
      },
      [&] {
        return [sa = SavedTensor(a), sb = SavedTensor(b), floor_mode](const Grads& g,
                                                                      const LambdaNode& self) {
          const Tensor a = self.unpack(sa), b = self.unpack(sb);
          const Tensor q = div(a, b);
          const Tensor whole = floor_mode ? floor(q) : mul(sign(q), floor(abs(q)));
          return Grads{reduce_grad(g[0], a), reduce_grad(neg(mul(g[0], whole)), b)};
        };
      });
}
}  // namespace

Tensor remainder(const Tensor& a, const Tensor& b) {
  return remainder_like(a, b, true);
}
Tensor remainder(const Tensor& a, Scalar b) {
  return remainder(a, detail::scalar_tensor(b, a.dtype(), a.device()));
}
Tensor fmod(const Tensor& a, const Tensor& b) {
  return remainder_like(a, b, false);
}
Tensor fmod(const Tensor& a, Scalar b) {
  return fmod(a, detail::scalar_tensor(b, a.dtype(), a.device()));
}

// Division with a rounding mode: "trunc" rounds toward zero, "floor" toward -inf (Python's //).
// Integers are divided as integers (exact at any size, Note [Integer division is exact]) and
// keep their dtype; a 0 divisor is refused (Note [Integer division by zero]). The result is a
// step function: it carries no gradient (as floor() would give 0).
Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string_view> rounding_mode) {
  if (!rounding_mode) return div(a, b);
  const bool floor_mode = *rounding_mode == "floor";
  EMBER_CHECK(floor_mode || *rounding_mode == "trunc",
              "[div] rounding_mode must be None, 'trunc' or 'floor': got '{}'", *rounding_mode);
  const char* name = floor_mode ? "floor_divide" : "div";
  EMBER_CHECK_TYPE(a.defined() && b.defined(), "[{}] undefined tensor argument", name);
  const DType ct = a.dtype() == b.dtype() ? a.dtype() : result_type(a, b);
  EMBER_CHECK_TYPE(ct != DType::Bool, "[{}] rounded division is not defined for bool tensors",
                   name);
  check_integer_divisor(b, ct, name);
  return binary(core_op(floor_mode ? ops::div_floor : ops::div_trunc), name, a, b, Kind::Arith);
}
Tensor div(const Tensor& a, Scalar b, std::optional<std::string_view> rounding_mode) {
  return div(a, detail::scalar_tensor(b, a.dtype(), a.device()), rounding_mode);
}
Tensor floor_divide(const Tensor& a, const Tensor& b) {
  return div(a, b, "floor");
}
Tensor floor_divide(const Tensor& a, Scalar b) {
  return div(a, b, "floor");
}

Tensor logical_and(const Tensor& a, const Tensor& b) {
  return binary(core_op(ops::logical_and), "logical_and", a, b, Kind::Logical);
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return binary(core_op(ops::logical_or), "logical_or", a, b, Kind::Logical);
}
Tensor logical_not(const Tensor& a) {
  EMBER_CHECK_TYPE(a.defined(), "[logical_not] undefined tensor argument");
  Tensor out = empty(a.sizes(), {DType::Bool, a.device()}, a.suggest_memory_format());
  if (out.numel() > 0) run_kernel(core_op(ops::logical_not), a.dtype(), {&a}, {&out});
  return out;
}

// The integer ops: one kernel, its kind an attribute (Note [Integer binary ops] in
// plugin_sdk_binary_ops.hpp). and, or and xor also take bool; the others integers only.
namespace {
Tensor integer_binary(sdk::IntegerBinaryKind kind, const char* name, const Tensor& a,
                      const Tensor& b) {
  const bool takes_bool = kind == sdk::kBitAnd || kind == sdk::kBitOr || kind == sdk::kBitXor;
  return binary(core_op(ops::integer_binary), name, a, b,
                takes_bool ? Kind::Bitwise : Kind::Integer,
                PackedAttrs(attrs::integer_binary{.kind = kind}));
}
}  // namespace

#define EMBER_INTEGER_BINARY(name, kind)                             \
  Tensor name(const Tensor& a, const Tensor& b) {                    \
    return integer_binary(kind, #name, a, b);                        \
  }                                                                  \
  Tensor name(const Tensor& a, Scalar b) {                           \
    return name(a, detail::scalar_tensor(b, a.dtype(), a.device())); \
  }
EMBER_INTEGER_BINARY(bitwise_and, sdk::kBitAnd)
EMBER_INTEGER_BINARY(bitwise_or, sdk::kBitOr)
EMBER_INTEGER_BINARY(bitwise_xor, sdk::kBitXor)
EMBER_INTEGER_BINARY(bitwise_left_shift, sdk::kShiftLeft)
EMBER_INTEGER_BINARY(bitwise_right_shift, sdk::kShiftRight)
#undef EMBER_INTEGER_BINARY
Tensor gcd(const Tensor& a, const Tensor& b) {
  return integer_binary(sdk::kGcd, "gcd", a, b);
}
Tensor lcm(const Tensor& a, const Tensor& b) {
  return integer_binary(sdk::kLcm, "lcm", a, b);
}
Tensor bitwise_not(const Tensor& a) {
  EMBER_CHECK_TYPE(a.defined(), "[bitwise_not] undefined tensor argument");
  EMBER_CHECK_TYPE(is_integral(a.dtype()) || a.dtype() == DType::Bool,
                   "[bitwise_not] takes integer or bool tensors: got {}", a.dtype());
  return unary(core_op(ops::bitwise_not), "bitwise_not", a, false);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  EMBER_CHECK_TYPE(cond.defined() && a.defined() && b.defined(),
                   "[where] undefined tensor argument");
  EMBER_CHECK_TYPE(cond.dtype() == DType::Bool, "[where] condition must be bool: got {}",
                   cond.dtype());
  return differentiable(
      "WhereBackward", "where", {&a, &b},
      [&] {
        const Device device = common_device({&cond, &a, &b}, "where");
        const DType ct = result_type(a, b);
        const Shape shape = broadcast_shapes(broadcast_shapes(cond.sizes(), a.sizes(), "where"),
                                             b.sizes(), "where");
        const Tensor c2 = detail::expand_for_kernel(cond, shape),
                     a2 = detail::expand_for_kernel(a.to(ct), shape),
                     b2 = detail::expand_for_kernel(b.to(ct), shape);
        Tensor out = empty(shape, {ct, device}, result_format(shape, {&cond, &a, &b}));
        if (out.numel() > 0) run_kernel(core_op(ops::where), ct, {&c2, &a2, &b2}, {&out});
        return out;
      },
      [&] {
        return [cond, ma = TensorMeta(a), mb = TensorMeta(b)](const Grads& g, const LambdaNode&) {
          const Tensor zero = zeros_like(g[0]);
          return Grads{reduce_grad(where(cond, g[0], zero), ma),
                       reduce_grad(where(cond, zero, g[0]), mb)};
        };
      });
}
Tensor where(const Tensor& cond, const Tensor& a, Scalar b) {
  return where(cond, a, detail::scalar_tensor(b, a.dtype(), a.device()));
}

// 1 - t, differentiable.
Tensor rsub_one(const Tensor& t) {
  return add(neg(t), 1.0);
}

// Unary ops. `Save` picks what the backward needs: the input, or the output.
namespace {
enum class Save { Input, Output };

template <typename Formula>
// The op's name, its node's name ("GeluBackward") and its kernel all come from its id.
Tensor unary_ad(ops::Id id, const Tensor& x, bool to_float, Save save, Formula formula,
                KernelAttrs attrs = {}) {
  const char* name = ops::kInfo[id].name;
  return differentiable(
      backward_node_name(id), name, {&x},
      [&] { return unary(core_op(id), name, x, to_float, attrs); },
      [&] {
        return [sx = save == Save::Input ? SavedTensor(x) : SavedTensor(), formula](
                   const Grads& g, const LambdaNode& self) {
          const Tensor v = sx.defined() ? self.unpack(sx) : self.saved_output(0);
          return Grads{formula(g[0], v)};
        };
      },
      /*save_output=*/save == Save::Output);
}
}  // namespace

Tensor neg(const Tensor& x) {
  EMBER_CHECK_TYPE(x.dtype() != DType::Bool,
                   "[neg] negation of a bool tensor is not supported (use logical_not)");
  return unary_ad(ops::neg, x, false, Save::Input,
                  [](const Tensor& g, const Tensor&) { return neg(g); });
}
Tensor abs(const Tensor& x) {
  if (x.dtype() == DType::Bool) return x.clone();
  return unary_ad(ops::abs, x, false, Save::Input,
                  [](const Tensor& g, const Tensor& x) { return mul(g, sign(x)); });
}
Tensor sign(const Tensor& x) {
  if (x.dtype() == DType::Bool) return x.clone();
  return unary_ad(ops::sign, x, false, Save::Input,
                  [](const Tensor& g, const Tensor&) { return zeros_like(g); });
}
Tensor sgn(const Tensor& x) {
  return sign(x);
}
Tensor positive(const Tensor& x) {
  EMBER_CHECK_TYPE(x.defined(), "[positive] undefined tensor argument");
  EMBER_CHECK_TYPE(x.dtype() != DType::Bool,
                   "[positive] the unary + of a bool tensor is not supported (use x.clone())");
  return x;
}

Tensor rsub(const Tensor& x, const Tensor& other, Scalar alpha) {
  return sub(other, x, alpha);
}

Tensor rsub(const Tensor& x, Scalar other, Scalar alpha) {
  EMBER_CHECK_TYPE(x.defined(), "[rsub] undefined tensor argument");
  return sub(detail::scalar_tensor(other, x.dtype(), x.device()), x, alpha);
}

// As PyTorch computes it: 2 ** other as a number base raised to a tensor, then a product.
Tensor ldexp(const Tensor& x, const Tensor& other) {
  EMBER_CHECK_TYPE(x.defined() && other.defined(), "[ldexp] undefined tensor argument");
  return mul(x, pow(detail::scalar_tensor(2.0, other.dtype(), other.device()), other));
}

Tensor mvlgamma(const Tensor& x, int64_t p) {
  EMBER_CHECK_TYPE(x.defined(), "[mvlgamma] undefined tensor argument");
  EMBER_CHECK(p >= 1, "[mvlgamma] p has to be greater than or equal to 1: got {}", p);
  const Tensor f = is_floating(x.dtype()) ? x : x.to(default_dtype());
  const double bound = static_cast<double>(p - 1) / 2;
  EMBER_CHECK(f.numel() == 0 || all(gt(f, bound)).item<bool>(),
              "[mvlgamma] all elements must be greater than (p-1)/2 = {}", bound);
  Tensor out = full_like(f, static_cast<double>(p * (p - 1)) / 4 * std::log(std::numbers::pi));
  for (int64_t j = 0; j < p; ++j) out = add(out, lgamma(sub(f, static_cast<double>(j) / 2)));
  return out;
}

Tensor angle(const Tensor& x) {
  EMBER_CHECK_TYPE(x.defined(), "[angle] undefined tensor argument");
  const Tensor f = is_floating(x.dtype()) ? x : x.to(default_dtype());
  return where(lt(f, 0.0), full_like(f, std::numbers::pi), where(isnan(f), f, zeros_like(f)));
}

Tensor real(const Tensor& x) {
  EMBER_CHECK_TYPE(x.defined(), "[real] undefined tensor argument");
  return x;
}

Tensor imag(const Tensor& x) {
  EMBER_CHECK_TYPE(x.defined(), "[imag] undefined tensor argument");
  EMBER_CHECK_NOT_IMPLEMENTED(false,
                              "[imag] is not implemented for tensors with non-complex dtypes: got "
                              "{} (Ember's dtypes are real; the imaginary part of a real tensor "
                              "is zeros_like(x))",
                              x.dtype());
  return x;
}

// Note [frexp as a composite]
// The exponent is floor(log2|x|) + 1, computed in float64 (exact for every float32 and half
// value), then corrected by one either way where log2 rounded across a power of two; the
// mantissa is x scaled by 2 ** -exponent in two halves, as 2 ** 1074 (the smallest subnormal
// double's exponent) is beyond float64's range while each half is not, then halved or doubled
// with the exponent's correction. Zero, inf and NaN keep
// exponent 0 and are their own mantissa, as C's frexp and PyTorch give. Not differentiable (as
// in PyTorch): the results never require grad.
std::tuple<Tensor, Tensor> frexp(const Tensor& x) {
  EMBER_CHECK_TYPE(x.defined(), "[frexp] undefined tensor argument");
  EMBER_CHECK_TYPE(is_floating(x.dtype()),
                   "[frexp] expected a floating tensor: got {} (convert it with .float() first)",
                   x.dtype());
  autograd::NoGradGuard no_grad;
  const Tensor x64 = x.to(DType::Float64);
  const Tensor regular = logical_and(isfinite(x64), ne(x64, 0.0));
  const Tensor a = where(regular, abs(x64), ones_like(x64));
  Tensor e = add(floor(log2(a)), 1.0);
  const auto scaled = [&](const Tensor& by) {  // x64 * 2 ** -by, in two halves
    const Tensor half = trunc(div(by, 2.0));
    return mul(mul(x64, exp2(neg(half))), exp2(sub(half, by)));
  };
  Tensor m = scaled(e);
  // The correction scales by a power of two, which is exact for a mantissa near [0.5, 1).
  const Tensor high = ge(abs(m), 1.0), low = lt(abs(m), 0.5);
  e = add(e, sub(high.to(DType::Float64), low.to(DType::Float64)));
  m = where(regular, where(high, mul(m, 0.5), where(low, mul(m, 2.0), m)), x64);
  e = where(regular, e, zeros_like(e));
  return {m.to(x.dtype()), e.to(DType::Int32)};
}

// Note [Fused ReLU backward]
// ReLU's gradient is g where the output y > 0, else 0 (a NaN y passes g, as PyTorch's
// threshold_backward). As public ops that is a bool mask, a zero tensor and a where: three
// passes and two temporaries per ReLU per step, a visible share of an MLP step. Backends may
// provide "relu_backward", which does it in one pass; it is used when the backward itself
// needs no graph (no create_graph) and the backend has the kernel, and the composite form,
// which is differentiable and runs anywhere, otherwise.
namespace {
/** The optional fused backward A::kOp of an elementwise op, {g, t} -> a gradient of t's shape,
 *  when no graph is needed and t's device has the kernel; undefined otherwise (the caller then
 *  composes it from public ops). */
template <typename A>
Tensor fused_grad(const A& attrs, const Tensor& g, const Tensor& t) {
  if (autograd::is_grad_enabled() || g.dtype() != t.dtype() || g.sizes() != t.sizes() ||
      g.device() != t.device() || !has_kernel(core_op(A::kOp), t.device(), t.dtype())) {
    return Tensor();
  }
  Tensor out = empty_like(t);
  if (out.numel() > 0) run_kernel(attrs, t.dtype(), {&g, &t}, {&out});
  return out;
}

Tensor relu_grad(const Tensor& g, const Tensor& y) {
  if (Tensor fused = fused_grad(attrs::relu_backward{}, g, y); fused.defined()) return fused;
  return where(le(y, 0.0), zeros_like(g), g);
}
}  // namespace

Tensor relu(const Tensor& x) {
  EMBER_CHECK_TYPE(x.dtype() != DType::Bool, "[relu] not defined for bool tensors");
  return unary_ad(ops::relu, x, false, Save::Output, relu_grad);
}
Tensor exp(const Tensor& x) {
  return unary_ad(ops::exp, x, true, Save::Output,
                  [](const Tensor& g, const Tensor& y) { return mul(g, y); });
}
Tensor log(const Tensor& x) {
  return unary_ad(ops::log, x, true, Save::Input,
                  [](const Tensor& g, const Tensor& x) { return div(g, x); });
}
Tensor log1p(const Tensor& x) {
  return unary_ad(ops::log1p, x, true, Save::Input,
                  [](const Tensor& g, const Tensor& x) { return div(g, add(x, 1.0)); });
}
Tensor expm1(const Tensor& x) {
  // d/dx (e^x - 1) = e^x = y + 1
  return unary_ad(ops::expm1, x, true, Save::Output,
                  [](const Tensor& g, const Tensor& y) { return mul(g, add(y, 1.0)); });
}
Tensor log2(const Tensor& x) {
  return unary_ad(ops::log2, x, true, Save::Input, [](const Tensor& g, const Tensor& x) {
    return div(g, mul(x, 0.6931471805599453));  // ln 2
  });
}
Tensor log10(const Tensor& x) {
  return unary_ad(ops::log10, x, true, Save::Input, [](const Tensor& g, const Tensor& x) {
    return div(g, mul(x, 2.302585092994046));  // ln 10
  });
}
Tensor exp2(const Tensor& x) {
  return unary_ad(ops::exp2, x, true, Save::Output, [](const Tensor& g, const Tensor& y) {
    return mul(g, mul(y, 0.6931471805599453));
  });
}
Tensor sqrt(const Tensor& x) {
  return unary_ad(ops::sqrt, x, true, Save::Output,
                  [](const Tensor& g, const Tensor& y) { return div(g, mul(y, 2.0)); });
}
Tensor rsqrt(const Tensor& x) {
  // d x^(-1/2) = -1/2 x^(-3/2) = -1/2 y^3
  return unary_ad(ops::rsqrt, x, true, Save::Output,
                  [](const Tensor& g, const Tensor& y) { return mul(g, mul(pow(y, 3.0), -0.5)); });
}
Tensor sin(const Tensor& x) {
  return unary_ad(ops::sin, x, true, Save::Input,
                  [](const Tensor& g, const Tensor& x) { return mul(g, cos(x)); });
}
Tensor cos(const Tensor& x) {
  return unary_ad(ops::cos, x, true, Save::Input,
                  [](const Tensor& g, const Tensor& x) { return neg(mul(g, sin(x))); });
}
Tensor tan(const Tensor& x) {
  // d tan = 1 + tan^2
  return unary_ad(ops::tan, x, true, Save::Output,
                  [](const Tensor& g, const Tensor& y) { return mul(g, add(mul(y, y), 1.0)); });
}
Tensor asin(const Tensor& x) {
  return unary_ad(ops::asin, x, true, Save::Input, [](const Tensor& g, const Tensor& x) {
    return div(g, sqrt(rsub_one(mul(x, x))));
  });
}
Tensor acos(const Tensor& x) {
  return unary_ad(ops::acos, x, true, Save::Input, [](const Tensor& g, const Tensor& x) {
    return neg(div(g, sqrt(rsub_one(mul(x, x)))));
  });
}
Tensor atan(const Tensor& x) {
  return unary_ad(ops::atan, x, true, Save::Input,
                  [](const Tensor& g, const Tensor& x) { return div(g, add(mul(x, x), 1.0)); });
}
Tensor sinh(const Tensor& x) {
  return unary_ad(ops::sinh, x, true, Save::Input,
                  [](const Tensor& g, const Tensor& x) { return mul(g, cosh(x)); });
}
Tensor cosh(const Tensor& x) {
  return unary_ad(ops::cosh, x, true, Save::Input,
                  [](const Tensor& g, const Tensor& x) { return mul(g, sinh(x)); });
}
Tensor asinh(const Tensor& x) {
  return unary_ad(ops::asinh, x, true, Save::Input, [](const Tensor& g, const Tensor& x) {
    return div(g, sqrt(add(mul(x, x), 1.0)));
  });
}
Tensor acosh(const Tensor& x) {
  return unary_ad(ops::acosh, x, true, Save::Input, [](const Tensor& g, const Tensor& x) {
    return div(g, sqrt(sub(mul(x, x), 1.0)));
  });
}
Tensor atanh(const Tensor& x) {
  return unary_ad(ops::atanh, x, true, Save::Input,
                  [](const Tensor& g, const Tensor& x) { return div(g, rsub_one(mul(x, x))); });
}
Tensor tanh(const Tensor& x) {
  return unary_ad(ops::tanh, x, true, Save::Output,
                  [](const Tensor& g, const Tensor& y) { return mul(g, rsub_one(mul(y, y))); });
}
Tensor sigmoid(const Tensor& x) {
  return unary_ad(ops::sigmoid, x, true, Save::Output,
                  [](const Tensor& g, const Tensor& y) { return mul(g, mul(y, rsub_one(y))); });
}
Tensor silu(const Tensor& x) {
  // d x s(x) = s (1 + x (1 - s))
  return unary_ad(ops::silu, x, true, Save::Input, [](const Tensor& g, const Tensor& x) {
    const Tensor s = sigmoid(x);
    return mul(g, mul(s, add(mul(x, rsub_one(s)), 1.0)));
  });
}
Tensor erf(const Tensor& x) {
  // d erf = 2/sqrt(pi) exp(-x^2)
  return unary_ad(ops::erf, x, true, Save::Input, [](const Tensor& g, const Tensor& x) {
    return mul(g, mul(exp(neg(mul(x, x))), 1.1283791670955126));
  });
}
Tensor erfinv(const Tensor& x) {
  // d erfinv = sqrt(pi)/2 exp(y^2), y = erfinv(x)
  return unary_ad(ops::erfinv, x, true, Save::Output, [](const Tensor& g, const Tensor& y) {
    return mul(g, mul(exp(mul(y, y)), 0.886226925452758));
  });
}
Tensor erfc(const Tensor& x) {
  // d erfc = -2/sqrt(pi) exp(-x^2)
  return unary_ad(ops::erfc, x, true, Save::Input, [](const Tensor& g, const Tensor& x) {
    return mul(g, mul(exp(neg(mul(x, x))), -1.1283791670955126));
  });
}
Tensor lgamma(const Tensor& x) {
  return unary_ad(ops::lgamma, x, true, Save::Input,
                  [](const Tensor& g, const Tensor& x) { return mul(g, digamma(x)); });
}
Tensor digamma(const Tensor& x) {
  return polygamma(0, x);
}
// d polygamma(n, x) = polygamma(n + 1, x): every order differentiates (Note [Polygamma]).
Tensor polygamma(int64_t n, const Tensor& x) {
  EMBER_CHECK(n >= 0, "[polygamma] n must be non-negative: got {}", n);
  return unary_ad(
      ops::polygamma, x, true, Save::Input,
      [n](const Tensor& g, const Tensor& x) { return mul(g, polygamma(n + 1, x)); },
      PackedAttrs(attrs::polygamma{.n = n}));
}
// Note [Fused GELU backward]
// GELU's gradient as public ops is an erf, an exp and six multiplies and adds over the input:
// eight passes and as many temporaries, the largest elementwise cost of a Transformer's
// feed-forward block (its input is four times the model's width). Backends may provide
// "gelu_backward" ({g, x} -> g * gelu'(x), either form), used as relu_backward is (Note [Fused
// ReLU backward]): when no graph is needed and the backend has the kernel.
Tensor gelu(const Tensor& x, std::string_view approximate) {
  EMBER_CHECK(approximate == "none" || approximate == "tanh",
              "[gelu] approximate must be 'none' or 'tanh': got '{}'", approximate);
  const bool tanh_form = approximate == "tanh";
  return unary_ad(
      ops::gelu, x, true, Save::Input,
      [tanh_form](const Tensor& g, const Tensor& x) {
        Tensor fused = fused_grad(attrs::gelu_backward{.tanh_form = tanh_form ? 1 : 0}, g, x);
        if (fused.defined()) return fused;
        if (tanh_form) {
          // y = x/2 (1 + tanh(u)), u = k (x + c x^3)
          const double k = 0.7978845608028654, c = 0.044715;
          const Tensor t = tanh(mul(add(x, mul(pow(x, 3.0), c)), k));
          const Tensor du = mul(add(mul(mul(x, x), 3.0 * c), 1.0), k);
          const Tensor d =
              add(mul(add(t, 1.0), 0.5), mul(mul(mul(x, 0.5), rsub_one(mul(t, t))), du));
          return mul(g, d);
        }
        // y = x Phi(x): dy = Phi(x) + x phi(x)
        const Tensor cdf = mul(add(erf(mul(x, 0.7071067811865476)), 1.0), 0.5);
        const Tensor pdf = mul(exp(mul(mul(x, x), -0.5)), 0.3989422804014327);
        return mul(g, add(cdf, mul(x, pdf)));
      },
      PackedAttrs(attrs::gelu{.tanh_form = tanh_form ? 1 : 0}));
}
// softplus(x) = log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as in
// PyTorch, for stability); d/dx = sigmoid(beta x), 1 above the threshold.
Tensor softplus(const Tensor& x, double beta, double threshold) {
  EMBER_CHECK(beta != 0, "[softplus] beta must be nonzero: got {}", beta);
  return unary_ad(
      ops::softplus, x, true, Save::Input,
      [beta, threshold](const Tensor& g, const Tensor& x) {
        const Tensor bx = mul(x, beta);
        return where(gt(bx, threshold), g, mul(g, sigmoid(bx)));
      },
      PackedAttrs(attrs::softplus{.beta = beta, .threshold = threshold}));
}
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return unary_ad(
      ops::leaky_relu, x, true, Save::Input,
      [negative_slope](const Tensor& g, const Tensor& x) {
        return where(gt(x, 0), g, mul(g, negative_slope));
      },
      PackedAttrs(attrs::leaky_relu{.negative_slope = negative_slope}));
}
// elu, selu and celu are one kernel: scale * x where x > 0, else
// scale * alpha * (exp(input_scale * x) - 1), whose derivative there is
// scale * alpha * input_scale * exp(input_scale * x) (PyTorch's elu with its three parameters).
namespace {
Tensor elu_family(const Tensor& x, double alpha, double scale, double input_scale) {
  return unary_ad(
      ops::elu, x, true, Save::Input,
      [alpha, scale, input_scale](const Tensor& g, const Tensor& x) {
        const Tensor neg_side = mul(exp(mul(x, input_scale)), alpha * scale * input_scale);
        return mul(g, where(gt(x, 0), full_like(x, scale), neg_side));
      },
      PackedAttrs(attrs::elu{.alpha = alpha, .scale = scale, .input_scale = input_scale}));
}
}  // namespace
Tensor elu(const Tensor& x, double alpha) {
  return elu_family(x, alpha, 1, 1);
}
Tensor selu(const Tensor& x) {
  return elu_family(x, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1);
}
Tensor celu(const Tensor& x, double alpha) {
  EMBER_CHECK(alpha != 0, "[celu] alpha must be nonzero: got {}", alpha);
  return elu_family(x, alpha, 1, 1 / alpha);
}
// The shrinks, threshold, prelu and glu are composites: where() or clamp() carries their
// piecewise gradients (softshrink is x - clamp(x, -lambd, lambd): 1 outside, 0 inside).
Tensor threshold(const Tensor& x, Scalar threshold, Scalar value) {
  EMBER_CHECK_TYPE(x.defined(), "[threshold] undefined tensor argument");
  return where(gt(x, threshold), x, value);
}

Tensor hardshrink(const Tensor& x, double lambd) {
  EMBER_CHECK_TYPE(x.defined(), "[hardshrink] undefined tensor argument");
  return where(gt(abs(x), Scalar(lambd)), x, Scalar(0));
}

Tensor softshrink(const Tensor& x, double lambd) {
  EMBER_CHECK_TYPE(x.defined(), "[softshrink] undefined tensor argument");
  EMBER_CHECK(lambd >= 0, "[softshrink] lambd must be at least 0, got {}", lambd);
  return sub(x, clamp(x, Scalar(-lambd), Scalar(lambd)));
}

Tensor tanhshrink(const Tensor& x) {
  EMBER_CHECK_TYPE(x.defined(), "[tanhshrink] undefined tensor argument");
  return sub(x, tanh(x));
}

Tensor softsign(const Tensor& x) {
  EMBER_CHECK_TYPE(x.defined(), "[softsign] undefined tensor argument");
  return div(x, add(abs(x), Scalar(1)));
}

Tensor prelu(const Tensor& x, const Tensor& weight) {
  EMBER_CHECK_TYPE(x.defined() && weight.defined(), "[prelu] undefined tensor argument");
  EMBER_CHECK(weight.dim() <= 1, "[prelu] weight must be a scalar or 1-d, got shape {}",
              shape_str(weight.sizes()));
  const int64_t channels = x.dim() >= 2 ? x.size(1) : 1;
  EMBER_CHECK(weight.numel() == 1 || weight.numel() == channels,
              "[prelu] weight has {} values but the input has {} channels (dim 1 of shape {}); "
              "give one value or one per channel",
              weight.numel(), channels, shape_str(x.sizes()));
  Tensor w = weight.reshape({weight.numel()});
  if (weight.numel() > 1) {
    Shape s(static_cast<size_t>(x.dim() - 1), 1);
    s[0] = channels;
    w = w.reshape(s);
  } else {
    w = w.reshape(Shape{});
  }
  return where(gt(x, Scalar(0)), x, mul(w, x));
}

Tensor glu(const Tensor& x, int64_t dim) {
  EMBER_CHECK_TYPE(x.defined(), "[glu] undefined tensor argument");
  EMBER_CHECK(x.dim() > 0, "[glu] does not support 0-d tensors: halving needs a dim");
  const int64_t d = wrap_dim(dim, x.dim(), "glu");
  const int64_t n = x.size(d);
  EMBER_CHECK(n % 2 == 0, "[glu] halving dim {} needs an even size, got {} (shape {})", d, n,
              shape_str(x.sizes()));
  return mul(x.narrow(d, 0, n / 2), sigmoid(x.narrow(d, n / 2, n / 2)));
}

// log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)); d/dx = sigmoid(-x).
Tensor logsigmoid(const Tensor& x) {
  return unary_ad(ops::logsigmoid, x, true, Save::Input,
                  [](const Tensor& g, const Tensor& x) { return mul(g, sigmoid(neg(x))); });
}
// mish(x) = x tanh(sp), sp = softplus(x); d/dx = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2).
Tensor mish(const Tensor& x) {
  return unary_ad(ops::mish, x, true, Save::Input, [](const Tensor& g, const Tensor& x) {
    const Tensor t = tanh(softplus(x));
    return mul(g, add(t, mul(mul(x, sigmoid(x)), rsub_one(mul(t, t)))));
  });
}
Tensor floor(const Tensor& x) {
  if (!is_floating(x.dtype())) return x.clone();
  return unary_ad(ops::floor, x, false, Save::Input,
                  [](const Tensor& g, const Tensor&) { return zeros_like(g); });
}
Tensor ceil(const Tensor& x) {
  if (!is_floating(x.dtype())) return x.clone();
  return unary_ad(ops::ceil, x, false, Save::Input,
                  [](const Tensor& g, const Tensor&) { return zeros_like(g); });
}
Tensor round(const Tensor& x) {
  if (!is_floating(x.dtype())) return x.clone();
  return unary_ad(ops::round, x, false, Save::Input,
                  [](const Tensor& g, const Tensor&) { return zeros_like(g); });
}
Tensor square(const Tensor& x) {
  return mul(x, x);
}

namespace {
struct ClampArgs {
  attrs::clamp attrs;
  DType dtype;
};
ClampArgs clamp_args(DType x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  EMBER_CHECK(lo || hi, "[clamp] at least one of min and max must be given");
  DType d = x;
  if (lo) d = detail::promote_with_scalar(d, *lo);
  if (hi) d = detail::promote_with_scalar(d, *hi);
  EMBER_CHECK_TYPE(x != DType::Bool, "[clamp] not defined for bool tensors");
  return {{.has_lo = lo ? 1 : 0,
           .has_hi = hi ? 1 : 0,
           .int_lo = lo ? lo->to_int() : 0,
           .int_hi = hi ? hi->to_int() : 0,
           .lo = lo ? lo->to_double() : 0.0,
           .hi = hi ? hi->to_double() : 0.0},
          d};
}
}  // namespace

Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  const ClampArgs a = clamp_args(x.dtype(), lo, hi);
  // The gradient passes where lo <= x <= hi, as in PyTorch.
  return differentiable(
      "ClampBackward", "clamp", {&x},
      [&] {
        return unary(core_op(ops::clamp), "clamp", x.to(a.dtype), false, PackedAttrs(a.attrs));
      },
      [&] {
        return [sx = SavedTensor(x), lo, hi](const Grads& g, const LambdaNode& self) {
          const Tensor x = self.unpack(sx);
          Tensor keep = ones_like(x).to(DType::Bool);
          if (lo) keep = logical_and(keep, ge(x, *lo));
          if (hi) keep = logical_and(keep, le(x, *hi));
          return Grads{where(keep, g[0], zeros_like(g[0]))};
        };
      });
}
Tensor& clamp_(Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  const ClampArgs a = clamp_args(x.dtype(), lo, hi);
  EMBER_CHECK_TYPE(a.dtype == x.dtype(),
                   "[clamp_] result type {} can't be cast to the desired output type {}", a.dtype,
                   x.dtype());
  if (autograd::any_requires_grad({&x})) {
    return autograd::inplace(x, "clamp_", [&](const Tensor& old) { return clamp(old, lo, hi); });
  }
  return unary_(core_op(ops::clamp), "clamp_", x, false, PackedAttrs(a.attrs));
}

// hardtanh runs clamp's kernel; its gradient passes only strictly inside (min_val, max_val),
// where clamp's passes at the bounds too (both as in PyTorch).
Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  EMBER_CHECK(min_val <= max_val, "[hardtanh] min_val must not exceed max_val: got {} > {}",
              min_val, max_val);
  const ClampArgs a = clamp_args(x.dtype(), min_val, max_val);
  return differentiable(
      "HardtanhBackward", "hardtanh", {&x},
      [&] {
        return unary(core_op(ops::clamp), "hardtanh", x.to(a.dtype), false, PackedAttrs(a.attrs));
      },
      [&] {
        return [sx = SavedTensor(x), min_val, max_val](const Grads& g, const LambdaNode& self) {
          const Tensor x = self.unpack(sx);
          return Grads{where(logical_and(gt(x, min_val), lt(x, max_val)), g[0], 0.0)};
        };
      });
}
Tensor relu6(const Tensor& x) {
  return hardtanh(x, 0, 6);
}
// hardsigmoid and hardswish are one pass each (MobileNetV3's activations); their gradients are
// PyTorch's: hardsigmoid' is 1/6 strictly inside (-3, 3), hardswish' is (2x + 3) / 6 on
// (-3, 3), 0 at and below -3 and 1 from 3 on.
Tensor hardsigmoid(const Tensor& x) {
  return unary_ad(ops::hardsigmoid, x, true, Save::Input, [](const Tensor& g, const Tensor& x) {
    return where(logical_and(gt(x, -3.0), lt(x, 3.0)), mul(g, 1.0 / 6), zeros_like(g));
  });
}
Tensor hardswish(const Tensor& x) {
  return unary_ad(ops::hardswish, x, true, Save::Input, [](const Tensor& g, const Tensor& x) {
    const Tensor inside = mul(g, add(mul(x, 1.0 / 3), 0.5));
    return where(le(x, -3.0), zeros_like(g), where(lt(x, 3.0), inside, g));
  });
}

// In-place forms: below autograd they run the kernel into `a`; while recording they are the
// out-of-place op on a clone written back (Note [In-place ops and CopySlices]).
#define EMBER_BINARY_INPLACE(name, kind)                                                        \
  Tensor& name##_(Tensor& a, const Tensor& b) {                                                 \
    if (autograd::any_requires_grad({&a, &b})) {                                                \
      binary_check_inplace(a, b, #name "_", kind);                                              \
      return autograd::inplace(a, #name "_", [&](const Tensor& old) { return name(old, b); });  \
    }                                                                                           \
    return binary_(core_op(ops::name), #name "_", a, b, kind);                                  \
  }                                                                                             \
  Tensor& name##_(Tensor& a, Scalar b) {                                                        \
    /* Note [Scalars that do not fit]: a number an integer tensor cannot hold is refused. */    \
    if (is_integral(a.dtype()) && !b.is_floating()) check_scalar_fits(b, a.dtype(), #name "_"); \
    return name##_(a, detail::scalar_tensor(b, a.dtype(), a.device()));                         \
  }
EMBER_BINARY_INPLACE(add, Kind::Arith)
EMBER_BINARY_INPLACE(sub, Kind::Arith)
EMBER_BINARY_INPLACE(mul, Kind::Arith)
EMBER_BINARY_INPLACE(div, Kind::TrueDiv)
#undef EMBER_BINARY_INPLACE

Tensor& add_(Tensor& a, const Tensor& b, Scalar alpha) {
  return add_(a, scaled(a, b, alpha, "add_"));
}
Tensor& add_(Tensor& a, Scalar b, Scalar alpha) {
  if (is_integral(a.dtype()) && !b.is_floating()) check_scalar_fits(b, a.dtype(), "add_");
  return add_(a, detail::scalar_tensor(b, a.dtype(), a.device()), alpha);
}
Tensor& sub_(Tensor& a, const Tensor& b, Scalar alpha) {
  return sub_(a, scaled(a, b, alpha, "sub_"));
}
Tensor& sub_(Tensor& a, Scalar b, Scalar alpha) {
  if (is_integral(a.dtype()) && !b.is_floating()) check_scalar_fits(b, a.dtype(), "sub_");
  return sub_(a, detail::scalar_tensor(b, a.dtype(), a.device()), alpha);
}

#define EMBER_UNARY_INPLACE(name, needs_float)                                             \
  Tensor& name##_(Tensor& x) {                                                             \
    if (autograd::any_requires_grad({&x})) {                                               \
      return autograd::inplace(x, #name "_", [](const Tensor& old) { return name(old); }); \
    }                                                                                      \
    return unary_(core_op(ops::name), #name "_", x, needs_float);                          \
  }
EMBER_UNARY_INPLACE(abs, false)
EMBER_UNARY_INPLACE(exp, true)
EMBER_UNARY_INPLACE(log, true)
EMBER_UNARY_INPLACE(sqrt, true)
EMBER_UNARY_INPLACE(tanh, true)
EMBER_UNARY_INPLACE(sigmoid, true)
EMBER_UNARY_INPLACE(relu, false)
#undef EMBER_UNARY_INPLACE

Tensor& neg_(Tensor& x) {
  EMBER_CHECK_TYPE(x.dtype() != DType::Bool,
                   "[neg_] negation of a bool tensor is not supported (use logical_not)");
  if (autograd::any_requires_grad({&x})) {
    return autograd::inplace(x, "neg_", [](const Tensor& old) { return neg(old); });
  }
  return unary_(core_op(ops::neg), "neg_", x, false);
}

Tensor& masked_fill_(Tensor& x, const Tensor& mask, Scalar value) {
  EMBER_CHECK_TYPE(mask.dtype() == DType::Bool, "[masked_fill_] mask must be bool: got {}",
                   mask.dtype());
  const Shape shape = broadcast_shapes(x.sizes(), mask.sizes(), "masked_fill_");
  EMBER_CHECK(shape == x.sizes(), "[masked_fill_] mask of shape {} does not broadcast to {}",
              shape_str(mask.sizes()), shape_str(x.sizes()));
  check_scalar_fits(value, x.dtype(), "masked_fill_");
  const Tensor v = detail::scalar_tensor(value, x.dtype(), x.device()).to(x.dtype());
  if (autograd::any_requires_grad({&x})) {
    return autograd::inplace(x, "masked_fill_",
                             [&](const Tensor& old) { return where(mask, v, old); });
  }
  const Tensor m = detail::expand_for_kernel(mask, x.sizes()),
               vv = detail::expand_for_kernel(v, x.sizes());
  autograd::check_writable(x, "masked_fill_");
  if (x.numel() > 0) run_kernel(core_op(ops::where), x.dtype(), {&m, &vv, &x}, {&x});
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

// ---- Composites of the ops above ------------------------------------------------------------
// isnan .. clamp with tensor bounds are made of public ops (every backend, autograd through
// them); PyTorch's formulas are followed where the order of operations shows in the last bit.

Tensor isnan(const Tensor& x) {
  EMBER_CHECK_TYPE(x.defined(), "[isnan] undefined tensor argument");
  if (!is_floating(x.dtype())) return zeros(x.sizes(), {DType::Bool, x.device()});
  return ne(x, x);
}
Tensor isinf(const Tensor& x) {
  EMBER_CHECK_TYPE(x.defined(), "[isinf] undefined tensor argument");
  if (!is_floating(x.dtype())) return zeros(x.sizes(), {DType::Bool, x.device()});
  return eq(abs(x), std::numeric_limits<double>::infinity());
}
Tensor isfinite(const Tensor& x) {
  EMBER_CHECK_TYPE(x.defined(), "[isfinite] undefined tensor argument");
  if (!is_floating(x.dtype())) return ones(x.sizes(), {DType::Bool, x.device()});
  // x - x is 0 for finite x and NaN for NaN and +-inf.
  return eq(sub(x, x), 0);
}

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  EMBER_CHECK_TYPE(a.defined() && b.defined(), "[isclose] undefined tensor argument");
  EMBER_CHECK_TYPE(a.dtype() == b.dtype(),
                   "[isclose] input and other must have the same dtype: got {} and {}", a.dtype(),
                   b.dtype());
  EMBER_CHECK(rtol >= 0, "[isclose] rtol must be greater than or equal to zero: got {}", rtol);
  EMBER_CHECK(atol >= 0, "[isclose] atol must be greater than or equal to zero: got {}", atol);
  // PyTorch's order: equality first (equal infinities), then NaN, then the finite error.
  Tensor close = eq(a, b);
  if (equal_nan && is_floating(a.dtype()))
    close = logical_or(close, logical_and(isnan(a), isnan(b)));
  if (rtol == 0 && atol == 0) return close;
  const Tensor ca = a.dtype() == DType::Bool ? a.to(default_dtype()) : a;
  const Tensor cb = b.dtype() == DType::Bool ? b.to(default_dtype()) : b;
  const Tensor allowed = add(abs(mul(cb, rtol)), atol);
  const Tensor actual = abs(sub(ca, cb));
  return logical_or(close, logical_and(isfinite(actual), le(actual, allowed)));
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  return all(isclose(a, b, rtol, atol, equal_nan)).item() != 0;
}

namespace {
// The largest finite value of a floating dtype.
double largest_finite(DType d) {
  switch (d) {
    case DType::Float16:
      return 65504.0;
    case DType::BFloat16:
      return 0x1.fep127;
    case DType::Float32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}
// `v` as a 0-d tensor of x's dtype on x's device.
Tensor constant_like(const Tensor& x, double v) {
  return detail::scalar_tensor(v, x.dtype(), x.device()).to(x.dtype());
}
}  // namespace

Tensor nan_to_num(const Tensor& x, double nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  EMBER_CHECK_TYPE(x.defined(), "[nan_to_num] undefined tensor argument");
  if (!is_floating(x.dtype())) return x.clone();
  const double inf = std::numeric_limits<double>::infinity();
  const double hi = posinf.value_or(largest_finite(x.dtype()));
  const double lo = neginf.value_or(-largest_finite(x.dtype()));
  Tensor r = where(isnan(x), constant_like(x, nan), x);
  r = where(eq(x, inf), constant_like(x, hi), r);
  return where(eq(x, -inf), constant_like(x, lo), r);
}
Tensor& nan_to_num_(Tensor& x, double nan, std::optional<double> posinf,
                    std::optional<double> neginf) {
  return apply_inplace(x, "nan_to_num_",
                       [&](const Tensor& v) { return nan_to_num(v, nan, posinf, neginf); });
}

namespace {
void lerp_check(const Tensor& start, const Tensor& end, const Tensor* weight) {
  EMBER_CHECK_TYPE(start.defined() && end.defined() && (!weight || weight->defined()),
                   "[lerp] undefined tensor argument");
  EMBER_CHECK_TYPE(is_floating(start.dtype()),
                   "[lerp] expected a floating point input: got {} (convert with .to(float32))",
                   start.dtype());
  EMBER_CHECK_TYPE(end.dtype() == start.dtype(),
                   "[lerp] expected dtype {} for end but got dtype {}", start.dtype(), end.dtype());
  EMBER_CHECK_TYPE(!weight || weight->dtype() == start.dtype(),
                   "[lerp] expected dtype {} for weight but got dtype {}", start.dtype(),
                   weight->dtype());
}
}  // namespace

// PyTorch's lerp: start + w (end - start) for |w| < 0.5, else end - (end - start)(1 - w), so that
// w = 1 gives end exactly; both branches have the same derivatives.
Tensor lerp(const Tensor& start, const Tensor& end, Scalar weight) {
  lerp_check(start, end, nullptr);
  const double w = weight.to_double();
  const Tensor diff = sub(end, start);
  if (std::abs(w) < 0.5) return add(start, mul(diff, weight));
  return sub(end, mul(diff, 1.0 - w));
}
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  lerp_check(start, end, &weight);
  const Tensor diff = sub(end, start);
  const Tensor small = lt(abs(weight), 0.5);
  return where(small, add(start, mul(weight, diff)), sub(end, mul(diff, rsub_one(weight))));
}
Tensor& lerp_(Tensor& x, const Tensor& end, Scalar weight) {
  return apply_inplace(x, "lerp_", [&](const Tensor& v) { return lerp(v, end, weight); });
}
Tensor& lerp_(Tensor& x, const Tensor& end, const Tensor& weight) {
  return apply_inplace(x, "lerp_", [&](const Tensor& v) { return lerp(v, end, weight); });
}

namespace {
// value * t1, with PyTorch's rule that an integer or bool product takes no floating value.
Tensor scaled_by_value(const char* name, const Tensor& x, const Tensor& t1, const Tensor& t2,
                       Scalar value) {
  EMBER_CHECK_TYPE(x.defined() && t1.defined() && t2.defined(), "[{}] undefined tensor argument",
                   name);
  const DType d = promote_types(promote_types(x.dtype(), t1.dtype()), t2.dtype());
  EMBER_CHECK_TYPE(is_floating(d) || !value.is_floating(),
                   "[{}] for integral input tensors, argument value must not be a floating point "
                   "number: got {}",
                   name, value.to_double());
  if (value.kind() != Scalar::Kind::Float && value.to_int() == 1) return t1;
  return mul(t1, value);
}
}  // namespace

Tensor addcmul(const Tensor& x, const Tensor& t1, const Tensor& t2, Scalar value) {
  return add(x, mul(scaled_by_value("addcmul", x, t1, t2, value), t2));
}
Tensor addcdiv(const Tensor& x, const Tensor& t1, const Tensor& t2, Scalar value) {
  EMBER_CHECK_TYPE(x.defined() && t1.defined() && t2.defined(),
                   "[addcdiv] undefined tensor argument");
  EMBER_CHECK_TYPE(is_floating(t1.dtype()) || is_floating(t2.dtype()),
                   "[addcdiv] integer division of tensor1 ({}) by tensor2 ({}) is not supported "
                   "(convert one of them to a floating dtype)",
                   t1.dtype(), t2.dtype());
  return add(x, div(scaled_by_value("addcdiv", x, t1, t2, value), t2));
}
Tensor& addcmul_(Tensor& x, const Tensor& t1, const Tensor& t2, Scalar value) {
  return apply_inplace(x, "addcmul_", [&](const Tensor& v) { return addcmul(v, t1, t2, value); });
}
Tensor& addcdiv_(Tensor& x, const Tensor& t1, const Tensor& t2, Scalar value) {
  return apply_inplace(x, "addcdiv_", [&](const Tensor& v) { return addcdiv(v, t1, t2, value); });
}

// Tensor bounds through where(): x where lo <= x <= hi, else the bound crossed (hi wins where
// lo > hi, as min(max(x, lo), hi) does); a NaN bound gives NaN, as maximum/minimum do.
Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  EMBER_CHECK_TYPE(x.defined(), "[clamp] undefined tensor argument");
  EMBER_CHECK(lo.defined() || hi.defined(), "[clamp] at least one of min and max must be given");
  EMBER_CHECK_TYPE(x.dtype() != DType::Bool, "[clamp] not defined for bool tensors");
  Tensor r = x;
  if (lo.defined()) r = where(logical_or(lt(r, lo), isnan(lo)), lo, r);
  if (hi.defined()) r = where(logical_or(gt(r, hi), isnan(hi)), hi, r);
  return r;
}
Tensor& clamp_(Tensor& x, const Tensor& lo, const Tensor& hi) {
  return apply_inplace(x, "clamp_", [&](const Tensor& v) { return clamp(v, lo, hi); });
}

Tensor round(const Tensor& x, int64_t decimals) {
  if (decimals == 0) return round(x);
  // As PyTorch: scale by an exact power of ten (10^|decimals|), never by an inexact 10^-k.
  const double f = std::pow(10.0, static_cast<double>(decimals > 0 ? decimals : -decimals));
  return decimals > 0 ? div(round(mul(x, f)), f) : mul(round(div(x, f)), f);
}

Tensor trunc(const Tensor& x) {
  return mul(sign(x), floor(abs(x))).to(x.dtype());
}

Tensor reciprocal(const Tensor& x) {
  return Scalar(1.0) / x;
}

Tensor logical_xor(const Tensor& a, const Tensor& b) {
  return ne(a.to(DType::Bool), b.to(DType::Bool));
}

bool equal(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && all(eq(a, b)).item() != 0;
}

}  // namespace ember
