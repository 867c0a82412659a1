// nn::init: in-place initialisers with PyTorch's formulas (fans, gains, bounds).
#pragma once

#include <string_view>
#include <utility>

#include "ember/ops/factory.h"
#include "ember/tensor/tensor.h"

namespace ember::nn::init {

/** Which fan kaiming initialisation preserves: the forward pass's or the backward pass's. */
enum class FanMode { FanIn, FanOut };

/** (fan_in, fan_out) of a weight: [out, in, k...] gives (in * prod(k), out * prod(k)). */
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);
/** The recommended gain of a nonlinearity ("linear", "conv2d", "sigmoid", "tanh", "relu",
 *  "leaky_relu" with `param` as its negative slope, "selu"). */
double calculate_gain(std::string_view nonlinearity, double param = 0.01);

/** Fills t from U(a, b). */
Tensor& uniform_(Tensor& t, double a = 0.0, double b = 1.0, Generator* gen = nullptr);
/** Fills t from N(mean, std^2). */
Tensor& normal_(Tensor& t, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
/** Fills t with `value`. */
Tensor& constant_(Tensor& t, double value);
/** Fills t with zeros. */
Tensor& zeros_(Tensor& t);
/** Fills t with ones. */
Tensor& ones_(Tensor& t);
/** U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)). */
Tensor& xavier_uniform_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);
/** N(0, s^2) with s = gain * sqrt(2 / (fan_in + fan_out)). */
Tensor& xavier_normal_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);
/** U(-b, b) with b = gain(nonlinearity, a) * sqrt(3 / fan). */
Tensor& kaiming_uniform_(Tensor& t, double a = 0.0, FanMode mode = FanMode::FanIn,
                         std::string_view nonlinearity = "leaky_relu", Generator* gen = nullptr);
/** N(0, s^2) with s = gain(nonlinearity, a) / sqrt(fan). */
Tensor& kaiming_normal_(Tensor& t, double a = 0.0, FanMode mode = FanMode::FanIn,
                        std::string_view nonlinearity = "leaky_relu", Generator* gen = nullptr);

/** A (semi-)orthogonal matrix times gain (Saxe et al., 2013): t viewed as [size(0), rest] is
 *  Q of the QR of a Gaussian matrix, signs fixed by R's diagonal, as PyTorch draws it. */
Tensor& orthogonal_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);

}  // namespace ember::nn::init
