// ember._C.io: safetensors files and PyTorch's torch.save files (<ember/io.h>). ember/io.py adds
// torch.load's map_location and is what ember.save and ember.load are.
#include <ember/io.h>
#include <nanobind/stl/filesystem.h>

#include "bind.h"

namespace ember::python {
namespace {

std::string py_type_name(nb::handle o) {
  return nb::cast<std::string>(o.type().attr("__name__"));
}

/** A state dict from a Python mapping of str to ember.Tensor, with a TypeError naming what is
 *  not (a module passed instead of its state_dict(), a nested checkpoint, a NumPy array). */
StateDict state_dict_from(nb::handle obj) {
  EMBER_CHECK_TYPE(PyMapping_Check(obj.ptr()) && nb::hasattr(obj, "items"),
                   "[io.save] expected a dict of tensors (such as module.state_dict()), got {}",
                   py_type_name(obj));
  StateDict out;
  for (nb::handle item : obj.attr("items")()) {
    nb::handle key = item[0], value = item[1];
    EMBER_CHECK_TYPE(nb::isinstance<nb::str>(key), "[io.save] keys must be str, got {} ({})",
                     py_type_name(key), nb::cast<std::string>(nb::repr(key)));
    const std::string name = nb::cast<std::string>(key);
    EMBER_CHECK_TYPE(nb::isinstance<PyTensor>(value),
                     "[io.save] '{}' is of type {}, not a tensor (a safetensors file holds tensors "
                     "only: save other values as metadata)",
                     name, py_type_name(value));
    out.emplace(name, *nb::inst_ptr<PyTensor>(value));
  }
  return out;
}

/** String metadata from a Python mapping, or none. */
io::Metadata metadata_from(nb::handle obj) {
  io::Metadata out;
  if (obj.is_none()) return out;
  EMBER_CHECK_TYPE(PyMapping_Check(obj.ptr()) && nb::hasattr(obj, "items"),
                   "[io.save] metadata must be a dict of str to str, got {}", py_type_name(obj));
  for (nb::handle item : obj.attr("items")()) {
    nb::handle key = item[0], value = item[1];
    EMBER_CHECK_TYPE(nb::isinstance<nb::str>(key) && nb::isinstance<nb::str>(value),
                     "[io.save] metadata must map str to str, got {} -> {}", py_type_name(key),
                     py_type_name(value));
    out.emplace(nb::cast<std::string>(key), nb::cast<std::string>(value));
  }
  return out;
}

}  // namespace

void bind_io(nb::module_& root) {
  nb::module_ m = root.def_submodule(
      "io", "safetensors and torch.save files: named tensors read and written without Python.");

  m.def(
      "save",
      [](nb::handle obj, const std::filesystem::path& path, nb::handle metadata) {
        const StateDict tensors = state_dict_from(obj);
        const io::Metadata meta = metadata_from(metadata);
        GilRelease release;
        io::save(path.string(), tensors, meta);
      },
      "obj"_a, "path"_a, "metadata"_a = nb::none(),
      nb::sig("def save(obj: collections.abc.Mapping[str, ember._C.Tensor], path: str | "
              "os.PathLike[str], metadata: collections.abc.Mapping[str, str] | None = None) -> "
              "None"),
      "Writes a dict of tensors (any device, any strides) as a safetensors file, atomically.");
  m.def(
      "load", [](const std::filesystem::path& path) { return io::load(path.string()); }, "path"_a,
      release_gil(),
      "Every tensor of a safetensors or torch.save file, on the CPU, by name (dotted for nested "
      "checkpoints).");
  m.def(
      "load_metadata",
      [](const std::filesystem::path& path) { return io::load_metadata(path.string()); }, "path"_a,
      release_gil(), "The string metadata of a safetensors file.");
  m.def(
      "load_torch",
      [](const std::filesystem::path& path) {
        io::TorchFile f;
        {
          GilRelease release;
          f = io::load_torch(path.string());
        }
        return nb::make_tuple(f.tensors, f.values);
      },
      "path"_a,
      nb::sig("def load_torch(path: str | os.PathLike[str]) -> tuple[dict[str, ember._C.Tensor], "
              "dict[str, str]]"),
      "A torch.save file's tensors and its other values (as str()), by dotted name; runs none of "
      "the file's code.");
}

}  // namespace ember::python
