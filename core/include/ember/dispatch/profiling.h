// What the profiler observes, declared below it: the one flag every recording place reads and the
// ranges of public ops and user code. The profiler (core/profiler/profiler.cpp) defines them; the
// dispatcher, autograd and the ops include this header, not the profiler's (ARCHITECTURE.md,
// "Layers"). Users reach it through <ember/profiler/record_function.h>.
#pragma once

#include <atomic>
#include <initializer_list>
#include <string_view>

#include "ember/util/export.h"

namespace ember {
class Tensor;
}

namespace ember::profiler {
namespace detail {

// Note [One branch when the profiler is off]
// Every place that records reads this flag once, relaxed, and branches on it: run_kernel (a
// kernel), autograd::differentiable (a public op), the engine's node loop (a backward node) and
// allocate_storage and its deleter (bytes). With no profiler running, that load and a branch
// predicted not taken are all the profiler costs (four instructions: the flag is exported, so
// it is reached through the GOT). Everything else (the clock, names, shapes, buffers, device
// events) is out of line behind the branch, and the hooks are written so the path without it
// compiles as before: differentiable's profiled body is a separate cold function, so the op's
// own path keeps the body inlined, and both exits of the storage deleter stay tail calls. The
// flag is only a hint: a range that begins while a profiler stops is kept or dropped whole by
// the session check behind it (Note [Per-thread event buffers] in core/profiler/profiler.cpp).
/** True while a Profiler records; read through is_enabled(). */
EMBER_API extern std::atomic<bool> g_enabled;

/** A range being recorded, from its begin_* to end_range (defined in the core only). */
struct PendingEvent;

/** Begins the range of public op `op` on `inputs`; null if no profiler records. */
EMBER_API PendingEvent* begin_op(const char* op, std::initializer_list<const Tensor*> inputs);
/** Begins a range named by user code; null if no profiler records. */
EMBER_API PendingEvent* begin_user_range(std::string_view name);
/** Ends a range on the thread that began it and keeps it (dropped if its profiler stopped). */
EMBER_API void end_range(PendingEvent* event) noexcept;

/** The range of one public op, around autograd::differentiable's body (made only when
 *  is_enabled() said yes, so the op's path costs one branch otherwise). */
class OpRange {
 public:
  /** Begins `op`'s range. */
  OpRange(const char* op, std::initializer_list<const Tensor*> inputs)
      : event_(begin_op(op, inputs)) {}
  /** Ends it. */
  ~OpRange() {
    if (event_) end_range(event_);
  }
  OpRange(const OpRange&) = delete;
  OpRange& operator=(const OpRange&) = delete;

 private:
  PendingEvent* event_;
};

}  // namespace detail

/** True while a Profiler records (the ops of every thread are recorded then). */
inline bool is_enabled() {
  return detail::g_enabled.load(std::memory_order_relaxed);
}

}  // namespace ember::profiler
