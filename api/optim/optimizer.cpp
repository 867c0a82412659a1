#include "ember/optim/optimizer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <set>
#include <span>

#include "api/optim/fused_step.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/node.h"
#include "ember/autograd/record.h"
#include "ember/ops/factory.h"
#include "ember/util/error.h"

namespace ember::optim {

double ParamGroup::get(const std::string& name) const {
  auto it = options.find(name);
  EMBER_CHECK(it != options.end(), "[optim] the param group has no hyperparameter '{}'", name);
  return it->second;
}

Optimizer::Optimizer(std::string name, Options defaults, std::vector<std::string> buffer_names,
                     bool counts_steps)
    : name_(std::move(name)),
      defaults_(std::move(defaults)),
      buffer_names_(std::move(buffer_names)),
      counts_steps_(counts_steps) {}

void Optimizer::check_group_index(size_t index) const {
  EMBER_CHECK_INDEX(index < groups_.size(),
                    "[{}] param group {} is out of range (the optimizer has {})", name_, index,
                    groups_.size());
}

double Optimizer::hyperparameter(size_t index, const std::string& name) const {
  check_group_index(index);
  return groups_[index].get(name);
}

void Optimizer::set_hyperparameter(size_t index, const std::string& name, double value) {
  check_group_index(index);
  groups_[index].set(name, value);
}

// A group may also hold "initial_lr", the lr a learning-rate schedule started from, which the
// first scheduler of an optimizer records as PyTorch's does (Note [One owner of a learning rate]);
// it is saved and loaded with the groups, so a resumed schedule finds it.
bool Optimizer::known_hyperparameter(const std::string& name) const {
  return defaults_.count(name) != 0 || name == "initial_lr";
}

bool Optimizer::group_has(size_t index, const std::string& name) const {
  check_group_index(index);
  return groups_[index].options.count(name) != 0;
}

bool Optimizer::has_hyperparameter(const std::string& name) const {
  if (defaults_.count(name) != 0) return true;
  return !groups_.empty() && std::all_of(groups_.begin(), groups_.end(), [&](const ParamGroup& g) {
    return g.options.count(name) != 0;
  });
}

void Optimizer::init_groups(std::vector<ParamGroup> groups) {
  size_t n = 0;
  for (const auto& g : groups) n += g.params.size();
  EMBER_CHECK(n > 0, "[{}] got an empty parameter list", name_);
  for (auto& g : groups) add_param_group(std::move(g));
}

void Optimizer::add_param_group(ParamGroup group) {
  const size_t index = groups_.size();
  for (const auto& [key, value] : group.options) {
    EMBER_CHECK(known_hyperparameter(key), "[{}] param group {} has an unknown hyperparameter '{}'",
                name_, index, key);
  }
  for (const auto& [key, value] : defaults_) group.options.try_emplace(key, value);
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    EMBER_CHECK_TYPE(p.defined(), "[{}] parameter {} of param group {} is an undefined tensor",
                     name_, i, index);
    EMBER_CHECK_TYPE(
        is_floating(p.dtype()),
        "[{}] parameter {} of param group {} has dtype {}: only floating tensors can be "
        "optimized",
        name_, i, index, p.dtype());
    // As in PyTorch: a step writes the parameter in place, which a non-leaf cannot take.
    EMBER_CHECK(p.is_leaf(),
                "[{}] parameter {} of param group {} is not a leaf tensor (it has grad_fn {}): "
                "optimize the leaf it was computed from, or detach() it",
                name_, i, index, p.grad_fn() ? p.grad_fn()->name() : "none");
    for (const auto& g : groups_) {
      for (const auto& q : g.params) {
        EMBER_CHECK(!q.is_same(p), "[{}] a parameter appears in more than one param group", name_);
      }
    }
    for (size_t j = 0; j < i; ++j) {
      EMBER_CHECK(!group.params[j].is_same(p),
                  "[{}] parameter {} of param group {} appears twice in the group", name_, i,
                  index);
    }
  }
  validate(group);
  groups_.push_back(std::move(group));
}

void Optimizer::zero_grad(bool set_to_none) {
  autograd::NoGradGuard no_grad;
  for (auto& g : groups_) {
    for (const auto& p : g.params) {
      if (!p.grad().defined()) continue;
      if (set_to_none) {
        p.mutable_grad() = Tensor();
      } else {
        Tensor& grad = p.mutable_grad();
        if (grad.grad_fn()) grad = grad.detach();
        grad.zero_();
      }
    }
  }
}

const ParamState* Optimizer::state(const Tensor& param) const {
  auto it = state_.find(param.impl());
  return it == state_.end() ? nullptr : &it->second;
}

ParamState& Optimizer::state_for(const Tensor& param) {
  ParamState& s = state_[param.impl()];
  if (s.buffers.size() != buffer_names_.size()) s.buffers.resize(buffer_names_.size());
  return s;
}

namespace {

Tensor scalar_f64(double v) {
  return full({}, v, {DType::Float64, Device::cpu()});
}

// Parses "<int>.<rest>" at the start of `s`; false if there is no integer.
bool split_index(std::string_view s, size_t& index, std::string_view& rest) {
  auto dot = s.find('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + dot, index);
  if (ec != std::errc() || ptr != s.data() + dot) return false;
  rest = s.substr(dot + 1);
  return true;
}

}  // namespace

// Note [Optimizer state dict layout]
// A flat map of tensors, so that it saves as safetensors like a module's state dict:
//   param_groups.<g>.params   int64 [n]: the indices of the group's parameters, counted over
//                             all groups in order (PyTorch's numbering)
//   param_groups.<g>.<hyper>  float64 0-d: every hyperparameter of the group
//   state.<i>.step            float64 0-d: updates applied to parameter i (if the optimizer
//                             counts them)
//   state.<i>.<buffer>        the buffers kept for parameter i (copies, same shape as it)
// Parameters never updated have no "state.<i>." entries.
StateDict Optimizer::state_dict() const {
  StateDict out;
  int64_t index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = fmt::format("param_groups.{}.", g);
    const ParamGroup& group = groups_[g];
    Tensor ids = empty({static_cast<int64_t>(group.params.size())}, {DType::Int64, Device::cpu()});
    auto* id = ids.data_ptr<int64_t>();
    for (const auto& [key, value] : group.options) out[prefix + key] = scalar_f64(value);
    for (const auto& p : group.params) {
      *id++ = index;
      if (const ParamState* s = state(p)) {
        const std::string sp = fmt::format("state.{}.", index);
        if (counts_steps_) out[sp + "step"] = scalar_f64(static_cast<double>(s->step));
        for (size_t b = 0; b < buffer_names_.size(); ++b) {
          if (s->buffers[b].defined()) out[sp + buffer_names_[b]] = s->buffers[b].detach().clone();
        }
      }
      ++index;
    }
    out[prefix + "params"] = ids;
  }
  return out;
}

void Optimizer::load_state_dict(const StateDict& dict) {
  const std::string who = fmt::format("[{}] load_state_dict:", name_);
  std::vector<ParamGroup> groups = groups_;
  std::vector<const Tensor*> params;  // by global index
  for (const auto& g : groups) {
    for (const auto& p : g.params) params.push_back(&p);
  }
  std::unordered_map<const TensorImpl*, ParamState> state;
  std::set<size_t> seen_groups;
  size_t n_groups = 0;
  for (const auto& entry : dict) {
    const std::string& k = entry.first;
    n_groups += k.rfind("param_groups.", 0) == 0 && k.size() > 7 &&
                k.compare(k.size() - 7, 7, ".params") == 0;
  }
  EMBER_CHECK(n_groups == groups.size(),
              "{} the state has {} param groups but the optimizer has {}", who, n_groups,
              groups.size());

  for (const auto& [key, value] : dict) {
    std::string_view rest;
    size_t index = 0;
    EMBER_CHECK_TYPE(value.defined(), "{} entry '{}' is an undefined tensor", who, key);
    if (key.rfind("param_groups.", 0) == 0) {
      EMBER_CHECK(split_index(std::string_view(key).substr(13), index, rest),
                  "{} unexpected entry '{}'", who, key);
      EMBER_CHECK(index < groups.size(),
                  "{} entry '{}' names param group {} but the optimizer "
                  "has {}",
                  who, key, index, groups.size());
      ParamGroup& group = groups[index];
      if (rest == "params") {
        EMBER_CHECK(value.dim() == 1 && value.numel() == static_cast<int64_t>(group.params.size()),
                    "{} param group {} has {} parameters in the state but {} in the optimizer", who,
                    index, value.numel(), group.params.size());
        seen_groups.insert(index);
        continue;
      }
      EMBER_CHECK(known_hyperparameter(std::string(rest)),
                  "{} entry '{}' names an unknown hyperparameter '{}'", who, key, rest);
      EMBER_CHECK(value.numel() == 1, "{} entry '{}' must hold one number, got shape {}", who, key,
                  value.sizes());
      group.options[std::string(rest)] = value.item();
    } else if (key.rfind("state.", 0) == 0) {
      EMBER_CHECK(split_index(std::string_view(key).substr(6), index, rest),
                  "{} unexpected entry '{}'", who, key);
      EMBER_CHECK(index < params.size(),
                  "{} entry '{}' names parameter {} but the optimizer has {}", who, key, index,
                  params.size());
      const Tensor& p = *params[index];
      ParamState& s = state[p.impl()];
      s.buffers.resize(buffer_names_.size());
      if (rest == "step" && counts_steps_) {
        EMBER_CHECK(value.numel() == 1, "{} entry '{}' must hold one number, got shape {}", who,
                    key, value.sizes());
        const double step = value.item();
        EMBER_CHECK(step >= 0 && step == static_cast<double>(static_cast<int64_t>(step)),
                    "{} entry '{}' must be a non-negative integer, got {}", who, key, step);
        s.step = static_cast<int64_t>(step);
        continue;
      }
      size_t b = 0;
      while (b < buffer_names_.size() && buffer_names_[b] != rest) ++b;
      EMBER_CHECK(b < buffer_names_.size(), "{} entry '{}' names an unknown state buffer '{}'", who,
                  key, rest);
      autograd::NoGradGuard no_grad;
      s.buffers[b] = load_buffer(b, value.detach(), p, key, index);
    } else {
      EMBER_CHECK(false, "{} unexpected entry '{}' (expected 'state.' or 'param_groups.' keys)",
                  who, key);
    }
  }
  EMBER_CHECK(seen_groups.size() == groups.size(),
              "{} the state has {} param groups but the optimizer has {}", who, seen_groups.size(),
              groups.size());
  for (const auto& g : groups) validate(g);
  groups_ = std::move(groups);
  state_ = std::move(state);
}

Tensor Optimizer::load_buffer(size_t, const Tensor& value, const Tensor& param,
                              const std::string& key, size_t index) const {
  EMBER_CHECK(value.sizes() == param.sizes(),
              "[{}] load_state_dict: entry '{}' has shape {} but parameter {} has shape {}", name_,
              key, value.sizes(), index, param.sizes());
  return value.to(param.device()).to(param.dtype()).contiguous().clone();
}

namespace detail {

bool fused_step(ops::Id op, KernelAttrs attrs, Tensor& param,
                std::initializer_list<Tensor*> state) {
  // A channels-last parameter steps like a contiguous one: dense tensors of one layout hold the
  // same elements in the same order, so the kernel gets them as flat runs.
  const MemoryFormat format = param.suggest_memory_format();
  if (!param.is_contiguous(format) || !has_kernel(core_op(op), param.device(), param.dtype())) {
    return false;
  }
  const auto flat = [&](const Tensor& t) {
    return format == MemoryFormat::Contiguous ? t : t.as_strided({t.numel()}, {1});
  };
  autograd::check_writable(param, "optimizer.step");  // Note [Inference tensors]
  std::array<Tensor, 4> outputs;  // the parameter and at most three state tensors
  std::array<const Tensor*, 4> out_ptrs{};
  size_t n = 0;
  EMBER_ASSERT(state.size() < outputs.size());
  outputs[n] = flat(param);
  out_ptrs[n] = &outputs[n];
  ++n;
  for (Tensor* t : state) {
    if (t == nullptr || !t->defined()) continue;
    if (!t->is_contiguous(format) || t->dtype() != param.dtype()) return false;
    outputs[n] = flat(*t);
    out_ptrs[n] = &outputs[n];
    ++n;
  }
  Tensor g = param.grad();
  if (g.dtype() != param.dtype()) g = g.to(param.dtype());
  g = flat(g.contiguous(format));
  const Tensor* inputs[] = {&g};
  run_kernel(core_op(op), param.dtype(), inputs, std::span<const Tensor* const>(out_ptrs.data(), n),
             attrs);
  for (size_t i = 0; i < n; ++i) outputs[i].bump_version();
  return true;
}

}  // namespace detail

}  // namespace ember::optim
