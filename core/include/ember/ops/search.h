// Searching and counting: searchsorted / bucketize, histc, unique and unique_consecutive.
#pragma once

#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "ember/tensor/tensor.h"

namespace ember {

/** For each value, the index where it would go in the sorted last dim of sorted_sequence
 *  (1-d, or with values' leading dims): the first place (right: past the equal elements; side
 *  "left" / "right" says the same); sorter, if given, sorts sorted_sequence's last dim. int64, or
 *  int32 with out_int32. */
EMBER_API Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values,
                              bool out_int32 = false, bool right = false,
                              std::optional<std::string_view> side = {}, const Tensor& sorter = {});
/** searchsorted() of one number: a 0-d result. */
EMBER_API Tensor searchsorted(const Tensor& sorted_sequence, Scalar value, bool out_int32 = false,
                              bool right = false, std::optional<std::string_view> side = {},
                              const Tensor& sorter = {});
/** The bucket of each element of x between 1-d sorted boundaries: searchsorted(boundaries, x). */
EMBER_API Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool out_int32 = false,
                           bool right = false);
/** The histogram of a floating x in `bins` equal bins over [min, max] (min == max: the data's
 *  range), the last bin closed; elements outside, and NaN, are not counted; x's dtype. */
EMBER_API Tensor histc(const Tensor& x, int64_t bins = 100, double min = 0, double max = 0);
/** (hist, bin_edges): the histogram of a floating x in `bins` equal bins over [min, max] of
 *  `range` (or of the data; a range of one value widens by 0.5 each way, as NumPy's), each element
 *  counted with its weight (weight: x's shape and dtype, or undefined for 1), the last bin
 *  closed, elements outside and NaN not counted; with density, hist / (its sum * bin width). */
EMBER_API std::tuple<Tensor, Tensor> histogram(const Tensor& x, int64_t bins = 100,
                                               std::optional<std::pair<double, double>> range = {},
                                               const Tensor& weight = {}, bool density = false);
/** histogram() over given increasing bin edges (1-d, x's dtype). */
EMBER_API std::tuple<Tensor, Tensor> histogram(const Tensor& x, const Tensor& bins,
                                               const Tensor& weight = {}, bool density = false);
/** (values, inverse, counts): the distinct elements of x in ascending order (of its slices along
 *  dim when given), the index of each element's (slice's) value, and how often each occurs. */
EMBER_API std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& x, bool sorted = true,
                                                    std::optional<int64_t> dim = {});
/** (values, inverse, counts) of the runs of equal consecutive elements (slices along dim). */
EMBER_API std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& x,
                                                                std::optional<int64_t> dim = {});

/** True where an element of `elements` equals some element of test_elements (both promoted to
 *  their common dtype; NaN equals nothing); invert: where it does not. elements' shape, bool. */
EMBER_API Tensor isin(const Tensor& elements, const Tensor& test_elements,
                      bool assume_unique = false, bool invert = false);
/** isin() against one number. */
EMBER_API Tensor isin(const Tensor& elements, Scalar test_element, bool assume_unique = false,
                      bool invert = false);
/** isin() of one number: a 0-d result. */
EMBER_API Tensor isin(Scalar element, const Tensor& test_elements, bool assume_unique = false,
                      bool invert = false);
/** How often each value 0..max(x) occurs in the 1-d non-negative integer x (at least minlength
 *  bins); with 1-d weights of x's length, their sums instead: int64 counts, float32 sums for
 *  float32 weights, float64 otherwise. No gradient, as in PyTorch. */
EMBER_API Tensor bincount(const Tensor& x, const Tensor& weights = {}, int64_t minlength = 0);

}  // namespace ember
