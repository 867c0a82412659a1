// MultiheadAttention and the Transformer layers, written as PyTorch's torch.nn versions are
// (same parameters, same initialisation, same order of operations) on Ember's ops; the
// attention itself is scaled_dot_product_attention unless the weights are asked for.
#include "ember/nn/transformer.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ember/nn/init.h"
#include "ember/tensor.h"

namespace ember::nn {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/** A mask as scores to add, in `dtype`: a bool mask is -inf where true (MultiheadAttention's
 *  convention: true = not attended), a float one is used as it is. */
Tensor additive(const Tensor& mask, DType dtype, const char* what) {
  if (mask.dtype() == DType::Bool) {
    return where(mask, full({}, kNegInf, {dtype, mask.device()}), 0.0);
  }
  EMBER_CHECK_TYPE(is_floating(mask.dtype()),
                   "[nn.MultiheadAttention] {} must be bool or floating: got dtype {}", what,
                   mask.dtype());
  return mask.to(dtype);
}

/** Checks MultiheadAttention's arguments; returns embed_dim. */
int64_t checked_embed_dim(int64_t e, int64_t h, const MultiheadAttentionOptions& o) {
  EMBER_CHECK(e > 0 && h > 0 && e % h == 0,
              "[nn.MultiheadAttention] embed_dim must be positive and divisible by num_heads: got "
              "embed_dim={}, num_heads={}",
              e, h);
  EMBER_CHECK(o.dropout >= 0.0 && o.dropout <= 1.0,
              "[nn.MultiheadAttention] dropout must be in [0, 1]: got {}", o.dropout);
  EMBER_CHECK(o.kdim.value_or(e) > 0 && o.vdim.value_or(e) > 0,
              "[nn.MultiheadAttention] kdim and vdim must be positive: got kdim={}, vdim={}",
              o.kdim.value_or(e), o.vdim.value_or(e));
  return e;
}

}  // namespace

// ---- MultiheadAttention -------------------------------------------------------------------

MultiheadAttention::MultiheadAttention(int64_t e, int64_t h, MultiheadAttentionOptions o)
    : Module("MultiheadAttention"),
      embed_dim(e),
      num_heads(h),
      head_dim(h > 0 ? e / h : 0),
      dropout(o.dropout),
      batch_first(o.batch_first),
      kdim(o.kdim.value_or(e)),
      vdim(o.vdim.value_or(e)),
      add_zero_attn(o.add_zero_attn),
      in_proj_weight(register_parameter(
          "in_proj_weight",
          kdim == e && vdim == e ? empty({3 * checked_embed_dim(e, h, o), e}) : Tensor())),
      q_proj_weight(register_parameter(
          "q_proj_weight",
          kdim == e && vdim == e ? Tensor() : empty({checked_embed_dim(e, h, o), e}))),
      k_proj_weight(register_parameter("k_proj_weight",
                                       kdim == e && vdim == e ? Tensor() : empty({e, kdim}))),
      v_proj_weight(register_parameter("v_proj_weight",
                                       kdim == e && vdim == e ? Tensor() : empty({e, vdim}))),
      in_proj_bias(register_parameter("in_proj_bias", o.bias ? empty({3 * e}) : Tensor())),
      out_proj(register_module("out_proj", std::make_shared<Linear>(e, e, o.bias))),
      bias_k(register_parameter("bias_k", o.add_bias_kv ? empty({1, 1, e}) : Tensor())),
      bias_v(register_parameter("bias_v", o.add_bias_kv ? empty({1, 1, e}) : Tensor())) {
  reset_parameters();
}

void MultiheadAttention::reset_parameters() {
  for (Tensor* w : {&in_proj_weight, &q_proj_weight, &k_proj_weight, &v_proj_weight})
    if (w->defined()) init::xavier_uniform_(*w);
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
  if (out_proj->bias.defined()) init::zeros_(out_proj->bias);
  for (Tensor* b : {&bias_k, &bias_v})
    if (b->defined()) init::xavier_normal_(*b);
}

std::pair<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                                      const Tensor& value,
                                                      const Tensor& key_padding_mask,
                                                      bool need_weights, const Tensor& attn_mask,
                                                      bool average_attn_weights, bool is_causal) {
  const char* name = "nn.MultiheadAttention";
  EMBER_CHECK_TYPE(query.defined() && key.defined() && value.defined(),
                   "[{}] undefined tensor argument: query, key and value are required", name);
  const bool batched = query.dim() == 3;
  EMBER_CHECK(
      (query.dim() == 2 || batched) && key.dim() == query.dim() && value.dim() == query.dim(),
      "[{}] query, key and value must all be 3-d (batched) or 2-d (unbatched): got shapes "
      "{}, {} and {}",
      name, shape_str(query.sizes()), shape_str(key.sizes()), shape_str(value.sizes()));
  EMBER_CHECK(query.size(-1) == embed_dim && key.size(-1) == kdim && value.size(-1) == vdim,
              "[{}] query, key and value must end in embed_dim={}, kdim={} and vdim={}: got "
              "shapes {}, {} and {}",
              name, embed_dim, kdim, vdim, shape_str(query.sizes()), shape_str(key.sizes()),
              shape_str(value.sizes()));
  EMBER_CHECK(!is_causal || attn_mask.defined(),
              "[{}] is_causal is a hint that attn_mask is the causal mask: pass the mask too "
              "(got is_causal=true without attn_mask)",
              name);
  // Work in [N, L, E].
  auto to_nle = [&](const Tensor& t) {
    if (!batched) return t.unsqueeze(0);
    return batch_first ? t : t.transpose(0, 1);
  };
  const Tensor q_in = to_nle(query), k_in = to_nle(key), v_in = to_nle(value);
  const int64_t n = q_in.size(0), l = q_in.size(1), s = k_in.size(1);
  EMBER_CHECK(k_in.size(0) == n && v_in.size(0) == n && v_in.size(1) == s,
              "[{}] key and value must share the batch size of query and each other's length: "
              "got shapes {}, {} and {}",
              name, shape_str(query.sizes()), shape_str(key.sizes()), shape_str(value.sizes()));
  const DType dt = query.dtype();

  // Masks, merged into one additive [N or 1, H or 1, L, S] as PyTorch merges them.
  Tensor mask;
  if (attn_mask.defined()) {
    const bool per_head = attn_mask.dim() == 3;
    EMBER_CHECK((attn_mask.dim() == 2 && attn_mask.sizes() == Shape({l, s})) ||
                    (per_head && attn_mask.sizes() == Shape({n * num_heads, l, s})),
                "[{}] attn_mask must have shape [L, S] = [{}, {}] or [N * num_heads, L, S] = "
                "[{}, {}, {}]: got {}",
                name, l, s, n * num_heads, l, s, shape_str(attn_mask.sizes()));
    mask = additive(attn_mask, dt, "attn_mask");
    if (per_head) mask = mask.view({n, num_heads, l, s});
  }
  if (key_padding_mask.defined()) {
    const Shape want = batched ? Shape({n, s}) : Shape({s});
    EMBER_CHECK(key_padding_mask.sizes() == want,
                "[{}] key_padding_mask must have shape {} ([N, S], or [S] unbatched): got {}", name,
                shape_str(want), shape_str(key_padding_mask.sizes()));
    const Tensor kpm = additive(key_padding_mask, dt, "key_padding_mask").reshape({n, 1, 1, s});
    mask = mask.defined() ? add(mask, kpm) : kpm;
  }
  const bool causal_only = is_causal && !key_padding_mask.defined() && !need_weights &&
                           !bias_k.defined() && !add_zero_attn;  // no extra keys to attend

  // Projections, split into heads: [N, H, L or S, head_dim].
  // Note [One projection for self-attention]
  // When query, key and value are one tensor (self-attention, as in every Transformer layer),
  // the three projections are one linear through the whole in_proj_weight [3E, E], as PyTorch
  // does: one product forward and two backward instead of three and six, and no gradient of a
  // narrowed weight to zero-fill and add. unbind splits the result with one autograd node, so
  // the three gradients are stacked straight back into the product's layout.
  Tensor q, k, v;
  if (in_proj_weight.defined() && query.is_same(key) && key.is_same(value)) {
    const std::vector<Tensor> qkv =
        unbind(linear(q_in, in_proj_weight, in_proj_bias).view({n, l, 3, num_heads, head_dim}), 2);
    q = qkv[0].transpose(1, 2);
    k = qkv[1].transpose(1, 2);
    v = qkv[2].transpose(1, 2);
  } else {
    const Tensor* separate[] = {&q_proj_weight, &k_proj_weight, &v_proj_weight};
    auto project = [&](const Tensor& x, int64_t part, int64_t len) {
      const Tensor w = in_proj_weight.defined()
                           ? in_proj_weight.narrow(0, part * embed_dim, embed_dim)
                           : *separate[part];
      const Tensor b =
          in_proj_bias.defined() ? in_proj_bias.narrow(0, part * embed_dim, embed_dim) : Tensor();
      return linear(x, w, b).view({n, len, num_heads, head_dim}).transpose(1, 2);
    };
    q = project(q_in, 0, l);
    k = project(k_in, 1, s);
    v = project(v_in, 2, s);
  }
  // Note [Extra keys of MultiheadAttention]
  // add_bias_kv appends the learned bias_k and bias_v as one more key and value, add_zero_attn a
  // zero key and value after that (both in that order, as PyTorch's): every query may attend to
  // them, so the masks get as many columns of 0 (attended) at the end.
  const int64_t extra = (bias_k.defined() ? 1 : 0) + (add_zero_attn ? 1 : 0);
  if (bias_k.defined()) {
    const Shape one = {n, num_heads, 1, head_dim};
    k = cat({k, bias_k.view({1, num_heads, 1, head_dim}).expand(one)}, 2);
    v = cat({v, bias_v.view({1, num_heads, 1, head_dim}).expand(one)}, 2);
  }
  if (add_zero_attn) {
    k = cat({k, zeros({n, num_heads, 1, head_dim}, {k.dtype(), k.device()})}, 2);
    v = cat({v, zeros({n, num_heads, 1, head_dim}, {v.dtype(), v.device()})}, 2);
  }
  if (extra > 0 && mask.defined()) {
    const int64_t after[] = {0, extra};
    mask = pad(mask, IntList(after, 2));
  }
  const double p = is_training() ? dropout : 0.0;

  Tensor out, weights;
  if (need_weights) {
    // The weights are asked for, so they are materialized, as PyTorch does here.
    Tensor scores =
        matmul(mul(q, 1.0 / std::sqrt(static_cast<double>(head_dim))), k.transpose(-2, -1));
    if (mask.defined()) scores = add(scores, mask);
    weights = softmax(scores, -1);
    if (p > 0.0) weights = ember::dropout(weights, p, /*training=*/true);
    out = matmul(weights, v);
    if (average_attn_weights) weights = mean(weights, {1});
    if (!batched) weights = weights.squeeze(0);
  } else {
    out = scaled_dot_product_attention(q, k, v, causal_only ? Tensor() : mask, p, causal_only);
  }
  // [N, H, L, head_dim] -> [N, L, E], the output projection, the caller's layout.
  out = (*out_proj)(out.transpose(1, 2).reshape({n, l, embed_dim}));
  if (!batched) return {out.squeeze(0), weights};
  return {batch_first ? out : out.transpose(0, 1), weights};
}

Tensor MultiheadAttention::forward(const Tensor& x) {
  return forward(x, x, x, {}, /*need_weights=*/false).first;
}

std::string MultiheadAttention::extra_repr() const {
  return fmt::format("embed_dim={}, num_heads={}, dropout={}, bias={}, batch_first={}", embed_dim,
                     num_heads, dropout, in_proj_bias.defined(), batch_first);
}

// ---- Transformer layers -------------------------------------------------------------------

namespace {

void check_layer(const char* name, int64_t d_model, int64_t nhead,
                 const TransformerLayerOptions& o) {
  EMBER_CHECK(o.activation == "relu" || o.activation == "gelu",
              "[{}] activation must be \"relu\" or \"gelu\": got \"{}\"", name, o.activation);
  EMBER_CHECK(d_model > 0 && nhead > 0 && o.dim_feedforward > 0,
              "[{}] d_model, nhead and dim_feedforward must be positive: got {}, {} and {}", name,
              d_model, nhead, o.dim_feedforward);
}

MultiheadAttentionOptions attention_options(const TransformerLayerOptions& o) {
  MultiheadAttentionOptions a;
  a.dropout = o.dropout;
  a.bias = o.bias;
  a.batch_first = o.batch_first;
  return a;
}

// The feed-forward block linear2(dropout(act(linear1(x)))); the activation is linear1's own
// once nn::fuse_for_inference merged it there (Note [Fused linear layers] in core/ops/nn.cpp).
Tensor feed_forward(Linear& linear1, Dropout& dropout, Linear& linear2,
                    const std::string& activation, const Tensor& x) {
  Tensor h = linear1(x);
  if (linear1.fused_activation() == Activation::None) {
    h = activation == "gelu" ? gelu(h) : relu(h);
  }
  return linear2(dropout(h));
}

}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(int64_t d, int64_t h, TransformerLayerOptions o)
    : Module("TransformerEncoderLayer"), d_model(d), nhead(h), options(std::move(o)) {
  check_layer("nn.TransformerEncoderLayer", d, h, options);
  // Registration order is PyTorch's, so state_dict() lists the same names in the same order.
  self_attn = register_module(
      "self_attn", std::make_shared<MultiheadAttention>(d, h, attention_options(options)));
  linear1 = register_module("linear1",
                            std::make_shared<Linear>(d, options.dim_feedforward, options.bias));
  dropout = register_module("dropout", std::make_shared<Dropout>(options.dropout));
  linear2 = register_module("linear2",
                            std::make_shared<Linear>(options.dim_feedforward, d, options.bias));
  norm1 = register_module(
      "norm1", std::make_shared<LayerNorm>(std::vector<int64_t>{d}, options.layer_norm_eps));
  norm2 = register_module(
      "norm2", std::make_shared<LayerNorm>(std::vector<int64_t>{d}, options.layer_norm_eps));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(options.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(options.dropout));
  if (!options.bias) {
    // PyTorch's LayerNorm(bias=False) has a weight only.
    for (auto& norm : {norm1, norm2}) norm->bias = Tensor();
  }
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const Tensor& src_mask,
                                        const Tensor& src_key_padding_mask, bool is_causal) {
  auto sa = [&](const Tensor& x) {
    return (*dropout1)(self_attn
                           ->forward(x, x, x, src_key_padding_mask, /*need_weights=*/false,
                                     src_mask, true, is_causal)
                           .first);
  };
  auto ff = [&](const Tensor& x) {
    return (*dropout2)(feed_forward(*linear1, *dropout, *linear2, options.activation, x));
  };
  Tensor x = src;
  if (options.norm_first) {
    x = add(x, sa((*norm1)(x)));
    return add(x, ff((*norm2)(x)));
  }
  x = (*norm1)(add(x, sa(x)));
  return (*norm2)(add(x, ff(x)));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src) {
  return forward(src, Tensor());
}

std::string TransformerEncoderLayer::extra_repr() const {
  return fmt::format("d_model={}, nhead={}, dim_feedforward={}, activation={}, norm_first={}",
                     d_model, nhead, options.dim_feedforward, options.activation,
                     options.norm_first);
}

TransformerDecoderLayer::TransformerDecoderLayer(int64_t d, int64_t h, TransformerLayerOptions o)
    : Module("TransformerDecoderLayer"), d_model(d), nhead(h), options(std::move(o)) {
  check_layer("nn.TransformerDecoderLayer", d, h, options);
  self_attn = register_module(
      "self_attn", std::make_shared<MultiheadAttention>(d, h, attention_options(options)));
  multihead_attn = register_module(
      "multihead_attn", std::make_shared<MultiheadAttention>(d, h, attention_options(options)));
  linear1 = register_module("linear1",
                            std::make_shared<Linear>(d, options.dim_feedforward, options.bias));
  dropout = register_module("dropout", std::make_shared<Dropout>(options.dropout));
  linear2 = register_module("linear2",
                            std::make_shared<Linear>(options.dim_feedforward, d, options.bias));
  auto make_norm = [&] {
    return std::make_shared<LayerNorm>(std::vector<int64_t>{d}, options.layer_norm_eps);
  };
  norm1 = register_module("norm1", make_norm());
  norm2 = register_module("norm2", make_norm());
  norm3 = register_module("norm3", make_norm());
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(options.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(options.dropout));
  dropout3 = register_module("dropout3", std::make_shared<Dropout>(options.dropout));
  if (!options.bias) {
    for (auto& norm : {norm1, norm2, norm3}) norm->bias = Tensor();
  }
}

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory,
                                        const Tensor& tgt_mask, const Tensor& memory_mask,
                                        const Tensor& tgt_key_padding_mask,
                                        const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                        bool memory_is_causal) {
  auto sa = [&](const Tensor& x) {
    return (*dropout1)(self_attn
                           ->forward(x, x, x, tgt_key_padding_mask, /*need_weights=*/false,
                                     tgt_mask, true, tgt_is_causal)
                           .first);
  };
  auto mha = [&](const Tensor& x) {
    return (*dropout2)(multihead_attn
                           ->forward(x, memory, memory, memory_key_padding_mask,
                                     /*need_weights=*/false, memory_mask, true, memory_is_causal)
                           .first);
  };
  auto ff = [&](const Tensor& x) {
    return (*dropout3)(feed_forward(*linear1, *dropout, *linear2, options.activation, x));
  };
  Tensor x = tgt;
  if (options.norm_first) {
    x = add(x, sa((*norm1)(x)));
    x = add(x, mha((*norm2)(x)));
    return add(x, ff((*norm3)(x)));
  }
  x = (*norm1)(add(x, sa(x)));
  x = (*norm2)(add(x, mha(x)));
  return (*norm3)(add(x, ff(x)));
}

std::string TransformerDecoderLayer::extra_repr() const {
  return fmt::format("d_model={}, nhead={}, dim_feedforward={}, activation={}, norm_first={}",
                     d_model, nhead, options.dim_feedforward, options.activation,
                     options.norm_first);
}

namespace {

// PyTorch deep-copies the layer: every copy starts from its parameters and its training mode.
template <class Layer>
std::shared_ptr<ModuleList> copies_of(const Layer& layer, int64_t n, const char* op) {
  EMBER_CHECK(n >= 1, "[{}] num_layers must be at least 1: got {}", op, n);
  auto list = std::make_shared<ModuleList>();
  const StateDict state = layer.state_dict();
  for (int64_t i = 0; i < n; ++i) {
    auto copy = std::make_shared<Layer>(layer.d_model, layer.nhead, layer.options);
    copy->load_state_dict(state);
    copy->train(layer.is_training());
    list->push_back(copy);
  }
  return list;
}

}  // namespace

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& layer, int64_t n,
                                       std::shared_ptr<LayerNorm> final_norm)
    : Module("TransformerEncoder"), num_layers(n) {
  layers = register_module("layers", copies_of(layer, n, "nn.TransformerEncoder"));
  if (final_norm) norm = register_module("norm", std::move(final_norm));
}

Tensor TransformerEncoder::forward(const Tensor& src, const Tensor& mask,
                                   const Tensor& src_key_padding_mask, bool is_causal) {
  Tensor x = src;
  for (const auto& m : *layers) {
    x = static_cast<TransformerEncoderLayer&>(*m).forward(x, mask, src_key_padding_mask, is_causal);
  }
  return norm ? (*norm)(x) : x;
}

Tensor TransformerEncoder::forward(const Tensor& src) {
  return forward(src, Tensor());
}

TransformerDecoder::TransformerDecoder(const TransformerDecoderLayer& layer, int64_t n,
                                       std::shared_ptr<LayerNorm> final_norm)
    : Module("TransformerDecoder"), num_layers(n) {
  layers = register_module("layers", copies_of(layer, n, "nn.TransformerDecoder"));
  if (final_norm) norm = register_module("norm", std::move(final_norm));
}

Tensor TransformerDecoder::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                   const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                   const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                   bool memory_is_causal) {
  Tensor x = tgt;
  for (const auto& m : *layers) {
    x = static_cast<TransformerDecoderLayer&>(*m).forward(
        x, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
        tgt_is_causal, memory_is_causal);
  }
  return norm ? (*norm)(x) : x;
}

namespace {

std::shared_ptr<LayerNorm> stack_norm(int64_t d_model, const TransformerLayerOptions& o) {
  auto norm = std::make_shared<LayerNorm>(std::vector<int64_t>{d_model}, o.layer_norm_eps);
  if (!o.bias) norm->bias = Tensor();
  return norm;
}

}  // namespace

Transformer::Transformer(int64_t d, int64_t h, TransformerOptions o)
    : Module("Transformer"), d_model(d), nhead(h), batch_first(o.batch_first) {
  const TransformerLayerOptions& layer = o;
  encoder = register_module(
      "encoder", std::make_shared<TransformerEncoder>(TransformerEncoderLayer(d, h, layer),
                                                      o.num_encoder_layers, stack_norm(d, layer)));
  decoder = register_module(
      "decoder", std::make_shared<TransformerDecoder>(TransformerDecoderLayer(d, h, layer),
                                                      o.num_decoder_layers, stack_norm(d, layer)));
  // PyTorch's _reset_parameters: every parameter of two or more dims, Xavier-uniform.
  for (auto& [name, p] : named_parameters()) {
    if (p.dim() > 1) init::xavier_uniform_(p);
  }
}

Tensor Transformer::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask,
                            const Tensor& tgt_mask, const Tensor& memory_mask,
                            const Tensor& src_key_padding_mask, const Tensor& tgt_key_padding_mask,
                            const Tensor& memory_key_padding_mask, bool src_is_causal,
                            bool tgt_is_causal, bool memory_is_causal) {
  const int64_t batch_dim = batch_first ? 0 : 1;
  EMBER_CHECK(src.dim() != 3 || tgt.dim() != 3 || src.size(batch_dim) == tgt.size(batch_dim),
              "[nn.Transformer] the batch number of src and tgt must be equal: {} and {} (dim {}, "
              "batch_first={})",
              src.dim() == 3 ? src.size(batch_dim) : 0, tgt.dim() == 3 ? tgt.size(batch_dim) : 0,
              batch_dim, batch_first);
  EMBER_CHECK(
      src.dim() >= 1 && tgt.dim() >= 1 && src.size(-1) == d_model && tgt.size(-1) == d_model,
      "[nn.Transformer] the feature number of src and tgt must be equal to d_model: "
      "src {}, tgt {}, d_model {}",
      src.sizes(), tgt.sizes(), d_model);
  const Tensor memory = encoder->forward(src, src_mask, src_key_padding_mask, src_is_causal);
  return decoder->forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                          memory_key_padding_mask, tgt_is_causal, memory_is_causal);
}

Tensor Transformer::generate_square_subsequent_mask(int64_t size, TensorOptions options) {
  EMBER_CHECK(size >= 0,
              "[nn.Transformer.generate_square_subsequent_mask] size must be >= 0: "
              "got {}",
              size);
  return triu(full({size, size}, -std::numeric_limits<double>::infinity(), options), 1);
}

}  // namespace ember::nn
