// Reference 2-d convolution, forward and both backward ops (contract in core/ops/conv.cpp):
// x [N, C, H, W], w [O, C/G, KH, KW], y [N, O, OH, OW]; attributes stride_h, stride_w, pad_h,
// pad_w, dil_h, dil_w, groups (G). Output o reads input channels g * C/G .. (g + 1) * C/G - 1
// of its group g = o / (O/G), and tap (a, e) of output (i, j) reads input
// (i * stride_h - pad_h + a * dil_h, j * stride_w - pad_w + e * dil_w) when inside.
// All three directions walk that same seven-deep loop nest and accumulate in double;
// conv2d_relu is the forward with negative sums written as 0; conv2d_add_relu ({x, w, r,
// optional b}) adds r[n, o, i, j] before that.
#include <type_traits>
#include <vector>

#include "backends/reference/ops/ops.h"
#include "backends/reference/walk.h"

namespace ember::reference {
namespace {

enum class Dir { Forward, BackwardInput, BackwardWeight };

struct Geom {
  int64_t n, c, h, w, o, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, g;
};

/** Calls fn(n, o, i, j, c, a, e, h, w) for every (output position, input channel, tap) whose
 *  input position (h, w) lies inside the image. */
template <typename Fn>
void for_each_tap(const Geom& g, Fn&& fn) {
  const int64_t cg = g.c / g.g, og = g.o / g.g;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < g.o; ++o)
      for (int64_t i = 0; i < g.oh; ++i)
        for (int64_t j = 0; j < g.ow; ++j)
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t a = 0; a < g.kh; ++a)
              for (int64_t e = 0; e < g.kw; ++e) {
                const int64_t h = i * g.sh - g.ph + a * g.dh, w = j * g.sw - g.pw + e * g.dw;
                if (h < 0 || h >= g.h || w < 0 || w >= g.w) continue;
                fn(n, o, i, j, (o / og) * cg + ci, ci, a, e, h, w);
              }
}

/** One direction of op A (conv2d or one of its backward ops, which share its attributes). */
template <typename A>
int32_t run(const ember_kernel_call* call, Dir dir) {
  const char* name = ops::kInfo[A::kOp].name;
  constexpr bool add = std::is_same_v<A, attrs::conv2d_add_relu>;      // adds the residual
  constexpr bool relu = add || std::is_same_v<A, attrs::conv2d_relu>;  // rectified forward
  if (call->num_inputs < 2 || call->num_outputs < 1) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: bad arguments", name);
  }
  // Which descriptor is which differs by direction.
  const ember_tensor* x = &call->inputs[0];
  const ember_tensor* w = &call->inputs[1];
  const ember_tensor* y = &call->outputs[0];
  if (dir == Dir::BackwardInput) {
    y = &call->inputs[0], w = &call->inputs[1], x = &call->outputs[0];
  } else if (dir == Dir::BackwardWeight) {
    x = &call->inputs[0], y = &call->inputs[1], w = &call->outputs[0];
  }
  if (x->ndim != 4 || w->ndim != 4 || y->ndim != 4) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: operands must be 4-d", name);
  }
  const auto attr = sdk::attrs<A>(call);
  const Geom g{x->sizes[0], x->sizes[1], x->sizes[2], x->sizes[3],   w->sizes[0],   y->sizes[2],
               y->sizes[3], w->sizes[2], w->sizes[3], attr.stride_h, attr.stride_w, attr.pad_h,
               attr.pad_w,  attr.dil_h,  attr.dil_w,  attr.groups};
  if (g.g < 1 || g.c % g.g != 0 || g.o % g.g != 0 || w->sizes[1] != g.c / g.g ||
      y->sizes[0] != g.n || y->sizes[1] != g.o) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: inconsistent operand shapes or attributes",
                     name);
  }
  const int bias_at = add ? 3 : 2;  // conv2d_add_relu: {x, w, r, optional b}
  const ember_tensor* bias =
      dir == Dir::Forward && call->num_inputs > bias_at ? &call->inputs[bias_at] : nullptr;
  const ember_tensor* residual = add && call->num_inputs >= 3 ? &call->inputs[2] : nullptr;
  if (add && (residual == nullptr || residual->ndim != 4)) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: expected a 4-d residual", name);
  }
  for (int d = 0; residual != nullptr && d < 4; ++d) {
    if (residual->sizes[d] != y->sizes[d]) {
      return sdk::fail(call, EMBER_ERR_INVALID, "%s: the residual's shape differs from y's", name);
    }
  }
  return visit_floating(call, call->outputs[0].dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // The output, accumulated in double as a dense array of the output's shape.
    const ember_tensor& out = call->outputs[0];
    const int64_t* s = out.sizes;
    std::vector<double> acc(static_cast<size_t>(s[0] * s[1] * s[2] * s[3]), 0.0);
    auto slot = [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) -> double& {
      return acc[static_cast<size_t>(((i0 * s[1] + i1) * s[2] + i2) * s[3] + i3)];
    };
    for_each_tap(g, [&](int64_t n, int64_t o, int64_t i, int64_t j, int64_t c, int64_t ci,
                        int64_t a, int64_t e, int64_t h, int64_t ww) {
      if (dir == Dir::Forward) {
        slot(n, o, i, j) += to_double(at4<T>(*x, n, c, h, ww)) * to_double(at4<T>(*w, o, ci, a, e));
      } else if (dir == Dir::BackwardInput) {
        slot(n, c, h, ww) += to_double(at4<T>(*y, n, o, i, j)) * to_double(at4<T>(*w, o, ci, a, e));
      } else {
        slot(o, ci, a, e) += to_double(at4<T>(*y, n, o, i, j)) * to_double(at4<T>(*x, n, c, h, ww));
      }
    });
    for (int64_t i0 = 0; i0 < s[0]; ++i0)
      for (int64_t i1 = 0; i1 < s[1]; ++i1)
        for (int64_t i2 = 0; i2 < s[2]; ++i2)
          for (int64_t i3 = 0; i3 < s[3]; ++i3) {
            const int64_t idx[1] = {i1};
            const double b = bias ? to_double(at<T>(*bias, idx)) : 0.0;
            const double r = residual ? to_double(at4<T>(*residual, i0, i1, i2, i3)) : 0.0;
            const double v = slot(i0, i1, i2, i3) + b + r;
            at4<T>(out, i0, i1, i2, i3) = from_double<T>(relu && v < 0 ? 0.0 : v);
          }
  });
}

}  // namespace

int32_t conv2d(const ember_kernel_call* call) {
  return run<attrs::conv2d>(call, Dir::Forward);
}
int32_t conv2d_relu(const ember_kernel_call* call) {
  return run<attrs::conv2d_relu>(call, Dir::Forward);
}
int32_t conv2d_add_relu(const ember_kernel_call* call) {
  return run<attrs::conv2d_add_relu>(call, Dir::Forward);
}
int32_t conv2d_backward_input(const ember_kernel_call* call) {
  return run<attrs::conv2d_backward_input>(call, Dir::BackwardInput);
}
int32_t conv2d_backward_weight(const ember_kernel_call* call) {
  return run<attrs::conv2d_backward_weight>(call, Dir::BackwardWeight);
}

}  // namespace ember::reference
