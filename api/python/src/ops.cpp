// Every op with PyTorch's Python name, keywords and defaults: as a function of the ember module
// (ember.add(input, other, alpha=1)) and, where PyTorch has one, as a Tensor method (x.add(other))
// and an operator (x + other). Each op is written once and registered in both places (Binder).
// The GIL is released inside every op (Note [The GIL around ops]).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "bind.h"

namespace ember::python {

// Note [The GIL around ops]
// Every op releases the GIL for its whole C++ call (release_gil), so Python threads (DataLoader
// workers, a second training thread) run while a kernel computes. Arguments are converted before
// the release and the result after it: both touch Python objects. A Python callback reached from
// inside an op (a tensor hook during backward, a Python module's forward called by a C++
// container, a custom Function) takes the GIL again itself (PyRef, GilAcquire, the modules'
// trampolines), through the gate that keeps threads off it once the interpreter exits (Note
// [Threads at interpreter exit] in bind.h).

namespace {

/** Registers an op as ember.<name>(input, ...) and Tensor.<name>(...), or either alone. */
struct Binder {
  nb::module_& m;
  nb::class_<PyTensor>& cls;

  template <typename Fn, typename... Extra>
  Binder& both(const char* name, Fn&& fn, const Extra&... extra) {
    m.def(name, fn, "input"_a, extra..., release_gil());
    cls.def(name, std::forward<Fn>(fn), extra..., release_gil());
    return *this;
  }
  /** both(), for a body that handles Python objects: it releases the GIL itself. */
  template <typename Fn, typename... Extra>
  Binder& both_py(const char* name, Fn&& fn, const Extra&... extra) {
    m.def(name, fn, "input"_a, extra...);
    cls.def(name, std::forward<Fn>(fn), extra...);
    return *this;
  }
  template <typename Fn, typename... Extra>
  Binder& function(const char* name, Fn&& fn, const Extra&... extra) {
    m.def(name, std::forward<Fn>(fn), extra..., release_gil());
    return *this;
  }
  template <typename Fn, typename... Extra>
  Binder& method(const char* name, Fn&& fn, const Extra&... extra) {
    cls.def(name, std::forward<Fn>(fn), extra..., release_gil());
    return *this;
  }
  /** A Python operator (__add__, ...): NotImplemented when the other operand does not fit. */
  template <typename Fn>
  Binder& op(const char* name, Fn&& fn) {
    cls.def(name, std::forward<Fn>(fn), nb::is_operator(), release_gil());
    return *this;
  }
};

}  // namespace

InterpolateOptions interpolate_options(const std::optional<Ints>& size, nb::handle scale_factor,
                                       std::string mode, std::optional<bool> align_corners,
                                       std::optional<bool> recompute_scale_factor, bool antialias) {
  InterpolateOptions o;
  if (size) o.size.assign(size->v.begin(), size->v.end());
  if (scale_factor.is_valid() && !scale_factor.is_none()) {
    o.scale_factor = PyNumber_Check(scale_factor.ptr()) && !PySequence_Check(scale_factor.ptr())
                         ? std::vector<double>{nb::cast<double>(scale_factor)}
                         : nb::cast<std::vector<double>>(scale_factor);
  }
  o.mode = std::move(mode);
  o.align_corners = align_corners.value_or(false);
  o.recompute_scale_factor = recompute_scale_factor.value_or(false);
  o.antialias = antialias;
  return o;
}

namespace {

Tensor add_op(const Tensor& a, const Operand& b, const Scalar& alpha) {
  return b.tensor ? add(a, *b.tensor, alpha) : add(a, b.scalar, alpha);
}

Tensor sub_op(const Tensor& a, const Operand& b, const Scalar& alpha) {
  return b.tensor ? sub(a, *b.tensor, alpha) : sub(a, b.scalar, alpha);
}

/** The number `s` as a 0-d tensor that broadcasts against `like`. */
Tensor scalar_like(const Scalar& s, const Tensor& like) {
  return detail::scalar_tensor(s, like.dtype(), like.device());
}

/** `b` as a tensor (a number becomes a 0-d tensor promoted against `a`). */
Tensor as_tensor_operand(const Operand& b, const Tensor& a) {
  return b.tensor ? *b.tensor : scalar_like(b.scalar, a);
}

/** A clamp bound as a tensor: undefined when absent, a number as a 0-d tensor against x. */
Tensor bound_tensor(const std::optional<Operand>& b, const Tensor& x) {
  if (!b) return Tensor();
  return as_tensor_operand(*b, x);
}

/** clamp with bounds that are numbers (clamp's kernel) or tensors (broadcast composites). */
Tensor clamp_op(const Tensor& x, const std::optional<Operand>& min,
                const std::optional<Operand>& max, const char* name) {
  EMBER_CHECK(min || max, "[{}] at least one of 'min' or 'max' must not be None", name);
  if ((min && min->tensor) || (max && max->tensor)) {
    return clamp(x, bound_tensor(min, x), bound_tensor(max, x));
  }
  return clamp(x, min ? std::optional<Scalar>(min->scalar) : std::nullopt,
               max ? std::optional<Scalar>(max->scalar) : std::nullopt);
}

/** unique's result as PyTorch returns it: the values alone, or a tuple with the asked-for parts. */
nb::object unique_result(std::tuple<Tensor, Tensor, Tensor> r, bool return_inverse,
                         bool return_counts) {
  if (!return_inverse && !return_counts) return wrap_tensor(std::get<0>(r));
  nb::list out;
  out.append(wrap_tensor(std::get<0>(r)));
  if (return_inverse) out.append(wrap_tensor(std::get<1>(r)));
  if (return_counts) out.append(wrap_tensor(std::get<2>(r)));
  return nb::tuple(out);
}

Tensor div_op(const Tensor& a, const Operand& b, const std::optional<std::string>& rounding_mode) {
  const std::optional<std::string_view> mode =
      rounding_mode ? std::optional<std::string_view>(*rounding_mode) : std::nullopt;
  return b.tensor ? div(a, *b.tensor, mode) : div(a, b.scalar, mode);
}

Tensor pow_op(const Tensor& a, const Operand& b) {
  return b.tensor ? pow(a, *b.tensor) : pow(a, b.scalar);
}

/** Dims for reductions: None -> all, an int or a sequence of ints. */
IntList dims_of(const std::optional<Ints>& dim) {
  return dim ? IntList(dim->v) : IntList();
}

/** A reduction's input converted first when a dtype is asked for (sum(x, dtype=float64)). */
Tensor cast_input(const Tensor& t, const std::optional<DType>& dtype) {
  return dtype && *dtype != t.dtype() ? t.to(*dtype) : t;
}

/** var/std's correction from PyTorch's two spellings: correction=, or unbiased=. */
int64_t correction_of(std::optional<int64_t> correction, std::optional<bool> unbiased) {
  if (correction) return *correction;
  return unbiased.value_or(true) ? 1 : 0;
}

nb::object values_indices(std::tuple<Tensor, Tensor> r, const char* type_name) {
  nb::module_ ember = nb::module_::import_("ember");
  nb::object type = ember.attr("return_types").attr(type_name);
  return type(std::get<0>(r), std::get<1>(r));
}

}  // namespace

ConvPaddingArg conv_padding_arg(nb::handle padding, size_t spatial, const char* op) {
  if (!nb::isinstance<nb::str>(padding)) {
    const Ints p = nb::cast<Ints>(padding);
    EMBER_CHECK(p.size() == 1 || p.size() == spatial,
                "[{}] padding needs 1 or {} values (one per spatial dim): got {}", op, spatial,
                p.size());
    return {p.size() == 1 ? Shape(spatial, p.v[0]) : p.v, std::nullopt};
  }
  const std::string name = nb::cast<std::string>(padding);
  EMBER_CHECK(name == "same" || name == "valid",
              "[{}] padding must be an int, a tuple, 'valid' or 'same': got '{}'", op, name);
  return {Shape(), name == "same" ? ConvPadding::Same : ConvPadding::Valid};
}

namespace {

Shape pair(const Ints& v, size_t n = 2) {
  if (v.size() == 1 && n > 1) return Shape(n, v.v[0]);
  return v.v;
}

/** An adaptive pooling's output_size over `n` spatial dims: an int, or a sequence whose None
 *  entries keep x's size there. */
Shape adaptive_size(const Tensor& x, nb::handle output_size, size_t n) {
  if (!PyTuple_Check(output_size.ptr()) && !PyList_Check(output_size.ptr())) {
    return pair(nb::cast<Ints>(output_size), n);
  }
  Shape out;
  int64_t i = 0;
  for (nb::handle v : nb::borrow<nb::sequence>(output_size)) {
    out.push_back(v.is_none() ? x.size(x.dim() - static_cast<int64_t>(n) + i)
                              : nb::cast<int64_t>(v));
    ++i;
  }
  return out;
}

/** A max pooling's result: values() alone, or both()'s (output, indices) when return_indices;
 *  either runs with the GIL released. */
template <class Values, class Both>
nb::object max_pooled(bool return_indices, Values&& values, Both&& both) {
  if (!return_indices) {
    Tensor r;
    {
      GilRelease release;
      r = values();
    }
    return wrap_tensor(r);
  }
  std::tuple<Tensor, Tensor> r;
  {
    GilRelease release;
    r = both();
  }
  return nb::make_tuple(std::get<0>(r), std::get<1>(r));
}

/** PyTorch's legacy size_average/reduce arguments folded into a reduction, as torch does. */
Reduction loss_reduction(std::optional<bool> size_average, std::optional<bool> reduce,
                         std::string_view reduction, const char* op) {
  if (size_average || reduce) {
    const bool avg = size_average.value_or(true), red = reduce.value_or(true);
    if (!red) return Reduction::None;
    return avg ? Reduction::Mean : Reduction::Sum;
  }
  return parse_reduction(reduction, op);
}

/** A functional form's result, written into x when it is asked for in place (inplace=True). */
Tensor maybe_inplace(const Tensor& x, const Tensor& r, bool inplace) {
  if (!inplace) return r;
  Tensor self = x;
  return self.copy_(r);
}

void bind_functional(nb::module_& f) {
  // Layers.
  f.def(
      "linear",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b) {
        return linear(x, w, opt(b));
      },
      "input"_a, "weight"_a, "bias"_a = nb::none(), release_gil(), "input @ weight.T + bias.");
  f.def(
      "dropout",
      [](const Tensor& x, double p, bool training, bool inplace) {
        return maybe_inplace(x, dropout(x, p, training), inplace);
      },
      "input"_a, "p"_a = 0.5, "training"_a = true, "inplace"_a = false, release_gil(),
      "Zeroes elements with probability p in training, scaling the rest by 1 / (1 - p).");
  for (int64_t d = 1; d <= 3; ++d) {
    static const char* const kNames[] = {"dropout1d", "dropout2d", "dropout3d"};
    f.def(
        kNames[d - 1],
        [d](const Tensor& x, double p, bool training, bool inplace) {
          return maybe_inplace(x, feature_dropout(x, p, d, training), inplace);
        },
        "input"_a, "p"_a = 0.5, "training"_a = true, "inplace"_a = false, release_gil(),
        "Zeroes whole channels with probability p in training, scaling the rest by 1 / (1 - p).");
  }
  f.def(
      "embedding",
      [](const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx,
         std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq, bool sparse) {
        EMBER_CHECK_NOT_IMPLEMENTED(!sparse, "[embedding] sparse gradients are not supported");
        return embedding(weight, input, padding_idx, max_norm, norm_type, scale_grad_by_freq);
      },
      "input"_a, "weight"_a, "padding_idx"_a = nb::none(), "max_norm"_a = nb::none(),
      "norm_type"_a = 2.0, "scale_grad_by_freq"_a = false, "sparse"_a = false, release_gil(),
      "Rows of weight picked by the integer indices of input.");
  f.def(
      "embedding_bag",
      [](const Tensor& input, const Tensor& weight, std::optional<Tensor> offsets,
         std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq,
         std::string_view mode, bool sparse, std::optional<Tensor> per_sample_weights,
         bool include_last_offset, std::optional<int64_t> padding_idx) {
        EMBER_CHECK_NOT_IMPLEMENTED(!sparse, "[embedding_bag] sparse gradients are not supported");
        EMBER_CHECK_NOT_IMPLEMENTED(!scale_grad_by_freq,
                                    "[embedding_bag] scale_grad_by_freq is not supported");
        return embedding_bag(weight, input, opt(offsets), mode, opt(per_sample_weights),
                             include_last_offset, padding_idx, max_norm, norm_type);
      },
      "input"_a, "weight"_a, "offsets"_a = nb::none(), "max_norm"_a = nb::none(),
      "norm_type"_a = 2.0, "scale_grad_by_freq"_a = false, "mode"_a = "mean", "sparse"_a = false,
      "per_sample_weights"_a = nb::none(), "include_last_offset"_a = false,
      "padding_idx"_a = nb::none(), release_gil(),
      "Sums, means or maxima of bags of weight's rows picked by input (and offsets).");
  f.def(
      "one_hot", [](const Tensor& t, int64_t num_classes) { return one_hot(t, num_classes); },
      "tensor"_a, "num_classes"_a = -1, release_gil(), "The classes as one-hot int64 rows.");
  f.def(
      "pad",
      [](const Tensor& x, Ints pad_, std::string_view mode, std::optional<double> value) {
        return pad(x, pad_, mode, value.value_or(0.0));
      },
      "input"_a, "pad"_a, "mode"_a = "constant", "value"_a = nb::none(), release_gil(),
      "Pads the last dims: (left, right[, top, bottom]) with 'constant', 'reflect', "
      "'replicate' or 'circular'.");
  f.def(
      "interpolate",
      [](const Tensor& x, std::optional<Ints> size, nb::handle scale_factor, std::string mode,
         std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor,
         bool antialias) {
        const InterpolateOptions o = interpolate_options(
            size, scale_factor, std::move(mode), align_corners, recompute_scale_factor, antialias);
        GilRelease release;
        return interpolate(x, o);
      },
      "input"_a, "size"_a = nb::none(), "scale_factor"_a = nb::none(), "mode"_a = "nearest",
      "align_corners"_a = nb::none(), "recompute_scale_factor"_a = nb::none(),
      "antialias"_a = false,
      "Resizes input's spatial dims to size or by scale_factor (nearest, nearest-exact, linear, "
      "bilinear, bicubic, trilinear, area).");
  f.def(
      "affine_grid",
      [](const Tensor& theta, Ints size, std::optional<bool> align_corners) {
        return affine_grid(theta, size, align_corners.value_or(false));
      },
      "theta"_a, "size"_a, "align_corners"_a = nb::none(), release_gil(),
      "The sampling grid [N, H, W, 2] (or [N, D, H, W, 3]) of affine matrices theta [N, 2, 3] "
      "(or [N, 3, 4]) for an output of size (N, C, H, W) (or (N, C, D, H, W)).");
  f.def(
      "grid_sample",
      [](const Tensor& input, const Tensor& grid, std::string_view mode,
         std::string_view padding_mode, std::optional<bool> align_corners) {
        return grid_sample(input, grid, mode, padding_mode, align_corners.value_or(false));
      },
      "input"_a, "grid"_a, "mode"_a = "bilinear", "padding_mode"_a = "zeros",
      "align_corners"_a = nb::none(), release_gil(),
      "Samples input at the normalized points of grid (bilinear, nearest or bicubic; zeros, "
      "border or reflection padding).");
  f.def(
      "pixel_shuffle", [](const Tensor& x, int64_t r) { return pixel_shuffle(x, r); }, "input"_a,
      "upscale_factor"_a, release_gil(), "[*, C r^2, H, W] into [*, C, H r, W r].");
  f.def(
      "channel_shuffle", [](const Tensor& x, int64_t groups) { return channel_shuffle(x, groups); },
      "input"_a, "groups"_a, release_gil(), "ShuffleNet's shuffle of the channels across groups.");
  f.def(
      "max_unpool1d",
      [](const Tensor& x, const Tensor& indices, Ints kernel_size, std::optional<Ints> stride,
         Ints padding, std::optional<Ints> output_size) {
        const char* name = "max_unpool1d";
        return max_unpool1d(
            x, indices, single(kernel_size, name, "kernel_size"),
            stride && stride->size() ? std::optional(single(*stride, name, "stride"))
                                     : std::nullopt,
            single(padding, name, "padding"), output_size ? IntList(*output_size) : IntList());
      },
      "input"_a, "indices"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0,
      "output_size"_a = nb::none(), release_gil(), "Max pooling's values back at their indices.");
  for (const auto& [name, fn] :
       {std::pair{"max_unpool2d", &max_unpool2d}, std::pair{"max_unpool3d", &max_unpool3d}}) {
    f.def(
        name,
        [fn](const Tensor& x, const Tensor& indices, Ints kernel_size, std::optional<Ints> stride,
             Ints padding, std::optional<Ints> output_size) {
          return fn(x, indices, kernel_size, stride ? IntList(*stride) : IntList(), padding,
                    output_size ? IntList(*output_size) : IntList());
        },
        "input"_a, "indices"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0,
        "output_size"_a = nb::none(), release_gil(), "Max pooling's values back at their indices.");
  }
  f.def(
      "lp_pool1d",
      [](const Tensor& x, double norm_type, Ints kernel_size, std::optional<Ints> stride,
         bool ceil_mode) {
        const char* name = "lp_pool1d";
        return lp_pool1d(x, norm_type, single(kernel_size, name, "kernel_size"),
                         stride && stride->size() ? std::optional(single(*stride, name, "stride"))
                                                  : std::nullopt,
                         ceil_mode);
      },
      "input"_a, "norm_type"_a, "kernel_size"_a, "stride"_a = nb::none(), "ceil_mode"_a = false,
      release_gil(), "Power-average pooling: (sum of x^p over each window)^(1/p).");
  for (const auto& [name, fn] :
       {std::pair{"lp_pool2d", &lp_pool2d}, std::pair{"lp_pool3d", &lp_pool3d}}) {
    f.def(
        name,
        [fn](const Tensor& x, double norm_type, Ints kernel_size, std::optional<Ints> stride,
             bool ceil_mode) {
          return fn(x, norm_type, kernel_size, stride ? IntList(*stride) : IntList(), ceil_mode);
        },
        "input"_a, "norm_type"_a, "kernel_size"_a, "stride"_a = nb::none(), "ceil_mode"_a = false,
        release_gil(), "Power-average pooling: (sum of x^p over each window)^(1/p).");
  }
  f.def(
      "pixel_unshuffle", [](const Tensor& x, int64_t r) { return pixel_unshuffle(x, r); },
      "input"_a, "downscale_factor"_a, release_gil(), "[*, C, H r, W r] into [*, C r^2, H, W].");
  f.def(
      "conv1d",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, Ints stride, nb::handle padding,
         Ints dilation, int64_t groups) {
        const ConvPaddingArg p = conv_padding_arg(padding, 1, "conv1d");
        const int64_t s = single(stride, "conv1d", "stride"),
                      d = single(dilation, "conv1d", "dilation");
        GilRelease release;
        return p.named ? conv1d(x, w, opt(b), s, *p.named, d, groups)
                       : conv1d(x, w, opt(b), s, p.numbers[0], d, groups);
      },
      "input"_a, "weight"_a, "bias"_a = nb::none(), "stride"_a = 1, "padding"_a = 0,
      "dilation"_a = 1, "groups"_a = 1, "1-d convolution over [N, C, L].");
  f.def(
      "conv2d",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, Ints stride, nb::handle padding,
         Ints dilation, int64_t groups) {
        const Shape s = pair(stride), d = pair(dilation);
        const ConvPaddingArg p = conv_padding_arg(padding, 2, "conv2d");
        GilRelease release;
        return p.named ? conv2d(x, w, opt(b), s, *p.named, d, groups)
                       : conv2d(x, w, opt(b), s, p.numbers, d, groups);
      },
      "input"_a, "weight"_a, "bias"_a = nb::none(), "stride"_a = 1, "padding"_a = 0,
      "dilation"_a = 1, "groups"_a = 1, "2-d convolution over [N, C, H, W].");
  f.def(
      "conv3d",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, Ints stride, nb::handle padding,
         Ints dilation, int64_t groups) {
        const Shape s = pair(stride, 3), d = pair(dilation, 3);
        const ConvPaddingArg p = conv_padding_arg(padding, 3, "conv3d");
        GilRelease release;
        return p.named ? conv3d(x, w, opt(b), s, *p.named, d, groups)
                       : conv3d(x, w, opt(b), s, p.numbers, d, groups);
      },
      "input"_a, "weight"_a, "bias"_a = nb::none(), "stride"_a = 1, "padding"_a = 0,
      "dilation"_a = 1, "groups"_a = 1, "3-d convolution over [N, C, D, H, W].");
  // F.conv_transpose1d/2d/3d: PyTorch's arguments, handed on as each core op takes its sizes.
  const auto transposed = [&](const char* name, const char* doc, auto run) {
    f.def(
        name,
        [run](const Tensor& x, const Tensor& w, std::optional<Tensor> b, Ints stride, Ints padding,
              Ints output_padding, int64_t groups, Ints dilation) {
          return run(x, w, opt(b), stride, padding, output_padding, groups, dilation);
        },
        "input"_a, "weight"_a, "bias"_a = nb::none(), "stride"_a = 1, "padding"_a = 0,
        "output_padding"_a = 0, "groups"_a = 1, "dilation"_a = 1, release_gil(), doc);
  };
  transposed("conv_transpose1d", "Transposed 1-d convolution over [N, C, L].",
             [](const Tensor& x, const Tensor& w, const Tensor& b, const Ints& s, const Ints& p,
                const Ints& op, int64_t groups, const Ints& d) {
               const char* name = "conv_transpose1d";
               return conv_transpose1d(
                   x, w, b, single(s, name, "stride"), single(p, name, "padding"),
                   single(op, name, "output_padding"), groups, single(d, name, "dilation"));
             });
  transposed("conv_transpose2d", "Transposed 2-d convolution.",
             [](const Tensor& x, const Tensor& w, const Tensor& b, const Ints& s, const Ints& p,
                const Ints& op, int64_t groups, const Ints& d) {
               return conv_transpose2d(x, w, b, pair(s), pair(p), pair(op), groups, pair(d));
             });
  transposed("conv_transpose3d", "Transposed 3-d convolution over [N, C, D, H, W].",
             [](const Tensor& x, const Tensor& w, const Tensor& b, const Ints& s, const Ints& p,
                const Ints& op, int64_t groups,
                const Ints& d) { return conv_transpose3d(x, w, b, s, p, op, groups, d); });
  f.def(
      "unfold",
      [](const Tensor& x, Ints kernel_size, Ints dilation, Ints padding, Ints stride) {
        return unfold(x, kernel_size.v, dilation.v, padding.v, stride.v);
      },
      "input"_a, "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0, "stride"_a = 1, release_gil(),
      "The sliding blocks of [N, C, H, W] as columns [N, C kH kW, L] (im2col).");
  f.def(
      "fold",
      [](const Tensor& x, Ints output_size, Ints kernel_size, Ints dilation, Ints padding,
         Ints stride) {
        return fold(x, output_size.v, kernel_size.v, dilation.v, padding.v, stride.v);
      },
      "input"_a, "output_size"_a, "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0,
      "stride"_a = 1, release_gil(),
      "Columns [N, C kH kW, L] summed into images [N, C, output_size] (col2im).");
  f.def(
      "max_pool2d",
      [](const Tensor& x, Ints kernel_size, std::optional<Ints> stride, Ints padding, Ints dilation,
         bool ceil_mode, bool return_indices) -> nb::object {
        const Shape k = pair(kernel_size), s = stride ? pair(*stride) : Shape(), p = pair(padding),
                    d = pair(dilation);
        return max_pooled(
            return_indices, [&] { return max_pool2d(x, k, s, p, d, ceil_mode); },
            [&] { return max_pool2d_with_indices(x, k, s, p, d, ceil_mode); });
      },
      "input"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "dilation"_a = 1,
      "ceil_mode"_a = false, "return_indices"_a = false,
      "Max pooling over [N, C, H, W] (with the argmax indices if asked).");
  f.def(
      "avg_pool2d",
      [](const Tensor& x, Ints kernel_size, std::optional<Ints> stride, Ints padding,
         bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
        return avg_pool2d(x, pair(kernel_size), stride ? pair(*stride) : Shape(), pair(padding),
                          ceil_mode, count_include_pad, divisor_override);
      },
      "input"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "ceil_mode"_a = false,
      "count_include_pad"_a = true, "divisor_override"_a = nb::none(), release_gil(),
      "Average pooling over [N, C, H, W].");
  f.def(
      "adaptive_avg_pool2d",
      [](const Tensor& x, nb::handle output_size) {
        const Shape out = adaptive_size(x, output_size, 2);
        GilRelease release;
        return adaptive_avg_pool2d(x, out);
      },
      "input"_a, "output_size"_a, "Average pooling to a fixed output size (None keeps a size).");
  f.def(
      "adaptive_max_pool2d",
      [](const Tensor& x, nb::handle output_size, bool return_indices) {
        const Shape out = adaptive_size(x, output_size, 2);
        return max_pooled(
            return_indices, [&] { return adaptive_max_pool2d(x, out); },
            [&] { return adaptive_max_pool2d_with_indices(x, out); });
      },
      "input"_a, "output_size"_a, "return_indices"_a = false,
      "Max pooling to a fixed output size (None keeps a size; with the indices if asked).");
  f.def(
      "max_pool3d",
      [](const Tensor& x, Ints kernel_size, std::optional<Ints> stride, Ints padding, Ints dilation,
         bool ceil_mode, bool return_indices) -> nb::object {
        const Shape k = pair(kernel_size, 3), s = stride ? pair(*stride, 3) : Shape(),
                    p = pair(padding, 3), d = pair(dilation, 3);
        return max_pooled(
            return_indices, [&] { return max_pool3d(x, k, s, p, d, ceil_mode); },
            [&] { return max_pool3d_with_indices(x, k, s, p, d, ceil_mode); });
      },
      "input"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "dilation"_a = 1,
      "ceil_mode"_a = false, "return_indices"_a = false,
      "Max pooling over [N, C, D, H, W] (with the argmax indices if asked).");
  f.def(
      "avg_pool3d",
      [](const Tensor& x, Ints kernel_size, std::optional<Ints> stride, Ints padding,
         bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
        return avg_pool3d(x, pair(kernel_size, 3), stride ? pair(*stride, 3) : Shape(),
                          pair(padding, 3), ceil_mode, count_include_pad, divisor_override);
      },
      "input"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "ceil_mode"_a = false,
      "count_include_pad"_a = true, "divisor_override"_a = nb::none(), release_gil(),
      "Average pooling over [N, C, D, H, W].");
  f.def(
      "adaptive_avg_pool3d",
      [](const Tensor& x, nb::handle output_size) {
        const Shape out = adaptive_size(x, output_size, 3);
        GilRelease release;
        return adaptive_avg_pool3d(x, out);
      },
      "input"_a, "output_size"_a,
      "Average pooling over [N, C, D, H, W] to a fixed output size (None keeps a size).");
  f.def(
      "adaptive_max_pool3d",
      [](const Tensor& x, nb::handle output_size, bool return_indices) {
        const Shape out = adaptive_size(x, output_size, 3);
        return max_pooled(
            return_indices, [&] { return adaptive_max_pool3d(x, out); },
            [&] { return adaptive_max_pool3d_with_indices(x, out); });
      },
      "input"_a, "output_size"_a, "return_indices"_a = false,
      "Max pooling over [N, C, D, H, W] to a fixed output size (None keeps a size).");
  f.def(
      "max_pool1d",
      [](const Tensor& x, Ints kernel_size, std::optional<Ints> stride, Ints padding, Ints dilation,
         bool ceil_mode, bool return_indices) -> nb::object {
        const int64_t k = single(kernel_size, "max_pool1d", "kernel_size");
        const std::optional<int64_t> s =
            stride && stride->size() ? std::optional(single(*stride, "max_pool1d", "stride"))
                                     : std::nullopt;
        const int64_t p = single(padding, "max_pool1d", "padding"),
                      d = single(dilation, "max_pool1d", "dilation");
        return max_pooled(
            return_indices, [&] { return max_pool1d(x, k, s, p, d, ceil_mode); },
            [&] { return max_pool1d_with_indices(x, k, s, p, d, ceil_mode); });
      },
      "input"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "dilation"_a = 1,
      "ceil_mode"_a = false, "return_indices"_a = false,
      "Max pooling over [N, C, L] (with the argmax indices if asked).");
  f.def(
      "avg_pool1d",
      [](const Tensor& x, Ints kernel_size, std::optional<Ints> stride, Ints padding,
         bool ceil_mode, bool count_include_pad) {
        const int64_t k = single(kernel_size, "avg_pool1d", "kernel_size");
        const std::optional<int64_t> s =
            stride && stride->size() ? std::optional(single(*stride, "avg_pool1d", "stride"))
                                     : std::nullopt;
        const int64_t p = single(padding, "avg_pool1d", "padding");
        GilRelease release;
        return avg_pool1d(x, k, s, p, ceil_mode, count_include_pad);
      },
      "input"_a, "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "ceil_mode"_a = false,
      "count_include_pad"_a = true, "Average pooling over [N, C, L].");
  f.def(
      "adaptive_avg_pool1d",
      [](const Tensor& x, Ints output_size) {
        const int64_t o = single(output_size, "adaptive_avg_pool1d", "output_size");
        GilRelease release;
        return adaptive_avg_pool1d(x, o);
      },
      "input"_a, "output_size"_a, "Average pooling over [N, C, L] to output_size.");
  f.def(
      "adaptive_max_pool1d",
      [](const Tensor& x, Ints output_size, bool return_indices) {
        const int64_t o = single(output_size, "adaptive_max_pool1d", "output_size");
        return max_pooled(
            return_indices, [&] { return adaptive_max_pool1d(x, o); },
            [&] { return adaptive_max_pool1d_with_indices(x, o); });
      },
      "input"_a, "output_size"_a, "return_indices"_a = false,
      "Max pooling over [N, C, L] to output_size.");
  f.def(
      "batch_norm",
      [](const Tensor& x, std::optional<Tensor> running_mean, std::optional<Tensor> running_var,
         std::optional<Tensor> weight, std::optional<Tensor> bias, bool training, double momentum,
         double eps) {
        return batch_norm(x, opt(weight), opt(bias), opt(running_mean), opt(running_var), training,
                          momentum, eps);
      },
      "input"_a, "running_mean"_a.none(), "running_var"_a.none(), "weight"_a = nb::none(),
      "bias"_a = nb::none(), "training"_a = false, "momentum"_a = 0.1, "eps"_a = 1e-5,
      release_gil(), "Batch normalisation over channel dim 1.");
  f.def(
      "layer_norm",
      [](const Tensor& x, Ints normalized_shape, std::optional<Tensor> weight,
         std::optional<Tensor> bias,
         double eps) { return layer_norm(x, normalized_shape, opt(weight), opt(bias), eps); },
      "input"_a, "normalized_shape"_a, "weight"_a = nb::none(), "bias"_a = nb::none(),
      "eps"_a = 1e-5, release_gil(), "Layer normalisation over the trailing normalized_shape.");
  f.def(
      "rms_norm",
      [](const Tensor& x, Ints normalized_shape, std::optional<Tensor> weight,
         std::optional<double> eps) { return rms_norm(x, normalized_shape, opt(weight), eps); },
      "input"_a, "normalized_shape"_a, "weight"_a = nb::none(), "eps"_a = nb::none(), release_gil(),
      "RMS normalisation over the trailing normalized_shape.");
  f.def(
      "instance_norm",
      [](const Tensor& x, std::optional<Tensor> running_mean, std::optional<Tensor> running_var,
         std::optional<Tensor> weight, std::optional<Tensor> bias, bool use_input_stats,
         double momentum, double eps) {
        return instance_norm(x, opt(weight), opt(bias), opt(running_mean), opt(running_var),
                             use_input_stats, momentum, eps);
      },
      "input"_a, "running_mean"_a = nb::none(), "running_var"_a = nb::none(),
      "weight"_a = nb::none(), "bias"_a = nb::none(), "use_input_stats"_a = true,
      "momentum"_a = 0.1, "eps"_a = 1e-5, release_gil(),
      "Instance normalisation of [N, C, ...]: each sample's channels over their spatial dims.");
  f.def(
      "bilinear",
      [](const Tensor& input1, const Tensor& input2, const Tensor& weight,
         std::optional<Tensor> bias) { return bilinear(input1, input2, weight, opt(bias)); },
      "input1"_a, "input2"_a, "weight"_a, "bias"_a = nb::none(), release_gil(),
      "x1^T A x2 + b for each output feature.");
  f.def(
      "group_norm",
      [](const Tensor& x, int64_t num_groups, std::optional<Tensor> weight,
         std::optional<Tensor> bias,
         double eps) { return group_norm(x, num_groups, opt(weight), opt(bias), eps); },
      "input"_a, "num_groups"_a, "weight"_a = nb::none(), "bias"_a = nb::none(), "eps"_a = 1e-5,
      release_gil(), "Group normalisation of [N, C, ...].");
  f.def(
      "normalize",
      [](const Tensor& x, double p, int64_t dim, double eps) { return normalize(x, p, dim, eps); },
      "input"_a, "p"_a = 2.0, "dim"_a = 1, "eps"_a = 1e-12, release_gil(),
      "input / max(||input||_p along dim, eps).");
  f.def(
      "cosine_similarity",
      [](const Tensor& a, const Tensor& b, int64_t dim, double eps) {
        return cosine_similarity(a, b, dim, eps);
      },
      "x1"_a, "x2"_a, "dim"_a = 1, "eps"_a = 1e-8, release_gil(),
      "Cosine of the angle between x1 and x2 along dim.");
  f.def(
      "pairwise_distance",
      [](const Tensor& a, const Tensor& b, double p, double eps, bool keepdim) {
        return pairwise_distance(a, b, p, eps, keepdim);
      },
      "x1"_a, "x2"_a, "p"_a = 2.0, "eps"_a = 1e-6, "keepdim"_a = false, release_gil(),
      "The p-norm of x1 - x2 + eps over the last dim.");

  // Activations.
  auto activation = [&](const char* name, auto fn, const char* doc) {
    f.def(
        name, [fn](const Tensor& x, bool inplace) { return maybe_inplace(x, fn(x), inplace); },
        "input"_a, "inplace"_a = false, release_gil(), doc);
  };
  activation(
      "relu", [](const Tensor& x) { return relu(x); }, "max(input, 0).");
  activation(
      "relu6", [](const Tensor& x) { return relu6(x); }, "min(max(input, 0), 6).");
  activation(
      "selu", [](const Tensor& x) { return selu(x); }, "The self-normalising ELU.");
  activation(
      "silu", [](const Tensor& x) { return silu(x); }, "input * sigmoid(input).");
  activation(
      "mish", [](const Tensor& x) { return mish(x); }, "input * tanh(softplus(input)).");
  activation(
      "hardsigmoid", [](const Tensor& x) { return hardsigmoid(x); }, "relu6(input + 3) / 6.");
  activation(
      "hardswish", [](const Tensor& x) { return hardswish(x); }, "input * relu6(input + 3) / 6.");
  f.def(
      "leaky_relu",
      [](const Tensor& x, double slope, bool inplace) {
        return maybe_inplace(x, leaky_relu(x, slope), inplace);
      },
      "input"_a, "negative_slope"_a = 0.01, "inplace"_a = false, release_gil(),
      "input where positive, else negative_slope * input.");
  f.def(
      "elu",
      [](const Tensor& x, double alpha, bool inplace) {
        return maybe_inplace(x, elu(x, alpha), inplace);
      },
      "input"_a, "alpha"_a = 1.0, "inplace"_a = false, release_gil(),
      "input where positive, else alpha * (exp(input) - 1).");
  f.def(
      "celu",
      [](const Tensor& x, double alpha, bool inplace) {
        return maybe_inplace(x, celu(x, alpha), inplace);
      },
      "input"_a, "alpha"_a = 1.0, "inplace"_a = false, release_gil(),
      "max(0, input) + min(0, alpha * (exp(input / alpha) - 1)).");
  f.def(
      "gelu", [](const Tensor& x, std::string_view approximate) { return gelu(x, approximate); },
      "input"_a, "approximate"_a = "none", release_gil(),
      "input * Phi(input), or its tanh approximation.");
  f.def(
      "softplus",
      [](const Tensor& x, double beta, double threshold) { return softplus(x, beta, threshold); },
      "input"_a, "beta"_a = 1.0, "threshold"_a = 20.0, release_gil(),
      "log(1 + exp(beta * input)) / beta.");
  f.def(
      "hardtanh",
      [](const Tensor& x, double min_val, double max_val, bool inplace) {
        return maybe_inplace(x, hardtanh(x, min_val, max_val), inplace);
      },
      "input"_a, "min_val"_a = -1.0, "max_val"_a = 1.0, "inplace"_a = false, release_gil(),
      "input clamped to [min_val, max_val].");
  f.def(
      "logsigmoid", [](const Tensor& x) { return logsigmoid(x); }, "input"_a, release_gil(),
      "log(sigmoid(input)).");
  f.def(
      "threshold",
      [](const Tensor& x, PyScalar th, PyScalar value, bool inplace) {
        return maybe_inplace(x, threshold(x, th, value), inplace);
      },
      "input"_a, "threshold"_a, "value"_a, "inplace"_a = false, release_gil(),
      "input where input > threshold, else value.");
  f.def(
      "hardshrink", [](const Tensor& x, double lambd) { return hardshrink(x, lambd); }, "input"_a,
      "lambd"_a = 0.5, release_gil(), "input where |input| > lambd, else 0.");
  f.def(
      "softshrink", [](const Tensor& x, double lambd) { return softshrink(x, lambd); }, "input"_a,
      "lambd"_a = 0.5, release_gil(), "input shrunk towards 0 by lambd (0 within it).");
  f.def(
      "tanhshrink", [](const Tensor& x) { return tanhshrink(x); }, "input"_a, release_gil(),
      "input - tanh(input).");
  f.def(
      "glu", [](const Tensor& x, int64_t dim) { return glu(x, dim); }, "input"_a, "dim"_a = -1,
      release_gil(), "a * sigmoid(b) for the halves a, b of input along dim.");
  f.def(
      "prelu", [](const Tensor& x, const Tensor& w) { return prelu(x, w); }, "input"_a, "weight"_a,
      release_gil(), "input where positive, else weight * input (weight per channel or one).");
  f.def(
      "sigmoid", [](const Tensor& x) { return sigmoid(x); }, "input"_a, release_gil(),
      "1 / (1 + exp(-input)).");
  f.def(
      "tanh", [](const Tensor& x) { return tanh(x); }, "input"_a, release_gil(), "tanh(input).");
  f.def(
      "softsign", [](const Tensor& x) { return div(x, add(abs(x), 1)); }, "input"_a, release_gil(),
      "input / (1 + |input|).");
  auto softmax_like = [&](const char* name, auto fn, const char* doc) {
    f.def(
        name,
        [fn](const Tensor& x, std::optional<int64_t> dim, nb::handle, std::optional<DType> dtype) {
          const int64_t d = dim.value_or(x.dim() <= 1 || x.dim() == 3 ? 0 : 1);
          GilRelease release;
          return fn(cast_input(x, dtype), d);
        },
        "input"_a, "dim"_a = nb::none(), "_stacklevel"_a = 3, "dtype"_a = nb::none(), doc);
  };
  softmax_like(
      "softmax", [](const Tensor& x, int64_t d) { return softmax(x, d); },
      "exp(input) / sum(exp(input)) along dim.");
  softmax_like(
      "log_softmax", [](const Tensor& x, int64_t d) { return log_softmax(x, d); },
      "log(softmax(input)) along dim.");
  softmax_like(
      "softmin", [](const Tensor& x, int64_t d) { return softmin(x, d); },
      "softmax(-input) along dim.");

  // Losses.
  f.def(
      "cross_entropy",
      [](const Tensor& input, const Tensor& target, std::optional<Tensor> weight,
         std::optional<bool> size_average, int64_t ignore_index, std::optional<bool> reduce,
         std::string_view reduction, double label_smoothing) {
        return cross_entropy(input, target, opt(weight), ignore_index,
                             loss_reduction(size_average, reduce, reduction, "cross_entropy"),
                             label_smoothing);
      },
      "input"_a, "target"_a, "weight"_a = nb::none(), "size_average"_a = nb::none(),
      "ignore_index"_a = -100, "reduce"_a = nb::none(), "reduction"_a = "mean",
      "label_smoothing"_a = 0.0, release_gil(),
      "Cross entropy of logits against class indices (or probabilities).");
  f.def(
      "nll_loss",
      [](const Tensor& input, const Tensor& target, std::optional<Tensor> weight,
         std::optional<bool> size_average, int64_t ignore_index, std::optional<bool> reduce,
         std::string_view reduction) {
        return nll_loss(input, target, opt(weight), ignore_index,
                        loss_reduction(size_average, reduce, reduction, "nll_loss"));
      },
      "input"_a, "target"_a, "weight"_a = nb::none(), "size_average"_a = nb::none(),
      "ignore_index"_a = -100, "reduce"_a = nb::none(), "reduction"_a = "mean", release_gil(),
      "Negative log likelihood of log-probabilities.");
  auto pointwise_loss = [&](const char* name, auto fn, const char* doc) {
    f.def(
        name,
        [fn, name](const Tensor& input, const Tensor& target, std::optional<bool> size_average,
                   std::optional<bool> reduce, std::string_view reduction) {
          return fn(input, target, loss_reduction(size_average, reduce, reduction, name));
        },
        "input"_a, "target"_a, "size_average"_a = nb::none(), "reduce"_a = nb::none(),
        "reduction"_a = "mean", release_gil(), doc);
  };
  pointwise_loss(
      "soft_margin_loss",
      [](const Tensor& a, const Tensor& b, Reduction r) { return soft_margin_loss(a, b, r); },
      "log(1 + exp(-target * input)).");
  f.def(
      "hinge_embedding_loss",
      [](const Tensor& input, const Tensor& target, double margin, std::optional<bool> size_average,
         std::optional<bool> reduce, std::string_view reduction) {
        return hinge_embedding_loss(
            input, target, margin,
            loss_reduction(size_average, reduce, reduction, "hinge_embedding_loss"));
      },
      "input"_a, "target"_a, "margin"_a = 1.0, "size_average"_a = nb::none(),
      "reduce"_a = nb::none(), "reduction"_a = "mean", release_gil(),
      "input where target is 1, max(0, margin - input) where it is -1.");
  f.def(
      "multilabel_soft_margin_loss",
      [](const Tensor& input, const Tensor& target, std::optional<Tensor> weight,
         std::optional<bool> size_average, std::optional<bool> reduce, std::string_view reduction) {
        return multilabel_soft_margin_loss(
            input, target, opt(weight),
            loss_reduction(size_average, reduce, reduction, "multilabel_soft_margin_loss"));
      },
      "input"_a, "target"_a, "weight"_a = nb::none(), "size_average"_a = nb::none(),
      "reduce"_a = nb::none(), "reduction"_a = "mean", release_gil(),
      "The per-class logistic loss averaged over the classes.");
  f.def(
      "poisson_nll_loss",
      [](const Tensor& input, const Tensor& target, bool log_input, bool full,
         std::optional<bool> size_average, double eps, std::optional<bool> reduce,
         std::string_view reduction) {
        return poisson_nll_loss(
            input, target, log_input, full, eps,
            loss_reduction(size_average, reduce, reduction, "poisson_nll_loss"));
      },
      "input"_a, "target"_a, "log_input"_a = true, "full"_a = false, "size_average"_a = nb::none(),
      "eps"_a = 1e-8, "reduce"_a = nb::none(), "reduction"_a = "mean", release_gil(),
      "Poisson negative log-likelihood.");
  f.def(
      "gaussian_nll_loss",
      [](const Tensor& input, const Tensor& target, const Operand& var, bool full, double eps,
         std::string_view reduction) {
        const Reduction r = parse_reduction(reduction, "gaussian_nll_loss");
        return var.tensor ? gaussian_nll_loss(input, target, *var.tensor, full, eps, r)
                          : gaussian_nll_loss(input, target, var.scalar.to_double(), full, eps, r);
      },
      "input"_a, "target"_a, "var"_a, "full"_a = false, "eps"_a = 1e-6, "reduction"_a = "mean",
      release_gil(), "Gaussian negative log-likelihood of target under N(input, var).");
  // ctc_loss's lengths are tensors or sequences of ints (an int for an unbatched input): one
  // overload each, both straight to the core's.
  auto bind_ctc_loss = [&]<class Lengths>(std::type_identity<Lengths>) {
    f.def(
        "ctc_loss",
        [](const Tensor& log_probs, const Tensor& targets, const Lengths& input_lengths,
           const Lengths& target_lengths, int64_t blank, std::string_view reduction,
           bool zero_infinity) {
          return ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                          parse_reduction(reduction, "ctc_loss"), zero_infinity);
        },
        "log_probs"_a, "targets"_a, "input_lengths"_a, "target_lengths"_a, "blank"_a = 0,
        "reduction"_a = "mean", "zero_infinity"_a = false, release_gil(),
        "Connectionist temporal classification loss of log_probs [T, N, C] against targets.");
  };
  bind_ctc_loss(std::type_identity<Tensor>{});
  bind_ctc_loss(std::type_identity<Ints>{});
  f.def(
      "local_response_norm",
      [](const Tensor& x, int64_t size, double alpha, double beta, double k) {
        return local_response_norm(x, size, alpha, beta, k);
      },
      "input"_a, "size"_a, "alpha"_a = 1e-4, "beta"_a = 0.75, "k"_a = 1.0, release_gil(),
      "input / (k + alpha * mean of input^2 over size neighbouring channels)^beta.");
  f.def(
      "margin_ranking_loss",
      [](const Tensor& x1, const Tensor& x2, const Tensor& target, double margin,
         std::optional<bool> size_average, std::optional<bool> reduce, std::string_view reduction) {
        return margin_ranking_loss(
            x1, x2, target, margin,
            loss_reduction(size_average, reduce, reduction, "margin_ranking_loss"));
      },
      "input1"_a, "input2"_a, "target"_a, "margin"_a = 0.0, "size_average"_a = nb::none(),
      "reduce"_a = nb::none(), "reduction"_a = "mean", release_gil(),
      "max(0, -target * (input1 - input2) + margin).");
  f.def(
      "cosine_embedding_loss",
      [](const Tensor& x1, const Tensor& x2, const Tensor& target, double margin,
         std::optional<bool> size_average, std::optional<bool> reduce, std::string_view reduction) {
        return cosine_embedding_loss(
            x1, x2, target, margin,
            loss_reduction(size_average, reduce, reduction, "cosine_embedding_loss"));
      },
      "input1"_a, "input2"_a, "target"_a, "margin"_a = 0.0, "size_average"_a = nb::none(),
      "reduce"_a = nb::none(), "reduction"_a = "mean", release_gil(),
      "1 - cos where target is 1, max(0, cos - margin) where it is -1.");
  f.def(
      "triplet_margin_loss",
      [](const Tensor& a, const Tensor& p, const Tensor& n, double margin, double norm, double eps,
         bool swap, std::optional<bool> size_average, std::optional<bool> reduce,
         std::string_view reduction) {
        return triplet_margin_loss(
            a, p, n, margin, norm, eps, swap,
            loss_reduction(size_average, reduce, reduction, "triplet_margin_loss"));
      },
      "anchor"_a, "positive"_a, "negative"_a, "margin"_a = 1.0, "p"_a = 2.0, "eps"_a = 1e-6,
      "swap"_a = false, "size_average"_a = nb::none(), "reduce"_a = nb::none(),
      "reduction"_a = "mean", release_gil(),
      "max(0, margin + d(anchor, positive) - d(anchor, negative)).");
  pointwise_loss(
      "mse_loss", [](const Tensor& a, const Tensor& b, Reduction r) { return mse_loss(a, b, r); },
      "Mean squared error.");
  pointwise_loss(
      "l1_loss", [](const Tensor& a, const Tensor& b, Reduction r) { return l1_loss(a, b, r); },
      "Mean absolute error.");
  f.def(
      "huber_loss",
      [](const Tensor& input, const Tensor& target, std::string_view reduction, double delta) {
        return huber_loss(input, target, parse_reduction(reduction, "huber_loss"), delta);
      },
      "input"_a, "target"_a, "reduction"_a = "mean", "delta"_a = 1.0, release_gil(),
      "Huber's loss: quadratic below delta, linear above.");
  f.def(
      "smooth_l1_loss",
      [](const Tensor& input, const Tensor& target, std::optional<bool> size_average,
         std::optional<bool> reduce, std::string_view reduction, double beta) {
        return smooth_l1_loss(
            input, target, loss_reduction(size_average, reduce, reduction, "smooth_l1_loss"), beta);
      },
      "input"_a, "target"_a, "size_average"_a = nb::none(), "reduce"_a = nb::none(),
      "reduction"_a = "mean", "beta"_a = 1.0, release_gil(),
      "Quadratic below beta (divided by beta), linear above.");
  f.def(
      "kl_div",
      [](const Tensor& input, const Tensor& target, std::optional<bool> size_average,
         std::optional<bool> reduce, std::string_view reduction, bool log_target) {
        return kl_div(input, target, loss_reduction(size_average, reduce, reduction, "kl_div"),
                      log_target);
      },
      "input"_a, "target"_a, "size_average"_a = nb::none(), "reduce"_a = nb::none(),
      "reduction"_a = "mean", "log_target"_a = false, release_gil(),
      "Kullback-Leibler divergence of log-probabilities input from target.");
  f.def(
      "binary_cross_entropy",
      [](const Tensor& input, const Tensor& target, std::optional<Tensor> weight,
         std::optional<bool> size_average, std::optional<bool> reduce, std::string_view reduction) {
        return binary_cross_entropy(
            input, target, opt(weight),
            loss_reduction(size_average, reduce, reduction, "binary_cross_entropy"));
      },
      "input"_a, "target"_a, "weight"_a = nb::none(), "size_average"_a = nb::none(),
      "reduce"_a = nb::none(), "reduction"_a = "mean", release_gil(),
      "Binary cross entropy of probabilities.");
  f.def(
      "binary_cross_entropy_with_logits",
      [](const Tensor& input, const Tensor& target, std::optional<Tensor> weight,
         std::optional<bool> size_average, std::optional<bool> reduce, std::string_view reduction,
         std::optional<Tensor> pos_weight) {
        return binary_cross_entropy_with_logits(
            input, target, opt(weight), opt(pos_weight),
            loss_reduction(size_average, reduce, reduction, "binary_cross_entropy_with_logits"));
      },
      "input"_a, "target"_a, "weight"_a = nb::none(), "size_average"_a = nb::none(),
      "reduce"_a = nb::none(), "reduction"_a = "mean", "pos_weight"_a = nb::none(), release_gil(),
      "Binary cross entropy of logits, computed stably.");

  // Attention.
  f.def(
      "scaled_dot_product_attention",
      [](const Tensor& q, const Tensor& k, const Tensor& v, std::optional<Tensor> attn_mask,
         double dropout_p, bool is_causal, std::optional<double> scale) {
        return scaled_dot_product_attention(q, k, v, opt(attn_mask), dropout_p, is_causal, scale);
      },
      "query"_a, "key"_a, "value"_a, "attn_mask"_a = nb::none(), "dropout_p"_a = 0.0,
      "is_causal"_a = false, "scale"_a = nb::none(), release_gil(),
      "softmax(q @ k^T * scale + mask) @ v, fused.");
}

}  // namespace

void bind_ops(nb::module_& m, nb::class_<PyTensor>& cls) {
  nb::module_ functional = m.def_submodule("functional", "The ops of ember.nn.functional.");
  bind_functional(functional);
  Binder b{m, cls};
  const auto one = PyScalar{Scalar(int64_t{1})};

  // --- Arithmetic ------------------------------------------------------------------------------
  for (const char* name : {"add"}) {
    b.both(
        name, [](const Tensor& a, const Operand& o, PyScalar alpha) { return add_op(a, o, alpha); },
        "other"_a, nb::kw_only(), "alpha"_a = one,
        "input + alpha * other, broadcast and promoted.");
  }
  for (const char* name : {"sub", "subtract"}) {
    b.both(
        name, [](const Tensor& a, const Operand& o, PyScalar alpha) { return sub_op(a, o, alpha); },
        "other"_a, nb::kw_only(), "alpha"_a = one, "input - alpha * other.");
  }
  for (const char* name : {"mul", "multiply"}) {
    b.both(
        name,
        [](const Tensor& a, const Operand& o) {
          return o.tensor ? mul(a, *o.tensor) : mul(a, o.scalar);
        },
        "other"_a, "input * other.");
  }
  for (const char* name : {"div", "divide"}) {
    b.both(
        name,
        [](const Tensor& a, const Operand& o, std::optional<std::string> rounding_mode) {
          return div_op(a, o, rounding_mode);
        },
        "other"_a, nb::kw_only(), "rounding_mode"_a = nb::none(),
        "input / other: true division, or rounded 'trunc' or 'floor'.");
  }
  b.both(
      "true_divide", [](const Tensor& a, const Operand& o) { return div_op(a, o, std::nullopt); },
      "other"_a, "input / other (true division).");
  b.both(
      "floor_divide",
      [](const Tensor& a, const Operand& o) {
        return o.tensor ? floor_divide(a, *o.tensor) : floor_divide(a, o.scalar);
      },
      "other"_a, "floor(input / other).");
  b.both(
      "remainder",
      [](const Tensor& a, const Operand& o) {
        return o.tensor ? remainder(a, *o.tensor) : remainder(a, o.scalar);
      },
      "other"_a, "input - floor(input / other) * other (Python's %).");
  b.both(
      "fmod",
      [](const Tensor& a, const Operand& o) {
        return o.tensor ? fmod(a, *o.tensor) : fmod(a, o.scalar);
      },
      "other"_a, "input - trunc(input / other) * other (C's fmod).");
  b.both(
      "pow", [](const Tensor& a, const Operand& e) { return pow_op(a, e); }, "exponent"_a,
      "input ** exponent.");
  b.function(
      "pow",
      [](PyScalar base, const Tensor& e) {
        return pow(detail::scalar_tensor(base, e.dtype(), e.device()), e);
      },
      "self"_a, "exponent"_a, "base ** exponent for a number base.");
  b.both(
      "maximum", [](const Tensor& a, const Tensor& o) { return maximum(a, o); }, "other"_a,
      "Elementwise larger (NaN propagates).");
  b.both(
      "minimum", [](const Tensor& a, const Tensor& o) { return minimum(a, o); }, "other"_a,
      "Elementwise smaller (NaN propagates).");
  b.both(
      "atan2", [](const Tensor& a, const Tensor& o) { return atan2(a, o); }, "other"_a,
      "The angle of the point (other, input), in the right quadrant.");
  b.both(
      "arctan2", [](const Tensor& a, const Tensor& o) { return atan2(a, o); }, "other"_a,
      "The angle of the point (other, input), in the right quadrant.");
  b.both(
      "hypot", [](const Tensor& a, const Tensor& o) { return hypot(a, o); }, "other"_a,
      "sqrt(input ** 2 + other ** 2), without overflow.");
  b.both(
      "logaddexp", [](const Tensor& a, const Tensor& o) { return logaddexp(a, o); }, "other"_a,
      "log(exp(input) + exp(other)), without overflow.");

  // Comparisons and logic.
  auto comparison = [&](const char* name, const char* alias, auto tt, auto ts, const char* doc) {
    auto fn = [tt, ts](const Tensor& a, const Operand& o) {
      return o.tensor ? tt(a, *o.tensor) : ts(a, o.scalar);
    };
    b.both(name, fn, "other"_a, doc);
    if (alias) b.both(alias, fn, "other"_a, doc);
  };
  comparison(
      "eq", nullptr, [](const Tensor& a, const Tensor& o) { return eq(a, o); },
      [](const Tensor& a, Scalar s) { return eq(a, s); }, "input == other, as bool.");
  comparison(
      "ne", "not_equal", [](const Tensor& a, const Tensor& o) { return ne(a, o); },
      [](const Tensor& a, Scalar s) { return ne(a, s); }, "input != other, as bool.");
  comparison(
      "lt", "less", [](const Tensor& a, const Tensor& o) { return lt(a, o); },
      [](const Tensor& a, Scalar s) { return lt(a, s); }, "input < other, as bool.");
  comparison(
      "le", "less_equal", [](const Tensor& a, const Tensor& o) { return le(a, o); },
      [](const Tensor& a, Scalar s) { return le(a, s); }, "input <= other, as bool.");
  comparison(
      "gt", "greater", [](const Tensor& a, const Tensor& o) { return gt(a, o); },
      [](const Tensor& a, Scalar s) { return gt(a, s); }, "input > other, as bool.");
  comparison(
      "ge", "greater_equal", [](const Tensor& a, const Tensor& o) { return ge(a, o); },
      [](const Tensor& a, Scalar s) { return ge(a, s); }, "input >= other, as bool.");
  b.both(
      "equal",
      [](const Tensor& a, const Tensor& o) {
        return a.sizes() == o.sizes() && all(eq(a, o)).item() != 0;
      },
      "other"_a, "True if both have the same shape and elements.");
  b.both(
      "logical_and", [](const Tensor& a, const Tensor& o) { return logical_and(a, o); }, "other"_a,
      "Truthiness of input and other.");
  b.both(
      "logical_or", [](const Tensor& a, const Tensor& o) { return logical_or(a, o); }, "other"_a,
      "Truthiness of input or other.");
  b.both(
      "logical_xor",
      [](const Tensor& a, const Tensor& o) { return ne(a.to(DType::Bool), o.to(DType::Bool)); },
      "other"_a, "Truthiness of input xor other.");
  b.both(
      "logical_not", [](const Tensor& a) { return logical_not(a); }, "Not truthiness of input.");
  b.both(
      "isnan", [](const Tensor& a) { return isnan(a); }, "True where input is NaN.");
  b.both(
      "isinf", [](const Tensor& a) { return isinf(a); }, "True where input is +-inf.");
  b.both(
      "isfinite", [](const Tensor& a) { return isfinite(a); }, "True where input is finite.");
  b.both(
      "isclose",
      [](const Tensor& a, const Tensor& o, double rtol, double atol, bool equal_nan) {
        return isclose(a, o, rtol, atol, equal_nan);
      },
      "other"_a, "rtol"_a = 1e-05, "atol"_a = 1e-08, "equal_nan"_a = false,
      "|input - other| <= atol + rtol * |other|, elementwise, as bool.");
  b.both(
      "allclose",
      [](const Tensor& a, const Tensor& o, double rtol, double atol, bool equal_nan) {
        return allclose(a, o, rtol, atol, equal_nan);
      },
      "other"_a, "rtol"_a = 1e-05, "atol"_a = 1e-08, "equal_nan"_a = false,
      "True if isclose(input, other) everywhere.");
  auto where_fn = [](const Tensor& cond, const Operand& x, const Operand& y) {
    if (x.tensor && y.tensor) return where(cond, *x.tensor, *y.tensor);
    if (x.tensor) return where(cond, *x.tensor, y.scalar);
    if (y.tensor) return where(logical_not(cond), *y.tensor, x.scalar);
    const DType d = promote_types(x.scalar.natural_dtype(), y.scalar.natural_dtype());
    return where(cond, detail::scalar_tensor(x.scalar, d, cond.device()),
                 detail::scalar_tensor(y.scalar, d, cond.device()));
  };
  b.method(
      "where",
      [where_fn](const Tensor& self, const Tensor& condition, const Operand& other) {
        return where_fn(condition, Operand{&self, {}}, other);
      },
      "condition"_a, "other"_a, "self where condition is true, else other.");
  m.def("where", where_fn, "condition"_a, "input"_a, "other"_a, release_gil(),
        "input where condition is true, else other (broadcast).");
  m.def(
      "where",
      [](const Tensor& cond) {
        std::vector<Tensor> out;
        Tensor nz = nonzero(cond);
        for (int64_t d = 0; d < nz.size(1); ++d) out.push_back(nz.select(1, d));
        return out;
      },
      "condition"_a, release_gil(), "The indices where condition is true, one tensor per dim.");

  // --- Unary math ------------------------------------------------------------------------------
  auto unary = [&](const char* name, Tensor (*fn)(const Tensor&), const char* doc) {
    b.both(
        name, [fn](const Tensor& x) { return fn(x); }, doc);
  };
  unary("neg", &neg, "-input.");
  unary("negative", &neg, "-input.");
  unary("abs", &abs, "|input|.");
  unary("absolute", &abs, "|input|.");
  unary("exp", &exp, "e ** input.");
  unary("log", &log, "Natural logarithm.");
  unary("log1p", &log1p, "log(1 + input).");
  unary("sqrt", &sqrt, "Square root.");
  unary("rsqrt", &rsqrt, "1 / sqrt(input).");
  unary("sin", &sin, "Sine.");
  unary("cos", &cos, "Cosine.");
  unary("tanh", &tanh, "Hyperbolic tangent.");
  unary("sigmoid", &sigmoid, "1 / (1 + exp(-input)).");
  unary("relu", &relu, "max(input, 0).");
  unary("sign", &sign, "-1, 0 or 1.");
  unary("floor", &floor, "Round down.");
  unary("ceil", &ceil, "Round up.");
  unary("erf", &erf, "Error function.");
  unary("square", &square, "input * input.");
  b.both(
      "round",
      [](const Tensor& x, int64_t decimals) {
        if (decimals == 0) return round(x);
        const double f = std::pow(10.0, static_cast<double>(decimals));
        return div(round(mul(x, f)), f);
      },
      nb::kw_only(), "decimals"_a = 0, "Round half to even (to `decimals` places).");
  b.both(
      "trunc", [](const Tensor& x) { return mul(sign(x), floor(abs(x))).to(x.dtype()); },
      "Round toward zero.");
  b.both(
      "reciprocal", [](const Tensor& x) { return Scalar(1.0) / x; }, "1 / input.");
  unary("log2", &log2, "Base-2 logarithm.");
  unary("log10", &log10, "Base-10 logarithm.");
  unary("exp2", &exp2, "2 ** input.");
  unary("expm1", &expm1, "exp(input) - 1, accurate near 0.");
  unary("tan", &tan, "Tangent.");
  // The inverse functions under their names and NumPy's (PyTorch binds both).
  auto inverse = [&](const char* name, const char* alias, Tensor (*fn)(const Tensor&),
                     const char* doc) {
    unary(name, fn, doc);
    unary(alias, fn, doc);
  };
  inverse("asin", "arcsin", &asin, "Inverse sine (NaN outside [-1, 1]).");
  inverse("acos", "arccos", &acos, "Inverse cosine (NaN outside [-1, 1]).");
  inverse("atan", "arctan", &atan, "Inverse tangent.");
  unary("sinh", &sinh, "Hyperbolic sine.");
  unary("cosh", &cosh, "Hyperbolic cosine.");
  inverse("asinh", "arcsinh", &asinh, "Inverse hyperbolic sine.");
  inverse("acosh", "arccosh", &acosh, "Inverse hyperbolic cosine (NaN below 1).");
  inverse("atanh", "arctanh", &atanh, "Inverse hyperbolic tangent (+-inf at +-1).");
  unary("erfinv", &erfinv, "Inverse error function (+-inf at +-1, NaN outside [-1, 1]).");
  for (const char* name : {"clamp", "clip"}) {
    b.both(
        name,
        [name](const Tensor& x, std::optional<Operand> min, std::optional<Operand> max) {
          return clamp_op(x, min, max, name);
        },
        "min"_a = nb::none(), "max"_a = nb::none(),
        "input clamped to [min, max] (numbers or tensors, broadcast).");
  }
  b.both(
      "clamp_min",
      [](const Tensor& x, PyScalar min) { return clamp(x, Scalar(min), std::nullopt); }, "min"_a,
      "max(input, min).");
  b.both(
      "clamp_max",
      [](const Tensor& x, PyScalar max) { return clamp(x, std::nullopt, Scalar(max)); }, "max"_a,
      "min(input, max).");
  b.both(
      "lerp",
      [](const Tensor& x, const Tensor& end, const Operand& weight) {
        return weight.tensor ? lerp(x, end, *weight.tensor) : lerp(x, end, weight.scalar);
      },
      "end"_a, "weight"_a, "input + weight * (end - input).");

  // In place.
  b.method(
      "add_",
      [](Tensor& a, const Operand& o, PyScalar alpha) -> Tensor& {
        return o.tensor ? add_(a, *o.tensor, alpha) : add_(a, o.scalar, alpha);
      },
      "other"_a, nb::kw_only(), "alpha"_a = one, "In place: input += alpha * other.");
  b.method(
      "sub_",
      [](Tensor& a, const Operand& o, PyScalar alpha) -> Tensor& {
        return o.tensor ? sub_(a, *o.tensor, alpha) : sub_(a, o.scalar, alpha);
      },
      "other"_a, nb::kw_only(), "alpha"_a = one, "In place: input -= alpha * other.");
  b.method(
      "mul_",
      [](Tensor& a, const Operand& o) -> Tensor& {
        return o.tensor ? mul_(a, *o.tensor) : mul_(a, o.scalar);
      },
      "other"_a, "In place: input *= other.");
  b.method(
      "div_",
      [](Tensor& a, const Operand& o) -> Tensor& {
        return o.tensor ? div_(a, *o.tensor) : div_(a, o.scalar);
      },
      "other"_a, "In place: input /= other.");
  auto unary_ = [&](const char* name, Tensor& (*fn)(Tensor&), const char* doc) {
    b.method(
        name, [fn](Tensor& x) -> Tensor& { return fn(x); }, doc);
  };
  unary_("neg_", &neg_, "In place: -input.");
  unary_("abs_", &abs_, "In place: |input|.");
  unary_("exp_", &exp_, "In place: exp(input).");
  unary_("log_", &log_, "In place: log(input).");
  unary_("sqrt_", &sqrt_, "In place: sqrt(input).");
  unary_("tanh_", &tanh_, "In place: tanh(input).");
  unary_("sigmoid_", &sigmoid_, "In place: sigmoid(input).");
  unary_("relu_", &relu_, "In place: max(input, 0).");
  b.method(
      "clamp_",
      [](Tensor& x, std::optional<Operand> min, std::optional<Operand> max) -> Tensor& {
        EMBER_CHECK(min || max, "[clamp_] at least one of 'min' or 'max' must not be None");
        if ((min && min->tensor) || (max && max->tensor)) {
          return clamp_(x, bound_tensor(min, x), bound_tensor(max, x));
        }
        return clamp_(x, min ? std::optional<Scalar>(min->scalar) : std::nullopt,
                      max ? std::optional<Scalar>(max->scalar) : std::nullopt);
      },
      "min"_a = nb::none(), "max"_a = nb::none(), "In place: clamp to [min, max].");
  b.method(
      "masked_fill_",
      [](Tensor& x, const Tensor& mask, PyScalar value) -> Tensor& {
        return masked_fill_(x, mask, value);
      },
      "mask"_a, "value"_a, "In place: value where mask is true.");
  m.def(
      "relu_", [](Tensor& x) -> Tensor& { return relu_(x); }, "input"_a, release_gil(),
      "In place: max(input, 0).");

  // Operators.
  b.op("__add__",
       [](const Tensor& a, const Operand& o) { return add_op(a, o, Scalar(int64_t{1})); })
      .op("__radd__",
          [](const Tensor& a, const Operand& o) { return add_op(a, o, Scalar(int64_t{1})); })
      .op("__sub__",
          [](const Tensor& a, const Operand& o) { return sub_op(a, o, Scalar(int64_t{1})); })
      .op("__rsub__", [](const Tensor& a,
                         const Operand& o) { return o.tensor ? sub(*o.tensor, a) : o.scalar - a; })
      .op("__mul__",
          [](const Tensor& a, const Operand& o) {
            return o.tensor ? mul(a, *o.tensor) : mul(a, o.scalar);
          })
      .op("__rmul__",
          [](const Tensor& a, const Operand& o) {
            return o.tensor ? mul(*o.tensor, a) : mul(a, o.scalar);
          })
      .op("__truediv__",
          [](const Tensor& a, const Operand& o) {
            return o.tensor ? div(a, *o.tensor) : div(a, o.scalar);
          })
      .op("__rtruediv__",
          [](const Tensor& a, const Operand& o) {
            return o.tensor ? div(*o.tensor, a) : o.scalar / a;
          })
      .op("__floordiv__",
          [](const Tensor& a, const Operand& o) {
            return o.tensor ? floor_divide(a, *o.tensor) : floor_divide(a, o.scalar);
          })
      .op("__rfloordiv__",
          [](const Tensor& a, const Operand& o) {
            return floor_divide(as_tensor_operand(o, a), a);
          })
      .op("__mod__",
          [](const Tensor& a, const Operand& o) {
            return o.tensor ? remainder(a, *o.tensor) : remainder(a, o.scalar);
          })
      .op("__rmod__",
          [](const Tensor& a, const Operand& o) { return remainder(as_tensor_operand(o, a), a); })
      .op("__pow__", [](const Tensor& a, const Operand& o) { return pow_op(a, o); })
      .op("__rpow__",
          [](const Tensor& a, const Operand& o) { return pow(as_tensor_operand(o, a), a); })
      .op("__matmul__", [](const Tensor& a, const Tensor& o) { return matmul(a, o); })
      .op("__rmatmul__", [](const Tensor& a, const Tensor& o) { return matmul(o, a); })
      .op("__neg__", [](const Tensor& a) { return neg(a); })
      .op("__pos__", [](const Tensor& a) { return a; })
      .op("__abs__", [](const Tensor& a) { return abs(a); })
      .op("__invert__",
          [](const Tensor& a) {
            EMBER_CHECK_TYPE(a.dtype() == DType::Bool,
                             "[~] bitwise not is supported for bool tensors only, got {}",
                             a.dtype());
            return logical_not(a);
          })
      .op("__and__",
          [](const Tensor& a, const Operand& o) {
            EMBER_CHECK_TYPE(a.dtype() == DType::Bool,
                             "[&] supported for bool tensors only, got {}", a.dtype());
            return logical_and(a, as_tensor_operand(o, a));
          })
      .op("__or__",
          [](const Tensor& a, const Operand& o) {
            EMBER_CHECK_TYPE(a.dtype() == DType::Bool,
                             "[|] supported for bool tensors only, got {}", a.dtype());
            return logical_or(a, as_tensor_operand(o, a));
          })
      .op("__xor__",
          [](const Tensor& a, const Operand& o) {
            EMBER_CHECK_TYPE(a.dtype() == DType::Bool,
                             "[^] supported for bool tensors only, got {}", a.dtype());
            return ne(a, as_tensor_operand(o, a).to(DType::Bool));
          })
      .op("__eq__", [](const Tensor& a,
                       const Operand& o) { return o.tensor ? eq(a, *o.tensor) : eq(a, o.scalar); })
      .op("__ne__", [](const Tensor& a,
                       const Operand& o) { return o.tensor ? ne(a, *o.tensor) : ne(a, o.scalar); })
      .op("__lt__", [](const Tensor& a,
                       const Operand& o) { return o.tensor ? lt(a, *o.tensor) : lt(a, o.scalar); })
      .op("__le__", [](const Tensor& a,
                       const Operand& o) { return o.tensor ? le(a, *o.tensor) : le(a, o.scalar); })
      .op("__gt__", [](const Tensor& a,
                       const Operand& o) { return o.tensor ? gt(a, *o.tensor) : gt(a, o.scalar); })
      .op("__ge__", [](const Tensor& a,
                       const Operand& o) { return o.tensor ? ge(a, *o.tensor) : ge(a, o.scalar); })
      .op("__iadd__",
          [](Tensor& a, const Operand& o) -> Tensor& {
            return o.tensor ? add_(a, *o.tensor) : add_(a, o.scalar);
          })
      .op("__isub__",
          [](Tensor& a, const Operand& o) -> Tensor& {
            return o.tensor ? sub_(a, *o.tensor) : sub_(a, o.scalar);
          })
      .op("__imul__",
          [](Tensor& a, const Operand& o) -> Tensor& {
            return o.tensor ? mul_(a, *o.tensor) : mul_(a, o.scalar);
          })
      .op("__itruediv__", [](Tensor& a, const Operand& o) -> Tensor& {
        return o.tensor ? div_(a, *o.tensor) : div_(a, o.scalar);
      });
  // Note: __eq__ makes Python drop the inherited __hash__; tensor.cpp defines it again below.
  cls.def("__hash__", [](nb::handle self) { return reinterpret_cast<intptr_t>(self.ptr()) >> 4; });

  // --- Reductions ------------------------------------------------------------------------------
  b.both(
      "sum",
      [](const Tensor& x, std::optional<Ints> dim, bool keepdim, std::optional<DType> dtype) {
        return sum(cast_input(x, dtype), dims_of(dim), keepdim);
      },
      "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none(),
      "Sum over dim (all dims if None); ints and bool sum to int64.");
  b.both(
      "mean",
      [](const Tensor& x, std::optional<Ints> dim, bool keepdim, std::optional<DType> dtype) {
        return mean(cast_input(x, dtype), dims_of(dim), keepdim);
      },
      "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none(),
      "Mean over dim (all dims if None).");
  b.both(
      "prod",
      [](const Tensor& x, std::optional<int64_t> dim, bool keepdim, std::optional<DType> dtype) {
        const Tensor in = cast_input(x, dtype);
        return dim ? prod(in, {*dim}, keepdim) : prod(in);
      },
      "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none(),
      "Product over dim (all elements if None).");
  b.both(
      "amax",
      [](const Tensor& x, std::optional<Ints> dim, bool keepdim) {
        return amax(x, dims_of(dim), keepdim);
      },
      "dim"_a = nb::none(), "keepdim"_a = false, "Largest value over dim.");
  b.both(
      "amin",
      [](const Tensor& x, std::optional<Ints> dim, bool keepdim) {
        return amin(x, dims_of(dim), keepdim);
      },
      "dim"_a = nb::none(), "keepdim"_a = false, "Smallest value over dim.");
  for (const char* name : {"max", "min"}) {
    const bool is_max = std::string_view(name) == "max";
    b.both_py(
        name,
        [is_max](const Tensor& x, nb::handle dim, bool keepdim) -> nb::object {
          if (dim.is_none()) {
            Tensor r;
            {
              GilRelease release;
              r = is_max ? max(x) : min(x);
            }
            return wrap_tensor(r);
          }
          if (nb::isinstance<PyTensor>(dim)) {  // max(input, other): the elementwise form
            const Tensor& other = *nb::inst_ptr<PyTensor>(dim);
            Tensor r;
            {
              GilRelease release;
              r = is_max ? maximum(x, other) : minimum(x, other);
            }
            return wrap_tensor(r);
          }
          const int64_t d = nb::cast<int64_t>(dim);
          std::tuple<Tensor, Tensor> r;
          {
            GilRelease release;
            r = is_max ? max(x, d, keepdim) : min(x, d, keepdim);
          }
          return values_indices(std::move(r), is_max ? "max" : "min");
        },
        "dim"_a = nb::none(), "keepdim"_a = false,
        is_max ? "The largest element; (values, indices) along dim; or max(input, other)."
               : "The smallest element; (values, indices) along dim; or min(input, other).");
  }
  b.both(
      "argmax",
      [](const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
        return argmax(x, dim, keepdim);
      },
      "dim"_a = nb::none(), "keepdim"_a = false, "Index of the largest element.");
  b.both(
      "argmin",
      [](const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
        return argmin(x, dim, keepdim);
      },
      "dim"_a = nb::none(), "keepdim"_a = false, "Index of the smallest element.");
  b.both(
      "var",
      [](const Tensor& x, std::optional<Ints> dim, std::optional<bool> unbiased, bool keepdim,
         std::optional<int64_t> correction) {
        return var(x, dims_of(dim), correction_of(correction, unbiased), keepdim);
      },
      "dim"_a = nb::none(), "unbiased"_a = nb::none(), "keepdim"_a = false, nb::kw_only(),
      "correction"_a = nb::none(), "Variance over dim with `correction` (1: unbiased).");
  b.both(
      "std",
      [](const Tensor& x, std::optional<Ints> dim, std::optional<bool> unbiased, bool keepdim,
         std::optional<int64_t> correction) {
        return std(x, dims_of(dim), correction_of(correction, unbiased), keepdim);
      },
      "dim"_a = nb::none(), "unbiased"_a = nb::none(), "keepdim"_a = false, nb::kw_only(),
      "correction"_a = nb::none(), "Standard deviation over dim with `correction`.");
  b.both_py(
      "norm",
      [](const Tensor& x, nb::handle p, std::optional<Ints> dim, bool keepdim) {
        double order = 2.0;
        if (!p.is_none()) {
          if (nb::isinstance<nb::str>(p)) {
            const std::string s = nb::cast<std::string>(p);
            EMBER_CHECK(s == "fro", "[norm] p must be a number or 'fro', got '{}'", s);
          } else {
            order = nb::cast<double>(p);
          }
        }
        GilRelease release;
        return norm(x, order, dims_of(dim), keepdim);
      },
      "p"_a = nb::str("fro"), "dim"_a = nb::none(), "keepdim"_a = false,
      "The p-norm over dim (all elements if None); 'fro' is the 2-norm.");
  b.both(
      "all",
      [](const Tensor& x, std::optional<Ints> dim, bool keepdim) {
        return all(x, dims_of(dim), keepdim);
      },
      "dim"_a = nb::none(), "keepdim"_a = false, "True if every element is truthy.");
  b.both(
      "any",
      [](const Tensor& x, std::optional<Ints> dim, bool keepdim) {
        return any(x, dims_of(dim), keepdim);
      },
      "dim"_a = nb::none(), "keepdim"_a = false, "True if any element is truthy.");
  b.both(
      "logsumexp",
      [](const Tensor& x, Ints dim, bool keepdim) { return logsumexp(x, dim, keepdim); }, "dim"_a,
      "keepdim"_a = false, "log(sum(exp(input))) over dim, computed stably.");
  b.both(
      "cumsum",
      [](const Tensor& x, int64_t dim, std::optional<DType> dtype) {
        return cumsum(cast_input(x, dtype), dim);
      },
      "dim"_a, nb::kw_only(), "dtype"_a = nb::none(), "Running sum along dim.");
  b.both(
      "cumprod",
      [](const Tensor& x, int64_t dim, std::optional<DType> dtype) {
        return cumprod(cast_input(x, dtype), dim);
      },
      "dim"_a, nb::kw_only(), "dtype"_a = nb::none(), "Running product along dim.");
  b.both(
      "count_nonzero",
      [](const Tensor& x, std::optional<Ints> dim) { return sum(ne(x, 0), dims_of(dim)); },
      "dim"_a = nb::none(), "Number of non-zero elements over dim.");
  b.both(
      "softmax",
      [](const Tensor& x, int64_t dim, std::optional<DType> dtype) {
        return softmax(cast_input(x, dtype), dim);
      },
      "dim"_a, "dtype"_a = nb::none(), "exp(input) / sum(exp(input)) along dim.");
  b.both(
      "hardshrink", [](const Tensor& x, double lambd) { return hardshrink(x, lambd); },
      "lambd"_a = 0.5, "input where |input| > lambd, else 0.");
  b.both(
      "prelu", [](const Tensor& x, const Tensor& w) { return prelu(x, w); }, "weight"_a,
      "input where positive, else weight * input.");
  b.both(
      "log_softmax",
      [](const Tensor& x, int64_t dim, std::optional<DType> dtype) {
        return log_softmax(cast_input(x, dtype), dim);
      },
      "dim"_a, "dtype"_a = nb::none(), "log(softmax(input)) along dim, computed stably.");

  // --- Products --------------------------------------------------------------------------------
  b.both(
      "matmul", [](const Tensor& a, const Tensor& o) { return matmul(a, o); }, "other"_a,
      "Matrix product with NumPy's broadcasting rules.");
  b.both(
      "mm", [](const Tensor& a, const Tensor& o) { return mm(a, o); }, "mat2"_a,
      "2-d matrix product.");
  b.both(
      "bmm", [](const Tensor& a, const Tensor& o) { return bmm(a, o); }, "mat2"_a,
      "Batched matrix product [b, n, k] x [b, k, m].");
  b.both(
      "mv", [](const Tensor& a, const Tensor& v) { return matmul(a, v); }, "vec"_a,
      "Matrix-vector product.");
  b.both(
      "dot",
      [](const Tensor& a, const Tensor& o) {
        EMBER_CHECK(a.dim() == 1 && o.dim() == 1, "[dot] 1-d tensors expected, got {}-d and {}-d",
                    a.dim(), o.dim());
        return matmul(a, o);
      },
      "other"_a, "Inner product of two 1-d tensors.");
  b.both(
      "outer", [](const Tensor& a, const Tensor& o) { return mul(a.unsqueeze(1), o.unsqueeze(0)); },
      "vec2"_a, "Outer product of two 1-d tensors.");
  // The add*-products, beta * input + alpha * (a product): a function, a method and an
  // in-place method each, bound from one table.
  struct AddProduct {
    const char *name, *name_, *a, *b, *doc, *doc_;
    Tensor (*fn)(const Tensor&, const Tensor&, const Tensor&, Scalar, Scalar);
    Tensor& (*fn_)(Tensor&, const Tensor&, const Tensor&, Scalar, Scalar);
  };
  static constexpr AddProduct kAddProducts[] = {
      {"addmm", "addmm_", "mat1", "mat2", "beta * input + alpha * (mat1 @ mat2).",
       "In place: input = addmm(input, mat1, mat2, beta=beta, alpha=alpha).", &addmm, &addmm_},
      {"baddbmm", "baddbmm_", "batch1", "batch2", "beta * input + alpha * bmm(batch1, batch2).",
       "In place: input = baddbmm(input, batch1, batch2, beta=beta, alpha=alpha).", &baddbmm,
       &baddbmm_},
      {"addbmm", "addbmm_", "batch1", "batch2",
       "beta * input + alpha * the sum over b of batch1[b] @ batch2[b].",
       "In place: input = addbmm(input, batch1, batch2, beta=beta, alpha=alpha).", &addbmm,
       &addbmm_},
      {"addmv", "addmv_", "mat", "vec", "beta * input + alpha * (mat @ vec).",
       "In place: input = addmv(input, mat, vec, beta=beta, alpha=alpha).", &addmv, &addmv_},
      {"addr", "addr_", "vec1", "vec2", "beta * input + alpha * outer(vec1, vec2).",
       "In place: input = addr(input, vec1, vec2, beta=beta, alpha=alpha).", &addr, &addr_},
  };
  for (const AddProduct& p : kAddProducts) {
    b.both(
        p.name,
        [fn = p.fn](const Tensor& input, const Tensor& x1, const Tensor& x2, PyScalar beta,
                    PyScalar alpha) { return fn(input, x1, x2, beta, alpha); },
        nb::arg(p.a), nb::arg(p.b), nb::kw_only(), "beta"_a = one, "alpha"_a = one, p.doc);
    b.method(
        p.name_,
        [fn = p.fn_](Tensor& x, const Tensor& x1, const Tensor& x2, PyScalar beta,
                     PyScalar alpha) -> Tensor& { return fn(x, x1, x2, beta, alpha); },
        nb::arg(p.a), nb::arg(p.b), nb::kw_only(), "beta"_a = one, "alpha"_a = one, p.doc_);
  }
  m.def(
      "einsum",
      [](std::string_view equation, nb::args operands) {
        std::vector<Tensor> ts;
        nb::handle list = operands;
        if (operands.size() == 1 &&
            (nb::isinstance<nb::list>(operands[0]) || nb::isinstance<nb::tuple>(operands[0]))) {
          list = operands[0];
        }
        for (nb::handle t : list) {
          EMBER_CHECK_TYPE(nb::isinstance<PyTensor>(t), "[einsum] operands must be tensors, got {}",
                           nb::cast<std::string>(nb::str(t.type().attr("__name__"))));
          ts.push_back(*nb::inst_ptr<PyTensor>(t));
        }
        GilRelease release;
        return einsum(equation, ts);
      },
      "equation"_a, "operands"_a,
      nb::sig("def einsum(equation: str, *operands: ember.Tensor | "
              "collections.abc.Sequence[ember.Tensor]) -> ember.Tensor"),
      "Einstein summation, as torch.einsum.");

  // --- Views and shapes -------------------------------------------------------------------------
  cls.def(
      "view",
      [](const Tensor& x, nb::args shape) {
        if (shape.size() == 1 && nb::isinstance<DTypeObject>(shape[0])) {
          const DType d = nb::cast<DType>(shape[0]);
          EMBER_CHECK_NOT_IMPLEMENTED(
              d == x.dtype(), "[view] reinterpreting {} as {} is not supported", x.dtype(), d);
          return x;
        }
        const Shape s = sizes_from_args(shape, "view");
        GilRelease release;
        return x.view(s);
      },
      "shape"_a,
      nb::sig("def view(self, *shape: int | collections.abc.Sequence[int]) -> ember.Tensor"),
      "The same data with a new shape (one size may be -1).");
  cls.def(
      "reshape",
      [](const Tensor& x, nb::args shape) {
        const Shape s = sizes_from_args(shape, "reshape");
        GilRelease release;
        return x.reshape(s);
      },
      "shape"_a,
      nb::sig("def reshape(self, *shape: int | collections.abc.Sequence[int]) -> ember.Tensor"),
      "A view with a new shape when strides allow, else a copy.");
  m.def(
      "reshape", [](const Tensor& x, Ints shape) { return x.reshape(shape); }, "input"_a, "shape"_a,
      release_gil(), "input with a new shape.");
  b.method(
      "view_as", [](const Tensor& x, const Tensor& o) { return x.view(o.sizes()); }, "other"_a,
      "A view with other's shape.");
  b.method(
      "reshape_as", [](const Tensor& x, const Tensor& o) { return x.reshape(o.sizes()); },
      "other"_a, "input reshaped to other's shape.");
  for (const char* name : {"transpose", "swapaxes", "swapdims"}) {
    b.both(
        name, [](const Tensor& x, int64_t d0, int64_t d1) { return x.transpose(d0, d1); }, "dim0"_a,
        "dim1"_a, "Swaps two dims (a view).");
  }
  b.both(
      "t", [](const Tensor& x) { return x.t(); }, "Transpose of a tensor of at most 2 dims.");
  cls.def_prop_ro(
      "T",
      [](const Tensor& x) {
        Shape dims;
        for (int64_t d = x.dim() - 1; d >= 0; --d) dims.push_back(d);
        return x.permute(dims);
      },
      "The dims reversed.");
  cls.def_prop_ro(
      "mT", [](const Tensor& x) { return x.transpose(-2, -1); }, "The last two dims swapped.");
  cls.def(
      "permute",
      [](const Tensor& x, nb::args dims) {
        const Shape d = sizes_from_args(dims, "permute");
        GilRelease release;
        return x.permute(d);
      },
      "dims"_a,
      nb::sig("def permute(self, *dims: int | collections.abc.Sequence[int]) -> ember.Tensor"),
      "Reorders the dims (a view).");
  m.def(
      "permute", [](const Tensor& x, Ints dims) { return x.permute(dims); }, "input"_a, "dims"_a,
      release_gil(), "Reorders the dims (a view).");
  b.both(
      "movedim",
      [](const Tensor& x, Ints source, Ints destination) {
        EMBER_CHECK(source.size() == destination.size(),
                    "[movedim] source and destination have {} and {} dims", source.size(),
                    destination.size());
        // Note [Dims of a 0-d tensor]: a 0-d tensor moves dim 0 / -1 onto itself.
        const int64_t n = x.dim();
        std::vector<int64_t> order(static_cast<size_t>(n), -1);
        std::vector<bool> used(static_cast<size_t>(n), false);
        for (size_t i = 0; i < source.size(); ++i) {
          const int64_t s = wrap_dim(source.v[i], std::max<int64_t>(n, 1), "movedim");
          const int64_t d = wrap_dim(destination.v[i], std::max<int64_t>(n, 1), "movedim");
          if (n == 0) continue;
          EMBER_CHECK(order[d] == -1 && !used[s], "[movedim] repeated dim");
          order[d] = s;
          used[s] = true;
        }
        int64_t next = 0;
        for (int64_t& o : order) {
          if (o != -1) continue;
          while (used[next]) ++next;
          o = next++;
        }
        return x.permute(order);
      },
      "source"_a, "destination"_a, "Moves dims to new positions (a view).");
  b.both(
      "narrow",
      [](const Tensor& x, int64_t dim, int64_t start, int64_t length) {
        return x.narrow(dim, start, length);
      },
      "dim"_a, "start"_a, "length"_a, "`length` elements from `start` along dim (a view).");
  b.both(
      "select", [](const Tensor& x, int64_t dim, int64_t index) { return x.select(dim, index); },
      "dim"_a, "index"_a, "Removes dim by picking one index (a view).");
  cls.def(
      "expand",
      [](const Tensor& x, nb::args sizes) {
        const Shape s = sizes_from_args(sizes, "expand");
        GilRelease release;
        return x.expand(s);
      },
      "sizes"_a,
      nb::sig("def expand(self, *sizes: int | collections.abc.Sequence[int]) -> ember.Tensor"),
      "Broadcasts size-1 dims to sizes (-1 keeps a size), without copying.");
  b.method(
      "expand_as", [](const Tensor& x, const Tensor& o) { return x.expand_as(o); }, "other"_a,
      "Broadcasts to other's shape.");
  b.both(
      "broadcast_to", [](const Tensor& x, Ints size) { return x.expand(size); }, "size"_a,
      "Broadcasts to size.");
  b.both(
      "squeeze",
      [](const Tensor& x, std::optional<Ints> dim) {
        if (!dim) return x.squeeze();
        Shape ds;
        for (int64_t d : dim->v)
          ds.push_back(wrap_dim(d, std::max<int64_t>(x.dim(), 1), "squeeze"));
        std::sort(ds.begin(), ds.end(), std::greater<>());
        Tensor r = x;
        for (int64_t d : ds) r = r.squeeze(d);
        return r;
      },
      "dim"_a = nb::none(), "Drops size-1 dims (all, or those in dim).");
  b.both(
      "unsqueeze", [](const Tensor& x, int64_t dim) { return x.unsqueeze(dim); }, "dim"_a,
      "Inserts a size-1 dim at dim.");
  b.both(
      "flatten",
      [](const Tensor& x, int64_t start_dim, int64_t end_dim) {
        return x.flatten(start_dim, end_dim);
      },
      "start_dim"_a = 0, "end_dim"_a = -1, "Merges dims start_dim..end_dim into one.");
  b.both(
      "unflatten",
      [](const Tensor& x, int64_t dim, Ints sizes) {
        const int64_t d = wrap_dim(dim, x.dim(), "unflatten");
        Shape s;
        for (int64_t i = 0; i < d; ++i) s.push_back(x.size(i));
        for (int64_t v : sizes.v) s.push_back(v);
        for (int64_t i = d + 1; i < x.dim(); ++i) s.push_back(x.size(i));
        return x.view(s);
      },
      "dim"_a, "sizes"_a, "Splits dim into sizes.");
  b.both(
      "ravel", [](const Tensor& x) { return x.reshape({-1}); }, "input as one dim.");
  b.both(
      "as_strided",
      [](const Tensor& x, Ints size, Ints stride, std::optional<int64_t> storage_offset) {
        return x.as_strided(size, stride, storage_offset);
      },
      "size"_a, "stride"_a, "storage_offset"_a = nb::none(),
      "A view with explicit sizes, strides and offset.");
  // Tensor.repeat(*repeats) and Tensor.flip(*dims): the ints as arguments or one sequence.
  for (const auto& [name, fn, sig, doc] :
       {std::tuple{
            "repeat", &repeat,
            "def repeat(self, *repeats: int | collections.abc.Sequence[int]) -> ember.Tensor",
            "The tensor tiled `repeats` times along each dim (a copy)."},
        std::tuple{"flip", &flip,
                   "def flip(self, *dims: int | collections.abc.Sequence[int]) -> ember.Tensor",
                   "The elements in reverse order along dims (a copy)."}}) {
    cls.def(
        name,
        [name, fn](const Tensor& x, nb::args ints) {
          const Shape v = sizes_from_args(ints, name);
          GilRelease release;
          return fn(x, v);
        },
        nb::sig(sig), doc);
  }
  m.def(
      "flip", [](const Tensor& x, Ints dims) { return flip(x, dims.v); }, "input"_a, "dims"_a,
      release_gil(), "The elements in reverse order along dims (a copy).");
  b.both(
      "roll",
      [](const Tensor& x, Ints shifts, std::optional<Ints> dims) {
        return roll(x, shifts.v, dims ? IntList(dims->v) : IntList());
      },
      "shifts"_a, "dims"_a = nb::none(), "Elements shifted cyclically along dims.");
  b.both(
      "tril", [](const Tensor& x, int64_t diagonal) { return tril(x, diagonal); }, "diagonal"_a = 0,
      "The lower triangle of the last two dims.");
  b.both(
      "triu", [](const Tensor& x, int64_t diagonal) { return triu(x, diagonal); }, "diagonal"_a = 0,
      "The upper triangle of the last two dims.");
  b.both(
      "diagonal",
      [](const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
        return diagonal(x, offset, dim1, dim2);
      },
      "offset"_a = 0, "dim1"_a = 0, "dim2"_a = 1, "The diagonal of dims dim1, dim2 (a view).");
  b.both(
      "trace",
      [](const Tensor& x) {
        EMBER_CHECK(x.dim() == 2, "[trace] expected a 2-d tensor, got {}-d", x.dim());
        return einsum("ii->", {x});
      },
      "The sum of the diagonal of a 2-d tensor.");

  // Joining and splitting.
  for (const char* name : {"cat", "concat", "concatenate"}) {
    b.function(
        name, [](const std::vector<Tensor>& tensors, int64_t dim) { return cat(tensors, dim); },
        "tensors"_a, "dim"_a = 0, "Joins tensors along an existing dim.");
  }
  b.function(
      "stack", [](const std::vector<Tensor>& tensors, int64_t dim) { return stack(tensors, dim); },
      "tensors"_a, "dim"_a = 0, "Joins tensors along a new dim.");
  b.function(
      "hstack",
      [](const std::vector<Tensor>& tensors) {
        return cat(tensors, !tensors.empty() && tensors[0].dim() == 1 ? 0 : 1);
      },
      "tensors"_a, "Joins tensors column-wise.");
  b.function(
      "vstack",
      [](const std::vector<Tensor>& tensors) {
        std::vector<Tensor> rows;
        for (const Tensor& t : tensors) rows.push_back(t.dim() == 1 ? t.unsqueeze(0) : t);
        return cat(rows, 0);
      },
      "tensors"_a, "Joins tensors row-wise.");
  b.both_py(
      "split",
      [](const Tensor& x, nb::handle split_size_or_sections, int64_t dim) {
        const bool one = PyLong_Check(split_size_or_sections.ptr());
        const Ints sizes = nb::cast<Ints>(split_size_or_sections);
        GilRelease release;
        if (one) return split(x, sizes.v[0], dim);
        return split(x, IntList(sizes.v), dim);
      },
      "split_size_or_sections"_a, "dim"_a = 0,
      "Views of equal size (or the given sizes) along dim.");
  b.both(
      "chunk", [](const Tensor& x, int64_t chunks, int64_t dim) { return chunk(x, chunks, dim); },
      "chunks"_a, "dim"_a = 0, "`chunks` nearly equal views along dim.");
  b.both(
      "unbind", [](const Tensor& x, int64_t dim) { return unbind(x, dim); }, "dim"_a = 0,
      "The slices along dim, as views.");

  // Indexing ops.
  b.both(
      "index_select",
      [](const Tensor& x, int64_t dim, const Tensor& index) { return index_select(x, dim, index); },
      "dim"_a, "index"_a, "The entries at index (1-d int64) along dim.");
  b.both(
      "gather",
      [](const Tensor& x, int64_t dim, const Tensor& index) { return gather(x, dim, index); },
      "dim"_a, "index"_a, "out[i][j] = input[index[i][j]][j] (for dim 0).");
  b.both(
      "scatter",
      [](const Tensor& x, int64_t dim, const Tensor& index, const Operand& src) {
        return scatter(x, dim, index,
                       src.tensor
                           ? *src.tensor
                           : full(index.sizes(), src.scalar, TensorOptions(x.dtype(), x.device())));
      },
      "dim"_a, "index"_a, "src"_a, "A copy with src written at index along dim.");
  b.both(
      "scatter_add",
      [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
        return scatter_add(x, dim, index, src);
      },
      "dim"_a, "index"_a, "src"_a, "A copy with src added at index along dim.");
  b.both(
      "masked_fill",
      [](const Tensor& x, const Tensor& mask, PyScalar value) {
        return masked_fill(x, mask, value);
      },
      "mask"_a, "value"_a, "A copy with value where mask is true.");
  b.both(
      "masked_select",
      [](const Tensor& x, const Tensor& mask) {
        const Shape shape = broadcast_shapes(x.sizes(), mask.sizes(), "masked_select");
        const Tensor xb = x.expand(shape).reshape({-1});
        const Tensor idx = nonzero(mask.expand(shape).reshape({-1})).reshape({-1});
        return index_select(xb, 0, idx);
      },
      "mask"_a, "The elements where mask is true, as a 1-d tensor.");
  auto nonzero_fn = [](const Tensor& x, bool as_tuple) -> nb::object {
    Tensor nz;
    {
      GilRelease release;
      nz = nonzero(x);
    }
    if (!as_tuple) return wrap_tensor(nz);
    nb::list out;
    for (int64_t d = 0; d < nz.size(1); ++d) out.append(wrap_tensor(nz.select(1, d)));
    return nb::tuple(out);
  };
  cls.def("nonzero", nonzero_fn, nb::kw_only(), "as_tuple"_a = false,
          "Indices of the non-zero elements ([n, ndim], or one tensor per dim).");
  m.def("nonzero", nonzero_fn, "input"_a, nb::kw_only(), "as_tuple"_a = false,
        "Indices of the non-zero elements ([n, ndim], or one tensor per dim).");
  cls.def(
      "sort",
      [](const Tensor& x, int64_t dim, bool descending, bool) {
        std::tuple<Tensor, Tensor> r;
        {
          GilRelease release;
          r = sort(x, dim, descending);
        }
        return values_indices(std::move(r), "sort");
      },
      "dim"_a = -1, "descending"_a = false, nb::kw_only(), "stable"_a = false,
      "(values, indices) sorted along dim (stable).");
  m.def(
      "sort",
      [](const Tensor& x, int64_t dim, bool descending, bool) {
        std::tuple<Tensor, Tensor> r;
        {
          GilRelease release;
          r = sort(x, dim, descending);
        }
        return values_indices(std::move(r), "sort");
      },
      "input"_a, "dim"_a = -1, "descending"_a = false, nb::kw_only(), "stable"_a = false,
      "(values, indices) sorted along dim (stable).");
  b.both(
      "argsort",
      [](const Tensor& x, int64_t dim, bool descending, bool) {
        return std::get<1>(sort(x, dim, descending));
      },
      "dim"_a = -1, "descending"_a = false, nb::kw_only(), "stable"_a = false,
      "The indices that sort input along dim.");
  auto topk_fn = [](const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
    std::tuple<Tensor, Tensor> r;
    {
      GilRelease release;
      r = topk(x, k, dim, largest, sorted);
    }
    return values_indices(std::move(r), "topk");
  };
  cls.def("topk", topk_fn, "k"_a, "dim"_a = -1, "largest"_a = true, "sorted"_a = true,
          "(values, indices) of the k largest (or smallest) along dim.");
  m.def("topk", topk_fn, "input"_a, "k"_a, "dim"_a = -1, "largest"_a = true, "sorted"_a = true,
        "(values, indices) of the k largest (or smallest) along dim.");

  // --- Tensor functions made of core composites
  // ---------------------------------------------------
  b.both(
      "nan_to_num",
      [](const Tensor& x, std::optional<double> nan, std::optional<double> posinf,
         std::optional<double> neginf) { return nan_to_num(x, nan.value_or(0.0), posinf, neginf); },
      "nan"_a = 0.0, "posinf"_a = nb::none(), "neginf"_a = nb::none(),
      "NaN, +inf and -inf replaced by nan, posinf and neginf (default: the dtype's extremes).");
  b.method(
      "nan_to_num_",
      [](Tensor& x, std::optional<double> nan, std::optional<double> posinf,
         std::optional<double> neginf) -> Tensor& {
        return nan_to_num_(x, nan.value_or(0.0), posinf, neginf);
      },
      "nan"_a = 0.0, "posinf"_a = nb::none(), "neginf"_a = nb::none(), "In place: nan_to_num.");
  b.both(
      "nansum",
      [](const Tensor& x, std::optional<Ints> dim, bool keepdim, std::optional<DType> dtype) {
        return nansum(cast_input(x, dtype), dims_of(dim), keepdim);
      },
      "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none(),
      "Sum over dim treating NaN as 0.");
  b.both(
      "nanmean",
      [](const Tensor& x, std::optional<Ints> dim, bool keepdim, std::optional<DType> dtype) {
        return nanmean(cast_input(x, dtype), dims_of(dim), keepdim);
      },
      "dim"_a = nb::none(), "keepdim"_a = false, nb::kw_only(), "dtype"_a = nb::none(),
      "Mean over dim of the elements that are not NaN.");
  b.both(
      "addcmul",
      [](const Tensor& x, const Tensor& t1, const Tensor& t2, PyScalar value) {
        return addcmul(x, t1, t2, value);
      },
      "tensor1"_a, "tensor2"_a, nb::kw_only(), "value"_a = one,
      "input + value * tensor1 * tensor2.");
  b.both(
      "addcdiv",
      [](const Tensor& x, const Tensor& t1, const Tensor& t2, PyScalar value) {
        return addcdiv(x, t1, t2, value);
      },
      "tensor1"_a, "tensor2"_a, nb::kw_only(), "value"_a = one,
      "input + value * tensor1 / tensor2.");
  b.method(
      "addcmul_",
      [](Tensor& x, const Tensor& t1, const Tensor& t2, PyScalar value) -> Tensor& {
        return addcmul_(x, t1, t2, value);
      },
      "tensor1"_a, "tensor2"_a, nb::kw_only(), "value"_a = one,
      "In place: input += value * tensor1 * tensor2.");
  b.method(
      "addcdiv_",
      [](Tensor& x, const Tensor& t1, const Tensor& t2, PyScalar value) -> Tensor& {
        return addcdiv_(x, t1, t2, value);
      },
      "tensor1"_a, "tensor2"_a, nb::kw_only(), "value"_a = one,
      "In place: input += value * tensor1 / tensor2.");
  b.both(
      "diag", [](const Tensor& x, int64_t diagonal) { return diag(x, diagonal); }, "diagonal"_a = 0,
      "A 1-d input as a diagonal matrix, or a 2-d input's diagonal.");
  b.both(
      "diag_embed",
      [](const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
        return diag_embed(x, offset, dim1, dim2);
      },
      "offset"_a = 0, "dim1"_a = -2, "dim2"_a = -1,
      "The last dim as diagonals of matrices in dims dim1, dim2.");
  m.def(
      "meshgrid",
      [](nb::args tensors, std::optional<std::string> indexing) {
        const std::vector<Tensor> ts = tensors_from_args(tensors, "meshgrid");
        GilRelease release;
        return meshgrid(ts, indexing.value_or("ij"));
      },
      "tensors"_a, nb::kw_only(), "indexing"_a = nb::none(),
      nb::sig("def meshgrid(*tensors: ember.Tensor | collections.abc.Sequence[ember.Tensor], "
              "indexing: str | None = None) -> tuple[ember.Tensor, ...]"),
      "Coordinate grids of 1-d tensors ('ij' indexing unless told 'xy').");
  m.def(
      "_pad_sequence",
      [](const std::vector<Tensor>& sequences, bool batch_first, double padding_value,
         std::string_view padding_side) {
        return pad_sequence(sequences, batch_first, padding_value, padding_side);
      },
      "sequences"_a, "batch_first"_a = false, "padding_value"_a = 0.0, "padding_side"_a = "right",
      release_gil(), "torch.nn.utils.rnn.pad_sequence (ember.nn.utils.rnn's).");
  m.def(
      "broadcast_tensors",
      [](nb::args tensors) {
        const std::vector<Tensor> ts = tensors_from_args(tensors, "broadcast_tensors");
        GilRelease release;
        return broadcast_tensors(ts);
      },
      "tensors"_a,
      nb::sig("def broadcast_tensors(*tensors: ember.Tensor) -> tuple[ember.Tensor, ...]"),
      "Every tensor expanded (a view) to the shape they broadcast to together.");
  m.def(
      "broadcast_shapes",
      [](nb::args shapes) {
        Shape shape;
        for (nb::handle s : shapes) {
          Ints ints;
          EMBER_CHECK_TYPE(nb::try_cast<Ints>(s, ints),
                           "[broadcast_shapes] expects ints or sequences of ints, got {}",
                           nb::cast<std::string>(nb::str(s.type().attr("__name__"))));
          shape = broadcast_shapes(shape, ints.v, "broadcast_shapes");
        }
        return make_size(shape);
      },
      "shapes"_a,
      nb::sig("def broadcast_shapes(*shapes: int | collections.abc.Sequence[int]) -> ember.Size"),
      "The shape tensors of these shapes broadcast to.");
  for (const bool lower : {true, false}) {
    m.def(
        lower ? "tril_indices" : "triu_indices",
        [lower](int64_t row, int64_t col, int64_t offset, std::optional<DType> dtype,
                std::optional<Device> device) {
          const TensorOptions o(dtype.value_or(DType::Int64), device.value_or(Device::cpu()));
          return lower ? tril_indices(row, col, offset, o) : triu_indices(row, col, offset, o);
        },
        "row"_a, "col"_a, "offset"_a = 0, nb::kw_only(), "dtype"_a = nb::none(),
        "device"_a = nb::none(), release_gil(),
        lower ? "The [2, n] coordinates of the lower triangle of a row x col matrix."
              : "The [2, n] coordinates of the upper triangle of a row x col matrix.");
  }
  b.both(
      "repeat_interleave",
      [](const Tensor& x, const Operand& repeats, std::optional<int64_t> dim,
         std::optional<int64_t> output_size) {
        if (repeats.tensor) return repeat_interleave(x, *repeats.tensor, dim, output_size);
        EMBER_CHECK_TYPE(!repeats.scalar.is_floating(),
                         "[repeat_interleave] repeats must be an int or a tensor: got {}",
                         repeats.scalar.to_double());
        return repeat_interleave(x, repeats.scalar.to_int(), dim, output_size);
      },
      "repeats"_a, "dim"_a = nb::none(), nb::kw_only(), "output_size"_a = nb::none(),
      "Each element (slice along dim) repeated `repeats` times in a row.");
  b.function(
      "repeat_interleave",
      [](const Tensor& repeats, std::optional<int64_t> output_size) {
        return repeat_interleave(repeats, output_size);
      },
      "repeats"_a, nb::kw_only(), "output_size"_a = nb::none(),
      "i repeated repeats[i] times (the indices repeat_interleave picks).");
  b.function(
      "cdist",
      [](const Tensor& x1, const Tensor& x2, double p, nb::handle) { return cdist(x1, x2, p); },
      "x1"_a, "x2"_a, "p"_a = 2.0, "compute_mode"_a = nb::none(),
      "p-norm distances between the rows of x1 and x2.");
  auto searchsorted_fn = [](const Tensor& seq, const Operand& values, bool out_int32, bool right,
                            std::optional<std::string> side, std::optional<Tensor> sorter) {
    const std::optional<std::string_view> s =
        side ? std::optional<std::string_view>(*side) : std::nullopt;
    if (values.tensor) return searchsorted(seq, *values.tensor, out_int32, right, s, opt(sorter));
    return searchsorted(seq, values.scalar, out_int32, right, s, opt(sorter));
  };
  b.function("searchsorted", searchsorted_fn, "sorted_sequence"_a, "input"_a, nb::kw_only(),
             "out_int32"_a = false, "right"_a = false, "side"_a = nb::none(),
             "sorter"_a = nb::none(),
             "Where each value would go in the sorted last dim of sorted_sequence.");
  b.function(
      "bucketize",
      [](const Operand& x, const Tensor& boundaries, bool out_int32, bool right) {
        const Tensor in =
            x.tensor ? *x.tensor
                     : detail::scalar_tensor(x.scalar, boundaries.dtype(), boundaries.device());
        return bucketize(in, boundaries, out_int32, right);
      },
      "input"_a, "boundaries"_a, nb::kw_only(), "out_int32"_a = false, "right"_a = false,
      "The bucket of each element between sorted 1-d boundaries.");
  b.both(
      "histc",
      [](const Tensor& x, int64_t bins, double min, double max) {
        return histc(x, bins, min, max);
      },
      "bins"_a = 100, "min"_a = 0.0, "max"_a = 0.0,
      "Histogram in `bins` equal bins over [min, max] (the data's range if min == max).");
  b.both_py(
      "unique",
      [](const Tensor& x, bool sorted, bool return_inverse, bool return_counts,
         std::optional<int64_t> dim) {
        std::tuple<Tensor, Tensor, Tensor> r;
        {
          GilRelease release;
          r = unique(x, sorted, dim);
        }
        return unique_result(std::move(r), return_inverse, return_counts);
      },
      "sorted"_a = true, "return_inverse"_a = false, "return_counts"_a = false,
      "dim"_a = nb::none(),
      "The distinct elements (slices along dim), sorted; with inverse indices and counts.");
  b.both_py(
      "unique_consecutive",
      [](const Tensor& x, bool return_inverse, bool return_counts, std::optional<int64_t> dim) {
        std::tuple<Tensor, Tensor, Tensor> r;
        {
          GilRelease release;
          r = unique_consecutive(x, dim);
        }
        return unique_result(std::move(r), return_inverse, return_counts);
      },
      "return_inverse"_a = false, "return_counts"_a = false, "dim"_a = nb::none(),
      "One element of every run of equal consecutive elements (slices along dim).");
  b.both(
      "index_add",
      [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, PyScalar alpha) {
        return index_add(x, dim, index, source, alpha);
      },
      "dim"_a, "index"_a, "source"_a, nb::kw_only(), "alpha"_a = one,
      "A copy with alpha * source added at index along dim.");
  b.method(
      "index_add_",
      [](Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
         PyScalar alpha) -> Tensor& { return index_add_(x, dim, index, source, alpha); },
      "dim"_a, "index"_a, "source"_a, nb::kw_only(), "alpha"_a = one,
      "In place: alpha * source added at index along dim.");
  b.both(
      "index_copy",
      [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source) {
        return index_copy(x, dim, index, source);
      },
      "dim"_a, "index"_a, "source"_a, "A copy with source's slices at index along dim.");
  b.method(
      "index_copy_",
      [](Tensor& x, int64_t dim, const Tensor& index, const Tensor& source) -> Tensor& {
        return index_copy_(x, dim, index, source);
      },
      "dim"_a, "index"_a, "source"_a, "In place: source's slices at index along dim.");
  b.both(
      "index_fill",
      [](const Tensor& x, int64_t dim, const Tensor& index, const Operand& value) {
        return value.tensor ? index_fill(x, dim, index, *value.tensor)
                            : index_fill(x, dim, index, value.scalar);
      },
      "dim"_a, "index"_a, "value"_a, "A copy with the slices at index along dim set to value.");
  b.method(
      "index_fill_",
      [](Tensor& x, int64_t dim, const Tensor& index, const Operand& value) -> Tensor& {
        return value.tensor ? index_fill_(x, dim, index, *value.tensor)
                            : index_fill_(x, dim, index, value.scalar);
      },
      "dim"_a, "index"_a, "value"_a, "In place: the slices at index along dim set to value.");
  b.both(
      "scatter_reduce",
      [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
         const std::string& reduce,
         bool include_self) { return scatter_reduce(x, dim, index, src, reduce, include_self); },
      "dim"_a, "index"_a, "src"_a, "reduce"_a, nb::kw_only(), "include_self"_a = true,
      "A copy with src reduced ('sum', 'prod', 'mean', 'amax', 'amin') into index along dim.");
  b.method(
      "scatter_reduce_",
      [](Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
         bool include_self) -> Tensor& {
        return scatter_reduce_(x, dim, index, src, reduce, include_self);
      },
      "dim"_a, "index"_a, "src"_a, "reduce"_a, nb::kw_only(), "include_self"_a = true,
      "In place: src reduced into index along dim.");
  b.both(
      "masked_scatter",
      [](const Tensor& x, const Tensor& mask, const Tensor& source) {
        return masked_scatter(x, mask, source);
      },
      "mask"_a, "source"_a, "A copy with source's elements, in order, where mask is true.");
  b.method(
      "masked_scatter_",
      [](Tensor& x, const Tensor& mask, const Tensor& source) -> Tensor& {
        return masked_scatter_(x, mask, source);
      },
      "mask"_a, "source"_a, "In place: source's elements, in order, where mask is true.");
  b.method(
      "unsqueeze_", [](Tensor& x, int64_t dim) -> Tensor& { return x.unsqueeze_(dim); }, "dim"_a,
      "In place: a size-1 dim inserted at dim.");
  b.method(
      "squeeze_",
      [](Tensor& x, std::optional<Ints> dim) -> Tensor& {
        if (!dim) return x.squeeze_();
        Shape ds;
        for (int64_t d : dim->v)
          ds.push_back(wrap_dim(d, std::max<int64_t>(x.dim(), 1), "squeeze_"));
        std::sort(ds.begin(), ds.end(), std::greater<>());
        for (int64_t d : ds) x.squeeze_(d);
        return x;
      },
      "dim"_a = nb::none(), "In place: size-1 dims dropped (all, or those in dim).");
  b.method(
      "transpose_",
      [](Tensor& x, int64_t dim0, int64_t dim1) -> Tensor& { return x.transpose_(dim0, dim1); },
      "dim0"_a, "dim1"_a, "In place: two dims swapped.");
  b.method(
      "t_", [](Tensor& x) -> Tensor& { return x.t_(); },
      "In place: the transpose of a tensor of at most 2 dims.");

  // Note [In-place forms of every op]
  // PyTorch has x.<op>_(...) for every op whose result has x's shape. Where the core has no
  // kernel writing in place, x.<op>_(args) is the core's apply_inplace over the bound
  // out-of-place method, so the dtype and shape rules and autograd's in-place recording are the
  // core's, and no op's semantics is written twice. Bound after every op, so each name below
  // names a method bound above.
  static constexpr const char* kInplaceForms[] = {"absolute",    "acos",
                                                  "acosh",       "arccos",
                                                  "arccosh",     "arcsin",
                                                  "arcsinh",     "arctan",
                                                  "arctan2",     "arctanh",
                                                  "asin",        "asinh",
                                                  "atan",        "atan2",
                                                  "atanh",       "ceil",
                                                  "clamp_max",   "clamp_min",
                                                  "clip",        "cos",
                                                  "cosh",        "divide",
                                                  "erf",         "erfinv",
                                                  "exp2",        "expm1",
                                                  "floor",       "floor_divide",
                                                  "fmod",        "hypot",
                                                  "lerp",        "log10",
                                                  "log1p",       "log2",
                                                  "logaddexp",   "logical_and",
                                                  "logical_not", "logical_or",
                                                  "logical_xor", "multiply",
                                                  "negative",    "pow",
                                                  "reciprocal",  "remainder",
                                                  "round",       "rsqrt",
                                                  "sign",        "sin",
                                                  "sinh",        "square",
                                                  "subtract",    "tan",
                                                  "trunc",       "true_divide",
                                                  "eq",          "ne",
                                                  "lt",          "le",
                                                  "gt",          "ge",
                                                  "greater",     "greater_equal",
                                                  "less",        "less_equal",
                                                  "not_equal",   "tril",
                                                  "triu",        "scatter",
                                                  "scatter_add", "masked_fill"};
  static const std::vector<std::string> kInplaceNames = [] {
    std::vector<std::string> out;
    for (const char* name : kInplaceForms) out.push_back(std::string(name) + "_");
    return out;
  }();
  for (size_t i = 0; i < std::size(kInplaceForms); ++i) {
    const char* name = kInplaceForms[i];
    const char* inplace_name = kInplaceNames[i].c_str();
    if (nb::hasattr(cls, inplace_name)) continue;  // a kernel writes it in place
    nb::object method = nb::getattr(cls, name);
    cls.def(
        inplace_name,
        [method, inplace_name](Tensor& self, nb::args args, nb::kwargs kwargs) -> Tensor& {
          return apply_inplace(self, inplace_name, [&](const Tensor& value) {
            return nb::cast<Tensor>(method(value, *args, **kwargs));
          });
        },
        "args"_a, "kwargs"_a, nb::rv_policy::reference,
        nb::sig(fmt::format("def {}(self, *args, **kwargs) -> ember.Tensor", inplace_name).c_str()),
        "In place: this tensor becomes the out-of-place op's result (its dtype and shape kept).");
  }
}

}  // namespace ember::python
