// Optimizer: parameter groups with their hyperparameters, per-parameter state, zero_grad and
// a flat state dict.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/state_dict.h"
#include "ember/tensor/tensor.h"

namespace ember::optim {

/** Hyperparameters by name ("lr", "momentum", ...), like the keys of a PyTorch param group. */
using Options = std::map<std::string, double>;

/** Parameters updated with the same hyperparameters; `options` overrides the defaults. */
struct ParamGroup {
  /** The tensors this group updates in place. */
  std::vector<Tensor> params;
  /** Hyperparameters; the optimizer fills in every one the group does not set. */
  Options options = {};

  /** The learning rate of this group. */
  double lr() const { return get("lr"); }
  /** Sets the learning rate of this group (what schedulers do). */
  void set_lr(double lr) { set("lr", lr); }
  /** The hyperparameter `name`; throws ember::Error if the group has none of that name. */
  double get(const std::string& name) const;
  /** Sets the hyperparameter `name` (unchecked: the next step uses it as is). */
  void set(const std::string& name, double value) { options[name] = value; }
};

/** One parameter's state: its step count and the buffers its optimizer keeps. */
struct ParamState {
  /** Number of updates applied to this parameter. */
  int64_t step = 0;
  /** Buffers in the order of the optimizer's buffer names; undefined until first needed. */
  std::vector<Tensor> buffers;
};

/** The hyperparameters of an optimizer's groups as a learning-rate scheduler reads and sets them
 *  (Note [One owner of a learning rate] in lr_scheduler.h): a C++ Optimizer, or an optimizer whose
 *  groups live elsewhere (one written in Python). */
class HyperparameterGroups {
 public:
  virtual ~HyperparameterGroups() = default;
  /** The number of groups. */
  virtual size_t num_groups() const = 0;
  /** Hyperparameter `name` of group `index`; throws ember::Error if the group has none. */
  virtual double hyperparameter(size_t index, const std::string& name) const = 0;
  /** Sets hyperparameter `name` of group `index`, used as is by the next step. */
  virtual void set_hyperparameter(size_t index, const std::string& name, double value) = 0;
  /** Whether the groups have hyperparameter `name` ("momentum", "beta1"). */
  virtual bool has_hyperparameter(const std::string& name) const = 0;
  /** Whether group `index` holds hyperparameter `name` ("initial_lr"). */
  virtual bool group_has(size_t index, const std::string& name) const = 0;
  /** The optimizer's name in messages ("optim.SGD"). */
  virtual std::string optimizer_name() const = 0;
  /** The same address for every view of one optimizer (schedulers combined must share it). */
  virtual const void* identity() const { return this; }
};

/** Base of all optimizers: holds the groups and state; subclasses implement step(). */
class Optimizer : public HyperparameterGroups {
 public:
  ~Optimizer() override = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /** Applies one update to every parameter that has a gradient. */
  virtual void step() = 0;
  /** Clears the gradients: resets them to undefined, or fills them with zeros. */
  void zero_grad(bool set_to_none = true);

  /** The parameter groups (mutable, so that lr and other hyperparameters can change). */
  std::vector<ParamGroup>& param_groups() { return groups_; }
  /** The parameter groups. */
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  /** Adds a group, filling in the defaults and checking its hyperparameters. */
  void add_param_group(ParamGroup group);
  /** The default hyperparameters of new groups. */
  const Options& defaults() const { return defaults_; }

  /** The state of `param`, or null if it was never updated. */
  const ParamState* state(const Tensor& param) const;
  /** The names of the buffers in each ParamState, in the order of ParamState::buffers. */
  const std::vector<std::string>& buffer_names() const { return buffer_names_; }
  /** Whether ParamState::step counts updates (it stays 0 for optimizers that keep no count). */
  bool counts_steps() const { return counts_steps_; }

  /** A copy of the state: "state.<i>.<buffer>", "state.<i>.step" and "param_groups.<g>.<hyper>". */
  StateDict state_dict() const;
  /** Replaces hyperparameters and state with those of `dict` (after checking all of it). */
  void load_state_dict(const StateDict& dict);

  /** The name used in error messages, e.g. "optim.SGD". */
  const std::string& name() const { return name_; }

  /** The number of param groups. */
  size_t num_groups() const override { return groups_.size(); }
  /** Hyperparameter `name` of group `index` (ParamGroup::get). */
  double hyperparameter(size_t index, const std::string& name) const override;
  /** Sets hyperparameter `name` of group `index` (ParamGroup::set). */
  void set_hyperparameter(size_t index, const std::string& name, double value) override;
  /** Whether the defaults name `name`, or every group sets it ("initial_lr"). */
  bool has_hyperparameter(const std::string& name) const override;
  /** Whether group `index` holds `name`. */
  bool group_has(size_t index, const std::string& name) const override;
  /** name(). */
  std::string optimizer_name() const override { return name_; }

 protected:
  /** Makes an optimizer called `name` whose state has the given buffers (and a step count). */
  Optimizer(std::string name, Options defaults, std::vector<std::string> buffer_names,
            bool counts_steps);
  /** Adds the groups; call from the subclass constructor once validate() can run. */
  void init_groups(std::vector<ParamGroup> groups);
  /** Throws ember::Error if the group's hyperparameters are out of range. */
  virtual void validate(const ParamGroup& group) const = 0;
  /** A saved state buffer made ready for `param` (its device), or an ember::Error naming `key`;
   *  by default the buffer is shaped like the parameter and takes its dtype. */
  virtual Tensor load_buffer(size_t buffer, const Tensor& value, const Tensor& param,
                             const std::string& key, size_t index) const;
  /** The state of `param`, created (buffers undefined) if it has none yet. */
  ParamState& state_for(const Tensor& param);
  /** Whether a group may hold `name`: a default's name, or "initial_lr". */
  bool known_hyperparameter(const std::string& name) const;

 private:
  /** Throws ember::IndexError unless `index` names a group. */
  void check_group_index(size_t index) const;

  std::string name_;
  Options defaults_;
  std::vector<std::string> buffer_names_;
  bool counts_steps_;
  std::vector<ParamGroup> groups_;
  std::unordered_map<const TensorImpl*, ParamState> state_;
};

}  // namespace ember::optim
