// LSTM and GRU: PyTorch's parameter names and shapes, outputs, final states and gradients equal
// to PyTorch's (fixtures/make_rnn_fixtures.py, run once with PyTorch), gradcheck through time,
// and the argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <ember/ember.h>
#include <ember/io.h>
#include <ember/nn.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::nn {
namespace {

using ember::testing::expect_error;
using ember::testing::values;

const StateDict& fixtures() {
  static const StateDict f = io::load(EMBER_NN_FIXTURES "/rnn.safetensors");
  return f;
}

const Tensor& fixture(const std::string& name) {
  const auto it = fixtures().find(name);
  EXPECT_NE(it, fixtures().end()) << name;
  return it->second;
}

// The module's state_dict from the fixture's "<prefix>.state." entries, loaded strictly.
void load_from_fixture(Module& m, const std::string& prefix) {
  StateDict sd;
  const std::string head = prefix + ".state.";
  for (const auto& [name, t] : fixtures()) {
    if (name.rfind(head, 0) == 0) sd[name.substr(head.size())] = t;
  }
  m.to(DType::Float64);
  m.load_state_dict(sd, /*strict=*/true);
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const auto g = values(got), w = values(want);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-10) << what << " at " << i;
}

// The same loss as the fixture script: sum(output * linspace(-1, 1)) + the sum of the states.
Tensor fixture_loss(const Tensor& y, std::initializer_list<Tensor> states) {
  Tensor loss = sum(mul(y, linspace(-1, 1, y.numel(), {DType::Float64}).view(y.sizes())));
  for (const Tensor& s : states) loss = add(loss, sum(s));
  return loss;
}

TEST(LSTM, MatchesPyTorchBidirectionalTwoLayersBatchFirst) {
  LSTM lstm(3, 4, {.num_layers = 2, .batch_first = true, .bidirectional = true});
  const auto sd = lstm.state_dict();
  EXPECT_EQ(sd.size(), 16u);  // 2 layers x 2 directions x (2 weights + 2 biases)
  EXPECT_EQ(sd.at("weight_ih_l0").sizes(), (Shape{16, 3}));
  EXPECT_EQ(sd.at("weight_ih_l1_reverse").sizes(), (Shape{16, 8}));
  EXPECT_EQ(sd.at("bias_hh_l1").sizes(), (Shape{16}));
  load_from_fixture(lstm, "lstm");
  Tensor x = fixture("lstm.input").clone().requires_grad_(true);
  auto [y, h, c] = lstm.forward(x, fixture("lstm.state_in0"), fixture("lstm.state_in1"));
  expect_close(y, fixture("lstm.output"), "output");
  expect_close(h, fixture("lstm.state_out0"), "h_n");
  expect_close(c, fixture("lstm.state_out1"), "c_n");
  fixture_loss(y, {h, c}).backward();
  expect_close(x.grad(), fixture("lstm.input_grad"), "input gradient");
  expect_close(lstm.named_parameters()[0].second.grad(), fixture("lstm.weight_ih_l0_grad"),
               "weight_ih_l0 gradient");
}

TEST(GRU, MatchesPyTorchWithoutBias) {
  GRU gru(2, 5, {.bias = false});
  EXPECT_EQ(gru.state_dict().size(), 2u);
  load_from_fixture(gru, "gru");
  Tensor x = fixture("gru.input").clone().requires_grad_(true);
  auto [y, h] = gru.forward(x, fixture("gru.state_in0"));
  expect_close(y, fixture("gru.output"), "output");
  expect_close(h, fixture("gru.state_out0"), "h_n");
  fixture_loss(y, {h}).backward();
  expect_close(x.grad(), fixture("gru.input_grad"), "input gradient");
}

TEST(GRU, MatchesPyTorchUnbatchedTwoLayers) {
  GRU gru(3, 2, {.num_layers = 2});
  load_from_fixture(gru, "gru2");
  Tensor x = fixture("gru2.input").clone().requires_grad_(true);
  auto [y, h] = gru.forward(x, fixture("gru2.state_in0"));
  expect_close(y, fixture("gru2.output"), "output");
  expect_close(h, fixture("gru2.state_out0"), "h_n");
  fixture_loss(y, {h}).backward();
  expect_close(x.grad(), fixture("gru2.input_grad"), "input gradient");
  const auto wg = values(fixture("gru2.weight_ih_l0_grad"));
  const auto got = values(gru.named_parameters()[0].second.grad());
  for (size_t i = 0; i < wg.size(); ++i) EXPECT_NEAR(got[i], wg[i], 1e-10);
}

TEST(RecurrentLayers, GradcheckThroughTime) {
  LSTM lstm(2, 3, {.bidirectional = true});
  GRU gru(2, 3, {.num_layers = 2});
  lstm.to(DType::Float64);
  gru.to(DType::Float64);
  const Tensor x = randn({4, 2, 2}, DType::Float64).requires_grad_(true);
  const Tensor h0 = randn({2, 2, 3}, DType::Float64).requires_grad_(true);
  const auto lstm_fn = [&](const std::vector<Tensor>& in) {
    return std::get<0>(lstm.forward(in[0], in[1], Tensor()));
  };
  EXPECT_TRUE(autograd::gradcheck(lstm_fn, {x, h0}).ok);
  const auto gru_fn = [&](const std::vector<Tensor>& in) {
    return std::get<1>(gru.forward(in[0], in[1]));
  };
  EXPECT_TRUE(autograd::gradcheck(gru_fn, {x, h0}).ok);
}

TEST(RecurrentLayers, RunUnderAutocast) {
  // The LSTM's recurrence is lowered with its input projection, as in PyTorch; the GRU's steps
  // are ops autocast covers one by one.
  LSTM lstm(3, 4);
  GRU gru(3, 4);
  const Tensor x = randn({5, 2, 3});
  Tensor y, want;
  {
    amp::autocast scope("cpu");
    y = lstm(x);
    EXPECT_EQ(y.dtype(), DType::BFloat16);
    EXPECT_EQ(gru(x).sizes(), (Shape{5, 2, 4}));
  }
  LSTM lowered(3, 4);
  lowered.load_state_dict(lstm.state_dict());
  lowered.to(DType::BFloat16);
  want = lowered(x.to(DType::BFloat16));
  const auto a = values(y), b = values(want);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 2e-2) << i;
}

TEST(RecurrentLayers, DefaultStatesInitAndArgumentChecks) {
  LSTM lstm(3, 8);
  const double k = 1 / std::sqrt(8.0);
  for (const Tensor& p : lstm.parameters()) {
    for (double v : values(p)) EXPECT_LE(std::abs(v), k);
  }
  const Tensor x = randn({5, 2, 3});
  EXPECT_EQ(lstm(x).sizes(), (Shape{5, 2, 8}));
  // Zero states by default: the same as passing zeros.
  EXPECT_EQ(values(lstm(x)),
            values(std::get<0>(lstm.forward(x, zeros({1, 2, 8}), zeros({1, 2, 8})))));
  EXPECT_EQ(lstm.extra_repr(), "3, 8");
  expect_error([&] { lstm(randn({5, 2, 4})); }, {"[nn.LSTM]", "3 input features", "[5, 2, 4]"});
  expect_error(
      [&] {
        lstm.forward(x, zeros({2, 2, 8}), Tensor());
      },
      {"[nn.LSTM]", "h0", "[1, 2, 8]", "[2, 2, 8]"});
  expect_error([] { GRU(0, 3); }, {"[nn.GRU]", "positive"});
  expect_error([] { GRU(2, 3, {.dropout = 1.5}); }, {"[nn.GRU]", "dropout", "1.5"});
  // Dropout between layers only in training.
  GRU deep(3, 4, {.num_layers = 2, .dropout = 0.5});
  deep.eval();
  EXPECT_EQ(values(deep(x)), values(deep(x)));
}

}  // namespace
}  // namespace ember::nn
