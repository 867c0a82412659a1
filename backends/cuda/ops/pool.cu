// CUDA pooling over contiguous [N, C, H, W] planes (contract in core/ops/pool.cpp), own kernels
// computing as the CPU plugin's loops (backends/cpu/ops/pool.cpp):
//  - max_pool2d with PyTorch's flat h * W + w indices (ints {kH, kW, sH, sW, pH, pW, dH, dW}).
//    cuDNN's max pooling gives no indices: one thread per output, the taps visited in the CPU's
//    order with its rule (NaN wins and propagates, the first maximum wins ties). Its backward,
//    max_pool2d_backward, gathers (Note [Max pooling backward as a gather]).
//  - avg_pool2d (ints {kH, kW, sH, sW, pH, pW, count_include_pad, divisor_override}) and
//  adaptive_avg_pool2d,
//    one thread per output, and their backward kernels (Note [Pooling backward as a gather]);
//    floor-mode and evenly divided adaptive windows go through cuDNN first (cudnn_ops.cpp,
//    Note [cuDNN where own kernels exist too]).
#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/ops/common.cuh"
#include "backends/cuda/ops/cudnn_ops.h"
#include "backends/cuda/ops/ops.h"
#include "ember/plugin_sdk.hpp"

namespace ember::cuda {
namespace {

using namespace kern;  // NOLINT: the shared kernel helpers

struct PoolGeom {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
};

// std::numeric_limits<C>::lowest() (host-only here).
template <typename C>
__device__ __forceinline__ C lowest() {
  if constexpr (std::is_same_v<C, float>)
    return -FLT_MAX;
  else if constexpr (std::is_same_v<C, double>)
    return -DBL_MAX;
  else if constexpr (std::is_unsigned_v<C>)
    return C(0);
  else
    return static_cast<C>(-static_cast<C>(static_cast<std::make_unsigned_t<C>>(~0ull) >> 1) - 1);
}

template <typename T>
__global__ void max_pool_kernel(PoolGeom g, const T* x, T* y, int64_t* idx) {
  using C = Acc<T>;
  EMBER_GRID_STRIDE_LOOP(o, g.planes * g.oh * g.ow) {
    const int64_t j = o % g.ow, i = (o / g.ow) % g.oh, pl = o / (g.ow * g.oh);
    const T* xp = x + pl * g.h * g.w;
    const int64_t h0 = i * g.sh - g.ph, w0 = j * g.sw - g.pw;
    C best = lowest<C>();  // only kept by a window without taps, as on the CPU
    int64_t bi = -1;
    for (int64_t ty = 0; ty < g.kh; ++ty) {
      const int64_t hh = h0 + ty * g.dh;
      if (hh < 0 || hh >= g.h) continue;
      for (int64_t tx = 0; tx < g.kw; ++tx) {
        const int64_t ww = w0 + tx * g.dw;
        if (ww < 0 || ww >= g.w) continue;
        const int64_t at = hh * g.w + ww;
        const C v = widen(xp[at]);
        if (bi < 0 || v > best || is_nan(v)) {
          best = v;
          bi = at;
        }
      }
    }
    y[o] = narrow<T>(best);
    idx[o] = bi;
  }
}

// Note [Pooling backward as a gather]
// The CPU's backward loops run over the outputs and add g / divisor into every input of the
// window. Here one thread owns one input element and visits the windows that contain it in
// the same (i, j) order, adding the same float (double for f64) terms: the sums are the CPU's
// bit for bit and need no atomics.

// PyTorch's average window along one dim (the CPU's avg_window): [lo, hi) clipped to the
// input, `size` counting the padding taps inside [-p, n + p).
struct AvgWindow {
  int64_t lo, hi, size;
};
__device__ __forceinline__ AvgWindow avg_window(int64_t o, int64_t k, int64_t s, int64_t p,
                                                int64_t n) {
  int64_t lo = o * s - p;
  int64_t hi = lo + k < n + p ? lo + k : n + p;
  const int64_t size = hi - lo;
  lo = lo > 0 ? lo : 0;
  hi = hi < n ? hi : n;
  return {lo, hi, size};
}

struct AvgGeom {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw;
  bool include_pad;
  int64_t divisor_override;  // > 0: the divisor of every window
};

template <typename T>
__global__ void avg_pool_kernel(AvgGeom g, const T* x, T* y) {
  using C = Acc<T>;
  EMBER_GRID_STRIDE_LOOP(o, g.planes * g.oh * g.ow) {
    const int64_t j = o % g.ow, i = (o / g.ow) % g.oh, pl = o / (g.ow * g.oh);
    const T* xp = x + pl * g.h * g.w;
    const AvgWindow wh = avg_window(i, g.kh, g.sh, g.ph, g.h);
    const AvgWindow ww = avg_window(j, g.kw, g.sw, g.pw, g.w);
    const int64_t div = g.divisor_override > 0 ? g.divisor_override
                        : g.include_pad        ? wh.size * ww.size
                                               : (wh.hi - wh.lo) * (ww.hi - ww.lo);
    C sum = 0;
    for (int64_t hh = wh.lo; hh < wh.hi; ++hh) {
      for (int64_t w = ww.lo; w < ww.hi; ++w) sum += widen(xp[hh * g.w + w]);
    }
    y[o] = narrow<T>(sum / static_cast<C>(div));
  }
}

// Outputs [first, last) along one dim whose window (start o * s - p, k taps) holds input `x`.
__device__ __forceinline__ void avg_range(int64_t x, int64_t k, int64_t s, int64_t p, int64_t on,
                                          int64_t* first, int64_t* last) {
  // o * s - p <= x < o * s - p + k  <=>  (x + p - k) / s < o <= (x + p) / s
  const int64_t num = x + p - k + 1;  // o >= ceil(num / s)
  const int64_t f = num <= 0 ? 0 : (num + s - 1) / s;
  const int64_t l = (x + p) / s + 1;  // x + p >= 0
  *first = f;
  *last = l < on ? l : on;
}

template <typename T>
__global__ void avg_pool_backward_kernel(AvgGeom g, const T* dy, T* dx) {
  using C = Acc<T>;
  EMBER_GRID_STRIDE_LOOP(e, g.planes * g.h * g.w) {
    const int64_t w = e % g.w, hh = (e / g.w) % g.h, pl = e / (g.w * g.h);
    const T* gp = dy + pl * g.oh * g.ow;
    int64_t i0, i1, j0, j1;
    avg_range(hh, g.kh, g.sh, g.ph, g.oh, &i0, &i1);
    avg_range(w, g.kw, g.sw, g.pw, g.ow, &j0, &j1);
    C acc = 0;
    for (int64_t i = i0; i < i1; ++i) {
      const AvgWindow wh = avg_window(i, g.kh, g.sh, g.ph, g.h);
      for (int64_t j = j0; j < j1; ++j) {
        const AvgWindow ww = avg_window(j, g.kw, g.sw, g.pw, g.w);
        const int64_t div = g.divisor_override > 0 ? g.divisor_override
                            : g.include_pad        ? wh.size * ww.size
                                                   : (wh.hi - wh.lo) * (ww.hi - ww.lo);
        acc += widen(gp[i * g.ow + j]) / static_cast<C>(div);
      }
    }
    dx[e] = narrow<T>(acc);
  }
}

// Adaptive windows: output o covers [floor(o * n / on), ceil((o + 1) * n / on)).
__device__ __forceinline__ int64_t ad_lo(int64_t o, int64_t n, int64_t on) {
  return o * n / on;
}
__device__ __forceinline__ int64_t ad_hi(int64_t o, int64_t n, int64_t on) {
  return ((o + 1) * n + on - 1) / on;
}

template <typename T>
__global__ void adaptive_kernel(PoolGeom g, const T* x, T* y) {
  using C = Acc<T>;
  EMBER_GRID_STRIDE_LOOP(o, g.planes * g.oh * g.ow) {
    const int64_t j = o % g.ow, i = (o / g.ow) % g.oh, pl = o / (g.ow * g.oh);
    const T* xp = x + pl * g.h * g.w;
    const int64_t h0 = ad_lo(i, g.h, g.oh), h1 = ad_hi(i, g.h, g.oh);
    const int64_t w0 = ad_lo(j, g.w, g.ow), w1 = ad_hi(j, g.w, g.ow);
    const C div = static_cast<C>((h1 - h0) * (w1 - w0));
    C sum = 0;
    for (int64_t hh = h0; hh < h1; ++hh) {
      for (int64_t w = w0; w < w1; ++w) sum += widen(xp[hh * g.w + w]);
    }
    y[o] = narrow<T>(sum / div);
  }
}

template <typename T>
__global__ void adaptive_backward_kernel(PoolGeom g, const T* dy, T* dx) {
  using C = Acc<T>;
  EMBER_GRID_STRIDE_LOOP(e, g.planes * g.h * g.w) {
    const int64_t w = e % g.w, hh = (e / g.w) % g.h, pl = e / (g.w * g.h);
    const T* gp = dy + pl * g.oh * g.ow;
    // Windows holding hh: o in [floor(hh * oh / h), ceil((hh + 1) * oh / h)), tested anyway.
    const int64_t i0 = hh * g.oh / g.h, i1 = ((hh + 1) * g.oh + g.h - 1) / g.h;
    const int64_t j0 = w * g.ow / g.w, j1 = ((w + 1) * g.ow + g.w - 1) / g.w;
    C acc = 0;
    for (int64_t i = i0; i < i1 && i < g.oh; ++i) {
      const int64_t h0 = ad_lo(i, g.h, g.oh), h1 = ad_hi(i, g.h, g.oh);
      if (hh < h0 || hh >= h1) continue;
      for (int64_t j = j0; j < j1 && j < g.ow; ++j) {
        const int64_t w0 = ad_lo(j, g.w, g.ow), w1 = ad_hi(j, g.w, g.ow);
        if (w < w0 || w >= w1) continue;
        acc += widen(gp[i * g.ow + j]) / static_cast<C>((h1 - h0) * (w1 - w0));
      }
    }
    dx[e] = narrow<T>(acc);
  }
}

bool dense4(const ember_tensor& t) {
  return t.ndim == 4 && sdk::is_contiguous(t);
}

// The geometry of a max pooling from `x` [N, C, H, W] to `y` [N, C, oH, oW] with the window
// `a` (the attributes of max_pool2d, or of max_pool2d_backward, which has the same).
template <typename A>
PoolGeom max_pool_geom(const ember_tensor& x, const ember_tensor& y, const A& a) {
  return PoolGeom{x.sizes[0] * x.sizes[1],
                  x.sizes[2],
                  x.sizes[3],
                  y.sizes[2],
                  y.sizes[3],
                  a.kernel_h,
                  a.kernel_w,
                  a.stride_h,
                  a.stride_w,
                  a.pad_h,
                  a.pad_w,
                  a.dil_h,
                  a.dil_w};
}

Status max_pool_impl(const ember_kernel_call* call) {
  if (call->num_inputs != 1 || call->num_outputs != 2) {
    return status_error(EMBER_ERR_INVALID, "[cuda] max_pool2d: expects 1 input, 2 outputs");
  }
  const auto a = sdk::attrs<attrs::max_pool2d>(call);
  const ember_tensor &x = call->inputs[0], &y = call->outputs[0], &idx = call->outputs[1];
  if (!dense4(x) || !dense4(y) || !dense4(idx) || y.dtype != x.dtype || idx.dtype != EMBER_I64) {
    return status_error(EMBER_ERR_INVALID, "[cuda] max_pool2d: bad arguments");
  }
  const PoolGeom g = max_pool_geom(x, y, a);
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(prepare(call, &stream));
  Status s =
      status_error(EMBER_ERR_UNSUPPORTED, "[cuda] max_pool2d: dtype %d unsupported", x.dtype);
  visit(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      s = launch("max_pool2d", g.planes * g.oh * g.ow, stream, max_pool_kernel<T>, g,
                 static_cast<const T*>(x.data), static_cast<T*>(y.data),
                 static_cast<int64_t*>(idx.data));
    }
  });
  return s;
}

// Note [Max pooling backward as a gather]
// The core's max-pool backward scatters each plane's output gradients to their indices in
// output order (Note [Backward of max pooling]), which would leave one thread per plane. Here
// one thread per input element (h, w) visits the outputs whose windows can hold it, rows then
// columns ascending (the plane's output order), and adds the gradients of those whose index
// names it, rounding after every addition as scatter_add does: the CPU's sums exactly,
// without atomics.
template <typename T>
__global__ void max_pool_backward_kernel(PoolGeom g, const T* dy, const int64_t* idx, T* dx) {
  const int64_t hw = g.h * g.w, ohw = g.oh * g.ow;
  const int64_t span_h = (g.kh - 1) * g.dh, span_w = (g.kw - 1) * g.dw;
  EMBER_GRID_STRIDE_LOOP(i, g.planes * hw) {
    const int64_t at = i % hw, h = at / g.w, w = at % g.w;
    const T* gp = dy + (i / hw) * ohw;
    const int64_t* ip = idx + (i / hw) * ohw;
    // Output o's window covers [o * s - p, o * s - p + span].
    const int64_t lo_h = h + g.ph - span_h, lo_w = w + g.pw - span_w;
    const int64_t oh0 = lo_h <= 0 ? 0 : (lo_h + g.sh - 1) / g.sh;
    const int64_t ow0 = lo_w <= 0 ? 0 : (lo_w + g.sw - 1) / g.sw;
    const int64_t oh1 = min((h + g.ph) / g.sh, g.oh - 1);
    const int64_t ow1 = min((w + g.pw) / g.sw, g.ow - 1);
    T acc = narrow<T>(Acc<T>(0));
    for (int64_t oh = oh0; oh <= oh1; ++oh) {
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const int64_t j = oh * g.ow + ow;
        if (ip[j] == at) acc = narrow<T>(widen(acc) + widen(gp[j]));
      }
    }
    dx[i] = acc;
  }
}

// {dy, indices} -> {dx} (contract in core/ops/pool.cpp), max_pool2d's attributes.
Status max_pool_backward_impl(const ember_kernel_call* call) {
  const char* name = "max_pool2d_backward";
  if (call->num_inputs != 2 || call->num_outputs != 1) {
    return status_error(EMBER_ERR_INVALID, "[cuda] %s: expects 2 inputs, 1 output", name);
  }
  const auto a = sdk::attrs<attrs::max_pool2d_backward>(call);
  const ember_tensor &dy = call->inputs[0], &idx = call->inputs[1], &dx = call->outputs[0];
  if (!dense4(dy) || !dense4(idx) || !dense4(dx) || dx.dtype != dy.dtype ||
      idx.dtype != EMBER_I64 || dy.sizes[0] * dy.sizes[1] != dx.sizes[0] * dx.sizes[1] ||
      idx.sizes[2] != dy.sizes[2] || idx.sizes[3] != dy.sizes[3]) {
    return status_error(EMBER_ERR_INVALID, "[cuda] %s: bad arguments", name);
  }
  const PoolGeom g = max_pool_geom(dx, dy, a);
  if (g.kh <= 0 || g.kw <= 0 || g.sh <= 0 || g.sw <= 0 || g.dh <= 0 || g.dw <= 0 || g.ph < 0 ||
      g.pw < 0) {
    return status_error(EMBER_ERR_INVALID, "[cuda] %s: bad window", name);
  }
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(prepare(call, &stream));
  Status s = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d unsupported", name, dy.dtype);
  visit(dy.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kFloating<T>) {
      s = launch(name, g.planes * g.h * g.w, stream, max_pool_backward_kernel<T>, g,
                 static_cast<const T*>(dy.data), static_cast<const int64_t*>(idx.data),
                 static_cast<T*>(dx.data));
    }
  });
  return s;
}

enum class AvgKind { kAvg, kAvgBackward, kAdaptive, kAdaptiveBackward };

// {src} -> {dst}, both dense 4-d of one floating dtype with the same N and C (the CPU's
// planes_kernel checks). avg_pool2d and its backward read avg_pool2d's attributes (they have
// the same), the adaptive ones have none.
Status avg_impl(const ember_kernel_call* call, const char* name, AvgKind kind) {
  const bool avg = kind == AvgKind::kAvg || kind == AvgKind::kAvgBackward;
  if (call->num_inputs != 1 || call->num_outputs != 1) {
    return status_error(EMBER_ERR_INVALID, "[cuda] %s: expects 1 input, 1 output", name);
  }
  const auto a = avg ? sdk::attrs<attrs::avg_pool2d>(call) : attrs::avg_pool2d{};
  const ember_tensor &s = call->inputs[0], &d = call->outputs[0];
  if (!dense4(s) || !dense4(d) || s.dtype != d.dtype || s.sizes[0] != d.sizes[0] ||
      s.sizes[1] != d.sizes[1]) {
    return status_error(EMBER_ERR_INVALID, "[cuda] %s: bad arguments", name);
  }
  const bool backward = kind == AvgKind::kAvgBackward || kind == AvgKind::kAdaptiveBackward;
  const ember_tensor& x = backward ? d : s;  // the input side (H, W)
  const ember_tensor& y = backward ? s : d;  // the output side (oH, oW)
  PoolGeom pg{};
  pg.planes = x.sizes[0] * x.sizes[1];
  pg.h = x.sizes[2];
  pg.w = x.sizes[3];
  pg.oh = y.sizes[2];
  pg.ow = y.sizes[3];
  AvgGeom ag{};
  if (avg) {
    ag = AvgGeom{
        pg.planes,         pg.h,       pg.w,       pg.oh,   pg.ow,   a.kernel_h,
        a.kernel_w,        a.stride_h, a.stride_w, a.pad_h, a.pad_w, a.count_include_pad != 0,
        a.divisor_override};
    if (ag.kh <= 0 || ag.kw <= 0 || ag.sh <= 0 || ag.sw <= 0 || ag.ph < 0 || ag.pw < 0) {
      return status_error(EMBER_ERR_INVALID, "[cuda] %s: bad window", name);
    }
  } else if (pg.oh <= 0 || pg.ow <= 0 || pg.h <= 0 || pg.w <= 0) {
    return {};  // empty tensors never reach a kernel; stay safe anyway
  }
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(prepare(call, &stream));
  // Note [cuDNN where own kernels exist too]; an empty side (a backward then writes zeros) is
  // the own kernels' case.
  bool done = false;
  // cuDNN has no divisor override: those windows are the own kernels'.
  if (pg.planes * pg.h * pg.w > 0 && pg.planes * pg.oh * pg.ow > 0 && a.divisor_override <= 0) {
    EMBER_CUDA_RETURN_IF_ERROR(cudnn_avg_pool2d(call, avg ? &a : nullptr, backward, stream, &done));
  }
  if (done) return {};
  Status st = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d unsupported", name, s.dtype);
  visit(s.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kFloating<T>) {
      const T* src = static_cast<const T*>(s.data);
      T* dst = static_cast<T*>(d.data);
      const int64_t outs = pg.planes * pg.oh * pg.ow, ins = pg.planes * pg.h * pg.w;
      switch (kind) {
        case AvgKind::kAvg:
          st = launch(name, outs, stream, avg_pool_kernel<T>, ag, src, dst);
          break;
        case AvgKind::kAvgBackward:
          st = launch(name, ins, stream, avg_pool_backward_kernel<T>, ag, src, dst);
          break;
        case AvgKind::kAdaptive:
          st = launch(name, outs, stream, adaptive_kernel<T>, pg, src, dst);
          break;
        case AvgKind::kAdaptiveBackward:
          st = launch(name, ins, stream, adaptive_backward_kernel<T>, pg, src, dst);
          break;
      }
    }
  });
  return st;
}

}  // namespace

int32_t avg_pool2d(const ember_kernel_call* call) {
  return write_status(avg_impl(call, "avg_pool2d", AvgKind::kAvg), call);
}
int32_t avg_pool2d_backward(const ember_kernel_call* call) {
  return write_status(avg_impl(call, "avg_pool2d_backward", AvgKind::kAvgBackward), call);
}
int32_t adaptive_avg_pool2d(const ember_kernel_call* call) {
  return write_status(avg_impl(call, "adaptive_avg_pool2d", AvgKind::kAdaptive), call);
}
int32_t adaptive_avg_pool2d_backward(const ember_kernel_call* call) {
  return write_status(avg_impl(call, "adaptive_avg_pool2d_backward", AvgKind::kAdaptiveBackward),
                      call);
}

int32_t max_pool2d(const ember_kernel_call* call) {
  return write_status(max_pool_impl(call), call);
}
int32_t max_pool2d_backward(const ember_kernel_call* call) {
  return write_status(max_pool_backward_impl(call), call);
}

}  // namespace ember::cuda
