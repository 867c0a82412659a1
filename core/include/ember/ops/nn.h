// Layers' ops that are not convolutions, pooling or norms: linear (and fused_linear), dropout,
// embedding, embedding_bag, pad, interpolate, the spatial transformers affine_grid and
// grid_sample, pixel_shuffle, and the distances cosine_similarity, pairwise_distance and
// normalize.
#pragma once

#include <concepts>
#include <optional>
#include <string>
#include <string_view>

#include "ember/ops/factory.h"
#include "ember/tensor/tensor.h"

namespace ember {

/** x W^T + b for x [..., in], weight [out, in] and an optional bias [out]. */
EMBER_API Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});
/** x1^T A x2 + b per output feature for x1 [..., in1], x2 [..., in2], weight A [out, in1, in2]
 *  and an optional bias [out] (PyTorch's bilinear). */
EMBER_API Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight,
                          const Tensor& bias = {});
/** The activation fused_linear applies to the layer's output. */
enum class Activation {
  None,     ///< the linear layer's output as it is
  ReLU,     ///< max(y, 0)
  GELU,     ///< y * Phi(y), as gelu(y)
  GELUTanh  ///< gelu's tanh approximation, as gelu(y, "tanh")
};
/** activation(linear(x, weight, bias)), in one kernel when nothing is recorded for autograd and
 *  the device has it (Note [Fused linear layers] in core/ops/nn.cpp); else the composite. */
EMBER_API Tensor fused_linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
                              Activation activation);
/** Zeroes each element with probability p and scales the rest by 1 / (1 - p) when training;
 *  the identity otherwise. */
EMBER_API Tensor dropout(const Tensor& x, double p = 0.5, bool training = true,
                         Generator* gen = nullptr);
/** Dropout of whole channels (PyTorch's dropout1d/2d/3d): x is [N, C, *spatial] or unbatched
 *  [C, *spatial] with `spatial_dims` (1 to 3) spatial dims; each (sample, channel) is zeroed with
 *  probability p and the rest scaled by 1 / (1 - p) when training; the identity otherwise. */
EMBER_API Tensor feature_dropout(const Tensor& x, double p, int64_t spatial_dims,
                                 bool training = true, Generator* gen = nullptr);
/** Rows of weight [num, dim] picked by integer indices of any shape: result [..., dim]. Rows
 *  at padding_idx get no gradient. With max_norm, the rows looked up whose norm_type-norm
 *  exceeds it are first rescaled in place to max_norm (PyTorch's embedding renorm). With
 *  scale_grad_by_freq, a row's gradient is divided by how often the call looked it up. */
EMBER_API Tensor embedding(const Tensor& weight, const Tensor& indices,
                           std::optional<int64_t> padding_idx = {},
                           std::optional<double> max_norm = {}, double norm_type = 2.0,
                           bool scale_grad_by_freq = false);
/** Sums, means or maxima ("sum", "mean", "max") of bags of weight's rows (PyTorch's
 *  embedding_bag): 1-d indices with offsets (bag b starts at offsets[b]; the last bag runs to
 *  the end, or with include_last_offset ends at the last offset), or 2-d indices [bags, n]
 *  without. Entries equal to padding_idx are left out; per_sample_weights (the indices' shape,
 *  "sum" only) scale the rows; an empty bag is zeros. Result [bags, dim]. */
EMBER_API Tensor embedding_bag(const Tensor& weight, const Tensor& indices,
                               const Tensor& offsets = {}, std::string_view mode = "mean",
                               const Tensor& per_sample_weights = {},
                               bool include_last_offset = false,
                               std::optional<int64_t> padding_idx = {},
                               std::optional<double> max_norm = {}, double norm_type = 2.0);
/** Pads the last dims: pad = {left, right, top, bottom, ...} as in PyTorch; mode is
 *  "constant" (with value), "reflect", "replicate" or "circular". */
EMBER_API Tensor pad(const Tensor& x, IntList pad, std::string_view mode = "constant",
                     double value = 0.0);
/** How interpolate resizes: PyTorch's F.interpolate arguments. */
struct InterpolateOptions {
  InterpolateOptions() {}     // not an aggregate: interpolate(x, {h, w}) stays the size overload
  std::vector<int64_t> size;  ///< output spatial sizes: one for all dims, or one per dim
  std::vector<double> scale_factor;  ///< or multipliers: one for all dims, or one per dim
  /** "nearest", "nearest-exact", "linear" (3-d input), "bilinear", "bicubic" (4-d),
   *  "trilinear" (5-d) or "area". */
  std::string mode = "nearest";
  bool align_corners = false;           ///< corner pixels map onto each other (interpolating)
  bool recompute_scale_factor = false;  ///< source coordinates from in / out, not 1 / scale
  bool antialias = false;               ///< widen bilinear and bicubic filters when shrinking
};
/** Resizes the spatial dims of x [N, C, *spatial] (1 to 3 of them) as F.interpolate does
 *  (Note [interpolate as taps] in core/ops/nn.cpp); differentiable, on every backend. */
EMBER_API Tensor interpolate(const Tensor& x, const InterpolateOptions& options);
/** Resizes the spatial dims of x to `size` (one size for all dims, or one per dim). */
EMBER_API Tensor interpolate(const Tensor& x, IntList size, std::string_view mode = "nearest",
                             bool align_corners = false);
/** Resizes the spatial dims of x by `scale_factor` (output = floor(in * scale)). A template
 *  over floating types, so interpolate(x, {2}) stays a size and never reads as a scale. */
template <std::floating_point F>
Tensor interpolate(const Tensor& x, F scale_factor, std::string_view mode = "nearest",
                   bool align_corners = false) {
  InterpolateOptions o;
  o.scale_factor = {static_cast<double>(scale_factor)};
  o.mode = mode;
  o.align_corners = align_corners;
  return interpolate(x, o);
}
/** The sampling grid of a batch of affine transforms (F.affine_grid): theta [N, 2, 3] with
 *  size {N, C, H, W} gives [N, H, W, 2], theta [N, 3, 4] with size {N, C, D, H, W} gives
 *  [N, D, H, W, 3]; the (x, y[, z]) of each output position in [-1, 1], mapped by theta. */
EMBER_API Tensor affine_grid(const Tensor& theta, IntList size, bool align_corners = false);
/** Samples input [N, C, H, W] (or [N, C, D, H, W]) at the normalized points of grid
 *  [N, H_out, W_out, 2] (or [N, D_out, H_out, W_out, 3]) as F.grid_sample: mode "bilinear",
 *  "nearest" or "bicubic" (4-d only), padding_mode "zeros", "border" or "reflection"
 *  (Note [grid_sample as gathers] in core/ops/grid_sample.cpp); differentiable in input and
 *  grid, on every backend. */
EMBER_API Tensor grid_sample(const Tensor& input, const Tensor& grid,
                             std::string_view mode = "bilinear",
                             std::string_view padding_mode = "zeros", bool align_corners = false);
/** Cosine of the angle between x1 and x2 (broadcast) along dim: sum(x1 / max(|x1|, eps) *
 *  x2 / max(|x2|, eps)) over dim (PyTorch's F.cosine_similarity). */
EMBER_API Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1,
                                   double eps = 1e-8);
/** The p-norm of x1 - x2 + eps over the last dim of the broadcast (F.pairwise_distance). */
EMBER_API Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2,
                                   double eps = 1e-6, bool keepdim = false);
/** x / max(||x||_p along dim, eps) (F.normalize). */
EMBER_API Tensor normalize(const Tensor& x, double p = 2, int64_t dim = 1, double eps = 1e-12);
/** Sub-pixel rearrangement (Shi et al., 2016): [*, C r^2, H, W] into [*, C, H r, W r], each
 *  group of r^2 channels spread over an r x r block. */
EMBER_API Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor);
/** ShuffleNet's channel shuffle of x [N, C, ...]: the C channels as `groups` x C/groups,
 *  transposed, so each group takes one channel of every other. */
EMBER_API Tensor channel_shuffle(const Tensor& x, int64_t groups);
/** The inverse of pixel_shuffle: [*, C, H r, W r] into [*, C r^2, H, W]. */
EMBER_API Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor);

}  // namespace ember
