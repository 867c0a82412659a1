// Adadelta and Adagrad: per-coordinate step sizes from the history of each gradient coordinate.
#pragma once

#include "ember/optim/optimizer.h"

namespace ember::optim {

/** Adadelta hyperparameters (torch.optim.Adadelta's defaults). */
struct AdadeltaOptions {
  /** Scales the computed update (Zeiler's method has none: 1). */
  double lr = 1.0;
  /** Decay of the running averages of squared gradients and squared updates. */
  double rho = 0.9;
  /** Added inside both square roots. */
  double eps = 1e-6;
  /** L2 penalty added to the gradient. */
  double weight_decay = 0;
};

/** Adadelta (Zeiler, 2012), with PyTorch's update rule. */
class Adadelta : public Optimizer {
 public:
  /** One group of parameters with the given hyperparameters. */
  explicit Adadelta(std::vector<Tensor> params, AdadeltaOptions options = {});
  /** Several groups; each group's options override `defaults`. */
  explicit Adadelta(std::vector<ParamGroup> groups, AdadeltaOptions defaults = {});

  /** Applies one update to every parameter with a gradient. */
  void step() override;
  /** The hyperparameters of a group as a typed struct. */
  static AdadeltaOptions options_of(const ParamGroup& group);
  /** The hyperparameters as a name -> value map. */
  static Options to_map(const AdadeltaOptions& options);

 protected:
  /** Checks the group's hyperparameters. */
  void validate(const ParamGroup& group) const override;
};

/** Adagrad hyperparameters (torch.optim.Adagrad's defaults). */
struct AdagradOptions {
  /** Learning rate. */
  double lr = 1e-2;
  /** The learning rate of step t is lr / (1 + (t - 1) * lr_decay). */
  double lr_decay = 0;
  /** L2 penalty added to the gradient. */
  double weight_decay = 0;
  /** The starting value of every coordinate's sum of squared gradients. */
  double initial_accumulator_value = 0;
  /** Added to the square root of the sum. */
  double eps = 1e-10;
};

/** Adagrad (Duchi et al., 2011), with PyTorch's update rule. */
class Adagrad : public Optimizer {
 public:
  /** One group of parameters with the given hyperparameters. */
  explicit Adagrad(std::vector<Tensor> params, AdagradOptions options = {});
  /** Several groups; each group's options override `defaults`. */
  explicit Adagrad(std::vector<ParamGroup> groups, AdagradOptions defaults = {});

  /** Applies one update to every parameter with a gradient. */
  void step() override;
  /** The hyperparameters of a group as a typed struct. */
  static AdagradOptions options_of(const ParamGroup& group);
  /** The hyperparameters as a name -> value map. */
  static Options to_map(const AdagradOptions& options);

 protected:
  /** Checks the group's hyperparameters. */
  void validate(const ParamGroup& group) const override;
};

}  // namespace ember::optim
