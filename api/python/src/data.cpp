// ember._C.data: the C++ datasets (TensorDataset, MNIST), the IDX reader and the distributed
// sampler of <ember/data.h>. ember/utils/data (DataLoader, samplers, collation) and
// ember/datasets.py build PyTorch's Python API on them (Note [Native batches]).
#include <ember/data.h>
#include <ember/dispatch/device_registry.h>

#include "bind.h"

namespace ember::python {
namespace {

// Note [Native batches]
// A C++ dataset makes a whole batch in one call, get_batch(indices): one index_select per field
// for TensorDataset and MNIST, with the GIL released, so DataLoader worker threads overlap. The
// Python DataLoader takes that path when it would collate with default_collate anyway (a batch of
// (x, y) samples collates to [stack(x), stack(y)], exactly what get_batch returns); with a custom
// collate_fn it calls __getitems__, PyTorch's batched fetch, which returns the samples themselves
// (views, made in one call).

/** `i` counted from the end when negative, as Python sequences are indexed. */
int64_t wrap_index(int64_t i, int64_t size) {
  return i < 0 ? i + size : i;
}

/** Every index of `indices` wrapped as wrap_index does. */
std::vector<int64_t> wrap_indices(std::vector<int64_t> indices, int64_t size) {
  for (int64_t& i : indices) i = wrap_index(i, size);
  return indices;
}

/** A sample's fields as a tuple of ember.Tensor objects (needs the GIL). */
nb::tuple as_tuple(const std::vector<Tensor>& fields) {
  nb::list out;
  for (const Tensor& t : fields) out.append(wrap_tensor(t));
  return nb::tuple(out);
}

}  // namespace

void bind_data(nb::module_& root) {
  nb::module_ m = root.def_submodule(
      "data", "The C++ datasets, the IDX reader and the distributed sampler (ember.utils.data).");

  nb::class_<data::Dataset>(m, "Dataset",
                            "A dataset implemented in C++: indexed samples, each a tuple of "
                            "tensors, and whole batches in one call.")
      .def("__len__", &data::Dataset::size, "The number of samples.")
      .def(
          "__getitem__",
          [](const data::Dataset& d, int64_t i) {
            std::vector<Tensor> fields;
            {
              GilRelease release;
              fields = d.get(wrap_index(i, d.size()));
            }
            return as_tuple(fields);
          },
          "index"_a, "Sample `index` as a tuple of tensors (negative counts from the end).")
      .def(
          "__getitems__",
          [](const data::Dataset& d, std::vector<int64_t> indices) {
            std::vector<std::vector<Tensor>> samples;
            {
              GilRelease release;
              const int64_t size = d.size();
              samples.reserve(indices.size());
              for (int64_t i : indices) samples.push_back(d.get(wrap_index(i, size)));
            }
            nb::list out;
            for (const std::vector<Tensor>& s : samples) out.append(as_tuple(s));
            return out;
          },
          "indices"_a, "The samples at `indices`, made in one call (PyTorch's batched fetch).")
      .def(
          "get_batch",
          [](const data::Dataset& d, std::vector<int64_t> indices) {
            return d.get_batch(wrap_indices(std::move(indices), d.size()));
          },
          "indices"_a, release_gil(),
          "The samples at `indices` collated: one tensor per field, stacked along a new dim 0.");

  nb::class_<data::TensorDataset, data::Dataset>(
      m, "TensorDataset", "Samples are the rows (dim 0) of tensors sharing size(0).")
      .def(
          "__init__",
          [](data::TensorDataset* self, nb::args tensors) {
            std::vector<Tensor> fields;
            for (nb::handle t : tensors) {
              EMBER_CHECK_TYPE(nb::isinstance<PyTensor>(t),
                               "[data.TensorDataset] expected tensors, got {}",
                               nb::cast<std::string>(t.type().attr("__name__")));
              fields.push_back(*nb::inst_ptr<PyTensor>(t));
            }
            new (self) data::TensorDataset(std::move(fields));
          },
          "tensors"_a, "Wraps the tensors; all must have the same size(0).")
      .def_prop_ro(
          "tensors", [](const data::TensorDataset& d) { return as_tuple(d.fields()); },
          "The whole tensors.");

  nb::class_<data::MNIST, data::Dataset>(
      m, "MNIST",
      "(Fashion-)MNIST from the four IDX files under a directory: images float32 [1, 28, 28] in "
      "[0, 1], labels int64.")
      .def(nb::init<const std::string&, bool, std::optional<int64_t>>(), "root"_a, "train"_a = true,
           "limit"_a = nb::none(), release_gil(),
           "Reads the train (60000) or test (10000) split under `root`, the first `limit` samples "
           "if given.")
      .def_prop_ro("images", &data::MNIST::images, "All images, float32 [N, 1, 28, 28].")
      .def_prop_ro("labels", &data::MNIST::labels, "All labels, int64 [N].");

  m.def(
      "find_fashion_mnist",
      [](std::optional<std::string> root) { return data::find_fashion_mnist(std::move(root)); },
      "root"_a = nb::none(),
      "The Fashion-MNIST directory: `root`, else $EMBER_DATA_DIR, else the Debian package's "
      "(dataset-fashion-mnist); IoError naming the places looked in.");
  m.def("read_idx", &data::read_idx, "path"_a, release_gil(),
        "An IDX file of unsigned bytes (gzipped or not) as a uint8 tensor.");

  nb::class_<data::DistributedSampler>(
      m, "DistributedSampler",
      "Each rank's share of a seeded permutation: every world_size-th index from position rank.")
      .def(nb::init<int, int, bool, uint64_t, bool>(), "rank"_a = -1, "world_size"_a = -1,
           "shuffle"_a = true, "seed"_a = 0, "drop_last"_a = false,
           "A sampler for `rank` of `world_size` (-1: the default process group's).")
      .def("indices", &data::DistributedSampler::indices, "size"_a, "epoch"_a,
           "This rank's indices of a dataset of `size` in epoch `epoch`.")
      .def("num_samples", &data::DistributedSampler::num_samples, "size"_a,
           "How many indices one rank gets from a dataset of `size`.")
      .def_prop_ro("rank", &data::DistributedSampler::rank, "This sampler's rank.")
      .def_prop_ro("world_size", &data::DistributedSampler::world_size, "The number of ranks.");

  m.def(
      "_pin_memory_available", [] { return pinned_memory_device_type() >= 0; },
      "True if a loaded backend with a device offers pinned host memory.");
}

}  // namespace ember::python
