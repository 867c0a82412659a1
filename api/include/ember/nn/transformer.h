// Attention layers: MultiheadAttention, TransformerEncoderLayer, TransformerDecoderLayer, their
// stacks TransformerEncoder and TransformerDecoder, and Transformer, with PyTorch's parameter
// names, shapes and layouts (state_dicts move between the two unchanged).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "ember/nn/container.h"
#include "ember/nn/layers.h"
#include "ember/nn/module.h"

namespace ember::nn {

/** Options of MultiheadAttention beyond its sizes. */
struct MultiheadAttentionOptions {
  double dropout = 0.0;         ///< dropout on the attention weights, in training
  bool bias = true;             ///< in_proj_bias and out_proj.bias
  bool add_bias_kv = false;     ///< learned bias_k, bias_v appended to the keys and values
  bool add_zero_attn = false;   ///< a zero key and value appended (after the projections)
  std::optional<int64_t> kdim;  ///< key features (default embed_dim)
  std::optional<int64_t> vdim;  ///< value features (default embed_dim)
  bool batch_first = false;     ///< inputs [N, L, E] instead of [L, N, E]
};

/** Multi-head attention as PyTorch's: in_proj_weight [3E, E] (or q_proj_weight, k_proj_weight,
 *  v_proj_weight where kdim or vdim differ from E), in_proj_bias [3E], out_proj, bias_k and
 *  bias_v (add_bias_kv). */
class MultiheadAttention : public Module {
 public:
  /** `num_heads` heads of embed_dim / num_heads each (num_heads must divide embed_dim). */
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, MultiheadAttentionOptions options = {});
  /** {output, weights}: output like query; weights [N, L, S] (averaged) or [N, H, L, S], or
   *  undefined without need_weights. Bool masks mark what is NOT attended (true = masked);
   *  float masks are added. attn_mask [L, S] or [N * H, L, S]; key_padding_mask [N, S].
   *  is_causal is a hint that attn_mask is the causal mask (which it then requires). */
  std::pair<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& key_padding_mask = {}, bool need_weights = true,
                                    const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                    bool is_causal = false);
  /** Self-attention of x, the output only. */
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  /** Resets the projection weights (Xavier uniform), in_proj_bias and out_proj's bias (zeros),
   *  bias_k and bias_v (Xavier normal) as PyTorch does. */
  void reset_parameters();

  const int64_t embed_dim, num_heads, head_dim;
  const double dropout;
  const bool batch_first;
  const int64_t kdim, vdim;  ///< key and value features
  const bool add_zero_attn;  ///< a zero key and value appended
  /** [3 * embed_dim, embed_dim]: W_q, W_k, W_v stacked; undefined where kdim or vdim differ. */
  Tensor& in_proj_weight;
  Tensor& q_proj_weight;             ///< [E, E] where kdim or vdim differ from E, else undefined
  Tensor& k_proj_weight;             ///< [E, kdim] where kdim or vdim differ from E, else undefined
  Tensor& v_proj_weight;             ///< [E, vdim] where kdim or vdim differ from E, else undefined
  Tensor& in_proj_bias;              ///< [3 * embed_dim], undefined without bias
  std::shared_ptr<Linear> out_proj;  ///< embed_dim -> embed_dim
  Tensor& bias_k;                    ///< [1, 1, E] with add_bias_kv, else undefined
  Tensor& bias_v;                    ///< [1, 1, E] with add_bias_kv, else undefined
};

/** Options shared by the Transformer layers (PyTorch's defaults). */
struct TransformerLayerOptions {
  int64_t dim_feedforward = 2048;   ///< width of the feed-forward block
  double dropout = 0.1;             ///< dropout everywhere in the layer
  std::string activation = "relu";  ///< "relu" or "gelu"
  double layer_norm_eps = 1e-5;     ///< eps of every LayerNorm
  bool batch_first = false;         ///< inputs [N, L, E] instead of [L, N, E]
  bool norm_first = false;          ///< pre-norm (LayerNorm before each block) instead of post-norm
  bool bias = true;                 ///< biases of the linear layers and the norms
};

/** Self-attention and a feed-forward block, each with a residual and a LayerNorm. */
class TransformerEncoderLayer : public Module {
 public:
  /** A layer of width d_model with nhead heads. */
  TransformerEncoderLayer(int64_t d_model, int64_t nhead, TransformerLayerOptions options = {});
  /** The layer on src; masks as MultiheadAttention's attn_mask / key_padding_mask. */
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  /** The layer without masks. */
  Tensor forward(const Tensor& src) override;
  std::string extra_repr() const override;

  const int64_t d_model, nhead;
  const TransformerLayerOptions options;
  std::shared_ptr<MultiheadAttention> self_attn;  ///< the self-attention
  std::shared_ptr<Linear> linear1;                ///< d_model -> dim_feedforward
  std::shared_ptr<Dropout> dropout;               ///< inside the feed-forward block
  std::shared_ptr<Linear> linear2;                ///< dim_feedforward -> d_model
  std::shared_ptr<LayerNorm> norm1, norm2;        ///< around attention, feed-forward
  std::shared_ptr<Dropout> dropout1, dropout2;    ///< on each block's output
};

/** Self-attention, attention over a memory and a feed-forward block, each with a residual and
 *  a LayerNorm. */
class TransformerDecoderLayer : public Module {
 public:
  /** A layer of width d_model with nhead heads. */
  TransformerDecoderLayer(int64_t d_model, int64_t nhead, TransformerLayerOptions options = {});
  /** The layer on tgt attending to memory; masks as MultiheadAttention's. */
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                 bool memory_is_causal = false);
  std::string extra_repr() const override;

  const int64_t d_model, nhead;
  const TransformerLayerOptions options;
  std::shared_ptr<MultiheadAttention> self_attn;          ///< the self-attention
  std::shared_ptr<MultiheadAttention> multihead_attn;     ///< attention over the memory
  std::shared_ptr<Linear> linear1;                        ///< d_model -> dim_feedforward
  std::shared_ptr<Dropout> dropout;                       ///< inside the feed-forward block
  std::shared_ptr<Linear> linear2;                        ///< dim_feedforward -> d_model
  std::shared_ptr<LayerNorm> norm1, norm2, norm3;         ///< around each block
  std::shared_ptr<Dropout> dropout1, dropout2, dropout3;  ///< on each block's output
};

/** num_layers copies of an encoder layer (as PyTorch, each starting from the given layer's
 *  parameters), then an optional final norm. */
class TransformerEncoder : public Module {
 public:
  /** `num_layers` layers configured and initialised as `layer`; `norm` runs last if given. */
  TransformerEncoder(const TransformerEncoderLayer& layer, int64_t num_layers,
                     std::shared_ptr<LayerNorm> norm = nullptr);
  /** Every layer on src in turn (with the same masks), then the norm. */
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  /** The stack without masks. */
  Tensor forward(const Tensor& src) override;

  const int64_t num_layers;
  std::shared_ptr<ModuleList> layers;  ///< "layers.0", "layers.1", ...
  std::shared_ptr<LayerNorm> norm;     ///< "norm", or null
};

/** num_layers copies of a decoder layer (each starting from the given layer's parameters), then
 *  an optional final norm. */
class TransformerDecoder : public Module {
 public:
  /** `num_layers` layers configured and initialised as `layer`; `norm` runs last if given. */
  TransformerDecoder(const TransformerDecoderLayer& layer, int64_t num_layers,
                     std::shared_ptr<LayerNorm> norm = nullptr);
  /** Every layer on tgt in turn, each attending to memory (with the same masks), then the norm. */
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                 bool memory_is_causal = false);

  const int64_t num_layers;
  std::shared_ptr<ModuleList> layers;  ///< "layers.0", "layers.1", ...
  std::shared_ptr<LayerNorm> norm;     ///< "norm", or null
};

/** Options of Transformer: its layers' and how many of each (PyTorch's defaults). */
struct TransformerOptions : TransformerLayerOptions {
  int64_t num_encoder_layers = 6;  ///< layers of the encoder stack
  int64_t num_decoder_layers = 6;  ///< layers of the decoder stack
};

/** PyTorch's nn.Transformer: an encoder stack and a decoder stack, each ending in a LayerNorm,
 *  every matrix re-drawn Xavier-uniform as PyTorch's _reset_parameters does. */
class Transformer : public Module {
 public:
  /** A model of width d_model with nhead heads. */
  explicit Transformer(int64_t d_model = 512, int64_t nhead = 8, TransformerOptions options = {});
  /** The decoder's output on tgt, attending to the encoder's output on src; masks as
   *  MultiheadAttention's. src and tgt have the same batch size and d_model features. */
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = {},
                 const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& src_key_padding_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {}, bool src_is_causal = false,
                 bool tgt_is_causal = false, bool memory_is_causal = false);
  /** The float mask [size, size] that hides later positions: -inf above the diagonal, 0 else. */
  static Tensor generate_square_subsequent_mask(int64_t size, TensorOptions options = {});

  const int64_t d_model, nhead;
  const bool batch_first;
  std::shared_ptr<TransformerEncoder> encoder;  ///< "encoder", ending in its norm
  std::shared_ptr<TransformerDecoder> decoder;  ///< "decoder", ending in its norm
};

}  // namespace ember::nn
