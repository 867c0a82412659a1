// Fuzz target: the ONNX importer (graph::load_onnx_bytes) and the graphs it makes. Every input
// must load or throw an ember::Error starting with "[onnx]"; a model that loads is run on small
// zero inputs, where any ember::Error is an answer. Anything else is a finding.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <ember/ember.h>
#include <ember/graph/onnx.h>

#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  graph::Graph g;
  try {
    g = graph::load_onnx_bytes(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const Error& e) {
    fuzz::expect_prefix(e.what(), "[onnx]");
    return 0;
  }
  // Inputs of the declared dtype and shape, symbolic dims 1; big ones are not worth the time.
  std::map<std::string, Tensor> feeds;
  for (const graph::ValueInfo& v : g.inputs()) {
    Shape sizes;
    int64_t numel = 1;
    for (const graph::Dim& d : v.shape.value_or(std::vector<graph::Dim>{})) {
      const int64_t n = d.size >= 0 ? d.size : 1;
      if (n > 4096 || (numel *= std::max<int64_t>(n, 1)) > 4096) return 0;
      sizes.push_back(n);
    }
    feeds[v.name] = zeros(sizes, TensorOptions(v.dtype));
  }
  try {
    for (const auto& [name, t] : g.run(feeds)) {
      if (!t.defined()) std::abort();
    }
  } catch (const Error&) {
  }
  return 0;
}
