// The profiler, as torch.profiler: while it runs, every public op, kernel call, backward node and
// user range of every thread is recorded with its inputs' shapes, dtype, device, stream, times
// and the storage bytes it allocated and freed; kernels on devices with timing events are also
// timed on the device. Afterwards: the events, a Chrome trace, and per-name totals as a table.
//
//   profiler::Profiler prof;
//   prof.start();
//   ... ops, backward ...
//   prof.stop();
//   prof.export_chrome_trace("trace.json");  // chrome://tracing, ui.perfetto.dev
//   fmt::print("{}", prof.key_averages().table(profiler::SortBy::SelfCpuTotal, 10));
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ember/profiler/record_function.h"
#include "ember/tensor/device.h"
#include "ember/tensor/dtype.h"
#include "ember/tensor/shape.h"
#include "ember/util/export.h"

namespace ember::profiler {

/** What a recorded range is. */
enum class Category {
  /** A public op (autograd::differentiable's range): "cpu_op" in the trace. */
  Op,
  /** A kernel call on the host (run_kernel), named "<device type>::<op>": "kernel". */
  Kernel,
  /** An autograd node run by backward ("MulBackward"): "backward". */
  Backward,
  /** A RecordFunction: "user_annotation". */
  UserRange
};

/** The Chrome trace's "cat" of a category: "cpu_op", "kernel", "backward", "user_annotation". */
EMBER_API const char* category_name(Category category);

/** What a Profiler records besides names and times. */
struct ProfilerOptions {
  /** Keep the shapes of each range's inputs (PyTorch's record_shapes). */
  bool record_shapes = true;
  /** Count the storage bytes allocated and freed in each range (PyTorch's profile_memory). */
  bool profile_memory = true;
  /** Time kernels on devices that have timing events, with an event pair around each. */
  bool device_timing = true;
};

/** One recorded range, as Profiler::events() returns it. Times are nanoseconds since start(). */
struct EventRecord {
  /** The op ("add"), kernel ("cpu::add"), node ("AddBackward") or user range name. */
  std::string name;
  /** What the range is. */
  Category category = Category::Op;
  /** The operating system's id of the thread that ran it. */
  uint64_t thread = 0;
  /** Host start, ns since Profiler::start. */
  int64_t start_ns = 0;
  /** Host end, ns since Profiler::start. */
  int64_t end_ns = 0;
  /** Shapes of the inputs (incoming gradients for a backward node); an undefined input is an
   *  empty shape. Empty with record_shapes off. */
  std::vector<Shape> input_shapes;
  /** The kernel's dtype, or the first defined input's; none for a user range. */
  std::optional<DType> dtype;
  /** The kernel's device, or the first defined input's; none for a user range. */
  std::optional<Device> device;
  /** The backend's handle of the stream a kernel was queued on, as an integer (0: the device
   *  has no streams, as the CPU, or the range is not a kernel). */
  uint64_t stream = 0;
  /** For a backward node, the forward op that recorded it ("mul"). */
  std::string forward_op;
  /** Storage bytes Ember allocated on this thread during the range, nested ranges included. */
  int64_t bytes_allocated = 0;
  /** Storage bytes freed on this thread during the range, nested ranges included. */
  int64_t bytes_freed = 0;
  /** True for a kernel timed on its device. */
  bool has_device_time = false;
  /** The kernel's interval on the device, in the host's time base (valid with has_device_time). */
  int64_t device_start_ns = 0;
  /** End of the device interval. */
  int64_t device_end_ns = 0;
  /** Index in Profiler::events() of the range this one ran inside (same thread), -1 for none. */
  int64_t parent = -1;
  /** Host time minus the host time of the ranges directly inside it. */
  int64_t self_ns = 0;
  /** Device time of this kernel plus that of every range inside it. */
  int64_t device_total_ns = 0;

  /** Host duration. */
  int64_t duration_ns() const { return end_ns - start_ns; }
  /** Device duration of this kernel alone (0 if not timed on a device). */
  int64_t device_ns() const { return has_device_time ? device_end_ns - device_start_ns : 0; }
};

/** Totals of the events of one name (and input shapes, if grouped so): a row of the table.
 *  Times in nanoseconds; "self" excludes the ranges nested inside, as in PyTorch. */
struct KeyAverage {
  /** The events' name. */
  std::string name;
  /** Their category (of the first one seen). */
  Category category = Category::Op;
  /** Their input shapes, "[[2, 3], [3]]", when grouped by input shapes; else empty. */
  std::string input_shapes;
  /** Number of events. */
  int64_t count = 0;
  /** Host time, nested ranges included. */
  int64_t cpu_total_ns = 0;
  /** Host time minus that of the ranges directly inside. */
  int64_t self_cpu_ns = 0;
  /** Device time of the kernels inside (or of the kernel itself). */
  int64_t device_total_ns = 0;
  /** Device time of the events themselves (kernels only). */
  int64_t self_device_ns = 0;
  /** Storage bytes allocated, nested ranges included. */
  int64_t bytes_allocated = 0;
  /** Storage bytes freed, nested ranges included. */
  int64_t bytes_freed = 0;
  /** Storage bytes allocated by the events themselves, not by ranges inside them. */
  int64_t self_bytes_allocated = 0;
  /** Storage bytes freed by the events themselves. */
  int64_t self_bytes_freed = 0;
};

/** The column a table is sorted by, largest first. */
enum class SortBy {
  /** Host time of the events themselves (PyTorch's "self_cpu_time_total"). */
  SelfCpuTotal,
  /** Host time, nested ranges included ("cpu_time_total"). */
  CpuTotal,
  /** Device time of the kernels themselves ("self_cuda_time_total"). */
  SelfDeviceTotal,
  /** Device time, nested kernels included ("cuda_time_total"). */
  DeviceTotal,
  /** Number of calls. */
  Count,
  /** Net bytes (allocated - freed) of the events themselves ("self_cpu_memory_usage"). */
  SelfMemory
};

/** Per-name totals of a profile, as prof.key_averages() in PyTorch. */
struct EMBER_API KeyAverages {
  /** One row per name (and input shapes), in the order the names first ran. */
  std::vector<KeyAverage> rows;
  /** Self host time of all events: the host time profiled, summed over threads. */
  int64_t self_cpu_total_ns = 0;
  /** Self device time of all events. */
  int64_t self_device_total_ns = 0;
  /** Show the device columns (some kernel ran on a device with timing events). */
  bool has_device_time = false;
  /** Show the memory columns (the profile counted bytes). */
  bool has_memory = false;

  /** The row named `name` (the first, when grouped by input shapes), or null. */
  const KeyAverage* find(std::string_view name) const;
  /** The rows sorted by `by`, largest first; ties by name. */
  std::vector<KeyAverage> sorted(SortBy by) const;
  /** The rows as a text table (PyTorch's layout): the `row_limit` first rows sorted by
   *  `sort_by` (all if negative), then the self time totals. */
  std::string table(SortBy sort_by = SortBy::SelfCpuTotal, int64_t row_limit = -1) const;
};

/** Records the ops of every thread between start() and stop() (one Profiler at a time). */
class EMBER_API Profiler {
 public:
  /** A stopped profiler recording what `options` ask for once started. */
  explicit Profiler(ProfilerOptions options = {});
  /** Stops it if it is running. */
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  /** Starts recording, dropping what an earlier run recorded; throws ValueError if any
   *  profiler is already recording. */
  void start();
  /** Stops recording, collects every thread's events and resolves device times (waits for
   *  the timed kernels to complete); does nothing if not running. */
  void stop();
  /** True between start() and stop(). */
  bool running() const;
  /** The events of the last run, ordered by start time; throws ValueError while running. */
  const std::vector<EventRecord>& events() const;
  /** Per-name totals of the last run, optionally one row per (name, input shapes). */
  KeyAverages key_averages(bool group_by_input_shapes = false) const;
  /** The last run in the Chrome Trace Event Format (JSON text). */
  std::string chrome_trace() const;
  /** Writes chrome_trace() to `path`: a file atomically (a temporary beside it, renamed over
   *  it), a symlink's target, a FIFO or device written through; throws IoError if it cannot. */
  void export_chrome_trace(const std::string& path) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/** Runs a profiler from construction to destruction: `{ ProfileScope s(prof); ... }`. */
class ProfileScope {
 public:
  /** Starts `profiler`. */
  explicit ProfileScope(Profiler& profiler) : profiler_(profiler) { profiler_.start(); }
  /** Stops it (stop() throws only when out of memory; a destructor cannot). */
  ~ProfileScope() {
    try {
      profiler_.stop();
    } catch (...) {
    }
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  Profiler& profiler_;
};

}  // namespace ember::profiler
