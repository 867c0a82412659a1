// Matrix products and einsum.
#pragma once

#include <string_view>
#include <vector>

#include "ember/tensor/tensor.h"

namespace ember {

/** Matrix product with NumPy semantics: 1-d operands, broadcast batch dims. */
EMBER_API Tensor matmul(const Tensor& a, const Tensor& b);
/** 2-d matrix product [n, k] x [k, m]. */
EMBER_API Tensor mm(const Tensor& a, const Tensor& b);
/** Batched product [b, n, k] x [b, k, m]. */
EMBER_API Tensor bmm(const Tensor& a, const Tensor& b);
/** Einstein summation (PyTorch's einsum): "ij,jk->ik", "bhqd,bhkd->bhqk", "ii->i", "...ij->...ji";
 *  implicit output (no "->") is the ellipsis then the labels used once, in order. */
EMBER_API Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands);

/** The p-norm distances between the rows of x1 [..., P, M] and of x2 [..., R, M] as
 *  [..., P, R] (batch dims broadcast); p >= 0, inf included; floating inputs. */
EMBER_API Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2.0);

}  // namespace ember
