// linear, fused_linear, dropout, embedding, pad and interpolate against float64 reference loops and
// hand-computed cases, across dtypes and non-contiguous inputs, plus every argument check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

Tensor uniform(IntList sizes, uint64_t seed, DType dtype = f64) {
  Generator g(seed);
  return add(mul(rand(sizes, f64, &g), 2.0), -1.0).to(dtype);
}

// ---- lstm_layer -------------------------------------------------------------------------------

// The recurrence of core/ops/rnn.cpp as a float64 loop; returns h and c of every step.
std::pair<std::vector<double>, std::vector<double>> lstm_ref(const Tensor& gx_t, const Tensor& w_t,
                                                             const Tensor& h0_t, const Tensor& c0_t,
                                                             bool reverse) {
  const std::vector<double> gx = values(gx_t), w = values(w_t);
  const int64_t L = gx_t.size(0), N = gx_t.size(1), H = w_t.size(1);
  std::vector<double> h = values(h0_t), c = values(c0_t);
  std::vector<double> hs(static_cast<size_t>(L * N * H)), cs(hs.size());
  const auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  for (int64_t k = 0; k < L; ++k) {
    const int64_t t = reverse ? L - 1 - k : k;
    std::vector<double> hn(h.size()), cn(c.size());
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t j = 0; j < H; ++j) {
        double g[4];
        for (int64_t q = 0; q < 4; ++q) {
          double v = gx[static_cast<size_t>((t * N + n) * 4 * H + q * H + j)];
          for (int64_t i = 0; i < H; ++i) {
            v += h[static_cast<size_t>(n * H + i)] * w[static_cast<size_t>((q * H + j) * H + i)];
          }
          g[q] = q == 2 ? std::tanh(v) : sig(v);
        }
        const size_t at = static_cast<size_t>(n * H + j);
        cn[at] = g[1] * c[at] + g[0] * g[2];
        hn[at] = g[3] * std::tanh(cn[at]);
        hs[static_cast<size_t>(t * N * H) + at] = hn[at];
        cs[static_cast<size_t>(t * N * H) + at] = cn[at];
      }
    }
    h = hn;
    c = cn;
  }
  return {hs, cs};
}

TEST(PixelShuffle, MovesEachChannelGroupIntoItsBlockAndBack) {
  // out[n, c, h r + i, w r + j] = in[n, c r^2 + i r + j, h, w], over a batch of 2 x 3 images.
  const int64_t r = 3, c = 2, h = 2, w = 4;
  const Tensor x =
      arange(0, 2 * 3 * c * r * r * h * w).to(DType::Float32).reshape({2, 3, c * r * r, h, w});
  const Tensor y = pixel_shuffle(x, r);
  ASSERT_EQ(y.sizes(), Shape({2, 3, c, h * r, w * r}));
  const std::vector<double> in = values(x), out = values(y);
  for (int64_t n = 0; n < 6; ++n) {
    for (int64_t k = 0; k < c; ++k) {
      for (int64_t i = 0; i < h * r; ++i) {
        for (int64_t j = 0; j < w * r; ++j) {
          const int64_t src =
              (((n * c * r * r) + k * r * r + (i % r) * r + (j % r)) * h + i / r) * w + j / r;
          const int64_t dst = ((n * c + k) * h * r + i) * w * r + j;
          ASSERT_EQ(out[static_cast<size_t>(dst)], in[static_cast<size_t>(src)]);
        }
      }
    }
  }
  EXPECT_EQ(values(pixel_unshuffle(y, r)), in);
  EXPECT_EQ(pixel_unshuffle(y, r).sizes(), x.sizes());
  expect_error([&] { pixel_shuffle(ones({4, 2}), 2); }, {"at least 3 dimensions", "2 dimension"});
  expect_error(
      [&] {
        pixel_shuffle(ones({5, 2, 2}), 2);
      },
      {"input.size(-3)=5 is not divisible by 4"});
  expect_error([&] { pixel_shuffle(ones({4, 2, 2}), 0); }, {"positive upscale_factor"});
  expect_error(
      [&] {
        pixel_unshuffle(ones({1, 3, 2}), 2);
      },
      {"input.size(-2)=3", "downscale_factor=2"});
}

TEST(LstmLayer, MatchesAFloat64LoopInBothDirectionsAndDtypes) {
  for (DType dt : {f32, f64}) {
    for (bool reverse : {false, true}) {
      const Tensor gx = mul(uniform({5, 3, 28}, 1, dt), 3.0), w = uniform({28, 7}, 2, dt),
                   h0 = uniform({3, 7}, 3, dt), c0 = uniform({3, 7}, 4, dt);
      const auto [h, c] = lstm_layer(gx, w, h0, c0, reverse);
      const auto [hw, cw] = lstm_ref(gx, w, h0, c0, reverse);
      const double tol = dt == f32 ? 2e-6 : 1e-13;
      expect_near(values(h), hw, tol);
      expect_near(values(c), cw, tol);
    }
  }
}

TEST(LstmLayer, NonFiniteGatesGiveWhatTheCompositeGives) {
  init();
  const Device ref(find_device_type("reference"), 0);
  Tensor gx = uniform({2, 2, 12}, 5, f32);
  float* p = gx.data_ptr<float>();
  p[0] = std::numeric_limits<float>::quiet_NaN();   // i of row 0, step 0
  p[13] = std::numeric_limits<float>::infinity();   // i of row 1
  p[19] = -std::numeric_limits<float>::infinity();  // g of row 1
  p[35] = std::numeric_limits<float>::infinity();   // o of row 0, step 1
  const Tensor w = uniform({12, 3}, 6, f32), h0 = uniform({2, 3}, 7, f32),
               c0 = uniform({2, 3}, 8, f32);
  const auto [h, c] = lstm_layer(gx, w, h0, c0);
  const auto [hr, cr] = lstm_layer(gx.to(ref), w.to(ref), h0.to(ref), c0.to(ref));
  for (const auto& [got, want] : {std::pair{values(h), values(hr)}, {values(c), values(cr)}}) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
      } else {
        EXPECT_NEAR(got[i], want[i], 1e-6) << "at " << i;
      }
    }
  }
}

// ---- gru_layer --------------------------------------------------------------------------------

// The GRU recurrence of core/ops/rnn.cpp as a float64 loop; returns h of every step.
std::vector<double> gru_ref(const Tensor& gx_t, const Tensor& w_t, const Tensor& b_t,
                            const Tensor& h0_t, bool reverse) {
  const std::vector<double> gx = values(gx_t), w = values(w_t);
  const int64_t L = gx_t.size(0), N = gx_t.size(1), H = w_t.size(1);
  const std::vector<double> b = b_t.defined() ? values(b_t) : std::vector<double>(3 * H);
  std::vector<double> h = values(h0_t), hs(static_cast<size_t>(L * N * H));
  const auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  for (int64_t k = 0; k < L; ++k) {
    const int64_t t = reverse ? L - 1 - k : k;
    std::vector<double> hn(h.size());
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t j = 0; j < H; ++j) {
        double x[3], hh[3];
        for (int64_t q = 0; q < 3; ++q) {
          x[q] = gx[static_cast<size_t>((t * N + n) * 3 * H + q * H + j)];
          hh[q] = b[static_cast<size_t>(q * H + j)];
          for (int64_t i = 0; i < H; ++i) {
            hh[q] +=
                h[static_cast<size_t>(n * H + i)] * w[static_cast<size_t>((q * H + j) * H + i)];
          }
        }
        const double r = sig(x[0] + hh[0]), z = sig(x[1] + hh[1]);
        const double nn = std::tanh(x[2] + r * hh[2]);
        const size_t at = static_cast<size_t>(n * H + j);
        hn[at] = (1 - z) * nn + z * h[at];
        hs[static_cast<size_t>(t * N * H) + at] = hn[at];
      }
    }
    h = hn;
  }
  return hs;
}

TEST(GruLayer, MatchesAFloat64LoopInBothDirectionsAndDtypes) {
  init();
  const Device ref(find_device_type("reference"), 0);
  ASSERT_TRUE(has_kernel(core_op(ops::gru_layer), Device::cpu(), f32));
  for (DType dt : {f32, f64}) {
    for (bool reverse : {false, true}) {
      for (bool bias : {true, false}) {
        const Tensor gx = mul(uniform({5, 3, 21}, 1, dt), 3.0), w = uniform({21, 7}, 2, dt),
                     b = bias ? uniform({21}, 3, dt) : Tensor(), h0 = uniform({3, 7}, 4, dt);
        const std::vector<double> want = gru_ref(gx, w, b, h0, reverse);
        const double tol = dt == f32 ? 2e-6 : 1e-13;
        // The CPU's kernel, and the composite on the reference backend.
        expect_near(values(gru_layer(gx, w, b, h0, reverse)), want, tol);
        expect_near(values(gru_layer(gx.to(ref), w.to(ref), b.defined() ? b.to(ref) : b, h0.to(ref),
                                     reverse)),
                    want, tol);
      }
    }
  }
}

TEST(GruLayer, EmptyBatchesAndStridedInputs) {
  // No rows and no hidden units take the composite and give empty results with gradients.
  for (const Shape& gx_shape : {Shape{3, 0, 6}, Shape{3, 2, 0}}) {
    const int64_t H = gx_shape[2] / 3, N = gx_shape[1];
    Tensor gx = uniform(gx_shape, 1).requires_grad_(true);
    Tensor w = uniform({3 * H, H}, 2).requires_grad_(true);
    const Tensor h = gru_layer(gx, w, {}, uniform({N, H}, 3));
    EXPECT_EQ(h.sizes(), (Shape{3, N, H}));
    sum(h).backward();
    EXPECT_EQ(gx.grad().sizes(), gx_shape);
  }
  // A transposed (batch-first) gates_x and a strided weight give the contiguous inputs' result.
  const Tensor gx = uniform({3, 4, 9}, 4), w = uniform({3, 9}, 5).t(), h0 = uniform({3, 3}, 6);
  const Tensor strided = gru_layer(gx.transpose(0, 1), w, {}, h0);
  expect_near(values(strided),
              values(gru_layer(gx.transpose(0, 1).contiguous(), w.contiguous(), {}, h0)), 0.0);
}

// ---- rnn_layer --------------------------------------------------------------------------------

// The reference backend runs the whole layer as one kernel (forward and backward through time,
// in double); the CPU composes it from a matmul and lstm_layer or the GRU's steps. Outputs and
// every gradient agree, for both cells and directions, with and without bias.
TEST(RnnLayer, TheReferenceKernelMatchesTheCpuComposite) {
  init();
  const Device ref(find_device_type("reference"), 0);
  ASSERT_TRUE(has_kernel(core_op(ops::rnn_layer), ref, f64));
  ASSERT_FALSE(has_kernel(core_op(ops::rnn_layer), Device::cpu(), f64));
  for (const RnnMode mode : {RnnMode::LSTM, RnnMode::GRU}) {
    const bool lstm = mode == RnnMode::LSTM;
    const int64_t G = lstm ? 4 : 3, L = 5, N = 3, I = 4, H = 6;
    for (const bool reverse : {false, true}) {
      for (const bool bias : {true, false}) {
        SCOPED_TRACE(fmt::format("{} reverse={} bias={}", lstm ? "LSTM" : "GRU", reverse, bias));
        std::vector<Tensor> in = {uniform({L, N, I}, 11),
                                  uniform({G * H, I}, 12),
                                  uniform({G * H, H}, 13),
                                  bias ? uniform({G * H}, 14) : Tensor(),
                                  bias ? uniform({G * H}, 15) : Tensor(),
                                  uniform({N, H}, 16),
                                  lstm ? uniform({N, H}, 17) : Tensor()};
        const Tensor wy = uniform({L, N, H}, 18), wh = uniform({N, H}, 19),
                     wc = uniform({N, H}, 20);
        std::vector<std::vector<double>> results[2];
        for (int side = 0; side < 2; ++side) {
          std::vector<Tensor> xs;
          for (const Tensor& t : in) {
            xs.push_back(t.defined()
                             ? t.detach().to(side == 0 ? Device::cpu() : ref).requires_grad_(true)
                             : t);
          }
          const auto [y, hn, cn] =
              rnn_layer(mode, xs[0], xs[1], xs[2], xs[3], xs[4], xs[5], xs[6], reverse);
          const Device d = xs[0].device();
          Tensor loss = add(sum(mul(y, wy.to(d))), sum(mul(hn, wh.to(d))));
          if (lstm) loss = add(loss, sum(mul(cn, wc.to(d))));
          loss.backward();
          results[side] = {values(y), values(hn)};
          if (lstm) results[side].push_back(values(cn));
          for (const Tensor& t : xs) {
            if (t.defined()) results[side].push_back(values(t.grad()));
          }
        }
        ASSERT_EQ(results[0].size(), results[1].size());
        for (size_t i = 0; i < results[0].size(); ++i) {
          SCOPED_TRACE(fmt::format("result {}", i));
          expect_near(results[1][i], results[0][i], 1e-12);
        }
      }
    }
  }
}

TEST(RnnLayer, NoStepsGiveTheInitialStates) {
  const Tensor h = uniform({1, 2}, 4), c = uniform({1, 2}, 5), b = uniform({8}, 6);
  const auto [y, hn, cn] = rnn_layer(RnnMode::LSTM, uniform({0, 1, 3}, 7), uniform({8, 3}, 8),
                                     uniform({8, 2}, 9), b, b, h, c);
  EXPECT_EQ(y.sizes(), (Shape{0, 1, 2}));
  EXPECT_EQ(values(hn), values(h));
  EXPECT_EQ(values(cn), values(c));
}

// ---- linear -----------------------------------------------------------------------------------

// y[r, o] = sum_i x[r, i] w[o, i] + b[o] over the rows r of x viewed as [rows, in].
std::vector<double> linear_ref(const Tensor& x, const Tensor& w, const Tensor& b) {
  const std::vector<double> xv = values(x), wv = values(w);
  const std::vector<double> bv = b.defined() ? values(b) : std::vector<double>();
  const int64_t in = w.size(1), out = w.size(0), rows = x.numel() / std::max<int64_t>(in, 1);
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double s = bv.empty() ? 0.0 : bv[static_cast<size_t>(o)];
      for (int64_t i = 0; i < in; ++i) {
        s += xv[static_cast<size_t>(r * in + i)] * wv[static_cast<size_t>(o * in + i)];
      }
      y[static_cast<size_t>(r * out + o)] = s;
    }
  }
  return y;
}

TEST(Linear, HandComputed) {
  const Tensor x = tensor({{1., 2.}, {3., 4.}});
  const Tensor w = tensor({{1., 0.}, {0., 1.}, {1., 1.}});
  const Tensor b = tensor({10., 20., 30.});
  const Tensor y = linear(x, w, b);
  EXPECT_EQ(y.sizes(), Shape({2, 3}));
  expect_near(values(y), {11, 22, 33, 13, 24, 37}, 1e-6);
}

TEST(Linear, MatchesReferenceAcrossShapesAndDtypes) {
  for (DType dt : {f32, f64}) {
    const double tol = dt == f64 ? 1e-12 : 1e-4;
    const Tensor w = uniform({5, 7}, 1, dt), b = uniform({5}, 2, dt);
    for (const Shape& xs : {Shape{3, 7}, Shape{2, 4, 7}, Shape{7}, Shape{2, 1, 3, 7}}) {
      const Tensor x = uniform(xs, 3, dt);
      Tensor y = linear(x, w, b);
      Shape want = xs;
      want[want.size() - 1] = 5;
      EXPECT_EQ(y.sizes(), want);
      EXPECT_EQ(y.dtype(), dt);
      expect_near(values(y), linear_ref(x, w, b), tol);
      expect_near(values(linear(x, w)), linear_ref(x, w, Tensor()), tol);
    }
  }
}

TEST(Linear, NoInputOrOutputFeaturesGiveZeroAndEmptyGradients) {
  // [2, 3, 0] -> [2, 3, 4]: the output is the bias; [2, 3, 5] -> [2, 3, 0]: nothing.
  for (const auto& [in, out] : {std::pair<int64_t, int64_t>{0, 4}, {5, 0}}) {
    Tensor x = uniform({2, 3, in}, 1).requires_grad_(true);
    Tensor w = uniform({out, in}, 2).requires_grad_(true);
    Tensor b = uniform({out}, 3).requires_grad_(true);
    const Tensor y = linear(x, w, b);
    EXPECT_EQ(y.sizes(), (Shape{2, 3, out}));
    sum(mul(y, y)).backward();
    EXPECT_EQ(x.grad().sizes(), x.sizes());
    EXPECT_EQ(w.grad().sizes(), w.sizes());
    if (in == 0) expect_near(values(b.grad()), values(mul(sum(y, {0, 1}), 2.0)), 1e-12);
  }
}

TEST(Linear, NonContiguousOperandsAndFloat32AgreesWithFloat64) {
  const Tensor xt = uniform({7, 6}, 4).t();              // [6, 7] transposed view
  const Tensor wt = uniform({7, 5}, 5).t();              // [5, 7] transposed view
  const Tensor b = uniform({10}, 6).slice(0, 0, 10, 2);  // strided [5]
  expect_near(values(linear(xt, wt, b)), linear_ref(xt, wt, b), 1e-12);
  const Tensor y32 = linear(xt.to(f32), wt.to(f32), b.to(f32));
  expect_near(values(y32), values(linear(xt, wt, b)), 1e-5);
  // A 3-d input that is not viewable as [rows, in].
  const Tensor x3 = uniform({4, 2, 7}, 7).transpose(0, 1);
  expect_near(values(linear(x3, wt, b)), linear_ref(x3.contiguous(), wt, b), 1e-12);
}

TEST(Linear, ZeroSizes) {
  const Tensor w = uniform({3, 4}, 8), b = uniform({3}, 9);
  EXPECT_EQ(linear(empty({0, 4}, f64), w, b).sizes(), Shape({0, 3}));
  // in == 0: the product is empty, the result is the bias.
  const Tensor y = linear(empty({2, 0}, f64), empty({3, 0}, f64), b);
  expect_near(values(y),
              {values(b)[0], values(b)[1], values(b)[2], values(b)[0], values(b)[1], values(b)[2]},
              0);
}

TEST(Linear, BadArguments) {
  const Tensor w = uniform({3, 4}, 10);
  expect_error(
      [&] {
        linear(uniform({2, 5}, 11), w);
      },
      {"[linear]", "input size(-1)=5 does not match weight size(1)=4"});
  expect_error([&] { linear(uniform({2, 4}, 11), uniform({4}, 12)); }, {"[linear]", "2-d"});
  expect_error(
      [&] {
        linear(uniform({2, 4}, 11), w, uniform({4}, 12));
      },
      {"[linear]", "bias", "3"});
  expect_error([&] { linear(uniform({2, 4}, 11).to(DType::Bool), w); }, {"[linear]", "bool"});
}

// ---- fused_linear -----------------------------------------------------------------------------

// act(v) of fused_linear's activation in double.
double activate_ref(double v, Activation act) {
  switch (act) {
    case Activation::ReLU:
      return v < 0 ? 0 : v;
    case Activation::GELU:
      return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    case Activation::GELUTanh:
      return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    case Activation::None:
      break;
  }
  return v;
}

constexpr Activation kActivations[] = {Activation::None, Activation::ReLU, Activation::GELU,
                                       Activation::GELUTanh};

// Note [Fused linear layers]: the fused kernel (CPU: oneDNN's matmul with bias and post-op; the
// own loop for float64) against act(x w^T + b) in float64, on the CPU and the reference backend.
TEST(FusedLinear, EveryActivationMatchesTheFloat64Reference) {
  init();
  const Device ref(find_device_type("reference"), 0);
  for (const Device dev : {Device::cpu(), ref}) {
    for (DType dt : {f32, f64, bf16}) {
      const double tol = dt == f64 ? 1e-12 : dt == f32 ? 2e-5 : 3e-2;
      const Tensor w = uniform({37, 19}, 21, dt).to(dev), b = uniform({37}, 22, dt).to(dev);
      // Row-major, a 3-d input, a transposed (column-major) input and a transposed weight.
      const Tensor xs[] = {uniform({16, 19}, 23, dt), uniform({2, 5, 19}, 24, dt),
                           uniform({19, 9}, 25, dt).t()};
      for (const Tensor& x0 : xs) {
        const Tensor x = x0.to(dev);
        for (const Activation act : kActivations) {
          for (const bool with_bias : {true, false}) {
            const Tensor bias = with_bias ? b : Tensor();
            std::vector<double> want = linear_ref(x.contiguous(), w, bias);
            for (double& v : want) v = activate_ref(v, act);
            const Tensor y = fused_linear(x, w, bias, act);
            Shape shape = x.sizes();
            shape.back() = 37;
            EXPECT_EQ(y.sizes(), shape);
            EXPECT_EQ(y.dtype(), dt);
            EXPECT_EQ(y.device(), dev);
            const std::vector<double> got = values(y.to(Device::cpu()));
            ASSERT_EQ(got.size(), want.size());
            for (size_t i = 0; i < got.size(); ++i) {
              EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i])))
                  << dev.str() << " " << dtype_name(dt) << " activation " << static_cast<int>(act)
                  << " at " << i;
            }
          }
        }
        // A transposed weight view too.
        const Tensor wt = uniform({19, 37}, 26, dt).to(dev).t();
        expect_near(values(fused_linear(x, wt, b, Activation::None).to(Device::cpu())),
                    linear_ref(x.contiguous(), wt.contiguous(), b), tol * 10);
      }
    }
  }
}

TEST(FusedLinear, RecordedForAutogradItIsTheCompositeWithItsGradients) {
  for (const Activation act : kActivations) {
    Tensor x = uniform({4, 6}, 31, f32).requires_grad_(true);
    Tensor w = uniform({5, 6}, 32, f32).requires_grad_(true);
    Tensor b = uniform({5}, 33, f32).requires_grad_(true);
    const Tensor y = fused_linear(x, w, b, act);
    sum(mul(y, y)).backward();
    Tensor x2 = x.detach().requires_grad_(true), w2 = w.detach().requires_grad_(true),
           b2 = b.detach().requires_grad_(true);
    Tensor y2 = linear(x2, w2, b2);
    if (act == Activation::ReLU) y2 = relu(y2);
    if (act == Activation::GELU) y2 = gelu(y2);
    if (act == Activation::GELUTanh) y2 = gelu(y2, "tanh");
    sum(mul(y2, y2)).backward();
    EXPECT_EQ(values(y), values(y2));
    EXPECT_EQ(values(x.grad()), values(x2.grad()));
    EXPECT_EQ(values(w.grad()), values(w2.grad()));
    EXPECT_EQ(values(b.grad()), values(b2.grad()));
    // Without recording, the fused kernel gives the same values within float32 rounding.
    autograd::NoGradGuard no_grad;
    expect_near(values(fused_linear(x, w, b, act)), values(y2), 1e-5);
  }
  // float64 through the gradient checker.
  Tensor x = uniform({3, 4}, 34).requires_grad_(true), w = uniform({2, 4}, 35).requires_grad_(true);
  const autograd::GradcheckResult r = autograd::gradcheck(
      [](const std::vector<Tensor>& in) {
        return fused_linear(in[0], in[1], Tensor(), Activation::GELU);
      },
      {x, w});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(FusedLinear, EdgeSizesAndNonFiniteSums) {
  autograd::InferenceMode guard;
  const Tensor w = uniform({3, 4}, 41, f32), b = uniform({3}, 42, f32);
  EXPECT_EQ(fused_linear(empty({0, 4}, f32), w, b, Activation::GELU).sizes(), Shape({0, 3}));
  // in == 0: relu(bias) in every row.
  const Tensor y = fused_linear(empty({2, 0}, f32), empty({3, 0}, f32), b, Activation::ReLU);
  const std::vector<double> bv = values(b);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(values(y)[i], std::max(0.0, bv[i % 3]));
  // A NaN sum: NaN or 0 after the fused ReLU (oneDNN's post-op may give 0), NaN in float64 and
  // on the reference backend; an infinite one stays infinite.
  Tensor x = uniform({2, 4}, 43, f32);
  x.data_ptr<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  x.data_ptr<float>()[5] = std::numeric_limits<float>::infinity();
  const std::vector<double> r32 = values(fused_linear(x, abs(w), Tensor(), Activation::ReLU));
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(r32[i]) || r32[i] == 0.0) << r32[i];
  for (size_t i = 3; i < 6; ++i) EXPECT_EQ(r32[i], std::numeric_limits<double>::infinity());
  const std::vector<double> r64 =
      values(fused_linear(x.to(f64), abs(w).to(f64), Tensor(), Activation::ReLU));
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(r64[i]));
}

// Note [Packed linear weights]: float32 and bfloat16 linear layers keep their weight packed in
// oneDNN's layout between calls, keyed by the weight's identity and version, from its second
// sight (so each state runs kSights times: remember, pack, read the copy). Every way a loop
// changes a weight (in place, through a view, an optimizer step, a new tensor in a recycled
// block) must be seen, at every row count sharing the copy; each result is checked against the
// float64 reference of the weight's current values. 96 -> 80 features: oneDNN packs that.
constexpr int kSights = 3;

void expect_linear(const Tensor& x, const Tensor& w, const Tensor& b, Activation act, double tol,
                   const std::string& what) {
  std::vector<double> want = linear_ref(x, w, b);
  for (double& v : want) v = activate_ref(v, act);
  const std::vector<double> got = values(fused_linear(x, w, b, act));
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << what << " at " << i;
}

// Runs the weight through every kind of change, each state kSights times at three row counts
// under InferenceMode; `inference_weight`: the weight is made and changed inside it too (an
// inference tensor, which counts no versions: Note [Inference tensors have no identity]).
void expect_every_weight_change_seen(DType dt, bool inference_weight) {
  const double tol = dt == f32 ? 2e-5 : 3e-2;
  std::optional<autograd::InferenceMode> outer;
  if (inference_weight) outer.emplace();
  Tensor w = uniform({80, 96}, 60, dt);
  const Tensor b = uniform({80}, 61, dt);
  EXPECT_EQ(w.is_inference(), inference_weight);
  const Tensor xs[] = {uniform({64, 96}, 62, dt), uniform({7, 96}, 63, dt),
                       uniform({1, 96}, 64, dt)};
  const auto check = [&](const std::string& what) {
    autograd::InferenceMode guard;
    for (int sight = 0; sight < kSights; ++sight)
      for (const Tensor& x : xs)
        for (const Activation act : {Activation::None, Activation::ReLU})
          expect_linear(
              x, w, b, act, tol,
              fmt::format("{}{} {}, call {}, {} rows", dtype_name(dt),
                          inference_weight ? " inference weight" : "", what, sight, x.size(0)));
  };
  change_weight_every_way(w, uniform({80, 96}, 65, dt), check);
  // A new weight in the block the old one freed: another storage, maybe the same address.
  w = Tensor();
  w = uniform({80, 96}, 66, dt);
  check("a new weight");
}

TEST(FusedLinear, AWeightChangedBetweenCallsIsSeenAtEveryRowCount) {
  for (DType dt : {f32, bf16})
    for (const bool inference_weight : {false, true})
      expect_every_weight_change_seen(dt, inference_weight);
}

TEST(FusedLinear, AnOptimizerStepBetweenEvaluationsIsSeen) {
  Tensor w = uniform({80, 96}, 70, f32).requires_grad_(true);
  const Tensor b = uniform({80}, 71, f32);
  const Tensor x = uniform({32, 96}, 72, f32);
  optim::SGD opt({w}, {.lr = 0.05, .momentum = 0.9});
  for (int step = 0; step < 4; ++step) {
    for (int sight = 0; sight < kSights; ++sight) {
      autograd::NoGradGuard no_grad;  // evaluation between steps
      expect_linear(x, w.detach(), b, Activation::GELU, 2e-5, fmt::format("step {}", step));
    }
    opt.zero_grad();
    sum(mul(linear(x, w, b), 0.1)).backward();
    const std::vector<double> before = values(w);
    opt.step();
    EXPECT_NE(values(w), before) << "the step did not change the weight";
  }
}

// A weight 512 outputs wide: where oneDNN wants B dense row-major (AVX2's gemm), its rows are
// 2 KiB and the packed copy gets padded rows (Note [Packed linear weights]); every call and a
// weight changed in place between calls must still give the reference.
TEST(FusedLinear, PowerOfTwoWideWeightsPackedWithPaddedRows) {
  Tensor w = uniform({512, 64}, 80, f32);
  const Tensor b = uniform({512}, 81, f32);
  const Tensor xs[] = {uniform({64, 64}, 82, f32), uniform({5, 64}, 83, f32)};
  for (int round = 0; round < 2; ++round) {
    {
      autograd::InferenceMode guard;
      for (int sight = 0; sight < kSights; ++sight)
        for (const Tensor& x : xs)
          for (const Activation act : {Activation::None, Activation::GELU})
            expect_linear(x, w, b, act, 2e-5,
                          fmt::format("round {}, call {}, {} rows", round, sight, x.size(0)));
    }
    mul_(w, -0.5);  // in place: the copy must be made again
  }
}

// Many layers of one geometry (a deep Transformer's) share the packed copies' slots: more layers
// than slots evict one another and must still give each layer's own result.
TEST(FusedLinear, ManyWeightsOfOneShapeKeepTheirOwnResults) {
  autograd::InferenceMode guard;
  std::vector<Tensor> ws;
  for (int i = 0; i < 70; ++i) ws.push_back(uniform({80, 96}, 100 + i, f32));
  const Tensor x = uniform({16, 96}, 99, f32);
  for (int round = 0; round < kSights; ++round)
    for (size_t i = 0; i < ws.size(); i += round == 1 ? 1 : 7)
      expect_linear(x, ws[i], Tensor(), Activation::None, 2e-5,
                    fmt::format("round {}, weight {}", round, i));
}

TEST(FusedLinear, BadArguments) {
  const Tensor w = uniform({3, 4}, 50, f32);
  expect_error(
      [&] {
        fused_linear(uniform({2, 5}, 51, f32), w, Tensor(), Activation::ReLU);
      },
      {"[fused_linear]", "input size(-1)=5 does not match weight size(1)=4"});
  expect_error(
      [&] {
        fused_linear(uniform({2, 4}, 51, f32), w, uniform({4}, 52, f32), Activation::GELU);
      },
      {"[fused_linear]", "bias", "3"});
  expect_error(
      [&] {
        fused_linear(uniform({2, 4}, 51, f32), w, Tensor(), Activation(9));
      },
      {"[fused_linear]", "unknown activation 9"});
}

// ---- dropout ----------------------------------------------------------------------------------

TEST(Dropout, IdentityWhenNotTrainingOrPZero) {
  const Tensor x = uniform({4, 5}, 20);
  EXPECT_TRUE(dropout(x, 0.5, /*training=*/false).is_same(x));
  EXPECT_TRUE(dropout(x, 0.0).is_same(x));
}

TEST(Dropout, POneGivesZeros) {
  const Tensor x = uniform({4, 5}, 21);
  for (double v : values(dropout(x, 1.0))) EXPECT_EQ(v, 0.0);
}

TEST(Dropout, ScalesKeptElementsAndRepeatsWithASeededGenerator) {
  for (DType dt : {f32, f64}) {
    const Tensor x = add(uniform({1000}, 22, dt), 2.0);  // no zeros in x
    Generator g1(7), g2(7);
    const std::vector<double> a = values(dropout(x, 0.3, true, &g1));
    const std::vector<double> b = values(dropout(x, 0.3, true, &g2));
    EXPECT_EQ(a, b);
    const std::vector<double> xv = values(x);
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != 0.0) {
        EXPECT_NEAR(a[i], xv[i] / 0.7, 1e-5 * std::abs(xv[i]));
      }
    }
  }
}

TEST(Dropout, FractionOfZerosIsP) {
  const Tensor x = ones({200000});
  Generator g(3);
  for (double p : {0.1, 0.5, 0.9}) {
    const std::vector<double> v = values(dropout(x, p, true, &g));
    const double zeros_frac =
        static_cast<double>(std::count(v.begin(), v.end(), 0.0)) / static_cast<double>(v.size());
    // Binomial standard deviation is below 0.0012 here; allow 5 of them.
    EXPECT_NEAR(zeros_frac, p, 0.006) << "p=" << p;
  }
}

TEST(Dropout, BadArguments) {
  const Tensor x = uniform({3}, 23);
  expect_error([&] { dropout(x, -0.1); }, {"[dropout]", "[0, 1]", "-0.1"});
  expect_error([&] { dropout(x, 1.5); }, {"[dropout]", "1.5"});
  expect_error([&] { dropout(arange(3), 0.5); }, {"[dropout]", "floating"});
}

TEST(FeatureDropout, ZeroesWholeChannelsAndScalesTheRest) {
  for (int64_t spatial = 1; spatial <= 3; ++spatial) {
    for (bool batched : {true, false}) {
      Shape sizes = batched ? Shape{8, 16} : Shape{16};
      for (int64_t d = 0; d < spatial; ++d) sizes.push_back(3);
      const Tensor x = add(uniform(sizes, 24), 2.0);  // no zeros in x
      Generator g(11);
      const Tensor y = feature_dropout(x, 0.5, spatial, true, &g);
      const int64_t per_channel = x.numel() / (batched ? 8 * 16 : 16);
      const std::vector<double> xv = values(x), yv = values(y);
      int64_t dropped = 0;
      for (size_t c = 0; c < yv.size(); c += static_cast<size_t>(per_channel)) {
        const bool zero = yv[c] == 0.0;
        dropped += zero;
        for (int64_t k = 0; k < per_channel; ++k) {
          const size_t i = c + static_cast<size_t>(k);
          EXPECT_EQ(yv[i] == 0.0, zero) << "a channel is dropped whole, spatial=" << spatial;
          if (!zero) {
            EXPECT_NEAR(yv[i], 2 * xv[i], 1e-5 * xv[i]);
          }
        }
      }
      const int64_t channels = batched ? 8 * 16 : 16;
      EXPECT_GT(dropped, 0) << "spatial=" << spatial;
      EXPECT_LT(dropped, channels) << "spatial=" << spatial;
    }
  }
}

TEST(FeatureDropout, IdentityInEvalAndBadArguments) {
  const Tensor x = uniform({2, 3, 4, 4}, 25);
  EXPECT_TRUE(feature_dropout(x, 0.5, 2, /*training=*/false).is_same(x));
  for (double v : values(feature_dropout(x, 1.0, 2))) EXPECT_EQ(v, 0.0);
  expect_error(
      [&] { feature_dropout(x, 0.5, 1); },
      {"[dropout1d]", "expected a 2-d (unbatched) or 3-d (batched) input", "[2, 3, 4, 4]"});
  expect_error([&] { feature_dropout(x, 1.5, 2); }, {"[dropout2d]", "[0, 1]", "1.5"});
  expect_error([&] { feature_dropout(x, 0.5, 4); }, {"spatial_dims must be 1, 2 or 3"});
  expect_error(
      [&] {
        feature_dropout(ones({2, 3, 4}, DType::Int64), 0.5, 1);
      },
      {"[dropout1d]", "floating"});
}

// ---- embedding --------------------------------------------------------------------------------

TEST(Embedding, PicksRowsForAnyIndexShape) {
  const Tensor w = uniform({5, 3}, 30);
  const Tensor idx = tensor({{4, 0, 4}, {1, 1, 2}});
  const Tensor y = embedding(w, idx);
  EXPECT_EQ(y.sizes(), Shape({2, 3, 3}));
  const std::vector<double> wv = values(w), yv = values(y);
  const std::vector<int64_t> iv = {4, 0, 4, 1, 1, 2};
  for (size_t k = 0; k < iv.size(); ++k) {
    for (size_t j = 0; j < 3; ++j) {
      EXPECT_EQ(yv[k * 3 + j], wv[static_cast<size_t>(iv[k]) * 3 + j]);
    }
  }
  // int32 indices, a 0-d index, a transposed weight and float32 agree.
  expect_near(values(embedding(w, idx.to(DType::Int32))), yv, 0);
  EXPECT_EQ(embedding(w, tensor({3}).reshape({})).sizes(), Shape({3}));
  const Tensor wt = uniform({3, 5}, 31).t();
  expect_near(values(embedding(wt.to(f32), idx)), values(embedding(wt, idx)), 1e-6);
  EXPECT_EQ(embedding(w, empty({0, 2}, i64)).sizes(), Shape({0, 2, 3}));
}

// scale_grad_by_freq: each lookup's gradient divided by its row's count in the call, as in
// PyTorch: rows 1, 1, 2 and 3 (padding) under sum() give row 1 two halves, row 2 one, row 3 none.
TEST(Embedding, ScaleGradByFreqDividesByEachRowsCount) {
  for (const bool scale : {false, true}) {
    const Tensor w = ones({4, 2}, f64).requires_grad_(true);
    sum(embedding(w, tensor({1, 1, 2, 3}).to(DType::Int64), 3, std::nullopt, 2.0, scale))
        .backward();
    expect_near(values(w.grad()), {0, 0, scale ? 1.0 : 2.0, scale ? 1.0 : 2.0, 1, 1, 0, 0}, 1e-12);
  }
}

TEST(Embedding, BadArguments) {
  const Tensor w = uniform({5, 3}, 32);
  expect_error([&] { embedding(w, tensor({1., 2.})); }, {"[embedding]", "int64", "float32"});
  expect_error([&] { embedding(w, tensor({1, 7})); }, {"[embedding]", "index 7", "5 rows"});
  expect_error([&] { embedding(w, tensor({-1})); }, {"[embedding]", "index -1", "5 rows"});
  expect_error([&] { embedding(w, tensor({1}), 5); }, {"[embedding]", "padding_idx=5"});
  expect_error([&] { embedding(uniform({5}, 33), tensor({1})); }, {"[embedding]", "2-d"});
}

// ---- pad --------------------------------------------------------------------------------------

// Pads x (row-major values of `sizes`) in float64: per padded dim, the source index of each
// output position by the mode's rule, -1 meaning the constant.
std::vector<double> pad_ref(const Tensor& x, const std::vector<int64_t>& pads,
                            const std::string& mode, double value, Shape* out_sizes) {
  const std::vector<double> v = values(x);
  const int64_t nd = x.dim();
  Shape in = x.sizes(), out = x.sizes();
  std::vector<int64_t> left(static_cast<size_t>(nd), 0);
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    const int64_t d = nd - 1 - static_cast<int64_t>(i);
    left[static_cast<size_t>(d)] = pads[2 * i];
    out[d] = in[d] + pads[2 * i] + pads[2 * i + 1];
  }
  *out_sizes = out;
  int64_t total = 1;
  for (int64_t s : out) total *= s;
  std::vector<double> r(static_cast<size_t>(total));
  for (int64_t k = 0; k < total; ++k) {
    int64_t rem = k, src = 0, stride = 1;
    bool constant = false;
    std::vector<int64_t> o(static_cast<size_t>(nd));
    for (int64_t d = nd - 1; d >= 0; --d) {
      o[static_cast<size_t>(d)] = rem % out[d];
      rem /= out[d];
    }
    for (int64_t d = nd - 1; d >= 0; --d) {
      const int64_t n = in[d];
      int64_t s = o[static_cast<size_t>(d)] - left[static_cast<size_t>(d)];
      if (mode == "constant") {
        if (s < 0 || s >= n) constant = true;
      } else if (mode == "reflect") {
        s = s < 0 ? -s : s;
        s = s >= n ? 2 * (n - 1) - s : s;
      } else if (mode == "replicate") {
        s = std::clamp<int64_t>(s, 0, n - 1);
      } else {
        s = ((s % n) + n) % n;
      }
      src += s * stride;
      stride *= n;
    }
    r[static_cast<size_t>(k)] = constant ? value : v[static_cast<size_t>(src)];
  }
  return r;
}

TEST(Pad, AllModesMatchReference) {
  const Tensor x = uniform({2, 3, 4}, 40);
  const std::vector<std::vector<int64_t>> cases = {
      {1, 2}, {2, 1, 1, 2}, {0, 3, 2, 0}, {1, 1, 1, 1, 1, 0}, {3, 3}};
  for (const char* mode : {"constant", "reflect", "replicate", "circular"}) {
    for (const auto& p : cases) {
      Shape want;
      const std::vector<double> ref = pad_ref(x, p, mode, 0.5, &want);
      const Tensor y = pad(x, p, mode, 0.5);
      EXPECT_EQ(y.sizes(), want) << mode;
      expect_near(values(y), ref, 0);
    }
  }
}

TEST(Pad, HandComputedModes) {
  const Tensor x = tensor({1., 2., 3.});
  expect_near(values(pad(x, {2, 1}, "constant", 9.0)), {9, 9, 1, 2, 3, 9}, 0);
  expect_near(values(pad(x, {2, 2}, "reflect")), {3, 2, 1, 2, 3, 2, 1}, 0);
  expect_near(values(pad(x, {2, 1}, "replicate")), {1, 1, 1, 2, 3, 3}, 0);
  expect_near(values(pad(x, {2, 3}, "circular")), {2, 3, 1, 2, 3, 1, 2, 3}, 0);
}

TEST(Pad, NegativePaddingCrops) {
  const Tensor x = tensor({{1., 2., 3., 4.}, {5., 6., 7., 8.}});
  expect_near(values(pad(x, {-1, 2})), {2, 3, 4, 0, 0, 6, 7, 8, 0, 0}, 0);
  expect_near(values(pad(x, {-1, -2, 1, -1})), {0, 2}, 0);
  EXPECT_EQ(pad(x, {-2, -2}).sizes(), Shape({2, 0}));
  // Non-contiguous input, float32 and int64 keep their dtype.
  const Tensor xt = uniform({4, 3}, 41).t();
  Shape want;
  expect_near(values(pad(xt, {1, -1, -1, 2}, "constant", 0.0)),
              pad_ref(xt.contiguous(), {1, -1, -1, 2}, "constant", 0.0, &want), 0);
  EXPECT_EQ(pad(x.to(f32), {1, 1}).dtype(), f32);
  expect_near(values(pad(arange(3), {1, 0}, "constant", 7)), {7, 0, 1, 2}, 0);
  // Extreme pads that cancel: INT64_MIN crops everything on the left and INT64_MAX replicates
  // on the right, leaving n - 1 copies of the last element (no wrap in o - left).
  expect_near(values(pad(tensor({1., 2., 3.}),
                         {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()},
                         "replicate")),
              {3, 3}, 0);
}

TEST(Pad, BadArguments) {
  const Tensor x = uniform({2, 3}, 42);
  expect_error([&] { pad(x, {1, 2, 3}); }, {"[pad]", "even", "3 values"});
  expect_error([&] { pad(x, {1, 1, 1, 1, 1, 1}); }, {"[pad]", "6 values", "only 2"});
  expect_error([&] { pad(x, {3, 0}, "reflect"); }, {"[pad]", "reflect", "3", "size 3"});
  expect_error([&] { pad(x, {1, 1}, "wrap"); }, {"[pad]", "unknown mode 'wrap'"});
  expect_error([&] { pad(x, {-2, -2}); }, {"[pad]", "negative size -1"});
  expect_error([&] { pad(x, {4, 0}, "circular"); }, {"[pad]", "circular", "size 3"});
}

// ---- interpolate ------------------------------------------------------------------------------

// PyTorch's interpolation in float64 straight from the 2-d formulas.
std::vector<double> interp_ref(const Tensor& x, int64_t oh, int64_t ow, double sh, double sw,
                               bool bilinear, bool align) {
  const std::vector<double> v = values(x);
  const int64_t nc = x.size(0) * x.size(1), ih = x.size(2), iw = x.size(3);
  std::vector<double> r;
  auto src = [&](int64_t o, int64_t in, int64_t out, double scale) {
    if (align) return out > 1 ? static_cast<double>(o) * (in - 1) / (out - 1) : 0.0;
    return std::max(0.0, (o + 0.5) * scale - 0.5);
  };
  for (int64_t p = 0; p < nc; ++p) {
    const double* img = v.data() + p * ih * iw;
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        if (!bilinear) {
          const int64_t y = std::min(static_cast<int64_t>(std::floor(i * sh)), ih - 1);
          const int64_t xx = std::min(static_cast<int64_t>(std::floor(j * sw)), iw - 1);
          r.push_back(img[y * iw + xx]);
          continue;
        }
        const double sy = src(i, ih, oh, sh), sx = src(j, iw, ow, sw);
        const int64_t y0 = std::min(static_cast<int64_t>(sy), ih - 1),
                      y1 = std::min(y0 + 1, ih - 1);
        const int64_t x0 = std::min(static_cast<int64_t>(sx), iw - 1),
                      x1 = std::min(x0 + 1, iw - 1);
        const double ly = sy - y0, lx = sx - x0;
        r.push_back((1 - ly) * ((1 - lx) * img[y0 * iw + x0] + lx * img[y0 * iw + x1]) +
                    ly * ((1 - lx) * img[y1 * iw + x0] + lx * img[y1 * iw + x1]));
      }
    }
  }
  return r;
}

TEST(Interpolate, NearestMatchesReference) {
  const Tensor x = uniform({2, 3, 5, 4}, 50);
  for (const Shape& s : {Shape{10, 8}, Shape{3, 7}, Shape{5, 4}, Shape{1, 1}}) {
    const Tensor y = interpolate(x, s);
    EXPECT_EQ(y.sizes(), Shape({2, 3, s[0], s[1]}));
    expect_near(values(y), interp_ref(x, s[0], s[1], 5.0 / s[0], 4.0 / s[1], false, false), 0);
  }
  // Hand-computed: [0 1 2] to 5 picks floor(j * 3 / 5) = 0 0 1 1 2.
  const Tensor row = tensor({0., 1., 2.}).view({1, 1, 1, 3});
  expect_near(values(interpolate(row, {1, 5})), {0, 0, 1, 1, 2}, 0);
  // Integer tensors and scale factors.
  expect_near(values(interpolate(arange(4).view({1, 1, 2, 2}), 2.0)),
              {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3}, 0);
}

TEST(Interpolate, BilinearMatchesReference) {
  const Tensor x = uniform({2, 2, 4, 5}, 51);
  for (bool align : {false, true}) {
    for (const Shape& s : {Shape{8, 10}, Shape{3, 3}, Shape{7, 2}, Shape{1, 1}, Shape{4, 5}}) {
      const Tensor y = interpolate(x, s, "bilinear", align);
      expect_near(values(y), interp_ref(x, s[0], s[1], 4.0 / s[0], 5.0 / s[1], true, align), 1e-12);
      expect_near(values(interpolate(x.to(f32), s, "bilinear", align)), values(y), 1e-5);
    }
    // Scale factor: output floor(in * s), source scale 1 / s.
    const Tensor y = interpolate(x, 1.5, "bilinear", align);
    EXPECT_EQ(y.sizes(), Shape({2, 2, 6, 7}));
    expect_near(values(y), interp_ref(x, 6, 7, 1 / 1.5, 1 / 1.5, true, align), 1e-12);
  }
  // Hand-computed: [0 1] to 4 without align_corners: src = (j + .5) / 2 - .5 -> 0, .25, .75, 1.
  const Tensor row = tensor({0., 1.}, f64).view({1, 1, 1, 2});
  expect_near(values(interpolate(row, {1, 4}, "bilinear")), {0, 0.25, 0.75, 1}, 1e-12);
  expect_near(values(interpolate(row, {1, 4}, "bilinear", true)), {0, 1. / 3, 2. / 3, 1}, 1e-12);
  // Non-contiguous input and an empty batch.
  const Tensor xp = uniform({4, 5, 2, 2}, 52).permute({2, 3, 0, 1});
  expect_near(values(interpolate(xp, {6, 3}, "bilinear")),
              interp_ref(xp.contiguous(), 6, 3, 4.0 / 6, 5.0 / 3, true, false), 1e-12);
  EXPECT_EQ(interpolate(empty({0, 2, 3, 3}, f64), {6, 6}, "bilinear").sizes(), Shape({0, 2, 6, 6}));
}

TEST(Interpolate, BadArguments) {
  const Tensor x = uniform({1, 1, 3, 3}, 53);
  expect_error(
      [&] {
        interpolate(uniform({1, 3, 3}, 54), {6, 6});
      },
      {"[interpolate]", "one value or one per spatial dim (1)", "2"});
  expect_error(
      [&] {
        interpolate(uniform({3, 3}, 54), {6});
      },
      {"[interpolate]", "3-d, 4-d or 5-d"});
  expect_error([&] { interpolate(x, {6, 6}, "cubic"); }, {"[interpolate]", "'cubic'"});
  expect_error([&] { interpolate(x, {6, 6}, "trilinear"); }, {"[interpolate]", "5-d", "4-d"});
  expect_error([&] { interpolate(x, {6, 6, 6}); }, {"[interpolate]", "one per spatial dim"});
  expect_error([&] { interpolate(x, {0, 6}); }, {"[interpolate]", "positive"});
  // One size stands for every spatial dim, as a Python int does.
  EXPECT_EQ(interpolate(x, Shape{6}).sizes(), Shape({1, 1, 6, 6}));
  expect_error([&] { interpolate(x, -1.0); }, {"[interpolate]", "scale_factor"});
  expect_error(
      [&] {
        interpolate(x, {6, 6}, "nearest", true);
      },
      {"[interpolate]", "align_corners"});
  expect_error(
      [&] {
        interpolate(arange(9).view({1, 1, 3, 3}), {6, 6}, "bilinear");
      },
      {"[interpolate]", "floating", "int64"});
}

// Hand-computed values of the modes beyond nearest and bilinear (PyTorch's, checked against
// PyTorch on random inputs in tests/python/test_ops.py).
TEST(Interpolate, AreaCubicNearestExactAndLinearByHand) {
  const Tensor row = tensor({0., 1., 2., 3.}, f64).view({1, 1, 4});
  // area: the mean of each output's window, [0, 2) and [2, 4).
  expect_near(values(interpolate(row, Shape{2}, "area")), {0.5, 2.5}, 1e-12);
  // nearest-exact picks floor((o + 0.5) * 4 / 3) = 0, 2, 3; nearest floor(o * 4 / 3) = 0, 1, 2.
  expect_near(values(interpolate(row, Shape{3}, "nearest-exact")), {0, 2, 3}, 0);
  expect_near(values(interpolate(row, Shape{3}, "nearest")), {0, 1, 2}, 0);
  // linear with align_corners: 4 points onto 7, steps of 0.5.
  expect_near(values(interpolate(row, Shape{7}, "linear", true)), {0, 0.5, 1, 1.5, 2, 2.5, 3},
              1e-12);
  // bicubic (a = -0.75) halfway between pixels weighs its four neighbours -3/32, 19/32, 19/32,
  // -3/32: a ramp comes back exactly inside the image, and at the border the clamped index
  // repeats pixel 0: 19/32 * 1 - 3/32 * 2 = 13/32. With align_corners the corners stay put.
  const Tensor ramp = arange(0, 6).to(f64).view({1, 1, 1, 6});
  const std::vector<double> cubic = values(interpolate(ramp, {1, 11}, "bicubic", true));
  for (int i = 2; i < 9; ++i) EXPECT_NEAR(cubic[i], 0.5 * i, 1e-12) << i;
  EXPECT_NEAR(cubic[0], 0, 1e-12);
  EXPECT_NEAR(cubic[1], 13.0 / 32, 1e-12);
  EXPECT_NEAR(cubic[10], 5, 1e-12);
  // trilinear of a constant is that constant.
  expect_near(values(interpolate(full({1, 1, 2, 3, 2}, 7.0, f64), {3, 2, 5}, "trilinear")),
              std::vector<double>(30, 7.0), 1e-12);
  InterpolateOptions aa;
  aa.mode = "bilinear";
  aa.antialias = true;
  // Antialiased shrink of a 1x4 row to 1x2 with a triangle filter two pixels wide: each output
  // weighs its four nearest inputs 1/8, 3/8, 3/8, 1/8 (normalized), clipped at the border.
  const Tensor r4 = tensor({0., 1., 2., 3.}, f64).view({1, 1, 1, 4});
  aa.size = {1, 2};
  expect_near(values(interpolate(r4, aa)),
              {(0 * 3 + 1 * 3 + 2 * 1) / 7.0, (1 + 2 * 3 + 3 * 3) / 7.0}, 1e-12);
}

}  // namespace
}  // namespace ember::testing
