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

#include "core/dispatch/call.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"
#include "ember/ops/factory.h"
#include "ember/plugin/loader.h"
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

std::string doc_hint(const OpSchema& e) {
  return e.doc.empty() ? std::string() : fmt::format(" ({}: {})", e.name, e.doc);
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

const OpSchema& lookup(std::string_view name) {
  const OpSchema* e = find_extension_op(name);
  if (!e) unknown_op(name);
  return *e;
}

ember_tensor describe_meta(const Tensor& t) {
  ember_tensor d{};
  d.data = nullptr;
  d.dtype = static_cast<int32_t>(t.dtype());
  d.ndim = static_cast<int32_t>(t.dim());
  d.sizes = t.sizes().data();
  d.strides = t.strides().data();
  d.device_type = t.device().type;
  d.device_index = t.device().index;
  return d;
}

std::vector<Tensor> run(const OpSchema& e, const std::vector<Tensor>& inputs,
                        const std::vector<int64_t>& ints, const std::vector<double>& floats);

// Note [Autograd for ops defined by plugins]
// The forward records one node with an edge to every input. Its backward calls the schema's
// backward op (Note [Backward of an op defined by a plugin] in plugin_abi.h) with the output
// gradients and the saved tensors, and hands each differentiable input its gradient. Inputs
// are saved as SavedTensors and outputs through save_output (no reference cycle), so an
// in-place change between forward and backward is reported. The backward op runs through
// run() like any call: under create_graph its inputs require grad, and since a backward op
// has no backward of its own, reaching it in a second backward throws (first order only).
void record_backward(const OpSchema& e, const std::vector<Tensor>& inputs,
                     std::vector<Tensor>& outputs, const std::vector<int64_t>& ints,
                     const std::vector<double>& floats) {
  std::vector<Tensor*> outs;
  for (Tensor& t : outputs) outs.push_back(&t);
  const std::string node_name = e.name + "Backward";
  if (!e.backward) {
    const std::string name = e.name;
    autograd::record(
        node_name, e.name.c_str(), inputs, outs,
        [name](const std::vector<Tensor>&, const autograd::LambdaNode&) -> std::vector<Tensor> {
          throw NotImplementedError(
              fmt::format("[{}] is not differentiable: its schema names no backward op (an "
                          "input required grad)",
                          name));
        });
    return;
  }
  std::vector<autograd::SavedTensor> saved;
  for (int i = 0; i < e.max_inputs; ++i) {
    if (e.saved_inputs & (1u << i)) saved.emplace_back(inputs[i]);
  }
  std::vector<Shape> sizes;
  std::vector<DType> dtypes;
  for (const Tensor& t : inputs) {
    sizes.push_back(t.sizes());
    dtypes.push_back(t.dtype());
  }
  const OpSchema* fw = &e;
  auto node = autograd::record(
      node_name, e.name.c_str(), inputs, outs,
      [fw, saved = std::move(saved), sizes = std::move(sizes), dtypes = std::move(dtypes), ints,
       floats](const std::vector<Tensor>& grads, const autograd::LambdaNode& self) {
        std::vector<Tensor> args(grads.begin(), grads.end());
        for (const autograd::SavedTensor& s : saved) args.push_back(self.unpack(s));
        const int n_saved_out = std::popcount(fw->saved_outputs);
        for (int j = 0; j < n_saved_out; ++j) args.push_back(self.saved_output(j));
        std::vector<Tensor> g = run(*fw->backward, args, ints, floats);
        std::vector<Tensor> result(static_cast<size_t>(fw->max_inputs));
        size_t k = 0;
        for (int i = 0; i < fw->max_inputs; ++i) {
          if (!(fw->differentiable_inputs & (1u << i))) continue;
          Tensor gi = std::move(g[k++]);
          EMBER_CHECK_PLUGIN(
              gi.sizes() == sizes[i],
              "[{}] gradient for input {} of {} has shape {}, the input has {} (the "
              "backward op's shape inference must give each gradient its input's shape)",
              fw->backward->name, i, fw->name, shape_str(gi.sizes()), shape_str(sizes[i]));
          result[i] = gi.dtype() == dtypes[i] ? gi : gi.to(dtypes[i]);
        }
        return result;
      });
  for (int j = 0; j < e.max_outputs; ++j) {
    if (e.saved_outputs & (1u << j)) node->save_output(outputs[j]);
  }
}

std::vector<Tensor> run(const OpSchema& e, const std::vector<Tensor>& inputs,
                        const std::vector<int64_t>& ints, const std::vector<double>& floats) {
  const char* name = e.name.c_str();
  EMBER_CHECK_PLUGIN(static_cast<int32_t>(inputs.size()) == e.max_inputs,
                     "[{}] expected {}, got {}{}", name, arg_list(e.max_inputs, "input"),
                     inputs.size(), doc_hint(e));
  EMBER_CHECK_PLUGIN(e.num_ints < 0 || static_cast<int32_t>(ints.size()) == e.num_ints,
                     "[{}] expected {}, got {}{}", name, arg_list(e.num_ints, "integer attribute"),
                     ints.size(), doc_hint(e));
  EMBER_CHECK_PLUGIN(e.num_floats < 0 || static_cast<int32_t>(floats.size()) == e.num_floats,
                     "[{}] expected {}, got {}{}", name,
                     arg_list(e.num_floats, "floating attribute"), floats.size(), doc_hint(e));
  Device device;
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK_TYPE(inputs[i].defined(), "[{}] input {} is an undefined tensor", name, i);
    if (i == 0) {
      device = inputs[0].device();
    } else {
      EMBER_CHECK_TYPE(
          inputs[i].device() == device,
          "[{}] expected all tensors on one device: got {} and {} (move them with .to())", name,
          device.str(), inputs[i].device().str());
    }
  }

  // Shape inference, before anything is allocated.
  ember_tensor meta[EMBER_OP_MAX_ARGS];
  for (size_t i = 0; i < inputs.size(); ++i) meta[i] = describe_meta(inputs[i]);
  ember_output_info info[EMBER_OP_MAX_ARGS];
  for (int j = 0; j < e.max_outputs; ++j) {
    info[j].dtype = inputs.empty() ? EMBER_F32 : meta[0].dtype;
    info[j].ndim = -1;
  }
  char error[512];
  error[0] = '\0';
  ember_infer_call ic{};
  ic.struct_size = sizeof(ic);
  ic.op = name;
  ic.num_inputs = e.max_inputs;
  ic.inputs = meta;
  ic.num_outputs = e.max_outputs;
  ic.outputs = info;
  ic.num_ints = static_cast<int32_t>(ints.size());
  ic.ints = ints.data();
  ic.num_floats = static_cast<int32_t>(floats.size());
  ic.floats = floats.data();
  ic.error = error;
  ic.error_capacity = sizeof(error);
  const int32_t status = e.infer(&ic);
  error[sizeof(error) - 1] = '\0';
  EMBER_CHECK(status == EMBER_OK, "[{}] {}", name,
              error[0] ? error : "inputs rejected by shape inference (no reason given)");
  for (int j = 0; j < e.max_outputs; ++j) {
    const ember_output_info& o = info[j];
    EMBER_CHECK_PLUGIN(o.ndim >= 0 && o.ndim <= EMBER_MAX_DIMS && o.dtype >= 0 &&
                           o.dtype < EMBER_NUM_DTYPES &&
                           std::all_of(o.sizes, o.sizes + o.ndim, [](int64_t s) { return s >= 0; }),
                       "[{}] shape inference of plugin {} gave output {} an invalid shape or dtype "
                       "(ndim {}, dtype {}): a bug in the plugin",
                       name, e.plugin, j, o.ndim, o.dtype);
  }

  bool needs_grad = false;
  if (autograd::is_grad_enabled()) {
    needs_grad = std::any_of(inputs.begin(), inputs.end(),
                             [](const Tensor& t) { return t.requires_grad(); });
  }

  std::vector<Tensor> outputs;
  outputs.reserve(static_cast<size_t>(e.max_outputs));
  {
    autograd::NoGradGuard below_autograd;
    std::vector<Tensor> args;
    const std::vector<Tensor>* kernel_inputs = &inputs;
    if (e.flags & EMBER_OP_CONTIGUOUS_INPUTS) {
      args.reserve(inputs.size());
      for (const Tensor& t : inputs) args.push_back(t.is_contiguous() ? t : t.contiguous());
      kernel_inputs = &args;
    }
    bool any_work = false;
    for (int j = 0; j < e.max_outputs; ++j) {
      outputs.push_back(empty(IntList(info[j].sizes, static_cast<size_t>(info[j].ndim)),
                              TensorOptions(static_cast<DType>(info[j].dtype), device)));
      any_work = any_work || outputs.back().numel() > 0;
    }
    // Note [Empty outputs skip the kernel]: with nothing to write there is nothing to run, so
    // kernels never see a zero-size launch.
    if (any_work) {
      const Tensor* in[EMBER_OP_MAX_ARGS];
      const Tensor* out[EMBER_OP_MAX_ARGS];
      for (size_t i = 0; i < kernel_inputs->size(); ++i) in[i] = &(*kernel_inputs)[i];
      for (size_t j = 0; j < outputs.size(); ++j) out[j] = &outputs[j];
      const DType dispatch = inputs.empty() ? outputs[0].dtype() : (*kernel_inputs)[0].dtype();
      run_kernel(*e.op, dispatch, std::span<const Tensor* const>(in, kernel_inputs->size()),
                 std::span<const Tensor* const>(out, outputs.size()),
                 KernelAttrs{std::span<const int64_t>(ints), std::span<const double>(floats)});
    }
  }
  if (needs_grad) record_backward(e, inputs, outputs, ints, floats);
  return outputs;
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

std::vector<Tensor> call(std::string_view op, std::vector<Tensor> inputs, std::vector<int64_t> ints,
                         std::vector<double> floats) {
  return run(lookup(op), inputs, ints, floats);
}

Tensor call_one(std::string_view op, std::vector<Tensor> inputs, std::vector<int64_t> ints,
                std::vector<double> floats) {
  const OpSchema& e = lookup(op);
  EMBER_CHECK_PLUGIN(e.max_outputs == 1, "[{}] has {}: use ember::call, which returns them all",
                     e.name, arg_list(e.max_outputs, "output"));
  return std::move(run(e, inputs, ints, floats)[0]);
}

const OpSchema& OpHandle::schema() const {
  const OpSchema* e = cached_.load(std::memory_order_acquire);
  if (__builtin_expect(e == nullptr, 0)) {
    e = &lookup(name_);
    cached_.store(e, std::memory_order_release);
  }
  return *e;
}

std::vector<Tensor> OpHandle::call(std::vector<Tensor> inputs, std::vector<int64_t> ints,
                                   std::vector<double> floats) const {
  return run(schema(), inputs, ints, floats);
}

Tensor OpHandle::call_one(std::vector<Tensor> inputs, std::vector<int64_t> ints,
                          std::vector<double> floats) const {
  const OpSchema& e = schema();
  EMBER_CHECK_PLUGIN(e.max_outputs == 1, "[{}] has {}: use OpHandle::call, which returns them all",
                     e.name, arg_list(e.max_outputs, "output"));
  return std::move(run(e, inputs, ints, floats)[0]);
}

namespace detail {

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
