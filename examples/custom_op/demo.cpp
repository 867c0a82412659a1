// A user program calling an op that a third-party plugin defines: myext::fused_bias_gelu from
// libember-fused_bias_gelu.so, found at run time through EMBER_PLUGIN_PATH (or Ember's plugin
// directory). Ember is not rebuilt and the program does not link the plugin. It checks
//   1. the op against the same math written with Ember's own ops: gelu(x + bias);
//   2. its backward op against finite differences (gradcheck, float64);
//   3. on a GPU, when the CUDA backend and the plugin's CUDA kernels are there, against the CPU.
// Exits 0 when every check passes.
#include <cstdio>

#include <ember/ember.h>

namespace {

using namespace ember;

/** The largest absolute difference between two tensors of one shape (on the CPU, in float64). */
double max_diff(const Tensor& a, const Tensor& b) {
  const Tensor d = abs(sub(a.to(Device::cpu()), b.to(Device::cpu())).to(DType::Float64));
  return d.numel() == 0 ? 0.0 : amax(d).item<double>();
}

/** Prints one check and returns whether it passed. */
bool report(const char* what, bool ok, const std::string& detail) {
  std::printf("%-44s %s  %s\n", what, ok ? "ok  " : "FAIL", detail.c_str());
  return ok;
}

}  // namespace

int main() {
  try {
    init();
    if (find_extension_op("myext::fused_bias_gelu") == nullptr) {
      std::fprintf(stderr,
                   "custom_op_demo: no loaded plugin defines myext::fused_bias_gelu: set "
                   "EMBER_PLUGIN_PATH to the folder holding libember-fused_bias_gelu.so "
                   "(`ember plugins` shows what was found)\n");
      return 1;
    }
    const OpHandle fused_gelu("myext::fused_bias_gelu");
    bool ok = true;

    // 1. Forward and gradients against Ember's own gelu(x + bias).
    manual_seed(7);
    const Tensor x = randn({64, 48}, DType::Float32).requires_grad_(true);
    const Tensor bias = randn({48}, DType::Float32).requires_grad_(true);
    const Tensor y = fused_gelu(x, bias);
    const Tensor y_ref = gelu(add(x, bias));
    ok &= report("forward vs gelu(x + bias), float32", max_diff(y, y_ref) < 1e-5,
                 fmt::format("max |diff| {:.2e}", max_diff(y, y_ref)));
    const std::vector<Tensor> g = autograd::grad({sum(mul(y, y))}, {x, bias});
    const std::vector<Tensor> g_ref = autograd::grad({sum(mul(y_ref, y_ref))}, {x, bias});
    const double dg = std::max(max_diff(g[0], g_ref[0]), max_diff(g[1], g_ref[1]));
    ok &= report("gradients vs Ember's ops, float32", dg < 1e-4,
                 fmt::format("max |diff| {:.2e}", dg));

    // 2. The backward op against central finite differences, in float64.
    const Tensor x64 = randn({5, 7}, DType::Float64).requires_grad_(true);
    const Tensor b64 = randn({7}, DType::Float64).requires_grad_(true);
    const autograd::GradcheckResult gc = autograd::gradcheck(
        [&](const std::vector<Tensor>& in) { return fused_gelu(in[0], in[1]); }, {x64, b64});
    ok &= report("gradcheck (float64)", gc.ok, gc.message);

    // 3. The CUDA kernels, where a GPU and the plugin's CUDA kernels exist.
    const int16_t cuda = find_device_type("cuda");
    if (cuda >= 0 && device_type(cuda).count > 0 &&
        has_kernel(*find_extension_op("myext::fused_bias_gelu")->op, Device("cuda"),
                   DType::Float32)) {
      const Tensor yc = fused_gelu(x.detach().to(Device("cuda")), bias.detach().to(Device("cuda")));
      ok &= report("cuda vs cpu, float32", max_diff(yc, y) < 1e-5,
                   fmt::format("max |diff| {:.2e}", max_diff(yc, y)));
    } else {
      std::printf("%-44s --    no GPU with the plugin's CUDA kernels here\n", "cuda vs cpu");
    }
    std::printf("%s\n", ok ? "custom op: all checks passed" : "custom op: a check FAILED");
    return ok ? 0 : 1;
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "custom_op_demo: %s\n", e.what());
    return 1;
  }
}
