#include <gtest/gtest.h>

#include <vector>

#include <ember/ember.h>

namespace ember {
namespace {

TEST(InternalOverlap, ViewsOfOrdinaryOpsAreOneToOne) {
  const Tensor x = zeros({4, 6});
  EXPECT_EQ(internal_overlap(x), InternalOverlap::No);
  EXPECT_EQ(internal_overlap(x.t()), InternalOverlap::No);
  EXPECT_EQ(internal_overlap(x.narrow(1, 1, 3)), InternalOverlap::No);
  EXPECT_EQ(internal_overlap(x.slice(1, 0, 6, 2)), InternalOverlap::No);
  EXPECT_EQ(internal_overlap(x.select(1, 2)), InternalOverlap::No);
  EXPECT_EQ(internal_overlap(x.reshape({2, 2, 6}).permute({2, 0, 1})), InternalOverlap::No);
  EXPECT_EQ(internal_overlap(zeros({1}).expand({1})), InternalOverlap::No);  // one element
  EXPECT_EQ(internal_overlap(zeros({0, 3}).as_strided({0, 3}, {0, 0})), InternalOverlap::No);
}

TEST(InternalOverlap, AStrideZeroOverSeveralElementsOverlaps) {
  EXPECT_EQ(internal_overlap(zeros({1}).expand({4})), InternalOverlap::Yes);
  EXPECT_EQ(internal_overlap(zeros({3, 1}).expand({3, 5})), InternalOverlap::Yes);
  EXPECT_EQ(internal_overlap(zeros({5}).expand({2, 5}).t()), InternalOverlap::Yes);
}

TEST(InternalOverlap, AsStridedLayoutsAreDecidedExactly) {
  const Tensor s = zeros({64});
  // Sliding windows (unfold): element (i + 1, j) is element (i, j + 1).
  EXPECT_EQ(internal_overlap(s.as_strided({3, 4}, {1, 1})), InternalOverlap::Yes);
  EXPECT_EQ(internal_overlap(s.as_strided({5, 3}, {2, 1})), InternalOverlap::Yes);
  // Offsets 3i + 2j for i < 2, j < 3: 0 2 4 3 5 7, all distinct though the strides do not nest.
  EXPECT_EQ(internal_overlap(s.as_strided({2, 3}, {3, 2})), InternalOverlap::No);
  // With j < 4: 3 * 2 = 2 * 3, element (2, 0) is element (0, 3).
  EXPECT_EQ(internal_overlap(s.as_strided({3, 4}, {3, 2})), InternalOverlap::Yes);
  // No two dims collide, three do: 5 = 3 + 2.
  EXPECT_EQ(internal_overlap(s.as_strided({2, 2, 2}, {5, 3, 2})), InternalOverlap::Yes);
  EXPECT_EQ(internal_overlap(s.as_strided({2, 2, 2}, {7, 3, 2})), InternalOverlap::No);
}

TEST(MemOverlap, ClassifiesViewsOfOneStorage) {
  const Tensor x = zeros({6});
  EXPECT_EQ(mem_overlap(x, x), MemOverlap::Full);
  EXPECT_EQ(mem_overlap(x, x.view({6})), MemOverlap::Full);  // another impl, same geometry
  EXPECT_EQ(mem_overlap(x.narrow(0, 1, 5), x.narrow(0, 0, 5)), MemOverlap::Partial);
  EXPECT_EQ(mem_overlap(x.narrow(0, 0, 3), x.narrow(0, 3, 3)), MemOverlap::None);
  EXPECT_EQ(mem_overlap(x, x.narrow(0, 0, 1).expand({6})), MemOverlap::Partial);
  EXPECT_EQ(mem_overlap(zeros({6}), x), MemOverlap::None);
  EXPECT_EQ(mem_overlap(x, zeros({0})), MemOverlap::None);

  const Tensor m = zeros({4, 4});
  EXPECT_EQ(mem_overlap(m, m.t()), MemOverlap::Permuted);
  // Interleaved but disjoint: the byte ranges meet, the elements never do.
  EXPECT_EQ(mem_overlap(m.select(1, 0), m.select(1, 1)), MemOverlap::None);
  EXPECT_EQ(mem_overlap(m.slice(0, 0, 4, 2), m.slice(0, 1, 4, 2)), MemOverlap::None);
  const std::vector<Tensor> halves = chunk(m, 2, 1);
  EXPECT_EQ(mem_overlap(halves[0], halves[1]), MemOverlap::None);
  // Rows 0-1 and columns 0-1 share the top-left 2x2 block.
  EXPECT_EQ(mem_overlap(m.narrow(0, 0, 2), m.t().narrow(0, 0, 2)), MemOverlap::Partial);
  EXPECT_EQ(mem_overlap(m.narrow(1, 0, 2), m.narrow(1, 1, 2)), MemOverlap::Partial);
}

TEST(MemOverlap, SeesTwoStoragesOverOneBlock) {
  std::vector<float> buf(8, 0.0f);
  const Tensor a = from_blob(buf.data(), {8}, f32);
  const Tensor b = from_blob(buf.data() + 1, {4}, f32);
  const Tensor c = from_blob(buf.data(), {8}, f32);
  EXPECT_FALSE(a.is_same_storage(b));
  EXPECT_EQ(mem_overlap(a, b), MemOverlap::Partial);
  EXPECT_EQ(mem_overlap(a, c), MemOverlap::Full);
  EXPECT_EQ(mem_overlap(a.narrow(0, 0, 1), b), MemOverlap::None);
}

}  // namespace
}  // namespace ember
