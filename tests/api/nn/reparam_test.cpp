// weight_norm and spectral_norm: the parameters and buffers they make (PyTorch's names and
// order), the weight they compute against float64 loops, gradients reaching the new
// parameters, power iteration converging to the largest singular value, and removal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <ember/ember.h>
#include <ember/nn.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::nn {
namespace {

using ember::testing::make;
using ember::testing::values;

constexpr DType f64 = DType::Float64;

/** Writes `value` into parameter `p`, as torch.no_grad() lets a test do. */
void assign(Tensor& p, const Tensor& value) {
  autograd::NoGradGuard no_grad;
  p.copy_(value);
}

void expect_close(const Tensor& got, const std::vector<double>& want, double tol) {
  ember::testing::expect_close(got, want, tol, "reparametrized tensor");
}

std::vector<std::string> parameter_names(Module& m) {
  std::vector<std::string> names;
  for (const auto& [name, t] : m.named_parameters()) names.push_back(name);
  return names;
}

TEST(WeightNorm, SplitsTheWeightIntoNormsAndDirectionWithPyTorchsNames) {
  Linear fc(3, 2);
  fc.to(f64);
  const Tensor w = make({1, 2, 2, 3, 0, 4}, {2, 3}, f64);
  assign(fc.weight, w);
  weight_norm(fc);
  EXPECT_EQ(parameter_names(fc), (std::vector<std::string>{"bias", "weight_g", "weight_v"}));
  // Row norms: |(1, 2, 2)| = 3, |(3, 0, 4)| = 5; g is [2, 1].
  expect_close(*fc.find_parameter("weight_g"), {3, 5}, 0);
  EXPECT_EQ(fc.find_parameter("weight_g")->sizes(), (Shape{2, 1}));
  expect_close(fc.weight, values(w), 1e-15);  // computed at once, equal to the original
  auto sd = fc.state_dict();
  EXPECT_EQ(sd.count("weight"), 0u);
  EXPECT_EQ(sd.count("weight_g"), 1u);
  EXPECT_EQ(sd.count("weight_v"), 1u);
  // Doubling g doubles the weight the next forward uses.
  Tensor& g = *fc.find_parameter("weight_g");
  assign(g, mul(g, 2.0));
  const Tensor x = make({1, 0, 0}, {1, 3}, f64);
  const Tensor y = fc(x);
  expect_close(sub(y, fc.bias), {2, 6}, 1e-14);
  expect_close(fc.weight, {2, 4, 4, 6, 0, 8}, 1e-14);
}

TEST(WeightNorm, GradientsReachGAndVAsTheFormulaGives) {
  Linear fc(2, 1, /*bias=*/false);
  fc.to(f64);
  assign(fc.weight, make({3, 4}, {1, 2}, f64));
  weight_norm(fc);
  const Tensor x = make({1, 2}, {1, 2}, f64);
  sum(fc(x)).backward();
  // y = g (v . x) / |v| with g = 5, v = (3, 4): dy/dg = (3 + 8) / 5, dy/dv = g x / |v| -
  // g (v . x) v / |v|^3.
  expect_close(fc.find_parameter("weight_g")->grad(), {11.0 / 5}, 1e-14);
  const double vx = 11, n = 5;
  expect_close(fc.find_parameter("weight_v")->grad(),
               {5 * 1 / n - 5 * vx * 3 / (n * n * n), 5 * 2 / n - 5 * vx * 4 / (n * n * n)}, 1e-14);
}

TEST(WeightNorm, DimNoneAndOtherDimsAndRemoval) {
  Conv2d conv(2, 3, {2, 2});
  conv.to(f64);
  const std::vector<double> before = values(conv.weight);
  weight_norm(conv, "weight", std::nullopt);
  EXPECT_EQ(conv.find_parameter("weight_g")->dim(), 0);  // one norm over everything
  double total = 0;
  for (double v : before) total += v * v;
  expect_close(*conv.find_parameter("weight_g"), {std::sqrt(total)}, 1e-12);
  remove_weight_norm(conv);
  EXPECT_EQ(parameter_names(conv), (std::vector<std::string>{"bias", "weight"}));
  expect_close(conv.weight, before, 1e-14);
  EXPECT_TRUE(conv.weight.requires_grad());
  EXPECT_TRUE(conv.weight.is_leaf());
  // dim 1: norms over dims 0, 2 and 3, shaped [1, 2, 1, 1].
  weight_norm(conv, "weight", 1);
  EXPECT_EQ(conv.find_parameter("weight_g")->sizes(), (Shape{1, 2, 1, 1}));
  // The layer computes with the reparametrized weight.
  const Tensor x = ones({1, 2, 3, 3}, f64);
  expect_close(conv(x), values(conv2d(x, conv.weight.detach(), conv.bias.detach())), 1e-13);
}

TEST(WeightNorm, BadUseIsAClearError) {
  Linear fc(2, 2);
  EXPECT_THROW(weight_norm(fc, "nope"), KeyError);
  EXPECT_THROW(weight_norm(fc, "weight", 2), IndexError);
  EXPECT_THROW(remove_weight_norm(fc), ValueError);
  weight_norm(fc);
  EXPECT_THROW(weight_norm(fc, "weight"), KeyError);  // no longer a parameter
  EXPECT_THROW(spectral_norm(fc, "weight"), KeyError);
  EXPECT_THROW(remove_spectral_norm(fc), ValueError);
  EXPECT_THROW(fc.register_parameter("weight", zeros({2, 2})), KeyError);  // the name is taken
}

TEST(SpectralNorm, PowerIterationFindsTheLargestSingularValue) {
  manual_seed(3);
  Linear fc(3, 3, /*bias=*/false);
  fc.to(f64);
  // Singular values 6, 2 and 1 (a rotation of a diagonal matrix keeps them).
  assign(fc.weight, make({0, 6, 0, 2, 0, 0, 0, 0, 1}, {3, 3}, f64));
  spectral_norm(fc);
  EXPECT_EQ(parameter_names(fc), (std::vector<std::string>{"weight_orig"}));
  std::vector<std::string> buffers;
  for (const auto& [name, t] : fc.named_buffers()) buffers.push_back(name);
  EXPECT_EQ(buffers, (std::vector<std::string>{"weight_u", "weight_v"}));
  const Tensor x = eye(3, -1, f64);
  for (int i = 0; i < 30; ++i) fc(x);
  // weight / sigma with sigma = 6: the largest singular value becomes 1.
  expect_close(fc.weight, {0, 1, 0, 2.0 / 6, 0, 0, 0, 0, 1.0 / 6}, 1e-12);
  // u and v are the leading singular vectors (up to sign).
  const std::vector<double> u = values(*fc.find_buffer("weight_u"));
  EXPECT_NEAR(std::abs(u[0]), 1.0, 1e-12);
  // Gradients flow to weight_orig through sigma too: d(sum(W / sigma))/dW_orig.
  fc.zero_grad();
  sum(fc(x)).backward();
  EXPECT_TRUE(fc.find_parameter("weight_orig")->grad().defined());
}

TEST(SpectralNorm, EvalModeKeepsUAndVAndRemovalKeepsTheNormalisedWeight) {
  manual_seed(4);
  Conv2d conv(2, 3, {2, 2});
  conv.to(f64);
  spectral_norm(conv, "weight", 2);
  const Tensor x = ones({1, 2, 3, 3}, f64);
  conv(x);
  conv.eval();
  const std::vector<double> u = values(*conv.find_buffer("weight_u"));
  conv(x);
  conv(x);
  EXPECT_EQ(values(*conv.find_buffer("weight_u")), u);
  const std::vector<double> normalised = values(conv.weight);
  remove_spectral_norm(conv);
  EXPECT_EQ(parameter_names(conv), (std::vector<std::string>{"bias", "weight"}));
  EXPECT_TRUE(conv.named_buffers().empty());
  expect_close(conv.weight, normalised, 1e-14);
  EXPECT_THROW(spectral_norm(conv, "weight", 0), ValueError);
}

TEST(SpectralNorm, TransposedConvolutionsNormaliseOverTheirOutputChannels) {
  manual_seed(5);
  ConvTranspose2d up(4, 2, {3, 3});  // weight [4, 2, 3, 3]: output channels in dim 1
  spectral_norm(up);
  EXPECT_EQ(up.find_buffer("weight_u")->sizes(), (Shape{2}));
  EXPECT_EQ(up.find_buffer("weight_v")->sizes(), (Shape{4 * 3 * 3}));
}

}  // namespace
}  // namespace ember::nn
