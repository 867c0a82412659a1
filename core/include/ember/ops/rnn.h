// Recurrent layers' ops: the LSTM recurrence over a whole sequence (nn::LSTM runs one per layer
// and direction).
#pragma once

#include <tuple>

#include "ember/tensor/tensor.h"

namespace ember {

/** One LSTM layer in one direction over L steps, PyTorch's gates (i, f, g, o): gates_x
 *  [L, N, 4H] is the input projection x W_ih^T + b_ih + b_hh, w_hh [4H, H] the recurrent
 *  weight, h0 and c0 [N, H] the initial state. Returns {h, c}, each [L, N, H]: the hidden and
 *  cell state after every step, walked from step L - 1 down to 0 when `reverse`. */
EMBER_API std::tuple<Tensor, Tensor> lstm_layer(const Tensor& gates_x, const Tensor& w_hh,
                                                const Tensor& h0, const Tensor& c0,
                                                bool reverse = false);

}  // namespace ember
