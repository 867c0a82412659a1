// Gradients of conv2d and conv_transpose2d: gradcheck cases (first and second order) over
// stride (also one that skips trailing rows), padding, dilation, groups, bias, output_padding
// (also >= stride, allowed below the dilation), unbatched input and non-contiguous operands.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "tests/core/autograd/gradcheck_cases.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

using V = std::vector<Tensor>;

// ---- conv2d -------------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"conv2d", "3x3, no padding", [](const V& in) { return conv2d(in[0], in[1]); },
                      [] {
                        return V{input({2, 2, 5, 4}, 1), input({3, 2, 3, 3}, 2)};
                      }});
EMBER_GRADCHECK_CASE({"conv2d", "bias, padding 1",
                      [](const V& in) { return conv2d(in[0], in[1], in[2], {1}, {1}); },
                      [] {
                        return V{input({2, 2, 4, 4}, 3), input({3, 2, 3, 3}, 4), input({3}, 5)};
                      }});
EMBER_GRADCHECK_CASE({"conv2d", "stride (2, 3) skipping trailing rows, padding (1, 0)",
                      [](const V& in) {
                        return conv2d(in[0], in[1], in[2], {2, 3}, {1, 0});
                      },
                      [] {
                        return V{input({1, 2, 6, 7}, 6), input({2, 2, 2, 3}, 7), input({2}, 8)};
                      }});
EMBER_GRADCHECK_CASE({"conv2d", "dilation (2, 1), padding 2",
                      [](const V& in) {
                        return conv2d(in[0], in[1], {}, {1}, {2}, {2, 1});
                      },
                      [] {
                        return V{input({1, 2, 5, 5}, 9), input({2, 2, 3, 2}, 10)};
                      }});
EMBER_GRADCHECK_CASE({"conv2d", "groups 2, stride 2",
                      [](const V& in) { return conv2d(in[0], in[1], in[2], {2}, {1}, {1}, 2); },
                      [] {
                        return V{input({2, 4, 5, 5}, 11), input({4, 2, 3, 3}, 12), input({4}, 13)};
                      }});
EMBER_GRADCHECK_CASE({"conv2d", "depthwise (groups = channels)",
                      [](const V& in) { return conv2d(in[0], in[1], {}, {1}, {1}, {1}, 3); },
                      [] {
                        return V{input({1, 3, 4, 4}, 14), input({3, 1, 3, 3}, 15)};
                      }});
EMBER_GRADCHECK_CASE({"conv2d", "unbatched 3-d input",
                      [](const V& in) { return conv2d(in[0], in[1], in[2], {1}, {1}); },
                      [] {
                        return V{input({2, 4, 4}, 16), input({2, 2, 3, 3}, 17), input({2}, 18)};
                      }});
EMBER_GRADCHECK_CASE({"conv2d", "transposed input view",
                      [](const V& in) { return conv2d(in[0].transpose(2, 3), in[1]); },
                      [] {
                        return V{input({1, 2, 5, 4}, 19), input({2, 2, 2, 2}, 20)};
                      }});

// ---- conv_transpose2d ---------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"conv_transpose2d", "3x3",
                      [](const V& in) { return conv_transpose2d(in[0], in[1]); },
                      [] {
                        return V{input({2, 2, 3, 3}, 21), input({2, 3, 3, 3}, 22)};
                      }});
EMBER_GRADCHECK_CASE({"conv_transpose2d", "bias, stride 2, padding 1, output_padding 1",
                      [](const V& in) {
                        return conv_transpose2d(in[0], in[1], in[2], {2}, {1}, {1});
                      },
                      [] {
                        return V{input({1, 2, 3, 3}, 23), input({2, 2, 3, 3}, 24), input({2}, 25)};
                      }});
EMBER_GRADCHECK_CASE({"conv_transpose2d", "stride (3, 2), output_padding (2, 0), kernel 2x3",
                      [](const V& in) {
                        return conv_transpose2d(in[0], in[1], {}, {3, 2}, {0, 1}, {2, 0});
                      },
                      [] {
                        return V{input({1, 2, 3, 3}, 26), input({2, 2, 2, 3}, 27)};
                      }});
EMBER_GRADCHECK_CASE({"conv_transpose2d", "dilation 2, output_padding 1 >= stride 1",
                      [](const V& in) {
                        return conv_transpose2d(in[0], in[1], {}, {1}, {1}, {1}, 1, {2});
                      },
                      [] {
                        return V{input({1, 2, 3, 3}, 28), input({2, 2, 2, 2}, 29)};
                      }});
EMBER_GRADCHECK_CASE({"conv_transpose2d", "groups 2, bias",
                      [](const V& in) {
                        return conv_transpose2d(in[0], in[1], in[2], {2}, {1}, {0}, 2);
                      },
                      [] {
                        return V{input({1, 4, 3, 3}, 30), input({4, 1, 3, 3}, 31), input({2}, 32)};
                      }});
EMBER_GRADCHECK_CASE({"conv_transpose2d", "unbatched 3-d input",
                      [](const V& in) { return conv_transpose2d(in[0], in[1], {}, {2}); },
                      [] {
                        return V{input({2, 2, 3}, 33), input({2, 2, 2, 2}, 34)};
                      }});

// ---- conv1d -------------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"conv1d", "stride 2, padding, dilation, groups, bias",
                      [](const V& in) { return conv1d(in[0], in[1], in[2], 2, 1, 2, 2); },
                      [] {
                        return V{input({2, 4, 9}, 160), input({6, 2, 3}, 161), input({6}, 162)};
                      }});

TEST(Conv1d, EqualsTheDirectSum) {
  // y[n, o, i] = b[o] + sum_c,k x[n, c, i*s - p + k*d] w[o, c, k]
  const Tensor x = input({2, 3, 7}, 163).detach(), w = input({4, 3, 2}, 164).detach(),
               b = input({4}, 165).detach();
  const Tensor y = conv1d(x, w, b, 2, 1, 1);
  ASSERT_EQ(y.sizes(), Shape({2, 4, 4}));
  const std::vector<double> xv = values(x), wv = values(w), bv = values(b), yv = values(y);
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t o = 0; o < 4; ++o) {
      for (int64_t i = 0; i < 4; ++i) {
        double s = bv[static_cast<size_t>(o)];
        for (int64_t c = 0; c < 3; ++c) {
          for (int64_t k = 0; k < 2; ++k) {
            const int64_t at = i * 2 - 1 + k;
            if (at < 0 || at >= 7) continue;
            s += xv[static_cast<size_t>((n * 3 + c) * 7 + at)] *
                 wv[static_cast<size_t>((o * 3 + c) * 2 + k)];
          }
        }
        EXPECT_NEAR(yv[static_cast<size_t>((n * 4 + o) * 4 + i)], s, 1e-12);
      }
    }
  }
  EXPECT_EQ(conv1d(x.select(0, 0), w).sizes(), Shape({4, 6}));
  EXPECT_THROW(conv1d(x, w.unsqueeze(0)), Error);
  EXPECT_THROW(conv1d(x, input({4, 3, 9}, 1).detach()), Error);
  EXPECT_THROW(conv1d(x, w, {}, 0), Error);
}

// ---- conv3d -------------------------------------------------------------------------------------
EMBER_GRADCHECK_CASE(
    {"conv3d", "stride (2, 1, 2), padding (1, 0, 1), dilation (1, 2, 1), bias",
     [](const V& in) {
       return conv3d(in[0], in[1], in[2], {2, 1, 2}, {1, 0, 1}, {1, 2, 1});
     },
     [] {
       return V{input({2, 2, 4, 5, 4}, 176), input({3, 2, 2, 2, 3}, 177), input({3}, 178)};
     }});
EMBER_GRADCHECK_CASE({"conv3d", "groups 2, unbatched",
                      [](const V& in) { return conv3d(in[0], in[1], {}, {1}, {1}, {1}, 2); },
                      [] {
                        return V{input({4, 3, 3, 3}, 179), input({4, 2, 2, 2, 2}, 180)};
                      }});

TEST(Conv3d, EqualsTheDirectSum) {
  // y[n, o, i, j, l] = b[o] + sum over c of o's group and taps (a, e, f) of
  // x[n, c, i*s0 - p0 + a*d0, j*s1 - p1 + e*d1, l*s2 - p2 + f*d2] * w[o, c - first, a, e, f].
  const int64_t n = 2, c = 4, g = 2, o = 6, d = 5, h = 4, w = 6;
  const std::array<int64_t, 3> k{3, 2, 2}, s{2, 1, 2}, p{1, 1, 0}, dil{1, 2, 1};
  const Tensor x = input({n, c, d, h, w}, 181).detach();
  const Tensor wt = input({o, c / g, k[0], k[1], k[2]}, 182).detach();
  const Tensor b = input({o}, 183).detach();
  const Tensor y =
      conv3d(x, wt, b, {s[0], s[1], s[2]}, {p[0], p[1], p[2]}, {dil[0], dil[1], dil[2]}, g);
  const std::array<int64_t, 3> in{d, h, w};
  std::array<int64_t, 3> out{};
  for (int i = 0; i < 3; ++i) out[i] = (in[i] + 2 * p[i] - dil[i] * (k[i] - 1) - 1) / s[i] + 1;
  ASSERT_EQ(y.sizes(), Shape({n, o, out[0], out[1], out[2]}));
  const std::vector<double> xv = values(x), wv = values(wt), bv = values(b), yv = values(y);
  size_t at = 0;
  for (int64_t bn = 0; bn < n; ++bn) {
    for (int64_t oc = 0; oc < o; ++oc) {
      const int64_t first = oc / (o / g) * (c / g);
      for (int64_t i = 0; i < out[0]; ++i) {
        for (int64_t j = 0; j < out[1]; ++j) {
          for (int64_t l = 0; l < out[2]; ++l) {
            double sum = bv[static_cast<size_t>(oc)];
            for (int64_t cc = 0; cc < c / g; ++cc) {
              for (int64_t a = 0; a < k[0]; ++a) {
                for (int64_t e = 0; e < k[1]; ++e) {
                  for (int64_t f = 0; f < k[2]; ++f) {
                    const int64_t zd = i * s[0] - p[0] + a * dil[0];
                    const int64_t zh = j * s[1] - p[1] + e * dil[1];
                    const int64_t zw = l * s[2] - p[2] + f * dil[2];
                    if (zd < 0 || zd >= d || zh < 0 || zh >= h || zw < 0 || zw >= w) continue;
                    sum += xv[static_cast<size_t>((((bn * c + first + cc) * d + zd) * h + zh) * w +
                                                  zw)] *
                           wv[static_cast<size_t>(
                               (((oc * (c / g) + cc) * k[0] + a) * k[1] + e) * k[2] + f)];
                  }
                }
              }
            }
            EXPECT_NEAR(yv[at++], sum, 1e-12);
          }
        }
      }
    }
  }
}

TEST(Conv3d, RefusesWhatPyTorchRefuses) {
  const Tensor x = ones({1, 2, 4, 4, 4}), w = ones({3, 2, 2, 2, 2});
  EXPECT_THROW(conv3d(ones({2, 4, 4}), w), ValueError);          // rank
  EXPECT_THROW(conv3d(x, ones({3, 2, 2, 2})), ValueError);       // weight rank
  EXPECT_THROW(conv3d(x, ones({3, 1, 2, 2, 2})), ValueError);    // channels
  EXPECT_THROW(conv3d(x, w, ones({2})), ValueError);             // bias
  EXPECT_THROW(conv3d(x, w, {}, {1, 0, 1}), ValueError);         // stride
  EXPECT_THROW(conv3d(x, w, {}, {1}, {0}, {1}, 0), ValueError);  // groups
  EXPECT_THROW(conv3d(x, ones({3, 2, 5, 2, 2})), ValueError);    // kernel too big
  EXPECT_THROW(conv3d(x, w, {}, {1, 1}), ValueError);            // two strides
  EXPECT_THROW(conv3d(x.to(DType::Float64), w), TypeError);      // dtypes
}

// ---- unfold and fold ----------------------------------------------------------------------------
EMBER_GRADCHECK_CASE({"unfold", "kernel (2, 3), dilation (2, 1), padding (1, 2), stride (2, 1)",
                      [](const V& in) {
                        return unfold(in[0], {2, 3}, {2, 1}, {1, 2}, {2, 1});
                      },
                      [] {
                        return V{input({2, 2, 5, 4}, 170)};
                      }});
EMBER_GRADCHECK_CASE({"unfold", "unbatched, overlapping blocks",
                      [](const V& in) { return unfold(in[0], {2}); },
                      [] {
                        return V{input({2, 3, 3}, 171)};
                      }});
EMBER_GRADCHECK_CASE({"fold", "overlapping blocks summed, padding cropped",
                      [](const V& in) {
                        return fold(in[0], {4, 5}, {2, 3}, {1}, {1}, {1, 2});
                      },
                      [] {
                        // Blocks: (4 + 2 - 2) / 1 + 1 = 5 by (5 + 2 - 3) / 2 + 1 = 3.
                        return V{input({2, 2 * 6, 15}, 172)};
                      }});
EMBER_GRADCHECK_CASE({"fold", "unbatched, dilation 2",
                      [](const V& in) {
                        return fold(in[0], {5, 5}, {2, 2}, {2});
                      },
                      [] {
                        return V{input({4, 9}, 173)};
                      }});

// unfold by its definition, with float64 loops: cols[n, (c, a, e), (i, j)] =
// x[n, c, i*sh - ph + a*dh, j*sw - pw + e*dw], 0 outside.
std::vector<double> unfold_loops(const std::vector<double>& x, int64_t n, int64_t c, int64_t h,
                                 int64_t w, std::array<int64_t, 8> g, int64_t* oh_out,
                                 int64_t* ow_out) {
  const auto [kh, kw, dh, dw, ph, pw, sh, sw] = g;
  const int64_t oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
  const int64_t ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
  *oh_out = oh, *ow_out = ow;
  std::vector<double> cols;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t a = 0; a < kh; ++a) {
        for (int64_t e = 0; e < kw; ++e) {
          for (int64_t i = 0; i < oh; ++i) {
            for (int64_t j = 0; j < ow; ++j) {
              const int64_t y = i * sh - ph + a * dh, xx = j * sw - pw + e * dw;
              const bool in = y >= 0 && y < h && xx >= 0 && xx < w;
              cols.push_back(in ? x[static_cast<size_t>(((b * c + ch) * h + y) * w + xx)] : 0.0);
            }
          }
        }
      }
    }
  }
  return cols;
}

TEST(Unfold, EqualsTheLoopsAndFoldIsItsAdjoint) {
  const Tensor x = input({2, 3, 6, 5}, 174).detach();
  int64_t oh = 0, ow = 0;
  const std::vector<double> want =
      unfold_loops(values(x), 2, 3, 6, 5, {3, 2, 2, 1, 1, 0, 1, 2}, &oh, &ow);
  const Tensor cols = unfold(x, {3, 2}, {2, 1}, {1, 0}, {1, 2});
  ASSERT_EQ(cols.sizes(), Shape({2, 3 * 6, oh * ow}));
  EXPECT_EQ(values(cols), want);
  // <unfold(x), c> = <x, fold(c)> for any c: fold is unfold's adjoint.
  const Tensor c = input(cols.sizes(), 175).detach();
  const Tensor folded = fold(c, {6, 5}, {3, 2}, {2, 1}, {1, 0}, {1, 2});
  ASSERT_EQ(folded.sizes(), x.sizes());
  EXPECT_NEAR(sum(mul(cols, c)).item<double>(), sum(mul(x, folded)).item<double>(), 1e-12);
}

TEST(Fold, SumsOverlappingBlocksAndCountsThem) {
  // fold(unfold(ones)) counts how many blocks cover each pixel: a 3x3 image, 2x2 blocks.
  const Tensor ones_img = ones({1, 1, 3, 3}, DType::Float64);
  const Tensor counts = fold(unfold(ones_img, {2}), {3, 3}, {2});
  EXPECT_EQ(values(counts), (std::vector<double>{1, 2, 1, 2, 4, 2, 1, 2, 1}));
  // Unbatched in, unbatched out; an empty batch is allowed.
  EXPECT_EQ(fold(ones({4, 4}, DType::Float64), {3, 3}, {2}).sizes(), Shape({1, 3, 3}));
  EXPECT_EQ(unfold(ones({0, 2, 3, 3}, DType::Float64), {2}).sizes(), Shape({0, 8, 4}));
  EXPECT_EQ(fold(ones({0, 8, 4}, DType::Float64), {3, 3}, {2}).sizes(), Shape({0, 2, 3, 3}));
}

TEST(Unfold, RefusesWhatPyTorchRefuses) {
  const Tensor x = ones({1, 2, 4, 4});
  EXPECT_THROW(unfold(ones({2, 4, 4, 4, 4}), {2}), ValueError);  // rank
  EXPECT_THROW(unfold(x, {0, 2}), ValueError);                   // kernel size
  EXPECT_THROW(unfold(x, {2}, {0}), ValueError);                 // dilation
  EXPECT_THROW(unfold(x, {2}, {1}, {-1}), ValueError);           // padding
  EXPECT_THROW(unfold(x, {2}, {1}, {0}, {0}), ValueError);       // stride
  EXPECT_THROW(unfold(x, {5}), ValueError);                      // no block fits
  EXPECT_THROW(unfold(x, {2, 2, 2}), ValueError);                // three sizes
  EXPECT_THROW(unfold(ones({1, 2, 4, 4}, DType::Int64), {2}), TypeError);
  EXPECT_THROW(fold(ones({1, 7, 9}), {4, 4}, {2}), ValueError);     // 7 is no multiple of 4
  EXPECT_THROW(fold(ones({1, 8, 8}), {4, 4}, {2}), ValueError);     // 9 blocks, not 8
  EXPECT_THROW(fold(ones({1, 1, 8, 9}), {4, 4}, {2}), ValueError);  // rank
}

// ---- conv_transpose1d and output sizes ---------------------------------------------------------
EMBER_GRADCHECK_CASE({"conv_transpose1d", "stride 2, padding 1, output_padding 1, groups 2",
                      [](const V& in) { return conv_transpose1d(in[0], in[1], in[2], 2, 1, 1, 2); },
                      [] {
                        return V{input({2, 4, 3}, 920), input({4, 3, 3}, 921), input({6}, 922)};
                      }});

EMBER_GRADCHECK_CASE(
    {"conv_transpose3d", "stride (2, 1, 2), padding 1, output_padding, groups 2",
     [](const V& in) {
       return conv_transpose3d(in[0], in[1], in[2], {2, 1, 2}, {1, 0, 1}, {1, 0, 0}, 2, {1, 2, 1});
     },
     [] {
       return V{input({1, 4, 2, 2, 3}, 925), input({4, 1, 2, 2, 2}, 926), input({2}, 927)};
     }});

TEST(ConvTranspose3d, EqualsTheLoops) {
  // y[o, s z + d t - p] += x[c, z] w[c, o, t] per dim, the three dims at once.
  const int64_t c = 2, o = 2;
  const std::array<int64_t, 3> in{2, 3, 2}, k{2, 3, 2}, s{2, 1, 3}, p{1, 0, 1}, d{1, 2, 1},
      op{1, 0, 2};
  const Tensor x = input({1, c, in[0], in[1], in[2]}, 928).detach();
  const Tensor w = input({c, o, k[0], k[1], k[2]}, 929).detach();
  const Tensor y = conv_transpose3d(x, w, {}, {s[0], s[1], s[2]}, {p[0], p[1], p[2]},
                                    {op[0], op[1], op[2]}, 1, {d[0], d[1], d[2]});
  std::array<int64_t, 3> out{};
  for (int i = 0; i < 3; ++i)
    out[i] = (in[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1;
  ASSERT_EQ(y.sizes(), (Shape{1, o, out[0], out[1], out[2]}));
  std::vector<double> want(static_cast<size_t>(o * out[0] * out[1] * out[2]), 0.0);
  const std::vector<double> xv = values(x), wv = values(w);
  for (int64_t ci = 0; ci < c; ++ci)
    for (int64_t oi = 0; oi < o; ++oi)
      for (int64_t z0 = 0; z0 < in[0]; ++z0)
        for (int64_t z1 = 0; z1 < in[1]; ++z1)
          for (int64_t z2 = 0; z2 < in[2]; ++z2)
            for (int64_t t0 = 0; t0 < k[0]; ++t0)
              for (int64_t t1 = 0; t1 < k[1]; ++t1)
                for (int64_t t2 = 0; t2 < k[2]; ++t2) {
                  const int64_t a = s[0] * z0 + d[0] * t0 - p[0], b = s[1] * z1 + d[1] * t1 - p[1],
                                e = s[2] * z2 + d[2] * t2 - p[2];
                  if (a < 0 || a >= out[0] || b < 0 || b >= out[1] || e < 0 || e >= out[2])
                    continue;
                  want[static_cast<size_t>(((oi * out[0] + a) * out[1] + b) * out[2] + e)] +=
                      xv[static_cast<size_t>(((ci * in[0] + z0) * in[1] + z1) * in[2] + z2)] *
                      wv[static_cast<size_t>((((ci * o + oi) * k[0] + t0) * k[1] + t1) * k[2] +
                                             t2)];
                }
  const std::vector<double> got = values(y);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-13) << i;
  EXPECT_THROW(conv_transpose3d(ones({2, 2, 2}), w), ValueError);       // a 3-d input
  EXPECT_THROW(conv_transpose3d(x, w, {}, {1}, {0}, {1}), ValueError);  // output_padding >= stride
}

TEST(ConvTranspose1d, EqualsTheLoops) {
  // y[o, s j - p + d k] += x[c, j] w[c, o, k]: every input position spreads its kernel.
  const int64_t c = 2, o = 3, len = 4, k = 3, s = 2, p = 1, d = 2, op = 1;
  const Tensor x = input({1, c, len}, 923).detach(), w = input({c, o, k}, 924).detach();
  const Tensor y = conv_transpose1d(x, w, {}, s, p, op, 1, d);
  const int64_t out = (len - 1) * s - 2 * p + d * (k - 1) + op + 1;
  ASSERT_EQ(y.sizes(), (Shape{1, o, out}));
  std::vector<double> want(static_cast<size_t>(o * out), 0.0);
  const std::vector<double> xv = values(x), wv = values(w);
  for (int64_t ci = 0; ci < c; ++ci) {
    for (int64_t oi = 0; oi < o; ++oi) {
      for (int64_t j = 0; j < len; ++j) {
        for (int64_t ki = 0; ki < k; ++ki) {
          const int64_t at = s * j - p + d * ki;
          if (at < 0 || at >= out) continue;
          want[static_cast<size_t>(oi * out + at)] +=
              xv[static_cast<size_t>(ci * len + j)] *
              wv[static_cast<size_t>((ci * o + oi) * k + ki)];
        }
      }
    }
  }
  const std::vector<double> got = values(y);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-13) << i;
  // The output padding that gives a requested size: sizes 9 and 10 for these.
  EXPECT_EQ(conv_transpose_output_padding(x, {10}, {k}, {s}, {p}, {d}), (Shape{1}));
  EXPECT_EQ(conv_transpose_output_padding(x, {1, 3, 9}, {k}, {s}, {p}, {d}), (Shape{0}));
  EXPECT_THROW(conv_transpose_output_padding(x, {11}, {k}, {s}, {p}, {d}), ValueError);
  EXPECT_THROW(conv_transpose_output_padding(x, {2, 10}, {k}, {s}, {p}, {d}), ValueError);
  EXPECT_THROW(conv_transpose1d(ones({2, 2, 2, 2}), w), ValueError);
}

}  // namespace
}  // namespace ember::testing
