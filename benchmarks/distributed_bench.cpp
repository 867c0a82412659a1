// All-reduce bandwidth across processes: `ember run --nproc-per-node 2 distributed_bench`.
// Every rank runs the same fixed number of iterations (collectives must match); rank 0 reports.
// bus_GBps is the all-reduce bus bandwidth, 2 (n - 1) / n * bytes / time, comparable across
// world sizes and with PyTorch's figures for torch.distributed (benchmarks/README.md).
#include <benchmark/benchmark.h>

#include <ember/distributed.h>
#include <ember/ember.h>
#include <ember/models.h>
#include <ember/optim.h>

#include "benchmarks/train_step.h"

namespace {

ember::distributed::ProcessGroup& group() {
  static ember::distributed::ProcessGroup pg = ember::distributed::init_process_group();
  return pg;
}

void BM_AllReduce(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  ember::Tensor t = ember::ones({bytes / 4});
  auto& pg = group();
  pg.all_reduce(t);  // warm-up: connections, buffers
  for (auto _ : state) pg.all_reduce(t);
  const double n = pg.size();
  state.counters["bus_GBps"] = benchmark::Counter(
      2 * (n - 1) / n * static_cast<double>(bytes) * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
  state.SetBytesProcessed(state.iterations() * bytes);
}

// One DDP training step; the global batch is split over the ranks, items/s counts the global
// batch (compare with nn_bench's single-process row at as many threads as there are ranks).
template <typename MakeModel>
void ddp_step(benchmark::State& state, MakeModel make, int64_t global_batch,
              std::vector<int64_t> example) {
  auto& pg = group();
  ember::manual_seed(0);
  auto model = std::make_shared<ember::nn::DistributedDataParallel>(make());
  ember::optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  example.insert(example.begin(), global_batch / pg.size());
  const ember::Tensor x = ember::randn(example);
  const ember::Tensor y = ember::randint(0, 10, {global_batch / pg.size()});
  ember::bench::train_step(*model, opt, x, y);  // warm-up
  for (auto _ : state) ember::bench::train_step(*model, opt, x, y);
  state.SetItemsProcessed(state.iterations() * global_batch);
}

// MLP 784-512-512-10, global batch 128 (nn_bench's BM_MlpTrainStep).
void BM_DdpMlpStep(benchmark::State& state) {
  ddp_step(state, [] { return ember::models::mlp({784, 512, 512, 10}); }, 128, {784});
}

// ResNet-18, 3x32x32, global batch 32 (nn_bench's BM_ResNet18TrainStep).
void BM_DdpResNet18Step(benchmark::State& state) {
  ddp_step(state, [] { return ember::models::resnet18(10); }, 32, {3, 32, 32});
}

}  // namespace

BENCHMARK(BM_DdpMlpStep)->Iterations(100)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DdpResNet18Step)->Iterations(10)->Unit(benchmark::kMillisecond)->UseRealTime();

// 1 KiB to 64 MiB; a fixed iteration count per size, the same on every rank.
BENCHMARK(BM_AllReduce)
    ->Arg(1 << 10)
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_AllReduce)
    ->Arg(16 << 10)
    ->Iterations(1000)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_AllReduce)
    ->Arg(256 << 10)
    ->Iterations(300)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_AllReduce)->Arg(4 << 20)->Iterations(50)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AllReduce)->Arg(64 << 20)->Iterations(8)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const bool lead = group().rank() == 0;
  benchmark::BenchmarkReporter* quiet = nullptr;
  struct Null : benchmark::BenchmarkReporter {
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>&) override {}
  } null;
  if (!lead) quiet = &null;
  benchmark::RunSpecifiedBenchmarks(quiet);
  group().barrier();
  ember::distributed::destroy_process_group();
  benchmark::Shutdown();
  return 0;
}
