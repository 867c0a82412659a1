// Reductions over a set of dims (empty = all), arg reductions and cumulative sums.
// Kernel contract: the core permutes the input so the reduced dims are the LAST dims (a view,
// possibly non-contiguous; no copy) and allocates a contiguous output whose shape is the kept
// dims, in order. Inputs {x}, outputs {y}, ints[0] = number of trailing reduced dims.
//   "sum", "prod": y has x's dtype (integer and bool inputs are converted to int64 first).
//   "amax", "amin": y has x's dtype; NaN propagates; never called with a zero-size reduced dim.
//   "all", "any": y is bool; x of any dtype (truthy = nonzero, NaN is truthy).
//   "argmax", "argmin": exactly one trailing reduced dim (the core flattens for a full
//     reduction); y int64; the first index wins ties; NaN counts as the extreme.
//   "max_dim", "min_dim": one trailing reduced dim; outputs {values (x's dtype), indices int64}.
//   "cumsum", "cumprod": the core moves the dim last with a transpose; y has the moved shape,
//     contiguous, x's dtype (integer and bool inputs are converted to int64 first); ints unused.
// Kernels are keyed by x's dtype. mean, var, std, norm, logsumexp, max/min are composites.
#include "ember/ops/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/dispatch/call.h"
#include "ember/amp/autocast.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/linalg.h"

namespace ember {
namespace {

/** A reduction laid out for the kernels: reduced dims moved last. */
struct Plan {
  Tensor xp;              // x permuted: kept dims, then reduced dims
  Shape out_sizes;        // kept dims
  Shape keep_sizes;       // x's sizes with reduced dims set to 1
  int64_t k = 0;          // number of reduced dims
  int64_t n_red = 1;      // elements per reduction
  int64_t zero_dim = -1;  // a reduced dim of size 0, if any
};

Plan plan(const Tensor& x, IntList dims, const char* name) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", name);
  const int64_t nd = x.dim();
  // The reduced dims are a bit set: one bit per dim (Note [At most EMBER_MAX_DIMS dims]).
  static_assert(EMBER_MAX_DIMS <= 64);
  const uint64_t all_dims = nd == 64 ? ~uint64_t{0} : (uint64_t{1} << nd) - 1;
  uint64_t reduced = dims.empty() ? all_dims : 0;
  for (int64_t d : dims) {
    // Note [Dims of a 0-d tensor]: dim 0 / -1 of a 0-d tensor, nothing to move.
    const int64_t w = wrap_dim(d, std::max<int64_t>(nd, 1), name);
    if (nd == 0) continue;
    EMBER_CHECK(!(reduced >> w & 1), "[{}] dim {} appears multiple times in the list of dims {}",
                name, w, shape_str(dims));
    reduced |= uint64_t{1} << w;
  }
  Plan p;
  Shape perm;
  const Shape& sizes = x.sizes();
  for (int64_t d = 0; d < nd; ++d) {
    if (reduced >> d & 1) continue;
    perm.push_back(d);
    p.out_sizes.push_back(sizes[d]);
  }
  for (int64_t d = 0; d < nd; ++d) {
    const bool r = reduced >> d & 1;
    p.keep_sizes.push_back(r ? 1 : sizes[d]);
    if (!r) continue;
    perm.push_back(d);
    p.n_red *= sizes[d];
    if (sizes[d] == 0 && p.zero_dim < 0) p.zero_dim = d;
    ++p.k;
  }
  p.xp = p.k == 0 || p.k == nd ? x : x.permute(perm);
  return p;
}

Tensor finish(const Tensor& y, const Plan& p, bool keepdim) {
  return keepdim ? y.view(p.keep_sizes) : y;
}

/** Runs a one-output reduction kernel on the plan; y gets `out_dtype`. */
Tensor run_reduce(const Op& op, const Plan& p, DType out_dtype, bool keepdim) {
  Tensor y = empty(p.out_sizes, {out_dtype, p.xp.device()});
  // Every reduction kernel takes one attribute, reduced_dims (ember/ops.def).
  if (y.numel() > 0) {
    run_kernel(op, p.xp.dtype(), {&p.xp}, {&y}, PackedAttrs(attrs::sum{.reduced_dims = p.k}));
  }
  return finish(y, p, keepdim);
}

// Note [Reductions without an identity over empty dims]
// max, min, amax, amin, argmax and argmin have no identity, so a reduced dim of size 0 has no
// answer. As in PyTorch, a dim the caller named is an Index error ("Expected reduction dim 0 to
// have non-zero size"), and an empty tensor reduced over all of its dims (no dim given) a Value
// error asking for a dim.
void check_nonempty(const Plan& p, const Tensor& x, IntList dims, const char* name) {
  if (p.zero_dim < 0) return;
  EMBER_CHECK(!dims.empty(),
              "[{}] cannot reduce over a zero-size dim: input of shape {} has no elements and "
              "the operation has no identity (specify a dim)",
              name, shape_str(x.sizes()));
  EMBER_CHECK_INDEX(false,
                    "[{}] cannot reduce over a zero-size dim: expected reduction dim {} to have "
                    "non-zero size, input of shape {} (the operation has no identity)",
                    name, p.zero_dim, shape_str(x.sizes()));
}

void check_floating(const Tensor& x, const char* name) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK_TYPE(is_floating(x.dtype()),
                   "[{}] could not infer output dtype: input dtype must be floating point, got {} "
                   "(convert with .to(float32) first)",
                   name, x.dtype());
}

bool is_half(DType d) {
  return d == DType::Float16 || d == DType::BFloat16;
}

/** sum or prod: integers and bool accumulate in int64. */
Tensor sum_like(const Op& op, const char* name, const Tensor& x, IntList dims, bool keepdim) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", name);
  const Tensor in = is_floating(x.dtype()) ? x : x.to(DType::Int64);
  const Plan p = plan(in, dims, name);
  return run_reduce(op, p, in.dtype(), keepdim);
}

/** Number of elements each output of a reduction over `dims` combines. */
int64_t reduced_count(const Tensor& x, IntList dims, const char* name) {
  return plan(x, dims, name).n_red;
}

/** (values, indices) or indices alone along one dim. */
std::tuple<Tensor, Tensor> arg_reduce(const Op& op, const char* name, const Tensor& x, int64_t dim,
                                      bool keepdim, bool values) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", name);
  const int64_t nd = x.dim();
  // A 0-d tensor reduces like a 1-element vector; the result stays 0-d (Note [Dims of a 0-d
  // tensor]).
  const int64_t d = wrap_dim(dim, std::max<int64_t>(nd, 1), name);
  const Tensor x1 = nd == 0 ? x.reshape({1}) : x;
  const int64_t ref[1] = {d};
  const Plan p = plan(x1, IntList(ref, 1), name);
  check_nonempty(p, x1, IntList(ref, 1), name);  // Note [Reductions without an identity ...]
  Tensor idx = empty(p.out_sizes, {DType::Int64, x.device()});
  Tensor val = values ? empty(p.out_sizes, {x.dtype(), x.device()}) : Tensor();
  if (idx.numel() > 0) {
    const PackedAttrs one_dim(attrs::argmax{.reduced_dims = 1});
    if (values) {
      run_kernel(op, x.dtype(), {&p.xp}, {&val, &idx}, one_dim);
    } else {
      run_kernel(op, x.dtype(), {&p.xp}, {&idx}, one_dim);
    }
  }
  if (nd == 0) return {values ? val : Tensor(), idx};
  return {values ? finish(val, p, keepdim) : Tensor(), finish(idx, p, keepdim)};
}

Tensor arg_reduce_flat(const Op& op, const char* name, const Tensor& x, std::optional<int64_t> dim,
                       bool keepdim) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", name);
  if (dim) return std::get<1>(arg_reduce(op, name, x, *dim, keepdim, false));
  EMBER_CHECK(x.numel() > 0,
              "[{}] cannot reduce over a zero-size dim: input of shape {} has no elements "
              "(specify a dim)",
              name, shape_str(x.sizes()));
  Tensor idx = std::get<1>(arg_reduce(op, name, x.reshape({-1}), 0, false, false));
  return keepdim ? idx.view(Shape(static_cast<size_t>(x.dim()), 1)) : idx;
}

/** max(x)/min(x) over all elements. */
Tensor extremum_all(const Op& op, const char* name, const Tensor& x) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK(x.numel() > 0,
              "[{}] cannot reduce over a zero-size dim: input of shape {} has no elements "
              "(specify a dim)",
              name, shape_str(x.sizes()));
  return run_reduce(op, plan(x, {}, name), x.dtype(), false);
}

}  // namespace

// Note [Backward of reductions]
// A reduction's gradient first gets the reduced dims back as size 1 (reshape to the keepdim
// shape; `keep_sizes` of the plan), then broadcasts against the input. Every formula is written
// with public ops, so it is differentiable again (create_graph); masks (which element won a max,
// which elements are zero) are constants of the formula, as in PyTorch.
//   sum:        g expanded.
//   amax/amin, max(x)/min(x): g split evenly among the elements equal to the result.
//   max/min(x, dim): g goes to the element the returned index names (one-hot from the indices).
//   prod:       Note [Product gradient with zeros].
//   std:        var's gradient times g / (2 std), taken as 0 where std == 0 (not 0 * inf = nan).
//   norm:       PyTorch's norm_backward; 0 where the norm is 0 (for p = 2: x / |x| at x = 0).
//   logsumexp:  g exp(x - lse).
//   cumsum:     the reversed running sum of g, as sum(g) - cumsum(g) + g (there is no flip).
// mean and var are composites of differentiable ops and need no formula.
namespace {

using autograd::LambdaNode;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

/** A 0-d tensor of `like`'s dtype and device holding `v`. */
Tensor scalar_like(const Tensor& like, double v) {
  return full({}, v, {like.dtype(), like.device()});
}

/** Gradient of amax/amin: `g` (keepdim shape) split evenly among the elements equal to `yk`. */
Tensor extremum_backward(const Tensor& gk, const Tensor& x, const Tensor& yk, IntList dims) {
  const Tensor hit = eq(x, yk);
  const Tensor count = sum(hit, dims, /*keepdim=*/true).to(x.dtype());
  return where(hit, div(gk, count), scalar_like(x, 0.0));
}

// Note [Product gradient with zeros]
// d prod(x) / d x_i is the product of the others. Without zeros that is prod / x_i (the saved
// result over the input). With zeros, prod / x divides by 0, so the formula splits each group
// into its nonzero part y (zeros replaced by 1, product P) and its zeros z_1..z_k:
//   grad_i = P / y_i * E_i,  E_i = product of the zeros other than x_i.
// E is written so that it stays exact as a function of the zeros' values (which are 0 here but
// carry derivatives): k = 0: 1; k = 1: the zero itself (or 1 at it); k = 2: z_a z_b =
// (s1^2 - s2) / 2 with power sums s1, s2 (or s1 - z_i at a zero). With the masks held
// constant this is the true gradient near x, so the first and second derivatives are exact
// (PyTorch gets the same from exclusive cumprods). For k >= 3 the gradient and its first
// derivative are 0 and E is taken as 0; derivatives of order >= 3 at such points are not
// tracked. Choosing the path reads one flag back to the host, as PyTorch's prod_backward does.
Tensor prod_backward(const Tensor& gk, const Tensor& x, const Tensor& yk, IntList dims) {
  const Tensor is_zero = eq(x, 0.0);
  if (!any(is_zero).item<bool>()) return mul(gk, div(yk, x));
  const Tensor zero = scalar_like(x, 0.0), one = scalar_like(x, 1.0);
  const Tensor y = where(is_zero, one, x);
  const Tensor z = where(is_zero, x, zero);
  const Tensor p = prod(y, dims, /*keepdim=*/true);
  const Tensor k = sum(is_zero, dims, /*keepdim=*/true);
  const Tensor s1 = sum(z, dims, /*keepdim=*/true);
  const Tensor s2 = sum(mul(z, z), dims, /*keepdim=*/true);
  const Tensor k0 = eq(k, 0), k1 = eq(k, 1), k2 = eq(k, 2);
  const Tensor e_nonzero =
      where(k0, one, where(k1, s1, where(k2, mul(sub(mul(s1, s1), s2), 0.5), zero)));
  const Tensor e_zero = where(k1, one, where(k2, sub(s1, x), zero));
  return mul(mul(gk, div(p, y)), where(is_zero, e_zero, e_nonzero));
}

/** Gradient of var(x, dims, correction) for a gradient `gk` in the keepdim shape. */
Tensor var_backward(const Tensor& gk, const Tensor& x, IntList dims, double denom) {
  const Tensor centered = sub(x, mean(x, dims, /*keepdim=*/true));
  return mul(gk, mul(centered, 2.0 / denom));
}

/** Gradient of norm(x, p) with result `yk` (keepdim shape); PyTorch's norm_backward. */
Tensor norm_backward(const Tensor& gk, const Tensor& x, const Tensor& yk, double p, IntList dims) {
  const Tensor zero = scalar_like(x, 0.0), one = scalar_like(x, 1.0);
  if (p == 0) return mul(gk, zeros_like(x));  // keeps g's history: 0 again in double backward
  if (p == 1) return mul(gk, sign(x));
  if (std::isinf(p)) return mul(sign(x), extremum_backward(gk, abs(x), yk, dims));
  // Where the norm is 0 the gradient is 0; the norm is replaced by 1 in the division so that
  // the unused branch of where does not produce inf (and nan in double backward).
  const Tensor norm_zero = eq(yk, 0.0);
  const Tensor safe_norm = where(norm_zero, one, yk);
  if (p == 2) return mul(x, where(norm_zero, zero, div(gk, safe_norm)));
  const Tensor ax = abs(x);
  if (p < 1) {
    const Tensor x_zero = eq(x, 0.0);
    const Tensor scaled = mul(sign(x), where(x_zero, zero, pow(where(x_zero, one, ax), p - 1)));
    return mul(mul(scaled, gk), pow(yk, 1 - p));
  }
  const Tensor scaled = p < 2 ? mul(sign(x), pow(ax, p - 1)) : mul(x, pow(ax, p - 2));
  return mul(scaled, where(norm_zero, zero, div(gk, pow(safe_norm, p - 1))));
}

/** Records the backward `formula(gk, x, yk)` of a one-output reduction of x over `dims`
 *  (gk, yk: the output's gradient and value in the keepdim shape). */
template <typename Forward, typename Formula>
Tensor reduction_ad(const char* node, const char* name, const Tensor& x, IntList dims,
                    Forward&& forward, Formula formula) {
  return autograd::differentiable(
      node, name, {&x}, std::forward<Forward>(forward),
      [&] {
        return [sx = SavedTensor(x), keep = plan(x, dims, name).keep_sizes, formula](
                   const Grads& g, const LambdaNode& self) {
          const Tensor x = self.unpack(sx);
          return Grads{formula(g[0].reshape(keep), x, self.saved_output(0).reshape(keep))};
        };
      },
      /*save_output=*/true);
}

}  // namespace

Tensor sum(const Tensor& x, IntList dims, bool keepdim) {
  EMBER_AUTOCAST(Float32, sum, x, x, dims, keepdim);
  return autograd::differentiable(
      "SumBackward", "sum", {&x},
      [&] { return sum_like(core_op(ops::sum), "sum", x, dims, keepdim); },
      [&] {
        return [keep = plan(x, dims, "sum").keep_sizes, sizes = x.sizes()](const Grads& g,
                                                                           const LambdaNode&) {
          return Grads{g[0].reshape(keep).expand(sizes)};
        };
      });
}

Tensor prod(const Tensor& x, IntList dims, bool keepdim) {
  EMBER_AUTOCAST(Float32, prod, x, x, dims, keepdim);
  return reduction_ad(
      "ProdBackward", "prod", x, dims,
      [&] { return sum_like(core_op(ops::prod), "prod", x, dims, keepdim); },
      [d = Shape(dims)](const Tensor& gk, const Tensor& x, const Tensor& yk) {
        return prod_backward(gk, x, yk, d);
      });
}

Tensor mean(const Tensor& x, IntList dims, bool keepdim) {
  EMBER_AUTOCAST(Float32, mean, x, x, dims, keepdim);
  check_floating(x, "mean");
  // Half types sum and divide in float32 so the count is not rounded to 11 bits.
  const Tensor in = is_half(x.dtype()) ? x.to(DType::Float32) : x;
  const int64_t n = reduced_count(in, dims, "mean");
  // n == 0 gives 0 / 0 = nan, as in PyTorch.
  Tensor r = div(sum(in, dims, keepdim), static_cast<double>(n));
  return r.to(x.dtype());
}

// nansum and nanmean: sum and mean of where(isnan(x), 0, x), the gradient 0 at the NaNs.
Tensor nansum(const Tensor& x, IntList dims, bool keepdim) {
  EMBER_CHECK_TYPE(x.defined(), "[nansum] undefined tensor argument");
  if (!is_floating(x.dtype())) return sum(x, dims, keepdim);
  return sum(where(eq(x, x), x, 0), dims, keepdim);
}
Tensor nanmean(const Tensor& x, IntList dims, bool keepdim) {
  check_floating(x, "nanmean");
  // Half types sum and divide in float32, as mean does.
  const Tensor in = is_half(x.dtype()) ? x.to(DType::Float32) : x;
  const Tensor count = sum(eq(in, in), dims, keepdim);
  return div(nansum(in, dims, keepdim), count).to(x.dtype());
}

namespace {
Tensor amax_amin(const Op& op, const char* name, const char* node, const Tensor& x, IntList dims,
                 bool keepdim) {
  return reduction_ad(
      node, name, x, dims,
      [&] {
        const Plan p = plan(x, dims, name);
        check_nonempty(p, x, dims, name);
        return run_reduce(op, p, x.dtype(), keepdim);
      },
      [d = Shape(dims)](const Tensor& gk, const Tensor& x, const Tensor& yk) {
        return extremum_backward(gk, x, yk, d);
      });
}

/** max(x)/min(x) with history: the gradient is split evenly among ties, as in PyTorch. */
Tensor extremum_all_ad(const Op& op, const char* name, const char* node, const Tensor& x) {
  return reduction_ad(
      node, name, x, {}, [&] { return extremum_all(op, name, x); },
      [](const Tensor& gk, const Tensor& x, const Tensor& yk) {
        return extremum_backward(gk, x, yk, {});
      });
}

/** Gradient of max/min(x, dim): g at the element each index names, 0 elsewhere. */
Tensor indexed_backward(const Tensor& g, const Tensor& idx, const Shape& sizes, int64_t dim) {
  if (sizes.empty()) return g.reshape({});
  Shape keep = sizes, pos_sizes(sizes.size(), 1);
  keep[dim] = 1;
  pos_sizes[dim] = sizes[dim];
  const Tensor pos = arange(sizes[dim], TensorOptions(DType::Int64, g.device())).view(pos_sizes);
  const Tensor hit = eq(pos, idx.reshape(keep));
  return where(hit, g.reshape(keep), scalar_like(g, 0.0));
}

/** max/min(x, dim): the values get history, the indices never do. */
std::tuple<Tensor, Tensor> extremum_dim_ad(const Op& op, const char* name, const char* node,
                                           const Tensor& x, int64_t dim, bool keepdim) {
  if (!autograd::any_requires_grad({&x})) return arg_reduce(op, name, x, dim, keepdim, true);
  std::tuple<Tensor, Tensor> r;
  {
    autograd::NoGradGuard below_autograd;
    r = arg_reduce(op, name, x, dim, keepdim, true);
  }
  Tensor& values = std::get<0>(r);
  if (!is_floating(values.dtype())) return r;
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), name);
  autograd::record(node, name, {&x}, {&values},
                   [si = SavedTensor(std::get<1>(r)), sizes = x.sizes(), d](
                       const Grads& g, const LambdaNode& self) {
                     return Grads{indexed_backward(g[0], self.unpack(si), sizes, d)};
                   });
  return r;
}
}  // namespace

Tensor amax(const Tensor& x, IntList dims, bool keepdim) {
  return amax_amin(core_op(ops::amax), "amax", "AmaxBackward", x, dims, keepdim);
}

Tensor amin(const Tensor& x, IntList dims, bool keepdim) {
  return amax_amin(core_op(ops::amin), "amin", "AminBackward", x, dims, keepdim);
}

Tensor max(const Tensor& x) {
  return extremum_all_ad(core_op(ops::amax), "max", "MaxBackward", x);
}
Tensor min(const Tensor& x) {
  return extremum_all_ad(core_op(ops::amin), "min", "MinBackward", x);
}

std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return extremum_dim_ad(core_op(ops::max_dim), "max", "MaxBackward", x, dim, keepdim);
}

std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return extremum_dim_ad(core_op(ops::min_dim), "min", "MinBackward", x, dim, keepdim);
}

Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce_flat(core_op(ops::argmax), "argmax", x, dim, keepdim);
}

Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce_flat(core_op(ops::argmin), "argmin", x, dim, keepdim);
}

// Note [Two-pass variance]
// var = sum((x - mean)^2) / (n - correction), with the mean subtracted first: the one-pass
// E[x^2] - E[x]^2 cancels catastrophically when the mean is large against the spread. A
// non-positive n - correction divides by zero (nan, or inf for a nonzero sum) like PyTorch.
namespace {
/** Variance in x's dtype, or float32 for the half types (callers cast back). */
Tensor variance(const Tensor& x, IntList dims, int64_t correction, bool keepdim, const char* name) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK_TYPE(is_floating(x.dtype()),
                   "[{}] std and var only support floating point dtypes: got {} (convert with "
                   ".to(float32) first)",
                   name, x.dtype());
  const Tensor in = is_half(x.dtype()) ? x.to(DType::Float32) : x;
  const int64_t n = reduced_count(in, dims, name);
  const Tensor centered = sub(in, mean(in, dims, /*keepdim=*/true));
  const Tensor ss = sum(mul(centered, centered), dims, keepdim);
  const double denom = std::max(0.0, static_cast<double>(n) - static_cast<double>(correction));
  return div(ss, denom);
}
}  // namespace

Tensor var(const Tensor& x, IntList dims, int64_t correction, bool keepdim) {
  return variance(x, dims, correction, keepdim, "var").to(x.dtype());
}

Tensor std(const Tensor& x, IntList dims, int64_t correction, bool keepdim) {
  return reduction_ad(
      "StdBackward", "std", x, dims,
      [&] { return sqrt(variance(x, dims, correction, keepdim, "std")).to(x.dtype()); },
      [d = Shape(dims), correction](const Tensor& gk, const Tensor& x, const Tensor& yk) {
        const int64_t n = reduced_count(x, d, "std");
        const double denom =
            std::max(0.0, static_cast<double>(n) - static_cast<double>(correction));
        const Tensor std_zero = eq(yk, 0.0);
        const Tensor safe = where(std_zero, scalar_like(yk, 1.0), yk);
        const Tensor gv = where(std_zero, scalar_like(yk, 0.0), div(gk, mul(safe, 2.0)));
        return var_backward(gv, x, d, denom);
      });
}

namespace {
Tensor norm_forward(const Tensor& x, double p, IntList dims, bool keepdim) {
  EMBER_CHECK_TYPE(is_floating(x.dtype()),
                   "[norm] expected a floating point tensor as input: got {} (convert with "
                   ".to(float32) first)",
                   x.dtype());
  EMBER_CHECK(!std::isnan(p), "[norm] the order p must not be nan");
  const Plan pl = plan(x, dims, "norm");  // checks dims under this op's name
  if (std::isinf(p)) {
    EMBER_CHECK(pl.zero_dim < 0,
                "[norm] cannot compute the {}inf norm over a zero-size dim: dim {} of input of "
                "shape {} has size 0 (the operation has no identity)",
                p < 0 ? "-" : "", pl.zero_dim, shape_str(x.sizes()));
    return p > 0 ? amax(abs(x), dims, keepdim) : amin(abs(x), dims, keepdim);
  }
  if (p == 0) return sum(ne(x, 0), dims, keepdim).to(x.dtype());
  if (p == 1) return sum(abs(x), dims, keepdim);
  if (p == 2) return sqrt(sum(mul(x, x), dims, keepdim));
  return pow(sum(pow(abs(x), p), dims, keepdim), 1.0 / p);
}
}  // namespace

Tensor norm(const Tensor& x, double p, IntList dims, bool keepdim) {
  EMBER_CHECK_TYPE(x.defined(), "[norm] undefined tensor argument");
  return reduction_ad(
      "NormBackward", "norm", x, dims, [&] { return norm_forward(x, p, dims, keepdim); },
      [d = Shape(dims), p](const Tensor& gk, const Tensor& x, const Tensor& yk) {
        return norm_backward(gk, x, yk, p, d);
      });
}

Tensor all(const Tensor& x, IntList dims, bool keepdim) {
  return run_reduce(core_op(ops::all), plan(x, dims, "all"), DType::Bool, keepdim);
}

Tensor any(const Tensor& x, IntList dims, bool keepdim) {
  return run_reduce(core_op(ops::any), plan(x, dims, "any"), DType::Bool, keepdim);
}

// Note [Stable logsumexp]
// lse = m + log(sum(exp(x - m))) with m the max over the dims, so exp never overflows. A row
// whose max is infinite uses m = 0 instead: all -inf gives log(0) = -inf, a +inf gives +inf,
// and neither produces inf - inf = nan. An empty reduction is log(0) = -inf.
namespace {
Tensor logsumexp_forward(const Tensor& x, IntList dims, bool keepdim) {
  const Tensor in = is_floating(x.dtype()) ? x : x.to(default_dtype());
  const Plan p = plan(in, dims, "logsumexp");
  if (p.zero_dim >= 0) {
    return full(keepdim ? p.keep_sizes : p.out_sizes, -std::numeric_limits<double>::infinity(),
                {in.dtype(), in.device()});
  }
  Tensor m = amax(in, dims, /*keepdim=*/true);
  m = where(eq(abs(m), std::numeric_limits<double>::infinity()), zeros_like(m), m);
  const Tensor s = log(sum(exp(sub(in, m)), dims, /*keepdim=*/true));
  const Tensor r = add(s, m);
  return keepdim ? r : r.view(p.out_sizes);
}
}  // namespace

Tensor logsumexp(const Tensor& x, IntList dims, bool keepdim) {
  EMBER_CHECK_TYPE(x.defined(), "[logsumexp] undefined tensor argument");
  return reduction_ad(
      "LogsumexpBackward", "logsumexp", x, dims,
      [&] { return logsumexp_forward(x, dims, keepdim); },
      [](const Tensor& gk, const Tensor& x, const Tensor& yk) { return mul(gk, exp(sub(x, yk))); });
}

namespace {
// The running sum or product (op) of x along d.
Tensor cumulative_forward(ops::Id op, const Tensor& x, int64_t d) {
  const int64_t nd = x.dim();
  const Tensor in = is_floating(x.dtype()) ? x : x.to(DType::Int64);
  if (nd == 0) return in.clone();
  const Tensor moved = d == nd - 1 ? in : in.transpose(d, nd - 1);
  Tensor y = empty(moved.sizes(), {in.dtype(), in.device()});
  if (y.numel() > 0) run_kernel(core_op(op), in.dtype(), {&moved}, {&y});
  return d == nd - 1 ? y : y.transpose(d, nd - 1);
}
}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim) {
  EMBER_AUTOCAST(Float32, cumsum, x, x, dim);
  EMBER_CHECK_TYPE(x.defined(), "[cumsum] undefined tensor argument");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "cumsum");  // 0-d: a copy
  return autograd::differentiable(
      "CumsumBackward", "cumsum", {&x}, [&] { return cumulative_forward(ops::cumsum, x, d); },
      [&] {
        return [d, scalar = x.dim() == 0](const Grads& g, const LambdaNode&) {
          if (scalar) return Grads{g[0]};
          // The reversed running sum: out_i = sum_{j >= i} g_j.
          const int64_t dims[1] = {d};
          const Tensor total = sum(g[0], IntList(dims, 1), /*keepdim=*/true);
          return Grads{add(sub(total, cumsum(g[0], d)), g[0])};
        };
      });
}

namespace {
// sum_{j >= i} t_j along d: the reversed running sum, as sum(t) - cumsum(t) + t.
Tensor reverse_cumsum(const Tensor& t, int64_t d) {
  const int64_t dims[1] = {d};
  return add(sub(sum(t, IntList(dims, 1), /*keepdim=*/true), cumsum(t, d)), t);
}
}  // namespace

// Note [The gradient of cumprod]
// dx_i = sum_{j >= i} g_j prod_{k <= j, k != i} x_k. Where no x before or at i is 0, that is
// reverse_cumsum(g * y)_i / x_i. Past the first zero f of a line every term holds x_f = 0, so
// the gradient is 0 there; at f itself the terms are the products with x_f left out, which is
// reverse_cumsum(g * cumprod(x with x_f = 1))_f (later zeros stay in, rightly). Every step is a
// public op, so the gradient has a gradient too; that second derivative is exact where x has
// no zero (at a zero, the mask that zeroes the gradient past it is not differentiated).
Tensor cumprod(const Tensor& x, int64_t dim) {
  EMBER_AUTOCAST(Float32, cumprod, x, x, dim);
  EMBER_CHECK_TYPE(x.defined(), "[cumprod] undefined tensor argument");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "cumprod");
  return autograd::differentiable(
      "CumprodBackward", "cumprod", {&x}, [&] { return cumulative_forward(ops::cumprod, x, d); },
      [&] {
        return [sx = SavedTensor(x), d](const Grads& g, const LambdaNode& self) {
          const Tensor x = self.unpack(sx);
          if (x.dim() == 0) return Grads{g[0]};
          const Tensor zero = eq(x, 0);
          const Tensor zeros_so_far = cumsum(zero, d);  // int64
          const Tensor before_first = eq(zeros_so_far, 0);
          const Tensor first = logical_and(zero, eq(zeros_so_far, 1));
          const Tensor safe = where(zero, ones_like(x), x);
          const Tensor y = cumprod(x, d);
          const Tensor plain = div(reverse_cumsum(mul(g[0], y), d), safe);
          const Tensor at_first =
              reverse_cumsum(mul(g[0], cumprod(where(first, ones_like(x), x), d)), d);
          return Grads{where(before_first, plain, where(first, at_first, zeros_like(plain)))};
        };
      });
}

Tensor count_nonzero(const Tensor& x, IntList dims) {
  return sum(ne(x, 0), dims);
}

// Note [Trapezoid as PyTorch computes it]
// trapezoid and cumulative_trapezoid follow PyTorch's formulas, so that results (and the dtype
// an integer y promotes to) agree: at spacing dx, (sum(y) - (y[0] + y[-1]) / 2) * dx and the
// running sums of dx / 2 * (y[i] + y[i+1]); at points x, the sum (running sum) of
// (x[i+1] - x[i]) * (y[i] + y[i+1]) / 2.
namespace {

// y's dim, wrapped, for op; y defined and not bool.
int64_t trapezoid_dim(const Tensor& y, int64_t dim, const char* op) {
  EMBER_CHECK_TYPE(y.defined(), "[{}] undefined tensor argument", op);
  EMBER_CHECK_TYPE(y.dtype() != DType::Bool, "[{}] a bool y is not supported", op);
  return wrap_dim(dim, y.dim(), op);
}

// (t[:-1], t[1:]) along d: each sample and the next.
std::pair<Tensor, Tensor> neighbours(const Tensor& t, int64_t d) {
  return {t.slice(d, 0, -1), t.slice(d, 1, std::numeric_limits<int64_t>::max())};
}

// The spacing of sample points x along d, laid out against y: a 1-d x along d, an x of fewer
// dims than y aligned at y's last dims.
Tensor trapezoid_spacing(const Tensor& y, const Tensor& x, int64_t d, const char* op) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", op);
  EMBER_CHECK_TYPE(x.dtype() != DType::Bool, "[{}] a bool x is not supported", op);
  Tensor laid = x;
  if (x.dim() == 1) {
    EMBER_CHECK(x.size(0) == y.size(d),
                "[{}] a 1-d x needs one point per element of y along dim {}: got {} points for {}",
                op, d, x.size(0), y.size(d));
    std::vector<int64_t> shape(y.dim(), 1);
    shape[d] = x.size(0);
    laid = x.reshape(shape);
  } else if (x.dim() < y.dim()) {
    std::vector<int64_t> shape(y.dim() - x.dim(), 1);
    shape.insert(shape.end(), x.sizes().begin(), x.sizes().end());
    laid = x.reshape(shape);
  }
  EMBER_CHECK(laid.dim() != y.dim() || laid.size(d) == y.size(d),
              "[{}] x needs one point per element of y along dim {}: x {}, y {}", op, d,
              shape_str(x.sizes()), shape_str(y.sizes()));
  const auto [left, right] = neighbours(laid, d);
  return sub(right, left);
}

// y[i] + y[i+1] along d.
Tensor pair_sums(const Tensor& y, int64_t d) {
  const auto [left, right] = neighbours(y, d);
  return add(left, right);
}

// Zeros of y's dtype with dim d removed: the integral over no samples.
Tensor no_samples(const Tensor& y, int64_t d) {
  std::vector<int64_t> shape(y.sizes().begin(), y.sizes().end());
  shape.erase(shape.begin() + d);
  return zeros(shape, TensorOptions{y.dtype(), y.device()});
}

}  // namespace

Tensor trapezoid(const Tensor& y, Scalar dx, int64_t dim) {
  const int64_t d = trapezoid_dim(y, dim, "trapezoid");
  if (y.size(d) == 0) return no_samples(y, d);
  const Tensor ends = add(y.select(d, 0), y.select(d, -1));
  return mul(sub(sum(y, {d}), mul(ends, 0.5)), dx);
}

Tensor trapezoid(const Tensor& y, const Tensor& x, int64_t dim) {
  const int64_t d = trapezoid_dim(y, dim, "trapezoid");
  const Tensor dx = trapezoid_spacing(y, x, d, "trapezoid");
  if (y.size(d) == 0) return no_samples(y, d);
  return div(sum(mul(dx, pair_sums(y, d)), {d}), 2.0);
}

Tensor cumulative_trapezoid(const Tensor& y, Scalar dx, int64_t dim) {
  const int64_t d = trapezoid_dim(y, dim, "cumulative_trapezoid");
  return cumsum(mul(pair_sums(y, d), dx.to_double() / 2.0), d);
}

Tensor cumulative_trapezoid(const Tensor& y, const Tensor& x, int64_t dim) {
  const int64_t d = trapezoid_dim(y, dim, "cumulative_trapezoid");
  const Tensor dx = trapezoid_spacing(y, x, d, "cumulative_trapezoid");
  return cumsum(div(mul(dx, pair_sums(y, d)), 2.0), d);
}

Tensor sum_to_size(const Tensor& x, IntList sizes) {
  EMBER_CHECK_TYPE(x.defined(), "[sum_to_size] undefined tensor argument");
  const int64_t lead = x.dim() - static_cast<int64_t>(sizes.size());
  bool expandable = lead >= 0;
  for (int64_t d = std::max<int64_t>(lead, 0); expandable && d < x.dim(); ++d) {
    expandable = sizes[d - lead] == 1 || sizes[d - lead] == x.size(d);
  }
  EMBER_CHECK(expandable, "[sum_to_size] size {} is not expandable to size {}", shape_str(sizes),
              shape_str(x.sizes()));
  return autograd::sum_to(x, sizes);
}

// Note [gradient as NumPy and PyTorch compute it]
// Inside, at coordinates with steps l = x[i] - x[i-1] and r = x[i+1] - x[i], the second-order
// estimate is (-r / (l (l + r))) y[i-1] + ((r - l) / (l r)) y[i] + (l / (r (l + r))) y[i+1],
// which at a uniform spacing h is (y[i+1] - y[i-1]) / (2 h), computed so. The ends take the
// first difference (edge_order 1) or the second-order one-sided estimate over three samples
// (edge_order 2), with NumPy's coefficients; PyTorch's are the same.
namespace {

// The per-dim spacing of gradient(): h, or coordinates x (defined).
struct Spacing {
  double h = 1;
  Tensor x;
};

std::vector<Tensor> gradient_of(const Tensor& y_in, const std::vector<Spacing>& spacing,
                                IntList dims_in, int64_t edge_order) {
  const char* op = "gradient";
  EMBER_CHECK_TYPE(y_in.defined(), "[gradient] undefined tensor argument");
  EMBER_CHECK_TYPE(y_in.dtype() != DType::Bool, "[gradient] a bool input is not supported");
  EMBER_CHECK(edge_order == 1 || edge_order == 2,
              "[gradient] only edge_order 1 and 2 are supported: got {}", edge_order);
  const Tensor y = is_floating(y_in.dtype()) ? y_in : y_in.to(default_dtype());
  std::vector<int64_t> dims;
  if (dims_in.empty()) {
    for (int64_t d = 0; d < y.dim(); ++d) dims.push_back(d);
  } else {
    for (int64_t d : dims_in) dims.push_back(wrap_dim(d, y.dim(), op));
  }
  EMBER_CHECK(spacing.size() == 1 || spacing.size() == dims.size(),
              "[gradient] expected spacing to be a number or to have one entry per dim: got {} "
              "for {} dims",
              spacing.size(), dims.size());
  std::vector<Tensor> out;
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t d = dims[k], n = y.size(d);
    const Spacing& s = spacing.size() == 1 ? spacing[0] : spacing[k];
    EMBER_CHECK(n >= edge_order + 1,
                "[gradient] each dimension size must be at least edge_order+1: dim {} has size {} "
                "(edge_order {})",
                d, n, edge_order);
    const auto at = [&](int64_t i, int64_t len) { return y.narrow(d, i < 0 ? n + i : i, len); };
    // a y[i] + b y[i+1] + c y[i+2] from position i on, len positions.
    const auto comb = [&](int64_t i, int64_t len, const Tensor& a, const Tensor& b,
                          const Tensor& c) {
      return add(add(mul(at(i, len), a), mul(at(i + 1, len), b)), mul(at(i + 2, len), c));
    };
    Tensor first, inner, last;
    if (!s.x.defined()) {
      const double h = s.h;
      inner = div(sub(at(2, n - 2), at(0, n - 2)), 2 * h);
      if (edge_order == 1) {
        first = div(sub(at(1, 1), at(0, 1)), h);
        last = div(sub(at(-1, 1), at(-2, 1)), h);
      } else {
        first = div(add(add(mul(at(0, 1), -1.5), mul(at(1, 1), 2.0)), mul(at(2, 1), -0.5)), h);
        last = div(add(add(mul(at(-3, 1), 0.5), mul(at(-2, 1), -2.0)), mul(at(-1, 1), 1.5)), h);
      }
    } else {
      EMBER_CHECK(s.x.dim() == 1 && s.x.size(0) == n,
                  "[gradient] the coordinates of dim {} must be 1-d with {} points: got shape {}",
                  d, n, shape_str(s.x.sizes()));
      std::vector<int64_t> laid(y.dim(), 1);
      const auto along = [&](const Tensor& v) {
        laid[d] = v.numel();
        return v.reshape(laid);
      };
      const Tensor x = s.x.to(y.dtype());
      const auto [left_x, right_x] = neighbours(x, 0);
      const Tensor dx = sub(right_x, left_x);
      const Tensor l = dx.slice(0, 0, n - 2), r = dx.slice(0, 1, n - 1), lr = add(l, r);
      inner = comb(0, n - 2, along(div(neg(r), mul(l, lr))), along(div(sub(r, l), mul(l, r))),
                   along(div(l, mul(r, lr))));
      if (edge_order == 1) {
        first = div(sub(at(1, 1), at(0, 1)), dx.select(0, 0));
        last = div(sub(at(-1, 1), at(-2, 1)), dx.select(0, n - 2));
      } else {
        const Tensor a = dx.select(0, 0), b = dx.select(0, 1), ab = add(a, b);
        first = comb(0, 1, div(neg(add(mul(a, 2.0), b)), mul(a, ab)), div(ab, mul(a, b)),
                     div(neg(a), mul(b, ab)));
        const Tensor p = dx.select(0, n - 3), q = dx.select(0, n - 2), pq = add(p, q);
        last = comb(n - 3, 1, div(q, mul(p, pq)), div(neg(pq), mul(p, q)),
                    div(add(mul(q, 2.0), p), mul(q, pq)));
      }
    }
    out.push_back(cat({first, inner, last}, d));
  }
  return out;
}

}  // namespace

std::vector<Tensor> gradient(const Tensor& y, const std::vector<double>& spacing, IntList dims,
                             int64_t edge_order) {
  std::vector<Spacing> s;
  for (double h : spacing) s.push_back({h, Tensor()});
  return gradient_of(y, s, dims, edge_order);
}

std::vector<Tensor> gradient(const Tensor& y, const std::vector<Tensor>& coordinates, IntList dims,
                             int64_t edge_order) {
  std::vector<Spacing> s;
  for (const Tensor& x : coordinates) {
    EMBER_CHECK_TYPE(x.defined(), "[gradient] undefined coordinates");
    s.push_back({1, x});
  }
  return gradient_of(y, s, dims, edge_order);
}

namespace {

// A weight vector of cov: 1-d (or 0-d), one per observation, non-negative, of the kind named.
void check_cov_weights(const Tensor& w, int64_t observations, const char* name, bool integral) {
  EMBER_CHECK(w.dim() <= 1, "[cov] {} must be 1-d: got shape {}", name, shape_str(w.sizes()));
  EMBER_CHECK(w.numel() == observations,
              "[cov] {} needs one weight per observation: got {} for {} observations", name,
              w.numel(), observations);
  EMBER_CHECK_TYPE(integral ? is_integral(w.dtype()) : is_floating(w.dtype()),
                   "[cov] {} must be {}: got {}", name, integral ? "integers" : "floating-point",
                   w.dtype());
  autograd::NoGradGuard no_grad;
  EMBER_CHECK(w.numel() == 0 || amin(w).item<double>() >= 0,
              "[cov] {} must be non-negative: got a minimum of {}", name, amin(w).item<double>());
}

}  // namespace

// As PyTorch computes it: weights w = fweights * aweights, the weighted mean, and the normaliser
// sum(w) - correction * sum(w * aweights) / sum(w) (sum(w) - correction without aweights,
// observations - correction without weights), clamped at 0.
Tensor cov(const Tensor& input, int64_t correction, const Tensor& fweights,
           const Tensor& aweights) {
  EMBER_CHECK_TYPE(input.defined(), "[cov] undefined tensor argument");
  EMBER_CHECK(input.dim() <= 2,
              "[cov] expects at most 2 dims (variables by observations): got shape {}",
              shape_str(input.sizes()));
  Tensor in = input.dim() < 2 ? input.reshape({1, -1}) : input;
  if (!is_floating(in.dtype())) in = in.to(default_dtype());
  const int64_t observations = in.size(1);
  Tensor w, a;
  if (fweights.defined()) {
    check_cov_weights(fweights, observations, "fweights", true);
    w = fweights.reshape({observations});
  }
  if (aweights.defined()) {
    check_cov_weights(aweights, observations, "aweights", false);
    a = aweights.reshape({observations});
    w = w.defined() ? mul(w, a) : a;
  }
  Tensor mean_of, normaliser;
  if (w.defined()) {
    const Tensor w_sum = sum(w);
    mean_of = div(sum(mul(in, w), {1}), w_sum);
    normaliser = w_sum;
    if (correction != 0) {
      normaliser = a.defined() ? sub(w_sum, mul(div(sum(mul(w, a)), w_sum), correction))
                               : sub(w_sum, correction);
    }
  } else {
    mean_of = mean(in, {1});
    normaliser = scalar_tensor(observations - correction, TensorOptions{in.dtype(), in.device()});
  }
  normaliser = where(le(normaliser, 0), zeros_like(normaliser), normaliser);
  const Tensor centred = sub(in, mean_of.unsqueeze(1));
  const Tensor c = matmul(centred, (w.defined() ? mul(centred, w) : centred).t());
  return div(c, normaliser).squeeze();
}

Tensor corrcoef(const Tensor& input) {
  Tensor c = cov(input);
  if (c.dim() == 0) return div(c, c);
  const Tensor stddev = sqrt(diagonal(c));
  c = div(div(c, stddev.unsqueeze(1)), stddev.unsqueeze(0));
  return clamp(c, Scalar(-1), Scalar(1));
}

}  // namespace ember
