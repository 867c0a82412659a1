// ember._C.CompiledFunction: ember::CompiledFunction over a Python function (ember/_compile.py
// wraps it as ember.compile).
#include <ember/nn/module.h>
#include <ember/ops/compile.h>

#include "bind.h"

namespace ember::python {

// Note [A compiled function holds its Python function weakly]
// The C++ object calls back into Python to capture; holding the Python function (a bound method
// of the wrapper that owns this object) strongly would make a cycle the garbage collector cannot
// see through C++. It holds a weakref.WeakMethod instead: the wrapper owns the C++ object, the C++
// object only finds the wrapper's method while the wrapper lives.
void bind_compile(nb::module_& m) {
  m.def("_module_structure_version", &nn::structure_version,
        "A count bumped whenever any module's parameter, buffer or submodule is set or removed.");
  nb::class_<CompiledFunction>(m, "CompiledFunction",
                               "A function of tensors captured per input signature and replayed "
                               "(ember::CompiledFunction; ember.compile wraps it).")
      .def(
          "__init__",
          [](CompiledFunction* self, nb::object weak_fn, std::vector<PyTensor> watched) {
            std::vector<Tensor> w(watched.begin(), watched.end());
            auto holder = std::make_shared<PyRef>(weak_fn);
            TensorFn fn = [holder](const std::vector<Tensor>& inputs) {
              GilAcquire gil;
              nb::object method = nb::borrow<nb::object>(holder->get())();
              EMBER_CHECK(!method.is_none(),
                          "[compile] the compiled function's owner no longer exists");
              nb::list args;
              for (const Tensor& t : inputs) args.append(wrap_tensor(t));
              nb::object out = method(*args);
              std::vector<Tensor> result;
              for (nb::handle h : out) result.push_back(nb::cast<const PyTensor&>(h));
              return result;
            };
            new (self) CompiledFunction(std::move(fn), std::move(w));
          },
          "fn"_a, "watched"_a,
          "`fn()` returns the function (a weakref.WeakMethod), which takes tensors and returns a "
          "list of tensors; replacing a `watched` tensor's storage makes the next call capture "
          "again.")
      .def(
          "__call__",
          [](CompiledFunction& f, std::vector<PyTensor> inputs) {
            std::vector<Tensor> in(inputs.begin(), inputs.end());
            std::vector<Tensor> out;
            {
              GilRelease release;
              out = f(in);
            }
            nb::list result;
            for (const Tensor& t : out) result.append(wrap_tensor(t));
            return result;
          },
          "inputs"_a, "The function's results (a list) for `inputs`: a replay where one holds.")
      .def(
          "report",
          [](const CompiledFunction& f) {
            const CompileReport r = f.report();
            nb::dict d;
            d["captures"] = r.captures;
            d["replays"] = r.replays;
            d["eager_calls"] = r.eager_calls;
            d["steps"] = r.steps;
            d["guards"] = r.guards;
            d["planned_bytes"] = r.planned_bytes;
            d["intermediate_bytes"] = r.intermediate_bytes;
            d["eager_reason"] = r.eager_reason;
            return d;
          },
          "What it has done: captures, replays, eager calls and why, the newest capture's kernel "
          "calls, guards and memory.");
}

}  // namespace ember::python
