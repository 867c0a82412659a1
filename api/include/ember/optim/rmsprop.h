// RMSprop: gradients scaled by a running root mean square, optionally centered and with momentum.
#pragma once

#include "ember/optim/optimizer.h"

namespace ember::optim {

/** RMSprop hyperparameters (torch.optim.RMSprop's defaults). */
struct RMSpropOptions {
  /** Learning rate. */
  double lr = 1e-2;
  /** Smoothing constant of the running mean of squared gradients. */
  double alpha = 0.99;
  /** Added to the denominator after the square root. */
  double eps = 1e-8;
  /** L2 penalty added to the gradient. */
  double weight_decay = 0;
  /** Momentum factor (0: none). */
  double momentum = 0;
  /** Divide by an estimate of the variance (mean square minus squared mean) instead. */
  bool centered = false;
};

/** RMSprop (Hinton), with PyTorch's update rule. */
class RMSprop : public Optimizer {
 public:
  /** One group of parameters with the given hyperparameters. */
  explicit RMSprop(std::vector<Tensor> params, RMSpropOptions options = {});
  /** Several groups; each group's options override `defaults`. */
  explicit RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults = {});

  /** Applies one update to every parameter with a gradient. */
  void step() override;
  /** The hyperparameters of a group as a typed struct. */
  static RMSpropOptions options_of(const ParamGroup& group);
  /** The hyperparameters as a name -> value map. */
  static Options to_map(const RMSpropOptions& options);

 protected:
  /** Checks the group's hyperparameters. */
  void validate(const ParamGroup& group) const override;
};

}  // namespace ember::optim
