// Tensor: the cheap-to-copy handle users hold; views and metadata live here, math in core/ops.
#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "ember/tensor/device.h"
#include "ember/tensor/dtype.h"
#include "ember/tensor/scalar.h"
#include "ember/tensor/shape.h"
#include "ember/tensor/tensor_impl.h"
#include "ember/util/error.h"
#include "ember/util/export.h"
#include "ember/util/text_formatter.h"

namespace ember {

class Stream;

/** How a tensor's elements lie in memory (PyTorch's torch.memory_format), see
 *  Note [Channels-last tensors]. */
enum class MemoryFormat : uint8_t {
  /** Row-major: the last dim is dense (NCHW for images). */
  Contiguous,
  /** A 4-d [N, C, H, W] tensor stored as N, H, W, C (NHWC): strides [HWC, 1, WC, C]. */
  ChannelsLast,
  /** The source's format: channels-last if the source is channels-last, else contiguous. */
  Preserve,
};

/** "contiguous_format", "channels_last" or "preserve_format", as PyTorch prints them. */
EMBER_API const char* memory_format_name(MemoryFormat f);

namespace autograd {
class Node;
struct AutogradMeta;
}  // namespace autograd

class Tensor;

namespace capture::detail {
/** How many captures record on some thread (core/dispatch/capture.h); 0 almost always. */
EMBER_API extern std::atomic<int> g_active;
/** Notes that host code takes the address of `t`'s data while this thread captures (defined in
 *  core/dispatch/capture.cpp: Note [Host reads in a capture]). */
EMBER_API void on_host_access(const Tensor& t);
}  // namespace capture::detail

/** An n-dimensional array on some device; copying the handle shares the data. */
class EMBER_API Tensor {
 public:
  /** An undefined tensor (no storage). */
  Tensor() = default;
  /** Wraps an impl. */
  explicit Tensor(IntrusivePtr<TensorImpl> impl) : impl_(std::move(impl)) {}

  /** True unless default-constructed. */
  bool defined() const { return static_cast<bool>(impl_); }
  /** The impl, for the core's own use. */
  TensorImpl* impl() const { return impl_.get(); }

  const Shape& sizes() const { return impl_->sizes(); }
  const Shape& strides() const { return impl_->strides(); }
  /** Size of one dim (negative dims count from the end). */
  int64_t size(int64_t dim) const;
  /** Stride of one dim (negative dims count from the end). */
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(impl_->sizes().size()); }
  int64_t numel() const { return impl_->numel(); }
  DType dtype() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  /** Storage offset in elements. */
  int64_t storage_offset() const { return impl_->offset(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  /** True if the elements are dense in format `f`'s order (Preserve is not a layout: throws). */
  bool is_contiguous(MemoryFormat f) const;
  /** ChannelsLast for a 4-d tensor dense in channels-last order and not row-major, else
   *  Contiguous: the format ops give their outputs for this input. */
  MemoryFormat suggest_memory_format() const {
    return impl_->is_channels_last() && !impl_->is_contiguous() ? MemoryFormat::ChannelsLast
                                                                : MemoryFormat::Contiguous;
  }
  size_t element_size() const { return itemsize(dtype()); }
  /** Bytes covered by numel() elements. */
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  /** Address of element [0, ..., 0]. */
  void* data_ptr() const {
    if (capture::detail::g_active.load(std::memory_order_relaxed) != 0) [[unlikely]] {
      capture::detail::on_host_access(*this);
    }
    return impl_->data();
  }
  /** Typed address of element [0, ..., 0]; checks the dtype. */
  template <typename T>
  T* data_ptr() const {
    EMBER_CHECK_TYPE(dtype_of<T>() == dtype(), "[data_ptr] requested {} but the tensor is {}",
                     dtype_of<T>(), dtype());
    return static_cast<T*>(data_ptr());
  }
  /** The storage shared with views. */
  const Storage& storage() const { return impl_->storage(); }
  /** Version counter of the storage, bumped by in-place ops. */
  uint32_t version() const { return impl_->storage()->version(); }
  /** True for a tensor whose memory was made inside InferenceMode (a view of one included):
   *  it keeps no version counter and autograd may not record it (Note [Inference tensors]). */
  bool is_inference() const;
  /** True if both handles share the same storage. */
  bool is_same_storage(const Tensor& o) const { return storage().get() == o.storage().get(); }
  /** True if both handles point at the same impl. */
  bool is_same(const Tensor& o) const { return impl_.get() == o.impl_.get(); }

  // Views: share storage, no kernel runs.
  /** Same data with new sizes (one may be -1); needs compatible strides. */
  Tensor view(IntList sizes) const;
  /** The same memory read as `dtype` (Tensor.view(dtype)): of an element size that differs,
   *  the last dim (contiguous) holds proportionally more or fewer elements. Not differentiable.
   *  A template so that view({}) still means sizes (a 0-d view), not DType{}. */
  template <typename D>
  requires std::same_as<D, DType> Tensor view(D dtype)
  const { return view_dtype(dtype); }
  /** view(dtype) by name. */
  Tensor view_dtype(DType dtype) const;
  /** A view when strides allow, otherwise a contiguous copy. */
  Tensor reshape(IntList sizes) const;
  /** Swaps two dims. */
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  /** Transpose of a 2-d (or lower) tensor. */
  Tensor t() const;
  /** Reorders dims. */
  Tensor permute(IntList dims) const;
  /** Elements start, start+step, ... < end along dim (bounds clamp like Python). */
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  /** `length` elements from `start` along dim. */
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  /** Removes dim by picking one index. */
  Tensor select(int64_t dim, int64_t index) const;
  /** Broadcasts size-1 dims to `sizes` (-1 keeps a size) with stride 0. */
  Tensor expand(IntList sizes) const;
  /** Broadcasts to the shape of `other`. */
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  /** Drops all size-1 dims. */
  Tensor squeeze() const;
  /** Drops dim if its size is 1. */
  Tensor squeeze(int64_t dim) const;
  /** Inserts a size-1 dim at `dim`. */
  Tensor unsqueeze(int64_t dim) const;
  /** In place: this tensor becomes unsqueeze(dim), every handle and alias of it seeing the new
   *  shape (Note [Shape changes in place] in core/ops/view.cpp). */
  Tensor& unsqueeze_(int64_t dim);
  /** In place: this tensor becomes squeeze(). */
  Tensor& squeeze_();
  /** In place: this tensor becomes squeeze(dim). */
  Tensor& squeeze_(int64_t dim);
  /** In place: this tensor becomes transpose(dim0, dim1). */
  Tensor& transpose_(int64_t dim0, int64_t dim1);
  /** In place: this tensor becomes t(). */
  Tensor& t_();
  /** Merges dims start..end into one. */
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  /** A view with explicit geometry over the same storage. */
  Tensor as_strided(IntList sizes, IntList strides, std::optional<int64_t> offset = {}) const;
  /** The windows of `size` elements every `step` along `dim`, as a view with a new last dim of
   *  `size` (torch.Tensor.unfold; windows may overlap). */
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;

  // Copies and conversions.
  /** This tensor if already contiguous, otherwise a contiguous copy. */
  Tensor contiguous() const;
  /** This tensor if already dense in format `f` (Contiguous or ChannelsLast), otherwise a copy
   *  in that format. */
  Tensor contiguous(MemoryFormat f) const;
  /** A copy in format `f`; Preserve (the default, as in PyTorch) keeps channels-last. */
  Tensor clone(MemoryFormat f = MemoryFormat::Preserve) const;
  /** contiguous(f): PyTorch's to(memory_format=f). */
  Tensor to(MemoryFormat f) const { return contiguous(f); }
  /** Converted to `dtype` (this tensor if already of that dtype). */
  Tensor to(DType dtype) const;
  /** Copied to `device` (this tensor if already there). */
  Tensor to(Device device) const;
  /** Copied to `device`; with `non_blocking`, a copy between pinned host memory and a device
   *  may still be in flight on return (Note [Non-blocking copies]): synchronize before the host
   *  reads a copy to the CPU, which then lands in pinned memory. */
  Tensor to(Device device, bool non_blocking) const;
  /** A copy in page-locked host memory (this tensor if already pinned); needs a CPU tensor and a
   *  loaded accelerator backend that offers pinned memory. */
  Tensor pin_memory() const;
  /** True if the tensor's memory is page-locked host memory. */
  bool is_pinned() const;
  /** Marks the memory as used by work on `stream` too, so the caching allocator does not hand it
   *  out again until that work has completed (PyTorch's record_stream). */
  void record_stream(const Stream& stream) const;
  /** The one element as a double; throws unless numel() == 1. */
  double item() const;
  /** The one element as a Scalar: exact for integer and bool dtypes. */
  Scalar item_scalar() const;
  /** The one element converted to T: integers are read exactly (not through a double), and
   *  a floating element becomes an integer T by truncation, an error for NaN, an infinity or a
   *  value beyond int64 (Note [Scalars that do not fit]). */
  template <typename T>
  T item() const {
    const Scalar s = item_scalar();
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (s.is_floating()) check_scalar_fits(s, DType::Int64, "item");
      return static_cast<T>(s.to_int());
    } else if constexpr (std::is_same_v<T, bool>) {
      return s.to_double() != 0;
    } else {
      return static_cast<T>(s.to_double());
    }
  }
  /** Copies `src` (broadcast, converted) into this tensor in place. */
  Tensor& copy_(const Tensor& src);
  /** Sets every element to `value` in place. */
  Tensor& fill_(Scalar value);
  /** Sets every element to zero in place. */
  Tensor& zero_() { return fill_(0); }
  /** Records an in-place write (bumps the version counter). */
  void bump_version() const { impl_->storage()->bump_version(); }

  // Autograd (core/autograd).
  /** True if gradients flow to or through this tensor. */
  bool requires_grad() const { return impl_->requires_grad(); }
  /** Makes a leaf (not) require grad; floating dtypes only. */
  Tensor& requires_grad_(bool on = true);
  /** The accumulated gradient (undefined until a backward reaches this leaf). */
  const Tensor& grad() const;
  /** The gradient slot, for optimizers and zero_grad. */
  Tensor& mutable_grad() const;
  /** The node that produced this tensor, or null for leaves. */
  std::shared_ptr<autograd::Node> grad_fn() const;
  /** True for tensors made by the user rather than by a recorded op. */
  bool is_leaf() const;
  /** Which output of its grad_fn this tensor is. */
  uint32_t output_nr() const;
  /** True for a view autograd tracks: it follows its base's history (Note [Views see their
   *  base's history] in core/autograd/record.cpp). */
  bool is_view() const;
  /** The tensor this view follows (the first of its chain of views), or undefined. */
  Tensor base() const;
  /** Autograd state, or null. */
  autograd::AutogradMeta* autograd_meta() const;
  /** Runs backward from this tensor (a scalar unless `gradient` is given). */
  void backward(const Tensor& gradient = {}, bool retain_graph = false,
                bool create_graph = false) const;
  /** Same data, cut from the graph (shares storage and version counter). */
  Tensor detach() const;
  /** Makes this tensor use `data`'s storage, shape, dtype and device while staying the same
   *  tensor (handles, requires_grad, .grad and hooks kept): PyTorch's `t.data = data`, with
   *  which modules convert their parameters in place. */
  void set_data(const Tensor& data) const;
  /** Calls `hook(grad)` when this tensor's gradient is computed; a defined result replaces it. */
  void register_hook(std::function<Tensor(const Tensor&)> hook) const;
  /** On a leaf: calls `hook(leaf)` each time a gradient was accumulated into its .grad. */
  void register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;
  /** Keeps the gradient of a non-leaf in grad() after backward. */
  void retain_grad() const;

  /** PyTorch-like printed form. */
  std::string str() const;

 private:
  IntrusivePtr<TensorImpl> impl_;
};

/** Prints like PyTorch: tensor([[1., 2.], ...], dtype=...). */
EMBER_API std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace ember

/** Formats a Tensor in its printed form. */
template <>
struct fmt::formatter<ember::Tensor> : ember::TextFormatter {
  auto format(const ember::Tensor& t, format_context& ctx) const {
    return format_text(t.str(), ctx);
  }
};
