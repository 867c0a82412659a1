// Capture regions: the composite ops (Note [Composite ops in a capture]) mark their kernel calls
// with their names, operands and attributes, nested regions name their parent, and what a
// region's body refuses or reads on the host is tagged with it; a replay runs their steps.
#include <gtest/gtest.h>

#include <ember/tensor.h>

#include "core/dispatch/capture.h"
#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

const capture::Region* region_named(const capture::Recording& rec, std::string_view op) {
  for (const capture::Region& r : rec.regions) {
    if (r.op == op) return &r;
  }
  return nullptr;
}

TEST(Capture, CompositeOpsMarkTheirKernelCalls) {
  Generator gen(1);
  const Tensor x = randn({3, 2, 4}, DType::Float32, &gen),
               w_ih = randn({5, 4}, DType::Float32, &gen),
               w_hh = randn({5, 5}, DType::Float32, &gen), h0 = zeros({2, 5});
  const Tensor index = testing::make({0, 1, 0, 1}, {1, 4}, DType::Int64);
  capture::CaptureScope scope({x});
  const auto [y, hn, cn] = rnn_layer(RnnMode::RNN_RELU, x, w_ih, w_hh, Tensor(), Tensor(), h0,
                                     Tensor(), /*reverse=*/true);
  const Tensor p = scatter_reduce(zeros({2, 4}), 0, index, ones({1, 4}), "prod", false);
  const Tensor u = rand({2, 2});
  capture::Recording rec = scope.finish();

  const capture::Region* rnn = region_named(rec, "rnn_layer");
  ASSERT_NE(rnn, nullptr);
  EXPECT_TRUE(rnn->complete);
  EXPECT_EQ(rnn->ints, (std::vector<int64_t>{3, 1}));  // RNN_RELU, reverse
  ASSERT_EQ(rnn->inputs.size(), 7u);
  EXPECT_EQ(rnn->inputs[0].sizes, x.sizes());
  EXPECT_EQ(rnn->inputs[3].slot, -1);  // no bias
  ASSERT_EQ(rnn->outputs.size(), 3u);
  EXPECT_EQ(rnn->outputs[0].sizes, (Shape{3, 2, 5}));
  EXPECT_EQ(rnn->outputs[2].slot, -1);  // no cell state
  EXPECT_LT(rnn->begin, rnn->end);      // its matmuls and activations
  EXPECT_EQ(rnn->parent, -1);

  // prod reads the longest group's length on the host: a guard inside its region.
  const capture::Region* prod = region_named(rec, "scatter_reduce_prod");
  ASSERT_NE(prod, nullptr);
  EXPECT_EQ(prod->ints, (std::vector<int64_t>{0, 0}));
  bool tagged = false;
  for (const capture::Guard& g : rec.guards) {
    const int32_t k = g.region;
    tagged = tagged || (k >= 0 && &rec.regions[static_cast<size_t>(k)] == prod);
  }
  EXPECT_TRUE(tagged);

  // The draw refuses the capture inside its region; nothing else refused it.
  const capture::Region* draw = region_named(rec, "rand");
  ASSERT_NE(draw, nullptr);
  EXPECT_FALSE(rec.refused.empty());
  ASSERT_FALSE(rec.refusals.empty());
  for (const capture::Refusal& r : rec.refusals) {
    ASSERT_GE(r.region, 0) << r.why;
    EXPECT_EQ(&rec.regions[static_cast<size_t>(r.region)], draw) << r.why;
  }
  EXPECT_EQ(draw->floats.size(), 2u);
}

TEST(Capture, RegionsNestAndOneLeftByAnExceptionStaysIncomplete) {
  capture::CaptureScope scope({});
  {
    capture::Composite outer("outer", {});
    {
      capture::Composite inner("inner", {});
      const Tensor t = ones({2}) + 1.0;
      inner.finish({&t});
    }
    try {
      capture::Composite failing("failing", {});
      throw std::runtime_error("the op threw");
    } catch (const std::runtime_error&) {
    }
    capture::refuse("a refusal in outer");
    const Tensor t = ones({2});
    outer.finish({&t});
  }
  capture::refuse("a refusal outside");
  const capture::Recording rec = scope.finish();
  ASSERT_EQ(rec.regions.size(), 3u);
  EXPECT_EQ(rec.regions[0].op, "outer");
  EXPECT_EQ(rec.regions[1].parent, 0);
  EXPECT_EQ(rec.regions[2].parent, 0);
  EXPECT_TRUE(rec.regions[0].complete && rec.regions[1].complete);
  EXPECT_FALSE(rec.regions[2].complete);
  EXPECT_TRUE(rec.regions[2].outputs.empty());
  EXPECT_LE(rec.regions[1].end, rec.regions[0].end);
  ASSERT_EQ(rec.refusals.size(), 2u);
  EXPECT_EQ(rec.refusals[0].region, 0);
  EXPECT_EQ(rec.refusals[1].region, -1);
  EXPECT_EQ(rec.refused, "a refusal in outer");
}

TEST(Capture, AReplayRunsACompositeOpsSteps) {
  // Regions are for a capture's readers: a compiled Elman layer replays its steps.
  Generator gen(2);
  const Tensor w_ih = randn({5, 4}, DType::Float32, &gen),
               w_hh = randn({5, 5}, DType::Float32, &gen), b = randn({5}, DType::Float32, &gen);
  const auto fn = [&](const std::vector<Tensor>& in) {
    auto [y, hn, cn] = rnn_layer(RnnMode::RNN_TANH, in[0], w_ih, w_hh, b, b, in[1], Tensor());
    return std::vector<Tensor>{y, hn};
  };
  CompiledFunction f(fn);
  for (int call = 0; call < 3; ++call) {
    const Tensor x = randn({3, 2, 4}, DType::Float32, &gen),
                 h0 = randn({2, 5}, DType::Float32, &gen);
    const std::vector<Tensor> got = f({x, h0}), want = fn({x, h0});
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      const std::vector<double> g = testing::values(got[i]), w = testing::values(want[i]);
      ASSERT_EQ(g.size(), w.size());
      for (size_t k = 0; k < g.size(); ++k) EXPECT_NEAR(g[k], w[k], 1e-5);
    }
  }
  EXPECT_EQ(f.report().captures, 1);
  EXPECT_GE(f.report().replays, 2);
}

}  // namespace
}  // namespace ember
