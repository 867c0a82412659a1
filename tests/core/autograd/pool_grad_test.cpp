// Gradients of pooling: gradcheck cases (first and second order) for max pooling with stride,
// padding, dilation and ceil_mode variants, average pooling with and without
// count_include_pad, adaptive average pooling with uneven windows; unbatched and strided
// inputs; a hand-checked max-pool gradient where overlapping windows pick the same element.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>
#include <vector>

#include "core/dispatch/call.h"
#include "tests/core/autograd/gradcheck_cases.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

using V = std::vector<Tensor>;

// ---- max pooling --------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"max_pool2d", "2x2", [](const V& in) { return max_pool2d(in[0], {2}); },
                      [] {
                        return V{input({2, 2, 4, 4}, 1)};
                      }});
EMBER_GRADCHECK_CASE({"max_pool2d", "3x3 stride 2 padding 1 (overlapping windows)",
                      [](const V& in) { return max_pool2d(in[0], {3}, {2}, {1}); },
                      [] {
                        return V{input({1, 2, 5, 6}, 2)};
                      }});
EMBER_GRADCHECK_CASE({"max_pool2d", "dilation 2, ceil_mode",
                      [](const V& in) { return max_pool2d(in[0], {2}, {2}, {1}, {2}, true); },
                      [] {
                        return V{input({1, 1, 6, 5}, 3)};
                      }});
EMBER_GRADCHECK_CASE({"max_pool2d", "unbatched, transposed input",
                      [](const V& in) {
                        return max_pool2d(in[0].transpose(1, 2), {2, 3}, {1, 2});
                      },
                      [] {
                        return V{input({2, 5, 4}, 4)};
                      }});
EMBER_GRADCHECK_CASE({"max_pool2d_with_indices", "values, 3x3 stride 1",
                      [](const V& in) {
                        return std::get<0>(max_pool2d_with_indices(in[0], {3}, {1}, {1}));
                      },
                      [] {
                        return V{input({1, 2, 4, 4}, 5)};
                      }});

// ---- average pooling ----------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"avg_pool2d", "2x2", [](const V& in) { return avg_pool2d(in[0], {2}); },
                      [] {
                        return V{input({2, 2, 4, 4}, 6)};
                      }});
EMBER_GRADCHECK_CASE({"avg_pool2d", "3x3 stride 2 padding 1, count_include_pad",
                      [](const V& in) { return avg_pool2d(in[0], {3}, {2}, {1}, false, true); },
                      [] {
                        return V{input({1, 2, 5, 6}, 7)};
                      }});
EMBER_GRADCHECK_CASE({"avg_pool2d", "ceil_mode, padding excluded",
                      [](const V& in) {
                        return avg_pool2d(in[0], {3, 2}, {2}, {1}, true, false);
                      },
                      [] {
                        return V{input({1, 1, 6, 5}, 8)};
                      }});
EMBER_GRADCHECK_CASE({"avg_pool2d", "unbatched, transposed input",
                      [](const V& in) { return avg_pool2d(in[0].transpose(1, 2), {2}, {1}); },
                      [] {
                        return V{input({2, 4, 3}, 9)};
                      }});

// ---- adaptive average pooling -------------------------------------------------------------
EMBER_GRADCHECK_CASE({"adaptive_avg_pool2d", "uneven windows 5x7 -> 3x2",
                      [](const V& in) {
                        return adaptive_avg_pool2d(in[0], {3, 2});
                      },
                      [] {
                        return V{input({2, 2, 5, 7}, 10)};
                      }});
EMBER_GRADCHECK_CASE({"adaptive_avg_pool2d", "larger output 3x2 -> 4x5, unbatched",
                      [](const V& in) {
                        return adaptive_avg_pool2d(in[0], {4, 5});
                      },
                      [] {
                        return V{input({2, 3, 2}, 11)};
                      }});
EMBER_GRADCHECK_CASE({"adaptive_avg_pool2d", "global 1x1",
                      [](const V& in) { return adaptive_avg_pool2d(in[0], {1}); },
                      [] {
                        return V{input({2, 3, 3, 4}, 12)};
                      }});

// ---- adaptive max pooling and the 1-d poolings ------------------------------------------------
EMBER_GRADCHECK_CASE({"adaptive_max_pool2d", "uneven windows 5x7 -> 3x2",
                      [](const V& in) {
                        return adaptive_max_pool2d(in[0], {3, 2});
                      },
                      [] {
                        return V{input({1, 2, 5, 7}, 740)};
                      }});
EMBER_GRADCHECK_CASE({"max_pool1d", "k 3 stride 2 padding 1, unbatched",
                      [](const V& in) { return max_pool1d(in[0], 3, 2, 1); },
                      [] {
                        return V{input({2, 7}, 741)};
                      }});
EMBER_GRADCHECK_CASE({"avg_pool1d", "k 3 stride 2 padding 1, ceil_mode, padding excluded",
                      [](const V& in) { return avg_pool1d(in[0], 3, 2, 1, true, false); },
                      [] {
                        return V{input({2, 2, 6}, 742)};
                      }});
EMBER_GRADCHECK_CASE({"adaptive_avg_pool1d", "7 -> 3",
                      [](const V& in) { return adaptive_avg_pool1d(in[0], 3); },
                      [] {
                        return V{input({2, 2, 7}, 743)};
                      }});
EMBER_GRADCHECK_CASE({"adaptive_max_pool1d", "7 -> 3, unbatched",
                      [](const V& in) { return adaptive_max_pool1d(in[0], 3); },
                      [] {
                        return V{input({2, 7}, 744)};
                      }});

TEST(Pool1d, MatchesHandComputedWindowsAndIndices) {
  const Tensor x = tensor({{{1.0, 5.0, 2.0, 4.0, 3.0, 0.0, 6.0}}}, DType::Float64);
  auto [y, idx] = max_pool1d_with_indices(x, 3, 2, 1);
  // Windows (padded by one each side): [-, 1, 5] [5, 2, 4] [4, 3, 0] [0, 6, -].
  EXPECT_EQ(values(y), (std::vector<double>{5, 5, 4, 6}));
  EXPECT_EQ(values(idx), (std::vector<double>{1, 1, 3, 6}));
  EXPECT_EQ(values(avg_pool1d(x, 2)), (std::vector<double>{3, 3, 1.5}));
  EXPECT_EQ(values(avg_pool1d(x, 3, 2, 1, false, false)),
            (std::vector<double>{3, 11.0 / 3, 7.0 / 3, 3}));
  // Adaptive windows of 7 into 3: [0, 3), [2, 5), [4, 7).
  EXPECT_EQ(values(adaptive_avg_pool1d(x, 3)), (std::vector<double>{8.0 / 3, 3, 3}));
  EXPECT_EQ(values(adaptive_max_pool1d(x, 3)), (std::vector<double>{5, 4, 6}));
  const Tensor m = tensor({{{1.0, 2.0, 3.0}, {4.0, 9.0, 6.0}, {7.0, 8.0, 0.0}}}, DType::Float64);
  // 3 into 2: rows and columns [0, 2), [1, 3).
  EXPECT_EQ(values(adaptive_max_pool2d(m, {2, 2})), (std::vector<double>{9, 9, 9, 9}));
  EXPECT_EQ(values(adaptive_max_pool2d(m, {3, 1})), (std::vector<double>{3, 9, 8}));
  EXPECT_THROW(max_pool1d(zeros({2, 3, 4, 5}), 2), ValueError);  // 4-d
  EXPECT_THROW(max_pool1d(zeros({1, 4}), 2, 1, 2), ValueError);  // padding over half the window
  EXPECT_THROW(avg_pool1d(zeros({1, 2}), 3), ValueError);        // input shorter than the window
  EXPECT_THROW(adaptive_avg_pool1d(zeros({1, 4}), 0), ValueError);
  EXPECT_THROW(adaptive_max_pool2d(zeros({1, 4}), {2, 2}), ValueError);
}

TEST(AdaptiveMaxPool, IndicesAreTheFirstMaximumInRowMajorOrder) {
  // 3 into 2: rows and columns [0, 2), [1, 3). Ties put the 9 at (0, 1) and (1, 0): PyTorch's
  // kernel, scanning rows then columns, names (0, 1) (flat 1) for window (0, 0).
  const Tensor m = tensor({{{1.0, 9.0, 3.0}, {9.0, 2.0, 6.0}, {7.0, 8.0, 9.0}}}, DType::Float64);
  auto [y, idx] = adaptive_max_pool2d_with_indices(m, {2, 2});
  EXPECT_EQ(values(y), (std::vector<double>{9, 9, 9, 9}));
  EXPECT_EQ(values(idx), (std::vector<double>{1, 1, 3, 8}));
  EXPECT_EQ(idx.dtype(), DType::Int64);
  EXPECT_EQ(idx.sizes(), (Shape{1, 2, 2}));
  // One window over all: the first of the three nines.
  EXPECT_EQ(values(std::get<1>(adaptive_max_pool2d_with_indices(m, {1, 1}))),
            (std::vector<double>{1}));
  // 1-d: windows of 7 into 3 are [0, 3), [2, 5), [4, 7).
  const Tensor x = tensor({{{1.0, 5.0, 5.0, 4.0, 3.0, 0.0, 6.0}}}, DType::Float64);
  auto [y1, i1] = adaptive_max_pool1d_with_indices(x, 3);
  EXPECT_EQ(values(y1), (std::vector<double>{5, 5, 6}));
  EXPECT_EQ(values(i1), (std::vector<double>{1, 2, 6}));
  // 3-d: a [2, 2, 2] volume into [1, 1, 2]; flat index d H W + h W + w.
  const Tensor v = tensor({{{{1.0, 8.0}, {2.0, 3.0}}, {{4.0, 5.0}, {8.0, 8.0}}}}, DType::Float64);
  auto [y3, i3] = adaptive_max_pool3d_with_indices(v, {1, 1, 2});
  EXPECT_EQ(values(y3), (std::vector<double>{8, 8}));
  EXPECT_EQ(values(i3), (std::vector<double>{6, 1}));
}

TEST(AdaptiveMaxPool, TiedGradientGoesToTheIndexedElement) {
  // As PyTorch's backward: the whole gradient to the maximum its index names, not split.
  Tensor x = make({2, 2, 2, 2, 2, 2}, {1, 1, 2, 3}, f64).requires_grad_(true);
  auto [y, idx] = adaptive_max_pool2d_with_indices(x, {1, 2});
  sum(y).backward();
  // Column windows [0, 2) and [1, 3): the first maxima are (0, 0) and (0, 1).
  EXPECT_EQ(values(idx), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 1, 0, 0, 0, 0}));
}

EMBER_GRADCHECK_CASE({"max_unpool2d", "k 2 stride 2, the max pooling's indices",
                      [](const V& in) {
                        const Tensor idx =
                            std::get<1>(max_pool2d_with_indices(in[1].detach(), {2}, {2}));
                        return max_unpool2d(in[0], idx, {2}, {2});
                      },
                      [] {
                        return V{input({1, 2, 2, 3}, 930), input({1, 2, 4, 6}, 931)};
                      }});
EMBER_GRADCHECK_CASE({"lp_pool2d", "p 2, k 2, stride 1",
                      [](const V& in) { return lp_pool2d(in[0], 2.0, {2}, {1}); },
                      [] {
                        return V{input({1, 2, 3, 4}, 932)};
                      }});

TEST(MaxUnpool, PutsEachValueAtItsIndexAndChecksThem) {
  const Tensor x = tensor({{{1.0, 5.0, 2.0, 4.0, 3.0, 0.0}}}, DType::Float64);
  auto [y, idx] = max_pool1d_with_indices(x, 2);  // [5, 4, 3] at [1, 3, 4]
  EXPECT_EQ(values(max_unpool1d(y, idx, 2)), (std::vector<double>{0, 5, 0, 4, 3, 0}));
  // output_size may ask for one more (strictly within a stride of the default 6).
  EXPECT_EQ(max_unpool1d(y, idx, 2, std::nullopt, 0, {7}).sizes(), (Shape{1, 1, 7}));
  EXPECT_THROW(max_unpool1d(y, idx, 2, std::nullopt, 0, {8}), ValueError);
  const Tensor bad = tensor({{{1.0, 3.0, 9.0}}}, DType::Int64);
  EXPECT_THROW(max_unpool1d(y, bad, 2), IndexError);                          // past the output
  EXPECT_THROW(max_unpool1d(y, idx.to(DType::Int32), 2), TypeError);          // not int64
  EXPECT_THROW(max_unpool2d(y.squeeze(0), idx.squeeze(0), {2}), ValueError);  // 2-d input
  const Tensor m = tensor({{{1.0, 2.0}, {3.0, 4.0}}}, DType::Float64);        // one 2x2 plane
  const Tensor at = tensor({{{0.0, 3.0}, {5.0, 6.0}}}, DType::Int64);
  EXPECT_EQ(values(max_unpool2d(m, at, {2})),
            (std::vector<double>{1, 0, 0, 2, 0, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(LpPoolAndChannelShuffle, EqualHandComputedValues) {
  const Tensor x = tensor({{{3.0, 4.0, 1.0, 1.0}}}, DType::Float64);
  // Windows of 2: sqrt(9 + 16) = 5, sqrt(1 + 1).
  EXPECT_EQ(values(lp_pool1d(x, 2.0, 2)), (std::vector<double>{5, std::sqrt(2.0)}));
  const Tensor c = arange(0, 6, 1, DType::Float64).reshape({1, 6, 1});
  // 6 channels in 2 groups of 3: 0 3 1 4 2 5.
  EXPECT_EQ(values(channel_shuffle(c, 2)), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_THROW(channel_shuffle(c, 4), ValueError);
  EXPECT_THROW(channel_shuffle(ones({2, 4}), 2), ValueError);
}

TEST(PoolGradTest, OverlappingMaxWindowsAccumulate) {
  // Stride 1 windows over [[1, 2, 3], [4, 9, 5], [6, 7, 8]]: the 9 wins all four windows.
  Tensor x = make({1, 2, 3, 4, 9, 5, 6, 7, 8}, {1, 1, 3, 3}, f64).requires_grad_(true);
  autograd::backward({sum(max_pool2d(x, {2}, {1}))});
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0, 0, 0, 4, 0, 0, 0, 0}));
  // Average pooling with count_include_pad spreads 1 / 4 per window, per in-bounds tap.
  Tensor y = make({1, 2, 3, 4}, {1, 1, 2, 2}, f64).requires_grad_(true);
  autograd::backward({sum(avg_pool2d(y, {2}, {1}, {1}))});
  EXPECT_EQ(values(y.grad()), (std::vector<double>{1, 1, 1, 1}));
}

// Note [Backward of max pooling]: the max_pool2d_backward kernel (first-order backward) adds
// exactly what the scatter_add composite (used when the backward is recorded) adds, in the same
// order, so the two gradients are equal bit for bit, ties and overlapping windows included.
TEST(PoolGradTest, MaxPoolBackwardKernelEqualsTheScatterComposite) {
  init();  // load the plugins
  ASSERT_TRUE(has_kernel(op_handle("max_pool2d_backward"), Device::cpu(), DType::Float32));
  for (DType d : {DType::Float32, DType::Float64, DType::BFloat16}) {
    // Few distinct values: many ties, and windows that share their maximum.
    const Tensor base = round(mul(randn({2, 3, 13, 11}), 2.0)).to(d);
    struct Case {
      std::vector<int64_t> k, s, p, dil;
      bool ceil;
    };
    for (const Case& c : {Case{{3}, {1}, {1}, {1}, false}, Case{{2}, {2}, {0}, {1}, false},
                          Case{{3, 2}, {2, 1}, {1, 0}, {2, 1}, true}}) {
      const Tensor g = randn(max_pool2d(base, c.k, c.s, c.p, c.dil, c.ceil).sizes()).to(d);
      const Tensor x1 = base.detach().requires_grad_(true);
      const Tensor k1 =
          autograd::grad({max_pool2d(x1, c.k, c.s, c.p, c.dil, c.ceil)}, {x1}, {g})[0];
      const Tensor x2 = base.detach().requires_grad_(true);
      // With create_graph and a g that requires grad, the backward is recorded: the composite.
      const Tensor gg = g.detach().requires_grad_(true);
      const Tensor k2 = autograd::grad({max_pool2d(x2, c.k, c.s, c.p, c.dil, c.ceil)}, {x2}, {gg},
                                       /*retain_graph=*/true, /*create_graph=*/true)[0];
      ASSERT_TRUE(k2.requires_grad()) << "the recorded backward is the composite";
      EXPECT_EQ(values(k1), values(k2.detach())) << fmt::format("{} k {}", d, shape_str(c.k));
      // And both are the scatter of g at the indices.
      const auto [y, idx] = max_pool2d_with_indices(base, c.k, c.s, c.p, c.dil, c.ceil);
      const Tensor want =
          scatter_add(zeros({6, 13 * 11}, d), 1, idx.reshape({6, -1}), g.reshape({6, -1}));
      EXPECT_EQ(values(k1), values(want)) << fmt::format("{}", d);
    }
  }
}

EMBER_GRADCHECK_CASE({"avg_pool2d", "divisor_override",
                      [](const V& in) {
                        return avg_pool2d(in[0], {3, 3}, {2, 2}, {1, 1}, false, true, 4);
                      },
                      [] {
                        return V{input({1, 2, 5, 5}, 180)};
                      }});

TEST(AvgPool2d, DivisorOverrideDividesEveryWindow) {
  const Tensor x = ones({1, 1, 4, 4}, DType::Float64);
  // 2x2 windows of ones sum to 4; divided by 3.
  EXPECT_EQ(values(avg_pool2d(x, {2, 2}, {}, {0, 0}, false, true, 3)),
            (std::vector<double>(4, 4.0 / 3)));
  // With padding the corner window holds one real tap: 1 / 2.
  EXPECT_EQ(values(avg_pool2d(x, {2, 2}, {2, 2}, {1, 1}, false, true, 2))[0], 0.5);
  EXPECT_THROW(avg_pool2d(x, {2, 2}, {}, {0, 0}, false, true, 0), Error);
}

// ---- 3-d pooling --------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"max_pool3d", "kernel (2, 3, 2), stride (1, 2, 1), padding (1, 1, 0), ceil",
                      [](const V& in) {
                        return max_pool3d(in[0], {2, 3, 2}, {1, 2, 1}, {1, 1, 0}, {1}, true);
                      },
                      [] {
                        return V{input({2, 2, 3, 5, 4}, 190)};
                      }});
EMBER_GRADCHECK_CASE({"max_pool3d", "unbatched, dilation 2",
                      [](const V& in) { return max_pool3d(in[0], {2}, {1}, {0}, {2}); },
                      [] {
                        return V{input({2, 4, 4, 5}, 191)};
                      }});
EMBER_GRADCHECK_CASE({"avg_pool3d", "padding excluded, ceil_mode",
                      [](const V& in) {
                        return avg_pool3d(in[0], {3, 2, 2}, {2, 1, 2}, {1, 0, 1}, true, false);
                      },
                      [] {
                        return V{input({2, 2, 4, 3, 5}, 192)};
                      }});
EMBER_GRADCHECK_CASE({"avg_pool3d", "divisor_override, unbatched",
                      [](const V& in) { return avg_pool3d(in[0], {2}, {}, {1}, false, true, 5); },
                      [] {
                        return V{input({2, 3, 4, 3}, 193)};
                      }});
EMBER_GRADCHECK_CASE({"adaptive_avg_pool3d", "uneven windows",
                      [](const V& in) {
                        return adaptive_avg_pool3d(in[0], {2, 3, 2});
                      },
                      [] {
                        return V{input({2, 2, 5, 4, 3}, 194)};
                      }});
EMBER_GRADCHECK_CASE({"adaptive_max_pool3d", "uneven windows, unbatched",
                      [](const V& in) {
                        return adaptive_max_pool3d(in[0], {2, 3, 2});
                      },
                      [] {
                        return V{input({2, 5, 4, 3}, 195)};
                      }});

/** The 3-d poolings by their definition with float64 loops: per output, the window's taps
 *  (PyTorch's pool_size rule for the divisor) and the flat index of the first maximum. */
struct Pool3dLoops {
  std::vector<double> max, avg;
  std::vector<int64_t> argmax;
};

Pool3dLoops pool3d_loops(const std::vector<double>& x, int64_t planes, std::array<int64_t, 3> in,
                         std::array<int64_t, 3> k, std::array<int64_t, 3> s,
                         std::array<int64_t, 3> p, std::array<int64_t, 3> out,
                         bool count_include_pad) {
  Pool3dLoops r;
  for (int64_t pl = 0; pl < planes; ++pl) {
    for (int64_t od = 0; od < out[0]; ++od) {
      for (int64_t oh = 0; oh < out[1]; ++oh) {
        for (int64_t ow = 0; ow < out[2]; ++ow) {
          const std::array<int64_t, 3> o{od, oh, ow};
          std::array<int64_t, 3> lo{}, hi{};
          int64_t pool_size = 1, real = 1;
          for (int i = 0; i < 3; ++i) {
            const int64_t start = o[i] * s[i] - p[i];
            const int64_t end = std::min(start + k[i], in[i] + p[i]);
            pool_size *= end - start;
            lo[i] = std::max<int64_t>(start, 0), hi[i] = std::min(end, in[i]);
            real *= hi[i] - lo[i];
          }
          double best = -INFINITY, total = 0;
          int64_t at = -1;
          for (int64_t d = lo[0]; d < hi[0]; ++d) {
            for (int64_t h = lo[1]; h < hi[1]; ++h) {
              for (int64_t w = lo[2]; w < hi[2]; ++w) {
                const int64_t flat = (d * in[1] + h) * in[2] + w;
                const double v = x[static_cast<size_t>(pl * in[0] * in[1] * in[2] + flat)];
                total += v;
                if (v > best) best = v, at = flat;
              }
            }
          }
          r.max.push_back(best);
          r.argmax.push_back(at);
          r.avg.push_back(total / static_cast<double>(count_include_pad ? pool_size : real));
        }
      }
    }
  }
  return r;
}

TEST(Pool3d, MaxAndAverageEqualTheLoops) {
  const Tensor x = input({2, 3, 5, 6, 4}, 196).detach();
  // Output: D (5 + 2 - 3 + 1) / 2 + 1 = 3 (ceil), H (6 + 2 - 2 + 2) / 3 + 1 = 3, W 4 / 2 = 2.
  const std::array<int64_t, 3> k{3, 2, 2}, s{2, 3, 2}, p{1, 1, 0}, out{3, 3, 2};
  for (bool include : {true, false}) {
    const Pool3dLoops want = pool3d_loops(values(x), 6, {5, 6, 4}, k, s, p, out, include);
    const Tensor avg = avg_pool3d(x, {3, 2, 2}, {2, 3, 2}, {1, 1, 0}, true, include);
    ASSERT_EQ(avg.sizes(), Shape({2, 3, 3, 3, 2}));
    const std::vector<double> got = values(avg);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want.avg[i], 1e-12) << i;
    if (!include) continue;
    auto [mx, idx] = max_pool3d_with_indices(x, {3, 2, 2}, {2, 3, 2}, {1, 1, 0}, {1}, true);
    EXPECT_EQ(values(mx), want.max);
    const Tensor idx_host = idx.contiguous();
    EXPECT_EQ(std::vector<int64_t>(idx_host.data_ptr<int64_t>(),
                                   idx_host.data_ptr<int64_t>() + idx_host.numel()),
              want.argmax);
  }
}

TEST(Pool3d, TiesPickTheFirstMaximumAndAdaptiveWindowsAreProducts) {
  // All equal: the first tap of each window, in (d, h, w) order.
  auto [y, idx] = max_pool3d_with_indices(ones({1, 1, 4, 4, 4}, DType::Float64), {2});
  EXPECT_EQ(values(idx.to(DType::Float64)), (std::vector<double>{0, 2, 8, 10, 32, 34, 40, 42}));
  // Adaptive: 3 into 2 windows [0, 2) and [1, 3) per dim.
  const Tensor x = arange(27, TensorOptions{DType::Float64}).view({1, 1, 3, 3, 3});
  EXPECT_EQ(values(adaptive_max_pool3d(x, {2})),
            (std::vector<double>{13, 14, 16, 17, 22, 23, 25, 26}));
  EXPECT_EQ(values(adaptive_avg_pool3d(x, {1})), (std::vector<double>{13}));
  EXPECT_EQ(values(avg_pool3d(x, {3}, {}, {0}, false, true, 9)), (std::vector<double>{39}));
}

TEST(Pool3d, RefusesWhatPyTorchRefuses) {
  const Tensor x = ones({1, 1, 4, 4, 4});
  EXPECT_THROW(max_pool3d(ones({4, 4, 4}), {2}), ValueError);             // rank
  EXPECT_THROW(max_pool3d(x, {2, 2}), ValueError);                        // two sizes
  EXPECT_THROW(max_pool3d(x, {0, 2, 2}), ValueError);                     // kernel
  EXPECT_THROW(avg_pool3d(x, {2}, {2}, {2}), ValueError);                 // padding > k / 2
  EXPECT_THROW(avg_pool3d(x, {5}), ValueError);                           // too small
  EXPECT_THROW(avg_pool3d(x, {2}, {}, {0}, false, true, 0), ValueError);  // divisor 0
  EXPECT_THROW(adaptive_avg_pool3d(x, {0, 1, 1}), ValueError);
  EXPECT_THROW(max_pool3d(ones({1, 1, 4, 4, 4}, DType::Int64), {2}), TypeError);
}

}  // namespace
}  // namespace ember::testing
