// The Transformer models: shapes and parameter names, the GPT's causality and sampling,
// argument checks, and that a few optimizer steps fit a tiny batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include <ember/ember.h>
#include <ember/models.h>
#include <ember/optim.h>

#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

using ember::testing::expect_error;
using ember::testing::values;

// The loss after `steps` Adam steps on one fixed batch, and the loss before them.
std::pair<double, double> fit(nn::Module& model, const Tensor& x, const Tensor& y, int steps,
                              const std::function<Tensor(const Tensor&)>& logits_of) {
  optim::Adam opt(model.parameters(), {.lr = 3e-3});
  double first = 0, last = 0;
  for (int i = 0; i < steps; ++i) {
    const Tensor loss = cross_entropy(logits_of(model(x)), y);
    if (i == 0) first = loss.item();
    last = loss.item();
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  return {first, last};
}

TEST(VisionTransformer, ShapesNamesAndFittingABatch) {
  manual_seed(0);
  auto model = models::vit({.depth = 2});
  const StateDict sd = model->state_dict();
  EXPECT_EQ(sd.at("conv_proj.weight").sizes(), (Shape{64, 1, 4, 4}));
  EXPECT_EQ(sd.at("class_token").sizes(), (Shape{1, 1, 64}));
  EXPECT_EQ(sd.at("pos_embedding").sizes(), (Shape{1, 50, 64}));  // 7 x 7 patches + class
  EXPECT_EQ(sd.at("encoder.layers.1.self_attn.in_proj_weight").sizes(), (Shape{192, 64}));
  EXPECT_EQ(sd.at("encoder.layers.0.linear1.weight").sizes(), (Shape{128, 64}));
  EXPECT_EQ(sd.at("encoder.norm.weight").sizes(), (Shape{64}));
  EXPECT_EQ(sd.at("head.weight").sizes(), (Shape{10, 64}));
  const Tensor x = randn({8, 1, 28, 28}), y = randint(0, 10, {8});
  EXPECT_EQ((*model)(x).sizes(), (Shape{8, 10}));
  const auto [before, after] = fit(*model, x, y, 30, [](const Tensor& t) { return t; });
  EXPECT_LT(after, 0.2 * before) << before << " -> " << after;
  expect_error([&] { (*model)(randn({2, 1, 32, 32})); }, {"[models.vit]", "[2, 1, 32, 32]"});
  expect_error([] { models::vit({.patch_size = 5}); }, {"[models.vit]", "28", "5"});
}

TEST(GPT, IsCausalAndFitsASequence) {
  manual_seed(1);
  auto model = models::gpt(
      {.vocab_size = 16, .block_size = 12, .dim = 32, .depth = 2, .heads = 4, .dropout = 0.0});
  EXPECT_EQ(model->state_dict().at("lm_head.weight").sizes(), (Shape{16, 32}));
  EXPECT_EQ(model->state_dict().count("lm_head.bias"), 0u);
  EXPECT_EQ(model->state_dict().at("position_embedding.weight").sizes(), (Shape{12, 32}));
  model->eval();
  const Tensor a = tensor({{1, 2, 3, 4, 5, 6}}), b = tensor({{1, 2, 3, 9, 9, 9}});
  const Tensor la = (*model)(a), lb = (*model)(b);
  ASSERT_EQ(la.sizes(), (Shape{1, 6, 16}));
  // Positions 0..2 see the same tokens in both: equal logits; position 3 differs.
  const auto va = values(la.narrow(1, 0, 3)), vb = values(lb.narrow(1, 0, 3));
  for (size_t i = 0; i < va.size(); ++i) EXPECT_NEAR(va[i], vb[i], 1e-5) << i;
  EXPECT_GT(values(max(abs(sub(la.select(1, 3), lb.select(1, 3)))))[0], 1e-4);
  model->train();
  // Next-token prediction on a periodic sequence.
  const Tensor seq = remainder(arange(13, TensorOptions{DType::Int64}), 5);
  const Tensor x = seq.narrow(0, 0, 12).unsqueeze(0), y = seq.narrow(0, 1, 12);
  const auto [before, after] = fit(*model, x, y, 40, [](const Tensor& t) {
    return t.reshape({-1, 16});
  });
  EXPECT_LT(after, 0.2 * before) << before << " -> " << after;
  // Greedy decoding (top_k = 1) is the argmax of the last position, step by step, over the
  // last block_size tokens: computed here by hand past the block size.
  Generator g(7);
  const Tensor prompt = tensor({{0, 1, 2}});
  const Tensor greedy = model->generate(prompt, 20, 1.0, 1, &g);
  ASSERT_EQ(greedy.sizes(), (Shape{1, 23}));
  EXPECT_TRUE(model->is_training()) << "generate restores the training mode";
  model->eval();
  std::vector<double> want = values(prompt);
  for (int i = 0; i < 20; ++i) {
    const int64_t t = static_cast<int64_t>(want.size()), from = std::max<int64_t>(0, t - 12);
    std::vector<int64_t> ctx(want.begin() + from, want.end());
    const Tensor logits = (*model)(from_vector(ctx, {1, t - from}, DType::Int64));
    want.push_back(values(argmax(logits.select(1, -1), -1))[0]);
  }
  EXPECT_EQ(values(greedy), want);
  // Within the block (the only window it was fitted on), the periodic sequence continues.
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(want[i], static_cast<double>(i % 5)) << i;
  // Sampling: reproducible from the generator's seed, tokens in the vocabulary.
  Generator g1(3), g2(3);
  const std::vector<double> s1 = values(model->generate(prompt, 30, 1.5, 0, &g1));
  EXPECT_EQ(s1, values(model->generate(prompt, 30, 1.5, 0, &g2)));
  for (double v : s1) EXPECT_TRUE(v >= 0 && v < 16) << v;
  expect_error([&] { model->generate(prompt, 5, 0.0); }, {"[models.gpt.generate]", "temperature"});
  expect_error([&] { model->generate(prompt, -1); }, {"[models.gpt.generate]", "-1"});
  expect_error([&] { model->generate(prompt, 5, 1.0, -2); }, {"[models.gpt.generate]", "top_k"});
  expect_error([&] { model->generate(tensor({1, 2}), 5); }, {"[models.gpt.generate]", "[2]"});
  expect_error([&] { (*model)(zeros({1, 13}, DType::Int64)); }, {"[models.gpt]", "12", "13"});
  expect_error([&] { (*model)(zeros({1, 4})); }, {"[models.gpt]", "float32"});
}

}  // namespace
}  // namespace ember
