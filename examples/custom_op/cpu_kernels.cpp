// CPU kernels of myext::fused_bias_gelu and its backward. The schema asks the core for
// contiguous inputs (EMBER_OP_CONTIGUOUS_INPUTS) and outputs are always freshly allocated, so
// both see x and grad as [rows, n] row-major and bias as [n].
#include <cmath>

#include "ember/plugin_sdk.hpp"
#include "kernels.h"

namespace fused_bias_gelu {
namespace {

constexpr int64_t kParallelMin = 32768;  // elements below which threads cost more than they save

template <typename T>
T gelu(T z) {
  return T(0.5) * z * (T(1) + std::erf(z * T(M_SQRT1_2)));
}

// d/dz gelu(z) = Phi(z) + z phi(z).
template <typename T>
T gelu_grad(T z) {
  const T cdf = T(0.5) * (T(1) + std::erf(z * T(M_SQRT1_2)));
  const T pdf = std::exp(T(-0.5) * z * z) * T(0.5 * M_2_SQRTPI * M_SQRT1_2);
  return cdf + z * pdf;
}

template <typename T>
void forward(const ember_kernel_call* call) {
  const ember_tensor& x = call->inputs[0];
  const int64_t n = x.sizes[x.ndim - 1];
  const int64_t total = ember::sdk::numel(x);
  const int64_t rows = n == 0 ? 0 : total / n;
  const T* xp = ember::sdk::data<T>(x);
  const T* bp = ember::sdk::data<T>(call->inputs[1]);
  T* op = ember::sdk::data<T>(call->outputs[0]);
#pragma omp parallel for if (total > kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) op[r * n + j] = gelu(xp[r * n + j] + bp[j]);
  }
}

template <typename T>
void backward(const ember_kernel_call* call) {
  const ember_tensor& x = call->inputs[1];
  const int64_t n = x.sizes[x.ndim - 1];
  const int64_t total = ember::sdk::numel(x);
  const int64_t rows = n == 0 ? 0 : total / n;
  const T* gp = ember::sdk::data<T>(call->inputs[0]);
  const T* xp = ember::sdk::data<T>(x);
  const T* bp = ember::sdk::data<T>(call->inputs[2]);
  T* gx = ember::sdk::data<T>(call->outputs[0]);
  T* gb = ember::sdk::data<T>(call->outputs[1]);
#pragma omp parallel for if (total > kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j)
      gx[r * n + j] = gp[r * n + j] * gelu_grad(xp[r * n + j] + bp[j]);
  }
  // grad_bias sums grad_x over the rows; each column is summed by one thread, in row order,
  // so the result does not depend on the number of threads.
#pragma omp parallel for if (total > kParallelMin)
  for (int64_t j = 0; j < n; ++j) {
    double acc = 0;
    for (int64_t r = 0; r < rows; ++r) acc += static_cast<double>(gx[r * n + j]);
    gb[j] = static_cast<T>(acc);
  }
}

template <template <typename> class Fn>
int32_t dispatch(const ember_kernel_call* call, const char* what) {
  switch (call->inputs[0].dtype) {
    case EMBER_F32:
      Fn<float>::run(call);
      return EMBER_OK;
    case EMBER_F64:
      Fn<double>::run(call);
      return EMBER_OK;
    default:
      return ember::sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: no CPU kernel for %s", what,
                              ember::sdk::dtype_name(call->inputs[0].dtype));
  }
}

template <typename T>
struct Forward {
  static void run(const ember_kernel_call* call) { forward<T>(call); }
};
template <typename T>
struct Backward {
  static void run(const ember_kernel_call* call) { backward<T>(call); }
};

}  // namespace

int32_t forward_cpu(const ember_kernel_call* call) {
  return dispatch<Forward>(call, "forward");
}
int32_t backward_cpu(const ember_kernel_call* call) {
  return dispatch<Backward>(call, "backward");
}

}  // namespace fused_bias_gelu
