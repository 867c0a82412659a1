// Recurrent layers' ops: a whole LSTM, GRU or Elman RNN layer in one direction (nn::LSTM,
// nn::GRU and nn::RNN run one per layer and direction; the cells one with a single step), and the
// LSTM and GRU recurrences it is made of where no backend runs the whole layer.
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

/** One GRU layer in one direction over L steps, PyTorch's gates (r, z, n): gates_x [L, N, 3H]
 *  is the input projection x W_ih^T + b_ih, w_hh [3H, H] and b_hh [3H] (undefined: no bias) the
 *  recurrent weight and bias, h0 [N, H] the initial state. Returns h [L, N, H], the hidden
 *  state after every step, walked from step L - 1 down to 0 when `reverse`. */
EMBER_API Tensor gru_layer(const Tensor& gates_x, const Tensor& w_hh, const Tensor& b_hh,
                           const Tensor& h0, bool reverse = false);

/** The cell of a recurrent layer: PyTorch's nn.LSTM, nn.GRU, or nn.RNN with tanh or relu. */
enum class RnnMode : int64_t { LSTM = 0, GRU = 1, RNN_TANH = 2, RNN_RELU = 3 };

/** One whole recurrent layer in one direction over L steps, as PyTorch's nn.LSTM / nn.GRU /
 *  nn.RNN run each layer and direction, with G = 4 gates (i, f, g, o) for the LSTM, 3 (r, z, n)
 *  for the GRU and 1 for the Elman RNN (h = act(x W_ih^T + b_ih + h_prev W_hh^T + b_hh)):
 *  x [L, N, I], w_ih [G H, I], w_hh [G H, H], b_ih and b_hh [G H] (both undefined for a
 *  layer without bias), h0 [N, H], and for the LSTM c0 [N, H] (undefined for the others).
 *  Returns {y [L, N, H], the hidden state after every step; h_n [N, H], the last step's; c_n
 *  [N, H], the LSTM's last cell state (undefined for the others)}. With `reverse` the steps run
 * from L - 1 down to 0, so h_n is y[0]. */
EMBER_API std::tuple<Tensor, Tensor, Tensor> rnn_layer(RnnMode mode, const Tensor& x,
                                                       const Tensor& w_ih, const Tensor& w_hh,
                                                       const Tensor& b_ih, const Tensor& b_hh,
                                                       const Tensor& h0, const Tensor& c0 = {},
                                                       bool reverse = false);

}  // namespace ember
