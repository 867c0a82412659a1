// CUDA kernels checked against the CPU plugin's results. These run only where a CUDA device
// exists and skip themselves elsewhere (CI has none), so they prove nothing on their own there:
// the allocator and loader tests carry the CPU-side proof.
#include <ember/ember.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "tests/backends/cuda/gpu_test_util.h"

namespace ember {
namespace {

using namespace gpu_test;

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

// A single element broadcast over a row (x * 1.5, 1 - x) takes the vectorized path with that
// element read once per pack; tails, an unaligned start and a strided row take the others.
TEST(CudaGpu, BinaryOpsWithAScalarMatchCpuOnEveryPath) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int32,
                  DType::Int8}) {
    const bool floating = d != DType::Int32 && d != DType::Int8;
    const Tensor x = floating ? randn({1031}).to(d) : randint(-50, 50, {1031}).to(d);
    const Tensor one = full({}, 3, {d});
    const Tensor gx = x.to(g), gone = one.to(g);
    for (const auto& [what, cx, gxv] :
         {std::tuple<const char*, Tensor, Tensor>{"row", x, gx},
          {"tail", x.slice(0, 0, 1029), gx.slice(0, 0, 1029)},
          {"unaligned", x.slice(0, 1, 1031), gx.slice(0, 1, 1031)},
          {"strided", x.slice(0, 0, 1031, 2), gx.slice(0, 0, 1031, 2)}}) {
      const std::string n = fmt::format("{} {}", d, what);
      EXPECT_EQ(max_rel_diff(mul(gxv, 1.5), mul(cx, 1.5)), 0.0) << n;
      EXPECT_EQ(max_rel_diff(sub(gone, gxv), sub(one, cx)), 0.0) << n;
      EXPECT_EQ(max_rel_diff(add(gxv, gone), add(cx, one)), 0.0) << n;
      EXPECT_EQ(max_rel_diff(lt(gxv, 0.5), lt(cx, 0.5)), 0.0) << n;
      EXPECT_EQ(max_rel_diff(maximum(gone, gxv), maximum(one, cx)), 0.0) << n;
    }
    // Both inputs one element, broadcast over the output.
    const Tensor both = add(gone.expand({517}), gone.expand({517}));
    EXPECT_EQ(max_rel_diff(both, full({517}, 6, {d})), 0.0) << fmt::format("{}", d);
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
  for (DType d : kFloatTypes) {
    // Half types accumulate in float32 on both sides (Note [Half matmul accumulates in
    // float32]); only the summation order and the final rounding may differ.
    const double tol = d == DType::Float64 ? 1e-12 : d == DType::Float32 ? 1e-4 : 2e-2;
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

// Note [Convolution and ReLU through cuDNN]: conv2d_relu on the GPU (the fused cuDNN call, or its
// per-chunk fallback) against relu(conv2d) on the CPU, row-major and channels-last, with and
// without bias, in every floating dtype; nothing recorded, so the kernel runs. conv2d_add_relu
// too.
TEST(CudaGpu, ConvolutionWithReluMatchesCpu) {
  EMBER_REQUIRE_CUDA();
  autograd::InferenceMode inference;
  const Device g("cuda");
  for (DType d : kFloatTypes) {
    const double tol = d == DType::Float64 ? 1e-12 : d == DType::Float32 ? 1e-4 : 3e-2;
    for (const bool cl : {false, true}) {
      for (const bool with_bias : {true, false}) {
        Tensor x = randn({3, 8, 11, 9}).to(d), w = randn({6, 8, 3, 3}).to(d);
        if (cl) {
          x = x.contiguous(MemoryFormat::ChannelsLast);
          w = w.contiguous(MemoryFormat::ChannelsLast);
        }
        const Tensor b = with_bias ? randn({6}).to(d) : Tensor();
        const Tensor want = relu(conv2d(x, w, b, {1, 2}, {1, 0}));
        const Tensor got =
            conv2d_relu(x.to(g), w.to(g), with_bias ? b.to(g) : Tensor(), {1, 2}, {1, 0});
        EXPECT_LE(max_rel_diff(got, want), tol)
            << fmt::format("{} channels-last {} bias {}", d, cl, with_bias);
        EXPECT_GE(min(got.to(Device::cpu()).to(DType::Float64)).item(), 0.0);
        // A residual block's end (Note [Convolution, residual add and ReLU]): the composite
        // here, the CPU's fused kernel as the reference.
        const Tensor r = randn(want.sizes()).to(d);
        const Tensor want_r = conv2d_add_relu(x, w, r, b, {1, 2}, {1, 0});
        const Tensor got_r = conv2d_add_relu(x.to(g), w.to(g), r.to(g),
                                             with_bias ? b.to(g) : Tensor(), {1, 2}, {1, 0});
        // Half types: the composite rounds the convolution before the sum, so entries near 0
        // have no relative accuracy; compared against the output's scale.
        EXPECT_LE(grad_diff(d, got_r, want_r), tol)
            << fmt::format("residual {} channels-last {} bias {}", d, cl, with_bias);
      }
    }
  }
}

// An input with NaN, +-inf, ties and exact zeros among random values, in dtype d.
Tensor special_values(DType d, int64_t n) {
  Tensor x = mul(randn({n}), 3).to(DType::Float64).contiguous();
  double* p = x.data_ptr<double>();
  const double specials[] = {std::nan(""), INFINITY, -INFINITY, 0.0, -0.0, 0.5, -2.5, 1.0};
  for (int64_t i = 0; i < n; i += 17) p[i] = specials[(i / 17) % 8];
  return x.to(d);
}

TEST(CudaGpu, EveryUnaryFloatOpMatchesCpuOnTheVectorizedAndStridedPaths) {
  EMBER_REQUIRE_CUDA();
  using Fn = std::function<Tensor(const Tensor&)>;
  const std::pair<const char*, Fn> ops[] = {
      {"exp", [](const Tensor& t) { return exp(t); }},
      {"log", [](const Tensor& t) { return log(abs(t)); }},
      {"log1p", [](const Tensor& t) { return log1p(abs(t)); }},
      {"sqrt", [](const Tensor& t) { return sqrt(abs(t)); }},
      {"rsqrt", [](const Tensor& t) { return rsqrt(abs(t)); }},
      {"sin", [](const Tensor& t) { return sin(t); }},
      {"cos", [](const Tensor& t) { return cos(t); }},
      {"tanh", [](const Tensor& t) { return tanh(t); }},
      {"sigmoid", [](const Tensor& t) { return sigmoid(t); }},
      {"silu", [](const Tensor& t) { return silu(t); }},
      {"gelu", [](const Tensor& t) { return gelu(t); }},
      {"gelu_tanh", [](const Tensor& t) { return gelu(t, "tanh"); }},
      {"floor", [](const Tensor& t) { return floor(t); }},
      {"ceil", [](const Tensor& t) { return ceil(t); }},
      {"round", [](const Tensor& t) { return round(t); }},
      {"erf", [](const Tensor& t) { return erf(t); }},
      {"neg", [](const Tensor& t) { return neg(t); }},
      {"abs", [](const Tensor& t) { return abs(t); }},
      {"sign", [](const Tensor& t) { return sign(t); }},
      {"relu", [](const Tensor& t) { return relu(t); }},
      {"clamp", [](const Tensor& t) { return clamp(t, -0.5, 1.5); }},
      {"clamp_lo", [](const Tensor& t) { return clamp(t, 0.25, std::nullopt); }},
  };
  const Device g("cuda");
  for (DType d : kFloatTypes) {
    const Tensor x = special_values(d, 1003);  // not a multiple of the pack width: a tail
    const Tensor gx = x.to(g);
    for (const auto& [name, f] : ops) {
      // dense (vectorized), misaligned by one element, and strided inputs
      EXPECT_LE(max_rel_diff(f(gx), f(x)), tol_for(d)) << name << " " << fmt::format("{}", d);
      EXPECT_LE(max_rel_diff(f(gx.slice(0, 1, 1003)), f(x.slice(0, 1, 1003))), tol_for(d))
          << name << " misaligned " << fmt::format("{}", d);
      EXPECT_LE(max_rel_diff(f(gx.slice(0, 0, 1003, 3)), f(x.slice(0, 0, 1003, 3))), tol_for(d))
          << name << " strided " << fmt::format("{}", d);
    }
  }
}

// The fused relu_backward kernel (Note [Fused ReLU backward]) against the CPU's, on dense and
// strided gradients, NaN and zero outputs included.
TEST(CudaGpu, ReluBackwardMatchesCpu) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : kFloatTypes) {
    const Tensor x = special_values(d, 1003);
    const Tensor w = randn({1003}).to(d);
    auto grad_of = [&](const Tensor& in, const Tensor& weight) {
      Tensor leaf = in.detach().requires_grad_(true);
      sum(mul(relu(leaf), weight)).backward();
      return leaf.grad();
    };
    EXPECT_LE(max_rel_diff(grad_of(x.to(g), w.to(g)), grad_of(x, w)), tol_for(d))
        << fmt::format("{}", d);
    auto strided = [&](const Tensor& in) {  // a broadcast (stride-0) incoming gradient
      Tensor leaf = in.detach().requires_grad_(true);
      sum(relu(leaf)).backward();
      return leaf.grad();
    };
    EXPECT_EQ(max_rel_diff(strided(x.to(g)), strided(x)), 0.0) << fmt::format("{}", d);
  }
}

TEST(CudaGpu, BinaryOpsComparisonsAndWhereMatchCpu) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : kFloatTypes) {
    const Tensor a = special_values(d, 64 * 33).view({64, 33});
    const Tensor b = randn({33}).to(d);
    const Tensor c = randn({33, 64}).to(d).transpose(0, 1);
    const Tensor ga = a.to(g), gb = b.to(g), gc = c.to(g);
    const double tol = tol_for(d);
    EXPECT_LE(max_rel_diff(pow(abs(ga), gb), pow(abs(a), b)), tol) << fmt::format("{}", d);
    EXPECT_EQ(max_rel_diff(maximum(ga, gc), maximum(a, c)), 0.0) << fmt::format("{}", d);
    EXPECT_EQ(max_rel_diff(minimum(ga, gb), minimum(a, b)), 0.0) << fmt::format("{}", d);
    EXPECT_EQ(max_rel_diff(eq(ga, gb), eq(a, b)), 0.0);
    EXPECT_EQ(max_rel_diff(ne(ga, gc), ne(a, c)), 0.0);
    EXPECT_EQ(max_rel_diff(lt(ga, gb), lt(a, b)), 0.0);
    EXPECT_EQ(max_rel_diff(le(ga, gc), le(a, c)), 0.0);
    EXPECT_EQ(max_rel_diff(gt(ga, gb), gt(a, b)), 0.0);
    EXPECT_EQ(max_rel_diff(ge(ga, gc), ge(a, c)), 0.0);
    EXPECT_EQ(max_rel_diff(logical_and(ga, gc), logical_and(a, c)), 0.0);
    EXPECT_EQ(max_rel_diff(logical_or(ga, gb), logical_or(a, b)), 0.0);
    EXPECT_EQ(max_rel_diff(logical_not(ga), logical_not(a)), 0.0);
    const Tensor cond = gt(a, c);
    EXPECT_EQ(max_rel_diff(where(cond.to(g), ga, gb), where(cond, a, b)), 0.0);
  }
}

TEST(CudaGpu, IntegerAndBoolArithmeticMatchesCpuExactly) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : {DType::Int64, DType::Int32, DType::Int8, DType::UInt8}) {
    const Tensor a = randint(0, 120, {40, 31}).to(d);
    const Tensor b = randint(0, 7, {31}).to(d);
    const Tensor ga = a.to(g), gb = b.to(g);
    const std::string n = fmt::format("{}", d);
    EXPECT_EQ(max_rel_diff(add(ga, gb), add(a, b)), 0.0) << n;
    EXPECT_EQ(max_rel_diff(sub(ga, gb), sub(a, b)), 0.0) << n;
    EXPECT_EQ(max_rel_diff(mul(ga, gb), mul(a, b)), 0.0) << n;  // int8/uint8 wrap
    EXPECT_EQ(max_rel_diff(pow(ga, gb), pow(a, b)), 0.0) << n;
    EXPECT_EQ(max_rel_diff(maximum(ga, gb), maximum(a, b)), 0.0) << n;
    EXPECT_EQ(max_rel_diff(neg(ga), neg(a)), 0.0) << n;
    EXPECT_EQ(max_rel_diff(abs(sub(ga, 60)), abs(sub(a, 60))), 0.0) << n;
    EXPECT_EQ(max_rel_diff(sign(sub(ga, 60)), sign(sub(a, 60))), 0.0) << n;
    EXPECT_EQ(max_rel_diff(relu(sub(ga, 60)), relu(sub(a, 60))), 0.0) << n;
    EXPECT_EQ(max_rel_diff(clamp(ga, 10, 90), clamp(a, 10, 90)), 0.0) << n;
    EXPECT_EQ(max_rel_diff(lt(ga, gb), lt(a, b)), 0.0) << n;
  }
  const Tensor p = gt(randn({300}), 0), q = gt(randn({300}), 0);
  EXPECT_EQ(max_rel_diff(add(p.to(g), q.to(g)), add(p, q)), 0.0);
  EXPECT_EQ(max_rel_diff(mul(p.to(g), q.to(g)), mul(p, q)), 0.0);
  // Negative integer exponents as PyTorch: 0 except for the bases 1 and -1.
  const Tensor base = arange(-3, 4, 1, TensorOptions{DType::Int64});
  const Tensor e = full({7}, -3, {DType::Int64});
  EXPECT_EQ(max_rel_diff(pow(base.to(g), e.to(g)), pow(base, e)), 0.0);
  // Float to integer conversion of NaN and out-of-range values (INT64_MIN, low bits).
  const Tensor f = mul(special_values(DType::Float32, 100), 1e20);
  EXPECT_EQ(max_rel_diff(f.to(g).to(DType::Int64), f.to(DType::Int64)), 0.0);
  EXPECT_EQ(max_rel_diff(f.to(g).to(DType::Int8), f.to(DType::Int8)), 0.0);
}

TEST(CudaGpu, ReductionsMatchCpuOverEveryDimLayout) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : kFloatTypes) {
    const std::string n = fmt::format("{}", d);
    for (const auto& sizes : {std::vector<int64_t>{37, 129}, std::vector<int64_t>{3, 5000},
                              std::vector<int64_t>{700, 9}}) {
      const Tensor x = randn(IntList(sizes)).to(d);
      const Tensor xt = randn({sizes[1], sizes[0]}).to(d).transpose(0, 1);  // strided
      for (const Tensor& t : {x, xt}) {
        const Tensor gt_ = t.to(g);
        for (const std::vector<int64_t>& dims :
             {std::vector<int64_t>{}, std::vector<int64_t>{0}, std::vector<int64_t>{1}}) {
          const IntList dl(dims);
          EXPECT_LE(max_rel_diff(sum(gt_, dl), sum(t, dl)), tol_for(d) * 10) << n;
          EXPECT_EQ(max_rel_diff(amax(gt_, dl), amax(t, dl)), 0.0) << n;
          EXPECT_EQ(max_rel_diff(amin(gt_, dl, true), amin(t, dl, true)), 0.0) << n;
          EXPECT_EQ(max_rel_diff(all(gt_, dl), all(t, dl)), 0.0) << n;
          EXPECT_EQ(max_rel_diff(any(gt(gt_, 2.0), dl), any(gt(t, 2.0), dl)), 0.0) << n;
        }
        EXPECT_LE(max_rel_diff(prod(gt_.slice(1, 0, 6), {1}), prod(t.slice(1, 0, 6), {1})),
                  tol_for(d) * 10)
            << n;
        EXPECT_LE(max_rel_diff(cumsum(gt_, 1), cumsum(t, 1)), tol_for(d) * 10) << n;
        EXPECT_LE(max_rel_diff(cumsum(gt_, 0), cumsum(t, 0)), tol_for(d) * 10) << n;
      }
    }
    // NaN propagates through amax/amin.
    const Tensor s = special_values(d, 200).view({10, 20});
    EXPECT_EQ(max_rel_diff(amax(s.to(g), {1}), amax(s, {1})), 0.0) << n;
    EXPECT_EQ(max_rel_diff(amin(s.to(g), {0}), amin(s, {0})), 0.0) << n;
  }
  const Tensor i = randint(-50, 50, {33, 70}).to(DType::Int64);
  EXPECT_EQ(max_rel_diff(sum(i.to(g), {1}), sum(i, {1})), 0.0);
  EXPECT_EQ(max_rel_diff(amax(i.to(g), {0}), amax(i, {0})), 0.0);
  EXPECT_EQ(max_rel_diff(cumsum(i.to(g), 1), cumsum(i, 1)), 0.0);
  // Zero-size reduced dim: sum is 0, prod is 1.
  const Tensor e = zeros({4, 0}, {DType::Float32, g});
  EXPECT_EQ(max_rel_diff(sum(e, {1}), zeros({4})), 0.0);
  EXPECT_EQ(max_rel_diff(prod(e, {1}), ones({4})), 0.0);
}

// Note [Split reductions], Note [Long cumsums]: few outputs over long ranges take the chunked
// paths, which must agree with the CPU, propagate a NaN from any chunk and handle a range that
// is not a multiple of the chunk.
TEST(CudaGpu, SplitReductionsOfFewLongRowsMatchCpu) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : {DType::Float32, DType::Float64, DType::BFloat16}) {
    const std::string n = fmt::format("{}", d);
    for (const auto& sizes : {std::vector<int64_t>{(1 << 22) + 7}, std::vector<int64_t>{3, 300001},
                              std::vector<int64_t>{2, 64, 4099}}) {
      const Tensor x = randn(IntList(sizes)).to(d);
      const Tensor gx = x.to(g);
      const int64_t last = static_cast<int64_t>(sizes.size()) - 1;
      for (const std::vector<int64_t>& dims :
           {std::vector<int64_t>{}, std::vector<int64_t>{last}}) {
        const IntList dl(dims);
        EXPECT_LE(max_rel_diff(sum(gx, dl), sum(x, dl)), tol_for(d) * 10) << n;
        EXPECT_EQ(max_rel_diff(amax(gx, dl), amax(x, dl)), 0.0) << n;
        EXPECT_EQ(max_rel_diff(amin(gx, dl), amin(x, dl)), 0.0) << n;
        EXPECT_EQ(max_rel_diff(any(gt(gx, 4.5), dl), any(gt(x, 4.5), dl)), 0.0) << n;
        EXPECT_EQ(max_rel_diff(all(gt(gx, -6.0), dl), all(gt(x, -6.0), dl)), 0.0) << n;
      }
      // Note [Long cumsums]: the same rows scanned in chunks.
      EXPECT_LE(max_rel_diff(cumsum(gx, last), cumsum(x, last)), tol_for(d) * 10) << n;
      // A NaN in the last chunk reaches the result.
      Tensor with_nan = x.clone();
      with_nan.view({-1}).narrow(0, with_nan.numel() - 3, 1).fill_(NAN);
      EXPECT_EQ(max_rel_diff(amax(with_nan.to(g)), amax(with_nan)), 0.0) << n;
      EXPECT_EQ(max_rel_diff(sum(with_nan.to(g)), sum(with_nan)), 0.0) << n;
    }
  }
  // Vertical: columns of a row-major matrix (a bias gradient), 32 outputs per block.
  for (DType d : {DType::Float32, DType::Float16}) {
    for (const auto& sizes : {std::vector<int64_t>{40000, 96}, std::vector<int64_t>{300001, 33}}) {
      const Tensor x = randn(IntList(sizes)).to(d);
      const std::string n = fmt::format("{} {}x{}", d, sizes[0], sizes[1]);
      EXPECT_LE(max_rel_diff(sum(x.to(g), {0}), sum(x, {0})), tol_for(d) * 10) << n;
      EXPECT_EQ(max_rel_diff(amax(x.to(g), {0}), amax(x, {0})), 0.0) << n;
      EXPECT_EQ(max_rel_diff(amin(x.to(g), {0}, true), amin(x, {0}, true)), 0.0) << n;
    }
  }
  // Exact integer sums across chunks.
  const Tensor i = randint(-1000, 1000, {5, 200000}).to(DType::Int64);
  EXPECT_EQ(max_rel_diff(sum(i.to(g), {1}), sum(i, {1})), 0.0);
  EXPECT_EQ(max_rel_diff(sum(i.to(g)), sum(i)), 0.0);
  EXPECT_EQ(max_rel_diff(sum(i.t().contiguous().to(g), {0}), sum(i.t().contiguous(), {0})), 0.0);
  EXPECT_EQ(max_rel_diff(cumsum(i.to(g), 1), cumsum(i, 1)), 0.0);
  // A strided long row: the transposed matrix scanned along its rows.
  const Tensor it = i.t().contiguous().t();
  EXPECT_EQ(max_rel_diff(cumsum(it.to(g), 1), cumsum(it, 1)), 0.0);
}

TEST(CudaGpu, ArgReductionsKeepTheFirstIndexAndLetNanWin) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64,
                  DType::Int8, DType::Bool}) {
    const std::string n = fmt::format("{}", d);
    for (const auto& sizes : {std::vector<int64_t>{41, 13}, std::vector<int64_t>{4, 3000},
                              std::vector<int64_t>{300, 70}}) {
      // Few distinct values: many ties.
      const Tensor x = randint(0, 4, IntList(sizes)).to(d);
      const Tensor xt = randint(0, 4, {sizes[1], sizes[0]}).to(d).transpose(0, 1);
      for (const Tensor& t : {x, xt}) {
        for (int64_t dim : {0, 1}) {
          EXPECT_EQ(max_rel_diff(argmax(t.to(g), dim), argmax(t, dim)), 0.0) << n << dim;
          EXPECT_EQ(max_rel_diff(argmin(t.to(g), dim), argmin(t, dim)), 0.0) << n << dim;
          const auto [gv, gi] = max(t.to(g), dim);
          const auto [cv, ci] = max(t, dim);
          EXPECT_EQ(max_rel_diff(gv, cv), 0.0) << n;
          EXPECT_EQ(max_rel_diff(gi, ci), 0.0) << n;
          const auto [gv2, gi2] = min(t.to(g), dim, true);
          const auto [cv2, ci2] = min(t, dim, true);
          EXPECT_EQ(max_rel_diff(gv2, cv2), 0.0) << n;
          EXPECT_EQ(max_rel_diff(gi2, ci2), 0.0) << n;
        }
        EXPECT_EQ(max_rel_diff(argmax(t.to(g)), argmax(t)), 0.0) << n;
      }
    }
  }
  for (DType d : kFloatTypes) {
    const Tensor s = special_values(d, 34 * 40).view({34, 40});
    EXPECT_EQ(max_rel_diff(argmax(s.to(g), 1), argmax(s, 1)), 0.0);
    EXPECT_EQ(max_rel_diff(argmin(s.to(g), 0), argmin(s, 0)), 0.0);
  }
}

TEST(CudaGpu, SoftmaxAndLogSoftmaxMatchCpuAlongEveryDim) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (const char* cudnn : kCudnnSettings) {
    OptionGuard use("cudnn.enabled", cudnn);
    for (DType d : kFloatTypes) {
      const std::string n = fmt::format("{} cudnn {}", d, cudnn);
      for (const auto& sizes : {std::vector<int64_t>{6, 50, 7}, std::vector<int64_t>{3, 4000, 1},
                                std::vector<int64_t>{2, 9, 300}}) {
        const Tensor x = mul(randn(IntList(sizes)), 4).to(d);
        const Tensor xt = randn({sizes[2], sizes[1], sizes[0]}).to(d).permute({2, 1, 0});
        for (const Tensor& t : {x, xt}) {
          for (int64_t dim : {0, 1, 2}) {
            EXPECT_LE(max_rel_diff(softmax(t.to(g), dim), softmax(t, dim)), tol_for(d)) << n << dim;
            EXPECT_LE(max_rel_diff(log_softmax(t.to(g), dim), log_softmax(t, dim)), tol_for(d) * 4)
                << n << dim;
          }
        }
      }
      // A row with NaN or -inf.
      const Tensor s = special_values(d, 17 * 8).view({8, 17});
      EXPECT_LE(max_rel_diff(softmax(s.to(g), 1), softmax(s, 1)), tol_for(d)) << n;
    }
  }
}

TEST(CudaGpu, IndexSelectGatherScatterMatchCpu) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64,
                  DType::Int8, DType::Bool}) {
    const std::string n = fmt::format("{}", d);
    const Tensor x = randint(0, 5, {9, 13}).to(d);
    const Tensor xt = randint(0, 5, {13, 9}).to(d).transpose(0, 1);
    const Tensor idx = randint(0, 9, {20}).to(DType::Int64);  // repeats
    for (const Tensor& t : {x, xt}) {
      EXPECT_EQ(max_rel_diff(index_select(t.to(g), 0, idx.to(g)), index_select(t, 0, idx)), 0.0)
          << n;
      const Tensor gi = randint(0, 13, {9, 30}).to(DType::Int64);
      EXPECT_EQ(max_rel_diff(gather(t.to(g), 1, gi.to(g)), gather(t, 1, gi)), 0.0) << n;
      const Tensor si = randint(0, 9, {6, 13}).to(DType::Int64);
      const Tensor src = randint(0, 5, {6, 13}).to(d);
      EXPECT_EQ(max_rel_diff(scatter(t.to(g), 0, si.to(g), src.to(g)), scatter(t, 0, si, src)), 0.0)
          << n;
      if (d != DType::Bool) {
        EXPECT_EQ(
            max_rel_diff(scatter_add(t.to(g), 0, si.to(g), src.to(g)), scatter_add(t, 0, si, src)),
            0.0)
            << n;
      }
    }
  }
  // A bad index is an IndexError (EMBER_ERR_INDEX) naming the op, the index and the size, at
  // the next synchronization (Note [Index errors reported at the next synchronization]; more in
  // CudaRuntime.IndexErrorsSurfaceAtTheNextSynchronizationAndTheProcessGoesOn).
  const Tensor x = randn({4, 5}).to(g);
  const Tensor y = index_select(x, 0, full({3}, 7, {DType::Int64}).to(g));
  try {
    synchronize(g);
    ADD_FAILURE() << "no error for an out-of-range index";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Index) << e.what();
    EXPECT_NE(std::string(e.what()).find(
                  "[index_select] index 7 is out of bounds for dimension 0 with size 4"),
              std::string::npos)
        << e.what();
  }
}

TEST(CudaGpu, ConvolutionsAndTheirGradientsMatchCpu) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  struct Case {
    int64_t stride, pad, dil, groups;
  };
  for (DType d : kFloatTypes) {
    const std::string n = fmt::format("{}", d);
    const double tol = d == DType::Float64 ? 1e-12 : d == DType::Float32 ? 1e-4 : 2e-2;
    for (const Case& c : {Case{1, 0, 1, 1}, Case{2, 1, 1, 1}, Case{1, 2, 2, 2}, Case{3, 1, 1, 4}}) {
      const Tensor x = randn({2, 4, 11, 10}).to(d);
      const Tensor w = randn({8, 4 / c.groups, 3, 3}).to(d);
      const Tensor b = randn({8}).to(d);
      auto run = [&](const Tensor& xx, const Tensor& ww, const Tensor& bb) {
        Tensor xl = xx.detach().requires_grad_();
        Tensor wl = ww.detach().requires_grad_();
        const Tensor y =
            conv2d(xl, wl, bb, {c.stride, c.stride}, {c.pad, c.pad}, {c.dil, c.dil}, c.groups);
        sum(mul(y, y)).backward();
        return std::tuple<Tensor, Tensor, Tensor>(y, xl.grad(), wl.grad());
      };
      const auto [gy, gdx, gdw] = run(x.to(g), w.to(g), b.to(g));
      const auto [cy, cdx, cdw] = run(x, w, b);
      const std::string what =
          fmt::format("{} stride {} pad {} dil {} groups {}", n, c.stride, c.pad, c.dil, c.groups);
      EXPECT_LE(max_rel_diff(gy, cy), tol) << what;
      EXPECT_LE(grad_diff(d, gdx, cdx), tol * 10) << what;
      EXPECT_LE(grad_diff(d, gdw, cdw), tol * 10) << what;
    }
    // conv_transpose2d with output_padding: the backward-data kernel with a larger input.
    const Tensor x = randn({2, 6, 5, 5}).to(d);
    const Tensor w = randn({6, 3, 3, 3}).to(d);
    EXPECT_LE(max_rel_diff(conv_transpose2d(x.to(g), w.to(g), {}, {2, 2}, {1, 1}, {1, 1}),
                           conv_transpose2d(x, w, {}, {2, 2}, {1, 1}, {1, 1})),
              tol)
        << n;
  }
}

TEST(CudaGpu, MaxPoolValuesAndIndicesMatchCpu) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64,
                  DType::Int8}) {
    const std::string n = fmt::format("{}", d);
    // Few distinct values (ties) and, for floating dtypes, NaN and infinities.
    const Tensor x = (d == DType::Int64 || d == DType::Int8)
                         ? randint(0, 3, {2, 3, 11, 12}).to(d)
                         : special_values(d, 2 * 3 * 11 * 12).view({2, 3, 11, 12});
    for (const auto& [k, st, pad, dil, ceil] :
         {std::tuple<int64_t, int64_t, int64_t, int64_t, bool>{2, 2, 0, 1, false},
          {3, 2, 1, 1, true},
          {3, 1, 1, 2, false}}) {
      const auto [gv, gi] =
          max_pool2d_with_indices(x.to(g), {k, k}, {st, st}, {pad, pad}, {dil, dil}, ceil);
      const auto [cv, ci] =
          max_pool2d_with_indices(x, {k, k}, {st, st}, {pad, pad}, {dil, dil}, ceil);
      EXPECT_EQ(max_rel_diff(gv, cv), 0.0) << n << " k " << k;
      EXPECT_EQ(max_rel_diff(gi, ci), 0.0) << n << " k " << k;
      if (!is_floating(d)) continue;
      // The gradient: max_pool2d_backward's gather on the GPU, the CPU's scatter; the same
      // additions in the same order (Note [Max pooling backward as a gather]).
      const Tensor r = randn(cv.sizes()).to(d);
      const Tensor gx = x.to(g).requires_grad_(true), cx = x.detach().requires_grad_(true);
      sum(mul(max_pool2d(gx, {k, k}, {st, st}, {pad, pad}, {dil, dil}, ceil), r.to(g))).backward();
      sum(mul(max_pool2d(cx, {k, k}, {st, st}, {pad, pad}, {dil, dil}, ceil), r)).backward();
      EXPECT_EQ(max_rel_diff(gx.grad(), cx.grad()), 0.0) << n << " k " << k << " gradient";
    }
  }
}

// y and the gradient of sum(y * r) (r random, fixed) with respect to each of `params`, where
// y = fn(params...) on the device of the params.
template <typename Fn>
std::vector<Tensor> value_and_grads(Fn&& fn, const std::vector<Tensor>& params, const Tensor& r) {
  std::vector<Tensor> leaves;
  for (const Tensor& p : params) leaves.push_back(p.detach().requires_grad_());
  const Tensor y = fn(leaves);
  sum(mul(y, r.to(y.device()))).backward();
  std::vector<Tensor> out{y};
  for (const Tensor& l : leaves) out.push_back(l.grad());
  return out;
}

// Compares every tensor of a (GPU) with b (CPU) within tol, the gradients (all but the first)
// as grad_diff does for dtype d; `what` labels failures.
void expect_all_close(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double tol,
                      const std::string& what, DType d = DType::Float32) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i].defined() && b[i].defined()) << what << " #" << i;
    const double diff = i == 0 ? max_rel_diff(a[i], b[i]) : grad_diff(d, a[i], b[i]);
    EXPECT_LE(diff, tol) << what << " #" << i;
  }
}

TEST(CudaGpu, AvgPoolingAndItsGradientMatchCpu) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  struct Case {
    int64_t k, s, p;
    bool ceil, include_pad;
  };
  for (const char* cudnn : kCudnnSettings) {
    OptionGuard use("cudnn.enabled", cudnn);
    for (DType d : kFloatTypes) {
      const Tensor x = randn({2, 3, 11, 12}).to(d);
      for (const Case& c :
           {Case{2, 2, 0, false, true}, Case{3, 2, 1, true, true}, Case{3, 2, 1, true, false},
            Case{3, 1, 1, false, false}, Case{4, 3, 2, true, true}}) {
        auto fn = [&](const std::vector<Tensor>& p) {
          return avg_pool2d(p[0], {c.k, c.k}, {c.s, c.s}, {c.p, c.p}, c.ceil, c.include_pad);
        };
        const Tensor r = randn(fn({x}).sizes()).to(d);
        const std::string what = fmt::format("{} k {} s {} p {} ceil {} include_pad {} cudnn {}", d,
                                             c.k, c.s, c.p, c.ceil, c.include_pad, cudnn);
        expect_all_close(value_and_grads(fn, {x.to(g)}, r), value_and_grads(fn, {x}, r), tol_for(d),
                         what);
      }
      // A non-contiguous input (the core makes it contiguous for the kernel).
      const Tensor xt = randn({2, 3, 12, 11}).to(d).transpose(2, 3);
      EXPECT_LE(max_rel_diff(avg_pool2d(xt.to(g), {3, 3}), avg_pool2d(xt, {3, 3})), tol_for(d))
          << fmt::format("{} cudnn {}", d, cudnn);
    }
  }
}

TEST(CudaGpu, AdaptiveAvgPoolingAndItsGradientMatchCpu) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (const char* cudnn : kCudnnSettings) {
    OptionGuard use("cudnn.enabled", cudnn);
    for (DType d : kFloatTypes) {
      const Tensor x = randn({2, 3, 11, 12}).to(d);
      for (const auto& [oh, ow] :
           {std::pair<int64_t, int64_t>{5, 7}, {1, 1}, {11, 12}, {4, 5}, {13, 17}}) {
        auto fn = [&](const std::vector<Tensor>& p) { return adaptive_avg_pool2d(p[0], {oh, ow}); };
        const Tensor r = randn({2, 3, oh, ow}).to(d);
        expect_all_close(value_and_grads(fn, {x.to(g)}, r), value_and_grads(fn, {x}, r), tol_for(d),
                         fmt::format("{} to {}x{} cudnn {}", d, oh, ow, cudnn));
      }
    }
  }
}

// Statistics and gradients sum many terms: the GPU adds them in another order (in double).
double norm_tol(DType d) {
  return d == DType::Float64   ? 1e-10
         : d == DType::Float32 ? 1e-4
         : d == DType::Float16 ? 1e-2
                               : 4e-2;
}

// Note [Channels-last convolutions through cuDNN]: channels-last operands run through cuDNN's NHWC
// descriptors (float64 through the core's reorders). Values and gradients equal the row-major
// run on the same device and the CPU's; outputs and gradients keep the format; the batch split,
// benchmark mode and conv_transpose2d's larger input take the same path.
// A whole recurrent layer through cuDNN's RNN (backends/cuda/ops/rnn.cpp) against the CPU's
// composite in float64: outputs and every gradient, both cells and directions, with and without
// bias, in the three dtypes registered for it.
TEST(CudaGpu, RecurrentLayersThroughCudnnMatchTheCpu) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : {DType::Float32, DType::Float64, DType::Float16}) {
    ASSERT_TRUE(has_kernel(core_op(ops::rnn_layer), g, d)) << fmt::format("{}", d);
    ASSERT_TRUE(has_kernel(core_op(ops::rnn_layer_backward), g, d)) << fmt::format("{}", d);
    const double tol = d == DType::Float64 ? 1e-11 : d == DType::Float32 ? 1e-4 : 2e-2;
    for (const RnnMode mode : {RnnMode::LSTM, RnnMode::GRU}) {
      const bool lstm = mode == RnnMode::LSTM;
      const int64_t G = lstm ? 4 : 3, L = 7, N = 5, I = 6, H = 9;
      for (const bool reverse : {false, true}) {
        for (const bool bias : {true, false}) {
          const std::string what =
              fmt::format("{} {} reverse={} bias={}", d, lstm ? "LSTM" : "GRU", reverse, bias);
          const std::vector<Tensor> in = {randn({L, N, I}),
                                          mul(randn({G * H, I}), 0.4),
                                          mul(randn({G * H, H}), 0.4),
                                          bias ? mul(randn({G * H}), 0.3) : Tensor(),
                                          bias ? mul(randn({G * H}), 0.3) : Tensor(),
                                          randn({N, H}),
                                          lstm ? randn({N, H}) : Tensor()};
          const Tensor wy = randn({L, N, H}), wh = randn({N, H}), wc = randn({N, H});
          // {y, h_n, c_n, then the gradient of every defined input}
          const auto run = [&](Device dev, DType dt) {
            std::vector<Tensor> xs;
            for (const Tensor& t : in) {
              xs.push_back(t.defined() ? t.detach().to(dt).to(dev).requires_grad_(true) : t);
            }
            const auto [y, hn, cn] =
                rnn_layer(mode, xs[0], xs[1], xs[2], xs[3], xs[4], xs[5], xs[6], reverse);
            Tensor loss = add(sum(mul(y, wy.to(dt).to(dev))), sum(mul(hn, wh.to(dt).to(dev))));
            if (lstm) loss = add(loss, sum(mul(cn, wc.to(dt).to(dev))));
            loss.backward();
            std::vector<Tensor> r = {y, hn};
            if (lstm) r.push_back(cn);
            for (const Tensor& t : xs) {
              if (t.defined()) r.push_back(t.grad());
            }
            return r;
          };
          const std::vector<Tensor> got = run(g, d), want = run(Device::cpu(), DType::Float64);
          ASSERT_EQ(got.size(), want.size()) << what;
          for (size_t i = 0; i < got.size(); ++i) {
            EXPECT_EQ(got[i].dtype(), d) << what << " result " << i;
            EXPECT_LE(max_rel_diff(got[i], want[i]), i < 3 ? tol : tol * 10)
                << what << " result " << i;
          }
        }
      }
    }
  }
}

// nn::LSTM and nn::GRU moved to the GPU run every layer and direction through cuDNN and give
// the CPU's outputs, final states and parameter gradients (two layers, bidirectional,
// batch_first).
TEST(CudaGpu, LstmAndGruModulesOnTheGpuMatchTheCpu) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  const nn::RNNOptions o{.num_layers = 2, .batch_first = true, .bidirectional = true};
  for (const bool lstm : {true, false}) {
    manual_seed(5);
    std::shared_ptr<nn::RNNBase> cpu, gpu;
    if (lstm) {
      cpu = std::make_shared<nn::LSTM>(6, 8, o);
      gpu = std::make_shared<nn::LSTM>(6, 8, o);
    } else {
      cpu = std::make_shared<nn::GRU>(6, 8, o);
      gpu = std::make_shared<nn::GRU>(6, 8, o);
    }
    gpu->load_state_dict(cpu->state_dict());
    gpu->to(g);
    const Tensor x = randn({3, 10, 6});
    const auto run = [&](nn::RNNBase& m, Device dev) {
      Tensor out, hn;
      if (lstm) {
        auto [y, h, c] = static_cast<nn::LSTM&>(m).forward(x.to(dev), {}, {});
        out = y, hn = add(h, c);
      } else {
        auto [y, h] = static_cast<nn::GRU&>(m).forward(x.to(dev), {});
        out = y, hn = h;
      }
      add(sum(mul(out, out)), sum(hn)).backward();
      return std::pair{out, hn};
    };
    const auto [cy, ch] = run(*cpu, Device::cpu());
    const auto [gy, gh] = run(*gpu, g);
    const char* what = lstm ? "LSTM" : "GRU";
    EXPECT_LE(max_rel_diff(gy, cy), 1e-4) << what;
    EXPECT_LE(max_rel_diff(gh, ch), 1e-4) << what;
    const auto cp = cpu->named_parameters(), gp = gpu->named_parameters();
    ASSERT_EQ(cp.size(), gp.size());
    for (size_t i = 0; i < cp.size(); ++i) {
      EXPECT_EQ(gp[i].first, cp[i].first);
      EXPECT_LE(max_rel_diff(gp[i].second.grad(), cp[i].second.grad()), 1e-3)
          << what << " " << cp[i].first;
    }
  }
}

TEST(CudaGpu, ChannelsLastConvolutionsThroughCudnnMatchRowMajorAndCpu) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  constexpr MemoryFormat kCl = MemoryFormat::ChannelsLast;
  struct Case {
    int64_t stride, pad, dil, groups;
  };
  // y, dx, dw of conv2d (bias b) and sum(y * y), each format checked against `expect_cl`.
  auto run = [](const Tensor& x, const Tensor& w, const Tensor& b, const Case& c, bool expect_cl,
                const std::string& what) {
    Tensor xl = x.detach().requires_grad_();
    Tensor wl = w.detach().requires_grad_();
    const Tensor y =
        conv2d(xl, wl, b, {c.stride, c.stride}, {c.pad, c.pad}, {c.dil, c.dil}, c.groups);
    sum(mul(y, y)).backward();
    EXPECT_EQ(y.is_contiguous(kCl) && !y.is_contiguous(), expect_cl) << what;
    EXPECT_EQ(xl.grad().is_contiguous(kCl), x.is_contiguous(kCl)) << what;
    EXPECT_EQ(wl.grad().is_contiguous(kCl), w.is_contiguous(kCl)) << what;
    return std::vector<Tensor>{y, xl.grad(), wl.grad()};
  };
  for (DType d : kFloatTypes) {
    const double tol = d == DType::Float64 ? 1e-12 : d == DType::Float32 ? 1e-4 : 2e-2;
    for (const Case& c : {Case{1, 1, 1, 1}, Case{2, 1, 1, 1}, Case{1, 2, 2, 2}, Case{3, 1, 1, 4}}) {
      const Tensor x = randn({3, 8, 11, 10}).to(d);
      const Tensor w = randn({12, 8 / c.groups, 3, 3}).to(d);
      const Tensor b = randn({12}).to(d);
      const std::string what =
          fmt::format("{} stride {} pad {} dil {} groups {}", d, c.stride, c.pad, c.dil, c.groups);
      const auto cpu = run(x, w, b, c, false, what + " cpu row-major");
      const auto rows = run(x.to(g), w.to(g), b.to(g), c, false, what + " row-major");
      expect_all_close(rows, cpu, tol * 10, what + " row-major vs cpu", d);
      // Both channels-last, and either one alone (the core reorders the other).
      const std::pair<bool, bool> layouts[] = {{true, true}, {false, true}, {true, false}};
      for (const auto& [xc, wc] : layouts) {
        const Tensor xg = xc ? x.to(g).contiguous(kCl) : x.to(g);
        const Tensor wg = wc ? w.to(g).contiguous(kCl) : w.to(g);
        const std::string v = fmt::format("{} x cl {} w cl {}", what, xc, wc);
        const auto cl = run(xg, wg, b.to(g), c, true, v);
        expect_all_close(cl, rows, tol * 10, v + " vs row-major", d);
        expect_all_close(cl, cpu, tol * 10, v + " vs cpu", d);
      }
    }
    // A split batch and benchmark mode over channels-last tensors.
    const Tensor x = randn({7, 4, 6, 6}).to(d).to(g).contiguous(kCl);
    const Tensor w = randn({5, 4, 3, 3}).to(d).to(g).contiguous(kCl);
    const Case one{1, 1, 1, 1};
    const auto whole = run(x, w, {}, one, true, "whole");
    for (const char* benchmark : {"0", "1"}) {
      OptionGuard bench("cudnn.benchmark", benchmark);
      OptionGuard limit("testing.conv_max_elements", "400");  // 2 samples per call: 2+2+2+1
      const std::string what = fmt::format("{} split, benchmark {}", d, benchmark);
      expect_all_close(run(x, w, {}, one, true, what), whole, tol * 10, what);
    }
    // conv_transpose2d with output_padding: the backward-data kernel with a larger input, and
    // its gradient through the forward kernel with an output smaller than the input allows.
    const Tensor xt = randn({2, 6, 5, 5}).to(d), wt = randn({6, 3, 3, 3}).to(d);
    const Tensor rt = randn({2, 3, 10, 10}).to(d);
    auto transpose = [](const std::vector<Tensor>& p) {
      return conv_transpose2d(p[0], p[1], {}, {2, 2}, {1, 1}, {1, 1});
    };
    const auto tcl =
        value_and_grads(transpose, {xt.to(g).contiguous(kCl), wt.to(g).contiguous(kCl)}, rt.to(g));
    EXPECT_TRUE(tcl[0].is_contiguous(kCl)) << fmt::format("{}", d);
    expect_all_close(tcl, value_and_grads(transpose, {xt, wt}, rt), tol * 10,
                     fmt::format("{} conv_transpose2d channels-last", d));
  }
}

// Channels-last on the GPU (Note [Channels-last tensors]): the convolutions run through cuDNN's
// NHWC descriptors, batch norm views the image as rows of channels, and the core reorders for the
// pools; results, gradients and their formats match the CPU's.
TEST(CudaGpu, ChannelsLastLayersMatchCpuAndKeepTheFormat) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  constexpr MemoryFormat kCl = MemoryFormat::ChannelsLast;
  const Tensor x = randn({4, 6, 12, 10}).contiguous(kCl);
  const Tensor w = randn({8, 6, 3, 3}).contiguous(kCl);
  const Tensor bn_w = randn({8}), bn_b = randn({8});
  auto run = [&](Device dev) {
    Tensor xl = x.to(dev).detach().requires_grad_();
    Tensor wl = w.to(dev).detach().requires_grad_();
    Tensor rm = zeros({8}, {DType::Float32, dev}), rv = ones({8}, {DType::Float32, dev});
    const Tensor c = conv2d(xl, wl, {}, {1, 1}, {1, 1});
    const Tensor y = max_pool2d(
        relu(batch_norm(c, bn_w.to(dev), bn_b.to(dev), rm, rv, /*training=*/true)), {2, 2});
    EXPECT_TRUE(c.is_contiguous(kCl)) << dev.str();
    EXPECT_TRUE(y.is_contiguous(kCl)) << dev.str();
    sum(mul(adaptive_avg_pool2d(y, {2, 2}), 3.0)).backward();
    EXPECT_TRUE(xl.grad().is_contiguous(kCl)) << dev.str();
    EXPECT_TRUE(wl.grad().is_contiguous(kCl)) << dev.str();
    return std::vector<Tensor>{y, xl.grad(), wl.grad(), rm, rv};
  };
  expect_all_close(run(g), run(Device::cpu()), 1e-3, "channels-last conv/bn/relu/pool");
}

TEST(CudaGpu, BatchNormTrainingEvalAndGradientsMatchCpu) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (const char* cudnn : kCudnnSettings) {
    OptionGuard use("cudnn.enabled", cudnn);
    for (DType d : kFloatTypes) {
      // A large mean (the two-pass statistics must not cancel) and an odd spatial size.
      const Tensor x = add(randn({4, 5, 7, 3}), 3).to(d);
      const Tensor w = randn({5}).to(d), b = randn({5}).to(d);
      const Tensor r = randn({4, 5, 7, 3}).to(d);
      for (bool training : {true, false}) {
        const Tensor rm0 = randn({5}).to(d), rv0 = add(abs(randn({5})), 0.5).to(d);
        Tensor grm = rm0.to(g).clone(), grv = rv0.to(g).clone();
        Tensor crm = rm0.clone(), crv = rv0.clone();
        auto on = [&](Tensor& rm, Tensor& rv) {
          return [&, training](const std::vector<Tensor>& p) {
            return batch_norm(p[0], p[1], p[2], rm, rv, training, 0.1, 1e-5);
          };
        };
        const std::string what = fmt::format("{} training {} cudnn {}", d, training, cudnn);
        expect_all_close(value_and_grads(on(grm, grv), {x.to(g), w.to(g), b.to(g)}, r),
                         value_and_grads(on(crm, crv), {x, w, b}, r), norm_tol(d), what);
        EXPECT_LE(max_rel_diff(grm, crm), norm_tol(d)) << what << " running_mean";
        EXPECT_LE(max_rel_diff(grv, crv), norm_tol(d)) << what << " running_var";
      }
    }
  }
}

TEST(CudaGpu, LayerNormAndGroupNormWithGradientsMatchCpu) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : kFloatTypes) {
    const Tensor x = add(randn({4, 6, 10}), 2).to(d);
    const Tensor r = randn({4, 6, 10}).to(d);
    // Normalized over the last dim (the CPU's S == 1 path) and over the last two.
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{10}, {6, 10}}) {
      const std::vector<int64_t> ws = shape;
      const Tensor w = randn(ws).to(d), b = randn(ws).to(d);
      auto fn = [&](const std::vector<Tensor>& p) { return layer_norm(p[0], shape, p[1], p[2]); };
      expect_all_close(value_and_grads(fn, {x.to(g), w.to(g), b.to(g)}, r),
                       value_and_grads(fn, {x, w, b}, r), norm_tol(d),
                       fmt::format("layer_norm {} over {} dims", d, shape.size()));
    }
    // group_norm: 3 groups of 2 channels, spatial 5 x 4 (S > 1), and groups of one channel
    // without spatial dims (S == 1).
    const Tensor xg = randn({3, 6, 5, 4}).to(d), rg = randn({3, 6, 5, 4}).to(d);
    const Tensor wg = randn({6}).to(d), bg = randn({6}).to(d);
    auto gn = [&](const std::vector<Tensor>& p) { return group_norm(p[0], 3, p[1], p[2]); };
    expect_all_close(value_and_grads(gn, {xg.to(g), wg.to(g), bg.to(g)}, rg),
                     value_and_grads(gn, {xg, wg, bg}, rg), norm_tol(d),
                     fmt::format("group_norm {}", d));
    const Tensor x2 = randn({8, 6}).to(d), r2 = randn({8, 6}).to(d);
    auto gn1 = [&](const std::vector<Tensor>& p) { return group_norm(p[0], 2, p[1], p[2]); };
    expect_all_close(value_and_grads(gn1, {x2.to(g), wg.to(g), bg.to(g)}, r2),
                     value_and_grads(gn1, {x2, wg, bg}, r2), norm_tol(d),
                     fmt::format("group_norm {} without spatial dims", d));
  }
}

const DType kAllTypes[] = {DType::Float32,  DType::Float64, DType::Float16,
                           DType::BFloat16, DType::Int64,   DType::Int32,
                           DType::Int8,     DType::UInt8,   DType::Bool};

// Few distinct values (many ties); NaN and infinities for the floating dtypes.
Tensor ordering_input(DType d, std::vector<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  const bool floating =
      d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
  const Tensor base = floating ? special_values(d, n).to(DType::Float64) : randint(0, 4, {n});
  return (floating ? round(base) : base).to(d).view(sizes);
}

TEST(CudaGpu, SortAndTopkAreStableWithNanLastAsOnCpu) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : kAllTypes) {
    const Tensor x = ordering_input(d, {6, 50});
    const Tensor gx = x.to(g);
    for (int64_t dim : {1, 0}) {  // dim 0: the kernel sees a transposed (strided) view
      for (bool desc : {false, true}) {
        const auto [gv, gi] = sort(gx, dim, desc);
        const auto [cv, ci] = sort(x, dim, desc);
        const std::string what = fmt::format("{} dim {} descending {}", d, dim, desc);
        EXPECT_EQ(max_rel_diff(gv, cv), 0.0) << what;
        EXPECT_EQ(max_rel_diff(gi, ci), 0.0) << what;
      }
      const int64_t k = dim == 1 ? 7 : 4;
      for (bool largest : {true, false}) {
        for (bool sorted : {true, false}) {
          const auto [gv, gi] = topk(gx, k, dim, largest, sorted);
          const auto [cv, ci] = topk(x, k, dim, largest, sorted);
          const std::string what =
              fmt::format("{} dim {} k {} largest {} sorted {}", d, dim, k, largest, sorted);
          EXPECT_EQ(max_rel_diff(gv, cv), 0.0) << what;
          EXPECT_EQ(max_rel_diff(gi, ci), 0.0) << what;
        }
      }
    }
  }
  // One long row and many short ones (Thrust's multi-block paths).
  for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{1, 100000}, {20000, 5}}) {
    const Tensor x = ordering_input(DType::Float32, sizes);
    const auto [gv, gi] = sort(x.to(g), -1, false);
    const auto [cv, ci] = sort(x, -1, false);
    EXPECT_EQ(max_rel_diff(gv, cv), 0.0) << sizes[0];
    EXPECT_EQ(max_rel_diff(gi, ci), 0.0) << sizes[0];
    const auto [tv, ti] = topk(x.to(g), 3, -1, true, false);
    const auto [uv, ui] = topk(x, 3, -1, true, false);
    EXPECT_EQ(max_rel_diff(tv, uv), 0.0) << sizes[0];
    EXPECT_EQ(max_rel_diff(ti, ui), 0.0) << sizes[0];
  }
}

TEST(CudaGpu, NonzeroMatchesCpuInRowMajorOrder) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : kAllTypes) {
    const Tensor x = ordering_input(d, {7, 9, 11});
    EXPECT_EQ(max_rel_diff(nonzero(x.to(g)), nonzero(x)), 0.0) << fmt::format("{}", d);
    const Tensor xt = x.transpose(0, 2);  // strided
    EXPECT_EQ(max_rel_diff(nonzero(x.to(g).transpose(0, 2)), nonzero(xt)), 0.0)
        << fmt::format("{}", d);
    EXPECT_EQ(max_rel_diff(nonzero(x.to(g).slice(1, 1, 9, 3)), nonzero(x.slice(1, 1, 9, 3))), 0.0)
        << fmt::format("{}", d);
  }
  // Large (many blocks), all zero, 0-d.
  const Tensor big = ordering_input(DType::Float32, {300000});
  EXPECT_EQ(max_rel_diff(nonzero(big.to(g)), nonzero(big)), 0.0);
  EXPECT_EQ(nonzero(zeros({5, 4}, {DType::Float32, g})).size(0), 0);
  EXPECT_EQ(nonzero(full({}, 2.0, {DType::Float32, g})).sizes(), nonzero(full({}, 2.0)).sizes());
}

}  // namespace
}  // namespace ember
