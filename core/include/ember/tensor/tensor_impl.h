// TensorImpl: sizes, strides, storage offset, dtype and device of one tensor.
#pragma once

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
}  // namespace autograd

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
  /** True if autograd tracks this tensor (a leaf that requires grad, or one with a grad_fn). */
  bool requires_grad() const { return requires_grad_; }
  /** Keeps requires_grad() in step with the autograd meta; autograd use only. */
  void set_requires_grad_flag(bool on) { requires_grad_ = on; }
  /** Autograd state, or null if the tensor never took part in autograd. */
  autograd::AutogradMeta* autograd_meta() const { return autograd_.get(); }
  /** Autograd state, created on first use. */
  autograd::AutogradMeta& ensure_autograd_meta();
  /** Address of element [0, ..., 0]. */
  void* data() const {
    return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(itemsize(dtype_));
  }

 private:
  Storage storage_;
  Shape sizes_;
  Shape strides_;
  int64_t offset_;
  int64_t numel_;
  std::unique_ptr<autograd::AutogradMeta> autograd_;
  DType dtype_;
  bool contiguous_;
  bool channels_last_;
  bool requires_grad_ = false;
};

}  // namespace ember
