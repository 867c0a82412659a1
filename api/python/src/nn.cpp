// ember._C.nn: nn.Module, subclassable in Python, and every layer of <ember/nn.h> with PyTorch's
// constructor arguments, attributes and forward signatures; nn.init; checkpoint_sequential.
#include <cstring>
#include <unordered_set>

#include <nanobind/trampoline.h>

#include "bind.h"

namespace ember::python {

// Note [Python modules and C++ modules]
// ember.nn.Module is nn::Module itself, so a Python module and a C++ layer are the same kind of
// object and nest either way:
// - A Python subclass is a C++ module whose virtual forward (and train, extra_repr) is
//   overridden through a trampoline (PyLayer), so a C++ container (Sequential, DDP) that calls
//   forward(Tensor) reaches the Python method. Every layer class has a trampoline, so Python may
//   subclass Linear or Sequential as well as Module.
// - Attributes: assigning a Parameter registers (or replaces) a parameter, a Module a submodule,
//   a tensor to a registered buffer replaces the buffer (Module::set_parameter and friends,
//   Note [Modules edited by name]); reading falls back to those registries (module_getattro),
//   so `self.fc` and `self.weight` read what the C++ side holds, also after to() replaced it.
// - Calling: a C++ layer called with one tensor and no hooks runs Module::operator() with the
//   GIL released. Otherwise __call__ runs in Python terms: the forward pre-hooks, then
//   self.forward(*args, **kwargs) (any signature and return type), then the forward hooks. A
//   hook registered from Python is stored in the C++ module too (PyHook, PyPreHook), so a C++
//   container calling the module runs it as well; there it sees the first tensor argument and
//   a tensor output, and a tensor it returns replaces the input or output as on the Python path
//   (Module::operator()).
// - Ownership: nanobind keeps a Python-created module inside its Python object; a C++ container
//   holding it keeps that object alive through its shared_ptr (nanobind's shared_ptr caster), so
//   the module and its __dict__ live as long as either side needs them.

namespace {

std::string type_name_of(nb::handle o) {
  return nb::cast<std::string>(o.type().attr("__name__"));
}

/** What a Python module's forward returned to a C++ caller, as the one tensor it must be. */
Tensor forward_result(const nb::object& r, const nn::Module& m) {
  if (nb::isinstance<PyTensor>(r)) return *nb::inst_ptr<PyTensor>(r);
  throw TypeError(fmt::format(
      "[nn.{}] forward() returned {} where a tensor was expected: a module run by a C++ "
      "container (nn.Sequential, DistributedDataParallel, ...) takes one tensor and must return "
      "one (call it from Python to return anything else)",
      m.type_name(), r.is_none() ? std::string("None") : type_name_of(r)));
}

/** The trampoline of every module class: forward, train and extra_repr overridable in Python.
 *  Each takes the GIL through the exit gate before nanobind's dispatch may take it (Note
 *  [Threads at interpreter exit]) and lets it go again before a C++ base method runs. */
template <class Base>
struct PyLayer : Base {
  NB_TRAMPOLINE(Base);
  Tensor forward(const Tensor& x) override {
    {
      GilAcquire gil;
      // NB_OVERRIDE spelled out: some layers hide forward(Tensor) behind their own overloads
      // (losses, the decoder layer), so the base call names the class that declares it.
      constexpr uint64_t hash = nb::detail::str_hash("forward");
      nb::detail::ticket ticket(nb_trampoline, "forward", hash, false);
      if (ticket.key.is_valid()) {
        return forward_result(nb_trampoline.base().attr(ticket.key)(x), *this);
      }
    }
    if constexpr (requires(Base & b) { b.Base::forward(x); }) {
      return Base::forward(x);
    } else {
      return nn::Module::forward(x);
    }
  }
  void train(bool on) override {
    {
      GilAcquire gil;
      constexpr uint64_t hash = nb::detail::str_hash("train");
      nb::detail::ticket ticket(nb_trampoline, "train", hash, false);
      if (ticket.key.is_valid()) {
        nb_trampoline.base().attr(ticket.key)(on);
        return;
      }
    }
    Base::train(on);
  }
  std::string extra_repr() const override {
    GilAcquire gil;
    NB_OVERRIDE(extra_repr);
  }
};

/** Constructs T (or its trampoline, for a Python subclass, named after the subclass). */
template <class T, class... A>
void construct(nb::pointer_and_handle<T> v, A&&... a) {
  if (!nb::inst_python_derived(v.h)) {
    new (v.p) T(std::forward<A>(a)...);
    return;
  }
  auto* p = new (v.p) PyLayer<T>(std::forward<A>(a)...);
  p->set_type_name(nb::cast<std::string>(v.h.type().attr("__name__")));
}

/** Constructs T with input size `in`, or lazily (nn::kLazy) when it is None: the layers whose
 *  input size may come from their first input (Note [Lazy layers] in api/nn/layers.cpp). */
template <class T, class... A>
void construct_maybe_lazy(nb::pointer_and_handle<T> v, std::optional<int64_t> in, A&&... a) {
  if constexpr (std::is_constructible_v<T, nn::LazyInput, A...>) {
    if (!in) return construct<T>(v, nn::kLazy, std::forward<A>(a)...);
  } else {
    EMBER_CHECK_TYPE(in.has_value(), "[nn.{}] the input size must be an int: got None",
                     type_name_of(v.h));
  }
  construct<T>(v, *in, std::forward<A>(a)...);
}

// Note [Modules before Module.__init__]
// A Python subclass whose __init__ does not call super().__init__() (or has not yet) has no C++
// module: nanobind's instance is not ready, and a bound method would reach a C++ object that does
// not exist (a warning raised with the GIL released, std::bad_cast). Every way into a module
// checks that in one place, module_of(): the methods and slots that take the object call it,
// and Module's tp_getattro (module_getattro, inherited by every module class) refuses the
// attributes of the bound classes (nanobind's methods and properties) before nanobind could
// touch the missing object; __getattr__ then raises module_of()'s AttributeError, the exception
// PyTorch raises for such a module ("... has no attribute ..."), with the cure. The subclass's
// own attributes work as usual. The same tp_getattro finds parameters, buffers and submodules
// after the usual lookup, so __getattr__ runs only to word an error (a lookup of a plain
// attribute goes through CPython's __getattribute__ dispatch, some 70 ns; one of a parameter or
// submodule no longer raises and catches an AttributeError first, several times faster).

/** Raises the AttributeError for `what` of a module whose Module.__init__ has not run. */
[[noreturn]] void not_initialised(nb::handle self, std::string_view what) {
  const std::string type = type_name_of(self);
  throw nb::attribute_error(fmt::format("'{}' object has no attribute '{}': Module.__init__() has "
                                        "not run for it (call super().__init__() at the start of "
                                        "{}.__init__)",
                                        type, what, type)
                                .c_str());
}

}  // namespace

nn::Module& module_of(nb::handle self, std::string_view what) {
  if (!nb::inst_ready(self)) [[unlikely]]
    not_initialised(self, what);
  return nb::cast<nn::Module&>(self);
}

namespace {

/** A module given where a container takes one (Sequential(...), append, extend). */
std::shared_ptr<nn::Module> module_arg(nb::handle h, std::string_view container) {
  EMBER_CHECK_TYPE(nb::isinstance<nn::Module>(h), "[nn.{}] {} is not a Module subclass", container,
                   nb::cast<std::string>(nb::str(h.type().attr("__name__"))));
  return nb::cast<std::shared_ptr<nn::Module>>(h);
}

/** module_of() as the bound class T. */
template <class T>
T& module_as(nb::handle self, std::string_view what) {
  module_of(self, what);
  return nb::cast<T&>(self);
}

/** The Python object of a C++ module (its existing one if it has one). */
nb::object module_object(nn::Module& m) {
  nb::object o = nb::find(&m);
  if (o.is_valid()) return o;
  return nb::cast(m.shared_from_this());
}

/** A Python forward hook stored in a C++ module: hook(module, args, output) -> None or a new
 *  output. */
struct PyHook {
  std::shared_ptr<PyRef> fn;
  Tensor operator()(nn::Module& m, const Tensor& in, const Tensor& out) const {
    GilAcquire gil;
    if (!fn->get()) return {};  // cleared by the garbage collector
    nb::object r = nb::borrow(fn->get())(module_object(m), nb::make_tuple(in), out);
    if (r.is_none()) return {};
    EMBER_CHECK_TYPE(nb::isinstance<PyTensor>(r),
                     "[nn.{}] a forward hook returned {} where the module's output is a tensor "
                     "(return a tensor, or None to keep the output)",
                     m.type_name(), type_name_of(r));
    return *nb::inst_ptr<PyTensor>(r);
  }
};

/** A Python forward pre-hook stored in a C++ module: hook(module, args) -> None or new args. */
struct PyPreHook {
  std::shared_ptr<PyRef> fn;
  Tensor operator()(nn::Module& m, const Tensor& in) const {
    GilAcquire gil;
    if (!fn->get()) return {};
    nb::object r = nb::borrow(fn->get())(module_object(m), nb::make_tuple(in));
    if (r.is_none()) return {};
    if (nb::isinstance<nb::tuple>(r)) {
      nb::tuple t = nb::borrow<nb::tuple>(r);
      if (t.size() == 0) return {};
      r = t[0];
    }
    if (nb::isinstance<PyTensor>(r)) return *nb::inst_ptr<PyTensor>(r);
    throw TypeError(fmt::format(
        "[nn.{}] a forward pre-hook returned {} where a tensor (or None) was expected: the "
        "module is run by a C++ container, which passes one tensor",
        m.type_name(), type_name_of(r)));
  }
};

}  // namespace

// Note [Copying and pickling modules]
// A module is a C++ object made by its class's constructor, plus state (parameters, buffers,
// submodules, training flags, Python hooks) and a Python __dict__; copy.deepcopy and pickle
// see it through __reduce_ex__, as PyTorch's modules are copied and pickled:
// - Rebuilding: the __init__ of every bound module class runs under the RecordInit policy,
//   which keeps the arguments it was called with in the instance's __dict__ ("_ember_init").
//   _rebuild_module makes a new object of the module's own class (a Python subclass included)
//   and runs the __init__ of its bound class (the first nanobind class of its MRO) with them,
//   never the subclass's __init__ (PyTorch does not run __init__ either). A module made by
//   C++ (a layer's submodule) has no arguments and is not copied alone.
// - State (__getstate__/__setstate__): the instance __dict__ and the module tree below the
//   object. For each module: training, its own parameters and buffers (set by name in the
//   rebuilt module, so a C++ layer keeps the slots it reads), its Python hooks, and each
//   submodule either as an object (one that can be rebuilt alone: made in Python), which is
//   copied or pickled as itself, or, for one made by its parent's C++ constructor, as a nested
//   state restored into the rebuilt parent's own submodule of that name (a C++ layer keeps
//   pointers to its submodules, which must stay the ones it runs).
// copy.deepcopy's memo and pickle's memo keep shared tensors and modules shared (tied weights).

namespace {
PyTypeObject* g_nb_method_type = nullptr;  // the type of nanobind's methods (set by bind_nn)
}  // namespace

/** Keeps a module __init__'s arguments in the instance (Note [Copying and pickling modules]). */
void record_init_args(PyObject** args, size_t nargs) {
  nb::tuple recorded = nb::steal<nb::tuple>(PyTuple_New(static_cast<Py_ssize_t>(nargs - 1)));
  for (size_t i = 1; i < nargs; ++i) {
    PyTuple_SET_ITEM(recorded.ptr(), static_cast<Py_ssize_t>(i - 1),
                     nb::borrow(args[i]).release().ptr());
  }
  nb::str key("_ember_init");
  if (PyObject_GenericSetAttr(args[0], key.ptr(), recorded.ptr()) != 0) throw nb::python_error();
}

namespace {

/** The first bound class of `cls`'s MRO (with a nanobind __init__): the one whose __init__
 *  made the object. */
nb::handle bound_class(nb::handle cls) {
  for (nb::handle t : nb::borrow<nb::tuple>(cls.attr("__mro__"))) {
    PyObject* init = PyDict_GetItemString(reinterpret_cast<PyTypeObject*>(t.ptr())->tp_dict,
                                          "__init__");  // borrowed
    if (init && Py_TYPE(init) == g_nb_method_type) return t;
  }
  throw TypeError(
      fmt::format("[nn] {} is not a module class", nb::cast<std::string>(nb::str(cls))));
}

/** The parameter list of one signature "def __init__(self, a: int, *args, b=1) -> None":
 *  (name, kind) with kind 0 positional, 1 keyword-only, 2 *args, 3 **kwargs; self dropped. */
std::vector<std::pair<std::string, int>> parse_parameters(std::string_view sig) {
  std::vector<std::pair<std::string, int>> out;
  const size_t open = sig.find('(');
  if (open == std::string_view::npos) return out;
  int depth = 0;
  size_t start = open + 1;
  bool keyword_only = false;
  auto take = [&](std::string_view p) {
    while (!p.empty() && p.front() == ' ') p.remove_prefix(1);
    const size_t end = p.find_first_of(":=");
    std::string_view name = p.substr(0, end);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name.empty() || name == "/") return;
    if (name == "*") {
      keyword_only = true;
      return;
    }
    if (name.substr(0, 2) == "**") {
      out.emplace_back(std::string(name.substr(2)), 3);
    } else if (name[0] == '*') {
      out.emplace_back(std::string(name.substr(1)), 2);
      keyword_only = true;
    } else {
      out.emplace_back(std::string(name), keyword_only ? 1 : 0);
    }
  };
  for (size_t i = open + 1; i < sig.size(); ++i) {
    const char c = sig[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth-- == 0) {
      take(sig.substr(start, i - start));
      break;
    }
    if (c == ',' && depth == 0) {
      take(sig.substr(start, i - start));
      start = i + 1;
    }
  }
  if (!out.empty() && out.front().first == "self") out.erase(out.begin());
  return out;
}

/** Rebuilds a module (copy's and pickle's reconstructor): Note [Copying and pickling
 *  modules]. */
nb::object rebuild_module(nb::handle cls, nb::tuple recorded) {
  nb::handle bound = bound_class(cls);
  nb::object init = bound.attr("__init__");
  nb::list pos;
  nb::dict kw;
  bool matched = false;
  for (nb::handle overload : nb::borrow<nb::tuple>(init.attr("__nb_signature__"))) {
    const auto params = parse_parameters(nb::cast<std::string>(nb::borrow<nb::tuple>(overload)[0]));
    if (params.size() != recorded.size()) continue;
    for (size_t i = 0; i < params.size(); ++i) {
      nb::handle v = recorded[i];
      switch (params[i].second) {
        case 0:
          pos.append(v);
          break;
        case 1:
          kw[params[i].first.c_str()] = v;
          break;
        case 2:
          for (nb::handle a : nb::borrow<nb::tuple>(v)) pos.append(a);
          break;
        default:
          for (auto [k, a] : nb::borrow<nb::dict>(v)) kw[k] = a;
      }
    }
    matched = true;
    break;
  }
  EMBER_ASSERT(matched);
  nb::object obj = cls.attr("__new__")(cls);
  init(obj, *pos, **kw);
  return obj;
}

/** The state of module `m` (whose Python object, if any, is `self`) without its __dict__. */
nb::dict module_tree_state(nn::Module& m) {
  nb::dict st;
  st["training"] = m.is_training();
  nb::list params, buffers, children, hooks, pre_hooks;
  for (const auto& [name, t] : m.named_parameters(false)) {
    params.append(nb::make_tuple(name, wrap_tensor(t, parameter_type())));
  }
  for (const auto& [name, t] : m.named_buffers(false)) {
    buffers.append(nb::make_tuple(name, wrap_tensor(t), m.is_persistent_buffer(name)));
  }
  for (const auto& [name, child] : m.named_children()) {
    nb::object obj = nb::find(child.get());
    if (obj.is_valid() && nb::hasattr(obj, "__dict__") &&
        nb::borrow<nb::dict>(obj.attr("__dict__")).contains("_ember_init")) {
      children.append(nb::make_tuple(name, obj));
      continue;
    }
    // Made by the parent's constructor: restored in place (with its Python object's
    // attributes, if it has one).
    nb::dict sub = module_tree_state(*child);
    if (obj.is_valid() && nb::hasattr(obj, "__dict__")) sub["dict"] = obj.attr("__dict__");
    children.append(nb::make_tuple(name, sub));
  }
  for (const nn::ForwardHook& h : m.forward_hooks()) {
    if (const PyHook* p = h.target<PyHook>(); p && p->fn->get()) hooks.append(p->fn->get());
  }
  for (const nn::ForwardPreHook& h : m.forward_pre_hooks()) {
    if (const PyPreHook* p = h.target<PyPreHook>(); p && p->fn->get()) {
      pre_hooks.append(p->fn->get());
    }
  }
  st["parameters"] = params;
  st["buffers"] = buffers;
  st["children"] = children;
  st["forward_hooks"] = hooks;
  st["forward_pre_hooks"] = pre_hooks;
  return st;
}

/** Restores module_tree_state() into `m`, a module rebuilt as the saved one was made. */
void set_module_tree_state(nn::Module& m, nb::dict st) {
  auto names = [](const nb::list& l) {
    std::unordered_set<std::string> out;
    for (nb::handle item : l) out.insert(nb::cast<std::string>(nb::borrow<nb::tuple>(item)[0]));
    return out;
  };
  const nb::list params = st["parameters"], buffers = st["buffers"], children = st["children"];
  // What the constructor made but the saved module no longer had (deleted from Python).
  const auto keep_params = names(params), keep_buffers = names(buffers),
             keep_children = names(children);
  for (const auto& [name, t] : m.named_parameters(false)) {
    if (!keep_params.count(name)) m.remove(name);
  }
  for (const auto& [name, t] : m.named_buffers(false)) {
    if (!keep_buffers.count(name)) m.remove(name);
  }
  for (const auto& [name, c] : m.named_children()) {
    if (!keep_children.count(name)) m.remove(name);
  }
  for (nb::handle item : params) {
    nb::tuple p = nb::borrow<nb::tuple>(item);
    const std::string name = nb::cast<std::string>(p[0]);
    if (p[1].is_none()) {
      m.set_parameter(name, Tensor());
      continue;
    }
    const Tensor& t = nb::cast<const Tensor&>(p[1]);
    m.set_parameter(name, t, t.requires_grad());
  }
  for (nb::handle item : buffers) {
    nb::tuple b = nb::borrow<nb::tuple>(item);
    const std::string name = nb::cast<std::string>(b[0]);
    const bool persistent = nb::cast<bool>(b[2]);
    const Tensor t = b[1].is_none() ? Tensor() : nb::cast<Tensor>(b[1]);
    if (m.find_buffer(name) && m.is_persistent_buffer(name) != persistent) m.remove(name);
    m.set_buffer(name, t, persistent);
  }
  for (nb::handle item : children) {
    nb::tuple c = nb::borrow<nb::tuple>(item);
    const std::string name = nb::cast<std::string>(c[0]);
    if (!nb::isinstance<nb::dict>(c[1])) {
      m.set_child(name, nb::cast<std::shared_ptr<nn::Module>>(c[1]));
      continue;
    }
    std::shared_ptr<nn::Module> own = m.find_child(name);
    EMBER_CHECK_TYPE(own != nullptr,
                     "[nn.{}] cannot restore submodule '{}': it was made by the module's C++ "
                     "constructor, which did not make it again",
                     m.type_name(), name);
    nb::dict sub = nb::borrow<nb::dict>(c[1]);
    set_module_tree_state(*own, sub);
    if (sub.contains("dict")) {
      nb::object obj = module_object(*own);
      for (auto [k, v] : nb::borrow<nb::dict>(sub["dict"])) {
        if (PyObject_GenericSetAttr(obj.ptr(), k.ptr(), v.ptr()) != 0) throw nb::python_error();
      }
    }
  }
  m.set_training(nb::cast<bool>(st["training"]));
  for (nb::handle h : nb::borrow<nb::list>(st["forward_hooks"])) {
    m.register_forward_hook(PyHook{std::make_shared<PyRef>(h)});
  }
  for (nb::handle h : nb::borrow<nb::list>(st["forward_pre_hooks"])) {
    m.register_forward_pre_hook(PyPreHook{std::make_shared<PyRef>(h)});
  }
}

/** Module.__reduce_ex__: (rebuild, (class, init arguments), state). */
nb::tuple reduce_module(nb::handle self, int) {
  nn::Module& m = module_of(self, "__reduce_ex__");
  nb::dict d = nb::borrow<nb::dict>(self.attr("__dict__"));
  EMBER_CHECK_TYPE(d.contains("_ember_init"),
                   "[nn.{}] cannot copy or pickle a module made by C++ (a submodule a layer made "
                   "itself): copy or pickle the module it belongs to",
                   m.type_name());
  nb::object rebuild = nb::module_::import_("ember._utils").attr("_rebuild_module");
  return nb::make_tuple(rebuild, nb::make_tuple(self.type(), d["_ember_init"]),
                        self.attr("__getstate__")());
}

}  // namespace

namespace {

// --- The garbage collector (Note [Python objects in the garbage collector] in bind.h) -----

/** Reports (visit set) or drops (visit null) the Python objects that `m` keeps, `m` being owned
 *  by the object the collector asks about. The lists come as copies, each a second owner of
 *  its tensors and submodules. */
int gc_module(nn::Module& m, visitproc visit, void* arg) {
  std::vector<std::shared_ptr<PyRef>> refs;
  for (const nn::ForwardHook& h : m.forward_hooks()) {
    if (const PyHook* p = h.target<PyHook>()) refs.push_back(p->fn);
  }
  for (const nn::ForwardPreHook& h : m.forward_pre_hooks()) {
    if (const PyPreHook* p = h.target<PyPreHook>()) refs.push_back(p->fn);
  }
  for (const std::shared_ptr<PyRef>& r : refs) {
    if (!visit) {
      r->reset();
    } else if (int e = r->visit(visit, arg)) {
      return e;
    }
  }
  std::vector<nn::NamedTensor> tensors = m.named_parameters(false);
  for (nn::NamedTensor& b : m.named_buffers(false)) tensors.push_back(std::move(b));
  for (const auto& [name, t] : tensors) {
    if (!visit) {
      clear_tensor(t, /*owners=*/2);  // the module's slot and `tensors`
    } else if (int e = traverse_tensor(t, visit, arg, /*owners=*/2)) {
      return e;
    }
  }
  std::vector<std::string> dropped;
  for (const auto& [name, child] : m.named_children()) {
    if (child.use_count() != 2) continue;  // held elsewhere too (not only by `m` and the copy)
    if (const auto* d = std::get_deleter<nb::detail::py_deleter>(child)) {
      // Made in Python: the control block holds its object, whose own traversal does the rest;
      // clearing unregisters it (the reference to break may be this one).
      if (visit) {
        Py_VISIT(d->o);
      } else {
        dropped.push_back(name);
      }
    } else if (int e = gc_module(*child, visit, arg)) {
      return e;
    }
  }
  for (const std::string& name : dropped) m.remove(name);
  return 0;
}

/** True if the module object `self` owns its C++ module: nanobind made it inside the object,
 *  or the object holds the only shared_ptr to it. */
bool owns_module(PyObject* self, nn::Module& m) {
  return nb::inst_state(self).second || m.weak_from_this().use_count() == 1;
}

int module_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (PyObject** dict = _PyObject_GetDictPtr(self)) Py_VISIT(*dict);
  if (!nb::inst_ready(self)) return 0;
  nn::Module& m = *nb::inst_ptr<nn::Module>(self);
  return owns_module(self, m) ? gc_module(m, visit, arg) : 0;
}

int module_clear(PyObject* self) {
  if (PyObject** dict = _PyObject_GetDictPtr(self)) Py_CLEAR(*dict);
  if (nb::inst_ready(self)) {
    nn::Module& m = *nb::inst_ptr<nn::Module>(self);
    if (owns_module(self, m)) gc_module(m, nullptr, nullptr);
  }
  return 0;
}

/** True if attribute `name` of an instance of `type` is one of the bound classes' (a nanobind
 *  method, or a property made of them), not one a Python subclass defines; dunders do not count
 *  (their slots check themselves). */
bool bound_attribute(PyTypeObject* type, PyObject* name) {
  if (!PyUnicode_Check(name)) return false;
  const Py_ssize_t n = PyUnicode_GetLength(name);
  if (n >= 4 && PyUnicode_ReadChar(name, 0) == '_' && PyUnicode_ReadChar(name, 1) == '_' &&
      PyUnicode_ReadChar(name, n - 1) == '_' && PyUnicode_ReadChar(name, n - 2) == '_') {
    return false;
  }
  PyObject* mro = type->tp_mro;
  for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject* d = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i))->tp_dict;
    PyObject* attr = d ? PyDict_GetItemWithError(d, name) : nullptr;  // borrowed
    if (!attr) {
      PyErr_Clear();
      continue;
    }
    if (Py_TYPE(attr) == g_nb_method_type) return true;
    if (Py_TYPE(attr) != &PyProperty_Type) return false;
    nb::object getter = nb::steal(PyObject_GetAttrString(attr, "fget"));
    if (!getter.is_valid()) PyErr_Clear();
    return getter.is_valid() && Py_TYPE(getter.ptr()) == g_nb_method_type;
  }
  return false;
}

/** A parameter, buffer or submodule of `m` named `name` as its Python object, or null. */
nb::object registered_attribute(nn::Module& m, const std::string& name) {
  if (Tensor* p = m.find_parameter(name)) return wrap_tensor(*p, parameter_type());
  if (Tensor* b = m.find_buffer(name)) return wrap_tensor(*b);
  if (auto c = m.find_child(name)) return nb::cast(c);
  if (Tensor* d = m.find_derived(name)) return wrap_tensor(*d);
  return {};
}

/** tp_getattro of the module classes: the Module.__init__ check (Note [Modules before
 *  Module.__init__]), the usual lookup, then the module's parameters, buffers and submodules
 *  (found here rather than by __getattr__, which then only words the AttributeError). */
PyObject* module_getattro(PyObject* self, PyObject* name) {
  const bool ready = nb::inst_ready(self);
  if (!ready && bound_attribute(Py_TYPE(self), name)) [[unlikely]] {
    PyErr_SetObject(PyExc_AttributeError, name);  // __getattr__ words it (module_of)
    return nullptr;
  }
  PyObject* found = _PyObject_GenericGetAttrWithDict(self, name, nullptr, /*suppress=*/1);
  if (found || PyErr_Occurred()) return found;
  if (!ready || !PyUnicode_Check(name)) {
    PyErr_SetObject(PyExc_AttributeError, name);  // __getattr__ words it
    return nullptr;
  }
  try {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(name, &n);
    if (!s) return nullptr;
    nb::object r = registered_attribute(*nb::inst_ptr<nn::Module>(self),
                                        std::string(s, static_cast<size_t>(n)));
    if (r.is_valid()) return r.release().ptr();
  } catch (nb::python_error& e) {
    e.restore();
    return nullptr;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  PyErr_SetObject(PyExc_AttributeError, name);
  return nullptr;
}

// Module's own slots; the bound subclasses get the collector's two and inherit Module's
// tp_getattro (CPython's hook that calls __getattribute__, this one, then __getattr__).
PyType_Slot g_module_base_slots[] = {
    {Py_tp_getattro, reinterpret_cast<void*>(&module_getattro)},
    {Py_tp_traverse, reinterpret_cast<void*>(&module_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(&module_clear)},
    {0, nullptr},
};
PyType_Slot g_module_slots[] = {
    {Py_tp_traverse, reinterpret_cast<void*>(&module_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(&module_clear)},
    {0, nullptr},
};

nb::object call_module(nb::handle self, nb::args args, nb::kwargs kwargs) {
  nn::Module& m = module_of(self, "__call__");
  std::vector<nn::ForwardPreHook> pre = m.forward_pre_hooks();
  std::vector<nn::ForwardHook> post = m.forward_hooks();
  const bool python_forward = nb::inst_python_derived(self);
  if (!python_forward && pre.empty() && post.empty() && args.size() == 1 && kwargs.size() == 0 &&
      nb::isinstance<PyTensor>(args[0]) &&
      nb::getattr(self.type(), "_tensor_forward", nb::bool_(false)).is(nb::bool_(true))) {
    const Tensor x = *nb::inst_ptr<PyTensor>(args[0]);
    Tensor out;
    {
      GilRelease release;
      out = m(x);
    }
    return wrap_tensor(out);
  }
  nb::tuple a = args;
  auto first_tensor = [&](const nb::tuple& t) -> const Tensor* {
    return t.size() && nb::isinstance<PyTensor>(t[0]) ? nb::inst_ptr<PyTensor>(t[0]) : nullptr;
  };
  for (const nn::ForwardPreHook& h : pre) {
    if (const PyPreHook* py = h.target<PyPreHook>()) {
      if (!py->fn->get()) continue;
      nb::object r = nb::borrow(py->fn->get())(self, a);
      if (!r.is_none())
        a = nb::isinstance<nb::tuple>(r) ? nb::borrow<nb::tuple>(r) : nb::make_tuple(r);
    } else if (const Tensor* x = first_tensor(a)) {
      Tensor r = h(m, *x);
      if (r.defined()) {
        nb::list l(a);
        l[0] = wrap_tensor(r);
        a = nb::tuple(l);
      }
    }
  }
  nb::object out = self.attr("forward")(*a, **kwargs);
  for (const nn::ForwardHook& h : post) {
    if (const PyHook* py = h.target<PyHook>()) {
      if (!py->fn->get()) continue;
      nb::object r = nb::borrow(py->fn->get())(self, a, out);
      if (!r.is_none()) out = r;
    } else if (const Tensor* x = first_tensor(a); x && nb::isinstance<PyTensor>(out)) {
      Tensor r = h(m, *x, *nb::inst_ptr<PyTensor>(out));
      if (r.defined()) out = wrap_tensor(r);
    }
  }
  return out;
}

void drop_instance_attribute(nb::handle self, const std::string& name) {
  if (!PyObject_HasAttrString(self.ptr(), "__dict__")) return;
  nb::dict d = nb::inst_dict(self);
  if (d.contains(name.c_str())) PyDict_DelItemString(d.ptr(), name.c_str());
}

void set_attribute(nb::handle self, nb::handle name_obj, nb::handle value) {
  const std::string name = nb::cast<std::string>(name_obj);
  const bool ready = nb::inst_ready(self);
  const bool is_param = nb::isinstance<PyParameter>(value);
  const bool is_module = !is_param && nb::isinstance<nn::Module>(value);
  if ((is_param || is_module) && !ready) {
    throw nb::attribute_error(fmt::format("cannot assign {} '{}' before Module.__init__() call",
                                          is_param ? "parameter" : "module", name)
                                  .c_str());
  }
  if (ready) {
    nn::Module& m = module_of(self, "__setattr__");
    // A Parameter or a Module takes the name over from an entry of another kind, as in
    // PyTorch (whose __setattr__ removes the name from the other registries first).
    if (is_param) {
      const Tensor& t = *nb::inst_ptr<PyTensor>(value);
      if (!m.find_parameter(name)) m.remove(name);
      m.set_parameter(name, t, t.requires_grad());
      drop_instance_attribute(self, name);
      return;
    }
    if (is_module) {
      if (m.find_parameter(name) || m.find_buffer(name)) m.remove(name);
      m.set_child(name, nb::cast<std::shared_ptr<nn::Module>>(value));
      drop_instance_attribute(self, name);
      return;
    }
    if (Tensor* p = m.find_parameter(name)) {
      EMBER_CHECK_TYPE(value.is_none(),
                       "[nn.{}] cannot assign '{}' as parameter '{}' (ember.nn.Parameter or None "
                       "expected)",
                       m.type_name(), type_name_of(value), name);
      *p = Tensor();
      nn::bump_structure_version();
      return;
    }
    if (m.find_buffer(name)) {
      EMBER_CHECK_TYPE(value.is_none() || nb::isinstance<PyTensor>(value),
                       "[nn.{}] cannot assign '{}' as buffer '{}' (ember.Tensor or None expected)",
                       m.type_name(), type_name_of(value), name);
      m.set_buffer(name, value.is_none() ? Tensor() : Tensor(*nb::inst_ptr<PyTensor>(value)));
      return;
    }
    if (m.find_child(name)) {
      EMBER_CHECK_TYPE(value.is_none(),
                       "[nn.{}] cannot assign '{}' as child module '{}' (ember.nn.Module or None "
                       "expected)",
                       m.type_name(), type_name_of(value), name);
      m.remove(name);
      return;
    }
  }
  if (PyObject_GenericSetAttr(self.ptr(), name_obj.ptr(), value.ptr()) != 0)
    throw nb::python_error();
}

nb::object get_attribute(nb::handle self, const std::string& name) {
  if (nb::object r = registered_attribute(module_of(self, name), name); r.is_valid()) return r;
  throw nb::attribute_error(
      fmt::format("'{}' object has no attribute '{}'", type_name_of(self), name).c_str());
}

void del_attribute(nb::handle self, nb::handle name_obj) {
  const std::string name = nb::cast<std::string>(name_obj);
  if (nb::inst_ready(self) && module_of(self, name).remove(name)) return;
  if (PyObject_GenericSetAttr(self.ptr(), name_obj.ptr(), nullptr) != 0) throw nb::python_error();
}

/** The module of `self` for register_parameter, register_buffer and add_module under `name`:
 *  a name that is already another attribute of the object (a method, a Python attribute) is a
 *  KeyError, as in PyTorch; the core refuses names of its other kinds and invalid names. */
nn::Module& registering(nb::handle self, const std::string& name, const char* method) {
  nn::Module& m = module_of(self, method);
  const bool registered = m.find_parameter(name) || m.find_buffer(name) || m.find_child(name);
  if (!registered && !name.empty() && name.find('.') == std::string::npos) {
    EMBER_CHECK_KEY(!nb::hasattr(self, name.c_str()),
                    "[nn.{}] attribute '{}' already exists (an attribute of {}, not a parameter, "
                    "buffer or submodule)",
                    m.type_name(), name, type_name_of(self));
  }
  return m;
}

/** A module's parameters as (name, Parameter) pairs, each tensor once. */
nb::list named_parameters(nn::Module& m, const std::string& prefix, bool recurse,
                          bool remove_duplicate) {
  nb::list out;
  std::unordered_set<const TensorImpl*> seen;
  for (auto& [name, t] : m.named_parameters(recurse)) {
    if (remove_duplicate && !seen.insert(t.impl()).second) continue;
    out.append(nb::make_tuple(prefix.empty() ? name : prefix + "." + name,
                              wrap_tensor(t, parameter_type())));
  }
  return out;
}

nb::list named_modules(nn::Module& m, const std::string& prefix, bool remove_duplicate) {
  nb::list out;
  std::unordered_set<const nn::Module*> seen;
  for (auto& [name, child] : m.named_modules()) {
    if (remove_duplicate && !seen.insert(child.get()).second) continue;
    std::string full = prefix.empty() ? name : (name.empty() ? prefix : prefix + "." + name);
    out.append(nb::make_tuple(full, child.get() == &m ? module_object(m) : nb::cast(child)));
  }
  return out;
}

nb::object iter_of(nb::list l) {
  return nb::iter(l);
}

nb::handle module_to(nb::handle self, nb::args args, nb::kwargs kwargs) {
  nn::Module& m = module_of(self, "to");
  const ToArgs a = parse_to(args, kwargs);
  {
    GilRelease release;
    if (a.device) m.to(*a.device);
    if (a.dtype) m.to(*a.dtype);
    if (a.memory_format && *a.memory_format != MemoryFormat::Preserve) m.to(*a.memory_format);
  }
  return self;
}

nn::Module& submodule(nn::Module& m, const std::string& target) {
  nn::Module* cur = &m;
  size_t start = 0;
  while (start < target.size()) {
    const size_t dot = target.find('.', start);
    const std::string part =
        target.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    auto child = cur->find_child(part);
    EMBER_CHECK_INDEX(child != nullptr, "[nn.{}] has no submodule '{}' (in '{}')", cur->type_name(),
                      part, target);
    cur = child.get();
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return *cur;
}

std::pair<nn::Module*, std::string> owner_of(nn::Module& m, const std::string& target) {
  const size_t dot = target.rfind('.');
  if (dot == std::string::npos) return {&m, target};
  return {&submodule(m, target.substr(0, dot)), target.substr(dot + 1)};
}

nb::object incompatible_keys(std::vector<std::string> missing,
                             std::vector<std::string> unexpected) {
  nb::object type = nb::module_::import_("ember.return_types").attr("IncompatibleKeys");
  return type(missing, unexpected);
}

/** Reduction from a loss module's PyTorch arguments. */
Reduction reduction_arg(std::optional<bool> size_average, std::optional<bool> reduce,
                        std::string_view reduction, const char* op) {
  if (size_average || reduce) {
    if (!reduce.value_or(true)) return Reduction::None;
    return size_average.value_or(true) ? Reduction::Mean : Reduction::Sum;
  }
  return parse_reduction(reduction, op);
}

std::string reduction_name(Reduction r) {
  switch (r) {
    case Reduction::None:
      return "none";
    case Reduction::Mean:
      return "mean";
    case Reduction::Sum:
      return "sum";
    case Reduction::BatchMean:
      return "batchmean";
  }
  return "mean";
}

nn::Pair pair_of(const Ints& v) {
  if (v.size() == 1) return nn::Pair(v.v[0]);
  EMBER_CHECK(v.size() == 2, "[nn] expected an int or a pair of ints, got {} values", v.size());
  return nn::Pair(v.v[0], v.v[1]);
}

nb::tuple pair_tuple(const nn::Pair& p) {
  return nb::make_tuple(p.h, p.w);
}

/** A module moved to device and dtype after construction (the layers' device=, dtype=). */
void place(nn::Module& m, const std::optional<Device>& device, const std::optional<DType>& dtype) {
  if (device) m.to(*device);
  if (dtype) m.to(*dtype);
}

/** nb::class_ for a module class with its trampoline and a __dict__, and (unless its forward
 *  takes other arguments) its one-tensor forward. */
template <class T, class Base = nn::Module>
nb::class_<T, Base, PyLayer<T>> layer(nb::module_& m, const char* name, const char* doc,
                                      bool tensor_forward = true) {
  nb::class_<T, Base, PyLayer<T>> cls(m, name, nb::dynamic_attr(), module_type_slots(), doc);
  if (tensor_forward) bind_tensor_forward(cls);
  return cls;
}

nn::Triple triple_of(const Ints& v) {
  if (v.size() == 1) return nn::Triple(v.v[0]);
  EMBER_CHECK(v.size() == 3, "[nn] expected an int or a triple of ints, got {} values", v.size());
  return nn::Triple(v.v[0], v.v[1], v.v[2]);
}

nb::tuple triple_tuple(const nn::Triple& t) {
  return nb::make_tuple(t.d, t.h, t.w);
}

/** A layer's size argument (an int, or one per spatial dim) as `Size` (Pair or Triple). */
template <class Size>
Size size_of(const Ints& v) {
  if constexpr (std::is_same_v<Size, nn::Pair>) {
    return pair_of(v);
  } else {
    return triple_of(v);
  }
}

/** A Pair or Triple as the tuple PyTorch's layers show. */
nb::tuple size_tuple(const nn::Pair& p) {
  return pair_tuple(p);
}
nb::tuple size_tuple(const nn::Triple& t) {
  return triple_tuple(t);
}

/** An adaptive pooling layer's output_size argument: an int, or a sequence of N ints or Nones
 *  (None keeps the input's size there). */
template <class Size>
Size adaptive_size_arg(nb::handle v, const char* layer) {
  constexpr size_t n = std::tuple_size_v<decltype(Size::dims)>;
  if (!PySequence_Check(v.ptr())) return Size(nb::cast<int64_t>(v));
  const nb::sequence seq = nb::borrow<nb::sequence>(v);
  EMBER_CHECK(nb::len(seq) == n,
              "[nn.{}] output_size must be an int or a sequence of {} ints or Nones: got {} values",
              layer, n, nb::len(seq));
  Size out(1);
  size_t i = 0;
  for (nb::handle d : seq) {
    if (d.is_none()) {
      out.dims[i++] = std::nullopt;
    } else {
      out.dims[i++] = nb::cast<int64_t>(d);
    }
  }
  return out;
}

/** An adaptive pooling layer's output_size as a tuple, None where the input's size is kept. */
template <class Size>
nb::tuple adaptive_size_value(const Size& size) {
  nb::list out;
  for (const auto& v : size.dims) out.append(v ? nb::object(nb::int_(*v)) : nb::none());
  return nb::tuple(out);
}

/** PyTorch's padding_mode names, indexed by PadKind ("constant" is no convolution's). */
constexpr const char* kConvPaddingModes[] = {"zeros", "constant", "reflect", "replicate",
                                             "circular"};

/** PyTorch's padding_mode of a convolution layer as the PadKind its options hold. */
nn::PadKind conv_padding_mode(std::string_view mode, const char* layer) {
  for (int k = 0; k < static_cast<int>(std::size(kConvPaddingModes)); ++k)
    if (k != static_cast<int>(nn::PadKind::Constant) && mode == kConvPaddingModes[k])
      return static_cast<nn::PadKind>(k);
  EMBER_CHECK(false,
              "[nn.{}] padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular': got "
              "'{}'",
              layer, mode);
  return nn::PadKind::Zero;
}

/** A convolution layer's `padding` as PyTorch shows it: 'same' / 'valid', or the numbers. */
template <class Options>
nb::object conv_padding_value(const Options& o, nb::tuple numbers) {
  if (o.named_padding) return nb::str(*o.named_padding == ConvPadding::Same ? "same" : "valid");
  return numbers;
}

/** A convolution layer's `padding_mode` as PyTorch names it. */
template <class Options>
const char* conv_padding_mode_name(const Options& o) {
  return kConvPaddingModes[static_cast<int>(o.padding_mode)];
}

/** forward(input) of a max-pooling layer T: the output, or (output, indices) when the module
 *  was made with return_indices=True (T::forward_with_indices, as PyTorch's C++ API names it). */
template <class T, class Cls>
void bind_max_pool_forward(Cls& cls) {
  cls.def(
      "forward",
      [](nb::handle self, const Tensor& x) -> nb::object {
        module_of(self, "forward");
        T& l = nb::cast<T&>(self);
        if (!nb::cast<bool>(nb::getattr(self, "return_indices", nb::bool_(false)))) {
          Tensor out;
          {
            GilRelease release;
            out = l.T::forward(x);
          }
          return nb::cast(out);
        }
        std::tuple<Tensor, Tensor> r;
        {
          GilRelease release;
          r = l.forward_with_indices(x);
        }
        return nb::make_tuple(std::get<0>(r), std::get<1>(r));
      },
      "input"_a, nb::sig("def forward(self, input: ember.Tensor) -> typing.Any"),
      "The pooled output, or (output, indices) with return_indices.");
}

/** forward(input, output_size) of a transposed convolution T beside its one-tensor forward:
 *  the output padding that gives output_size (T::forward(x, output_size)). */
template <class T, class Cls>
void bind_transposed_forward(Cls& cls) {
  cls.def(
      "forward",
      [](T& l, const Tensor& x, std::optional<Ints> output_size) {
        return output_size ? l.forward(x, IntList(*output_size)) : l.T::forward(x);
      },
      "input"_a, "output_size"_a.none(), release_gil(),
      "The output, sized output_size (spatial sizes, or with the input's leading dims).");
}

// Note [Layers from one row]
// A layer whose constructor takes plain values, each kept in a member of the same name, is bound
// from one row: its class, Python name and doc, and its parameters in the constructor's order,
// each param(name, &Class::member, doc) or param(name, &Class::member, default, doc). The row
// makes the __init__ (PyTorch's keywords and defaults) and one read-only attribute per
// parameter, so the Python constructor and the C++ one cannot disagree, and a layer is one line.

/** A parameter of a layer's constructor kept in member `member` (of T or a base of T). */
template <class C, class M, bool HasDefault>
struct LayerParam {
  using Value = std::remove_cv_t<M>;  ///< what __init__ takes
  const char* name;                   ///< the keyword, and the attribute
  M C::*member;                       ///< where the layer keeps it
  std::optional<Value> def;           ///< PyTorch's default, with HasDefault
  const char* doc;                    ///< the attribute's docstring
  /** The keyword argument, with its default when it has one. */
  auto arg() const {
    if constexpr (HasDefault) {
      return nb::arg(name) = *def;
    } else {
      return nb::arg(name);
    }
  }
};

/** A required constructor parameter. */
template <class C, class M>
LayerParam<C, M, false> param(const char* name, M C::*member, const char* doc) {
  return {name, member, std::nullopt, doc};
}

/** A constructor parameter with PyTorch's default. */
template <class C, class M, class D>
LayerParam<C, M, true> param(const char* name, M C::*member, D def, const char* doc) {
  return {name, member, std::remove_cv_t<M>(def), doc};
}

/** Binds layer T from its row (Note [Layers from one row]). */
template <class T, class... P>
void plain_layer(nb::module_& m, const char* name, const char* doc, P... params) {
  auto c = layer<T>(m, name, doc);
  c.def(
      "__init__",
      [](nb::pointer_and_handle<T> v, typename P::Value... a) { construct<T>(v, std::move(a)...); },
      params.arg()..., doc, record_init());
  (c.def_ro(params.name, params.member, params.doc), ...);
}

/** A convolution's size argument over N spatial dims: an int (N = 1), a Pair or a Triple. */
template <int N>
auto conv_size(const Ints& v, const char* layer, const char* what) {
  if constexpr (N == 1) {
    return single(v, layer, what);
  } else if constexpr (N == 2) {
    return pair_of(v);
  } else {
    return triple_of(v);
  }
}

/** A 1-d convolution's size as the 1-tuple PyTorch shows. */
nb::tuple size_tuple(int64_t v) {
  return nb::make_tuple(v);
}

/** Conv1d, Conv2d, Conv3d (Transposed false) and ConvTranspose1d, 2d, 3d over N spatial dims:
 *  PyTorch's constructor (lazy in_channels=None for the convolutions), attributes, and for the
 *  transposed ones forward(input, output_size). One template for the six, which differ only in
 *  N and in the arguments of the two kinds. */
template <class T, int N, bool Transposed>
void bind_conv(nb::module_& m, const char* name, const char* doc) {
  using Options = std::remove_cvref_t<decltype(std::declval<T&>().options)>;
  auto c = layer<T>(m, name, doc);
  if constexpr (Transposed) {
    bind_transposed_forward<T>(c);
    c.def(
         "__init__",
         [name](nb::pointer_and_handle<T> v, int64_t in, int64_t out, Ints kernel_size, Ints stride,
                Ints padding, Ints output_padding, int64_t groups, bool bias, Ints dilation,
                std::string_view padding_mode, std::optional<Device> device,
                std::optional<DType> dtype) {
           const std::string op = fmt::format("nn.{}", name);
           Options o;
           o.padding_mode = conv_padding_mode(padding_mode, name);
           o.stride = conv_size<N>(stride, op.c_str(), "stride");
           o.padding = conv_size<N>(padding, op.c_str(), "padding");
           o.output_padding = conv_size<N>(output_padding, op.c_str(), "output_padding");
           o.dilation = conv_size<N>(dilation, op.c_str(), "dilation");
           o.groups = groups;
           o.bias = bias;
           construct<T>(v, in, out, conv_size<N>(kernel_size, op.c_str(), "kernel_size"), o);
           place(*v.p, device, dtype);
         },
         "in_channels"_a, "out_channels"_a, "kernel_size"_a, "stride"_a = 1, "padding"_a = 0,
         "output_padding"_a = 0, "groups"_a = 1, "bias"_a = true, "dilation"_a = 1,
         "padding_mode"_a = "zeros", "device"_a = nb::none(), "dtype"_a = nb::none(), doc,
         record_init())
        .def_prop_ro(
            "output_padding", [](const T& l) { return size_tuple(l.options.output_padding); },
            "Added to one side of each output dim.");
  } else {
    c.def(
         "__init__",
         [name](nb::pointer_and_handle<T> v, std::optional<int64_t> in, int64_t out,
                Ints kernel_size, Ints stride, nb::handle padding, Ints dilation, int64_t groups,
                bool bias, std::string_view padding_mode, std::optional<Device> device,
                std::optional<DType> dtype) {
           const std::string op = fmt::format("nn.{}", name);
           Options o;
           o.stride = conv_size<N>(stride, op.c_str(), "stride");
           o.dilation = conv_size<N>(dilation, op.c_str(), "dilation");
           const ConvPaddingArg p = conv_padding_arg(padding, N, op.c_str());
           if (!p.named) o.padding = conv_size<N>(Ints{p.numbers}, op.c_str(), "padding");
           o.named_padding = p.named;
           o.padding_mode = conv_padding_mode(padding_mode, name);
           o.groups = groups;
           o.bias = bias;
           construct_maybe_lazy<T>(v, in, out, conv_size<N>(kernel_size, op.c_str(), "kernel_size"),
                                   o);
           place(*v.p, device, dtype);
         },
         "in_channels"_a, "out_channels"_a, "kernel_size"_a, "stride"_a = 1, "padding"_a = 0,
         "dilation"_a = 1, "groups"_a = 1, "bias"_a = true, "padding_mode"_a = "zeros",
         "device"_a = nb::none(), "dtype"_a = nb::none(), doc, record_init())
        .def("initialize_parameters", &T::initialize_parameters, "input"_a, release_gil(),
             "Gives a lazy layer its in_channels from input (then initialises it).");
  }
  c.def_ro("in_channels", &T::in_channels, "Input channels.")
      .def_ro("out_channels", &T::out_channels, "Output channels.")
      .def_prop_ro(
          "kernel_size", [](const T& l) { return size_tuple(l.kernel_size); },
          "The kernel's size per spatial dim.")
      .def_prop_ro(
          "stride", [](const T& l) { return size_tuple(l.options.stride); }, "Window steps.")
      .def_prop_ro(
          "padding",
          [](const T& l) { return conv_padding_value(l.options, size_tuple(l.options.padding)); },
          "Padding per side, or 'same' / 'valid'.")
      .def_prop_ro(
          "padding_mode", [](const T& l) { return conv_padding_mode_name(l.options); },
          "What the padding holds: zeros, reflect, replicate or circular.")
      .def_prop_ro(
          "dilation", [](const T& l) { return size_tuple(l.options.dilation); }, "Tap spacing.")
      .def_prop_ro(
          "groups", [](const T& l) { return l.options.groups; }, "Channel groups.")
      .def("reset_parameters", &T::reset_parameters, "PyTorch's default initialisation.");
}

void bind_module_base(nb::module_& m) {
  auto cls = nb::class_<nn::Module, PyLayer<nn::Module>>(
      m, "Module", nb::dynamic_attr(), nb::is_weak_referenceable(),
      nb::type_slots(g_module_base_slots),
      "Base of every layer and model; subclass it and define forward.");
  cls.attr("_tensor_forward") = false;
  cls.def(
         "__init__",
         [](nb::pointer_and_handle<nn::Module> v, nb::args, nb::kwargs) {
           construct<nn::Module>(v, "Module");
         },
         "args"_a, "kwargs"_a, "A module with no parameters, buffers or submodules yet.",
         record_init())
      .def("__call__", &call_module, "args"_a, "kwargs"_a,
           nb::sig("def __call__(self, *args: typing.Any, **kwargs: typing.Any) -> typing.Any"),
           "Runs the forward pre-hooks, forward(*args, **kwargs) and the forward hooks.")
      .def(
          "forward",
          [](nb::handle self, const Tensor& x) {
            nn::Module& m = module_of(self, "forward");
            const bool derived = nb::inst_python_derived(self);
            GilRelease release;
            return derived ? m.nn::Module::forward(x) : m.forward(x);
          },
          "input"_a, "The computation; subclasses define it.")
      .def("__setattr__", &set_attribute, "name"_a, nb::arg("value").none())
      .def("__getattr__", &get_attribute, "name"_a,
           nb::sig("def __getattr__(self, name: str) -> typing.Any"))
      .def("__delattr__", &del_attribute, "name"_a)
      .def("__dir__",
           [](nb::handle self) {
             nb::list out = nb::borrow<nb::list>(
                 nb::module_::import_("builtins").attr("object").attr("__dir__")(self));
             nn::Module& m = module_of(self, "__dir__");
             for (auto& [n, t] : m.named_parameters(false)) out.append(n);
             for (auto& [n, t] : m.named_buffers(false)) out.append(n);
             for (auto& [n, c] : m.named_children()) out.append(n);
             return out;
           })
      .def("__repr__",
           [](nb::handle self) {
             // C++'s extra_repr spells booleans as C++ does; Python spells them True/False.
             std::string s = module_of(self, "__repr__").repr();
             for (auto [from, to] : {std::pair{"=true", "=True"}, std::pair{"=false", "=False"}}) {
               for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos)) {
                 s.replace(pos, std::strlen(from), to);
               }
             }
             return s;
           })
      .def(
          "extra_repr", [](const nn::Module& m) { return m.extra_repr(); },
          "The arguments shown in repr(); subclasses may define it.")
      .def_prop_rw("training", &nn::Module::is_training, &nn::Module::set_training,
                   "True in training mode (train()), False in evaluation mode (eval()).")
      .def(
          "train",
          [](nb::handle self, bool mode) {
            module_of(self, "train").train(mode);
            return self;
          },
          "mode"_a = true, "Sets training mode here and in every submodule; returns self.")
      .def(
          "eval", [](nb::handle self) { return self.attr("train")(false); },
          "Evaluation mode (train(False)); returns self.")
      .def(
          "requires_grad_",
          [](nb::handle self, bool on) {
            for (Tensor& p : module_of(self, "requires_grad_").parameters()) p.requires_grad_(on);
            return self;
          },
          "requires_grad"_a = true, "Sets requires_grad of every parameter; returns self.")
      .def(
          "zero_grad", [](nn::Module& m, bool set_to_none) { m.zero_grad(set_to_none); },
          "set_to_none"_a = true, "Resets every parameter's gradient (to None by default).")
      .def("to", &module_to, "args"_a, "kwargs"_a,
           nb::sig(
               "def to(self, *args: typing.Any, **kwargs: typing.Any) -> typing_extensions.Self"),
           "Moves or converts every parameter and buffer (device, dtype, memory_format); returns "
           "self.")
      .def(
          "cuda",
          [](nb::handle self, std::optional<nb::object> device) {
            Device d("cuda");
            if (device && !device->is_none()) {
              d = device_from(*device);
            }
            nn::Module& m = module_of(self, "cuda");
            {
              GilRelease release;
              m.to(d);
            }
            return self;
          },
          "device"_a = nb::none(), "Moves every parameter and buffer to a CUDA device.")
      .def(
          "cpu",
          [](nb::handle self) {
            nn::Module& m = module_of(self, "cpu");
            {
              GilRelease release;
              m.to(Device::cpu());
            }
            return self;
          },
          "Moves every parameter and buffer to the CPU; returns self.");
  for (auto [name, d] :
       {std::pair{"float", DType::Float32}, std::pair{"double", DType::Float64},
        std::pair{"half", DType::Float16}, std::pair{"bfloat16", DType::BFloat16}}) {
    const DType dt = d;
    const char* method = name;
    cls.def(
        name,
        [dt, method](nb::handle self) {
          nn::Module& m = module_of(self, method);
          {
            GilRelease release;
            m.to(dt);
          }
          return self;
        },
        "Converts every floating parameter and buffer; returns self.");
  }
  cls.def(
         "apply",
         [](nb::handle self, nb::handle fn) {
           for (auto& c : module_of(self, "apply").children()) nb::cast(c).attr("apply")(fn);
           fn(self);
           return self;
         },
         "fn"_a, "Calls fn on every submodule (children first) and on self; returns self.")
      .def(
          "parameters",
          [](nn::Module& m, bool recurse) {
            nb::list out;
            for (auto item : named_parameters(m, "", recurse, true))
              out.append(nb::borrow<nb::tuple>(item)[1]);
            return iter_of(out);
          },
          "recurse"_a = true,
          nb::sig("def parameters(self, recurse: bool = True) -> "
                  "collections.abc.Iterator[ember._C.Parameter]"),
          "The parameters of this module and (with recurse) its submodules, each once.")
      .def(
          "named_parameters",
          [](nn::Module& m, const std::string& prefix, bool recurse, bool remove_duplicate) {
            return iter_of(named_parameters(m, prefix, recurse, remove_duplicate));
          },
          "prefix"_a = "", "recurse"_a = true, "remove_duplicate"_a = true,
          nb::sig("def named_parameters(self, prefix: str = '', recurse: bool = True, "
                  "remove_duplicate: bool = True) -> collections.abc.Iterator[tuple[str, "
                  "ember._C.Parameter]]"),
          "(dotted name, parameter) pairs.")
      .def(
          "buffers",
          [](nn::Module& m, bool recurse) {
            nb::list out;
            for (const Tensor& t : m.buffers(recurse)) out.append(wrap_tensor(t));
            return iter_of(out);
          },
          "recurse"_a = true,
          nb::sig("def buffers(self, recurse: bool = True) -> "
                  "collections.abc.Iterator[ember._C.Tensor]"),
          "The buffers of this module and (with recurse) its submodules.")
      .def(
          "named_buffers",
          [](nn::Module& m, const std::string& prefix, bool recurse) {
            nb::list out;
            for (auto& [n, t] : m.named_buffers(recurse)) {
              out.append(nb::make_tuple(prefix.empty() ? n : prefix + "." + n, wrap_tensor(t)));
            }
            return iter_of(out);
          },
          "prefix"_a = "", "recurse"_a = true,
          nb::sig("def named_buffers(self, prefix: str = '', recurse: bool = True) -> "
                  "collections.abc.Iterator[tuple[str, ember._C.Tensor]]"),
          "(dotted name, buffer) pairs.")
      .def(
          "children",
          [](nn::Module& m) {
            nb::list out;
            for (auto& c : m.children()) out.append(nb::cast(c));
            return iter_of(out);
          },
          nb::sig("def children(self) -> collections.abc.Iterator[ember._C.nn.Module]"),
          "The direct submodules.")
      .def(
          "named_children",
          [](nn::Module& m) {
            nb::list out;
            for (auto& [n, c] : m.named_children()) out.append(nb::make_tuple(n, nb::cast(c)));
            return iter_of(out);
          },
          nb::sig("def named_children(self) -> collections.abc.Iterator[tuple[str, "
                  "ember._C.nn.Module]]"),
          "(name, submodule) pairs.")
      .def(
          "modules",
          [](nn::Module& m) {
            nb::list out;
            for (auto item : named_modules(m, "", true)) out.append(nb::borrow<nb::tuple>(item)[1]);
            return iter_of(out);
          },
          nb::sig("def modules(self) -> collections.abc.Iterator[ember._C.nn.Module]"),
          "This module and every submodule, depth first, each once.")
      .def(
          "named_modules",
          [](nn::Module& m, nb::handle, const std::string& prefix, bool remove_duplicate) {
            return iter_of(named_modules(m, prefix, remove_duplicate));
          },
          "memo"_a = nb::none(), "prefix"_a = "", "remove_duplicate"_a = true,
          nb::sig("def named_modules(self, memo: object = None, prefix: str = '', "
                  "remove_duplicate: bool = True) -> collections.abc.Iterator[tuple[str, "
                  "ember._C.nn.Module]]"),
          "(dotted name, module) pairs, this module first (named '').")
      .def(
          "register_parameter",
          [](nb::handle self, const std::string& name, std::optional<Tensor> param) {
            nn::Module& m = registering(self, name, "register_parameter");
            if (param) {
              m.set_parameter(name, *param, param->requires_grad());
            } else {
              m.set_parameter(name, Tensor());
            }
          },
          "name"_a, "param"_a.none(),
          "Adds (or replaces) a parameter; None registers an empty one.")
      .def(
          "register_buffer",
          [](nb::handle self, const std::string& name, std::optional<Tensor> tensor,
             bool persistent) {
            nn::Module& m = registering(self, name, "register_buffer");
            if (m.find_buffer(name)) m.remove(name);
            m.register_buffer(name, tensor.value_or(Tensor()), persistent);
          },
          "name"_a, "tensor"_a.none(), "persistent"_a = true,
          "Adds a buffer: moved with the module, saved in the state dict if persistent.")
      // The derived tensors of Note [Derived tensors] (module.h), for reparametrizations written
      // in Python (ember/nn/utils/parametrize.py).
      .def(
          "_make_derived", [](nn::Module& m, const std::string& name) { m.make_derived(name); },
          "name"_a,
          "Makes parameter `name` a derived tensor: no longer a parameter, its slot kept for the "
          "layer to read and written by _write_slot.")
      .def(
          "_write_slot",
          [](nn::Module& m, const std::string& name, const Tensor& value) {
            Tensor* slot = m.find_derived(name);
            if (!slot) slot = m.find_parameter(name);
            EMBER_CHECK_KEY(slot != nullptr,
                            "[nn.{}] '{}' is neither a derived tensor nor a parameter of this "
                            "module",
                            m.type_name(), name);
            *slot = value;
          },
          "name"_a, "value"_a,
          "Writes `value` itself (its autograd history kept) into the slot of derived tensor or "
          "parameter `name`: what the layer reads next.")
      .def(
          "_make_parameter",
          [](nn::Module& m, const std::string& name, const Tensor& value) {
            m.make_parameter(name, value, value.requires_grad());
          },
          "name"_a, "value"_a,
          "Makes derived tensor `name` a parameter again, holding `value` (itself, if a leaf).")
      .def(
          "_set_type_name",
          [](nn::Module& m, std::string name) { m.set_type_name(std::move(name)); }, "name"_a,
          "Renames the module's type (repr, errors): for code that changes its __class__.");
  for (const char* method_name : {"add_module", "register_module"}) {
    const char* method = method_name;
    cls.def(
        method_name,
        [method](nb::handle self, const std::string& name, std::shared_ptr<nn::Module> module) {
          registering(self, name, method).set_child(name, std::move(module));
        },
        "name"_a, "module"_a, "Adds (or replaces) a submodule.");
  }
  cls.def(
         "get_submodule",
         [](nn::Module& m, const std::string& target) {
           nn::Module& s = submodule(m, target);
           return module_object(s);
         },
         "target"_a, nb::sig("def get_submodule(self, target: str) -> ember._C.nn.Module"),
         "The submodule at a dotted path ('' is the module itself).")
      .def(
          "get_parameter",
          [](nn::Module& m, const std::string& target) {
            auto [owner, name] = owner_of(m, target);
            Tensor* p = owner->find_parameter(name);
            EMBER_CHECK_INDEX(p != nullptr, "[nn.{}] has no parameter '{}'", owner->type_name(),
                              name);
            return wrap_tensor(*p, parameter_type());
          },
          "target"_a, "The parameter at a dotted path.")
      .def(
          "get_buffer",
          [](nn::Module& m, const std::string& target) {
            auto [owner, name] = owner_of(m, target);
            Tensor* b = owner->find_buffer(name);
            EMBER_CHECK_INDEX(b != nullptr, "[nn.{}] has no buffer '{}'", owner->type_name(), name);
            return wrap_tensor(*b);
          },
          "target"_a, "The buffer at a dotted path.")
      .def(
          "state_dict",
          [](nn::Module& m, nb::handle destination, const std::string& prefix, bool keep_vars) {
            nb::dict out = destination.is_none() ? nb::dict() : nb::borrow<nb::dict>(destination);
            for (auto& [n, t] : m.state_items()) {
              out[nb::str((prefix + n).c_str())] = wrap_tensor(keep_vars ? t : t.detach());
            }
            return out;
          },
          "destination"_a = nb::none(), "prefix"_a = "", "keep_vars"_a = false,
          nb::sig("def state_dict(self, destination: object = None, prefix: str = '', "
                  "keep_vars: bool = False) -> dict[str, ember._C.Tensor]"),
          "Parameters and persistent buffers by dotted name, in registration order.")
      .def(
          "load_state_dict",
          [](nn::Module& m, const StateDict& state, bool strict, bool assign) {
            EMBER_CHECK_NOT_IMPLEMENTED(
                !assign, "[nn.{}] load_state_dict(assign=True) is not supported", m.type_name());
            std::vector<std::string> missing, unexpected;
            std::unordered_set<std::string> own;
            for (auto& [n, t] : m.state_items()) {
              own.insert(n);
              if (!state.count(n)) missing.push_back(n);
            }
            for (auto& [n, t] : state) {
              if (!own.count(n)) unexpected.push_back(n);
            }
            {
              GilRelease release;
              m.load_state_dict(state, strict);
            }
            return incompatible_keys(missing, unexpected);
          },
          "state_dict"_a, "strict"_a = true, "assign"_a = false,
          "Copies tensors into the parameters and buffers in place; returns (missing_keys, "
          "unexpected_keys). With strict, either is an error; a shape mismatch always is.")
      .def(
          "register_forward_hook",
          [](nn::Module& m, nb::handle hook, bool prepend, bool with_kwargs, bool always_call) {
            EMBER_CHECK_NOT_IMPLEMENTED(!prepend && !with_kwargs && !always_call,
                                        "[nn.{}] register_forward_hook: prepend, with_kwargs and "
                                        "always_call are not supported",
                                        m.type_name());
            auto handle = std::make_shared<nn::HookHandle>(
                m.register_forward_hook(PyHook{std::make_shared<PyRef>(hook)}));
            return make_removable_handle([handle] { handle->remove(); });
          },
          "hook"_a, nb::kw_only(), "prepend"_a = false, "with_kwargs"_a = false,
          "always_call"_a = false,
          "Calls hook(module, args, output) after every forward; a returned value replaces the "
          "output.")
      .def("__reduce_ex__", &reduce_module, "protocol"_a,
           "Pickling and copying: Note [Copying and pickling modules] in nn.cpp.")
      .def(
          "__getstate__",
          [](nb::handle self) {
            nn::Module& m = module_of(self, "__getstate__");
            nb::dict d;
            for (auto [k, v] : nb::borrow<nb::dict>(self.attr("__dict__"))) {
              if (!nb::str(k).equal(nb::str("_ember_init"))) d[k] = v;
            }
            nb::dict st;
            st["dict"] = d;
            st["module"] = module_tree_state(m);
            return st;
          },
          "The module's state for copy and pickle: its attributes and its module tree.")
      .def(
          "__setstate__",
          [](nb::handle self, nb::dict st) {
            set_module_tree_state(module_of(self, "__setstate__"),
                                  nb::borrow<nb::dict>(st["module"]));
            nb::dict d = nb::borrow<nb::dict>(self.attr("__dict__"));
            for (auto [k, v] : nb::borrow<nb::dict>(st["dict"])) d[k] = v;
          },
          "state"_a, "Restores __getstate__()'s state into a rebuilt module.")
      .def(
          "register_forward_pre_hook",
          [](nn::Module& m, nb::handle hook, bool prepend, bool with_kwargs) {
            EMBER_CHECK_NOT_IMPLEMENTED(!prepend && !with_kwargs,
                                        "[nn.{}] register_forward_pre_hook: prepend and "
                                        "with_kwargs are not supported",
                                        m.type_name());
            auto handle = std::make_shared<nn::HookHandle>(
                m.register_forward_pre_hook(PyPreHook{std::make_shared<PyRef>(hook)}));
            return make_removable_handle([handle] { handle->remove(); });
          },
          "hook"_a, nb::kw_only(), "prepend"_a = false, "with_kwargs"_a = false,
          "Calls hook(module, args) before every forward; a returned value replaces the args.");
}

/** What Sequential and ModuleList share from Python: indexing (a slice gives a container of
 *  the same kind, keeping Sequential's names), len, iteration, append, extend, item assignment. */
template <class T, class... Extra>
void bind_module_list(nb::class_<T, Extra...>& cls) {
  cls.def(
         "__getitem__",
         [](nb::handle self, nb::handle idx) -> nb::object {
           T& l = module_as<T>(self, "__getitem__");
           if (!PySlice_Check(idx.ptr())) {
             EMBER_CHECK_TYPE(PyIndex_Check(idx.ptr()),
                              "[nn.{}] indices must be integers or slices, got {}", l.type_name(),
                              nb::cast<std::string>(nb::str(idx.type().attr("__name__"))));
             return nb::cast(l[nb::cast<int64_t>(nb::int_(idx))]);
           }
           Py_ssize_t start, stop, step, len;
           if (PySlice_GetIndicesEx(idx.ptr(), l.size(), &start, &stop, &step, &len) != 0) {
             throw nb::python_error();
           }
           auto out = std::make_shared<T>();
           const auto named = l.named_children();
           for (Py_ssize_t i = 0; i < len; ++i) {
             const auto& [name, child] = named[static_cast<size_t>(start + i * step)];
             if constexpr (std::is_same_v<T, nn::Sequential>) {
               out->push_back(name, child);
             } else {
               out->push_back(child);
             }
           }
           return nb::cast(out);
         },
         "idx"_a, "The i-th module, or a container of a slice of them.")
      .def(
          "__setitem__",
          [](nb::handle self, int64_t i, std::shared_ptr<nn::Module> module) {
            T& l = module_as<T>(self, "__setitem__");
            const auto named = l.named_children();
            const int64_t n = static_cast<int64_t>(named.size());
            EMBER_CHECK_INDEX(i >= -n && i < n, "[nn.{}] index {} out of range for {} modules",
                              l.type_name(), i, n);
            l.set_child(named[static_cast<size_t>(i < 0 ? i + n : i)].first, std::move(module));
          },
          "idx"_a, "module"_a, "Replaces the i-th module.")
      .def("__len__", [](nb::handle self) { return module_as<T>(self, "__len__").size(); })
      .def("__iter__",
           [](nb::handle self) {
             nb::list out;
             for (auto& c : module_as<T>(self, "__iter__").children()) out.append(nb::cast(c));
             return nb::iter(out);
           })
      .def(
          "append",
          [](nb::handle self, std::shared_ptr<nn::Module> module) {
            module_as<T>(self, "append").push_back(std::move(module));
            return self;
          },
          "module"_a, "Appends a module; returns self.")
      .def(
          "extend",
          [](nb::handle self, nb::iterable modules) {
            T& l = module_as<T>(self, "extend");
            for (nb::handle h : modules) {
              l.push_back(module_arg(h, l.type_name()));
            }
            return self;
          },
          "modules"_a, "Appends every module; returns self.");
}

void bind_containers(nb::module_& m) {
  auto seq = layer<nn::Sequential>(m, "Sequential", "Runs its modules one after another.");
  seq.def(
      "__init__",
      [](nb::pointer_and_handle<nn::Sequential> v, nb::args modules) {
        construct<nn::Sequential>(v);
        if (modules.size() == 1 && nb::hasattr(modules[0], "items") &&
            !nb::isinstance<nn::Module>(modules[0])) {
          for (auto item : modules[0].attr("items")()) {
            nb::tuple kv = nb::borrow<nb::tuple>(item);
            v.p->push_back(nb::cast<std::string>(kv[0]), module_arg(kv[1], "Sequential"));
          }
          return;
        }
        for (nb::handle h : modules) v.p->push_back(module_arg(h, "Sequential"));
      },
      "args"_a, "Sequential(*modules) or Sequential(OrderedDict of name -> module).",
      record_init());
  bind_module_list(seq);
  auto list = layer<nn::ModuleList>(m, "ModuleList", "Holds submodules in a list (no forward).");
  list.def(
      "__init__",
      [](nb::pointer_and_handle<nn::ModuleList> v, std::optional<nb::iterable> modules) {
        construct<nn::ModuleList>(v);
        if (modules) {
          for (nb::handle h : *modules) v.p->push_back(module_arg(h, "ModuleList"));
        }
      },
      "modules"_a = nb::none(), "A list of the given modules.", record_init());
  bind_module_list(list);
}

void bind_layers(nb::module_& m) {
  layer<nn::Identity>(m, "Identity", "Returns its input.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::Identity> v, nb::args, nb::kwargs) {
            construct<nn::Identity>(v);
          },
          "args"_a, "kwargs"_a, "Identity (arguments are ignored, as in PyTorch).", record_init());
  layer<nn::Linear>(m, "Linear", "y = x W^T + b.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::Linear> v, std::optional<int64_t> in, int64_t out,
             bool bias, std::optional<Device> device, std::optional<DType> dtype) {
            construct_maybe_lazy<nn::Linear>(v, in, out, bias);
            place(*v.p, device, dtype);
          },
          "in_features"_a, "out_features"_a, "bias"_a = true, "device"_a = nb::none(),
          "dtype"_a = nb::none(),
          "A layer from in_features to out_features (None: read from the first input, as "
          "LazyLinear does).",
          record_init())
      .def_ro("in_features", &nn::Linear::in_features, "Input features.")
      .def_ro("out_features", &nn::Linear::out_features, "Output features.")
      .def("reset_parameters", &nn::Linear::reset_parameters, "PyTorch's default initialisation.")
      .def("initialize_parameters", &nn::Linear::initialize_parameters, "input"_a, release_gil(),
           "Gives a lazy layer its in_features from input's last dim (then initialises it).");

  bind_conv<nn::Conv1d, 1, false>(m, "Conv1d", "1-d convolution over [N, C, L].");
  bind_conv<nn::Conv2d, 2, false>(m, "Conv2d", "2-d convolution over [N, C, H, W].");
  bind_conv<nn::Conv3d, 3, false>(m, "Conv3d", "3-d convolution over [N, C, D, H, W].");
  bind_conv<nn::ConvTranspose1d, 1, true>(m, "ConvTranspose1d",
                                          "Transposed 1-d convolution over [N, C, L].");
  bind_conv<nn::ConvTranspose2d, 2, true>(m, "ConvTranspose2d",
                                          "Transposed 2-d convolution over [N, C, H, W].");
  bind_conv<nn::ConvTranspose3d, 3, true>(m, "ConvTranspose3d",
                                          "Transposed 3-d convolution over [N, C, D, H, W].");

  // The batch and instance norms: their shared base with PyTorch's attributes, a class per
  // family, and the 1d, 2d and 3d classes taking its constructor's arguments with the family's
  // defaults (the instance norms': no affine parameters, no running statistics).
  nb::class_<nn::NormBase, nn::Module> norm_base(m, "_NormBase", nb::dynamic_attr(),
                                                 module_type_slots(),
                                                 "What the batch and instance norms share.");
  bind_tensor_forward(norm_base);
  norm_base.def_ro("num_features", &nn::NormBase::num_features, "Channels normalised.")
      .def_prop_ro(
          "eps", [](const nn::NormBase& b) { return b.options.eps; }, "Added to the variance.")
      .def_prop_ro(
          "momentum", [](const nn::NormBase& b) { return b.options.momentum; },
          "Running-statistics rate (None: cumulative average).")
      .def_prop_ro(
          "affine", [](const nn::NormBase& b) { return b.options.affine; },
          "Learns weight and bias.")
      .def_prop_ro(
          "track_running_stats",
          [](const nn::NormBase& b) { return b.options.track_running_stats; },
          "Keeps running statistics.");
  nb::class_<nn::BatchNorm, nn::NormBase>(m, "_BatchNorm", nb::dynamic_attr(), module_type_slots(),
                                          "What the batch norms share.");
  nb::class_<nn::InstanceNorm, nn::NormBase>(m, "_InstanceNorm", nb::dynamic_attr(),
                                             module_type_slots(), "What the instance norms share.");
  auto norm_layer = [&](auto tag, auto base, const char* name, const char* doc,
                        nn::BatchNormOptions defaults) {
    using T = typename decltype(tag)::type;
    using B = typename decltype(base)::type;
    nb::class_<T, B, PyLayer<T>>(m, name, nb::dynamic_attr(), module_type_slots(), doc)
        .def(
            "__init__",
            [](nb::pointer_and_handle<T> v, int64_t num_features, double eps,
               std::optional<double> momentum, bool affine, bool track_running_stats,
               std::optional<Device> device, std::optional<DType> dtype, bool bias) {
              construct<T>(v, num_features,
                           nn::BatchNormOptions{eps, momentum, affine, track_running_stats, bias});
              place(*v.p, device, dtype);
            },
            "num_features"_a, "eps"_a = 1e-5, "momentum"_a.none() = 0.1,
            "affine"_a = defaults.affine, "track_running_stats"_a = defaults.track_running_stats,
            "device"_a = nb::none(), "dtype"_a = nb::none(), nb::kw_only(), "bias"_a = true, doc,
            record_init());
  };
  const std::type_identity<nn::BatchNorm> batch;
  const std::type_identity<nn::InstanceNorm> instance;
  norm_layer(std::type_identity<nn::BatchNorm1d>{}, batch, "BatchNorm1d",
             "Batch normalisation of [N, C] or [N, C, L].", nn::BatchNormOptions{});
  norm_layer(std::type_identity<nn::BatchNorm2d>{}, batch, "BatchNorm2d",
             "Batch normalisation of [N, C, H, W].", nn::BatchNormOptions{});
  norm_layer(std::type_identity<nn::BatchNorm3d>{}, batch, "BatchNorm3d",
             "Batch normalisation of [N, C, D, H, W].", nn::BatchNormOptions{});
  norm_layer(std::type_identity<nn::InstanceNorm1d>{}, instance, "InstanceNorm1d",
             "Instance normalisation of [N, C, L] or [C, L].", nn::kInstanceNormDefaults);
  norm_layer(std::type_identity<nn::InstanceNorm2d>{}, instance, "InstanceNorm2d",
             "Instance normalisation of [N, C, H, W] or [C, H, W].", nn::kInstanceNormDefaults);
  norm_layer(std::type_identity<nn::InstanceNorm3d>{}, instance, "InstanceNorm3d",
             "Instance normalisation of [N, C, D, H, W] or [C, D, H, W].",
             nn::kInstanceNormDefaults);
  layer<nn::RMSNorm>(m, "RMSNorm", "Root-mean-square normalisation over normalized_shape.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::RMSNorm> v, Ints normalized_shape,
             std::optional<double> eps, bool elementwise_affine, std::optional<Device> device,
             std::optional<DType> dtype) {
            construct<nn::RMSNorm>(
                v, std::vector<int64_t>(normalized_shape.v.begin(), normalized_shape.v.end()), eps,
                elementwise_affine);
            place(*v.p, device, dtype);
          },
          "normalized_shape"_a, "eps"_a = nb::none(), "elementwise_affine"_a = true,
          "device"_a = nb::none(), "dtype"_a = nb::none(), "RMSNorm over normalized_shape.",
          record_init())
      .def_prop_ro(
          "normalized_shape",
          [](const nn::RMSNorm& l) { return nb::tuple(nb::cast(l.normalized_shape)); },
          "The trailing dims normalised.")
      .def_ro("eps", &nn::RMSNorm::eps, "Added to the mean square (None: the dtype's epsilon).");
  layer<nn::Bilinear>(m, "Bilinear", "x1^T A x2 + b for each output feature.", false)
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::Bilinear> v, int64_t in1_features, int64_t in2_features,
             int64_t out_features, bool bias, std::optional<Device> device,
             std::optional<DType> dtype) {
            construct<nn::Bilinear>(v, in1_features, in2_features, out_features, bias);
            place(*v.p, device, dtype);
          },
          "in1_features"_a, "in2_features"_a, "out_features"_a, "bias"_a = true,
          "device"_a = nb::none(), "dtype"_a = nb::none(), "A bilinear layer.", record_init())
      .def(
          "forward",
          [](nn::Bilinear& l, const Tensor& input1, const Tensor& input2) {
            return l.forward(input1, input2);
          },
          "input1"_a, "input2"_a, release_gil(), "The layer's output.")
      .def("reset_parameters", &nn::Bilinear::reset_parameters, "Redraws weight and bias.")
      .def_ro("in1_features", &nn::Bilinear::in1_features, "Size of the first input.")
      .def_ro("in2_features", &nn::Bilinear::in2_features, "Size of the second input.")
      .def_ro("out_features", &nn::Bilinear::out_features, "Output features.");
  layer<nn::LayerNorm>(m, "LayerNorm", "Layer normalisation over the trailing normalized_shape.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::LayerNorm> v, Ints normalized_shape, double eps,
             bool elementwise_affine, bool bias, std::optional<Device> device,
             std::optional<DType> dtype) {
            construct<nn::LayerNorm>(
                v, std::vector<int64_t>(normalized_shape.v.begin(), normalized_shape.v.end()), eps,
                elementwise_affine, bias);
            place(*v.p, device, dtype);
          },
          "normalized_shape"_a, "eps"_a = 1e-5, "elementwise_affine"_a = true, "bias"_a = true,
          "device"_a = nb::none(), "dtype"_a = nb::none(), "LayerNorm over normalized_shape.",
          record_init())
      .def_prop_ro(
          "normalized_shape",
          [](const nn::LayerNorm& l) { return nb::tuple(nb::cast(l.normalized_shape)); },
          "The trailing dims normalised.")
      .def_ro("eps", &nn::LayerNorm::eps, "Added to the variance.");
  layer<nn::GroupNorm>(m, "GroupNorm", "Group normalisation of [N, C, ...].")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::GroupNorm> v, int64_t num_groups, int64_t num_channels,
             double eps, bool affine, std::optional<Device> device, std::optional<DType> dtype,
             bool bias) {
            construct<nn::GroupNorm>(v, num_groups, num_channels, eps, affine, bias);
            place(*v.p, device, dtype);
          },
          "num_groups"_a, "num_channels"_a, "eps"_a = 1e-5, "affine"_a = true,
          "device"_a = nb::none(), "dtype"_a = nb::none(), nb::kw_only(), "bias"_a = true,
          "GroupNorm.", record_init())
      .def_ro("num_groups", &nn::GroupNorm::num_groups, "Groups.")
      .def_ro("num_channels", &nn::GroupNorm::num_channels, "Channels.")
      .def_ro("eps", &nn::GroupNorm::eps, "Added to the variance.");
  layer<nn::Dropout>(m, "Dropout", "Zeroes elements with probability p in training.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::Dropout> v, double p, bool) {
            construct<nn::Dropout>(v, p);
          },
          "p"_a = 0.5, "inplace"_a = false, "Dropout with probability p.", record_init())
      .def_ro("p", &nn::Dropout::p, "The probability of zeroing.");
  layer<nn::FeatureDropout>(m, "_FeatureDropout", "What Dropout1d, Dropout2d and Dropout3d share.")
      .def_ro("p", &nn::FeatureDropout::p, "The probability of zeroing a channel.");
  auto feature_dropout = [&](auto tag, const char* name, const char* doc) {
    using T = typename decltype(tag)::type;
    layer<T, nn::FeatureDropout>(m, name, doc)
        .def(
            "__init__", [](nb::pointer_and_handle<T> v, double p, bool) { construct<T>(v, p); },
            "p"_a = 0.5, "inplace"_a = false, "Channel dropout with probability p.", record_init());
  };
  feature_dropout(std::type_identity<nn::Dropout1d>{}, "Dropout1d",
                  "Zeroes whole channels of [N, C, L] with probability p in training.");
  feature_dropout(std::type_identity<nn::Dropout2d>{}, "Dropout2d",
                  "Zeroes whole channels of [N, C, H, W] with probability p in training.");
  feature_dropout(std::type_identity<nn::Dropout3d>{}, "Dropout3d",
                  "Zeroes whole channels of [N, C, D, H, W] with probability p in training.");
  layer<nn::Embedding>(m, "Embedding", "A lookup table of vectors.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::Embedding> v, int64_t num_embeddings, int64_t embedding_dim,
             std::optional<int64_t> padding_idx, std::optional<double> max_norm, double norm_type,
             bool scale_grad_by_freq, bool sparse, std::optional<Tensor> weight, bool freeze,
             std::optional<Device> device, std::optional<DType> dtype) {
            EMBER_CHECK_NOT_IMPLEMENTED(!sparse,
                                        "[nn.Embedding] sparse gradients are not supported");
            construct<nn::Embedding>(v, num_embeddings, embedding_dim, padding_idx, max_norm,
                                     norm_type, scale_grad_by_freq);
            if (weight) {
              EMBER_CHECK(weight->dim() == 2 && weight->size(0) == num_embeddings &&
                              weight->size(1) == embedding_dim,
                          "[nn.Embedding] _weight has shape {}, expected [{}, {}]",
                          shape_str(weight->sizes()), num_embeddings, embedding_dim);
              v.p->set_parameter("weight", *weight, !freeze);
            }
            place(*v.p, device, dtype);
          },
          "num_embeddings"_a, "embedding_dim"_a, "padding_idx"_a = nb::none(),
          "max_norm"_a = nb::none(), "norm_type"_a = 2.0, "scale_grad_by_freq"_a = false,
          "sparse"_a = false, "_weight"_a = nb::none(), "_freeze"_a = false,
          "device"_a = nb::none(), "dtype"_a = nb::none(),
          "A table of num_embeddings vectors of size embedding_dim.", record_init())
      .def_ro("num_embeddings", &nn::Embedding::num_embeddings, "Rows.")
      .def_ro("embedding_dim", &nn::Embedding::embedding_dim, "Columns.")
      .def_ro("padding_idx", &nn::Embedding::padding_idx, "The row that gets no gradient.")
      .def_ro("max_norm", &nn::Embedding::max_norm, "Rows looked up are renormalised to it.")
      .def_ro("scale_grad_by_freq", &nn::Embedding::scale_grad_by_freq,
              "Gradients divided by each row's count in the batch.");

  layer<nn::EmbeddingBag>(m, "EmbeddingBag", "Bags of rows of a lookup table, reduced.", false)
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::EmbeddingBag> v, int64_t num_embeddings,
             int64_t embedding_dim, std::optional<double> max_norm, double norm_type,
             bool scale_grad_by_freq, std::string mode, bool sparse, std::optional<Tensor> weight,
             bool include_last_offset, std::optional<int64_t> padding_idx,
             std::optional<Device> device, std::optional<DType> dtype) {
            EMBER_CHECK_NOT_IMPLEMENTED(!sparse,
                                        "[nn.EmbeddingBag] sparse gradients are not supported");
            EMBER_CHECK_NOT_IMPLEMENTED(!scale_grad_by_freq,
                                        "[nn.EmbeddingBag] scale_grad_by_freq is not supported");
            construct<nn::EmbeddingBag>(v, num_embeddings, embedding_dim, max_norm, norm_type,
                                        std::move(mode), include_last_offset, padding_idx);
            if (weight) {
              EMBER_CHECK(weight->dim() == 2 && weight->size(0) == num_embeddings &&
                              weight->size(1) == embedding_dim,
                          "[nn.EmbeddingBag] _weight has shape {}, expected [{}, {}]",
                          shape_str(weight->sizes()), num_embeddings, embedding_dim);
              v.p->set_parameter("weight", *weight, true);
            }
            place(*v.p, device, dtype);
          },
          "num_embeddings"_a, "embedding_dim"_a, "max_norm"_a = nb::none(), "norm_type"_a = 2.0,
          "scale_grad_by_freq"_a = false, "mode"_a = "mean", "sparse"_a = false,
          "_weight"_a = nb::none(), "include_last_offset"_a = false, "padding_idx"_a = nb::none(),
          "device"_a = nb::none(), "dtype"_a = nb::none(),
          "A table of num_embeddings vectors of size embedding_dim, reduced per bag.",
          record_init())
      .def(
          "forward",
          [](nn::EmbeddingBag& l, const Tensor& input, std::optional<Tensor> offsets,
             std::optional<Tensor> per_sample_weights) {
            return l.forward(input, opt(offsets), opt(per_sample_weights));
          },
          "input"_a, "offsets"_a = nb::none(), "per_sample_weights"_a = nb::none(), release_gil(),
          "The reduced bags of input (1-d with offsets, or 2-d).")
      .def_ro("num_embeddings", &nn::EmbeddingBag::num_embeddings, "Rows.")
      .def_ro("embedding_dim", &nn::EmbeddingBag::embedding_dim, "Columns.")
      .def_ro("mode", &nn::EmbeddingBag::mode, "'sum', 'mean' or 'max'.")
      .def_ro("include_last_offset", &nn::EmbeddingBag::include_last_offset,
              "Whether offsets ends with the end of the last bag.")
      .def_ro("padding_idx", &nn::EmbeddingBag::padding_idx, "The row left out of every bag.")
      .def_ro("max_norm", &nn::EmbeddingBag::max_norm, "Rows looked up are renormalised to it.");

  // MaxPool2d/3d and AvgPool2d/3d: PyTorch's arguments, sized by the layer's kernel_size type.
  auto pool_layer = [&](auto tag, const char* name, const char* doc, bool is_max) {
    using T = typename decltype(tag)::type;
    using Size = std::remove_cvref_t<decltype(T::kernel_size)>;
    auto c = layer<T>(m, name, doc, !is_max);
    if constexpr (requires(T & l, const Tensor& x) { l.forward_with_indices(x); }) {
      bind_max_pool_forward<T>(c);
    }
    if (is_max) {
      c.def(
          "__init__",
          [](nb::pointer_and_handle<T> v, Ints kernel_size, std::optional<Ints> stride,
             Ints padding, Ints dilation, bool return_indices, bool ceil_mode) {
            nn::PoolOptions<Size> o;
            if (stride) o.stride = size_of<Size>(*stride);
            o.padding = size_of<Size>(padding);
            o.dilation = size_of<Size>(dilation);
            o.ceil_mode = ceil_mode;
            construct<T>(v, size_of<Size>(kernel_size), o);
            nb::setattr(v.h, "return_indices", nb::bool_(return_indices));
          },
          "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "dilation"_a = 1,
          "return_indices"_a = false, "ceil_mode"_a = false, "Pools kernel_size windows.",
          record_init());
    } else {
      c.def(
          "__init__",
          [](nb::pointer_and_handle<T> v, Ints kernel_size, std::optional<Ints> stride,
             Ints padding, bool ceil_mode, bool count_include_pad,
             std::optional<int64_t> divisor_override) {
            nn::PoolOptions<Size> o;
            if (stride) o.stride = size_of<Size>(*stride);
            o.padding = size_of<Size>(padding);
            o.ceil_mode = ceil_mode;
            o.count_include_pad = count_include_pad;
            o.divisor_override = divisor_override;
            construct<T>(v, size_of<Size>(kernel_size), o);
          },
          "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "ceil_mode"_a = false,
          "count_include_pad"_a = true, "divisor_override"_a = nb::none(),
          "Pools kernel_size windows.", record_init());
    }
    c.def_prop_ro(
        "kernel_size", [](const T& l) { return size_tuple(l.kernel_size); },
        std::is_same_v<Size, nn::Pair> ? "(kH, kW)." : "(kD, kH, kW).");
  };
  pool_layer(std::type_identity<nn::MaxPool2d>{}, "MaxPool2d", "Max pooling over [N, C, H, W].",
             true);
  pool_layer(std::type_identity<nn::AvgPool2d>{}, "AvgPool2d", "Average pooling over [N, C, H, W].",
             false);
  pool_layer(std::type_identity<nn::MaxPool3d>{}, "MaxPool3d", "Max pooling over [N, C, D, H, W].",
             true);
  pool_layer(std::type_identity<nn::AvgPool3d>{}, "AvgPool3d",
             "Average pooling over [N, C, D, H, W].", false);
  auto max_pool1d_layer =
      layer<nn::MaxPool1d>(m, "MaxPool1d", "Max pooling over [N, C, L].", false);
  bind_max_pool_forward<nn::MaxPool1d>(max_pool1d_layer);
  max_pool1d_layer
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::MaxPool1d> v, Ints kernel_size, std::optional<Ints> stride,
             Ints padding, Ints dilation, bool return_indices, bool ceil_mode) {
            nn::Pool1dOptions o;
            if (stride && stride->size()) o.stride = single(*stride, "nn.MaxPool1d", "stride");
            o.padding = single(padding, "nn.MaxPool1d", "padding");
            o.dilation = single(dilation, "nn.MaxPool1d", "dilation");
            o.ceil_mode = ceil_mode;
            construct<nn::MaxPool1d>(v, single(kernel_size, "nn.MaxPool1d", "kernel_size"), o);
            nb::setattr(v.h, "return_indices", nb::bool_(return_indices));
          },
          "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "dilation"_a = 1,
          "return_indices"_a = false, "ceil_mode"_a = false, "Pools kernel_size windows.",
          record_init())
      .def_ro("kernel_size", &nn::MaxPool1d::kernel_size, "The window.")
      .def_prop_ro(
          "stride", [](const nn::MaxPool1d& l) { return l.options.stride.value_or(l.kernel_size); },
          "The step.")
      .def_prop_ro(
          "padding", [](const nn::MaxPool1d& l) { return l.options.padding; }, "Padding.");
  layer<nn::AvgPool1d>(m, "AvgPool1d", "Average pooling over [N, C, L].")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::AvgPool1d> v, Ints kernel_size, std::optional<Ints> stride,
             Ints padding, bool ceil_mode, bool count_include_pad) {
            nn::Pool1dOptions o;
            if (stride && stride->size()) o.stride = single(*stride, "nn.AvgPool1d", "stride");
            o.padding = single(padding, "nn.AvgPool1d", "padding");
            o.ceil_mode = ceil_mode;
            o.count_include_pad = count_include_pad;
            construct<nn::AvgPool1d>(v, single(kernel_size, "nn.AvgPool1d", "kernel_size"), o);
          },
          "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, "ceil_mode"_a = false,
          "count_include_pad"_a = true, "Pools kernel_size windows.", record_init())
      .def_prop_ro(
          "kernel_size", [](const nn::AvgPool1d& l) { return nb::make_tuple(l.kernel_size); },
          "(k,).")
      .def_prop_ro(
          "stride",
          [](const nn::AvgPool1d& l) {
            return nb::make_tuple(l.options.stride.value_or(l.kernel_size));
          },
          "(s,).")
      .def_prop_ro(
          "padding", [](const nn::AvgPool1d& l) { return nb::make_tuple(l.options.padding); },
          "(p,).");
  // The adaptive poolings, sized by the layer's output_size type; the max ones take
  // return_indices (forward then returns (output, indices), as MaxPool's).
  auto adaptive_layer = [&](auto tag, const char* name, const char* doc) {
    using T = typename decltype(tag)::type;
    using Size = std::remove_cvref_t<decltype(T::output_size)>;
    constexpr bool is_max = requires(T & l, const Tensor& x) {
      l.forward_with_indices(x);
    };
    auto c = layer<T>(m, name, doc, !is_max);
    const auto size_arg = [name](nb::handle v) {
      if constexpr (std::is_same_v<Size, int64_t>) {
        EMBER_CHECK_TYPE(!v.is_none(),
                         "[nn.{}] output_size must be an int: got None (None keeps "
                         "a size of the 2-d and 3-d poolings only)",
                         name);
        return single(nb::cast<Ints>(v), name, "output_size");
      } else {
        return adaptive_size_arg<Size>(v, name);
      }
    };
    if constexpr (is_max) {
      bind_max_pool_forward<T>(c);
      c.def(
          "__init__",
          [size_arg](nb::pointer_and_handle<T> v, nb::handle output_size, bool return_indices) {
            construct<T>(v, size_arg(output_size));
            nb::setattr(v.h, "return_indices", nb::bool_(return_indices));
          },
          nb::arg("output_size").none(), "return_indices"_a = false,
          "Pools to output_size (a None entry keeps the input's size).", record_init());
    } else {
      c.def(
          "__init__",
          [size_arg](nb::pointer_and_handle<T> v, nb::handle output_size) {
            construct<T>(v, size_arg(output_size));
          },
          nb::arg("output_size").none(),
          "Pools to output_size (a None entry keeps the input's size).", record_init());
    }
    c.def_prop_ro(
        "output_size",
        [](const T& l) -> nb::object {
          if constexpr (std::is_same_v<Size, int64_t>) {
            return nb::int_(l.output_size);
          } else {
            return adaptive_size_value(l.output_size);
          }
        },
        "The output's spatial size: L, (H, W) or (D, H, W), None where it keeps the input's.");
  };
  adaptive_layer(std::type_identity<nn::AdaptiveAvgPool1d>{}, "AdaptiveAvgPool1d",
                 "Average pooling over [N, C, L] to a fixed length.");
  adaptive_layer(std::type_identity<nn::AdaptiveMaxPool1d>{}, "AdaptiveMaxPool1d",
                 "Max pooling over [N, C, L] to a fixed length.");
  adaptive_layer(std::type_identity<nn::AdaptiveAvgPool2d>{}, "AdaptiveAvgPool2d",
                 "Average pooling to a fixed output size.");
  adaptive_layer(std::type_identity<nn::AdaptiveMaxPool2d>{}, "AdaptiveMaxPool2d",
                 "Max pooling to a fixed output size.");
  adaptive_layer(std::type_identity<nn::AdaptiveAvgPool3d>{}, "AdaptiveAvgPool3d",
                 "Average pooling over [N, C, D, H, W] to a fixed output size.");
  adaptive_layer(std::type_identity<nn::AdaptiveMaxPool3d>{}, "AdaptiveMaxPool3d",
                 "Max pooling over [N, C, D, H, W] to a fixed output size.");
  // MaxUnpool1d/2d/3d and LPPool1d/2d/3d: the sizes as one int or one per spatial dim.
  const auto sizes_arg = [](const Ints& v, int64_t n, const char* layer, const char* what) {
    EMBER_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == n,
                "[nn.{}] {} must be an int or a tuple of {} ints: got {} values", layer, what, n,
                v.size());
    return v.size() == 1 ? std::vector<int64_t>(static_cast<size_t>(n), v.v[0])
                         : std::vector<int64_t>(v.v.begin(), v.v.end());
  };
  nb::class_<nn::MaxUnpool, nn::Module>(m, "_MaxUnpoolNd", nb::dynamic_attr(), module_type_slots(),
                                        "What MaxUnpool1d, 2d and 3d share.")
      .def(
          "forward",
          [](nn::MaxUnpool& l, const Tensor& input, const Tensor& indices,
             std::optional<Ints> output_size) {
            return l.forward(input, indices, output_size ? IntList(*output_size) : IntList());
          },
          "input"_a, "indices"_a, "output_size"_a = nb::none(), release_gil(),
          "The pooled values back at their indices, zeros elsewhere.")
      .def_prop_ro(
          "kernel_size", [](const nn::MaxUnpool& l) { return nb::tuple(nb::cast(l.kernel_size)); },
          "The pooling's window.")
      .def_prop_ro(
          "stride", [](const nn::MaxUnpool& l) { return nb::tuple(nb::cast(l.stride)); },
          "The pooling's step.")
      .def_prop_ro(
          "padding", [](const nn::MaxUnpool& l) { return nb::tuple(nb::cast(l.padding)); },
          "The pooling's padding.");
  nb::class_<nn::LPPool, nn::Module> lp_base(
      m, "_LPPoolNd", nb::dynamic_attr(), module_type_slots(), "What LPPool1d, 2d and 3d share.");
  bind_tensor_forward(lp_base);
  lp_base.def_ro("norm_type", &nn::LPPool::norm_type, "The power p.")
      .def_ro("ceil_mode", &nn::LPPool::ceil_mode, "Whether output sizes round up.");
  auto nd_layer = [&](auto tag, auto base, const char* name, int64_t n, const char* doc) {
    using T = typename decltype(tag)::type;
    using B = typename decltype(base)::type;
    auto c = nb::class_<T, B, PyLayer<T>>(m, name, nb::dynamic_attr(), module_type_slots(), doc);
    if constexpr (std::is_base_of_v<nn::MaxUnpool, T>) {
      c.def(
          "__init__",
          [=](nb::pointer_and_handle<T> v, Ints kernel_size, std::optional<Ints> stride,
              Ints padding) {
            const auto k = sizes_arg(kernel_size, n, name, "kernel_size");
            construct<T>(v, name, n, k, stride ? sizes_arg(*stride, n, name, "stride") : k,
                         sizes_arg(padding, n, name, "padding"));
          },
          "kernel_size"_a, "stride"_a = nb::none(), "padding"_a = 0, doc, record_init());
    } else {
      c.def(
          "__init__",
          [=](nb::pointer_and_handle<T> v, double norm_type, Ints kernel_size,
              std::optional<Ints> stride, bool ceil_mode) {
            construct<T>(v, name, n, norm_type, sizes_arg(kernel_size, n, name, "kernel_size"),
                         stride ? sizes_arg(*stride, n, name, "stride") : std::vector<int64_t>{},
                         ceil_mode);
          },
          "norm_type"_a, "kernel_size"_a, "stride"_a = nb::none(), "ceil_mode"_a = false, doc,
          record_init());
    }
  };
  const std::type_identity<nn::MaxUnpool> unpool;
  const std::type_identity<nn::LPPool> lp;
  nd_layer(std::type_identity<nn::MaxUnpool1d>{}, unpool, "MaxUnpool1d", 1, "Undoes MaxPool1d.");
  nd_layer(std::type_identity<nn::MaxUnpool2d>{}, unpool, "MaxUnpool2d", 2, "Undoes MaxPool2d.");
  nd_layer(std::type_identity<nn::MaxUnpool3d>{}, unpool, "MaxUnpool3d", 3, "Undoes MaxPool3d.");
  nd_layer(std::type_identity<nn::LPPool1d>{}, lp, "LPPool1d", 1, "Power-average pooling, 1-d.");
  nd_layer(std::type_identity<nn::LPPool2d>{}, lp, "LPPool2d", 2, "Power-average pooling, 2-d.");
  nd_layer(std::type_identity<nn::LPPool3d>{}, lp, "LPPool3d", 3, "Power-average pooling, 3-d.");
  plain_layer<nn::ChannelShuffle>(m, "ChannelShuffle", "ShuffleNet's channel shuffle.",
                                  param("groups", &nn::ChannelShuffle::groups, "The groups."));
  plain_layer<nn::Softmax2d>(m, "Softmax2d", "softmax over the channels of [N, C, H, W].");
  plain_layer<nn::PixelShuffle>(m, "PixelShuffle", "[*, C r^2, H, W] into [*, C, H r, W r].",
                                param("upscale_factor", &nn::PixelShuffle::upscale_factor, "r."));
  layer<nn::Upsample>(m, "Upsample", "Resizes its input as F.interpolate does.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::Upsample> v, std::optional<Ints> size,
             nb::handle scale_factor, std::string mode, std::optional<bool> align_corners,
             std::optional<bool> recompute_scale_factor) {
            construct<nn::Upsample>(
                v, interpolate_options(size, scale_factor, std::move(mode), align_corners,
                                       recompute_scale_factor, false));
          },
          "size"_a = nb::none(), "scale_factor"_a = nb::none(), "mode"_a = "nearest",
          "align_corners"_a = nb::none(), "recompute_scale_factor"_a = nb::none(),
          "The resize to size or by scale_factor.", record_init())
      .def_prop_ro(
          "mode", [](const nn::Upsample& u) { return u.options.mode; }, "The interpolation mode.");
  plain_layer<nn::PixelUnshuffle>(
      m, "PixelUnshuffle", "[*, C, H r, W r] into [*, C r^2, H, W].",
      param("downscale_factor", &nn::PixelUnshuffle::downscale_factor, "r."));
  plain_layer<nn::LocalResponseNorm>(
      m, "LocalResponseNorm", "local_response_norm across channels.",
      param("size", &nn::LocalResponseNorm::size, "Channels in each window."),
      param("alpha", &nn::LocalResponseNorm::alpha, 1e-4, "Scale of the mean square."),
      param("beta", &nn::LocalResponseNorm::beta, 0.75, "Exponent."),
      param("k", &nn::LocalResponseNorm::k, 1.0, "Additive constant."));
  layer<nn::Unfold>(m, "Unfold", "The sliding blocks of [N, C, H, W] as columns (im2col).")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::Unfold> v, Ints kernel_size, Ints dilation, Ints padding,
             Ints stride) {
            construct<nn::Unfold>(v, pair_of(kernel_size), pair_of(dilation), pair_of(padding),
                                  pair_of(stride));
          },
          "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0, "stride"_a = 1,
          "Blocks of kernel_size windows.", record_init())
      .def_prop_ro(
          "kernel_size", [](const nn::Unfold& l) { return pair_tuple(l.kernel_size); }, "(kH, kW).")
      .def_prop_ro(
          "dilation", [](const nn::Unfold& l) { return pair_tuple(l.dilation); }, "Tap spacing.")
      .def_prop_ro(
          "padding", [](const nn::Unfold& l) { return pair_tuple(l.padding); }, "Zero padding.")
      .def_prop_ro(
          "stride", [](const nn::Unfold& l) { return pair_tuple(l.stride); }, "Block steps.");
  layer<nn::Fold>(m, "Fold", "Columns [N, C kH kW, L] summed into images (col2im).")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::Fold> v, Ints output_size, Ints kernel_size, Ints dilation,
             Ints padding, Ints stride) {
            construct<nn::Fold>(v, pair_of(output_size), pair_of(kernel_size), pair_of(dilation),
                                pair_of(padding), pair_of(stride));
          },
          "output_size"_a, "kernel_size"_a, "dilation"_a = 1, "padding"_a = 0, "stride"_a = 1,
          "Images of output_size from blocks of kernel_size windows.", record_init())
      .def_prop_ro(
          "output_size", [](const nn::Fold& l) { return pair_tuple(l.output_size); }, "(H, W).")
      .def_prop_ro(
          "kernel_size", [](const nn::Fold& l) { return pair_tuple(l.kernel_size); }, "(kH, kW).")
      .def_prop_ro(
          "dilation", [](const nn::Fold& l) { return pair_tuple(l.dilation); }, "Tap spacing.")
      .def_prop_ro(
          "padding", [](const nn::Fold& l) { return pair_tuple(l.padding); }, "Zero padding.")
      .def_prop_ro(
          "stride", [](const nn::Fold& l) { return pair_tuple(l.stride); }, "Block steps.");
  layer<nn::CosineSimilarity>(m, "CosineSimilarity", "cosine_similarity of two inputs.", false)
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::CosineSimilarity> v, int64_t dim, double eps) {
            construct<nn::CosineSimilarity>(v, dim, eps);
          },
          "dim"_a = 1, "eps"_a = 1e-8, "The cosine along dim.", record_init())
      .def(
          "forward",
          [](nn::CosineSimilarity& l, const Tensor& x1, const Tensor& x2) {
            return l.forward(x1, x2);
          },
          "x1"_a, "x2"_a, release_gil(), "The cosine of x1 and x2 along dim.")
      .def_ro("dim", &nn::CosineSimilarity::dim, "The dim reduced.")
      .def_ro("eps", &nn::CosineSimilarity::eps, "The smallest norm divided by.");
  layer<nn::PairwiseDistance>(m, "PairwiseDistance", "pairwise_distance of two inputs.", false)
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::PairwiseDistance> v, double p, double eps, bool keepdim) {
            construct<nn::PairwiseDistance>(v, p, eps, keepdim);
          },
          "p"_a = 2.0, "eps"_a = 1e-6, "keepdim"_a = false, "The p-norm distance.", record_init())
      .def(
          "forward",
          [](nn::PairwiseDistance& l, const Tensor& x1, const Tensor& x2) {
            return l.forward(x1, x2);
          },
          "x1"_a, "x2"_a, release_gil(), "The distance between x1 and x2 over the last dim.")
      .def_ro("norm", &nn::PairwiseDistance::norm, "p.")
      .def_ro("eps", &nn::PairwiseDistance::eps, "Added to the difference.")
      .def_ro("keepdim", &nn::PairwiseDistance::keepdim, "Whether the reduced dim stays.");
  nb::class_<nn::Pad, nn::Module>(m, "_Pad", nb::dynamic_attr(), module_type_slots(),
                                  "Base of the padding modules.")
      .def_prop_ro(
          "padding",
          [](const nn::Pad& l) {
            return nb::tuple(nb::cast(std::vector<int64_t>(l.padding.begin(), l.padding.end())));
          },
          "(left, right[, top, bottom[, front, back]]).")
      .def_ro("value", &nn::Pad::value, "The fill of ZeroPad and ConstantPad.");
  const auto pad_layer = [&](auto tag, const char* name, const char* doc) {
    using T = typename decltype(tag)::type;
    auto c = layer<T, nn::Pad>(m, name, doc);
    if constexpr (std::is_same_v<T, nn::PadNd<nn::PadKind::Constant, 1>> ||
                  std::is_same_v<T, nn::PadNd<nn::PadKind::Constant, 2>> ||
                  std::is_same_v<T, nn::PadNd<nn::PadKind::Constant, 3>>) {
      c.def(
          "__init__",
          [](nb::pointer_and_handle<T> v, Ints padding, double value) {
            construct<T>(v, padding.v, value);
          },
          "padding"_a, "value"_a, "Pads by padding (an int pads every side), filling with value.",
          record_init());
    } else {
      c.def(
          "__init__", [](nb::pointer_and_handle<T> v, Ints padding) { construct<T>(v, padding.v); },
          "padding"_a, "Pads by padding (an int pads every side).", record_init());
    }
  };
  using nn::PadKind;
  using nn::PadNd;
  pad_layer(std::type_identity<PadNd<PadKind::Zero, 1>>{}, "ZeroPad1d", "Zero padding of 1 dim.");
  pad_layer(std::type_identity<PadNd<PadKind::Zero, 2>>{}, "ZeroPad2d", "Zero padding of 2 dims.");
  pad_layer(std::type_identity<PadNd<PadKind::Zero, 3>>{}, "ZeroPad3d", "Zero padding of 3 dims.");
  pad_layer(std::type_identity<PadNd<PadKind::Constant, 1>>{}, "ConstantPad1d",
            "Constant padding of 1 dim.");
  pad_layer(std::type_identity<PadNd<PadKind::Constant, 2>>{}, "ConstantPad2d",
            "Constant padding of 2 dims.");
  pad_layer(std::type_identity<PadNd<PadKind::Constant, 3>>{}, "ConstantPad3d",
            "Constant padding of 3 dims.");
  pad_layer(std::type_identity<PadNd<PadKind::Reflection, 1>>{}, "ReflectionPad1d",
            "Reflection padding of 1 dim.");
  pad_layer(std::type_identity<PadNd<PadKind::Reflection, 2>>{}, "ReflectionPad2d",
            "Reflection padding of 2 dims.");
  pad_layer(std::type_identity<PadNd<PadKind::Reflection, 3>>{}, "ReflectionPad3d",
            "Reflection padding of 3 dims.");
  pad_layer(std::type_identity<PadNd<PadKind::Replication, 1>>{}, "ReplicationPad1d",
            "Replication padding of 1 dim.");
  pad_layer(std::type_identity<PadNd<PadKind::Replication, 2>>{}, "ReplicationPad2d",
            "Replication padding of 2 dims.");
  pad_layer(std::type_identity<PadNd<PadKind::Replication, 3>>{}, "ReplicationPad3d",
            "Replication padding of 3 dims.");
  pad_layer(std::type_identity<PadNd<PadKind::Circular, 1>>{}, "CircularPad1d",
            "Circular padding of 1 dim.");
  pad_layer(std::type_identity<PadNd<PadKind::Circular, 2>>{}, "CircularPad2d",
            "Circular padding of 2 dims.");
  pad_layer(std::type_identity<PadNd<PadKind::Circular, 3>>{}, "CircularPad3d",
            "Circular padding of 3 dims.");
  plain_layer<nn::Flatten>(m, "Flatten", "Flattens dims start_dim..end_dim into one.",
                           param("start_dim", &nn::Flatten::start_dim, 1, "First dim merged."),
                           param("end_dim", &nn::Flatten::end_dim, -1, "Last dim merged."));

  // Activations.
  constexpr const char* kInplace = "Whether the input tensor becomes the output.";
  plain_layer<nn::ReLU>(m, "ReLU", "max(x, 0).",
                        param("inplace", &nn::ReLU::inplace, false, kInplace));
  plain_layer<nn::SiLU>(m, "SiLU", "x * sigmoid(x).",
                        param("inplace", &nn::SiLU::inplace, false, kInplace));
  plain_layer<nn::SELU>(m, "SELU", "The self-normalising ELU.",
                        param("inplace", &nn::SELU::inplace, false, kInplace));
  plain_layer<nn::ReLU6>(m, "ReLU6", "min(max(x, 0), 6).",
                         param("inplace", &nn::ReLU6::inplace, false, kInplace));
  plain_layer<nn::Mish>(m, "Mish", "x * tanh(softplus(x)).",
                        param("inplace", &nn::Mish::inplace, false, kInplace));
  plain_layer<nn::Hardsigmoid>(m, "Hardsigmoid", "relu6(x + 3) / 6.",
                               param("inplace", &nn::Hardsigmoid::inplace, false, kInplace));
  plain_layer<nn::Hardswish>(m, "Hardswish", "x * relu6(x + 3) / 6.",
                             param("inplace", &nn::Hardswish::inplace, false, kInplace));
  plain_layer<nn::LogSigmoid>(m, "LogSigmoid", "log(sigmoid(x)).");
  plain_layer<nn::Tanh>(m, "Tanh", "tanh(x).");
  plain_layer<nn::Sigmoid>(m, "Sigmoid", "1 / (1 + exp(-x)).");
  plain_layer<nn::Tanhshrink>(m, "Tanhshrink", "x - tanh(x).");
  plain_layer<nn::Softsign>(m, "Softsign", "x / (1 + |x|).");
  plain_layer<nn::GELU>(m, "GELU", "x * Phi(x), or its tanh approximation.",
                        param("approximate", &nn::GELU::approximate, "none", "'none' or 'tanh'."));
  plain_layer<nn::LeakyReLU>(
      m, "LeakyReLU", "x where positive, else negative_slope * x.",
      param("negative_slope", &nn::LeakyReLU::negative_slope, 0.01, "The slope below zero."),
      param("inplace", &nn::LeakyReLU::inplace, false, kInplace));
  plain_layer<nn::ELU>(m, "ELU", "x where positive, else alpha * (exp(x) - 1).",
                       param("alpha", &nn::ELU::alpha, 1.0, "Alpha."),
                       param("inplace", &nn::ELU::inplace, false, kInplace));
  plain_layer<nn::CELU>(m, "CELU", "max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).",
                        param("alpha", &nn::CELU::alpha, 1.0, "Alpha."),
                        param("inplace", &nn::CELU::inplace, false, kInplace));
  plain_layer<nn::Hardtanh>(m, "Hardtanh", "x clamped to [min_val, max_val].",
                            param("min_val", &nn::Hardtanh::min_val, -1.0, "Lower bound."),
                            param("max_val", &nn::Hardtanh::max_val, 1.0, "Upper bound."),
                            param("inplace", &nn::Hardtanh::inplace, false, kInplace));
  plain_layer<nn::Softplus>(
      m, "Softplus", "log(1 + exp(beta x)) / beta.",
      param("beta", &nn::Softplus::beta, 1.0, "Beta."),
      param("threshold", &nn::Softplus::threshold, 20.0, "Above it the function is linear."));
  plain_layer<nn::Threshold>(
      m, "Threshold", "x where x > threshold, else value.",
      param("threshold", &nn::Threshold::threshold, "The cut."),
      param("value", &nn::Threshold::value, "What replaces x at or below the cut."),
      param("inplace", &nn::Threshold::inplace, false, kInplace));
  plain_layer<nn::Hardshrink>(m, "Hardshrink", "x where |x| > lambd, else 0.",
                              param("lambd", &nn::Hardshrink::lambd, 0.5, "Lambda."));
  plain_layer<nn::Softshrink>(m, "Softshrink", "x shrunk towards 0 by lambd.",
                              param("lambd", &nn::Softshrink::lambd, 0.5, "Lambda."));
  plain_layer<nn::GLU>(m, "GLU", "The gated linear unit along dim.",
                       param("dim", &nn::GLU::dim, -1, "The dim halved."));
  auto dim_layer = [&](auto tag, const char* name, const char* doc) {
    using T = typename decltype(tag)::type;
    layer<T>(m, name, doc)
        .def(
            "__init__",
            [](nb::pointer_and_handle<T> v, std::optional<int64_t> dim) {
              construct<T>(v, dim.value_or(-1));
            },
            "dim"_a = nb::none(), doc, record_init())
        .def_ro("dim", &T::dim, "The dim it normalises along.");
  };
  dim_layer(std::type_identity<nn::Softmax>{}, "Softmax", "softmax along dim.");
  dim_layer(std::type_identity<nn::LogSoftmax>{}, "LogSoftmax", "log_softmax along dim.");
  dim_layer(std::type_identity<nn::Softmin>{}, "Softmin", "softmin along dim.");
  layer<nn::PReLU>(m, "PReLU", "x where positive, else a learnt slope times x.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::PReLU> v, int64_t num_parameters, double init,
             std::optional<Device> device, std::optional<DType> dtype) {
            construct<nn::PReLU>(v, num_parameters, init);
            place(*v.p, device, dtype);
          },
          "num_parameters"_a = 1, "init"_a = 0.25, "device"_a = nb::none(), "dtype"_a = nb::none(),
          record_init())
      .def_ro("num_parameters", &nn::PReLU::num_parameters, "Slopes: 1 or one per channel.");
}

void bind_losses(nb::module_& m) {
  nb::class_<nn::Loss, nn::Module>(m, "_Loss", nb::dynamic_attr(), module_type_slots(),
                                   "Base of the loss modules.")
      .def(
          "forward",
          [](nn::Loss& l, const Tensor& input, const Tensor& target) {
            return l.forward(input, target);
          },
          "input"_a, "target"_a, release_gil(), "The loss of input against target.")
      .def_prop_ro(
          "reduction", [](const nn::Loss& l) { return reduction_name(l.reduction); },
          "'mean', 'sum' or 'none'.");
  auto loss = [&](auto tag, const char* name, const char* doc) {
    using T = typename decltype(tag)::type;
    return nb::class_<T, nn::Loss, PyLayer<T>>(m, name, nb::dynamic_attr(), module_type_slots(),
                                               doc);
  };
  loss(std::type_identity<nn::CrossEntropyLoss>{}, "CrossEntropyLoss", "cross_entropy as a module.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::CrossEntropyLoss> v, std::optional<Tensor> weight,
             std::optional<bool> size_average, int64_t ignore_index, std::optional<bool> reduce,
             std::string_view reduction, double label_smoothing) {
            construct<nn::CrossEntropyLoss>(
                v, weight.value_or(Tensor()), ignore_index,
                reduction_arg(size_average, reduce, reduction, "CrossEntropyLoss"),
                label_smoothing);
          },
          "weight"_a = nb::none(), "size_average"_a = nb::none(), "ignore_index"_a = -100,
          "reduce"_a = nb::none(), "reduction"_a = "mean", "label_smoothing"_a = 0.0, record_init())
      .def_ro("ignore_index", &nn::CrossEntropyLoss::ignore_index, "The target value ignored.")
      .def_ro("label_smoothing", &nn::CrossEntropyLoss::label_smoothing, "Label smoothing.");
  loss(std::type_identity<nn::NLLLoss>{}, "NLLLoss", "nll_loss as a module.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::NLLLoss> v, std::optional<Tensor> weight,
             std::optional<bool> size_average, int64_t ignore_index, std::optional<bool> reduce,
             std::string_view reduction) {
            construct<nn::NLLLoss>(v, weight.value_or(Tensor()), ignore_index,
                                   reduction_arg(size_average, reduce, reduction, "NLLLoss"));
          },
          "weight"_a = nb::none(), "size_average"_a = nb::none(), "ignore_index"_a = -100,
          "reduce"_a = nb::none(), "reduction"_a = "mean", record_init())
      .def_ro("ignore_index", &nn::NLLLoss::ignore_index, "The target value ignored.");
  auto plain_loss = [&](auto tag, const char* name, const char* doc) {
    using T = typename decltype(tag)::type;
    loss(tag, name, doc)
        .def(
            "__init__",
            [name](nb::pointer_and_handle<T> v, std::optional<bool> size_average,
                   std::optional<bool> reduce, std::string_view reduction) {
              construct<T>(v, reduction_arg(size_average, reduce, reduction, name));
            },
            "size_average"_a = nb::none(), "reduce"_a = nb::none(), "reduction"_a = "mean",
            record_init());
  };
  plain_loss(std::type_identity<nn::MSELoss>{}, "MSELoss", "Mean squared error.");
  plain_loss(std::type_identity<nn::SoftMarginLoss>{}, "SoftMarginLoss",
             "The two-class logistic loss.");
  plain_loss(std::type_identity<nn::MultiLabelMarginLoss>{}, "MultiLabelMarginLoss",
             "The multi-class hinge loss over each sample's target classes.");
  loss(std::type_identity<nn::HingeEmbeddingLoss>{}, "HingeEmbeddingLoss",
       "hinge_embedding_loss as a module.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::HingeEmbeddingLoss> v, double margin,
             std::optional<bool> size_average, std::optional<bool> reduce,
             std::string_view reduction) {
            construct<nn::HingeEmbeddingLoss>(
                v, margin, reduction_arg(size_average, reduce, reduction, "HingeEmbeddingLoss"));
          },
          "margin"_a = 1.0, "size_average"_a = nb::none(), "reduce"_a = nb::none(),
          "reduction"_a = "mean", record_init())
      .def_ro("margin", &nn::HingeEmbeddingLoss::margin, "The margin.");
  loss(std::type_identity<nn::MultiLabelSoftMarginLoss>{}, "MultiLabelSoftMarginLoss",
       "multilabel_soft_margin_loss as a module.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::MultiLabelSoftMarginLoss> v, std::optional<Tensor> weight,
             std::optional<bool> size_average, std::optional<bool> reduce,
             std::string_view reduction) {
            construct<nn::MultiLabelSoftMarginLoss>(
                v, weight.value_or(Tensor()),
                reduction_arg(size_average, reduce, reduction, "MultiLabelSoftMarginLoss"));
          },
          "weight"_a = nb::none(), "size_average"_a = nb::none(), "reduce"_a = nb::none(),
          "reduction"_a = "mean", record_init());
  loss(std::type_identity<nn::PoissonNLLLoss>{}, "PoissonNLLLoss", "poisson_nll_loss as a module.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::PoissonNLLLoss> v, bool log_input, bool full,
             std::optional<bool> size_average, double eps, std::optional<bool> reduce,
             std::string_view reduction) {
            construct<nn::PoissonNLLLoss>(
                v, log_input, full, eps,
                reduction_arg(size_average, reduce, reduction, "PoissonNLLLoss"));
          },
          "log_input"_a = true, "full"_a = false, "size_average"_a = nb::none(), "eps"_a = 1e-8,
          "reduce"_a = nb::none(), "reduction"_a = "mean", record_init())
      .def_ro("log_input", &nn::PoissonNLLLoss::log_input, "Whether the input is log(rate).")
      .def_ro("full", &nn::PoissonNLLLoss::full, "Whether Stirling's term is added.")
      .def_ro("eps", &nn::PoissonNLLLoss::eps, "Added to the rate under the log.");
  nb::class_<nn::TripleLoss, nn::Module>(m, "_TripleLoss", nb::dynamic_attr(), module_type_slots(),
                                         "Base of the three-tensor losses.")
      .def(
          "forward",
          [](nn::TripleLoss& l, const Tensor& a, const Tensor& b, const Tensor& c) {
            return l.forward(a, b, c);
          },
          "input1"_a, "input2"_a, "target"_a, release_gil(), "The loss of the three tensors.")
      .def_prop_ro(
          "reduction", [](const nn::TripleLoss& l) { return reduction_name(l.reduction); },
          "'mean', 'sum' or 'none'.");
  const auto triple_loss = [&](auto tag, const char* name, const char* doc) {
    using T = typename decltype(tag)::type;
    return nb::class_<T, nn::TripleLoss, PyLayer<T>>(m, name, nb::dynamic_attr(),
                                                     module_type_slots(), doc);
  };
  triple_loss(std::type_identity<nn::MarginRankingLoss>{}, "MarginRankingLoss",
              "margin_ranking_loss as a module.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::MarginRankingLoss> v, double margin,
             std::optional<bool> size_average, std::optional<bool> reduce,
             std::string_view reduction) {
            construct<nn::MarginRankingLoss>(
                v, margin, reduction_arg(size_average, reduce, reduction, "MarginRankingLoss"));
          },
          "margin"_a = 0.0, "size_average"_a = nb::none(), "reduce"_a = nb::none(),
          "reduction"_a = "mean", record_init())
      .def_ro("margin", &nn::MarginRankingLoss::margin, "The margin.");
  triple_loss(std::type_identity<nn::GaussianNLLLoss>{}, "GaussianNLLLoss",
              "gaussian_nll_loss as a module.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::GaussianNLLLoss> v, bool full, double eps,
             std::string_view reduction) {
            construct<nn::GaussianNLLLoss>(v, full, eps,
                                           parse_reduction(reduction, "GaussianNLLLoss"));
          },
          nb::kw_only(), "full"_a = false, "eps"_a = 1e-6, "reduction"_a = "mean", record_init())
      .def(
          "forward",
          [](nn::GaussianNLLLoss& l, const Tensor& input, const Tensor& target,
             const Operand& var) {
            return var.tensor ? l.forward(input, target, *var.tensor)
                              : l.forward(input, target, var.scalar.to_double());
          },
          "input"_a, "target"_a, "var"_a, release_gil(), "The loss of input against target.")
      .def_ro("full", &nn::GaussianNLLLoss::full, "Whether log(2 pi) / 2 is added.")
      .def_ro("eps", &nn::GaussianNLLLoss::eps, "The smallest variance.");
  nb::class_<nn::CTCLoss, nn::Module, PyLayer<nn::CTCLoss>>(
      m, "CTCLoss", nb::dynamic_attr(), module_type_slots(), "ctc_loss as a module.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::CTCLoss> v, int64_t blank, std::string_view reduction,
             bool zero_infinity) {
            construct<nn::CTCLoss>(v, blank, parse_reduction(reduction, "CTCLoss"), zero_infinity);
          },
          "blank"_a = 0, "reduction"_a = "mean", "zero_infinity"_a = false, record_init())
      .def(
          "forward",
          [](nn::CTCLoss& l, const Tensor& log_probs, const Tensor& targets,
             const Tensor& input_lengths, const Tensor& target_lengths) {
            return l.forward(log_probs, targets, input_lengths, target_lengths);
          },
          "log_probs"_a, "targets"_a, "input_lengths"_a, "target_lengths"_a, release_gil(),
          "The loss of log_probs against targets.")
      .def(
          "forward",
          [](nn::CTCLoss& l, const Tensor& log_probs, const Tensor& targets, Ints input_lengths,
             Ints target_lengths) {
            return l.forward(log_probs, targets, input_lengths, target_lengths);
          },
          "log_probs"_a, "targets"_a, "input_lengths"_a, "target_lengths"_a, release_gil(),
          "The loss of log_probs against targets, the lengths as sequences.")
      .def_ro("blank", &nn::CTCLoss::blank, "The blank class.")
      .def_ro("zero_infinity", &nn::CTCLoss::zero_infinity, "Whether inf losses become 0.")
      .def_prop_ro(
          "reduction", [](const nn::CTCLoss& l) { return reduction_name(l.reduction); },
          "'mean', 'sum' or 'none'.");
  triple_loss(std::type_identity<nn::CosineEmbeddingLoss>{}, "CosineEmbeddingLoss",
              "cosine_embedding_loss as a module.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::CosineEmbeddingLoss> v, double margin,
             std::optional<bool> size_average, std::optional<bool> reduce,
             std::string_view reduction) {
            construct<nn::CosineEmbeddingLoss>(
                v, margin, reduction_arg(size_average, reduce, reduction, "CosineEmbeddingLoss"));
          },
          "margin"_a = 0.0, "size_average"_a = nb::none(), "reduce"_a = nb::none(),
          "reduction"_a = "mean", record_init())
      .def_ro("margin", &nn::CosineEmbeddingLoss::margin, "The margin.");
  triple_loss(std::type_identity<nn::TripletMarginLoss>{}, "TripletMarginLoss",
              "triplet_margin_loss as a module.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::TripletMarginLoss> v, double margin, double p, double eps,
             bool swap, std::optional<bool> size_average, std::optional<bool> reduce,
             std::string_view reduction) {
            construct<nn::TripletMarginLoss>(
                v, margin, p, eps, swap,
                reduction_arg(size_average, reduce, reduction, "TripletMarginLoss"));
          },
          "margin"_a = 1.0, "p"_a = 2.0, "eps"_a = 1e-6, "swap"_a = false,
          "size_average"_a = nb::none(), "reduce"_a = nb::none(), "reduction"_a = "mean",
          record_init())
      .def_ro("margin", &nn::TripletMarginLoss::margin, "The margin.")
      .def_ro("p", &nn::TripletMarginLoss::p, "The norm degree of the distances.")
      .def_ro("eps", &nn::TripletMarginLoss::eps, "Added to the differences.")
      .def_ro("swap", &nn::TripletMarginLoss::swap,
              "Whether d(positive, negative) may replace "
              "d(anchor, negative).");
  plain_loss(std::type_identity<nn::L1Loss>{}, "L1Loss", "Mean absolute error.");
  loss(std::type_identity<nn::HuberLoss>{}, "HuberLoss", "Huber's loss.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::HuberLoss> v, std::string_view reduction, double delta) {
            construct<nn::HuberLoss>(v, parse_reduction(reduction, "HuberLoss"), delta);
          },
          "reduction"_a = "mean", "delta"_a = 1.0, record_init())
      .def_ro("delta", &nn::HuberLoss::delta, "Where the loss turns linear.");
  loss(std::type_identity<nn::SmoothL1Loss>{}, "SmoothL1Loss", "Smooth L1 loss.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::SmoothL1Loss> v, std::optional<bool> size_average,
             std::optional<bool> reduce, std::string_view reduction, double beta) {
            construct<nn::SmoothL1Loss>(
                v, reduction_arg(size_average, reduce, reduction, "SmoothL1Loss"), beta);
          },
          "size_average"_a = nb::none(), "reduce"_a = nb::none(), "reduction"_a = "mean",
          "beta"_a = 1.0, record_init())
      .def_ro("beta", &nn::SmoothL1Loss::beta, "Where the loss turns linear.");
  loss(std::type_identity<nn::KLDivLoss>{}, "KLDivLoss", "Kullback-Leibler divergence.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::KLDivLoss> v, std::optional<bool> size_average,
             std::optional<bool> reduce, std::string_view reduction, bool log_target) {
            construct<nn::KLDivLoss>(v, reduction_arg(size_average, reduce, reduction, "KLDivLoss"),
                                     log_target);
          },
          "size_average"_a = nb::none(), "reduce"_a = nb::none(), "reduction"_a = "mean",
          "log_target"_a = false, record_init())
      .def_ro("log_target", &nn::KLDivLoss::log_target, "The target holds log-probabilities.");
  loss(std::type_identity<nn::BCELoss>{}, "BCELoss", "Binary cross entropy of probabilities.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::BCELoss> v, std::optional<Tensor> weight,
             std::optional<bool> size_average, std::optional<bool> reduce,
             std::string_view reduction) {
            construct<nn::BCELoss>(v, weight.value_or(Tensor()),
                                   reduction_arg(size_average, reduce, reduction, "BCELoss"));
          },
          "weight"_a = nb::none(), "size_average"_a = nb::none(), "reduce"_a = nb::none(),
          "reduction"_a = "mean", record_init());
  loss(std::type_identity<nn::BCEWithLogitsLoss>{}, "BCEWithLogitsLoss",
       "Binary cross entropy of logits.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::BCEWithLogitsLoss> v, std::optional<Tensor> weight,
             std::optional<bool> size_average, std::optional<bool> reduce,
             std::string_view reduction, std::optional<Tensor> pos_weight) {
            construct<nn::BCEWithLogitsLoss>(
                v, weight.value_or(Tensor()), pos_weight.value_or(Tensor()),
                reduction_arg(size_average, reduce, reduction, "BCEWithLogitsLoss"));
          },
          "weight"_a = nb::none(), "size_average"_a = nb::none(), "reduce"_a = nb::none(),
          "reduction"_a = "mean", "pos_weight"_a = nb::none(), record_init());
}

nn::RNNOptions rnn_options(int64_t num_layers, bool bias, bool batch_first, double dropout,
                           bool bidirectional, int64_t proj_size) {
  nn::RNNOptions o;
  o.proj_size = proj_size;
  o.num_layers = num_layers;
  o.bias = bias;
  o.batch_first = batch_first;
  o.dropout = dropout;
  o.bidirectional = bidirectional;
  return o;
}

/** `t`, or None where undefined (PackedSequence's optional fields). */
nb::object tensor_or_none(const Tensor& t) {
  return t.defined() ? nb::cast(t) : nb::none();
}

/** torch.nn.utils.rnn's PackedSequence and the functions that make and undo one. */
void bind_packed_sequence(nb::module_& m) {
  nb::class_<nn::PackedSequence>(
      m, "PackedSequence",
      "Sequences of different lengths packed time-major: data, batch_sizes, sorted_indices, "
      "unsorted_indices (torch.nn.utils.rnn.PackedSequence).")
      .def(
          "__init__",
          [](nn::PackedSequence* p, const Tensor& data, const Tensor& batch_sizes,
             std::optional<Tensor> sorted_indices, std::optional<Tensor> unsorted_indices) {
            new (p) nn::PackedSequence{data, batch_sizes, sorted_indices.value_or(Tensor()),
                                       unsorted_indices.value_or(Tensor())};
          },
          "data"_a, "batch_sizes"_a, "sorted_indices"_a = nb::none(),
          "unsorted_indices"_a = nb::none(), "A packed batch from its four fields.")
      .def_prop_ro(
          "data", [](const nn::PackedSequence& p) { return p.data; },
          "[sum of the lengths, *]: the steps, time-major, longest sequences first.")
      .def_prop_ro(
          "batch_sizes", [](const nn::PackedSequence& p) { return p.batch_sizes; },
          "int64 [longest length] on the CPU: how many sequences are longer than each step.")
      .def_prop_ro(
          "sorted_indices",
          [](const nn::PackedSequence& p) { return tensor_or_none(p.sorted_indices); },
          nb::sig("def sorted_indices(self) -> ember.Tensor | None"),
          "The batch index in each sorted place (None: the batch came sorted).")
      .def_prop_ro(
          "unsorted_indices",
          [](const nn::PackedSequence& p) { return tensor_or_none(p.unsorted_indices); },
          nb::sig("def unsorted_indices(self) -> ember.Tensor | None"),
          "Each sequence's sorted place (None: the batch came sorted).")
      .def(
          "__iter__",
          [](const nn::PackedSequence& p) {
            return nb::iter(nb::make_tuple(p.data, p.batch_sizes, tensor_or_none(p.sorted_indices),
                                           tensor_or_none(p.unsorted_indices)));
          },
          "The four fields, as PyTorch's namedtuple unpacks.")
      .def(
          "to",
          [](const nn::PackedSequence& p, nb::args args, nb::kwargs kwargs) {
            const ToArgs a = parse_to(args, kwargs);
            ToArgs device_only;
            device_only.device = a.device;
            auto moved = [&](const Tensor& t) {
              return t.defined() ? apply_to(t, device_only) : Tensor();
            };
            return nn::PackedSequence{apply_to(p.data, a), p.batch_sizes, moved(p.sorted_indices),
                                      moved(p.unsorted_indices)};
          },
          "args"_a, "kwargs"_a,
          "The data converted as Tensor.to says, the indices moved with it; batch_sizes stays "
          "on the CPU.")
      .def_prop_ro(
          "is_cuda",
          [](const nn::PackedSequence& p) { return p.data.device().type_name() == "cuda"; },
          "Whether the data is on a CUDA device.");
  m.def(
      "_pack_padded_sequence",
      [](const Tensor& input, const Tensor& lengths, bool batch_first, bool enforce_sorted) {
        return nn::pack_padded_sequence(input, lengths, batch_first, enforce_sorted);
      },
      "input"_a, "lengths"_a, "batch_first"_a = false, "enforce_sorted"_a = true, release_gil(),
      "torch.nn.utils.rnn.pack_padded_sequence (ember.nn.utils.rnn's).");
  m.def(
      "_pad_packed_sequence",
      [](const nn::PackedSequence& sequence, bool batch_first, double padding_value,
         std::optional<int64_t> total_length) {
        return nn::pad_packed_sequence(sequence, batch_first, padding_value, total_length);
      },
      "sequence"_a, "batch_first"_a = false, "padding_value"_a = 0.0, "total_length"_a = nb::none(),
      release_gil(), "torch.nn.utils.rnn.pad_packed_sequence (ember.nn.utils.rnn's).");
  m.def(
      "_pack_sequence",
      [](const std::vector<Tensor>& sequences, bool enforce_sorted) {
        return nn::pack_sequence(sequences, enforce_sorted);
      },
      "sequences"_a, "enforce_sorted"_a = true, release_gil(),
      "torch.nn.utils.rnn.pack_sequence (ember.nn.utils.rnn's).");
}

/** forward(input, hx=None) -> (output, h_n) of GRU and RNN (T), over a tensor or over packed
 *  sequences. */
template <class T, class Cls>
void bind_hidden_state_forward(Cls& cls) {
  auto bind = [&]<class Input>(std::type_identity<Input>, const char* doc) {
    cls.def(
        "forward",
        [](T& layer, const Input& input, std::optional<Tensor> hx) {
          std::tuple<Input, Tensor> out;
          {
            GilRelease release;
            out = layer.forward(input, hx.value_or(Tensor()));
          }
          return nb::make_tuple(std::get<0>(out), std::get<1>(out));
        },
        "input"_a, "hx"_a = nb::none(), doc);
  };
  bind(std::type_identity<Tensor>{}, "(output, h_n) from a zero state or hx.");
  bind(std::type_identity<nn::PackedSequence>{},
       "(packed output, h_n) of packed sequences, each over its own steps.");
}

void bind_recurrent(nb::module_& m) {
  bind_packed_sequence(m);
  nb::class_<nn::RNNBase, nn::Module>(m, "RNNBase", nb::dynamic_attr(), module_type_slots(),
                                      "What LSTM, GRU and RNN share.")
      .def(
          "flatten_parameters", [](nn::RNNBase&) {},
          "Does nothing: the weights are always used where they are (PyTorch compacts them for "
          "cuDNN here).")
      .def_ro("input_size", &nn::RNNBase::input_size, "Input features.")
      .def_ro("hidden_size", &nn::RNNBase::hidden_size, "Hidden features per direction.")
      .def_prop_ro(
          "num_layers", [](const nn::RNNBase& r) { return r.options.num_layers; },
          "Stacked layers.")
      .def_prop_ro(
          "bias", [](const nn::RNNBase& r) { return r.options.bias; }, "Has biases.")
      .def_prop_ro(
          "batch_first", [](const nn::RNNBase& r) { return r.options.batch_first; },
          "[N, L, ...] layout.")
      .def_prop_ro(
          "dropout", [](const nn::RNNBase& r) { return r.options.dropout; },
          "Dropout between layers.")
      .def_prop_ro(
          "bidirectional", [](const nn::RNNBase& r) { return r.options.bidirectional; },
          "Two directions per layer.")
      .def_prop_ro(
          "proj_size", [](const nn::RNNBase& r) { return r.options.proj_size; },
          "LSTM: the projected hidden state's features (0: none).")
      .def("reset_parameters", &nn::RNNBase::reset_parameters, "PyTorch's default initialisation.");
  nb::class_<nn::LSTM, nn::RNNBase, PyLayer<nn::LSTM>>(
      m, "LSTM", nb::dynamic_attr(), module_type_slots(), "Long short-term memory.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::LSTM> v, int64_t input_size, int64_t hidden_size,
             int64_t num_layers, bool bias, bool batch_first, double dropout, bool bidirectional,
             int64_t proj_size, std::optional<Device> device, std::optional<DType> dtype) {
            construct<nn::LSTM>(
                v, input_size, hidden_size,
                rnn_options(num_layers, bias, batch_first, dropout, bidirectional, proj_size));
            place(*v.p, device, dtype);
          },
          "input_size"_a, "hidden_size"_a, "num_layers"_a = 1, "bias"_a = true,
          "batch_first"_a = false, "dropout"_a = 0.0, "bidirectional"_a = false, "proj_size"_a = 0,
          "device"_a = nb::none(), "dtype"_a = nb::none(), "An LSTM.", record_init())
      .def(
          "forward",
          [](nn::LSTM& l, const Tensor& input, std::optional<std::pair<Tensor, Tensor>> hx) {
            std::tuple<Tensor, Tensor, Tensor> r;
            {
              GilRelease release;
              r = hx ? l.forward(input, hx->first, hx->second)
                     : l.forward(input, Tensor(), Tensor());
            }
            return nb::make_tuple(std::get<0>(r), nb::make_tuple(std::get<1>(r), std::get<2>(r)));
          },
          "input"_a, "hx"_a = nb::none(),
          "(output, (h_n, c_n)) from zero states or hx = (h_0, c_0).")
      .def(
          "forward",
          [](nn::LSTM& l, const nn::PackedSequence& input,
             std::optional<std::pair<Tensor, Tensor>> hx) {
            std::tuple<nn::PackedSequence, Tensor, Tensor> r;
            {
              GilRelease release;
              r = hx ? l.forward(input, hx->first, hx->second)
                     : l.forward(input, Tensor(), Tensor());
            }
            return nb::make_tuple(std::get<0>(r), nb::make_tuple(std::get<1>(r), std::get<2>(r)));
          },
          "input"_a, "hx"_a = nb::none(),
          "(packed output, (h_n, c_n)) of packed sequences, each over its own steps.");
  auto gru_class = nb::class_<nn::GRU, nn::RNNBase, PyLayer<nn::GRU>>(
      m, "GRU", nb::dynamic_attr(), module_type_slots(), "Gated recurrent unit.");
  gru_class.def(
      "__init__",
      [](nb::pointer_and_handle<nn::GRU> v, int64_t input_size, int64_t hidden_size,
         int64_t num_layers, bool bias, bool batch_first, double dropout, bool bidirectional,
         std::optional<Device> device, std::optional<DType> dtype) {
        construct<nn::GRU>(v, input_size, hidden_size,
                           rnn_options(num_layers, bias, batch_first, dropout, bidirectional, 0));
        place(*v.p, device, dtype);
      },
      "input_size"_a, "hidden_size"_a, "num_layers"_a = 1, "bias"_a = true, "batch_first"_a = false,
      "dropout"_a = 0.0, "bidirectional"_a = false, "device"_a = nb::none(), "dtype"_a = nb::none(),
      "A GRU.", record_init());
  bind_hidden_state_forward<nn::GRU>(gru_class);
  auto rnn_class = nb::class_<nn::RNN, nn::RNNBase, PyLayer<nn::RNN>>(
      m, "RNN", nb::dynamic_attr(), module_type_slots(), "Elman RNN.");
  rnn_class
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::RNN> v, int64_t input_size, int64_t hidden_size,
             int64_t num_layers, const std::string& nonlinearity, bool bias, bool batch_first,
             double dropout, bool bidirectional, std::optional<Device> device,
             std::optional<DType> dtype) {
            construct<nn::RNN>(
                v, input_size, hidden_size,
                rnn_options(num_layers, bias, batch_first, dropout, bidirectional, 0),
                nonlinearity);
            place(*v.p, device, dtype);
          },
          "input_size"_a, "hidden_size"_a, "num_layers"_a = 1, "nonlinearity"_a = "tanh",
          "bias"_a = true, "batch_first"_a = false, "dropout"_a = 0.0, "bidirectional"_a = false,
          "device"_a = nb::none(), "dtype"_a = nb::none(), "An Elman RNN (tanh or relu).",
          record_init())
      .def_ro("nonlinearity", &nn::RNN::nonlinearity, "'tanh' or 'relu'.");
  bind_hidden_state_forward<nn::RNN>(rnn_class);

  nb::class_<nn::RNNCellBase, nn::Module>(m, "RNNCellBase", nb::dynamic_attr(), module_type_slots(),
                                          "What RNNCell, LSTMCell and GRUCell share.")
      .def_ro("input_size", &nn::RNNCellBase::input_size, "Input features.")
      .def_ro("hidden_size", &nn::RNNCellBase::hidden_size, "Hidden features.")
      .def_ro("bias", &nn::RNNCellBase::bias, "Has biases.")
      .def("reset_parameters", &nn::RNNCellBase::reset_parameters,
           "PyTorch's default initialisation.");
  nb::class_<nn::RNNCell, nn::RNNCellBase, PyLayer<nn::RNNCell>>(
      m, "RNNCell", nb::dynamic_attr(), module_type_slots(), "One step of an Elman RNN.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::RNNCell> v, int64_t input_size, int64_t hidden_size,
             bool bias, const std::string& nonlinearity, std::optional<Device> device,
             std::optional<DType> dtype) {
            construct<nn::RNNCell>(v, input_size, hidden_size, bias, nonlinearity);
            place(*v.p, device, dtype);
          },
          "input_size"_a, "hidden_size"_a, "bias"_a = true, "nonlinearity"_a = "tanh",
          "device"_a = nb::none(), "dtype"_a = nb::none(), "An RNN cell (tanh or relu).",
          record_init())
      .def_ro("nonlinearity", &nn::RNNCell::nonlinearity, "'tanh' or 'relu'.")
      .def(
          "forward",
          [](nn::RNNCell& c, const Tensor& input, std::optional<Tensor> hx) {
            GilRelease release;
            return c.forward(input, hx.value_or(Tensor()));
          },
          "input"_a, "hx"_a = nb::none(), "The next hidden state from a zero state or hx.");
  nb::class_<nn::LSTMCell, nn::RNNCellBase, PyLayer<nn::LSTMCell>>(
      m, "LSTMCell", nb::dynamic_attr(), module_type_slots(), "One step of an LSTM.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::LSTMCell> v, int64_t input_size, int64_t hidden_size,
             bool bias, std::optional<Device> device, std::optional<DType> dtype) {
            construct<nn::LSTMCell>(v, input_size, hidden_size, bias);
            place(*v.p, device, dtype);
          },
          "input_size"_a, "hidden_size"_a, "bias"_a = true, "device"_a = nb::none(),
          "dtype"_a = nb::none(), "An LSTM cell.", record_init())
      .def(
          "forward",
          [](nn::LSTMCell& c, const Tensor& input, std::optional<std::pair<Tensor, Tensor>> hx) {
            std::tuple<Tensor, Tensor> r;
            {
              GilRelease release;
              r = hx ? c.forward(input, hx->first, hx->second)
                     : c.forward(input, Tensor(), Tensor());
            }
            return nb::make_tuple(std::get<0>(r), std::get<1>(r));
          },
          "input"_a, "hx"_a = nb::none(), "(h_1, c_1) from zero states or hx = (h_0, c_0).");
  nb::class_<nn::GRUCell, nn::RNNCellBase, PyLayer<nn::GRUCell>>(
      m, "GRUCell", nb::dynamic_attr(), module_type_slots(), "One step of a GRU.")
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::GRUCell> v, int64_t input_size, int64_t hidden_size,
             bool bias, std::optional<Device> device, std::optional<DType> dtype) {
            construct<nn::GRUCell>(v, input_size, hidden_size, bias);
            place(*v.p, device, dtype);
          },
          "input_size"_a, "hidden_size"_a, "bias"_a = true, "device"_a = nb::none(),
          "dtype"_a = nb::none(), "A GRU cell.", record_init())
      .def(
          "forward",
          [](nn::GRUCell& c, const Tensor& input, std::optional<Tensor> hx) {
            GilRelease release;
            return c.forward(input, hx.value_or(Tensor()));
          },
          "input"_a, "hx"_a = nb::none(), "The next hidden state from a zero state or hx.");
}

nn::TransformerLayerOptions transformer_options(int64_t dim_feedforward, double dropout,
                                                nb::handle activation, double layer_norm_eps,
                                                bool batch_first, bool norm_first, bool bias) {
  nn::TransformerLayerOptions o;
  o.dim_feedforward = dim_feedforward;
  o.dropout = dropout;
  if (nb::isinstance<nb::str>(activation)) {
    o.activation = nb::cast<std::string>(activation);
  } else {
    // A function (F.relu, F.gelu): by name, as PyTorch fast-paths them.
    const std::string name = nb::cast<std::string>(activation.attr("__name__"));
    EMBER_CHECK(name == "relu" || name == "gelu",
                "[nn.Transformer] activation must be 'relu', 'gelu' or those functions, got {}",
                name);
    o.activation = name;
  }
  o.layer_norm_eps = layer_norm_eps;
  o.batch_first = batch_first;
  o.norm_first = norm_first;
  o.bias = bias;
  return o;
}

void bind_attention(nb::module_& m) {
  layer<nn::MultiheadAttention>(m, "MultiheadAttention", "Multi-head attention as PyTorch's.",
                                false)
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::MultiheadAttention> v, int64_t embed_dim, int64_t num_heads,
             double dropout, bool bias, bool add_bias_kv, bool add_zero_attn,
             std::optional<int64_t> kdim, std::optional<int64_t> vdim, bool batch_first,
             std::optional<Device> device, std::optional<DType> dtype) {
            nn::MultiheadAttentionOptions o;
            o.dropout = dropout;
            o.bias = bias;
            o.add_bias_kv = add_bias_kv;
            o.add_zero_attn = add_zero_attn;
            o.kdim = kdim;
            o.vdim = vdim;
            o.batch_first = batch_first;
            construct<nn::MultiheadAttention>(v, embed_dim, num_heads, o);
            place(*v.p, device, dtype);
          },
          "embed_dim"_a, "num_heads"_a, "dropout"_a = 0.0, "bias"_a = true, "add_bias_kv"_a = false,
          "add_zero_attn"_a = false, "kdim"_a = nb::none(), "vdim"_a = nb::none(),
          "batch_first"_a = false, "device"_a = nb::none(), "dtype"_a = nb::none(),
          "embed_dim split over num_heads heads.", record_init())
      .def(
          "forward",
          [](nn::MultiheadAttention& a, const Tensor& q, const Tensor& k, const Tensor& v,
             std::optional<Tensor> key_padding_mask, bool need_weights,
             std::optional<Tensor> attn_mask, bool average_attn_weights, bool is_causal) {
            std::pair<Tensor, Tensor> r;
            {
              GilRelease release;
              r = a.forward(q, k, v, opt(key_padding_mask), need_weights, opt(attn_mask),
                            average_attn_weights, is_causal);
            }
            return nb::make_tuple(r.first, r.second);
          },
          "query"_a, "key"_a, "value"_a, "key_padding_mask"_a = nb::none(), "need_weights"_a = true,
          "attn_mask"_a = nb::none(), "average_attn_weights"_a = true, "is_causal"_a = false,
          "(attn_output, attn_weights or None).")
      .def_ro("embed_dim", &nn::MultiheadAttention::embed_dim, "Embedding width.")
      .def_ro("num_heads", &nn::MultiheadAttention::num_heads, "Heads.")
      .def_ro("head_dim", &nn::MultiheadAttention::head_dim, "Width per head.")
      .def_ro("kdim", &nn::MultiheadAttention::kdim, "Key features.")
      .def_ro("vdim", &nn::MultiheadAttention::vdim, "Value features.")
      .def_ro("add_zero_attn", &nn::MultiheadAttention::add_zero_attn,
              "Whether a zero key and value are appended.")
      .def_prop_ro(
          "_qkv_same_embed_dim",
          [](const nn::MultiheadAttention& a) { return a.in_proj_weight.defined(); },
          "Whether one in_proj_weight projects query, key and value (kdim = vdim = embed_dim).")
      .def_ro("batch_first", &nn::MultiheadAttention::batch_first, "[N, L, E] layout.");
  layer<nn::TransformerEncoderLayer>(m, "TransformerEncoderLayer",
                                     "Self-attention and a feed-forward block, with norms.", false)
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::TransformerEncoderLayer> v, int64_t d_model, int64_t nhead,
             int64_t dim_feedforward, double dropout, nb::handle activation, double layer_norm_eps,
             bool batch_first, bool norm_first, bool bias, std::optional<Device> device,
             std::optional<DType> dtype) {
            construct<nn::TransformerEncoderLayer>(
                v, d_model, nhead,
                transformer_options(dim_feedforward, dropout, activation, layer_norm_eps,
                                    batch_first, norm_first, bias));
            place(*v.p, device, dtype);
          },
          "d_model"_a, "nhead"_a, "dim_feedforward"_a = 2048, "dropout"_a = 0.1,
          "activation"_a = "relu", "layer_norm_eps"_a = 1e-5, "batch_first"_a = false,
          "norm_first"_a = false, "bias"_a = true, "device"_a = nb::none(), "dtype"_a = nb::none(),
          "An encoder layer of width d_model.", record_init())
      .def(
          "forward",
          [](nn::TransformerEncoderLayer& l, const Tensor& src, std::optional<Tensor> src_mask,
             std::optional<Tensor> src_key_padding_mask, bool is_causal) {
            return l.forward(src, opt(src_mask), opt(src_key_padding_mask), is_causal);
          },
          "src"_a, "src_mask"_a = nb::none(), "src_key_padding_mask"_a = nb::none(),
          "is_causal"_a = false, release_gil(), "The layer on src.");
  layer<nn::TransformerDecoderLayer>(
      m, "TransformerDecoderLayer",
      "Self-attention, attention over a memory and a feed-forward block.", false)
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::TransformerDecoderLayer> v, int64_t d_model, int64_t nhead,
             int64_t dim_feedforward, double dropout, nb::handle activation, double layer_norm_eps,
             bool batch_first, bool norm_first, bool bias, std::optional<Device> device,
             std::optional<DType> dtype) {
            construct<nn::TransformerDecoderLayer>(
                v, d_model, nhead,
                transformer_options(dim_feedforward, dropout, activation, layer_norm_eps,
                                    batch_first, norm_first, bias));
            place(*v.p, device, dtype);
          },
          "d_model"_a, "nhead"_a, "dim_feedforward"_a = 2048, "dropout"_a = 0.1,
          "activation"_a = "relu", "layer_norm_eps"_a = 1e-5, "batch_first"_a = false,
          "norm_first"_a = false, "bias"_a = true, "device"_a = nb::none(), "dtype"_a = nb::none(),
          "A decoder layer of width d_model.", record_init())
      .def(
          "forward",
          [](nn::TransformerDecoderLayer& l, const Tensor& tgt, const Tensor& memory,
             std::optional<Tensor> tgt_mask, std::optional<Tensor> memory_mask,
             std::optional<Tensor> tgt_key_padding_mask,
             std::optional<Tensor> memory_key_padding_mask, bool tgt_is_causal,
             bool memory_is_causal) {
            return l.forward(tgt, memory, opt(tgt_mask), opt(memory_mask),
                             opt(tgt_key_padding_mask), opt(memory_key_padding_mask), tgt_is_causal,
                             memory_is_causal);
          },
          "tgt"_a, "memory"_a, "tgt_mask"_a = nb::none(), "memory_mask"_a = nb::none(),
          "tgt_key_padding_mask"_a = nb::none(), "memory_key_padding_mask"_a = nb::none(),
          "tgt_is_causal"_a = false, "memory_is_causal"_a = false, release_gil(),
          "The layer on tgt attending to memory.");
  layer<nn::TransformerEncoder>(m, "TransformerEncoder", "A stack of encoder layers, then a norm.",
                                false)
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::TransformerEncoder> v,
             const nn::TransformerEncoderLayer& encoder_layer, int64_t num_layers,
             std::shared_ptr<nn::LayerNorm> norm, bool, bool) {
            construct<nn::TransformerEncoder>(v, encoder_layer, num_layers, std::move(norm));
          },
          "encoder_layer"_a, "num_layers"_a, "norm"_a.none() = nb::none(),
          "enable_nested_tensor"_a = true, "mask_check"_a = true,
          "num_layers copies of encoder_layer, then norm if given.", record_init())
      .def(
          "forward",
          [](nn::TransformerEncoder& e, const Tensor& src, std::optional<Tensor> mask,
             std::optional<Tensor> src_key_padding_mask, std::optional<bool> is_causal) {
            return e.forward(src, opt(mask), opt(src_key_padding_mask), is_causal.value_or(false));
          },
          "src"_a, "mask"_a = nb::none(), "src_key_padding_mask"_a = nb::none(),
          "is_causal"_a = nb::none(), release_gil(), "Every layer on src, then the norm.")
      .def_ro("num_layers", &nn::TransformerEncoder::num_layers, "Layers.");
  layer<nn::TransformerDecoder>(m, "TransformerDecoder", "A stack of decoder layers, then a norm.",
                                false)
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::TransformerDecoder> v,
             const nn::TransformerDecoderLayer& decoder_layer, int64_t num_layers,
             std::shared_ptr<nn::LayerNorm> norm) {
            construct<nn::TransformerDecoder>(v, decoder_layer, num_layers, std::move(norm));
          },
          "decoder_layer"_a, "num_layers"_a, "norm"_a.none() = nb::none(),
          "num_layers copies of decoder_layer, then norm if given.", record_init())
      .def(
          "forward",
          [](nn::TransformerDecoder& d, const Tensor& tgt, const Tensor& memory,
             std::optional<Tensor> tgt_mask, std::optional<Tensor> memory_mask,
             std::optional<Tensor> tgt_key_padding_mask,
             std::optional<Tensor> memory_key_padding_mask, std::optional<bool> tgt_is_causal,
             bool memory_is_causal) {
            return d.forward(tgt, memory, opt(tgt_mask), opt(memory_mask),
                             opt(tgt_key_padding_mask), opt(memory_key_padding_mask),
                             tgt_is_causal.value_or(false), memory_is_causal);
          },
          "tgt"_a, "memory"_a, "tgt_mask"_a = nb::none(), "memory_mask"_a = nb::none(),
          "tgt_key_padding_mask"_a = nb::none(), "memory_key_padding_mask"_a = nb::none(),
          "tgt_is_causal"_a = nb::none(), "memory_is_causal"_a = false, release_gil(),
          "Every layer on tgt attending to memory, then the norm.")
      .def_ro("num_layers", &nn::TransformerDecoder::num_layers, "Layers.");
  layer<nn::Transformer>(m, "Transformer", "An encoder stack and a decoder stack (PyTorch's).",
                         false)
      .def(
          "__init__",
          [](nb::pointer_and_handle<nn::Transformer> v, int64_t d_model, int64_t nhead,
             int64_t num_encoder_layers, int64_t num_decoder_layers, int64_t dim_feedforward,
             double dropout, nb::handle activation, nb::handle custom_encoder,
             nb::handle custom_decoder, double layer_norm_eps, bool batch_first, bool norm_first,
             bool bias, std::optional<Device> device, std::optional<DType> dtype) {
            EMBER_CHECK_NOT_IMPLEMENTED(custom_encoder.is_none() && custom_decoder.is_none(),
                                        "[nn.Transformer] custom_encoder and custom_decoder are "
                                        "not supported (build the stacks with "
                                        "nn.TransformerEncoder / nn.TransformerDecoder)");
            nn::TransformerOptions o;
            static_cast<nn::TransformerLayerOptions&>(o) =
                transformer_options(dim_feedforward, dropout, activation, layer_norm_eps,
                                    batch_first, norm_first, bias);
            o.num_encoder_layers = num_encoder_layers;
            o.num_decoder_layers = num_decoder_layers;
            construct<nn::Transformer>(v, d_model, nhead, o);
            place(*v.p, device, dtype);
          },
          "d_model"_a = 512, "nhead"_a = 8, "num_encoder_layers"_a = 6, "num_decoder_layers"_a = 6,
          "dim_feedforward"_a = 2048, "dropout"_a = 0.1, "activation"_a = "relu",
          "custom_encoder"_a = nb::none(), "custom_decoder"_a = nb::none(),
          "layer_norm_eps"_a = 1e-5, "batch_first"_a = false, "norm_first"_a = false,
          "bias"_a = true, "device"_a = nb::none(), "dtype"_a = nb::none(),
          "A model of width d_model with nhead heads.", record_init())
      .def(
          "forward",
          [](nn::Transformer& t, const Tensor& src, const Tensor& tgt,
             std::optional<Tensor> src_mask, std::optional<Tensor> tgt_mask,
             std::optional<Tensor> memory_mask, std::optional<Tensor> src_key_padding_mask,
             std::optional<Tensor> tgt_key_padding_mask,
             std::optional<Tensor> memory_key_padding_mask, std::optional<bool> src_is_causal,
             std::optional<bool> tgt_is_causal, bool memory_is_causal) {
            return t.forward(src, tgt, opt(src_mask), opt(tgt_mask), opt(memory_mask),
                             opt(src_key_padding_mask), opt(tgt_key_padding_mask),
                             opt(memory_key_padding_mask), src_is_causal.value_or(false),
                             tgt_is_causal.value_or(false), memory_is_causal);
          },
          "src"_a, "tgt"_a, "src_mask"_a = nb::none(), "tgt_mask"_a = nb::none(),
          "memory_mask"_a = nb::none(), "src_key_padding_mask"_a = nb::none(),
          "tgt_key_padding_mask"_a = nb::none(), "memory_key_padding_mask"_a = nb::none(),
          "src_is_causal"_a = nb::none(), "tgt_is_causal"_a = nb::none(),
          "memory_is_causal"_a = false, release_gil(),
          "The decoder on tgt attending to the encoder's output on src.")
      .def_static(
          "generate_square_subsequent_mask",
          [](int64_t sz, std::optional<Device> device, std::optional<DType> dtype) {
            TensorOptions o;
            if (dtype) o.dtype = *dtype;
            if (device) o.device = *device;
            return nn::Transformer::generate_square_subsequent_mask(sz, o);
          },
          "sz"_a, "device"_a = nb::none(), "dtype"_a = nb::none(),
          "The [sz, sz] float mask hiding later positions (-inf above the diagonal).")
      .def_ro("d_model", &nn::Transformer::d_model, "Model width.")
      .def_ro("nhead", &nn::Transformer::nhead, "Heads.")
      .def_ro("batch_first", &nn::Transformer::batch_first, "[N, L, E] layout.");
}

void bind_init(nb::module_& m) {
  nb::module_ init = m.def_submodule("init", "In-place initialisers with PyTorch's formulas.");
  auto fan_mode = [](std::string_view mode) {
    EMBER_CHECK(mode == "fan_in" || mode == "fan_out",
                "[nn.init] mode must be 'fan_in' or 'fan_out', got '{}'", mode);
    return mode == "fan_in" ? nn::init::FanMode::FanIn : nn::init::FanMode::FanOut;
  };
  init.def(
      "uniform_",
      [](Tensor& t, double a, double b, Generator* g) -> Tensor& {
        return nn::init::uniform_(t, a, b, g);
      },
      "tensor"_a, "a"_a = 0.0, "b"_a = 1.0, "generator"_a.none() = nb::none(), release_gil(),
      "Fills tensor from U(a, b).");
  init.def(
      "normal_",
      [](Tensor& t, double mean, double std, Generator* g) -> Tensor& {
        return nn::init::normal_(t, mean, std, g);
      },
      "tensor"_a, "mean"_a = 0.0, "std"_a = 1.0, "generator"_a.none() = nb::none(), release_gil(),
      "Fills tensor from N(mean, std^2).");
  init.def(
      "constant_", [](Tensor& t, double v) -> Tensor& { return nn::init::constant_(t, v); },
      "tensor"_a, "val"_a, release_gil(), "Fills tensor with val.");
  init.def(
      "zeros_", [](Tensor& t) -> Tensor& { return nn::init::zeros_(t); }, "tensor"_a, release_gil(),
      "Fills tensor with zeros.");
  init.def(
      "ones_", [](Tensor& t) -> Tensor& { return nn::init::ones_(t); }, "tensor"_a, release_gil(),
      "Fills tensor with ones.");
  init.def(
      "xavier_uniform_",
      [](Tensor& t, double gain, Generator* g) -> Tensor& {
        return nn::init::xavier_uniform_(t, gain, g);
      },
      "tensor"_a, "gain"_a = 1.0, "generator"_a.none() = nb::none(), release_gil(),
      "U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)).");
  init.def(
      "orthogonal_",
      [](Tensor& t, double gain, Generator* g) -> Tensor& {
        return nn::init::orthogonal_(t, gain, g);
      },
      "tensor"_a, "gain"_a = 1.0, "generator"_a.none() = nb::none(), release_gil(),
      "A (semi-)orthogonal matrix times gain, from the QR of a Gaussian one.");
  init.def(
      "xavier_normal_",
      [](Tensor& t, double gain, Generator* g) -> Tensor& {
        return nn::init::xavier_normal_(t, gain, g);
      },
      "tensor"_a, "gain"_a = 1.0, "generator"_a.none() = nb::none(), release_gil(),
      "N(0, s^2), s = gain * sqrt(2 / (fan_in + fan_out)).");
  init.def(
      "kaiming_uniform_",
      [fan_mode](Tensor& t, double a, std::string_view mode, std::string_view nonlinearity,
                 Generator* g) -> Tensor& {
        return nn::init::kaiming_uniform_(t, a, fan_mode(mode), nonlinearity, g);
      },
      "tensor"_a, "a"_a = 0.0, "mode"_a = "fan_in", "nonlinearity"_a = "leaky_relu",
      "generator"_a.none() = nb::none(), release_gil(), "U(-b, b), b = gain * sqrt(3 / fan).");
  init.def(
      "kaiming_normal_",
      [fan_mode](Tensor& t, double a, std::string_view mode, std::string_view nonlinearity,
                 Generator* g) -> Tensor& {
        return nn::init::kaiming_normal_(t, a, fan_mode(mode), nonlinearity, g);
      },
      "tensor"_a, "a"_a = 0.0, "mode"_a = "fan_in", "nonlinearity"_a = "leaky_relu",
      "generator"_a.none() = nb::none(), release_gil(), "N(0, s^2), s = gain / sqrt(fan).");
  init.def(
      "calculate_gain",
      [](std::string_view nonlinearity, std::optional<double> param) {
        return nn::init::calculate_gain(nonlinearity, param.value_or(0.01));
      },
      "nonlinearity"_a, "param"_a = nb::none(), "The recommended gain of a nonlinearity.");
  init.def("_calculate_fan_in_and_fan_out", &nn::init::calculate_fan_in_and_fan_out, "tensor"_a,
           "(fan_in, fan_out) of a weight.");
}

}  // namespace

nb::type_slots module_type_slots() {
  return nb::type_slots(g_module_slots);
}

void bind_nn(nb::module_& root) {
  nb::module_ m = root.def_submodule("nn", "Modules: layers, containers, losses.");
  bind_module_base(m);
  g_nb_method_type = Py_TYPE(nb::object(m.attr("Module").attr("__dict__")["train"]).ptr());
  bind_containers(m);
  bind_layers(m);
  bind_losses(m);
  bind_recurrent(m);
  bind_attention(m);
  bind_init(m);
  // torch.nn.utils' weight reparametrizations (Note [Weight reparametrizations as pre-hooks]):
  // each returns the module object it was given.
  m.def(
      "weight_norm",
      [](nb::handle module, const std::string& name, std::optional<int64_t> dim) {
        nn::weight_norm(module_of(module, "weight_norm"), name, dim);
        return nb::borrow(module);
      },
      "module"_a, "name"_a = "weight", "dim"_a = 0,
      "Replaces parameter `name` by name_g and name_v, recomputing g * v / ||v|| before every "
      "forward (dim=None: one norm over the whole tensor).");
  m.def(
      "remove_weight_norm",
      [](nb::handle module, const std::string& name) {
        nn::remove_weight_norm(module_of(module, "remove_weight_norm"), name);
        return nb::borrow(module);
      },
      "module"_a, "name"_a = "weight", "Makes `name` a parameter again, undoing weight_norm.");
  m.def(
      "spectral_norm",
      [](nb::handle module, const std::string& name, int64_t n_power_iterations, double eps,
         std::optional<int64_t> dim) {
        nn::spectral_norm(module_of(module, "spectral_norm"), name, n_power_iterations, eps, dim);
        return nb::borrow(module);
      },
      "module"_a, "name"_a = "weight", "n_power_iterations"_a = 1, "eps"_a = 1e-12,
      "dim"_a = nb::none(),
      "Replaces parameter `name` by name_orig / sigma (sigma by power iteration in training), "
      "with buffers name_u and name_v.");
  m.def(
      "remove_spectral_norm",
      [](nb::handle module, const std::string& name) {
        nn::remove_spectral_norm(module_of(module, "remove_spectral_norm"), name);
        return nb::borrow(module);
      },
      "module"_a, "name"_a = "weight", "Makes `name` a parameter again, undoing spectral_norm.");
  m.def("_rebuild_module", &rebuild_module, "cls"_a, "init_args"_a,
        "Rebuilds a copied or unpickled module (Note [Copying and pickling modules]).");
  m.def(
      "checkpoint_sequential",
      [](const nn::Sequential& functions, int64_t segments, const Tensor& input,
         std::optional<bool>, bool preserve_rng_state) {
        return nn::checkpoint_sequential(functions, segments, input, preserve_rng_state);
      },
      "functions"_a, "segments"_a, "input"_a, "use_reentrant"_a = nb::none(),
      "preserve_rng_state"_a = true, release_gil(),
      "Runs a Sequential in segments, each checkpointed (only the boundaries are kept).");
  // The GIL stays held: the example's forward may be a Python module's.
  m.def(
      "fuse_for_inference",
      [](nn::Module& model, const Tensor& example) {
        nn::FuseReport report = nn::fuse_for_inference(model, example);
        report.folded.insert(report.folded.end(), report.relus.begin(), report.relus.end());
        report.folded.insert(report.folded.end(), report.activations.begin(),
                             report.activations.end());
        report.folded.insert(report.folded.end(), report.residuals.begin(), report.residuals.end());
        return report.folded;
      },
      "model"_a, "example"_a,
      "Folds each BatchNorm into the Conv2d or Linear before it, each ReLU module into the Conv2d "
      "before it and each ReLU or GELU module (and each Transformer layer's feed-forward "
      "activation) into the Linear before it (found by running the model on `example`), and ends "
      "each ResNet block whose batch norm was folded in one convolution with the residual sum "
      "and the ReLU; returns the (layer, batch norm) name pairs, then the (convolution, ReLU) "
      "ones, the (linear, activation) ones and the (convolution, block) ones. The model is left "
      "in eval mode, for inference.");
}

}  // namespace ember::python
