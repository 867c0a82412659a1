// Session: a graph bound to a device, run from a static memory plan made once per input shape.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <ember/graph/graph.h>

namespace ember::graph {

/** How a Session's runs have used memory (Note [Planned graph runs] in graph/session.cpp). */
struct MemoryPlan {
  /** Bytes of the buffers the newest plan holds for the intermediate values, each buffer shared
   *  by values whose lifetimes do not overlap; allocated once, when the plan is made. */
  uint64_t planned_bytes = 0;
  /** Bytes of the same intermediates with a buffer each (what the plan saves against). */
  uint64_t intermediate_bytes = 0;
  /** Bytes of the graph's initializers (the weights), kept on the device. */
  uint64_t weight_bytes = 0;
  /** The memory a planned run holds: the weights and the planned buffers (the caller's inputs,
   *  the outputs handed back, kernels' scratch space and a backend's own packed copies of the
   *  weights not counted). */
  uint64_t peak_bytes = 0;
  /** Plans made: one per input signature (sizes, strides, dtypes), again when a value the graph
   *  reads on the host differed. */
  int64_t plans = 0;
  /** Runs answered from a plan. */
  int64_t planned_runs = 0;
  /** Runs of the graph's nodes one by one (each plan's first run is one). */
  int64_t unplanned_runs = 0;
  /** Why the last unplanned run could not use a plan, or "" (random numbers: a training-mode
   *  dropout; planning turned off). */
  std::string unplanned_reason;
};

/** A graph and the device it runs on. The first run for each input signature runs the nodes one
 *  by one and records their kernel calls; later runs replay them on buffers planned by lifetime
 *  (ember::compile's plan: no graph walk, no allocation). Runs are serialized; copies share the
 *  plans. */
class Session {
 public:
  /** A session running `graph` on `device`; the initializers are copied there now. With
   *  `plan_memory` false every run runs the nodes one by one (onnxruntime's
   *  enable_mem_pattern off). */
  explicit Session(Graph graph, Device device = Device::cpu(), bool plan_memory = true);

  /** Runs the graph on `feeds` (checked as Graph::run checks them; copied to the device first)
   *  and returns every output by name: fresh tensors, contiguous, on the session's device. */
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds) const;

  /** The graph it runs. */
  const Graph& graph() const;
  /** The device it runs on. */
  Device device() const;
  /** What its runs have done so far. */
  MemoryPlan memory_plan() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace ember::graph
