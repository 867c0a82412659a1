// The graph ops, each written once on the core's public ops (so every backend runs them). Their
// semantics are ONNX's from opset 13 to 28 (graph/onnx/import.cpp maps ONNX's ops onto them), in
// Ember's names; the list at the end is the whole vocabulary.
#include "ember/graph/ops.h"
#include "ember/util/enum_name.h"

#include "graph/attrs.h"
#include "graph/fused_ops.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

namespace ember::graph {

namespace {

using Tensors = std::vector<Tensor>;

using detail::attr_float;
using detail::attr_floats;
using detail::attr_int;
using detail::attr_ints;
using detail::attr_string;
using detail::find_attr;
using detail::label;

/** The values of a small integer tensor (a shape, axes, pads), on the host. */
std::vector<int64_t> host_ints(const Tensor& t) {
  Tensor h = t.to(Device::cpu()).to(DType::Int64).contiguous();
  const int64_t* p = h.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + h.numel());
}

/** The one value of a one-element tensor, as the op's scalar. */
Scalar host_scalar(const Node& n, const Tensor& t, std::string_view what) {
  EMBER_CHECK(t.numel() == 1, "{} {} must hold one value: got shape {}", label(n), what, t.sizes());
  return t.to(Device::cpu()).reshape({}).item_scalar();
}

int64_t wrap_axis(const Node& n, int64_t axis, int64_t rank) {
  EMBER_CHECK_INDEX(axis >= -rank && axis < std::max<int64_t>(rank, 1),
                    "{} axis {} is out of range for rank {} (expected -{} to {})", label(n), axis,
                    rank, rank, std::max<int64_t>(rank, 1) - 1);
  return axis < 0 ? axis + rank : axis;
}

Tensor reversed(const Tensor& x, int64_t dim) {
  const int64_t n = x.size(dim);
  Tensor idx = arange(n - 1, -1, -1, TensorOptions(DType::Int64, x.device()));
  return index_select(x, dim, idx);
}

/** Indices that may be negative (count from the end), made non-negative. */
Tensor wrap_indices(const Tensor& idx, int64_t n) {
  Tensor i = idx.to(DType::Int64);
  return where(lt(i, Scalar(0)), add(i, Scalar(n)), i);
}

// Elementwise -----------------------------------------------------------------------------------

template <Tensor (*F)(const Tensor&)>
Tensors unary(const Node&, const Tensors& in, Device) {
  return {F(in[0])};
}

template <Tensor (*F)(const Tensor&, const Tensor&)>
Tensors binary(const Node&, const Tensors& in, Device) {
  return {F(in[0], in[1])};
}

Tensor add2(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor sub2(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor mul2(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor eq2(const Tensor& a, const Tensor& b) {
  return eq(a, b);
}
Tensor lt2(const Tensor& a, const Tensor& b) {
  return lt(a, b);
}
Tensor le2(const Tensor& a, const Tensor& b) {
  return le(a, b);
}
Tensor gt2(const Tensor& a, const Tensor& b) {
  return gt(a, b);
}
Tensor ge2(const Tensor& a, const Tensor& b) {
  return ge(a, b);
}
Tensor xor2(const Tensor& a, const Tensor& b) {
  return ne(a, b);
}

Tensors op_div(const Node&, const Tensors& in, Device) {
  // Integer division truncates (C's rule, ONNX's).
  if (is_integral(in[0].dtype())) return {div(in[0], in[1], std::string_view("trunc"))};
  return {div(in[0], in[1])};
}

Tensors op_pow(const Node&, const Tensors& in, Device) {
  Tensor y = pow(in[0], in[1]);
  return {y.dtype() == in[0].dtype() ? y : y.to(in[0].dtype())};
}

Tensors op_mod(const Node& n, const Tensors& in, Device) {
  if (attr_int(n, "fmod", 0) != 0) return {fmod(in[0], in[1])};
  return {remainder(in[0], in[1])};
}

Tensors op_reciprocal(const Node&, const Tensors& in, Device) {
  return {div(ones_like(in[0]), in[0])};
}

Tensors op_softsign(const Node&, const Tensors& in, Device) {
  return {softsign(in[0])};
}

Tensors op_leaky_relu(const Node& n, const Tensors& in, Device) {
  return {leaky_relu(in[0], attr_float(n, "alpha", 0.01))};
}

Tensors op_elu(const Node& n, const Tensors& in, Device) {
  return {elu(in[0], attr_float(n, "alpha", 1.0))};
}

Tensors op_celu(const Node& n, const Tensors& in, Device) {
  return {celu(in[0], attr_float(n, "alpha", 1.0))};
}

Tensors op_selu(const Node& n, const Tensors& in, Device) {
  const double alpha = attr_float(n, "alpha", 1.67326319217681884765625);
  const double gamma = attr_float(n, "gamma", 1.05070102214813232421875);
  const Tensor& x = in[0];
  Tensor neg = mul(sub(exp(x), Scalar(1)), Scalar(alpha));
  return {mul(where(gt(x, Scalar(0)), x, neg), Scalar(gamma))};
}

Tensors op_thresholded_relu(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  return {where(gt(x, Scalar(attr_float(n, "alpha", 1.0))), x, zeros_like(x))};
}

Tensors op_hard_sigmoid(const Node& n, const Tensors& in, Device) {
  const double alpha = attr_float(n, "alpha", 0.2), beta = attr_float(n, "beta", 0.5);
  // PyTorch exports its hardsigmoid with alpha 1/6 (rounded to float) and beta 0.5: the core's
  // one-pass kernel then.
  if (std::abs(alpha - 1.0 / 6) < 1e-7 && beta == 0.5) return {hardsigmoid(in[0])};
  return {clamp(add(mul(in[0], Scalar(alpha)), Scalar(beta)), Scalar(0), Scalar(1))};
}

Tensors op_hard_swish(const Node&, const Tensors& in, Device) {
  return {hardswish(in[0])};
}

Tensors op_bit_shift(const Node& n, const Tensors& in, Device) {
  return {attr_string(n, "direction", "") == "LEFT" ? bitwise_left_shift(in[0], in[1])
                                                    : bitwise_right_shift(in[0], in[1])};
}

Tensors op_gelu(const Node& n, const Tensors& in, Device) {
  const std::string approximate = attr_string(n, "approximate", "none");
  EMBER_CHECK(approximate == "none" || approximate == "tanh",
              "{} unknown approximate '{}' (expected 'none' or 'tanh')", label(n), approximate);
  return {gelu(in[0], approximate)};
}

Tensors op_prelu(const Node&, const Tensors& in, Device) {
  const Tensor& x = in[0];
  return {where(lt(x, Scalar(0)), mul(x, in[1]), x)};
}

Tensors op_softplus(const Node&, const Tensors& in, Device) {
  // log(1 + exp(x)), stable for large x: max(x, 0) + log1p(exp(-|x|)).
  const Tensor& x = in[0];
  return {add(clamp(x, Scalar(0), std::nullopt), log1p(exp(neg(abs(x)))))};
}

Tensors op_clip(const Node& n, const Tensors& in, Device) {
  std::optional<Scalar> lo, hi;
  if (in.size() > 1 && in[1].defined()) lo = host_scalar(n, in[1], "min");
  if (in.size() > 2 && in[2].defined()) hi = host_scalar(n, in[2], "max");
  if (!lo && !hi) return {in[0]};
  return {clamp(in[0], lo, hi)};
}

Tensors op_where(const Node&, const Tensors& in, Device) {
  return {where(in[0].to(DType::Bool), in[1], in[2])};
}

Tensors op_not(const Node&, const Tensors& in, Device) {
  return {logical_not(in[0])};
}
Tensors op_and(const Node&, const Tensors& in, Device) {
  return {logical_and(in[0], in[1])};
}
Tensors op_or(const Node&, const Tensors& in, Device) {
  return {logical_or(in[0], in[1])};
}

template <Tensor (*F)(const Tensor&, const Tensor&)>
Tensors variadic(const Node&, const Tensors& in, Device) {
  Tensor acc = in[0];
  for (size_t i = 1; i < in.size(); ++i) acc = F(acc, in[i]);
  return {acc};
}

Tensor max2(const Tensor& a, const Tensor& b) {
  return maximum(a, b);
}
Tensor min2(const Tensor& a, const Tensor& b) {
  return minimum(a, b);
}

Tensors op_mean(const Node& n, const Tensors& in, Device d) {
  Tensor s = variadic<add2>(n, in, d)[0];
  return {div(s, Scalar(static_cast<double>(in.size())))};
}

Tensors op_is_nan(const Node&, const Tensors& in, Device) {
  return {ne(in[0], in[0])};
}

Tensors op_is_inf(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const double inf = std::numeric_limits<double>::infinity();
  Tensor pos = eq(x, Scalar(inf)), negi = eq(x, Scalar(-inf));
  const bool p = attr_int(n, "detect_positive", 1) != 0, m = attr_int(n, "detect_negative", 1) != 0;
  if (p && m) return {logical_or(pos, negi)};
  if (p) return {pos};
  if (m) return {negi};
  return {zeros_like(x).to(DType::Bool)};
}

// Linear algebra and normalization ----------------------------------------------------------------

Tensors op_gemm(const Node& n, const Tensors& in, Device) {
  Tensor a = attr_int(n, "transA", 0) ? in[0].t() : in[0];
  Tensor b = attr_int(n, "transB", 0) ? in[1].t() : in[1];
  const double alpha = attr_float(n, "alpha", 1.0), beta = attr_float(n, "beta", 1.0);
  Tensor y = matmul(a, b);
  if (alpha != 1.0) y = mul(y, Scalar(alpha));
  if (in.size() > 2 && in[2].defined()) {
    y = add(y, beta == 1.0 ? in[2] : mul(in[2], Scalar(beta)));
  }
  return {y};
}

Tensors op_matmul(const Node&, const Tensors& in, Device) {
  return {matmul(in[0], in[1])};
}

Tensors op_einsum(const Node& n, const Tensors& in, Device) {
  return {einsum(attr_string(n, "equation", ""), in)};
}

/** A per-channel vector [C] shaped to broadcast against x [N, C, ...]. */
Tensor per_channel(const Tensor& v, int64_t rank) {
  Shape s(static_cast<size_t>(std::max<int64_t>(rank - 1, 1)), 1);
  s[0] = -1;
  return v.reshape(s);
}

Tensors op_batch_normalization(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const double eps = attr_float(n, "epsilon", 1e-5), momentum = attr_float(n, "momentum", 0.9);
  const int64_t r = x.dim();
  EMBER_CHECK(r >= 2, "{} input must be [N, C, ...]: got shape {}", label(n), x.sizes());
  Tensor mean = in[3], var = in[4];
  Tensors extra;
  if (attr_int(n, "training_mode", 0) != 0) {
    Shape dims;
    for (int64_t d = 0; d < r; ++d) {
      if (d != 1) dims.push_back(d);
    }
    Tensor batch_mean = ember::mean(x, dims);
    Tensor batch_var = ember::var(x, dims, /*correction=*/0);
    extra = {add(mul(mean, Scalar(momentum)), mul(batch_mean, Scalar(1 - momentum))),
             add(mul(var, Scalar(momentum)), mul(batch_var, Scalar(1 - momentum)))};
    mean = batch_mean;
    var = batch_var;
  }
  Tensor y = div(sub(x, per_channel(mean, r)), sqrt(add(per_channel(var, r), Scalar(eps))));
  y = add(mul(y, per_channel(in[1], r)), per_channel(in[2], r));
  Tensors out{y.to(x.dtype())};
  for (Tensor& e : extra) out.push_back(e.to(x.dtype()));
  return out;
}

/** LayerNormalization over dims [axis, rank) of x: y = (x - mean) * inv_std * scale (+ bias) in
 *  x's dtype, then the mean and inv_std, kept, in the stash dtype (float32, or float64 for
 *  float64); only y when `stats` is false. */
Tensors layer_norm_outputs(const Tensor& x, int64_t axis, const Tensor& scale, const Tensor& bias,
                           double eps, bool stats) {
  const int64_t r = x.dim();
  // Only Y read (the usual case): the core's layer_norm, one kernel, when the scale and bias
  // have the normalized shape (ONNX also lets them broadcast).
  Shape normalized;
  for (int64_t d = axis; d < r; ++d) normalized.push_back(x.size(d));
  if (!stats && is_floating(x.dtype()) && scale.sizes() == normalized &&
      scale.dtype() == x.dtype() &&
      (!bias.defined() || (bias.sizes() == normalized && bias.dtype() == x.dtype()))) {
    return {layer_norm(x, normalized, scale, bias, eps)};
  }
  // stash_type 1: statistics in float32 (float64 inputs keep float64).
  const DType stash = x.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  Tensor xs = x.to(stash);
  Shape dims;
  for (int64_t d = axis; d < r; ++d) dims.push_back(d);
  Tensor mean = ember::mean(xs, dims, /*keepdim=*/true);
  Tensor centered = sub(xs, mean);
  Tensor var = ember::mean(mul(centered, centered), dims, /*keepdim=*/true);
  Tensor inv_std = div(ones_like(var), sqrt(add(var, Scalar(eps))));
  Tensor y = mul(centered, inv_std);
  y = mul(y, scale.to(stash));
  if (bias.defined()) y = add(y, bias.to(stash));
  return {y.to(x.dtype()), mean, inv_std};
}

/** Whether any of a node's outputs from the second on is read. */
bool reads_more_than_first(const Node& n) {
  for (size_t i = 1; i < n.outputs.size(); ++i) {
    if (!n.outputs[i].empty()) return true;
  }
  return false;
}

Tensors op_layer_normalization(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const int64_t axis = wrap_axis(n, attr_int(n, "axis", -1), x.dim());
  return layer_norm_outputs(x, axis, in[1], in.size() > 2 ? in[2] : Tensor(),
                            attr_float(n, "epsilon", 1e-5), reads_more_than_first(n));
}

Tensors op_softmax(const Node& n, const Tensors& in, Device) {
  return {softmax(in[0], wrap_axis(n, attr_int(n, "axis", -1), in[0].dim()))};
}

Tensors op_log_softmax(const Node& n, const Tensors& in, Device) {
  return {log_softmax(in[0], wrap_axis(n, attr_int(n, "axis", -1), in[0].dim()))};
}

// Convolution and pooling ------------------------------------------------------------------------

/** Where a sliding window (conv or pool) goes over the spatial dims: per dim the kernel, stride,
 *  dilation, padding at each end and the output size. */
struct Windows {
  std::vector<int64_t> kernel, stride, dilation, pad_begin, pad_end, out, ceil_extra;
};

Windows window_geometry(const Node& n, const Tensor& x, std::vector<int64_t> kernel,
                        bool ceil_mode) {
  const auto d = static_cast<int64_t>(kernel.size());
  EMBER_CHECK(x.dim() == d + 2, "{} input must be [N, C] and {} spatial dims: got shape {}",
              label(n), d, x.sizes());
  Windows w;
  w.kernel = std::move(kernel);
  w.stride = attr_ints(n, "strides").value_or(std::vector<int64_t>(d, 1));
  w.dilation = attr_ints(n, "dilations").value_or(std::vector<int64_t>(d, 1));
  std::vector<int64_t> pads = attr_ints(n, "pads").value_or(std::vector<int64_t>(2 * d, 0));
  EMBER_CHECK(static_cast<int64_t>(w.stride.size()) == d &&
                  static_cast<int64_t>(w.dilation.size()) == d &&
                  static_cast<int64_t>(pads.size()) == 2 * d,
              "{} strides, dilations and pads must have {}, {} and {} values: got {}, {} and {}",
              label(n), d, d, 2 * d, w.stride.size(), w.dilation.size(), pads.size());
  const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
  EMBER_CHECK(auto_pad == "NOTSET" || auto_pad == "VALID" || auto_pad == "SAME_UPPER" ||
                  auto_pad == "SAME_LOWER",
              "{} unknown auto_pad '{}' (expected NOTSET, VALID, SAME_UPPER or SAME_LOWER)",
              label(n), auto_pad);
  for (int64_t i = 0; i < d; ++i) {
    const int64_t in = x.size(i + 2), k = w.kernel[i], s = w.stride[i], dl = w.dilation[i];
    EMBER_CHECK(k > 0 && s > 0 && dl > 0,
                "{} kernel, stride and dilation must be positive: got {}, {} and {} in dim {}",
                label(n), k, s, dl, i);
    const int64_t span = (k - 1) * dl + 1;
    int64_t pb = pads[i], pe = pads[i + d], out = 0;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + span - in);
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    } else {
      if (auto_pad == "VALID") pb = pe = 0;
      const int64_t room = in + pb + pe - span;
      EMBER_CHECK(room >= 0,
                  "{} the window ({} wide with dilation) is larger than the padded "
                  "input ({}) in dim {}",
                  label(n), span, in + pb + pe, i);
      out = (ceil_mode ? (room + s - 1) / s : room / s) + 1;
      // A window must start inside the input or its begin padding.
      if (ceil_mode && (out - 1) * s >= in + pb) --out;
    }
    w.pad_begin.push_back(pb);
    w.pad_end.push_back(pe);
    w.out.push_back(out);
    w.ceil_extra.push_back(std::max<int64_t>(0, (out - 1) * s + span - (in + pb + pe)));
  }
  return w;
}

/** x padded by the windows' padding with `value`, then by their ceil-mode overhang with
 *  `extra_value`. */
Tensor pad_windows(const Tensor& x, const Windows& w, double value, double extra_value) {
  const auto d = w.kernel.size();
  Shape p, extra;
  bool any = false, any_extra = false;
  for (size_t i = d; i-- > 0;) {
    p.push_back(w.pad_begin[i]);
    p.push_back(w.pad_end[i]);
    extra.push_back(0);
    extra.push_back(w.ceil_extra[i]);
    any = any || w.pad_begin[i] != 0 || w.pad_end[i] != 0;
    any_extra = any_extra || w.ceil_extra[i] != 0;
  }
  Tensor y = any ? pad(x, p, "constant", value) : x;
  return any_extra ? pad(y, extra, "constant", extra_value) : y;
}

/** The windows of a padded [N, C, ...] tensor as a view [N, C, out..., kernel...]. */
Tensor window_view(const Tensor& padded, const Windows& w) {
  Tensor p = padded.contiguous();
  const auto d = static_cast<int64_t>(w.kernel.size());
  Shape sizes{p.size(0), p.size(1)}, strides{p.stride(0), p.stride(1)};
  for (int64_t i = 0; i < d; ++i) {
    sizes.push_back(w.out[i]);
    strides.push_back(p.stride(i + 2) * w.stride[i]);
  }
  for (int64_t i = 0; i < d; ++i) {
    sizes.push_back(w.kernel[i]);
    strides.push_back(p.stride(i + 2) * w.dilation[i]);
  }
  return p.as_strided(sizes, strides);
}

std::vector<int64_t> kernel_shape(const Node& n, const Tensor& x) {
  auto k = attr_ints(n, "kernel_shape");
  EMBER_CHECK(k.has_value(), "{} attribute kernel_shape is required", label(n));
  EMBER_CHECK(static_cast<int64_t>(k->size()) + 2 == x.dim(),
              "{} kernel_shape {} does not fit an input of shape {}", label(n), *k, x.sizes());
  return *k;
}

Shape trailing_dims(int64_t from, int64_t count) {
  Shape s;
  for (int64_t i = 0; i < count; ++i) s.push_back(from + i);
  return s;
}

double lowest_of(DType d) {
  switch (d) {
    case DType::UInt8:
    case DType::Bool:
      return 0;
    case DType::Int8:
      return -128;
    case DType::Int32:
      return static_cast<double>(std::numeric_limits<int32_t>::min());
    case DType::Int64:
      return static_cast<double>(std::numeric_limits<int64_t>::min());
    default:
      return -std::numeric_limits<double>::infinity();
  }
}

double highest_of(DType d) {
  switch (d) {
    case DType::UInt8:
      return 255;
    case DType::Bool:
      return 1;
    case DType::Int8:
      return 127;
    case DType::Int32:
      return static_cast<double>(std::numeric_limits<int32_t>::max());
    case DType::Int64:
      return static_cast<double>(std::numeric_limits<int64_t>::max());
    default:
      return std::numeric_limits<double>::infinity();
  }
}

Tensors op_max_pool(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  Windows w = window_geometry(n, x, kernel_shape(n, x), attr_int(n, "ceil_mode", 0) != 0);
  const auto d = static_cast<int64_t>(w.kernel.size());
  // Note [Max pooling without indices]
  // A model that does not name the Indices output (every exported CNN) gets the core's pooling
  // kernel where its geometry is the core's (2-d, symmetric padding of at most half the window,
  // floating point); numbering the maxima costs more than the pooling itself.
  const bool indices = n.outputs.size() > 1 && !n.outputs[1].empty();
  if (!indices && d == 2 && is_floating(x.dtype())) {
    bool plain = true;
    for (int64_t i = 0; i < d; ++i) {
      plain = plain && w.pad_begin[i] == w.pad_end[i] && 2 * w.pad_begin[i] <= w.kernel[i];
    }
    if (plain) {
      Tensor y = max_pool2d(x, w.kernel, w.stride, {w.pad_begin[0], w.pad_begin[1]}, w.dilation,
                            attr_int(n, "ceil_mode", 0) != 0);
      if (y.size(2) == w.out[0] && y.size(3) == w.out[1]) return {y};
    }
  }
  const double low = lowest_of(x.dtype());
  Tensor windows = window_view(pad_windows(x, w, low, low), w);
  Tensor y = amax(windows, trailing_dims(d + 2, d));
  if (!indices) return {y};
  // Indices: the flat index in x (row-major over N, C and the spatial dims) of each maximum.
  Shape flat_sizes;
  for (int64_t i = 0; i < d + 2; ++i) flat_sizes.push_back(windows.size(i));
  flat_sizes.push_back(-1);
  Tensor k = argmax(windows.reshape(flat_sizes), -1);  // index inside the window, row-major
  Tensor index = zeros_like(k);
  // storage_order 1 numbers the spatial dims column-major (the first varies fastest).
  const bool column_major = attr_int(n, "storage_order", 0) != 0;
  int64_t inner = 1;
  for (int64_t j = d - 1; j >= 0; --j) {
    const int64_t i = column_major ? d - 1 - j : j;
    // Coordinate i of the maximum: out_i * stride - pad_begin + (k / kinner % kernel) * dilation.
    Shape shape(static_cast<size_t>(d + 2), 1);
    shape[static_cast<size_t>(i + 2)] = w.out[i];
    Tensor o = arange(w.out[i], TensorOptions(DType::Int64, x.device())).reshape(shape);
    int64_t kinner = 1;
    for (int64_t m = i + 1; m < d; ++m) kinner *= w.kernel[m];
    Tensor kk = remainder(div(k, Scalar(kinner), std::string_view("floor")), Scalar(w.kernel[i]));
    Tensor coord = add(sub(mul(o, Scalar(w.stride[i])), Scalar(w.pad_begin[i])),
                       mul(kk, Scalar(w.dilation[i])));
    index = add(index, mul(coord, Scalar(inner)));
    inner *= x.size(i + 2);
  }
  Shape nc(static_cast<size_t>(d + 2), 1);
  nc[1] = x.size(1);
  Tensor c = arange(x.size(1), TensorOptions(DType::Int64, x.device())).reshape(nc);
  nc[1] = 1;
  nc[0] = x.size(0);
  Tensor b = arange(x.size(0), TensorOptions(DType::Int64, x.device())).reshape(nc);
  index = add(index, mul(add(mul(b, Scalar(x.size(1))), c), Scalar(inner)));
  return {y, index};
}

Tensors op_average_pool(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  Windows w = window_geometry(n, x, kernel_shape(n, x), attr_int(n, "ceil_mode", 0) != 0);
  const auto d = static_cast<int64_t>(w.kernel.size());
  const Shape dims = trailing_dims(d + 2, d);
  Tensor sum = ember::sum(window_view(pad_windows(x, w, 0, 0), w), dims);
  // How many elements each window averages: the input, and the explicit padding when
  // count_include_pad is set (never the ceil-mode overhang).
  const double pad_counts = attr_int(n, "count_include_pad", 0) != 0 ? 1.0 : 0.0;
  Shape one{1, 1};
  for (int64_t i = 0; i < d; ++i) one.push_back(x.size(i + 2));
  Tensor mask = ones(one, TensorOptions(x.dtype(), x.device()));
  Tensor count = ember::sum(window_view(pad_windows(mask, w, pad_counts, 0), w), dims);
  return {div(sum, count)};
}

Tensors op_global_average_pool(const Node&, const Tensors& in, Device) {
  const Tensor& x = in[0];
  return {ember::mean(x, trailing_dims(2, x.dim() - 2), /*keepdim=*/true)};
}

Tensors op_global_max_pool(const Node&, const Tensors& in, Device) {
  const Tensor& x = in[0];
  return {amax(x, trailing_dims(2, x.dim() - 2), /*keepdim=*/true)};
}

Tensors op_conv(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const Tensor& weight = in[1];
  Tensor bias = in.size() > 2 ? in[2] : Tensor();
  EMBER_CHECK(weight.dim() == x.dim() && x.dim() >= 3,
              "{} input [N, C, ...] and weight [M, C/group, ...] must have the same rank (3 or "
              "more): got shapes {} and {}",
              label(n), x.sizes(), weight.sizes());
  std::vector<int64_t> k(weight.sizes().begin() + 2, weight.sizes().end());
  if (auto ks = attr_ints(n, "kernel_shape")) {
    EMBER_CHECK(*ks == k, "{} kernel_shape {} does not match the weight's shape {}", label(n), *ks,
                weight.sizes());
  }
  const int64_t d = x.dim() - 2;
  EMBER_CHECK_NOT_IMPLEMENTED(d <= 3, "{} {}-d convolution is not supported (1-d, 2-d and 3-d are)",
                              label(n), d);
  Windows w = window_geometry(n, x, k, /*ceil_mode=*/false);
  Shape padding;
  bool symmetric = true;
  for (int64_t i = 0; i < d; ++i) {
    symmetric = symmetric && w.pad_begin[i] == w.pad_end[i];
    padding.push_back(w.pad_begin[i]);
  }
  Tensor xp = x;
  if (!symmetric) {
    xp = pad_windows(x, w, 0, 0);
    padding = Shape(static_cast<size_t>(d), 0);
  }
  const int64_t groups = attr_int(n, "group", 1);
  if (d == 1) {
    Tensor y = conv2d(xp.unsqueeze(2), weight.unsqueeze(2), bias, {1, w.stride[0]}, {0, padding[0]},
                      {1, w.dilation[0]}, groups);
    return {y.squeeze(2)};
  }
  if (d == 3) return {conv3d(xp, weight, bias, w.stride, padding, w.dilation, groups)};
  return {conv2d(xp, weight, bias, w.stride, padding, w.dilation, groups)};
}

Tensors op_conv_transpose(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const Tensor& weight = in[1];
  EMBER_CHECK(weight.dim() == x.dim() && x.dim() >= 3,
              "{} input [N, C, ...] and weight [C, M/group, ...] must have the same rank (3 or "
              "more): got shapes {} and {}",
              label(n), x.sizes(), weight.sizes());
  const int64_t d = x.dim() - 2;
  EMBER_CHECK_NOT_IMPLEMENTED(
      d <= 3, "{} {}-d transposed convolution is not supported (1-d to 3-d are)", label(n), d);
  auto ints = [&](std::string_view name, int64_t count, int64_t fill) {
    std::vector<int64_t> v = attr_ints(n, name).value_or(std::vector<int64_t>(count, fill));
    EMBER_CHECK(static_cast<int64_t>(v.size()) == count, "{} {} must have {} values: got {}",
                label(n), name, count, v);
    return v;
  };
  const std::vector<int64_t> stride = ints("strides", d, 1), dilation = ints("dilations", d, 1);
  std::vector<int64_t> pads = ints("pads", 2 * d, 0), out_pad = ints("output_padding", d, 0);
  const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
  const auto output_shape = attr_ints(n, "output_shape");
  // The full result (every input pixel's contribution, no padding) is cropped or extended to
  // ONNX's output: out[i] = full index i + pad_begin.
  std::vector<int64_t> full(static_cast<size_t>(d));
  for (int64_t i = 0; i < d; ++i) {
    full[i] = stride[i] * (x.size(i + 2) - 1) + (weight.size(i + 2) - 1) * dilation[i] + 1;
    int64_t want = -1;
    if (output_shape) {
      EMBER_CHECK(static_cast<int64_t>(output_shape->size()) >= d,
                  "{} output_shape {} must give the {} spatial dims", label(n), *output_shape, d);
      want = (*output_shape)[output_shape->size() - static_cast<size_t>(d) + i];
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      want = x.size(i + 2) * stride[i];
    }
    if (want >= 0) {
      // Negative when the output is larger than the full result; halves round down (ONNX's).
      const int64_t total = full[i] + out_pad[i] - want;
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pads[i] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[i + d] = total - pads[i];
    } else if (auto_pad == "VALID") {
      pads[i] = pads[i + d] = 0;
    }
  }
  Tensor xs = x, ws = weight;
  Shape st(stride), dl(dilation);
  if (d == 1) {
    xs = x.unsqueeze(2);
    ws = weight.unsqueeze(2);
    st = Shape{1, stride[0]};
    dl = Shape{1, dilation[0]};
  }
  const int64_t group = attr_int(n, "group", 1);
  Tensor y = d == 3 ? conv_transpose3d(xs, ws, {}, st, {0}, {0}, group, dl)
                    : conv_transpose2d(xs, ws, {}, st, {0, 0}, {0, 0}, group, dl);
  if (d == 1) y = y.squeeze(2);
  Shape crop;
  for (int64_t i = d - 1; i >= 0; --i) {
    crop.push_back(-pads[i]);
    crop.push_back(out_pad[i] - pads[i + d]);
  }
  y = pad(y, crop, "constant", 0.0);
  if (in.size() > 2 && in[2].defined()) y = add(y, per_channel(in[2], y.dim()));
  return {y};
}

/** Mean and variance over `dims` (biased), kept. */
std::pair<Tensor, Tensor> moments(const Tensor& x, IntList dims) {
  Tensor mean = ember::mean(x, dims, /*keepdim=*/true);
  Tensor centered = sub(x, mean);
  return {mean, ember::mean(mul(centered, centered), dims, /*keepdim=*/true)};
}

DType stash_dtype(DType d) {
  return d == DType::Float64 ? DType::Float64 : DType::Float32;
}

Tensors op_instance_normalization(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const Tensor xs = x.to(stash_dtype(x.dtype()));
  auto [mean, var] = moments(xs, trailing_dims(2, x.dim() - 2));
  Tensor y = div(sub(xs, mean), sqrt(add(var, Scalar(attr_float(n, "epsilon", 1e-5)))));
  y = add(mul(y, per_channel(in[1].to(xs.dtype()), x.dim())),
          per_channel(in[2].to(xs.dtype()), x.dim()));
  return {y.to(x.dtype())};
}

Tensors op_group_normalization(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const int64_t groups = attr_int(n, "num_groups", 0), c = x.size(1);
  EMBER_CHECK(groups > 0 && c % groups == 0,
              "{} num_groups {} must be positive and divide the {} channels", label(n), groups, c);
  const Tensor xs = x.to(stash_dtype(x.dtype()));
  Tensor grouped = xs.reshape({x.size(0), groups, -1});
  auto [mean, var] = moments(grouped, {2});
  Tensor y = div(sub(grouped, mean), sqrt(add(var, Scalar(attr_float(n, "epsilon", 1e-5)))));
  y = y.reshape(x.sizes());
  // Version 21 scales each channel; version 18 each group (a scale of num_groups values).
  auto per_c = [&](const Tensor& v) {
    Tensor t = v.to(xs.dtype());
    if (t.numel() == groups && groups != c)
      t = t.reshape({groups, 1}).expand({groups, c / groups}).reshape({c});
    return per_channel(t, x.dim());
  };
  return {add(mul(y, per_c(in[1])), per_c(in[2])).to(x.dtype())};
}

/** RMSNormalization over dims [axis, rank) of x: y = x * inv_std * scale in x's dtype, and
 *  inv_std = 1 / sqrt(mean(x^2) + eps), kept, in the stash dtype. */
Tensors rms_norm_outputs(const Tensor& x, int64_t axis, const Tensor& scale, double eps) {
  const Tensor xs = x.to(stash_dtype(x.dtype()));
  Tensor ms = ember::mean(mul(xs, xs), trailing_dims(axis, x.dim() - axis), /*keepdim=*/true);
  Tensor inv_std = div(ones_like(ms), sqrt(add(ms, Scalar(eps))));
  return {mul(mul(xs, inv_std), scale.to(xs.dtype())).to(x.dtype()), inv_std};
}

Tensors op_rms_normalization(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const int64_t axis = wrap_axis(n, attr_int(n, "axis", -1), x.dim());
  return rms_norm_outputs(x, axis, in[1], attr_float(n, "epsilon", 1e-5));
}

// onnxruntime's contrib ops (com.microsoft; Note [Other domains than ai.onnx] in
// graph/onnx/import.cpp) -------------------------------------------------------------------------

/** onnxruntime's default epsilon of the skip layer norms. */
constexpr double kSkipNormEpsilon = 1e-12;

/** input + skip (+ bias): what the skip layer norms normalize, and their fourth output. */
Tensor skip_sum(const Tensors& in, size_t bias_input) {
  Tensor sum = add(in[0], in[1]);
  if (in.size() > bias_input && in[bias_input].defined()) sum = add(sum, in[bias_input]);
  return sum;
}

Tensors op_skip_layer_normalization(const Node& n, const Tensors& in, Device) {
  Tensor sum = skip_sum(in, 4);
  const bool stats = (n.outputs.size() > 1 && !n.outputs[1].empty()) ||
                     (n.outputs.size() > 2 && !n.outputs[2].empty());
  Tensors out = layer_norm_outputs(sum, sum.dim() - 1, in[2], in.size() > 3 ? in[3] : Tensor(),
                                   attr_float(n, "epsilon", kSkipNormEpsilon), stats);
  out.resize(3);
  out.push_back(sum);
  return out;
}

Tensors op_skip_simplified_layer_normalization(const Node& n, const Tensors& in, Device) {
  Tensor sum = skip_sum(in, 3);
  Tensors norm =
      rms_norm_outputs(sum, sum.dim() - 1, in[2], attr_float(n, "epsilon", kSkipNormEpsilon));
  // A simplified norm has no centering term: onnxruntime writes its mean output as zeros, of the
  // statistics' shape [..., 1] and dtype.
  const bool mean = n.outputs.size() > 1 && !n.outputs[1].empty();
  return {norm[0], mean ? zeros_like(norm[1]) : Tensor(), norm[1], sum};
}

Tensors op_fast_gelu(const Node&, const Tensors& in, Device) {
  const bool bias = in.size() > 1 && in[1].defined();
  return {gelu(bias ? add(in[0], in[1]) : in[0], "tanh")};
}

Tensors op_bias_gelu(const Node&, const Tensors& in, Device) {
  return {gelu(add(in[0], in[1]), "none")};
}

Tensors op_quick_gelu(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  return {mul(x, sigmoid(mul(x, Scalar(attr_float(n, "alpha", 1.702)))))};
}

Tensors op_bias_add(const Node&, const Tensors& in, Device) {
  return {add(add(in[0], in[1]), in[2])};
}

/** FusedMatMul: alpha * A' B', where transBatchA moves A's first dim behind its other batch dims
 *  ([d0, d1, ..., dn-2, dn-1] read as [d1, ..., dn-2, d0, dn-1], as onnxruntime's matmul
 *  helper does, both operands then of one rank of at least 3) and transA swaps the last two;
 *  likewise for B. */
Tensors op_fused_matmul(const Node& n, const Tensors& in, Device) {
  const bool batch_a = attr_int(n, "transBatchA", 0) != 0,
             batch_b = attr_int(n, "transBatchB", 0) != 0;
  EMBER_CHECK(!(batch_a || batch_b) || (in[0].dim() == in[1].dim() && in[0].dim() >= 3),
              "{} transBatchA and transBatchB need A and B of one rank, at least 3: got shapes {} "
              "and {}",
              label(n), in[0].sizes(), in[1].sizes());
  auto operand = [&](Tensor t, bool batch, const char* trans) {
    if (batch) {
      std::vector<int64_t> perm;
      for (int64_t d = 1; d < t.dim() - 1; ++d) perm.push_back(d);
      perm.push_back(0);
      perm.push_back(t.dim() - 1);
      t = t.permute(perm);
    }
    return attr_int(n, trans, 0) != 0 && t.dim() >= 2 ? t.transpose(-2, -1) : t;
  };
  Tensor y = matmul(operand(in[0], batch_a, "transA"), operand(in[1], batch_b, "transB"));
  const double alpha = attr_float(n, "alpha", 1.0);
  return {alpha == 1.0 ? y : mul(y, Scalar(alpha))};
}

/** The input at `i`, or an undefined tensor where it is omitted. */
Tensor optional_input(const Tensors& in, size_t i) {
  return in.size() > i ? in[i] : Tensor();
}

/** How many activation_params FusedConv's activation reads (alpha; min and max; alpha and beta). */
size_t conv_activation_params(const std::string& a) {
  return a == "LeakyRelu" ? 1 : (a == "Clip" || a == "HardSigmoid") ? 2 : 0;
}

/** FusedConv: activation(Conv(X, W, B) + Z), the activation named as the ONNX op it stands for,
 *  its parameters in activation_params. */
Tensors op_conv_activation(const Node& n, const Tensors& in, Device device) {
  Tensor y = op_conv(n, {in[0], in[1], optional_input(in, 2)}, device)[0];
  if (Tensor z = optional_input(in, 3); z.defined()) y = add(y, z);
  const std::string a = attr_string(n, "activation", "");
  const std::vector<double> p = attr_floats(n, "activation_params");
  if (a == "Relu") return {relu(y)};
  if (a == "Tanh") return {tanh(y)};
  if (a == "Sigmoid") return {sigmoid(y)};
  if (a == "LeakyRelu") return {leaky_relu(y, p[0])};
  if (a == "Clip") return {clamp(y, Scalar(p[0]), Scalar(p[1]))};
  if (a == "HardSigmoid")
    return {clamp(add(mul(y, Scalar(p[0])), Scalar(p[1])), Scalar(0), Scalar(1))};
  return {y};
}

void check_conv_activation(const Node& n) {
  const std::string a = attr_string(n, "activation", "");
  const size_t given = attr_floats(n, "activation_params").size();
  EMBER_CHECK(given >= conv_activation_params(a),
              "activation {} takes {} activation_params: got {}", a, conv_activation_params(a),
              given);
}

// Note [onnxruntime's attention ops]
// Attention (the input projected by one [D, q + k + v] weight) and MultiHeadAttention (query, key
// and value given) split the hidden dim into num_heads heads and run the core's
// scaled_dot_product_attention with a float mask that onnxruntime's CPU kernels add to the
// scaled scores: mask_filter_value (-10000) where a key is padding (a 1/0 mask [B, T] or
// [B, S, T], or lengths [B] keeping the first keys), -inf where unidirectional hides
// a later key, plus attention_bias. A row whose keys are all padding so attends as
// though none were (the mask shifts its scores alike), as onnxruntime's does, not sdpa's zeros.
// For decoding, the keys and values of earlier steps come in as a cache: Attention's past
// [2, B, N, P, H] (keys, values), MultiHeadAttention's past_key and past_value [B, N, P, H]. The
// step's own keys and values are appended to them along the sequence (T = P + L keys in all),
// and the result is the present output (present [2, B, N, T, H]; present_key, present_value),
// which the next step reads as its past; the masks then cover all T keys, and unidirectional
// lets query i see the keys up to P + i (none hidden for a single query, as onnxruntime skips
// the causal mask then, nor for the last query, whose row onnxruntime's mask leaves open: that
// differs only where the keys outnumber P + S, a unidirectional cross-attention).
// MultiHeadAttention's other forms, as ContribOperators.md defines them: key and value already
// split into heads [B, N, L, H] (a cross-attention's cached keys: no bias, no past), a packed QKV
// query [B, L, N, 3, H] (key and value omitted) and a packed KV key [B, L, N, 2, H] (value
// omitted), each the same as the unpacked tensors (their bias, if any, applied as to those).
// onnxruntime's CPU kernels have no packed forms, so its results for the unpacked tensors are their
// reference. What is left (a shared past/present buffer with past_sequence_length,
// cache_indirection for beam search, the qk output, Attention's do_rotary, the 1-d mask forms but
// lengths) is refused by name.

/** The heads of x [B, S, H * d] as [B, H, S, d]. */
Tensor split_heads(const Node& n, const Tensor& x, int64_t heads, std::string_view what) {
  EMBER_CHECK(x.dim() == 3 && x.size(2) % heads == 0,
              "{} {} must be [batch, sequence, hidden] with hidden divisible by num_heads {}: got "
              "shape {}",
              label(n), what, heads, x.sizes());
  return x.reshape({x.size(0), x.size(1), heads, x.size(2) / heads}).transpose(1, 2);
}

/** num_heads, checked. */
int64_t num_heads(const Node& n) {
  const int64_t heads = attr_int(n, "num_heads", 0);
  EMBER_CHECK(heads > 0, "{} num_heads must be positive: got {}", label(n), heads);
  return heads;
}

/** Attention of the heads qh [B, N, S, dk] over kh [B, N, T, dk] and vh [B, N, T, dv], the first
 *  `past` of the T keys a cache's, with onnxruntime's masks (Note [onnxruntime's attention
 *  ops]): [B, S, N * dv]. */
Tensor heads_attention(const Node& n, const Tensor& qh, const Tensor& kh, const Tensor& vh,
                       const Tensor& key_mask, const Tensor& attention_bias, int64_t past) {
  const int64_t B = qh.size(0), S = qh.size(2), T = kh.size(2);
  const TensorOptions opts(qh.dtype(), qh.device());
  const double filter = attr_float(n, "mask_filter_value", -10000.0);
  Tensor mask;
  if (key_mask.defined()) {
    Tensor keep;
    if (key_mask.dim() == 1 && key_mask.size(0) == B) {
      const Tensor positions = arange(T, TensorOptions(DType::Int64, qh.device()));
      keep = lt(positions.reshape({1, T}), key_mask.to(DType::Int64).reshape({B, 1}))
                 .reshape({B, 1, 1, T});
    } else if (key_mask.dim() == 2 && key_mask.sizes() == Shape({B, T})) {
      keep = ne(key_mask, Scalar(0)).reshape({B, 1, 1, T});
    } else if (key_mask.dim() == 3 && key_mask.sizes() == Shape({B, S, T})) {
      keep = ne(key_mask, Scalar(0)).reshape({B, 1, S, T});
    } else {
      throw NotImplementedError(
          fmt::format("{} a key mask of shape {} is not supported (Ember reads lengths [{}], "
                      "a 1/0 mask [{}, {}] or [{}, {}, {}])",
                      label(n), key_mask.sizes(), B, B, T, B, S, T));
    }
    mask = where(keep, zeros({}, opts), full({}, Scalar(filter), opts));
  }
  if (attr_int(n, "unidirectional", 0) != 0 && S > 1) {
    const TensorOptions longs(DType::Int64, qh.device());
    // onnxruntime masks the rows but the last (which has no later key unless the keys outnumber
    // the past and the queries, as in a cross-attention; then it sees every key).
    const Tensor rows = arange(S, longs).reshape({S, 1});
    const Tensor later = logical_and(gt(arange(T, longs).reshape({1, T}), add(rows, Scalar(past))),
                                     lt(rows, Scalar(S - 1)));
    const Tensor base = mask.defined() ? mask : zeros({1, 1, 1, T}, opts);
    mask = where(later, full({}, Scalar(-std::numeric_limits<double>::infinity()), opts), base);
  }
  if (attention_bias.defined()) {
    mask = mask.defined() ? add(mask, attention_bias) : attention_bias.to(qh.dtype());
  }
  const Attribute* scale = find_attr(n, "scale");
  std::optional<double> sc;
  if (scale != nullptr && std::get<double>(*scale) != 0) sc = std::get<double>(*scale);
  Tensor out = scaled_dot_product_attention(qh, kh, vh, mask, 0.0, /*is_causal=*/false, sc);
  return out.transpose(1, 2).reshape({B, S, -1});
}

/** `cache` [B, N, P, H] with the step's `heads` [B, N, L, H] appended along the sequence. */
Tensor append_to_cache(const Node& n, const Tensor& cache, const Tensor& heads,
                       std::string_view what) {
  EMBER_CHECK(cache.dim() == 4 && cache.size(0) == heads.size(0) &&
                  cache.size(1) == heads.size(1) && cache.size(3) == heads.size(3),
              "{} {} must be [batch, num_heads, past_sequence, head_size] = [{}, {}, P, {}]: got "
              "shape {}",
              label(n), what, heads.size(0), heads.size(1), heads.size(3), cache.sizes());
  return cat({cache.to(heads.dtype()), heads}, 2);
}

Tensors op_qkv_attention(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const int64_t heads = num_heads(n);
  Tensor qkv = matmul(x, in[1]);
  if (Tensor bias = optional_input(in, 2); bias.defined()) qkv = add(qkv, bias);
  const int64_t total = qkv.size(-1);
  std::vector<int64_t> sizes = attr_ints(n, "qkv_hidden_sizes").value_or(std::vector<int64_t>{});
  if (sizes.empty()) sizes = {total / 3, total / 3, total / 3};
  EMBER_CHECK(sizes.size() == 3 && sizes[0] == sizes[1] && sizes[0] + sizes[1] + sizes[2] == total,
              "{} qkv_hidden_sizes {} must be three sizes, q's and k's equal, summing to the "
              "weights' {} columns",
              label(n), fmt::join(sizes, ", "), total);
  const Tensor qh = split_heads(n, qkv.narrow(-1, 0, sizes[0]), heads, "query");
  Tensor kh = split_heads(n, qkv.narrow(-1, sizes[0], sizes[1]), heads, "key");
  Tensor vh = split_heads(n, qkv.narrow(-1, sizes[0] + sizes[1], sizes[2]), heads, "value");
  int64_t past_length = 0;
  if (Tensor past = optional_input(in, 4); past.defined()) {
    EMBER_CHECK(sizes[2] == sizes[0] && past.dim() == 5 && past.size(0) == 2,
                "{} past must be [2, batch, num_heads, past_sequence, head_size], with q, k and v "
                "of one hidden size: got shape {} and qkv_hidden_sizes {}",
                label(n), past.sizes(), fmt::join(sizes, ", "));
    past_length = past.size(3);
    kh = append_to_cache(n, past.select(0, 0), kh, "past's keys");
    vh = append_to_cache(n, past.select(0, 1), vh, "past's values");
  }
  Tensor y =
      heads_attention(n, qh, kh, vh, optional_input(in, 3), optional_input(in, 5), past_length);
  const bool present = n.outputs.size() > 1 && !n.outputs[1].empty();
  return {y, present ? stack({kh, vh}, 0) : Tensor()};
}

/** MultiHeadAttention's query, key and value in heads [B, N, L, H], from their plain
 *  [B, L, N * H], packed or split forms (Note [onnxruntime's attention ops]), the bias
 *  [q + k + v] added to the projected forms. */
struct HeadsQkv {
  Tensor q, k, v;
};

HeadsQkv mha_heads(const Node& n, const Tensors& in, int64_t heads) {
  const Tensor& query = in[0];
  const Tensor key = optional_input(in, 1), value = optional_input(in, 2);
  const Tensor bias = optional_input(in, 3);
  // The bias of part `part` (0 q, 1 k, 2 v) of `width` columns, after `before` columns.
  const auto biased = [&](const Tensor& t, int64_t before, int64_t width) {
    return bias.defined() ? add(t, bias.narrow(0, before, width)) : t;
  };
  const auto packed = [&](const Tensor& t, int64_t parts, std::string_view what) {
    EMBER_CHECK(t.size(2) == heads,
                "{} packed {} [batch, sequence, num_heads, {}, head_size] has {} heads, but "
                "num_heads is {}",
                label(n), what, parts, t.size(2), heads);
    std::vector<Tensor> out;
    for (int64_t p = 0; p < parts; ++p) {
      out.push_back(t.select(3, p).reshape({t.size(0), t.size(1), heads * t.size(4)}));
    }
    return out;
  };
  HeadsQkv r;
  if (query.dim() == 5) {
    EMBER_CHECK(query.size(3) == 3 && !key.defined() && !value.defined(),
                "{} a packed QKV query must be [batch, sequence, num_heads, 3, head_size], with "
                "key and value omitted: got shape {}{}",
                label(n), query.sizes(),
                key.defined() || value.defined() ? " with a key or value" : "");
    const std::vector<Tensor> qkv = packed(query, 3, "QKV");
    const int64_t d = qkv[0].size(2);
    r.q = split_heads(n, biased(qkv[0], 0, d), heads, "query");
    r.k = split_heads(n, biased(qkv[1], d, d), heads, "key");
    r.v = split_heads(n, biased(qkv[2], 2 * d, d), heads, "value");
    return r;
  }
  EMBER_CHECK(key.defined(), "{} key must be given when the query is not packed QKV", label(n));
  const int64_t dq = query.size(-1);
  r.q = split_heads(n, biased(query, 0, dq), heads, "query");
  if (key.dim() == 5) {
    EMBER_CHECK(key.size(3) == 2 && !value.defined(),
                "{} a packed KV key must be [batch, sequence, num_heads, 2, head_size], with value "
                "omitted: got shape {}{}",
                label(n), key.sizes(), value.defined() ? " with a value" : "");
    const std::vector<Tensor> kv = packed(key, 2, "KV");
    const int64_t d = kv[0].size(2);
    r.k = split_heads(n, biased(kv[0], dq, d), heads, "key");
    r.v = split_heads(n, biased(kv[1], dq + d, d), heads, "value");
    return r;
  }
  EMBER_CHECK(value.defined(), "{} value must be given with an unpacked key", label(n));
  if (key.dim() == 4) {
    // Keys and values already in heads (a cross-attention's cached ones).
    EMBER_CHECK(
        value.dim() == 4 && key.size(1) == heads && value.size(1) == heads && !bias.defined(),
        "{} key and value in heads must both be [batch, num_heads, sequence, head_size] "
        "with num_heads {} and no bias: got shapes {} and {}{}",
        label(n), heads, key.sizes(), value.sizes(), bias.defined() ? " with a bias" : "");
    r.k = key;
    r.v = value;
    return r;
  }
  const int64_t dk = key.size(-1);
  r.k = split_heads(n, biased(key, dq, dk), heads, "key");
  r.v = split_heads(
      n, bias.defined() ? add(value, bias.narrow(0, dq + dk, bias.size(0) - dq - dk)) : value,
      heads, "value");
  return r;
}

Tensors op_multi_head_attention(const Node& n, const Tensors& in, Device) {
  HeadsQkv h = mha_heads(n, in, num_heads(n));
  const Tensor past_key = optional_input(in, 6), past_value = optional_input(in, 7);
  EMBER_CHECK(past_key.defined() == past_value.defined(),
              "{} past_key and past_value come together: got only {}", label(n),
              past_key.defined() ? "past_key" : "past_value");
  int64_t past_length = 0;
  if (past_key.defined()) {
    EMBER_CHECK(in[1].dim() != 4, "{} a key already in heads takes no past_key", label(n));
    past_length = past_key.size(2);
    h.k = append_to_cache(n, past_key, h.k, "past_key");
    h.v = append_to_cache(n, past_value, h.v, "past_value");
  }
  Tensor y =
      heads_attention(n, h.q, h.k, h.v, optional_input(in, 4), optional_input(in, 5), past_length);
  const auto read = [&](size_t o) { return n.outputs.size() > o && !n.outputs[o].empty(); };
  return {y, read(1) ? h.k : Tensor(), read(2) ? h.v : Tensor()};
}

/** Refuses a node that gives input `i` (named `what`) or reads output `o`: what onnxruntime's
 *  attention ops have for decoding and Ember does not implement. */
void refuse_io(const Node& n, std::initializer_list<std::pair<size_t, const char*>> inputs,
               std::initializer_list<std::pair<size_t, const char*>> outputs) {
  for (auto [i, what] : inputs) {
    EMBER_CHECK_NOT_IMPLEMENTED(n.inputs.size() <= i || n.inputs[i].empty(),
                                "input {} ({}) is not supported (Ember reads the key/value cache "
                                "as past and present tensors, not a shared buffer)",
                                i, what);
  }
  for (auto [o, what] : outputs) {
    EMBER_CHECK_NOT_IMPLEMENTED(n.outputs.size() <= o || n.outputs[o].empty(),
                                "output {} ({}) is read, which Ember does not give", o, what);
  }
}

void check_qkv_attention(const Node& n) {
  refuse_io(n, {{6, "past_sequence_length"}}, {});
  for (const char* name : {"do_rotary", "past_present_share_buffer"}) {
    EMBER_CHECK_NOT_IMPLEMENTED(attr_int(n, name, 0) == 0, "attribute {} = {} is not supported",
                                name, attr_int(n, name, 0));
  }
}

void check_multi_head_attention(const Node& n) {
  refuse_io(n, {{8, "past_sequence_length"}, {9, "cache_indirection"}}, {{3, "qk"}});
}

// Note [Rotary embeddings]
// RoPE rotates pairs of each head's first rotary_embedding_dim (default: all) features by an angle
// of the token's position: with cos and sin the caches' rows at that position (rot / 2 values),
// a pair (a, b) becomes (a cos - b sin, b cos + a sin). The pairs are a feature and the one half
// a rotation later (a = x[i], b = x[i + rot / 2]) or, interleaved, neighbours (x[2 i],
// x[2 i + 1]); the features past rot pass through. ONNX's RotaryEmbedding (opset 23) and
// onnxruntime's com.microsoft one compute this alike and differ in form: ONNX's takes (X,
// cos_cache, sin_cache, position_ids), position_ids [B, S] optional (without it the caches are
// already [B, S, rot / 2]); onnxruntime's takes (input, position_ids, cos_cache, sin_cache),
// position_ids [B, S] or one offset [1] (positions offset + s), num_heads optional for a 3-d input
// (the head size is then the caches' width times 2), and a `scale` its kernels do not use, nor
// does Ember. The input is [B, S, N * H] (num_heads N) or [B, N, S, H].

/** x [B, S, N * H] or [B, N, S, H] rotated (Note [Rotary embeddings]) by cos and sin
 *  [B or 1, S, rot / 2]. */
Tensor rotary(const Node& n, const Tensor& x, const Tensor& cos, const Tensor& sin, int64_t heads) {
  EMBER_CHECK(x.dim() == 3 || x.dim() == 4,
              "{} input must be [batch, sequence, hidden] or [batch, num_heads, sequence, "
              "head_size]: got shape {}",
              label(n), x.sizes());
  EMBER_CHECK(x.dim() == 4 || (heads > 0 && x.size(2) % heads == 0),
              "{} a 3-d input needs num_heads dividing its hidden size: got shape {} and "
              "num_heads {}",
              label(n), x.sizes(), heads);
  // As [B, S, N, H].
  const Tensor x4 = x.dim() == 4 ? x.transpose(1, 2)
                                 : x.reshape({x.size(0), x.size(1), heads, x.size(2) / heads});
  const int64_t H = x4.size(3), rot = attr_int(n, "rotary_embedding_dim", 0) > 0
                                          ? attr_int(n, "rotary_embedding_dim", 0)
                                          : H;
  EMBER_CHECK(rot % 2 == 0 && rot <= H && cos.dim() == 3 && cos.size(-1) == rot / 2 &&
                  cos.sizes() == sin.sizes() && cos.size(1) == x4.size(1),
              "{} the rotated dims {} must be even and at most the head size {}, with cos and sin "
              "[batch, sequence, {}]: got cos {} and sin {}",
              label(n), rot, H, rot / 2, cos.sizes(), sin.sizes());
  const Tensor c = cos.unsqueeze(2).to(x.dtype()), s = sin.unsqueeze(2).to(x.dtype());
  const Tensor xr = x4.narrow(3, 0, rot);
  Tensor a, b;
  if (attr_int(n, "interleaved", 0) != 0) {
    const Tensor pairs = xr.reshape({x4.size(0), x4.size(1), x4.size(2), rot / 2, 2});
    a = pairs.select(4, 0);
    b = pairs.select(4, 1);
  } else {
    a = xr.narrow(3, 0, rot / 2);
    b = xr.narrow(3, rot / 2, rot / 2);
  }
  const Tensor ra = sub(mul(a, c), mul(b, s)), rb = add(mul(b, c), mul(a, s));
  Tensor rotated = attr_int(n, "interleaved", 0) != 0 ? stack({ra, rb}, 4).reshape(xr.sizes())
                                                      : cat({ra, rb}, 3);
  if (rot < H) rotated = cat({rotated, x4.narrow(3, rot, H - rot)}, 3);
  return x.dim() == 4 ? rotated.transpose(1, 2).contiguous() : rotated.reshape(x.sizes());
}

/** The caches' rows at `positions` [B, S] (int64): [B, S, width]. */
Tensor cache_rows(const Tensor& cache, const Tensor& positions) {
  const Tensor flat = positions.to(DType::Int64).reshape({-1});
  return index_select(cache, 0, flat).reshape({positions.size(0), positions.size(1), -1});
}

Tensors op_rotary_embedding(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  Tensor cos = in[1], sin = in[2];
  if (Tensor positions = optional_input(in, 3); positions.defined()) {
    EMBER_CHECK(positions.dim() == 2 && cos.dim() == 2,
                "{} with position_ids [batch, sequence], cos_cache and sin_cache are [positions, "
                "rot / 2]: got position_ids {} and cos_cache {}",
                label(n), positions.sizes(), cos.sizes());
    cos = cache_rows(cos, positions);
    sin = cache_rows(sin, positions);
  }
  return {rotary(n, x, cos, sin, attr_int(n, "num_heads", 0))};
}

Tensors op_contrib_rotary_embedding(const Node& n, const Tensors& in, Device device) {
  const Tensor& x = in[0];
  const Tensor& positions = in[1];
  const Tensor &cos_cache = in[2], &sin_cache = in[3];
  EMBER_CHECK(cos_cache.dim() == 2 && sin_cache.sizes() == cos_cache.sizes(),
              "{} cos_cache and sin_cache must be [max_sequence, rot / 2] alike: got {} and {}",
              label(n), cos_cache.sizes(), sin_cache.sizes());
  const int64_t S = x.dim() == 4 ? x.size(2) : x.size(1), B = x.size(0);
  Tensor rows;
  if (positions.dim() == 1 && positions.numel() == 1) {
    // One offset: the positions are offset + s for every sequence.
    const Tensor steps =
        add(arange(S, TensorOptions(DType::Int64, device)), positions.to(DType::Int64).reshape({}));
    rows = steps.reshape({1, S}).expand({B, S});
  } else {
    EMBER_CHECK(positions.dim() == 2 && positions.size(0) == B && positions.size(1) == S,
                "{} position_ids must be one offset [1] or [batch, sequence] = [{}, {}]: got "
                "shape {}",
                label(n), B, S, positions.sizes());
    rows = positions;
  }
  int64_t heads = attr_int(n, "num_heads", 0);
  if (heads == 0 && x.dim() == 3 && attr_int(n, "rotary_embedding_dim", 0) == 0) {
    const int64_t head_size = 2 * cos_cache.size(1);
    EMBER_CHECK(head_size > 0 && x.size(2) % head_size == 0,
                "{} without num_heads the head size is twice the caches' width, {}, which must "
                "divide the hidden size {}",
                label(n), head_size, x.size(2));
    heads = x.size(2) / head_size;
  }
  return {rotary(n, x, cache_rows(cos_cache, rows), cache_rows(sin_cache, rows), heads)};
}

void check_contrib_rotary_embedding(const Node& n) {
  EMBER_CHECK_NOT_IMPLEMENTED(attr_int(n, "is_packed_batching", 0) == 0,
                              "attribute is_packed_batching = {} (ragged batches) is not "
                              "supported",
                              attr_int(n, "is_packed_batching", 0));
  EMBER_CHECK(attr_int(n, "rotary_embedding_dim", 0) == 0 || attr_int(n, "num_heads", 0) > 0,
              "rotary_embedding_dim needs num_heads");
}

Tensors op_mean_variance_normalization(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  std::vector<int64_t> axes = attr_ints(n, "axes").value_or(std::vector<int64_t>{0, 2, 3});
  Shape dims;
  for (int64_t a : axes) dims.push_back(wrap_axis(n, a, x.dim()));
  // As ONNX's function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9).
  Tensor mean = ember::mean(x, dims, /*keepdim=*/true);
  Tensor var = sub(ember::mean(mul(x, x), dims, /*keepdim=*/true), mul(mean, mean));
  return {div(sub(x, mean), add(sqrt(var), Scalar(1e-9)))};
}

Tensors op_lp_normalization(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const int64_t p = attr_int(n, "p", 2);
  EMBER_CHECK(p == 1 || p == 2, "{} p must be 1 or 2: got {}", label(n), p);
  const int64_t axis = wrap_axis(n, attr_int(n, "axis", -1), x.dim());
  // A zero vector stays zero (ONNX's reference), not 0 / 0.
  Tensor nrm = norm(x, static_cast<double>(p), {axis}, /*keepdim=*/true);
  return {div(x, where(eq(nrm, Scalar(0)), ones_like(nrm), nrm))};
}

Tensors op_lrn(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const int64_t size = attr_int(n, "size", 0);
  EMBER_CHECK(size > 0, "{} size must be positive: got {}", label(n), size);
  EMBER_CHECK(x.dim() >= 3, "{} input must be [N, C, ...]: got shape {}", label(n), x.sizes());
  const double alpha = attr_float(n, "alpha", 1e-4), beta = attr_float(n, "beta", 0.75),
               bias = attr_float(n, "bias", 1.0);
  // The sum of squares over channels [c - floor((size-1)/2), c + ceil((size-1)/2)].
  Tensor sq = mul(x, x).reshape({x.size(0), x.size(1), -1});
  Tensor padded = pad(sq.transpose(1, 2), {(size - 1) / 2, size / 2}, "constant", 0.0).contiguous();
  Tensor windows = padded.as_strided({padded.size(0), padded.size(1), x.size(1), size},
                                     {padded.stride(0), padded.stride(1), 1, 1});
  Tensor sums = ember::sum(windows, {3}).transpose(1, 2).reshape(x.sizes());
  return {div(x, pow(add(mul(sums, Scalar(alpha / static_cast<double>(size))), Scalar(bias)),
                     Scalar(beta)))};
}

Tensors op_mish(const Node&, const Tensors& in, Device) {
  return {mish(in[0])};
}

Tensors op_swish(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const double alpha = attr_float(n, "alpha", 1.0);
  if (alpha == 1.0) return {silu(x)};
  return {mul(x, sigmoid(mul(x, Scalar(alpha))))};
}

Tensors op_shrink(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const double bias = attr_float(n, "bias", 0.0), lambd = attr_float(n, "lambd", 0.5);
  Tensor y = where(lt(x, Scalar(-lambd)), add(x, Scalar(bias)),
                   where(gt(x, Scalar(lambd)), sub(x, Scalar(bias)), zeros_like(x)));
  return {y.dtype() == x.dtype() ? y : y.to(x.dtype())};
}

/** A [n] int64 range shaped to lie along `axis` of a rank-`rank` tensor. */
Tensor range_along(int64_t count, int64_t axis, int64_t rank, Device device) {
  Shape shape(static_cast<size_t>(rank), 1);
  shape[static_cast<size_t>(axis)] = count;
  return arange(count, TensorOptions(DType::Int64, device)).reshape(shape);
}

Tensors op_hardmax(const Node& n, const Tensors& in, Device device) {
  const Tensor& x = in[0];
  const int64_t axis = wrap_axis(n, attr_int(n, "axis", -1), x.dim());
  Tensor idx = argmax(x, axis, /*keepdim=*/true);
  return {eq(range_along(x.size(axis), axis, x.dim(), device), idx).to(x.dtype())};
}

Tensors op_one_hot(const Node& n, const Tensors& in, Device device) {
  const Tensor& indices = in[0];
  const int64_t depth = static_cast<int64_t>(host_scalar(n, in[1], "depth").to_double());
  EMBER_CHECK(depth > 0, "{} depth must be positive: got {}", label(n), depth);
  EMBER_CHECK(in[2].numel() == 2, "{} values must be [off, on]: got shape {}", label(n),
              in[2].sizes());
  const int64_t r = indices.dim() + 1;
  const int64_t axis = wrap_axis(n, attr_int(n, "axis", -1), r);
  Tensor idx = wrap_indices(indices.to(DType::Int64), depth).unsqueeze(axis);
  Tensor mask = eq(range_along(depth, axis, r, device), idx);
  Tensor values = in[2].reshape({2});
  return {where(mask, values.select(0, 1), values.select(0, 0))};
}

Tensors op_non_zero(const Node&, const Tensors& in, Device) {
  return {nonzero(in[0].dim() == 0 ? in[0].reshape({1}) : in[0]).t().contiguous()};
}

Tensors op_eye_like(const Node& n, const Tensors& in, Device device) {
  const Tensor& x = in[0];
  EMBER_CHECK(x.dim() == 2, "{} input must be 2-d: got shape {}", label(n), x.sizes());
  const DType dtype = find_attr(n, "dtype") ? parse_dtype(attr_string(n, "dtype", "")) : x.dtype();
  Tensor rows = arange(x.size(0), TensorOptions(DType::Int64, device)).unsqueeze(1);
  Tensor cols = arange(x.size(1), TensorOptions(DType::Int64, device)).unsqueeze(0);
  return {eq(sub(cols, rows), Scalar(attr_int(n, "k", 0))).to(dtype)};
}

Tensors op_depth_to_space(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const int64_t b = attr_int(n, "blocksize", 0);
  EMBER_CHECK(x.dim() == 4 && b > 0 && x.size(1) % (b * b) == 0,
              "{} input [N, C, H, W] with C divisible by blocksize^2: got shape {} and blocksize "
              "{}",
              label(n), x.sizes(), b);
  const int64_t N = x.size(0), C = x.size(1) / (b * b), H = x.size(2), W = x.size(3);
  const std::string mode = attr_string(n, "mode", "DCR");
  EMBER_CHECK(mode == "DCR" || mode == "CRD", "{} unknown mode '{}' (expected DCR or CRD)",
              label(n), mode);
  Tensor y = mode == "DCR" ? x.reshape({N, b, b, C, H, W}).permute({0, 3, 4, 1, 5, 2})
                           : x.reshape({N, C, b, b, H, W}).permute({0, 1, 4, 2, 5, 3});
  return {y.reshape({N, C, H * b, W * b})};
}

Tensors op_space_to_depth(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const int64_t b = attr_int(n, "blocksize", 0);
  EMBER_CHECK(x.dim() == 4 && b > 0 && x.size(2) % b == 0 && x.size(3) % b == 0,
              "{} input [N, C, H, W] with H and W divisible by blocksize: got shape {} and "
              "blocksize {}",
              label(n), x.sizes(), b);
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2) / b, W = x.size(3) / b;
  const std::string mode = attr_string(n, "mode", "DCR");
  EMBER_CHECK(mode == "DCR" || mode == "CRD", "{} unknown mode '{}' (expected DCR or CRD)",
              label(n), mode);
  Tensor v = x.reshape({N, C, H, b, W, b});
  Tensor y = mode == "DCR" ? v.permute({0, 3, 5, 1, 2, 4}) : v.permute({0, 1, 3, 5, 2, 4});
  return {y.reshape({N, C * b * b, H, W})};
}

// Spatial transformers ---------------------------------------------------------------------------

Tensors op_grid_sample(const Node& n, const Tensors& in, Device) {
  // Version 16 spells the modes bilinear and bicubic, version 20 on linear and cubic.
  const std::string mode = attr_string(n, "mode", "linear");
  const std::string_view core_mode = mode == "linear" || mode == "bilinear" ? "bilinear"
                                     : mode == "cubic" || mode == "bicubic" ? "bicubic"
                                                                            : "nearest";
  return {grid_sample(in[0], in[1], core_mode, attr_string(n, "padding_mode", "zeros"),
                      attr_int(n, "align_corners", 0) != 0)};
}

Tensors op_affine_grid(const Node& n, const Tensors& in, Device) {
  return {affine_grid(in[0], host_ints(in[1]), attr_int(n, "align_corners", 0) != 0)};
}

Reduction reduction_attr(const Node& n) {
  const std::string r = attr_string(n, "reduction", "mean");
  EMBER_CHECK(r == "mean" || r == "sum" || r == "none",
              "{} unknown reduction '{}' (expected mean, sum or none)", label(n), r);
  return r == "mean" ? Reduction::Mean : r == "sum" ? Reduction::Sum : Reduction::None;
}

/** ignore_index, or a class no target can name when the node has none. */
int64_t ignore_index_attr(const Node& n) {
  return attr_int(n, "ignore_index", std::numeric_limits<int64_t>::min());
}

Tensors op_negative_log_likelihood_loss(const Node& n, const Tensors& in, Device) {
  const Tensor weight = in.size() > 2 ? in[2] : Tensor();
  return {nll_loss(in[0], in[1].to(DType::Int64), weight, ignore_index_attr(n), reduction_attr(n))};
}

Tensors op_softmax_cross_entropy_loss(const Node& n, const Tensors& in, Device) {
  const Tensor weight = in.size() > 2 ? in[2] : Tensor();
  Tensor log_prob = log_softmax(in[0], 1);
  return {
      nll_loss(log_prob, in[1].to(DType::Int64), weight, ignore_index_attr(n), reduction_attr(n)),
      log_prob};
}

// Shapes ----------------------------------------------------------------------------------------

Tensors op_identity(const Node&, const Tensors& in, Device) {
  return {in[0]};
}

// Note [Dropout's mask in a graph]
// In training mode (the third input true) with a ratio above 0, Dropout zeroes each element with
// probability ratio and scales the rest by 1 / (1 - ratio). A node with a `seed` draws the mask
// ONNX's reference draws: NumPy's legacy RandomState seeded with it, whose uniform doubles are
// MT19937's (std::mt19937 seeded alike gives the same words) two 32-bit words at a time, an
// element kept where its double is >= ratio; so a seeded model gives the same output on every
// run and device, and ONNX's training node tests pass exactly. Without a seed the mask is the
// core's dropout (of ones), drawn from the default generator as any dropout is. The mask output
// is the kept elements, true also where ratio is 0 or training mode is off.

/** The keep mask of `sizes` that NumPy's RandomState(seed).uniform(0, 1, sizes) >= ratio gives
 *  (Note [Dropout's mask in a graph]), on the host. */
Tensor seeded_keep_mask(const Shape& sizes, int64_t seed, double ratio) {
  Tensor mask = empty(sizes, TensorOptions(DType::Bool));
  bool* p = mask.data_ptr<bool>();
  std::mt19937 words(static_cast<uint32_t>(seed));
  for (int64_t i = 0; i < mask.numel(); ++i) {
    const uint32_t a = words() >> 5, b = words() >> 6;
    const double u = (a * 67108864.0 + b) / 9007199254740992.0;
    p[i] = u >= ratio;
  }
  return mask;
}

/** Version 10's ratio attribute comes without inputs beside the data (it never trains). */
void check_dropout(const Node& n) {
  EMBER_CHECK(find_attr(n, "ratio") == nullptr || n.inputs.size() == 1,
              "attribute ratio (Dropout before version 12) and {} inputs: the ratio and "
              "training_mode inputs came in version 12, when the attribute went",
              n.inputs.size());
}

Tensors op_dropout(const Node& n, const Tensors& in, Device device) {
  const Tensor& x = in[0];
  const bool training =
      in.size() > 2 && in[2].defined() && host_scalar(n, in[2], "training_mode").to_double() != 0;
  const double ratio =
      in.size() > 1 && in[1].defined() ? host_scalar(n, in[1], "ratio").to_double() : 0.5;
  if (!training || ratio == 0) {
    return {x, ones(x.sizes(), TensorOptions(DType::Bool, device))};
  }
  EMBER_CHECK(ratio > 0 && ratio < 1, "{} ratio must be in [0, 1) in training mode: got {}",
              label(n), ratio);
  Tensor keep;
  if (const Attribute* seed = find_attr(n, "seed")) {
    keep = seeded_keep_mask(x.sizes(), std::get<int64_t>(*seed), ratio).to(device);
  } else {
    keep = ne(dropout(ones(x.sizes(), TensorOptions(DType::Float32, device)), ratio,
                      /*training=*/true),
              Scalar(0));
  }
  Tensor y = mul(mul(x, keep.to(x.dtype())), Scalar(1.0 / (1.0 - ratio)));
  return {y.to(x.dtype()), keep};
}

// Note [Random ops in a graph]
// ONNX's RandomUniform and RandomNormal (of a `shape`), their Like forms (of the input's shape and,
// by default, dtype) and Bernoulli (1 with the input's probability) draw from the core's
// generators: without a `seed` from the device's default one, as the core's rand and randn do;
// with one from a generator seeded with it, so that a seeded node gives the same values at every
// run. ONNX leaves the stream to the runtime ("may not produce the same values in different
// implementations, even if a seed is specified"): Ember's values are neither onnxruntime's nor
// ONNX's reference's, only their distribution, so the node tests of these ops (which compare
// values) cannot pass and they are not claimed. The draws are in float32 (float64 for a float64
// output) and cast to the output's dtype. The optimizer neither folds nor merges such a node
// (OpSchema::draws).

/** The dtype attribute, when given. */
std::optional<DType> dtype_attr(const Node& n) {
  const Attribute* a = find_attr(n, "dtype");
  if (a == nullptr) return std::nullopt;
  return parse_dtype(std::get<std::string>(*a));
}

void check_random(const Node& n) {
  const bool like = n.op != "random_uniform" && n.op != "random_normal";
  EMBER_CHECK(like || find_attr(n, "shape") != nullptr, "attribute shape (ints) is required");
  if (const std::optional<DType> dt = dtype_attr(n)) {
    EMBER_CHECK_TYPE(n.op == "bernoulli" || is_floating(*dt),
                     "dtype must be a floating type for {}: got {}", n.op, *dt);
  }
}

Tensors op_random(const Node& n, const Tensors& in, Device device) {
  const bool like = !in.empty();
  const DType dtype =
      dtype_attr(n).value_or(like && n.op != "bernoulli" ? in[0].dtype() : DType::Float32);
  const DType out_dtype = n.op == "bernoulli" && !dtype_attr(n) ? in[0].dtype() : dtype;
  EMBER_CHECK_TYPE(!like || n.op != "bernoulli" || is_floating(in[0].dtype()),
                   "{} the probabilities must be floating: got {}", label(n), in[0].dtype());
  Shape sizes;
  if (like) {
    sizes = in[0].sizes();
  } else {
    for (int64_t d : attr_ints(n, "shape").value_or(std::vector<int64_t>{})) sizes.push_back(d);
  }
  const DType draw = out_dtype == DType::Float64 ? DType::Float64 : DType::Float32;
  const TensorOptions opts(draw, device);
  std::optional<Generator> seeded;
  if (const Attribute* seed = find_attr(n, "seed")) {
    seeded.emplace(static_cast<uint64_t>(static_cast<int64_t>(std::get<double>(*seed))));
  }
  Generator* gen = seeded ? &*seeded : nullptr;
  Tensor y;
  if (n.op == "bernoulli") {
    y = lt(rand(sizes, opts, gen), in[0].to(draw));
  } else if (n.op == "random_uniform" || n.op == "random_uniform_like") {
    const double low = attr_float(n, "low", 0.0), high = attr_float(n, "high", 1.0);
    y = add(mul(rand(sizes, opts, gen), Scalar(high - low)), Scalar(low));
  } else {
    const double mean = attr_float(n, "mean", 0.0), scale = attr_float(n, "scale", 1.0);
    y = add(mul(randn(sizes, opts, gen), Scalar(scale)), Scalar(mean));
  }
  return {y.to(out_dtype)};
}

Tensors op_flatten(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const int64_t r = x.dim();
  int64_t axis = attr_int(n, "axis", 1);
  EMBER_CHECK_INDEX(axis >= -r && axis <= r, "{} axis {} is out of range for rank {}", label(n),
                    axis, r);
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= x.size(i);
  return {x.reshape({outer, inner})};
}

Tensors op_reshape(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  std::vector<int64_t> shape = host_ints(in[1]);
  if (attr_int(n, "allowzero", 0) == 0) {
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 0) {
        EMBER_CHECK_INDEX(static_cast<int64_t>(i) < x.dim(),
                          "{} shape {} copies dim {} (a 0) of an input of shape {}", label(n),
                          shape, i, x.sizes());
        shape[i] = x.size(static_cast<int64_t>(i));
      }
    }
  }
  return {x.reshape(shape)};
}

Tensors op_transpose(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  std::vector<int64_t> perm;
  if (auto p = attr_ints(n, "perm")) {
    perm = *p;
  } else {
    for (int64_t i = x.dim() - 1; i >= 0; --i) perm.push_back(i);
  }
  return {x.permute(perm)};
}

Tensors op_concat(const Node& n, const Tensors& in, Device) {
  EMBER_CHECK(find_attr(n, "axis"), "{} attribute axis is required", label(n));
  return {cat(in, wrap_axis(n, attr_int(n, "axis", 0), in[0].dim()))};
}

Tensors op_split(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const int64_t axis = wrap_axis(n, attr_int(n, "axis", 0), x.dim());
  const auto outputs = static_cast<int64_t>(n.outputs.size());
  const int64_t len = x.size(axis);
  std::vector<int64_t> sizes;
  if (in.size() > 1 && in[1].defined()) {
    sizes = host_ints(in[1]);
  } else if (const Attribute* a = find_attr(n, "num_outputs")) {
    const int64_t parts = std::get<int64_t>(*a);
    EMBER_CHECK(parts > 0, "{} num_outputs must be positive: got {}", label(n), parts);
    const int64_t chunk = (len + parts - 1) / parts;
    for (int64_t start = 0; start < len; start += chunk)
      sizes.push_back(std::min(chunk, len - start));
  } else {
    EMBER_CHECK(len % outputs == 0, "{} dim {} of size {} does not split into {} equal parts",
                label(n), axis, len, outputs);
    sizes.assign(static_cast<size_t>(outputs), len / outputs);
  }
  EMBER_CHECK(static_cast<int64_t>(sizes.size()) == outputs,
              "{} splits into {} parts {} but the node has {} outputs", label(n), sizes.size(),
              sizes, outputs);
  return split(x, sizes, axis);
}

std::vector<int64_t> axes_input(const Tensors& in, size_t i) {
  if (in.size() > i && in[i].defined()) return host_ints(in[i]);
  return {};
}

Tensors op_squeeze(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  if (!(in.size() > 1 && in[1].defined())) return {x.squeeze()};
  std::vector<int64_t> axes = axes_input(in, 1);
  for (int64_t& a : axes) {
    a = wrap_axis(n, a, x.dim());
    EMBER_CHECK(x.size(a) == 1, "{} dim {} of shape {} is not 1 and cannot be squeezed", label(n),
                a, x.sizes());
  }
  std::sort(axes.rbegin(), axes.rend());
  Tensor y = x;
  for (int64_t a : axes) y = y.squeeze(a);
  return {y};
}

Tensors op_unsqueeze(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  // Unsqueeze 11 takes axes as an attribute, 13 on as an input.
  const bool attr = find_attr(n, "axes") != nullptr, input = in.size() > 1 && in[1].defined();
  EMBER_CHECK(attr != input,
              "{} axes must be given once, as the input (or, at opset 11, the attribute): got {}",
              label(n), attr ? "both" : "neither");
  std::vector<int64_t> axes = attr ? *attr_ints(n, "axes") : axes_input(in, 1);
  const int64_t r = x.dim() + static_cast<int64_t>(axes.size());
  for (int64_t& a : axes) a = wrap_axis(n, a, r);
  std::sort(axes.begin(), axes.end());
  EMBER_CHECK(std::adjacent_find(axes.begin(), axes.end()) == axes.end(), "{} axes {} repeat a dim",
              label(n), axes);
  Tensor y = x;
  for (int64_t a : axes) y = y.unsqueeze(a);
  return {y};
}

Tensor int64_vector(const std::vector<int64_t>& v, Device device) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, TensorOptions(DType::Int64));
  std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
  return t.to(device);
}

Tensors op_shape(const Node& n, const Tensors& in, Device device) {
  const Tensor& x = in[0];
  const int64_t r = x.dim();
  auto clampd = [r](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t{0}, r); };
  const int64_t start = clampd(attr_int(n, "start", 0)), end = clampd(attr_int(n, "end", r));
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(x.size(i));
  return {int64_vector(dims, device)};
}

Tensors op_size(const Node&, const Tensors& in, Device device) {
  return {full({}, Scalar(in[0].numel()), TensorOptions(DType::Int64, device))};
}

Tensors op_gather(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const int64_t axis = wrap_axis(n, attr_int(n, "axis", 0), x.dim());
  const Tensor idx = wrap_indices(in[1], x.size(axis));
  Tensor y = index_select(x, axis, idx.reshape({-1}));
  Shape shape;
  for (int64_t i = 0; i < axis; ++i) shape.push_back(x.size(i));
  for (int64_t s : idx.sizes()) shape.push_back(s);
  for (int64_t i = axis + 1; i < x.dim(); ++i) shape.push_back(x.size(i));
  return {y.reshape(shape)};
}

Tensors op_gather_elements(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const int64_t axis = wrap_axis(n, attr_int(n, "axis", 0), x.dim());
  return {gather(x, axis, wrap_indices(in[1], x.size(axis)))};
}

/** Row-major linear indices into dims [first, first + k) of `shape` from index tuples
 *  idx [..., k] (negative entries count from the end). */
Tensor linear_index(const Node& n, const Tensor& idx, const Shape& shape, int64_t first) {
  const int64_t k = idx.size(-1);
  EMBER_CHECK(first + k <= static_cast<int64_t>(shape.size()),
              "{} index tuples of {} entries do not fit data of shape {}", label(n), k, shape);
  Tensor i64 = idx.to(DType::Int64);
  Shape lead;
  for (int64_t i = 0; i + 1 < idx.dim(); ++i) lead.push_back(idx.size(i));
  Tensor lin = zeros(lead, TensorOptions(DType::Int64, idx.device()));
  for (int64_t j = 0; j < k; ++j) {
    const int64_t dim = shape[static_cast<size_t>(first + j)];
    Tensor c = i64.select(-1, j);
    c = where(lt(c, Scalar(0)), add(c, Scalar(dim)), c);
    EMBER_CHECK_INDEX(!any(logical_or(lt(c, Scalar(0)), ge(c, Scalar(dim)))).item<bool>(),
                      "{} an index is out of range for dim {} of size {}", label(n), first + j,
                      dim);
    lin = add(mul(lin, Scalar(dim)), c);
  }
  return lin;
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

Tensors op_gather_nd(const Node& n, const Tensors& in, Device) {
  const Tensor& data = in[0];
  const Tensor& indices = in[1];
  const int64_t b = attr_int(n, "batch_dims", 0);
  EMBER_CHECK(indices.dim() >= 1 && b >= 0 && b < indices.dim() && b < data.dim(),
              "{} batch_dims {} does not fit data {} and indices {}", label(n), b, data.sizes(),
              indices.sizes());
  const int64_t k = indices.size(-1);
  const Shape& ds = data.sizes();
  const auto bs = static_cast<size_t>(b), ks = static_cast<size_t>(b + k);
  EMBER_CHECK(b + k <= data.dim(),
              "{} index tuples of {} entries after {} batch dims do not fit "
              "data of shape {}",
              label(n), k, b, ds);
  const int64_t B = product(ds, 0, bs), M = product(ds, bs, ks), R = product(ds, ks, ds.size());
  Tensor lin = linear_index(n, indices, ds, b).reshape({B, -1});
  const int64_t L = lin.size(1);
  Tensor flat = data.reshape({B, M, R});
  Tensor out = gather(flat, 1, lin.unsqueeze(2).expand({B, L, R}));
  Shape shape;
  for (int64_t i = 0; i + 1 < indices.dim(); ++i) shape.push_back(indices.size(i));
  for (size_t i = ks; i < ds.size(); ++i) shape.push_back(ds[i]);
  return {out.reshape(shape)};
}

/** ONNX's scatter reduction as the core's: none and add as scatter and scatter_add, mul, max and
 *  min as scatter_reduce's prod, amax and amin over the data and every update (each index's
 *  updates applied in turn, as ONNX's reference does). */
Tensor scatter_with(const std::string& reduction, const Tensor& data, int64_t dim,
                    const Tensor& idx, const Tensor& upd) {
  if (reduction == "add") return scatter_add(data, dim, idx, upd);
  if (reduction == "none") return scatter(data, dim, idx, upd);
  const std::string_view reduce = reduction == "mul"   ? "prod"
                                  : reduction == "max" ? "amax"
                                                       : "amin";
  return scatter_reduce(data, dim, idx, upd, reduce, /*include_self=*/true);
}

Tensors op_scatter_nd(const Node& n, const Tensors& in, Device) {
  const Tensor& data = in[0];
  const std::string reduction = attr_string(n, "reduction", "none");
  const Shape& ds = data.sizes();
  const int64_t k = in[1].size(-1);
  const auto ks = static_cast<size_t>(k);
  const int64_t M = product(ds, 0, ks), R = product(ds, ks, ds.size());
  Tensor lin = linear_index(n, in[1], ds, 0).reshape({-1});
  const int64_t L = lin.size(0);
  Tensor idx = lin.unsqueeze(1).expand({L, R});
  Tensor upd = in[2].reshape({L, R});
  Tensor flat = data.reshape({M, R});
  return {scatter_with(reduction, flat, 0, idx, upd).reshape(ds)};
}

Tensors op_scatter_elements(const Node& n, const Tensors& in, Device) {
  const Tensor& data = in[0];
  const int64_t axis = wrap_axis(n, attr_int(n, "axis", 0), data.dim());
  Tensor idx = wrap_indices(in[1], data.size(axis));
  return {scatter_with(attr_string(n, "reduction", "none"), data, axis, idx, in[2])};
}

Tensors op_slice(const Node& n, const Tensors& in, Device device) {
  const Tensor& x = in[0];
  const std::vector<int64_t> starts = host_ints(in[1]), ends = host_ints(in[2]);
  std::vector<int64_t> axes = axes_input(in, 3), steps = axes_input(in, 4);
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  EMBER_CHECK(
      ends.size() == starts.size() && axes.size() == starts.size() && steps.size() == starts.size(),
      "{} starts, ends, axes and steps must have one value per sliced axis: got {}, {}, "
      "{} and {}",
      label(n), starts.size(), ends.size(), axes.size(), steps.size());
  Tensor y = x;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = wrap_axis(n, axes[i], x.dim());
    const int64_t dim = x.size(axis), step = steps[i];
    EMBER_CHECK(step != 0, "{} step 0 on axis {}", label(n), axis);
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start = start < -dim ? 0 : start + dim;
    if (end < 0) end = end < -dim ? -1 : end + dim;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      y = y.slice(axis, start, std::max(start, end), step);
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      const int64_t count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
      std::vector<int64_t> idx;
      for (int64_t j = 0; j < count; ++j) idx.push_back(start + j * step);
      y = index_select(y, axis, int64_vector(idx, device));
    }
  }
  return {y};
}

Shape broadcast_shapes(const Node& n, const Shape& a, const std::vector<int64_t>& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    EMBER_CHECK(x == y || x == 1 || y == 1, "{} shapes {} and {} do not broadcast", label(n), a, b);
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Tensors op_expand(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  return {x.expand(broadcast_shapes(n, x.sizes(), host_ints(in[1])))};
}

Tensors op_tile(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const std::vector<int64_t> repeats = host_ints(in[1]);
  EMBER_CHECK(static_cast<int64_t>(repeats.size()) == x.dim(),
              "{} repeats {} must have one value per dim of shape {}", label(n), repeats,
              x.sizes());
  Shape view, expanded, result;
  for (int64_t i = 0; i < x.dim(); ++i) {
    EMBER_CHECK(repeats[i] >= 0, "{} repeats must not be negative: got {}", label(n), repeats);
    view.push_back(1);
    view.push_back(x.size(i));
    expanded.push_back(repeats[i]);
    expanded.push_back(x.size(i));
    result.push_back(repeats[i] * x.size(i));
  }
  return {x.reshape(view).expand(expanded).contiguous().reshape(result)};
}

DType dtype_attr(const Node& n, std::string_view name) {
  const Attribute* a = find_attr(n, name);
  EMBER_CHECK(a != nullptr, "{} attribute {} is required", label(n), name);
  return parse_dtype(std::get<std::string>(*a));
}

Tensors op_cast(const Node& n, const Tensors& in, Device) {
  return {in[0].to(dtype_attr(n, "to"))};
}

Tensors op_cast_like(const Node&, const Tensors& in, Device) {
  return {in[0].to(in[1].dtype())};
}

Tensors op_constant(const Node& n, const Tensors&, Device device) {
  const Attribute* a = find_attr(n, "value");
  EMBER_CHECK(a != nullptr, "{} attribute value is required", label(n));
  return {std::get<Tensor>(*a).to(device)};
}

Tensors op_constant_of_shape(const Node& n, const Tensors& in, Device device) {
  const std::vector<int64_t> shape = host_ints(in[0]);
  Tensor value = zeros({1}, TensorOptions(DType::Float32));
  if (const Attribute* a = find_attr(n, "value")) value = std::get<Tensor>(*a);
  EMBER_CHECK(value.numel() == 1, "{} value must hold one element: got shape {}", label(n),
              value.sizes());
  return {full(shape, value.reshape({}).item_scalar(), TensorOptions(value.dtype(), device))};
}

Tensors op_range(const Node& n, const Tensors& in, Device device) {
  const DType dt = in[0].dtype();
  const Scalar start = host_scalar(n, in[0], "start"), limit = host_scalar(n, in[1], "limit"),
               delta = host_scalar(n, in[2], "delta");
  EMBER_CHECK(delta.to_double() != 0, "{} delta must not be 0", label(n));
  if (is_integral(dt)) {
    const int64_t s = start.to_int(), l = limit.to_int(), d = delta.to_int();
    const int64_t count = std::max<int64_t>(0, (l - s + d + (d > 0 ? -1 : 1)) / d);
    Tensor r = arange(count, TensorOptions(DType::Int64, device));
    return {add(mul(r, Scalar(d)), Scalar(s)).to(dt)};
  }
  const double s = start.to_double(), l = limit.to_double(), d = delta.to_double();
  const auto count = static_cast<int64_t>(std::max(0.0, std::ceil((l - s) / d)));
  // ONNX defines the values as start + i * delta, computed in the input's dtype.
  Tensor r = arange(count, TensorOptions(DType::Int64, device)).to(dt);
  return {add(mul(r, full({}, delta, TensorOptions(dt, device))),
              full({}, start, TensorOptions(dt, device)))};
}

template <bool Prod>
Tensors cumulative(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const int64_t axis = wrap_axis(n, host_scalar(n, in[1], "axis").to_int(), x.dim());
  const bool rev = attr_int(n, "reverse", 0) != 0;
  Tensor src = rev ? reversed(x, axis) : x;
  if (attr_int(n, "exclusive", 0) != 0 && x.size(axis) > 0) {
    // Exclusive: the running result of the elements before, the identity first.
    Tensor first = Prod ? ones_like(src.narrow(axis, 0, 1)) : zeros_like(src.narrow(axis, 0, 1));
    src = cat({first, src.narrow(axis, 0, x.size(axis) - 1)}, axis);
  }
  Tensor y = Prod ? cumprod(src, axis) : cumsum(src, axis);
  if (rev) y = reversed(y, axis);
  return {y.dtype() == x.dtype() ? y : y.to(x.dtype())};
}

Tensors op_topk(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const int64_t axis = wrap_axis(n, attr_int(n, "axis", -1), x.dim());
  const int64_t k = host_scalar(n, in[1], "k").to_int();
  EMBER_CHECK(k >= 0 && k <= x.size(axis), "{} k {} is out of range for dim {} of size {}",
              label(n), k, axis, x.size(axis));
  auto [values, indices] = topk(x, k, axis, attr_int(n, "largest", 1) != 0,
                                /*sorted=*/true);
  return {values, indices};
}

Tensors op_pad(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const std::vector<int64_t> pads = host_ints(in[1]);
  double value = 0;
  if (in.size() > 2 && in[2].defined() && in[2].numel() > 0) {
    value = host_scalar(n, in[2], "constant_value").to_double();
  }
  std::vector<int64_t> axes = axes_input(in, 3);
  if (axes.empty()) {
    axes.resize(static_cast<size_t>(x.dim()));
    std::iota(axes.begin(), axes.end(), 0);
  }
  const size_t na = axes.size();
  EMBER_CHECK(pads.size() == 2 * na, "{} pads must have 2 values per padded axis ({}): got {}",
              label(n), 2 * na, pads.size());
  std::vector<int64_t> begin(static_cast<size_t>(x.dim()), 0), end(begin);
  for (size_t i = 0; i < na; ++i) {
    const int64_t a = wrap_axis(n, axes[i], x.dim());
    begin[static_cast<size_t>(a)] = pads[i];
    end[static_cast<size_t>(a)] = pads[i + na];
  }
  const std::string mode = attr_string(n, "mode", "constant");
  std::string_view ember_mode;
  if (mode == "constant")
    ember_mode = "constant";
  else if (mode == "reflect")
    ember_mode = "reflect";
  else if (mode == "edge")
    ember_mode = "replicate";
  else if (mode == "wrap")
    ember_mode = "circular";
  EMBER_CHECK(!ember_mode.empty(),
              "{} unknown mode '{}' (expected constant, reflect, edge or "
              "wrap)",
              label(n), mode);
  Shape p;
  for (int64_t d = x.dim() - 1; d >= 0; --d) {
    p.push_back(begin[static_cast<size_t>(d)]);
    p.push_back(end[static_cast<size_t>(d)]);
  }
  return {pad(x, p, ember_mode, value)};
}

Tensors op_trilu(const Node& n, const Tensors& in, Device) {
  const int64_t k = in.size() > 1 && in[1].defined() ? host_scalar(n, in[1], "k").to_int() : 0;
  return {attr_int(n, "upper", 1) != 0 ? triu(in[0], k) : tril(in[0], k)};
}

// Reductions ------------------------------------------------------------------------------------

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

template <Reduce R>
Tensors reduce(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  std::vector<int64_t> axes;
  if (auto a = attr_ints(n, "axes")) axes = *a;
  if (in.size() > 1 && in[1].defined()) axes = host_ints(in[1]);
  if (axes.empty() && attr_int(n, "noop_with_empty_axes", 0) != 0) return {x};
  const bool keep = attr_int(n, "keepdims", 1) != 0;
  Shape dims;
  for (int64_t a : axes) dims.push_back(wrap_axis(n, a, x.dim()));
  if (dims.empty()) {
    for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
  }
  bool empty_reduce = false;
  for (int64_t d : dims) empty_reduce = empty_reduce || x.size(d) == 0;
  Tensor y;
  if ((R == Reduce::Max || R == Reduce::Min) && empty_reduce) {
    // No element: the reduction's identity, as ONNX defines it.
    Shape out;
    for (int64_t d = 0; d < x.dim(); ++d) {
      const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
      if (!reduced)
        out.push_back(x.size(d));
      else if (keep)
        out.push_back(1);
    }
    const double inf = std::numeric_limits<double>::infinity();
    const double v = R == Reduce::Max ? lowest_of(x.dtype()) : is_floating(x.dtype()) ? inf : 0;
    return {full(out, Scalar(v), TensorOptions(x.dtype(), x.device()))};
  }
  const Tensor xb = x.dtype() == DType::Bool ? x.to(DType::UInt8) : x;
  switch (R) {
    case Reduce::Sum:
      y = ember::sum(xb, dims, keep);
      break;
    case Reduce::Mean:
      y = ember::mean(xb, dims, keep);
      break;
    case Reduce::Max:
      y = amax(xb, dims, keep);
      break;
    case Reduce::Min:
      y = amin(xb, dims, keep);
      break;
    case Reduce::Prod:
      y = prod(xb, dims, keep);
      break;
    case Reduce::L1:
      y = ember::sum(abs(xb), dims, keep);
      break;
    case Reduce::L2:
      y = sqrt(ember::sum(mul(xb, xb), dims, keep));
      break;
    case Reduce::SumSquare:
      y = ember::sum(mul(xb, xb), dims, keep);
      break;
    case Reduce::LogSum:
      y = log(ember::sum(xb, dims, keep));
      break;
    case Reduce::LogSumExp:
      y = logsumexp(xb, dims, keep);
      break;
  }
  return {y.dtype() == x.dtype() ? y : y.to(x.dtype())};
}

template <bool Max>
Tensors arg_reduce(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const int64_t axis = wrap_axis(n, attr_int(n, "axis", 0), x.dim());
  const bool keep = attr_int(n, "keepdims", 1) != 0;
  const Tensor xb = x.dtype() == DType::Bool ? x.to(DType::UInt8) : x;
  if (attr_int(n, "select_last_index", 0) != 0) {
    Tensor i =
        Max ? argmax(reversed(xb, axis), axis, keep) : argmin(reversed(xb, axis), axis, keep);
    return {sub(full({}, Scalar(x.size(axis) - 1), TensorOptions(DType::Int64, x.device())), i)};
  }
  return {Max ? argmax(xb, axis, keep) : argmin(xb, axis, keep)};
}

// Recurrent layers ------------------------------------------------------------------------------

// Note [ONNX's recurrent ops as steps of core ops]
// LSTM, GRU and RNN are ONNX's layers, not PyTorch's: gates in another order (i, o, f, c for the
// LSTM; z, r, h for the GRU), a choice of activations per gate, peepholes, a clip on the gates'
// inputs, the GRU's linear_before_reset = 0 (PyTorch's GRU is linear_before_reset = 1) and a
// length per sequence. So the graph ops do not call the core's rnn_layer: one matmul projects the
// whole sequence of each direction, then every step is a matmul with the recurrent weight and
// elementwise core ops, so every backend runs them. A batch entry past its sequence length keeps
// its state and outputs zeros; the reverse direction walks each sequence from its own last step,
// by reversing it within its length (an index that is its own inverse, applied again to the
// outputs). An activation's alpha and beta are taken from activation_alpha and activation_beta in
// order by the activations that have one (as onnxruntime reads them), else the ONNX op's default.

enum class Cell { LSTM, GRU, RNN };

/** An activation ONNX's recurrent ops accept, and how many of alpha, beta it takes. */
struct RnnActivationSpec {
  std::string_view name;
  int params;
  double alpha, beta;
};

constexpr RnnActivationSpec kRnnActivations[] = {
    {"Relu", 0, 0, 0},         {"Tanh", 0, 0, 0},
    {"Sigmoid", 0, 0, 0},      {"Affine", 2, 1, 0},
    {"LeakyRelu", 1, 0.01, 0}, {"ThresholdedRelu", 1, 1, 0},
    {"ScaledTanh", 2, 1, 1},   {"HardSigmoid", 2, 0.2, 0.5},
    {"Elu", 1, 1, 0},          {"Softsign", 0, 0, 0},
    {"Softplus", 0, 0, 0}};

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

const RnnActivationSpec* find_rnn_activation(std::string_view name) {
  for (const RnnActivationSpec& a : kRnnActivations) {
    if (same_name(a.name, name)) return &a;
  }
  return nullptr;
}

/** One activation of a recurrent op, with its parameters. */
struct RnnActivation {
  const RnnActivationSpec* spec;
  double alpha, beta;
};

constexpr int64_t rnn_gates(Cell c) {
  return c == Cell::LSTM ? 4 : c == Cell::GRU ? 3 : 1;
}

constexpr size_t rnn_activations_per_direction(Cell c) {
  return c == Cell::LSTM ? 3 : c == Cell::GRU ? 2 : 1;
}

int64_t rnn_directions(const Node& n) {
  return attr_string(n, "direction", "forward") == "bidirectional" ? 2 : 1;
}

/** The node's activations, per_direction for each direction, with their alpha and beta. */
template <Cell C>
std::vector<RnnActivation> rnn_activations(const Node& n) {
  const size_t per = rnn_activations_per_direction(C);
  const auto dirs = static_cast<size_t>(rnn_directions(n));
  std::vector<std::string> names;
  if (const Attribute* a = find_attr(n, "activations"))
    names = std::get<std::vector<std::string>>(*a);
  if (names.empty()) {
    names = C == Cell::LSTM  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
            : C == Cell::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                             : std::vector<std::string>{"Tanh"};
  }
  EMBER_CHECK(names.size() == per || names.size() == per * dirs,
              "attribute activations must list {} activations per direction ({} for {} "
              "direction(s)): got {} ({})",
              per, per * dirs, dirs, names.size(), fmt::join(names, ", "));
  std::vector<double> alphas, betas;
  if (const Attribute* a = find_attr(n, "activation_alpha"))
    alphas = std::get<std::vector<double>>(*a);
  if (const Attribute* a = find_attr(n, "activation_beta"))
    betas = std::get<std::vector<double>>(*a);
  size_t next_alpha = 0, next_beta = 0;
  std::vector<RnnActivation> acts;
  for (const std::string& name : names) {
    const RnnActivationSpec* spec = find_rnn_activation(name);
    if (spec == nullptr) {
      std::vector<std::string_view> known;
      for (const RnnActivationSpec& s : kRnnActivations) known.push_back(s.name);
      throw NotImplementedError(
          fmt::format("attribute activations names '{}', which Ember does not implement (the "
                      "activations are: {})",
                      name, fmt::join(known, ", ")));
    }
    RnnActivation act{spec, spec->alpha, spec->beta};
    if (spec->params >= 1 && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (spec->params >= 2 && next_beta < betas.size()) act.beta = betas[next_beta++];
    acts.push_back(act);
  }
  EMBER_CHECK(next_alpha == alphas.size() && next_beta == betas.size(),
              "attributes activation_alpha and activation_beta hold {} and {} values, but the "
              "activations ({}) take {} and {}",
              alphas.size(), betas.size(), fmt::join(names, ", "), next_alpha, next_beta);
  if (acts.size() < per * dirs) {
    const std::vector<RnnActivation> first = acts;  // one list for both directions
    acts.insert(acts.end(), first.begin(), first.end());
  }
  return acts;
}

template <Cell C>
void check_recurrent(const Node& n) {
  rnn_activations<C>(n);
  const int64_t layout = attr_int(n, "layout", 0);
  EMBER_CHECK(layout == 0 || layout == 1, "attribute layout must be 0 or 1: got {}", layout);
  if (const Attribute* a = find_attr(n, "clip")) {
    EMBER_CHECK(std::get<double>(*a) > 0, "attribute clip must be positive: got {}",
                std::get<double>(*a));
  }
  if (const Attribute* a = find_attr(n, "hidden_size")) {
    EMBER_CHECK(std::get<int64_t>(*a) > 0, "attribute hidden_size must be positive: got {}",
                std::get<int64_t>(*a));
  }
}

Tensor rnn_activate(const RnnActivation& a, const Tensor& x) {
  const std::string_view name = a.spec->name;
  if (name == "Sigmoid") return sigmoid(x);
  if (name == "Tanh") return tanh(x);
  if (name == "Relu") return relu(x);
  if (name == "Affine") return add(mul(x, Scalar(a.alpha)), Scalar(a.beta));
  if (name == "LeakyRelu") return leaky_relu(x, a.alpha);
  if (name == "ThresholdedRelu") return where(gt(x, Scalar(a.alpha)), x, zeros_like(x));
  if (name == "ScaledTanh") return mul(tanh(mul(x, Scalar(a.beta))), Scalar(a.alpha));
  if (name == "HardSigmoid") {
    return clamp(add(mul(x, Scalar(a.alpha)), Scalar(a.beta)), Scalar(0), Scalar(1));
  }
  if (name == "Elu") return elu(x, a.alpha);
  if (name == "Softsign") return softsign(x);
  EMBER_ASSERT(name == "Softplus");
  return add(clamp(x, Scalar(0), std::nullopt), log1p(exp(neg(abs(x)))));
}

/** x [T, B, ...] with each batch entry's first lens[b] steps reversed (its own inverse). */
Tensor reverse_within(const Tensor& x, const std::vector<int64_t>& lens) {
  const int64_t steps = x.size(0), batch = x.size(1);
  Tensor idx = empty({steps, batch}, TensorOptions(DType::Int64));
  int64_t* p = idx.data_ptr<int64_t>();
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = lens[static_cast<size_t>(b)];
      p[t * batch + b] = t < len ? len - 1 - t : t;
    }
  }
  Shape index_shape{steps, batch};
  for (int64_t d = 2; d < x.dim(); ++d) index_shape.push_back(1);
  idx = idx.to(x.device()).reshape(index_shape).expand(x.sizes()).contiguous();
  return gather(x, 0, idx);
}

template <Cell C>
Tensors op_recurrent(const Node& n, const Tensors& in, Device device) {
  constexpr int64_t G = rnn_gates(C);
  const char* gate_names = C == Cell::LSTM ? "i, o, f, c" : C == Cell::GRU ? "z, r, h" : "h";
  const bool batch_first = attr_int(n, "layout", 0) != 0;
  auto arg = [&](size_t i) { return in.size() > i && in[i].defined() ? in[i] : Tensor(); };
  EMBER_CHECK(in[0].dim() == 3, "{} X must be 3-d ({}): got shape {}", label(n),
              batch_first ? "[batch, seq, input]" : "[seq, batch, input]", in[0].sizes());
  const Tensor x = batch_first ? in[0].transpose(0, 1) : in[0];  // [T, B, I]
  const Tensor& w = in[1];
  const Tensor& r = in[2];
  const int64_t dirs = rnn_directions(n), steps = x.size(0), batch = x.size(1);
  EMBER_CHECK(r.dim() == 3 && r.size(0) == dirs && r.size(1) % G == 0,
              "{} R must be [{}, {} * hidden_size, hidden_size] (gates {}): got shape {}", label(n),
              dirs, G, gate_names, r.sizes());
  const int64_t hidden = r.size(2);
  EMBER_CHECK(r.size(1) == G * hidden && attr_int(n, "hidden_size", hidden) == hidden,
              "{} R has shape {}, which does not fit hidden_size {} (expected [{}, {}, {}])",
              label(n), r.sizes(), attr_int(n, "hidden_size", hidden), dirs, G * hidden, hidden);
  EMBER_CHECK(
      w.dim() == 3 && w.size(0) == dirs && w.size(1) == G * hidden && w.size(2) == x.size(2),
      "{} W must be [{}, {}, {}] (directions, {} gates of hidden_size {}, input size): "
      "got shape {}",
      label(n), dirs, G * hidden, x.size(2), G, hidden, w.sizes());
  const Tensor b = arg(3);
  EMBER_CHECK(!b.defined() || b.sizes() == Shape({dirs, 2 * G * hidden}),
              "{} B must be [{}, {}] (W's then R's biases): got shape {}", label(n), dirs,
              2 * G * hidden, b.sizes());
  std::vector<int64_t> lens;
  bool masked = false;
  if (const Tensor l = arg(4); l.defined()) {
    lens = host_ints(l);
    EMBER_CHECK(l.dim() == 1 && static_cast<int64_t>(lens.size()) == batch,
                "{} sequence_lens must be [{}] (one length per batch entry): got shape {}",
                label(n), batch, l.sizes());
    for (int64_t len : lens) {
      EMBER_CHECK(len >= 0 && len <= steps,
                  "{} sequence_lens holds {}, outside 0 to the sequence length {}", label(n), len,
                  steps);
      masked = masked || len < steps;
    }
  }
  auto state = [&](size_t i, const char* what) {
    Tensor s = arg(i);
    if (!s.defined()) return zeros({dirs, batch, hidden}, TensorOptions(x.dtype(), device));
    const Shape want = batch_first ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden};
    EMBER_CHECK(s.sizes() == want, "{} {} must be {}: got shape {}", label(n), what, want,
                s.sizes());
    return batch_first ? s.transpose(0, 1) : s;
  };
  const Tensor h0 = state(5, "initial_h");
  const Tensor c0 = C == Cell::LSTM ? state(6, "initial_c") : Tensor();
  const Tensor p = C == Cell::LSTM ? arg(7) : Tensor();
  EMBER_CHECK(!p.defined() || p.sizes() == Shape({dirs, 3 * hidden}),
              "{} P must be [{}, {}] (peepholes i, o, f): got shape {}", label(n), dirs, 3 * hidden,
              p.sizes());
  const std::vector<RnnActivation> acts = rnn_activations<C>(n);
  const size_t per = rnn_activations_per_direction(C);
  const Attribute* clip_attr = find_attr(n, "clip");
  auto clip = [&](const Tensor& t) {
    if (clip_attr == nullptr) return t;
    const double c = std::get<double>(*clip_attr);
    return clamp(t, Scalar(-c), Scalar(c));
  };
  const bool input_forget = attr_int(n, "input_forget", 0) != 0;
  const bool linear_before_reset = attr_int(n, "linear_before_reset", 0) != 0;
  // mask[t] [B, 1]: whether step t is inside batch entry b's sequence.
  Tensor mask;
  if (masked) {
    Tensor lens_t = empty({batch}, TensorOptions(DType::Int64));
    std::copy(lens.begin(), lens.end(), lens_t.data_ptr<int64_t>());
    mask = lt(arange(0, steps, 1, TensorOptions(DType::Int64, device)).reshape({steps, 1, 1}),
              lens_t.to(device).reshape({1, batch, 1}));
  }
  const bool reverse_only = attr_string(n, "direction", "forward") == "reverse";
  std::vector<Tensor> ys, hs, cs;
  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = reverse_only || d == 1;
    const std::vector<RnnActivation> act(acts.begin() + static_cast<int64_t>(per * d),
                                         acts.begin() + static_cast<int64_t>(per * (d + 1)));
    Tensor xs = x;
    if (reverse) xs = masked ? reverse_within(x, lens) : reversed(x, 0);
    Tensor proj = matmul(xs, w.select(0, d).transpose(0, 1));  // [T, B, G H]
    Tensor rt = r.select(0, d).transpose(0, 1);                // [H, G H]
    Tensor wb, rb;
    if (b.defined()) {
      wb = b.select(0, d).narrow(0, 0, G * hidden);
      rb = b.select(0, d).narrow(0, G * hidden, G * hidden);
      proj = add(proj, C == Cell::GRU ? wb : add(wb, rb));
    }
    auto gate = [&](const Tensor& t, int64_t k) { return t.narrow(-1, k * hidden, hidden); };
    Tensor h = h0.select(0, d), c = C == Cell::LSTM ? c0.select(0, d) : Tensor();
    std::vector<Tensor> steps_out;
    for (int64_t t = 0; t < steps; ++t) {
      const Tensor px = proj.select(0, t);
      Tensor h_new, c_new;
      if constexpr (C == Cell::RNN) {
        h_new = rnn_activate(act[0], clip(add(px, matmul(h, rt))));
      } else if constexpr (C == Cell::LSTM) {
        const Tensor g = add(px, matmul(h, rt));
        Tensor gi = gate(g, 0), go = gate(g, 1), gf = gate(g, 2), gc = gate(g, 3);
        if (p.defined()) {
          gi = add(gi, mul(p.select(0, d).narrow(0, 0, hidden), c));
          gf = add(gf, mul(p.select(0, d).narrow(0, 2 * hidden, hidden), c));
        }
        const Tensor i = rnn_activate(act[0], clip(gi));
        const Tensor f = input_forget ? sub(ones_like(i), i) : rnn_activate(act[0], clip(gf));
        c_new = add(mul(f, c), mul(i, rnn_activate(act[1], clip(gc))));
        if (p.defined()) go = add(go, mul(p.select(0, d).narrow(0, hidden, hidden), c_new));
        h_new = mul(rnn_activate(act[0], clip(go)), rnn_activate(act[2], c_new));
      } else {
        const Tensor rz = r.select(0, d).narrow(0, 0, 2 * hidden).transpose(0, 1);
        const Tensor rh = r.select(0, d).narrow(0, 2 * hidden, hidden).transpose(0, 1);
        Tensor hzr = matmul(h, rz);
        if (rb.defined()) hzr = add(hzr, rb.narrow(0, 0, 2 * hidden));
        const Tensor z = rnn_activate(act[0], clip(add(gate(px, 0), gate(hzr, 0))));
        const Tensor rg = rnn_activate(act[0], clip(add(gate(px, 1), gate(hzr, 1))));
        Tensor hh;
        if (linear_before_reset) {
          hh = matmul(h, rh);
          if (rb.defined()) hh = add(hh, rb.narrow(0, 2 * hidden, hidden));
          hh = mul(rg, hh);
        } else {
          hh = matmul(mul(rg, h), rh);
          if (rb.defined()) hh = add(hh, rb.narrow(0, 2 * hidden, hidden));
        }
        const Tensor cand = rnn_activate(act[1], clip(add(gate(px, 2), hh)));
        h_new = add(mul(sub(ones_like(z), z), cand), mul(z, h));
      }
      Tensor y = h_new;
      if (masked) {
        const Tensor m = mask.select(0, t);
        h_new = where(m, h_new, h);
        if (C == Cell::LSTM) c_new = where(m, c_new, c);
        y = where(m, y, zeros_like(y));
      }
      steps_out.push_back(y);
      h = h_new;
      c = c_new;
    }
    Tensor y =
        steps ? stack(steps_out, 0) : zeros({0, batch, hidden}, TensorOptions(x.dtype(), device));
    if (reverse) y = masked ? reverse_within(y, lens) : reversed(y, 0);
    ys.push_back(y);
    hs.push_back(h);
    if (C == Cell::LSTM) cs.push_back(c);
  }
  Tensor y = stack(ys, 1);    // [T, D, B, H]
  Tensor y_h = stack(hs, 0);  // [D, B, H]
  Tensor y_c = C == Cell::LSTM ? stack(cs, 0) : Tensor();
  if (batch_first) {
    y = y.permute({2, 0, 1, 3});
    y_h = y_h.transpose(0, 1);
    if (y_c.defined()) y_c = y_c.transpose(0, 1);
  }
  if (C == Cell::LSTM) return {y, y_h, y_c};
  return {y, y_h};
}

// Resize ----------------------------------------------------------------------------------------

// Note [Resize as taps along each axis]
// ONNX's Resize is separable: each resized axis is resampled in turn, every output position o
// taking a weighted sum of n input positions (its taps) along that axis. The positions and
// weights depend only on the axis' sizes, scale and the attributes, so they are computed on the
// host, as ONNX's reference implementation computes them (the source coordinate x of o by
// coordinate_transformation_mode, the n taps nearest to x, preferring the lower ones, clamped to
// the input as edge padding, weights by mode: nearest picks one tap by nearest_mode, linear two,
// cubic four, and with antialias a filter stretched by 1 / scale when downsampling). On the
// device an axis is one index_select of all taps, a multiply by the weights and a sum over the
// taps; nearest is an index_select alone, exact for every dtype. Integer inputs are resampled
// in float32 and rounded back, saturating. tf_crop_and_resize gives extrapolation_value where
// x falls outside the input on any axis.

struct ResizeAxis {
  std::vector<int64_t> taps;    // [out, n] input positions, clamped into the input
  std::vector<double> weights;  // [out, n]
  std::vector<bool> outside;    // [out] (tf_crop_and_resize): x outside the input
  int64_t n = 0;
};

std::vector<double> resize_weights(const std::string& mode, const std::string& nearest_mode,
                                   bool antialias, double a, double ratio, double scale) {
  if (mode == "nearest") {
    bool upper = true;  // ratio 1: x is an integer, the upper of the two taps is x itself
    if (ratio != 1.0) {
      if (nearest_mode == "round_prefer_floor")
        upper = ratio > 0.5;
      else if (nearest_mode == "round_prefer_ceil")
        upper = ratio >= 0.5;
      else
        upper = nearest_mode == "ceil";
    }
    return {upper ? 0.0 : 1.0, upper ? 1.0 : 0.0};
  }
  std::vector<double> w;
  if (mode == "linear" && !antialias) return {1 - ratio, ratio};
  if (mode == "cubic" && !antialias) {
    const double r1 = ratio + 1, q = 1 - ratio, q1 = q + 1;
    return {((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a,
            ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1, ((a + 2) * q - (a + 3)) * q * q + 1,
            ((a * q1 - 5 * a) * q1 + 8 * a) * q1 - 4 * a};
  }
  const double s = std::min(scale, 1.0);
  if (mode == "linear") {
    const auto start = static_cast<int64_t>(std::floor(-1 / s) + 1);
    for (int64_t i = start; i < start + 2 - 2 * start; ++i) {
      w.push_back(std::clamp(1 - std::abs((static_cast<double>(i) - ratio) * s), 0.0, 1.0));
    }
  } else {
    const auto start = static_cast<int64_t>(std::floor(-2 / s) + 1);
    for (int64_t i = start; i < 2 - start; ++i) {
      const double x = std::abs(s * (static_cast<double>(i) - ratio));
      w.push_back(x <= 1  ? ((a + 2) * x - (a + 3)) * x * x + 1
                  : x < 2 ? ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
                          : 0.0);
    }
  }
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  for (double& v : w) v /= total;
  return w;
}

ResizeAxis resize_axis(const Node& n, int64_t in, int64_t out, double scale, double roi_start,
                       double roi_end) {
  const std::string ctm = attr_string(n, "coordinate_transformation_mode", "half_pixel");
  const std::string mode = attr_string(n, "mode", "nearest");
  const std::string nearest_mode = attr_string(n, "nearest_mode", "round_prefer_floor");
  const bool antialias = attr_int(n, "antialias", 0) != 0 && mode != "nearest";
  const double a = attr_float(n, "cubic_coeff_a", -0.75);
  const bool exclude_outside = attr_int(n, "exclude_outside", 0) != 0;
  const double in_d = static_cast<double>(in), out_w = scale * in_d;
  ResizeAxis r;
  for (int64_t o = 0; o < out; ++o) {
    const auto y = static_cast<double>(o);
    double x = 0;
    if (ctm == "align_corners") {
      x = out_w == 1 ? 0 : y * (in_d - 1) / (out_w - 1);
    } else if (ctm == "asymmetric") {
      x = y / scale;
    } else if (ctm == "tf_half_pixel_for_nn") {
      x = (y + 0.5) / scale;
    } else if (ctm == "tf_crop_and_resize") {
      x = out_w == 1 ? (roi_end - roi_start) * (in_d - 1) / 2
                     : y * (roi_end - roi_start) * (in_d - 1) / (out_w - 1);
      x += roi_start * (in_d - 1);
      r.outside.push_back(x < 0 || x > in_d - 1);
    } else if (ctm == "pytorch_half_pixel") {
      x = out_w == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
    } else if (ctm == "half_pixel_symmetric") {
      const double offset = in_d / 2 * (1 - static_cast<double>(out) / out_w);
      x = offset + (y + 0.5) / scale - 0.5;
    } else {
      x = (y + 0.5) / scale - 0.5;  // half_pixel
    }
    const double fl = std::floor(x);
    const double ratio = x == fl ? 1.0 : x - fl;
    std::vector<double> w = resize_weights(mode, nearest_mode, antialias, a, ratio, scale);
    const auto taps = static_cast<int64_t>(w.size());
    if (r.n == 0) r.n = taps;
    EMBER_ASSERT(r.n == taps);
    // The taps nearest to x, the lower ones first on a tie (ONNX's reference picks them so).
    const int64_t pad = (taps + 1) / 2;
    const double xp = x + static_cast<double>(pad);
    const double p = std::floor(xp), frac = xp - p;
    int64_t offset = 0;
    if (taps % 2 == 0) {
      offset = frac == 0 ? -(taps / 2) : -(taps / 2) + 1;
    } else {
      offset = frac <= 0.5 ? -((taps - 1) / 2) : -((taps - 1) / 2) + 1;
    }
    const int64_t start = static_cast<int64_t>(p) + offset - pad;
    if (exclude_outside) {
      double total = 0;
      for (int64_t k = 0; k < taps; ++k) {
        if (start + k < 0 || start + k >= in) w[static_cast<size_t>(k)] = 0;
        total += w[static_cast<size_t>(k)];
      }
      for (double& v : w) v /= total == 0 ? 1 : total;
    }
    for (int64_t k = 0; k < taps; ++k) {
      r.taps.push_back(std::clamp<int64_t>(start + k, 0, in - 1));
      r.weights.push_back(w[static_cast<size_t>(k)]);
    }
  }
  return r;
}

void check_resize(const Node& n) {
  const std::string mode = attr_string(n, "mode", "nearest");
  const std::string ctm = attr_string(n, "coordinate_transformation_mode", "half_pixel");
  EMBER_CHECK(!(ctm == "tf_half_pixel_for_nn" && mode != "nearest"),
              "attribute coordinate_transformation_mode='tf_half_pixel_for_nn' is for mode "
              "nearest only: got mode '{}'",
              mode);
  if (const auto axes = attr_ints(n, "axes")) {
    std::vector<int64_t> sorted = *axes;
    std::sort(sorted.begin(), sorted.end());
    EMBER_CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(),
                "attribute axes names an axis twice: [{}]", fmt::join(*axes, ", "));
  }
}

Tensors op_resize(const Node& n, const Tensors& in, Device device) {
  const Tensor& x = in[0];
  const int64_t rank = x.dim();
  auto given = [&](size_t i) { return in.size() > i && in[i].defined() && in[i].numel() > 0; };
  EMBER_CHECK(given(2) != given(3), "{} exactly one of scales and sizes must be given: got {}",
              label(n), given(2) ? "both" : "neither");
  std::vector<int64_t> axes;
  if (const auto a = attr_ints(n, "axes")) {
    for (int64_t ax : *a) {
      const int64_t w = wrap_axis(n, ax, rank);
      EMBER_CHECK(std::find(axes.begin(), axes.end(), w) == axes.end(),
                  "{} axes names axis {} twice: [{}]", label(n), w, fmt::join(*a, ", "));
      axes.push_back(w);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const size_t na = axes.size();
  std::vector<double> scale(static_cast<size_t>(rank), 1.0);
  std::vector<int64_t> out(x.sizes().begin(), x.sizes().end());
  if (given(2)) {
    const Tensor s = in[2].to(Device::cpu()).to(DType::Float64).contiguous();
    EMBER_CHECK(static_cast<size_t>(s.numel()) == na,
                "{} scales must hold one value per resized axis ({}): got {}", label(n), na,
                s.numel());
    for (size_t i = 0; i < na; ++i) {
      const double v = s.data_ptr<double>()[i];
      EMBER_CHECK(v > 0, "{} scales must be positive: got {}", label(n), v);
      const auto a = static_cast<size_t>(axes[i]);
      scale[a] = v;
      out[a] = static_cast<int64_t>(v * static_cast<double>(x.size(axes[i])));
    }
  } else {
    const std::vector<int64_t> sizes = host_ints(in[3]);
    EMBER_CHECK(sizes.size() == na, "{} sizes must hold one value per resized axis ({}): got {}",
                label(n), na, sizes.size());
    for (size_t i = 0; i < na; ++i) {
      const auto a = static_cast<size_t>(axes[i]);
      EMBER_CHECK(sizes[i] >= 0, "{} sizes must be non-negative: got {}", label(n),
                  fmt::join(sizes, ", "));
      EMBER_CHECK(x.size(axes[i]) > 0, "{} cannot resize axis {} of size 0 to size {}", label(n),
                  axes[i], sizes[i]);
      scale[a] = static_cast<double>(sizes[i]) / static_cast<double>(x.size(axes[i]));
      out[a] = sizes[i];
    }
    const std::string policy = attr_string(n, "keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch") {
      double s = scale[static_cast<size_t>(axes[0])];
      for (int64_t a : axes) {
        const double v = scale[static_cast<size_t>(a)];
        s = policy == "not_larger" ? std::min(s, v) : std::max(s, v);
      }
      for (int64_t a : axes) {
        scale[static_cast<size_t>(a)] = s;
        out[static_cast<size_t>(a)] =
            static_cast<int64_t>(s * static_cast<double>(x.size(a)) + 0.5);
      }
    }
  }
  const std::string mode = attr_string(n, "mode", "nearest");
  const bool crop =
      attr_string(n, "coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize";
  std::vector<double> roi;
  if (crop) {
    EMBER_CHECK(in.size() > 1 && in[1].defined() && in[1].numel() > 0,
                "{} coordinate_transformation_mode tf_crop_and_resize needs the roi input",
                label(n));
    const Tensor r = in[1].to(Device::cpu()).to(DType::Float64).contiguous();
    EMBER_CHECK(static_cast<size_t>(r.numel()) == 2 * na,
                "{} roi must hold 2 values per resized axis ({}): got {}", label(n), 2 * na,
                r.numel());
    roi.assign(r.data_ptr<double>(), r.data_ptr<double>() + r.numel());
  }
  const double extrapolation = attr_float(n, "extrapolation_value", 0.0);
  const DType dtype = x.dtype();
  const bool integral = !is_floating(dtype);
  EMBER_CHECK_TYPE(mode == "nearest" || dtype != DType::Bool,
                   "{} mode {} cannot resample bool: use mode nearest", label(n), mode);
  Tensor y = x;
  if (mode != "nearest" && (integral || dtype == DType::Float16 || dtype == DType::BFloat16)) {
    y = y.to(DType::Float32);
  }
  for (size_t i = 0; i < na; ++i) {
    const int64_t a = axes[i];
    const auto au = static_cast<size_t>(a);
    const double r0 = crop ? roi[i] : 0.0, r1 = crop ? roi[i + na] : 1.0;
    if (std::abs(scale[au] - 1) <= 1e-9 && out[au] == x.size(a) && r0 == 0 && r1 == 1) continue;
    EMBER_CHECK(x.size(a) > 0 || out[au] == 0, "{} cannot resize axis {} of size 0 to size {}",
                label(n), a, out[au]);
    const ResizeAxis ra = resize_axis(n, x.size(a), out[au], scale[au], r0, r1);
    const int64_t o = out[au];
    if (mode == "nearest") {
      std::vector<int64_t> pick;
      for (int64_t k = 0; k < o; ++k) {
        for (int64_t t = 0; t < ra.n; ++t) {
          const auto at = static_cast<size_t>(k * ra.n + t);
          if (ra.weights[at] == 1.0) pick.push_back(ra.taps[at]);
        }
      }
      EMBER_ASSERT(static_cast<int64_t>(pick.size()) == o);
      y = index_select(y, a, from_vector(pick, {o}, TensorOptions(DType::Int64, device)));
    } else {
      const Tensor taps = from_vector(ra.taps, {o * ra.n}, TensorOptions(DType::Int64, device));
      Shape split = y.sizes();
      split[au] = ra.n;
      split.insert(au, o);
      Shape wshape{o, ra.n};
      for (int64_t d = a + 1; d < rank; ++d) wshape.push_back(1);
      const Tensor w = from_vector(ra.weights, wshape, TensorOptions(y.dtype(), device));
      y = ember::sum(mul(index_select(y, a, taps).reshape(split), w), {a + 1}, false);
    }
    if (!ra.outside.empty()) {
      std::vector<uint8_t> outside(ra.outside.begin(), ra.outside.end());
      Shape mshape{o};
      for (int64_t d = a + 1; d < rank; ++d) mshape.push_back(1);
      const Tensor m = from_vector(outside, mshape, TensorOptions(DType::Bool, device));
      y = where(m, full({}, Scalar(extrapolation), TensorOptions(y.dtype(), device)), y);
    }
  }
  if (y.dtype() != dtype) {
    if (integral) {
      y = clamp(round(y), Scalar(lowest_of(dtype)), Scalar(highest_of(dtype)));
    }
    y = y.to(dtype);
  }
  return {y};
}

// Control flow ----------------------------------------------------------------------------------

const Graph& subgraph(const Node& n, std::string_view name) {
  const Attribute* a = find_attr(n, name);
  EMBER_CHECK(a != nullptr, "{} attribute {} (a graph) is required", label(n), name);
  return *std::get<std::shared_ptr<const Graph>>(*a);
}

/** The feeds of `g`'s outer values: the node's inputs from `first` on are `names`, by position
 *  (so a pass that renames a value in the enclosing graph leaves them right). */
std::map<std::string, Tensor> outer_feeds(const Tensors& in, size_t first,
                                          const std::vector<std::string>& names, const Graph& g) {
  std::map<std::string, Tensor> feeds;
  for (size_t k = 0; k < names.size(); ++k) {
    if (std::find(g.outer().begin(), g.outer().end(), names[k]) != g.outer().end()) {
      feeds[names[k]] = in[first + k];
    }
  }
  return feeds;
}

void check_if(const Node& n) {
  for (std::string_view branch : {"then_branch", "else_branch"}) {
    const Attribute* a = find_attr(n, branch);
    EMBER_CHECK(a != nullptr, "attribute {} (a graph) is required", branch);
    const Graph& g = *std::get<std::shared_ptr<const Graph>>(*a);
    EMBER_CHECK(g.inputs().empty() && g.outputs().size() == n.outputs.size(),
                "attribute {} must take no inputs and give the node's {} outputs: it takes {} "
                "and gives {}",
                branch, n.outputs.size(), g.inputs().size(), g.outputs().size());
  }
  const size_t outer = outer_values(n).size();
  EMBER_CHECK(n.inputs.size() == 1 + outer,
              "the node must take cond and the {} outer values its branches read: it takes {} "
              "inputs",
              outer, n.inputs.size());
}

Tensors op_if(const Node& n, const Tensors& in, Device device) {
  const bool cond = host_scalar(n, in[0], "cond").to_double() != 0;
  const Graph& branch = subgraph(n, cond ? "then_branch" : "else_branch");
  return branch.run_ordered(outer_feeds(in, 1, outer_values(n), branch), device);
}

void check_loop(const Node& n) {
  const Attribute* a = find_attr(n, "body");
  EMBER_CHECK(a != nullptr, "attribute body (a graph) is required");
  const Graph& body = *std::get<std::shared_ptr<const Graph>>(*a);
  EMBER_CHECK(body.inputs().size() >= 2 && body.outputs().size() + 1 >= body.inputs().size(),
              "attribute body must take the iteration number, cond and the loop-carried values, "
              "and give cond, the loop-carried values and the scan outputs: it takes {} inputs "
              "and gives {} outputs",
              body.inputs().size(), body.outputs().size());
  const size_t carried = body.inputs().size() - 2;
  EMBER_CHECK(n.inputs.size() == 2 + carried + body.outer().size() &&
                  n.outputs.size() <= body.outputs().size() - 1,
              "the node must take M, cond and the body's {} loop-carried values, and give at "
              "most the {} loop-carried values and scan outputs: it takes {} inputs and gives {} "
              "outputs",
              carried, body.outputs().size() - 1, n.inputs.size() - body.outer().size(),
              n.outputs.size());
  for (size_t i = 2; i < 2 + carried; ++i) {
    EMBER_CHECK(!n.inputs[i].empty(), "loop-carried value {} is required but omitted", i - 2);
  }
}

Tensors op_loop(const Node& n, const Tensors& in, Device device) {
  const Graph& body = subgraph(n, "body");
  const size_t carried = body.inputs().size() - 2;
  const size_t scans = body.outputs().size() - 1 - carried;
  const bool has_trip = in[0].defined(), has_cond = in[1].defined();
  EMBER_CHECK(has_trip || has_cond,
              "{} neither M nor cond is given, so the loop would never end (give M, or cond)",
              label(n));
  const int64_t trip =
      has_trip ? host_scalar(n, in[0], "M").to_int() : std::numeric_limits<int64_t>::max();
  Tensor cond = has_cond ? in[1] : full({}, Scalar(1), TensorOptions(DType::Bool, device));
  bool go = host_scalar(n, cond, "cond").to_double() != 0;
  std::vector<Tensor> values(in.begin() + 2, in.begin() + 2 + static_cast<int64_t>(carried));
  std::vector<std::vector<Tensor>> scanned(scans);
  std::map<std::string, Tensor> feeds = outer_feeds(in, 2 + carried, outer_values(n), body);
  for (int64_t i = 0; i < trip && go; ++i) {
    feeds[body.inputs()[0].name] = full({}, Scalar(i), TensorOptions(DType::Int64, device));
    feeds[body.inputs()[1].name] = cond;
    for (size_t k = 0; k < carried; ++k) feeds[body.inputs()[2 + k].name] = values[k];
    std::vector<Tensor> outs = body.run_ordered(feeds, device);
    if (has_cond) {
      cond = outs[0];
      go = host_scalar(n, cond, "the body's cond output").to_double() != 0;
    }
    for (size_t k = 0; k < carried; ++k) values[k] = outs[1 + k];
    for (size_t j = 0; j < scans; ++j) scanned[j].push_back(outs[1 + carried + j]);
  }
  Tensors result = values;
  for (size_t j = 0; j < scans; ++j) {
    if (!scanned[j].empty()) {
      result.push_back(stack(scanned[j], 0));
      continue;
    }
    // No iteration: an empty scan, shaped by the body's declaration where it fixes the dims.
    const ValueInfo& info = body.outputs()[1 + carried + j];
    Shape shape{0};
    bool fixed = info.shape.has_value();
    if (fixed) {
      for (const Dim& d : *info.shape) {
        fixed = fixed && d.size >= 0;
        shape.push_back(d.size);
      }
    }
    result.push_back(empty(fixed ? shape : Shape{0}, TensorOptions(info.dtype, device)));
  }
  return result;
}

// The vocabulary ---------------------------------------------------------------------------------

using K = AttrKind;

const std::vector<OpSchema>& schemas() {
  static const std::vector<OpSchema> ops = [] {
    const std::vector<AttrSpec> conv_attrs{
        {"auto_pad", K::String, {"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"}},
        {"dilations", K::Ints},
        {"group", K::Int},
        {"kernel_shape", K::Ints},
        {"pads", K::Ints},
        {"strides", K::Ints}};
    const std::vector<AttrSpec> reduce_attrs{
        {"axes", K::Ints}, {"keepdims", K::Int}, {"noop_with_empty_axes", K::Int}};
    const std::vector<AttrSpec> arg_attrs{
        {"axis", K::Int}, {"keepdims", K::Int}, {"select_last_index", K::Int}};
    const std::vector<AttrSpec> rnn_attrs{
        {"activation_alpha", K::Floats},
        {"activation_beta", K::Floats},
        {"activations", K::Strings},
        {"clip", K::Float},
        {"direction", K::String, {"forward", "reverse", "bidirectional"}},
        {"hidden_size", K::Int},
        {"layout", K::Int}};
    std::vector<AttrSpec> lstm_attrs = rnn_attrs, gru_attrs = rnn_attrs;
    lstm_attrs.push_back({"input_forget", K::Int});
    gru_attrs.push_back({"linear_before_reset", K::Int});
    std::vector<OpSchema> v{
        {"abs", 1, 1, 1, {}, unary<abs>},
        {"acos", 1, 1, 1, {}, unary<acos>},
        {"acosh", 1, 1, 1, {}, unary<acosh>},
        {"add", 2, 2, 1, {}, binary<add2>},
        {"and", 2, 2, 1, {}, op_and},
        {"argmax", 1, 1, 1, arg_attrs, arg_reduce<true>},
        {"argmin", 1, 1, 1, arg_attrs, arg_reduce<false>},
        {"asin", 1, 1, 1, {}, unary<asin>},
        {"asinh", 1, 1, 1, {}, unary<asinh>},
        {"atan", 1, 1, 1, {}, unary<atan>},
        {"atanh", 1, 1, 1, {}, unary<atanh>},
        {"average_pool",
         1,
         1,
         1,
         {{"auto_pad", K::String, {"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"}},
          {"ceil_mode", K::Int},
          {"count_include_pad", K::Int},
          {"dilations", K::Ints},
          {"kernel_shape", K::Ints},
          {"pads", K::Ints},
          {"strides", K::Ints}},
         op_average_pool},
        {"batch_normalization",
         5,
         5,
         3,
         {{"epsilon", K::Float}, {"momentum", K::Float}, {"training_mode", K::Int}},
         op_batch_normalization},
        {"bit_shift", 2, 2, 1, {{"direction", K::String, {"LEFT", "RIGHT"}}}, op_bit_shift},
        {"bitwise_and", 2, 2, 1, {}, binary<bitwise_and>},
        {"bitwise_not", 1, 1, 1, {}, unary<bitwise_not>},
        {"bitwise_or", 2, 2, 1, {}, binary<bitwise_or>},
        {"bitwise_xor", 2, 2, 1, {}, binary<bitwise_xor>},
        {"cast", 1, 1, 1, {{"to", K::String}, {"saturate", K::Int}}, op_cast},
        {"cast_like", 2, 2, 1, {{"saturate", K::Int}}, op_cast_like},
        {"ceil", 1, 1, 1, {}, unary<ceil>},
        {"celu", 1, 1, 1, {{"alpha", K::Float}}, op_celu},
        {"clip", 1, 3, 1, {}, op_clip},
        {"concat", 1, -1, 1, {{"axis", K::Int}}, op_concat},
        {"constant", 0, 0, 1, {{"value", K::Tensor}}, op_constant},
        {"constant_of_shape", 1, 1, 1, {{"value", K::Tensor}}, op_constant_of_shape},
        {"conv", 2, 3, 1, conv_attrs, op_conv},
        {"cos", 1, 1, 1, {}, unary<cos>},
        {"cosh", 1, 1, 1, {}, unary<cosh>},
        {"conv_transpose",
         2,
         3,
         1,
         {{"auto_pad", K::String, {"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"}},
          {"dilations", K::Ints},
          {"group", K::Int},
          {"kernel_shape", K::Ints},
          {"output_padding", K::Ints},
          {"output_shape", K::Ints},
          {"pads", K::Ints},
          {"strides", K::Ints}},
         op_conv_transpose},
        {"cumprod", 2, 2, 1, {{"exclusive", K::Int}, {"reverse", K::Int}}, cumulative<true>},
        {"cumsum", 2, 2, 1, {{"exclusive", K::Int}, {"reverse", K::Int}}, cumulative<false>},
        {"depth_to_space",
         1,
         1,
         1,
         {{"blocksize", K::Int}, {"mode", K::String, {"DCR", "CRD"}}},
         op_depth_to_space},
        {"eye_like", 1, 1, 1, {{"dtype", K::String}, {"k", K::Int}}, op_eye_like},
        {"grid_sample",
         2,
         2,
         1,
         {{"align_corners", K::Int},
          {"mode", K::String, {"linear", "nearest", "cubic", "bilinear", "bicubic"}},
          {"padding_mode", K::String, {"zeros", "border", "reflection"}}},
         op_grid_sample},
        {"affine_grid", 2, 2, 1, {{"align_corners", K::Int}}, op_affine_grid},
        {"group_normalization",
         3,
         3,
         1,
         {{"epsilon", K::Float}, {"num_groups", K::Int}, {"stash_type", K::Int}},
         op_group_normalization},
        {"hardmax", 1, 1, 1, {{"axis", K::Int}}, op_hardmax},
        {"instance_normalization", 3, 3, 1, {{"epsilon", K::Float}}, op_instance_normalization},
        {"lp_normalization", 1, 1, 1, {{"axis", K::Int}, {"p", K::Int}}, op_lp_normalization},
        {"lrn",
         1,
         1,
         1,
         {{"alpha", K::Float}, {"beta", K::Float}, {"bias", K::Float}, {"size", K::Int}},
         op_lrn},
        {"mean_variance_normalization",
         1,
         1,
         1,
         {{"axes", K::Ints}},
         op_mean_variance_normalization},
        {"mish", 1, 1, 1, {}, op_mish},
        {"non_zero", 1, 1, 1, {}, op_non_zero},
        {"one_hot", 3, 3, 1, {{"axis", K::Int}}, op_one_hot},
        {"rms_normalization",
         2,
         2,
         1,
         {{"axis", K::Int}, {"epsilon", K::Float}, {"stash_type", K::Int}},
         op_rms_normalization},
        {"simplified_layer_normalization",
         2,
         2,
         2,
         {{"axis", K::Int}, {"epsilon", K::Float}, {"stash_type", K::Int}},
         op_rms_normalization},
        {"skip_layer_normalization", 3, 5, 4, {{"epsilon", K::Float}}, op_skip_layer_normalization},
        {"skip_simplified_layer_normalization",
         3,
         4,
         4,
         {{"epsilon", K::Float}},
         op_skip_simplified_layer_normalization},
        {"qkv_attention",
         2,
         7,
         2,
         {{"do_rotary", K::Int},
          {"mask_filter_value", K::Float},
          {"num_heads", K::Int},
          {"past_present_share_buffer", K::Int},
          {"qkv_hidden_sizes", K::Ints},
          {"rotary_embedding_dim", K::Int},
          {"scale", K::Float},
          {"unidirectional", K::Int}},
         op_qkv_attention,
         check_qkv_attention},
        {"multi_head_attention",
         1,
         10,
         4,
         {{"mask_filter_value", K::Float},
          {"num_heads", K::Int},
          {"scale", K::Float},
          {"unidirectional", K::Int}},
         op_multi_head_attention,
         check_multi_head_attention},
        {"conv_activation",
         2,
         4,
         1,
         {{"activation",
           K::String,
           {"Relu", "Tanh", "Sigmoid", "LeakyRelu", "Clip", "HardSigmoid"}},
          {"activation_params", K::Floats},
          {"auto_pad", K::String, {"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"}},
          {"dilations", K::Ints},
          {"group", K::Int},
          {"kernel_shape", K::Ints},
          {"pads", K::Ints},
          {"strides", K::Ints}},
         op_conv_activation,
         check_conv_activation},
        {"rotary_embedding",
         3,
         4,
         1,
         {{"interleaved", K::Int}, {"num_heads", K::Int}, {"rotary_embedding_dim", K::Int}},
         op_rotary_embedding},
        {"contrib_rotary_embedding",
         4,
         4,
         1,
         {{"interleaved", K::Int},
          {"is_packed_batching", K::Int},
          {"num_heads", K::Int},
          {"rotary_embedding_dim", K::Int},
          {"scale", K::Float}},
         op_contrib_rotary_embedding,
         check_contrib_rotary_embedding},
        {"fast_gelu", 1, 2, 1, {}, op_fast_gelu},
        {"bias_gelu", 2, 2, 1, {}, op_bias_gelu},
        {"quick_gelu", 1, 1, 1, {{"alpha", K::Float}}, op_quick_gelu},
        {"bias_add", 3, 3, 1, {}, op_bias_add},
        {"fused_matmul",
         2,
         2,
         1,
         {{"alpha", K::Float},
          {"transA", K::Int},
          {"transB", K::Int},
          {"transBatchA", K::Int},
          {"transBatchB", K::Int}},
         op_fused_matmul},
        {"shrink", 1, 1, 1, {{"bias", K::Float}, {"lambd", K::Float}}, op_shrink},
        {"space_to_depth",
         1,
         1,
         1,
         {{"blocksize", K::Int}, {"mode", K::String, {"DCR", "CRD"}}},
         op_space_to_depth},
        {"swish", 1, 1, 1, {{"alpha", K::Float}}, op_swish},
        {"div", 2, 2, 1, {}, op_div},
        {"dropout",
         1,
         3,
         2,
         {{"ratio", K::Float}, {"seed", K::Int}},
         op_dropout,
         check_dropout,
         /*draws=*/true},
        {"random_uniform",
         0,
         0,
         1,
         {{"dtype", K::String},
          {"high", K::Float},
          {"low", K::Float},
          {"seed", K::Float},
          {"shape", K::Ints}},
         op_random,
         check_random,
         /*draws=*/true},
        {"random_normal",
         0,
         0,
         1,
         {{"dtype", K::String},
          {"mean", K::Float},
          {"scale", K::Float},
          {"seed", K::Float},
          {"shape", K::Ints}},
         op_random,
         check_random,
         /*draws=*/true},
        {"random_uniform_like",
         1,
         1,
         1,
         {{"dtype", K::String}, {"high", K::Float}, {"low", K::Float}, {"seed", K::Float}},
         op_random,
         check_random,
         /*draws=*/true},
        {"random_normal_like",
         1,
         1,
         1,
         {{"dtype", K::String}, {"mean", K::Float}, {"scale", K::Float}, {"seed", K::Float}},
         op_random,
         check_random,
         /*draws=*/true},
        {"bernoulli",
         1,
         1,
         1,
         {{"dtype", K::String}, {"seed", K::Float}},
         op_random,
         check_random,
         /*draws=*/true},
        {"einsum", 1, -1, 1, {{"equation", K::String}}, op_einsum},
        {"elu", 1, 1, 1, {{"alpha", K::Float}}, op_elu},
        {"equal", 2, 2, 1, {}, binary<eq2>},
        {"erf", 1, 1, 1, {}, unary<erf>},
        {"exp", 1, 1, 1, {}, unary<exp>},
        {"expand", 2, 2, 1, {}, op_expand},
        {"flatten", 1, 1, 1, {{"axis", K::Int}}, op_flatten},
        {"floor", 1, 1, 1, {}, unary<floor>},
        {"gather", 2, 2, 1, {{"axis", K::Int}}, op_gather},
        {"gather_elements", 2, 2, 1, {{"axis", K::Int}}, op_gather_elements},
        {"gather_nd", 2, 2, 1, {{"batch_dims", K::Int}}, op_gather_nd},
        {"gelu", 1, 1, 1, {{"approximate", K::String, {"none", "tanh"}}}, op_gelu},
        {"gemm",
         2,
         3,
         1,
         {{"alpha", K::Float}, {"beta", K::Float}, {"transA", K::Int}, {"transB", K::Int}},
         op_gemm},
        {"global_average_pool", 1, 1, 1, {}, op_global_average_pool},
        {"global_max_pool", 1, 1, 1, {}, op_global_max_pool},
        {"greater", 2, 2, 1, {}, binary<gt2>},
        {"greater_or_equal", 2, 2, 1, {}, binary<ge2>},
        {"hard_sigmoid", 1, 1, 1, {{"alpha", K::Float}, {"beta", K::Float}}, op_hard_sigmoid},
        {"hard_swish", 1, 1, 1, {}, op_hard_swish},
        {"identity", 1, 1, 1, {}, op_identity},
        {"is_inf", 1, 1, 1, {{"detect_negative", K::Int}, {"detect_positive", K::Int}}, op_is_inf},
        {"is_nan", 1, 1, 1, {}, op_is_nan},
        {"layer_normalization",
         2,
         3,
         3,
         {{"axis", K::Int}, {"epsilon", K::Float}, {"stash_type", K::Int}},
         op_layer_normalization},
        {"leaky_relu", 1, 1, 1, {{"alpha", K::Float}}, op_leaky_relu},
        {"less", 2, 2, 1, {}, binary<lt2>},
        {"less_or_equal", 2, 2, 1, {}, binary<le2>},
        {"log", 1, 1, 1, {}, unary<log>},
        {"log_softmax", 1, 1, 1, {{"axis", K::Int}}, op_log_softmax},
        {"matmul", 2, 2, 1, {}, op_matmul},
        {"max", 1, -1, 1, {}, variadic<max2>},
        {"max_pool",
         1,
         1,
         2,
         {{"auto_pad", K::String, {"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"}},
          {"ceil_mode", K::Int},
          {"dilations", K::Ints},
          {"kernel_shape", K::Ints},
          {"pads", K::Ints},
          {"storage_order", K::Int},
          {"strides", K::Ints}},
         op_max_pool},
        {"mean", 1, -1, 1, {}, op_mean},
        {"min", 1, -1, 1, {}, variadic<min2>},
        {"mod", 2, 2, 1, {{"fmod", K::Int}}, op_mod},
        {"mul", 2, 2, 1, {}, binary<mul2>},
        {"neg", 1, 1, 1, {}, unary<neg>},
        {"negative_log_likelihood_loss",
         2,
         3,
         1,
         {{"ignore_index", K::Int}, {"reduction", K::String, {"mean", "sum", "none"}}},
         op_negative_log_likelihood_loss},
        {"not", 1, 1, 1, {}, op_not},
        {"or", 2, 2, 1, {}, op_or},
        {"pad", 2, 4, 1, {{"mode", K::String, {"constant", "reflect", "edge", "wrap"}}}, op_pad},
        {"pow", 2, 2, 1, {}, op_pow},
        {"prelu", 2, 2, 1, {}, op_prelu},
        {"range", 3, 3, 1, {{"stash_type", K::Int}}, op_range},
        {"reciprocal", 1, 1, 1, {}, op_reciprocal},
        {"reduce_l1", 1, 2, 1, reduce_attrs, reduce<Reduce::L1>},
        {"reduce_l2", 1, 2, 1, reduce_attrs, reduce<Reduce::L2>},
        {"reduce_log_sum", 1, 2, 1, reduce_attrs, reduce<Reduce::LogSum>},
        {"reduce_log_sum_exp", 1, 2, 1, reduce_attrs, reduce<Reduce::LogSumExp>},
        {"reduce_max", 1, 2, 1, reduce_attrs, reduce<Reduce::Max>},
        {"reduce_mean", 1, 2, 1, reduce_attrs, reduce<Reduce::Mean>},
        {"reduce_min", 1, 2, 1, reduce_attrs, reduce<Reduce::Min>},
        {"reduce_prod", 1, 2, 1, reduce_attrs, reduce<Reduce::Prod>},
        {"reduce_sum", 1, 2, 1, reduce_attrs, reduce<Reduce::Sum>},
        {"reduce_sum_square", 1, 2, 1, reduce_attrs, reduce<Reduce::SumSquare>},
        {"relu", 1, 1, 1, {}, unary<relu>},
        {"reshape", 2, 2, 1, {{"allowzero", K::Int}}, op_reshape},
        {"round", 1, 1, 1, {}, unary<round>},
        {"scatter_elements",
         3,
         3,
         1,
         {{"axis", K::Int}, {"reduction", K::String, {"none", "add", "mul", "max", "min"}}},
         op_scatter_elements},
        {"scatter_nd",
         3,
         3,
         1,
         {{"reduction", K::String, {"none", "add", "mul", "max", "min"}}},
         op_scatter_nd},
        {"selu", 1, 1, 1, {{"alpha", K::Float}, {"gamma", K::Float}}, op_selu},
        {"shape", 1, 1, 1, {{"end", K::Int}, {"start", K::Int}}, op_shape},
        {"sigmoid", 1, 1, 1, {}, unary<sigmoid>},
        {"sign", 1, 1, 1, {}, unary<sign>},
        {"sin", 1, 1, 1, {}, unary<sin>},
        {"sinh", 1, 1, 1, {}, unary<sinh>},
        {"size", 1, 1, 1, {}, op_size},
        {"slice", 3, 5, 1, {}, op_slice},
        {"softmax", 1, 1, 1, {{"axis", K::Int}}, op_softmax},
        {"softmax_cross_entropy_loss",
         2,
         3,
         2,
         {{"ignore_index", K::Int}, {"reduction", K::String, {"mean", "sum", "none"}}},
         op_softmax_cross_entropy_loss},
        {"softplus", 1, 1, 1, {}, op_softplus},
        {"softsign", 1, 1, 1, {}, op_softsign},
        {"split", 1, 2, 1 << 16, {{"axis", K::Int}, {"num_outputs", K::Int}}, op_split},
        {"sqrt", 1, 1, 1, {}, unary<sqrt>},
        {"squeeze", 1, 2, 1, {}, op_squeeze},
        {"sub", 2, 2, 1, {}, binary<sub2>},
        {"sum", 1, -1, 1, {}, variadic<add2>},
        {"tan", 1, 1, 1, {}, unary<tan>},
        {"tanh", 1, 1, 1, {}, unary<tanh>},
        {"thresholded_relu", 1, 1, 1, {{"alpha", K::Float}}, op_thresholded_relu},
        {"tile", 2, 2, 1, {}, op_tile},
        {"topk", 2, 2, 2, {{"axis", K::Int}, {"largest", K::Int}, {"sorted", K::Int}}, op_topk},
        {"transpose", 1, 1, 1, {{"perm", K::Ints}}, op_transpose},
        {"trilu", 1, 2, 1, {{"upper", K::Int}}, op_trilu},
        {"unsqueeze", 1, 2, 1, {{"axes", K::Ints}}, op_unsqueeze},
        {"if",
         1,
         -1,
         1 << 16,
         {{"else_branch", K::Graph}, {"then_branch", K::Graph}},
         op_if,
         check_if},
        {"loop", 0, -1, 1 << 16, {{"body", K::Graph}}, op_loop, check_loop},
        {"where", 3, 3, 1, {}, op_where},
        {"xor", 2, 2, 1, {}, binary<xor2>},
        {"lstm", 3, 8, 3, lstm_attrs, op_recurrent<Cell::LSTM>, check_recurrent<Cell::LSTM>},
        {"gru", 3, 6, 2, gru_attrs, op_recurrent<Cell::GRU>, check_recurrent<Cell::GRU>},
        {"resize",
         1,
         4,
         1,
         {{"antialias", K::Int},
          {"axes", K::Ints},
          {"coordinate_transformation_mode",
           K::String,
           {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
            "asymmetric", "tf_crop_and_resize", "tf_half_pixel_for_nn"}},
          {"cubic_coeff_a", K::Float},
          {"exclude_outside", K::Int},
          {"extrapolation_value", K::Float},
          {"keep_aspect_ratio_policy", K::String, {"stretch", "not_larger", "not_smaller"}},
          {"mode", K::String, {"nearest", "linear", "cubic"}},
          {"nearest_mode",
           K::String,
           {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}}},
         op_resize,
         check_resize},
        {"rnn", 3, 6, 2, rnn_attrs, op_recurrent<Cell::RNN>, check_recurrent<Cell::RNN>},
    };
    for (OpSchema& s : detail::fused_op_schemas()) v.push_back(std::move(s));
    std::sort(v.begin(), v.end(),
              [](const OpSchema& a, const OpSchema& b) { return a.name < b.name; });
    return v;
  }();
  return ops;
}

}  // namespace

const OpSchema* find_op(std::string_view name) {
  const auto& ops = schemas();
  auto it = std::lower_bound(ops.begin(), ops.end(), name,
                             [](const OpSchema& s, std::string_view n) { return s.name < n; });
  return it != ops.end() && it->name == name ? &*it : nullptr;
}

std::vector<std::string_view> op_names() {
  std::vector<std::string_view> names;
  for (const OpSchema& s : schemas()) names.push_back(s.name);
  return names;
}

std::string_view attr_kind_name(AttrKind kind) {
  static constexpr const char* kNames[] = {"int",    "float",   "string", "ints",
                                           "floats", "strings", "tensor", "graph"};
  return enum_name<AttrKind::Graph>(kind, kNames, "?");
}

}  // namespace ember::graph
