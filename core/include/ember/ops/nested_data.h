// Tensors from nested sequences of numbers, walked by a front end (Python lists, a C++ tree).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ember/tensor/device.h"
#include "ember/tensor/scalar.h"
#include "ember/tensor/shape.h"
#include "ember/tensor/tensor.h"

namespace ember {

/** Builds a tensor from nested sequences that a front end walks in order, calling
 *  begin_sequence / value / end_sequence: every rule of the conversion (the shape, ragged data,
 *  the depth limit, the natural dtype, numbers that do not fit) is here (Note [Nested data]). */
class EMBER_API NestedData {
 public:
  /** Enters a sequence of `length` items; throws if it breaks the shape seen so far or nests
   *  deeper than a tensor's dims may go (before the front end recurses into it). */
  void begin_sequence(int64_t length);
  /** Leaves the sequence entered last. */
  void end_sequence();
  /** A number at the current position. */
  void value(Scalar v);
  /** The tensor, of `dtype` (or the natural dtype: float32 if any number is floating or there is
   *  none, else int64 if any is an integer, else bool) on `device` (the factories' default). */
  Tensor finish(std::optional<DType> dtype = std::nullopt, Device device = default_device()) const;

 private:
  Shape sizes_;               // the shape, as far as it is known
  bool sizes_known_ = false;  // a number or an empty sequence fixed its length
  int64_t depth_ = 0;         // sequences entered and not left
  Scalar::Kind kind_ = Scalar::Kind::Bool;
  std::vector<int64_t> ints_;   // the values while every one is a bool or an integer
  std::vector<double> floats_;  // the values once one is floating
};

}  // namespace ember
