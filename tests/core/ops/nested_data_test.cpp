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

// [[1, 2], [3, 4]] with the given leaves.
Tensor two_by_two(Scalar a, Scalar b, Scalar c, Scalar d, std::optional<DType> dtype = {}) {
  NestedData n;
  n.begin_sequence(2);
  n.begin_sequence(2);
  n.value(a);
  n.value(b);
  n.end_sequence();
  n.begin_sequence(2);
  n.value(c);
  n.value(d);
  n.end_sequence();
  n.end_sequence();
  return n.finish(dtype);
}

TEST(NestedData, ShapeAndNaturalDtypeFollowTheValues) {
  Tensor i = two_by_two(1, 2, 3, 4);
  EXPECT_EQ(i.sizes(), Shape({2, 2}));
  EXPECT_EQ(i.dtype(), DType::Int64);
  EXPECT_EQ(values(i), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(two_by_two(true, false, true, true).dtype(), DType::Bool);
  EXPECT_EQ(two_by_two(true, 2, false, 1).dtype(), DType::Int64);
  Tensor f = two_by_two(1, 2.5, true, 4);
  EXPECT_EQ(f.dtype(), default_dtype());
  EXPECT_EQ(values(f), (std::vector<double>{1, 2.5, 1, 4}));
}

TEST(NestedData, IntegersStayExactUntilAFloatAppears) {
  const int64_t big = (int64_t{1} << 62) + 1;  // not a double
  Tensor t = two_by_two(big, 0, -big, 1);
  EXPECT_EQ(t.contiguous().data_ptr<int64_t>()[0], big);
  EXPECT_EQ(t.contiguous().data_ptr<int64_t>()[2], -big);
}

TEST(NestedData, EmptyDataIsFloatAndEmptySequencesEndTheShape) {
  NestedData none;
  none.begin_sequence(0);
  none.end_sequence();
  Tensor e = none.finish();
  EXPECT_EQ(e.sizes(), Shape({0}));
  EXPECT_EQ(e.dtype(), default_dtype());
  NestedData rows;  // [[], []]
  rows.begin_sequence(2);
  for (int i = 0; i < 2; ++i) {
    rows.begin_sequence(0);
    rows.end_sequence();
  }
  rows.end_sequence();
  EXPECT_EQ(rows.finish().sizes(), Shape({2, 0}));
  NestedData scalar;
  scalar.value(3.5);
  EXPECT_EQ(scalar.finish().dim(), 0);
}

TEST(NestedData, RaggedDataIsRefusedWhereItBreaksTheShape) {
  NestedData a;  // [[1, 2], [3]]
  a.begin_sequence(2);
  a.begin_sequence(2);
  a.value(1);
  a.value(2);
  a.end_sequence();
  EXPECT_THROW(a.begin_sequence(1), ValueError);
  NestedData b;  // [[1], 2]
  b.begin_sequence(2);
  b.begin_sequence(1);
  b.value(1);
  b.end_sequence();
  EXPECT_THROW(b.value(2), ValueError);
  NestedData c;  // [1, [2]]
  c.begin_sequence(2);
  c.value(1);
  EXPECT_THROW(c.begin_sequence(1), ValueError);
  NestedData d;  // [[], [1]]
  d.begin_sequence(2);
  d.begin_sequence(0);
  d.end_sequence();
  EXPECT_THROW(d.begin_sequence(1), ValueError);
}

TEST(NestedData, NestingDeeperThanATensorsDimsIsRefusedOnEntry) {
  NestedData n;
  for (int i = 0; i < EMBER_MAX_DIMS; ++i) n.begin_sequence(1);
  EXPECT_THROW(n.begin_sequence(1), ValueError);
}

TEST(NestedData, AnIntegerDtypeMustHoldEveryValue) {
  EXPECT_THROW(two_by_two(1, 300, 3, 4, DType::UInt8), ValueError);
  EXPECT_THROW(two_by_two(1, -256, 3, 4, DType::UInt8), ValueError);
  // As in PyTorch, uint8 takes a negative int that wraps once (-1 is 255).
  EXPECT_EQ(values(two_by_two(1, -1, 3, 4, DType::UInt8))[1], 255);
  EXPECT_THROW(two_by_two(1.0, std::nan(""), 3, 4, DType::Int32), ValueError);
  EXPECT_EQ(values(two_by_two(1, 255, 3, 4, DType::UInt8)), (std::vector<double>{1, 255, 3, 4}));
  // Floating dtypes take any number, as in PyTorch.
  EXPECT_TRUE(std::isinf(values(two_by_two(1e40, 0, 0, 0, DType::Float32))[0]));
}

}  // namespace
}  // namespace ember
