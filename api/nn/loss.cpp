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

}  // namespace ember::nn
