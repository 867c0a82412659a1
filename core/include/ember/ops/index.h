// Indexing, joining and ordering: select by index tensors, scatter, cat/stack/split, sort/topk.
#pragma once

#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "ember/ops/factory.h"
#include "ember/tensor/tensor.h"

namespace ember {

/** Rows (along `dim`) picked by a 1-d int64 `index`. */
EMBER_API Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/** out[i][j] = x[index[i][j]][j] for dim 0 (and likewise for other dims). */
EMBER_API Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/** x's elements, in row-major order, at `index` (any shape; negative from the end): the result
 *  has index's shape (torch.take). */
EMBER_API Tensor take(const Tensor& x, const Tensor& index);
/** torch.put: a copy of x with the elements at the flat positions `index` (x read as 1-d;
 *  negative counts from the end) set to source's (as many elements as index), or increased by them
 *  with accumulate (repeated positions add up). */
EMBER_API Tensor put(const Tensor& x, const Tensor& index, const Tensor& source,
                     bool accumulate = false);
/** In place: the main diagonal of x (2-d, or every dim of one size) set to value; with wrap, a
 *  tall matrix's diagonal starts again every columns + 1 rows (Tensor.fill_diagonal_). */
EMBER_API Tensor& fill_diagonal_(Tensor& x, Scalar value, bool wrap = false);
/** put() in place. */
EMBER_API Tensor& put_(Tensor& x, const Tensor& index, const Tensor& source,
                       bool accumulate = false);
/** gather along `dim` with x and indices broadcast in the other dims; without a dim, take over
 *  the flattened tensors (torch.take_along_dim). */
EMBER_API Tensor take_along_dim(const Tensor& x, const Tensor& indices,
                                std::optional<int64_t> dim = std::nullopt);
/** Copy of `x` with out[index[i][j]][j] = src[i][j] for dim 0. */
EMBER_API Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/** Copy of `x` with `value` at the indexed places (scatter with a number). */
EMBER_API Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value);
/** The elements of x where `mask` (broadcast together with x) is true, as a 1-d tensor. */
EMBER_API Tensor masked_select(const Tensor& x, const Tensor& mask);
/** x with dims `source` moved to positions `destination` (a view; the other dims keep their
 *  order): torch.movedim. */
EMBER_API Tensor movedim(const Tensor& x, IntList source, IntList destination);
/** x without those of `dims` that have size 1 (a view; every dim when `dims` is empty). */
EMBER_API Tensor squeeze(const Tensor& x, IntList dims);
/** In place: x becomes squeeze(x, dims). */
EMBER_API Tensor& squeeze_(Tensor& x, IntList dims);
/** x with dim `dim` split into `sizes` (one may be -1): a view (torch.unflatten). */
EMBER_API Tensor unflatten(const Tensor& x, int64_t dim, IntList sizes);
/** Tensors joined column-wise: along dim 1, or dim 0 for 1-d tensors (torch.hstack). */
EMBER_API Tensor hstack(const std::vector<Tensor>& tensors);
/** Tensors joined row-wise: along dim 0, 1-d tensors taken as rows (torch.vstack). */
EMBER_API Tensor vstack(const std::vector<Tensor>& tensors);
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
/** The diagonal of dims dim1 and dim2 (offset > 0 above it, < 0 below) as the last dim of a
 *  view. */
EMBER_API Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
/** A 1-d x as the `diagonal`-th diagonal of a square matrix of zeros; a 2-d x's `diagonal`-th
 *  diagonal, copied (torch.diag). */
EMBER_API Tensor diag(const Tensor& x, int64_t diagonal = 0);
/** x's last dim as the `offset`-th diagonals of matrices of zeros in dims dim1 and dim2 of a
 *  result with one dim more. */
EMBER_API Tensor diag_embed(const Tensor& x, int64_t offset = 0, int64_t dim1 = -2,
                            int64_t dim2 = -1);
/** Coordinate grids of 0-d or 1-d tensors of one dtype, as expanded views: indexing "ij" gives
 *  the shape (n0, n1, ...), "xy" swaps the first two dims (NumPy's Cartesian grid). */
EMBER_API std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors,
                                       std::string_view indexing = "ij");
/** x with the order of its elements reversed along each of `dims` (each named once): a new
 *  tensor (Note [flip and roll as one gather per dim] in core/ops/index.cpp). */
EMBER_API Tensor flip(const Tensor& x, IntList dims);
/** x shifted cyclically by shifts[i] along dims[i]; with no dims, the flattened tensor by the
 *  one shift, in x's shape: a new tensor. */
EMBER_API Tensor roll(const Tensor& x, IntList shifts, IntList dims = {});
/** x tiled repeats[i] times along each dim (x's shape padded with 1s on the left to as many
 *  dims as repeats), a copy: Tensor.repeat. */
EMBER_API Tensor repeat(const Tensor& x, IntList repeats);
/** Sequences [L_i, *] of one dtype, device and trailing shape stacked into [max L, B, *] (or
 *  [B, max L, *] with batch_first), padding_value past each one's end (before its start with
 *  padding_side "left"): torch.nn.utils.rnn.pad_sequence, differentiable. */
EMBER_API Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first = false,
                              double padding_value = 0.0, std::string_view padding_side = "right");
/** Every tensor expanded (a view) to the shape they broadcast to together
 * (torch.broadcast_tensors). */
EMBER_API std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors);
/** The [2, n] coordinates (rows, then columns) of the lower triangle of a row x col matrix where
 *  col - row <= offset, in row-major order; int64 unless told otherwise. */
EMBER_API Tensor tril_indices(int64_t row, int64_t col, int64_t offset = 0,
                              TensorOptions opts = TensorOptions(DType::Int64));
/** The coordinates of the upper triangle, where col - row >= offset. */
EMBER_API Tensor triu_indices(int64_t row, int64_t col, int64_t offset = 0,
                              TensorOptions opts = TensorOptions(DType::Int64));
/** Each element (slice along `dim`; of the flattened x without one) `repeats` times in a row;
 *  output_size, if given, must be the result's size along dim. */
EMBER_API Tensor repeat_interleave(const Tensor& x, int64_t repeats,
                                   std::optional<int64_t> dim = {},
                                   std::optional<int64_t> output_size = {});
/** repeat_interleave() with a count per slice: a 1-d (or one-element) integer `repeats`. */
EMBER_API Tensor repeat_interleave(const Tensor& x, const Tensor& repeats,
                                   std::optional<int64_t> dim = {},
                                   std::optional<int64_t> output_size = {});
/** i repeated repeats[i] times, for i = 0 .. n-1 (int64): the indices repeat_interleave picks. */
EMBER_API Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size = {});
/** Copy of x with alpha * source[.., i, ..] added to x[.., index[i], ..] along dim (repeats
 *  accumulate); an index outside [0, x.size(dim)) is an IndexError. */
EMBER_API Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                           Scalar alpha = 1);
/** In place: x = index_add(x, dim, index, source, alpha). */
EMBER_API Tensor& index_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                             Scalar alpha = 1);
/** Copy of x with x[.., index[i], ..] = source[.., i, ..] along dim. */
EMBER_API Tensor index_copy(const Tensor& x, int64_t dim, const Tensor& index,
                            const Tensor& source);
/** In place: x = index_copy(x, dim, index, source). */
EMBER_API Tensor& index_copy_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& source);
/** Copy of x with the slices index picks along dim set to value. */
EMBER_API Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, Scalar value);
/** index_fill() with a 0-d tensor value (which gets the gradient of the filled places). */
EMBER_API Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& value);
/** In place: x = index_fill(x, dim, index, value). */
EMBER_API Tensor& index_fill_(Tensor& x, int64_t dim, const Tensor& index, Scalar value);
EMBER_API Tensor& index_fill_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& value);
/** In place: x = scatter(x, dim, index, src). */
EMBER_API Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/** In place: x = scatter_add(x, dim, index, src). */
EMBER_API Tensor& scatter_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/** Copy of x with src reduced into the places index names along dim (as scatter_add places
 *  them): reduce is "sum", "prod", "mean", "amax" or "amin"; include_self false leaves x's
 *  own values out of the places written to. */
EMBER_API Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index,
                                const Tensor& src, std::string_view reduce,
                                bool include_self = true);
/** In place: x = scatter_reduce(x, dim, index, src, reduce, include_self). */
EMBER_API Tensor& scatter_reduce_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                                  std::string_view reduce, bool include_self = true);
/** Copy of x with the slices of source along dim reduced into the slices index (1-d, one per
 *  slice of source) names: reduce is "prod", "mean", "amax" or "amin"; include_self false leaves
 *  x's own values out of the slices written to (torch.index_reduce). */
EMBER_API Tensor index_reduce(const Tensor& x, int64_t dim, const Tensor& index,
                              const Tensor& source, std::string_view reduce,
                              bool include_self = true);
/** In place: x = index_reduce(x, dim, index, source, reduce, include_self). */
EMBER_API Tensor& index_reduce_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                                std::string_view reduce, bool include_self = true);
/** Copy of x with the places where mask (broadcast to x) is true taken, in row-major order, from
 *  the first elements of source. */
EMBER_API Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source);
/** In place: x = masked_scatter(x, mask, source). */
EMBER_API Tensor& masked_scatter_(Tensor& x, const Tensor& mask, const Tensor& source);
/** Indices of the non-zero elements, as an [n, ndim] int64 tensor in row-major order. */
EMBER_API Tensor nonzero(const Tensor& x);
/** nonzero(x): PyTorch's argwhere. */
EMBER_API Tensor argwhere(const Tensor& x);
/** The coordinates in a tensor of `shape` of each flat index (in [-numel, numel), negative ones
 *  counted from the end), one int64 tensor of indices' shape per dim. */
EMBER_API std::vector<Tensor> unravel_index(const Tensor& indices, IntList shape);
/** A copy of x whose slice(dim, start, end, step) is src, of exactly that slice's shape
 *  (torch.slice_scatter; no start: 0, no end: the dim's size). */
EMBER_API Tensor slice_scatter(const Tensor& x, const Tensor& src, int64_t dim = 0,
                               std::optional<int64_t> start = {}, std::optional<int64_t> end = {},
                               int64_t step = 1);
/** A copy of x whose select(dim, index) is src, of exactly that view's shape. */
EMBER_API Tensor select_scatter(const Tensor& x, const Tensor& src, int64_t dim, int64_t index);
/** A copy of x whose diagonal(offset, dim1, dim2) is src, of exactly that view's shape. */
EMBER_API Tensor diagonal_scatter(const Tensor& x, const Tensor& src, int64_t offset = 0,
                                  int64_t dim1 = 0, int64_t dim2 = 1);
/** The r-element combinations of a 1-d x as rows of an [n, r] tensor, in lexicographic order of
 *  positions, with or without repeated positions (torch.combinations; r = 0 gives an empty
 *  tensor). */
EMBER_API Tensor combinations(const Tensor& x, int64_t r = 2, bool with_replacement = false);
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
