// Loss modules: callable objects around the loss ops of core/include/ember/ops/loss.h.
#pragma once

#include "ember/nn/module.h"
#include "ember/ops/loss.h"

namespace ember::nn {

/** Base of the losses: forward(input, target) -> loss, reduced as configured. */
class Loss : public Module {
 public:
  /** A loss named `type_name` with the given reduction. */
  Loss(std::string type_name, Reduction reduction)
      : Module(std::move(type_name)), reduction(reduction) {}
  /** The loss of `input` against `target`. */
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  /** forward(input, target). */
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  using Module::forward;

  const Reduction reduction;
};

/** cross_entropy(logits, target) with class weights, ignore_index and label smoothing. */
class CrossEntropyLoss : public Loss {
 public:
  /** The loss; `weight` [C] may be undefined. */
  explicit CrossEntropyLoss(Tensor weight = {}, int64_t ignore_index = -100,
                            Reduction reduction = Reduction::Mean, double label_smoothing = 0.0);
  Tensor forward(const Tensor& input, const Tensor& target) override;

  const int64_t ignore_index;
  const double label_smoothing;
  Tensor& weight;  ///< buffer [C], undefined for equal weights
};

/** nll_loss(log_probs, target) with class weights and ignore_index. */
class NLLLoss : public Loss {
 public:
  /** The loss; `weight` [C] may be undefined. */
  explicit NLLLoss(Tensor weight = {}, int64_t ignore_index = -100,
                   Reduction reduction = Reduction::Mean);
  Tensor forward(const Tensor& input, const Tensor& target) override;

  const int64_t ignore_index;
  Tensor& weight;  ///< buffer [C], undefined for equal weights
};

/** Mean (or summed) squared error. */
class MSELoss : public Loss {
 public:
  /** The loss with `reduction`. */
  explicit MSELoss(Reduction reduction = Reduction::Mean) : Loss("MSELoss", reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
};

/** Mean (or summed) absolute error. */
class L1Loss : public Loss {
 public:
  /** The loss with `reduction`. */
  explicit L1Loss(Reduction reduction = Reduction::Mean) : Loss("L1Loss", reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
};

/** Huber's loss: quadratic below delta, linear above. */
class HuberLoss : public Loss {
 public:
  /** The loss with `reduction` and `delta`. */
  explicit HuberLoss(Reduction reduction = Reduction::Mean, double delta = 1.0)
      : Loss("HuberLoss", reduction), delta(delta) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;

  const double delta;
};

/** Smooth L1: quadratic below beta (divided by beta), linear above. */
class SmoothL1Loss : public Loss {
 public:
  /** The loss with `reduction` and `beta`. */
  explicit SmoothL1Loss(Reduction reduction = Reduction::Mean, double beta = 1.0)
      : Loss("SmoothL1Loss", reduction), beta(beta) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;

  const double beta;
};

/** Kullback-Leibler divergence; the input holds log-probabilities. */
class KLDivLoss : public Loss {
 public:
  /** The loss with `reduction` (BatchMean is the true KL divergence per sample). */
  explicit KLDivLoss(Reduction reduction = Reduction::Mean, bool log_target = false)
      : Loss("KLDivLoss", reduction), log_target(log_target) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;

  const bool log_target;
};

/** Binary cross entropy of probabilities. */
class BCELoss : public Loss {
 public:
  /** The loss; `weight` broadcasts against the input and may be undefined. */
  explicit BCELoss(Tensor weight = {}, Reduction reduction = Reduction::Mean);
  Tensor forward(const Tensor& input, const Tensor& target) override;

  Tensor& weight;  ///< buffer, undefined for equal weights
};

/** Binary cross entropy of logits, computed stably. */
class BCEWithLogitsLoss : public Loss {
 public:
  /** The loss; `weight` and `pos_weight` [C] may be undefined. */
  explicit BCEWithLogitsLoss(Tensor weight = {}, Tensor pos_weight = {},
                             Reduction reduction = Reduction::Mean);
  Tensor forward(const Tensor& input, const Tensor& target) override;

  Tensor& weight;      ///< buffer, undefined for equal weights
  Tensor& pos_weight;  ///< buffer [C], undefined for 1
};

/** hinge_embedding_loss with a fixed margin. */
class HingeEmbeddingLoss : public Loss {
 public:
  /** The loss with `margin` and `reduction`. */
  explicit HingeEmbeddingLoss(double margin = 1.0, Reduction reduction = Reduction::Mean)
      : Loss("HingeEmbeddingLoss", reduction), margin(margin) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;

  const double margin;
};

/** soft_margin_loss, the two-class logistic loss. */
class SoftMarginLoss : public Loss {
 public:
  /** The loss with `reduction`. */
  explicit SoftMarginLoss(Reduction reduction = Reduction::Mean)
      : Loss("SoftMarginLoss", reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
};

/** multilabel_margin_loss as a module. */
class MultiLabelMarginLoss : public Loss {
 public:
  /** The loss with `reduction`. */
  explicit MultiLabelMarginLoss(Reduction reduction = Reduction::Mean)
      : Loss("MultiLabelMarginLoss", reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
};

/** multilabel_soft_margin_loss with optional class weights. */
class MultiLabelSoftMarginLoss : public Loss {
 public:
  /** The loss; `weight` [C] may be undefined. */
  explicit MultiLabelSoftMarginLoss(Tensor weight = {}, Reduction reduction = Reduction::Mean);
  Tensor forward(const Tensor& input, const Tensor& target) override;

  Tensor& weight;  ///< buffer [C], undefined for equal weights
};

/** poisson_nll_loss with its options. */
class PoissonNLLLoss : public Loss {
 public:
  /** The loss; log_input says the input is log(rate), full adds Stirling's term. */
  explicit PoissonNLLLoss(bool log_input = true, bool full = false, double eps = 1e-8,
                          Reduction reduction = Reduction::Mean)
      : Loss("PoissonNLLLoss", reduction), log_input(log_input), full(full), eps(eps) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;

  const bool log_input, full;
  const double eps;
};

/** Base of the losses of three tensors: forward(a, b, c) -> loss, reduced as configured. */
class TripleLoss : public Module {
 public:
  /** A loss named `type_name` with the given reduction. */
  TripleLoss(std::string type_name, Reduction reduction)
      : Module(std::move(type_name)), reduction(reduction) {}
  /** The loss of the three tensors. */
  virtual Tensor forward(const Tensor& a, const Tensor& b, const Tensor& c) = 0;
  /** forward(a, b, c). */
  Tensor operator()(const Tensor& a, const Tensor& b, const Tensor& c) { return forward(a, b, c); }
  using Module::forward;

  const Reduction reduction;
};

/** margin_ranking_loss(x1, x2, y) with a fixed margin. */
class MarginRankingLoss : public TripleLoss {
 public:
  /** The loss with `margin` and `reduction`. */
  explicit MarginRankingLoss(double margin = 0.0, Reduction reduction = Reduction::Mean)
      : TripleLoss("MarginRankingLoss", reduction), margin(margin) {}
  Tensor forward(const Tensor& x1, const Tensor& x2, const Tensor& target) override;

  const double margin;
};

/** cosine_embedding_loss(x1, x2, y) with a fixed margin. */
class CosineEmbeddingLoss : public TripleLoss {
 public:
  /** The loss with `margin` and `reduction`. */
  explicit CosineEmbeddingLoss(double margin = 0.0, Reduction reduction = Reduction::Mean)
      : TripleLoss("CosineEmbeddingLoss", reduction), margin(margin) {}
  Tensor forward(const Tensor& x1, const Tensor& x2, const Tensor& target) override;

  const double margin;
};

/** triplet_margin_loss(anchor, positive, negative) with its options. */
class TripletMarginLoss : public TripleLoss {
 public:
  /** The loss with its margin, norm degree p, eps and distance swap. */
  explicit TripletMarginLoss(double margin = 1.0, double p = 2.0, double eps = 1e-6,
                             bool swap = false, Reduction reduction = Reduction::Mean)
      : TripleLoss("TripletMarginLoss", reduction), margin(margin), p(p), eps(eps), swap(swap) {}
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) override;

  const double margin, p, eps;
  const bool swap;
};

/** gaussian_nll_loss(input, target, var) with its options. */
class GaussianNLLLoss : public TripleLoss {
 public:
  /** The loss; `full` adds log(2 pi) / 2, var is clamped at `eps`. */
  explicit GaussianNLLLoss(bool full = false, double eps = 1e-6,
                           Reduction reduction = Reduction::Mean)
      : TripleLoss("GaussianNLLLoss", reduction), full(full), eps(eps) {}
  Tensor forward(const Tensor& input, const Tensor& target, const Tensor& var) override;
  /** The loss with one variance `var` for every element. */
  Tensor forward(const Tensor& input, const Tensor& target, double var);

  const bool full;
  const double eps;
};

/** ctc_loss(log_probs, targets, input_lengths, target_lengths) with its blank and zero_infinity. */
class CTCLoss : public Module {
 public:
  /** The loss; `blank` is the blank class, zero_infinity turns infinite losses into 0. */
  explicit CTCLoss(int64_t blank = 0, Reduction reduction = Reduction::Mean,
                   bool zero_infinity = false)
      : Module("CTCLoss"), blank(blank), reduction(reduction), zero_infinity(zero_infinity) {}
  /** The loss of log_probs [T, N, C] against targets, the lengths as integer tensors. */
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths);
  /** The loss with the lengths as lists. */
  Tensor forward(const Tensor& log_probs, const Tensor& targets, IntList input_lengths,
                 IntList target_lengths);
  /** forward(log_probs, targets, input_lengths, target_lengths). */
  Tensor operator()(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                    const Tensor& target_lengths) {
    return forward(log_probs, targets, input_lengths, target_lengths);
  }
  /** forward with the lengths as lists. */
  Tensor operator()(const Tensor& log_probs, const Tensor& targets, IntList input_lengths,
                    IntList target_lengths) {
    return forward(log_probs, targets, input_lengths, target_lengths);
  }
  using Module::forward;

  const int64_t blank;
  const Reduction reduction;
  const bool zero_infinity;
};

}  // namespace ember::nn
