// compile(): replays equal to the function, captures per input signature, guards on host reads,
// what runs eagerly instead, the memory plan, watched tensors.
#include <gtest/gtest.h>

#include <ember/tensor.h>

#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

using testing::values;

Tensor randn_of(IntList sizes, uint64_t seed) {
  Generator gen(seed);
  return randn(sizes, DType::Float32, &gen);
}

void expect_close(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.sizes(), b.sizes());
  const std::vector<double> x = values(a), y = values(b);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-5) << i;
}

struct Mlp {
  Tensor w1 = randn_of({8, 16}, 1), b1 = randn_of({16}, 2), w2 = randn_of({16, 4}, 3);
  int calls = 0;
  std::vector<Tensor> operator()(const std::vector<Tensor>& in) {
    ++calls;
    return {matmul(relu(add(matmul(in[0], w1), b1)), w2)};
  }
};

TEST(Compile, ReplaysWithoutRunningTheFunction) {
  Mlp mlp;
  CompiledFunction f =
      compile([&](const std::vector<Tensor>& in) { return mlp(in); }, {randn_of({3, 8}, 10)});
  EXPECT_EQ(mlp.calls, 1);
  for (uint64_t seed = 11; seed < 15; ++seed) {
    const Tensor x = randn_of({3, 8}, seed);
    const std::vector<Tensor> got = f({x});
    const int before = mlp.calls;
    const std::vector<Tensor> want = mlp({x});
    mlp.calls = before;
    ASSERT_EQ(got.size(), 1u);
    expect_close(got[0], want[0]);
  }
  EXPECT_EQ(mlp.calls, 1);
  const CompileReport r = f.report();
  EXPECT_EQ(r.captures, 1);
  EXPECT_EQ(r.replays, 4);
  EXPECT_GE(r.steps, 4);
  EXPECT_EQ(r.guards, 0);
  EXPECT_TRUE(r.eager_reason.empty()) << r.eager_reason;
}

TEST(Compile, ResultsAreFreshAndInputsMayBeViews) {
  Mlp mlp;
  CompiledFunction f([&](const std::vector<Tensor>& in) { return mlp(in); });
  const Tensor big = randn_of({6, 8}, 20);
  const Tensor a = f({big.narrow(0, 0, 3)})[0];
  const Tensor b = f({big.narrow(0, 3, 3)})[0];  // another offset, the same signature
  EXPECT_EQ(f.report().replays, 1);
  EXPECT_FALSE(a.is_same_storage(b));
  expect_close(a, mlp({big.narrow(0, 0, 3)})[0]);
  expect_close(b, mlp({big.narrow(0, 3, 3)})[0]);
}

TEST(Compile, CapturesAgainForAnotherSignature) {
  Mlp mlp;
  CompiledFunction f([&](const std::vector<Tensor>& in) { return mlp(in); });
  f({randn_of({3, 8}, 30)});
  f({randn_of({5, 8}, 31)});
  f({randn_of({3, 8}, 32)});
  f({randn_of({5, 8}, 33)});
  const CompileReport r = f.report();
  EXPECT_EQ(r.captures, 2);
  EXPECT_EQ(r.replays, 2);
}

TEST(Compile, AHostReadIsAGuardNotAFrozenBranch) {
  int calls = 0;
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    ++calls;
    if (sum(in[0]).item() > 0) return {relu(in[0])};
    return {neg(in[0])};
  };
  CompiledFunction f(fn);
  const Tensor pos = full({4}, 2.0), neg4 = full({4}, -3.0);
  expect_close(f({pos})[0], relu(pos));
  expect_close(f({pos})[0], relu(pos));  // a replay: the guard holds
  EXPECT_EQ(calls, 1);
  expect_close(f({neg4})[0], neg(neg4));  // the guard fails: the function runs
  EXPECT_EQ(calls, 2);
  const CompileReport r = f.report();
  EXPECT_EQ(r.guards, 1);
  EXPECT_EQ(r.captures, 2);
  EXPECT_NE(r.eager_reason.find("differed"), std::string::npos) << r.eager_reason;
  expect_close(f({neg4})[0], neg(neg4));  // replays the new capture
  EXPECT_EQ(calls, 2);
}

TEST(Compile, ValuesThatChangeEveryCallEndInEagerCalls) {
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {mul(in[0], sum(in[0]).item())};
  };
  CompiledFunction f(fn);
  for (int i = 0; i < 14; ++i) {
    const Tensor x = full({3}, static_cast<double>(i));
    expect_close(f({x})[0], mul(x, 3.0 * i));
  }
  const CompileReport r = f.report();
  EXPECT_EQ(r.replays, 0);
  EXPECT_NE(r.eager_reason.find("runs eagerly"), std::string::npos) << r.eager_reason;
}

TEST(Compile, IndexBoundsAreStillChecked) {
  const Tensor table = randn_of({5, 3}, 40);
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {index_select(table, 0, in[0])};
  };
  CompiledFunction f(fn);
  const Tensor idx = testing::make({0, 4}, {2}, DType::Int64);
  expect_close(f({idx})[0], index_select(table, 0, idx));
  const Tensor other = testing::make({1, 2}, {2}, DType::Int64);
  expect_close(f({other})[0], index_select(table, 0, other));
  const Tensor bad = testing::make({1, 9}, {2}, DType::Int64);
  EXPECT_THROW(f({bad}), IndexError);
}

TEST(Compile, RandomNumbersAreNeverReplayed) {
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {dropout(in[0], 0.5, /*training=*/true)};
  };
  CompiledFunction f(fn);
  const Tensor x = ones({64});
  const Tensor a = f({x})[0], b = f({x})[0];
  EXPECT_NE(values(a), values(b));  // two draws, not one replayed
  const CompileReport r = f.report();
  EXPECT_EQ(r.replays, 0);
  EXPECT_NE(r.eager_reason.find("random numbers"), std::string::npos) << r.eager_reason;
}

TEST(Compile, IntermediatesShareBuffersByLifetime) {
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    Tensor t = in[0];
    for (int i = 0; i < 8; ++i) t = add(mul(t, 0.5), 1.0);
    return {t};
  };
  CompiledFunction f(fn);
  const Tensor x = randn_of({1 << 16}, 50);
  f({x});
  expect_close(f({x})[0], fn({x})[0]);
  const CompileReport r = f.report();
  EXPECT_EQ(r.replays, 1);
  // 16 values of 256 KiB (and the scalars' one-element tensors), in at most three buffers.
  EXPECT_GE(r.intermediate_bytes, 16u * (1u << 18));
  EXPECT_LE(r.planned_bytes, 3u * (1u << 18) + 4096);
}

TEST(Compile, InPlaceWritesToInputsAreReplayed) {
  auto fn = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    Tensor x = in[0];
    add_(x, 1.0);
    return {mul(x, 2.0)};
  };
  CompiledFunction f(fn);
  f({zeros({3})});
  Tensor x = full({3}, 5.0);
  expect_close(f({x})[0], full({3}, 12.0));
  expect_close(x, full({3}, 6.0));
  EXPECT_EQ(f.report().replays, 1);
}

TEST(Compile, AReplacedWatchedWeightIsCapturedAgain) {
  Tensor w = randn_of({4, 4}, 60);
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {matmul(in[0], w)};
  };
  CompiledFunction f(fn, {w});
  const Tensor x = randn_of({2, 4}, 61);
  f({x});
  mul_(w, Scalar(2.0));  // in place: replays read it as it is
  expect_close(f({x})[0], matmul(x, w));
  EXPECT_EQ(f.report().captures, 1);
  w.set_data(randn_of({4, 4}, 62));  // another storage: captured again
  expect_close(f({x})[0], matmul(x, w));
  EXPECT_EQ(f.report().captures, 2);
}

TEST(Compile, RunsOnTheReferenceBackend) {
  const Device ref("reference");
  Mlp mlp;
  mlp.w1 = mlp.w1.to(ref);
  mlp.b1 = mlp.b1.to(ref);
  mlp.w2 = mlp.w2.to(ref);
  CompiledFunction f([&](const std::vector<Tensor>& in) { return mlp(in); });
  const Tensor x = randn_of({3, 8}, 70).to(ref);
  f({x});
  const Tensor got = f({x})[0];
  EXPECT_EQ(got.device(), ref);
  expect_close(got.to(Device::cpu()), mlp({x})[0].to(Device::cpu()));
  EXPECT_EQ(f.report().replays, 1);
}

TEST(Compile, ACopyBetweenDevicesRunsEagerly) {
  const Device ref("reference");
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {relu(in[0]).to(ref)};
  };
  CompiledFunction f(fn);
  f({randn_of({3}, 80)});
  f({randn_of({3}, 81)});
  const CompileReport r = f.report();
  EXPECT_EQ(r.replays, 0);
  EXPECT_NE(r.eager_reason.find("another device"), std::string::npos) << r.eager_reason;
}

}  // namespace
}  // namespace ember
