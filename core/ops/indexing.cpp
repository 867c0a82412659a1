// x[items] and x[items] = value with PyTorch's (NumPy's) rules, for C++ and for every front end.
#include "ember/ops/indexing.h"

#include <algorithm>
#include <vector>

#include "ember/autograd/grad_mode.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/reduce.h"
#include "ember/util/error.h"

namespace ember {
namespace {

using indexing::Slice;
using indexing::TensorIndex;

// Note [Indexing]
// An index is a list of items. Basic items make a view in one pass: an integer selects
// (removing the dim), a slice slices (steps must be positive, as in PyTorch), None inserts a
// size-1 dim, Ellipsis stands for as many full slices as the other items leave, and true/false
// insert a dim of size 1/0. Integer tensors and bool tensors are advanced items: a bool tensor
// over k dims becomes its k columns of nonzero(). The advanced indices broadcast to one shape B;
// if they sit in adjacent dims, B replaces those dims in place, otherwise B leads the result
// (NumPy's rule). The advanced part is computed with differentiable public ops: the indexed dims
// are moved first and merged, the broadcast indices are combined into one linear index
// (negatives wrapped, every index bounds-checked against its own dim, so a wrong index can't
// alias a valid position), and index_select picks the rows. Assignment writes through the same
// view: basic indexing then copy_ (or fill_), advanced indexing a scatter into the merged rows
// that is copied back into the view; a value that requires grad thus gives the tensor its
// history (Note [Views see their base's history] in core/autograd/record.cpp). Front ends translate
// their syntax into items and hold no rule of their own (the Python binding: Note [Indexing from
// Python] in api/python/src/indexing.cpp).

/** One advanced index: the dim of the (basic-indexed) view it applies to and its indices. */
struct Advanced {
  int64_t dim;
  Tensor index;  // int64, on the tensor's device
};

struct Indexed {
  Tensor view;                     // after the basic items
  std::vector<Advanced> advanced;  // in dim order
};

bool is_mask(const Tensor& t) {
  return t.dtype() == DType::Bool || t.dtype() == DType::UInt8;
}

/** How many dims of the tensor an item consumes. */
int64_t consumed(const TensorIndex& item) {
  if (item.is_none() || item.is_ellipsis() || item.is_bool()) return 0;
  if (item.is_tensor()) {
    EMBER_CHECK_TYPE(item.tensor().defined(), "[index] an index tensor is undefined");
    return is_mask(item.tensor()) ? item.tensor().dim() : 1;
  }
  return 1;
}

int64_t checked_position(int64_t i, int64_t dim, int64_t size) {
  EMBER_CHECK_INDEX(i >= -size && i < size,
                    "[index] index {} is out of bounds for dimension {} with size {}", i, dim,
                    size);
  return i < 0 ? i + size : i;
}

/** Python's slice.indices() for a positive step: both ends wrapped and clamped to [0, size]. */
Tensor apply_slice(const Tensor& v, int64_t dim, const Slice& s) {
  EMBER_CHECK(s.step > 0, "[index] step must be greater than zero, got {}", s.step);
  const int64_t size = v.size(dim);
  const auto clamp_end = [size](std::optional<int64_t> e, int64_t missing) {
    if (!e) return missing;
    int64_t i = *e;
    if (i < 0) i = std::max<int64_t>(i + size, 0);
    return std::min(i, size);
  };
  const int64_t start = clamp_end(s.start, 0);
  const int64_t stop = std::max(clamp_end(s.stop, size), start);
  return v.slice(dim, start, stop, s.step);
}

Indexed apply_basic(const Tensor& self, std::span<const TensorIndex> items) {
  EMBER_CHECK_TYPE(self.defined(), "[index] the indexed tensor is undefined");
  int64_t used = 0;
  bool ellipsis = false;
  for (const TensorIndex& item : items) {
    if (item.is_ellipsis()) {
      EMBER_CHECK_INDEX(!ellipsis, "[index] an index can only have a single ellipsis ('...')");
      ellipsis = true;
    }
    used += consumed(item);
  }
  EMBER_CHECK_INDEX(used <= self.dim(),
                    "[index] too many indices for tensor of dimension {} ({} given)", self.dim(),
                    used);
  Indexed r{self, {}};
  int64_t dim = 0;
  for (const TensorIndex& item : items) {
    if (item.is_none()) {
      r.view = r.view.unsqueeze(dim);
      ++dim;
    } else if (item.is_ellipsis()) {
      dim += self.dim() - used;
    } else if (item.is_bool()) {
      r.view = r.view.unsqueeze(dim);
      if (!item.boolean()) r.view = r.view.slice(dim, 0, 0);
      ++dim;
    } else if (item.is_integer()) {
      r.view = r.view.select(dim, checked_position(item.integer(), dim, r.view.size(dim)));
    } else if (item.is_slice()) {
      r.view = apply_slice(r.view, dim, item.slice());
      ++dim;
    } else {
      Tensor t = item.tensor();
      EMBER_CHECK_INDEX(is_integral(t.dtype()) || t.dtype() == DType::Bool,
                        "[index] tensors used as indices must be long, int, byte or bool tensors, "
                        "got {}",
                        t.dtype());
      if (t.device() != self.device()) t = t.to(self.device());
      if (!is_mask(t)) {
        r.advanced.push_back({dim, t.to(DType::Int64)});
        ++dim;
        continue;
      }
      const Tensor mask = t.to(DType::Bool);
      for (int64_t k = 0; k < mask.dim(); ++k) {
        EMBER_CHECK_INDEX(mask.size(k) == r.view.size(dim + k),
                          "[index] the shape of the mask {} at index {} does not match the shape "
                          "of the indexed tensor {} at index {}",
                          shape_str(mask.sizes()), k, shape_str(r.view.sizes()), dim + k);
      }
      if (mask.dim() == 0) {  // x[true-tensor]: like x[true], as an advanced index
        r.view = r.view.unsqueeze(dim);
        r.advanced.push_back({dim, nonzero(mask.unsqueeze(0)).select(1, 0)});
        ++dim;
        continue;
      }
      const Tensor nz = nonzero(mask);
      for (int64_t k = 0; k < mask.dim(); ++k) r.advanced.push_back({dim + k, nz.select(1, k)});
      dim += mask.dim();
    }
  }
  return r;
}

/** `idx` with every entry checked against a dim of `size` and negatives wrapped. */
Tensor wrapped(const Tensor& idx, int64_t dim, int64_t size) {
  if (idx.numel() == 0) return idx;
  const int64_t hi = amax(idx).item<int64_t>(), lo = amin(idx).item<int64_t>();
  EMBER_CHECK_INDEX(hi < size && lo >= -size,
                    "[index] index {} is out of bounds for dimension {} with size {}",
                    hi >= size ? hi : lo, dim, size);
  return lo < 0 ? where(lt(idx, 0), add(idx, size), idx) : idx;
}

/** The advanced part's plan: the permutation that moves the indexed dims first, the broadcast
 *  index shape, the linear index into the merged dims, and where B goes in the result. */
struct AdvancedPlan {
  Shape perm;         // advanced dims first, in order, then the rest
  Shape rest_sizes;   // sizes of the other dims, in order
  int64_t merged;     // product of the advanced dims' sizes
  Shape b;            // broadcast shape of the indices
  Tensor linear;      // int64, shape b, into the merged dims
  int64_t insert_at;  // where B goes in the result (0 unless the advanced dims are adjacent)
  int64_t before;     // non-advanced dims before the first advanced one
};

AdvancedPlan plan_advanced(const Tensor& v, const std::vector<Advanced>& adv) {
  AdvancedPlan p;
  Shape b = adv[0].index.sizes();
  for (size_t i = 1; i < adv.size(); ++i) b = broadcast_shapes(b, adv[i].index.sizes(), "index");
  p.b = b;
  bool adjacent = true;
  for (size_t i = 1; i < adv.size(); ++i) adjacent = adjacent && adv[i].dim == adv[i - 1].dim + 1;
  std::vector<bool> is_adv(static_cast<size_t>(v.dim()), false);
  for (const Advanced& a : adv) {
    p.perm.push_back(a.dim);
    is_adv[static_cast<size_t>(a.dim)] = true;
  }
  p.before = 0;
  for (int64_t d = 0; d < v.dim(); ++d) {
    if (is_adv[static_cast<size_t>(d)]) continue;
    p.perm.push_back(d);
    p.rest_sizes.push_back(v.size(d));
    if (d < adv[0].dim) ++p.before;
  }
  p.insert_at = adjacent ? p.before : 0;
  Tensor linear;
  p.merged = 1;
  for (const Advanced& a : adv) p.merged *= v.size(a.dim);
  int64_t stride = p.merged;
  for (const Advanced& a : adv) {
    const int64_t size = v.size(a.dim);
    stride /= std::max<int64_t>(size, 1);
    const Tensor idx = wrapped(a.index, a.dim, size);
    Tensor term = stride == 1 ? idx : mul(idx, stride);
    linear = linear.defined() ? add(linear, term) : term;
  }
  p.linear = linear.expand(b).contiguous();
  return p;
}

/** The rows picked by an advanced plan, shaped as the result of the index. */
Tensor gather_advanced(const Tensor& v, const AdvancedPlan& p) {
  Shape merged_shape{p.merged};
  for (int64_t s : p.rest_sizes) merged_shape.push_back(s);
  const Tensor rows = v.permute(p.perm).reshape(merged_shape);
  Tensor picked = index_select(rows, 0, p.linear.reshape({-1}));
  Shape out_shape = p.b;
  for (int64_t s : p.rest_sizes) out_shape.push_back(s);
  picked = picked.view(out_shape);  // [B..., rest...]
  if (p.insert_at == 0) return picked;
  // Move B after the `before` leading dims: [rest_before..., B..., rest_after...].
  const int64_t nb_dims = static_cast<int64_t>(p.b.size());
  Shape order;
  for (int64_t i = 0; i < p.before; ++i) order.push_back(nb_dims + i);
  for (int64_t i = 0; i < nb_dims; ++i) order.push_back(i);
  for (int64_t i = nb_dims + p.before; i < picked.dim(); ++i) order.push_back(i);
  return picked.permute(order);
}

/** x[items] = value (a tensor, or a number when `src` is undefined). */
void put(Tensor& self, std::span<const TensorIndex> items, const Tensor& src, Scalar scalar) {
  const bool use_tensor = src.defined();
  // x[mask] = number with a mask of x's shape: one masked_fill_.
  if (!use_tensor && items.size() == 1 && items[0].is_tensor() &&
      items[0].tensor().dtype() == DType::Bool && items[0].tensor().sizes() == self.sizes()) {
    masked_fill_(self, items[0].tensor(), scalar);
    return;
  }
  Indexed r = apply_basic(self, items);
  if (r.advanced.empty()) {
    Tensor view = r.view;
    if (use_tensor) {
      view.copy_(src);
    } else {
      view.fill_(scalar);
    }
    return;
  }
  const AdvancedPlan p = plan_advanced(r.view, r.advanced);
  // The value, broadcast to the result's shape and brought to [B..., rest...].
  Shape result_shape;
  if (p.insert_at == 0) {
    result_shape = p.b;
    for (int64_t s : p.rest_sizes) result_shape.push_back(s);
  } else {
    for (int64_t i = 0; i < p.before; ++i) result_shape.push_back(p.rest_sizes[i]);
    for (int64_t s : p.b) result_shape.push_back(s);
    for (size_t i = static_cast<size_t>(p.before); i < p.rest_sizes.size(); ++i)
      result_shape.push_back(p.rest_sizes[i]);
  }
  Tensor v = use_tensor ? src.to(r.view.dtype()).to(r.view.device())
                        : full({}, scalar, TensorOptions(r.view.dtype(), r.view.device()));
  v = v.expand(result_shape);
  if (p.insert_at != 0) {
    const int64_t nb_dims = static_cast<int64_t>(p.b.size());
    Shape order;
    for (int64_t i = 0; i < nb_dims; ++i) order.push_back(p.before + i);
    for (int64_t i = 0; i < p.before; ++i) order.push_back(i);
    for (int64_t i = p.before + nb_dims; i < v.dim(); ++i) order.push_back(i);
    v = v.permute(order);
  }
  const int64_t count = p.linear.numel();
  Shape rows_shape{count};
  for (int64_t s : p.rest_sizes) rows_shape.push_back(s);
  v = v.reshape(rows_shape);
  Shape merged_shape{p.merged};
  for (int64_t s : p.rest_sizes) merged_shape.push_back(s);
  Tensor permuted = r.view.permute(p.perm);
  const Tensor rows = permuted.reshape(merged_shape);
  Shape idx_shape{count};
  for (size_t i = 0; i < p.rest_sizes.size(); ++i) idx_shape.push_back(1);
  const Tensor idx = p.linear.reshape(idx_shape).expand(rows_shape);
  const Tensor updated = scatter(rows, 0, idx, v);
  permuted.copy_(updated.view(permuted.sizes()));
}

}  // namespace

Tensor index(const Tensor& self, std::span<const TensorIndex> items) {
  // Fast path: x[i].
  if (items.size() == 1 && items[0].is_integer() && self.defined() && self.dim() > 0) {
    return self.select(0, checked_position(items[0].integer(), 0, self.size(0)));
  }
  Indexed r = apply_basic(self, items);
  // x[...] and x[()] are new views of the same data, as in PyTorch.
  if (r.advanced.empty()) return r.view.is_same(self) ? self.unsqueeze(0).squeeze(0) : r.view;
  if (r.advanced.size() == 1 && r.advanced[0].index.dim() == 1) {
    const Advanced& a = r.advanced[0];
    return index_select(r.view, a.dim, wrapped(a.index, a.dim, r.view.size(a.dim)));
  }
  return gather_advanced(r.view, plan_advanced(r.view, r.advanced));
}

Tensor& index_put_(Tensor& x, std::span<const TensorIndex> items, const Tensor& value) {
  EMBER_CHECK_TYPE(value.defined(), "[index_put_] the value is undefined");
  put(x, items, value, Scalar());
  return x;
}

Tensor& index_put_(Tensor& x, std::span<const TensorIndex> items, Scalar value) {
  put(x, items, Tensor(), value);
  return x;
}

namespace {

/** index_put's indices as index() items: each tensor, or a full slice where it is undefined. */
std::vector<TensorIndex> items_of(const std::vector<Tensor>& indices) {
  std::vector<TensorIndex> items;
  for (const Tensor& t : indices) items.push_back(t.defined() ? TensorIndex(t) : Slice());
  return items;
}

}  // namespace

// Note [index_put with accumulate]
// Which elements x[indices] reaches, and in which order, is what index() computes; indexing a
// tensor of x's flat positions the same way gives them, laid out as x[indices] is. The values,
// broadcast to that layout, are then added at those positions by index_add, which adds repeated
// positions up (a plain assignment keeps one of them) and is differentiable in x and values.
Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values,
                 bool accumulate) {
  EMBER_CHECK_TYPE(x.defined() && values.defined(), "[index_put] undefined tensor argument");
  EMBER_CHECK_INDEX(static_cast<int64_t>(indices.size()) <= std::max<int64_t>(x.dim(), 1),
                    "[index_put] too many indices for a tensor of {} dims: got {}", x.dim(),
                    indices.size());
  const std::vector<TensorIndex> items = items_of(indices);
  if (!accumulate) {
    Tensor out = x.clone();
    index_put_(out, items, values);
    return out;
  }
  Tensor positions;
  {
    autograd::NoGradGuard no_grad;
    positions =
        index(arange(x.numel(), TensorOptions{DType::Int64, x.device()}).view(x.sizes()), items);
  }
  EMBER_CHECK(broadcast_shapes(values.sizes(), positions.sizes(), "index_put") == positions.sizes(),
              "[index_put] values of shape {} do not broadcast to the indexed shape {}",
              shape_str(values.sizes()), shape_str(positions.sizes()));
  const Tensor v = values.to(x.dtype()).expand(positions.sizes());
  return index_add(x.reshape({-1}), 0, positions.reshape({-1}), v.reshape({-1})).view(x.sizes());
}

Tensor& index_put_(Tensor& x, const std::vector<Tensor>& indices, const Tensor& values,
                   bool accumulate) {
  EMBER_CHECK_TYPE(x.defined(), "[index_put_] undefined tensor argument");
  if (!accumulate) return index_put_(x, items_of(indices), values);
  return apply_inplace(x, "index_put_",
                       [&](const Tensor& v) { return index_put(v, indices, values, true); });
}

}  // namespace ember
