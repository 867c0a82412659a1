// ONNX export: functions and modules exported, loaded back with load_onnx_bytes and run, their
// outputs compared with the function's own; parameters as named initializers; dynamic axes
// running at another batch size; and what has no ONNX form refused by name.
#include <gtest/gtest.h>

#define ONNX_ML 1
#include <onnx/onnx_pb.h>

#include <ember/ember.h>
#include <ember/graph/onnx.h>

#include <set>

#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::graph {
namespace {

using ember::testing::expect_error;
using ember::testing::TempDir;
using ember::testing::values;

/** The model's outputs for `inputs` (fed by the model's input names, in order). */
std::vector<Tensor> run_loaded(const std::string& bytes, const std::vector<Tensor>& inputs) {
  const Graph g = load_onnx_bytes(bytes);
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds[g.inputs()[i].name] = inputs[i];
  return g.run_ordered(feeds);
}

void expect_near(const Tensor& got, const Tensor& want, double tol = 1e-5) {
  ASSERT_EQ(got.sizes(), want.sizes());
  const std::vector<double> g = values(got), w = values(want);
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], tol) << "element " << i;
}

/** Exports `fn`, loads it back and compares its outputs with fn's on the same inputs. */
std::string round_trip(const TensorFn& fn, const std::vector<Tensor>& inputs,
                       const ExportOptions& opts = {}) {
  const std::string bytes = export_onnx_bytes(fn, inputs, opts);
  std::vector<Tensor> want;
  {
    autograd::NoGradGuard no_grad;
    want = fn(inputs);
  }
  const std::vector<Tensor> got = run_loaded(bytes, inputs);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) expect_near(got[i], want[i]);
  return bytes;
}

std::set<std::string> op_types(const std::string& bytes) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  std::set<std::string> ops;
  for (const auto& n : m.graph().node()) ops.insert(n.op_type());
  return ops;
}

/** The nodes of `bytes` of type `op`. */
std::vector<onnx::NodeProto> nodes_of(const std::string& bytes, const std::string& op) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  std::vector<onnx::NodeProto> found;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == op) found.push_back(n);
  }
  return found;
}

/** The integer or string attribute `name` of `n` ("" / -1 when it has none). */
std::string attribute(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name)
      return a.type() == onnx::AttributeProto::STRING ? a.s() : std::to_string(a.i());
  }
  return "";
}

TEST(OnnxExport, ElementwiseBroadcastScalarsAndViews) {
  manual_seed(1);
  const Tensor a = randn({2, 3, 4}), b = randn({4}), c = randn({3, 1});
  const std::string bytes = round_trip(
      [](const std::vector<Tensor>& in) {
        Tensor y = (in[0] + in[1]) * 2.0 - in[2] / 3.0;            // broadcasting, scalars
        y = y.transpose(1, 2);                                     // [2, 4, 3]
        Tensor z = y.permute({2, 0, 1}).contiguous();              // [3, 2, 4]
        Tensor w = cat({z, z.narrow(2, 1, 2)}, 2);                 // [3, 2, 6]
        Tensor p = pad(w.select(0, 1), {1, 2}, "constant", -1.0);  // [2, 9]
        return std::vector<Tensor>{sigmoid(w.reshape({6, 6})), matmul(y, in[2]), p};
      },
      {a, b, c});
  const std::set<std::string> ops = op_types(bytes);
  for (const char* op : {"Add", "Mul", "Sub", "Div", "Transpose", "Concat", "MatMul", "Pad"}) {
    EXPECT_TRUE(ops.count(op)) << op;
  }
}

TEST(OnnxExport, MlpWithNamedParameters) {
  manual_seed(2);
  nn::Sequential mlp({std::make_shared<nn::Linear>(8, 16), std::make_shared<nn::ReLU>(),
                      std::make_shared<nn::Linear>(16, 4), std::make_shared<nn::LogSoftmax>(1)});
  const Tensor x = randn({5, 8});
  TempDir dir;
  const auto path = dir.path() / "mlp.onnx";
  ExportOptions opts;
  opts.input_names = {"x"};
  opts.output_names = {"y"};
  export_onnx(mlp, {x}, path, opts);
  const Graph g = load_onnx(path);
  std::set<std::string> inits;
  for (const auto& [name, t] : g.initializers()) inits.insert(name);
  for (const char* name : {"0.weight", "0.bias", "2.weight", "2.bias"}) {
    EXPECT_TRUE(inits.count(name)) << name;
  }
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0].name, "x");
  EXPECT_EQ(g.outputs()[0].name, "y");
  autograd::NoGradGuard no_grad;
  expect_near(g.run({{"x", x}}).at("y"), mlp(x));
}

/** A small CNN: grouped strided convolution with bias, batch norm (eval), the activations, the
 *  poolings, flatten and a linear layer. */
struct SmallCnn : nn::Module {
  SmallCnn() : nn::Module("SmallCnn") {
    conv1 = register_module(
        "conv1", std::make_shared<nn::Conv2d>(
                     4, 8, nn::Pair(3), nn::Conv2dOptions{.stride = 2, .padding = 1, .groups = 2}));
    bn = register_module("bn", std::make_shared<nn::BatchNorm2d>(8));
    conv2 = register_module(
        "conv2", std::make_shared<nn::Conv2d>(8, 8, nn::Pair(3), nn::Conv2dOptions{.padding = 1}));
    fc = register_module("fc", std::make_shared<nn::Linear>(8 * 2 * 2, 3));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = gelu(bn->forward(conv1->forward(x)));
    y = max_pool2d(y, {2, 2}, {2, 2});
    y = tanh(conv2->forward(y)) + sigmoid(y);
    y = avg_pool2d(y, {3, 3}, {1, 1}, {1, 1});
    y = adaptive_avg_pool2d(y, {2, 2});
    return softmax(fc->forward(y.flatten(1)), 1);
  }
  std::shared_ptr<nn::Conv2d> conv1, conv2;
  std::shared_ptr<nn::BatchNorm2d> bn;
  std::shared_ptr<nn::Linear> fc;
};

TEST(OnnxExport, CnnInEvalModeWithDynamicBatch) {
  manual_seed(3);
  SmallCnn cnn;
  // Running statistics that are not the defaults, so eval mode matters.
  cnn.train(true);
  {
    autograd::NoGradGuard no_grad;
    for (int i = 0; i < 3; ++i) cnn.forward(randn({4, 4, 16, 16}) * 2.0 + 1.0);
  }
  const Tensor x = randn({2, 4, 16, 16});
  TempDir dir;
  const auto path = dir.path() / "cnn.onnx";
  ExportOptions opts;
  opts.input_names = {"x"};
  opts.dynamic_axes = {{"x", {{0, "batch"}}}, {"output_0", {{0, "batch"}}}};
  export_onnx(cnn, {x}, path, opts);
  EXPECT_TRUE(cnn.is_training());  // the mode is restored
  cnn.eval();
  const Graph g = load_onnx(path);
  ASSERT_EQ(g.inputs()[0].shape->at(0).symbol, "batch");
  autograd::NoGradGuard no_grad;
  for (const Tensor& in : {x, randn({5, 4, 16, 16})}) {
    expect_near(g.run({{"x", in}}).at("output_0"), cnn.forward(in));
  }
}

TEST(OnnxExport, TwoDynamicAxesReadFromTheInput) {
  // [batch, sequence, features]: the linear layer's rows are batch * sequence, and the result is
  // viewed back as [batch, sequence, out], a target of two dynamic dims.
  manual_seed(5);
  const Tensor w = randn({6, 4}), b = randn({6}), x = randn({2, 3, 4});
  const TensorFn fn = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{layer_norm(linear(in[0], w, b), {6}) + in[0].narrow(2, 0, 1)};
  };
  ExportOptions opts;
  opts.dynamic_axes = {{"input_0", {{0, "batch"}, {1, "sequence"}}}};
  opts.parameters = {{"w", w}, {"b", b}};
  const std::string bytes = export_onnx_bytes(fn, {x}, opts);
  EXPECT_TRUE(op_types(bytes).count("Shape"));
  autograd::NoGradGuard no_grad;
  for (const Tensor& in : {x, randn({5, 7, 4}), randn({1, 1, 4})}) {
    expect_near(run_loaded(bytes, {in})[0], fn({in})[0]);
  }
}

TEST(OnnxExport, ResNet18) {
  manual_seed(4);
  auto net = models::resnet18(10);
  net->eval();
  const Tensor x = randn({1, 3, 32, 32});
  ExportOptions opts;
  for (const auto& named : net->named_parameters()) opts.parameters.push_back(named);
  for (const auto& named : net->named_buffers()) opts.parameters.push_back(named);
  const std::string bytes = round_trip(
      [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{(*net)(in[0])}; }, {x}, opts);
  const std::set<std::string> ops = op_types(bytes);
  for (const char* op : {"Conv", "BatchNormalization", "Relu", "MaxPool", "GlobalAveragePool"}) {
    EXPECT_TRUE(ops.count(op)) << op;
  }
}

TEST(OnnxExport, RecurrentLayersAsLstmAndGruNodes) {
  manual_seed(6);
  for (bool bidirectional : {false, true}) {
    for (bool batch_first : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "bidirectional " << bidirectional << ", batch_first " << batch_first);
      const nn::RNNOptions o{
          .num_layers = 2, .batch_first = batch_first, .bidirectional = bidirectional};
      nn::LSTM lstm(5, 7, o);
      nn::GRU gru(5, 7, o);
      lstm.eval();
      gru.eval();
      const int64_t dirs = bidirectional ? 2 : 1;
      const Tensor x = batch_first ? randn({4, 3, 5}) : randn({3, 4, 5});
      const Tensor h0 = randn({2 * dirs, 4, 7}), c0 = randn({2 * dirs, 4, 7});
      const std::string lb = round_trip(
          [&](const std::vector<Tensor>& in) {
            auto [y, h, c] = lstm.forward(in[0], in[1], in[2]);
            return std::vector<Tensor>{y, h, c};
          },
          {x, h0, c0});
      // One node per layer and direction, reading the projection's weights itself.
      EXPECT_EQ(nodes_of(lb, "LSTM").size(), static_cast<size_t>(2 * dirs));
      EXPECT_FALSE(op_types(lb).count("Gemm"));
      const std::string gb = round_trip(
          [&](const std::vector<Tensor>& in) {
            auto [y, h] = gru.forward(in[0], Tensor());  // a zero initial state
            return std::vector<Tensor>{y, h};
          },
          {x});
      const std::vector<onnx::NodeProto> grus = nodes_of(gb, "GRU");
      ASSERT_EQ(grus.size(), static_cast<size_t>(2 * dirs));
      EXPECT_EQ(attribute(grus[0], "linear_before_reset"), "1");
      EXPECT_EQ(attribute(grus.back(), "direction"), bidirectional ? "reverse" : "forward");
    }
  }
  // Without bias, and through one step (a cell).
  nn::LSTM plain(3, 4, nn::RNNOptions{.bias = false});
  round_trip(
      [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{plain.forward(in[0])}; },
      {randn({2, 3, 3})});
  nn::GRUCell cell(3, 4);
  round_trip(
      [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{cell.forward(in[0], in[1])};
      },
      {randn({2, 3}), randn({2, 4})});
}

TEST(OnnxExport, RecurrentLayersWithDynamicBatchAndSequence) {
  manual_seed(7);
  nn::LSTM lstm(3, 4, nn::RNNOptions{.batch_first = true, .bidirectional = true});
  lstm.eval();
  const TensorFn fn = [&](const std::vector<Tensor>& in) {
    auto [y, h, c] = lstm.forward(in[0], Tensor(), Tensor());  // zero states of the batch's size
    return std::vector<Tensor>{y, h, c};
  };
  ExportOptions opts;
  opts.dynamic_axes = {{"input_0", {{0, "batch"}, {1, "sequence"}}}};
  const std::string bytes = export_onnx_bytes(fn, {randn({2, 3, 3})}, opts);
  autograd::NoGradGuard no_grad;
  for (const Tensor& in : {randn({2, 3, 3}), randn({5, 7, 3}), randn({1, 1, 3})}) {
    const std::vector<Tensor> got = run_loaded(bytes, {in}), want = fn({in});
    ASSERT_EQ(got.size(), 3u);
    for (size_t i = 0; i < 3; ++i) expect_near(got[i], want[i]);
  }
}

TEST(OnnxExport, ElmanRnnAsRnnNodes) {
  // The core composes the Elman RNN from matmuls and activations; its layer is still one RNN node
  // per layer and direction, with its activation.
  manual_seed(14);
  for (const char* nonlinearity : {"tanh", "relu"}) {
    for (bool bidirectional : {false, true}) {
      SCOPED_TRACE(::testing::Message() << nonlinearity << ", bidirectional " << bidirectional);
      nn::RNN rnn(5, 7, nn::RNNOptions{.num_layers = 2, .bidirectional = bidirectional},
                  nonlinearity);
      rnn.eval();
      const int64_t dirs = bidirectional ? 2 : 1;
      const std::string bytes = round_trip(
          [&](const std::vector<Tensor>& in) {
            auto [y, h] = rnn.forward(in[0], in[1]);
            return std::vector<Tensor>{y, h};
          },
          {randn({3, 4, 5}), randn({2 * dirs, 4, 7})});
      const std::vector<onnx::NodeProto> rnns = nodes_of(bytes, "RNN");
      ASSERT_EQ(rnns.size(), static_cast<size_t>(2 * dirs));
      EXPECT_EQ(attribute(rnns.back(), "direction"), bidirectional ? "reverse" : "forward");
      const std::set<std::string> ops = op_types(bytes);
      EXPECT_FALSE(ops.count("MatMul") || ops.count("Gemm") || ops.count("Tanh") ||
                   ops.count("Relu"));
      bool relu = false;
      for (const auto& a : rnns[0].attribute()) {
        if (a.name() == "activations") relu = a.strings_size() == 1 && a.strings(0) == "Relu";
      }
      EXPECT_EQ(relu, std::string_view(nonlinearity) == "relu");
    }
  }
  // One node, so the sequence length is a dynamic axis like the batch.
  nn::RNN rnn(3, 4, nn::RNNOptions{.batch_first = true, .bidirectional = true});
  rnn.eval();
  const TensorFn fn = [&](const std::vector<Tensor>& in) {
    auto [y, h] = rnn.forward(in[0], Tensor());
    return std::vector<Tensor>{y, h};
  };
  ExportOptions opts;
  opts.dynamic_axes = {{"input_0", {{0, "batch"}, {1, "sequence"}}}};
  const std::string bytes = export_onnx_bytes(fn, {randn({2, 3, 3})}, opts);
  autograd::NoGradGuard no_grad;
  for (const Tensor& in : {randn({2, 3, 3}), randn({5, 8, 3}), randn({1, 1, 3})}) {
    const std::vector<Tensor> got = run_loaded(bytes, {in}), want = fn({in});
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < 2; ++i) expect_near(got[i], want[i]);
  }
}

TEST(OnnxExport, RecurrentLayersOffTheCpu) {
  // On the reference backend the layer runs the backend's rnn_layer kernel, a reverse direction
  // between two flips of time whose index the core makes on the host and copies over: the
  // export writes the layer whole all the same, one node per direction.
  manual_seed(15);
  const Device ref("reference");
  const nn::RNNOptions o{.num_layers = 2, .bidirectional = true};
  nn::LSTM lstm(5, 6, o);
  nn::GRU gru(5, 6, o);
  nn::RNN rnn(5, 6, o);
  for (nn::Module* m : std::initializer_list<nn::Module*>{&lstm, &gru, &rnn}) {
    m->to(ref);
    m->eval();
  }
  const Tensor x = randn({4, 3, 5}).to(ref);
  const std::string lb = export_onnx_bytes(
      [&](const std::vector<Tensor>& in) {
        auto [y, h, c] = lstm.forward(in[0], Tensor(), Tensor());
        return std::vector<Tensor>{y, h, c};
      },
      {x});
  const std::string gb = export_onnx_bytes(
      [&](const std::vector<Tensor>& in) {
        auto [y, h] = gru.forward(in[0], Tensor());
        return std::vector<Tensor>{y, h};
      },
      {x});
  const std::string rb = export_onnx_bytes(
      [&](const std::vector<Tensor>& in) {
        auto [y, h] = rnn.forward(in[0], Tensor());
        return std::vector<Tensor>{y, h};
      },
      {x});
  EXPECT_EQ(nodes_of(lb, "LSTM").size(), 4u);
  EXPECT_EQ(nodes_of(gb, "GRU").size(), 4u);
  EXPECT_EQ(nodes_of(rb, "RNN").size(), 4u);
  autograd::NoGradGuard no_grad;
  const Tensor xc = x.to(Device::cpu());
  auto [ly, lh, lc] = lstm.forward(x, Tensor(), Tensor());
  auto [gy, gh] = gru.forward(x, Tensor());
  auto [ry, rh] = rnn.forward(x, Tensor());
  const std::vector<Tensor> lg = run_loaded(lb, {xc}), gg = run_loaded(gb, {xc}),
                            rg = run_loaded(rb, {xc});
  expect_near(lg[0], ly.to(Device::cpu()));
  expect_near(lg[1], lh.to(Device::cpu()));
  expect_near(lg[2], lc.to(Device::cpu()));
  expect_near(gg[0], gy.to(Device::cpu()));
  expect_near(gg[1], gh.to(Device::cpu()));
  expect_near(rg[0], ry.to(Device::cpu()));
  expect_near(rg[1], rh.to(Device::cpu()));
}

TEST(OnnxExport, ScatterReduceProdAmaxAmin) {
  manual_seed(16);
  const Tensor x = randn({3, 4}), src = randn({3, 5});
  const Tensor index = ember::testing::make({0, 1, 2, 0, 2, 0, 1, 1}, {2, 4}, DType::Int64);
  const auto fn = [](std::string_view reduce) {
    return [reduce](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{scatter_reduce(in[0], 0, in[1], in[2], reduce),
                                 scatter_reduce(in[0], 1, in[1], in[2], reduce, false)};
    };
  };
  // prod is ScatterElements' reduction "mul" at opset 17 already.
  const std::string prod = round_trip(fn("prod"), {x, index, src});
  std::multiset<std::string> reductions;
  for (const onnx::NodeProto& n : nodes_of(prod, "ScatterElements")) {
    reductions.insert(attribute(n, "reduction"));
  }
  EXPECT_EQ(reductions.count("mul"), 2u);
  EXPECT_EQ(reductions.count(""), 1u);  // include_self=false: the places start at 1
  // amax and amin need opset 18's "max" and "min": refused at 17 saying so, written at 18.
  for (const char* reduce : {"amax", "amin"}) {
    expect_error(
        [&] {
          export_onnx_bytes(fn(reduce), {x, index, src});
        },
        {"[onnx.export] scatter_reduce with reduce='", reduce, "which ONNX has from opset 18",
         "opset_version=18"});
    ExportOptions opts;
    opts.opset_version = 18;
    const std::string bytes = round_trip(fn(reduce), {x, index, src}, opts);
    EXPECT_EQ(nodes_of(bytes, "ScatterElements").size(), 3u);
  }
  // Integers, and the in-place form.
  const Tensor xi = ember::testing::make({5, -2, 7, 1, 0, 3}, {2, 3}, DType::Int64);
  const Tensor si = ember::testing::make({4, 9, -8, 2, 6, -1}, {2, 3}, DType::Int64);
  const Tensor ii = ember::testing::make({1, 0, 1, 1, 1, 0}, {2, 3}, DType::Int64);
  ExportOptions opts;
  opts.opset_version = 18;
  round_trip(
      [](const std::vector<Tensor>& in) {
        Tensor y = in[0] * 1;
        scatter_reduce_(y, 0, in[2], in[1], "amax", false);
        return std::vector<Tensor>{y, scatter_reduce(in[0], 0, in[2], in[1], "amin")};
      },
      {xi, si, ii}, opts);
}

TEST(OnnxExport, RandomDrawsAsOnnxRandomOps) {
  // rand, randn and dropout's mask become ONNX's random ops: the loaded model draws afresh, so
  // only the shapes and the draws' statistics can be compared, and what does not depend on
  // them exactly.
  manual_seed(17);
  const TensorFn fn = [](const std::vector<Tensor>& in) {
    const Tensor u = rand(in[0].sizes()), z = randn(in[0].sizes());
    return std::vector<Tensor>{u, z, dropout(ones_like(in[0]), 0.25, /*training=*/true),
                               in[0] * 2.0};
  };
  ExportOptions opts;
  opts.dynamic_axes = {{"input_0", {{0, "n"}}}};
  const std::string bytes = export_onnx_bytes(fn, {randn({4, 5})}, opts);
  EXPECT_EQ(nodes_of(bytes, "RandomUniformLike").size(), 2u);  // rand, and the mask's draw
  EXPECT_EQ(nodes_of(bytes, "RandomNormalLike").size(), 1u);
  const Tensor big = randn({4000, 5});
  const std::vector<Tensor> got = run_loaded(bytes, {big});
  ASSERT_EQ(got.size(), 4u);
  for (const Tensor& t : got) EXPECT_EQ(t.sizes(), big.sizes());
  const std::vector<double> u = values(got[0]), z = values(got[1]), d = values(got[2]);
  double mu = 0, mz = 0, vz = 0, kept = 0;
  for (size_t i = 0; i < u.size(); ++i) {
    EXPECT_TRUE(u[i] >= 0 && u[i] < 1);
    EXPECT_TRUE(d[i] == 0 || std::abs(d[i] - 1 / 0.75) < 1e-6);
    mu += u[i];
    mz += z[i];
    vz += z[i] * z[i];
    kept += d[i] != 0 ? 1 : 0;
  }
  const auto n = static_cast<double>(u.size());
  EXPECT_NEAR(mu / n, 0.5, 0.02);
  EXPECT_NEAR(mz / n, 0.0, 0.03);
  EXPECT_NEAR(vz / n, 1.0, 0.05);
  EXPECT_NEAR(kept / n, 0.75, 0.02);
  expect_near(got[3], big * 2.0);
  // Each run draws afresh.
  EXPECT_NE(values(run_loaded(bytes, {big})[0]), u);
  // A draw ONNX has no op for stays refused.
  expect_error(
      [&] {
        export_onnx_bytes(
            [](const std::vector<Tensor>& in) {
              return std::vector<Tensor>{in[0] + randint(0, 3, {3, 4}).to(DType::Float32)};
            },
            {randn({3, 4})});
      },
      {"[onnx.export] the function cannot be recorded", "random numbers"});
}

TEST(OnnxExport, LstmCellStatesOfEarlierStepsAreRefused) {
  manual_seed(8);
  // gates_x an input, not a projection: the node reads it through an identity W.
  const Tensor gx = randn({3, 2, 8}), w = randn({8, 2}), h0 = randn({2, 2}), c0 = randn({2, 2});
  for (bool reverse : {false, true}) {
    const int64_t last = reverse ? 0 : 2;
    round_trip(
        [&](const std::vector<Tensor>& in) {
          auto [h, c] = lstm_layer(in[0], w, h0, c0, reverse);
          return std::vector<Tensor>{h, c.select(0, last) * 2.0};
        },
        {gx});
  }
  expect_error(
      [&] {
        export_onnx_bytes(
            [&](const std::vector<Tensor>& in) {
              return std::vector<Tensor>{std::get<1>(lstm_layer(in[0], w, h0, c0))};
            },
            {gx});
      },
      {"[onnx.export] an output reads", "cell state before its last step"});
}

TEST(OnnxExport, ConvTransposeAsOnnxNode) {
  manual_seed(9);
  for (const nn::Conv2dOptions& o :
       {nn::Conv2dOptions{}, nn::Conv2dOptions{.stride = 2, .padding = 1, .output_padding = 1},
        nn::Conv2dOptions{.stride = {3, 2},
        .padding = {2, 1},
        .dilation = 2,
        .groups = 2,
        .bias = false,
        .output_padding = 1}}) {
    nn::ConvTranspose2d ct(4, 6, nn::Pair(3), o);
    const std::string bytes = round_trip(
        [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{ct.forward(in[0])}; },
        {randn({2, 4, 5, 6})});
    EXPECT_EQ(nodes_of(bytes, "ConvTranspose").size(), 1u);
  }
}

TEST(OnnxExport, SortAndTopkAsTopK) {
  // Ties: the kernels put the lower index first, and so does TopK.
  const Tensor x =
      ember::testing::make({1, 2, 1, 3, 2, 1, 0, 0, 5, 1, 1, 0}, {2, 6}, DType::Float32);
  const std::string bytes = round_trip(
      [](const std::vector<Tensor>& in) {
        std::vector<Tensor> out;
        for (bool descending : {false, true}) {
          for (int64_t dim : {0, 1}) {
            auto [v, i] = sort(in[0], dim, descending);
            out.push_back(v);
            out.push_back(i);
          }
        }
        for (bool largest : {false, true}) {
          for (bool sorted : {false, true}) {
            auto [v, i] = topk(in[0], 3, 1, largest, sorted);
            out.push_back(v);
            out.push_back(i);
          }
        }
        return out;
      },
      {x});
  EXPECT_EQ(op_types(bytes).count("TopK"), 1u);
  EXPECT_EQ(nodes_of(bytes, "TopK").size(), 10u);  // unsorted topk orders by index too
}

TEST(OnnxExport, ScatterAsScatterElements) {
  manual_seed(10);
  const Tensor x = randn({3, 4}), src = randn({3, 5});
  const Tensor index = ember::testing::make({0, 1, 2, 0, 2, 0, 1, 1}, {2, 4}, DType::Int64);
  const std::string bytes = round_trip(
      [](const std::vector<Tensor>& in) {
        Tensor twice = in[0] * 2.0;
        scatter_(twice, 1, in[1].narrow(1, 0, 2), in[2]);  // in place, src larger than index
        return std::vector<Tensor>{scatter(in[0], 0, in[1].narrow(0, 0, 1), in[2]),
                                   scatter_add(in[0], 0, in[1], in[2]), twice,
                                   scatter_reduce(in[0], 0, in[1], in[2], "sum"),
                                   scatter_reduce(in[0], 0, in[1], in[2], "mean", false)};
      },
      {x, index, src});
  const std::vector<onnx::NodeProto> scatters = nodes_of(bytes, "ScatterElements");
  std::multiset<std::string> reductions;
  for (const onnx::NodeProto& n : scatters) reductions.insert(attribute(n, "reduction"));
  EXPECT_EQ(reductions.count(""), 3u);  // scatter twice, and mean's scatter of zeros
  EXPECT_EQ(reductions.count("add"), 4u);
}

TEST(OnnxExport, ChannelsLastTensors) {
  manual_seed(11);
  nn::Conv2d conv(3, 4, nn::Pair(3), nn::Conv2dOptions{.padding = 1});
  round_trip(
      [&](const std::vector<Tensor>& in) {
        const Tensor y = conv.forward(in[0].contiguous(MemoryFormat::ChannelsLast));
        return std::vector<Tensor>{relu(y) + 1.0, y.flatten(1)};
      },
      {randn({2, 3, 5, 5})});
}

TEST(OnnxExport, EmbeddingOfInputIds) {
  // embedding's bounds check reads the ids on the host; index_select checks them too, so the
  // read decides nothing and the ids are a graph input.
  manual_seed(12);
  nn::Embedding emb(10, 3);
  const Tensor ids = ember::testing::make({1, 9, 0, 4, 4, 2}, {2, 3}, DType::Int64);
  const std::string bytes = round_trip(
      [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{emb.forward(in[0])}; },
      {ids});
  EXPECT_TRUE(op_types(bytes).count("Gather"));
  expect_error([&] { emb.forward(ember::testing::make({10}, {1}, DType::Int64)); },
               {"[embedding] index 10 is out of range"});
}

TEST(OnnxExport, InPlaceUpdatesOfBoxesOfComputedTensors) {
  manual_seed(13);
  const std::string bytes = round_trip(
      [](const std::vector<Tensor>& in) {
        Tensor y = in[0] * 2.0;
        y.narrow(1, 0, 2).copy_(in[0].narrow(1, 2, 2));  // columns 0 and 1 from 2 and 3
        Tensor box = y.narrow(0, 1, 2).narrow(1, 1, 2);
        mul_(box, 0.0);  // a box of rows and columns zeroed
        Tensor flags = gt(in[0], 0.0);
        flags.narrow(0, 0, 1).fill_(true);  // a bool tensor's row
        return std::vector<Tensor>{y, flags};
      },
      {randn({3, 4})});
  EXPECT_EQ(nodes_of(bytes, "Where").size(), 3u);
}

TEST(OnnxExport, RefusesWhatHasNoOnnxForm) {
  const Tensor x = randn({3, 4});
  // A kernel with no row in the table, named.
  expect_error(
      [&] {
        export_onnx_bytes(
            [](const std::vector<Tensor>& in) { return std::vector<Tensor>{cumprod(in[0], 1)}; },
            {x});
      },
      {"[onnx.export]", "'cumprod'", "no ONNX form"});
  // A host read decides what the function does: refused, not frozen into the graph.
  expect_error(
      [&] {
        export_onnx_bytes(
            [](const std::vector<Tensor>& in) {
              return std::vector<Tensor>{sum(in[0]).item() > 0 ? in[0] : -in[0]};
            },
            {x});
      },
      {"[onnx.export]", "read a tensor's values on the host"});
  // Batch norm in training mode.
  nn::BatchNorm2d bn(4);
  expect_error(
      [&] {
        export_onnx_bytes(
            [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{bn.forward(in[0])}; },
            {randn({2, 4, 3, 3})});
      },
      {"[onnx.export]", "training mode"});
  // A constant of the batch's size filled on the host inside the function: it would be fixed in
  // the file (a fill of that size follows the batch).
  ExportOptions opts;
  opts.dynamic_axes = {{"input_0", {{0, "n"}}}};
  expect_error(
      [&] {
        export_onnx_bytes(
            [](const std::vector<Tensor>& in) {
              Tensor c = empty({in[0].size(0), 1});
              for (int64_t i = 0; i < c.numel(); ++i) c.data_ptr<float>()[i] = 1.0f;
              return std::vector<Tensor>{in[0] + c};
            },
            {x}, opts);
      },
      {"[onnx.export] dynamic_axes", "depends on the dynamic axes"});
  const std::string filled = export_onnx_bytes(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{in[0] + ones({in[0].size(0), 1})};
      },
      {x}, opts);
  expect_near(run_loaded(filled, {randn({6, 4}) * 0.0})[0], ones({6, 4}));
  // An in-place update of a computed tensor's column (a window of lower rank).
  expect_error(
      [&] {
        export_onnx_bytes(
            [](const std::vector<Tensor>& in) {
              Tensor y = in[0] * 2.0;
              y.select(1, 0).copy_(in[0].select(1, 2));
              return std::vector<Tensor>{y};
            },
            {x});
      },
      {"[onnx.export]", "updates part of a tensor", "no box of it"});
  ExportOptions clash;
  clash.input_names = {"y"};
  clash.output_names = {"y"};
  expect_error([&] { export_onnx_bytes([](const auto& in) { return in; }, {x}, clash); },
               {"[onnx.export] the output name 'y' is given twice, or is also an input's"});
  ExportOptions bad;
  bad.opset_version = 11;
  expect_error([&] { export_onnx_bytes([](const auto& in) { return in; }, {x}, bad); },
               {"[onnx.export] opset_version 11"});
}

}  // namespace
}  // namespace ember::graph
