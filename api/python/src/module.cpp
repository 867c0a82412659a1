// ember._C: the extension module. Its parts are registered in dependency order; the pure-Python
// package (api/python/ember) re-exports them under PyTorch's names.
#include <atomic>
#include <chrono>
#include <thread>

#include "bind.h"
#include "ember/dispatch/exit.h"
#include "ember/util/exit_gate.h"

namespace ember::python {
namespace {

// Note [Errors in Python]
// An ember::Error reaches Python as an exception whose class says its kind both ways a PyTorch
// user might catch it: every class derives from ember.Error, itself a RuntimeError (what PyTorch
// raises for most failures), and each kind also derives from the builtin a Python programmer
// expects, so `except ValueError` and `except RuntimeError` both catch a shape mismatch:
//   Value -> ember.ValueError(ValueError)         Type -> ember.TypeError(TypeError)
//   Index -> ember.IndexError(IndexError)         NotImplemented -> ember.NotImplementedError
//   OutOfMemory -> ember.OutOfMemoryError         Device -> ember.DeviceError
//   Io -> ember.IoError(OSError), and ember.FileNotFoundError(IoError, FileNotFoundError) when
//         the file is missing                     Plugin -> ember.PluginError
//   Distributed -> ember.DistributedError         Internal -> ember.InternalError
//   Key -> ember.KeyError(KeyError)
// and an ember::ZeroDivisionError (a Value error) -> ember.ZeroDivisionError(ember.ValueError,
// ZeroDivisionError), so `except ZeroDivisionError` catches x // 0 on integers as in Python; an
// ember::LinAlgError (a Value error) -> ember.linalg.LinAlgError(ember.ValueError), which is
// torch.linalg.LinAlgError's RuntimeError and numpy.linalg.LinAlgError's ValueError at once.
// The message is Ember's unchanged: `[op] what is wrong: observed values (hint)`. The classes
// live in ember/_errors.py.
struct ErrorTypes {
  PyObject* by_kind[16] = {};
  PyObject* file_not_found = nullptr;
  PyObject* zero_division = nullptr;
  PyObject* linalg = nullptr;
};
ErrorTypes g_errors;

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const ZeroDivisionError& e) {
    PyErr_SetString(g_errors.zero_division ? g_errors.zero_division : PyExc_RuntimeError, e.what());
  } catch (const LinAlgError& e) {
    PyErr_SetString(g_errors.linalg ? g_errors.linalg : PyExc_RuntimeError, e.what());
  } catch (const std::bad_cast&) {
    // nanobind's nb::cast of a Python object to a C++ type failed inside a binding: the object
    // had a type the call cannot take. Calls that know what they expected say it themselves.
    PyErr_SetString(PyExc_TypeError,
                    "[ember] an argument, or a value a Python callback returned, has a type this "
                    "call cannot take (see the function's signature)");
  } catch (const Error& e) {
    PyObject* type = g_errors.by_kind[static_cast<int>(e.kind())];
    const std::string_view what = e.what();
    if (e.kind() == ErrorKind::Io && what.find("No such file or directory") != std::string::npos) {
      type = g_errors.file_not_found;
    }
    PyErr_SetString(type ? type : PyExc_RuntimeError, e.what());
  }
}

}  // namespace

void bind_errors(nb::module_& m) {
  // The classes are Python's (ember/_errors.py, so that type checkers see them); importing that
  // module while ember/__init__.py imports _C is fine: it imports nothing of Ember.
  nb::module_ errors = nb::module_::import_("ember._errors");
  auto kind = [&](ErrorKind k, const char* name) {
    nb::object cls = errors.attr(name);
    g_errors.by_kind[static_cast<int>(k)] = cls.release().ptr();  // kept for the process's life
  };
  kind(ErrorKind::Value, "ValueError");
  kind(ErrorKind::Type, "TypeError");
  kind(ErrorKind::Index, "IndexError");
  kind(ErrorKind::NotImplemented, "NotImplementedError");
  kind(ErrorKind::OutOfMemory, "OutOfMemoryError");
  kind(ErrorKind::Device, "DeviceError");
  kind(ErrorKind::Io, "IoError");
  kind(ErrorKind::Plugin, "PluginError");
  kind(ErrorKind::Internal, "InternalError");
  kind(ErrorKind::Distributed, "DistributedError");
  kind(ErrorKind::Key, "KeyError");
  g_errors.file_not_found = nb::object(errors.attr("FileNotFoundError")).release().ptr();
  g_errors.zero_division = nb::object(errors.attr("ZeroDivisionError")).release().ptr();
  g_errors.linalg = nb::object(errors.attr("LinAlgError")).release().ptr();
  for (nb::handle name : errors.attr("__all__")) m.attr(name) = errors.attr(name);
  nb::register_exception_translator(translate);
}

namespace {

// Note [Threads at interpreter exit] in bind.h.
ExitGate& gil_gate() {
  static ExitGate* gate = new ExitGate();  // never destroyed: threads pass it while Python exits
  return *gate;
}

/** The atexit handler: closes the gate, then lets the threads already past it take the GIL;
 *  closes the kernels' gate too, before any C++ static destructor (Note [Kernels at exit]). */
void close_gil_gate() {
  gil_gate().close();
  GilRelease release;  // this thread passes its own gate
  close_kernels_for_exit();
  gil_gate().wait_empty(std::chrono::seconds(5));
}

/** Before a thread parks for good: a thread that holds the GIL (a kernel called without
 *  releasing it) lets go of it, so the exiting thread is never left waiting for it. */
void release_gil_to_park() noexcept {
  if (Py_IsInitialized() && nb::is_alive() && PyGILState_Check()) (void)PyEval_SaveThread();
}

/** After fork: the child has only the forking thread, and its own exit ahead. */
void reset_gil_gate() {
  gil_gate().reset();
}

}  // namespace

void gil_enter() noexcept {
  gil_gate().enter();
}

void gil_entered() noexcept {
  gil_gate().leave();
}

bool gil_available() noexcept {
  return nb::is_alive() && !gil_gate().parks_here();
}

void warn(PyObject* category, const char* message, int stack_level) {
  if (PyErr_WarnEx(category, message, stack_level) != 0) throw nb::python_error();
}

Reduction parse_reduction(std::string_view reduction, const char* op) {
  if (reduction == "mean") return Reduction::Mean;
  if (reduction == "sum") return Reduction::Sum;
  if (reduction == "none") return Reduction::None;
  if (reduction == "batchmean") return Reduction::BatchMean;
  throw ValueError(fmt::format(
      "[{}] reduction '{}' is not one of 'mean', 'sum', 'none' (or 'batchmean' for kl_div)", op,
      reduction));
}

}  // namespace ember::python

NB_MODULE(_C, m) {
  using namespace ember::python;
  m.doc() =
      "Ember's native core: tensors, ops, autograd, nn, optim, data, io, amp, profiler, "
      "distributed and models, bound with nanobind.";
  // Note [No leak report at exit]: nanobind reports C++ objects still alive when the interpreter
  // has finished. Python does not free every object at exit (module dicts that outlive the final
  // collection, objects a C++ container keeps through a shared_ptr), so models and tensors a
  // script leaves in globals would be reported on every run. Leaks are tested instead while the
  // interpreter runs (tests/python/test_memory.py).
  nb::set_leak_warnings(false);
  nb::module_::import_("atexit").attr("register")(nb::cpp_function(&close_gil_gate));
  ember::set_park_hook(&release_gil_to_park);
  nb::module_::import_("os").attr("register_at_fork")("after_in_child"_a =
                                                          nb::cpp_function(&reset_gil_gate));
  bind_errors(m);
  bind_runtime(m);
  bind_tensor(m);
  bind_autograd(m);
  bind_nn(m);
  bind_optim(m);
  bind_data(m);
  bind_io(m);
  bind_amp(m);
  bind_profiler(m);
  bind_distributed(m);
  bind_models(m);
  bind_onnx(m);
  bind_compile(m);
  // `from ember._C import *` (ember/__init__.py) takes the functions, classes and constants, not
  // the submodules, which the Python packages of the same names wrap.
  nb::list names;
  for (auto [key, value] : nb::borrow<nb::dict>(m.attr("__dict__"))) {
    const std::string name = nb::cast<std::string>(key);
    if (!name.empty() && name[0] != '_' && !PyModule_Check(value.ptr())) names.append(key);
  }
  m.attr("__all__") = names;
}
