// Activation checkpointing (Note [Activation checkpointing]): gradients equal the
// uncheckpointed ones (dropout replayed), intermediates are not kept, parameters the block uses
// get their gradients, in-place changes are caught, and double backward works.
#include <gtest/gtest.h>

#include <vector>

#include <ember/ember.h>

#include "ember/autograd/checkpoint.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

struct Block {
  Tensor w1 = randn({8, 16}, TensorOptions(DType::Float64)).requires_grad_(true);
  Tensor w2 = randn({16, 4}, TensorOptions(DType::Float64)).requires_grad_(true);
  // matmul, relu, dropout, matmul: parameters captured, not passed.
  Tensor operator()(const Tensor& x) const {
    return matmul(dropout(relu(matmul(x, w1)), 0.5, /*training=*/true), w2);
  }
};

struct Grads {
  std::vector<double> x, w1, w2;
};

Grads run(const Block& block, bool checkpointed, bool preserve_rng = true) {
  manual_seed(3);
  Tensor x = randn({5, 8}, TensorOptions(DType::Float64)).requires_grad_(true);
  block.w1.mutable_grad() = Tensor();
  block.w2.mutable_grad() = Tensor();
  const Tensor y =
      checkpointed
          ? autograd::checkpoint([&block](const Tensor& v) { return block(v); }, x, preserve_rng)
          : block(x);
  (void)randn({3});  // draws between forward and backward must not change the replay
  sum(mul(y, y)).backward();
  return {values(x.grad()), values(block.w1.grad()), values(block.w2.grad())};
}

TEST(Checkpoint, GradientsEqualTheUncheckpointedOnesWithDropoutReplayed) {
  manual_seed(1);
  const Block block;
  const Grads plain = run(block, false), ckpt = run(block, true);
  EXPECT_EQ(ckpt.x, plain.x);
  EXPECT_EQ(ckpt.w1, plain.w1);
  EXPECT_EQ(ckpt.w2, plain.w2);
  // Without the generators' states the recomputation draws other masks.
  const Grads unreplayed = run(block, true, /*preserve_rng=*/false);
  EXPECT_NE(unreplayed.w1, plain.w1);
}

TEST(Checkpoint, KeepsNoIntermediateTensors) {
  // Ten 1 MiB intermediates: the plain graph keeps them for backward, the checkpointed one
  // keeps only its input and output.
  Tensor x = randn({256, 1024}).requires_grad_(true);
  auto block = [](const Tensor& v) {
    Tensor h = v;
    for (int i = 0; i < 10; ++i) h = tanh(h);
    return h;
  };
  const int64_t before = static_cast<int64_t>(memory_stats().allocated);
  int64_t plain_kept = 0, ckpt_kept = 0;
  {
    const Tensor y = block(x);
    plain_kept = static_cast<int64_t>(memory_stats().allocated) - before;
  }
  {
    const Tensor y = autograd::checkpoint(block, x);
    ckpt_kept = static_cast<int64_t>(memory_stats().allocated) - before;
    sum(y).backward();
  }
  const int64_t mib = int64_t{1} << 20;
  EXPECT_GE(plain_kept, 10 * mib);
  EXPECT_LE(ckpt_kept, 2 * mib);
  // The gradient is the uncheckpointed one.
  const std::vector<double> g = values(x.grad());
  x.mutable_grad() = Tensor();
  sum(block(x)).backward();
  EXPECT_EQ(g, values(x.grad()));
}

TEST(Checkpoint, ABlockWithoutInputsThatRequireGradStillTrainsItsParameters) {
  const Block block;
  const Tensor x = randn({5, 8}, TensorOptions(DType::Float64));  // data, no grad
  manual_seed(2);
  sum(autograd::checkpoint([&block](const Tensor& v) { return block(v); }, x)).backward();
  const std::vector<double> g = values(block.w1.grad());
  block.w1.mutable_grad() = Tensor();
  manual_seed(2);
  sum(block(x)).backward();
  EXPECT_EQ(g, values(block.w1.grad()));
}

TEST(Checkpoint, ModifyingAnInputInPlaceBeforeBackwardIsAnError) {
  Tensor a = randn({4}).requires_grad_(true);
  Tensor x = mul(a, 2.0);
  const Tensor y = autograd::checkpoint([](const Tensor& v) { return exp(v); }, x);
  mul_(x, 3.0);
  expect_error([&] { sum(y).backward(); }, {"modified by an inplace operation", "checkpoint"});
}

TEST(Checkpoint, SeveralInputsAndOutputs) {
  Tensor a = tensor({0.5, -1.0}, DType::Float64).requires_grad_(true);
  Tensor b = tensor({2.0, 3.0}, DType::Float64).requires_grad_(true);
  auto block = [](const std::vector<Tensor>& v) {
    return std::vector<Tensor>{mul(mul(v[0], v[0]), v[0]), mul(v[0], v[1]), v[1]};
  };
  const std::vector<Tensor> ys = autograd::checkpoint(block, {a, b});
  ASSERT_EQ(ys.size(), 3u);
  // d/da sum(a^3 + a b + b) = 3 a^2 + b; d/db = a + 1
  sum(add(add(ys[0], ys[1]), ys[2])).backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{3 * 0.25 + 2.0, 3 * 1.0 + 3.0}));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{1.5, 0.0}));
  // Higher derivatives through the block are refused, not silently wrong.
  const std::vector<Tensor> again = autograd::checkpoint(block, {a, b});
  expect_error([&] { autograd::grad({sum(again[0])}, {a}, {}, true, /*create_graph=*/true); },
               {"[checkpoint]", "create_graph"});
}

}  // namespace
}  // namespace ember::testing
