// `ember inspect` and `ember bench` (onnx_cli.h).
#include "tools/ember/onnx_cli.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ember/ember.h>
#include <ember/graph/onnx.h>
#include <ember/graph/ops.h>
#include <ember/graph/optimize.h>
#include <ember/graph/session.h>

#include "tools/ember/train_common.h"

namespace ember::tools {

namespace {

/** NAME=SIZE arguments as a map; `command` names the caller in errors. */
std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& dims,
                                          const char* command) {
  std::map<std::string, int64_t> out;
  for (const std::string& d : dims) {
    const size_t eq = d.find('=');
    char* end = nullptr;
    const long long size =
        eq == std::string::npos ? -1 : std::strtoll(d.c_str() + eq + 1, &end, 10);
    EMBER_CHECK(eq != std::string::npos && eq > 0 && end != nullptr && *end == '\0' && size >= 0,
                "[{}] --dim expects NAME=SIZE with a size of 0 or more: got '{}'", command, d);
    out[d.substr(0, eq)] = size;
  }
  return out;
}

/** "[1, N, 512]": a shape as the model declares it. */
std::string declared_shape(const graph::ValueInfo& v) {
  if (!v.shape) return "(rank unknown)";
  std::vector<std::string> dims;
  for (const graph::Dim& d : *v.shape) {
    dims.push_back(d.size >= 0 ? std::to_string(d.size) : d.symbol.empty() ? "?" : d.symbol);
  }
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

std::string mib(double bytes) {
  return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0));
}

/** The process's peak resident set so far, in bytes. */
double peak_rss_bytes() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;  // kilobytes on Linux
}

/** Every device a loaded backend has (index 0 of each device type with devices), the CPU first. */
std::vector<Device> loaded_devices() {
  std::vector<Device> out = {Device::cpu()};
  for (const DeviceTypeEntry& e : device_types()) {
    const int16_t type = find_device_type(e.name);
    if (e.count > 0 && type != pinned_memory_device_type() && type != Device::cpu().type) {
      out.push_back(Device(e.name));
    }
  }
  return out;
}

/** The largest difference between `out` (on any device) and the CPU's `ref`, over their
 *  floating-point tensors of equal shapes, relative to the largest magnitude in `ref` (at least
 *  1). */
double difference(const std::vector<Tensor>& out, const std::vector<Tensor>& ref) {
  double diff = 0;
  for (size_t k = 0; k < out.size() && k < ref.size(); ++k) {
    const Tensor& a = out[k];
    const Tensor& b = ref[k];
    if (!a.defined() || !b.defined() || !is_floating(b.dtype()) || a.sizes() != b.sizes() ||
        b.numel() == 0) {
      continue;
    }
    const Tensor b64 = b.to(DType::Float64);
    const double scale = std::max(1.0, max(abs(b64)).item());
    diff = std::max(diff, max(abs(a.to(Device::cpu()).to(DType::Float64) - b64)).item() / scale);
  }
  return diff;
}

}  // namespace

std::map<std::string, Tensor> example_inputs(const graph::Graph& g, int64_t batch,
                                             const std::vector<std::string>& dims, Device device,
                                             const char* command) {
  EMBER_CHECK(batch >= 1, "[{}] --batch must be at least 1: got {}", command, batch);
  const std::map<std::string, int64_t> named = parse_dims(dims, command);
  manual_seed(0);
  std::map<std::string, Tensor> feeds;
  for (const graph::ValueInfo& v : g.inputs()) {
    EMBER_CHECK(v.shape.has_value(),
                "[{}] input '{}' declares no shape (not even its rank), so no example can be made "
                "for it",
                command, v.name);
    std::vector<int64_t> sizes;
    for (size_t i = 0; i < v.shape->size(); ++i) {
      const graph::Dim& d = (*v.shape)[i];
      if (d.size >= 0) {
        sizes.push_back(d.size);
      } else if (auto it = named.find(d.symbol); !d.symbol.empty() && it != named.end()) {
        sizes.push_back(it->second);
      } else {
        sizes.push_back(i == 0 ? batch : 1);
      }
    }
    feeds[v.name] = is_floating(v.dtype)
                        ? randn(sizes, TensorOptions(DType::Float32, device)).to(v.dtype)
                        : zeros(sizes, TensorOptions(v.dtype, device));
  }
  return feeds;
}

// Note [Which device runs a node]
// Whether a backend runs a node cannot be read off the node: a graph op calls core ops, each of
// which a backend may lack for a dtype, or refuse for an attribute. So `ember inspect` runs the
// model once on the CPU node by node (inputs from example_inputs), then runs every node alone on
// every other loaded device from the CPU's values for its inputs, and reports each refusal with
// its error and the largest difference of any node's outputs from the CPU's (relative to their
// magnitude), so a backend's wrong kernel shows as one node. A node the CPU could not run leaves
// what reads it unreached on every device.
void inspect(const InspectOptions& o) {
  init();
  const graph::Graph g = graph::load_onnx(o.model);
  fmt::print("{}: {} nodes, {} inputs, {} outputs\n", o.model, g.nodes().size(), g.inputs().size(),
             g.outputs().size());
  for (const graph::ValueInfo& v : g.inputs()) {
    fmt::print("  input  {:<24} {:<9} {}\n", v.name, v.dtype, declared_shape(v));
  }
  for (const graph::ValueInfo& v : g.outputs()) {
    fmt::print("  output {:<24} {:<9} {}\n", v.name, v.dtype, declared_shape(v));
  }
  double weight_bytes = 0;
  for (const auto& [name, t] : g.initializers()) weight_bytes += static_cast<double>(t.nbytes());
  fmt::print("weights: {} tensors, {}\n", g.initializers().size(), mib(weight_bytes));
  std::map<std::string, int64_t> counts;
  for (const graph::Node& n : g.nodes()) ++counts[n.op];
  std::vector<std::pair<std::string, int64_t>> ops(counts.begin(), counts.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  fmt::print("ops ({} kinds):", ops.size());
  for (const auto& [op, count] : ops) fmt::print(" {} x{}", op, count);
  fmt::print("\n");
  if (!o.run_nodes) return;

  const std::vector<Device> devices = loaded_devices();
  std::map<std::string, Tensor> values = example_inputs(g, 1, o.dims, Device::cpu(), "inspect");
  for (const auto& [name, t] : g.initializers()) values.emplace(name, t);
  // Per device, the nodes it refused, and its largest difference from the CPU and where.
  std::map<std::string, std::vector<std::string>> refused;
  std::map<std::string, std::pair<double, std::string>> largest;
  int64_t unreached = 0;
  const auto node_label = [](const graph::Node& n, size_t i) {
    return fmt::format("node {} ({}{})", i, n.op, n.name.empty() ? "" : " '" + n.name + "'");
  };
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const graph::Node& n = g.nodes()[i];
    std::vector<Tensor> in;
    bool reached = true;
    for (const std::string& name : n.inputs) {
      if (name.empty()) {
        in.emplace_back();
        continue;
      }
      auto it = values.find(name);
      if (it == values.end()) {
        reached = false;
        break;
      }
      in.push_back(it->second);
    }
    if (!reached) {
      ++unreached;
      continue;
    }
    const graph::OpSchema* op = graph::find_op(n.op);
    std::vector<Tensor> on_cpu;
    for (const Device d : devices) {
      try {
        std::vector<Tensor> moved;
        for (const Tensor& t : in) moved.push_back(t.defined() ? t.to(d) : t);
        std::vector<Tensor> out = op->run(n, moved, d);
        if (d == Device::cpu()) {
          on_cpu = out;
          for (size_t k = 0; k < out.size() && k < n.outputs.size(); ++k) {
            if (!n.outputs[k].empty()) values[n.outputs[k]] = out[k];
          }
        } else if (const double diff = difference(out, on_cpu); diff > largest[d.str()].first) {
          largest[d.str()] = {diff, node_label(n, i)};
        }
      } catch (const Error& e) {
        refused[d.str()].push_back(fmt::format("{}: {}", node_label(n, i), e.what()));
      }
    }
  }
  for (const Device d : devices) {
    const auto it = refused.find(d.str());
    const size_t bad = it == refused.end() ? 0 : it->second.size();
    const size_t ran = g.nodes().size() - static_cast<size_t>(unreached) - bad;
    const auto& [diff, where] = largest[d.str()];
    const std::string compared =
        d == Device::cpu() ? ""
        : diff == 0        ? "; the CPU's values exactly"
                    : fmt::format("; largest difference from the CPU {:.2g}, at {}", diff, where);
    fmt::print("{:<10} runs {} of {} nodes{}{}\n", device_type(d.type).name, ran, g.nodes().size(),
               compared, bad == 0 ? "" : fmt::format(", refuses {}:", bad));
    if (bad != 0) {
      for (const std::string& line : it->second) fmt::print("    {}\n", line);
    }
  }
  if (unreached > 0) {
    fmt::print("{} nodes not reached: they read what a node the CPU refused would make\n",
               unreached);
  }
}

void bench(const BenchOptions& o) {
  EMBER_CHECK(o.runs >= 1, "[bench] --runs must be at least 1: got {}", o.runs);
  EMBER_CHECK(o.warmup >= 0, "[bench] --warmup must not be negative: got {}", o.warmup);
  init();
  if (o.threads > 0) set_num_threads(o.threads);
  const Device device = pick_device(o.device, "bench");
  const double rss_before = peak_rss_bytes();
  const Clock::time_point t_load = Clock::now();
  graph::OptimizeReport report;
  graph::Graph g =
      graph::optimize(graph::load_onnx(o.model), graph::opt_level_from_name(o.level), &report);
  const std::map<std::string, Tensor> feeds = example_inputs(g, o.batch, o.dims, device, "bench");
  const graph::Session session(std::move(g), device, o.plan);
  const double load_s = seconds_since(t_load);
  fmt::print(
      "ember bench: {} on {}, {} threads, optimization {} ({} -> {} nodes), loaded in "
      "{:.0f} ms\n",
      o.model, device, get_num_threads(), o.level, report.nodes_before, report.nodes_after,
      1e3 * load_s);
  for (const auto& [name, t] : feeds) fmt::print("  input {} {} {}\n", name, t.dtype(), t.sizes());

  const auto run_once = [&] {
    const std::map<std::string, Tensor> out = session.run(feeds);
    synchronize(device);
    return out;
  };
  autograd::InferenceMode inference;
  for (int64_t i = 0; i < o.warmup; ++i) run_once();
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(o.runs));
  const Clock::time_point t_all = Clock::now();
  for (int64_t i = 0; i < o.runs; ++i) {
    const Clock::time_point t0 = Clock::now();
    run_once();
    ms.push_back(1e3 * seconds_since(t0));
  }
  const double total_s = seconds_since(t_all);
  std::sort(ms.begin(), ms.end());
  const auto pct = [&](double p) {
    const auto at = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(ms.size()))) - 1;
    return ms[std::min(at, ms.size() - 1)];
  };
  const double mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  fmt::print(
      "{} runs after {} warm-up: latency ms min {:.3f}, mean {:.3f}, p50 {:.3f}, p90 {:.3f}, "
      "p95 {:.3f}, p99 {:.3f}, max {:.3f}\n",
      o.runs, o.warmup, ms.front(), mean, pct(50), pct(90), pct(95), pct(99), ms.back());
  fmt::print("throughput: {:.2f} runs/s, {:.2f} samples/s (batch {})\n",
             static_cast<double>(o.runs) / total_s, static_cast<double>(o.runs * o.batch) / total_s,
             o.batch);
  const graph::MemoryPlan plan = session.memory_plan();
  fmt::print(
      "memory: peak RSS {} (the process before loading: {}); weights {}; intermediates {} "
      "in {} of planned buffers ({} runs planned, {} not{}{})\n",
      mib(peak_rss_bytes()), mib(rss_before), mib(static_cast<double>(plan.weight_bytes)),
      mib(static_cast<double>(plan.intermediate_bytes)),
      mib(static_cast<double>(plan.planned_bytes)), plan.planned_runs, plan.unplanned_runs,
      plan.unplanned_reason.empty() ? "" : ": ", plan.unplanned_reason);
}

}  // namespace ember::tools
