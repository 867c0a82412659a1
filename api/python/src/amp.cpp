// ember._C.amp: autocast scopes and GradScaler (<ember/amp.h>), the native half of ember.amp,
// which gives them torch.amp's surface (api/python/ember/amp/__init__.py).
#include <cstdint>
#include <memory>
#include <thread>

#include "bind.h"

namespace ember::python {
namespace {

// Note [Autocast from Python]
// amp::autocast is an RAII guard of this thread's autocast state. A `with ember.autocast():`
// block holds one AutocastScope: __enter__ makes it (entering autocast) and __exit__ calls
// exit() (restoring what was there), on the same thread, as a with block never changes threads.
// A scope dropped without exit() (a generator abandoned inside the block, collected later,
// maybe on another thread) cannot restore another thread's state: it restores on its own
// thread and otherwise leaves that state as it is, as the unfinished block left it.
/** One entered autocast scope, left by exit() on the thread that entered it. */
class AutocastScope {
 public:
  AutocastScope(std::string_view device_type, std::optional<DType> dtype, bool enabled)
      : guard_(std::make_unique<amp::autocast>(device_type, dtype, enabled)),
        thread_(std::this_thread::get_id()) {}
  ~AutocastScope() {
    if (guard_ && std::this_thread::get_id() != thread_) (void)guard_.release();
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

  /** Restores the state the scope replaced. */
  void exit() {
    EMBER_CHECK(guard_ != nullptr, "[autocast] the scope was already left");
    EMBER_CHECK(std::this_thread::get_id() == thread_,
                "[autocast] a scope must be left on the thread that entered it");
    guard_.reset();
  }

 private:
  std::unique_ptr<amp::autocast> guard_;
  std::thread::id thread_;
};

/** The key of a Python optimizer in GradScaler's once-per-step check: its id(). */
const void* owner_key(uintptr_t id) {
  return reinterpret_cast<const void*>(id);  // NOLINT(performance-no-int-to-ptr)
}

/** Runs GradScaler::step with the GIL released; `fn` (the optimizer's Python step) runs with it
 *  held. Returns what `fn` returned, or None if the step was skipped. */
nb::object scaled_step(amp::GradScaler& s, const void* owner, const std::vector<Tensor>& params,
                       const nb::callable& fn) {
  nb::object result = nb::none();
  {
    GilRelease release;
    s.step(owner, params, [&] {
      GilAcquire gil;
      result = fn();
    });
  }
  return result;
}

std::vector<Tensor> params_of(const optim::Optimizer& o) {
  std::vector<Tensor> params;
  for (const auto& g : o.param_groups())
    params.insert(params.end(), g.params.begin(), g.params.end());
  return params;
}

}  // namespace

void bind_amp(nb::module_& m) {
  nb::module_ sub = m.def_submodule("amp", "Autocast scopes and GradScaler, from C++.");
  sub.def("is_autocast_enabled", &amp::is_autocast_enabled, "device_type"_a = "cpu",
          "Whether autocast is on for `device_type` on this thread.");
  sub.def("get_autocast_dtype", &amp::get_autocast_dtype, "device_type"_a = "cpu",
          "The lower-precision dtype autocast uses for `device_type` on this thread.");

  nb::class_<AutocastScope>(sub, "AutocastScope",
                            "An entered autocast scope (Note [Autocast from Python]).")
      .def(nb::init<std::string_view, std::optional<DType>, bool>(), "device_type"_a,
           "dtype"_a.none(), "enabled"_a,
           "Enters autocast (or, with enabled=False, leaves it) for `device_type`.")
      .def("exit", &AutocastScope::exit, "Restores the state the scope replaced.");

  nb::class_<amp::GradScaler>(sub, "GradScaler",
                              "Loss scaling for float16 training (Note [Loss scaling]).")
      .def(
          "__init__",
          [](amp::GradScaler* self, double init_scale, double growth_factor, double backoff_factor,
             int64_t growth_interval, bool enabled) {
            new (self) amp::GradScaler({.init_scale = init_scale,
                                        .growth_factor = growth_factor,
                                        .backoff_factor = backoff_factor,
                                        .growth_interval = growth_interval,
                                        .enabled = enabled});
          },
          "init_scale"_a = 65536.0, "growth_factor"_a = 2.0, "backoff_factor"_a = 0.5,
          "growth_interval"_a = 2000, "enabled"_a = true, "A scaler with these settings (checked).")
      .def("scale", &amp::GradScaler::scale, "outputs"_a,
           "outputs * scale (outputs as they are when disabled).")
      .def(
          "unscale_", [](amp::GradScaler& s, optim::Optimizer& o) { s.unscale_(o); }, "optimizer"_a,
          release_gil(), "Divides the optimizer's gradients by the scale, once per step.")
      .def(
          "unscale_",
          [](amp::GradScaler& s, uintptr_t owner, const std::vector<Tensor>& params) {
            s.unscale_(owner_key(owner), params);
          },
          "owner"_a, "params"_a, release_gil(),
          "unscale_ for the parameters of the Python optimizer whose id() is `owner`.")
      .def(
          "step",
          [](amp::GradScaler& s, optim::Optimizer& o, const nb::callable& step) {
            return scaled_step(s, &o, params_of(o), step);
          },
          "optimizer"_a, "step"_a,
          "Unscales if not done yet, then calls step() unless a gradient was inf or NaN; returns "
          "its result, or None when skipped.")
      .def(
          "step",
          [](amp::GradScaler& s, uintptr_t owner, const std::vector<Tensor>& params,
             const nb::callable& step) { return scaled_step(s, owner_key(owner), params, step); },
          "owner"_a, "params"_a, "step"_a,
          "step for the Python optimizer whose id() is `owner` and whose parameters are `params`.")
      .def(
          "update",
          [](amp::GradScaler& s, std::optional<double> new_scale) {
            if (new_scale) {
              s.update(*new_scale);
            } else {
              s.update();
            }
          },
          "new_scale"_a = nb::none(),
          "Adapts the scale (or sets it to new_scale) and starts a new step.")
      .def("get_scale", &amp::GradScaler::get_scale, "The current scale.")
      .def_prop_ro("last_step_skipped", &amp::GradScaler::last_step_skipped,
                   "Whether the last step() was skipped.")
      .def_prop_ro(
          "enabled", [](const amp::GradScaler& s) { return s.options().enabled; },
          "Whether the scaler scales (off: every call passes through).")
      .def_prop_ro(
          "growth_factor", [](const amp::GradScaler& s) { return s.options().growth_factor; },
          "The scale's factor after growth_interval clean steps.")
      .def_prop_ro(
          "backoff_factor", [](const amp::GradScaler& s) { return s.options().backoff_factor; },
          "The scale's factor after a step with inf or NaN.")
      .def_prop_ro(
          "growth_interval", [](const amp::GradScaler& s) { return s.options().growth_interval; },
          "Clean steps before the scale grows.")
      .def("state_dict", &amp::GradScaler::state_dict, "'scale' and 'growth_tracker'.")
      .def("load_state_dict", &amp::GradScaler::load_state_dict, "state_dict"_a,
           "Restores a state_dict().");
}

}  // namespace ember::python
