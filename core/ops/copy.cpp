// Copies between layouts, dtypes and devices, and fill.
//   "copy": inputs {src}, outputs {dst} of src's shape, any dtypes; keyed by src dtype.
//   "fill": outputs {dst}; floats[0] = value, ints[0] = value as int64; keyed by dst dtype.
#include <cstring>

#include "core/ops/elementwise.h"

#include "core/autograd/differentiable_ops.h"
#include "core/autograd/record.h"
#include "core/dispatch/call.h"
#include "core/ops/factory.h"
#include "core/plugin/loader.h"

namespace ember {
namespace {

const autograd::DeclareDifferentiable kDifferentiable{"clone", "to", "copy_", "contiguous"};

Op& copy_op() {
  static Op& op = op_handle("copy");
  return op;
}
Op& fill_op() {
  static Op& op = op_handle("fill");
  return op;
}

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
  run_kernel(copy_op(), src.dtype(), {&src}, {this});
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
  const double f = value.to_double();
  const int64_t i = value.to_int();
  run_kernel(fill_op(), dtype(), {}, {this}, {{&i, 1}, {&f, 1}});
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
        if (numel() > 0) run_kernel(copy_op(), dtype(), {this}, {&out});
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
        if (numel() > 0) run_kernel(copy_op(), dtype(), {this}, {&out});
        return out;
      },
      [src = dtype()] {
        return [src](const std::vector<Tensor>& g, const autograd::LambdaNode&) {
          return std::vector<Tensor>{g[0].to(src)};
        };
      });
}

Tensor Tensor::to(Device target) const {
  EMBER_CHECK_TYPE(defined(), "[to] called on an undefined tensor (to {})", target.str());
  if (target == device()) return *this;
  if (autograd::any_requires_grad({this})) {
    return autograd::differentiable(
        "ToCopyBackward", "to", {this}, [&] { return to(target); },
        [src = device()] {
          return [src](const std::vector<Tensor>& g, const autograd::LambdaNode&) {
            return std::vector<Tensor>{g[0].to(src)};
          };
        });
  }
  check_device(target, "to");
  const Tensor src = contiguous();
  Tensor out = empty(sizes(), {dtype(), target});
  if (nbytes() == 0) return out;
  if (host_accessible(src.device()) && host_accessible(target)) {
    std::memcpy(out.data_ptr(), src.data_ptr(), nbytes());
  } else if (host_accessible(src.device())) {
    device_copy(target, out.data_ptr(), src.data_ptr(), nbytes(), EMBER_COPY_H2D);
  } else if (host_accessible(target)) {
    device_copy(src.device(), out.data_ptr(), src.data_ptr(), nbytes(), EMBER_COPY_D2H);
  } else {
    return src.to(Device::cpu()).to(target);
  }
  return out;
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
