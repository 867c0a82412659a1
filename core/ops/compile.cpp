// compile(): capture per input signature, plan, replay (ember/ops/compile.h).
#include "ember/ops/compile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "core/dispatch/call.h"
#include "core/dispatch/capture.h"
#include "ember/autograd/grad_mode.h"
#include "ember/tensor/storage.h"

namespace ember {

// Note [Compiled functions]
// A CompiledFunction runs its function once per input signature (each input's sizes, strides,
// dtype and device) under a capture (Note [What a capture records]) and, from then on, replays
// the recorded kernel calls: no host code, no allocation, no dispatch beyond the kernel call.
//   - Memory: the function's own intermediates are planned by lifetime (first to last step that
//     touches them, guards and outputs included) into buffers reused best-fit, allocated once;
//     inputs are read where the caller's tensors are, weights where they were; host-filled
//     constants are kept as captured. Results are cloned out, so the buffers are the replay's.
//   - Guards: a host read during the capture (an item(), a bounds check, `if x.sum() > 0`) is
//     compared at the same point of each replay; a difference abandons the replay and the function
//     runs, captured again. After kMaxRecaptures such captures for one signature, its values are
//     taken to change every call and the function runs eagerly from then on.
//   - What cannot be replayed runs eagerly, and report() says why: random numbers, copies between
//     devices, a capture that writes its inputs or weights in place and also has guards (a
//     replay abandoned halfway would have written them once already).
//   - Watched tensors (a module's parameters): replaced by another storage, or reshaped, the
//     next call captures again; updated in place, replays read them as they are.
namespace compiled {

constexpr int kMaxRecaptures = 8;

/** The inputs' dtypes, devices, sizes and strides as bytes (a map key; compared every call). */
std::string signature_of(const std::vector<Tensor>& inputs) {
  std::string key;
  auto put = [&](int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (const Tensor& t : inputs) {
    if (!t.defined()) {
      put(-1);
      continue;
    }
    put(static_cast<int64_t>(t.dtype()));
    put(t.device().type);
    put(t.device().index);
    put(t.dim());
    for (int64_t s : t.sizes()) put(s);
    for (int64_t s : t.strides()) put(s);
  }
  return key;
}

/** A recorded step with its operands built on the plan's buffers. */
struct BoundStep {
  const Op* op;
  DType dtype;
  std::vector<Tensor> inputs, outputs;
  std::vector<int32_t> input_slots, output_slots;  // per operand: an Input slot's index or -1
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

struct Plan {
  capture::Recording rec;
  std::vector<capture::Operand> outputs;
  std::vector<int64_t> input_offsets;  // the example inputs' storage offsets
  std::vector<Storage> buffers;        // what the intermediates live in
  std::vector<Storage> slot_storage;   // per slot: its storage at a replay (inputs: none)
  std::vector<BoundStep> steps;
  uint64_t planned = 0, separate = 0;
  int recaptures = 0;
  std::string eager;  // non-empty: this signature runs eagerly, for this reason
};

Tensor view_on(const Storage& storage, const capture::Operand& o, int64_t offset) {
  return Tensor(make_intrusive<TensorImpl>(storage, o.sizes, o.strides, offset, o.dtype));
}

void plan_memory(Plan& p) {
  using capture::SlotKind;
  const size_t n = p.rec.slots.size();
  p.slot_storage.assign(n, Storage());
  std::vector<size_t> order;
  for (size_t i = 0; i < n; ++i) {
    const capture::Slot& s = p.rec.slots[i];
    if (s.kind == SlotKind::Intermediate) {
      order.push_back(i);
      p.separate += s.storage->bytes();
    } else if (s.kind != SlotKind::Input) {
      p.slot_storage[i] = s.storage;  // weights and constants: read where they are
    }
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return p.rec.slots[a].first < p.rec.slots[b].first; });
  struct Live {
    size_t last, buffer;
  };
  std::vector<Live> live;
  std::vector<size_t> free;  // buffer indices
  for (size_t i : order) {
    const capture::Slot& s = p.rec.slots[i];
    for (auto it = live.begin(); it != live.end();) {
      if (it->last < s.first) {
        free.push_back(it->buffer);
        it = live.erase(it);
      } else {
        ++it;
      }
    }
    const size_t need = s.storage->bytes();
    size_t best = free.size();
    for (size_t f = 0; f < free.size(); ++f) {
      const size_t have = p.buffers[free[f]]->bytes();
      if (have >= need && (best == free.size() || have < p.buffers[free[best]]->bytes())) best = f;
    }
    size_t buffer;
    if (best < free.size()) {
      buffer = free[best];
      free.erase(free.begin() + static_cast<std::ptrdiff_t>(best));
    } else {
      buffer = p.buffers.size();
      p.buffers.push_back(allocate_storage(need, p.rec.device));
      p.planned += need;
    }
    live.push_back({s.last, buffer});
    p.slot_storage[i] = p.buffers[buffer];
  }
  // The capture's own storages are no longer needed: the buffers stand for them.
  for (capture::Slot& s : p.rec.slots) {
    if (s.kind == SlotKind::Intermediate || s.kind == SlotKind::Input) s.storage = Storage();
  }
}

void bind_steps(Plan& p) {
  auto bind = [&](const capture::Operand& o, std::vector<Tensor>& ts, std::vector<int32_t>& in) {
    if (o.slot < 0) {
      ts.emplace_back();
      in.push_back(-1);
      return;
    }
    const capture::Slot& s = p.rec.slots[static_cast<size_t>(o.slot)];
    if (s.kind == capture::SlotKind::Input) {
      ts.emplace_back();  // built from the call's input
      in.push_back(o.slot);
      return;
    }
    ts.push_back(view_on(p.slot_storage[static_cast<size_t>(o.slot)], o, o.offset));
    in.push_back(-1);
  };
  for (const capture::Step& s : p.rec.steps) {
    BoundStep b{s.op, s.dtype, {}, {}, {}, {}, s.ints, s.floats};
    for (const capture::Operand& o : s.inputs) bind(o, b.inputs, b.input_slots);
    for (const capture::Operand& o : s.outputs) bind(o, b.outputs, b.output_slots);
    p.steps.push_back(std::move(b));
  }
}

/** Why a recording cannot be replayed, or "". */
std::string unreplayable(const capture::Recording& rec) {
  if (!rec.refused.empty()) return rec.refused;
  if (rec.guards.empty()) return "";
  for (const capture::Step& s : rec.steps) {
    for (const capture::Operand& o : s.outputs) {
      if (o.slot < 0) continue;
      const capture::SlotKind k = rec.slots[static_cast<size_t>(o.slot)].kind;
      if (k == capture::SlotKind::Input || k == capture::SlotKind::External) {
        return "[compile] the function writes an input or a weight in place and reads values "
               "on the host: a replay abandoned at a guard would write it twice";
      }
    }
  }
  return "";
}

}  // namespace compiled

using compiled::Plan;
using compiled::signature_of;
using compiled::view_on;

struct CompiledFunction::Impl {
  TensorFn fn;
  std::vector<Tensor> watched;
  std::vector<const StorageImpl*> watched_storages;
  std::vector<std::string> watched_shapes;
  std::map<std::string, Plan> plans;
  CompileReport report;
  std::mutex mutex;

  void snapshot_watched() {
    watched_storages.clear();
    watched_shapes.clear();
    for (const Tensor& t : watched) {
      watched_storages.push_back(t.defined() ? t.storage().get() : nullptr);
      watched_shapes.push_back(t.defined() ? signature_of({t}) : "");
    }
  }

  bool watched_changed() const {
    for (size_t i = 0; i < watched.size(); ++i) {
      const Tensor& t = watched[i];
      if ((t.defined() ? t.storage().get() : nullptr) != watched_storages[i]) return true;
      if ((t.defined() ? signature_of({t}) : "") != watched_shapes[i]) return true;
    }
    return false;
  }

  /** Runs fn under a capture; the plan for `key` is what it recorded. */
  std::vector<Tensor> capture(const std::string& key, const std::vector<Tensor>& inputs,
                              int recaptures) {
    std::vector<Tensor> outs;
    Plan p;
    {
      autograd::NoGradGuard no_grad;
      capture::CaptureScope scope(inputs);
      outs = fn(inputs);
      for (const Tensor& t : outs) p.outputs.push_back(scope.operand_of(t));
      p.rec = scope.finish();
    }
    ++report.captures;
    ++report.eager_calls;
    p.recaptures = recaptures;
    p.eager = compiled::unreplayable(p.rec);
    if (p.eager.empty()) {
      for (const Tensor& t : inputs) p.input_offsets.push_back(t.storage_offset());
      compiled::plan_memory(p);
      compiled::bind_steps(p);
    }
    report.steps = static_cast<int64_t>(p.rec.steps.size());
    report.guards = static_cast<int64_t>(p.rec.guards.size());
    report.planned_bytes = p.planned;
    report.intermediate_bytes = p.separate;
    if (!p.eager.empty()) report.eager_reason = p.eager;
    plans[key] = std::move(p);
    return outs;
  }

  Tensor input_view(const Plan& p, const std::vector<Tensor>& inputs,
                    const capture::Operand& o) const {
    const auto i = static_cast<size_t>(p.rec.slots[static_cast<size_t>(o.slot)].input);
    return view_on(inputs[i].storage(), o,
                   o.offset - p.input_offsets[i] + inputs[i].storage_offset());
  }

  Tensor operand(const Plan& p, const std::vector<Tensor>& inputs,
                 const capture::Operand& o) const {
    if (o.slot < 0) return Tensor();
    if (p.rec.slots[static_cast<size_t>(o.slot)].kind == capture::SlotKind::Input) {
      return input_view(p, inputs, o);
    }
    return view_on(p.slot_storage[static_cast<size_t>(o.slot)], o, o.offset);
  }

  bool guard_holds(const Plan& p, const std::vector<Tensor>& inputs, const capture::Guard& g) {
    const Tensor dense = operand(p, inputs, g.value).contiguous().to(Device::cpu());
    return dense.nbytes() == g.bytes.size() &&
           (g.bytes.empty() ||
            std::memcmp(dense.impl()->data(), g.bytes.data(), g.bytes.size()) == 0);
  }

  /** Replays `p`; false when a guard failed (nothing returned). */
  bool replay(Plan& p, const std::vector<Tensor>& inputs, std::vector<Tensor>& out) {
    size_t next_guard = 0;
    const auto check_guards = [&](size_t done) {
      for (; next_guard < p.rec.guards.size() && p.rec.guards[next_guard].after <= done;
           ++next_guard) {
        if (!guard_holds(p, inputs, p.rec.guards[next_guard])) return false;
      }
      return true;
    };
    std::vector<const Tensor*> in_ptrs, out_ptrs;
    std::vector<Tensor> temps;
    for (size_t k = 0; k < p.steps.size(); ++k) {
      if (!check_guards(k)) return false;
      compiled::BoundStep& s = p.steps[k];
      const capture::Step& rs = p.rec.steps[k];
      in_ptrs.clear();
      out_ptrs.clear();
      temps.clear();
      temps.reserve(s.inputs.size() + s.outputs.size());
      // Operands on an input slot are views of this call's inputs; the rest were bound once.
      auto point = [&](std::vector<Tensor>& bound, const std::vector<int32_t>& slots,
                       const std::vector<capture::Operand>& ops, std::vector<const Tensor*>& ptrs) {
        for (size_t i = 0; i < bound.size(); ++i) {
          if (slots[i] >= 0) {
            temps.push_back(input_view(p, inputs, ops[i]));
            ptrs.push_back(&temps.back());
          } else {
            ptrs.push_back(&bound[i]);
          }
        }
      };
      point(s.inputs, s.input_slots, rs.inputs, in_ptrs);
      point(s.outputs, s.output_slots, rs.outputs, out_ptrs);
      run_kernel(*s.op, s.dtype, std::span<const Tensor* const>(in_ptrs),
                 std::span<const Tensor* const>(out_ptrs), KernelAttrs{s.ints, s.floats});
    }
    if (!check_guards(p.steps.size())) return false;
    out.clear();
    for (const capture::Operand& o : p.outputs) {
      const Tensor t = operand(p, inputs, o);
      out.push_back(t.defined() ? t.clone() : t);
    }
    return true;
  }

  std::vector<Tensor> call(const std::vector<Tensor>& inputs) {
    std::lock_guard<std::mutex> lock(mutex);
    if (watched_changed()) {
      plans.clear();
      snapshot_watched();
    }
    const std::string key = signature_of(inputs);
    auto it = plans.find(key);
    if (it == plans.end()) return capture(key, inputs, 0);
    Plan& p = it->second;
    if (!p.eager.empty()) {
      ++report.eager_calls;
      report.eager_reason = p.eager;
      autograd::NoGradGuard no_grad;
      return fn(inputs);
    }
    std::vector<Tensor> out;
    {
      autograd::NoGradGuard no_grad;
      if (replay(p, inputs, out)) {
        ++report.replays;
        return out;
      }
    }
    // A value read on the host differs: the function may go another way.
    const int recaptures = p.recaptures + 1;
    if (recaptures > compiled::kMaxRecaptures) {
      p.eager = fmt::format(
          "[compile] values the function reads on the host changed in {} calls in a row "
          "(control flow that depends on data): it runs eagerly for these input shapes",
          recaptures);
      report.eager_reason = p.eager;
      ++report.eager_calls;
      autograd::NoGradGuard no_grad;
      return fn(inputs);
    }
    report.eager_reason = "[compile] a value read on the host differed: captured again";
    return capture(key, inputs, recaptures);
  }
};

CompiledFunction::CompiledFunction(TensorFn fn, std::vector<Tensor> watched)
    : impl_(std::make_shared<Impl>()) {
  EMBER_CHECK_TYPE(static_cast<bool>(fn), "[compile] expected a function: got an empty one");
  impl_->fn = std::move(fn);
  impl_->watched = std::move(watched);
  impl_->snapshot_watched();
}

std::vector<Tensor> CompiledFunction::operator()(const std::vector<Tensor>& inputs) {
  return impl_->call(inputs);
}

CompileReport CompiledFunction::report() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->report;
}

CompiledFunction compile(TensorFn fn, const std::vector<Tensor>& example_inputs,
                         std::vector<Tensor> watched) {
  CompiledFunction f(std::move(fn), std::move(watched));
  if (!example_inputs.empty()) f(example_inputs);
  return f;
}

}  // namespace ember
