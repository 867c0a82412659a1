// The optimizers' fused step kernels (private to libember).
#pragma once

#include <initializer_list>

#include "core/dispatch/call.h"
#include "ember/tensor/tensor.h"

namespace ember::optim::detail {

// Note [Optimizer steps through kernels]
// Each update rule is written once, as tensor ops in its step(): it runs on every device and
// dtype. A backend may also register the rule's fused kernel (sgd_step, adam_step, rmsprop_step
// in ember/ops.def: one pass over the parameter, its gradient and its state, in place); step()
// calls it for dense parameters whose device has one for their dtype, so a step is one kernel
// per parameter instead of about a dozen ops (and their temporaries). The kernels compute the
// same arithmetic in the same order; tests/api/optim compares both paths.
/** Runs core op `op`'s fused step kernel on `param`, its gradient and `state` (updated in place;
 *  null or undefined entries are skipped) if the parameter's device has one for its dtype and
 *  every tensor is dense; returns false, doing nothing, otherwise. */
bool fused_step(ops::Id op, KernelAttrs attrs, Tensor& param, std::initializer_list<Tensor*> state);

}  // namespace ember::optim::detail
