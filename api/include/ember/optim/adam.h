// Adam and AdamW: adaptive moment estimation, with L2 or decoupled weight decay.
#pragma once

#include "ember/optim/optimizer.h"

namespace ember::optim {

/** Adam hyperparameters (torch.optim.Adam's defaults). */
struct AdamOptions {
  /** Learning rate. */
  double lr = 1e-3;
  /** Decay rate of the first moment estimate. */
  double beta1 = 0.9;
  /** Decay rate of the second moment estimate. */
  double beta2 = 0.999;
  /** Added to the denominator after the square root. */
  double eps = 1e-8;
  /** L2 penalty added to the gradient. */
  double weight_decay = 0;
  /** Use the maximum of past second moments (AMSGrad). */
  bool amsgrad = false;
};

/** AdamW hyperparameters (torch.optim.AdamW's defaults). */
struct AdamWOptions {
  /** Learning rate. */
  double lr = 1e-3;
  /** Decay rate of the first moment estimate. */
  double beta1 = 0.9;
  /** Decay rate of the second moment estimate. */
  double beta2 = 0.999;
  /** Added to the denominator after the square root. */
  double eps = 1e-8;
  /** Decoupled weight decay: p *= 1 - lr * weight_decay before the Adam step. */
  double weight_decay = 1e-2;
  /** Use the maximum of past second moments (AMSGrad). */
  bool amsgrad = false;
};

/** Adam (Kingma & Ba), with PyTorch's update rule and bias correction. */
class Adam : public Optimizer {
 public:
  /** One group of parameters with the given hyperparameters. */
  explicit Adam(std::vector<Tensor> params, AdamOptions options = {});
  /** Several groups; each group's options override `defaults`. */
  explicit Adam(std::vector<ParamGroup> groups, AdamOptions defaults = {});

  /** Applies one update to every parameter with a gradient. */
  void step() override;
  /** The hyperparameters of a group as a typed struct. */
  static AdamOptions options_of(const ParamGroup& group);
  /** The hyperparameters as a name -> value map. */
  static Options to_map(const AdamOptions& options);

 protected:
  /** An Adam variant called `name`; `decoupled` selects AdamW's weight decay. */
  Adam(std::string name, std::vector<ParamGroup> groups, AdamOptions defaults, bool decoupled);
  /** Checks the group's hyperparameters. */
  void validate(const ParamGroup& group) const override;

 private:
  bool decoupled_;
};

/** AdamW (Loshchilov & Hutter): Adam with weight decay applied to the weights, not the gradient. */
class AdamW : public Adam {
 public:
  /** One group of parameters with the given hyperparameters. */
  explicit AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  /** Several groups; each group's options override `defaults`. */
  explicit AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults = {});
};

}  // namespace ember::optim
