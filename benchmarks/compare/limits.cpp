// The machine's limits the table sets rates against: fp32 FMA peak (AVX2 or AVX-512, chosen at
// run time) and STREAM-like copy/triad bandwidth.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "benchmarks/compare/driver.h"
#include "benchmarks/compare/workloads.h"

namespace compare {
namespace {

// Note [FMA peak loop]: one FMA has a latency of 4-5 cycles and a core issues two per cycle,
// so a loop needs about ten independent accumulator chains to keep both pipes busy. Twelve
// chains of a*m + c never overflow (m < 1) and the result is summed so it cannot be elided.
constexpr int kChains = 12;

__attribute__((target("avx2,fma"))) float fma_loop_avx2(int64_t iters, float seed) {
  __m256 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm256_set1_ps(seed + static_cast<float>(j));
  const __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm256_fmadd_ps(acc[j], m, c);
  }
  __m256 s = acc[0];
  for (int j = 1; j < kChains; ++j) s = _mm256_add_ps(s, acc[j]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

__attribute__((target("avx512f"))) float fma_loop_avx512(int64_t iters, float seed) {
  __m512 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(seed + static_cast<float>(j));
  const __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], m, c);
  }
  __m512 s = acc[0];
  for (int j = 1; j < kChains; ++j) s = _mm512_add_ps(s, acc[j]);
  float out[16];
  _mm512_storeu_ps(out, s);  // not _mm512_reduce_add_ps: GCC 12 warns inside it (-Wuninitialized)
  return out[0] + out[15];
}

volatile float g_sink = 0;

}  // namespace

// Note [Concurrent FMA peak]: the multi-thread peak is the rate of all threads running their
// chains at the same time, each on its own core with its own registers. Three things used to
// make a 2-thread reading come out at about one core: the first repetition paid for creating
// the team (a parked vCPU of a VM can take milliseconds to come back), threads were not bound,
// so for a short loop both could start on the parent's CPU until the scheduler moved one, and
// a loop of ~0.1 s timed from outside the region counts any gap between the threads' starts.
// So the team is created and bound (proc_bind(spread): one thread per CPU) before anything is
// timed, every repetition starts from a barrier, each thread times its own loop, and the rate
// of a repetition is all threads' flops over the span from the earliest start to the latest
// end. The best of several repetitions is kept: a core taken by another process for a moment
// only lowers the repetitions it overlaps.
double fma_peak_gflops(int threads, const char** isa) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (isa) *isa = avx512 ? "AVX-512" : "AVX2";
  const int lanes = avx512 ? 16 : 8;
  const int64_t iters = int64_t{40} << 20;
  const auto loop = [&](int64_t n, float seed) {
    return avx512 ? fma_loop_avx512(n, seed) : fma_loop_avx2(n, seed);
  };
  std::vector<double> start(static_cast<size_t>(threads)), end(start.size());
  double best = 0;
#pragma omp parallel num_threads(threads) proc_bind(spread)
  {
    const int t = omp_get_thread_num();
    const float warm = loop(iters / 16, 1.0f + static_cast<float>(t));  // team up, clocks up
    if (t == 0) g_sink = warm;
    for (int rep = 0; rep < 6; ++rep) {
#pragma omp barrier
      start[static_cast<size_t>(t)] = now_s();
      const float r = loop(iters, 1.0f + static_cast<float>(t));
      end[static_cast<size_t>(t)] = now_s();
      if (t == 0) g_sink = r;
#pragma omp barrier
#pragma omp single
      {
        const int ran = omp_get_num_threads();  // fewer than asked only if the runtime says so
        const double span = *std::max_element(end.begin(), end.begin() + ran) -
                            *std::min_element(start.begin(), start.begin() + ran);
        best = std::max(best, 2.0 * lanes * kChains * static_cast<double>(iters) * ran / span);
      }
    }
  }
  return best / 1e9;
}

double stream_gbs(int threads, bool triad) {
  const int64_t n = kBig;
  std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
  float *pa = a.get(), *pb = b.get(), *pc = c.get();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    pa[i] = 1.0f;
    pb[i] = 2.0f;
    pc[i] = 0.5f;
  }
  const float s = 3.0f;
  double best = 1e30;
  for (int rep = 0; rep < 6; ++rep) {
    const double t0 = now_s();
    if (triad) {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
    } else {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t i = 0; i < n; ++i) pc[i] = pa[i];
    }
    best = std::min(best, now_s() - t0);
  }
  g_sink = pa[n / 2] + pc[n / 3];
  return (triad ? 3.0 : 2.0) * 4.0 * static_cast<double>(n) / best / 1e9;
}

}  // namespace compare
