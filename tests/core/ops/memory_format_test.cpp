// Channels-last memory format (Note [Channels-last tensors]): the tensor API (strides, checks,
// conversions, which copies preserve it), which ops keep it (convolution, batch norm, pools,
// elementwise ops) with values equal to the row-major run, gradients in PyTorch's formats, a
// backend without channels-last kernels (the reference one) giving the same results through the
// core's reorders, and the argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "core/dispatch/call.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

constexpr MemoryFormat kCl = MemoryFormat::ChannelsLast;
constexpr MemoryFormat kRows = MemoryFormat::Contiguous;

Tensor uniform(IntList sizes, uint64_t seed, DType dtype = DType::Float32) {
  Generator gen(seed);
  return add(mul(rand(sizes, DType::Float64, &gen), 2.0), -1.0).to(dtype);
}

void expect_near(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const std::vector<double> g = values(got), w = values(want);
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], w[i], tol) << what << " at " << i;
  }
}

TEST(MemoryFormat, ChannelsLastStridesAndChecks) {
  init();
  const Tensor x = uniform({2, 3, 4, 5}, 1);
  EXPECT_TRUE(x.is_contiguous(kRows));
  EXPECT_FALSE(x.is_contiguous(kCl));
  EXPECT_EQ(x.suggest_memory_format(), kRows);
  const Tensor y = x.contiguous(kCl);
  EXPECT_EQ(y.sizes(), x.sizes());
  EXPECT_EQ(y.strides(), Shape({60, 1, 15, 3}));
  EXPECT_TRUE(y.is_contiguous(kCl));
  EXPECT_FALSE(y.is_contiguous());
  EXPECT_EQ(y.suggest_memory_format(), kCl);
  EXPECT_EQ(values(y), values(x));
  EXPECT_TRUE(y.contiguous(kCl).is_same(y));  // already in the format: no copy
  EXPECT_TRUE(y.to(kCl).is_same(y));
  const Tensor back = y.contiguous();
  EXPECT_TRUE(back.is_contiguous());
  EXPECT_EQ(values(back), values(x));
  // An NHWC buffer seen as NCHW through permute is channels-last.
  const Tensor nhwc = uniform({2, 4, 5, 3}, 2);
  EXPECT_EQ(nhwc.permute({0, 3, 1, 2}).suggest_memory_format(), kCl);
  // Dense in both orders ([N, C, 1, 1], one channel): both checks hold, it counts as contiguous.
  const Tensor pooled = uniform({2, 3, 1, 1}, 3).contiguous(kCl);
  EXPECT_TRUE(pooled.is_contiguous(kCl));
  EXPECT_TRUE(pooled.is_contiguous());
  EXPECT_EQ(pooled.suggest_memory_format(), kRows);
  EXPECT_TRUE(uniform({2, 1, 4, 5}, 4).is_contiguous(kCl));
  // A strided slice is not dense in either order.
  EXPECT_FALSE(y.slice(3, 0, 5, 2).is_contiguous(kCl));
  EXPECT_EQ(y.slice(3, 0, 5, 2).suggest_memory_format(), kRows);
  // Other ranks are never channels-last.
  EXPECT_FALSE(uniform({3, 4, 5}, 5).is_contiguous(kCl));
  EXPECT_EQ(std::string(memory_format_name(kCl)), "channels_last");
}

TEST(MemoryFormat, CopiesPreserveTheFormatUnlessToldOtherwise) {
  init();
  const Tensor y = uniform({2, 3, 4, 5}, 6).contiguous(kCl);
  EXPECT_TRUE(y.clone().is_contiguous(kCl));
  EXPECT_FALSE(y.clone(kRows).is_contiguous(kCl));
  EXPECT_TRUE(y.clone(kRows).is_contiguous());
  EXPECT_EQ(values(y.clone(kRows)), values(y));
  EXPECT_TRUE(empty_like(y).is_contiguous(kCl));
  EXPECT_TRUE(empty_like(y, kRows).is_contiguous());
  EXPECT_TRUE(zeros_like(y).is_contiguous(kCl));
  EXPECT_TRUE(ones_like(y).is_contiguous(kCl));
  EXPECT_EQ(values(full_like(y, 2.5)), std::vector<double>(120, 2.5));
  const Tensor d = y.to(DType::Float64);
  EXPECT_TRUE(d.is_contiguous(kCl));
  EXPECT_EQ(values(d), values(y));
  EXPECT_TRUE(empty({2, 3, 4, 5}, {}, kCl).is_contiguous(kCl));
  // reshape of a channels-last tensor to a flat shape copies row-major.
  const Tensor flat = y.reshape({2, -1});
  EXPECT_TRUE(flat.is_contiguous());
  EXPECT_EQ(values(flat), values(y));
  EXPECT_EQ(values(y.flatten(1)), values(y));
}

TEST(MemoryFormat, BadArgumentsAreErrors) {
  init();
  const Tensor x3 = uniform({3, 4, 5}, 7);
  expect_error([&] { (void)x3.contiguous(kCl); }, {"[contiguous]", "4-d", "[3, 4, 5]"});
  expect_error([&] { (void)x3.clone(kCl); }, {"[clone]", "4-d"});
  expect_error([&] { (void)x3.is_contiguous(MemoryFormat::Preserve); },
               {"[is_contiguous]", "preserve_format"});
  expect_error([&] { (void)x3.contiguous(MemoryFormat::Preserve); },
               {"[contiguous]", "preserve_format"});
  expect_error([&] { (void)empty({2, 3}, {}, kCl); }, {"channels_last", "4-d", "[2, 3]"});
  expect_error(
      [&] {
        (void)empty({2, 3, 4, 5}, {}, MemoryFormat::Preserve);
      },
      {"[empty]", "preserve_format"});
}

TEST(MemoryFormat, ElementwiseOpsKeepTheFirstFullSizedOperandsFormat) {
  init();
  const Tensor x = uniform({2, 3, 4, 5}, 8), xc = x.contiguous(kCl);
  const Tensor b = uniform({3, 1, 1}, 9);
  for (const auto& [name, got, want] : std::vector<std::tuple<std::string, Tensor, Tensor>>{
           {"relu", relu(xc), relu(x)},
           {"sigmoid", sigmoid(xc), sigmoid(x)},
           {"add bias", add(xc, b), add(x, b)},
           {"bias add", add(b, xc), add(b, x)},
           {"mul", mul(xc, xc), mul(x, x)},
           {"scalar", mul(xc, 3.0), mul(x, 3.0)},
           {"where", where(gt(xc, 0.0), xc, b), where(gt(x, 0.0), x, b)}}) {
    EXPECT_TRUE(got.is_contiguous(kCl)) << name;
    EXPECT_EQ(values(got), values(want)) << name;
  }
  // Row-major first, channels-last second: the first decides.
  const Tensor mixed = add(x, xc);
  EXPECT_TRUE(mixed.is_contiguous());
  EXPECT_EQ(values(mixed), values(add(x, x)));
  // In place keeps the destination's layout.
  Tensor inplace = xc.clone();
  add_(inplace, b);
  EXPECT_TRUE(inplace.is_contiguous(kCl));
  EXPECT_EQ(values(inplace), values(add(x, b)));
}

// A convolution in channels-last gives the row-major one's values, in channels-last; so do its
// input and weight gradients, each in its leaf's format (Note [The layout of .grad]).
void check_conv(DType dtype, double tol, int64_t groups, bool weight_cl, bool input_cl) {
  const std::string what =
      fmt::format("{} groups {} weight_cl {} input_cl {}", dtype, groups, weight_cl, input_cl);
  const Tensor x = uniform({2, 4, 7, 6}, 10, dtype), w = uniform({6, 4 / groups, 3, 3}, 11, dtype),
               b = uniform({6}, 12, dtype);
  Tensor xr = x.clone().requires_grad_(), wr = w.clone().requires_grad_();
  Tensor xl = (input_cl ? x.contiguous(kCl) : x.clone()).requires_grad_();
  Tensor wl = (weight_cl ? w.contiguous(kCl) : w.clone()).requires_grad_();
  const Tensor yr = conv2d(xr, wr, b, {2, 1}, {1, 1}, {1, 1}, groups);
  const Tensor yl = conv2d(xl, wl, b, {2, 1}, {1, 1}, {1, 1}, groups);
  EXPECT_TRUE(yl.is_contiguous(kCl)) << what;
  expect_near(yl, yr, tol, what + " forward");
  const Tensor g = uniform(yr.sizes(), 13, dtype);
  yr.backward(g);
  yl.backward(g.contiguous(kCl));
  expect_near(xl.grad(), xr.grad(), tol, what + " dx");
  expect_near(wl.grad(), wr.grad(), tol, what + " dw");
  EXPECT_EQ(xl.grad().suggest_memory_format(), input_cl ? kCl : kRows) << what;
  EXPECT_EQ(wl.grad().suggest_memory_format(), weight_cl ? kCl : kRows) << what;
}

TEST(MemoryFormat, ConvolutionRunsAndDifferentiatesInChannelsLast) {
  init();
  check_conv(DType::Float32, 1e-5, 1, true, true);
  check_conv(DType::Float32, 1e-5, 2, true, true);
  check_conv(DType::Float32, 1e-5, 1, false, true);  // the input alone decides
  check_conv(DType::Float32, 1e-5, 1, true, false);  // the weight alone decides
  check_conv(DType::Float64, 1e-12, 1, true, true);  // the own loops, on row-major copies
  check_conv(DType::BFloat16, 2e-2, 1, true, true);
}

TEST(MemoryFormat, BatchNormKeepsTheFormatInTrainingAndEvaluation) {
  init();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    const double tol = dtype == DType::Float32 ? 1e-5 : 1e-12;
    const Tensor x = uniform({3, 4, 5, 6}, 14, dtype), w = uniform({4}, 15, dtype),
                 b = uniform({4}, 16, dtype);
    Tensor rm_r = zeros({4}, dtype), rv_r = ones({4}, dtype);
    Tensor rm_l = zeros({4}, dtype), rv_l = ones({4}, dtype);
    Tensor xr = x.clone().requires_grad_(), xl = x.contiguous(kCl).requires_grad_();
    const Tensor yr = batch_norm(xr, w, b, rm_r, rv_r, true);
    const Tensor yl = batch_norm(xl, w, b, rm_l, rv_l, true);
    EXPECT_TRUE(yl.is_contiguous(kCl));
    expect_near(yl, yr, tol, "train forward");
    expect_near(rm_l, rm_r, tol, "running mean");
    expect_near(rv_l, rv_r, tol, "running var");
    const Tensor g = uniform(x.sizes(), 17, dtype);
    yr.backward(g);
    yl.backward(g.contiguous(kCl));
    EXPECT_TRUE(xl.grad().is_contiguous(kCl));
    expect_near(xl.grad(), xr.grad(), tol * 10, "train dx");
    const Tensor er = batch_norm(x, w, b, rm_r, rv_r, false);
    const Tensor el = batch_norm(x.contiguous(kCl), w, b, rm_l, rv_l, false);
    EXPECT_TRUE(el.is_contiguous(kCl));
    expect_near(el, er, tol, "eval forward");
  }
}

TEST(MemoryFormat, PoolsKeepTheFormatAndTheirIndices) {
  init();
  const Tensor x = uniform({2, 3, 7, 8}, 18);
  Tensor xr = x.clone().requires_grad_(), xl = x.contiguous(kCl).requires_grad_();
  const auto [yr, ir] = max_pool2d_with_indices(xr, {3, 3}, {2, 2}, {1, 1});
  const auto [yl, il] = max_pool2d_with_indices(xl, {3, 3}, {2, 2}, {1, 1});
  EXPECT_TRUE(yl.is_contiguous(kCl));
  EXPECT_TRUE(il.is_contiguous(kCl));
  EXPECT_EQ(values(yl), values(yr));
  EXPECT_EQ(values(il), values(ir));  // flat h * W + w within the plane, as PyTorch's
  const Tensor g = uniform(yr.sizes(), 19);
  yr.backward(g);
  yl.backward(g.contiguous(kCl));
  EXPECT_TRUE(xl.grad().is_contiguous(kCl));
  EXPECT_EQ(values(xl.grad()), values(xr.grad()));

  for (const bool adaptive : {false, true}) {
    Tensor ar = x.clone().requires_grad_(), al = x.contiguous(kCl).requires_grad_();
    const Tensor pr = adaptive ? adaptive_avg_pool2d(ar, {3, 2}) : avg_pool2d(ar, {2, 3}, {2, 2});
    const Tensor pl = adaptive ? adaptive_avg_pool2d(al, {3, 2}) : avg_pool2d(al, {2, 3}, {2, 2});
    EXPECT_TRUE(pl.is_contiguous(kCl)) << adaptive;
    expect_near(pl, pr, 1e-6, adaptive ? "adaptive" : "avg");
    const Tensor ga = uniform(pr.sizes(), 20);
    pr.backward(ga);
    pl.backward(ga.contiguous(kCl));
    EXPECT_TRUE(al.grad().is_contiguous(kCl)) << adaptive;
    expect_near(al.grad(), ar.grad(), 1e-6, adaptive ? "adaptive dx" : "avg dx");
  }
}

// True when a and b hold the same values bit for bit (NaN where the other has NaN).
::testing::AssertionResult same_bits(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype())
    return ::testing::AssertionFailure() << "shapes or dtypes differ";
  const std::vector<double> x = values(a), y = values(b);
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i]))))
      return ::testing::AssertionFailure() << "at " << i << ": " << x[i] << " vs " << y[i];
  }
  return ::testing::AssertionSuccess();
}

// Note [Channels-last pooling]: the CPU's NHWC loops give the row-major loops' bits in every
// floating dtype, with NaN, ties (values on a coarse grid), padding, dilation, ceil mode, both
// divisor rules and a divisor override, forward and backward; outputs, indices and gradients are
// channels-last.
TEST(MemoryFormat, ChannelsLastPoolsGiveTheRowMajorBits) {
  init();
  struct Max {
    int64_t k, s, p, d;
    bool ceil;
  };
  struct Avg {
    int64_t k, s, p;
    bool ceil, include_pad;
    std::optional<int64_t> divisor;
  };
  // 40 channels: a whole block of the NHWC loops' channels and a part of one.
  for (const auto& [dt, ch] : std::vector<std::pair<DType, int64_t>>{{DType::Float32, 5},
                                                                     {DType::Float64, 5},
                                                                     {DType::BFloat16, 5},
                                                                     {DType::Float16, 5},
                                                                     {DType::Float32, 40}}) {
    // Values on a grid of 1/4, so windows hold ties, and two NaNs.
    std::vector<double> v = values(round(mul(uniform({2, ch, 9, 8}, 30, DType::Float64), 8.0)));
    for (double& e : v) e /= 4;
    v[static_cast<size_t>(((0 * ch + 1) * 9 + 4) * 8 + 4)] = std::nan("");
    v[static_cast<size_t>(((1 * ch + 3) * 9 + 0) * 8 + 7)] = std::nan("");
    const Tensor x = make(v, {2, ch, 9, 8}, dt);
    // Both layouts through `pool`, the gradient of sum(y * r) included.
    auto check = [&](const std::string& what, auto pool) {
      Tensor xr = x.clone().requires_grad_(), xl = x.contiguous(kCl).requires_grad_();
      const std::vector<Tensor> r = pool(xr), l = pool(xl);
      for (size_t i = 0; i < r.size(); ++i) {
        EXPECT_TRUE(l[i].is_contiguous(kCl)) << what << " #" << i;
        EXPECT_TRUE(same_bits(l[i], r[i])) << what << " #" << i;
      }
      const Tensor g = uniform(r[0].sizes(), 31, dt);
      r[0].backward(g);
      l[0].backward(g.contiguous(kCl));
      EXPECT_TRUE(xl.grad().is_contiguous(kCl)) << what;
      EXPECT_TRUE(same_bits(xl.grad(), xr.grad())) << what << " dx";
    };
    for (const Max& m : {Max{3, 2, 1, 1, false}, Max{2, 2, 0, 1, false}, Max{3, 2, 1, 2, true}}) {
      check(fmt::format("{} max k{} s{} p{} d{} ceil {}", dt, m.k, m.s, m.p, m.d, m.ceil),
            [&](const Tensor& t) {
              const auto [y, i] = max_pool2d_with_indices(t, {m.k, m.k}, {m.s, m.s}, {m.p, m.p},
                                                          {m.d, m.d}, m.ceil);
              return std::vector<Tensor>{y, i};
            });
    }
    for (const Avg& a : {Avg{3, 2, 1, true, false, {}}, Avg{2, 1, 1, false, true, 3},
                         Avg{3, 3, 0, false, true, {}}}) {
      check(fmt::format("{} avg k{} s{} p{} ceil {} pad {}", dt, a.k, a.s, a.p, a.ceil,
                        a.include_pad),
            [&](const Tensor& t) {
              return std::vector<Tensor>{avg_pool2d(t, {a.k, a.k}, {a.s, a.s}, {a.p, a.p}, a.ceil,
                                                    a.include_pad, a.divisor)};
            });
    }
    for (const std::vector<int64_t>& out : {std::vector<int64_t>{4, 3}, {1, 1}}) {
      check(fmt::format("{} adaptive {}x{}", dt, out[0], out[1]),
            [&](const Tensor& t) { return std::vector<Tensor>{adaptive_avg_pool2d(t, out)}; });
    }
  }
}

TEST(MemoryFormat, KernelsSayWhetherTheyTakeChannelsLast) {
  init();
  const Device cpu = Device::cpu();
  EXPECT_TRUE(
      kernel_has_flag(core_op(ops::conv2d), cpu, DType::Float32, EMBER_KERNEL_CHANNELS_LAST));
  EXPECT_TRUE(kernel_has_flag(core_op(ops::conv2d_backward_weight), cpu, DType::Float64,
                              EMBER_KERNEL_CHANNELS_LAST));
  for (const auto& op :
       {ops::max_pool2d, ops::max_pool2d_backward, ops::avg_pool2d, ops::avg_pool2d_backward,
        ops::adaptive_avg_pool2d, ops::adaptive_avg_pool2d_backward}) {
    EXPECT_TRUE(kernel_has_flag(core_op(op), cpu, DType::BFloat16, EMBER_KERNEL_CHANNELS_LAST))
        << ops::kInfo[op].name;
  }
  EXPECT_FALSE(
      kernel_has_flag(core_op(ops::matmul), cpu, DType::Float32, EMBER_KERNEL_CHANNELS_LAST));
  const Device ref(find_device_type("reference"), 0);
  EXPECT_FALSE(
      kernel_has_flag(core_op(ops::conv2d), ref, DType::Float32, EMBER_KERNEL_CHANNELS_LAST));
}

// The reference backend registers no channels-last kernel: the core reorders for it and the
// results still come back channels-last, equal to the CPU backend's.
TEST(MemoryFormat, ABackendWithoutChannelsLastKernelsGetsReorderedOperands) {
  init();
  const Device ref(find_device_type("reference"), 0);
  const Tensor x = uniform({2, 3, 6, 5}, 21, DType::Float64).contiguous(kCl);
  const Tensor w = uniform({4, 3, 3, 3}, 22, DType::Float64).contiguous(kCl);
  const Tensor y_cpu = max_pool2d(relu(conv2d(x, w, {}, {1}, {1})), {2, 2});
  const Tensor y_ref = max_pool2d(relu(conv2d(x.to(ref), w.to(ref), {}, {1}, {1})), {2, 2});
  EXPECT_TRUE(x.to(ref).is_contiguous(kCl));
  EXPECT_TRUE(y_ref.is_contiguous(kCl));
  expect_near(y_ref.to(Device::cpu()), y_cpu, 1e-12, "reference vs cpu");
}

}  // namespace
}  // namespace ember::testing
