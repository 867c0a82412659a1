// ember._C.optim: Ember's optimizers, learning-rate schedulers and gradient clipping
// (<ember/optim.h>), the native half of ember.optim. The Python package gives them PyTorch's
// surface: param groups as dicts, PyTorch's nested state dict, the Optimizer base class to
// subclass, the schedulers' wrappers (api/python/ember/optim/).
#include <cstdint>

#include "bind.h"

namespace ember::python {
namespace {

using optim::Optimizer;

/** Param groups as Python passes them: (parameters, hyperparameters overriding the defaults). */
using Groups = std::vector<std::pair<std::vector<Tensor>, optim::Options>>;

std::vector<optim::ParamGroup> to_groups(Groups groups) {
  std::vector<optim::ParamGroup> out;
  out.reserve(groups.size());
  for (auto& [params, options] : groups) {
    out.push_back(optim::ParamGroup{std::move(params), std::move(options)});
  }
  return out;
}

optim::ParamGroup& group_at(Optimizer& o, int64_t index) {
  auto& groups = o.param_groups();
  EMBER_CHECK_INDEX(index >= 0 && index < static_cast<int64_t>(groups.size()),
                    "[{}] param group {} is out of range (the optimizer has {})", o.name(), index,
                    groups.size());
  return groups[static_cast<size_t>(index)];
}

/** The state of `param`: its buffers (the live tensors) by name, and "step" as a 0-d float64
 *  tensor where the optimizer counts steps; empty if the parameter has none. */
std::map<std::string, Tensor> param_state(const Optimizer& o, const Tensor& param) {
  std::map<std::string, Tensor> out;
  const optim::ParamState* s = o.state(param);
  if (s == nullptr) return out;
  if (o.counts_steps()) out["step"] = full({}, static_cast<double>(s->step), DType::Float64);
  for (size_t b = 0; b < s->buffers.size(); ++b) {
    if (s->buffers[b].defined()) out[o.buffer_names()[b]] = s->buffers[b];
  }
  return out;
}

/** A built-in optimizer class whose constructor takes (param_groups, defaults), the defaults
 *  read into its options struct by Opt::options_of. */
template <class Opt>
nb::class_<Opt, Optimizer> bind_optimizer(nb::module_& m, const char* name, const char* doc) {
  return nb::class_<Opt, Optimizer>(m, name, doc)
      .def(
          "__init__",
          [](Opt* self, Groups groups, optim::Options defaults) {
            new (self) Opt(to_groups(std::move(groups)),
                           Opt::options_of(optim::ParamGroup{{}, std::move(defaults)}));
          },
          "param_groups"_a, "defaults"_a,
          "The optimizer over (params, options) groups; `defaults` names every hyperparameter.");
}

// Note [Schedulers of Python optimizers]
// The C++ schedulers drive an optim::Optimizer: they read and set the lr of its groups. A
// built-in optimizer (SGD, ...) is one, so a scheduler sets its lrs directly. An optimizer
// written in Python is not; for it ember.optim.lr_scheduler builds an LrGroups, a C++ optimizer
// with one parameterless group per Python group holding only its lr (and its momentum, under
// the C++ name "momentum" or "beta1", when the Python optimizer has one, for OneCycleLR to
// cycle), copies the Python values into it before each scheduler step and copies the result
// back after. One implementation of each schedule serves both kinds, and a Python optimizer's
// lrs changed by hand between steps are seen, as PyTorch's chainable schedulers see them.
class LrGroups final : public Optimizer {
 public:
  LrGroups(const std::vector<double>& lrs, const std::string& momentum_key,
           const std::vector<double>& momenta)
      : Optimizer("optim.Optimizer", defaults_for(momentum_key), {}, /*counts_steps=*/false),
        momentum_key_(momentum_key) {
    EMBER_CHECK(momentum_key.empty() || momenta.size() == lrs.size(),
                "[optim.Optimizer] got {} momenta for {} param groups", momenta.size(), lrs.size());
    for (size_t i = 0; i < lrs.size(); ++i) {
      optim::Options o{{"lr", lrs[i]}};
      if (!momentum_key.empty()) o[momentum_key] = momenta[i];
      add_param_group(optim::ParamGroup{{}, o});
    }
  }
  /** "momentum", "beta1" or empty. */
  const std::string& momentum_key() const { return momentum_key_; }
  void step() override {
    throw NotImplementedError(
        "[optim.Optimizer] the lr groups of a Python optimizer only hold learning rates: step "
        "the optimizer itself");
  }

 protected:
  void validate(const optim::ParamGroup&) const override {}

 private:
  static optim::Options defaults_for(const std::string& momentum_key) {
    EMBER_CHECK(momentum_key.empty() || momentum_key == "momentum" || momentum_key == "beta1",
                "[optim.Optimizer] momentum_key must be '', 'momentum' or 'beta1': got '{}'",
                momentum_key);
    optim::Options d{{"lr", 0.0}};
    if (!momentum_key.empty()) d[momentum_key] = 0.0;
    return d;
  }
  std::string momentum_key_;
};

optim::AnnealStrategy anneal_strategy(std::string_view s) {
  if (s == "cos") return optim::AnnealStrategy::Cos;
  EMBER_CHECK(s == "linear",
              "[optim.OneCycleLR] anneal_strategy must be 'cos' or 'linear': got '{}'", s);
  return optim::AnnealStrategy::Linear;
}

optim::PlateauOptions plateau_options(std::string_view mode, double factor, int64_t patience,
                                      double threshold, std::string_view threshold_mode,
                                      int64_t cooldown, double min_lr, double eps) {
  EMBER_CHECK(mode == "min" || mode == "max",
              "[optim.ReduceLROnPlateau] mode must be 'min' or 'max': got '{}'", mode);
  EMBER_CHECK(threshold_mode == "rel" || threshold_mode == "abs",
              "[optim.ReduceLROnPlateau] threshold_mode must be 'rel' or 'abs': got '{}'",
              threshold_mode);
  return {.mode = mode == "min" ? optim::PlateauMode::Min : optim::PlateauMode::Max,
          .factor = factor,
          .patience = patience,
          .threshold = threshold,
          .threshold_mode =
              threshold_mode == "rel" ? optim::ThresholdMode::Rel : optim::ThresholdMode::Abs,
          .cooldown = cooldown,
          .min_lr = min_lr,
          .eps = eps};
}

void bind_optimizers(nb::module_& m) {
  nb::class_<Optimizer>(m, "Optimizer", nb::is_weak_referenceable(),
                        "Base of the C++ optimizers (ember.optim.SGD and the others wrap them).")
      .def("step", &Optimizer::step, release_gil(),
           "Applies one update to every parameter that has a gradient.")
      .def("zero_grad", &Optimizer::zero_grad, "set_to_none"_a = true, release_gil(),
           "Clears the gradients: to None, or (set_to_none=False) to zeros.")
      .def(
          "add_param_group",
          [](Optimizer& o, std::vector<Tensor> params, optim::Options options) {
            o.add_param_group(optim::ParamGroup{std::move(params), std::move(options)});
          },
          "params"_a, "options"_a, "Adds a group, filling in the defaults and checking it.")
      .def_prop_ro("name", &Optimizer::name, "The name used in messages, e.g. 'optim.SGD'.")
      .def_prop_ro("defaults", &Optimizer::defaults, "The hyperparameters of new groups.")
      .def_prop_ro(
          "num_param_groups", [](const Optimizer& o) { return o.param_groups().size(); },
          "The number of groups.")
      .def(
          "group_params", [](Optimizer& o, int64_t i) { return group_at(o, i).params; }, "index"_a,
          "The parameters of group `index`.")
      .def(
          "group_options", [](Optimizer& o, int64_t i) { return group_at(o, i).options; },
          "index"_a, "The hyperparameters of group `index`.")
      .def(
          "set_group_option",
          [](Optimizer& o, int64_t i, const std::string& name, double value) {
            optim::ParamGroup& g = group_at(o, i);
            if (o.defaults().count(name) == 0) {
              std::string known;
              for (const auto& entry : o.defaults()) {
                known += (known.empty() ? "" : ", ") + entry.first;
              }
              throw ValueError(fmt::format("[{}] unknown hyperparameter '{}' (the groups have {})",
                                           o.name(), name, known));
            }
            g.set(name, value);
          },
          "index"_a, "name"_a, "value"_a,
          "Sets a hyperparameter of group `index` (used as is by the next step).")
      .def("param_state", &param_state, "param"_a,
           "The state of `param`: its buffers (live) and 'step'; empty if it has none.")
      .def(
          "params_with_state",
          [](const Optimizer& o) {
            std::vector<Tensor> out;
            for (const auto& g : o.param_groups()) {
              for (const Tensor& p : g.params) {
                if (o.state(p) != nullptr) out.push_back(p);
              }
            }
            return out;
          },
          "The parameters that have a state, in group order.")
      .def("state_dict", &Optimizer::state_dict, release_gil(),
           "A copy of the state as a flat map: 'state.<i>.<buffer>', 'param_groups.<g>.<name>'.")
      .def("load_state_dict", &Optimizer::load_state_dict, "state_dict"_a, release_gil(),
           "Replaces hyperparameters and state with those of a state_dict() (checked first).");

  bind_optimizer<optim::SGD>(m, "SGD", "Stochastic gradient descent (momentum, Nesterov).");
  bind_optimizer<optim::Adam>(m, "Adam", "Adam, with L2 weight decay and AMSGrad.");
  nb::class_<optim::AdamW, optim::Adam>(m, "AdamW", "Adam with decoupled weight decay.")
      .def(
          "__init__",
          [](optim::AdamW* self, Groups groups, optim::Options defaults) {
            const optim::AdamOptions o = optim::Adam::options_of(optim::ParamGroup{{}, defaults});
            new (self) optim::AdamW(to_groups(std::move(groups)),
                                    optim::AdamWOptions{.lr = o.lr,
                                                        .beta1 = o.beta1,
                                                        .beta2 = o.beta2,
                                                        .eps = o.eps,
                                                        .weight_decay = o.weight_decay,
                                                        .amsgrad = o.amsgrad});
          },
          "param_groups"_a, "defaults"_a,
          "The optimizer over (params, options) groups; `defaults` names every hyperparameter.");
  bind_optimizer<optim::RMSprop>(m, "RMSprop", "RMSprop, centered or not, with momentum.");
  bind_optimizer<optim::Adadelta>(m, "Adadelta", "Adadelta, with weight decay.");
  bind_optimizer<optim::Adagrad>(m, "Adagrad", "Adagrad, with lr decay and weight decay.");
  bind_optimizer<optim::Adamax>(m, "Adamax", "Adamax: Adam with the infinity norm.");
  bind_optimizer<optim::NAdam>(m, "NAdam", "NAdam: Adam with Nesterov momentum.");
  bind_optimizer<optim::RAdam>(m, "RAdam", "RAdam: Adam with a rectified adaptive rate.");
  bind_optimizer<optim::Rprop>(m, "Rprop", "Rprop: per-coordinate steps from gradient signs.");
  bind_optimizer<optim::LBFGS>(m, "LBFGS", "L-BFGS, with an optional strong-Wolfe line search.")
      .def(
          "step",
          [](optim::LBFGS& o, nb::callable closure) {
            // The closure is Python: the GIL stays held. PyTorch returns what it first returned.
            nb::object first;
            o.step([&] {
              nb::object loss = closure();
              if (!first.is_valid()) first = loss;
              if (nb::isinstance<PyTensor>(loss)) return Tensor(*nb::inst_ptr<PyTensor>(loss));
              EMBER_CHECK_TYPE(nb::isinstance<nb::float_>(loss) || nb::isinstance<nb::int_>(loss),
                               "[optim.LBFGS] the closure must return the loss: got {}",
                               nb::type_name(loss.type()).c_str());
              return full({}, nb::cast<double>(loss), DType::Float64);
            });
            return first;
          },
          "closure"_a, "Up to max_iter iterations calling closure; returns its first loss.");

  nb::class_<LrGroups, Optimizer>(
      m, "LrGroups",
      "The learning rates of a Python optimizer's groups, for the C++ schedulers (Note "
      "[Schedulers of Python optimizers]).")
      .def(nb::init<const std::vector<double>&, const std::string&, const std::vector<double>&>(),
           "lrs"_a, "momentum_key"_a = "", "momenta"_a = std::vector<double>{},
           "One group per learning rate (with its momentum under momentum_key, if given).")
      .def_prop_rw(
          "lrs",
          [](const LrGroups& o) {
            std::vector<double> lrs;
            for (const auto& g : o.param_groups()) lrs.push_back(g.lr());
            return lrs;
          },
          [](LrGroups& o, const std::vector<double>& lrs) {
            auto& groups = o.param_groups();
            EMBER_CHECK(lrs.size() == groups.size(),
                        "[optim.Optimizer] got {} learning rates for {} param groups", lrs.size(),
                        groups.size());
            for (size_t i = 0; i < lrs.size(); ++i) groups[i].set_lr(lrs[i]);
          },
          "The learning rate of each group.")
      .def_prop_rw(
          "momenta",
          [](const LrGroups& o) {
            std::vector<double> out;
            if (o.momentum_key().empty()) return out;
            for (const auto& g : o.param_groups()) out.push_back(g.get(o.momentum_key()));
            return out;
          },
          [](LrGroups& o, const std::vector<double>& momenta) {
            auto& groups = o.param_groups();
            EMBER_CHECK(!o.momentum_key().empty() && momenta.size() == groups.size(),
                        "[optim.Optimizer] got {} momenta for {} param groups", momenta.size(),
                        groups.size());
            for (size_t i = 0; i < momenta.size(); ++i) groups[i].set(o.momentum_key(), momenta[i]);
          },
          "The momentum of each group (empty without a momentum_key).");
}

void bind_schedulers(nb::module_& m) {
  nb::class_<optim::LRScheduler>(m, "LRScheduler", nb::is_weak_referenceable(),
                                 "Base of the C++ epoch-driven schedulers.")
      .def("step", &optim::LRScheduler::step,
           "Advances one epoch and sets the new learning rates in the optimizer.")
      .def("get_last_lr", &optim::LRScheduler::get_last_lr,
           "The learning rates set by the last step, one per group.")
      .def_prop_ro("last_epoch", &optim::LRScheduler::last_epoch,
                   "Steps taken (0 right after construction).")
      .def_prop_ro("base_lrs", &optim::LRScheduler::base_lrs,
                   "The learning rates the schedule starts from.")
      .def("state_dict", &optim::LRScheduler::state_dict,
           "The schedule's position: 'last_epoch', 'base_lrs', 'last_lr'.")
      .def("load_state_dict", &optim::LRScheduler::load_state_dict, "state_dict"_a,
           "Continues from a state_dict().");

  nb::class_<optim::StepLR, optim::LRScheduler>(
      m, "StepLR", "Multiplies the lr by gamma every step_size epochs.")
      .def(nb::init<Optimizer&, int64_t, double>(), "optimizer"_a, "step_size"_a, "gamma"_a = 0.1,
           nb::keep_alive<1, 2>(), "Decays every `step_size` epochs by `gamma`.");
  nb::class_<optim::CosineAnnealingLR, optim::LRScheduler>(
      m, "CosineAnnealingLR", "Cosine annealing from the base lr to eta_min over T_max epochs.")
      .def(nb::init<Optimizer&, int64_t, double>(), "optimizer"_a, "T_max"_a, "eta_min"_a = 0.0,
           nb::keep_alive<1, 2>(), "Anneals over `T_max` epochs down to `eta_min`.");
  nb::class_<optim::OneCycleLR, optim::LRScheduler>(
      m, "OneCycleLR", "The 1cycle policy: up to max_lr, then down to a minimum, over total_steps.")
      .def(
          "__init__",
          [](optim::OneCycleLR* self, Optimizer& o, std::vector<double> max_lrs,
             int64_t total_steps, double pct_start, std::string_view strategy, bool cycle_momentum,
             std::vector<double> base_momentum, std::vector<double> max_momentum, double div_factor,
             double final_div_factor, bool three_phase) {
            new (self) optim::OneCycleLR(o, std::move(max_lrs), total_steps,
                                         {.pct_start = pct_start,
                                          .anneal_strategy = anneal_strategy(strategy),
                                          .cycle_momentum = cycle_momentum,
                                          .base_momentum = std::move(base_momentum),
                                          .max_momentum = std::move(max_momentum),
                                          .div_factor = div_factor,
                                          .final_div_factor = final_div_factor,
                                          .three_phase = three_phase});
          },
          "optimizer"_a, "max_lrs"_a, "total_steps"_a, "pct_start"_a = 0.3,
          "anneal_strategy"_a = "cos", "cycle_momentum"_a = true,
          "base_momentum"_a = std::vector<double>{0.85},
          "max_momentum"_a = std::vector<double>{0.95}, "div_factor"_a = 25.0,
          "final_div_factor"_a = 1e4, "three_phase"_a = false, nb::keep_alive<1, 2>(),
          "One max_lr per group, over `total_steps` steps.");

  nb::class_<optim::ReduceLROnPlateau>(m, "ReduceLROnPlateau", nb::is_weak_referenceable(),
                                       "Reduces the lr by factor when a metric stops improving.")
      .def(
          "__init__",
          [](optim::ReduceLROnPlateau* self, Optimizer& o, std::string_view mode, double factor,
             int64_t patience, double threshold, std::string_view threshold_mode, int64_t cooldown,
             double min_lr, double eps) {
            new (self)
                optim::ReduceLROnPlateau(o, plateau_options(mode, factor, patience, threshold,
                                                            threshold_mode, cooldown, min_lr, eps));
          },
          "optimizer"_a, "mode"_a = "min", "factor"_a = 0.1, "patience"_a = 10,
          "threshold"_a = 1e-4, "threshold_mode"_a = "rel", "cooldown"_a = 0, "min_lr"_a = 0.0,
          "eps"_a = 1e-8, nb::keep_alive<1, 2>(), "Watches the metric passed to step().")
      .def("step", &optim::ReduceLROnPlateau::step, "metrics"_a,
           "Records this epoch's metric and reduces the lrs if it has plateaued.")
      .def("get_last_lr", &optim::ReduceLROnPlateau::get_last_lr,
           "The learning rates after the last step, one per group.")
      .def_prop_ro("best", &optim::ReduceLROnPlateau::best, "The best metric seen so far.")
      .def_prop_ro("num_bad_epochs", &optim::ReduceLROnPlateau::num_bad_epochs,
                   "Consecutive epochs without improvement.")
      .def("state_dict", &optim::ReduceLROnPlateau::state_dict,
           "'best', 'num_bad_epochs', 'cooldown_counter', 'last_epoch' and 'last_lr'.")
      .def("load_state_dict", &optim::ReduceLROnPlateau::load_state_dict, "state_dict"_a,
           "Continues from a state_dict().");
}

}  // namespace

void bind_optim(nb::module_& m) {
  nb::module_ sub = m.def_submodule("optim", "Ember's C++ optimizers, schedulers and clipping.");
  bind_optimizers(sub);
  bind_schedulers(sub);
  sub.def("clip_grad_norm_", &optim::clip_grad_norm_, "parameters"_a, "max_norm"_a,
          "norm_type"_a = 2.0, "error_if_nonfinite"_a = false, release_gil(),
          "Scales the gradients to a total norm of at most max_norm; returns the norm before.");
  sub.def("clip_grad_value_", &optim::clip_grad_value_, "parameters"_a, "clip_value"_a,
          release_gil(), "Clamps every gradient element to [-clip_value, clip_value].");
}

}  // namespace ember::python
