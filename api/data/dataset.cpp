// Dataset's default batching and TensorDataset.
#include "ember/data/dataset.h"

#include "ember/ops/factory.h"
#include "ember/ops/index.h"

namespace ember::data {

std::vector<Tensor> Dataset::get_batch(const std::vector<int64_t>& indices) const {
  EMBER_CHECK(!indices.empty(), "[data.get_batch] no indices: a batch needs at least one example");
  std::vector<std::vector<Tensor>> examples;
  examples.reserve(indices.size());
  for (int64_t i : indices) {
    examples.push_back(get(i));
    EMBER_CHECK(examples.back().size() == examples.front().size(),
                "[data.get_batch] example {} has {} fields but example {} has {}", i,
                examples.back().size(), indices.front(), examples.front().size());
  }
  std::vector<Tensor> out;
  out.reserve(examples.front().size());
  for (size_t f = 0; f < examples.front().size(); ++f) {
    std::vector<Tensor> column;
    column.reserve(examples.size());
    for (const std::vector<Tensor>& e : examples) column.push_back(e[f]);
    out.push_back(stack(column, 0));
  }
  return out;
}

TensorDataset::TensorDataset(std::vector<Tensor> fields) : fields_(std::move(fields)) {
  EMBER_CHECK(!fields_.empty(), "[data.TensorDataset] needs at least one field");
  for (size_t f = 0; f < fields_.size(); ++f) {
    EMBER_CHECK_TYPE(fields_[f].defined(), "[data.TensorDataset] field {} is undefined", f);
    EMBER_CHECK(fields_[f].dim() >= 1,
                "[data.TensorDataset] field {} is 0-d: fields need a dim 0 indexing examples", f);
    EMBER_CHECK(fields_[f].size(0) == fields_[0].size(0),
                "[data.TensorDataset] fields differ in size(0): field 0 has {} examples but field "
                "{} has {} (shapes {} and {})",
                fields_[0].size(0), f, fields_[f].size(0), fields_[0].sizes(), fields_[f].sizes());
  }
}

int64_t TensorDataset::size() const {
  return fields_[0].size(0);
}

std::vector<Tensor> TensorDataset::get(int64_t i) const {
  EMBER_CHECK_INDEX(i >= 0 && i < size(),
                    "[data.TensorDataset] index {} out of range for {} examples", i, size());
  std::vector<Tensor> out;
  out.reserve(fields_.size());
  for (const Tensor& f : fields_) out.push_back(f.select(0, i));
  return out;
}

std::vector<Tensor> TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  for (int64_t i : indices) {
    EMBER_CHECK_INDEX(i >= 0 && i < size(),
                      "[data.TensorDataset] index {} out of range for {} examples", i, size());
  }
  Tensor index = from_vector(indices, {static_cast<int64_t>(indices.size())},
                             TensorOptions(DType::Int64, Device::cpu()));
  std::vector<Tensor> out;
  out.reserve(fields_.size());
  for (const Tensor& f : fields_) out.push_back(index_select(f, 0, index.to(f.device())));
  return out;
}

}  // namespace ember::data
