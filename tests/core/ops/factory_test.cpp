// Factories and the default device (Note [The default device] in ember/tensor/device.h): every
// factory puts its tensor on default_device() unless told otherwise, the *_like family keeps its
// input's device, and host staging stays on the CPU. Checked on the reference backend, which
// runs everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

using testing::values;

/** The reference device; fails the test if its backend did not load. */
Device reference() {
  init();
  const int16_t ref = find_device_type("reference");
  EXPECT_GE(ref, 0) << "the reference backend is not loaded";
  return Device(ref < 0 ? kCpuType : ref, 0);
}

/** Makes `d` the default device for one scope, then puts the CPU back. */
struct DefaultDeviceScope {
  explicit DefaultDeviceScope(Device d) { set_default_device(d); }
  ~DefaultDeviceScope() { reset_default_device(); }
  DefaultDeviceScope(const DefaultDeviceScope&) = delete;
  DefaultDeviceScope& operator=(const DefaultDeviceScope&) = delete;
};

/** Makes `d` the default dtype for one scope, then puts float32 back. */
struct DefaultDtypeScope {
  explicit DefaultDtypeScope(DType d) { set_default_dtype(d); }
  ~DefaultDtypeScope() { set_default_dtype(DType::Float32); }
  DefaultDtypeScope(const DefaultDtypeScope&) = delete;
  DefaultDtypeScope& operator=(const DefaultDtypeScope&) = delete;
};

TEST(DefaultDtype, FloatingFactoriesAndPromotionFollowIt) {
  init();
  EXPECT_EQ(default_dtype(), DType::Float32);
  const DefaultDtypeScope scope(DType::Float64);
  EXPECT_EQ(default_dtype(), DType::Float64);
  const std::vector<std::pair<const char*, Tensor>> made = {
      {"empty", empty({2})},
      {"zeros", zeros({3})},
      {"ones", ones({3})},
      {"full", full({3}, 2.5)},
      {"arange(float)", arange(0.0, 1.0, 0.5)},
      {"linspace", linspace(0, 1, 5)},
      {"eye", eye(2)},
      {"rand", rand({2})},
      {"randn", randn({2})},
      {"tensor(float)", tensor({1.5, 2.5})},
      {"int / int", div(tensor({1, 2}), tensor({2, 2}))},
      {"int + float scalar", add(tensor({1, 2}), 1.5)},
      {"exp of ints", exp(tensor({1, 2}))},
  };
  for (const auto& [name, t] : made) EXPECT_EQ(t.dtype(), DType::Float64) << name;
  EXPECT_EQ(tensor({1, 2}).dtype(), DType::Int64);
  EXPECT_EQ(arange(3).dtype(), DType::Int64);
  EXPECT_EQ(values(div(tensor({1}), tensor({3})))[0], 1.0 / 3.0);  // computed in float64
  // Only floating dtypes, as PyTorch.
  EXPECT_THROW(set_default_dtype(DType::Int64), TypeError);
  EXPECT_THROW(set_default_dtype(DType::Bool), TypeError);
  EXPECT_EQ(default_dtype(), DType::Float64);
}

TEST(DefaultDevice, IsTheCpuUntilSet) {
  init();
  EXPECT_EQ(default_device(), Device::cpu());
  EXPECT_EQ(zeros({3}).device(), Device::cpu());
  EXPECT_EQ(TensorOptions().device, Device::cpu());
}

TEST(DefaultDevice, EveryFactoryFollowsIt) {
  const Device ref = reference();
  const DefaultDeviceScope scope(ref);
  EXPECT_EQ(default_device(), ref);
  EXPECT_EQ(TensorOptions().device, ref);
  EXPECT_EQ(TensorOptions(DType::Int64).device, ref);
  const std::vector<std::pair<const char*, Tensor>> made = {
      {"empty", empty({2, 3})},
      {"empty channels-last", empty({1, 2, 2, 2}, {}, MemoryFormat::ChannelsLast)},
      {"zeros", zeros({3})},
      {"ones", ones({3})},
      {"full", full({3}, 2.5)},
      {"arange(end)", arange(4)},
      {"arange(start, end, step)", arange(1.0, 2.0, 0.25)},
      {"linspace", linspace(0, 1, 5)},
      {"eye", eye(3)},
      {"rand", rand({4})},
      {"randn", randn({4})},
      {"randint", randint(0, 10, {4})},
      {"normal", normal(1.0, 2.0, {4})},
      {"tensor(float)", tensor({{1.0, 2.0}, {3.0, 4.0}})},
      {"tensor(int)", tensor({1, 2, 3})},
      {"tensor(bool)", tensor({true, false})},
      {"from_vector", from_vector(std::vector<float>{1, 2}, {2}, {})},
  };
  for (const auto& [name, t] : made) EXPECT_EQ(t.device(), ref) << name;
  // The values are right where they landed.
  EXPECT_EQ(values(arange(4)), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(values(linspace(0, 1, 5)), (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(values(eye(2)), (std::vector<double>{1, 0, 0, 1}));
  EXPECT_EQ(values(full({2}, 2.5)), (std::vector<double>{2.5, 2.5}));
  EXPECT_EQ(values(tensor({{1.0, 2.0}, {3.0, 4.0}})), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(tensor({1, 2, 3}).dtype(), DType::Int64);
  EXPECT_EQ(values(tensor({true, false})), (std::vector<double>{1, 0}));
  NestedData nested;
  nested.begin_sequence(2);
  nested.value(Scalar(int64_t{7}));
  nested.value(Scalar(int64_t{8}));
  nested.end_sequence();
  const Tensor n = nested.finish();
  EXPECT_EQ(n.device(), ref);
  EXPECT_EQ(values(n), (std::vector<double>{7, 8}));
  // Naming a device still wins.
  EXPECT_EQ(zeros({2}, {DType::Float32, Device::cpu()}).device(), Device::cpu());
  EXPECT_EQ(arange(3, TensorOptions(DType::Int64, Device::cpu())).device(), Device::cpu());
}

TEST(DefaultDevice, TheLikeFamilyKeepsItsInputsDevice) {
  const Device ref = reference();
  const Tensor on_cpu = ones({2, 2}, {DType::Float64, Device::cpu()});
  {
    const DefaultDeviceScope scope(ref);
    for (const Tensor& t : {empty_like(on_cpu), zeros_like(on_cpu), ones_like(on_cpu),
                            full_like(on_cpu, 3), bernoulli(on_cpu, 0.5), bernoulli(on_cpu)}) {
      EXPECT_EQ(t.device(), Device::cpu());
      EXPECT_EQ(t.dtype(), DType::Float64);
    }
    EXPECT_EQ(values(full_like(on_cpu, 3)), (std::vector<double>{3, 3, 3, 3}));
  }
  const Tensor on_ref = on_cpu.to(ref);
  for (const Tensor& t : {empty_like(on_ref), zeros_like(on_ref), ones_like(on_ref),
                          full_like(on_ref, 3), bernoulli(on_ref, 0.5)}) {
    EXPECT_EQ(t.device(), ref);
  }
}

TEST(DefaultDevice, HostBuffersStayOnTheCpu) {
  const Device ref = reference();
  const DefaultDeviceScope scope(ref);
  // A generator's state is host bytes, as torch.Generator.get_state() is a CPU ByteTensor.
  Generator g(3);
  const Tensor state = g.get_state();
  EXPECT_EQ(state.device(), Device::cpu());
  g.set_state(state);
  // Pinned memory is CPU memory, whatever the default.
  EXPECT_EQ(ones({2}, {DType::Float32, Device::cpu()}).device(), Device::cpu());
  // Padding builds its source indices on the host.
  const Tensor x = arange(4, TensorOptions(DType::Float32, Device::cpu()));
  EXPECT_EQ(values(pad(x.view({1, 4}), {1, 1}, "reflect")),
            (std::vector<double>{1, 0, 1, 2, 3, 2}));
}

TEST(DefaultDevice, SetRefusesAMissingDeviceAndResetGoesBackToTheCpu) {
  const Device ref = reference();
  EXPECT_THROW(set_default_device(Device(kCpuType, 3)), DeviceError);
  EXPECT_EQ(default_device(), Device::cpu());
  set_default_device(ref);
  reset_default_device();
  EXPECT_EQ(default_device(), Device::cpu());
  EXPECT_EQ(zeros({1}).device(), Device::cpu());
}

TEST(Windows, MatchTheirFormulasInFloat64) {
  const double pi = 3.14159265358979323846;
  auto check = [](const Tensor& got, const std::function<double(double)>& w, int64_t n) {
    const std::vector<double> v = values(got);
    ASSERT_EQ(static_cast<int64_t>(v.size()), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(v[i], w(static_cast<double>(i)), 1e-15) << i;
  };
  const TensorOptions f64(DType::Float64);
  // Symmetric windows of 7 points (N - 1 = 6) and periodic ones of 6 (the 7-point one, cut).
  check(
      hann_window(7, false, f64), [&](double n) { return 0.5 - 0.5 * std::cos(2 * pi * n / 6); },
      7);
  check(
      hann_window(6, true, f64), [&](double n) { return 0.5 - 0.5 * std::cos(2 * pi * n / 6); }, 6);
  check(
      hamming_window(7, false, 0.6, 0.3, f64),
      [&](double n) { return 0.6 - 0.3 * std::cos(2 * pi * n / 6); }, 7);
  check(
      blackman_window(7, false, f64),
      [&](double n) {
        return 0.42 - 0.5 * std::cos(2 * pi * n / 6) + 0.08 * std::cos(4 * pi * n / 6);
      },
      7);
  check(
      bartlett_window(7, false, f64), [](double n) { return 1 - std::fabs(n / 3 - 1); }, 7);
  // Kaiser with beta 0 is all ones; the middle point of a symmetric one is 1 for any beta.
  check(
      kaiser_window(5, true, 0.0, f64), [](double) { return 1.0; }, 5);
  EXPECT_NEAR(values(kaiser_window(7, false, 8.0, f64))[3], 1.0, 1e-15);
  EXPECT_NEAR(values(kaiser_window(7, false, 8.0, f64))[0], 1.0 / std::cyl_bessel_i(0.0, 8.0),
              1e-18);
  EXPECT_EQ(values(hann_window(1)), (std::vector<double>{1}));
  EXPECT_EQ(hann_window(0).numel(), 0);
  EXPECT_EQ(hann_window(4).dtype(), default_dtype());
  EXPECT_THROW(hann_window(4, true, DType::Int64), TypeError);
  EXPECT_THROW(bartlett_window(-1), ValueError);
}

TEST(Logspace, IsBaseToTheEvenlySpacedExponents) {
  EXPECT_EQ(values(logspace(0, 3, 4, 10.0, DType::Float64)),
            (std::vector<double>{1, 10, 100, 1000}));
  EXPECT_EQ(values(logspace(-1, 1, 3, 2.0)), (std::vector<double>{0.5, 1, 2}));
  EXPECT_EQ(logspace(0, 1, 0).numel(), 0);
  const Tensor s = scalar_tensor(3);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.dtype(), default_dtype());
  EXPECT_EQ(s.item(), 3);
}

}  // namespace
}  // namespace ember
