// Graphs of Ember ops built by hand and run on the cpu and reference backends; the checks made
// when nodes are added and when the graph runs.
#include <gtest/gtest.h>

#include <ember/graph/graph.h>
#include <ember/graph/ops.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::graph {
namespace {

using ember::testing::expect_error;
using ember::testing::make;
using ember::testing::values;

std::vector<Device> host_devices() {
  return {Device::cpu(), Device(find_device_type("reference"), 0)};
}

/** y = relu(x @ w + b) with x [N, 2] (N symbolic), w [2, 3], b [3]. */
Graph linear_relu() {
  Graph g;
  g.add_input({"x", DType::Float32, std::vector<Dim>{{-1, "N"}, {2, ""}}});
  g.add_initializer("w", make({1, -1, 2, 0.5, 1, -3}, {2, 3}, DType::Float32));
  g.add_initializer("b", make({0.5, 0, -1}, {3}, DType::Float32));
  g.add_node({"matmul", "mm", {"x", "w"}, {"xw"}, {}});
  g.add_node({"add", "bias", {"xw", "b"}, {"z"}, {}});
  g.add_node({"relu", "act", {"z"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  return g;
}

TEST(Graph, RunsOnEveryHostBackend) {
  const Graph g = linear_relu();
  for (int64_t n : {1, 3}) {
    std::vector<double> xs;
    for (int64_t i = 0; i < 2 * n; ++i) xs.push_back(static_cast<double>(i) - 1.5);
    const Tensor x = make(xs, {n, 2}, DType::Float32);
    // The float64 reference, by hand.
    const double w[2][3] = {{1, -1, 2}, {0.5, 1, -3}}, b[3] = {0.5, 0, -1};
    std::vector<double> expected;
    for (int64_t r = 0; r < n; ++r) {
      for (int c = 0; c < 3; ++c) {
        const double z = xs[2 * r] * w[0][c] + xs[2 * r + 1] * w[1][c] + b[c];
        expected.push_back(z > 0 ? z : 0);
      }
    }
    for (Device d : host_devices()) {
      std::map<std::string, Tensor> out = g.run({{"x", x}}, d);
      ASSERT_EQ(out.size(), 1u);
      const Tensor y = out.at("y");
      EXPECT_EQ(y.device(), d);
      EXPECT_EQ(y.sizes(), Shape({n, 3}));
      const std::vector<double> got = values(y.to(Device::cpu()));
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-6) << i;
    }
  }
}

TEST(Graph, OutputsNeverShareAWeightsStorage) {
  // An output that is a weight, or a view of one, is a copy: writing to it leaves the model.
  Graph g;
  g.add_input({"x", DType::Float32, std::nullopt});
  g.add_initializer("w", make({1, 2, 3, 4}, {2, 2}, DType::Float32));
  g.add_initializer("shape", make({4}, {1}, DType::Int64));
  g.add_node({"identity", "", {"w"}, {"same"}, {}});
  g.add_node({"reshape", "", {"w", "shape"}, {"flat"}, {}});
  g.add_output({"same", DType::Float32, std::nullopt});
  g.add_output({"flat", DType::Float32, std::nullopt});
  g.add_output({"w", DType::Float32, std::nullopt});
  for (Device d : host_devices()) {
    for (int run = 0; run < 2; ++run) {
      auto out = g.run({{"x", zeros({1})}}, d);
      for (const char* name : {"same", "flat", "w"}) {
        EXPECT_EQ(values(out.at(name).to(Device::cpu())), (std::vector<double>{1, 2, 3, 4}))
            << name << " on " << fmt::format("{}", d) << ", run " << run;
        out.at(name).fill_(-1);
      }
    }
  }
  EXPECT_EQ(values(g.initializers().at("w")), (std::vector<double>{1, 2, 3, 4}));
}

TEST(Graph, ChecksInputsAgainstTheirDeclaration) {
  const Graph g = linear_relu();
  expect_error([&] { g.run({}); }, {"[graph] missing input 'x'", "inputs are: x"});
  expect_error(
      [&] {
        g.run({{"x", zeros({2, 2})}, {"q", zeros({1})}});
      },
      {"[graph] unknown input 'q'"});
  EXPECT_THROW(g.run({{"x", zeros({2, 2}, DType::Float64)}}), TypeError);
  expect_error(
      [&] {
        g.run({{"x", zeros({2, 2}, DType::Float64)}});
      },
      {"input 'x' has the wrong dtype: got float64", "declares float32"});
  expect_error(
      [&] {
        g.run({{"x", zeros({2, 3})}});
      },
      {"input 'x' has the wrong shape: got [2, 3]", "declares [N, 2]"});
  expect_error([&] { g.run({{"x", zeros({2})}}); }, {"input 'x' has the wrong rank"});
  EXPECT_THROW(g.run({{"x", zeros({2, 3})}}), ValueError);
}

TEST(Graph, BindsASymbolicDimOncePerRun) {
  Graph g;
  g.add_input({"a", DType::Float32, std::vector<Dim>{{-1, "batch"}}});
  g.add_input({"b", DType::Float32, std::vector<Dim>{{-1, "batch"}}});
  g.add_node({"add", "", {"a", "b"}, {"c"}, {}});
  g.add_output({"c", DType::Float32, std::nullopt});
  EXPECT_EQ(values(g.run({{"a", ones({4})}, {"b", ones({4})}}).at("c")),
            std::vector<double>(4, 2.0));
  expect_error(
      [&] {
        g.run({{"a", ones({4})}, {"b", ones({1})}});
      },
      {"input 'b' binds dim 'batch' to 1", "earlier input bound it to 4"});
}

TEST(Graph, RefusesNodesItCannotRun) {
  Graph g;
  g.add_input({"x", DType::Float32, std::nullopt});
  EXPECT_THROW(g.add_node({"frobnicate", "n1", {"x"}, {"y"}, {}}), NotImplementedError);
  expect_error(
      [&] {
        g.add_node({"frobnicate", "n1", {"x"}, {"y"}, {}});
      },
      {"[graph] node 'n1' (frobnicate): unknown op 'frobnicate'", "conv"});
  EXPECT_THROW(g.add_node({"relu", "n2", {"x"}, {"y"}, {{"alpha", 1.0}}}), NotImplementedError);
  expect_error(
      [&] {
        g.add_node({"softmax", "n3", {"x"}, {"y"}, {{"dim", int64_t{1}}}});
      },
      {"attribute 'dim' is not supported", "the attributes of softmax are: axis"});
  EXPECT_THROW(g.add_node({"softmax", "n4", {"x"}, {"y"}, {{"axis", 1.5}}}), TypeError);
  // A string attribute's value must be one the op implements.
  g.add_initializer("pads", make({1, 1}, {2}, DType::Int64));
  EXPECT_THROW(g.add_node({"pad", "n9", {"x", "pads"}, {"y"}, {{"mode", std::string("mirror")}}}),
               NotImplementedError);
  expect_error(
      [&] {
        g.add_node({"pad", "n9", {"x", "pads"}, {"y"}, {{"mode", std::string("mirror")}}});
      },
      {"node 'n9' (pad): attribute mode='mirror' is not supported", "constant, reflect, edge"});
  expect_error(
      [&] {
        g.add_node({"add", "n5", {"x"}, {"y"}, {}});
      },
      {"wrong number of inputs: got 1, expected 2 to 2"});
  expect_error(
      [&] {
        g.add_node({"add", "n6", {"x", "later"}, {"y"}, {}});
      },
      {"input 'later' is not defined before the node", "topological order"});
  g.add_node({"relu", "n7", {"x"}, {"y"}, {}});
  expect_error(
      [&] {
        g.add_node({"relu", "n8", {"x"}, {"y"}, {}});
      },
      {"output 'y' is already defined"});
  g.add_output({"nowhere", DType::Float32, std::nullopt});
  expect_error([&] { g.validate(); }, {"output 'nowhere' is not produced"});
}

TEST(Graph, OpErrorsNameTheNode) {
  Graph g;
  g.add_input({"x", DType::Float32, std::nullopt});
  g.add_initializer("shape", make({5, -1}, {2}, DType::Int64));
  g.add_node({"reshape", "to_rows", {"x", "shape"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  EXPECT_THROW(g.run({{"x", zeros({2, 3})}}), ValueError);
  g.add_node({"concat", "glue", {"x", "x"}, {"z"}, {}});
  g.add_output({"z", DType::Float32, std::nullopt});
  expect_error(
      [&] {
        g.run({{"x", zeros({5, 2})}});
      },
      {"[concat] node 'glue': attribute axis is required"});
}

TEST(Graph, RecurrentOpsCheckTheirActivationsWhenAdded) {
  Graph g;
  g.add_input({"x", DType::Float32, std::nullopt});
  g.add_input({"w", DType::Float32, std::nullopt});
  g.add_input({"r", DType::Float32, std::nullopt});
  using Names = std::vector<std::string>;
  EXPECT_THROW(g.add_node({"lstm",
                           "cell",
                           {"x", "w", "r"},
                           {"y"},
                           {{"activations", Names{"Sigmoid", "Swish", "Tanh"}}}}),
               NotImplementedError);
  expect_error(
      [&] {
        g.add_node({"lstm",
                    "cell",
                    {"x", "w", "r"},
                    {"y"},
                    {{"activations", Names{"Sigmoid", "Swish", "Tanh"}}}});
      },
      {"[graph] node 'cell' (lstm): attribute activations names 'Swish'", "HardSigmoid"});
  expect_error(
      [&] {
        g.add_node({"gru",
                    "g1",
                    {"x", "w", "r"},
                    {"y"},
                    {{"activations", Names{"Sigmoid", "Tanh", "Tanh"}},
                     {"direction", std::string("bidirectional")}}});
      },
      {"node 'g1' (gru): attribute activations must list 2 activations per direction (4 for 2",
       "got 3"});
  expect_error(
      [&] {
        g.add_node(
            {"rnn",
             "r1",
             {"x", "w", "r"},
             {"y"},
             {{"activations", Names{"Tanh"}}, {"activation_alpha", std::vector<double>{1}}}});
      },
      {"node 'r1' (rnn): attributes activation_alpha and activation_beta hold 1 and 0 values",
       "take 0 and 0"});
  expect_error(
      [&] {
        g.add_node({"rnn", "r2", {"x", "w", "r"}, {"y"}, {{"layout", int64_t{2}}}});
      },
      {"node 'r2' (rnn): attribute layout must be 0 or 1: got 2"});
  EXPECT_THROW(
      g.add_node({"rnn", "r3", {"x", "w", "r"}, {"y"}, {{"direction", std::string("both")}}}),
      NotImplementedError);
  // Lower-case names are the same activations (as onnxruntime reads them).
  g.add_node({"rnn", "ok", {"x", "w", "r"}, {"y"}, {{"activations", Names{"relu"}}}});
}

TEST(Graph, RecurrentOpsCheckTheirInputsWhenRun) {
  Graph g;
  g.add_input({"x", DType::Float32, std::nullopt});
  g.add_initializer("w", zeros({1, 2, 3}));
  g.add_initializer("r", zeros({1, 2, 2}));
  g.add_initializer("lens", make({2, 5}, {2}, DType::Int32));
  g.add_node({"rnn", "cell", {"x", "w", "r", "", "lens"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  expect_error(
      [&] {
        g.run({{"x", zeros({4, 2, 3})}});
      },
      {"[rnn] node 'cell': sequence_lens holds 5, outside 0 to the sequence length 4"});
  expect_error(
      [&] {
        g.run({{"x", zeros({4, 2, 5})}});
      },
      {"[rnn] node 'cell': W must be [1, 2, 5]", "got shape [1, 2, 3]"});
  const Tensor y = g.run({{"x", zeros({5, 2, 3})}}).at("y");
  EXPECT_EQ(y.sizes(), Shape({5, 1, 2, 2}));
}

TEST(Graph, ResizeChecksItsAttributesWhenAddedAndItsInputsWhenRun) {
  Graph g;
  g.add_input({"x", DType::Float32, std::nullopt});
  g.add_initializer("scales", make({1, 2}, {2}, DType::Float32));
  g.add_initializer("sizes", make({2, 4}, {2}, DType::Int64));
  expect_error(
      [&] {
        g.add_node({"resize",
                    "up",
                    {"x", "", "scales"},
                    {"y"},
                    {{"mode", std::string("cubic")},
                     {"coordinate_transformation_mode", std::string("tf_half_pixel_for_nn")}}});
      },
      {"[graph] node 'up' (resize): attribute "
       "coordinate_transformation_mode='tf_half_pixel_for_nn' is for mode nearest only: got "
       "mode 'cubic'"});
  expect_error(
      [&] {
        g.add_node(
            {"resize", "up", {"x", "", "scales"}, {"y"}, {{"axes", std::vector<int64_t>{1, 1}}}});
      },
      {"node 'up' (resize): attribute axes names an axis twice: [1, 1]"});
  g.add_node({"resize", "both", {"x", "", "scales", "sizes"}, {"y"}, {}});
  g.add_output({"y", DType::Float32, std::nullopt});
  expect_error(
      [&] {
        g.run({{"x", zeros({2, 2})}});
      },
      {"[resize] node 'both': exactly one of scales and sizes must be given: got both"});
  // An axis named twice once wrapped into the input's rank.
  Graph h;
  h.add_input({"x", DType::Float32, std::nullopt});
  h.add_initializer("scales", make({1, 2}, {2}, DType::Float32));
  h.add_node(
      {"resize", "twice", {"x", "", "scales"}, {"y"}, {{"axes", std::vector<int64_t>{1, -1}}}});
  h.add_output({"y", DType::Float32, std::nullopt});
  expect_error(
      [&] {
        h.run({{"x", zeros({2, 2})}});
      },
      {"[resize] node 'twice': axes names axis 1 twice: [1, -1]"});
  Graph c;
  c.add_input({"x", DType::Float32, std::nullopt});
  c.add_initializer("scales", make({1, 2}, {2}, DType::Float32));
  c.add_node({"resize",
              "crop",
              {"x", "", "scales"},
              {"y"},
              {{"coordinate_transformation_mode", std::string("tf_crop_and_resize")}}});
  c.add_output({"y", DType::Float32, std::nullopt});
  expect_error(
      [&] {
        c.run({{"x", zeros({2, 2})}});
      },
      {"[resize] node 'crop': coordinate_transformation_mode tf_crop_and_resize needs the "
       "roi input"});
}

/** A branch that gives `op`(x, k) with x and k read from the enclosing graph. */
std::shared_ptr<const Graph> branch(const char* op) {
  auto g = std::make_shared<Graph>();
  g->add_outer("x");
  g->add_outer("k");
  g->add_node({op, "", {"x", "k"}, {"out"}, {}});
  g->add_output({"out", DType::Float32, std::nullopt});
  return g;
}

TEST(Graph, IfRunsTheBranchItPicksOnTheEnclosingGraphsValues) {
  Graph g;
  g.add_input({"c", DType::Bool, std::nullopt});
  g.add_input({"x", DType::Float32, std::nullopt});
  g.add_initializer("k", make({10, 20}, {2}, DType::Float32));
  // The outer values x and k follow the If's own input, as the importer appends them.
  g.add_node({"if",
              "pick",
              {"c", "x", "k"},
              {"y"},
              {{"then_branch", branch("add")}, {"else_branch", branch("mul")}}});
  g.add_output({"y", DType::Float32, std::nullopt});
  const Tensor x = make({1, 2}, {2}, DType::Float32);
  for (Device d : host_devices()) {
    EXPECT_EQ(
        values(g.run({{"c", make({1}, {}, DType::Bool)}, {"x", x}}, d).at("y").to(Device::cpu())),
        std::vector<double>({11, 22}));
    EXPECT_EQ(
        values(g.run({{"c", make({0}, {}, DType::Bool)}, {"x", x}}, d).at("y").to(Device::cpu())),
        std::vector<double>({10, 40}));
  }
  // A branch run on its own needs its outer values.
  expect_error(
      [&] {
        branch("add")->run({{"x", x}});
      },
      {"[graph] missing outer value 'k' (the subgraph reads: x, k)"});
  Graph s;
  s.add_input({"x", DType::Float32, std::nullopt});
  expect_error([&] { s.add_outer("x"); }, {"outer value 'x' is already defined"});
}

TEST(Graph, IfAndLoopCheckTheirSubgraphsWhenAdded) {
  Graph g;
  g.add_input({"c", DType::Bool, std::nullopt});
  g.add_input({"x", DType::Float32, std::nullopt});
  g.add_initializer("k", make({10, 20}, {2}, DType::Float32));
  expect_error(
      [&] {
        g.add_node({"if",
                    "pick",
                    {"c", "x", "k"},
                    {"y", "z"},
                    {{"then_branch", branch("add")}, {"else_branch", branch("mul")}}});
      },
      {"[graph] node 'pick' (if): attribute then_branch must take no inputs and give the node's 2 "
       "outputs: it takes 0 and gives 1"});
  expect_error(
      [&] {
        g.add_node({"if", "pick", {"c"}, {"y"}, {{"then_branch", branch("add")}}});
      },
      {"node 'pick' (if): attribute else_branch (a graph) is required"});
  EXPECT_THROW(g.add_node({"if", "pick", {"c"}, {"y"}, {{"then_branch", int64_t{1}}}}), TypeError);
  auto body = std::make_shared<Graph>();
  body->add_input({"i", DType::Int64, std::nullopt});
  body->add_input({"cond", DType::Bool, std::nullopt});
  body->add_input({"v", DType::Float32, std::nullopt});
  body->add_output({"cond", DType::Bool, std::nullopt});
  body->add_output({"v", DType::Float32, std::nullopt});
  expect_error(
      [&] {
        g.add_node({"loop", "l", {"", "c"}, {"y"}, {{"body", body}}});
      },
      {"node 'l' (loop): the node must take M, cond and the body's 1 loop-carried "
       "values",
       "it takes 2 inputs and gives 1 outputs"});
  expect_error(
      [&] {
        g.add_node({"loop", "l", {"", "c", ""}, {"y"}, {{"body", body}}});
      },
      {"node 'l' (loop): loop-carried value 0 is required but omitted"});
  g.add_node({"loop", "l", {"", "c", "x"}, {"y"}, {{"body", body}}});
}

TEST(Graph, MaxPoolIndicesCountOverTheWholeInput) {
  // ONNX's Indices of MaxPool are flat over [N, C, H, W] (storage_order 0) or with the spatial
  // dims column-major (storage_order 1), by hand for a 1 x 2 x 2 x 3 input and a 2 x 2 window.
  const Tensor x = make({1, 9, 3, 4, 2, 10, /*c1*/ 7, 0, 5, 6, 1, 2}, {1, 2, 2, 3}, DType::Float32);
  for (int64_t order : {0, 1}) {
    Graph g;
    g.add_input({"x", DType::Float32, std::nullopt});
    g.add_node({"max_pool",
                "",
                {"x"},
                {"y", "i"},
                {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"storage_order", order}}});
    g.add_output({"y", DType::Float32, std::nullopt});
    g.add_output({"i", DType::Int64, std::nullopt});
    for (Device d : host_devices()) {
      auto out = g.run({{"x", x}}, d);
      EXPECT_EQ(values(out.at("y").to(Device::cpu())), (std::vector<double>{9, 10, 7, 5}));
      // Row-major: (h, w) -> h * 3 + w; column-major: h + w * 2; plus c * 6.
      const std::vector<double> expected =
          order == 0 ? std::vector<double>{1, 5, 6, 8} : std::vector<double>{2, 5, 6, 10};
      EXPECT_EQ(values(out.at("i").to(Device::cpu())), expected) << "storage_order " << order;
    }
  }
}

TEST(Graph, ScatterReductionsMulMaxMinCombineEveryUpdate) {
  // ONNX's ScatterElements and ScatterND apply each index's updates in turn to the data, by hand:
  // data [1, 2, 3, 4, 5] with updates 2 and 3 at index 1 and 4 at index 3.
  const Tensor data = make({1, 2, 3, 4, 5}, {5}, DType::Float32);
  const Tensor upd = make({2, 3, 4}, {3}, DType::Float32);
  const Tensor idx = make({1, 1, 3}, {3}, DType::Int64);
  const std::map<std::string, std::vector<double>> expected{
      {"mul", {1, 12, 3, 16, 5}}, {"max", {1, 3, 3, 4, 5}}, {"min", {1, 2, 3, 4, 5}}};
  for (const auto& [reduction, want] : expected) {
    Graph g;
    g.add_input({"data", DType::Float32, std::nullopt});
    g.add_input({"idx", DType::Int64, std::nullopt});
    g.add_input({"nd_idx", DType::Int64, std::nullopt});
    g.add_input({"upd", DType::Float32, std::nullopt});
    g.add_node(
        {"scatter_elements", "se", {"data", "idx", "upd"}, {"a"}, {{"reduction", reduction}}});
    g.add_node({"scatter_nd", "sn", {"data", "nd_idx", "upd"}, {"b"}, {{"reduction", reduction}}});
    g.add_output({"a", DType::Float32, std::nullopt});
    g.add_output({"b", DType::Float32, std::nullopt});
    for (Device d : host_devices()) {
      auto out =
          g.run({{"data", data}, {"idx", idx}, {"nd_idx", idx.reshape({3, 1})}, {"upd", upd}}, d);
      EXPECT_EQ(values(out.at("a").to(Device::cpu())), want) << reduction;
      EXPECT_EQ(values(out.at("b").to(Device::cpu())), want) << reduction;
    }
  }
}

TEST(Graph, SeededTrainingDropoutDrawsNumPysMask) {
  // NumPy: np.random.seed(0); np.random.uniform(0, 1, 6) is 0.5488, 0.7152, 0.6028, 0.5449,
  // 0.4237, 0.6459; kept where >= ratio 0.6, scaled by 1 / 0.4.
  const Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float32);
  Graph g;
  g.add_input({"x", DType::Float32, std::nullopt});
  g.add_initializer("r", make({0.6}, {}, DType::Float32));
  g.add_initializer("t", make({1}, {}, DType::Bool));
  g.add_node({"dropout", "drop", {"x", "r", "t"}, {"y", "mask"}, {{"seed", int64_t{0}}}});
  g.add_output({"y", DType::Float32, std::nullopt});
  g.add_output({"mask", DType::Bool, std::nullopt});
  for (Device d : host_devices()) {
    auto out = g.run({{"x", x}}, d);
    EXPECT_EQ(values(out.at("mask").to(Device::cpu())), (std::vector<double>{0, 1, 1, 0, 0, 1}));
    const std::vector<double> y = values(out.at("y").to(Device::cpu()));
    const std::vector<double> want{0, 5, 7.5, 0, 0, 15};
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-5) << i;
  }
  // Without a seed, the core's dropout: every element is 0 or scaled, and the mask says which.
  Graph u;
  u.add_input({"x", DType::Float32, std::nullopt});
  u.add_initializer("r", make({0.5}, {}, DType::Float32));
  u.add_initializer("t", make({1}, {}, DType::Bool));
  u.add_node({"dropout", "drop", {"x", "r", "t"}, {"y", "mask"}, {}});
  u.add_output({"y", DType::Float32, std::nullopt});
  u.add_output({"mask", DType::Bool, std::nullopt});
  const Tensor big = add(zeros({4000}, TensorOptions(DType::Float32)), Scalar(1.0));
  auto out = u.run({{"x", big}}, Device::cpu());
  const std::vector<double> y = values(out.at("y")), mask = values(out.at("mask"));
  double kept = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_EQ(y[i], mask[i] * 2.0) << i;
    kept += mask[i];
  }
  EXPECT_GT(kept, 1800);
  EXPECT_LT(kept, 2200);
  // A ratio of 1 in training mode is refused.
  Graph bad;
  bad.add_input({"x", DType::Float32, std::nullopt});
  bad.add_initializer("r", make({1.0}, {}, DType::Float32));
  bad.add_initializer("t", make({1}, {}, DType::Bool));
  bad.add_node({"dropout", "drop", {"x", "r", "t"}, {"y"}, {}});
  bad.add_output({"y", DType::Float32, std::nullopt});
  expect_error(
      [&] {
        bad.run({{"x", x}}, Device::cpu());
      },
      {"ratio must be in [0, 1) in training mode: got 1"});
}

TEST(GraphOps, EveryOpHasASortedUniqueName) {
  const std::vector<std::string_view> names = op_names();
  ASSERT_GT(names.size(), 100u);
  for (size_t i = 1; i < names.size(); ++i) EXPECT_LT(names[i - 1], names[i]);
  for (std::string_view n : names) ASSERT_NE(find_op(n), nullptr) << n;
  EXPECT_EQ(find_op("Conv"), nullptr);
}

}  // namespace
}  // namespace ember::graph

namespace ember::graph {
namespace {

TEST(Graph, FreesEachValueAfterItsLastReader) {
  // A chain of six 64 MiB intermediates: a run that kept them all would peak near 400 MiB above
  // the input; freed at their last reader, two are alive at a time.
  const int64_t n = 16 << 20;
  Graph g;
  g.add_input({"x", DType::Float32, std::vector<Dim>{{n, ""}}});
  std::string prev = "x";
  for (int i = 0; i < 6; ++i) {
    const std::string out = i == 5 ? "y" : "v" + std::to_string(i);
    g.add_node({"neg", "n" + std::to_string(i), {prev}, {out}, {}});
    prev = out;
  }
  g.add_output({"y", DType::Float32, std::nullopt});
  const Tensor x = zeros({n});
  const uint64_t before = memory_stats(Device::cpu()).allocated;
  const uint64_t bytes = static_cast<uint64_t>(n) * 4;
  std::map<std::string, Tensor> out = g.run({{"x", x}});
  const uint64_t peak = memory_stats(Device::cpu()).peak_allocated;
  EXPECT_LE(peak, before + 3 * bytes) << "peak " << peak << " bytes above " << before;
  EXPECT_EQ(out.at("y").numel(), n);
}

}  // namespace
}  // namespace ember::graph
