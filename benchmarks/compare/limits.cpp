// The machine's limits the table sets rates against: fp32 FMA peak (AVX2 or AVX-512, chosen at
// run time) and STREAM-like copy/triad bandwidth.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <memory>

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

double fma_peak_gflops(int threads, const char** isa) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (isa) *isa = avx512 ? "AVX-512" : "AVX2";
  const int lanes = avx512 ? 16 : 8;
  const int64_t iters = int64_t{40} << 20;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const double t0 = now_s();
#pragma omp parallel num_threads(threads)
    {
      const float r = avx512 ? fma_loop_avx512(iters, 1.0f + omp_get_thread_num())
                             : fma_loop_avx2(iters, 1.0f + omp_get_thread_num());
      g_sink = r;
    }
    const double s = now_s() - t0;
    best = std::max(best, 2.0 * lanes * kChains * static_cast<double>(iters) * threads / s);
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
