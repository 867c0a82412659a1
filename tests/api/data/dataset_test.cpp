// Dataset, TensorDataset and the samplers.
#include <algorithm>
#include <numeric>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include <ember/ember.h>

#include "ember/data.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::data {
namespace {

using testing::contains;

/** Expects `fn` to throw ember::Error containing `part`. */
template <typename Fn>
void expect_error(Fn&& fn, const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "no ember::Error thrown; expected one containing '" << part << "'";
  } catch (const Error& e) {
    EXPECT_PRED2(contains, e.what(), part);
  }
}

std::vector<int64_t> values_i64(const Tensor& t) {
  Tensor c = t.to(DType::Int64).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

/** Example i is {[i, 10 i] float32, label i % 3 as 0-d int64}. */
class Pairs : public Dataset {
 public:
  explicit Pairs(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  std::vector<Tensor> get(int64_t i) const override {
    return {tensor({static_cast<double>(i), 10.0 * i}), tensor(i % 3)};
  }

 private:
  int64_t n_;
};

TEST(Dataset, DefaultGetBatchStacksExamples) {
  Pairs ds(6);
  std::vector<Tensor> b = ds.get_batch({4, 1, 4});
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].sizes(), Shape({3, 2}));
  EXPECT_EQ(b[0].dtype(), DType::Float32);
  EXPECT_EQ(values_i64(b[0]), (std::vector<int64_t>{4, 40, 1, 10, 4, 40}));
  EXPECT_EQ(b[1].sizes(), Shape({3}));
  EXPECT_EQ(values_i64(b[1]), (std::vector<int64_t>{1, 1, 1}));
  expect_error([&] { ds.get_batch({}); }, "[data.get_batch] no indices");
}

TEST(Dataset, DefaultGetBatchRejectsRaggedExamples) {
  class Ragged : public Dataset {
   public:
    int64_t size() const override { return 2; }
    std::vector<Tensor> get(int64_t i) const override {
      if (i == 0) return {ones({1})};
      return {ones({1}), ones({1})};
    }
  } ds;
  expect_error([&] { ds.get_batch({0, 1}); }, "[data.get_batch] example 1 has 2 fields");
}

TEST(TensorDataset, GetAndGetBatch) {
  Tensor x = arange(12, TensorOptions(DType::Float32)).reshape({4, 3});
  Tensor y = tensor({7, 8, 9, 10});
  TensorDataset ds({x, y});
  EXPECT_EQ(ds.size(), 4);
  std::vector<Tensor> e = ds.get(2);
  EXPECT_EQ(e[0].sizes(), Shape({3}));
  EXPECT_EQ(values_i64(e[0]), (std::vector<int64_t>{6, 7, 8}));
  EXPECT_EQ(e[1].dim(), 0);
  EXPECT_EQ(e[1].item(), 9.0);
  std::vector<Tensor> b = ds.get_batch({3, 0, 3});
  EXPECT_EQ(b[0].sizes(), Shape({3, 3}));
  EXPECT_EQ(values_i64(b[0]), (std::vector<int64_t>{9, 10, 11, 0, 1, 2, 9, 10, 11}));
  EXPECT_EQ(values_i64(b[1]), (std::vector<int64_t>{10, 7, 10}));
  // The index_select path gives what stacking get(i) gives.
  std::vector<Tensor> stacked = ds.Dataset::get_batch({3, 0, 3});
  EXPECT_EQ(values_i64(stacked[0]), values_i64(b[0]));
  EXPECT_EQ(values_i64(stacked[1]), values_i64(b[1]));
  EXPECT_EQ(ds.get_batch({})[0].sizes(), Shape({0, 3}));
  // Non-contiguous fields work too.
  TensorDataset t({x.t()});
  EXPECT_EQ(values_i64(t.get_batch({2, 0})[0]), (std::vector<int64_t>{2, 5, 8, 11, 0, 3, 6, 9}));
}

TEST(TensorDataset, RejectsBadFieldsAndIndices) {
  expect_error([] { TensorDataset({}); }, "[data.TensorDataset] needs at least one field");
  expect_error(
      [] {
        TensorDataset({ones({3}), ones({4, 2})});
      },
      "[data.TensorDataset] fields differ in size(0): field 0 has 3 examples but field 1 "
      "has 4");
  expect_error([] { TensorDataset({ones({3}), ones({})}); }, "field 1 is 0-d");
  expect_error([] { TensorDataset({Tensor()}); }, "field 0 is undefined");
  TensorDataset ds({ones({3})});
  expect_error([&] { ds.get(3); }, "[data.TensorDataset] index 3 out of range for 3 examples");
  expect_error([&] { ds.get(-1); }, "index -1 out of range");
  expect_error([&] { ds.get_batch({0, 5}); }, "index 5 out of range");
}

TEST(Sampler, SequentialIsTheIdentity) {
  SequentialSampler s;
  EXPECT_EQ(s.indices(5, 3), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(s.indices(0, 0).empty());
  expect_error([&] { s.indices(-1, 0); }, "[data.SequentialSampler] dataset size must be >= 0");
}

TEST(Sampler, RandomIsAReproduciblePermutationPerEpoch) {
  RandomSampler a(42), b(42), c(43);
  std::set<std::vector<int64_t>> seen;
  for (uint64_t epoch = 0; epoch < 20; ++epoch) {
    std::vector<int64_t> p = a.indices(50, epoch);
    EXPECT_EQ(p, b.indices(50, epoch));
    EXPECT_EQ(p, a.indices(50, epoch));
    EXPECT_NE(p, c.indices(50, epoch));
    std::vector<int64_t> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> iota(50);
    std::iota(iota.begin(), iota.end(), 0);
    EXPECT_EQ(sorted, iota);
    seen.insert(p);
  }
  EXPECT_EQ(seen.size(), 20u);  // a new order every epoch
  EXPECT_TRUE(a.indices(0, 0).empty());
  EXPECT_EQ(a.indices(1, 5), std::vector<int64_t>{0});
}

TEST(Sampler, RandomIsRoughlyUniform) {
  // Where element 0 lands over 4000 epochs of a size-4 shuffle: each place about 1000 times.
  RandomSampler s(1);
  int counts[4] = {};
  for (uint64_t epoch = 0; epoch < 4000; ++epoch) {
    std::vector<int64_t> p = s.indices(4, epoch);
    counts[std::find(p.begin(), p.end(), 0) - p.begin()]++;
  }
  for (int c : counts) {
    EXPECT_GT(c, 880);
    EXPECT_LT(c, 1120);
  }
}

}  // namespace
}  // namespace ember::data
