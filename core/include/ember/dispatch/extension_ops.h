// Ops defined by plugins (ABI 1.1): their schemas (OpSchema, the type the core's ops share), and
// calling them by name or through a handle.
#pragma once

#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ember/dispatch/op.h"
#include "ember/plugin_abi.h"
#include "ember/tensor/tensor.h"
#include "ember/util/export.h"

namespace ember {

/** Calls the op a plugin defined under `op` ("myext::fused_bias_gelu") with `inputs` and
 *  attributes; returns its outputs. Records autograd history when an input requires grad. */
EMBER_API std::vector<Tensor> call(std::string_view op, std::vector<Tensor> inputs,
                                   std::vector<int64_t> ints = {}, std::vector<double> floats = {});

/** call() for an op with exactly one output: returns that output. */
EMBER_API Tensor call_one(std::string_view op, std::vector<Tensor> inputs,
                          std::vector<int64_t> ints = {}, std::vector<double> floats = {});

// Note [OpHandle]
// ember::call looks the op up by name on every call. An OpHandle looks it up once, on first
// use (so a handle may be made, even as a static, before the plugin is loaded) and then keeps
// a pointer to the op's schema, which stays valid for the life of the process: committed
// schemas are never removed.
/** A cached handle to an op defined by a plugin: `OpHandle gelu("myext::fused_bias_gelu");
 *  Tensor y = gelu(x, bias);`. Cheap to copy; thread-safe. */
class EMBER_API OpHandle {
 public:
  /** A handle to op `name`; nothing is looked up until the first call. */
  explicit OpHandle(std::string name) : name_(std::move(name)) {}
  OpHandle(const OpHandle& o)
      : name_(o.name_), cached_(o.cached_.load(std::memory_order_acquire)) {}
  OpHandle& operator=(const OpHandle& o) {
    name_ = o.name_;
    cached_.store(o.cached_.load(std::memory_order_acquire), std::memory_order_release);
    return *this;
  }
  /** The op's name. */
  const std::string& name() const { return name_; }
  /** The schema (looked up on first use; throws if no loaded plugin defines the op). */
  const OpSchema& schema() const;
  /** Runs the op with attributes; returns all outputs. */
  std::vector<Tensor> call(std::vector<Tensor> inputs, std::vector<int64_t> ints = {},
                           std::vector<double> floats = {}) const;
  /** Runs an op with one output on tensor inputs: h(x, bias). */
  template <typename... Ts>
  Tensor operator()(const Ts&... inputs) const {
    static_assert((std::is_convertible_v<const Ts&, Tensor> && ...), "inputs must be tensors");
    return call_one({Tensor(inputs)...});
  }
  /** Runs an op with one output; returns it. */
  Tensor call_one(std::vector<Tensor> inputs, std::vector<int64_t> ints = {},
                  std::vector<double> floats = {}) const;

 private:
  std::string name_;
  mutable std::atomic<const OpSchema*> cached_{nullptr};  // set once, then only read
};

/** The schema of extension op `name`, or null (runs discovery first). */
EMBER_API const OpSchema* find_extension_op(std::string_view name);

/** Every op defined by a plugin, sorted by name. */
EMBER_API std::vector<const OpSchema*> extension_ops();

namespace detail {

/** The schema of the op a plugin defined under `name`; throws naming the known ops if none. */
EMBER_API const OpSchema& extension_op(std::string_view name);

/** Schemas a plugin registered during init, validated and kept aside until it succeeds. */
struct StagedOpSchemas {
  std::vector<OpSchema> schemas;
  std::string error;  // the first malformed schema; fails the plugin's init
};

/** Stages a copy of `schema` (the op_schema registrar callback); EMBER_ERR_INVALID and
 *  `staged.error` set if it is malformed. */
EMBER_API int32_t stage_op_schema(StagedOpSchemas& staged, const ember_op_schema_v1* schema);

/** What committing a plugin's schemas did. */
struct CommittedOpSchemas {
  std::string error;               // nonempty: nothing was committed, init counts as failed
  std::set<std::string> rejected;  // names another plugin defined first: drop this plugin's kernels
  std::vector<std::string> conflicts;  // one line per rejected schema, for the plugin report
};

/** Commits the staged schemas of `plugin` (all or, on a validation error, none). Called by
 *  the loader after init succeeded and before its kernels are committed. */
EMBER_API CommittedOpSchemas commit_op_schemas(StagedOpSchemas& staged, const std::string& plugin);

}  // namespace detail
}  // namespace ember
