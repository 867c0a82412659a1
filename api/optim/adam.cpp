#include "ember/optim/adam.h"

#include <cmath>
#include "api/optim/fused_step.h"

#include "ember/autograd/grad_mode.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/util/error.h"

namespace ember::optim {

namespace {

AdamOptions from_w(const AdamWOptions& o) {
  return {.lr = o.lr,
          .beta1 = o.beta1,
          .beta2 = o.beta2,
          .eps = o.eps,
          .weight_decay = o.weight_decay,
          .amsgrad = o.amsgrad};
}

std::vector<ParamGroup> one_group(std::vector<Tensor> params) {
  return {ParamGroup{std::move(params)}};
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Adam(one_group(std::move(params)), options) {}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions defaults)
    : Adam("optim.Adam", std::move(groups), defaults, /*decoupled=*/false) {}

Adam::Adam(std::string name, std::vector<ParamGroup> groups, AdamOptions defaults, bool decoupled)
    : Optimizer(std::move(name), to_map(defaults), {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
                /*counts_steps=*/true),
      decoupled_(decoupled) {
  init_groups(std::move(groups));
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options)
    : Adam("optim.AdamW", one_group(std::move(params)), from_w(options), /*decoupled=*/true) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults)
    : Adam("optim.AdamW", std::move(groups), from_w(defaults), /*decoupled=*/true) {}

Options Adam::to_map(const AdamOptions& o) {
  return {{"lr", o.lr},
          {"beta1", o.beta1},
          {"beta2", o.beta2},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"amsgrad", o.amsgrad ? 1.0 : 0.0}};
}

AdamOptions Adam::options_of(const ParamGroup& g) {
  return {.lr = g.get("lr"),
          .beta1 = g.get("beta1"),
          .beta2 = g.get("beta2"),
          .eps = g.get("eps"),
          .weight_decay = g.get("weight_decay"),
          .amsgrad = g.get("amsgrad") != 0};
}

void Adam::validate(const ParamGroup& group) const {
  const AdamOptions o = options_of(group);
  const std::string& n = name();
  EMBER_CHECK(o.lr >= 0, "[{}] invalid learning rate: {} (must be >= 0)", n, o.lr);
  EMBER_CHECK(o.eps >= 0, "[{}] invalid eps: {} (must be >= 0)", n, o.eps);
  EMBER_CHECK(o.beta1 >= 0 && o.beta1 < 1, "[{}] invalid beta1: {} (must be in [0, 1))", n,
              o.beta1);
  EMBER_CHECK(o.beta2 >= 0 && o.beta2 < 1, "[{}] invalid beta2: {} (must be in [0, 1))", n,
              o.beta2);
  EMBER_CHECK(o.weight_decay >= 0, "[{}] invalid weight_decay: {} (must be >= 0)", n,
              o.weight_decay);
}

void Adam::step() {
  autograd::NoGradGuard no_grad;
  for (auto& group : param_groups()) {
    const AdamOptions o = options_of(group);
    for (Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      ParamState& s = state_for(p);
      for (size_t b = 0; b < (o.amsgrad ? 3u : 2u); ++b) {
        if (!s.buffers[b].defined()) s.buffers[b] = zeros_like(p);
      }
      Tensor &m = s.buffers[0], &v = s.buffers[1];
      Tensor* vmax = o.amsgrad ? &s.buffers[2] : nullptr;
      const double t = static_cast<double>(++s.step);
      const double step_size = o.lr / (1 - std::pow(o.beta1, t));
      const double bc2_sqrt = std::sqrt(1 - std::pow(o.beta2, t));
      // Note [Optimizer steps through kernels]: the fused kernel where the device has one.
      const attrs::adam_step a{.decoupled = decoupled_ ? 1 : 0,
                               .lr = o.lr,
                               .beta1 = o.beta1,
                               .beta2 = o.beta2,
                               .eps = o.eps,
                               .weight_decay = o.weight_decay,
                               .step_size = step_size,
                               .bias_correction2_sqrt = bc2_sqrt};
      if (detail::fused_step(ops::adam_step, PackedAttrs(a), p, {&m, &v, vmax})) continue;
      // The rule, on any device and dtype.
      Tensor g = p.grad();
      if (o.weight_decay != 0) {
        if (decoupled_) {
          mul_(p, 1 - o.lr * o.weight_decay);
        } else {
          g = add(g, mul(p, o.weight_decay));
        }
      }
      mul_(m, o.beta1);
      add_(m, mul(g, 1 - o.beta1));
      mul_(v, o.beta2);
      add_(v, mul(mul(g, g), 1 - o.beta2));
      if (vmax) vmax->copy_(maximum(*vmax, v));
      Tensor denom = sqrt(vmax ? *vmax : v);
      div_(denom, bc2_sqrt);
      add_(denom, o.eps);
      sub_(p, mul(div(m, denom), step_size));
    }
  }
}

}  // namespace ember::optim
