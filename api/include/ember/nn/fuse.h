// Eval-time folding of batch normalisation into the layer before it, and of an activation into
// the convolution or linear layer before it (nn::fuse_for_inference).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/util/export.h"

namespace ember::nn {

/** What fuse_for_inference did: each folded pair as (layer name, batch-norm name), each ReLU
 *  merged into a convolution as (convolution name, ReLU name), each activation merged into a
 *  Linear as (linear name, ReLU or GELU name, or the Transformer layer's name for its
 *  feed-forward activation). */
struct FuseReport {
  std::vector<std::pair<std::string, std::string>> folded;       ///< in call order
  std::vector<std::pair<std::string, std::string>> relus;        ///< in call order
  std::vector<std::pair<std::string, std::string>> activations;  ///< modules, then layers
  /// each residual block ending in one conv2d_add_relu, as (convolution name, block name)
  std::vector<std::pair<std::string, std::string>> residuals;
  double max_abs_difference = 0;  ///< fused vs unfused output on the example input
};

/** A module whose forward ends in relu(bn(conv(...)) + shortcut), a residual block's end:
 *  once that batch norm is folded, fuse_for_inference has it run the end as one
 *  conv2d_add_relu (Note [Convolution, residual add and ReLU] in core/ops/conv.cpp). */
class EMBER_API ResidualTail {
 public:
  virtual ~ResidualTail() = default;
  /** Runs the end fused from now on (`on`) or as written again; with `on`, the name of the
   *  convolution that now ends the block (relative to the module), or empty if it cannot
   *  (its batch norm was not folded). */
  virtual std::string fuse_residual_tail(bool on) = 0;
};

/** Folds every BatchNorm whose input is the output of a Conv2d or Linear called just before it
 *  (and once per forward) into that layer's weight and bias, and makes the BatchNorm pass its
 *  input through; then merges every ReLU module whose input is a Conv2d's output (directly or
 *  through such a BatchNorm) into that convolution, which then runs conv2d_relu, and every ReLU
 *  or GELU module after a Linear, and each Transformer layer's feed-forward activation, into
 *  that Linear, which then runs fused_linear, and has every ResidualTail whose batch norm was
 *  folded end in one conv2d_add_relu (Note [Folding batch norm for inference] in
 *  api/nn/fuse.cpp). The pairs are
 *  found by running `model` once on `example` in eval mode; the fused model's output on it must
 *  match the unfused one within float32 tolerance, or every change is undone and an Error is
 *  thrown. The model is left in eval mode and is for inference: a folded BatchNorm refuses to
 *  run in training mode. */
EMBER_API FuseReport fuse_for_inference(Module& model, const Tensor& example);

}  // namespace ember::nn
