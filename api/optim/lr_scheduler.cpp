#include "ember/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "ember/ops/factory.h"
#include "ember/util/error.h"

namespace ember::optim {

namespace {

/** Every lr of `lrs` times `factor`: the step of a recursive schedule, or base_lrs_ scaled. */
std::vector<double> times(std::vector<double> lrs, double factor) {
  for (double& lr : lrs) lr *= factor;
  return lrs;
}

/** The lr of every group of `groups`. */
std::vector<double> lrs_of(const HyperparameterGroups& groups) {
  std::vector<double> lrs;
  for (size_t i = 0; i < groups.num_groups(); ++i) lrs.push_back(groups.hyperparameter(i, "lr"));
  return lrs;
}

}  // namespace

LRScheduler::LRScheduler(HyperparameterGroups& groups, int64_t last_epoch)
    : groups_(groups), last_epoch_(last_epoch) {
  EMBER_CHECK(last_epoch >= -1, "[optim.LRScheduler] invalid last_epoch: {} (must be >= -1)",
              last_epoch);
  // PyTorch's: the first scheduler of an optimizer records each group's lr as 'initial_lr', and
  // every schedule starts from it, also one made after another scheduler changed the lrs (the
  // parts of a SequentialLR). Resuming needs it recorded.
  for (size_t i = 0; i < groups_.num_groups(); ++i) {
    const bool recorded = groups_.group_has(i, "initial_lr");
    EMBER_CHECK(recorded || last_epoch == -1,
                "[optim.LRScheduler] resuming at last_epoch={} needs 'initial_lr' in param group "
                "{} (set it to the lr the schedule started from)",
                last_epoch, i);
    if (!recorded) groups_.set_hyperparameter(i, "initial_lr", groups_.hyperparameter(i, "lr"));
    base_lrs_.push_back(groups_.hyperparameter(i, "initial_lr"));
  }
}

void LRScheduler::init() {
  step();
}

void LRScheduler::set_base_lrs(std::vector<double> lrs) {
  EMBER_CHECK(lrs.size() == groups_.num_groups(),
              "[optim.LRScheduler] got {} base lrs for {} param groups", lrs.size(),
              groups_.num_groups());
  base_lrs_ = std::move(lrs);
}

std::vector<double> LRScheduler::current_lrs() const {
  return lrs_of(groups_);
}

std::string LRScheduler::momentum_key(const char* op) const {
  if (groups_.has_hyperparameter("momentum")) return "momentum";
  if (groups_.has_hyperparameter("beta1")) return "beta1";
  throw ValueError(
      fmt::format("[{}] {} has no momentum or beta1 to cycle (pass cycle_momentum=false)", op,
                  groups_.optimizer_name()));
}

std::vector<double> LRScheduler::per_group(std::vector<double> values, const char* op,
                                           const char* what) const {
  const size_t n = groups_.num_groups();
  if (values.size() == 1) values.assign(n, values.front());
  EMBER_CHECK(values.size() == n, "[{}] got {} {} values for {} param groups", op, values.size(),
              what, n);
  return values;
}

// Note [Recursive schedules]
// As PyTorch's get_lr, a scheduler whose PyTorch form is recursive (StepLR, CosineAnnealingLR,
// MultiStepLR, ExponentialLR, LinearLR, ConstantLR, PolynomialLR, MultiplicativeLR) computes the
// next lr from the lr the group holds now, not from base_lrs alone: an lr changed by hand between
// steps, or by another scheduler stepping the same optimizer (a warm-up chained before a cosine),
// carries on along the schedule instead of being overwritten. Left alone, the recursion gives the
// closed form's values (closed_form_lr, PyTorch's _get_closed_form_lr), which a restart uses.
// OneCycleLR, CyclicLR, LambdaLR and CosineAnnealingWarmRestarts are closed forms in PyTorch too,
// and overwrite such a change.
void LRScheduler::step() {
  ++last_epoch_;
  apply(compute_lr());
}

void LRScheduler::restart() {
  last_epoch_ = 0;
  apply(closed_form_lr());
}

void LRScheduler::apply(std::vector<double> lrs) {
  EMBER_CHECK(lrs.size() == groups_.num_groups(),
              "[optim.LRScheduler] the schedule gave {} lrs for {} param groups", lrs.size(),
              groups_.num_groups());
  for (size_t i = 0; i < lrs.size(); ++i) groups_.set_hyperparameter(i, "lr", lrs[i]);
  schedule_other_hyperparameters();
  last_lr_ = std::move(lrs);
}

FunctionLR::FunctionLR(HyperparameterGroups& groups, Function fn, int64_t last_epoch)
    : LRScheduler(groups, last_epoch), fn_(std::move(fn)) {
  EMBER_CHECK(static_cast<bool>(fn_), "[optim.LRScheduler] no schedule function given");
}

std::vector<double> FunctionLR::compute_lr() const {
  return fn_(*this);
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
  const size_t n = groups_.num_groups();
  std::vector<double> base = read_f64_vector(dict, "base_lrs", n, op);
  std::vector<double> last = read_f64_vector(dict, "last_lr", n, op);
  const double epoch = read_scalar(dict, "last_epoch", op);
  EMBER_CHECK(epoch >= 0 && epoch == std::floor(epoch),
              "[{}] load_state_dict: last_epoch must be a non-negative integer: got {}", op, epoch);
  last_epoch_ = static_cast<int64_t>(epoch);
  base_lrs_ = std::move(base);
  last_lr_ = std::move(last);
}

StepLR::StepLR(HyperparameterGroups& groups, int64_t step_size, double gamma, int64_t last_epoch)
    : LRScheduler(groups, last_epoch), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK(step_size > 0, "[optim.StepLR] invalid step_size: {} (must be > 0)", step_size);
  init();
}

std::vector<double> StepLR::compute_lr() const {
  const bool decay = last_epoch() > 0 && last_epoch() % step_size_ == 0;
  return times(current_lrs(), decay ? gamma_ : 1.0);
}

std::vector<double> StepLR::closed_form_lr() const {
  return times(base_lrs_, std::pow(gamma_, static_cast<double>(last_epoch() / step_size_)));
}

CosineAnnealingLR::CosineAnnealingLR(HyperparameterGroups& groups, int64_t T_max, double eta_min,
                                     int64_t last_epoch)
    : LRScheduler(groups, last_epoch), t_max_(T_max), eta_min_(eta_min) {
  EMBER_CHECK(T_max > 0, "[optim.CosineAnnealingLR] invalid T_max: {} (must be > 0)", T_max);
  init();
}

std::vector<double> CosineAnnealingLR::compute_lr() const {
  const int64_t e = last_epoch();
  const double pi = std::numbers::pi, t = static_cast<double>(t_max_);
  std::vector<double> lrs = current_lrs();
  for (size_t i = 0; i < lrs.size(); ++i) {
    const double lr = lrs[i];
    if (e == 0) continue;
    if ((e - 1 - t_max_) % (2 * t_max_) == 0) {
      // The step out of a trough, where the ratio below would divide by 1 + cos(pi) = 0.
      lrs[i] = lr + (base_lrs_[i] - eta_min_) * (1 - std::cos(pi / t)) / 2;
    } else {
      const double ratio = (1 + std::cos(pi * static_cast<double>(e) / t)) /
                           (1 + std::cos(pi * static_cast<double>(e - 1) / t));
      lrs[i] = ratio * (lr - eta_min_) + eta_min_;
    }
  }
  return lrs;
}

std::vector<double> CosineAnnealingLR::closed_form_lr() const {
  std::vector<double> lrs;
  const double c =
      std::cos(std::numbers::pi * static_cast<double>(last_epoch()) / static_cast<double>(t_max_));
  for (double base : base_lrs_) lrs.push_back(eta_min_ + (base - eta_min_) * (1 + c) / 2);
  return lrs;
}

OneCycleLR::OneCycleLR(HyperparameterGroups& groups, double max_lr, int64_t total_steps,
                       OneCycleOptions options, int64_t last_epoch)
    : OneCycleLR(groups, std::vector<double>(groups.num_groups(), max_lr), total_steps,
                 std::move(options), last_epoch) {}

OneCycleLR::OneCycleLR(HyperparameterGroups& groups, std::vector<double> max_lrs,
                       int64_t total_steps, OneCycleOptions options, int64_t last_epoch)
    : LRScheduler(groups, last_epoch),
      max_lrs_(std::move(max_lrs)),
      total_steps_(total_steps),
      options_(std::move(options)) {
  const char* op = "optim.OneCycleLR";
  EMBER_CHECK(total_steps > 0, "[{}] invalid total_steps: {} (must be > 0)", op, total_steps);
  EMBER_CHECK(options_.pct_start >= 0 && options_.pct_start <= 1,
              "[{}] invalid pct_start: {} (must be in [0, 1])", op, options_.pct_start);
  EMBER_CHECK(options_.div_factor > 0 && options_.final_div_factor > 0,
              "[{}] div_factor and final_div_factor must be > 0, got {} and {}", op,
              options_.div_factor, options_.final_div_factor);
  EMBER_CHECK(max_lrs_.size() == groups_.num_groups(),
              "[{}] got {} max_lr values for {} param groups", op, max_lrs_.size(),
              groups_.num_groups());
  for (double m : max_lrs_) {
    EMBER_CHECK(m >= 0, "[{}] invalid max_lr: {} (must be >= 0)", op, m);
  }
  // The schedule starts at max_lr / div_factor whatever lr the groups had; PyTorch records it as
  // the 'initial_lr'.
  for (size_t i = 0; i < max_lrs_.size(); ++i) {
    base_lrs_[i] = max_lrs_[i] / options_.div_factor;
    if (last_epoch == -1) groups_.set_hyperparameter(i, "initial_lr", base_lrs_[i]);
  }
  const double total = static_cast<double>(total_steps);
  if (options_.three_phase) {
    phases_ = {{options_.pct_start * total - 1, 0, 1},
               {2 * options_.pct_start * total - 2, 1, 0},
               {total - 1, 0, 2}};
  } else {
    phases_ = {{options_.pct_start * total - 1, 0, 1}, {total - 1, 1, 2}};
  }
  if (options_.cycle_momentum) {
    momentum_key_ = momentum_key(op);
    options_.base_momentum = per_group(std::move(options_.base_momentum), op, "base_momentum");
    options_.max_momentum = per_group(std::move(options_.max_momentum), op, "max_momentum");
    if (last_epoch == -1) {
      for (size_t i = 0; i < groups_.num_groups(); ++i) {
        groups_.set_hyperparameter(i, momentum_key_, options_.max_momentum[i]);
      }
    }
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
  for (size_t i = 0; i < groups_.num_groups(); ++i) {
    // Endpoint 1 (the peak lr) has the lowest momentum; 0 and 2 the highest.
    auto momentum = [&](int at) {
      return at == 1 ? options_.base_momentum[i] : options_.max_momentum[i];
    };
    groups_.set_hyperparameter(i, momentum_key_,
                               anneal(momentum(phase->start), momentum(phase->end), pct));
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

ReduceLROnPlateau::ReduceLROnPlateau(HyperparameterGroups& groups, PlateauOptions options)
    : groups_(groups), options_(options) {
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
  last_lr_ = lrs_of(groups_);
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
    for (size_t i = 0; i < groups_.num_groups(); ++i) {
      const double old_lr = groups_.hyperparameter(i, "lr");
      const double new_lr = std::max(old_lr * options_.factor, options_.min_lr);
      if (old_lr - new_lr > options_.eps) groups_.set_hyperparameter(i, "lr", new_lr);
    }
    cooldown_counter_ = options_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_ = lrs_of(groups_);
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
  std::vector<double> last = read_f64_vector(dict, "last_lr", groups_.num_groups(), op);
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

LambdaLR::LambdaLR(HyperparameterGroups& groups, std::vector<LrLambda> lr_lambdas,
                   int64_t last_epoch)
    : LambdaLR(groups, std::move(lr_lambdas), last_epoch, "optim.LambdaLR") {
  init();
}

LambdaLR::LambdaLR(HyperparameterGroups& groups, std::vector<LrLambda> lr_lambdas,
                   int64_t last_epoch, const char* op)
    : LRScheduler(groups, last_epoch), lr_lambdas_(std::move(lr_lambdas)) {
  const size_t n = groups_.num_groups();
  if (lr_lambdas_.size() == 1) lr_lambdas_.assign(n, lr_lambdas_.front());
  EMBER_CHECK(lr_lambdas_.size() == n, "[{}] expected {} lr_lambdas (one per param group), got {}",
              op, n, lr_lambdas_.size());
  for (const LrLambda& fn : lr_lambdas_) {
    EMBER_CHECK(static_cast<bool>(fn), "[{}] an lr_lambda is empty", op);
  }
}

std::vector<double> LambdaLR::compute_lr() const {
  std::vector<double> lrs;
  for (size_t i = 0; i < base_lrs_.size(); ++i) {
    lrs.push_back(base_lrs_[i] * lr_lambdas_[i](last_epoch()));
  }
  return lrs;
}

MultiplicativeLR::MultiplicativeLR(HyperparameterGroups& groups, std::vector<LrLambda> lr_lambdas,
                                   int64_t last_epoch)
    : LambdaLR(groups, std::move(lr_lambdas), last_epoch, "optim.MultiplicativeLR") {
  init();
}

std::vector<double> MultiplicativeLR::compute_lr() const {
  std::vector<double> lrs = current_lrs();
  if (last_epoch() > 0) {
    for (size_t i = 0; i < lrs.size(); ++i) lrs[i] *= lr_lambdas_[i](last_epoch());
  }
  return lrs;
}

MultiStepLR::MultiStepLR(HyperparameterGroups& groups, std::vector<int64_t> milestones,
                         double gamma, int64_t last_epoch)
    : LRScheduler(groups, last_epoch), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  init();
}

std::vector<double> MultiStepLR::compute_lr() const {
  const auto hits = std::count(milestones_.begin(), milestones_.end(), last_epoch());
  return times(current_lrs(), std::pow(gamma_, static_cast<double>(hits)));
}

std::vector<double> MultiStepLR::closed_form_lr() const {
  const auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch()) - milestones_.begin();
  return times(base_lrs_, std::pow(gamma_, static_cast<double>(passed)));
}

ExponentialLR::ExponentialLR(HyperparameterGroups& groups, double gamma, int64_t last_epoch)
    : LRScheduler(groups, last_epoch), gamma_(gamma) {
  init();
}

std::vector<double> ExponentialLR::compute_lr() const {
  return times(current_lrs(), last_epoch() > 0 ? gamma_ : 1.0);
}

std::vector<double> ExponentialLR::closed_form_lr() const {
  return times(base_lrs_, std::pow(gamma_, static_cast<double>(last_epoch())));
}

LinearLR::LinearLR(HyperparameterGroups& groups, double start_factor, double end_factor,
                   int64_t total_iters, int64_t last_epoch)
    : LRScheduler(groups, last_epoch),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  EMBER_CHECK(start_factor > 0 && start_factor <= 1,
              "[optim.LinearLR] start_factor must be in (0, 1]: got {}", start_factor);
  EMBER_CHECK(end_factor >= 0 && end_factor <= 1,
              "[optim.LinearLR] end_factor must be in [0, 1]: got {}", end_factor);
  EMBER_CHECK(total_iters >= 0, "[optim.LinearLR] total_iters must be >= 0: got {}", total_iters);
  init();
}

std::vector<double> LinearLR::compute_lr() const {
  const int64_t e = last_epoch();
  if (e == 0) return times(current_lrs(), start_factor_);
  if (e > total_iters_) return current_lrs();
  const double delta = end_factor_ - start_factor_;
  return times(current_lrs(), 1.0 + delta / (static_cast<double>(total_iters_) * start_factor_ +
                                             static_cast<double>(e - 1) * delta));
}

std::vector<double> LinearLR::closed_form_lr() const {
  const double t = total_iters_ == 0 ? 1.0
                                     : static_cast<double>(std::min(total_iters_, last_epoch())) /
                                           static_cast<double>(total_iters_);
  return times(base_lrs_, start_factor_ + (end_factor_ - start_factor_) * t);
}

ConstantLR::ConstantLR(HyperparameterGroups& groups, double factor, int64_t total_iters,
                       int64_t last_epoch)
    : LRScheduler(groups, last_epoch), factor_(factor), total_iters_(total_iters) {
  EMBER_CHECK(factor >= 0 && factor <= 1, "[optim.ConstantLR] factor must be in [0, 1]: got {}",
              factor);
  EMBER_CHECK(total_iters >= 0, "[optim.ConstantLR] total_iters must be >= 0: got {}", total_iters);
  init();
}

std::vector<double> ConstantLR::compute_lr() const {
  const int64_t e = last_epoch();
  if (e == 0) return times(current_lrs(), factor_);
  if (e == total_iters_ && factor_ == 0) return closed_form_lr();  // lr / 0: the base lrs back
  return times(current_lrs(), e == total_iters_ ? 1.0 / factor_ : 1.0);
}

std::vector<double> ConstantLR::closed_form_lr() const {
  return times(base_lrs_, last_epoch() < total_iters_ ? factor_ : 1.0);
}

PolynomialLR::PolynomialLR(HyperparameterGroups& groups, int64_t total_iters, double power,
                           int64_t last_epoch)
    : LRScheduler(groups, last_epoch), total_iters_(total_iters), power_(power) {
  EMBER_CHECK(total_iters > 0, "[optim.PolynomialLR] total_iters must be > 0: got {}", total_iters);
  init();
}

std::vector<double> PolynomialLR::compute_lr() const {
  const int64_t e = last_epoch();
  if (e == 0 || e > total_iters_) return current_lrs();
  const double t = static_cast<double>(total_iters_);
  return times(current_lrs(),
               std::pow((1.0 - static_cast<double>(e) / t) / (1.0 - static_cast<double>(e - 1) / t),
                        power_));
}

std::vector<double> PolynomialLR::closed_form_lr() const {
  const double left = 1.0 - static_cast<double>(std::min(total_iters_, last_epoch())) /
                                static_cast<double>(total_iters_);
  return times(base_lrs_, std::pow(left, power_));
}

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(HyperparameterGroups& groups, int64_t T_0,
                                                         int64_t T_mult, double eta_min,
                                                         int64_t last_epoch)
    : LRScheduler(groups, last_epoch),
      t_0_(T_0),
      t_i_(T_0),
      t_mult_(T_mult),
      eta_min_(eta_min),
      t_cur_(static_cast<double>(last_epoch)) {
  EMBER_CHECK(T_0 > 0,
              "[optim.CosineAnnealingWarmRestarts] expected a positive integer T_0: got {}", T_0);
  EMBER_CHECK(T_mult >= 1,
              "[optim.CosineAnnealingWarmRestarts] expected an integer T_mult >= 1: got {}",
              T_mult);
  init();
}

std::vector<double> CosineAnnealingWarmRestarts::compute_lr() const {
  const double c = std::cos(std::numbers::pi * t_cur_ / static_cast<double>(t_i_));
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(eta_min_ + (base - eta_min_) * (1 + c) / 2);
  return lrs;
}

void CosineAnnealingWarmRestarts::step() {
  if (last_epoch() < 0) {
    step(0.0);
    return;
  }
  t_cur_ += 1;
  if (t_cur_ >= static_cast<double>(t_i_)) {
    t_cur_ -= static_cast<double>(t_i_);
    t_i_ *= t_mult_;
  }
  set_last_epoch(last_epoch() + 1);
  apply(compute_lr());
}

void CosineAnnealingWarmRestarts::step(double epoch) {
  EMBER_CHECK(epoch >= 0 && std::isfinite(epoch),
              "[optim.CosineAnnealingWarmRestarts] expected a non-negative epoch: got {}", epoch);
  const double t0 = static_cast<double>(t_0_);
  if (epoch >= t0) {
    if (t_mult_ == 1) {
      t_cur_ = std::fmod(epoch, t0);
    } else {
      const double m = static_cast<double>(t_mult_);
      const auto n = static_cast<int64_t>(std::log(epoch / t0 * (m - 1) + 1) / std::log(m));
      const double grown = std::pow(m, static_cast<double>(n));
      t_cur_ = epoch - t0 * (grown - 1) / (m - 1);
      t_i_ = t_0_ * static_cast<int64_t>(grown);
    }
  } else {
    t_i_ = t_0_;
    t_cur_ = epoch;
  }
  set_last_epoch(static_cast<int64_t>(std::floor(epoch)));
  apply(compute_lr());
}

StateDict CosineAnnealingWarmRestarts::state_dict() const {
  StateDict d = LRScheduler::state_dict();
  d["T_cur"] = full({}, t_cur_, TensorOptions(DType::Float64, Device::cpu()));
  d["T_i"] = full({}, t_i_, TensorOptions(DType::Int64, Device::cpu()));
  return d;
}

void CosineAnnealingWarmRestarts::load_state_dict(const StateDict& dict) {
  const char* op = "optim.CosineAnnealingWarmRestarts";
  const double t_cur = read_scalar(dict, "T_cur", op);
  const double t_i = read_scalar(dict, "T_i", op);
  EMBER_CHECK(t_i >= 1 && t_i == std::floor(t_i) && t_cur >= 0,
              "[{}] load_state_dict: T_i must be a positive integer and T_cur >= 0: got {} and {}",
              op, t_i, t_cur);
  LRScheduler::load_state_dict(dict);
  t_cur_ = t_cur;
  t_i_ = static_cast<int64_t>(t_i);
}

CyclicLR::CyclicLR(HyperparameterGroups& groups, std::vector<double> base_lr,
                   std::vector<double> max_lr, CyclicOptions options, int64_t last_epoch)
    : LRScheduler(groups, last_epoch), options_(std::move(options)) {
  const char* op = "optim.CyclicLR";
  base_lr = per_group(std::move(base_lr), op, "base_lr");
  max_lrs_ = per_group(std::move(max_lr), op, "max_lr");
  const int64_t up = options_.step_size_up;
  const int64_t down = options_.step_size_down.value_or(up);
  EMBER_CHECK(up > 0 && down > 0, "[{}] step_size_up and step_size_down must be > 0: got {} and {}",
              op, up, down);
  total_size_ = static_cast<double>(up + down);
  step_ratio_ = static_cast<double>(up) / total_size_;
  if (last_epoch == -1) {
    // PyTorch's: the lrs start at base_lr, which is also the 'initial_lr' recorded.
    for (size_t i = 0; i < base_lr.size(); ++i) {
      groups_.set_hyperparameter(i, "lr", base_lr[i]);
      groups_.set_hyperparameter(i, "initial_lr", base_lr[i]);
    }
  }
  base_lrs_ = std::move(base_lr);
  if (options_.cycle_momentum) {
    momentum_key_ = momentum_key(op);
    options_.base_momentum = per_group(std::move(options_.base_momentum), op, "base_momentum");
    options_.max_momentum = per_group(std::move(options_.max_momentum), op, "max_momentum");
    if (last_epoch == -1) {
      for (size_t i = 0; i < groups_.num_groups(); ++i) {
        groups_.set_hyperparameter(i, momentum_key_, options_.max_momentum[i]);
      }
    }
  }
  init();
}

double CyclicLR::scale(double x) const {
  if (options_.scale_fn) return options_.scale_fn(x);
  switch (options_.mode) {
    case CyclicMode::Triangular:
      return 1.0;
    case CyclicMode::Triangular2:
      return 1.0 / std::pow(2.0, x - 1);
    case CyclicMode::ExpRange:
      return std::pow(options_.gamma, x);
  }
  return 1.0;
}

std::pair<double, double> CyclicLR::position() const {
  const double e = static_cast<double>(last_epoch());
  const double cycle = std::floor(1 + e / total_size_);
  const double x = 1.0 + e / total_size_ - cycle;
  const double factor = x <= step_ratio_ ? x / step_ratio_ : (x - 1) / (step_ratio_ - 1);
  // The modes' own scales: triangular and triangular2 by cycle, exp_range by iteration.
  const bool by_cycle =
      options_.scale_fn ? options_.scale_by_cycle : options_.mode != CyclicMode::ExpRange;
  return {factor, scale(by_cycle ? cycle : e)};
}

std::vector<double> CyclicLR::compute_lr() const {
  const auto [factor, s] = position();
  std::vector<double> lrs;
  for (size_t i = 0; i < base_lrs_.size(); ++i) {
    lrs.push_back(base_lrs_[i] + (max_lrs_[i] - base_lrs_[i]) * factor * s);
  }
  return lrs;
}

void CyclicLR::schedule_other_hyperparameters() {
  if (momentum_key_.empty()) return;
  const auto [factor, s] = position();
  for (size_t i = 0; i < groups_.num_groups(); ++i) {
    const double top = options_.max_momentum[i], bottom = options_.base_momentum[i];
    groups_.set_hyperparameter(i, momentum_key_, top - (top - bottom) * factor * s);
  }
}

namespace {

/** Checks that every scheduler of a composite drives `groups`. */
void check_same_groups(const HyperparameterGroups& groups,
                       const std::vector<LRScheduler*>& schedulers, const char* op) {
  EMBER_CHECK(!schedulers.empty(), "[{}] expects at least one scheduler", op);
  for (size_t i = 0; i < schedulers.size(); ++i) {
    EMBER_CHECK(schedulers[i] != nullptr, "[{}] scheduler {} is null", op, i);
    EMBER_CHECK(schedulers[i]->groups().identity() == groups.identity(),
                "[{}] scheduler {} schedules another optimizer", op, i);
  }
}

}  // namespace

SequentialLR::SequentialLR(HyperparameterGroups& groups, std::vector<LRScheduler*> schedulers,
                           std::vector<int64_t> milestones, int64_t last_epoch)
    : LRScheduler(groups, -1),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  const char* op = "optim.SequentialLR";
  check_same_groups(groups_, schedulers_, op);
  EMBER_CHECK(milestones_.size() + 1 == schedulers_.size(),
              "[{}] expects {} milestones for {} schedulers, got {}", op, schedulers_.size() - 1,
              schedulers_.size(), milestones_.size());
  // PyTorch's SequentialLR sets the lrs back to where the schedule starts (base_lrs_: the
  // groups' 'initial_lr'), then starts the first.
  set_last_epoch(last_epoch + 1);
  for (size_t i = 0; i < base_lrs_.size(); ++i) groups_.set_hyperparameter(i, "lr", base_lrs_[i]);
  schedulers_.front()->restart();
  set_last_lr(schedulers_.front()->get_last_lr());
}

void SequentialLR::step() {
  set_last_epoch(last_epoch() + 1);
  const auto index = static_cast<size_t>(
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch()) - milestones_.begin());
  LRScheduler* s = schedulers_[index];
  if (index > 0 && milestones_[index - 1] == last_epoch()) {
    s->restart();
  } else {
    s->step();
  }
  set_last_lr(s->get_last_lr());
}

void SequentialLR::restart() {
  set_last_epoch(0);
  schedulers_.front()->restart();
  set_last_lr(schedulers_.front()->get_last_lr());
}

ChainedScheduler::ChainedScheduler(HyperparameterGroups& groups,
                                   std::vector<LRScheduler*> schedulers)
    : LRScheduler(groups, -1), schedulers_(std::move(schedulers)) {
  check_same_groups(groups_, schedulers_, "optim.ChainedScheduler");
  set_last_epoch(0);
  set_last_lr(current_lrs());
}

void ChainedScheduler::step() {
  for (LRScheduler* s : schedulers_) s->step();
  set_last_epoch(last_epoch() + 1);
  set_last_lr(current_lrs());
}

void ChainedScheduler::restart() {
  for (LRScheduler* s : schedulers_) s->restart();
  set_last_epoch(0);
  set_last_lr(current_lrs());
}

}  // namespace ember::optim
