// `ember inspect` and `ember bench`: ONNX model files from the command line, as
// onnxruntime_perf_test times them (ember::graph::load_onnx, graph::Session).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <ember/graph/graph.h>

namespace ember::tools {

/** What `ember inspect` is told. */
struct InspectOptions {
  std::string model;              ///< the .onnx file
  std::vector<std::string> dims;  ///< NAME=SIZE for symbolic dims (others are 1)
  bool run_nodes = true;          ///< run each node on every device to say which runs it
};

/** What `ember bench` is told. */
struct BenchOptions {
  std::string model;              ///< the .onnx file
  std::string device;             ///< empty: the best available device
  int64_t batch = 1;              ///< the size of every input's symbolic first dim
  std::vector<std::string> dims;  ///< NAME=SIZE for other symbolic dims (others are 1)
  int threads = 0;                ///< CPU threads (0: Ember's default)
  int64_t runs = 100;             ///< timed runs
  int64_t warmup = 5;             ///< untimed runs before them
  std::string level = "all";      ///< optimization level: none, basic, extended, all
  bool plan = true;               ///< replay a memory plan (onnxruntime's enable_mem_pattern)
};

/** Prints a model's inputs, outputs, weights, op counts and which loaded devices run each node. */
void inspect(const InspectOptions& options);

/** Times runs of a model on random inputs: latency percentiles, throughput, peak memory. */
void bench(const BenchOptions& options);

/** Random inputs for a graph's declared inputs on `device`: a symbolic first dim is `batch`, a
 *  symbolic dim named in `dims` (NAME=SIZE) that size, any other 1; floats from randn, integers
 *  and bools zero. `command` names the caller in errors. */
std::map<std::string, Tensor> example_inputs(const graph::Graph& g, int64_t batch,
                                             const std::vector<std::string>& dims, Device device,
                                             const char* command);

}  // namespace ember::tools
