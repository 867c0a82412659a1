#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

using testing::expect_error;
using testing::make;
using testing::values;

std::vector<double> iota(int64_t n, double start = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + static_cast<double>(i);
  return v;
}

constexpr DType kAllDTypes[] = {f32, f64, f16, bf16, i64, i32, i8, u8, boolean};

// ---- Tensor basics ----------------------------------------------------------------------------

TEST(Tensor, ZerosHasSizesStridesAndDtype) {
  Tensor t = zeros({2, 3});
  EXPECT_EQ(t.dim(), 2);
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_EQ(t.strides(), Shape({3, 1}));
  EXPECT_TRUE(t.is_contiguous());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data_ptr<float>()[i], 0.0f);
}

TEST(Tensor, TransposeIsAViewAndContiguousCopies) {
  Tensor t = arange(6).reshape({2, 3});
  Tensor tt = t.t();
  EXPECT_TRUE(tt.is_same_storage(t));
  EXPECT_FALSE(tt.is_contiguous());
  Tensor c = tt.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  const int64_t expected[] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c.data_ptr<int64_t>()[i], expected[i]);
}

TEST(Tensor, DataPtrChecksTheDtype) {
  Tensor t = zeros({2}, i32);
  EXPECT_NO_THROW(t.data_ptr<int32_t>());
  expect_error([&] { t.data_ptr<float>(); }, {"[data_ptr]", "float32", "int32"});
}

TEST(Tensor, ToConvertsBetweenAllDtypes) {
  const std::vector<double> src = {0, 1, 2, 5, 100, 0};
  for (DType from : kAllDTypes) {
    Tensor a = make(src, {2, 3}, from);
    const std::vector<double> in = values(a);  // bool source holds 0/1
    for (DType to : kAllDTypes) {
      SCOPED_TRACE(fmt::format("{} -> {}", from, to));
      Tensor b = a.to(to);
      EXPECT_EQ(b.dtype(), to);
      EXPECT_EQ(b.sizes(), Shape({2, 3}));
      if (from == to)
        EXPECT_TRUE(b.is_same(a));
      else
        EXPECT_FALSE(b.is_same_storage(a));
      const std::vector<double> out = values(b);
      for (size_t i = 0; i < in.size(); ++i) {
        EXPECT_EQ(out[i], to == boolean ? (in[i] != 0 ? 1.0 : 0.0) : in[i]) << i;
      }
    }
  }
}

TEST(Tensor, ToIntegerTruncatesTowardZero) {
  Tensor x = make({1.7, -1.7, 2.5, -0.5, 99.99, -100.2}, {6}, f64);
  for (DType d : {i64, i32, i8}) {
    EXPECT_EQ(values(x.to(d)), (std::vector<double>{1, -1, 2, 0, 99, -100}))
        << fmt::format("{}", d);
  }
  EXPECT_EQ(values(make({1.7, 200.9, 0.2}, {3}, f32).to(u8)), (std::vector<double>{1, 200, 0}));
}

TEST(Tensor, ToBoolIsNonZero) {
  Tensor x = make({0.0, -0.0, 0.1, -3.0, 1e-50}, {5}, f64);
  EXPECT_EQ(values(x.to(boolean)), (std::vector<double>{0, 0, 1, 1, 1}));
  EXPECT_EQ(values(x.to(f32).to(boolean)), (std::vector<double>{0, 0, 1, 1, 0}));  // 1e-50f is 0
  EXPECT_EQ(values(make({0, 7, -1, 0}, {4}, i64).to(boolean)), (std::vector<double>{0, 1, 1, 0}));
  EXPECT_EQ(values(make({0, 1, 0}, {3}, boolean).to(f32)), (std::vector<double>{0, 1, 0}));
}

// Round-to-nearest-even of a float to a format with `mant` explicit mantissa bits, minimum
// normal exponent `emin` and largest finite value `max`: the reference for float16/bfloat16.
double round_to_format(float v, int mant, int emin, double max) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  const double a = std::fabs(static_cast<double>(v));
  int e = std::ilogb(a);
  if (e < emin) e = emin;
  const double quantum = std::ldexp(1.0, e - mant);
  double r = std::nearbyint(a / quantum) * quantum;  // exact in double; ties to even
  if (r > max) r = INFINITY;
  return std::copysign(r, static_cast<double>(v));
}

TEST(Tensor, HalfTypesRoundTripRepresentableValues) {
  const std::vector<double> f16_exact = {0,      1,       -2,      0.5,         1025,          2048,
                                         -65504, 0x1p-14, 0x1p-24, 3 * 0x1p-24, 0.099853515625};
  EXPECT_EQ(values(make(f16_exact, {11}, f64).to(f16).to(f64)), f16_exact);
  EXPECT_EQ(values(make(f16_exact, {11}, f32).to(f16).to(f32)), f16_exact);
  const std::vector<double> bf16_exact = {0,       1,         -2,       0.5,     257 - 1,
                                          0x1p127, -0x1p-126, 0x1p-133, 3.140625};
  EXPECT_EQ(values(make(bf16_exact, {9}, f64).to(bf16).to(f64)), bf16_exact);
  EXPECT_EQ(values(make(bf16_exact, {9}, f32).to(bf16)), bf16_exact);
  // Between the half types: values both can hold survive.
  const std::vector<double> both = {0, 1, -2, 0.5, 3.5, 96, -0.125};
  EXPECT_EQ(values(make(both, {7}, f16).to(bf16).to(f16)), both);
}

TEST(Tensor, HalfTypesRoundToNearestEven) {
  std::mt19937 rng(123);
  std::vector<double> src;
  // Random floats over many binades, both signs, plus exact ties and overflow boundaries.
  for (int i = 0; i < 4000; ++i) {
    const float mant = std::uniform_real_distribution<float>(1.0f, 2.0f)(rng);
    const int e = std::uniform_int_distribution<int>(-30, 20)(rng);
    src.push_back((i & 1 ? -1.0 : 1.0) * std::ldexp(static_cast<double>(mant), e));
  }
  for (double tie :
       {1.0 + 0x1p-11, 1.0 + 3 * 0x1p-11, 1.0 + 0x1p-8, 1.0 + 3 * 0x1p-8, 65504.0, 65519.0, 65520.0,
        70000.0, 0x1p-25, 3 * 0x1p-25, 0x1p-26, 1e-40, 3.0e38, 3.4e38, 0.1, -0.3}) {
    src.push_back(tie);
  }
  Tensor x = make(src, {static_cast<int64_t>(src.size())}, f32);
  const std::vector<double> xf = values(x);  // the float32 inputs exactly
  const std::vector<double> h = values(x.to(f16)), b = values(x.to(bf16));
  for (size_t i = 0; i < xf.size(); ++i) {
    const float v = static_cast<float>(xf[i]);
    EXPECT_EQ(h[i], round_to_format(v, 10, -14, 65504.0)) << "f16 of " << v;
    EXPECT_EQ(b[i], round_to_format(v, 7, -126, 0x1.fep127)) << "bf16 of " << v;
  }
}

TEST(Tensor, CloneAndContiguousOfNonContiguousInputs) {
  Tensor base = make(iota(24), {4, 6}, f32);
  struct Case {
    const char* name;
    Tensor view;
  };
  const Case cases[] = {
      {"transpose", base.t()},
      {"slice step", base.slice(1, 1, 6, 2)},
      {"select column", base.select(1, 3)},
      {"expand", base.select(0, 1).unsqueeze(0).expand({3, 6})},
      {"permute 3d", base.reshape({2, 3, 4}).permute({2, 0, 1})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<double> expect = values(c.view);
    Tensor cl = c.view.clone();
    EXPECT_TRUE(cl.is_contiguous());
    EXPECT_FALSE(cl.is_same_storage(base));
    EXPECT_EQ(cl.sizes(), c.view.sizes());
    EXPECT_EQ(values(cl), expect);
    Tensor co = c.view.contiguous();
    EXPECT_TRUE(co.is_contiguous());
    EXPECT_EQ(values(co), expect);
    // Converting a non-contiguous view reads it through its strides too.
    EXPECT_EQ(values(c.view.to(f64)), expect);
  }
  EXPECT_TRUE(base.contiguous().is_same(base));
  Tensor cl = base.clone();
  cl.fill_(0);
  EXPECT_EQ(values(base), iota(24));  // a clone does not alias
}

TEST(Tensor, ZeroSizeTensorsCopyAndConvert) {
  Tensor z = zeros({0, 3});
  EXPECT_EQ(z.numel(), 0);
  EXPECT_EQ(z.clone().sizes(), Shape({0, 3}));
  EXPECT_EQ(z.t().contiguous().sizes(), Shape({3, 0}));
  EXPECT_EQ(z.to(i64).dtype(), i64);
  z.fill_(3);
  Tensor y = empty({0, 3});
  y.copy_(z);
  EXPECT_EQ(y.numel(), 0);
}

TEST(Tensor, ItemReadsOneElement) {
  EXPECT_EQ(make({3.5}, {1, 1}, f32).item(), 3.5);
  EXPECT_EQ(full({}, 7, i64).item<int64_t>(), 7);
  EXPECT_EQ(full({}, true, boolean).item<bool>(), true);
  EXPECT_EQ(make({-2.5}, {}, f16).item(), -2.5);
  EXPECT_EQ(make({0, 1, 2, 3}, {2, 2}, f64).select(0, 1).select(0, 1).item(), 3.0);
  expect_error([] { zeros({2, 3}).item(); }, {"[item]", "6 elements", "[2, 3]"});
  expect_error([] { zeros({0}).item(); }, {"[item]", "0 elements"});
}

TEST(Tensor, CopyBroadcastsAndConverts) {
  Tensor dst = zeros({2, 3}, f64);
  const uint32_t v0 = dst.version();
  dst.copy_(make({1, 2, 3}, {3}, i64));
  EXPECT_EQ(values(dst), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  EXPECT_GT(dst.version(), v0);
  dst.t().copy_(make({1, 2, 3, 4, 5, 6}, {3, 2}, f32));
  EXPECT_EQ(values(dst), (std::vector<double>{1, 3, 5, 2, 4, 6}));
  expect_error([&] { dst.copy_(zeros({4})); }, {"[copy_]", "[4]", "[2, 3]"});
  expect_error([&] { dst.copy_(zeros({2, 2, 3})); }, {"[copy_]"});
}

// ---- Views ------------------------------------------------------------------------------------

TEST(View, ViewAndReshapeInferMinusOne) {
  Tensor t = arange(24);
  Tensor v = t.view({2, -1, 4});
  EXPECT_EQ(v.sizes(), Shape({2, 3, 4}));
  EXPECT_EQ(v.strides(), Shape({12, 4, 1}));
  EXPECT_TRUE(v.is_same_storage(t));
  EXPECT_EQ(v.reshape({-1}).sizes(), Shape({24}));
  EXPECT_EQ(v.reshape({4, -1}).sizes(), Shape({4, 6}));
  EXPECT_TRUE(v.reshape({4, -1}).is_same_storage(t));
  EXPECT_EQ(values(v.view({6, 4}).select(0, 5)), (std::vector<double>{20, 21, 22, 23}));
  expect_error([&] { t.view({-1, -1}); }, {"[view]", "only one dim can be -1"});
  expect_error([&] { t.view({5, 5}); }, {"[view]", "[5, 5]", "invalid for input of size 24"});
  expect_error([&] { t.reshape({5, -1}); }, {"[reshape]", "invalid for input of size 24"});
  expect_error([&] { t.view({-2, 12}); }, {"[view]", "invalid size -2"});
  // Zero-size tensors infer nothing from -1 but accept explicit sizes.
  EXPECT_EQ(zeros({0, 4}).view({4, 0, 2}).sizes(), Shape({4, 0, 2}));
  // 0-d <-> one element.
  EXPECT_EQ(full({}, 5, i64).view({1, 1}).sizes(), Shape({1, 1}));
  EXPECT_EQ(zeros({1}).view({}).dim(), 0);
}

TEST(View, IncompatibleViewSuggestsReshape) {
  Tensor t = arange(6).reshape({2, 3}).t();
  expect_error([&] { t.view({6}); }, {"[view]", "not compatible", "reshape"});
  Tensor r = t.reshape({6});
  EXPECT_FALSE(r.is_same_storage(t));  // had to copy
  EXPECT_EQ(values(r), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  // A transposed view can still be viewed where the merged dims stay contiguous.
  Tensor p = arange(24).reshape({2, 3, 4}).permute({1, 0, 2});  // [3, 2, 4]
  EXPECT_NO_THROW(p.view({3, 2, 2, 2}));
  EXPECT_TRUE(p.view({3, 2, 2, 2}).is_same_storage(p));
  expect_error([&] { p.view({6, 4}); }, {"reshape"});
}

TEST(View, AsAnotherDtypeReadsTheSameBytes) {
  const Tensor f = tensor({1.0, -2.0, 0.5, 0.0});  // float32
  const Tensor i = f.view(DType::Int32);
  EXPECT_TRUE(i.is_same_storage(f));
  for (int64_t k = 0; k < 4; ++k) {
    int32_t bits = 0;
    const float v = f.data_ptr<float>()[k];
    std::memcpy(&bits, &v, sizeof bits);
    EXPECT_EQ(i.data_ptr<int32_t>()[k], bits);
  }
  // Smaller elements: the last dim grows and the other strides scale.
  const Tensor m = arange(6).to(DType::Int32).view({2, 3});
  const Tensor bytes = m.view(DType::UInt8);
  EXPECT_EQ(bytes.sizes(), Shape({2, 12}));
  EXPECT_EQ(bytes.strides(), Shape({12, 1}));
  EXPECT_EQ(values(bytes.select(1, 4)), (std::vector<double>{1, 4}));  // little-endian low bytes
  // Larger elements: back again, and through a slice with an offset.
  EXPECT_EQ(values(bytes.view(DType::Int32)), values(m));
  EXPECT_EQ(values(bytes.narrow(1, 4, 8).view(DType::Int32)), (std::vector<double>{1, 2, 4, 5}));
  // Writing through the view changes the original (one storage, one version counter).
  Tensor w = zeros({2});
  const uint32_t before = w.version();
  w.view(DType::Int32).fill_(1);
  EXPECT_GT(w.version(), before);
  EXPECT_EQ(w.data_ptr<float>()[0], std::numeric_limits<float>::denorm_min());
  EXPECT_FALSE(tensor({1.0}).requires_grad_(true).view(DType::Float32).requires_grad());
  expect_error([&] { m.t().view(DType::UInt8); }, {"[view] self.stride(-1) must be 1"});
  expect_error([&] { bytes.narrow(1, 0, 6).view(DType::Int32); },
               {"[view] self.size(-1) must be divisible by 4"});
  expect_error([&] { bytes.narrow(1, 1, 8).view(DType::Int32); },
               {"[view] self.storage_offset() must be divisible by 4"});
  expect_error([&] { tensor({1.0}).reshape({}).view(DType::Float16); }, {"self.dim() cannot be 0"});
}

TEST(View, TransposeAndPermute) {
  Tensor t = arange(24).reshape({2, 3, 4});
  Tensor p = t.permute({2, 0, 1});
  EXPECT_EQ(p.sizes(), Shape({4, 2, 3}));
  EXPECT_EQ(p.strides(), Shape({1, 12, 4}));
  EXPECT_TRUE(p.is_same_storage(t));
  const std::vector<double> pv = values(p);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(pv[(i * 2 + j) * 3 + k], j * 12 + k * 4 + i);
  Tensor tr = t.transpose(-1, 0);
  EXPECT_EQ(tr.sizes(), Shape({4, 3, 2}));
  EXPECT_EQ(tr.strides(), Shape({1, 4, 12}));
  EXPECT_EQ(t.permute({-1, -2, -3}).sizes(), tr.sizes());
  EXPECT_EQ(t.permute({-1, -2, -3}).strides(), tr.strides());
  expect_error([&] { t.permute({0, 0, 1}); }, {"[permute]", "repeated"});
  expect_error([&] { t.permute({0, 1}); }, {"[permute]"});
  expect_error([&] { t.transpose(0, 3); }, {"[transpose]", "out of range"});
  expect_error([&] { t.t(); }, {"[t]"});
  EXPECT_EQ(arange(3).t().sizes(), Shape({3}));
}

TEST(View, SliceWithStepsAndNegativeBounds) {
  Tensor t = arange(10);
  EXPECT_EQ(values(t.slice(0, 1, 8, 3)), (std::vector<double>{1, 4, 7}));
  EXPECT_EQ(values(t.slice(0, 1, 9, 3)), (std::vector<double>{1, 4, 7}));
  EXPECT_EQ(values(t.slice(0, 1, 10, 3)), (std::vector<double>{1, 4, 7}));
  EXPECT_EQ(values(t.slice(0, 0, 10, 3)), (std::vector<double>{0, 3, 6, 9}));
  EXPECT_EQ(values(t.slice(0, -3, 10)), (std::vector<double>{7, 8, 9}));
  EXPECT_EQ(values(t.slice(0, -4, -1)), (std::vector<double>{6, 7, 8}));
  EXPECT_EQ(values(t.slice(0, -100, 100, 4)), (std::vector<double>{0, 4, 8}));
  EXPECT_EQ(t.slice(0, 5, 2).numel(), 0);
  EXPECT_EQ(t.slice(0, 12, 20).numel(), 0);
  Tensor s = t.slice(0, 2, 9, 2);
  EXPECT_EQ(s.stride(0), 2);
  EXPECT_EQ(s.storage_offset(), 2);
  EXPECT_TRUE(s.is_same_storage(t));
  Tensor m = arange(20).reshape({4, 5});
  Tensor ms = m.slice(1, 1, 5, 2).slice(0, -2, 4);
  EXPECT_EQ(ms.sizes(), Shape({2, 2}));
  EXPECT_EQ(ms.strides(), Shape({5, 2}));
  EXPECT_EQ(values(ms), (std::vector<double>{11, 13, 16, 18}));
  expect_error([&] { t.slice(0, 0, 5, 0); }, {"[slice]", "step"});
  expect_error([&] { t.slice(1, 0, 5); }, {"[slice]", "out of range"});
  expect_error([] { full({}, 1).slice(0, 0, 1); }, {"[slice]", "0-d"});
}

TEST(View, Narrow) {
  Tensor m = arange(20).reshape({4, 5});
  Tensor n = m.narrow(1, 1, 3);
  EXPECT_EQ(n.sizes(), Shape({4, 3}));
  EXPECT_EQ(n.storage_offset(), 1);
  EXPECT_EQ(values(n.select(0, 0)), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(values(m.narrow(0, -1, 1)), (std::vector<double>{15, 16, 17, 18, 19}));
  EXPECT_EQ(m.narrow(0, 4, 0).numel(), 0);
  expect_error([&] { m.narrow(1, 3, 3); }, {"[narrow]", "exceeds"});
  expect_error([&] { m.narrow(1, 0, -1); }, {"[narrow]"});
}

TEST(View, Select) {
  Tensor m = arange(20).reshape({4, 5});
  EXPECT_EQ(values(m.select(0, -1)), (std::vector<double>{15, 16, 17, 18, 19}));
  Tensor c = m.select(1, 2);
  EXPECT_EQ(c.sizes(), Shape({4}));
  EXPECT_EQ(c.stride(0), 5);
  EXPECT_EQ(values(c), (std::vector<double>{2, 7, 12, 17}));
  EXPECT_EQ(m.select(0, 2).select(0, 3).dim(), 0);
  EXPECT_EQ(m.select(0, 2).select(0, 3).item(), 13);
  expect_error([&] { m.select(0, 4); }, {"[select]", "index 4 out of range"});
  expect_error([&] { m.select(1, -6); }, {"[select]", "out of range"});
}

TEST(View, ExpandUsesStrideZero) {
  Tensor col = make({1, 2, 3}, {3, 1}, f32);
  Tensor e = col.expand({2, 3, 4});
  EXPECT_EQ(e.sizes(), Shape({2, 3, 4}));
  EXPECT_EQ(e.strides(), Shape({0, 1, 0}));
  EXPECT_TRUE(e.is_same_storage(col));
  EXPECT_FALSE(e.is_contiguous());
  const std::vector<double> ev = values(e);
  for (size_t i = 0; i < ev.size(); ++i) EXPECT_EQ(ev[i], 1 + static_cast<double>((i / 4) % 3));
  EXPECT_EQ(col.expand({-1, 5}).sizes(), Shape({3, 5}));
  EXPECT_EQ(col.expand_as(zeros({3, 7})).sizes(), Shape({3, 7}));
  EXPECT_EQ(full({}, 2).expand({2, 2}).strides(), Shape({0, 0}));
  EXPECT_EQ(col.expand({3, 0}).numel(), 0);
  expect_error([&] { col.expand({2, 4}); }, {"[expand]", "must match the existing size 3"});
  expect_error([&] { col.expand({4}); }, {"[expand]", "must be >="});
  expect_error([&] { col.expand({-1, 3, 4}); }, {"[expand]", "-1"});
}

TEST(View, SqueezeAndUnsqueeze) {
  Tensor t = zeros({1, 3, 1, 2});
  EXPECT_EQ(t.squeeze().sizes(), Shape({3, 2}));
  EXPECT_EQ(t.squeeze(2).sizes(), Shape({1, 3, 2}));
  EXPECT_EQ(t.squeeze(-2).sizes(), Shape({1, 3, 2}));
  EXPECT_EQ(t.squeeze(1).sizes(), t.sizes());  // size 3: unchanged
  EXPECT_TRUE(t.squeeze().is_same_storage(t));
  EXPECT_EQ(zeros({1, 1}).squeeze().dim(), 0);
  EXPECT_EQ(full({}, 1).squeeze(0).dim(), 0);
  Tensor m = arange(6).reshape({2, 3});
  EXPECT_EQ(m.unsqueeze(0).sizes(), Shape({1, 2, 3}));
  EXPECT_EQ(m.unsqueeze(1).sizes(), Shape({2, 1, 3}));
  EXPECT_EQ(m.unsqueeze(1).strides(), Shape({3, 3, 1}));
  EXPECT_EQ(m.unsqueeze(-1).sizes(), Shape({2, 3, 1}));
  EXPECT_EQ(m.unsqueeze(2).strides(), Shape({3, 1, 1}));
  EXPECT_TRUE(m.unsqueeze(-1).is_contiguous());
  EXPECT_EQ(full({}, 1).unsqueeze(0).sizes(), Shape({1}));
  EXPECT_EQ(values(m.t().unsqueeze(1).squeeze(1)), values(m.t()));
  expect_error([&] { m.unsqueeze(3); }, {"[unsqueeze]", "out of range"});
  expect_error([&] { m.squeeze(2); }, {"[squeeze]", "out of range"});
}

TEST(View, Flatten) {
  Tensor t = arange(24).reshape({2, 3, 4});
  EXPECT_EQ(t.flatten().sizes(), Shape({24}));
  EXPECT_EQ(t.flatten(1).sizes(), Shape({2, 12}));
  EXPECT_EQ(t.flatten(0, 1).sizes(), Shape({6, 4}));
  EXPECT_EQ(t.flatten(-2, -1).sizes(), Shape({2, 12}));
  EXPECT_TRUE(t.flatten(1).is_same_storage(t));
  EXPECT_EQ(full({}, 3).flatten().sizes(), Shape({1}));
  Tensor tt = t.transpose(0, 2);  // not viewable: flatten copies
  Tensor f = tt.flatten();
  EXPECT_EQ(values(f), values(tt));
  expect_error([&] { t.flatten(2, 1); }, {"[flatten]", "start_dim"});
}

TEST(View, AsStridedChecksBounds) {
  Tensor t = arange(10);
  Tensor w = t.as_strided({3, 3}, {1, 1});  // sliding windows
  EXPECT_TRUE(w.is_same_storage(t));
  EXPECT_EQ(values(w), (std::vector<double>{0, 1, 2, 1, 2, 3, 2, 3, 4}));
  EXPECT_EQ(values(t.as_strided({2, 2}, {3, 1}, 5)), (std::vector<double>{5, 6, 8, 9}));
  // Offset defaults to the view's own offset; bounds count from the storage.
  Tensor tail = t.slice(0, 6, 10);
  EXPECT_EQ(values(tail.as_strided({2}, {2})), (std::vector<double>{6, 8}));
  EXPECT_NO_THROW(t.as_strided({10}, {1}, 0));
  EXPECT_NO_THROW(t.as_strided({0, 5}, {100, 100}, 9));
  expect_error(
      [&] {
        t.as_strided({2, 2}, {3, 1}, 6);
      },
      {"[as_strided]", "reach element 10", "holds 10"});
  expect_error([&] { t.as_strided({11}, {1}); }, {"[as_strided]"});
  expect_error([&] { t.as_strided({2}, {-1}); }, {"[as_strided]", "non-negative"});
  expect_error([&] { t.as_strided({2}, {1}, -1); }, {"[as_strided]", "negative storage offset"});
  expect_error([&] { t.as_strided({2, 2}, {1}); }, {"[as_strided]", "2 sizes but 1 strides"});
}

// Note [Empty views stay inside their storage]
TEST(View, EmptyViewsStayInsideTheirStorage) {
  constexpr int64_t kBig = int64_t{1} << 62;
  const Tensor e = empty({kBig, 0}, DType::Float16);  // no elements, no bytes
  const Tensor v = e.narrow(0, kBig - 1, 1);
  EXPECT_EQ(v.sizes(), (Shape{1, 0}));
  EXPECT_EQ(v.storage_offset(), 0);  // not kBig - 1: that times 2 bytes overflows int64
  EXPECT_EQ(v.contiguous().numel(), 0);
  EXPECT_EQ(e.select(0, kBig - 2).storage_offset(), 0);
  // Inside the storage nothing changes: an empty slice at the end keeps its offset.
  const Tensor t = arange(10);
  EXPECT_EQ(t.slice(0, 7, 7).storage_offset(), 7);
  EXPECT_EQ(t.slice(0, 10, 10).storage_offset(), 10);
}

TEST(View, WritesThroughOneViewAreVisibleThroughAnother) {
  Tensor base = zeros({4, 4});
  Tensor cols = base.slice(1, 1, 3);
  Tensor tr = base.t();
  cols.fill_(7);
  EXPECT_EQ(values(tr.select(0, 1)), (std::vector<double>{7, 7, 7, 7}));
  EXPECT_EQ(values(tr.select(0, 0)), (std::vector<double>{0, 0, 0, 0}));
  // Row 3 of the transpose is column 3 of the base.
  tr.select(0, 3).copy_(make({1, 2, 3, 4}, {4}, f32));
  EXPECT_EQ(values(base.select(1, 3)), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(values(base.view({16}).slice(0, 3, 16, 4)), (std::vector<double>{1, 2, 3, 4}));
  // A strided diagonal view.
  Tensor diag = base.as_strided({4}, {5}, 0);
  diag.fill_(-1);
  EXPECT_EQ(values(base),
            (std::vector<double>{-1, 7, 7, 1, 0, -1, 7, 2, 0, 7, -1, 3, 0, 7, 7, -1}));
  EXPECT_TRUE(cols.is_same_storage(tr));
  EXPECT_TRUE(diag.is_same_storage(base));
}

TEST(View, VersionCounterIsSharedAndBumpedByInPlaceOps) {
  Tensor base = zeros({3, 4});
  Tensor v = base.slice(0, 1, 3);
  Tensor t = base.t();
  uint32_t last = base.version();
  EXPECT_EQ(v.version(), last);
  auto bumped = [&](const char* what) {
    EXPECT_GT(base.version(), last) << what;
    EXPECT_EQ(v.version(), base.version()) << what;
    EXPECT_EQ(t.version(), base.version()) << what;
    last = base.version();
  };
  v.fill_(1);
  bumped("fill_");
  add_(t, 2.0);
  bumped("add_");
  t.copy_(ones({4, 3}));
  bumped("copy_");
  Tensor w = v.view({8});
  mul_(w, make({2}, {1}, f32));
  bumped("mul_");
  v.zero_();
  bumped("zero_");
  // Out-of-place ops and views leave it alone.
  Tensor y = add(base, base);
  (void)base.reshape({12});
  (void)base.clone();
  EXPECT_EQ(base.version(), last);
  EXPECT_EQ(y.version(), 0u);
  EXPECT_EQ(zeros({2}).version(), 0u);
}

// ---- Factories --------------------------------------------------------------------------------

TEST(Factory, ZerosOnesFullEmptyForEveryDtype) {
  for (DType d : kAllDTypes) {
    SCOPED_TRACE(fmt::format("{}", d));
    Tensor e = empty({2, 3, 4}, d);
    EXPECT_EQ(e.dtype(), d);
    EXPECT_EQ(e.sizes(), Shape({2, 3, 4}));
    EXPECT_EQ(e.strides(), Shape({12, 4, 1}));
    EXPECT_EQ(e.nbytes(), 24 * itemsize(d));
    EXPECT_EQ(e.device(), Device::cpu());
    EXPECT_EQ(values(zeros({2, 3}, d)), std::vector<double>(6, 0.0));
    EXPECT_EQ(values(ones({5}, d)), std::vector<double>(5, 1.0));
    EXPECT_EQ(values(full({2, 2}, 3, d)), std::vector<double>(4, d == boolean ? 1.0 : 3.0));
    EXPECT_EQ(values(full({}, 0, d)), std::vector<double>(1, 0.0));
    EXPECT_EQ(zeros({0, 3}, d).numel(), 0);
    Tensor ol = ones_like(e);
    EXPECT_EQ(ol.dtype(), d);
    EXPECT_EQ(ol.sizes(), e.sizes());
  }
  EXPECT_EQ(values(full({2}, 2.75)), (std::vector<double>{2.75, 2.75}));
  EXPECT_EQ(values(full({2}, -1.5, f16)), (std::vector<double>{-1.5, -1.5}));
  EXPECT_EQ(values(full({2}, int64_t{1} << 60, i64)), (std::vector<double>{0x1p60, 0x1p60}));
  EXPECT_EQ(full({2}, (int64_t{1} << 60) + 1, i64).data_ptr<int64_t>()[1], (int64_t{1} << 60) + 1);
  EXPECT_EQ(zeros({}).dim(), 0);
  EXPECT_EQ(zeros({}).numel(), 1);
}

TEST(Factory, ArangeIntegerAndFloating) {
  Tensor a = arange(5);
  EXPECT_EQ(a.dtype(), i64);
  EXPECT_EQ(values(a), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(values(arange(1, 10, 3)), (std::vector<double>{1, 4, 7}));
  EXPECT_EQ(values(arange(1, 11, 3)), (std::vector<double>{1, 4, 7, 10}));
  EXPECT_EQ(values(arange(10, 0, -3)), (std::vector<double>{10, 7, 4, 1}));
  EXPECT_EQ(values(arange(-2, 3)), (std::vector<double>{-2, -1, 0, 1, 2}));
  EXPECT_EQ(arange(5, 5).numel(), 0);
  Tensor f = arange(0.0, 1.0, 0.25);
  EXPECT_EQ(f.dtype(), f32);
  EXPECT_EQ(values(f), (std::vector<double>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(values(arange(1, 0, -0.25)), (std::vector<double>{1, 0.75, 0.5, 0.25}));
  EXPECT_EQ(arange(0, 1, 0.1).numel(), 10);
  EXPECT_EQ(arange(0.5, 3).numel(), 3);
  EXPECT_EQ(values(arange(0, 3, 1, f64)), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(arange(0, 3, 1, f64).dtype(), f64);
  EXPECT_EQ(arange(4, i32).dtype(), i32);
  EXPECT_EQ(values(arange(0.0, 2.0, 0.5, i64)), (std::vector<double>{0, 0, 1, 1}));
  expect_error([] { arange(0, 10, 0); }, {"[arange]", "step must be non-zero"});
  expect_error([] { arange(0.0, 1.0, 0.0); }, {"[arange]", "non-zero"});
  expect_error([] { arange(0, 10, -1); }, {"[arange]", "inconsistent signs"});
  expect_error([] { arange(0.0, INFINITY); }, {"[arange]", "finite"});
  // The values fit int64 even where index * step does not.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const Tensor wide = arange(-kMax, kMax, kMax);
  ASSERT_EQ(wide.numel(), 2);
  EXPECT_EQ(wide.data_ptr<int64_t>()[0], -kMax);
  EXPECT_EQ(wide.data_ptr<int64_t>()[1], 0);
}

TEST(Factory, LinspaceEndpointsAreExact) {
  for (DType d : {f32, f64}) {
    for (auto [a, b, n] : {std::tuple{0.0, 1.0, 7},
                           {-1.0, 0.3, 11},
                           {3.7, -2.1, 50},
                           {0.1, 0.7, 2},
                           {1e-3, 123.456, 1000}}) {
      SCOPED_TRACE(fmt::format("{} {} {} {}", d, a, b, n));
      Tensor t = linspace(a, b, n, d);
      EXPECT_EQ(t.dtype(), d);
      ASSERT_EQ(t.numel(), n);
      const std::vector<double> v = values(t);
      const double fa = d == f32 ? static_cast<double>(static_cast<float>(a)) : a;
      const double fb = d == f32 ? static_cast<double>(static_cast<float>(b)) : b;
      EXPECT_EQ(v.front(), fa);
      EXPECT_EQ(v.back(), fb);
      const double step = (b - a) / (n - 1);
      for (int i = 0; i < n; ++i)
        EXPECT_NEAR(v[i], a + step * i, 1e-5 * (1 + std::fabs(a + step * i)));
    }
  }
  EXPECT_EQ(values(linspace(2.0, 5.0, 1)), (std::vector<double>{2}));  // PyTorch gives start
  EXPECT_EQ(linspace(0, 1, 0).numel(), 0);
  EXPECT_EQ(values(linspace(0, 4, 5, i64)), (std::vector<double>{0, 1, 2, 3, 4}));
  expect_error([] { linspace(0, 1, -1); }, {"[linspace]", "non-negative"});
}

TEST(Factory, Eye) {
  EXPECT_EQ(values(eye(3)), (std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(eye(3).dtype(), f32);
  Tensor r = eye(2, 4, i64);
  EXPECT_EQ(r.sizes(), Shape({2, 4}));
  EXPECT_EQ(r.dtype(), i64);
  EXPECT_EQ(values(r), (std::vector<double>{1, 0, 0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(values(eye(3, 2)), (std::vector<double>{1, 0, 0, 1, 0, 0}));
  EXPECT_EQ(values(eye(2, -1, boolean)), (std::vector<double>{1, 0, 0, 1}));
  EXPECT_EQ(eye(0).sizes(), Shape({0, 0}));
  EXPECT_EQ(eye(3, 0).sizes(), Shape({3, 0}));
  expect_error([] { eye(-2); }, {"[eye]", "non-negative"});
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

TEST(Factory, RandIsUniformInZeroOne) {
  manual_seed(2024);
  for (DType d : {f32, f64, f16, bf16}) {
    SCOPED_TRACE(fmt::format("{}", d));
    Tensor r = rand({100000}, d);
    EXPECT_EQ(r.dtype(), d);
    const std::vector<double> v = values(r);
    double lo = 1, hi = 0;
    for (double x : v) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    EXPECT_GE(lo, 0.0);
    EXPECT_LT(hi, 1.0);  // never rounds up to 1, even in bfloat16
    EXPECT_LT(lo, 0.01);
    EXPECT_GT(hi, 0.99);
    EXPECT_NEAR(mean(v), 0.5, 0.01);
  }
  EXPECT_EQ(rand({2, 3}).sizes(), Shape({2, 3}));
  expect_error([] { rand({2}, i64); }, {"[rand]", "floating"});
}

TEST(Factory, RandnHasZeroMeanUnitStd) {
  Generator g(7);
  for (DType d : {f32, f64}) {
    const std::vector<double> v = values(randn({100000}, d, &g));
    const double m = mean(v);
    double var = 0;
    for (double x : v) var += (x - m) * (x - m);
    var /= static_cast<double>(v.size() - 1);
    EXPECT_NEAR(m, 0.0, 0.015);
    EXPECT_NEAR(std::sqrt(var), 1.0, 0.015);
    int beyond3 = 0;
    for (double x : v) beyond3 += std::fabs(x) > 3;
    EXPECT_GT(beyond3, 150);  // P(|z| > 3) = 0.27%: tails exist
    EXPECT_LT(beyond3, 400);
  }
  expect_error([] { randn({2}, i32); }, {"[randn]", "floating"});
}

TEST(Factory, RandintStaysInBounds) {
  Generator g(11);
  Tensor r = randint(-3, 4, {10000}, i64, &g);
  EXPECT_EQ(r.dtype(), i64);
  std::vector<int> counts(7, 0);
  for (double x : values(r)) {
    ASSERT_GE(x, -3);
    ASSERT_LT(x, 4);
    ASSERT_EQ(x, std::floor(x));
    ++counts[static_cast<size_t>(x + 3)];
  }
  for (int c : counts) EXPECT_GT(c, 1200);  // ~1429 each
  for (double x : values(randint(0, 2, {100}, boolean, &g))) EXPECT_TRUE(x == 0 || x == 1);
  for (double x : values(randint(250, 256, {100}, u8, &g))) EXPECT_TRUE(x >= 250 && x < 256);
  // Large bounds keep every bit (no detour through double).
  const int64_t big = (int64_t{1} << 62) + 1;
  Tensor rb = randint(big, big + 10, {200}, i64, &g);
  std::vector<bool> seen(10, false);
  for (int64_t i = 0; i < 200; ++i) {
    const int64_t x = rb.data_ptr<int64_t>()[i];
    ASSERT_GE(x, big);
    ASSERT_LT(x, big + 10);
    seen[static_cast<size_t>(x - big)] = true;
  }
  for (bool s : seen) EXPECT_TRUE(s);
  expect_error([] { randint(5, 5, {2}); }, {"[randint]", "low must be below high"});
}

TEST(Factory, ManualSeedReproduces) {
  manual_seed(123);
  const std::vector<double> a = values(rand({1000}));
  const std::vector<double> an = values(randn({1001}, f64));
  const std::vector<double> ai = values(randint(0, 1000, {100}));
  manual_seed(123);
  EXPECT_EQ(values(rand({1000})), a);
  EXPECT_EQ(values(randn({1001}, f64)), an);
  EXPECT_EQ(values(randint(0, 1000, {100})), ai);
  manual_seed(124);
  EXPECT_NE(values(rand({1000})), a);

  // Generators are independent of each other and of the default one.
  manual_seed(5);
  const std::vector<double> d1 = values(rand({10}));
  Generator g1(99), g2(99);
  const std::vector<double> x1 = values(randn({10}, f32, &g1));
  (void)rand({100}, f32, &g1);  // advancing g1 leaves g2 alone
  EXPECT_EQ(values(randn({10}, f32, &g2)), x1);
  manual_seed(5);
  (void)rand({10}, f32, &g1);  // g1 does not touch the default generator
  EXPECT_EQ(values(rand({10})), d1);
  g2.manual_seed(99);
  EXPECT_EQ(values(randn({10}, f32, &g2)), x1);
}

TEST(Factory, FromBlobDeleterRunsOnceWhenLastViewDies) {
  std::vector<float> data = {1, 2, 3, 4, 5, 6};
  int calls = 0;
  void* seen = nullptr;
  {
    Tensor t = from_blob(data.data(), {2, 3}, f32, [&](void* p) {
      ++calls;
      seen = p;
    });
    EXPECT_EQ(t.data_ptr(), data.data());  // zero-copy
    EXPECT_EQ(values(t), (std::vector<double>{1, 2, 3, 4, 5, 6}));
    Tensor v = t.t().slice(0, 1, 3);
    t = Tensor();
    EXPECT_EQ(calls, 0);
    v.fill_(0);  // writes land in the user's buffer
    EXPECT_EQ(data, (std::vector<float>{1, 0, 0, 4, 0, 0}));
    Tensor v2 = v;
    v = Tensor();
    EXPECT_EQ(calls, 0);
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, data.data());
  // Explicit strides; no deleter at all is fine.
  Tensor s = from_blob(data.data(), {3}, {2}, f32, {});
  EXPECT_EQ(values(s), (std::vector<double>{1, 0, 0}));
  expect_error([&] { from_blob(data.data(), {3}, {1, 1}, f32, {}); }, {"[from_blob]"});
}

TEST(Factory, TensorFromNestedLists) {
  Tensor i = tensor({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(i.dtype(), i64);
  EXPECT_EQ(i.sizes(), Shape({2, 3}));
  EXPECT_EQ(values(i), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  Tensor f = tensor({1.5, -2.5});
  EXPECT_EQ(f.dtype(), f32);
  EXPECT_EQ(values(f), (std::vector<double>{1.5, -2.5}));
  Tensor b = tensor({true, false, true});
  EXPECT_EQ(b.dtype(), boolean);
  EXPECT_EQ(values(b), (std::vector<double>{1, 0, 1}));
  Tensor three = tensor({{{1.0, 2.0}, {3.0, 4.0}}, {{5.0, 6.0}, {7.0, 8.0}}}, f64);
  EXPECT_EQ(three.sizes(), Shape({2, 2, 2}));
  EXPECT_EQ(three.dtype(), f64);
  EXPECT_EQ(values(three), iota(8, 1));
  Tensor scalar = tensor(2.5);
  EXPECT_EQ(scalar.dim(), 0);
  EXPECT_EQ(scalar.item(), 2.5);
  EXPECT_EQ(tensor({1, 2}, f16).dtype(), f16);
  expect_error([] { tensor({{1, 2}, {3}}); }, {"[tensor]", "ragged"});
  expect_error([] { tensor({{1.0, 2.0}, {3.0, 4.0, 5.0}}); }, {"[tensor]", "ragged"});
}

TEST(Factory, BadSizesAreRejected) {
  expect_error([] { zeros({2, -1}); }, {"[empty]", "non-negative", "[2, -1]"});
  expect_error([] { empty({-3}); }, {"[empty]", "non-negative"});
  const int64_t huge = int64_t{1} << 40;
  expect_error([&] { empty({huge, huge}); }, {"[empty]", "overflows"});
  expect_error([] { empty({int64_t{1} << 62}, f64); }, {"[empty]", "overflow"});
  expect_error([] { rand({-1}); }, {"non-negative"});
}

// ---- Printing ---------------------------------------------------------------------------------

TEST(Print, LikePyTorch) {
  EXPECT_EQ(tensor({{1.0, 2.5}, {3.0, 4.0}}).str(),
            "tensor([[1.0000, 2.5000],\n        [3.0000, 4.0000]])");
  EXPECT_EQ(tensor({1, 2, 3}).str(), "tensor([1, 2, 3])");
}

TEST(Print, Integers) {
  EXPECT_EQ(tensor({-1, 10, 200}).str(), "tensor([ -1,  10, 200])");
  EXPECT_EQ(tensor({{1, 2}, {30, 4}}).str(), "tensor([[ 1,  2],\n        [30,  4]])");
  EXPECT_EQ(arange(8).reshape({2, 2, 2}).str(),
            "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])");
  EXPECT_EQ(tensor({1, 2}, i32).str(), "tensor([1, 2], dtype=int32)");
  EXPECT_EQ(tensor({255, 0}, u8).str(), "tensor([255,   0], dtype=uint8)");
}

TEST(Print, Floats) {
  EXPECT_EQ(tensor({1.5, 2.25}).str(), "tensor([1.5000, 2.2500])");
  EXPECT_EQ(tensor({-1.5, 0.0, 10.125}).str(), "tensor([-1.5000,  0.0000, 10.1250])");
  EXPECT_EQ(tensor({1.0, 2.0, -3.0}).str(), "tensor([ 1.,  2., -3.])");
  EXPECT_EQ(tensor({0.0, 0.0}).str(), "tensor([0., 0.])");
  EXPECT_EQ(tensor({1.5, 2.0}, f64).str(), "tensor([1.5000, 2.0000], dtype=float64)");
  EXPECT_EQ(tensor({1.0, 2.0}, f16).str(), "tensor([1., 2.], dtype=float16)");
  // Scientific notation, on PyTorch's rules.
  EXPECT_EQ(tensor({1e-5, 1.0}).str(), "tensor([1.0000e-05, 1.0000e+00])");
  EXPECT_EQ(tensor({1.0, 10000.0}).str(), "tensor([1.0000e+00, 1.0000e+04])");
  EXPECT_EQ(tensor({1e9, -2.0}, f64).str(), "tensor([ 1.0000e+09, -2.0000e+00], dtype=float64)");
  EXPECT_EQ(tensor({100.0, 1000.0}).str(), "tensor([ 100., 1000.])");
  // Only finite non-zero values set the width.
  EXPECT_EQ(tensor({1.0, NAN, INFINITY, -INFINITY}).str(), "tensor([1., nan, inf, -inf])");
  EXPECT_EQ(tensor({1.5, NAN}).str(), "tensor([1.5000,    nan])");
}

TEST(Print, BoolZeroDimAndEmpty) {
  EXPECT_EQ(tensor({true, false}).str(), "tensor([ True, False])");
  EXPECT_EQ(tensor({true}).str(), "tensor([True])");
  EXPECT_EQ(tensor(3.5).str(), "tensor(3.5000)");
  EXPECT_EQ(tensor(2.0).str(), "tensor(2.)");
  EXPECT_EQ(full({}, 7, i64).str(), "tensor(7)");
  EXPECT_EQ(full({}, -7, i32).str(), "tensor(-7, dtype=int32)");
  EXPECT_EQ(full({}, true, boolean).str(), "tensor(True)");
  EXPECT_EQ(zeros({0}).str(), "tensor([])");
  EXPECT_EQ(zeros({0, 3}).str(), "tensor([], size=(0, 3))");
  EXPECT_EQ(zeros({0}, i64).str(), "tensor([], dtype=int64)");
  EXPECT_EQ(zeros({2, 0}, f64).str(), "tensor([], size=(2, 0), dtype=float64)");
  EXPECT_EQ(Tensor().str(), "tensor(undefined)");
  // Non-contiguous views print their logical order.
  EXPECT_EQ(arange(6).reshape({2, 3}).t().str(),
            "tensor([[0, 3],\n        [1, 4],\n        [2, 5]])");
  std::ostringstream os;
  os << tensor({1, 2});
  EXPECT_EQ(os.str(), "tensor([1, 2])");
  EXPECT_EQ(fmt::format("{}", tensor({1, 2})), "tensor([1, 2])");
}

TEST(Print, Int64ElementsPrintExactly) {
  // Through a double, 2^62 + 1 printed as 4611686018427387904.
  const Tensor t = full({2}, (int64_t{1} << 62) + 1, DType::Int64);
  EXPECT_EQ(t.str(), "tensor([4611686018427387905, 4611686018427387905])");
  EXPECT_EQ(full(IntList{}, std::numeric_limits<int64_t>::max(), DType::Int64).str(),
            "tensor(9223372036854775807)");
}

TEST(Print, LongRowsWrapAtEightyColumns) {
  EXPECT_EQ(arange(30).str(),
            "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
            "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29])");
}

TEST(Print, LargeTensorsAreSummarised) {
  EXPECT_EQ(arange(2000).str(), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  EXPECT_EQ(arange(2000).reshape({40, 50}).str(),
            "tensor([[   0,    1,    2,  ...,   47,   48,   49],\n"
            "        [  50,   51,   52,  ...,   97,   98,   99],\n"
            "        [ 100,  101,  102,  ...,  147,  148,  149],\n"
            "        ...,\n"
            "        [1850, 1851, 1852,  ..., 1897, 1898, 1899],\n"
            "        [1900, 1901, 1902,  ..., 1947, 1948, 1949],\n"
            "        [1950, 1951, 1952,  ..., 1997, 1998, 1999]])");
  // Only the printed elements decide the format: the hidden middle holds a fraction.
  Tensor f = arange(0, 1001, 1, f32);
  f.slice(0, 500, 501).fill_(0.5);
  EXPECT_EQ(f.str(), "tensor([   0.,    1.,    2.,  ...,  998.,  999., 1000.])");
  EXPECT_EQ(zeros({1000}).str().find("..."), std::string::npos);  // 1000 is not above the limit
}

/** Sets print options for one test and puts the earlier ones back after it. */
struct PrintOptionsFor {
  PrintOptions saved = print_options();
  explicit PrintOptionsFor(const PrintOptions& o) { set_print_options(o); }
  ~PrintOptionsFor() { set_print_options(saved); }
};

TEST(Print, OptionsAsTorchSetPrintoptions) {
  const Tensor x = tensor({1.0, 2.5});
  {
    PrintOptions o;
    o.precision = 2;
    PrintOptionsFor with(o);
    EXPECT_EQ(x.str(), "tensor([1.00, 2.50])");
  }
  EXPECT_EQ(x.str(), "tensor([1.0000, 2.5000])");
  {
    PrintOptions o;
    o.sci_mode = true;
    PrintOptionsFor with(o);
    EXPECT_EQ(x.str(), "tensor([1.0000e+00, 2.5000e+00])");
  }
  {
    // Forced off, the width still comes from the notation chosen (PyTorch's padding).
    PrintOptions o;
    o.sci_mode = false;
    PrintOptionsFor with(o);
    EXPECT_EQ(tensor({1e-5, 1.0}).str(), "tensor([    0.0000,     1.0000])");
  }
  {
    PrintOptions o;
    o.threshold = 5;
    o.edgeitems = 1;
    PrintOptionsFor with(o);
    EXPECT_EQ(arange(10).str(), "tensor([0,  ..., 9])");
    EXPECT_EQ(arange(5).str(), "tensor([0, 1, 2, 3, 4])");
    o.edgeitems = 0;  // only the ellipsis, in every dim
    set_print_options(o);
    EXPECT_EQ(arange(10).str(), "tensor([ ...])");
    EXPECT_EQ(arange(12).reshape({3, 4}).str(), "tensor([...])");
  }
  {
    PrintOptions o;
    o.linewidth = 20;
    PrintOptionsFor with(o);
    EXPECT_EQ(arange(6).str(), "tensor([0, 1, 2, 3,\n        4, 5])");
  }
  {
    PrintOptionsFor with(print_profile("full"));
    EXPECT_EQ(arange(2000).str().find("..."), std::string::npos);
    set_print_options(print_profile("short"));
    EXPECT_EQ(arange(2000).str(), "tensor([   0,    1,  ..., 1998, 1999])");
    EXPECT_EQ(x.str(), "tensor([1.00, 2.50])");
  }
  EXPECT_EQ(print_options().precision, 4);
  PrintOptions bad;
  bad.precision = -1;
  EXPECT_THROW(set_print_options(bad), ValueError);
  bad = PrintOptions{};
  bad.linewidth = 0;
  EXPECT_THROW(set_print_options(bad), ValueError);
  EXPECT_THROW(print_profile("long"), ValueError);
  EXPECT_EQ(print_options().linewidth, 80);  // a refused call changes nothing
}

// ---- float -> integer conversion (Note [Float to integer conversion]) -------------------------

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
const double kNaN = std::nan("");
const double kInf = std::numeric_limits<double>::infinity();

/** The elements of an integer tensor, read exactly (values() goes through double). */
std::vector<int64_t> ints(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<int64_t> out;
  visit_dtype(c.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      const T* p = static_cast<const T*>(c.data_ptr());
      for (int64_t i = 0; i < c.numel(); ++i) out.push_back(static_cast<int64_t>(p[i]));
    } else {
      ADD_FAILURE() << "not an integer tensor: " << dtype_name(c.dtype());
    }
  });
  return out;
}

TEST(FloatToInt, ScalarToIntIsDefinedForEveryDouble) {
  EXPECT_EQ(Scalar(kNaN).to_int(), kI64Min);
  EXPECT_EQ(Scalar(kInf).to_int(), kI64Min);
  EXPECT_EQ(Scalar(-kInf).to_int(), kI64Min);
  EXPECT_EQ(Scalar(1e30).to_int(), kI64Min);
  EXPECT_EQ(Scalar(-1e30).to_int(), kI64Min);
  EXPECT_EQ(Scalar(0x1p63).to_int(), kI64Min);   // 2^63 is one past INT64_MAX
  EXPECT_EQ(Scalar(-0x1p63).to_int(), kI64Min);  // exactly INT64_MIN, in range
  EXPECT_EQ(Scalar(0x1.fffffffffffffp62).to_int(), int64_t{9223372036854774784});
  EXPECT_EQ(Scalar(2.9).to_int(), 2);
  EXPECT_EQ(Scalar(-2.9).to_int(), -2);
  EXPECT_EQ(Scalar(-0.5).to_int(), 0);
  EXPECT_EQ(Scalar(int64_t{-7}).to_int(), -7);
  EXPECT_EQ(float_to_int64(3.0), 3);
}

TEST(FloatToInt, ToInt64OfNanInfAndHugeIsInt64Min) {
  const std::vector<double> v = {kNaN, kInf, -kInf, 1e30, -1e30, 2.9, -2.9, 0x1.fffffffffffffp62};
  const std::vector<int64_t> want = {kI64Min, kI64Min, kI64Min, kI64Min,
                                     kI64Min, 2,       -2,      int64_t{9223372036854774784}};
  EXPECT_EQ(ints(make(v, {8}, f64).to(i64)), want);
  // float32 holds every one of these but the last, which rounds up to 2^63: out of range.
  std::vector<int64_t> want32 = want;
  want32.back() = kI64Min;
  EXPECT_EQ(ints(make(v, {8}, f32).to(i64)), want32);
}

TEST(FloatToInt, HalfTypesConvertTheSameWay) {
  // In float16 1e30 overflows to inf; either way the result is INT64_MIN.
  const std::vector<double> v = {kNaN, kInf, -kInf, 1e30, 2.5, -3.5};
  const std::vector<int64_t> want = {kI64Min, kI64Min, kI64Min, kI64Min, 2, -3};
  EXPECT_EQ(ints(make(v, {6}, f16).to(i64)), want);
  EXPECT_EQ(ints(make(v, {6}, bf16).to(i64)), want);
}

TEST(FloatToInt, NarrowIntegersKeepTheLowBitsOfTheInt64) {
  const std::vector<double> v = {kNaN, 3e9, 300.7, -1.5, 256.0, 1e30, 2.9};
  // int64 values: INT64_MIN, 3000000000, 300, -1, 256, INT64_MIN, 2.
  EXPECT_EQ(ints(make(v, {7}, f64).to(i32)),
            (std::vector<int64_t>{0, 3000000000 - (int64_t{1} << 32), 300, -1, 256, 0, 2}));
  EXPECT_EQ(ints(make(v, {7}, f64).to(i8)), (std::vector<int64_t>{0, 0, 44, -1, 0, 0, 2}));
  EXPECT_EQ(ints(make(v, {7}, f64).to(u8)), (std::vector<int64_t>{0, 0, 44, 255, 0, 0, 2}));
  // Whatever the path, x.to(int32) == x.to(int64).to(int32).
  EXPECT_EQ(ints(make(v, {7}, f64).to(i64).to(i32)), ints(make(v, {7}, f64).to(i32)));
}

TEST(FloatToInt, NonContiguousAndZeroSizeInputs) {
  // A transposed view: [[nan, 1e30], [2.5, -inf]] read column-major.
  const Tensor x = make({kNaN, 1e30, 2.5, -kInf}, {2, 2}, f64).t();
  EXPECT_EQ(ints(x.to(i64)), (std::vector<int64_t>{kI64Min, 2, kI64Min, kI64Min}));
  // A strided slice: every second element.
  const Tensor y = make({kInf, 0, -7.9, 0, kNaN, 0}, {6}, f32).slice(0, 0, 6, 2);
  EXPECT_EQ(ints(y.to(i32)), (std::vector<int64_t>{0, -7, 0}));
  EXPECT_EQ(make({}, {0}, f64).to(i64).numel(), 0);
}

// A number becomes an element only where it fits (Note [Scalars that do not fit]): filling an
// integer tensor with NaN, an infinity or 1e30 is an error, not INT64_MIN.
TEST(FloatToInt, FillWithNanOnIntegerTensorsIsAnError) {
  Tensor a = zeros({3}, i64);
  EXPECT_THROW(a.fill_(kNaN), ValueError);
  EXPECT_EQ(ints(a), (std::vector<int64_t>(3, 0)));  // untouched
  Tensor b = zeros({2, 2}, i32).t();
  EXPECT_THROW(b.fill_(-kInf), ValueError);
  Tensor c = zeros({2}, u8);
  EXPECT_THROW(c.fill_(1e30), ValueError);
  EXPECT_THROW(full({2}, kNaN, i64), ValueError);
  EXPECT_EQ(ints(full({2}, 7.9, i64)), (std::vector<int64_t>(2, 7)));
  EXPECT_THROW(full({2}, -0.5, u8), ValueError);  // below uint8's range before truncation
}

TEST(FloatToInt, ReferenceBackendAgreesWithCpu) {
  init();  // discovery is lazy: find_device_type alone would not run it
  ASSERT_GE(find_device_type("reference"), 0) << "the reference backend is built with the tests";
  const Device ref("reference");
  const std::vector<double> v = {kNaN, kInf, -kInf, 1e30, -1e30, 3e9, 300.7, -1.5, 2.9};
  for (DType src : {f64, f32, f16, bf16}) {
    const Tensor x = make(v, {9}, src);
    for (DType dst : {i64, i32, i8, u8}) {
      EXPECT_EQ(ints(x.to(ref).to(dst).to(Device::cpu())), ints(x.to(dst)))
          << dtype_name(src) << " -> " << dtype_name(dst);
    }
  }
  const Tensor converted = full({3}, kNaN, {f64, ref}).to(i64);
  EXPECT_EQ(ints(converted.to(Device::cpu())), (std::vector<int64_t>(3, kI64Min)));
  Tensor filled = zeros({3}, {i64, ref});
  EXPECT_THROW(filled.fill_(kNaN), ValueError);
}

// The op fuzzer found pow(x, nan) converting the NaN scalar to int64 (undefined behaviour;
// tests/fuzz/corpus/op_fuzz/crash-pow-nan-scalar-to-int). 1^nan = 1, anything else^nan is NaN.
TEST(FloatToInt, PowByNan) {
  const std::vector<double> f = values(pow(make({0, 1, 2}, {3}, f32), kNaN));
  ASSERT_EQ(f.size(), 3u);
  EXPECT_TRUE(std::isnan(f[0]));
  EXPECT_EQ(f[1], 1.0);
  EXPECT_TRUE(std::isnan(f[2]));

  // An integer tensor to a NaN power gives a floating result, as in PyTorch.
  const Tensor r = pow(make({0, 1, 2}, {3}, i64), kNaN);
  EXPECT_TRUE(is_floating(r.dtype())) << dtype_name(r.dtype());
  const std::vector<double> got = values(r);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_EQ(got[1], 1.0);
  EXPECT_TRUE(std::isnan(got[2]));
}

TEST(Item, IntegersAreReadExactly) {
  // Through a double, 2^53 + 1 and INT64_MAX would round (and INT64_MAX overflow on the way back).
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t odd = (int64_t{1} << 53) + 1;
  const Tensor t = full({1}, kMax, DType::Int64);
  EXPECT_EQ(t.item<int64_t>(), kMax);
  EXPECT_EQ(full({}, odd, DType::Int64).item<int64_t>(), odd);
  EXPECT_EQ(full({}, std::numeric_limits<int64_t>::min(), DType::Int64).item<int64_t>(),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(t.item_scalar().kind(), Scalar::Kind::Int);
  EXPECT_EQ(full({}, true, DType::Bool).item_scalar().kind(), Scalar::Kind::Bool);
  EXPECT_EQ(full({}, 255, DType::UInt8).item<int>(), 255);
  EXPECT_EQ(full({}, -7, DType::Int32).item<int64_t>(), -7);
  // Floating elements truncate; NaN, infinities and values beyond int64 have no integer (Note
  // [Scalars that do not fit]).
  EXPECT_EQ(full({}, 2.75, DType::Float32).item<int64_t>(), 2);
  EXPECT_THROW(full({}, NAN, DType::Float64).item<int64_t>(), ValueError);
  EXPECT_THROW(full({}, 1e30, DType::Float64).item<int>(), ValueError);
  EXPECT_DOUBLE_EQ(full({}, 2.75, DType::Float32).item<double>(), 2.75);
  EXPECT_THROW(full({2}, 1, DType::Int64).item<int64_t>(), Error);
}

// ---- The dim limit (Note [At most EMBER_MAX_DIMS dims]) ---------------------------------------

// A shape of EMBER_MAX_DIMS dims of which `big` (every third from the first) have size 2.
Shape shape_at_limit(int big) {
  Shape s(EMBER_MAX_DIMS, 1);
  for (int i = 0; i < big; ++i) s[static_cast<size_t>(3 * i)] = 2;
  return s;
}

Shape reversed_dims(int64_t n) {
  Shape p;
  for (int64_t d = n - 1; d >= 0; --d) p.push_back(d);
  return p;
}

TEST(TensorDims, EveryWayToMakeATensorStopsAtTheLimit) {
  const Shape at(EMBER_MAX_DIMS, 1), past(EMBER_MAX_DIMS + 1, 1);
  const std::string n = std::to_string(EMBER_MAX_DIMS), n1 = std::to_string(EMBER_MAX_DIMS + 1);
  const Tensor t = zeros(at);
  EXPECT_EQ(t.dim(), EMBER_MAX_DIMS);
  const auto refused = [&](auto&& fn, const char* op) {
    EXPECT_THROW(fn(), ValueError) << op;
    expect_error(fn, {op, "too many dims", n1.c_str(), n.c_str(), "EMBER_MAX_DIMS"});
  };
  refused([&] { return empty(past); }, "[empty]");
  refused([&] { return zeros(past); }, "too many dims");
  refused([&] { return t.unsqueeze(0); }, "[unsqueeze]");
  refused([&] { return t.view(past); }, "[view]");
  refused([&] { return t.reshape(past); }, "[reshape]");
  refused([&] { return t.expand(past); }, "[expand]");
  refused([&] { return t.as_strided(past, past); }, "[as_strided]");
  float one = 1;
  refused([&] { return from_blob(&one, past, f32); }, "[from_blob]");
  // The constructor every tensor goes through refuses it too.
  EXPECT_THROW(TensorImpl(t.storage(), past, past, 0, f32), ValueError);
}

TEST(TensorDims, KernelsAtTheLimitMatchFloat64Loops) {
  // 64 dims, 18 of size 2, reversed so that no two dims of the operands merge: more dims than
  // the CPU loops used to hold (17 summed to 3 instead of 131072; 18 crashed).
  const Shape sizes = shape_at_limit(18);
  const int64_t n = int64_t{1} << 18;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i % 97) - 48;
  for (const char* dev : {"cpu", "reference"}) {
    SCOPED_TRACE(dev);
    const Device d(find_device_type(dev), 0);
    const Tensor x = make(v, sizes, f64).to(d);
    const Tensor p = x.permute(reversed_dims(EMBER_MAX_DIMS));
    EXPECT_EQ(sum(ones(sizes, TensorOptions(f64, d)).permute(reversed_dims(EMBER_MAX_DIMS))).item(),
              static_cast<double>(n));
    // The permuted elements in row-major order, read by walking strides in the test.
    const std::vector<double> pv = values(p);
    double total = 0;
    for (double e : pv) total += e;
    EXPECT_EQ(sum(p).item(), total);
    EXPECT_EQ(values(p.contiguous()), pv);  // copy
    std::vector<double> twice = pv;
    for (double& e : twice) e *= 2;
    EXPECT_EQ(values(add(p, p.contiguous())), twice);  // binary, two layouts
    const std::vector<double> relu_ref = [&] {
      std::vector<double> r = pv;
      for (double& e : r) e = e > 0 ? e : 0;
      return r;
    }();
    EXPECT_EQ(values(relu(p)), relu_ref);
    Tensor inplace = x.clone().permute(reversed_dims(EMBER_MAX_DIMS));
    mul_(inplace, 2.0);  // in place through the permuted view
    EXPECT_EQ(values(inplace), twice);
    EXPECT_EQ(amax(p).item(), 48.0);
    // Reductions over one dim, the running sum and the index kernels, against the other layout
    // (dims 12, 15, ..., 63 of p have size 2).
    const Tensor c = p.contiguous();
    EXPECT_EQ(values(sum(p, {15})), values(sum(c, {15})));
    EXPECT_EQ(values(cumsum(p, 63)), values(cumsum(c, 63)));
    EXPECT_EQ(values(std::get<1>(max(p, 18))), values(std::get<1>(max(c, 18))));
    const Tensor idx = make({1, 0}, {2}, i64).to(d);
    EXPECT_EQ(values(index_select(p, 21, idx)), values(index_select(c, 21, idx)));
    const Tensor gidx = zeros(p.sizes(), TensorOptions(i64, d));
    EXPECT_EQ(values(gather(p, 24, gidx)), values(gather(c, 24, gidx)));
    EXPECT_EQ(values(nonzero(eq(p, 0.0))), values(nonzero(eq(c, 0.0))));
  }
}

// ---- 0-d tensors and dim arguments (Note [Dims of a 0-d tensor]) -----------------------------

struct ZeroDimCase {
  const char* name;
  std::function<Tensor(const Tensor&, int64_t)> fn;
  Shape shape;  // of the result for dims 0 and -1
  double value;
};

TEST(ZeroDim, OpsTakingADimTreatAZeroDTensorAsOneDimOfSizeOne) {
  // PyTorch's rule: a 0-d tensor takes dims -1 and 0, as if it were 1-d of size 1.
  const Tensor x = full({}, 2.0);
  const Tensor i0 = full({}, 0, DType::Int64);
  const Tensor i1 = full({1}, 0, DType::Int64);
  const Tensor five = full({}, 5.0);
  const std::vector<ZeroDimCase> cases = {
      {"sum", [](const Tensor& t, int64_t d) { return sum(t, {d}); }, {}, 2},
      {"mean", [](const Tensor& t, int64_t d) { return mean(t, {d}); }, {}, 2},
      {"prod", [](const Tensor& t, int64_t d) { return prod(t, {d}); }, {}, 2},
      {"amax", [](const Tensor& t, int64_t d) { return amax(t, {d}); }, {}, 2},
      {"amin", [](const Tensor& t, int64_t d) { return amin(t, {d}); }, {}, 2},
      {"all", [](const Tensor& t, int64_t d) { return all(t, {d}); }, {}, 1},
      {"any", [](const Tensor& t, int64_t d) { return any(t, {d}); }, {}, 1},
      {"norm", [](const Tensor& t, int64_t d) { return norm(t, 2.0, {d}); }, {}, 2},
      {"logsumexp", [](const Tensor& t, int64_t d) { return logsumexp(t, {d}); }, {}, 2},
      {"var", [](const Tensor& t, int64_t d) { return var(t, {d}, 0); }, {}, 0},
      {"max", [](const Tensor& t, int64_t d) { return std::get<0>(max(t, d)); }, {}, 2},
      {"min", [](const Tensor& t, int64_t d) { return std::get<1>(min(t, d)); }, {}, 0},
      {"argmax", [](const Tensor& t, int64_t d) { return argmax(t, d); }, {}, 0},
      {"argmin", [](const Tensor& t, int64_t d) { return argmin(t, d, true); }, {}, 0},
      {"softmax", [](const Tensor& t, int64_t d) { return softmax(t, d); }, {}, 1},
      {"log_softmax", [](const Tensor& t, int64_t d) { return log_softmax(t, d); }, {}, 0},
      {"cumsum", [](const Tensor& t, int64_t d) { return cumsum(t, d); }, {}, 2},
      {"cumprod", [](const Tensor& t, int64_t d) { return cumprod(t, d); }, {}, 2},
      {"transpose", [](const Tensor& t, int64_t d) { return t.transpose(d, 0); }, {}, 2},
      {"squeeze", [](const Tensor& t, int64_t d) { return t.squeeze(d); }, {}, 2},
      {"unsqueeze", [](const Tensor& t, int64_t d) { return t.unsqueeze(d); }, {1}, 2},
      {"flatten", [](const Tensor& t, int64_t d) { return t.flatten(d, -1); }, {1}, 2},
      {"index_select", [&](const Tensor& t, int64_t d) { return index_select(t, d, i1); }, {}, 2},
      {"gather", [&](const Tensor& t, int64_t d) { return gather(t, d, i0); }, {}, 2},
      {"scatter", [&](const Tensor& t, int64_t d) { return scatter(t, d, i0, five); }, {}, 5},
      {"scatter_add",
       [&](const Tensor& t, int64_t d) { return scatter_add(t, d, i0, five); },
       {},
       7},
      {"sort", [](const Tensor& t, int64_t d) { return std::get<0>(sort(t, d)); }, {}, 2},
      {"topk", [](const Tensor& t, int64_t d) { return std::get<1>(topk(t, 1, d)); }, {}, 0},
  };
  for (const ZeroDimCase& c : cases) {
    for (int64_t d : {0, -1}) {
      SCOPED_TRACE(std::string(c.name) + " dim " + std::to_string(d));
      const Tensor r = c.fn(x, d);
      EXPECT_EQ(r.sizes(), c.shape);
      EXPECT_EQ(values(r), std::vector<double>{c.value});
    }
    for (int64_t d : {1, -2}) {
      SCOPED_TRACE(std::string(c.name) + " dim " + std::to_string(d));
      EXPECT_THROW(c.fn(x, d), IndexError);
      expect_error([&] { c.fn(x, d); }, {"out of range"});
    }
  }
}

TEST(ZeroDim, OpsThatNeedARealDimRefuseAZeroDTensor) {
  const Tensor x = full({}, 2.0);
  // IndexError, as PyTorch's "dimension specified as 0 but tensor has no dimensions".
  const std::vector<std::pair<const char*, std::function<void(int64_t)>>> index_errors = {
      {"[size]", [&](int64_t d) { x.size(d); }},
      {"[stride]", [&](int64_t d) { x.stride(d); }},
      {"[select]", [&](int64_t d) { x.select(d, 0); }},
      {"[narrow]", [&](int64_t d) { x.narrow(d, 0, 1); }},
      {"[slice]", [&](int64_t d) { x.slice(d, 0, 1); }},
      {"[unbind]", [&](int64_t d) { unbind(x, d); }},
  };
  for (const auto& [op, fn] : index_errors) {
    for (int64_t d : {0, -1}) {
      SCOPED_TRACE(std::string(op) + " dim " + std::to_string(d));
      EXPECT_THROW(fn(d), IndexError);
      expect_error([&] { fn(d); }, {op, "0-d", "has no dims"});
    }
  }
  // PyTorch raises RuntimeError for these ("expects at least a 1-dimensional tensor").
  EXPECT_THROW(split(x, 1, 0), ValueError);
  EXPECT_THROW(chunk(x, 1, 0), ValueError);
  EXPECT_THROW(cat({x, x}, 0), ValueError);
}

TEST(ShapeInPlace, EveryHandleSeesTheNewShapeAndGradIsRefused) {
  Tensor x = arange(6, TensorOptions(DType::Float32)).view({2, 3});
  Tensor alias = x;  // another handle of the same tensor
  x.unsqueeze_(0);
  EXPECT_EQ(alias.sizes(), (Shape{1, 2, 3}));
  x.squeeze_();
  x.t_();
  EXPECT_EQ(alias.sizes(), (Shape{3, 2}));
  EXPECT_EQ(values(alias), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  x.transpose_(0, 1);
  EXPECT_TRUE(x.is_contiguous());
  // A view keeps writing into its base's storage.
  Tensor base = zeros({2, 3});
  Tensor row = base.select(0, 1);
  row.unsqueeze_(1);
  row.fill_(7);
  EXPECT_EQ(values(base), (std::vector<double>{0, 0, 0, 7, 7, 7}));
  Tensor w = ones({3}).requires_grad_(true);
  EXPECT_THROW(w.unsqueeze_(0), NotImplementedError);
  {
    autograd::NoGradGuard no_grad;
    w.unsqueeze_(0);
  }
  EXPECT_EQ(w.sizes(), (Shape{1, 3}));
}

}  // namespace
}  // namespace ember
