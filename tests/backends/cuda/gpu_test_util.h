// Shared pieces of the GPU test files: the skip when no CUDA device exists, and comparisons
// with the CPU plugin's results computed in float64 on the host.
#pragma once

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace ember::gpu_test {

inline bool cuda_available(std::string* why) {
  init();
  const int16_t t = find_device_type("cuda");
  if (t < 0) {
    *why = "the cuda plugin is not loaded";
    return false;
  }
  const DeviceTypeEntry& e = device_type(t);
  if (e.count == 0) {
    *why = e.unusable_reason;
    return false;
  }
  return true;
}

#define EMBER_REQUIRE_CUDA()                                             \
  do {                                                                   \
    std::string why_;                                                    \
    if (!::ember::gpu_test::cuda_available(&why_)) GTEST_SKIP() << why_; \
  } while (0)

// Max |a - b| / (1 + |b|) over all elements, computed in float64 on the CPU.
inline double max_rel_diff(const Tensor& a, const Tensor& b) {
  const Tensor x = a.to(Device::cpu()).to(DType::Float64).contiguous();
  const Tensor y = b.to(Device::cpu()).to(DType::Float64).contiguous();
  EXPECT_EQ(x.sizes(), y.sizes());
  const double* px = x.data_ptr<double>();
  const double* py = y.data_ptr<double>();
  double m = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(px[i]) || std::isnan(py[i])) {  // NaN must match NaN
      if (std::isnan(px[i]) != std::isnan(py[i])) return INFINITY;
      continue;
    }
    if (px[i] == py[i]) continue;  // equal infinities
    m = std::max(m, std::abs(px[i] - py[i]) / (1 + std::abs(py[i])));
  }
  return m;
}

// Per-dtype tolerance of a result computed in float (or double) and rounded once: the GPU's
// math functions may differ from the CPU's by an ulp, which can flip a half rounding.
// Max |a - b| / (1 + max |b|): the error against the tensor's scale. For half-type gradients,
// sums of many rounded terms: their absolute error follows the largest entries, so an entry
// near 0 has no relative accuracy on either device. On the first GPU run, a bfloat16
// convolution's dw was 3.95 off float64 on the GPU and on the CPU alike (|dw| up to 911), while
// max_rel_diff between the two reached 1.34 at small entries.
inline double max_scaled_diff(const Tensor& a, const Tensor& b) {
  const Tensor x = a.to(Device::cpu()).to(DType::Float64);
  const Tensor y = b.to(Device::cpu()).to(DType::Float64);
  EXPECT_EQ(x.sizes(), y.sizes());
  if (y.numel() == 0) return 0.0;
  return max(abs(sub(x, y))).item() / (1 + max(abs(y)).item());
}

// The comparison for dtype d's gradients: scaled for the half types, elementwise otherwise.
inline double grad_diff(DType d, const Tensor& a, const Tensor& b) {
  return d == DType::Float16 || d == DType::BFloat16 ? max_scaled_diff(a, b) : max_rel_diff(a, b);
}

inline double tol_for(DType d) {
  return d == DType::Float64   ? 1e-13
         : d == DType::Float32 ? 1e-5
         : d == DType::Float16 ? 2e-3
                               : 1.6e-2;
}

// Sets a cuda backend option for the scope and restores the old value.
class OptionGuard {
 public:
  OptionGuard(const char* key, const char* value) : key_(key), old_(backend_option("cuda", key)) {
    set_backend_option("cuda", key_, value);
  }
  ~OptionGuard() { set_backend_option("cuda", key_, old_); }
  OptionGuard(const OptionGuard&) = delete;
  OptionGuard& operator=(const OptionGuard&) = delete;

 private:
  std::string key_, old_;
};

// How often a cuDNN path declined to an own kernel so far (the counter cudnn.fallbacks).
inline uint64_t cudnn_fallbacks() {
  return std::stoull(backend_option("cuda", "cudnn.fallbacks"));
}

// Both implementations of the ops that have a cuDNN path and an own kernel
// (Note [cuDNN where own kernels exist too]): "1" runs cuDNN, "0" the own kernels.
inline constexpr const char* kCudnnSettings[] = {"1", "0"};

}  // namespace ember::gpu_test
