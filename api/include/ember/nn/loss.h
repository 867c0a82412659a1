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

}  // namespace ember::nn
