// DLPack interop: zero-copy export to and import from other array libraries.
#pragma once

#include "ember/tensor/tensor.h"

struct DLManagedTensor;

namespace ember {

/** Exports `t` without copying; the consumer calls the returned tensor's deleter when done. */
EMBER_API DLManagedTensor* to_dlpack(const Tensor& t);
/** Imports a DLPack tensor without copying; its deleter runs when the last view goes. */
EMBER_API Tensor from_dlpack(DLManagedTensor* managed);

}  // namespace ember
