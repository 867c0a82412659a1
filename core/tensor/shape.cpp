#include "ember/tensor/shape.h"

#include <fmt/format.h>

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

// Note [Dims of a 0-d tensor]
// A 0-d tensor has no dim, so no wrapped dim can index its sizes or strides. wrap_dim refuses
// ndim 0 with an IndexError (PyTorch's "dimension specified as 0 but tensor has no dimensions"),
// so an op that forgets the 0-d case fails cleanly instead of reading sizes()[0], which is
// uninitialised memory past the end of an empty Shape. Where PyTorch accepts a 0-d tensor for a
// dim argument (reductions, softmax, cumsum, sort, topk, flip, roll, transpose, squeeze, movedim,
// index_select, gather, scatter), it treats it as 1-d of size 1, dims -1 and 0: the op wraps
// against std::max<int64_t>(ndim, 1), which checks the dim, and then handles ndim 0 itself
// (usually by working on a [1] view and viewing the result back as 0-d). Ops PyTorch refuses a
// 0-d tensor (size, stride, select, narrow, slicing, unbind, diagonal, unflatten) let wrap_dim
// refuse it.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  EMBER_CHECK_INDEX(ndim > 0, "[{}] dim {} out of range: the tensor is 0-d and has no dims", op,
                    dim);
  EMBER_CHECK_INDEX(dim >= -ndim && dim < ndim,
                    "[{}] dim {} out of range for a {}-d tensor (expected {}..{})", op, dim, ndim,
                    -ndim, ndim - 1);
  return dim < 0 ? dim + ndim : dim;
}

std::string shape_str(IntList sizes) {
  return fmt::format("[{}]", fmt::join(sizes, ", "));
}

}  // namespace ember
