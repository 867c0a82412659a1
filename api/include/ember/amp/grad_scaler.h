// GradScaler, as torch.amp.GradScaler: loss scaling for float16 training.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "ember/optim/optimizer.h"
#include "ember/state_dict.h"

namespace ember::amp {

/** GradScaler's settings (PyTorch's defaults). */
struct GradScalerOptions {
  /** The first scale. */
  double init_scale = 65536.0;
  /** Multiplies the scale after growth_interval steps without inf or NaN. */
  double growth_factor = 2.0;
  /** Multiplies the scale after a step whose gradients had inf or NaN. */
  double backoff_factor = 0.5;
  /** Steps without inf or NaN before the scale grows. */
  int64_t growth_interval = 2000;
  /** Off, every call passes through (scale() returns the loss, step() steps). */
  bool enabled = true;
};

/** Scales the loss so float16 gradients do not underflow, unscales them before the optimizer
 *  step, skips steps whose gradients have inf or NaN and adapts the scale (Note [Loss
 *  scaling]). Use: scaler.scale(loss).backward(); scaler.step(opt); scaler.update(). */
class GradScaler {
 public:
  /** A scaler with `options` (checked). */
  explicit GradScaler(GradScalerOptions options = {});
  /** loss * scale (the loss as it is when disabled). */
  Tensor scale(const Tensor& loss) const;
  /** Divides the gradients of `optimizer`'s parameters by the scale, once per step, and starts
   *  the check for inf and NaN on their devices (call it before clipping gradients). */
  void unscale_(optim::Optimizer& optimizer);
  /** unscale_ for the parameters of an optimizer C++ does not hold (one written in Python):
   *  `owner` stands for that optimizer in the once-per-step check. */
  void unscale_(const void* owner, const std::vector<Tensor>& params);
  /** Unscales if not done yet, then steps `optimizer` unless one of its gradients was inf or
   *  NaN (one host read per device of its gradients); returns whether it stepped. */
  bool step(optim::Optimizer& optimizer);
  /** step for an optimizer C++ does not hold: unscales `params` unless `owner` was unscaled this
   *  step, then calls `run_step` unless a gradient was inf or NaN; returns whether it called it. */
  bool step(const void* owner, const std::vector<Tensor>& params,
            const std::function<void()>& run_step);
  /** Backs off if any optimizer unscaled since the last update had inf or NaN, grows after
   *  growth_interval clean steps; starts a new step. */
  void update();
  /** Starts a new step with `new_scale` (> 0, finite) as the scale; the growth tracker is kept. */
  void update(double new_scale);
  /** The settings. */
  const GradScalerOptions& options() const { return options_; }
  /** The current scale. */
  double get_scale() const { return scale_; }
  /** Whether the last step() was skipped. */
  bool last_step_skipped() const { return skipped_; }
  /** "scale", "growth_tracker" (float64 and int64 0-d tensors), for checkpoints. */
  StateDict state_dict() const;
  /** Restores a state_dict(). */
  void load_state_dict(const StateDict& dict);

 private:
  GradScalerOptions options_;
  double scale_;
  /** Whether any gradient of `owner`'s was inf or NaN, read once from its checks. */
  bool found_inf(const void* owner);

  int64_t growth_tracker_ = 0;
  bool skipped_ = false;
  /** An optimizer unscaled this step: its checks on the devices, until read, then the answer. */
  struct Unscaled {
    std::vector<Tensor> checks;  // float32 scalars, NaN iff a gradient there had inf or NaN
    bool read = false, found_inf = false;
  };
  std::unordered_map<const void*, Unscaled> unscaled_;
};

}  // namespace ember::amp
