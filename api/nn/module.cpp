#include "ember/nn/module.h"

#include <algorithm>
#include <atomic>
#include <ostream>
#include <sstream>

#include <fmt/format.h>

#include "ember/autograd/grad_mode.h"
#include "ember/util/error.h"

namespace ember::nn {

void HookHandle::remove() {
  if (remove_ && !alive_.expired()) remove_();
  remove_ = nullptr;
}

Module::Module(std::string type_name) : type_name_(std::move(type_name)) {}

Module::~Module() = default;

Tensor Module::forward(const Tensor&) {
  EMBER_CHECK(false,
              "[nn.{}] forward(Tensor) is not defined for this module (call the overload it "
              "provides, e.g. forward(input, target) for losses)",
              type_name_);
  return {};
}

Tensor Module::operator()(const Tensor& input) {
  if (pre_hooks_.empty() && hooks_.empty()) return forward(input);
  Tensor in = input;
  for (auto& [id, hook] : std::vector(pre_hooks_)) {
    Tensor replaced = hook(*this, in);
    if (replaced.defined()) in = std::move(replaced);
  }
  Tensor out = forward(in);
  for (auto& [id, hook] : std::vector(hooks_)) {
    Tensor replaced = hook(*this, in, out);
    if (replaced.defined()) out = std::move(replaced);
  }
  return out;
}

void Module::check_new_name(const std::string& name) const {
  // KeyError, as PyTorch's register_parameter, register_buffer and add_module raise.
  EMBER_CHECK_KEY(!name.empty(), "[nn.{}] a parameter, buffer or submodule name can't be empty",
                  type_name_);
  EMBER_CHECK_KEY(name.find('.') == std::string::npos,
                  "[nn.{}] a parameter, buffer or submodule name can't contain '.': got '{}'",
                  type_name_, name);
  auto taken = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& s) {
      if constexpr (std::is_same_v<std::decay_t<decltype(s)>, Slot>) {
        return s.name == name;
      } else {
        return s.first == name;
      }
    });
  };
  const char* kind = taken(params_)     ? "parameter"
                     : taken(buffers_)  ? "buffer"
                     : taken(children_) ? "submodule"
                     : taken(derived_)  ? "derived tensor"
                                        : nullptr;
  EMBER_CHECK_KEY(kind == nullptr, "[nn.{}] attribute '{}' already exists (a {} of this module)",
                  type_name_, name, kind ? kind : "");
}

namespace {

// What a parameter slot holds for `value`: the tensor itself when it is a leaf (so a binding's
// object and the module share one tensor, .grad included), else a detached alias.
Tensor as_parameter(Tensor value, bool requires_grad) {
  if (!value.defined()) return value;
  if (!value.is_leaf()) value = value.detach();
  value.requires_grad_(requires_grad && is_floating(value.dtype()));
  return value;
}

Tensor as_buffer(const Tensor& value) {
  return value.defined() && value.requires_grad() ? value.detach() : value;
}

}  // namespace

namespace {
std::atomic<uint64_t> g_structure_version{0};
}  // namespace

uint64_t structure_version() {
  return g_structure_version.load(std::memory_order_relaxed);
}

void bump_structure_version() {
  g_structure_version.fetch_add(1, std::memory_order_relaxed);
}

Tensor& Module::register_parameter(std::string name, Tensor value, bool requires_grad) {
  bump_structure_version();
  check_new_name(name);
  Tensor& slot = storage_.emplace_back(as_parameter(std::move(value), requires_grad));
  params_.push_back({std::move(name), &slot});
  return slot;
}

Tensor& Module::register_buffer(std::string name, Tensor value, bool persistent) {
  bump_structure_version();
  check_new_name(name);
  Tensor& slot = storage_.emplace_back(as_buffer(value));
  buffers_.push_back({std::move(name), &slot, persistent});
  return slot;
}

Tensor* Module::find_parameter(const std::string& name) {
  for (Slot& s : params_) {
    if (s.name == name) return s.tensor;
  }
  return nullptr;
}

Tensor* Module::find_buffer(const std::string& name) {
  for (Slot& s : buffers_) {
    if (s.name == name) return s.tensor;
  }
  return nullptr;
}

std::shared_ptr<Module> Module::find_child(const std::string& name) const {
  for (const auto& [n, child] : children_) {
    if (n == name) return child;
  }
  return nullptr;
}

bool Module::is_persistent_buffer(const std::string& name) const {
  for (const Slot& s : buffers_) {
    if (s.name == name) return s.persistent;
  }
  return false;
}

Tensor& Module::set_parameter(const std::string& name, Tensor value, bool requires_grad) {
  bump_structure_version();
  if (Tensor* slot = find_parameter(name)) {
    *slot = as_parameter(std::move(value), requires_grad);
    return *slot;
  }
  return register_parameter(name, std::move(value), requires_grad);
}

Tensor& Module::make_derived(const std::string& name) {
  bump_structure_version();
  auto it =
      std::find_if(params_.begin(), params_.end(), [&](const Slot& s) { return s.name == name; });
  EMBER_CHECK_KEY(it != params_.end(), "[nn.{}] '{}' is not a parameter of this module", type_name_,
                  name);
  derived_.push_back(*it);
  params_.erase(it);
  return *derived_.back().tensor;
}

Tensor* Module::find_derived(const std::string& name) {
  for (Slot& s : derived_) {
    if (s.name == name) return s.tensor;
  }
  return nullptr;
}

Tensor& Module::make_parameter(const std::string& name, Tensor value, bool requires_grad) {
  bump_structure_version();
  auto it =
      std::find_if(derived_.begin(), derived_.end(), [&](const Slot& s) { return s.name == name; });
  EMBER_CHECK_KEY(it != derived_.end(), "[nn.{}] '{}' is not a derived tensor of this module",
                  type_name_, name);
  Tensor& slot = *it->tensor;
  params_.push_back(*it);
  derived_.erase(it);
  slot = as_parameter(std::move(value), requires_grad);
  return slot;
}

Tensor& Module::set_buffer(const std::string& name, Tensor value, bool persistent) {
  bump_structure_version();
  if (Tensor* slot = find_buffer(name)) {
    *slot = as_buffer(value);
    return *slot;
  }
  return register_buffer(name, std::move(value), persistent);
}

namespace {

/** True if `target` is `root` or one of its submodules (the tree has no cycles: see below). */
bool tree_contains(const Module& root, const Module* target) {
  if (&root == target) return true;
  for (const auto& [name, child] : root.named_children()) {
    if (tree_contains(*child, target)) return true;
  }
  return false;
}

}  // namespace

// Note [Module trees have no cycles]
// Every walk over a module (parameters(), to(), train(), repr(), state_dict(), ...) recurses
// into the submodules, so a module that contains itself, directly or through its submodules,
// would recurse until the stack overflows. Adding a submodule therefore refuses one whose tree
// holds this module; the check walks the new submodule's tree once, when it is added.
void Module::check_new_child(const std::string& name, const Module& module) const {
  EMBER_CHECK(!tree_contains(module, this),
              "[nn.{}] cannot add submodule '{}': it {} this module, and a module cannot contain "
              "itself (keep a reference to it outside the module tree instead)",
              type_name_, name, &module == this ? "is" : "contains");
}

void Module::set_child(const std::string& name, std::shared_ptr<Module> module) {
  bump_structure_version();
  EMBER_CHECK(module != nullptr, "[nn.{}] submodule '{}' is null", type_name_, name);
  check_new_child(name, *module);
  for (auto& [n, child] : children_) {
    if (n == name) {
      child = std::move(module);
      return;
    }
  }
  add_child(name, std::move(module));
}

bool Module::remove(const std::string& name) {
  bump_structure_version();
  auto drop = [&](std::vector<Slot>& slots) {
    auto it =
        std::find_if(slots.begin(), slots.end(), [&](const Slot& s) { return s.name == name; });
    if (it == slots.end()) return false;
    *it->tensor = Tensor();  // the slot stays (layers may hold it), unlisted and empty
    slots.erase(it);
    return true;
  };
  if (drop(params_) || drop(buffers_) || drop(derived_)) return true;
  auto it = std::find_if(children_.begin(), children_.end(),
                         [&](const NamedModule& c) { return c.first == name; });
  if (it == children_.end()) return false;
  children_.erase(it);
  return true;
}

void Module::add_child(std::string name, std::shared_ptr<Module> module) {
  bump_structure_version();
  EMBER_CHECK(module != nullptr, "[nn.{}] submodule '{}' is null", type_name_, name);
  check_new_name(name);
  check_new_child(name, *module);
  children_.emplace_back(std::move(name), std::move(module));
}

template <typename Fn>
void Module::visit_tensors(const std::string& prefix, bool params, bool buffers, bool recurse,
                           Fn&& fn, bool persistent_only) const {
  if (params) {
    for (const Slot& s : params_) {
      if (s.tensor->defined()) fn(prefix + s.name, *s.tensor);
    }
  }
  if (buffers) {
    for (const Slot& s : buffers_) {
      if (s.tensor->defined() && (s.persistent || !persistent_only)) fn(prefix + s.name, *s.tensor);
    }
  }
  if (!recurse) return;
  for (const auto& [name, child] : children_) {
    child->visit_tensors(prefix + name + ".", params, buffers, true, fn, persistent_only);
  }
}

std::vector<NamedTensor> Module::named_parameters(bool recurse) const {
  std::vector<NamedTensor> out;
  visit_tensors("", true, false, recurse,
                [&](std::string name, const Tensor& t) { out.emplace_back(std::move(name), t); });
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  visit_tensors("", true, false, recurse, [&](const std::string&, const Tensor& t) {
    // Note: a module reachable twice (weight sharing) lists its parameters once.
    if (std::none_of(out.begin(), out.end(), [&](const Tensor& o) { return o.is_same(t); })) {
      out.push_back(t);
    }
  });
  return out;
}

std::vector<NamedTensor> Module::named_buffers(bool recurse) const {
  std::vector<NamedTensor> out;
  visit_tensors("", false, true, recurse,
                [&](std::string name, const Tensor& t) { out.emplace_back(std::move(name), t); });
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [name, child] : children_) out.push_back(child);
  return out;
}

std::vector<NamedModule> Module::named_children() const {
  return children_;
}

std::vector<NamedModule> Module::named_modules() {
  std::vector<NamedModule> out;
  std::function<void(const std::string&, const std::shared_ptr<Module>&)> walk =
      [&](const std::string& prefix, const std::shared_ptr<Module>& m) {
        out.emplace_back(prefix, m);
        for (const auto& [name, child] : m->children_) {
          walk(prefix.empty() ? name : prefix + "." + name, child);
        }
      };
  // Note: a module not owned by a shared_ptr (on the stack) is listed through an aliasing
  // pointer that does not own it.
  std::shared_ptr<Module> self = weak_from_this().lock();
  if (!self) self = std::shared_ptr<Module>(std::shared_ptr<Module>{}, this);
  walk("", self);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

// Note [Modules convert their parameters in place]
// to(dtype), to(device) and to(format) convert each parameter into the same tensor
// (Tensor::set_data, Note [Replacing a tensor's data]), as PyTorch's Module._apply sets
// param.data: an optimizer, a Python Parameter object or any handle taken before the conversion
// still names the parameter the module trains, with its requires_grad and hooks. Its .grad is
// converted the same way. A parameter shared by two modules is converted once (the second visit
// finds it converted already). Buffers are replaced in their slots by converted tensors, as
// PyTorch rebinds them; layers read them through their slots.
void Module::apply_to_slots(const std::function<Tensor(const Tensor&)>& convert) {
  autograd::NoGradGuard no_grad;
  for (Slot& s : params_) {
    if (!s.tensor->defined()) continue;
    const Tensor converted = convert(*s.tensor);
    if (!converted.is_same(*s.tensor)) s.tensor->set_data(converted.detach());
    const Tensor& grad = s.tensor->grad();
    if (grad.defined()) {
      const Tensor g = convert(grad);
      if (!g.is_same(grad)) grad.set_data(g.detach());
    }
  }
  for (Slot& s : buffers_) {
    if (s.tensor->defined()) *s.tensor = convert(*s.tensor).detach();
  }
  for (auto& [name, child] : children_) child->apply_to_slots(convert);
}

void Module::to(Device device) {
  apply_to_slots([&](const Tensor& t) { return t.device() == device ? t : t.to(device); });
}

void Module::to(DType dtype) {
  EMBER_CHECK_TYPE(is_floating(dtype), "[nn.{}] to({}): modules convert to floating dtypes only",
                   type_name_, dtype);
  apply_to_slots([&](const Tensor& t) {
    return (!is_floating(t.dtype()) || t.dtype() == dtype) ? t : t.to(dtype);
  });
}

void Module::to(MemoryFormat format) {
  EMBER_CHECK(format != MemoryFormat::Preserve,
              "[nn.{}] to(preserve_format): name a layout (contiguous_format or channels_last)",
              type_name_);
  apply_to_slots([&](const Tensor& t) { return t.dim() == 4 ? t.contiguous(format) : t; });
}

void Module::zero_grad(bool set_to_none) {
  for (Tensor& p : parameters()) {
    Tensor& g = p.mutable_grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      g = Tensor();
    } else {
      autograd::NoGradGuard no_grad;
      g = g.detach();
      g.zero_();
    }
  }
}

StateDict Module::state_dict() const {
  StateDict out;
  visit_tensors(
      "", true, true, true,
      [&](std::string name, const Tensor& t) { out.emplace(std::move(name), t.detach()); },
      /*persistent_only=*/true);
  return out;
}

std::vector<NamedTensor> Module::state_items() const {
  std::vector<NamedTensor> out;
  visit_tensors(
      "", true, true, true,
      [&](std::string name, const Tensor& t) { out.emplace_back(std::move(name), t); },
      /*persistent_only=*/true);
  return out;
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  std::vector<std::pair<std::string, Tensor*>> slots;
  std::function<void(const Module&, const std::string&)> collect = [&](const Module& m,
                                                                       const std::string& prefix) {
    for (const Slot& s : m.params_) {
      if (s.tensor->defined()) slots.emplace_back(prefix + s.name, s.tensor);
    }
    for (const Slot& s : m.buffers_) {
      if (s.tensor->defined() && s.persistent) slots.emplace_back(prefix + s.name, s.tensor);
    }
    for (const auto& [name, child] : m.children_) collect(*child, prefix + name + ".");
  };
  collect(*this, "");

  // Check everything before changing anything, so a failed load leaves the module as it was.
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [name, slot] : slots) {
    auto it = state.find(name);
    if (it == state.end()) {
      missing.push_back(name);
    } else if (!it->second.defined() || it->second.sizes() != slot->sizes()) {
      mismatched.push_back(fmt::format(
          "{}: checkpoint {} vs module {}", name,
          it->second.defined() ? shape_str(it->second.sizes()) : std::string("undefined"),
          shape_str(slot->sizes())));
    }
  }
  for (const auto& entry : state) {
    const std::string& name = entry.first;  // not a structured binding: clang 14 cannot capture one
    if (std::none_of(slots.begin(), slots.end(), [&](const auto& s) { return s.first == name; })) {
      unexpected.push_back(name);
    }
  }
  EMBER_CHECK(mismatched.empty(), "[nn.{}] load_state_dict: size mismatch for {}", type_name_,
              fmt::join(mismatched, "; "));
  EMBER_CHECK(!strict || (missing.empty() && unexpected.empty()),
              "[nn.{}] load_state_dict: missing keys [{}], unexpected keys [{}] (pass "
              "strict=false to load a subset)",
              type_name_, fmt::join(missing, ", "), fmt::join(unexpected, ", "));
  autograd::NoGradGuard no_grad;
  for (auto& [name, slot] : slots) {
    auto it = state.find(name);
    if (it != state.end()) slot->copy_(it->second);
  }
}

HookHandle Module::register_forward_hook(ForwardHook hook) {
  const int64_t id = next_hook_id_++;
  hooks_.emplace_back(id, std::move(hook));
  return HookHandle(
      alive_, [this, id] { std::erase_if(hooks_, [id](const auto& h) { return h.first == id; }); });
}

HookHandle Module::register_forward_pre_hook(ForwardPreHook hook) {
  const int64_t id = next_hook_id_++;
  pre_hooks_.emplace_back(id, std::move(hook));
  return HookHandle(alive_, [this, id] {
    std::erase_if(pre_hooks_, [id](const auto& h) { return h.first == id; });
  });
}

std::vector<ForwardHook> Module::forward_hooks() const {
  std::vector<ForwardHook> out;
  for (const auto& [id, hook] : hooks_) out.push_back(hook);
  return out;
}

std::vector<ForwardPreHook> Module::forward_pre_hooks() const {
  std::vector<ForwardPreHook> out;
  for (const auto& [id, hook] : pre_hooks_) out.push_back(hook);
  return out;
}

std::string Module::repr() const {
  // As PyTorch's Module.__repr__: a one-line extra_repr of a module without submodules follows
  // the name; otherwise each line of extra_repr and each submodule (its own lines indented) is a
  // line of its own, indented by two spaces.
  std::vector<std::string> lines;
  const std::string extra = extra_repr();
  for (size_t start = 0; !extra.empty() && start <= extra.size();) {
    const size_t end = std::min(extra.find('\n', start), extra.size());
    lines.push_back(extra.substr(start, end - start));
    start = end + 1;
  }
  const size_t extra_lines = lines.size();
  for (const auto& [name, child] : children_) {
    std::string indented;
    for (char c : child->repr()) {
      indented += c;
      if (c == '\n') indented += "  ";
    }
    lines.push_back("(" + name + "): " + indented);
  }
  std::string out = type_name_ + "(";
  if (extra_lines == 1 && lines.size() == 1) {
    out += lines[0];
  } else if (!lines.empty()) {
    out += "\n";
    for (const std::string& line : lines) out += "  " + line + "\n";
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Module& m) {
  return os << m.repr();
}

}  // namespace ember::nn
