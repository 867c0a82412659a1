#include "ember/dispatch/op.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "core/dispatch/call.h"
#include "ember/dispatch/extension_ops.h"
#include "ember/dispatch/runtime.h"

namespace ember {
namespace {

struct OpRegistry {
  std::mutex mu;
  std::deque<Op> ops;  // stable addresses
  std::unordered_map<std::string, Op*> by_name;
};

// Note [Op registries outlive exit]
// Ops run on whatever threads users start, and a thread still inside an op when the process
// exits (a detached C++ thread, a Python daemon thread) keeps calling into the registries while
// exit() runs the static destructors: a destroyed deque of Ops made run_kernel read freed memory
// and crash at exit. So the registries an op call reads (these, the extension ops', the
// loader's and the device types'), and the state the profiler and the CPU plugin keep, are made
// once and never destroyed, as the plugins are never unloaded. What other libraries keep is
// theirs: oneDNN destroys its primitive cache at exit, so a thread that makes a new oneDNN
// primitive while the process exits may still crash (a cached one runs without it).
OpRegistry& op_registry() {
  static OpRegistry* r = new OpRegistry();  // never destroyed: Note [Op registries outlive exit]
  return *r;
}

// The core's ops and their schemas, made from ember/ops.def on first use (Note [One op list]).
struct CoreOps {
  std::array<OpSchema, ops::kCount> schemas;
  std::array<const Op*, ops::kCount> ops{};
  CoreOps() {
    for (int32_t i = 0; i < ops::kCount; ++i) {
      const ops::Info& info = ops::kInfo[i];
      Op& op = op_handle(info.name);
      OpSchema& s = schemas[static_cast<size_t>(i)];
      s = OpSchema{.name = info.name,
                   .plugin = "core",
                   .min_inputs = info.min_inputs,
                   .max_inputs = info.max_inputs,
                   .min_outputs = info.min_outputs,
                   .max_outputs = info.max_outputs,
                   .num_ints = info.num_ints,
                   .num_floats = info.num_floats,
                   .dtypes = info.dtypes,
                   .core = true,
                   .differentiable = (info.flags & EMBER_OPF_GRAD) != 0,
                   .optional = (info.flags & EMBER_OPF_OPTIONAL) != 0,
                   .op = &op};
      op.set_schema(&s);
      ops[static_cast<size_t>(i)] = &op;
    }
  }
};

const CoreOps& core_ops() {
  static const CoreOps* c = new CoreOps();  // never destroyed: Note [Op registries outlive exit]
  return *c;
}

}  // namespace

std::string arg_range(int32_t lo, int32_t hi, const char* word) {
  return lo == hi ? fmt::format("{} {}{}", lo, word, lo == 1 ? "" : "s")
                  : fmt::format("{} to {} {}s", lo, hi, word);
}

Op& op_handle(std::string_view name) {
  OpRegistry& r = op_registry();
  std::lock_guard lock(r.mu);
  auto it = r.by_name.find(std::string(name));
  if (it != r.by_name.end()) return *it->second;
  Op& op = r.ops.emplace_back(std::string(name));
  r.by_name.emplace(op.name(), &op);
  return op;
}

const Op& core_op(ops::Id id) {
  return *core_ops().ops[static_cast<size_t>(id)];
}

const OpSchema* find_op_schema(std::string_view name) {
  const int32_t id = ops::find(std::string(name).c_str());
  if (id >= 0) return &core_ops().schemas[static_cast<size_t>(id)];
  return find_extension_op(name);
}

const char* backward_node_name(ops::Id id) {
  // Never destroyed: backward may run at exit (Note [Op registries outlive exit]).
  static const auto* names = [] {
    auto* out = new std::array<std::string, ops::kCount>();
    for (size_t i = 0; i < out->size(); ++i) {
      std::string& s = (*out)[i];
      for (const char *name = ops::kInfo[i].name, *c = name; *c; ++c) {
        if (*c != '_') s += c == name || c[-1] == '_' ? static_cast<char>(std::toupper(*c)) : *c;
      }
      s += "Backward";
    }
    return out;
  }();
  return (*names)[static_cast<size_t>(id)].c_str();
}

std::vector<std::string> differentiable_ops() {
  std::vector<std::string> out;
#define EMBER_OP(name, min_in, max_in, min_out, max_out, dtypes, flags, ...) \
  if ((flags)&EMBER_OPF_GRAD) out.emplace_back(#name);
#define EMBER_COMPOSITE(name, flags) \
  if ((flags)&EMBER_OPF_GRAD) out.emplace_back(#name);
#include "ember/ops.def"
#undef EMBER_OP
#undef EMBER_COMPOSITE
  std::sort(out.begin(), out.end());
  return out;
}

std::string describe_schema(const OpSchema& s) {
  std::string out =
      fmt::format("{}: {} -> {}", s.core ? "core" : fmt::format("defined by plugin {}", s.plugin),
                  arg_range(s.min_inputs, s.max_inputs, "input"),
                  arg_range(s.min_outputs, s.max_outputs, "output"));
  if (s.num_ints > 0) out += fmt::format(", {} int attrs", s.num_ints);
  if (s.num_floats > 0) out += fmt::format(", {} float attrs", s.num_floats);
  if (s.core && s.differentiable) out += ", differentiable";
  if (s.optional) out += ", optional for a backend";
  if (!s.backward_name.empty()) out += fmt::format(", backward {}", s.backward_name);
  if (!s.doc.empty()) out += fmt::format("; {}", s.doc);
  return out;
}

std::vector<OpInfo> list_ops() {
  ensure_plugins_loaded();
  core_ops();  // every core op is listed, with or without kernels
  OpRegistry& r = op_registry();
  std::vector<DeviceTypeEntry> types = device_types();
  std::vector<OpInfo> out;
  std::lock_guard lock(r.mu);
  for (const Op& op : r.ops) {
    OpInfo info{op.name(), {}, {}};
    if (const OpSchema* s = op.schema()) info.schema = describe_schema(*s);
    for (size_t t = 0; t < types.size(); ++t) {
      std::vector<DType> dtypes;
      for (int d = 0; d < kNumDTypes; ++d) {
        if (op.kernels().lookup(static_cast<int16_t>(t), static_cast<DType>(d)).get()) {
          dtypes.push_back(static_cast<DType>(d));
        }
      }
      if (!dtypes.empty()) info.kernels.emplace_back(types[t].name, std::move(dtypes));
    }
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

}  // namespace ember
