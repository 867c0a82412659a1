#include "ember/dispatch/op.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "ember/dispatch/extension_ops.h"
#include "ember/plugin/loader.h"

namespace ember {
namespace {

struct OpRegistry {
  std::mutex mu;
  std::deque<Op> ops;  // stable addresses
  std::unordered_map<std::string, Op*> by_name;
};

OpRegistry& op_registry() {
  static OpRegistry r;
  return r;
}

}  // namespace

Op& op_handle(std::string_view name) {
  OpRegistry& r = op_registry();
  std::lock_guard lock(r.mu);
  auto it = r.by_name.find(std::string(name));
  if (it != r.by_name.end()) return *it->second;
  Op& op = r.ops.emplace_back(std::string(name));
  r.by_name.emplace(op.name(), &op);
  return op;
}

std::vector<OpInfo> ops() {
  ensure_plugins_loaded();
  OpRegistry& r = op_registry();
  std::vector<DeviceTypeEntry> types = device_types();
  // Read before taking the op registry's lock: committing a schema takes the extension
  // registry's lock and then this one.
  std::unordered_map<std::string, std::string> extension;
  for (const ExtensionOp* e : extension_ops()) extension[e->name] = describe_extension_op(*e);
  std::vector<OpInfo> out;
  std::lock_guard lock(r.mu);
  for (const Op& op : r.ops) {
    OpInfo info{op.name(), {}, {}};
    if (auto it = extension.find(op.name()); it != extension.end()) info.extension = it->second;
    for (size_t t = 0; t < types.size(); ++t) {
      std::vector<DType> dtypes;
      for (int d = 0; d < kNumDTypes; ++d) {
        if (op.kernels().lookup(static_cast<int16_t>(t), static_cast<DType>(d)).fn) {
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
