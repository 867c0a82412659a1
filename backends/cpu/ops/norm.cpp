// CPU normalisation kernels: batch_norm (statistics per channel of [N, C, S]) and the row norms
// layer_norm / group_norm (statistics per row of [R, K * S]), forward and backward, as own
// loops (contract in core/ops/norm.cpp). Two passes for the statistics (mean, then the squared
// deviations: no cancellation when the mean is large), one for the affine output.
//
// Note [Accumulation in the norm kernels]
// A run of contiguous elements is summed in the compute type with `omp simd` (vectorised,
// reassociated) in blocks of kBlock, and the blocks are added in double: float32 sums of
// millions of elements (a batch_norm channel of [32, 64, 56, 56] holds 100352) keep ~1e-7
// relative accuracy while the inner loop runs at vector speed.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "backends/cpu/dense_math.h"
#include "backends/cpu/loops.h"
#include "backends/cpu/ops/ops.h"
#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_norm.hpp"

namespace ember::cpu {
namespace {

constexpr int64_t kBlock = 4096;

/** sum(p[i] - shift) over n elements. */
template <typename T>
[[gnu::always_inline]] inline double sum_of(const T* p, int64_t n, double shift) {
  using C = sdk::Compute<T>;
  const C sh = static_cast<C>(shift);
  double total = 0;
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t i1 = std::min(n, i0 + kBlock);
    C acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = i0; i < i1; ++i) acc += static_cast<C>(p[i]) - sh;
    total += static_cast<double>(acc);
  }
  return total;
}

/** sum((p[i] - mu)^2) over n elements. */
template <typename T>
[[gnu::always_inline]] inline double sqdev_of(const T* p, int64_t n, double mu) {
  using C = sdk::Compute<T>;
  const C m = static_cast<C>(mu);
  double total = 0;
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t i1 = std::min(n, i0 + kBlock);
    C acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = i0; i < i1; ++i) {
      const C d = static_cast<C>(p[i]) - m;
      acc += d * d;
    }
    total += static_cast<double>(acc);
  }
  return total;
}

/** {sum(dy), sum(dy * (x - mu))} over n elements. */
template <typename T>
void grad_sums(const T* dy, const T* x, int64_t n, double mu, double* s_dy, double* s_dyx) {
  using C = sdk::Compute<T>;
  const C m = static_cast<C>(mu);
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t i1 = std::min(n, i0 + kBlock);
    C a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
    for (int64_t i = i0; i < i1; ++i) {
      const C g = static_cast<C>(dy[i]);
      a += g;
      b += g * (static_cast<C>(x[i]) - m);
    }
    *s_dy += static_cast<double>(a);
    *s_dyx += static_cast<double>(b);
  }
}

/** dst[i] = a * x[i] + c (+ b2 * g[i] when g is given). */
template <typename T>
void affine(const T* x, T* dst, int64_t n, double a, double c, const T* g = nullptr,
            double b2 = 0) {
  using C = sdk::Compute<T>;
  const C ca = static_cast<C>(a), cc = static_cast<C>(c), cb = static_cast<C>(b2);
  if (g == nullptr) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<C>(x[i]) * ca + cc);
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = static_cast<T>(static_cast<C>(g[i]) * cb + static_cast<C>(x[i]) * ca + cc);
    }
  }
}

// ---- batch_norm ---------------------------------------------------------------------------

// Note [Batch norm over rows of channels]
// With S == 1 the operand is rows of C channels: a channels-last image seen as [N*H*W, C, 1]
// (Note [Channels-last batch norm] in core/ops/norm.cpp) or a BatchNorm1d input [N, C]. A
// channel's elements are then C apart, so the per-channel loops above would sum one element per
// call. These loops go over rows instead, vectorised across the channels: per-channel sums of a
// block of kRowBlock rows in the compute type, the blocks added in double in block order. The
// blocks are fixed, whatever the number of threads, so the results do not depend on it.
constexpr int64_t kRowBlock = 256;

/** out[k * C + c] = the sum over rows r < M of what term(r, acc) adds to acc[k * C + c], for
 *  k < K (Note [Batch norm over rows of channels]). */
template <typename Cp, int K, typename Term>
void channel_sums(int64_t M, int64_t C, Term term, double* out) {
  const int64_t blocks = (M + kRowBlock - 1) / kRowBlock, width = K * C;
  const bool parallel = go_parallel(M * C) && blocks > 1;
  const int threads = parallel ? omp_get_max_threads() : 1;
  std::vector<double> part(static_cast<size_t>(blocks * width));
  std::vector<Cp> accs(static_cast<size_t>(threads * width));
#pragma omp parallel for schedule(static) num_threads(threads) if (parallel)
  for (int64_t bi = 0; bi < blocks; ++bi) {
    Cp* acc = accs.data() + static_cast<int64_t>(omp_get_thread_num()) * width;
    std::fill(acc, acc + width, Cp(0));
    const int64_t r1 = std::min(M, (bi + 1) * kRowBlock);
    for (int64_t r = bi * kRowBlock; r < r1; ++r) term(r, acc);
    double* p = part.data() + bi * width;
    for (int64_t i = 0; i < width; ++i) p[i] = static_cast<double>(acc[i]);
  }
  std::fill(out, out + width, 0.0);
  for (int64_t bi = 0; bi < blocks; ++bi) {
    for (int64_t i = 0; i < width; ++i) out[i] += part[static_cast<size_t>(bi * width + i)];
  }
}

/** dst row r = x row r * a + c (+ g row r * b2 when g is given), per channel, over M rows of C. */
template <typename T, typename Cp = sdk::Compute<T>>
void channel_affine(const T* x, T* dst, int64_t M, int64_t C, const Cp* a, const Cp* c,
                    const T* g = nullptr, const Cp* b2 = nullptr) {
#pragma omp parallel for schedule(static) if (go_parallel(M * C))
  for (int64_t r = 0; r < M; ++r) {
    const T* xr = x + r * C;
    T* dr = dst + r * C;
    if (g == nullptr) {
#pragma omp simd
      for (int64_t k = 0; k < C; ++k) dr[k] = static_cast<T>(static_cast<Cp>(xr[k]) * a[k] + c[k]);
    } else {
      const T* gr = g + r * C;
#pragma omp simd
      for (int64_t k = 0; k < C; ++k) {
        dr[k] =
            static_cast<T>(static_cast<Cp>(gr[k]) * b2[k] + static_cast<Cp>(xr[k]) * a[k] + c[k]);
      }
    }
  }
}

// batch_norm forward over M rows of C channels (S == 1); x, w, b, y as bn_forward read them.
template <typename T>
void bn_forward_rows(const ember_kernel_call* call, const T* x, const T* w, const T* b, T* y,
                     int64_t M, int64_t Cn, bool training, double eps) {
  using Cp = sdk::Compute<T>;
  std::vector<double> mu(static_cast<size_t>(Cn)), var(static_cast<size_t>(Cn));
  if (training) {
    channel_sums<Cp, 1>(
        M, Cn,
        [&](int64_t r, Cp* acc) {
          const T* xr = x + r * Cn;
#pragma omp simd
          for (int64_t k = 0; k < Cn; ++k) acc[k] += static_cast<Cp>(xr[k]);
        },
        mu.data());
    std::vector<Cp> m(static_cast<size_t>(Cn));
    for (int64_t k = 0; k < Cn; ++k) {
      mu[k] /= static_cast<double>(M);
      m[k] = static_cast<Cp>(mu[k]);
    }
    channel_sums<Cp, 1>(
        M, Cn,
        [&](int64_t r, Cp* acc) {
          const T* xr = x + r * Cn;
#pragma omp simd
          for (int64_t k = 0; k < Cn; ++k) {
            const Cp d = static_cast<Cp>(xr[k]) - m[k];
            acc[k] += d * d;
          }
        },
        var.data());
    T* mean_out = static_cast<T*>(call->outputs[1].data);
    T* var_out = static_cast<T*>(call->outputs[2].data);
    for (int64_t k = 0; k < Cn; ++k) {
      var[k] /= static_cast<double>(M);
      mean_out[k] = store<T>(mu[k]);
      var_out[k] = store<T>(var[k]);
    }
  } else {
    const T* rm = static_cast<const T*>(call->inputs[3].data);
    const T* rv = static_cast<const T*>(call->inputs[4].data);
    for (int64_t k = 0; k < Cn; ++k) {
      mu[k] = static_cast<double>(static_cast<Cp>(rm[k]));
      var[k] = static_cast<double>(static_cast<Cp>(rv[k]));
    }
  }
  std::vector<Cp> a(static_cast<size_t>(Cn)), sh(static_cast<size_t>(Cn));
  for (int64_t k = 0; k < Cn; ++k) {
    const double ak = static_cast<double>(static_cast<Cp>(w[k])) / std::sqrt(var[k] + eps);
    a[k] = static_cast<Cp>(ak);
    sh[k] = static_cast<Cp>(static_cast<double>(static_cast<Cp>(b[k])) - mu[k] * ak);
  }
  channel_affine<T>(x, y, M, Cn, a.data(), sh.data());
}

// batch_norm backward over M rows of C channels (S == 1), the formulas of bn_backward, on the
// operands it read.
template <typename T>
void bn_backward_rows(const T* dy, const T* x, const T* w, const T* mean, const T* var, T* dx,
                      T* dw, T* db, int64_t M, int64_t Cn, bool training, double eps) {
  using Cp = sdk::Compute<T>;
  std::vector<Cp> m(static_cast<size_t>(Cn));
  for (int64_t k = 0; k < Cn; ++k) m[k] = static_cast<Cp>(mean[k]);
  std::vector<double> sums(static_cast<size_t>(2 * Cn));  // sum(dy), then sum(dy * (x - mu))
  channel_sums<Cp, 2>(
      M, Cn,
      [&](int64_t r, Cp* acc) {
        const T* dr = dy + r * Cn;
        const T* xr = x + r * Cn;
#pragma omp simd
        for (int64_t k = 0; k < Cn; ++k) {
          const Cp g = static_cast<Cp>(dr[k]);
          acc[k] += g;
          acc[Cn + k] += g * (static_cast<Cp>(xr[k]) - m[k]);
        }
      },
      sums.data());
  std::vector<Cp> k1(static_cast<size_t>(Cn)), kx(static_cast<size_t>(Cn)),
      k0(static_cast<size_t>(Cn));
  const double md = static_cast<double>(M);
  for (int64_t k = 0; k < Cn; ++k) {
    const double mu = static_cast<double>(m[k]);
    const double invstd = 1.0 / std::sqrt(static_cast<double>(static_cast<Cp>(var[k])) + eps);
    const double s_dy = sums[k], s_dyxhat = sums[Cn + k] * invstd;
    dw[k] = store<T>(s_dyxhat);
    db[k] = store<T>(s_dy);
    const double c1 = static_cast<double>(static_cast<Cp>(w[k])) * invstd;
    const double cx = training ? -c1 * invstd * s_dyxhat / md : 0.0;
    k1[k] = static_cast<Cp>(c1);
    kx[k] = static_cast<Cp>(cx);
    k0[k] = static_cast<Cp>(training ? -c1 * s_dy / md - cx * mu : 0.0);
  }
  channel_affine<T>(x, dx, M, Cn, kx.data(), k0.data(), dy, k1.data());
}

template <typename T>
void bn_forward(const ember_kernel_call* call, int64_t N, int64_t Cn, int64_t S, bool training,
                double eps) {
  const T* x = static_cast<const T*>(call->inputs[0].data);
  const T* w = static_cast<const T*>(call->inputs[1].data);
  const T* b = static_cast<const T*>(call->inputs[2].data);
  T* y = static_cast<T*>(call->outputs[0].data);
  if (S == 1) return bn_forward_rows<T>(call, x, w, b, y, N, Cn, training, eps);
  const double m = static_cast<double>(N * S);
  if (training) {
    T* mean = static_cast<T*>(call->outputs[1].data);
    T* var = static_cast<T*>(call->outputs[2].data);
#pragma omp parallel for schedule(static) if (go_parallel(N * Cn * S))
    for (int64_t c = 0; c < Cn; ++c) {
      double s = 0;
      for (int64_t n = 0; n < N; ++n) s += sum_of(x + (n * Cn + c) * S, S, 0.0);
      const double mu = s / m;
      double q = 0;
      for (int64_t n = 0; n < N; ++n) q += sqdev_of(x + (n * Cn + c) * S, S, mu);
      const double v = q / m;
      const double a = static_cast<double>(static_cast<sdk::Compute<T>>(w[c])) / std::sqrt(v + eps);
      const double sh = static_cast<double>(static_cast<sdk::Compute<T>>(b[c])) - mu * a;
      for (int64_t n = 0; n < N; ++n) affine(x + (n * Cn + c) * S, y + (n * Cn + c) * S, S, a, sh);
      mean[c] = store<T>(mu);
      var[c] = store<T>(v);
    }
    return;
  }
  const T* rm = static_cast<const T*>(call->inputs[3].data);
  const T* rv = static_cast<const T*>(call->inputs[4].data);
#pragma omp parallel for schedule(static) if (go_parallel(N * Cn * S))
  for (int64_t nc = 0; nc < N * Cn; ++nc) {
    const int64_t c = nc % Cn;
    using Cp = sdk::Compute<T>;
    const double a = static_cast<double>(static_cast<Cp>(w[c])) /
                     std::sqrt(static_cast<double>(static_cast<Cp>(rv[c])) + eps);
    const double sh = static_cast<double>(static_cast<Cp>(b[c])) -
                      static_cast<double>(static_cast<Cp>(rm[c])) * a;
    affine(x + nc * S, y + nc * S, S, a, sh);
  }
}

template <typename T>
void bn_backward(const ember_kernel_call* call, int64_t N, int64_t Cn, int64_t S, bool training,
                 double eps) {
  using Cp = sdk::Compute<T>;
  const T* dy = static_cast<const T*>(call->inputs[0].data);
  const T* x = static_cast<const T*>(call->inputs[1].data);
  const T* w = static_cast<const T*>(call->inputs[2].data);
  const T* mean = static_cast<const T*>(call->inputs[3].data);
  const T* var = static_cast<const T*>(call->inputs[4].data);
  T* dx = static_cast<T*>(call->outputs[0].data);
  T* dw = static_cast<T*>(call->outputs[1].data);
  T* db = static_cast<T*>(call->outputs[2].data);
  if (S == 1) return bn_backward_rows<T>(dy, x, w, mean, var, dx, dw, db, N, Cn, training, eps);
  const double m = static_cast<double>(N * S);
#pragma omp parallel for schedule(static) if (go_parallel(N * Cn * S))
  for (int64_t c = 0; c < Cn; ++c) {
    const double mu = static_cast<double>(static_cast<Cp>(mean[c]));
    const double invstd = 1.0 / std::sqrt(static_cast<double>(static_cast<Cp>(var[c])) + eps);
    double s_dy = 0, s_dyx = 0;
    for (int64_t n = 0; n < N; ++n) {
      grad_sums(dy + (n * Cn + c) * S, x + (n * Cn + c) * S, S, mu, &s_dy, &s_dyx);
    }
    const double s_dyxhat = s_dyx * invstd;  // sum(dy * xhat)
    dw[c] = store<T>(s_dyxhat);
    db[c] = store<T>(s_dy);
    const double k1 = static_cast<double>(static_cast<Cp>(w[c])) * invstd;
    // training: dx = k1 * (dy - s_dy / m - xhat * s_dyxhat / m), xhat = (x - mu) * invstd,
    // i.e. dx = k1 * dy + kx * x + k0; eval: dx = k1 * dy.
    const double kx = training ? -k1 * invstd * s_dyxhat / m : 0.0;
    const double k0 = training ? -k1 * s_dy / m - kx * mu : 0.0;
    for (int64_t n = 0; n < N; ++n) {
      const int64_t off = (n * Cn + c) * S;
      affine(x + off, dx + off, S, kx, k0, dy + off, k1);
    }
  }
}

// ---- layer_norm, group_norm ---------------------------------------------------------------

// Rows [r0, r1) of the row norms' forward: statistics, then the affine output.
template <typename T>
[[gnu::always_inline]] inline void rows_forward_range(const T* x, const T* w, const T* b, T* y,
                                                      T* mean, T* rstd, int64_t r0, int64_t r1,
                                                      int64_t G, int64_t K, int64_t S, double eps) {
  using Cp = sdk::Compute<T>;
  const int64_t D = K * S;
  for (int64_t r = r0; r < r1; ++r) {
    const T* xr = x + r * D;
    T* yr = y + r * D;
    const double mu = sum_of(xr, D, 0.0) / static_cast<double>(D);
    const double invstd = 1.0 / std::sqrt(sqdev_of(xr, D, mu) / static_cast<double>(D) + eps);
    mean[r] = store<T>(mu);
    rstd[r] = store<T>(invstd);
    const T* wr = w + (r % G) * K;
    const T* br = b + (r % G) * K;
    if (S == 1) {
      const Cp cm = static_cast<Cp>(mu), ci = static_cast<Cp>(invstd);
#pragma omp simd
      for (int64_t k = 0; k < K; ++k) {
        yr[k] = static_cast<T>((static_cast<Cp>(xr[k]) - cm) * ci * static_cast<Cp>(wr[k]) +
                               static_cast<Cp>(br[k]));
      }
    } else {
      for (int64_t k = 0; k < K; ++k) {
        const double a = static_cast<double>(static_cast<Cp>(wr[k])) * invstd;
        affine(xr + k * S, yr + k * S, S, a, static_cast<double>(static_cast<Cp>(br[k])) - mu * a);
      }
    }
  }
}

// float32 rows in an AVX2 copy (Note [AVX2 clones of hot loops]): a LayerNorm's rows are short
// (a Transformer's 64 to 1024 features), so the vector width decides their time.
EMBER_CPU_AVX2 void rows_forward_avx2(const float* x, const float* w, const float* b, float* y,
                                      float* mean, float* rstd, int64_t r0, int64_t r1, int64_t G,
                                      int64_t K, int64_t S, double eps) {
  rows_forward_range(x, w, b, y, mean, rstd, r0, r1, G, K, S, eps);
}

template <typename T>
void rows_forward(const ember_kernel_call* call, int64_t R, int64_t G, int64_t K, int64_t S,
                  double eps) {
  const T* x = static_cast<const T*>(call->inputs[0].data);
  const T* w = static_cast<const T*>(call->inputs[1].data);
  const T* b = static_cast<const T*>(call->inputs[2].data);
  T* y = static_cast<T*>(call->outputs[0].data);
  T* mean = static_cast<T*>(call->outputs[1].data);
  T* rstd = static_cast<T*>(call->outputs[2].data);
  // Chunks of rows, so that the vector copy is chosen once per chunk.
  const int64_t D = K * S, chunk = std::max<int64_t>(1, 4096 / D);
  const int64_t chunks = (R + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (go_parallel(R * D))
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t r0 = c * chunk, r1 = std::min(R, r0 + chunk);
    if constexpr (std::is_same_v<T, float>) {
      if (cpu_has_avx2()) {
        rows_forward_avx2(x, w, b, y, mean, rstd, r0, r1, G, K, S, eps);
        continue;
      }
    }
    rows_forward_range(x, w, b, y, mean, rstd, r0, r1, G, K, S, eps);
  }
}

// The operands of the row norms' backward (dy, x, w, mean, rstd -> dx), shared by every row.
template <typename T>
struct RowsGrad {
  const T *dy, *x, *w, *mean, *rstd;
  T* dx;
  int64_t G, K, S;
};

// Rows [r0, r1) of the row norms' backward: dx, and the rows' dweight and dbias terms added into
// pw and pb (this thread's partial sums).
template <typename T>
[[gnu::always_inline]] inline void rows_backward_range(const RowsGrad<T>& op, int64_t r0,
                                                       int64_t r1, double* pw, double* pb) {
  using Cp = sdk::Compute<T>;
  const T *dy = op.dy, *x = op.x, *w = op.w, *mean = op.mean, *rstd = op.rstd;
  T* dx = op.dx;
  const int64_t G = op.G, K = op.K, S = op.S, D = K * S;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t off = r * D, o = (r % G) * K;
    const T* dyr = dy + off;
    const T* xr = x + off;
    T* dxr = dx + off;
    const T* wr = w + o;
    const double mu = static_cast<double>(static_cast<Cp>(mean[r]));
    const double invstd = static_cast<double>(static_cast<Cp>(rstd[r]));
    double s_g = 0, s_gx = 0;  // sum(g), sum(g * xhat) with g = dy * w
    if (S == 1) {
      const Cp cm = static_cast<Cp>(mu), ci = static_cast<Cp>(invstd);
      Cp a = 0, bsum = 0;
#pragma omp simd reduction(+ : a, bsum)
      for (int64_t k = 0; k < K; ++k) {
        const Cp g = static_cast<Cp>(dyr[k]);
        const Cp xh = (static_cast<Cp>(xr[k]) - cm) * ci;
        const Cp gw = g * static_cast<Cp>(wr[k]);
        a += gw;
        bsum += gw * xh;
      }
      s_g = a;
      s_gx = bsum;
      for (int64_t k = 0; k < K; ++k) {
        const Cp g = static_cast<Cp>(dyr[k]);
        pw[o + k] += static_cast<double>(g * (static_cast<Cp>(xr[k]) - cm) * ci);
        pb[o + k] += static_cast<double>(g);
      }
      const Cp mg = static_cast<Cp>(s_g / static_cast<double>(D));
      const Cp mgx = static_cast<Cp>(s_gx / static_cast<double>(D));
#pragma omp simd
      for (int64_t k = 0; k < K; ++k) {
        const Cp xh = (static_cast<Cp>(xr[k]) - cm) * ci;
        dxr[k] =
            static_cast<T>(ci * (static_cast<Cp>(dyr[k]) * static_cast<Cp>(wr[k]) - mg - xh * mgx));
      }
    } else {
      for (int64_t k = 0; k < K; ++k) {
        double sd = 0, sx = 0;
        grad_sums(dyr + k * S, xr + k * S, S, mu, &sd, &sx);
        sx *= invstd;  // sum(dy * xhat) over the channel
        const double wk = static_cast<double>(static_cast<Cp>(wr[k]));
        s_g += wk * sd;
        s_gx += wk * sx;
        pw[o + k] += sx;
        pb[o + k] += sd;
      }
      const double mg = s_g / static_cast<double>(D), mgx = s_gx / static_cast<double>(D);
      for (int64_t k = 0; k < K; ++k) {
        // dx = invstd * (w * dy - mg - (x - mu) * invstd * mgx)
        const double wk = static_cast<double>(static_cast<Cp>(wr[k]));
        const double kx = -invstd * invstd * mgx;
        affine(xr + k * S, dxr + k * S, S, kx, -invstd * mg - kx * mu, dyr + k * S, invstd * wk);
      }
    }
  }
}

// float32 rows in an AVX2 copy, as the forward's (rows_forward_avx2).
EMBER_CPU_AVX2 void rows_backward_avx2(const RowsGrad<float>& op, int64_t r0, int64_t r1,
                                       double* pw, double* pb) {
  rows_backward_range(op, r0, r1, pw, pb);
}

template <typename T>
void rows_backward(const ember_kernel_call* call, int64_t R, int64_t G, int64_t K, int64_t S) {
  const RowsGrad<T> op{static_cast<const T*>(call->inputs[0].data),
                       static_cast<const T*>(call->inputs[1].data),
                       static_cast<const T*>(call->inputs[2].data),
                       static_cast<const T*>(call->inputs[3].data),
                       static_cast<const T*>(call->inputs[4].data),
                       static_cast<T*>(call->outputs[0].data),
                       G,
                       K,
                       S};
  T* dw = static_cast<T*>(call->outputs[1].data);
  T* db = static_cast<T*>(call->outputs[2].data);
  const int64_t D = K * S, P = G * K;
  const bool parallel = go_parallel(R * D);
  const int threads = parallel ? omp_get_max_threads() : 1;
  // Per-thread partial sums of dweight and dbias, added up after the rows.
  std::vector<double> part(static_cast<size_t>(threads) * 2 * static_cast<size_t>(P), 0.0);
  const int64_t chunk = std::max<int64_t>(1, 4096 / D), chunks = (R + chunk - 1) / chunk;
#pragma omp parallel num_threads(threads) if (parallel)
  {
    double* pw = part.data() + static_cast<size_t>(omp_get_thread_num()) * 2 * P;
    double* pb = pw + P;
#pragma omp for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t r0 = c * chunk, r1 = std::min(R, r0 + chunk);
      if constexpr (std::is_same_v<T, float>) {
        if (cpu_has_avx2()) {
          rows_backward_avx2(op, r0, r1, pw, pb);
          continue;
        }
      }
      rows_backward_range(op, r0, r1, pw, pb);
    }
  }
  for (int64_t p = 0; p < P; ++p) {
    double sw = 0, sb = 0;
    for (int t = 0; t < threads; ++t) {
      sw += part[static_cast<size_t>(t) * 2 * P + p];
      sb += part[static_cast<size_t>(t) * 2 * P + P + p];
    }
    dw[p] = store<T>(sw);
    db[p] = store<T>(sb);
  }
}

int32_t bad(const ember_kernel_call* call, const char* name) {
  return sdk::fail(call, EMBER_ERR_INVALID, "%s: bad arguments (%d inputs, %d outputs, %d ints)",
                   name, call->num_inputs, call->num_outputs, call->num_ints);
}

// batch_norm or its backward (op A).
template <typename A>
int32_t batch_norm_kernel(const ember_kernel_call* call) {
  constexpr bool Backward = A::kOp == ops::batch_norm_backward;
  const char* name = ops::kInfo[A::kOp].name;
  if (call->num_inputs < 3 || !sdk::all_dense(call)) return bad(call, name);
  const auto a = sdk::attrs<A>(call);
  const bool training = a.training != 0;
  const ember_tensor& x = call->inputs[Backward ? 1 : 0];
  if (!sdk::batch_norm_arity_ok(call, Backward, training)) return bad(call, name);
  const int64_t N = x.sizes[0], Cn = x.sizes[1], S = x.sizes[2];
  return sdk::visit_floating(call, x.dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Backward) {
      bn_backward<T>(call, N, Cn, S, training, a.eps);
    } else {
      bn_forward<T>(call, N, Cn, S, training, a.eps);
    }
  });
}

// layer_norm, group_norm (op A, forward) or their backward.
template <typename A, bool Backward>
int32_t rows_kernel(const ember_kernel_call* call) {
  const char* name = ops::kInfo[A::kOp].name;
  const auto a = sdk::attrs<A>(call);
  const int64_t G = a.groups, K = a.group_size, S = a.spatial;
  const int64_t R = sdk::norm_rows(call, Backward, G, K, S);
  if (R < 0) return bad(call, name);
  const ember_tensor& x = call->inputs[Backward ? 1 : 0];
  return sdk::visit_floating(call, x.dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Backward) {
      rows_backward<T>(call, R, G, K, S);
    } else {
      rows_forward<T>(call, R, G, K, S, a.eps);
    }
  });
}

}  // namespace

EMBER_KERNEL(batch_norm) {
  return batch_norm_kernel<attrs::batch_norm>(call);
}
EMBER_KERNEL(batch_norm_backward) {
  return batch_norm_kernel<attrs::batch_norm_backward>(call);
}
EMBER_KERNEL(layer_norm) {
  return rows_kernel<attrs::layer_norm, false>(call);
}
EMBER_KERNEL(layer_norm_backward) {
  return rows_kernel<attrs::layer_norm_backward, true>(call);
}
EMBER_KERNEL(group_norm) {
  return rows_kernel<attrs::group_norm, false>(call);
}
EMBER_KERNEL(group_norm_backward) {
  return rows_kernel<attrs::group_norm_backward, true>(call);
}

}  // namespace ember::cpu
