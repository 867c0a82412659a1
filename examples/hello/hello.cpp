// Tensors and autograd in a few lines, on whichever backend this machine has installed: the
// best device found next to Ember's core (EMBER_DEVICE picks another).
#include <ember/ember.h>

int main() {
  using namespace ember;
  const TensorOptions on(DType::Float32, best_device());
  const Tensor a = tensor({{1.0, 2.0}, {3.0, 4.0}}, on);
  const Tensor w = tensor({{0.5, -1.0}, {2.0, 0.25}}, on).requires_grad_(true);
  const Tensor loss = sum(relu(matmul(a, w)));  // relu([[4.5, -0.5], [9.5, -2]]) summed: 14
  loss.backward();
  fmt::print("ember {} on {}\n", version(), on.device);
  fmt::print("loss = {}\n", loss.item<float>());
  fmt::print("d loss / d w = {}\n", w.grad());  // a^T @ (relu' mask) = [[4, 0], [6, 0]]
  const bool ok = loss.item<float>() == 14.0f && sum(w.grad()).item<float>() == 10.0f;
  return ok ? 0 : 1;
}
