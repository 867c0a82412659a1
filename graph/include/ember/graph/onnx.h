// ONNX import: an ONNX model file (ai.onnx, opsets 13 to 28) as an ember::graph::Graph.
#pragma once

#include <filesystem>
#include <string_view>

#include <ember/graph/graph.h>

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

}  // namespace ember::graph
