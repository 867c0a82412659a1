// The layout pass: which values of a graph run channels-last, decided once when it is optimized.
#include <algorithm>
#include <iterator>
#include <set>
#include <string_view>

#include "graph/attrs.h"
#include "graph/passes/rewrite.h"

namespace ember::graph::detail {

namespace {

// Note [Channels-last regions of a graph]
// oneDNN runs a 2-d convolution fastest on channels-last images (its brgconv kernels; asked with
// its `any` formats for inference it picks them itself), and a convolution handed row-major
// images reorders its input and output on every call (Note [oneDNN convolution layouts]). So a
// graph's 2-d convolutions with a constant 4-d weight run channels-last, and so does every value
// that flows between them through ops that keep their input's layout and run as dense on it
// (elementwise ops, inference batch norm, the core's max pooling, global pools): a region. The
// weights become channels-last initializers once, here, so the core hands the kernel the same
// tensor on every run (one identity: the backend's cache keeps its own packed copy of it, Note
// [Reordered weight cache]) instead of a fresh copy per call. Values enter a region through a
// `layout` node (channels_last) where a node of the region reads a row-major value, and leave it
// through one (contiguous) where any other node reads a region's value; graph outputs need none,
// since run() returns outputs contiguous, and a global pool's [N, C, 1, 1] result is dense in
// both orders, so a classifier's head needs none either. Layout is storage order only, never a
// value's meaning: every core op computes the same on either, so a backend without channels-last
// kernels (the reference backend) runs the same graph, paying the copies run_image_kernel makes.

/** Ops that keep the layout of their (first image) input and read it densely in any order. */
constexpr std::string_view kLayoutKeepingOps[] = {"abs",
                                                  "add",
                                                  "ceil",
                                                  "celu",
                                                  "clip",
                                                  "div",
                                                  "elu",
                                                  "erf",
                                                  "exp",
                                                  "floor",
                                                  "gelu",
                                                  "hard_sigmoid",
                                                  "hard_swish",
                                                  "leaky_relu",
                                                  "log",
                                                  "mish",
                                                  "mul",
                                                  "neg",
                                                  "reciprocal",
                                                  "relu",
                                                  "round",
                                                  "selu",
                                                  "sigmoid",
                                                  "sign",
                                                  "softplus",
                                                  "softsign",
                                                  "sqrt",
                                                  "sub",
                                                  "swish",
                                                  "tanh",
                                                  "thresholded_relu",
                                                  "batch_normalization",
                                                  "max_pool",
                                                  "global_average_pool",
                                                  "global_max_pool"};

/** True if `n` is a 2-d convolution with a constant 4-d weight: a region's anchor. */
bool is_anchor(const Rewrite& r, const Node& n) {
  if (n.op != "conv" && n.op != "fused_conv") return false;
  const Tensor* w = r.constant(n.inputs[1]);
  return w != nullptr && w->dim() == 4 && is_floating(w->dtype());
}

/** True if `n` keeps a channels-last input channels-last (its other outputs unread). */
bool keeps_layout(const Rewrite& r, const Node& n) {
  if (std::find(std::begin(kLayoutKeepingOps), std::end(kLayoutKeepingOps), n.op) ==
      std::end(kLayoutKeepingOps)) {
    return false;
  }
  if (n.op == "batch_normalization" && attr_int(n, "training_mode", 0) != 0) return false;
  for (size_t k = 1; k < n.outputs.size(); ++k) {  // max_pool's Indices, batch norm's statistics
    if (!n.outputs[k].empty() && r.uses(n.outputs[k]) > 0) return false;
  }
  return true;
}

/** True if `n` reads only the sizes of its inputs (no conversion needed before it). */
bool reads_sizes_only(const Node& n) {
  return n.op == "shape" || n.op == "size";
}

}  // namespace

int64_t plan_layout(Rewrite& r) {
  bool any_anchor = false;
  for (const Node& n : r.nodes) any_anchor = any_anchor || (!n.op.empty() && is_anchor(r, n));
  if (!any_anchor) return 0;
  std::set<std::string> channels_last;           // values that run channels-last
  std::map<std::string, std::string> converted;  // (value, format) -> the converted value's name
  std::vector<Node> out;
  int64_t changes = 0;
  // The name of `value` in `format`, made by a layout node (once per value and format).
  const auto convert = [&](const std::string& value, const std::string& format) {
    const std::string key = value + '\n' + format;
    auto it = converted.find(key);
    if (it != converted.end()) return it->second;
    const std::string name = r.fresh_name(value + (format == "contiguous" ? "_rows" : "_nhwc"));
    out.push_back({"layout", name, {value}, {name}, {{"format", format}}});
    if (format == "channels_last") channels_last.insert(name);
    converted.emplace(key, name);
    ++changes;
    return name;
  };
  // A constant read by a region's node: a channels-last copy under a new name when it is 4-d
  // and not already dense in that order (the original stays for other readers).
  const auto constant_in_region = [&](const std::string& name) {
    const std::string key = name + "\nconstant";
    auto it = converted.find(key);
    if (it != converted.end()) return it->second;
    const Tensor& t = *r.constant(name);
    std::string result = name;
    if (t.dim() == 4 && !t.is_contiguous(MemoryFormat::ChannelsLast)) {
      result = r.fresh_name(name + "_nhwc");
      r.initializers[result] = t.contiguous(MemoryFormat::ChannelsLast);
      ++changes;
    }
    converted.emplace(key, result);
    return result;
  };
  for (const Node& node : r.nodes) {
    if (node.op.empty()) continue;
    Node n = node;           // r.nodes stays whole for the questions asked of later nodes
    if (n.op == "layout") {  // a plan made before: its conversions stand
      if (attr_string(n, "format", "") == "channels_last") channels_last.insert(n.outputs[0]);
      out.push_back(std::move(n));
      continue;
    }
    const bool anchor = is_anchor(r, n);
    bool region = anchor;
    if (!region && keeps_layout(r, n)) {
      for (const std::string& in : n.inputs) region = region || channels_last.count(in) > 0;
    }
    if (region) {
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        std::string& in = n.inputs[k];
        if (in.empty() || channels_last.count(in)) continue;
        if (anchor && k == 2) continue;  // a convolution's bias: 1-d
        if (r.constant(in) != nullptr) {
          in = constant_in_region(in);
        } else {
          in = convert(in, "channels_last");
        }
      }
      // A global pool's [N, C, 1, 1] is dense in both orders: the region ends there for free.
      const bool global = n.op == "global_average_pool" || n.op == "global_max_pool";
      if (!global && !n.outputs.empty() && !n.outputs[0].empty()) {
        channels_last.insert(n.outputs[0]);
      }
    } else if (!reads_sizes_only(n)) {
      for (std::string& in : n.inputs) {
        if (channels_last.count(in)) in = convert(in, "contiguous");
      }
    }
    out.push_back(std::move(n));
  }
  r.nodes = std::move(out);
  return changes;
}

}  // namespace ember::graph::detail
