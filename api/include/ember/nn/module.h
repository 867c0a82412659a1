// nn::Module: named parameters, buffers and submodules; train/eval; moving; saving and loading.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/state_dict.h"
#include "ember/tensor/device.h"
#include "ember/tensor/tensor.h"

namespace ember::nn {

/** A count bumped whenever any module's parameter, buffer or submodule is registered, replaced
 *  or removed: a compiled model compares it to learn that its weights may be other objects. */
uint64_t structure_version();
/** Bumps structure_version() (for code that writes a module's slots directly). */
void bump_structure_version();

class Module;

/** A named tensor, as listed by named_parameters() and named_buffers(). */
using NamedTensor = std::pair<std::string, Tensor>;
/** A named submodule, as listed by named_children() and named_modules(). */
using NamedModule = std::pair<std::string, std::shared_ptr<Module>>;
/** Called after forward with the module, its input and its output; a defined result replaces the
 *  output (an undefined one keeps it), as a PyTorch forward hook's non-None return does. */
using ForwardHook = std::function<Tensor(Module&, const Tensor& input, const Tensor& output)>;
/** Called before forward with the module and its input; a defined result replaces the input. */
using ForwardPreHook = std::function<Tensor(Module&, const Tensor& input)>;

/** Removes the hook it was returned for, once (a default-constructed handle does nothing). */
class HookHandle {
 public:
  HookHandle() = default;
  /** Made by Module::register_forward_hook / register_forward_pre_hook. */
  HookHandle(std::weak_ptr<bool> alive, std::function<void()> remove)
      : alive_(std::move(alive)), remove_(std::move(remove)) {}
  /** Unregisters the hook; harmless if already removed or the module is gone. */
  void remove();

 private:
  std::weak_ptr<bool> alive_;
  std::function<void()> remove_;
};

// Note [Parameter slots]
// A module owns its parameters and buffers in slots with stable addresses (a deque). Layers
// keep references to their slots (`Tensor& weight`), so moving a module (to()) or loading a
// state dict updates what the layer computes with: to() replaces the slot's tensor, and
// load_state_dict copies into it in place, which keeps an optimizer made before the load
// pointing at the live parameters (as in PyTorch). A slot may hold an undefined tensor (e.g.
// Linear without bias); listings skip those.

/** Base class of every layer and model: holds parameters, buffers and submodules by name. */
class Module : public std::enable_shared_from_this<Module> {
 public:
  /** A module whose type name (used in printing and errors) is `type_name`. */
  explicit Module(std::string type_name = "Module");
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /** The computation of a one-input, one-output module; the default throws. */
  virtual Tensor forward(const Tensor& input);
  /** Runs the forward pre-hooks, forward() and the forward hooks. */
  Tensor operator()(const Tensor& input);

  /** Adds a parameter: `value` itself if it is a leaf (as libtorch; a tensor with history is
   *  detached first), made to require grad unless `requires_grad` is false. */
  Tensor& register_parameter(std::string name, Tensor value, bool requires_grad = true);
  /** Adds a buffer: state that is moved with the module but not trained, and saved in the
   *  state dict unless not `persistent`. A buffer that requires grad is detached. */
  Tensor& register_buffer(std::string name, Tensor value, bool persistent = true);
  /** Adds a submodule and returns it. */
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    add_child(std::move(name), module);
    return module;
  }

  // Note [Modules edited by name]: language bindings (Python's attribute assignment) look up,
  // replace and remove a module's own entries by name; C++ layers hold references to their slots,
  // which stay valid (a replaced parameter is written into the same slot; a removed one leaves
  // an unlisted, undefined slot behind).
  /** The slot of this module's parameter `name` (not its submodules'), or null. */
  Tensor* find_parameter(const std::string& name);
  /** The slot of this module's buffer `name`, or null. */
  Tensor* find_buffer(const std::string& name);
  /** The direct submodule `name`, or null. */
  std::shared_ptr<Module> find_child(const std::string& name) const;
  /** Sets parameter `name` to `value` (registered if new; a leaf that requires grad unless
   *  `requires_grad` is false); an undefined value leaves a registered, unlisted parameter. */
  Tensor& set_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  /** Sets buffer `name` to `value` (registered if new, keeping its persistence otherwise). */
  Tensor& set_buffer(const std::string& name, Tensor value, bool persistent = true);
  /** Sets submodule `name` (registered if new, replaced in place otherwise). */
  void set_child(const std::string& name, std::shared_ptr<Module> module);
  /** Unregisters this module's parameter, buffer or submodule `name`; false if none. */
  bool remove(const std::string& name);
  /** Whether this module's buffer `name` is saved in the state dict. */
  bool is_persistent_buffer(const std::string& name) const;

  // Note [Derived tensors]: a tensor a layer reads from its slot but that is computed from
  // others before every forward (weight_norm's weight from weight_g and weight_v, PyTorch's plain
  // attribute that a forward pre-hook sets). It keeps its slot, so the layer's reference reads
  // the computed value, and its name, so a binding can read it, but it is no parameter: not
  // listed, trained, moved or saved.
  /** Makes parameter `name` a derived tensor and returns its slot. */
  Tensor& make_derived(const std::string& name);
  /** The slot of this module's derived tensor `name`, or null. */
  Tensor* find_derived(const std::string& name);
  /** Makes derived tensor `name` a parameter again, holding `value` in the same slot. */
  Tensor& make_parameter(const std::string& name, Tensor value, bool requires_grad = true);

  /** Parameters of this module and (with `recurse`) its submodules, in registration order. */
  std::vector<Tensor> parameters(bool recurse = true) const;
  /** parameters() with dotted names ("features.0.weight"). */
  std::vector<NamedTensor> named_parameters(bool recurse = true) const;
  /** Buffers of this module and (with `recurse`) its submodules. */
  std::vector<Tensor> buffers(bool recurse = true) const;
  /** buffers() with dotted names. */
  std::vector<NamedTensor> named_buffers(bool recurse = true) const;
  /** Direct submodules. */
  std::vector<std::shared_ptr<Module>> children() const;
  /** Direct submodules with their names. */
  std::vector<NamedModule> named_children() const;
  /** This module and all submodules, depth first, with dotted names ("" for this one). */
  std::vector<NamedModule> named_modules();
  /** Total number of parameter elements. */
  int64_t num_parameters() const;

  /** Sets training mode here and in every submodule. */
  virtual void train(bool on = true);
  /** train(false). */
  void eval() { train(false); }
  /** True in training mode (the default). */
  bool is_training() const { return training_; }

  /** Moves every parameter and buffer to `device`. */
  void to(Device device);
  /** Converts every floating parameter and buffer to `dtype`. */
  void to(DType dtype);
  /** Puts every 4-d parameter and buffer (convolution weights) in `format`, as PyTorch's
   *  module.to(memory_format=...); other tensors are unchanged. */
  void to(MemoryFormat format);
  /** Resets parameter gradients: undefined (`set_to_none`) or zero-filled. */
  void zero_grad(bool set_to_none = true);

  /** Parameters and persistent buffers by dotted name. */
  StateDict state_dict() const;
  /** state_dict()'s entries in registration order (each module's parameters, then its buffers,
   *  then its submodules', as PyTorch orders a state dict); the tensors themselves, not detached.
   */
  std::vector<NamedTensor> state_items() const;
  /** Copies tensors into parameters and buffers in place; with `strict`, missing or unexpected
   *  names are an error; a shape mismatch always is. */
  void load_state_dict(const StateDict& state, bool strict = true);

  /** Registers a hook called after every forward; its defined result replaces the output. */
  HookHandle register_forward_hook(ForwardHook hook);
  /** Registers a hook that only looks at every forward (it returns nothing). */
  template <typename Hook>
  requires std::is_void_v<std::invoke_result_t<Hook&, Module&, const Tensor&, const Tensor&>>
      HookHandle register_forward_hook(Hook hook) {
    return register_forward_hook(ForwardHook(
        [hook = std::move(hook)](Module& m, const Tensor& in, const Tensor& out) mutable {
          hook(m, in, out);
          return Tensor();
        }));
  }
  /** Registers a hook called before every forward. */
  HookHandle register_forward_pre_hook(ForwardPreHook hook);
  /** The forward hooks, in call order (for bindings that call forward themselves). */
  std::vector<ForwardHook> forward_hooks() const;
  /** The forward pre-hooks, in call order. */
  std::vector<ForwardPreHook> forward_pre_hooks() const;

  /** The type name given at construction ("Linear"). */
  const std::string& type_name() const { return type_name_; }
  /** Renames the type (a subclass defined in another language names itself). */
  void set_type_name(std::string name) { type_name_ = std::move(name); }
  /** Sets training mode of this module alone (train() recurses). */
  void set_training(bool on) { training_ = on; }
  /** The arguments shown in printing ("in_features=784, out_features=10"). */
  virtual std::string extra_repr() const { return {}; }
  /** A PyTorch-style multi-line description of the module tree. */
  std::string repr() const;

 protected:
  /** Adds a submodule (type-erased form of register_module). */
  void add_child(std::string name, std::shared_ptr<Module> module);
  /** The direct submodules in order, for containers that run or index them. */
  const std::vector<NamedModule>& child_list() const { return children_; }

 private:
  struct Slot {
    std::string name;
    Tensor* tensor;
    bool persistent = true;  // buffers only: saved in the state dict
  };
  template <typename Fn>
  void visit_tensors(const std::string& prefix, bool params, bool buffers, bool recurse, Fn&& fn,
                     bool persistent_only = false) const;
  void apply_to_slots(const std::function<Tensor(const Tensor&)>& convert);
  void check_new_name(const std::string& name) const;
  void check_new_child(const std::string& name, const Module& module) const;

  std::string type_name_;
  bool training_ = true;
  std::deque<Tensor> storage_;  // Note [Parameter slots]
  std::vector<Slot> params_;
  std::vector<Slot> buffers_;
  std::vector<Slot> derived_;  // Note [Derived tensors]
  std::vector<NamedModule> children_;
  std::vector<std::pair<int64_t, ForwardHook>> hooks_;
  std::vector<std::pair<int64_t, ForwardPreHook>> pre_hooks_;
  int64_t next_hook_id_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

/** Prints repr(). */
std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace ember::nn
