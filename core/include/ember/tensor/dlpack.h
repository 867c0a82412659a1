// DLPack interop: zero-copy export to and import from other array libraries, in DLPack 0.x's
// DLManagedTensor and 1.0's versioned DLManagedTensorVersioned (Note [One DLPack] in
// core/ops/dlpack.cpp).
#pragma once

#include "ember/tensor/tensor.h"

struct DLManagedTensor;
struct DLManagedTensorVersioned;

namespace ember {

/** A dtype's DLPack type code and bits (one lane), as Ember exports it. */
struct DLPackType {
  uint8_t code;  ///< kDLFloat, kDLInt, kDLUInt, kDLBfloat or kDLBool
  uint8_t bits;  ///< bits per element
};
/** The DLPack type `d` travels as. */
EMBER_API DLPackType dlpack_type(DType d);
/** Exports `t` without copying (DLPack 0.x); the consumer calls the returned tensor's deleter
 *  when done. Bool is kDLBool and pinned host memory kDLCUDAHost, as PyTorch sends them. */
EMBER_API DLManagedTensor* to_dlpack(const Tensor& t);
/** Exports `t` without copying as DLPack 1.0's versioned tensor (version 1.0, no flags). */
EMBER_API DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t);
/** Imports a DLPack 0.x tensor without copying; its deleter runs when the last view goes. A
 *  refused import (a dtype, device or shape Ember cannot hold) leaves it the caller's. */
EMBER_API Tensor from_dlpack(DLManagedTensor* managed);
/** Imports a DLPack 1.x tensor: without copying, or copied when it is marked read-only (Ember's
 *  tensors are writable; the producer's deleter then runs at once). Refusals as above. */
EMBER_API Tensor from_dlpack(DLManagedTensorVersioned* managed);
/** Runs an export's deleter: for a producer whose tensor no consumer took. */
EMBER_API void dlpack_delete(DLManagedTensor* managed);
/** Runs a versioned export's deleter. */
EMBER_API void dlpack_delete(DLManagedTensorVersioned* managed);

}  // namespace ember
