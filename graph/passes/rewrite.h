// What the passes share: a graph taken apart into editable pieces, and the questions every
// pattern asks of it (who reads a value, which node makes it, is it a constant).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <ember/graph/graph.h>

namespace ember::graph::detail {

/** A graph as editable pieces; passes change them, and to_graph() checks the result again. */
struct Rewrite {
  std::vector<ValueInfo> inputs;
  /** The enclosing graph's values a subgraph reads (Graph::outer). */
  std::vector<std::string> outer;
  std::vector<ValueInfo> outputs;
  std::map<std::string, Tensor> initializers;
  /** The nodes in order; a pass removes one by clearing its op (compacted by to_graph). */
  std::vector<Node> nodes;

  /** The pieces of `g`. */
  explicit Rewrite(const Graph& g);
  /** A Graph of the pieces (every node checked again by Graph::add_node). */
  Graph to_graph() const;

  /** True for a declared input (an initializer that is also an input can be fed: no constant). */
  bool is_input(const std::string& name) const;
  /** True for a declared output (its name must stay). */
  bool is_output(const std::string& name) const;
  /** The constant named `name`: an initializer that is not also an input. */
  const Tensor* constant(const std::string& name) const;
  /** How many times `name` is read: node inputs and graph outputs. */
  int64_t uses(const std::string& name) const;
  /** The index of the live node reading `name` when it is read exactly once, by a node. */
  std::optional<size_t> only_reader(const std::string& name) const;
  /** The index of the live node making `name`. */
  std::optional<size_t> producer(const std::string& name) const;
  /** Makes every node read `to` where it read `from`. */
  void replace_uses(const std::string& from, const std::string& to);
  /** A name no value of the graph has, from `stem`. */
  std::string fresh_name(const std::string& stem);
  /** Removes node `i`. */
  void remove(size_t i) { nodes[i].op.clear(); }

 private:
  int64_t counter_ = 0;
};

/** A pass: rewrites in place, returns how many rewrites it made. */
using PassFn = int64_t (*)(Rewrite& r);

// The passes (graph/passes/*.cpp); Note [Optimization passes] in graph/optimize.cpp.
int64_t fold_constants(Rewrite& r);
int64_t eliminate_identities(Rewrite& r);
int64_t eliminate_common_subexpressions(Rewrite& r);
int64_t eliminate_dead_nodes(Rewrite& r);
int64_t fold_conv_batchnorm(Rewrite& r);
int64_t fuse_gelu(Rewrite& r);
int64_t fuse_layer_norm(Rewrite& r);
int64_t fuse_attention(Rewrite& r);
int64_t fuse_silu(Rewrite& r);
int64_t cancel_transposes(Rewrite& r);
int64_t fuse_linear(Rewrite& r);
int64_t fuse_conv_activation(Rewrite& r);
int64_t plan_layout(Rewrite& r);

}  // namespace ember::graph::detail
