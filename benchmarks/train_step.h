// One SGD training step, shared by the model benchmarks (nn_bench, cuda_bench).
#pragma once

#include <ember/ember.h>
#include <ember/optim.h>

namespace ember::bench {

/** Forward, cross-entropy loss, backward and one optimizer step of `model` on (x, y). */
inline void train_step(nn::Module& model, optim::Optimizer& opt, const Tensor& x, const Tensor& y) {
  const Tensor loss = cross_entropy(model(x), y);
  opt.zero_grad();
  loss.backward();
  opt.step();
}

}  // namespace ember::bench
