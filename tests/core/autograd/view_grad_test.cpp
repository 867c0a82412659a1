// Views and in-place ops (core/autograd/record.cpp): a view follows its base's history when the
// base, or another view of it, is modified in place; an in-place op on a view rewrites its
// base's history (CopySlices), whatever the base's layout; double backward through both.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/core/autograd/gradcheck_cases.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

using V = std::vector<Tensor>;

Tensor f64(NestedList<double> data) {
  return tensor(data, DType::Float64);
}

TEST(ViewGrad, ViewSeesItsBaseModifiedInPlace) {
  // y = x * 1; v = y[:2]; y *= 2; sum(v) = 2 (x0 + x1)
  Tensor x = f64({1.0, 2.0, 3.0}).requires_grad_(true);
  Tensor y = mul(x, 1.0);
  Tensor v = y.slice(0, 0, 2);
  mul_(y, 2.0);
  ASSERT_NE(v.grad_fn(), nullptr);
  EXPECT_EQ(v.grad_fn()->name(), "AsStridedBackward");
  sum(v).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{2, 2, 0}));
}

TEST(ViewGrad, ViewOfATensorThatGainsHistoryRequiresGrad) {
  // y = zeros(2); v = y.view(2); y += 3w: v is 3w and requires grad
  Tensor w = ones({2}, DType::Float64).requires_grad_(true);
  Tensor y = zeros({2}, DType::Float64);
  Tensor v = y.view({2});
  EXPECT_FALSE(v.requires_grad());
  add_(y, mul(w, 3.0));
  EXPECT_TRUE(y.requires_grad());
  EXPECT_TRUE(v.requires_grad());
  ASSERT_NE(v.grad_fn(), nullptr);
  EXPECT_EQ(v.grad_fn()->name(), "AsStridedBackward");
  EXPECT_FALSE(v.is_leaf());
  sum(mul(v, v)).backward();  // sum (3w)^2: d/dw = 18 w
  EXPECT_EQ(values(w.grad()), (std::vector<double>{18, 18}));
}

TEST(ViewGrad, InPlaceOnAViewMakesItsBaseRequireGrad) {
  // y = [1, 2, 3]; y[:2] *= w; loss = sum(y * c): d/dw = c[:2] * y_old[:2]
  Tensor y = f64({1.0, 2.0, 3.0});
  Tensor w = f64({2.0, 3.0}).requires_grad_(true);
  Tensor v = y.narrow(0, 0, 2);
  mul_(v, w);
  EXPECT_TRUE(y.requires_grad());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "CopySlices");
  EXPECT_EQ(values(y), (std::vector<double>{2, 6, 3}));
  sum(mul(y, f64({10.0, 100.0, 1000.0}))).backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{10, 200}));
}

TEST(ViewGrad, AViewOfAViewFollowsTheFirstBase) {
  // y = x * 1; a = y[1:]; b = a[:2] (y[1:3]); y *= x: b = x[1:3]^2
  Tensor x = f64({1.0, 2.0, 3.0, 4.0}).requires_grad_(true);
  Tensor y = mul(x, 1.0);
  Tensor a = y.narrow(0, 1, 3);
  Tensor b = a.narrow(0, 0, 2);
  EXPECT_TRUE(b.is_view());
  EXPECT_TRUE(b.base().is_same(y));
  mul_(y, x);
  sum(b).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 4, 6, 0}));
}

TEST(ViewGrad, AViewSeesAnotherViewModifiedInPlace) {
  // y = x * 1; a = y[0:3]; b = y[2:4]; a *= 10: b = [10 x2, x3]
  Tensor x = f64({1.0, 2.0, 3.0, 4.0}).requires_grad_(true);
  Tensor y = mul(x, 1.0);
  Tensor a = y.narrow(0, 0, 3);
  Tensor b = y.narrow(0, 2, 2);
  mul_(a, 10.0);
  EXPECT_EQ(values(b), (std::vector<double>{30, 4}));
  sum(b).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0, 10, 1}));
}

TEST(ViewGrad, SlicesOfUnbindFollowAnInPlaceWriteIntoOne) {
  // y = x * 1 (2x2); r0, r1 = unbind(y); r0 *= w; loss = sum(y * c)
  Tensor x = f64({{1.0, 2.0}, {3.0, 4.0}}).requires_grad_(true);
  Tensor w = f64({5.0, 7.0}).requires_grad_(true);
  Tensor y = mul(x, 1.0);
  std::vector<Tensor> rows = unbind(y, 0);
  mul_(rows[0], w);
  Tensor c = f64({{1.0, 10.0}, {100.0, 1000.0}});
  sum(add(sum(mul(y, c)), sum(rows[1]))).backward();
  // d/dx: c * w on row 0, c + 1 on row 1; d/dw: c[0] * x[0]
  EXPECT_EQ(values(x.grad()), (std::vector<double>{5, 70, 101, 1001}));
  EXPECT_EQ(values(w.grad()), (std::vector<double>{1, 20}));
}

TEST(ViewGrad, AChangeUnderNoGradIsNotRecordedButTheViewStillReachesItsBase) {
  Tensor x = f64({1.0, 2.0, 3.0}).requires_grad_(true);
  Tensor y = mul(x, 1.0);
  Tensor v = y.slice(0, 0, 2);
  {
    autograd::NoGradGuard no_grad;
    mul_(y, 2.0);
  }
  sum(v).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 1, 0}));
}

TEST(ViewGrad, InPlaceOnAViewOfANonContiguousBase) {
  // A channels-last base (an op's output, not a view): rebasing used to be refused.
  Tensor x = input({1, 3, 2, 2}, 1);
  Tensor w = input({1, 1, 2, 2}, 2);
  auto fn = [](const V& in) {
    Tensor y = mul(in[0], 2.0).contiguous(MemoryFormat::ChannelsLast);
    EXPECT_FALSE(y.is_contiguous());
    Tensor v = y.narrow(1, 1, 1);
    mul_(v, in[1]);
    return sum(mul(y, y));
  };
  Tensor loss = fn({x, w});
  loss.backward();
  // y = 2x with channel 1 scaled by w: d/dx = 8x (times w^2 on channel 1), d/dw = 8 x1^2 w
  const std::vector<double> xs = values(x), ws = values(w), gx = values(x.grad());
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 4; ++i) {
      const double scale = c == 1 ? ws[i] * ws[i] : 1.0;
      EXPECT_NEAR(gx[c * 4 + i], 8 * xs[c * 4 + i] * scale, 1e-12);
    }
  }
  const std::vector<double> gw = values(w.grad());
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(gw[i], 8 * xs[4 + i] * xs[4 + i] * ws[i], 1e-12);
  auto r = autograd::gradcheck(fn, {input({1, 3, 2, 2}, 1), input({1, 1, 2, 2}, 2)});
  EXPECT_TRUE(r.ok) << r.message;
  r = autograd::gradgradcheck(fn, {input({1, 3, 2, 2}, 1), input({1, 1, 2, 2}, 2)});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(ViewGrad, InPlaceOnAViewOfATransposedBase) {
  // The base is the output of an op that keeps a transposed layout: no contiguous copy exists.
  auto fn = [](const V& in) {
    Tensor y = mul(in[0], 1.0).t().contiguous().t();  // a non-view tensor with strides [1, 3]
    Tensor v = y.select(1, 2);
    mul_(v, in[1]);
    return sum(mul(y, y));
  };
  auto r = autograd::gradcheck(fn, {input({3, 4}, 3), input({3}, 4)});
  EXPECT_TRUE(r.ok) << r.message;
  r = autograd::gradgradcheck(fn, {input({3, 4}, 3), input({3}, 4)});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(ViewGrad, DoubleBackwardThroughViewsOfAModifiedBase) {
  // Several views of one base; the base and one view modified in place; f uses all of them.
  auto fn = [](const V& in) {
    Tensor y = mul(in[0], 1.0);
    Tensor top = y.narrow(0, 0, 2);
    Tensor col = y.select(1, 1);
    Tensor flat = y.view({-1});
    mul_(top, in[1]);  // y[:2] *= w
    mul_(y, in[0]);    // y *= x
    return add(add(sum(mul(col, col)), sum(mul(flat, in[0].view({-1})))), sum(top));
  };
  auto r = autograd::gradcheck(fn, {input({3, 2}, 5), input({2, 2}, 6)});
  EXPECT_TRUE(r.ok) << r.message;
  r = autograd::gradgradcheck(fn, {input({3, 2}, 5), input({2, 2}, 6)});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(ViewGrad, ARegeneratedViewBackwardSumsOverlappingPlaces) {
  // An expanded view follows its base: each base element's gradient counts every copy.
  Tensor x = f64({1.0, 2.0}).requires_grad_(true);
  Tensor y = mul(x, 1.0);
  Tensor e = y.unsqueeze(0).expand({3, 2});
  mul_(y, 2.0);
  sum(e).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{6, 6}));
  auto fn = [](const V& in) {
    Tensor y = mul(in[0], 1.0);
    Tensor e = y.unsqueeze(0).expand({3, 2});
    mul_(y, in[0]);
    return sum(mul(e, e));
  };
  auto r = autograd::gradgradcheck(fn, {input({2}, 7)});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(ViewGrad, AViewMadeUnderNoGradIsNotRebased) {
  Tensor x = f64({1.0, 2.0, 3.0}).requires_grad_(true);
  Tensor y = mul(x, 1.0);
  Tensor v;
  {
    autograd::NoGradGuard no_grad;
    v = y.narrow(0, 0, 2);
  }
  // In place on it with grad mode on: ambiguous, refused before anything is written.
  const std::string direct = error_of([&] { mul_(v, x.narrow(0, 0, 2)); });
  EXPECT_NE(direct.find("[mul_] a view made under no_grad is being modified in place"),
            std::string::npos)
      << direct;
  EXPECT_EQ(values(y), (std::vector<double>{1, 2, 3}));
  // Its base changed with grad mode on: using the view is refused.
  mul_(y, 2.0);
  const std::string indirect = error_of([&] { sum(v); });
  EXPECT_NE(indirect.find("a view made under no_grad is used after its base"), std::string::npos)
      << indirect;
  // Both inside no_grad: fine.
  Tensor z = mul(x, 1.0);
  {
    autograd::NoGradGuard no_grad;
    Tensor u = z.narrow(0, 0, 2);
    mul_(u, 2.0);
  }
  EXPECT_EQ(values(z), (std::vector<double>{2, 4, 3}));
}

TEST(ViewGrad, AViewMadeUnderNoGradOfABaseThatGainsHistoryIsRefused) {
  Tensor w = ones({2}, DType::Float64).requires_grad_(true);
  Tensor y = zeros({2}, DType::Float64);
  Tensor v;
  {
    autograd::NoGradGuard no_grad;
    v = y.view({2});
  }
  add_(y, w);
  EXPECT_TRUE(v.requires_grad());
  EXPECT_NE(error_of([&] { v.grad_fn(); }).find("made under no_grad"), std::string::npos);
}

TEST(ViewGrad, InPlaceOnAnOverlappingViewIsRefused) {
  Tensor x = f64({1.0, 2.0}).requires_grad_(true);
  Tensor y = mul(x, 1.0);
  Tensor e = y.unsqueeze(0).expand({3, 2});
  const std::string msg = error_of([&] { mul_(e, x); });
  EXPECT_NE(msg.find("overlap"), std::string::npos) << msg;
  EXPECT_EQ(values(y), (std::vector<double>{1, 2}));
}

TEST(ViewGrad, RetainedGradientMovesToTheNewHistory) {
  Tensor x = f64({1.0, 2.0}).requires_grad_(true);
  Tensor y = mul(x, 1.0);
  y.retain_grad();
  mul_(y, 3.0);
  sum(mul(y, y)).backward();
  // d loss / d y (the new y = 3x) = 2 y
  EXPECT_EQ(values(y.grad()), (std::vector<double>{6, 12}));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{18, 36}));
}

TEST(ViewGrad, WhatIsAView) {
  Tensor i = arange(6).view({2, 3});
  EXPECT_FALSE(i.is_view());  // integer views are not tracked
  Tensor f = zeros({2, 3});
  EXPECT_TRUE(f.view({3, 2}).is_view());
  EXPECT_TRUE(f.view({3, 2}).base().is_same(f));
  EXPECT_TRUE(f.t().t().base().is_same(f));    // the first base of a chain
  EXPECT_FALSE(f.t().reshape({6}).is_view());  // reshape had to copy
  EXPECT_FALSE(f.detach().is_view());
  Tensor x = f64({1.0, 2.0}).requires_grad_(true);
  EXPECT_FALSE(mul(x.view({2}), 1.0).is_view());  // an op's output is not a view
}

TEST(ViewGrad, AsStridedOfATransposedInputHasADoubleBackward) {
  // as_strided's backward used to need a contiguous input and be first order only.
  auto fn = [](const V& in) {
    Tensor t = in[0].t();  // strides [1, 3]
    return sum(square(t.as_strided({2, 2}, {1, 3}, t.storage_offset() + 1)));
  };
  auto r = autograd::gradcheck(fn, {input({2, 3}, 8)});
  EXPECT_TRUE(r.ok) << r.message;
  r = autograd::gradgradcheck(fn, {input({2, 3}, 8)});
  EXPECT_TRUE(r.ok) << r.message;
}

}  // namespace
}  // namespace ember::testing
