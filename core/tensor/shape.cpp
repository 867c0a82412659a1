#include "ember/tensor/shape.h"

#include "ember/util/error.h"

namespace ember {

// Note [Zero-size shapes with huge dims]
// A zero dim makes the element count 0 whatever the other dims are, but a contiguous tensor's
// strides are the products of the dims after each one (zero dims counted as 1), and those must
// fit int64 too: [0, 2^62, 4] has 0 elements and a stride of 2^64 for dim 0. Such shapes are
// rejected here, where every allocation's shape is checked, rather than wrapping in
// contiguous_strides (found by the op fuzzer: empty() of such a shape).
void check_ndim(size_t ndim, const char* op) {
  EMBER_CHECK(ndim <= EMBER_MAX_DIMS,
              "[{}] too many dims: a tensor of {} dims, at most {} are supported (EMBER_MAX_DIMS)",
              op, ndim, EMBER_MAX_DIMS);
}

int64_t shape_numel(IntList sizes, const char* op) {
  check_ndim(sizes.size(), op);
  int64_t n = 1, span = 1;  // span: the product of the dims with zeros counted as 1
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0, "[{}] sizes must be non-negative: got {}", op, shape_str(sizes));
    EMBER_CHECK(!__builtin_mul_overflow(n, s, &n),
                "[{}] number of elements overflows int64: sizes {}", op, shape_str(sizes));
    EMBER_CHECK(!__builtin_mul_overflow(span, s > 0 ? s : 1, &span),
                "[{}] strides overflow int64: sizes {} (the non-zero dims' product must fit "
                "even when a zero dim makes the tensor empty)",
                op, shape_str(sizes));
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

Shape channels_last_strides(IntList sizes) {
  EMBER_CHECK(sizes.size() == 4, "[channels_last] needs a 4-d [N, C, H, W] shape: got {}",
              shape_str(sizes));
  Shape strides(4);
  int64_t acc = 1;
  for (const size_t d : {1, 3, 2, 0}) {  // innermost first: C, W, H, N
    strides[d] = acc;
    acc *= sizes[d] > 0 ? sizes[d] : 1;
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
  EMBER_CHECK_INDEX(dim >= lo && dim <= hi,
                    "[{}] dim {} out of range for a {}-d tensor (expected {}..{})", op, dim, ndim,
                    lo, hi);
  return dim < 0 ? dim + (ndim == 0 ? 1 : ndim) : dim;
}

std::string shape_str(IntList sizes) {
  return fmt::format("[{}]", fmt::join(sizes, ", "));
}

}  // namespace ember
