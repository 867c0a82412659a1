// ember.onnx: ONNX models loaded as Ember graphs (ember::graph::load_onnx) and run on a device,
// with onnxruntime's InferenceSession calls; and modules exported (ember::graph::export_onnx).
#include <ember/graph/onnx.h>
#include <ember/graph/optimize.h>
#include <ember/graph/session.h>

#include <nanobind/stl/filesystem.h>

#include <fmt/format.h>

#include "bind.h"

namespace ember::python {

namespace {

/** A loaded model, run on its device from a memory plan per input shape (graph::Session). */
struct OnnxSession {
  graph::Session session;
  graph::OptimizeReport report;
};

Tensor feed_tensor(nb::handle value) {
  if (nb::isinstance<PyTensor>(value)) return nb::cast<const PyTensor&>(value);
  return tensor_from_data(value, std::nullopt, std::nullopt);
}

std::vector<std::string> names_of(const std::vector<graph::ValueInfo>& infos) {
  std::vector<std::string> names;
  for (const graph::ValueInfo& v : infos) names.push_back(v.name);
  return names;
}

/** The declared inputs or outputs as (name, dtype, shape) tuples; shape None when even the rank
 *  is unknown, else a list of sizes, a symbolic dim as its name, an unnamed unknown one None. */
nb::list value_infos(const std::vector<graph::ValueInfo>& infos) {
  nb::list out;
  for (const graph::ValueInfo& v : infos) {
    nb::object shape = nb::none();
    if (v.shape) {
      nb::list dims;
      for (const graph::Dim& d : *v.shape) {
        if (d.size >= 0) {
          dims.append(d.size);
        } else if (!d.symbol.empty()) {
          dims.append(d.symbol);
        } else {
          dims.append(nb::none());
        }
      }
      shape = dims;
    }
    out.append(nb::make_tuple(v.name, v.dtype, shape));
  }
  return out;
}

std::vector<Tensor> run_session(const OnnxSession& s, std::map<std::string, Tensor> feeds,
                                const std::optional<std::vector<std::string>>& output_names) {
  std::map<std::string, Tensor> out;
  {
    GilRelease release;
    out = s.session.run(feeds);
  }
  if (!output_names) {
    std::vector<Tensor> all;
    for (const graph::ValueInfo& v : s.session.graph().outputs()) all.push_back(out.at(v.name));
    return all;
  }
  std::vector<Tensor> picked;
  for (const std::string& name : *output_names) {
    auto it = out.find(name);
    EMBER_CHECK_KEY(it != out.end(), "[onnx] unknown output '{}' (the model's outputs are: {})",
                    name, fmt::join(names_of(s.session.graph().outputs()), ", "));
    picked.push_back(it->second);
  }
  return picked;
}

/** Appends the tensors of `item` (a tensor, or a tuple or list of such items) to `tensors`,
 *  depth first; `where` names what holds them ("the model's outputs"). */
void flatten_tensors(nb::handle item, std::vector<Tensor>& tensors, const char* where) {
  if (nb::isinstance<PyTensor>(item)) {
    tensors.push_back(nb::cast<const PyTensor&>(item));
    return;
  }
  EMBER_CHECK_TYPE(nb::isinstance<nb::tuple>(item) || nb::isinstance<nb::list>(item),
                   "[onnx.export] {} hold a {}, not a tensor (tensors, and tuples and lists of "
                   "them, are taken)",
                   where, nb::type_name(item.type()).c_str());
  for (nb::handle inner : item) flatten_tensors(inner, tensors, where);
}

/** `item` (as flatten_tensors reads it) with its tensors replaced, in the same order, by those
 *  of `in` from `next` on: tuples stay tuples, lists lists. */
nb::object unflatten_tensors(nb::handle item, const std::vector<Tensor>& in, size_t& next) {
  if (nb::isinstance<PyTensor>(item)) return wrap_tensor(in.at(next++));
  nb::list items;
  for (nb::handle inner : item) items.append(unflatten_tensors(inner, in, next));
  if (nb::isinstance<nb::tuple>(item)) return nb::tuple(items);
  return items;
}

/** The tensors a Python function returned: one tensor, or a tuple or list of them, nested ones
 *  (an LSTM's (output, (h_n, c_n))) flattened in order, as torch.onnx.export does. */
std::vector<Tensor> returned_tensors(nb::handle out) {
  EMBER_CHECK_TYPE(nb::isinstance<PyTensor>(out) || nb::isinstance<nb::tuple>(out) ||
                       nb::isinstance<nb::list>(out),
                   "[onnx.export] the model returned {}, not a tensor or a tuple of tensors",
                   nb::type_name(out.type()).c_str());
  std::vector<Tensor> tensors;
  flatten_tensors(out, tensors, "the model's outputs");
  return tensors;
}

}  // namespace

void bind_onnx(nb::module_& root) {
  nb::module_ m = root.def_submodule(
      "onnx", "ONNX models run as Ember graphs on any device (ember::graph::load_onnx).");
  nb::class_<OnnxSession>(m, "Session",
                          "A loaded ONNX model and the device it runs on; run() as "
                          "onnxruntime's InferenceSession but returning tensors, or call it with "
                          "the inputs in order.")
      .def_prop_ro(
          "input_names", [](const OnnxSession& s) { return names_of(s.session.graph().inputs()); },
          "The names of the inputs run() takes, in order.")
      .def_prop_ro(
          "output_names",
          [](const OnnxSession& s) { return names_of(s.session.graph().outputs()); },
          "The names of the outputs, in order.")
      .def_prop_ro(
          "inputs", [](const OnnxSession& s) { return value_infos(s.session.graph().inputs()); },
          "The declared inputs as (name, dtype, shape) tuples; a symbolic dim is its name.")
      .def_prop_ro(
          "outputs", [](const OnnxSession& s) { return value_infos(s.session.graph().outputs()); },
          "The declared outputs as (name, dtype, shape) tuples; a symbolic dim is its name.")
      .def_prop_ro(
          "device", [](const OnnxSession& s) { return s.session.device(); },
          "The device the model runs on.")
      .def_prop_ro(
          "optimizations",
          [](const OnnxSession& s) {
            nb::dict d;
            for (const graph::PassCount& p : s.report.passes) d[p.pass.c_str()] = p.changes;
            return d;
          },
          "What the graph optimizer did at load: rewrites made by each pass that ran.")
      .def_prop_ro(
          "node_count", [](const OnnxSession& s) { return s.session.graph().nodes().size(); },
          "How many nodes the (optimized) graph runs.")
      .def_prop_ro(
          "memory_plan",
          [](const OnnxSession& s) {
            const graph::MemoryPlan m = s.session.memory_plan();
            nb::dict d;
            d["planned_bytes"] = m.planned_bytes;
            d["intermediate_bytes"] = m.intermediate_bytes;
            d["weight_bytes"] = m.weight_bytes;
            d["peak_bytes"] = m.peak_bytes;
            d["plans"] = m.plans;
            d["planned_runs"] = m.planned_runs;
            d["unplanned_runs"] = m.unplanned_runs;
            d["unplanned_reason"] = m.unplanned_reason;
            return d;
          },
          "How runs use memory: the intermediates' planned buffers (planned_bytes, against "
          "intermediate_bytes with a buffer each), the weights, their sum (peak_bytes), and how "
          "many runs replayed a plan (graph::MemoryPlan).")
      .def(
          "run",
          [](const OnnxSession& s, std::optional<std::vector<std::string>> output_names,
             nb::dict input_feed) {
            std::map<std::string, Tensor> feeds;
            for (auto [k, v] : input_feed) feeds[nb::cast<std::string>(k)] = feed_tensor(v);
            return run_session(s, std::move(feeds), output_names);
          },
          "output_names"_a.none(), "input_feed"_a,
          "The outputs named (all of them for None), in that order, for inputs given by name as "
          "tensors or arrays.")
      .def(
          "__call__",
          [](const OnnxSession& s, nb::args args, nb::kwargs kwargs) -> nb::object {
            const std::vector<graph::ValueInfo>& inputs = s.session.graph().inputs();
            EMBER_CHECK(args.size() <= inputs.size(),
                        "[onnx] the model takes {} inputs ({}): got {} positional arguments",
                        inputs.size(), fmt::join(names_of(inputs), ", "), args.size());
            std::map<std::string, Tensor> feeds;
            for (size_t i = 0; i < args.size(); ++i) feeds[inputs[i].name] = feed_tensor(args[i]);
            for (auto [k, v] : kwargs) {
              const auto name = nb::cast<std::string>(k);
              EMBER_CHECK(!feeds.count(name), "[onnx] input '{}' is given twice", name);
              feeds[name] = feed_tensor(v);
            }
            std::vector<Tensor> out = run_session(s, std::move(feeds), std::nullopt);
            if (out.size() == 1) return wrap_tensor(out[0]);
            nb::list items;
            for (const Tensor& t : out) items.append(wrap_tensor(t));
            return nb::tuple(items);
          },
          "The outputs (one tensor, or a tuple of them) for the inputs in order or by name.");
  m.def(
      "load",
      [](nb::handle path_or_bytes, nb::handle device, const std::string& level,
         const std::vector<std::string>& disabled, bool mem_pattern) {
        const Device d = device.is_none() ? Device::cpu() : device_from(device);
        const graph::OptLevel opt = graph::opt_level_from_name(level);
        std::optional<std::string> bytes;
        std::filesystem::path path;
        if (nb::isinstance<nb::bytes>(path_or_bytes)) {
          const auto b = nb::borrow<nb::bytes>(path_or_bytes);
          bytes.emplace(b.c_str(), b.size());
        } else {
          path = nb::cast<std::filesystem::path>(path_or_bytes);
        }
        GilRelease release;
        graph::OptimizeReport report;
        graph::Graph g =
            graph::optimize(bytes ? graph::load_onnx_bytes(*bytes) : graph::load_onnx(path), opt,
                            &report, disabled);
        return OnnxSession{graph::Session(std::move(g), d, mem_pattern), std::move(report)};
      },
      "path"_a, "device"_a = nb::none(), "optimization_level"_a = "all",
      "disabled_optimizers"_a = std::vector<std::string>{}, "enable_mem_pattern"_a = true,
      nb::sig("def load(path: str | os.PathLike[str] | bytes, device: ember._C.device | str | "
              "int | None = None, optimization_level: str = 'all', disabled_optimizers: "
              "collections.abc.Sequence[str] = [], enable_mem_pattern: bool = True) -> Session"),
      "Loads an ONNX model (ai.onnx opsets 13 to 28) from a file, or from its bytes when it has no "
      "external data, to run on `device` (the CPU by default), optimized at `optimization_level` "
      "('none', 'basic', 'extended' or 'all', as "
      "onnxruntime's levels) without the passes named in `disabled_optimizers`; runs replay a "
      "memory plan made by the first run of each input shape unless `enable_mem_pattern` is "
      "False (both as onnxruntime's options of those names).");
  m.def(
      "_export",
      [](nb::object model, nb::list args, std::optional<std::filesystem::path> path,
         std::vector<std::string> input_names, std::vector<std::string> output_names,
         std::map<std::string, std::map<int64_t, std::string>> dynamic_axes,
         std::optional<int64_t> opset_version) -> std::optional<nb::bytes> {
        graph::ExportOptions opts;
        opts.input_names = std::move(input_names);
        opts.output_names = std::move(output_names);
        opts.dynamic_axes = std::move(dynamic_axes);
        opts.opset_version = opset_version.value_or(graph::kOnnxExportOpset);
        // The graph's inputs are the arguments' tensors, nested tuples and lists (an LSTM's
        // (h0, c0)) flattened in order, as torch.onnx.export takes them; the model is called
        // with the arguments' own structure.
        std::vector<Tensor> inputs;
        flatten_tensors(args, inputs, "the arguments");
        // The model is called from Python, with the GIL held: the export runs on this thread.
        TensorFn fn = [&model, &args](const std::vector<Tensor>& in) {
          size_t next = 0;
          const nb::object call_args = unflatten_tensors(nb::tuple(args), in, next);
          return returned_tensors(model(*call_args));
        };
        const bool is_module = nb::isinstance<nn::Module>(model);
        if (path) {
          if (is_module) {
            graph::export_onnx(nb::cast<nn::Module&>(model), inputs, *path, std::move(opts), fn);
          } else {
            graph::export_onnx(fn, inputs, *path, opts);
          }
          return std::nullopt;
        }
        const std::string bytes = is_module ? graph::export_onnx_bytes(nb::cast<nn::Module&>(model),
                                                                       inputs, std::move(opts), fn)
                                            : graph::export_onnx_bytes(fn, inputs, opts);
        return nb::bytes(bytes.data(), bytes.size());
      },
      "model"_a, "args"_a, "f"_a.none(), "input_names"_a, "output_names"_a, "dynamic_axes"_a,
      "opset_version"_a.none(),
      "Runs `model` once on `args` (tensors, or tuples and lists of them), recording it, and "
      "writes it as an ONNX model to the file "
      "`f`, or returns its bytes when `f` is None (ember::graph::export_onnx; ember.onnx.export "
      "is the public form).");
}

}  // namespace ember::python
