// Op: one operator's identity and kernel table; its semantics live in core/ops/<family>.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ember/dispatch/kernel_table.h"
#include "ember/tensor/dtype.h"
#include "ember/util/export.h"

namespace ember {

/** An operator known to the core: declared by core/ops or registered by a plugin. */
class EMBER_API Op {
 public:
  explicit Op(std::string name) : name_(std::move(name)) {}
  /** The op's name, e.g. "add" or "myext::fused_gelu". */
  const std::string& name() const { return name_; }
  /** Its kernels. */
  KernelTable& kernels() { return kernels_; }
  const KernelTable& kernels() const { return kernels_; }

 private:
  std::string name_;
  KernelTable kernels_;
};

/** The op of this name, created on first request; the reference stays valid forever. */
EMBER_API Op& op_handle(std::string_view name);

/** Defines `const Op& <name>_op()`, the cached handle of op "<name>" (one lookup, ever). */
#define EMBER_DEFINE_OP(name)                                 \
  const ::ember::Op& name##_op() {                            \
    static const ::ember::Op& op = ::ember::op_handle(#name); \
    return op;                                                \
  }

/** True if `op` has a kernel for (device type, dtype). */
EMBER_API bool has_kernel(const Op& op, Device device, DType dtype);

/** What `ember ops` lists for one op. */
struct OpInfo {
  std::string name;
  /** Per device type that has kernels: its name and the dtypes covered. */
  std::vector<std::pair<std::string, std::vector<DType>>> kernels;
  /** For an op a plugin defined (ABI 1.1): who defined it, its arity and backward; else "". */
  std::string extension;
};

/** Every op with the device types and dtypes that have kernels, sorted by name. */
EMBER_API std::vector<OpInfo> ops();

}  // namespace ember
