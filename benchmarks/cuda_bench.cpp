// GPU benchmarks of the CUDA backend, all through the public API: matmul TFLOP/s (float32,
// TF32, bfloat16 at 8192), convolution forward and forward+backward (a ResNet stage-1 layer at
// batch 64), batch norm, softmax and average pooling through cuDNN and through own kernels,
// elementwise bandwidth beside the device's own copy bandwidth, the caching
// allocator's cost per allocation, two-layer LSTM and GRU forward+backward through cuDNN's RNN,
// ResNet-18/ResNet-50 training throughput, and the first
// training step against the steady state (the caching allocator's effect). Device work is timed
// with CUDA events (ember::Event); without a device every benchmark reports why and stops.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <ember/ember.h>
#include <ember/models.h>
#include <ember/nn.h>
#include <ember/optim.h>

#include "benchmarks/train_step.h"

namespace {

using namespace ember;

// cuda:0, or an error on `state` (and false) if there is none.
bool cuda_device(benchmark::State& state, Device* out) {
  init();
  const int16_t t = find_device_type("cuda");
  if (t < 0 || device_type(t).count == 0) {
    state.SkipWithError(t < 0 ? "the cuda plugin is not loaded"
                              : device_type(t).unusable_reason.c_str());
    return false;
  }
  *out = Device(t, 0);
  return true;
}

// Runs `work` once per iteration between two events and reports the device time.
template <typename Fn>
void timed_loop(benchmark::State& state, Device g, Fn&& work) {
  work();  // warm-up: library handles, algorithm choice, cached blocks
  synchronize(g);
  Event start(g, /*enable_timing=*/true), end(g, /*enable_timing=*/true);
  for (auto _ : state) {
    start.record();
    work();
    end.record();
    end.synchronize();
    state.SetIterationTime(start.elapsed_ms(end) / 1e3);
  }
}

// Matmul of two n x n matrices; arg 0: float32, 1: float32 with TF32, 2: bfloat16.
void BM_CudaMatmul(benchmark::State& state) {
  Device g;
  if (!cuda_device(state, &g)) return;
  const int64_t n = state.range(1);
  const int mode = static_cast<int>(state.range(0));
  const DType d = mode == 2 ? DType::BFloat16 : DType::Float32;
  set_backend_option("cuda", "matmul.allow_tf32", mode == 1 ? "1" : "0");
  const Tensor a = randn({n, n}, {d, g}), b = randn({n, n}, {d, g});
  timed_loop(state, g, [&] { benchmark::DoNotOptimize(matmul(a, b)); });
  set_backend_option("cuda", "matmul.allow_tf32", "0");
  state.SetLabel(mode == 0 ? "float32" : mode == 1 ? "tf32" : "bfloat16");
  state.counters["TFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n / 1e12, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CudaMatmul)
    ->ArgsProduct({{0, 1, 2}, {8192}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// conv2d 64 -> 64 channels, 3x3, padding 1, on [64, 64, 56, 56] (ResNet stage 1 at batch 64);
// arg 0: forward only, 1: forward and both gradients; cudnn.benchmark on.
void BM_CudaConv2d(benchmark::State& state) {
  Device g;
  if (!cuda_device(state, &g)) return;
  const bool backward = state.range(0) == 1;
  set_backend_option("cuda", "cudnn.benchmark", "1");
  const Tensor x = randn({64, 64, 56, 56}, {DType::Float32, g}).requires_grad_(backward);
  const Tensor w = randn({64, 64, 3, 3}, {DType::Float32, g}).requires_grad_(backward);
  timed_loop(state, g, [&] {
    Tensor y = conv2d(x, w, {}, {1, 1}, {1, 1});
    if (backward) {
      sum(y).backward();
      x.mutable_grad() = Tensor();
      w.mutable_grad() = Tensor();
    }
  });
  set_backend_option("cuda", "cudnn.benchmark", "0");
  state.SetLabel(backward ? "forward+backward" : "forward");
  const double flop = (backward ? 3 : 1) * 2.0 * 64 * 64 * 56 * 56 * 64 * 9;
  state.counters["TFLOP/s"] =
      benchmark::Counter(flop / 1e12, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CudaConv2d)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMillisecond);

// Layers with a cuDNN path and an own kernel (Note [cuDNN where own kernels exist too]), on a
// ResNet stage-1 activation [64, 64, 56, 56] in float32; arg 0: batch_norm (training) forward
// and backward, 1: softmax over the channels, 2: avg_pool2d 2x2 forward and backward; arg 1:
// cudnn.enabled. GB/s counts each tensor the layer must read or write once.
void BM_CudaLayer(benchmark::State& state) {
  Device g;
  if (!cuda_device(state, &g)) return;
  const int op = static_cast<int>(state.range(0));
  const bool cudnn = state.range(1) == 1;
  set_backend_option("cuda", "cudnn.enabled", cudnn ? "1" : "0");
  const Tensor x = randn({64, 64, 56, 56}, {DType::Float32, g}).requires_grad_(op != 1);
  const Tensor w = ones({64}, {DType::Float32, g}).requires_grad_(true);
  const Tensor b = zeros({64}, {DType::Float32, g}).requires_grad_(true);
  Tensor rm = zeros({64}, {DType::Float32, g}), rv = ones({64}, {DType::Float32, g});
  const Tensor dy = randn({64, 64, 56, 56}, {DType::Float32, g});
  const Tensor dp = randn({64, 64, 28, 28}, {DType::Float32, g});
  timed_loop(state, g, [&] {
    if (op == 0) {
      (batch_norm(x, w, b, rm, rv, /*training=*/true)).backward(dy);
    } else if (op == 1) {
      benchmark::DoNotOptimize(softmax(x, 1));
    } else {
      avg_pool2d(x, {2, 2}).backward(dp);
    }
    x.mutable_grad() = Tensor();
    w.mutable_grad() = Tensor();
    b.mutable_grad() = Tensor();
  });
  set_backend_option("cuda", "cudnn.enabled", "1");
  const char* names[] = {"batch_norm fwd+bwd", "softmax", "avg_pool2d fwd+bwd"};
  state.SetLabel(std::string(names[op]) + (cudnn ? " cudnn" : " own"));
  // batch_norm: x, y forward; dy, x, dx backward. softmax: x, y. avg_pool2d: x, y/4 forward,
  // dy/4, dx backward.
  const double tensors[] = {5.0, 2.0, 2.5};
  state.counters["GB/s"] = benchmark::Counter(tensors[op] * static_cast<double>(dy.nbytes()) / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CudaLayer)
    ->ArgsProduct({{0, 1, 2}, {1, 0}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// Bandwidth over 2^28 float32 elements (1 GiB per tensor): arg 0: the device's own copy
// (cudaMemcpyAsync device to device, the ceiling), 1: copy kernel (clone), 2: add, 3: mul by a
// scalar, 4: relu. Bytes are those read plus those written.
void BM_CudaBandwidth(benchmark::State& state) {
  Device g;
  if (!cuda_device(state, &g)) return;
  const int64_t n = int64_t{1} << 28;
  const int op = static_cast<int>(state.range(0));
  const Tensor a = randn({n}, {DType::Float32, g}), b = randn({n}, {DType::Float32, g});
  const Tensor out = empty({n}, {DType::Float32, g});
  const char* names[] = {"device copy", "copy kernel", "add", "mul scalar", "relu"};
  const double tensors[] = {2, 2, 3, 2, 2};
  timed_loop(state, g, [&] {
    switch (op) {
      case 0:
        device_copy(g, out.data_ptr(), a.data_ptr(), a.nbytes(), EMBER_COPY_D2D);
        break;
      case 1:
        benchmark::DoNotOptimize(a.clone());
        break;
      case 2:
        benchmark::DoNotOptimize(add(a, b));
        break;
      case 3:
        benchmark::DoNotOptimize(mul(a, 1.5));
        break;
      default:
        benchmark::DoNotOptimize(relu(a));
    }
  });
  state.SetLabel(names[op]);
  state.counters["GB/s"] = benchmark::Counter(tensors[op] * static_cast<double>(a.nbytes()) / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CudaBandwidth)->DenseRange(0, 4)->UseManualTime()->Unit(benchmark::kMillisecond);

// Host cost of one allocation and free of `bytes` on the device through the caching allocator
// (steady state: no cudaMalloc); the counter says how many reached the driver while timed.
void BM_CudaAllocFree(benchmark::State& state) {
  Device g;
  if (!cuda_device(state, &g)) return;
  const int64_t elems = state.range(0) / 4;
  { Tensor warm = empty({elems}, {DType::Float32, g}); }
  const uint64_t before = memory_stats(g).num_os_allocs;
  for (auto _ : state) {
    Tensor t = empty({elems}, {DType::Float32, g});
    benchmark::DoNotOptimize(t.data_ptr());
  }
  state.counters["cudaMalloc"] = static_cast<double>(memory_stats(g).num_os_allocs - before);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CudaAllocFree)->Arg(1 << 10)->Arg(1 << 20)->Arg(64 << 20);

using bench::train_step;

// ResNet training throughput at 3x224x224, batch 64, float32, cudnn.benchmark on; arg: depth.
void BM_CudaResNetTrain(benchmark::State& state) {
  Device g;
  if (!cuda_device(state, &g)) return;
  const int64_t depth = state.range(0), batch = 64;
  set_backend_option("cuda", "cudnn.benchmark", "1");
  auto model = depth == 50 ? models::resnet50(1000) : models::resnet18(1000);
  model->to(g);
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  const Tensor x = randn({batch, 3, 224, 224}, {DType::Float32, g});
  const Tensor y = randint(0, 1000, {batch}).to(g);
  timed_loop(state, g, [&] { train_step(*model, opt, x, y); });
  set_backend_option("cuda", "cudnn.benchmark", "0");
  state.SetLabel(depth == 50 ? "resnet50" : "resnet18");
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["images/s"] =
      benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_GiB"] = static_cast<double>(memory_stats(g).peak_allocated) / (1 << 30);
}
BENCHMARK(BM_CudaResNetTrain)->Arg(18)->Arg(50)->UseManualTime()->Unit(benchmark::kMillisecond);

// A two-layer LSTM or GRU, 256 -> 512 features over 128 steps of a batch of 64, float32,
// forward and backward: every layer through cuDNN's RNN (Note [Whole recurrent layers in a
// backend] in core/ops/rnn.cpp); arg 0: LSTM, 1: GRU. Sequences/s.
void BM_CudaRnn(benchmark::State& state) {
  Device g;
  if (!cuda_device(state, &g)) return;
  const bool lstm = state.range(0) == 0;
  const int64_t steps = 128, batch = 64;
  const nn::RNNOptions o{.num_layers = 2};
  std::shared_ptr<nn::Module> m;
  if (lstm) {
    m = std::make_shared<nn::LSTM>(256, 512, o);
  } else {
    m = std::make_shared<nn::GRU>(256, 512, o);
  }
  m->to(g);
  const Tensor x = randn({steps, batch, 256}, {DType::Float32, g});
  timed_loop(state, g, [&] {
    sum(m->forward(x)).backward();
    m->zero_grad();
  });
  state.SetLabel(lstm ? "lstm fwd+bwd" : "gru fwd+bwd");
  state.counters["seq/s"] =
      benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CudaRnn)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMillisecond);

// The first ResNet-50 training step of a fresh model with an empty cache, against the median of
// the next 10 (the paper's caching-allocator figure): the first pays cudaMalloc for every block
// it holds (and cuDNN's algorithm search), later steps reuse the cache.
void BM_CudaFirstVsSteadyStep(benchmark::State& state) {
  Device g;
  if (!cuda_device(state, &g)) return;
  for (auto _ : state) {
    synchronize(g);
    empty_cache(g);
    set_backend_option("cuda", "cudnn.benchmark", "0");
    auto model = models::resnet50(1000);
    model->to(g);
    optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
    const Tensor x = randn({32, 3, 224, 224}, {DType::Float32, g});
    const Tensor y = randint(0, 1000, {32}).to(g);
    synchronize(g);
    Event start(g, true), end(g, true);
    std::vector<double> ms;
    std::vector<uint64_t> os_allocs;
    for (int step = 0; step < 11; ++step) {
      const uint64_t before = memory_stats(g).num_os_allocs;
      start.record();
      train_step(*model, opt, x, y);
      end.record();
      end.synchronize();
      ms.push_back(start.elapsed_ms(end));
      os_allocs.push_back(memory_stats(g).num_os_allocs - before);
    }
    std::vector<double> rest(ms.begin() + 1, ms.end());
    std::sort(rest.begin(), rest.end());
    state.counters["first_ms"] = ms[0];
    state.counters["steady_ms"] = rest[rest.size() / 2];
    state.counters["first_cudaMalloc"] = static_cast<double>(os_allocs[0]);
    state.counters["steady_cudaMalloc"] = static_cast<double>(os_allocs.back());
  }
}
BENCHMARK(BM_CudaFirstVsSteadyStep)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
