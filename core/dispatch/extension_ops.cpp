#include "ember/dispatch/extension_ops.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstddef>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include <fmt/format.h>

#include "core/dispatch/call.h"
#include "ember/dispatch/runtime.h"
#include "ember/util/error.h"

namespace ember {
namespace {

// Committed schemas: a deque so their addresses (cached by OpHandle and by backward links)
// stay valid forever; nothing is ever removed once committed.
struct ExtensionRegistry {
  std::shared_mutex mu;
  std::deque<OpSchema> ops;
  std::unordered_map<std::string, const OpSchema*> by_name;
};

ExtensionRegistry& extension_registry() {
  // Never destroyed: ops may run at exit (Note [Op registries outlive exit] in op.cpp).
  static ExtensionRegistry* r = new ExtensionRegistry();
  return *r;
}

const OpSchema* find_locked(ExtensionRegistry& r, const std::string& name) {
  auto it = r.by_name.find(name);
  return it == r.by_name.end() ? nullptr : it->second;
}

bool is_identifier(std::string_view s, bool allow_dot) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (allow_dot && c == '.');
  });
}

// Note [Names of ops defined by plugins]
// The rule is by name: core ops (ember/ops.def) have no namespace, plugin ops are
// "namespace::op", and "ember" is reserved, so no plugin op can ever clash with a core op the
// list gains later. A schema named like a core op ("relu") fails its plugin's init; two plugins
// defining one "ns::op" is a conflict the first one wins.
std::string name_problem(std::string_view name) {
  const size_t sep = name.find("::");
  if (sep == std::string_view::npos) {
    return "names without a namespace belong to the core's ops; name it 'yourext::" +
           std::string(name) + "'";
  }
  const std::string_view ns = name.substr(0, sep), op = name.substr(sep + 2);
  if (!is_identifier(ns, false) || !is_identifier(op, true)) {
    return "expected 'namespace::op' made of letters, digits and '_'";
  }
  if (ns == "ember") return "the namespace 'ember' is reserved for the core";
  return {};
}

std::string arg_list(int n, const char* word) {
  return arg_range(n, n, word);
}

[[noreturn]] void unknown_op(std::string_view name) {
  std::vector<std::string> known;
  for (const OpSchema* e : extension_ops()) known.push_back(e->name);
  if (name.find("::") == std::string_view::npos) {
    throw PluginError(fmt::format(
        "[{}] not an op defined by a plugin: ops without a namespace are the core's, call them "
        "through their C++ functions (ember::{}(...)); ops defined by plugins: {}",
        name, name, known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
  }
  throw NotImplementedError(fmt::format(
      "[{}] unknown op: no loaded plugin defines it (ops defined by plugins: {}; load the "
      "plugin that defines it with ember::load_plugin(path) or EMBER_PLUGIN_PATH, see `ember "
      "plugins`)",
      name, known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
}

}  // namespace

const OpSchema* find_extension_op(std::string_view name) {
  ensure_plugins_loaded();
  ExtensionRegistry& r = extension_registry();
  std::shared_lock lock(r.mu);
  return find_locked(r, std::string(name));
}

std::vector<const OpSchema*> extension_ops() {
  ensure_plugins_loaded();
  ExtensionRegistry& r = extension_registry();
  std::shared_lock lock(r.mu);
  std::vector<const OpSchema*> out;
  for (const OpSchema& e : r.ops) out.push_back(&e);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return out;
}

namespace detail {

const OpSchema& extension_op(std::string_view name) {
  const OpSchema* e = find_extension_op(name);
  if (!e) unknown_op(name);
  return *e;
}

int32_t stage_op_schema(StagedOpSchemas& staged, const ember_op_schema_v1* schema) {
  auto reject = [&](const std::string& why) {
    if (staged.error.empty()) staged.error = why;
    return static_cast<int32_t>(EMBER_ERR_INVALID);
  };
  if (!schema ||
      schema->struct_size < offsetof(ember_op_schema_v1, saved_outputs) + sizeof(uint32_t)) {
    return reject("op schema table is incomplete (struct_size too small)");
  }
  const std::string name = schema->name ? schema->name : "";
  const std::string what = fmt::format("op schema '{}'", name);
  if (std::string why = name_problem(name); !why.empty()) {
    return reject(fmt::format("{}: {}", what, why));
  }
  if (schema->num_inputs < 0 || schema->num_inputs > EMBER_OP_MAX_ARGS || schema->num_outputs < 1 ||
      schema->num_outputs > EMBER_OP_MAX_ARGS) {
    return reject(fmt::format("{}: {} inputs and {} outputs (allowed: 0..{} inputs, 1..{} outputs)",
                              what, schema->num_inputs, schema->num_outputs, EMBER_OP_MAX_ARGS,
                              EMBER_OP_MAX_ARGS));
  }
  if (schema->num_ints < -1 || schema->num_floats < -1) {
    return reject(fmt::format("{}: attribute counts must be >= 0, or -1 for any", what));
  }
  if (!schema->infer) return reject(fmt::format("{}: no infer callback", what));
  const uint32_t in_mask = (1u << schema->num_inputs) - 1u;
  const uint32_t out_mask = (1u << schema->num_outputs) - 1u;
  const bool has_backward = schema->backward_op && schema->backward_op[0];
  if (has_backward) {
    if ((schema->differentiable_inputs & ~in_mask) || (schema->saved_inputs & ~in_mask) ||
        (schema->saved_outputs & ~out_mask)) {
      return reject(
          fmt::format("{}: a backward mask names an input or output it does not have", what));
    }
    if (schema->differentiable_inputs == 0) {
      return reject(
          fmt::format("{}: backward op {} but no differentiable input", what, schema->backward_op));
    }
  }
  for (const OpSchema& e : staged.schemas) {
    if (e.name == name) return reject(fmt::format("{}: registered twice", what));
  }
  OpSchema e;
  e.name = name;
  e.doc = schema->doc ? schema->doc : "";
  e.min_inputs = e.max_inputs = schema->num_inputs;
  e.min_outputs = e.max_outputs = schema->num_outputs;
  e.num_ints = schema->num_ints;
  e.num_floats = schema->num_floats;
  e.flags = schema->flags;
  e.infer = schema->infer;
  if (has_backward) {
    e.backward_name = schema->backward_op;
    e.differentiable_inputs = schema->differentiable_inputs;
    e.saved_inputs = schema->saved_inputs;
    e.saved_outputs = schema->saved_outputs;
  }
  staged.schemas.push_back(std::move(e));
  return EMBER_OK;
}

CommittedOpSchemas commit_op_schemas(StagedOpSchemas& staged, const std::string& plugin) {
  CommittedOpSchemas result;
  if (staged.schemas.empty()) return result;
  ExtensionRegistry& r = extension_registry();
  std::unique_lock lock(r.mu);

  // 1. Names another plugin defined first are rejected, with the ops whose backward they are.
  std::map<std::string, const OpSchema*> mine;  // this plugin's accepted schemas
  for (OpSchema& e : staged.schemas) {
    e.plugin = plugin;
    if (const OpSchema* other = find_locked(r, e.name)) {
      result.rejected.insert(e.name);
      result.conflicts.push_back(fmt::format(
          "op {} of plugin {} rejected: plugin {} defined it first (its kernels for it dropped)",
          e.name, plugin, other->plugin));
    }
  }
  for (OpSchema& e : staged.schemas) {
    if (!result.rejected.count(e.name) && result.rejected.count(e.backward_name)) {
      result.rejected.insert(e.name);
      result.conflicts.push_back(
          fmt::format("op {} of plugin {} rejected: its backward op {} was rejected", e.name,
                      plugin, e.backward_name));
    }
  }
  for (const OpSchema& e : staged.schemas) {
    if (!result.rejected.count(e.name)) mine.emplace(e.name, &e);
  }

  // 2. Validate every backward link before committing anything.
  for (const auto& [name, e] : mine) {
    if (e->backward_name.empty()) continue;
    const OpSchema* bw = nullptr;
    if (auto it = mine.find(e->backward_name); it != mine.end()) bw = it->second;
    if (!bw) bw = find_locked(r, e->backward_name);
    if (!bw) {
      result.error = fmt::format("op schema '{}': its backward op '{}' is not defined", name,
                                 e->backward_name);
      return result;
    }
    const int want_in =
        e->max_outputs + std::popcount(e->saved_inputs) + std::popcount(e->saved_outputs);
    const int want_out = std::popcount(e->differentiable_inputs);
    if (bw->max_inputs != want_in || bw->max_outputs != want_out) {
      result.error = fmt::format(
          "op schema '{}': its backward op '{}' takes {} and gives {}, expected {} (output "
          "gradients and saved tensors) and {} (one per differentiable input)",
          name, bw->name, arg_list(bw->max_inputs, "input"), arg_list(bw->max_outputs, "output"),
          arg_list(want_in, "input"), arg_list(want_out, "output"));
      return result;
    }
  }

  // 3. Commit, then link backwards to their committed addresses.
  std::vector<OpSchema*> added;
  for (OpSchema& e : staged.schemas) {
    if (result.rejected.count(e.name)) continue;
    Op& handle = op_handle(e.name);
    e.op = &handle;
    OpSchema& c = r.ops.emplace_back(std::move(e));
    handle.set_schema(&c);
    r.by_name.emplace(c.name, &c);
    added.push_back(&c);
  }
  for (OpSchema* e : added) {
    if (!e->backward_name.empty()) e->backward = find_locked(r, e->backward_name);
  }
  staged.schemas.clear();
  return result;
}

}  // namespace detail
}  // namespace ember
