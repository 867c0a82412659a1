#include "ember/nn/init.h"

#include <cmath>

#include "ember/autograd/grad_mode.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/index.h"
#include "ember/ops/linalg.h"
#include "ember/util/error.h"

namespace ember::nn::init {

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  EMBER_CHECK(t.defined() && t.dim() >= 2,
              "[nn.init] fan in and fan out need a tensor with at least 2 dims: got {}-d",
              t.defined() ? t.dim() : 0);
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(std::string_view nonlinearity, double param) {
  if (nonlinearity == "linear" || nonlinearity == "sigmoid" || nonlinearity.starts_with("conv")) {
    return 1.0;
  }
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1.0 + param * param));
  if (nonlinearity == "selu") return 3.0 / 4.0;
  EMBER_CHECK(false,
              "[nn.init] unknown nonlinearity '{}' (linear, conv2d, sigmoid, tanh, relu, "
              "leaky_relu, selu)",
              nonlinearity);
  return 0.0;
}

namespace {

// Note [Initialisation temporaries]
// uniform_ and normal_ draw in float64 and scale and shift the draw in place before copying it
// into the tensor: one temporary of twice the tensor's bytes, not three (rand, mul, add). The CPU
// caching allocator keeps freed blocks, so building ResNet-50 with three left about 140 MiB of
// them cached, most of the process's memory besides the weights.

// Writes `value` (made under no-grad) into t, keeping t's identity, dtype and device.
Tensor& assign(Tensor& t, const Tensor& value) {
  autograd::NoGradGuard no_grad;
  t.copy_(value);
  return t;
}

void check_defined(const Tensor& t, const char* fn) {
  EMBER_CHECK_TYPE(t.defined(), "[nn.init.{}] undefined tensor", fn);
  EMBER_CHECK_TYPE(is_floating(t.dtype()), "[nn.init.{}] needs a floating tensor: got {}", fn,
                   t.dtype());
}

int64_t fan(const Tensor& t, FanMode mode) {
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  return mode == FanMode::FanIn ? in : out;
}

}  // namespace

namespace kaiming {

// The fan a kaiming init `fn` scales by: t's in or out fan, which must not be zero.
int64_t checked_fan(const Tensor& t, FanMode mode, const char* fn) {
  check_defined(t, fn);
  const int64_t f = fan(t, mode);
  EMBER_CHECK(f > 0, "[nn.init.{}] zero fan for a tensor of shape {}", fn, shape_str(t.sizes()));
  return f;
}

}  // namespace kaiming

Tensor& uniform_(Tensor& t, double a, double b, Generator* gen) {
  check_defined(t, "uniform_");
  EMBER_CHECK(a <= b, "[nn.init.uniform_] empty range: a={} > b={}", a, b);
  autograd::NoGradGuard no_grad;
  // In place on the draw: one float64 temporary per tensor (Note [Initialisation temporaries]).
  Tensor r = rand(t.sizes(), {DType::Float64, Device::cpu()}, gen);
  return assign(t, add_(mul_(r, b - a), a));
}

Tensor& normal_(Tensor& t, double mean, double std, Generator* gen) {
  check_defined(t, "normal_");
  EMBER_CHECK(std >= 0, "[nn.init.normal_] negative standard deviation: {}", std);
  autograd::NoGradGuard no_grad;
  Tensor r = randn(t.sizes(), {DType::Float64, Device::cpu()}, gen);
  return assign(t, add_(mul_(r, std), mean));
}

Tensor& constant_(Tensor& t, double value) {
  check_defined(t, "constant_");
  autograd::NoGradGuard no_grad;
  t.fill_(value);
  return t;
}

Tensor& zeros_(Tensor& t) {
  return constant_(t, 0.0);
}

Tensor& ones_(Tensor& t) {
  return constant_(t, 1.0);
}

Tensor& xavier_uniform_(Tensor& t, double gain, Generator* gen) {
  check_defined(t, "xavier_uniform_");
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(in + out));
  return uniform_(t, -bound, bound, gen);
}

Tensor& xavier_normal_(Tensor& t, double gain, Generator* gen) {
  check_defined(t, "xavier_normal_");
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  return normal_(t, 0.0, gain * std::sqrt(2.0 / static_cast<double>(in + out)), gen);
}

Tensor& kaiming_uniform_(Tensor& t, double a, FanMode mode, std::string_view nonlinearity,
                         Generator* gen) {
  const int64_t f = kaiming::checked_fan(t, mode, "kaiming_uniform_");
  const double bound = calculate_gain(nonlinearity, a) * std::sqrt(3.0 / static_cast<double>(f));
  return uniform_(t, -bound, bound, gen);
}

Tensor& kaiming_normal_(Tensor& t, double a, FanMode mode, std::string_view nonlinearity,
                        Generator* gen) {
  const int64_t f = kaiming::checked_fan(t, mode, "kaiming_normal_");
  return normal_(t, 0.0, calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(f)), gen);
}

Tensor& orthogonal_(Tensor& t, double gain, Generator* gen) {
  check_defined(t, "orthogonal_");
  EMBER_CHECK(t.dim() >= 2,
              "[nn.init.orthogonal_] only tensors with 2 or more dimensions are supported: got "
              "shape {}",
              shape_str(t.sizes()));
  if (t.numel() == 0) return t;
  autograd::NoGradGuard no_grad;
  // Drawn and factorized in float64 on the CPU (every backend has the result; the QR's kernels
  // may be the CPU's only), then copied into t.
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  Tensor flat = randn({rows, cols}, TensorOptions(DType::Float64, Device::cpu()), gen);
  if (rows < cols) flat = flat.t();
  auto [q, r] = linalg::qr(flat);
  q = mul(q, sign(diagonal(r, 0, -2, -1)));
  if (rows < cols) q = q.t();
  t.copy_(mul(q, gain).reshape(t.sizes()));
  return t;
}

}  // namespace ember::nn::init
