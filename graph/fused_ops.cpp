// The graph ops only the passes write: the fused ops (graph/passes/fuse.cpp), each one call of the
// core's fused op where the device has it and the composite otherwise, so a fused graph runs on
// every backend; and `layout` (graph/passes/layout.cpp), a value's memory format.
#include "graph/fused_ops.h"

#include <ember/tensor.h>

#include "graph/attrs.h"

namespace ember::graph::detail {

namespace {

using Tensors = std::vector<Tensor>;

/** Two values of an ints attribute (a 2-d convolution's strides, dilations). */
std::vector<int64_t> pair_attr(const Node& n, std::string_view name, int64_t def) {
  std::vector<int64_t> v = attr_ints(n, name).value_or(std::vector<int64_t>{def, def});
  EMBER_CHECK(v.size() == 2, "{} {} must have 2 values: got {}", label(n), name, v);
  return v;
}

// Note [Fused convolutions in a graph]
// fused_conv is relu(conv(x, w, b) [+ residual]) for a 2-d convolution with symmetric padding
// (the pass fuses nothing else). The residual's shape is known only when the graph runs: when it
// is exactly the convolution's output (a residual block), the core's conv2d_add_relu runs;
// otherwise (broadcast, another dtype) the composite does, as the unfused graph would.
Tensors op_fused_conv(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  const Tensor b = in.size() > 2 ? in[2] : Tensor();
  const Tensor r = in.size() > 3 ? in[3] : Tensor();
  const std::vector<int64_t> stride = pair_attr(n, "strides", 1);
  const std::vector<int64_t> dilation = pair_attr(n, "dilations", 1);
  const std::vector<int64_t> pads = attr_ints(n, "pads").value_or(std::vector<int64_t>(4, 0));
  EMBER_CHECK(pads.size() == 4 && pads[0] == pads[2] && pads[1] == pads[3],
              "{} pads must be 4 symmetric values: got {}", label(n), pads);
  const std::vector<int64_t> padding{pads[0], pads[1]};
  const int64_t groups = attr_int(n, "group", 1);
  EMBER_CHECK(w.dim() == 4, "{} weight must be [M, C/group, kH, kW]: got shape {}", label(n),
              w.sizes());
  if (!r.defined()) return {conv2d_relu(x, w, b, stride, padding, dilation, groups)};
  bool exact = x.dim() == 4 && r.dim() == 4 && r.dtype() == x.dtype();
  if (exact) {
    Shape out{x.size(0), w.size(0), 0, 0};
    for (int64_t i = 0; i < 2; ++i) {
      const int64_t span = dilation[i] * (w.size(i + 2) - 1) + 1;
      out[i + 2] = (x.size(i + 2) + 2 * padding[i] - span) / stride[i] + 1;
    }
    exact = r.sizes() == out;
  }
  if (exact) return {conv2d_add_relu(x, w, r, b, stride, padding, dilation, groups)};
  return {relu(add(conv2d(x, w, b, stride, padding, dilation, groups), r))};
}

Activation activation_of(const Node& n) {
  const std::string a = attr_string(n, "activation", "none");
  if (a == "relu") return Activation::ReLU;
  if (a == "gelu") return Activation::GELU;
  if (a == "gelu_tanh") return Activation::GELUTanh;
  EMBER_CHECK(a == "none", "{} unknown activation '{}'", label(n), a);
  return Activation::None;
}

/** activation(x W^T + b), weight [out, in] (the pass transposes a MatMul's [in, out] once). */
Tensors op_fused_linear(const Node& n, const Tensors& in, Device) {
  const Tensor b = in.size() > 2 ? in[2] : Tensor();
  return {fused_linear(in[0], in[1], b, activation_of(n))};
}

/** softmax(q kt * scale + mask) v, kt being K^T [..., E, S] (Note [The attention pattern]). */
Tensors op_attention(const Node& n, const Tensors& in, Device) {
  const Tensor mask = in.size() > 3 ? in[3] : Tensor();
  return {scaled_dot_product_attention(in[0], in[1].transpose(-2, -1), in[2], mask, 0.0, false,
                                       attr_float(n, "scale", 1.0))};
}

/** The input in the node's memory format (Note [Channels-last regions of a graph]): a 4-d value
 *  made dense channels-last, or any value made row-major; other ranks pass through unchanged. */
Tensors op_layout(const Node& n, const Tensors& in, Device) {
  const Tensor& x = in[0];
  if (attr_string(n, "format", "contiguous") == "channels_last") {
    return {x.dim() == 4 ? x.contiguous(MemoryFormat::ChannelsLast) : x};
  }
  return {x.contiguous()};
}

}  // namespace

std::vector<OpSchema> fused_op_schemas() {
  using K = AttrKind;
  return {
      {"fused_conv",
       2,
       4,
       1,
       {{"strides", K::Ints},
        {"pads", K::Ints},
        {"dilations", K::Ints},
        {"group", K::Int},
        {"activation", K::String, {"relu"}}},
       op_fused_conv},
      {"fused_linear",
       2,
       3,
       1,
       {{"activation", K::String, {"none", "relu", "gelu", "gelu_tanh"}}},
       op_fused_linear},
      {"attention", 3, 4, 1, {{"scale", K::Float}}, op_attention},
      {"layout", 1, 1, 1, {{"format", K::String, {"channels_last", "contiguous"}}}, op_layout},
  };
}

}  // namespace ember::graph::detail
