// Tensors to and from the rest of Python: nested lists and numbers (ember.tensor), NumPy arrays
// without copying (ember.from_numpy, Tensor.numpy), DLPack both ways (__dlpack__,
// ember.from_dlpack), and the casters for sizes, numbers and dtypes.
#include <dlpack/dlpack.h>
#include <nanobind/ndarray.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "bind.h"
#include "ember/ops/nested_data.h"

namespace ember::python {
namespace {

// Note [DLPack 1.0 in Python]
// The Python protocol of the array API standard (`__dlpack__(max_version=...)`) exchanges
// DLPack 1.0's versioned capsules ("dltensor_versioned") or 0.x's ("dltensor"); the tensors in
// them are the core's (Note [One DLPack] in core/ops/dlpack.cpp). Export answers with the newest
// format the consumer says it reads (max_version (1, x): versioned, otherwise 0.x); import reads
// either. A capsule is renamed "used_..." (so its destructor leaves it alone) only once the
// tensor owns it: one refused by a check keeps its name, and its destructor frees it.
constexpr const char* kVersionedName = "dltensor_versioned";
constexpr const char* kUnversionedName = "dltensor";

/** A capsule's destructor: deletes the export unless a consumer took it (renamed it used_*). */
template <typename Managed>
void capsule_destructor(PyObject* capsule) {
  const char* name =
      std::is_same_v<Managed, DLManagedTensorVersioned> ? kVersionedName : kUnversionedName;
  if (!PyCapsule_IsValid(capsule, name)) return;  // consumed (renamed), or not ours
  dlpack_delete(static_cast<Managed*>(PyCapsule_GetPointer(capsule, name)));
}

/** `m` in a capsule named `name` that frees it unless consumed. */
template <typename Managed>
nb::object capsule_of(Managed* m, const char* name) {
  PyObject* cap = PyCapsule_New(m, name, &capsule_destructor<Managed>);
  if (!cap) {
    dlpack_delete(m);
    throw nb::python_error();
  }
  return nb::steal(cap);
}

nb::object dlpack_export(const Tensor& t, nb::handle stream, std::optional<nb::tuple> max_version,
                         nb::handle dl_device, std::optional<bool> copy) {
  EMBER_CHECK_TYPE(t.defined(), "[__dlpack__] undefined tensor");
  const std::string_view type = t.device().type_name();
  if (!dl_device.is_none()) {
    auto [dev_type, dev_id] = nb::cast<std::pair<int, int>>(dl_device);
    const int ours = type == "cpu" ? kDLCPU : kDLCUDA;
    EMBER_CHECK(
        dev_type == ours && (type == "cpu" || dev_id == t.device().index),
        "[__dlpack__] dl_device ({}, {}) is not the tensor's device {} (move it with .to())",
        dev_type, dev_id, t.device().str());
  }
  if (type == "cpu") {
    EMBER_CHECK(stream.is_none(), "[__dlpack__] stream must be None for a CPU tensor");
  } else if (type == "cuda") {
    // Note: the consumer's stream is not known to Ember's streams; the queued work is finished
    // before the capsule leaves, which is always correct (if not always the fastest).
    GilRelease release;
    synchronize(t.device());
  }
  Tensor src = t;
  if (copy.value_or(false)) {
    GilRelease release;
    src = t.detach().clone();
  }
  const bool versioned =
      max_version.has_value() && max_version->size() >= 1 && nb::cast<int>((*max_version)[0]) >= 1;
  if (versioned) return capsule_of(to_dlpack_versioned(src), kVersionedName);
  return capsule_of(to_dlpack(src), kUnversionedName);
}

Tensor dlpack_import_capsule(nb::handle capsule) {
  for (const char* name : {kVersionedName, kUnversionedName}) {
    if (!PyCapsule_IsValid(capsule.ptr(), name)) continue;
    void* m = PyCapsule_GetPointer(capsule.ptr(), name);
    Tensor t = name == kVersionedName ? from_dlpack(static_cast<DLManagedTensorVersioned*>(m))
                                      : from_dlpack(static_cast<DLManagedTensor*>(m));
    PyCapsule_SetName(capsule.ptr(),
                      name == kVersionedName ? "used_dltensor_versioned" : "used_dltensor");
    return t;
  }
  throw TypeError(
      "[from_dlpack] expected an object with __dlpack__ or an unconsumed DLPack capsule "
      "('dltensor' or 'dltensor_versioned'); a capsule can be consumed only once");
}

Tensor from_dlpack_object(nb::handle obj) {
  if (PyCapsule_CheckExact(obj.ptr())) return dlpack_import_capsule(obj);
  EMBER_CHECK_TYPE(nb::hasattr(obj, "__dlpack__"),
                   "[from_dlpack] {} has no __dlpack__ method (NumPy arrays, PyTorch tensors "
                   "and other array libraries' arrays do)",
                   nb::cast<std::string>(nb::str(obj.type().attr("__name__"))));
  nb::object capsule;
  try {
    capsule = obj.attr("__dlpack__")("max_version"_a = nb::make_tuple(1, 0));
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    capsule = obj.attr("__dlpack__")();  // a producer older than DLPack 1.0's protocol
  }
  return dlpack_import_capsule(capsule);
}

// --- NumPy and the buffer protocol ----------------------------------------------------------

/** The dtype of a buffer's struct-module format ("<f", "?", "q", ...). */
std::optional<DType> buffer_dtype(const Py_buffer& view) {
  std::string_view f = view.format ? view.format : "B";
  if (!f.empty() && (f[0] == '<' || f[0] == '=' || f[0] == '@' || f[0] == '|')) f.remove_prefix(1);
  if (f.size() != 1) return std::nullopt;
  switch (f[0]) {
    case '?':
      return DType::Bool;
    case 'b':
      return DType::Int8;
    case 'B':
      return DType::UInt8;
    case 'i':
      return view.itemsize == 4 ? std::optional(DType::Int32) : std::nullopt;
    case 'l':
    case 'q':
      return view.itemsize == 8   ? std::optional(DType::Int64)
             : view.itemsize == 4 ? std::optional(DType::Int32)
                                  : std::nullopt;
    case 'e':
      return DType::Float16;
    case 'f':
      return DType::Float32;
    case 'd':
      return DType::Float64;
    default:
      return std::nullopt;
  }
}

}  // namespace

Tensor tensor_from_buffer(nb::handle obj, const char* op, bool* read_only) {
  auto* view = new Py_buffer{};
  bool writable = true;
  if (PyObject_GetBuffer(obj.ptr(), view, PyBUF_RECORDS) != 0) {
    PyErr_Clear();
    writable = false;
    if (PyObject_GetBuffer(obj.ptr(), view, PyBUF_RECORDS_RO) != 0) {
      delete view;
      throw nb::python_error();
    }
  }
  auto release = [view] {
    if (nb::detail::cleanup_guard guard{}) PyBuffer_Release(view);
    delete view;
  };
  try {
    const std::optional<DType> dtype = buffer_dtype(*view);
    EMBER_CHECK_TYPE(
        dtype.has_value(),
        "[{}] can't convert an array of format '{}' (itemsize {}): the supported types "
        "are float64, float32, float16, int64, int32, int8, uint8 and bool",
        op, view->format ? view->format : "B", view->itemsize);
    check_ndim(static_cast<size_t>(view->ndim), op);
    Shape sizes, strides;
    for (int i = 0; i < view->ndim; ++i) {
      sizes.push_back(view->shape[i]);
      const Py_ssize_t s = view->strides ? view->strides[i] : 0;
      EMBER_CHECK(s >= 0,
                  "[{}] at least one stride of the array is negative ({} bytes in dim {}): "
                  "negative strides are not supported (copy the array first, e.g. "
                  "array.copy())",
                  op, s, i);
      EMBER_CHECK(s % view->itemsize == 0,
                  "[{}] stride {} bytes of dim {} is not a multiple of the element size {}", op, s,
                  i, view->itemsize);
      strides.push_back(s / view->itemsize);
    }
    if (!view->strides) strides = contiguous_strides(sizes);
    if (read_only) *read_only = !writable;
    return from_blob(view->buf, sizes, strides, *dtype, [release](void*) { release(); });
  } catch (...) {
    release();
    throw;
  }
}

// Note [Tensors over shared memory]
// ember.multiprocessing sends a CPU tensor between processes as a file descriptor of shared
// memory plus its layout (Note [Tensors between processes] in ember/multiprocessing/
// reductions.py). map_shared maps such a segment (MAP_SHARED) and wraps it without a copy, for
// every dtype; the mapping is unmapped by the tensor's deleter, when the last view of it goes,
// on whatever thread, without the GIL. Python's mmap cannot stand in: it keeps a duplicate of
// the fd open as long as the mapping, and a process may open about a thousand fds while a
// training loop keeps more batches than that. Live mappings are recorded by address, so that
// shared_segment answers is_shared() and finds the segment a tensor lies in; a segment mapped
// with keep_fd owns its fd (closed with the mapping), so that it can be sent on.
struct SharedSegment {
  int64_t size;
  int fd;  // owned, or -1
};
std::mutex g_shared_mu;
std::map<uintptr_t, SharedSegment> g_shared;  // by start address

/** Bytes from a layout's first element to the end of its last (0 without elements). */
int64_t layout_extent(DType dtype, IntList sizes, IntList strides) {
  int64_t last = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return 0;
    last += (sizes[i] - 1) * strides[i];
  }
  return (last + 1) * static_cast<int64_t>(itemsize(dtype));
}

Tensor map_shared(int fd, int64_t size, bool keep_fd, DType dtype, IntList sizes, IntList strides,
                  int64_t offset) {
  constexpr const char* op = "_map_shared";
  EMBER_CHECK(sizes.size() == strides.size(), "[{}] {} sizes but {} strides", op, sizes.size(),
              strides.size());
  check_ndim(sizes.size(), op);
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(sizes[i] >= 0 && strides[i] >= 0,
                "[{}] negative size or stride in dim {}: sizes {} strides {}", op, i,
                shape_str(sizes), shape_str(strides));
  }
  const int64_t item = static_cast<int64_t>(itemsize(dtype));
  EMBER_CHECK(size > 0 && offset >= 0 && offset % item == 0 &&
                  offset + layout_extent(dtype, sizes, strides) <= size,
              "[{}] a {} tensor of sizes {} and strides {} at byte {} does not fit in a "
              "segment of {} bytes",
              op, dtype, shape_str(sizes), shape_str(strides), offset, size);
  void* p = mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  EMBER_CHECK_IO(p != MAP_FAILED, "[{}] mapping {} bytes of fd {} failed: {}", op, size, fd,
                 std::strerror(errno));
  const auto start = reinterpret_cast<uintptr_t>(p);
  {
    std::lock_guard<std::mutex> lock(g_shared_mu);
    g_shared[start] = {size, keep_fd ? fd : -1};
  }
  auto unmap = [start, size](void*) {
    int owned = -1;
    {
      std::lock_guard<std::mutex> lock(g_shared_mu);
      auto it = g_shared.find(start);
      if (it != g_shared.end()) {
        owned = it->second.fd;
        g_shared.erase(it);
      }
    }
    munmap(reinterpret_cast<void*>(start), static_cast<size_t>(size));
    if (owned >= 0) close(owned);
  };
  return from_blob(static_cast<char*>(p) + offset, sizes, strides, dtype, std::move(unmap));
}

std::optional<std::tuple<uintptr_t, int64_t, int>> shared_segment(const Tensor& t) {
  if (!t.defined() || t.device() != Device::cpu()) return std::nullopt;
  const auto ptr = reinterpret_cast<uintptr_t>(t.data_ptr());
  const int64_t extent = layout_extent(t.dtype(), t.sizes(), t.strides());
  std::lock_guard<std::mutex> lock(g_shared_mu);
  auto it = g_shared.upper_bound(ptr);
  if (it == g_shared.begin()) return std::nullopt;
  --it;
  if (ptr + static_cast<uintptr_t>(extent) > it->first + static_cast<uintptr_t>(it->second.size))
    return std::nullopt;
  return std::make_tuple(it->first, it->second.size, it->second.fd);
}

nb::object tensor_to_numpy(const Tensor& t, bool force) {
  Tensor src = t;
  if (force) {
    GilRelease release;
    src = t.detach().to(Device::cpu());
  } else {
    EMBER_CHECK_TYPE(t.device() == Device::cpu(),
                     "[numpy] can't convert a {} tensor to NumPy: use Tensor.cpu() to copy the "
                     "tensor to host memory first",
                     t.device().str());
    EMBER_CHECK(!t.requires_grad(),
                "[numpy] can't call numpy() on a tensor that requires grad: use "
                "tensor.detach().numpy() instead");
  }
  EMBER_CHECK_TYPE(src.dtype() != DType::BFloat16,
                   "[numpy] NumPy has no bfloat16: convert first, e.g. tensor.float().numpy()");
  std::vector<size_t> shape(src.sizes().begin(), src.sizes().end());
  std::vector<int64_t> strides(src.strides().begin(), src.strides().end());
  auto* keep = new Tensor(src);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  const DLPackType d = dlpack_type(src.dtype());
  nb::dlpack::dtype dt{d.code, d.bits, 1};
  void* data = src.numel() ? src.data_ptr() : nullptr;
  nb::ndarray<nb::numpy> arr(data, shape.size(), shape.data(), owner, strides.data(), dt);
  return arr.cast();
}

namespace {

// --- Nested Python data ---------------------------------------------------------------------

[[noreturn]] void bad_element(nb::handle item) {
  throw TypeError(fmt::format(
      "[tensor] could not infer a dtype for an element of type {}: the data must be numbers "
      "(bool, int, float), nested lists or tuples of them, or one-element tensors",
      nb::cast<std::string>(nb::str(item.type().attr("__name__")))));
}

/** A Python number (bool, int, float, NumPy's scalars, a one-element tensor) as a Scalar. */
Scalar element(nb::handle item) {
  PyObject* o = item.ptr();
  if (PyBool_Check(o)) return Scalar(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) {
      throw ValueError(fmt::format("[tensor] integer {} does not fit int64",
                                   nb::cast<std::string>(nb::str(item))));
    }
    return Scalar(static_cast<int64_t>(v));
  }
  if (PyFloat_Check(o)) return Scalar(PyFloat_AS_DOUBLE(o));
  if (nb::isinstance<PyTensor>(item)) {
    const Tensor& t = *nb::inst_ptr<PyTensor>(item);
    EMBER_CHECK(
        t.numel() == 1,
        "[tensor] only one-element tensors can be elements of the data: got one of shape {}",
        shape_str(t.sizes()));
    return t.item_scalar();
  }
  // NumPy's scalars and other numbers.
  std::string_view tname = Py_TYPE(o)->tp_name;
  if (tname == "numpy.bool" || tname == "numpy.bool_") return Scalar(PyObject_IsTrue(o) == 1);
  if (PyIndex_Check(o)) {
    nb::object i = nb::steal(PyNumber_Index(o));
    if (!i.is_valid()) throw nb::python_error();
    return element(i);
  }
  if (Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_float && !PyUnicode_Check(o)) {
    const double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
    return Scalar(v);
  }
  bad_element(item);
}

bool is_sequence(nb::handle o) {
  return PyList_Check(o.ptr()) || PyTuple_Check(o.ptr()) ||
         (!PyUnicode_Check(o.ptr()) && !PyBytes_Check(o.ptr()) && PySequence_Check(o.ptr()) &&
          !nb::isinstance<PyTensor>(o) && nb::hasattr(o, "__len__"));
}

/** Walks nested Python sequences in order into `out` (Note [Nested data] holds the rules; it
 *  refuses a sequence nested too deep before this recurses into it). */
void gather(NestedData& out, nb::handle data) {
  if (!is_sequence(data)) {
    out.value(element(data));
    return;
  }
  nb::object seq = nb::steal(PySequence_Fast(data.ptr(), "expected a sequence"));
  if (!seq.is_valid()) throw nb::python_error();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
  out.begin_sequence(n);
  for (Py_ssize_t i = 0; i < n; ++i) gather(out, items[i]);
  out.end_sequence();
}

bool has_buffer(nb::handle o) {
  return PyObject_CheckBuffer(o.ptr()) && !PyBytes_Check(o.ptr()) && !PyByteArray_Check(o.ptr()) &&
         !PyUnicode_Check(o.ptr());
}

}  // namespace

Device device_for_tensor_data(const Tensor& t) {
  // torch.tensor(t) and as_tensor(t) keep t's device, unless a default device was set: then
  // they move to it, as every factory does (Note [The default device] in device.h).
  const Device d = default_device();
  return d == Device::cpu() ? t.device() : d;
}

Tensor tensor_from_data(nb::handle data, std::optional<DType> dtype, std::optional<Device> device) {
  Tensor host;
  if (nb::isinstance<PyTensor>(data)) {
    host = nb::inst_ptr<PyTensor>(data)->detach().clone();
    if (!device) device = device_for_tensor_data(host);
  } else if (has_buffer(data)) {
    host = tensor_from_buffer(data, "tensor", nullptr).clone();  // a copy: writable either way
    if (!device) device = default_device();  // host data lands where factories put tensors
  } else if (!is_sequence(data) && nb::hasattr(data, "__dlpack__")) {
    host = from_dlpack_object(data).clone();
  } else {
    NestedData nested;
    gather(nested, data);
    host = nested.finish(dtype, device.value_or(default_device()));
  }
  if (dtype && host.dtype() != *dtype) host = host.to(*dtype);
  if (device && host.device() != *device) host = host.to(*device);
  return host;
}

void warn_read_only_shared(const char* op) {
  // PyTorch's warning for the same case (torch.from_numpy, torch.as_tensor).
  warn(PyExc_UserWarning,
       fmt::format("[{}] the given array is not writable; the tensor shares its memory, and "
                   "writing to the tensor is undefined (copy the array first, array.copy(), or "
                   "use ember.tensor, which copies)",
                   op)
           .c_str());
}

/** from_dlpack for bind_tensor (ember.from_dlpack). */
Tensor dlpack_to_tensor(nb::handle obj) {
  return from_dlpack_object(obj);
}

/** Tensor.__dlpack__ for bind_tensor. */
nb::object tensor_to_dlpack(const Tensor& t, nb::handle stream,
                            std::optional<nb::tuple> max_version, nb::handle dl_device,
                            std::optional<bool> copy) {
  return dlpack_export(t, stream, std::move(max_version), dl_device, copy);
}

/** Tensor.__dlpack_device__ for bind_tensor. */
std::pair<int, int> tensor_dlpack_device(const Tensor& t) {
  const std::string_view type = t.device().type_name();
  if (type == "cpu") return {t.is_pinned() ? kDLCUDAHost : kDLCPU, 0};
  EMBER_CHECK_NOT_IMPLEMENTED(type == "cuda", "[__dlpack_device__] device {} has no DLPack type",
                              t.device().str());
  return {kDLCUDA, t.device().index};
}

}  // namespace ember::python

// --- Casters ------------------------------------------------------------------------------------

namespace nanobind::detail {

using ember::python::PyTensor;

bool type_caster<ember::python::Ints>::from_python(handle src, uint32_t, cleanup_list*) noexcept {
  PyObject* o = src.ptr();
  auto one = [](PyObject* item, int64_t& out) {
    if (PyBool_Check(item)) return false;
    if (PyLong_Check(item)) {
      int overflow = 0;
      out = PyLong_AsLongLongAndOverflow(item, &overflow);
      return !overflow && !(out == -1 && PyErr_Occurred());
    }
    if (nanobind::isinstance<PyTensor>(item)) {
      const ember::Tensor& t = *nanobind::inst_ptr<PyTensor>(item);
      if (t.numel() != 1 || !ember::is_integral(t.dtype())) return false;
      try {
        out = t.item<int64_t>();
        return true;
      } catch (...) {
        return false;
      }
    }
    if (PyIndex_Check(item) && !PyFloat_Check(item)) {
      PyObject* i = PyNumber_Index(item);
      if (!i) {
        PyErr_Clear();
        return false;
      }
      out = PyLong_AsLongLong(i);
      Py_DECREF(i);
      if (out == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
      }
      return true;
    }
    return false;
  };
  value.v.resize(0);
  int64_t v = 0;
  if (one(o, v)) {
    value.v.push_back(v);
    return true;
  }
  PyErr_Clear();
  if (nanobind::isinstance<PyTensor>(src)) {
    const ember::Tensor& t = *nanobind::inst_ptr<PyTensor>(src);
    if (t.dim() != 1 || !ember::is_integral(t.dtype())) return false;
    try {
      const ember::Tensor c = t.to(ember::Device::cpu()).to(ember::DType::Int64).contiguous();
      const int64_t* p = c.data_ptr<int64_t>();
      value.v = ember::Shape(ember::IntList(p, static_cast<size_t>(c.numel())));
      return true;
    } catch (...) {
      return false;
    }
  }
  if (!PyList_Check(o) && !PyTuple_Check(o)) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  PyObject** items = PySequence_Fast_ITEMS(o);
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!one(items[i], v)) {
      PyErr_Clear();
      return false;
    }
    value.v.push_back(v);
  }
  return true;
}

handle type_caster<ember::python::Ints>::from_cpp(const ember::python::Ints& v, rv_policy,
                                                  cleanup_list*) noexcept {
  PyObject* t = PyTuple_New(static_cast<Py_ssize_t>(v.v.size()));
  if (!t) return handle();
  for (size_t i = 0; i < v.v.size(); ++i) {
    PyTuple_SET_ITEM(t, static_cast<Py_ssize_t>(i), PyLong_FromLongLong(v.v[i]));
  }
  return t;
}

bool type_caster<ember::python::PyScalar>::from_python(handle src, uint32_t,
                                                       cleanup_list*) noexcept {
  PyObject* o = src.ptr();
  if (PyBool_Check(o)) {
    value.v = ember::Scalar(o == Py_True);
    return true;
  }
  if (PyLong_Check(o)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) {
      // Beyond int64: as a float, as PyTorch does for out-of-range Python ints.
      const double d = PyLong_AsDouble(o);
      if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
      }
      value.v = ember::Scalar(d);
      return true;
    }
    value.v = ember::Scalar(static_cast<int64_t>(v));
    return true;
  }
  if (PyFloat_Check(o)) {
    value.v = ember::Scalar(PyFloat_AS_DOUBLE(o));
    return true;
  }
  if (nanobind::isinstance<PyTensor>(src)) {
    const ember::Tensor& t = *nanobind::inst_ptr<PyTensor>(src);
    if (!t.defined() || t.numel() != 1) return false;
    try {
      value.v = t.item_scalar();
      return true;
    } catch (...) {
      return false;
    }
  }
  std::string_view tname = Py_TYPE(o)->tp_name;
  if (tname == "numpy.bool" || tname == "numpy.bool_") {
    value.v = ember::Scalar(PyObject_IsTrue(o) == 1);
    return true;
  }
  if (PyIndex_Check(o)) {
    PyObject* i = PyNumber_Index(o);
    if (!i) {
      PyErr_Clear();
      return false;
    }
    const long long v = PyLong_AsLongLong(i);
    Py_DECREF(i);
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    value.v = ember::Scalar(static_cast<int64_t>(v));
    return true;
  }
  if (Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_float && !PyUnicode_Check(o) &&
      !PyComplex_Check(o)) {
    const double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    value.v = ember::Scalar(d);
    return true;
  }
  return false;
}

handle type_caster<ember::python::PyScalar>::from_cpp(const ember::python::PyScalar& v, rv_policy,
                                                      cleanup_list*) noexcept {
  switch (v.v.kind()) {
    case ember::Scalar::Kind::Bool:
      return PyBool_FromLong(v.v.to_int());
    case ember::Scalar::Kind::Int:
      return PyLong_FromLongLong(v.v.to_int());
    case ember::Scalar::Kind::Float:
      return PyFloat_FromDouble(v.v.to_double());
  }
  return handle();
}

bool type_caster<ember::python::Operand>::from_python(handle src, uint32_t flags,
                                                      cleanup_list* cleanup) noexcept {
  if (nanobind::isinstance<PyTensor>(src)) {
    value.tensor = nanobind::inst_ptr<PyTensor>(src);
    return true;
  }
  make_caster<ember::python::PyScalar> scalar;
  if (!scalar.from_python(src, flags, cleanup)) return false;
  value.tensor = nullptr;
  value.scalar = scalar.value.v;
  return true;
}

bool type_caster<ember::DType>::from_python(handle src, uint32_t, cleanup_list*) noexcept {
  if (nanobind::isinstance<ember::python::DTypeObject>(src)) {
    value = nanobind::inst_ptr<ember::python::DTypeObject>(src)->dtype;
    return true;
  }
  if (src.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) {
    value = ember::DType::Float64;
    return true;
  }
  if (src.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) {
    value = ember::DType::Int64;
    return true;
  }
  if (src.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) {
    value = ember::DType::Bool;
    return true;
  }
  return false;
}

}  // namespace nanobind::detail
