#include "ember/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "ember/ops/factory.h"
#include "ember/util/error.h"

namespace ember::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (const auto& g : optimizer_.param_groups()) base_lrs_.push_back(g.lr());
}

void LRScheduler::init() {
  step();
}

// Note [Recursive schedules]
// As PyTorch's get_lr, a scheduler whose PyTorch form is recursive (StepLR, CosineAnnealingLR)
// computes the next lr from the lr the group holds now, not from base_lrs alone: an lr changed by
// hand between steps, or by another scheduler stepping the same optimizer (a warm-up chained
// before a cosine), carries on along the schedule instead of being overwritten. Left alone, the
// recursion gives the closed form's values (PyTorch's _get_closed_form_lr). OneCycleLR is a
// closed form in PyTorch too, and overwrites such a change.
void LRScheduler::step() {
  ++last_epoch_;
  std::vector<double> lrs = compute_lr();
  auto& groups = optimizer_.param_groups();
  EMBER_ASSERT(lrs.size() == groups.size());
  for (size_t i = 0; i < groups.size(); ++i) groups[i].set_lr(lrs[i]);
  schedule_other_hyperparameters();
  last_lr_ = std::move(lrs);
}

// Note [Scheduler states]
// A scheduler's state is where the schedule stands: the step count and the learning rates it
// started from and last set, as float64 tensors so they survive a safetensors checkpoint
// exactly. As in a resumed PyTorch run, the scheduler is first constructed with the same
// hyperparameters (step size, T_max, ...) and then loaded; the optimizer's learning rates come
// back with the optimizer's own state_dict.
namespace {

Tensor f64_vector(const std::vector<double>& v) {
  return from_vector(v, {static_cast<int64_t>(v.size())},
                     TensorOptions(DType::Float64, Device::cpu()));
}

std::vector<double> read_f64_vector(const StateDict& dict, const std::string& key, size_t n,
                                    const char* op) {
  auto it = dict.find(key);
  EMBER_CHECK(it != dict.end(), "[{}] load_state_dict: missing '{}'", op, key);
  const Tensor t = it->second.to(Device::cpu()).to(DType::Float64).contiguous();
  EMBER_CHECK(t.dim() == 1 && t.numel() == static_cast<int64_t>(n),
              "[{}] load_state_dict: '{}' has shape {} but the optimizer has {} param groups", op,
              key, shape_str(t.sizes()), n);
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + n);
}

double read_scalar(const StateDict& dict, const std::string& key, const char* op) {
  auto it = dict.find(key);
  EMBER_CHECK(it != dict.end(), "[{}] load_state_dict: missing '{}'", op, key);
  EMBER_CHECK(it->second.numel() == 1, "[{}] load_state_dict: '{}' has {} elements, not 1", op, key,
              it->second.numel());
  return it->second.to(Device::cpu()).to(DType::Float64).item();
}

}  // namespace

StateDict LRScheduler::state_dict() const {
  return {{"last_epoch", full({}, last_epoch_, TensorOptions(DType::Int64, Device::cpu()))},
          {"base_lrs", f64_vector(base_lrs_)},
          {"last_lr", f64_vector(last_lr_)}};
}

void LRScheduler::load_state_dict(const StateDict& dict) {
  const char* op = "optim.LRScheduler";
  const size_t n = optimizer_.param_groups().size();
  std::vector<double> base = read_f64_vector(dict, "base_lrs", n, op);
  std::vector<double> last = read_f64_vector(dict, "last_lr", n, op);
  const double epoch = read_scalar(dict, "last_epoch", op);
  EMBER_CHECK(epoch >= 0 && epoch == std::floor(epoch),
              "[{}] load_state_dict: last_epoch must be a non-negative integer: got {}", op, epoch);
  last_epoch_ = static_cast<int64_t>(epoch);
  base_lrs_ = std::move(base);
  last_lr_ = std::move(last);
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK(step_size > 0, "[optim.StepLR] invalid step_size: {} (must be > 0)", step_size);
  init();
}

std::vector<double> StepLR::compute_lr() const {
  std::vector<double> lrs;
  const bool decay = last_epoch() > 0 && last_epoch() % step_size_ == 0;
  for (const auto& g : optimizer_.param_groups()) lrs.push_back(decay ? g.lr() * gamma_ : g.lr());
  return lrs;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), t_max_(T_max), eta_min_(eta_min) {
  EMBER_CHECK(T_max > 0, "[optim.CosineAnnealingLR] invalid T_max: {} (must be > 0)", T_max);
  init();
}

std::vector<double> CosineAnnealingLR::compute_lr() const {
  const int64_t e = last_epoch();
  const double pi = std::numbers::pi, t = static_cast<double>(t_max_);
  const auto& groups = optimizer_.param_groups();
  std::vector<double> lrs;
  for (size_t i = 0; i < groups.size(); ++i) {
    const double lr = groups[i].lr();
    if (e == 0) {
      lrs.push_back(lr);
    } else if ((e - 1 - t_max_) % (2 * t_max_) == 0) {
      // The step out of a trough, where the ratio below would divide by 1 + cos(pi) = 0.
      lrs.push_back(lr + (base_lrs_[i] - eta_min_) * (1 - std::cos(pi / t)) / 2);
    } else {
      const double ratio = (1 + std::cos(pi * static_cast<double>(e) / t)) /
                           (1 + std::cos(pi * static_cast<double>(e - 1) / t));
      lrs.push_back(ratio * (lr - eta_min_) + eta_min_);
    }
  }
  return lrs;
}

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps,
                       OneCycleOptions options)
    : OneCycleLR(optimizer, std::vector<double>(optimizer.param_groups().size(), max_lr),
                 total_steps, options) {}

OneCycleLR::OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs, int64_t total_steps,
                       OneCycleOptions options)
    : LRScheduler(optimizer),
      max_lrs_(std::move(max_lrs)),
      total_steps_(total_steps),
      options_(options) {
  EMBER_CHECK(total_steps > 0, "[optim.OneCycleLR] invalid total_steps: {} (must be > 0)",
              total_steps);
  EMBER_CHECK(options.pct_start >= 0 && options.pct_start <= 1,
              "[optim.OneCycleLR] invalid pct_start: {} (must be in [0, 1])", options.pct_start);
  EMBER_CHECK(options.div_factor > 0 && options.final_div_factor > 0,
              "[optim.OneCycleLR] div_factor and final_div_factor must be > 0, got {} and {}",
              options.div_factor, options.final_div_factor);
  auto& groups = optimizer.param_groups();
  EMBER_CHECK(max_lrs_.size() == groups.size(),
              "[optim.OneCycleLR] got {} max_lr values for {} param groups", max_lrs_.size(),
              groups.size());
  for (double m : max_lrs_) {
    EMBER_CHECK(m >= 0, "[optim.OneCycleLR] invalid max_lr: {} (must be >= 0)", m);
  }
  // The schedule starts at max_lr / div_factor whatever lr the groups had.
  for (size_t i = 0; i < max_lrs_.size(); ++i) base_lrs_[i] = max_lrs_[i] / options.div_factor;
  const double total = static_cast<double>(total_steps);
  if (options.three_phase) {
    phases_ = {{options.pct_start * total - 1, 0, 1},
               {2 * options.pct_start * total - 2, 1, 0},
               {total - 1, 0, 2}};
  } else {
    phases_ = {{options.pct_start * total - 1, 0, 1}, {total - 1, 1, 2}};
  }
  if (options.cycle_momentum) {
    const Options& d = optimizer.defaults();
    momentum_key_ = d.count("momentum") ? "momentum" : d.count("beta1") ? "beta1" : "";
    EMBER_CHECK(!momentum_key_.empty(),
                "[optim.OneCycleLR] {} has no momentum or beta1 to cycle (pass "
                "cycle_momentum=false)",
                optimizer.name());
    for (auto* v : {&options_.base_momentum, &options_.max_momentum}) {
      const char* what = v == &options_.base_momentum ? "base_momentum" : "max_momentum";
      if (v->size() == 1) v->assign(groups.size(), v->front());
      EMBER_CHECK(v->size() == groups.size(),
                  "[optim.OneCycleLR] got {} {} values for {} param groups", v->size(), what,
                  groups.size());
    }
    for (size_t i = 0; i < groups.size(); ++i)
      groups[i].set(momentum_key_, options_.max_momentum[i]);
  }
  init();
}

std::pair<const OneCycleLR::Phase*, double> OneCycleLR::locate(int64_t step) const {
  const double s = static_cast<double>(step);
  double start = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& p = phases_[i];
    if (s <= p.end_step || i + 1 == phases_.size()) {
      return {&p, p.end_step > start ? (s - start) / (p.end_step - start) : 0.0};
    }
    start = p.end_step;
  }
  EMBER_ASSERT(false);
  return {nullptr, 0.0};
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (options_.anneal_strategy == AnnealStrategy::Linear) return (end - start) * pct + start;
  return end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1);
}

void OneCycleLR::schedule_other_hyperparameters() {
  if (momentum_key_.empty()) return;
  const auto [phase, pct] = locate(last_epoch());
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    // Endpoint 1 (the peak lr) has the lowest momentum; 0 and 2 the highest.
    auto momentum = [&](int at) {
      return at == 1 ? options_.base_momentum[i] : options_.max_momentum[i];
    };
    groups[i].set(momentum_key_, anneal(momentum(phase->start), momentum(phase->end), pct));
  }
}

std::vector<double> OneCycleLR::compute_lr() const {
  const int64_t step = last_epoch();
  EMBER_CHECK(step <= total_steps_,
              "[optim.OneCycleLR] tried to step {} times; the schedule has total_steps = {}", step,
              total_steps_);
  // Note [OneCycleLR phases]: as in PyTorch, phase one ends at step pct_start * total - 1
  // (a float), the last phase at total - 1 (with three_phase, a middle phase back down to
  // initial_lr ends at 2 * pct_start * total - 2); a step past the last phase end stays in it.
  // Each phase goes from one endpoint to another: initial_lr, max_lr or min_lr, and for the
  // momentum max_momentum, base_momentum or max_momentum.
  const auto [phase, pct] = locate(step);
  std::vector<double> lrs;
  for (size_t i = 0; i < max_lrs_.size(); ++i) {
    const double initial = base_lrs_[i];
    const double endpoints[] = {initial, max_lrs_[i], initial / options_.final_div_factor};
    lrs.push_back(anneal(endpoints[phase->start], endpoints[phase->end], pct));
  }
  return lrs;
}

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, PlateauOptions options)
    : optimizer_(optimizer), options_(options) {
  EMBER_CHECK(options.factor < 1 && options.factor >= 0,
              "[optim.ReduceLROnPlateau] invalid factor: {} (must be in [0, 1))", options.factor);
  EMBER_CHECK(options.patience >= 0,
              "[optim.ReduceLROnPlateau] invalid patience: {} (must be >= 0)", options.patience);
  EMBER_CHECK(options.cooldown >= 0,
              "[optim.ReduceLROnPlateau] invalid cooldown: {} (must be >= 0)", options.cooldown);
  EMBER_CHECK(options.threshold >= 0,
              "[optim.ReduceLROnPlateau] invalid threshold: {} (must be >= 0)", options.threshold);
  EMBER_CHECK(options.min_lr >= 0, "[optim.ReduceLROnPlateau] invalid min_lr: {} (must be >= 0)",
              options.min_lr);
  best_ = options.mode == PlateauMode::Min ? std::numeric_limits<double>::infinity()
                                           : -std::numeric_limits<double>::infinity();
  for (const auto& g : optimizer_.param_groups()) last_lr_.push_back(g.lr());
}

bool ReduceLROnPlateau::is_better(double a) const {
  const double t = options_.threshold;
  const bool rel = options_.threshold_mode == ThresholdMode::Rel;
  if (options_.mode == PlateauMode::Min) return a < (rel ? best_ * (1 - t) : best_ - t);
  return a > (rel ? best_ * (1 + t) : best_ + t);
}

void ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;
  }
  if (num_bad_epochs_ > options_.patience) {
    for (auto& g : optimizer_.param_groups()) {
      const double old_lr = g.lr();
      const double new_lr = std::max(old_lr * options_.factor, options_.min_lr);
      if (old_lr - new_lr > options_.eps) g.set_lr(new_lr);
    }
    cooldown_counter_ = options_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const auto& g : optimizer_.param_groups()) last_lr_.push_back(g.lr());
}

StateDict ReduceLROnPlateau::state_dict() const {
  return {
      {"best", full({}, best_, TensorOptions(DType::Float64, Device::cpu()))},
      {"num_bad_epochs", full({}, num_bad_epochs_, TensorOptions(DType::Int64, Device::cpu()))},
      {"cooldown_counter", full({}, cooldown_counter_, TensorOptions(DType::Int64, Device::cpu()))},
      {"last_epoch", full({}, last_epoch_, TensorOptions(DType::Int64, Device::cpu()))},
      {"last_lr", f64_vector(last_lr_)}};
}

void ReduceLROnPlateau::load_state_dict(const StateDict& dict) {
  const char* op = "optim.ReduceLROnPlateau";
  std::vector<double> last = read_f64_vector(dict, "last_lr", optimizer_.param_groups().size(), op);
  const double best = read_scalar(dict, "best", op);
  const double bad = read_scalar(dict, "num_bad_epochs", op);
  const double cooldown = read_scalar(dict, "cooldown_counter", op);
  const double epoch = read_scalar(dict, "last_epoch", op);
  EMBER_CHECK(bad >= 0 && cooldown >= 0 && epoch >= 0,
              "[{}] load_state_dict: negative counters (num_bad_epochs {}, cooldown_counter {}, "
              "last_epoch {})",
              op, bad, cooldown, epoch);
  best_ = best;
  num_bad_epochs_ = static_cast<int64_t>(bad);
  cooldown_counter_ = static_cast<int64_t>(cooldown);
  last_epoch_ = static_cast<int64_t>(epoch);
  last_lr_ = std::move(last);
}

}  // namespace ember::optim
