// L-BFGS: a quasi-Newton method that re-evaluates the model through a closure, with an optional
// strong-Wolfe line search (torch.optim.LBFGS).
#pragma once

#include <functional>
#include <string>

#include "ember/optim/optimizer.h"

namespace ember::optim {

/** L-BFGS hyperparameters (torch.optim.LBFGS's defaults). */
struct LBFGSOptions {
  /** Scales the first step length (1 / |g|_1 on the first iteration, lr after). */
  double lr = 1;
  /** Iterations per step(). */
  int64_t max_iter = 20;
  /** Closure evaluations per step(); 0 means max_iter * 5 / 4, as PyTorch's None. */
  int64_t max_eval = 0;
  /** Stops when every gradient coordinate is at most this in magnitude. */
  double tolerance_grad = 1e-7;
  /** Stops when the step or the change of the loss is below this. */
  double tolerance_change = 1e-9;
  /** Curvature pairs kept. */
  int64_t history_size = 100;
  /** "" (a fixed step of lr) or "strong_wolfe" (a line search on the strong Wolfe conditions). */
  std::string line_search_fn;
};

/** L-BFGS (Nocedal and Wright, Algorithms 7.4 and 7.5) with PyTorch's stopping rules; one
 *  parameter group; its state is kept on the group's first parameter. */
class LBFGS : public Optimizer {
 public:
  /** The optimizer over `params`. */
  explicit LBFGS(std::vector<Tensor> params, LBFGSOptions options = {});
  /** The optimizer over one group (as every optimizer's constructor takes); more is an error. */
  explicit LBFGS(std::vector<ParamGroup> groups, LBFGSOptions defaults = {});

  /** Up to max_iter iterations, each calling `closure` (which zeroes the gradients, computes the
   *  loss, calls backward and returns the loss) with gradients enabled; returns the first loss. */
  Tensor step(const std::function<Tensor()>& closure);
  /** Throws: L-BFGS re-evaluates the model, so it needs step(closure). */
  void step() override;
  /** The hyperparameters as a typed struct. */
  static LBFGSOptions options_of(const ParamGroup& group);
  /** The hyperparameters as a name -> value map (line_search_fn as 0 or 1 "strong_wolfe"). */
  static Options to_map(const LBFGSOptions& options);

 protected:
  /** Checks the hyperparameters. */
  void validate(const ParamGroup& group) const override;
  /** The flat vectors, the stacked history and the scalars of the state, checked by shape. */
  Tensor load_buffer(size_t buffer, const Tensor& value, const Tensor& param,
                     const std::string& key, size_t index) const override;
};

}  // namespace ember::optim
