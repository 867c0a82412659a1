#include <gtest/gtest.h>

#include <ember/ember.h>

namespace ember {
namespace {

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

TEST(Tensor, PrintsLikePyTorch) {
  EXPECT_EQ(tensor({{1.0, 2.5}, {3.0, 4.0}}).str(), "tensor([[1.0000, 2.5000],\n        [3.0000, 4.0000]])");
  EXPECT_EQ(tensor({1, 2, 3}).str(), "tensor([1, 2, 3])");
}

}  // namespace
}  // namespace ember
