// Tensor.__getitem__ and Tensor.__setitem__ with PyTorch's (NumPy's) semantics.
#include <algorithm>

#include "bind.h"

namespace ember::python {

// Note [Indexing from Python]
// An index is a tuple of items (a lone item is a tuple of one). Basic items make a view in one
// pass: an int selects (removing the dim), a slice slices (steps must be positive, as in
// PyTorch), None inserts a size-1 dim, ... stands for as many full slices as the other items
// leave, and True/False insert a dim of size 1/0. Integer tensors, Python lists and bool tensors
// are advanced items: a bool tensor over k dims becomes its k columns of nonzero(). The advanced
// indices broadcast to one shape B; if they sit in adjacent dims, B replaces those dims in place,
// otherwise B leads the result (NumPy's rule). The advanced part is computed with differentiable
// public ops: the indexed dims are moved first and merged, the broadcast indices are combined
// into one linear index (negatives wrapped, every index bounds-checked against its own dim, so a
// wrong index can't alias a valid position), and index_select picks the rows. Assignment writes
// through the same view: basic indexing then copy_ (or fill_), advanced indexing a scatter into
// the merged rows that is copied back into the view.

namespace {

/** One advanced index: the dim of the (basic-indexed) view it applies to and its indices. */
struct Advanced {
  int64_t dim;
  Tensor index;  // int64, on the tensor's device
};

struct Indexed {
  Tensor view;                     // after the basic items
  std::vector<Advanced> advanced;  // in dim order
};

bool is_index_tensor_like(nb::handle item) {
  return nb::isinstance<PyTensor>(item) || PyList_Check(item.ptr()) ||
         (PyObject_CheckBuffer(item.ptr()) && !PyBytes_Check(item.ptr()));
}

Tensor index_tensor(nb::handle item, const Tensor& self) {
  Tensor t = nb::isinstance<PyTensor>(item) ? Tensor(*nb::inst_ptr<PyTensor>(item))
                                            : tensor_from_data(item, std::nullopt, std::nullopt);
  if (PyList_Check(item.ptr()) && t.numel() == 0) t = t.to(DType::Int64);
  EMBER_CHECK_INDEX(is_integral(t.dtype()) || t.dtype() == DType::Bool,
                    "[index] tensors used as indices must be long, int, byte or bool tensors, "
                    "got {}",
                    t.dtype());
  if (t.device() != self.device()) t = t.to(self.device());
  return t;
}

/** How many dims of the tensor an item consumes. */
int64_t consumed(nb::handle item) {
  if (item.is_none() || item.ptr() == Py_Ellipsis || PyBool_Check(item.ptr())) return 0;
  if (nb::isinstance<PyTensor>(item)) {
    const Tensor& t = *nb::inst_ptr<PyTensor>(item);
    return t.dtype() == DType::Bool || t.dtype() == DType::UInt8 ? std::max<int64_t>(t.dim(), 0)
                                                                 : 1;
  }
  return 1;
}

Indexed apply_basic(const Tensor& self, nb::handle index) {
  nb::tuple items =
      nb::isinstance<nb::tuple>(index) ? nb::borrow<nb::tuple>(index) : nb::make_tuple(index);
  int64_t used = 0;
  bool ellipsis = false;
  for (nb::handle item : items) {
    if (item.ptr() == Py_Ellipsis) {
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
  for (nb::handle item : items) {
    PyObject* o = item.ptr();
    if (o == Py_None) {
      r.view = r.view.unsqueeze(dim);
      ++dim;
    } else if (o == Py_Ellipsis) {
      dim += self.dim() - used;
    } else if (PyBool_Check(o)) {
      r.view = r.view.unsqueeze(dim);
      if (o == Py_False) r.view = r.view.slice(dim, 0, 0);
      ++dim;
    } else if (PyLong_Check(o)) {
      const int64_t size = r.view.size(dim);
      int overflow = 0;
      const long long i = PyLong_AsLongLongAndOverflow(o, &overflow);
      EMBER_CHECK_INDEX(!overflow && i >= -size && i < size,
                        "[index] index {} is out of bounds for dimension {} with size {}",
                        nb::cast<std::string>(nb::str(item)), dim, size);
      r.view = r.view.select(dim, i);
    } else if (PySlice_Check(o)) {
      Py_ssize_t start = 0, stop = 0, step = 0;
      if (PySlice_Unpack(o, &start, &stop, &step) != 0) throw nb::python_error();
      EMBER_CHECK(step > 0, "[index] step must be greater than zero, got {}", step);
      const Py_ssize_t size = static_cast<Py_ssize_t>(r.view.size(dim));
      PySlice_AdjustIndices(size, &start, &stop, step);
      if (stop < start) stop = start;
      r.view = r.view.slice(dim, start, stop, step);
      ++dim;
    } else if (is_index_tensor_like(item)) {
      Tensor t = index_tensor(item, self);
      if (t.dtype() == DType::Bool || t.dtype() == DType::UInt8) {
        const Tensor mask = t.to(DType::Bool);
        for (int64_t k = 0; k < mask.dim(); ++k) {
          EMBER_CHECK_INDEX(mask.size(k) == r.view.size(dim + k),
                            "[index] the shape of the mask {} at index {} does not match the "
                            "shape of the indexed tensor {} at index {}",
                            shape_str(mask.sizes()), k, shape_str(r.view.sizes()), dim + k);
        }
        if (mask.dim() == 0) {  // x[True-tensor]: like x[True]
          r.view = r.view.unsqueeze(dim);
          r.advanced.push_back({dim, nonzero(mask.unsqueeze(0)).select(1, 0)});
          ++dim;
          continue;
        }
        const Tensor nz = nonzero(mask);
        for (int64_t k = 0; k < mask.dim(); ++k) r.advanced.push_back({dim + k, nz.select(1, k)});
        dim += mask.dim();
      } else {
        r.advanced.push_back({dim, t.to(DType::Int64)});
        ++dim;
      }
    } else if (PyIndex_Check(o)) {
      nb::object i = nb::steal(PyNumber_Index(o));
      if (!i.is_valid()) throw nb::python_error();
      const int64_t size = r.view.size(dim);
      const int64_t v = nb::cast<int64_t>(i);
      EMBER_CHECK_INDEX(v >= -size && v < size,
                        "[index] index {} is out of bounds for dimension {} with size {}", v, dim,
                        size);
      r.view = r.view.select(dim, v);
    } else {
      throw IndexError(fmt::format(
          "[index] only integers, slices (':'), ellipsis ('...'), None and long or bool tensors "
          "are valid indices (got {})",
          nb::cast<std::string>(nb::str(item.type().attr("__name__")))));
    }
  }
  return r;
}

/** The advanced part's plan: the permutation that moves the indexed dims first, the broadcast
 *  index shape, the linear index into the merged dims, and where B goes in the result. */
struct Plan {
  Shape perm;         // advanced dims first, in order, then the rest
  Shape rest_sizes;   // sizes of the other dims, in order
  int64_t merged;     // product of the advanced dims' sizes
  Shape b;            // broadcast shape of the indices
  Tensor linear;      // int64, shape b, into the merged dims
  int64_t insert_at;  // where B goes in the result (0 unless the advanced dims are adjacent)
  int64_t before;     // non-advanced dims before the first advanced one
};

Plan plan(const Tensor& v, const std::vector<Advanced>& adv) {
  Plan p;
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
  // The linear index, every index checked against its own dim.
  Tensor linear;
  p.merged = 1;
  for (const Advanced& a : adv) p.merged *= v.size(a.dim);
  int64_t stride = p.merged;
  for (const Advanced& a : adv) {
    const int64_t size = v.size(a.dim);
    stride /= std::max<int64_t>(size, 1);
    Tensor idx = a.index;
    if (idx.numel() > 0) {
      const int64_t hi = amax(idx).item<int64_t>(), lo = amin(idx).item<int64_t>();
      EMBER_CHECK_INDEX(hi < size && lo >= -size,
                        "[index] index {} is out of bounds for dimension {} with size {}",
                        hi >= size ? hi : lo, a.dim, size);
      if (lo < 0) idx = where(lt(idx, 0), add(idx, size), idx);
    }
    Tensor term = stride == 1 ? idx : mul(idx, stride);
    linear = linear.defined() ? add(linear, term) : term;
  }
  p.linear = linear.expand(b).contiguous();
  return p;
}

/** The rows picked by an advanced plan, shaped as the result of the index. */
Tensor gather_advanced(const Tensor& v, const Plan& p) {
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

Tensor getitem(const Tensor& self, nb::handle index) {
  // Fast paths: x[i] and x[a:b].
  if (PyLong_Check(index.ptr()) && !PyBool_Check(index.ptr()) && self.dim() > 0) {
    int overflow = 0;
    const long long i = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    const int64_t size = self.size(0);
    EMBER_CHECK_INDEX(!overflow && i >= -size && i < size,
                      "[index] index {} is out of bounds for dimension 0 with size {}",
                      nb::cast<std::string>(nb::str(index)), size);
    return self.select(0, i);
  }
  Indexed r = apply_basic(self, index);
  // x[...] and x[()] are new views of the same data, as in PyTorch.
  if (r.advanced.empty()) return r.view.is_same(self) ? self.unsqueeze(0).squeeze(0) : r.view;
  nb::gil_scoped_release release;
  if (r.advanced.size() == 1 && r.advanced[0].index.dim() == 1) {
    const Advanced& a = r.advanced[0];
    const int64_t size = r.view.size(a.dim);
    Tensor idx = a.index;
    if (idx.numel() > 0) {
      const int64_t lo = amin(idx).item<int64_t>(), hi = amax(idx).item<int64_t>();
      EMBER_CHECK_INDEX(lo >= -size && hi < size,
                        "[index] index {} is out of bounds for dimension {} with size {}",
                        hi >= size ? hi : lo, a.dim, size);
      if (lo < 0) idx = where(lt(idx, 0), add(idx, size), idx);
    }
    return index_select(r.view, a.dim, idx);
  }
  const Plan p = plan(r.view, r.advanced);
  return gather_advanced(r.view, p);
}

void setitem(Tensor& self, nb::handle index, nb::handle value) {
  Tensor src;
  Scalar scalar;
  const bool is_tensor = nb::isinstance<PyTensor>(value);
  if (is_tensor) {
    src = *nb::inst_ptr<PyTensor>(value);
  } else {
    PyScalar s;
    if (nb::try_cast<PyScalar>(value, s)) {
      scalar = s;
    } else {
      src = tensor_from_data(value, self.dtype(), self.device());
    }
  }
  const bool use_tensor = src.defined();
  // Note [Assigning a value with history]: writing a value that requires grad into a tensor that
  // does not (out = zeros(...); out[t] = h) must give the tensor that history, but the core
  // tracks views only of tensors that require grad, so a write through a view would not reach
  // it. The write is made out of place instead: the flat positions the index selects (the
  // index applied to an arange of the tensor's positions) receive the value by a differentiable
  // scatter, and the result is copied into the tensor, which takes over its history.
  if (use_tensor && src.requires_grad() && !self.requires_grad() && autograd::is_grad_enabled()) {
    Tensor positions = arange(Scalar(int64_t{0}), Scalar(self.numel()), Scalar(int64_t{1}),
                              TensorOptions(DType::Int64, self.device()))
                           .view(self.sizes());
    const Tensor picked = getitem(positions, index);
    nb::gil_scoped_release release;
    const Tensor values = src.to(self.dtype()).to(self.device()).expand(picked.sizes());
    const Tensor flat = scatter(self.reshape({-1}), 0, picked.reshape({-1}), values.reshape({-1}));
    self.copy_(flat.view(self.sizes()));
    return;
  }
  // x[mask] = number with a mask of x's shape: one masked_fill_.
  if (!use_tensor && nb::isinstance<PyTensor>(index)) {
    const Tensor& mask = *nb::inst_ptr<PyTensor>(index);
    if (mask.dtype() == DType::Bool && mask.sizes() == self.sizes()) {
      nb::gil_scoped_release release;
      masked_fill_(self, mask, scalar);
      return;
    }
  }
  Indexed r = apply_basic(self, index);
  nb::gil_scoped_release release;
  if (r.advanced.empty()) {
    Tensor view = r.view;
    if (use_tensor) {
      view.copy_(src);
    } else {
      view.fill_(scalar);
    }
    return;
  }
  const Plan p = plan(r.view, r.advanced);
  // The value, broadcast to the result's shape and brought to [B..., rest...].
  Shape result_shape;
  {
    Shape b_rest = p.b;
    for (int64_t s : p.rest_sizes) b_rest.push_back(s);
    if (p.insert_at == 0) {
      result_shape = b_rest;
    } else {
      for (int64_t i = 0; i < p.before; ++i) result_shape.push_back(p.rest_sizes[i]);
      for (int64_t s : p.b) result_shape.push_back(s);
      for (size_t i = static_cast<size_t>(p.before); i < p.rest_sizes.size(); ++i)
        result_shape.push_back(p.rest_sizes[i]);
    }
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
  Tensor rows = permuted.reshape(merged_shape);
  Shape idx_shape{count};
  for (size_t i = 0; i < p.rest_sizes.size(); ++i) idx_shape.push_back(1);
  const Tensor idx = p.linear.reshape(idx_shape).expand(rows_shape);
  const Tensor updated = scatter(rows, 0, idx, v);
  permuted.copy_(updated.view(permuted.sizes()));
}

}  // namespace

void bind_indexing(nb::class_<PyTensor>& cls) {
  cls.def("__getitem__", &getitem, nb::arg("index").none(),
          "Indexing with PyTorch's rules (a view for basic indices).");
  cls.def("__setitem__", &setitem, nb::arg("index").none(), nb::arg("value").none(),
          "Assigns value (a tensor or number, broadcast) to the indexed elements, in place.");
}

}  // namespace ember::python
