// Activation checkpointing, as torch.utils.checkpoint: a block's intermediate tensors are not
// kept for backward but recomputed there, trading compute for memory.
#pragma once

#include <functional>
#include <vector>

#include "ember/tensor/tensor.h"
#include "ember/util/export.h"

namespace ember::autograd {

/** A block to checkpoint: tensors in, tensors out. */
using CheckpointFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/** Runs `fn(inputs)` without keeping its intermediate tensors; backward() runs it again, with
 *  the random generators as they were (`preserve_rng_state`, so dropout draws the same masks),
 *  and backpropagates through the recomputed block, into the inputs and into the parameters `fn`
 *  uses. Gradients equal the uncheckpointed ones (Note [Activation checkpointing]: PyTorch's
 *  reentrant checkpoint, for backward(), first derivatives only). When no input requires grad
 *  the block runs uncheckpointed, with a warning, so that its parameters still get gradients. */
EMBER_API std::vector<Tensor> checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs,
                                         bool preserve_rng_state = true);

/** checkpoint() of a block with one input and one output. */
EMBER_API Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input,
                            bool preserve_rng_state = true);

}  // namespace ember::autograd
