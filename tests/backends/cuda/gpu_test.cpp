// CUDA kernels checked against the CPU plugin's results. These run only where a CUDA device
// exists and skip themselves elsewhere (CI has none), so they prove nothing on their own there:
// the allocator and loader tests carry the CPU-side proof.
#include <ember/ember.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace ember {
namespace {

bool cuda_available(std::string* why) {
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

#define EMBER_REQUIRE_CUDA()                          \
  do {                                                \
    std::string why_;                                 \
    if (!cuda_available(&why_)) GTEST_SKIP() << why_; \
  } while (0)

// Max |a - b| / (1 + |b|) over all elements, computed in float64 on the CPU.
double max_rel_diff(const Tensor& a, const Tensor& b) {
  const Tensor x = a.to(Device::cpu()).to(DType::Float64).contiguous();
  const Tensor y = b.to(Device::cpu()).to(DType::Float64).contiguous();
  EXPECT_EQ(x.sizes(), y.sizes());
  const double* px = x.data_ptr<double>();
  const double* py = y.data_ptr<double>();
  double m = 0;
  for (int64_t i = 0; i < x.numel(); ++i)
    m = std::max(m, std::abs(px[i] - py[i]) / (1 + std::abs(py[i])));
  return m;
}

const DType kFloatTypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

TEST(CudaGpu, AddMulSubDivMatchCpuWithBroadcastAndViews) {
  EMBER_REQUIRE_CUDA();
  for (DType d : kFloatTypes) {
    const Tensor a = randn({33, 65}).to(d);
    const Tensor b = randn({65}).to(d);
    const Tensor bt = randn({65, 33}).to(d).transpose(0, 1);  // non-contiguous
    const Tensor ga = a.to(Device("cuda")), gb = b.to(Device("cuda")), gbt = bt.to(Device("cuda"));
    EXPECT_EQ(max_rel_diff(add(ga, gb), add(a, b)), 0.0) << fmt::format("{}", d);
    EXPECT_EQ(max_rel_diff(sub(ga, gbt), sub(a, bt)), 0.0) << fmt::format("{}", d);
    EXPECT_EQ(max_rel_diff(mul(ga.slice(1, 1, 65, 2), gb.slice(0, 0, 64, 2)),
                           mul(a.slice(1, 1, 65, 2), b.slice(0, 0, 64, 2))),
              0.0)
        << fmt::format("{}", d);
    EXPECT_LE(max_rel_diff(div(ga, add(gb, 5)), div(a, add(b, 5))), 1e-6) << fmt::format("{}", d);
  }
}

TEST(CudaGpu, UnaryOpsMatchCpu) {
  EMBER_REQUIRE_CUDA();
  for (DType d : kFloatTypes) {
    const Tensor x = randn({1000}).to(d);
    const Tensor gx = x.to(Device("cuda"));
    EXPECT_EQ(max_rel_diff(neg(gx), neg(x)), 0.0) << fmt::format("{}", d);
    EXPECT_EQ(max_rel_diff(relu(gx), relu(x)), 0.0) << fmt::format("{}", d);
    // expf/exp on the GPU may differ from the CPU's by an ulp, which can flip a half rounding.
    const double tol = d == DType::Float64   ? 1e-15
                       : d == DType::Float32 ? 1e-6
                       : d == DType::Float16 ? 1e-3
                                             : 8e-3;
    EXPECT_LE(max_rel_diff(exp(gx), exp(x)), tol) << fmt::format("{}", d);
  }
}

TEST(CudaGpu, CopyConvertsBetweenEveryDtypePair) {
  EMBER_REQUIRE_CUDA();
  const DType types[] = {DType::Float32,  DType::Float64, DType::Float16,
                         DType::BFloat16, DType::Int64,   DType::Int32,
                         DType::Int8,     DType::UInt8,   DType::Bool};
  const Tensor base = randint(0, 100, {7, 9}).to(DType::Float32).transpose(0, 1);
  for (DType s : types) {
    const Tensor src = base.to(s);
    const Tensor gsrc = src.to(Device("cuda"));
    for (DType d : types) {
      EXPECT_EQ(max_rel_diff(gsrc.to(d), src.to(d)), 0.0) << fmt::format("{} -> {}", s, d);
    }
  }
}

TEST(CudaGpu, FillAndZeroSizedTensors) {
  EMBER_REQUIRE_CUDA();
  const Tensor f = full({5, 3}, 2.5, {DType::Float16, Device("cuda")});
  EXPECT_EQ(max_rel_diff(f, full({5, 3}, 2.5, {DType::Float16})), 0.0);
  const Tensor e = zeros({0, 4}, {DType::Float32, Device("cuda")});
  EXPECT_EQ(add(e, e).numel(), 0);
}

TEST(CudaGpu, MatmulMatchesCpu) {
  EMBER_REQUIRE_CUDA();
  for (DType d : {DType::Float32, DType::Float64}) {
    const double tol = d == DType::Float64 ? 1e-12 : 1e-4;
    const Tensor a = randn({3, 37, 19}).to(d);
    const Tensor b = randn({19, 23}).to(d);
    const Tensor bt = randn({23, 19}).to(d).transpose(0, 1);        // read transposed in place
    const Tensor as = randn({3, 37, 40}).to(d).slice(2, 0, 38, 2);  // packed first
    const Device g("cuda");
    EXPECT_LE(max_rel_diff(matmul(a.to(g), b.to(g)), matmul(a, b)), tol) << fmt::format("{}", d);
    EXPECT_LE(max_rel_diff(matmul(a.to(g), bt.to(g)), matmul(a, bt)), tol) << fmt::format("{}", d);
    EXPECT_LE(max_rel_diff(matmul(as.to(g), b.to(g)), matmul(as, b)), tol) << fmt::format("{}", d);
    const Tensor v = randn({19}).to(d);
    EXPECT_LE(max_rel_diff(matmul(a.to(g), v.to(g)), matmul(a, v)), tol) << fmt::format("{}", d);
  }
}

}  // namespace
}  // namespace ember
