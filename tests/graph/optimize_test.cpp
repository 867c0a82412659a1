// The optimization passes, each alone (what it rewrites, what it must leave) and together by
// level: every rewritten graph computes what the original does, on the cpu and reference
// backends.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include <ember/graph/graph.h>
#include <ember/graph/optimize.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::graph {
namespace {

using ember::testing::values;

Tensor randn_of(IntList sizes, uint64_t seed) {
  Generator gen(seed);
  return randn(sizes, DType::Float32, &gen);
}

int64_t count_op(const Graph& g, std::string_view op) {
  int64_t n = 0;
  for (const Node& node : g.nodes()) n += node.op == op ? 1 : 0;
  return n;
}

/** Runs both graphs on the same feeds on cpu and reference and compares every output. */
void expect_same_outputs(const Graph& before, const Graph& after,
                         const std::map<std::string, Tensor>& feeds, double tol = 1e-4) {
  for (Device d : {Device::cpu(), Device(find_device_type("reference"), 0)}) {
    std::map<std::string, Tensor> a = before.run(feeds, d), b = after.run(feeds, d);
    ASSERT_EQ(a.size(), b.size());
    for (const auto& [name, t] : a) {
      const Tensor& u = b.at(name);
      EXPECT_EQ(t.sizes(), u.sizes()) << name;
      EXPECT_EQ(t.dtype(), u.dtype()) << name;
      const std::vector<double> x = values(t.to(Device::cpu())), y = values(u.to(Device::cpu()));
      ASSERT_EQ(x.size(), y.size()) << name;
      for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_NEAR(x[i], y[i], tol * (1 + std::abs(x[i]))) << name << " element " << i;
      }
    }
  }
}

Graph run(const Graph& g, std::string_view pass, int64_t expected_changes) {
  int64_t changes = -1;
  Graph out = run_pass(g, pass, &changes);
  EXPECT_EQ(changes, expected_changes) << pass;
  return out;
}

ValueInfo f32(const std::string& name, std::vector<Dim> dims) {
  return {name, DType::Float32, std::move(dims)};
}

// ---- basic passes ---------------------------------------------------------------------------

TEST(GraphOptimize, FoldsConstantsButNotInputsWithDefaults) {
  Graph g;
  g.add_input(f32("x", {{2, ""}}));
  g.add_input(f32("k", {{2, ""}}));  // an input with a default: a run may feed it
  g.add_initializer("k", ones({2}));
  g.add_initializer("a", full({2}, 3.0));
  g.add_initializer("b", full({2}, 4.0));
  g.add_node({"mul", "ab", {"a", "b"}, {"ab"}, {}});     // constant: folds
  g.add_node({"add", "abk", {"ab", "k"}, {"abk"}, {}});  // reads k: stays
  g.add_node({"add", "out", {"abk", "x"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  const Graph f = run(g, "fold_constants", 1);
  EXPECT_EQ(f.nodes().size(), 2u);
  EXPECT_EQ(count_op(f, "mul"), 0);
  expect_same_outputs(g, f, {{"x", randn_of({2}, 1)}});
  expect_same_outputs(g, f, {{"x", randn_of({2}, 1)}, {"k", randn_of({2}, 2)}});
}

TEST(GraphOptimize, RemovesIdentitiesExceptWhereAnOutputIsNamed) {
  Graph g;
  g.add_input(f32("x", {{3, ""}}));
  g.add_node({"identity", "i1", {"x"}, {"a"}, {}});
  g.add_node({"dropout", "d", {"a"}, {"b"}, {}});
  g.add_node({"relu", "r", {"b"}, {"c"}, {}});
  g.add_node({"identity", "i2", {"c"}, {"y"}, {}});  // writes the output: stays
  g.add_output({"y", DType::Float32, std::nullopt});
  const Graph f = run(g, "eliminate_identities", 2);
  ASSERT_EQ(f.nodes().size(), 2u);
  EXPECT_EQ(f.nodes()[0].op, "relu");
  EXPECT_EQ(f.nodes()[0].inputs[0], "x");
  expect_same_outputs(g, f, {{"x", randn_of({3}, 3)}});
}

TEST(GraphOptimize, KeepsADropoutThatMayTrainOrWhoseMaskIsRead) {
  Graph g;
  g.add_input(f32("x", {{3, ""}}));
  g.add_input({"train", DType::Bool, std::vector<Dim>{}});
  g.add_node({"dropout", "d1", {"x", "", "train"}, {"a"}, {}});
  g.add_node({"dropout", "d2", {"a"}, {"b", "mask"}, {}});
  g.add_node({"relu", "r", {"b"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  g.add_output({"mask", DType::Bool, std::nullopt});
  run(g, "eliminate_identities", 0);
}

TEST(GraphOptimize, MergesCommonSubexpressions) {
  Graph g;
  g.add_input(f32("x", {{4, ""}}));
  g.add_node({"exp", "e1", {"x"}, {"a"}, {}});
  g.add_node({"exp", "e2", {"x"}, {"b"}, {}});
  g.add_node({"leaky_relu", "l1", {"a"}, {"c"}, {{"alpha", 0.1}}});
  g.add_node({"leaky_relu", "l2", {"b"}, {"d"}, {{"alpha", 0.2}}});  // another alpha: stays
  g.add_node({"add", "s", {"c", "d"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  const Graph f = run(g, "eliminate_common_subexpressions", 1);
  EXPECT_EQ(count_op(f, "exp"), 1);
  EXPECT_EQ(count_op(f, "leaky_relu"), 2);
  expect_same_outputs(g, f, {{"x", randn_of({4}, 4)}});
}

TEST(GraphOptimize, RemovesDeadNodesAndUnreadWeights) {
  Graph g;
  g.add_input(f32("x", {{4, ""}}));
  g.add_initializer("w", ones({4}));
  g.add_initializer("unused", ones({4}));
  g.add_node({"mul", "m", {"x", "w"}, {"a"}, {}});
  g.add_node({"exp", "dead", {"a"}, {"b"}, {}});
  g.add_node({"relu", "r", {"a"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  const Graph f = run(g, "eliminate_dead_nodes", 1);
  EXPECT_EQ(count_op(f, "exp"), 0);
  EXPECT_EQ(f.initializers().count("unused"), 0u);
  EXPECT_EQ(f.initializers().count("w"), 1u);
  expect_same_outputs(g, f, {{"x", randn_of({4}, 5)}});
}

// ---- fusions ---------------------------------------------------------------------------------

/** conv(x, w, b) -> batch_normalization -> relu, x [N, 3, 8, 8] with N symbolic. */
Graph conv_bn_relu(bool with_bias) {
  Graph g;
  g.add_input(f32("x", {{-1, "N"}, {3, ""}, {8, ""}, {8, ""}}));
  g.add_initializer("w", randn_of({4, 3, 3, 3}, 10));
  if (with_bias) g.add_initializer("b", randn_of({4}, 11));
  g.add_initializer("scale", add(randn_of({4}, 12), 2.0));
  g.add_initializer("shift", randn_of({4}, 13));
  g.add_initializer("mean", randn_of({4}, 14));
  g.add_initializer("var", add(abs(randn_of({4}, 15)), 0.5));
  std::vector<std::string> conv_in{"x", "w"};
  if (with_bias) conv_in.push_back("b");
  g.add_node(
      {"conv",
       "conv",
       conv_in,
       {"c"},
       {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{1, 1}}}});
  g.add_node({"batch_normalization",
              "bn",
              {"c", "scale", "shift", "mean", "var"},
              {"n"},
              {{"epsilon", 1e-3}}});
  g.add_node({"relu", "relu", {"n"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  return g;
}

TEST(GraphOptimize, FoldsBatchNormIntoTheConvolution) {
  for (bool bias : {true, false}) {
    const Graph g = conv_bn_relu(bias);
    const Graph f = run(g, "fold_conv_batchnorm", 1);
    EXPECT_EQ(count_op(f, "batch_normalization"), 0);
    EXPECT_EQ(count_op(f, "conv"), 1);
    // The original weight is kept for other readers; dead-node removal drops it.
    expect_same_outputs(g, f, {{"x", randn_of({2, 3, 8, 8}, 16)}});
  }
}

TEST(GraphOptimize, LeavesABatchNormWhoseConvolutionHasAnotherReader) {
  Graph g = conv_bn_relu(true);
  Graph h;
  for (const ValueInfo& v : g.inputs()) h.add_input(v);
  for (const auto& [n, t] : g.initializers()) h.add_initializer(n, t);
  for (const Node& n : g.nodes()) h.add_node(n);
  h.add_output({"y", DType::Float32, std::nullopt});
  h.add_output({"c", DType::Float32, std::nullopt});  // the conv's output is read twice
  run(h, "fold_conv_batchnorm", 0);
}

TEST(GraphOptimize, FusesConvolutionAndReluAndTheResidualAdd) {
  Graph g;
  g.add_input(f32("x", {{-1, "N"}, {4, ""}, {6, ""}, {6, ""}}));
  g.add_initializer("w1", randn_of({4, 4, 3, 3}, 20));
  g.add_initializer("b1", randn_of({4}, 21));
  g.add_initializer("w2", randn_of({4, 4, 3, 3}, 22));
  const Attribute pads = std::vector<int64_t>{1, 1, 1, 1};
  g.add_node({"conv", "c1", {"x", "w1", "b1"}, {"c1"}, {{"pads", pads}}});
  g.add_node({"relu", "r1", {"c1"}, {"h"}, {}});
  g.add_node({"conv", "c2", {"h", "w2"}, {"c2"}, {{"pads", pads}}});
  g.add_node({"add", "res", {"x", "c2"}, {"s"}, {}});
  g.add_node({"relu", "r2", {"s"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  const Graph f = run(g, "fuse_conv_activation", 2);
  EXPECT_EQ(count_op(f, "fused_conv"), 2);
  EXPECT_EQ(f.nodes().size(), 2u);
  expect_same_outputs(g, f, {{"x", randn_of({2, 4, 6, 6}, 23)}});
  // A residual that broadcasts runs the composite: the same values.
  Graph b;
  b.add_input(f32("x", {{1, ""}, {4, ""}, {6, ""}, {6, ""}}));
  b.add_input(f32("r", {{1, ""}, {4, ""}, {1, ""}, {1, ""}}));
  b.add_initializer("w", randn_of({4, 4, 3, 3}, 24));
  b.add_node({"conv", "c", {"x", "w"}, {"c"}, {{"pads", pads}}});
  b.add_node({"add", "a", {"c", "r"}, {"s"}, {}});
  b.add_node({"relu", "r", {"s"}, {"y"}, {}});
  b.add_output({"y", DType::Float32, std::nullopt});
  const Graph fb = run(b, "fuse_conv_activation", 1);
  expect_same_outputs(b, fb,
                      {{"x", randn_of({1, 4, 6, 6}, 25)}, {"r", randn_of({1, 4, 1, 1}, 26)}});
}

TEST(GraphOptimize, LeavesConvolutionsFusedConvCannotRun) {
  Graph g;
  g.add_input(f32("x", {{1, ""}, {2, ""}, {5, ""}, {5, ""}}));
  g.add_initializer("w", randn_of({2, 2, 3, 3}, 27));
  g.add_node({"conv", "asym", {"x", "w"}, {"a"}, {{"pads", std::vector<int64_t>{0, 0, 1, 1}}}});
  g.add_node({"relu", "r1", {"a"}, {"b"}, {}});
  g.add_node({"conv", "same", {"b", "w"}, {"c"}, {{"auto_pad", std::string("SAME_UPPER")}}});
  g.add_node({"relu", "r2", {"c"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  run(g, "fuse_conv_activation", 0);
}

/** The ops of `g`'s nodes in order. */
std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes()) ops.push_back(n.op);
  return ops;
}

TEST(GraphOptimize, PlansChannelsLastRegionsAroundConvolutions) {
  Graph g;
  g.add_input(f32("x", {{-1, "N"}, {4, ""}, {8, ""}, {8, ""}}));
  g.add_input(f32("r", {{-1, "N"}, {6, ""}, {4, ""}, {4, ""}}));
  g.add_initializer("w1", randn_of({6, 4, 3, 3}, 60));
  g.add_initializer("b1", randn_of({6}, 61));
  g.add_initializer("w2", randn_of({6, 6, 1, 1}, 62));  // 1x1: dense in both orders already
  const Attribute pads = std::vector<int64_t>{1, 1, 1, 1};
  const Attribute two = std::vector<int64_t>{2, 2};
  g.add_node({"conv", "c1", {"x", "w1", "b1"}, {"c1"}, {{"pads", pads}}});
  g.add_node({"relu", "r1", {"c1"}, {"h"}, {}});
  g.add_node({"max_pool", "p", {"h"}, {"p"}, {{"kernel_shape", two}, {"strides", two}}});
  g.add_node({"conv", "c2", {"p", "w2"}, {"feat"}, {}});
  g.add_node({"add", "a", {"feat", "r"}, {"s"}, {}});  // r enters the region
  g.add_node({"transpose", "t", {"s"}, {"t"}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}});
  g.add_node({"global_average_pool", "gap", {"s"}, {"g"}, {}});
  g.add_node({"flatten", "f", {"g"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  g.add_output({"feat", DType::Float32, std::nullopt});  // a region's value as an output
  g.add_output({"t", DType::Float32, std::nullopt});
  // Entries: x and r; w1 copied channels-last; the transpose reads s row-major. The pooled
  // [N, C, 1, 1] leaves the region without a conversion.
  const Graph f = run(g, "plan_layout", 4);
  EXPECT_EQ(ops_of(f),
            (std::vector<std::string>{"layout", "conv", "relu", "max_pool", "conv", "layout", "add",
                                      "layout", "transpose", "global_average_pool", "flatten"}));
  for (const Node& n : f.nodes()) {
    if (n.op == "conv") {
      const Tensor& w = f.initializers().at(n.inputs[1]);
      EXPECT_TRUE(w.is_contiguous(MemoryFormat::ChannelsLast)) << n.name;
    }
  }
  const std::map<std::string, Tensor> feeds{{"x", randn_of({2, 4, 8, 8}, 63)},
                                            {"r", randn_of({2, 6, 4, 4}, 64)}};
  expect_same_outputs(g, f, feeds);
  // Outputs come back row-major whatever layout they ran in.
  for (const auto& [name, t] : f.run(feeds)) EXPECT_TRUE(t.is_contiguous()) << name;
  // A plan is kept as it is.
  run(f, "plan_layout", 0);
  // Optimized at level all: the same values through fused_conv.
  OptimizeReport report;
  const Graph all = optimize(g, OptLevel::All, &report);
  EXPECT_EQ(count_op(all, "fused_conv"), 1);
  EXPECT_EQ(count_op(all, "layout"), 3);
  expect_same_outputs(g, all, feeds);
}

TEST(GraphOptimize, PlansNoLayoutWithoutConvolutionsItCanAnchor) {
  Graph g;
  g.add_input(f32("x", {{1, ""}, {2, ""}, {5, ""}, {5, ""}}));
  g.add_input(f32("w", {{2, ""}, {2, ""}, {3, ""}, {3, ""}}));  // a fed weight: not a constant
  g.add_node({"conv", "c", {"x", "w"}, {"c"}, {}});
  g.add_node({"relu", "r", {"c"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  run(g, "plan_layout", 0);
  Graph h;
  h.add_input(f32("x", {{1, ""}, {2, ""}, {5, ""}, {5, ""}}));
  h.add_node({"relu", "r", {"x"}, {"y"}, {}});
  h.add_output({"y", DType::Float32, std::nullopt});
  run(h, "plan_layout", 0);
}

/** y = z * 0.5 * (1 + act) after the activation's output `act`, the two Muls in either order;
 *  `constants_first` writes 1 and 0.5 as the first operands of their nodes. */
void add_gelu_tail(Graph& g, const std::string& act, bool half_first, bool constants_first) {
  const auto operands = [&](const std::string& value, const std::string& constant) {
    return constants_first ? std::vector<std::string>{constant, value}
                           : std::vector<std::string>{value, constant};
  };
  g.add_node({"add", "p", operands(act, "one"), {"pz"}, {}});
  if (half_first) {
    g.add_node({"mul", "h", operands("z", "half"), {"hz"}, {}});
    g.add_node({"mul", "m", {"hz", "pz"}, {"y"}, {}});
  } else {
    g.add_node({"mul", "m", {"z", "pz"}, {"mz"}, {}});
    g.add_node({"mul", "h", {"mz", "half"}, {"y"}, {}});
  }
  g.add_output({"y", DType::Float32, std::nullopt});
}

/** gelu(x @ w + b) written as PyTorch's exporter writes gelu without a Gelu op. */
Graph mlp_with_erf_gelu(bool half_first) {
  Graph g;
  g.add_input(f32("x", {{-1, "N"}, {5, ""}}));
  g.add_initializer("w", randn_of({5, 6}, 30));
  g.add_initializer("b", randn_of({6}, 31));
  g.add_initializer("sqrt2", full({}, std::sqrt(2.0)));
  g.add_initializer("one", full({}, 1.0));
  g.add_initializer("half", full({}, 0.5));
  g.add_node({"matmul", "mm", {"x", "w"}, {"xw"}, {}});
  g.add_node({"add", "bias", {"b", "xw"}, {"z"}, {}});
  g.add_node({"div", "d", {"z", "sqrt2"}, {"zs"}, {}});
  g.add_node({"erf", "e", {"zs"}, {"ez"}, {}});
  add_gelu_tail(g, "ez", half_first, false);
  return g;
}

TEST(GraphOptimize, FusesTheErfGeluPatternInBothOrders) {
  for (bool half_first : {false, true}) {
    const Graph g = mlp_with_erf_gelu(half_first);
    const Graph f = run(g, "fuse_gelu", 1);
    EXPECT_EQ(count_op(f, "gelu"), 1);
    EXPECT_EQ(count_op(f, "erf"), 0);
    EXPECT_EQ(f.nodes().size(), 3u);
    expect_same_outputs(g, f, {{"x", randn_of({3, 5}, 32)}});
  }
}

/** GPT-2's gelu_new, x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), after a
 *  linear layer, as the dynamo exporter writes it. */
Graph mlp_with_tanh_gelu(bool half_first, double c = 0.044715) {
  Graph g;
  g.add_input(f32("x", {{-1, "N"}, {5, ""}}));
  g.add_initializer("w", randn_of({5, 6}, 34));
  g.add_initializer("b", randn_of({6}, 35));
  g.add_initializer("three", full({}, 3.0));
  g.add_initializer("c", full({}, c));
  g.add_initializer("k", full({}, std::sqrt(2.0 / std::numbers::pi)));
  g.add_initializer("one", full({}, 1.0));
  g.add_initializer("half", full({}, 0.5));
  g.add_node({"matmul", "mm", {"x", "w"}, {"xw"}, {}});
  g.add_node({"add", "bias", {"xw", "b"}, {"z"}, {}});
  g.add_node({"pow", "cube", {"z", "three"}, {"z3"}, {}});
  g.add_node({"mul", "cz3", {"c", "z3"}, {"cz"}, {}});
  g.add_node({"add", "sum", {"z", "cz"}, {"s"}, {}});
  g.add_node({"mul", "ks", {"s", "k"}, {"ts"}, {}});
  g.add_node({"tanh", "t", {"ts"}, {"tz"}, {}});
  add_gelu_tail(g, "tz", half_first, true);
  return g;
}

TEST(GraphOptimize, FusesTheTanhGeluPatternInBothOrders) {
  for (bool half_first : {false, true}) {
    const Graph g = mlp_with_tanh_gelu(half_first);
    const Graph f = run(g, "fuse_gelu", 1);
    EXPECT_EQ(count_op(f, "gelu"), 1);
    EXPECT_EQ(count_op(f, "tanh") + count_op(f, "pow"), 0);
    EXPECT_EQ(f.nodes().size(), 3u);
    for (const Node& n : f.nodes()) {
      if (n.op == "gelu") {
        EXPECT_EQ(std::get<std::string>(n.attrs.at("approximate")), "tanh");
      }
    }
    expect_same_outputs(g, f, {{"x", randn_of({3, 5}, 36)}});
  }
  // A tanh whose input is not the pattern's (the constant off) stays as it is.
  run(mlp_with_tanh_gelu(false, 0.05), "fuse_gelu", 0);
}

TEST(GraphOptimize, FusesLinearLayersWithTheirActivation) {
  // MatMul + Add + (fused) GELU becomes one fused_linear node.
  Graph g = optimize(mlp_with_erf_gelu(false), OptLevel::Extended);
  EXPECT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0].op, "fused_linear");
  EXPECT_EQ(std::get<std::string>(g.nodes()[0].attrs.at("activation")), "gelu");
  expect_same_outputs(mlp_with_erf_gelu(false), g, {{"x", randn_of({4, 5}, 33)}});
  // Gemm with transB, and without it, then a ReLU.
  for (int64_t trans_b : {0, 1}) {
    Graph m;
    m.add_input(f32("x", {{-1, "N"}, {5, ""}}));
    m.add_initializer("B", trans_b ? randn_of({7, 5}, 34) : randn_of({5, 7}, 34));
    m.add_initializer("C", randn_of({7}, 35));
    m.add_node({"gemm", "g", {"x", "B", "C"}, {"z"}, {{"transB", trans_b}}});
    m.add_node({"relu", "r", {"z"}, {"y"}, {}});
    m.add_output({"y", DType::Float32, std::nullopt});
    const Graph f = run(m, "fuse_linear", 1);
    ASSERT_EQ(f.nodes().size(), 1u);
    EXPECT_EQ(std::get<std::string>(f.nodes()[0].attrs.at("activation")), "relu");
    expect_same_outputs(m, f, {{"x", randn_of({3, 5}, 36)}});
  }
}

TEST(GraphOptimize, FusesTheActivationOfALinearLayerThroughAReshape) {
  // GPT-2's MLP as exported: the 3-d input flattened for a Gemm, reshaped back, then the GELU.
  using ember::testing::make;
  Graph m;
  m.add_input(f32("x", {{-1, "N"}, {4, ""}, {5, ""}}));
  m.add_initializer("flat", make({-1, 5}, {2}, DType::Int64));
  m.add_initializer("back", make({-1, 4, 7}, {3}, DType::Int64));
  m.add_initializer("B", randn_of({5, 7}, 37));
  m.add_initializer("C", randn_of({7}, 38));
  m.add_node({"reshape", "r0", {"x", "flat"}, {"x2"}, {}});
  m.add_node({"gemm", "g", {"x2", "B", "C"}, {"z2"}, {}});
  m.add_node({"reshape", "r1", {"z2", "back"}, {"z"}, {}});
  m.add_node({"gelu", "act", {"z"}, {"y"}, {{"approximate", std::string("tanh")}}});
  m.add_output({"y", DType::Float32, std::nullopt});
  const Graph f = run(m, "fuse_linear", 1);
  ASSERT_EQ(f.nodes().size(), 3u);
  EXPECT_EQ(count_op(f, "gelu"), 0);
  EXPECT_EQ(f.nodes()[1].op, "fused_linear");
  EXPECT_EQ(std::get<std::string>(f.nodes()[1].attrs.at("activation")), "gelu_tanh");
  EXPECT_EQ(f.nodes()[2].outputs[0], "y");
  expect_same_outputs(m, f, {{"x", randn_of({3, 4, 5}, 39)}});
  // A reshape that something else reads too keeps the activation where it is.
  m.add_output({"z", DType::Float32, std::nullopt});
  const Graph kept = run(m, "fuse_linear", 1);
  EXPECT_EQ(count_op(kept, "gelu"), 1);
  expect_same_outputs(m, kept, {{"x", randn_of({3, 4, 5}, 39)}});
}

TEST(GraphOptimize, CancelsTransposeAndReshapeChains) {
  using ember::testing::make;
  Graph g;
  g.add_input(f32("x", {{2, ""}, {3, ""}, {4, ""}}));
  g.add_initializer("s1", make({6, 4}, {2}, DType::Int64));
  g.add_initializer("s2", make({4, -1}, {2}, DType::Int64));
  g.add_initializer("s0", make({0, -1}, {2}, DType::Int64));  // 0 copies a dim: not collapsed
  const Attribute p1 = std::vector<int64_t>{1, 2, 0}, p2 = std::vector<int64_t>{2, 0, 1};
  g.add_node({"transpose", "t1", {"x"}, {"a"}, {{"perm", p1}}});
  g.add_node({"transpose", "t2", {"a"}, {"b"}, {{"perm", p2}}});  // undoes t1
  g.add_node({"reshape", "r1", {"b", "s1"}, {"c"}, {}});
  g.add_node({"reshape", "r2", {"c", "s2"}, {"d"}, {}});  // reshape of a reshape
  g.add_node({"transpose", "t3", {"d"}, {"e"}, {{"perm", std::vector<int64_t>{1, 0}}}});
  g.add_node({"transpose", "t4", {"e"}, {"f"}, {{"perm", std::vector<int64_t>{1, 0}}}});
  g.add_node({"reshape", "r3", {"f", "s0"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  // t2 and t4 cancel their inner transposes; r2 reads x's reshape's input; r3 keeps its input.
  const Graph f = run(g, "cancel_transposes", 3);
  const Graph clean = optimize(g, OptLevel::Extended);
  EXPECT_EQ(count_op(clean, "transpose"), 0);
  EXPECT_EQ(count_op(clean, "reshape"), 2);
  expect_same_outputs(g, f, {{"x", randn_of({2, 3, 4}, 40)}});
  expect_same_outputs(g, clean, {{"x", randn_of({2, 3, 4}, 41)}});
}

TEST(GraphOptimize, FoldsTheShapeOfAnInputWithFixedDims) {
  using ember::testing::make;
  Graph g;
  g.add_input(f32("x", {{2, ""}, {3, ""}, {4, ""}}));
  g.add_input(f32("z", {{-1, "N"}, {3, ""}}));
  g.add_node({"shape", "s", {"x"}, {"s"}, {}});
  g.add_node({"reshape", "r", {"x", "s"}, {"y"}, {}});
  g.add_node({"shape", "sz", {"z"}, {"sz"}, {}});  // a symbolic dim: stays
  g.add_output({"y", DType::Float32, std::nullopt});
  g.add_output({"sz", DType::Int64, std::nullopt});
  const Graph f = run(g, "fold_constants", 1);
  EXPECT_EQ(count_op(f, "shape"), 1);
  EXPECT_EQ(values(f.initializers().at("s")), std::vector<double>({2, 3, 4}));
  expect_same_outputs(g, f, {{"x", randn_of({2, 3, 4}, 50)}, {"z", randn_of({5, 3}, 51)}});
}

/** Layer norm over the last `k` dims written out as exporters before opset 17 write it. */
Graph decomposed_layer_norm(int64_t k) {
  using ember::testing::make;
  Graph g;
  g.add_input(f32("x", {{-1, "N"}, {3, ""}, {4, ""}}));
  const Shape normalized = k == 1 ? Shape{4} : Shape{3, 4};
  g.add_initializer("gamma", add(randn_of(normalized, 60), 1.0));
  g.add_initializer("beta", randn_of(normalized, 61));
  g.add_initializer("two", full({}, 2.0));
  g.add_initializer("eps", full({}, 1e-5));
  const Attribute axes = k == 1 ? std::vector<int64_t>{-1} : std::vector<int64_t>{-1, -2};
  g.add_node({"reduce_mean", "m", {"x"}, {"m"}, {{"axes", axes}}});
  g.add_node({"sub", "d", {"x", "m"}, {"d"}, {}});
  g.add_node({"pow", "p", {"d", "two"}, {"p"}, {}});
  g.add_node({"reduce_mean", "v", {"p"}, {"v"}, {{"axes", axes}}});
  g.add_node({"add", "ve", {"v", "eps"}, {"ve"}, {}});
  g.add_node({"sqrt", "s", {"ve"}, {"s"}, {}});
  g.add_node({"div", "n", {"d", "s"}, {"n"}, {}});
  g.add_node({"mul", "g", {"n", "gamma"}, {"ng"}, {}});
  g.add_node({"add", "b", {"ng", "beta"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  return g;
}

TEST(GraphOptimize, FusesTheDecomposedLayerNorm) {
  for (int64_t k : {1, 2}) {
    const Graph g = decomposed_layer_norm(k);
    const Graph f = run(g, "fuse_layer_norm", 1);
    ASSERT_EQ(f.nodes().size(), 1u);
    EXPECT_EQ(f.nodes()[0].op, "layer_normalization");
    EXPECT_EQ(std::get<int64_t>(f.nodes()[0].attrs.at("axis")), -k);
    expect_same_outputs(g, f, {{"x", randn_of({2, 3, 4}, 62)}});
  }
}

TEST(GraphOptimize, FusesWrittenOutAttentionAndSilu) {
  for (bool with_mask : {false, true}) {
    Graph g;
    g.add_input(f32("q", {{2, ""}, {3, ""}, {5, ""}, {8, ""}}));
    g.add_input(f32("k", {{2, ""}, {3, ""}, {6, ""}, {8, ""}}));
    g.add_input(f32("v", {{2, ""}, {3, ""}, {6, ""}, {4, ""}}));
    g.add_input(f32("mask", {{2, ""}, {1, ""}, {1, ""}, {6, ""}}));
    g.add_initializer("scale", full({}, 1.0 / std::sqrt(8.0)));
    g.add_node({"transpose", "kt", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}}});
    g.add_node({"matmul", "qk", {"q", "kt"}, {"qk"}, {}});
    g.add_node({"mul", "sc", {"scale", "qk"}, {"s"}, {}});
    std::string scores = "s";
    if (with_mask) {
      g.add_node({"add", "mk", {"s", "mask"}, {"sm"}, {}});
      scores = "sm";
    }
    g.add_node({"softmax", "sm", {scores}, {"p"}, {{"axis", int64_t{-1}}}});
    g.add_node({"matmul", "pv", {"p", "v"}, {"ctx"}, {}});
    g.add_node({"sigmoid", "sg", {"ctx"}, {"sg"}, {}});
    g.add_node({"mul", "silu", {"ctx", "sg"}, {"y"}, {}});
    g.add_output({"y", DType::Float32, std::nullopt});
    const Graph a = run(g, "fuse_attention", 1);
    EXPECT_EQ(count_op(a, "attention"), 1);
    EXPECT_EQ(count_op(a, "softmax"), 0);
    const Graph b = run(a, "fuse_silu", 1);
    EXPECT_EQ(count_op(b, "swish"), 1);
    Tensor mask = zeros({2, 1, 1, 6});
    mask.narrow(0, 1, 1).narrow(3, 4, 2).fill_(-1e4);
    expect_same_outputs(g, b,
                        {{"q", randn_of({2, 3, 5, 8}, 70)},
                         {"k", randn_of({2, 3, 6, 8}, 71)},
                         {"v", randn_of({2, 3, 6, 4}, 72)},
                         {"mask", mask}});
  }
}

TEST(GraphOptimize, LeavesAttentionWhoseScoresAreReadElsewhere) {
  Graph g;
  g.add_input(f32("q", {{2, ""}, {4, ""}}));
  g.add_input(f32("kt", {{4, ""}, {3, ""}}));
  g.add_input(f32("v", {{3, ""}, {4, ""}}));
  g.add_node({"matmul", "qk", {"q", "kt"}, {"s"}, {}});
  g.add_node({"softmax", "sm", {"s"}, {"p"}, {}});
  g.add_node({"matmul", "pv", {"p", "v"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  g.add_output({"p", DType::Float32, std::nullopt});  // the probabilities are an output
  run(g, "fuse_attention", 0);
}

// ---- subgraphs -----------------------------------------------------------------------------

const Graph& subgraph_of(const Graph& g, std::string_view op, const char* attr) {
  for (const Node& n : g.nodes()) {
    if (n.op == op) return *std::get<std::shared_ptr<const Graph>>(n.attrs.at(attr));
  }
  ADD_FAILURE() << "no " << op << " node";
  return g;
}

const Node& node_of(const Graph& g, std::string_view op) {
  for (const Node& n : g.nodes()) {
    if (n.op == op) return n;
  }
  ADD_FAILURE() << "no " << op << " node";
  return g.nodes().front();
}

/** A Loop whose body holds what the passes rewrite: relu(v @ W + b) (fused_linear with the
 *  weight read from the enclosing graph), c1 * c2 (two outer constants: folds) and that times
 *  `scale`, an enclosing graph's input (not a constant: stays), added to the loop-carried v
 *  (which nothing folds into). The main graph passes `scale` through an identity, so after the
 *  passes the Loop passes another name than the body reads. */
Graph loop_with_patterns() {
  auto body = std::make_shared<Graph>();
  body->add_input({"i", DType::Int64, std::vector<Dim>{}});
  body->add_input({"cond", DType::Bool, std::vector<Dim>{}});
  body->add_input(f32("v", {{-1, "N"}, {5, ""}}));
  for (const char* outer : {"W", "scale", "b", "c1", "c2"}) body->add_outer(outer);
  body->add_node({"matmul", "mm", {"v", "W"}, {"vw"}, {}});
  body->add_node({"add", "bias", {"vw", "b"}, {"z"}, {}});
  body->add_node({"relu", "r", {"z"}, {"h"}, {}});
  body->add_node({"mul", "cc", {"c1", "c2"}, {"s"}, {}});        // outer constants: folds
  body->add_node({"mul", "scaled", {"s", "scale"}, {"t"}, {}});  // an outer input: stays
  body->add_node({"add", "next", {"h", "t"}, {"v2"}, {}});       // the carried value: stays
  body->add_node({"add", "scan", {"v2", "v"}, {"u"}, {}});
  body->add_node({"identity", "go", {"cond"}, {"cond_out"}, {}});
  body->add_output({"cond_out", DType::Bool, std::nullopt});
  body->add_output({"v2", DType::Float32, std::nullopt});
  body->add_output({"u", DType::Float32, std::nullopt});
  Graph g;
  g.add_input({"M", DType::Int64, std::vector<Dim>{}});
  g.add_input(f32("x", {{-1, "N"}, {5, ""}}));
  g.add_input(f32("scale_in", {{5, ""}}));
  g.add_initializer("W", mul(randn_of({5, 5}, 50), 0.4));
  g.add_initializer("b", randn_of({5}, 51));
  g.add_initializer("c1", randn_of({5}, 52));
  g.add_initializer("c2", randn_of({5}, 53));
  g.add_node({"identity", "pass", {"scale_in"}, {"scale"}, {}});
  g.add_node(
      {"loop", "l", {"M", "", "x", "W", "scale", "b", "c1", "c2"}, {"y", "ys"}, {{"body", body}}});
  g.add_output({"y", DType::Float32, std::nullopt});
  g.add_output({"ys", DType::Float32, std::nullopt});
  return g;
}

TEST(GraphOptimize, RewritesALoopsBodyAndKeepsItsOuterValuesPaired) {
  const Graph g = loop_with_patterns();
  OptimizeReport report;
  const Graph f = optimize(g, OptLevel::All, &report);
  const Graph& body = subgraph_of(f, "loop", "body");
  EXPECT_EQ(count_op(body, "fused_linear"), 1);
  EXPECT_EQ(count_op(body, "matmul"), 0);
  EXPECT_EQ(count_op(body, "relu"), 0);
  EXPECT_EQ(count_op(body, "mul"), 1);            // s * scale: scale is no constant
  EXPECT_EQ(count_op(body, "add"), 2);            // what reads the loop-carried value
  EXPECT_EQ(body.initializers().count("s"), 1u);  // c1 * c2, folded
  // The weights moved into the body; the one value still read from outside is scale, passed
  // under the enclosing graph's own name now that the identity is gone.
  EXPECT_EQ(body.outer(), std::vector<std::string>{"scale"});
  const Node& loop = node_of(f, "loop");
  EXPECT_EQ(loop.inputs, (std::vector<std::string>{"M", "", "x", "scale_in"}));
  EXPECT_TRUE(f.initializers().empty());
  EXPECT_EQ(count_op(f, "identity"), 0);
  int64_t fused = 0, folded = 0;
  for (const PassCount& p : report.passes) {
    if (p.pass == "fuse_linear") fused = p.changes;
    if (p.pass == "fold_constants") folded = p.changes;
  }
  EXPECT_EQ(fused, 1);
  EXPECT_GE(folded, 1);
  for (int64_t trips : {0, 1, 3}) {
    expect_same_outputs(g, f,
                        {{"M", full({}, trips, {DType::Int64})},
                         {"x", randn_of({4, 5}, 54)},
                         {"scale_in", randn_of({5}, 55)}});
  }
  // One pass alone reaches the body too.
  int64_t changes = 0;
  const Graph once = run_pass(g, "fold_constants", &changes);
  EXPECT_EQ(changes, 1);
  EXPECT_EQ(count_op(subgraph_of(once, "loop", "body"), "mul"), 1);
  expect_same_outputs(g, once,
                      {{"M", full({}, int64_t{2}, {DType::Int64})},
                       {"x", randn_of({2, 5}, 56)},
                       {"scale_in", randn_of({5}, 57)}});
}

/** A branch of an If: relu(x @ w + b) when `linear`, else x + k1 * k2; all but x constants of
 *  the enclosing graph. */
std::shared_ptr<const Graph> branch_with_patterns(bool linear) {
  auto g = std::make_shared<Graph>();
  g->add_outer("x");
  if (linear) {
    g->add_outer("w");
    g->add_outer("b");
    g->add_node({"matmul", "mm", {"x", "w"}, {"xw"}, {}});
    g->add_node({"add", "bias", {"xw", "b"}, {"z"}, {}});
    g->add_node({"relu", "r", {"z"}, {"out"}, {}});
  } else {
    g->add_outer("k1");
    g->add_outer("k2");
    g->add_node({"mul", "kk", {"k1", "k2"}, {"k"}, {}});
    g->add_node({"add", "plus", {"x", "k"}, {"out"}, {}});
  }
  g->add_output({"out", DType::Float32, std::nullopt});
  return g;
}

TEST(GraphOptimize, RewritesBothBranchesOfAnIf) {
  Graph g;
  g.add_input({"c", DType::Bool, std::vector<Dim>{}});
  g.add_input(f32("x", {{-1, "N"}, {4, ""}}));
  g.add_initializer("w", randn_of({4, 4}, 60));
  g.add_initializer("b", randn_of({4}, 61));
  g.add_initializer("k1", randn_of({4}, 62));
  g.add_initializer("k2", randn_of({4}, 63));
  // else_branch's outer values come first: the attributes are read by name.
  g.add_node({"if",
              "pick",
              {"c", "x", "k1", "k2", "w", "b"},
              {"y"},
              {{"then_branch", branch_with_patterns(true)},
               {"else_branch", branch_with_patterns(false)}}});
  g.add_output({"y", DType::Float32, std::nullopt});
  const Graph f = optimize(g, OptLevel::Extended);
  const Graph& then_branch = subgraph_of(f, "if", "then_branch");
  const Graph& else_branch = subgraph_of(f, "if", "else_branch");
  EXPECT_EQ(then_branch.nodes().size(), 1u);
  EXPECT_EQ(then_branch.nodes()[0].op, "fused_linear");
  EXPECT_EQ(else_branch.nodes().size(), 1u);
  EXPECT_EQ(else_branch.nodes()[0].op, "add");
  EXPECT_EQ(node_of(f, "if").inputs, (std::vector<std::string>{"c", "x"}));
  for (bool c : {false, true}) {
    expect_same_outputs(g, f,
                        {{"c", full({}, c ? 1 : 0, {DType::Bool})}, {"x", randn_of({3, 4}, 64)}});
  }
  // With a constant cond and branches reading constants only, the If itself folds.
  Graph k;
  k.add_initializer("c", full({}, 0, {DType::Bool}));
  k.add_initializer("x", randn_of({2, 4}, 65));
  for (const char* name : {"w", "b", "k1", "k2"})
    k.add_initializer(name, g.initializers().at(name));
  k.add_node(node_of(g, "if"));
  k.add_output({"y", DType::Float32, std::nullopt});
  const Graph kf = optimize(k, OptLevel::Basic);
  EXPECT_TRUE(kf.nodes().empty());
  expect_same_outputs(k, kf, {});
}

TEST(GraphOptimize, NeverFoldsALoopWhoseBodyDrawsRandomNumbers) {
  // Every input of the Loop is a constant, but its body's dropout trains: running it once at
  // optimization would freeze one draw into the model.
  auto body = std::make_shared<Graph>();
  body->add_input({"i", DType::Int64, std::vector<Dim>{}});
  body->add_input({"cond", DType::Bool, std::vector<Dim>{}});
  body->add_input(f32("v", {{8, ""}}));
  body->add_outer("ratio");
  body->add_outer("training");
  body->add_node({"dropout", "d", {"v", "ratio", "training"}, {"v2"}, {}});
  body->add_node({"identity", "go", {"cond"}, {"cond_out"}, {}});
  body->add_output({"cond_out", DType::Bool, std::nullopt});
  body->add_output({"v2", DType::Float32, std::nullopt});
  Graph g;
  g.add_initializer("M", full({}, int64_t{2}, {DType::Int64}));
  g.add_initializer("v0", ones({8}));
  g.add_initializer("ratio", full({}, 0.5));
  g.add_initializer("training", full({}, 1, {DType::Bool}));
  g.add_node({"loop", "l", {"M", "", "v0", "ratio", "training"}, {"y"}, {{"body", body}}});
  g.add_output({"y", DType::Float32, std::nullopt});
  const Graph f = optimize(g, OptLevel::All);
  EXPECT_EQ(count_op(f, "loop"), 1);
  EXPECT_EQ(count_op(subgraph_of(f, "loop", "body"), "dropout"), 1);
}

// ---- levels --------------------------------------------------------------------------------

TEST(GraphOptimize, LevelsRunTheirPassesAndReportThem) {
  EXPECT_TRUE(passes_of(OptLevel::None).empty());
  EXPECT_EQ(passes_of(OptLevel::Basic).size(), 4u);
  EXPECT_GT(passes_of(OptLevel::Extended).size(), passes_of(OptLevel::Basic).size());
  EXPECT_GT(passes_of(OptLevel::All).size(), passes_of(OptLevel::Extended).size());
  const Graph g = conv_bn_relu(true);
  OptimizeReport none, basic, all;
  EXPECT_EQ(optimize(g, OptLevel::None, &none).nodes().size(), 3u);
  EXPECT_EQ(optimize(g, OptLevel::Basic, &basic).nodes().size(), 3u);
  const Graph f = optimize(g, OptLevel::All, &all);
  // The input enters the channels-last region (Note [Channels-last regions of a graph]).
  EXPECT_EQ(ops_of(f), (std::vector<std::string>{"layout", "fused_conv"}));
  EXPECT_EQ(all.nodes_before, 3u);
  EXPECT_EQ(all.nodes_after, 2u);
  int64_t folded = 0, fused = 0, planned = 0;
  for (const PassCount& p : all.passes) {
    if (p.pass == "fold_conv_batchnorm") folded = p.changes;
    if (p.pass == "fuse_conv_activation") fused = p.changes;
    if (p.pass == "plan_layout") planned = p.changes;
  }
  EXPECT_EQ(folded, 1);
  EXPECT_EQ(fused, 1);
  EXPECT_EQ(planned, 2);  // the input's conversion and the weight's channels-last copy
  // Only the weights the fused graph reads are left.
  EXPECT_EQ(f.initializers().size(), 2u);
  expect_same_outputs(g, f, {{"x", randn_of({3, 3, 8, 8}, 42)}});
  // A disabled pass does not run.
  OptimizeReport without;
  const Graph h = optimize(g, OptLevel::All, &without, {"plan_layout"});
  EXPECT_EQ(ops_of(h), std::vector<std::string>{"fused_conv"});
  for (const PassCount& p : without.passes) EXPECT_NE(p.pass, "plan_layout");
  ember::testing::expect_error([&] { optimize(g, OptLevel::All, nullptr, {"fuse_everything"}); },
                               {"unknown pass 'fuse_everything' to disable"});
  EXPECT_EQ(opt_level_from_name("extended"), OptLevel::Extended);
  ember::testing::expect_error([] { opt_level_from_name("max"); }, {"unknown optimization level"});
  ember::testing::expect_error([&] { run_pass(g, "nope"); }, {"unknown pass"});
}

}  // namespace
}  // namespace ember::graph
