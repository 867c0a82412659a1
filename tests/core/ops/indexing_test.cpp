#include <gtest/gtest.h>

#include <vector>

#include <ember/ember.h>

namespace ember {
namespace {

using indexing::Ellipsis;
using indexing::None;
using indexing::Slice;

std::vector<double> values(const Tensor& t) {
  const Tensor c = t.to(DType::Float64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

Tensor i64(std::vector<int64_t> v, IntList sizes) {
  return from_vector(v, sizes, TensorOptions(DType::Int64));
}

Tensor f64(std::vector<double> v, IntList sizes) {
  return from_vector(v, sizes, TensorOptions(DType::Float64));
}

// x[i][j][k] = 100 i + 10 j + k, for hand-checked positions.
Tensor grid() {
  std::vector<double> v;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) v.push_back(100 * i + 10 * j + k);
  return from_vector(v, {2, 3, 4}, TensorOptions(DType::Float64));
}

TEST(Indexing, BasicItemsMakeAViewOfTheSameStorage) {
  Tensor x = grid();
  Tensor v = index(x, {1, Slice(None, None, 2), None, Ellipsis});
  EXPECT_EQ(v.sizes(), Shape({2, 1, 4}));
  EXPECT_EQ(values(v), (std::vector<double>{100, 101, 102, 103, 120, 121, 122, 123}));
  v.fill_(-1);  // a view: the write reaches x
  EXPECT_EQ(values(index(x, {1, 0, 3})), std::vector<double>{-1});
  EXPECT_EQ(values(index(x, {0, 0, 3})), std::vector<double>{3});
}

TEST(Indexing, NegativeIntegersAndSliceEndsFollowPythonsRules) {
  Tensor x = grid();
  EXPECT_EQ(values(index(x, {-1, -1, -1})), std::vector<double>{123});
  // Ends past the dim clamp; a negative start counts from the end; stop before start is empty.
  EXPECT_EQ(index(x, {Slice(-100, 100)}).sizes(), Shape({2, 3, 4}));
  EXPECT_EQ(values(index(x, {0, 0, Slice(-2)})), (std::vector<double>{2, 3}));
  EXPECT_EQ(index(x, {Slice(), Slice(2, 1)}).sizes(), Shape({2, 0, 4}));
  EXPECT_EQ(values(index(x, {0, 0, Slice(1, None, 2)})), (std::vector<double>{1, 3}));
}

TEST(Indexing, BoolItemsInsertADimOfSizeOneOrZero) {
  Tensor x = grid();
  EXPECT_EQ(index(x, {true}).sizes(), Shape({1, 2, 3, 4}));
  EXPECT_EQ(index(x, {Ellipsis, false}).sizes(), Shape({2, 3, 4, 0}));
}

TEST(Indexing, EmptyIndexIsANewViewNotTheSameTensor) {
  Tensor x = grid();
  Tensor v = index(x, std::span<const indexing::TensorIndex>{});
  EXPECT_FALSE(v.is_same(x));
  EXPECT_EQ(v.data_ptr<double>(), x.data_ptr<double>());
}

TEST(Indexing, BadItemsAreClearErrors) {
  Tensor x = grid();
  EXPECT_THROW(index(x, {2}), IndexError);
  EXPECT_THROW(index(x, {0, 3}), IndexError);
  EXPECT_THROW(index(x, {0, 0, 0, 0}), IndexError);
  EXPECT_THROW(index(x, {Ellipsis, 0, Ellipsis}), IndexError);
  EXPECT_THROW(index(x, {Slice(0, 2, 0)}), ValueError);
  EXPECT_THROW(index(x, {Slice(0, 2, -1)}), ValueError);
  EXPECT_THROW(index(x, {ones({2})}), IndexError);  // float indices
  EXPECT_THROW(index(x, {i64({0, 5}, {2})}), IndexError);
  EXPECT_THROW(index(x, {Slice(), i64({-4}, {1})}), IndexError);
  EXPECT_THROW(index(x, {full({3}, true, TensorOptions(DType::Bool))}), IndexError);  // mask size
  EXPECT_THROW(index(x, {Tensor()}), TypeError);
  EXPECT_THROW(index(Tensor(), {0}), TypeError);
}

TEST(Indexing, AdjacentAdvancedIndicesReplaceTheirDims) {
  Tensor x = grid();
  // x[:, [0, 2], [1, -1]] -> shape [2, 2]: element (i, n) = x[i][j_n][k_n].
  Tensor r = index(x, {Slice(), i64({0, 2}, {2}), i64({1, -1}, {2})});
  EXPECT_EQ(r.sizes(), Shape({2, 2}));
  EXPECT_EQ(values(r), (std::vector<double>{1, 23, 101, 123}));
}

TEST(Indexing, SeparatedAdvancedIndicesLeadTheResult) {
  Tensor x = grid();
  // x[[0, 1], :, [3, 0]] -> B = [2] leads: shape [2, 3]; (n, j) = x[i_n][j][k_n].
  Tensor r = index(x, {i64({0, 1}, {2}), Slice(), i64({3, 0}, {2})});
  EXPECT_EQ(r.sizes(), Shape({2, 3}));
  EXPECT_EQ(values(r), (std::vector<double>{3, 13, 23, 100, 110, 120}));
}

TEST(Indexing, IndexTensorsBroadcastTogether) {
  Tensor x = grid();
  // x[0, [[0], [2]], [1, 3]] -> B = [2, 2]: (a, b) = x[0][j_a][k_b].
  Tensor r = index(x, {0, i64({0, 2}, {2, 1}), i64({1, 3}, {2})});
  EXPECT_EQ(r.sizes(), Shape({2, 2}));
  EXPECT_EQ(values(r), (std::vector<double>{1, 3, 21, 23}));
}

TEST(Indexing, BoolMasksPickTheirTrueElements) {
  Tensor x = grid();
  Tensor mask = gt(f64({1, 0, 1}, {3}), 0.5);
  Tensor r = index(x, {1, mask});
  EXPECT_EQ(r.sizes(), Shape({2, 4}));
  EXPECT_EQ(values(r), (std::vector<double>{100, 101, 102, 103, 120, 121, 122, 123}));
  Tensor big = gt(x, 121.0);
  EXPECT_EQ(values(index(x, {big})), (std::vector<double>{122, 123}));
}

TEST(Indexing, PutWritesNumbersAndBroadcastTensorsInPlace) {
  Tensor x = zeros({3, 4}, TensorOptions(DType::Float64));
  index_put_(x, {Slice(1), Slice(None, None, 3)}, 7.0);
  index_put_(x, {0, i64({1, 2}, {2})}, f64({1, 2}, {2}));
  EXPECT_EQ(values(x), (std::vector<double>{0, 1, 2, 0, 7, 0, 0, 7, 7, 0, 0, 7}));
  // A mask of x's shape with a number, and a row of values broadcast over advanced rows.
  index_put_(x, {eq(x, 7.0)}, -1.0);
  index_put_(x, {i64({0, 2}, {2})}, f64({9, 8, 7, 6}, {4}));
  EXPECT_EQ(values(x), (std::vector<double>{9, 8, 7, 6, -1, 0, 0, -1, 9, 8, 7, 6}));
}

TEST(Indexing, PutOfAValueWithHistoryGivesTheTensorItsHistory) {
  Tensor h = f64({2, 3}, {2}).requires_grad_(true);
  Tensor out = zeros({4}, TensorOptions(DType::Float64));
  index_put_(out, {i64({3, 0}, {2})}, mul(h, h));
  ASSERT_TRUE(out.requires_grad());
  EXPECT_EQ(values(out.detach()), (std::vector<double>{9, 0, 0, 4}));
  sum(mul(out, f64({1, 10, 100, 1000}, {4}))).backward();
  // d/dh of 1000 h0^2 + 1 h1^2.
  EXPECT_EQ(values(h.grad()), (std::vector<double>{4000, 6}));
}

TEST(Indexing, AdvancedIndexingIsDifferentiable) {
  Tensor x = grid().requires_grad_(true);
  Tensor r = index(x, {Slice(), i64({0, 0}, {2}), 1});
  sum(r).backward();
  std::vector<double> want(24, 0.0);
  want[0 * 12 + 0 * 4 + 1] = 2;  // picked twice
  want[1 * 12 + 0 * 4 + 1] = 2;
  EXPECT_EQ(values(x.grad()), want);
}

}  // namespace
}  // namespace ember
