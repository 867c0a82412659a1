// The conformance kit: every op (or small composite) run on inputs made by a seeded generator,
// once on the device under test and once on the reference backend, values and gradients
// compared. `ember conformance` runs it on any loaded backend, an out-of-tree one included;
// tests/conformance runs it on every backend Ember builds.
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

/** The backend every other one is compared with. */
inline constexpr const char* kReference = "reference";

/** Device types to check: loaded, with devices, not the reference itself. */
std::vector<std::string> devices_under_test();

/** How one case went on one device. */
struct CaseResult {
  std::vector<std::string> missing;  // ops the case names that have no kernel on the device
  /** Dtypes the device has the case's first op for, but where the case (or its gradient) ran
   *  into an op without a kernel: "float16: [mul] no kernel for ...". Not compared. */
  std::vector<std::string> unclaimed_dtypes;
  int checked = 0;                    // (dtype, variant) pairs compared
  std::vector<std::string> failures;  // one line per mismatch or error
  /** The device claims the case: it has a kernel for every op the case names, and at least one
   *  dtype ran (Note [What a device claims] in conformance.cpp). */
  bool claimed() const {
    return missing.empty() && (checked > 0 || !failures.empty() || unclaimed_dtypes.empty());
  }
  /** Claimed, compared at least once, and no failure. */
  bool passed() const { return claimed() && checked > 0 && failures.empty(); }
};

/** Runs `c` on `device` and on the reference backend and compares them (gradients of float32
 *  and float64 inputs too, unless `grad` is false). A case the device does not claim is not
 *  run: its result lists the missing kernels. */
CaseResult run_case(const Case& c, const std::string& device, bool grad = true);

/** What `ember conformance` was asked. */
struct Options {
  std::vector<std::string> devices;  // empty: every device under test
  std::string filter;                // run only cases whose name contains it
  bool all = false;                  // every case must be claimed (a complete backend)
  bool grad = true;                  // also compare gradients
  bool verbose = false;              // list passing and unclaimed cases too
};

/** `ember conformance`: prints a line per case and a summary; returns the exit status (0: every
 *  claimed case passed and at least one was claimed). */
int run_cli(const Options& options);

}  // namespace ember::conformance
