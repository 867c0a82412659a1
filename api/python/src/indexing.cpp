// Tensor.__getitem__ and Tensor.__setitem__ with PyTorch's (NumPy's) semantics.
#include <optional>
#include <vector>

#include "bind.h"
#include "ember/ops/indexing.h"

namespace ember::python {

// Note [Indexing from Python]
// The binding translates an index into the core's items and calls ember::index / index_put_,
// which hold every rule (Note [Indexing] in core/ops/indexing.cpp): a tuple is a list of items (a
// lone item is a list of one); None, ..., True/False, ints (and objects with __index__) and
// slices map one to one; ember tensors, Python lists and buffers (NumPy arrays) become index
// tensors, an empty list an int64 one. A slice's ends are read as they are written (a missing end
// stays missing), so the core applies Python's clamping once for every front end.

namespace {

using indexing::TensorIndex;

bool is_index_tensor_like(nb::handle item) {
  return nb::isinstance<PyTensor>(item) || PyList_Check(item.ptr()) ||
         (PyObject_CheckBuffer(item.ptr()) && !PyBytes_Check(item.ptr()));
}

/** An int64 from a Python integer (or __index__), as an IndexError when it does not fit. */
int64_t index_integer(nb::handle item) {
  nb::object i = nb::steal(PyNumber_Index(item.ptr()));
  if (!i.is_valid()) throw nb::python_error();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  EMBER_CHECK_INDEX(!overflow, "[index] index {} is out of bounds (it does not fit in 64 bits)",
                    nb::cast<std::string>(nb::str(i)));
  return v;
}

std::optional<int64_t> slice_end(PyObject* o) {
  if (o == Py_None) return std::nullopt;
  // Ends beyond int64 clamp like any end past the dim.
  nb::object i = nb::steal(PyNumber_Index(o));
  if (!i.is_valid()) throw nb::python_error();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow) return overflow > 0 ? INT64_MAX : INT64_MIN;
  return v;
}

TensorIndex to_item(nb::handle item) {
  PyObject* o = item.ptr();
  if (o == Py_None) return indexing::None;
  if (o == Py_Ellipsis) return indexing::Ellipsis;
  if (PyBool_Check(o)) return o == Py_True;
  if (PyLong_Check(o)) return index_integer(item);
  if (PySlice_Check(o)) {
    auto* sl = reinterpret_cast<PySliceObject*>(o);
    const std::optional<int64_t> step = slice_end(sl->step);
    EMBER_CHECK(!step || *step != 0, "[index] slice step cannot be zero");
    return indexing::Slice(slice_end(sl->start), slice_end(sl->stop), step.value_or(1));
  }
  if (nb::isinstance<PyTensor>(item)) return Tensor(*nb::inst_ptr<PyTensor>(item));
  if (PyRange_Check(o)) {  // a sequence of integers, as PyTorch reads it: x[range(2, 5)]
    const auto attr = [&](const char* name) { return nb::cast<int64_t>(item.attr(name)); };
    return arange(attr("start"), attr("stop"), attr("step"),
                  TensorOptions(DType::Int64, Device::cpu()));
  }
  if (is_index_tensor_like(item)) {
    Tensor t = tensor_from_data(item, std::nullopt, Device::cpu());
    if (PyList_Check(o) && t.numel() == 0) t = t.to(DType::Int64);
    return t;
  }
  if (PyIndex_Check(o)) return index_integer(item);
  throw IndexError(fmt::format(
      "[index] only integers, slices (':'), ellipsis ('...'), None and long or bool tensors "
      "are valid indices (got {})",
      nb::cast<std::string>(nb::str(item.type().attr("__name__")))));
}

std::vector<TensorIndex> to_items(nb::handle index) {
  std::vector<TensorIndex> items;
  if (nb::isinstance<nb::tuple>(index)) {
    for (nb::handle item : nb::borrow<nb::tuple>(index)) items.push_back(to_item(item));
  } else {
    items.push_back(to_item(index));
  }
  return items;
}

Tensor getitem(const Tensor& self, nb::handle index) {
  const std::vector<TensorIndex> items = to_items(index);
  GilRelease release;
  return ember::index(self, items);
}

void setitem(Tensor& self, nb::handle index, nb::handle value) {
  const std::vector<TensorIndex> items = to_items(index);
  if (nb::isinstance<PyTensor>(value)) {
    const Tensor src = *nb::inst_ptr<PyTensor>(value);
    GilRelease release;
    index_put_(self, items, src);
    return;
  }
  PyScalar s;
  if (nb::try_cast<PyScalar>(value, s)) {
    GilRelease release;
    index_put_(self, items, Scalar(s));
    return;
  }
  const Tensor src = tensor_from_data(value, self.dtype(), self.device());
  GilRelease release;
  index_put_(self, items, src);
}

}  // namespace

void bind_indexing(nb::class_<PyTensor>& cls) {
  cls.def("__getitem__", &getitem, nb::arg("index").none(),
          "Indexing with PyTorch's rules (a view for basic indices).");
  cls.def("__setitem__", &setitem, nb::arg("index").none(), nb::arg("value").none(),
          "Assigns value (a tensor or number, broadcast) to the indexed elements, in place.");
}

}  // namespace ember::python
