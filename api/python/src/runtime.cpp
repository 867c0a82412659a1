// ember.dtype, ember.device, ember.Generator, streams and events, and the runtime's questions:
// devices, plugins, threads, memory, backend options, seeds.
#include <array>
#include <random>

#include <nlohmann/json.hpp>

#include "bind.h"

namespace ember::python {
namespace {

std::array<nb::object, kNumDTypes> g_dtypes;  // the ember.dtype singletons, by DType value

nb::object json_to_python(const nlohmann::json& j) {
  nb::module_ json = nb::module_::import_("json");
  return json.attr("loads")(j.dump());
}

std::vector<Device> available_devices() {
  init();
  std::vector<Device> out;
  for (const DeviceTypeEntry& e : device_types()) {
    if (e.plugin == "core") continue;  // host memory without kernels, not a compute device
    const int16_t id = find_device_type(e.name);
    for (int32_t i = 0; i < e.count; ++i) out.emplace_back(id, static_cast<int16_t>(i));
  }
  return out;
}

int32_t device_count(std::string_view type) {
  init();
  const int16_t id = find_device_type(type);
  return id < 0 ? 0 : device_type(id).count;
}

std::string device_repr(const Device& d) {
  if (d.type == kCpuType) return "device(type='cpu')";
  return fmt::format("device(type='{}', index={})", d.type_name(), d.index);
}

}  // namespace

nb::object dtype_object(DType d) {
  return g_dtypes[static_cast<size_t>(d)];
}

Device device_from(nb::handle d) {
  if (PyLong_Check(d.ptr())) return Device(fmt::format("cuda:{}", nb::cast<int64_t>(d)));
  if (PyUnicode_Check(d.ptr())) return Device(nb::cast<std::string>(d));
  EMBER_CHECK_TYPE(nb::isinstance<Device>(d),
                   "[device] expected an ember.device, a string or an int, got {}",
                   nb::cast<std::string>(d.type().attr("__name__")));
  return *nb::inst_ptr<Device>(d);
}

void bind_runtime(nb::module_& m) {
  // The singletons below are released before the interpreter tears down (atexit runs first),
  // so nanobind's leak check at exit sees only real leaks.
  nb::module_::import_("atexit").attr("register")(nb::cpp_function([]() {
    for (nb::object& o : g_dtypes) o.reset();
  }));
  // ember.dtype: one object per element type, compared by identity as torch.dtype.
  nb::class_<DTypeObject>(m, "dtype", "An element type: ember.float32, ember.int64, ...")
      .def_prop_ro(
          "is_floating_point", [](const DTypeObject& d) { return is_floating(d.dtype); },
          "True for float16, bfloat16, float32 and float64.")
      .def_prop_ro(
          "is_signed",
          [](const DTypeObject& d) { return d.dtype != DType::UInt8 && d.dtype != DType::Bool; },
          "True unless the type is unsigned (uint8, bool).")
      .def_prop_ro(
          "itemsize", [](const DTypeObject& d) { return itemsize(d.dtype); }, "Bytes per element.")
      .def("__repr__",
           [](const DTypeObject& d) { return fmt::format("ember.{}", dtype_name(d.dtype)); })
      .def("__reduce__", [](const DTypeObject& d) {
        // ember._utils._rebuild_dtype(name), not a name in _C: bool has none there (below).
        return nb::make_tuple(nb::module_::import_("ember._utils").attr("_rebuild_dtype"),
                              nb::make_tuple(std::string(dtype_name(d.dtype))));
      });
  // The names that shadow Python's builtins (ember.float, ember.int, ember.bool) and the other
  // aliases are set by ember/__init__.py from _dtypes: in _C, and in its stubs, `bool` must stay
  // the builtin.
  nb::dict by_name;
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64,
                  DType::Int32, DType::Int8, DType::UInt8, DType::Bool}) {
    nb::object o = nb::cast(DTypeObject{d});
    g_dtypes[static_cast<size_t>(d)] = o;
    const std::string name(dtype_name(d));
    by_name[name.c_str()] = o;
    if (d != DType::Bool) m.attr(name.c_str()) = o;
  }
  m.attr("_dtypes") = by_name;

  // ember.finfo / ember.iinfo: what a dtype represents (torch.finfo, torch.iinfo).
  nb::class_<FloatInfo>(m, "finfo", "The numbers a floating dtype represents (torch.finfo).")
      .def(
          "__init__",
          [](FloatInfo* self, std::optional<DType> type) {
            new (self) FloatInfo(finfo(type.value_or(default_dtype())));
          },
          "type"_a = nb::none(), "The properties of `type` (the default float dtype if None).")
      .def_ro("bits", &FloatInfo::bits, "Bits per element.")
      .def_ro("eps", &FloatInfo::eps, "The gap between 1 and the next larger number.")
      .def_ro("max", &FloatInfo::max, "The largest finite number.")
      .def_ro("min", &FloatInfo::min, "The most negative finite number.")
      .def_ro("tiny", &FloatInfo::tiny, "The smallest positive normal number.")
      .def_ro("smallest_normal", &FloatInfo::tiny, "The smallest positive normal number.")
      .def_ro("resolution", &FloatInfo::resolution, "10^-digits, the decimal precision.")
      .def_prop_ro(
          "dtype", [](const FloatInfo& f) { return std::string(dtype_name(f.dtype)); },
          "The dtype's name.")
      .def("__repr__", [](const FloatInfo& f) {
        return fmt::format(
            "finfo(resolution={:g}, min={:g}, max={:g}, eps={:g}, smallest_normal={:g}, tiny={:g}, "
            "dtype={})",
            f.resolution, f.min, f.max, f.eps, f.tiny, f.tiny, dtype_name(f.dtype));
      });
  nb::class_<IntInfo>(m, "iinfo", "The range of an integer dtype (torch.iinfo).")
      .def(
          "__init__", [](IntInfo* self, DType type) { new (self) IntInfo(iinfo(type)); }, "type"_a,
          "The range of `type`.")
      .def_ro("bits", &IntInfo::bits, "Bits per element.")
      .def_ro("min", &IntInfo::min, "The smallest value.")
      .def_ro("max", &IntInfo::max, "The largest value.")
      .def_prop_ro(
          "dtype", [](const IntInfo& i) { return std::string(dtype_name(i.dtype)); },
          "The dtype's name.")
      .def("__repr__", [](const IntInfo& i) {
        return fmt::format("iinfo(min={}, max={}, dtype={})", i.min, i.max, dtype_name(i.dtype));
      });

  // ember.device: a device type and index; made from "cpu", "cuda", "cuda:1" or ("cuda", 1).
  nb::class_<Device>(m, "device", "A device: ember.device('cuda:0'), ember.device('cpu').")
      .def(
          "__init__",
          [](Device* self, std::string_view type, int64_t index) {
            new (self) Device(fmt::format("{}:{}", type, index));
          },
          "type"_a, "index"_a, "A device type and index.")
      .def(nb::init<std::string_view>(), "spec"_a, "Parses 'cpu', 'cuda', 'cuda:1'.")
      .def_prop_ro(
          "type", [](const Device& d) { return std::string(d.type_name()); },
          "The device type's name ('cpu', 'cuda').")
      .def_prop_ro(
          "index",
          [](const Device& d) -> std::optional<int64_t> {
            if (d.type == kCpuType) return std::nullopt;
            return d.index;
          },
          "The index within the type (None for the CPU).")
      .def("__repr__", &device_repr)
      .def("__str__", &Device::str)
      .def("__eq__",
           [](const Device& a, nb::handle b) {
             return nb::isinstance<Device>(b) && a == nb::cast<Device>(b);
           })
      .def("__hash__",
           [](const Device& d) { return (static_cast<int64_t>(d.type) << 16) | d.index; })
      .def("__reduce__", [](const Device& d) {
        return nb::make_tuple(nb::module_::import_("ember").attr("device"),
                              nb::make_tuple(d.str()));
      });

  // Random numbers.
  nb::class_<Generator>(m, "Generator",
                        "A seedable random-number generator (Philox for tensors), as "
                        "torch.Generator.")
      .def(
          "__init__", [](Generator* self, std::optional<Device>) { new (self) Generator(); },
          "device"_a = nb::none(),
          "A generator with the default seed (`device` is accepted for "
          "PyTorch's signature: the same generator serves every device).")
      .def(
          "manual_seed",
          [](Generator& g, uint64_t seed) -> Generator& {
            g.manual_seed(seed);
            return g;
          },
          "seed"_a, nb::rv_policy::reference, "Reseeds; returns the generator.")
      .def("initial_seed", &Generator::seed, "The seed last set.")
      .def(
          "seed",
          [](Generator& g) {
            const uint64_t s = std::random_device{}() | (uint64_t{std::random_device{}()} << 32);
            g.manual_seed(s);
            return s;
          },
          "Reseeds from a non-deterministic source and returns the seed.")
      .def("get_state", &Generator::get_state, "The whole state as a uint8 tensor.")
      .def("set_state", &Generator::set_state, "state"_a, "Restores a get_state() result.");
  m.def(
      "_default_generator",
      [](std::optional<Device> device) -> Generator& {
        return device ? default_generator(*device) : default_generator();
      },
      "device"_a = nb::none(), nb::rv_policy::reference,
      "The default generator of `device` (the CPU's by default); ember.random holds the CPU's "
      "as ember.default_generator.");
  m.def("manual_seed", &manual_seed, "seed"_a,
        "Seeds the default generators of every device, including those created later.");

  // Streams and events.
  nb::class_<Stream>(m, "Stream", "A queue of work on one device (torch.cuda.Stream).")
      .def_prop_ro("device", &Stream::device, "The stream's device.")
      .def("synchronize", &Stream::synchronize, release_gil(), "Waits for the queued work.")
      .def("query", &Stream::query, "True if the queued work has completed.")
      .def("wait_event", nb::overload_cast<const Event&>(&Stream::wait, nb::const_), "event"_a,
           "Makes later work here wait for `event`.")
      .def("wait_stream", nb::overload_cast<const Stream&>(&Stream::wait, nb::const_), "stream"_a,
           "Makes later work here wait for the work queued on `stream` so far.")
      .def("__eq__",
           [](const Stream& a, nb::handle b) {
             return nb::isinstance<Stream>(b) && a == nb::cast<Stream>(b);
           })
      .def("__hash__", [](const Stream& s) { return reinterpret_cast<intptr_t>(s.handle()); });
  nb::class_<Event>(m, "Event", "A point in a stream's work (torch.cuda.Event).")
      .def(nb::init<Device, bool>(), "device"_a, "enable_timing"_a = false)
      .def(
          "record", [](Event& e, std::optional<Stream> s) { s ? e.record(*s) : e.record(); },
          "stream"_a = nb::none(), "Marks the work queued so far (on the current stream).")
      .def("query", &Event::query, "True once the marked work completed.")
      .def("synchronize", &Event::synchronize, release_gil(), "Waits for the marked work.")
      .def("elapsed_time", &Event::elapsed_ms, "end_event"_a,
           "Milliseconds from this event to `end_event`.");
  m.def("current_stream", &current_stream, "device"_a, "This thread's current stream of `device`.");
  m.def("default_stream", &default_stream, "device"_a, "The default stream of `device`.");
  m.def("stream_from_pool", &stream_from_pool, "device"_a, "high_priority"_a = false,
        "A stream from the device's pool.");
  m.def("set_current_stream", &set_current_stream, "stream"_a,
        "Makes `stream` this thread's current stream of its device.");
  m.def(
      "synchronize", [](Device d) { synchronize(d); }, "device"_a = Device::cpu(), release_gil(),
      "Waits for all queued work on `device`.");

  // What is here.
  m.def("devices", &available_devices,
        "Every usable device: the CPU and each device of the loaded backends.");
  m.def(
      "device_types",
      []() {
        init();
        nb::list out;
        for (const DeviceTypeEntry& e : device_types()) {
          nb::dict d;
          d["name"] = e.name;
          d["plugin"] = e.plugin;
          d["count"] = e.count;
          d["reason"] = e.unusable_reason;
          d["priority"] = e.table.priority;
          d["host_accessible"] = e.table.host_accessible != 0;
          out.append(d);
        }
        return out;
      },
      "Every registered device type: name, plugin, device count and why it has none, priority "
      "and whether the host can read its memory.");
  m.def("device_count", &device_count, "type"_a, "Devices of a device type (0 if unknown).");
  m.def("_set_current_device", &set_current_device, "device"_a,
        "Makes `device` this thread's current device of its type.");
  m.def("get_default_device", &default_device,
        "The device factories use when given none (the CPU unless set_default_device changed it).");
  m.def(
      "set_default_device",
      [](std::optional<Device> device) {
        if (device) {
          set_default_device(*device);
        } else {
          reset_default_device();
        }
      },
      "device"_a.none(),
      nb::sig("def set_default_device(device: ember.device | str | None) -> None"),
      "Makes `device` the factories' and modules' default device; None puts it back on the CPU.");
  m.def("get_default_dtype", &default_dtype,
        "The floating dtype factories and promotion use when given none (float32 unless "
        "set_default_dtype changed it).");
  m.def(
      "set_default_dtype",
      [](nb::handle d) {
        // Only an ember.dtype: the Python types the dtype arguments also take (float) are not
        // dtype objects here, as in PyTorch.
        EMBER_CHECK_TYPE(nb::isinstance<DTypeObject>(d),
                         "[set_default_dtype] invalid dtype object: only floating-point types are "
                         "supported as the default type, got {}",
                         nb::cast<std::string>(nb::repr(d)));
        set_default_dtype(nb::inst_ptr<DTypeObject>(d)->dtype);
      },
      "d"_a, nb::sig("def set_default_dtype(d: ember.dtype) -> None"),
      "Makes the floating dtype `d` the default of factories, module parameters and "
      "promotion.");
  m.def("best_device", &best_device,
        "The device to run on when nobody chose one: EMBER_DEVICE, else the available device "
        "of highest priority.");
  m.def(
      "plugin_report",
      []() { return json_to_python(nlohmann::json::parse(plugin_report_json(plugin_report()))); },
      "What plugin discovery searched, loaded and rejected, and why (as `ember plugins`).");
  m.def(
      "load_plugin",
      [](const std::string& path) -> nb::object {
        PluginRecord record;
        {
          GilRelease release;
          record = load_plugin(path);
        }
        return json_to_python(nlohmann::json::parse(
            plugin_report_json(PluginReport{{}, {record}, {}})))["plugins"][0];
      },
      "path"_a,
      "Loads one plugin file; returns its record (a failure is reported there, never raised "
      "unless plugins are strict).");
  m.def(
      "init",
      [](std::vector<std::string> paths, std::optional<std::vector<std::string>> disable,
         std::optional<std::vector<std::string>> only, std::optional<bool> autoload,
         std::optional<bool> strict, std::optional<std::string> require_device) {
        PluginOptions o;
        o.paths = std::move(paths);
        o.disable = std::move(disable);
        o.only = std::move(only);
        o.autoload = autoload;
        o.strict = strict;
        o.require_device = std::move(require_device);
        init(o);
      },
      nb::kw_only(), "paths"_a = std::vector<std::string>{}, "disable"_a = nb::none(),
      "only"_a = nb::none(), "autoload"_a = nb::none(), "strict"_a = nb::none(),
      "require_device"_a = nb::none(), release_gil(),
      "Runs plugin discovery with these controls (over the EMBER_* variables); only before "
      "anything else used Ember.");
  m.def(
      "version", []() { return std::string(version()); }, "The core library's version.");

  // Ops defined by plugins (ember.ops, ember/ops.py).
  m.def(
      "call_op",
      [](std::string_view name, std::vector<Tensor> inputs, std::vector<int64_t> ints,
         std::vector<double> floats) {
        return call(name, std::move(inputs), std::move(ints), std::move(floats));
      },
      "name"_a, "inputs"_a, "ints"_a = std::vector<int64_t>{}, "floats"_a = std::vector<double>{},
      release_gil(), "Runs the op a plugin defined as `name` ('ns::op'); returns its outputs.");
  m.def(
      "extension_ops",
      []() {
        nb::list out;
        for (const OpSchema* s : extension_ops()) {
          nb::dict d;
          d["name"] = s->name;
          d["doc"] = s->doc;
          d["plugin"] = s->plugin;
          d["inputs"] = s->min_inputs;
          d["outputs"] = s->max_outputs;
          d["differentiable"] = !s->backward_name.empty();
          out.append(d);
        }
        return out;
      },
      "Every op a loaded plugin defined: name, doc, plugin, inputs, outputs, differentiable.");

  // Threads and memory.
  m.def("set_num_threads", &set_num_threads, "n"_a, "Threads every backend uses within an op.");
  m.def("get_num_threads", &get_num_threads, "Threads the CPU backend uses within an op.");
  m.def(
      "memory_stats",
      [](Device d) {
        const ember_memory_stats s = memory_stats(d);
        nb::dict out;
        out["allocated"] = s.allocated;
        out["reserved"] = s.reserved;
        out["peak_allocated"] = s.peak_allocated;
        out["num_allocs"] = s.num_allocs;
        out["num_os_allocs"] = s.num_os_allocs;
        return out;
      },
      "device"_a = Device::cpu(), "The device allocator's statistics (bytes and counts).");
  m.def("empty_cache", &empty_cache, "device"_a = Device::cpu(),
        "Returns cached, unused memory of `device` to the system.");
  // Printing (ember._tensor_str turns PyTorch's keyword arguments into these).
  nb::class_<PrintOptions>(m, "_PrintOptions", "How tensors print (ember.set_printoptions).")
      .def(nb::init<>())
      .def_rw("precision", &PrintOptions::precision, "Digits after the point of a float.")
      .def_rw("threshold", &PrintOptions::threshold, "Summarise above this many elements.")
      .def_rw("edgeitems", &PrintOptions::edgeitems, "Entries kept at each end when summarised.")
      .def_rw("linewidth", &PrintOptions::linewidth, "Characters per line.")
      .def_rw("sci_mode", &PrintOptions::sci_mode, "Scientific notation on/off; None: chosen.");
  m.def("_print_options", &print_options, "The print options in force.");
  m.def("_set_print_options", &set_print_options, "options"_a, "Sets the print options.");
  m.def("_print_profile", &print_profile, "name"_a, "PyTorch's named print profile.");
  m.def("set_backend_option", &set_backend_option, "type"_a, "key"_a, "value"_a,
        "Sets a backend option ('cuda', 'cudnn.benchmark', '1').");
  m.def("backend_option", &backend_option, "type"_a, "key"_a, "A backend option's value.");
}

}  // namespace ember::python
