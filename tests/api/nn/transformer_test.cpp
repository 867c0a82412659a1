// MultiheadAttention and the Transformer layers: PyTorch's parameter names and shapes, state_dicts
// saved by PyTorch loaded strictly with eval-mode outputs equal to PyTorch's
// (tests/fixtures/attention/transformer.safetensors, made by make_fixtures.py there), the
// fused attention path against the explicit one, gradients reaching every parameter, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

using nn::MultiheadAttention;
using nn::TransformerDecoderLayer;
using nn::TransformerEncoder;
using nn::TransformerEncoderLayer;
using nn::TransformerLayerOptions;

std::vector<std::string> names_of(const nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, t] : m.state_dict()) out.push_back(name);
  return out;
}

const StateDict& fixtures() {
  static const StateDict t =
      io::load(std::string(EMBER_ATTENTION_FIXTURES) + "/transformer.safetensors");
  return t;
}

/** The entries under "prefix." with the prefix taken off. */
StateDict under(const std::string& prefix) {
  StateDict out;
  for (const auto& [name, t] : fixtures()) {
    if (name.rfind(prefix + ".", 0) == 0) out[name.substr(prefix.size() + 1)] = t;
  }
  return out;
}

void expect_close(const Tensor& got, const Tensor& want, double tol, const char* what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const std::vector<double> a = values(got), b = values(want);
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], tol * (1.0 + std::abs(b[i]))) << what << " element " << i;
  }
}

TEST(Transformer, ParameterNamesAndShapesArePyTorchs) {
  MultiheadAttention mha(16, 4);
  EXPECT_EQ(names_of(mha), (std::vector<std::string>{"in_proj_bias", "in_proj_weight",
                                                     "out_proj.bias", "out_proj.weight"}));
  EXPECT_EQ(mha.in_proj_weight.sizes(), Shape({48, 16}));
  EXPECT_EQ(mha.in_proj_bias.sizes(), Shape({48}));
  for (double b : values(mha.in_proj_bias)) EXPECT_EQ(b, 0.0);
  for (double b : values(mha.out_proj->bias)) EXPECT_EQ(b, 0.0);
  EXPECT_EQ(names_of(MultiheadAttention(8, 2, {.bias = false})),
            (std::vector<std::string>{"in_proj_weight", "out_proj.weight"}));
  TransformerEncoderLayer enc(16, 4, {.dim_feedforward = 32});
  EXPECT_EQ(names_of(enc), (std::vector<std::string>{
                               "linear1.bias", "linear1.weight", "linear2.bias", "linear2.weight",
                               "norm1.bias", "norm1.weight", "norm2.bias", "norm2.weight",
                               "self_attn.in_proj_bias", "self_attn.in_proj_weight",
                               "self_attn.out_proj.bias", "self_attn.out_proj.weight"}));
  EXPECT_EQ(enc.linear1->weight.sizes(), Shape({32, 16}));
  TransformerDecoderLayer dec(16, 4);
  EXPECT_EQ(dec.linear1->weight.sizes(), Shape({2048, 16}));  // PyTorch's default width
  EXPECT_EQ(names_of(dec).size(), 18u);
}

TEST(Transformer, LoadsPyTorchStateDictsAndMatchesItsOutputs) {
  const StateDict& t = fixtures();
  const Tensor x = t.at("in.x"), mem = t.at("in.mem"), tgt = t.at("in.tgt"), seq = t.at("in.seq");
  const Tensor padding = t.at("in.padding"), causal = t.at("in.causal");
  constexpr double kTol = 2e-5;

  MultiheadAttention mha(16, 4, {.dropout = 0.1});
  mha.load_state_dict(under("mha"));
  mha.eval();
  const auto [out, w] = mha.forward(seq, mem.transpose(0, 1), mem.transpose(0, 1), padding);
  expect_close(out, t.at("out.mha"), kTol, "mha output");
  expect_close(w, t.at("out.mha_weights"), kTol, "mha weights");
  const auto per_head = mha.forward(seq, seq, seq, {}, true, {}, /*average_attn_weights=*/false);
  expect_close(per_head.second, t.at("out.mha_weights_per_head"), kTol, "per-head weights");

  TransformerEncoderLayer enc(16, 4, {.dim_feedforward = 32, .batch_first = true});
  enc.load_state_dict(under("enc"));
  enc.eval();
  expect_close(enc.forward(x), t.at("out.enc"), kTol, "encoder layer");
  std::vector<double> m;
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 5; ++j) m.push_back(j > i ? -INFINITY : 0.0);
  }
  expect_close(enc.forward(x, make(m, {5, 5}, DType::Float32), {}, /*is_causal=*/true),
               t.at("out.enc_causal"), kTol, "encoder layer, causal");

  TransformerDecoderLayer dec(
      16, 4,
      {.dim_feedforward = 24, .activation = "gelu", .batch_first = true, .norm_first = true});
  dec.load_state_dict(under("dec"));
  dec.eval();
  expect_close(dec.forward(tgt, mem, causal, {}, {}, padding, /*tgt_is_causal=*/true),
               t.at("out.dec"), kTol, "decoder layer");

  TransformerEncoderLayer layer(16, 2,
                                {.dim_feedforward = 20, .dropout = 0.0, .batch_first = true});
  TransformerEncoder stack(layer, 2, std::make_shared<nn::LayerNorm>(std::vector<int64_t>{16}));
  EXPECT_EQ(names_of(stack).front(), "layers.0.linear1.bias");
  stack.load_state_dict(under("stack"));
  stack.eval();
  expect_close(stack.forward(x), t.at("out.stack"), kTol, "encoder stack");
}

TEST(Transformer, TheWholeModelLoadsPyTorchsStateDictAndMatchesItsOutput) {
  // nn.Transformer(16, 2, 2 + 2 layers, dim_feedforward 20), sequence first: PyTorch's names
  // (encoder.layers.N..., encoder.norm, decoder...) load strictly.
  const StateDict& t = fixtures();
  nn::Transformer full(
      16, 2, {{.dim_feedforward = 20, .dropout = 0.0}, /*num_encoder_layers=*/2, /*decoder=*/2});
  full.load_state_dict(under("full"));
  full.eval();
  const Tensor src = t.at("in.x").transpose(0, 1), tgt = t.at("in.tgt").transpose(0, 1);
  const Tensor padding = t.at("in.padding").narrow(1, 0, 5);
  expect_close(full.forward(src, tgt, {}, t.at("in.causal"), {}, padding, {}, {}, false,
                            /*tgt_is_causal=*/true),
               t.at("out.full"), 2e-5, "transformer");
  EXPECT_EQ(values(nn::Transformer::generate_square_subsequent_mask(4)), values(t.at("in.causal")));
  // Every matrix is re-drawn (PyTorch's _reset_parameters): the encoder's layers differ.
  nn::Transformer fresh(8, 2, {{.dim_feedforward = 8}, 2, 1});
  const auto p = fresh.state_dict();
  EXPECT_NE(values(p.at("encoder.layers.0.linear1.weight")),
            values(p.at("encoder.layers.1.linear1.weight")));
  EXPECT_EQ(values(p.at("decoder.norm.weight")), std::vector<double>(8, 1.0));
  expect_error(
      [&] {
        fresh.forward(ones({3, 2, 8}), ones({4, 5, 8}));
      },
      {"[nn.Transformer] the batch number of src and tgt must be equal", "2 and 5"});
  expect_error(
      [&] {
        fresh.forward(ones({3, 2, 8}), ones({4, 2, 6}));
      },
      {"the feature number of src and tgt must be equal to d_model", "d_model 8"});
  expect_error([] { nn::Transformer(8, 2, {{}, 0, 1}); }, {"num_layers must be at least 1"});
}

TEST(Transformer, FusedAttentionMatchesTheExplicitWeights) {
  MultiheadAttention mha(12, 3, {.batch_first = true});
  Generator gen(4);
  const Tensor q = rand({2, 5, 12}, DType::Float32, &gen),
               kv = rand({2, 7, 12}, DType::Float32, &gen);
  const Tensor pad = gt(rand({2, 7}, DType::Float32, &gen), 0.7);
  const Tensor fused = mha.forward(q, kv, kv, pad, /*need_weights=*/false).first;
  const Tensor explicit_ = mha.forward(q, kv, kv, pad, /*need_weights=*/true).first;
  expect_close(fused, explicit_, 1e-5, "fused vs explicit");
  // Unbatched input gives the batched result's first row.
  const Tensor one = mha.forward(q.select(0, 0), kv.select(0, 0), kv.select(0, 0)).first;
  expect_close(one, mha.forward(q, kv, kv).first.select(0, 0), 1e-5, "unbatched");
}

TEST(Transformer, SelfAttentionsOneProjectionEqualsThreeSeparateOnes) {
  // Note [One projection for self-attention]: the same outputs and gradients as projecting a
  // query, key and value that are equal but distinct tensors.
  MultiheadAttention mha(12, 3);
  mha.to(DType::Float64);
  Generator gen(5);
  const Tensor x = rand({4, 2, 12}, DType::Float64, &gen);
  const auto run = [&](bool one_tensor) {
    mha.zero_grad();
    const Tensor in = x.clone().requires_grad_(true);
    const Tensor k = one_tensor ? in : mul(in, 1.0), v = one_tensor ? in : mul(in, 1.0);
    const Tensor y = mha.forward(in, k, v, {}, /*need_weights=*/false).first;
    sum(mul(y, y)).backward();
    return std::vector<Tensor>{y.detach(), in.grad(), mha.in_proj_weight.grad().clone(),
                               mha.in_proj_bias.grad().clone()};
  };
  const std::vector<Tensor> packed = run(true), separate = run(false);
  const char* what[] = {"output", "input gradient", "in_proj_weight gradient",
                        "in_proj_bias gradient"};
  for (size_t i = 0; i < packed.size(); ++i) expect_close(packed[i], separate[i], 1e-12, what[i]);
}

TEST(Transformer, GradientsReachEveryParameterAndDropoutActsInTraining) {
  TransformerEncoderLayer enc(8, 2, {.dim_feedforward = 16, .dropout = 0.2, .norm_first = true});
  Generator gen(6);
  const Tensor x = rand({4, 3, 8}, DType::Float32, &gen);  // [L, N, E]
  sum(square(enc.forward(x))).backward();
  for (const auto& [name, p] : enc.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    double total = 0;
    for (double g : values(p.grad())) total += std::abs(g);
    EXPECT_GT(total, 0.0) << name;
  }
  const Tensor a = enc.forward(x), b = enc.forward(x);
  EXPECT_NE(values(a), values(b));  // dropout in training
  enc.eval();
  EXPECT_EQ(values(enc.forward(x)), values(enc.forward(x)));
}

// PyTorch's parameters for kdim / vdim and add_bias_kv (names, shapes, registration order), and
// Note [Extra keys of MultiheadAttention]: the weights cover the appended keys and sum to 1, and
// the gradient reaches bias_k and the separate projections.
TEST(MultiheadAttention, SeparateProjectionsAndExtraKeys) {
  MultiheadAttention m(4, 2, {.add_bias_kv = true, .add_zero_attn = true, .kdim = 3, .vdim = 5});
  m.to(DType::Float64);
  std::vector<std::string> names;
  for (const auto& [name, t] : m.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight",
                                             "in_proj_bias", "bias_k", "bias_v", "out_proj.weight",
                                             "out_proj.bias"}));
  EXPECT_FALSE(m.in_proj_weight.defined());
  EXPECT_EQ(m.k_proj_weight.sizes(), (Shape{4, 3}));
  EXPECT_EQ(m.bias_v.sizes(), (Shape{1, 1, 4}));
  const Tensor q = randn({2, 3, 4}, DType::Float64).requires_grad_(true);
  const Tensor k = randn({5, 3, 3}, DType::Float64), v = randn({5, 3, 5}, DType::Float64);
  const auto [out, w] = m.forward(q, k, v, {}, true, {}, false);
  EXPECT_EQ(out.sizes(), (Shape{2, 3, 4}));
  EXPECT_EQ(w.sizes(), (Shape{3, 2, 2, 7}));  // 5 keys, bias_k, the zero key
  ember::testing::expect_close(sum(w, {-1}), std::vector<double>(12, 1.0), 1e-12, "row sums");
  sum(out).backward();
  EXPECT_TRUE(m.bias_k.grad().defined() && m.k_proj_weight.grad().defined());
}

TEST(Transformer, BadArgumentsAreClearErrors) {
  expect_error([] { MultiheadAttention(10, 3); }, {"divisible by num_heads", "embed_dim=10"});
  expect_error([] { MultiheadAttention(8, 2, {.kdim = 0}); }, {"kdim and vdim must be positive"});
  expect_error(
      [] {
        MultiheadAttention m(8, 2, {.kdim = 4});
        m.forward(ones({3, 2, 8}), ones({3, 2, 8}), ones({3, 2, 8}));
      },
      {"kdim=4", "[3, 2, 8]"});
  MultiheadAttention mha(8, 2);
  const Tensor x = ones({3, 2, 8});
  expect_error(
      [&] {
        mha.forward(x, x, x, {}, true, ones({3, 4}, DType::Bool));
      },
      {"attn_mask must have shape [L, S] = [3, 3]", "[3, 4]"});
  expect_error(
      [&] {
        mha.forward(x, x, x, ones({2, 4}, DType::Bool));
      },
      {"key_padding_mask must have shape [2, 3]"});
  expect_error([&] { mha.forward(x, x, x, {}, false, {}, true, /*is_causal=*/true); },
               {"is_causal is a hint"});
  expect_error([&] { mha.forward(ones({3, 2, 6}), x, x); }, {"must end in embed_dim=8"});
  expect_error([] { TransformerEncoderLayer(8, 2, {.activation = "tanh"}); },
               {"activation must be \"relu\" or \"gelu\"", "tanh"});
}

}  // namespace
}  // namespace ember::testing
