// Dataset: indexed examples, each a list of tensors (its fields); TensorDataset over whole tensors.
#pragma once

#include <cstdint>
#include <vector>

#include "ember/tensor/tensor.h"

namespace ember::data {

/** Indexed examples; get() and get_batch() may be called from several threads at once. */
class Dataset {
 public:
  virtual ~Dataset() = default;
  /** Number of examples. */
  virtual int64_t size() const = 0;
  /** The fields of example `i` (e.g. {image, label}), 0 <= i < size(). */
  virtual std::vector<Tensor> get(int64_t i) const = 0;
  /** The fields of several examples, each stacked along a new dim 0; defaults to stacking get(i).
   */
  virtual std::vector<Tensor> get_batch(const std::vector<int64_t>& indices) const;
};

/** Examples are rows (dim 0) of tensors that all have the same size(0). */
class TensorDataset : public Dataset {
 public:
  /** Wraps the fields; throws unless there is at least one and all share size(0). */
  explicit TensorDataset(std::vector<Tensor> fields);
  /** size(0) of the fields. */
  int64_t size() const override;
  /** Row `i` of every field (views, no copy). */
  std::vector<Tensor> get(int64_t i) const override;
  /** One index_select per field. */
  std::vector<Tensor> get_batch(const std::vector<int64_t>& indices) const override;
  /** The whole tensors. */
  const std::vector<Tensor>& fields() const { return fields_; }

 private:
  std::vector<Tensor> fields_;
};

}  // namespace ember::data
