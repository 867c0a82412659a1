// Dense helpers the fused CPU kernels share (attention.cpp, rnn.cpp): a row-major gemm for
// float32 (oneDNN's sgemm) and float64 (a plain loop), and float math as straight-line code the
// compiler vectorizes (exp of non-positive arguments, sigmoid, tanh).
#pragma once

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace ember::cpu {

/** C[M x N] = alpha op(A) op(B) + beta C, row-major, op = transpose for 'T'. */
inline void gemm(char ta, char tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    }
    return;
  }
  // The arguments are valid by construction; sgemm fails only on invalid ones.
  (void)dnnl_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
inline void gemm(char ta, char tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
                 int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    double* c = C + i * ldc;
    for (int64_t j = 0; j < N; ++j) c[j] = beta == 0.0 ? 0.0 : beta * c[j];
    for (int64_t kk = 0; kk < K; ++kk) {
      const double a = alpha * (ta == 'N' ? A[i * lda + kk] : A[kk * lda + i]);
      if (tb == 'N') {
        const double* b = B + kk * ldb;
        for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
      } else {
        for (int64_t j = 0; j < N; ++j) c[j] += a * B[j * ldb + kk];
      }
    }
  }
}

// Note [A vectorizable exp]
// Every attention score goes through exp once in the forward and twice in the backward: 8.4
// million per forward at 8 heads and L = S = 1024; an LSTM's gates go through a sigmoid or tanh
// each step. std::exp is a call per element that the compiler cannot vectorize without
// -ffast-math, and it took most of the attention forward's time. exp_approx is straight-line
// float code that vectorizes (Cephes' expf: 2^n times a degree-6 polynomial on [-ln2/2, ln2/2],
// relative error about 2e-7) for x <= 0, exactly 0 below log(FLT_MIN) so that masked scores
// (-inf) still weigh nothing (its worst relative error over [-87, 0] measured 8e-8). The
// attention's exp_shifted and the sigmoid and tanh below are built on it; float64 keeps std::exp.
[[gnu::always_inline]] inline float exp_approx(float x) {
  // Only x <= 0 arrives (scores minus their max or logsumexp, -|x| in the gates); the clamp below
  // log(FLT_MIN) and the zeroing beyond it compare the bits as integers, since a float compare
  // keeps the loop scalar (it may trap, so GCC does not if-convert it without -ffast-math). For
  // negative floats a larger bit pattern is a more negative number.
  constexpr uint32_t kLow = std::bit_cast<uint32_t>(-87.33654f);
  const uint32_t ux = std::bit_cast<uint32_t>(x);
  const uint32_t keep = 0u - static_cast<uint32_t>(ux < kLow);  // all ones above the clamp
  const float xc = std::bit_cast<float>(std::min(ux, kLow));
  // n = round(x / ln 2) by the 1.5 * 2^23 trick, r = x - n ln 2 in two parts.
  const float n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f;
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  const float pow2n = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(y * pow2n) & keep);
}

/** A quiet NaN where the float with bits `ux` is a NaN, else `r`: the approximations below
 *  would otherwise turn a NaN into a number. */
[[gnu::always_inline]] inline float keep_nan(uint32_t ux, float r) {
  const uint32_t nan = 0u - static_cast<uint32_t>((ux & 0x7fffffffu) > 0x7f800000u);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(r) & ~nan) | (0x7fc00000u & nan));
}

/** 1 / (1 + exp(-x)) from z = exp(-|x|): 1 / (1 + z) for x >= 0, z / (1 + z) below, chosen by
 *  the sign bit so that the loop stays branch-free (Note [A vectorizable exp]). */
[[gnu::always_inline]] inline float sigmoid_approx(float x) {
  const uint32_t ux = std::bit_cast<uint32_t>(x);
  const float z = exp_approx(std::bit_cast<float>(ux | 0x80000000u));
  const float s = 1.0f / (1.0f + z);
  const uint32_t neg = 0u - (ux >> 31);
  const uint32_t r = (std::bit_cast<uint32_t>(s) & ~neg) | (std::bit_cast<uint32_t>(z * s) & neg);
  return keep_nan(ux, std::bit_cast<float>(r));
}

/** tanh(x): Cephes' odd polynomial below |x| = 0.625 (where (1 - z) / (1 + z) would lose digits
 *  to cancellation), sign(x) (1 - z) / (1 + z) with z = exp(-2|x|) above; branch-free. */
[[gnu::always_inline]] inline float tanh_approx(float x) {
  const uint32_t ux = std::bit_cast<uint32_t>(x), ax = ux & 0x7fffffffu, sign = ux & 0x80000000u;
  const float x2 = x * x;
  float p = -5.70498872745e-3f;
  p = p * x2 + 2.06390887954e-2f;
  p = p * x2 - 5.37397155531e-2f;
  p = p * x2 + 1.33314422036e-1f;
  p = p * x2 - 3.33332819422e-1f;
  const float small = p * x2 * x + x;
  const float z = exp_approx(-2.0f * std::bit_cast<float>(ax));
  const float large = std::bit_cast<float>(std::bit_cast<uint32_t>((1.0f - z) / (1.0f + z)) | sign);
  const uint32_t use_small = 0u - static_cast<uint32_t>(ax < std::bit_cast<uint32_t>(0.625f));
  const uint32_t r =
      (std::bit_cast<uint32_t>(small) & use_small) | (std::bit_cast<uint32_t>(large) & ~use_small);
  return keep_nan(ux, std::bit_cast<float>(r));
}

/** erf(x) as PyTorch's vectorized CPU kernels compute it (Abramowitz and Stegun 7.1.26:
 *  1 - t P(t) exp(-x^2), t = 1 / (1 + p |x|), absolute error below 1.5e-7; branch-free). Good
 *  for GELU, which adds it to 1; not as the erf op, whose small values need relative accuracy. */
[[gnu::always_inline]] inline float erf_approx(float x) {
  const uint32_t ux = std::bit_cast<uint32_t>(x);
  const float a = std::bit_cast<float>(ux & 0x7fffffffu);
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  const float y = 1.0f - p * t * exp_approx(-(a * a));
  return keep_nan(ux, std::bit_cast<float>(std::bit_cast<uint32_t>(y) | (ux & 0x80000000u)));
}

// Note [Reductions in lanes]
// A float max or sum over a row, written as one running value, keeps the loop scalar: each step
// waits for the last (about 4 cycles), and without -ffast-math the compiler may not reorder
// them. Kept in 8 independent lanes combined at the end, the loop vectorizes. The max is the
// same value either way (NaN skipped, as std::max(running, x) skips it); the sum rounds
// differently from the in-order one, by the usual float reassociation.

/** The largest of x[0, n), -inf for n = 0; NaN elements are skipped (Note [Reductions in lanes]).
 */
[[gnu::always_inline]] inline float row_max(const float* x, int64_t n) {
  constexpr float kLow = -__builtin_inff();
  float lane[8] = {kLow, kLow, kLow, kLow, kLow, kLow, kLow, kLow};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int k = 0; k < 8; ++k) lane[k] = lane[k] < x[j + k] ? x[j + k] : lane[k];
  }
  for (; j < n; ++j) lane[0] = lane[0] < x[j] ? x[j] : lane[0];
  float r = lane[0];
  for (int k = 1; k < 8; ++k) r = r < lane[k] ? lane[k] : r;
  return r;
}

/** The sum of x[0, n) in 8 lanes (Note [Reductions in lanes]). */
[[gnu::always_inline]] inline float row_sum(const float* x, int64_t n) {
  float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int k = 0; k < 8; ++k) lane[k] += x[j + k];
  }
  for (; j < n; ++j) lane[0] += x[j];
  return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

// Note [AVX2 clones of hot loops]
// The plugin is built for baseline x86-64 (SSE2, 4 floats per instruction) so that it loads on any
// x86-64 CPU. A loop that is bound by arithmetic, not memory, can be compiled a second time
// inside a function marked EMBER_CPU_AVX2 (8 floats per instruction) and chosen at run time with
// cpu_has_avx2(): the loop's body is an always_inline template, so each caller compiles its own
// copy for its target. Without -ffp-contract the compiler fuses no multiply-add on its own, so
// both copies round alike and results do not depend on the CPU. EMBER_CPU_BASELINE=1 makes an
// AVX2 machine run the baseline copies (the test `CpuBaselineLoops` runs the cases of these
// loops that way).
#if defined(__x86_64__)
#define EMBER_CPU_AVX2 __attribute__((target("avx2,fma")))
#else
#define EMBER_CPU_AVX2
#endif

/** True when the CPU runs AVX2 and FMA code and EMBER_CPU_BASELINE is unset (Note [AVX2 clones
 *  of hot loops]). */
inline bool cpu_has_avx2() {
#if defined(__x86_64__)
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          std::getenv("EMBER_CPU_BASELINE") == nullptr;
  return yes;
#else
  return false;
#endif
}

}  // namespace ember::cpu
