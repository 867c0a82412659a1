// Indexing, joining and ordering: select by index tensors, scatter, cat/stack/split, sort/topk.
#pragma once

#include <tuple>
#include <vector>

#include "ember/tensor/tensor.h"

namespace ember {

/** Rows (along `dim`) picked by a 1-d int64 `index`. */
EMBER_API Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/** out[i][j] = x[index[i][j]][j] for dim 0 (and likewise for other dims). */
EMBER_API Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/** Copy of `x` with out[index[i][j]][j] = src[i][j] for dim 0. */
EMBER_API Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/** Copy of `x` with src added at the indexed places (repeats accumulate). */
EMBER_API Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/** x with `value` where `mask` (broadcast) is true. */
EMBER_API Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
/** One-hot int64 rows of `num_classes` (-1: max + 1) for int64 classes; a class outside
 *  [0, num_classes) is an IndexError. */
EMBER_API Tensor one_hot(const Tensor& t, int64_t num_classes = -1);
/** The lower triangle of the last two dims: x[..., i, j] where j - i <= diagonal, else 0. */
EMBER_API Tensor tril(const Tensor& x, int64_t diagonal = 0);
/** The upper triangle of the last two dims: x[..., i, j] where j - i >= diagonal, else 0. */
EMBER_API Tensor triu(const Tensor& x, int64_t diagonal = 0);
/** Indices of the non-zero elements, as an [n, ndim] int64 tensor in row-major order. */
EMBER_API Tensor nonzero(const Tensor& x);
/** Joins tensors along an existing dim. */
EMBER_API Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
/** Joins tensors along a new dim. */
EMBER_API Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
/** Views of `size` elements along `dim` (the last may be smaller). */
EMBER_API std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t dim = 0);
/** Views of the given sizes along `dim`. */
EMBER_API std::vector<Tensor> split(const Tensor& x, IntList sizes, int64_t dim);
/** The slices along `dim` as views, one per index (torch.unbind); one autograd node for all. */
EMBER_API std::vector<Tensor> unbind(const Tensor& x, int64_t dim = 0);
/** `chunks` nearly equal views along `dim`. */
EMBER_API std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
/** (values, indices) of the k largest (or smallest) along `dim`. */
EMBER_API std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1,
                                          bool largest = true, bool sorted = true);
/** (values, indices) sorted along `dim`; stable. */
EMBER_API std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1,
                                          bool descending = false);

}  // namespace ember
