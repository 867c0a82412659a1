// A stopped profile as per-name totals, a text table and a Chrome trace.
#include "core/profiler/report.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "ember/util/error.h"

namespace ember::profiler {
namespace {

std::string shapes_str(const std::vector<Shape>& shapes) {
  std::string s = "[";
  for (size_t i = 0; i < shapes.size(); ++i) {
    s += fmt::format("{}{}", i ? ", " : "", shape_str(shapes[i]));
  }
  return s + "]";
}

// As PyTorch prints them: microseconds below a millisecond, three decimals.
std::string time_str(int64_t ns) {
  const double us = static_cast<double>(ns) / 1e3;
  if (us >= 1e6) return fmt::format("{:.3f}s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:.3f}ms", us / 1e3);
  return fmt::format("{:.3f}us", us);
}

std::string memory_str(int64_t bytes) {
  const double b = static_cast<double>(bytes), mag = std::abs(b);
  if (mag >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} Gb", b / (1024.0 * 1024 * 1024));
  if (mag >= 1024.0 * 1024) return fmt::format("{:.2f} Mb", b / (1024.0 * 1024));
  if (mag >= 1024.0) return fmt::format("{:.2f} Kb", b / 1024.0);
  return fmt::format("{} b", bytes);
}

std::string percent_str(int64_t part, int64_t whole) {
  return fmt::format("{:.2f}%", whole > 0 ? 100.0 * static_cast<double>(part) / whole : 0.0);
}

int64_t sort_key(const KeyAverage& r, SortBy by) {
  switch (by) {
    case SortBy::SelfCpuTotal:
      return r.self_cpu_ns;
    case SortBy::CpuTotal:
      return r.cpu_total_ns;
    case SortBy::SelfDeviceTotal:
      return r.self_device_ns;
    case SortBy::DeviceTotal:
      return r.device_total_ns;
    case SortBy::Count:
      return r.count;
    case SortBy::SelfMemory:
      return r.self_bytes_allocated - r.self_bytes_freed;
  }
  return 0;
}

constexpr size_t kMaxNameWidth = 55;  // longer names are cut, as PyTorch does
constexpr size_t kColumnWidth = 12;

}  // namespace

const KeyAverage* KeyAverages::find(std::string_view name) const {
  for (const KeyAverage& r : rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::vector<KeyAverage> KeyAverages::sorted(SortBy by) const {
  std::vector<KeyAverage> out = rows;
  std::stable_sort(out.begin(), out.end(), [by](const KeyAverage& a, const KeyAverage& b) {
    const int64_t ka = sort_key(a, by), kb = sort_key(b, by);
    if (ka != kb) return ka > kb;
    return std::tie(a.name, a.input_shapes) < std::tie(b.name, b.input_shapes);
  });
  return out;
}

std::string KeyAverages::table(SortBy sort_by, int64_t row_limit) const {
  struct Column {
    std::string header;
    std::function<std::string(const KeyAverage&)> cell;
  };
  const int64_t cpu = self_cpu_total_ns, dev = self_device_total_ns;
  std::vector<Column> columns = {
      {"Name",
       [](const KeyAverage& r) {
         return r.name.size() <= kMaxNameWidth ? r.name
                                               : r.name.substr(0, kMaxNameWidth - 3) + "...";
       }},
      {"Self CPU %", [cpu](const KeyAverage& r) { return percent_str(r.self_cpu_ns, cpu); }},
      {"Self CPU", [](const KeyAverage& r) { return time_str(r.self_cpu_ns); }},
      {"CPU total %", [cpu](const KeyAverage& r) { return percent_str(r.cpu_total_ns, cpu); }},
      {"CPU total", [](const KeyAverage& r) { return time_str(r.cpu_total_ns); }},
      {"CPU time avg", [](const KeyAverage& r) { return time_str(r.cpu_total_ns / r.count); }},
  };
  if (has_device_time) {
    columns.push_back(
        {"Self Device", [](const KeyAverage& r) { return time_str(r.self_device_ns); }});
    columns.push_back({"Self Device %",
                       [dev](const KeyAverage& r) { return percent_str(r.self_device_ns, dev); }});
    columns.push_back(
        {"Device total", [](const KeyAverage& r) { return time_str(r.device_total_ns); }});
    columns.push_back({"Device time avg",
                       [](const KeyAverage& r) { return time_str(r.device_total_ns / r.count); }});
  }
  if (has_memory) {
    columns.push_back(
        {"Mem", [](const KeyAverage& r) { return memory_str(r.bytes_allocated - r.bytes_freed); }});
    columns.push_back({"Self Mem", [](const KeyAverage& r) {
                         return memory_str(r.self_bytes_allocated - r.self_bytes_freed);
                       }});
  }
  columns.push_back({"# of Calls", [](const KeyAverage& r) { return std::to_string(r.count); }});
  const bool shapes = std::any_of(rows.begin(), rows.end(),
                                  [](const KeyAverage& r) { return !r.input_shapes.empty(); });
  if (shapes) {
    columns.push_back({"Input Shapes", [](const KeyAverage& r) { return r.input_shapes; }});
  }

  std::vector<KeyAverage> order = sorted(sort_by);
  if (row_limit >= 0 && static_cast<size_t>(row_limit) < order.size()) order.resize(row_limit);
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> width(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) {
    width[c] = std::max(columns[c].header.size(), c == 0 ? size_t{4} : kColumnWidth);
  }
  for (const KeyAverage& r : order) {
    std::vector<std::string>& line = cells.emplace_back();
    for (size_t c = 0; c < columns.size(); ++c) {
      line.push_back(columns[c].cell(r));
      width[c] = std::max(width[c], line.back().size());
    }
  }
  // Every column right-aligned, two spaces apart, as in PyTorch's table.
  std::string rule, out;
  for (size_t c = 0; c < columns.size(); ++c) {
    rule += fmt::format("{}{}", c ? "  " : "", std::string(width[c], '-'));
  }
  rule += "\n";
  const auto add_line = [&](const std::vector<std::string>& line) {
    for (size_t c = 0; c < columns.size(); ++c) {
      out += fmt::format("{}{:>{}}", c ? "  " : "", line[c], width[c]);
    }
    out += "\n";
  };
  out += rule;
  std::vector<std::string> headers;
  for (const Column& c : columns) headers.push_back(c.header);
  add_line(headers);
  out += rule;
  for (const auto& line : cells) add_line(line);
  out += rule;
  out += fmt::format("Self CPU time total: {}\n", time_str(self_cpu_total_ns));
  if (has_device_time) out += fmt::format("Self Device time total: {}\n", time_str(dev));
  return out;
}

namespace detail {

KeyAverages make_key_averages(const std::vector<EventRecord>& events, bool group_by_input_shapes,
                              bool memory) {
  // Bytes of the ranges directly inside each event, for its self bytes.
  std::vector<int64_t> inner_allocated(events.size(), 0), inner_freed(events.size(), 0);
  for (const EventRecord& e : events) {
    if (e.parent < 0) continue;
    inner_allocated[static_cast<size_t>(e.parent)] += e.bytes_allocated;
    inner_freed[static_cast<size_t>(e.parent)] += e.bytes_freed;
  }
  KeyAverages out;
  out.has_memory = memory;
  std::unordered_map<std::string, size_t> row_of;
  for (size_t i = 0; i < events.size(); ++i) {
    const EventRecord& e = events[i];
    const std::string shapes = group_by_input_shapes ? shapes_str(e.input_shapes) : "";
    const std::string key = group_by_input_shapes ? e.name + '\n' + shapes : e.name;
    auto [it, fresh] = row_of.emplace(key, out.rows.size());
    if (fresh) {
      KeyAverage& r = out.rows.emplace_back();
      r.name = e.name;
      r.category = e.category;
      r.input_shapes = shapes;
    }
    KeyAverage& r = out.rows[it->second];
    ++r.count;
    r.cpu_total_ns += e.duration_ns();
    r.self_cpu_ns += e.self_ns;
    r.device_total_ns += e.device_total_ns;
    r.self_device_ns += e.device_ns();
    r.bytes_allocated += e.bytes_allocated;
    r.bytes_freed += e.bytes_freed;
    r.self_bytes_allocated += e.bytes_allocated - inner_allocated[i];
    r.self_bytes_freed += e.bytes_freed - inner_freed[i];
    out.self_cpu_total_ns += e.self_ns;
    out.self_device_total_ns += e.device_ns();
    out.has_device_time = out.has_device_time || e.has_device_time;
  }
  return out;
}

// Note [The Chrome trace]
// The trace is the Trace Event Format that chrome://tracing and ui.perfetto.dev read: an object
// whose "traceEvents" holds complete events ("ph": "X", "ts" and "dur" in microseconds since the
// profiler started) with "cat" cpu_op, kernel, backward or user_annotation, on the process's pid
// and the OS thread id, and "args" with the input shapes, dtype, device, stream and bytes. A
// kernel timed on its device gets a second complete event, "cat": "device", on a row of its own
// per (device, stream) (pids and tids above any real one, named by metadata events), and a flow
// (an "s" event on the kernel, an "f" event on the device interval) joining the two.
std::string make_chrome_trace(const std::vector<EventRecord>& events) {
  using json = nlohmann::ordered_json;
  const auto us = [](int64_t ns) { return static_cast<double>(ns) / 1e3; };
  const int64_t pid = ::getpid();
  json trace = json::array();
  trace.push_back({{"ph", "M"},
                   {"name", "process_name"},
                   {"pid", pid},
                   {"args", {{"name", fmt::format("ember (pid {})", pid)}}}});
  trace.push_back(
      {{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"args", {{"sort_index", 0}}}});
  std::map<std::pair<int32_t, int32_t>, int64_t> device_pid;    // (type, index) -> pid
  std::map<std::tuple<int64_t, uint64_t>, int64_t> stream_tid;  // (pid, stream) -> tid
  int64_t flow = 0;
  for (const EventRecord& e : events) {
    json args = json::object();
    if (e.category != Category::UserRange) {
      json dims = json::array();
      for (const Shape& s : e.input_shapes) {
        dims.push_back(std::vector<int64_t>(s.begin(), s.end()));
      }
      args["Input Dims"] = std::move(dims);
    }
    if (e.dtype) args["dtype"] = std::string(dtype_name(*e.dtype));
    if (e.device) args["device"] = e.device->str();
    if (e.category == Category::Kernel && e.stream != 0) {
      args["stream"] = fmt::format("{:#x}", e.stream);
    }
    if (!e.forward_op.empty()) args["forward op"] = e.forward_op;
    args["bytes allocated"] = e.bytes_allocated;
    args["bytes freed"] = e.bytes_freed;
    if (e.has_device_time) args["correlation"] = ++flow;
    trace.push_back({{"ph", "X"},
                     {"cat", category_name(e.category)},
                     {"name", e.name},
                     {"pid", pid},
                     {"tid", e.thread},
                     {"ts", us(e.start_ns)},
                     {"dur", us(e.duration_ns())},
                     {"args", std::move(args)}});
    if (!e.has_device_time) continue;
    const Device d = *e.device;
    auto [p, new_device] = device_pid.emplace(std::pair<int32_t, int32_t>{d.type, d.index},
                                              int64_t{1'000'000'000} + d.type * 1000 + d.index);
    if (new_device) {
      trace.push_back({{"ph", "M"},
                       {"name", "process_name"},
                       {"pid", p->second},
                       {"args", {{"name", d.str()}}}});
      trace.push_back({{"ph", "M"},
                       {"name", "process_sort_index"},
                       {"pid", p->second},
                       {"args", {{"sort_index", 1 + device_pid.size()}}}});
    }
    auto [t, new_stream] = stream_tid.emplace(std::tuple<int64_t, uint64_t>{p->second, e.stream},
                                              int64_t{2'000'000'000} + stream_tid.size());
    if (new_stream) {
      trace.push_back({{"ph", "M"},
                       {"name", "thread_name"},
                       {"pid", p->second},
                       {"tid", t->second},
                       {"args", {{"name", fmt::format("stream {:#x}", e.stream)}}}});
    }
    trace.push_back({{"ph", "X"},
                     {"cat", "device"},
                     {"name", e.name},
                     {"pid", p->second},
                     {"tid", t->second},
                     {"ts", us(e.device_start_ns)},
                     {"dur", us(e.device_ns())},
                     {"args", {{"correlation", flow}, {"device", d.str()}}}});
    trace.push_back({{"ph", "s"},
                     {"id", flow},
                     {"pid", pid},
                     {"tid", e.thread},
                     {"ts", us(e.start_ns)},
                     {"cat", "ac2g"},
                     {"name", "ac2g"}});
    trace.push_back({{"ph", "f"},
                     {"bp", "e"},
                     {"id", flow},
                     {"pid", p->second},
                     {"tid", t->second},
                     {"ts", us(e.device_start_ns)},
                     {"cat", "ac2g"},
                     {"name", "ac2g"}});
  }
  json doc = json::object();
  doc["traceEvents"] = std::move(trace);
  doc["displayTimeUnit"] = "ms";
  return doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace detail
}  // namespace ember::profiler
