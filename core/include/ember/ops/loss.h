// Loss functions: classification (nll, cross entropy, binary) and regression (mse, l1).
#pragma once

#include "ember/tensor/tensor.h"

namespace ember {

/** How a loss reduces its per-element values. */
enum class Reduction { None, Mean, Sum };

/** Negative log-likelihood of log-probabilities [N, C] (or [N, C, d...], or [C]) at integer
 *  class targets [N] ([N, d...], or []); weight [C] rescales classes, and targets equal to
 *  ignore_index add nothing (mean divides by the summed weight of the others). */
EMBER_API Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight = {},
                          int64_t ignore_index = -100, Reduction reduction = Reduction::Mean);
/** log_softmax over dim 1 followed by nll_loss; label_smoothing mixes the target with the
 *  uniform distribution. Float targets of the logits' shape are class probabilities. */
EMBER_API Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                               const Tensor& weight = {}, int64_t ignore_index = -100,
                               Reduction reduction = Reduction::Mean, double label_smoothing = 0.0);
/** (x - target)^2, reduced. */
EMBER_API Tensor mse_loss(const Tensor& x, const Tensor& target,
                          Reduction reduction = Reduction::Mean);
/** |x - target|, reduced. */
EMBER_API Tensor l1_loss(const Tensor& x, const Tensor& target,
                         Reduction reduction = Reduction::Mean);
/** -w (t log p + (1 - t) log(1 - p)) for probabilities p, with logs clamped at -100. */
EMBER_API Tensor binary_cross_entropy(const Tensor& p, const Tensor& target,
                                      const Tensor& weight = {},
                                      Reduction reduction = Reduction::Mean);
/** binary_cross_entropy(sigmoid(x), target) computed stably; pos_weight [C] weighs positives. */
EMBER_API Tensor binary_cross_entropy_with_logits(const Tensor& x, const Tensor& target,
                                                  const Tensor& weight = {},
                                                  const Tensor& pos_weight = {},
                                                  Reduction reduction = Reduction::Mean);

}  // namespace ember
