// Capture: recording the kernel calls of one thread (core/dispatch/capture.h).
#include "core/dispatch/capture.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "ember/dispatch/device_registry.h"

namespace ember::capture {

// Note [What a capture records]
// A capture records the kernel calls its thread makes (run_kernel), each with its operands as
// views on storage slots, and nothing else: the host code around them (Python, shape logic, the
// core's checks) is what a replay saves. That is sound only for what the calls fully determine,
// so the rest is watched: host code reading a tensor's values becomes a guard (Note [Host reads
// in a capture]); drawing random numbers, or copying between devices (not a kernel call), marks
// the capture refused, and the caller runs the function eagerly instead. Storages are told apart
// by their process-wide id: one made after the capture began is the function's own (an
// Intermediate when a kernel writes it first, a Constant when host code fills it first); one made
// before is an input or external (a weight), read in place by a replay.

// Note [Composite ops in a capture]
// Some core ops have no kernel of their own and run as other ops: the Elman RNN's layer is a
// matmul and an activation per step, scatter_reduce's prod a sort and a scan, rand a fill on the
// host where the device has no random kernel. A capture records those kernel calls, which is all
// a replay needs; but a consumer that knows the op as a whole (the ONNX exporter, which writes an
// Elman layer as one RNN node) needs its identity and attributes, which the calls have lost. So
// such an op marks its calls as a Region (capture::Composite, around its body): the op's name,
// its tensors in and out as operands, its attributes, and the steps it spans. Regions nest (a
// region inside a region records its parent); one left by an exception stays incomplete. A
// replay ignores them. What the op's body does that a capture cannot stand for (a host read, a
// random draw, a copy between devices) is recorded as usual, as a guard or a refusal, with the
// innermost region open then: a consumer that writes the region whole knows the op itself needs
// none of it (the steps it replaces are what read or drew), and a replay is refused as before.

std::atomic<int> detail::g_active{0};

struct CaptureScope::State {
  Recording rec;
  std::unordered_map<const StorageImpl*, int32_t> slot_of;
  uint64_t marker = 0;  // storages with a larger id were made during the capture
  bool device_set = false;
  std::vector<int32_t> open;  // the regions open, innermost last
};

namespace {

thread_local CaptureScope::State* t_state = nullptr;

int32_t slot_for(CaptureScope::State& st, const Tensor& t, bool written_by_kernel, size_t step) {
  const StorageImpl* s = t.storage().get();
  auto it = st.slot_of.find(s);
  if (it != st.slot_of.end()) {
    Slot& slot = st.rec.slots[static_cast<size_t>(it->second)];
    slot.last = std::max(slot.last, step);
    return it->second;
  }
  Slot slot;
  slot.storage = t.storage();
  slot.kind = s->id() > st.marker
                  ? (written_by_kernel ? SlotKind::Intermediate : SlotKind::Constant)
                  : SlotKind::External;
  slot.first = slot.last = step;
  const auto index = static_cast<int32_t>(st.rec.slots.size());
  st.rec.slots.push_back(std::move(slot));
  st.slot_of.emplace(s, index);
  return index;
}

Operand operand(CaptureScope::State& st, const Tensor& t, bool written_by_kernel, size_t step) {
  Operand o;
  if (!t.defined()) return o;
  if (!t.storage()) {
    // Nothing to bind a replay's operand to: refused rather than replayed as "omitted".
    refuse("[compile] a kernel was given a tensor without storage");
    return o;
  }
  o.slot = slot_for(st, t, written_by_kernel, step);
  o.offset = t.storage_offset();
  o.sizes = t.sizes();
  o.strides = t.strides();
  o.dtype = t.dtype();
  return o;
}

}  // namespace

CaptureScope::CaptureScope(const std::vector<Tensor>& inputs) : state_(new State) {
  EMBER_CHECK(t_state == nullptr,
              "[compile] a capture is already recording on this thread (a "
              "compiled function called inside another one's capture)");
  // A storage made now numbers the ones made before it.
  state_->marker = make_intrusive<StorageImpl>(nullptr, 0, Device::cpu(), nullptr, nullptr)->id();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    EMBER_CHECK_TYPE(t.defined(), "[compile] input {} is an undefined tensor", i);
    EMBER_CHECK(!state_->slot_of.count(t.storage().get()),
                "[compile] inputs {} shares memory with an earlier input (pass separate tensors)",
                i);
    Slot slot;
    slot.storage = t.storage();
    slot.kind = SlotKind::Input;
    slot.input = static_cast<int32_t>(i);
    state_->slot_of.emplace(t.storage().get(), static_cast<int32_t>(state_->rec.slots.size()));
    state_->rec.slots.push_back(std::move(slot));
  }
  t_state = state_;
  detail::g_active.fetch_add(1, std::memory_order_relaxed);
}

CaptureScope::~CaptureScope() {
  if (t_state == state_) t_state = nullptr;
  if (state_ != nullptr) detail::g_active.fetch_sub(1, std::memory_order_relaxed);
  delete state_;
}

Operand CaptureScope::operand_of(const Tensor& t) {
  Suppress quiet;
  Operand o = operand(*state_, t, false, state_->rec.steps.size());
  if (o.slot >= 0) {
    state_->rec.slots[static_cast<size_t>(o.slot)].last = state_->rec.steps.size();
  }
  return o;
}

Recording CaptureScope::finish() {
  if (t_state == state_) t_state = nullptr;
  return std::move(state_->rec);
}

bool capturing() {
  return t_state != nullptr;
}

void refuse(std::string_view why) {
  CaptureScope::State* st = t_state;
  if (st == nullptr) return;
  if (st->rec.refused.empty()) st->rec.refused = why;
  const int32_t region = st->open.empty() ? -1 : st->open.back();
  if (st->rec.refusals.empty() || st->rec.refusals.back().region != region) {
    st->rec.refusals.push_back({std::string(why), region});
  }
}

Composite::Composite(std::string_view op, std::initializer_list<const Tensor*> inputs,
                     std::vector<int64_t> ints, std::vector<double> floats) {
  CaptureScope::State* st = t_state;
  if (st == nullptr) return;
  Suppress quiet;  // reading the operands is no host access
  const size_t at = st->rec.steps.size();
  Region r;
  r.op = std::string(op);
  for (const Tensor* t : inputs) {
    r.inputs.push_back(t == nullptr ? Operand() : operand(*st, *t, false, at));
  }
  r.ints = std::move(ints);
  r.floats = std::move(floats);
  r.begin = r.end = at;
  r.parent = st->open.empty() ? -1 : st->open.back();
  index_ = static_cast<int32_t>(st->rec.regions.size());
  st->rec.regions.push_back(std::move(r));
  st->open.push_back(index_);
  state_ = st;
}

void Composite::finish(std::initializer_list<const Tensor*> outputs) {
  auto* st = static_cast<CaptureScope::State*>(state_);
  if (st == nullptr || st != t_state || index_ < 0) return;
  Suppress quiet;
  Region& r = st->rec.regions[static_cast<size_t>(index_)];
  const size_t at = st->rec.steps.size();
  r.outputs.clear();
  for (const Tensor* t : outputs) {
    r.outputs.push_back(t == nullptr ? Operand() : operand(*st, *t, false, at));
  }
  r.end = at;
  r.complete = true;
}

Composite::~Composite() {
  auto* st = static_cast<CaptureScope::State*>(state_);
  if (st == nullptr || st != t_state || index_ < 0) return;
  Region& r = st->rec.regions[static_cast<size_t>(index_)];
  if (!r.complete) r.end = st->rec.steps.size();
  auto it = std::find(st->open.begin(), st->open.end(), index_);
  if (it != st->open.end()) st->open.erase(it);
}

Suppress::Suppress() : saved_(t_state) {
  t_state = nullptr;
}
Suppress::~Suppress() {
  t_state = static_cast<CaptureScope::State*>(saved_);
}

void detail::on_kernel(const Op& op, DType dtype, std::span<const Tensor* const> inputs,
                       std::span<const Tensor* const> outputs, KernelAttrs attrs) {
  CaptureScope::State* st = t_state;
  if (st == nullptr) return;
  const Tensor* first = !outputs.empty() ? outputs[0] : inputs[0];
  if (!st->device_set) {
    st->rec.device = first->device();
    st->device_set = true;
  } else if (first->device() != st->rec.device) {
    refuse(fmt::format("[compile] kernels ran on {} and {}: a capture runs on one device",
                       st->rec.device.str(), first->device().str()));
  }
  const size_t index = st->rec.steps.size();
  Step step;
  step.op = &op;
  step.dtype = dtype;
  for (const Tensor* t : inputs) step.inputs.push_back(operand(*st, *t, false, index));
  for (const Tensor* t : outputs) step.outputs.push_back(operand(*st, *t, true, index));
  step.ints.assign(attrs.ints.begin(), attrs.ints.end());
  step.floats.assign(attrs.floats.begin(), attrs.floats.end());
  st->rec.steps.push_back(std::move(step));
}

// Note [Host reads in a capture]
// Host code reaches a tensor's values through Tensor::data_ptr (item(), printing, NumPy, the
// core's own checks: an index's bounds, a division by an integer zero), which calls here while a
// capture records. Taking the address of a storage the function made and no kernel wrote yet is
// host code filling it: the slot is a Constant, kept as captured. Any other access may read
// values that decide what the function does next (`if x.sum() > 0`, a bounds check): its bytes
// become a guard, which a replay compares at the same point and, when they differ, abandons the
// replay for the function itself. A device tensor's address (a copy's) reads nothing here. A
// check whose failure the kernel after it raises too (embedding's bounds before index_select's
// own) reads under Suppress: it decides nothing, and a guard would only stop an export (which
// refuses any) or make a replay with other indices fall back to the function.
void detail::on_host_access(const Tensor& t) {
  CaptureScope::State* st = t_state;
  if (st == nullptr || !t.defined() || !t.storage() ||
      device_type(t.device().type).table.host_accessible == 0)
    return;
  const StorageImpl* s = t.storage().get();
  auto it = st->slot_of.find(s);
  const size_t after = st->rec.steps.size();
  if (it == st->slot_of.end() && s->id() > st->marker) {
    slot_for(*st, t, false, after);  // host code filling its own new tensor
    return;
  }
  if (it != st->slot_of.end() &&
      st->rec.slots[static_cast<size_t>(it->second)].kind == SlotKind::Constant) {
    return;
  }
  Suppress quiet;
  Guard g;
  g.after = after;
  g.value = operand(*st, t, false, after == 0 ? 0 : after - 1);
  g.region = st->open.empty() ? -1 : st->open.back();
  const Tensor dense = t.contiguous();
  g.bytes.resize(dense.nbytes());
  if (!g.bytes.empty()) std::memcpy(g.bytes.data(), dense.impl()->data(), g.bytes.size());
  st->rec.guards.push_back(std::move(g));
}

}  // namespace ember::capture
