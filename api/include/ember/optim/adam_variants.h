// Adamax, NAdam and RAdam (Adam's variants in torch.optim) and Rprop, with PyTorch's update
// rules, defaults and state names.
#pragma once

#include <string>
#include <vector>

#include "ember/autograd/grad_mode.h"
#include "ember/optim/optimizer.h"

namespace ember::optim {

/** One hyperparameter of the struct O: its name in a group's map and the member holding it (a
 *  number, or a flag stored as 0 or 1). */
template <class O>
struct Hyper {
  const char* name;             ///< the key in ParamGroup::options
  double O::*number = nullptr;  ///< the member, when a number
  bool O::*flag = nullptr;      ///< the member, when a flag
};

/** The parts of an optimizer that follow from its hyperparameter struct O: construction from
 *  parameters or groups (O's values filling in what a group leaves out), O to and from a group's
 *  name -> value map through O::fields(), and validation by O::check(). O also names the
 *  optimizer (kName) and its state buffers (buffers()). */
template <class O>
class OptimizerOf : public Optimizer {
 public:
  /** One group of parameters with the given hyperparameters. */
  explicit OptimizerOf(std::vector<Tensor> params, O options = {})
      : OptimizerOf(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}
  /** Several groups; each group's options override `defaults`. */
  explicit OptimizerOf(std::vector<ParamGroup> groups, O defaults = {})
      : Optimizer(O::kName, to_map(defaults), O::buffers(), /*counts_steps=*/true) {
    init_groups(std::move(groups));
  }
  /** The hyperparameters of a group as a typed struct. */
  static O options_of(const ParamGroup& group) {
    O o;
    for (const Hyper<O>& h : O::fields()) {
      if (h.number) o.*h.number = group.get(h.name);
      if (h.flag) o.*h.flag = group.get(h.name) != 0;
    }
    return o;
  }
  /** The hyperparameters as a name -> value map. */
  static Options to_map(const O& o) {
    Options m;
    for (const Hyper<O>& h : O::fields()) {
      m[h.name] = h.number ? o.*h.number : (o.*h.flag ? 1.0 : 0.0);
    }
    return m;
  }

 protected:
  /** Checks the group's hyperparameters. */
  void validate(const ParamGroup& group) const override { options_of(group).check(); }
  /** Calls update(param, state, options) for every parameter with a gradient, its step counted,
   *  without recording autograd history: the loop every step() here runs. */
  template <class Update>
  void each_param(Update&& update) {
    autograd::NoGradGuard no_grad;
    for (ParamGroup& group : param_groups()) {
      const O o = options_of(group);
      for (Tensor& p : group.params) {
        if (!p.grad().defined()) continue;
        ParamState& s = state_for(p);
        ++s.step;
        update(p, s, o);
      }
    }
  }
};

/** Adamax hyperparameters (torch.optim.Adamax's defaults). */
struct AdamaxOptions {
  static constexpr const char* kName = "optim.Adamax";  ///< the name in errors
  double lr = 2e-3;                                     ///< learning rate
  double beta1 = 0.9;                                   ///< decay rate of the first moment estimate
  double beta2 = 0.999;                                 ///< decay of the infinity norm
  double eps = 1e-8;                                    ///< added to |grad| in the infinity norm
  double weight_decay = 0;                              ///< L2 penalty added to the gradient
  /** The state buffers: exp_avg and exp_inf. */
  static std::vector<std::string> buffers() { return {"exp_avg", "exp_inf"}; }
  /** The hyperparameters by name. */
  static std::vector<Hyper<AdamaxOptions>> fields();
  /** Throws ember::Error for a value out of range. */
  void check() const;
};

/** Adamax (Kingma & Ba, 2015: Adam with the infinity norm), with PyTorch's update rule. */
class Adamax : public OptimizerOf<AdamaxOptions> {
 public:
  using OptimizerOf::OptimizerOf;
  /** Applies one update to every parameter with a gradient. */
  void step() override;
};

/** NAdam hyperparameters (torch.optim.NAdam's defaults). */
struct NAdamOptions {
  static constexpr const char* kName = "optim.NAdam";  ///< the name in errors
  double lr = 2e-3;                                    ///< learning rate
  double beta1 = 0.9;                                  ///< decay rate of the first moment estimate
  double beta2 = 0.999;                                ///< decay rate of the second moment estimate
  double eps = 1e-8;                    ///< added to the denominator after the square root
  double weight_decay = 0;              ///< L2 penalty (or decoupled decay)
  double momentum_decay = 4e-3;         ///< psi of the momentum schedule
  bool decoupled_weight_decay = false;  ///< AdamW's weight decay instead of L2
  /** The state buffers: exp_avg, exp_avg_sq and mu_product (0-d, the momenta's product). */
  static std::vector<std::string> buffers() { return {"exp_avg", "exp_avg_sq", "mu_product"}; }
  /** The hyperparameters by name. */
  static std::vector<Hyper<NAdamOptions>> fields();
  /** Throws ember::Error for a value out of range. */
  void check() const;
};

/** NAdam (Dozat, 2016: Adam with Nesterov momentum), with PyTorch's update rule. */
class NAdam : public OptimizerOf<NAdamOptions> {
 public:
  using OptimizerOf::OptimizerOf;
  /** Applies one update to every parameter with a gradient. */
  void step() override;

 protected:
  /** mu_product is a 0-d tensor; the moments are shaped like the parameter. */
  Tensor load_buffer(size_t buffer, const Tensor& value, const Tensor& param,
                     const std::string& key, size_t index) const override;
};

/** RAdam hyperparameters (torch.optim.RAdam's defaults). */
struct RAdamOptions {
  static constexpr const char* kName = "optim.RAdam";  ///< the name in errors
  double lr = 1e-3;                                    ///< learning rate
  double beta1 = 0.9;                                  ///< decay rate of the first moment estimate
  double beta2 = 0.999;                                ///< decay rate of the second moment estimate
  double eps = 1e-8;                    ///< added to the denominator after the square root
  double weight_decay = 0;              ///< L2 penalty (or decoupled decay)
  bool decoupled_weight_decay = false;  ///< AdamW's weight decay instead of L2
  /** The state buffers: exp_avg and exp_avg_sq. */
  static std::vector<std::string> buffers() { return {"exp_avg", "exp_avg_sq"}; }
  /** The hyperparameters by name. */
  static std::vector<Hyper<RAdamOptions>> fields();
  /** Throws ember::Error for a value out of range. */
  void check() const;
};

/** RAdam (Liu et al., 2020: Adam with the variance of its adaptive rate rectified), with
 *  PyTorch's update rule. */
class RAdam : public OptimizerOf<RAdamOptions> {
 public:
  using OptimizerOf::OptimizerOf;
  /** Applies one update to every parameter with a gradient. */
  void step() override;
};

/** Rprop hyperparameters (torch.optim.Rprop's defaults). */
struct RpropOptions {
  static constexpr const char* kName = "optim.Rprop";  ///< the name in errors
  double lr = 1e-2;                                    ///< the initial step size
  double etaminus = 0.5;        ///< step-size factor when the gradient's sign flips
  double etaplus = 1.2;         ///< step-size factor when it keeps its sign
  double step_size_min = 1e-6;  ///< the smallest step size
  double step_size_max = 50;    ///< the largest step size
  /** The state buffers: prev (the last gradient used) and step_size. */
  static std::vector<std::string> buffers() { return {"prev", "step_size"}; }
  /** The hyperparameters by name. */
  static std::vector<Hyper<RpropOptions>> fields();
  /** Throws ember::Error for a value out of range. */
  void check() const;
};

/** Rprop (Riedmiller & Braun, 1993: per-coordinate steps from the gradient's sign), with
 *  PyTorch's update rule. */
class Rprop : public OptimizerOf<RpropOptions> {
 public:
  using OptimizerOf::OptimizerOf;
  /** Applies one update to every parameter with a gradient. */
  void step() override;
};

}  // namespace ember::optim
