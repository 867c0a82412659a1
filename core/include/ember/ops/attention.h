// Attention: scaled_dot_product_attention (PyTorch's torch.nn.functional one).
#pragma once

#include <optional>

#include "ember/ops/factory.h"
#include "ember/tensor/tensor.h"

namespace ember {

/** softmax(q k^T * scale + mask) v for q [..., L, E], k [..., S, E], v [..., S, Ev] (batch dims
 *  broadcast) -> [..., L, Ev]. A bool attn_mask keeps the scores where true, a float one is added
 *  to them; it broadcasts to [..., L, S]. is_causal keeps key j <= query i (top-left aligned, as
 *  PyTorch) and excludes attn_mask. scale defaults to 1 / sqrt(E). dropout_p > 0 drops
 *  attention weights (drawn from `gen`); pass 0 outside training. A row with every key masked
 *  gives zeros. */
EMBER_API Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                              const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                              bool is_causal = false,
                                              std::optional<double> scale = std::nullopt,
                                              Generator* gen = nullptr);

}  // namespace ember
