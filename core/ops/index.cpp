// Indexing, joining and ordering ops.
//
// Kernel contracts (keyed by the dtype of x / src; any strides; attributes by their ops.def
// names, dim already wrapped):
//   "index_select" {x, index (int64, 1-d)} -> {y}, x's sizes with size(dim) = index.numel();
//       every index is range-checked against x.size(dim) (EMBER_ERR_INDEX names it and the size).
//   "gather" {x, index (int64, x's ndim)} -> {y of index's sizes}: y[i][j] = x[index[i][j]][j]
//       for dim 0; index.size(d) <= x.size(d) for d != dim.
//   "scatter", "scatter_add" {index, src} -> {y}: the core clones x into y first; the kernel
//       writes y[index[i][j]][j] = src[i][j] (or +=) for dim 0 over index's sizes.
//   The four range-check every index. A host backend fails the call itself; an accelerator may
//   instead record the bad index on the device and fail the next synchronization with the same
//   IndexError, so that no call waits for the device (the CUDA backend's Note [Index errors
//   reported at the next synchronization]); the output of such a call is not valid.
//   "count_nonzero" {x} -> {0-d int64}; "nonzero" {x} -> {[n, ndim] int64}, the coordinates of
//       the non-zero elements in row-major order, n from count_nonzero.
//   "sort" {x, the sorted dim last (a transposed view)} -> {values, indices (int64)},
//       contiguous in that layout; always stable, NaN sorting as the largest value. "topk": the
//       same layout, k in the last dim (range-checked here).
// masked_fill, cat, stack, split and chunk are composites: where, copy_ into narrow() views,
// and views; they need no kernel of their own.
#include "ember/ops/index.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "core/dispatch/call.h"
#include "core/dispatch/capture.h"
#include "ember/amp/autocast.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/reduce.h"

namespace ember {
namespace {

// Note [Backward of indexing ops]
// Every formula here is linear in the output gradient and written with the ops of this file,
// so it is differentiable again; they mirror each other: gather and index_select send the
// gradient back with scatter_add into zeros (repeated indices accumulate), and scatter /
// scatter_add send it to src with gather. Integer index tensors never get a gradient; they are
// saved version-checked, since an in-place change to them would silently corrupt the formula.
//   index_select: gx = zeros(x) scatter_add'ed along dim with the index broadcast over g
//   gather:       gx = scatter_add(zeros(x), dim, index, g)
//   scatter:      gx = g with the scattered places zeroed; gsrc = gather(g, dim, index)
//   scatter_add:  gx = g;                                  gsrc = gather(g, dim, index)
//   cat:          g_i = narrow(g, dim, offset_i, size_i)   (views, differentiable)
//   sort, topk:   gx = scatter_add(zeros(x), dim, indices, g); indices get no history
// gsrc covers only index's extent of src: the rest of src never reaches the output, so it is
// padded with zeros. masked_fill, stack, split and chunk are composites of differentiable ops.
using autograd::differentiable;
using autograd::LambdaNode;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

// Gradient of index_select(x, dim, index) for x of `in_sizes`.
Tensor index_select_backward(const Tensor& g, const Shape& in_sizes, int64_t dim,
                             const Tensor& index) {
  if (in_sizes.empty()) return g;  // a 0-d x was picked whole by its only valid index
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(in_sizes.size()), "index_select");
  Shape index_sizes(in_sizes.size(), 1);
  index_sizes[d] = index.numel();
  const Tensor idx = index.reshape(index_sizes).expand(g.sizes());
  return scatter_add(zeros(in_sizes, {g.dtype(), g.device()}), d, idx, g);
}

// `r` (of an index's sizes) zero-padded to src's sizes.
Tensor pad_to_src(Tensor r, const Shape& src_sizes) {
  for (int64_t i = 0; i < r.dim(); ++i) {
    if (r.size(i) < src_sizes[i]) {
      Shape pad = r.sizes();
      pad[i] = src_sizes[i] - r.size(i);
      r = cat({r, zeros(pad, {r.dtype(), r.device()})}, i);
    }
  }
  return r;
}

// Gradient for src of scatter / scatter_add: gather(g, dim, index), zero-padded to src's sizes.
Tensor scatter_src_backward(const Tensor& g, int64_t dim, const Tensor& index,
                            const Shape& src_sizes) {
  return pad_to_src(gather(g, dim, index), src_sizes);
}

// Records the backward of the values of sort / topk: the gradient goes back to the places the
// values came from along `dim` (distinct within a row), zeros elsewhere.
void record_ordering(const char* node, const char* op, const Tensor& x, int64_t dim, Tensor& values,
                     const Tensor& indices) {
  if (!autograd::needs_grad(x) || !is_floating(values.dtype())) return;
  autograd::record(
      node, op, {&x}, {&values},
      [sizes = x.sizes(), dim, si = SavedTensor(indices)](const Grads& g, const LambdaNode& self) {
        const Tensor idx = self.unpack(si);
        const Tensor z = zeros(sizes, {g[0].dtype(), g[0].device()});
        // A 0-d x: its one value was taken (k = 1, or sort) or not (k = 0).
        if (sizes.empty()) return Grads{g[0].numel() == 1 ? g[0].reshape({}) : z};
        return Grads{scatter_add(z, dim, idx, g[0])};
      });
}

void check_index_dtype(const Tensor& index, const char* op) {
  EMBER_CHECK_TYPE(index.dtype() == DType::Int64, "[{}] index must be an int64 tensor: got {}", op,
                   index.dtype());
}

// Shared checks and kernel call of scatter and scatter_add.
Tensor scatter_impl(const Op& op, const char* name, const Tensor& x, int64_t dim,
                    const Tensor& index, const Tensor& src) {
  EMBER_CHECK_TYPE(x.defined() && index.defined() && src.defined(),
                   "[{}] undefined tensor argument", name);
  check_index_dtype(index, name);
  common_device({&x, &index, &src}, name);
  EMBER_CHECK_TYPE(src.dtype() == x.dtype(), "[{}] src must have the dtype of the input {}: got {}",
                   name, x.dtype(), src.dtype());
  EMBER_CHECK(index.dim() == x.dim() && src.dim() == x.dim(),
              "[{}] index and src must have the input's number of dims {}: got {} and {}", name,
              x.dim(), index.dim(), src.dim());
  if (x.dim() == 0) {
    return scatter_impl(op, name, x.unsqueeze(0), dim, index.unsqueeze(0), src.unsqueeze(0))
        .reshape({});
  }
  const int64_t d = wrap_dim(dim, x.dim(), name);
  for (int64_t i = 0; i < x.dim(); ++i) {
    EMBER_CHECK(index.size(i) <= src.size(i) && (i == d || index.size(i) <= x.size(i)),
                "[{}] index sizes {} must not exceed src sizes {}, nor input sizes {} outside "
                "dim {}",
                name, shape_str(index.sizes()), shape_str(src.sizes()), shape_str(x.sizes()), d);
  }
  Tensor y = x.clone(MemoryFormat::Contiguous);  // the scatter kernels write row-major
  // scatter and scatter_add share one attribute layout.
  if (index.numel() > 0) {
    run_kernel(op, x.dtype(), {&index, &src}, {&y}, PackedAttrs(attrs::scatter{.dim = d}));
  }
  return y;
}

// Note [Ordering ops sort the last dim]
// sort and topk move `dim` to the end with a transpose (a view, no copy); the kernel sees rows
// of the last dim, reads the input through its strides and writes contiguous outputs in that
// moved layout; the results are transposed back, so they are views of contiguous buffers.
template <typename A>  // attrs::sort or attrs::topk
std::tuple<Tensor, Tensor> ordering_kernel(const A& attrs, const Tensor& x, int64_t d,
                                           int64_t out_size) {
  const Tensor xt = x.transpose(d, -1);
  Shape sizes = xt.sizes();
  sizes.back() = out_size;
  Tensor values = empty(sizes, {x.dtype(), x.device()});
  Tensor indices = empty(sizes, {DType::Int64, x.device()});
  if (values.numel() > 0) run_kernel(attrs, x.dtype(), {&xt}, {&values, &indices});
  return {values.transpose(d, -1), indices.transpose(d, -1)};
}

Tensor index_select_forward(const Tensor& x, int64_t dim, const Tensor& index) {
  EMBER_CHECK_TYPE(x.defined() && index.defined(), "[index_select] undefined tensor argument");
  check_index_dtype(index, "index_select");
  EMBER_CHECK(index.dim() <= 1, "[index_select] index must be a 1-d tensor: got {} dims {}",
              index.dim(), shape_str(index.sizes()));
  common_device({&x, &index}, "index_select");
  if (x.dim() == 0) {
    wrap_dim(dim, 1, "index_select");
    EMBER_CHECK(index.numel() == 1,
                "[index_select] a 0-d input needs exactly one index: got {} indices",
                index.numel());
    return index_select_forward(x.unsqueeze(0), 0, index.reshape({1})).reshape({});
  }
  const int64_t d = wrap_dim(dim, x.dim(), "index_select");
  const Tensor idx = index.dim() == 0 ? index.reshape({1}) : index;
  Shape sizes = x.sizes();
  sizes[d] = idx.numel();
  Tensor y = empty(sizes, {x.dtype(), x.device()});
  // Note: with an empty output (another dim of size 0) the kernel still validates the indices.
  if (idx.numel() > 0) run_kernel(attrs::index_select{.dim = d}, x.dtype(), {&x, &idx}, {&y});
  return y;
}

Tensor gather_forward(const Tensor& x, int64_t dim, const Tensor& index) {
  EMBER_CHECK_TYPE(x.defined() && index.defined(), "[gather] undefined tensor argument");
  check_index_dtype(index, "gather");
  common_device({&x, &index}, "gather");
  EMBER_CHECK(index.dim() == x.dim(),
              "[gather] index must have the input's number of dims {}: got {} (sizes {})", x.dim(),
              index.dim(), shape_str(index.sizes()));
  if (x.dim() == 0) return gather_forward(x.unsqueeze(0), dim, index.unsqueeze(0)).reshape({});
  const int64_t d = wrap_dim(dim, x.dim(), "gather");
  for (int64_t i = 0; i < x.dim(); ++i) {
    EMBER_CHECK(i == d || index.size(i) <= x.size(i),
                "[gather] index size {} exceeds input size {} at dim {} (index {}, input {})",
                index.size(i), x.size(i), i, shape_str(index.sizes()), shape_str(x.sizes()));
  }
  Tensor y = empty(index.sizes(), {x.dtype(), x.device()});
  if (y.numel() > 0) run_kernel(attrs::gather{.dim = d}, x.dtype(), {&x, &index}, {&y});
  return y;
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  return differentiable(
      "IndexSelectBackward", "index_select", {&x},
      [&] { return index_select_forward(x, dim, index); },
      [&] {
        return [sizes = x.sizes(), dim, si = SavedTensor(index)](const Grads& g,
                                                                 const LambdaNode& self) {
          return Grads{index_select_backward(g[0], sizes, dim, self.unpack(si))};
        };
      });
}

namespace {

// Note [0-d tensors in scatter and gather]
// PyTorch counts a 0-d tensor as 1-d of one element in scatter and gather (ATen's
// ensure_nonempty_dim): zeros(5).scatter_(0, tensor(3), value=1) writes one value, and
// arange(5).gather(0, tensor(3)) reads one. When every tensor involved is 0-d or 1-d and one is
// 0-d, the op runs on their 1-d views and its result takes the shape it has in PyTorch (the
// input's for scatter, the index's for gather); other dim mismatches stay errors.

/** Whether the tensors are all 0-d or 1-d with at least one 0-d. */
bool mixes_0d_and_1d(std::initializer_list<const Tensor*> ts) {
  bool zero = false;
  for (const Tensor* t : ts) {
    if (!t->defined() || t->dim() > 1) return false;
    zero = zero || t->dim() == 0;
  }
  return zero;
}

/** A 0-d tensor as 1-d of one element; others as they are. */
Tensor nonempty_dims(const Tensor& t) {
  return t.dim() == 0 ? t.reshape({1}) : t;
}

}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  if (mixes_0d_and_1d({&x, &index})) {  // Note [0-d tensors in scatter and gather]
    return gather(nonempty_dims(x), dim, nonempty_dims(index)).reshape(index.sizes());
  }
  return differentiable(
      "GatherBackward", "gather", {&x}, [&] { return gather_forward(x, dim, index); },
      [&] {
        return [sizes = x.sizes(), dim, si = SavedTensor(index)](const Grads& g,
                                                                 const LambdaNode& self) {
          return Grads{
              scatter_add(zeros(sizes, {g[0].dtype(), g[0].device()}), dim, self.unpack(si), g[0])};
        };
      });
}

namespace {

/** `index` (an integer tensor of any shape) as positions in a flat tensor of n elements, 1-d and
 *  wrapped into [0, n); an index outside [-n, n) is an IndexError naming op (take, put). */
Tensor flat_positions(const Tensor& index, int64_t n, const char* op) {
  check_index_dtype(index, op);
  if (index.numel() > 0) {
    const int64_t lo = amin(index).item<int64_t>(), hi = amax(index).item<int64_t>();
    EMBER_CHECK_INDEX(lo >= -n && hi < n,
                      "[{}] index {} is out of range for a tensor of {} elements", op,
                      lo < -n ? lo : hi, n);
  }
  return where(lt(index, 0), add(index, n), index).reshape({-1});
}

}  // namespace

Tensor take(const Tensor& x, const Tensor& index) {
  EMBER_CHECK_TYPE(x.defined() && index.defined(), "[take] undefined tensor argument");
  const Tensor flat = x.reshape({-1});
  return index_select(flat, 0, flat_positions(index, flat.size(0), "take")).reshape(index.sizes());
}

Tensor put(const Tensor& x, const Tensor& index, const Tensor& source, bool accumulate) {
  EMBER_CHECK_TYPE(x.defined() && index.defined() && source.defined(),
                   "[put] undefined tensor argument");
  EMBER_CHECK(index.numel() == source.numel(),
              "[put] source and index need as many elements: got {} and {} (shapes {} and {})",
              source.numel(), index.numel(), shape_str(source.sizes()), shape_str(index.sizes()));
  const Tensor flat = x.reshape({-1});
  const Tensor wrapped = flat_positions(index, flat.size(0), "put");
  const Tensor src = source.reshape({-1}).to(x.dtype());
  const Tensor out =
      accumulate ? index_add(flat, 0, wrapped, src) : index_copy(flat, 0, wrapped, src);
  return out.view(x.sizes());
}

Tensor& put_(Tensor& x, const Tensor& index, const Tensor& source, bool accumulate) {
  return apply_inplace(x, "put_",
                       [&](const Tensor& v) { return put(v, index, source, accumulate); });
}

// The diagonal's flat positions step by the sum of x's contiguous strides (columns + 1 for a
// matrix); PyTorch's fill_diagonal_ stops after min(rows, columns) of them unless wrap, which
// goes on through the whole of a tall matrix.
Tensor& fill_diagonal_(Tensor& x, Scalar value, bool wrap) {
  EMBER_CHECK_TYPE(x.defined(), "[fill_diagonal_] undefined tensor argument");
  EMBER_CHECK(x.dim() >= 2, "[fill_diagonal_] dimensions must be larger than 1: got {}", x.dim());
  if (x.dim() > 2) {
    for (int64_t d = 1; d < x.dim(); ++d) {
      EMBER_CHECK(x.size(d) == x.size(0),
                  "[fill_diagonal_] all dimensions of input must be of equal length: got shape {}",
                  shape_str(x.sizes()));
    }
  }
  int64_t step = 0, stride = 1;
  for (int64_t d = x.dim() - 1; d >= 0; --d) {
    step += stride;
    stride *= x.size(d);
  }
  const int64_t rows = x.size(0), cols = x.size(1);
  const int64_t end = x.dim() == 2 && !wrap ? std::min(rows, cols) * cols : x.numel();
  if (end == 0) return x;
  const Tensor positions = arange(Scalar(int64_t{0}), Scalar(end), Scalar(step),
                                  TensorOptions{DType::Int64, x.device()});
  const Tensor values = full(positions.sizes(), value, {x.dtype(), x.device()});
  return apply_inplace(x, "fill_diagonal_",
                       [&](const Tensor& v) { return put(v, positions, values); });
}

Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim) {
  EMBER_CHECK_TYPE(x.defined() && indices.defined(), "[take_along_dim] undefined tensor argument");
  if (!dim) return take_along_dim(x.reshape({-1}), indices.reshape({-1}), 0);
  EMBER_CHECK(x.dim() == indices.dim(),
              "[take_along_dim] input and indices need the same number of dims: got {} and {}",
              x.dim(), indices.dim());
  if (x.dim() == 0) return gather(x, 0, indices);
  const int64_t d = wrap_dim(*dim, x.dim(), "take_along_dim");
  Shape xs = x.sizes(), is = indices.sizes();
  xs[d] = 1;
  is[d] = 1;
  Shape x_to = broadcast_shapes(xs, is, "take_along_dim"), i_to = x_to;
  x_to[d] = x.size(d);
  i_to[d] = indices.size(d);
  return gather(x.expand(x_to), d, indices.expand(i_to));
}

// Note: with repeated indices scatter keeps one of the written values, so its gradient for
// src is only meaningful for distinct indices (as in PyTorch).
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  if (mixes_0d_and_1d({&x, &index, &src})) {  // Note [0-d tensors in scatter and gather]
    return scatter(nonempty_dims(x), dim, nonempty_dims(index), nonempty_dims(src))
        .reshape(x.sizes());
  }
  return differentiable(
      "ScatterBackward", "scatter", {&x, &src},
      [&] { return scatter_impl(core_op(ops::scatter), "scatter", x, dim, index, src); },
      [&] {
        return [src_sizes = src.sizes(), dim, si = SavedTensor(index), rx = x.requires_grad(),
                rs = src.requires_grad()](const Grads& g, const LambdaNode& self) {
          const Tensor idx = self.unpack(si);
          Tensor gx, gsrc;
          if (rx) gx = scatter(g[0], dim, idx, zeros(src_sizes, {g[0].dtype(), g[0].device()}));
          if (rs) gsrc = scatter_src_backward(g[0], dim, idx, src_sizes);
          return Grads{gx, gsrc};
        };
      });
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  if (mixes_0d_and_1d({&x, &index, &src})) {  // Note [0-d tensors in scatter and gather]
    return scatter_add(nonempty_dims(x), dim, nonempty_dims(index), nonempty_dims(src))
        .reshape(x.sizes());
  }
  return differentiable(
      "ScatterAddBackward", "scatter_add", {&x, &src},
      [&] { return scatter_impl(core_op(ops::scatter_add), "scatter_add", x, dim, index, src); },
      [&] {
        return [src_sizes = src.sizes(), dim, si = SavedTensor(index), rs = src.requires_grad()](
                   const Grads& g, const LambdaNode& self) {
          return Grads{g[0],
                       rs ? scatter_src_backward(g[0], dim, self.unpack(si), src_sizes) : Tensor()};
        };
      });
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  EMBER_CHECK_TYPE(x.defined() && mask.defined(), "[masked_fill] undefined tensor argument");
  EMBER_CHECK_TYPE(mask.dtype() == DType::Bool, "[masked_fill] mask must be bool: got {}",
                   mask.dtype());
  common_device({&x, &mask}, "masked_fill");
  broadcast_shapes(x.sizes(), mask.sizes(), "masked_fill");
  check_scalar_fits(value, x.dtype(), "masked_fill");
  // A 0-d value of x's own dtype keeps where()'s result dtype that of x.
  const Tensor v = detail::scalar_tensor(value, x.dtype(), x.device()).to(x.dtype());
  return where(mask, v, x);
}

// PyTorch's one_hot: int64 classes in [0, num_classes); num_classes -1 infers max + 1. A class
// out of range is an error (it once gave an all-zero row).
Tensor one_hot(const Tensor& t, int64_t num_classes) {
  EMBER_CHECK_TYPE(t.defined() && t.dtype() == DType::Int64,
                   "[one_hot] is only applicable to an int64 index tensor: got {}",
                   t.defined() ? fmt::format("{}", t.dtype()) : std::string("undefined"));
  EMBER_CHECK(num_classes >= -1, "[one_hot] num_classes must be -1 (infer) or >= 0: got {}",
              num_classes);
  int64_t n = num_classes;
  if (t.numel() == 0) {
    EMBER_CHECK(n > 0, "[one_hot] cannot infer the number of classes from an empty tensor");
  } else {
    const int64_t lo = amin(t).item<int64_t>(), hi = amax(t).item<int64_t>();
    EMBER_CHECK_INDEX(lo >= 0, "[one_hot] class values must be non-negative: got {}", lo);
    if (n == -1) {
      n = hi + 1;
    } else {
      EMBER_CHECK_INDEX(hi < n,
                        "[one_hot] class values must be smaller than num_classes: got {} "
                        "for num_classes={}",
                        hi, n);
    }
  }
  const Tensor classes = arange(Scalar(int64_t{0}), Scalar(n), Scalar(int64_t{1}),
                                TensorOptions(DType::Int64, t.device()));
  return eq(t.unsqueeze(-1), classes).to(DType::Int64);
}

// tril / triu: where() against a broadcast [rows, 1] vs [1, cols] comparison of positions, so
// the gradient is the same mask and batches cost nothing extra.
namespace {
Tensor triangle(const char* name, const Tensor& x, int64_t diagonal, bool lower) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK(x.dim() >= 2, "[{}] needs at least 2 dims: got shape {}", name, shape_str(x.sizes()));
  const TensorOptions opts{DType::Int64, x.device()};
  const Tensor rows = arange(x.size(x.dim() - 2), opts).unsqueeze(1);
  const Tensor cols = arange(x.size(x.dim() - 1), opts).unsqueeze(0);
  const Tensor offset = sub(cols, rows);
  const Tensor keep = lower ? le(offset, diagonal) : ge(offset, diagonal);
  return where(keep, x, detail::scalar_tensor(0, x.dtype(), x.device()).to(x.dtype()));
}
}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) {
  return triangle("tril", x, diagonal, true);
}
Tensor triu(const Tensor& x, int64_t diagonal) {
  return triangle("triu", x, diagonal, false);
}

Tensor nonzero(const Tensor& x) {
  EMBER_CHECK_TYPE(x.defined(), "[nonzero] undefined tensor argument");
  Tensor count = empty({}, {DType::Int64, x.device()});
  if (x.numel() == 0) {
    return empty({0, x.dim()}, {DType::Int64, x.device()});
  }
  run_kernel(core_op(ops::count_nonzero), x.dtype(), {&x}, {&count});
  const int64_t n = count.to(Device::cpu()).data_ptr<int64_t>()[0];
  Tensor out = empty({n, x.dim()}, {DType::Int64, x.device()});
  if (out.numel() > 0) run_kernel(core_op(ops::nonzero), x.dtype(), {&x}, {&out});
  return out;
}

Tensor argwhere(const Tensor& x) {
  EMBER_CHECK_TYPE(x.defined(), "[argwhere] undefined tensor argument");
  return nonzero(x);
}

std::vector<Tensor> unravel_index(const Tensor& indices, IntList shape) {
  EMBER_CHECK_TYPE(indices.defined(), "[unravel_index] undefined tensor argument");
  EMBER_CHECK_TYPE(is_integral(indices.dtype()),
                   "[unravel_index] expects an integer tensor of indices: got {}", indices.dtype());
  int64_t numel = 1;
  for (const int64_t s : shape) {
    EMBER_CHECK(s >= 0, "[unravel_index] shape must be non-negative: got {}", shape_str(shape));
    EMBER_CHECK(s == 0 || numel <= std::numeric_limits<int64_t>::max() / s,
                "[unravel_index] the shape's element count {} overflows int64", shape_str(shape));
    numel *= s;
  }
  autograd::NoGradGuard no_grad;  // integer coordinates: no gradient
  Tensor flat = indices.to(DType::Int64);
  if (flat.numel() > 0) {
    const int64_t lo = amin(flat).item<int64_t>(), hi = amax(flat).item<int64_t>();
    EMBER_CHECK_INDEX(lo >= -numel && hi < numel,
                      "[unravel_index] index {} is out of bounds for shape {} ({} elements)",
                      lo < -numel ? lo : hi, shape_str(shape), numel);
    flat = where(lt(flat, 0), add(flat, numel), flat);
  }
  std::vector<Tensor> out(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 0) {  // no index is in bounds: flat is empty
      out[d] = flat;
      continue;
    }
    out[d] = remainder(flat, shape[d]);
    flat = floor_divide(flat, shape[d]);
  }
  return out;
}

namespace {

// Note [Scatter into a view]
// slice_scatter, select_scatter and diagonal_scatter are PyTorch's out-of-place forms of
// assigning to a view: a clone of x whose view (made by `view`) gets src through copy_. Autograd
// records that as a copy into a slice of the clone, so x's gradient is g outside the view and
// src's is g's view. src must have the view's shape exactly (no broadcasting) and converts to x's
// dtype as in copy_, as in PyTorch.
Tensor scatter_into_view(const Tensor& x, const Tensor& src, const char* op,
                         const std::function<Tensor(const Tensor&)>& view) {
  EMBER_CHECK_TYPE(x.defined() && src.defined(), "[{}] undefined tensor argument", op);
  Tensor out = x.clone();
  Tensor part = view(out);
  EMBER_CHECK(src.sizes() == part.sizes(),
              "[{}] src must have the shape of the part of the input it replaces: src {}, part {}",
              op, shape_str(src.sizes()), shape_str(part.sizes()));
  part.copy_(src);
  return out;
}

}  // namespace

Tensor slice_scatter(const Tensor& x, const Tensor& src, int64_t dim, std::optional<int64_t> start,
                     std::optional<int64_t> end, int64_t step) {
  EMBER_CHECK(step > 0, "[slice_scatter] step must be positive: got {}", step);
  return scatter_into_view(x, src, "slice_scatter", [&](const Tensor& t) {
    return t.slice(dim, start.value_or(0), end.value_or(std::numeric_limits<int64_t>::max()), step);
  });
}

Tensor select_scatter(const Tensor& x, const Tensor& src, int64_t dim, int64_t index) {
  return scatter_into_view(x, src, "select_scatter",
                           [&](const Tensor& t) { return t.select(dim, index); });
}

Tensor diagonal_scatter(const Tensor& x, const Tensor& src, int64_t offset, int64_t dim1,
                        int64_t dim2) {
  return scatter_into_view(x, src, "diagonal_scatter",
                           [&](const Tensor& t) { return diagonal(t, offset, dim1, dim2); });
}

// As PyTorch computes it: the r-fold grid of positions, kept where they increase (or do not
// decrease, with_replacement), read off x's r-fold grid in row-major order.
Tensor combinations(const Tensor& x, int64_t r, bool with_replacement) {
  EMBER_CHECK_TYPE(x.defined(), "[combinations] undefined tensor argument");
  EMBER_CHECK(x.dim() == 1, "[combinations] expects a 1-d tensor: got shape {}",
              shape_str(x.sizes()));
  EMBER_CHECK(r >= 0, "[combinations] r must be non-negative: got {}", r);
  if (r == 0) return empty({0}, TensorOptions{x.dtype(), x.device()});
  const Tensor positions = arange(x.size(0), TensorOptions{DType::Int64, x.device()});
  const std::vector<Tensor> grid = meshgrid(std::vector<Tensor>(r, x), "ij");
  const std::vector<Tensor> at = meshgrid(std::vector<Tensor>(r, positions), "ij");
  Tensor keep = ones(at[0].sizes(), TensorOptions{DType::Bool, x.device()});
  for (int64_t k = 1; k < r; ++k) {
    keep = logical_and(keep, with_replacement ? le(at[k - 1], at[k]) : lt(at[k - 1], at[k]));
  }
  std::vector<Tensor> columns;
  columns.reserve(r);
  for (const Tensor& g : grid) columns.push_back(masked_select(g, keep));
  return stack(columns, 1);
}

namespace {

// Gives cat's output `out` (joined along `d`) its history when an input requires grad: the
// gradient of each input is its narrow() of g (a skipped empty 1-d input gets an empty one).
Tensor cat_record(const std::vector<Tensor>& tensors, Tensor out, int64_t d) {
  if (!autograd::is_grad_enabled() || !is_floating(out.dtype())) return out;
  struct Part {
    bool requires_grad, skipped;
    int64_t size;
    DType dtype;
  };
  std::vector<Part> parts;
  bool any = false;
  for (const Tensor& t : tensors) {
    const bool skipped = t.dim() == 1 && t.numel() == 0;
    parts.push_back({t.requires_grad(), skipped, skipped ? 0 : t.size(d), t.dtype()});
    any = any || t.requires_grad();
  }
  if (!any) return out;
  autograd::record(
      "CatBackward", "cat", tensors, {&out},
      [parts = std::move(parts), d](const Grads& g, const LambdaNode&) {
        Grads r;
        r.reserve(parts.size());
        int64_t offset = 0;
        for (const Part& p : parts) {
          if (p.skipped) {
            r.push_back(p.requires_grad ? zeros({0}, {p.dtype, g[0].device()}) : Tensor());
            continue;
          }
          if (p.requires_grad) {
            Tensor gi = g[0].narrow(d, offset, p.size);
            r.push_back(gi.dtype() == p.dtype ? gi : gi.to(p.dtype));
          } else {
            r.emplace_back();
          }
          offset += p.size;
        }
        return r;
      });
  return out;
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (!tensors.empty()) EMBER_AUTOCAST(Promote, cat, tensors.front(), tensors, dim);
  EMBER_CHECK(!tensors.empty(), "[cat] expected a non-empty list of tensors");
  // Note [cat skips empty 1-d tensors]: like PyTorch's legacy rule, a 1-d tensor of size 0
  // joins anything (it is left out of the shape checks and the copy), but it still takes part
  // in dtype promotion.
  const auto skipped = [](const Tensor& t) { return t.dim() == 1 && t.numel() == 0; };
  const Tensor* ref = nullptr;
  DType dtype = tensors[0].dtype();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    EMBER_CHECK_TYPE(t.defined(), "[cat] tensor number {} in the list is undefined", i);
    EMBER_CHECK(t.dim() > 0, "[cat] zero-dimensional tensor (number {}) cannot be concatenated", i);
    EMBER_CHECK_TYPE(t.device() == tensors[0].device(),
                     "[cat] expected all tensors on one device: got {} and {} for tensor number {}",
                     tensors[0].device().str(), t.device().str(), i);
    dtype = promote_types(dtype, t.dtype());
    if (!ref && !skipped(t)) ref = &t;
  }
  const Device device = tensors[0].device();
  if (!ref) return cat_record(tensors, empty({0}, {dtype, device}), 0);
  const int64_t d = wrap_dim(dim, ref->dim(), "cat");
  Shape sizes = ref->sizes();
  sizes[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (skipped(t)) continue;
    EMBER_CHECK(t.dim() == ref->dim(),
                "[cat] tensors must have the same number of dims: got {} and {} for tensor "
                "number {} in the list (shapes {} and {})",
                ref->dim(), t.dim(), i, shape_str(ref->sizes()), shape_str(t.sizes()));
    for (int64_t j = 0; j < t.dim(); ++j) {
      EMBER_CHECK(j == d || t.size(j) == ref->size(j),
                  "[cat] sizes of tensors must match except in dimension {}: expected size {} "
                  "but got size {} for tensor number {} in the list (shapes {} and {})",
                  d, ref->size(j), t.size(j), i, shape_str(ref->sizes()), shape_str(t.sizes()));
    }
    sizes[d] += t.size(d);
  }
  Tensor out = empty(sizes, {dtype, device});
  {
    autograd::NoGradGuard below_autograd;
    int64_t offset = 0;
    for (const Tensor& t : tensors) {
      if (skipped(t)) continue;
      if (t.numel() > 0) out.narrow(d, offset, t.size(d)).copy_(t);
      offset += t.size(d);
    }
  }
  return cat_record(tensors, std::move(out), d);
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (!tensors.empty()) EMBER_AUTOCAST(Promote, stack, tensors.front(), tensors, dim);
  EMBER_CHECK(!tensors.empty(), "[stack] expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK_TYPE(tensors[i].defined(), "[stack] tensor number {} in the list is undefined", i);
    EMBER_CHECK(tensors[i].sizes() == tensors[0].sizes(),
                "[stack] expects each tensor to be equal size, but got {} at entry 0 and {} at "
                "entry {}",
                shape_str(tensors[0].sizes()), shape_str(tensors[i].sizes()), i);
  }
  const int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> views;
  views.reserve(tensors.size());
  for (const Tensor& t : tensors) views.push_back(t.unsqueeze(d));
  return cat(views, d);
}

// Note [Pieces of an empty tensor]
// split and chunk return one view per piece. For a tensor holding data the count is bounded by
// its element count, but an empty tensor can have a dim of 2^40 (next to a 0) or be cut into
// any number of empty chunks: past this many pieces the list could never be built, so it is an
// error rather than std::bad_alloc.
constexpr int64_t kMaxEmptyChunks = int64_t{1} << 20;

std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t dim) {
  EMBER_CHECK_TYPE(x.defined(), "[split] undefined tensor argument");
  EMBER_CHECK(x.dim() > 0, "[split] expects at least a 1-dimensional tensor");
  const int64_t d = wrap_dim(dim, x.dim(), "split");
  const int64_t n = x.size(d);
  EMBER_CHECK(size >= 0, "[split] split size must be non-negative: got {}", size);
  EMBER_CHECK(size > 0 || n == 0,
              "[split] split size can only be 0 if dim {} has size 0: its size is {}", d, n);
  if (n == 0) return {x};
  std::vector<Tensor> out;
  const int64_t pieces = n / size + (n % size != 0);  // n + size - 1 may overflow
  EMBER_CHECK(x.numel() > 0 || pieces <= kMaxEmptyChunks,
              "[split] {} pieces of the empty tensor of shape {} exceed the {} that can be listed",
              pieces, shape_str(x.sizes()), kMaxEmptyChunks);
  out.reserve(static_cast<size_t>(pieces));
  // Counted by piece: start + size after the last piece may overflow (n, size near 2^63).
  for (int64_t i = 0; i < pieces; ++i) {
    const int64_t start = i * size;  // < n
    out.push_back(x.narrow(d, start, std::min(size, n - start)));
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, IntList sizes, int64_t dim) {
  EMBER_CHECK_TYPE(x.defined(), "[split] undefined tensor argument");
  EMBER_CHECK(x.dim() > 0, "[split] expects at least a 1-dimensional tensor");
  const int64_t d = wrap_dim(dim, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0, "[split] split sizes must be non-negative: got {}", shape_str(sizes));
    EMBER_CHECK(
        !__builtin_add_overflow(total, s, &total),
        "[split] split sizes {} must sum to the size {} of dim {}: their sum overflows int64",
        shape_str(sizes), x.size(d), d);
  }
  EMBER_CHECK(total == x.size(d), "[split] split sizes {} must sum to the size {} of dim {}",
              shape_str(sizes), x.size(d), d);
  std::vector<Tensor> out;
  out.reserve(sizes.size());
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(x.narrow(d, start, s));
    start += s;
  }
  return out;
}

// Note [One node for the slices of unbind]
// x.select(dim, i) for every i would record n select nodes, and the gradient of each is a
// zero-filled tensor of x's whole shape with one slice written in, summed into x's gradient: n^2
// work in the backward (seven times PyTorch's LSTM at 128 steps, when nn::GRU walked its
// sequence that way). unbind makes the views without recording and records one node, with an
// output per slice, whose backward stacks their gradients (the engine fills the slices that got
// none with zeros), as PyTorch's UnbindBackward. The slices are marked as views of x, so an
// in-place write into one goes through CopySlices on x, as for any view.
std::vector<Tensor> unbind(const Tensor& x, int64_t dim) {
  EMBER_CHECK_TYPE(x.defined(), "[unbind] undefined tensor argument");
  const int64_t d = wrap_dim(dim, x.dim(), "unbind");  // a 0-d tensor has no dim to unbind
  const int64_t n = x.size(d);
  // Note [Pieces of an empty tensor]
  EMBER_CHECK(x.numel() > 0 || n <= kMaxEmptyChunks,
              "[unbind] {} slices of the empty tensor of shape {} exceed the {} that can be listed",
              n, shape_str(x.sizes()), kMaxEmptyChunks);
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(n));
  {
    autograd::NoGradGuard below_autograd;
    for (int64_t i = 0; i < n; ++i) out.push_back(x.select(d, i));
  }
  for (Tensor& t : out) autograd::mark_view(t, x);  // made in the caller's grad mode
  if (out.empty() || !autograd::needs_grad(x)) return out;
  std::vector<Tensor*> views;
  for (Tensor& t : out) views.push_back(&t);
  autograd::record_views("UnbindBackward", x, views,
                         [d](const std::vector<Tensor>& g, const autograd::LambdaNode&) {
                           return std::vector<Tensor>{stack(g, d)};
                         });
  return out;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  EMBER_CHECK_TYPE(x.defined(), "[chunk] undefined tensor argument");
  EMBER_CHECK(x.dim() > 0, "[chunk] expects at least a 1-dimensional tensor");
  EMBER_CHECK(chunks > 0, "[chunk] number of chunks must be positive: got {}", chunks);
  const int64_t d = wrap_dim(dim, x.dim(), "chunk");
  const int64_t n = x.size(d);
  // Like PyTorch: chunks of ceil(n / chunks), so there may be fewer than `chunks` of them;
  // an empty dim gives `chunks` empty views.
  if (n == 0) {
    // Note [Pieces of an empty tensor]
    EMBER_CHECK(chunks <= kMaxEmptyChunks,
                "[chunk] {} chunks of the empty dim {} exceed the {} that can be listed", chunks, d,
                kMaxEmptyChunks);
    return split(x, std::vector<int64_t>(static_cast<size_t>(chunks), 0), d);
  }
  return split(x, n / chunks + (n % chunks != 0), d);  // n + chunks - 1 may overflow
}

std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest,
                                bool sorted) {
  EMBER_CHECK_TYPE(x.defined(), "[topk] undefined tensor argument");
  if (x.dim() == 0) {
    wrap_dim(dim, 1, "topk");
    EMBER_CHECK(k == 0 || k == 1, "[topk] k ({}) is out of range for a 0-d tensor", k);
    auto [v, i] = [&] {
      autograd::NoGradGuard below_autograd;
      return topk(x.unsqueeze(0), k, 0, largest, sorted);
    }();
    Tensor values = k == 1 ? v.reshape({}) : v;
    record_ordering("TopkBackward", "topk", x, 0, values, i);
    return {values, k == 1 ? i.reshape({}) : i};
  }
  const int64_t d = wrap_dim(dim, x.dim(), "topk");
  EMBER_CHECK(k >= 0 && k <= x.size(d), "[topk] k ({}) is out of range for dim {} of size {}", k, d,
              x.size(d));
  auto [values, indices] = [&] {
    autograd::NoGradGuard below_autograd;
    return ordering_kernel(
        attrs::topk{.k = k, .largest = largest ? 1 : 0, .sorted = sorted ? 1 : 0}, x, d, k);
  }();
  record_ordering("TopkBackward", "topk", x, d, values, indices);
  return {values, indices};
}

std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending) {
  EMBER_CHECK_TYPE(x.defined(), "[sort] undefined tensor argument");
  if (x.dim() == 0) {
    wrap_dim(dim, 1, "sort");
    auto [v, i] = [&] {
      autograd::NoGradGuard below_autograd;
      return sort(x.unsqueeze(0), 0, descending);
    }();
    Tensor values = v.reshape({});
    record_ordering("SortBackward", "sort", x, 0, values, i);
    return {values, i.reshape({})};
  }
  const int64_t d = wrap_dim(dim, x.dim(), "sort");
  auto [values, indices] = [&] {
    autograd::NoGradGuard below_autograd;
    return ordering_kernel(attrs::sort{.descending = descending ? 1 : 0}, x, d, x.size(d));
  }();
  record_ordering("SortBackward", "sort", x, d, values, indices);
  return {values, indices};
}

// ---- Diagonals, grids and repeats -------------------------------------------------------------

Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  EMBER_CHECK_TYPE(x.defined(), "[diagonal] undefined tensor argument");
  const int64_t d1 = wrap_dim(dim1, x.dim(), "diagonal"), d2 = wrap_dim(dim2, x.dim(), "diagonal");
  EMBER_CHECK(d1 != d2, "[diagonal] dim1 and dim2 must differ: both are {}", d1);
  const int64_t n1 = x.size(d1), n2 = x.size(d2);
  const int64_t len =
      std::max<int64_t>(0, offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2));
  Shape sizes, strides;
  for (int64_t i = 0; i < x.dim(); ++i) {
    if (i == d1 || i == d2) continue;
    sizes.push_back(x.size(i));
    strides.push_back(x.stride(i));
  }
  sizes.push_back(len);
  strides.push_back(x.stride(d1) + x.stride(d2));
  const int64_t start =
      len == 0 ? 0 : (offset >= 0 ? offset * x.stride(d2) : -offset * x.stride(d1));
  return x.as_strided(sizes, strides, x.storage_offset() + start);
}

// Note [diag_embed without a kernel]
// The n elements v_i of a row go to the flat positions i (m + 1) + start of an m x m matrix
// (m = n + |offset|; start = offset above the diagonal, -offset * m below): each element followed
// by m zeros, shifted by start zeros and cut (or padded) to m * m, is that matrix. cat, narrow
// and views only, so every dtype, backend and gradient comes with them.
Tensor diag_embed(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  EMBER_CHECK_TYPE(x.defined(), "[diag_embed] undefined tensor argument");
  const int64_t nd = x.dim() + 1;
  const int64_t d1 = wrap_dim(dim1, nd, "diag_embed"), d2 = wrap_dim(dim2, nd, "diag_embed");
  EMBER_CHECK(d1 != d2, "[diag_embed] dim1 and dim2 must differ: both are {}", d1);
  const Tensor v = x.dim() == 0 ? x.reshape({1}) : x;
  const int64_t n = v.size(-1);
  const int64_t k = offset < 0 ? -offset : offset;
  const int64_t m = n + k;
  const TensorOptions opts{x.dtype(), x.device()};
  auto with_last = [&](std::initializer_list<int64_t> last) {
    Shape s;
    for (int64_t i = 0; i + 1 < v.dim(); ++i) s.push_back(v.size(i));
    for (int64_t l : last) s.push_back(l);
    return s;
  };
  Tensor flat = cat({v.unsqueeze(-1), zeros(with_last({n, m}), opts)}, -1).flatten(-2, -1);
  const int64_t start = offset >= 0 ? offset : k * m;
  if (start > 0) flat = cat({zeros(with_last({start}), opts), flat}, -1);
  const int64_t len = flat.size(-1);
  if (len > m * m) {
    flat = flat.narrow(-1, 0, m * m);
  } else if (len < m * m) {
    flat = cat({flat, zeros(with_last({m * m - len}), opts)}, -1);
  }
  const Tensor square = flat.reshape(with_last({m, m}));
  // The two new dims go to d1 (rows) and d2 (columns); the batch dims keep their order.
  Shape order;
  int64_t next = 0;
  for (int64_t i = 0; i < nd; ++i) order.push_back(i == d1 ? nd - 2 : i == d2 ? nd - 1 : next++);
  return square.permute(order);
}

Tensor diag(const Tensor& x, int64_t diagonal_) {
  EMBER_CHECK_TYPE(x.defined(), "[diag] undefined tensor argument");
  EMBER_CHECK(x.dim() == 1 || x.dim() == 2,
              "[diag] supports 1-d or 2-d tensors: got {}-d (shape {})", x.dim(),
              shape_str(x.sizes()));
  if (x.dim() == 1) return diag_embed(x, diagonal_);
  return diagonal(x, diagonal_).clone();
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, std::string_view indexing) {
  EMBER_CHECK(indexing == "ij" || indexing == "xy",
              "[meshgrid] indexing must be 'ij' or 'xy': got '{}'", indexing);
  EMBER_CHECK(!tensors.empty(), "[meshgrid] expects a non-empty list of tensors");
  Shape shape;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    EMBER_CHECK_TYPE(t.defined(), "[meshgrid] undefined tensor argument");
    EMBER_CHECK(t.dim() <= 1, "[meshgrid] expects 0-d or 1-d tensors: tensor {} has {} dims", i,
                t.dim());
    EMBER_CHECK_TYPE(t.dtype() == tensors[0].dtype() && t.device() == tensors[0].device(),
                     "[meshgrid] expects all tensors to have one dtype and device: got {} on {} "
                     "and {} on {}",
                     tensors[0].dtype(), tensors[0].device(), t.dtype(), t.device());
    shape.push_back(t.numel());
  }
  // "xy" is "ij" with the first two dims swapped (NumPy's default).
  const bool swap = indexing == "xy" && tensors.size() >= 2;
  if (swap) std::swap(shape[0], shape[1]);
  std::vector<Tensor> out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    size_t at = i;
    if (swap && i < 2) at = 1 - i;
    Shape view(tensors.size(), 1);
    view[at] = shape[at];
    out.push_back(tensors[i].reshape(view).expand(shape));
  }
  return out;
}

Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first, double padding_value,
                    std::string_view padding_side) {
  EMBER_CHECK(!sequences.empty(), "[pad_sequence] received an empty list of sequences");
  EMBER_CHECK(padding_side == "right" || padding_side == "left",
              "[pad_sequence] padding_side must be 'left' or 'right': got '{}'", padding_side);
  const Tensor& first = sequences[0];
  int64_t longest = 0;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const Tensor& s = sequences[i];
    EMBER_CHECK_TYPE(s.defined(), "[pad_sequence] sequence {} is undefined", i);
    EMBER_CHECK(s.dim() >= 1, "[pad_sequence] sequence {} is 0-d: sequences are [L, *]", i);
    EMBER_CHECK(s.dim() == first.dim() &&
                    std::equal(s.sizes().begin() + 1, s.sizes().end(), first.sizes().begin() + 1),
                "[pad_sequence] sequences must share their trailing shape: {} vs {} (sequence {})",
                shape_str(first.sizes()), shape_str(s.sizes()), i);
    EMBER_CHECK_TYPE(s.dtype() == first.dtype() && s.device() == first.device(),
                     "[pad_sequence] sequences must share dtype and device: {} on {} vs {} on {}",
                     first.dtype(), first.device(), s.dtype(), s.device());
    longest = std::max(longest, s.size(0));
  }
  std::vector<Tensor> padded;
  padded.reserve(sequences.size());
  for (const Tensor& s : sequences) {
    Shape fill_shape = s.sizes();
    fill_shape[0] = longest - s.size(0);
    if (fill_shape[0] == 0) {
      padded.push_back(s);
      continue;
    }
    const Tensor fill = full(fill_shape, padding_value, TensorOptions(s.dtype(), s.device()));
    padded.push_back(padding_side == "right" ? cat({s, fill}, 0) : cat({fill, s}, 0));
  }
  return stack(padded, batch_first ? 0 : 1);
}

std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors) {
  Shape shape;
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK_TYPE(tensors[i].defined(), "[broadcast_tensors] tensor {} is undefined", i);
    shape = broadcast_shapes(shape, tensors[i].sizes(), "broadcast_tensors");
  }
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) out.push_back(t.expand(shape));
  return out;
}

namespace {
Tensor triangle_indices(const char* name, int64_t row, int64_t col, int64_t offset,
                        TensorOptions opts, bool lower) {
  EMBER_CHECK(row >= 0 && col >= 0, "[{}] row and col must be non-negative: got {} and {}", name,
              row, col);
  EMBER_CHECK_TYPE(is_integral(opts.dtype) || is_floating(opts.dtype),
                   "[{}] dtype must be numeric: got {}", name, opts.dtype);
  std::vector<int64_t> rows, cols;
  for (int64_t i = 0; i < row; ++i) {
    // Columns j with j - i <= offset (lower) or >= offset (upper), clamped to [0, col).
    const int64_t lo = lower ? 0 : std::clamp<int64_t>(i + offset, 0, col);
    const int64_t hi = lower ? std::clamp<int64_t>(i + offset + 1, 0, col) : col;
    for (int64_t j = lo; j < hi; ++j) {
      rows.push_back(i);
      cols.push_back(j);
    }
  }
  const int64_t n = static_cast<int64_t>(rows.size());
  rows.insert(rows.end(), cols.begin(), cols.end());
  return from_vector(rows, {2, n}, opts);
}
}  // namespace

Tensor tril_indices(int64_t row, int64_t col, int64_t offset, TensorOptions opts) {
  return triangle_indices("tril_indices", row, col, offset, opts, true);
}
Tensor triu_indices(int64_t row, int64_t col, int64_t offset, TensorOptions opts) {
  return triangle_indices("triu_indices", row, col, offset, opts, false);
}

namespace {
void check_output_size(std::optional<int64_t> output_size, int64_t size) {
  EMBER_CHECK(!output_size || *output_size == size,
              "[repeat_interleave] output_size {} does not match the required size {}",
              output_size.value_or(0), size);
}
}  // namespace

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  EMBER_CHECK_TYPE(x.defined(), "[repeat_interleave] undefined tensor argument");
  EMBER_CHECK(repeats >= 0, "[repeat_interleave] repeats can not be negative: got {}", repeats);
  const Tensor in = !dim ? x.reshape({-1}) : x.dim() == 0 ? x.reshape({1}) : x;
  const int64_t d = wrap_dim(dim.value_or(0), in.dim(), "repeat_interleave");
  check_output_size(output_size, in.size(d) * repeats);
  Shape expanded = in.sizes();
  expanded.insert(static_cast<size_t>(d + 1), repeats);
  return in.unsqueeze(d + 1).expand(expanded).flatten(d, d + 1);
}

Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size) {
  EMBER_CHECK_TYPE(repeats.defined(), "[repeat_interleave] undefined tensor argument");
  EMBER_CHECK_TYPE(repeats.dtype() == DType::Int64 || repeats.dtype() == DType::Int32,
                   "[repeat_interleave] repeats must be an int64 or int32 tensor: got {}",
                   repeats.dtype());
  EMBER_CHECK(repeats.dim() <= 1, "[repeat_interleave] repeats must be 0-d or 1-d: got shape {}",
              shape_str(repeats.sizes()));
  const Tensor r = repeats.reshape({-1}).to(DType::Int64).to(Device::cpu()).contiguous();
  const int64_t* p = r.data_ptr<int64_t>();
  std::vector<int64_t> index;
  for (int64_t i = 0; i < r.numel(); ++i) {
    EMBER_CHECK(p[i] >= 0, "[repeat_interleave] repeats can not be negative: got {} at index {}",
                p[i], i);
    index.insert(index.end(), static_cast<size_t>(p[i]), i);
  }
  const int64_t n = static_cast<int64_t>(index.size());
  check_output_size(output_size, n);
  return from_vector(index, {n}, TensorOptions(DType::Int64, repeats.device()));
}

Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  EMBER_CHECK_TYPE(x.defined() && repeats.defined(),
                   "[repeat_interleave] undefined tensor argument");
  const Tensor in = !dim ? x.reshape({-1}) : x.dim() == 0 ? x.reshape({1}) : x;
  const int64_t d = wrap_dim(dim.value_or(0), in.dim(), "repeat_interleave");
  const int64_t n = in.size(d);
  // One count for every slice, or one count for all (PyTorch broadcasts a one-element repeats).
  EMBER_CHECK(repeats.numel() == n || repeats.numel() == 1,
              "[repeat_interleave] repeats must have the same size as input along dim {}: got {} "
              "repeats for size {}",
              d, repeats.numel(), n);
  const Tensor r = repeats.numel() == n ? repeats.reshape({n}) : repeats.reshape({1}).expand({n});
  return index_select(in, d, repeat_interleave(r, output_size));
}

// ---- In-place and reducing index ops ----------------------------------------------------------
// Note [index_add, index_copy and index_fill through scatter]
// The index_* ops name slices along dim by a 1-d index; the scatter ops name single elements by
// an index of src's shape. Broadcasting the index over source's shape turns the first into the
// second, so index_add is scatter_add, index_copy scatter, and their gradients are theirs. The
// indices are range-checked here first, so the error names the op that was called.

namespace {
// A 1-d int64 index (from an int32 or int64 one of at most 1 dim), every value in [0, size).
Tensor checked_slice_index(const Tensor& index, int64_t size, const char* name) {
  EMBER_CHECK_TYPE(index.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK_TYPE(index.dtype() == DType::Int64 || index.dtype() == DType::Int32,
                   "[{}] index must be an int64 or int32 tensor: got {}", name, index.dtype());
  EMBER_CHECK(index.dim() <= 1, "[{}] index must be 0-d or 1-d: got shape {}", name,
              shape_str(index.sizes()));
  const Tensor idx = index.reshape({-1}).to(DType::Int64);
  if (idx.numel() > 0) {
    const int64_t lo = amin(idx).item<int64_t>(), hi = amax(idx).item<int64_t>();
    const int64_t bad = lo < 0 ? lo : hi;
    EMBER_CHECK_INDEX(lo >= 0 && hi < size,
                      "[{}] index {} is out of bounds for dimension with size {}", name, bad, size);
  }
  return idx;
}

struct SliceIndex {
  int64_t dim;
  Tensor index;  // of source's shape, stride 0 outside dim
};

// The checks of index_add / index_copy: source has x's shape but index.numel() along dim.
SliceIndex slice_index(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                       const char* name) {
  EMBER_CHECK_TYPE(x.defined() && source.defined(), "[{}] undefined tensor argument", name);
  const int64_t nd = std::max<int64_t>(x.dim(), 1);
  const int64_t d = wrap_dim(dim, nd, name);
  const Tensor xs = x.dim() == 0 ? x.reshape({1}) : x;
  const Tensor idx = checked_slice_index(index, xs.size(d), name);
  const Tensor src = source.dim() == 0 ? source.reshape({1}) : source;
  EMBER_CHECK_TYPE(source.dtype() == x.dtype(),
                   "[{}] source must have the dtype of the input {}: got {}", name, x.dtype(),
                   source.dtype());
  Shape want = xs.sizes();
  want[d] = idx.numel();
  EMBER_CHECK(src.sizes() == want,
              "[{}] source of shape {} must have the input's shape {} with index's {} elements "
              "along dim {} (expected {})",
              name, shape_str(source.sizes()), shape_str(x.sizes()), idx.numel(), d,
              shape_str(want));
  Shape view(want.size(), 1);
  view[d] = idx.numel();
  return {d, idx.reshape(view).expand(want)};
}

// x and source as the scatter ops see them (1-d for a 0-d x), and back.
Tensor as_1d(const Tensor& t) {
  return t.dim() == 0 ? t.reshape({1}) : t;
}
Tensor like_input(const Tensor& r, const Tensor& x) {
  return x.dim() == 0 ? r.reshape({}) : r;
}
}  // namespace

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                 Scalar alpha) {
  const SliceIndex si = slice_index(x, dim, index, source, "index_add");
  EMBER_CHECK_TYPE(is_floating(x.dtype()) || !alpha.is_floating(),
                   "[index_add] for integral input tensors, alpha must not be a floating point "
                   "number: got {}",
                   alpha.to_double());
  const bool one = !alpha.is_floating() && alpha.to_int() == 1;
  const Tensor src = as_1d(one ? source : mul(source, alpha).to(x.dtype()));
  return like_input(scatter_add(as_1d(x), si.dim, si.index, src), x);
}
Tensor& index_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                   Scalar alpha) {
  return apply_inplace(x, "index_add_",
                       [&](const Tensor& v) { return index_add(v, dim, index, source, alpha); });
}

Tensor index_copy(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source) {
  const SliceIndex si = slice_index(x, dim, index, source, "index_copy");
  return like_input(scatter(as_1d(x), si.dim, si.index, as_1d(source)), x);
}
Tensor& index_copy_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& source) {
  return apply_inplace(x, "index_copy_",
                       [&](const Tensor& v) { return index_copy(v, dim, index, source); });
}

Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& value) {
  EMBER_CHECK_TYPE(x.defined() && value.defined(), "[index_fill] undefined tensor argument");
  EMBER_CHECK(value.dim() == 0, "[index_fill] only supports a 0-d value tensor: got shape {}",
              shape_str(value.sizes()));
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "index_fill");
  const Tensor xs = as_1d(x);
  const Tensor idx = checked_slice_index(index, xs.size(d), "index_fill");
  // A bool mask of the filled slices along d, broadcast over the other dims.
  const TensorOptions bools{DType::Bool, x.device()};
  Tensor mask = scatter(zeros({xs.size(d)}, bools), 0, idx, ones({idx.numel()}, bools));
  Shape view(static_cast<size_t>(xs.dim()), 1);
  view[d] = xs.size(d);
  const Tensor filled = where(mask.reshape(view), value.to(x.dtype()), xs);
  return like_input(filled, x);
}
Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, Scalar value) {
  EMBER_CHECK_TYPE(x.defined(), "[index_fill] undefined tensor argument");
  check_scalar_fits(value, x.dtype(), "index_fill");
  return index_fill(x, dim, index, detail::scalar_tensor(value, x.dtype(), x.device()));
}
Tensor& index_fill_(Tensor& x, int64_t dim, const Tensor& index, Scalar value) {
  return apply_inplace(x, "index_fill_",
                       [&](const Tensor& v) { return index_fill(v, dim, index, value); });
}
Tensor& index_fill_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& value) {
  return apply_inplace(x, "index_fill_",
                       [&](const Tensor& v) { return index_fill(v, dim, index, value); });
}

Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return apply_inplace(x, "scatter_", [&](const Tensor& v) { return scatter(v, dim, index, src); });
}
Tensor& scatter_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return apply_inplace(x, "scatter_add_",
                       [&](const Tensor& v) { return scatter_add(v, dim, index, src); });
}

// Note [scatter_reduce without a kernel]
// "sum" and "mean" are scatter_add (mean divides by the count of values each place got, x's own
// included or not). "prod", "amax" and "amin" reduce the values bound for each place first: each
// value's flat destination in x is gather(arange(numel).view(x's shape), dim, index); a stable
// sort groups the values by destination; an inclusive scan within the groups (Hillis-Steele:
// combine with the value s places back where it has the same destination, s = 1, 2, 4, ...,
// until s passes the longest group) leaves each group's result at its end; those, one per
// destination, are combined with x's value (include_self) and scattered. Every step is a public
// op: prod gets its exact gradient (zeros included) through them. For amax and amin the gradient
// is PyTorch's: shared evenly among the values equal to the result (x's own value included when
// it took part), not the halving at every tie that the maximum()s of the scan would give.
namespace {
Tensor scatter_reduce_forward(const Tensor& x, int64_t d, const Tensor& index, const Tensor& src,
                              std::string_view reduce, bool include_self) {
  const TensorOptions longs{DType::Int64, x.device()};
  const Tensor dest = gather(arange(x.numel(), longs).view(x.sizes()), d, index).reshape({-1});
  Tensor vals = src;
  for (int64_t i = 0; i < src.dim(); ++i) vals = vals.narrow(i, 0, index.size(i));
  vals = vals.reshape({-1});
  const auto [sorted_dest, perm] = sort(dest);
  Tensor v = index_select(vals, 0, perm);
  const int64_t n = v.numel();
  auto combine = [&](const Tensor& a, const Tensor& b) {
    return reduce == "prod" ? mul(a, b) : reduce == "amax" ? maximum(a, b) : minimum(a, b);
  };
  // The longest group bounds the number of scan steps.
  const Tensor starts =
      nonzero(cat({ones({1}, {DType::Bool, x.device()}),
                   ne(sorted_dest.narrow(0, 1, n - 1), sorted_dest.narrow(0, 0, n - 1))}))
          .reshape({-1});
  const Tensor ends = cat({starts.narrow(0, 1, starts.numel() - 1), full({1}, n, longs)});
  const int64_t longest = amax(sub(ends, starts)).item<int64_t>();
  for (int64_t s = 1; s < longest; s *= 2) {
    const Tensor same = eq(sorted_dest.narrow(0, s, n - s), sorted_dest.narrow(0, 0, n - s));
    const Tensor tail = v.narrow(0, s, n - s);
    v = cat({v.narrow(0, 0, s), where(same, combine(tail, v.narrow(0, 0, n - s)), tail)});
  }
  const Tensor last = sub(ends, 1);
  const Tensor places = index_select(sorted_dest, 0, last);
  Tensor result = index_select(v, 0, last);
  const Tensor flat = x.reshape({-1});
  if (include_self) result = combine(index_select(flat, 0, places), result);
  return scatter(flat, 0, places, result).view(x.sizes());
}

// PyTorch's gradient of amax / amin (Note [scatter_reduce without a kernel]).
Tensor scatter_extremum(const Tensor& x, int64_t d, const Tensor& index, const Tensor& src,
                        std::string_view reduce, bool include_self) {
  return differentiable(
      reduce == "amax" ? "ScatterReduceAmaxBackward" : "ScatterReduceAminBackward",
      "scatter_reduce", {&x, &src},
      [&] { return scatter_reduce_forward(x, d, index, src, reduce, include_self); },
      [&] {
        return [sx = SavedTensor(x), ss = SavedTensor(src), si = SavedTensor(index), d,
                include_self](const Grads& g, const LambdaNode& self) {
          const Tensor x = self.unpack(sx), src = self.unpack(ss), index = self.unpack(si);
          const Tensor out = self.saved_output(0);
          Tensor vals = src;
          for (int64_t i = 0; i < src.dim(); ++i) vals = vals.narrow(i, 0, index.size(i));
          const Tensor src_hit = eq(vals, gather(out, d, index)).to(g[0].dtype());
          const Tensor written = gt(scatter_add(zeros_like(g[0]), d, index, ones_like(src_hit)), 0);
          const Tensor self_hit = include_self ? eq(x, out).to(g[0].dtype()) : zeros_like(g[0]);
          const Tensor count = scatter_add(self_hit, d, index, src_hit);
          const Tensor share = div(g[0], where(gt(count, 0), count, ones_like(count)));
          const Tensor gx = where(written, mul(share, self_hit), g[0]);
          const Tensor gsrc = pad_to_src(mul(gather(share, d, index), src_hit), src.sizes());
          return Grads{gx, gsrc};
        };
      },
      /*save_output=*/true);
}
}  // namespace

// index_reduce is scatter_reduce with the index of each slice repeated over the slice: index[k]
// laid along dim and expanded to source's shape.
Tensor index_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                    std::string_view reduce, bool include_self) {
  EMBER_CHECK_TYPE(x.defined() && index.defined() && source.defined(),
                   "[index_reduce] undefined tensor argument");
  EMBER_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
              "[index_reduce] reduce must be one of 'prod', 'mean', 'amax' or 'amin': got '{}'",
              reduce);
  check_index_dtype(index, "index_reduce");
  EMBER_CHECK(index.dim() <= 1, "[index_reduce] index must be 1-d: got shape {}",
              shape_str(index.sizes()));
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "index_reduce");
  EMBER_CHECK(source.dim() == x.dim(),
              "[index_reduce] source must have as many dims as input: got {} and {}", source.dim(),
              x.dim());
  if (x.dim() == 0) return scatter_reduce(x, 0, index.reshape({}), source, reduce, include_self);
  EMBER_CHECK(source.size(d) == index.numel(),
              "[index_reduce] source needs one slice per index along dim {}: got {} slices and {} "
              "indices",
              d, source.size(d), index.numel());
  for (int64_t k = 0; k < x.dim(); ++k) {
    EMBER_CHECK(k == d || source.size(k) == x.size(k),
                "[index_reduce] source must have input's size in dims other than {}: got {} "
                "for {}",
                d, shape_str(source.sizes()), shape_str(x.sizes()));
  }
  std::vector<int64_t> laid(x.dim(), 1);
  laid[d] = index.numel();
  const Tensor expanded = index.reshape(laid).expand(source.sizes());
  return scatter_reduce(x, d, expanded, source, reduce, include_self);
}

Tensor& index_reduce_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                      std::string_view reduce, bool include_self) {
  return apply_inplace(x, "index_reduce_", [&](const Tensor& v) {
    return index_reduce(v, dim, index, source, reduce, include_self);
  });
}

Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                      std::string_view reduce, bool include_self) {
  EMBER_CHECK_TYPE(x.defined() && index.defined() && src.defined(),
                   "[scatter_reduce] undefined tensor argument");
  EMBER_CHECK(reduce == "sum" || reduce == "prod" || reduce == "mean" || reduce == "amax" ||
                  reduce == "amin",
              "[scatter_reduce] reduce must be one of 'sum', 'prod', 'mean', 'amax' or 'amin': "
              "got '{}'",
              reduce);
  if (x.dim() == 0) {
    return scatter_reduce(x.reshape({1}), 0, as_1d(index), as_1d(src), reduce, include_self)
        .reshape({});
  }
  const int64_t d = wrap_dim(dim, x.dim(), "scatter_reduce");
  // scatter_add's checks, and the range of every index, under this op's name.
  check_index_dtype(index, "scatter_reduce");
  EMBER_CHECK_TYPE(src.dtype() == x.dtype(),
                   "[scatter_reduce] src must have the dtype of the input {}: got {}", x.dtype(),
                   src.dtype());
  EMBER_CHECK(index.dim() == x.dim() && src.dim() == x.dim(),
              "[scatter_reduce] index and src must have the input's number of dims {}: got {} "
              "and {}",
              x.dim(), index.dim(), src.dim());
  for (int64_t i = 0; i < x.dim(); ++i) {
    EMBER_CHECK(index.size(i) <= src.size(i) && (i == d || index.size(i) <= x.size(i)),
                "[scatter_reduce] index sizes {} must not exceed src sizes {}, nor input sizes {} "
                "outside dim {}",
                shape_str(index.sizes()), shape_str(src.sizes()), shape_str(x.sizes()), d);
  }
  if (index.numel() == 0) return x.clone();
  {
    // scatter and scatter_add range-check every index themselves: this read only words the
    // error as scatter_reduce's (Note [Host reads in a capture]).
    capture::Suppress check_only;
    checked_slice_index(index.reshape({-1}), x.size(d), "scatter_reduce");
  }
  const TensorOptions opts{x.dtype(), x.device()};
  if (reduce == "sum" || reduce == "mean") {
    // x with the places written to zeroed when its own values take no part.
    const Tensor base = include_self ? x : scatter(x, d, index, zeros(index.sizes(), opts));
    const Tensor total = scatter_add(base, d, index, src);
    if (reduce == "sum") return total;
    Tensor count = scatter_add(include_self ? ones_like(x) : zeros_like(x), d, index,
                               ones(index.sizes(), opts));
    count = where(eq(count, 0), ones_like(count), count);
    // Integers divide rounding down, as PyTorch's mean does for them.
    return is_floating(x.dtype()) ? div(total, count) : div(total, count, "floor");
  }
  // Composed of a sort and a scan: the op whole for a capture's consumer (ONNX's
  // ScatterElements with a reduction; Note [Composite ops in a capture]).
  capture::Composite region(fmt::format("scatter_reduce_{}", reduce), {&x, &index, &src},
                            {d, include_self ? 1 : 0});
  Tensor out = reduce == "prod" ? scatter_reduce_forward(x, d, index, src, reduce, include_self)
                                : scatter_extremum(x, d, index, src, reduce, include_self);
  region.finish({&out});
  return out;
}
Tensor& scatter_reduce_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                        std::string_view reduce, bool include_self) {
  return apply_inplace(x, "scatter_reduce_", [&](const Tensor& v) {
    return scatter_reduce(v, dim, index, src, reduce, include_self);
  });
}

Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source) {
  EMBER_CHECK_TYPE(x.defined() && mask.defined() && source.defined(),
                   "[masked_scatter] undefined tensor argument");
  EMBER_CHECK_TYPE(mask.dtype() == DType::Bool, "[masked_scatter] mask must be bool: got {}",
                   mask.dtype());
  EMBER_CHECK_TYPE(source.dtype() == x.dtype(),
                   "[masked_scatter] source must have the dtype of the input {}: got {}", x.dtype(),
                   source.dtype());
  const Shape shape = broadcast_shapes(x.sizes(), mask.sizes(), "masked_scatter");
  EMBER_CHECK(shape == x.sizes(),
              "[masked_scatter] mask of shape {} does not broadcast to the input's shape {}",
              shape_str(mask.sizes()), shape_str(x.sizes()));
  const Tensor places = nonzero(mask.expand(shape).reshape({-1})).reshape({-1});
  const int64_t k = places.numel();
  EMBER_CHECK(source.numel() >= k,
              "[masked_scatter] source has {} elements but the mask selects {} (it needs at "
              "least as many)",
              source.numel(), k);
  const Tensor values = source.reshape({-1}).narrow(0, 0, k);
  return scatter(x.reshape({-1}), 0, places, values).view(x.sizes());
}
Tensor& masked_scatter_(Tensor& x, const Tensor& mask, const Tensor& source) {
  return apply_inplace(x, "masked_scatter_",
                       [&](const Tensor& v) { return masked_scatter(v, mask, source); });
}

// Note [flip and roll as one gather per dim]
// flip reads position n - 1 - i along each dim it names, roll position (i - shift) mod n. Each
// is one index_select per dim through an int64 index made on x's device (arange, then the map),
// so both run on every backend and differentiate through index_select. A 0-d tensor flips and
// rolls onto itself (Note [Dims of a 0-d tensor]); the result is always a new tensor.
namespace {

/** arange(n) on `device`, int64. */
Tensor positions(int64_t n, Device device) {
  return arange(Scalar(int64_t{0}), Scalar(n), Scalar(int64_t{1}),
                TensorOptions(DType::Int64, device));
}

}  // namespace

Tensor flip(const Tensor& x, IntList dims) {
  EMBER_CHECK_TYPE(x.defined(), "[flip] undefined input");
  std::vector<int64_t> seen;
  Tensor r = x;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, std::max<int64_t>(x.dim(), 1), "flip");
    EMBER_CHECK(std::find(seen.begin(), seen.end(), w) == seen.end(),
                "[flip] dim {} appears more than once in dims {}", w, shape_str(dims));
    seen.push_back(w);
    if (x.dim() == 0) continue;
    const int64_t n = x.size(w);
    r = index_select(r, w,
                     arange(Scalar(n - 1), Scalar(int64_t{-1}), Scalar(int64_t{-1}),
                            TensorOptions(DType::Int64, x.device())));
  }
  return r.is_same(x) ? x.clone() : r;
}

Tensor roll(const Tensor& x, IntList shifts, IntList dims) {
  EMBER_CHECK_TYPE(x.defined(), "[roll] undefined input");
  if (dims.empty()) {  // the flattened tensor, rolled, in x's shape
    EMBER_CHECK(shifts.size() == 1, "[roll] without dims, shifts must be one value: got {}",
                shape_str(shifts));
    const int64_t flat[] = {0};
    return roll(x.reshape({-1}), shifts, IntList(flat, 1)).view(x.sizes());
  }
  EMBER_CHECK(shifts.size() == dims.size(),
              "[roll] shifts and dims must have as many values: got {} shifts for {} dims",
              shifts.size(), dims.size());
  Tensor r = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], std::max<int64_t>(x.dim(), 1), "roll");
    if (x.dim() == 0 || x.size(d) == 0) continue;
    const int64_t n = x.size(d), s = ((shifts[i] % n) + n) % n;
    if (s != 0) r = index_select(r, d, remainder(add(positions(n, x.device()), n - s), n));
  }
  return r.is_same(x) ? x.clone() : r;
}

Tensor repeat(const Tensor& x, IntList repeats) {
  EMBER_CHECK_TYPE(x.defined(), "[repeat] undefined input");
  EMBER_CHECK(static_cast<int64_t>(repeats.size()) >= x.dim(),
              "[repeat] number of repeats ({}) can not be smaller than the number of dims ({})",
              repeats.size(), x.dim());
  for (int64_t r : repeats)
    EMBER_CHECK(r >= 0, "[repeat] repeats must be >= 0: got {}", shape_str(repeats));
  // x's shape padded with 1s on the left, a repeat dim before each dim, expanded, merged.
  const size_t lead = repeats.size() - static_cast<size_t>(x.dim());
  Shape padded(lead, 1);
  for (int64_t s : x.sizes()) padded.push_back(s);
  Shape inter, expanded, out;
  for (size_t i = 0; i < repeats.size(); ++i) {
    inter.push_back(1);
    inter.push_back(padded[i]);
    expanded.push_back(repeats[i]);
    expanded.push_back(padded[i]);
    out.push_back(repeats[i] * padded[i]);
  }
  return x.reshape(inter).expand(expanded).reshape(out);
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value) {
  return scatter(x, dim, index, full(index.sizes(), value, TensorOptions(x.dtype(), x.device())));
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  const Shape shape = broadcast_shapes(x.sizes(), mask.sizes(), "masked_select");
  const Tensor flat = x.expand(shape).reshape({-1});
  return index_select(flat, 0, nonzero(mask.expand(shape).reshape({-1})).reshape({-1}));
}

Tensor movedim(const Tensor& x, IntList source, IntList destination) {
  EMBER_CHECK(source.size() == destination.size(),
              "[movedim] source and destination have {} and {} dims", source.size(),
              destination.size());
  // Note [Dims of a 0-d tensor]: a 0-d tensor moves dim 0 / -1 onto itself.
  const int64_t n = x.dim();
  std::vector<int64_t> order(static_cast<size_t>(n), -1);
  std::vector<bool> used(static_cast<size_t>(n), false);
  for (size_t i = 0; i < source.size(); ++i) {
    const int64_t s = wrap_dim(source[i], std::max<int64_t>(n, 1), "movedim");
    const int64_t d = wrap_dim(destination[i], std::max<int64_t>(n, 1), "movedim");
    if (n == 0) continue;
    EMBER_CHECK(order[d] == -1 && !used[s], "[movedim] repeated dim: source {}, destination {}",
                source[i], destination[i]);
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
}

namespace {

/** `dims` wrapped against x and sorted from the last, so squeezing one leaves the others'
 *  positions. */
Shape squeeze_dims(const Tensor& x, IntList dims, const char* name) {
  Shape ds;
  for (int64_t d : dims) ds.push_back(wrap_dim(d, std::max<int64_t>(x.dim(), 1), name));
  std::sort(ds.begin(), ds.end(), std::greater<>());
  return ds;
}

}  // namespace

Tensor squeeze(const Tensor& x, IntList dims) {
  if (dims.empty()) return x.squeeze();
  Tensor r = x;
  for (int64_t d : squeeze_dims(x, dims, "squeeze")) r = r.squeeze(d);
  return r;
}

Tensor& squeeze_(Tensor& x, IntList dims) {
  if (dims.empty()) return x.squeeze_();
  for (int64_t d : squeeze_dims(x, dims, "squeeze_")) x.squeeze_(d);
  return x;
}

Tensor unflatten(const Tensor& x, int64_t dim, IntList sizes) {
  const int64_t d = wrap_dim(dim, x.dim(), "unflatten");
  Shape s;
  for (int64_t i = 0; i < x.dim(); ++i) {
    if (i != d) {
      s.push_back(x.size(i));
      continue;
    }
    for (int64_t v : sizes) s.push_back(v);
  }
  return x.view(s);
}

Tensor hstack(const std::vector<Tensor>& tensors) {
  return cat(tensors, !tensors.empty() && tensors[0].dim() == 1 ? 0 : 1);
}

Tensor vstack(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> rows;
  for (const Tensor& t : tensors) rows.push_back(t.dim() == 1 ? t.unsqueeze(0) : t);
  return cat(rows, 0);
}

}  // namespace ember
