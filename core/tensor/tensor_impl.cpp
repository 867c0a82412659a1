#include "ember/tensor/tensor_impl.h"

#include <initializer_list>

#include "ember/autograd/node.h"

namespace ember {

// Note [TensorImpl stays small]
// One TensorImpl is allocated per op output, so its size is part of the op overhead budget
// (ARCHITECTURE.md, "The path of one op call"). Sizes and strides keep up to 6 dims inline; numel
// and contiguity are cached because every kernel call asks for them.
static_assert(sizeof(TensorImpl) <= 192, "TensorImpl grew: check Note [TensorImpl stays small]");

static bool compute_contiguous(const Shape& sizes, const Shape& strides) {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 0) return true;
    if (sizes[i] != 1 && strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

// Dense in the order of `dims` (innermost first); size-1 dims may have any stride.
static bool compute_dense_in_order(const Shape& sizes, const Shape& strides,
                                   std::initializer_list<size_t> dims) {
  int64_t expected = 1;
  for (const size_t d : dims) {
    if (sizes[d] == 0) return true;
    if (sizes[d] != 1 && strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

TensorImpl::TensorImpl(Storage storage, Shape sizes, Shape strides, int64_t offset, DType dtype)
    : storage_(std::move(storage)),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      offset_(offset),
      numel_(1),
      dtype_(dtype),
      contiguous_(compute_contiguous(sizes_, strides_)),
      channels_last_(sizes_.size() == 4 && compute_dense_in_order(sizes_, strides_, {1, 3, 2, 0})) {
  for (int64_t s : sizes_) numel_ *= s;
}

}  // namespace ember
