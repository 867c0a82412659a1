// Keeping a non-leaf's gradient in its node (Note [retain_grad stores in the node] in
// core/autograd/tensor_autograd.cpp); shared by Tensor::retain_grad and the recorder, which
// moves a retained gradient to a tensor's new history.
#pragma once

#include "ember/autograd/node.h"

namespace ember::autograd {

/** Makes `m`'s grad_fn keep the gradient of its output `m.output_nr` and marks `m` as retaining;
 *  nothing for a leaf or a tensor that retains already. */
void retain_grad_in_node(AutogradMeta& m);

}  // namespace ember::autograd
