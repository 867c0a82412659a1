// The conformance cases: every kernel the CPU backend registers is run by at least one case
// (conformance_test.cpp checks that), on several shapes: broadcasting, non-contiguous views,
// 0-d and zero-size inputs. Integer-valued inputs appear where ties or zeros matter (sort
// stability, argmax's first index, nonzero).
#include <cmath>
#include <tuple>

#include "tools/ember/conformance.h"

namespace ember::conformance {
namespace {

using Inputs = std::vector<Tensor>;
using Fn = std::function<Inputs(const Inputs&)>;

/** A case function with one output. */
Fn one(std::function<Tensor(const Inputs&)> f) {
  return [f](const Inputs& in) { return Inputs{f(in)}; };
}

/** Whole numbers in [lo, hi] of the dtype under test (ties and zeros on purpose). */
Tensor whole(Gen& g, IntList sizes, double lo, double hi) {
  return g.as(DType::Int64, sizes, lo, hi).to(g.dtype());
}

/** The range to draw from: [lo, hi] for floating dtypes, [ilo, ihi] for integer ones. */
struct Range {
  double lo = -1, hi = 1, ilo = -5, ihi = 5;
};
Tensor draw(Gen& g, IntList sizes, Range r) {
  return is_floating(g.dtype()) ? g(sizes, r.lo, r.hi) : g(sizes, r.ilo, r.ihi);
}

std::vector<Variant> unary_variants(Range r) {
  return {
      {"contiguous",
       [r](Gen& g) {
         return Inputs{draw(g, {3, 5}, r)};
       }},
      {"transposed",
       [r](Gen& g) {
         return Inputs{draw(g, {5, 4}, r).transpose(0, 1)};
       }},
      {"sliced",
       [r](Gen& g) {
         return Inputs{draw(g, {4, 9}, r).slice(1, 1, 9, 2)};
       }},
      {"scalar", [r](Gen& g) { return Inputs{draw(g, {}, r)}; }},
      {"empty",
       [r](Gen& g) {
         return Inputs{draw(g, {0, 4}, r)};
       }},
  };
}

std::vector<Variant> binary_variants(Range ra, Range rb) {
  return {
      {"same",
       [=](Gen& g) {
         return Inputs{draw(g, {3, 4}, ra), draw(g, {3, 4}, rb)};
       }},
      {"broadcast",
       [=](Gen& g) {
         return Inputs{draw(g, {2, 3, 4}, ra), draw(g, {3, 1}, rb)};
       }},
      {"transposed_sliced",
       [=](Gen& g) {
         return Inputs{draw(g, {4, 3}, ra).transpose(0, 1), draw(g, {3, 8}, rb).slice(1, 0, 8, 2)};
       }},
      {"scalar",
       [=](Gen& g) {
         return Inputs{draw(g, {3, 4}, ra), draw(g, {}, rb)};
       }},
      {"empty",
       [=](Gen& g) {
         return Inputs{draw(g, {0, 3}, ra), draw(g, {1, 3}, rb)};
       }},
  };
}

/** Variants of whole-number values (comparisons, logic): equal elements are common. */
std::vector<Variant> whole_binary_variants() {
  return {
      {"same",
       [](Gen& g) {
         return Inputs{whole(g, {3, 4}, -2, 2), whole(g, {3, 4}, -2, 2)};
       }},
      {"broadcast",
       [](Gen& g) {
         return Inputs{whole(g, {2, 3, 4}, -2, 2), whole(g, {4}, -2, 2)};
       }},
      {"transposed",
       [](Gen& g) {
         return Inputs{whole(g, {4, 3}, -2, 2).transpose(0, 1), whole(g, {3, 4}, -2, 2)};
       }},
      {"empty",
       [](Gen& g) {
         return Inputs{whole(g, {0, 2}, -2, 2), whole(g, {0, 2}, -2, 2)};
       }},
  };
}

/** The integer_binary kernel's inputs: whole numbers in [-40, 40] and, second, in [lo, hi]. */
std::vector<Variant> integer_variants(double lo, double hi) {
  return {
      {"same",
       [=](Gen& g) {
         return Inputs{whole(g, {3, 4}, -40, 40), whole(g, {3, 4}, lo, hi)};
       }},
      {"broadcast",
       [=](Gen& g) {
         return Inputs{whole(g, {2, 3, 4}, -40, 40), whole(g, {4}, lo, hi)};
       }},
      {"transposed",
       [=](Gen& g) {
         return Inputs{whole(g, {4, 3}, -40, 40).transpose(0, 1), whole(g, {3, 4}, lo, hi)};
       }},
      {"empty",
       [=](Gen& g) {
         return Inputs{whole(g, {0, 2}, -40, 40), whole(g, {0, 2}, lo, hi)};
       }},
  };
}

/** Reduction inputs: [3, 4, 5] plain and permuted, zero-size kept or (optionally) reduced dims. */
std::vector<Variant> reduce_variants(Range r, bool empty_reduction, bool whole_values = false) {
  auto make = [=](Gen& g, IntList sizes) {
    return whole_values ? whole(g, sizes, -3, 3) : draw(g, sizes, r);
  };
  std::vector<Variant> v = {
      {"contiguous",
       [=](Gen& g) {
         return Inputs{make(g, {3, 4, 5})};
       }},
      {"permuted",
       [=](Gen& g) {
         return Inputs{make(g, {5, 4, 3}).permute({2, 1, 0})};
       }},
      {"empty_kept",
       [=](Gen& g) {
         return Inputs{make(g, {0, 4, 5})};
       }},
  };
  if (empty_reduction) {
    v.push_back({"empty_reduced", [=](Gen& g) { return Inputs{make(g, {3, 0, 5})}; }});
  }
  return v;
}

Case unary(const std::string& name, std::function<Tensor(const Tensor&)> f, Range r,
           bool grad = true) {
  return {name, {name}, unary_variants(r), one([f](const Inputs& in) { return f(in[0]); }), grad};
}

Case binary(const std::string& name, std::function<Tensor(const Tensor&, const Tensor&)> f,
            Range ra = {}, Range rb = {}, bool grad = true) {
  return {name,
          {name},
          binary_variants(ra, rb),
          one([f](const Inputs& in) { return f(in[0], in[1]); }),
          grad};
}

/** An op of the integer_binary kernel; `with_bool`: bool is one of its dtypes. */
Case integer(const std::string& name, std::function<Tensor(const Tensor&, const Tensor&)> f,
             double lo, double hi, bool with_bool) {
  Case c{name,
         {"integer_binary"},
         integer_variants(lo, hi),
         one([f](const Inputs& in) { return f(in[0], in[1]); }),
         /*grad=*/false};
  if (!with_bool) c.dtypes = {DType::Int64, DType::Int32, DType::Int8, DType::UInt8};
  return c;
}

Case compare(const std::string& name, std::function<Tensor(const Tensor&, const Tensor&)> f) {
  return {name,
          {name},
          whole_binary_variants(),
          one([f](const Inputs& in) { return f(in[0], in[1]); }),
          /*grad=*/false};
}

const std::vector<DType> kFloat = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
const std::vector<DType> kF32F64 = {DType::Float32, DType::Float64};
// Dtypes that hold negative values (the unsigned ones clamp a negative range to 0).
const std::vector<DType> kSigned = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                                    DType::Int8,    DType::Int32,   DType::Int64};

std::vector<int64_t> shape_of(const Tensor& t) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end());
}

std::vector<Case> make_cases() {
  std::vector<Case> c;
  const Range pos{0.1, 3.0, 1, 5};

  // ---- copies and fills -----------------------------------------------------------------------
  c.push_back({"copy", {"copy"}, unary_variants({}), [](const Inputs& in) {
                 const Tensor& x = in[0];
                 return Inputs{x.contiguous(),       x.clone(),          x.to(DType::Float32),
                               x.to(DType::Float16), x.to(DType::Int64), x.to(DType::Int8),
                               x.to(DType::Bool)};
               }});
  c.push_back({"fill",
               {"fill"},
               unary_variants({}),
               [](const Inputs& in) {
                 return Inputs{full_like(in[0], 3), zeros_like(in[0]), ones_like(in[0])};
               },
               /*grad=*/false});

  // ---- binary arithmetic ----------------------------------------------------------------------
  c.push_back(binary("add", [](const Tensor& a, const Tensor& b) { return add(a, b); }));
  c.push_back(binary("sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }));
  c.push_back(binary("mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }));
  c.push_back(binary("div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, {},
                     {0.5, 2.0, 1, 3}));
  c.push_back(binary("pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); },
                     {0.5, 2.0, -3, 3}, {-2.0, 2.0, 0, 4}));
  c.push_back(binary("maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }));
  c.push_back(binary("minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }));
  c.push_back(binary("atan2", [](const Tensor& a, const Tensor& b) { return atan2(a, b); }, {-2, 2},
                     {0.5, 2}));
  c.push_back(binary("hypot", [](const Tensor& a, const Tensor& b) { return hypot(a, b); }, {-2, 2},
                     {0.5, 2}));
  c.push_back(binary("logaddexp", [](const Tensor& a, const Tensor& b) { return logaddexp(a, b); },
                     {-3, 3}, {-3, 3}));
  // Divisors of both signs (never an integer 0, which the core refuses), dividends of both.
  const Range positive_divisor{0.5, 3, 1, 4}, negative_divisor{-3, -0.5, -4, -1};
  c.push_back(binary(
      "remainder", [](const Tensor& a, const Tensor& b) { return remainder(a, b); }, {-5, 5, -9, 9},
      positive_divisor));
  c.push_back(binary(
      "remainder_negative_divisor",
      [](const Tensor& a, const Tensor& b) { return remainder(a, b); }, {-5, 5, -9, 9},
      negative_divisor));
  c.back().kernels = {"remainder"};
  c.back().dtypes = kSigned;
  c.push_back(binary(
      "fmod", [](const Tensor& a, const Tensor& b) { return fmod(a, b); }, {-5, 5, -9, 9},
      negative_divisor));
  c.back().dtypes = kSigned;
  // Rounded divisions (Note [Integer division is exact]): results are steps, no gradient.
  c.push_back(binary(
      "div_floor", [](const Tensor& a, const Tensor& b) { return div(a, b, "floor"); },
      {-5, 5, -9, 9}, positive_divisor, /*grad=*/false));
  c.push_back(binary(
      "div_floor_negative_divisor",
      [](const Tensor& a, const Tensor& b) { return div(a, b, "floor"); }, {-5, 5, -9, 9},
      negative_divisor, /*grad=*/false));
  c.back().kernels = {"div_floor"};
  c.back().dtypes = kSigned;
  c.push_back(binary(
      "div_trunc", [](const Tensor& a, const Tensor& b) { return div(a, b, "trunc"); },
      {-5, 5, -9, 9}, negative_divisor, /*grad=*/false));
  c.back().dtypes = kSigned;
  c.push_back({"scalar_ops", {"add", "mul", "sub"}, unary_variants({}), one([](const Inputs& in) {
                 return add(mul(in[0], 3), 2) - 1;
               })});

  // ---- comparison and logic -------------------------------------------------------------------
  c.push_back(compare("eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }));
  c.push_back(compare("ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }));
  c.push_back(compare("lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }));
  c.push_back(compare("le", [](const Tensor& a, const Tensor& b) { return le(a, b); }));
  c.push_back(compare("gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }));
  c.push_back(compare("ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); }));
  c.push_back(
      compare("logical_and", [](const Tensor& a, const Tensor& b) { return logical_and(a, b); }));
  c.push_back(
      compare("logical_or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b); }));
  c.push_back({"logical_not",
               {"logical_not"},
               {{"contiguous",
                 [](Gen& g) {
                   return Inputs{whole(g, {3, 4}, -1, 1)};
                 }},
                {"transposed",
                 [](Gen& g) {
                   return Inputs{whole(g, {4, 3}, -1, 1).t()};
                 }},
                {"empty", [](Gen& g) { return Inputs{whole(g, {0}, -1, 1)}; }}},
               one([](const Inputs& in) { return logical_not(in[0]); }),
               /*grad=*/false});
  // ---- integer ops (Note [Integer binary ops])
  // ----------------------------------------------------
  c.push_back(integer(
      "bitwise_and", [](const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }, -40, 40,
      true));
  c.push_back(integer(
      "bitwise_or", [](const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }, -40, 40,
      true));
  c.push_back(integer(
      "bitwise_xor", [](const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }, -40, 40,
      true));
  // Shift counts past every width and negative ones, which shift everything out.
  c.push_back(integer(
      "bitwise_left_shift",
      [](const Tensor& a, const Tensor& b) { return bitwise_left_shift(a, b); }, -2, 70, false));
  c.push_back(integer(
      "bitwise_right_shift",
      [](const Tensor& a, const Tensor& b) { return bitwise_right_shift(a, b); }, -2, 70, false));
  c.push_back(integer(
      "gcd", [](const Tensor& a, const Tensor& b) { return gcd(a, b); }, -40, 40, false));
  c.push_back(integer(
      "lcm", [](const Tensor& a, const Tensor& b) { return lcm(a, b); }, -40, 40, false));
  c.push_back({"bitwise_not",
               {"bitwise_not"},
               {{"contiguous",
                 [](Gen& g) {
                   return Inputs{whole(g, {3, 4}, -40, 40)};
                 }},
                {"transposed",
                 [](Gen& g) {
                   return Inputs{whole(g, {4, 3}, -40, 40).t()};
                 }},
                {"empty", [](Gen& g) { return Inputs{whole(g, {0}, -1, 1)}; }}},
               one([](const Inputs& in) { return bitwise_not(in[0]); }),
               /*grad=*/false});
  c.push_back({"where",
               {"where"},
               {{"same",
                 [](Gen& g) {
                   return Inputs{g.mask({3, 4}), g({3, 4}), g({3, 4})};
                 }},
                {"broadcast",
                 [](Gen& g) {
                   return Inputs{g.mask({3, 1}), g({2, 3, 4}), g({4})};
                 }},
                {"transposed",
                 [](Gen& g) {
                   return Inputs{g.mask({4, 3}).t(), g({4, 3}).t(), g({3, 4})};
                 }},
                {"empty",
                 [](Gen& g) {
                   return Inputs{g.mask({0, 2}), g({0, 2}), g({2})};
                 }}},
               one([](const Inputs& in) { return where(in[0], in[1], in[2]); })});
  c.push_back({"masked_fill",
               {"where"},
               {{"broadcast",
                 [](Gen& g) {
                   return Inputs{g({3, 4}), g.mask({4})};
                 }}},
               one([](const Inputs& in) { return masked_fill(in[0], in[1], 1); })});

  // ---- unary math -----------------------------------------------------------------------------
  c.push_back(unary("neg", [](const Tensor& x) { return neg(x); }, {}));
  c.push_back(unary("abs", [](const Tensor& x) { return abs(x); }, {}));
  c.push_back(unary(
      "sign", [](const Tensor& x) { return sign(x); }, {}, /*grad=*/false));
  Case relu_case = unary("relu", [](const Tensor& x) { return relu(x); }, {});
  relu_case.kernels.push_back("relu_backward");  // the gradient check runs the fused backward
  c.push_back(relu_case);
  c.push_back(unary("clamp",
                    [](const Tensor& x) {
                      return is_floating(x.dtype()) ? clamp(x, -0.5, 0.7) : clamp(x, -2, 3);
                    },
                    {}));
  c.push_back(unary("exp", [](const Tensor& x) { return exp(x); }, {-2, 2}));
  c.push_back(unary(
      "log", [](const Tensor& x) { return log(x); }, pos));
  c.push_back(unary("log1p", [](const Tensor& x) { return log1p(x); }, {0, 3}));
  c.push_back(unary("expm1", [](const Tensor& x) { return expm1(x); }, {-2, 2}));
  c.push_back(unary(
      "log2", [](const Tensor& x) { return log2(x); }, pos));
  c.push_back(unary(
      "log10", [](const Tensor& x) { return log10(x); }, pos));
  c.push_back(unary("exp2", [](const Tensor& x) { return exp2(x); }, {-2, 2}));
  c.push_back(unary(
      "sqrt", [](const Tensor& x) { return sqrt(x); }, pos));
  c.push_back(unary(
      "rsqrt", [](const Tensor& x) { return rsqrt(x); }, pos));
  c.push_back(unary("sin", [](const Tensor& x) { return sin(x); }, {-3, 3}));
  c.push_back(unary("cos", [](const Tensor& x) { return cos(x); }, {-3, 3}));
  c.push_back(unary("tan", [](const Tensor& x) { return tan(x); }, {-1.2, 1.2}));
  c.push_back(unary("asin", [](const Tensor& x) { return asin(x); }, {-0.9, 0.9}));
  c.push_back(unary("acos", [](const Tensor& x) { return acos(x); }, {-0.9, 0.9}));
  c.push_back(unary("atan", [](const Tensor& x) { return atan(x); }, {-3, 3}));
  c.push_back(unary("sinh", [](const Tensor& x) { return sinh(x); }, {-3, 3}));
  c.push_back(unary("cosh", [](const Tensor& x) { return cosh(x); }, {-3, 3}));
  c.push_back(unary("asinh", [](const Tensor& x) { return asinh(x); }, {-3, 3}));
  c.push_back(unary("acosh", [](const Tensor& x) { return acosh(x); }, {1.2, 3}));
  c.push_back(unary("atanh", [](const Tensor& x) { return atanh(x); }, {-0.9, 0.9}));
  c.push_back(unary("tanh", [](const Tensor& x) { return tanh(x); }, {-3, 3}));
  c.push_back(unary("sigmoid", [](const Tensor& x) { return sigmoid(x); }, {-4, 4}));
  // GELU's gradient runs the fused backward; "large" crosses the CPU's threaded, vectorized path
  // (Note [Vectorized GELU]).
  const Variant large_gelu{"large", [](Gen& g) { return Inputs{g({70, 130}, -6, 6)}; }};
  c.push_back(unary("gelu", [](const Tensor& x) { return gelu(x); }, {-3, 3}));
  c.back().kernels.push_back("gelu_backward");
  c.back().variants.push_back(large_gelu);
  c.push_back(unary("gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, {-3, 3}));
  c.back().kernels = {"gelu", "gelu_backward"};
  c.back().variants.push_back(large_gelu);
  c.push_back(unary("silu", [](const Tensor& x) { return silu(x); }, {-3, 3}));
  c.push_back(unary("leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); }, {-3, 3}));
  c.push_back(unary("elu", [](const Tensor& x) { return elu(x, 1.5); }, {-3, 3}));
  c.push_back(unary("selu", [](const Tensor& x) { return selu(x); }, {-3, 3}));
  c.back().kernels = {"elu"};
  c.push_back(unary("celu", [](const Tensor& x) { return celu(x, 0.5); }, {-3, 3}));
  c.back().kernels = {"elu"};
  c.push_back(unary("logsigmoid", [](const Tensor& x) { return logsigmoid(x); }, {-8, 8}));
  c.push_back(unary("mish", [](const Tensor& x) { return mish(x); }, {-4, 4}));
  // beta 2 and threshold 3 put part of the range beyond the threshold (the linear branch).
  c.push_back(unary("softplus", [](const Tensor& x) { return softplus(x, 2.0, 3.0); }, {-3, 3}));
  c.push_back(unary(
      "floor", [](const Tensor& x) { return floor(x); }, {-3, 3}, false));
  c.push_back(unary(
      "ceil", [](const Tensor& x) { return ceil(x); }, {-3, 3}, false));
  c.push_back(unary(
      "round", [](const Tensor& x) { return round(x); }, {-3, 3}, false));
  c.push_back(unary("erf", [](const Tensor& x) { return erf(x); }, {-2, 2}));
  c.push_back(unary("erfinv", [](const Tensor& x) { return erfinv(x); }, {-0.95, 0.95}));
  c.push_back(unary("erfc", [](const Tensor& x) { return erfc(x); }, {-3, 3}));
  c.push_back(unary("lgamma", [](const Tensor& x) { return lgamma(x); }, {-2.9, 4}));
  c.push_back(unary("polygamma", [](const Tensor& x) { return polygamma(1, x); }, {0.2, 4}));
  c.push_back(unary("digamma", [](const Tensor& x) { return digamma(x); }, {-2.9, 4}));
  c.back().kernels = {"polygamma"};
  c.push_back(unary("hardsigmoid", [](const Tensor& x) { return hardsigmoid(x); }, {-4, 4}));
  c.push_back(unary("hardswish", [](const Tensor& x) { return hardswish(x); }, {-4, 4}));

  // ---- reductions -----------------------------------------------------------------------------
  c.push_back({"sum", {"sum"}, reduce_variants({}, /*empty_reduction=*/true), [](const Inputs& in) {
                 return Inputs{sum(in[0], {1}), sum(in[0], {0, 2}, /*keepdim=*/true), sum(in[0])};
               }});
  c.push_back({"mean_var",
               {"sum"},
               reduce_variants({}, /*empty_reduction=*/false),
               [](const Inputs& in) {
                 return Inputs{mean(in[0], {1}), var(in[0], {2}), logsumexp(in[0], {0})};
               },
               true,
               kFloat});
  c.push_back({"prod",
               {"prod"},
               reduce_variants({0.5, 1.5, -2, 2}, /*empty_reduction=*/true),
               [](const Inputs& in) {
                 return Inputs{prod(in[0], {1}), prod(in[0], {0, 2})};
               }});
  c.push_back({"amax", {"amax"}, reduce_variants({}, false), [](const Inputs& in) {
                 return Inputs{amax(in[0], {1}), amax(in[0], {1, 2})};
               }});
  c.push_back({"amin", {"amin"}, reduce_variants({}, false), [](const Inputs& in) {
                 return Inputs{amin(in[0], {2}), amin(in[0], {1}, true)};
               }});
  c.push_back({"full_reductions",
               {"amax", "amin", "argmax", "argmin"},
               {{"contiguous",
                 [](Gen& g) {
                   return Inputs{whole(g, {3, 4, 5}, -3, 3)};
                 }},
                {"permuted",
                 [](Gen& g) {
                   return Inputs{whole(g, {5, 4, 3}, -3, 3).permute({2, 1, 0})};
                 }},
                {"scalar", [](Gen& g) { return Inputs{g({})}; }}},
               [](const Inputs& in) {
                 return Inputs{amax(in[0]), amin(in[0]), argmax(in[0]), argmin(in[0])};
               },
               false});
  c.push_back({"all",
               {"all"},
               reduce_variants({}, true, /*whole_values=*/true),
               [](const Inputs& in) {
                 return Inputs{all(in[0], {1}), all(in[0])};
               },
               false});
  c.push_back({"any",
               {"any"},
               reduce_variants({}, true, /*whole_values=*/true),
               [](const Inputs& in) {
                 return Inputs{any(in[0], {1}), any(in[0])};
               },
               false});
  c.push_back({"argmax",
               {"argmax"},
               reduce_variants({}, false, /*whole_values=*/true),
               [](const Inputs& in) {
                 return Inputs{argmax(in[0], 1), argmax(in[0], 2, true)};
               },
               false});
  c.push_back({"argmin",
               {"argmin"},
               reduce_variants({}, false, /*whole_values=*/true),
               [](const Inputs& in) {
                 return Inputs{argmin(in[0], 2, true), argmin(in[0], 1)};
               },
               false});
  c.push_back({"max_dim",
               {"max_dim"},
               reduce_variants({}, false, /*whole_values=*/true),
               [](const Inputs& in) {
                 auto [v, i] = max(in[0], 1);
                 return Inputs{v, i};
               }});
  c.push_back({"min_dim",
               {"min_dim"},
               reduce_variants({}, false, /*whole_values=*/true),
               [](const Inputs& in) {
                 auto [v, i] = min(in[0], 2, /*keepdim=*/true);
                 return Inputs{v, i};
               }});
  c.push_back({"cumsum", {"cumsum"}, reduce_variants({}, true), [](const Inputs& in) {
                 return Inputs{cumsum(in[0], 1), cumsum(in[0], 0)};
               }});
  // Values near 1 keep the running products in range; integers in [-2, 2] include zeros.
  c.push_back(
      {"cumprod", {"cumprod"}, reduce_variants({0.5, 1.5, -2, 2}, true), [](const Inputs& in) {
         return Inputs{cumprod(in[0], 1), cumprod(in[0], 0)};
       }});

  // ---- matmul, softmax and composites ---------------------------------------------------------
  const Range mm{-1, 1, -3, 3};
  c.push_back({"matmul",
               {"matmul"},
               {{"2d",
                 [=](Gen& g) {
                   return Inputs{draw(g, {3, 4}, mm), draw(g, {4, 5}, mm)};
                 }},
                {"batched_broadcast",
                 [=](Gen& g) {
                   return Inputs{draw(g, {2, 3, 4}, mm), draw(g, {4, 5}, mm)};
                 }},
                {"batch_dims_broadcast",
                 [=](Gen& g) {
                   return Inputs{draw(g, {2, 1, 3, 4}, mm), draw(g, {3, 4, 2}, mm)};
                 }},
                {"transposed",
                 [=](Gen& g) {
                   return Inputs{draw(g, {4, 3}, mm).t(), draw(g, {8, 5}, mm).slice(0, 0, 8, 2)};
                 }},
                {"inner_zero",
                 [=](Gen& g) {
                   return Inputs{draw(g, {3, 0}, mm), draw(g, {0, 5}, mm)};
                 }},
                {"empty",
                 [=](Gen& g) {
                   return Inputs{draw(g, {0, 4}, mm), draw(g, {4, 5}, mm)};
                 }}},
               one([](const Inputs& in) { return matmul(in[0], in[1]); })});
  c.push_back({"linear",
               {"matmul"},
               {{"2d",
                 [](Gen& g) {
                   return Inputs{g({5, 4}), g({3, 4}), g({3})};
                 }},
                {"3d",
                 [](Gen& g) {
                   return Inputs{g({2, 5, 4}), g({3, 4}), g({3})};
                 }}},
               one([](const Inputs& in) { return linear(in[0], in[1], in[2]); }),
               true,
               kF32F64});
  // The fused inference form (Note [Fused linear layers]): every activation, values only (its
  // gradient is the composite's).
  c.push_back({"fused_linear",
               {"fused_linear"},
               {{"2d",
                 [](Gen& g) {
                   return Inputs{g({5, 4}), g({3, 4}), g({3})};
                 }},
                {"transposed_no_bias",
                 [](Gen& g) {
                   return Inputs{g({6, 5}).t(), g({6, 3}).t()};
                 }}},
               [](const Inputs& in) {
                 const Tensor bias = in.size() > 2 ? in[2] : Tensor();
                 std::vector<Tensor> out;
                 for (const Activation act : {Activation::None, Activation::ReLU, Activation::GELU,
                                              Activation::GELUTanh}) {
                   out.push_back(fused_linear(in[0], in[1], bias, act));
                 }
                 return out;
               },
               false,
               {},
               4.0});
  const std::vector<Variant> softmax_variants = {
      {"2d",
       [](Gen& g) {
         return Inputs{g({4, 7}, -3, 3)};
       }},
      {"3d_transposed",
       [](Gen& g) {
         return Inputs{g({5, 3, 2}, -3, 3).transpose(0, 2)};
       }},
      {"empty", [](Gen& g) {
         return Inputs{g({0, 5}, -3, 3)};
       }}};
  c.push_back({"softmax", {"softmax"}, softmax_variants, [](const Inputs& in) {
                 return Inputs{softmax(in[0], 1), softmax(in[0], 0), softmax(in[0], -1)};
               }});
  c.push_back({"log_softmax", {"log_softmax"}, softmax_variants, [](const Inputs& in) {
                 return Inputs{log_softmax(in[0], 1), log_softmax(in[0], 0)};
               }});
  // Attention: L != S, Ev != E, batch broadcasting, both mask kinds (detached: the fused
  // kernels; a mask requiring grad takes the composite path), a transposed query, the causal
  // pattern and enough rows to cross the CPU kernel's 64-row blocks.
  c.push_back({"scaled_dot_product_attention",
               {"scaled_dot_product_attention", "scaled_dot_product_attention_backward"},
               {{"plain",
                 [](Gen& g) {
                   return Inputs{g({2, 3, 4}, -2, 2), g({2, 5, 4}, -2, 2), g({2, 5, 6})};
                 }},
                {"heads_bool_mask",
                 [](Gen& g) {
                   return Inputs{g({2, 2, 3, 4}, -2, 2), g({2, 1, 5, 4}, -2, 2), g({5, 3}),
                                 g.mask({2, 1, 3, 5})};
                 }},
                {"transposed_float_mask",
                 [](Gen& g) {
                   return Inputs{g({2, 4, 3, 5}, -2, 2).transpose(1, 2), g({2, 3, 6, 5}, -2, 2),
                                 g({2, 3, 6, 2}), g({4, 6}, -3, 1)};
                 }},
                {"blocks",
                 [](Gen& g) {
                   return Inputs{g({1, 70, 8}, -2, 2), g({1, 130, 8}, -2, 2), g({1, 130, 5})};
                 }}},
               [](const Inputs& in) {
                 const Tensor mask = in.size() > 3 ? in[3].detach() : Tensor();
                 return Inputs{
                     scaled_dot_product_attention(in[0], in[1], in[2], mask),
                     scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true, 0.5)};
               },
               true,
               {},
               2.0});
  // The LSTM recurrence. lstm_layer is optional: a backend with the kernel (the CPU's) runs it,
  // one without runs the core's composite, and either is compared with the composite on the
  // reference, so the case names the ops every backend has. Forward and reverse, and a batch
  // big enough for the CPU kernel's threads across rows.
  c.push_back({"lstm_layer",
               {"matmul", "sigmoid", "tanh"},
               {{"small",
                 [](Gen& g) {
                   return Inputs{g({3, 2, 12}, -2, 2), g({12, 3}), g({2, 3}), g({2, 3})};
                 }},
                {"vector_tails",
                 [](Gen& g) {
                   return Inputs{g({3, 2, 52}, -3, 3), g({52, 13}), g({2, 13}), g({2, 13})};
                 }},
                {"rows_in_parallel",
                 [](Gen& g) {
                   return Inputs{g({2, 64, 512}, -2, 2), g({512, 128}, -0.1, 0.1), g({64, 128}),
                                 g({64, 128}, -2, 2)};
                 }}},
               [](const Inputs& in) {
                 const auto [h, c] = lstm_layer(in[0], in[1], in[2], in[3]);
                 const auto [hr, cr] = lstm_layer(in[0], in[1], in[2], in[3], true);
                 return Inputs{h, c, hr, cr};
               },
               true,
               kF32F64,
               2.0});
  // The GRU recurrence, as the LSTM's above: the CPU's kernel (or any backend's composite)
  // against the composite on the reference, with and without b_hh.
  c.push_back(
      {"gru_layer",
       {"matmul", "sigmoid", "tanh", "gru_layer", "gru_layer_backward"},
       {{"small",
         [](Gen& g) {
           return Inputs{g({3, 2, 9}, -2, 2), g({9, 3}), g({9}), g({2, 3})};
         }},
        {"vector_tails",
         [](Gen& g) {
           return Inputs{g({3, 2, 39}, -3, 3), g({39, 13}), g({39}), g({2, 13})};
         }},
        {"rows_in_parallel",
         [](Gen& g) {
           return Inputs{g({2, 64, 384}, -2, 2), g({384, 128}, -0.1, 0.1), g({384}), g({64, 128})};
         }}},
       [](const Inputs& in) {
         return Inputs{gru_layer(in[0], in[1], in[2], in[3]),
                       gru_layer(in[0], in[1], {}, in[3], true)};
       },
       true,
       kF32F64,
       2.0});
  // A whole LSTM or GRU layer. rnn_layer is optional: the reference runs it (and its backward)
  // in double, cuDNN's RNN on CUDA, the core's composite elsewhere; both cells, both
  // directions, with and without bias.
  c.push_back({"rnn_layer",
               {"matmul", "sigmoid", "tanh", "rnn_layer", "rnn_layer_backward"},
               {{"small",
                 [](Gen& g) {
                   return Inputs{
                       g({4, 2, 5}, -2, 2), g({12, 5}), g({12, 3}), g({12}),   g({12}),  g({9, 5}),
                       g({9, 3}),           g({9}),     g({9}),     g({2, 3}), g({2, 3})};
                 }}},
               [](const Inputs& in) {
                 const auto [y, h, c] =
                     rnn_layer(RnnMode::LSTM, in[0], in[1], in[2], in[3], in[4], in[9], in[10]);
                 const auto [yr, hr, cr] =
                     rnn_layer(RnnMode::LSTM, in[0], in[1], in[2], {}, {}, in[9], in[10], true);
                 const auto [gy, gh, gc] =
                     rnn_layer(RnnMode::GRU, in[0], in[5], in[6], in[7], in[8], in[9]);
                 const auto [gyr, ghr, gcr] =
                     rnn_layer(RnnMode::GRU, in[0], in[5], in[6], {}, {}, in[9], {}, true);
                 return Inputs{y, h, c, yr, hr, cr, gy, gh, gyr, ghr};
               },
               true,
               kF32F64,
               2.0});
  c.push_back({"cross_entropy",
               {"log_softmax"},
               {{"classes",
                 [](Gen& g) {
                   return Inputs{g({6, 5}, -2, 2), g.index({6}, 5)};
                 }}},
               one([](const Inputs& in) { return cross_entropy(in[0], in[1]); }),
               true,
               kF32F64});
  c.push_back({"mse_loss",
               {"sub"},
               {{"same",
                 [](Gen& g) {
                   return Inputs{g({4, 3}), g({4, 3})};
                 }}},
               one([](const Inputs& in) { return mse_loss(in[0], in[1]); }),
               true,
               kF32F64});

  // ---- indexing and ordering ------------------------------------------------------------------
  c.push_back({"index_select",
               {"index_select"},
               {{"contiguous",
                 [](Gen& g) {
                   return Inputs{g({5, 4}, -3, 3), g.index({3}, 5), g.index({6}, 4)};
                 }},
                {"transposed",
                 [](Gen& g) {
                   return Inputs{g({4, 5}, -3, 3).t(), g.index({7}, 5), g.index({2}, 4)};
                 }},
                {"empty_index",
                 [](Gen& g) {
                   return Inputs{g({5, 4}, -3, 3), g.index({0}, 5), g.index({0}, 4)};
                 }}},
               [](const Inputs& in) {
                 return Inputs{index_select(in[0], 0, in[1]), index_select(in[0], 1, in[2])};
               }});
  c.push_back({"gather",
               {"gather"},
               {{"contiguous",
                 [](Gen& g) {
                   return Inputs{g({4, 5}, -3, 3), g.index({4, 3}, 5), g.index({2, 5}, 4)};
                 }},
                {"transposed",
                 [](Gen& g) {
                   return Inputs{g({5, 4}, -3, 3).t(), g.index({4, 2}, 5), g.index({3, 5}, 4)};
                 }},
                {"empty",
                 [](Gen& g) {
                   return Inputs{g({4, 5}, -3, 3), g.index({4, 0}, 5), g.index({0, 5}, 4)};
                 }}},
               [](const Inputs& in) {
                 return Inputs{gather(in[0], 1, in[1]), gather(in[0], 0, in[2])};
               }});
  const std::vector<Variant> scatter_variants = {
      {"contiguous",
       [](Gen& g) {
         return Inputs{g({4, 5}, -3, 3), g.index({4, 3}, 5), g({4, 3}, -3, 3)};
       }},
      {"transposed",
       [](Gen& g) {
         return Inputs{g({5, 4}, -3, 3).t(), g.index({4, 6}, 5), g({6, 4}, -3, 3).t()};
       }},
      {"empty", [](Gen& g) {
         return Inputs{g({4, 5}), g.index({4, 0}, 5), g({4, 0})};
       }}};
  c.push_back({"scatter", {"scatter"}, scatter_variants, one([](const Inputs& in) {
                 return scatter(in[0], 1, in[1], in[2]);
               })});
  c.push_back({"scatter_add", {"scatter_add"}, scatter_variants, one([](const Inputs& in) {
                 return scatter_add(in[0], 1, in[1], in[2]);
               })});
  c.push_back({"nonzero",
               {"nonzero", "count_nonzero"},
               {{"2d",
                 [](Gen& g) {
                   return Inputs{whole(g, {3, 4}, -1, 1)};
                 }},
                {"transposed",
                 [](Gen& g) {
                   return Inputs{whole(g, {2, 4, 3}, -1, 1).transpose(0, 2)};
                 }},
                {"empty",
                 [](Gen& g) {
                   return Inputs{whole(g, {0, 3}, -1, 1)};
                 }}},
               one([](const Inputs& in) { return nonzero(in[0]); }),
               false});
  const std::vector<Variant> order_variants = {{"random",
                                                [](Gen& g) {
                                                  return Inputs{g({4, 6}, -3, 3)};
                                                }},
                                               {"ties",
                                                [](Gen& g) {
                                                  return Inputs{whole(g, {3, 7}, -2, 2)};
                                                }},
                                               {"transposed",
                                                [](Gen& g) {
                                                  return Inputs{whole(g, {6, 4}, -2, 2).t()};
                                                }},
                                               {"empty_rows", [](Gen& g) {
                                                  return Inputs{g({0, 6})};
                                                }}};
  c.push_back({"sort", {"sort"}, order_variants, [](const Inputs& in) {
                 auto [v0, i0] = sort(in[0], -1);
                 auto [v1, i1] = sort(in[0], 0, /*descending=*/true);
                 return Inputs{v0, i0, v1, i1};
               }});
  c.push_back({"topk", {"topk"}, order_variants, [](const Inputs& in) {
                 auto [v0, i0] = topk(in[0], 3);
                 auto [v1, i1] = topk(in[0], 2, -1, /*largest=*/false, /*sorted=*/false);
                 auto [v2, i2] = topk(in[0], 0, 0);
                 return Inputs{v0, i0, v1, i1, v2, i2};
               }});

  // ---- convolution ----------------------------------------------------------------------------
  const std::vector<std::string> conv_kernels = {"conv2d", "conv2d_backward_input",
                                                 "conv2d_backward_weight"};
  c.push_back({"conv2d",
               conv_kernels,
               {{"basic",
                 [](Gen& g) {
                   return Inputs{g({2, 3, 7, 6}), g({4, 3, 3, 3}), g({4})};
                 }},
                {"transposed_input",
                 [](Gen& g) {
                   return Inputs{g({2, 3, 6, 7}).transpose(2, 3), g({4, 3, 3, 3}), g({4})};
                 }},
                {"empty_batch",
                 [](Gen& g) {
                   return Inputs{g({0, 3, 7, 6}), g({4, 3, 3, 3}), g({4})};
                 }}},
               one([](const Inputs& in) {
                 return conv2d(in[0], in[1], in[2], {1, 1}, {1, 1});
               }),
               true,
               {},
               4.0});
  c.push_back({"conv2d_strided_grouped",
               conv_kernels,
               {{"groups2",
                 [](Gen& g) {
                   return Inputs{g({2, 4, 9, 8}), g({6, 2, 3, 2})};
                 }}},
               one([](const Inputs& in) {
                 return conv2d(in[0], in[1], {}, {2, 1}, {1, 0}, {2, 1}, /*groups=*/2);
               }),
               true,
               {},
               4.0});

  // The fused inference form (Note [Fused convolution and ReLU]): values only, as its gradient
  // is the composite's.
  c.push_back({"conv2d_relu",
               {"conv2d_relu"},
               {{"basic",
                 [](Gen& g) {
                   return Inputs{g({2, 3, 7, 6}), g({4, 3, 3, 3}), g({4})};
                 }},
                {"channels_last_strided",
                 [](Gen& g) {
                   return Inputs{g({2, 4, 9, 8}).contiguous(MemoryFormat::ChannelsLast),
                                 g({6, 2, 3, 2}).contiguous(MemoryFormat::ChannelsLast), g({6})};
                 }}},
               one([](const Inputs& in) {
                 const int64_t groups = in[0].size(1) / in[1].size(1);
                 return conv2d_relu(in[0], in[1], in[2], {groups, 1}, {1, 0}, {1, 1}, groups);
               }),
               false,
               {},
               4.0});

  // A residual block's end (Note [Convolution, residual add and ReLU]): values only, as above.
  c.push_back({"conv2d_add_relu",
               {"conv2d_add_relu"},
               {{"basic",
                 [](Gen& g) {
                   return Inputs{g({2, 3, 7, 6}), g({4, 3, 3, 3}), g({2, 4, 7, 6}), g({4})};
                 }},
                {"channels_last_strided",
                 [](Gen& g) {
                   return Inputs{g({2, 4, 9, 8}).contiguous(MemoryFormat::ChannelsLast),
                                 g({6, 2, 3, 2}).contiguous(MemoryFormat::ChannelsLast),
                                 g({2, 6, 5, 7}).contiguous(MemoryFormat::ChannelsLast), g({6})};
                 }},
                {"row_major_residual_of_a_channels_last_convolution",
                 [](Gen& g) {
                   return Inputs{g({2, 4, 9, 8}).contiguous(MemoryFormat::ChannelsLast),
                                 g({6, 2, 3, 2}), g({2, 6, 5, 7}), g({6})};
                 }}},
               one([](const Inputs& in) {
                 const int64_t groups = in[0].size(1) / in[1].size(1);
                 return conv2d_add_relu(in[0], in[1], in[2], in[3], {groups, 1},
                                        {1, groups == 1 ? 1 : 0}, {1, 1}, groups);
               }),
               false,
               {},
               4.0});

  // ---- pooling --------------------------------------------------------------------------------
  const std::vector<Variant> pool_variants = {
      {"basic",
       [](Gen& g) {
         return Inputs{g({2, 3, 8, 7}, -3, 3)};
       }},
      {"transposed",
       [](Gen& g) {
         return Inputs{g({2, 3, 7, 8}, -3, 3).transpose(2, 3)};
       }},
      {"empty", [](Gen& g) {
         return Inputs{g({0, 3, 8, 7})};
       }}};
  // The gradient check runs max_pool2d_backward (Note [Backward of max pooling]).
  c.push_back(
      {"max_pool2d", {"max_pool2d", "max_pool2d_backward"}, pool_variants, [](const Inputs& in) {
         auto [v0, i0] = max_pool2d_with_indices(in[0], {2, 2});
         auto [v1, i1] = max_pool2d_with_indices(in[0], {3, 3}, {2, 2}, {1, 1}, {1, 1},
                                                 /*ceil_mode=*/true);
         auto [v2, i2] = max_pool2d_with_indices(in[0], {2, 3}, {1, 2}, {0, 1}, {2, 1});
         return Inputs{v0, i0, v1, i1, v2, i2};
       }});
  c.push_back(
      {"avg_pool2d", {"avg_pool2d", "avg_pool2d_backward"}, pool_variants, [](const Inputs& in) {
         return Inputs{avg_pool2d(in[0], {3, 3}, {2, 2}, {1, 1}),
                       avg_pool2d(in[0], {3, 2}, {2, 2}, {1, 1}, /*ceil_mode=*/true,
                                  /*count_include_pad=*/false),
                       avg_pool2d(in[0], {2, 2}),
                       avg_pool2d(in[0], {3, 3}, {2, 2}, {1, 1}, false, true, /*divisor=*/5)};
       }});
  c.push_back({"adaptive_avg_pool2d",
               {"adaptive_avg_pool2d", "adaptive_avg_pool2d_backward"},
               pool_variants,
               [](const Inputs& in) {
                 return Inputs{adaptive_avg_pool2d(in[0], {3, 4}),
                               adaptive_avg_pool2d(in[0], {1, 1}),
                               adaptive_avg_pool2d(in[0], {5, 5})};
               }});

  // ---- normalisation --------------------------------------------------------------------------
  const std::vector<std::string> bn_kernels = {"batch_norm", "batch_norm_backward"};
  c.push_back({"batch_norm_train",
               bn_kernels,
               {{"4d",
                 [](Gen& g) {
                   return Inputs{g({4, 3, 5, 5}, -2, 3), g({3}), g({3})};
                 }},
                {"2d",
                 [](Gen& g) {
                   return Inputs{g({6, 3}, -2, 3), g({3}), g({3})};
                 }},
                {"3d_transposed",
                 [](Gen& g) {
                   return Inputs{g({4, 5, 3}, -2, 3).transpose(1, 2), g({3}), g({3})};
                 }}},
               one([](const Inputs& in) {
                 return batch_norm(in[0], in[1], in[2], {}, {}, /*training=*/true);
               }),
               true,
               {},
               2.0});
  c.push_back(
      {"batch_norm_eval",
       bn_kernels,
       {{"4d",
         [](Gen& g) {
           return Inputs{g({4, 3, 5, 5}, -2, 3), g({3}), g({3}), g({3}, -0.5, 0.5), g({3}, 0.5, 2)};
         }}},
       one([](const Inputs& in) {
         return batch_norm(in[0], in[1], in[2], in[3].detach(), in[4].detach(),
                           /*training=*/false);
       })});
  c.push_back(
      {"layer_norm",
       {"layer_norm", "layer_norm_backward"},
       {{"last_dim",
         [](Gen& g) {
           return Inputs{g({4, 6}, -2, 3), g({6}), g({6})};
         }},
        {"two_dims",
         [](Gen& g) {
           return Inputs{g({2, 3, 4}, -2, 3), g({3, 4}), g({3, 4})};
         }},
        {"transposed",
         [](Gen& g) {
           return Inputs{g({6, 4}, -2, 3).t(), g({6}), g({6})};
         }}},
       one([](const Inputs& in) { return layer_norm(in[0], shape_of(in[1]), in[1], in[2]); }),
       true,
       {},
       2.0});
  c.push_back({"group_norm",
               {"group_norm", "group_norm_backward"},
               {{"4d",
                 [](Gen& g) {
                   return Inputs{g({2, 6, 4, 4}, -2, 3), g({6}), g({6})};
                 }},
                {"3d",
                 [](Gen& g) {
                   return Inputs{g({3, 6, 5}, -2, 3), g({6}), g({6})};
                 }}},
               one([](const Inputs& in) { return group_norm(in[0], 3, in[1], in[2]); }),
               true,
               {},
               2.0});

  // ---- optimizer steps ------------------------------------------------------------------------
  // Three steps of each rule on a parameter with given gradients: a backend's fused step kernel
  // against the reference backend, which has none and runs the rule as tensor ops (Note
  // [Optimizer steps through kernels]).
  const std::vector<Variant> step_variants = {
      {"steps", [](Gen& g) {
         return Inputs{g({5, 7}, -2, 2), g({5, 7}), g({5, 7}), g({5, 7})};
       }}};
  auto steps = [](std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)> make) {
    return [make](const Inputs& in) {
      Tensor p = in[0].detach().clone().requires_grad_(true);
      auto opt = make({p});
      for (size_t k = 1; k < in.size(); ++k) {
        p.mutable_grad() = in[k].detach();
        opt->step();
      }
      return Inputs{p.detach()};
    };
  };
  const std::vector<DType> f32_f64 = {DType::Float32, DType::Float64};
  c.push_back({"sgd_step",
               {"sgd_step"},
               step_variants,
               steps([](std::vector<Tensor> ps) {
                 return std::make_unique<optim::SGD>(
                     ps, optim::SGDOptions{
                             .lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
               }),
               false,
               f32_f64});
  c.push_back({"adam_step",
               {"adam_step"},
               step_variants,
               steps([](std::vector<Tensor> ps) {
                 return std::make_unique<optim::AdamW>(
                     ps, optim::AdamWOptions{.lr = 0.01, .amsgrad = true});
               }),
               false,
               f32_f64});
  c.push_back({"rmsprop_step",
               {"rmsprop_step"},
               step_variants,
               steps([](std::vector<Tensor> ps) {
                 return std::make_unique<optim::RMSprop>(
                     ps, optim::RMSpropOptions{.lr = 0.01, .momentum = 0.5, .centered = true});
               }),
               false,
               f32_f64});

  // ---- torch.linalg: the factorizations and the ops made of them --------------------------------
  // Inputs are shifted (+ n I) or made symmetric positive-definite inside the case so that every
  // draw is well conditioned. Eigenvectors and singular vectors are compared through what does
  // not depend on their signs: the squares of V's entries, the products u_i v_i^T.
  const auto eye_like = [](const Tensor& a) {
    return eye(a.size(-1), a.size(-1), {a.dtype(), a.device()});
  };
  const auto shifted = [eye_like](const Tensor& a) {
    return add(a, mul(eye_like(a), static_cast<double>(a.size(-1))));
  };
  const auto spd = [eye_like](const Tensor& a) {
    return add(matmul(a, a.transpose(-2, -1)), mul(eye_like(a), static_cast<double>(a.size(-1))));
  };
  const auto square_variants = std::vector<Variant>{
      {"3x3",
       [](Gen& g) {
         return Inputs{g({3, 3})};
       }},
      {"batched",
       [](Gen& g) {
         return Inputs{g({2, 3, 4, 4})};
       }},
      {"transposed",
       [](Gen& g) {
         return Inputs{g({5, 5}).t()};
       }},
  };
  const auto any_variants = std::vector<Variant>{
      {"tall",
       [](Gen& g) {
         return Inputs{g({5, 3})};
       }},
      {"wide_batched",
       [](Gen& g) {
         return Inputs{g({2, 3, 5})};
       }},
      {"square",
       [](Gen& g) {
         return Inputs{g({4, 4})};
       }},
  };
  c.push_back({"linalg_inv",
               {"linalg_lu_factor", "linalg_lu_solve"},
               square_variants,
               one([shifted](const Inputs& in) { return linalg::inv(shifted(in[0])); })});
  c.push_back({"linalg_det_slogdet",
               {"linalg_lu_factor", "linalg_lu_solve"},
               square_variants,
               [](const Inputs& in) {
                 auto [sign, logabs] = linalg::slogdet(in[0]);
                 return Inputs{linalg::det(in[0]), sign, logabs};
               }});
  c.push_back({"linalg_solve",
               {"linalg_lu_factor", "linalg_lu_solve"},
               {{"matrix",
                 [](Gen& g) {
                   return Inputs{g({3, 3}), g({3, 2})};
                 }},
                {"vector_batched",
                 [](Gen& g) {
                   return Inputs{g({2, 4, 4}), g({2, 4})};
                 }},
                {"broadcast",
                 [](Gen& g) {
                   return Inputs{g({4, 4}), g({3, 4, 1})};
                 }}},
               one([shifted](const Inputs& in) { return linalg::solve(shifted(in[0]), in[1]); })});
  c.push_back({"linalg_cholesky",
               {"linalg_cholesky", "linalg_lu_factor", "linalg_lu_solve"},
               square_variants,
               [spd](const Inputs& in) {
                 return Inputs{linalg::cholesky(spd(in[0])), linalg::cholesky(spd(in[0]), true)};
               }});
  c.push_back({"linalg_qr",
               {"linalg_qr", "linalg_lu_factor", "linalg_lu_solve"},
               any_variants,
               [](const Inputs& in) {
                 auto [q, r] = linalg::qr(in[0]);
                 return Inputs{q, r};
               }});
  c.push_back({"linalg_qr_complete",
               {"linalg_qr"},
               any_variants,
               [](const Inputs& in) {
                 auto [q, r] = linalg::qr(in[0], "complete");
                 return Inputs{q, r};
               },
               false});
  c.push_back({"linalg_eigh", {"linalg_eigh"}, square_variants, [](const Inputs& in) {
                 const Tensor s = add(in[0], in[0].transpose(-2, -1));
                 auto [w, v] = linalg::eigh(s);
                 auto [wu, vu] = linalg::eigh(s, "U");
                 return Inputs{w, mul(v, v), wu};
               }});
  c.push_back({"linalg_svd", {"linalg_svd"}, any_variants, [](const Inputs& in) {
                 auto [u, s, vh] = linalg::svd(in[0], false);
                 Inputs out{s};
                 for (int64_t i = 0; i < s.size(-1); ++i) {
                   out.push_back(matmul(u.narrow(-1, i, 1), vh.narrow(-2, i, 1)));
                 }
                 return out;
               }});
  c.push_back({"linalg_pinv_lstsq_norms", {"linalg_svd"}, any_variants, [](const Inputs& in) {
                 Shape bs = in[0].sizes();
                 bs.back() = 2;  // B [..., m, 2]
                 const Tensor b = ones(bs, {in[0].dtype(), in[0].device()});
                 return Inputs{linalg::pinv(in[0]), std::get<0>(linalg::lstsq(in[0], b)),
                               linalg::matrix_norm(in[0], "nuc"), linalg::matrix_norm(in[0], 2.0),
                               linalg::norm(in[0])};
               }});
  return c;
}

}  // namespace

Tensor Gen::as(DType dtype, IntList sizes, double lo, double hi) {
  Generator gen(seed_ * 1000003 + drawn_++);
  Tensor t;
  if (dtype == DType::Bool) {
    t = randint(0, 2, sizes, DType::Int64, &gen).to(DType::Bool);
  } else if (!is_floating(dtype)) {
    const int64_t ilo = dtype == DType::UInt8 && lo < 0 ? 0 : static_cast<int64_t>(std::ceil(lo));
    const int64_t ihi = static_cast<int64_t>(std::floor(hi)) + 1;
    t = randint(ilo, ihi, sizes, DType::Int64, &gen).to(dtype);
  } else {
    t = add(mul(rand(sizes, DType::Float64, &gen), hi - lo), lo).to(dtype);
  }
  return t.to(device_);
}

Tensor Gen::index(IntList sizes, int64_t n) {
  Generator gen(seed_ * 1000003 + drawn_++);
  return randint(0, n, sizes, DType::Int64, &gen).to(device_);
}

Tensor Gen::mask(IntList sizes) {
  return as(DType::Bool, sizes);
}

const std::vector<Case>& all_cases() {
  static const std::vector<Case> cases = make_cases();
  return cases;
}

}  // namespace ember::conformance
