// Running a kernel: device/dtype lookup, descriptors, status check. The end of every op's path.
#pragma once

#include <initializer_list>
#include <span>
#include <string>

#include "ember/dispatch/op.h"
#include "ember/tensor/tensor.h"
#include "ember/util/export.h"

namespace ember {

/** At most this many inputs, and as many outputs, in one kernel call. */
inline constexpr int kMaxKernelArgs = 16;

/** Attributes passed to a kernel; their meaning is fixed by the op's declaration. */
struct KernelAttrs {
  std::span<const int64_t> ints;
  std::span<const double> floats;
};

/** Runs op's kernel for `dtype` on the device of the first output (or input); throws on failure.
 *  All tensors must be on one device; outputs are already allocated. */
EMBER_API void run_kernel(const Op& op, DType dtype, std::span<const Tensor* const> inputs,
                          std::span<const Tensor* const> outputs, KernelAttrs attrs = {});

/** run_kernel with braced lists: run_kernel(op, dt, {&a, &b}, {&out}). */
inline void run_kernel(const Op& op, DType dtype, std::initializer_list<const Tensor*> inputs,
                       std::initializer_list<const Tensor*> outputs, KernelAttrs attrs = {}) {
  run_kernel(op, dtype, std::span<const Tensor* const>(inputs.begin(), inputs.size()),
             std::span<const Tensor* const>(outputs.begin(), outputs.size()), attrs);
}

/** An ember::attrs struct laid out for a kernel call, for a helper that picks the op at run time
 *  among ops of one layout: run_kernel(op, dt, {&x}, {&y}, PackedAttrs(attrs::sum{...})). */
class PackedAttrs {
 public:
  template <typename A>
  explicit PackedAttrs(const A& attrs)
      : num_ints_(ops::kInfo[A::kOp].num_ints), num_floats_(ops::kInfo[A::kOp].num_floats) {
    static_assert(ops::kInfo[A::kOp].num_ints <= 16 && ops::kInfo[A::kOp].num_floats <= 16);
    attrs.write(ints_, floats_);
  }
  operator KernelAttrs() const {  // NOLINT(google-explicit-constructor)
    return {{ints_, static_cast<size_t>(num_ints_)}, {floats_, static_cast<size_t>(num_floats_)}};
  }

 private:
  int64_t ints_[16];
  double floats_[16];
  int32_t num_ints_, num_floats_;
};

/** Runs core op A::kOp's kernel, its attributes by name: run_kernel(attrs::softmax{.dim = d},
 *  dtype, {&x}, {&y}) (the op and the positions come from ember/ops.def). */
template <typename A>
void run_kernel(const A& attrs, DType dtype, std::initializer_list<const Tensor*> inputs,
                std::initializer_list<const Tensor*> outputs) {
  run_kernel(core_op(A::kOp), dtype, inputs, outputs, PackedAttrs(attrs));
}

namespace detail {
/** Throws NotImplementedError for an output `out` whose elements overlap, naming op `name`. */
[[noreturn]] EMBER_API void refuse_internal_overlap(const std::string& name, const Tensor& out);
}  // namespace detail

/** True if the kernel of `op` for (device, dtype) exists and was registered with `flag`
 *  (EMBER_KERNEL_*). */
EMBER_API bool kernel_has_flag(const Op& op, Device device, DType dtype, uint32_t flag);

/** Runs an image op's kernel in memory format `format` (Note [Channels-last kernels] in
 *  plugin_abi.h): every 4-d operand is handed dense in that format when the kernel takes it and
 *  row-major otherwise; other operands row-major. Inputs are reordered as needed; an output not
 *  already in the kernel's layout receives a copy of the kernel's result. */
EMBER_API void run_image_kernel(const Op& op, DType dtype, MemoryFormat format,
                                std::span<const Tensor* const> inputs,
                                std::span<const Tensor* const> outputs, KernelAttrs attrs = {});

/** run_image_kernel with braced lists. */
inline void run_image_kernel(const Op& op, DType dtype, MemoryFormat format,
                             std::initializer_list<const Tensor*> inputs,
                             std::initializer_list<const Tensor*> outputs, KernelAttrs attrs = {}) {
  run_image_kernel(op, dtype, format, std::span<const Tensor* const>(inputs.begin(), inputs.size()),
                   std::span<const Tensor* const>(outputs.begin(), outputs.size()), attrs);
}

/** run_image_kernel of core op A::kOp, its attributes by name. */
template <typename A>
requires requires {
  A::kOp;
}
void run_image_kernel(const A& attrs, DType dtype, MemoryFormat format,
                      std::initializer_list<const Tensor*> inputs,
                      std::initializer_list<const Tensor*> outputs) {
  run_image_kernel(
      core_op(A::kOp), dtype, format, std::span<const Tensor* const>(inputs.begin(), inputs.size()),
      std::span<const Tensor* const>(outputs.begin(), outputs.size()), PackedAttrs(attrs));
}

/** "2 inputs", "1 output", "2 to 3 inputs": a count (or range) of `word`s for messages. */
EMBER_API std::string arg_range(int32_t lo, int32_t hi, const char* word);

/** The name of core op `id`'s autograd node: "LogSoftmaxBackward" for log_softmax (made once). */
EMBER_API const char* backward_node_name(ops::Id id);

/** Checks that all defined tensors share one device; returns it. */
EMBER_API Device common_device(std::initializer_list<const Tensor*> tensors, const char* op);

/** Checks that all defined tensors share one dtype (TypeError otherwise); returns it. For the ops
 *  PyTorch gives no type promotion: products, convolutions, normalisation weights (Note [Ops
 *  that take one dtype]). */
EMBER_API DType common_dtype(std::initializer_list<const Tensor*> tensors, const char* op);

}  // namespace ember
