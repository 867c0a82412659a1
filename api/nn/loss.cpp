#include "ember/nn/loss.h"

namespace ember::nn {

CrossEntropyLoss::CrossEntropyLoss(Tensor w, int64_t ignore, Reduction r, double smoothing)
    : Loss("CrossEntropyLoss", r),
      ignore_index(ignore),
      label_smoothing(smoothing),
      weight(register_buffer("weight", std::move(w))) {}

Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  return cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing);
}

NLLLoss::NLLLoss(Tensor w, int64_t ignore, Reduction r)
    : Loss("NLLLoss", r), ignore_index(ignore), weight(register_buffer("weight", std::move(w))) {}

Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) {
  return nll_loss(input, target, weight, ignore_index, reduction);
}

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) {
  return mse_loss(input, target, reduction);
}

Tensor L1Loss::forward(const Tensor& input, const Tensor& target) {
  return l1_loss(input, target, reduction);
}

Tensor HuberLoss::forward(const Tensor& input, const Tensor& target) {
  return huber_loss(input, target, reduction, delta);
}

Tensor SmoothL1Loss::forward(const Tensor& input, const Tensor& target) {
  return smooth_l1_loss(input, target, reduction, beta);
}

Tensor KLDivLoss::forward(const Tensor& input, const Tensor& target) {
  return kl_div(input, target, reduction, log_target);
}

BCELoss::BCELoss(Tensor w, Reduction r)
    : Loss("BCELoss", r), weight(register_buffer("weight", std::move(w))) {}

Tensor BCELoss::forward(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy(input, target, weight, reduction);
}

BCEWithLogitsLoss::BCEWithLogitsLoss(Tensor w, Tensor pw, Reduction r)
    : Loss("BCEWithLogitsLoss", r),
      weight(register_buffer("weight", std::move(w))),
      pos_weight(register_buffer("pos_weight", std::move(pw))) {}

Tensor BCEWithLogitsLoss::forward(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction);
}

Tensor HingeEmbeddingLoss::forward(const Tensor& input, const Tensor& target) {
  return hinge_embedding_loss(input, target, margin, reduction);
}

Tensor MultiLabelMarginLoss::forward(const Tensor& input, const Tensor& target) {
  return multilabel_margin_loss(input, target, reduction);
}

Tensor SoftMarginLoss::forward(const Tensor& input, const Tensor& target) {
  return soft_margin_loss(input, target, reduction);
}

MultiLabelSoftMarginLoss::MultiLabelSoftMarginLoss(Tensor w, Reduction r)
    : Loss("MultiLabelSoftMarginLoss", r), weight(register_buffer("weight", std::move(w))) {}

Tensor MultiLabelSoftMarginLoss::forward(const Tensor& input, const Tensor& target) {
  return multilabel_soft_margin_loss(input, target, weight, reduction);
}

Tensor PoissonNLLLoss::forward(const Tensor& input, const Tensor& target) {
  return poisson_nll_loss(input, target, log_input, full, eps, reduction);
}

Tensor GaussianNLLLoss::forward(const Tensor& input, const Tensor& target, const Tensor& var) {
  return gaussian_nll_loss(input, target, var, full, eps, reduction);
}

Tensor GaussianNLLLoss::forward(const Tensor& input, const Tensor& target, double var) {
  return gaussian_nll_loss(input, target, var, full, eps, reduction);
}

Tensor CTCLoss::forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                        const Tensor& target_lengths) {
  return ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction,
                  zero_infinity);
}

Tensor CTCLoss::forward(const Tensor& log_probs, const Tensor& targets, IntList input_lengths,
                        IntList target_lengths) {
  return ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction,
                  zero_infinity);
}

Tensor MarginRankingLoss::forward(const Tensor& x1, const Tensor& x2, const Tensor& target) {
  return margin_ranking_loss(x1, x2, target, margin, reduction);
}

Tensor CosineEmbeddingLoss::forward(const Tensor& x1, const Tensor& x2, const Tensor& target) {
  return cosine_embedding_loss(x1, x2, target, margin, reduction);
}

Tensor TripletMarginLoss::forward(const Tensor& anchor, const Tensor& positive,
                                  const Tensor& negative) {
  return triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction);
}

}  // namespace ember::nn
