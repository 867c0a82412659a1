// The backward engine: graph shapes, retain_graph, grad(), hooks, custom functions, guards,
// version checks, anomaly mode and concurrent backward passes.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "tests/core/autograd/gradcheck_cases.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

double at(const Tensor& t, int64_t i) {
  return t.to(DType::Float64).contiguous().reshape({-1}).narrow(0, i, 1).item();
}

TEST(Engine, DiamondSumsBothPaths) {
  // y = a*x + b*x where a = x^2, b = 3x: dy/dx = 3x^2 + 6x
  Tensor x = tensor({2.0}, DType::Float64).requires_grad_(true);
  Tensor a = mul(x, x), b = mul(x, 3.0);
  Tensor y = add(mul(a, x), mul(b, x));
  y.backward();
  EXPECT_DOUBLE_EQ(at(x.grad(), 0), 3 * 4 + 6 * 2);
}

TEST(Engine, ReusedTensorAccumulatesAcrossBackwards) {
  Tensor x = tensor({1.0, 2.0}, DType::Float64).requires_grad_(true);
  sum(mul(x, 2.0)).backward();
  sum(mul(x, 3.0)).backward();
  EXPECT_DOUBLE_EQ(at(x.grad(), 0), 5.0);
  EXPECT_DOUBLE_EQ(at(x.grad(), 1), 5.0);
}

TEST(Engine, SecondBackwardNeedsRetainGraph) {
  Tensor x = tensor({3.0}, DType::Float64).requires_grad_(true);
  Tensor y = exp(x);
  y.backward({}, /*retain_graph=*/true);
  y.backward({}, /*retain_graph=*/true);
  EXPECT_NEAR(at(x.grad(), 0), 2 * std::exp(3.0), 1e-9);
  y.backward();
  const std::string msg = error_of([&] { y.backward(); });
  EXPECT_NE(msg.find("a second time"), std::string::npos) << msg;
  EXPECT_NE(msg.find("retain_graph=true"), std::string::npos) << msg;
}

TEST(Engine, GradOfASubsetRunsOnlyWhatIsNeededAndDoesNotAccumulate) {
  Tensor x = tensor({1.0, 2.0}, DType::Float64).requires_grad_(true);
  Tensor w = tensor({3.0, 4.0}, DType::Float64).requires_grad_(true);
  int hook_calls = 0;
  w.register_hook([&](const Tensor& g) {
    ++hook_calls;
    return g;
  });
  Tensor y = sum(mul(x, w));
  std::vector<Tensor> g = autograd::grad({y}, {x});
  EXPECT_DOUBLE_EQ(at(g[0], 0), 3.0);
  EXPECT_DOUBLE_EQ(at(g[0], 1), 4.0);
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  EXPECT_EQ(hook_calls, 0);  // w's branch never ran
}

TEST(Engine, GradOfUnusedInputIsAnErrorUnlessAllowed) {
  Tensor x = tensor({1.0}, DType::Float64).requires_grad_(true);
  Tensor z = tensor({1.0}, DType::Float64).requires_grad_(true);
  Tensor y = mul(x, 2.0);
  EXPECT_NE(error_of([&] { autograd::grad({y}, {z}, {}, true); }).find("not have been used"),
            std::string::npos);
  std::vector<Tensor> g = autograd::grad({y}, {x, z}, {}, true, false, /*allow_unused=*/true);
  EXPECT_TRUE(g[0].defined());
  EXPECT_FALSE(g[1].defined());
}

TEST(Engine, CreateGraphGivesSecondDerivatives) {
  Tensor x = tensor({0.5}, DType::Float64).requires_grad_(true);
  Tensor y = mul(mul(x, x), x);  // x^3
  Tensor dy = autograd::grad({y}, {x}, {}, true, /*create_graph=*/true)[0];
  EXPECT_DOUBLE_EQ(at(dy, 0), 3 * 0.25);
  Tensor d2y = autograd::grad({dy}, {x})[0];
  EXPECT_DOUBLE_EQ(at(d2y, 0), 6 * 0.5);
  // and through a saved output: d^2/dx^2 tanh = -2 tanh (1 - tanh^2)
  Tensor t = tanh(x);
  Tensor dt = autograd::grad({t}, {x}, {}, true, true)[0];
  Tensor d2t = autograd::grad({dt}, {x})[0];
  const double th = std::tanh(0.5);
  EXPECT_NEAR(at(d2t, 0), -2 * th * (1 - th * th), 1e-12);
}

TEST(Engine, NonScalarBackwardNeedsAGradient) {
  Tensor x = ones({3}).requires_grad_(true);
  Tensor y = mul(x, 2.0);
  EXPECT_NE(error_of([&] { y.backward(); }).find("only for scalar outputs"), std::string::npos);
  y.backward(tensor({1.0, 10.0, 100.0}));
  EXPECT_FLOAT_EQ(x.grad().data_ptr<float>()[2], 200.0f);
}

TEST(Engine, HooksCanReplaceGradients) {
  Tensor x = tensor({1.0, 2.0}, DType::Float64).requires_grad_(true);
  Tensor y = mul(x, 3.0);
  y.register_hook([](const Tensor& g) { return mul(g, 10.0); });
  y.retain_grad();
  sum(y).backward();
  EXPECT_DOUBLE_EQ(at(x.grad(), 0), 30.0);
  ASSERT_TRUE(y.grad().defined());
}

TEST(Engine, NoGradAndInferenceModeRecordNothing) {
  Tensor x = ones({2}).requires_grad_(true);
  {
    autograd::NoGradGuard guard;
    Tensor y = mul(x, 2.0);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_FALSE(autograd::is_grad_enabled());
  }
  {
    autograd::InferenceMode guard;
    EXPECT_TRUE(autograd::is_inference_mode());
    EXPECT_FALSE(mul(x, 2.0).requires_grad());
  }
  EXPECT_TRUE(autograd::is_grad_enabled());
  EXPECT_TRUE(mul(x, 2.0).requires_grad());
  EXPECT_FALSE(mul(x, 2.0).detach().requires_grad());
}

TEST(Engine, TensorsMadeInInferenceModeAreInferenceTensorsWithoutVersions) {
  Tensor normal = ones({4}, DType::Float64);
  Tensor made, view;
  {
    autograd::InferenceMode guard;
    made = mul(normal, 3.0);
    view = made.slice(0, 1, 3);
    EXPECT_TRUE(made.is_inference());
    EXPECT_TRUE(view.is_inference());
    EXPECT_FALSE(normal.is_inference());
    EXPECT_FALSE(normal.slice(0, 0, 2).is_inference()) << "a view of a normal tensor stays normal";
    add_(made, 1.0);  // in-place inside inference mode: allowed, and no version is kept
    EXPECT_EQ(made.version(), 0u);
    add_(normal, 1.0);  // a normal tensor keeps counting inside inference mode
    EXPECT_EQ(normal.version(), 1u);
  }
  {
    autograd::InferenceMode off(false);
    EXPECT_FALSE(autograd::is_inference_mode());
    EXPECT_TRUE(autograd::is_grad_enabled());
    EXPECT_FALSE(zeros({1}).is_inference());
  }
  EXPECT_FALSE(autograd::is_inference_mode());
  EXPECT_TRUE(view.is_inference()) << "the flag belongs to the memory, not to the scope";
  EXPECT_FALSE(zeros({1}).is_inference());
  EXPECT_FALSE(made.clone().is_inference()) << "clone() outside inference mode is a normal tensor";
}

TEST(Engine, InferenceTensorsFollowPyTorchsRulesOutsideInferenceMode) {
  Tensor made;
  {
    autograd::InferenceMode guard;
    made = full({3}, 2.0, DType::Float64);
  }
  // Reading without recording is allowed, and gives normal tensors.
  Tensor sum_ = add(made, 1.0);
  EXPECT_FALSE(sum_.is_inference());
  EXPECT_DOUBLE_EQ(at(sum_, 0), 3.0);

  // An in-place write outside inference mode fails before it writes.
  for (const auto& write : std::vector<std::function<void()>>{
           [&] { add_(made, 1.0); }, [&] { made.fill_(7.0); },
           [&] { made.copy_(zeros({3}, DType::Float64)); }, [&] { neg_(made); },
           [&] { made.slice(0, 0, 1).fill_(5.0); }}) {
    const std::string msg = error_of(write);
    EXPECT_NE(msg.find("inference tensor cannot be modified in place"), std::string::npos) << msg;
  }
  for (int64_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(at(made, i), 2.0) << "the data is unchanged";

  // An op that autograd records may not take it; under no_grad the same op is allowed.
  Tensor w = ones({3}, DType::Float64).requires_grad_(true);
  const std::string msg = error_of([&] { (void)mul(made, w); });
  EXPECT_NE(msg.find("[mul] an inference tensor cannot be used in an operation autograd records"),
            std::string::npos)
      << msg;
  {
    autograd::NoGradGuard guard;
    EXPECT_DOUBLE_EQ(at(mul(made, w), 0), 2.0);
  }
  EXPECT_NE(error_of([&] { made.requires_grad_(true); }).find("inference tensor"),
            std::string::npos);

  // A clone is a normal tensor that takes part in autograd.
  Tensor c = made.clone().requires_grad_(true);
  sum(mul(c, w)).backward();
  EXPECT_DOUBLE_EQ(at(c.grad(), 0), 1.0);
  EXPECT_DOUBLE_EQ(at(w.grad(), 0), 2.0);
  Tensor detached = c.detach();
  add_(detached, 1.0);
  EXPECT_EQ(c.version(), 1u);
}

TEST(Engine, ModifyingASavedTensorInPlaceIsReported) {
  Tensor x = tensor({1.0, 2.0}, DType::Float64).requires_grad_(true);
  Tensor a = mul(x, 1.0);
  Tensor y = mul(a, a);  // saves a
  add_(a, 1.0);          // a is now at a newer version
  const std::string msg = error_of([&] { sum(y).backward(); });
  EXPECT_NE(msg.find("modified by an inplace operation"), std::string::npos) << msg;
  EXPECT_NE(msg.find("MulBackward"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'mul'"), std::string::npos) << msg;
}

TEST(Engine, InPlaceOnLeafOrViewOfLeafIsAnError) {
  Tensor x = ones({4}).requires_grad_(true);
  EXPECT_NE(error_of([&] { add_(x, 1.0); }).find("a leaf tensor that requires grad"),
            std::string::npos);
  Tensor v = x.narrow(0, 0, 2);
  EXPECT_NE(error_of([&] { mul_(v, 2.0); }).find("a view of a leaf tensor"), std::string::npos);
  autograd::NoGradGuard guard;
  add_(x, 1.0);  // allowed without recording
  EXPECT_FLOAT_EQ(x.data_ptr<float>()[0], 2.0f);
}

TEST(Engine, InPlaceOnViewOfNonLeafRebasesTheBase) {
  // b = 2x; b[1:3] *= y; loss = sum(b * c)
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, DType::Float64).requires_grad_(true);
  Tensor y = tensor({5.0, 7.0}, DType::Float64).requires_grad_(true);
  Tensor c = tensor({1.0, 10.0, 100.0, 1000.0}, DType::Float64);
  Tensor b = mul(x, 2.0);
  Tensor v = b.narrow(0, 1, 2);
  mul_(v, y);
  sum(mul(b, c)).backward();
  // d/dx: 2*c, times y inside the window
  EXPECT_DOUBLE_EQ(at(x.grad(), 0), 2.0);
  EXPECT_DOUBLE_EQ(at(x.grad(), 1), 2 * 10.0 * 5.0);
  EXPECT_DOUBLE_EQ(at(x.grad(), 2), 2 * 100.0 * 7.0);
  EXPECT_DOUBLE_EQ(at(x.grad(), 3), 2000.0);
  // d/dy: c * (2x) in the window
  EXPECT_DOUBLE_EQ(at(y.grad(), 0), 10.0 * 4.0);
  EXPECT_DOUBLE_EQ(at(y.grad(), 1), 100.0 * 6.0);
}

struct Cube : autograd::Function<Cube> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, double scale) {
    ctx->save_for_backward({x});
    ctx->saved_data["scale"] = scale;
    return mul(mul(mul(x, x), x), scale);
  }
  static std::vector<Tensor> backward(autograd::AutogradContext* ctx, std::vector<Tensor> g) {
    const Tensor x = ctx->get_saved_variables()[0];
    return {mul(mul(g[0], mul(x, x)), 3.0 * ctx->saved_data["scale"])};
  }
};

TEST(Engine, CustomFunctionRecordsItsBackward) {
  Tensor x = tensor({1.0, 2.0}, DType::Float64).requires_grad_(true);
  Tensor y = Cube::apply(x, 2.0);
  EXPECT_DOUBLE_EQ(at(y, 1), 16.0);
  sum(y).backward();
  EXPECT_DOUBLE_EQ(at(x.grad(), 1), 24.0);
  autograd::GradcheckResult r = autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return Cube::apply(in[0], 0.5); }, {input({3}, 40)});
  EXPECT_TRUE(r.ok) << r.message;
}

struct SortedIndex : autograd::Function<SortedIndex> {
  static std::vector<Tensor> forward(autograd::AutogradContext* ctx, const Tensor& x) {
    Tensor idx = arange(x.size(0));
    ctx->mark_non_differentiable({idx});
    return {mul(x, 2.0), idx};
  }
  static std::vector<Tensor> backward(autograd::AutogradContext*, std::vector<Tensor> g) {
    return {mul(g[0], 2.0)};
  }
};

TEST(Engine, CustomFunctionNonDifferentiableOutputs) {
  Tensor x = ones({3}, DType::Float64).requires_grad_(true);
  std::vector<Tensor> out = SortedIndex::apply(x);
  EXPECT_TRUE(out[0].requires_grad());
  EXPECT_FALSE(out[1].requires_grad());
  sum(out[0]).backward();
  EXPECT_DOUBLE_EQ(at(x.grad(), 0), 2.0);
}

// A custom backward that returns its gradient in another dtype, or in another shape.
struct Twice : autograd::Function<Twice> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, double mode) {
    ctx->saved_data["mode"] = mode;
    return mul(x, 2.0);
  }
  static std::vector<Tensor> backward(autograd::AutogradContext* ctx, std::vector<Tensor> g) {
    const int mode = static_cast<int>(ctx->saved_data["mode"]);
    const Tensor d = mul(g[0].to(DType::Float64), 2.0);
    if (mode == 1) return {d.unsqueeze(0).expand({3, d.size(0)})};  // broadcast: summed down
    if (mode == 2) return {cat({d, d}, 0)};                         // not broadcastable
    return {d};
  }
};

TEST(Engine, GradientsOfAnotherDtypeAreConvertedToTheInputs) {
  // Before: x.grad became float64 because the custom backward returned float64.
  Tensor x = tensor({1.0, 2.0}).requires_grad_(true);  // float32
  sum(Twice::apply(x, 0.0)).backward();
  EXPECT_EQ(x.grad().dtype(), DType::Float32);
  EXPECT_DOUBLE_EQ(at(x.grad(), 0), 2.0);
  // In the middle of a graph: the next node gets float32 too.
  Tensor w = tensor({3.0, 4.0}).requires_grad_(true);
  Tensor h = mul(w, 1.0);
  sum(mul(Twice::apply(h, 0.0), h)).backward();
  EXPECT_EQ(w.grad().dtype(), DType::Float32);
  EXPECT_DOUBLE_EQ(at(w.grad(), 1), 4.0 * 4.0);  // d/dw 2 w^2
  // A root gradient of another dtype.
  Tensor y = mul(x, 3.0);
  x.mutable_grad() = Tensor();
  y.backward(tensor({1.0, 1.0}, DType::Float64));
  EXPECT_EQ(x.grad().dtype(), DType::Float32);
  EXPECT_DOUBLE_EQ(at(x.grad(), 1), 3.0);
}

TEST(Engine, GradientsOfAnotherShapeAreSummedOrRefused) {
  Tensor x = tensor({1.0, 2.0}, DType::Float64).requires_grad_(true);
  sum(Twice::apply(x, 1.0)).backward();  // [3, 2] for [2]: summed, as PyTorch does
  EXPECT_EQ(x.grad().sizes(), Shape({2}));
  EXPECT_DOUBLE_EQ(at(x.grad(), 0), 6.0);
  const std::string msg = error_of([&] { sum(Twice::apply(x, 2.0)).backward(); });
  EXPECT_NE(msg.find("returned an invalid gradient at index 0: got shape [4] but expected shape "
                     "compatible with [2]"),
            std::string::npos)
      << msg;
}

TEST(Engine, HooksMayNotChangeTheGradientsTypeOrShape) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_(true);
  Tensor y = mul(x, 2.0);
  y.register_hook([](const Tensor& g) { return g.to(DType::Float64); });
  EXPECT_NE(
      error_of([&] { sum(y).backward(); }).find("a gradient hook changed the gradient's type"),
      std::string::npos);
  Tensor z = tensor({1.0, 2.0}).requires_grad_(true);
  z.register_hook([](const Tensor& g) { return cat({g, g}, 0); });
  EXPECT_NE(error_of([&] {
              sum(mul(z, 2.0)).backward();
            }).find("a gradient hook changed the gradient's shape: was [2], got [4]"),
            std::string::npos);
  EXPECT_FALSE(z.grad().defined());
}

TEST(Engine, AccumulateGradStoresInTheLeafsCurrentDtype) {
  // A graph recorded before the leaf was converted (Tensor::set_data) still accumulates into a
  // .grad of the leaf's new dtype.
  Tensor x = tensor({1.0, 2.0}).requires_grad_(true);
  Tensor y = sum(mul(x, 2.0));
  x.set_data(x.detach().to(DType::Float64));
  EXPECT_EQ(x.dtype(), DType::Float64);
  y.backward();
  EXPECT_EQ(x.grad().dtype(), DType::Float64);
  EXPECT_DOUBLE_EQ(at(x.grad(), 0), 2.0);
  sum(mul(x, 3.0)).backward();  // a new graph: float64 throughout
  EXPECT_EQ(x.grad().dtype(), DType::Float64);
  EXPECT_DOUBLE_EQ(at(x.grad(), 1), 5.0);
}

TEST(Engine, ACustomFunctionReturningItsInputLeavesTheInputALeaf) {
  struct Same : autograd::Function<Same> {
    static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x; }
    static std::vector<Tensor> backward(autograd::AutogradContext*, std::vector<Tensor> g) {
      return {mul(g[0], 2.0)};
    }
  };
  Tensor x = ones({2}).requires_grad_(true);
  Tensor y = Same::apply(x);
  EXPECT_FALSE(y.is_same(x));
  EXPECT_TRUE(x.is_leaf());
  sum(y).backward();
  EXPECT_DOUBLE_EQ(at(x.grad(), 0), 2.0);
}

TEST(Engine, AnomalyModeNamesTheForwardOp) {
  Tensor x = tensor({0.0, 1.0}, DType::Float64).requires_grad_(true);
  Tensor y = sum(sqrt(x));  // d sqrt at 0 is inf
  autograd::DetectAnomalyGuard anomaly;
  const std::string msg = error_of([&] { y.backward(); });
  EXPECT_NE(msg.find("SqrtBackward"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'sqrt'"), std::string::npos) << msg;
}

TEST(Engine, IndependentBackwardsFromEightThreads) {
  std::vector<double> results(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &results] {
      Tensor x = full({16}, static_cast<double>(t + 1), DType::Float64).requires_grad_(true);
      Tensor y = x;
      for (int i = 0; i < 50; ++i) y = tanh(mul(y, 0.9));
      sum(y).backward();
      results[t] = at(x.grad(), 0);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) {
    Tensor x = full({16}, static_cast<double>(t + 1), DType::Float64).requires_grad_(true);
    Tensor y = x;
    for (int i = 0; i < 50; ++i) y = tanh(mul(y, 0.9));
    sum(y).backward();
    EXPECT_EQ(results[t], at(x.grad(), 0)) << "thread " << t;
  }
}

TEST(Engine, RequiresGradOnlyForFloatingLeaves) {
  EXPECT_NE(error_of([] { arange(3).requires_grad_(true); }).find("floating point"),
            std::string::npos);
  Tensor x = ones({2}).requires_grad_(true);
  Tensor y = mul(x, 2.0);
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(x.is_leaf());
  EXPECT_NE(error_of([&] { y.requires_grad_(false); }).find("leaf"), std::string::npos);
}

}  // namespace
}  // namespace ember::testing

namespace ember::testing {
namespace {

TEST(Engine, LeafGradIsDenseEvenWhenBackwardExpands) {
  Tensor x = ones({2, 3}).requires_grad_(true);
  sum(x).backward();  // sum's backward expands a 0-d gradient
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(x.grad().is_contiguous());
  Tensor g = x.grad();
  mul_(g, 2.0);  // an optimizer-style in-place update touches each element once
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(x.grad().data_ptr<float>()[i], 2.0f);
}

}  // namespace
}  // namespace ember::testing
