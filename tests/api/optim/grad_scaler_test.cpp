// GradScaler (Note [Loss scaling]): scaling and unscaling, skipped steps on inf and NaN, the
// scale's backoff and growth, and its state in checkpoints.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <ember/amp.h>
#include <ember/ember.h>
#include <ember/optim.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::amp {
namespace {

using ember::testing::expect_error;
using ember::testing::values;

TEST(GradScaler, ScalesUnscalesAndSteps) {
  Tensor w = tensor({1.0f, 2.0f}).requires_grad_(true);
  optim::SGD opt({w}, {.lr = 0.5});
  GradScaler scaler({.init_scale = 1024.0});
  const Tensor loss = sum(mul(w, w));
  const Tensor scaled = scaler.scale(loss);
  EXPECT_EQ(scaled.item(), 1024.0 * 5.0);
  scaled.backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{2048.0, 4096.0}));
  EXPECT_TRUE(scaler.step(opt));  // unscales (by a power of two: exactly), then steps
  EXPECT_EQ(values(w), (std::vector<double>{0.0, 0.0}));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1024.0);
}

TEST(GradScaler, SkipsStepsWithInfOrNanAndBacksOff) {
  for (double bad : {std::numeric_limits<double>::infinity(), std::nan("")}) {
    Tensor w = tensor({1.0f, 2.0f}).requires_grad_(true);
    optim::SGD opt({w}, {.lr = 0.5});
    GradScaler scaler({.init_scale = 8.0, .growth_interval = 2});
    w.mutable_grad() = tensor({1.0f, static_cast<float>(bad)});
    EXPECT_FALSE(scaler.step(opt));
    EXPECT_TRUE(scaler.last_step_skipped());
    EXPECT_EQ(values(w), (std::vector<double>{1.0, 2.0}));  // untouched
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), 4.0);
    // Two clean steps grow it back.
    for (int i = 0; i < 2; ++i) {
      w.mutable_grad() = tensor({4.0f, 4.0f});
      EXPECT_TRUE(scaler.step(opt));
      scaler.update();
    }
    EXPECT_EQ(scaler.get_scale(), 8.0);
    EXPECT_EQ(values(w), (std::vector<double>{0.0, 1.0}));  // two steps of 0.5 * (4 / 4)
  }
}

TEST(GradScaler, UnscaleOncePerStepStateAndOptions) {
  Tensor w = tensor({1.0f}).requires_grad_(true);
  optim::SGD opt({w}, {.lr = 0.1});
  GradScaler scaler({.init_scale = 2.0, .growth_interval = 3});
  w.mutable_grad() = tensor({2.0f});
  scaler.unscale_(opt);
  EXPECT_EQ(values(w.grad()), (std::vector<double>{1.0}));
  expect_error([&] { scaler.unscale_(opt); }, {"[amp.GradScaler]", "already called"});
  scaler.step(opt);  // does not unscale again
  EXPECT_FLOAT_EQ(static_cast<float>(values(w)[0]), 0.9f);
  scaler.update();
  GradScaler restored;
  restored.load_state_dict(scaler.state_dict());
  EXPECT_EQ(restored.get_scale(), 2.0);
  EXPECT_EQ(restored.state_dict().at("growth_tracker").item(), 1.0);
  expect_error([] { GradScaler({.init_scale = -1}); }, {"[amp.GradScaler]", "init_scale"});
  GradScaler off({.enabled = false});
  EXPECT_EQ(off.scale(tensor({3.0f})).item(), 3.0);
}

}  // namespace
}  // namespace ember::amp
