// Module::to(MemoryFormat) and training in channels-last: which tensors convert, and a CNN's
// steps (convolution, batch norm, ReLU, pooling, a residual add, SGD with momentum and Adam) in
// channels-last equal to the row-major run in float64, with parameters, gradients and optimizer
// state kept channels-last throughout.
#include <gtest/gtest.h>

#include <ember/ember.h>
#include <ember/nn.h>
#include <ember/optim.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::nn {
namespace {

using ember::testing::expect_error;
using ember::testing::values;

constexpr MemoryFormat kCl = MemoryFormat::ChannelsLast;

// conv-bn-relu, a residual block, pooling and a classifier.
class SmallNet : public Module {
 public:
  SmallNet() : Module("SmallNet") {
    conv1 =
        register_module("conv1", std::make_shared<Conv2d>(3, 8, 3, Conv2dOptions{.padding = 1}));
    bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(8));
    conv2 =
        register_module("conv2", std::make_shared<Conv2d>(8, 8, 3, Conv2dOptions{.padding = 1}));
    bn2 = register_module("bn2", std::make_shared<BatchNorm2d>(8));
    fc = register_module("fc", std::make_shared<Linear>(8, 4));
  }
  Tensor forward(const Tensor& x) override {
    const Tensor a = max_pool2d(relu((*bn1)((*conv1)(x))), {2, 2});
    const Tensor r = relu(add((*bn2)((*conv2)(a)), a));
    return (*fc)(adaptive_avg_pool2d(r, {1, 1}).flatten(1));
  }
  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<BatchNorm2d> bn1, bn2;
  std::shared_ptr<Linear> fc;
};

TEST(ModuleMemoryFormat, ConvertsFourDimensionalTensorsOnly) {
  SmallNet m;
  m.to(kCl);
  EXPECT_TRUE(m.conv1->weight.is_contiguous(kCl));
  EXPECT_FALSE(m.conv1->weight.is_contiguous());
  EXPECT_TRUE(m.conv1->weight.requires_grad());
  EXPECT_TRUE(m.conv1->weight.is_leaf());
  EXPECT_TRUE(m.fc->weight.is_contiguous());  // 2-d: unchanged
  for (const auto& [name, t] : m.named_parameters()) {
    if (t.dim() == 4) {
      EXPECT_TRUE(t.is_contiguous(kCl)) << name;
    }
  }
  m.to(MemoryFormat::Contiguous);
  EXPECT_TRUE(m.conv1->weight.is_contiguous());
  expect_error([&] { m.to(MemoryFormat::Preserve); }, {"preserve_format"});
}

template <typename Opt, typename Options>
void check_training(Options options) {
  manual_seed(5);
  auto rows = std::make_shared<SmallNet>();
  rows->to(DType::Float64);
  auto cl = std::make_shared<SmallNet>();
  cl->to(DType::Float64);
  cl->load_state_dict(rows->state_dict());
  cl->to(kCl);
  Opt opt_rows(rows->parameters(), options), opt_cl(cl->parameters(), options);
  Generator gen(6);
  for (int step = 0; step < 3; ++step) {
    const Tensor x = randn({4, 3, 8, 8}, DType::Float64, &gen);
    const Tensor y = randint(0, 4, {4}, DType::Int64, &gen);
    for (auto& [model, opt, input] :
         {std::tuple<SmallNet*, optim::Optimizer*, Tensor>{rows.get(), &opt_rows, x},
          {cl.get(), &opt_cl, x.contiguous(kCl)}}) {
      opt->zero_grad();
      cross_entropy((*model)(input), y).backward();
      opt->step();
    }
    for (const Tensor& p : cl->parameters()) {
      if (p.dim() != 4) continue;
      EXPECT_TRUE(p.is_contiguous(kCl)) << step;
      EXPECT_TRUE(p.grad().is_contiguous(kCl)) << step;
    }
  }
  const auto a = rows->named_parameters(), b = cl->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const std::vector<double> va = values(a[i].second), vb = values(b[i].second);
    for (size_t k = 0; k < va.size(); ++k) {
      // Summation orders differ (per-channel loops vs rows of channels); Adam's division by
      // sqrt(v) magnifies that for the small gradients of a bias.
      ASSERT_NEAR(va[k], vb[k], 1e-8) << a[i].first << " at " << k;
    }
  }
  const std::vector<double> ma = values(rows->bn1->running_mean),
                            mb = values(cl->bn1->running_mean);
  for (size_t k = 0; k < ma.size(); ++k) EXPECT_NEAR(ma[k], mb[k], 1e-8) << "running mean " << k;
}

TEST(ModuleMemoryFormat, TrainsLikeTheRowMajorModel) {
  check_training<optim::SGD>(optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
  check_training<optim::Adam>(optim::AdamOptions{.lr = 1e-2});
}

}  // namespace
}  // namespace ember::nn
