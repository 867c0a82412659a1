// The basic passes: what changes no op, only removes work — constant folding, identities, common
// subexpressions and dead nodes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include <ember/graph/ops.h>

#include "graph/attrs.h"
#include "graph/passes/rewrite.h"

namespace ember::graph::detail {

namespace {

/** Ops whose result is not a function of their inputs alone, or that must not run early: those
 *  that draw random numbers (OpSchema::draws: dropout when training, the random ops), and an If
 *  or Loop whose subgraphs hold one; the rest are pure. */
bool foldable(const Node& n) {
  const OpSchema* op = find_op(n.op);
  if (op == nullptr || op->draws) return false;
  for (const auto& [name, value] : n.attrs) {
    const auto* g = std::get_if<std::shared_ptr<const Graph>>(&value);
    if (g == nullptr) continue;
    for (const Node& inner : (*g)->nodes()) {
      if (!foldable(inner)) return false;
    }
  }
  return true;
}

/** The shape of declared input `name` when every dim is a fixed size. */
std::optional<Shape> static_shape(const Rewrite& r, const std::string& name) {
  for (const ValueInfo& v : r.inputs) {
    if (v.name != name || !v.shape) continue;
    Shape s;
    for (const Dim& d : *v.shape) {
      if (d.size < 0) return std::nullopt;
      s.push_back(d.size);
    }
    return s;
  }
  return std::nullopt;
}

}  // namespace

// Note [Constant folding]
// A node whose every input is a constant (an initializer that is not also an input, which a run
// may override) computes the same tensor at every run: it runs once here, on the CPU, and its
// outputs become initializers. `constant` nodes fold the same way (no inputs at all), and so does
// `shape` of an input declared with fixed dims (a run checks the fed input against them). A node
// whose op refuses its constant inputs is left for the run to report.
int64_t fold_constants(Rewrite& r) {
  int64_t folded = 0;
  for (Node& n : r.nodes) {
    if (n.op.empty() || !foldable(n)) continue;
    std::vector<Tensor> args;
    bool constant = true;
    for (const std::string& in : n.inputs) {
      if (in.empty()) {
        args.emplace_back();
        continue;
      }
      const Tensor* t = r.constant(in);
      if (t == nullptr && n.op == "shape") {
        // The shape of an input declared with fixed dims is known: an expanded scalar of that
        // shape (nothing allocated) stands in for it.
        if (std::optional<Shape> fixed = static_shape(r, in)) {
          args.push_back(zeros({}, DType::Float32).expand(*fixed));
          continue;
        }
      }
      if (t == nullptr) {
        constant = false;
        break;
      }
      args.push_back(t->to(Device::cpu()));
    }
    if (!constant) continue;
    std::vector<Tensor> outs;
    try {
      outs = find_op(n.op)->run(n, args, Device::cpu());
    } catch (const Error&) {
      continue;
    }
    bool all = true;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      all = all && (n.outputs[i].empty() || (i < outs.size() && outs[i].defined()));
    }
    if (!all) continue;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (!n.outputs[i].empty()) r.initializers[n.outputs[i]] = outs[i].contiguous();
    }
    n.op.clear();
    ++folded;
  }
  return folded;
}

// Note [Removing identities]
// identity, and dropout whose mask nobody reads and that cannot be training (no training_mode
// input, or a constant false one), pass their input on: readers read the input instead. When
// the output is a graph output its name must stay, so the node stays.
int64_t eliminate_identities(Rewrite& r) {
  int64_t removed = 0;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    Node& n = r.nodes[i];
    bool pass_through = n.op == "identity";
    if (n.op == "dropout") {
      const bool no_mask =
          n.outputs.size() < 2 || n.outputs[1].empty() || r.uses(n.outputs[1]) == 0;
      bool inference = n.inputs.size() < 3 || n.inputs[2].empty();
      if (!inference) {
        const Tensor* mode = r.constant(n.inputs[2]);
        inference = mode != nullptr && mode->numel() == 1 &&
                    !mode->to(Device::cpu()).to(DType::Bool).reshape({}).item<bool>();
      }
      pass_through = no_mask && inference;
    }
    if (!pass_through || n.inputs.empty() || n.inputs[0].empty() || r.is_output(n.outputs[0])) {
      continue;
    }
    r.replace_uses(n.outputs[0], n.inputs[0]);
    r.remove(i);
    ++removed;
  }
  return removed;
}

namespace {

std::string attr_key(const Attribute& a) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Tensor>) {
          return fmt::format("tensor@{}", static_cast<const void*>(v.impl()));
        } else if constexpr (std::is_same_v<T, std::shared_ptr<const Graph>>) {
          return fmt::format("graph@{}", static_cast<const void*>(v.get()));
        } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
          return fmt::format("{}", v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return fmt::format("'{}'", v);
        } else {
          return fmt::format("[{}]", fmt::join(v, ","));
        }
      },
      a);
}

}  // namespace

// Note [Common subexpressions]
// Two nodes with the same op, inputs and attributes compute the same values (every graph op is
// a function of those, those that draw random numbers aside): the later one's readers read the
// earlier one's outputs. Nodes writing a graph output keep their names, so they stay.
int64_t eliminate_common_subexpressions(Rewrite& r) {
  int64_t removed = 0;
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    Node& n = r.nodes[i];
    if (n.op.empty() || !foldable(n)) continue;
    std::string key = fmt::format("{}({})", n.op, fmt::join(n.inputs, ","));
    for (const auto& [name, value] : n.attrs) key += fmt::format(";{}={}", name, attr_key(value));
    key += fmt::format("->{}", n.outputs.size());
    auto [it, fresh] = seen.emplace(key, i);
    if (fresh) continue;
    const Node& first = r.nodes[it->second];
    bool keeps_names = false;
    for (const std::string& out : n.outputs) keeps_names = keeps_names || r.is_output(out);
    if (keeps_names) continue;
    bool covered = true;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      covered = covered && (n.outputs[k].empty() || !first.outputs[k].empty());
    }
    if (!covered) continue;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (!n.outputs[k].empty()) r.replace_uses(n.outputs[k], first.outputs[k]);
    }
    r.remove(i);
    ++removed;
  }
  return removed;
}

// Note [Dead nodes]
// Walking back from the graph's outputs marks every value a run needs; a node making none of
// them is removed, and so is an initializer nobody reads (unless it is also an input).
int64_t eliminate_dead_nodes(Rewrite& r) {
  std::set<std::string> needed;
  for (const ValueInfo& v : r.outputs) needed.insert(v.name);
  int64_t removed = 0;
  for (size_t i = r.nodes.size(); i-- > 0;) {
    Node& n = r.nodes[i];
    if (n.op.empty()) continue;
    bool live = false;
    for (const std::string& out : n.outputs) live = live || (!out.empty() && needed.count(out));
    if (!live) {
      r.remove(i);
      ++removed;
      continue;
    }
    for (const std::string& in : n.inputs) {
      if (!in.empty()) needed.insert(in);
    }
  }
  for (auto it = r.initializers.begin(); it != r.initializers.end();) {
    if (!needed.count(it->first) && !r.is_input(it->first)) {
      it = r.initializers.erase(it);
    } else {
      ++it;
    }
  }
  return removed;
}

}  // namespace ember::graph::detail
