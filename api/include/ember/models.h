// Reference models: LeNet-5, a small batch-norm CNN for 28x28 images, an MLP, ResNet-18 and
// ResNet-50, a small Vision Transformer and a small GPT.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/nn.h"

namespace ember::models {

/** LeNet-5 for 1x28x28 inputs (the first convolution pads by 2): 10 logits. */
std::shared_ptr<nn::Sequential> lenet5(int64_t num_classes = 10);
/** Two conv-batchnorm-relu-pool stages (32 and 64 channels) and two linear layers, for
 *  1x28x28 inputs: the default model of `ember train`. */
std::shared_ptr<nn::Sequential> fashion_cnn(int64_t num_classes = 10);
/** Linear layers of the given sizes with ReLU between them (sizes = {784, 512, 512, 10}). */
std::shared_ptr<nn::Sequential> mlp(const std::vector<int64_t>& sizes);

/** The two-convolution residual block of ResNet-18 and ResNet-34. */
class BasicBlock : public nn::Module, public nn::ResidualTail {
 public:
  /** A block from `in` to `out` channels; stride 2 (or a channel change) adds a projection. */
  BasicBlock(int64_t in, int64_t out, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string fuse_residual_tail(bool on) override;

 private:
  std::shared_ptr<nn::Conv2d> conv1_, conv2_;
  std::shared_ptr<nn::BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<nn::ReLU> relu1_;
  std::shared_ptr<nn::Sequential> downsample_;
  bool fused_tail_ = false;  // conv2 + bn2 + shortcut + relu as one conv2d_add_relu
};

/** The 1x1-3x3-1x1 residual block of ResNet-50 and deeper (torchvision's v1.5: the stride sits
 *  on the 3x3 convolution); its output has 4 x `width` channels. */
class Bottleneck : public nn::Module, public nn::ResidualTail {
 public:
  /** A block from `in` channels to 4 x `width`; stride 2 (or a channel change) adds a
   *  projection. */
  Bottleneck(int64_t in, int64_t width, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string fuse_residual_tail(bool on) override;

 private:
  std::shared_ptr<nn::Conv2d> conv1_, conv2_, conv3_;
  std::shared_ptr<nn::BatchNorm2d> bn1_, bn2_, bn3_;
  std::shared_ptr<nn::ReLU> relu1_, relu2_;
  std::shared_ptr<nn::Sequential> downsample_;
  bool fused_tail_ = false;  // conv3 + bn3 + shortcut + relu as one conv2d_add_relu
};

/** torchvision's ResNet: its stages as named children, run in order, the pooled features
 *  flattened before fc as torchvision's forward does (Note [torchvision's ResNet layout]). */
class ResNet : public nn::Sequential {
 public:
  /** The residual block a ResNet stacks. */
  enum class Block { Basic, Bottleneck };
  /** torchvision's ResNet(block, layers): a 7x7 stem and max pool, then stage i of layers[i]
   *  blocks with width x 2^i channels (x4 out of a Bottleneck), average pool and fc. */
  ResNet(Block block, std::vector<int64_t> layers, int64_t num_classes = 1000,
         int64_t in_channels = 3, int64_t width = 64);
  /** Logits [N, num_classes] of images [N, C, H, W]. */
  Tensor forward(const Tensor& x) override;
};

/** ResNet-18 as torchvision builds it (7x7 stem, max pool, 4 stages of 2 blocks), with its
 *  parameter names ("layer1.0.conv1.weight"); `width` channels in the stem and width x 1, 2, 4,
 *  8 in the stages (Note [torchvision's ResNet layout]). */
std::shared_ptr<ResNet> resnet18(int64_t num_classes = 1000, int64_t in_channels = 3,
                                 int64_t width = 64);
/** ResNet-50 as torchvision builds it (7x7 stem, max pool, stages of 3, 4, 6 and 3 Bottleneck
 *  blocks), with its parameter names; 25,557,032 parameters with 1000 classes and width 64. */
std::shared_ptr<ResNet> resnet50(int64_t num_classes = 1000, int64_t in_channels = 3,
                                 int64_t width = 64);

/** Sizes of the small Vision Transformer (defaults: 28x28 grey images, 4x4 patches). */
struct ViTOptions {
  int64_t image_size = 28;   ///< square input images of this side
  int64_t patch_size = 4;    ///< square patches of this side, one token each
  int64_t in_channels = 1;   ///< image channels
  int64_t num_classes = 10;  ///< logits of the head
  int64_t dim = 64;          ///< token width
  int64_t depth = 4;         ///< encoder layers
  int64_t heads = 4;         ///< attention heads per layer
  int64_t mlp_dim = 128;     ///< feed-forward width
  double dropout = 0.0;      ///< dropout inside the encoder
};

/** A Vision Transformer (Dosovitskiy et al.): patches by a strided convolution, a class token,
 *  learned positions, a pre-norm GELU encoder with a final LayerNorm, a linear head on the
 *  class token. Names follow torchvision's ViT where it has them (conv_proj, class_token). */
class VisionTransformer : public nn::Module {
 public:
  /** A model of the given sizes. */
  explicit VisionTransformer(ViTOptions options = {});
  /** Logits [N, num_classes] of images [N, C, H, W]. */
  Tensor forward(const Tensor& x) override;

  const ViTOptions options;
  std::shared_ptr<nn::Conv2d> conv_proj;            ///< patch embedding
  Tensor* class_token;                              ///< [1, 1, dim]
  Tensor* pos_embedding;                            ///< [1, patches + 1, dim]
  std::shared_ptr<nn::TransformerEncoder> encoder;  ///< the layers and the final norm
  std::shared_ptr<nn::Linear> head;                 ///< dim -> num_classes
};

/** A small Vision Transformer for 28x28 images. */
std::shared_ptr<VisionTransformer> vit(ViTOptions options = {});

/** Sizes of the small causal language model. */
struct GPTOptions {
  int64_t vocab_size = 256;  ///< token ids in [0, vocab_size)
  int64_t block_size = 128;  ///< the longest context
  int64_t dim = 128;         ///< token width
  int64_t depth = 4;         ///< decoder layers (self-attention only)
  int64_t heads = 4;         ///< attention heads per layer
  double dropout = 0.1;      ///< on the embeddings and inside every layer
};

/** A GPT-style causal Transformer: token and position embeddings, pre-norm GELU layers whose
 *  self-attention sees only earlier positions, a final LayerNorm and a linear head without
 *  bias to the vocabulary. */
class GPT : public nn::Module {
 public:
  /** A model of the given sizes. */
  explicit GPT(GPTOptions options = {});
  /** Logits [N, T, vocab_size] of token ids [N, T] (T <= block_size); position t depends only
   *  on tokens 0..t. */
  Tensor forward(const Tensor& idx) override;
  /** Token ids [N, T] continued by `max_new_tokens` tokens, each drawn from the softmax of the
   *  last position's logits divided by `temperature` (restricted to the `top_k` likeliest when
   *  top_k > 0), the model seeing at most the last block_size tokens: [N, T + max_new_tokens].
   *  Runs in eval mode without gradients and restores the training mode. */
  Tensor generate(const Tensor& idx, int64_t max_new_tokens, double temperature = 1.0,
                  int64_t top_k = 0, Generator* gen = nullptr);

  const GPTOptions options;
  std::shared_ptr<nn::Embedding> token_embedding;     ///< [vocab_size, dim]
  std::shared_ptr<nn::Embedding> position_embedding;  ///< [block_size, dim]
  std::shared_ptr<nn::Dropout> dropout;               ///< on the summed embeddings
  std::shared_ptr<nn::TransformerEncoder> blocks;     ///< the layers and the final norm
  std::shared_ptr<nn::Linear> lm_head;                ///< dim -> vocab_size, no bias
};

/** A small causal character-level (or byte-level) language model. */
std::shared_ptr<GPT> gpt(GPTOptions options = {});

/** A model by name ("lenet", "cnn", "mlp", "resnet18", "resnet50", "vit") for 1x28x28 inputs
 *  and 10 classes. */
std::shared_ptr<nn::Module> by_name(const std::string& name);

/** The names by_name knows, in that order. */
const std::vector<std::string>& names();

}  // namespace ember::models
