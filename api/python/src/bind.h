// What every file of the Python bindings shares: the Tensor object and its identity, the
// conversions of Ember's value types (dtype, device, sizes, numbers), the GIL rules, and the
// registration function of each file (module.cpp calls them in order).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <ember/ember.h>

namespace ember::python {

namespace nb = nanobind;
using namespace nb::literals;

// Note [Python tensors keep their identity]
// ember.Tensor wraps an ember::Tensor handle (PyTensor below). A C++ op returns handles by value,
// and a naive binding would make a new Python object for every handle, so `m.weight is
// m.weight` would be False and a dict keyed by parameters (an optimizer's state, a user's map
// from parameter to name) would miss. As in PyTorch, the Python object is preserved instead:
// `live_tensors` maps each TensorImpl that has a Python object to that object (borrowed), so
// handing the same impl to Python again returns the same object. The map is only touched with
// the GIL held: an entry is made when a PyTensor is created and dropped by its destructor, which
// Python runs when the object dies (the impl outlives its entry, since the object holds it).
// Tensor handles copied inside C++ (GIL released) never touch it.

/** The C++ object inside an ember.Tensor: a handle that leaves the identity map when freed. */
struct PyTensor : Tensor {
  PyTensor() = default;
  /** Holds `t` (not yet in the identity map: register_tensor_object does that). */
  explicit PyTensor(Tensor t) : Tensor(std::move(t)) {}
  PyTensor(const PyTensor&) = default;
  ~PyTensor();
};

/** The C++ object inside an ember.nn.Parameter (a PyTensor whose Python type says so). */
struct PyParameter : PyTensor {
  using PyTensor::PyTensor;
};

/** The Python object of `t`: the live one if its impl has one, else a new ember.Tensor (or
 *  `type`, a subclass of it); None for an undefined tensor. Needs the GIL. */
nb::object wrap_tensor(const Tensor& t, nb::handle type = nb::handle());
/** Records `obj` (an initialised PyTensor instance) as the Python object of its impl, unless
 *  the impl has one already. */
void register_tensor_object(nb::handle obj);
/** The ember.Tensor type object. */
nb::handle tensor_type();
/** The ember.nn.Parameter type object. */
nb::handle parameter_type();

/** An ember.RemovableHandle whose remove() calls `remove` once. */
nb::object make_removable_handle(std::function<void()> remove);

/** Sizes, dims or strides from Python: an int, or a sequence (list, tuple, ember.Size) of ints,
 *  or an integer tensor of at most one dim. */
struct Ints {
  Shape v;
  /** As the core takes lists. */
  operator IntList() const { return v; }  // NOLINT(google-explicit-constructor)
  size_t size() const { return v.size(); }
};

/** The one value of a 1-d op's size argument, given as an int or a 1-tuple (kernel_size=3 or
 *  (3,)); `op` and `what` name it in the error for more values. */
inline int64_t single(const Ints& v, const char* op, const char* what) {
  EMBER_CHECK(v.size() == 1, "[{}] {} must be an int or a tuple of one int, got {} values", op,
              what, v.size());
  return v.v[0];
}

/** Sizes or dims given as *args or as one sequence: zeros(2, 3), zeros((2, 3)), view(-1). */
Shape sizes_from_args(nb::args args, const char* op);

/** Tensors given as *args or as one sequence: meshgrid(a, b) and meshgrid([a, b]). */
std::vector<Tensor> tensors_from_args(nb::args args, const char* op);

/** An ember.Size (a tuple subclass) of `sizes`. */
nb::object make_size(IntList sizes);

/** Where ember.tensor(t) and as_tensor(t) put a copy of tensor t without a device argument. */
Device device_for_tensor_data(const Tensor& t);

/** F.interpolate's and nn.Upsample's arguments as the core's options. */
InterpolateOptions interpolate_options(const std::optional<Ints>& size, nb::handle scale_factor,
                                       std::string mode, std::optional<bool> align_corners,
                                       std::optional<bool> recompute_scale_factor, bool antialias);

/** A convolution's padding argument from Python: numbers (an int, or one per spatial dim) or
 *  the name 'same' / 'valid', which the core's ConvPadding carries. */
struct ConvPaddingArg {
  Shape numbers;                     ///< one per spatial dim, when not named
  std::optional<ConvPadding> named;  ///< 'same' or 'valid'
};
/** Reads `padding` for a convolution over `spatial` dims. */
ConvPaddingArg conv_padding_arg(nb::handle padding, size_t spatial, const char* op);

/** Gives every function of `m` PyTorch's out= (Note [out= from Python] in tensor.cpp). */
void add_out_overloads(nb::module_ m);

/** A Python number as an op's scalar: bool, int or float (NumPy's scalars included). */
struct PyScalar {
  Scalar v;
  /** As the core takes numbers. */
  operator Scalar() const { return v; }  // NOLINT(google-explicit-constructor)
};

/** The other operand of a binary op: a tensor (pointing into its Python object, which the call
 *  keeps alive) or a Python number. */
struct Operand {
  const Tensor* tensor = nullptr;
  Scalar scalar;
};

/** An ember.dtype object's payload (ember.float32 and friends are the only instances). */
struct DTypeObject {
  DType dtype;
};

/** The ember.dtype object of `d`. */
nb::object dtype_object(DType d);
/** A factory's TensorOptions from its dtype / device keywords (fallback: the dtype when none). */
TensorOptions options(std::optional<DType> dtype, std::optional<Device> device, bool pin,
                      DType fallback = default_dtype());
/** t, made to require grad when a factory's requires_grad keyword says so. */
Tensor finish(Tensor t, bool requires_grad);

/** A device from Python: an ember.device, a string ("cuda:1", parsed and checked by the core,
 *  so a bad one raises its DeviceError) or an int (a CUDA index, as PyTorch takes it). */
Device device_from(nb::handle d);

/** A tensor made from Python data: a (nested) list or tuple of numbers or tensors, a number, a
 *  NumPy array, a tensor, or anything with __dlpack__ or __array__; copies. Without `device`,
 *  host data goes to default_device() and a tensor or DLPack capsule keeps its device. */
Tensor tensor_from_data(nb::handle data, std::optional<DType> dtype, std::optional<Device> device);

/** What a to(...) call asks for (Tensor.to and Module.to take the same arguments). */
struct ToArgs {
  std::optional<Device> device;
  std::optional<DType> dtype;
  bool non_blocking = false;
  bool copy = false;
  std::optional<MemoryFormat> memory_format;
};
/** Parses to(device), to(dtype), to(device, dtype), to(tensor) and the keywords device, dtype,
 *  non_blocking, copy and memory_format. */
ToArgs parse_to(nb::args args, nb::kwargs kwargs);
/** `t` converted as `a` asks. */
Tensor apply_to(const Tensor& t, const ToArgs& a);

/** The `reduction` argument of the losses: "mean", "sum", "none" ("batchmean" for kl_div). */
Reduction parse_reduction(std::string_view reduction, const char* op);

// Note [Threads at interpreter exit]
// A daemon thread may be inside an Ember call (an op with the GIL released, a backward calling a
// Python hook) when the main thread exits. Once Python has started finalising, a thread that
// waits for the GIL is ended by pthread_exit (CPython before 3.14), which unwinds the thread's
// stack with a forced unwind; our frames cannot pass it on (a destructor that takes the GIL back
// is noexcept, nanobind's dispatcher catches everything), so the process aborts ("terminate called
// without an active exception"). So no Ember frame waits for the GIL once exit has begun: every
// place that takes the GIL (GilRelease's destructor, GilAcquire, PyRef) passes an ExitGate
// (Note [Exit gates] in ember/util/exit_gate.h) in gil_enter(). A Python atexit handler, which
// runs before finalisation starts, closes the gate, then lets the threads already past it take
// the GIL (it waits for them with the GIL released); a thread that finds the gate closed parks
// for good (the process ends around it, as CPython 3.14 parks daemon threads itself), and PyRef
// leaks its reference instead. The thread running the atexit handler (the one finalising) keeps
// using the GIL normally. The gate costs two atomic operations per GIL acquisition. A forked
// child reopens it. The kernels have a gate of their own, which the same handler closes
// (close_kernels_for_exit, Note [Kernels at exit] in core/dispatch/call.cpp): a daemon thread's
// next kernel call parks it, letting go of the GIL first if it holds it.

/** Called before taking the GIL: returns if the caller may take it (then gil_entered() must
 *  follow once it holds it); parks the thread for good once the interpreter is exiting. */
void gil_enter() noexcept;
/** Called once the GIL is held after gil_enter(). */
void gil_entered() noexcept;
/** True if this thread may take the GIL (not parked by exit); false when it must leave Python
 *  objects alone (the interpreter is exiting or gone). Takes nothing. */
bool gil_available() noexcept;

/** Releases the GIL for a scope and takes it back, through the exit gate (Note [Threads at
 *  interpreter exit]); Ember's gil_scoped_release. */
class GilRelease {
 public:
  GilRelease() noexcept : state_(PyEval_SaveThread()) {}
  ~GilRelease() {
    gil_enter();
    PyEval_RestoreThread(state_);
    gil_entered();
  }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* state_;
};

/** Takes the GIL for a scope, on any thread, through the exit gate; Ember's
 *  gil_scoped_acquire. */
class GilAcquire {
 public:
  GilAcquire() noexcept {
    if (PyGILState_Check()) {  // held already (a callback on a Python thread): no waiting
      state_ = PyGILState_Ensure();
      return;
    }
    gil_enter();
    state_ = PyGILState_Ensure();
    gil_entered();
  }
  ~GilAcquire() { PyGILState_Release(state_); }
  GilAcquire(const GilAcquire&) = delete;
  GilAcquire& operator=(const GilAcquire&) = delete;

 private:
  PyGILState_STATE state_;
};

/** Releases the GIL for the duration of a C++ call (nb::call_guard). */
using release_gil = nb::call_guard<GilRelease>;

/** Issues a Python warning from C++; if the warning filters turn it into an error (python -W
 *  error), raises that exception (nb::python_error) instead of returning with it pending. */
void warn(PyObject* category, const char* message, int stack_level = 1);

// Note [Python objects held by C++]
// Hooks, custom Functions, datasets and Python modules leave Python objects inside C++ state
// (closures of autograd nodes, module hook lists) that may be destroyed on any thread, with or
// without the GIL (an autograd graph is freed where its last tensor dies). PyRef owns a
// reference and takes the GIL to drop it; after the interpreter has finalised it leaks the
// reference instead of touching a dead interpreter (nanobind's cleanup_guard).
/** A strong reference to a Python object that is safe to copy and destroy on any thread. */
class PyRef {
 public:
  PyRef() = default;
  /** Takes a new reference to `o` (the caller holds the GIL). */
  explicit PyRef(nb::handle o) : obj_(o.ptr()) { Py_XINCREF(obj_); }
  PyRef(const PyRef& o) : obj_(o.obj_) {
    if (obj_) {
      GilAcquire gil;
      Py_INCREF(obj_);
    }
  }
  PyRef(PyRef&& o) noexcept : obj_(std::exchange(o.obj_, nullptr)) {}
  PyRef& operator=(PyRef o) noexcept {
    std::swap(obj_, o.obj_);
    return *this;
  }
  ~PyRef() { reset(); }
  /** Drops the reference (taking the GIL); leaks it once the interpreter is exiting or gone
   *  (Note [Threads at interpreter exit]). */
  void reset() noexcept {
    PyObject* o = std::exchange(obj_, nullptr);
    if (!o || !gil_available()) return;
    GilAcquire gil;
    Py_DECREF(o);
  }
  /** The object (borrowed, null once reset); call with the GIL held. */
  nb::handle get() const { return obj_; }
  explicit operator bool() const { return obj_ != nullptr; }
  /** Reports the reference to the garbage collector (a tp_traverse step). */
  int visit(visitproc visit, void* arg) const {
    Py_VISIT(obj_);
    return 0;
  }

 private:
  PyObject* obj_ = nullptr;
};

// Note [Python objects in the garbage collector]
// C++ state keeps Python objects that may refer back to their owner: a tensor's hook that reads
// the tensor, a forward hook that is a bound method of its module, a custom Function's backward
// whose ctx keeps an output. Python's cycle collector sees only references that tp_traverse
// reports, so the Python types whose C++ objects hold such references report them (Tensor,
// Parameter, every module class), and tp_clear drops them to break a cycle. A reference is
// reported only where the Python object is the sole owner of the C++ state that holds it:
// otherwise C++ may keep that state (and the callable) after the Python object is collected, and
// the collector would have cleared a function still in use. Concretely: a tensor's hooks when no
// other handle shares its TensorImpl, and its grad_fn's Python hooks and backward when the
// tensor alone holds the node; a module's hooks always when the Python object holds the module
// itself (a C++ container holding it keeps the object alive through nanobind's shared_ptr, an
// external reference), only when it holds the sole shared_ptr otherwise; a submodule made in
// Python when the module holds the sole shared_ptr to it, a submodule made in C++ (recursively)
// likewise; parameters and buffers as tensors. Every Python callable C++ keeps is held by one of
// the functors below (a shared PyRef, so copying a hook list does not touch reference counts and
// needs no GIL), which is how the traversal finds it: std::function::target.

/** A Python gradient hook on a tensor (Tensor::register_hook): hook(grad) -> None or a new
 *  gradient; its handle's remove() drops the callable. */
struct PyGradHook {
  std::shared_ptr<PyRef> fn;
  /** Calls the hook with the GIL. */
  Tensor operator()(const Tensor& grad) const;
};

/** A Python hook run after a leaf's .grad was accumulated: hook(tensor). */
struct PyPostAccumulateHook {
  std::shared_ptr<PyRef> fn;
  /** Calls the hook with the GIL. */
  void operator()(const Tensor& leaf) const;
};

/** The backward of a custom Function (ember.autograd.Function): a Python callable from the
 *  output gradients to the input gradients, recorded as a LambdaNode's closure. */
struct PyBackward {
  std::shared_ptr<PyRef> fn;
  size_t inputs = 0;
  std::string name;
  /** Calls the Python backward with the GIL. */
  std::vector<Tensor> operator()(const std::vector<Tensor>& grads,
                                 const autograd::LambdaNode&) const;
};

/** Reports the Python objects that `t` keeps (Note [Python objects in the garbage collector])
 *  if `owners` handles, the caller's included, are all that share its TensorImpl. */
int traverse_tensor(const Tensor& t, visitproc visit, void* arg, uint32_t owners = 1);
/** Drops those objects (tp_clear), under the same condition. */
void clear_tensor(const Tensor& t, uint32_t owners = 1);

/** The C++ module inside a module object; AttributeError naming `what` while its
 *  Module.__init__ has not run (Note [Modules before Module.__init__] in nn.cpp). */
nn::Module& module_of(nb::handle self, std::string_view what);
/** The type slots of the module classes bound below Module: the garbage collector's traversal
 *  (Note [Python objects in the garbage collector]); Module's tp_getattro is inherited. */
nb::type_slots module_type_slots();
/** The type slots of ember.Tensor and ember.nn.Parameter (the collector's traversal). */
nb::type_slots tensor_type_slots();

/** Keeps the arguments of a module __init__ in the instance (Note [Copying and pickling
 *  modules] in nn.cpp): args[0] is the instance, then one object per parameter. */
void record_init_args(PyObject** args, size_t nargs);

/** The call policy of every module class's __init__: record_init_args after it ran. */
struct RecordInit {
  /** Nothing before the call. */
  template <size_t N>
  static void precall(PyObject**, std::integral_constant<size_t, N>, nb::detail::cleanup_list*) {}
  /** Records the arguments once the instance is made. */
  template <size_t N>
  static void postcall(PyObject** args, std::integral_constant<size_t, N>, nb::handle) {
    record_init_args(args, N);
  }
};

/** The call policy that makes a module class's __init__ record its arguments. */
inline nb::call_policy<RecordInit> record_init() {
  return {};
}

/** Binds T.forward(input) for a module class whose forward takes and returns one tensor, and
 *  marks the class so that calling a module of it with one tensor runs Module::operator()
 *  directly (Note [Python modules and C++ modules] in nn.cpp). Called on a Python subclass
 *  (super().forward), it runs T's own forward, not the subclass's override again. */
template <class T, class... Extra>
void bind_tensor_forward(nb::class_<T, Extra...>& cls) {
  cls.def(
      "forward",
      [](nb::handle self, const Tensor& x) {
        module_of(self, "forward");
        T& m = nb::cast<T&>(self);
        const bool derived = nb::inst_python_derived(self);
        GilRelease release;
        if (!derived) return static_cast<nn::Module&>(m).forward(x);
        if constexpr (requires { m.T::forward(x); }) {
          return m.T::forward(x);
        } else {
          return m.nn::Module::forward(x);
        }
      },
      "input"_a, "The module's computation on one tensor.");
  cls.attr("_tensor_forward") = true;
}

// Registration of each part of the module, in module.cpp's order.
void bind_errors(nb::module_& m);
void bind_runtime(nb::module_& m);
void bind_tensor(nb::module_& m);
void bind_indexing(nb::class_<PyTensor>& cls);
void bind_ops(nb::module_& m, nb::class_<PyTensor>& cls);
void bind_linalg(nb::module_& m, nb::class_<PyTensor>& cls);
void bind_autograd(nb::module_& m);
void bind_nn(nb::module_& m);
void bind_optim(nb::module_& m);
void bind_data(nb::module_& m);
void bind_io(nb::module_& m);
void bind_amp(nb::module_& m);
void bind_profiler(nb::module_& m);
void bind_distributed(nb::module_& m);
void bind_models(nb::module_& m);
void bind_onnx(nb::module_& m);
void bind_compile(nb::module_& m);

/** An optional tensor argument (None from Python) as the undefined Tensor the C++ API takes. */
inline Tensor opt(const std::optional<Tensor>& t) {
  return t.value_or(Tensor());
}

}  // namespace ember::python

namespace nanobind::detail {

/** ember::Tensor arguments are read out of ember.Tensor objects; results become the tensor's
 *  Python object (Note [Python tensors keep their identity]); an undefined result is None. */
template <>
struct type_caster<ember::Tensor> : type_caster_base<ember::python::PyTensor> {
  using Base = type_caster_base<ember::python::PyTensor>;
  template <typename T>
  using Cast = precise_cast_t<T>;

  static handle from_cpp(const ember::Tensor& t, rv_policy, cleanup_list*) noexcept {
    try {
      return ember::python::wrap_tensor(t).release();
    } catch (...) {
      return handle();
    }
  }
  static handle from_cpp(const ember::Tensor* t, rv_policy p, cleanup_list* c) noexcept {
    if (!t) return none().release();
    return from_cpp(*t, p, c);
  }
  template <typename T_>
  bool can_cast() const noexcept {
    return Base::template can_cast<T_>();
  }
  operator ember::Tensor*() { return Base::operator ember::python::PyTensor*(); }
  operator ember::Tensor&() { return Base::operator ember::python::PyTensor&(); }
  operator ember::Tensor&&() { return std::move(Base::operator ember::python::PyTensor&()); }
};

/** A list of tensors is read from any sequence and returned as a tuple, as PyTorch returns
 *  split, chunk, unbind, meshgrid and broadcast_tensors. */
template <>
struct type_caster<std::vector<ember::Tensor>>
    : list_caster<std::vector<ember::Tensor>, ember::Tensor> {
  using Base = list_caster<std::vector<ember::Tensor>, ember::Tensor>;
  static constexpr auto Name =
      io_name("collections.abc.Sequence[ember.Tensor]", "tuple[ember.Tensor, ...]");

  template <typename T>
  static handle from_cpp(T&& src, rv_policy policy, cleanup_list* cleanup) {
    object list = steal(Base::from_cpp(std::forward<T>(src), policy, cleanup));
    if (!list.is_valid()) return handle();
    return PyList_AsTuple(list.ptr());
  }
};

/** Ints: an int, a sequence of ints or a small integer tensor. */
template <>
struct type_caster<ember::python::Ints> {
  NB_TYPE_CASTER(ember::python::Ints, const_name("int | collections.abc.Sequence[int]"))
  bool from_python(handle src, uint32_t flags, cleanup_list* cleanup) noexcept;
  static handle from_cpp(const ember::python::Ints& v, rv_policy, cleanup_list*) noexcept;
};

/** PyScalar: bool, int, float, or a NumPy scalar of those kinds. */
template <>
struct type_caster<ember::python::PyScalar> {
  NB_TYPE_CASTER(ember::python::PyScalar, const_name("float | int | bool"))
  bool from_python(handle src, uint32_t flags, cleanup_list* cleanup) noexcept;
  static handle from_cpp(const ember::python::PyScalar& v, rv_policy, cleanup_list*) noexcept;
};

/** Operand: an ember.Tensor or a Python number. */
template <>
struct type_caster<ember::python::Operand> {
  NB_TYPE_CASTER(ember::python::Operand, const_name("ember._C.Tensor | float | int | bool"))
  bool from_python(handle src, uint32_t flags, cleanup_list* cleanup) noexcept;
  static handle from_cpp(const ember::python::Operand&, rv_policy, cleanup_list*) noexcept {
    return none().release();
  }
};

/** ember::Device arguments: an ember.device, or a string parsed when the function runs, not
 *  during overload resolution, so that a device the core refuses ("cpu:1") raises its
 *  DeviceError rather than nanobind's "incompatible function arguments". */
template <>
struct type_caster<ember::Device> : type_caster_base<ember::Device> {
  using Base = type_caster_base<ember::Device>;  // its Name too: it marks a constructor's self
  bool from_python(handle src, uint32_t flags, cleanup_list* cleanup) noexcept {
    spec_.reset();
    parsed_.reset();
    if (!PyUnicode_Check(src.ptr())) return Base::from_python(src, flags, cleanup);
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(src.ptr(), &n);
    if (!s) {
      PyErr_Clear();
      return false;
    }
    spec_.emplace(s, static_cast<size_t>(n));
    return true;
  }
  template <typename T_>
  bool can_cast() const noexcept {
    return spec_.has_value() || Base::template can_cast<T_>();
  }
  operator ember::Device*() { return spec_ ? &parsed() : Base::operator ember::Device*(); }
  operator ember::Device&() { return spec_ ? parsed() : Base::operator ember::Device&(); }
  operator ember::Device&&() { return std::move(operator ember::Device&()); }

 private:
  /** The string as the core parses and checks it (throws its error). */
  ember::Device& parsed() {
    if (!parsed_) parsed_.emplace(*spec_);
    return *parsed_;
  }
  std::optional<std::string> spec_;
  std::optional<ember::Device> parsed_;
};

/** std::optional<ember::Device> (every device= argument): None, or what the Device caster
 *  takes, converted when the function runs (the optional caster of nanobind would convert
 *  during overload resolution, where the core's error cannot be raised). */
template <>
struct type_caster<std::optional<ember::Device>> {
  using Value = std::optional<ember::Device>;
  static constexpr auto Name = io_name("ember._C.device | str | None", "ember._C.device | None");
  template <typename T_>
  using Cast = movable_cast_t<T_>;
  template <typename T_>
  static constexpr bool can_cast() {
    return true;
  }
  bool from_python(handle src, uint32_t flags, cleanup_list* cleanup) noexcept {
    present_ = !src.is_none();
    return !present_ || device_.from_python(src, flags, cleanup);
  }
  static handle from_cpp(const Value& v, rv_policy, cleanup_list* cleanup) noexcept {
    if (!v) return none().release();
    return make_caster<ember::Device>::from_cpp(*v, rv_policy::copy, cleanup);  // a value
  }
  explicit operator Value*() { return &resolved(); }
  explicit operator Value&() { return resolved(); }
  explicit operator Value&&() { return std::move(resolved()); }
  Value value;

 private:
  Value& resolved() {
    if (present_) {
      value = device_.operator ember::Device&();
    } else {
      value.reset();
    }
    return value;
  }
  make_caster<ember::Device> device_;
  bool present_ = false;
};

/** ember::DType: an ember.dtype object, or Python's float, int and bool types as PyTorch takes
 *  them (float64, int64, bool). */
template <>
struct type_caster<ember::DType> {
  NB_TYPE_CASTER(ember::DType, const_name("ember._C.dtype"))
  bool from_python(handle src, uint32_t flags, cleanup_list* cleanup) noexcept;
  static handle from_cpp(ember::DType d, rv_policy, cleanup_list*) noexcept {
    return ember::python::dtype_object(d).release();
  }
};

}  // namespace nanobind::detail
