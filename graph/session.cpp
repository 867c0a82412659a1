// Session: Graph::run recorded once per input signature and replayed from a memory plan.
#include "ember/graph/session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ember/ops/compile.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace ember::graph {

// Note [Planned graph runs]
// A graph's values have fixed sizes once its inputs' sizes are known, so its first run for an
// input signature (each input's sizes, strides and dtype) is all a plan needs: the session runs
// Graph::run under ember::compile, which records every kernel call and the value each operand
// is (Note [Compiled functions] in core/ops/compile.cpp), assigns the intermediate values to
// buffers by lifetime (a buffer is reused by a value made after the last reader of the one before
// it, best fit) and allocates them once; later runs with that signature replay the kernel calls
// on those buffers: no graph walk, no attribute parsing, no allocation, the weights read where
// they are (so a backend's cache of packed weights keeps hitting). What the graph reads on the
// host (a Reshape's shape, a Dropout's training flag) is compared on every replay and a
// difference records the run again; random numbers make a signature run node by node, and
// memory_plan() says why. The initializers are copied to the device when the session is made,
// and the inputs on each run before it is recorded or replayed, so no recorded run copies. Not
// done: an output written over an input that dies at its node (in place): the core lets only
// elementwise kernels see an output aliasing an input, and a fused ResNet has none left.

struct Session::Impl {
  Graph graph;
  Device device;
  bool plan = true;
  std::mutex mutex;
  int64_t unplanned = 0;           // runs made with planning off
  std::vector<std::string> names;  // the graph's inputs, in declaration order
  uint64_t weight_bytes = 0;
  CompiledFunction compiled;

  Impl(Graph g, Device d)
      : graph(std::move(g)), device(d), compiled([this](const std::vector<Tensor>& in) {
          std::map<std::string, Tensor> feeds;
          for (size_t i = 0; i < in.size(); ++i) feeds[names[i]] = in[i];
          return graph.run_ordered(feeds, device);
        }) {}
};

Session::Session(Graph graph, Device device, bool plan_memory)
    : impl_(std::make_shared<Impl>(std::move(graph), device)) {
  impl_->plan = plan_memory;
  EMBER_CHECK(impl_->graph.outer().empty(),
              "[graph.session] a session runs a model's graph, not a subgraph reading outer "
              "values ({})",
              fmt::join(impl_->graph.outer(), ", "));
  impl_->graph.validate();
  for (const ValueInfo& v : impl_->graph.inputs()) impl_->names.push_back(v.name);
  for (const auto& [name, t] : impl_->graph.initializers()) impl_->weight_bytes += t.nbytes();
  impl_->graph.prepare(device);
}

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& feeds) const {
  const std::vector<std::string>& names = impl_->names;
  std::vector<Tensor> inputs(names.size());
  for (const auto& [name, t] : feeds) {
    const auto it = std::find(names.begin(), names.end(), name);
    EMBER_CHECK_KEY(it != names.end(), "[graph] unknown input '{}' (the graph's inputs are: {})",
                    name, fmt::join(names, ", "));
    EMBER_CHECK_TYPE(t.defined(), "[graph] input '{}' is an undefined tensor", name);
    // Moved to the device here, outside the recording (a copy between devices is no kernel).
    inputs[static_cast<size_t>(it - names.begin())] = t.to(impl_->device);
  }
  if (!impl_->plan) {
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      ++impl_->unplanned;
    }
    return impl_->graph.run(feeds, impl_->device);
  }
  const std::map<std::string, Tensor>& weights = impl_->graph.initializers();
  for (size_t i = 0; i < names.size(); ++i) {
    if (inputs[i].defined()) continue;
    // An input that is also an initializer has a default (ONNX's rule): the same as feeding it.
    const auto w = weights.find(names[i]);
    if (w == weights.end()) return impl_->graph.run(feeds, impl_->device);  // its error
    inputs[i] = w->second.to(impl_->device);
  }
  const std::vector<Tensor> outs = impl_->compiled(inputs);
  std::map<std::string, Tensor> result;
  const std::vector<ValueInfo>& declared = impl_->graph.outputs();
  for (size_t i = 0; i < declared.size(); ++i) result[declared[i].name] = outs.at(i);
  return result;
}

const Graph& Session::graph() const {
  return impl_->graph;
}

Device Session::device() const {
  return impl_->device;
}

MemoryPlan Session::memory_plan() const {
  const CompileReport r = impl_->compiled.report();
  MemoryPlan m;
  m.planned_bytes = r.planned_bytes;
  m.intermediate_bytes = r.intermediate_bytes;
  m.weight_bytes = impl_->weight_bytes;
  m.peak_bytes = m.weight_bytes + m.planned_bytes;
  m.plans = r.captures;
  m.planned_runs = r.replays;
  m.unplanned_runs = r.eager_calls;
  m.unplanned_reason = r.eager_reason;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->unplanned > 0) {
    m.unplanned_runs += impl_->unplanned;
    m.unplanned_reason = "[graph.session] memory planning is off";
  }
  return m;
}

}  // namespace ember::graph
