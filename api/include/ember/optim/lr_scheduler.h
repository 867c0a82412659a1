// Learning-rate schedulers: they set the lr of every param group of an optimizer.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/optim/optimizer.h"
#include "ember/state_dict.h"

namespace ember::optim {

// Note [One owner of a learning rate]
// A learning rate lives in its optimizer's param group and nowhere else; the schedulers read and
// set it there through HyperparameterGroups at each step, keeping no copy of it. Every schedule
// (the fifteen of torch.optim.lr_scheduler) is written once, here, for the C++ API and for Python:
// ember.optim.lr_scheduler's classes hold one of these and give it PyTorch's surface, and
// drive an optimizer written in Python through a HyperparameterGroups over its Python groups
// (api/python/src/optim.cpp), so the same code serves a built-in optimizer and a Python one, and
// an lr changed by hand between steps is seen (Note [Recursive schedules]). A schedule written in
// Python (a subclass defining get_lr) is a FunctionLR whose function calls it.

/** Base of epoch-driven schedulers: step() advances one epoch (or batch) and sets the lrs. */
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /** Advances by one and writes the new learning rates into the optimizer. */
  virtual void step();
  /** The learning rates set by the last step (one per param group). */
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  /** Steps taken; 0 right after construction, like PyTorch's last_epoch. */
  int64_t last_epoch() const { return last_epoch_; }
  /** Moves the schedule to `epoch` without setting any lr (PyTorch's writable last_epoch). */
  void set_last_epoch(int64_t epoch) { last_epoch_ = epoch; }
  /** The learning rates the schedule starts from (the groups' lrs when it was made). */
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  /** Replaces the learning rates the schedule starts from (one per group). */
  void set_base_lrs(std::vector<double> lrs);
  /** The groups being scheduled. */
  HyperparameterGroups& groups() const { return groups_; }
  /** Starts the schedule again at epoch 0 (SequentialLR at a milestone): sets the lrs of epoch 0
   *  from the closed form where the schedule has one, else from the current lrs. */
  virtual void restart();
  /** The schedule's position: "last_epoch" (int64), "base_lrs" and "last_lr" (float64, one per
   *  group), and what a subclass adds; the hyperparameters are the constructor's (Note
   *  [Scheduler states]). */
  virtual StateDict state_dict() const;
  /** Continues from a state_dict() of a scheduler over as many groups; leaves the optimizer's
   *  learning rates to the optimizer's own state. */
  virtual void load_state_dict(const StateDict& dict);

 protected:
  /** Attaches to `groups` (which must outlive the scheduler); subclasses then call init().
   *  `last_epoch` -1 starts a schedule; another value resumes one after that epoch, from the
   *  groups' "initial_lr" (PyTorch's resuming constructors). */
  explicit LRScheduler(HyperparameterGroups& groups, int64_t last_epoch = -1);
  /** Takes the initial step (last_epoch 0, or the one after the resumed epoch), as PyTorch's
   *  constructors do. */
  void init();
  /** The learning rates for the current last_epoch(), from the groups' current learning rates
   *  where the schedule is recursive (PyTorch's get_lr, Note [Recursive schedules]). */
  virtual std::vector<double> compute_lr() const = 0;
  /** The learning rates for last_epoch() from base_lrs alone (PyTorch's _get_closed_form_lr);
   *  compute_lr() where the schedule has no closed form. */
  virtual std::vector<double> closed_form_lr() const { return compute_lr(); }
  /** Sets hyperparameters other than the lr for the current last_epoch() after each step
   *  (OneCycleLR's and CyclicLR's momentum); nothing by default. */
  virtual void schedule_other_hyperparameters() {}
  /** Writes `lrs` into the groups, then the other hyperparameters; they become get_last_lr(). */
  void apply(std::vector<double> lrs);
  /** Records `lrs` as get_last_lr() without writing them (a composite whose part just set them). */
  void set_last_lr(std::vector<double> lrs) { last_lr_ = std::move(lrs); }
  /** The current lr of every group. */
  std::vector<double> current_lrs() const;
  /** The momentum hyperparameter of the groups ("momentum", or Adam's "beta1"), or an
   *  ember::Error naming `op` when they have neither. */
  std::string momentum_key(const char* op) const;
  /** `values` (one, or one per group) as one per group, or an ember::Error naming `op`, `what`. */
  std::vector<double> per_group(std::vector<double> values, const char* op, const char* what) const;

  /** The groups being scheduled. */
  HyperparameterGroups& groups_;
  /** The lr of each group at construction. */
  std::vector<double> base_lrs_;

 private:
  int64_t last_epoch_ = -1;
  std::vector<double> last_lr_;
};

/** A schedule given as a function of the scheduler: the lrs of last_epoch() (how a scheduler
 *  written in Python, defining get_lr, runs). Unlike the others it is not stepped by its
 *  constructor: the first step() takes epoch 0, so that the function may reach the scheduler's
 *  owner, made by then. */
class FunctionLR : public LRScheduler {
 public:
  /** The lrs each step sets. */
  using Function = std::function<std::vector<double>(const FunctionLR&)>;
  /** Runs `fn` at each step, from the first step() (epoch 0, or the one after `last_epoch`). */
  FunctionLR(HyperparameterGroups& groups, Function fn, int64_t last_epoch = -1);

 protected:
  /** fn(*this), checked to give one lr per group. */
  std::vector<double> compute_lr() const override;

 private:
  Function fn_;
};

/** Multiplies the lr by gamma every step_size epochs: base_lr * gamma^(epoch / step_size). */
class StepLR : public LRScheduler {
 public:
  /** Decays every `step_size` (> 0) epochs by `gamma`. */
  StepLR(HyperparameterGroups& groups, int64_t step_size, double gamma = 0.1,
         int64_t last_epoch = -1);

 protected:
  /** PyTorch's recurrence: multiply by gamma when the epoch is a positive multiple of step_size. */
  std::vector<double> compute_lr() const override;
  /** base_lr * gamma^(epoch / step_size). */
  std::vector<double> closed_form_lr() const override;

 private:
  int64_t step_size_;
  double gamma_;
};

/** Cosine annealing from base_lr to eta_min over T_max epochs (no restarts). */
class CosineAnnealingLR : public LRScheduler {
 public:
  /** Anneals over `T_max` (> 0) epochs down to `eta_min`. */
  CosineAnnealingLR(HyperparameterGroups& groups, int64_t T_max, double eta_min = 0.0,
                    int64_t last_epoch = -1);

 protected:
  /** PyTorch's recursive form, which follows an lr changed between steps: the current lr moved
   *  along the cosine, (1 + cos(pi e / T)) / (1 + cos(pi (e - 1) / T)) * (lr - eta_min) +
   *  eta_min; left alone the lrs are eta_min + (base_lr - eta_min) (1 + cos(pi e / T)) / 2. */
  std::vector<double> compute_lr() const override;
  /** eta_min + (base_lr - eta_min) (1 + cos(pi e / T_max)) / 2. */
  std::vector<double> closed_form_lr() const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

/** How OneCycleLR interpolates within a phase. */
enum class AnnealStrategy { Cos, Linear };

/** OneCycleLR options (torch.optim.lr_scheduler.OneCycleLR's defaults). */
struct OneCycleOptions {
  /** Fraction of the steps spent increasing the lr. */
  double pct_start = 0.3;
  /** Interpolation within each phase. */
  AnnealStrategy anneal_strategy = AnnealStrategy::Cos;
  /** Cycle the momentum (SGD's and RMSprop's "momentum", Adam's "beta1") inversely to the lr,
   *  between max_momentum and base_momentum. */
  bool cycle_momentum = true;
  /** The lowest momentum, reached with the peak lr: one value, or one per param group. */
  std::vector<double> base_momentum = {0.85};
  /** The highest momentum, at the start and the end: one value, or one per param group. */
  std::vector<double> max_momentum = {0.95};
  /** initial_lr = max_lr / div_factor. */
  double div_factor = 25.0;
  /** min_lr = initial_lr / final_div_factor. */
  double final_div_factor = 1e4;
  /** Three phases (up, back down to initial_lr, then to min_lr) instead of two. */
  bool three_phase = false;
};

/**
 * The 1cycle policy (Smith & Topin): lr rises from max_lr / div_factor to max_lr, then anneals
 * to initial_lr / final_div_factor over total_steps steps, while the momentum goes the other way
 * between max_momentum and base_momentum (Note [OneCycleLR phases]).
 */
class OneCycleLR : public LRScheduler {
 public:
  /** The same max_lr for every group. */
  OneCycleLR(HyperparameterGroups& groups, double max_lr, int64_t total_steps,
             OneCycleOptions options = {}, int64_t last_epoch = -1);
  /** One max_lr per param group. */
  OneCycleLR(HyperparameterGroups& groups, std::vector<double> max_lrs, int64_t total_steps,
             OneCycleOptions options = {}, int64_t last_epoch = -1);

 protected:
  /** The lr of step last_epoch() on the schedule (throws past total_steps). */
  std::vector<double> compute_lr() const override;
  /** The momentum of step last_epoch(), with cycle_momentum. */
  void schedule_other_hyperparameters() override;

 private:
  struct Phase {
    double end_step;
    int start, end;  // 0: initial_lr (max_momentum), 1: max_lr (base_momentum), 2: min_lr
  };
  /** The phase of `step` and how far into it it is. */
  std::pair<const Phase*, double> locate(int64_t step) const;
  /** Interpolates from `start` to `end` by `pct` with the anneal strategy. */
  double anneal(double start, double end, double pct) const;

  std::vector<double> max_lrs_;
  int64_t total_steps_;
  OneCycleOptions options_;
  std::vector<Phase> phases_;
  std::string momentum_key_;  // "momentum", "beta1", or empty when not cycling
};

/** Whether ReduceLROnPlateau looks for a decreasing or an increasing metric. */
enum class PlateauMode { Min, Max };
/** Whether ReduceLROnPlateau's threshold is relative to the best value or absolute. */
enum class ThresholdMode { Rel, Abs };

/** ReduceLROnPlateau options (PyTorch's defaults). */
struct PlateauOptions {
  /** Min: the metric should decrease (a loss); Max: increase (an accuracy). */
  PlateauMode mode = PlateauMode::Min;
  /** new_lr = lr * factor (must be < 1). */
  double factor = 0.1;
  /** Epochs without improvement tolerated before the lr is reduced. */
  int64_t patience = 10;
  /** Minimum change that counts as an improvement. */
  double threshold = 1e-4;
  /** Rel: best * (1 -/+ threshold); Abs: best -/+ threshold. */
  ThresholdMode threshold_mode = ThresholdMode::Rel;
  /** Epochs to wait after a reduction before counting bad epochs again. */
  int64_t cooldown = 0;
  /** Lower bound of the lr. */
  double min_lr = 0.0;
  /** Reductions smaller than this are skipped. */
  double eps = 1e-8;
};

/** Reduces the lr by `factor` when a metric has stopped improving for `patience` epochs. */
class ReduceLROnPlateau {
 public:
  /** Watches the metric passed to step(); `groups` must outlive the scheduler. */
  explicit ReduceLROnPlateau(HyperparameterGroups& groups, PlateauOptions options = {});

  /** Records this epoch's metric and reduces the lrs if it has plateaued. */
  void step(double metric);
  /** The learning rates after the last step (one per param group). */
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  /** The best metric seen so far. */
  double best() const { return best_; }
  /** Consecutive epochs without improvement. */
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  /** "best", "num_bad_epochs", "cooldown_counter", "last_epoch" and "last_lr". */
  StateDict state_dict() const;
  /** Continues from a state_dict() of a scheduler over as many groups. */
  void load_state_dict(const StateDict& dict);

 private:
  bool is_better(double a) const;

  HyperparameterGroups& groups_;
  PlateauOptions options_;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
};

/** A function of the epoch, one per param group (LambdaLR, MultiplicativeLR). */
using LrLambda = std::function<double(int64_t)>;

/** lr = base_lr * lr_lambda(epoch), one function for every group or one per group. */
class LambdaLR : public LRScheduler {
 public:
  /** One function, or one per group. */
  LambdaLR(HyperparameterGroups& groups, std::vector<LrLambda> lr_lambdas, int64_t last_epoch = -1);

 protected:
  /** base_lr * lr_lambda(epoch). */
  std::vector<double> compute_lr() const override;
  /** Checks and keeps the functions, one per group; called before init(). */
  LambdaLR(HyperparameterGroups& groups, std::vector<LrLambda> lr_lambdas, int64_t last_epoch,
           const char* op);

  /** One function per group. */
  std::vector<LrLambda> lr_lambdas_;
};

/** lr = the previous lr * lr_lambda(epoch), from epoch 1. */
class MultiplicativeLR : public LambdaLR {
 public:
  /** One function, or one per group. */
  MultiplicativeLR(HyperparameterGroups& groups, std::vector<LrLambda> lr_lambdas,
                   int64_t last_epoch = -1);

 protected:
  /** lr * lr_lambda(epoch) after epoch 0. */
  std::vector<double> compute_lr() const override;
};

/** Multiplies the lr by gamma at each milestone epoch (a milestone listed twice, twice). */
class MultiStepLR : public LRScheduler {
 public:
  /** Decays by `gamma` at each of `milestones`. */
  MultiStepLR(HyperparameterGroups& groups, std::vector<int64_t> milestones, double gamma = 0.1,
              int64_t last_epoch = -1);

 protected:
  /** lr * gamma^(times epoch is a milestone). */
  std::vector<double> compute_lr() const override;
  /** base_lr * gamma^(milestones <= epoch). */
  std::vector<double> closed_form_lr() const override;

 private:
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

/** Multiplies the lr by gamma every epoch: base_lr * gamma^epoch. */
class ExponentialLR : public LRScheduler {
 public:
  /** Decays by `gamma` each epoch. */
  ExponentialLR(HyperparameterGroups& groups, double gamma, int64_t last_epoch = -1);

 protected:
  /** lr * gamma after epoch 0. */
  std::vector<double> compute_lr() const override;
  /** base_lr * gamma^epoch. */
  std::vector<double> closed_form_lr() const override;

 private:
  double gamma_;
};

/** Scales the lr by a factor going linearly from start_factor to end_factor over total_iters
 *  epochs, then leaves it. */
class LinearLR : public LRScheduler {
 public:
  /** start_factor in (0, 1], end_factor in [0, 1]. */
  LinearLR(HyperparameterGroups& groups, double start_factor = 1.0 / 3, double end_factor = 1.0,
           int64_t total_iters = 5, int64_t last_epoch = -1);

 protected:
  /** PyTorch's recurrence: the ratio of consecutive factors. */
  std::vector<double> compute_lr() const override;
  /** base_lr * (start + (end - start) * min(epoch, total_iters) / total_iters). */
  std::vector<double> closed_form_lr() const override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

/** Scales the lr by factor for the first total_iters epochs. */
class ConstantLR : public LRScheduler {
 public:
  /** factor in [0, 1]. */
  ConstantLR(HyperparameterGroups& groups, double factor = 1.0 / 3, int64_t total_iters = 5,
             int64_t last_epoch = -1);

 protected:
  /** lr * factor at epoch 0, lr / factor at total_iters. */
  std::vector<double> compute_lr() const override;
  /** base_lr * (factor before total_iters, else 1). */
  std::vector<double> closed_form_lr() const override;

 private:
  double factor_;
  int64_t total_iters_;
};

/** Decays the lr by (1 - epoch / total_iters)^power over total_iters epochs, then leaves it. */
class PolynomialLR : public LRScheduler {
 public:
  /** Over `total_iters` (> 0) epochs with exponent `power`. */
  PolynomialLR(HyperparameterGroups& groups, int64_t total_iters = 5, double power = 1.0,
               int64_t last_epoch = -1);

 protected:
  /** The ratio of consecutive decay factors. */
  std::vector<double> compute_lr() const override;
  /** base_lr * (1 - min(epoch, total_iters) / total_iters)^power. */
  std::vector<double> closed_form_lr() const override;

 private:
  int64_t total_iters_;
  double power_;
};

/** Cosine annealing from the base lr to eta_min over T_i epochs, restarting at the base lr; T_i
 *  starts at T_0 and is multiplied by T_mult at each restart (SGDR, Loshchilov & Hutter). */
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  /** First cycle `T_0` (> 0) epochs, each next one `T_mult` (>= 1) times longer. */
  CosineAnnealingWarmRestarts(HyperparameterGroups& groups, int64_t T_0, int64_t T_mult = 1,
                              double eta_min = 0.0, int64_t last_epoch = -1);
  /** Advances one epoch. */
  void step() override;
  /** Jumps to `epoch` (>= 0; a fractional epoch anneals within its cycle). */
  void step(double epoch);
  /** The epochs since the last restart (fractional after step(epoch)). */
  double T_cur() const { return t_cur_; }
  /** The length of the current cycle. */
  int64_t T_i() const { return t_i_; }
  /** The base class's state and "T_cur", "T_i". */
  StateDict state_dict() const override;
  /** Continues from a state_dict(). */
  void load_state_dict(const StateDict& dict) override;

 protected:
  /** eta_min + (base_lr - eta_min) (1 + cos(pi T_cur / T_i)) / 2. */
  std::vector<double> compute_lr() const override;

 private:
  int64_t t_0_, t_i_, t_mult_;
  double eta_min_, t_cur_;
};

/** How CyclicLR scales the amplitude of each cycle. */
enum class CyclicMode { Triangular, Triangular2, ExpRange };

/** CyclicLR options (torch.optim.lr_scheduler.CyclicLR's defaults). */
struct CyclicOptions {
  /** Iterations of the rising half of a cycle. */
  int64_t step_size_up = 2000;
  /** Iterations of the falling half; step_size_up when not given. */
  std::optional<int64_t> step_size_down = std::nullopt;
  /** triangular: no scaling; triangular2: halved each cycle; exp_range: gamma^iteration. */
  CyclicMode mode = CyclicMode::Triangular;
  /** exp_range's base. */
  double gamma = 1.0;
  /** A custom scale of the cycle (or iteration) number, replacing the mode's. */
  std::function<double(double)> scale_fn = nullptr;
  /** Whether scale_fn takes the cycle number (true) or the iteration. */
  bool scale_by_cycle = true;
  /** Cycle the momentum (or Adam's beta1) inversely to the lr. */
  bool cycle_momentum = true;
  /** The lowest momentum, at the peak lr: one value, or one per group. */
  std::vector<double> base_momentum = {0.8};
  /** The highest momentum, at the base lr: one value, or one per group. */
  std::vector<double> max_momentum = {0.9};
};

/** Cycles the lr between base_lr and max_lr (Smith, "Cyclical Learning Rates"), each cycle
 *  step_size_up iterations up and step_size_down down, and the momentum the other way. */
class CyclicLR : public LRScheduler {
 public:
  /** base_lr and max_lr: one value, or one per group; the groups' lrs start at base_lr. */
  CyclicLR(HyperparameterGroups& groups, std::vector<double> base_lr, std::vector<double> max_lr,
           CyclicOptions options = {}, int64_t last_epoch = -1);
  /** The amplitude's scale at cycle (or iteration) x. */
  double scale(double x) const;

 protected:
  /** base + (max - base) * triangle(epoch) * scale. */
  std::vector<double> compute_lr() const override;
  /** The momentum of the same point of the cycle. */
  void schedule_other_hyperparameters() override;

 private:
  /** Where last_epoch() is on its cycle's triangle (0 at base_lr, 1 at max_lr), and the scale. */
  std::pair<double, double> position() const;

  std::vector<double> max_lrs_;
  CyclicOptions options_;
  double total_size_, step_ratio_;
  std::string momentum_key_;
};

/** Runs schedulers of one optimizer one after another, switching at the milestone epochs; each
 *  starts at its epoch 0 when its turn comes. */
class SequentialLR : public LRScheduler {
 public:
  /** `schedulers` (which must outlive this one) and one milestone fewer; every scheduler must
   *  drive `groups`. The lrs go back to the groups' "initial_lr" (or base lrs) first. */
  SequentialLR(HyperparameterGroups& groups, std::vector<LRScheduler*> schedulers,
               std::vector<int64_t> milestones, int64_t last_epoch = -1);
  /** Steps the scheduler whose turn it is, restarting it at its milestone. */
  void step() override;
  /** Starts over with the first scheduler. */
  void restart() override;

 protected:
  /** Not used: the schedulers set the lrs. */
  std::vector<double> compute_lr() const override { return current_lrs(); }

 private:
  std::vector<LRScheduler*> schedulers_;
  std::vector<int64_t> milestones_;
};

/** Steps every scheduler of a list at each step, so that their factors compose. */
class ChainedScheduler : public LRScheduler {
 public:
  /** `schedulers` (which must outlive this one), all driving `groups`. */
  ChainedScheduler(HyperparameterGroups& groups, std::vector<LRScheduler*> schedulers);
  /** Steps each scheduler in turn. */
  void step() override;
  /** Restarts each scheduler in turn. */
  void restart() override;

 protected:
  /** Not used: the schedulers set the lrs. */
  std::vector<double> compute_lr() const override { return current_lrs(); }

 private:
  std::vector<LRScheduler*> schedulers_;
};

}  // namespace ember::optim
