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

// Note [The inf check stays on the device]: as in PyTorch, each optimizer is checked on its own
// gradients; the clean one steps, the other skips, and update() backs off once.
TEST(GradScaler, EachOptimizerIsCheckedOnItsOwnGradients) {
  Tensor a = tensor({1.0f}).requires_grad_(true);
  Tensor b = tensor({1.0f, 1.0f}).requires_grad_(true);
  optim::SGD opt_a({a}, {.lr = 1.0}), opt_b({b}, {.lr = 1.0});
  GradScaler scaler({.init_scale = 4.0});
  b.mutable_grad() = tensor({4.0f, std::numeric_limits<float>::infinity()});
  a.mutable_grad() = tensor({4.0f});
  scaler.unscale_(opt_b);  // b's check first: a must not inherit it
  EXPECT_TRUE(scaler.step(opt_a));
  EXPECT_FALSE(scaler.step(opt_b));
  EXPECT_EQ(values(a), (std::vector<double>{0.0}));
  EXPECT_EQ(values(b), (std::vector<double>{1.0, 1.0}));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 2.0);
  // Unscaled but never stepped still counts: update() backs off.
  b.mutable_grad() = tensor({std::nanf(""), 0.0f});
  scaler.unscale_(opt_b);
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1.0);
}

// Over a run with overflows in float32 and float16 gradients, the scaler's steps, skips, scales
// and parameters equal a reference that checks every gradient on the host, as GradScaler did
// before Note [The inf check stays on the device].
TEST(GradScaler, MatchesAHostCheckedReferenceOverARunWithOverflows) {
  Tensor w32 = tensor({0.5f, -1.0f, 2.0f}).requires_grad_(true);
  Tensor w16 = tensor({1.0f, 0.25f}).to(DType::Float16).requires_grad_(true);
  optim::SGD opt({w32, w16}, {.lr = 0.125});
  GradScaler scaler({.init_scale = 1024.0, .growth_interval = 3});
  std::vector<double> ref32 = values(w32), ref16 = values(w16);
  double ref_scale = 1024.0;
  int ref_clean = 0, skipped = 0;
  const float inf = std::numeric_limits<float>::infinity();
  for (int step = 0; step < 40; ++step) {
    // Scaled gradients: small integers times the scale, with an inf or NaN now and then, in
    // either parameter.
    std::vector<float> g32 = {float(step % 3), -1.0f, 2.0f}, g16 = {1.0f, float(step % 2)};
    for (float& x : g32) x *= static_cast<float>(ref_scale);
    for (float& x : g16) x *= static_cast<float>(ref_scale);
    if (step % 7 == 3) g32[1] = inf;
    if (step % 11 == 5) g16[0] = std::nanf("");
    if (step % 13 == 8) g16[1] = 70000.0f;  // beyond float16: inf once converted
    w32.mutable_grad() = from_vector(std::vector<double>(g32.begin(), g32.end()), {3},
                                     TensorOptions(DType::Float64));
    w32.mutable_grad() = w32.grad().to(DType::Float32);
    w16.mutable_grad() = from_vector(std::vector<double>(g16.begin(), g16.end()), {2},
                                     TensorOptions(DType::Float64));
    w16.mutable_grad() = w16.grad().to(DType::Float16);
    // The reference: every gradient (as stored) unscaled and checked on the host.
    const std::vector<double> s32 = values(w32.grad()), s16 = values(w16.grad());
    bool bad = false;
    for (const std::vector<double>* g : {&s32, &s16})
      for (double v : *g) bad = bad || !std::isfinite(v / ref_scale);
    const bool stepped = scaler.step(opt);
    scaler.update();
    EXPECT_EQ(stepped, !bad) << "step " << step;
    if (!bad) {
      for (size_t i = 0; i < ref32.size(); ++i) ref32[i] -= 0.125 * s32[i] / ref_scale;
      for (size_t i = 0; i < ref16.size(); ++i) ref16[i] -= 0.125 * s16[i] / ref_scale;
    }
    skipped += bad;
    if (bad) {
      ref_scale *= 0.5;
      ref_clean = 0;
    } else if (++ref_clean == 3) {
      ref_scale *= 2.0;
      ref_clean = 0;
    }
    EXPECT_EQ(scaler.get_scale(), ref_scale) << "step " << step;
    const std::vector<double> v32 = values(w32), v16 = values(w16);
    for (size_t i = 0; i < ref32.size(); ++i) EXPECT_NEAR(v32[i], ref32[i], 1e-5) << step;
    for (size_t i = 0; i < ref16.size(); ++i) EXPECT_NEAR(v16[i], ref16[i], 2e-2) << step;
    ref16 = v16;  // float16 rounds each step: follow the parameter, check the next step's change
  }
  EXPECT_GE(skipped, 8);  // the run did overflow, in both dtypes
}

}  // namespace
}  // namespace ember::amp
