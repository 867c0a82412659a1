// Per-op benchmarks of the CPU backend: host overhead of one op call, elementwise bandwidth and
// matmul throughput, with oneDNN's own sgemm as the reference for matmul, attention, and max
// pooling in both memory formats.
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.h>

#include <ember/ember.h>

namespace {

using namespace ember;

// The whole op path for a 1-element add, output allocation included (ARCHITECTURE.md, "The path of
// one op call": its budget).
void BM_AddOverhead(benchmark::State& state) {
  Tensor a = ones({1}), b = ones({1});
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AddOverhead);

// 16M floats: add that allocates its output (what users pay, fresh memory included).
void BM_AddAlloc(benchmark::State& state) {
  const int64_t n = state.range(0);
  Tensor a = rand({n}), b = rand({n});
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
  state.SetBytesProcessed(state.iterations() * n * 3 * int64_t{sizeof(float)});
}
BENCHMARK(BM_AddAlloc)->Arg(16 << 20)->UseRealTime();

// 16M floats: in-place add into warm memory (the bandwidth ceiling of the loop itself).
void BM_AddInPlace(benchmark::State& state) {
  const int64_t n = state.range(0);
  Tensor a = rand({n}), b = rand({n});
  for (auto _ : state) add_(a, b);
  state.SetBytesProcessed(state.iterations() * n * 3 * int64_t{sizeof(float)});
}
BENCHMARK(BM_AddInPlace)->Arg(16 << 20)->UseRealTime();

// 16M random floats, uniform and normal (the "random" kernel: Philox blocks over the threads).
void BM_Rand(benchmark::State& state) {
  const int64_t n = state.range(0);
  for (auto _ : state) benchmark::DoNotOptimize(rand({n}));
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Rand)->Arg(16 << 20)->UseRealTime();

void BM_Randn(benchmark::State& state) {
  const int64_t n = state.range(0);
  for (auto _ : state) benchmark::DoNotOptimize(randn({n}));
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Randn)->Arg(16 << 20)->UseRealTime();

void BM_ReluAlloc(benchmark::State& state) {
  const int64_t n = state.range(0);
  Tensor a = randn({n});
  for (auto _ : state) benchmark::DoNotOptimize(relu(a));
  state.SetBytesProcessed(state.iterations() * n * 2 * int64_t{sizeof(float)});
}
BENCHMARK(BM_ReluAlloc)->Arg(16 << 20)->UseRealTime();

// Square matmul; sizes 256/1024/2048 as in the budget.
void BM_Matmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  Tensor a = randn({n, n}), b = randn({n, n});
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b));
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * n * n * n * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Matmul)->Arg(256)->Arg(1024)->Arg(2048)->UseRealTime();

// oneDNN's sgemm on the same sizes, into a preallocated output: the reference for BM_Matmul.
void BM_DnnlSgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  Tensor a = randn({n, n}), b = randn({n, n}), c = zeros({n, n});
  for (auto _ : state) {
    dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data_ptr<float>(), n, b.data_ptr<float>(), n, 0.0f,
               c.data_ptr<float>(), n);
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * n * n * n * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DnnlSgemm)->Arg(256)->Arg(1024)->Arg(2048)->UseRealTime();

void BM_SumAll(benchmark::State& state) {
  const int64_t n = state.range(0);
  Tensor a = rand({n});
  for (auto _ : state) benchmark::DoNotOptimize(sum(a));
  state.SetBytesProcessed(state.iterations() * n * int64_t{sizeof(float)});
}
BENCHMARK(BM_SumAll)->Arg(16 << 20)->UseRealTime();

void BM_SoftmaxRows(benchmark::State& state) {
  Tensor a = randn({4096, 1024});
  for (auto _ : state) benchmark::DoNotOptimize(softmax(a, -1));
  state.SetBytesProcessed(state.iterations() * 4096 * 1024 * 2 * int64_t{sizeof(float)});
}
BENCHMARK(BM_SoftmaxRows)->UseRealTime();

// Attention forward and backward at one layer of a small Transformer: batch 1, 8 heads,
// L = S = 1024, head size 64 (a GPT-2-small head over a 1024-token context), without and with
// the causal mask. Items are FLOPs: forward 4 L S d per head (q k^T and P v), backward 2.5 times
// that (FlashAttention-2's count); the causal mask halves both.
void BM_AttentionFwdBwd(benchmark::State& state) {
  const int64_t heads = 8, len = 1024, d = 64;
  const bool causal = state.range(0) != 0;
  Tensor q = randn({1, heads, len, d}).requires_grad_(true);
  Tensor k = randn({1, heads, len, d}).requires_grad_(true);
  Tensor v = randn({1, heads, len, d}).requires_grad_(true);
  const Tensor g = randn({1, heads, len, d});
  for (auto _ : state) {
    Tensor out = scaled_dot_product_attention(q, k, v, {}, 0.0, causal);
    out.backward(g);
    q.mutable_grad() = Tensor();
    k.mutable_grad() = Tensor();
    v.mutable_grad() = Tensor();
  }
  const double flop = 3.5 * 4.0 * heads * len * len * d * (causal ? 0.5 : 1.0);
  state.SetItemsProcessed(static_cast<int64_t>(flop) * state.iterations());
}
BENCHMARK(BM_AttentionFwdBwd)
    ->ArgName("causal")
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// ResNet's stem pooling (max 3x3, stride 2, padding 1 over [32, 64, 32, 32]) forward and
// backward, row-major and channels-last: the channels-last run goes through the CPU's NHWC loops
// (Note [Channels-last pooling]). Bytes are the input read and the output written forward, and
// the gradient written and the output gradient read backward.
void BM_MaxPoolFwdBwd(benchmark::State& state) {
  const auto format = state.range(0) ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
  Tensor x = randn({32, 64, 32, 32}).contiguous(format).requires_grad_(true);
  const Tensor g = randn({32, 64, 16, 16}).contiguous(format);
  for (auto _ : state) {
    max_pool2d(x, {3, 3}, {2, 2}, {1, 1}).backward(g);
    x.mutable_grad() = Tensor();
  }
  const int64_t bytes = 4 * 2 * (x.numel() + g.numel());
  state.SetBytesProcessed(bytes * state.iterations());
}
BENCHMARK(BM_MaxPoolFwdBwd)
    ->ArgName("channels_last")
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
