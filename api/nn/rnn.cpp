// LSTM and GRU: every layer and direction is one ember::rnn_layer, which a backend may run whole
// (cuDNN's RNN on the GPU) and the core otherwise composes from one input projection and the
// recurrence (Note [Whole recurrent layers in a backend] in core/ops/rnn.cpp).
#include "ember/nn/rnn.h"

#include <cmath>
#include <utility>

#include <ember/ember.h>

#include "ember/nn/init.h"

namespace ember::nn {
// PyTorch's parameter names and layouts (weight_ih_l{k}[_reverse] [gates * H, in],
// weight_hh_l{k} [gates * H, H], bias_ih_l{k}, bias_hh_l{k}, registered layer by layer, forward
// before reverse) make state_dicts move unchanged.

RNNBase::RNNBase(std::string type_name, int64_t gates, int64_t input, int64_t hidden, RNNOptions o)
    : Module(std::move(type_name)),
      input_size(input),
      hidden_size(hidden),
      options(o),
      gates_(gates) {
  EMBER_CHECK(input > 0 && hidden > 0 && o.num_layers > 0,
              "[nn.{}] input_size, hidden_size and num_layers must be positive: got {}, {}, {}",
              this->type_name(), input, hidden, o.num_layers);
  EMBER_CHECK(o.dropout >= 0 && o.dropout <= 1, "[nn.{}] dropout must be in [0, 1]: got {}",
              this->type_name(), o.dropout);
  const int64_t dirs = o.bidirectional ? 2 : 1;
  for (int64_t layer = 0; layer < o.num_layers; ++layer) {
    const int64_t in = layer == 0 ? input : hidden * dirs;
    for (int64_t d = 0; d < dirs; ++d) {
      const std::string suffix = fmt::format("_l{}{}", layer, d == 1 ? "_reverse" : "");
      std::vector<Tensor*> w;
      w.push_back(&register_parameter("weight_ih" + suffix, empty({gates * hidden, in})));
      w.push_back(&register_parameter("weight_hh" + suffix, empty({gates * hidden, hidden})));
      if (o.bias) {
        w.push_back(&register_parameter("bias_ih" + suffix, empty({gates * hidden})));
        w.push_back(&register_parameter("bias_hh" + suffix, empty({gates * hidden})));
      }
      weights_.push_back(std::move(w));
    }
  }
  reset_parameters();
}

void RNNBase::reset_parameters() {
  const double k = 1.0 / std::sqrt(static_cast<double>(hidden_size));
  for (auto& w : weights_) {
    for (Tensor* t : w) init::uniform_(*t, -k, k);
  }
}

std::string RNNBase::extra_repr() const {
  std::string s = fmt::format("{}, {}", input_size, hidden_size);
  if (options.num_layers != 1) s += fmt::format(", num_layers={}", options.num_layers);
  if (!options.bias) s += ", bias=False";
  if (options.batch_first) s += ", batch_first=True";
  if (options.dropout != 0) s += fmt::format(", dropout={}", options.dropout);
  if (options.bidirectional) s += ", bidirectional=True";
  return s;
}

std::tuple<Tensor, Tensor, Tensor> RNNBase::run(const Tensor& input, const Tensor& h0,
                                                const Tensor& c0) {
  const std::string name = "nn." + type_name();
  const bool has_cell = gates_ == 4;
  const RnnMode mode = has_cell ? RnnMode::LSTM : RnnMode::GRU;
  EMBER_CHECK_TYPE(input.defined(), "[{}] undefined input", name);
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3,
              "[{}] expected a 2-d (unbatched) or 3-d input: got shape {}", name,
              shape_str(input.sizes()));
  EMBER_CHECK(input.size(input.dim() - 1) == input_size,
              "[{}] expected {} input features (the last dim): got shape {}", name, input_size,
              shape_str(input.sizes()));
  const bool batched = input.dim() == 3;
  // [L, N, I] from here on.
  Tensor x = batched ? (options.batch_first ? input.transpose(0, 1) : input) : input.unsqueeze(1);
  const int64_t batch = x.size(1), dirs = options.bidirectional ? 2 : 1;
  const Shape state_shape = {options.num_layers * dirs, batch, hidden_size};
  const auto state = [&](const Tensor& s, const char* what) {
    if (!s.defined()) return zeros(state_shape, {x.dtype(), x.device()});
    const Tensor b = batched ? s : s.unsqueeze(1);
    EMBER_CHECK(b.sizes() == state_shape, "[{}] expected {} of shape {}: got {}", name, what,
                shape_str(batched ? state_shape : Shape{state_shape[0], state_shape[2]}),
                shape_str(s.sizes()));
    return b;
  };
  const Tensor h_init = state(h0, "h0"), c_init = has_cell ? state(c0, "c0") : Tensor();
  std::vector<Tensor> h_n, c_n;
  for (int64_t layer = 0; layer < options.num_layers; ++layer) {
    std::vector<Tensor> outputs;
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t at = layer * dirs + d;
      const std::vector<Tensor*>& w = weights_[static_cast<size_t>(at)];
      const Tensor b_ih = options.bias ? *w[2] : Tensor(), b_hh = options.bias ? *w[3] : Tensor();
      auto [out, h, c] = rnn_layer(mode, x, *w[0], *w[1], b_ih, b_hh, h_init.select(0, at),
                                   has_cell ? c_init.select(0, at) : Tensor(), d == 1);
      outputs.push_back(out);
      h_n.push_back(h);
      if (has_cell) c_n.push_back(c);
    }
    x = dirs == 2 ? cat(outputs, 2) : outputs[0];
    if (options.dropout > 0 && is_training() && layer + 1 < options.num_layers) {
      x = dropout(x, options.dropout, true);
    }
  }
  Tensor output = batched ? (options.batch_first ? x.transpose(0, 1) : x) : x.squeeze(1);
  Tensor hn = stack(h_n, 0), cn = has_cell ? stack(c_n, 0) : Tensor();
  if (!batched) {
    hn = hn.squeeze(1);
    if (has_cell) cn = cn.squeeze(1);
  }
  return {output, hn, cn};
}

LSTM::LSTM(int64_t input, int64_t hidden, RNNOptions o) : RNNBase("LSTM", 4, input, hidden, o) {}

std::tuple<Tensor, Tensor, Tensor> LSTM::forward(const Tensor& input, const Tensor& h0,
                                                 const Tensor& c0) {
  return run(input, h0, c0);
}

Tensor LSTM::forward(const Tensor& input) {
  return std::get<0>(forward(input, Tensor(), Tensor()));
}

GRU::GRU(int64_t input, int64_t hidden, RNNOptions o) : RNNBase("GRU", 3, input, hidden, o) {}

std::tuple<Tensor, Tensor> GRU::forward(const Tensor& input, const Tensor& h0) {
  const auto r = run(input, h0, Tensor());
  return {std::get<0>(r), std::get<1>(r)};
}

Tensor GRU::forward(const Tensor& input) {
  return std::get<0>(forward(input, Tensor()));
}

}  // namespace ember::nn
