// SGD: stochastic gradient descent with momentum, dampening, Nesterov and weight decay.
#pragma once

#include "ember/optim/optimizer.h"

namespace ember::optim {

/** SGD hyperparameters (torch.optim.SGD's defaults). */
struct SGDOptions {
  /** Learning rate. */
  double lr = 1e-3;
  /** Momentum factor (0: plain SGD). */
  double momentum = 0;
  /** Dampening of the gradient added to the momentum buffer. */
  double dampening = 0;
  /** L2 penalty added to the gradient. */
  double weight_decay = 0;
  /** Nesterov momentum (needs momentum > 0 and dampening = 0). */
  bool nesterov = false;
};

/** Stochastic gradient descent, with PyTorch's update rule. */
class SGD : public Optimizer {
 public:
  /** One group of parameters with the given hyperparameters. */
  explicit SGD(std::vector<Tensor> params, SGDOptions options = {});
  /** Several groups; each group's options override `defaults`. */
  explicit SGD(std::vector<ParamGroup> groups, SGDOptions defaults = {});

  /** Applies one update to every parameter with a gradient. */
  void step() override;
  /** The hyperparameters of a group as a typed struct. */
  static SGDOptions options_of(const ParamGroup& group);
  /** The hyperparameters as a name -> value map. */
  static Options to_map(const SGDOptions& options);

 protected:
  /** Checks the group's hyperparameters. */
  void validate(const ParamGroup& group) const override;
};

}  // namespace ember::optim
