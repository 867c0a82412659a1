// Gradient clipping: rescale all gradients to a maximum total norm, or clamp each element.
#pragma once

#include <vector>

#include "ember/tensor/tensor.h"

namespace ember::optim {

/**
 * Scales the gradients of `params` in place so that their total `norm_type`-norm (as if all
 * were one vector; inf for the max-abs norm) is at most `max_norm`; returns the norm before
 * clipping. Parameters without a gradient are skipped.
 */
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

/** Clamps every gradient element of `params` to [-clip_value, clip_value] in place. */
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

}  // namespace ember::optim
