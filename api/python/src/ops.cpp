// Every op with PyTorch's Python name, keywords and defaults: as a function of the ember module
// (ember.add(input, other, alpha=1)), a Tensor method (x.add(other)), an in-place method, an
// operator (x + other) and a function of ember.nn.functional, as PyTorch has them. Most are
// written from ops.sig (Note [Bindings from one table]); what is left here is what a row cannot
// say. The GIL is released inside every op (Note [The GIL around ops]).
#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <set>

#include "bind.h"

namespace ember::python {

// Note [Bindings from one table]
// The Python surface of an op is one row of api/python/ops.sig: its names, PyTorch's parameters
// with their types and defaults, the variants it has (function, method, in-place method,
// operator, functional form) and the core call it makes. gen_bindings.py writes the
// registrations from the rows at build time (ops_table.inc, included in bind_ops), so the
// bindings hold no semantics: a type says how a Python argument converts (an int or a sequence
// for int[2], None for every dim for int[]?, a tensor or a number for Tensor|Number, whose
// expression is then read with whichever was given), and the expression only picks the core
// function and orders its arguments; where an op needs more (trunc, movedim, squeeze of several
// dims, dot, count_nonzero...), that is a function of the core, so C++ callers have it too. The
// same row gives the method and the function their one lambda, so they cannot disagree, and an
// in-place variant is the core's in-place op or, for an op without one, apply_inplace over the
// method (Note [In-place forms of every op]). What stays written by hand below takes Python
// objects apart (einsum's operands, view's dtype or sizes), returns a result whose kind depends
// on its arguments (max with a dim or a tensor, unique, nonzero's as_tuple, max pooling's
// return_indices) or has several signatures under one name that one row cannot hold.

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

/** An optional string as the core's optional string_view (rounding_mode, indexing). */
std::optional<std::string_view> opt_view(const std::optional<std::string>& s) {
  return s ? std::optional<std::string_view>(*s) : std::nullopt;
}

/** A sequence of tensors and Nones (index_put's indices) as the core's list, None undefined. */
std::vector<Tensor> opt_tensors(const std::vector<std::optional<Tensor>>& ts) {
  std::vector<Tensor> out;
  for (const auto& t : ts) out.push_back(opt(t));
  return out;
}

/** A (min, max) pair given as a sequence of two numbers (histogram's range), or None. */
std::optional<std::pair<double, double>> range_of(const std::optional<std::vector<double>>& r,
                                                  const char* op) {
  if (!r) return std::nullopt;
  EMBER_CHECK(r->size() == 2, "[{}] range must be a (min, max) pair: got {} values", op, r->size());
  return std::pair((*r)[0], (*r)[1]);
}

/** The number `s` as a 0-d tensor that broadcasts against `like`. */
Tensor scalar_like(const Scalar& s, const Tensor& like) {
  return detail::scalar_tensor(s, like.dtype(), like.device());
}

/** F.softmax's dim when none is given: PyTorch's legacy choice (0 for 0-, 1- and 3-d inputs,
 *  else 1). */
int64_t legacy_softmax_dim(const Tensor& x) {
  return x.dim() <= 1 || x.dim() == 3 ? 0 : 1;
}

/** gaussian_nll_loss's var: a tensor, or a number as the core's double. */
const Tensor& tensor_or_double(const Tensor& t) {
  return t;
}
double tensor_or_double(const Scalar& s) {
  return s.to_double();
}

/** An operand read as a tensor: itself, or (below) a number as a 0-d tensor against `like`. */
const Tensor& tensor_like(const Tensor& t, const Tensor&) {
  return t;
}
Tensor tensor_like(const Scalar& s, const Tensor& like) {
  return scalar_like(s, like);
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
  // The functional forms ops.sig cannot describe (the others are generated with the ops).
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
      "adaptive_max_pool1d",
      [](const Tensor& x, Ints output_size, bool return_indices) {
        const int64_t o = single(output_size, "adaptive_max_pool1d", "output_size");
        return max_pooled(
            return_indices, [&] { return adaptive_max_pool1d(x, o); },
            [&] { return adaptive_max_pool1d_with_indices(x, o); });
      },
      "input"_a, "output_size"_a, "return_indices"_a = false,
      "Max pooling over [N, C, L] to output_size.");
}

}  // namespace

void bind_ops(nb::module_& m, nb::class_<PyTensor>& cls) {
  nb::module_ functional = m.def_submodule("functional", "The ops of ember.nn.functional.");
  bind_functional(functional);
  Binder b{m, cls};
  std::vector<const char*> inplace_forms;  // the methods whose x.<op>_() is apply_inplace
  {
    nb::module_& f = functional;
    static_cast<void>(f);
#include "ops_table.inc"
  }

  // --- What the table cannot say: a result whose kind depends on the arguments, Python
  // objects taken apart, several signatures under one name.
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
  for (const char* name : {"clamp", "clip"}) {
    b.both(
        name,
        [name](const Tensor& x, std::optional<Operand> min, std::optional<Operand> max) {
          return clamp_op(x, min, max, name);
        },
        "min"_a = nb::none(), "max"_a = nb::none(),
        "input clamped to [min, max] (numbers or tensors, broadcast).");
  }
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
  cls.def(
      "view",
      [](const Tensor& x, nb::args shape) {
        if (shape.size() == 1 && nb::isinstance<DTypeObject>(shape[0])) {
          const DType d = nb::cast<DType>(shape[0]);
          return x.view(d);
        }
        const Shape s = sizes_from_args(shape, "view");
        GilRelease release;
        return x.view(s);
      },
      "shape"_a,
      nb::sig("def view(self, *shape: int | collections.abc.Sequence[int] | ember.dtype) -> "
              "ember.Tensor"),
      "The same data with a new shape (one size may be -1), or read as another dtype.");
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
  cls.def_prop_ro(
      "mH", [](const Tensor& x) { return adjoint(x); },
      "The conjugate transpose of the last two dims (mT, as Ember's dtypes are real).");
  cls.def_prop_ro(
      "H",
      [](const Tensor& x) {
        EMBER_CHECK(x.dim() == 0 || x.dim() == 2,
                    "[H] expects a matrix or a number (0-d or 2-d): got {} dims (use mH for a "
                    "batch of matrices)",
                    x.dim());
        return x.dim() == 2 ? adjoint(x) : x;
      },
      "The conjugate transpose of a matrix.");
  cls.def_prop_ro(
      "real", [](const Tensor& x) { return real(x); }, "The real part: the tensor itself.");
  cls.def_prop_ro(
      "imag", [](const Tensor& x) { return imag(x); },
      "The imaginary part: an error, as Ember's dtypes are real.");
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
  // torch.gradient's spacing: a number, a sequence of numbers (one per dim), or a sequence of
  // coordinate tensors; dim: None, an int or a sequence of ints.
  m.def(
      "gradient",
      [](const Tensor& y, nb::handle spacing, nb::handle dim, int64_t edge_order) {
        Shape dims;
        if (!dim.is_none()) dims = nb::cast<Ints>(dim).v;
        std::vector<Tensor> coordinates;
        std::vector<double> steps;
        if (PySequence_Check(spacing.ptr()) && !nb::isinstance<PyTensor>(spacing)) {
          for (nb::handle s : nb::borrow<nb::sequence>(spacing)) {
            if (nb::isinstance<PyTensor>(s)) {
              coordinates.push_back(nb::cast<Tensor>(s));
            } else {
              steps.push_back(nb::cast<double>(s));
            }
          }
          EMBER_CHECK_TYPE(coordinates.empty() || steps.empty(),
                           "[gradient] spacing must be numbers or tensors, not both");
        } else if (nb::isinstance<PyTensor>(spacing)) {
          const Tensor s = nb::cast<Tensor>(spacing);
          EMBER_CHECK_TYPE(s.dim() == 0,
                           "[gradient] a tensor spacing must be one of a sequence, one per dim");
          steps.push_back(s.item());
        } else {
          steps.push_back(nb::cast<double>(spacing));
        }
        std::vector<Tensor> out;
        {
          GilRelease release;
          out = coordinates.empty() ? gradient(y, steps, dims, edge_order)
                                    : gradient(y, coordinates, dims, edge_order);
        }
        nb::list items;
        for (const Tensor& t : out) items.append(wrap_tensor(t));
        return nb::tuple(items);
      },
      "input"_a, nb::kw_only(), "spacing"_a = 1, "dim"_a = nb::none(), "edge_order"_a = 1,
      nb::sig("def gradient(input: ember.Tensor, *, spacing: typing.Any = 1, dim: typing.Any = "
              "None, edge_order: int = 1) -> tuple[ember.Tensor, ...]"),
      "The derivative of input along each dim (central differences inside, edge_order at the "
      "ends).");
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
  auto searchsorted_fn = [](const Tensor& seq, const Operand& values, bool out_int32, bool right,
                            std::optional<std::string> side, std::optional<Tensor> sorter) {
    const std::optional<std::string_view> s = opt_view(side);
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
  // Note: __eq__ makes Python drop the inherited __hash__; tensor.cpp defines it again below.
  cls.def("__hash__", [](nb::handle self) { return reinterpret_cast<intptr_t>(self.ptr()) >> 4; });

  // Note [In-place forms of every op]
  // PyTorch has x.<op>_(...) for every op whose result has x's shape. Where the core has no
  // kernel writing in place, x.<op>_(args) is the core's apply_inplace over the bound
  // out-of-place method, so the dtype and shape rules and autograd's in-place recording are the
  // core's, and no op's semantics is written twice. Bound after every op, so each name below
  // names a method bound above.
  inplace_forms.push_back("clip");
  static std::deque<std::string> names;  // the functions' names outlive them
  for (const char* name : inplace_forms) {
    const char* inplace_name = names.emplace_back(std::string(name) + "_").c_str();
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
  // The same for the ops written in Python (ember._composites): fn(value) is the op's result.
  m.def(
      "_apply_inplace",
      [](Tensor& self, const std::string& op, nb::callable fn) -> Tensor& {
        static std::set<std::string, std::less<>> interned;  // the names outlive the graph
        const char* name = interned.emplace(op).first->c_str();
        return apply_inplace(self, name,
                             [&](const Tensor& value) { return nb::cast<Tensor>(fn(value)); });
      },
      "self"_a, "op"_a, "fn"_a, nb::rv_policy::reference,
      "self = fn(self) in place under the core's in-place rules (apply_inplace).");
}

}  // namespace ember::python
