// Matrix products.
#pragma once

#include "ember/tensor/tensor.h"

namespace ember {

/** Matrix product with NumPy semantics: 1-d operands, broadcast batch dims. */
EMBER_API Tensor matmul(const Tensor& a, const Tensor& b);
/** 2-d matrix product [n, k] x [k, m]. */
EMBER_API Tensor mm(const Tensor& a, const Tensor& b);
/** Batched product [b, n, k] x [b, k, m]. */
EMBER_API Tensor bmm(const Tensor& a, const Tensor& b);

}  // namespace ember
