// Rewrite: a graph as editable pieces.
#include "graph/passes/rewrite.h"

#include <fmt/format.h>

#include <algorithm>

namespace ember::graph::detail {

Rewrite::Rewrite(const Graph& g)
    : inputs(g.inputs()),
      outer(g.outer()),
      outputs(g.outputs()),
      initializers(g.initializers()),
      nodes(g.nodes()) {}

Graph Rewrite::to_graph() const {
  Graph g;
  for (const ValueInfo& v : inputs) g.add_input(v);
  for (const std::string& name : outer) g.add_outer(name);
  for (const auto& [name, t] : initializers) g.add_initializer(name, t);
  for (const Node& n : nodes) {
    if (!n.op.empty()) g.add_node(n);
  }
  for (const ValueInfo& v : outputs) g.add_output(v);
  g.validate();
  return g;
}

bool Rewrite::is_input(const std::string& name) const {
  for (const ValueInfo& v : inputs) {
    if (v.name == name) return true;
  }
  return false;
}

bool Rewrite::is_output(const std::string& name) const {
  for (const ValueInfo& v : outputs) {
    if (v.name == name) return true;
  }
  return false;
}

const Tensor* Rewrite::constant(const std::string& name) const {
  auto it = initializers.find(name);
  return it == initializers.end() || is_input(name) ? nullptr : &it->second;
}

int64_t Rewrite::uses(const std::string& name) const {
  int64_t count = 0;
  for (const Node& n : nodes) {
    if (n.op.empty()) continue;
    for (const std::string& in : n.inputs) count += in == name ? 1 : 0;
  }
  for (const ValueInfo& v : outputs) count += v.name == name ? 1 : 0;
  return count;
}

std::optional<size_t> Rewrite::only_reader(const std::string& name) const {
  if (name.empty() || is_output(name)) return std::nullopt;
  std::optional<size_t> reader;
  int64_t count = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].op.empty()) continue;
    for (const std::string& in : nodes[i].inputs) {
      if (in == name) {
        ++count;
        reader = i;
      }
    }
  }
  return count == 1 ? reader : std::nullopt;
}

std::optional<size_t> Rewrite::producer(const std::string& name) const {
  if (name.empty()) return std::nullopt;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].op.empty()) continue;
    for (const std::string& out : nodes[i].outputs) {
      if (out == name) return i;
    }
  }
  return std::nullopt;
}

void Rewrite::replace_uses(const std::string& from, const std::string& to) {
  for (Node& n : nodes) {
    for (std::string& in : n.inputs) {
      if (in == from) in = to;
    }
  }
}

std::string Rewrite::fresh_name(const std::string& stem) {
  for (;;) {
    std::string name = fmt::format("{}__ember{}", stem, counter_++);
    if (initializers.count(name) || is_input(name) || producer(name) ||
        std::find(outer.begin(), outer.end(), name) != outer.end()) {
      continue;
    }
    return name;
  }
}

}  // namespace ember::graph::detail
