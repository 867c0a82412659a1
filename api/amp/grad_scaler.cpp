#include "ember/amp/grad_scaler.h"

#include <algorithm>
#include <cmath>

#include "ember/autograd/grad_mode.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/reduce.h"
#include "ember/util/error.h"

namespace ember::amp {

// Note [Loss scaling]
// float16 gradients of small magnitude flush to zero. Multiplying the loss by a large scale
// multiplies every gradient by it, into float16's range; unscale_ divides them back (in the
// gradients' own dtype, float32 for float32 parameters) and checks for inf and NaN with one
// max(|g|) per gradient. A step with such a gradient is skipped and the scale backs off; after
// growth_interval clean steps it grows, so it settles near the largest scale that does not
// overflow, as PyTorch's GradScaler does.
//
// Note [The inf check stays on the device]
// Reading max(|g|) back for every gradient cost one host synchronization per parameter (on a
// GPU, a pipeline drain each). The check now stays where the gradients are: per gradient,
// sum(g * 0) is 0 if every element is finite and NaN if one is inf or NaN (inf * 0 and NaN * 0
// are NaN, and a NaN survives the sum), and these sums are added, in float32, into one scalar per
// device. step() reads the scalars of its optimizer once, so a step costs one host read per
// device its gradients live on, after the backward's kernels are queued. As in PyTorch, each
// optimizer is checked on its own gradients: an optimizer whose gradients are clean steps even if
// another's were not, and update() backs off if any of them had inf or NaN. PyTorch goes one
// step further and skips the optimizer's kernels on the device (its fused optimizers take the
// found-inf tensor); Ember's optimizers decide on the host, after that one read.
GradScaler::GradScaler(GradScalerOptions options) : options_(options), scale_(options.init_scale) {
  EMBER_CHECK(options.init_scale > 0 && std::isfinite(options.init_scale),
              "[amp.GradScaler] init_scale must be positive and finite: got {}",
              options.init_scale);
  EMBER_CHECK(options.growth_factor > 1, "[amp.GradScaler] growth_factor must be > 1: got {}",
              options.growth_factor);
  EMBER_CHECK(options.backoff_factor > 0 && options.backoff_factor < 1,
              "[amp.GradScaler] backoff_factor must be in (0, 1): got {}", options.backoff_factor);
  EMBER_CHECK(options.growth_interval >= 1, "[amp.GradScaler] growth_interval must be >= 1: got {}",
              options.growth_interval);
}

Tensor GradScaler::scale(const Tensor& loss) const {
  if (!options_.enabled) return loss;
  return mul(loss, scale_);
}

namespace {

std::vector<Tensor> params_of(const optim::Optimizer& optimizer) {
  std::vector<Tensor> params;
  for (const auto& group : optimizer.param_groups()) {
    params.insert(params.end(), group.params.begin(), group.params.end());
  }
  return params;
}

}  // namespace

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  unscale_(&optimizer, params_of(optimizer));
}

void GradScaler::unscale_(const void* owner, const std::vector<Tensor>& params) {
  if (!options_.enabled) return;
  EMBER_CHECK(!unscaled_.contains(owner),
              "[amp.GradScaler] unscale_ was already called for this optimizer since the last "
              "update()");
  autograd::NoGradGuard no_grad;
  const double inv = 1.0 / scale_;
  Unscaled& mine = unscaled_[owner];
  for (const Tensor& p : params) {
    Tensor& g = p.mutable_grad();
    if (!g.defined()) continue;
    mul_(g, inv);
    // Note [The inf check stays on the device]: 0 if g is finite, NaN if not.
    const Tensor check = sum(mul(g, 0.0)).to(DType::Float32);
    auto same_device = [&](const Tensor& c) { return c.device() == check.device(); };
    auto it = std::find_if(mine.checks.begin(), mine.checks.end(), same_device);
    if (it == mine.checks.end())
      mine.checks.push_back(check);
    else
      add_(*it, check);
  }
}

bool GradScaler::found_inf(const void* owner) {
  Unscaled& u = unscaled_.at(owner);
  if (!u.read) {
    for (const Tensor& c : u.checks) u.found_inf = u.found_inf || std::isnan(c.item());
    u.checks.clear();
    u.read = true;
  }
  return u.found_inf;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  return step(&optimizer, params_of(optimizer), [&optimizer] { optimizer.step(); });
}

bool GradScaler::step(const void* owner, const std::vector<Tensor>& params,
                      const std::function<void()>& run_step) {
  if (!options_.enabled) {
    run_step();
    return true;
  }
  if (!unscaled_.contains(owner)) unscale_(owner, params);
  skipped_ = found_inf(owner);
  if (!skipped_) run_step();
  return !skipped_;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  bool any_inf = false;
  for (auto& [owner, unscaled] : unscaled_) any_inf = found_inf(owner) || any_inf;
  if (any_inf) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == options_.growth_interval) {
    scale_ *= options_.growth_factor;
    growth_tracker_ = 0;
  }
  unscaled_.clear();
}

void GradScaler::update(double new_scale) {
  if (!options_.enabled) return;
  EMBER_CHECK(new_scale > 0 && std::isfinite(new_scale),
              "[amp.GradScaler] update: new_scale must be positive and finite: got {}", new_scale);
  scale_ = new_scale;
  unscaled_.clear();
}

StateDict GradScaler::state_dict() const {
  return {
      {"scale", full({}, scale_, TensorOptions(DType::Float64, Device::cpu()))},
      {"growth_tracker", full({}, growth_tracker_, TensorOptions(DType::Int64, Device::cpu()))}};
}

void GradScaler::load_state_dict(const StateDict& dict) {
  auto get = [&](const char* key) {
    auto it = dict.find(key);
    EMBER_CHECK(it != dict.end() && it->second.numel() == 1,
                "[amp.GradScaler] load_state_dict: missing or non-scalar '{}'", key);
    return it->second.to(Device::cpu()).to(DType::Float64).item();
  };
  const double scale = get("scale"), tracker = get("growth_tracker");
  EMBER_CHECK(scale > 0 && std::isfinite(scale) && tracker >= 0,
              "[amp.GradScaler] load_state_dict: scale {} and growth_tracker {} are out of range",
              scale, tracker);
  scale_ = scale;
  growth_tracker_ = static_cast<int64_t>(tracker);
}

}  // namespace ember::amp
