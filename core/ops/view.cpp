// The view methods of Tensor (declared in ember/tensor/tensor.h): differentiable ops that give the
// same storage a new geometry, no kernels.
#include "ember/tensor/tensor.h"

#include "core/ops/kernel_view.h"
#include "core/ops/size_math.h"
#include "ember/autograd/record.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"

#include <algorithm>
#include <vector>

namespace ember {
namespace {

// Note [Views are differentiable]
// Every view of a floating tensor is marked as a view of its base (mark_view: a pointer and a
// version in the TensorImpl, no allocation), so it follows the base's history when the base or
// another view of it is modified in place (Note [Views see their base's history] in
// core/autograd/record.cpp). A view records a backward node only when its base requires grad
// (checked before any closure is built, so plain views stay allocation-light); the node maps the
// view's gradient back to the base's shape with differentiable ops.
template <typename MakeFn>
Tensor track_view(const char* name, const Tensor& base, Tensor view, MakeFn&& make_fn) {
  autograd::mark_view(view, base);
  if (autograd::needs_grad(base)) autograd::record_view(name, base, view, make_fn());
  return view;
}

using Grads = std::vector<Tensor>;

// Views read sizes and strides first: an undefined tensor must fail here, not dereference null.
void check_defined(const Tensor& t, const char* op) {
  EMBER_CHECK_TYPE(t.defined(), "[{}] called on an undefined tensor", op);
}

// Backward of any view that only changes sizes: reshape back.
auto reshape_back(const Tensor& base) {
  return [&base] {
    return [sizes = base.sizes()](const Grads& g, const autograd::LambdaNode&) {
      return Grads{g[0].reshape(sizes)};
    };
  };
}

// Gradient of x.slice(dim, start, start + len, step) put back into x's shape, built from
// differentiable ops (cat for step 1, scatter otherwise) so it is differentiable again.
Tensor slice_backward(const Tensor& g, const Shape& in_sizes, int64_t dim, int64_t start,
                      int64_t step) {
  const int64_t n = in_sizes[dim], len = g.size(dim);
  if (step == 1) {
    Shape before = in_sizes, after = in_sizes;
    before[dim] = start;
    after[dim] = n - start - len;
    return cat({zeros(before, {g.dtype(), g.device()}), g, zeros(after, {g.dtype(), g.device()})},
               dim);
  }
  Shape index_shape(static_cast<size_t>(g.dim()), 1);
  index_shape[dim] = len;
  const Tensor index =
      arange(start, start + len * step, step, TensorOptions(DType::Int64, g.device()))
          .reshape(index_shape)
          .expand(g.sizes());
  return scatter(zeros(in_sizes, {g.dtype(), g.device()}), dim, index, g);
}

// Note [Sizes never wrap around]
// Every size list that becomes a tensor passes through an overflow-checked product
// (shape_numel, or infer_size for view/reshape), so numel(), nbytes() and the kernels' index
// arithmetic never see a wrapped-around count: a shape like [2^40, 2^40] is an ember::Error
// naming the op, even for views (expand, as_strided) that allocate nothing.

// Note [Empty views stay inside their storage]
// A view with a zero dim reads nothing, but data() still forms base + offset * itemsize. Slicing
// an empty tensor along one of its other dims can put the offset anywhere below that dim's size
// (up to 2^63 for shapes like [2^62, 0]), past the allocation and, times the itemsize, past
// int64. An empty view's offset is therefore clamped to one past the end of the storage; it
// addresses no element, so nothing else changes (storage_offset() reports the clamped value).
Tensor make_view(const Tensor& base, Shape sizes, Shape strides, int64_t offset) {
  if (offset > 0 && std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) {
    offset = std::min<int64_t>(offset,
                               static_cast<int64_t>(base.storage()->bytes() / base.element_size()));
  }
  return Tensor(make_intrusive<TensorImpl>(base.storage(), std::move(sizes), std::move(strides),
                                           offset, base.dtype()));
}

// Strides for viewing `t` with `sizes`, or nothing if its strides do not allow it
// (the rule of PyTorch's computeStride: merge runs of dims that are contiguous with each other).
std::optional<Shape> view_strides(const Tensor& t, IntList sizes) {
  Shape out(sizes.size());
  if (t.numel() == 0) return contiguous_strides(sizes);
  // A 0-d tensor has one element: every view of it has only size-1 dims.
  if (t.dim() == 0) return Shape(sizes.size(), 1);
  const Shape& old_sizes = t.sizes();
  const Shape& old_strides = t.strides();
  int64_t view_d = static_cast<int64_t>(sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.empty() ? 1 : old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_sizes[d];
    if (d == 0 ||
        (old_sizes[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

Shape infer_size(IntList sizes, int64_t numel, const char* op) {
  Shape out(sizes);
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      EMBER_CHECK(infer < 0, "[{}] only one dim can be -1: got {}", op, shape_str(sizes));
      infer = static_cast<int64_t>(i);
    } else {
      EMBER_CHECK(out[i] >= 0, "[{}] invalid size {} in {}", op, out[i], shape_str(sizes));
      EMBER_CHECK(!__builtin_mul_overflow(known, out[i], &known),
                  "[{}] number of elements of shape {} overflows int64", op, shape_str(sizes));
    }
  }
  if (infer >= 0) {
    EMBER_CHECK(known != 0 && numel % known == 0, "[{}] shape {} is invalid for input of size {}",
                op, shape_str(sizes), numel);
    out[infer] = numel / known;
  } else {
    EMBER_CHECK(known == numel, "[{}] shape {} is invalid for input of size {}", op,
                shape_str(sizes), numel);
  }
  // A zero dim makes `known` 0 however large the others are; their product must still fit
  // (Note [Zero-size shapes with huge dims]), or the strides computed from it wrap around.
  shape_numel(out, op);
  return out;
}

}  // namespace

int64_t Tensor::size(int64_t d) const {
  check_defined(*this, "size");
  return sizes()[wrap_dim(d, dim(), "size")];
}
int64_t Tensor::stride(int64_t d) const {
  check_defined(*this, "stride");
  return strides()[wrap_dim(d, dim(), "stride")];
}

// Note [Viewing memory as another dtype]
// view(dtype) is a new TensorImpl over the same storage (so it shares the version counter, which
// lives there), read as `dtype`. With another element size only the last dim changes, which must
// be contiguous: its size, the other strides and the offset scale by the ratio, and going to a
// larger element each must divide evenly (PyTorch's rules and messages). Like PyTorch's, the
// result does not require grad and is not a differentiable view: reinterpreted bits have no
// derivative.
Tensor Tensor::view_dtype(DType dtype) const {
  check_defined(*this, "view");
  const int64_t from = static_cast<int64_t>(element_size());
  const int64_t to = static_cast<int64_t>(itemsize(dtype));
  Shape sizes = this->sizes(), strides = this->strides();
  int64_t offset = storage_offset();
  if (from != to) {
    EMBER_CHECK(dim() > 0,
                "[view] self.dim() cannot be 0 to view {} as {} (different element sizes)",
                this->dtype(), dtype);
    EMBER_CHECK(strides.back() == 1,
                "[view] self.stride(-1) must be 1 to view {} as {} (different element sizes), but "
                "got {}",
                this->dtype(), dtype, strides.back());
    const size_t last = sizes.size() - 1;
    if (to < from) {
      const int64_t r = from / to;
      sizes[last] = fit_int64(WideInt{sizes[last]} * r, "view", "the last size");
      for (size_t d = 0; d < last; ++d)
        strides[d] = fit_int64(WideInt{strides[d]} * r, "view", "a stride");
      offset = fit_int64(WideInt{offset} * r, "view", "the offset");
    } else {
      const int64_t r = to / from;
      EMBER_CHECK(sizes[last] % r == 0,
                  "[view] self.size(-1) must be divisible by {} to view {} as {} (different "
                  "element sizes), but got {}",
                  r, this->dtype(), dtype, sizes[last]);
      EMBER_CHECK(offset % r == 0,
                  "[view] self.storage_offset() must be divisible by {} to view {} as {} "
                  "(different element sizes), but got {}",
                  r, this->dtype(), dtype, offset);
      for (size_t d = 0; d < last; ++d) {
        EMBER_CHECK(strides[d] % r == 0,
                    "[view] self.stride({}) must be divisible by {} to view {} as {} (different "
                    "element sizes), but got {}",
                    d, r, this->dtype(), dtype, strides[d]);
        strides[d] /= r;
      }
      sizes[last] /= r;
      offset /= r;
    }
  }
  return Tensor(
      make_intrusive<TensorImpl>(storage(), std::move(sizes), std::move(strides), offset, dtype));
}

Tensor Tensor::view(IntList sizes_in) const {
  check_defined(*this, "view");
  Shape sizes = infer_size(sizes_in, numel(), "view");
  auto strides = view_strides(*this, sizes);
  EMBER_CHECK(strides.has_value(),
              "[view] size {} is not compatible with input sizes {} and strides {} (use "
              ".reshape(...) instead)",
              shape_str(sizes), shape_str(this->sizes()), shape_str(this->strides()));
  return track_view("ViewBackward", *this,
                    make_view(*this, std::move(sizes), std::move(*strides), storage_offset()),
                    reshape_back(*this));
}

Tensor Tensor::reshape(IntList sizes_in) const {
  check_defined(*this, "reshape");
  Shape sizes = infer_size(sizes_in, numel(), "reshape");
  if (auto strides = view_strides(*this, sizes)) {
    return track_view("ViewBackward", *this,
                      make_view(*this, std::move(sizes), std::move(*strides), storage_offset()),
                      reshape_back(*this));
  }
  // A copy, as in PyTorch: no view of the temporary it was made from.
  Tensor out = clone(MemoryFormat::Contiguous).view(sizes);
  out.impl()->clear_view_base();
  return out;
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  check_defined(*this, "transpose");
  // A 0-d tensor transposes dims -1 and 0 onto itself (Note [Dims of a 0-d tensor]).
  d0 = wrap_dim(d0, std::max<int64_t>(dim(), 1), "transpose");
  d1 = wrap_dim(d1, std::max<int64_t>(dim(), 1), "transpose");
  Shape sizes = this->sizes(), strides = this->strides();
  if (dim() > 0) {
    std::swap(sizes[d0], sizes[d1]);
    std::swap(strides[d0], strides[d1]);
  }
  return track_view("TransposeBackward", *this,
                    make_view(*this, std::move(sizes), std::move(strides), storage_offset()),
                    [d0, d1] {
                      return [d0, d1](const Grads& g, const autograd::LambdaNode&) {
                        return Grads{g[0].transpose(d0, d1)};
                      };
                    });
}

Tensor Tensor::t() const {
  check_defined(*this, "t");
  EMBER_CHECK(dim() <= 2, "[t] expects a tensor with <= 2 dims, but got {} dims", dim());
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::permute(IntList dims) const {
  check_defined(*this, "permute");
  EMBER_CHECK(
      static_cast<int64_t>(dims.size()) == dim(),
      "[permute] number of dims {} does not match the tensor's {} dims: dims {} for sizes {}",
      dims.size(), dim(), shape_str(dims), shape_str(sizes()));
  Shape sizes(dims.size()), strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], dim(), "permute");
    EMBER_CHECK(!seen[d], "[permute] dim {} repeated in {}", d, shape_str(dims));
    seen[d] = true;
    sizes[i] = this->sizes()[d];
    strides[i] = this->strides()[d];
  }
  Shape inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inverse[wrap_dim(dims[i], dim(), "permute")] = i;
  return track_view("PermuteBackward", *this,
                    make_view(*this, std::move(sizes), std::move(strides), storage_offset()),
                    [&inverse] {
                      return [inverse](const Grads& g, const autograd::LambdaNode&) {
                        return Grads{g[0].permute(inverse)};
                      };
                    });
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  check_defined(*this, "slice");
  d = wrap_dim(d, dim(), "slice");
  EMBER_CHECK(step > 0, "[slice] step must be positive: got step {}", step);
  const int64_t n = sizes()[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape sizes = this->sizes(), strides = this->strides();
  // (len - 1) / step + 1 rather than (len + step - 1) / step, which wraps around for a huge step;
  // a stride is only scaled when the dim keeps two or more elements (then step < n, no overflow).
  const int64_t len = end - start;
  sizes[d] = len == 0 ? 0 : (len - 1) / step + 1;
  if (sizes[d] > 1) strides[d] *= step;
  return track_view("SliceBackward", *this,
                    make_view(*this, std::move(sizes), std::move(strides),
                              storage_offset() + start * this->strides()[d]),
                    [&] {
                      return [in = this->sizes(), d, start, step](const Grads& g,
                                                                  const autograd::LambdaNode&) {
                        return Grads{slice_backward(g[0], in, d, start, step)};
                      };
                    });
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  check_defined(*this, "narrow");
  d = wrap_dim(d, dim(), "narrow");
  const int64_t n = sizes()[d];
  if (start < 0) start += n;
  // length <= n - start, not start + length <= n: the sum overflows for huge lengths.
  EMBER_CHECK_INDEX(start >= 0 && length >= 0 && length <= n - start,
                    "[narrow] start {} + length {} exceeds size {} of dim {}", start, length, n, d);
  return slice(d, start, start + length);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  check_defined(*this, "select");
  d = wrap_dim(d, dim(), "select");
  const int64_t n = sizes()[d];
  EMBER_CHECK_INDEX(index >= -n && index < n,
                    "[select] index {} out of range for dim {} of size {}", index, d, n);
  if (index < 0) index += n;
  Shape sizes = this->sizes(), strides = this->strides();
  sizes.erase(d);
  strides.erase(d);
  return track_view("SelectBackward", *this,
                    make_view(*this, std::move(sizes), std::move(strides),
                              storage_offset() + index * this->strides()[d]),
                    [&] {
                      return [in = this->sizes(), d, index](const Grads& g,
                                                            const autograd::LambdaNode&) {
                        return Grads{slice_backward(g[0].unsqueeze(d), in, d, index, 1)};
                      };
                    });
}

namespace {

// The sizes and strides of `t` expanded to `target` (-1 keeps a size), checked.
std::pair<Shape, Shape> expanded_geometry(const Tensor& t, IntList target) {
  EMBER_CHECK(static_cast<int64_t>(target.size()) >= t.dim(),
              "[expand] the number of sizes ({}) must be >= the tensor's dims ({}): sizes {} to {}",
              target.size(), t.dim(), shape_str(t.sizes()), shape_str(target));
  const size_t lead = target.size() - t.sizes().size();
  Shape sizes(target.size()), strides(target.size());
  for (size_t i = 0; i < target.size(); ++i) {
    if (i < lead) {
      EMBER_CHECK(target[i] >= 0, "[expand] size {} is not allowed for a new leading dim {} ({})",
                  target[i], i, shape_str(target));
      sizes[i] = target[i];
      strides[i] = 0;
      continue;
    }
    const int64_t have = t.sizes()[i - lead];
    const int64_t want = target[i] == -1 ? have : target[i];
    EMBER_CHECK(have == want || have == 1,
                "[expand] the size {} must match the existing size {} at dim {} (sizes {} to {})",
                want, have, i, shape_str(t.sizes()), shape_str(target));
    sizes[i] = want;
    strides[i] = have == want ? t.strides()[i - lead] : 0;
  }
  shape_numel(sizes, "expand");  // Note [Sizes never wrap around]
  return {std::move(sizes), std::move(strides)};
}

}  // namespace

Tensor Tensor::expand(IntList target) const {
  check_defined(*this, "expand");
  auto [sizes, strides] = expanded_geometry(*this, target);
  return track_view("ExpandBackward", *this,
                    make_view(*this, std::move(sizes), std::move(strides), storage_offset()), [&] {
                      return [in = this->sizes()](const Grads& g, const autograd::LambdaNode&) {
                        return Grads{autograd::sum_to(g[0], in)};
                      };
                    });
}

// Note [Views inside ops]
// An op that broadcasts its operands for a kernel (binary ops, where, copy_) makes views that
// only feed the kernel and die with the call: nothing can modify them in place or take their
// grad_fn. They skip the autograd marking every user-visible view gets (Note [Views are
// differentiable]), which would cost a reference count on the base per operand on the path of
// every broadcasting op.
Tensor detail::expand_for_kernel(const Tensor& t, IntList shape) {
  if (t.sizes() == Shape(shape)) return t;
  auto [sizes, strides] = expanded_geometry(t, shape);
  return make_view(t, std::move(sizes), std::move(strides), t.storage_offset());
}

Tensor Tensor::squeeze() const {
  check_defined(*this, "squeeze");
  Shape sizes, strides;
  for (int64_t i = 0; i < dim(); ++i) {
    if (this->sizes()[i] != 1) {
      sizes.push_back(this->sizes()[i]);
      strides.push_back(this->strides()[i]);
    }
  }
  return track_view("SqueezeBackward", *this,
                    make_view(*this, std::move(sizes), std::move(strides), storage_offset()),
                    reshape_back(*this));
}

Tensor Tensor::squeeze(int64_t d) const {
  check_defined(*this, "squeeze");
  d = wrap_dim(d, std::max<int64_t>(dim(), 1), "squeeze");
  if (dim() == 0) return *this;
  if (sizes()[d] != 1) return *this;
  Shape sizes = this->sizes(), strides = this->strides();
  sizes.erase(d);
  strides.erase(d);
  return track_view("SqueezeBackward", *this,
                    make_view(*this, std::move(sizes), std::move(strides), storage_offset()),
                    reshape_back(*this));
}

// Note [Shape changes in place]
// x.unsqueeze_(d), squeeze_, transpose_ and t_ give x's TensorImpl the geometry of the view the
// out-of-place op makes (same storage, nothing copied), so every handle of x, its Python object
// included, sees the new shape; a view keeps its base, since autograd finds a view's elements in
// its base through its geometry (Note [Views see their base's history]). PyTorch also records
// the change in x's autograd history; Ember does not, so where autograd would record it (grad
// mode on and x, or its base, requiring grad) the change is refused with NotImplementedError
// naming the out-of-place op, rather than leaving a history of the old shape behind.
namespace {
Tensor& change_shape(Tensor& x, const char* op, const char* out_of_place, const Tensor& view) {
  EMBER_CHECK_NOT_IMPLEMENTED(
      !(autograd::is_grad_enabled() && x.requires_grad()),
      "[{}] changing the shape of a tensor that requires grad in place is not supported (use "
      "x = x.{}(...), or change it under no_grad)",
      op, out_of_place);
  x.impl()->set_geometry(*view.impl());
  return x;
}
}  // namespace

Tensor& Tensor::unsqueeze_(int64_t dim) {
  return change_shape(*this, "unsqueeze_", "unsqueeze", unsqueeze(dim));
}
Tensor& Tensor::squeeze_() {
  return change_shape(*this, "squeeze_", "squeeze", squeeze());
}
Tensor& Tensor::squeeze_(int64_t dim) {
  return change_shape(*this, "squeeze_", "squeeze", squeeze(dim));
}
Tensor& Tensor::transpose_(int64_t dim0, int64_t dim1) {
  return change_shape(*this, "transpose_", "transpose", transpose(dim0, dim1));
}
Tensor& Tensor::t_() {
  return change_shape(*this, "t_", "t", t());
}

Tensor Tensor::unsqueeze(int64_t d) const {
  check_defined(*this, "unsqueeze");
  check_ndim(sizes().size() + 1, "unsqueeze");
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape sizes = this->sizes(), strides = this->strides();
  const int64_t stride = d < dim() ? this->strides()[d] * this->sizes()[d] : 1;
  sizes.insert(d, 1);
  strides.insert(d, stride);
  return track_view("UnsqueezeBackward", *this,
                    make_view(*this, std::move(sizes), std::move(strides), storage_offset()),
                    reshape_back(*this));
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  check_defined(*this, "flatten");
  start = wrap_dim(start, std::max<int64_t>(dim(), 1), "flatten");
  end = wrap_dim(end, std::max<int64_t>(dim(), 1), "flatten");
  if (dim() == 0) return reshape({1});
  EMBER_CHECK(start <= end, "[flatten] start_dim {} must not come after end_dim {}", start, end);
  Shape sizes;
  for (int64_t i = 0; i < start; ++i) sizes.push_back(this->sizes()[i]);
  int64_t merged = 1;
  for (int64_t i = start; i <= end; ++i) merged *= this->sizes()[i];
  sizes.push_back(merged);
  for (int64_t i = end + 1; i < dim(); ++i) sizes.push_back(this->sizes()[i]);
  return reshape(sizes);
}

Tensor Tensor::as_strided(IntList sizes, IntList strides, std::optional<int64_t> offset) const {
  check_defined(*this, "as_strided");
  EMBER_CHECK(sizes.size() == strides.size(),
              "[as_strided] {} sizes but {} strides: sizes {} strides {}", sizes.size(),
              strides.size(), shape_str(sizes), shape_str(strides));
  const int64_t off = offset.value_or(storage_offset());
  EMBER_CHECK(off >= 0, "[as_strided] negative storage offset {}", off);
  // The furthest element must lie inside the storage.
  int64_t last = off;
  bool empty = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(sizes[i] >= 0 && strides[i] >= 0,
                "[as_strided] sizes and strides must be non-negative: sizes {} strides {}",
                shape_str(sizes), shape_str(strides));
    int64_t reach = 0;
    if (sizes[i] == 0) {
      empty = true;
      continue;
    }
    EMBER_CHECK(!__builtin_mul_overflow(sizes[i] - 1, strides[i], &reach) &&
                    !__builtin_add_overflow(last, reach, &last),
                "[as_strided] sizes {} strides {} offset {} reach past int64", shape_str(sizes),
                shape_str(strides), off);
  }
  shape_numel(sizes, "as_strided");
  const int64_t capacity = static_cast<int64_t>(storage()->bytes() / element_size());
  // An empty view reads nothing, but its data pointer is still base + offset: keep that inside
  // (or one past) the storage, as narrow's empty views are, so no address is ever formed
  // beyond the allocation (or overflows computing offset * itemsize).
  EMBER_CHECK(!empty || off <= capacity,
              "[as_strided] empty view at offset {} is past the end of the storage ({} elements)",
              off, capacity);
  EMBER_CHECK(
      empty || last < capacity,
      "[as_strided] sizes {} strides {} offset {} reach element {} but the storage holds {}",
      shape_str(sizes), shape_str(strides), off, last, capacity);
  // Backward: the gradient put back at the places of the storage the view reads, then read out
  // with this tensor's geometry (any layout; overlapping places sum, as in PyTorch).
  Tensor view = make_view(*this, Shape(sizes), Shape(strides), off);
  return track_view("AsStridedBackward", *this, view, [&] {
    return [in = autograd::TensorGeometry(*this), out = autograd::TensorGeometry(view)](
               const Grads& g, const autograd::LambdaNode&) {
      return Grads{autograd::as_strided_backward(g[0], in, out)};
    };
  });
}

// unfold is as_strided with the window's dim stepped and the window appended, so its backward is
// as_strided's, which sums the gradient of elements that several windows read.
Tensor Tensor::unfold(int64_t dim, int64_t size, int64_t step) const {
  check_defined(*this, "unfold");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(this->dim(), 1), "unfold");
  const int64_t n = this->dim() == 0 ? 1 : sizes()[d];
  EMBER_CHECK(size >= 0 && size <= n,
              "[unfold] size {} must be between 0 and the size {} of dim {} (sizes {})", size, n, d,
              shape_str(sizes()));
  EMBER_CHECK(step > 0, "[unfold] step must be positive: got {}", step);
  check_ndim(sizes().size() + 1, "unfold");
  Shape sizes = this->sizes(), strides = this->strides();
  const int64_t stride = this->dim() == 0 ? 1 : strides[d];
  if (this->dim() > 0) {
    sizes[d] = (n - size) / step + 1;
    strides[d] = stride * step;
  }
  sizes.push_back(size);
  strides.push_back(stride);
  return as_strided(sizes, strides, storage_offset());
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  return os << t.str();
}

}  // namespace ember
