// Graph optimization: passes that rewrite a Graph into one computing the same outputs with fewer
// or cheaper nodes, grouped in levels like ONNX Runtime's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <ember/graph/graph.h>

namespace ember::graph {

/** How much optimize() does; each level includes the ones before it. */
enum class OptLevel {
  None,      ///< the graph as it is
  Basic,     ///< semantics-preserving clean-ups: constant folding, identities, CSE, dead nodes
  Extended,  ///< pattern fusions into single ops: Conv+BatchNorm, GELU, linear layers, transposes
  All        ///< also convolutions fused with their ReLU and residual add, and layout planned
};

/** The level named "none", "basic", "extended" or "all" (ValueError otherwise). */
OptLevel opt_level_from_name(std::string_view name);

/** What one pass changed. */
struct PassCount {
  /** The pass's name ("fold_constants"). */
  std::string pass;
  /** How many rewrites it made (nodes folded, fused or removed). */
  int64_t changes = 0;
};

/** What optimize() did. */
struct OptimizeReport {
  /** Nodes before and after. */
  size_t nodes_before = 0, nodes_after = 0;
  /** Every pass that ran, with its count, in the order they first ran (repeats summed). */
  std::vector<PassCount> passes;
};

/** A graph computing the same outputs as `g` (same inputs, outputs and their names), rewritten
 *  by the passes of `level` but those named in `disabled` (onnxruntime's disabled_optimizers;
 *  ValueError for a name that is no pass); `report`, when given, says what each pass did.
 *  Folding runs ops on the CPU at this call; the result runs on any device, as `g` does. */
Graph optimize(const Graph& g, OptLevel level = OptLevel::All, OptimizeReport* report = nullptr,
               const std::vector<std::string>& disabled = {});

/** The names of the passes each level runs, in order (for documentation and tests). */
std::vector<std::string_view> passes_of(OptLevel level);

/** Runs the one pass named `pass` on `g` (for tests of a pass alone); `changes` receives its
 *  count. ValueError for an unknown name. */
Graph run_pass(const Graph& g, std::string_view pass, int64_t* changes = nullptr);

}  // namespace ember::graph
