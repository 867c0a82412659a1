// affine_grid and grid_sample on hand-computed cases: each mode and padding_mode at points inside,
// between and outside the pixels, both gradients, and every argument check. (PyTorch's values
// for every combination are compared in tests/python/test_grid_ctc.py.)
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

constexpr DType f64 = DType::Float64;

/** The 2 x 2 image [[1, 2], [3, 4]] as [1, 1, 2, 2]. */
Tensor square() {
  return make({1, 2, 3, 4}, {1, 1, 2, 2}, f64);
}

/** A grid [1, 1, P, 2] of the points (x, y). */
Tensor points(const std::vector<double>& xy) {
  return make(xy, {1, 1, static_cast<int64_t>(xy.size() / 2), 2}, f64);
}

TEST(AffineGrid, IdentityGivesThePixelCentresOrCorners) {
  const Tensor id = make({1, 0, 0, 0, 1, 0}, {1, 2, 3}, f64);
  // align_corners: x in {-1, 0, 1}, y in {-1, 1}; the last dim holds (x, y).
  expect_close(affine_grid(id, {1, 1, 2, 3}, true), {-1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1},
               1e-15, "align_corners");
  // Pixel centres: x in {-2/3, 0, 2/3}, y in {-1/2, 1/2}.
  const double t = 2.0 / 3;
  expect_close(affine_grid(id, {1, 1, 2, 3}, false),
               {-t, -0.5, 0, -0.5, t, -0.5, -t, 0.5, 0, 0.5, t, 0.5}, 1e-15, "centres");
  // A translation by 0.5 in x and a swap of the axes.
  const Tensor m = make({0, 1, 0.5, 1, 0, 0}, {1, 2, 3}, f64);
  expect_close(affine_grid(m, {1, 1, 1, 2}, true), {0.5, -1, 0.5, 1}, 1e-15, "swap");
  EXPECT_EQ(affine_grid(id, {1, 4, 1, 1}).sizes(), Shape({1, 1, 1, 2}));
  expect_close(affine_grid(id, {1, 4, 1, 1}), {0, 0}, 0, "one pixel");
}

TEST(AffineGrid, ThreeDimensionalAndTheGradientOfTheta) {
  const Tensor id = make({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}, {1, 3, 4}, f64);
  const Tensor g = affine_grid(id, {1, 1, 2, 2, 2}, true);
  EXPECT_EQ(g.sizes(), Shape({1, 2, 2, 2, 3}));
  // Element [0, d, h, w] holds (x_w, y_h, z_d).
  const std::vector<double> v = values(g);
  EXPECT_EQ(std::vector<double>(v.begin(), v.begin() + 3), std::vector<double>({-1, -1, -1}));
  EXPECT_EQ(std::vector<double>(v.begin() + 3, v.begin() + 6), std::vector<double>({1, -1, -1}));
  EXPECT_EQ(std::vector<double>(v.end() - 3, v.end()), std::vector<double>({1, 1, 1}));
  // d sum(grid) / d theta[i][j] = sum over points of the base coordinate j: 0 for x, y, z (they
  // are symmetric) and the point count for the constant column.
  Tensor theta = make({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}, {1, 3, 4}, f64).requires_grad_(true);
  sum(affine_grid(theta, {1, 1, 2, 3, 4}, false)).backward();
  expect_close(theta.grad(), {0, 0, 0, 24, 0, 0, 0, 24, 0, 0, 0, 24}, 1e-14, "dtheta");
}

TEST(AffineGrid, RefusesBadArguments) {
  const Tensor theta = zeros({2, 2, 3}, f64);
  EXPECT_PRED2(contains, error_of<ValueError>([&] {
                 affine_grid(theta, {2, 1, 2, 2, 2});
               }),
               "[affine_grid] theta must be a batch of 3-d affine matrices of shape [N, 3, 4]");
  EXPECT_PRED2(contains, error_of<NotImplementedError>([&] {
                 affine_grid(theta, {2, 1, 2});
               }),
               "[affine_grid] size must have 4");
  EXPECT_PRED2(contains, error_of<ValueError>([&] {
                 affine_grid(theta, {2, 1, 0, 2});
               }),
               "size must be positive");
  EXPECT_PRED2(contains, error_of<ValueError>([&] {
                 affine_grid(theta, {3, 1, 2, 2});
               }),
               "size asks for a batch of 3");
  EXPECT_THROW(affine_grid(zeros({2, 2, 3}, DType::Int64), {2, 1, 2, 2}), TypeError);
  EXPECT_THROW(affine_grid(Tensor(), {2, 1, 2, 2}), TypeError);
}

TEST(GridSample, BilinearInsideWithAlignedCorners) {
  // (x, y) = (0, 0) is the centre, (-1, -1) pixel (0, 0), (1, -1) pixel (0, 1); x = 0.5 is
  // column 0.75.
  expect_close(
      grid_sample(square(), points({0, 0, -1, -1, 1, -1, 0.5, 0}), "bilinear", "zeros", true),
      {2.5, 1, 2, 2.75}, 1e-15, "bilinear");
}

TEST(GridSample, EachPaddingModeOutside) {
  // Without align_corners (-1, -1) is the outer corner of pixel (0, 0): coordinate (-0.5, -0.5).
  const Tensor p = points({-1, -1});
  expect_close(grid_sample(square(), p, "bilinear", "zeros"), {0.25}, 1e-15, "zeros");
  expect_close(grid_sample(square(), p, "bilinear", "border"), {1}, 1e-15, "border");
  expect_close(grid_sample(square(), p, "bilinear", "reflection"), {1}, 1e-15, "reflection");
  // Reflection with aligned corners: x = 1.5 is column 1.25, reflected to 0.75; y = 0 row 0.5.
  expect_close(grid_sample(square(), points({1.5, 0}), "bilinear", "reflection", true), {2.75},
               1e-15, "reflected");
  // Far outside: zeros reads 0, border the nearest pixel.
  const Tensor far = points({7, -9});
  expect_close(grid_sample(square(), far, "bilinear", "zeros"), {0}, 0, "far zeros");
  expect_close(grid_sample(square(), far, "bilinear", "border"), {2}, 0, "far border");
  // A NaN point reads 0 with zero padding, as in PyTorch.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_close(grid_sample(square(), points({nan, 0}), "bilinear", "zeros"), {0}, 0, "nan");
}

TEST(GridSample, NearestRoundsHalfToEven) {
  const Tensor row = make({0, 10, 20}, {1, 1, 1, 3}, f64);
  // Aligned corners: x = -0.5 is column 0.5 (rounds to 0), x = 0.5 column 1.5 (rounds to 2).
  expect_close(grid_sample(row, points({-0.5, 0, 0.5, 0, 0.2, 0}), "nearest", "zeros", true),
               {0, 20, 10}, 0, "nearest");
}

TEST(GridSample, BicubicKeepsAConstantImageWithBorderPadding) {
  const Tensor c = full({1, 2, 3, 4}, 3.0, f64);
  const Tensor g = points({-1.3, 0.2, 0.1, 0.9, 0.7, -0.4, 1.6, 1.2});
  expect_close(grid_sample(c, g, "bicubic", "border"), std::vector<double>(8, 3.0), 1e-14,
               "constant");
  // On a pixel (aligned corners) the cubic weights are (0, 1, 0, 0): the pixel itself.
  expect_close(grid_sample(square(), points({1, -1}), "bicubic", "zeros", true), {2}, 1e-15,
               "on a pixel");
}

TEST(GridSample, TrilinearCentreIsTheMean) {
  const Tensor cube = make({0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 2, 2, 2}, f64);
  const Tensor g = make({0, 0, 0, 1, -1, -1}, {1, 1, 1, 2, 3}, f64);
  // (x, y, z) = (1, -1, -1) is [d 0, h 0, w 1] = 1.
  expect_close(grid_sample(cube, g, "bilinear", "zeros", true), {3.5, 1}, 1e-15, "trilinear");
  expect_close(grid_sample(cube, g, "nearest", "zeros", true), {0, 1}, 0, "nearest 3-d");
}

TEST(GridSample, GradientsInInputAndGrid) {
  // On [[1, 2], [3, 4]] with aligned corners the value at (x, y) is 1 + (x + 1) / 2 + (y + 1),
  // so the grid gradient is (0.5, 1) and the input gradient the bilinear weights.
  Tensor x = square().requires_grad_(true);
  Tensor g = points({0.2, -0.4}).requires_grad_(true);
  grid_sample(x, g, "bilinear", "zeros", true).backward();
  expect_close(g.grad(), {0.5, 1}, 1e-14, "grid gradient");
  // Column 0.6, row 0.3: weights (0.4 * 0.7, 0.6 * 0.7, 0.4 * 0.3, 0.6 * 0.3).
  expect_close(x.grad(), {0.28, 0.42, 0.12, 0.18}, 1e-14, "input gradient");
  // nearest: the grid gradient is there and zero.
  Tensor g2 = points({0.2, -0.4}).requires_grad_(true);
  grid_sample(square(), g2, "nearest", "zeros", true).backward();
  ASSERT_TRUE(g2.grad().defined());
  expect_close(g2.grad(), {0, 0}, 0, "nearest grid gradient");
}

TEST(GridSample, KeepsTheDtypeAndHandlesEmptyGrids) {
  const Tensor x = square().to(DType::Float32);
  const Tensor y = grid_sample(x, points({0, 0}).to(DType::Float32), "bilinear", "zeros", true);
  EXPECT_EQ(y.dtype(), DType::Float32);
  expect_close(y, {2.5}, 1e-7, "float32");
  EXPECT_EQ(grid_sample(square(), zeros({1, 0, 3, 2}, f64)).sizes(), Shape({1, 1, 0, 3}));
}

TEST(GridSample, RefusesBadArguments) {
  const Tensor x = square(), g = points({0, 0});
  EXPECT_PRED2(contains, error_of<ValueError>([&] { grid_sample(x, g, "linear"); }),
               "[grid_sample] unknown mode 'linear'");
  EXPECT_PRED2(contains, error_of<ValueError>([&] { grid_sample(x, g, "bilinear", "edge"); }),
               "unknown padding_mode 'edge'");
  EXPECT_PRED2(contains, error_of<ValueError>([&] {
                 grid_sample(x, zeros({1, 1, 1, 3}, f64));
               }),
               "grid must be [N, H_out, W_out, 2] for a 4-d input: got shape [1, 1, 1, 3]");
  EXPECT_PRED2(contains, error_of<ValueError>([&] {
                 grid_sample(x, zeros({2, 1, 1, 2}, f64));
               }),
               "same batch size: got 2 and 1");
  EXPECT_PRED2(contains, error_of<ValueError>([&] {
                 grid_sample(zeros({2, 2}, f64), g);
               }),
               "expected a 4-d");
  EXPECT_PRED2(contains, error_of<ValueError>([&] {
                 grid_sample(zeros({1, 1, 0, 2}, f64), g);
               }),
               "spatial sizes must be positive");
  EXPECT_THROW(grid_sample(zeros({1, 1, 2, 2, 2}, f64), zeros({1, 1, 1, 1, 3}, f64), "bicubic"),
               NotImplementedError);
  EXPECT_THROW(grid_sample(x, g.to(DType::Float32)), TypeError);
  EXPECT_THROW(grid_sample(x.to(DType::Int64), g.to(DType::Int64)), TypeError);
  EXPECT_THROW(grid_sample(Tensor(), g), TypeError);
}

}  // namespace
}  // namespace ember::testing
