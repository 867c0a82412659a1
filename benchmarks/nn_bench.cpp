// Model-level benchmarks: convolution forward and forward+backward, an MLP training step, a
// ResNet-18 training step and a LeNet-5 epoch on Fashion-MNIST. Threads come from
// --benchmark_filter and EMBER_NUM_THREADS / OMP_NUM_THREADS. Memory is reported per run as the
// process's peak RSS and as the CPU allocator's peak of bytes held by live tensors
// (peak_tensor_MiB: what a step keeps alive at once, activations saved for backward included;
// run one benchmark per process, with --benchmark_filter, to read it for that one alone).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <ember/data.h>
#include <ember/ember.h>
#include <ember/models.h>
#include <ember/optim.h>

#include "benchmarks/train_step.h"

namespace {

using namespace ember;

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

/** Peak RSS and the allocator's high-water mark of live tensor bytes, in MiB. */
void report_memory(benchmark::State& state) {
  state.counters["peak_rss_MiB"] = peak_rss_mib();
  state.counters["peak_tensor_MiB"] =
      static_cast<double>(memory_stats(Device::cpu()).peak_allocated) / (1 << 20);
}

void set_threads(benchmark::State& state) {
  set_num_threads(static_cast<int>(state.range(0)));
}

// conv2d forward: N=8, C=64->64, 56x56, 3x3, padding 1 (NCHW), as a ResNet stage-1 layer.
void BM_Conv2dForward(benchmark::State& state) {
  set_threads(state);
  const Tensor x = randn({8, 64, 56, 56}), w = randn({64, 64, 3, 3});
  for (auto _ : state) benchmark::DoNotOptimize(conv2d(x, w, {}, {1, 1}, {1, 1}));
  const double flop = 2.0 * 8 * 64 * 56 * 56 * 64 * 9;
  state.counters["FLOP/s"] =
      benchmark::Counter(flop, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Conv2dForward)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// conv2d forward + backward to input and weight.
void BM_Conv2dForwardBackward(benchmark::State& state) {
  set_threads(state);
  const Tensor x = randn({8, 64, 56, 56}).requires_grad_(true);
  const Tensor w = randn({64, 64, 3, 3}).requires_grad_(true);
  for (auto _ : state) {
    sum(conv2d(x, w, {}, {1, 1}, {1, 1})).backward();
    x.mutable_grad() = Tensor();
    w.mutable_grad() = Tensor();
  }
  const double flop = 3 * 2.0 * 8 * 64 * 56 * 56 * 64 * 9;
  state.counters["FLOP/s"] =
      benchmark::Counter(flop, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Conv2dForwardBackward)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

using bench::train_step;

// MLP 784-512-512-10, batch 128, SGD.
void BM_MlpTrainStep(benchmark::State& state) {
  set_threads(state);
  auto model = models::mlp({784, 512, 512, 10});
  optim::SGD opt(model->parameters(), {.lr = 0.01});
  const Tensor x = randn({128, 784}), y = randint(0, 10, {128});
  for (auto _ : state) train_step(*model, opt, x, y);
  state.SetItemsProcessed(state.iterations() * 128);
  report_memory(state);
}
BENCHMARK(BM_MlpTrainStep)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// ResNet-18 (torchvision layout, 10 classes), 3x32x32, batch 32, SGD with momentum.
void BM_ResNet18TrainStep(benchmark::State& state) {
  set_threads(state);
  auto model = models::resnet18(10);
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  const Tensor x = randn({32, 3, 32, 32}), y = randint(0, 10, {32});
  for (auto _ : state) train_step(*model, opt, x, y);
  state.SetItemsProcessed(state.iterations() * 32);
  report_memory(state);
}
BENCHMARK(BM_ResNet18TrainStep)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// The training steps of `ember train`'s CNN (Fashion-MNIST, batch 64) and the 32x32 ResNet-18
// (batch 32) in float32 (arg 1 = 0) and under bfloat16 autocast (arg 1 = 1), 2 threads. On a CPU
// without bf16 arithmetic the low type buys nothing: the gap is the price of the casts.
void BM_TrainStepAutocast(benchmark::State& state) {
  set_num_threads(2);
  const bool resnet = state.range(0) == 1, bf16 = state.range(1) == 1;
  const int64_t batch = resnet ? 32 : 64;
  std::shared_ptr<nn::Module> model;
  if (resnet) {
    model = models::resnet18(10);
  } else {
    model = models::fashion_cnn(10);
  }
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  const Tensor x = resnet ? randn({batch, 3, 32, 32}) : randn({batch, 1, 28, 28});
  const Tensor y = randint(0, 10, {batch});
  for (auto _ : state) {
    train_step(*model, opt, x, y, bf16 ? std::optional<DType>(DType::BFloat16) : std::nullopt);
  }
  state.SetLabel(std::string(resnet ? "resnet18" : "cnn") + (bf16 ? " bf16" : " f32"));
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_TrainStepAutocast)
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The same step at ImageNet's geometry, 3x224x224, batch 8: activations, not parameters and
// optimizer state, dominate the memory held at once (peak_tensor_MiB).
void BM_ResNet18TrainStep224(benchmark::State& state) {
  set_threads(state);
  auto model = models::resnet18(1000);
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  const Tensor x = randn({8, 3, 224, 224}), y = randint(0, 1000, {8});
  for (auto _ : state) train_step(*model, opt, x, y);
  state.SetItemsProcessed(state.iterations() * 8);
  report_memory(state);
}
BENCHMARK(BM_ResNet18TrainStep224)
    ->Arg(2)
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The 224x224 ResNet-18 step with and without activation checkpointing (arg 1: its top-level
// modules in 4 segments, the last 3 checkpointed, nn::checkpoint_sequential). activations_MiB:
// the tensor memory the forward pass holds for backward (allocated after the loss minus before
// the forward, from the CPU allocator's statistics), which is what checkpointing trades for a
// second forward of the checkpointed segments.
void BM_ResNet18TrainStep224Checkpointed(benchmark::State& state) {
  set_num_threads(2);
  auto model = models::resnet18(1000);
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  const Tensor x = randn({8, 3, 224, 224}), y = randint(0, 1000, {8});
  const bool checkpointed = state.range(0) == 1;
  double held = 0;
  for (auto _ : state) {
    const auto before = static_cast<double>(memory_stats().allocated);
    const Tensor loss =
        cross_entropy(checkpointed ? nn::checkpoint_sequential(*model, 4, x) : (*model)(x), y);
    held = static_cast<double>(memory_stats().allocated) - before;
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  state.counters["activations_MiB"] = held / (1 << 20);
  report_memory(state);  // peak_tensor_MiB: run one variant per process to read it alone
  state.SetLabel(checkpointed ? "checkpointed" : "plain");
  state.SetItemsProcessed(state.iterations() * 8);
}
BENCHMARK(BM_ResNet18TrainStep224Checkpointed)
    ->Arg(0)
    ->Arg(1)
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// One LeNet-5 epoch over the 60000 Fashion-MNIST training images (batch 64, SGD momentum 0.9).
void BM_LeNetEpoch(benchmark::State& state) {
  set_threads(state);
  auto train = std::make_shared<data::MNIST>(data::find_fashion_mnist(std::nullopt), true);
  data::DataLoader loader(train, {.batch_size = 64, .shuffle = true, .num_workers = 1});
  auto model = models::lenet5();
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  for (auto _ : state) {
    for (const std::vector<Tensor>& batch : loader) train_step(*model, opt, batch[0], batch[1]);
  }
  state.SetItemsProcessed(state.iterations() * train->size());
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_LeNetEpoch)->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
