// The Ember side of the comparison: `compare_ember <workload> <threads>` runs one workload of
// workloads.h through the public API and prints its samples; `compare_ember table ...` is the
// driver that alternates this program with compare_torch and prints the table (driver.cpp).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include <ember/ember.h>

#include "benchmarks/compare/driver.h"
#include "benchmarks/compare/workloads.h"

namespace {

using namespace ember;
using compare::sample;
using compare::Workload;

/** One SGD step of `model` on a fixed batch. */
void train_step(nn::Module& model, optim::Optimizer& opt, const Tensor& x, const Tensor& y) {
  const Tensor loss = cross_entropy(model(x), y);
  opt.zero_grad();
  loss.backward();
  opt.step();
}

/** One forward pass per unit of an inference workload (Note [Inference workloads]): the model
 *  in eval mode, its batch norms and activations fused, inference mode around the timed passes. */
std::vector<double> run_inference(const Workload& w, const compare::InferenceSpec& spec) {
  std::shared_ptr<nn::Module> model;
  Tensor x;
  if (spec.model == "resnet18" || spec.model == "resnet50") {
    model = spec.model == "resnet18" ? std::shared_ptr<nn::Module>(models::resnet18())
                                     : models::resnet50();
    x = randn({spec.batch, 3, compare::kImageSide, compare::kImageSide});
  } else if (spec.model == "vit") {
    model = models::vit();
    x = randn({spec.batch, 1, 28, 28});
  } else if (spec.model == "mlp") {
    model =
        models::mlp({compare::kMlpIn, compare::kMlpHidden, compare::kMlpHidden, compare::kMlpOut});
    x = randn({spec.batch, compare::kMlpIn});
  } else {
    std::fprintf(stderr, "compare_ember: no model %s\n", spec.model.c_str());
    std::exit(2);
  }
  if (spec.channels_last) {
    model->to(MemoryFormat::ChannelsLast);
    x = x.contiguous(MemoryFormat::ChannelsLast);
  }
  model->eval();
  // One image is enough to find what to fuse; the driver reads only the samples line.
  const nn::FuseReport fused = nn::fuse_for_inference(*model, x.narrow(0, 0, 1));
  std::printf(
      "fused %zu batch norms, %zu ReLUs into convolutions and %zu activations into linear "
      "layers, max difference %g\n",
      fused.folded.size(), fused.relus.size(), fused.activations.size(), fused.max_abs_difference);
  autograd::InferenceMode inference;
  return sample(w, [&] { Tensor y = (*model)(x); });
}

std::vector<double> run(const Workload& w) {
  const std::string name = w.name;
  if (const compare::InferenceSpec spec = compare::inference_spec(name); spec.batch > 0) {
    return run_inference(w, spec);
  }
  if (name == "add_1" || name == "add_1_grad") {
    const bool grad = name == "add_1_grad";
    Tensor a = ones({1}), b = ones({1});
    a.requires_grad_(grad);
    b.requires_grad_(grad);
    return sample(w, [&] { Tensor c = add(a, b); });
  }
  if (name == "backward_1") {
    Tensor a = ones({1}).requires_grad_(true), b = ones({1}).requires_grad_(true);
    // Graphs are built outside the timed region; each sample runs w.inner backward passes.
    std::vector<Tensor> roots;
    auto build = [&](int64_t n) {
      roots.clear();
      for (int64_t i = 0; i < n; ++i) roots.push_back(mul(a, b));
    };
    build(w.inner);
    for (Tensor& r : roots) r.backward();
    std::vector<double> out;
    for (int rep = 0; rep < w.reps; ++rep) {
      build(w.inner);
      const double t0 = compare::now_s();
      for (Tensor& r : roots) r.backward();
      out.push_back((compare::now_s() - t0) / static_cast<double>(w.inner));
    }
    return out;
  }
  if (name == "add_16m" || name == "mul_16m") {
    const Tensor a = rand({compare::kBig}), b = rand({compare::kBig});
    if (name == "add_16m") return sample(w, [&] { Tensor c = add(a, b); });
    return sample(w, [&] { Tensor c = mul(a, b); });
  }
  if (name == "relu_16m") {
    const Tensor a = randn({compare::kBig});
    return sample(w, [&] { Tensor c = relu(a); });
  }
  if (name == "sum_16m") {
    const Tensor a = rand({compare::kBig});
    return sample(w, [&] { Tensor c = sum(a); });
  }
  if (name == "softmax") {
    const Tensor a = randn({compare::kSoftmaxRows, compare::kSoftmaxCols});
    return sample(w, [&] { Tensor c = softmax(a, -1); });
  }
  if (name.starts_with("matmul_")) {
    const int64_t n = std::stoll(name.substr(7));
    const Tensor a = randn({n, n}), b = randn({n, n});
    return sample(w, [&] { Tensor c = matmul(a, b); });
  }
  if (name == "conv_fwd") {
    const Tensor x = randn({8, 64, 56, 56}), k = randn({64, 64, 3, 3});
    return sample(w, [&] { Tensor y = conv2d(x, k, {}, {1, 1}, {1, 1}); });
  }
  if (name == "conv_fwd_cl") {
    const Tensor x = randn({8, 64, 56, 56}).contiguous(MemoryFormat::ChannelsLast);
    const Tensor k = randn({64, 64, 3, 3}).contiguous(MemoryFormat::ChannelsLast);
    return sample(w, [&] { Tensor y = conv2d(x, k, {}, {1, 1}, {1, 1}); });
  }
  if (name == "conv_fwd_bwd") {
    const Tensor x = randn({8, 64, 56, 56}).requires_grad_(true);
    const Tensor k = randn({64, 64, 3, 3}).requires_grad_(true);
    return sample(w, [&] {
      sum(conv2d(x, k, {}, {1, 1}, {1, 1})).backward();
      x.mutable_grad() = Tensor();
      k.mutable_grad() = Tensor();
    });
  }
  if (name == "sdpa_fwd_bwd" || name == "sdpa_causal_fwd_bwd") {
    const bool causal = name == "sdpa_causal_fwd_bwd";
    const std::vector<int64_t> shape = {1, compare::kSdpaHeads, compare::kSdpaLen,
                                        compare::kSdpaDim};
    Tensor q = randn(shape).requires_grad_(true), k = randn(shape).requires_grad_(true),
           v = randn(shape).requires_grad_(true);
    const Tensor g = randn(shape);
    return sample(w, [&] {
      scaled_dot_product_attention(q, k, v, {}, 0.0, causal).backward(g);
      q.mutable_grad() = Tensor();
      k.mutable_grad() = Tensor();
      v.mutable_grad() = Tensor();
    });
  }
  if (name == "encoder_vit" || name == "encoder_gpt") {
    const bool gpt = name == "encoder_gpt";
    using compare::kGptDim, compare::kVitDim;
    nn::TransformerEncoderLayer layer(gpt ? kGptDim : kVitDim,
                                      gpt ? compare::kGptHeads : compare::kVitHeads,
                                      {.dim_feedforward = gpt ? 4 * kGptDim : compare::kVitMlp,
                                       .dropout = 0.0,
                                       .activation = "gelu",
                                       .batch_first = true,
                                       .norm_first = true});
    const std::vector<int64_t> shape =
        gpt ? std::vector<int64_t>{compare::kGptBatch, compare::kGptBlock, kGptDim}
            : std::vector<int64_t>{compare::kVitBatch, compare::kVitTokens, kVitDim};
    Tensor x = randn(shape).requires_grad_(true);
    const Tensor g = randn(shape);
    // As models::gpt: the causal mask with the is_causal hint (PyTorch asks for both).
    const int64_t t = shape[1];
    const Tensor causal = gpt ? triu(ones({t, t}, DType::Bool), 1) : Tensor();
    return sample(w, [&] {
      layer.forward(x, causal, {}, gpt).backward(g);
      x.mutable_grad() = Tensor();
      layer.zero_grad();
    });
  }
  if (name == "lstm_gpt" || name == "gru_gpt") {
    // The same sequence through either recurrent layer: its output's backward.
    std::shared_ptr<nn::Module> rnn;
    if (name == "lstm_gpt") {
      rnn = std::make_shared<nn::LSTM>(compare::kGptDim, compare::kGptDim,
                                       nn::RNNOptions{.batch_first = true});
    } else {
      rnn = std::make_shared<nn::GRU>(compare::kGptDim, compare::kGptDim,
                                      nn::RNNOptions{.batch_first = true});
    }
    Tensor x =
        randn({compare::kGptBatch, compare::kGptBlock, compare::kGptDim}).requires_grad_(true);
    const Tensor g = randn({compare::kGptBatch, compare::kGptBlock, compare::kGptDim});
    return sample(w, [&] {
      rnn->forward(x).backward(g);
      x.mutable_grad() = Tensor();
      rnn->zero_grad();
    });
  }
  if (name == "vit_step") {
    auto model = models::vit();
    optim::Adam opt(model->parameters(), {.lr = 1e-3});
    const Tensor x = randn({compare::kVitBatch, 1, 28, 28});
    const Tensor y = randint(0, 10, {compare::kVitBatch});
    return sample(w, [&] { train_step(*model, opt, x, y); });
  }
  if (name == "gpt_step") {
    auto model = models::gpt(
        {.vocab_size = compare::kGptVocab, .block_size = compare::kGptBlock, .dropout = 0.0});
    optim::Adam opt(model->parameters(), {.lr = 1e-3});
    const Tensor x = randint(0, compare::kGptVocab, {compare::kGptBatch, compare::kGptBlock});
    const Tensor y = randint(0, compare::kGptVocab, {compare::kGptBatch * compare::kGptBlock});
    return sample(w, [&] {
      const Tensor loss = cross_entropy((*model)(x).flatten(0, 1), y);
      opt.zero_grad();
      loss.backward();
      opt.step();
    });
  }
  if (name == "mlp_step") {
    auto model = models::mlp({784, 512, 512, 10});
    optim::SGD opt(model->parameters(), {.lr = 0.01});
    const Tensor x = randn({128, 784}), y = randint(0, 10, {128});
    return sample(w, [&] { train_step(*model, opt, x, y); });
  }
  if (name == "resnet18_step" || name == "resnet18_step_cl") {
    const MemoryFormat format =
        name == "resnet18_step_cl" ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
    auto model = models::resnet18(10);
    model->to(format);
    optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
    const Tensor x = randn({32, 3, 32, 32}).contiguous(format), y = randint(0, 10, {32});
    return sample(w, [&] { train_step(*model, opt, x, y); });
  }
  if (name == "lenet_epoch") {
    auto train = std::make_shared<data::MNIST>(data::find_fashion_mnist(std::nullopt), true);
    data::DataLoader loader(train, {.batch_size = 64, .shuffle = true, .num_workers = 1});
    auto model = models::lenet5();
    optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
    auto it = loader.begin();
    auto step = [&] {
      if (it == std::default_sentinel) it = loader.begin();
      train_step(*model, opt, (*it)[0], (*it)[1]);
      ++it;
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
  std::fprintf(stderr, "compare_ember: no Ember version of workload %s\n", w.name);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--child") == 0) {
    return ember::add(ember::ones({1}), ember::ones({1})).item() == 2.0 ? 0 : 1;
  }
  if (argc > 1 && std::strcmp(argv[1], "--limits") == 0) return compare::print_limits();
  if (argc > 1 && std::strcmp(argv[1], "table") == 0) return compare::drive(argc - 1, argv + 1);
  int threads = 0;
  const Workload* w = compare::parse_args(argc, argv, threads);
  if (!w) {
    std::fprintf(stderr,
                 "usage: compare_ember <workload> <threads>\n"
                 "       compare_ember table --torch <compare_torch> [--rounds N] [--only a,b]\n");
    return 2;
  }
  set_num_threads(threads);
  manual_seed(0);
  compare::print_samples(run(*w));
  return 0;
}
