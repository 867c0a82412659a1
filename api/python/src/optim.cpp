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

// The groups of an ember.optim optimizer as the C++ schedulers see them (Note [One owner of a
// learning rate] in ember/optim/lr_scheduler.h): every read and write goes to the optimizer's own
// `param_groups` dicts (for a built-in optimizer, its views of the C++ groups), so nothing is
// copied and a group's 'initial_lr' and hand-set lrs are what the schedule sees. "beta1" is the
// first of a group's 'betas'.
class PythonGroups final : public optim::HyperparameterGroups {
 public:
  /** The groups of `optimizer` (an ember.optim.Optimizer), which this keeps alive. */
  explicit PythonGroups(nb::object optimizer) : optimizer_(std::move(optimizer)) {}

  size_t num_groups() const override { return nb::len(groups()); }

  double hyperparameter(size_t index, const std::string& name) const override {
    nb::object g = group(index);
    const char* key = name == "beta1" ? "betas" : name.c_str();
    EMBER_CHECK(nb::cast<bool>(g.attr("__contains__")(key)), "[{}] param group {} has no '{}'",
                optimizer_name(), index, key);
    nb::object value = g[key];
    if (name == "beta1") value = value[0];
    return nb::cast<double>(nb::float_(value));
  }

  void set_hyperparameter(size_t index, const std::string& name, double value) override {
    nb::object g = group(index);
    if (name != "beta1") {
      g[name.c_str()] = value;
      return;
    }
    nb::object betas = g["betas"];
    nb::list updated = nb::steal<nb::list>(PySequence_List(betas.ptr()));
    if (!updated.is_valid()) throw nb::python_error();
    updated[0] = nb::float_(value);
    g["betas"] = nb::steal(PyList_AsTuple(updated.ptr()));
  }

  bool has_hyperparameter(const std::string& name) const override {
    nb::object defaults = nb::getattr(optimizer_, "defaults", nb::dict());
    const char* key = name == "beta1" ? "betas" : name.c_str();
    if (nb::cast<bool>(defaults.attr("__contains__")(key))) return true;
    nb::object groups = this->groups();
    if (nb::len(groups) == 0) return false;
    for (nb::handle g : groups) {
      if (!nb::cast<bool>(g.attr("__contains__")(key))) return false;
    }
    return true;
  }

  bool group_has(size_t index, const std::string& name) const override {
    return nb::cast<bool>(group(index).attr("__contains__")(name == "beta1" ? "betas" : name));
  }

  std::string optimizer_name() const override {
    return "optim." + std::string(nb::type_name(optimizer_.type()).c_str());
  }

  const void* identity() const override { return optimizer_.ptr(); }

 private:
  nb::object groups() const { return optimizer_.attr("param_groups"); }
  nb::object group(size_t index) const {
    nb::object groups = this->groups();
    EMBER_CHECK_INDEX(index < nb::len(groups),
                      "[{}] param group {} is out of range (the optimizer has {})",
                      optimizer_name(), index, nb::len(groups));
    return groups[index];
  }

  nb::object optimizer_;
};

/** Python callables as C++ functions of the epoch (LambdaLR's lr_lambdas). */
std::vector<optim::LrLambda> lr_lambdas(const std::vector<nb::callable>& fns) {
  std::vector<optim::LrLambda> out;
  for (const nb::callable& fn : fns) {
    out.emplace_back([fn](int64_t epoch) { return nb::cast<double>(nb::float_(fn(epoch))); });
  }
  return out;
}

optim::CyclicMode cyclic_mode(std::string_view s) {
  if (s == "triangular") return optim::CyclicMode::Triangular;
  if (s == "triangular2") return optim::CyclicMode::Triangular2;
  EMBER_CHECK(s == "exp_range",
              "[optim.CyclicLR] mode must be 'triangular', 'triangular2' or 'exp_range' when "
              "scale_fn is None: got '{}'",
              s);
  return optim::CyclicMode::ExpRange;
}

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
  nb::class_<optim::HyperparameterGroups>(
      m, "HyperparameterGroups",
      "The hyperparameters of an optimizer's groups, as the schedulers read and set them.")
      .def_prop_ro("num_groups", &optim::HyperparameterGroups::num_groups, "The number of groups.")
      .def("hyperparameter", &optim::HyperparameterGroups::hyperparameter, "index"_a, "name"_a,
           "Hyperparameter `name` of group `index`.");
  nb::class_<PythonGroups, optim::HyperparameterGroups>(
      m, "PythonGroups", nb::is_weak_referenceable(),
      "The groups of an ember.optim optimizer, read and set in its dicts.")
      .def(nb::init<nb::object>(), "optimizer"_a, "The groups of `optimizer`.");
  nb::class_<Optimizer, optim::HyperparameterGroups>(
      m, "Optimizer", nb::is_weak_referenceable(),
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
}

void bind_schedulers(nb::module_& m) {
  using optim::HyperparameterGroups;
  using optim::LRScheduler;
  nb::class_<LRScheduler>(m, "LRScheduler", nb::is_weak_referenceable(),
                          "Base of the C++ epoch-driven schedulers.")
      .def("step", nb::overload_cast<>(&LRScheduler::step),
           "Advances one epoch and sets the new learning rates in the optimizer.")
      .def("restart", &LRScheduler::restart,
           "Starts the schedule again at epoch 0 (SequentialLR at a milestone).")
      .def("get_last_lr", &LRScheduler::get_last_lr,
           "The learning rates set by the last step, one per group.")
      .def_prop_rw("last_epoch", &LRScheduler::last_epoch, &LRScheduler::set_last_epoch,
                   "Steps taken (0 right after construction).")
      .def_prop_rw("base_lrs", &LRScheduler::base_lrs, &LRScheduler::set_base_lrs,
                   "The learning rates the schedule starts from.")
      .def("state_dict", &LRScheduler::state_dict,
           "The schedule's position: 'last_epoch', 'base_lrs', 'last_lr' (and a subclass's).")
      .def("load_state_dict", &LRScheduler::load_state_dict, "state_dict"_a,
           "Continues from a state_dict().");

  nb::class_<optim::FunctionLR, LRScheduler>(m, "FunctionLR",
                                             "A schedule computed by a function (get_lr).")
      .def(
          "__init__",
          [](optim::FunctionLR* self, HyperparameterGroups& g, nb::callable fn,
             int64_t last_epoch) {
            new (self) optim::FunctionLR(
                g, [fn](const optim::FunctionLR&) { return nb::cast<std::vector<double>>(fn()); },
                last_epoch);
          },
          "groups"_a, "get_lr"_a, "last_epoch"_a = -1, nb::keep_alive<1, 2>(),
          "get_lr() gives the lrs of last_epoch at each step; the first step() starts it.");
  nb::class_<optim::StepLR, LRScheduler>(m, "StepLR",
                                         "Multiplies the lr by gamma every step_size epochs.")
      .def(nb::init<HyperparameterGroups&, int64_t, double, int64_t>(), "groups"_a, "step_size"_a,
           "gamma"_a = 0.1, "last_epoch"_a = -1, nb::keep_alive<1, 2>(),
           "Decays every `step_size` epochs by `gamma`.");
  nb::class_<optim::CosineAnnealingLR, LRScheduler>(
      m, "CosineAnnealingLR", "Cosine annealing from the base lr to eta_min over T_max epochs.")
      .def(nb::init<HyperparameterGroups&, int64_t, double, int64_t>(), "groups"_a, "T_max"_a,
           "eta_min"_a = 0.0, "last_epoch"_a = -1, nb::keep_alive<1, 2>(),
           "Anneals over `T_max` epochs down to `eta_min`.");
  nb::class_<optim::OneCycleLR, LRScheduler>(
      m, "OneCycleLR", "The 1cycle policy: up to max_lr, then down to a minimum, over total_steps.")
      .def(
          "__init__",
          [](optim::OneCycleLR* self, HyperparameterGroups& g, std::vector<double> max_lrs,
             int64_t total_steps, double pct_start, std::string_view strategy, bool cycle_momentum,
             std::vector<double> base_momentum, std::vector<double> max_momentum, double div_factor,
             double final_div_factor, bool three_phase, int64_t last_epoch) {
            new (self) optim::OneCycleLR(g, std::move(max_lrs), total_steps,
                                         {.pct_start = pct_start,
                                          .anneal_strategy = anneal_strategy(strategy),
                                          .cycle_momentum = cycle_momentum,
                                          .base_momentum = std::move(base_momentum),
                                          .max_momentum = std::move(max_momentum),
                                          .div_factor = div_factor,
                                          .final_div_factor = final_div_factor,
                                          .three_phase = three_phase},
                                         last_epoch);
          },
          "groups"_a, "max_lrs"_a, "total_steps"_a, "pct_start"_a = 0.3,
          "anneal_strategy"_a = "cos", "cycle_momentum"_a = true,
          "base_momentum"_a = std::vector<double>{0.85},
          "max_momentum"_a = std::vector<double>{0.95}, "div_factor"_a = 25.0,
          "final_div_factor"_a = 1e4, "three_phase"_a = false, "last_epoch"_a = -1,
          nb::keep_alive<1, 2>(), "One max_lr per group, over `total_steps` steps.");
  nb::class_<optim::LambdaLR, LRScheduler>(m, "LambdaLR", "lr = base_lr * lr_lambda(epoch).")
      .def(
          "__init__",
          [](optim::LambdaLR* self, HyperparameterGroups& g, const std::vector<nb::callable>& fns,
             int64_t last_epoch) { new (self) optim::LambdaLR(g, lr_lambdas(fns), last_epoch); },
          "groups"_a, "lr_lambdas"_a, "last_epoch"_a = -1, nb::keep_alive<1, 2>(),
          "One function of the epoch, or one per group.");
  nb::class_<optim::MultiplicativeLR, optim::LambdaLR>(m, "MultiplicativeLR",
                                                       "lr = the previous lr * lr_lambda(epoch).")
      .def(
          "__init__",
          [](optim::MultiplicativeLR* self, HyperparameterGroups& g,
             const std::vector<nb::callable>& fns, int64_t last_epoch) {
            new (self) optim::MultiplicativeLR(g, lr_lambdas(fns), last_epoch);
          },
          "groups"_a, "lr_lambdas"_a, "last_epoch"_a = -1, nb::keep_alive<1, 2>(),
          "One function of the epoch, or one per group.");
  nb::class_<optim::MultiStepLR, LRScheduler>(m, "MultiStepLR",
                                              "Multiplies the lr by gamma at each milestone.")
      .def(nb::init<HyperparameterGroups&, std::vector<int64_t>, double, int64_t>(), "groups"_a,
           "milestones"_a, "gamma"_a = 0.1, "last_epoch"_a = -1, nb::keep_alive<1, 2>(),
           "Decays by `gamma` at each milestone epoch.");
  nb::class_<optim::ExponentialLR, LRScheduler>(m, "ExponentialLR", "lr = base_lr * gamma^epoch.")
      .def(nb::init<HyperparameterGroups&, double, int64_t>(), "groups"_a, "gamma"_a,
           "last_epoch"_a = -1, nb::keep_alive<1, 2>(), "Decays by `gamma` each epoch.");
  nb::class_<optim::LinearLR, LRScheduler>(
      m, "LinearLR", "A factor from start_factor to end_factor over total_iters.")
      .def(nb::init<HyperparameterGroups&, double, double, int64_t, int64_t>(), "groups"_a,
           "start_factor"_a = 1.0 / 3, "end_factor"_a = 1.0, "total_iters"_a = 5,
           "last_epoch"_a = -1, nb::keep_alive<1, 2>(), "Linear warm-up (or decay) of the lr.");
  nb::class_<optim::ConstantLR, LRScheduler>(m, "ConstantLR",
                                             "Scales the lr by factor for total_iters epochs.")
      .def(nb::init<HyperparameterGroups&, double, int64_t, int64_t>(), "groups"_a,
           "factor"_a = 1.0 / 3, "total_iters"_a = 5, "last_epoch"_a = -1, nb::keep_alive<1, 2>(),
           "Scaled by `factor` until `total_iters`.");
  nb::class_<optim::PolynomialLR, LRScheduler>(m, "PolynomialLR",
                                               "Decays by (1 - epoch / total_iters)^power.")
      .def(nb::init<HyperparameterGroups&, int64_t, double, int64_t>(), "groups"_a,
           "total_iters"_a = 5, "power"_a = 1.0, "last_epoch"_a = -1, nb::keep_alive<1, 2>(),
           "Over `total_iters` epochs with exponent `power`.");
  nb::class_<optim::CosineAnnealingWarmRestarts, LRScheduler>(
      m, "CosineAnnealingWarmRestarts", "Cosine annealing with warm restarts (SGDR).")
      .def(nb::init<HyperparameterGroups&, int64_t, int64_t, double, int64_t>(), "groups"_a,
           "T_0"_a, "T_mult"_a = 1, "eta_min"_a = 0.0, "last_epoch"_a = -1, nb::keep_alive<1, 2>(),
           "First cycle T_0 epochs, each next T_mult times longer.")
      .def("step", nb::overload_cast<double>(&optim::CosineAnnealingWarmRestarts::step), "epoch"_a,
           "Jumps to `epoch` (fractional epochs anneal within a cycle).")
      .def("step", nb::overload_cast<>(&optim::CosineAnnealingWarmRestarts::step),
           "Advances one epoch.")
      .def_prop_ro("T_cur", &optim::CosineAnnealingWarmRestarts::T_cur,
                   "Epochs since the last restart.")
      .def_prop_ro("T_i", &optim::CosineAnnealingWarmRestarts::T_i, "The current cycle's length.");
  nb::class_<optim::CyclicLR, LRScheduler>(m, "CyclicLR",
                                           "Cycles the lr between base_lr and max_lr.")
      .def(
          "__init__",
          [](optim::CyclicLR* self, HyperparameterGroups& g, std::vector<double> base_lrs,
             std::vector<double> max_lrs, int64_t step_size_up,
             std::optional<int64_t> step_size_down, std::string_view mode, double gamma,
             std::optional<nb::callable> scale_fn, std::string_view scale_mode, bool cycle_momentum,
             std::vector<double> base_momentum, std::vector<double> max_momentum,
             int64_t last_epoch) {
            optim::CyclicOptions o{.step_size_up = step_size_up,
                                   .step_size_down = step_size_down,
                                   .gamma = gamma,
                                   .cycle_momentum = cycle_momentum,
                                   .base_momentum = std::move(base_momentum),
                                   .max_momentum = std::move(max_momentum)};
            if (scale_fn) {
              EMBER_CHECK(scale_mode == "cycle" || scale_mode == "iterations",
                          "[optim.CyclicLR] scale_mode must be 'cycle' or 'iterations': got '{}'",
                          scale_mode);
              o.scale_fn = [fn = *scale_fn](double x) {
                return nb::cast<double>(nb::float_(fn(x)));
              };
              o.scale_by_cycle = scale_mode == "cycle";
            } else {
              o.mode = cyclic_mode(mode);
            }
            new (self) optim::CyclicLR(g, std::move(base_lrs), std::move(max_lrs), std::move(o),
                                       last_epoch);
          },
          "groups"_a, "base_lrs"_a, "max_lrs"_a, "step_size_up"_a = 2000,
          "step_size_down"_a = nb::none(), "mode"_a = "triangular", "gamma"_a = 1.0,
          "scale_fn"_a = nb::none(), "scale_mode"_a = "cycle", "cycle_momentum"_a = true,
          "base_momentum"_a = std::vector<double>{0.8}, "max_momentum"_a = std::vector<double>{0.9},
          "last_epoch"_a = -1, nb::keep_alive<1, 2>(), "base_lr and max_lr: one value per group.")
      .def("scale", &optim::CyclicLR::scale, "x"_a,
           "The amplitude's scale at cycle (or iteration) x.");
  nb::class_<optim::SequentialLR, LRScheduler>(
      m, "SequentialLR", "Schedulers one after another, switching at milestones.")
      .def(nb::init<HyperparameterGroups&, std::vector<LRScheduler*>, std::vector<int64_t>,
                    int64_t>(),
           "groups"_a, "schedulers"_a, "milestones"_a, "last_epoch"_a = -1, nb::keep_alive<1, 2>(),
           nb::keep_alive<1, 3>(), "`schedulers` of `groups`, and one milestone fewer.");
  nb::class_<optim::ChainedScheduler, LRScheduler>(m, "ChainedScheduler",
                                                   "Steps every scheduler of a list at each step.")
      .def(nb::init<HyperparameterGroups&, std::vector<LRScheduler*>>(), "groups"_a, "schedulers"_a,
           nb::keep_alive<1, 2>(), nb::keep_alive<1, 3>(), "`schedulers`, all of `groups`.");

  nb::class_<optim::ReduceLROnPlateau>(m, "ReduceLROnPlateau", nb::is_weak_referenceable(),
                                       "Reduces the lr by factor when a metric stops improving.")
      .def(
          "__init__",
          [](optim::ReduceLROnPlateau* self, HyperparameterGroups& g, std::string_view mode,
             double factor, int64_t patience, double threshold, std::string_view threshold_mode,
             int64_t cooldown, double min_lr, double eps) {
            new (self)
                optim::ReduceLROnPlateau(g, plateau_options(mode, factor, patience, threshold,
                                                            threshold_mode, cooldown, min_lr, eps));
          },
          "groups"_a, "mode"_a = "min", "factor"_a = 0.1, "patience"_a = 10, "threshold"_a = 1e-4,
          "threshold_mode"_a = "rel", "cooldown"_a = 0, "min_lr"_a = 0.0, "eps"_a = 1e-8,
          nb::keep_alive<1, 2>(), "Watches the metric passed to step().")
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
