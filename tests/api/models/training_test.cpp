// End to end: reference models have the right shapes, a model trains on a Fashion-MNIST
// subset, and its checkpoint round-trips bit-exactly.
#include <gtest/gtest.h>

#include <filesystem>

#include <ember/data.h>
#include <ember/ember.h>
#include <ember/io.h>
#include <ember/models.h>
#include <ember/optim.h>

#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

using ember::testing::expect_error;
using ember::testing::values;

TEST(Models, ShapesAndParameterCountsMatchTheirDefinitions) {
  const Tensor x = randn({2, 1, 28, 28});
  auto lenet = models::lenet5();
  EXPECT_EQ((*lenet)(x).sizes(), (Shape{2, 10}));
  // conv1 6*1*25+6, conv2 16*6*25+16, fc 400*120+120, 120*84+84, 84*10+10 (as in PyTorch).
  EXPECT_EQ(lenet->num_parameters(), 156 + 2416 + 48120 + 10164 + 850);
  auto cnn = models::fashion_cnn();
  EXPECT_EQ((*cnn)(x).sizes(), (Shape{2, 10}));
  auto mlp = models::by_name("mlp");
  EXPECT_EQ((*mlp)(x).sizes(), (Shape{2, 10}));
  EXPECT_EQ(mlp->num_parameters(), 784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10);
  auto resnet = models::resnet18(10);
  EXPECT_EQ((*resnet)(randn({2, 3, 32, 32})).sizes(), (Shape{2, 10}));
  // torchvision's resnet18 has 11,689,512 parameters with 1000 classes: 512*990 fewer here.
  EXPECT_EQ(resnet->num_parameters(), 11689512 - 512 * 990 - 990);
  // torchvision's resnet50 has 25,557,032 parameters with 1000 classes.
  auto resnet50 = models::resnet50();
  EXPECT_EQ(resnet50->num_parameters(), 25557032);
  auto small50 = models::by_name("resnet50");
  EXPECT_EQ((*small50)(randn({2, 1, 28, 28})).sizes(), (Shape{2, 10}));
  EXPECT_EQ(small50->num_parameters(), 25557032 - 2048 * 990 - 990 - 64 * 2 * 49);
  expect_error([] { models::by_name("vgg"); }, {"[models]", "'vgg'"});
}

// Note [A training run in seconds]
// 8000 training images, 2 epochs of LeNet-5 with the recipe of `ember train --model lenet`
// (SGD, lr 0.01, momentum 0.9, batch 64). Cross entropy starts at ln(10) = 2.30 and stays on
// a plateau for about 100 steps (ReLU LeNet with default init); a model that learns averages
// well below 1.2 over its second epoch (steps 126-250), while a broken gradient, update or data
// pipeline stays near 2.3.
TEST(Training, LeNetLearnsAFashionMnistSubset) {
  manual_seed(0);
  const std::string root = data::find_fashion_mnist(std::nullopt);
  auto train = std::make_shared<data::MNIST>(root, /*train=*/true, 8000);
  data::DataLoader loader(train, {.batch_size = 64, .shuffle = true, .seed = 1});
  auto model = models::lenet5();
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  double first = 0, last_epoch = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    double sum_loss = 0;
    int64_t n = 0;
    for (const std::vector<Tensor>& batch : loader) {
      const Tensor loss = cross_entropy((*model)(batch[0]), batch[1]);
      opt.zero_grad();
      loss.backward();
      opt.step();
      if (first == 0) first = loss.item();
      sum_loss += loss.item();
      ++n;
    }
    last_epoch = sum_loss / static_cast<double>(n);
  }
  EXPECT_NEAR(first, 2.30, 0.15);
  EXPECT_LT(last_epoch, 1.2);
}

TEST(Training, CheckpointRoundTripsBitExactly) {
  auto a = models::fashion_cnn();
  auto b = models::fashion_cnn();
  a->eval();
  b->eval();
  const auto dir = std::filesystem::temp_directory_path() / "ember-training-test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "cnn.safetensors").string();
  io::save(path, a->state_dict());
  b->load_state_dict(io::load(path));
  for (const auto& [name, t] : a->state_dict()) {
    EXPECT_EQ(values(t), values(b->state_dict().at(name))) << name;
  }
  const Tensor x = randn({3, 1, 28, 28});
  EXPECT_EQ(values((*a)(x)), values((*b)(x)));
  // A checkpoint of another model is refused with the names that differ.
  io::save(path, models::lenet5()->state_dict());
  expect_error([&] { b->load_state_dict(io::load(path)); }, {"[nn.Sequential]", "0.weight"});
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ember
