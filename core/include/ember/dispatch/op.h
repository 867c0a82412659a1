// Op: one operator's identity, schema and kernel table. The core's ops are declared in
// <ember/ops.def> and their semantics live in core/ops/<family>.cpp; plugins define theirs with
// ember_registrar_v1::op_schema. Both kinds share one schema type.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "ember/dispatch/kernel_table.h"
#include "ember/plugin_abi.h"
#include "ember/plugin_sdk_ops.hpp"
#include "ember/tensor/dtype.h"
#include "ember/util/export.h"

namespace ember {

class Op;

/** What the core knows of an op besides its kernels: one type for the core's ops (made from
 *  ember/ops.def, plugin "core") and for the ops plugins define (from ember_op_schema_v1). */
struct OpSchema {
  std::string name;                        // "add", "myext::fused_bias_gelu"
  std::string doc;                         // one line, may be empty
  std::string plugin;                      // "core", or the plugin that defined it
  int32_t min_inputs = 0, max_inputs = 0;  // a plugin's op: exact (min == max)
  int32_t min_outputs = 1, max_outputs = 1;
  int32_t num_ints = 0, num_floats = 0;  // -1: any number
  uint32_t dtypes = 0;                   // dtypes of the core's kernels (ember_dtype bits); 0: any
  uint32_t flags = 0;                    // EMBER_OP_* (how the core calls a plugin's op)
  bool core = false;                     // one of the core's ops (plugin "core")
  bool differentiable = false;
  bool optional = false;           // a backend may leave its kernel out (core ops)
  ember_infer_fn infer = nullptr;  // shape inference of a plugin's op
  std::string backward_name;       // a plugin's op: its backward op, empty if none
  uint32_t differentiable_inputs = 0, saved_inputs = 0, saved_outputs = 0;
  const Op* op = nullptr;              // its kernel table
  const OpSchema* backward = nullptr;  // resolved when committed
};

/** An operator: its name, schema (once known) and kernels. */
class EMBER_API Op {
 public:
  explicit Op(std::string name) : name_(std::move(name)) {}
  /** The op's name, e.g. "add" or "myext::fused_gelu". */
  const std::string& name() const { return name_; }
  /** Its kernels. */
  KernelTable& kernels() { return kernels_; }
  const KernelTable& kernels() const { return kernels_; }
  /** Its schema: a core op's from the start, a plugin's once committed; else null. */
  const OpSchema* schema() const { return schema_.load(std::memory_order_acquire); }
  /** Sets the schema (once, by the core). */
  void set_schema(const OpSchema* s) { schema_.store(s, std::memory_order_release); }

 private:
  std::string name_;
  KernelTable kernels_;
  std::atomic<const OpSchema*> schema_{nullptr};
};

/** The op of this name, created on first request; the reference stays valid forever. */
EMBER_API Op& op_handle(std::string_view name);

/** The core's op `id` (ember/ops.def); one array index after the first call. */
EMBER_API const Op& core_op(ops::Id id);

/** The schema of op `name`, the core's or a plugin's, or null (runs discovery first). */
EMBER_API const OpSchema* find_op_schema(std::string_view name);

/** Every op of the core ember/ops.def declares differentiable (kernel ops and composites), sorted;
 *  the gradcheck suite proves each has a case. */
EMBER_API std::vector<std::string> differentiable_ops();

/** True if `op` has a kernel for (device type, dtype). */
EMBER_API bool has_kernel(const Op& op, Device device, DType dtype);

/** What `ember ops` lists for one op. */
struct OpInfo {
  std::string name;
  /** Per device type that has kernels: its name and the dtypes covered. */
  std::vector<std::pair<std::string, std::vector<DType>>> kernels;
  /** Its schema in one line: "core: 2 inputs -> 1 output, differentiable" or "defined by
   *  plugin p: 2 inputs -> 1 output, backward myext::x_backward". */
  std::string schema;
};

/** Every op with the device types and dtypes that have kernels, sorted by name. */
EMBER_API std::vector<OpInfo> list_ops();

/** "2 inputs -> 1 output, ...": how `ember ops` describes a schema. */
EMBER_API std::string describe_schema(const OpSchema& schema);

}  // namespace ember
