#include "ember/tensor/tensor_impl.h"

namespace ember {

// Note [TensorImpl stays small]
// One TensorImpl is allocated per op output, so its size is part of the op overhead budget
// (ARCHITECTURE.md, "The path of one op call"). Sizes and strides keep up to 6 dims inline; numel
// and contiguity are cached because every kernel call asks for them. A view's base pointer and
// version live here rather than in the autograd meta so that making a view allocates nothing
// more (Note [Views see their base's history]); the version fills the padding after the count.
static_assert(sizeof(TensorImpl) <= 192, "TensorImpl grew: check Note [TensorImpl stays small]");

// Dense in the order dim_at(0), dim_at(1), ... (innermost first) over `n` dims; size-1 dims may
// have any stride, and an empty tensor is dense in every order.
template <typename DimAt>
static bool dense_in_order(const Shape& sizes, const Shape& strides, size_t n, DimAt dim_at) {
  int64_t expected = 1;
  for (size_t i = 0; i < n; ++i) {
    const size_t d = dim_at(i);
    if (sizes[d] == 0) return true;
    if (sizes[d] != 1 && strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

static bool compute_contiguous(const Shape& sizes, const Shape& strides) {
  const size_t n = sizes.size();
  return dense_in_order(sizes, strides, n, [n](size_t i) { return n - 1 - i; });
}

// Channels-last: C, then W, then H, then N innermost first (Note [Channels-last tensors]).
static bool compute_channels_last(const Shape& sizes, const Shape& strides) {
  constexpr size_t kOrder[] = {1, 3, 2, 0};
  return sizes.size() == 4 &&
         dense_in_order(sizes, strides, 4, [&](size_t i) { return kOrder[i]; });
}

// Note [At most EMBER_MAX_DIMS dims]
// Kernels keep a tensor's sizes and strides in fixed arrays (StridedIter in backends/cpu/loops.h,
// the reductions' and index kernels' coalesced dims, the SDK's MatmulGeometry), so one constant
// bounds them all: EMBER_MAX_DIMS in plugin_abi.h, which every backend and the core read. No
// tensor has more dims: this constructor, through which every tensor is made (empty and the
// factories, every view, from_blob and so DLPack and NumPy, the readers of files), refuses it,
// and the paths users reach first (shape_numel: empty, view, reshape, expand, as_strided,
// from_blob; unsqueeze; DLPack import) do so under their own names. The limit is 64 rather than
// the 16 the CPU arrays used to hold: the ABI already fixed EMBER_MAX_DIMS at 64 in 1.1 (the
// shape an op defined by a plugin infers, ember_output_info, is laid out with it), so a lower
// limit would have needed a second constant beside it; 64 is NumPy's limit too, so every array
// converts; and the arrays cost nothing per call, since they live on the stack and loops only
// visit the dims a tensor has (coalesced, size-1 dims dropped). The CUDA kernels carry a
// smaller coalesced geometry as launch parameters (Note [Coalesced geometry] in
// backends/cuda/ops/elementwise.cu) and refuse a tensor with more non-mergeable dims by name.
TensorImpl::~TensorImpl() = default;

TensorImpl::TensorImpl(Storage storage, Shape sizes, Shape strides, int64_t offset, DType dtype)
    : storage_(std::move(storage)),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      offset_(offset),
      numel_(1),
      dtype_(dtype),
      contiguous_(compute_contiguous(sizes_, strides_)),
      channels_last_(compute_channels_last(sizes_, strides_)) {
  if (__builtin_expect(sizes_.size() > EMBER_MAX_DIMS, 0)) check_ndim(sizes_.size(), "tensor");
  for (int64_t s : sizes_) numel_ *= s;
}

void TensorImpl::set_geometry(const TensorImpl& view) {
  EMBER_ASSERT(view.storage_.get() == storage_.get() && view.dtype_ == dtype_);
  sizes_ = view.sizes_;
  strides_ = view.strides_;
  offset_ = view.offset_;
  numel_ = view.numel_;
  contiguous_ = view.contiguous_;
  channels_last_ = view.channels_last_;
}

void TensorImpl::set_data(const TensorImpl& src) {
  storage_ = src.storage_;
  dtype_ = src.dtype_;
  set_geometry(src);
  view_base_ = IntrusivePtr<TensorImpl>();
}

}  // namespace ember
