// Memory overlap: whether a tensor's elements share memory locations, with each other or with
// another tensor's. The kernel call refuses writes these make ambiguous (Note [Overlapping
// operands] in core/dispatch/call.cpp).
#pragma once

#include <cstdint>

#include "ember/tensor/tensor.h"
#include "ember/util/export.h"

namespace ember {

/** Whether some memory location holds more than one element of one tensor. */
enum class InternalOverlap : uint8_t {
  /** Every element has its own location. */
  No,
  /** Two elements share one (a stride 0 over a dim of size > 1, or another layout proven so). */
  Yes,
  /** Not decided within the search's budget (only for unusual as_strided layouts). */
  TooHard,
};

/** How the elements of two tensors lie relative to each other. */
enum class MemOverlap : uint8_t {
  /** No memory location in common. */
  None,
  /** The same elements in the same order: data pointer, item size, sizes and strides agree. */
  Full,
  /** The same memory, each tensor dense over it, in different orders (a and a.t()). */
  Permuted,
  /** Some memory location holds an element of both, and neither of the cases above holds. */
  Partial,
  /** Not decided within the search's budget: the tensors may or may not share a location. */
  TooHard,
};

/** Whether two elements of `t` refer to one memory location (Note [Deciding overlap]). */
EMBER_API InternalOverlap internal_overlap(const Tensor& t);

/** How the memory of `a` and `b` overlaps (Note [Deciding overlap]); None for an undefined or
 *  empty tensor, and for tensors whose storage blocks are disjoint. */
EMBER_API MemOverlap mem_overlap(const Tensor& a, const Tensor& b);

}  // namespace ember
