// nn::Module: named parameters, buffers and submodules; train/eval; moving; saving and loading.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/state_dict.h"
#include "ember/tensor/device.h"
#include "ember/tensor/tensor.h"

namespace ember::nn {

class Module;

/** A named tensor, as listed by named_parameters() and named_buffers(). */
using NamedTensor = std::pair<std::string, Tensor>;
/** A named submodule, as listed by named_children() and named_modules(). */
using NamedModule = std::pair<std::string, std::shared_ptr<Module>>;
/** Called after forward with the module, its input and its output. */
using ForwardHook = std::function<void(Module&, const Tensor& input, const Tensor& output)>;
/** Called before forward with the module and its input; may return a replacement input. */
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

  /** Adds a parameter (a leaf that requires grad unless `requires_grad` is false). */
  Tensor& register_parameter(std::string name, Tensor value, bool requires_grad = true);
  /** Adds a buffer: state that is saved and moved with the module but not trained. */
  Tensor& register_buffer(std::string name, Tensor value);
  /** Adds a submodule and returns it. */
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    add_child(std::move(name), module);
    return module;
  }

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

  /** Parameters and buffers by dotted name. */
  StateDict state_dict() const;
  /** Copies tensors into parameters and buffers in place; with `strict`, missing or unexpected
   *  names are an error; a shape mismatch always is. */
  void load_state_dict(const StateDict& state, bool strict = true);

  /** Registers a hook called after every forward. */
  HookHandle register_forward_hook(ForwardHook hook);
  /** Registers a hook called before every forward. */
  HookHandle register_forward_pre_hook(ForwardPreHook hook);

  /** The type name given at construction ("Linear"). */
  const std::string& type_name() const { return type_name_; }
  /** The arguments shown in printing ("in_features=784, out_features=10"). */
  virtual std::string extra_repr() const { return {}; }
  /** A PyTorch-style multi-line description of the module tree. */
  std::string repr() const;

 protected:
  /** Adds a submodule (type-erased form of register_module). */
  void add_child(std::string name, std::shared_ptr<Module> module);

 private:
  struct Slot {
    std::string name;
    Tensor* tensor;
  };
  template <typename Fn>
  void visit_tensors(const std::string& prefix, bool params, bool buffers, bool recurse,
                     Fn&& fn) const;
  void apply_to_slots(const std::function<Tensor(const Tensor&)>& convert);
  void check_new_name(const std::string& name) const;

  std::string type_name_;
  bool training_ = true;
  std::deque<Tensor> storage_;  // Note [Parameter slots]
  std::vector<Slot> params_;
  std::vector<Slot> buffers_;
  std::vector<NamedModule> children_;
  std::vector<std::pair<int64_t, ForwardHook>> hooks_;
  std::vector<std::pair<int64_t, ForwardPreHook>> pre_hooks_;
  int64_t next_hook_id_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

/** Prints repr(). */
std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace ember::nn
