// Pooling over NCHW planes. With windows of kernel k, stride s, padding p, dilation d:
//   max_pool2d:          y[n,c,i,j] = max over the window's in-bounds taps of x; indices hold the
//                        flat position h * W + w of that maximum within its plane (PyTorch's).
//   avg_pool2d:          y = sum over the window's in-bounds taps / divisor, the divisor counting
//                        the padding taps inside [-p, H + p) when count_include_pad, else not;
//                        divisor_override > 0 is every window's divisor instead.
//   adaptive_avg_pool2d: output row i averages input rows [floor(i*H/oH), ceil((i+1)*H/oH)),
//                        likewise for columns.
// Output size (PyTorch): o = floor_or_ceil((H + 2p - d(k-1) - 1) / s) + 1, and with ceil_mode
// a last window that starts in the right padding is dropped: if (o-1)*s >= H + p then o -= 1.
// Kernel contract: every input is a contiguous 4-d tensor [N, C, H, W] of a floating dtype (max
// pooling also integers); outputs are allocated contiguous by the core and fully written by the
// kernel (all of them channels-last instead for a kernel that takes it, Note [Channels-last
// kernels] in plugin_abi.h). Empty tensors never reach a kernel. Attributes: attrs::max_pool2d,
// attrs::avg_pool2d.
//   "max_pool2d" {x} -> {y, indices int64}; "avg_pool2d" {x} -> {y}; "avg_pool2d_backward"
//   {dy} -> {dx}; "max_pool2d_backward" (optional, floating) {dy, indices} -> {dx} =
//   scatter_add(zeros, plane, indices, dy), a plane's outputs added in order, an index outside
//   [0, H * W) adding nothing; backward ops read H and W off dx. "adaptive_avg_pool2d" and its
//   backward: {x} -> {y}, no attributes.
// backward: max: dx = scatter_add(zeros, plane, indices, dy) (differentiable again: its own
// backward is a gather), or the max_pool2d_backward kernel (Note [Backward of max pooling]). avg
// and adaptive avg are linear maps whose adjoints are the *_backward kernels; each of the pair is
// the other's backward, so both are differentiable to any order.
#include "ember/ops/pool.h"

#include <array>

#include "core/dispatch/call.h"
#include "core/ops/size_math.h"
#include "ember/autograd/record.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/reduce.h"

namespace ember {
namespace {

using autograd::LambdaNode;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

/** Window geometry of one pooling call, per spatial dim (0 = height, 1 = width). */
struct Pool {
  std::array<int64_t, 2> k{}, s{}, p{}, d{1, 1}, in{}, out{};
  /** max_pool2d's attributes; A is attrs::max_pool2d or attrs::max_pool2d_backward. */
  template <typename A>
  A max_attrs() const {
    A a;
    a.kernel_h = k[0], a.kernel_w = k[1], a.stride_h = s[0], a.stride_w = s[1];
    a.pad_h = p[0], a.pad_w = p[1], a.dil_h = d[0], a.dil_w = d[1];
    return a;
  }
};

// One value or two for an (H, W) pair; `what` names the argument in messages.
std::array<int64_t, 2> pair_arg(const char* name, const char* what, IntList v) {
  EMBER_CHECK(v.size() == 1 || v.size() == 2,
              "[{}] {} must be one int or two ints (H, W): got {} values {}", name, what, v.size(),
              shape_str(v));
  return {v[0], v.size() == 2 ? v[1] : v[0]};
}

// Checks x (3-d or 4-d, floating unless allow_int) and returns it as a contiguous 4-d tensor.
Tensor as_batched(const char* name, const Tensor& x, bool allow_int) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK(x.dim() == 3 || x.dim() == 4,
              "[{}] expected a 3-d [C, H, W] or 4-d [N, C, H, W] input: got shape {}", name,
              shape_str(x.sizes()));
  EMBER_CHECK_TYPE(is_floating(x.dtype()) || (allow_int && x.dtype() != DType::Bool),
                   "[{}] not defined for dtype {} (convert with .to(ember::f32))", name, x.dtype());
  EMBER_CHECK(x.size(-1) > 0 && x.size(-2) > 0 && x.size(-3) > 0,
              "[{}] expected non-zero sizes for the C, H and W dims: got shape {}", name,
              shape_str(x.sizes()));
  return x.dim() == 3 ? x.unsqueeze(0) : x;
}

// PyTorch's pooling_output_shape, with the ceil_mode rule of the header comment, exact
// (Note [Output sizes in 128 bits]).
WideInt out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const WideInt num =
      WideInt(in) + 2 * WideInt(p) - WideInt(d) * (k - 1) - 1 + (ceil_mode ? WideInt(s) - 1 : 0);
  WideInt o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (o - 1) * s >= WideInt(in) + p) --o;
  return o;
}

Pool make_pool(const char* name, const Tensor& x4, IntList kernel_size, IntList stride,
               IntList padding, IntList dilation, bool ceil_mode) {
  Pool g;
  std::array<WideInt, 2> out{};
  g.k = pair_arg(name, "kernel_size", kernel_size);
  g.s = stride.empty() ? g.k : pair_arg(name, "stride", stride);
  g.p = pair_arg(name, "padding", padding);
  g.d = pair_arg(name, "dilation", dilation);
  EMBER_CHECK(g.k[0] > 0 && g.k[1] > 0, "[{}] kernel_size must be positive: got ({}, {})", name,
              g.k[0], g.k[1]);
  EMBER_CHECK(g.s[0] > 0 && g.s[1] > 0, "[{}] stride must be positive: got ({}, {})", name, g.s[0],
              g.s[1]);
  EMBER_CHECK(g.d[0] > 0 && g.d[1] > 0, "[{}] dilation must be positive: got ({}, {})", name,
              g.d[0], g.d[1]);
  for (int i = 0; i < 2; ++i) {
    EMBER_CHECK(g.p[i] >= 0 && g.p[i] <= g.k[i] / 2,
                "[{}] padding should be at least 0 and at most half of kernel_size: got padding "
                "({}, {}) for kernel_size ({}, {})",
                name, g.p[0], g.p[1], g.k[0], g.k[1]);
    g.in[i] = x4.size(2 + i);
    out[i] = out_size(g.in[i], g.k[i], g.s[i], g.p[i], g.d[i], ceil_mode);
    // As for convolution: the padded input and the dilated window fit int64, so the kernels'
    // window arithmetic cannot wrap.
    fit_int64(WideInt(g.in[i]) + 2 * WideInt(g.p[i]), name,
              i == 0 ? "padded height" : "padded width");
    fit_int64(WideInt(g.d[i]) * (g.k[i] - 1) + 1, name,
              i == 0 ? "dilated window height" : "dilated window width");
  }
  EMBER_CHECK(out[0] > 0 && out[1] > 0,
              "[{}] input of shape {} is too small: calculated output size ({}, {}) (kernel_size "
              "({}, {}), stride ({}, {}), padding ({}, {}), dilation ({}, {}))",
              name, shape_str(x4.sizes()), out[0], out[1], g.k[0], g.k[1], g.s[0], g.s[1], g.p[0],
              g.p[1], g.d[0], g.d[1]);
  g.out = {static_cast<int64_t>(out[0]), static_cast<int64_t>(out[1])};  // <= the padded input
  return g;
}

Tensor squeeze_if(const Tensor& t, bool unbatched) {
  return unbatched ? t.squeeze(0) : t;
}

// ---- max pooling --------------------------------------------------------------------------

std::tuple<Tensor, Tensor> max_pool_impl(const char* name, const Tensor& x, IntList kernel_size,
                                         IntList stride, IntList padding, IntList dilation,
                                         bool ceil_mode, Pool* geometry_out) {
  const Tensor x4 = as_batched(name, x, /*allow_int=*/true);
  const Pool g = make_pool(name, x4, kernel_size, stride, padding, dilation, ceil_mode);
  if (geometry_out) *geometry_out = g;
  const Shape sizes{x4.size(0), x4.size(1), g.out[0], g.out[1]};
  const MemoryFormat format = x4.suggest_memory_format();
  Tensor y = empty(sizes, {x.dtype(), x.device()}, format);
  Tensor idx = empty(sizes, {DType::Int64, x.device()}, format);
  if (y.numel() > 0) {
    run_image_kernel(g.max_attrs<attrs::max_pool2d>(), x.dtype(), format, {&x4}, {&y, &idx});
  }
  const bool unbatched = x.dim() == 3;
  return {squeeze_if(y, unbatched), squeeze_if(idx, unbatched)};
}

// Note [Backward of max pooling]
// Each output took one input element, named by its flat index within the plane, so the input
// gradient scatters the output gradient there with scatter_add (overlapping windows may pick
// the same element; their gradients add). Written with the public scatter_add, whose backward
// is a gather, so the gradient is differentiable again. A scatter must visit a plane's outputs
// in order, which a GPU can only spread over the planes; so a backend may provide
// "max_pool2d_backward", computing the same sums in the same order in whatever way suits it
// (the CUDA plugin gathers: one thread per input element visits the windows that cover it).
// The kernel is used when the backward needs no graph (no create_graph), the composite
// otherwise, as for Note [Fused ReLU backward]. The kernel runs in the input's memory format
// (reordered for a kernel without channels-last support, run_image_kernel); the composite works
// on row-major planes, and a channels-last input gets its gradient reordered at the end.
Tensor max_pool_scatter(const Tensor& g, const Tensor& idx, const Shape& in_sizes,
                        MemoryFormat format, const Pool& geometry) {
  const int64_t nd = static_cast<int64_t>(in_sizes.size());
  const int64_t planes = nd == 4 ? in_sizes[0] * in_sizes[1] : in_sizes[0];
  const int64_t h = in_sizes[nd - 2], w = in_sizes[nd - 1];
  if (g.numel() > 0 && !autograd::is_grad_enabled() &&
      has_kernel(core_op(ops::max_pool2d_backward), g.device(), g.dtype())) {
    const bool batched = nd == 4;
    const Tensor g4 = batched ? g : g.unsqueeze(0);
    const Tensor i4 = batched ? idx : idx.unsqueeze(0);
    const Shape sizes4{batched ? in_sizes[0] : 1, in_sizes[nd - 3], h, w};
    Tensor dx = empty(sizes4, {g.dtype(), g.device()}, batched ? format : MemoryFormat::Contiguous);
    run_image_kernel(geometry.max_attrs<attrs::max_pool2d_backward>(), g.dtype(),
                     dx.suggest_memory_format(), {&g4, &i4}, {&dx});
    return batched ? dx : dx.squeeze(0);
  }
  const Tensor z = zeros({planes, h * w}, {g.dtype(), g.device()});
  if (g.numel() == 0) return z.view(in_sizes);
  const Tensor gi = idx.reshape({planes, -1});
  return scatter_add(z, 1, gi, g.reshape({planes, -1})).view(in_sizes);
}

Tensor max_pool_backward(const Tensor& g, const Tensor& idx, const Shape& in_sizes,
                         MemoryFormat format, const Pool& geometry) {
  const Tensor dx = max_pool_scatter(g, idx, in_sizes, format, geometry);
  return format == MemoryFormat::ChannelsLast ? dx.contiguous(format) : dx;
}

std::tuple<Tensor, Tensor> max_pool_ad(const char* name, const Tensor& x, IntList kernel_size,
                                       IntList stride, IntList padding, IntList dilation,
                                       bool ceil_mode) {
  if (!autograd::any_requires_grad({&x})) {
    return max_pool_impl(name, x, kernel_size, stride, padding, dilation, ceil_mode, nullptr);
  }
  std::tuple<Tensor, Tensor> r;
  Pool geometry;
  {
    autograd::NoGradGuard below_autograd;
    r = max_pool_impl(name, x, kernel_size, stride, padding, dilation, ceil_mode, &geometry);
  }
  autograd::record(
      "MaxPool2DWithIndicesBackward", name, {&x}, {&std::get<0>(r)},
      [si = SavedTensor(std::get<1>(r)), sizes = x.sizes(), format = x.suggest_memory_format(),
       geometry](const Grads& g, const LambdaNode& self) {
        return Grads{max_pool_backward(g[0], self.unpack(si), sizes, format, geometry)};
      });
  return r;
}

// ---- average pooling ----------------------------------------------------------------------

struct AvgArgs {
  Pool g;
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // > 0: every window's divisor
  /** avg_pool2d's attributes; A is attrs::avg_pool2d or attrs::avg_pool2d_backward. */
  template <typename A>
  A as() const {
    A a;
    a.kernel_h = g.k[0], a.kernel_w = g.k[1], a.stride_h = g.s[0], a.stride_w = g.s[1];
    a.pad_h = g.p[0], a.pad_w = g.p[1], a.count_include_pad = count_include_pad ? 1 : 0;
    a.divisor_override = divisor_override;
    return a;
  }
};

Tensor avg_forward(const Tensor& x4, const AvgArgs& a);
Tensor avg_backward(const Tensor& g4, const AvgArgs& a);

// The linear pooling maps' kernels (either direction of avg_pool2d and adaptive_avg_pool2d):
// `op` from `in` [N, C, ., .] to a new [N, C, size[0], size[1]] in in's format; an empty input
// gives zeros (the kernels never see one).
Tensor run_pool_map(const Op& op, KernelAttrs attrs, const Tensor& in,
                    std::array<int64_t, 2> size) {
  const MemoryFormat format = in.suggest_memory_format();
  Tensor out = empty({in.size(0), in.size(1), size[0], size[1]}, {in.dtype(), in.device()}, format);
  if (out.numel() == 0) return out;
  if (in.numel() == 0) return out.zero_();
  run_image_kernel(op, in.dtype(), format, {&in}, {&out}, attrs);
  return out;
}

// Note [Adjoint pairs of pooling]
// avg_pool2d (and adaptive_avg_pool2d) is a linear map A of x; its backward is the adjoint A^T
// applied to dy, and the adjoint of A^T is A again. So the forward records the backward kernel
// as its gradient and the backward records the forward kernel as its own gradient, which makes
// both differentiable to any order without a formula of their own.
Tensor avg_forward(const Tensor& x4, const AvgArgs& a) {
  return autograd::differentiable(
      "AvgPool2DBackward", "avg_pool2d", {&x4},
      [&] {
        return run_pool_map(core_op(ops::avg_pool2d), PackedAttrs(a.as<attrs::avg_pool2d>()), x4,
                            {a.g.out[0], a.g.out[1]});
      },
      [&] {
        return [a](const Grads& g, const LambdaNode&) { return Grads{avg_backward(g[0], a)}; };
      });
}

Tensor avg_backward(const Tensor& g4, const AvgArgs& a) {
  return autograd::differentiable(
      "AvgPool2DBackwardBackward", "avg_pool2d", {&g4},
      [&] {
        return run_pool_map(core_op(ops::avg_pool2d_backward),
                            PackedAttrs(a.as<attrs::avg_pool2d_backward>()), g4,
                            {a.g.in[0], a.g.in[1]});
      },
      [&] {
        return [a](const Grads& g, const LambdaNode&) { return Grads{avg_forward(g[0], a)}; };
      });
}

// ---- adaptive average pooling -------------------------------------------------------------

Tensor adaptive_forward(const Tensor& x4, std::array<int64_t, 2> out);
Tensor adaptive_backward(const Tensor& g4, std::array<int64_t, 2> in);

// Note [Adjoint pairs of pooling] applies here too.
Tensor adaptive_forward(const Tensor& x4, std::array<int64_t, 2> out) {
  const std::array<int64_t, 2> in{x4.size(2), x4.size(3)};
  return autograd::differentiable(
      "AdaptiveAvgPool2DBackward", "adaptive_avg_pool2d", {&x4},
      [&] { return run_pool_map(core_op(ops::adaptive_avg_pool2d), {}, x4, out); },
      [&] {
        return
            [in](const Grads& g, const LambdaNode&) { return Grads{adaptive_backward(g[0], in)}; };
      });
}

Tensor adaptive_backward(const Tensor& g4, std::array<int64_t, 2> in) {
  const std::array<int64_t, 2> out{g4.size(2), g4.size(3)};
  return autograd::differentiable(
      "AdaptiveAvgPool2DBackwardBackward", "adaptive_avg_pool2d", {&g4},
      [&] { return run_pool_map(core_op(ops::adaptive_avg_pool2d_backward), {}, g4, in); },
      [&] {
        return
            [out](const Grads& g, const LambdaNode&) { return Grads{adaptive_forward(g[0], out)}; };
      });
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, IntList kernel_size,
                                                   IntList stride, IntList padding,
                                                   IntList dilation, bool ceil_mode) {
  return max_pool_ad("max_pool2d_with_indices", x, kernel_size, stride, padding, dilation,
                     ceil_mode);
}

Tensor max_pool2d(const Tensor& x, IntList kernel_size, IntList stride, IntList padding,
                  IntList dilation, bool ceil_mode) {
  return std::get<0>(
      max_pool_ad("max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode));
}

Tensor avg_pool2d(const Tensor& x, IntList kernel_size, IntList stride, IntList padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  EMBER_CHECK(!divisor_override || *divisor_override > 0,
              "[avg_pool2d] divisor_override must be positive: got {}",
              divisor_override.value_or(0));
  const Tensor x4 = as_batched("avg_pool2d", x, /*allow_int=*/false);
  AvgArgs a;
  a.g = make_pool("avg_pool2d", x4, kernel_size, stride, padding, {1, 1}, ceil_mode);
  a.count_include_pad = count_include_pad;
  a.divisor_override = divisor_override.value_or(0);
  return squeeze_if(avg_forward(x4, a), x.dim() == 3);
}

// Note [Adaptive max pooling as two one-dim passes]
// The maximum over a rectangle is the maximum over its rows of the maximum over its columns, and
// adaptive windows are products of a row range and a column range. So adaptive_max_pool2d takes
// amax over each of the oH row windows (one op each, stacked), then over each of the oW column
// windows of that: O(oH + oW) ops on any backend, with amax's gradient, and no kernel of its own.
// Windows follow PyTorch: output i spans [floor(i in / out), ceil((i + 1) in / out)).
Tensor adaptive_max_pool2d(const Tensor& x, IntList output_size) {
  const Tensor x4 = as_batched("adaptive_max_pool2d", x, /*allow_int=*/false);
  const auto out = pair_arg("adaptive_max_pool2d", "output_size", output_size);
  EMBER_CHECK(out[0] > 0 && out[1] > 0,
              "[adaptive_max_pool2d] output_size must be positive: got ({}, {})", out[0], out[1]);
  Tensor y = x4;
  for (int64_t dim : {2, 3}) {
    const int64_t in = y.size(dim), o = out[dim - 2];
    std::vector<Tensor> parts;
    parts.reserve(static_cast<size_t>(o));
    for (int64_t i = 0; i < o; ++i) {
      const int64_t start = i * in / o, end = ((i + 1) * in + o - 1) / o;
      parts.push_back(amax(y.narrow(dim, start, end - start), {dim}, /*keepdim=*/true));
    }
    y = cat(parts, dim);
  }
  return squeeze_if(y, x.dim() == 3);
}

// Note [1-d pooling is 2-d pooling of height 1]
// The 1-d poolings view x [N, C, L] as [N, C, 1, L] and pool it with a (1, k) window, stride
// (1, s), padding (0, p) and dilation (1, d), so they share the 2-d kernels, checks and
// gradients; a maximum's flat index within the 1 x L plane is its position along L, as PyTorch
// returns it. Errors carry the 1-d op's name.
namespace {

Tensor as_rows(const char* name, const Tensor& x) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK(x.dim() == 2 || x.dim() == 3,
              "[{}] expected a 2-d [C, L] or 3-d [N, C, L] input: got shape {}", name,
              shape_str(x.sizes()));
  return x.unsqueeze(-2);
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, int64_t kernel_size,
                                                   std::optional<int64_t> stride, int64_t padding,
                                                   int64_t dilation, bool ceil_mode) {
  const Tensor x4 = as_rows("max_pool1d", x);
  auto [y, idx] = max_pool_ad("max_pool1d", x4, {1, kernel_size}, {1, stride.value_or(kernel_size)},
                              {0, padding}, {1, dilation}, ceil_mode);
  return {y.squeeze(-2), idx.squeeze(-2)};
}

Tensor max_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding, int64_t dilation, bool ceil_mode) {
  return std::get<0>(max_pool1d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode));
}

Tensor avg_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding, bool ceil_mode, bool count_include_pad) {
  const Tensor x4 = as_rows("avg_pool1d", x);
  const Tensor b4 = as_batched("avg_pool1d", x4, /*allow_int=*/false);
  AvgArgs a;
  a.g = make_pool("avg_pool1d", b4, {1, kernel_size}, {1, stride.value_or(kernel_size)},
                  {0, padding}, {1, 1}, ceil_mode);
  a.count_include_pad = count_include_pad;
  return squeeze_if(avg_forward(b4, a), x4.dim() == 3).squeeze(-2);
}

Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size) {
  const Tensor x4 = as_rows("adaptive_avg_pool1d", x);
  EMBER_CHECK(output_size > 0, "[adaptive_avg_pool1d] output_size must be positive: got {}",
              output_size);
  return adaptive_avg_pool2d(x4, {1, output_size}).squeeze(-2);
}

Tensor adaptive_max_pool1d(const Tensor& x, int64_t output_size) {
  const Tensor x4 = as_rows("adaptive_max_pool1d", x);
  EMBER_CHECK(output_size > 0, "[adaptive_max_pool1d] output_size must be positive: got {}",
              output_size);
  return adaptive_max_pool2d(x4, {1, output_size}).squeeze(-2);
}

Tensor adaptive_avg_pool2d(const Tensor& x, IntList output_size) {
  const Tensor x4 = as_batched("adaptive_avg_pool2d", x, /*allow_int=*/false);
  const auto out = pair_arg("adaptive_avg_pool2d", "output_size", output_size);
  EMBER_CHECK(out[0] > 0 && out[1] > 0,
              "[adaptive_avg_pool2d] output_size must be positive: got ({}, {})", out[0], out[1]);
  return squeeze_if(adaptive_forward(x4, out), x.dim() == 3);
}

}  // namespace ember
