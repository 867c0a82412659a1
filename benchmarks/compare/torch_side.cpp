// The PyTorch side of the comparison: `compare_torch <workload> <threads>` runs the libtorch
// equivalent of one workload of workloads.h (same shapes, layers, optimizer settings, seeds and
// thread count as ember_side.cpp) and prints its samples.
#include <zlib.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include <c10/core/InferenceMode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "benchmarks/compare/workloads.h"

namespace {

using compare::sample;
using compare::Workload;
namespace nn = torch::nn;

/** One SGD step of `model` on a fixed batch. */
template <typename M>
void train_step(M& model, torch::optim::Optimizer& opt, const torch::Tensor& x,
                const torch::Tensor& y) {
  const torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
  opt.zero_grad();
  loss.backward();
  opt.step();
}

/** Linear layers with ReLU between them, as ember::models::mlp. */
nn::Sequential mlp(const std::vector<int64_t>& sizes) {
  nn::Sequential net;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    if (i > 0) net->push_back(nn::ReLU());
    net->push_back(nn::Linear(sizes[i], sizes[i + 1]));
  }
  return net;
}

/** LeNet-5 for 1x28x28 inputs, as ember::models::lenet5. */
nn::Sequential lenet5() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 6, 5).padding(2)), nn::ReLU(),
                        nn::MaxPool2d(2), nn::Conv2d(6, 16, 5), nn::ReLU(), nn::MaxPool2d(2),
                        nn::Flatten(), nn::Linear(16 * 5 * 5, 120), nn::ReLU(), nn::Linear(120, 84),
                        nn::ReLU(), nn::Linear(84, 10));
}

/** A pre-norm GELU Transformer layer, batch first, as PyTorch's TransformerEncoderLayer(
 *  norm_first=True, batch_first=True) computes it in training (F.multi_head_attention_forward:
 *  one packed input projection, scaled_dot_product_attention, the output projection), without
 *  dropout; ember::nn::TransformerEncoderLayer with the same options. */
struct PreNormLayerImpl : nn::Module {
  PreNormLayerImpl(int64_t dim, int64_t heads, int64_t ff)
      : heads(heads),
        norm1(register_module("norm1", nn::LayerNorm(nn::LayerNormOptions({dim})))),
        in_proj(register_module("in_proj", nn::Linear(dim, 3 * dim))),
        out_proj(register_module("out_proj", nn::Linear(dim, dim))),
        norm2(register_module("norm2", nn::LayerNorm(nn::LayerNormOptions({dim})))),
        linear1(register_module("linear1", nn::Linear(dim, ff))),
        linear2(register_module("linear2", nn::Linear(ff, dim))) {}
  torch::Tensor forward(const torch::Tensor& x, bool causal) {
    const int64_t n = x.size(0), t = x.size(1), d = x.size(2);
    const torch::Tensor qkv = in_proj->forward(norm1->forward(x))
                                  .view({n, t, 3, heads, d / heads})
                                  .permute({2, 0, 3, 1, 4});
    const torch::Tensor a =
        torch::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], {}, 0.0, causal);
    const torch::Tensor h = x + out_proj->forward(a.transpose(1, 2).reshape({n, t, d}));
    return h + linear2->forward(torch::gelu(linear1->forward(norm2->forward(h))));
  }
  int64_t heads;
  nn::LayerNorm norm1;
  nn::Linear in_proj, out_proj;
  nn::LayerNorm norm2;
  nn::Linear linear1, linear2;
};
TORCH_MODULE(PreNormLayer);

/** `depth` pre-norm layers and a final LayerNorm. */
struct EncoderImpl : nn::Module {
  EncoderImpl(int64_t dim, int64_t heads, int64_t ff, int64_t depth)
      : norm(register_module("norm", nn::LayerNorm(nn::LayerNormOptions({dim})))) {
    for (int64_t i = 0; i < depth; ++i) {
      layers.push_back(register_module("layer" + std::to_string(i), PreNormLayer(dim, heads, ff)));
    }
  }
  torch::Tensor forward(torch::Tensor x, bool causal) {
    for (PreNormLayer& l : layers) x = l->forward(x, causal);
    return norm->forward(x);
  }
  std::vector<PreNormLayer> layers;
  nn::LayerNorm norm;
};
TORCH_MODULE(Encoder);

/** ember::models::vit with its default sizes: 4x4 patches of 28x28 images, width 64, 4 layers. */
struct VitImpl : nn::Module {
  VitImpl()
      : conv_proj(register_module("conv_proj", nn::Conv2d(nn::Conv2dOptions(1, 64, 4).stride(4)))),
        class_token(register_parameter("class_token", torch::zeros({1, 1, 64}))),
        pos_embedding(register_parameter("pos_embedding", torch::randn({1, 50, 64}) * 0.02)),
        encoder(register_module("encoder", Encoder(64, 4, 128, 4))),
        head(register_module("head", nn::Linear(64, 10))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    const torch::Tensor p = conv_proj->forward(x).flatten(2).transpose(1, 2);
    const torch::Tensor t = torch::cat({class_token.expand({x.size(0), 1, 64}), p}, 1);
    return head->forward(encoder->forward(t + pos_embedding, false).select(1, 0));
  }
  nn::Conv2d conv_proj;
  torch::Tensor class_token, pos_embedding;
  Encoder encoder;
  nn::Linear head;
};
TORCH_MODULE(Vit);

/** ember::models::gpt with its default sizes (width 128, 4 causal layers), dropout 0. */
struct GptImpl : nn::Module {
  GptImpl(int64_t vocab, int64_t block)
      : tok(register_module("tok", nn::Embedding(vocab, 128))),
        pos(register_module("pos", nn::Embedding(block, 128))),
        blocks(register_module("blocks", Encoder(128, 4, 512, 4))),
        lm_head(register_module("lm_head", nn::Linear(nn::LinearOptions(128, vocab).bias(false)))) {
  }
  torch::Tensor forward(const torch::Tensor& idx) {
    const torch::Tensor x =
        tok->forward(idx) + pos->forward(torch::arange(idx.size(1))).unsqueeze(0);
    return lm_head->forward(blocks->forward(x, true));
  }
  nn::Embedding tok, pos;
  Encoder blocks;
  nn::Linear lm_head;
};
TORCH_MODULE(Gpt);

/** A convolution without bias and the batch norm after it, as ember's Conv2d and BatchNorm2d in
 *  its ResNets; fold() moves the batch norm into the convolution (Note [Inference workloads]). */
struct ConvBnImpl : nn::Module {
  ConvBnImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding)
      : conv(register_module(
            "conv",
            nn::Conv2d(
                nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(false)))),
        bn(register_module("bn", nn::BatchNorm2d(out))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    const torch::Tensor y = conv->forward(x);
    return folded ? y : bn->forward(y);
  }
  /** The eval-mode batch norm folded into the convolution: w * s and beta - mean * s, with
   *  s = gamma / sqrt(var + eps) per channel; the batch norm is skipped from then on. */
  void fold() {
    torch::NoGradGuard no_grad;
    const torch::Tensor scale = bn->weight / torch::sqrt(bn->running_var + bn->options.eps());
    conv->weight.mul_(scale.view({-1, 1, 1, 1}));
    conv->bias = bn->bias - bn->running_mean * scale;  // Conv2dImpl's forward reads the member
    folded = true;
  }
  nn::Conv2d conv;      ///< without bias until fold() gives it one
  nn::BatchNorm2d bn;   ///< skipped once folded
  bool folded = false;  ///< fold() ran
};
TORCH_MODULE(ConvBn);

/** The two-convolution residual block of ResNet-18, as ember::models::BasicBlock. */
struct BasicBlockImpl : nn::Module {
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride)
      : c1(register_module("c1", ConvBn(in, out, 3, stride, 1))),
        c2(register_module("c2", ConvBn(out, out, 3, 1, 1))) {
    if (stride != 1 || in != out) {
      downsample = register_module("downsample", ConvBn(in, out, 1, stride, 0));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    const torch::Tensor y = c2->forward(torch::relu(c1->forward(x)));
    return torch::relu(y + (downsample ? downsample->forward(x) : x));
  }
  ConvBn c1, c2;
  ConvBn downsample{nullptr};  ///< the projection, when the block changes shape
};
TORCH_MODULE(BasicBlock);

/** The 1x1-3x3-1x1 residual block of ResNet-50 (the stride on the 3x3), as
 *  ember::models::Bottleneck. */
struct BottleneckImpl : nn::Module {
  BottleneckImpl(int64_t in, int64_t width, int64_t stride)
      : c1(register_module("c1", ConvBn(in, width, 1, 1, 0))),
        c2(register_module("c2", ConvBn(width, width, 3, stride, 1))),
        c3(register_module("c3", ConvBn(width, 4 * width, 1, 1, 0))) {
    if (stride != 1 || in != 4 * width) {
      downsample = register_module("downsample", ConvBn(in, 4 * width, 1, stride, 0));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(c1->forward(x));
    y = c3->forward(torch::relu(c2->forward(y)));
    return torch::relu(y + (downsample ? downsample->forward(x) : x));
  }
  ConvBn c1, c2, c3;
  ConvBn downsample{nullptr};  ///< the projection, when the block changes shape
};
TORCH_MODULE(Bottleneck);

/** ResNet-18 (basic blocks) or ResNet-50 (bottlenecks) as torchvision builds it, as
 *  ember::models::resnet18 and resnet50. */
nn::Sequential resnet(bool bottleneck, int64_t num_classes) {
  nn::Sequential net(ConvBn(3, 64, 7, 2, 3), nn::ReLU(),
                     nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));
  const int64_t basic[4] = {2, 2, 2, 2}, deep[4] = {3, 4, 6, 3};
  int64_t in = 64;
  for (int s = 0; s < 4; ++s) {
    const int64_t planes = int64_t{64} << s;
    for (int64_t b = 0; b < (bottleneck ? deep : basic)[s]; ++b) {
      const int64_t stride = b == 0 && s > 0 ? 2 : 1;
      if (bottleneck) {
        net->push_back(Bottleneck(in, planes, stride));
        in = 4 * planes;
      } else {
        net->push_back(BasicBlock(in, planes, stride));
        in = planes;
      }
    }
  }
  net->push_back(nn::AdaptiveAvgPool2d(1));
  net->push_back(nn::Flatten());
  net->push_back(nn::Linear(in, num_classes));
  return net;
}

/** Every 4-d parameter of `model` in `format`, as module.to(memory_format=...). */
void to_format(nn::Module& model, torch::MemoryFormat format) {
  for (torch::Tensor& p : model.parameters()) {
    if (p.dim() == 4) p.set_data(p.data().contiguous(format));
  }
}

/** An IDX file (gzip or plain) as a uint8 tensor of its dimensions. */
torch::Tensor read_idx(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  unsigned char head[4];
  std::vector<int64_t> dims;
  bool ok = gzread(f, head, 4) == 4 && head[2] == 0x08;
  for (int d = 0; ok && d < head[3]; ++d) {
    unsigned char b[4];
    ok = gzread(f, b, 4) == 4;
    dims.push_back((int64_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3]);
  }
  torch::Tensor t = ok ? torch::empty(dims, torch::kUInt8) : torch::Tensor();
  ok = ok && gzread(f, t.data_ptr<uint8_t>(), static_cast<unsigned>(t.numel())) == t.numel();
  gzclose(f);
  if (!ok) throw std::runtime_error("not a uint8 IDX file: " + path);
  return t;
}

/** The Fashion-MNIST directory: $EMBER_DATA_DIR (or its fashion-mnist/), else Debian's. */
std::string fashion_mnist_dir() {
  const char* env = std::getenv("EMBER_DATA_DIR");
  std::vector<std::string> dirs;
  if (env && *env) dirs = {env, std::string(env) + "/fashion-mnist"};
  dirs.push_back("/usr/share/datasets/fashion-mnist");
  for (const std::string& d : dirs) {
    if (gzFile f = gzopen((d + "/train-images-idx3-ubyte.gz").c_str(), "rb")) {
      gzclose(f);
      return d;
    }
  }
  throw std::runtime_error("Fashion-MNIST not found (install dataset-fashion-mnist)");
}

/** One forward pass per unit in eval mode under inference mode. */
template <typename M>
std::vector<double> time_forward(const Workload& w, M& model, const torch::Tensor& x) {
  model->eval();
  c10::InferenceMode inference;
  return sample(w, [&] { torch::Tensor y = model->forward(x); });
}

/** An inference workload (Note [Inference workloads]); the tuned side folds the batch norms. */
std::vector<double> run_inference(const Workload& w, const compare::InferenceSpec& spec) {
  if (spec.model == "resnet18" || spec.model == "resnet50") {
    nn::Sequential model = resnet(spec.model == "resnet50", 1000);
    torch::Tensor x = torch::randn({spec.batch, 3, compare::kImageSide, compare::kImageSide});
    if (std::getenv("EMBER_COMPARE_TUNED")) {
      model->eval();
      for (const std::shared_ptr<nn::Module>& m : model->modules()) {
        if (auto pair = std::dynamic_pointer_cast<ConvBnImpl>(m)) pair->fold();
      }
    }
    if (spec.channels_last) {
      to_format(*model, torch::MemoryFormat::ChannelsLast);
      x = x.contiguous(torch::MemoryFormat::ChannelsLast);
    }
    return time_forward(w, model, x);
  }
  if (spec.model == "vit") {
    Vit model;
    return time_forward(w, model, torch::randn({spec.batch, 1, 28, 28}));
  }
  if (spec.model == "mlp") {
    nn::Sequential model =
        mlp({compare::kMlpIn, compare::kMlpHidden, compare::kMlpHidden, compare::kMlpOut});
    return time_forward(w, model, torch::randn({spec.batch, compare::kMlpIn}));
  }
  std::fprintf(stderr, "compare_torch: no model %s\n", spec.model.c_str());
  std::exit(2);
}

std::vector<double> run(const Workload& w) {
  const std::string name = w.name;
  if (const compare::InferenceSpec spec = compare::inference_spec(name); spec.batch > 0) {
    return run_inference(w, spec);
  }
  if (name == "add_1" || name == "add_1_grad") {
    const bool grad = name == "add_1_grad";
    torch::Tensor a = torch::ones({1}).requires_grad_(grad);
    torch::Tensor b = torch::ones({1}).requires_grad_(grad);
    return sample(w, [&] { torch::Tensor c = torch::add(a, b); });
  }
  if (name == "backward_1") {
    torch::Tensor a = torch::ones({1}).requires_grad_(true);
    torch::Tensor b = torch::ones({1}).requires_grad_(true);
    std::vector<torch::Tensor> roots;
    auto build = [&](int64_t n) {
      roots.clear();
      for (int64_t i = 0; i < n; ++i) roots.push_back(torch::mul(a, b));
    };
    build(w.inner);
    for (torch::Tensor& r : roots) r.backward();
    std::vector<double> out;
    for (int rep = 0; rep < w.reps; ++rep) {
      build(w.inner);
      const double t0 = compare::now_s();
      for (torch::Tensor& r : roots) r.backward();
      out.push_back((compare::now_s() - t0) / static_cast<double>(w.inner));
    }
    return out;
  }
  if (name == "add_16m" || name == "mul_16m") {
    const torch::Tensor a = torch::rand({compare::kBig}), b = torch::rand({compare::kBig});
    if (name == "add_16m") return sample(w, [&] { torch::Tensor c = torch::add(a, b); });
    return sample(w, [&] { torch::Tensor c = torch::mul(a, b); });
  }
  if (name == "relu_16m") {
    const torch::Tensor a = torch::randn({compare::kBig});
    return sample(w, [&] { torch::Tensor c = torch::relu(a); });
  }
  if (name == "sum_16m") {
    const torch::Tensor a = torch::rand({compare::kBig});
    return sample(w, [&] { torch::Tensor c = torch::sum(a); });
  }
  if (name == "softmax") {
    const torch::Tensor a = torch::randn({compare::kSoftmaxRows, compare::kSoftmaxCols});
    return sample(w, [&] { torch::Tensor c = torch::softmax(a, -1); });
  }
  if (name.starts_with("matmul_")) {
    const int64_t n = std::stoll(name.substr(7));
    const torch::Tensor a = torch::randn({n, n}), b = torch::randn({n, n});
    return sample(w, [&] { torch::Tensor c = torch::matmul(a, b); });
  }
  if (name == "conv_fwd") {
    const torch::Tensor x = torch::randn({8, 64, 56, 56}), k = torch::randn({64, 64, 3, 3});
    return sample(w, [&] { torch::Tensor y = torch::conv2d(x, k, {}, 1, 1); });
  }
  if (name == "conv_fwd_cl") {
    const auto cl = torch::MemoryFormat::ChannelsLast;
    const torch::Tensor x = torch::randn({8, 64, 56, 56}).contiguous(cl);
    const torch::Tensor k = torch::randn({64, 64, 3, 3}).contiguous(cl);
    return sample(w, [&] { torch::Tensor y = torch::conv2d(x, k, {}, 1, 1); });
  }
  if (name == "conv_fwd_bwd") {
    torch::Tensor x = torch::randn({8, 64, 56, 56}).requires_grad_(true);
    torch::Tensor k = torch::randn({64, 64, 3, 3}).requires_grad_(true);
    return sample(w, [&] {
      torch::sum(torch::conv2d(x, k, {}, 1, 1)).backward();
      x.mutable_grad() = torch::Tensor();
      k.mutable_grad() = torch::Tensor();
    });
  }
  if (name == "sdpa_fwd_bwd" || name == "sdpa_causal_fwd_bwd") {
    const bool causal = name == "sdpa_causal_fwd_bwd";
    const std::vector<int64_t> shape = {1, compare::kSdpaHeads, compare::kSdpaLen,
                                        compare::kSdpaDim};
    torch::Tensor q = torch::randn(shape).requires_grad_(true),
                  k = torch::randn(shape).requires_grad_(true),
                  v = torch::randn(shape).requires_grad_(true);
    const torch::Tensor g = torch::randn(shape);
    return sample(w, [&] {
      torch::scaled_dot_product_attention(q, k, v, {}, 0.0, causal).backward(g);
      q.mutable_grad() = torch::Tensor();
      k.mutable_grad() = torch::Tensor();
      v.mutable_grad() = torch::Tensor();
    });
  }
  if (name == "encoder_vit" || name == "encoder_gpt") {
    const bool gpt = name == "encoder_gpt";
    using compare::kGptDim, compare::kVitDim;
    PreNormLayer layer(gpt ? kGptDim : kVitDim, gpt ? compare::kGptHeads : compare::kVitHeads,
                       gpt ? 4 * kGptDim : compare::kVitMlp);
    const std::vector<int64_t> shape =
        gpt ? std::vector<int64_t>{compare::kGptBatch, compare::kGptBlock, kGptDim}
            : std::vector<int64_t>{compare::kVitBatch, compare::kVitTokens, kVitDim};
    torch::Tensor x = torch::randn(shape).requires_grad_(true);
    const torch::Tensor g = torch::randn(shape);
    return sample(w, [&] {
      layer->forward(x, gpt).backward(g);
      x.mutable_grad() = torch::Tensor();
      layer->zero_grad();
    });
  }
  if (name == "lstm_gpt" || name == "gru_gpt") {
    // The same sequence through either recurrent layer: its output's backward.
    torch::Tensor x = torch::randn({compare::kGptBatch, compare::kGptBlock, compare::kGptDim})
                          .requires_grad_(true);
    const torch::Tensor g =
        torch::randn({compare::kGptBatch, compare::kGptBlock, compare::kGptDim});
    auto run = [&](auto& rnn) {
      return sample(w, [&] {
        std::get<0>(rnn->forward(x)).backward(g);
        x.mutable_grad() = torch::Tensor();
        rnn->zero_grad();
      });
    };
    if (name == "lstm_gpt") {
      nn::LSTM lstm(nn::LSTMOptions(compare::kGptDim, compare::kGptDim).batch_first(true));
      return run(lstm);
    }
    nn::GRU gru(nn::GRUOptions(compare::kGptDim, compare::kGptDim).batch_first(true));
    return run(gru);
  }
  if (name == "vit_step") {
    Vit model;
    torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));
    const torch::Tensor x = torch::randn({compare::kVitBatch, 1, 28, 28});
    const torch::Tensor y = torch::randint(0, 10, {compare::kVitBatch});
    return sample(w, [&] { train_step(model, opt, x, y); });
  }
  if (name == "gpt_step") {
    Gpt model(compare::kGptVocab, compare::kGptBlock);
    torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));
    const torch::Tensor x =
        torch::randint(0, compare::kGptVocab, {compare::kGptBatch, compare::kGptBlock});
    const torch::Tensor y =
        torch::randint(0, compare::kGptVocab, {compare::kGptBatch * compare::kGptBlock});
    return sample(w, [&] {
      const torch::Tensor loss =
          torch::nn::functional::cross_entropy(model->forward(x).flatten(0, 1), y);
      opt.zero_grad();
      loss.backward();
      opt.step();
    });
  }
  if (name == "mlp_step") {
    nn::Sequential model = mlp({784, 512, 512, 10});
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01));
    const torch::Tensor x = torch::randn({128, 784}), y = torch::randint(0, 10, {128});
    return sample(w, [&] { train_step(model, opt, x, y); });
  }
  if (name == "resnet18_step" || name == "resnet18_step_cl") {
    const auto format = name == "resnet18_step_cl" ? torch::MemoryFormat::ChannelsLast
                                                   : torch::MemoryFormat::Contiguous;
    nn::Sequential model = resnet(/*bottleneck=*/false, 10);
    to_format(*model, format);
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
    const torch::Tensor x = torch::randn({32, 3, 32, 32}).contiguous(format);
    const torch::Tensor y = torch::randint(0, 10, {32});
    return sample(w, [&] { train_step(model, opt, x, y); });
  }
  if (name == "lenet_epoch") {
    // The whole training set in memory as x / 255 (as ToTensor), batches gathered from a new
    // random permutation each epoch: what a DataLoader over a tensor dataset does.
    const std::string dir = fashion_mnist_dir();
    const torch::Tensor images =
        read_idx(dir + "/train-images-idx3-ubyte.gz").unsqueeze(1).to(torch::kFloat32) / 255.0;
    const torch::Tensor labels = read_idx(dir + "/train-labels-idx1-ubyte.gz").to(torch::kInt64);
    nn::Sequential model = lenet5();
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
    const int64_t n = images.size(0);
    torch::Tensor order = torch::randperm(n);
    int64_t pos = 0;
    auto step = [&] {
      if (pos >= n) {
        order = torch::randperm(n);
        pos = 0;
      }
      const torch::Tensor idx = order.slice(0, pos, std::min(pos + 64, n));
      pos += 64;
      train_step(model, opt, images.index_select(0, idx), labels.index_select(0, idx));
    };
    for (int i = 0; i < 10; ++i) step();  // warm-up steps
    std::vector<double> out;
    for (int rep = 0; rep < w.reps; ++rep) {
      const double t0 = compare::now_s();
      for (int64_t i = 0; i < compare::kLeNetStepsPerSample; ++i) step();
      out.push_back((compare::now_s() - t0) * compare::kLeNetBatches /
                    compare::kLeNetStepsPerSample);
    }
    return out;
  }
  if (name == "startup") {
    return sample(w, [] {
      if (!compare::spawn_child()) std::exit(3);
    });
  }
  std::fprintf(stderr, "compare_torch: no PyTorch version of workload %s\n", w.name);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--child") == 0) {
    return torch::add(torch::ones({1}), torch::ones({1})).item<float>() == 2.0f ? 0 : 1;
  }
  if (argc > 1 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("%s\n", TORCH_VERSION);
    return 0;
  }
  int threads = 0;
  const Workload* w = compare::parse_args(argc, argv, threads);
  if (!w) {
    std::fprintf(stderr, "usage: compare_torch <workload> <threads> | --version\n");
    return 2;
  }
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  compare::print_samples(run(*w));
  return 0;
}
