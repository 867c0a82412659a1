// Reductions over any set of dims (empty dims = all), cumulative sums.
#pragma once

#include <optional>
#include <tuple>

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

}  // namespace ember
