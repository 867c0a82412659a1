// Recurrent layers: LSTM, GRU and the Elman RNN, and their one-step cells, with PyTorch's
// parameter names, layouts and semantics.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/nn/module.h"
#include "ember/ops/rnn.h"

namespace ember::nn {

/** Options of LSTM, GRU and RNN beyond the input and hidden sizes. */
struct RNNOptions {
  int64_t num_layers = 1;      ///< stacked layers, each fed the previous one's output
  bool bias = true;            ///< learn bias_ih and bias_hh
  bool batch_first = false;    ///< input and output are [N, L, ...] instead of [L, N, ...]
  double dropout = 0.0;        ///< dropout on every layer's output but the last, in training
  bool bidirectional = false;  ///< a second direction per layer, run from the end
  /** LSTM only: with P > 0 the hidden state is projected to P features by weight_hr (PyTorch's
   *  LSTM with projections); 0 for none. */
  int64_t proj_size = 0;
};

/** A batch of sequences of different lengths packed time-major, as PyTorch's PackedSequence:
 *  at each step t, step t of every sequence longer than t, the longest sequences first. */
struct PackedSequence {
  Tensor data;         ///< [sum of the lengths, *]: the steps, time-major, in sorted order
  Tensor batch_sizes;  ///< int64 [longest length] on the CPU: how many sequences are longer than t
  /** int64 [N]: the batch index of the sequence in each sorted place (undefined: the batch was
   *  sorted longest first already). */
  Tensor sorted_indices;
  Tensor unsorted_indices;  ///< int64 [N]: each sequence's sorted place (sorted_indices' inverse)
};

/** Packs `input` [L, N, *] ([N, L, *] with batch_first) whose sequence n is lengths[n] steps
 *  long (1 <= lengths[n] <= L; integers, any device); with enforce_sorted the lengths must not
 *  increase, else the batch is sorted longest first (stably) and the order kept. */
PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths,
                                    bool batch_first = false, bool enforce_sorted = true);

/** The padded batch [T, N, *] ([N, T, *] with batch_first) of `sequence` in its original order,
 *  steps past each length set to padding_value, T the longest length or total_length; and the
 *  lengths, int64 [N] on the CPU. */
std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence,
                                               bool batch_first = false, double padding_value = 0.0,
                                               std::optional<int64_t> total_length = {});

/** Packs sequences [L_i, *] (pad_sequence, then pack_padded_sequence with their lengths). */
PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted = true);

/** What LSTM, GRU and RNN share: the parameters of every layer and direction, and the loop. */
class RNNBase : public Module {
 public:
  /** A stack of recurrent layers of `mode`'s cell (gates: LSTM 4, GRU 3, Elman RNN 1). */
  RNNBase(std::string type_name, RnnMode mode, int64_t input_size, int64_t hidden_size,
          RNNOptions options);
  std::string extra_repr() const override;
  /** Resets every weight and bias to U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)). */
  void reset_parameters();

  const int64_t input_size, hidden_size;
  const RNNOptions options;

 protected:
  /** Runs every layer and direction over `input` from the states `h0` (and `c0` for the LSTM;
   *  undefined: zeros), each through ember::rnn_layer; returns the output, h_n and c_n
   *  (undefined but for the LSTM). */
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& input, const Tensor& h0, const Tensor& c0);
  /** run() over packed sequences, each only over its own steps (Note [Packed sequences through
   *  whole layers] in api/nn/rnn.cpp); h0 / c0 and the states returned are in the batch's
   *  original order, as PyTorch's. */
  std::tuple<PackedSequence, Tensor, Tensor> run(const PackedSequence& input, const Tensor& h0,
                                                 const Tensor& c0);

 private:
  RnnMode mode_;
  /** Per layer and direction: weight_ih, weight_hh, bias_ih, bias_hh (no_bias_ without bias),
   *  then weight_hr with projections (PyTorch's order). */
  std::vector<std::vector<Tensor*>> weights_;
  Tensor no_bias_;  ///< undefined: the biases of a layer without bias
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
  /** The same over packed sequences: the output packed alike, and (h_n, c_n) of each sequence's
   *  last step. */
  std::tuple<PackedSequence, Tensor, Tensor> forward(const PackedSequence& input, const Tensor& h0,
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
  /** The same over packed sequences: the output packed alike, and h_n of each one's last step. */
  std::tuple<PackedSequence, Tensor> forward(const PackedSequence& input, const Tensor& h0);
  /** The output alone, from a zero state. */
  Tensor forward(const Tensor& input) override;
};

/** Elman RNN (PyTorch's nn.RNN): h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh). */
class RNN : public RNNBase {
 public:
  /** RNN from `input_size` features to `hidden_size` per direction; `nonlinearity` is "tanh"
   *  or "relu". */
  RNN(int64_t input_size, int64_t hidden_size, RNNOptions options = {},
      const std::string& nonlinearity = "tanh");
  /** The output and h_n [num_layers * D, N, hidden]; an undefined h0 is zeros. */
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& h0);
  /** The same over packed sequences: the output packed alike, and h_n of each one's last step. */
  std::tuple<PackedSequence, Tensor> forward(const PackedSequence& input, const Tensor& h0);
  /** The output alone, from a zero state. */
  Tensor forward(const Tensor& input) override;

  const std::string nonlinearity;
};

/** What RNNCell, LSTMCell and GRUCell share: PyTorch's four parameters and one step. */
class RNNCellBase : public Module {
 public:
  /** A cell of `mode`'s kind (gates: LSTM 4, GRU 3, Elman 1) with weight_ih [gates * hidden,
   *  input], weight_hh [gates * hidden, hidden] and, with `bias`, bias_ih and bias_hh. */
  RNNCellBase(std::string type_name, RnnMode mode, int64_t input_size, int64_t hidden_size,
              bool bias);
  std::string extra_repr() const override;
  /** Resets every weight and bias to U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)). */
  void reset_parameters();

  const int64_t input_size, hidden_size;
  const bool bias;

 protected:
  /** One step of ember::rnn_layer from `input` [N, input] (or unbatched [input]) and the states
   *  `hx` (and `cx` for the LSTM; undefined: zeros) of shape [N, hidden] (or [hidden]); returns
   *  the next h and c (undefined but for the LSTM), batched as the input is. */
  std::tuple<Tensor, Tensor> step(const Tensor& input, const Tensor& hx, const Tensor& cx);

 private:
  RnnMode mode_;
  Tensor *weight_ih_, *weight_hh_, *bias_ih_ = nullptr, *bias_hh_ = nullptr;
};

/** One step of an Elman RNN (PyTorch's nn.RNNCell): h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh). */
class RNNCell : public RNNCellBase {
 public:
  /** RNNCell from `input_size` to `hidden_size` features; `nonlinearity` is "tanh" or "relu". */
  RNNCell(int64_t input_size, int64_t hidden_size, bool bias = true,
          const std::string& nonlinearity = "tanh");
  /** h' [N, hidden] (or [hidden] for an unbatched input); an undefined hx is zeros. */
  Tensor forward(const Tensor& input, const Tensor& hx);
  /** h' from a zero state. */
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const std::string nonlinearity;
};

/** One step of an LSTM (PyTorch's nn.LSTMCell, gates i, f, g, o). */
class LSTMCell : public RNNCellBase {
 public:
  /** LSTMCell from `input_size` to `hidden_size` features. */
  LSTMCell(int64_t input_size, int64_t hidden_size, bool bias = true);
  /** (h', c'), each [N, hidden] (or [hidden] for an unbatched input); undefined hx / cx are
   *  zeros. */
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx, const Tensor& cx);
  /** h' from zero states. */
  Tensor forward(const Tensor& input) override;
};

/** One step of a GRU (PyTorch's nn.GRUCell, gates r, z, n). */
class GRUCell : public RNNCellBase {
 public:
  /** GRUCell from `input_size` to `hidden_size` features. */
  GRUCell(int64_t input_size, int64_t hidden_size, bool bias = true);
  /** h' [N, hidden] (or [hidden] for an unbatched input); an undefined hx is zeros. */
  Tensor forward(const Tensor& input, const Tensor& hx);
  /** h' from a zero state. */
  Tensor forward(const Tensor& input) override;
};

}  // namespace ember::nn
