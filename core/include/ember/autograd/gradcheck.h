// Finite-difference checks of backward formulas, in float64.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ember/tensor/tensor.h"

namespace ember::autograd {

/** A function of tensors returning one tensor, as gradcheck calls it. */
using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;

/** Tolerances and step for gradcheck. */
struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
};

/** Result of a check: ok, or which element disagreed and by how much. */
struct GradcheckResult {
  bool ok = true;
  std::string message;
};

/** Compares the analytical Jacobian of fn (via backward) with central finite differences at
 *  `inputs` (float64 tensors on any one device; those with requires_grad are checked). */
EMBER_API GradcheckResult gradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs,
                                    GradcheckOptions opts = {});

/** Checks second derivatives: gradcheck of (inputs, v) -> grad(fn(inputs), inputs, v) with
 *  create_graph, for a fixed random v. */
EMBER_API GradcheckResult gradgradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs,
                                        GradcheckOptions opts = {});

}  // namespace ember::autograd
