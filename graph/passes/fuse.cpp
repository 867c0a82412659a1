// The extended and all-level passes: patterns of several nodes replaced by one op.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

#include "graph/attrs.h"
#include "graph/passes/rewrite.h"

namespace ember::graph::detail {

namespace {

/** The live node making `name` when it is op `op`, else nullptr. */
Node* made_by(Rewrite& r, const std::string& name, std::string_view op) {
  std::optional<size_t> p = r.producer(name);
  return p && r.nodes[*p].op == op ? &r.nodes[*p] : nullptr;
}

/** The index of the only reader of `name` when it is op `op`. */
std::optional<size_t> read_only_by(const Rewrite& r, const std::string& name, std::string_view op) {
  std::optional<size_t> i = r.only_reader(name);
  return i && r.nodes[*i].op == op ? i : std::nullopt;
}

/** The value of a one-element tensor, as a double. */
double value_of(const Tensor& t) {
  return t.to(Device::cpu()).to(DType::Float64).reshape({}).item<double>();
}

/** True if `name` is a one-element constant equal to `value` (to float32 precision). */
bool is_scalar_constant(const Rewrite& r, const std::string& name, double value) {
  const Tensor* t = r.constant(name);
  if (t == nullptr || t->numel() != 1 || !is_floating(t->dtype())) return false;
  const double v = value_of(*t);
  return std::abs(v - value) <= 1e-6 * std::abs(value);
}

/** The operand of binary node `n` other than `name`, or empty if `name` is not an operand. */
std::string other_operand(const Node& n, const std::string& name) {
  if (n.inputs.size() != 2) return {};
  if (n.inputs[0] == name) return n.inputs[1];
  if (n.inputs[1] == name) return n.inputs[0];
  return {};
}

/** True if every output of `n` after the first is unnamed or unread. */
bool only_first_output_used(const Rewrite& r, const Node& n) {
  for (size_t k = 1; k < n.outputs.size(); ++k) {
    if (!n.outputs[k].empty() && r.uses(n.outputs[k]) > 0) return false;
  }
  return true;
}

}  // namespace

// Note [Folding batch norm into a convolution]
// BatchNormalization in inference is y = (x - mean) * s + B with s = scale / sqrt(var + eps),
// per output channel: after a convolution whose output only it reads, it is the convolution
// with weight W * s (per output channel) and bias (b - mean) * s + B. Computed once in float64,
// stored in the weight's dtype, as new initializers (the old ones may have other readers).
int64_t fold_conv_batchnorm(Rewrite& r) {
  int64_t folded = 0;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    Node& bn = r.nodes[i];
    if (bn.op != "batch_normalization" || attr_int(bn, "training_mode", 0) != 0) continue;
    if (!only_first_output_used(r, bn)) continue;
    Node* conv = made_by(r, bn.inputs[0], "conv");
    if (conv == nullptr || r.only_reader(bn.inputs[0]) != i) continue;
    const Tensor* w = r.constant(conv->inputs[1]);
    const bool has_bias = conv->inputs.size() > 2 && !conv->inputs[2].empty();
    const Tensor* b = has_bias ? r.constant(conv->inputs[2]) : nullptr;
    const Tensor *scale = r.constant(bn.inputs[1]), *shift = r.constant(bn.inputs[2]),
                 *mean = r.constant(bn.inputs[3]), *var = r.constant(bn.inputs[4]);
    if (!w || (has_bias && !b) || !scale || !shift || !mean || !var) continue;
    if (!is_floating(w->dtype()) || w->dim() < 3) continue;
    const int64_t m = w->size(0);
    if (scale->numel() != m || shift->numel() != m || mean->numel() != m || var->numel() != m) {
      continue;
    }
    auto f64 = [](const Tensor& t) { return t.to(Device::cpu()).to(DType::Float64).reshape({-1}); };
    const Tensor s =
        div(f64(*scale), sqrt(add(f64(*var), Scalar(attr_float(bn, "epsilon", 1e-5)))));
    Shape per_out(static_cast<size_t>(w->dim()), 1);
    per_out[0] = m;
    const Tensor w2 = mul(f64(*w).reshape(w->sizes()), s.reshape(per_out)).to(w->dtype());
    const Tensor b0 = has_bias ? f64(*b) : zeros({m}, DType::Float64);
    const Tensor b2 = add(mul(sub(b0, f64(*mean)), s), f64(*shift)).to(w->dtype());
    const std::string wn = r.fresh_name(conv->inputs[1]), bname = r.fresh_name(bn.inputs[2]);
    r.initializers[wn] = w2.contiguous();
    r.initializers[bname] = b2.contiguous();
    conv->inputs = {conv->inputs[0], wn, bname};
    conv->outputs = {bn.outputs[0]};
    r.remove(i);
    ++folded;
  }
  return folded;
}

// Note [The GELU pattern]
// Exporters without a Gelu op write gelu(x) = x * 0.5 * (1 + erf(x / sqrt(2))) as five nodes:
// Div(x, 1.4142...) or Mul(x, 0.7071...), Erf, Add(., 1), and the two Muls by x and by 0.5 in
// either order. GPT-2's and BERT-style "gelu_new", the tanh form x * 0.5 * (1 + tanh(sqrt(2 / pi)
// * (x + 0.044715 x^3))), is Pow(x, 3), Mul(0.044715), Add(x), Mul(0.7978...), Tanh and the same
// three nodes after it. Every intermediate read only inside the pattern, it becomes one gelu node
// (approximate "tanh" for the second) where the last Mul was: the kernel's one vectorized pass
// instead of eight, with pow and tanh among them.

namespace {

/** The nodes of x * 0.5 * (1 + act) after `act_out` (the output of erf or tanh, read only by
 *  them), or nothing: the Add, the Mul by x (m1), the last Mul and a Mul(x, 0.5) made first. */
struct GeluTail {
  size_t plus, m1, last;
  std::vector<size_t> extra;
};

std::optional<GeluTail> gelu_tail(Rewrite& r, const std::string& act_out, const std::string& x) {
  std::optional<size_t> plus = read_only_by(r, act_out, "add");
  if (!plus || !is_scalar_constant(r, other_operand(r.nodes[*plus], act_out), 1.0)) return {};
  const std::string one_plus = r.nodes[*plus].outputs[0];
  std::optional<size_t> m1 = read_only_by(r, one_plus, "mul");
  if (!m1) return {};
  const std::string m1_other = other_operand(r.nodes[*m1], one_plus);
  if (m1_other == x) {
    // (x * (1 + act)) * 0.5
    std::optional<size_t> last = read_only_by(r, r.nodes[*m1].outputs[0], "mul");
    if (!last ||
        !is_scalar_constant(r, other_operand(r.nodes[*last], r.nodes[*m1].outputs[0]), 0.5)) {
      return {};
    }
    return GeluTail{*plus, *m1, *last, {}};
  }
  // (x * 0.5) * (1 + act)
  std::optional<size_t> half = r.producer(m1_other);
  if (!half || r.nodes[*half].op != "mul" || r.only_reader(m1_other) != *m1) return {};
  if (other_operand(r.nodes[*half], x).empty() ||
      !is_scalar_constant(r, other_operand(r.nodes[*half], x), 0.5)) {
    return {};
  }
  return GeluTail{*plus, *m1, *m1, {*half}};
}

/** The x of `name` = x * k (either operand order) for the scalar constant k, read only by
 *  `reader`; empty if it is not that. */
std::string scaled_operand(Rewrite& r, const std::string& name, double k, size_t reader,
                           std::optional<size_t>* node) {
  *node = r.producer(name);
  if (!*node || r.only_reader(name) != reader || r.nodes[**node].op != "mul") return {};
  for (int i = 0; i < 2; ++i) {
    if (is_scalar_constant(r, r.nodes[**node].inputs[1 - i], k)) return r.nodes[**node].inputs[i];
  }
  return {};
}

/** x for tanh's input sqrt(2 / pi) * (x + 0.044715 * pow(x, 3)), each node read only by the
 *  next; the nodes found go into `found`. Empty if the input is not that. */
std::string gelu_tanh_input(Rewrite& r, size_t tanh, std::vector<size_t>* found) {
  std::optional<size_t> outer, cube_mul, cube;
  const std::string sum =
      scaled_operand(r, r.nodes[tanh].inputs[0], std::sqrt(2.0 / std::numbers::pi), tanh, &outer);
  if (sum.empty()) return {};
  std::optional<size_t> add = r.producer(sum);
  if (!add || r.nodes[*add].op != "add" || r.only_reader(sum) != *outer) return {};
  for (int i = 0; i < 2; ++i) {
    const std::string x = r.nodes[*add].inputs[i], scaled = r.nodes[*add].inputs[1 - i];
    const std::string cubed = scaled_operand(r, scaled, 0.044715, *add, &cube_mul);
    if (cubed.empty()) continue;
    cube = r.producer(cubed);
    if (!cube || r.only_reader(cubed) != *cube_mul || r.nodes[*cube].op != "pow" ||
        r.nodes[*cube].inputs[0] != x || !is_scalar_constant(r, r.nodes[*cube].inputs[1], 3.0)) {
      continue;
    }
    *found = {*outer, *add, *cube_mul, *cube};
    return x;
  }
  return {};
}

}  // namespace

int64_t fuse_gelu(Rewrite& r) {
  int64_t fused = 0;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const std::string op = r.nodes[i].op;
    if (op != "erf" && op != "tanh") continue;
    std::string x;
    std::vector<size_t> front;  // the nodes before the erf or tanh
    if (op == "erf") {
      // x / sqrt(2) or x * (1 / sqrt(2)).
      const std::string erf_in = r.nodes[i].inputs[0];
      std::optional<size_t> scaled = r.producer(erf_in);
      if (!scaled || r.only_reader(erf_in) != i) continue;
      const Node& sn = r.nodes[*scaled];
      if (sn.op == "div" && is_scalar_constant(r, sn.inputs[1], std::sqrt(2.0))) {
        x = sn.inputs[0];
      } else if (sn.op == "mul") {
        for (int k = 0; k < 2 && x.empty(); ++k) {
          if (is_scalar_constant(r, sn.inputs[1 - k], std::sqrt(0.5))) x = sn.inputs[k];
        }
      }
      front = {*scaled};
    } else {
      x = gelu_tanh_input(r, i, &front);
    }
    if (x.empty()) continue;
    const std::optional<GeluTail> tail = gelu_tail(r, r.nodes[i].outputs[0], x);
    if (!tail) continue;
    Node& out = r.nodes[tail->last];
    out.op = "gelu";
    out.inputs = {x};
    out.attrs.clear();
    if (op == "tanh") out.attrs["approximate"] = std::string("tanh");
    for (size_t k : front) r.remove(k);
    r.remove(i);
    r.remove(tail->plus);
    if (tail->m1 != tail->last) r.remove(tail->m1);
    for (size_t k : tail->extra) r.remove(k);
    ++fused;
  }
  return fused;
}

// Note [Transpose and reshape chains]
// transpose(transpose(x, p1), p2) is transpose(x, p1[p2[i]]), the identity when that is
// 0, 1, ...; reshape(reshape(x, s1), s2) is reshape(x, s2) when s2 is a constant without 0
// (which would copy a dim of the inner result). The inner node, then unread, is dead.
int64_t cancel_transposes(Rewrite& r) {
  int64_t changed = 0;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    Node& outer = r.nodes[i];
    if (outer.op != "transpose") continue;
    Node* inner = made_by(r, outer.inputs[0], "transpose");
    if (inner == nullptr) continue;
    const auto p1 = attr_ints(*inner, "perm"), p2 = attr_ints(outer, "perm");
    if (!p1 || !p2 || p1->size() != p2->size()) continue;
    std::vector<int64_t> composed;
    for (int64_t k : *p2) composed.push_back((*p1)[static_cast<size_t>(k)]);
    std::vector<int64_t> identity(composed.size());
    std::iota(identity.begin(), identity.end(), 0);
    if (composed == identity && !r.is_output(outer.outputs[0])) {
      r.replace_uses(outer.outputs[0], inner->inputs[0]);
      r.remove(i);
    } else {
      outer.inputs[0] = inner->inputs[0];
      outer.attrs["perm"] = composed;
    }
    ++changed;
  }
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    Node& outer = r.nodes[i];
    if (outer.op != "reshape" || attr_int(outer, "allowzero", 0) != 0) continue;
    Node* inner = made_by(r, outer.inputs[0], "reshape");
    const Tensor* shape = r.constant(outer.inputs[1]);
    if (inner == nullptr || shape == nullptr) continue;
    Tensor s = shape->to(Device::cpu()).to(DType::Int64).contiguous();
    const int64_t* p = s.data_ptr<int64_t>();
    if (std::find(p, p + s.numel(), 0) != p + s.numel()) continue;
    outer.inputs[0] = inner->inputs[0];
    ++changed;
  }
  return changed;
}

namespace {

/** Folds the activation node reading `value` (its only reader) into a fused node's attrs:
 *  returns the index of that activation node, whose place and output the fused node takes. */
std::optional<size_t> absorb_activation(Rewrite& r, const std::string& value, std::string* act) {
  std::optional<size_t> a = r.only_reader(value);
  if (!a) return std::nullopt;
  const Node& n = r.nodes[*a];
  if (n.op == "relu") {
    *act = "relu";
  } else if (n.op == "gelu") {
    *act = attr_string(n, "approximate", "none") == "tanh" ? "gelu_tanh" : "gelu";
  } else {
    return std::nullopt;
  }
  return a;
}

}  // namespace

// Note [Linear layers in a graph]
// Gemm(x, B, C) with alpha = beta = 1 and no transposed x, and MatMul(x, W) followed by
// Add(., b), with constant weights and a 1-d bias, are linear(x, weight [out, in], bias): one
// fused_linear node (the weight transposed once here where the model stores [in, out]), which
// also takes a ReLU or GELU that only it feeds, directly or through a Reshape that only it feeds.
// fused_linear is one oneDNN primitive with the weight packed once on the CPU (Note [Packed linear
// weights]).
int64_t fuse_linear(Rewrite& r) {
  int64_t fused = 0;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    Node& n = r.nodes[i];
    std::string x, weight, bias;
    size_t last = i;
    std::vector<size_t> gone;
    if (n.op == "gemm") {
      if (attr_int(n, "transA", 0) != 0 || attr_float(n, "alpha", 1.0) != 1.0 ||
          attr_float(n, "beta", 1.0) != 1.0) {
        continue;
      }
      const Tensor* b = r.constant(n.inputs[1]);
      if (b == nullptr || b->dim() != 2) continue;
      const bool trans_b = attr_int(n, "transB", 0) != 0;
      const int64_t out = trans_b ? b->size(0) : b->size(1);
      if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
        const Tensor* c = r.constant(n.inputs[2]);
        if (c == nullptr || c->dim() != 1 || c->size(0) != out) continue;
        bias = n.inputs[2];
      }
      x = n.inputs[0];
      weight = n.inputs[1];
      if (!trans_b) {
        weight = r.fresh_name(n.inputs[1]);
        r.initializers[weight] = b->t().contiguous();
      }
    } else if (n.op == "matmul") {
      const Tensor* w = r.constant(n.inputs[1]);
      if (w == nullptr || w->dim() != 2 || !is_floating(w->dtype())) continue;
      x = n.inputs[0];
      if (std::optional<size_t> add = read_only_by(r, n.outputs[0], "add")) {
        const std::string other = other_operand(r.nodes[*add], n.outputs[0]);
        const Tensor* b = r.constant(other);
        if (b != nullptr && b->dim() == 1 && b->size(0) == w->size(1) && b->dtype() == w->dtype()) {
          bias = other;
          gone.push_back(i);
          last = *add;
        }
      }
      weight = r.fresh_name(n.inputs[1]);
      r.initializers[weight] = w->t().contiguous();
    } else {
      continue;
    }
    std::string act = "none";
    if (std::optional<size_t> a = absorb_activation(r, r.nodes[last].outputs[0], &act)) {
      gone.push_back(last);
      last = *a;
    } else if (std::optional<size_t> reshape =
                   read_only_by(r, r.nodes[last].outputs[0], "reshape")) {
      // The activation of a product reshaped back to the input's batch dims (GPT-2's MLP:
      // Reshape, Gemm, Reshape, GELU): elementwise, it commutes with the reshape, which then
      // writes the activation's output.
      if (std::optional<size_t> a = absorb_activation(r, r.nodes[*reshape].outputs[0], &act)) {
        r.nodes[*reshape].outputs[0] = r.nodes[*a].outputs[0];
        r.remove(*a);
      }
    }
    Node fusedn{"fused_linear", r.nodes[last].name, {x, weight}, {r.nodes[last].outputs[0]}, {}};
    if (!bias.empty()) fusedn.inputs.push_back(bias);
    fusedn.attrs["activation"] = act;
    for (size_t k : gone) r.remove(k);
    if (last != i) r.remove(i);
    r.nodes[last] = std::move(fusedn);
    ++fused;
  }
  return fused;
}

namespace {

/** True for a 2-d conv node fused_conv can run: a constant 4-d weight, symmetric pads, no
 *  auto_pad. */
bool plain_conv2d(const Rewrite& r, const Node& n) {
  if (n.op != "conv" || attr_string(n, "auto_pad", "NOTSET") != "NOTSET") return false;
  const Tensor* w = r.constant(n.inputs[1]);
  if (w == nullptr || w->dim() != 4) return false;
  const auto pads = attr_ints(n, "pads");
  if (pads && (pads->size() != 4 || (*pads)[0] != (*pads)[2] || (*pads)[1] != (*pads)[3])) {
    return false;
  }
  for (std::string_view a : {"strides", "dilations"}) {
    const auto v = attr_ints(n, a);
    if (v && v->size() != 2) return false;
  }
  return true;
}

}  // namespace

// Note [Convolution, add and ReLU in a graph]
// A 2-d Conv followed by Relu, or by Add (of any other value: a residual) and Relu, each read
// only by the next, becomes one fused_conv node where the Relu was (every input is defined by
// then): the core's conv2d_relu / conv2d_add_relu (Note [Fused convolutions in a graph]).
int64_t fuse_conv_activation(Rewrite& r) {
  int64_t fused = 0;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const Node& conv = r.nodes[i];
    if (!plain_conv2d(r, conv)) continue;
    std::string residual;
    std::optional<size_t> relu = read_only_by(r, conv.outputs[0], "relu");
    std::optional<size_t> add;
    if (!relu) {
      add = read_only_by(r, conv.outputs[0], "add");
      if (!add) continue;
      residual = other_operand(r.nodes[*add], conv.outputs[0]);
      if (residual.empty() || residual == conv.outputs[0]) continue;
      relu = read_only_by(r, r.nodes[*add].outputs[0], "relu");
      if (!relu) continue;
    }
    Node fusedn{"fused_conv", r.nodes[*relu].name, conv.inputs, r.nodes[*relu].outputs, {}};
    for (const char* a : {"strides", "pads", "dilations", "group"}) {
      if (const Attribute* v = find_attr(conv, a)) fusedn.attrs[a] = *v;
    }
    fusedn.attrs["activation"] = std::string("relu");
    if (!residual.empty()) {
      fusedn.inputs.resize(3);  // an omitted bias stays an empty name
      fusedn.inputs.push_back(residual);
    }
    r.remove(i);
    if (add) r.remove(*add);
    r.nodes[*relu] = std::move(fusedn);
    ++fused;
  }
  return fused;
}

namespace {

/** The axes a reduce node reduces over: its axes attribute or its constant second input. */
std::optional<std::vector<int64_t>> reduce_axes(const Rewrite& r, const Node& n) {
  if (auto a = attr_ints(n, "axes")) return a;
  if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
    const Tensor* t = r.constant(n.inputs[1]);
    if (t == nullptr) return std::nullopt;
    Tensor h = t->to(Device::cpu()).to(DType::Int64).contiguous();
    const int64_t* p = h.data_ptr<int64_t>();
    return std::vector<int64_t>(p, p + h.numel());
  }
  return std::nullopt;
}

/** For axes -k..-1 (each once, in any order), -k; else nothing: a layer norm's trailing dims. */
std::optional<int64_t> trailing_axis(std::vector<int64_t> axes) {
  if (axes.empty()) return std::nullopt;
  std::sort(axes.begin(), axes.end());
  const auto k = static_cast<int64_t>(axes.size());
  for (int64_t i = 0; i < k; ++i) {
    if (axes[static_cast<size_t>(i)] != i - k) return std::nullopt;
  }
  return -k;
}

/** True for a reduce_mean node over trailing axes `axis`.. that keeps its dims. */
bool mean_over(const Rewrite& r, const Node& n, int64_t axis) {
  if (n.op != "reduce_mean" || attr_int(n, "keepdims", 1) != 1) return false;
  const auto axes = reduce_axes(r, n);
  return axes && trailing_axis(*axes) == axis;
}

}  // namespace

// Note [The layer norm pattern]
// Exporters before opset 17 write layer norm as ReduceMean, Sub, Pow(., 2), ReduceMean, Add(eps),
// Sqrt, Div, then Mul(gamma) and Add(beta): one layer_normalization node (the core's layer_norm,
// one kernel) where the last Add was, when the reductions are over the same trailing axes
// (given as negative axes, so they hold at any rank) and gamma and beta are constants.
int64_t fuse_layer_norm(Rewrite& r) {
  int64_t fused = 0;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    if (r.nodes[i].op != "div") continue;
    const std::string d = r.nodes[i].inputs[0], sd = r.nodes[i].inputs[1];
    Node* sub = made_by(r, d, "sub");
    Node* sqrt_n = made_by(r, sd, "sqrt");
    if (!sub || !sqrt_n || r.uses(d) != 2 || r.only_reader(sd) != i) continue;
    Node* mean_x = made_by(r, sub->inputs[1], "reduce_mean");
    if (!mean_x || mean_x->inputs[0] != sub->inputs[0] || r.uses(sub->inputs[1]) != 1) continue;
    const auto axes = reduce_axes(r, *mean_x);
    const std::optional<int64_t> axis = axes ? trailing_axis(*axes) : std::nullopt;
    if (!axis || !mean_over(r, *mean_x, *axis)) continue;
    Node* plus_eps = made_by(r, sqrt_n->inputs[0], "add");
    if (!plus_eps || r.uses(sqrt_n->inputs[0]) != 1) continue;
    // Add(var, eps) in either order.
    std::string var_name, eps_name;
    for (int k = 0; k < 2; ++k) {
      const Tensor* c = r.constant(plus_eps->inputs[1 - k]);
      if (c && c->numel() == 1 && made_by(r, plus_eps->inputs[k], "reduce_mean")) {
        var_name = plus_eps->inputs[k];
        eps_name = plus_eps->inputs[1 - k];
      }
    }
    if (var_name.empty() || r.uses(var_name) != 1) continue;
    Node* var = made_by(r, var_name, "reduce_mean");
    if (!mean_over(r, *var, *axis)) continue;
    Node* square = made_by(r, var->inputs[0], "pow");
    if (!square || square->inputs[0] != d || r.uses(var->inputs[0]) != 1 ||
        !is_scalar_constant(r, square->inputs[1], 2.0)) {
      continue;
    }
    // * gamma + beta
    const std::string normed = r.nodes[i].outputs[0];
    std::optional<size_t> scale = read_only_by(r, normed, "mul");
    if (!scale) continue;
    const std::string gamma = other_operand(r.nodes[*scale], normed);
    const Tensor* g = r.constant(gamma);
    if (g == nullptr || g->dim() != -*axis) continue;
    std::optional<size_t> shift = read_only_by(r, r.nodes[*scale].outputs[0], "add");
    std::string beta;
    if (shift) {
      beta = other_operand(r.nodes[*shift], r.nodes[*scale].outputs[0]);
      const Tensor* b = r.constant(beta);
      if (b == nullptr || b->sizes() != g->sizes()) shift.reset(), beta.clear();
    }
    const size_t last = shift ? *shift : *scale;
    const double eps = value_of(*r.constant(eps_name));
    Node ln{"layer_normalization",
            r.nodes[last].name,
            {sub->inputs[0], gamma},
            {r.nodes[last].outputs[0]},
            {{"axis", *axis}, {"epsilon", eps}}};
    if (!beta.empty()) ln.inputs.push_back(beta);
    for (Node* n : {mean_x, sub, square, var, plus_eps, sqrt_n}) n->op.clear();
    r.remove(i);
    if (last != *scale) r.remove(*scale);
    r.nodes[last] = std::move(ln);
    ++fused;
  }
  return fused;
}

// Note [The attention pattern]
// Attention written out — MatMul(Q, K^T), a scale (Div by c or Mul by c), an optional additive
// mask, Softmax over the last axis, MatMul(., V) — each intermediate read only by the next, is one
// attention node: the core's scaled_dot_product_attention, given K^T's transpose as K (a view),
// the scale and the mask.
int64_t fuse_attention(Rewrite& r) {
  int64_t fused = 0;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const Node& sm = r.nodes[i];
    if (sm.op != "softmax" || attr_int(sm, "axis", -1) != -1) continue;
    std::optional<size_t> out = read_only_by(r, sm.outputs[0], "matmul");
    if (!out || r.nodes[*out].inputs[0] != sm.outputs[0]) continue;
    std::string scores = sm.inputs[0], mask;
    std::vector<size_t> gone{i};
    if (Node* add = made_by(r, scores, "add"); add && r.only_reader(scores) == i) {
      // The scaled scores are the operand made by a Div/Mul/MatMul; the other is the mask.
      for (int k = 0; k < 2 && mask.empty(); ++k) {
        Node* p = nullptr;
        for (std::string_view op : {"div", "mul", "matmul"}) {
          if (!p) p = made_by(r, add->inputs[k], op);
        }
        if (p) {
          mask = add->inputs[1 - k];
          scores = add->inputs[k];
        }
      }
      if (mask.empty()) continue;
      gone.push_back(*r.producer(sm.inputs[0]));
    }
    double scale = 1.0;
    std::string product = scores;
    // The scores are read only by what consumes them here: the mask's Add, or the Softmax.
    if (r.only_reader(scores) != gone.back()) continue;
    if (Node* dv = made_by(r, scores, "div"); dv) {
      const Tensor* c = r.constant(dv->inputs[1]);
      if (!c || c->numel() != 1) continue;
      scale = 1.0 / value_of(*c);
      product = dv->inputs[0];
      gone.push_back(*r.producer(scores));
    } else if (Node* ml = made_by(r, scores, "mul"); ml) {
      std::string c_name;
      for (int k = 0; k < 2; ++k) {
        const Tensor* c = r.constant(ml->inputs[1 - k]);
        if (c && c->numel() == 1) {
          c_name = ml->inputs[1 - k];
          product = ml->inputs[k];
        }
      }
      if (c_name.empty()) continue;
      scale = value_of(*r.constant(c_name));
      gone.push_back(*r.producer(scores));
    }
    Node* qk = made_by(r, product, "matmul");
    if (!qk || (product != scores && r.uses(product) != 1)) continue;
    gone.push_back(*r.producer(product));
    Node att{"attention",
             r.nodes[*out].name,
             {qk->inputs[0], qk->inputs[1], r.nodes[*out].inputs[1]},
             r.nodes[*out].outputs,
             {{"scale", scale}}};
    if (!mask.empty()) att.inputs.push_back(mask);
    for (size_t k : gone) r.remove(k);
    r.nodes[*out] = std::move(att);
    ++fused;
  }
  return fused;
}

// Note [The SiLU pattern]
// Mul(x, Sigmoid(x)), the sigmoid read only there, is swish (alpha 1: the core's silu, one pass).
int64_t fuse_silu(Rewrite& r) {
  int64_t fused = 0;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    if (r.nodes[i].op != "sigmoid") continue;
    const std::string x = r.nodes[i].inputs[0], s = r.nodes[i].outputs[0];
    std::optional<size_t> m = read_only_by(r, s, "mul");
    if (!m || other_operand(r.nodes[*m], s) != x) continue;
    Node& mul = r.nodes[*m];
    mul.op = "swish";
    mul.inputs = {x};
    mul.attrs.clear();
    r.remove(i);
    ++fused;
  }
  return fused;
}

}  // namespace ember::graph::detail
