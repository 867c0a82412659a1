#include "ember/optim/sgd.h"

#include "api/optim/fused_step.h"
#include "ember/autograd/grad_mode.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/util/error.h"

namespace ember::optim {

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : SGD(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions defaults)
    : Optimizer("optim.SGD", to_map(defaults), {"momentum_buffer"}, /*counts_steps=*/false) {
  init_groups(std::move(groups));
}

Options SGD::to_map(const SGDOptions& o) {
  return {{"lr", o.lr},
          {"momentum", o.momentum},
          {"dampening", o.dampening},
          {"weight_decay", o.weight_decay},
          {"nesterov", o.nesterov ? 1.0 : 0.0}};
}

SGDOptions SGD::options_of(const ParamGroup& g) {
  return {.lr = g.get("lr"),
          .momentum = g.get("momentum"),
          .dampening = g.get("dampening"),
          .weight_decay = g.get("weight_decay"),
          .nesterov = g.get("nesterov") != 0};
}

void SGD::validate(const ParamGroup& group) const {
  const SGDOptions o = options_of(group);
  EMBER_CHECK(o.lr >= 0, "[optim.SGD] invalid learning rate: {} (must be >= 0)", o.lr);
  EMBER_CHECK(o.momentum >= 0, "[optim.SGD] invalid momentum: {} (must be >= 0)", o.momentum);
  EMBER_CHECK(o.weight_decay >= 0, "[optim.SGD] invalid weight_decay: {} (must be >= 0)",
              o.weight_decay);
  EMBER_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
              "[optim.SGD] nesterov momentum requires momentum > 0 and dampening = 0, got "
              "momentum {} and dampening {}",
              o.momentum, o.dampening);
}

void SGD::step() {
  autograd::NoGradGuard no_grad;
  for (auto& group : param_groups()) {
    const SGDOptions o = options_of(group);
    for (Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      Tensor* buf = nullptr;
      bool first = false;
      if (o.momentum != 0) {
        ParamState& s = state_for(p);
        buf = &s.buffers[0];
        first = !buf->defined();
        if (first) *buf = empty_like(p);
      }
      // Note [Optimizer steps through kernels]: the fused kernel where the device has one.
      const attrs::sgd_step a{.first = first ? 1 : 0,
                              .nesterov = o.nesterov ? 1 : 0,
                              .lr = o.lr,
                              .momentum = o.momentum,
                              .dampening = o.dampening,
                              .weight_decay = o.weight_decay};
      if (detail::fused_step(ops::sgd_step, PackedAttrs(a), p, {buf})) continue;
      // The rule, on any device and dtype.
      Tensor d = p.grad();
      if (o.weight_decay != 0) d = add(d, mul(p, o.weight_decay));
      if (buf) {
        if (first) {
          buf->copy_(d);
        } else {
          mul_(*buf, o.momentum);
          add_(*buf, o.dampening == 0 ? d : mul(d, 1 - o.dampening));
        }
        d = o.nesterov ? add(d, mul(*buf, o.momentum)) : *buf;
      }
      sub_(p, mul(d, o.lr));
    }
  }
}

}  // namespace ember::optim
