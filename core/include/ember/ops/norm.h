// Normalisation layers' ops: batch_norm, instance_norm, layer_norm, rms_norm, group_norm,
// local_response_norm.
#pragma once

#include <optional>

#include "ember/tensor/tensor.h"

namespace ember {

/** Batch normalisation of x [N, C, ...] over every dim but 1. Training uses the batch
 *  statistics and, when given, updates running_mean/running_var in place (unbiased variance,
 *  new = (1 - momentum) * old + momentum * batch); eval uses the running statistics. */
EMBER_API Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                            const Tensor& running_mean, const Tensor& running_var, bool training,
                            double momentum = 0.1, double eps = 1e-5);
/** Layer normalisation over the trailing dims `normalized_shape`, with optional elementwise
 *  weight and bias of that shape. */
EMBER_API Tensor layer_norm(const Tensor& x, IntList normalized_shape, const Tensor& weight = {},
                            const Tensor& bias = {}, double eps = 1e-5);
/** Root-mean-square normalisation over the trailing dims `normalized_shape`: x / sqrt(mean(x^2)
 *  + eps) times an optional elementwise weight; no eps: the input dtype's machine epsilon, as
 *  PyTorch's rms_norm. */
EMBER_API Tensor rms_norm(const Tensor& x, IntList normalized_shape, const Tensor& weight = {},
                          std::optional<double> eps = std::nullopt);
/** Instance normalisation of x [N, C, ...] (at least 3-d): each sample's channels over their
 *  spatial dims with `use_input_stats`, updating the optional running statistics [C] in place as
 *  batch_norm does; without it, normalised with the running statistics. Optional weight and bias
 *  [C]. */
EMBER_API Tensor instance_norm(const Tensor& x, const Tensor& weight = {}, const Tensor& bias = {},
                               const Tensor& running_mean = {}, const Tensor& running_var = {},
                               bool use_input_stats = true, double momentum = 0.1,
                               double eps = 1e-5);
/** Group normalisation of x [N, C, ...] over `num_groups` groups of channels, with optional
 *  per-channel weight and bias [C]. */
EMBER_API Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {},
                            const Tensor& bias = {}, double eps = 1e-5);

/** Local response normalisation of x [N, C, ...] (at least 3-d) across channels: x / (k +
 *  alpha * mean of x^2 over the `size` channels around each, zeros beyond the ends)^beta. */
EMBER_API Tensor local_response_norm(const Tensor& x, int64_t size, double alpha = 1e-4,
                                     double beta = 0.75, double k = 1.0);

}  // namespace ember
