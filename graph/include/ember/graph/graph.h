// Graph: a dataflow graph of Ember's graph ops (ember/graph/ops.h) over named values, run eagerly
// through the core's dispatcher on any device a backend provides.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <ember/tensor.h>

namespace ember::graph {

/** One dim of a declared shape: a size, or a symbol (a batch axis) bound when the graph runs. */
struct Dim {
  /** The size, or -1 for a symbolic or unknown dim. */
  int64_t size = -1;
  /** The symbol's name ("N", "batch"); empty for a fixed size or an unnamed unknown dim. */
  std::string symbol;
};

/** A graph input's or output's declared type: a dtype and, when known, a shape. */
struct ValueInfo {
  /** The value's name, unique in its graph. */
  std::string name;
  /** Its dtype. */
  DType dtype = DType::Float32;
  /** Its dims; empty optional when even the rank is unknown. */
  std::optional<std::vector<Dim>> shape;
};

class Graph;

/** An attribute of a node: an int, a float, a string, lists of them, a tensor, or a subgraph (an
 *  If's branch, a Loop's body; Note [Subgraphs read the enclosing graph's values]). */
using Attribute =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
                 std::vector<std::string>, Tensor, std::shared_ptr<const Graph>>;

/** One op application: the op's name, its input and output value names, its attributes. */
struct Node {
  /** A graph op (ember/graph/ops.h), e.g. "conv" or "reshape". */
  std::string op;
  /** The node's own name, for errors (may be empty). */
  std::string name;
  /** Input value names; an empty name is an omitted optional input. */
  std::vector<std::string> inputs;
  /** Output value names; an empty name is an output nobody reads. */
  std::vector<std::string> outputs;
  /** Attributes by name. */
  std::map<std::string, Attribute> attrs;
};

/** The enclosing graph's values that `node`'s subgraphs read, in the order the node passes them
 *  after its own inputs: each subgraph attribute's outer values, by attribute name, each value
 *  once (Note [Subgraphs read the enclosing graph's values] in graph/graph.cpp). */
std::vector<std::string> outer_values(const Node& node);

/** A graph: inputs, initializers (named constant tensors), nodes in topological order, outputs.
 *  Nodes are checked against their op's schema as they are added; `run` evaluates them in order
 *  on one device, and may be called from several threads at once. Copying a Graph shares its
 *  initializers' storage. */
class Graph {
 public:
  /** Declares an input the caller feeds to run(). */
  void add_input(ValueInfo info);
  /** Declares an output run() returns; it must be produced by a node, an input or an
   *  initializer by the time the graph runs. */
  void add_output(ValueInfo info);
  /** Declares a value of the enclosing graph that this subgraph's nodes read (an outer-scope
   *  value); run() takes it among the feeds. */
  void add_outer(const std::string& name);
  /** Adds a named constant (a weight). */
  void add_initializer(const std::string& name, Tensor value);
  /** Appends a node; checks its op, arity and attributes (their kinds, and the values the op
   *  checks; ValueError, NotImplementedError) and that every input it names is already defined
   *  (topological order). */
  void add_node(Node node);

  /** The declared inputs, in order. */
  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  /** The enclosing graph's values this subgraph reads, in the order they were declared. */
  const std::vector<std::string>& outer() const { return outer_; }
  /** The declared outputs, in order. */
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  /** The nodes, in the order they run. */
  const std::vector<Node>& nodes() const { return nodes_; }
  /** The initializers by name. */
  const std::map<std::string, Tensor>& initializers() const { return initializers_; }

  /** Checks that every output is defined; called by run() and by the importers. */
  void validate() const;

  /** Runs the graph on `device`: `feeds` gives every input (dtype and shape checked against the
   *  declaration, symbolic dims bound consistently) and every outer value; returns every output
   *  by name. Inputs not on
   *  `device` are copied there; initializers are copied there on the first run on it, and kept. */
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds,
                                    Device device = Device::cpu()) const;
  /** Copies the initializers to `device` now, as the first run there would (so that no later run
   *  copies anything: a Session's recorded runs may not). */
  void prepare(Device device) const;
  /** run() returning the outputs in declaration order. */
  std::vector<Tensor> run_ordered(const std::map<std::string, Tensor>& feeds,
                                  Device device = Device::cpu()) const;

 private:
  bool defines(const std::string& name) const;
  std::map<std::string, Tensor> initializers_on(Device device) const;

  struct DeviceCopies;  // the initializers copied to each device a run used

  std::vector<ValueInfo> inputs_;
  std::vector<std::string> outer_;
  std::vector<ValueInfo> outputs_;
  std::map<std::string, Tensor> initializers_;
  std::vector<Node> nodes_;
  std::map<std::string, size_t> produced_;  // value name -> index of the node that makes it
  std::shared_ptr<DeviceCopies> copies_;
};

}  // namespace ember::graph
