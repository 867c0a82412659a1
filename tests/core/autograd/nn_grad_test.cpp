// Gradients of linear, dropout, embedding, pad, interpolate, affine_grid and grid_sample: gradcheck
// cases (first and second order) for their variants, and value tests for embedding's padding row
// and repeated indices and for dropout's mask reuse.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "tests/core/autograd/gradcheck_cases.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

using V = std::vector<Tensor>;

// ---- linear -----------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"linear", "2-d with bias",
                      [](const V& in) { return linear(in[0], in[1], in[2]); },
                      [] {
                        return V{input({3, 4}, 1), input({2, 4}, 2), input({2}, 3)};
                      }});
EMBER_GRADCHECK_CASE({"linear", "2-d without bias",
                      [](const V& in) { return linear(in[0], in[1]); },
                      [] {
                        return V{input({3, 4}, 4), input({2, 4}, 5)};
                      }});
EMBER_GRADCHECK_CASE({"linear", "3-d input",
                      [](const V& in) { return linear(in[0], in[1], in[2]); },
                      [] {
                        return V{input({2, 3, 4}, 6), input({2, 4}, 7), input({2}, 8)};
                      }});
EMBER_GRADCHECK_CASE({"linear", "1-d input",
                      [](const V& in) { return linear(in[0], in[1], in[2]); },
                      [] {
                        return V{input({4}, 9), input({3, 4}, 10), input({3}, 11)};
                      }});
EMBER_GRADCHECK_CASE({"linear", "transposed input and weight",
                      [](const V& in) { return linear(in[0].t(), in[1].t(), in[2]); },
                      [] {
                        return V{input({4, 3}, 12), input({4, 2}, 13), input({2}, 14)};
                      }});
EMBER_GRADCHECK_CASE(
    {"linear", "only the weight requires grad",
     [](const V& in) { return linear(in[0], in[1], in[2]); },
     [] {
       return V{input({3, 4}, 15).detach(), input({2, 4}, 16), input({2}, 17).detach()};
     }});

// ---- dropout ----------------------------------------------------------------------------------
// A generator seeded inside fn draws the same mask on every evaluation.
EMBER_GRADCHECK_CASE({"dropout", "p = 0.4, seeded mask",
                      [](const V& in) {
                        Generator g(5);
                        return dropout(in[0], 0.4, true, &g);
                      },
                      [] {
                        return V{input({4, 5}, 20)};
                      }});
EMBER_GRADCHECK_CASE({"dropout", "not training",
                      [](const V& in) { return mul(dropout(in[0], 0.4, false), 2.0); },
                      [] { return V{input({3}, 21)}; }});
EMBER_GRADCHECK_CASE({"dropout", "p = 1", [](const V& in) { return dropout(in[0], 1.0); },
                      [] { return V{input({3}, 22)}; }});

// ---- embedding --------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"embedding", "repeated indices",
                      [](const V& in) {
                        return embedding(in[0], on(in[0], tensor({{1, 3, 1}, {0, 3, 3}})));
                      },
                      [] {
                        return V{input({5, 2}, 30)};
                      }});
EMBER_GRADCHECK_CASE({"embedding", "padding_idx",
                      [](const V& in) {
                        // The padding row is a constant so the numerical gradient is 0 there
                        // too: that row reaches the output but gets no gradient by design.
                        const Tensor w = cat({in[0].narrow(0, 0, 3), on(in[0], zeros({1, 2}, f64)),
                                              in[0].narrow(0, 4, 1)});
                        return embedding(w, on(in[0], tensor({{1, 3, 1}, {0, 3, 3}})), 3);
                      },
                      [] {
                        return V{input({5, 2}, 31)};
                      }});
EMBER_GRADCHECK_CASE(
    {"embedding", "transposed weight, negative padding_idx",
     [](const V& in) {
       const Tensor w = cat({in[0].narrow(1, 0, 4), on(in[0], zeros({3, 1}, f64))}, 1);
       return embedding(w.t(), on(in[0], tensor({4, 0, 4, 2})), -1);
     },
     [] {
       return V{input({3, 5}, 32)};
     }});

// ---- pad --------------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"pad", "constant",
                      [](const V& in) {
                        return pad(in[0], {1, 2, 0, 1});
                      },
                      [] {
                        return V{input({2, 2, 3}, 40)};
                      }});
EMBER_GRADCHECK_CASE({"pad", "constant with cropping",
                      [](const V& in) {
                        return pad(in[0], {-1, 2, 1, -1}, "constant", 3.0);
                      },
                      [] {
                        return V{input({2, 3, 4}, 41)};
                      }});
EMBER_GRADCHECK_CASE({"pad", "reflect",
                      [](const V& in) {
                        return pad(in[0], {2, 1, 1, 2}, "reflect");
                      },
                      [] {
                        return V{input({2, 3, 4}, 42)};
                      }});
EMBER_GRADCHECK_CASE({"pad", "replicate",
                      [](const V& in) {
                        return pad(in[0], {3, 1, 0, 2}, "replicate");
                      },
                      [] {
                        return V{input({2, 3, 2}, 43)};
                      }});
EMBER_GRADCHECK_CASE({"pad", "circular",
                      [](const V& in) {
                        return pad(in[0], {2, 3, 1, 1}, "circular");
                      },
                      [] {
                        return V{input({2, 3, 3}, 44)};
                      }});
EMBER_GRADCHECK_CASE({"pad", "transposed input",
                      [](const V& in) {
                        return pad(in[0].t(), {1, 1}, "reflect");
                      },
                      [] {
                        return V{input({3, 2}, 45)};
                      }});

// ---- interpolate ------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"interpolate", "nearest, up",
                      [](const V& in) {
                        return interpolate(in[0], {5, 3});
                      },
                      [] {
                        return V{input({1, 2, 3, 2}, 50)};
                      }});
EMBER_GRADCHECK_CASE({"interpolate", "nearest, down",
                      [](const V& in) {
                        return interpolate(in[0], {2, 1});
                      },
                      [] {
                        return V{input({2, 1, 4, 3}, 51)};
                      }});
EMBER_GRADCHECK_CASE({"interpolate", "bilinear",
                      [](const V& in) {
                        return interpolate(in[0], {5, 4}, "bilinear");
                      },
                      [] {
                        return V{input({1, 2, 3, 3}, 52)};
                      }});
EMBER_GRADCHECK_CASE({"interpolate", "bilinear, align_corners",
                      [](const V& in) {
                        return interpolate(in[0], {5, 2}, "bilinear", true);
                      },
                      [] {
                        return V{input({1, 2, 3, 3}, 53)};
                      }});
EMBER_GRADCHECK_CASE({"interpolate", "bilinear, scale factor, down",
                      [](const V& in) { return interpolate(in[0], 0.6, "bilinear"); },
                      [] {
                        return V{input({1, 1, 5, 4}, 54)};
                      }});

// ---- affine_grid and grid_sample --------------------------------------------------------------
EMBER_GRADCHECK_CASE({"affine_grid", "2-d",
                      [](const V& in) {
                        return affine_grid(in[0], {2, 1, 3, 4});
                      },
                      [] {
                        return V{input({2, 2, 3}, 60)};
                      }});
EMBER_GRADCHECK_CASE({"affine_grid", "3-d, align_corners",
                      [](const V& in) {
                        return affine_grid(in[0], {1, 2, 2, 3, 2}, true);
                      },
                      [] {
                        return V{input({1, 3, 4}, 61)};
                      }});
// Seeded random points, scaled to reach past the borders; none lies within the finite-difference
// step of a kink (an integer source coordinate, a reflecting border).
EMBER_GRADCHECK_CASE({"grid_sample", "bilinear, zeros, points outside",
                      [](const V& in) { return grid_sample(in[0], mul(in[1], 1.3)); },
                      [] {
                        return V{input({2, 2, 3, 4}, 62), input({2, 3, 2, 2}, 63)};
                      }});
EMBER_GRADCHECK_CASE({"grid_sample", "bilinear, reflection, align_corners",
                      [](const V& in) {
                        return grid_sample(in[0], mul(in[1], 2.5), "bilinear", "reflection", true);
                      },
                      [] {
                        return V{input({1, 2, 3, 4}, 64), input({1, 2, 3, 2}, 65)};
                      }});
EMBER_GRADCHECK_CASE({"grid_sample", "bicubic, border",
                      [](const V& in) {
                        return grid_sample(in[0], mul(in[1], 1.2), "bicubic", "border");
                      },
                      [] {
                        return V{input({1, 2, 4, 4}, 66), input({1, 2, 2, 2}, 67)};
                      }});
EMBER_GRADCHECK_CASE({"grid_sample", "nearest, input only",
                      [](const V& in) { return grid_sample(in[0], in[1], "nearest"); },
                      [] {
                        return V{input({1, 2, 3, 4}, 68), input({1, 2, 3, 2}, 69).detach()};
                      }});
EMBER_GRADCHECK_CASE({"grid_sample", "trilinear, border",
                      [](const V& in) {
                        return grid_sample(in[0], mul(in[1], 1.2), "bilinear", "border");
                      },
                      [] {
                        return V{input({1, 2, 2, 3, 2}, 70), input({1, 2, 1, 2, 3}, 71)};
                      }});

// ---- pixel_shuffle ----------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"pixel_shuffle", "r=2", [](const V& in) { return pixel_shuffle(in[0], 2); },
                      [] {
                        return V{input({2, 8, 2, 3}, 55)};
                      }});
EMBER_GRADCHECK_CASE({"pixel_unshuffle", "r=2, unbatched",
                      [](const V& in) { return pixel_unshuffle(in[0], 2); },
                      [] {
                        return V{input({3, 4, 2}, 56)};
                      }});

// ---- distances --------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"cosine_similarity", "dim 1, broadcast",
                      [](const V& in) { return cosine_similarity(in[0], in[1]); },
                      [] {
                        return V{input({2, 3}, 730), input({1, 3}, 731)};
                      }});
EMBER_GRADCHECK_CASE({"pairwise_distance", "p 2",
                      [](const V& in) { return pairwise_distance(in[0], in[1]); },
                      [] {
                        return V{input({3, 4}, 732), input({3, 4}, 733)};
                      }});
EMBER_GRADCHECK_CASE({"pairwise_distance", "p 1, keepdim",
                      [](const V& in) { return pairwise_distance(in[0], in[1], 1.0, 1e-6, true); },
                      [] {
                        return V{input({2, 3}, 734), input({3}, 735)};
                      }});
EMBER_GRADCHECK_CASE({"normalize", "p 2, dim 1", [](const V& in) { return normalize(in[0]); },
                      [] {
                        return V{input({2, 3, 2}, 736)};
                      }});

TEST(Distances, MatchHandComputedValues) {
  const Tensor a = tensor({{3.0, 4.0}, {1.0, 0.0}}, DType::Float64);
  const Tensor b = tensor({{4.0, 3.0}, {0.0, 0.0}}, DType::Float64);
  // cos = 24 / 25; a zero row is clamped at eps, so its cosine is 0.
  EXPECT_EQ(values(cosine_similarity(a, b)), (std::vector<double>{24.0 / 25.0, 0.0}));
  EXPECT_EQ(values(cosine_similarity(a, b, 0)).size(), 2u);
  EXPECT_EQ(values(pairwise_distance(a, b, 1.0, 0.0)), (std::vector<double>{2.0, 1.0}));
  EXPECT_EQ(pairwise_distance(a, b, 2.0, 0.0, true).sizes(), (Shape{2, 1}));
  EXPECT_EQ(values(normalize(a, 2.0, 1)), (std::vector<double>{0.6, 0.8, 1.0, 0.0}));
  EXPECT_THROW(cosine_similarity(a, b, 2), IndexError);
  EXPECT_THROW(cosine_similarity(tensor({1, 2}), tensor({1, 2})), TypeError);
  EXPECT_THROW(cosine_similarity(zeros({2, 3}), zeros({4, 3})), ValueError);
  EXPECT_THROW(pairwise_distance(zeros({2, 3}), zeros({4, 3})), ValueError);
}

// ---- value tests ------------------------------------------------------------------------------

TEST(NnGrad, EmbeddingAccumulatesRepeatsAndSkipsThePaddingRow) {
  Tensor w = zeros({4, 2}, f64).requires_grad_(true);
  const Tensor idx = tensor({{1, 2, 1}, {1, 0, 2}});
  sum(embedding(w, idx, 2)).backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{1, 1, 3, 3, 0, 0, 0, 0}));
  Tensor w2 = zeros({4, 2}, f64).requires_grad_(true);
  sum(embedding(w2, idx)).backward();
  EXPECT_EQ(values(w2.grad()), (std::vector<double>{1, 1, 3, 3, 2, 2, 0, 0}));
}

/** The gradients of loss() with respect to `in` are the same through a fused backward kernel
 *  (plain) and through the differentiable formula it falls back to under create_graph. */
void expect_same_grads_with_and_without_graph(const std::function<Tensor()>& loss, const V& in) {
  const V plain = autograd::grad({loss()}, in);
  const V graph = autograd::grad({loss()}, in, {}, /*retain_graph=*/true, /*create_graph=*/true);
  ASSERT_EQ(plain.size(), graph.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    const auto a = values(plain[i]), b = values(graph[i]);
    ASSERT_EQ(a.size(), b.size());
    for (size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 1e-12) << i << " " << j;
  }
}

// ---- lstm_layer --------------------------------------------------------------------------------
// Both outputs (every step's h and c) are checked; first order through the CPU's fused backward,
// second order through the differentiable formula.
Tensor lstm_both(const V& in, bool reverse) {
  const auto [h, c] = lstm_layer(in[0], in[1], in[2], in[3], reverse);
  return cat({h, c}, 0);
}
V lstm_inputs(int64_t L, int64_t N, int64_t H, uint64_t seed) {
  return V{input({L, N, 4 * H}, seed), input({4 * H, H}, seed + 1), input({N, H}, seed + 2),
           input({N, H}, seed + 3)};
}
EMBER_GRADCHECK_CASE({"lstm_layer", "3 steps, batch 2, hidden 2",
                      [](const V& in) { return lstm_both(in, false); },
                      [] { return lstm_inputs(3, 2, 2, 301); }});
EMBER_GRADCHECK_CASE({"lstm_layer", "reverse, 4 steps, hidden 3",
                      [](const V& in) { return lstm_both(in, true); },
                      [] { return lstm_inputs(4, 1, 3, 311); }});
EMBER_GRADCHECK_CASE({"lstm_layer", "one step, large gates",
                      [](const V& in) {
                        return lstm_both({mul(in[0], 3.0), in[1], in[2], in[3]}, false);
                      },
                      [] { return lstm_inputs(1, 2, 2, 321); }});

// ---- gru_layer ---------------------------------------------------------------------------------
// First order through the CPU's backward kernel, second order through the composite.
V gru_inputs(int64_t L, int64_t N, int64_t H, uint64_t seed) {
  return V{input({L, N, 3 * H}, seed), input({3 * H, H}, seed + 1), input({3 * H}, seed + 2),
           input({N, H}, seed + 3)};
}
EMBER_GRADCHECK_CASE({"gru_layer", "3 steps, batch 2, hidden 2",
                      [](const V& in) { return gru_layer(in[0], in[1], in[2], in[3]); },
                      [] { return gru_inputs(3, 2, 2, 501); }});
EMBER_GRADCHECK_CASE({"gru_layer", "reverse, no bias",
                      [](const V& in) { return gru_layer(in[0], in[1], {}, in[3], true); },
                      [] { return gru_inputs(4, 1, 3, 511); }});
EMBER_GRADCHECK_CASE({"gru_layer", "one step, large gates",
                      [](const V& in) { return gru_layer(mul(in[0], 3.0), in[1], in[2], in[3]); },
                      [] { return gru_inputs(1, 2, 2, 521); }});

TEST(NnGrad, GruLayerFusedBackwardMatchesTheComposite) {
  // The same gradients with and without create_graph (kernel, then the composite's).
  const V in = gru_inputs(5, 3, 4, 531);
  const Tensor w = rand({5, 3, 4}, f64);
  const auto loss = [&] { return sum(mul(gru_layer(in[0], in[1], in[2], in[3], true), w)); };
  expect_same_grads_with_and_without_graph(loss, in);
}

// ---- rnn_layer ---------------------------------------------------------------------------------
// y, h_n (and c_n) flattened into one tensor. On the CPU the composite; on the reference device
// (gradcheck_device_test) its kernels, first order through rnn_layer_backward and second order
// through the composite's derivative (Note [Whole recurrent layers in a backend]).
Tensor rnn_all(RnnMode mode, const V& in, bool bias, bool reverse) {
  const bool lstm = mode == RnnMode::LSTM;
  const Tensor b_ih = bias ? in[3] : Tensor(), b_hh = bias ? in[4] : Tensor();
  const size_t s = bias ? 5 : 3;
  const auto [y, h, c] =
      rnn_layer(mode, in[0], in[1], in[2], b_ih, b_hh, in[s], lstm ? in[s + 1] : Tensor(), reverse);
  std::vector<Tensor> parts = {y.reshape({-1}), h.reshape({-1})};
  if (lstm) parts.push_back(c.reshape({-1}));
  return cat(parts, 0);
}
V rnn_inputs(RnnMode mode, bool bias, int64_t L, int64_t N, int64_t I, int64_t H, uint64_t seed) {
  const int64_t G = mode == RnnMode::LSTM ? 4 : mode == RnnMode::GRU ? 3 : 1;
  V v = {input({L, N, I}, seed), input({G * H, I}, seed + 1), input({G * H, H}, seed + 2)};
  if (bias) v.push_back(input({G * H}, seed + 3)), v.push_back(input({G * H}, seed + 4));
  v.push_back(input({N, H}, seed + 5));
  if (mode == RnnMode::LSTM) v.push_back(input({N, H}, seed + 6));
  return v;
}
EMBER_GRADCHECK_CASE({"rnn_layer", "LSTM, 3 steps, batch 2, bias",
                      [](const V& in) { return rnn_all(RnnMode::LSTM, in, true, false); },
                      [] { return rnn_inputs(RnnMode::LSTM, true, 3, 2, 3, 2, 401); }});
EMBER_GRADCHECK_CASE({"rnn_layer", "LSTM reverse, no bias",
                      [](const V& in) { return rnn_all(RnnMode::LSTM, in, false, true); },
                      [] { return rnn_inputs(RnnMode::LSTM, false, 3, 1, 2, 3, 411); }});
EMBER_GRADCHECK_CASE({"rnn_layer", "GRU, 3 steps, batch 2, bias",
                      [](const V& in) { return rnn_all(RnnMode::GRU, in, true, false); },
                      [] { return rnn_inputs(RnnMode::GRU, true, 3, 2, 3, 2, 421); }});
EMBER_GRADCHECK_CASE({"rnn_layer", "GRU reverse, no bias",
                      [](const V& in) { return rnn_all(RnnMode::GRU, in, false, true); },
                      [] { return rnn_inputs(RnnMode::GRU, false, 4, 1, 2, 2, 431); }});
EMBER_GRADCHECK_CASE({"rnn_layer", "Elman tanh, 3 steps, batch 2, bias",
                      [](const V& in) { return rnn_all(RnnMode::RNN_TANH, in, true, false); },
                      [] { return rnn_inputs(RnnMode::RNN_TANH, true, 3, 2, 3, 2, 441); }});
EMBER_GRADCHECK_CASE({"rnn_layer", "Elman relu reverse, no bias",
                      [](const V& in) { return rnn_all(RnnMode::RNN_RELU, in, false, true); },
                      [] { return rnn_inputs(RnnMode::RNN_RELU, false, 4, 2, 2, 3, 451); }});

TEST(NnGrad, LstmLayerFusedBackwardMatchesTheFormula) {
  // The same gradients with and without create_graph (kernel, then formula).
  const V in = lstm_inputs(5, 3, 4, 331);
  const Tensor w = rand({5, 3, 4}, f64), v = rand({5, 3, 4}, f64);
  const auto loss = [&] {
    const auto [h, c] = lstm_layer(in[0], in[1], in[2], in[3], true);
    return add(sum(mul(h, w)), sum(mul(c, v)));
  };
  expect_same_grads_with_and_without_graph(loss, in);
}

TEST(NnGrad, DropoutGradientIsTheForwardMask) {
  Tensor x = ones({1000}, f64).requires_grad_(true);
  Generator g(9);
  const Tensor y = dropout(x, 0.25, true, &g);
  sum(y).backward();
  EXPECT_EQ(values(x.grad()), values(y));
}

TEST(NnGrad, LinearBiasGradientSumsRows) {
  Tensor b = zeros({2}, f64).requires_grad_(true);
  const Tensor x = ones({2, 3, 4}, f64), w = ones({2, 4}, f64);
  sum(linear(x, w, b)).backward();
  EXPECT_EQ(values(b.grad()), (std::vector<double>{6, 6}));
}

// ---- embedding_bag ------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"embedding_bag", "sum with per_sample_weights, an empty bag",
                      [](const V& in) {
                        return embedding_bag(in[0], on(in[0], tensor({1, 3, 1, 0, 4, 2})),
                                             on(in[0], tensor({0, 2, 2, 5})), "sum", in[1]);
                      },
                      [] {
                        return V{input({5, 3}, 200), input({6}, 201)};
                      }});
EMBER_GRADCHECK_CASE({"embedding_bag", "mean, 2-d input, padding_idx",
                      [](const V& in) {
                        return embedding_bag(in[0], on(in[0], tensor({{1, 3, 0}, {0, 0, 2}})), {},
                                             "mean", {}, false, 0);
                      },
                      [] {
                        return V{input({4, 3}, 202)};
                      }});
EMBER_GRADCHECK_CASE({"embedding_bag", "max, include_last_offset",
                      [](const V& in) {
                        return embedding_bag(in[0], on(in[0], tensor({2, 0, 3, 1, 2})),
                                             on(in[0], tensor({0, 3, 5})), "max", {}, true);
                      },
                      [] {
                        return V{input({4, 3}, 203)};
                      }});

TEST(EmbeddingBag, ReducesEachBagAsPyTorch) {
  // Rows r_i = (i, 10 i); bags by offsets {0, 2, 2}: {1, 3}, {}, {0, 3, 3}.
  const Tensor w =
      tensor({{0., 0.}, {1., 10.}, {2., 20.}, {3., 30.}}, TensorOptions{DType::Float64});
  const Tensor idx = tensor({1, 3, 0, 3, 3}), off = tensor({0, 2, 2});
  EXPECT_EQ(values(embedding_bag(w, idx, off, "sum")), (std::vector<double>{4, 40, 0, 0, 6, 60}));
  EXPECT_EQ(values(embedding_bag(w, idx, off, "mean")), (std::vector<double>{2, 20, 0, 0, 2, 20}));
  EXPECT_EQ(values(embedding_bag(w, idx, off, "max")), (std::vector<double>{3, 30, 0, 0, 3, 30}));
  // padding_idx 3 is left out: the mean of {1} and of {0}.
  EXPECT_EQ(values(embedding_bag(w, idx, off, "mean", {}, false, 3)),
            (std::vector<double>{1, 10, 0, 0, 0, 0}));
  // include_last_offset: the last offset ends the last bag.
  EXPECT_EQ(embedding_bag(w, idx, tensor({0, 2, 5}), "sum", {}, true).sizes(), Shape({2, 2}));
  const Tensor psw = tensor({1., 2., 0.5, 1., 1.}, TensorOptions{DType::Float64});
  EXPECT_EQ(values(embedding_bag(w, idx, off, "sum", psw)),
            (std::vector<double>{7, 70, 0, 0, 6, 60}));
}

TEST(EmbeddingBag, RefusesWhatPyTorchRefuses) {
  const Tensor w = ones({4, 2});
  EXPECT_THROW(embedding_bag(w, tensor({1, 4}), tensor({0})), IndexError);
  EXPECT_THROW(embedding_bag(w, tensor({1, 2}), tensor({1})), ValueError);     // offsets[0]
  EXPECT_THROW(embedding_bag(w, tensor({1, 2})), ValueError);                  // no offsets
  EXPECT_THROW(embedding_bag(w, tensor({{1, 2}}), tensor({0})), ValueError);   // 2-d + offsets
  EXPECT_THROW(embedding_bag(w, tensor({1, 2}), tensor({0, 3})), ValueError);  // past the end
  EXPECT_THROW(embedding_bag(w, tensor({1, 2}), tensor({0}), "median"), ValueError);
  EXPECT_THROW(embedding_bag(w, tensor({1, 2}), tensor({0}), "mean", ones({2})),
               NotImplementedError);
  EXPECT_THROW(embedding_bag(w, tensor({1, 2}), tensor({0}), "sum", ones({3})), ValueError);
  EXPECT_THROW(embedding_bag(w, ones({2}), tensor({0})), TypeError);
  EXPECT_THROW(embedding_bag(w, tensor({1, 2}), tensor({0}), "sum", {}, false, 4), IndexError);
}

}  // namespace
}  // namespace ember::testing
