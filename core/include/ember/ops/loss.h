// Loss functions: classification (nll, cross entropy, binary, kl_div) and regression (mse, l1,
// huber, smooth l1).
#pragma once

#include "ember/tensor/tensor.h"

namespace ember {

/** How a loss reduces its per-element values (BatchMean: the sum over the batch size, kl_div's
 *  only). */
enum class Reduction { None, Mean, Sum, BatchMean };

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
/** Huber's loss: 0.5 d^2 where d = |x - target| < delta, else delta (d - 0.5 delta). */
EMBER_API Tensor huber_loss(const Tensor& x, const Tensor& target,
                            Reduction reduction = Reduction::Mean, double delta = 1.0);
/** huber_loss / beta: 0.5 d^2 / beta where d < beta, else d - 0.5 beta (l1_loss at beta 0). */
EMBER_API Tensor smooth_l1_loss(const Tensor& x, const Tensor& target,
                                Reduction reduction = Reduction::Mean, double beta = 1.0);
/** Kullback-Leibler divergence of the target from x, both given as in PyTorch: x holds
 *  log-probabilities, target probabilities (log-probabilities with log_target); pointwise
 *  target (log target - x), 0 where target is 0. BatchMean divides the sum by x.size(0). */
EMBER_API Tensor kl_div(const Tensor& x, const Tensor& target,
                        Reduction reduction = Reduction::Mean, bool log_target = false);
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
