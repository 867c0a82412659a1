#include "ember/optim/adam_variants.h"

#include <cmath>

#include "ember/autograd/grad_mode.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/reduce.h"
#include "ember/util/error.h"

namespace ember::optim {

// The rules are written with the core's ops, as Adadelta's, so they run on any device and
// floating dtype (Note [Optimizer steps through kernels]); each follows PyTorch's single-tensor
// implementation step for step, so its iterates match PyTorch's to rounding.

namespace {

// The checks the Adam family shares: lr, eps and weight_decay non-negative, betas in [0, 1).
void check_adam_like(const char* name, double lr, double beta1, double beta2, double eps,
                     double weight_decay) {
  EMBER_CHECK(lr >= 0, "[{}] invalid learning rate: {} (must be >= 0)", name, lr);
  EMBER_CHECK(eps >= 0, "[{}] invalid epsilon value: {} (must be >= 0)", name, eps);
  EMBER_CHECK(beta1 >= 0 && beta1 < 1,
              "[{}] invalid beta parameter at index 0: {} (must be in "
              "[0, 1))",
              name, beta1);
  EMBER_CHECK(beta2 >= 0 && beta2 < 1,
              "[{}] invalid beta parameter at index 1: {} (must be in "
              "[0, 1))",
              name, beta2);
  EMBER_CHECK(weight_decay >= 0, "[{}] invalid weight_decay value: {} (must be >= 0)", name,
              weight_decay);
}

// The gradient with the L2 penalty added, or (decoupled) the parameter decayed in place first.
Tensor decayed_grad(Tensor& p, double lr, double weight_decay, bool decoupled) {
  Tensor g = p.grad();
  if (weight_decay == 0) return g;
  if (decoupled) {
    mul_(p, 1 - lr * weight_decay);
    return g;
  }
  return add(g, mul(p, weight_decay));
}

// state's buffer i, made zeros like p when it is still undefined.
Tensor& zeros_buffer(ParamState& state, size_t i, const Tensor& p) {
  Tensor& b = state.buffers[i];
  if (!b.defined()) b = zeros_like(p);
  return b;
}

}  // namespace

// ---- Adamax ------------------------------------------------------------------------------------

std::vector<Hyper<AdamaxOptions>> AdamaxOptions::fields() {
  return {{"lr", &AdamaxOptions::lr},
          {"beta1", &AdamaxOptions::beta1},
          {"beta2", &AdamaxOptions::beta2},
          {"eps", &AdamaxOptions::eps},
          {"weight_decay", &AdamaxOptions::weight_decay}};
}

void AdamaxOptions::check() const {
  check_adam_like(kName, lr, beta1, beta2, eps, weight_decay);
}

void Adamax::step() {
  each_param([](Tensor& p, ParamState& s, const AdamaxOptions& o) {
    Tensor& exp_avg = zeros_buffer(s, 0, p);
    Tensor& exp_inf = zeros_buffer(s, 1, p);
    const Tensor g = decayed_grad(p, o.lr, o.weight_decay, false);
    lerp_(exp_avg, g, 1 - o.beta1);
    exp_inf = maximum(mul(exp_inf, o.beta2), add(abs(g), o.eps));
    const double clr = o.lr / (1 - std::pow(o.beta1, static_cast<double>(s.step)));
    sub_(p, mul(div(exp_avg, exp_inf), clr));
  });
}

// ---- NAdam -------------------------------------------------------------------------------------

std::vector<Hyper<NAdamOptions>> NAdamOptions::fields() {
  return {{"lr", &NAdamOptions::lr},
          {"beta1", &NAdamOptions::beta1},
          {"beta2", &NAdamOptions::beta2},
          {"eps", &NAdamOptions::eps},
          {"weight_decay", &NAdamOptions::weight_decay},
          {"momentum_decay", &NAdamOptions::momentum_decay},
          {"decoupled_weight_decay", nullptr, &NAdamOptions::decoupled_weight_decay}};
}

void NAdamOptions::check() const {
  check_adam_like(kName, lr, beta1, beta2, eps, weight_decay);
  EMBER_CHECK(momentum_decay >= 0, "[{}] invalid momentum_decay value: {} (must be >= 0)", kName,
              momentum_decay);
}

void NAdam::step() {
  each_param([](Tensor& p, ParamState& s, const NAdamOptions& o) {
    Tensor& exp_avg = zeros_buffer(s, 0, p);
    Tensor& exp_avg_sq = zeros_buffer(s, 1, p);
    Tensor& mu_product = s.buffers[2];
    if (!mu_product.defined()) mu_product = ones({}, DType::Float64);
    const double t = static_cast<double>(s.step);
    const Tensor g = decayed_grad(p, o.lr, o.weight_decay, o.decoupled_weight_decay);
    // The momentum schedule mu_t = beta1 (1 - 0.96^(t psi) / 2) and the product of its values.
    const double mu = o.beta1 * (1 - 0.5 * std::pow(0.96, t * o.momentum_decay));
    const double mu_next = o.beta1 * (1 - 0.5 * std::pow(0.96, (t + 1) * o.momentum_decay));
    const double product = mu_product.item<double>() * mu;
    mu_product = full({}, product, DType::Float64);
    lerp_(exp_avg, g, 1 - o.beta1);
    mul_(exp_avg_sq, o.beta2);
    add_(exp_avg_sq, mul(mul(g, g), 1 - o.beta2));
    const double bias_correction2 = 1 - std::pow(o.beta2, t);
    const Tensor denom = add(sqrt(div(exp_avg_sq, bias_correction2)), o.eps);
    sub_(p, mul(div(g, denom), o.lr * (1 - mu) / (1 - product)));
    sub_(p, mul(div(exp_avg, denom), o.lr * mu_next / (1 - product * mu_next)));
  });
}

Tensor NAdam::load_buffer(size_t buffer, const Tensor& value, const Tensor& param,
                          const std::string& key, size_t index) const {
  if (buffer != 2) return Optimizer::load_buffer(buffer, value, param, key, index);
  EMBER_CHECK(value.numel() == 1,
              "[{}] load_state_dict: entry '{}' should hold one number: got shape {}", name(), key,
              value.sizes());
  return value.reshape({}).to(Device::cpu()).to(DType::Float64).clone();
}

// ---- RAdam -------------------------------------------------------------------------------------

std::vector<Hyper<RAdamOptions>> RAdamOptions::fields() {
  return {{"lr", &RAdamOptions::lr},
          {"beta1", &RAdamOptions::beta1},
          {"beta2", &RAdamOptions::beta2},
          {"eps", &RAdamOptions::eps},
          {"weight_decay", &RAdamOptions::weight_decay},
          {"decoupled_weight_decay", nullptr, &RAdamOptions::decoupled_weight_decay}};
}

void RAdamOptions::check() const {
  check_adam_like(kName, lr, beta1, beta2, eps, weight_decay);
}

void RAdam::step() {
  each_param([](Tensor& p, ParamState& s, const RAdamOptions& o) {
    Tensor& exp_avg = zeros_buffer(s, 0, p);
    Tensor& exp_avg_sq = zeros_buffer(s, 1, p);
    const double t = static_cast<double>(s.step);
    const Tensor g = decayed_grad(p, o.lr, o.weight_decay, o.decoupled_weight_decay);
    lerp_(exp_avg, g, 1 - o.beta1);
    mul_(exp_avg_sq, o.beta2);
    add_(exp_avg_sq, mul(mul(g, g), 1 - o.beta2));
    const double bias_correction1 = 1 - std::pow(o.beta1, t);
    const double bias_correction2 = 1 - std::pow(o.beta2, t);
    const Tensor corrected = div(exp_avg, bias_correction1);
    // The length of the approximated simple moving average: rectify once it passes 5.
    const double rho_inf = 2 / (1 - o.beta2) - 1;
    const double rho_t = rho_inf - 2 * t * std::pow(o.beta2, t) / bias_correction2;
    if (rho_t > 5) {
      const double rect =
          std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
      const Tensor denom = add(sqrt(exp_avg_sq), o.eps);
      const Tensor adaptive = div(full_like(denom, std::sqrt(bias_correction2)), denom);
      sub_(p, mul(mul(mul(corrected, o.lr), adaptive), rect));
    } else {
      sub_(p, mul(corrected, o.lr));
    }
  });
}

// ---- Rprop -------------------------------------------------------------------------------------

std::vector<Hyper<RpropOptions>> RpropOptions::fields() {
  return {{"lr", &RpropOptions::lr},
          {"etaminus", &RpropOptions::etaminus},
          {"etaplus", &RpropOptions::etaplus},
          {"step_size_min", &RpropOptions::step_size_min},
          {"step_size_max", &RpropOptions::step_size_max}};
}

void RpropOptions::check() const {
  EMBER_CHECK(lr >= 0, "[{}] invalid learning rate: {} (must be >= 0)", kName, lr);
  EMBER_CHECK(0 < etaminus && etaminus < 1 && etaplus > 1,
              "[{}] invalid eta values: ({}, {}) (need 0 < etaminus < 1 < etaplus)", kName,
              etaminus, etaplus);
  EMBER_CHECK(0 <= step_size_min && step_size_min <= step_size_max,
              "[{}] invalid step sizes: ({}, {}) (need 0 <= min <= max)", kName, step_size_min,
              step_size_max);
}

void Rprop::step() {
  each_param([](Tensor& p, ParamState& s, const RpropOptions& o) {
    Tensor& prev = zeros_buffer(s, 0, p);
    Tensor& step_size = s.buffers[1];
    if (!step_size.defined()) step_size = full_like(p.grad(), o.lr);
    const Tensor g = p.grad();
    // The product's sign: the gradient kept its sign (grow the step), flipped (shrink it and
    // skip this coordinate's update) or one of them is zero (keep the step).
    const Tensor agree = sign(mul(g, prev));
    const Tensor factor = where(gt(agree, 0.0), full_like(g, o.etaplus),
                                where(lt(agree, 0.0), full_like(g, o.etaminus), ones_like(g)));
    step_size = clamp(mul(step_size, factor), Scalar(o.step_size_min), Scalar(o.step_size_max));
    const Tensor used = where(lt(agree, 0.0), zeros_like(g), g);
    sub_(p, mul(sign(used), step_size));
    prev = used.clone();
  });
}

}  // namespace ember::optim
