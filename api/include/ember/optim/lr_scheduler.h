// Learning-rate schedulers: they set the lr of every param group of an optimizer.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ember/optim/optimizer.h"
#include "ember/state_dict.h"

namespace ember::optim {

/** Base of epoch-driven schedulers: step() advances one epoch (or batch) and sets the lrs. */
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /** Advances by one and writes the new learning rates into the optimizer. */
  void step();
  /** The learning rates set by the last step (one per param group). */
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  /** Steps taken; 0 right after construction, like PyTorch's last_epoch. */
  int64_t last_epoch() const { return last_epoch_; }
  /** The learning rates of the groups when the scheduler was made. */
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  /** The schedule's position: "last_epoch" (int64), "base_lrs" and "last_lr" (float64, one per
   *  group); the hyperparameters are the constructor's (Note [Scheduler states]). */
  StateDict state_dict() const;
  /** Continues from a state_dict() of a scheduler over as many groups; leaves the optimizer's
   *  learning rates to the optimizer's own state. */
  void load_state_dict(const StateDict& dict);

 protected:
  /** Attaches to `optimizer` (which must outlive the scheduler); subclasses then call init(). */
  explicit LRScheduler(Optimizer& optimizer);
  /** Takes the initial step (last_epoch 0), as PyTorch's constructors do. */
  void init();
  /** The learning rates for the current last_epoch(), from the groups' current learning rates
   *  where the schedule is recursive (PyTorch's get_lr, Note [Recursive schedules]). */
  virtual std::vector<double> compute_lr() const = 0;
  /** Sets hyperparameters other than the lr for the current last_epoch() after each step
   *  (OneCycleLR's momentum); nothing by default. */
  virtual void schedule_other_hyperparameters() {}

  /** The optimizer being scheduled. */
  Optimizer& optimizer_;
  /** The lr of each group at construction. */
  std::vector<double> base_lrs_;

 private:
  int64_t last_epoch_ = -1;
  std::vector<double> last_lr_;
};

/** Multiplies the lr by gamma every step_size epochs: base_lr * gamma^(epoch / step_size). */
class StepLR : public LRScheduler {
 public:
  /** Decays every `step_size` (> 0) epochs by `gamma`. */
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  /** PyTorch's recurrence: multiply by gamma when the epoch is a positive multiple of step_size. */
  std::vector<double> compute_lr() const override;

 private:
  int64_t step_size_;
  double gamma_;
};

/** Cosine annealing from base_lr to eta_min over T_max epochs (no restarts). */
class CosineAnnealingLR : public LRScheduler {
 public:
  /** Anneals over `T_max` (> 0) epochs down to `eta_min`. */
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);

 protected:
  /** PyTorch's recursive form, which follows an lr changed between steps: the current lr moved
   *  along the cosine, (1 + cos(pi e / T)) / (1 + cos(pi (e - 1) / T)) * (lr - eta_min) +
   *  eta_min; left alone the lrs are eta_min + (base_lr - eta_min) (1 + cos(pi e / T)) / 2. */
  std::vector<double> compute_lr() const override;

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
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps,
             OneCycleOptions options = {});
  /** One max_lr per param group. */
  OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs, int64_t total_steps,
             OneCycleOptions options = {});

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
  /** Watches the metric passed to step(); `optimizer` must outlive the scheduler. */
  explicit ReduceLROnPlateau(Optimizer& optimizer, PlateauOptions options = {});

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

  Optimizer& optimizer_;
  PlateauOptions options_;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace ember::optim
