// optimize(): the passes of a level, run on a graph taken apart (graph/passes/rewrite.h) and put
// together again, so every node of the result is checked as any graph's is.
#include "ember/graph/optimize.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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

Graph optimize(const Graph& g, OptLevel level, OptimizeReport* report,
               const std::vector<std::string>& disabled) {
  for (const std::string& name : disabled) {
    if (find_pass(name) == nullptr) {
      std::vector<std::string_view> names = passes_of(OptLevel::All);
      EMBER_CHECK(false, "[graph.optimize] unknown pass '{}' to disable (the passes are: {})", name,
                  fmt::join(names, ", "));
    }
  }
  const auto enabled = [&](const Pass& p) {
    return std::find(disabled.begin(), disabled.end(), p.name) == disabled.end();
  };
  detail::Rewrite r(g);
  OptimizeReport local;
  local.nodes_before = g.nodes().size();
  auto run = [&](const Pass& p) {
    const int64_t changes = p.fn(r);
    auto it = std::find_if(local.passes.begin(), local.passes.end(),
                           [&](const PassCount& c) { return c.pass == p.name; });
    if (it == local.passes.end()) {
      local.passes.push_back({std::string(p.name), changes});
    } else {
      it->changes += changes;
    }
    return changes;
  };
  if (level != OptLevel::None) {
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
  }
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
  const int64_t n = p->fn(r);
  if (changes != nullptr) *changes = n;
  return r.to_graph();
}

}  // namespace ember::graph
