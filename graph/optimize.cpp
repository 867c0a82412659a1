// optimize(): the passes of a level, run on a graph taken apart (graph/passes/rewrite.h) and put
// together again, so every node of the result is checked as any graph's is.
#include "ember/graph/optimize.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <map>

#include "graph/passes/rewrite.h"

namespace ember::graph {

namespace {

using detail::PassFn;

struct Pass {
  std::string_view name;
  PassFn fn;
  OptLevel level;  // the lowest level that runs it
};

// Note [Optimization passes]
// Levels as ONNX Runtime's: basic passes remove work without changing any op (constant folding,
// identities, common subexpressions, dead nodes), extended ones replace patterns by single ops
// that compute the same on every backend, and all adds the convolution fusions whose fused
// kernel a backend may lack (the core then runs the composite, as for any fused op) and the
// layout plan, which only changes storage order (Note [Channels-last regions of a graph]). The
// basic passes run again after the fusions, since a fusion leaves inner nodes unread and folding
// exposes more; a pass that finds nothing costs one walk over the nodes.
const std::vector<Pass>& all_passes() {
  static const std::vector<Pass> passes = {
      {"fold_constants", detail::fold_constants, OptLevel::Basic},
      {"eliminate_identities", detail::eliminate_identities, OptLevel::Basic},
      {"eliminate_common_subexpressions", detail::eliminate_common_subexpressions, OptLevel::Basic},
      {"eliminate_dead_nodes", detail::eliminate_dead_nodes, OptLevel::Basic},
      {"fold_conv_batchnorm", detail::fold_conv_batchnorm, OptLevel::Extended},
      {"fuse_gelu", detail::fuse_gelu, OptLevel::Extended},
      {"fuse_layer_norm", detail::fuse_layer_norm, OptLevel::Extended},
      {"fuse_silu", detail::fuse_silu, OptLevel::Extended},
      {"fuse_attention", detail::fuse_attention, OptLevel::Extended},
      {"cancel_transposes", detail::cancel_transposes, OptLevel::Extended},
      {"fuse_linear", detail::fuse_linear, OptLevel::Extended},
      {"fuse_conv_activation", detail::fuse_conv_activation, OptLevel::All},
      {"plan_layout", detail::plan_layout, OptLevel::All},
  };
  return passes;
}

const Pass* find_pass(std::string_view name) {
  for (const Pass& p : all_passes()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace

OptLevel opt_level_from_name(std::string_view name) {
  if (name == "none") return OptLevel::None;
  if (name == "basic") return OptLevel::Basic;
  if (name == "extended") return OptLevel::Extended;
  EMBER_CHECK(name == "all",
              "[graph.optimize] unknown optimization level '{}' (expected none, basic, extended or "
              "all)",
              name);
  return OptLevel::All;
}

std::vector<std::string_view> passes_of(OptLevel level) {
  std::vector<std::string_view> names;
  for (const Pass& p : all_passes()) {
    if (level != OptLevel::None && p.level <= level) names.push_back(p.name);
  }
  return names;
}

namespace {

// Note [Optimizing subgraphs]
// An If's branches and a Loop's body are graphs of their own, and run far more often than the
// node holding them (a body once per iteration): each is taken apart and optimized by the same
// passes, after the enclosing graph's (whose folding may have made more of its values constant),
// and then put back into the node. Three rules keep that sound:
//  - A subgraph's inputs (a Loop's iteration number, cond and loop-carried values) are inputs:
//    nothing that depends on them is folded, and neither is anything read from the enclosing
//    graph that is not a constant there.
//  - An outer value that is a constant of the enclosing graph (an initializer no feed can
//    override, or a value folded there) becomes the subgraph's own initializer, sharing its
//    storage: so a body's weights fold and fuse as the main graph's do (MatMul+Add into
//    fused_linear with the weight transposed once, not per iteration), and are copied to a device
//    once (Note [Initializers on the device] in graph/graph.cpp).
//  - The node passes its subgraphs' outer values after its own inputs, in the order
//    outer_values() gives, paired with the subgraph's names by position: after the subgraphs
//    change, the outer values they still read are listed again and each is passed the tensor it
//    was passed before (the enclosing graph's name for it may differ from the subgraph's).
// Then the enclosing graph's basic passes run once more, since weights now inside subgraphs may
// be read by nothing else, and a node whose inputs all became constants (an If whose branches read
// only constants, with a constant cond) folds. Subgraphs inside subgraphs are optimized the same
// way, from the outside in.
void rewrite_subgraphs(detail::Rewrite& r, const std::function<void(detail::Rewrite&)>& passes) {
  for (Node& n : r.nodes) {
    if (n.op.empty()) continue;
    const bool holds_graph = std::any_of(n.attrs.begin(), n.attrs.end(), [](const auto& a) {
      return std::holds_alternative<std::shared_ptr<const Graph>>(a.second);
    });
    if (!holds_graph) continue;
    const std::vector<std::string> before = outer_values(n);
    EMBER_ASSERT(n.inputs.size() >= before.size());
    const size_t own = n.inputs.size() - before.size();
    std::map<std::string, std::string> passed;  // a subgraph's outer name -> the value passed
    for (size_t k = 0; k < before.size(); ++k) passed[before[k]] = n.inputs[own + k];
    for (auto& [attr, value] : n.attrs) {
      auto* g = std::get_if<std::shared_ptr<const Graph>>(&value);
      if (g == nullptr) continue;
      detail::Rewrite sub(**g);
      std::vector<std::string> still_outer;
      for (const std::string& name : sub.outer) {
        const std::string& from = passed.at(name);
        if (const Tensor* t = from.empty() ? nullptr : r.constant(from)) {
          sub.initializers[name] = *t;
        } else {
          still_outer.push_back(name);
        }
      }
      sub.outer = std::move(still_outer);
      passes(sub);
      std::erase_if(sub.outer, [&](const std::string& name) { return sub.uses(name) == 0; });
      value = std::make_shared<const Graph>(sub.to_graph());
    }
    n.inputs.resize(own);
    for (const std::string& name : outer_values(n)) n.inputs.push_back(passed.at(name));
  }
}

/** The passes of `level` but `disabled` on `r`, then on its subgraphs (Note [Optimizing
 *  subgraphs]); each pass's changes counted into `report`. */
void optimize_rewrite(detail::Rewrite& r, OptLevel level, OptimizeReport& report,
                      const std::vector<std::string>& disabled) {
  const auto enabled = [&](const Pass& p) {
    return std::find(disabled.begin(), disabled.end(), p.name) == disabled.end();
  };
  auto run = [&](const Pass& p) {
    const int64_t changes = p.fn(r);
    auto it = std::find_if(report.passes.begin(), report.passes.end(),
                           [&](const PassCount& c) { return c.pass == p.name; });
    if (it == report.passes.end()) {
      report.passes.push_back({std::string(p.name), changes});
    } else {
      it->changes += changes;
    }
    return changes;
  };
  // Basic passes to a fixed point (bounded: each round removes a node or stops), then each
  // fusion once, then the basic passes again for what the fusions left.
  auto basic_rounds = [&] {
    for (int round = 0; round < 8; ++round) {
      int64_t changed = 0;
      for (const Pass& p : all_passes()) {
        if (p.level == OptLevel::Basic && enabled(p)) changed += run(p);
      }
      if (changed == 0) break;
    }
  };
  basic_rounds();
  for (const Pass& p : all_passes()) {
    if (p.level != OptLevel::Basic && p.level <= level && enabled(p)) run(p);
  }
  basic_rounds();
  bool any = false;
  rewrite_subgraphs(r, [&](detail::Rewrite& sub) {
    any = true;
    optimize_rewrite(sub, level, report, disabled);
  });
  if (any) basic_rounds();
}

/** Pass `p` on `r` and on its subgraphs; returns its changes in all of them. */
int64_t run_pass_everywhere(detail::Rewrite& r, const Pass& p) {
  int64_t n = p.fn(r);
  rewrite_subgraphs(r, [&](detail::Rewrite& sub) { n += run_pass_everywhere(sub, p); });
  return n;
}

}  // namespace

Graph optimize(const Graph& g, OptLevel level, OptimizeReport* report,
               const std::vector<std::string>& disabled) {
  for (const std::string& name : disabled) {
    if (find_pass(name) == nullptr) {
      std::vector<std::string_view> names = passes_of(OptLevel::All);
      EMBER_CHECK(false, "[graph.optimize] unknown pass '{}' to disable (the passes are: {})", name,
                  fmt::join(names, ", "));
    }
  }
  detail::Rewrite r(g);
  OptimizeReport local;
  local.nodes_before = g.nodes().size();
  if (level != OptLevel::None) optimize_rewrite(r, level, local, disabled);
  Graph out = r.to_graph();
  local.nodes_after = out.nodes().size();
  if (report != nullptr) *report = std::move(local);
  return out;
}

Graph run_pass(const Graph& g, std::string_view pass, int64_t* changes) {
  const Pass* p = find_pass(pass);
  if (p == nullptr) {
    std::vector<std::string_view> names = passes_of(OptLevel::All);
    EMBER_CHECK(false, "[graph.optimize] unknown pass '{}' (the passes are: {})", pass,
                fmt::join(names, ", "));
  }
  detail::Rewrite r(g);
  const int64_t n = run_pass_everywhere(r, *p);
  if (changes != nullptr) *changes = n;
  return r.to_graph();
}

}  // namespace ember::graph
