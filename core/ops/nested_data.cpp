// NestedData: the rules of turning nested sequences of numbers into a tensor.
#include "ember/ops/nested_data.h"

#include "ember/ops/factory.h"
#include "ember/plugin_abi.h"
#include "ember/util/error.h"

namespace ember {

// Note [Nested data]
// ember.tensor([[1, 2], [3, 4]]) and its kin walk their data in order and report sequences and
// numbers here, so every front end converts by the same rules, checked once (and fuzzed in C++:
// tests/fuzz/nested_fuzz.cpp):
// - Each level of nesting is a dim, so nesting deeper than EMBER_MAX_DIMS is refused when the
//   sequence is entered, before the front end recurses into it: a list that contains itself is an
//   error, not a stack overflow.
// - The first number, or the first empty sequence, fixes the shape; every later sequence must
//   have the length seen at its depth and every number must sit at the shape's full depth.
// - Values stay exact int64 while every one is a bool or an integer and become doubles at the
//   first floating one (PyTorch's rule: the result is then floating anyway).
// - An integer dtype must hold every value (Note [Scalars that do not fit]); floating dtypes take
//   any number, as in PyTorch (1e40 is inf in float32).

void NestedData::begin_sequence(int64_t length) {
  EMBER_CHECK(depth_ < EMBER_MAX_DIMS,
              "[tensor] too many dimensions: the data nests sequences more than {} deep (a tensor "
              "has at most {} dims; does a list contain itself?)",
              EMBER_MAX_DIMS, EMBER_MAX_DIMS);
  EMBER_CHECK(length >= 0, "[tensor] a sequence of negative length {}", length);
  const auto d = static_cast<size_t>(depth_);
  if (!sizes_known_) {
    if (d == sizes_.size()) sizes_.push_back(length);
    if (length == 0) sizes_known_ = true;  // an empty sequence ends the shape
  }
  EMBER_CHECK(d < sizes_.size(),
              "[tensor] ragged nested sequence: a sequence at depth {} where numbers were seen at "
              "that depth",
              depth_);
  EMBER_CHECK(sizes_[d] == length,
              "[tensor] ragged nested sequence: expected a sequence of length {} at dim {} (got "
              "{})",
              sizes_[d], depth_, length);
  ++depth_;
}

void NestedData::end_sequence() {
  EMBER_ASSERT(depth_ > 0);
  --depth_;
}

void NestedData::value(Scalar v) {
  if (!sizes_known_) {
    sizes_known_ = true;
    sizes_.resize(static_cast<size_t>(depth_));
  }
  EMBER_CHECK(static_cast<size_t>(depth_) == sizes_.size(),
              "[tensor] ragged nested sequence: a number at depth {} where sequences of depth {} "
              "were seen",
              depth_, sizes_.size());
  if (v.kind() == Scalar::Kind::Float && kind_ != Scalar::Kind::Float) {
    floats_.assign(ints_.begin(), ints_.end());
    ints_.clear();
    ints_.shrink_to_fit();
  }
  if (v.kind() > kind_) kind_ = v.kind();
  if (kind_ == Scalar::Kind::Float) {
    floats_.push_back(v.to_double());
  } else {
    ints_.push_back(v.to_int());
  }
}

Tensor NestedData::finish(std::optional<DType> dtype, Device device) const {
  EMBER_ASSERT(depth_ == 0);
  const bool floating = kind_ == Scalar::Kind::Float;
  const bool none = ints_.empty() && floats_.empty();
  const DType natural = none || floating             ? default_dtype()
                        : kind_ == Scalar::Kind::Int ? DType::Int64
                                                     : DType::Bool;
  const DType want = dtype.value_or(natural);
  if (is_integral(want)) {
    for (double v : floats_) check_scalar_fits(Scalar(v), want, "tensor");
    for (int64_t v : ints_) check_scalar_fits(Scalar(v), want, "tensor");
  }
  const Tensor host = floating ? from_vector(floats_, sizes_, {DType::Float64, Device::cpu()})
                               : from_vector(ints_, sizes_, {DType::Int64, Device::cpu()});
  return host.to(want).to(device);
}

}  // namespace ember
