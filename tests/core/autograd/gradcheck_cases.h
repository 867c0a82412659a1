// A registry of gradcheck cases: each test file registers cases for the ops it covers, and
// gradcheck_test.cpp runs them all and proves every differentiable op has one.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "ember/autograd/record.h"

namespace ember::testing {

/** One op checked by finite differences at some inputs. */
struct GradcheckCase {
  std::string op;     // the name in differentiable_ops() (ember/ops.def)
  std::string label;  // what is special about these inputs
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  std::function<std::vector<Tensor>()> inputs;  // float64, requires_grad where checked
  bool second_order = true;                     // also run gradgradcheck
  autograd::GradcheckOptions opts = {};         // step and tolerances
};

/** All registered cases. */
std::vector<GradcheckCase>& gradcheck_cases();

// Note [Second-order gradchecks in parts]
// The second-order checks of every case took 9 s on the CPU and 113 s under ASan + UBSan, as one
// test each on the CPU, the reference backend and CUDA. Each is kGradcheckParts tests instead,
// the ops dealt round-robin in registration order (gradcheck_part), so that they spread over the
// cores and over the shards of the sanitizer pass (Note [Test shards] in tests/CMakeLists.txt).
/** How many tests the second-order checks of one device are split into. */
inline constexpr int kGradcheckParts = 8;

/** The part, in [0, kGradcheckParts), that the cases of `op` belong to. */
int gradcheck_part(const std::string& op);

/** Registers a case at static-initialisation time. */
struct RegisterGradcheck {
  RegisterGradcheck(GradcheckCase c) { gradcheck_cases().push_back(std::move(c)); }  // NOLINT
};

/** A float64 tensor of `sizes` with values in [lo, hi), seeded, requiring grad. */
inline Tensor input(IntList sizes, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Generator gen(seed);
  Tensor t = add(mul(rand(sizes, DType::Float64, &gen), hi - lo), lo);
  return t.requires_grad_(true);
}

/** `t` on the device of `like` (one of the case's inputs): a case that makes tensors of its own
 * (indices, masks, constants) then runs unchanged on any device (gradcheck_device_test.cpp). */
inline Tensor on(const Tensor& like, const Tensor& t) {
  return t.to(like.device());
}

}  // namespace ember::testing

#define EMBER_GRADCHECK_CONCAT_(a, b) a##b
#define EMBER_GRADCHECK_CONCAT(a, b) EMBER_GRADCHECK_CONCAT_(a, b)
/** Registers a gradcheck case: EMBER_GRADCHECK_CASE({"add", "broadcast", fn, inputs}); */
#define EMBER_GRADCHECK_CASE(...)                                    \
  static ::ember::testing::RegisterGradcheck EMBER_GRADCHECK_CONCAT( \
      kGradcheckCase, __COUNTER__)(::ember::testing::GradcheckCase __VA_ARGS__)
