// The graph ops: the vocabulary of a Graph's nodes, each one defined on the core's public ops.
#pragma once

#include <string_view>
#include <vector>

#include <ember/graph/graph.h>

namespace ember::graph {

/** The kind an attribute's value must have (the alternative of Attribute it holds). */
enum class AttrKind { Int, Float, String, Ints, Floats, Strings, Tensor, Graph };

/** One attribute an op takes. */
struct AttrSpec {
  /** Its name. */
  std::string_view name;
  /** The kind its value must have. */
  AttrKind kind;
  /** For a string attribute, the values the op implements (empty: any). */
  std::vector<std::string_view> values = {};
};

/** Computes a node's outputs from its inputs (undefined tensors for omitted optional inputs),
 *  on `device`, where new tensors are made. */
using OpFn = std::vector<Tensor> (*)(const Node& node, const std::vector<Tensor>& inputs,
                                     Device device);

/** An op's own check of a node's attribute values, run when the node is added: throws an
 *  ember::Error saying what is wrong (Graph::add_node names the node before it). */
using OpCheck = void (*)(const Node& node);

/** A graph op: its name, how many inputs and outputs it takes, its attributes, its function. */
struct OpSchema {
  /** The op's name, as nodes spell it ("conv"). */
  std::string_view name;
  /** Fewest inputs. */
  int min_inputs;
  /** Most inputs; -1 for any number. */
  int max_inputs;
  /** Most outputs. */
  int max_outputs;
  /** The attributes the op takes; a node naming any other is refused. */
  std::vector<AttrSpec> attrs;
  /** What it computes. */
  OpFn run;
  /** Checks the node's attribute values beyond their kinds (null: none to check). */
  OpCheck check = nullptr;
  /** Whether it may draw random numbers: such a node is never run early nor merged with another
   *  by the optimizer. */
  bool draws = false;
};

/** The schema of the op named `name`, or nullptr. */
const OpSchema* find_op(std::string_view name);

/** Every op's name, sorted. */
std::vector<std::string_view> op_names();

/** The name of an attribute kind ("int", "ints", "tensor", ...), for errors. */
std::string_view attr_kind_name(AttrKind kind);

}  // namespace ember::graph
