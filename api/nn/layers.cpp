#include "ember/nn/layers.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ember/autograd/grad_mode.h"
#include "ember/nn/init.h"
#include "ember/ops/conv.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/nn.h"
#include "ember/ops/norm.h"
#include "ember/ops/pool.h"
#include "ember/ops/softmax.h"
#include "ember/util/error.h"

namespace ember::nn {
namespace {

Tensor empty(std::initializer_list<int64_t> sizes) {
  return empty(IntList(sizes));
}

std::string pair_str(Pair p) {
  return p.h == p.w ? fmt::format("{}", p.h) : fmt::format("({}, {})", p.h, p.w);
}

// A list of sizes as Python prints a tuple: "(4,)", "(2, 3)".
std::string tuple_str(const std::vector<int64_t>& v) {
  return fmt::format("({}{})", fmt::join(v, ", "), v.size() == 1 ? "," : "");
}

std::string triple_str(Triple t) {
  return t.d == t.h && t.h == t.w ? fmt::format("{}", t.d)
                                  : fmt::format("({}, {}, {})", t.d, t.h, t.w);
}

void check_positive(const char* module, const char* what, int64_t v) {
  EMBER_CHECK(v > 0, "[nn.{}] {} must be positive: got {}", module, what, v);
}

// Note [Lazy layers]
// PyTorch's LazyLinear and LazyConv1d/2d/3d. A layer made with kLazy is first made as usual with
// a stand-in input size (the groups), then has its input size set to 0, its weight replaced by
// an empty placeholder of the same rank (size 0 in dim 1), its bias zeroed, and its type named
// "Lazy<Name>". Its first forward (or initialize_parameters) reads the input size from that input
// (a Linear's last dim, a convolution's channel dim), sizes the weight in place (set_data: the
// parameter stays the same tensor, so handles to it keep it, as PyTorch's UninitializedParameter
// becomes a Parameter in place), initialises weight and bias as reset_parameters does and renames
// the type "<Name>", as PyTorch's lazy module becomes its cls_to_become (the Python Lazy* classes
// also become the bound class then: ember/nn/_lazy.py). A weight that already has its size (a
// state restored into a copied or unpickled lazy layer) is kept, its size read from it.

/** Makes a layer just made with a stand-in input size lazy (Note [Lazy layers]). */
void make_lazy_layer(Module& layer, int64_t& in, Tensor& weight, Tensor& bias) {
  autograd::NoGradGuard no_grad;
  in = 0;
  Shape placeholder = weight.sizes();
  placeholder[1] = 0;
  weight.set_data(empty(placeholder, TensorOptions(weight.dtype(), weight.device())));
  if (bias.defined()) bias.zero_();
  layer.set_type_name("Lazy" + layer.type_name());
}

/** Gives a lazy layer its input size `in`, read from dim `dim` of `x` (counted from the end), or
 *  from a weight restored with its size, which is then kept; a weight sized here is initialised
 *  by `reset` (Note [Lazy layers]). `name` is the layer's type once it has its size. */
template <class Reset>
void size_lazy_layer(Module& layer, int64_t& in, Tensor& weight, const Tensor& x, int64_t dim,
                     int64_t groups, const char* name, Reset&& reset) {
  if (weight.size(1) > 0) {
    in = weight.size(1) * groups;
  } else {
    EMBER_CHECK(x.dim() >= dim,
                "[nn.{}] cannot read the input size from an input of shape {}: it needs at least "
                "{} dims",
                layer.type_name(), shape_str(x.sizes()), dim);
    const int64_t size = x.size(x.dim() - dim);
    EMBER_CHECK(size > 0 && size % groups == 0,
                "[nn.{}] the input size read from the input must be positive and divisible by "
                "groups={}: got {} (input shape {})",
                layer.type_name(), groups, size, shape_str(x.sizes()));
    {
      autograd::NoGradGuard no_grad;
      Shape sized = weight.sizes();
      sized[1] = size / groups;
      weight.set_data(empty(sized, TensorOptions(weight.dtype(), weight.device())));
    }
    in = size;
    reset();
  }
  bump_structure_version();
  layer.set_type_name(name);
}

// Note [Default initialisation of linear and convolution layers]
// PyTorch initialises the weight with kaiming_uniform_(a = sqrt(5)), which works out to
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the bias with the same bound. fan_in is computed
// from the weight as stored, so for ConvTranspose2d it is (out/groups) * kH * kW.
void reset_weight_and_bias(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

void check_groups(int64_t groups, int64_t channels) {
  check_positive("GroupNorm", "num_groups", groups);
  EMBER_CHECK(channels % groups == 0,
              "[nn.GroupNorm] num_channels={} must be divisible by num_groups={}", channels,
              groups);
}

}  // namespace

// Linear ----------------------------------------------------------------------------------------

Linear::Linear(int64_t in, int64_t out, bool with_bias)
    : Module("Linear"),
      in_features(in),
      out_features(out),
      weight(register_parameter("weight",
                                (check_positive("Linear", "in_features", in),
                                 check_positive("Linear", "out_features", out), empty({out, in})))),
      bias(register_parameter("bias", with_bias ? empty({out}) : Tensor())) {
  reset_parameters();
}

Linear::Linear(LazyInput, int64_t out, bool with_bias) : Linear(1, out, with_bias) {
  make_lazy_layer(*this, in_features, weight, bias);
}

void Linear::reset_parameters() {
  reset_weight_and_bias(weight, bias);
}

void Linear::initialize_parameters(const Tensor& x) {
  if (in_features != 0) return;
  size_lazy_layer(*this, in_features, weight, x, 1, 1, "Linear", [this] { reset_parameters(); });
}

Tensor Linear::forward(const Tensor& x) {
  if (in_features == 0) initialize_parameters(x);
  if (fused_activation_ == Activation::None) return linear(x, weight, bias);
  return fused_linear(x, weight, bias, fused_activation_);
}

std::string Linear::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", in_features, out_features,
                     bias.defined());
}

// Convolutions ----------------------------------------------------------------------------------

namespace {

void check_conv(const char* module, int64_t in, int64_t out, Pair k, const Conv2dOptions& o) {
  check_positive(module, "in_channels", in);
  check_positive(module, "out_channels", out);
  check_positive(module, "groups", o.groups);
  EMBER_CHECK(k.h > 0 && k.w > 0, "[nn.{}] kernel_size must be positive: got {}", module,
              pair_str(k));
  EMBER_CHECK(in % o.groups == 0 && out % o.groups == 0,
              "[nn.{}] in_channels={} and out_channels={} must be divisible by groups={}", module,
              in, out, o.groups);
}

constexpr const char* kPadModes[] = {"zeros", "constant", "reflect", "replicate", "circular"};

// Note [Padding in convolution layers]
// A convolution layer pads as PyTorch's do. Zeros, as many on both sides, are the convolution's
// own padding; 'same' splits each kernel span as Note [Padding 'same'] in core/ops/conv.cpp says
// (the extra zero after, where uneven); reflect, replicate and circular pad the input with pad()
// by the amounts on each side ('same''s split, or `padding`), and the convolution adds none. One
// function does this for Conv1d, Conv2d and Conv3d; the checks run when the layer is made, so a
// bad combination never reaches a forward.
struct ConvInput {
  Tensor x;       // what the convolution reads
  Shape padding;  // the zeros the convolution adds on both sides of each spatial dim
};

/** The geometry of a convolution layer over its spatial dims, for conv_input. */
struct ConvGeometry {
  Shape kernel, stride, dilation, padding;
  std::optional<ConvPadding> named;
  PadKind mode = PadKind::Zero;
};

/** Checks what a layer's padding options allow (at construction). */
void check_conv_padding(const char* module, const ConvGeometry& g) {
  EMBER_CHECK(g.mode != PadKind::Constant,
              "[nn.{}] padding_mode must be zeros, reflect, replicate or circular: got constant",
              module);
  for (int64_t p : g.padding)
    EMBER_CHECK(p >= 0, "[nn.{}] padding must be >= 0: got {}", module, shape_str(g.padding));
  if (g.named == ConvPadding::Same) (void)same_padding(g.kernel, g.stride, g.dilation, module);
}

ConvInput conv_input(const Tensor& x, const ConvGeometry& g, const char* module) {
  const size_t n = g.kernel.size();
  if (g.named == ConvPadding::Valid) return {x, Shape(n, 0)};
  Shape before = g.padding, after = g.padding;
  if (g.named == ConvPadding::Same)
    std::tie(before, after) = same_padding(g.kernel, g.stride, g.dilation, module);
  const bool zeros = g.mode == PadKind::Zero;
  if (zeros && before == after) return {x, before};
  Shape sides;  // pad()'s order: the last dim first
  for (size_t i = n; i-- > 0;) {
    sides.push_back(zeros ? 0 : before[i]);
    sides.push_back(zeros ? after[i] - before[i] : after[i]);
  }
  const char* mode = zeros ? "constant" : kPadModes[static_cast<int>(g.mode)];
  return {pad(x, sides, mode), zeros ? before : Shape(n, 0)};
}

/** ", padding=..." of a convolution layer's repr (`numbers` the explicit padding as PyTorch
 *  prints it, empty when all zero). */
std::string padding_repr(const std::optional<ConvPadding>& named, const std::string& numbers) {
  std::string s;
  if (named) {
    s += *named == ConvPadding::Same ? ", padding=same" : ", padding=valid";
  } else if (!numbers.empty()) {
    s += ", padding=" + numbers;
  }
  return s;
}

/** ", padding_mode=..." of a convolution layer's repr (empty for zeros), last as PyTorch's. */
std::string padding_mode_repr(PadKind mode) {
  return mode == PadKind::Zero
             ? ""
             : fmt::format(", padding_mode={}", kPadModes[static_cast<int>(mode)]);
}

ConvGeometry geometry(Pair k, const Conv2dOptions& o) {
  return {{k.h, k.w},
          {o.stride.h, o.stride.w},
          {o.dilation.h, o.dilation.w},
          {o.padding.h, o.padding.w},
          o.named_padding,
          o.padding_mode};
}

/** ConvTranspose2d pads with zeros, by numbers (as PyTorch's). */
void check_transposed_padding(const char* layer, PadKind padding_mode,
                              const std::optional<ConvPadding>& named_padding) {
  EMBER_CHECK(padding_mode == PadKind::Zero, "[nn.{}] only padding_mode zeros is supported: got {}",
              layer, kPadModes[static_cast<int>(padding_mode)]);
  EMBER_CHECK(!named_padding,
              "[nn.{}] padding must be numbers: 'same' and 'valid' are for convolutions", layer);
}

ConvGeometry geometry1d(int64_t k, const Conv1dOptions& o) {
  return {{k}, {o.stride}, {o.dilation}, {o.padding}, o.named_padding, o.padding_mode};
}

ConvGeometry geometry3d(Triple k, const Conv3dOptions& o) {
  return {{k.d, k.h, k.w},
          {o.stride.d, o.stride.h, o.stride.w},
          {o.dilation.d, o.dilation.h, o.dilation.w},
          {o.padding.d, o.padding.h, o.padding.w},
          o.named_padding,
          o.padding_mode};
}

/** A convolution's per-dim sizes as PyTorch's reprs show them: always a tuple. */
std::string conv_dims_str(Pair p) {
  return fmt::format("({}, {})", p.h, p.w);
}
std::string conv_dims_str(Triple t) {
  return fmt::format("({}, {}, {})", t.d, t.h, t.w);
}

std::string conv_repr(int64_t in, int64_t out, Pair k, const Conv2dOptions& o, bool transposed,
                      bool has_bias) {
  std::string s = fmt::format("{}, {}, kernel_size={}, stride={}", in, out, conv_dims_str(k),
                              conv_dims_str(o.stride));
  s += padding_repr(o.named_padding, o.padding.h || o.padding.w ? conv_dims_str(o.padding) : "");
  if (transposed && (o.output_padding.h || o.output_padding.w)) {
    s += ", output_padding=" + conv_dims_str(o.output_padding);
  }
  if (o.dilation.h != 1 || o.dilation.w != 1) s += ", dilation=" + conv_dims_str(o.dilation);
  if (o.groups != 1) s += fmt::format(", groups={}", o.groups);
  if (!has_bias) s += ", bias=false";
  s += padding_mode_repr(o.padding_mode);
  return s;
}

}  // namespace

Conv2d::Conv2d(int64_t in, int64_t out, Pair k, Conv2dOptions o)
    : Module("Conv2d"),
      in_channels(in),
      out_channels(out),
      kernel_size(k),
      options(o),
      weight(register_parameter("weight", (check_conv("Conv2d", in, out, k, o),
                                           check_conv_padding("Conv2d", geometry(k, o)),
                                           empty({out, in / o.groups, k.h, k.w})))),
      bias(register_parameter("bias", o.bias ? empty({out}) : Tensor())) {
  reset_parameters();
}

Conv2d::Conv2d(LazyInput, int64_t out, Pair k, Conv2dOptions o) : Conv2d(o.groups, out, k, o) {
  make_lazy_layer(*this, in_channels, weight, bias);
}

void Conv2d::reset_parameters() {
  reset_weight_and_bias(weight, bias);
}

void Conv2d::initialize_parameters(const Tensor& x) {
  if (in_channels != 0) return;
  size_lazy_layer(*this, in_channels, weight, x, 3, options.groups, "Conv2d",
                  [this] { reset_parameters(); });
}

Tensor Conv2d::forward(const Tensor& x) {
  if (in_channels == 0) initialize_parameters(x);
  const Conv2dOptions& o = options;
  const ConvInput in = conv_input(x, geometry(kernel_size, o), "Conv2d");
  const auto op = fused_relu_ ? conv2d_relu
                              : static_cast<Tensor (*)(const Tensor&, const Tensor&, const Tensor&,
                                                       IntList, IntList, IntList, int64_t)>(conv2d);
  return op(in.x, weight, bias, {o.stride.h, o.stride.w}, in.padding, {o.dilation.h, o.dilation.w},
            o.groups);
}

Tensor Conv2d::forward_add_relu(const Tensor& x, const Tensor& residual) {
  const Conv2dOptions& o = options;
  const ConvInput in = conv_input(x, geometry(kernel_size, o), "Conv2d");
  return conv2d_add_relu(in.x, weight, residual, bias, {o.stride.h, o.stride.w}, in.padding,
                         {o.dilation.h, o.dilation.w}, o.groups);
}

std::string Conv2d::extra_repr() const {
  return conv_repr(in_channels, out_channels, kernel_size, options, false, bias.defined());
}

Conv1d::Conv1d(int64_t in, int64_t out, int64_t k, Conv1dOptions o)
    : Module("Conv1d"),
      in_channels(in),
      out_channels(out),
      kernel_size(k),
      options(o),
      weight(register_parameter(
          "weight",
          (check_conv(
               "Conv1d", in, out, Pair(1, k),
               {.stride = Pair(1, o.stride), .dilation = Pair(1, o.dilation), .groups = o.groups}),
           check_conv_padding("Conv1d", geometry1d(k, o)), empty({out, in / o.groups, k})))),
      bias(register_parameter("bias", o.bias ? empty({out}) : Tensor())) {
  reset_parameters();
}

Conv1d::Conv1d(LazyInput, int64_t out, int64_t k, Conv1dOptions o) : Conv1d(o.groups, out, k, o) {
  make_lazy_layer(*this, in_channels, weight, bias);
}

void Conv1d::reset_parameters() {
  reset_weight_and_bias(weight, bias);
}

void Conv1d::initialize_parameters(const Tensor& x) {
  if (in_channels != 0) return;
  size_lazy_layer(*this, in_channels, weight, x, 2, options.groups, "Conv1d",
                  [this] { reset_parameters(); });
}

Tensor Conv1d::forward(const Tensor& x) {
  if (in_channels == 0) initialize_parameters(x);
  const Conv1dOptions& o = options;
  const ConvInput in = conv_input(x, geometry1d(kernel_size, o), "Conv1d");
  return conv1d(in.x, weight, bias, o.stride, in.padding[0], o.dilation, o.groups);
}

std::string Conv1d::extra_repr() const {
  std::string s = fmt::format("{}, {}, kernel_size=({},), stride=({},)", in_channels, out_channels,
                              kernel_size, options.stride);
  s += padding_repr(options.named_padding,
                    options.padding ? fmt::format("({},)", options.padding) : "");
  if (options.dilation != 1) s += fmt::format(", dilation=({},)", options.dilation);
  if (options.groups != 1) s += fmt::format(", groups={}", options.groups);
  if (!bias.defined()) s += ", bias=false";
  s += padding_mode_repr(options.padding_mode);
  return s;
}

Conv3d::Conv3d(int64_t in, int64_t out, Triple k, Conv3dOptions o)
    : Module("Conv3d"),
      in_channels(in),
      out_channels(out),
      kernel_size(k),
      options(o),
      weight(register_parameter(
          "weight", (check_conv("Conv3d", in, out, Pair(k.h, k.w), {.groups = o.groups}),
                     check_positive("Conv3d", "kernel_size", k.d),
                     check_conv_padding("Conv3d", geometry3d(k, o)),
                     empty({out, in / o.groups, k.d, k.h, k.w})))),
      bias(register_parameter("bias", o.bias ? empty({out}) : Tensor())) {
  reset_parameters();
}

Conv3d::Conv3d(LazyInput, int64_t out, Triple k, Conv3dOptions o) : Conv3d(o.groups, out, k, o) {
  make_lazy_layer(*this, in_channels, weight, bias);
}

void Conv3d::reset_parameters() {
  reset_weight_and_bias(weight, bias);
}

void Conv3d::initialize_parameters(const Tensor& x) {
  if (in_channels != 0) return;
  size_lazy_layer(*this, in_channels, weight, x, 4, options.groups, "Conv3d",
                  [this] { reset_parameters(); });
}

Tensor Conv3d::forward(const Tensor& x) {
  if (in_channels == 0) initialize_parameters(x);
  const Conv3dOptions& o = options;
  const ConvInput in = conv_input(x, geometry3d(kernel_size, o), "Conv3d");
  return conv3d(in.x, weight, bias, {o.stride.d, o.stride.h, o.stride.w}, in.padding,
                {o.dilation.d, o.dilation.h, o.dilation.w}, o.groups);
}

std::string Conv3d::extra_repr() const {
  const Conv3dOptions& o = options;
  std::string s = fmt::format("{}, {}, kernel_size={}, stride={}", in_channels, out_channels,
                              conv_dims_str(kernel_size), conv_dims_str(o.stride));
  s += padding_repr(o.named_padding,
                    o.padding.d || o.padding.h || o.padding.w ? conv_dims_str(o.padding) : "");
  if (o.dilation.d != 1 || o.dilation.h != 1 || o.dilation.w != 1) {
    s += ", dilation=" + conv_dims_str(o.dilation);
  }
  if (o.groups != 1) s += fmt::format(", groups={}", o.groups);
  if (!bias.defined()) s += ", bias=false";
  s += padding_mode_repr(o.padding_mode);
  return s;
}

ConvTranspose2d::ConvTranspose2d(int64_t in, int64_t out, Pair k, Conv2dOptions o)
    : Module("ConvTranspose2d"),
      in_channels(in),
      out_channels(out),
      kernel_size(k),
      options(o),
      weight(register_parameter(
          "weight", (check_conv("ConvTranspose2d", in, out, k, o),
                     check_transposed_padding("ConvTranspose2d", o.padding_mode, o.named_padding),
                     empty({in, out / o.groups, k.h, k.w})))),
      bias(register_parameter("bias", o.bias ? empty({out}) : Tensor())) {
  reset_parameters();
}

void ConvTranspose2d::reset_parameters() {
  reset_weight_and_bias(weight, bias);
}

Tensor ConvTranspose2d::forward(const Tensor& x) {
  const Conv2dOptions& o = options;
  return conv_transpose2d(x, weight, bias, {o.stride.h, o.stride.w}, {o.padding.h, o.padding.w},
                          {o.output_padding.h, o.output_padding.w}, o.groups,
                          {o.dilation.h, o.dilation.w});
}

Tensor ConvTranspose2d::forward(const Tensor& x, IntList output_size) {
  const Conv2dOptions& o = options;
  const Shape pad = conv_transpose_output_padding(
      x, output_size, {kernel_size.h, kernel_size.w}, {o.stride.h, o.stride.w},
      {o.padding.h, o.padding.w}, {o.dilation.h, o.dilation.w});
  return conv_transpose2d(x, weight, bias, {o.stride.h, o.stride.w}, {o.padding.h, o.padding.w},
                          pad, o.groups, {o.dilation.h, o.dilation.w});
}

ConvTranspose1d::ConvTranspose1d(int64_t in, int64_t out, int64_t k, Conv1dOptions o)
    : Module("ConvTranspose1d"),
      in_channels(in),
      out_channels(out),
      kernel_size(k),
      options(o),
      weight(register_parameter(
          "weight", (check_conv("ConvTranspose1d", in, out, Pair(1, k), {.groups = o.groups}),
                     check_transposed_padding("ConvTranspose1d", o.padding_mode, o.named_padding),
                     empty({in, out / o.groups, k})))),
      bias(register_parameter("bias", o.bias ? empty({out}) : Tensor())) {
  reset_parameters();
}

void ConvTranspose1d::reset_parameters() {
  reset_weight_and_bias(weight, bias);
}

Tensor ConvTranspose1d::forward(const Tensor& x) {
  const Conv1dOptions& o = options;
  return conv_transpose1d(x, weight, bias, o.stride, o.padding, o.output_padding, o.groups,
                          o.dilation);
}

Tensor ConvTranspose1d::forward(const Tensor& x, IntList output_size) {
  const Conv1dOptions& o = options;
  const Shape pad = conv_transpose_output_padding(x, output_size, {kernel_size}, {o.stride},
                                                  {o.padding}, {o.dilation});
  return conv_transpose1d(x, weight, bias, o.stride, o.padding, pad[0], o.groups, o.dilation);
}

ConvTranspose3d::ConvTranspose3d(int64_t in, int64_t out, Triple k, Conv3dOptions o)
    : Module("ConvTranspose3d"),
      in_channels(in),
      out_channels(out),
      kernel_size(k),
      options(o),
      weight(register_parameter(
          "weight", (check_conv("ConvTranspose3d", in, out, Pair(k.h, k.w), {.groups = o.groups}),
                     check_positive("ConvTranspose3d", "kernel_size", k.d),
                     check_transposed_padding("ConvTranspose3d", o.padding_mode, o.named_padding),
                     empty({in, out / o.groups, k.d, k.h, k.w})))),
      bias(register_parameter("bias", o.bias ? empty({out}) : Tensor())) {
  reset_parameters();
}

void ConvTranspose3d::reset_parameters() {
  reset_weight_and_bias(weight, bias);
}

Tensor ConvTranspose3d::forward(const Tensor& x) {
  const Conv3dOptions& o = options;
  const Triple& op = o.output_padding;
  return conv_transpose3d(x, weight, bias, {o.stride.d, o.stride.h, o.stride.w},
                          {o.padding.d, o.padding.h, o.padding.w}, {op.d, op.h, op.w}, o.groups,
                          {o.dilation.d, o.dilation.h, o.dilation.w});
}

Tensor ConvTranspose3d::forward(const Tensor& x, IntList output_size) {
  const Conv3dOptions& o = options;
  const Shape s{o.stride.d, o.stride.h, o.stride.w}, p{o.padding.d, o.padding.h, o.padding.w},
      d{o.dilation.d, o.dilation.h, o.dilation.w};
  const Shape pad = conv_transpose_output_padding(
      x, output_size, {kernel_size.d, kernel_size.h, kernel_size.w}, s, p, d);
  return conv_transpose3d(x, weight, bias, s, p, pad, o.groups, d);
}

std::string ConvTranspose3d::extra_repr() const {
  const Conv3dOptions& o = options;
  const auto t = [](const Triple& v) { return fmt::format("({}, {}, {})", v.d, v.h, v.w); };
  std::string s = fmt::format("{}, {}, kernel_size={}, stride={}", in_channels, out_channels,
                              t(kernel_size), t(o.stride));
  if (o.padding != Triple(0)) s += ", padding=" + t(o.padding);
  if (o.dilation != Triple(1)) s += ", dilation=" + t(o.dilation);
  if (o.output_padding != Triple(0)) s += ", output_padding=" + t(o.output_padding);
  if (o.groups != 1) s += fmt::format(", groups={}", o.groups);
  if (!bias.defined()) s += ", bias=false";
  return s;
}

std::string ConvTranspose1d::extra_repr() const {
  std::string s = fmt::format("{}, {}, kernel_size=({},), stride=({},)", in_channels, out_channels,
                              kernel_size, options.stride);
  if (options.padding) s += fmt::format(", padding=({},)", options.padding);
  if (options.dilation != 1) s += fmt::format(", dilation=({},)", options.dilation);
  if (options.output_padding) s += fmt::format(", output_padding=({},)", options.output_padding);
  if (options.groups != 1) s += fmt::format(", groups={}", options.groups);
  if (!bias.defined()) s += ", bias=false";
  return s;
}

std::string ConvTranspose2d::extra_repr() const {
  return conv_repr(in_channels, out_channels, kernel_size, options, true, bias.defined());
}

// Normalisation ---------------------------------------------------------------------------------

NormBase::NormBase(std::string type_name, int64_t c, BatchNormOptions o)
    : Module(std::move(type_name)),
      num_features(c),
      options(o),
      weight(register_parameter("weight",
                                (check_positive(this->type_name().c_str(), "num_features", c),
                                 o.affine ? ones({c}) : Tensor()))),
      bias(register_parameter("bias", o.affine && o.bias ? zeros({c}) : Tensor())),
      running_mean(register_buffer("running_mean", o.track_running_stats ? zeros({c}) : Tensor())),
      running_var(register_buffer("running_var", o.track_running_stats ? ones({c}) : Tensor())),
      num_batches_tracked(register_buffer(
          "num_batches_tracked", o.track_running_stats ? zeros({}, DType::Int64) : Tensor())) {}

double NormBase::step_momentum() {
  if (!is_training() || !num_batches_tracked.defined()) return options.momentum.value_or(0.0);
  {
    autograd::NoGradGuard no_grad;
    add_(num_batches_tracked, 1);
  }
  return options.momentum ? *options.momentum
                          : 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
}

std::string NormBase::extra_repr() const {
  // As PyTorch prints them; bias is whether the module has one.
  return fmt::format("{}, eps={}, momentum={}, affine={}, bias={}, track_running_stats={}",
                     num_features, options.eps,
                     options.momentum ? fmt::format("{}", *options.momentum) : "None",
                     options.affine, bias.defined(), options.track_running_stats);
}

BatchNorm::BatchNorm(std::string type_name, std::vector<int64_t> ranks, int64_t c,
                     BatchNormOptions o)
    : NormBase(std::move(type_name), c, o), ranks_(std::move(ranks)) {}

Tensor BatchNorm::forward(const Tensor& x) {
  EMBER_CHECK(x.defined() && std::find(ranks_.begin(), ranks_.end(), x.dim()) != ranks_.end(),
              "[nn.{}] expected a {}-d input: got {}-d input of shape {}", type_name(),
              fmt::join(ranks_, "-d or "), x.defined() ? x.dim() : 0,
              x.defined() ? shape_str(x.sizes()) : std::string("undefined"));
  if (folded()) {  // Note [Folding batch norm for inference] in api/nn/fuse.cpp
    EMBER_CHECK(!is_training(),
                "[nn.{}] this batch norm was folded into the layer before it by "
                "fuse_for_inference, so the model is for inference only (call eval())",
                type_name());
    return x;
  }
  // As in PyTorch: without running statistics, eval also normalises with the batch's own.
  const bool use_batch_stats = is_training() || !running_mean.defined();
  const double momentum = step_momentum();
  return batch_norm(x, weight, bias, running_mean, running_var, use_batch_stats, momentum,
                    options.eps);
}

InstanceNorm::InstanceNorm(std::string type_name, int64_t spatial_dims, int64_t c,
                           BatchNormOptions o)
    : NormBase(std::move(type_name), c, o), spatial_dims_(spatial_dims) {}

Tensor InstanceNorm::forward(const Tensor& x) {
  const int64_t batched = spatial_dims_ + 2;
  EMBER_CHECK(x.defined() && (x.dim() == batched || x.dim() == batched - 1),
              "[nn.{}] expected a {}-d or {}-d (unbatched) input: got {}-d input of shape {}",
              type_name(), batched, batched - 1, x.defined() ? x.dim() : 0,
              x.defined() ? shape_str(x.sizes()) : std::string("undefined"));
  const bool unbatched = x.dim() == batched - 1;
  const Tensor xb = unbatched ? x.unsqueeze(0) : x;
  EMBER_CHECK(!(weight.defined() || running_mean.defined()) || xb.size(1) == num_features,
              "[nn.{}] expected input's size at dim {} to match num_features ({}): got input of "
              "shape {}",
              type_name(), unbatched ? 0 : 1, num_features, shape_str(x.sizes()));
  // As PyTorch: the input's own statistics unless evaluating with running statistics.
  const bool use_input_stats = is_training() || !running_mean.defined();
  const double momentum = step_momentum();
  const Tensor y = instance_norm(xb, weight, bias, running_mean, running_var, use_input_stats,
                                 momentum, options.eps);
  return unbatched ? y.squeeze(0) : y;
}

RMSNorm::RMSNorm(std::vector<int64_t> shape, std::optional<double> eps_, bool affine)
    : Module("RMSNorm"),
      normalized_shape(std::move(shape)),
      eps(eps_),
      weight(register_parameter("weight", affine ? ones(normalized_shape) : Tensor())) {}

Tensor RMSNorm::forward(const Tensor& x) {
  return rms_norm(x, normalized_shape, weight, eps);
}

std::string RMSNorm::extra_repr() const {
  return fmt::format("{}, eps={}, elementwise_affine={}", tuple_str(normalized_shape),
                     eps ? fmt::format("{}", *eps) : "None", weight.defined());
}

LayerNorm::LayerNorm(std::vector<int64_t> shape, double eps_, bool affine, bool with_bias)
    : Module("LayerNorm"),
      normalized_shape(std::move(shape)),
      eps(eps_),
      weight(register_parameter("weight", affine ? ones(normalized_shape) : Tensor())),
      bias(register_parameter("bias", affine && with_bias ? zeros(normalized_shape) : Tensor())) {}

Tensor LayerNorm::forward(const Tensor& x) {
  return layer_norm(x, normalized_shape, weight, bias, eps);
}

std::string LayerNorm::extra_repr() const {
  return fmt::format("{}, eps={}, elementwise_affine={}, bias={}", tuple_str(normalized_shape), eps,
                     weight.defined(), bias.defined());
}

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps_, bool affine, bool with_bias)
    : Module("GroupNorm"),
      num_groups(groups),
      num_channels(channels),
      eps(eps_),
      weight(register_parameter(
          "weight", (check_groups(groups, channels), affine ? ones({channels}) : Tensor()))),
      bias(register_parameter("bias", affine && with_bias ? zeros({channels}) : Tensor())) {}

Tensor GroupNorm::forward(const Tensor& x) {
  return group_norm(x, num_groups, weight, bias, eps);
}

std::string GroupNorm::extra_repr() const {
  return fmt::format("{}, {}, eps={}, affine={}, bias={}", num_groups, num_channels, eps,
                     weight.defined(), bias.defined());
}

// Dropout and embedding -------------------------------------------------------------------------

Bilinear::Bilinear(int64_t in1, int64_t in2, int64_t out, bool with_bias)
    : Module("Bilinear"),
      in1_features(in1),
      in2_features(in2),
      out_features(out),
      weight(register_parameter(
          "weight", (check_positive("Bilinear", "in1_features", in1),
                     check_positive("Bilinear", "in2_features", in2),
                     check_positive("Bilinear", "out_features", out), empty({out, in1, in2})))),
      bias(register_parameter("bias", with_bias ? empty({out}) : Tensor())) {
  reset_parameters();
}

void Bilinear::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(in1_features));
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor Bilinear::forward(const Tensor& x1, const Tensor& x2) {
  return bilinear(x1, x2, weight, bias);
}

std::string Bilinear::extra_repr() const {
  return fmt::format("in1_features={}, in2_features={}, out_features={}, bias={}", in1_features,
                     in2_features, out_features, bias.defined());
}

Dropout::Dropout(double p_) : Module("Dropout"), p(p_) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "[nn.Dropout] probability must be in [0, 1]: got {}", p);
}

Tensor Dropout::forward(const Tensor& x) {
  return dropout(x, p, is_training());
}

std::string Dropout::extra_repr() const {
  return fmt::format("p={}", p);
}

FeatureDropout::FeatureDropout(int64_t spatial_dims_, double p_)
    : Module(fmt::format("Dropout{}d", spatial_dims_)), p(p_), spatial_dims(spatial_dims_) {
  EMBER_CHECK(spatial_dims >= 1 && spatial_dims <= 3,
              "[nn.FeatureDropout] spatial_dims must be 1, 2 or 3: got {}", spatial_dims);
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "[nn.Dropout{}d] probability p must be in [0, 1]: got {}",
              spatial_dims, p);
}

Tensor FeatureDropout::forward(const Tensor& x) {
  return feature_dropout(x, p, spatial_dims, is_training());
}

std::string FeatureDropout::extra_repr() const {
  return fmt::format("p={}", p);
}

namespace {

// An embedding table [num, dim] for `module`: N(0, 1), its padding_idx row (checked, given in
// [-num, num)) zero.
Tensor embedding_table(const char* module, int64_t num, int64_t dim,
                       std::optional<int64_t> padding_idx) {
  check_positive(module, "num_embeddings", num);
  check_positive(module, "embedding_dim", dim);
  EMBER_CHECK_INDEX(!padding_idx || (*padding_idx >= -num && *padding_idx < num),
                    "[nn.{}] padding_idx={} out of range for {} embeddings", module, *padding_idx,
                    num);
  Tensor weight = empty({num, dim});
  init::normal_(weight);
  if (padding_idx) weight.select(0, *padding_idx < 0 ? *padding_idx + num : *padding_idx).zero_();
  return weight;
}

}  // namespace

Embedding::Embedding(int64_t num, int64_t dim, std::optional<int64_t> pad,
                     std::optional<double> max_norm_, double norm_type_, bool scale_grad_by_freq_)
    : Module("Embedding"),
      num_embeddings(num),
      embedding_dim(dim),
      padding_idx(pad && *pad < 0 ? *pad + num : pad),
      max_norm(max_norm_),
      norm_type(norm_type_),
      scale_grad_by_freq(scale_grad_by_freq_),
      weight(register_parameter("weight", embedding_table("Embedding", num, dim, pad))) {}

Tensor Embedding::forward(const Tensor& indices) {
  return embedding(weight, indices, padding_idx, max_norm, norm_type, scale_grad_by_freq);
}

std::string Embedding::extra_repr() const {
  std::string s = fmt::format("{}, {}", num_embeddings, embedding_dim);
  if (padding_idx) s += fmt::format(", padding_idx={}", *padding_idx);
  if (max_norm) s += fmt::format(", max_norm={}", *max_norm);
  if (max_norm && norm_type != 2.0) s += fmt::format(", norm_type={}", norm_type);
  if (scale_grad_by_freq) s += ", scale_grad_by_freq=True";
  return s;
}

LocalResponseNorm::LocalResponseNorm(int64_t size_, double alpha_, double beta_, double k_)
    : Module("LocalResponseNorm"), size(size_), alpha(alpha_), beta(beta_), k(k_) {}

Tensor LocalResponseNorm::forward(const Tensor& x) {
  return local_response_norm(x, size, alpha, beta, k);
}

std::string LocalResponseNorm::extra_repr() const {
  return fmt::format("{}, alpha={}, beta={}, k={}", size, alpha, beta, k);
}

EmbeddingBag::EmbeddingBag(int64_t num, int64_t dim, std::optional<double> max_norm_,
                           double norm_type_, std::string mode_, bool include_last_offset_,
                           std::optional<int64_t> pad)
    : Module("EmbeddingBag"),
      num_embeddings(num),
      embedding_dim(dim),
      max_norm(max_norm_),
      norm_type(norm_type_),
      mode(std::move(mode_)),
      include_last_offset(include_last_offset_),
      padding_idx(pad && *pad < 0 ? *pad + num : pad),
      weight(register_parameter("weight", embedding_table("EmbeddingBag", num, dim, pad))) {
  EMBER_CHECK(mode == "sum" || mode == "mean" || mode == "max",
              "[nn.EmbeddingBag] mode has to be one of sum, mean or max: got '{}'", mode);
}

Tensor EmbeddingBag::forward(const Tensor& indices) {
  return forward(indices, Tensor());
}

Tensor EmbeddingBag::forward(const Tensor& indices, const Tensor& offsets,
                             const Tensor& per_sample_weights) {
  return embedding_bag(weight, indices, offsets, mode, per_sample_weights, include_last_offset,
                       padding_idx, max_norm, norm_type);
}

std::string EmbeddingBag::extra_repr() const {
  std::string s = fmt::format("{}, {}", num_embeddings, embedding_dim);
  if (max_norm) s += fmt::format(", max_norm={}", *max_norm);
  if (max_norm && norm_type != 2.0) s += fmt::format(", norm_type={}", norm_type);
  s += fmt::format(", mode='{}'", mode);
  if (include_last_offset) s += ", include_last_offset=True";
  if (padding_idx) s += fmt::format(", padding_idx={}", *padding_idx);
  return s;
}

// Pooling and reshaping -------------------------------------------------------------------------

MaxPool2d::MaxPool2d(Pair k, Pool2dOptions o) : Module("MaxPool2d"), kernel_size(k), options(o) {}

Tensor MaxPool2d::forward(const Tensor& x) {
  const Pair s = options.stride.value_or(kernel_size);
  return max_pool2d(x, {kernel_size.h, kernel_size.w}, {s.h, s.w},
                    {options.padding.h, options.padding.w},
                    {options.dilation.h, options.dilation.w}, options.ceil_mode);
}

std::tuple<Tensor, Tensor> MaxPool2d::forward_with_indices(const Tensor& x) {
  const Pair s = options.stride.value_or(kernel_size);
  return max_pool2d_with_indices(x, {kernel_size.h, kernel_size.w}, {s.h, s.w},
                                 {options.padding.h, options.padding.w},
                                 {options.dilation.h, options.dilation.w}, options.ceil_mode);
}

std::string MaxPool2d::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={}",
                     pair_str(kernel_size), pair_str(options.stride.value_or(kernel_size)),
                     pair_str(options.padding), pair_str(options.dilation), options.ceil_mode);
}

AvgPool2d::AvgPool2d(Pair k, Pool2dOptions o) : Module("AvgPool2d"), kernel_size(k), options(o) {}

Tensor AvgPool2d::forward(const Tensor& x) {
  const Pair s = options.stride.value_or(kernel_size);
  return avg_pool2d(x, {kernel_size.h, kernel_size.w}, {s.h, s.w},
                    {options.padding.h, options.padding.w}, options.ceil_mode,
                    options.count_include_pad, options.divisor_override);
}

std::string AvgPool2d::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}", pair_str(kernel_size),
                     pair_str(options.stride.value_or(kernel_size)), pair_str(options.padding));
}

template <size_t N>
AdaptiveSize<N>::AdaptiveSize(std::initializer_list<std::optional<int64_t>> v) {
  EMBER_CHECK(v.size() == N, "[nn] an adaptive pooling's output_size needs {} entries: got {}", N,
              v.size());
  std::copy(v.begin(), v.end(), dims.begin());
}

template <size_t N>
std::vector<int64_t> AdaptiveSize<N>::resolve(const Tensor& x, const char* layer) const {
  const bool keeps = std::any_of(dims.begin(), dims.end(), [](auto d) { return !d; });
  EMBER_CHECK(!keeps || x.dim() >= static_cast<int64_t>(N),
              "[nn.{}] output_size {} keeps input sizes, but the input of shape {} has fewer "
              "than {} dims",
              layer, str(), shape_str(x.sizes()), N);
  std::vector<int64_t> out(N);
  for (size_t i = 0; i < N; ++i) {
    out[i] = dims[i] ? *dims[i] : x.size(x.dim() - static_cast<int64_t>(N - i));
  }
  return out;
}

template <size_t N>
std::string AdaptiveSize<N>::str() const {
  auto entry = [](const std::optional<int64_t>& d) {
    return d ? std::to_string(*d) : std::string("None");
  };
  if (dims[0] && std::all_of(dims.begin(), dims.end(), [&](auto d) { return d == dims[0]; })) {
    return entry(dims[0]);
  }
  std::string s = "(";
  for (size_t i = 0; i < N; ++i) s += (i ? ", " : "") + entry(dims[i]);
  return s + ")";
}

template struct AdaptiveSize<2>;
template struct AdaptiveSize<3>;

AdaptiveAvgPool2d::AdaptiveAvgPool2d(AdaptiveSize<2> size)
    : Module("AdaptiveAvgPool2d"), output_size(size) {}

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) {
  return adaptive_avg_pool2d(x, output_size.resolve(x, "AdaptiveAvgPool2d"));
}

std::string AdaptiveAvgPool2d::extra_repr() const {
  return "output_size=" + output_size.str();
}

AdaptiveMaxPool2d::AdaptiveMaxPool2d(AdaptiveSize<2> size)
    : Module("AdaptiveMaxPool2d"), output_size(size) {}

Tensor AdaptiveMaxPool2d::forward(const Tensor& x) {
  return adaptive_max_pool2d(x, output_size.resolve(x, "AdaptiveMaxPool2d"));
}

std::tuple<Tensor, Tensor> AdaptiveMaxPool2d::forward_with_indices(const Tensor& x) {
  return adaptive_max_pool2d_with_indices(x, output_size.resolve(x, "AdaptiveMaxPool2d"));
}

std::string AdaptiveMaxPool2d::extra_repr() const {
  return "output_size=" + output_size.str();
}

MaxPool3d::MaxPool3d(Triple k, Pool3dOptions o) : Module("MaxPool3d"), kernel_size(k), options(o) {}

Tensor MaxPool3d::forward(const Tensor& x) {
  const Triple s = options.stride.value_or(kernel_size);
  const Triple& p = options.padding;
  const Triple& d = options.dilation;
  return max_pool3d(x, {kernel_size.d, kernel_size.h, kernel_size.w}, {s.d, s.h, s.w},
                    {p.d, p.h, p.w}, {d.d, d.h, d.w}, options.ceil_mode);
}

std::tuple<Tensor, Tensor> MaxPool3d::forward_with_indices(const Tensor& x) {
  const Triple s = options.stride.value_or(kernel_size);
  const Triple& p = options.padding;
  const Triple& d = options.dilation;
  return max_pool3d_with_indices(x, {kernel_size.d, kernel_size.h, kernel_size.w}, {s.d, s.h, s.w},
                                 {p.d, p.h, p.w}, {d.d, d.h, d.w}, options.ceil_mode);
}

std::string MaxPool3d::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={}",
                     triple_str(kernel_size), triple_str(options.stride.value_or(kernel_size)),
                     triple_str(options.padding), triple_str(options.dilation), options.ceil_mode);
}

AvgPool3d::AvgPool3d(Triple k, Pool3dOptions o) : Module("AvgPool3d"), kernel_size(k), options(o) {}

Tensor AvgPool3d::forward(const Tensor& x) {
  const Triple s = options.stride.value_or(kernel_size);
  const Triple& p = options.padding;
  return avg_pool3d(x, {kernel_size.d, kernel_size.h, kernel_size.w}, {s.d, s.h, s.w},
                    {p.d, p.h, p.w}, options.ceil_mode, options.count_include_pad,
                    options.divisor_override);
}

std::string AvgPool3d::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}", triple_str(kernel_size),
                     triple_str(options.stride.value_or(kernel_size)), triple_str(options.padding));
}

AdaptiveAvgPool3d::AdaptiveAvgPool3d(AdaptiveSize<3> size)
    : Module("AdaptiveAvgPool3d"), output_size(size) {}

Tensor AdaptiveAvgPool3d::forward(const Tensor& x) {
  return adaptive_avg_pool3d(x, output_size.resolve(x, "AdaptiveAvgPool3d"));
}

std::string AdaptiveAvgPool3d::extra_repr() const {
  return "output_size=" + output_size.str();
}

AdaptiveMaxPool3d::AdaptiveMaxPool3d(AdaptiveSize<3> size)
    : Module("AdaptiveMaxPool3d"), output_size(size) {}

Tensor AdaptiveMaxPool3d::forward(const Tensor& x) {
  return adaptive_max_pool3d(x, output_size.resolve(x, "AdaptiveMaxPool3d"));
}

std::tuple<Tensor, Tensor> AdaptiveMaxPool3d::forward_with_indices(const Tensor& x) {
  return adaptive_max_pool3d_with_indices(x, output_size.resolve(x, "AdaptiveMaxPool3d"));
}

std::string AdaptiveMaxPool3d::extra_repr() const {
  return "output_size=" + output_size.str();
}

MaxPool1d::MaxPool1d(int64_t k, Pool1dOptions o)
    : Module("MaxPool1d"), kernel_size(k), options(o) {}

Tensor MaxPool1d::forward(const Tensor& x) {
  return max_pool1d(x, kernel_size, options.stride, options.padding, options.dilation,
                    options.ceil_mode);
}

std::tuple<Tensor, Tensor> MaxPool1d::forward_with_indices(const Tensor& x) {
  return max_pool1d_with_indices(x, kernel_size, options.stride, options.padding, options.dilation,
                                 options.ceil_mode);
}

std::string MaxPool1d::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={}",
                     kernel_size, options.stride.value_or(kernel_size), options.padding,
                     options.dilation, options.ceil_mode ? "True" : "False");
}

AvgPool1d::AvgPool1d(int64_t k, Pool1dOptions o)
    : Module("AvgPool1d"), kernel_size(k), options(o) {}

Tensor AvgPool1d::forward(const Tensor& x) {
  return avg_pool1d(x, kernel_size, options.stride, options.padding, options.ceil_mode,
                    options.count_include_pad);
}

std::string AvgPool1d::extra_repr() const {
  // PyTorch keeps AvgPool1d's arguments as 1-tuples.
  return fmt::format("kernel_size=({},), stride=({},), padding=({},)", kernel_size,
                     options.stride.value_or(kernel_size), options.padding);
}

AdaptiveAvgPool1d::AdaptiveAvgPool1d(int64_t size)
    : Module("AdaptiveAvgPool1d"), output_size(size) {}

Tensor AdaptiveAvgPool1d::forward(const Tensor& x) {
  return adaptive_avg_pool1d(x, output_size);
}

std::string AdaptiveAvgPool1d::extra_repr() const {
  return fmt::format("output_size={}", output_size);
}

AdaptiveMaxPool1d::AdaptiveMaxPool1d(int64_t size)
    : Module("AdaptiveMaxPool1d"), output_size(size) {}

Tensor AdaptiveMaxPool1d::forward(const Tensor& x) {
  return adaptive_max_pool1d(x, output_size);
}

std::tuple<Tensor, Tensor> AdaptiveMaxPool1d::forward_with_indices(const Tensor& x) {
  return adaptive_max_pool1d_with_indices(x, output_size);
}

std::string AdaptiveMaxPool1d::extra_repr() const {
  return fmt::format("output_size={}", output_size);
}

MaxUnpool::MaxUnpool(std::string type_name, int64_t spatial_dims, std::vector<int64_t> k,
                     std::vector<int64_t> s, std::vector<int64_t> p)
    : Module(std::move(type_name)),
      kernel_size(std::move(k)),
      stride(std::move(s)),
      padding(std::move(p)),
      spatial_dims_(spatial_dims) {}

Tensor MaxUnpool::forward(const Tensor& x, const Tensor& indices, IntList output_size) {
  switch (spatial_dims_) {
    case 1:
      return max_unpool1d(x, indices, kernel_size[0], stride[0], padding[0], output_size);
    case 2:
      return max_unpool2d(x, indices, kernel_size, stride, padding, output_size);
    default:
      return max_unpool3d(x, indices, kernel_size, stride, padding, output_size);
  }
}

std::string MaxUnpool::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}", tuple_str(kernel_size),
                     tuple_str(stride), tuple_str(padding));
}

LPPool::LPPool(std::string type_name, int64_t spatial_dims, double p, std::vector<int64_t> k,
               std::vector<int64_t> s, bool ceil)
    : Module(std::move(type_name)),
      norm_type(p),
      kernel_size(std::move(k)),
      stride(std::move(s)),
      ceil_mode(ceil),
      spatial_dims_(spatial_dims) {}

Tensor LPPool::forward(const Tensor& x) {
  switch (spatial_dims_) {
    case 1:
      return lp_pool1d(x, norm_type, kernel_size[0],
                       stride.empty() ? std::nullopt : std::optional<int64_t>(stride[0]),
                       ceil_mode);
    case 2:
      return lp_pool2d(x, norm_type, kernel_size, stride, ceil_mode);
    default:
      return lp_pool3d(x, norm_type, kernel_size, stride, ceil_mode);
  }
}

std::string LPPool::extra_repr() const {
  // As PyTorch shows the arguments: one number where every dim has the same.
  const auto size = [](const std::vector<int64_t>& v) {
    return std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == v[0]; })
               ? fmt::format("{}", v[0])
               : tuple_str(v);
  };
  return fmt::format("norm_type={}, kernel_size={}, stride={}, ceil_mode={}", norm_type,
                     size(kernel_size), stride.empty() ? "None" : size(stride), ceil_mode);
}

ChannelShuffle::ChannelShuffle(int64_t g) : Module("ChannelShuffle"), groups(g) {}

Tensor ChannelShuffle::forward(const Tensor& x) {
  return channel_shuffle(x, groups);
}

std::string ChannelShuffle::extra_repr() const {
  return fmt::format("groups={}", groups);
}

Tensor Softmax2d::forward(const Tensor& x) {
  EMBER_CHECK(x.defined() && (x.dim() == 3 || x.dim() == 4),
              "[nn.Softmax2d] expected a 3-d [C, H, W] or 4-d [N, C, H, W] input: got {}",
              x.defined() ? shape_str(x.sizes()) : std::string("undefined"));
  return softmax(x, -3);
}

Flatten::Flatten(int64_t start, int64_t end) : Module("Flatten"), start_dim(start), end_dim(end) {}

Tensor Flatten::forward(const Tensor& x) {
  return x.flatten(start_dim, end_dim);
}

std::string Flatten::extra_repr() const {
  return fmt::format("start_dim={}, end_dim={}", start_dim, end_dim);
}

PixelShuffle::PixelShuffle(int64_t r) : Module("PixelShuffle"), upscale_factor(r) {}

Tensor PixelShuffle::forward(const Tensor& x) {
  return pixel_shuffle(x, upscale_factor);
}

std::string PixelShuffle::extra_repr() const {
  return fmt::format("upscale_factor={}", upscale_factor);
}

Upsample::Upsample(InterpolateOptions o) : Module("Upsample"), options(std::move(o)) {
  EMBER_CHECK(options.size.empty() != options.scale_factor.empty(),
              "[nn.Upsample] give exactly one of size and scale_factor");
  EMBER_CHECK(!options.antialias, "[nn.Upsample] takes no antialias (use F.interpolate)");
}

Tensor Upsample::forward(const Tensor& x) {
  return interpolate(x, options);
}

std::string Upsample::extra_repr() const {
  // As PyTorch prints it: the scale factors as Python floats (2.0), no align_corners.
  const auto number = [](double v) {
    return std::isfinite(v) && v == std::floor(v) ? fmt::format("{:.1f}", v) : fmt::format("{}", v);
  };
  const auto list = [&](const auto& v, auto show) {
    std::vector<std::string> parts;
    for (const auto& x : v) parts.push_back(show(x));
    return v.size() == 1 ? parts[0] : fmt::format("({})", fmt::join(parts, ", "));
  };
  std::string r =
      options.size.empty()
          ? fmt::format("scale_factor={}", list(options.scale_factor, number))
          : fmt::format("size={}", list(options.size, [](int64_t v) { return std::to_string(v); }));
  return r + fmt::format(", mode='{}'", options.mode);
}

PixelUnshuffle::PixelUnshuffle(int64_t r) : Module("PixelUnshuffle"), downscale_factor(r) {}

Tensor PixelUnshuffle::forward(const Tensor& x) {
  return pixel_unshuffle(x, downscale_factor);
}

std::string PixelUnshuffle::extra_repr() const {
  return fmt::format("downscale_factor={}", downscale_factor);
}

Unfold::Unfold(Pair k, Pair d, Pair p, Pair s)
    : Module("Unfold"), kernel_size(k), dilation(d), padding(p), stride(s) {}

Tensor Unfold::forward(const Tensor& x) {
  return unfold(x, {kernel_size.h, kernel_size.w}, {dilation.h, dilation.w}, {padding.h, padding.w},
                {stride.h, stride.w});
}

std::string Unfold::extra_repr() const {
  return fmt::format("kernel_size={}, dilation={}, padding={}, stride={}", pair_str(kernel_size),
                     pair_str(dilation), pair_str(padding), pair_str(stride));
}

Fold::Fold(Pair o, Pair k, Pair d, Pair p, Pair s)
    : Module("Fold"), output_size(o), kernel_size(k), dilation(d), padding(p), stride(s) {}

Tensor Fold::forward(const Tensor& x) {
  return fold(x, {output_size.h, output_size.w}, {kernel_size.h, kernel_size.w},
              {dilation.h, dilation.w}, {padding.h, padding.w}, {stride.h, stride.w});
}

std::string Fold::extra_repr() const {
  return fmt::format("output_size={}, kernel_size={}, dilation={}, padding={}, stride={}",
                     pair_str(output_size), pair_str(kernel_size), pair_str(dilation),
                     pair_str(padding), pair_str(stride));
}

CosineSimilarity::CosineSimilarity(int64_t dim, double eps)
    : Module("CosineSimilarity"), dim(dim), eps(eps) {}

Tensor CosineSimilarity::forward(const Tensor& x1, const Tensor& x2) {
  return cosine_similarity(x1, x2, dim, eps);
}

PairwiseDistance::PairwiseDistance(double p, double eps, bool keepdim)
    : Module("PairwiseDistance"), norm(p), eps(eps), keepdim(keepdim) {}

Tensor PairwiseDistance::forward(const Tensor& x1, const Tensor& x2) {
  return pairwise_distance(x1, x2, norm, eps, keepdim);
}

namespace {

constexpr const char* kPadNames[] = {"Zero", "Constant", "Reflection", "Replication", "Circular"};

Shape pad_sides(const char* name, int64_t dims, Shape padding) {
  if (padding.size() == 1) return Shape(static_cast<size_t>(2 * dims), padding[0]);
  EMBER_CHECK(!padding.empty() && padding.size() % 2 == 0,
              "[nn.{}] padding must be an int or (left, right, ...) pairs, got {} values", name,
              padding.size());
  return padding;
}

}  // namespace

Pad::Pad(PadKind kind, int64_t dims, Shape padding, double value)
    : Module(fmt::format("{}Pad{}d", kPadNames[static_cast<int>(kind)], dims)),
      kind(kind),
      padding(pad_sides(type_name().c_str(), dims, std::move(padding))),
      value(kind == PadKind::Constant ? value : 0.0) {}

Tensor Pad::forward(const Tensor& x) {
  constexpr const char* kModes[] = {"constant", "constant", "reflect", "replicate", "circular"};
  return pad(x, padding, kModes[static_cast<int>(kind)], value);
}

std::string Pad::extra_repr() const {
  const std::string sides =
      padding.size() == 1 ? fmt::format("({},)", padding[0])
                          : fmt::format("({})", fmt::join(padding.begin(), padding.end(), ", "));
  return kind == PadKind::Constant ? fmt::format("padding={}, value={}", sides, value) : sides;
}

// Activations -----------------------------------------------------------------------------------

Tensor PointwiseActivation::apply(const Tensor& x, const char* op,
                                  Tensor (*fn)(const Tensor&, const PointwiseActivation&)) const {
  if (!inplace) return fn(x, *this);
  Tensor self = x;  // the same tensor: written in place, returned as the output
  return apply_inplace(self, op, [&](const Tensor& v) { return fn(v, *this); });
}

std::string PointwiseActivation::with_inplace(std::string rest) const {
  if (!inplace) return rest;
  return rest.empty() ? "inplace=True" : rest + ", inplace=True";
}

Tensor ReLU::forward(const Tensor& x) {
  if (folded()) return x;  // Note [Folding batch norm for inference] in api/nn/fuse.cpp
  return apply(x, "relu_", [](const Tensor& v, const PointwiseActivation&) { return relu(v); });
}
std::string ReLU::extra_repr() const {
  return with_inplace("");
}

GELU::GELU(std::string approx) : Module("GELU"), approximate(std::move(approx)) {
  EMBER_CHECK(approximate == "none" || approximate == "tanh",
              "[nn.GELU] approximate must be 'none' or 'tanh': got '{}'", approximate);
}

Tensor GELU::forward(const Tensor& x) {
  return folded() ? x : gelu(x, approximate);
}

std::string GELU::extra_repr() const {
  return "approximate='" + approximate + "'";
}

Tensor Hardsigmoid::forward(const Tensor& x) {
  return apply(x, "hardsigmoid_",
               [](const Tensor& v, const PointwiseActivation&) { return hardsigmoid(v); });
}
std::string Hardsigmoid::extra_repr() const {
  return with_inplace("");
}
Tensor Hardswish::forward(const Tensor& x) {
  return apply(x, "hardswish_",
               [](const Tensor& v, const PointwiseActivation&) { return hardswish(v); });
}
std::string Hardswish::extra_repr() const {
  return with_inplace("");
}
Tensor SiLU::forward(const Tensor& x) {
  return apply(x, "silu_", [](const Tensor& v, const PointwiseActivation&) { return silu(v); });
}
std::string SiLU::extra_repr() const {
  return with_inplace("");
}

Tensor LeakyReLU::forward(const Tensor& x) {
  return apply(x, "leaky_relu_", [](const Tensor& v, const PointwiseActivation& a) {
    return leaky_relu(v, static_cast<const LeakyReLU&>(a).negative_slope);
  });
}
std::string LeakyReLU::extra_repr() const {
  return with_inplace(fmt::format("negative_slope={}", negative_slope));
}
Tensor ELU::forward(const Tensor& x) {
  return apply(x, "elu_", [](const Tensor& v, const PointwiseActivation& a) {
    return elu(v, static_cast<const ELU&>(a).alpha);
  });
}
std::string ELU::extra_repr() const {
  return with_inplace(fmt::format("alpha={}", alpha));
}
Tensor SELU::forward(const Tensor& x) {
  return apply(x, "selu_", [](const Tensor& v, const PointwiseActivation&) { return selu(v); });
}
std::string SELU::extra_repr() const {
  return with_inplace("");
}
Tensor CELU::forward(const Tensor& x) {
  return apply(x, "celu_", [](const Tensor& v, const PointwiseActivation& a) {
    return celu(v, static_cast<const CELU&>(a).alpha);
  });
}
std::string CELU::extra_repr() const {
  return with_inplace(fmt::format("alpha={}", alpha));
}
Tensor Hardtanh::forward(const Tensor& x) {
  return apply(x, "hardtanh_", [](const Tensor& v, const PointwiseActivation& a) {
    const auto& h = static_cast<const Hardtanh&>(a);
    return hardtanh(v, h.min_val, h.max_val);
  });
}
std::string Hardtanh::extra_repr() const {
  return with_inplace(fmt::format("min_val={}, max_val={}", min_val, max_val));
}
Tensor ReLU6::forward(const Tensor& x) {
  return apply(x, "relu6_", [](const Tensor& v, const PointwiseActivation&) { return relu6(v); });
}
std::string ReLU6::extra_repr() const {
  return with_inplace("");
}
Tensor LogSigmoid::forward(const Tensor& x) {
  return logsigmoid(x);
}
Tensor Mish::forward(const Tensor& x) {
  return apply(x, "mish_", [](const Tensor& v, const PointwiseActivation&) { return mish(v); });
}
std::string Mish::extra_repr() const {
  return with_inplace("");
}
Tensor Softplus::forward(const Tensor& x) {
  return softplus(x, beta, threshold);
}
std::string Softplus::extra_repr() const {
  return fmt::format("beta={}, threshold={}", beta, threshold);
}

Tensor Tanh::forward(const Tensor& x) {
  return tanh(x);
}

Tensor Sigmoid::forward(const Tensor& x) {
  return sigmoid(x);
}

Tensor Softmax::forward(const Tensor& x) {
  return softmax(x, dim);
}

std::string Softmax::extra_repr() const {
  return fmt::format("dim={}", dim);
}

Tensor Softmin::forward(const Tensor& x) {
  return softmin(x, dim);
}

std::string Softmin::extra_repr() const {
  return fmt::format("dim={}", dim);
}

Tensor Threshold::forward(const Tensor& x) {
  return apply(x, "threshold_", [](const Tensor& v, const PointwiseActivation& a) {
    const auto& t = static_cast<const Threshold&>(a);
    return ember::threshold(v, t.threshold, t.value);
  });
}

std::string Threshold::extra_repr() const {
  return with_inplace(fmt::format("threshold={}, value={}", threshold, value));
}

Tensor Hardshrink::forward(const Tensor& x) {
  return hardshrink(x, lambd);
}

std::string Hardshrink::extra_repr() const {
  return fmt::format("{}", lambd);
}

Tensor Softshrink::forward(const Tensor& x) {
  return softshrink(x, lambd);
}

std::string Softshrink::extra_repr() const {
  return fmt::format("{}", lambd);
}

Tensor Tanhshrink::forward(const Tensor& x) {
  return tanhshrink(x);
}

Tensor Softsign::forward(const Tensor& x) {
  return softsign(x);
}

Tensor GLU::forward(const Tensor& x) {
  return glu(x, dim);
}

std::string GLU::extra_repr() const {
  return fmt::format("dim={}", dim);
}

PReLU::PReLU(int64_t n, double init)
    : Module("PReLU"),
      num_parameters((check_positive("PReLU", "num_parameters", n), n)),
      weight(register_parameter("weight", full({n}, init))) {}

Tensor PReLU::forward(const Tensor& x) {
  return prelu(x, weight);
}

std::string PReLU::extra_repr() const {
  return fmt::format("num_parameters={}", num_parameters);
}

Tensor LogSoftmax::forward(const Tensor& x) {
  return log_softmax(x, dim);
}

std::string LogSoftmax::extra_repr() const {
  return fmt::format("dim={}", dim);
}

}  // namespace ember::nn
