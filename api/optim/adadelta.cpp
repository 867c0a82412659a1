#include "ember/optim/adadelta.h"

#include "ember/autograd/grad_mode.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/util/error.h"

namespace ember::optim {

// Both rules are written with the core's ops, so they run on any device and floating dtype
// (no backend has a fused kernel for them; Note [Optimizer steps through kernels]).

Adadelta::Adadelta(std::vector<Tensor> params, AdadeltaOptions options)
    : Adadelta(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}

Adadelta::Adadelta(std::vector<ParamGroup> groups, AdadeltaOptions defaults)
    : Optimizer("optim.Adadelta", to_map(defaults), {"square_avg", "acc_delta"},
                /*counts_steps=*/true) {
  init_groups(std::move(groups));
}

Options Adadelta::to_map(const AdadeltaOptions& o) {
  return {{"lr", o.lr}, {"rho", o.rho}, {"eps", o.eps}, {"weight_decay", o.weight_decay}};
}

AdadeltaOptions Adadelta::options_of(const ParamGroup& g) {
  return {.lr = g.get("lr"),
          .rho = g.get("rho"),
          .eps = g.get("eps"),
          .weight_decay = g.get("weight_decay")};
}

void Adadelta::validate(const ParamGroup& group) const {
  const AdadeltaOptions o = options_of(group);
  EMBER_CHECK(o.lr >= 0, "[optim.Adadelta] invalid learning rate: {} (must be >= 0)", o.lr);
  EMBER_CHECK(o.rho >= 0 && o.rho <= 1, "[optim.Adadelta] invalid rho: {} (must be in [0, 1])",
              o.rho);
  EMBER_CHECK(o.eps >= 0, "[optim.Adadelta] invalid eps: {} (must be >= 0)", o.eps);
  EMBER_CHECK(o.weight_decay >= 0, "[optim.Adadelta] invalid weight_decay: {} (must be >= 0)",
              o.weight_decay);
}

void Adadelta::step() {
  autograd::NoGradGuard no_grad;
  for (auto& group : param_groups()) {
    const AdadeltaOptions o = options_of(group);
    for (Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      ParamState& s = state_for(p);
      ++s.step;
      Tensor& square_avg = s.buffers[0];
      Tensor& acc_delta = s.buffers[1];
      if (!square_avg.defined()) square_avg = zeros_like(p);
      if (!acc_delta.defined()) acc_delta = zeros_like(p);
      Tensor g = p.grad();
      if (o.weight_decay != 0) g = add(g, mul(p, o.weight_decay));
      mul_(square_avg, o.rho);
      add_(square_avg, mul(mul(g, g), 1 - o.rho));
      const Tensor delta = mul(div(sqrt(add(acc_delta, o.eps)), sqrt(add(square_avg, o.eps))), g);
      mul_(acc_delta, o.rho);
      add_(acc_delta, mul(mul(delta, delta), 1 - o.rho));
      sub_(p, mul(delta, o.lr));
    }
  }
}

Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions options)
    : Adagrad(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}

Adagrad::Adagrad(std::vector<ParamGroup> groups, AdagradOptions defaults)
    : Optimizer("optim.Adagrad", to_map(defaults), {"sum"}, /*counts_steps=*/true) {
  init_groups(std::move(groups));
}

Options Adagrad::to_map(const AdagradOptions& o) {
  return {{"lr", o.lr},
          {"lr_decay", o.lr_decay},
          {"weight_decay", o.weight_decay},
          {"initial_accumulator_value", o.initial_accumulator_value},
          {"eps", o.eps}};
}

AdagradOptions Adagrad::options_of(const ParamGroup& g) {
  return {.lr = g.get("lr"),
          .lr_decay = g.get("lr_decay"),
          .weight_decay = g.get("weight_decay"),
          .initial_accumulator_value = g.get("initial_accumulator_value"),
          .eps = g.get("eps")};
}

void Adagrad::validate(const ParamGroup& group) const {
  const AdagradOptions o = options_of(group);
  EMBER_CHECK(o.lr >= 0, "[optim.Adagrad] invalid learning rate: {} (must be >= 0)", o.lr);
  EMBER_CHECK(o.lr_decay >= 0, "[optim.Adagrad] invalid lr_decay: {} (must be >= 0)", o.lr_decay);
  EMBER_CHECK(o.weight_decay >= 0, "[optim.Adagrad] invalid weight_decay: {} (must be >= 0)",
              o.weight_decay);
  EMBER_CHECK(o.initial_accumulator_value >= 0,
              "[optim.Adagrad] invalid initial_accumulator_value: {} (must be >= 0)",
              o.initial_accumulator_value);
  EMBER_CHECK(o.eps >= 0, "[optim.Adagrad] invalid eps: {} (must be >= 0)", o.eps);
}

void Adagrad::step() {
  autograd::NoGradGuard no_grad;
  for (auto& group : param_groups()) {
    const AdagradOptions o = options_of(group);
    for (Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      ParamState& s = state_for(p);
      ++s.step;
      Tensor& sum = s.buffers[0];
      if (!sum.defined()) sum = full_like(p, o.initial_accumulator_value);
      Tensor g = p.grad();
      if (o.weight_decay != 0) g = add(g, mul(p, o.weight_decay));
      const double clr = o.lr / (1 + static_cast<double>(s.step - 1) * o.lr_decay);
      add_(sum, mul(g, g));
      sub_(p, mul(div(g, add(sqrt(sum), o.eps)), clr));
    }
  }
}

}  // namespace ember::optim
