// nn::fuse_for_inference: batch normalisation folded into the convolution or linear layer before
// it, and the activation after a convolution or linear layer merged into it, for eval.
#include "ember/nn/fuse.h"

#include <algorithm>
#include <map>

#include "ember/autograd/grad_mode.h"
#include "ember/dispatch/runtime.h"
#include "ember/nn/layers.h"
#include "ember/nn/transformer.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/reduce.h"
#include "ember/util/error.h"

namespace ember::nn {

// Note [Folding batch norm for inference]
// In eval mode BatchNorm computes y = (x - mean) / sqrt(var + eps) * gamma + beta with fixed
// running statistics: a per-channel scale s = gamma / sqrt(var + eps) and shift. When x is the
// output of a convolution or linear layer with weight W and bias b, the pair equals that layer
// with W' = s * W (scaled along its output channels) and b' = (b - mean) * s + beta, so the
// batch norm's pass over the activations disappears (PyTorch's fuse_conv_bn_eval does the same).
// Ember modules call their children from C++ forward() code, so which layer feeds which batch
// norm is not written down anywhere: fuse_for_inference runs the model once on an example with
// forward hooks on every Conv2d, Linear and BatchNorm and pairs a batch norm with the layer whose
// output tensor is its input. A pair is folded only if both modules ran exactly once, the batch
// norm keeps running statistics, the channel counts agree and (for Linear) the output is [N, C].
// What the hooks cannot see is whether the layer's output also went somewhere else; folding would
// change what that other consumer reads. So the fused model is run on the example again and its
// output compared with the unfused one: a difference beyond float32 rounding undoes every change
// and throws (the allocator's cache is emptied first: the float64 folds' freed temporaries would
// otherwise stay cached through that forward, the fusion's peak, about 65 MiB for ResNet-50).
// The scale and shift are computed in float64 and the new values are copied into the
// existing parameter tensors, so optimizers and state dicts keep seeing the same tensors (a layer
// without a bias gets one). A folded batch norm returns its input; in training mode it throws,
// since its statistics now live in the layer before it.
// A ReLU module whose input is the output of a Conv2d (directly, or through a batch norm just
// folded into it) is merged the same way: the convolution runs conv2d_relu, one oneDNN
// primitive with the ReLU as a post-op (Note [Fused convolution and ReLU] in core/ops/conv.cpp),
// and the ReLU returns its input. A ReLU or GELU module whose input is a Linear's output is
// merged into that Linear, which then runs fused_linear (Note [Fused linear layers] in
// core/ops/nn.cpp). Only modules are seen (a functional relu() in a forward is not), and only
// one called once per forward; the exception is the feed-forward block of Ember's Transformer
// layers, whose activation is functional but known: it moves into the layer's linear1. So is
// the end of a residual block that says so (a ResidualTail: Ember's ResNet blocks): once its
// last batch norm is folded, relu(conv(...) + shortcut) runs as one conv2d_add_relu (Note
// [Convolution, residual add and ReLU] in core/ops/conv.cpp). The same check of the output
// covers all of them.

namespace {

// What a hook keeps of a tensor to recognise it later: its storage (whose id is never reused)
// and the view into it, not the tensor, so the example's activations are freed as the forward
// goes (holding them raised the peak memory of fusing ResNet-50 by their whole size).
struct Seen {
  uint64_t storage = 0;  // 0: no tensor
  int64_t offset = 0;
  Shape sizes, strides;
  DType dtype = DType::Float32;
  Seen() = default;
  explicit Seen(const Tensor& t) {
    if (!t.defined()) return;
    storage = t.storage()->id();
    offset = t.storage_offset();
    sizes = t.sizes();
    strides = t.strides();
    dtype = t.dtype();
  }
  bool operator==(const Seen& o) const {
    return storage != 0 && storage == o.storage && offset == o.offset && sizes == o.sizes &&
           strides == o.strides && dtype == o.dtype;
  }
};

struct Call {
  std::string name;
  Module* module = nullptr;
  Seen input, output;
};

struct Saved {
  Tensor* weight;
  Tensor* bias;
  Tensor old_weight, old_bias;
  BatchNorm* bn;
};

// The Conv2d or Linear call whose output is `input`, looking through a batch norm folded into
// one.
const Call* layer_feeding(const std::vector<Call>& calls, const Seen& input,
                          const std::map<Module*, const Call*>& folded_into) {
  const auto is_layer = [](const Module* m) {
    return dynamic_cast<const Conv2d*>(m) != nullptr || dynamic_cast<const Linear*>(m) != nullptr;
  };
  for (const Call& p : calls) {
    if (!(p.output == input)) continue;
    if (is_layer(p.module)) return &p;
    const auto it = folded_into.find(p.module);
    if (it != folded_into.end() && is_layer(it->second->module)) return it->second;
  }
  return nullptr;
}

// The activation fused_linear applies for a ReLU or GELU module.
Activation activation_of(const Module& m) {
  if (dynamic_cast<const ReLU*>(&m)) return Activation::ReLU;
  return static_cast<const GELU&>(m).approximate == "tanh" ? Activation::GELUTanh
                                                           : Activation::GELU;
}

// The feed-forward linear1 of a Transformer layer and the activation its forward applies after
// it, or {nullptr, None} for any other module.
std::pair<Linear*, Activation> feed_forward_of(Module& m) {
  const auto pick = [](const std::shared_ptr<Linear>& linear1, const std::string& act) {
    return std::make_pair(linear1.get(), act == "gelu" ? Activation::GELU : Activation::ReLU);
  };
  if (auto* enc = dynamic_cast<TransformerEncoderLayer*>(&m)) {
    return pick(enc->linear1, enc->options.activation);
  }
  if (auto* dec = dynamic_cast<TransformerDecoderLayer*>(&m)) {
    return pick(dec->linear1, dec->options.activation);
  }
  return {nullptr, Activation::None};
}

// The scale and shift a batch norm applies per channel in eval mode, in float64.
std::pair<Tensor, Tensor> scale_and_shift(const BatchNorm& bn) {
  const Tensor var = bn.running_var.to(DType::Float64), mean = bn.running_mean.to(DType::Float64);
  Tensor scale = div(ones_like(var), sqrt(add(var, bn.options.eps)));
  if (bn.weight.defined()) scale = mul(scale, bn.weight.to(DType::Float64));
  Tensor shift = neg(mul(mean, scale));
  if (bn.bias.defined()) shift = add(shift, bn.bias.to(DType::Float64));
  return {scale, shift};
}

}  // namespace

FuseReport fuse_for_inference(Module& model, const Tensor& example) {
  EMBER_CHECK(example.defined(),
              "[nn.fuse_for_inference] expected an example input: got undefined");
  model.eval();
  std::vector<Call> calls;
  std::map<Module*, int> times_called;
  Tensor reference;
  {
    // The hooks live for this one forward, which may throw.
    struct Hooks {
      std::vector<HookHandle> handles;
      ~Hooks() {
        for (HookHandle& h : handles) h.remove();
      }
    } hooks;
    for (const auto& [name, m] : model.named_modules()) {
      Module* mod = m.get();
      if (!dynamic_cast<Conv2d*>(mod) && !dynamic_cast<Linear*>(mod) &&
          !dynamic_cast<BatchNorm*>(mod) && !dynamic_cast<ReLU*>(mod) &&
          !dynamic_cast<GELU*>(mod)) {
        continue;
      }
      hooks.handles.push_back(mod->register_forward_hook(
          [&calls, &times_called, name](Module& self, const Tensor& in, const Tensor& out) {
            ++times_called[&self];
            calls.push_back({name, &self, Seen(in), Seen(out)});
          }));
    }
    autograd::NoGradGuard no_grad;
    reference = model(example);
  }

  FuseReport report;
  std::vector<Saved> saved;
  std::map<Module*, const Call*> folded_into;  // batch norm -> the call of its layer
  autograd::NoGradGuard no_grad;
  for (const Call& c : calls) {
    auto* bn = dynamic_cast<BatchNorm*>(c.module);
    if (!bn || bn->folded() || times_called[bn] != 1 || !bn->running_mean.defined()) continue;
    const auto producer = std::find_if(calls.begin(), calls.end(), [&](const Call& p) {
      return p.module != c.module && p.output == c.input;
    });
    if (producer == calls.end() || times_called[producer->module] != 1) continue;
    Tensor* weight = nullptr;
    Tensor* bias = nullptr;
    if (auto* conv = dynamic_cast<Conv2d*>(producer->module)) {
      weight = &conv->weight;
      bias = &conv->bias;
    } else if (auto* lin = dynamic_cast<Linear*>(producer->module);
               lin && c.input.sizes.size() == 2) {
      weight = &lin->weight;
      bias = &lin->bias;
    }
    if (!weight || weight->size(0) != bn->num_features) continue;

    const auto [scale, shift] = scale_and_shift(*bn);
    std::vector<int64_t> per_out(static_cast<size_t>(weight->dim()), 1);
    per_out[0] = bn->num_features;
    saved.push_back(
        {weight, bias, weight->clone(), bias->defined() ? bias->clone() : Tensor(), bn});
    const Tensor new_weight = mul(weight->to(DType::Float64), scale.reshape(per_out));
    const Tensor old_bias = bias->defined()
                                ? bias->to(DType::Float64)
                                : zeros({bn->num_features}, {DType::Float64, weight->device()});
    const Tensor new_bias = add(mul(old_bias, scale), shift);
    weight->copy_(new_weight.to(weight->dtype()));
    if (bias->defined()) {
      bias->copy_(new_bias.to(bias->dtype()));
    } else {
      *bias =
          new_bias.to(weight->dtype()).to(weight->device()).requires_grad_(weight->requires_grad());
    }
    bn->set_folded(true);
    folded_into[bn] = &*producer;
    report.folded.emplace_back(producer->name, c.name);
  }
  std::vector<std::pair<Conv2d*, ReLU*>> merged;
  std::vector<std::pair<Linear*, Foldable*>> merged_linear;  // Foldable null: a Transformer's
  for (const Call& c : calls) {
    auto* relu = dynamic_cast<ReLU*>(c.module);
    auto* gelu = dynamic_cast<GELU*>(c.module);
    Foldable* act = relu != nullptr ? static_cast<Foldable*>(relu) : gelu;
    if (!act || act->folded() || times_called[c.module] != 1) continue;
    const Call* producer = layer_feeding(calls, c.input, folded_into);
    if (!producer || times_called[producer->module] != 1) continue;
    if (auto* conv = dynamic_cast<Conv2d*>(producer->module)) {
      if (!relu || conv->fused_relu()) continue;  // only conv2d_relu exists
      conv->set_fused_relu(true);
      merged.emplace_back(conv, relu);
      report.relus.emplace_back(producer->name, c.name);
    } else {
      auto* linear = static_cast<Linear*>(producer->module);
      if (linear->fused_activation() != Activation::None) continue;
      linear->set_fused_activation(activation_of(*c.module));
      merged_linear.emplace_back(linear, act);
      report.activations.emplace_back(producer->name, c.name);
    }
    act->set_folded(true);
  }
  for (const auto& [name, m] : model.named_modules()) {
    const auto [linear1, activation] = feed_forward_of(*m);
    if (!linear1 || linear1->fused_activation() != Activation::None) continue;
    linear1->set_fused_activation(activation);
    merged_linear.emplace_back(linear1, nullptr);
    report.activations.emplace_back(name.empty() ? "linear1" : name + ".linear1", name);
  }
  std::vector<ResidualTail*> tails;
  for (const auto& [name, m] : model.named_modules()) {
    auto* tail = dynamic_cast<ResidualTail*>(m.get());
    if (!tail) continue;
    const std::string conv = tail->fuse_residual_tail(true);
    if (conv.empty()) continue;
    tails.push_back(tail);
    report.residuals.emplace_back(name.empty() ? conv : name + "." + conv, name);
  }
  if (report.folded.empty() && report.relus.empty() && report.activations.empty() &&
      report.residuals.empty()) {
    return report;
  }

  // Undo everything if the fused model computes something else (Note [Folding batch norm for
  // inference]): a folded layer's output had another consumer.
  const auto undo = [&] {
    for (Saved& s : saved) {
      s.weight->copy_(s.old_weight);
      if (s.old_bias.defined()) {
        s.bias->copy_(s.old_bias);
      } else {
        *s.bias = Tensor();
      }
      s.bn->set_folded(false);
    }
    for (auto& [conv, relu] : merged) {
      conv->set_fused_relu(false);
      relu->set_folded(false);
    }
    for (auto& [linear, act] : merged_linear) {
      linear->set_fused_activation(Activation::None);
      if (act) act->set_folded(false);
    }
    for (ResidualTail* tail : tails) tail->fuse_residual_tail(false);
  };
  // The float64 folds' temporaries are free now but cached; hand them back before the check's
  // forward, the peak of the fusion (Note [Folding batch norm for inference]).
  if (!saved.empty()) empty_cache(saved.front().weight->device());
  Tensor fused;
  try {
    fused = model(example);
  } catch (...) {
    undo();
    throw;
  }
  const Tensor ref64 = reference.to(DType::Float64), fused64 = fused.to(DType::Float64);
  const double scale = std::max(1.0, max(abs(ref64)).item());
  report.max_abs_difference = max(abs(sub(fused64, ref64))).item();
  // float32 rounding of the folded weights, relative to the output's magnitude.
  const double tolerance = 1e-3 * scale;
  const bool same = report.max_abs_difference <= tolerance;
  if (!same) undo();
  EMBER_CHECK(same,
              "[nn.fuse_for_inference] folding {} batch norm(s), {} activation(s) and {} "
              "residual block end(s) changed the model's output by {} (more than {}): a folded "
              "layer's output is also used elsewhere; nothing was changed",
              report.folded.size(), report.relus.size() + report.activations.size(),
              report.residuals.size(), report.max_abs_difference, tolerance);
  return report;
}

}  // namespace ember::nn
