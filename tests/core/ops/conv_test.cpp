// conv2d and conv_transpose2d: hand-computed cases, float64 reference loops over strides,
// padding, dilation, groups and bias (float32 through oneDNN, float64 through the own loops),
// float32 gradients against float64 ones, unbatched, non-contiguous and zero-size inputs, and
// every argument check.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

struct Cfg {
  int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, g;
  bool bias;
  int64_t oph = 0, opw = 0;  // conv_transpose2d only
  std::string str() const {
    return fmt::format("N{} C{} {}x{} O{} k{}x{} s{},{} p{},{} d{},{} g{} bias{} op{},{}", n, c, h,
                       w, o, kh, kw, sh, sw, ph, pw, dh, dw, g, bias, oph, opw);
  }
};

Tensor random(IntList sizes, DType dtype, uint64_t seed) {
  Generator gen(seed);
  return add(mul(rand(sizes, DType::Float64, &gen), 2.0), -1.0).to(dtype);
}

// y[n,o,i,j] = b[o] + sum x[n, c, i*sh-ph+a*dh, j*sw-pw+e*dw] w[o, c%cg, a, e], taps in range.
std::vector<double> conv_ref(const std::vector<double>& x, const std::vector<double>& w,
                             const std::vector<double>& b, const Cfg& k, int64_t oh, int64_t ow) {
  const int64_t cg = k.c / k.g, og = k.o / k.g;
  std::vector<double> y(static_cast<size_t>(k.n * k.o * oh * ow), 0.0);
  for (int64_t n = 0; n < k.n; ++n) {
    for (int64_t o = 0; o < k.o; ++o) {
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          double s = b.empty() ? 0.0 : b[static_cast<size_t>(o)];
          for (int64_t ci = 0; ci < cg; ++ci) {
            const int64_t c = (o / og) * cg + ci;
            for (int64_t a = 0; a < k.kh; ++a) {
              for (int64_t e = 0; e < k.kw; ++e) {
                const int64_t ih = i * k.sh - k.ph + a * k.dh, iw = j * k.sw - k.pw + e * k.dw;
                if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                s += x[static_cast<size_t>(((n * k.c + c) * k.h + ih) * k.w + iw)] *
                     w[static_cast<size_t>(((o * cg + ci) * k.kh + a) * k.kw + e)];
              }
            }
          }
          y[static_cast<size_t>(((n * k.o + o) * oh + i) * ow + j)] = s;
        }
      }
    }
  }
  return y;
}

// Transposed convolution by scattering: every x[n, c, i, j] adds x * w[c, o%og, a, e] to
// y[n, o, i*sh-ph+a*dh, j*sw-pw+e*dw] for o in c's group; here k.c is the input channel count
// and k.o the output one, w is [C, O/g, kh, kw].
std::vector<double> conv_transpose_ref(const std::vector<double>& x, const std::vector<double>& w,
                                       const std::vector<double>& b, const Cfg& k, int64_t oh,
                                       int64_t ow) {
  const int64_t cg = k.c / k.g, og = k.o / k.g;
  std::vector<double> y(static_cast<size_t>(k.n * k.o * oh * ow), 0.0);
  for (int64_t n = 0; n < k.n; ++n) {
    for (int64_t c = 0; c < k.c; ++c) {
      for (int64_t i = 0; i < k.h; ++i) {
        for (int64_t j = 0; j < k.w; ++j) {
          const double xv = x[static_cast<size_t>(((n * k.c + c) * k.h + i) * k.w + j)];
          for (int64_t oi = 0; oi < og; ++oi) {
            const int64_t o = (c / cg) * og + oi;
            for (int64_t a = 0; a < k.kh; ++a) {
              for (int64_t e = 0; e < k.kw; ++e) {
                const int64_t yh = i * k.sh - k.ph + a * k.dh, yw = j * k.sw - k.pw + e * k.dw;
                if (yh < 0 || yh >= oh || yw < 0 || yw >= ow) continue;
                y[static_cast<size_t>(((n * k.o + o) * oh + yh) * ow + yw)] +=
                    xv * w[static_cast<size_t>(((c * og + oi) * k.kh + a) * k.kw + e)];
              }
            }
          }
        }
      }
    }
  }
  if (!b.empty()) {
    for (size_t i = 0; i < y.size(); ++i) {
      y[i] += b[(i / static_cast<size_t>(oh * ow)) % static_cast<size_t>(k.o)];
    }
  }
  return y;
}

const std::vector<Cfg> kConvCases = {
    {2, 3, 7, 6, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1, false},
    {2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},
    {1, 4, 9, 8, 6, 3, 2, 2, 3, 1, 0, 1, 1, 1, true},    // stride skips trailing rows
    {2, 4, 10, 9, 4, 3, 3, 1, 2, 2, 1, 2, 3, 1, false},  // dilation
    {2, 6, 8, 8, 4, 3, 3, 2, 2, 1, 1, 1, 1, 2, true},    // groups
    {1, 8, 8, 7, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8, true},    // depthwise
    {3, 16, 12, 12, 32, 1, 1, 1, 1, 0, 0, 1, 1, 1, true},
    {1, 2, 3, 3, 3, 5, 5, 1, 1, 2, 2, 1, 1, 1, true},  // kernel larger than the input
    {2, 16, 14, 14, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},
    {2, 12, 9, 9, 20, 1, 1, 2, 2, 0, 0, 1, 1, 1, true},  // 1x1 strided
    {1, 5, 6, 6, 7, 1, 1, 1, 1, 0, 0, 1, 1, 1, false},   // 1x1, channels not a multiple of 8
};

Tensor run_conv(const Cfg& k, const Tensor& x, const Tensor& w, const Tensor& b) {
  return conv2d(x, w, b, {k.sh, k.sw}, {k.ph, k.pw}, {k.dh, k.dw}, k.g);
}

/** Random operands of case k in dtype dt (seeds from `seed` on) and the float64 reference. */
struct RandomCase {
  Tensor x, w, b;
  int64_t oh, ow;
  std::vector<double> want;
  RandomCase(const Cfg& k, DType dt, uint64_t& seed)
      : x(random({k.n, k.c, k.h, k.w}, dt, seed++)),
        w(random({k.o, k.c / k.g, k.kh, k.kw}, dt, seed++)),
        b(k.bias ? random({k.o}, dt, seed++) : Tensor()),
        oh((k.h + 2 * k.ph - k.dh * (k.kh - 1) - 1) / k.sh + 1),
        ow((k.w + 2 * k.pw - k.dw * (k.kw - 1) - 1) / k.sw + 1),
        want(conv_ref(values(x), values(w), b.defined() ? values(b) : std::vector<double>{}, k, oh,
                      ow)) {}
};

// Expects each float32 gradient (f32[i]) within 1e-4, relative, of the float64 one (f64[i]).
void expect_grads_close(const std::vector<std::vector<double>>& f64,
                        const std::vector<std::vector<double>>& f32, const std::string& what) {
  ASSERT_EQ(f64.size(), f32.size()) << what;
  for (size_t i = 0; i < f64.size(); ++i) {
    ASSERT_EQ(f64[i].size(), f32[i].size());
    for (size_t j = 0; j < f64[i].size(); ++j) {
      ASSERT_NEAR(f32[i][j], f64[i][j], 1e-4 * (1 + std::abs(f64[i][j])))
          << what << " grad " << i << " at " << j;
    }
  }
}

TEST(Conv2d, HandComputed) {
  const Tensor x = make({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3}, f32);
  const Tensor w = make({1, 0, 0, 1}, {1, 1, 2, 2}, f32);
  const Tensor b = make({1}, {1}, f32);
  const Tensor y = conv2d(x, w, b);
  EXPECT_EQ(y.sizes(), Shape({1, 1, 2, 2}));
  expect_close(y, {7, 9, 13, 15}, 0, "diagonal kernel");
  // Padding 1, stride 2: the corners of the padded image.
  const Tensor ones_w = make({1, 1, 1, 1}, {1, 1, 2, 2}, f64);
  expect_close(conv2d(x.to(f64), ones_w, {}, {2, 2}, {1, 1}), {1, 5, 11, 28}, 0, "stride 2 pad 1");
}

TEST(Conv2d, MatchesReference) {
  for (DType dt : {f32, f64}) {
    uint64_t seed = 1;
    for (const Cfg& k : kConvCases) {
      const RandomCase r(k, dt, seed);
      const Tensor y = run_conv(k, r.x, r.w, r.b);
      ASSERT_EQ(y.sizes(), Shape({k.n, k.o, r.oh, r.ow})) << k.str();
      EXPECT_EQ(y.dtype(), dt);
      expect_close(y, r.want, dt == f32 ? 1e-5 : 1e-12,
                   k.str() + " " + std::string(dtype_name(dt)));
      // Channels-last operands (Note [1x1 convolutions on AVX2] picks another kernel for them).
      const auto cl = [](const Tensor& t) { return t.contiguous(MemoryFormat::ChannelsLast); };
      const Tensor y_cl = run_conv(k, cl(r.x), cl(r.w), r.b);
      EXPECT_EQ(y_cl.suggest_memory_format(), MemoryFormat::ChannelsLast) << k.str();
      expect_close(y_cl, r.want, dt == f32 ? 1e-5 : 1e-12,
                   k.str() + " channels-last " + std::string(dtype_name(dt)));
    }
  }
}

// Note [Fused convolution and ReLU]: conv2d_relu is max(conv2d, 0) of the float64 reference on
// every geometry, row-major and channels-last, through the fused kernel (nothing recorded) and
// through the composite (inputs requiring grad), whose gradient is the unfused one's.
TEST(Conv2d, ReluFusedMatchesReference) {
  for (DType dt : {f32, f64}) {
    uint64_t seed = 40;
    for (const Cfg& k : kConvCases) {
      const RandomCase r(k, dt, seed);
      const Tensor &x = r.x, &w = r.w, &b = r.b;
      std::vector<double> want = r.want;
      size_t negative = 0;
      for (double& v : want) negative += v < 0 ? (v = 0, 1) : 0;
      ASSERT_GT(negative, 0u) << "the case must have something to rectify";
      const std::string what = k.str() + " " + std::string(dtype_name(dt));
      const auto fused = [&](const Tensor& xx, const Tensor& ww) {
        return conv2d_relu(xx, ww, b, {k.sh, k.sw}, {k.ph, k.pw}, {k.dh, k.dw}, k.g);
      };
      const double tol = dt == f32 ? 1e-5 : 1e-12;
      expect_close(fused(x, w), want, tol, what);
      const Tensor y_cl =
          fused(x.contiguous(MemoryFormat::ChannelsLast), w.contiguous(MemoryFormat::ChannelsLast));
      EXPECT_EQ(y_cl.suggest_memory_format(), MemoryFormat::ChannelsLast) << what;
      expect_close(y_cl, want, tol, what + " channels-last");
      const Tensor xg = x.clone().requires_grad_(true), xr = x.clone().requires_grad_(true);
      const Tensor yg = fused(xg, w);
      expect_close(yg, want, tol, what + " recorded");
      sum(mul(yg, yg)).backward();
      sum(mul(relu(run_conv(k, xr, w, b)), relu(run_conv(k, xr, w, b)))).backward();
      expect_close(xg.grad(), values(xr.grad()), tol, what + " gradient");
    }
  }
  // Unbatched; a NaN sum is NaN or 0 (Note [Fused convolution and ReLU]), never anything else.
  const Tensor x = random({2, 4, 4}, f32, 90), w = random({3, 2, 3, 3}, f32, 91);
  expect_close(conv2d_relu(x, w), values(relu(conv2d(x, w))), 1e-6, "unbatched");
  Tensor xn = x.clone();
  xn.fill_(std::nan(""));
  for (double v : values(conv2d_relu(xn, w))) EXPECT_TRUE(std::isnan(v) || v == 0.0) << v;
  for (double v : values(conv2d_relu(xn.to(f64), w.to(f64)))) EXPECT_TRUE(std::isnan(v));
  expect_error(
      [&] {
        conv2d_relu(x, random({3, 3, 3, 3}, f32, 92));
      },
      {"[conv2d_relu] expected input with 3 channels"});
}

// Note [Convolution, residual add and ReLU]: conv2d_add_relu is max(conv2d + r, 0) of the
// float64 reference on every geometry and dtype, the residual row-major or channels-last under
// either layout of the convolution (and the output in the convolution's), through the fused
// kernel and through the composite (inputs requiring grad), whose gradients are the unfused
// ones', the residual's included.
TEST(Conv2d, ResidualAddAndReluFusedMatchReference) {
  for (DType dt : {f32, f64, bf16}) {
    uint64_t seed = 140;
    for (const Cfg& k : kConvCases) {
      const RandomCase c(k, dt, seed);
      const Tensor &x = c.x, &w = c.w, &b = c.b;
      const Tensor r = random({k.n, k.o, c.oh, c.ow}, dt, seed++);
      std::vector<double> want = c.want;
      const std::vector<double> rv = values(r);
      size_t negative = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        want[i] += rv[i];
        negative += want[i] < 0 ? (want[i] = 0, 1) : 0;
      }
      ASSERT_GT(negative, 0u) << "the case must have something to rectify";
      const std::string what = k.str() + " " + std::string(dtype_name(dt));
      const auto fused = [&](const Tensor& xx, const Tensor& ww, const Tensor& rr) {
        return conv2d_add_relu(xx, ww, rr, b, {k.sh, k.sw}, {k.ph, k.pw}, {k.dh, k.dw}, k.g);
      };
      const double tol = dt == f32 ? 1e-5 : dt == f64 ? 1e-12 : 3e-2;
      expect_close(fused(x, w, r), want, tol, what);
      const auto cl = [](const Tensor& t) { return t.contiguous(MemoryFormat::ChannelsLast); };
      const Tensor y_cl = fused(cl(x), cl(w), cl(r));
      EXPECT_EQ(y_cl.suggest_memory_format(), MemoryFormat::ChannelsLast) << what;
      expect_close(y_cl, want, tol, what + " channels-last");
      expect_close(fused(cl(x), cl(w), r), want, tol, what + " row-major residual");
      expect_close(fused(x, w, cl(r)), want, tol, what + " channels-last residual");
      expect_close(fused(x, w, r.clone()), want, tol, what + " again (cached primitive)");
      if (dt != f32) continue;
      const Tensor xg = x.clone().requires_grad_(true), xr = x.clone().requires_grad_(true);
      const Tensor rg = r.clone().requires_grad_(true), rr = r.clone().requires_grad_(true);
      const Tensor yg = fused(xg, w, rg);
      expect_close(yg, want, tol, what + " recorded");
      sum(mul(yg, yg)).backward();
      const Tensor yr = relu(add(run_conv(k, xr, w, b), rr));
      sum(mul(yr, yr)).backward();
      expect_close(xg.grad(), values(xr.grad()), tol, what + " input gradient");
      expect_close(rg.grad(), values(rr.grad()), tol, what + " residual gradient");
    }
  }
}

TEST(Conv2d, ResidualAddAndReluEdgesAndBadArguments) {
  // Unbatched; no input channels (the bias and the residual alone); an empty batch.
  const Tensor x = random({2, 4, 4}, f32, 190), w = random({3, 2, 3, 3}, f32, 191);
  const Tensor r = random({3, 2, 2}, f32, 192), b = random({3}, f32, 193);
  expect_close(conv2d_add_relu(x, w, r), values(relu(add(conv2d(x, w), r))), 1e-6, "unbatched");
  const Tensor r4 = random({2, 3, 4, 4}, f32, 194);
  expect_close(conv2d_add_relu(empty({2, 0, 4, 4}, f32), empty({3, 0, 1, 1}, f32), r4, b),
               values(relu(add(b.view({1, 3, 1, 1}), r4))), 0, "no input channels");
  EXPECT_EQ(conv2d_add_relu(empty({0, 2, 4, 4}, f32), w, empty({0, 3, 2, 2}, f32)).sizes(),
            Shape({0, 3, 2, 2}));
  // A NaN sum is NaN or 0, never anything else; NaN in float64 (the own loops).
  Tensor rn = r.clone();
  rn.fill_(std::nan(""));
  for (double v : values(conv2d_add_relu(x, w, rn))) EXPECT_TRUE(std::isnan(v) || v == 0.0) << v;
  for (double v : values(conv2d_add_relu(x.to(f64), w.to(f64), rn.to(f64))))
    EXPECT_TRUE(std::isnan(v));
  expect_error(
      [&] {
        conv2d_add_relu(x, w, random({3, 3, 2}, f32, 195));
      },
      {"[conv2d_add_relu]", "residual", "[3, 2, 2]", "[3, 3, 2]"});
  expect_error([&] { conv2d_add_relu(x, w, r.to(f64)); },
               {"[conv2d_add_relu] input and residual dtypes differ"});
  expect_error([&] { conv2d_add_relu(x, w, Tensor()); }, {"[conv2d_add_relu] undefined residual"});
  expect_error(
      [&] {
        conv2d_add_relu(x, random({3, 3, 3, 3}, f32, 196), r);
      },
      {"[conv2d_add_relu] expected input with 3 channels"});
}

TEST(Conv2d, HalfTypes) {
  const Cfg k = {2, 4, 6, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 2, true};
  for (DType dt : {bf16, f16}) {
    const Tensor x = random({2, 4, 6, 6}, dt, 3), w = random({4, 2, 3, 3}, dt, 4),
                 b = random({4}, dt, 5);
    const Tensor y = run_conv(k, x, w, b);
    EXPECT_EQ(y.dtype(), dt);
    expect_close(y, conv_ref(values(x), values(w), values(b), k, 6, 6), 2e-2, "half types");
  }
}

// Half of one unit in the last place of `v` in a type with `mantissa` stored bits (bfloat16 7,
// float16 10, whose subnormals end at 2^-24).
double half_ulp(double v, int mantissa) {
  if (v == 0) return 0;
  int e = 0;
  std::frexp(v, &e);
  return std::ldexp(1.0, std::max(e - 1 - mantissa, mantissa == 10 ? -24 : -133)) / 2;
}

// Every value of `got` is `want` rounded once to the half type, up to the error of a float32
// sum (Note [Half-type convolutions in float32] in backends/cpu/ops/conv.cpp).
void expect_rounded_once(const Tensor& got, const std::vector<double>& want, DType dt,
                         const std::string& what) {
  const std::vector<double> v = values(got);
  ASSERT_EQ(v.size(), want.size()) << what;
  const int mantissa = dt == bf16 ? 7 : 10;
  for (size_t i = 0; i < v.size(); ++i) {
    const double tol = half_ulp(want[i], mantissa) * 1.001 + 1e-5 * (1 + std::abs(want[i]));
    ASSERT_NEAR(v[i], want[i], tol) << what << " at " << i;
  }
}

TEST(Conv2d, HalfTypesAccumulateInFloat32AndRoundOnce) {
  uint64_t seed = 200;
  for (DType dt : {bf16, f16}) {
    for (const Cfg& k : kConvCases) {
      const std::string what = k.str() + " " + std::string(dtype_name(dt));
      Tensor x = random({k.n, k.c, k.h, k.w}, dt, seed++);
      Tensor w = random({k.o, k.c / k.g, k.kh, k.kw}, dt, seed++);
      x.requires_grad_(true);
      w.requires_grad_(true);
      const Tensor y = run_conv(k, x, w, Tensor());
      const int64_t oh = y.size(2), ow = y.size(3);
      expect_rounded_once(y, conv_ref(values(x), values(w), {}, k, oh, ow), dt, what);
      // The gradients against float64 ones of the same (exactly widened) values.
      const Tensor r = random(y.sizes(), dt, seed++);
      sum(mul(y, r)).backward();
      Tensor x64 = x.detach().to(f64), w64 = w.detach().to(f64);
      x64.requires_grad_(true);
      w64.requires_grad_(true);
      sum(mul(run_conv(k, x64, w64, Tensor()), r.to(f64))).backward();
      expect_rounded_once(x.grad(), values(x64.grad()), dt, what + " dx");
      expect_rounded_once(w.grad(), values(w64.grad()), dt, what + " dw");
    }
  }
}

TEST(Conv2d, UnbatchedInput) {
  const Tensor x = random({3, 5, 5}, f32, 7), w = random({2, 3, 3, 3}, f32, 8);
  const Tensor y = conv2d(x, w, {}, {1}, {1});
  EXPECT_EQ(y.sizes(), Shape({2, 5, 5}));
  const Cfg k = {1, 3, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, false};
  expect_close(y, conv_ref(values(x), values(w), {}, k, 5, 5), 1e-5, "unbatched");
}

TEST(Conv2d, NonContiguousInputs) {
  // x as a transposed view (H and W swapped) and a weight sliced out of a bigger one.
  const Tensor xt = random({2, 3, 6, 5}, f32, 9).transpose(2, 3);
  const Tensor wb = random({4, 6, 3, 3}, f32, 10);
  const Tensor w = wb.slice(1, 0, 6, 2);
  ASSERT_FALSE(xt.is_contiguous());
  ASSERT_FALSE(w.is_contiguous());
  const Tensor y = conv2d(xt, w, {}, {1, 2}, {1, 0});
  const Cfg k = {2, 3, 5, 6, 4, 3, 3, 1, 2, 1, 0, 1, 1, 1, false};
  expect_close(y, conv_ref(values(xt), values(w), {}, k, 5, 2), 1e-5, "non-contiguous");
}

TEST(Conv2d, ZeroSizeBatch) {
  const Tensor x = empty({0, 3, 5, 5}, f32);
  Tensor w = random({4, 3, 3, 3}, f32, 11);
  w.requires_grad_(true);
  const Tensor y = conv2d(x, w, {}, {2}, {1});
  EXPECT_EQ(y.sizes(), Shape({0, 4, 3, 3}));
  sum(y).backward();
  ASSERT_TRUE(w.grad().defined());
  for (double v : values(w.grad())) EXPECT_EQ(v, 0.0);
}

TEST(Conv2d, Float32GradientsMatchFloat64) {
  // The float32 gradients come from oneDNN's backward primitives, the float64 ones from the
  // own loops (which gradcheck verifies).
  uint64_t seed = 100;
  for (const Cfg& k : kConvCases) {
    const Tensor x64 = random({k.n, k.c, k.h, k.w}, f64, seed++);
    const Tensor w64 = random({k.o, k.c / k.g, k.kh, k.kw}, f64, seed++);
    const Tensor b64 = random({k.o}, f64, seed++);
    std::vector<std::vector<double>> grads[2];
    for (int pass = 0; pass < 2; ++pass) {
      const DType dt = pass == 0 ? f64 : f32;
      Tensor x = x64.detach().to(dt), w = w64.detach().to(dt), b = b64.detach().to(dt);
      x.requires_grad_(true);
      w.requires_grad_(true);
      b.requires_grad_(true);
      const Tensor y = run_conv(k, x, w, b);
      const Tensor r = random(y.sizes(), dt, seed);
      sum(mul(y, r)).backward();
      grads[pass] = {values(x.grad()), values(w.grad()), values(b.grad())};
    }
    ++seed;
    ASSERT_NO_FATAL_FAILURE(expect_grads_close(grads[0], grads[1], k.str()));
  }
}

TEST(Conv2d, RepeatedCallsReuseCachedPrimitives) {
  // Same shapes, different data: the cached primitive must read the new operands.
  const Cfg k = kConvCases[1];
  for (uint64_t s = 0; s < 3; ++s) {
    const Tensor x = random({k.n, k.c, k.h, k.w}, f32, 200 + s);
    const Tensor w = random({k.o, k.c, k.kh, k.kw}, f32, 300 + s);
    const Tensor b = random({k.o}, f32, 400 + s);
    expect_close(run_conv(k, x, w, b), conv_ref(values(x), values(w), values(b), k, k.h, k.w), 1e-5,
                 "repeat");
  }
}

// Note [Testing the reordered weight cache]: float32 convolutions keep the weight reordered into
// oneDNN's layout between calls, keyed by the weight's storage identity and version. These
// tests change the weight between calls in every way a training loop does (in place, through a
// view, by an optimizer step) and recycle its memory block, and check each result against the
// float64 reference of the weight's current values. The geometry is one oneDNN runs blocked.
// A weight is kept on its second sight, so every state runs kSights times: the first call
// remembers it, the second keeps the reordered copy, the third reads that copy.
constexpr int kSights = 3;
TEST(Conv2d, WeightWrittenInPlaceBetweenCallsIsSeen) {
  const Cfg k = kConvCases[8];
  const Tensor x = random({k.n, k.c, k.h, k.w}, f32, 500);
  Tensor w = random({k.o, k.c, k.kh, k.kw}, f32, 501);
  const Tensor b = random({k.o}, f32, 502);
  const auto check = [&](const std::string& what) {
    const std::vector<double> ref = conv_ref(values(x), values(w), values(b), k, k.h, k.w);
    for (int sight = 0; sight < kSights; ++sight) {
      expect_close(run_conv(k, x, w, b), ref, 1e-5, fmt::format("{}, call {}", what, sight));
    }
  };
  change_weight_every_way(w, random({k.o, k.c, k.kh, k.kw}, f32, 503), check);
}

// A weight made inside InferenceMode is an inference tensor, which counts no versions: its
// in-place writes must be seen all the same (Note [Inference tensors have no identity]).
TEST(Conv2d, AnInferenceWeightWrittenInPlaceIsSeen) {
  autograd::InferenceMode guard;
  const Cfg k = kConvCases[8];
  const Tensor x = random({k.n, k.c, k.h, k.w}, f32, 530);
  Tensor w = random({k.o, k.c, k.kh, k.kw}, f32, 531);
  ASSERT_TRUE(w.is_inference());
  for (int round = 0; round < 3; ++round) {
    const std::vector<double> ref = conv_ref(values(x), values(w), {}, k, k.h, k.w);
    for (int sight = 0; sight < kSights; ++sight) {
      expect_close(run_conv(k, x, w, Tensor()), ref, 1e-5,
                   fmt::format("round {}, call {}", round, sight));
    }
    if (round == 0) add_(w, 1.0);
    if (round == 1) w.copy_(random({k.o, k.c, k.kh, k.kw}, f32, 532));
  }
}

TEST(Conv2d, OptimizerStepBetweenCallsIsSeen) {
  const Cfg k = kConvCases[8];
  const Tensor x = random({k.n, k.c, k.h, k.w}, f32, 510);
  Tensor w = random({k.o, k.c, k.kh, k.kw}, f32, 511).requires_grad_(true);
  const Tensor b = random({k.o}, f32, 512);
  const Tensor r = random({k.n, k.o, k.h, k.w}, f32, 513);
  optim::SGD opt({w}, {.lr = 1e-3, .momentum = 0.9});
  std::vector<double> before;
  for (int step = 0; step < 3; ++step) {
    // A stale weight would be off by the step (about 0.1 per weight, O(1) per output).
    const std::vector<double> ref = conv_ref(values(x), values(w), values(b), k, k.h, k.w);
    for (int sight = 0; sight < kSights - 1; ++sight) {
      autograd::NoGradGuard no_grad;  // evaluation between steps
      expect_close(run_conv(k, x, w, b), ref, 2e-5, fmt::format("evaluation of step {}", step));
    }
    const Tensor y = run_conv(k, x, w, b);
    expect_close(y, ref, 2e-5, fmt::format("forward of step {}", step));
    opt.zero_grad();
    sum(mul(y, r)).backward();
    before = values(w);
    opt.step();
    EXPECT_NE(values(w), before) << "the step did not change the weight";
  }
}

TEST(Conv2d, InputGradientSeesWeightChange) {
  // The backward-data primitive caches its own reordered weight: compare the float32 input
  // gradient with the float64 one (own loops) before and after the weight changes.
  const Cfg k = kConvCases[8];
  const Tensor x64 = random({k.n, k.c, k.h, k.w}, f64, 520);
  Tensor w64 = random({k.o, k.c, k.kh, k.kw}, f64, 521);
  Tensor w32 = w64.to(f32);
  const Tensor r64 = random({k.n, k.o, k.h, k.w}, f64, 522);
  for (int round = 0; round < 3; ++round) {
    std::vector<double> grads[1 + kSights];
    for (int pass = 0; pass < 1 + kSights; ++pass) {
      const DType dt = pass == 0 ? f64 : f32;
      Tensor x = x64.detach().to(dt).requires_grad_(true);
      const Tensor y = run_conv(k, x, pass == 0 ? w64 : w32, Tensor());
      sum(mul(y, r64.to(dt))).backward();
      grads[pass] = values(x.grad());
    }
    for (int pass = 1; pass < 1 + kSights; ++pass) {
      ASSERT_EQ(grads[0].size(), grads[pass].size());
      for (size_t j = 0; j < grads[0].size(); ++j) {
        ASSERT_NEAR(grads[pass][j], grads[0][j], 1e-4 * (1 + std::abs(grads[0][j])))
            << "round " << round << ", call " << pass << " at " << j;
      }
    }
    add_(w64, 0.25 * (round + 1));
    add_(w32, 0.25 * (round + 1));
  }
}

TEST(Conv2d, RecycledWeightBlockIsNotMistakenForTheOldWeight) {
  // Each weight is a fresh tensor with the same size and version as the one freed just before
  // it, so the caching allocator hands it the same block: only the storage identity differs.
  const Cfg k = kConvCases[8];
  const Tensor x = random({k.n, k.c, k.h, k.w}, f32, 530);
  std::vector<Tensor> sources;
  for (uint64_t s = 0; s < 4; ++s) sources.push_back(random({k.o, k.c, k.kh, k.kw}, f32, 531 + s));
  const void* last = nullptr;
  int reused = 0;
  for (const Tensor& src : sources) {
    Tensor w = empty({k.o, k.c, k.kh, k.kw}, f32);
    w.copy_(src);
    reused += w.data_ptr() == last ? 1 : 0;
    last = w.data_ptr();
    const std::vector<double> ref = conv_ref(values(x), values(w), {}, k, k.h, k.w);
    for (int sight = 0; sight < kSights; ++sight) {
      expect_close(run_conv(k, x, w, Tensor()), ref, 1e-5, "recycled weight");
    }
  }
  EXPECT_GT(reused, 0) << "no weight reused a freed block: the test lost its point";
}

TEST(Conv2d, BadArguments) {
  const Tensor x = random({1, 4, 5, 5}, f32, 1), w = random({2, 4, 3, 3}, f32, 2);
  expect_error([&] { conv2d(random({4, 5}, f32, 1), w); }, {"[conv2d]", "3-d", "[4, 5]"});
  expect_error(
      [&] {
        conv2d(x, random({2, 4, 3}, f32, 1));
      },
      {"[conv2d]", "4-d weight", "[2, 4, 3]"});
  expect_error([&] { conv2d(x.to(i64), w.to(i64)); }, {"[conv2d]", "floating", "int64"});
  expect_error([&] { conv2d(x, w.to(f64)); }, {"[conv2d]", "dtypes differ", "float32", "float64"});
  expect_error([&] { conv2d(x, w, random({2}, f64, 3)); }, {"[conv2d]", "bias dtypes differ"});
  expect_error(
      [&] {
        conv2d(x, random({2, 3, 3, 3}, f32, 1));
      },
      {"[conv2d]", "expected input with 3 channels", "got 4 channels"});
  expect_error(
      [&] {
        conv2d(x, random({3, 2, 3, 3}, f32, 1), {}, {1}, {0}, {1}, 2);
      },
      {"[conv2d]", "divisible by groups", "3 out channels", "groups 2"});
  expect_error([&] { conv2d(x, w, random({3}, f32, 1)); },
               {"[conv2d]", "bias of shape [2]", "[3]"});
  expect_error([&] { conv2d(x, w, {}, {0}); }, {"[conv2d]", "stride must be >= 1", "(0, 0)"});
  expect_error(
      [&] {
        conv2d(x, w, {}, {1}, {-1, 0});
      },
      {"[conv2d]", "padding must be >= 0", "(-1, 0)"});
  expect_error(
      [&] {
        conv2d(x, w, {}, {1}, {0}, {1, 0});
      },
      {"[conv2d]", "dilation must be >= 1", "(1, 0)"});
  expect_error([&] { conv2d(x, w, {}, {1}, {0}, {1}, 0); },
               {"[conv2d]", "groups must be >= 1", "got 0"});
  expect_error(
      [&] {
        conv2d(x, w, {}, {1, 2, 3});
      },
      {"[conv2d]", "stride needs 1 or 2 values", "3 values"});
  expect_error(
      [&] {
        conv2d(x, random({2, 4, 7, 3}, f32, 1));
      },
      {"[conv2d]", "computed output size is too small", "input 5x5", "kernel 7x3", "output -1x3"});
  expect_error([&] { conv2d(x, w, {}, {1}, {0}, {3}); },
               {"[conv2d]", "computed output size is too small", "dilated to 7x7"});
  expect_error(
      [&] {
        conv2d(x, random({2, 4, 0, 3}, f32, 1));
      },
      {"[conv2d]", "kernel size must be positive"});
  expect_error([&] { conv2d(Tensor(), w); }, {"[conv2d]", "undefined"});
}

// ---- conv_transpose2d ---------------------------------------------------------------------------

const std::vector<Cfg> kTransposeCases = {
    {2, 3, 5, 4, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1, false},
    {2, 3, 5, 4, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, true, 1, 0},
    {1, 4, 4, 5, 6, 3, 2, 3, 2, 1, 0, 1, 1, 1, true, 2, 1},
    {2, 4, 5, 5, 4, 3, 3, 1, 1, 2, 1, 2, 3, 1, false, 1, 2},  // output_padding < dilation
    {2, 6, 4, 4, 4, 3, 3, 2, 2, 1, 1, 1, 1, 2, true, 1, 1},   // groups
    {1, 8, 6, 6, 8, 3, 3, 2, 1, 1, 1, 1, 1, 8, false, 1, 0},  // depthwise
    {2, 16, 7, 7, 24, 4, 4, 2, 2, 1, 1, 1, 1, 1, true},
};

Tensor run_transpose(const Cfg& k, const Tensor& x, const Tensor& w, const Tensor& b) {
  return conv_transpose2d(x, w, b, {k.sh, k.sw}, {k.ph, k.pw}, {k.oph, k.opw}, k.g, {k.dh, k.dw});
}

// Note [Padding 'same']: the span of each dim split with the extra zero after, by hand.
TEST(Conv2d, SamePaddingSplitsEachSpanWithTheExtraZeroAfter) {
  const auto [before, after] = same_padding({2, 3, 4}, {1}, {1, 2, 1});
  EXPECT_EQ(before, (Shape{0, 2, 1}));
  EXPECT_EQ(after, (Shape{1, 2, 2}));
  // conv1d of [1, 2, 3] with [10, 1]: [1, 2, 3, 0] -> [12, 23, 30].
  const Tensor x = tensor({1.0, 2.0, 3.0}, f64).reshape({1, 1, 3});
  const Tensor w = tensor({10.0, 1.0}, f64).reshape({1, 1, 2});
  EXPECT_EQ(values(conv1d(x, w, {}, 1, ConvPadding::Same)), (std::vector<double>{12, 23, 30}));
  EXPECT_EQ(values(conv1d(x, w, {}, 1, ConvPadding::Valid)), (std::vector<double>{12, 23}));
  // Every size kept, in 2-d and 3-d, with even kernels and dilation; the gradient flows through
  // the padding of the uneven split.
  const Tensor x2 = random({2, 3, 5, 6}, f64, 4).requires_grad_(true);
  const Tensor w2 = random({4, 3, 2, 3}, f64, 5);
  const Tensor y2 = conv2d(x2, w2, {}, {1}, ConvPadding::Same, {1, 2});  // (0, 1) and (2, 2)
  EXPECT_EQ(y2.sizes(), (Shape{2, 4, 5, 6}));
  EXPECT_EQ(values(y2), values(conv2d(pad(x2, {0, 0, 0, 1}), w2, {}, {1}, {0, 2}, {1, 2})));
  sum(y2).backward();
  EXPECT_EQ(x2.grad().sizes(), x2.sizes());
  EXPECT_EQ(conv3d(random({1, 2, 4, 5, 6}, f32, 6), random({3, 2, 2, 2, 3}, f32, 7), {}, {1},
                   ConvPadding::Same)
                .sizes(),
            (Shape{1, 3, 4, 5, 6}));
  expect_error(
      [&] {
        conv2d(x2, w2, {}, {2, 1}, ConvPadding::Same);
      },
      {"[conv2d]", "padding='same'", "strided", "[2, 1]"});
  expect_error(
      [&] {
        conv2d(x2, random({4, 3, 2}, f64, 1), {}, {1}, ConvPadding::Same);
      },
      {"[conv2d]", "4-d weight", "[4, 3, 2]"});
}

TEST(ConvTranspose2d, HandComputed) {
  // Stride 2 spreads each input over a 2x2 block of the 1x1 kernel's output: a zero-stuffed copy.
  const Tensor x = make({1, 2, 3, 4}, {1, 1, 2, 2}, f64);
  const Tensor w = make({2}, {1, 1, 1, 1}, f64);
  const Tensor y = conv_transpose2d(x, w, {}, {2}, {0}, {1});
  EXPECT_EQ(y.sizes(), Shape({1, 1, 4, 4}));
  expect_close(y, {2, 0, 4, 0, 0, 0, 0, 0, 6, 0, 8, 0, 0, 0, 0, 0}, 0, "zero stuffing");
}

TEST(ConvTranspose2d, MatchesReference) {
  for (DType dt : {f32, f64}) {
    uint64_t seed = 50;
    for (const Cfg& k : kTransposeCases) {
      const Tensor x = random({k.n, k.c, k.h, k.w}, dt, seed++);
      const Tensor w = random({k.c, k.o / k.g, k.kh, k.kw}, dt, seed++);
      const Tensor b = k.bias ? random({k.o}, dt, seed++) : Tensor();
      const Tensor y = run_transpose(k, x, w, b);
      const int64_t oh = (k.h - 1) * k.sh - 2 * k.ph + k.dh * (k.kh - 1) + k.oph + 1;
      const int64_t ow = (k.w - 1) * k.sw - 2 * k.pw + k.dw * (k.kw - 1) + k.opw + 1;
      ASSERT_EQ(y.sizes(), Shape({k.n, k.o, oh, ow})) << k.str();
      expect_close(y,
                   conv_transpose_ref(values(x), values(w),
                                      b.defined() ? values(b) : std::vector<double>{}, k, oh, ow),
                   dt == f32 ? 1e-5 : 1e-12, k.str() + " " + std::string(dtype_name(dt)));
    }
  }
}

TEST(ConvTranspose2d, Float32GradientsMatchFloat64) {
  uint64_t seed = 500;
  for (const Cfg& k : kTransposeCases) {
    const Tensor x64 = random({k.n, k.c, k.h, k.w}, f64, seed++);
    const Tensor w64 = random({k.c, k.o / k.g, k.kh, k.kw}, f64, seed++);
    std::vector<std::vector<double>> grads[2];
    for (int pass = 0; pass < 2; ++pass) {
      const DType dt = pass == 0 ? f64 : f32;
      Tensor x = x64.detach().to(dt), w = w64.detach().to(dt);
      x.requires_grad_(true);
      w.requires_grad_(true);
      const Tensor y = run_transpose(k, x, w, {});
      sum(mul(y, random(y.sizes(), dt, seed))).backward();
      grads[pass] = {values(x.grad()), values(w.grad())};
    }
    ++seed;
    ASSERT_NO_FATAL_FAILURE(expect_grads_close(grads[0], grads[1], k.str()));
  }
}

TEST(ConvTranspose2d, UnbatchedAndZeroSize) {
  const Tensor x = random({3, 4, 4}, f32, 21), w = random({3, 2, 3, 3}, f32, 22);
  const Tensor y = conv_transpose2d(x, w, {}, {2}, {1}, {1});
  EXPECT_EQ(y.sizes(), Shape({2, 8, 8}));
  const Cfg k = {1, 3, 4, 4, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, false, 1, 1};
  expect_close(y, conv_transpose_ref(values(x), values(w), {}, k, 8, 8), 1e-5, "unbatched");
  EXPECT_EQ(conv_transpose2d(empty({0, 3, 4, 4}, f32), w).sizes(), Shape({0, 2, 6, 6}));
}

TEST(ConvTranspose2d, BadArguments) {
  const Tensor x = random({1, 4, 5, 5}, f32, 1), w = random({4, 2, 3, 3}, f32, 2);
  expect_error(
      [&] {
        conv_transpose2d(x, random({3, 2, 3, 3}, f32, 1));
      },
      {"[conv_transpose2d]", "expected input with 3 channels", "got 4 channels"});
  expect_error([&] { conv_transpose2d(x, w, {}, {2}, {0}, {2}); },
               {"[conv_transpose2d]", "output_padding", "(2, 2)", "stride (2, 2)"});
  expect_error(
      [&] {
        conv_transpose2d(x, random({4, 2, 3, 3}, f32, 1), {}, {1}, {0}, {0}, 3);
      },
      {"[conv_transpose2d]", "divisible by groups", "groups 3"});
  expect_error([&] { conv_transpose2d(x, w, random({4}, f32, 1)); },
               {"[conv_transpose2d]", "bias of shape [2]", "[4]"});
  expect_error([&] { conv_transpose2d(x, w, {}, {1}, {4}); },
               {"[conv_transpose2d]", "computed output size is too small", "output -1x-1"});
  expect_error([&] { conv_transpose2d(x.to(f64), w); }, {"[conv_transpose2d]", "dtypes differ"});
  expect_error([&] { conv_transpose2d(x.to(i32), w.to(i32)); },
               {"[conv_transpose2d]", "floating", "int32"});
}

}  // namespace
}  // namespace ember::testing
