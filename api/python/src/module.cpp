// ember._C: the extension module. Its parts are registered in dependency order; the pure-Python
// package (api/python/ember) re-exports them under PyTorch's names.
#include "bind.h"

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
// The message is Ember's unchanged: `[op] what is wrong: observed values (hint)`.
struct ErrorTypes {
  PyObject* base = nullptr;
  PyObject* by_kind[16] = {};
  PyObject* file_not_found = nullptr;
};
ErrorTypes g_errors;

PyObject* new_error(nb::module_& m, const char* name, std::vector<PyObject*> bases,
                    const char* doc) {
  nb::tuple b = nb::steal<nb::tuple>(PyTuple_New(static_cast<Py_ssize_t>(bases.size())));
  for (size_t i = 0; i < bases.size(); ++i) {
    Py_INCREF(bases[i]);
    PyTuple_SET_ITEM(b.ptr(), static_cast<Py_ssize_t>(i), bases[i]);
  }
  const std::string qualified = std::string("ember.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, b.ptr(), nullptr);
  if (!type) throw nb::python_error();
  m.attr(name) = nb::handle(type);
  return type;
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
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
  PyObject* base = new_error(m, "Error", {PyExc_RuntimeError},
                             "Base of every error Ember raises (a RuntimeError).");
  g_errors.base = base;
  auto kind = [&](ErrorKind k, const char* name, std::vector<PyObject*> extra, const char* doc) {
    extra.insert(extra.begin(), base);
    g_errors.by_kind[static_cast<int>(k)] = new_error(m, name, extra, doc);
  };
  kind(ErrorKind::Value, "ValueError", {PyExc_ValueError},
       "A shape, size or argument value out of its domain.");
  kind(ErrorKind::Type, "TypeError", {PyExc_TypeError}, "A dtype or device that does not fit.");
  kind(ErrorKind::Index, "IndexError", {PyExc_IndexError}, "A dim or index out of range.");
  kind(ErrorKind::NotImplemented, "NotImplementedError", {PyExc_NotImplementedError},
       "No kernel for this op, dtype and device, or an unsupported combination.");
  kind(ErrorKind::OutOfMemory, "OutOfMemoryError", {}, "An allocation failed.");
  kind(ErrorKind::Device, "DeviceError", {}, "The device or its vendor library failed.");
  kind(ErrorKind::Io, "IoError", {PyExc_OSError},
       "A file could not be read or written, or its format is malformed.");
  kind(ErrorKind::Plugin, "PluginError", {}, "Plugin loading failed or the plugin API was misused.");
  kind(ErrorKind::Internal, "InternalError", {}, "An Ember bug (please report it).");
  kind(ErrorKind::Distributed, "DistributedError", {},
       "A collective or the rendezvous failed: a peer died or did not answer in time.");
  g_errors.file_not_found =
      new_error(m, "FileNotFoundError",
                {g_errors.by_kind[static_cast<int>(ErrorKind::Io)], PyExc_FileNotFoundError},
                "A file Ember was asked to read does not exist.");
  nb::register_exception_translator(translate);
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
  m.doc() = "Ember's native core: tensors, ops, autograd, nn, optim, data, io, amp, profiler, "
            "distributed and models, bound with nanobind.";
  // Note [No leak report at exit]: nanobind reports C++ objects still alive when the interpreter
  // has finished. Python does not free every object at exit (module dicts that outlive the final
  // collection, objects a C++ container keeps through a shared_ptr), so models and tensors a
  // script leaves in globals would be reported on every run. Leaks are tested instead while the
  // interpreter runs (tests/python/test_memory.py).
  nb::set_leak_warnings(false);
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
}
