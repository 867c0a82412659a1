// ember.Tensor and ember.nn.Parameter: identity, properties, conversions, printing, NumPy and
// DLPack, autograd entry points; ember.Size; the factories (ember.tensor, zeros, rand, ...).
#include <deque>
#include <unordered_map>

#include "bind.h"
#include "ember/nn/init.h"

namespace ember::python {

TensorOptions options(std::optional<DType> dtype, std::optional<Device> device, bool pin,
                      DType fallback) {
  TensorOptions o(dtype.value_or(fallback));  // on default_device() unless given
  if (device) o.device = *device;
  return o.pinned_memory(pin);
}

Tensor finish(Tensor t, bool requires_grad) {
  if (requires_grad) t.requires_grad_(true);
  return t;
}

/** A tensor over the memory of a buffer-protocol object (a NumPy array), which it keeps;
 *  `read_only` (if given) says whether that memory is read-only. */
Tensor tensor_from_buffer(nb::handle obj, const char* op, bool* read_only);
/** Warns that a tensor shares the memory of a read-only array (as PyTorch does). */
void warn_read_only_shared(const char* op);
nb::object tensor_to_numpy(const Tensor& t, bool force);
Tensor dlpack_to_tensor(nb::handle obj);
/** A tensor over shared memory mapped from `fd` (Note [Tensors over shared memory]). */
Tensor map_shared(int fd, int64_t size, bool keep_fd, DType dtype, IntList sizes, IntList strides,
                  int64_t offset);
/** (start, size, fd or -1) of the shared segment holding every element of `t`, if any. */
std::optional<std::tuple<uintptr_t, int64_t, int>> shared_segment(const Tensor& t);
nb::object tensor_to_dlpack(const Tensor& t, nb::handle stream,
                            std::optional<nb::tuple> max_version, nb::handle dl_device,
                            std::optional<bool> copy);
std::pair<int, int> tensor_dlpack_device(const Tensor& t);

namespace {

/** One live Python tensor object: the object and the PyTensor inside it. */
struct LiveEntry {
  PyObject* object;
  const PyTensor* cpp;
};

// Note [Python tensors keep their identity] in bind.h. Leaked on purpose: Python objects may
// outlive static destructors at exit.
std::unordered_map<const TensorImpl*, LiveEntry>& live_tensors() {
  static auto* map = new std::unordered_map<const TensorImpl*, LiveEntry>();
  return *map;
}

nb::handle g_tensor_type, g_parameter_type, g_size_type;

PyTensor& self_of(nb::handle h) {
  return *nb::inst_ptr<PyTensor>(h);
}

}  // namespace

PyTensor::~PyTensor() {
  if (!defined()) return;
  auto& live = live_tensors();
  auto it = live.find(impl());
  if (it != live.end() && it->second.cpp == this) live.erase(it);
}

nb::handle tensor_type() {
  return g_tensor_type;
}
nb::handle parameter_type() {
  return g_parameter_type;
}

void register_tensor_object(nb::handle obj) {
  const PyTensor* t = nb::inst_ptr<PyTensor>(obj);
  if (!t->defined()) return;
  live_tensors().try_emplace(t->impl(), LiveEntry{obj.ptr(), t});
}

nb::object wrap_tensor(const Tensor& t, nb::handle type) {
  if (!t.defined()) return nb::none();
  auto& live = live_tensors();
  auto it = live.find(t.impl());
  if (it != live.end()) return nb::borrow(it->second.object);
  nb::object o = nb::inst_alloc(type ? type : g_tensor_type);
  PyTensor* p = nb::inst_ptr<PyTensor>(o);
  new (p) PyTensor(t);
  nb::inst_mark_ready(o);
  live.emplace(t.impl(), LiveEntry{o.ptr(), p});
  return o;
}

ToArgs parse_to(nb::args args, nb::kwargs kwargs) {
  ToArgs r;
  size_t bools = 0;
  for (nb::handle a : args) {
    if (nb::isinstance<PyTensor>(a)) {
      const Tensor& o = self_of(a);
      r.device = o.device();
      r.dtype = o.dtype();
    } else if (nb::isinstance<DTypeObject>(a) ||
               a.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type) ||
               a.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type) ||
               a.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) {
      r.dtype = nb::cast<DType>(a);
    } else if (PyBool_Check(a.ptr())) {
      (bools++ == 0 ? r.non_blocking : r.copy) = a.ptr() == Py_True;
    } else if (nb::isinstance<Device>(a) || nb::isinstance<nb::str>(a)) {
      r.device = device_from(a);
    } else if (PyLong_Check(a.ptr())) {
      r.device = Device(fmt::format("cuda:{}", nb::cast<int64_t>(a)));
    } else if (nb::isinstance<MemoryFormat>(a)) {
      r.memory_format = nb::cast<MemoryFormat>(a);
    } else {
      throw TypeError(fmt::format(
          "[to] unexpected argument of type {}: to() takes a device, a dtype, a tensor, "
          "non_blocking, copy and memory_format",
          nb::cast<std::string>(nb::str(a.type().attr("__name__")))));
    }
  }
  for (auto [k, v] : kwargs) {
    const std::string key = nb::cast<std::string>(k);
    if (key == "device") {
      if (!v.is_none()) r.device = device_from(v);
    } else if (key == "dtype") {
      if (!v.is_none()) r.dtype = nb::cast<DType>(v);
    } else if (key == "non_blocking") {
      r.non_blocking = nb::cast<bool>(v);
    } else if (key == "copy") {
      r.copy = nb::cast<bool>(v);
    } else if (key == "memory_format") {
      if (!v.is_none()) r.memory_format = nb::cast<MemoryFormat>(v);
    } else {
      throw TypeError(fmt::format("[to] unexpected keyword argument '{}'", key));
    }
  }
  return r;
}

Tensor apply_to(const Tensor& t, const ToArgs& a) {
  Tensor r = t;
  if (a.device && r.device() != *a.device) r = r.to(*a.device, a.non_blocking);
  if (a.dtype) r = r.to(*a.dtype);
  if (a.memory_format && *a.memory_format != MemoryFormat::Preserve)
    r = r.contiguous(*a.memory_format);
  if (a.copy && r.is_same(t)) r = t.clone();
  return r;
}

/** Sizes given as *size or as one sequence: zeros(2, 3) and zeros((2, 3)). */
Shape sizes_from_args(nb::args args, const char* op) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) {
    nb::handle a = args[0];
    Ints ints;
    EMBER_CHECK_TYPE(nb::try_cast<Ints>(a, ints),
                     "[{}] expected ints or one sequence of ints, got {}", op,
                     nb::cast<std::string>(nb::str(a.type().attr("__name__"))));
    return ints.v;
  }
  Shape out;
  for (nb::handle a : args) {
    Ints i;
    EMBER_CHECK_TYPE(nb::try_cast<Ints>(a, i) && i.size() == 1,
                     "[{}] expected ints or one sequence of ints, got {}", op,
                     nb::cast<std::string>(nb::str(a.type().attr("__name__"))));
    out.push_back(i.v[0]);
  }
  return out;
}

std::vector<Tensor> tensors_from_args(nb::args args, const char* op) {
  nb::handle list = args;
  if (args.size() == 1 && (nb::isinstance<nb::list>(args[0]) || nb::isinstance<nb::tuple>(args[0])))
    list = args[0];
  std::vector<Tensor> out;
  for (nb::handle t : list) {
    EMBER_CHECK_TYPE(nb::isinstance<PyTensor>(t), "[{}] expects tensors, got {}", op,
                     nb::cast<std::string>(nb::str(t.type().attr("__name__"))));
    out.push_back(*nb::inst_ptr<PyTensor>(t));
  }
  return out;
}

nb::object make_size(IntList sizes) {
  auto* tp = reinterpret_cast<PyTypeObject*>(g_size_type.ptr());
  PyObject* o = tp->tp_alloc(tp, static_cast<Py_ssize_t>(sizes.size()));
  if (!o) throw nb::python_error();
  for (size_t i = 0; i < sizes.size(); ++i) {
    PyTuple_SET_ITEM(o, static_cast<Py_ssize_t>(i), PyLong_FromLongLong(sizes[i]));
  }
  return nb::steal(o);
}

namespace {

std::string tensor_repr(const Tensor& t) {
  if (!t.defined()) return "tensor(undefined)";
  std::string s;
  {
    GilRelease release;
    s = t.str();
  }
  const std::string name(dtype_name(t.dtype()));
  const std::string plain = "dtype=" + name;
  if (size_t pos = s.find(plain); pos != std::string::npos) {
    s.replace(pos, plain.size(), "dtype=ember." + name);
  }
  std::string suffix;
  if (t.requires_grad()) {
    if (auto fn = t.grad_fn()) {
      suffix = fmt::format(", grad_fn=<{}>", fn->name());
    } else {
      suffix = ", requires_grad=True";
    }
  }
  if (!suffix.empty() && !s.empty() && s.back() == ')') s.insert(s.size() - 1, suffix);
  return s;
}

/** item() as the Python number of the tensor's kind. */
nb::object item_object(const Tensor& t) {
  EMBER_CHECK(t.numel() == 1,
              "[item] a Tensor with {} elements cannot be converted to a Python number (only "
              "one-element tensors can)",
              t.numel());
  Scalar s;
  {
    GilRelease release;
    s = t.item_scalar();
  }
  switch (s.kind()) {
    case Scalar::Kind::Bool:
      return nb::bool_(s.to_int() != 0);
    case Scalar::Kind::Int:
      return nb::int_(s.to_int());
    case Scalar::Kind::Float:
      return nb::float_(s.to_double());
  }
  return nb::none();
}

nb::object to_list(const Tensor& t) {
  Tensor host;
  {
    GilRelease release;
    host = t.detach().to(Device::cpu()).contiguous();
  }
  if (host.dtype() == DType::Float16 || host.dtype() == DType::BFloat16) {
    host = host.to(DType::Float32);
  }
  const Shape& sizes = host.sizes();
  std::function<nb::object(size_t, int64_t)> rec = [&](size_t dim, int64_t offset) -> nb::object {
    if (dim == sizes.size()) {
      nb::object v;
      visit_dtype(host.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T x = static_cast<const T*>(host.data_ptr())[offset];
        if constexpr (std::is_same_v<T, bool>) {
          v = nb::bool_(x);
        } else if constexpr (std::is_integral_v<T>) {
          v = nb::int_(static_cast<int64_t>(x));
        } else {
          v = nb::float_(static_cast<double>(static_cast<sdk::Compute<T>>(x)));
        }
      });
      return v;
    }
    nb::list out;
    for (int64_t i = 0; i < sizes[dim]; ++i)
      out.append(rec(dim + 1, offset + i * host.stride(static_cast<int64_t>(dim))));
    return out;
  };
  return rec(0, 0);
}

/** The dtype a fill value gives a new tensor: bool, int64 or the default float. */
DType dtype_of_value(const Scalar& s) {
  return s.natural_dtype();
}

nb::object rebuild_tensor(std::string_view dtype, Ints sizes, nb::bytes data, bool requires_grad,
                          std::string device, bool parameter) {
  const DType d = parse_dtype(dtype);
  Tensor t = empty(sizes, {d, Device::cpu()});
  EMBER_CHECK(data.size() == t.nbytes(), "[unpickle] {} bytes for a {} tensor of shape {}",
              data.size(), dtype, shape_str(sizes.v));
  if (t.nbytes()) std::memcpy(t.data_ptr(), data.c_str(), t.nbytes());
  if (device != "cpu") t = t.to(Device(device));
  if (requires_grad) t.requires_grad_(true);
  return wrap_tensor(t, parameter ? g_parameter_type : g_tensor_type);
}

}  // namespace

/** A handle that removes a hook once (torch.utils.hooks.RemovableHandle). */
struct RemovableHandle {
  std::function<void()> remove_fn;
  void remove() {
    if (remove_fn) std::exchange(remove_fn, nullptr)();
  }
};

nb::object make_removable_handle(std::function<void()> remove) {
  return nb::cast(RemovableHandle{std::move(remove)});
}

Tensor PyGradHook::operator()(const Tensor& grad) const {
  GilAcquire gil;
  if (!fn->get()) return {};  // removed, or cleared by the garbage collector
  nb::object r = nb::borrow(fn->get())(grad);
  if (r.is_none()) return {};
  EMBER_CHECK_TYPE(nb::isinstance<PyTensor>(r),
                   "[register_hook] a gradient hook returned {} where a tensor or None was "
                   "expected",
                   nb::cast<std::string>(r.type().attr("__name__")));
  return *nb::inst_ptr<PyTensor>(r);
}

void PyPostAccumulateHook::operator()(const Tensor& leaf) const {
  GilAcquire gil;
  if (!fn->get()) return;
  nb::borrow(fn->get())(leaf);
}

namespace {

/** Calls fn(ref) for each Python callable `t` keeps, if `owners` handles are all that share its
 *  impl (Note [Python objects in the garbage collector]); stops at fn's first non-zero answer. */
int each_python_ref(const Tensor& t, uint32_t owners,
                    const std::function<int(const std::shared_ptr<PyRef>&)>& fn) {
  if (!t.defined() || t.impl()->use_count() > owners) return 0;
  autograd::AutogradMeta* meta = t.impl()->autograd_meta();
  if (meta == nullptr) return 0;
  for (const autograd::GradHook& h : meta->leaf_hooks) {
    if (const PyGradHook* p = h.target<PyGradHook>()) {
      if (int e = fn(p->fn)) return e;
    }
  }
  for (const auto& h : meta->post_accumulate_hooks) {
    if (const PyPostAccumulateHook* p = h.target<PyPostAccumulateHook>()) {
      if (int e = fn(p->fn)) return e;
    }
  }
  // The node, if this tensor alone holds it (another output or a later node may hold it too).
  if (meta->grad_fn && meta->grad_fn.use_count() == 1) {
    autograd::Node& node = *meta->grad_fn;
    for (const auto& [output_nr, h] : node.pre_hooks) {
      if (const PyGradHook* p = h.target<PyGradHook>()) {
        if (int e = fn(p->fn)) return e;
      }
    }
    if (auto* lambda = dynamic_cast<autograd::LambdaNode*>(&node)) {
      if (const PyBackward* b = lambda->backward_fn().target<PyBackward>()) {
        if (int e = fn(b->fn)) return e;
      }
    }
  }
  return 0;
}

int tensor_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (PyObject** dict = _PyObject_GetDictPtr(self)) Py_VISIT(*dict);
  if (!nb::inst_ready(self)) return 0;
  return traverse_tensor(*nb::inst_ptr<PyTensor>(self), visit, arg);
}

int tensor_clear(PyObject* self) {
  if (PyObject** dict = _PyObject_GetDictPtr(self)) Py_CLEAR(*dict);
  if (nb::inst_ready(self)) clear_tensor(*nb::inst_ptr<PyTensor>(self));
  return 0;
}

PyType_Slot g_tensor_slots[] = {
    {Py_tp_traverse, reinterpret_cast<void*>(&tensor_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(&tensor_clear)},
    {0, nullptr},
};

}  // namespace

int traverse_tensor(const Tensor& t, visitproc visit, void* arg, uint32_t owners) {
  return each_python_ref(t, owners,
                         [&](const std::shared_ptr<PyRef>& r) { return r->visit(visit, arg); });
}

void clear_tensor(const Tensor& t, uint32_t owners) {
  // Dropping a reference runs Python code, which may register hooks: collect first.
  std::vector<std::shared_ptr<PyRef>> refs;
  each_python_ref(t, owners, [&](const std::shared_ptr<PyRef>& r) {
    refs.push_back(r);
    return 0;
  });
  for (const std::shared_ptr<PyRef>& r : refs) r->reset();
}

nb::type_slots tensor_type_slots() {
  return nb::type_slots(g_tensor_slots);
}

/** Registers a Python gradient hook on `t`; the handle's remove() drops it (the core keeps a
 *  hook for the tensor's life, so removal leaves an empty one). */
nb::object register_grad_hook(const Tensor& t, nb::handle fn) {
  EMBER_CHECK(t.requires_grad(),
              "[register_hook] cannot register a hook on a tensor that doesn't require gradient");
  auto ref = std::make_shared<PyRef>(fn);
  t.register_hook(PyGradHook{ref});
  return make_removable_handle([ref] { ref->reset(); });
}

namespace {

/** PyTorch's legacy type names by dtype: Float for float32, Long for int64, ... */
constexpr std::pair<DType, const char*> kLegacyTypeNames[] = {
    {DType::Float32, "Float"},     {DType::Float64, "Double"}, {DType::Float16, "Half"},
    {DType::BFloat16, "BFloat16"}, {DType::Int64, "Long"},     {DType::Int32, "Int"},
    {DType::Int8, "Char"},         {DType::UInt8, "Byte"},     {DType::Bool, "Bool"}};

/** Tensor.type(): "ember.FloatTensor", "ember.cuda.LongTensor", ... */
std::string legacy_type_name(const Tensor& t) {
  for (const auto& [d, name] : kLegacyTypeNames) {
    if (d != t.dtype()) continue;
    return t.device() == Device::cpu()
               ? fmt::format("ember.{}Tensor", name)
               : fmt::format("ember.{}.{}Tensor", t.device().type_name(), name);
  }
  return fmt::format("ember.{}Tensor", t.dtype());
}

/** The dtype of a legacy type name: "torch.FloatTensor", "ember.cuda.LongTensor", "FloatTensor". */
DType dtype_of_legacy_name(const std::string& s) {
  const std::string last = s.substr(s.rfind('.') == std::string::npos ? 0 : s.rfind('.') + 1);
  for (const auto& [d, name] : kLegacyTypeNames) {
    if (last == fmt::format("{}Tensor", name)) return d;
  }
  throw TypeError(
      fmt::format("[type] invalid type: '{}' (a dtype, or a name such as "
                  "'torch.FloatTensor')",
                  s));
}

/** A factory of a size and options: zeros, ones, empty, as module functions and, for
 *  Tensor.new_<name>, methods. */
struct SizeFactory {
  const char* name;
  const char* method;  // new_<name>
  Tensor (*make)(const Shape&, const TensorOptions&);
  const char* doc;
};
constexpr SizeFactory kSizeFactories[] = {
    {"zeros", "new_zeros", [](const Shape& s, const TensorOptions& o) { return zeros(s, o); },
     "Zeros of the given size"},
    {"ones", "new_ones", [](const Shape& s, const TensorOptions& o) { return ones(s, o); },
     "Ones of the given size"},
    {"empty", "new_empty", [](const Shape& s, const TensorOptions& o) { return empty(s, o); },
     "An uninitialised tensor of the given size"},
};

/** The Python signature of a size factory `name`, a method of a tensor if `method`. */
std::string size_factory_sig(const char* name, bool method) {
  return fmt::format(
      "def {}({}*size: int | collections.abc.Sequence[int], dtype: ember.dtype | "
      "None = None, device: ember.device | str | None = None, requires_grad: bool "
      "= False, pin_memory: bool = False) -> ember.Tensor",
      name, method ? "self, " : "");
}

}  // namespace

void bind_tensor(nb::module_& m) {
  g_size_type = nb::object(nb::module_::import_("ember._size").attr("Size")).release();
  m.attr("Size") = g_size_type;

  nb::enum_<MemoryFormat>(m, "memory_format", "How a tensor's elements lie in memory.")
      .value("contiguous_format", MemoryFormat::Contiguous)
      .value("channels_last", MemoryFormat::ChannelsLast)
      .value("preserve_format", MemoryFormat::Preserve);
  m.attr("contiguous_format") = MemoryFormat::Contiguous;
  m.attr("channels_last") = MemoryFormat::ChannelsLast;
  m.attr("preserve_format") = MemoryFormat::Preserve;

  nb::class_<RemovableHandle>(m, "RemovableHandle", "Removes the hook it was returned for.")
      .def("remove", &RemovableHandle::remove, "Removes the hook (once; later calls do nothing).")
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](RemovableHandle& h, nb::args) { h.remove(); });

  nb::class_<autograd::Node>(m, "Node", "A recorded backward step (a tensor's grad_fn).")
      .def("name", &autograd::Node::name, "The node's name, e.g. 'MulBackward'.")
      .def_prop_ro(
          "next_functions",
          [](const autograd::Node& n) {
            nb::list out;
            for (const autograd::Edge& e : n.next_edges) {
              out.append(nb::make_tuple(e.fn ? nb::cast(e.fn) : nb::none(), e.input_nr));
            }
            return nb::tuple(out);
          },
          "(node, input number) for each forward input, None where no gradient flows.")
      .def_prop_ro(
          "variable",
          [](const autograd::Node& n) -> nb::object {
            if (auto* acc = dynamic_cast<const autograd::AccumulateGrad*>(&n)) {
              return wrap_tensor(acc->variable());
            }
            throw nb::attribute_error("only AccumulateGrad nodes have a variable");
          },
          "The leaf an AccumulateGrad node accumulates into.")
      .def("__repr__", [](const autograd::Node& n) {
        return fmt::format("<{} object at {}>", n.name(), static_cast<const void*>(&n));
      });

  nb::class_<PyTensor> cls(m, "Tensor", nb::dynamic_attr(), nb::is_weak_referenceable(),
                           tensor_type_slots(),
                           "An n-dimensional array on a device, with autograd.");
  g_tensor_type = cls;
  cls.def(
      "__init__",
      [](PyTensor* self, nb::args args) {
        // The legacy constructor: Tensor(*sizes) (uninitialised float32) or Tensor(data).
        Tensor t;
        if (args.size() == 1 && !PyLong_Check(args[0].ptr())) {
          t = tensor_from_data(args[0], default_dtype(), std::nullopt);
        } else {
          t = empty(sizes_from_args(args, "Tensor"));
        }
        new (self) PyTensor(std::move(t));
        register_tensor_object(nb::find(self));
      },
      "args"_a, "Tensor(*sizes) (uninitialised float32) or Tensor(data) (a float32 copy).");

  // Shape and layout.
  cls.def_prop_ro(
         "shape", [](const Tensor& t) { return make_size(t.sizes()); },
         nb::for_getter(nb::sig("def shape(self, /) -> ember.Size")),
         "The sizes, as an ember.Size.")
      .def(
          "size", [](const Tensor& t) { return make_size(t.sizes()); },
          nb::sig("def size(self) -> ember.Size"), "The sizes.")
      .def("size", &Tensor::size, "dim"_a, "The size of one dim.")
      .def(
          "stride",
          [](const Tensor& t) {
            nb::list out;
            for (int64_t s : t.strides()) out.append(s);
            return nb::tuple(out);
          },
          nb::sig("def stride(self) -> tuple[int, ...]"), "The strides, in elements.")
      .def("stride", &Tensor::stride, "dim"_a, "The stride of one dim, in elements.")
      .def("dim", &Tensor::dim, "The number of dims.")
      .def("ndimension", &Tensor::dim, "The number of dims.")
      .def_prop_ro("ndim", &Tensor::dim, "The number of dims.")
      .def("numel", &Tensor::numel, "The number of elements.")
      .def("nelement", &Tensor::numel, "The number of elements.")
      .def("element_size", &Tensor::element_size, "Bytes per element.")
      .def_prop_ro("itemsize", &Tensor::element_size, "Bytes per element.")
      .def_prop_ro("nbytes", &Tensor::nbytes, "Bytes covered by the elements.")
      .def_prop_ro("dtype", &Tensor::dtype, "The element type.")
      .def_prop_ro("device", &Tensor::device, "The device the data lives on.")
      .def_prop_ro(
          "is_cpu", [](const Tensor& t) { return t.device() == Device::cpu(); },
          "True for a CPU tensor.")
      .def(
          "data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); },
          "The address of the first element.")
      .def("storage_offset", &Tensor::storage_offset, "The offset into the storage, in elements.")
      .def(
          "is_contiguous", [](const Tensor& t, MemoryFormat f) { return t.is_contiguous(f); },
          "memory_format"_a = MemoryFormat::Contiguous,
          "True if the elements are dense in that format's order.")
      .def(
          "is_floating_point", [](const Tensor& t) { return is_floating(t.dtype()); },
          "True for floating dtypes.")
      .def(
          "is_complex", [](const Tensor&) { return false; }, "Always False: no complex dtypes.")
      .def("is_pinned", &Tensor::is_pinned, "True for page-locked host memory.")
      .def("pin_memory", &Tensor::pin_memory, release_gil(),
           "A copy in page-locked host memory (the tensor if already pinned).")
      .def("is_same_storage", &Tensor::is_same_storage, "other"_a,
           "True if both tensors share storage.")
      .def_prop_ro("_version", &Tensor::version, "The storage's version counter.")
      .def_prop_ro(
          "_base",
          [](const Tensor& t) -> std::optional<Tensor> {
            if (!t.is_view()) return std::nullopt;
            return t.base();
          },
          "For a view, the tensor whose history it follows; None otherwise.")
      .def("_is_view", &Tensor::is_view, "True for a view that follows its base's history.")
      .def("is_inference", &Tensor::is_inference,
           "True if made inside inference_mode (a view of such a tensor included).");

  // is_cuda, is_xpu, is_mps: whether the tensor is on a device of that type (any backend plugin
  // may register one by that name).
  static constexpr struct {
    const char* prop;
    const char* type;
    const char* doc;
  } kIsDeviceType[] = {{"is_cuda", "cuda", "True for a CUDA tensor."},
                       {"is_xpu", "xpu", "True for a tensor on an 'xpu' device."},
                       {"is_mps", "mps", "True for a tensor on an 'mps' device."}};
  for (const auto& d : kIsDeviceType) {
    cls.def_prop_ro(
        d.prop, [type = d.type](const Tensor& t) { return t.device().type_name() == type; }, d.doc);
  }

  // uniform_ and normal_: nn.init's draws, written in place as any in-place op is (a leaf that
  // requires grad is refused outside no_grad, as in PyTorch; Note [In-place forms of every op]).
  cls.def(
         "uniform_",
         [](Tensor& self, double from, double to, Generator* gen) -> Tensor& {
           EMBER_CHECK_NOT_IMPLEMENTED(is_floating(self.dtype()),
                                       "[uniform_] not implemented for {} (a floating dtype only)",
                                       self.dtype());
           GilRelease release;
           return apply_inplace(self, "uniform_", [&](const Tensor& v) {
             Tensor r = empty_like(v);
             return nn::init::uniform_(r, from, to, gen);
           });
         },
         "from_"_a = 0.0, "to"_a = 1.0, nb::kw_only(), "generator"_a.none() = nb::none(),
         nb::rv_policy::reference, "Fills with values uniform in [from, to).")
      .def(
          "normal_",
          [](Tensor& self, double mean, double std, Generator* gen) -> Tensor& {
            EMBER_CHECK_NOT_IMPLEMENTED(is_floating(self.dtype()),
                                        "[normal_] not implemented for {} (a floating dtype only)",
                                        self.dtype());
            GilRelease release;
            return apply_inplace(self, "normal_", [&](const Tensor& v) {
              Tensor r = empty_like(v);
              return nn::init::normal_(r, mean, std, gen);
            });
          },
          "mean"_a = 0.0, "std"_a = 1.0, nb::kw_only(), "generator"_a.none() = nb::none(),
          nb::rv_policy::reference, "Fills with values from N(mean, std^2).");

  // Note [Factories of a tensor's kind]
  // new_zeros, new_ones, new_empty, new_full and new_tensor make a tensor with this one's dtype
  // and device unless told otherwise (PyTorch's Tensor.new_*): the core's factories with the
  // options defaulted here, nothing more.
  for (const SizeFactory& f : kSizeFactories) {
    cls.def(
        f.method,
        [f](const Tensor& self, nb::args size, std::optional<DType> dtype,
            std::optional<Device> device, bool requires_grad, bool pin_memory) {
          const Shape s = sizes_from_args(size, f.method);
          const TensorOptions o =
              TensorOptions(dtype.value_or(self.dtype()), device.value_or(self.device()))
                  .pinned_memory(pin_memory);
          GilRelease release;
          return finish(f.make(s, o), requires_grad);
        },
        "size"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
        "requires_grad"_a = false, "pin_memory"_a = false,
        nb::sig(size_factory_sig(f.method, true).c_str()),
        fmt::format("{}, with this tensor's dtype and device unless given.", f.doc).c_str());
  }
  cls.def(
         "new_full",
         [](const Tensor& self, Ints size, PyScalar value, std::optional<DType> dtype,
            std::optional<Device> device, bool requires_grad) {
           const TensorOptions o(dtype.value_or(self.dtype()), device.value_or(self.device()));
           GilRelease release;
           return finish(full(size, value, o), requires_grad);
         },
         "size"_a, "fill_value"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
         "requires_grad"_a = false,
         "fill_value in every element, with this tensor's dtype and device unless given.")
      .def(
          "new_tensor",
          [](const Tensor& self, nb::handle data, std::optional<DType> dtype,
             std::optional<Device> device, bool requires_grad) {
            Tensor t = tensor_from_data(data, dtype.value_or(self.dtype()),
                                        device.value_or(self.device()));
            if (nb::isinstance<PyTensor>(data)) t = t.detach().clone();
            return finish(t, requires_grad);
          },
          "data"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
          "requires_grad"_a = false,
          "A copy of data with this tensor's dtype and device unless given (no history).")
      .def(
          "type",
          [](const Tensor& self, nb::handle dtype, bool non_blocking) -> nb::object {
            if (dtype.is_none()) return nb::str(legacy_type_name(self).c_str());
            Device device = self.device();
            DType want;
            // A legacy type class (ember.FloatTensor) is read by its name.
            const bool type_object = PyType_Check(dtype.ptr()) != 0;
            if (nb::isinstance<nb::str>(dtype) || type_object) {
              const std::string name = type_object ? nb::cast<std::string>(dtype.attr("__name__"))
                                                   : nb::cast<std::string>(dtype);
              want = dtype_of_legacy_name(name);
              // "torch.cuda.FloatTensor" names the device type too.
              const size_t last = name.rfind('.'), prev = name.rfind('.', last - 1);
              device = last == std::string::npos || prev == std::string::npos
                           ? Device::cpu()
                           : Device(name.substr(prev + 1, last - prev - 1));
            } else {
              want = nb::cast<DType>(dtype);
            }
            if (want == self.dtype() && device == self.device()) return nb::cast(self);
            Tensor t;
            {
              GilRelease release;
              t = want == self.dtype() ? self : self.to(want);
              if (device != t.device()) t = t.to(device, non_blocking);
            }
            return nb::cast(t);
          },
          "dtype"_a = nb::none(), "non_blocking"_a = false,
          nb::sig(
              "def type(self, dtype: ember.dtype | str | type | None = None, non_blocking: bool = "
              "False) -> str | ember.Tensor"),
          "With no dtype, the type's name ('ember.FloatTensor'); else the tensor converted to "
          "dtype (an ember.dtype, a name such as 'torch.LongTensor' or a legacy type such as "
          "ember.LongTensor); itself if it has it.");

  // Conversions.
  cls.def(
         "to",
         [](const Tensor& t, nb::args args, nb::kwargs kwargs) {
           const ToArgs a = parse_to(args, kwargs);
           GilRelease release;
           return apply_to(t, a);
         },
         "args"_a, "kwargs"_a, nb::sig("def to(self, *args, **kwargs) -> ember.Tensor"),
         "Converted to a device, dtype or memory format: to(device), to(dtype), to(device, "
         "dtype), to(other), with non_blocking, copy and memory_format keywords.")
      .def(
          "cuda",
          [](const Tensor& t, std::optional<nb::object> device, bool non_blocking) {
            Device d("cuda");
            if (device && !device->is_none()) {
              d = device_from(*device);
            }
            GilRelease release;
            return t.to(d, non_blocking);
          },
          "device"_a = nb::none(), "non_blocking"_a = false, "A copy on a CUDA device.")
      .def("item", &item_object, nb::sig("def item(self) -> float | int | bool"),
           "The one element as a Python number.")
      .def("tolist", &to_list, nb::sig("def tolist(self) -> typing.Any"),
           "The elements as (nested) Python lists of numbers.")
      .def("numpy", &tensor_to_numpy, nb::kw_only(), "force"_a = false,
           nb::sig("def numpy(self, *, force: bool = False) -> numpy.typing.NDArray[typing.Any]"),
           "A NumPy array sharing the memory (CPU, no grad); force=True copies and detaches.")
      .def(
          "__array__",
          [](const Tensor& t, nb::handle dtype, nb::handle) {
            nb::object a = tensor_to_numpy(t, false);
            if (!dtype.is_none()) a = a.attr("astype")(dtype);
            return a;
          },
          "dtype"_a = nb::none(), "copy"_a = nb::none(), "NumPy's array protocol.")
      .def("__dlpack__", &tensor_to_dlpack, nb::kw_only(), "stream"_a = nb::none(),
           "max_version"_a = nb::none(), "dl_device"_a = nb::none(), "copy"_a = nb::none(),
           "A DLPack capsule of the tensor (shares memory).")
      .def("__dlpack_device__", &tensor_dlpack_device, "(DLPack device type, index).");

  // Autograd.
  cls.def_prop_rw(
         "requires_grad", &Tensor::requires_grad, [](Tensor& t, bool on) { t.requires_grad_(on); },
         "True if gradients flow to it.")
      .def(
          "requires_grad_", [](Tensor& t, bool on) -> Tensor& { return t.requires_grad_(on); },
          "requires_grad"_a = true, "Makes a leaf (not) require grad; returns the tensor.")
      .def_prop_rw(
          "grad", [](const Tensor& t) { return t.grad(); },
          [](Tensor& t, std::optional<Tensor> g) {
            if (g) {
              EMBER_CHECK(g->sizes() == t.sizes(),
                          "[grad] assigned grad has shape {} but the tensor has shape {}",
                          shape_str(g->sizes()), shape_str(t.sizes()));
              EMBER_CHECK_TYPE(g->dtype() == t.dtype() && g->device() == t.device(),
                               "[grad] assigned grad is {} on {}, the tensor {} on {}", g->dtype(),
                               g->device(), t.dtype(), t.device());
            }
            t.mutable_grad() = g.value_or(Tensor());
          },
          nb::arg("grad").none(), "The accumulated gradient, or None.")
      .def_prop_ro(
          "grad_fn", [](const Tensor& t) { return t.grad_fn(); },
          "The node that made this tensor, or None for a leaf.")
      .def_prop_ro("is_leaf", &Tensor::is_leaf, "True unless a recorded op made it.")
      .def_prop_ro("output_nr", &Tensor::output_nr, "Which output of its grad_fn it is.")
      .def_prop_ro(
          "retains_grad",
          [](const Tensor& t) {
            const autograd::AutogradMeta* meta = t.autograd_meta();
            return meta && meta->retains_grad;
          },
          "True after retain_grad() on a non-leaf.")
      .def("retain_grad", &Tensor::retain_grad, "Keeps this non-leaf's gradient in .grad.")
      .def_prop_rw(
          "data", [](const Tensor& t) { return t.detach(); },
          [](Tensor& t, const Tensor& v) { t.set_data(v.detach()); },
          "The same data without history; assigning makes the tensor use the assigned tensor's "
          "data (any shape, dtype or device), staying the same object.")
      .def(
          "backward",
          [](const Tensor& t, std::optional<Tensor> gradient, std::optional<bool> retain_graph,
             bool create_graph, std::optional<std::vector<Tensor>> inputs) {
            GilRelease release;
            const bool retain = retain_graph.value_or(create_graph);
            if (!inputs) {
              t.backward(gradient.value_or(Tensor()), retain, create_graph);
              return;
            }
            std::vector<Tensor> grads = autograd::grad(
                {t}, *inputs, gradient ? std::vector<Tensor>{*gradient} : std::vector<Tensor>{},
                retain, create_graph, /*allow_unused=*/true);
            autograd::NoGradGuard no_grad;
            for (size_t i = 0; i < inputs->size(); ++i) {
              if (!grads[i].defined()) continue;
              Tensor& slot = (*inputs)[i].mutable_grad();
              slot = slot.defined() ? slot + grads[i] : grads[i].detach();
            }
          },
          "gradient"_a = nb::none(), "retain_graph"_a = nb::none(), "create_graph"_a = false,
          "inputs"_a = nb::none(),
          "Accumulates the gradients of this tensor into the leaves' .grad (of `inputs` only, "
          "if given).")
      .def("register_hook", &register_grad_hook, "hook"_a,
           "Calls hook(grad) when this tensor's gradient is computed; a returned tensor "
           "replaces it. Returns a handle whose remove() disables the hook.")
      .def(
          "register_post_accumulate_grad_hook",
          [](const Tensor& t, nb::handle fn) {
            auto ref = std::make_shared<PyRef>(fn);
            t.register_post_accumulate_grad_hook(PyPostAccumulateHook{ref});
            return make_removable_handle([ref] { ref->reset(); });
          },
          "hook"_a, "Calls hook(tensor) after a gradient was accumulated into this leaf's .grad.");

  // Python protocols.
  cls.def("__repr__", &tensor_repr)
      .def(
          "__format__",
          [](const Tensor& t, const std::string& spec) -> nb::object {
            if (t.dim() == 0)
              return nb::module_::import_("builtins").attr("format")(item_object(t), spec);
            EMBER_CHECK_TYPE(spec.empty(),
                             "[format] format spec '{}' applies to 0-d tensors only (this one has "
                             "shape {})",
                             spec, shape_str(t.sizes()));
            return nb::str(tensor_repr(t).c_str());
          },
          "spec"_a)
      .def("__bool__", &is_nonzero)
      .def("__float__",
           [](const Tensor& t) {
             EMBER_CHECK(t.numel() == 1,
                         "[float] only one-element tensors can be converted to Python scalars "
                         "(this one has {})",
                         t.numel());
             return t.item();
           })
      .def("__int__",
           [](const Tensor& t) {
             EMBER_CHECK(t.numel() == 1,
                         "[int] only one-element tensors can be converted to Python scalars "
                         "(this one has {})",
                         t.numel());
             const Scalar v = t.item_scalar();
             // A floating element converts as Python's int(float): truncated, any size, and
             // ValueError / OverflowError for NaN / infinities (PyTorch's behaviour).
             if (!v.is_floating()) return nb::cast(v.to_int());
             PyObject* i = PyLong_FromDouble(v.to_double());
             if (!i) throw nb::python_error();
             return nb::steal<nb::object>(i);
           })
      .def("__index__",
           [](const Tensor& t) {
             EMBER_CHECK_TYPE(
                 t.numel() == 1 && (is_integral(t.dtype()) || t.dtype() == DType::Bool),
                 "[index] only integer tensors of a single element can be converted "
                 "to an index (got {} of shape {})",
                 t.dtype(), shape_str(t.sizes()));
             return t.item_scalar().to_int();
           })
      .def("__len__",
           [](const Tensor& t) {
             EMBER_CHECK_TYPE(t.dim() > 0, "[len] len() of a 0-d tensor");
             return t.size(0);
           })
      .def("__iter__",
           [](const Tensor& t) {
             EMBER_CHECK_TYPE(t.dim() > 0, "[iter] iteration over a 0-d tensor");
             std::vector<Tensor> rows;
             {
               GilRelease release;
               rows = unbind(t, 0);
             }
             return nb::iter(nb::cast(rows));
           })
      .def("__reduce_ex__",
           [](nb::handle self, nb::handle) {
             const Tensor& t = self_of(self);
             Tensor host;
             {
               GilRelease release;
               host = t.detach().to(Device::cpu()).contiguous();
             }
             nb::bytes data(static_cast<const char*>(host.data_ptr()), host.nbytes());
             return nb::make_tuple(
                 nb::module_::import_("ember._utils").attr("_rebuild_tensor"),
                 nb::make_tuple(std::string(dtype_name(t.dtype())), Ints{t.sizes()}, data,
                                t.requires_grad(), t.device().str(),
                                nb::isinstance<PyParameter>(self)));
           })
      .def("__deepcopy__", [](nb::handle self, nb::handle) {
        const Tensor& t = self_of(self);
        Tensor c;
        {
          GilRelease release;
          c = t.detach().clone();
        }
        if (t.requires_grad() && t.is_leaf()) c.requires_grad_(true);
        return wrap_tensor(c, self.type());
      });
  m.def("_rebuild_tensor", &rebuild_tensor);
  m.def(
      "_live_tensor_objects", []() { return live_tensors().size(); },
      "How many tensors have a Python object now (the identity map's size; for leak tests).");
  cls.attr("__array_priority__") = 1000;  // NumPy defers mixed operators to the tensor

  // nn.Parameter: a tensor a module registers and an optimizer updates.
  nb::class_<PyParameter, PyTensor> param(m, "Parameter", nb::dynamic_attr(), tensor_type_slots(),
                                          "A tensor that is a module parameter (requires grad "
                                          "by default).");
  g_parameter_type = param;
  param
      .def(
          "__init__",
          [](PyParameter* self, std::optional<Tensor> data, bool requires_grad) {
            Tensor t = data ? data->detach() : empty({0});
            // An integer parameter that requires grad is refused by requires_grad_ (the one check).
            if (requires_grad) t.requires_grad_(true);
            new (self) PyParameter(std::move(t));
            register_tensor_object(nb::find(self));
          },
          "data"_a = nb::none(), "requires_grad"_a = true,
          "A parameter sharing `data`'s memory (a new leaf).")
      .def("__repr__", [](const Tensor& t) { return "Parameter containing:\n" + tensor_repr(t); });

  // Factories.
  m.def(
      "tensor",
      [](nb::handle data, std::optional<DType> dtype, std::optional<Device> device,
         bool requires_grad, bool pin_memory) {
        Tensor t = tensor_from_data(data, dtype, device);
        if (pin_memory) t = t.pin_memory();
        return finish(t, requires_grad);
      },
      "data"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false, "pin_memory"_a = false,
      nb::sig("def tensor(data: object, *, dtype: ember.dtype | None = None, device: "
              "ember.device | str | None = None, requires_grad: bool = False, pin_memory: bool "
              "= False) -> ember.Tensor"),
      "A new tensor copied from data: numbers, nested lists, NumPy arrays, tensors.");
  m.def(
      "as_tensor",
      [](nb::handle data, std::optional<DType> dtype, std::optional<Device> device) -> Tensor {
        if (nb::isinstance<PyTensor>(data)) {
          ToArgs a;
          a.dtype = dtype;
          a.device = device.value_or(device_for_tensor_data(self_of(data)));
          return apply_to(self_of(data), a);
        }
        if (PyObject_CheckBuffer(data.ptr()) && !PyBytes_Check(data.ptr())) {
          bool read_only = false;
          const Tensor shared = tensor_from_buffer(data, "as_tensor", &read_only);
          Tensor t = shared;
          if (dtype && t.dtype() != *dtype) t = t.to(*dtype);
          if (const Device want = device.value_or(default_device()); t.device() != want) {
            t = t.to(want);
          }
          if (read_only && t.is_same(shared)) warn_read_only_shared("as_tensor");
          return t;
        }
        return tensor_from_data(data, dtype, device);
      },
      "data"_a, "dtype"_a = nb::none(), "device"_a = nb::none(),
      "data as a tensor, sharing memory where it can (tensors, NumPy arrays).");
  m.def(
      "from_numpy",
      [](nb::handle array) {
        bool read_only = false;
        Tensor t = tensor_from_buffer(array, "from_numpy", &read_only);
        if (read_only) warn_read_only_shared("from_numpy");
        return t;
      },
      "ndarray"_a, "A tensor sharing a NumPy array's memory (no copy).");
  m.def(
      "_map_shared",
      [](int fd, int64_t size, bool keep_fd, DType dtype, Ints sizes, Ints strides,
         int64_t offset) { return map_shared(fd, size, keep_fd, dtype, sizes, strides, offset); },
      "fd"_a, "size"_a, "keep_fd"_a, "dtype"_a, "sizes"_a, "strides"_a, "offset"_a,
      "A tensor over `size` bytes of shared memory mapped from `fd`, from byte `offset`; with "
      "keep_fd the mapping owns the fd (Note [Tensors over shared memory]).");
  m.def("_shared_segment", &shared_segment, "tensor"_a,
        "(start address, size, fd or -1) of the shared mapping holding the tensor's elements, "
        "or None (Note [Tensors over shared memory]).");
  m.def("from_dlpack", &dlpack_to_tensor, "ext_tensor"_a,
        "A tensor sharing the memory of an object with __dlpack__ (or a DLPack capsule).");

  for (const SizeFactory& f : kSizeFactories) {
    m.def(
        f.name,
        [f](nb::args size, std::optional<DType> dtype, std::optional<Device> device,
            bool requires_grad, bool pin_memory) {
          const Shape s = sizes_from_args(size, f.name);
          const TensorOptions o = options(dtype, device, pin_memory);
          GilRelease release;
          return finish(f.make(s, o), requires_grad);
        },
        "size"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
        "requires_grad"_a = false, "pin_memory"_a = false,
        nb::sig(size_factory_sig(f.name, false).c_str()),
        fmt::format("{} (float32 unless dtype says otherwise).", f.doc).c_str());
  }
  m.def(
      "full",
      [](Ints size, PyScalar value, std::optional<DType> dtype, std::optional<Device> device,
         bool requires_grad) {
        const TensorOptions o = options(dtype, device, false, dtype_of_value(value));
        GilRelease release;
        return finish(full(size, value, o), requires_grad);
      },
      "size"_a, "fill_value"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false,
      "Every element fill_value (bool, int64 or float32 by its kind unless dtype is given).");

  auto like_factory = [&](const char* name, auto make, const char* doc) {
    m.def(
        name,
        [make](const Tensor& input, std::optional<DType> dtype, std::optional<Device> device,
               bool requires_grad, MemoryFormat) {
          const TensorOptions o(dtype.value_or(input.dtype()), device.value_or(input.device()));
          GilRelease release;
          return finish(make(input, o), requires_grad);
        },
        "input"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
        "requires_grad"_a = false, "memory_format"_a = MemoryFormat::Preserve, doc);
  };
  like_factory(
      "zeros_like",
      [](const Tensor& t, const TensorOptions& o) {
        return o.dtype == t.dtype() && o.device == t.device() ? zeros_like(t) : zeros(t.sizes(), o);
      },
      "Zeros shaped like input.");
  like_factory(
      "ones_like",
      [](const Tensor& t, const TensorOptions& o) {
        return o.dtype == t.dtype() && o.device == t.device() ? ones_like(t) : ones(t.sizes(), o);
      },
      "Ones shaped like input.");
  like_factory(
      "empty_like",
      [](const Tensor& t, const TensorOptions& o) {
        return o.dtype == t.dtype() && o.device == t.device() ? empty_like(t) : empty(t.sizes(), o);
      },
      "An uninitialised tensor shaped like input.");
  like_factory(
      "rand_like", [](const Tensor& t, const TensorOptions& o) { return rand(t.sizes(), o); },
      "Uniform [0, 1) shaped like input.");
  like_factory(
      "randn_like", [](const Tensor& t, const TensorOptions& o) { return randn(t.sizes(), o); },
      "Standard normal shaped like input.");
  m.def(
      "full_like",
      [](const Tensor& input, PyScalar value, std::optional<DType> dtype,
         std::optional<Device> device, bool requires_grad) {
        const TensorOptions o(dtype.value_or(input.dtype()), device.value_or(input.device()));
        GilRelease release;
        return finish(full(input.sizes(), value, o), requires_grad);
      },
      "input"_a, "fill_value"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false, "fill_value shaped like input.");

  auto random_factory = [&](const char* name, auto make, const char* doc) {
    m.def(
        name,
        [make, name](nb::args size, Generator* gen, std::optional<DType> dtype,
                     std::optional<Device> device, bool requires_grad, bool pin_memory) {
          const Shape s = sizes_from_args(size, name);
          const TensorOptions o = options(dtype, device, pin_memory);
          GilRelease release;
          return finish(make(s, o, gen), requires_grad);
        },
        "size"_a, nb::kw_only(), "generator"_a.none() = nb::none(), "dtype"_a = nb::none(),
        "device"_a = nb::none(), "requires_grad"_a = false, "pin_memory"_a = false,
        nb::sig(fmt::format("def {}(*size: int | collections.abc.Sequence[int], generator: "
                            "ember.Generator | None = None, dtype: ember.dtype | None = None, "
                            "device: ember.device | str | None = None, requires_grad: bool = "
                            "False, pin_memory: bool = False) -> ember.Tensor",
                            name)
                    .c_str()),
        doc);
  };
  random_factory(
      "rand", [](const Shape& s, const TensorOptions& o, Generator* g) { return rand(s, o, g); },
      "Uniform in [0, 1).");
  random_factory(
      "randn", [](const Shape& s, const TensorOptions& o, Generator* g) { return randn(s, o, g); },
      "Standard normal.");
  m.def(
      "randint",
      [](nb::args args, std::optional<int64_t> low, std::optional<int64_t> high,
         std::optional<Ints> size, Generator* gen, std::optional<DType> dtype,
         std::optional<Device> device, bool requires_grad) {
        // torch.randint(low=0, high, size): positionals fill what the keywords leave, from the
        // right (size, then high, then low).
        std::vector<nb::handle> pos(args.begin(), args.end());
        auto take = [&](const char* what) {
          EMBER_CHECK_TYPE(!pos.empty(),
                           "[randint] missing {}: takes (high, size) or (low, high, size), "
                           "positionally or by keyword",
                           what);
          nb::handle h = pos.back();
          pos.pop_back();
          return h;
        };
        if (!size) size = nb::cast<Ints>(take("size"));
        if (!high) high = nb::cast<int64_t>(take("high"));
        if (!low) low = pos.empty() ? 0 : nb::cast<int64_t>(take("low"));
        EMBER_CHECK_TYPE(pos.empty(),
                         "[randint] takes (high, size) or (low, high, size): got {} more "
                         "arguments",
                         pos.size());
        const TensorOptions o = options(dtype, device, false, DType::Int64);
        GilRelease release;
        return finish(randint(*low, *high, *size, o, gen), requires_grad);
      },
      "args"_a, nb::kw_only(), "low"_a = nb::none(), "high"_a = nb::none(), "size"_a = nb::none(),
      "generator"_a.none() = nb::none(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false,
      nb::sig("def randint(*args: int | collections.abc.Sequence[int], low: int | None = None, "
              "high: int | None = None, size: collections.abc.Sequence[int] | None = None, "
              "generator: ember.Generator | None = None, dtype: ember.dtype | None = None, "
              "device: ember.device | str | None = None, requires_grad: bool = False) -> "
              "ember.Tensor"),
      "Integers uniform in [low, high): randint(high, size) or randint(low, high, size), by "
      "position or keyword.");
  m.def(
      "randperm",
      [](int64_t n, Generator* gen, DType dtype, std::optional<Device> device) {
        EMBER_CHECK(n >= 0, "[randperm] n must be non-negative, got {}", n);
        GilRelease release;
        Tensor keys = rand({n}, TensorOptions(DType::Float64), gen);
        Tensor perm = std::get<1>(sort(keys, 0));
        return perm.to(dtype).to(device.value_or(default_device()));
      },
      "n"_a, nb::kw_only(), "generator"_a.none() = nb::none(), "dtype"_a = DType::Int64,
      "device"_a = nb::none(), "A random permutation of 0..n-1.");
  m.def(
      "randint_like",
      [](const Tensor& input, int64_t low, std::optional<int64_t> high,
         std::optional<DType> dtype) {
        const int64_t lo = high ? low : 0, hi = high ? *high : low;
        GilRelease release;
        return randint(lo, hi, input.sizes(),
                       TensorOptions(dtype.value_or(input.dtype()), input.device()));
      },
      "input"_a, "low"_a, "high"_a = nb::none(), nb::kw_only(), "dtype"_a = nb::none(),
      "Integers uniform in [low, high) shaped like input.");
  m.def(
      "arange",
      [](PyScalar start, std::optional<PyScalar> end, PyScalar step, std::optional<DType> dtype,
         std::optional<Device> device, bool requires_grad) {
        Scalar s = start, e = end ? Scalar(*end) : Scalar(start);
        if (!end) s = Scalar(int64_t{0});
        std::optional<TensorOptions> o;
        if (dtype || device) {
          const bool all_int = !s.is_floating() && !e.is_floating() && !Scalar(step).is_floating();
          o = TensorOptions(dtype.value_or(all_int ? DType::Int64 : default_dtype()),
                            device.value_or(default_device()));
        }
        GilRelease release;
        return finish(arange(s, e, step, o), requires_grad);
      },
      "start"_a, "end"_a = nb::none(), "step"_a = PyScalar{Scalar(int64_t{1})}, nb::kw_only(),
      "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false,
      "start, start+step, ... < end (arange(end) counts from 0); int64 if all are ints.");
  m.def(
      "linspace",
      [](double start, double end, int64_t steps, std::optional<DType> dtype,
         std::optional<Device> device, bool requires_grad) {
        const TensorOptions o = options(dtype, device, false);
        GilRelease release;
        return finish(linspace(start, end, steps, o), requires_grad);
      },
      "start"_a, "end"_a, "steps"_a, nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false, "`steps` evenly spaced values from start to end inclusive.");
  m.def(
      "eye",
      [](int64_t n, std::optional<int64_t> mcols, std::optional<DType> dtype,
         std::optional<Device> device, bool requires_grad) {
        const TensorOptions o = options(dtype, device, false);
        GilRelease release;
        return finish(eye(n, mcols.value_or(-1), o), requires_grad);
      },
      "n"_a, "m"_a = nb::none(), nb::kw_only(), "dtype"_a = nb::none(), "device"_a = nb::none(),
      "requires_grad"_a = false, "The n x m identity.");
  m.def(
      "multinomial",
      [](const Tensor& input, int64_t num_samples, bool replacement, Generator* gen) {
        return multinomial(input, num_samples, replacement, gen);
      },
      "input"_a, "num_samples"_a, "replacement"_a = false, nb::kw_only(),
      "generator"_a.none() = nb::none(), release_gil(),
      "Indices drawn from each row of input's weights.");
  m.def(
      "bernoulli",
      [](const Tensor& input, std::optional<double> p, Generator* gen) {
        return p ? bernoulli(input, *p, gen) : bernoulli(input, gen);
      },
      "input"_a, "p"_a = nb::none(), nb::kw_only(), "generator"_a.none() = nb::none(),
      release_gil(), "1 with probability input (or p), else 0, elementwise.");
  m.def(
      "normal",
      [](double mean, double std, Ints size, Generator* gen, std::optional<DType> dtype,
         std::optional<Device> device, bool requires_grad) {
        const TensorOptions o = options(dtype, device, false);
        GilRelease release;
        return finish(normal(mean, std, size, o, gen), requires_grad);
      },
      "mean"_a, "std"_a, "size"_a, nb::kw_only(), "generator"_a.none() = nb::none(),
      "dtype"_a = nb::none(), "device"_a = nb::none(), "requires_grad"_a = false,
      "Samples of N(mean, std^2) of the given size.");
  m.def(
      "normal",
      [](const Tensor& mean, const Tensor& std, Generator* gen) { return normal(mean, std, gen); },
      "mean"_a, "std"_a, nb::kw_only(), "generator"_a.none() = nb::none(), release_gil(),
      "Samples of N(mean, std^2) elementwise, mean and std broadcast together.");
  m.def(
      "normal",
      [](const Tensor& mean, double std, Generator* gen) { return normal(mean, std, gen); },
      "mean"_a, "std"_a = 1.0, nb::kw_only(), "generator"_a.none() = nb::none(), release_gil(),
      "Samples of N(mean, std^2) with a tensor of means.");
  m.def(
      "normal",
      [](double mean, const Tensor& std, Generator* gen) { return normal(mean, std, gen); },
      "mean"_a, "std"_a, nb::kw_only(), "generator"_a.none() = nb::none(), release_gil(),
      "Samples of N(mean, std^2) with a tensor of stds.");

  bind_ops(m, cls);
  bind_linalg(m, cls);
  bind_indexing(cls);
  add_out_overloads(m);
  add_out_overloads(nb::borrow<nb::module_>(m.attr("linalg")));
}

namespace {

/** `result` written into `out` (a tensor, or a sequence of tensors for a tuple result). */
nb::object write_out_py(nb::handle out, nb::handle result, const std::string& op) {
  auto one = [&](nb::handle o, nb::handle r) {
    EMBER_CHECK_TYPE(nb::isinstance<PyTensor>(o), "[{}] out must be a Tensor, got {}", op,
                     nb::cast<std::string>(nb::str(o.type().attr("__name__"))));
    EMBER_CHECK_TYPE(nb::isinstance<PyTensor>(r), "[{}] takes no out= (it returns {})", op,
                     nb::cast<std::string>(nb::str(r.type().attr("__name__"))));
    Tensor& dst = *nb::inst_ptr<PyTensor>(o);
    const Tensor& src = *nb::inst_ptr<PyTensor>(r);
    const Shape before = dst.sizes();
    bool resized = false;
    {
      GilRelease release;
      write_out(dst, src, op, &resized);
    }
    if (resized) {
      const std::string msg = fmt::format(
          "[{}] an out with elements was resized from shape {} to the result's {}; pass an out "
          "of the result's shape, or an empty one",
          op, shape_str(before), shape_str(src.sizes()));
      warn(PyExc_UserWarning, msg.c_str(), 2);
    }
  };
  if (!PyTuple_Check(result.ptr())) {
    one(out, result);
    return nb::borrow(out);
  }
  const size_t n = nb::len(result);
  EMBER_CHECK_TYPE(
      (nb::isinstance<nb::tuple>(out) || nb::isinstance<nb::list>(out)) && nb::len(out) == n,
      "[{}] out must be a tuple of {} tensors for this function", op, n);
  for (size_t i = 0; i < n; ++i) one(out[i], result[i]);
  return nb::borrow(out);
}

}  // namespace

// Note [out= from Python]
// Every function of ember and ember.linalg takes PyTorch's out=: a second overload, tried only
// when the first refused the call, takes (*args, out=..., **kwargs), calls the function without
// out and writes the result through the core's write_out (Note [out= arguments]). Calls without
// out never reach it (it defers with next_overload), so they cost nothing more, and one overload
// per function replaces an out argument in every binding.
void add_out_overloads(nb::module_ m) {
  static std::deque<std::string> signatures;  // nanobind keeps the pointer
  std::vector<std::string> functions;
  for (auto [name, fn] : nb::borrow<nb::dict>(m.attr("__dict__"))) {
    if (std::string_view(Py_TYPE(fn.ptr())->tp_name) == "nanobind.nb_func") {
      functions.push_back(nb::cast<std::string>(name));
    }
  }
  for (const std::string& name : functions) {
    signatures.push_back(fmt::format(
        "def {}(*args: typing.Any, out: ember.Tensor | collections.abc.Sequence[ember.Tensor], "
        "**kwargs: typing.Any) -> typing.Any",
        name));
    m.def(
        name.c_str(),
        [m, name](nb::args args, nb::kwargs kwargs) -> nb::object {
          if (!kwargs.contains("out")) throw nb::next_overload();
          nb::object out = kwargs["out"];
          if (PyDict_DelItemString(kwargs.ptr(), "out") != 0) throw nb::python_error();
          // The function as it is now (adding this overload remade it): the call, without out,
          // is taken by its first overloads, or refused by this one.
          nb::object fn = m.attr(name.c_str());
          nb::object result = nb::steal(PyObject_Call(fn.ptr(), args.ptr(), kwargs.ptr()));
          if (!result.is_valid()) throw nb::python_error();
          if (out.is_none()) return result;
          return write_out_py(out, result, name);
        },
        nb::sig(signatures.back().c_str()),
        "With out=: the result written into out (resized to its shape), which is returned.");
  }
}

}  // namespace ember::python
