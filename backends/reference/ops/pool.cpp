// Reference pooling over [N, C, H, W] (contract in core/ops/pool.cpp), PyTorch's windows:
//  max_pool2d   kernel_h/w, stride_h/w, pad_h/w, dil_h/w; outputs {values, indices}, the indices
//               flat h * W + w within the plane; NaN wins, the first maximum wins ties, an
//               empty window gives the lowest value and index -1.
//  avg_pool2d   kernel_h/w, stride_h/w, pad_h/w, count_include_pad: the window [o*s - p,
//               min(o*s - p + k, n + p)) clipped to the image; the divisor is the unclipped
//               size with count_include_pad, the clipped one without; divisor_override > 0
//               replaces it.
//  adaptive     windows [floor(o * n / on), ceil((o + 1) * n / on)).
// Backward ops spread each output gradient evenly over its window; max_pool2d_backward adds
// each output gradient at its index. Sums are in double.
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/reference/ops/ops.h"
#include "backends/reference/walk.h"

namespace ember::reference {
namespace {

/** One window along one dim: [lo, hi) inside the image and the divisor it counts. */
struct Window {
  int64_t lo, hi, size;
};

Window avg_window(int64_t o, int64_t k, int64_t s, int64_t p, int64_t n, bool include_pad) {
  const int64_t start = o * s - p;
  const int64_t end = std::min(start + k, n + p);
  const int64_t lo = std::max<int64_t>(start, 0), hi = std::min(end, n);
  return {lo, hi, include_pad ? end - start : hi - lo};
}

Window adaptive_window(int64_t o, int64_t n, int64_t on) {
  const int64_t lo = o * n / on, hi = ((o + 1) * n + on - 1) / on;
  return {lo, hi, hi - lo};
}

bool four_d(const ember_kernel_call* call) {
  return call->num_inputs == 1 && call->num_outputs >= 1 && call->inputs[0].ndim == 4 &&
         call->outputs[0].ndim == 4;
}

/** Average pooling forward (kBackward false: src x, dst y) or backward (src dy, dst dx) with
 *  windows window_h(i), window_w(j) over the small (pooled) side. */
template <bool kBackward, typename WindowFn>
int32_t average(const ember_kernel_call* call, const char* name, WindowFn window,
                int64_t divisor_override = 0) {
  if (!four_d(call)) return sdk::fail(call, EMBER_ERR_INVALID, "%s: bad arguments", name);
  const ember_tensor& src = call->inputs[0];
  const ember_tensor& dst = call->outputs[0];
  const ember_tensor& big = kBackward ? dst : src;    // [N, C, H, W]
  const ember_tensor& small = kBackward ? src : dst;  // [N, C, OH, OW]
  const int64_t N = big.sizes[0], C = big.sizes[1], H = big.sizes[2], W = big.sizes[3];
  const int64_t OH = small.sizes[2], OW = small.sizes[3];
  return visit_floating(call, src.dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<double> grad(static_cast<size_t>(kBackward ? H * W : 0));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t c = 0; c < C; ++c) {
        std::fill(grad.begin(), grad.end(), 0.0);
        for (int64_t i = 0; i < OH; ++i) {
          for (int64_t j = 0; j < OW; ++j) {
            const Window wh = window(i, H, OH, /*height=*/true);
            const Window ww = window(j, W, OW, /*height=*/false);
            const double div =
                static_cast<double>(divisor_override > 0 ? divisor_override : wh.size * ww.size);
            if constexpr (kBackward) {
              const double g = to_double(at4<T>(src, n, c, i, j)) / div;
              for (int64_t h = wh.lo; h < wh.hi; ++h)
                for (int64_t w = ww.lo; w < ww.hi; ++w) grad[static_cast<size_t>(h * W + w)] += g;
            } else {
              double sum = 0;
              for (int64_t h = wh.lo; h < wh.hi; ++h)
                for (int64_t w = ww.lo; w < ww.hi; ++w) sum += to_double(at4<T>(src, n, c, h, w));
              at4<T>(dst, n, c, i, j) = from_double<T>(sum / div);
            }
          }
        }
        if constexpr (kBackward) {
          for (int64_t h = 0; h < H; ++h)
            for (int64_t w = 0; w < W; ++w)
              at4<T>(dst, n, c, h, w) = from_double<T>(grad[static_cast<size_t>(h * W + w)]);
        }
      }
    }
  });
}

/** The window function for the attributes of A (avg_pool2d or its backward). */
template <typename A>
auto avg_windows(const ember_kernel_call* call) {
  const auto a = sdk::attrs<A>(call);
  return [a](int64_t o, int64_t n, int64_t, bool height) {
    return height ? avg_window(o, a.kernel_h, a.stride_h, a.pad_h, n, a.count_include_pad != 0)
                  : avg_window(o, a.kernel_w, a.stride_w, a.pad_w, n, a.count_include_pad != 0);
  };
}

auto adaptive_windows() {
  return [](int64_t o, int64_t n, int64_t on, bool) { return adaptive_window(o, n, on); };
}

}  // namespace

int32_t max_pool2d(const ember_kernel_call* call) {
  if (!four_d(call) || call->num_outputs != 2 || call->outputs[1].dtype != EMBER_I64) {
    return sdk::fail(call, EMBER_ERR_INVALID, "max_pool2d: bad arguments");
  }
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& y = call->outputs[0];
  const ember_tensor& ind = call->outputs[1];
  const auto a = sdk::attrs<attrs::max_pool2d>(call);
  const int64_t kH = a.kernel_h, kW = a.kernel_w, sH = a.stride_h, sW = a.stride_w, pH = a.pad_h,
                pW = a.pad_w, dH = a.dil_h, dW = a.dil_w;
  const int64_t N = x.sizes[0], C = x.sizes[1], H = x.sizes[2], W = x.sizes[3];
  const int64_t OH = y.sizes[2], OW = y.sizes[3];
  return visit_numeric(call, x.dtype, "max_pool2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Cp = sdk::Compute<T>;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < OH; ++i)
          for (int64_t j = 0; j < OW; ++j) {
            Cp best = std::numeric_limits<Cp>::lowest();
            int64_t best_at = -1;
            for (int64_t ty = 0; ty < kH; ++ty)
              for (int64_t tx = 0; tx < kW; ++tx) {
                const int64_t h = i * sH - pH + ty * dH, w = j * sW - pW + tx * dW;
                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                const Cp v = static_cast<Cp>(at4<T>(x, n, c, h, w));
                if (best_at < 0 || v > best || is_nan(v)) {  // NaN wins
                  best = v;
                  best_at = h * W + w;
                }
              }
            at4<T>(y, n, c, i, j) = T(best);
            at4<int64_t>(ind, n, c, i, j) = best_at;
          }
  });
}

int32_t max_pool2d_backward(const ember_kernel_call* call) {
  if (call->num_inputs != 2 || call->num_outputs != 1 || call->inputs[0].ndim != 4 ||
      call->inputs[1].ndim != 4 || call->outputs[0].ndim != 4 ||
      call->inputs[1].dtype != EMBER_I64) {
    return sdk::fail(call, EMBER_ERR_INVALID, "max_pool2d_backward: bad arguments");
  }
  const ember_tensor& dy = call->inputs[0];
  const ember_tensor& ind = call->inputs[1];
  const ember_tensor& dx = call->outputs[0];
  const int64_t N = dx.sizes[0], C = dx.sizes[1], H = dx.sizes[2], W = dx.sizes[3];
  const int64_t OH = dy.sizes[2], OW = dy.sizes[3];
  return visit_floating(call, dy.dtype, "max_pool2d_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<double> sums(static_cast<size_t>(H * W));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        std::fill(sums.begin(), sums.end(), 0.0);
        for (int64_t i = 0; i < OH; ++i)
          for (int64_t j = 0; j < OW; ++j) {
            const int64_t at = at4<int64_t>(ind, n, c, i, j);
            if (at >= 0 && at < H * W) sums[at] += static_cast<double>(at4<T>(dy, n, c, i, j));
          }
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w) {
            at4<T>(dx, n, c, h, w) = T(static_cast<sdk::Compute<T>>(sums[h * W + w]));
          }
      }
  });
}

int32_t avg_pool2d(const ember_kernel_call* call) {
  return average<false>(call, "avg_pool2d", avg_windows<attrs::avg_pool2d>(call),
                        sdk::attrs<attrs::avg_pool2d>(call).divisor_override);
}
int32_t avg_pool2d_backward(const ember_kernel_call* call) {
  return average<true>(call, "avg_pool2d_backward", avg_windows<attrs::avg_pool2d_backward>(call),
                       sdk::attrs<attrs::avg_pool2d_backward>(call).divisor_override);
}
int32_t adaptive_avg_pool2d(const ember_kernel_call* call) {
  return average<false>(call, "adaptive_avg_pool2d", adaptive_windows());
}
int32_t adaptive_avg_pool2d_backward(const ember_kernel_call* call) {
  return average<true>(call, "adaptive_avg_pool2d_backward", adaptive_windows());
}

}  // namespace ember::reference
