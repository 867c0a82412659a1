// ember._C.autograd: grad modes, backward and grad, gradcheck, checkpointing, and the native side
// of custom Functions written in Python (ember.autograd.Function, ember/autograd/function.py).
#include "bind.h"

namespace ember::python {
namespace {

/** Tensors from a Python callable's result: a tensor, or a tuple or list of them. */
std::vector<Tensor> tensors_of(nb::handle r, const char* what) {
  if (nb::isinstance<PyTensor>(r)) return {*nb::inst_ptr<PyTensor>(r)};
  EMBER_CHECK_TYPE(nb::isinstance<nb::tuple>(r) || nb::isinstance<nb::list>(r),
                   "[{}] expected a tensor or a tuple of tensors, got {}", what,
                   nb::cast<std::string>(nb::str(r.type().attr("__name__"))));
  std::vector<Tensor> out;
  for (nb::handle h : nb::borrow<nb::sequence>(r)) {
    if (h.is_none()) {
      out.emplace_back();
      continue;
    }
    EMBER_CHECK_TYPE(nb::isinstance<PyTensor>(h), "[{}] expected tensors, got {}", what,
                     nb::cast<std::string>(nb::str(h.type().attr("__name__"))));
    out.push_back(*nb::inst_ptr<PyTensor>(h));
  }
  return out;
}

/** gradcheck's function: the Python callable on the inputs, its outputs flattened into one
 *  tensor so every output's Jacobian is checked. */
autograd::TensorFn python_tensor_fn(nb::handle fn) {
  auto f = std::make_shared<PyRef>(fn);
  return [f](const std::vector<Tensor>& inputs) -> Tensor {
    GilAcquire gil;
    nb::list args;
    for (const Tensor& t : inputs) args.append(wrap_tensor(t));
    nb::object r = nb::borrow(f->get())(*nb::tuple(args));
    std::vector<Tensor> outs = tensors_of(r, "gradcheck");
    if (outs.size() == 1) return outs[0];
    std::vector<Tensor> flat;
    for (const Tensor& t : outs) {
      if (t.defined() && is_floating(t.dtype())) flat.push_back(t.reshape({-1}));
    }
    return cat(flat, 0);
  };
}

/** The inference-mode scope behind ember.inference_mode (entered and left on one thread). */
struct InferenceScope {
  std::unique_ptr<autograd::InferenceMode> guard;
  void enter() { guard = std::make_unique<autograd::InferenceMode>(); }
  void exit() { guard.reset(); }
};

}  // namespace

std::vector<Tensor> PyBackward::operator()(const std::vector<Tensor>& grads,
                                           const autograd::LambdaNode&) const {
  GilAcquire gil;
  // Cleared only when the collector found the graph unreachable, so no backward can reach it.
  EMBER_ASSERT(fn->get().is_valid());
  nb::list args;
  for (const Tensor& g : grads) args.append(wrap_tensor(g));
  nb::object r = nb::borrow(fn->get())(*nb::tuple(args));
  std::vector<Tensor> out = tensors_of(r, "autograd.Function");
  EMBER_CHECK(out.size() == inputs,
              "[{}] backward returned {} gradients for {} tensor inputs (return one per input of "
              "forward, None where there is none)",
              name, out.size(), inputs);
  return out;
}

void bind_autograd(nb::module_& root) {
  nb::module_ m = root.def_submodule("autograd", "The autograd engine's controls.");
  m.def("is_grad_enabled", &autograd::is_grad_enabled,
        "True if ops record history on this thread.");
  m.def("set_grad_enabled", &autograd::set_grad_enabled, "enabled"_a,
        "Turns recording on or off for this thread.");
  m.def("is_inference_mode", &autograd::is_inference_mode,
        "True inside an inference_mode scope on this thread.");
  m.def("is_anomaly_enabled", &autograd::is_anomaly_enabled, "True if anomaly detection is on.");
  m.def("set_anomaly_enabled", &autograd::set_anomaly_enabled, "enabled"_a,
        "Turns anomaly detection on or off (process-wide).");
  nb::class_<InferenceScope>(m, "_InferenceScope", "The native inference-mode guard.")
      .def(nb::init<>())
      .def("enter", &InferenceScope::enter, "Enters inference mode on this thread.")
      .def("exit", &InferenceScope::exit, "Leaves it, restoring the previous modes.");

  m.def(
      "backward",
      [](std::vector<Tensor> tensors, std::vector<std::optional<Tensor>> grad_tensors,
         std::optional<bool> retain_graph, bool create_graph) {
        std::vector<Tensor> grads;
        for (auto& g : grad_tensors) grads.push_back(g.value_or(Tensor()));
        bool all_undefined = true;
        for (const Tensor& g : grads) all_undefined = all_undefined && !g.defined();
        if (all_undefined) grads.clear();
        GilRelease release;
        autograd::backward(tensors, grads, retain_graph.value_or(create_graph), create_graph);
      },
      "tensors"_a, "grad_tensors"_a, "retain_graph"_a = nb::none(), "create_graph"_a = false,
      "Accumulates d(sum of tensors * grad_tensors)/d(leaf) into every reachable leaf's .grad.");
  m.def(
      "grad",
      [](std::vector<Tensor> outputs, std::vector<Tensor> inputs,
         std::vector<std::optional<Tensor>> grad_outputs, std::optional<bool> retain_graph,
         bool create_graph, bool allow_unused) {
        std::vector<Tensor> gos;
        bool all_undefined = true;
        for (auto& g : grad_outputs) {
          gos.push_back(g.value_or(Tensor()));
          all_undefined = all_undefined && !g.has_value();
        }
        if (all_undefined) gos.clear();
        GilRelease release;
        return autograd::grad(outputs, inputs, gos, retain_graph, create_graph, allow_unused);
      },
      "outputs"_a, "inputs"_a, "grad_outputs"_a, "retain_graph"_a = nb::none(),
      "create_graph"_a = false, "allow_unused"_a = false,
      "Gradients of outputs w.r.t. inputs (None for an unused input with allow_unused).");

  // gradcheck and gradgradcheck take the same arguments and answer (ok, message).
  auto check = [&](const char* name, auto run, const char* doc) {
    m.def(
        name,
        [run](nb::handle fn, std::vector<Tensor> inputs, double eps, double atol, double rtol) {
          autograd::GradcheckOptions o;
          o.eps = eps;
          o.atol = atol;
          o.rtol = rtol;
          const autograd::TensorFn f = python_tensor_fn(fn);
          GilRelease release;
          const autograd::GradcheckResult r = run(f, inputs, o);
          return std::make_pair(r.ok, r.message);
        },
        "fn"_a, "inputs"_a, "eps"_a = 1e-6, "atol"_a = 1e-5, "rtol"_a = 1e-3, doc);
  };
  check("gradcheck", &autograd::gradcheck,
        "(ok, message): fn's analytical Jacobian against central differences (float64 inputs).");
  check("gradgradcheck", &autograd::gradgradcheck,
        "(ok, message): second derivatives of fn checked the same way.");

  m.def(
      "checkpoint",
      [](nb::handle fn, std::vector<Tensor> inputs, bool preserve_rng_state) {
        auto f = std::make_shared<PyRef>(fn);
        autograd::CheckpointFn block = [f](const std::vector<Tensor>& in) {
          GilAcquire gil;
          nb::list args;
          for (const Tensor& t : in) args.append(wrap_tensor(t));
          return tensors_of(nb::borrow(f->get())(*nb::tuple(args)), "checkpoint");
        };
        GilRelease release;
        return autograd::checkpoint(block, inputs, preserve_rng_state);
      },
      "fn"_a, "inputs"_a, "preserve_rng_state"_a = true,
      "Runs fn(*inputs) keeping no intermediate tensors; backward runs it again.");

  // Custom Functions: the Python class drives, the native side records the node.
  nb::class_<autograd::AutogradContext>(m, "_FunctionCtx",
                                        "The native state of a custom Function's ctx.")
      .def(nb::init<>())
      .def("save_for_backward", &autograd::AutogradContext::save_for_backward, "tensors"_a,
           "Saves tensors for backward (version-checked when read).")
      .def("saved_tensors", &autograd::AutogradContext::get_saved_variables,
           "The saved tensors; raises if one was modified in place since.")
      .def("mark_non_differentiable", &autograd::AutogradContext::mark_non_differentiable,
           "outputs"_a, "Outputs that get no gradient.")
      .def("is_non_differentiable", &autograd::AutogradContext::is_non_differentiable, "t"_a,
           "True if t was marked non-differentiable.");
  m.def(
      "_record_function",
      [](std::string name, std::vector<Tensor> inputs, std::vector<Tensor> outputs,
         std::shared_ptr<autograd::AutogradContext> ctx, nb::handle backward) {
        std::vector<Tensor*> all;
        for (Tensor& t : outputs) all.push_back(&t);
        autograd::alias_returned_inputs(inputs, all);
        bool any = false;
        if (autograd::is_grad_enabled()) {
          for (const Tensor& t : inputs) any = any || (t.defined() && t.requires_grad());
        }
        if (!any) {
          ctx->finalize({}, nullptr);
          return outputs;
        }
        std::vector<Tensor*> differentiable;
        for (Tensor& t : outputs) {
          if (t.defined() && is_floating(t.dtype()) && !ctx->is_non_differentiable(t)) {
            differentiable.push_back(&t);
          }
        }
        auto node =
            autograd::record(name, "custom Function", inputs, differentiable,
                             PyBackward{std::make_shared<PyRef>(backward), inputs.size(), name});
        ctx->finalize(outputs, node.get());
        return outputs;
      },
      "name"_a, "inputs"_a, "outputs"_a, "ctx"_a, "backward"_a,
      "Records a custom Function's node for outputs made from inputs; returns the outputs "
      "(aliases of inputs replaced by new views).");
}

}  // namespace ember::python
