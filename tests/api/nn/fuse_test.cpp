// nn::fuse_for_inference: batch norms folded into the convolution or linear layer before them,
// ReLU modules merged into the convolution before them (conv2d_relu), ReLU and GELU modules and
// Transformer layers' feed-forward activations into the Linear before them (fused_linear), and
// ResNet blocks ending in one conv2d_add_relu, on every model in models::
// (row-major and channels-last, float32 and bf16 autocast), against the unfused model's output; the
// pairs it must not fold, and the refusals.
#include <gtest/gtest.h>

#include <ember/ember.h>
#include <ember/models.h>
#include <ember/nn.h>

#include <map>
#include <string>

#include "tests/testing/tensor_helpers.h"

namespace ember::nn {
namespace {

using ember::testing::expect_error;

// Running statistics and affine parameters far from their initial values, so that folding
// changes every weight.
void randomise_batch_norms(Module& model) {
  autograd::NoGradGuard no_grad;
  for (const auto& [name, m] : model.named_modules()) {
    auto* bn = dynamic_cast<BatchNorm*>(m.get());
    if (!bn) continue;
    const int64_t c = bn->num_features;
    bn->running_mean.copy_(mul(randn({c}), 0.3));
    bn->running_var.copy_(add(rand({c}), 0.5));
    if (bn->weight.defined()) bn->weight.copy_(add(mul(randn({c}), 0.2), 1.0));
    if (bn->bias.defined()) bn->bias.copy_(mul(randn({c}), 0.1));
  }
}

int64_t count_batch_norms(Module& model) {
  int64_t n = 0;
  for (const auto& [name, m] : model.named_modules())
    n += dynamic_cast<BatchNorm*>(m.get()) != nullptr;
  return n;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return max(abs(sub(a.to(DType::Float64), b.to(DType::Float64)))).item();
}

double max_abs(const Tensor& a) {
  return max(abs(a.to(DType::Float64))).item();
}

// The ReLU modules that read a convolution's output (through a batch norm or not), per model.
int64_t expected_relus(const std::string& model) {
  if (model == "lenet" || model == "cnn") return 2;
  if (model == "resnet18") return 1 + 8;       // the stem's, and relu1 of each basic block
  if (model == "resnet50") return 1 + 2 * 16;  // the stem's, relu1 and relu2 of each bottleneck
  return 0;                                    // mlp (linear layers), vit (GELU)
}

// The activations that read a Linear's output, per model (the ViT's: one per encoder layer).
int64_t expected_linear_activations(const std::string& model) {
  if (model == "lenet" || model == "mlp") return 2;
  if (model == "cnn") return 1;
  if (model == "vit") return models::ViTOptions{}.depth;
  return 0;
}

// The residual blocks that end in one conv2d_add_relu, per model.
int64_t expected_residuals(const std::string& model) {
  if (model == "resnet18") return 8;
  if (model == "resnet50") return 16;
  return 0;
}

class FuseEveryModel : public ::testing::TestWithParam<const char*> {};

TEST_P(FuseEveryModel, OutputsEqualTheUnfusedModel) {
  manual_seed(7);
  const std::shared_ptr<Module> fused = models::by_name(GetParam());
  const std::shared_ptr<Module> plain = models::by_name(GetParam());
  randomise_batch_norms(*fused);
  plain->load_state_dict(fused->state_dict());
  plain->eval();
  const Tensor x = randn({4, 1, 28, 28});
  autograd::NoGradGuard no_grad;
  const Tensor expected = (*plain)(x);

  const FuseReport report = fuse_for_inference(*fused, x);
  // Every batch norm in these models follows a convolution (or a linear layer) directly.
  EXPECT_EQ(static_cast<int64_t>(report.folded.size()), count_batch_norms(*fused));
  for (const auto& [layer, bn] : report.folded) EXPECT_NE(layer, bn);
  EXPECT_EQ(static_cast<int64_t>(report.relus.size()), expected_relus(GetParam()));
  std::map<std::string, std::shared_ptr<Module>> modules;
  for (const auto& [name, m] : fused->named_modules()) modules[name] = m;
  for (const auto& [conv, relu] : report.relus) {
    EXPECT_TRUE(std::dynamic_pointer_cast<Conv2d>(modules.at(conv))->fused_relu()) << conv;
    EXPECT_TRUE(std::dynamic_pointer_cast<ReLU>(modules.at(relu))->folded()) << relu;
  }
  EXPECT_EQ(static_cast<int64_t>(report.activations.size()),
            expected_linear_activations(GetParam()));
  for (const auto& [linear, act] : report.activations) {
    EXPECT_NE(std::dynamic_pointer_cast<Linear>(modules.at(linear))->fused_activation(),
              Activation::None)
        << linear;
    EXPECT_TRUE(modules.count(act)) << act;
  }
  EXPECT_EQ(static_cast<int64_t>(report.residuals.size()), expected_residuals(GetParam()));
  for (const auto& [conv, block] : report.residuals) {
    EXPECT_TRUE(std::dynamic_pointer_cast<Conv2d>(modules.at(conv))) << conv;
    EXPECT_EQ(conv.rfind(block + ".", 0), 0u) << conv << " in " << block;
  }
  const double tol = 1e-4 * std::max(1.0, max_abs(expected));
  EXPECT_LE(max_abs_diff((*fused)(x), expected), tol) << GetParam();
  // Another batch than the example, and channels-last.
  const Tensor x2 = randn({3, 1, 28, 28});
  EXPECT_LE(max_abs_diff((*fused)(x2), (*plain)(x2)), tol);
  const Tensor x_cl = x2.contiguous(MemoryFormat::ChannelsLast);
  EXPECT_LE(max_abs_diff((*fused)(x_cl), (*plain)(x_cl)), tol);
  {
    amp::autocast bf16("cpu", DType::BFloat16);
    const Tensor a = (*fused)(x2), b = (*plain)(x2);
    EXPECT_LE(max_abs_diff(a, b), 0.05 * std::max(1.0, max_abs(b))) << "bf16 autocast";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, FuseEveryModel,
                         ::testing::Values("lenet", "cnn", "mlp", "resnet18", "resnet50", "vit"),
                         [](const auto& info) { return std::string(info.param); });

// A block ends fused only once its batch norm is folded, and switches back on request; the
// fused end equals the written one, with and without a projection on the shortcut.
TEST(Fuse, AResidualBlockEndsFusedOnlyWithItsBatchNormFolded) {
  manual_seed(11);
  for (const int64_t stride : {1, 2}) {
    auto block = std::make_shared<models::BasicBlock>(8, 8 * stride, stride);
    randomise_batch_norms(*block);
    block->eval();
    EXPECT_EQ(block->fuse_residual_tail(true), "") << "bn2 is not folded yet";
    const Tensor x = randn({2, 8, 6, 6});
    autograd::NoGradGuard no_grad;
    const Tensor before = (*block)(x);
    const FuseReport report = fuse_for_inference(*block, x);
    ASSERT_EQ(report.residuals.size(), 1u);
    EXPECT_EQ(report.residuals[0], std::make_pair(std::string("conv2"), std::string("")));
    const Tensor fused = (*block)(x);
    EXPECT_LE(max_abs_diff(fused, before), 1e-4 * std::max(1.0, max_abs(before)));
    EXPECT_EQ(block->fuse_residual_tail(false), "");
    EXPECT_LE(max_abs_diff((*block)(x), fused), 1e-5 * std::max(1.0, max_abs(before)));
  }
}

TEST(Fuse, FoldsConvAndLinearWithTheArithmeticOfTheFormula) {
  // One conv + bn pair and one linear + bn pair, folded by hand in float64 as the reference.
  manual_seed(3);
  auto conv = std::make_shared<Conv2d>(2, 3, 3, Conv2dOptions{.padding = 1, .bias = false});
  auto bn = std::make_shared<BatchNorm2d>(3);
  auto net = std::make_shared<Sequential>();
  net->push_back(conv);
  net->push_back(bn);
  randomise_batch_norms(*net);
  const Tensor w = conv->weight.to(DType::Float64).clone();
  const Tensor s = div(bn->weight.to(DType::Float64),
                       sqrt(add(bn->running_var.to(DType::Float64), bn->options.eps)));
  const Tensor shift =
      sub(bn->bias.to(DType::Float64), mul(bn->running_mean.to(DType::Float64), s));
  const FuseReport report = fuse_for_inference(*net, randn({1, 2, 5, 5}));
  ASSERT_EQ(report.folded.size(), 1u);
  EXPECT_EQ(report.folded[0].first, "0");
  EXPECT_EQ(report.folded[0].second, "1");
  EXPECT_TRUE(bn->folded());
  ASSERT_TRUE(conv->bias.defined()) << "a layer without a bias gets one";
  EXPECT_LE(max_abs_diff(conv->weight, mul(w, s.reshape({3, 1, 1, 1}))), 1e-6);
  EXPECT_LE(max_abs_diff(conv->bias, shift), 1e-6);
  EXPECT_EQ(net->parameters().size(), 4u) << "conv weight and new bias, bn weight and bias";

  auto lin = std::make_shared<Linear>(5, 4);
  auto bn1 = std::make_shared<BatchNorm1d>(4);
  auto mlp = std::make_shared<Sequential>();
  mlp->push_back(lin);
  mlp->push_back(bn1);
  mlp->push_back(std::make_shared<ReLU>());
  randomise_batch_norms(*mlp);
  auto plain = std::make_shared<Sequential>();
  plain->push_back(std::make_shared<Linear>(5, 4));
  plain->push_back(std::make_shared<BatchNorm1d>(4));
  plain->push_back(std::make_shared<ReLU>());
  plain->load_state_dict(mlp->state_dict());
  plain->eval();
  const Tensor x = randn({6, 5});
  EXPECT_EQ(fuse_for_inference(*mlp, x).folded.size(), 1u);
  EXPECT_LE(max_abs_diff((*mlp)(x), (*plain)(x)), 1e-5);
}

// conv -> bn, and the conv's output added back: folding would change what the add reads.
class SharedOutput : public Module {
 public:
  SharedOutput() : Module("SharedOutput") {
    conv = register_module("conv", std::make_shared<Conv2d>(3, 3, 1));
    bn = register_module("bn", std::make_shared<BatchNorm2d>(3));
  }
  Tensor forward(const Tensor& x) override {
    const Tensor y = (*conv)(x);
    return add((*bn)(y), y);
  }
  std::shared_ptr<Conv2d> conv;
  std::shared_ptr<BatchNorm2d> bn;
};

TEST(Fuse, ALayerWhoseOutputIsAlsoUsedElsewhereIsRefusedAndNothingChanges) {
  manual_seed(5);
  SharedOutput m;
  randomise_batch_norms(m);
  const Tensor w = m.conv->weight.clone(), b = m.conv->bias.clone();
  const Tensor x = randn({2, 3, 4, 4});
  m.eval();
  const Tensor before = m(x);
  expect_error([&] { fuse_for_inference(m, x); },
               {"[nn.fuse_for_inference] folding 1 batch norm(s), 0 activation(s) and 0 residual "
                "block end(s) changed the model's output",
                "nothing was changed"});
  EXPECT_FALSE(m.bn->folded());
  EXPECT_EQ(max_abs_diff(m.conv->weight, w), 0.0);
  EXPECT_EQ(max_abs_diff(m.conv->bias, b), 0.0);
  EXPECT_EQ(max_abs_diff(m(x), before), 0.0);
}

// Note [Fused convolution and ReLU]: a ReLU module after a convolution becomes the convolution's
// post-op; the fused model computes what the unfused one does, also with gradients (the
// composite path), and the ReLU returns its input.
TEST(Fuse, MergesAReluModuleIntoTheConvolutionBeforeIt) {
  manual_seed(8);
  auto conv = std::make_shared<Conv2d>(3, 5, 3, Conv2dOptions{.padding = 1});
  auto relu = std::make_shared<ReLU>();
  auto net = std::make_shared<Sequential>();
  net->push_back(conv);
  net->push_back(relu);
  auto plain = std::make_shared<Sequential>();
  plain->push_back(std::make_shared<Conv2d>(3, 5, 3, Conv2dOptions{.padding = 1}));
  plain->push_back(std::make_shared<ReLU>());
  plain->load_state_dict(net->state_dict());
  const Tensor x = randn({2, 3, 6, 6});
  const FuseReport report = fuse_for_inference(*net, x);
  EXPECT_TRUE(report.folded.empty());
  ASSERT_EQ(report.relus.size(), 1u);
  EXPECT_EQ(report.relus[0], std::make_pair(std::string("0"), std::string("1")));
  EXPECT_TRUE(conv->fused_relu());
  EXPECT_TRUE(relu->folded());
  EXPECT_EQ(max_abs_diff(relu->forward(neg(ones({2}))), neg(ones({2}))), 0.0) << "passes through";
  const Tensor x2 = randn({4, 3, 5, 7});
  {
    autograd::InferenceMode inference;
    EXPECT_LE(max_abs_diff((*net)(x2), (*plain)(x2)), 1e-5);
    const Tensor x_cl = x2.contiguous(MemoryFormat::ChannelsLast);
    EXPECT_LE(max_abs_diff((*net)(x_cl), (*plain)(x_cl)), 1e-5);
  }
  // Recorded for autograd: the same values and gradients as the unfused layers.
  const Tensor xa = x2.clone().requires_grad_(true), xb = x2.clone().requires_grad_(true);
  const Tensor ya = (*net)(xa), yb = (*plain)(xb);
  sum(mul(ya, ya)).backward();
  sum(mul(yb, yb)).backward();
  EXPECT_LE(max_abs_diff(xa.grad(), xb.grad()), 1e-5);
}

// Note [Fused linear layers]: ReLU and GELU modules after Linear layers (one through a folded
// BatchNorm1d) become the layers' fused activations; the fused model computes what the unfused
// one does, with the unfused gradients when recorded, and a second fusion changes nothing.
TEST(Fuse, MergesReluAndGeluModulesIntoTheLinearBeforeThem) {
  manual_seed(10);
  const auto build = [] {
    auto net = std::make_shared<Sequential>();
    net->push_back(std::make_shared<Linear>(6, 16));
    net->push_back(std::make_shared<BatchNorm1d>(16));
    net->push_back(std::make_shared<ReLU>());
    net->push_back(std::make_shared<Linear>(16, 16));
    net->push_back(std::make_shared<GELU>("tanh"));
    net->push_back(std::make_shared<Linear>(16, 8));
    net->push_back(std::make_shared<GELU>());
    return net;
  };
  auto net = build(), plain = build();
  randomise_batch_norms(*net);
  plain->load_state_dict(net->state_dict());
  plain->eval();
  const FuseReport report = fuse_for_inference(*net, randn({5, 6}));
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(report.folded, (std::vector<P>{{"0", "1"}}));
  EXPECT_TRUE(report.relus.empty());
  EXPECT_EQ(report.activations, (std::vector<P>{{"0", "2"}, {"3", "4"}, {"5", "6"}}));
  const auto linear = [&](int64_t i) { return std::dynamic_pointer_cast<Linear>((*net)[i]); };
  EXPECT_EQ(linear(0)->fused_activation(), Activation::ReLU);
  EXPECT_EQ(linear(3)->fused_activation(), Activation::GELUTanh);
  EXPECT_EQ(linear(5)->fused_activation(), Activation::GELU);
  const Tensor x2 = randn({9, 6});
  {
    autograd::InferenceMode inference;
    EXPECT_LE(max_abs_diff((*net)(x2), (*plain)(x2)), 1e-5);
  }
  const Tensor xa = x2.clone().requires_grad_(true), xb = x2.clone().requires_grad_(true);
  const Tensor ya = (*net)(xa), yb = (*plain)(xb);
  sum(mul(ya, ya)).backward();
  sum(mul(yb, yb)).backward();
  EXPECT_LE(max_abs_diff(xa.grad(), xb.grad()), 1e-5);
  const FuseReport again = fuse_for_inference(*net, x2);
  EXPECT_TRUE(again.folded.empty() && again.relus.empty() && again.activations.empty());
}

// A Transformer layer's feed-forward activation moves into its linear1, for ReLU and GELU layers,
// norm first or not, in encoders and decoders.
TEST(Fuse, TransformerFeedForwardActivationsMoveIntoTheirFirstLinear) {
  manual_seed(11);
  for (const std::string act : {"relu", "gelu"}) {
    for (const bool norm_first : {false, true}) {
      TransformerLayerOptions o;
      o.dim_feedforward = 24;
      o.activation = act;
      o.norm_first = norm_first;
      o.batch_first = true;
      o.dropout = 0.0;
      auto enc = std::make_shared<TransformerEncoderLayer>(8, 2, o);
      auto plain = std::make_shared<TransformerEncoderLayer>(8, 2, o);
      plain->load_state_dict(enc->state_dict());
      plain->eval();
      const Tensor x = randn({3, 5, 8});
      const FuseReport report = fuse_for_inference(*enc, x);
      ASSERT_EQ(report.activations.size(), 1u);
      EXPECT_EQ(report.activations[0].first, "linear1");
      EXPECT_EQ(enc->linear1->fused_activation(),
                act == "gelu" ? Activation::GELU : Activation::ReLU);
      autograd::InferenceMode inference;
      const Tensor x2 = randn({2, 7, 8});
      EXPECT_LE(max_abs_diff((*enc)(x2), (*plain)(x2)), 1e-5) << act << " " << norm_first;

      auto dec = std::make_shared<TransformerDecoderLayer>(8, 2, o);
      auto dplain = std::make_shared<TransformerDecoderLayer>(8, 2, o);
      dplain->load_state_dict(dec->state_dict());
      dplain->eval();
      struct Wrap : Module {
        std::shared_ptr<TransformerDecoderLayer> layer;
        Tensor memory;
        explicit Wrap(std::shared_ptr<TransformerDecoderLayer> l, Tensor m)
            : Module("Wrap"), memory(std::move(m)) {
          layer = register_module("layer", std::move(l));
        }
        Tensor forward(const Tensor& t) override { return layer->forward(t, memory); }
      };
      const Tensor memory = randn({2, 4, 8});
      Wrap wrapped(dec, memory);
      EXPECT_EQ(fuse_for_inference(wrapped, x2).activations.size(), 1u);
      EXPECT_LE(max_abs_diff(wrapped(x2), dplain->forward(x2, memory)), 1e-5);
    }
  }
}

// A convolution whose output also goes around its ReLU cannot take the ReLU: refused, unchanged.
class ReluAndSkip : public Module {
 public:
  ReluAndSkip() : Module("ReluAndSkip") {
    conv = register_module("conv", std::make_shared<Conv2d>(2, 2, 1));
    relu = register_module("relu", std::make_shared<ReLU>());
  }
  Tensor forward(const Tensor& x) override {
    const Tensor y = (*conv)(x);
    return add((*relu)(y), y);
  }
  std::shared_ptr<Conv2d> conv;
  std::shared_ptr<ReLU> relu;
};

TEST(Fuse, AConvolutionWhoseOutputAlsoSkipsItsReluKeepsIt) {
  manual_seed(9);
  ReluAndSkip m;
  const Tensor x = randn({2, 2, 4, 4});
  m.eval();
  const Tensor before = m(x);
  expect_error([&] { fuse_for_inference(m, x); },
               {"folding 0 batch norm(s), 1 activation(s) and 0 residual block end(s) changed the "
                "model's output",
                "nothing was changed"});
  EXPECT_FALSE(m.conv->fused_relu());
  EXPECT_FALSE(m.relu->folded());
  EXPECT_EQ(max_abs_diff(m(x), before), 0.0);
}

TEST(Fuse, AFoldedModelRefusesToTrainAndBatchNormsWithoutStatisticsStay) {
  manual_seed(6);
  auto net = std::make_shared<Sequential>();
  net->push_back(std::make_shared<Conv2d>(1, 2, 3));
  net->push_back(std::make_shared<BatchNorm2d>(2));
  net->push_back(std::make_shared<Conv2d>(2, 2, 3));
  net->push_back(std::make_shared<BatchNorm2d>(2, BatchNormOptions{.track_running_stats = false}));
  const Tensor x = randn({2, 1, 8, 8});
  const FuseReport report = fuse_for_inference(*net, x);
  ASSERT_EQ(report.folded.size(), 1u) << "a batch norm without running statistics uses the batch's";
  EXPECT_EQ(report.folded[0].second, "1");
  net->train();
  expect_error([&] { (*net)(x); }, {"[nn.BatchNorm2d] this batch norm was folded", "eval()"});
  expect_error([&] { fuse_for_inference(*net, Tensor()); }, {"[nn.fuse_for_inference]"});
}

}  // namespace
}  // namespace ember::nn
