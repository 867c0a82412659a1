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
// The 3-d poolings are two passes of these kernels (Note [3-d pooling as two passes]).
// backward: max: dx = scatter_add(zeros, plane, indices, dy) (differentiable again: its own
// backward is a gather), or the max_pool2d_backward kernel (Note [Backward of max pooling]). avg
// and adaptive avg are linear maps whose adjoints are the *_backward kernels; each of the pair is
// the other's backward, so both are differentiable to any order.
#include "ember/ops/pool.h"

#include <algorithm>
#include <array>
#include <string>

#include <fmt/ranges.h>

#include "core/dispatch/call.h"
#include "core/ops/size_math.h"
#include "ember/autograd/record.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/reduce.h"

namespace ember {
namespace {

using autograd::LambdaNode;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

/** Window geometry of one pooling call over N spatial dims (for N = 2: 0 = height, 1 =
 *  width; for N = 3 depth first). */
template <size_t N>
struct PoolGeometry {
  std::array<int64_t, N> k{}, s{}, p{}, d{}, in{}, out{};
  /** max_pool2d's attributes; A is attrs::max_pool2d or attrs::max_pool2d_backward. */
  template <typename A>
  A max_attrs() const {
    static_assert(N == 2);
    A a;
    a.kernel_h = k[0], a.kernel_w = k[1], a.stride_h = s[0], a.stride_w = s[1];
    a.pad_h = p[0], a.pad_w = p[1], a.dil_h = d[0], a.dil_w = d[1];
    return a;
  }
};
using Pool = PoolGeometry<2>;

/** "(a, b)" or "(a, b, c)": a per-dim argument in messages. */
template <size_t N>
std::string dims_str(const std::array<int64_t, N>& v) {
  return fmt::format("({})", fmt::join(v, ", "));
}

// One value or N for the spatial dims; `what` names the argument in messages.
template <size_t N>
std::array<int64_t, N> dims_arg(const char* name, const char* what, IntList v) {
  EMBER_CHECK(v.size() == 1 || v.size() == N,
              "[{}] {} must be one int or {} ints ({}): got {} values {}", name, what, N,
              N == 3 ? "D, H, W" : "H, W", v.size(), shape_str(v));
  std::array<int64_t, N> r{};
  for (size_t i = 0; i < N; ++i) r[i] = v[v.size() == 1 ? 0 : i];
  return r;
}

std::array<int64_t, 2> pair_arg(const char* name, const char* what, IntList v) {
  return dims_arg<2>(name, what, v);
}

// Checks x (with `spatial` dims, unbatched or batched; floating unless allow_int) and returns
// it batched.
Tensor as_batched(const char* name, const Tensor& x, bool allow_int, int64_t spatial = 2) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", name);
  const char* dims = spatial == 3 ? "D, H, W" : "H, W";
  EMBER_CHECK(x.dim() == spatial + 1 || x.dim() == spatial + 2,
              "[{}] expected a {}-d [C, {}] or {}-d [N, C, {}] input: got shape {}", name,
              spatial + 1, dims, spatial + 2, dims, shape_str(x.sizes()));
  EMBER_CHECK_TYPE(is_floating(x.dtype()) || (allow_int && x.dtype() != DType::Bool),
                   "[{}] not defined for dtype {} (convert with .to(ember::f32))", name, x.dtype());
  for (int64_t i = x.dim() - spatial - 1; i < x.dim(); ++i) {
    EMBER_CHECK(x.size(i) > 0, "[{}] expected non-zero sizes for the C, {} dims: got shape {}",
                name, dims, shape_str(x.sizes()));
  }
  return x.dim() == spatial + 1 ? x.unsqueeze(0) : x;
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

// The checked geometry of pooling the last N dims of x.
template <size_t N>
PoolGeometry<N> make_pool(const char* name, const Tensor& x, IntList kernel_size, IntList stride,
                          IntList padding, IntList dilation, bool ceil_mode) {
  PoolGeometry<N> g;
  std::array<WideInt, N> out{};
  g.k = dims_arg<N>(name, "kernel_size", kernel_size);
  g.s = stride.empty() ? g.k : dims_arg<N>(name, "stride", stride);
  g.p = dims_arg<N>(name, "padding", padding);
  g.d = dims_arg<N>(name, "dilation", dilation);
  const auto positive = [](const std::array<int64_t, N>& v) {
    return std::all_of(v.begin(), v.end(), [](int64_t e) { return e > 0; });
  };
  EMBER_CHECK(positive(g.k), "[{}] kernel_size must be positive: got {}", name, dims_str(g.k));
  EMBER_CHECK(positive(g.s), "[{}] stride must be positive: got {}", name, dims_str(g.s));
  EMBER_CHECK(positive(g.d), "[{}] dilation must be positive: got {}", name, dims_str(g.d));
  for (size_t i = 0; i < N; ++i) {
    EMBER_CHECK(g.p[i] >= 0 && g.p[i] <= g.k[i] / 2,
                "[{}] padding should be at least 0 and at most half of kernel_size: got padding "
                "{} for kernel_size {}",
                name, dims_str(g.p), dims_str(g.k));
    g.in[i] = x.size(x.dim() - static_cast<int64_t>(N) + static_cast<int64_t>(i));
    out[i] = out_size(g.in[i], g.k[i], g.s[i], g.p[i], g.d[i], ceil_mode);
    // As for convolution: the padded input and the dilated window fit int64, so the kernels'
    // window arithmetic cannot wrap.
    static constexpr const char* kPadded[] = {"padded depth", "padded height", "padded width"};
    static constexpr const char* kDilated[] = {"dilated window depth", "dilated window height",
                                               "dilated window width"};
    fit_int64(WideInt(g.in[i]) + 2 * WideInt(g.p[i]), name, kPadded[3 - N + i]);
    fit_int64(WideInt(g.d[i]) * (g.k[i] - 1) + 1, name, kDilated[3 - N + i]);
  }
  EMBER_CHECK(std::all_of(out.begin(), out.end(), [](WideInt o) { return o > 0; }),
              "[{}] input of shape {} is too small: calculated output size ({}) (kernel_size "
              "{}, stride {}, padding {}, dilation {})",
              name, shape_str(x.sizes()), fmt::join(out, ", "), dims_str(g.k), dims_str(g.s),
              dims_str(g.p), dims_str(g.d));
  for (size_t i = 0; i < N; ++i) g.out[i] = static_cast<int64_t>(out[i]);  // <= the padded input
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
  const Pool g = make_pool<2>(name, x4, kernel_size, stride, padding, dilation, ceil_mode);
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
  a.g = make_pool<2>("avg_pool2d", x4, kernel_size, stride, padding, {1, 1}, ceil_mode);
  a.count_include_pad = count_include_pad;
  a.divisor_override = divisor_override.value_or(0);
  return squeeze_if(avg_forward(x4, a), x.dim() == 3);
}

// Note [Adaptive max pooling as two one-dim passes]
// The maximum over a rectangle is the maximum over its rows of the maximum over its columns, and
// adaptive windows are products of a row range and a column range. So adaptive_max_pool2d takes
// the maximum over each of the oW column windows (one op each, concatenated), then over each of
// the oH row windows of that: O(oH + oW) ops on any backend, with max's gradient, and no kernel
// of its own. Windows follow PyTorch: output i spans [floor(i in / out), ceil((i + 1) in / out)).
// The last dim goes first so that ties resolve as PyTorch's kernel does, to the first maximum in
// row-major order: the column pass keeps each row's first maximal column, the row pass then the
// first maximal row, and with it that row's column. The indices (PyTorch's return_indices, flat
// within each plane or volume) follow the same choice: each pass gathers the positions the
// previous passes chose at the element it picked, and adds its own dim's position times the
// size of the dims after it. The 1-d and 3-d forms are one and three passes.
namespace {

// The passes over `dims` of the batched xb, last dim first, `out` windows along each; the flat
// indices too when `indices`.
std::tuple<Tensor, Tensor> adaptive_max_passes(const Tensor& xb, IntList dims, IntList out,
                                               bool indices) {
  Tensor y = xb, flat;
  int64_t inner = 1;  // the number of positions in the dims already passed
  for (size_t i = dims.size(); i-- > 0;) {
    const int64_t dim = dims[i], in = y.size(dim), o = out[i];
    std::vector<Tensor> values, where;
    values.reserve(static_cast<size_t>(o));
    where.reserve(static_cast<size_t>(o));
    for (int64_t j = 0; j < o; ++j) {
      const int64_t start = j * in / o, end = ((j + 1) * in + o - 1) / o;
      auto [v, at] = max(y.narrow(dim, start, end - start), dim, /*keepdim=*/true);
      values.push_back(std::move(v));
      if (indices) where.push_back(add(at, start));
    }
    y = cat(values, dim);
    if (indices) {
      const Tensor pos = cat(where, dim);
      const Tensor own = mul(pos, inner);
      flat = flat.defined() ? add(own, gather(flat, dim, pos)) : own;
      inner *= in;
    }
  }
  return {y, flat};
}

// Both parts of a pooling's result without their batch dim when `unbatched` (an undefined index
// stays undefined).
std::tuple<Tensor, Tensor> squeeze_both(std::tuple<Tensor, Tensor> r, bool unbatched) {
  auto& [y, idx] = r;
  return {squeeze_if(y, unbatched), idx.defined() ? squeeze_if(idx, unbatched) : idx};
}

// adaptive_max_pool2d's passes over x [N, C, H, W] or [C, H, W], with the indices if asked.
std::tuple<Tensor, Tensor> adaptive_max2d(const Tensor& x, IntList output_size, bool indices) {
  const Tensor x4 = as_batched("adaptive_max_pool2d", x, /*allow_int=*/false);
  const auto out = pair_arg("adaptive_max_pool2d", "output_size", output_size);
  EMBER_CHECK(out[0] > 0 && out[1] > 0,
              "[adaptive_max_pool2d] output_size must be positive: got ({}, {})", out[0], out[1]);
  return squeeze_both(adaptive_max_passes(x4, {2, 3}, {out[0], out[1]}, indices), x.dim() == 3);
}

}  // namespace

std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& x, IntList output_size) {
  return adaptive_max2d(x, output_size, /*indices=*/true);
}

Tensor adaptive_max_pool2d(const Tensor& x, IntList output_size) {
  return std::get<0>(adaptive_max2d(x, output_size, /*indices=*/false));
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
  a.g = make_pool<2>("avg_pool1d", b4, {1, kernel_size}, {1, stride.value_or(kernel_size)},
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

namespace {

// adaptive_max_pool1d's pass over x [N, C, L] or [C, L], with the indices if asked.
std::tuple<Tensor, Tensor> adaptive_max1d(const Tensor& x, int64_t output_size, bool indices) {
  const Tensor x4 = as_rows("adaptive_max_pool1d", x);
  EMBER_CHECK(output_size > 0, "[adaptive_max_pool1d] output_size must be positive: got {}",
              output_size);
  auto [y, idx] = adaptive_max2d(x4, {1, output_size}, indices);
  return {y.squeeze(-2), idx.defined() ? idx.squeeze(-2) : idx};
}

}  // namespace

std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& x, int64_t output_size) {
  return adaptive_max1d(x, output_size, /*indices=*/true);
}

Tensor adaptive_max_pool1d(const Tensor& x, int64_t output_size) {
  return std::get<0>(adaptive_max1d(x, output_size, /*indices=*/false));
}

Tensor adaptive_avg_pool2d(const Tensor& x, IntList output_size) {
  const Tensor x4 = as_batched("adaptive_avg_pool2d", x, /*allow_int=*/false);
  const auto out = pair_arg("adaptive_avg_pool2d", "output_size", output_size);
  EMBER_CHECK(out[0] > 0 && out[1] > 0,
              "[adaptive_avg_pool2d] output_size must be positive: got ({}, {})", out[0], out[1]);
  return squeeze_if(adaptive_forward(x4, out), x.dim() == 3);
}

// Note [3-d pooling as two passes]
// A 3-d window is the product of a depth window and a plane window, and the maximum (or sum) over
// it is the maximum (or sum) over the depth window of the plane windows' maxima (sums). So the
// 3-d poolings pool every depth slice's planes with the 2-d kernels ([N, C D, H, W]), then the
// depth with the same kernels over [N, C, D, OH OW] with (kD, 1) windows: every backend, the 2-d
// kernels' gradients, no kernel of their own. Each dim's output size and window follow PyTorch's
// per-dim rules, so the passes agree with the 3-d ones. Average pooling's divisor is a product
// of per-dim counts too (PyTorch's pool_size; without count_include_pad, the taps inside the
// input), so the passes' divisors multiply to it; divisor_override sums in both passes and
// divides once. Max pooling returns PyTorch's indices, d H W + h W + w of the first maximum in
// (d, h, w) order: the depth pass picks the first depth slice holding the maximum, and the
// plane pass's index within that slice is the first there. Adaptive windows are products as
// well (Note [Adaptive max pooling as two one-dim passes]).
namespace {

/** The plane pass (dims 1 and 2 of g) of a 3-d pooling. */
Pool plane_pass(const PoolGeometry<3>& g) {
  Pool p;
  p.k = {g.k[1], g.k[2]}, p.s = {g.s[1], g.s[2]}, p.p = {g.p[1], g.p[2]};
  p.d = {g.d[1], g.d[2]}, p.in = {g.in[1], g.in[2]}, p.out = {g.out[1], g.out[2]};
  return p;
}

/** The depth pass of a 3-d pooling, over [N, C, D, OH OW]. */
Pool depth_pass(const PoolGeometry<3>& g) {
  const int64_t cols = g.out[1] * g.out[2];
  Pool p;
  p.k = {g.k[0], 1}, p.s = {g.s[0], 1}, p.p = {g.p[0], 0};
  p.d = {g.d[0], 1}, p.in = {g.in[0], cols}, p.out = {g.out[0], cols};
  return p;
}

IntList ints(const std::array<int64_t, 2>& v) {
  return IntList(v.data(), v.size());
}

// max_pool3d's two passes; the indices are combined only when `indices` asks for them.
std::tuple<Tensor, Tensor> max_pool3d_passes(const Tensor& x, IntList kernel_size, IntList stride,
                                             IntList padding, IntList dilation, bool ceil_mode,
                                             bool indices) {
  constexpr const char* kOp = "max_pool3d";
  const Tensor x5 = as_batched(kOp, x, /*allow_int=*/false, 3);
  const auto g = make_pool<3>(kOp, x5, kernel_size, stride, padding, dilation, ceil_mode);
  const Pool plane = plane_pass(g), depth = depth_pass(g);
  const int64_t n = x5.size(0), c = x5.size(1);
  const auto [yp, ip] =
      max_pool_ad(kOp, x5.reshape({n, c * g.in[0], g.in[1], g.in[2]}), ints(plane.k), ints(plane.s),
                  ints(plane.p), ints(plane.d), ceil_mode);
  const auto [yd, id] = max_pool_ad(kOp, yp.reshape({n, c, g.in[0], depth.in[1]}), ints(depth.k),
                                    ints(depth.s), ints(depth.p), ints(depth.d), ceil_mode);
  const Shape sizes{n, c, g.out[0], g.out[1], g.out[2]};
  const bool unbatched = x.dim() == 4;
  const Tensor y = squeeze_if(yd.reshape(sizes), unbatched);
  if (!indices) return {y, Tensor()};
  // id = d * OH OW + the output's position in its plane; the plane pass's index there.
  const Tensor at = id.reshape({n * c, -1});
  const Tensor within = gather(ip.reshape({n * c, -1}), 1, at);
  const Tensor idx = add(mul(div(at, depth.in[1], "floor"), g.in[1] * g.in[2]), within);
  return {y, squeeze_if(idx.reshape(sizes), unbatched)};
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& x, IntList kernel_size,
                                                   IntList stride, IntList padding,
                                                   IntList dilation, bool ceil_mode) {
  return max_pool3d_passes(x, kernel_size, stride, padding, dilation, ceil_mode,
                           /*indices=*/true);
}

Tensor max_pool3d(const Tensor& x, IntList kernel_size, IntList stride, IntList padding,
                  IntList dilation, bool ceil_mode) {
  return std::get<0>(max_pool3d_passes(x, kernel_size, stride, padding, dilation, ceil_mode,
                                       /*indices=*/false));
}

Tensor avg_pool3d(const Tensor& x, IntList kernel_size, IntList stride, IntList padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  constexpr const char* kOp = "avg_pool3d";
  EMBER_CHECK(!divisor_override || *divisor_override > 0,
              "[avg_pool3d] divisor_override must be positive: got {}",
              divisor_override.value_or(0));
  const Tensor x5 = as_batched(kOp, x, /*allow_int=*/false, 3);
  const auto g = make_pool<3>(kOp, x5, kernel_size, stride, padding, {1}, ceil_mode);
  AvgArgs plane, depth;
  plane.g = plane_pass(g), depth.g = depth_pass(g);
  plane.count_include_pad = depth.count_include_pad = count_include_pad;
  plane.divisor_override = depth.divisor_override = divisor_override ? 1 : 0;
  const int64_t n = x5.size(0), c = x5.size(1);
  const Tensor yp = avg_forward(x5.reshape({n, c * g.in[0], g.in[1], g.in[2]}), plane);
  Tensor y = avg_forward(yp.reshape({n, c, g.in[0], depth.g.in[1]}), depth)
                 .reshape({n, c, g.out[0], g.out[1], g.out[2]});
  if (divisor_override) y = div(y, static_cast<double>(*divisor_override));
  return squeeze_if(y, x.dim() == 4);
}

namespace {

// The checked output size of an adaptive 3-d pooling of x.
std::array<int64_t, 3> adaptive_size3(const char* op, const Tensor& x, IntList output_size) {
  const auto out = dims_arg<3>(op, "output_size", output_size);
  EMBER_CHECK(out[0] > 0 && out[1] > 0 && out[2] > 0,
              "[{}] output_size must be positive: got {} (input shape {})", op, dims_str(out),
              shape_str(x.sizes()));
  return out;
}

}  // namespace

Tensor adaptive_avg_pool3d(const Tensor& x, IntList output_size) {
  constexpr const char* kOp = "adaptive_avg_pool3d";
  const Tensor x5 = as_batched(kOp, x, /*allow_int=*/false, 3);
  const auto out = adaptive_size3(kOp, x, output_size);
  const int64_t n = x5.size(0), c = x5.size(1), d = x5.size(2), cols = out[1] * out[2];
  const Tensor yp =
      adaptive_forward(x5.reshape({n, c * d, x5.size(3), x5.size(4)}), {out[1], out[2]});
  const Tensor y = adaptive_forward(yp.reshape({n, c, d, cols}), {out[0], cols})
                       .reshape({n, c, out[0], out[1], out[2]});
  return squeeze_if(y, x.dim() == 4);
}

namespace {

// adaptive_max_pool3d's passes over x [N, C, D, H, W] or [C, D, H, W], with the indices if asked.
std::tuple<Tensor, Tensor> adaptive_max3d(const Tensor& x, IntList output_size, bool indices) {
  constexpr const char* kOp = "adaptive_max_pool3d";
  const Tensor x5 = as_batched(kOp, x, /*allow_int=*/false, 3);
  const auto out = adaptive_size3(kOp, x, output_size);
  return squeeze_both(adaptive_max_passes(x5, {2, 3, 4}, {out[0], out[1], out[2]}, indices),
                      x.dim() == 4);
}

}  // namespace

std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& x, IntList output_size) {
  return adaptive_max3d(x, output_size, /*indices=*/true);
}

Tensor adaptive_max_pool3d(const Tensor& x, IntList output_size) {
  return std::get<0>(adaptive_max3d(x, output_size, /*indices=*/false));
}

}  // namespace ember

namespace ember {

// Note [Max unpooling as one scatter]
// max_unpool puts each value of x at the position its index names in a zero output (the flat
// index within each output plane or volume, as the max poolings return them), which is one
// scatter along the flattened spatial dims: its gradient to x is the gather at the same indices,
// as PyTorch's. The output size defaults to the pooling's input size, (in - 1) stride - 2 padding
// + kernel per dim; a requested one must lie strictly within a stride of it, as PyTorch checks.
namespace {

Tensor max_unpool_n(const char* name, int64_t n, const Tensor& x, const Tensor& indices,
                    IntList kernel_size, IntList stride, IntList padding, IntList output_size) {
  EMBER_CHECK_TYPE(x.defined() && indices.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK(x.dim() == n + 1 || x.dim() == n + 2,
              "[{}] expected a {}-d or {}-d (batched) input: got shape {}", name, n + 1, n + 2,
              shape_str(x.sizes()));
  EMBER_CHECK_TYPE(indices.dtype() == DType::Int64,
                   "[{}] expected int64 indices (as the max poolings return them): got {}", name,
                   indices.dtype());
  EMBER_CHECK(indices.sizes() == x.sizes(),
              "[{}] expected indices of the input's shape {}: got shape {}", name,
              shape_str(x.sizes()), shape_str(indices.sizes()));
  const auto each = [&](const char* what, IntList v, int64_t fallback_at) {
    EMBER_CHECK(v.empty() || v.size() == 1 || static_cast<int64_t>(v.size()) == n,
                "[{}] {} must be one int or {} ints: got {}", name, what, n, shape_str(v));
    Shape r;
    for (int64_t d = 0; d < n; ++d) {
      r.push_back(v.empty() ? fallback_at : v[v.size() == 1 ? 0 : static_cast<size_t>(d)]);
    }
    return r;
  };
  const Shape k = each("kernel_size", kernel_size, 0);
  Shape s = each("stride", stride, 0);
  if (stride.empty()) s = k;
  const Shape p = each("padding", padding, 0);
  const bool batched = x.dim() == n + 2;
  const Tensor xb = batched ? x : x.unsqueeze(0), ib = batched ? indices : indices.unsqueeze(0);
  Shape out;
  for (int64_t d = 0; d < n; ++d) {
    out.push_back((xb.size(2 + d) - 1) * s[d] - 2 * p[d] + k[d]);
  }
  if (!output_size.empty()) {
    const int64_t given = static_cast<int64_t>(output_size.size());
    EMBER_CHECK(given == n || given == x.dim(),
                "[{}] output_size must have {} or {} elements: got {}", name, n, x.dim(),
                shape_str(output_size));
    for (int64_t d = 0; d < n; ++d) {
      const int64_t want = output_size[static_cast<size_t>(given - n + d)];
      EMBER_CHECK(want > out[d] - s[d] && want < out[d] + s[d],
                  "[{}] invalid output_size {}: each size must lie strictly within a stride of "
                  "the default {}",
                  name, shape_str(output_size), shape_str(out));
      out[d] = want;
    }
  }
  int64_t plane = 1;
  for (int64_t v : out) plane *= v;
  const int64_t nb = xb.size(0), c = xb.size(1);
  const Tensor flat_i = ib.reshape({nb, c, -1});
  if (flat_i.numel() > 0) {
    const double lo = amin(flat_i).item<double>(), hi = amax(flat_i).item<double>();
    EMBER_CHECK_INDEX(lo >= 0 && hi < static_cast<double>(plane),
                      "[{}] found an invalid max index: indices span [{}, {}] for an output of {} "
                      "positions per plane (output size {})",
                      name, lo, hi, plane, shape_str(out));
  }
  const Tensor zeros_out = zeros({nb, c, plane}, TensorOptions(x.dtype(), x.device()));
  Shape sizes{nb, c};
  for (int64_t v : out) sizes.push_back(v);
  const Tensor y = scatter(zeros_out, 2, flat_i, xb.reshape({nb, c, -1})).reshape(sizes);
  return batched ? y : y.squeeze(0);
}

}  // namespace

Tensor max_unpool1d(const Tensor& x, const Tensor& indices, int64_t kernel_size,
                    std::optional<int64_t> stride, int64_t padding, IntList output_size) {
  return max_unpool_n("max_unpool1d", 1, x, indices, {kernel_size},
                      stride ? Shape{*stride} : Shape{}, {padding}, output_size);
}

Tensor max_unpool2d(const Tensor& x, const Tensor& indices, IntList kernel_size, IntList stride,
                    IntList padding, IntList output_size) {
  return max_unpool_n("max_unpool2d", 2, x, indices, kernel_size, stride, padding, output_size);
}

Tensor max_unpool3d(const Tensor& x, const Tensor& indices, IntList kernel_size, IntList stride,
                    IntList padding, IntList output_size) {
  return max_unpool_n("max_unpool3d", 3, x, indices, kernel_size, stride, padding, output_size);
}

// lp_pool as PyTorch writes it: the average of x^p over each window times the window's size,
// to the 1/p (negative averages of odd powers clamped to 0 by sign(s) relu(|s|)).
namespace {

Tensor lp_from_average(const Tensor& avg, double norm_type, int64_t window) {
  return pow(mul(mul(sign(avg), relu(abs(avg))), static_cast<double>(window)), 1.0 / norm_type);
}

int64_t window_size(const char* name, IntList kernel_size, int64_t n) {
  EMBER_CHECK(kernel_size.size() == 1 || static_cast<int64_t>(kernel_size.size()) == n,
              "[{}] kernel_size must be one int or {} ints: got {}", name, n,
              shape_str(kernel_size));
  int64_t w = 1;
  for (int64_t d = 0; d < n; ++d) w *= kernel_size[kernel_size.size() == 1 ? 0 : d];
  return w;
}

}  // namespace

Tensor lp_pool1d(const Tensor& x, double norm_type, int64_t kernel_size,
                 std::optional<int64_t> stride, bool ceil_mode) {
  const Tensor avg = avg_pool1d(pow(x, norm_type), kernel_size, stride, 0, ceil_mode);
  return lp_from_average(avg, norm_type, kernel_size);
}

Tensor lp_pool2d(const Tensor& x, double norm_type, IntList kernel_size, IntList stride,
                 bool ceil_mode) {
  const Tensor avg = avg_pool2d(pow(x, norm_type), kernel_size, stride, {0, 0}, ceil_mode);
  return lp_from_average(avg, norm_type, window_size("lp_pool2d", kernel_size, 2));
}

Tensor lp_pool3d(const Tensor& x, double norm_type, IntList kernel_size, IntList stride,
                 bool ceil_mode) {
  const Tensor avg = avg_pool3d(pow(x, norm_type), kernel_size, stride, {0}, ceil_mode);
  return lp_from_average(avg, norm_type, window_size("lp_pool3d", kernel_size, 3));
}

}  // namespace ember
