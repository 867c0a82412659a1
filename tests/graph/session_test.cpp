// graph::Session: planned runs give Graph::run's outputs on cpu and reference, reuse buffers by
// lifetime, plan again per input signature, and say why a run could not be planned.
#include <gtest/gtest.h>

#include <ember/graph/graph.h>
#include <ember/graph/optimize.h>
#include <ember/graph/session.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::graph {
namespace {

using ember::testing::values;

Tensor randn_of(IntList sizes, uint64_t seed) {
  Generator gen(seed);
  return randn(sizes, DType::Float32, &gen);
}

ValueInfo f32(const std::string& name, std::vector<Dim> dims) {
  return {name, DType::Float32, std::move(dims)};
}

/** conv, relu, conv, add (a residual), relu, global pool, flatten: a small ResNet block. */
Graph block() {
  Graph g;
  g.add_input(f32("x", {{-1, "N"}, {4, ""}, {8, ""}, {8, ""}}));
  g.add_initializer("w1", randn_of({4, 4, 3, 3}, 1));
  g.add_initializer("b1", randn_of({4}, 2));
  g.add_initializer("w2", randn_of({4, 4, 3, 3}, 3));
  const Attribute pads = std::vector<int64_t>{1, 1, 1, 1};
  g.add_node({"conv", "c1", {"x", "w1", "b1"}, {"c1"}, {{"pads", pads}}});
  g.add_node({"relu", "r1", {"c1"}, {"h"}, {}});
  g.add_node({"conv", "c2", {"h", "w2"}, {"c2"}, {{"pads", pads}}});
  g.add_node({"add", "a", {"c2", "x"}, {"s"}, {}});
  g.add_node({"relu", "r2", {"s"}, {"r"}, {}});
  g.add_node({"global_average_pool", "gap", {"r"}, {"p"}, {}});
  g.add_node({"flatten", "f", {"p"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  g.add_output({"r", DType::Float32, std::nullopt});
  return g;
}

void expect_same(const std::map<std::string, Tensor>& want,
                 const std::map<std::string, Tensor>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (const auto& [name, t] : want) {
    const Tensor& u = got.at(name);
    EXPECT_EQ(t.sizes(), u.sizes()) << what << " " << name;
    EXPECT_TRUE(u.is_contiguous()) << what << " " << name;
    const std::vector<double> x = values(t.to(Device::cpu())), y = values(u.to(Device::cpu()));
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_NEAR(x[i], y[i], 1e-5 * (1 + std::abs(x[i]))) << what << " " << name << " " << i;
    }
  }
}

TEST(GraphSession, PlannedRunsGiveTheGraphsOutputs) {
  const Graph base = block();  // making its weights loads the backends find_device_type reads
  for (Device d : {Device::cpu(), Device(find_device_type("reference"), 0)}) {
    for (OptLevel level : {OptLevel::None, OptLevel::All}) {
      const Graph g = optimize(base, level);
      Session s(g, d);
      const std::string what = fmt::format("{} level {}", d, static_cast<int>(level));
      const Tensor x1 = randn_of({2, 4, 8, 8}, 10), x2 = randn_of({2, 4, 8, 8}, 11);
      const std::map<std::string, Tensor> first = s.run({{"x", x1}});
      expect_same(g.run({{"x", x1}}, d), first, what + " first run");
      // Replays: new inputs of the same signature give new outputs, and the first run's
      // outputs are not overwritten (outputs are fresh tensors).
      const std::vector<double> kept = values(first.at("y").to(Device::cpu()));
      for (int i = 0; i < 3; ++i) expect_same(g.run({{"x", x2}}, d), s.run({{"x", x2}}), what);
      EXPECT_EQ(values(first.at("y").to(Device::cpu())), kept) << what;
      const MemoryPlan m = s.memory_plan();
      EXPECT_EQ(m.plans, 1) << what;
      EXPECT_EQ(m.planned_runs, 3) << what;
      EXPECT_EQ(m.unplanned_runs, 1) << what;
      EXPECT_EQ(m.unplanned_reason, "") << what;
      uint64_t weights = 0;
      for (const auto& [name, t] : g.initializers()) weights += t.nbytes();
      EXPECT_EQ(m.weight_bytes, weights) << what;
      EXPECT_EQ(m.peak_bytes, m.weight_bytes + m.planned_bytes) << what;
      // The block's values die one after another: buffers are shared.
      EXPECT_GT(m.planned_bytes, 0u) << what;
      EXPECT_LT(m.planned_bytes, m.intermediate_bytes) << what;
      // Another batch size is another plan.
      const Tensor x3 = randn_of({3, 4, 8, 8}, 12);
      expect_same(g.run({{"x", x3}}, d), s.run({{"x", x3}}), what + " batch 3");
      expect_same(g.run({{"x", x3}}, d), s.run({{"x", x3}}), what + " batch 3 again");
      EXPECT_EQ(s.memory_plan().plans, 2) << what;
      EXPECT_EQ(s.memory_plan().planned_runs, 4) << what;
    }
  }
}

TEST(GraphSession, PlanningCanBeTurnedOff) {
  const Graph g = block();
  Session s(g, Device::cpu(), /*plan_memory=*/false);
  const Tensor x = randn_of({1, 4, 8, 8}, 40);
  for (int i = 0; i < 2; ++i) expect_same(g.run({{"x", x}}), s.run({{"x", x}}), "unplanned");
  const MemoryPlan m = s.memory_plan();
  EXPECT_EQ(m.plans, 0);
  EXPECT_EQ(m.planned_runs, 0);
  EXPECT_EQ(m.unplanned_runs, 2);
  EXPECT_EQ(m.unplanned_reason, "[graph.session] memory planning is off");
}

TEST(GraphSession, RandomNumbersRunNodeByNodeAndSaySo) {
  Graph g;
  g.add_input(f32("x", {{4, ""}, {8, ""}}));
  g.add_input({"train", DType::Bool, std::vector<Dim>{}});
  g.add_initializer("ratio", full({}, 0.5, TensorOptions(DType::Float32)));
  g.add_node({"dropout", "d", {"x", "ratio", "train"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  Session s(g);
  const Tensor x = add(abs(randn_of({4, 8}, 20)), 1.0);
  const Tensor on = full({}, 1.0, TensorOptions(DType::Bool));
  for (int i = 0; i < 3; ++i) {
    const std::vector<double> y = values(s.run({{"x", x}, {"train", on}}).at("y"));
    int64_t zeros = 0;
    for (double v : y) zeros += v == 0 ? 1 : 0;
    EXPECT_GT(zeros, 0);  // a mask drawn on every run
  }
  const MemoryPlan m = s.memory_plan();
  EXPECT_EQ(m.planned_runs, 0);
  EXPECT_EQ(m.unplanned_runs, 3);
  EXPECT_NE(m.unplanned_reason.find("random"), std::string::npos) << m.unplanned_reason;
}

TEST(GraphSession, BadFeedsAreErrors) {
  Session s(block());
  ember::testing::expect_error(
      [&] {
        s.run({{"z", randn_of({1, 4, 8, 8}, 30)}});
      },
      {"unknown input 'z'", "x"});
  ember::testing::expect_error(
      [&] {
        s.run({{"x", randn_of({1, 3, 8, 8}, 31)}});
      },
      {"input 'x' has the wrong shape"});
  ember::testing::expect_error([&] { s.run({}); }, {"missing input 'x'"});
  // The session still runs after them.
  const Tensor x = randn_of({1, 4, 8, 8}, 32);
  expect_same(block().run({{"x", x}}), s.run({{"x", x}}), "after errors");
}

}  // namespace
}  // namespace ember::graph
