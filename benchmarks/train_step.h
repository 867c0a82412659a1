// One SGD training step, shared by the model benchmarks (nn_bench, cuda_bench).
#pragma once

#include <ember/ember.h>
#include <ember/optim.h>

#include <optional>

namespace ember::bench {

/** Forward, cross-entropy loss, backward and one optimizer step of `model` on (x, y); with
 *  `amp`, the forward and the loss run under autocast to that dtype (backward outside it). */
inline void train_step(nn::Module& model, optim::Optimizer& opt, const Tensor& x, const Tensor& y,
                       std::optional<DType> amp = std::nullopt) {
  Tensor loss;
  {
    std::optional<amp::autocast> scope;
    if (amp) scope.emplace(x.device().type_name(), *amp);
    loss = cross_entropy(model(x), y);
  }
  opt.zero_grad();
  loss.backward();
  opt.step();
}

}  // namespace ember::bench
