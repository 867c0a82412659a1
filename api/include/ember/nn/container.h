// Containers: Sequential (runs its modules in order) and ModuleList (holds them).
#pragma once

#include <initializer_list>
#include <memory>
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

// Note [Containers list their children]: Sequential and ModuleList keep no list of their own;
// their modules are the module's children, in order, so a child replaced or removed by name
// (Note [Modules edited by name]) is what they run and index.

/** Runs its modules one after another; they are named "0", "1", ... */
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  /** A Sequential of `modules`, in order. */
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  /** Appends a module, named by its index ("0", "1", ...). */
  void push_back(std::shared_ptr<Module> module);
  /** Appends a module under `name`, as PyTorch's Sequential(OrderedDict(...)) does. */
  void push_back(std::string name, std::shared_ptr<Module> module);
  /** Feeds x through every module in order. */
  Tensor forward(const Tensor& x) override;
  /** The i-th module (negative counts from the end). */
  std::shared_ptr<Module> operator[](int64_t i) const;
  /** Number of modules. */
  int64_t size() const { return static_cast<int64_t>(child_list().size()); }

 protected:
  /** An empty Sequential that prints as `type_name` (a subclass with a forward of its own). */
  explicit Sequential(std::string type_name) : Module(std::move(type_name)) {}
};

/** Runs `seq` on `x` in `segments` consecutive segments of about equal length, each but the
 *  last under autograd::checkpoint, so only the segments' boundaries are kept for backward
 *  (torch.utils.checkpoint.checkpoint_sequential). A segment whose input does not require grad
 *  (the first, on plain data) runs as usual. */
Tensor checkpoint_sequential(const Sequential& seq, int64_t segments, const Tensor& x,
                             bool preserve_rng_state = true);

/** Holds modules by index ("0", "1", ...) so their parameters are registered; no forward. */
class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  /** A list of `modules`. */
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules);
  /** Appends a module. */
  void push_back(std::shared_ptr<Module> module);
  /** The i-th module (negative counts from the end). */
  std::shared_ptr<Module> operator[](int64_t i) const;
  /** Number of modules. */
  int64_t size() const { return static_cast<int64_t>(child_list().size()); }

  /** Walks the modules (not their names). */
  class Iterator {
   public:
    /** At `it` of the children. */
    explicit Iterator(std::vector<NamedModule>::const_iterator it) : it_(it) {}
    /** The module. */
    const std::shared_ptr<Module>& operator*() const { return it_->second; }
    /** The next module. */
    Iterator& operator++() {
      ++it_;
      return *this;
    }
    bool operator==(const Iterator&) const = default;

   private:
    std::vector<NamedModule>::const_iterator it_;
  };
  /** Iteration over the modules. */
  Iterator begin() const { return Iterator(child_list().begin()); }
  /** End of iteration. */
  Iterator end() const { return Iterator(child_list().end()); }
};

}  // namespace ember::nn
