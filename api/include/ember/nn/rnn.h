// Recurrent layers: LSTM and GRU, with PyTorch's parameter names, layouts and semantics.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

/** Options of LSTM and GRU beyond the input and hidden sizes. */
struct RNNOptions {
  int64_t num_layers = 1;      ///< stacked layers, each fed the previous one's output
  bool bias = true;            ///< learn bias_ih and bias_hh
  bool batch_first = false;    ///< input and output are [N, L, ...] instead of [L, N, ...]
  double dropout = 0.0;        ///< dropout on every layer's output but the last, in training
  bool bidirectional = false;  ///< a second direction per layer, run from the end
};

/** What LSTM and GRU share: the parameters of every layer and direction, and the loop. */
class RNNBase : public Module {
 public:
  /** A stack of recurrent layers of `gates` gates each (LSTM 4, GRU 3). */
  RNNBase(std::string type_name, int64_t gates, int64_t input_size, int64_t hidden_size,
          RNNOptions options);
  std::string extra_repr() const override;
  /** Resets every weight and bias to U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)). */
  void reset_parameters();

  const int64_t input_size, hidden_size;
  const RNNOptions options;

 protected:
  /** Runs every layer and direction over `input` from the states `h0` (and `c0` for the LSTM;
   *  undefined: zeros), each through ember::rnn_layer; returns the output, h_n and c_n
   *  (undefined for the GRU). */
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& input, const Tensor& h0, const Tensor& c0);

 private:
  int64_t gates_;
  /** Per layer and direction: weight_ih, weight_hh, bias_ih, bias_hh (PyTorch's order). */
  std::vector<std::vector<Tensor*>> weights_;
};

/** Long short-term memory (gates i, f, g, o as PyTorch stacks them in weight_ih_l0). */
class LSTM : public RNNBase {
 public:
  /** LSTM from `input_size` features to `hidden_size` per direction. */
  LSTM(int64_t input_size, int64_t hidden_size, RNNOptions options = {});
  /** The output [L, N, D * hidden] (or batch-first, or unbatched) and (h_n, c_n), each
   *  [num_layers * D, N, hidden]; undefined h0 / c0 are zeros. */
  std::tuple<Tensor, Tensor, Tensor> forward(const Tensor& input, const Tensor& h0,
                                             const Tensor& c0);
  /** The output alone, from zero states. */
  Tensor forward(const Tensor& input) override;
};

/** Gated recurrent unit (gates r, z, n as PyTorch stacks them). */
class GRU : public RNNBase {
 public:
  /** GRU from `input_size` features to `hidden_size` per direction. */
  GRU(int64_t input_size, int64_t hidden_size, RNNOptions options = {});
  /** The output and h_n [num_layers * D, N, hidden]; an undefined h0 is zeros. */
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& h0);
  /** The output alone, from a zero state. */
  Tensor forward(const Tensor& input) override;
};

}  // namespace ember::nn
