// Elementwise ops: broadcasting binary arithmetic and comparison, unary math, in-place forms.
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <tuple>

#include "ember/tensor/tensor.h"

namespace ember {

/** a + b, broadcast and promoted. */
EMBER_API Tensor add(const Tensor& a, const Tensor& b);
EMBER_API Tensor add(const Tensor& a, Scalar b);
/** a + alpha * b, scaled in the result dtype (Note [alpha is the core's]). */
EMBER_API Tensor add(const Tensor& a, const Tensor& b, Scalar alpha);
EMBER_API Tensor add(const Tensor& a, Scalar b, Scalar alpha);
/** a - b. */
EMBER_API Tensor sub(const Tensor& a, const Tensor& b);
EMBER_API Tensor sub(const Tensor& a, Scalar b);
/** a - alpha * b. */
EMBER_API Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha);
EMBER_API Tensor sub(const Tensor& a, Scalar b, Scalar alpha);
/** a * b. */
EMBER_API Tensor mul(const Tensor& a, const Tensor& b);
EMBER_API Tensor mul(const Tensor& a, Scalar b);
/** a / b, true division (integers promote to float32). */
EMBER_API Tensor div(const Tensor& a, const Tensor& b);
EMBER_API Tensor div(const Tensor& a, Scalar b);
/** a / b rounded: "trunc" toward zero, "floor" toward -inf; integers divide exactly and keep
 *  their dtype, a 0 divisor is a ZeroDivisionError; no rounding mode is true division. */
EMBER_API Tensor div(const Tensor& a, const Tensor& b,
                     std::optional<std::string_view> rounding_mode);
EMBER_API Tensor div(const Tensor& a, Scalar b, std::optional<std::string_view> rounding_mode);
/** div(a, b, "floor"): Python's a // b. */
EMBER_API Tensor floor_divide(const Tensor& a, const Tensor& b);
EMBER_API Tensor floor_divide(const Tensor& a, Scalar b);
/** a ** b; an integer a with a negative integer number b is an error (PyTorch's rule). */
EMBER_API Tensor pow(const Tensor& a, const Tensor& b);
EMBER_API Tensor pow(const Tensor& a, Scalar b);
/** Elementwise larger (NaN propagates). */
EMBER_API Tensor maximum(const Tensor& a, const Tensor& b);
/** Elementwise smaller (NaN propagates). */
EMBER_API Tensor minimum(const Tensor& a, const Tensor& b);
/** a - floor(a / b) * b: the remainder with the divisor's sign (Python's %, PyTorch's). */
EMBER_API Tensor remainder(const Tensor& a, const Tensor& b);
EMBER_API Tensor remainder(const Tensor& a, Scalar b);
/** a - trunc(a / b) * b: the remainder with the dividend's sign (C's fmod, PyTorch's). */
EMBER_API Tensor fmod(const Tensor& a, const Tensor& b);
EMBER_API Tensor fmod(const Tensor& a, Scalar b);
/** The angle of the point (b, a) in (-pi, pi]: atan(a / b) in the right quadrant. */
EMBER_API Tensor atan2(const Tensor& a, const Tensor& b);
/** sqrt(a^2 + b^2), without overflow or underflow in between. */
EMBER_API Tensor hypot(const Tensor& a, const Tensor& b);
/** log(exp(a) + exp(b)), computed without overflow. */
EMBER_API Tensor logaddexp(const Tensor& a, const Tensor& b);

/** a == b as bool. */
EMBER_API Tensor eq(const Tensor& a, const Tensor& b);
EMBER_API Tensor eq(const Tensor& a, Scalar b);
/** a != b as bool. */
EMBER_API Tensor ne(const Tensor& a, const Tensor& b);
EMBER_API Tensor ne(const Tensor& a, Scalar b);
/** a < b as bool. */
EMBER_API Tensor lt(const Tensor& a, const Tensor& b);
EMBER_API Tensor lt(const Tensor& a, Scalar b);
/** a <= b as bool. */
EMBER_API Tensor le(const Tensor& a, const Tensor& b);
EMBER_API Tensor le(const Tensor& a, Scalar b);
/** a > b as bool. */
EMBER_API Tensor gt(const Tensor& a, const Tensor& b);
EMBER_API Tensor gt(const Tensor& a, Scalar b);
/** a >= b as bool. */
EMBER_API Tensor ge(const Tensor& a, const Tensor& b);
EMBER_API Tensor ge(const Tensor& a, Scalar b);
/** Truthiness of a and b. */
EMBER_API Tensor logical_and(const Tensor& a, const Tensor& b);
/** The truthiness of a xor b, as bool, broadcast. */
EMBER_API Tensor logical_xor(const Tensor& a, const Tensor& b);
/** The dtype an elementwise op of a and b computes in (PyTorch's result_type: a 0-d tensor or a
 *  number raises the result only to a higher category: bool, integer, floating). */
EMBER_API DType result_type(const Tensor& a, const Tensor& b);
EMBER_API DType result_type(const Tensor& a, Scalar b);
EMBER_API DType result_type(Scalar a, const Tensor& b);
EMBER_API DType result_type(Scalar a, Scalar b);
/** The truth of a one-element tensor (Python's bool(x)); any other size is an error. */
EMBER_API bool is_nonzero(const Tensor& x);
/** True if a and b have the same shape and equal elements (torch.equal). */
EMBER_API bool equal(const Tensor& a, const Tensor& b);
/** Truthiness of a or b. */
EMBER_API Tensor logical_or(const Tensor& a, const Tensor& b);
/** Not truthiness of a. */
EMBER_API Tensor logical_not(const Tensor& a);

// Integer ops (Note [Integer binary ops] in plugin_sdk_binary_ops.hpp): integer or bool operands
// promoted to their common dtype; a floating operand is a TypeError. No gradient.
/** a & b: bitwise for integers, logical for bool (torch.bitwise_and). */
EMBER_API Tensor bitwise_and(const Tensor& a, const Tensor& b);
EMBER_API Tensor bitwise_and(const Tensor& a, Scalar b);
/** a | b: bitwise for integers, logical for bool. */
EMBER_API Tensor bitwise_or(const Tensor& a, const Tensor& b);
EMBER_API Tensor bitwise_or(const Tensor& a, Scalar b);
/** a ^ b: bitwise for integers, logical for bool. */
EMBER_API Tensor bitwise_xor(const Tensor& a, const Tensor& b);
EMBER_API Tensor bitwise_xor(const Tensor& a, Scalar b);
/** ~a: every bit flipped for integers, not for bool. */
EMBER_API Tensor bitwise_not(const Tensor& a);
/** a << b, wrapping; 0 where b is negative or at least the width (integers only). */
EMBER_API Tensor bitwise_left_shift(const Tensor& a, const Tensor& b);
EMBER_API Tensor bitwise_left_shift(const Tensor& a, Scalar b);
/** a >> b, arithmetic for signed a; the sign alone where b is negative or at least the width. */
EMBER_API Tensor bitwise_right_shift(const Tensor& a, const Tensor& b);
EMBER_API Tensor bitwise_right_shift(const Tensor& a, Scalar b);
/** The greatest common divisor of |a| and |b| (integers only; gcd(0, 0) = 0). */
EMBER_API Tensor gcd(const Tensor& a, const Tensor& b);
/** The least common multiple |a / gcd(a, b) * b|, wrapping; 0 where a or b is 0. */
EMBER_API Tensor lcm(const Tensor& a, const Tensor& b);
/** cond ? a : b, broadcast over all three. */
EMBER_API Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
EMBER_API Tensor where(const Tensor& cond, const Tensor& a, Scalar b);

/** -x. */
EMBER_API Tensor neg(const Tensor& x);
/** |x|. */
EMBER_API Tensor abs(const Tensor& x);
/** e^x (integers promote to float32, as for every transcendental below). */
EMBER_API Tensor exp(const Tensor& x);
/** Natural logarithm. */
EMBER_API Tensor log(const Tensor& x);
/** log(1 + x), accurate near 0. */
EMBER_API Tensor log1p(const Tensor& x);
/** e^x - 1, accurate near 0. */
EMBER_API Tensor expm1(const Tensor& x);
/** Base-2 logarithm. */
EMBER_API Tensor log2(const Tensor& x);
/** Base-10 logarithm. */
EMBER_API Tensor log10(const Tensor& x);
/** 2^x. */
EMBER_API Tensor exp2(const Tensor& x);
/** Square root. */
EMBER_API Tensor sqrt(const Tensor& x);
/** 1 / sqrt(x). */
EMBER_API Tensor rsqrt(const Tensor& x);
/** Sine. */
EMBER_API Tensor sin(const Tensor& x);
/** Cosine. */
EMBER_API Tensor cos(const Tensor& x);
/** Tangent. */
EMBER_API Tensor tan(const Tensor& x);
/** Inverse sine, in [-pi/2, pi/2]; NaN outside [-1, 1]. */
EMBER_API Tensor asin(const Tensor& x);
/** Inverse cosine, in [0, pi]; NaN outside [-1, 1]. */
EMBER_API Tensor acos(const Tensor& x);
/** Inverse tangent, in (-pi/2, pi/2). */
EMBER_API Tensor atan(const Tensor& x);
/** Hyperbolic sine. */
EMBER_API Tensor sinh(const Tensor& x);
/** Hyperbolic cosine. */
EMBER_API Tensor cosh(const Tensor& x);
/** Inverse hyperbolic sine. */
EMBER_API Tensor asinh(const Tensor& x);
/** Inverse hyperbolic cosine; NaN below 1. */
EMBER_API Tensor acosh(const Tensor& x);
/** Inverse hyperbolic tangent; +-inf at +-1, NaN outside [-1, 1]. */
EMBER_API Tensor atanh(const Tensor& x);
/** Hyperbolic tangent. */
EMBER_API Tensor tanh(const Tensor& x);
/** 1 / (1 + e^-x). */
EMBER_API Tensor sigmoid(const Tensor& x);
/** max(x, 0). */
EMBER_API Tensor relu(const Tensor& x);
/** x * Phi(x); approximate="tanh" uses the tanh form. */
EMBER_API Tensor gelu(const Tensor& x, std::string_view approximate = "none");
/** log(1 + exp(beta x)) / beta, linear where beta x > threshold (PyTorch's softplus). */
EMBER_API Tensor softplus(const Tensor& x, double beta = 1, double threshold = 20);
/** x where x > 0, else negative_slope * x. */
EMBER_API Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
/** x where x > 0, else alpha * (exp(x) - 1). */
EMBER_API Tensor elu(const Tensor& x, double alpha = 1);
/** scale * elu(x, alpha) with the self-normalising constants of Klambauer et al. */
EMBER_API Tensor selu(const Tensor& x);
/** max(0, x) + min(0, alpha * (exp(x / alpha) - 1)). */
EMBER_API Tensor celu(const Tensor& x, double alpha = 1);
/** log(sigmoid(x)), computed without overflow. */
EMBER_API Tensor logsigmoid(const Tensor& x);
/** x * tanh(softplus(x)). */
EMBER_API Tensor mish(const Tensor& x);
/** x clamped to [min_val, max_val]; the gradient is 0 at and beyond the bounds (PyTorch's). */
EMBER_API Tensor hardtanh(const Tensor& x, double min_val = -1, double max_val = 1);
/** hardtanh(x, 0, 6). */
EMBER_API Tensor relu6(const Tensor& x);
/** relu6(x + 3) / 6 (F.hardsigmoid), one pass. */
EMBER_API Tensor hardsigmoid(const Tensor& x);
/** x * hardsigmoid(x) (F.hardswish), one pass. */
EMBER_API Tensor hardswish(const Tensor& x);
/** x * sigmoid(x). */
EMBER_API Tensor silu(const Tensor& x);
/** x where x > threshold, else value (F.threshold). */
EMBER_API Tensor threshold(const Tensor& x, Scalar threshold, Scalar value);
/** x where |x| > lambd, else 0 (F.hardshrink). */
EMBER_API Tensor hardshrink(const Tensor& x, double lambd = 0.5);
/** x - lambd above lambd, x + lambd below -lambd, else 0; lambd >= 0 (F.softshrink). */
EMBER_API Tensor softshrink(const Tensor& x, double lambd = 0.5);
/** x - tanh(x). */
EMBER_API Tensor tanhshrink(const Tensor& x);
/** x / (1 + |x|) (F.softsign). */
EMBER_API Tensor softsign(const Tensor& x);
/** x where x > 0, else weight * x, with weight one value or one per channel (dim 1; F.prelu). */
EMBER_API Tensor prelu(const Tensor& x, const Tensor& weight);
/** The gated linear unit: a * sigmoid(b) for the halves a, b of x along dim (F.glu). */
EMBER_API Tensor glu(const Tensor& x, int64_t dim = -1);
/** min(max(x, lo), hi); either bound may be absent. */
EMBER_API Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi);
/** -1, 0 or 1. */
EMBER_API Tensor sign(const Tensor& x);
/** sign(x) (torch.sgn, which for real dtypes is sign). */
EMBER_API Tensor sgn(const Tensor& x);
/** x itself (unary +); a bool x is a TypeError, as in PyTorch. */
EMBER_API Tensor positive(const Tensor& x);
/** other - alpha * x (torch.rsub: sub with its operands swapped). */
EMBER_API Tensor rsub(const Tensor& x, const Tensor& other, Scalar alpha = 1);
/** other - alpha * x for a number other. */
EMBER_API Tensor rsub(const Tensor& x, Scalar other, Scalar alpha = 1);
/** x * 2 ** other (torch.ldexp; 2 ** other in the default floating dtype for integer other). */
EMBER_API Tensor ldexp(const Tensor& x, const Tensor& other);
/** The argument of each element as a complex number: 0 for x >= 0, pi for x < 0, NaN for NaN
 *  (torch.angle of a real tensor; an integer x gives default_dtype()). */
EMBER_API Tensor angle(const Tensor& x);
/** The real part: x itself, as Ember's dtypes are real (torch.real). */
EMBER_API Tensor real(const Tensor& x);
/** The imaginary part: a NotImplementedError, as Ember has no complex dtypes (torch.imag of a
 *  real tensor raises too). */
EMBER_API Tensor imag(const Tensor& x);
/** (mantissa, exponent) with x = mantissa * 2 ** exponent, |mantissa| in [0.5, 1) (torch.frexp;
 *  a floating x; 0, inf and NaN give themselves and exponent 0; exponent is int32). */
EMBER_API std::tuple<Tensor, Tensor> frexp(const Tensor& x);
/** Round down. */
EMBER_API Tensor floor(const Tensor& x);
/** Round up. */
EMBER_API Tensor ceil(const Tensor& x);
/** Round half to even. */
EMBER_API Tensor round(const Tensor& x);
/** x rounded half to even at `decimals` places (negative: to tens, hundreds...): x's dtype. */
EMBER_API Tensor round(const Tensor& x, int64_t decimals);
/** Rounded toward zero, in x's dtype. */
EMBER_API Tensor trunc(const Tensor& x);
/** 1 / x (an integer x gives a floating result). */
EMBER_API Tensor reciprocal(const Tensor& x);
/** Error function. */
EMBER_API Tensor erf(const Tensor& x);
/** The inverse of erf: +-inf at +-1, NaN outside [-1, 1] (Note [erfinv] in
 * plugin_sdk_binary_ops.hpp). */
EMBER_API Tensor erfinv(const Tensor& x);
/** 1 - erf(x), without erf's cancellation for large x. */
EMBER_API Tensor erfc(const Tensor& x);
/** log |Gamma(x)| (+inf at 0 and the negative integers). */
EMBER_API Tensor lgamma(const Tensor& x);
/** The multivariate log-gamma of dimension p >= 1: the sum over j < p of lgamma(x - j / 2), plus
 *  p (p - 1) / 4 log(pi); every element must exceed (p - 1) / 2 (torch.mvlgamma). */
EMBER_API Tensor mvlgamma(const Tensor& x, int64_t p);
/** Gamma'(x) / Gamma(x), lgamma's derivative (Note [Polygamma] in plugin_sdk_binary_ops.hpp). */
EMBER_API Tensor digamma(const Tensor& x);
/** The n-th derivative of digamma (n >= 0; polygamma(0, x) is digamma). */
EMBER_API Tensor polygamma(int64_t n, const Tensor& x);
/** x * x. */
EMBER_API Tensor square(const Tensor& x);
/** True where x is NaN (never for integer and bool x). */
EMBER_API Tensor isnan(const Tensor& x);
/** True where x is +inf or -inf (never for integer and bool x). */
EMBER_API Tensor isinf(const Tensor& x);
/** True where x is neither NaN nor infinite (always for integer and bool x). */
EMBER_API Tensor isfinite(const Tensor& x);
/** |a - b| <= atol + rtol * |b| (or a == b, which covers equal infinities; NaN == NaN only with
 *  equal_nan), as bool, broadcast; a and b must have one dtype (PyTorch's isclose). */
EMBER_API Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-05, double atol = 1e-08,
                         bool equal_nan = false);
/** True if isclose(a, b, ...) holds everywhere. */
EMBER_API bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-05, double atol = 1e-08,
                        bool equal_nan = false);
/** x with NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by default the largest and
 *  lowest finite values of x's dtype); an integer or bool x is copied unchanged. */
EMBER_API Tensor nan_to_num(const Tensor& x, double nan = 0.0, std::optional<double> posinf = {},
                            std::optional<double> neginf = {});
/** start + weight * (end - start), computed as PyTorch does (from end where |weight| >= 0.5, so
 *  weight 1 gives end exactly); floating start and end of one dtype. */
EMBER_API Tensor lerp(const Tensor& start, const Tensor& end, Scalar weight);
/** lerp() with a tensor weight of start's dtype, broadcast with start and end. */
EMBER_API Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
/** x + value * t1 * t2, broadcast and promoted (an integer result needs an integer value). */
EMBER_API Tensor addcmul(const Tensor& x, const Tensor& t1, const Tensor& t2, Scalar value = 1);
/** x + value * t1 / t2 (true division; t1 and t2 may not both be integers, as in PyTorch). */
EMBER_API Tensor addcdiv(const Tensor& x, const Tensor& t1, const Tensor& t2, Scalar value = 1);
/** x clamped elementwise to tensors [lo, hi] (broadcast; an undefined bound is absent; NaN in x
 *  or a bound propagates); the gradient goes to x where lo <= x <= hi, else to the bound. */
EMBER_API Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi);

/** In place: a += b (b broadcast to a; result must keep a's dtype). */
EMBER_API Tensor& add_(Tensor& a, const Tensor& b);
EMBER_API Tensor& add_(Tensor& a, Scalar b);
/** In place: a += alpha * b. */
EMBER_API Tensor& add_(Tensor& a, const Tensor& b, Scalar alpha);
EMBER_API Tensor& add_(Tensor& a, Scalar b, Scalar alpha);
/** In place: a -= b. */
EMBER_API Tensor& sub_(Tensor& a, const Tensor& b);
EMBER_API Tensor& sub_(Tensor& a, Scalar b);
/** In place: a -= alpha * b. */
EMBER_API Tensor& sub_(Tensor& a, const Tensor& b, Scalar alpha);
EMBER_API Tensor& sub_(Tensor& a, Scalar b, Scalar alpha);
/** In place: a *= b. */
EMBER_API Tensor& mul_(Tensor& a, const Tensor& b);
EMBER_API Tensor& mul_(Tensor& a, Scalar b);
/** In place: a /= b. */
EMBER_API Tensor& div_(Tensor& a, const Tensor& b);
EMBER_API Tensor& div_(Tensor& a, Scalar b);
/** In place unary ops. */
EMBER_API Tensor& neg_(Tensor& x);
EMBER_API Tensor& abs_(Tensor& x);
EMBER_API Tensor& exp_(Tensor& x);
EMBER_API Tensor& log_(Tensor& x);
EMBER_API Tensor& sqrt_(Tensor& x);
EMBER_API Tensor& tanh_(Tensor& x);
EMBER_API Tensor& sigmoid_(Tensor& x);
EMBER_API Tensor& relu_(Tensor& x);
EMBER_API Tensor& clamp_(Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi);
/** In place: clamp(x, lo, hi) with tensor bounds. */
EMBER_API Tensor& clamp_(Tensor& x, const Tensor& lo, const Tensor& hi);
/** In place: x = lerp(x, end, weight). */
EMBER_API Tensor& lerp_(Tensor& x, const Tensor& end, Scalar weight);
EMBER_API Tensor& lerp_(Tensor& x, const Tensor& end, const Tensor& weight);
/** In place: x += value * t1 * t2. */
EMBER_API Tensor& addcmul_(Tensor& x, const Tensor& t1, const Tensor& t2, Scalar value = 1);
/** In place: x += value * t1 / t2. */
EMBER_API Tensor& addcdiv_(Tensor& x, const Tensor& t1, const Tensor& t2, Scalar value = 1);
/** In place: nan_to_num(x, ...). */
EMBER_API Tensor& nan_to_num_(Tensor& x, double nan = 0.0, std::optional<double> posinf = {},
                              std::optional<double> neginf = {});
/** The in-place form of any op that keeps x's shape (PyTorch's x.<op>_(...) where the core has no
 *  kernel writing in place): x = fn(x), refused where fn's result has another shape or a dtype x
 *  cannot hold (a floating result in an integer x, an integer one in a bool x), as PyTorch
 *  refuses; autograd records it as an in-place op of x. */
EMBER_API Tensor& apply_inplace(Tensor& x, const char* op,
                                const std::function<Tensor(const Tensor&)>& fn);
/** In place: x = where(mask, value, x). */
EMBER_API Tensor& masked_fill_(Tensor& x, const Tensor& mask, Scalar value);

/** Operators as in PyTorch. */
EMBER_API Tensor operator+(const Tensor& a, const Tensor& b);
EMBER_API Tensor operator-(const Tensor& a, const Tensor& b);
EMBER_API Tensor operator*(const Tensor& a, const Tensor& b);
EMBER_API Tensor operator/(const Tensor& a, const Tensor& b);
EMBER_API Tensor operator+(const Tensor& a, Scalar b);
EMBER_API Tensor operator-(const Tensor& a, Scalar b);
EMBER_API Tensor operator*(const Tensor& a, Scalar b);
EMBER_API Tensor operator/(const Tensor& a, Scalar b);
EMBER_API Tensor operator+(Scalar a, const Tensor& b);
EMBER_API Tensor operator-(Scalar a, const Tensor& b);
EMBER_API Tensor operator*(Scalar a, const Tensor& b);
EMBER_API Tensor operator/(Scalar a, const Tensor& b);
EMBER_API Tensor operator-(const Tensor& a);
EMBER_API Tensor& operator+=(Tensor& a, const Tensor& b);
EMBER_API Tensor& operator-=(Tensor& a, const Tensor& b);
EMBER_API Tensor& operator*=(Tensor& a, const Tensor& b);
EMBER_API Tensor& operator/=(Tensor& a, const Tensor& b);

namespace detail {
/** A 0-d tensor holding `s`, on `device`, with the dtype it promotes to against `other`. */
EMBER_API Tensor scalar_tensor(Scalar s, DType other, Device device);
/** Result dtype of a binary op between a tensor and a scalar, on PyTorch's rules. */
EMBER_API DType promote_with_scalar(DType t, Scalar s);
}  // namespace detail

}  // namespace ember
