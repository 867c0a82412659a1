// Shape: sizes or strides of a tensor, with the shape arithmetic ops share.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "ember/plugin_abi.h"
#include "ember/util/export.h"
#include "ember/util/small_vec.h"
#include "ember/util/text_formatter.h"

namespace ember {

/** Sizes or strides; up to 6 dimensions stay inline. */
using Shape = SmallVec<int64_t, 6>;

/** A borrowed list of sizes, dims or strides: from {2, 3}, a Shape, a vector or a span. */
class IntList {
 public:
  IntList() = default;
  // Note [IntList borrows]: like PyTorch's IntArrayRef it points into the caller's list, which
  // lives until the end of the full expression; never store an IntList.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  IntList(std::initializer_list<int64_t> il) : data_(il.begin()), size_(il.size()) {}  // NOLINT
#pragma GCC diagnostic pop
  IntList(const Shape& s) : data_(s.data()), size_(s.size()) {}                 // NOLINT
  IntList(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  IntList(std::span<const int64_t> s) : data_(s.data()), size_(s.size()) {}     // NOLINT
  IntList(const int64_t* data, size_t size) : data_(data), size_(size) {}
  const int64_t* data() const {
    return data_;
  }
  size_t size() const {
    return size_;
  }
  bool empty() const {
    return size_ == 0;
  }
  const int64_t* begin() const {
    return data_;
  }
  const int64_t* end() const {
    return data_ + size_;
  }
  int64_t operator[](size_t i) const {
    return data_[i];
  }
  operator std::span<const int64_t>() const {
    return {data_, size_};
  }  // NOLINT

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

/** Throws ValueError if a tensor of `ndim` dims would exceed EMBER_MAX_DIMS (Note [At most
 *  EMBER_MAX_DIMS dims] in core/tensor/tensor_impl.cpp). */
EMBER_API void check_ndim(size_t ndim, const char* op);
/** Product of sizes; throws if it overflows int64, a size is negative or there are more than
 *  EMBER_MAX_DIMS sizes. */
EMBER_API int64_t shape_numel(IntList sizes, const char* op = "shape");
/** Row-major strides for `sizes`. */
EMBER_API Shape contiguous_strides(IntList sizes);
/** Channels-last strides for 4-d `sizes` [N, C, H, W]: [H*W*C, 1, W*C, C]. */
EMBER_API Shape channels_last_strides(IntList sizes);
/** Broadcasts two shapes on NumPy's rules; throws with both shapes if they do not match. */
EMBER_API Shape broadcast_shapes(IntList a, IntList b, const char* op);
/** Wraps a possibly negative dim into [0, ndim); throws IndexError if out of range or if ndim
 *  is 0 (an op taking a 0-d tensor wraps against max(ndim, 1): Note [Dims of a 0-d tensor]). */
EMBER_API int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
/** Formats sizes like "[2, 3]". */
EMBER_API std::string shape_str(IntList sizes);

}  // namespace ember

/** Formats a Shape like "[2, 3]". */
template <>
struct fmt::formatter<ember::Shape> : ember::TextFormatter {
  auto format(const ember::Shape& s, format_context& ctx) const {
    return format_text(ember::shape_str(s), ctx);
  }
};
