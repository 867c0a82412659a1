// Calling the ops plugins define (ember/dispatch/extension_ops.h): outputs made from the schema's
// shape inference, the kernel run, autograd recorded. It makes tensors and records history, so it
// is an op, above the registry of schemas in core/dispatch/extension_ops.cpp.
#include <bit>
#include <cstddef>
#include <string>
#include <vector>

#include "core/dispatch/call.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"
#include "ember/dispatch/extension_ops.h"
#include "ember/ops/factory.h"
#include "ember/util/error.h"

namespace ember {
namespace {

std::string arg_list(int n, const char* word) {
  return arg_range(n, n, word);
}

std::string doc_hint(const OpSchema& e) {
  return e.doc.empty() ? std::string() : fmt::format(" ({}: {})", e.name, e.doc);
}

ember_tensor describe_meta(const Tensor& t) {
  ember_tensor d{};
  d.data = nullptr;
  d.dtype = static_cast<int32_t>(t.dtype());
  d.ndim = static_cast<int32_t>(t.dim());
  d.sizes = t.sizes().data();
  d.strides = t.strides().data();
  d.device_type = t.device().type;
  d.device_index = t.device().index;
  return d;
}

std::vector<Tensor> run(const OpSchema& e, const std::vector<Tensor>& inputs,
                        const std::vector<int64_t>& ints, const std::vector<double>& floats);

// Note [Autograd for ops defined by plugins]
// The forward records one node with an edge to every input. Its backward calls the schema's
// backward op (Note [Backward of an op defined by a plugin] in plugin_abi.h) with the output
// gradients and the saved tensors, and hands each differentiable input its gradient. Inputs
// are saved as SavedTensors and outputs through save_output (no reference cycle), so an
// in-place change between forward and backward is reported. The backward op runs through
// run() like any call: under create_graph its inputs require grad, and since a backward op
// has no backward of its own, reaching it in a second backward throws (first order only).
void record_backward(const OpSchema& e, const std::vector<Tensor>& inputs,
                     std::vector<Tensor>& outputs, const std::vector<int64_t>& ints,
                     const std::vector<double>& floats) {
  std::vector<Tensor*> outs;
  for (Tensor& t : outputs) outs.push_back(&t);
  const std::string node_name = e.name + "Backward";
  if (!e.backward) {
    const std::string name = e.name;
    autograd::record(
        node_name, e.name.c_str(), inputs, outs,
        [name](const std::vector<Tensor>&, const autograd::LambdaNode&) -> std::vector<Tensor> {
          throw NotImplementedError(
              fmt::format("[{}] is not differentiable: its schema names no backward op (an "
                          "input required grad)",
                          name));
        });
    return;
  }
  std::vector<autograd::SavedTensor> saved;
  for (int i = 0; i < e.max_inputs; ++i) {
    if (e.saved_inputs & (1u << i)) saved.emplace_back(inputs[i]);
  }
  std::vector<Shape> sizes;
  std::vector<DType> dtypes;
  for (const Tensor& t : inputs) {
    sizes.push_back(t.sizes());
    dtypes.push_back(t.dtype());
  }
  const OpSchema* fw = &e;
  auto node = autograd::record(
      node_name, e.name.c_str(), inputs, outs,
      [fw, saved = std::move(saved), sizes = std::move(sizes), dtypes = std::move(dtypes), ints,
       floats](const std::vector<Tensor>& grads, const autograd::LambdaNode& self) {
        std::vector<Tensor> args(grads.begin(), grads.end());
        for (const autograd::SavedTensor& s : saved) args.push_back(self.unpack(s));
        const int n_saved_out = std::popcount(fw->saved_outputs);
        for (int j = 0; j < n_saved_out; ++j) args.push_back(self.saved_output(j));
        std::vector<Tensor> g = run(*fw->backward, args, ints, floats);
        std::vector<Tensor> result(static_cast<size_t>(fw->max_inputs));
        size_t k = 0;
        for (int i = 0; i < fw->max_inputs; ++i) {
          if (!(fw->differentiable_inputs & (1u << i))) continue;
          Tensor gi = std::move(g[k++]);
          EMBER_CHECK_PLUGIN(
              gi.sizes() == sizes[i],
              "[{}] gradient for input {} of {} has shape {}, the input has {} (the "
              "backward op's shape inference must give each gradient its input's shape)",
              fw->backward->name, i, fw->name, shape_str(gi.sizes()), shape_str(sizes[i]));
          result[i] = gi.dtype() == dtypes[i] ? gi : gi.to(dtypes[i]);
        }
        return result;
      });
  for (int j = 0; j < e.max_outputs; ++j) {
    if (e.saved_outputs & (1u << j)) node->save_output(outputs[j]);
  }
}

std::vector<Tensor> run(const OpSchema& e, const std::vector<Tensor>& inputs,
                        const std::vector<int64_t>& ints, const std::vector<double>& floats) {
  const char* name = e.name.c_str();
  EMBER_CHECK_PLUGIN(static_cast<int32_t>(inputs.size()) == e.max_inputs,
                     "[{}] expected {}, got {}{}", name, arg_list(e.max_inputs, "input"),
                     inputs.size(), doc_hint(e));
  EMBER_CHECK_PLUGIN(e.num_ints < 0 || static_cast<int32_t>(ints.size()) == e.num_ints,
                     "[{}] expected {}, got {}{}", name, arg_list(e.num_ints, "integer attribute"),
                     ints.size(), doc_hint(e));
  EMBER_CHECK_PLUGIN(e.num_floats < 0 || static_cast<int32_t>(floats.size()) == e.num_floats,
                     "[{}] expected {}, got {}{}", name,
                     arg_list(e.num_floats, "floating attribute"), floats.size(), doc_hint(e));
  Device device;
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK_TYPE(inputs[i].defined(), "[{}] input {} is an undefined tensor", name, i);
    if (i == 0) {
      device = inputs[0].device();
    } else {
      EMBER_CHECK_TYPE(
          inputs[i].device() == device,
          "[{}] expected all tensors on one device: got {} and {} (move them with .to())", name,
          device.str(), inputs[i].device().str());
    }
  }

  // Shape inference, before anything is allocated.
  ember_tensor meta[EMBER_OP_MAX_ARGS];
  for (size_t i = 0; i < inputs.size(); ++i) meta[i] = describe_meta(inputs[i]);
  ember_output_info info[EMBER_OP_MAX_ARGS];
  for (int j = 0; j < e.max_outputs; ++j) {
    info[j].dtype = inputs.empty() ? EMBER_F32 : meta[0].dtype;
    info[j].ndim = -1;
  }
  char error[512];
  error[0] = '\0';
  ember_infer_call ic{};
  ic.struct_size = sizeof(ic);
  ic.op = name;
  ic.num_inputs = e.max_inputs;
  ic.inputs = meta;
  ic.num_outputs = e.max_outputs;
  ic.outputs = info;
  ic.num_ints = static_cast<int32_t>(ints.size());
  ic.ints = ints.data();
  ic.num_floats = static_cast<int32_t>(floats.size());
  ic.floats = floats.data();
  ic.error = error;
  ic.error_capacity = sizeof(error);
  const int32_t status = e.infer(&ic);
  error[sizeof(error) - 1] = '\0';
  EMBER_CHECK(status == EMBER_OK, "[{}] {}", name,
              error[0] ? error : "inputs rejected by shape inference (no reason given)");
  for (int j = 0; j < e.max_outputs; ++j) {
    const ember_output_info& o = info[j];
    EMBER_CHECK_PLUGIN(o.ndim >= 0 && o.ndim <= EMBER_MAX_DIMS && o.dtype >= 0 &&
                           o.dtype < EMBER_NUM_DTYPES &&
                           std::all_of(o.sizes, o.sizes + o.ndim, [](int64_t s) { return s >= 0; }),
                       "[{}] shape inference of plugin {} gave output {} an invalid shape or dtype "
                       "(ndim {}, dtype {}): a bug in the plugin",
                       name, e.plugin, j, o.ndim, o.dtype);
  }

  bool needs_grad = false;
  if (autograd::is_grad_enabled()) {
    needs_grad = std::any_of(inputs.begin(), inputs.end(),
                             [](const Tensor& t) { return t.requires_grad(); });
  }

  std::vector<Tensor> outputs;
  outputs.reserve(static_cast<size_t>(e.max_outputs));
  {
    autograd::NoGradGuard below_autograd;
    std::vector<Tensor> args;
    const std::vector<Tensor>* kernel_inputs = &inputs;
    if (e.flags & EMBER_OP_CONTIGUOUS_INPUTS) {
      args.reserve(inputs.size());
      for (const Tensor& t : inputs) args.push_back(t.is_contiguous() ? t : t.contiguous());
      kernel_inputs = &args;
    }
    bool any_work = false;
    for (int j = 0; j < e.max_outputs; ++j) {
      outputs.push_back(empty(IntList(info[j].sizes, static_cast<size_t>(info[j].ndim)),
                              TensorOptions(static_cast<DType>(info[j].dtype), device)));
      any_work = any_work || outputs.back().numel() > 0;
    }
    // Note [Empty outputs skip the kernel]: with nothing to write there is nothing to run, so
    // kernels never see a zero-size launch.
    if (any_work) {
      const Tensor* in[EMBER_OP_MAX_ARGS];
      const Tensor* out[EMBER_OP_MAX_ARGS];
      for (size_t i = 0; i < kernel_inputs->size(); ++i) in[i] = &(*kernel_inputs)[i];
      for (size_t j = 0; j < outputs.size(); ++j) out[j] = &outputs[j];
      const DType dispatch = inputs.empty() ? outputs[0].dtype() : (*kernel_inputs)[0].dtype();
      run_kernel(*e.op, dispatch, std::span<const Tensor* const>(in, kernel_inputs->size()),
                 std::span<const Tensor* const>(out, outputs.size()),
                 KernelAttrs{std::span<const int64_t>(ints), std::span<const double>(floats)});
    }
  }
  if (needs_grad) record_backward(e, inputs, outputs, ints, floats);
  return outputs;
}

}  // namespace

std::vector<Tensor> call(std::string_view op, std::vector<Tensor> inputs, std::vector<int64_t> ints,
                         std::vector<double> floats) {
  return run(detail::extension_op(op), inputs, ints, floats);
}

Tensor call_one(std::string_view op, std::vector<Tensor> inputs, std::vector<int64_t> ints,
                std::vector<double> floats) {
  const OpSchema& e = detail::extension_op(op);
  EMBER_CHECK_PLUGIN(e.max_outputs == 1, "[{}] has {}: use ember::call, which returns them all",
                     e.name, arg_list(e.max_outputs, "output"));
  return std::move(run(e, inputs, ints, floats)[0]);
}

const OpSchema& OpHandle::schema() const {
  const OpSchema* e = cached_.load(std::memory_order_acquire);
  if (__builtin_expect(e == nullptr, 0)) {
    e = &detail::extension_op(name_);
    cached_.store(e, std::memory_order_release);
  }
  return *e;
}

std::vector<Tensor> OpHandle::call(std::vector<Tensor> inputs, std::vector<int64_t> ints,
                                   std::vector<double> floats) const {
  return run(schema(), inputs, ints, floats);
}

Tensor OpHandle::call_one(std::vector<Tensor> inputs, std::vector<int64_t> ints,
                          std::vector<double> floats) const {
  const OpSchema& e = schema();
  EMBER_CHECK_PLUGIN(e.max_outputs == 1, "[{}] has {}: use OpHandle::call, which returns them all",
                     e.name, arg_list(e.max_outputs, "output"));
  return std::move(run(e, inputs, ints, floats)[0]);
}

}  // namespace ember
