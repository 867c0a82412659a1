#include "core/dispatch/call.h"

#include <array>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "core/profiler/hooks.h"
#include "ember/dispatch/device_registry.h"
#include "ember/ops/factory.h"
#include "ember/plugin/loader.h"
#include "ember/util/error.h"

namespace ember {
namespace {

constexpr int kMaxArgs = 16;

// Note [No backend installed]
// When no plugin registered a kernel (no backend package, or ember-plugins/ left behind), the
// error names what to install and where, not a "no kernel for add" that reads like a missing op.
void no_backend_installed(const Op& op) {
  const PluginReport r = plugin_report();
  for (const PluginRecord& p : r.plugins) {
    if (!p.ops.empty()) return;  // some backend is there: the usual missing-kernel message
  }
  std::vector<std::string> dirs;
  for (const SearchDir& d : r.search_path) dirs.push_back(d.dir);
  throw NotImplementedError(fmt::format(
      "[{}] no backend is installed: {} plugin file(s) found in [{}]{}, none registered a kernel "
      "(install a backend next to the core library: the ember-backend-cpu or "
      "ember-backend-reference package, or lib/ember-plugins/libember-cpu.so of an Ember "
      "install; or name one in EMBER_PLUGIN_PATH; `ember plugins` shows what was found)",
      op.name(), r.plugins.size(), fmt::join(dirs, ", "),
      r.autoload ? "" : " (autoload is off: EMBER_PLUGIN_AUTOLOAD=0)"));
}

[[noreturn]] void missing_kernel(const Op& op, Device device, DType dtype) {
  std::string have;
  for (const DeviceTypeEntry& t : device_types()) {
    const int16_t id = find_device_type(t.name);
    std::string dts;
    for (int d = 0; d < kNumDTypes; ++d) {
      if (op.kernels().lookup(id, static_cast<DType>(d)).get()) {
        dts += fmt::format("{}{}", dts.empty() ? "" : ", ", static_cast<DType>(d));
      }
    }
    if (!dts.empty()) have += fmt::format("{}{} {{{}}}", have.empty() ? "" : "; ", t.name, dts);
  }
  if (have.empty()) no_backend_installed(op);
  throw NotImplementedError(
      fmt::format("[{}] no kernel for device {} and dtype {}: registered {} (load a "
                  "backend plugin that provides it, see `ember ops`)",
                  op.name(), device.str(), dtype, have.empty() ? "none" : have));
}

// Note [Inference tensors have no identity]
// A kernel may keep what it derived from an input for as long as the input's (storage id,
// version) stays the same (Note [Tensor identities] in plugin_abi.h). An inference storage
// counts no versions (Note [Inference tensors] in core/autograd/grad_mode.cpp), so an in-place
// write to it (a weight made inside InferenceMode and reloaded there) would go unseen and a
// kernel would reuse a stale copy. Such tensors are passed as unknown (storage id 0), which
// kernels never reuse anything for; a model built outside InferenceMode, as usual, keeps its
// identities inside it.
void describe(const Tensor& t, ember_tensor* d, ember_tensor_identity* id) {
  const TensorImpl* impl = t.impl();
  const StorageImpl* s = impl->storage().get();
  *id = s && !s->inference() ? ember_tensor_identity{s->id(), s->version()}
                             : ember_tensor_identity{0, 0};
  d->data = impl->data();
  d->dtype = static_cast<int32_t>(impl->dtype());
  d->ndim = static_cast<int32_t>(impl->sizes().size());
  d->sizes = impl->sizes().data();
  d->strides = impl->strides().data();
  d->device_type = impl->device().type;
  d->device_index = impl->device().index;
}

}  // namespace

bool kernel_has_flag(const Op& op, Device device, DType dtype, uint32_t flag) {
  ensure_plugins_loaded();
  const KernelEntry& k = op.kernels().lookup(device.type, dtype);
  return k.get() != nullptr && k.has_flag(flag);
}

void run_image_kernel(const Op& op, DType dtype, MemoryFormat format,
                      std::span<const Tensor* const> inputs, std::span<const Tensor* const> outputs,
                      KernelAttrs attrs) {
  EMBER_CHECK_AS(InternalError,
                 inputs.size() <= kMaxArgs && outputs.size() <= kMaxArgs && !outputs.empty(),
                 "[{}] image kernel call with {} inputs and {} outputs", op.name(), inputs.size(),
                 outputs.size());
  const Device device = outputs[0]->device();
  const MemoryFormat layout = format == MemoryFormat::ChannelsLast &&
                                      kernel_has_flag(op, device, dtype, EMBER_KERNEL_CHANNELS_LAST)
                                  ? MemoryFormat::ChannelsLast
                                  : MemoryFormat::Contiguous;
  const auto in_layout = [&](const Tensor& t) {
    return t.defined() && t.dim() == 4 ? layout : MemoryFormat::Contiguous;
  };
  std::array<Tensor, kMaxArgs> in, out;
  std::array<const Tensor*, kMaxArgs> in_ptrs{}, out_ptrs{};
  for (size_t i = 0; i < inputs.size(); ++i) {
    in[i] = inputs[i]->defined() ? inputs[i]->contiguous(in_layout(*inputs[i])) : *inputs[i];
    in_ptrs[i] = &in[i];
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& o = *outputs[i];
    out[i] =
        o.is_contiguous(in_layout(o)) ? o : empty(o.sizes(), {o.dtype(), o.device()}, in_layout(o));
    out_ptrs[i] = &out[i];
  }
  run_kernel(op, dtype, {in_ptrs.data(), inputs.size()}, {out_ptrs.data(), outputs.size()}, attrs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!out[i].is_same(*outputs[i]) && out[i].numel() > 0) {
      run_kernel(core_op(ops::copy), out[i].dtype(), {&out[i]}, {outputs[i]});
    }
  }
}

bool has_kernel(const Op& op, Device device, DType dtype) {
  ensure_plugins_loaded();  // asked before any op ran, the answer must not be "no"
  return op.kernels().lookup(device.type, dtype).get() != nullptr;
}

Device common_device(std::initializer_list<const Tensor*> tensors, const char* op) {
  Device dev;
  bool first = true;
  for (const Tensor* t : tensors) {
    if (!t->defined()) continue;
    if (first) {
      dev = t->device();
      first = false;
    } else {
      EMBER_CHECK_TYPE(
          t->device() == dev,
          "[{}] expected all tensors on one device: got {} and {} (move them with .to())", op,
          dev.str(), t->device().str());
    }
  }
  return dev;
}

// Note [Ops that take one dtype]
// Elementwise arithmetic promotes mixed dtypes (Note [Type promotion]), but PyTorch refuses them
// where an op multiplies a tensor by parameters: matmul, mm, bmm, linear, the convolutions, the
// normalisations' weight and bias, attention's q, k and v, the recurrent layers' weights ("mat1
// and mat2 must have the same dtype"). Promoting there is a silent change of precision, and of
// the result's dtype: a float32 Linear given float64 input returned float64. Those ops check
// with common_dtype, after autocast has cast their inputs.
DType common_dtype(std::initializer_list<const Tensor*> tensors, const char* op) {
  DType dtype = DType::Float32;
  bool first = true;
  for (const Tensor* t : tensors) {
    if (!t->defined()) continue;
    if (first) {
      dtype = t->dtype();
      first = false;
    } else {
      EMBER_CHECK_TYPE(t->dtype() == dtype,
                       "[{}] expected all tensors of one dtype: got {} and {} (convert them with "
                       ".to())",
                       op, dtype, t->dtype());
    }
  }
  return dtype;
}

void run_kernel(const Op& op, DType dtype, std::span<const Tensor* const> inputs,
                std::span<const Tensor* const> outputs, KernelAttrs attrs) {
  EMBER_ASSERT(inputs.size() <= kMaxArgs && outputs.size() <= kMaxArgs);
  const Tensor* first = !outputs.empty() ? outputs[0] : inputs[0];
  const Device device = first->device();
  ember_tensor in[kMaxArgs], out[kMaxArgs];
  ember_tensor_identity in_id[kMaxArgs], out_id[kMaxArgs];
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK_TYPE(
        inputs[i]->device() == device,
        "[{}] expected all tensors on one device: got {} and {} (move them with .to())", op.name(),
        device.str(), inputs[i]->device().str());
    describe(*inputs[i], &in[i], &in_id[i]);
  }
  for (size_t i = 0; i < outputs.size(); ++i) describe(*outputs[i], &out[i], &out_id[i]);
  ember_kernel_fn fn = op.kernels().lookup(device.type, dtype).get();
  if (__builtin_expect(fn == nullptr, 0)) {
    // A tensor made without allocating (from_blob, DLPack) can reach here before discovery.
    ensure_plugins_loaded();
    fn = op.kernels().lookup(device.type, dtype).get();
    if (fn == nullptr) missing_kernel(op, device, dtype);
  }
  // The arity ember/ops.def declares for a core op (a plugin's op was checked against its
  // schema before): a mismatch is a bug in the core, not bad input.
  if (const OpSchema* s = op.schema(); s && s->core) {
    const auto n_in = static_cast<int32_t>(inputs.size());
    const auto n_out = static_cast<int32_t>(outputs.size());
    EMBER_ASSERT(n_in >= s->min_inputs && n_in <= s->max_inputs && n_out >= s->min_outputs &&
                 n_out <= s->max_outputs &&
                 static_cast<int32_t>(attrs.ints.size()) == s->num_ints &&
                 static_cast<int32_t>(attrs.floats.size()) == s->num_floats);
  }
  const DeviceTypeEntry& type = detail::device_type_unchecked(device.type);

  char error[512];
  error[0] = '\0';
  ember_kernel_call call{};
  call.struct_size = sizeof(call);
  call.num_inputs = static_cast<int32_t>(inputs.size());
  call.inputs = in;
  call.num_outputs = static_cast<int32_t>(outputs.size());
  call.outputs = out;
  call.num_ints = static_cast<int32_t>(attrs.ints.size());
  call.ints = attrs.ints.data();
  call.num_floats = static_cast<int32_t>(attrs.floats.size());
  call.floats = attrs.floats.data();
  call.host = detail::host_table();
  call.error = error;
  call.error_capacity = sizeof(error);
  call.input_ids = in_id;
  call.output_ids = out_id;
  // ABI 1.4: the device's current stream, so a kernel (a plugin's own op too) queues its work
  // where the core's ops on this thread go, without synchronizing the device.
  call.stream = type.table.stream_get
                    ? type.table.stream_get(type.table.ctx, device.index, EMBER_STREAM_CURRENT)
                    : nullptr;
  // Note [One branch when the profiler is off] in ember/profiler/record_function.h.
  const int32_t status = __builtin_expect(profiler::is_enabled(), 0)
                             ? profiler::detail::run_kernel_profiled(op, dtype, device, fn, call)
                             : fn(&call);
  if (__builtin_expect(status != EMBER_OK, 0)) {
    // The kernel's status picks the kind (Note [Error kinds]); the message is the same for all.
    throw_error(status_error_kind(status),
                fmt::format("[{}] {} kernel failed for {}: {}", op.name(), device.str(), dtype,
                            error[0] ? error : "no reason given"));
  }
}

}  // namespace ember
