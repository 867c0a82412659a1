// toy_demo: trains a tiny two-layer regression with autograd on the "toy" device (the backend
// built next to it), trains the same model on the cpu, checks that both agree, and prints the toy
// device's memory statistics. Exits 1 if the toy backend is not loaded or the results differ.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <ember/ember.h>

namespace {

using ember::Device;
using ember::DType;
using ember::Tensor;

/** Examples, input features and hidden units of the regression. */
constexpr int64_t kExamples = 64, kInputs = 3, kHidden = 8;
/** Gradient-descent steps and their learning rate. */
constexpr int kSteps = 30;
constexpr double kLearningRate = 0.05;
/** Largest difference allowed between toy and cpu results, relative to 1 + |cpu value|. */
constexpr double kTolerance = 1e-4;

/** What one training run produced, read back to the host. */
struct Run {
  std::vector<double> losses;  // loss before each step
  std::vector<double> params;  // every parameter after the last step, flattened
};

/** The values of `t` on the host as doubles. */
std::vector<double> host_values(const Tensor& t) {
  const Tensor h = t.to(Device::cpu()).to(DType::Float64).contiguous();
  const double* p = h.data_ptr<double>();
  return std::vector<double>(p, p + h.numel());
}

/** Trains y = relu(x W1 + b1) W2 + b2 on `device` by plain gradient descent on the mean squared
 *  error. Data and initial weights come from a fixed seed on the cpu, so every device starts
 *  from the same numbers. */
Run train(Device device) {
  ember::Generator gen(2024);
  const Tensor x_host = ember::randn({kExamples, kInputs}, {}, &gen);
  const Tensor true_w = ember::tensor({{2.0}, {-3.0}, {0.5}});
  const Tensor y_host = ember::add(ember::matmul(x_host, true_w), 1.0);

  const Tensor x = x_host.to(device), y = y_host.to(device);
  std::vector<Tensor> params = {
      ember::mul(ember::randn({kInputs, kHidden}, {}, &gen), 0.5),  // W1
      ember::zeros({kHidden}),                                      // b1
      ember::mul(ember::randn({kHidden, 1}, {}, &gen), 0.5),        // W2
      ember::zeros({1}),                                            // b2
  };
  for (Tensor& p : params) p = p.to(device).requires_grad_();

  Run run;
  for (int step = 0; step < kSteps; ++step) {
    const Tensor hidden = ember::relu(ember::add(ember::matmul(x, params[0]), params[1]));
    const Tensor pred = ember::add(ember::matmul(hidden, params[2]), params[3]);
    const Tensor err = ember::sub(pred, y);
    const Tensor loss = ember::mul(ember::sum(ember::mul(err, err)), 1.0 / kExamples);
    loss.backward();
    run.losses.push_back(loss.item());
    ember::autograd::NoGradGuard no_grad;  // the update is not part of the graph
    for (Tensor& p : params) {
      ember::sub_(p, ember::mul(p.grad(), kLearningRate));
      p.mutable_grad() = Tensor();  // the next backward starts from no gradient
    }
  }
  for (const Tensor& p : params) {
    for (double v : host_values(p)) run.params.push_back(v);
  }
  return run;
}

/** Largest |a - b| / (1 + |b|) over two equally long lists. */
double worst_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]) / (1 + std::abs(b[i])));
  }
  return worst;
}

int run_demo() {
  ember::init();
  const int16_t toy = ember::find_device_type("toy");
  if (toy < 0 || ember::device_type(toy).count == 0) {
    std::fprintf(
        stderr,
        "[toy_demo] the toy device type is not loaded: %s (set EMBER_PLUGIN_PATH to the "
        "folder holding libember-toy.so, e.g. EMBER_PLUGIN_PATH=build ./build/toy_demo; "
        "`ember plugins` shows what was found)\n",
        toy < 0 ? "no plugin registered it" : ember::device_type(toy).unusable_reason.c_str());
    return 1;
  }
  std::printf("device types:");
  for (const ember::DeviceTypeEntry& e : ember::device_types()) {
    std::printf(" %s (priority %d)", e.name.c_str(), e.table.priority);
  }
  std::printf("\nbest device: %s (toy's priority is the lowest, so it is never the best)\n",
              ember::best_device().str().c_str());

  const Run on_toy = train(Device("toy"));
  const Run on_cpu = train(Device::cpu());
  std::printf("loss on toy: %.6f -> %.6f after %d steps; on cpu: %.6f -> %.6f\n",
              on_toy.losses.front(), on_toy.losses.back(), kSteps, on_cpu.losses.front(),
              on_cpu.losses.back());
  const double worst = std::max(worst_difference(on_toy.losses, on_cpu.losses),
                                worst_difference(on_toy.params, on_cpu.params));
  const ember_memory_stats m = ember::memory_stats(Device("toy"));
  std::printf(
      "toy memory: %llu bytes in use (the run's tensors are gone), peak %llu bytes, %llu "
      "allocations\n",
      static_cast<unsigned long long>(m.allocated),
      static_cast<unsigned long long>(m.peak_allocated),
      static_cast<unsigned long long>(m.num_allocs));
  if (!(worst <= kTolerance)) {
    std::fprintf(stderr,
                 "[toy_demo] toy and cpu disagree: largest relative difference %.3g over %zu "
                 "losses and %zu parameters (allowed %.1g; run `ember conformance --device toy` "
                 "to find the kernel)\n",
                 worst, on_toy.losses.size(), on_toy.params.size(), kTolerance);
    return 1;
  }
  std::printf("toy and cpu agree: largest relative difference %.3g (allowed %.1g)\n", worst,
              kTolerance);
  return 0;
}

}  // namespace

int main() {
  try {
    return run_demo();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[toy_demo] %s\n", e.what());
    return 1;
  }
}
