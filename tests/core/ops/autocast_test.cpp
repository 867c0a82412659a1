// Autocast (Note [Autocast]): which ops run in the lower type, which in float32, how mixed
// inputs promote, nesting and thread-locality, and gradients back to float32 parameters.
#include <gtest/gtest.h>

#include <thread>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

TEST(Autocast, LowerPrecisionOps) {
  const Tensor a = randn({4, 8}), b = randn({8, 3}), w = randn({3, 8});
  const Tensor x = randn({2, 3, 8, 8}), k = randn({4, 3, 3, 3});
  amp::autocast scope("cpu");
  EXPECT_EQ(matmul(a, b).dtype(), DType::BFloat16);
  EXPECT_EQ(mm(a, b).dtype(), DType::BFloat16);
  EXPECT_EQ(bmm(a.unsqueeze(0), b.unsqueeze(0)).dtype(), DType::BFloat16);
  EXPECT_EQ(linear(a, w, randn({3})).dtype(), DType::BFloat16);
  EXPECT_EQ(conv2d(x, k, randn({4}), {1, 1}, {1, 1}).dtype(), DType::BFloat16);
  // The value is the op on the rounded inputs, computed in the lower type.
  const Tensor want = matmul(a.to(DType::BFloat16), b.to(DType::BFloat16));
  EXPECT_EQ(values(matmul(a, b)), values(want));
  // Attention too, its bool mask left bool; the value is attention on the rounded inputs.
  const Tensor q = randn({2, 5, 8}), kv = randn({2, 6, 8});
  const Tensor keep = gt(randn({5, 6}), -1.0);
  const Tensor att = scaled_dot_product_attention(q, kv, kv, keep);
  EXPECT_EQ(att.dtype(), DType::BFloat16);
  {
    const amp::autocast off("cpu", DType::BFloat16, /*enabled=*/false);
    const Tensor qb = q.to(DType::BFloat16), kvb = kv.to(DType::BFloat16);
    EXPECT_EQ(values(att), values(scaled_dot_product_attention(qb, kvb, kvb, keep)));
  }
  // Ops on no list run in what they get.
  EXPECT_EQ(relu(a).dtype(), DType::Float32);
  EXPECT_EQ(relu(a.to(DType::BFloat16)).dtype(), DType::BFloat16);
}

TEST(Autocast, Float32Ops) {
  const Tensor h = randn({4, 5}).to(DType::BFloat16);
  amp::autocast scope("cpu");
  EXPECT_EQ(softmax(h, 1).dtype(), DType::Float32);
  EXPECT_EQ(log_softmax(h, 1).dtype(), DType::Float32);
  EXPECT_EQ(layer_norm(h, {5}).dtype(), DType::Float32);
  EXPECT_EQ(group_norm(h.reshape({4, 5, 1}), 5).dtype(), DType::Float32);
  EXPECT_EQ(sum(h).dtype(), DType::Float32);
  EXPECT_EQ(mean(h, {1}).dtype(), DType::Float32);
  EXPECT_EQ(cumsum(h, 1).dtype(), DType::Float32);
  EXPECT_EQ(cross_entropy(h, tensor({0, 1, 2, 3})).dtype(), DType::Float32);
  EXPECT_EQ(mse_loss(h, h).dtype(), DType::Float32);
  // The float32 result is the op on the widened input.
  EXPECT_EQ(values(softmax(h, 1)), values(softmax(h.to(DType::Float32), 1)));
  // float64 stays float64.
  EXPECT_EQ(softmax(h.to(DType::Float64), 1).dtype(), DType::Float64);
}

TEST(Autocast, MixedInputsPromote) {
  amp::autocast scope("cpu");
  const Tensor f = randn({2, 3}), h = randn({2, 3}).to(DType::BFloat16);
  EXPECT_EQ(cat({h, f}).dtype(), DType::Float32);
  EXPECT_EQ(stack({h, h}).dtype(), DType::BFloat16);
  EXPECT_EQ(add(h, f).dtype(), DType::Float32);  // ordinary type promotion
  // A residual block: bfloat16 conv output plus a float32 skip is float32.
  const Tensor x = randn({1, 2, 4, 4});
  EXPECT_EQ(add(conv2d(x, randn({2, 2, 3, 3}), {}, {1, 1}, {1, 1}), x).dtype(), DType::Float32);
}

TEST(Autocast, NestsRestoresAndIsPerThread) {
  const Tensor a = randn({2, 2});
  EXPECT_FALSE(amp::is_autocast_enabled("cpu"));
  {
    amp::autocast outer("cpu", DType::Float16);
    EXPECT_EQ(matmul(a, a).dtype(), DType::Float16);
    {
      amp::autocast inner("cpu", DType::BFloat16);
      EXPECT_EQ(matmul(a, a).dtype(), DType::BFloat16);
      {
        amp::autocast off("cpu", std::nullopt, /*enabled=*/false);
        EXPECT_FALSE(amp::is_autocast_enabled("cpu"));
        EXPECT_EQ(matmul(a, a).dtype(), DType::Float32);
      }
      EXPECT_EQ(amp::get_autocast_dtype("cpu"), DType::BFloat16);
    }
    EXPECT_EQ(matmul(a, a).dtype(), DType::Float16);
    DType other_thread = DType::Int8;
    std::thread([&] { other_thread = matmul(a, a).dtype(); }).join();
    EXPECT_EQ(other_thread, DType::Float32);  // the scope is this thread's
  }
  EXPECT_EQ(matmul(a, a).dtype(), DType::Float32);
  expect_error([] { amp::autocast bad("cpu", DType::Float64); }, {"[autocast]", "float64"});
  expect_error([] { amp::autocast bad("tpu"); }, {"[autocast]", "unknown device type 'tpu'"});
}

TEST(Autocast, GradientsReachFloat32ParametersInFloat32) {
  Tensor w = randn({3, 4}).requires_grad_(true);
  Tensor b = randn({3}).requires_grad_(true);
  const Tensor x = randn({5, 4});
  Tensor loss;
  {
    amp::autocast scope("cpu");
    loss = cross_entropy(linear(x, w, b), tensor({0, 1, 2, 0, 1}));
  }
  EXPECT_EQ(loss.dtype(), DType::Float32);
  loss.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), DType::Float32);
  EXPECT_EQ(b.grad().dtype(), DType::Float32);
  // Close to the float32 gradient (bfloat16 has 8 significant bits).
  const std::vector<double> g = values(w.grad());
  w.mutable_grad() = Tensor();
  cross_entropy(linear(x, w, b), tensor({0, 1, 2, 0, 1})).backward();
  const std::vector<double> g32 = values(w.grad());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], g32[i], 0.03) << i;
}

}  // namespace
}  // namespace ember::testing
