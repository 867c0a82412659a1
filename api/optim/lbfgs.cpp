#include "ember/optim/lbfgs.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "ember/autograd/grad_mode.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/reduce.h"
#include "ember/util/error.h"

namespace ember::optim {
namespace {

// The buffers of the state kept on the first parameter, in the order given to Optimizer; the
// curvature pairs are stacked into [pairs, numel] tensors between steps.
enum Buffer { kD, kT, kOldDirs, kOldStps, kRo, kHDiag, kPrevFlatGrad, kPrevLoss, kFuncEvals };

double dot(const Tensor& a, const Tensor& b) {
  return sum(mul(a, b)).item();
}
double abs_max(const Tensor& a) {
  return max(abs(a)).item();
}
Tensor scalar(double v) {
  return full({}, v, {DType::Float64, Device::cpu()});  // host bookkeeping, as Optimizer's step
}

/** The gradients of `params` as one flat vector (zeros for a parameter without one). */
Tensor flat_grad_of(const std::vector<Tensor>& params) {
  std::vector<Tensor> parts;
  parts.reserve(params.size());
  for (const Tensor& p : params) {
    parts.push_back(p.grad().defined() ? p.grad().reshape({-1})
                                       : zeros({p.numel()}, TensorOptions(p.dtype(), p.device())));
  }
  return cat(parts);
}

/** params += step * direction, the flat direction split over the parameters. */
void add_to_params(std::vector<Tensor>& params, double step, const Tensor& direction) {
  int64_t offset = 0;
  for (Tensor& p : params) {
    add_(p, direction.narrow(0, offset, p.numel()).reshape(p.sizes()), step);
    offset += p.numel();
  }
}

// Note [Cubic interpolation in the line search]
// The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2 (Nocedal and
// Wright, eq. 3.59), clamped into the bounds (by default the interval between the points); the
// middle of the bounds where the cubic has no minimum. PyTorch's _cubic_interpolate computes the
// same, which keeps the iterates of the two equal.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  const auto [lo, hi] = bounds.value_or(std::pair<double, double>(std::minmax(x1, x2)));
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square < 0) return (lo + hi) / 2;
  const double d2 = std::sqrt(d2_square);
  const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                  : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
  return std::min(std::max(min_pos, lo), hi);
}

/** The loss and the flat gradient at x + step * direction (the parameters are put back). */
using Objective = std::function<std::pair<double, Tensor>(double step)>;

struct LineSearch {
  double loss;
  Tensor grad;
  double step;
  int64_t evals;
};

// Note [Strong Wolfe line search]
// Nocedal and Wright's Algorithm 3.5 (bracketing: grow the step until the sufficient-decrease
// condition fails, the loss rises or the slope turns positive) and 3.6 (zoom: shrink the bracket
// by cubic interpolation, moving away from its ends when progress stalls) with c1 = 1e-4,
// c2 = 0.9 and at most 25 evaluations, following PyTorch's _strong_wolfe step for step.
LineSearch strong_wolfe(const Objective& objective, double t, const Tensor& d, double f,
                        const Tensor& g, double gtd, double tolerance_change) {
  constexpr double c1 = 1e-4, c2 = 0.9;
  constexpr int64_t max_ls = 25;
  const double d_norm = abs_max(d);
  auto [f_new, g_new] = objective(t);
  int64_t evals = 1;
  double gtd_new = dot(g_new, d);
  double t_prev = 0, f_prev = f, gtd_prev = gtd;
  Tensor g_prev = g.clone();
  bool done = false;
  int64_t ls_iter = 0;
  // The bracket: steps, losses, gradients and slopes at its ends.
  std::vector<double> bt, bf, bgtd;
  std::vector<Tensor> bg;
  while (ls_iter < max_ls) {
    const bool rose = f_new > f + c1 * t * gtd || (ls_iter > 1 && f_new >= f_prev);
    if (!rose && std::abs(gtd_new) <= -c2 * gtd) {
      bt = {t}, bf = {f_new}, bg = {g_new};
      done = true;
      break;
    }
    if (rose || gtd_new >= 0) {
      bt = {t_prev, t}, bf = {f_prev, f_new}, bg = {g_prev, g_new.clone()};
      bgtd = {gtd_prev, gtd_new};
      break;
    }
    const double min_step = t + 0.01 * (t - t_prev), max_step = t * 10;
    const double previous = t;
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                          std::make_pair(min_step, max_step));
    t_prev = previous, f_prev = f_new, g_prev = g_new.clone(), gtd_prev = gtd_new;
    std::tie(f_new, g_new) = objective(t);
    ++evals;
    gtd_new = dot(g_new, d);
    ++ls_iter;
  }
  if (ls_iter == max_ls) bt = {0, t}, bf = {f, f_new}, bg = {g, g_new}, bgtd = {gtd, gtd_new};

  bool insufficient_progress = false;
  size_t low = bf[0] <= bf.back() ? 0 : 1, high = 1 - low;
  while (!done && ls_iter < max_ls) {
    const double lo = std::min(bt[0], bt[1]), hi = std::max(bt[0], bt[1]);
    if ((hi - lo) * d_norm < tolerance_change) break;
    t = cubic_interpolate(bt[0], bf[0], bgtd[0], bt[1], bf[1], bgtd[1]);
    const double eps = 0.1 * (hi - lo);
    if (std::min(hi - t, t - lo) < eps) {
      // Too close to an end of the bracket: step eps inside it, unless the last step made
      // progress from there.
      if (insufficient_progress || t >= hi || t <= lo) {
        t = std::abs(t - hi) < std::abs(t - lo) ? hi - eps : lo + eps;
        insufficient_progress = false;
      } else {
        insufficient_progress = true;
      }
    } else {
      insufficient_progress = false;
    }
    std::tie(f_new, g_new) = objective(t);
    ++evals;
    gtd_new = dot(g_new, d);
    ++ls_iter;
    if (f_new > f + c1 * t * gtd || f_new >= bf[low]) {
      bt[high] = t, bf[high] = f_new, bg[high] = g_new.clone(), bgtd[high] = gtd_new;
      low = bf[0] <= bf[1] ? 0 : 1, high = 1 - low;
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (bt[high] - bt[low]) >= 0) {
        bt[high] = bt[low], bf[high] = bf[low], bg[high] = bg[low], bgtd[high] = bgtd[low];
      }
      bt[low] = t, bf[low] = f_new, bg[low] = g_new.clone(), bgtd[low] = gtd_new;
    }
  }
  return {bf[low], bg[low], bt[low], evals};
}

}  // namespace

LBFGS::LBFGS(std::vector<Tensor> params, LBFGSOptions options)
    : LBFGS(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, std::move(options)) {}

LBFGS::LBFGS(std::vector<ParamGroup> groups, LBFGSOptions options)
    : Optimizer("optim.LBFGS", to_map(options),
                {"d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss",
                 "func_evals"},
                /*counts_steps=*/true) {
  EMBER_CHECK(options.line_search_fn.empty() || options.line_search_fn == "strong_wolfe",
              "[optim.LBFGS] line_search_fn must be None or 'strong_wolfe': got '{}'",
              options.line_search_fn);
  EMBER_CHECK(groups.size() == 1,
              "[optim.LBFGS] LBFGS doesn't support per-parameter options (parameter groups): got "
              "{} groups",
              groups.size());
  init_groups(std::move(groups));
}

Options LBFGS::to_map(const LBFGSOptions& o) {
  return {{"lr", o.lr},
          {"max_iter", static_cast<double>(o.max_iter)},
          {"max_eval", static_cast<double>(o.max_eval > 0 ? o.max_eval : o.max_iter * 5 / 4)},
          {"tolerance_grad", o.tolerance_grad},
          {"tolerance_change", o.tolerance_change},
          {"history_size", static_cast<double>(o.history_size)},
          {"line_search_fn", o.line_search_fn == "strong_wolfe" ? 1.0 : 0.0}};
}

LBFGSOptions LBFGS::options_of(const ParamGroup& g) {
  return {.lr = g.get("lr"),
          .max_iter = static_cast<int64_t>(g.get("max_iter")),
          .max_eval = static_cast<int64_t>(g.get("max_eval")),
          .tolerance_grad = g.get("tolerance_grad"),
          .tolerance_change = g.get("tolerance_change"),
          .history_size = static_cast<int64_t>(g.get("history_size")),
          .line_search_fn = g.get("line_search_fn") != 0 ? "strong_wolfe" : ""};
}

void LBFGS::validate(const ParamGroup& group) const {
  EMBER_CHECK(!group.params.empty(), "[optim.LBFGS] got an empty parameter list");
  const LBFGSOptions o = options_of(group);
  EMBER_CHECK(o.lr >= 0, "[optim.LBFGS] invalid learning rate: {} (must be >= 0)", o.lr);
  EMBER_CHECK(o.max_iter >= 1 && o.max_eval >= 1 && o.history_size >= 1,
              "[optim.LBFGS] max_iter, max_eval and history_size must be at least 1: got {}, {}, "
              "{}",
              o.max_iter, o.max_eval, o.history_size);
  EMBER_CHECK(o.tolerance_grad >= 0 && o.tolerance_change >= 0,
              "[optim.LBFGS] tolerances must be >= 0: got tolerance_grad={}, tolerance_change={}",
              o.tolerance_grad, o.tolerance_change);
}

Tensor LBFGS::load_buffer(size_t buffer, const Tensor& value, const Tensor& param,
                          const std::string& key, size_t index) const {
  EMBER_CHECK(index == 0,
              "[optim.LBFGS] load_state_dict: entry '{}': the state is kept on the "
              "first parameter only",
              key);
  int64_t numel = 0;
  for (const Tensor& p : param_groups()[0].params) numel += p.numel();
  Shape want;
  switch (static_cast<Buffer>(buffer)) {
    case kD:
    case kPrevFlatGrad:
      want = Shape({numel});
      break;
    case kOldDirs:
    case kOldStps:
      want = Shape({value.dim() == 2 ? value.size(0) : -1, numel});
      break;
    case kRo:
      want = Shape({value.dim() == 1 ? value.size(0) : -1});
      break;
    default:
      want = Shape({});
  }
  EMBER_CHECK(value.sizes() == want,
              "[optim.LBFGS] load_state_dict: entry '{}' has shape {}, expected {} (the "
              "parameters hold {} numbers)",
              key, value.sizes(), want, numel);
  // The vectors take the parameters' dtype; the scalars and ro stay float64, as computed.
  const bool vector =
      buffer == kD || buffer == kPrevFlatGrad || buffer == kOldDirs || buffer == kOldStps;
  return value.to(param.device()).to(vector ? param.dtype() : DType::Float64).contiguous().clone();
}

void LBFGS::step() {
  throw ValueError(
      "[optim.LBFGS] step() needs a closure: L-BFGS re-evaluates the model (pass a function that "
      "zeroes the gradients, computes the loss, calls backward and returns the loss)");
}

Tensor LBFGS::step(const std::function<Tensor()>& closure) {
  EMBER_CHECK(static_cast<bool>(closure), "[optim.LBFGS] step() needs a closure");
  EMBER_CHECK(param_groups().size() == 1,
              "[optim.LBFGS] LBFGS doesn't support per-parameter options (parameter groups): it "
              "has {} groups",
              param_groups().size());
  autograd::NoGradGuard no_grad;
  std::vector<Tensor>& params = param_groups()[0].params;
  const LBFGSOptions o = options_of(param_groups()[0]);
  const auto evaluate = [&] {
    autograd::AutoGradMode grad_on(true);
    const Tensor loss = closure();
    EMBER_CHECK(loss.defined() && loss.numel() == 1,
                "[optim.LBFGS] the closure must return the loss (one number): got {}",
                loss.defined() ? fmt::format("a tensor of shape {}", loss.sizes()) : "nothing");
    return loss;
  };
  ParamState& state = state_for(params[0]);
  std::vector<Tensor>& b = state.buffers;
  const auto read = [&](Buffer i, double fallback) {
    return b[i].defined() ? b[i].item() : fallback;
  };

  const Tensor orig_loss = evaluate();
  double loss = orig_loss.item();
  int64_t current_evals = 1;
  double func_evals = read(kFuncEvals, 0) + 1;
  Tensor flat_grad = flat_grad_of(params);
  bool opt_cond = abs_max(flat_grad) <= o.tolerance_grad;
  if (opt_cond) {
    b[kFuncEvals] = scalar(func_evals);
    return orig_loss;
  }

  Tensor d = b[kD], prev_flat_grad = b[kPrevFlatGrad];
  double t = read(kT, o.lr), h_diag = read(kHDiag, 1), prev_loss = read(kPrevLoss, loss);
  std::vector<Tensor> old_dirs, old_stps;
  if (b[kOldDirs].defined()) old_dirs = unbind(b[kOldDirs]), old_stps = unbind(b[kOldStps]);
  std::vector<double> ro;
  if (b[kRo].defined()) {
    for (const Tensor& r : unbind(b[kRo])) ro.push_back(r.item());
  }

  for (int64_t n_iter = 1; n_iter <= o.max_iter; ++n_iter) {
    ++state.step;
    if (state.step == 1) {
      d = neg(flat_grad);
      old_dirs.clear(), old_stps.clear(), ro.clear();
      h_diag = 1;
    } else {
      // Note [The two-loop recursion]: the update y (gradient change) and s (step) joins the
      // history if the curvature y.s is positive; d = -H g with H built from the history.
      const Tensor y = sub(flat_grad, prev_flat_grad), s = mul(d, t);
      const double ys = dot(y, s);
      if (ys > 1e-10) {
        if (static_cast<int64_t>(old_dirs.size()) == o.history_size) {
          old_dirs.erase(old_dirs.begin()), old_stps.erase(old_stps.begin());
          ro.erase(ro.begin());
        }
        old_dirs.push_back(y), old_stps.push_back(s), ro.push_back(1.0 / ys);
        h_diag = ys / dot(y, y);
      }
      std::vector<double> al(old_dirs.size());
      Tensor q = neg(flat_grad);
      for (size_t i = old_dirs.size(); i-- > 0;) {
        al[i] = dot(old_stps[i], q) * ro[i];
        add_(q, old_dirs[i], -al[i]);
      }
      d = mul(q, h_diag);
      for (size_t i = 0; i < old_dirs.size(); ++i) {
        const double be_i = dot(old_dirs[i], d) * ro[i];
        add_(d, old_stps[i], al[i] - be_i);
      }
    }
    if (!prev_flat_grad.defined()) {
      prev_flat_grad = flat_grad.clone();
    } else {
      prev_flat_grad.copy_(flat_grad);
    }
    prev_loss = loss;
    // The first step is scaled by the gradient's size; later ones use lr.
    t = state.step == 1 ? std::min(1.0, 1.0 / sum(abs(flat_grad)).item()) * o.lr : o.lr;
    const double gtd = dot(flat_grad, d);
    if (gtd > -o.tolerance_change) break;  // not a descent direction

    int64_t ls_func_evals = 0;
    if (o.line_search_fn == "strong_wolfe") {
      std::vector<Tensor> x_init;
      for (const Tensor& p : params) x_init.push_back(p.clone());
      const Objective objective = [&](double step) {
        add_to_params(params, step, d);
        const double f = evaluate().item();
        Tensor g = flat_grad_of(params);
        for (size_t i = 0; i < params.size(); ++i) params[i].copy_(x_init[i]);
        return std::make_pair(f, std::move(g));
      };
      LineSearch r = strong_wolfe(objective, t, d, loss, flat_grad, gtd, o.tolerance_change);
      loss = r.loss, flat_grad = std::move(r.grad), t = r.step, ls_func_evals = r.evals;
      add_to_params(params, t, d);
      opt_cond = abs_max(flat_grad) <= o.tolerance_grad;
    } else {
      add_to_params(params, t, d);
      if (n_iter != o.max_iter) {
        loss = evaluate().item();
        flat_grad = flat_grad_of(params);
        opt_cond = abs_max(flat_grad) <= o.tolerance_grad;
        ls_func_evals = 1;
      }
    }
    current_evals += ls_func_evals;
    func_evals += static_cast<double>(ls_func_evals);
    if (n_iter == o.max_iter || current_evals >= o.max_eval || opt_cond) break;
    if (abs_max(mul(d, t)) <= o.tolerance_change) break;         // the step is too small
    if (std::abs(loss - prev_loss) < o.tolerance_change) break;  // the loss no longer changes
  }

  b[kD] = d, b[kT] = scalar(t), b[kHDiag] = scalar(h_diag);
  b[kOldDirs] = old_dirs.empty() ? Tensor() : stack(old_dirs);
  b[kOldStps] = old_stps.empty() ? Tensor() : stack(old_stps);
  b[kRo] = ro.empty() ? Tensor()
                      : from_vector(ro, {static_cast<int64_t>(ro.size())},
                                    {DType::Float64, Device::cpu()});
  b[kPrevFlatGrad] = prev_flat_grad, b[kPrevLoss] = scalar(prev_loss);
  b[kFuncEvals] = scalar(func_evals);
  return orig_loss;
}

}  // namespace ember::optim
