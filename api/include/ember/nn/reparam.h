// Weight reparametrizations as PyTorch's torch.nn.utils has them: weight_norm and spectral_norm
// replace a layer's parameter by others it is computed from before every forward (Note [Weight
// reparametrizations as pre-hooks] in api/nn/reparam.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ember/nn/module.h"

namespace ember::nn {

/** PyTorch's nn.utils.weight_norm: parameter `name` of `module` becomes `name`_g (its norms over
 *  every dim but `dim`) and `name`_v (its direction), and `name` is recomputed as
 *  g * v / ||v|| before every forward. No dim (or -1, as PyTorch reads it): one norm over the
 *  whole tensor. Returns the module. */
Module& weight_norm(Module& module, const std::string& name = "weight",
                    std::optional<int64_t> dim = 0);

/** Undoes weight_norm: `name` is a parameter again, holding the current g * v / ||v||. */
Module& remove_weight_norm(Module& module, const std::string& name = "weight");

/** PyTorch's nn.utils.spectral_norm: parameter `name` becomes `name`_orig, with buffers `name`_u
 *  and `name`_v (normalised random vectors), and `name` is recomputed as `name`_orig / sigma before
 *  every forward, sigma the largest singular value estimated by `n_power_iterations` steps of
 *  power iteration (in training mode only; eval reuses u and v). `dim` is the dim of the output
 *  features: by default 1 for the transposed convolutions, else 0. Returns the module. */
Module& spectral_norm(Module& module, const std::string& name = "weight",
                      int64_t n_power_iterations = 1, double eps = 1e-12,
                      std::optional<int64_t> dim = std::nullopt);

/** Undoes spectral_norm: `name` is a parameter again, holding the current `name`_orig / sigma. */
Module& remove_spectral_norm(Module& module, const std::string& name = "weight");

}  // namespace ember::nn
