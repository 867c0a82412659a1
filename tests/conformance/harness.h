// The conformance kit's vocabulary: a Case runs one op (or a small composite) on inputs made
// by a seeded generator, once on the device under test and once on the reference backend.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ember/ember.h>

namespace ember::conformance {

/** Makes a case's inputs: the same seed gives the same values on every device. */
class Gen {
 public:
  /** Inputs of `dtype` on `device`, drawn from `seed`. */
  Gen(DType dtype, Device device, uint64_t seed) : dtype_(dtype), device_(device), seed_(seed) {}
  /** The dtype under test. */
  DType dtype() const { return dtype_; }
  /** The device under test. */
  Device device() const { return device_; }
  /** Values of the dtype under test in [lo, hi] (integers: whole numbers in range, uint8 from
   *  0, bool: false/true), built on the CPU and moved to the device. */
  Tensor operator()(IntList sizes, double lo = -1.0, double hi = 1.0) {
    return as(dtype_, sizes, lo, hi);
  }
  /** The same for another dtype. */
  Tensor as(DType dtype, IntList sizes, double lo = -1.0, double hi = 1.0);
  /** int64 indices in [0, n). */
  Tensor index(IntList sizes, int64_t n);
  /** A bool mask, about half true. */
  Tensor mask(IntList sizes);

 private:
  DType dtype_;
  Device device_;
  uint64_t seed_;
  uint64_t drawn_ = 0;  // draws so far: each draw uses its own stream
};

/** One set of inputs for a case: a label ("broadcast", "strided", "empty") and its maker. */
struct Variant {
  std::string label;
  std::function<std::vector<Tensor>(Gen&)> make;
};

/** One op (or composite) checked against the reference backend. */
struct Case {
  std::string name;                  // test-name suffix, e.g. "conv2d"
  std::vector<std::string> kernels;  // kernels it runs; kernels[0] decides the dtypes
  std::vector<Variant> variants;
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> fn;
  bool grad = true;           // also compare gradients of floating inputs (float32/float64)
  std::vector<DType> dtypes;  // empty: every dtype kernels[0] has on the device
  double tol_scale = 1.0;     // widens the per-dtype tolerances (long accumulations)
};

/** Every case, in a fixed order. */
const std::vector<Case>& all_cases();

}  // namespace ember::conformance
