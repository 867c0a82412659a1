// Recording: ranges begun and ended on each thread, kept in per-thread buffers, collected and
// put in order when the profiler stops.
#include "ember/profiler/profiler.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "core/autograd/profiled.h"
#include "core/dispatch/profiled.h"
#include "core/profiler/report.h"
#include "core/util/file_writer.h"
#include "ember/autograd/node.h"
#include "ember/dispatch/device_registry.h"
#include "ember/dispatch/stream.h"
#include "ember/util/enum_name.h"
#include "ember/util/error.h"

namespace ember::profiler {
namespace detail {

std::atomic<bool> g_enabled{false};

// Note [Device time in the host's time base]
// A kernel on a device with timing events runs between two events recorded on its stream just
// before and just after the call; their elapsed time is the kernel's device time. To place it on
// the host's timeline, each thread keeps, per (device, stream) and profile, a base: the stream is
// synchronized (so it is idle), an event is recorded there and the host clock read at once. A
// kernel's device start is then the base's host time plus the elapsed time from the base to its
// start event. Everything is resolved in stop(), which waits for each end event; no device time
// is asked for while ops run. A device whose events fail leaves its kernels untimed on the
// device, never failing the op. Bases are shared by the timings that use them and die with the
// last one, so nothing of the backend's outlives the profile.
/** A stream's anchor on the host's clock (Note [Device time in the host's time base]). */
struct StreamBase {
  Event event;
  int64_t host_ns = 0;
};

/** The events around one kernel, and its stream's base. */
struct DeviceTiming {
  Event start;
  Event end;
  std::shared_ptr<StreamBase> base;
};

/** A range from begin_* to end_range: what is known of it so far. */
struct PendingEvent {
  Category category = Category::Op;
  uint64_t session = 0;
  uint64_t seq = 0;     // this thread's count of ranges begun, this one included
  uint64_t parent = 0;  // seq of the range open on this thread when this one began (0: none)
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint64_t allocated = 0;  // the thread's counter at begin; the difference after end
  uint64_t freed = 0;
  std::string name;        // or, for a kernel, made in stop() from:
  const Op* op = nullptr;  // the kernel's op (ops live as long as the process)
  std::vector<Shape> shapes;
  std::optional<DType> dtype;
  std::optional<Device> device;
  uint64_t stream = 0;
  std::string forward_op;
  std::unique_ptr<DeviceTiming> timing;
};

}  // namespace detail

namespace {

using detail::DeviceTiming;
using detail::PendingEvent;
using detail::StreamBase;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint64_t os_thread_id() {
  static thread_local const uint64_t id = static_cast<uint64_t>(::gettid());
  return id;
}

// Note [Per-thread event buffers]
// A range is ended and kept by the thread that ran it, without a lock: each thread appends to
// its own buffer, a list of fixed-size chunks of pointers whose fill count is published with a
// release store after the slot is written. stop() flips the flag, takes the session's list of
// buffers under the mutex and reads each chunk up to its published count (acquire), so it sees
// whole events only; a slot it took is never written again by the owner. A thread takes the
// mutex once per profile, to register its buffer with the first range it ends; a range whose
// profile stopped before it ended (its session is no longer current) is dropped. stop() reads
// the clock before the flag goes down and keeps only the ranges that ended by then: one that
// ended later may have allocated unobserved. A range kept after stop() read the buffer is freed
// with it, when the thread next records or exits.
struct Chunk {
  static constexpr size_t kCapacity = 1024;
  PendingEvent* events[kCapacity];
  std::atomic<size_t> size{0};
  std::atomic<Chunk*> next{nullptr};
};

class ThreadBuffer {
 public:
  explicit ThreadBuffer(uint64_t session) : session_(session), thread_(os_thread_id()) {}
  ~ThreadBuffer() {
    for (Chunk* c = &head_; c != nullptr;) {
      const size_t n = c->size.load(std::memory_order_acquire);
      for (size_t i = 0; i < n; ++i) delete c->events[i];
      Chunk* next = c->next.load(std::memory_order_acquire);
      if (c != &head_) delete c;
      c = next;
    }
  }
  ThreadBuffer(const ThreadBuffer&) = delete;
  ThreadBuffer& operator=(const ThreadBuffer&) = delete;

  uint64_t session() const { return session_; }
  uint64_t thread() const { return thread_; }

  /** Appends `e` (owner thread only); takes ownership. */
  void push(PendingEvent* e) {
    size_t n = tail_->size.load(std::memory_order_relaxed);
    if (n == Chunk::kCapacity) {
      auto* c = new Chunk;
      tail_->next.store(c, std::memory_order_release);
      tail_ = c;
      n = 0;
    }
    tail_->events[n] = e;
    tail_->size.store(n + 1, std::memory_order_release);
  }

  /** Moves every published event into `out` (the collector only). */
  void take(std::vector<std::pair<uint64_t, std::unique_ptr<PendingEvent>>>& out) {
    for (Chunk* c = &head_; c != nullptr; c = c->next.load(std::memory_order_acquire)) {
      const size_t n = c->size.load(std::memory_order_acquire);
      for (size_t i = 0; i < n; ++i) {
        if (c->events[i] != nullptr) {
          out.emplace_back(thread_, std::exchange(c->events[i], nullptr));
        }
      }
    }
  }

 private:
  const uint64_t session_;
  const uint64_t thread_;
  Chunk head_;
  Chunk* tail_ = &head_;
};

std::mutex g_mu;  // guards the three below
// Of the running profile; never destroyed: threads may record while the process exits (Note
// [Op registries outlive exit] in core/dispatch/op.cpp).
std::vector<std::shared_ptr<ThreadBuffer>>& g_buffers =
    *new std::vector<std::shared_ptr<ThreadBuffer>>();
const Profiler* g_owner = nullptr;   // the running profiler
uint64_t g_last_session = 0;         // sessions ever started
std::atomic<uint64_t> g_session{0};  // the running one, 0 when none
std::atomic<bool> g_record_shapes{true};
std::atomic<bool> g_profile_memory{true};
std::atomic<bool> g_device_timing{true};

thread_local std::shared_ptr<ThreadBuffer> t_buffer;
thread_local uint64_t t_seq = 0;   // ranges ever begun on this thread
thread_local uint64_t t_open = 0;  // seq of the innermost open range, 0 for none
thread_local uint64_t t_allocated = 0;
thread_local uint64_t t_freed = 0;

/** This thread's stream bases of one session (Note [Device time in the host's time base]). */
struct ThreadBases {
  uint64_t session = 0;
  std::vector<std::tuple<Device, void*, std::weak_ptr<StreamBase>>> bases;
};
thread_local ThreadBases t_bases;

// A new range of this thread, or null if no profile is running; begin_* fill it, then start().
PendingEvent* begin(Category category) {
  if (!detail::g_enabled.load(std::memory_order_acquire)) return nullptr;
  const uint64_t session = g_session.load(std::memory_order_relaxed);
  if (session == 0) return nullptr;
  auto* e = new PendingEvent;
  e->category = category;
  e->session = session;
  e->seq = ++t_seq;
  e->parent = std::exchange(t_open, e->seq);
  return e;
}

// Undoes begin() for a range that could not be described.
void abandon(PendingEvent* e) {
  t_open = e->parent;
  delete e;
}

// The clock and counters last, so the bookkeeping stays outside the range.
void start(PendingEvent* e) {
  e->allocated = t_allocated;
  e->freed = t_freed;
  e->start_ns = now_ns();
}

void describe_inputs(PendingEvent* e, const Tensor* const* inputs, size_t n) {
  const bool shapes = g_record_shapes.load(std::memory_order_relaxed);
  if (shapes) e->shapes.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor* t = inputs[i];
    const bool defined = t != nullptr && t->defined();
    if (shapes) e->shapes.push_back(defined ? t->sizes() : Shape());
    if (defined && !e->dtype) {
      e->dtype = t->dtype();
      e->device = t->device();
    }
  }
}

void keep(PendingEvent* e) noexcept {
  try {
    ThreadBuffer* b = t_buffer.get();
    if (b == nullptr || b->session() != e->session) {
      std::lock_guard lock(g_mu);
      if (g_session.load(std::memory_order_relaxed) != e->session) {
        delete e;  // its profile stopped before it ended
        return;
      }
      t_buffer = std::make_shared<ThreadBuffer>(e->session);
      g_buffers.push_back(t_buffer);
      b = t_buffer.get();
    }
    b->push(e);
  } catch (...) {  // out of memory for a chunk: lose the event, never the op
    delete e;
  }
}

std::shared_ptr<StreamBase> base_of(const Stream& stream, uint64_t session) {
  if (t_bases.session != session) t_bases = ThreadBases{session, {}};
  for (auto& [device, handle, weak] : t_bases.bases) {
    if (device == stream.device() && handle == stream.handle()) {
      if (auto b = weak.lock()) return b;
    }
  }
  stream.synchronize();
  auto b = std::make_shared<StreamBase>(StreamBase{Event(stream.device(), true), 0});
  b->event.record(stream);
  b->host_ns = now_ns();
  for (auto& [device, handle, weak] : t_bases.bases) {
    if (device == stream.device() && handle == stream.handle()) {
      weak = b;
      return b;
    }
  }
  t_bases.bases.emplace_back(stream.device(), stream.handle(), b);
  return b;
}

// Events around a kernel on `device`'s `stream`, or null where the device type cannot time them.
std::unique_ptr<DeviceTiming> device_timing(Device device, void* stream, uint64_t session) {
  if (device.type == kCpuType || !g_device_timing.load(std::memory_order_relaxed)) return nullptr;
  const ember_device_type_v1& t = device_type(device.type).table;
  if (!t.event_create || !t.event_destroy || !t.event_record || !t.event_query ||
      !t.event_synchronize || !t.event_elapsed_ms) {
    return nullptr;
  }
  try {
    const Stream s(device, stream);
    std::shared_ptr<StreamBase> base = base_of(s, session);
    return std::make_unique<DeviceTiming>(
        DeviceTiming{Event(device, true), Event(device, true), std::move(base)});
  } catch (const Error&) {
    return nullptr;  // the device's events failed: time this kernel on the host only
  }
}

bool record_event(Event& event, Device device, void* stream) {
  try {
    event.record(Stream(device, stream));
    return true;
  } catch (const Error&) {
    return false;
  }
}

// The device interval of a timed kernel, in ns since `t0`; false if the device cannot say.
bool resolve(DeviceTiming& timing, int64_t t0, int64_t* start, int64_t* end) {
  try {
    timing.end.synchronize();
    const double ms = timing.start.elapsed_ms(timing.end);
    const double offset_ms = timing.base->event.elapsed_ms(timing.start);
    *start = timing.base->host_ns - t0 + std::llround(offset_ms * 1e6);
    *end = *start + std::llround(ms * 1e6);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

namespace detail {

// Begins a range of `category` that `describe(e)` fills in; a throw from it abandons the range.
template <typename Describe>
PendingEvent* begin_described(Category category, Describe&& describe) {
  PendingEvent* e = begin(category);
  if (e == nullptr) return nullptr;
  try {
    describe(e);
  } catch (...) {
    abandon(e);
    throw;
  }
  start(e);
  return e;
}

PendingEvent* begin_op(const char* op, std::initializer_list<const Tensor*> inputs) {
  return begin_described(Category::Op, [&](PendingEvent* e) {
    e->name = op;
    describe_inputs(e, inputs.begin(), inputs.size());
  });
}

PendingEvent* begin_user_range(std::string_view name) {
  return begin_described(Category::UserRange, [&](PendingEvent* e) { e->name = name; });
}

PendingEvent* begin_backward(const autograd::Node& node, const std::vector<Tensor>& grads) {
  return begin_described(Category::Backward, [&](PendingEvent* e) {
    e->name = node.name();
    e->forward_op = node.forward_op;
    std::vector<const Tensor*> inputs;
    inputs.reserve(grads.size());
    for (const Tensor& g : grads) inputs.push_back(&g);
    describe_inputs(e, inputs.data(), inputs.size());
  });
}

void end_range(PendingEvent* e) noexcept {
  e->end_ns = now_ns();
  e->allocated = t_allocated - e->allocated;
  e->freed = t_freed - e->freed;
  t_open = e->parent;
  keep(e);
}

int32_t run_kernel_profiled(const Op& op, DType dtype, Device device, ember_kernel_fn fn,
                            const ember_kernel_call& call) {
  PendingEvent* e = begin_described(Category::Kernel, [&](PendingEvent* ev) {
    ev->op = &op;  // named in stop(), out of the timed path
    if (g_record_shapes.load(std::memory_order_relaxed)) {
      for (int32_t i = 0; i < call.num_inputs; ++i) {
        const ember_tensor& t = call.inputs[i];
        ev->shapes.emplace_back(IntList(t.sizes, static_cast<size_t>(t.ndim)));
      }
    }
    ev->dtype = dtype;
    ev->device = device;
    ev->stream = reinterpret_cast<uintptr_t>(call.stream);
    ev->timing = device_timing(device, call.stream, ev->session);
  });
  if (e == nullptr) return fn(&call);
  if (e->timing && !record_event(e->timing->start, device, call.stream)) e->timing.reset();
  const int32_t status = fn(&call);
  if (e->timing && !record_event(e->timing->end, device, call.stream)) e->timing.reset();
  end_range(e);
  return status;
}

void count_allocated(size_t bytes) {
  if (g_profile_memory.load(std::memory_order_relaxed)) t_allocated += bytes;
}

void count_freed(size_t bytes) {
  if (g_profile_memory.load(std::memory_order_relaxed)) t_freed += bytes;
}

}  // namespace detail

const char* category_name(Category category) {
  static constexpr const char* kNames[] = {"cpu_op", "kernel", "backward", "user_annotation"};
  return enum_name<Category::UserRange>(category, kNames, "unknown");
}

struct Profiler::State {
  ProfilerOptions options;
  bool running = false;  // guarded by g_mu
  uint64_t session = 0;
  int64_t t0 = 0;
  std::vector<EventRecord> events;
};

Profiler::Profiler(ProfilerOptions options) : state_(std::make_unique<State>()) {
  state_->options = options;
}

Profiler::~Profiler() {
  try {
    stop();
  } catch (...) {  // a destructor never throws; the events are lost with the profiler anyway
  }
}

void Profiler::start() {
  std::lock_guard lock(g_mu);
  EMBER_CHECK(g_owner == nullptr,
              "[profiler.start] a profiler is already recording{}: one profiler records at a "
              "time (stop it first)",
              g_owner == this ? " (this one)" : "");
  state_->events.clear();
  state_->running = true;
  state_->session = ++g_last_session;
  g_owner = this;
  g_record_shapes.store(state_->options.record_shapes, std::memory_order_relaxed);
  g_profile_memory.store(state_->options.profile_memory, std::memory_order_relaxed);
  g_device_timing.store(state_->options.device_timing, std::memory_order_relaxed);
  state_->t0 = now_ns();
  g_session.store(state_->session, std::memory_order_relaxed);
  detail::g_enabled.store(true, std::memory_order_release);
}

void Profiler::stop() {
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  int64_t t_stop = 0;
  {
    std::lock_guard lock(g_mu);
    if (!state_->running) return;
    // Read before the flag goes down: a range that ended by then counted all its bytes.
    t_stop = now_ns();
    detail::g_enabled.store(false, std::memory_order_relaxed);
    g_session.store(0, std::memory_order_relaxed);
    g_owner = nullptr;
    buffers.swap(g_buffers);
    state_->running = false;
  }
  std::vector<std::pair<uint64_t, std::unique_ptr<PendingEvent>>> taken;
  for (const auto& b : buffers) b->take(taken);
  buffers.clear();
  // A range that ended after the flag went down may have run partly unobserved (bytes
  // uncounted, children dropped): the profile is what ended before stop().
  std::erase_if(taken, [t_stop](const auto& t) { return t.second->end_ns > t_stop; });

  // Host order: by start, then thread, then begin order (a range before the ranges inside it).
  std::sort(taken.begin(), taken.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second->start_ns, a.first, a.second->seq) <
           std::tie(b.second->start_ns, b.first, b.second->seq);
  });
  struct Hash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& k) const {
      return std::hash<uint64_t>()(k.first * 0x9E3779B97F4A7C15ull ^ k.second);
    }
  };
  std::unordered_map<std::pair<uint64_t, uint64_t>, int64_t, Hash> index;  // (thread, seq) -> i
  index.reserve(taken.size());
  for (size_t i = 0; i < taken.size(); ++i) {
    index[{taken[i].first, taken[i].second->seq}] = static_cast<int64_t>(i);
  }
  const int64_t t0 = state_->t0;
  std::map<std::pair<const Op*, int16_t>, std::string> kernel_names;  // "cpu::add"
  std::vector<EventRecord>& out = state_->events;
  out.clear();
  out.reserve(taken.size());
  for (auto& [thread, e] : taken) {
    EventRecord r;
    if (e->op != nullptr) {
      auto [it, fresh] = kernel_names.try_emplace({e->op, e->device->type});
      if (fresh) it->second = fmt::format("{}::{}", e->device->type_name(), e->op->name());
      r.name = it->second;
    } else {
      r.name = std::move(e->name);
    }
    r.category = e->category;
    r.thread = thread;
    r.start_ns = e->start_ns - t0;
    r.end_ns = e->end_ns - t0;
    r.input_shapes = std::move(e->shapes);
    r.dtype = e->dtype;
    r.device = e->device;
    r.stream = e->stream;
    r.forward_op = std::move(e->forward_op);
    r.bytes_allocated = static_cast<int64_t>(e->allocated);
    r.bytes_freed = static_cast<int64_t>(e->freed);
    if (e->timing) {
      r.has_device_time = resolve(*e->timing, t0, &r.device_start_ns, &r.device_end_ns);
      e->timing.reset();  // the backend's events go back now (their bases with the last one)
    }
    if (auto it = index.find({thread, e->parent}); e->parent != 0 && it != index.end()) {
      r.parent = it->second;
    }
    out.push_back(std::move(r));
  }
  taken.clear();
  // Self and device totals: a range comes after its parent, so one backward pass sums them.
  std::vector<int64_t> inside(out.size(), 0);
  for (size_t i = out.size(); i-- > 0;) {
    EventRecord& r = out[i];
    r.device_total_ns += r.device_ns();
    r.self_ns = std::max<int64_t>(0, r.duration_ns() - inside[i]);
    if (r.parent >= 0) {
      inside[static_cast<size_t>(r.parent)] += r.duration_ns();
      out[static_cast<size_t>(r.parent)].device_total_ns += r.device_total_ns;
    }
  }
}

bool Profiler::running() const {
  std::lock_guard lock(g_mu);
  return state_->running;
}

const std::vector<EventRecord>& Profiler::events() const {
  EMBER_CHECK(!running(), "[profiler.events] the profiler is still recording (call stop() first)");
  return state_->events;
}

KeyAverages Profiler::key_averages(bool group_by_input_shapes) const {
  EMBER_CHECK(!running(),
              "[profiler.key_averages] the profiler is still recording (call stop() first)");
  return detail::make_key_averages(state_->events, group_by_input_shapes,
                                   state_->options.profile_memory);
}

std::string Profiler::chrome_trace() const {
  EMBER_CHECK(!running(),
              "[profiler.chrome_trace] the profiler is still recording (call stop() first)");
  return detail::make_chrome_trace(state_->events);
}

void Profiler::export_chrome_trace(const std::string& path) const {
  EMBER_CHECK(!running(),
              "[profiler.export_chrome_trace] the profiler is still recording (call stop() "
              "first)");
  ember::detail::write_file(path, detail::make_chrome_trace(state_->events),
                            "profiler.export_chrome_trace");
}

}  // namespace ember::profiler
