// Indexing with PyTorch's (NumPy's) rules from C++: x[1:, None, ..., idx] is
// index(x, {Slice(1, None), None, Ellipsis, idx}); assignment is index_put_.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <type_traits>
#include <variant>
#include <vector>

#include "ember/tensor/scalar.h"
#include "ember/tensor/tensor.h"

namespace ember {
namespace indexing {

/** `None` in an index (Python's None): inserts a dim of size 1; also a missing end of a Slice,
 *  as in Slice(1, None). */
inline constexpr std::nullopt_t None = std::nullopt;

/** The type of `Ellipsis` in an index: as many full slices as the other items leave. */
struct EllipsisIndexType {};
/** `...` in an index (Python's Ellipsis). */
inline constexpr EllipsisIndexType Ellipsis{};

/** start:stop:step along one dim; a missing end is the dim's end, a negative one counts from
 *  the end, and ends past the dim are clamped (Python's slice rules; steps must be positive). */
struct Slice {
  std::optional<int64_t> start;
  std::optional<int64_t> stop;
  int64_t step = 1;
  /** The slice start:stop:step (Slice() is `:`). */
  Slice(std::optional<int64_t> start_ = std::nullopt, std::optional<int64_t> stop_ = std::nullopt,
        int64_t step_ = 1)
      : start(start_), stop(stop_), step(step_) {}
};

/** One item of an index: None, Ellipsis, a bool, an integer, a Slice or a tensor (integer
 *  indices, or a bool mask over as many dims as it has). */
class TensorIndex {
 public:
  /** None. */
  TensorIndex(std::nullopt_t) : item_(std::monostate{}) {}  // NOLINT(google-explicit-constructor)
  /** Ellipsis. */
  TensorIndex(EllipsisIndexType) : item_(Ellipsis) {}  // NOLINT(google-explicit-constructor)
  /** True inserts a dim of size 1, False one of size 0. */
  TensorIndex(bool b) : item_(b) {}  // NOLINT(google-explicit-constructor)
  /** An integer: selects one position, removing the dim. */
  template <typename I>
  requires(std::is_integral_v<I> && !std::is_same_v<I, bool>) TensorIndex(I i)
      : item_(static_cast<int64_t>(i)) {}  // NOLINT(google-explicit-constructor)
  /** A slice. */
  TensorIndex(Slice s) : item_(s) {}  // NOLINT(google-explicit-constructor)
  /** An index tensor (integer or bool). */
  TensorIndex(Tensor t) : item_(std::move(t)) {}  // NOLINT(google-explicit-constructor)

  /** True for None. */
  bool is_none() const { return std::holds_alternative<std::monostate>(item_); }
  /** True for Ellipsis. */
  bool is_ellipsis() const { return std::holds_alternative<EllipsisIndexType>(item_); }
  /** True for a bool. */
  bool is_bool() const { return std::holds_alternative<bool>(item_); }
  /** True for an integer. */
  bool is_integer() const { return std::holds_alternative<int64_t>(item_); }
  /** True for a slice. */
  bool is_slice() const { return std::holds_alternative<Slice>(item_); }
  /** True for a tensor. */
  bool is_tensor() const { return std::holds_alternative<Tensor>(item_); }
  /** The bool (is_bool()). */
  bool boolean() const { return std::get<bool>(item_); }
  /** The integer (is_integer()). */
  int64_t integer() const { return std::get<int64_t>(item_); }
  /** The slice (is_slice()). */
  const Slice& slice() const { return std::get<Slice>(item_); }
  /** The tensor (is_tensor()). */
  const Tensor& tensor() const { return std::get<Tensor>(item_); }

 private:
  std::variant<std::monostate, EllipsisIndexType, bool, int64_t, Slice, Tensor> item_;
};

}  // namespace indexing

/** x[items] with PyTorch's rules: a view when every item is basic (integers, slices, None,
 *  Ellipsis, bools), a copy gathered by the index tensors otherwise (Note [Indexing]). */
EMBER_API Tensor index(const Tensor& x, std::span<const indexing::TensorIndex> items);
/** index() with a braced list: index(x, {indexing::Slice(), 0}). */
inline Tensor index(const Tensor& x, std::initializer_list<indexing::TensorIndex> items) {
  return index(x, std::span<const indexing::TensorIndex>(items.begin(), items.size()));
}

/** x[items] = value, in place: value is broadcast to the indexed shape and converted to x's
 *  dtype and device; x takes over value's history if value requires grad. */
EMBER_API Tensor& index_put_(Tensor& x, std::span<const indexing::TensorIndex> items,
                             const Tensor& value);
/** x[items] = value for a number. */
EMBER_API Tensor& index_put_(Tensor& x, std::span<const indexing::TensorIndex> items, Scalar value);
/** torch.index_put: a copy of x with x[indices] = values, or x[indices] += values with accumulate
 *  (repeated positions add up); an undefined tensor in indices is a full slice (None there). */
EMBER_API Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices,
                           const Tensor& values, bool accumulate = false);
/** index_put() in place. */
EMBER_API Tensor& index_put_(Tensor& x, const std::vector<Tensor>& indices, const Tensor& values,
                             bool accumulate = false);
/** index_put_ with a braced list. */
inline Tensor& index_put_(Tensor& x, std::initializer_list<indexing::TensorIndex> items,
                          const Tensor& value) {
  return index_put_(x, std::span<const indexing::TensorIndex>(items.begin(), items.size()), value);
}
/** index_put_ of a number with a braced list. */
inline Tensor& index_put_(Tensor& x, std::initializer_list<indexing::TensorIndex> items,
                          Scalar value) {
  return index_put_(x, std::span<const indexing::TensorIndex>(items.begin(), items.size()), value);
}

}  // namespace ember
