// The core's composite ops that PyTorch's Python names need (round to decimals, trunc, dot,
// movedim, squeeze of several dims, ...): each checked against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <ember/ember.h>

namespace ember {
namespace {

std::vector<double> values(const Tensor& t) {
  const Tensor c = t.to(DType::Float64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

Tensor f64(std::vector<double> v, IntList sizes) {
  return from_vector(v, sizes, TensorOptions(DType::Float64));
}
Tensor f64(std::vector<double> v) {
  return f64(v, {static_cast<int64_t>(v.size())});
}

TEST(CompositeOps, RoundToDecimalsHalfToEven) {
  // 0.125 * 100 = 12.5 rounds to 12 (half to even); negative decimals divide by the power of
  // ten (1234.5 / 10 = 123.45 -> 123 -> 1230) as PyTorch does, so no inexact 0.1 enters.
  const Tensor x = f64({1.2345, -2.5, 0.125, 1234.5});
  EXPECT_EQ(values(round(x, 2)), (std::vector<double>{1.23, -2.5, 0.12, 1234.5}));
  EXPECT_EQ(values(round(x, 0)), (std::vector<double>{1.0, -2.0, 0.0, 1234.0}));
  EXPECT_EQ(values(round(x, -1)), (std::vector<double>{0.0, -0.0, 0.0, 1230.0}));
  EXPECT_EQ(round(x.to(DType::Float32), 1).dtype(), DType::Float32);
}

TEST(CompositeOps, TruncKeepsTheDtypeAndRoundsTowardZero) {
  const Tensor x = f64({-2.7, -0.5, 0.0, 0.5, 2.7});
  EXPECT_EQ(values(trunc(x)), (std::vector<double>{-2.0, -0.0, 0.0, 0.0, 2.0}));
  const Tensor i = from_vector(std::vector<int64_t>{-3, 4}, {2}, TensorOptions(DType::Int64));
  EXPECT_EQ(trunc(i).dtype(), DType::Int64);
}

TEST(CompositeOps, ReciprocalOfIntegersIsFloating) {
  const Tensor i = from_vector(std::vector<int64_t>{2, -4}, {2}, TensorOptions(DType::Int64));
  const Tensor r = reciprocal(i);
  EXPECT_TRUE(is_floating(r.dtype()));
  EXPECT_EQ(values(r), (std::vector<double>{0.5, -0.25}));
}

TEST(CompositeOps, LogicalXorAndEqual) {
  const Tensor a = f64({0.0, 1.0, 2.0, 0.0}), b = f64({0.0, 0.0, 3.0, -1.0});
  const Tensor x = logical_xor(a, b);
  EXPECT_EQ(x.dtype(), DType::Bool);
  EXPECT_EQ(values(x), (std::vector<double>{0, 1, 0, 1}));
  EXPECT_TRUE(equal(a, a.clone()));
  EXPECT_FALSE(equal(a, b));
  EXPECT_FALSE(equal(a, a.reshape({2, 2})));  // same elements, other shape
}

TEST(CompositeOps, CountNonzero) {
  const Tensor x = f64({0, 1, 2, 0, 0, 3}, {2, 3});
  EXPECT_EQ(count_nonzero(x).item(), 3.0);
  EXPECT_EQ(values(count_nonzero(x, {0})), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(count_nonzero(x, {1}).dtype(), DType::Int64);
}

TEST(CompositeOps, ProductsOfVectors) {
  const Tensor a = f64({1, 2, 3}), b = f64({4, 5, 6});
  EXPECT_EQ(dot(a, b).item(), 32.0);
  EXPECT_EQ(values(outer(a, f64({1, -1}))), (std::vector<double>{1, -1, 2, -2, 3, -3}));
  const Tensor m = f64({1, 0, 0, 0, 2, 0}, {2, 3});
  EXPECT_EQ(values(mv(m, a)), (std::vector<double>{1, 4}));
  EXPECT_EQ(trace(f64({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3})).item(), 15.0);
  EXPECT_THROW(dot(m, a), Error);
  EXPECT_THROW(outer(m, a), Error);
  EXPECT_THROW(mv(a, a), Error);
  EXPECT_THROW(trace(a), Error);
}

TEST(CompositeOps, MovedimKeepsTheOtherDimsInOrder) {
  const Tensor x = zeros({2, 3, 4, 5});
  EXPECT_EQ(movedim(x, {0}, {-1}).sizes(), (Shape{3, 4, 5, 2}));
  EXPECT_EQ(movedim(x, {3, 0}, {0, 1}).sizes(), (Shape{5, 2, 3, 4}));
  EXPECT_THROW(movedim(x, {0, 0}, {1, 2}), Error);
  EXPECT_THROW(movedim(x, {0}, {1, 2}), Error);
  EXPECT_EQ(movedim(ones(Shape{}), {0}, {-1}).dim(), 0);
}

TEST(CompositeOps, SqueezeOfSeveralDims) {
  const Tensor x = zeros({1, 3, 1, 1});
  EXPECT_EQ(squeeze(x, {0, 2}).sizes(), (Shape{3, 1}));
  EXPECT_EQ(squeeze(x, {1}).sizes(), (Shape{1, 3, 1, 1}));  // size 3 stays
  EXPECT_EQ(squeeze(x, {}).sizes(), (Shape{3}));
  Tensor y = zeros({1, 2, 1});
  squeeze_(y, {-1, 0});
  EXPECT_EQ(y.sizes(), (Shape{2}));
  EXPECT_THROW(squeeze(x, {4}), Error);
}

TEST(CompositeOps, Unflatten) {
  const Tensor x = arange(0, 24).reshape({2, 12});
  const Tensor u = unflatten(x, 1, {3, -1});
  EXPECT_EQ(u.sizes(), (Shape{2, 3, 4}));
  EXPECT_EQ(values(u.select(1, 2).select(0, 1)), (std::vector<double>{20, 21, 22, 23}));
  EXPECT_EQ(unflatten(x, -2, {1, 2}).sizes(), (Shape{1, 2, 12}));
  EXPECT_THROW(unflatten(x, 1, {5, 5}), Error);
}

TEST(CompositeOps, HstackAndVstack) {
  const Tensor a = f64({1, 2}), b = f64({3});
  EXPECT_EQ(values(hstack({a, b})), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(vstack({a, f64({3, 4})}).sizes(), (Shape{2, 2}));
  const Tensor m = f64({1, 2}, {2, 1});
  EXPECT_EQ(values(hstack({m, m})), (std::vector<double>{1, 1, 2, 2}));
}

TEST(CompositeOps, MaskedSelectBroadcasts) {
  const Tensor x = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor row = gt(f64({1, 0, 1}), 0.5);
  EXPECT_EQ(values(masked_select(x, row)), (std::vector<double>{1, 3, 4, 6}));
}

TEST(CompositeOps, ScatterANumber) {
  const Tensor x = zeros({2, 3}, TensorOptions(DType::Float64));
  const Tensor idx = from_vector(std::vector<int64_t>{2, 0}, {2, 1}, TensorOptions(DType::Int64));
  EXPECT_EQ(values(scatter(x, 1, idx, Scalar(7.0))), (std::vector<double>{0, 0, 7, 7, 0, 0}));
}

}  // namespace
}  // namespace ember
