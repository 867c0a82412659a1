// CPU pooling: max, average and adaptive average over dense [N, C, H, W], forward and backward,
// as own loops parallel over the N * C planes, or for channels-last images over the output
// pixels with the channels innermost (Note [Channels-last pooling]; contract in
// core/ops/pool.cpp).
//
// Note [Why pooling does not use oneDNN]
// oneDNN's max pooling returns a workspace in its own format, not PyTorch's flat h * W + w
// indices that max_pool2d_with_indices must return and its backward scatters through; and its
// average pooling has no equivalent of a ceil_mode window that runs past the padding (PyTorch
// divides such a window by its clipped size even with count_include_pad). The loops below
// follow PyTorch's windows exactly; each plane is a small dense array, so the inner loops over
// kernel taps have their bounds hoisted and run without branches.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/cpu/loops.h"
#include "backends/cpu/ops/ops.h"
#include "ember/plugin_sdk.hpp"

namespace ember::cpu {
namespace {

// Valid tap range [lo, hi) of a window starting at `start` with k taps d apart over [0, n).
inline void tap_range(int64_t start, int64_t k, int64_t d, int64_t n, int64_t* lo, int64_t* hi) {
  *lo = start >= 0 ? 0 : (-start + d - 1) / d;
  const int64_t rem = n - start;  // taps t with start + t*d < n
  *hi = rem <= 0 ? 0 : std::min(k, (rem + d - 1) / d);
}

// The taps of max pooling's output pixel (i, j): rows h0 + ty * dH for ty in [ylo, yhi), columns
// w0 + tx * dW for tx in [xlo, xhi).
struct MaxTaps {
  int64_t h0, ylo, yhi, w0, xlo, xhi;
};
inline MaxTaps max_taps(const attrs::max_pool2d& a, int64_t i, int64_t j, int64_t H, int64_t W) {
  MaxTaps t{i * a.stride_h - a.pad_h, 0, 0, j * a.stride_w - a.pad_w, 0, 0};
  tap_range(t.h0, a.kernel_h, a.dil_h, H, &t.ylo, &t.yhi);
  tap_range(t.w0, a.kernel_w, a.dil_w, W, &t.xlo, &t.xhi);
  return t;
}

bool dense4(const ember_tensor& t) {
  return t.ndim == 4 && sdk::is_contiguous(t);
}

// Note [Row-major max pooling in blocks of columns]
// The general row-major loop visits one output pixel at a time, computes its window's bounds
// and takes each tap with a branch that random data mispredicts. For the output columns whose
// windows lie inside the image (all but a border of about pad / stride on each side), the
// bounds are those of the row, so a row's interior runs in blocks of 32 output columns held in
// local arrays: for each tap in the scalar loop's order, a branch-free select over the block,
// reading x with the stride's step (as the channels-last loop does over channels, Note
// [Channels-last pooling]). The taps, the NaN rule and the first-maximum tie rule are the
// scalar loop's, so both give the same bits; the border columns keep the scalar loop. Indices
// are 32-bit inside the block (planes below 2^31 elements; larger ones keep the scalar loop).

/** Max pooling of one output row's interior columns [j0, j1) of plane xp (Note [Row-major max
 *  pooling in blocks of columns]); `t` holds the row's taps (its column fields unused). */
template <typename T>
void max_pool_row_blocks(const T* xp, T* yr, int64_t* ir, int64_t W, int64_t j0, int64_t j1,
                         const MaxTaps& t, const attrs::max_pool2d& a) {
  using C = sdk::Compute<T>;
  constexpr int64_t kBlock = 32;
  for (int64_t b0 = j0; b0 < j1; b0 += kBlock) {
    const int64_t nb = std::min(kBlock, j1 - b0);
    C best[kBlock];
    int32_t bi[kBlock];
    bool first = true;
    for (int64_t ty = t.ylo; ty < t.yhi; ++ty) {
      const int64_t h = t.h0 + ty * a.dil_h;
      for (int64_t tx = 0; tx < a.kernel_w; ++tx) {
        // Column of tap tx for output column b0: inside the plane for the whole block.
        const int64_t at = h * W + b0 * a.stride_w - a.pad_w + tx * a.dil_w;
        const T* xs = xp + at;
        const auto at32 = static_cast<int32_t>(at), step = static_cast<int32_t>(a.stride_w);
        if (first) {
          for (int64_t c = 0; c < nb; ++c)
            best[c] = static_cast<C>(xs[c * a.stride_w]),
            bi[c] = at32 + static_cast<int32_t>(c) * step;
          first = false;
          continue;
        }
        for (int64_t c = 0; c < nb; ++c) {
          const C v = static_cast<C>(xs[c * a.stride_w]);
          const bool take = (v > best[c]) | (v != v);  // no branch: the selects vectorise
          best[c] = take ? v : best[c];
          bi[c] = take ? at32 + static_cast<int32_t>(c) * step : bi[c];
        }
      }
    }
    for (int64_t c = 0; c < nb; ++c)
      yr[b0 - j0 + c] = static_cast<T>(best[c]), ir[b0 - j0 + c] = bi[c];
  }
}

template <typename T>
void max_pool_planes(const T* x, T* y, int64_t* idx, int64_t planes, int64_t H, int64_t W,
                     int64_t oH, int64_t oW, const attrs::max_pool2d& a) {
  using C = sdk::Compute<T>;
  const int64_t kH = a.kernel_h, kW = a.kernel_w, sH = a.stride_h, sW = a.stride_w, pH = a.pad_h,
                pW = a.pad_w, dH = a.dil_h, dW = a.dil_w;
  const bool simple2x2 = kH == 2 && kW == 2 && sH == 2 && sW == 2 && pH == 0 && pW == 0 &&
                         dH == 1 && dW == 1 && 2 * oH <= H && 2 * oW <= W;
#pragma omp parallel for schedule(static) if (go_parallel(planes * H * W))
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = x + pl * H * W;
    T* yp = y + pl * oH * oW;
    int64_t* ip = idx + pl * oH * oW;
    if constexpr (std::is_floating_point_v<T>) {
      if (simple2x2) {
        // The common case, every window inside the plane: no bounds to compute.
        for (int64_t i = 0; i < oH; ++i) {
          const T* r0 = xp + 2 * i * W;
          const T* r1 = r0 + W;
          T* yr = yp + i * oW;
          int64_t* ir = ip + i * oW;
          const int64_t base = 2 * i * W;
          // Branch-free selects (NaN wins, the first maximum wins ties) so the loop vectorises.
          for (int64_t j = 0; j < oW; ++j) {
            const int64_t w = 2 * j;
            T best = r0[w];
            int64_t off = 0;
            const T v1 = r0[w + 1], v2 = r1[w], v3 = r1[w + 1];
            const bool t1 = v1 > best || v1 != v1;
            best = t1 ? v1 : best;
            off = t1 ? 1 : off;
            const bool t2 = v2 > best || v2 != v2;
            best = t2 ? v2 : best;
            off = t2 ? W : off;
            const bool t3 = v3 > best || v3 != v3;
            best = t3 ? v3 : best;
            off = t3 ? W + 1 : off;
            yr[j] = best;
            ir[j] = base + w + off;
          }
        }
        continue;
      }
    }
    // The output columns whose windows lie inside the plane: [jin0, jin1) (Note [Row-major max
    // pooling in blocks of columns]).
    int64_t jin0 = 0, jin1 = 0;
    if (H * W < (int64_t{1} << 31)) {
      jin0 = std::min(oW, (pW + sW - 1) / sW);
      const int64_t last = W - 1 - (kW - 1) * dW + pW;  // largest window start + pW inside
      jin1 = last < 0 ? 0 : std::min(oW, last / sW + 1);
      if (jin1 <= jin0) jin0 = jin1 = 0;
    }
    for (int64_t i = 0; i < oH; ++i) {
      const MaxTaps row = max_taps(a, i, 0, H, W);
      if (jin1 > jin0 && row.ylo < row.yhi)
        max_pool_row_blocks(xp, yp + i * oW + jin0, ip + i * oW + jin0, W, jin0, jin1, row, a);
      for (int64_t j = 0; j < oW; ++j) {
        if (j == jin0 && jin1 > jin0 && row.ylo < row.yhi) {
          j = jin1 - 1;  // the interior is done
          continue;
        }
        const MaxTaps t = max_taps(a, i, j, H, W);
        C best = std::numeric_limits<C>::lowest();
        int64_t bi = -1;
        for (int64_t ty = t.ylo; ty < t.yhi; ++ty) {
          const int64_t h = t.h0 + ty * dH;
          for (int64_t tx = t.xlo; tx < t.xhi; ++tx) {
            const int64_t at = h * W + t.w0 + tx * dW;
            const C v = static_cast<C>(xp[at]);
            // NaN wins (and propagates) as in PyTorch; the first maximum wins ties.
            if (bi < 0 || v > best || v != v) {
              best = v;
              bi = at;
            }
          }
        }
        yp[i * oW + j] = static_cast<T>(best);
        ip[i * oW + j] = bi;
      }
    }
  }
}

// Note [Channels-last pooling]
// The pools are registered with EMBER_KERNEL_CHANNELS_LAST, so the core hands them either
// row-major operands or all channels-last ones (plugin_abi.h, Note [Channels-last kernels]). For
// NHWC images the loops run over each sample's output pixels, parallel over samples and output
// rows, with the innermost loop over the C consecutive channels, so it vectorises. Each channel's
// windows, divisors, flat h * W + w indices, NaN and tie rules, and the order in which sums and
// gradients accumulate are those of the row-major loops: both layouts give the same bits.
bool dense_cl(const ember_tensor& t) {
  return t.ndim == 4 && sdk::is_channels_last(t);
}

// The layout of a pooling kernel's operands: every one row-major, or else every one NHWC.
enum class Layout { kBad, kRows, kNhwc };
Layout layout_of(std::initializer_list<const ember_tensor*> ts) {
  bool rows = true, cl = true;
  for (const ember_tensor* t : ts) rows = rows && dense4(*t), cl = cl && dense_cl(*t);
  return rows ? Layout::kRows : cl ? Layout::kNhwc : Layout::kBad;
}

/** v != v: true for a NaN (never for an integer type). */
template <typename V>
inline bool is_nan_value(V v) {
  if constexpr (std::is_floating_point_v<V>) {
    return v != v;
  } else {
    return false;
  }
}

// Max pooling of NHWC x [N, H, W, C] into y and idx [N, oH, oW, C] (Note [Channels-last pooling]).
template <typename T>
void max_pool_nhwc(const T* x, T* y, int64_t* idx, int64_t N, int64_t C, int64_t H, int64_t W,
                   int64_t oH, int64_t oW, const attrs::max_pool2d& a) {
  using Cm = sdk::Compute<T>;
#pragma omp parallel for schedule(static) if (go_parallel(N * H * W * C))
  for (int64_t row = 0; row < N * oH; ++row) {
    const int64_t n = row / oH, i = row % oH;
    for (int64_t j = 0; j < oW; ++j) {
      const MaxTaps t = max_taps(a, i, j, H, W);
      T* yp = y + (row * oW + j) * C;
      int64_t* ip = idx + (row * oW + j) * C;
      if (t.ylo >= t.yhi || t.xlo >= t.xhi) {  // no tap inside the image: as the row-major loop
        std::fill(yp, yp + C, static_cast<T>(std::numeric_limits<Cm>::lowest()));
        std::fill(ip, ip + C, int64_t{-1});
        continue;
      }
      // Channels in blocks held in local arrays, which nothing aliases, with 32-bit indices
      // (planes below 2^31 elements, checked by the caller), so the selects vectorise.
      constexpr int64_t kBlock = 32;
      // A full block's count is a constant, so its loops compile to whole vectors.
      const auto block = [&](int64_t c0, auto count) {
        const int64_t nb = count;
        Cm best[kBlock];
        int32_t bi[kBlock];
        bool first = true;
        for (int64_t ty = t.ylo; ty < t.yhi; ++ty) {
          const int64_t h = t.h0 + ty * a.dil_h;
          for (int64_t tx = t.xlo; tx < t.xhi; ++tx) {
            const int64_t at = h * W + t.w0 + tx * a.dil_w;
            const T* xp = x + (n * H * W + at) * C + c0;
            const auto at32 = static_cast<int32_t>(at);
            if (first) {
              for (int64_t c = 0; c < nb; ++c) best[c] = static_cast<Cm>(xp[c]), bi[c] = at32;
              first = false;
              continue;
            }
            // NaN wins (the last NaN's index, as row-major); the first maximum wins ties.
            for (int64_t c = 0; c < nb; ++c) {
              const Cm v = static_cast<Cm>(xp[c]);
              const bool take =
                  (v > best[c]) | is_nan_value(v);  // no branch: the selects vectorise
              best[c] = take ? v : best[c];
              bi[c] = take ? at32 : bi[c];
            }
          }
        }
        for (int64_t c = 0; c < nb; ++c) yp[c0 + c] = static_cast<T>(best[c]), ip[c0 + c] = bi[c];
      };
      int64_t c0 = 0;
      for (; c0 + kBlock <= C; c0 += kBlock) block(c0, std::integral_constant<int64_t, kBlock>{});
      if (c0 < C) block(c0, C - c0);
    }
  }
}

// Average pooling windows (PyTorch's): the divisor counts padding taps inside [-p, n + p) when
// count_include_pad, only in-bounds taps otherwise; a divisor_override > 0 replaces it.
struct AvgWindow {
  int64_t lo, hi, size;
};
inline AvgWindow avg_window(int64_t o, int64_t k, int64_t s, int64_t p, int64_t n) {
  int64_t lo = o * s - p;
  int64_t hi = std::min(lo + k, n + p);
  const int64_t size = hi - lo;
  lo = std::max<int64_t>(lo, 0);
  hi = std::min(hi, n);
  return {lo, hi, size};
}

// The backward of the half types accumulates a plane in float before rounding it once: one
// plane per thread, allocated before the parallel region (an exception such as std::bad_alloc
// must not leave an OpenMP region, Note [One boundary for every plugin entry point]).
template <typename T, bool Backward>
struct AccPlanes {
  using C = sdk::Compute<T>;
  static constexpr bool kNeeded = Backward && !std::is_same_v<T, C>;
  std::vector<C> data;
  int64_t plane;
  AccPlanes(int threads, int64_t plane_)
      : data(kNeeded ? static_cast<size_t>(threads) * static_cast<size_t>(plane_) : 0),
        plane(plane_) {}
  /** Where this thread accumulates dx's plane `dxp`: dxp itself when T computes as itself. */
  C* acc(T* dxp) {
    if constexpr (kNeeded) {
      C* p = data.data() + static_cast<int64_t>(omp_get_thread_num()) * plane;
      std::fill(p, p + plane, C(0));
      return p;
    } else {
      std::fill(dxp, dxp + plane, C(0));
      return dxp;
    }
  }
  /** Rounds this thread's accumulator into dxp (nothing when it is dxp). */
  void flush(const C* acc, T* dxp) const {
    if constexpr (kNeeded) {
      for (int64_t e = 0; e < plane; ++e) dxp[e] = store<T>(acc[e]);
    }
  }
};

/** The number of threads a region over `work` elements runs with. */
inline int team_size(int64_t work) {
  return go_parallel(work) ? omp_get_max_threads() : 1;
}

// Average pooling with attributes `a` (avg_pool2d's or avg_pool2d_backward's: the same fields).
template <typename T, bool Backward, typename A>
void avg_pool_planes(const T* src, T* dst, int64_t planes, int64_t H, int64_t W, int64_t oH,
                     int64_t oW, const A& a) {
  using C = sdk::Compute<T>;
  const int64_t kH = a.kernel_h, kW = a.kernel_w, sH = a.stride_h, sW = a.stride_w, pH = a.pad_h,
                pW = a.pad_w;
  const bool include_pad = a.count_include_pad != 0;
  const int threads = team_size(planes * H * W);
  AccPlanes<T, Backward> accs(threads, H * W);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = Backward ? nullptr : src + pl * H * W;
    const T* gp = Backward ? src + pl * oH * oW : nullptr;
    T* yp = Backward ? nullptr : dst + pl * oH * oW;
    T* dxp = Backward ? dst + pl * H * W : nullptr;
    C* acc = nullptr;
    if constexpr (Backward) acc = accs.acc(dxp);
    for (int64_t i = 0; i < oH; ++i) {
      const AvgWindow wh = avg_window(i, kH, sH, pH, H);
      for (int64_t j = 0; j < oW; ++j) {
        const AvgWindow ww = avg_window(j, kW, sW, pW, W);
        const int64_t div = a.divisor_override > 0 ? a.divisor_override
                            : include_pad          ? wh.size * ww.size
                                                   : (wh.hi - wh.lo) * (ww.hi - ww.lo);
        if constexpr (Backward) {
          const C g = static_cast<C>(gp[i * oW + j]) / static_cast<C>(div);
          for (int64_t h = wh.lo; h < wh.hi; ++h) {
            for (int64_t w = ww.lo; w < ww.hi; ++w) acc[h * W + w] += g;
          }
        } else {
          C sum = 0;
          for (int64_t h = wh.lo; h < wh.hi; ++h) {
            for (int64_t w = ww.lo; w < ww.hi; ++w) sum += static_cast<C>(xp[h * W + w]);
          }
          yp[i * oW + j] = store<T>(sum / static_cast<C>(div));
        }
      }
    }
    if constexpr (Backward) accs.flush(acc, dxp);
  }
}

// Adaptive windows: [floor(o * n / on), ceil((o + 1) * n / on)).
inline int64_t ad_lo(int64_t o, int64_t n, int64_t on) {
  return o * n / on;
}
inline int64_t ad_hi(int64_t o, int64_t n, int64_t on) {
  return ((o + 1) * n + on - 1) / on;
}

template <typename T, bool Backward>
void adaptive_planes(const T* src, T* dst, int64_t planes, int64_t H, int64_t W, int64_t oH,
                     int64_t oW) {
  using C = sdk::Compute<T>;
  const int threads = team_size(planes * H * W);
  AccPlanes<T, Backward> accs(threads, H * W);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t pl = 0; pl < planes; ++pl) {
    T* dxp = Backward ? dst + pl * H * W : nullptr;
    C* acc = nullptr;
    if constexpr (Backward) acc = accs.acc(dxp);
    for (int64_t i = 0; i < oH; ++i) {
      const int64_t h0 = ad_lo(i, H, oH), h1 = ad_hi(i, H, oH);
      for (int64_t j = 0; j < oW; ++j) {
        const int64_t w0 = ad_lo(j, W, oW), w1 = ad_hi(j, W, oW);
        const C div = static_cast<C>((h1 - h0) * (w1 - w0));
        if constexpr (Backward) {
          const C g = static_cast<C>(src[pl * oH * oW + i * oW + j]) / div;
          for (int64_t h = h0; h < h1; ++h) {
            for (int64_t w = w0; w < w1; ++w) acc[h * W + w] += g;
          }
        } else {
          const T* xp = src + pl * H * W;
          C sum = 0;
          for (int64_t h = h0; h < h1; ++h) {
            for (int64_t w = w0; w < w1; ++w) sum += static_cast<C>(xp[h * W + w]);
          }
          dst[pl * oH * oW + i * oW + j] = store<T>(sum / div);
        }
      }
    }
    if constexpr (Backward) accs.flush(acc, dxp);
  }
}

// A window of a linear pool: rows [h0, h1), columns [w0, w1), and its divisor.
struct Window {
  int64_t h0, h1, w0, w1, div;
};

// Average or adaptive pooling over NHWC images (Note [Channels-last pooling]): forward from x
// [N, H, W, C] to y [N, oH, oW, C], or (Backward) the adjoint from dy [N, oH, oW, C] to dx
// [N, H, W, C]; window(i, j) is output pixel (i, j)'s window. The backward runs a sample per
// thread, accumulating the half types in float as AccPlanes does.
template <typename T, bool Backward, typename WindowOf>
void linear_pool_nhwc(const T* src, T* dst, int64_t N, int64_t C, int64_t H, int64_t W, int64_t oH,
                      int64_t oW, WindowOf window) {
  using Cm = sdk::Compute<T>;
  if constexpr (Backward) {
    const int threads = team_size(N * H * W * C);
    AccPlanes<T, true> accs(threads, H * W * C);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (int64_t n = 0; n < N; ++n) {
      T* dxp = dst + n * H * W * C;
      Cm* acc = accs.acc(dxp);
      const T* gp = src + n * oH * oW * C;
      for (int64_t i = 0; i < oH; ++i) {
        for (int64_t j = 0; j < oW; ++j) {
          const Window wd = window(i, j);
          const T* g = gp + (i * oW + j) * C;
          for (int64_t h = wd.h0; h < wd.h1; ++h) {
            for (int64_t w = wd.w0; w < wd.w1; ++w) {
              Cm* a = acc + (h * W + w) * C;
              for (int64_t c = 0; c < C; ++c)
                a[c] += static_cast<Cm>(g[c]) / static_cast<Cm>(wd.div);
            }
          }
        }
      }
      accs.flush(acc, dxp);
    }
  } else {
    const int threads = team_size(N * H * W * C);
    std::vector<Cm> sums(static_cast<size_t>(threads) * static_cast<size_t>(C));
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (int64_t row = 0; row < N * oH; ++row) {
      const int64_t n = row / oH, i = row % oH;
      Cm* sum = sums.data() + static_cast<int64_t>(omp_get_thread_num()) * C;
      for (int64_t j = 0; j < oW; ++j) {
        const Window wd = window(i, j);
        std::fill(sum, sum + C, Cm(0));
        for (int64_t h = wd.h0; h < wd.h1; ++h) {
          for (int64_t w = wd.w0; w < wd.w1; ++w) {
            const T* xp = src + ((n * H + h) * W + w) * C;
            for (int64_t c = 0; c < C; ++c) sum[c] += static_cast<Cm>(xp[c]);
          }
        }
        T* yp = dst + (row * oW + j) * C;
        for (int64_t c = 0; c < C; ++c) yp[c] = store<T>(sum[c] / static_cast<Cm>(wd.div));
      }
    }
  }
}

// avg_pool2d's window of output pixel (i, j) (the row-major loop's divisor rule).
template <typename A>
auto avg_window_of(const A& a, int64_t H, int64_t W) {
  return [=](int64_t i, int64_t j) {
    const AvgWindow wh = avg_window(i, a.kernel_h, a.stride_h, a.pad_h, H);
    const AvgWindow ww = avg_window(j, a.kernel_w, a.stride_w, a.pad_w, W);
    const int64_t div = a.divisor_override > 0 ? a.divisor_override
                        : a.count_include_pad  ? wh.size * ww.size
                                               : (wh.hi - wh.lo) * (ww.hi - ww.lo);
    return Window{wh.lo, wh.hi, ww.lo, ww.hi, div};
  };
}

// adaptive_avg_pool2d's window of output pixel (i, j).
inline auto adaptive_window_of(int64_t H, int64_t W, int64_t oH, int64_t oW) {
  return [=](int64_t i, int64_t j) {
    const int64_t h0 = ad_lo(i, H, oH), h1 = ad_hi(i, H, oH);
    const int64_t w0 = ad_lo(j, W, oW), w1 = ad_hi(j, W, oW);
    return Window{h0, h1, w0, w1, (h1 - h0) * (w1 - w0)};
  };
}

int32_t bad(const ember_kernel_call* call, const char* name) {
  return sdk::fail(call, EMBER_ERR_INVALID, "%s: bad arguments (%d inputs, %d outputs, %d ints)",
                   name, call->num_inputs, call->num_outputs, call->num_ints);
}

// Shared shape of the avg/adaptive kernels of op A: {src} -> {dst}, both dense 4-d, same dtype.
template <typename A, template <typename> class Run>
int32_t planes_kernel(const ember_kernel_call* call) {
  const char* name = ops::kInfo[A::kOp].name;
  if (call->num_inputs != 1 || call->num_outputs != 1) {
    return bad(call, name);
  }
  const ember_tensor& s = call->inputs[0];
  const ember_tensor& d = call->outputs[0];
  const Layout layout = layout_of({&s, &d});
  if (layout == Layout::kBad || s.dtype != d.dtype || s.sizes[0] != d.sizes[0] ||
      s.sizes[1] != d.sizes[1]) {
    return bad(call, name);
  }
  return sdk::visit_floating(call, s.dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto* src = static_cast<const T*>(s.data);
    auto* dst = static_cast<T*>(d.data);
    if (layout == Layout::kNhwc) {
      Run<T>::run_nhwc(call, src, dst, s, d);
    } else {
      Run<T>::run(call, src, dst, s.sizes[0] * s.sizes[1], s, d);
    }
  });
}

// The NHWC loop of a linear pool from src to dst (sizes from the operands, in NCHW order).
template <typename T, bool Backward, typename WindowOf>
void run_linear_nhwc(const T* src, T* dst, const ember_tensor& s, const ember_tensor& d,
                     WindowOf window) {
  const ember_tensor& img = Backward ? d : s;  // the [N, C, H, W] side
  const ember_tensor& out = Backward ? s : d;  // the [N, C, oH, oW] side
  linear_pool_nhwc<T, Backward>(src, dst, img.sizes[0], img.sizes[1], img.sizes[2], img.sizes[3],
                                out.sizes[2], out.sizes[3], window);
}

template <typename T>
struct AvgFwd {
  static void run(const ember_kernel_call* c, const T* s, T* d, int64_t pl, const ember_tensor& x,
                  const ember_tensor& y) {
    avg_pool_planes<T, false>(s, d, pl, x.sizes[2], x.sizes[3], y.sizes[2], y.sizes[3],
                              sdk::attrs<attrs::avg_pool2d>(c));
  }
  static void run_nhwc(const ember_kernel_call* c, const T* s, T* d, const ember_tensor& x,
                       const ember_tensor& y) {
    run_linear_nhwc<T, false>(
        s, d, x, y, avg_window_of(sdk::attrs<attrs::avg_pool2d>(c), x.sizes[2], x.sizes[3]));
  }
};
template <typename T>
struct AvgBwd {
  static void run(const ember_kernel_call* c, const T* s, T* d, int64_t pl, const ember_tensor& dy,
                  const ember_tensor& dx) {
    avg_pool_planes<T, true>(s, d, pl, dx.sizes[2], dx.sizes[3], dy.sizes[2], dy.sizes[3],
                             sdk::attrs<attrs::avg_pool2d_backward>(c));
  }
  static void run_nhwc(const ember_kernel_call* c, const T* s, T* d, const ember_tensor& dy,
                       const ember_tensor& dx) {
    run_linear_nhwc<T, true>(
        s, d, dy, dx,
        avg_window_of(sdk::attrs<attrs::avg_pool2d_backward>(c), dx.sizes[2], dx.sizes[3]));
  }
};
template <typename T>
struct AdFwd {
  static void run(const ember_kernel_call*, const T* s, T* d, int64_t pl, const ember_tensor& x,
                  const ember_tensor& y) {
    adaptive_planes<T, false>(s, d, pl, x.sizes[2], x.sizes[3], y.sizes[2], y.sizes[3]);
  }
  static void run_nhwc(const ember_kernel_call*, const T* s, T* d, const ember_tensor& x,
                       const ember_tensor& y) {
    run_linear_nhwc<T, false>(s, d, x, y,
                              adaptive_window_of(x.sizes[2], x.sizes[3], y.sizes[2], y.sizes[3]));
  }
};
template <typename T>
struct AdBwd {
  static void run(const ember_kernel_call*, const T* s, T* d, int64_t pl, const ember_tensor& dy,
                  const ember_tensor& dx) {
    adaptive_planes<T, true>(s, d, pl, dx.sizes[2], dx.sizes[3], dy.sizes[2], dy.sizes[3]);
  }
  static void run_nhwc(const ember_kernel_call*, const T* s, T* d, const ember_tensor& dy,
                       const ember_tensor& dx) {
    run_linear_nhwc<T, true>(
        s, d, dy, dx, adaptive_window_of(dx.sizes[2], dx.sizes[3], dy.sizes[2], dy.sizes[3]));
  }
};

}  // namespace

EMBER_KERNEL(max_pool2d) {
  if (call->num_inputs != 1 || call->num_outputs != 2) {
    return bad(call, "max_pool2d");
  }
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& y = call->outputs[0];
  const ember_tensor& idx = call->outputs[1];
  const Layout layout = layout_of({&x, &y, &idx});
  if (layout == Layout::kBad || y.dtype != x.dtype || idx.dtype != EMBER_I64) {
    return bad(call, "max_pool2d");
  }
  bool ok = false;
  sdk::visit_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      ok = true;
      const auto* xd = static_cast<const T*>(x.data);
      auto* yd = static_cast<T*>(y.data);
      auto* id = static_cast<int64_t*>(idx.data);
      const auto a = sdk::attrs<attrs::max_pool2d>(call);
      if (layout == Layout::kNhwc) {
        if (x.sizes[2] * x.sizes[3] > std::numeric_limits<int32_t>::max()) return;  // ok = false
        max_pool_nhwc<T>(xd, yd, id, x.sizes[0], x.sizes[1], x.sizes[2], x.sizes[3], y.sizes[2],
                         y.sizes[3], a);
      } else {
        max_pool_planes<T>(xd, yd, id, x.sizes[0] * x.sizes[1], x.sizes[2], x.sizes[3], y.sizes[2],
                           y.sizes[3], a);
      }
    }
  });
  return ok ? EMBER_OK
            : sdk::fail(call, EMBER_ERR_UNSUPPORTED,
                        "max_pool2d: dtype %d, or a channels-last plane of 2^31 elements or more "
                        "(%lld x %lld), is not supported",
                        x.dtype, static_cast<long long>(x.sizes[2]),
                        static_cast<long long>(x.sizes[3]));
}

// {dy, indices} -> {dx}: each plane's output gradients added at their indices in output order,
// rounding as scatter_add does (Note [Backward of max pooling] in core/ops/pool.cpp).
EMBER_KERNEL(max_pool2d_backward) {
  const char* name = "max_pool2d_backward";
  if (call->num_inputs != 2 || call->num_outputs != 1) return bad(call, name);
  const ember_tensor& dy = call->inputs[0];
  const ember_tensor& idx = call->inputs[1];
  const ember_tensor& dx = call->outputs[0];
  const Layout layout = layout_of({&dy, &idx, &dx});
  if (layout == Layout::kBad || dx.dtype != dy.dtype || idx.dtype != EMBER_I64 ||
      sdk::numel(idx) != sdk::numel(dy) || dy.sizes[0] * dy.sizes[1] != dx.sizes[0] * dx.sizes[1] ||
      (layout == Layout::kNhwc && dy.sizes[1] != dx.sizes[1])) {
    return bad(call, name);
  }
  const int64_t planes = dx.sizes[0] * dx.sizes[1], hw = dx.sizes[2] * dx.sizes[3];
  const int64_t ohw = dy.sizes[2] * dy.sizes[3];
  return sdk::visit_floating(call, dy.dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = sdk::Compute<T>;
    const T* g = static_cast<const T*>(dy.data);
    const int64_t* at = static_cast<const int64_t*>(idx.data);
    T* out = static_cast<T*>(dx.data);
    if (layout == Layout::kNhwc) {
      // Note [Channels-last pooling]: a sample per thread; each element receives its gradients
      // in output order, as in the row-major loop.
      const int64_t N = dx.sizes[0], Ch = dx.sizes[1];
#pragma omp parallel for schedule(static) if (go_parallel(planes * (hw + ohw)))
      for (int64_t n = 0; n < N; ++n) {
        T* d = out + n * hw * Ch;
        std::fill(d, d + hw * Ch, T(0));
        const T* gp = g + n * ohw * Ch;
        const int64_t* ip = at + n * ohw * Ch;
        for (int64_t j = 0; j < ohw; ++j) {
          for (int64_t c = 0; c < Ch; ++c) {
            const int64_t i = ip[j * Ch + c];
            if (i >= 0 && i < hw) {
              T& e = d[i * Ch + c];
              e = T(static_cast<C>(static_cast<C>(e) + static_cast<C>(gp[j * Ch + c])));
            }
          }
        }
      }
      return;
    }
#pragma omp parallel for schedule(static) if (go_parallel(planes * (hw + ohw)))
    for (int64_t pl = 0; pl < planes; ++pl) {
      T* d = out + pl * hw;
      std::fill(d, d + hw, T(0));
      const T* gp = g + pl * ohw;
      const int64_t* ip = at + pl * ohw;
      for (int64_t j = 0; j < ohw; ++j) {
        const int64_t i = ip[j];
        if (i >= 0 && i < hw)
          d[i] = T(static_cast<C>(static_cast<C>(d[i]) + static_cast<C>(gp[j])));
      }
    }
  });
}

EMBER_KERNEL(avg_pool2d) {
  return planes_kernel<attrs::avg_pool2d, AvgFwd>(call);
}
EMBER_KERNEL(avg_pool2d_backward) {
  return planes_kernel<attrs::avg_pool2d_backward, AvgBwd>(call);
}
EMBER_KERNEL(adaptive_avg_pool2d) {
  return planes_kernel<attrs::adaptive_avg_pool2d, AdFwd>(call);
}
EMBER_KERNEL(adaptive_avg_pool2d_backward) {
  return planes_kernel<attrs::adaptive_avg_pool2d_backward, AdBwd>(call);
}

}  // namespace ember::cpu
