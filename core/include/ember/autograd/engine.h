// The backward engine: dependency counting over the graph reachable from the roots.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "ember/tensor/tensor.h"

namespace ember::autograd {

/** Accumulates d(sum of tensors * grad_tensors)/d(leaf) into every reachable leaf's .grad. */
EMBER_API void backward(const std::vector<Tensor>& tensors,
                        const std::vector<Tensor>& grad_tensors = {}, bool retain_graph = false,
                        bool create_graph = false);

/** Gradients of `outputs` w.r.t. `inputs` (not accumulated into .grad); only the part of the
 *  graph that reaches `inputs` runs. An input the outputs do not depend on is an error unless
 *  `allow_unused`, when its gradient is an undefined tensor. */
EMBER_API std::vector<Tensor> grad(const std::vector<Tensor>& outputs,
                                   const std::vector<Tensor>& inputs,
                                   const std::vector<Tensor>& grad_outputs = {},
                                   std::optional<bool> retain_graph = {}, bool create_graph = false,
                                   bool allow_unused = false);

/** Runs `callback` on this thread when the backward pass now running has finished all its
 *  nodes (Note [Callbacks at the end of backward]); throws outside a backward pass. */
EMBER_API void queue_callback(std::function<void()> callback);

}  // namespace ember::autograd
