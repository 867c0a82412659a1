// Loss functions, all composites of public ops (no kernel of their own).
//
// nll_loss:      l_i = -w[t_i] * logp[i, t_i] (0 where t_i == ignore_index); mean divides the
//                sum by sum_i w[t_i] over the non-ignored targets (all ignored: 0 / 0 = nan).
//                Forward: a host pass over the targets (range check, ignored -> class 0; on
//                accelerators device ops, Note [Class targets stay on the device]), one
//                gather, then the weighting and the reduction. backward (Note [Backward of
//                nll_loss]): dlogp = zeros with -dl_i * w[t_i] / denominator scatter_add'ed at
//                (i, t_i).
// cross_entropy: nll_loss(log_softmax(x, 1)); label smoothing eps: (1 - eps) * nll +
//                eps / C * sum_c -w_c logp_c (reduced like nll, ignored targets dropped).
//                Probability targets q: -sum_c w_c q_c logp_c, with q smoothed to
//                (1 - eps) q + eps / C; mean divides by numel / C.
// mse_loss:      (x - t)^2; l1_loss: |x - t| (same shapes required, as in PyTorch without its
//                broadcasting warning). huber_loss, smooth_l1_loss: quadratic below delta /
//                beta, linear above. kl_div: t (log t - x), 0 where t = 0.
// binary_cross_entropy: -w (t max(log p, -100) + (1 - t) max(log(1 - p), -100)); backward as
//                PyTorch: dp = w (p - t) / max(p (1 - p), 1e-12), dt = w (log(1-p) - log p).
// binary_cross_entropy_with_logits: with lw = 1 + (pos_weight - 1) t and
//                sp = softplus(-x) = log1p(exp(-|x|)) + max(-x, 0) (stable for any |x|):
//                l = w ((1 - t) x + lw sp); dx = w ((1 - t) - lw sigmoid(-x)),
//                dt = w (-x + (pos_weight - 1) sp).
// gaussian_nll_loss: (log v + (x - t)^2 / v) / 2, v = var clamped at eps in value only.
#include "ember/ops/loss.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "core/dispatch/call.h"
#include "core/ops/loss_testing.h"
#include "ember/amp/autocast.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"
#include "ember/dispatch/device_registry.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/nn.h"
#include "ember/ops/reduce.h"
#include "ember/ops/softmax.h"

namespace ember {
namespace {

using autograd::LambdaNode;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

// Every loss but kl_div refuses Reduction::BatchMean (PyTorch has it for kl_div only).
void refuse_batch_mean(const char* name, Reduction r) {
  EMBER_CHECK(r != Reduction::BatchMean,
              "[{}] reduction BatchMean is kl_div's only (use Mean or Sum)", name);
}

Tensor reduce_loss(const char* name, const Tensor& l, Reduction r) {
  refuse_batch_mean(name, r);
  switch (r) {
    case Reduction::Sum:
      return sum(l);
    case Reduction::Mean:
      return mean(l);
    default:
      return l;
  }
}

// ---- nll_loss ---------------------------------------------------------------------------------

// What the targets of an nll_loss say: read once on the host, or made by device ops.
struct NllPlan {
  Tensor idx;    // int64 [N, 1, d...] on the device; ignored targets point at class 0
  Tensor valid;  // [N, d...] of the input's dtype, 1 / 0; undefined when nothing is ignored
  Tensor ws;     // per-target weight w[t] * valid; undefined when it would be all ones
  int64_t n_valid = 0;
  bool weighted = false;  // the mean divides by sum(ws), not by n_valid
};

// Note [Class targets stay on the device]
// Reading the targets on the host costs nothing where the device's memory is the host's, and
// gives the clearest error ("[nll_loss] target 7 is out of bounds for C=5 classes") before
// anything runs. On an accelerator it would copy the targets to the host and wait for the device
// on every call, one stall per training step. There the plan is built with device ops instead:
// ignored targets are masked to class 0 by `where`, every target is weighted by its 0/1 validity
// (so the mean divides by sum(ws), the count of targets kept, as the weighted mean does), and the
// range check is the gather's own, which the device reports at the next synchronization naming
// gather and the bad class (as PyTorch's device asserts do). Tests run this path on the CPU too
// (detail::set_class_targets_on_host in core/ops/loss_testing.h).
std::atomic<int> g_targets_on_host{-1};  // -1: decided by the device; 0 / 1: forced by a test

bool targets_read_on_host(Device device) {
  const int forced = g_targets_on_host.load(std::memory_order_relaxed);
  return forced >= 0 ? forced == 1 : device_type(device.type).table.host_accessible != 0;
}

NllPlan plan_nll_on_device(const Tensor& logp, const Tensor& target, const Tensor& weight,
                           int64_t ignore_index) {
  autograd::NoGradGuard no_grad;  // like PyTorch, nll_loss gives no gradient to weight
  NllPlan plan;
  const Tensor t = target.to(DType::Int64);
  const Tensor kept = ne(t, ignore_index);
  const Tensor idx = where(kept, t, zeros_like(t));
  plan.idx = idx.unsqueeze(1);
  plan.valid = kept.to(logp.dtype());
  plan.ws = plan.valid;
  plan.weighted = true;
  if (weight.defined()) {
    const Tensor ws =
        index_select(weight.to(logp.dtype()), 0, idx.reshape({-1})).view(target.sizes());
    plan.ws = mul(ws, plan.valid);
  }
  return plan;
}

// Checks shapes and dtypes of logp [N, C, d...] (already at least 2-d) and target [N, d...],
// range-checks every target and builds the plan (Note [Class targets stay on the device]).
NllPlan plan_nll(const char* name, const Tensor& logp, const Tensor& target, const Tensor& weight,
                 int64_t ignore_index) {
  const int64_t c = logp.size(1);
  bool shape_ok = target.dim() == logp.dim() - 1 && target.size(0) == logp.size(0);
  for (int64_t i = 1; shape_ok && i < target.dim(); ++i)
    shape_ok = target.size(i) == logp.size(i + 1);
  EMBER_CHECK(shape_ok,
              "[{}] target shape {} does not match input shape {} (expected the input's shape "
              "without the class dim 1)",
              name, shape_str(target.sizes()), shape_str(logp.sizes()));
  if (weight.defined()) {
    EMBER_CHECK(weight.dim() == 1 && weight.size(0) == c,
                "[{}] weight must be 1-d with one value per class (C={}): got shape {}", name, c,
                shape_str(weight.sizes()));
  }
  NllPlan plan;
  const Device device = logp.device();
  if (!targets_read_on_host(device)) return plan_nll_on_device(logp, target, weight, ignore_index);
  const Tensor host = target.to(Device::cpu()).to(DType::Int64).contiguous();
  const int64_t n = host.numel();
  Tensor idx = empty(host.sizes(), {DType::Int64, Device::cpu()});
  const int64_t* t = host.data_ptr<int64_t>();
  int64_t* out = idx.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (t[i] == ignore_index) {
      out[i] = 0;
      continue;
    }
    EMBER_CHECK_INDEX(
        t[i] >= 0 && t[i] < c,
        "[{}] target {} is out of bounds for C={} classes (targets must be in [0, {}) or "
        "equal ignore_index={})",
        name, t[i], c, c, ignore_index);
    out[i] = t[i];
    ++plan.n_valid;
  }
  plan.idx = idx.to(device).unsqueeze(1);
  if (plan.n_valid < n) {
    Tensor valid = empty(host.sizes(), {logp.dtype(), Device::cpu()});
    visit_dtype(logp.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* v = static_cast<T*>(valid.data_ptr());
      for (int64_t i = 0; i < n; ++i) {
        v[i] = static_cast<T>(static_cast<sdk::Compute<T>>(t[i] == ignore_index ? 0.0 : 1.0));
      }
    });
    plan.valid = valid.to(device);
    plan.ws = plan.valid;
  }
  if (weight.defined()) {
    autograd::NoGradGuard no_grad;  // like PyTorch, nll_loss gives no gradient to weight
    plan.weighted = true;
    Tensor ws =
        index_select(weight.to(logp.dtype()), 0, idx.view({-1}).to(device)).view(target.sizes());
    plan.ws = plan.valid.defined() ? mul(ws, plan.valid) : ws;
  }
  return plan;
}

// Note [Backward of nll_loss]
// The loss is linear in logp and touches one class per target, so the gradient is a scatter:
// dlogp[i, t_i] = -dl_i * ws_i / denominator (dl broadcast from a 0-d gradient when reduced;
// denominator 1 unless the mean). Ignored targets have ws_i = 0 and point at class 0, so they
// add 0 there. Written with public ops, the formula is differentiable again (in dl; its
// derivative in logp is 0).
Tensor nll_core(const Tensor& logp, const NllPlan& plan, Reduction r) {
  Tensor denom;  // sum of ws for a weighted mean
  return autograd::differentiable(
      "NllLossBackward", "nll_loss", {&logp},
      [&] {
        const Tensor picked = gather(logp, 1, plan.idx).squeeze(1);
        const Tensor terms = plan.ws.defined() ? mul(picked, plan.ws) : picked;
        if (r == Reduction::None) return neg(terms);
        if (r == Reduction::Sum) return neg(sum(terms));
        if (plan.weighted) {
          denom = sum(plan.ws);
          return div(neg(sum(terms)), denom);
        }
        return mul(sum(terms), -1.0 / static_cast<double>(plan.n_valid));
      },
      [&] {
        return [idx = plan.idx, ws = plan.ws, denom, n_valid = plan.n_valid, r,
                sizes = logp.sizes()](const Grads& g, const LambdaNode&) {
          Tensor coef;
          if (r != Reduction::Mean) {
            coef = neg(g[0]);
          } else if (denom.defined()) {
            coef = div(neg(g[0]), denom);
          } else {
            coef = mul(g[0], -1.0 / static_cast<double>(n_valid));
          }
          Shape tsizes = idx.sizes();
          tsizes.erase(1);
          const Tensor src = ws.defined() ? mul(coef, ws) : coef.expand(tsizes);
          const Tensor z = zeros(sizes, {g[0].dtype(), g[0].device()});
          return Grads{scatter_add(z, 1, idx, src.unsqueeze(1))};
        };
      });
}

// Note [Class weights take no gradient]
// PyTorch's nll_loss and cross_entropy do not differentiate with respect to their class
// weights ("the derivative for 'weight' is not implemented"). Ember used to compute the weighted
// terms under NoGradGuard, so a weight that required grad silently got no gradient (or, with
// label smoothing, only the smoothing term's): a wrong answer. Such a weight is refused up front
// while grad mode is on, with the way out in the message.
void check_nll_args(const char* name, const Tensor& input, const Tensor& target,
                    const Tensor& weight) {
  EMBER_CHECK_NOT_IMPLEMENTED(
      !weight.defined() || !weight.requires_grad() || !autograd::is_grad_enabled(),
      "[{}] the class weight requires grad, but the gradient with respect to the weight is not "
      "implemented, as in PyTorch (pass weight.detach(), or compute the loss under NoGradGuard)",
      name);
  EMBER_CHECK_TYPE(input.defined() && target.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK_TYPE(is_floating(input.dtype()), "[{}] input must be a floating tensor: got {}", name,
                   input.dtype());
  EMBER_CHECK(input.dim() >= 1, "[{}] input must have at least 1 dim (the classes): got 0-d", name);
  common_device({&input, &target}, name);
}

void check_class_target(const char* name, const Tensor& target) {
  EMBER_CHECK_TYPE(target.dtype() == DType::Int64 || target.dtype() == DType::Int32,
                   "[{}] target must hold int64 class indices: got {}", name, target.dtype());
}

// nll_loss on logp [C] / [N, C, d...] with the errors named `name`.
Tensor nll(const char* name, const Tensor& logp, const Tensor& target, const Tensor& weight,
           int64_t ignore_index, Reduction r) {
  refuse_batch_mean(name, r);
  if (logp.dim() == 1) {
    EMBER_CHECK(target.dim() == 0,
                "[{}] an unbatched input of shape {} needs a 0-d target: got shape {}", name,
                shape_str(logp.sizes()), shape_str(target.sizes()));
    const Tensor l = nll(name, logp.unsqueeze(0), target.unsqueeze(0), weight, ignore_index, r);
    return r == Reduction::None ? l.squeeze(0) : l;
  }
  const NllPlan plan = plan_nll(name, logp, target, weight, ignore_index);
  return nll_core(logp, plan, r);
}

// Weight viewed to broadcast along the class dim 1 of a rank-`nd` input.
Tensor class_weight_view(const Tensor& weight, int64_t nd) {
  Shape s(static_cast<size_t>(nd), 1);
  s[1] = weight.size(0);
  return weight.view(s);
}

// ---- binary cross entropy ---------------------------------------------------------------------

void check_same_shape(const char* name, const Tensor& x, const Tensor& target) {
  EMBER_CHECK_TYPE(x.defined() && target.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK(x.sizes() == target.sizes(),
              "[{}] input shape {} and target shape {} differ (they must be the same; no "
              "broadcasting)",
              name, shape_str(x.sizes()), shape_str(target.sizes()));
  EMBER_CHECK_TYPE(is_floating(x.dtype()), "[{}] input must be a floating tensor: got {}", name,
                   x.dtype());
  EMBER_CHECK_TYPE(target.dtype() != DType::Bool,
                   "[{}] not defined for a bool target (convert with .to(ember::f32))", name);
}

void check_broadcasts_to(const char* name, const char* what, const Tensor& w, const Tensor& x) {
  if (!w.defined()) return;
  bool ok = w.dim() <= x.dim();
  for (int64_t i = 1; ok && i <= w.dim(); ++i) {
    ok = w.size(-i) == 1 || w.size(-i) == x.size(-i);
  }
  EMBER_CHECK(ok, "[{}] {} of shape {} does not broadcast to the input shape {}", name, what,
              shape_str(w.sizes()), shape_str(x.sizes()));
}

}  // namespace

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight,
                int64_t ignore_index, Reduction reduction) {
  EMBER_AUTOCAST(Float32, nll_loss, log_probs, log_probs, target, weight, ignore_index, reduction);
  check_nll_args("nll_loss", log_probs, target, weight);
  check_class_target("nll_loss", target);
  return nll("nll_loss", log_probs, target, weight, ignore_index, reduction);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight,
                     int64_t ignore_index, Reduction reduction, double label_smoothing) {
  EMBER_AUTOCAST(Float32, cross_entropy, logits, logits, target, weight, ignore_index, reduction,
                 label_smoothing);
  const char* name = "cross_entropy";
  refuse_batch_mean(name, reduction);
  check_nll_args(name, logits, target, weight);
  EMBER_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0,
              "[cross_entropy] label_smoothing must be in [0, 1]: got {}", label_smoothing);
  const int64_t cdim = logits.dim() == 1 ? 0 : 1;
  const int64_t c = logits.size(cdim);
  if (weight.defined()) {
    EMBER_CHECK(weight.dim() == 1 && weight.size(0) == c,
                "[cross_entropy] weight must be 1-d with one value per class (C={}): got shape {}",
                c, shape_str(weight.sizes()));
  }
  const double eps = label_smoothing;
  if (is_floating(target.dtype())) {
    // Probability targets.
    EMBER_CHECK(target.sizes() == logits.sizes(),
                "[cross_entropy] probability targets must have the input's shape {}: got {}",
                shape_str(logits.sizes()), shape_str(target.sizes()));
    const Tensor logp = log_softmax(logits, cdim);
    Tensor q = eps > 0 ? add(mul(target, 1.0 - eps), eps / static_cast<double>(c)) : target;
    if (weight.defined()) {
      q = mul(q, logits.dim() == 1 ? weight : class_weight_view(weight, logits.dim()));
    }
    const Tensor prod = mul(logp, q);
    switch (reduction) {
      case Reduction::None:
        return neg(sum(prod, {cdim}));
      case Reduction::Sum:
        return neg(sum(prod));
      default:
        return mul(sum(prod), -1.0 / (static_cast<double>(logits.numel()) / c));
    }
  }
  check_class_target(name, target);
  const Tensor logp = log_softmax(logits, cdim);
  if (eps == 0.0) return nll(name, logp, target, weight, ignore_index, reduction);
  // Label smoothing (PyTorch's formula), on the batched form.
  const bool unbatched = logits.dim() == 1;
  if (unbatched) {
    EMBER_CHECK(target.dim() == 0,
                "[cross_entropy] an unbatched input of shape {} needs a 0-d target: got shape {}",
                shape_str(logits.sizes()), shape_str(target.sizes()));
  }
  const Tensor lp = unbatched ? logp.unsqueeze(0) : logp;
  const Tensor tg = unbatched ? target.unsqueeze(0) : target;
  const NllPlan plan = plan_nll(name, lp, tg, weight, ignore_index);
  const Tensor nll_l = nll_core(lp, plan, reduction);
  Tensor smooth = sum(weight.defined() ? mul(lp, class_weight_view(weight, lp.dim())) : lp, {1});
  if (plan.valid.defined()) smooth = mul(smooth, plan.valid);
  switch (reduction) {
    case Reduction::None:
      smooth = neg(smooth);
      break;
    case Reduction::Sum:
      smooth = neg(sum(smooth));
      break;
    default:
      smooth = plan.weighted ? div(neg(sum(smooth)), sum(plan.ws))
                             : mul(sum(smooth), -1.0 / static_cast<double>(plan.n_valid));
  }
  const Tensor l = add(mul(nll_l, 1.0 - eps), mul(smooth, eps / static_cast<double>(c)));
  return unbatched && reduction == Reduction::None ? l.squeeze(0) : l;
}

Tensor mse_loss(const Tensor& x, const Tensor& target, Reduction reduction) {
  EMBER_AUTOCAST(Float32, mse_loss, x, x, target, reduction);
  check_same_shape("mse_loss", x, target);
  common_device({&x, &target}, "mse_loss");
  return reduce_loss("mse_loss", square(sub(x, target)), reduction);
}

Tensor l1_loss(const Tensor& x, const Tensor& target, Reduction reduction) {
  EMBER_AUTOCAST(Float32, l1_loss, x, x, target, reduction);
  check_same_shape("l1_loss", x, target);
  common_device({&x, &target}, "l1_loss");
  return reduce_loss("l1_loss", abs(sub(x, target)), reduction);
}

namespace {
// 0.5 d^2 / beta where d = |x - t| < beta, else d - 0.5 beta, times `scale` (huber_loss is
// smooth_l1 scaled by delta = beta); through where, so d/dx = scale * clamp((x - t) / beta, -1, 1).
// The caller has checked beta (its own parameter name and range, as PyTorch's).
Tensor smooth_l1(const char* name, const Tensor& x, const Tensor& target, Reduction reduction,
                 double beta, double scale) {
  check_same_shape(name, x, target);
  common_device({&x, &target}, name);
  const Tensor diff = sub(x, target);
  const Tensor d = abs(diff);
  if (beta == 0) return reduce_loss(name, mul(d, scale), reduction);
  const Tensor l =
      where(lt(d, beta), mul(square(diff), 0.5 * scale / beta), mul(sub(d, 0.5 * beta), scale));
  return reduce_loss(name, l, reduction);
}
}  // namespace

Tensor huber_loss(const Tensor& x, const Tensor& target, Reduction reduction, double delta) {
  EMBER_AUTOCAST(Float32, huber_loss, x, x, target, reduction, delta);
  EMBER_CHECK(delta > 0, "[huber_loss] delta must be positive: got {}", delta);
  return smooth_l1("huber_loss", x, target, reduction, delta, delta);
}

Tensor smooth_l1_loss(const Tensor& x, const Tensor& target, Reduction reduction, double beta) {
  EMBER_AUTOCAST(Float32, smooth_l1_loss, x, x, target, reduction, beta);
  EMBER_CHECK(beta >= 0, "[smooth_l1_loss] beta must be non-negative: got {}", beta);
  return smooth_l1("smooth_l1_loss", x, target, reduction, beta, 1.0);
}

// kl_div: t (log t - x), with t log t = 0 where t = 0 (xlogy); exp(t) (t - x) for log targets.
// Shapes broadcast as in PyTorch.
Tensor kl_div(const Tensor& x, const Tensor& target, Reduction reduction, bool log_target) {
  EMBER_AUTOCAST(Float32, kl_div, x, x, target, reduction, log_target);
  EMBER_CHECK_TYPE(x.defined() && target.defined(), "[kl_div] undefined tensor argument");
  common_device({&x, &target}, "kl_div");
  Tensor l;
  if (log_target) {
    l = mul(exp(target), sub(target, x));
  } else {
    const Tensor pos = gt(target, 0);
    const Tensor t_log_t = where(pos, mul(target, log(where(pos, target, 1.0))), 0.0);
    l = sub(t_log_t, mul(target, x));
  }
  if (reduction != Reduction::BatchMean) return reduce_loss("kl_div", l, reduction);
  const int64_t batch = x.dim() == 0 ? 1 : x.size(0);
  return div(sum(l), static_cast<double>(batch));
}

Tensor binary_cross_entropy(const Tensor& p, const Tensor& target, const Tensor& weight,
                            Reduction reduction) {
  EMBER_AUTOCAST(Float32, binary_cross_entropy, p, p, target, weight, reduction);
  const char* name = "binary_cross_entropy";
  check_same_shape(name, p, target);
  check_broadcasts_to(name, "weight", weight, p);
  common_device({&p, &target, &weight}, name);
  // Probabilities outside [0, 1] (NaN included) are an error, as in PyTorch: the clamped logs
  // would turn them into a finite, meaningless loss.
  if (p.numel() > 0) {
    autograd::NoGradGuard no_grad;
    EMBER_CHECK(all(logical_and(ge(p, 0.0), le(p, 1.0))).item<bool>(),
                "[binary_cross_entropy] all elements of input should be between 0 and 1: got "
                "values in [{}, {}] (apply sigmoid, or use binary_cross_entropy_with_logits)",
                amin(p).item(), amax(p).item());
  }
  // Unweighted elementwise loss from log p and log(1 - p), both clamped at -100.
  auto unweighted = [](const Tensor& p, const Tensor& t) {
    const Tensor lp = clamp(log(p), -100.0, std::nullopt);
    const Tensor l1p = clamp(log1p(neg(p)), -100.0, std::nullopt);
    return sub(mul(sub(t, 1.0), l1p), mul(t, lp));
  };
  const Tensor l = autograd::differentiable(
      "BinaryCrossEntropyBackward", name, {&p, &target, &weight},
      [&] {
        const Tensor u = unweighted(p, target);
        return weight.defined() ? mul(u, weight) : u;
      },
      [&] {
        return [sp = SavedTensor(p), st = SavedTensor(target), sw = SavedTensor(weight), unweighted,
                has_w = weight.defined(), rp = p.requires_grad(), rt = target.requires_grad(),
                rw = weight.defined() && weight.requires_grad()](const Grads& g,
                                                                 const LambdaNode& self) {
          const Tensor p = self.unpack(sp), t = self.unpack(st);
          const Tensor w = has_w ? self.unpack(sw) : Tensor();
          const Tensor gw_ = has_w ? mul(g[0], w) : g[0];
          Tensor gp, gt, gw;
          if (rp) {
            const Tensor den = clamp(mul((1.0 - p), p), 1e-12, std::nullopt);
            gp = autograd::reduce_grad(div(mul(gw_, sub(p, t)), den), p);
          }
          if (rt) {
            const Tensor lp = clamp(log(p), -100.0, std::nullopt);
            const Tensor l1p = clamp(log1p(neg(p)), -100.0, std::nullopt);
            gt = autograd::reduce_grad(mul(gw_, sub(l1p, lp)), t);
          }
          if (rw) {
            gw = autograd::reduce_grad(mul(g[0], unweighted(p, t)), w);
          }
          return Grads{gp, gt, gw};
        };
      });
  return reduce_loss("binary_cross_entropy", l, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& x, const Tensor& target, const Tensor& weight,
                                        const Tensor& pos_weight, Reduction reduction) {
  EMBER_AUTOCAST(Float32, binary_cross_entropy_with_logits, x, x, target, weight, pos_weight,
                 reduction);
  const char* name = "binary_cross_entropy_with_logits";
  check_same_shape(name, x, target);
  check_broadcasts_to(name, "weight", weight, x);
  check_broadcasts_to(name, "pos_weight", pos_weight, x);
  common_device({&x, &target, &weight, &pos_weight}, name);
  // softplus(-x) = log(1 + e^-x), stable for any |x|.
  auto softplus_neg = [](const Tensor& x) { return add(log1p(exp(neg(abs(x)))), relu(neg(x))); };
  const Tensor l = autograd::differentiable(
      "BinaryCrossEntropyWithLogitsBackward", name, {&x, &target, &weight, &pos_weight},
      [&] {
        const Tensor sp = softplus_neg(x);
        const Tensor lw_sp =
            pos_weight.defined() ? mul(add(mul(sub(pos_weight, 1.0), target), 1.0), sp) : sp;
        const Tensor u = add(mul((1.0 - target), x), lw_sp);
        return weight.defined() ? mul(u, weight) : u;
      },
      [&] {
        return [sx = SavedTensor(x), st = SavedTensor(target), sw = SavedTensor(weight),
                spw = SavedTensor(pos_weight), has_w = weight.defined(),
                has_pw = pos_weight.defined(), rx = x.requires_grad(), rt = target.requires_grad(),
                rw = weight.defined() && weight.requires_grad(),
                rpw = pos_weight.defined() && pos_weight.requires_grad(),
                softplus_neg](const Grads& g, const LambdaNode& self) {
          const Tensor x = self.unpack(sx), t = self.unpack(st);
          const Tensor w = has_w ? self.unpack(sw) : Tensor();
          const Tensor pw = has_pw ? self.unpack(spw) : Tensor();
          const Tensor gw_ = has_w ? mul(g[0], w) : g[0];
          Tensor gx, gt, gww, gpw;
          if (rx) {
            const Tensor d =
                has_pw ? sub((1.0 - t), mul(add(mul(sub(pw, 1.0), t), 1.0), sigmoid(neg(x))))
                       : sub(sigmoid(x), t);
            gx = autograd::reduce_grad(mul(gw_, d), x);
          }
          if (rt) {
            const Tensor d = has_pw ? sub(mul(sub(pw, 1.0), softplus_neg(x)), x) : neg(x);
            gt = autograd::reduce_grad(mul(gw_, d), t);
          }
          if (rw || rpw) {
            const Tensor sp = softplus_neg(x);
            if (rw) {
              const Tensor lw_sp = has_pw ? mul(add(mul(sub(pw, 1.0), t), 1.0), sp) : sp;
              gww = autograd::reduce_grad(mul(g[0], add(mul((1.0 - t), x), lw_sp)), w);
            }
            if (rpw) {
              gpw = autograd::reduce_grad(mul(gw_, mul(t, sp)), pw);
            }
          }
          return Grads{gx, gt, gww, gpw};
        };
      });
  return reduce_loss("binary_cross_entropy_with_logits", l, reduction);
}

// ---- margin and embedding losses ----------------------------------------------------------------

// Note [The margin losses]
// margin_ranking, hinge_embedding, soft_margin, multilabel_soft_margin, cosine_embedding,
// triplet_margin and poisson_nll are PyTorch's formulas over public ops, so every backend runs
// them with autograd; where() carries the piecewise gradients. Their shape rules are PyTorch's:
// margin_ranking wants operands of one rank (then broadcasts), cosine_embedding 1-d or 2-d
// inputs with a target of one dim less, triplet_margin inputs of one rank.
namespace {

void check_defined(const char* name, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) EMBER_CHECK_TYPE(t->defined(), "[{}] undefined tensor argument", name);
}

}  // namespace

Tensor margin_ranking_loss(const Tensor& x1, const Tensor& x2, const Tensor& target, double margin,
                           Reduction reduction) {
  check_defined("margin_ranking_loss", {&x1, &x2, &target});
  EMBER_CHECK(x1.dim() == x2.dim() && x1.dim() == target.dim(),
              "[margin_ranking_loss] all input tensors should have the same rank, got shapes "
              "{}, {} and {}",
              shape_str(x1.sizes()), shape_str(x2.sizes()), shape_str(target.sizes()));
  const Tensor l = clamp(add(neg(mul(target, sub(x1, x2))), Scalar(margin)), Scalar(0), {});
  return reduce_loss("margin_ranking_loss", l, reduction);
}

Tensor hinge_embedding_loss(const Tensor& x, const Tensor& target, double margin,
                            Reduction reduction) {
  check_defined("hinge_embedding_loss", {&x, &target});
  const Tensor hinge = clamp(add(neg(x), Scalar(margin)), Scalar(0), {});
  const Tensor l = add(where(ne(target, Scalar(1)), hinge, Scalar(0)),
                       where(ne(target, Scalar(-1)), x, Scalar(0)));
  return reduce_loss("hinge_embedding_loss", l, reduction);
}

Tensor soft_margin_loss(const Tensor& x, const Tensor& target, Reduction reduction) {
  check_defined("soft_margin_loss", {&x, &target});
  return reduce_loss("soft_margin_loss", log1p(exp(neg(mul(target, x)))), reduction);
}

Tensor multilabel_soft_margin_loss(const Tensor& x, const Tensor& target, const Tensor& weight,
                                   Reduction reduction) {
  check_defined("multilabel_soft_margin_loss", {&x, &target});
  EMBER_CHECK(x.dim() >= 1,
              "[multilabel_soft_margin_loss] input must have a class dim, got a 0-d "
              "tensor");
  Tensor l =
      neg(add(mul(target, logsigmoid(x)), mul(add(neg(target), Scalar(1)), logsigmoid(neg(x)))));
  if (weight.defined()) l = mul(l, weight);
  const int64_t c = x.size(-1);
  l = div(sum(l, {-1}), Scalar(c));
  return reduce_loss("multilabel_soft_margin_loss", l, reduction);
}

// As PyTorch's kernel counts: each listed target j (a repeated one twice) against every class
// that is not among the targets, the list ending at its first -1.
Tensor multilabel_margin_loss(const Tensor& x, const Tensor& target, Reduction reduction) {
  const char* op = "multilabel_margin_loss";
  check_defined(op, {&x, &target});
  EMBER_CHECK(x.dim() == 1 || x.dim() == 2,
              "[multilabel_margin_loss] expects a 1-d [C] or 2-d [N, C] input: got shape {}",
              shape_str(x.sizes()));
  EMBER_CHECK(target.sizes() == x.sizes(),
              "[multilabel_margin_loss] target must have the input's shape: got {} for {}",
              shape_str(target.sizes()), shape_str(x.sizes()));
  EMBER_CHECK_TYPE(target.dtype() == DType::Int64,
                   "[multilabel_margin_loss] target must hold int64 class indices: got {}",
                   target.dtype());
  const Tensor x2 = x.dim() == 1 ? x.unsqueeze(0) : x;
  const Tensor t2 = target.dim() == 1 ? target.unsqueeze(0) : target;
  const int64_t c = x2.size(1);
  if (t2.numel() > 0) {
    const int64_t lo = amin(t2).item<int64_t>(), hi = amax(t2).item<int64_t>();
    EMBER_CHECK_INDEX(lo >= -1 && hi < c,
                      "[multilabel_margin_loss] target holds a class outside [-1, {}): got {}", c,
                      lo < -1 ? lo : hi);
  }
  // listed[n, j]: target[n, j] comes before the first -1 of row n.
  const Tensor listed = cumprod(ge(t2, Scalar(0)).to(DType::Int64), 1).to(DType::Bool);
  const Tensor cls = where(listed, t2, Scalar(0));
  const Tensor is_target = gt(scatter_add(zeros_like(t2), 1, cls, listed.to(DType::Int64)), 0);
  // margins[n, j, i] = 1 - (x[n, target[n, j]] - x[n, i]), counted where j is listed and i is not
  // a target.
  const Tensor xj = gather(x2, 1, cls).unsqueeze(2);
  const Tensor margins = clamp(add(sub(x2.unsqueeze(1), xj), Scalar(1)), Scalar(0), {});
  const Tensor counted = logical_and(listed.unsqueeze(2), logical_not(is_target).unsqueeze(1));
  Tensor l = div(sum(where(counted, margins, Scalar(0)), {1, 2}), Scalar(c));
  if (x.dim() == 1) l = l.squeeze(0);
  return reduce_loss(op, l, reduction);
}

Tensor cosine_embedding_loss(const Tensor& x1, const Tensor& x2, const Tensor& target,
                             double margin, Reduction reduction) {
  check_defined("cosine_embedding_loss", {&x1, &x2, &target});
  EMBER_CHECK(x1.dim() == 1 || x1.dim() == 2,
              "[cosine_embedding_loss] expects 1-d or 2-d inputs, got shape {}",
              shape_str(x1.sizes()));
  EMBER_CHECK(x1.sizes() == x2.sizes(),
              "[cosine_embedding_loss] input1 and input2 must have the same shape, got {} and {}",
              shape_str(x1.sizes()), shape_str(x2.sizes()));
  EMBER_CHECK(target.dim() == x1.dim() - 1,
              "[cosine_embedding_loss] a {}-d input takes a {}-d target, got shape {}", x1.dim(),
              x1.dim() - 1, shape_str(target.sizes()));
  // PyTorch's form: the squared norms get 1e-12 before the square root of their product.
  const int64_t d = x1.dim() - 1;
  constexpr double kEps = 1e-12;
  const Tensor dot = sum(mul(x1, x2), {d});
  const Tensor m1 = add(sum(mul(x1, x1), {d}), Scalar(kEps));
  const Tensor m2 = add(sum(mul(x2, x2), {d}), Scalar(kEps));
  const Tensor cos = div(dot, sqrt(mul(m1, m2)));
  const Tensor pos = add(neg(cos), Scalar(1));
  const Tensor neg_part = clamp(sub(cos, Scalar(margin)), Scalar(0), {});
  const Tensor l = add(where(eq(target, Scalar(1)), pos, Scalar(0)),
                       where(eq(target, Scalar(-1)), neg_part, Scalar(0)));
  return reduce_loss("cosine_embedding_loss", l, reduction);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           double margin, double p, double eps, bool swap, Reduction reduction) {
  check_defined("triplet_margin_loss", {&anchor, &positive, &negative});
  EMBER_CHECK(anchor.dim() == positive.dim() && anchor.dim() == negative.dim(),
              "[triplet_margin_loss] the anchor, positive and negative tensors must have the "
              "same rank, got shapes {}, {} and {}",
              shape_str(anchor.sizes()), shape_str(positive.sizes()), shape_str(negative.sizes()));
  const Tensor d_ap = pairwise_distance(anchor, positive, p, eps);
  Tensor d_an = pairwise_distance(anchor, negative, p, eps);
  if (swap) d_an = minimum(d_an, pairwise_distance(positive, negative, p, eps));
  const Tensor l = clamp(add(sub(d_ap, d_an), Scalar(margin)), Scalar(0), {});
  return reduce_loss("triplet_margin_loss", l, reduction);
}

Tensor poisson_nll_loss(const Tensor& x, const Tensor& target, bool log_input, bool full,
                        double eps, Reduction reduction) {
  check_defined("poisson_nll_loss", {&x, &target});
  Tensor l =
      log_input ? sub(exp(x), mul(target, x)) : sub(x, mul(target, log(add(x, Scalar(eps)))));
  if (full) {
    // Stirling's approximation of log(y!), where y > 1 (0 elsewhere, as PyTorch).
    const Tensor stirling = add(sub(mul(target, log(target)), target),
                                mul(log(mul(target, Scalar(2 * M_PI))), Scalar(0.5)));
    l = add(l, where(gt(target, Scalar(1)), stirling, Scalar(0)));
  }
  return reduce_loss("poisson_nll_loss", l, reduction);
}

Tensor gaussian_nll_loss(const Tensor& x, const Tensor& target, const Tensor& var, bool full,
                         double eps, Reduction reduction) {
  check_defined("gaussian_nll_loss", {&x, &target, &var});
  EMBER_CHECK(var.numel() == 0 || !any(lt(var, 0.0)).item<bool>(),
              "[gaussian_nll_loss] var has negative entry/entries");
  Tensor v = var;
  if (var.sizes() != x.sizes()) {
    // PyTorch's homoscedastic cases: var lacks x's last dim, or differs from x's shape in one
    // dim only, where it has size 1 (PyTorch's test: the sizes of var at the dims that differ
    // sum to 1).
    const IntList xs = x.sizes(), vs = var.sizes();
    const bool one_short =
        x.dim() >= 1 && var.dim() == x.dim() - 1 && std::equal(vs.begin(), vs.end(), xs.begin());
    int64_t differing = 0;
    for (size_t i = 0; var.dim() == x.dim() && i < vs.size(); ++i) {
      if (vs[i] != xs[i]) differing += vs[i];
    }
    EMBER_CHECK(one_short || (var.dim() == x.dim() && differing == 1),
                "[gaussian_nll_loss] var is of incorrect size: {} for input {} (give input's "
                "shape, or input's without its last dim, or with one dim of size 1)",
                shape_str(vs), shape_str(xs));
    if (one_short) v = var.unsqueeze(-1);
  }
  // max(v, eps) in value, the identity in gradient (PyTorch clamps a clone under no_grad).
  const Tensor clamped = add(v, sub(clamp(v, Scalar(eps), std::nullopt), v).detach());
  Tensor l = mul(add(log(clamped), div(square(sub(x, target)), clamped)), Scalar(0.5));
  if (full) l = add(l, Scalar(0.5 * std::log(2 * M_PI)));
  return reduce_loss("gaussian_nll_loss", l, reduction);
}

Tensor gaussian_nll_loss(const Tensor& x, const Tensor& target, double var, bool full, double eps,
                         Reduction reduction) {
  check_defined("gaussian_nll_loss", {&x, &target});
  EMBER_CHECK(var >= 0, "[gaussian_nll_loss] var has negative entry/entries: got {}", var);
  return gaussian_nll_loss(x, target, full_like(x, var), full, eps, reduction);
}

namespace detail {
void set_class_targets_on_host(std::optional<bool> force) {
  g_targets_on_host.store(force.has_value() ? (*force ? 1 : 0) : -1);
}
}  // namespace detail

}  // namespace ember
