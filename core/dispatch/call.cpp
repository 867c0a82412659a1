#include "core/dispatch/call.h"

#include <pthread.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "core/dispatch/capture.h"
#include "core/dispatch/profiled.h"
#include "ember/dispatch/device_registry.h"
#include "ember/dispatch/exit.h"
#include "ember/dispatch/runtime.h"
#include "ember/tensor/overlap.h"
#include "ember/util/error.h"
#include "ember/util/exit_gate.h"

namespace ember {
namespace {

constexpr int kMaxArgs = kMaxKernelArgs;

// A new row-major tensor of t's sizes, dtype and device (empty_like below the ops).
Tensor dense_like(const Tensor& t) {
  const size_t bytes = static_cast<size_t>(t.numel()) * itemsize(t.dtype());
  return Tensor(make_intrusive<TensorImpl>(allocate_storage(bytes, t.device()), t.sizes(),
                                           contiguous_strides(t.sizes()), 0, t.dtype()));
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
  if (have.empty()) detail::explain_no_backend(op.name());
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

// Note [Overlapping operands]
// A kernel writes its outputs while it reads its inputs, in an order of its own and over several
// threads, so where an output shares memory with an input or with itself the result depends on
// that order: x[1:].add_(x[:-1]) summed cumulatively, a.copy_(a.t()) read half-written values,
// zeros(1).expand(4).add_(1) added four times to one place. Every kernel call is therefore
// checked here, once for every op and backend, with PyTorch's rules (the geometry is decided in
// Note [Deciding overlap] in core/tensor/overlap.cpp):
//   - an output with internal overlap (two of its elements at one location, as a stride 0 over a
//     size > 1 makes) is refused: each write would land on elements it does not name;
//   - an output and an input with exactly one geometry (MemOverlap::Full) are the contract of
//     in-place ops ("the output aliases input 0"; the other operands of where for masked_fill_):
//     allowed, since the kernels handed such a pair are elementwise and read element k before
//     writing element k. The core hands no other kernel an input that aliases its output; the
//     optimizer steps read and write their outputs in place, which needs no input at all;
//   - an input over exactly the output's memory in another order (MemOverlap::Permuted,
//     a.copy_(a.t())) is read from a copy, so the answer is the one of the out-of-place op;
//   - an input that shares only some locations with an output (MemOverlap::Partial) is refused,
//     as in PyTorch: no order of the kernel gives a meaningful answer;
//   - two outputs that share a location are refused;
//   - where the geometry could not be decided (TooHard, awkward as_strided layouts only), an
//     output is allowed as in PyTorch and an input is read from a copy, which is always right.
// Cost: a contiguous output (cached in TensorImpl) needs no internal check, and operands whose
// storages differ and do not wrap one block (a pointer compare, then the blocks' bounds) need no
// pair check, which settles every out-of-place call and an in-place one whose other operands are
// separate tensors; an output passed as its own input is the same impl, skipped without a look.
// Empty outputs write nothing and are not checked.

// True when a and b may share memory: one storage, or two storages wrapping one block (from_blob,
// DLPack, NumPy).
inline bool may_share(const TensorImpl& a, const TensorImpl& b) {
  const StorageImpl* sa = a.storage().get();
  const StorageImpl* sb = b.storage().get();
  if (sa == sb) return true;
  if (!sa || !sb) return false;
  const auto a0 = reinterpret_cast<uintptr_t>(sa->data());
  const auto b0 = reinterpret_cast<uintptr_t>(sb->data());
  return a0 < b0 + sb->bytes() && b0 < a0 + sa->bytes();
}

std::string geometry_str(const Tensor& t) {
  return fmt::format("sizes {} strides {} offset {}", shape_str(t.sizes()), shape_str(t.strides()),
                     t.storage_offset());
}

// The name the user called: an in-place form when an output is one of the inputs.
std::string written_name(const Op& op, std::span<const Tensor* const> inputs,
                         std::span<const Tensor* const> outputs) {
  for (const Tensor* o : outputs) {
    for (const Tensor* i : inputs) {
      if (i->defined() && mem_overlap(*o, *i) == MemOverlap::Full) return op.name() + "_";
    }
  }
  return op.name();
}

// Checks output `o` against itself, the outputs before it and every input (Note [Overlapping
// operands]); returns the inputs to read from a copy, one bit each.
uint32_t check_overlap(const Op& op, std::span<const Tensor* const> inputs,
                       std::span<const Tensor* const> outputs, size_t o) {
  const Tensor& out = *outputs[o];
  if (internal_overlap(out) == InternalOverlap::Yes) {
    detail::refuse_internal_overlap(written_name(op, inputs, outputs), out);
  }
  for (size_t p = 0; p < o; ++p) {
    const MemOverlap m = mem_overlap(*outputs[p], out);
    if (m != MemOverlap::None && m != MemOverlap::TooHard) {
      throw NotImplementedError(
          fmt::format("[{}] unsupported operation: outputs {} and {} refer to a single memory "
                      "location: {} and {} (write them to separate tensors)",
                      op.name(), p, o, geometry_str(*outputs[p]), geometry_str(out)));
    }
  }
  uint32_t copy = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = *inputs[i];
    if (!in.defined() || in.is_same(out)) continue;
    switch (mem_overlap(out, in)) {
      case MemOverlap::None:
      case MemOverlap::Full:
        break;
      case MemOverlap::Permuted:
      case MemOverlap::TooHard:
        copy |= uint32_t{1} << i;
        break;
      case MemOverlap::Partial:
        throw NotImplementedError(fmt::format(
            "[{}] unsupported operation: some elements of the input tensor and the written-to "
            "tensor refer to a single memory location: input {} has {}, the output {} (clone() "
            "the input first)",
            written_name(op, inputs, outputs), i, geometry_str(in), geometry_str(out)));
    }
  }
  return copy;
}

}  // namespace

void detail::refuse_internal_overlap(const std::string& name, const Tensor& out) {
  throw NotImplementedError(
      fmt::format("[{}] unsupported operation: more than one element of the written-to tensor "
                  "refers to a single memory location: {} (clone() it first)",
                  name, geometry_str(out)));
}

bool kernel_has_flag(const Op& op, Device device, DType dtype, uint32_t flag) {
  ensure_plugins_loaded();
  const KernelEntry& k = op.kernels().lookup(device.type, dtype);
  return k.get() != nullptr && k.has_flag(flag);
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

// Note [Kernels at exit]
// exit() runs every library's static destructors while threads the process does not wait for
// (a detached C++ thread, a Python daemon thread) may still be inside kernels: oneDNN freed the
// JIT code of its gemm kernels while another thread was executing it, and the process crashed
// on its way out. The registries are ours and outlive exit (Note [Op registries outlive exit] in
// op.cpp); a vendor library's statics are not, so instead no kernel runs once they go. Every
// kernel call passes an ExitGate (Note [Exit gates]); an atexit handler closes it and waits (at
// most 5 s) for the calls inside to return, and a thread that calls a kernel later parks for
// good. The handler must run before the destructors it guards against, and exit runs handlers
// in the reverse order of registration, while a library registers the destructor of a
// function-local static when it first makes the static, typically within the first calls of a
// kernel. So the handler is registered again after the first call of each kernel (each op,
// device type and dtype, again when a plugin replaces it): everything made by then is destroyed
// after the gate has closed, and the later handlers find it closed and return. A library may
// still make a static after a kernel's first call (a weight packed on its second), so an
// embedding interpreter closes the gate where its own exit starts, before any destructor: Python's
// atexit handler does (close_kernels_for_exit; Note [Threads at interpreter exit]). A thread that
// parks first calls the gate's park hook, where Python lets go of the GIL if the thread holds it.
// A kernel call nested in another (a kernel's host call running a kernel) passes as part of the
// outer one. A forked child reopens the gate.

namespace {

ExitGate& kernel_gate() {
  // Never destroyed, as the kernels may be called at exit; made with the fork handler.
  static ExitGate* gate = [] {
    ::pthread_atfork(nullptr, nullptr, [] { kernel_gate().reset(); });
    return new ExitGate();
  }();
  return *gate;
}

thread_local int t_kernel_depth = 0;  // kernel calls this thread is inside

/** Passes the kernel gate for one kernel call. */
class KernelCallScope {
 public:
  KernelCallScope() noexcept {
    if (t_kernel_depth++ == 0) kernel_gate().enter();
  }
  ~KernelCallScope() {
    if (--t_kernel_depth == 0) kernel_gate().leave();
  }
  KernelCallScope(const KernelCallScope&) = delete;
  KernelCallScope& operator=(const KernelCallScope&) = delete;
};

/** After a kernel's first call: (re)registers the exit handler behind the statics it made. */
void after_first_call(const KernelEntry& entry) {
  if (!entry.called.exchange(true)) std::atexit([] { close_kernels_for_exit(); });
}

}  // namespace

void close_kernels_for_exit(std::chrono::milliseconds limit) {
  if (kernel_gate().close()) kernel_gate().wait_empty(limit);
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
  }
  // Note [Overlapping operands]
  uint32_t copy_inputs = 0;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const TensorImpl& t = *outputs[o]->impl();
    if (t.numel() == 0) continue;
    bool suspect = !t.is_contiguous();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const TensorImpl* in = inputs[i]->impl();
      suspect |= in != &t && may_share(t, *in);  // the output itself: an in-place op's input 0
    }
    for (size_t p = 0; p < o; ++p) suspect |= may_share(t, *outputs[p]->impl());
    if (__builtin_expect(suspect, 0)) copy_inputs |= check_overlap(op, inputs, outputs, o);
  }
  std::vector<Tensor> copies;  // inputs read from a copy, alive until the kernel returns
  if (__builtin_expect(copy_inputs != 0, 0)) copies.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor* src = inputs[i];
    if (__builtin_expect((copy_inputs >> i) & 1, 0)) {
      Tensor c = dense_like(*src);
      capture::Suppress quiet;  // a replay's run_kernel makes the same copy itself
      run_kernel(core_op(ops::copy), src->dtype(), {src}, {&c});
      copies.push_back(std::move(c));
      src = &copies.back();
    }
    describe(*src, &in[i], &in_id[i]);
  }
  for (size_t i = 0; i < outputs.size(); ++i) describe(*outputs[i], &out[i], &out_id[i]);
  const KernelEntry* entry = &op.kernels().lookup(device.type, dtype);
  ember_kernel_fn fn = entry->get();
  if (__builtin_expect(fn == nullptr, 0)) {
    // A tensor made without allocating (from_blob, DLPack) can reach here before discovery.
    ensure_plugins_loaded();
    entry = &op.kernels().lookup(device.type, dtype);
    fn = entry->get();
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
  int32_t status;
  {
    KernelCallScope gate;  // Note [Kernels at exit]
    // Note [One branch when the profiler is off] in ember/dispatch/profiling.h.
    status = __builtin_expect(profiler::is_enabled(), 0)
                 ? profiler::detail::run_kernel_profiled(op, dtype, device, fn, call)
                 : fn(&call);
  }
  if (!entry->called.load(std::memory_order_relaxed)) [[unlikely]]
    after_first_call(*entry);
  if (__builtin_expect(status != EMBER_OK, 0)) {
    // The kernel's status picks the kind (Note [Error kinds]); the message is the same for all.
    throw_error(status_error_kind(status),
                fmt::format("[{}] {} kernel failed for {}: {}", op.name(), device.str(), dtype,
                            error[0] ? error : "no reason given"));
  }
  if (capture::detail::g_active.load(std::memory_order_relaxed) != 0) [[unlikely]] {
    capture::detail::on_kernel(op, dtype, inputs, outputs, attrs);
  }
}

}  // namespace ember
