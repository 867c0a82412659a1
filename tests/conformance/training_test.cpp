// End to end: a small model trained for a few SGD steps on each device under test and on the
// reference backend gives the same losses.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <ember/ember.h>

namespace ember::conformance {
namespace {

/** Losses of `steps` SGD steps of an MLP 8 -> 16 -> 4 on fixed data, on `device`. */
std::vector<double> train_losses(const std::string& device, int steps) {
  manual_seed(42);
  auto model = models::mlp({8, 16, 4});
  model->to(Device(device));
  Generator gen(7);
  const Tensor x = randn({32, 8}, DType::Float32, &gen).to(Device(device));
  const Tensor y = randint(0, 4, {32}, DType::Int64, &gen).to(Device(device));
  optim::SGD opt(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Tensor loss = cross_entropy((*model)(x), y);
    loss.backward();
    opt.step();
    losses.push_back(loss.item());
  }
  return losses;
}

TEST(ConformanceTraining, SgdStepsMatchReference) {
  const std::vector<double> want = train_losses("reference", 5);
  for (const DeviceTypeEntry& e : device_types()) {
    if (e.name == "reference" || e.count == 0) continue;
    const std::vector<double> got = train_losses(e.name, 5);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-4 * std::abs(want[i]))
          << e.name << " step " << i << " loss " << got[i] << ", reference " << want[i];
    }
  }
  EXPECT_LT(want.back(), want.front()) << "the loss should fall";
}

}  // namespace
}  // namespace ember::conformance
