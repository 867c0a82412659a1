// Copies between layouts, dtypes and devices, and fill.
//   "copy": inputs {src}, outputs {dst} of src's shape, any dtypes; keyed by src dtype.
//   "fill": outputs {dst}; floats[0] = value, ints[0] = value as int64; keyed by dst dtype.
#include <cstring>

#include "ember/ops/elementwise.h"

#include "core/dispatch/call.h"
#include "ember/autograd/record.h"
#include "ember/dispatch/stream.h"
#include "ember/ops/factory.h"
#include "ember/plugin/loader.h"

namespace ember {
namespace {

bool host_accessible(Device d) {
  return device_type(d.type).table.host_accessible != 0;
}

}  // namespace

Tensor empty(IntList sizes, TensorOptions opts) {
  const int64_t n = shape_numel(sizes, "empty");
  int64_t bytes = 0;
  EMBER_CHECK(!__builtin_mul_overflow(n, static_cast<int64_t>(itemsize(opts.dtype)), &bytes),
              "[empty] {} elements of {} exceed the addressable size (their byte count overflows "
              "int64): sizes {}",
              n, opts.dtype, shape_str(sizes));
  if (__builtin_expect(opts.pinned, 0)) {
    EMBER_CHECK_TYPE(opts.device.type == kCpuType,
                     "[empty] pinned memory is CPU memory: got pinned_memory with device {}",
                     opts.device.str());
    Storage s = allocate_pinned_storage(static_cast<size_t>(bytes));
    return Tensor(make_intrusive<TensorImpl>(std::move(s), Shape(sizes), contiguous_strides(sizes),
                                             0, opts.dtype));
  }
  Storage s = allocate_storage(static_cast<size_t>(bytes), opts.device);
  return Tensor(make_intrusive<TensorImpl>(std::move(s), Shape(sizes), contiguous_strides(sizes), 0,
                                           opts.dtype));
}

Tensor empty_like(const Tensor& t) {
  return empty(t.sizes(), {t.dtype(), t.device()});
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
  Tensor src = src_in.device() == device() ? src_in : src_in.to(device());
  if (!(src.sizes() == sizes())) {
    EMBER_CHECK(broadcast_shapes(sizes(), src.sizes(), "copy_") == sizes(),
                "[copy_] source of shape {} does not broadcast to the destination's shape {}",
                shape_str(src.sizes()), shape_str(sizes()));
    src = src.expand(sizes());
  }
  if (numel() == 0) return *this;
  run_kernel(core_op(ops::copy), src.dtype(), {&src}, {this});
  bump_version();
  return *this;
}

Tensor& Tensor::fill_(Scalar value) {
  EMBER_CHECK_TYPE(defined(), "[fill_] called on an undefined tensor");
  if (autograd::any_requires_grad({this})) {
    // A constant: the old value gets a zero gradient, nothing else does.
    return autograd::inplace(*this, "fill_",
                             [&](const Tensor& old) { return add(mul(old, 0), value); });
  }
  if (numel() == 0) return *this;
  run_kernel(attrs::fill{.int_value = value.to_int(), .value = value.to_double()}, dtype(), {},
             {this});
  bump_version();
  return *this;
}

Tensor Tensor::contiguous() const {
  EMBER_CHECK_TYPE(defined(), "[contiguous] called on an undefined tensor");
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  EMBER_CHECK_TYPE(defined(), "[clone] called on an undefined tensor");
  return autograd::differentiable(
      "CloneBackward", "clone", {this},
      [&] {
        Tensor out = empty_like(*this);
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
        Tensor out = empty(sizes(), {d, device()});
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
  const Tensor src = contiguous();
  const bool from_host = host_accessible(src.device()), to_host = host_accessible(target);
  Tensor out;
  if (non_blocking && !from_host && to_host && target.type == kCpuType &&
      device_type(src.device().type).table.host_alloc && nbytes() > 0) {
    out =
        Tensor(make_intrusive<TensorImpl>(allocate_pinned_storage(nbytes(), src.device().type),
                                          Shape(sizes()), contiguous_strides(sizes()), 0, dtype()));
  } else {
    out = empty(sizes(), {dtype(), target});
  }
  if (nbytes() == 0) return out;
  if (from_host && to_host) {
    std::memcpy(out.data_ptr(), src.data_ptr(), nbytes());
  } else if (from_host) {
    (non_blocking ? device_copy_async : device_copy)(target, out.data_ptr(), src.data_ptr(),
                                                     nbytes(), EMBER_COPY_H2D);
  } else if (to_host) {
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
  Tensor out = empty(sizes(), TensorOptions(dtype()).pinned_memory());
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
