#include "ember/optim/clip_grad.h"

#include <algorithm>
#include <cmath>

#include "ember/autograd/grad_mode.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/reduce.h"
#include "ember/util/error.h"

namespace ember::optim {

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  EMBER_CHECK(!std::isnan(norm_type) && norm_type > 0,
              "[optim.clip_grad_norm_] invalid norm_type: {} (must be > 0 or inf)", norm_type);
  EMBER_CHECK(max_norm >= 0, "[optim.clip_grad_norm_] invalid max_norm: {} (must be >= 0)",
              max_norm);
  autograd::NoGradGuard no_grad;
  const bool inf = std::isinf(norm_type);
  double total = 0;
  for (const auto& p : params) {
    const Tensor& g = p.grad();
    if (!g.defined() || g.numel() == 0) continue;
    // Note [Clip norms in double]: each gradient's norm is taken in its dtype (one reduction
    // per tensor, like PyTorch); they are combined in double.
    const double n = norm(g, norm_type).item();
    total = inf ? std::max(total, n) : total + std::pow(n, norm_type);
  }
  if (!inf) total = std::pow(total, 1.0 / norm_type);
  EMBER_CHECK(!error_if_nonfinite || std::isfinite(total),
              "[optim.clip_grad_norm_] the total norm of order {} of the gradients is {} "
              "(pass error_if_nonfinite = false to clip anyway)",
              norm_type, total);
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1) {
    for (const auto& p : params) {
      if (p.grad().defined()) mul_(p.mutable_grad(), coef);
    }
  }
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  EMBER_CHECK(!std::isnan(clip_value) && clip_value >= 0,
              "[optim.clip_grad_value_] invalid clip_value: {} (must be >= 0)", clip_value);
  autograd::NoGradGuard no_grad;
  for (const auto& p : params) {
    if (p.grad().defined()) clamp_(p.mutable_grad(), -clip_value, clip_value);
  }
}

}  // namespace ember::optim
