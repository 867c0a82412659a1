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

/** A torch.save file's object in Python terms: dict, list, tuple, str, int, float, bool, None
 *  and tensors. */
nb::object to_python(io::TorchValue& v) {
  using K = io::TorchValue::Kind;
  switch (v.kind) {
    case K::None:
      return nb::none();
    case K::Bool:
      return nb::bool_(v.b);
    case K::Int:
      return nb::int_(v.i);
    case K::Float:
      return nb::float_(v.f);
    case K::Str:
      return nb::str(v.s.data(), v.s.size());
    case K::Tensor:
      return nb::cast(std::move(v.tensor));
    case K::Tuple:
    case K::List: {
      nb::list out;
      for (io::TorchValue& item : v.items) out.append(to_python(item));
      return v.kind == K::Tuple ? nb::object(nb::tuple(out)) : nb::object(out);
    }
    case K::Dict: {
      nb::dict out;
      for (size_t k = 0; k + 1 < v.items.size(); k += 2) {
        nb::object key = to_python(v.items[k]);
        if (PyObject_Hash(key.ptr()) == -1) {  // a list as a key: the file is malformed
          PyErr_Clear();
          throw IoError(fmt::format("[io.load] a dict key of type {} cannot be a Python dict key",
                                    py_type_name(key)));
        }
        out[key] = to_python(v.items[k + 1]);
      }
      return out;
    }
  }
  return nb::none();
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
  m.def(
      "load_object",
      [](const std::filesystem::path& path) {
        io::TorchValue v;
        {
          GilRelease release;
          v = io::load_torch_object(path.string());
        }
        return to_python(v);
      },
      "path"_a, nb::sig("def load_object(path: str | os.PathLike[str]) -> object"),
      "The object a torch.save file holds, nested as saved (dicts, lists, tuples, numbers, "
      "strings, tensors); runs none of the file's code.");
  m.def(
      "tensor_from_bytes",
      [](nb::bytes data, DType dtype) {
        const size_t item = itemsize(dtype);
        EMBER_CHECK_IO(data.size() % item == 0,
                       "[io.load] a {} storage of {} bytes is not a whole number of elements",
                       dtype, data.size());
        Tensor t = empty({static_cast<int64_t>(data.size() / item)}, {dtype, Device::cpu()});
        if (data.size() > 0) std::memcpy(t.data_ptr(), data.c_str(), data.size());
        return t;
      },
      "data"_a, "dtype"_a, "A 1-d CPU tensor of `dtype` holding the bytes (a storage of a file).");
  m.def(
      "tensor_bytes",
      [](const Tensor& t) {
        const Tensor c = t.detach().to(Device::cpu()).contiguous();
        return nb::bytes(static_cast<const char*>(c.data_ptr()), c.nbytes());
      },
      "tensor"_a, "The elements of a tensor in row-major order as bytes (a storage of a file).");
  m.def(
      "write_file",
      [](const std::filesystem::path& path, nb::bytes data) {
        const std::string_view bytes(data.c_str(), data.size());
        GilRelease release;
        io::write_bytes(path.string(), bytes);
      },
      "path"_a, "data"_a,
      "Writes bytes to what the path names: a regular file atomically (Note [Writing files]).");
}

}  // namespace ember::python
