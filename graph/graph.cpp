// Graph: building (each node checked against its op's schema) and running (eagerly, through the
// core's dispatcher, on one device).
#include "ember/graph/graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <mutex>
#include <utility>

#include "ember/graph/ops.h"

namespace ember::graph {

namespace {

std::string node_label(const Node& n) {
  return n.name.empty() ? fmt::format("node ({})", n.op)
                        : fmt::format("node '{}' ({})", n.name, n.op);
}

std::vector<std::string> input_names(const std::vector<ValueInfo>& infos) {
  std::vector<std::string> names;
  names.reserve(infos.size());
  for (const ValueInfo& v : infos) names.push_back(v.name);
  return names;
}

std::string dims_str(const std::vector<Dim>& dims) {
  std::vector<std::string> parts;
  for (const Dim& d : dims) {
    parts.push_back(d.size >= 0 ? std::to_string(d.size) : d.symbol.empty() ? "?" : d.symbol);
  }
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

bool attr_has_kind(const Attribute& a, AttrKind k) {
  return static_cast<size_t>(k) == a.index();
}

}  // namespace

// Note [Initializers on the device]
// A model's weights are copied to a run's device once, on the first run there, and kept for the
// next runs (an accelerator would otherwise upload every weight per call). The copies live
// behind a shared pointer with their own lock, so run() stays const and safe to call from
// several threads; add_initializer starts a fresh set, so no run sees an old weight.
struct Graph::DeviceCopies {
  std::mutex mutex;
  std::map<std::pair<int16_t, int16_t>, std::map<std::string, Tensor>> by_device;
};

std::map<std::string, Tensor> Graph::initializers_on(Device device) const {
  if (device == Device::cpu() || !copies_) {
    std::map<std::string, Tensor> moved;
    for (const auto& [name, t] : initializers_) moved[name] = t.to(device);
    return moved;
  }
  std::lock_guard<std::mutex> lock(copies_->mutex);
  auto [it, fresh] = copies_->by_device.try_emplace({device.type, device.index});
  if (fresh) {
    for (const auto& [name, t] : initializers_) it->second[name] = t.to(device);
  }
  return it->second;
}

void Graph::prepare(Device device) const {
  (void)initializers_on(device);
}

bool Graph::defines(const std::string& name) const {
  if (produced_.count(name) || initializers_.count(name)) return true;
  if (std::find(outer_.begin(), outer_.end(), name) != outer_.end()) return true;
  for (const ValueInfo& v : inputs_) {
    if (v.name == name) return true;
  }
  return false;
}

void Graph::add_input(ValueInfo info) {
  EMBER_CHECK(!info.name.empty(), "[graph] an input needs a name: got an empty one");
  EMBER_CHECK(!produced_.count(info.name),
              "[graph] input '{}' is already the output of a node (declare inputs first)",
              info.name);
  for (const ValueInfo& v : inputs_) {
    EMBER_CHECK(v.name != info.name, "[graph] input '{}' is declared twice", info.name);
  }
  inputs_.push_back(std::move(info));
}

// Note [Subgraphs read the enclosing graph's values]
// An If's branches and a Loop's body are Graphs held by the node as attributes. Their nodes may
// read values of the enclosing graphs (ONNX's outer scope) by name. Such a name is declared on
// the subgraph with add_outer, and appended to the inputs of the node that holds the subgraph,
// after the op's own inputs: each subgraph attribute's outer values, by attribute name, each
// value once (the importer does both). So the enclosing graph checks, as for any input, that the
// value is defined before the node, frees it only after the node, and passes its tensor to the
// op, which feeds it to the subgraph's run() with the subgraph's inputs. The op pairs the tensors
// with the subgraph's names by position, not by the node's input names, which an optimization
// pass may rename (an identity removed). A value read two scopes up is thereby an outer value of
// the graph in between as well. Each run of a subgraph is a run() like the main graph's, on the
// same device.
std::vector<std::string> outer_values(const Node& node) {
  std::vector<std::string> names;
  for (const auto& [attr, value] : node.attrs) {
    const auto* g = std::get_if<std::shared_ptr<const Graph>>(&value);
    if (g == nullptr) continue;
    for (const std::string& name : (*g)->outer()) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  return names;
}

void Graph::add_outer(const std::string& name) {
  EMBER_CHECK(!name.empty(), "[graph] an outer value needs a name: got an empty one");
  EMBER_CHECK(!defines(name),
              "[graph] outer value '{}' is already defined in the graph (an input, initializer, "
              "node output or outer value)",
              name);
  outer_.push_back(name);
}

void Graph::add_output(ValueInfo info) {
  EMBER_CHECK(!info.name.empty(), "[graph] an output needs a name: got an empty one");
  outputs_.push_back(std::move(info));
}

void Graph::add_initializer(const std::string& name, Tensor value) {
  EMBER_CHECK(!name.empty(), "[graph] an initializer needs a name: got an empty one");
  EMBER_CHECK_TYPE(value.defined(), "[graph] initializer '{}' is an undefined tensor", name);
  EMBER_CHECK(!produced_.count(name), "[graph] initializer '{}' is already a node's output", name);
  initializers_[name] = std::move(value);
  copies_ = std::make_shared<DeviceCopies>();  // Note [Initializers on the device]
}

void Graph::add_node(Node node) {
  const OpSchema* op = find_op(node.op);
  if (op == nullptr) {
    throw NotImplementedError(fmt::format("[graph] {}: unknown op '{}' (the graph ops are: {})",
                                          node_label(node), node.op, fmt::join(op_names(), ", ")));
  }
  const auto n_in = static_cast<int>(node.inputs.size());
  EMBER_CHECK(n_in >= op->min_inputs && (op->max_inputs < 0 || n_in <= op->max_inputs),
              "[graph] {}: wrong number of inputs: got {}, expected {} to {}", node_label(node),
              n_in, op->min_inputs,
              op->max_inputs < 0 ? std::string("any") : std::to_string(op->max_inputs));
  EMBER_CHECK(!node.outputs.empty() && static_cast<int>(node.outputs.size()) <= op->max_outputs,
              "[graph] {}: wrong number of outputs: got {}, expected 1 to {}", node_label(node),
              node.outputs.size(), op->max_outputs);
  for (int i = 0; i < op->min_inputs; ++i) {
    EMBER_CHECK(!node.inputs[static_cast<size_t>(i)].empty(),
                "[graph] {}: input {} is required but omitted (an empty name)", node_label(node),
                i);
  }
  for (const auto& [name, value] : node.attrs) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : op->attrs) {
      if (s.name == name) spec = &s;
    }
    if (spec == nullptr) {
      std::vector<std::string_view> known;
      for (const AttrSpec& s : op->attrs) known.push_back(s.name);
      throw NotImplementedError(
          fmt::format("[graph] {}: attribute '{}' is not supported (the attributes of {} are: {})",
                      node_label(node), name, node.op,
                      known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
    }
    EMBER_CHECK_TYPE(attr_has_kind(value, spec->kind),
                     "[graph] {}: attribute '{}' must be of kind {} (got another kind)",
                     node_label(node), name, attr_kind_name(spec->kind));
    if (!spec->values.empty()) {
      const std::string& v = std::get<std::string>(value);
      const bool known =
          std::find(spec->values.begin(), spec->values.end(), v) != spec->values.end();
      EMBER_CHECK_NOT_IMPLEMENTED(known,
                                  "[graph] {}: attribute {}='{}' is not supported ({} "
                                  "implements {})",
                                  node_label(node), name, v, node.op,
                                  fmt::join(spec->values, ", "));
    }
  }
  if (op->check != nullptr) {
    try {
      op->check(node);
    } catch (const Error& e) {
      throw_error(e.kind(), fmt::format("[graph] {}: {}", node_label(node), e.what()));
    }
  }
  for (const std::string& in : node.inputs) {
    EMBER_CHECK(in.empty() || defines(in),
                "[graph] {}: input '{}' is not defined before the node (nodes must come in "
                "topological order, after the inputs and initializers they read)",
                node_label(node), in);
  }
  const size_t index = nodes_.size();
  for (const std::string& out : node.outputs) {
    if (out.empty()) continue;
    EMBER_CHECK(!defines(out),
                "[graph] {}: output '{}' is already defined (a value has one producer)",
                node_label(node), out);
    produced_[out] = index;
  }
  nodes_.push_back(std::move(node));
}

void Graph::validate() const {
  for (const ValueInfo& v : outputs_) {
    EMBER_CHECK(defines(v.name),
                "[graph] output '{}' is not produced by any node, input or "
                "initializer",
                v.name);
  }
}

std::map<std::string, Tensor> Graph::run(const std::map<std::string, Tensor>& feeds,
                                         Device device) const {
  validate();
  for (const auto& [name, t] : feeds) {
    bool known = std::find(outer_.begin(), outer_.end(), name) != outer_.end();
    for (const ValueInfo& v : inputs_) known = known || v.name == name;
    EMBER_CHECK_KEY(known, "[graph] unknown input '{}' (the graph's inputs are: {})", name,
                    fmt::join(input_names(inputs_), ", "));
    EMBER_CHECK_TYPE(t.defined(), "[graph] input '{}' is an undefined tensor", name);
  }
  const std::map<std::string, Tensor> weights = initializers_on(device);
  std::map<std::string, Tensor> env = weights;
  for (const std::string& name : outer_) {
    auto it = feeds.find(name);
    EMBER_CHECK(it != feeds.end(), "[graph] missing outer value '{}' (the subgraph reads: {})",
                name, fmt::join(outer_, ", "));
    env[name] = it->second.to(device);
  }
  std::map<std::string, int64_t> symbols;
  for (const ValueInfo& v : inputs_) {
    auto it = feeds.find(v.name);
    if (it == feeds.end()) {
      // An input that is also an initializer has a default (ONNX's rule).
      EMBER_CHECK(initializers_.count(v.name),
                  "[graph] missing input '{}' (the graph's inputs "
                  "are: {})",
                  v.name, fmt::join(input_names(inputs_), ", "));
      continue;
    }
    const Tensor& t = it->second;
    EMBER_CHECK_TYPE(t.dtype() == v.dtype,
                     "[graph] input '{}' has the wrong dtype: got {}, the "
                     "graph declares {}",
                     v.name, t.dtype(), v.dtype);
    if (v.shape) {
      const std::vector<Dim>& dims = *v.shape;
      EMBER_CHECK(t.dim() == static_cast<int64_t>(dims.size()),
                  "[graph] input '{}' has the wrong rank: got shape {}, the graph declares {}",
                  v.name, t.sizes(), dims_str(dims));
      for (size_t d = 0; d < dims.size(); ++d) {
        const int64_t got = t.size(static_cast<int64_t>(d));
        if (dims[d].size >= 0) {
          EMBER_CHECK(got == dims[d].size,
                      "[graph] input '{}' has the wrong shape: got {}, the "
                      "graph declares {}",
                      v.name, t.sizes(), dims_str(dims));
        } else if (!dims[d].symbol.empty()) {
          auto [sym, fresh] = symbols.emplace(dims[d].symbol, got);
          EMBER_CHECK(fresh || sym->second == got,
                      "[graph] input '{}' binds dim '{}' to {}, but an earlier input bound it to "
                      "{} (shape {}, declared {})",
                      v.name, dims[d].symbol, got, sym->second, t.sizes(), dims_str(dims));
        }
      }
    }
    env[v.name] = t.to(device);
  }
  // Note [Freeing values at their last reader]
  // An intermediate value is dropped once the last node reading it has run (or at once when
  // nobody reads it), so a run holds only the values still to be read, as eager code does when
  // its temporaries go out of scope; outputs are kept to the end.
  std::vector<std::vector<const std::string*>> free_after(nodes_.size());
  {
    std::map<std::string_view, size_t> last;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      for (const std::string& out : nodes_[i].outputs) {
        if (!out.empty()) last[out] = i;
      }
      for (const std::string& in : nodes_[i].inputs) {
        auto it = last.find(in);
        if (it != last.end()) it->second = i;
      }
    }
    for (const ValueInfo& v : outputs_) last.erase(v.name);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      for (const std::string& out : nodes_[i].outputs) {
        auto it = last.find(out);
        if (it != last.end()) free_after[it->second].push_back(&out);
      }
    }
  }
  std::vector<Tensor> args;
  for (size_t index = 0; index < nodes_.size(); ++index) {
    const Node& node = nodes_[index];
    const OpSchema* op = find_op(node.op);
    EMBER_ASSERT(op != nullptr);
    args.clear();
    for (const std::string& in : node.inputs) {
      if (in.empty()) {
        args.emplace_back();
        continue;
      }
      auto it = env.find(in);
      EMBER_ASSERT(it != env.end());
      args.push_back(it->second);
    }
    std::vector<Tensor> outs = op->run(node, args, device);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty()) continue;
      EMBER_CHECK_NOT_IMPLEMENTED(i < outs.size() && outs[i].defined(),
                                  "[graph] {}: output {} ('{}') is not computed by Ember's {}",
                                  node_label(node), i, node.outputs[i], node.op);
      env[node.outputs[i]] = std::move(outs[i]);
    }
    args.clear();
    for (const std::string* dead : free_after[index]) env.erase(*dead);
  }
  // An output that shares storage with a weight (an initializer, a view of one) is copied, so
  // that writing to an output never changes the model.
  std::map<std::string, Tensor> result;
  for (const ValueInfo& v : outputs_) {
    Tensor out = env.at(v.name).contiguous();
    for (const auto& [name, w] : weights) {
      if (out.is_same_storage(w)) {
        out = out.clone();
        break;
      }
    }
    result[v.name] = std::move(out);
  }
  return result;
}

std::vector<Tensor> Graph::run_ordered(const std::map<std::string, Tensor>& feeds,
                                       Device device) const {
  std::map<std::string, Tensor> named = run(feeds, device);
  std::vector<Tensor> result;
  result.reserve(outputs_.size());
  for (const ValueInfo& v : outputs_) result.push_back(named.at(v.name));
  return result;
}

}  // namespace ember::graph
