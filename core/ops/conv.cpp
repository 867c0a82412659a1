// conv2d: y[n, o, i, j] = b[o] + sum over c of o's group and taps (a, e) of
//   x[n, c, i*sh - ph + a*dh, j*sw - pw + e*dw] * w[o, c - first channel of the group, a, e],
//   taps outside x read 0; OH = (H + 2*ph - dh*(kH-1) - 1) / sh + 1 (likewise OW).
// conv3d: the same over [N, C, D, H, W] (Note [conv3d as one conv2d]).
// conv_transpose2d: the adjoint of conv2d in its input (weight [C, O/groups, kH, kW] read as a
//   conv2d weight from O to C channels), plus the bias; OH = (H-1)*sh - 2*ph + dh*(kH-1) + oph + 1.
//
// Kernel contract (all three; attributes attrs::conv2d, dilation 1 = dense): contiguous rank-4
// tensors of one floating dtype (or, for a kernel registered with EMBER_KERNEL_CHANNELS_LAST,
// all rank-4 operands channels-last: Note [Channels-last kernels] in plugin_abi.h); spatial sizes
// come from the tensors, and taps outside the input count as 0 (so the input may be larger than the
// output needs, for output_padding). Kernels never see an empty output or an empty reduction (N = 0
// or C = 0 is handled here).
//   "conv2d"                  {x [N, C, H, W], w [O, C/g, kH, kW], optional b [O]} -> {y}
//   "conv2d_backward_input"   {dy [N, O, OH, OW], w} -> {dx [N, C, H, W]}
//   "conv2d_backward_weight"  {x, dy} -> {dw [O, C/g, kH, kW]}
//   "conv2d_relu" (optional)  as "conv2d", every output element max(y, 0) (a NaN: NaN or 0)
//   "conv2d_add_relu" (optional)  {x, w, r [N, O, OH, OW] (y's layout), optional b} -> {y}:
//                             max(conv2d + r, 0) (a NaN: NaN or 0)
//
// Note [Fused convolution and ReLU]
// conv2d_relu(x, w, b) = relu(conv2d(x, w, b)). For inference a backend may do it in one pass:
// the CPU backend gives oneDNN the ReLU as a post-op of the convolution, so the activation is
// rectified while it is still in cache instead of read and written once more (PyTorch's
// mkldnn-fused convolutions do the same). The fused kernel is used when no gradient is recorded
// (no input requires grad, or grad mode is off) and the device has it; otherwise the op is the
// composite relu(conv2d(...)), differentiable and available everywhere. nn::Conv2d runs it
// when nn::fuse_for_inference has merged a ReLU that follows it (api/nn/fuse.cpp): ResNet-18
// inference on 32 images of 224x224 (batch norms folded, 2 threads) went from 622 to 579 ms
// (channels-last: 558 to 528 ms); at batch 1 the difference is within the noise. One
// difference: oneDNN's ReLU post-op turns a NaN sum into 0 where relu() keeps NaN (PyTorch's
// oneDNN-fused convolutions behave the same), so the contract allows either; the reference
// backend, the own float64 loops and the composite keep NaN.
//
// Note [Convolution, residual add and ReLU]
// A residual block ends in relu(conv(...) + shortcut) (its batch norm folded into the
// convolution). conv2d_add_relu(x, w, r, b) is that, and for inference a backend may do it in
// one pass: the CPU backend writes r into the convolution's destination and gives oneDNN a sum
// post-op (the destination's old contents added) and the ReLU, so the sum and the ReLU happen
// while the output is in cache instead of two more passes over it (PyTorch's inductor fuses the
// same with the binary form of _convolution_pointwise). As with conv2d_relu, the kernel runs
// when nothing is recorded and the device has it, the composite relu(add(conv2d(...), r))
// otherwise, and a NaN sum may come out 0 from the fused kernel. The residual goes to the kernel
// in the output's memory format (copied there if it is not). nn::fuse_for_inference arranges it
// for the blocks that offer it (ResidualTail in ember/nn/fuse.h).
//
// backward (Note [Backward of convolutions]):
//   conv2d            dx = conv_transpose2d(dy, w) sized back to x, dw = W(x, dy),
//                     db = sum(dy, N, H, W)
//   conv_transpose2d  dx = conv2d(dy, w) cut to x's size, dw = W(dy, x), db via the broadcast add
//   W(x, dy)          (the weight gradient, bilinear) dx = conv_transpose2d(dy, dW),
//                     d(dy) = conv2d(x, dW)
// unfold: cols[n, (c, a, e), (i, j)] = x[n, c, i*sh - ph + a*dh, j*sw - pw + e*dw] (0 outside x),
//   blocks (i, j) in row-major order; fold: its adjoint, y[n, c, h, w] = the sum of the columns'
//   taps landing on (h, w). Both gather through one index (Note [unfold and fold through one
//   index]), no kernel of their own.
#include "ember/ops/conv.h"

#include <algorithm>
#include <array>
#include <span>
#include <vector>

#include "core/dispatch/call.h"
#include "core/ops/size_math.h"
#include "ember/amp/autocast.h"
#include "ember/autograd/record.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/nn.h"
#include "ember/ops/reduce.h"

namespace ember {
namespace {

// The geometry shared by a convolution and its gradients.
struct ConvParams {
  int64_t sh, sw, ph, pw, dh, dw, groups;
  /** The kernels' attributes: A is attrs::conv2d or one of its gradients' (one layout). */
  template <typename A>
  A as() const {
    A a;
    a.stride_h = sh, a.stride_w = sw, a.pad_h = ph, a.pad_w = pw, a.dil_h = dh, a.dil_w = dw;
    a.groups = groups;
    return a;
  }
};

// One value per spatial dim from a list of 1 or N values.
template <size_t N>
std::array<int64_t, N> per_dim(IntList v, const char* op, const char* what) {
  EMBER_CHECK(v.size() == 1 || v.size() == N,
              "[{}] {} needs 1 or {} values (one per spatial dim): got {} values {}", op, what, N,
              v.size(), shape_str(v));
  std::array<int64_t, N> r{};
  for (size_t i = 0; i < N; ++i) r[i] = v[v.size() == 1 ? 0 : i];
  return r;
}

std::array<int64_t, 2> pair_of(IntList v, const char* op, const char* what) {
  return per_dim<2>(v, op, what);
}

ConvParams make_params(const char* op, IntList stride, IntList padding, IntList dilation,
                       int64_t groups) {
  const auto s = pair_of(stride, op, "stride");
  const auto p = pair_of(padding, op, "padding");
  const auto d = pair_of(dilation, op, "dilation");
  EMBER_CHECK(s[0] >= 1 && s[1] >= 1, "[{}] stride must be >= 1: got ({}, {})", op, s[0], s[1]);
  EMBER_CHECK(p[0] >= 0 && p[1] >= 0, "[{}] padding must be >= 0: got ({}, {})", op, p[0], p[1]);
  EMBER_CHECK(d[0] >= 1 && d[1] >= 1, "[{}] dilation must be >= 1: got ({}, {})", op, d[0], d[1]);
  EMBER_CHECK(groups >= 1, "[{}] groups must be >= 1: got {}", op, groups);
  return {s[0], s[1], p[0], p[1], d[0], d[1], groups};
}

void check_bias(const char* op, const Tensor& bias, int64_t out_channels) {
  if (!bias.defined()) return;
  EMBER_CHECK(bias.dim() == 1 && bias.size(0) == out_channels,
              "[{}] expected a bias of shape [{}]: got {}", op, out_channels,
              shape_str(bias.sizes()));
}

// Checks shared by the convolutions over `spatial` (2 or 3) dims: defined, ranks, dtypes,
// devices of x, w and bias, and a kernel of positive size.
void check_tensors(const char* op, const Tensor& x, const Tensor& w, const Tensor& bias,
                   int64_t spatial = 2) {
  EMBER_CHECK_TYPE(x.defined() && w.defined(), "[{}] undefined tensor argument", op);
  const char* dims = spatial == 3 ? "D, H, W" : "H, W";
  EMBER_CHECK(x.dim() == spatial + 1 || x.dim() == spatial + 2,
              "[{}] expected a {}-d [C, {}] or {}-d [N, C, {}] input: got shape {}", op,
              spatial + 1, dims, spatial + 2, dims, shape_str(x.sizes()));
  EMBER_CHECK(w.dim() == spatial + 2, "[{}] expected a {}-d weight: got shape {}", op, spatial + 2,
              shape_str(w.sizes()));
  EMBER_CHECK_TYPE(is_floating(x.dtype()),
                   "[{}] expected a floating input: got {} (convert with .to(ember::f32))", op,
                   x.dtype());
  EMBER_CHECK_TYPE(x.dtype() == w.dtype(),
                   "[{}] input and weight dtypes differ: {} and {} (convert one with .to())", op,
                   x.dtype(), w.dtype());
  EMBER_CHECK_TYPE(!bias.defined() || bias.dtype() == x.dtype(),
                   "[{}] input and bias dtypes differ: {} and {} (convert one with .to())", op,
                   x.dtype(), bias.dtype());
  common_device({&x, &w, &bias}, op);
  for (int64_t i = 2; i < w.dim(); ++i) {
    EMBER_CHECK(w.size(i) >= 1, "[{}] kernel size must be positive: weight {}", op,
                shape_str(w.sizes()));
  }
}

// The channel counts of a convolution with input channels c: the weight's out channels divide
// by groups, its in channels times groups are c, and the bias has one value per out channel.
void check_channels(const char* op, const Tensor& x, int64_t c, const Tensor& weight,
                    const Tensor& bias, int64_t groups) {
  const int64_t o = weight.size(0);
  EMBER_CHECK(o % groups == 0,
              "[{}] weight's out channels must be divisible by groups: {} out channels, "
              "groups {} (weight shape {})",
              op, o, groups, shape_str(weight.sizes()));
  EMBER_CHECK(c == WideInt(weight.size(1)) * groups,
              "[{}] expected input with {} channels (weight {} in channels x groups {}): got "
              "{} channels (input shape {}, weight shape {})",
              op, WideInt(weight.size(1)) * groups, weight.size(1), groups, c, shape_str(x.sizes()),
              shape_str(weight.sizes()));
  check_bias(op, bias, o);
}

// Output size of a convolution along one dim (may be < 1: the caller checks), exact
// (Note [Output sizes in 128 bits]).
WideInt conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (WideInt(in) + 2 * WideInt(p) - WideInt(d) * (k - 1) - 1) / s + 1;
}

// The padded image and the dilated kernel of the convolution over an h x w image (for the
// transpose, its output) fit int64, so no kernel's index arithmetic can wrap; the output
// size, which is smaller, then fits too.
void check_extents(const char* op, int64_t h, int64_t w, const Tensor& weight,
                   const ConvParams& p) {
  fit_int64(h + 2 * WideInt(p.ph), op, "padded height");
  fit_int64(w + 2 * WideInt(p.pw), op, "padded width");
  fit_int64(WideInt(p.dh) * (weight.size(2) - 1) + 1, op, "dilated kernel height");
  fit_int64(WideInt(p.dw) * (weight.size(3) - 1) + 1, op, "dilated kernel width");
}

// ---- below autograd: run the kernels ------------------------------------------------------------

// The format a convolution runs in and gives its image results (Note [Channels-last tensors]):
// channels-last if either 4-d operand is, as PyTorch's convolutions choose.
MemoryFormat conv_format(const Tensor& a, const Tensor& b) {
  return a.suggest_memory_format() == MemoryFormat::ChannelsLast ||
                 b.suggest_memory_format() == MemoryFormat::ChannelsLast
             ? MemoryFormat::ChannelsLast
             : MemoryFormat::Contiguous;
}

// The forward kernels: conv2d, or conv2d_relu / conv2d_add_relu (which the caller checked the
// device has; `residual` is conv2d_add_relu's).
template <typename A = attrs::conv2d>
Tensor conv2d_raw(const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams& p,
                  const Tensor& residual = {}) {
  constexpr bool kAdd = std::is_same_v<A, attrs::conv2d_add_relu>;
  // The public ops checked these sizes (and the padded and dilated extents) fit int64.
  const auto oh = static_cast<int64_t>(conv_out(x.size(2), w.size(2), p.sh, p.ph, p.dh));
  const auto ow = static_cast<int64_t>(conv_out(x.size(3), w.size(3), p.sw, p.pw, p.dw));
  const MemoryFormat format = conv_format(x, w);
  Tensor y = empty({x.size(0), w.size(0), oh, ow}, {x.dtype(), x.device()}, format);
  if (y.numel() == 0) return y;
  if (x.size(1) == 0) {  // empty reduction: the bias alone
    y.zero_();
    if (b.defined()) y.copy_(b.view({1, w.size(0), 1, 1}));
    if constexpr (kAdd) return relu(add(y, residual));
    return std::is_same_v<A, attrs::conv2d_relu> ? relu(y) : y;
  }
  // Inputs {x, w, optional b}, conv2d_add_relu's {x, w, r, optional b}.
  const Tensor r = kAdd ? residual.contiguous(format) : Tensor();
  std::array<const Tensor*, 4> in = {&x, &w};
  size_t n = 2;
  if constexpr (kAdd) in[n++] = &r;
  if (b.defined()) in[n++] = &b;
  const Tensor* out[1] = {&y};
  run_image_kernel(core_op(A::kOp), x.dtype(), format, std::span<const Tensor* const>(in.data(), n),
                   out, PackedAttrs(p.as<A>()));
  return y;
}

// The input gradient of a conv2d with weight w whose input is [N, C, h, w_] and output dy.
Tensor conv_input_raw(const Tensor& dy, const Tensor& w, const ConvParams& p, int64_t h,
                      int64_t w_) {
  const MemoryFormat format = conv_format(dy, w);
  Tensor dx = empty({dy.size(0), w.size(1) * p.groups, h, w_}, {dy.dtype(), dy.device()}, format);
  if (dx.numel() == 0) return dx;
  if (dy.size(1) == 0) return dx.zero_();
  run_image_kernel(p.as<attrs::conv2d_backward_input>(), dy.dtype(), format, {&dy, &w}, {&dx});
  return dx;
}

// The weight gradient [O, C/g, kh, kw] of a conv2d with input x and output gradient dy.
Tensor conv_weight_raw(const Tensor& x, const Tensor& dy, const ConvParams& p, int64_t kh,
                       int64_t kw) {
  const MemoryFormat format = conv_format(x, dy);
  Tensor dw = empty({dy.size(1), x.size(1) / p.groups, kh, kw}, {x.dtype(), x.device()}, format);
  if (dw.numel() == 0) return dw;
  if (x.size(0) == 0 || dy.numel() == 0) return dw.zero_();
  run_image_kernel(p.as<attrs::conv2d_backward_weight>(), x.dtype(), format, {&x, &dy}, {&dw});
  return dw;
}

// ---- autograd -----------------------------------------------------------------------------------

// Note [Backward of convolutions]
// Three differentiable functions call each other in their backward, so every order of
// derivative works: conv (the forward), its adjoint in the input (conv_input, which is
// conv_transpose2d without bias) and the weight gradient W(x, dy) (conv_weight), which is
// bilinear: <W(x, dy), G> = <conv(x, G), dy> = <x, conv_input(dy, G)>. Sizes: conv_input needs
// the input size it restores (given explicitly, so a stride that skipped trailing rows restores
// them as zeros); conv of a conv_input result may be longer than the tensor it is the
// gradient of (when output_padding >= stride) and is cut with narrow.
Tensor conv_input(const Tensor& dy, const Tensor& w, const ConvParams& p, int64_t h, int64_t w_);
Tensor conv_weight(const Tensor& x, const Tensor& dy, const ConvParams& p, int64_t kh, int64_t kw);

Tensor cut_to(const Tensor& t, int64_t h, int64_t w) {
  Tensor r = t;
  if (r.size(2) != h) r = r.narrow(2, 0, h);
  if (r.size(3) != w) r = r.narrow(3, 0, w);
  return r;
}

Tensor conv(const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams& p) {
  return autograd::differentiable(
      "Conv2dBackward", "conv2d", {&x, &w, &b}, [&] { return conv2d_raw(x, w, b, p); },
      [&] {
        return
            [sx = autograd::SavedTensor(x), sw = autograd::SavedTensor(w), p,
             rx = x.requires_grad(), rw = w.requires_grad(), rb = b.defined() && b.requires_grad()](
                const std::vector<Tensor>& g, const autograd::LambdaNode& self) {
              const Tensor x = self.unpack(sx), w = self.unpack(sw);
              Tensor gx, gw, gb;
              if (rx) gx = conv_input(g[0], w, p, x.size(2), x.size(3));
              if (rw) gw = conv_weight(x, g[0], p, w.size(2), w.size(3));
              if (rb) gb = sum(g[0], {0, 2, 3});
              return std::vector<Tensor>{gx, gw, gb};
            };
      });
}

Tensor conv_input(const Tensor& dy, const Tensor& w, const ConvParams& p, int64_t h, int64_t w_) {
  return autograd::differentiable(
      "ConvTranspose2dBackward", "conv_transpose2d", {&dy, &w},
      [&] { return conv_input_raw(dy, w, p, h, w_); },
      [&] {
        return [sdy = autograd::SavedTensor(dy), sw = autograd::SavedTensor(w), p,
                rdy = dy.requires_grad(), rw = w.requires_grad()](
                   const std::vector<Tensor>& g, const autograd::LambdaNode& self) {
          const Tensor dy = self.unpack(sdy), w = self.unpack(sw);
          Tensor gdy, gw;
          if (rdy) gdy = cut_to(conv(g[0], w, Tensor(), p), dy.size(2), dy.size(3));
          if (rw) gw = conv_weight(g[0], dy, p, w.size(2), w.size(3));
          return std::vector<Tensor>{gdy, gw};
        };
      });
}

Tensor conv_weight(const Tensor& x, const Tensor& dy, const ConvParams& p, int64_t kh, int64_t kw) {
  return autograd::differentiable(
      "Conv2dWeightBackward", "conv2d", {&x, &dy},
      [&] { return conv_weight_raw(x, dy, p, kh, kw); },
      [&] {
        return [sx = autograd::SavedTensor(x), sdy = autograd::SavedTensor(dy), p,
                rx = x.requires_grad(), rdy = dy.requires_grad()](
                   const std::vector<Tensor>& g, const autograd::LambdaNode& self) {
          const Tensor x = self.unpack(sx), dy = self.unpack(sdy);
          Tensor gx, gdy;
          if (rx) gx = conv_input(dy, g[0], p, x.size(2), x.size(3));
          if (rdy) gdy = cut_to(conv(x, g[0], Tensor(), p), dy.size(2), dy.size(3));
          return std::vector<Tensor>{gx, gdy};
        };
      });
}

}  // namespace

namespace {
// What follows the convolution in one of the public forward ops.
enum class Tail { None, ReLU, AddReLU };

// conv2d, conv2d_relu or conv2d_add_relu after `tail` (named kOp in errors): the checks, then
// the op; `residual` is conv2d_add_relu's.
Tensor conv2d_checked(const char* kOp, const Tensor& x, const Tensor& weight, const Tensor& bias,
                      IntList stride, IntList padding, IntList dilation, int64_t groups, Tail tail,
                      const Tensor& residual = {}) {
  check_tensors(kOp, x, weight, bias);
  const ConvParams p = make_params(kOp, stride, padding, dilation, groups);
  const bool batched = x.dim() == 4;
  const Tensor x4 = batched ? x : x.unsqueeze(0);
  const int64_t o = weight.size(0);
  check_channels(kOp, x, x4.size(1), weight, bias, groups);
  const WideInt oh = conv_out(x4.size(2), weight.size(2), p.sh, p.ph, p.dh);
  const WideInt ow = conv_out(x4.size(3), weight.size(3), p.sw, p.pw, p.dw);
  EMBER_CHECK(oh >= 1 && ow >= 1,
              "[{}] computed output size is too small: input {}x{} padded to {}x{}, kernel "
              "{}x{} dilated to {}x{}, gives output {}x{}",
              kOp, x4.size(2), x4.size(3), x4.size(2) + 2 * WideInt(p.ph),
              x4.size(3) + 2 * WideInt(p.pw), weight.size(2), weight.size(3),
              WideInt(p.dh) * (weight.size(2) - 1) + 1, WideInt(p.dw) * (weight.size(3) - 1) + 1,
              oh, ow);
  check_extents(kOp, x4.size(2), x4.size(3), weight, p);
  Tensor r4;
  if (tail == Tail::AddReLU) {
    EMBER_CHECK_TYPE(residual.defined(), "[{}] undefined residual", kOp);
    EMBER_CHECK_TYPE(residual.dtype() == x.dtype(),
                     "[{}] input and residual dtypes differ: {} and {} (convert one with .to())",
                     kOp, x.dtype(), residual.dtype());
    common_device({&x, &residual}, kOp);
    const Shape out = batched
                          ? Shape{x4.size(0), o, static_cast<int64_t>(oh), static_cast<int64_t>(ow)}
                          : Shape{o, static_cast<int64_t>(oh), static_cast<int64_t>(ow)};
    EMBER_CHECK(residual.sizes() == out,
                "[{}] the residual must have the convolution's output shape {}: got {}", kOp,
                shape_str(out), shape_str(residual.sizes()));
    r4 = batched ? residual : residual.unsqueeze(0);
  }
  const bool recorded =
      autograd::is_grad_enabled() &&
      (x.requires_grad() || weight.requires_grad() || (bias.defined() && bias.requires_grad()) ||
       (residual.defined() && residual.requires_grad()));
  Tensor y;
  const auto fused = [&](ops::Id op) {
    return !recorded && has_kernel(core_op(op), x.device(), x.dtype());
  };
  if (tail == Tail::ReLU && fused(attrs::conv2d_relu::kOp)) {
    y = conv2d_raw<attrs::conv2d_relu>(x4, weight, bias, p);
  } else if (tail == Tail::AddReLU && fused(attrs::conv2d_add_relu::kOp)) {
    y = conv2d_raw<attrs::conv2d_add_relu>(x4, weight, bias, p, r4);
  } else {
    // The composites (Note [Fused convolution and ReLU], Note [Convolution, residual add and
    // ReLU]).
    y = conv(x4, weight, bias, p);
    if (tail == Tail::AddReLU) y = add(y, r4);
    if (tail != Tail::None) y = relu(y);
  }
  return batched ? y : y.squeeze(0);
}
}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride,
              IntList padding, IntList dilation, int64_t groups) {
  EMBER_AUTOCAST(Lower, conv2d, x, x, weight, bias, stride, padding, dilation, groups);
  return conv2d_checked("conv2d", x, weight, bias, stride, padding, dilation, groups, Tail::None);
}

Tensor conv2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride,
                   IntList padding, IntList dilation, int64_t groups) {
  EMBER_AUTOCAST(Lower, conv2d_relu, x, x, weight, bias, stride, padding, dilation, groups);
  return conv2d_checked("conv2d_relu", x, weight, bias, stride, padding, dilation, groups,
                        Tail::ReLU);
}

Tensor conv2d_add_relu(const Tensor& x, const Tensor& weight, const Tensor& residual,
                       const Tensor& bias, IntList stride, IntList padding, IntList dilation,
                       int64_t groups) {
  EMBER_AUTOCAST(Lower, conv2d_add_relu, x, x, weight, residual, bias, stride, padding, dilation,
                 groups);
  return conv2d_checked("conv2d_add_relu", x, weight, bias, stride, padding, dilation, groups,
                        Tail::AddReLU, residual);
}

// conv1d is conv2d over images of height 1: x [N, C, 1, L], weight [O, C/g, 1, K]. Its own
// checks name its own shapes; the rest (groups, bias, sizes) are conv2d's.
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
              int64_t padding, int64_t dilation, int64_t groups) {
  EMBER_AUTOCAST(Lower, conv1d, x, x, weight, bias, stride, padding, dilation, groups);
  EMBER_CHECK_TYPE(x.defined() && weight.defined(), "[conv1d] undefined tensor argument");
  EMBER_CHECK(x.dim() == 2 || x.dim() == 3,
              "[conv1d] expected a 2-d [C, L] or 3-d [N, C, L] input: got shape {}",
              shape_str(x.sizes()));
  EMBER_CHECK(weight.dim() == 3, "[conv1d] expected a 3-d weight [O, C/groups, K]: got shape {}",
              shape_str(weight.sizes()));
  EMBER_CHECK(stride >= 1 && dilation >= 1 && padding >= 0,
              "[conv1d] stride and dilation must be >= 1 and padding >= 0: got stride {}, "
              "padding {}, dilation {}",
              stride, padding, dilation);
  const int64_t len = x.size(x.dim() - 1), k = weight.size(2);
  const WideInt out = conv_out(len, k, stride, padding, dilation);
  EMBER_CHECK(k >= 1 && out >= 1,
              "[conv1d] computed output length is too small: input length {} padded to {}, "
              "kernel {} dilated to {}, gives {}",
              len, len + 2 * WideInt(padding), k, WideInt(dilation) * (k - 1) + 1, out);
  const Tensor y = conv2d(x.unsqueeze(x.dim() - 1), weight.unsqueeze(2), bias, {1, stride},
                          {0, padding}, {1, dilation}, groups);
  return y.squeeze(y.dim() - 2);
}

// Note [conv3d as one conv2d]
// Output depth slice i of a 3-d convolution sums, over the depth taps t, a 2-d convolution of
// input depth slice i sd - pd + t dd with the weight's depth slice t. A sum over taps and
// channels is what one conv2d computes, so conv3d stacks each output slice's kD input slices on
// the channel dim, group-major ([N OD, groups kD C/groups, H, W]), and runs one conv2d with the
// weight read as [O, kD C/groups, kH, kW] and the bias: the device's 2-d convolution (oneDNN,
// cuDNN, the reference loops) computes it, and the backward is conv2d's through the stack,
// slices and padding. The input is read kD / sd times over (the 2-d case of im2col).
Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride,
              IntList padding, IntList dilation, int64_t groups) {
  EMBER_AUTOCAST(Lower, conv3d, x, x, weight, bias, stride, padding, dilation, groups);
  constexpr const char* kOp = "conv3d";
  check_tensors(kOp, x, weight, bias, 3);
  const auto s = per_dim<3>(stride, kOp, "stride");
  const auto p = per_dim<3>(padding, kOp, "padding");
  const auto d = per_dim<3>(dilation, kOp, "dilation");
  EMBER_CHECK(s[0] >= 1 && s[1] >= 1 && s[2] >= 1, "[conv3d] stride must be >= 1: got ({}, {}, {})",
              s[0], s[1], s[2]);
  EMBER_CHECK(p[0] >= 0 && p[1] >= 0 && p[2] >= 0,
              "[conv3d] padding must be >= 0: got ({}, {}, {})", p[0], p[1], p[2]);
  EMBER_CHECK(d[0] >= 1 && d[1] >= 1 && d[2] >= 1,
              "[conv3d] dilation must be >= 1: got ({}, {}, {})", d[0], d[1], d[2]);
  EMBER_CHECK(groups >= 1, "[conv3d] groups must be >= 1: got {}", groups);
  const bool batched = x.dim() == 5;
  const Tensor x5 = batched ? x : x.unsqueeze(0);
  check_channels(kOp, x, x5.size(1), weight, bias, groups);
  std::array<WideInt, 3> out{};
  for (int i = 0; i < 3; ++i) {
    out[i] = conv_out(x5.size(2 + i), weight.size(2 + i), s[i], p[i], d[i]);
    fit_int64(x5.size(2 + i) + 2 * WideInt(p[i]), kOp, "padded input");
    fit_int64(WideInt(d[i]) * (weight.size(2 + i) - 1) + 1, kOp, "dilated kernel");
  }
  EMBER_CHECK(out[0] >= 1 && out[1] >= 1 && out[2] >= 1,
              "[conv3d] computed output size is too small: input {}x{}x{}, kernel {}x{}x{}, "
              "padding ({}, {}, {}), dilation ({}, {}, {}) give output {}x{}x{}",
              x5.size(2), x5.size(3), x5.size(4), weight.size(2), weight.size(3), weight.size(4),
              p[0], p[1], p[2], d[0], d[1], d[2], out[0], out[1], out[2]);
  const int64_t n = x5.size(0), o = weight.size(0), kd = weight.size(2), cg = weight.size(1);
  const auto od = static_cast<int64_t>(out[0]);
  const int64_t h = x5.size(3), w = x5.size(4);
  const int64_t depth_pads[6] = {0, 0, 0, 0, p[0], p[0]};
  const Tensor xp = p[0] > 0 ? pad(x5, IntList(depth_pads, 6)) : x5;
  std::vector<Tensor> taps;
  taps.reserve(static_cast<size_t>(kd));
  for (int64_t t = 0; t < kd; ++t) {
    const int64_t first = t * d[0];
    taps.push_back(
        xp.slice(2, first, first + s[0] * (od - 1) + 1, s[0]).reshape({n, groups, cg, od, h, w}));
  }
  const Tensor slices = stack(taps, 2)  // [n, groups, kD, C/groups, OD, H, W]
                            .permute({0, 4, 1, 2, 3, 5, 6})
                            .reshape({n * od, groups * kd * cg, h, w});
  const Tensor w2 =
      weight.permute({0, 2, 1, 3, 4}).reshape({o, kd * cg, weight.size(3), weight.size(4)});
  const Tensor y2 = conv2d(slices, w2, bias, {s[1], s[2]}, {p[1], p[2]}, {d[1], d[2]}, groups);
  const Tensor y =
      y2.reshape({n, od, o, y2.size(2), y2.size(3)}).permute({0, 2, 1, 3, 4}).contiguous();
  return batched ? y : y.squeeze(0);
}

// Note [Padding 'same']
// padding='same' keeps every spatial size of a stride-1 convolution: each dim's dilated kernel
// span d (k - 1) becomes zeros before and after, and where the span is odd the extra zero goes
// after, as PyTorch places it (so results agree with it exactly). The devices' convolutions pad
// symmetrically, so an uneven split pads the input by the extra zeros at the end first, and the
// convolution adds the even part on both sides. The layers' other padding modes (reflect,
// replicate, circular) take the same split from same_padding (Note [Padding in convolution
// layers] in api/nn/layers.cpp).
std::pair<Shape, Shape> same_padding(IntList kernel, IntList stride, IntList dilation,
                                     const char* op) {
  const size_t n = kernel.size();
  auto at = [&](IntList v, const char* what, size_t i) {
    EMBER_CHECK(v.size() == 1 || v.size() == n,
                "[{}] {} needs 1 or {} values (one per spatial dim): got {} values {}", op, what, n,
                v.size(), shape_str(v));
    return v[v.size() == 1 ? 0 : i];
  };
  Shape before(n), after(n);
  for (size_t i = 0; i < n; ++i) {
    EMBER_CHECK(at(stride, "stride", i) == 1,
                "[{}] padding='same' is not supported for strided convolutions: got stride {} "
                "(pad explicitly, or use padding='valid')",
                op, shape_str(stride));
    const int64_t d = at(dilation, "dilation", i);
    EMBER_CHECK(kernel[i] >= 1 && d >= 1,
                "[{}] kernel sizes and dilation must be >= 1: got kernel {}, dilation {}", op,
                shape_str(kernel), shape_str(dilation));
    const int64_t span = d * (kernel[i] - 1);
    before[i] = span / 2;
    after[i] = span - before[i];
  }
  return {before, after};
}

namespace {

/** conv(x', padding) for a named padding over `dims` spatial dims: x' is x with the extra zeros
 *  of an uneven 'same' at the end of each dim (Note [Padding 'same']). */
template <class Conv>
Tensor conv_named(const char* op, const Tensor& x, const Tensor& weight, size_t dims,
                  IntList stride, ConvPadding padding, IntList dilation, const Conv& conv) {
  if (padding == ConvPadding::Valid) return conv(x, Shape(dims, 0));
  EMBER_CHECK_TYPE(x.defined() && weight.defined(), "[{}] undefined tensor argument", op);
  EMBER_CHECK(weight.dim() == static_cast<int64_t>(dims) + 2,
              "[{}] expected a {}-d weight: got shape {}", op, dims + 2, shape_str(weight.sizes()));
  const IntList kernel(weight.sizes().data() + 2, dims);
  const auto [before, after] = same_padding(kernel, stride, dilation, op);
  Shape extra;  // pad()'s order: the last dim first
  for (size_t i = dims; i-- > 0;) {
    extra.push_back(0);
    extra.push_back(after[i] - before[i]);
  }
  const bool uneven = before != after;
  return conv(uneven ? pad(x, extra) : x, before);
}

}  // namespace

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
              ConvPadding padding, int64_t dilation, int64_t groups) {
  return conv_named("conv1d", x, weight, 1, {stride}, padding, {dilation},
                    [&](const Tensor& in, IntList p) {
                      return conv1d(in, weight, bias, stride, p[0], dilation, groups);
                    });
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride,
              ConvPadding padding, IntList dilation, int64_t groups) {
  return conv_named("conv2d", x, weight, 2, stride, padding, dilation,
                    [&](const Tensor& in, IntList p) {
                      return conv2d(in, weight, bias, stride, p, dilation, groups);
                    });
}

Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride,
              ConvPadding padding, IntList dilation, int64_t groups) {
  return conv_named("conv3d", x, weight, 3, stride, padding, dilation,
                    [&](const Tensor& in, IntList p) {
                      return conv3d(in, weight, bias, stride, p, dilation, groups);
                    });
}

Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
                        int64_t padding, int64_t output_padding, int64_t groups, int64_t dilation) {
  EMBER_CHECK_TYPE(x.defined() && weight.defined(), "[conv_transpose1d] undefined tensor argument");
  EMBER_CHECK(x.dim() == 2 || x.dim() == 3,
              "[conv_transpose1d] expected a 2-d [C, L] or 3-d [N, C, L] input: got shape {}",
              shape_str(x.sizes()));
  EMBER_CHECK(weight.dim() == 3,
              "[conv_transpose1d] expected a 3-d weight [C, O/groups, K]: got shape {}",
              shape_str(weight.sizes()));
  return conv_transpose2d(x.unsqueeze(-2), weight.unsqueeze(2), bias, {1, stride}, {0, padding},
                          {0, output_padding}, groups, {1, dilation})
      .squeeze(-2);
}

// Note [conv_transpose3d as depth taps of conv_transpose2d]
// Input depth j reaches output depths s j - p + d t, one per depth tap t, and within each depth
// the planes transpose-convolve as in 2-d. So each tap is one conv_transpose2d of all the input
// depths at once (batched as [N D, C, H, W]) with that tap's [C, O/groups, kH, kW] weights, added
// along depth at s j + d t of an uncropped output by index_add; the depth padding then crops p
// from each end (output_padding extends the far end). kD conv_transpose2d calls, every backend,
// the 2-d kernels' gradients, no kernel of its own.
Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride,
                        IntList padding, IntList output_padding, int64_t groups, IntList dilation) {
  constexpr const char* kOp = "conv_transpose3d";
  EMBER_CHECK_TYPE(x.defined() && weight.defined(), "[{}] undefined tensor argument", kOp);
  EMBER_CHECK(x.dim() == 4 || x.dim() == 5,
              "[{}] expected a 4-d [C, D, H, W] or 5-d [N, C, D, H, W] input: got shape {}", kOp,
              shape_str(x.sizes()));
  EMBER_CHECK(weight.dim() == 5,
              "[{}] expected a 5-d weight [C, O/groups, kD, kH, kW]: got shape {}", kOp,
              shape_str(weight.sizes()));
  const auto s = per_dim<3>(stride, kOp, "stride");
  const auto p = per_dim<3>(padding, kOp, "padding");
  const auto op = per_dim<3>(output_padding, kOp, "output_padding");
  const auto d = per_dim<3>(dilation, kOp, "dilation");
  EMBER_CHECK(s[0] >= 1 && d[0] >= 1 && p[0] >= 0 && op[0] >= 0 && op[0] < std::max(s[0], d[0]),
              "[{}] depth stride and dilation must be >= 1, padding >= 0 and output_padding "
              "smaller than stride or dilation: got stride {}, padding {}, output_padding {}, "
              "dilation {}",
              kOp, s[0], p[0], op[0], d[0]);
  const bool batched = x.dim() == 5;
  const Tensor x5 = batched ? x : x.unsqueeze(0);
  const int64_t n = x5.size(0), c = x5.size(1), depth = x5.size(2), kd = weight.size(2);
  const WideInt full_wide = WideInt(depth - 1) * s[0] + WideInt(d[0]) * (kd - 1) + 1 + op[0];
  const int64_t full = fit_int64(full_wide, kOp, "output depth");
  const int64_t out_depth = full - 2 * p[0];
  EMBER_CHECK(out_depth >= 1,
              "[{}] computed output depth is too small: input depth {}, kernel depth {}, stride "
              "{}, padding {}, dilation {} give {}",
              kOp, depth, kd, s[0], p[0], d[0], out_depth);
  // Every depth of the input as a batch of planes: [N D, C, H, W].
  const Tensor planes = x5.transpose(1, 2).reshape({n * depth, c, x5.size(3), x5.size(4)});
  Tensor y;
  for (int64_t t = 0; t < kd; ++t) {
    const Tensor part = conv_transpose2d(planes, weight.select(2, t), {}, {s[1], s[2]},
                                         {p[1], p[2]}, {op[1], op[2]}, groups, {d[1], d[2]});
    const int64_t o = part.size(1), oh = part.size(2), ow = part.size(3);
    if (!y.defined()) y = zeros({n, o, full, oh, ow}, TensorOptions(part.dtype(), part.device()));
    const Tensor at = arange(d[0] * t, d[0] * t + s[0] * (depth - 1) + 1, s[0],
                             TensorOptions(DType::Int64, part.device()));
    y = index_add(y, 2, at, part.reshape({n, depth, o, oh, ow}).transpose(1, 2));
  }
  y = y.narrow(2, p[0], out_depth);
  if (bias.defined()) {
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == y.size(1),
                "[{}] bias should have shape [{}]: got shape {}", kOp, y.size(1),
                shape_str(bias.sizes()));
    y = add(y, bias.reshape({1, -1, 1, 1, 1}));
  }
  return batched ? y : y.squeeze(0);
}

Shape conv_transpose_output_padding(const Tensor& x, IntList output_size, IntList kernel_size,
                                    IntList stride, IntList padding, IntList dilation) {
  constexpr const char* kOp = "conv_transpose";
  const size_t n = kernel_size.size();
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", kOp);
  EMBER_CHECK(stride.size() == n && padding.size() == n && dilation.size() == n &&
                  x.dim() >= static_cast<int64_t>(n) + 1,
              "[{}] expected one stride, padding and dilation per spatial dim and an input of at "
              "least {} dims: got input shape {}",
              kOp, n + 1, shape_str(x.sizes()));
  // output_size may repeat the input's batch and channel dims before the spatial ones.
  const size_t lead = output_size.size() > n ? output_size.size() - n : 0;
  EMBER_CHECK(output_size.size() == n || output_size.size() == static_cast<size_t>(x.dim()),
              "[{}] for a {}-d input, output_size must have {} or {} elements: got {}", kOp,
              x.dim(), n, x.dim(), shape_str(output_size));
  Shape pad, lo, hi;
  for (size_t d = 0; d < n; ++d) {
    const int64_t in = x.size(x.dim() - static_cast<int64_t>(n - d));
    const int64_t smallest =
        (in - 1) * stride[d] - 2 * padding[d] + dilation[d] * (kernel_size[d] - 1) + 1;
    lo.push_back(smallest);
    hi.push_back(smallest + stride[d] - 1);
    pad.push_back(output_size[lead + d] - smallest);
  }
  for (size_t d = 0; d < n; ++d) {
    EMBER_CHECK(pad[d] >= 0 && output_size[lead + d] <= hi[d],
                "[{}] requested an output size of {}, but valid sizes range from {} to {} (for "
                "an input of shape {})",
                kOp, shape_str(output_size), shape_str(lo), shape_str(hi), shape_str(x.sizes()));
  }
  return pad;
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride,
                        IntList padding, IntList output_padding, int64_t groups, IntList dilation) {
  EMBER_AUTOCAST(Lower, conv_transpose2d, x, x, weight, bias, stride, padding, output_padding,
                 groups, dilation);
  constexpr const char* kOp = "conv_transpose2d";
  check_tensors(kOp, x, weight, bias);
  const ConvParams p = make_params(kOp, stride, padding, dilation, groups);
  const auto op = pair_of(output_padding, kOp, "output_padding");
  EMBER_CHECK(
      op[0] >= 0 && op[1] >= 0 && op[0] < std::max(p.sh, p.dh) && op[1] < std::max(p.sw, p.dw),
      "[conv_transpose2d] output_padding must be >= 0 and smaller than stride or "
      "dilation: got output_padding ({}, {}), stride ({}, {}), dilation ({}, {})",
      op[0], op[1], p.sh, p.sw, p.dh, p.dw);
  const bool batched = x.dim() == 4;
  const Tensor x4 = batched ? x : x.unsqueeze(0);
  const int64_t c = x4.size(1), o = fit_int64(WideInt(weight.size(1)) * groups, kOp,
                                              "out channels (weight size(1) x groups)");
  EMBER_CHECK(weight.size(0) % groups == 0,
              "[conv_transpose2d] weight's in channels must be divisible by groups: {} in "
              "channels, groups {} (weight shape {})",
              weight.size(0), groups, shape_str(weight.sizes()));
  EMBER_CHECK(c == weight.size(0),
              "[conv_transpose2d] expected input with {} channels (weight's size(0)): got {} "
              "channels (input shape {}, weight shape {})",
              weight.size(0), c, shape_str(x.sizes()), shape_str(weight.sizes()));
  check_bias(kOp, bias, o);
  const WideInt oh_wide = WideInt(x4.size(2) - 1) * p.sh - 2 * WideInt(p.ph) +
                          WideInt(p.dh) * (weight.size(2) - 1) + op[0] + 1;
  const WideInt ow_wide = WideInt(x4.size(3) - 1) * p.sw - 2 * WideInt(p.pw) +
                          WideInt(p.dw) * (weight.size(3) - 1) + op[1] + 1;
  EMBER_CHECK(oh_wide >= 1 && ow_wide >= 1,
              "[conv_transpose2d] computed output size is too small: input {}x{}, kernel {}x{}, "
              "stride ({}, {}), padding ({}, {}), dilation ({}, {}), output_padding ({}, {}) "
              "give output {}x{}",
              x4.size(2), x4.size(3), weight.size(2), weight.size(3), p.sh, p.sw, p.ph, p.pw, p.dh,
              p.dw, op[0], op[1], oh_wide, ow_wide);
  const int64_t oh = fit_int64(oh_wide, kOp, "output height");
  const int64_t ow = fit_int64(ow_wide, kOp, "output width");
  check_extents(kOp, oh, ow, weight, p);
  Tensor y = conv_input(x4, weight, p, oh, ow);
  if (bias.defined()) y = add(y, bias.view({1, o, 1, 1}));
  return batched ? y : y.squeeze(0);
}

// Note [unfold and fold through one index]
// unfold (im2col) copies tap (a, e) of block (i, j) of every plane into a column; fold (col2im)
// sums the columns back onto the planes. Over a plane zero-padded to [Hp, Wp] that tap is the
// flat position (i sh + a dh) Wp + (j sw + e dw), the same in every plane. So one int64 index
// [kH kW L] makes unfold a gather from the padded planes [N C, Hp Wp] and fold a scatter_add into
// zeros of that shape, then a crop of the padding. gather and scatter_add are each other's
// backward, so unfold and fold are each other's adjoint, differentiable to any order, on every
// backend, without a kernel of their own.
namespace {

/** The geometry of unfold and fold: per spatial dim the kernel, dilation, padding, stride, the
 *  image size and the number of blocks. */
struct Blocks {
  std::array<int64_t, 2> k{}, d{}, p{}, s{}, in{}, out{};
  int64_t padded(int i) const { return in[i] + 2 * p[i]; }
  int64_t taps() const { return k[0] * k[1]; }
  int64_t count() const { return out[0] * out[1]; }
};

Blocks make_blocks(const char* op, std::array<int64_t, 2> image, IntList kernel_size,
                   IntList dilation, IntList padding, IntList stride) {
  Blocks b;
  b.k = pair_of(kernel_size, op, "kernel_size");
  b.d = pair_of(dilation, op, "dilation");
  b.p = pair_of(padding, op, "padding");
  b.s = pair_of(stride, op, "stride");
  b.in = image;
  EMBER_CHECK(b.k[0] >= 1 && b.k[1] >= 1, "[{}] kernel_size must be >= 1: got ({}, {})", op, b.k[0],
              b.k[1]);
  EMBER_CHECK(b.d[0] >= 1 && b.d[1] >= 1, "[{}] dilation must be >= 1: got ({}, {})", op, b.d[0],
              b.d[1]);
  EMBER_CHECK(b.p[0] >= 0 && b.p[1] >= 0, "[{}] padding must be >= 0: got ({}, {})", op, b.p[0],
              b.p[1]);
  EMBER_CHECK(b.s[0] >= 1 && b.s[1] >= 1, "[{}] stride must be >= 1: got ({}, {})", op, b.s[0],
              b.s[1]);
  std::array<WideInt, 2> span{}, padded{};
  for (int i = 0; i < 2; ++i) {
    padded[i] = WideInt(b.in[i]) + 2 * WideInt(b.p[i]);
    span[i] = WideInt(b.d[i]) * (b.k[i] - 1) + 1;
  }
  EMBER_CHECK(b.in[0] >= 1 && b.in[1] >= 1 && padded[0] >= span[0] && padded[1] >= span[1],
              "[{}] no sliding block fits: spatial size ({}, {}) padded to ({}, {}), kernel_size "
              "({}, {}) dilated to ({}, {}) (the blocks must number at least one per dim)",
              op, b.in[0], b.in[1], padded[0], padded[1], b.k[0], b.k[1], span[0], span[1]);
  for (int i = 0; i < 2; ++i) {
    fit_int64(padded[i], op, i == 0 ? "padded height" : "padded width");
    b.out[i] = static_cast<int64_t>((padded[i] - span[i]) / b.s[i] + 1);
  }
  fit_int64(WideInt(b.padded(0)) * b.padded(1), op, "padded plane");
  fit_int64(WideInt(b.taps()) * b.count(), op, "taps times blocks");
  return b;
}

// The flat position in the padded plane of every (tap, block), [kH kW L], on `device`.
Tensor block_index(const Blocks& b, Device device) {
  Tensor idx = empty({b.taps() * b.count()}, {DType::Int64, Device::cpu()});
  int64_t* p = idx.data_ptr<int64_t>();
  const int64_t wp = b.padded(1);
  for (int64_t a = 0; a < b.k[0]; ++a) {
    for (int64_t e = 0; e < b.k[1]; ++e) {
      for (int64_t i = 0; i < b.out[0]; ++i) {
        for (int64_t j = 0; j < b.out[1]; ++j) {
          *p++ = (i * b.s[0] + a * b.d[0]) * wp + j * b.s[1] + e * b.d[1];
        }
      }
    }
  }
  return idx.to(device);
}

void check_blocks_input(const char* op, const Tensor& t, int64_t unbatched_dim, const char* shape) {
  EMBER_CHECK_TYPE(t.defined(), "[{}] undefined tensor argument", op);
  EMBER_CHECK(t.dim() == unbatched_dim || t.dim() == unbatched_dim + 1,
              "[{}] expected a {}-d or {}-d (batched) input {}: got shape {}", op, unbatched_dim,
              unbatched_dim + 1, shape, shape_str(t.sizes()));
  EMBER_CHECK_TYPE(is_floating(t.dtype()),
                   "[{}] expected a floating input: got {} (convert with .to(ember::f32))", op,
                   t.dtype());
}

}  // namespace

Tensor unfold(const Tensor& x, IntList kernel_size, IntList dilation, IntList padding,
              IntList stride) {
  constexpr const char* kOp = "unfold";
  check_blocks_input(kOp, x, 3, "[N, C, H, W]");
  const bool batched = x.dim() == 4;
  const Tensor x4 = batched ? x : x.unsqueeze(0);
  EMBER_CHECK(x4.size(1) >= 1, "[unfold] expected at least one channel: got shape {}",
              shape_str(x.sizes()));
  const Blocks b =
      make_blocks(kOp, {x4.size(2), x4.size(3)}, kernel_size, dilation, padding, stride);
  const int64_t n = x4.size(0), c = x4.size(1);
  const int64_t pads[4] = {b.p[1], b.p[1], b.p[0], b.p[0]};
  const Tensor xp = b.p[0] > 0 || b.p[1] > 0 ? pad(x4, IntList(pads, 4)) : x4;
  const int64_t planes = n * c, per_plane = b.taps() * b.count();
  const Tensor idx = block_index(b, x.device()).view({1, per_plane}).expand({planes, per_plane});
  const Tensor cols = gather(xp.reshape({planes, b.padded(0) * b.padded(1)}), 1, idx)
                          .view({n, c * b.taps(), b.count()});
  return batched ? cols : cols.squeeze(0);
}

Tensor fold(const Tensor& cols, IntList output_size, IntList kernel_size, IntList dilation,
            IntList padding, IntList stride) {
  constexpr const char* kOp = "fold";
  check_blocks_input(kOp, cols, 2, "[N, C kH kW, L]");
  const bool batched = cols.dim() == 3;
  const Tensor c3 = batched ? cols : cols.unsqueeze(0);
  const auto size = pair_of(output_size, kOp, "output_size");
  const Blocks b = make_blocks(kOp, size, kernel_size, dilation, padding, stride);
  EMBER_CHECK(c3.size(1) >= 1 && c3.size(1) % b.taps() == 0,
              "[fold] expected size(-2) of the input to be a positive multiple of the product of "
              "kernel_size ({} x {} = {}): got input of shape {}",
              b.k[0], b.k[1], b.taps(), shape_str(cols.sizes()));
  EMBER_CHECK(c3.size(2) == b.count(),
              "[fold] expected size(-1) of the input to be the number of sliding blocks, {} x {} "
              "= {} for output_size ({}, {}), kernel_size ({}, {}), dilation ({}, {}), padding "
              "({}, {}), stride ({}, {}): got input of shape {}",
              b.out[0], b.out[1], b.count(), size[0], size[1], b.k[0], b.k[1], b.d[0], b.d[1],
              b.p[0], b.p[1], b.s[0], b.s[1], shape_str(cols.sizes()));
  const int64_t n = c3.size(0), c = c3.size(1) / b.taps();
  const int64_t planes = n * c, per_plane = b.taps() * b.count();
  const Tensor idx = block_index(b, cols.device()).view({1, per_plane}).expand({planes, per_plane});
  const Tensor z = zeros({planes, b.padded(0) * b.padded(1)}, {cols.dtype(), cols.device()});
  Tensor y = scatter_add(z, 1, idx, c3.reshape({planes, per_plane}))
                 .view({n, c, b.padded(0), b.padded(1)});
  if (b.p[0] > 0 || b.p[1] > 0) {
    y = y.narrow(2, b.p[0], size[0]).narrow(3, b.p[1], size[1]).contiguous();
  }
  return batched ? y : y.squeeze(0);
}

}  // namespace ember
