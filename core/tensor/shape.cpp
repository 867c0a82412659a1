#include "core/tensor/shape.h"

#include "core/util/error.h"

namespace ember {

int64_t shape_numel(IntList sizes, const char* op) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0, "[{}] sizes must be non-negative: got {}", op, shape_str(sizes));
    EMBER_CHECK(!__builtin_mul_overflow(n, s, &n),
                "[{}] number of elements overflows int64: sizes {}", op, shape_str(sizes));
  }
  return n;
}

Shape contiguous_strides(IntList sizes) {
  Shape strides(sizes.size());
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = acc;
    acc *= sizes[i] > 0 ? sizes[i] : 1;
  }
  return strides;
}

Shape broadcast_shapes(IntList a, IntList b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    EMBER_CHECK(da == db || da == 1 || db == 1,
                "[{}] shapes {} and {} cannot be broadcast: size {} vs {} at dim {}", op,
                shape_str(a), shape_str(b), da, db, i);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;
  EMBER_CHECK(dim >= lo && dim <= hi, "[{}] dim {} out of range for a {}-d tensor (expected {}..{})",
              op, dim, ndim, lo, hi);
  return dim < 0 ? dim + (ndim == 0 ? 1 : ndim) : dim;
}

std::string shape_str(IntList sizes) { return fmt::format("[{}]", fmt::join(sizes, ", ")); }

}  // namespace ember
