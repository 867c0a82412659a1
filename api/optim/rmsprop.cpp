#include "ember/optim/rmsprop.h"

#include <cmath>
#include "api/optim/fused_step.h"

#include "ember/autograd/grad_mode.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/util/error.h"

namespace ember::optim {

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions options)
    : RMSprop(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}

RMSprop::RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults)
    : Optimizer("optim.RMSprop", to_map(defaults), {"square_avg", "momentum_buffer", "grad_avg"},
                /*counts_steps=*/true) {
  init_groups(std::move(groups));
}

Options RMSprop::to_map(const RMSpropOptions& o) {
  return {{"lr", o.lr},
          {"alpha", o.alpha},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"momentum", o.momentum},
          {"centered", o.centered ? 1.0 : 0.0}};
}

RMSpropOptions RMSprop::options_of(const ParamGroup& g) {
  return {.lr = g.get("lr"),
          .alpha = g.get("alpha"),
          .eps = g.get("eps"),
          .weight_decay = g.get("weight_decay"),
          .momentum = g.get("momentum"),
          .centered = g.get("centered") != 0};
}

void RMSprop::validate(const ParamGroup& group) const {
  const RMSpropOptions o = options_of(group);
  EMBER_CHECK(o.lr >= 0, "[optim.RMSprop] invalid learning rate: {} (must be >= 0)", o.lr);
  EMBER_CHECK(o.eps >= 0, "[optim.RMSprop] invalid eps: {} (must be >= 0)", o.eps);
  EMBER_CHECK(o.alpha >= 0, "[optim.RMSprop] invalid alpha: {} (must be >= 0)", o.alpha);
  EMBER_CHECK(o.momentum >= 0, "[optim.RMSprop] invalid momentum: {} (must be >= 0)", o.momentum);
  EMBER_CHECK(o.weight_decay >= 0, "[optim.RMSprop] invalid weight_decay: {} (must be >= 0)",
              o.weight_decay);
}

void RMSprop::step() {
  autograd::NoGradGuard no_grad;
  for (auto& group : param_groups()) {
    const RMSpropOptions o = options_of(group);
    for (Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      ParamState& s = state_for(p);
      ++s.step;
      Tensor& sq = s.buffers[0];
      if (!sq.defined()) sq = zeros_like(p);
      Tensor* buf = nullptr;
      Tensor* avg = nullptr;
      if (o.momentum > 0) {
        buf = &s.buffers[1];
        if (!buf->defined()) *buf = zeros_like(p);
      }
      if (o.centered) {
        avg = &s.buffers[2];
        if (!avg->defined()) *avg = zeros_like(p);
      }
      // Note [Optimizer steps through kernels]: the fused kernel where the device has one.
      const attrs::rmsprop_step a{.has_momentum = buf ? 1 : 0,
                                  .centered = avg ? 1 : 0,
                                  .lr = o.lr,
                                  .alpha = o.alpha,
                                  .eps = o.eps,
                                  .weight_decay = o.weight_decay,
                                  .momentum = o.momentum};
      if (detail::fused_step(ops::rmsprop_step, PackedAttrs(a), p, {&sq, buf, avg})) continue;
      // The rule, on any device and dtype.
      Tensor g = p.grad();
      if (o.weight_decay != 0) g = add(g, mul(p, o.weight_decay));
      mul_(sq, o.alpha);
      add_(sq, mul(mul(g, g), 1 - o.alpha));
      Tensor d;
      if (avg) {
        mul_(*avg, o.alpha);
        add_(*avg, mul(g, 1 - o.alpha));
        d = sqrt(sub(sq, mul(*avg, *avg)));
      } else {
        d = sqrt(sq);
      }
      add_(d, o.eps);
      if (buf) {
        mul_(*buf, o.momentum);
        add_(*buf, div(g, d));
        sub_(p, mul(*buf, o.lr));
      } else {
        sub_(p, mul(div(g, d), o.lr));
      }
    }
  }
}

}  // namespace ember::optim
