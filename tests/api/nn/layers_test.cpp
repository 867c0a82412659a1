// Layers: shapes, PyTorch's default initialisation, modes, and values against references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include <ember/ember.h>
#include <ember/nn.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::nn {
namespace {

using ember::testing::expect_error;
using ember::testing::values;

struct Stats {
  double min, max, mean, var;
};

Stats stats(const Tensor& t) {
  const std::vector<double> v = values(t);
  Stats s{*std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()), 0, 0};
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  for (double x : v) s.var += (x - s.mean) * (x - s.mean);
  s.var /= static_cast<double>(v.size());
  return s;
}

// U(-b, b): inside the bound, reaching close to it, with variance b^2 / 3.
void expect_uniform(const Tensor& t, double bound) {
  const Stats s = stats(t);
  EXPECT_GE(s.min, -bound);
  EXPECT_LE(s.max, bound);
  EXPECT_GT(s.max, 0.95 * bound);
  EXPECT_LT(s.min, -0.95 * bound);
  EXPECT_NEAR(s.var, bound * bound / 3, 0.1 * bound * bound / 3);
}

TEST(Pad, ModulesPadAsTheirModeWithPyTorchsNamesAndRepr) {
  const Tensor x = tensor({{1.0, 2.0, 3.0}});
  EXPECT_EQ(values(PadNd<PadKind::Reflection, 1>({2})(x)),
            (std::vector<double>{3, 2, 1, 2, 3, 2, 1}));
  EXPECT_EQ(values(PadNd<PadKind::Replication, 1>({2, 1})(x)),
            (std::vector<double>{1, 1, 1, 2, 3, 3}));
  EXPECT_EQ(values(PadNd<PadKind::Circular, 1>({1, 2})(x)),
            (std::vector<double>{3, 1, 2, 3, 1, 2}));
  EXPECT_EQ(values(PadNd<PadKind::Constant, 1>({1, 0}, 9.0)(x)), (std::vector<double>{9, 1, 2, 3}));
  PadNd<PadKind::Zero, 2> zero({1});
  EXPECT_EQ(zero.padding, (Shape{1, 1, 1, 1}));
  EXPECT_EQ(zero(x).sizes(), (Shape{3, 5}));
  EXPECT_EQ(zero.type_name(), "ZeroPad2d");
  EXPECT_EQ(zero.extra_repr(), "(1, 1, 1, 1)");
  EXPECT_EQ((PadNd<PadKind::Constant, 3>({1}, 2.5).extra_repr()),
            "padding=(1, 1, 1, 1, 1, 1), value=2.5");
  EXPECT_EQ((PadNd<PadKind::Replication, 3>({1}).type_name()), "ReplicationPad3d");
  expect_error([] { PadNd<PadKind::Zero, 2>({1, 2, 3}); }, {"[nn.ZeroPad2d]", "3 values"});
}

TEST(PReLU, LearnsOneSlopePerChannel) {
  PReLU p(2, 0.5);
  EXPECT_EQ(p.named_parameters().size(), 1u);
  EXPECT_EQ(values(p.weight), (std::vector<double>{0.5, 0.5}));
  const Tensor x = tensor({{-2.0, 4.0}, {6.0, -8.0}});
  const Tensor y = p(x);
  EXPECT_EQ(values(y), (std::vector<double>{-1, 4, 6, -4}));
  sum(y).backward();
  EXPECT_EQ(values(p.weight.grad()), (std::vector<double>{-2, -8}));
  EXPECT_EQ(p.extra_repr(), "num_parameters=2");
  expect_error([] { PReLU(0); }, {"[nn.PReLU]", "num_parameters"});
}

TEST(Linear, DefaultInitIsUniformWithBoundOneOverSqrtFanIn) {
  manual_seed(1);
  Linear fc(784, 100);
  EXPECT_EQ(fc.weight.sizes(), (Shape{100, 784}));
  EXPECT_EQ(fc.bias.sizes(), (Shape{100}));
  expect_uniform(fc.weight, 1.0 / std::sqrt(784.0));
  const Stats b = stats(fc.bias);
  EXPECT_LE(b.max, 1.0 / std::sqrt(784.0));
  EXPECT_GE(b.min, -1.0 / std::sqrt(784.0));
  EXPECT_EQ(fc.extra_repr(), "in_features=784, out_features=100, bias=true");
  expect_error([] { Linear(0, 3); }, {"[nn.Linear]", "in_features", "0"});
}

TEST(Linear, AppliesToBatchedAndUnbatchedInputs) {
  Linear fc(3, 2);
  const Tensor x = randn({4, 5, 3});
  const Tensor y = fc(x);
  EXPECT_EQ(y.sizes(), (Shape{4, 5, 2}));
  const auto yv = values(y), xv = values(x), w = values(fc.weight), b = values(fc.bias);
  for (int r = 0; r < 20; ++r) {
    for (int o = 0; o < 2; ++o) {
      double s = b[o];
      for (int i = 0; i < 3; ++i) s += xv[r * 3 + i] * w[o * 3 + i];
      EXPECT_NEAR(yv[r * 2 + o], s, 1e-5);
    }
  }
  EXPECT_EQ(fc(randn({3})).sizes(), (Shape{2}));
}

// Modules make their parameters and buffers with the factories (Note [The default device]), so
// set_default_device moves a model's construction as torch.set_default_device does.
TEST(DefaultDevice, ModulesAreBuiltOnIt) {
  ember::init();
  const int16_t id = find_device_type("reference");
  ASSERT_GE(id, 0) << "the reference backend is not loaded";
  const Device ref(id, 0);
  set_default_device(ref);
  struct Reset {
    ~Reset() { reset_default_device(); }
  } reset;
  manual_seed(2);
  Linear fc(2, 3);
  Conv2d conv(1, 2, {3, 3});
  BatchNorm2d bn(2);
  for (const auto& [name, t] : fc.named_parameters()) EXPECT_EQ(t.device(), ref) << name;
  for (const auto& [name, t] : conv.named_parameters()) EXPECT_EQ(t.device(), ref) << name;
  for (const auto& [name, t] : bn.named_parameters()) EXPECT_EQ(t.device(), ref) << name;
  for (const auto& [name, t] : bn.named_buffers()) EXPECT_EQ(t.device(), ref) << name;
  const Stats s = stats(conv.weight);  // initialised where it lives: U(-1/3, 1/3), fan-in 9
  EXPECT_GE(s.min, -1.0 / 3.0);
  EXPECT_LE(s.max, 1.0 / 3.0);
  EXPECT_GT(s.var, 0.0);
  // And the model runs there on tensors made there.
  const Tensor x = ones({4, 2});
  EXPECT_EQ(x.device(), ref);
  const Tensor y = fc(x);
  EXPECT_EQ(y.device(), ref);
  const auto w = values(fc.weight), b = values(fc.bias), yv = values(y);
  for (int o = 0; o < 3; ++o) EXPECT_NEAR(yv[o], w[o * 2] + w[o * 2 + 1] + b[o], 1e-6);
}

TEST(Conv2d, DefaultInitAndShapes) {
  manual_seed(2);
  Conv2d conv(16, 32, 3, {.stride = 2, .padding = 1});
  EXPECT_EQ(conv.weight.sizes(), (Shape{32, 16, 3, 3}));
  expect_uniform(conv.weight, 1.0 / std::sqrt(16.0 * 9));
  EXPECT_EQ(conv(randn({2, 16, 9, 9})).sizes(), (Shape{2, 32, 5, 5}));
  Conv2d grouped(8, 4, {3, 1}, {.groups = 4, .bias = false});
  EXPECT_EQ(grouped.weight.sizes(), (Shape{4, 2, 3, 1}));
  EXPECT_FALSE(grouped.bias.defined());
  EXPECT_EQ(grouped.parameters().size(), 1u);
  EXPECT_EQ(grouped.extra_repr(), "8, 4, kernel_size=(3, 1), stride=(1, 1), groups=4, bias=false");
  expect_error([] { Conv2d(6, 4, 3, {.groups = 4}); }, {"[nn.Conv2d]", "divisible by groups=4"});
}

TEST(ConvTranspose2d, WeightLayoutInitAndShapes) {
  manual_seed(3);
  ConvTranspose2d up(32, 16, 2, {.stride = 2});
  EXPECT_EQ(up.weight.sizes(), (Shape{32, 16, 2, 2}));
  expect_uniform(up.weight, 1.0 / std::sqrt(16.0 * 4));  // fan_in from weight.size(1)
  EXPECT_EQ(up(randn({1, 32, 7, 7})).sizes(), (Shape{1, 16, 14, 14}));
}

TEST(BatchNorm2d, TrainingUpdatesRunningStatsAndEvalUsesThem) {
  BatchNorm2d bn(2);
  EXPECT_EQ(values(bn.weight), (std::vector<double>{1, 1}));
  EXPECT_EQ(values(bn.bias), (std::vector<double>{0, 0}));
  bn.to(DType::Float64);  // a float32 layer refuses float64 input, as in PyTorch
  const Tensor x = randn({4, 2, 3, 3}, DType::Float64);
  const Tensor y = bn(x);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  const auto xv = values(x), yv = values(y), rm = values(bn.running_mean),
             rv = values(bn.running_var);
  for (int c = 0; c < 2; ++c) {
    double mean = 0, var = 0;
    std::vector<int> idx;
    for (int n = 0; n < 4; ++n) {
      for (int i = 0; i < 9; ++i) idx.push_back((n * 2 + c) * 9 + i);
    }
    for (int i : idx) mean += xv[i];
    mean /= 36;
    for (int i : idx) var += (xv[i] - mean) * (xv[i] - mean);
    EXPECT_NEAR(rm[c], 0.1 * mean, 1e-6);
    EXPECT_NEAR(rv[c], 0.9 + 0.1 * var / 35, 1e-6);  // unbiased variance in the running stat
    for (int i : idx) EXPECT_NEAR(yv[i], (xv[i] - mean) / std::sqrt(var / 36 + 1e-5), 1e-6);
  }
  bn.eval();
  const auto ev = values(bn(x));
  for (int c = 0; c < 2; ++c) {
    for (int n = 0; n < 4; ++n) {
      const int i = (n * 2 + c) * 9;
      EXPECT_NEAR(ev[i], (xv[i] - rm[c]) / std::sqrt(rv[c] + 1e-5), 1e-6);
    }
  }
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  expect_error([&] { bn(randn({2, 2})); }, {"[nn.BatchNorm2d]", "4-d", "[2, 2]"});
  EXPECT_EQ(bn.state_dict().size(), 5u);
}

TEST(BatchNorm1d, AcceptsTwoAndThreeDims) {
  BatchNorm1d bn(3, {.affine = false});
  EXPECT_EQ(bn.parameters().size(), 0u);
  EXPECT_EQ(bn(randn({4, 3})).sizes(), (Shape{4, 3}));
  EXPECT_EQ(bn(randn({4, 3, 5})).sizes(), (Shape{4, 3, 5}));
}

TEST(LayerNormAndGroupNorm, NormaliseAndHaveAffineParameters) {
  LayerNorm ln({4});
  ln.to(DType::Float64);  // a float32 layer refuses float64 input, as in PyTorch
  const Tensor x = randn({2, 4}, DType::Float64);
  const auto y = values(ln(x));
  const auto xv = values(x);
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < 4; ++i) mean += xv[r * 4 + i] / 4;
    for (int i = 0; i < 4; ++i) var += (xv[r * 4 + i] - mean) * (xv[r * 4 + i] - mean) / 4;
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(y[r * 4 + i], (xv[r * 4 + i] - mean) / std::sqrt(var + 1e-5), 1e-6);
    }
  }
  GroupNorm gn(2, 4);
  EXPECT_EQ(gn(randn({3, 4, 5, 5})).sizes(), (Shape{3, 4, 5, 5}));
  EXPECT_EQ(gn.weight.sizes(), (Shape{4}));
  expect_error([] { GroupNorm(3, 4); }, {"[nn.GroupNorm]", "num_channels=4", "num_groups=3"});
}

TEST(Dropout, ZeroesInTrainingAndIsIdentityInEval) {
  Dropout d(0.5);
  const Tensor x = ones({1000});
  const auto y = values(d(x));
  const auto zeros_n = std::count(y.begin(), y.end(), 0.0);
  EXPECT_GT(zeros_n, 400);
  EXPECT_LT(zeros_n, 600);
  for (double v : y) EXPECT_TRUE(v == 0.0 || v == 2.0);
  d.eval();
  EXPECT_EQ(values(d(x)), values(x));
  expect_error([] { Dropout(1.5); }, {"[nn.Dropout]", "1.5"});
}

TEST(Embedding, LooksUpRowsAndZeroesThePaddingRow) {
  manual_seed(4);
  Embedding emb(100, 64, /*padding_idx=*/0);
  const Stats s = stats(emb.weight.slice(0, 1, 100));
  EXPECT_NEAR(s.mean, 0.0, 0.05);
  EXPECT_NEAR(s.var, 1.0, 0.1);
  for (double v : values(emb.weight.select(0, 0))) EXPECT_EQ(v, 0.0);
  const Tensor idx = tensor({{3, 0}, {7, 3}});
  const Tensor y = emb(idx);
  EXPECT_EQ(y.sizes(), (Shape{2, 2, 64}));
  EXPECT_EQ(values(y.select(0, 1).select(0, 0)), values(emb.weight.select(0, 7)));
}

TEST(Pooling, ModulesForwardTheirOptions) {
  const Tensor x = randn({1, 2, 8, 8});
  EXPECT_EQ(MaxPool2d(2)(x).sizes(), (Shape{1, 2, 4, 4}));
  EXPECT_EQ(MaxPool2d(3, {.stride = 2, .padding = 1})(x).sizes(), (Shape{1, 2, 4, 4}));
  EXPECT_EQ(AvgPool2d(2)(x).sizes(), (Shape{1, 2, 4, 4}));
  EXPECT_EQ(AdaptiveAvgPool2d(1)(x).sizes(), (Shape{1, 2, 1, 1}));
  const auto pooled = values(AdaptiveAvgPool2d(1)(x)), means = values(mean(x, {2, 3}, true));
  for (size_t i = 0; i < pooled.size(); ++i) EXPECT_NEAR(pooled[i], means[i], 1e-6);
  EXPECT_EQ(Flatten()(x).sizes(), (Shape{1, 128}));
}

TEST(Activations, MatchTheirOps) {
  const Tensor x = randn({10});
  EXPECT_EQ(values(ReLU()(x)), values(relu(x)));
  EXPECT_EQ(values(GELU("tanh")(x)), values(gelu(x, "tanh")));
  EXPECT_EQ(values(SiLU()(x)), values(silu(x)));
  EXPECT_EQ(values(Sigmoid()(x)), values(sigmoid(x)));
  EXPECT_EQ(values(Tanh()(x)), values(tanh(x)));
  EXPECT_EQ(values(Softmax(0)(x)), values(softmax(x, 0)));
  expect_error([] { GELU("fast"); }, {"[nn.GELU]", "'fast'"});
}

TEST(Losses, ModulesCallTheirOps) {
  const Tensor logits = randn({4, 3});
  const Tensor target = tensor({0, 2, 1, 2});
  EXPECT_EQ(CrossEntropyLoss()(logits, target).item(), cross_entropy(logits, target).item());
  EXPECT_EQ(CrossEntropyLoss({}, -100, Reduction::Mean, 0.1)(logits, target).item(),
            cross_entropy(logits, target, {}, -100, Reduction::Mean, 0.1).item());
  EXPECT_EQ(NLLLoss()(log_softmax(logits, 1), target).item(), cross_entropy(logits, target).item());
  const Tensor a = randn({5}), b = randn({5});
  EXPECT_NEAR(MSELoss()(a, b).item(), mean(square(a - b)).item(), 1e-6);
  EXPECT_NEAR(L1Loss(Reduction::Sum)(a, b).item(), sum(abs(a - b)).item(), 1e-5);
  EXPECT_EQ(BCEWithLogitsLoss()(a, sigmoid(b)).item(),
            binary_cross_entropy_with_logits(a, sigmoid(b)).item());
}

TEST(Conv1d, LayoutInitAndForward) {
  Conv1d conv(4, 6, 3, {.stride = 2, .padding = 1, .groups = 2});
  EXPECT_EQ(conv.weight.sizes(), (Shape{6, 2, 3}));
  EXPECT_EQ(conv.bias.sizes(), (Shape{6}));
  expect_uniform(Conv1d(64, 32, 5, {.groups = 2}).weight, 1 / std::sqrt(32.0 * 5));  // fan_in
  const auto sd = conv.state_dict();
  EXPECT_EQ(sd.size(), 2u);
  const Tensor x = randn({2, 4, 9});
  EXPECT_EQ(values(conv(x)), values(conv1d(x, conv.weight, conv.bias, 2, 1, 1, 2)));
  EXPECT_EQ(conv(x).sizes(), (Shape{2, 6, 5}));
  EXPECT_EQ(conv.extra_repr(), "4, 6, kernel_size=(3,), stride=(2,), padding=(1,), groups=2");
  expect_error([] { Conv1d(3, 4, 3, {.groups = 2}); }, {"[nn.Conv1d]", "groups=2"});
}

// Note [Padding in convolution layers]: x = [1, 2, 3, 4] through a kernel of ones, each padding
// mode by hand; 'same' with a span of 3 puts one element before and two after.
TEST(Conv1d, PaddingModesAndSameByHand) {
  const Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, DType::Float64).reshape({1, 1, 4});
  auto run = [&](int64_t k, Conv1dOptions o) {
    o.bias = false;
    Conv1d conv(1, 1, k, o);
    conv.to(DType::Float64);
    {
      autograd::NoGradGuard no_grad;
      conv.weight.fill_(1.0);
    }
    return values(conv(x));
  };
  using V = std::vector<double>;
  EXPECT_EQ(run(3, {.padding = 1}), (V{3, 6, 9, 7}));  // 0 1 2 3 4 0
  EXPECT_EQ(run(3, {.padding = 1, .padding_mode = PadKind::Reflection}),
            (V{5, 6, 9, 10}));  // 2 1 2 3 4 3
  EXPECT_EQ(run(3, {.padding = 1, .padding_mode = PadKind::Replication}),
            (V{4, 6, 9, 11}));  // 1 1 2 3 4 4
  EXPECT_EQ(run(3, {.padding = 1, .padding_mode = PadKind::Circular}),
            (V{7, 6, 9, 8}));                                                 // 4 1 2 3 4 1
  EXPECT_EQ(run(4, {.named_padding = ConvPadding::Same}), (V{6, 10, 9, 7}));  // 0 1 2 3 4 0 0
  EXPECT_EQ(run(4, {.named_padding = ConvPadding::Same, .padding_mode = PadKind::Reflection}),
            (V{8, 10, 12, 12}));  // 2 1 2 3 4 3 2
  EXPECT_EQ(run(2, {.padding = 3, .named_padding = ConvPadding::Valid}), (V{3, 5, 7}));
  EXPECT_EQ(Conv1d(1, 1, 4, {.named_padding = ConvPadding::Same, .padding_mode = PadKind::Circular})
                .extra_repr(),
            "1, 1, kernel_size=(4,), stride=(1,), padding=same, padding_mode=circular");
  expect_error([] { Conv1d(1, 1, 3, {.stride = 2, .named_padding = ConvPadding::Same}); },
               {"[Conv1d]", "padding='same'", "strided"});
  expect_error([] { Conv1d(1, 1, 3, {.padding_mode = PadKind::Constant}); },
               {"[nn.Conv1d]", "padding_mode must be", "constant"});
  expect_error([] { ConvTranspose2d(1, 1, 3, {.padding_mode = PadKind::Reflection}); },
               {"[nn.ConvTranspose2d]", "zeros", "reflect"});
}

// Conv2d and Conv3d pad through the same function: a reflect-padded layer is pad() then an
// unpadded convolution, 'same' keeps every size, and the reprs show both as PyTorch's do.
TEST(Conv2d, PaddingModeAndSameOverEveryDim) {
  const Tensor x = randn({2, 3, 6, 5}, TensorOptions(DType::Float64));
  Conv2d conv(3, 4, {3, 2}, {.padding = {1, 2}, .padding_mode = PadKind::Reflection});
  conv.to(DType::Float64);
  EXPECT_EQ(values(conv(x)),
            values(conv2d(pad(x, {2, 2, 1, 1}, "reflect"), conv.weight, conv.bias)));
  EXPECT_EQ(conv.extra_repr(),
            "3, 4, kernel_size=(3, 2), stride=(1, 1), padding=(1, 2), padding_mode=reflect");
  Conv3d same(3, 2, {2, 3, 4}, {.dilation = {1, 2, 1}, .named_padding = ConvPadding::Same});
  EXPECT_EQ(same(randn({1, 3, 5, 6, 7})).sizes(), (Shape{1, 2, 5, 6, 7}));
  EXPECT_EQ(same.extra_repr(),
            "3, 2, kernel_size=(2, 3, 4), stride=(1, 1, 1), padding=same, dilation=(1, 2, 1)");
}

TEST(BatchNorm2d, MomentumNoneKeepsTheCumulativeAverage) {
  BatchNorm2d bn(1, {.momentum = std::nullopt});
  const Tensor a = full({2, 1, 2, 2}, 3.0), b = full({2, 1, 2, 2}, 5.0),
               c = full({2, 1, 2, 2}, 10.0);
  bn(a);
  EXPECT_EQ(values(bn.running_mean)[0], 3.0);  // the first batch replaces the initial 0
  bn(b);
  EXPECT_EQ(values(bn.running_mean)[0], 4.0);
  bn(c);
  EXPECT_NEAR(values(bn.running_mean)[0], 6.0, 1e-6);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 3);
  EXPECT_NE(bn.extra_repr().find("momentum=None"), std::string::npos);
}

TEST(Embedding, MaxNormRescalesTheRowsLookedUp) {
  Embedding emb(4, 2, {}, /*max_norm=*/1.0);
  {
    autograd::NoGradGuard no_grad;
    emb.weight.copy_(tensor({{3.0f, 4.0f}, {0.3f, 0.4f}, {6.0f, 8.0f}, {0.0f, 2.0f}}));
  }
  const Tensor y = emb(tensor({0, 1, 0}));
  // Row 0 (norm 5) is scaled by 1 / (5 + 1e-7), row 1 (norm 0.5) is kept; rows 2 and 3 were
  // not looked up and keep their norms.
  const auto w = values(emb.weight);
  EXPECT_NEAR(w[0], 0.6, 1e-6);
  EXPECT_NEAR(w[1], 0.8, 1e-6);
  EXPECT_NEAR(w[2], 0.3, 1e-7);
  EXPECT_EQ(w[4], 6.0);
  EXPECT_EQ(w[7], 2.0);
  EXPECT_EQ(values(y.select(0, 2)), values(emb.weight.select(0, 0)));
  Embedding l1(2, 2, {}, 1.0, /*norm_type=*/1.0);
  {
    autograd::NoGradGuard no_grad;
    l1.weight.copy_(tensor({{1.0f, 3.0f}, {0.5f, 0.25f}}));
  }
  l1(tensor({0, 1}));
  EXPECT_NEAR(values(l1.weight)[1], 0.75, 1e-6);  // L1 norm 4
  EXPECT_EQ(values(l1.weight)[3], 0.25f);
}

TEST(Pooling, AvgPool2dDivisorOverride) {
  const Tensor x = ones({1, 1, 4, 4});
  AvgPool2d pool(2, {.divisor_override = 2});
  EXPECT_EQ(values(pool(x)), (std::vector<double>(4, 2.0)));
}

TEST(Activations, InplaceWritesTheResultIntoTheInputItself) {
  const std::vector<std::pair<std::shared_ptr<Module>, std::shared_ptr<Module>>> pairs = {
      {std::make_shared<ReLU>(), std::make_shared<ReLU>(true)},
      {std::make_shared<LeakyReLU>(0.2), std::make_shared<LeakyReLU>(0.2, true)},
      {std::make_shared<ELU>(0.5), std::make_shared<ELU>(0.5, true)},
      {std::make_shared<CELU>(0.5), std::make_shared<CELU>(0.5, true)},
      {std::make_shared<Hardtanh>(-0.5, 0.5), std::make_shared<Hardtanh>(-0.5, 0.5, true)},
      {std::make_shared<SiLU>(), std::make_shared<SiLU>(true)},
      {std::make_shared<SELU>(), std::make_shared<SELU>(true)},
      {std::make_shared<ReLU6>(), std::make_shared<ReLU6>(true)},
      {std::make_shared<Mish>(), std::make_shared<Mish>(true)},
  };
  for (const auto& [plain, inplace] : pairs) {
    const Tensor x = testing::make({-1.5, -0.25, 0.5, 7.0}, {4}, DType::Float32);
    const Tensor want = (*plain)(x);
    EXPECT_NE(testing::values(want), testing::values(x)) << plain->type_name();
    const Tensor got = (*inplace)(x);
    EXPECT_TRUE(got.is_same(x)) << inplace->type_name();
    EXPECT_EQ(testing::values(x), testing::values(want)) << inplace->type_name();
    EXPECT_NE(inplace->repr().find("inplace=True"), std::string::npos) << inplace->repr();
    EXPECT_EQ(plain->repr().find("inplace"), std::string::npos) << plain->repr();
  }
  // Recorded by autograd as an in-place op; a leaf that requires grad is refused.
  const Tensor w = testing::make({-1.0, 2.0}, {2}, DType::Float64).requires_grad_();
  ReLU relu(true);
  expect_error([&] { relu(w); }, {"[relu_] a leaf tensor that requires grad"});
  Tensor h = mul(w, 3.0);
  sum(relu(h)).backward();
  EXPECT_EQ(testing::values(w.grad()), (std::vector<double>{0, 3}));
}

TEST(Activations, NewModulesMatchTheirOps) {
  const Tensor x = randn({10});
  EXPECT_EQ(values(LeakyReLU(0.2)(x)), values(leaky_relu(x, 0.2)));
  EXPECT_EQ(values(ELU(0.5)(x)), values(elu(x, 0.5)));
  EXPECT_EQ(values(SELU()(x)), values(selu(x)));
  EXPECT_EQ(values(CELU(2.0)(x)), values(celu(x, 2.0)));
  EXPECT_EQ(values(Hardtanh(-0.5, 0.5)(x)), values(hardtanh(x, -0.5, 0.5)));
  EXPECT_EQ(values(ReLU6()(mul(x, 10.0))), values(relu6(mul(x, 10.0))));
  EXPECT_EQ(values(LogSigmoid()(x)), values(logsigmoid(x)));
  EXPECT_EQ(values(Mish()(x)), values(mish(x)));
  EXPECT_EQ(values(Softplus(2.0, 10.0)(x)), values(softplus(x, 2.0, 10.0)));
  EXPECT_EQ(LeakyReLU(0.2).extra_repr(), "negative_slope=0.2");
}

TEST(Losses, NewModulesCallTheirOps) {
  const Tensor a = randn({5}), b = randn({5});
  EXPECT_EQ(HuberLoss(Reduction::Sum, 0.5)(a, b).item(),
            huber_loss(a, b, Reduction::Sum, 0.5).item());
  EXPECT_EQ(SmoothL1Loss(Reduction::Mean, 0.5)(a, b).item(),
            smooth_l1_loss(a, b, Reduction::Mean, 0.5).item());
  const Tensor logp = log_softmax(randn({3, 4}), 1), p = softmax(randn({3, 4}), 1);
  EXPECT_EQ(KLDivLoss(Reduction::BatchMean)(logp, p).item(),
            kl_div(logp, p, Reduction::BatchMean).item());
}

TEST(Init, OrthogonalGivesOrthonormalRowsOrColumnsTimesTheGain) {
  // [6, 4]: orthonormal columns; [3, 2, 4] is a 3 x 8 matrix: orthonormal rows.
  for (const Shape& shape : {Shape({6, 4}), Shape({3, 2, 4})}) {
    Tensor w = empty(shape);
    nn::init::orthogonal_(w, 2.0);
    const Tensor m = w.reshape({shape[0], -1}).to(DType::Float64);
    const Tensor gram = shape[0] > m.size(1) ? matmul(m.t(), m) : matmul(m, m.t());
    const int64_t n = gram.size(0);
    const std::vector<double> g = values(gram);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        EXPECT_NEAR(g[static_cast<size_t>(i * n + j)], i == j ? 4.0 : 0.0, 1e-5) << i << "," << j;
      }
    }
  }
  Generator a(3), b(3);
  Tensor x = empty({5, 5}), y = empty({5, 5});
  nn::init::orthogonal_(x, 1.0, &a);
  nn::init::orthogonal_(y, 1.0, &b);
  EXPECT_EQ(values(x), values(y));  // seeded: reproducible
  Tensor v = empty({4});
  expect_error([&] { nn::init::orthogonal_(v); }, {"only tensors with 2 or more dimensions"});
}

TEST(Init, GainsAndFansFollowPyTorch) {
  EXPECT_DOUBLE_EQ(init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain("tanh"), 5.0 / 3);
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));
  const Tensor w = empty({8, 4, 3, 3});
  EXPECT_EQ(init::calculate_fan_in_and_fan_out(w), (std::pair<int64_t, int64_t>{36, 72}));
  expect_error([] { init::calculate_gain("swish"); }, {"[nn.init]", "'swish'"});
  Tensor big = empty({256, 512});
  init::kaiming_normal_(big, 0.0, init::FanMode::FanIn, "relu");
  EXPECT_NEAR(stats(big).var, 2.0 / 512, 0.05 * 2.0 / 512);
  init::xavier_uniform_(big);
  expect_uniform(big, std::sqrt(6.0 / (256 + 512)));
  init::zeros_(big);
  EXPECT_EQ(stats(big).max, 0.0);
}

TEST(UnfoldAndFold, ModulesForwardTheirSizes) {
  const Tensor x = randn({2, 3, 5, 4});
  Unfold unfold_layer({2, 3}, 1, {1, 0}, 2);
  const Tensor cols = unfold_layer(x);
  EXPECT_EQ(values(cols), values(unfold(x, {2, 3}, {1}, {1, 0}, {2})));
  EXPECT_EQ(cols.sizes(), (Shape{2, 18, 3 * 1}));
  EXPECT_EQ(unfold_layer.extra_repr(), "kernel_size=(2, 3), dilation=1, padding=(1, 0), stride=2");
  Fold fold_layer({5, 4}, {2, 3}, 1, {1, 0}, 2);
  EXPECT_EQ(values(fold_layer(cols)), values(fold(cols, {5, 4}, {2, 3}, {1}, {1, 0}, {2})));
  EXPECT_EQ(fold_layer(cols).sizes(), x.sizes());
}

TEST(Conv3d, LayoutInitAndForward) {
  Conv3d conv(4, 6, {3, 2, 2}, {.stride = {2, 1, 1}, .padding = 1, .groups = 2});
  EXPECT_EQ(conv.weight.sizes(), (Shape{6, 2, 3, 2, 2}));
  EXPECT_EQ(conv.bias.sizes(), (Shape{6}));
  expect_uniform(Conv3d(8, 4, 3, {.groups = 2}).weight, 1 / std::sqrt(4.0 * 27));  // fan_in
  const Tensor x = randn({2, 4, 5, 4, 4});
  EXPECT_EQ(values(conv(x)), values(conv3d(x, conv.weight, conv.bias, {2, 1, 1}, {1}, {1}, 2)));
  EXPECT_EQ(conv(x).sizes(), (Shape{2, 6, 3, 5, 5}));
  EXPECT_EQ(conv.extra_repr(),
            "4, 6, kernel_size=(3, 2, 2), stride=(2, 1, 1), padding=(1, 1, 1), groups=2");
  EXPECT_FALSE(Conv3d(2, 2, 1, {.bias = false}).bias.defined());
  expect_error([] { Conv3d(3, 4, 3, {.groups = 2}); }, {"[nn.Conv3d]", "groups=2"});
  expect_error([] { Conv3d(2, 4, {0, 3, 3}); }, {"[nn.Conv3d]", "kernel_size"});
}

TEST(Pooling, ThreeDimModulesForwardTheirOptions) {
  const Tensor x = randn({1, 2, 6, 8, 8});
  EXPECT_EQ(MaxPool3d(2)(x).sizes(), (Shape{1, 2, 3, 4, 4}));
  EXPECT_EQ(values(MaxPool3d({3, 3, 2}, {.stride = 2, .padding = 1})(x)),
            values(max_pool3d(x, {3, 3, 2}, {2}, {1})));
  EXPECT_EQ(values(AvgPool3d(2, {.ceil_mode = true, .divisor_override = 3})(x)),
            values(avg_pool3d(x, {2}, {}, {0}, true, true, 3)));
  EXPECT_EQ(values(AdaptiveAvgPool3d({1, 2, 3})(x)), values(adaptive_avg_pool3d(x, {1, 2, 3})));
  EXPECT_EQ(values(AdaptiveMaxPool3d(2)(x)), values(adaptive_max_pool3d(x, {2})));
  EXPECT_EQ(MaxPool3d(2).extra_repr(),
            "kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=false");
  EXPECT_EQ(AdaptiveAvgPool3d({1, 2, 3}).extra_repr(), "output_size=(1, 2, 3)");
}

TEST(Pooling, AdaptiveSizesKeepTheInputSizeWhereAnEntryIsEmpty) {
  const Tensor x = randn({1, 2, 6, 8});
  AdaptiveAvgPool2d keep_w({3, std::nullopt});
  EXPECT_EQ(values(keep_w(x)), values(adaptive_avg_pool2d(x, {3, 8})));
  EXPECT_EQ(keep_w(x).sizes(), (Shape{1, 2, 3, 8}));
  EXPECT_EQ(keep_w.extra_repr(), "output_size=(3, None)");
  AdaptiveMaxPool2d keep_h({std::nullopt, 2});
  EXPECT_EQ(values(keep_h(x)), values(adaptive_max_pool2d(x, {6, 2})));
  EXPECT_EQ(values(std::get<1>(keep_h.forward_with_indices(x))),
            values(std::get<1>(adaptive_max_pool2d_with_indices(x, {6, 2}))));
  const Tensor v = randn({2, 4, 6, 8});
  AdaptiveAvgPool3d keep({std::nullopt, 2, std::nullopt});
  EXPECT_EQ(values(keep(v)), values(adaptive_avg_pool3d(v, {4, 2, 8})));
  EXPECT_EQ(keep.extra_repr(), "output_size=(None, 2, None)");
  EXPECT_EQ(AdaptiveAvgPool2d(1).extra_repr(), "output_size=1");
  expect_error(
      [] {
        AdaptiveAvgPool2d({std::nullopt, 2})(randn({5}));
      },
      {"[nn.AdaptiveAvgPool2d]", "(None, 2)", "fewer than 2 dims"});
}

TEST(LazyLayers, ReadTheInputSizeFromTheFirstInputAndKeepTheirParameterTensors) {
  manual_seed(3);
  Linear lazy(kLazy, 4);
  EXPECT_EQ(lazy.type_name(), "LazyLinear");
  EXPECT_EQ(lazy.extra_repr(), "in_features=0, out_features=4, bias=true");
  EXPECT_EQ(lazy.weight.sizes(), (Shape{4, 0}));
  const Tensor weight = lazy.weight;  // a handle: the same tensor once it is sized
  const Tensor x = randn({2, 5, 3});
  const Tensor y = lazy(x);
  EXPECT_EQ(lazy.in_features, 3);
  EXPECT_EQ(lazy.type_name(), "Linear");
  EXPECT_EQ(weight.sizes(), (Shape{4, 3}));
  EXPECT_EQ(weight.impl(), lazy.weight.impl());
  EXPECT_TRUE(weight.requires_grad());
  EXPECT_EQ(values(y), values(linear(x, lazy.weight, lazy.bias)));
  const Stats w = stats(weight), b = stats(lazy.bias);  // PyTorch's bound 1/sqrt(in_features)
  EXPECT_LE(std::max(-w.min, w.max), 1 / std::sqrt(3.0));
  EXPECT_GT(w.max - w.min, 0.1);
  EXPECT_LE(std::max(-b.min, b.max), 1 / std::sqrt(3.0));
  EXPECT_EQ(values(lazy(x)), values(y));  // sized once

  Conv2d conv(kLazy, 8, 3, {.groups = 2});
  EXPECT_EQ(conv.extra_repr(), "0, 8, kernel_size=(3, 3), stride=(1, 1), groups=2");
  EXPECT_EQ(conv(randn({1, 4, 5, 5})).sizes(), (Shape{1, 8, 3, 3}));
  EXPECT_EQ(conv.in_channels, 4);
  EXPECT_EQ(conv.weight.sizes(), (Shape{8, 2, 3, 3}));
  Conv1d conv1(kLazy, 2, 3);
  EXPECT_EQ(conv1(randn({3, 7})).sizes(), (Shape{2, 5}));  // unbatched [C, L]
  EXPECT_EQ(conv1.in_channels, 3);
  Conv3d conv3(kLazy, 2, 1);
  EXPECT_EQ(conv3(randn({1, 5, 2, 2, 2})).sizes(), (Shape{1, 2, 2, 2, 2}));
  EXPECT_EQ(conv3.weight.sizes(), (Shape{2, 5, 1, 1, 1}));
  expect_error(
      [] {
        Conv2d(kLazy, 4, 3, {.groups = 2})(randn({1, 3, 5, 5}));
      },
      {"[nn.LazyConv2d]", "divisible by groups=2", "got 3"});
  expect_error([] { Conv2d(kLazy, 4, 3)(randn({5, 5})); }, {"[nn.LazyConv2d]", "at least 3 dims"});
}

TEST(EmbeddingBag, ReducesBagsWithItsModeAndZeroesThePaddingRow) {
  manual_seed(5);
  EmbeddingBag bag(20, 8, {}, 2.0, "sum", false, /*padding_idx=*/-1);
  EXPECT_EQ(bag.padding_idx, 19);
  for (double v : values(bag.weight.select(0, 19))) EXPECT_EQ(v, 0.0);
  const Tensor idx = tensor({3, 7, 19, 3}), off = tensor({0, 2});
  EXPECT_EQ(values(bag(idx, off)),
            values(embedding_bag(bag.weight, idx, off, "sum", {}, false, 19)));
  EXPECT_EQ(bag(tensor({{1, 2, 3}})).sizes(), (Shape{1, 8}));
  EXPECT_EQ(bag.extra_repr(), "20, 8, mode='sum', padding_idx=19");
  expect_error([] { EmbeddingBag(4, 2, {}, 2.0, "min"); }, {"[nn.EmbeddingBag]", "'min'"});
  expect_error([] { EmbeddingBag(4, 2, {}, 2.0, "sum", false, 4); },
               {"[nn.EmbeddingBag]", "padding_idx=4"});
}

TEST(LocalResponseNormAndGaussianNllLoss, ModulesCallTheirOps) {
  const Tensor x = randn({2, 5, 3, 3});
  EXPECT_EQ(values(LocalResponseNorm(3, 0.1, 0.5, 2.0)(x)),
            values(local_response_norm(x, 3, 0.1, 0.5, 2.0)));
  EXPECT_EQ(LocalResponseNorm(2).extra_repr(), "2, alpha=0.0001, beta=0.75, k=1");
  const Tensor a = randn({4, 3}), b = randn({4, 3}), v = rand({4, 1});
  EXPECT_EQ(GaussianNLLLoss(true, 1e-3, Reduction::Sum)(a, b, v).item(),
            gaussian_nll_loss(a, b, v, true, 1e-3, Reduction::Sum).item());
}

TEST(CTCLoss, CallsItsOpWithBlankAndZeroInfinity) {
  const Tensor lp = log_softmax(randn({5, 2, 4}), 2), tg = tensor({{1, 2}, {3, 3}});
  const CTCLoss m(3, Reduction::None, true);
  EXPECT_EQ(m.blank, 3);
  EXPECT_TRUE(m.zero_infinity);
  // The list-length overload gives the op's values.
  EXPECT_EQ(values(CTCLoss(3, Reduction::None)(lp, tg, {5, 4}, {2, 1})),
            values(ctc_loss(lp, tg, {5, 4}, {2, 1}, 3, Reduction::None)));
  // The tensor-length overload, and zero_infinity for a target longer than its input.
  const std::vector<double> got =
      values(CTCLoss(0, Reduction::None, true)(lp, tg, tensor({1, 5}), tensor({2, 2})));
  EXPECT_EQ(got[0], 0.0);
  EXPECT_EQ(got[1], values(ctc_loss(lp, tg, {1, 5}, {2, 2}, 0, Reduction::None))[1]);
  EXPECT_EQ(values(CTCLoss()(lp, tg, {5, 5}, {2, 2}))[0],
            values(ctc_loss(lp, tg, {5, 5}, {2, 2}))[0]);
}

}  // namespace
}  // namespace ember::nn
