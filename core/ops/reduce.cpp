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
//   "cumsum": the core moves the dim last with a transpose; y has the moved shape, contiguous,
//     x's dtype (integer and bool inputs are converted to int64 first); ints unused.
// Kernels are keyed by x's dtype. mean, var, std, norm, logsumexp, max/min are composites.
#include "core/ops/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/dispatch/call.h"
#include "core/ops/elementwise.h"
#include "core/ops/factory.h"

namespace ember {
namespace {

#define EMBER_OP(name)                      \
  const Op& name##_op() {                   \
    static const Op& op = op_handle(#name); \
    return op;                              \
  }
EMBER_OP(sum)
EMBER_OP(prod)
EMBER_OP(amax)
EMBER_OP(amin)
EMBER_OP(all)
EMBER_OP(any)
EMBER_OP(argmax)
EMBER_OP(argmin)
EMBER_OP(max_dim)
EMBER_OP(min_dim)
EMBER_OP(cumsum)
#undef EMBER_OP

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
  EMBER_CHECK(x.defined(), "[{}] undefined tensor argument", name);
  const int64_t nd = x.dim();
  EMBER_CHECK(nd <= 64, "[{}] tensors of more than 64 dims are not supported: got {}", name, nd);
  const uint64_t all_dims = nd == 64 ? ~uint64_t{0} : (uint64_t{1} << nd) - 1;
  uint64_t reduced = dims.empty() ? all_dims : 0;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, nd, name);
    if (nd == 0) continue;  // dim 0 / -1 of a 0-d tensor: nothing to move
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
  if (y.numel() > 0) {
    const int64_t k = p.k;
    run_kernel(op, p.xp.dtype(), {&p.xp}, {&y}, {{&k, 1}, {}});
  }
  return finish(y, p, keepdim);
}

void check_nonempty(const Plan& p, const Tensor& x, const char* name) {
  EMBER_CHECK(p.zero_dim < 0,
              "[{}] cannot reduce over a zero-size dim: dim {} of input of shape {} has size 0 "
              "(the operation has no identity)",
              name, p.zero_dim, shape_str(x.sizes()));
}

void check_floating(const Tensor& x, const char* name) {
  EMBER_CHECK(x.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK(is_floating(x.dtype()),
              "[{}] could not infer output dtype: input dtype must be floating point, got {} "
              "(convert with .to(float32) first)",
              name, x.dtype());
}

bool is_half(DType d) {
  return d == DType::Float16 || d == DType::BFloat16;
}

/** sum or prod: integers and bool accumulate in int64. */
Tensor sum_like(const Op& op, const char* name, const Tensor& x, IntList dims, bool keepdim) {
  EMBER_CHECK(x.defined(), "[{}] undefined tensor argument", name);
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
  EMBER_CHECK(x.defined(), "[{}] undefined tensor argument", name);
  const int64_t nd = x.dim();
  const int64_t d = wrap_dim(dim, nd, name);
  // A 0-d tensor reduces like a 1-element vector; the result stays 0-d.
  const Tensor x1 = nd == 0 ? x.reshape({1}) : x;
  const int64_t ref[1] = {d};
  const Plan p = plan(x1, IntList(ref, 1), name);
  EMBER_CHECK(p.zero_dim < 0,
              "[{}] cannot reduce over a zero-size dim: dim {} of input of shape {} has size 0 "
              "(the operation has no identity)",
              name, d, shape_str(x.sizes()));
  Tensor idx = empty(p.out_sizes, {DType::Int64, x.device()});
  Tensor val = values ? empty(p.out_sizes, {x.dtype(), x.device()}) : Tensor();
  if (idx.numel() > 0) {
    const int64_t k = 1;
    if (values) {
      run_kernel(op, x.dtype(), {&p.xp}, {&val, &idx}, {{&k, 1}, {}});
    } else {
      run_kernel(op, x.dtype(), {&p.xp}, {&idx}, {{&k, 1}, {}});
    }
  }
  if (nd == 0) return {values ? val : Tensor(), idx};
  return {values ? finish(val, p, keepdim) : Tensor(), finish(idx, p, keepdim)};
}

Tensor arg_reduce_flat(const Op& op, const char* name, const Tensor& x, std::optional<int64_t> dim,
                       bool keepdim) {
  EMBER_CHECK(x.defined(), "[{}] undefined tensor argument", name);
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
  EMBER_CHECK(x.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK(x.numel() > 0,
              "[{}] cannot reduce over a zero-size dim: input of shape {} has no elements "
              "(specify a dim)",
              name, shape_str(x.sizes()));
  return run_reduce(op, plan(x, {}, name), x.dtype(), false);
}

}  // namespace

Tensor sum(const Tensor& x, IntList dims, bool keepdim) {
  return sum_like(sum_op(), "sum", x, dims, keepdim);
}

Tensor prod(const Tensor& x, IntList dims, bool keepdim) {
  return sum_like(prod_op(), "prod", x, dims, keepdim);
}

Tensor mean(const Tensor& x, IntList dims, bool keepdim) {
  check_floating(x, "mean");
  // Half types sum and divide in float32 so the count is not rounded to 11 bits.
  const Tensor in = is_half(x.dtype()) ? x.to(DType::Float32) : x;
  const int64_t n = reduced_count(in, dims, "mean");
  // n == 0 gives 0 / 0 = nan, as in PyTorch.
  Tensor r = div(sum(in, dims, keepdim), static_cast<double>(n));
  return r.to(x.dtype());
}

Tensor amax(const Tensor& x, IntList dims, bool keepdim) {
  const Plan p = plan(x, dims, "amax");
  check_nonempty(p, x, "amax");
  return run_reduce(amax_op(), p, x.dtype(), keepdim);
}

Tensor amin(const Tensor& x, IntList dims, bool keepdim) {
  const Plan p = plan(x, dims, "amin");
  check_nonempty(p, x, "amin");
  return run_reduce(amin_op(), p, x.dtype(), keepdim);
}

Tensor max(const Tensor& x) {
  return extremum_all(amax_op(), "max", x);
}
Tensor min(const Tensor& x) {
  return extremum_all(amin_op(), "min", x);
}

std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return arg_reduce(max_dim_op(), "max", x, dim, keepdim, true);
}

std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return arg_reduce(min_dim_op(), "min", x, dim, keepdim, true);
}

Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce_flat(argmax_op(), "argmax", x, dim, keepdim);
}

Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce_flat(argmin_op(), "argmin", x, dim, keepdim);
}

// Note [Two-pass variance]
// var = sum((x - mean)^2) / (n - correction), with the mean subtracted first: the one-pass
// E[x^2] - E[x]^2 cancels catastrophically when the mean is large against the spread. A
// non-positive n - correction divides by zero (nan, or inf for a nonzero sum) like PyTorch.
namespace {
/** Variance in x's dtype, or float32 for the half types (callers cast back). */
Tensor variance(const Tensor& x, IntList dims, int64_t correction, bool keepdim, const char* name) {
  EMBER_CHECK(x.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK(is_floating(x.dtype()),
              "[{}] std and var only support floating point dtypes: got {} (convert with "
              ".to(float32) first)",
              name, x.dtype());
  const Tensor in = is_half(x.dtype()) ? x.to(DType::Float32) : x;
  const int64_t n = reduced_count(in, dims, name);
  const Tensor centered = sub(in, mean(in, dims, /*keepdim=*/true));
  const Tensor ss = sum(mul(centered, centered), dims, keepdim);
  const double denom = std::max<double>(0.0, static_cast<double>(n - correction));
  return div(ss, denom);
}
}  // namespace

Tensor var(const Tensor& x, IntList dims, int64_t correction, bool keepdim) {
  return variance(x, dims, correction, keepdim, "var").to(x.dtype());
}

Tensor std(const Tensor& x, IntList dims, int64_t correction, bool keepdim) {
  return sqrt(variance(x, dims, correction, keepdim, "std")).to(x.dtype());
}

Tensor norm(const Tensor& x, double p, IntList dims, bool keepdim) {
  EMBER_CHECK(x.defined(), "[norm] undefined tensor argument");
  EMBER_CHECK(is_floating(x.dtype()),
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

Tensor all(const Tensor& x, IntList dims, bool keepdim) {
  return run_reduce(all_op(), plan(x, dims, "all"), DType::Bool, keepdim);
}

Tensor any(const Tensor& x, IntList dims, bool keepdim) {
  return run_reduce(any_op(), plan(x, dims, "any"), DType::Bool, keepdim);
}

// Note [Stable logsumexp]
// lse = m + log(sum(exp(x - m))) with m the max over the dims, so exp never overflows. A row
// whose max is infinite uses m = 0 instead: all -inf gives log(0) = -inf, a +inf gives +inf,
// and neither produces inf - inf = nan. An empty reduction is log(0) = -inf.
Tensor logsumexp(const Tensor& x, IntList dims, bool keepdim) {
  EMBER_CHECK(x.defined(), "[logsumexp] undefined tensor argument");
  const Tensor in = is_floating(x.dtype()) ? x : x.to(kDefaultFloat);
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

Tensor cumsum(const Tensor& x, int64_t dim) {
  EMBER_CHECK(x.defined(), "[cumsum] undefined tensor argument");
  const int64_t nd = x.dim();
  const int64_t d = wrap_dim(dim, nd, "cumsum");
  const Tensor in = is_floating(x.dtype()) ? x : x.to(DType::Int64);
  if (nd == 0) return in.clone();
  const Tensor moved = d == nd - 1 ? in : in.transpose(d, nd - 1);
  Tensor y = empty(moved.sizes(), {in.dtype(), in.device()});
  if (y.numel() > 0) run_kernel(cumsum_op(), in.dtype(), {&moved}, {&y});
  return d == nd - 1 ? y : y.transpose(d, nd - 1);
}

}  // namespace ember
