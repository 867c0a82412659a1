// LSTM and GRU: PyTorch's parameter names and shapes, outputs, final states and gradients equal
// to PyTorch's (fixtures/make_rnn_fixtures.py, run once with PyTorch), gradcheck through time,
// and the argument checks. RNN and the cells (RNNCell, LSTMCell, GRUCell): outputs against
// PyTorch's cell equations written out as float64 loops, gradcheck, and the argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <ember/ember.h>
#include <ember/io.h>
#include <ember/nn.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::nn {
namespace {

using ember::testing::expect_error;
using ember::testing::make;
using ember::testing::values;
using Vec = std::vector<double>;

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

// Loads the PyTorch fixture `name`'s weights into gru, runs it forward and backward, and checks
// the output, the final state and the input gradient against PyTorch's.
void expect_gru_matches_fixture(GRU& gru, const std::string& name) {
  load_from_fixture(gru, name);
  Tensor x = fixture(name + ".input").clone().requires_grad_(true);
  auto [y, h] = gru.forward(x, fixture(name + ".state_in0"));
  expect_close(y, fixture(name + ".output"), "output");
  expect_close(h, fixture(name + ".state_out0"), "h_n");
  fixture_loss(y, {h}).backward();
  expect_close(x.grad(), fixture(name + ".input_grad"), "input gradient");
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
  expect_gru_matches_fixture(gru, "gru");
}

TEST(GRU, MatchesPyTorchUnbatchedTwoLayers) {
  GRU gru(3, 2, {.num_layers = 2});
  expect_gru_matches_fixture(gru, "gru2");
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

// Note [Packed sequences as one index]: the packed layout by hand, and unpacking its inverse.
TEST(PackedSequences, PackAndPadByHand) {
  // Three sequences of lengths 2, 3, 1 (values 10 t + n at step t of sequence n), unsorted.
  Tensor padded = zeros({3, 3, 1}, DType::Float64);
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t n = 0; n < 3; ++n) padded.select(0, t).select(0, n).fill_(10.0 * t + n);
  const Tensor lengths = tensor({2, 3, 1});
  const PackedSequence p = pack_padded_sequence(padded, lengths, false, false);
  EXPECT_EQ(values(p.data), (Vec{1, 0, 2, 11, 10, 21}));  // sorted order 1, 0, 2
  EXPECT_EQ(values(p.batch_sizes), (Vec{3, 2, 1}));
  EXPECT_EQ(values(p.sorted_indices), (Vec{1, 0, 2}));
  EXPECT_EQ(values(p.unsorted_indices), (Vec{1, 0, 2}));
  const auto [back, lens] = pad_packed_sequence(p, true, -1.0, 4);
  EXPECT_EQ(back.sizes(), (Shape{3, 4, 1}));
  EXPECT_EQ(values(back), (Vec{0, 10, -1, -1, 1, 11, 21, -1, 2, -1, -1, -1}));
  EXPECT_EQ(values(lens), (Vec{2, 3, 1}));
  expect_error([&] { pack_padded_sequence(padded, lengths); },
               {"[nn.utils.rnn.pack_padded_sequence]", "must not increase", "enforce_sorted"});
  expect_error(
      [&] {
        pack_padded_sequence(padded, tensor({2, 4, 1}), false, false);
      },
      {"[nn.utils.rnn.pack_padded_sequence]", "[1, 3]", "[2, 4, 1]"});
  expect_error(
      [&] {
        pack_padded_sequence(padded, tensor({2, 0, 1}), false, false);
      },
      {"[nn.utils.rnn.pack_padded_sequence]", "[1, 3]"});
  expect_error(
      [&] {
        pack_padded_sequence(padded, tensor({2, 1}), false, false);
      },
      {"[nn.utils.rnn.pack_padded_sequence]", "expected 3 lengths"});
  expect_error([&] { pad_packed_sequence(p, false, 0.0, 2); },
               {"[nn.utils.rnn.pad_packed_sequence]", "total_length", "3"});
}

// Note [Packed sequences through whole layers]: every sequence of a packed batch gets exactly
// what it gets alone, in both directions and through two layers: the outputs over its own steps,
// zeros after them, and its own last states; gradients flow to the input and the states.
TEST(PackedSequences, EachSequenceRunsAsIfAlone) {
  LSTM lstm(2, 3, {.num_layers = 2, .bidirectional = true});
  GRU gru(2, 3, {.batch_first = true});
  lstm.to(DType::Float64);
  gru.to(DType::Float64);
  const std::vector<int64_t> lens = {3, 5, 1, 3};
  const Tensor x = randn({5, 4, 2}, DType::Float64).requires_grad_(true);
  const Tensor h0 = randn({4, 4, 3}, DType::Float64), c0 = randn({4, 4, 3}, DType::Float64);
  const PackedSequence p = pack_padded_sequence(x, tensor({3, 5, 1, 3}), false, false);
  const auto [out, h, c] = lstm.forward(p, h0, c0);
  const Tensor y = std::get<0>(pad_packed_sequence(out));
  EXPECT_EQ(y.sizes(), (Shape{5, 4, 6}));
  for (int64_t n = 0; n < 4; ++n) {
    SCOPED_TRACE("sequence " + std::to_string(n));
    const int64_t len = lens[static_cast<size_t>(n)];
    const Tensor xn = x.slice(0, 0, len).slice(1, n, n + 1);
    const auto [yn, hn, cn] =
        lstm.forward(xn, h0.slice(1, n, n + 1).contiguous(), c0.slice(1, n, n + 1).contiguous());
    expect_close(y.slice(0, 0, len).slice(1, n, n + 1), yn, "yn");
    if (len < 5) {
      EXPECT_EQ(values(sum(abs(y.slice(0, len, 5).slice(1, n, n + 1)))), Vec{0});
    }
    expect_close(h.slice(1, n, n + 1), hn, "hn");
    expect_close(c.slice(1, n, n + 1), cn, "cn");
  }
  sum(y).backward();
  EXPECT_EQ(x.grad().sizes(), x.sizes());
  EXPECT_EQ(values(sum(abs(x.grad().slice(0, 1, 5).select(1, 2)))), Vec{0});  // past its end
  // A batch-first GRU takes the same packed batch (packing is always time-major).
  const auto [gout, gh] = gru.forward(p, Tensor());
  const auto [alone, alone_h] =
      gru.forward(x.slice(0, 0, 5).slice(1, 1, 2).transpose(0, 1), Tensor());
  expect_close(gh.slice(1, 1, 2), alone_h, "alone_h");
  expect_error(
      [&] {
        lstm.forward(p, randn({4, 3, 3}, DType::Float64), Tensor());
      },
      {"[nn.LSTM]", "packed sequences", "[4, 3, 3]"});
}

// Note [LSTM projections as steps]: PyTorch's parameter names and shapes, h of proj_size
// features, c of hidden_size, gradients through the steps, and the checks.
TEST(LSTM, ProjectionsCarryTheProjectedState) {
  LSTM lstm(2, 4, {.proj_size = 3});
  lstm.to(DType::Float64);
  const auto params = lstm.named_parameters();
  ASSERT_EQ(params.size(), 5u);
  EXPECT_EQ(params[1].first, "weight_hh_l0");
  EXPECT_EQ(params[1].second.sizes(), (Shape{16, 3}));
  EXPECT_EQ(params[4].first, "weight_hr_l0");
  EXPECT_EQ(params[4].second.sizes(), (Shape{3, 4}));
  const Tensor x = randn({3, 2, 2}, DType::Float64).requires_grad_(true);
  const auto [y, h, c] = lstm.forward(x, Tensor(), Tensor());
  EXPECT_EQ(y.sizes(), (Shape{3, 2, 3}));
  EXPECT_EQ(h.sizes(), (Shape{1, 2, 3}));
  EXPECT_EQ(c.sizes(), (Shape{1, 2, 4}));
  expect_close(h.select(0, 0), y.select(0, 2), "h_n is the last output");
  const auto fn = [&](const std::vector<Tensor>& in) {
    return std::get<0>(lstm.forward(in[0], Tensor(), Tensor()));
  };
  EXPECT_TRUE(autograd::gradcheck(fn, {x}).ok);
  EXPECT_EQ(lstm.extra_repr(), "2, 4, proj_size=3");
  expect_error([] { LSTM(2, 4, {.proj_size = 4}); }, {"[nn.LSTM]", "proj_size", "4"});
  expect_error([] { GRU(2, 4, {.proj_size = 2}); }, {"[nn.GRU]", "LSTM only"});
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

// ---- RNN and the cells ------------------------------------------------------------------------

enum class Cell { Tanh, Relu, Lstm, Gru };

int64_t gates(Cell cell) {
  return cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1;
}

double sigmoid_ref(double v) {
  return 1 / (1 + std::exp(-v));
}

// PyTorch's four parameters of one cell (or one layer and direction), as plain numbers.
struct Weights {
  Vec w_ih, w_hh, b_ih, b_hh;  // the biases empty without bias
};

// y[r] = sum_k w[r, k] v[k] + b[r] for r < rows.
Vec affine(const Vec& w, const Vec& b, const Vec& v, int64_t rows) {
  const auto cols = static_cast<int64_t>(v.size());
  Vec y(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    double acc = b.empty() ? 0 : b[static_cast<size_t>(r)];
    for (int64_t k = 0; k < cols; ++k) {
      acc += w[static_cast<size_t>(r * cols + k)] * v[static_cast<size_t>(k)];
    }
    y[static_cast<size_t>(r)] = acc;
  }
  return y;
}

// One step of PyTorch's cell equations for one batch row: {h', c'} from x, h, c.
std::pair<Vec, Vec> step_ref(Cell cell, const Weights& p, const Vec& x, const Vec& h,
                             const Vec& c) {
  const auto H = static_cast<int64_t>(h.size());
  const Vec gi = affine(p.w_ih, p.b_ih, x, gates(cell) * H);
  const Vec gh = affine(p.w_hh, p.b_hh, h, gates(cell) * H);
  Vec hn(h.size()), cn(c.size());
  for (int64_t j = 0; j < H; ++j) {
    const auto at = [&](const Vec& v, int64_t gate) {
      return v[static_cast<size_t>(gate * H + j)];
    };
    const auto u = static_cast<size_t>(j);
    if (cell == Cell::Tanh || cell == Cell::Relu) {
      const double pre = at(gi, 0) + at(gh, 0);
      hn[u] = cell == Cell::Tanh ? std::tanh(pre) : std::max(pre, 0.0);
    } else if (cell == Cell::Lstm) {
      const double i = sigmoid_ref(at(gi, 0) + at(gh, 0)), f = sigmoid_ref(at(gi, 1) + at(gh, 1));
      const double g = std::tanh(at(gi, 2) + at(gh, 2)), o = sigmoid_ref(at(gi, 3) + at(gh, 3));
      cn[u] = f * c[u] + i * g;
      hn[u] = o * std::tanh(cn[u]);
    } else {
      const double r = sigmoid_ref(at(gi, 0) + at(gh, 0)), z = sigmoid_ref(at(gi, 1) + at(gh, 1));
      const double n = std::tanh(at(gi, 2) + r * at(gh, 2));
      hn[u] = (1 - z) * n + z * h[u];
    }
  }
  return {hn, cn};
}

// Row n of a [rows, width] buffer.
Vec row(const Vec& all, int64_t n, int64_t width) {
  return Vec(all.begin() + n * width, all.begin() + (n + 1) * width);
}

// The parameters `prefix` names in `m` ("weight_ih" + suffix ...), as numbers.
Weights weights_of(const Module& m, const std::string& suffix) {
  Weights p;
  for (const auto& [name, t] : m.named_parameters()) {
    if (name == "weight_ih" + suffix) p.w_ih = values(t);
    if (name == "weight_hh" + suffix) p.w_hh = values(t);
    if (name == "bias_ih" + suffix) p.b_ih = values(t);
    if (name == "bias_hh" + suffix) p.b_hh = values(t);
  }
  EXPECT_FALSE(p.w_ih.empty() || p.w_hh.empty()) << suffix;
  return p;
}

Tensor f64_randn(IntList sizes) {
  return randn(sizes, DType::Float64);
}

TEST(RecurrentCells, OneStepMatchesTheCellEquationsBatchedAndUnbatched) {
  const int64_t N = 3, I = 4, H = 5;
  for (const Cell cell : {Cell::Tanh, Cell::Relu, Cell::Lstm, Cell::Gru}) {
    for (const bool bias : {true, false}) {
      SCOPED_TRACE(fmt::format("cell {} bias {}", static_cast<int>(cell), bias));
      std::shared_ptr<Module> m;
      if (cell == Cell::Lstm) {
        m = std::make_shared<LSTMCell>(I, H, bias);
      } else if (cell == Cell::Gru) {
        m = std::make_shared<GRUCell>(I, H, bias);
      } else {
        m = std::make_shared<RNNCell>(I, H, bias, cell == Cell::Tanh ? "tanh" : "relu");
      }
      m->to(DType::Float64);
      const Tensor x = f64_randn({N, I}), h = f64_randn({N, H}), c = f64_randn({N, H});
      const auto run = [&](const Tensor& xi, const Tensor& hi, const Tensor& ci) {
        if (cell == Cell::Lstm) return static_cast<LSTMCell&>(*m).forward(xi, hi, ci);
        if (cell == Cell::Gru) {
          return std::tuple<Tensor, Tensor>{static_cast<GRUCell&>(*m).forward(xi, hi), Tensor()};
        }
        return std::tuple<Tensor, Tensor>{static_cast<RNNCell&>(*m).forward(xi, hi), Tensor()};
      };
      const Weights p = weights_of(*m, "");
      EXPECT_EQ(p.w_ih.size(), static_cast<size_t>(gates(cell) * H * I));
      EXPECT_EQ(p.b_ih.size(), bias ? static_cast<size_t>(gates(cell) * H) : 0u);
      const auto [h1, c1] = run(x, h, c);
      ASSERT_EQ(h1.sizes(), (Shape{N, H}));
      const Vec xv = values(x), hv = values(h), cv = values(c), got_h = values(h1);
      const Vec got_c = cell == Cell::Lstm ? values(c1) : Vec();
      for (int64_t n = 0; n < N; ++n) {
        const auto [want_h, want_c] =
            step_ref(cell, p, row(xv, n, I), row(hv, n, H), row(cv, n, H));
        for (int64_t j = 0; j < H; ++j) {
          EXPECT_NEAR(got_h[static_cast<size_t>(n * H + j)], want_h[static_cast<size_t>(j)], 1e-12);
          if (cell == Cell::Lstm) {
            EXPECT_NEAR(got_c[static_cast<size_t>(n * H + j)], want_c[static_cast<size_t>(j)],
                        1e-12);
          }
        }
      }
      // Unbatched: [I] and [H] in, [H] out, the same numbers as batch row 1.
      const auto [hu, cu] = run(x.select(0, 1), h.select(0, 1), c.select(0, 1));
      ASSERT_EQ(hu.sizes(), (Shape{H}));
      EXPECT_EQ(values(hu), values(h1.select(0, 1)));
      if (cell == Cell::Lstm) {
        EXPECT_EQ(values(cu), values(c1.select(0, 1)));
      }
      // No state: zeros.
      const auto [hz, cz] = run(x, Tensor(), Tensor());
      const auto [hw, cw] = run(x, zeros({N, H}, DType::Float64), zeros({N, H}, DType::Float64));
      EXPECT_EQ(values(hz), values(hw));
    }
  }
}

TEST(RecurrentCells, ParametersInitAndReprAsPyTorch) {
  LSTMCell lstm(3, 8);
  const auto sd = lstm.state_dict();
  ASSERT_EQ(sd.size(), 4u);
  EXPECT_EQ(sd.at("weight_ih").sizes(), (Shape{32, 3}));
  EXPECT_EQ(sd.at("weight_hh").sizes(), (Shape{32, 8}));
  EXPECT_EQ(sd.at("bias_ih").sizes(), (Shape{32}));
  EXPECT_EQ(sd.at("bias_hh").sizes(), (Shape{32}));
  const double k = 1 / std::sqrt(8.0);
  double biggest = 0;
  for (const Tensor& p : lstm.parameters()) {
    for (double v : values(p)) biggest = std::max(biggest, std::abs(v));
  }
  EXPECT_LE(biggest, k);
  EXPECT_GT(biggest, k / 2);  // drawn from the whole range, not left at zero
  EXPECT_EQ(GRUCell(2, 3, false).state_dict().size(), 2u);
  EXPECT_EQ(GRUCell(2, 3).state_dict().at("weight_hh").sizes(), (Shape{9, 3}));
  EXPECT_EQ(RNNCell(2, 3).state_dict().at("weight_ih").sizes(), (Shape{3, 2}));
  EXPECT_EQ(RNNCell(2, 3, false, "relu").extra_repr(), "2, 3, bias=False, nonlinearity=relu");
  EXPECT_EQ(lstm.extra_repr(), "3, 8");
}

TEST(RecurrentCells, Gradcheck) {
  RNNCell rnn(2, 3, true, "tanh");
  LSTMCell lstm(2, 3);
  GRUCell gru(2, 3);
  for (Module* m : std::initializer_list<Module*>{&rnn, &lstm, &gru}) m->to(DType::Float64);
  const Tensor x = f64_randn({2, 2}).requires_grad_(true);
  const Tensor h = f64_randn({2, 3}).requires_grad_(true),
               c = f64_randn({2, 3}).requires_grad_(true);
  EXPECT_TRUE(
      autograd::gradcheck([&](const auto& in) { return rnn.forward(in[0], in[1]); }, {x, h}).ok);
  EXPECT_TRUE(
      autograd::gradcheck([&](const auto& in) { return gru.forward(in[0], in[1]); }, {x, h}).ok);
  EXPECT_TRUE(autograd::gradcheck(
                  [&](const auto& in) {
                    const auto [h1, c1] = lstm.forward(in[0], in[1], in[2]);
                    return cat({h1, c1}, 0);
                  },
                  {x, h, c})
                  .ok);
  // The weights get gradients too.
  sum(lstm.forward(x)).backward();
  for (const Tensor& p : lstm.parameters()) EXPECT_TRUE(p.grad().defined());
}

TEST(RecurrentCells, ArgumentChecks) {
  LSTMCell lstm(3, 4);
  GRUCell gru(3, 4);
  expect_error([&] { lstm(randn({2, 5})); }, {"[nn.LSTMCell]", "3 input features", "[2, 5]"});
  expect_error(
      [&] {
        gru(randn({2, 2, 3}));
      },
      {"[nn.GRUCell]", "1-d (unbatched) or 2-d", "[2, 2, 3]"});
  expect_error(
      [&] {
        gru.forward(randn({2, 3}), randn({3, 4}));
      },
      {"[nn.GRUCell]", "hx", "[2, 4]", "[3, 4]"});
  expect_error(
      [&] {
        gru.forward(randn({3}), randn({1, 4}));
      },
      {"[nn.GRUCell]", "hx", "[4]", "[1, 4]"});
  expect_error(
      [&] {
        lstm.forward(randn({2, 3}), randn({2, 4}), randn({2, 5}));
      },
      {"[nn.LSTMCell]", "hx[1]", "[2, 4]", "[2, 5]"});
  expect_error([] { RNNCell(3, 4, true, "sigmoid"); },
               {"[nn.RNNCell]", "nonlinearity", "'sigmoid'", "'tanh' or 'relu'"});
  expect_error([] { GRUCell(0, 4); }, {"[nn.GRUCell]", "positive"});
}

TEST(RNN, MatchesTheCellEquationsBidirectionalTwoLayersBatchFirst) {
  const int64_t L = 4, N = 2, I = 3, H = 5;
  for (const Cell cell : {Cell::Tanh, Cell::Relu}) {
    RNN rnn(I, H, {.num_layers = 2, .batch_first = true, .bidirectional = true},
            cell == Cell::Tanh ? "tanh" : "relu");
    rnn.to(DType::Float64);
    const auto sd = rnn.state_dict();
    ASSERT_EQ(sd.size(), 16u);
    EXPECT_EQ(sd.at("weight_ih_l0").sizes(), (Shape{H, I}));
    EXPECT_EQ(sd.at("weight_ih_l1_reverse").sizes(), (Shape{H, 2 * H}));
    EXPECT_EQ(sd.at("weight_hh_l1").sizes(), (Shape{H, H}));
    EXPECT_EQ(sd.at("bias_hh_l0_reverse").sizes(), (Shape{H}));
    const Tensor x = f64_randn({N, L, I}), h0 = f64_randn({4, N, H});
    const auto [y, hn] = rnn.forward(x, h0);
    ASSERT_EQ(y.sizes(), (Shape{N, L, 2 * H}));
    ASSERT_EQ(hn.sizes(), (Shape{4, N, H}));
    // The reference: every layer and direction a loop of steps, per batch row.
    const Vec xv = values(x), h0v = values(h0);
    Vec want_hn(static_cast<size_t>(4 * N * H));
    std::vector<std::vector<Vec>> seq(static_cast<size_t>(N));  // [n][t] -> features
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t t = 0; t < L; ++t) seq[n].push_back(row(xv, n * L + t, I));
    }
    for (int64_t layer = 0; layer < 2; ++layer) {
      std::vector<std::vector<Vec>> next(static_cast<size_t>(N), std::vector<Vec>(L));
      for (int64_t d = 0; d < 2; ++d) {
        const Weights p = weights_of(rnn, fmt::format("_l{}{}", layer, d ? "_reverse" : ""));
        for (int64_t n = 0; n < N; ++n) {
          Vec h = row(h0v, (layer * 2 + d) * N + n, H);
          for (int64_t k = 0; k < L; ++k) {
            const int64_t t = d ? L - 1 - k : k;
            h = step_ref(cell, p, seq[n][t], h, Vec(h.size())).first;
            next[n][t].insert(next[n][t].end(), h.begin(), h.end());
          }
          std::copy(h.begin(), h.end(), want_hn.begin() + ((layer * 2 + d) * N + n) * H);
        }
      }
      seq = next;
    }
    const Vec got_y = values(y), got_hn = values(hn);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t t = 0; t < L; ++t) {
        for (int64_t j = 0; j < 2 * H; ++j) {
          EXPECT_NEAR(got_y[static_cast<size_t>((n * L + t) * 2 * H + j)], seq[n][t][j], 1e-12);
        }
      }
    }
    for (size_t i = 0; i < want_hn.size(); ++i) EXPECT_NEAR(got_hn[i], want_hn[i], 1e-12) << i;
  }
}

TEST(RNN, GradcheckUnbatchedAndArgumentChecks) {
  RNN rnn(2, 3, {.num_layers = 2, .bidirectional = true}, "relu");
  rnn.to(DType::Float64);
  const Tensor x = f64_randn({4, 2}).requires_grad_(true);
  const Tensor h0 = f64_randn({4, 3}).requires_grad_(true);
  const auto fn = [&](const std::vector<Tensor>& in) {
    const auto [y, h] = rnn.forward(in[0], in[1]);
    return cat({y.reshape({-1}), h.reshape({-1})}, 0);
  };
  EXPECT_TRUE(autograd::gradcheck(fn, {x, h0}).ok);
  EXPECT_EQ(std::get<0>(rnn.forward(x, h0)).sizes(), (Shape{4, 6}));
  EXPECT_EQ(rnn.extra_repr(), "2, 3, num_layers=2, bidirectional=True");
  expect_error([] { RNN(2, 3, {}, "gelu"); }, {"[nn.RNN]", "nonlinearity", "'gelu'"});
  RNN plain(2, 3);
  expect_error([&] { plain(randn({4, 1, 3})); }, {"[nn.RNN]", "2 input features", "[4, 1, 3]"});
  expect_error(
      [&] {
        plain.forward(randn({4, 1, 2}), randn({2, 1, 3}));
      },
      {"[nn.RNN]", "h0", "[1, 1, 3]", "[2, 1, 3]"});
  // No bias: two weights, and the equations without them.
  EXPECT_EQ(RNN(2, 3, {.bias = false}).state_dict().size(), 2u);
}

}  // namespace
}  // namespace ember::nn
