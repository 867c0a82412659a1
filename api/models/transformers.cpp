// The Transformer models: a small Vision Transformer for 28x28 images and a small causal
// character-level language model, both on nn::TransformerEncoder.
#include <cmath>

#include <ember/ember.h>

#include "ember/models.h"
#include "ember/nn/init.h"

namespace ember::models {

using std::make_shared;

namespace {
// The pre-norm GELU encoder both models use (PyTorch's TransformerEncoderLayer with
// norm_first), `depth` layers and a final LayerNorm.
std::shared_ptr<nn::TransformerEncoder> pre_norm_encoder(int64_t dim, int64_t heads,
                                                         int64_t mlp_dim, double dropout,
                                                         int64_t depth) {
  const nn::TransformerEncoderLayer layer(dim, heads,
                                          {.dim_feedforward = mlp_dim,
                                           .dropout = dropout,
                                           .activation = "gelu",
                                           .batch_first = true,
                                           .norm_first = true});
  return make_shared<nn::TransformerEncoder>(layer, depth,
                                             make_shared<nn::LayerNorm>(std::vector<int64_t>{dim}));
}
}  // namespace

VisionTransformer::VisionTransformer(ViTOptions o) : Module("VisionTransformer"), options(o) {
  EMBER_CHECK(o.image_size > 0 && o.patch_size > 0 && o.image_size % o.patch_size == 0,
              "[models.vit] image_size must be a positive multiple of patch_size: got {} and {}",
              o.image_size, o.patch_size);
  EMBER_CHECK(o.dim > 0 && o.heads > 0 && o.dim % o.heads == 0,
              "[models.vit] dim must be a positive multiple of heads: got {} and {}", o.dim,
              o.heads);
  const int64_t side = o.image_size / o.patch_size;
  conv_proj = register_module("conv_proj",
                              make_shared<nn::Conv2d>(o.in_channels, o.dim, o.patch_size,
                                                      nn::Conv2dOptions{.stride = o.patch_size}));
  class_token = &register_parameter("class_token", zeros({1, 1, o.dim}));
  pos_embedding = &register_parameter("pos_embedding", empty({1, side * side + 1, o.dim}));
  nn::init::normal_(*pos_embedding, 0.0, 0.02);  // torchvision's ViT
  encoder =
      register_module("encoder", pre_norm_encoder(o.dim, o.heads, o.mlp_dim, o.dropout, o.depth));
  head = register_module("head", make_shared<nn::Linear>(o.dim, o.num_classes));
}

Tensor VisionTransformer::forward(const Tensor& x) {
  EMBER_CHECK(x.defined() && x.dim() == 4 && x.size(1) == options.in_channels &&
                  x.size(2) == options.image_size && x.size(3) == options.image_size,
              "[models.vit] expected images [N, {}, {}, {}]: got shape {}", options.in_channels,
              options.image_size, options.image_size,
              x.defined() ? shape_str(x.sizes()) : std::string("undefined"));
  const int64_t n = x.size(0);
  // [N, dim, s, s] -> [N, s*s, dim], the class token first, positions added.
  const Tensor patches = (*conv_proj)(x).flatten(2).transpose(1, 2);
  const Tensor tokens = cat({class_token->expand({n, 1, options.dim}), patches}, 1);
  const Tensor y = (*encoder)(add(tokens, *pos_embedding));
  return (*head)(y.select(1, 0));
}

std::shared_ptr<VisionTransformer> vit(ViTOptions options) {
  return make_shared<VisionTransformer>(options);
}

GPT::GPT(GPTOptions o) : Module("GPT"), options(o) {
  EMBER_CHECK(o.vocab_size > 0 && o.block_size > 0,
              "[models.gpt] vocab_size and block_size must be positive: got {} and {}",
              o.vocab_size, o.block_size);
  EMBER_CHECK(o.dim > 0 && o.heads > 0 && o.dim % o.heads == 0,
              "[models.gpt] dim must be a positive multiple of heads: got {} and {}", o.dim,
              o.heads);
  token_embedding =
      register_module("token_embedding", make_shared<nn::Embedding>(o.vocab_size, o.dim));
  position_embedding =
      register_module("position_embedding", make_shared<nn::Embedding>(o.block_size, o.dim));
  dropout = register_module("dropout", make_shared<nn::Dropout>(o.dropout));
  blocks =
      register_module("blocks", pre_norm_encoder(o.dim, o.heads, 4 * o.dim, o.dropout, o.depth));
  lm_head = register_module("lm_head", make_shared<nn::Linear>(o.dim, o.vocab_size, false));
}

Tensor GPT::forward(const Tensor& idx) {
  EMBER_CHECK(idx.defined() && idx.dim() == 2 && !is_floating(idx.dtype()),
              "[models.gpt] expected integer token ids [N, T]: got {}",
              idx.defined() ? fmt::format("{} of shape {}", idx.dtype(), shape_str(idx.sizes()))
                            : std::string("undefined"));
  const int64_t t = idx.size(1);
  EMBER_CHECK(t >= 1 && t <= options.block_size,
              "[models.gpt] sequence length must be in [1, block_size = {}]: got {}",
              options.block_size, t);
  const Tensor pos = arange(t, TensorOptions{DType::Int64, idx.device()});
  const Tensor x =
      (*dropout)(add((*token_embedding)(idx), (*position_embedding)(pos).unsqueeze(0)));
  // Position i attends to positions <= i: true above the diagonal marks what is masked.
  const Tensor causal = triu(ones({t, t}, TensorOptions{DType::Bool, idx.device()}), 1);
  return (*lm_head)(blocks->forward(x, causal, {}, /*is_causal=*/true));
}

Tensor GPT::generate(const Tensor& idx, int64_t max_new_tokens, double temperature, int64_t top_k,
                     Generator* gen) {
  EMBER_CHECK(max_new_tokens >= 0,
              "[models.gpt.generate] max_new_tokens must not be negative: got {}", max_new_tokens);
  EMBER_CHECK(temperature > 0 && std::isfinite(temperature),
              "[models.gpt.generate] temperature must be positive: got {}", temperature);
  EMBER_CHECK(top_k >= 0, "[models.gpt.generate] top_k must not be negative: got {} (0: all)",
              top_k);
  EMBER_CHECK(idx.defined() && idx.dim() == 2 && idx.size(1) >= 1,
              "[models.gpt.generate] expected token ids [N, T] with T >= 1: got {}",
              idx.defined() ? shape_str(idx.sizes()) : std::string("undefined"));
  autograd::NoGradGuard no_grad;
  const bool was_training = is_training();
  eval();
  Tensor out = idx;
  for (int64_t i = 0; i < max_new_tokens; ++i) {
    const int64_t t = out.size(1);
    const Tensor context =
        t > options.block_size ? out.narrow(1, t - options.block_size, options.block_size) : out;
    Tensor logits = div(forward(context).select(1, -1), temperature);
    if (top_k > 0 && top_k < options.vocab_size) {
      // Everything below the k-th largest logit is out.
      const Tensor kth = std::get<0>(topk(logits, top_k, -1)).narrow(-1, top_k - 1, 1);
      logits = masked_fill(logits, lt(logits, kth), -INFINITY);
    }
    const Tensor next = multinomial(softmax(logits, -1), 1, false, gen);
    out = cat({out, next.to(out.dtype())}, 1);
  }
  train(was_training);
  return out;
}

std::shared_ptr<GPT> gpt(GPTOptions options) {
  return make_shared<GPT>(options);
}

}  // namespace ember::models
