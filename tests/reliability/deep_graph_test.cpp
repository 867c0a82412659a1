// Deep and wide autograd graphs: backward, grad(), anomaly mode, double backward and plain
// destruction of a million-op chain without recursion on its depth (Note [Freeing deep graphs]).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include <ember/ember.h>

namespace ember {
namespace {

double at(const Tensor& t, int64_t i) {
  return t.to(DType::Float64).contiguous().reshape({-1}).narrow(0, i, 1).item();
}

// Note [Deep graphs]
// A graph as deep as a long recurrent unroll or iterative solver (a million nodes in a chain)
// must run backward, grad() and plain destruction without recursion on its depth: with the
// default 8 MiB stack, recursion fails near 40,000 nodes. kDeepOps counts recorded ops. Under
// the sanitizers (whose frames are larger, so recursion fails sooner) a quarter of a million
// still proves it six times over, at a quarter of the sanitized run's time. Whether the process
// runs under a sanitizer is asked at run time: this file is compiled the same for every pass
// (Note [Test objects shared with the sanitizer pass] in tests/CMakeLists.txt), and the
// sanitizers' runtimes define these entry points.
extern "C" void __asan_init() __attribute__((weak));
extern "C" void __tsan_init() __attribute__((weak));
const int64_t kDeepOps = (__asan_init != nullptr || __tsan_init != nullptr) ? 250'000 : 1'000'000;

// y = (((x * 1) + 0) * 1) + 0 ...: `ops` recorded ops, the gradient of sum(y) is 1.
Tensor deep_chain(const Tensor& x, int64_t ops = kDeepOps) {
  Tensor y = x;
  for (int64_t i = 0; i < ops / 2; ++i) y = add(mul(y, 1.0), 0.0);
  return y;
}

TEST(DeepGraph, BackwardThroughAMillionOps) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, DType::Float64).requires_grad_(true);
  Tensor y = deep_chain(x);
  sum(y).backward();
  ASSERT_TRUE(x.grad().defined());
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(at(x.grad(), i), 1.0);
  EXPECT_DOUBLE_EQ(at(y, 3), 4.0);
}

TEST(DeepGraph, GradThroughAMillionOps) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, DType::Float64).requires_grad_(true);
  std::vector<Tensor> g = autograd::grad({sum(deep_chain(x))}, {x});
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(at(g[0], i), 1.0);
  EXPECT_FALSE(x.grad().defined());
}

TEST(DeepGraph, DroppingAMillionOpGraphWithoutBackward) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, DType::Float64).requires_grad_(true);
  std::weak_ptr<autograd::Node> first;
  {
    Tensor y = deep_chain(x);
    ASSERT_NE(y.grad_fn(), nullptr);
    first = y.grad_fn();
  }
  EXPECT_TRUE(first.expired());  // the whole chain was freed, not leaked
  // and a retained graph is freed after its last backward
  Tensor y = deep_chain(x, 100'000);
  sum(y).backward({}, /*retain_graph=*/true);
  sum(y).backward();
  EXPECT_DOUBLE_EQ(at(x.grad(), 0), 2.0);
}

TEST(DeepGraph, AnomalyModeOnADeepGraph) {
  Tensor x = tensor({1.0, 2.0}, DType::Float64).requires_grad_(true);
  Tensor y = x;
  for (int i = 0; i < 100'000; ++i) y = add(mul(y, 1.0), 0.0);
  autograd::DetectAnomalyGuard anomaly;
  std::vector<Tensor> g = autograd::grad({sum(y)}, {x});
  EXPECT_DOUBLE_EQ(at(g[0], 1), 1.0);
}

TEST(DeepGraph, SecondDerivativeThroughADeepGraph) {
  // y = x^(n+1) at x = 1: dy/dx = n + 1, d2y/dx2 = n (n + 1), all exact in float64.
  constexpr int64_t n = 100'000;
  Tensor x = tensor({1.0}, DType::Float64).requires_grad_(true);
  Tensor y = x;
  for (int64_t i = 0; i < n; ++i) y = mul(y, x);
  Tensor dy = autograd::grad({y}, {x}, {}, true, /*create_graph=*/true)[0];
  EXPECT_DOUBLE_EQ(at(dy, 0), static_cast<double>(n + 1));
  Tensor d2y = autograd::grad({dy}, {x})[0];
  EXPECT_DOUBLE_EQ(at(d2y, 0), static_cast<double>(n) * static_cast<double>(n + 1));
}

TEST(DeepGraph, WideGraphWithCreateGraph) {
  // 100,000 branches from one leaf summed: d/dx sum_i (x * x) = 2 x per branch.
  constexpr int64_t n = 100'000;
  Tensor x = tensor({0.5}, DType::Float64).requires_grad_(true);
  std::vector<Tensor> branches;
  branches.reserve(n);
  for (int64_t i = 0; i < n; ++i) branches.push_back(mul(x, x));
  Tensor y = sum(stack(branches, 0));
  Tensor dy = autograd::grad({y}, {x}, {}, true, /*create_graph=*/true)[0];
  EXPECT_DOUBLE_EQ(at(dy, 0), static_cast<double>(n));
  Tensor d2y = autograd::grad({dy}, {x})[0];
  EXPECT_DOUBLE_EQ(at(d2y, 0), 2.0 * static_cast<double>(n));
}

}  // namespace
}  // namespace ember
