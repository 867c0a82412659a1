// Start-up time: from process start to the first CPU op result, with every plugin of the build
// present (the CUDA plugin too when CUDA was found at build time). Each iteration spawns this
// program as a child that runs `add(ones({1}), ones({1})).item()` and exits; the wall time of
// spawn + wait is the measurement. A second benchmark spawns a child that exits before touching
// Ember, so the difference is the cost of discovery, plugin loading and the first op.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include <benchmark/benchmark.h>
#include <ember/ember.h>

extern char** environ;

namespace {

// Spawns this executable with `arg` and waits; returns its exit status or -1.
int spawn_self(const char* arg) {
  char self[] = "/proc/self/exe";
  char* argv[] = {self, const_cast<char*>(arg), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, self, nullptr, nullptr, argv, environ) != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void BM_StartupToFirstCpuOp(benchmark::State& state) {
  for (auto _ : state) {
    if (spawn_self("--child") != 0) {
      state.SkipWithError("the child failed to compute 1 + 1");
      return;
    }
  }
  int loaded = 0;
  for (const ember::PluginRecord& p : ember::plugin_report().plugins) {
    loaded +=
        p.outcome == ember::PluginOutcome::Loaded || p.outcome == ember::PluginOutcome::Unusable;
  }
  state.counters["plugins_loaded"] = loaded;
}
BENCHMARK(BM_StartupToFirstCpuOp)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

void BM_ProcessStartBaseline(benchmark::State& state) {
  for (auto _ : state) {
    if (spawn_self("--exit") != 0) {
      state.SkipWithError("the child failed");
      return;
    }
  }
}
BENCHMARK(BM_ProcessStartBaseline)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--exit") == 0) return 0;
  if (argc > 1 && std::strcmp(argv[1], "--child") == 0) {
    return ember::add(ember::ones({1}), ember::ones({1})).item() == 2.0 ? 0 : 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
