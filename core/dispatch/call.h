// Running a kernel: device/dtype lookup, descriptors, status check. The end of every op's path.
#pragma once

#include <initializer_list>
#include <span>

#include "ember/dispatch/op.h"
#include "ember/tensor/tensor.h"
#include "ember/util/export.h"

namespace ember {

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

/** Checks that all defined tensors share one device; returns it. */
EMBER_API Device common_device(std::initializer_list<const Tensor*> tensors, const char* op);

}  // namespace ember
