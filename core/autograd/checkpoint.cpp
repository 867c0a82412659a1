#include "ember/autograd/checkpoint.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "core/autograd/op_math.h"
#include "core/util/log.h"
#include "ember/autograd/engine.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"

namespace ember::autograd {
namespace {

// The default generators a block may draw from: the CPU's and those of its inputs' devices.
std::vector<Device> generator_devices(const std::vector<Tensor>& inputs) {
  std::vector<Device> out = {Device::cpu()};
  for (const Tensor& t : inputs) {
    if (t.defined() && std::find(out.begin(), out.end(), t.device()) == out.end()) {
      out.push_back(t.device());
    }
  }
  return out;
}

}  // namespace

// Note [Activation checkpointing]
// Forward runs the block below autograd, so none of its intermediate tensors is kept; one node,
// CheckpointBackward, becomes the grad_fn of its floating outputs, with edges to the inputs, and
// keeps only the inputs (version-checked: changing one in place before backward is an error),
// the block and, with preserve_rng_state, the states of the CPU's generator and of the inputs'
// devices' generators. Its backward sets those states, runs the block again with grad mode on
// from detached copies of the inputs that require grad on the same storage, puts the
// generators back as they were, and runs backward from the recomputed outputs with the incoming
// gradients: parameters the block uses accumulate their gradients as in the uncheckpointed run,
// and the copies' gradients go to the inputs. This is PyTorch's reentrant checkpoint, with its
// limits: it is for backward() (autograd::grad through a block also accumulates into the
// .grad of the block's parameters, which grad() itself never does), and higher derivatives
// through the block are refused (they would reach the copies, not the inputs). A block none of
// whose inputs requires grad would give its outputs no grad_fn, and its parameters no
// gradient; it runs uncheckpointed instead, with a warning once.
std::vector<Tensor> checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs,
                               bool preserve_rng_state) {
  EMBER_CHECK(static_cast<bool>(fn), "[checkpoint] the block is an empty function");
  if (!is_grad_enabled()) return fn(inputs);
  const bool any = std::any_of(inputs.begin(), inputs.end(),
                               [](const Tensor& t) { return t.defined() && t.requires_grad(); });
  if (!any) {
    static std::once_flag warned;
    std::call_once(warned, [] {
      log_message(LogLevel::Warning,
                  "[checkpoint] no input of the block requires grad: it runs without "
                  "checkpointing so that its parameters still get gradients (pass an input "
                  "that requires grad to save memory)");
    });
    return fn(inputs);
  }
  const std::vector<Device> devices =
      preserve_rng_state ? generator_devices(inputs) : std::vector<Device>{};
  const std::vector<Tensor> states = detail::generator_states(devices);
  std::vector<Tensor> outs;
  {
    NoGradGuard no_grad;
    outs = fn(inputs);
  }
  std::vector<Tensor*> recorded;  // the floating outputs, which get the node as grad_fn
  for (Tensor& o : outs) {
    if (!o.defined() || !is_floating(o.dtype())) continue;
    o = o.detach();  // a fresh tensor even when the block returned an input as it is
    recorded.push_back(&o);
  }
  if (recorded.empty()) return outs;
  std::vector<SavedTensor> saved;
  std::vector<bool> wants_grad;
  for (const Tensor& t : inputs) {
    saved.emplace_back(t);
    wants_grad.push_back(t.defined() && t.requires_grad());
  }
  record("CheckpointBackward", "checkpoint", inputs, recorded,
         [fn, saved = std::move(saved), wants_grad = std::move(wants_grad), devices, states](
             const std::vector<Tensor>& grads, const LambdaNode& self) {
           EMBER_CHECK_NOT_IMPLEMENTED(
               !is_grad_enabled(),
               "[checkpoint] backward with create_graph through a checkpointed block is not "
               "supported (higher derivatives of the block's inputs would reach copies of "
               "them): run that block without checkpoint");
           std::vector<Tensor> xs;
           for (size_t i = 0; i < saved.size(); ++i) {
             Tensor x = self.unpack(saved[i]);
             if (wants_grad[i]) x = x.detach().requires_grad_(true);
             xs.push_back(std::move(x));
           }
           std::vector<Tensor> ys;
           {
             const std::vector<Tensor> current = detail::generator_states(devices);
             detail::set_generator_states(devices, states);
             struct PutBack {
               const std::vector<Device>& devices;
               const std::vector<Tensor>& states;
               ~PutBack() { detail::set_generator_states(devices, states); }
             } put_back{devices, current};
             AutoGradMode enable(true);
             ys = fn(xs);
           }
           // The recomputed outputs in the order the node recorded them, with their gradients.
           std::vector<Tensor> roots, root_grads;
           size_t k = 0;
           for (const Tensor& y : ys) {
             if (!y.defined() || !is_floating(y.dtype())) continue;
             EMBER_CHECK(k < grads.size(),
                         "[checkpoint] the block returned more floating outputs when recomputed "
                         "than in forward (it must compute the same thing both times)");
             if (y.requires_grad()) {
               roots.push_back(y);
               root_grads.push_back(grads[k]);
             }
             ++k;
           }
           EMBER_CHECK(k == grads.size(),
                       "[checkpoint] the block returned {} floating outputs when recomputed but {} "
                       "in forward (it must compute the same thing both times)",
                       k, grads.size());
           if (!roots.empty()) {
             backward(roots, root_grads);
           }
           std::vector<Tensor> out;
           for (size_t i = 0; i < xs.size(); ++i)
             out.push_back(wants_grad[i] ? xs[i].grad() : Tensor());
           return out;
         });
  return outs;
}

Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input,
                  bool preserve_rng_state) {
  EMBER_CHECK(static_cast<bool>(fn), "[checkpoint] the block is an empty function");
  return checkpoint([fn](const std::vector<Tensor>& xs) { return std::vector<Tensor>{fn(xs[0])}; },
                    {input}, preserve_rng_state)[0];
}

}  // namespace ember::autograd
