// Copies between layouts, dtypes and devices, and fill.
//   "copy": inputs {src}, outputs {dst} of src's shape, any dtypes; keyed by src dtype.
//   "fill": outputs {dst}; floats[0] = value, ints[0] = value as int64; keyed by dst dtype.
#include <cstring>

#include "ember/ops/elementwise.h"

#include "core/dispatch/call.h"
#include "core/dispatch/capture.h"
#include "core/ops/kernel_view.h"
#include "ember/autograd/record.h"
#include "ember/dispatch/stream.h"
#include "ember/ops/factory.h"
#include "ember/plugin/loader.h"
#include "ember/util/enum_name.h"

namespace ember {
namespace {

// A copy between devices is not a kernel call: a capture cannot replay it.
constexpr const char* kCopyInCapture =
    "[compile] a tensor was copied to another device (a copy is not a kernel call: move inputs "
    "and weights to the device before compiling)";

bool host_accessible(Device d) {
  return device_type(d.type).table.host_accessible != 0;
}

// Note [Channels-last tensors]
// As in PyTorch, channels-last is not a separate kind of tensor but a stride order: a 4-d
// [N, C, H, W] tensor whose elements lie as N, H, W, C (strides [HWC, 1, WC, C]). Sizes and
// indexing are unchanged; only the memory order differs, which is what convolution libraries
// run fastest on. The impl caches whether its strides are dense in that order (size-1 dims may
// have any stride, so [N, C, 1, 1] and [N, 1, H, W] are both formats at once: such a tensor
// counts as contiguous). The rules, PyTorch's:
//   - clone, the *_like factories, to(dtype) and to(device) preserve channels-last;
//     contiguous() and reshape's copies are row-major;
//   - convolution, batch norm and the pools give their output (and their input gradients) the
//     format of their input (a convolution: channels-last if its input or weight is);
//   - elementwise ops give the output the format of the first operand of the output's shape,
//     so a broadcast bias keeps the image's format;
//   - an accumulated .grad takes the format of its leaf (Note [The layout of .grad]).
// Only dense channels-last counts: a strided view of a channels-last tensor is handled as any
// other strided tensor (its results are row-major). Kernels see channels-last operands only
// where they said they take them (Note [Channels-last kernels] in plugin_abi.h).

// The strides of a new dense tensor in format f (Contiguous or ChannelsLast).
Shape strides_for(IntList sizes, MemoryFormat f) {
  return f == MemoryFormat::ChannelsLast ? channels_last_strides(sizes) : contiguous_strides(sizes);
}

}  // namespace

Tensor empty(IntList sizes, TensorOptions opts, MemoryFormat format) {
  EMBER_CHECK(format != MemoryFormat::Preserve,
              "[empty] preserve_format needs a source tensor (use empty_like)");
  const int64_t n = shape_numel(sizes, "empty");
  int64_t bytes = 0;
  EMBER_CHECK(!__builtin_mul_overflow(n, static_cast<int64_t>(itemsize(opts.dtype)), &bytes),
              "[empty] {} elements of {} exceed the addressable size (their byte count overflows "
              "int64): sizes {}",
              n, opts.dtype, shape_str(sizes));
  Storage s;
  if (__builtin_expect(opts.pinned, 0)) {
    EMBER_CHECK_TYPE(opts.device.type == kCpuType,
                     "[empty] pinned memory is CPU memory: got pinned_memory with device {}",
                     opts.device.str());
    s = allocate_pinned_storage(static_cast<size_t>(bytes));
  } else {
    s = allocate_storage(static_cast<size_t>(bytes), opts.device);
  }
  return Tensor(make_intrusive<TensorImpl>(std::move(s), Shape(sizes), strides_for(sizes, format),
                                           0, opts.dtype));
}

Tensor empty(IntList sizes, TensorOptions opts) {
  return empty(sizes, opts, MemoryFormat::Contiguous);
}

Tensor empty_like(const Tensor& t, MemoryFormat format) {
  return empty(t.sizes(), {t.dtype(), t.device()},
               format == MemoryFormat::Preserve ? t.suggest_memory_format() : format);
}

const char* memory_format_name(MemoryFormat f) {
  static constexpr const char* kNames[] = {"contiguous_format", "channels_last", "preserve_format"};
  return enum_name<MemoryFormat::Preserve>(f, kNames, "unknown");
}

bool Tensor::is_contiguous(MemoryFormat f) const {
  EMBER_CHECK_TYPE(defined(), "[is_contiguous] called on an undefined tensor");
  EMBER_CHECK(f != MemoryFormat::Preserve,
              "[is_contiguous] preserve_format is not a layout (ask for contiguous_format or "
              "channels_last)");
  return f == MemoryFormat::ChannelsLast ? impl_->is_channels_last() : impl_->is_contiguous();
}

Tensor& Tensor::copy_(const Tensor& src_in) {
  EMBER_CHECK_TYPE(defined() && src_in.defined(), "[copy_] undefined tensor");
  if (autograd::any_requires_grad({this, &src_in})) {
    // The new value is src (moved, converted, broadcast); the old value gets no gradient.
    EMBER_CHECK(broadcast_shapes(sizes(), src_in.sizes(), "copy_") == sizes(),
                "[copy_] source of shape {} does not broadcast to the destination's shape {}",
                shape_str(src_in.sizes()), shape_str(sizes()));
    const DType d = dtype();
    const Device dev = device();
    const Shape shape = sizes();
    return autograd::inplace(
        *this, "copy_", [&](const Tensor&) { return src_in.to(dev).to(d).expand(shape).clone(); });
  }
  autograd::check_writable(*this, "copy_");
  Tensor src = src_in.device() == device() ? src_in : src_in.to(device());
  if (!(src.sizes() == sizes())) {
    EMBER_CHECK(broadcast_shapes(sizes(), src.sizes(), "copy_") == sizes(),
                "[copy_] source of shape {} does not broadcast to the destination's shape {}",
                shape_str(src.sizes()), shape_str(sizes()));
    src = detail::expand_for_kernel(src, sizes());
  }
  if (numel() == 0) return *this;
  run_kernel(core_op(ops::copy), src.dtype(), {&src}, {this});
  bump_version();
  return *this;
}

Tensor& Tensor::fill_(Scalar value) {
  EMBER_CHECK_TYPE(defined(), "[fill_] called on an undefined tensor");
  check_scalar_fits(value, dtype(), "fill_");
  if (autograd::any_requires_grad({this})) {
    // A constant: the old value gets a zero gradient, nothing else does.
    return autograd::inplace(*this, "fill_",
                             [&](const Tensor& old) { return add(mul(old, 0), value); });
  }
  autograd::check_writable(*this, "fill_");
  if (numel() == 0) return *this;
  run_kernel(attrs::fill{.int_value = value.to_int(), .value = value.to_double()}, dtype(), {},
             {this});
  bump_version();
  return *this;
}

Tensor Tensor::contiguous() const {
  EMBER_CHECK_TYPE(defined(), "[contiguous] called on an undefined tensor");
  return is_contiguous() ? *this : clone(MemoryFormat::Contiguous);
}

Tensor Tensor::contiguous(MemoryFormat f) const {
  EMBER_CHECK_TYPE(defined(), "[contiguous] called on an undefined tensor");
  EMBER_CHECK(f != MemoryFormat::Preserve,
              "[contiguous] preserve_format is not a target layout (ask for contiguous_format or "
              "channels_last)");
  EMBER_CHECK(f != MemoryFormat::ChannelsLast || dim() == 4,
              "[contiguous] channels_last needs a 4-d [N, C, H, W] tensor: got shape {}",
              shape_str(sizes()));
  return is_contiguous(f) ? *this : clone(f);
}

Tensor Tensor::clone(MemoryFormat f) const {
  EMBER_CHECK_TYPE(defined(), "[clone] called on an undefined tensor");
  EMBER_CHECK(f != MemoryFormat::ChannelsLast || dim() == 4,
              "[clone] channels_last needs a 4-d [N, C, H, W] tensor: got shape {}",
              shape_str(sizes()));
  return autograd::differentiable(
      "CloneBackward", "clone", {this},
      [&] {
        Tensor out = empty_like(*this, f);
        if (numel() > 0) run_kernel(core_op(ops::copy), dtype(), {this}, {&out});
        return out;
      },
      [] {
        return [](const std::vector<Tensor>& g, const autograd::LambdaNode&) {
          return std::vector<Tensor>{g[0]};
        };
      });
}

Tensor Tensor::to(DType d) const {
  EMBER_CHECK_TYPE(defined(), "[to] called on an undefined tensor (to {})", d);
  if (d == dtype()) return *this;
  return autograd::differentiable(
      "ToCopyBackward", "to", {this},
      [&] {
        Tensor out = empty(sizes(), {d, device()}, suggest_memory_format());
        if (numel() > 0) run_kernel(core_op(ops::copy), dtype(), {this}, {&out});
        return out;
      },
      [src = dtype()] {
        return [src](const std::vector<Tensor>& g, const autograd::LambdaNode&) {
          return std::vector<Tensor>{g[0].to(src)};
        };
      });
}

Tensor Tensor::to(Device target) const {
  return to(target, /*non_blocking=*/false);
}

// Note [Non-blocking copies]
// to(device, non_blocking=true) follows PyTorch. Host to device: from pinned memory the copy is
// queued on the device's current stream and the call returns at once (from pageable memory
// the driver stages the bytes first, so it returns once they are staged); kernels queued
// later on that stream see the data. Device to host: the result is allocated in pinned memory
// from the source's backend and the copy is queued without waiting, so its values are valid
// only after a synchronize (of the device, the stream, or an event recorded after the copy).
// The pinned source or destination is not reused by the allocator before the copy completes
// (the backend tracks it, Note [Pinned host memory]), so dropping the tensor early is safe;
// writing into a pinned source before the copy completed is not, exactly as in PyTorch.
Tensor Tensor::to(Device target, bool non_blocking) const {
  EMBER_CHECK_TYPE(defined(), "[to] called on an undefined tensor (to {})", target.str());
  if (target == device()) return *this;
  if (autograd::any_requires_grad({this})) {
    return autograd::differentiable(
        "ToCopyBackward", "to", {this}, [&] { return to(target, non_blocking); },
        [src = device()] {
          return [src](const std::vector<Tensor>& g, const autograd::LambdaNode&) {
            return std::vector<Tensor>{g[0].to(src)};
          };
        });
  }
  check_device(target, "to");
  // Dense bytes move as they lie, so a channels-last tensor stays channels-last.
  const MemoryFormat format = suggest_memory_format();
  const Tensor src = contiguous(format);
  const bool from_host = host_accessible(src.device()), to_host = host_accessible(target);
  Tensor out;
  if (non_blocking && !from_host && to_host && target.type == kCpuType &&
      device_type(src.device().type).table.host_alloc && nbytes() > 0) {
    out = Tensor(make_intrusive<TensorImpl>(allocate_pinned_storage(nbytes(), src.device().type),
                                            Shape(sizes()), strides_for(sizes(), format), 0,
                                            dtype()));
  } else {
    out = empty(sizes(), {dtype(), target}, format);
  }
  if (nbytes() == 0) return out;
  if (from_host && to_host) {
    if (src.device() != target) {
      capture::refuse(kCopyInCapture);
    }
    std::memcpy(out.data_ptr(), src.data_ptr(), nbytes());
  } else if (from_host) {
    capture::refuse(kCopyInCapture);
    (non_blocking ? device_copy_async : device_copy)(target, out.data_ptr(), src.data_ptr(),
                                                     nbytes(), EMBER_COPY_H2D);
  } else if (to_host) {
    capture::refuse(
        "[compile] a tensor was copied from its device to the host (a copy is not "
        "a kernel call: return device tensors and move them afterwards)");
    (non_blocking && out.is_pinned() ? device_copy_async : device_copy)(
        src.device(), out.data_ptr(), src.data_ptr(), nbytes(), EMBER_COPY_D2H);
  } else {
    return src.to(Device::cpu()).to(target, non_blocking);
  }
  return out;
}

Tensor Tensor::pin_memory() const {
  EMBER_CHECK_TYPE(defined(), "[pin_memory] called on an undefined tensor");
  EMBER_CHECK_TYPE(device().type == kCpuType,
                   "[pin_memory] only CPU tensors can be pinned: got a tensor on {}",
                   device().str());
  EMBER_CHECK_TYPE(!requires_grad(),
                   "[pin_memory] pins data, not autograd history: the tensor requires grad (pin "
                   "its .detach() instead)");
  if (is_pinned()) return *this;
  Tensor out = empty(sizes(), TensorOptions(dtype(), Device::cpu()).pinned_memory());
  if (numel() > 0) run_kernel(core_op(ops::copy), dtype(), {this}, {&out});
  return out;
}

bool Tensor::is_pinned() const {
  return defined() && storage() && storage()->pinned();
}

void Tensor::record_stream(const Stream& stream) const {
  EMBER_CHECK_TYPE(defined(), "[record_stream] called on an undefined tensor");
  EMBER_CHECK_TYPE(stream.device() == device(),
                   "[record_stream] a tensor on {} cannot be used by a stream of {}",
                   device().str(), stream.device().str());
  const ember_device_type_v1& t = device_type(device().type).table;
  if (!t.record_stream || !storage() || !storage()->data()) return;  // nothing is cached
  detail::call_checked(
      [&](char* err, size_t cap) {
        return t.record_stream(t.ctx, device().index, storage()->data(), stream.handle(), err, cap);
      },
      "[record_stream] {} failed", device().str());
}

double Tensor::item() const {
  return item_scalar().to_double();
}

Scalar Tensor::item_scalar() const {
  EMBER_CHECK(defined() && numel() == 1,
              "[item] a tensor with {} elements cannot be converted to a scalar (sizes {})",
              defined() ? numel() : 0, defined() ? shape_str(sizes()) : "undefined");
  if (!host_accessible(device())) return to(Device::cpu()).item_scalar();
  Scalar v;
  visit_dtype(dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T x = *static_cast<const T*>(data_ptr());
    if constexpr (std::is_same_v<T, bool> || std::is_integral_v<T>) {
      v = Scalar(x);
    } else {
      v = Scalar(static_cast<double>(static_cast<sdk::Compute<T>>(x)));
    }
  });
  return v;
}

}  // namespace ember
