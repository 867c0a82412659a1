// TensorImpl: sizes, strides, storage offset, dtype and device of one tensor.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "ember/tensor/dtype.h"
#include "ember/tensor/shape.h"
#include "ember/tensor/storage.h"
#include "ember/util/export.h"
#include "ember/util/intrusive_ptr.h"

namespace ember {

namespace autograd {
struct AutogradMeta;
/** Destroys an AutogradMeta (defined in core/autograd/tensor_autograd.cpp, where it is complete,
 *  so that the tensor layer holds autograd state without including autograd). */
struct EMBER_API AutogradMetaDeleter {
  /** Deletes `meta`. */
  void operator()(AutogradMeta* meta) const;
};
}  // namespace autograd

/** The grad mode a view was made in, which decides whether an in-place change of the view or
 *  of its base may be recorded (Note [Views see their base's history] in
 *  core/autograd/views.cpp). */
enum class ViewCreation : uint8_t {
  /** With grad mode on: the view follows its base's history. */
  Default,
  /** Under no_grad: recording an in-place change through it or its base is an error. */
  NoGrad,
  /** Inside InferenceMode: the same as NoGrad. */
  Inference,
};

/** The state behind a Tensor handle; views share the Storage. */
class EMBER_API TensorImpl : public RefCounted {
 public:
  /** A tensor over `storage` with the given geometry (offset in elements). */
  TensorImpl(Storage storage, Shape sizes, Shape strides, int64_t offset, DType dtype);
  ~TensorImpl();

  const Storage& storage() const { return storage_; }
  const Shape& sizes() const { return sizes_; }
  const Shape& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  int64_t numel() const { return numel_; }
  bool is_contiguous() const { return contiguous_; }
  /** True for a 4-d tensor dense in channels-last order (Note [Channels-last tensors]). */
  bool is_channels_last() const { return channels_last_; }
  /** True if autograd tracks this tensor: a leaf that requires grad, one with a grad_fn, or a
   *  view of a tensor that requires grad. */
  bool requires_grad() const {
    return requires_grad_ || (view_base_ && view_base_->requires_grad_);
  }
  /** Keeps requires_grad() in step with the autograd meta; autograd use only. */
  void set_requires_grad_flag(bool on) { requires_grad_ = on; }
  /** Autograd state, or null if the tensor never took part in autograd. */
  autograd::AutogradMeta* autograd_meta() const { return autograd_.get(); }
  /** Autograd state, created on first use. */
  autograd::AutogradMeta& ensure_autograd_meta();
  /** For a view, the tensor autograd regards it as a view of (the first of a chain of views, never
   *  itself a view); null otherwise. */
  TensorImpl* view_base() const { return view_base_.get(); }
  /** Makes this tensor a view of `base` (not itself a view) made in mode `how`; autograd use. */
  void set_view_base(IntrusivePtr<TensorImpl> base, ViewCreation how) {
    view_base_ = std::move(base);
    view_creation_ = how;
  }
  /** Forgets the base: the tensor is no view for autograd any more; autograd use. */
  void clear_view_base() { view_base_ = IntrusivePtr<TensorImpl>(); }
  /** The grad mode the view was made in. */
  ViewCreation view_creation() const { return view_creation_; }
  /** Sets the mode the view counts as made in; autograd use. */
  void set_view_creation(ViewCreation how) { view_creation_ = how; }
  /** The storage version at which a view's grad_fn was last set from its base. */
  uint32_t view_version() const { return view_version_.load(std::memory_order_acquire); }
  /** Records the version at which the view's grad_fn was set; autograd use. */
  void set_view_version(uint32_t v) { view_version_.store(v, std::memory_order_release); }
  /** Takes `view`'s sizes, strides and offset (a view of this tensor's storage), keeping the rest:
   *  the in-place shape ops (Note [Shape changes in place] in core/ops/view.cpp). */
  void set_geometry(const TensorImpl& view);
  /** Takes `src`'s storage, geometry and dtype, keeping this impl (its identity and autograd
   *  state); the tensor is no view afterwards. Tensor::set_data is the checked form. */
  void set_data(const TensorImpl& src);
  /** Address of element [0, ..., 0]. */
  void* data() const {
    return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(itemsize(dtype_));
  }

 private:
  // First, so that it fills the padding after RefCounted's count (Note [TensorImpl stays small]).
  std::atomic<uint32_t> view_version_{0};  // see view_version()
  Storage storage_;
  Shape sizes_;
  Shape strides_;
  int64_t offset_;
  int64_t numel_;
  std::unique_ptr<autograd::AutogradMeta, autograd::AutogradMetaDeleter> autograd_;
  IntrusivePtr<TensorImpl> view_base_;  // see view_base()
  DType dtype_;
  bool contiguous_;
  bool channels_last_;
  bool requires_grad_ = false;
  ViewCreation view_creation_ = ViewCreation::Default;
};

}  // namespace ember
