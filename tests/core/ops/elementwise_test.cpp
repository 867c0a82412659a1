#include <gtest/gtest.h>

#include <ember/ember.h>

namespace ember {
namespace {

TEST(Elementwise, AddBroadcastsRowAgainstColumn) {
  Tensor a = tensor({{1.0}, {2.0}});
  Tensor b = tensor({10.0, 20.0, 30.0});
  Tensor c = add(a, b);
  ASSERT_EQ(c.sizes(), Shape({2, 3}));
  const float expected[] = {11, 21, 31, 12, 22, 32};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c.data_ptr<float>()[i], expected[i]);
}

TEST(Elementwise, MismatchedShapesThrowWithBothShapes) {
  try {
    add(zeros({2, 3}), zeros({4}));
    FAIL() << "expected ember::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[add] shapes [2, 3] and [4] cannot be broadcast"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ember
