// LSTM, GRU and RNN: every layer and direction is one ember::rnn_layer, which a backend may run
// whole (cuDNN's RNN on the GPU) and the core otherwise composes from one input projection and
// the recurrence (Note [Whole recurrent layers in a backend] in core/ops/rnn.cpp). The cells
// (RNNCell, LSTMCell, GRUCell) are the same op over one step.
#include "ember/nn/rnn.h"

#include <cmath>
#include <utility>

#include <ember/ember.h>

#include "ember/nn/init.h"

namespace ember::nn {
namespace {

/** The gates per hidden unit of `mode`'s cell, as PyTorch stacks them in weight_ih. */
int64_t gates_of(RnnMode mode) {
  return mode == RnnMode::LSTM ? 4 : mode == RnnMode::GRU ? 3 : 1;
}

/** The Elman mode PyTorch's nonlinearity names ("tanh" or "relu"); `who` names the module. */
RnnMode elman_mode(const std::string& nonlinearity, const char* who) {
  EMBER_CHECK(nonlinearity == "tanh" || nonlinearity == "relu",
              "[nn.{}] unknown nonlinearity: got '{}' (expected 'tanh' or 'relu')", who,
              nonlinearity);
  return nonlinearity == "tanh" ? RnnMode::RNN_TANH : RnnMode::RNN_RELU;
}

/** Every parameter in `w` drawn from U(-1/sqrt(hidden), 1/sqrt(hidden)), PyTorch's default. */
void init_recurrent(const std::vector<Tensor*>& w, int64_t hidden) {
  const double k = 1.0 / std::sqrt(static_cast<double>(hidden));
  for (Tensor* t : w) {
    if (t->defined()) init::uniform_(*t, -k, k);
  }
}

}  // namespace

// PyTorch's parameter names and layouts (weight_ih_l{k}[_reverse] [gates * H, in],
// weight_hh_l{k} [gates * H, H], bias_ih_l{k}, bias_hh_l{k}, registered layer by layer, forward
// before reverse) make state_dicts move unchanged.

RNNBase::RNNBase(std::string type_name, RnnMode mode, int64_t input, int64_t hidden, RNNOptions o)
    : Module(std::move(type_name)),
      input_size(input),
      hidden_size(hidden),
      options(o),
      mode_(mode) {
  const int64_t gates = gates_of(mode);
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
  for (const auto& w : weights_) init_recurrent(w, hidden_size);
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
  const bool has_cell = mode_ == RnnMode::LSTM;
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
      auto [out, h, c] = rnn_layer(mode_, x, *w[0], *w[1], b_ih, b_hh, h_init.select(0, at),
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

LSTM::LSTM(int64_t input, int64_t hidden, RNNOptions o)
    : RNNBase("LSTM", RnnMode::LSTM, input, hidden, o) {}

std::tuple<Tensor, Tensor, Tensor> LSTM::forward(const Tensor& input, const Tensor& h0,
                                                 const Tensor& c0) {
  return run(input, h0, c0);
}

Tensor LSTM::forward(const Tensor& input) {
  return std::get<0>(forward(input, Tensor(), Tensor()));
}

GRU::GRU(int64_t input, int64_t hidden, RNNOptions o)
    : RNNBase("GRU", RnnMode::GRU, input, hidden, o) {}

std::tuple<Tensor, Tensor> GRU::forward(const Tensor& input, const Tensor& h0) {
  const auto r = run(input, h0, Tensor());
  return {std::get<0>(r), std::get<1>(r)};
}

Tensor GRU::forward(const Tensor& input) {
  return std::get<0>(forward(input, Tensor()));
}

RNN::RNN(int64_t input, int64_t hidden, RNNOptions o, const std::string& nonlinearity)
    : RNNBase("RNN", elman_mode(nonlinearity, "RNN"), input, hidden, o),
      nonlinearity(nonlinearity) {}

std::tuple<Tensor, Tensor> RNN::forward(const Tensor& input, const Tensor& h0) {
  const auto r = run(input, h0, Tensor());
  return {std::get<0>(r), std::get<1>(r)};
}

Tensor RNN::forward(const Tensor& input) {
  return std::get<0>(forward(input, Tensor()));
}

// The cells register PyTorch's four parameters under its names (weight_ih, weight_hh, bias_ih,
// bias_hh; the biases as empty slots without bias, as PyTorch registers None), so state_dicts
// move unchanged, and run one step of rnn_layer: the recurrent layers' checks, kernels, fused
// LSTM recurrence and derivatives, with no second copy of the gate equations.

RNNCellBase::RNNCellBase(std::string type_name, RnnMode mode, int64_t input, int64_t hidden,
                         bool with_bias)
    : Module(std::move(type_name)),
      input_size(input),
      hidden_size(hidden),
      bias(with_bias),
      mode_(mode) {
  EMBER_CHECK(input > 0 && hidden > 0,
              "[nn.{}] input_size and hidden_size must be positive: got {} and {}",
              this->type_name(), input, hidden);
  const int64_t gates = gates_of(mode);
  weight_ih_ = &register_parameter("weight_ih", empty({gates * hidden, input}));
  weight_hh_ = &register_parameter("weight_hh", empty({gates * hidden, hidden}));
  bias_ih_ = &register_parameter("bias_ih", with_bias ? empty({gates * hidden}) : Tensor());
  bias_hh_ = &register_parameter("bias_hh", with_bias ? empty({gates * hidden}) : Tensor());
  reset_parameters();
}

void RNNCellBase::reset_parameters() {
  init_recurrent({weight_ih_, weight_hh_, bias_ih_, bias_hh_}, hidden_size);
}

std::string RNNCellBase::extra_repr() const {
  return fmt::format("{}, {}{}", input_size, hidden_size, bias ? "" : ", bias=False");
}

std::tuple<Tensor, Tensor> RNNCellBase::step(const Tensor& input, const Tensor& hx,
                                             const Tensor& cx) {
  const std::string name = "nn." + type_name();
  const bool lstm = mode_ == RnnMode::LSTM;
  EMBER_CHECK_TYPE(input.defined(), "[{}] undefined input", name);
  EMBER_CHECK(input.dim() == 1 || input.dim() == 2,
              "[{}] expected a 1-d (unbatched) or 2-d input: got shape {}", name,
              shape_str(input.sizes()));
  EMBER_CHECK(input.size(input.dim() - 1) == input_size,
              "[{}] expected {} input features (the last dim): got shape {}", name, input_size,
              shape_str(input.sizes()));
  const bool batched = input.dim() == 2;
  const Tensor x = batched ? input : input.unsqueeze(0);  // [N, I]
  const Shape state_shape = {x.size(0), hidden_size};
  const auto state = [&](const Tensor& s, const char* what) {
    if (!s.defined()) return zeros(state_shape, {x.dtype(), x.device()});
    EMBER_CHECK(s.sizes() == (batched ? state_shape : Shape{hidden_size}),
                "[{}] expected {} of shape {}: got {}", name, what,
                shape_str(batched ? state_shape : Shape{hidden_size}), shape_str(s.sizes()));
    return batched ? s : s.unsqueeze(0);
  };
  const Tensor h0 = state(hx, lstm ? "hx[0]" : "hx");
  const Tensor c0 = lstm ? state(cx, "hx[1]") : Tensor();
  auto [y, h, c] =
      rnn_layer(mode_, x.unsqueeze(0), *weight_ih_, *weight_hh_, *bias_ih_, *bias_hh_, h0, c0);
  if (!batched) {
    h = h.squeeze(0);
    if (lstm) c = c.squeeze(0);
  }
  return {h, c};
}

RNNCell::RNNCell(int64_t input, int64_t hidden, bool with_bias, const std::string& nonlinearity)
    : RNNCellBase("RNNCell", elman_mode(nonlinearity, "RNNCell"), input, hidden, with_bias),
      nonlinearity(nonlinearity) {}

Tensor RNNCell::forward(const Tensor& input, const Tensor& hx) {
  return std::get<0>(step(input, hx, Tensor()));
}

Tensor RNNCell::forward(const Tensor& input) {
  return forward(input, Tensor());
}

std::string RNNCell::extra_repr() const {
  std::string s = RNNCellBase::extra_repr();
  if (nonlinearity != "tanh") s += fmt::format(", nonlinearity={}", nonlinearity);
  return s;
}

LSTMCell::LSTMCell(int64_t input, int64_t hidden, bool with_bias)
    : RNNCellBase("LSTMCell", RnnMode::LSTM, input, hidden, with_bias) {}

std::tuple<Tensor, Tensor> LSTMCell::forward(const Tensor& input, const Tensor& hx,
                                             const Tensor& cx) {
  return step(input, hx, cx);
}

Tensor LSTMCell::forward(const Tensor& input) {
  return std::get<0>(step(input, Tensor(), Tensor()));
}

GRUCell::GRUCell(int64_t input, int64_t hidden, bool with_bias)
    : RNNCellBase("GRUCell", RnnMode::GRU, input, hidden, with_bias) {}

Tensor GRUCell::forward(const Tensor& input, const Tensor& hx) {
  return std::get<0>(step(input, hx, Tensor()));
}

Tensor GRUCell::forward(const Tensor& input) {
  return forward(input, Tensor());
}

}  // namespace ember::nn
