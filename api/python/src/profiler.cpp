// ember._C.profiler: the C++ profiler (<ember/profiler/profiler.h>) and user ranges, with
// torch.profiler's names for what it reports. ember/profiler.py builds profile() and
// record_function on them. Times are in microseconds, as PyTorch reports them.
#include <thread>

#include <ember/profiler/profiler.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/unique_ptr.h>

#include "bind.h"

namespace ember::python {
namespace {

namespace prof = ember::profiler;

/** Nanoseconds as PyTorch's microseconds. */
double us(int64_t ns) {
  return static_cast<double>(ns) / 1e3;
}

/** Input shapes as a list of lists of ints. */
nb::list shapes_list(const std::vector<Shape>& shapes) {
  nb::list out;
  for (const Shape& s : shapes) out.append(nb::cast(std::vector<int64_t>(s.begin(), s.end())));
  return out;
}

/** One event of a stopped profile: its index into the profile's events, which it keeps alive. */
struct EventRef {
  std::shared_ptr<const std::vector<prof::EventRecord>> all;
  int64_t index = 0;
  const prof::EventRecord& get() const { return (*all)[static_cast<size_t>(index)]; }
};

/** A Profiler and, once stopped and asked for, a shared copy of its events. */
struct PyProfiler {
  explicit PyProfiler(prof::ProfilerOptions options) : profiler(options) {}
  const std::shared_ptr<const std::vector<prof::EventRecord>>& events() {
    if (!cache) cache = std::make_shared<const std::vector<prof::EventRecord>>(profiler.events());
    return cache;
  }
  prof::Profiler profiler;
  std::shared_ptr<const std::vector<prof::EventRecord>> cache;
};

prof::SortBy parse_sort_by(std::string_view key) {
  static constexpr std::pair<std::string_view, prof::SortBy> kKeys[] = {
      {"self_cpu_time_total", prof::SortBy::SelfCpuTotal},
      {"cpu_time_total", prof::SortBy::CpuTotal},
      {"self_cuda_time_total", prof::SortBy::SelfDeviceTotal},
      {"self_device_time_total", prof::SortBy::SelfDeviceTotal},
      {"cuda_time_total", prof::SortBy::DeviceTotal},
      {"device_time_total", prof::SortBy::DeviceTotal},
      {"count", prof::SortBy::Count},
      {"self_cpu_memory_usage", prof::SortBy::SelfMemory}};
  std::string known;
  for (const auto& [name, by] : kKeys) {
    if (name == key) return by;
    known += fmt::format("{}'{}'", known.empty() ? "" : ", ", name);
  }
  throw ValueError(
      fmt::format("[profiler.table] unknown sort_by '{}': expected one of {}", key, known));
}

// Note [User ranges from Python]
// A range is recorded on the thread that began it: ending it restores that thread's innermost
// open range, so it must end there too. record_function (ember/profiler.py) begins one per
// __enter__ and ends it in __exit__ on the same thread; a range ended from another thread is an
// error, and one dropped unended (an exception escaped between) is ended by its destructor when
// that runs on its thread, or else left unrecorded.
/** A user range begun from Python (Note [User ranges from Python]). */
class UserRange {
 public:
  UserRange(prof::detail::PendingEvent* event, std::string name)
      : event_(event), name_(std::move(name)), thread_(std::this_thread::get_id()) {}
  UserRange(const UserRange&) = delete;
  UserRange& operator=(const UserRange&) = delete;
  ~UserRange() {
    if (event_ && std::this_thread::get_id() == thread_) prof::detail::end_range(event_);
  }
  /** Ends the range (once; later calls do nothing). */
  void end() {
    if (!event_) return;
    EMBER_CHECK(std::this_thread::get_id() == thread_,
                "[profiler.record_function] range '{}' must end on the thread that began it",
                name_);
    prof::detail::end_range(std::exchange(event_, nullptr));
  }

 private:
  prof::detail::PendingEvent* event_;
  std::string name_;
  std::thread::id thread_;
};

}  // namespace

void bind_profiler(nb::module_& root) {
  nb::module_ m = root.def_submodule(
      "profiler", "The ops, kernels, backward nodes and user ranges of every thread, timed.");

  nb::class_<EventRef>(m, "FunctionEvent", "One recorded range of a stopped profile.")
      .def_prop_ro(
          "id", [](const EventRef& e) { return e.index; }, "Its index in events().")
      .def_prop_ro(
          "name", [](const EventRef& e) { return e.get().name; },
          "The op ('add'), kernel ('cpu::add'), backward node or user range name.")
      .def_prop_ro(
          "key", [](const EventRef& e) { return e.get().name; }, "The name.")
      .def_prop_ro(
          "category", [](const EventRef& e) { return prof::category_name(e.get().category); },
          "'cpu_op', 'kernel', 'backward' or 'user_annotation'.")
      .def_prop_ro(
          "thread", [](const EventRef& e) { return e.get().thread; },
          "The operating system's id of its thread (threading.get_native_id()).")
      .def_prop_ro(
          "start_us", [](const EventRef& e) { return us(e.get().start_ns); },
          "Start on the host, in us since the profile started.")
      .def_prop_ro(
          "end_us", [](const EventRef& e) { return us(e.get().end_ns); },
          "End on the host, in us since the profile started.")
      .def_prop_ro(
          "cpu_time_total", [](const EventRef& e) { return us(e.get().duration_ns()); },
          "Host time in us, nested ranges included.")
      .def_prop_ro(
          "self_cpu_time_total", [](const EventRef& e) { return us(e.get().self_ns); },
          "Host time in us minus that of the ranges directly inside.")
      .def_prop_ro(
          "device_time_total", [](const EventRef& e) { return us(e.get().device_total_ns); },
          "Device time in us of this kernel and the kernels inside.")
      .def_prop_ro(
          "self_device_time_total", [](const EventRef& e) { return us(e.get().device_ns()); },
          "Device time in us of this kernel alone.")
      .def_prop_ro(
          "cuda_time_total", [](const EventRef& e) { return us(e.get().device_total_ns); },
          "device_time_total (PyTorch's older name).")
      .def_prop_ro(
          "self_cuda_time_total", [](const EventRef& e) { return us(e.get().device_ns()); },
          "self_device_time_total (PyTorch's older name).")
      .def_prop_ro(
          "input_shapes", [](const EventRef& e) { return shapes_list(e.get().input_shapes); },
          "The shapes of its inputs (incoming gradients for a backward node).")
      .def_prop_ro(
          "dtype", [](const EventRef& e) { return e.get().dtype; },
          "The kernel's dtype, or its first input's; None for a user range.")
      .def_prop_ro(
          "device", [](const EventRef& e) { return e.get().device; },
          "The kernel's device, or its first input's; None for a user range.")
      .def_prop_ro(
          "stream", [](const EventRef& e) { return e.get().stream; },
          "The backend's handle of a kernel's stream (0: none).")
      .def_prop_ro(
          "forward_op", [](const EventRef& e) { return e.get().forward_op; },
          "For a backward node, the forward op that recorded it.")
      .def_prop_ro(
          "cpu_memory_usage",
          [](const EventRef& e) { return e.get().bytes_allocated - e.get().bytes_freed; },
          "Storage bytes allocated minus freed on its thread during the range.")
      .def_prop_ro(
          "count", [](const EventRef&) { return 1; }, "1 (as PyTorch's events).")
      .def_prop_ro(
          "cpu_parent",
          [](const EventRef& e) -> std::optional<EventRef> {
            if (e.get().parent < 0) return std::nullopt;
            return EventRef{e.all, e.get().parent};
          },
          "The range this one ran inside (on its thread), or None.")
      .def_prop_ro(
          "cpu_children",
          [](const EventRef& e) {
            std::vector<EventRef> out;
            for (size_t i = static_cast<size_t>(e.index) + 1; i < e.all->size(); ++i) {
              if ((*e.all)[i].parent == e.index) out.push_back({e.all, static_cast<int64_t>(i)});
            }
            return out;
          },
          "The ranges directly inside this one.")
      .def(
          "__repr__",
          [](const EventRef& e) {
            const prof::EventRecord& r = e.get();
            return fmt::format(
                "<FunctionEvent id={} name={} category={} cpu_time_total={:.3f}us "
                "self_cpu_time_total={:.3f}us thread={}>",
                e.index, r.name, prof::category_name(r.category), us(r.duration_ns()),
                us(r.self_ns), r.thread);
          },
          "Its name, category, times and thread.");

  nb::class_<prof::KeyAverage>(m, "FunctionEventAvg",
                               "Totals of the events of one name (and input shapes): a table row.")
      .def_ro("key", &prof::KeyAverage::name, "The events' name.")
      .def_ro("count", &prof::KeyAverage::count, "Number of events.")
      .def_prop_ro(
          "category", [](const prof::KeyAverage& r) { return prof::category_name(r.category); },
          "The category of the first of them.")
      .def_prop_ro(
          "input_shapes",
          [](const prof::KeyAverage& r) -> nb::object {
            if (r.input_shapes.empty()) return nb::none();
            return nb::module_::import_("json").attr("loads")(r.input_shapes);
          },
          "Their input shapes when grouped by input shape, else None.")
      .def_prop_ro(
          "cpu_time_total", [](const prof::KeyAverage& r) { return us(r.cpu_total_ns); },
          "Host time in us, nested ranges included.")
      .def_prop_ro(
          "self_cpu_time_total", [](const prof::KeyAverage& r) { return us(r.self_cpu_ns); },
          "Host time in us minus the ranges directly inside.")
      .def_prop_ro(
          "cpu_time",
          [](const prof::KeyAverage& r) { return r.count ? us(r.cpu_total_ns) / r.count : 0.0; },
          "Average host time per event, in us.")
      .def_prop_ro(
          "device_time_total", [](const prof::KeyAverage& r) { return us(r.device_total_ns); },
          "Device time in us of the kernels inside (or of the kernels themselves).")
      .def_prop_ro(
          "self_device_time_total", [](const prof::KeyAverage& r) { return us(r.self_device_ns); },
          "Device time in us of the events themselves.")
      .def_prop_ro(
          "cuda_time_total", [](const prof::KeyAverage& r) { return us(r.device_total_ns); },
          "device_time_total (PyTorch's older name).")
      .def_prop_ro(
          "self_cuda_time_total", [](const prof::KeyAverage& r) { return us(r.self_device_ns); },
          "self_device_time_total (PyTorch's older name).")
      .def_prop_ro(
          "cpu_memory_usage",
          [](const prof::KeyAverage& r) { return r.bytes_allocated - r.bytes_freed; },
          "Storage bytes allocated minus freed, nested ranges included.")
      .def_prop_ro(
          "self_cpu_memory_usage",
          [](const prof::KeyAverage& r) { return r.self_bytes_allocated - r.self_bytes_freed; },
          "Storage bytes allocated minus freed by the events themselves.")
      .def(
          "__repr__",
          [](const prof::KeyAverage& r) {
            return fmt::format(
                "<FunctionEventAvg key={} count={} cpu_time_total={:.3f}us "
                "self_cpu_time_total={:.3f}us>",
                r.name, r.count, us(r.cpu_total_ns), us(r.self_cpu_ns));
          },
          "Its key, count and times.");

  nb::class_<prof::KeyAverages>(m, "KeyAverages", "Per-name totals of a stopped profile.")
      .def_ro("rows", &prof::KeyAverages::rows, "One row per name, in the order names first ran.")
      .def_prop_ro(
          "self_cpu_time_total", [](const prof::KeyAverages& k) { return us(k.self_cpu_total_ns); },
          "Self host time of all events, in us.")
      .def(
          "table",
          [](const prof::KeyAverages& k, std::string_view sort_by, int64_t row_limit) {
            return k.table(parse_sort_by(sort_by), row_limit);
          },
          "sort_by"_a = "self_cpu_time_total", "row_limit"_a = -1,
          "The rows as PyTorch's text table, sorted by `sort_by`, the first `row_limit` (all if "
          "negative).");

  nb::class_<PyProfiler>(m, "Profiler",
                         "Records the ops of every thread between start() and stop() (one at a "
                         "time).")
      .def(
          "__init__",
          [](PyProfiler* self, bool record_shapes, bool profile_memory, bool device_timing) {
            new (self) PyProfiler({.record_shapes = record_shapes,
                                   .profile_memory = profile_memory,
                                   .device_timing = device_timing});
          },
          "record_shapes"_a = true, "profile_memory"_a = true, "device_timing"_a = true,
          "A stopped profiler recording input shapes, storage bytes and device times as asked.")
      .def(
          "start",
          [](PyProfiler& p) {
            p.cache.reset();
            p.profiler.start();
          },
          release_gil(),
          "Starts recording, dropping the last run; ValueError if a profiler already records.")
      .def(
          "stop", [](PyProfiler& p) { p.profiler.stop(); }, release_gil(),
          "Stops recording and collects the events (waits for timed device kernels).")
      .def_prop_ro(
          "running", [](const PyProfiler& p) { return p.profiler.running(); },
          "True between start() and stop().")
      .def(
          "events",
          [](PyProfiler& p) {
            const auto& all = p.events();
            std::vector<EventRef> out;
            out.reserve(all->size());
            for (size_t i = 0; i < all->size(); ++i) out.push_back({all, static_cast<int64_t>(i)});
            return out;
          },
          "The events of the last run, by start time.")
      .def(
          "key_averages",
          [](const PyProfiler& p, bool group_by_input_shape) {
            return p.profiler.key_averages(group_by_input_shape);
          },
          "group_by_input_shape"_a = false, release_gil(),
          "Per-name totals of the last run, or per (name, input shapes).")
      .def(
          "chrome_trace", [](const PyProfiler& p) { return p.profiler.chrome_trace(); },
          release_gil(), "The last run in the Chrome Trace Event Format (JSON text).")
      .def(
          "export_chrome_trace",
          [](const PyProfiler& p, const std::filesystem::path& path) {
            p.profiler.export_chrome_trace(path.string());
          },
          "path"_a, release_gil(), "Writes the Chrome trace to `path` atomically.");

  nb::class_<UserRange>(m, "_UserRange", "A user range begun by record_function.")
      .def("end", &UserRange::end, "Ends the range (on the thread that began it).");
  m.def(
      "_begin_range",
      [](std::string name) -> std::unique_ptr<UserRange> {
        if (!prof::is_enabled()) return nullptr;
        prof::detail::PendingEvent* e = prof::detail::begin_user_range(name);
        if (e == nullptr) return nullptr;
        return std::make_unique<UserRange>(e, std::move(name));
      },
      "name"_a, "Begins a user range named `name`; None when no profiler records.");
  m.def("is_enabled", &prof::is_enabled, "True while a profiler records.");
}

}  // namespace ember::python
