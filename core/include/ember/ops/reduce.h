// Reductions over any set of dims (empty dims = all), cumulative sums.
#pragma once

#include <optional>
#include <tuple>
#include <vector>

#include "ember/tensor/tensor.h"

namespace ember {

/** Sum over `dims` (all if empty); integers and bool sum to int64. */
EMBER_API Tensor sum(const Tensor& x, IntList dims = {}, bool keepdim = false);
/** Mean over `dims`; needs a floating dtype. */
EMBER_API Tensor mean(const Tensor& x, IntList dims = {}, bool keepdim = false);
/** Sum over `dims` treating NaN as 0; integers and bool sum to int64. */
EMBER_API Tensor nansum(const Tensor& x, IntList dims = {}, bool keepdim = false);
/** Mean over `dims` of the elements that are not NaN (NaN where all are); needs a floating
 *  dtype. */
EMBER_API Tensor nanmean(const Tensor& x, IntList dims = {}, bool keepdim = false);
/** Product over `dims`; integers and bool multiply to int64. */
EMBER_API Tensor prod(const Tensor& x, IntList dims = {}, bool keepdim = false);
/** Largest value over `dims` (NaN propagates). */
EMBER_API Tensor amax(const Tensor& x, IntList dims = {}, bool keepdim = false);
/** Smallest value over `dims` (NaN propagates). */
EMBER_API Tensor amin(const Tensor& x, IntList dims = {}, bool keepdim = false);
/** Largest value of all elements. */
EMBER_API Tensor max(const Tensor& x);
/** Smallest value of all elements. */
EMBER_API Tensor min(const Tensor& x);
/** (values, indices) of the largest element along `dim`; the first index wins ties. */
EMBER_API std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
/** (values, indices) of the smallest element along `dim`. */
EMBER_API std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
/** Index of the largest element along `dim` (of the flattened tensor if none). */
EMBER_API Tensor argmax(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false);
/** Index of the smallest element along `dim` (of the flattened tensor if none). */
EMBER_API Tensor argmin(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false);
/** Variance with `correction` (1 = unbiased, Bessel). */
EMBER_API Tensor var(const Tensor& x, IntList dims = {}, int64_t correction = 1,
                     bool keepdim = false);
/** Standard deviation with `correction`. */
EMBER_API Tensor std(const Tensor& x, IntList dims = {}, int64_t correction = 1,
                     bool keepdim = false);
/** p-norm over `dims` (p may be inf). */
EMBER_API Tensor norm(const Tensor& x, double p = 2.0, IntList dims = {}, bool keepdim = false);
/** True if every element is truthy. */
EMBER_API Tensor all(const Tensor& x, IntList dims = {}, bool keepdim = false);
/** True if any element is truthy. */
EMBER_API Tensor any(const Tensor& x, IntList dims = {}, bool keepdim = false);
/** The number of non-zero elements over `dims` (all if empty), as int64. */
EMBER_API Tensor count_nonzero(const Tensor& x, IntList dims = {});
/** log(sum(exp(x))) over `dims`, computed stably. */
EMBER_API Tensor logsumexp(const Tensor& x, IntList dims, bool keepdim = false);
/** Running sum along `dim`; integers and bool sum to int64. */
EMBER_API Tensor cumsum(const Tensor& x, int64_t dim);
/** Running product along dim (integers and bool as int64). */
EMBER_API Tensor cumprod(const Tensor& x, int64_t dim);

/** The integral of y along dim by the trapezoidal rule at spacing dx (torch.trapezoid and
 *  trapz); integers promote as y * 0.5 does, bool is refused, a dim of size 0 gives zeros. */
EMBER_API Tensor trapezoid(const Tensor& y, Scalar dx = 1, int64_t dim = -1);
/** trapezoid at sample points x: a 1-d x has one point per element of y along dim, another x
 *  broadcasts against y (aligned at the last dims). */
EMBER_API Tensor trapezoid(const Tensor& y, const Tensor& x, int64_t dim = -1);
/** The running integrals of trapezoid along dim: y.size(dim) - 1 of them. */
EMBER_API Tensor cumulative_trapezoid(const Tensor& y, Scalar dx = 1, int64_t dim = -1);
/** The running integrals of trapezoid at sample points x (trapezoid's rules for x). */
EMBER_API Tensor cumulative_trapezoid(const Tensor& y, const Tensor& x, int64_t dim = -1);
/** x summed down to `sizes`, a shape that broadcasts to x's (Tensor.sum_to_size). */
EMBER_API Tensor sum_to_size(const Tensor& x, IntList sizes);
/** torch.gradient: the derivative of y estimated along each of dims (every dim when empty) by
 *  second-order central differences inside and one-sided differences of edge_order (1 or 2) at
 *  the ends, at spacing h (one value for every dim, or one per dim); integer y gives
 *  default_dtype(). */
EMBER_API std::vector<Tensor> gradient(const Tensor& y, const std::vector<double>& spacing = {1.0},
                                       IntList dims = {}, int64_t edge_order = 1);
/** gradient() at sample coordinates: one 1-d tensor per dim, as long as y along it. */
EMBER_API std::vector<Tensor> gradient(const Tensor& y, const std::vector<Tensor>& coordinates,
                                       IntList dims = {}, int64_t edge_order = 1);
/** The covariance matrix of the variables in the rows of a 2-d input (a 1-d one is one variable)
 *  over the observations in its columns, with integer frequency and floating importance weights
 *  per observation (torch.cov); fewer degrees of freedom than one give inf or NaN. */
EMBER_API Tensor cov(const Tensor& input, int64_t correction = 1, const Tensor& fweights = {},
                     const Tensor& aweights = {});
/** Pearson's correlation coefficients of cov's variables, clipped to [-1, 1] (torch.corrcoef). */
EMBER_API Tensor corrcoef(const Tensor& input);

}  // namespace ember
