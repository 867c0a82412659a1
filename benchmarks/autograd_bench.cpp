// Autograd host overhead: recording a 1-element add, and backward through a 1,000-op chain,
// beside the same work with grad mode off.
#include <benchmark/benchmark.h>

#include <ember/ember.h>

namespace {

using namespace ember;

void BM_AddNoGrad(benchmark::State& state) {
  Tensor a = ones({1}), b = ones({1});
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AddNoGrad);

void BM_AddRecording(benchmark::State& state) {
  Tensor a = ones({1}).requires_grad_(true), b = ones({1});
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AddRecording);

// A 1-element graph: forward add then backward.
void BM_BackwardOneOp(benchmark::State& state) {
  Tensor a = ones({1}).requires_grad_(true), b = ones({1});
  for (auto _ : state) {
    Tensor y = add(a, b);
    y.backward();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BackwardOneOp);

// Forward of a 1,000-op chain of 1-element muls, with and without recording, and its backward.
void BM_Chain1000Forward(benchmark::State& state) {
  const bool record = state.range(0) != 0;
  Tensor x = ones({1}).requires_grad_(record);
  for (auto _ : state) {
    Tensor y = x;
    for (int i = 0; i < 1000; ++i) y = mul(y, 1.0001);
    benchmark::DoNotOptimize(y);
  }
  state.SetItemsProcessed(state.iterations() * 1000);
}
BENCHMARK(BM_Chain1000Forward)->Arg(0)->Arg(1);

void BM_Chain1000Backward(benchmark::State& state) {
  Tensor x = ones({1}).requires_grad_(true);
  for (auto _ : state) {
    state.PauseTiming();
    Tensor y = x;
    for (int i = 0; i < 1000; ++i) y = mul(y, 1.0001);
    state.ResumeTiming();
    y.backward();
  }
  state.SetItemsProcessed(state.iterations() * 1000);
}
BENCHMARK(BM_Chain1000Backward);

}  // namespace

BENCHMARK_MAIN();
