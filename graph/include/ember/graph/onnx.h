// ONNX import: an ONNX model file (ai.onnx, opsets 13 to 28) as an ember::graph::Graph; and
// export: a function of tensors or a module, run once and recorded, as an ONNX model file.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <ember/graph/graph.h>
#include <ember/ops/compile.h>

namespace ember::graph {

/** The newest ai.onnx opset the importer reads; each op is read from its version at opset 13 on
 *  (Note [ONNX ops onto graph ops] in graph/onnx/import.cpp). */
inline constexpr int64_t kOnnxMaxOpset = 28;

/** Loads the ONNX model at `path` (tensors in external data files are read from its folder,
 *  never from outside it). A file that is not a model is an IoError; an op, attribute, dtype or
 *  opset Ember does not support is a NotImplementedError naming the node, op and opset. */
Graph load_onnx(const std::filesystem::path& path);

/** Loads an ONNX model from its serialized bytes. `base_dir` is the folder external data files
 *  are read from; empty, a model with external data is refused. */
Graph load_onnx_bytes(std::string_view bytes, const std::filesystem::path& base_dir = {});

/** The ai.onnx opset the exporter writes by default. */
inline constexpr int64_t kOnnxExportOpset = 17;
/** The newest ai.onnx opset the exporter writes when asked (ScatterElements' max and min). */
inline constexpr int64_t kOnnxExportMaxOpset = 18;

/** What export_onnx writes besides the nodes, as torch.onnx.export's arguments. */
struct ExportOptions {
  /** The inputs' names, in order; missing ones are "input_<i>". */
  std::vector<std::string> input_names;
  /** The outputs' names, in order; missing ones are "output_<i>". */
  std::vector<std::string> output_names;
  /** Per input or output name, its symbolic dims: axis -> symbol ("batch"). */
  std::map<std::string, std::map<int64_t, std::string>> dynamic_axes;
  /** The opset written: kOnnxExportOpset (17) or kOnnxExportMaxOpset (18). */
  int64_t opset_version = kOnnxExportOpset;
  /** Tensors the function reads that are weights, by name: each becomes an initializer of that
   *  name (other tensors it reads become constants). */
  std::vector<std::pair<std::string, Tensor>> parameters;
};

/** Runs `fn` once on (copies of) `example_inputs`, records the kernel calls it makes and writes
 *  them as an ONNX model (opset 17, or 18 when asked): the inputs are the graph's inputs, the
 *  tensors it returns its outputs, parameters and other tensors it reads initializers. With
 *  dynamic_axes the function runs again with those axes one larger (Note [Dynamic axes by a
 *  second run] in graph/onnx/export.cpp). A kernel, view or host read with no exact ONNX form
 *  is a NotImplementedError naming it ("[onnx.export] ..."), never a wrong model. */
std::string export_onnx_bytes(const TensorFn& fn, const std::vector<Tensor>& example_inputs,
                              const ExportOptions& options = {});

/** export_onnx_bytes written to the file `path` (an IoError when it cannot be written). */
void export_onnx(const TensorFn& fn, const std::vector<Tensor>& example_inputs,
                 const std::filesystem::path& path, const ExportOptions& options = {});

/** Anything exported as a module: an nn::Module, or a type with its named_parameters(),
 *  named_buffers(), is_training() and train(bool). */
template <typename M>
concept ExportableModule = requires(M& m) {
  m.named_parameters();
  m.named_buffers();
  m.train(false);
};

namespace detail {
/** Returns write(fn, options) with `module` in eval mode (restored after) and its parameters and
 *  buffers added to options.parameters by name; `fn` defaults to the module on one input. */
template <ExportableModule Module, typename Write>
auto export_module(Module& module, ExportOptions options, TensorFn fn, Write write) {
  if (!fn) {
    fn = [&module](const std::vector<Tensor>& in) { return std::vector<Tensor>{module(in.at(0))}; };
  }
  for (auto& named : module.named_parameters()) options.parameters.push_back(named);
  for (auto& named : module.named_buffers()) options.parameters.push_back(named);
  // The mode is restored by hand, not by a destructor: train() may throw (a Python module's
  // override), and a throw while unwinding would end the process.
  const bool was_training = module.is_training();
  module.train(false);
  const auto restore = [&] { module.train(was_training); };
  using Result = decltype(write(fn, options));
  if constexpr (std::is_void_v<Result>) {
    try {
      write(fn, options);
    } catch (...) {
      restore();
      throw;
    }
    restore();
  } else {
    std::optional<Result> result;
    try {
      result.emplace(write(fn, options));
    } catch (...) {
      restore();
      throw;
    }
    restore();
    return std::move(*result);
  }
}
}  // namespace detail

/** Exports a module called by `fn` (by default its forward on the one input) in eval mode, its
 *  parameters and buffers as named initializers; its mode is restored. */
template <ExportableModule Module>
std::string export_onnx_bytes(Module& module, const std::vector<Tensor>& example_inputs,
                              ExportOptions options = {}, TensorFn fn = {}) {
  return detail::export_module(module, std::move(options), std::move(fn),
                               [&](const TensorFn& f, const ExportOptions& o) {
                                 return export_onnx_bytes(f, example_inputs, o);
                               });
}

/** export_onnx_bytes of a module written to the file `path`. */
template <ExportableModule Module>
void export_onnx(Module& module, const std::vector<Tensor>& example_inputs,
                 const std::filesystem::path& path, ExportOptions options = {}, TensorFn fn = {}) {
  detail::export_module(
      module, std::move(options), std::move(fn),
      [&](const TensorFn& f, const ExportOptions& o) { export_onnx(f, example_inputs, path, o); });
}

}  // namespace ember::graph
