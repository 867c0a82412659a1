// Normalisation layers. With xhat = (x - mean) * invstd and invstd = 1 / sqrt(var + eps)
// (biased variance), every op computes y = xhat * weight + bias:
//   batch_norm: statistics per channel over every dim but 1 (batch statistics in training, the
//               running ones in eval); weight and bias per channel.
//   layer_norm: statistics per row over the trailing normalized_shape; weight and bias of that
//               shape, per element.
//   group_norm: x [N, C, ...], statistics per (sample, group of C / G channels); weight and bias
//               per channel.
// local_response_norm: y = x / (k + alpha * avg of x^2 over channels [c - size/2, c + (size-1)/2],
//               zero-padded)^beta, as PyTorch's: one avg_pool2d with a (size, 1) window over
//               x^2 viewed [N, 1, C, rest] and padded along C (no kernel of its own).
// Training batch_norm also updates running_mean/running_var in place (not recorded by autograd):
// new = (1 - momentum) * old + momentum * batch, with the UNBIASED batch variance.
//
// Kernel contract: all tensors contiguous, of x's floating dtype; weight and bias are always
// passed (the core makes ones / zeros when they are undefined). Empty inputs never reach a
// kernel. floats {eps}.
//   "batch_norm": x viewed [N, C, S]. Training (ints {1}): {x, weight [C], bias [C]} ->
//     {y, mean [C], var [C] (biased)}. Eval (ints {0}): {x, weight, bias, mean [C], var [C]} ->
//     {y}, normalising with the given statistics.
//   "batch_norm_backward": {dy, x, weight, mean, var} -> {dx, dweight [C], dbias [C]}; ints
//     {training}: in eval the statistics are constants and dx = dy * weight * invstd.
//   "layer_norm", "group_norm": x viewed [R, D] with D = K * S, row r's element (k, s) scaled by
//     weight[(r % G) * K + k]; {x, weight [G*K], bias [G*K]} -> {y, mean [R], invstd [R]};
//     ints {G, K, S}. layer_norm passes {1, D, 1}; group_norm {G, C / G, spatial size}.
//   "layer_norm_backward", "group_norm_backward": {dy, x, weight, mean, invstd} ->
//     {dx, dweight [G*K], dbias [G*K]}; the same ints.
// backward (per normalised set of m elements, g = dy * weight):
//   dx = invstd * (g - mean(g) - xhat * mean(g * xhat)),  dweight = sum(dy * xhat),
//   dbias = sum(dy), the sums running over every set that shares the parameter.
#include "ember/ops/norm.h"

#include <array>

#include <optional>

#include "core/dispatch/call.h"
#include "ember/amp/autocast.h"
#include "ember/autograd/record.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/nn.h"
#include "ember/ops/pool.h"
#include "ember/ops/reduce.h"

namespace ember {
namespace {

using autograd::LambdaNode;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

void check_input(const char* name, const Tensor& x, double eps) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK_TYPE(is_floating(x.dtype()),
                   "[{}] expected a floating input: got dtype {} (convert with .to(ember::f32))",
                   name, x.dtype());
  EMBER_CHECK(eps > 0, "[{}] eps must be positive: got {}", name, eps);
}

// normalized_shape of layer_norm and rms_norm: at least one dim, the input's trailing dims.
void check_trailing(const char* name, const Tensor& x, IntList normalized_shape) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  EMBER_CHECK(k >= 1, "[{}] normalized_shape must have at least 1 dim: got {}", name,
              shape_str(normalized_shape));
  bool match = x.dim() >= k;
  for (int64_t i = 0; match && i < k; ++i) {
    match = x.size(x.dim() - k + i) == normalized_shape[i];
  }
  EMBER_CHECK(match,
              "[{}] normalized_shape {} does not match the trailing dims of the input shape {}",
              name, shape_str(normalized_shape), shape_str(x.sizes()));
}

// A per-channel (or per-element) parameter: undefined, or `sizes` exactly.
// An affine parameter (weight, bias) has the input's dtype, or float32 for a float16 or bfloat16
// input (PyTorch's mixed types); any other pair is an error, not a promotion (Note [Ops that take
// one dtype] in core/dispatch/call.cpp). Running statistics keep their own floating dtype.
void check_param(const char* name, const char* what, const Tensor& t, IntList sizes,
                 std::optional<DType> x_dtype) {
  if (!t.defined()) return;
  EMBER_CHECK(t.sizes() == Shape(sizes), "[{}] {} should have shape {}: got shape {}", name, what,
              shape_str(sizes), shape_str(t.sizes()));
  EMBER_CHECK_TYPE(is_floating(t.dtype()), "[{}] {} must be floating: got dtype {}", name, what,
                   t.dtype());
  if (!x_dtype) return;
  const bool mixed =
      (*x_dtype == DType::Float16 || *x_dtype == DType::BFloat16) && t.dtype() == DType::Float32;
  EMBER_CHECK_TYPE(t.dtype() == *x_dtype || mixed,
                   "[{}] expected {} of the input's dtype {}: got {} (convert it with .to())", name,
                   what, *x_dtype, t.dtype());
}

// `t` as a contiguous [n] tensor of `dtype`, or `fill` when undefined.
Tensor param_or(const Tensor& t, int64_t n, double fill, DType dtype, Device device) {
  if (!t.defined()) return full({n}, fill, {dtype, device});
  return t.reshape({n}).to(dtype).contiguous();
}

// Gradient of a parameter from the kernel's [n] result: undefined when the parameter is.
Tensor param_grad(const Tensor& g, const Tensor& param) {
  if (!param.defined()) return {};
  return g.reshape(param.sizes()).to(param.dtype());
}

// ---- batch_norm ---------------------------------------------------------------------------

struct BatchNormResult {
  Tensor y, mean, var;  // mean/var: batch statistics (training) or the running ones (eval)
};

// Note [Channels-last batch norm]
// The kernel contract is [N, C, S] row-major, statistics per C over N and S. A channels-last
// image is [N*H*W, C] row-major in memory, which is that contract with N' = N*H*W and S = 1:
// the same statistics, no reorder, and every backend's kernel runs it unchanged.
/** t as the kernel's contiguous [N, C, S] operand: a view of a channels-last t (see above), or
 *  the row-major t with its trailing dims merged (a copy if it is not contiguous). */
Tensor as_bn_rows(const Tensor& t, MemoryFormat format) {
  const int64_t n = t.size(0), c = t.size(1);
  if (format == MemoryFormat::ChannelsLast) {
    return t.contiguous(format).permute({0, 2, 3, 1}).reshape({n * t.size(2) * t.size(3), c, 1});
  }
  return t.reshape({n, c, n * c == 0 ? 0 : t.numel() / (n * c)}).contiguous();
}

BatchNormResult batch_norm_impl(const Tensor& x, const Tensor& w, const Tensor& b,
                                const Tensor& running_mean, const Tensor& running_var,
                                bool training, double momentum, double eps) {
  const DType dt = x.dtype();
  const Device dev = x.device();
  const int64_t n = x.size(0), c = x.size(1);
  const int64_t s = n * c == 0 ? 0 : x.numel() / (n * c);
  BatchNormResult r;
  const MemoryFormat format = x.suggest_memory_format();
  r.y = empty(x.sizes(), {dt, dev}, format);
  if (x.numel() == 0) return r;
  const Tensor x3 = as_bn_rows(x, format);
  const Tensor wk = param_or(w, c, 1.0, dt, dev), bk = param_or(b, c, 0.0, dt, dev);
  const attrs::batch_norm a{.training = training ? 1 : 0, .eps = eps};
  const Tensor y3 = as_bn_rows(r.y, format);
  if (!training) {
    r.mean = running_mean.to(dt).contiguous();
    r.var = running_var.to(dt).contiguous();
    run_kernel(a, dt, {&x3, &wk, &bk, &r.mean, &r.var}, {&y3});
    return r;
  }
  r.mean = empty({c}, {dt, dev});
  r.var = empty({c}, {dt, dev});
  run_kernel(a, dt, {&x3, &wk, &bk}, {&y3, &r.mean, &r.var});
  // Note [Running statistics of batch_norm]
  // The update is an in-place write outside autograd (running stats are buffers, not part of
  // the graph): it bumps their versions, so a graph that saved them notices. The unbiased
  // variance multiplies the biased one by m / (m - 1), m = N * S values per channel.
  autograd::NoGradGuard no_grad;
  const double m = static_cast<double>(n) * static_cast<double>(s);
  if (running_mean.defined()) {
    Tensor rm = running_mean;
    add_(mul_(rm, 1.0 - momentum), mul(r.mean, momentum).to(rm.dtype()));
  }
  if (running_var.defined()) {
    Tensor rv = running_var;
    add_(mul_(rv, 1.0 - momentum), mul(r.var, momentum * m / (m - 1.0)).to(rv.dtype()));
  }
  return r;
}

// Note [Backward of the normalisation layers]
// The first-order backward runs a fused kernel (two passes over dy and x). When the backward
// itself is being recorded (grad mode on inside backward: create_graph), the same gradients
// are built from public ops instead, recomputing the statistics from x, so they are
// differentiable again; the kernel's result and the formula agree to rounding.
/** {dx, dweight [C], dbias [C]} from the formula, dweight/dbias in x's dtype. */
Grads batch_norm_formula(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& rm,
                         const Tensor& rv, bool training, double eps) {
  const int64_t n = x.size(0), c = x.size(1), s = x.numel() / (n * c);
  const Tensor x3 = x.reshape({n, c, s}), g3 = g.to(x.dtype()).reshape({n, c, s});
  const Shape dims{0, 2};
  Tensor mu, invstd;
  if (training) {
    mu = mean(x3, dims, /*keepdim=*/true);
    invstd = rsqrt(add(mean(square(sub(x3, mu)), dims, /*keepdim=*/true), eps));
  } else {
    mu = rm.to(x.dtype()).view({1, c, 1});
    invstd = rsqrt(add(rv.to(x.dtype()).view({1, c, 1}), eps));
  }
  const Tensor xhat = mul(sub(x3, mu), invstd);
  Tensor dx = training ? mul(invstd, sub(sub(g3, mean(g3, dims, /*keepdim=*/true)),
                                         mul(xhat, mean(mul(g3, xhat), dims, /*keepdim=*/true))))
                       : mul(g3, invstd);
  if (w.defined()) dx = mul(dx, w.to(x.dtype()).view({1, c, 1}));
  return {dx.reshape(x.sizes()), sum(mul(g3, xhat), dims), sum(g3, dims)};
}

/** {dx, dweight [C], dbias [C]} of batch_norm, dweight/dbias in x's dtype. `mean_`/`var_` are
 *  the statistics the forward normalised with (Note [Backward of the normalisation layers]). */
Grads batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean_,
                          const Tensor& var_, bool training, double eps) {
  const int64_t c = x.size(1);
  if (x.numel() == 0) {
    return {zeros_like(x), zeros({c}, {x.dtype(), x.device()}),
            zeros({c}, {x.dtype(), x.device()})};
  }
  if (autograd::is_grad_enabled()) return batch_norm_formula(g, x, w, mean_, var_, training, eps);
  const DType dt = x.dtype();
  const MemoryFormat format = x.suggest_memory_format();
  const Tensor x3 = as_bn_rows(x, format);
  const Tensor g3 = as_bn_rows(g.to(dt), format);
  const Tensor wk = param_or(w, c, 1.0, dt, x.device());
  Tensor dx = empty(x.sizes(), {dt, x.device()}, format);
  const Tensor dx3 = as_bn_rows(dx, format);
  Tensor dw = empty({c}, {dt, x.device()}), db = empty({c}, {dt, x.device()});
  run_kernel(attrs::batch_norm_backward{.training = training ? 1 : 0, .eps = eps}, dt,
             {&g3, &x3, &wk, &mean_, &var_}, {&dx3, &dw, &db});
  return {dx, dw, db};
}

// ---- layer_norm, group_norm ---------------------------------------------------------------

/** A normalisation over rows: R rows of K * S, the parameter of (r, k) at (r % G) * K + k. */
struct RowNorm {
  const char* name;
  const char* node;
  const Op* op;
  const Op* backward_op;
  int64_t rows, groups, per_group, spatial;
  /** The kernels' attributes (layer_norm, group_norm and their gradients share one layout). */
  PackedAttrs kernel_attrs(double eps) const {
    return PackedAttrs(attrs::layer_norm{
        .groups = groups, .group_size = per_group, .spatial = spatial, .eps = eps});
  }
};

Grads row_norm_formula(const RowNorm& p, const Tensor& g, const Tensor& x, const Tensor& w,
                       double eps) {
  const Shape s4{p.rows / p.groups, p.groups, p.per_group, p.spatial};
  const Tensor x4 = x.reshape(s4), g4 = g.reshape(s4);
  const Shape dims{2, 3};
  const Tensor mu = mean(x4, dims, /*keepdim=*/true);
  const Tensor invstd = rsqrt(add(mean(square(sub(x4, mu)), dims, /*keepdim=*/true), eps));
  const Tensor xhat = mul(sub(x4, mu), invstd);
  const Tensor gg =
      w.defined() ? mul(g4, w.to(x.dtype()).reshape({1, p.groups, p.per_group, 1})) : g4;
  const Tensor dx = mul(invstd, sub(sub(gg, mean(gg, dims, /*keepdim=*/true)),
                                    mul(xhat, mean(mul(gg, xhat), dims, /*keepdim=*/true))));
  const Tensor dw = sum(mul(g4, xhat), {0, 3}), db = sum(g4, {0, 3});
  return {dx.reshape(x.sizes()), param_grad(dw, w), db};
}

Tensor row_norm(const RowNorm& p, const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  const int64_t np = p.groups * p.per_group;
  auto forward = [&]() -> std::tuple<Tensor, Tensor, Tensor> {
    Tensor y = empty(x.sizes(), {x.dtype(), x.device()});
    if (x.numel() == 0) return {y, Tensor(), Tensor()};
    const DType dt = x.dtype();
    const Tensor x2 = x.reshape({p.rows, -1}).contiguous();
    const Tensor wk = param_or(w, np, 1.0, dt, x.device()),
                 bk = param_or(b, np, 0.0, dt, x.device());
    Tensor mu = empty({p.rows}, {dt, x.device()}), invstd = empty({p.rows}, {dt, x.device()});
    const Tensor y2 = y.view({p.rows, -1});
    run_kernel(*p.op, dt, {&x2, &wk, &bk}, {&y2, &mu, &invstd}, p.kernel_attrs(eps));
    return {y, mu, invstd};
  };
  if (!autograd::any_requires_grad({&x, &w, &b})) return std::get<0>(forward());
  std::tuple<Tensor, Tensor, Tensor> r;
  {
    autograd::NoGradGuard below_autograd;
    r = forward();
  }
  Tensor& y = std::get<0>(r);
  autograd::record(
      p.node, p.name, {&x, &w, &b}, {&y},
      [p, eps, sx = SavedTensor(x), sw = SavedTensor(w), mu = std::get<1>(r),
       invstd = std::get<2>(r), has_b = b.defined(), b_dtype = b.defined() ? b.dtype() : x.dtype(),
       b_sizes = b.defined() ? b.sizes() : Shape{}](const Grads& g, const LambdaNode& self) {
        const Tensor x = self.unpack(sx), w = sw.defined() ? self.unpack(sw) : Tensor();
        Grads out;
        if (x.numel() == 0) {
          out = {zeros_like(x), w.defined() ? zeros_like(w) : Tensor(),
                 zeros({p.groups * p.per_group}, {x.dtype(), x.device()})};
        } else if (autograd::is_grad_enabled()) {
          out = row_norm_formula(p, g[0], x, w, eps);
        } else {
          const DType dt = x.dtype();
          const int64_t np = p.groups * p.per_group;
          const Tensor x2 = x.reshape({p.rows, -1}).contiguous();
          const Tensor g2 = g[0].to(dt).reshape({p.rows, -1}).contiguous();
          const Tensor wk = param_or(w, np, 1.0, dt, x.device());
          Tensor dx = empty(x2.sizes(), {dt, x.device()});
          Tensor dw = empty({np}, {dt, x.device()}), db = empty({np}, {dt, x.device()});
          run_kernel(*p.backward_op, dt, {&g2, &x2, &wk, &mu, &invstd}, {&dx, &dw, &db},
                     p.kernel_attrs(eps));
          out = {dx.view(x.sizes()), param_grad(dw, w), db};
        }
        out[2] = has_b ? out[2].reshape(b_sizes).to(b_dtype) : Tensor();
        return out;
      });
  return y;
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum, double eps) {
  EMBER_AUTOCAST(Float32, batch_norm, x, x, weight, bias, running_mean, running_var, training,
                 momentum, eps);
  const char* name = "batch_norm";
  check_input(name, x, eps);
  EMBER_CHECK(x.dim() >= 2,
              "[batch_norm] expected an input [N, C, ...] of at least 2 dims: got "
              "shape {}",
              shape_str(x.sizes()));
  const int64_t c = x.size(1);
  check_param(name, "weight", weight, {c}, x.dtype());
  check_param(name, "bias", bias, {c}, x.dtype());
  check_param(name, "running_mean", running_mean, {c}, std::nullopt);
  check_param(name, "running_var", running_var, {c}, std::nullopt);
  EMBER_CHECK(training || (running_mean.defined() && running_var.defined()),
              "[batch_norm] running_mean and running_var must be defined in evaluation mode "
              "(training=false): got {} and {}",
              running_mean.defined() ? "defined" : "undefined",
              running_var.defined() ? "defined" : "undefined");
  EMBER_CHECK(!training || x.numel() == 0 || x.numel() / c > 1,
              "[batch_norm] expected more than 1 value per channel when training: got input "
              "shape {}",
              shape_str(x.sizes()));
  if (!autograd::any_requires_grad({&x, &weight, &bias})) {
    return batch_norm_impl(x, weight, bias, running_mean, running_var, training, momentum, eps).y;
  }
  BatchNormResult r;
  {
    autograd::NoGradGuard below_autograd;
    r = batch_norm_impl(x, weight, bias, running_mean, running_var, training, momentum, eps);
  }
  autograd::record("NativeBatchNormBackward", name, {&x, &weight, &bias}, {&r.y},
                   [sx = SavedTensor(x), sw = SavedTensor(weight), sm = SavedTensor(r.mean),
                    sv = SavedTensor(r.var), has_b = bias.defined(),
                    b_dtype = bias.defined() ? bias.dtype() : x.dtype(), training,
                    eps](const Grads& g, const LambdaNode& self) {
                     const Tensor x = self.unpack(sx);
                     const Tensor w = sw.defined() ? self.unpack(sw) : Tensor();
                     const Tensor m = sm.defined() ? self.unpack(sm) : Tensor();
                     const Tensor v = sv.defined() ? self.unpack(sv) : Tensor();
                     Grads out = batch_norm_backward(g[0], x, w, m, v, training, eps);
                     out[1] = param_grad(out[1], w);
                     out[2] = has_b ? out[2].to(b_dtype) : Tensor();
                     return out;
                   });
  return r.y;
}

Tensor layer_norm(const Tensor& x, IntList normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  EMBER_AUTOCAST(Float32, layer_norm, x, x, normalized_shape, weight, bias, eps);
  const char* name = "layer_norm";
  check_input(name, x, eps);
  check_trailing(name, x, normalized_shape);
  check_param(name, "weight", weight, normalized_shape, x.dtype());
  check_param(name, "bias", bias, normalized_shape, x.dtype());
  int64_t d = 1;
  for (int64_t v : normalized_shape) d *= v;
  const int64_t rows = d == 0 ? 0 : x.numel() / d;
  const RowNorm p{name,
                  "NativeLayerNormBackward",
                  &core_op(ops::layer_norm),
                  &core_op(ops::layer_norm_backward),
                  rows,
                  1,
                  d,
                  1};
  return row_norm(p, x, weight, bias, eps);
}

Tensor rms_norm(const Tensor& x, IntList normalized_shape, const Tensor& weight,
                std::optional<double> eps) {
  const char* name = "rms_norm";
  const double e = eps.value_or(x.defined() && is_floating(x.dtype()) ? finfo(x.dtype()).eps : 1);
  check_input(name, x, e);
  check_trailing(name, x, normalized_shape);
  check_param(name, "weight", weight, normalized_shape, x.dtype());
  std::vector<int64_t> dims;
  for (int64_t i = x.dim() - static_cast<int64_t>(normalized_shape.size()); i < x.dim(); ++i) {
    dims.push_back(i);
  }
  const Tensor y = mul(x, rsqrt(add(mean(mul(x, x), dims, /*keepdim=*/true), e)));
  return weight.defined() ? mul(y, weight) : y;
}

// Note [Instance norm as batch norm over N C channels]
// Each (sample, channel) pair is normalised over its own spatial dims, which is batch norm of
// the input viewed as [1, N C, ...], its weight and bias repeated N times. With running
// statistics, the N copies of each channel's are updated by that batch norm and their mean is
// the channel's new statistic, as PyTorch computes it; without input statistics (eval with
// running statistics) every sample shares them, which is batch norm in evaluation mode.
Tensor instance_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                     const Tensor& running_mean, const Tensor& running_var, bool use_input_stats,
                     double momentum, double eps) {
  const char* name = "instance_norm";
  check_input(name, x, eps);
  EMBER_CHECK(x.dim() >= 3,
              "[instance_norm] expected an input [N, C, ...] of at least 3 dims: got shape {}",
              shape_str(x.sizes()));
  if (!use_input_stats) {
    return batch_norm(x, weight, bias, running_mean, running_var, /*training=*/false, momentum,
                      eps);
  }
  const int64_t n = x.size(0), c = x.size(1);
  check_param(name, "weight", weight, {c}, x.dtype());
  check_param(name, "bias", bias, {c}, x.dtype());
  check_param(name, "running_mean", running_mean, {c}, std::nullopt);
  check_param(name, "running_var", running_var, {c}, std::nullopt);
  int64_t spatial = 1;
  for (int64_t d = 2; d < x.dim(); ++d) spatial *= x.size(d);
  EMBER_CHECK(x.numel() == 0 || spatial > 1,
              "[instance_norm] expected more than 1 spatial element when training: got input "
              "shape {}",
              shape_str(x.sizes()));
  auto repeated = [n](const Tensor& t) { return t.defined() ? repeat(t, {n}) : Tensor(); };
  Shape flat = x.sizes();
  flat[0] = 1;
  flat[1] = n * c;
  Tensor rm, rv;
  {
    autograd::NoGradGuard no_grad;
    rm = repeated(running_mean);
    rv = repeated(running_var);
  }
  const Tensor y = batch_norm(x.reshape(flat), repeated(weight), repeated(bias), rm, rv,
                              /*training=*/true, momentum, eps);
  if (running_mean.defined() || running_var.defined()) {
    autograd::NoGradGuard no_grad;
    // Handles to the caller's statistics, updated in place as batch_norm updates them.
    if (rm.defined()) Tensor(running_mean).copy_(mean(rm.view({n, c}), {0}));
    if (rv.defined()) Tensor(running_var).copy_(mean(rv.view({n, c}), {0}));
  }
  return y.view(x.sizes());
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  EMBER_AUTOCAST(Float32, group_norm, x, x, num_groups, weight, bias, eps);
  const char* name = "group_norm";
  check_input(name, x, eps);
  EMBER_CHECK(x.dim() >= 2,
              "[group_norm] expected an input [N, C, ...] of at least 2 dims: got "
              "shape {}",
              shape_str(x.sizes()));
  const int64_t n = x.size(0), c = x.size(1);
  EMBER_CHECK(num_groups > 0 && c % num_groups == 0,
              "[group_norm] num_groups must be positive and divide the number of channels: got "
              "num_groups={} for C={}",
              num_groups, c);
  check_param(name, "weight", weight, {c}, x.dtype());
  check_param(name, "bias", bias, {c}, x.dtype());
  // An empty input has no rows; with C = 0 any num_groups divides C, so n * num_groups could
  // overflow (n * c cannot: a tensor's non-zero dims multiply within int64).
  const bool empty = x.numel() == 0;
  const int64_t s = empty ? 0 : x.numel() / (n * c);
  const RowNorm p{name,
                  "NativeGroupNormBackward",
                  &core_op(ops::group_norm),
                  &core_op(ops::group_norm_backward),
                  empty ? 0 : n * num_groups,
                  num_groups,
                  c / num_groups,
                  s};
  return row_norm(p, x, weight, bias, eps);
}

Tensor local_response_norm(const Tensor& x, int64_t size, double alpha, double beta, double k) {
  EMBER_CHECK_TYPE(x.defined(), "[local_response_norm] undefined tensor argument");
  EMBER_CHECK(x.dim() >= 3,
              "[local_response_norm] expected 3-d or higher dimensionality input: got shape {}",
              shape_str(x.sizes()));
  EMBER_CHECK(size >= 1, "[local_response_norm] size must be positive: got {}", size);
  if (x.numel() == 0) return x;
  const Tensor sq = mul(x, x).reshape({x.size(0), 1, x.size(1), -1});
  const int64_t pads[4] = {0, 0, size / 2, (size - 1) / 2};
  const int64_t window[2] = {size, 1}, step[2] = {1, 1};
  const Tensor avg =
      avg_pool2d(pad(sq, IntList(pads, 4)), IntList(window, 2), IntList(step, 2)).view(x.sizes());
  return div(x, pow(add(mul(avg, alpha), k), beta));
}

}  // namespace ember
