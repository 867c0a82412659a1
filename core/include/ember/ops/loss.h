// Loss functions: classification (nll, cross entropy, binary, kl_div), regression (mse, l1,
// huber, smooth l1), and the margin and embedding losses (margin ranking, hinge embedding, soft
// margin, multilabel soft margin, cosine embedding, triplet margin, poisson nll, gaussian nll), and
// the sequence loss ctc_loss.
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

// The margin and embedding losses (Note [The margin losses] in core/ops/loss.cpp).
/** max(0, -y (x1 - x2) + margin) for targets y of +1 or -1; operands of one rank, broadcast. */
EMBER_API Tensor margin_ranking_loss(const Tensor& x1, const Tensor& x2, const Tensor& target,
                                     double margin = 0.0, Reduction reduction = Reduction::Mean);
/** x where y = 1, max(0, margin - x) where y = -1 (the two summed for other y). */
EMBER_API Tensor hinge_embedding_loss(const Tensor& x, const Tensor& target, double margin = 1.0,
                                      Reduction reduction = Reduction::Mean);
/** log(1 + exp(-y x)), the two-class logistic loss. */
EMBER_API Tensor soft_margin_loss(const Tensor& x, const Tensor& target,
                                  Reduction reduction = Reduction::Mean);
/** -(y log sigmoid(x) + (1 - y) log sigmoid(-x)) times weight [C], averaged over the classes
 *  (the last dim), then reduced over the batch. */
EMBER_API Tensor multilabel_soft_margin_loss(const Tensor& x, const Tensor& target,
                                             const Tensor& weight = {},
                                             Reduction reduction = Reduction::Mean);
/** The multi-class hinge loss over each sample's target classes: target [C] or [N, C] holds class
 *  indices, the first -1 ending them; the sum over target classes j and non-target classes i of
 *  max(0, 1 - (x[j] - x[i])), divided by C. */
EMBER_API Tensor multilabel_margin_loss(const Tensor& x, const Tensor& target,
                                        Reduction reduction = Reduction::Mean);
/** 1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1; x1, x2 [N, D] or
 *  [D], y [N] or []. */
EMBER_API Tensor cosine_embedding_loss(const Tensor& x1, const Tensor& x2, const Tensor& target,
                                       double margin = 0.0, Reduction reduction = Reduction::Mean);
/** max(0, margin + d(a, p) - d(a, n)) with d the p-norm pairwise_distance; `swap` takes
 *  min(d(a, n), d(p, n)) as the negative distance. */
EMBER_API Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive,
                                     const Tensor& negative, double margin = 1.0, double p = 2.0,
                                     double eps = 1e-6, bool swap = false,
                                     Reduction reduction = Reduction::Mean);
/** Poisson negative log-likelihood: exp(x) - y x for log_input, else x - y log(x + eps); `full`
 *  adds Stirling's term y log y - y + log(2 pi y) / 2 where y > 1. */
EMBER_API Tensor poisson_nll_loss(const Tensor& x, const Tensor& target, bool log_input = true,
                                  bool full = false, double eps = 1e-8,
                                  Reduction reduction = Reduction::Mean);
/** Gaussian negative log-likelihood (log(v) + (x - y)^2 / v) / 2 with v = max(var, eps) (the
 *  gradient reaching var as if unclamped, as PyTorch's); var has x's shape, or x's without its
 *  last dim, or x's with one dim of size 1; `full` adds log(2 pi) / 2. */
EMBER_API Tensor gaussian_nll_loss(const Tensor& x, const Tensor& target, const Tensor& var,
                                   bool full = false, double eps = 1e-6,
                                   Reduction reduction = Reduction::Mean);
/** gaussian_nll_loss with one variance for every element (PyTorch's float var). */
EMBER_API Tensor gaussian_nll_loss(const Tensor& x, const Tensor& target, double var,
                                   bool full = false, double eps = 1e-6,
                                   Reduction reduction = Reduction::Mean);

/** Connectionist temporal classification loss (F.ctc_loss) of log-probabilities [T, N, C] (or
 *  unbatched [T, C]) against integer targets, padded [N, S] or concatenated 1-d (unbatched: [S]),
 *  with one input and one target length per entry: -log of the probability of all alignments
 *  (Note [ctc_loss as the alpha recursion] in core/ops/ctc_loss.cpp). Mean divides each loss by
 *  its target length, then averages; an impossible alignment costs inf (0 with zero_infinity). */
EMBER_API Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, IntList input_lengths,
                          IntList target_lengths, int64_t blank = 0,
                          Reduction reduction = Reduction::Mean, bool zero_infinity = false);
/** ctc_loss with the lengths given as integer tensors (0-d or 1-d), read on the host. */
EMBER_API Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets,
                          const Tensor& input_lengths, const Tensor& target_lengths,
                          int64_t blank = 0, Reduction reduction = Reduction::Mean,
                          bool zero_infinity = false);

}  // namespace ember
