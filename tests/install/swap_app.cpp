// One application binary for the backend-swap check (run.sh): it knows nothing of backends.
//   swap_app OUT.safetensors   computes a small CNN step on the best device (EMBER_DEVICE,
//                              or the best one installed) and saves outputs and gradients
//   swap_app compare A B       exits 0 if two such files agree (float32 tolerances)
#include <cmath>
#include <cstdio>
#include <string>

#include <ember/ember.h>

namespace {

using namespace ember;

int compute(const std::string& out) {
  const Device device = best_device();
  Generator gen(2024);
  // Everything is made on `device` itself: the CPU may have no backend in this deployment.
  const TensorOptions f32(DType::Float32, device);
  auto leaf = [&](IntList sizes, double scale) {
    return (randn(sizes, f32, &gen) * scale).detach().requires_grad_(true);
  };
  const Tensor x = randn({4, 3, 12, 12}, f32, &gen);
  const Tensor target =
      from_vector<int64_t>({1, 0, 3, 2}, {4}, TensorOptions(DType::Int64, device));
  Tensor w1 = leaf({8, 3, 3, 3}, 0.2), b1 = leaf({8}, 0.1);
  Tensor w2 = leaf({4, 8 * 5 * 5}, 0.05), b2 = leaf({4}, 0.1);
  const Tensor h = max_pool2d(relu(conv2d(x, w1, b1)), {2, 2});
  const Tensor logits = linear(h.reshape({4, -1}), w2, b2);
  const Tensor loss = cross_entropy(logits, target);
  loss.backward();
  io::save(out,
           {{"logits", logits.detach()},
            {"loss", loss.detach()},
            {"grad.w1", w1.grad()},
            {"grad.b1", b1.grad()},
            {"grad.w2", w2.grad()},
            {"grad.b2", b2.grad()}},
           {{"device", device.str()}});
  std::printf("device %s: loss %.6f\n", device.str().c_str(), loss.to(Device::cpu()).item<float>());
  return 0;
}

/** True if two float32 tensors loaded from files agree within float32 tolerances (read on the
 *  host, so no backend is needed). */
bool close(const Tensor& a, const Tensor& b) {
  if (a.dtype() != DType::Float32 || b.dtype() != DType::Float32 || a.numel() != b.numel()) {
    return false;
  }
  const float* p = a.contiguous().data_ptr<float>();
  const float* q = b.contiguous().data_ptr<float>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (!(std::abs(p[i] - q[i]) <= 1e-5 + 1e-4 * std::abs(q[i]))) return false;
  }
  return true;
}

int compare(const std::string& a, const std::string& b) {
  const StateDict x = io::load(a), y = io::load(b);
  if (x.size() != y.size()) {
    std::printf("%s has %zu tensors, %s has %zu\n", a.c_str(), x.size(), b.c_str(), y.size());
    return 1;
  }
  int bad = 0;
  for (const auto& [name, t] : x) {
    const auto it = y.find(name);
    if (it == y.end() || !close(t, it->second)) {
      std::printf("%s differs between %s (%s) and %s (%s)\n", name.c_str(), a.c_str(),
                  io::load_metadata(a).at("device").c_str(), b.c_str(),
                  io::load_metadata(b).at("device").c_str());
      ++bad;
    }
  }
  return bad == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 4 && std::string(argv[1]) == "compare") return compare(argv[2], argv[3]);
    if (argc == 2) return compute(argv[1]);
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "swap_app: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "usage: swap_app OUT.safetensors | swap_app compare A B\n");
  return 64;
}
