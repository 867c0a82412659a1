// Ops defined by plugins (ABI 1.1): the example extension (myext::fused_bias_gelu) and the
// template load through load_plugin, compute the right values, differentiate, train inside a
// model and report errors; malformed or conflicting schemas are rejected and reported.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <ember/ember.h>
#include <ember/nn.h>
#include <ember/optim.h>

#include "tests/testing/build_paths.h"
#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

using ember::testing::expect_error;
using ember::testing::make;
using ember::testing::values;

constexpr const char* kGelu = "myext::fused_bias_gelu";
constexpr const char* kGeluBackward = "myext::fused_bias_gelu_backward";

std::string fixture(const char* name) {
  return std::string(EMBER_EXT_FIXTURE_DIR) + "/libember-fixture-ext-" + name + ".so";
}

// Loads the example once per process (a second load_plugin of the same file is "shadowed").
const PluginRecord& example() {
  static const PluginRecord rec = load_plugin(EMBER_EXAMPLE_PLUGIN);
  return rec;
}

double gelu_ref(double z) {
  return 0.5 * z * (1 + std::erf(z / std::sqrt(2.0)));
}
double gelu_grad_ref(double z) {
  return 0.5 * (1 + std::erf(z / std::sqrt(2.0))) +
         z * std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
}

// gelu(x + bias) in float64 over x's row-major values, bias over the last dim.
std::vector<double> forward_ref(const Tensor& x, const Tensor& bias) {
  const std::vector<double> xv = values(x), bv = values(bias);
  std::vector<double> out(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) out[i] = gelu_ref(xv[i] + bv[i % bv.size()]);
  return out;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "at " << i;
  }
}

TEST(ExtensionOps, ExampleLoadsAndIsListed) {
  const PluginRecord& rec = example();
  EXPECT_EQ(rec.outcome, PluginOutcome::Loaded) << rec.reason;
  EXPECT_EQ(rec.name, "fused_bias_gelu");
  EXPECT_EQ(rec.abi, "1.1");
  const OpSchema* op = find_extension_op(kGelu);
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->plugin, "fused_bias_gelu");
  EXPECT_FALSE(op->core);
  EXPECT_EQ(op->min_inputs, 2);
  EXPECT_EQ(op->max_inputs, 2);
  EXPECT_EQ(find_op_schema(kGelu), op);  // one lookup for every op
  EXPECT_EQ(op->op->schema(), op);
  EXPECT_EQ(op->backward_name, kGeluBackward);
  ASSERT_NE(op->backward, nullptr);
  EXPECT_EQ(op->backward->name, kGeluBackward);

  // ember::list_ops() (what `ember ops` prints) lists it with its kernels and where it comes from.
  bool found = false;
  for (const OpInfo& info : list_ops()) {
    if (info.name != kGelu) continue;
    found = true;
    EXPECT_NE(info.schema.find("defined by plugin fused_bias_gelu"), std::string::npos);
    ASSERT_FALSE(info.kernels.empty());
    EXPECT_EQ(info.kernels[0].first, "cpu");
    EXPECT_EQ(info.kernels[0].second, (std::vector<DType>{DType::Float32, DType::Float64}));
  }
  EXPECT_TRUE(found);
}

// Core ops and plugin ops share one schema type: the core's come from ember/ops.def.
TEST(ExtensionOps, CoreOpsHaveSchemasFromTheOpList) {
  const OpSchema* conv = find_op_schema("conv2d");
  ASSERT_NE(conv, nullptr);
  EXPECT_TRUE(conv->core);
  EXPECT_EQ(conv->plugin, "core");
  EXPECT_EQ(conv->min_inputs, 2);  // the bias is optional
  EXPECT_EQ(conv->max_inputs, 3);
  EXPECT_EQ(conv->num_ints, 7);
  EXPECT_TRUE(conv->differentiable);
  EXPECT_EQ(conv->op, &core_op(ops::conv2d));
  EXPECT_EQ(core_op(ops::conv2d).schema(), conv);
  EXPECT_TRUE(find_op_schema("relu_backward")->optional);
  EXPECT_EQ(find_op_schema("no_such_core_op"), nullptr);
  bool listed = false;
  for (const OpInfo& info : list_ops()) {
    if (info.name == "conv2d") {
      listed = true;
      EXPECT_NE(info.schema.find("core: 2 to 3 inputs -> 1 output, 7 int attrs, differentiable"),
                std::string::npos)
          << info.schema;
    }
  }
  EXPECT_TRUE(listed);
}

TEST(ExtensionOps, ForwardMatchesFloat64Reference) {
  example();
  manual_seed(1);
  for (DType dt : {DType::Float64, DType::Float32}) {
    const double tol = dt == DType::Float64 ? 1e-12 : 1e-5;
    for (Shape shape : {Shape{4, 5}, Shape{2, 3, 5}, Shape{5}, Shape{300, 129}}) {
      const Tensor x = randn(shape, dt), b = randn({shape.back()}, dt);
      const Tensor y = call_one(kGelu, {x, b});
      EXPECT_EQ(y.sizes(), shape);
      EXPECT_EQ(y.dtype(), dt);
      expect_near_all(values(y), forward_ref(x, b), tol);
    }
    // Non-contiguous views: a transposed x and a strided bias.
    const Tensor xt = randn({5, 4}, dt).t(), bs = randn({10}, dt).slice(0, 0, 10, 2);
    ASSERT_FALSE(xt.is_contiguous());
    expect_near_all(values(call_one(kGelu, {xt, bs})), forward_ref(xt, bs), tol);
    // Zero-size input: an empty output, the kernel is not run.
    const Tensor e = call_one(kGelu, {randn({0, 3}, dt), randn({3}, dt)});
    EXPECT_EQ(e.sizes(), (Shape{0, 3}));
  }
}

TEST(ExtensionOps, HandleAndCallAgree) {
  example();
  manual_seed(2);
  const Tensor x = randn({3, 4}, DType::Float64), b = randn({4}, DType::Float64);
  static const OpHandle gelu(kGelu);
  const Tensor a = gelu(x, b);
  const OpHandle copy = gelu;
  EXPECT_EQ(values(a), values(copy(x, b)));
  EXPECT_EQ(values(a), values(call(kGelu, {x, b})[0]));
  EXPECT_EQ(gelu.schema().name, kGelu);

  // The backward op is an op like any other: (grad, x, bias) -> (grad_x, grad_bias).
  const Tensor g = randn({3, 4}, DType::Float64);
  const std::vector<Tensor> grads = call(kGeluBackward, {g, x, b});
  ASSERT_EQ(grads.size(), 2u);
  const std::vector<double> gv = values(g), xv = values(x), bv = values(b);
  std::vector<double> gx(12), gb(4, 0.0);
  for (size_t i = 0; i < 12; ++i) {
    gx[i] = gv[i] * gelu_grad_ref(xv[i] + bv[i % 4]);
    gb[i % 4] += gx[i];
  }
  expect_near_all(values(grads[0]), gx, 1e-12);
  expect_near_all(values(grads[1]), gb, 1e-12);
}

TEST(ExtensionOps, GradientPassesGradcheck) {
  example();
  manual_seed(3);
  for (Shape shape : {Shape{3, 4}, Shape{2, 2, 3}}) {
    Tensor x = randn(shape, DType::Float64).requires_grad_();
    Tensor b = randn({shape.back()}, DType::Float64).requires_grad_();
    auto fn = [](const std::vector<Tensor>& in) { return call_one(kGelu, {in[0], in[1]}); };
    const autograd::GradcheckResult r = autograd::gradcheck(fn, {x, b});
    EXPECT_TRUE(r.ok) << r.message;
  }
  // Only x requires grad; x reaches the op as a transposed (non-contiguous) view.
  Tensor x = randn({4, 3}, DType::Float64).requires_grad_();
  const Tensor b = randn({4}, DType::Float64);
  auto fn = [&](const std::vector<Tensor>& in) { return call_one(kGelu, {in[0].t(), b}); };
  const autograd::GradcheckResult r = autograd::gradcheck(fn, {x});
  EXPECT_TRUE(r.ok) << r.message;

  // Nothing is recorded under no_grad.
  {
    autograd::NoGradGuard no_grad;
    EXPECT_FALSE(call_one(kGelu, {x.t(), b}).requires_grad());
  }
  EXPECT_TRUE(call_one(kGelu, {x.t(), b}).requires_grad());
}

// Linear -> fused_bias_gelu -> Linear on a toy regression: the loss must drop.
class Mlp : public nn::Module {
 public:
  Mlp()
      : fc1(register_module("fc1", std::make_shared<nn::Linear>(3, 16, /*bias=*/false))),
        fc2(register_module("fc2", std::make_shared<nn::Linear>(16, 1))),
        bias(register_parameter("bias", zeros({16}))) {}
  Tensor forward(const Tensor& x) override { return (*fc2)(gelu((*fc1)(x), bias)); }

  std::shared_ptr<nn::Linear> fc1, fc2;
  Tensor& bias;
  OpHandle gelu{kGelu};
};

TEST(ExtensionOps, TrainsInsideAModel) {
  example();
  manual_seed(4);
  const Tensor x = randn({128, 3});
  const std::vector<double> xv = values(x);
  std::vector<double> yv(128);
  for (size_t i = 0; i < 128; ++i) yv[i] = std::sin(xv[3 * i]) + xv[3 * i + 1] * xv[3 * i + 2];
  const Tensor y = make(yv, {128, 1}, DType::Float32);
  auto model = std::make_shared<Mlp>();
  optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    const Tensor loss = mse_loss((*model)(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    if (step == 0) first = loss.item();
    last = loss.item();
  }
  EXPECT_LT(last, 0.3 * first) << "first " << first << ", last " << last;
  ASSERT_TRUE(model->bias.grad().defined());  // the extension op's backward reached its bias
}

TEST(ExtensionOps, ErrorsNameTheOp) {
  example();
  const Tensor x = randn({2, 4}, DType::Float64), b = randn({4}, DType::Float64);
  expect_error([] { call("myext::no_such_op", {}); },
               {"[myext::no_such_op] unknown op", "myext::fused_bias_gelu", "load_plugin"});
  expect_error([] { OpHandle("myext::no_such_op").schema(); }, {"[myext::no_such_op] unknown op"});
  expect_error([&] { call("relu", {x}); }, {"[relu] not an op defined by a plugin", "ember::relu"});
  expect_error([&] { call(kGelu, {x}); },
               {"[myext::fused_bias_gelu] expected 2 inputs, got 1", "(x, bias)"});
  expect_error(
      [&] {
        call(kGelu, {x, b}, {1});
      },
      {"[myext::fused_bias_gelu] expected 0 integer attributes, got 1"});
  expect_error(
      [&] {
        call(kGelu, {x, Tensor()});
      },
      {"[myext::fused_bias_gelu] input 1 is an undefined tensor"});
  // The plugin's infer message surfaces with the op name in front.
  expect_error(
      [&] {
        call(kGelu, {x, randn({3}, DType::Float64)});
      },
      {"[myext::fused_bias_gelu] expected bias of shape [4] (the last dim of x [2, 4]), "
       "got [3]"});
  expect_error(
      [&] {
        call(kGelu, {x, b.to(DType::Float32)});
      },
      {"[myext::fused_bias_gelu] expected x and bias of one dtype, got float64 and "
       "float32"});
  // Inferred fine, but no kernel for the dtype: the dispatcher's usual message.
  expect_error(
      [&] {
        call(kGelu, {x.to(DType::Float16), b.to(DType::Float16)});
      },
      {"[myext::fused_bias_gelu] no kernel for device cpu and dtype float16",
       "cpu {float32, float64}"});
  // The backward op has two outputs: the single-output convenience refuses it.
  expect_error(
      [&] {
        call_one(kGeluBackward, {x, x, b});
      },
      {"[myext::fused_bias_gelu_backward] has 2 outputs", "ember::call"});
}

TEST(ExtensionOps, TemplatePluginLoadsAndRuns) {
  OpHandle scaled_add("my_ext::scaled_add");  // made before the plugin is loaded
  const PluginRecord rec = load_plugin(EMBER_TEMPLATE_PLUGIN);
  ASSERT_EQ(rec.outcome, PluginOutcome::Loaded) << rec.reason;
  EXPECT_EQ(rec.name, "my_ext");
  const Tensor x = randn({3, 2}).t(), y = randn({2, 3});
  const Tensor out = scaled_add.call_one({x, y}, {}, {2.5});
  const std::vector<double> xv = values(x), yv = values(y), ov = values(out);
  ASSERT_EQ(ov.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(ov[i], xv[i] + 2.5 * yv[i], 1e-5);
  expect_error(
      [&] {
        scaled_add.call_one({x, y});
      },
      {"[my_ext::scaled_add] expected 1 floating attribute, got 0"});
  expect_error(
      [&] {
        scaled_add.call_one({x, randn({3})}, {}, {1.0});
      },
      {"[my_ext::scaled_add] expected x and y of one shape and dtype"});

  // It names no backward op: using it on a tensor that requires grad fails at backward.
  Tensor xg = randn({2, 3}).requires_grad_();
  const Tensor r = scaled_add.call_one({xg, y}, {}, {1.0});
  EXPECT_TRUE(r.requires_grad());
  expect_error([&] { sum(r).backward(); },
               {"[my_ext::scaled_add] is not differentiable", "no backward op"});
}

TEST(ExtensionOps, MultipleOutputsSavedOutputsAndVersionChecks) {
  const PluginRecord rec = load_plugin(fixture("multi"));
  ASSERT_EQ(rec.outcome, PluginOutcome::Loaded) << rec.reason;
  manual_seed(5);
  Tensor x = randn({2, 3}, DType::Float64).requires_grad_();
  const std::vector<Tensor> out = call("fixture_multi::exp_and_square", {x});
  ASSERT_EQ(out.size(), 2u);
  const std::vector<double> xv = values(x), ev = values(out[0]), sv = values(out[1]);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(ev[i], std::exp(xv[i]), 1e-12);
    EXPECT_NEAR(sv[i], xv[i] * xv[i], 1e-12);
  }
  auto both = [](const std::vector<Tensor>& in) {
    const std::vector<Tensor> o = call("fixture_multi::exp_and_square", {in[0]});
    return o[0] + o[1] * 3.0;
  };
  EXPECT_TRUE(autograd::gradcheck(both, {x}).ok);
  auto first_only = [](const std::vector<Tensor>& in) {
    return call("fixture_multi::exp_and_square", {in[0]})[0];  // output 1 gets zeros
  };
  EXPECT_TRUE(autograd::gradcheck(first_only, {x}).ok);

  // A saved output modified in place before backward is reported.
  std::vector<Tensor> o = call("fixture_multi::exp_and_square", {x});
  Tensor loss = sum(o[1]);
  {
    autograd::NoGradGuard no_grad;
    mul_(o[0], 2.0);
  }
  EXPECT_THROW(loss.backward(), Error);
}

TEST(ExtensionOps, SchemaNamedLikeACoreOpIsRejectedAndRolledBack) {
  const PluginRecord rec = load_plugin(fixture("core_name"));
  EXPECT_EQ(rec.outcome, PluginOutcome::InitFailed);
  EXPECT_NE(rec.reason.find("op schema 'relu'"), std::string::npos) << rec.reason;
  EXPECT_NE(rec.reason.find("belong to the core"), std::string::npos) << rec.reason;
  // Nothing it staged remains: neither its valid op nor its kernel.
  EXPECT_EQ(find_extension_op("fixture_core::identity"), nullptr);
  for (const OpInfo& info : list_ops()) EXPECT_NE(info.name, "fixture_core::identity");
  expect_error([] { call("fixture_core::identity", {randn({2})}); },
               {"[fixture_core::identity] unknown op"});
}

TEST(ExtensionOps, MissingBackwardOpFailsInit) {
  const PluginRecord rec = load_plugin(fixture("bad_backward"));
  EXPECT_EQ(rec.outcome, PluginOutcome::InitFailed);
  EXPECT_NE(rec.reason.find("backward op 'fixture_bw::missing_backward' is not defined"),
            std::string::npos)
      << rec.reason;
  EXPECT_EQ(find_extension_op("fixture_bw::op"), nullptr);
}

TEST(ExtensionOps, SecondDefinitionOfAnOpIsRejectedAndRecorded) {
  example();
  const PluginRecord rec = load_plugin(fixture("dup"));
  EXPECT_EQ(rec.outcome, PluginOutcome::Loaded) << rec.reason;
  const PluginReport report = plugin_report();
  const bool recorded = std::any_of(report.conflicts.begin(), report.conflicts.end(), [](auto& c) {
    return c.find(
               "op myext::fused_bias_gelu of plugin ext-dup rejected: plugin "
               "fused_bias_gelu defined it first") != std::string::npos;
  });
  EXPECT_TRUE(recorded);
  EXPECT_EQ(find_extension_op(kGelu)->plugin, "fused_bias_gelu");
  // Its higher-priority kernel for the op was dropped with its schema: values are still gelu.
  const Tensor x = randn({2, 4}, DType::Float64), b = randn({4}, DType::Float64);
  expect_near_all(values(call_one(kGelu, {x, b})), forward_ref(x, b), 1e-12);
  // Its own op works.
  EXPECT_EQ(values(call_one("fixture_dup::identity", {x})), values(x));
}

// Paths in EMBER_PLUGIN_PATH load before the default plugin directory, and an extension
// registers kernels for the device types present when it loads: the CPU backend is listed first.
// `ember ops` with EMBER_PLUGIN_PATH set to `plugin_path`.
std::string cli_ops(const std::string& plugin_path) {
  const std::string cmd =
      "EMBER_PLUGIN_PATH=" + plugin_path + " " + std::string(EMBER_CLI) + " ops 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  if (!p) return {};
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0);
  return out;
}

TEST(ExtensionOps, CliListsExtensionOps) {
  const std::string out = cli_ops(std::string(EMBER_CPU_PLUGIN) + ":" + EMBER_EXAMPLE_PLUGIN);
  EXPECT_NE(out.find("myext::fused_bias_gelu cpu [float32, float64]"), std::string::npos) << out;
  EXPECT_NE(out.find("defined by plugin fused_bias_gelu: 2 inputs -> 1 output, backward "
                     "myext::fused_bias_gelu_backward"),
            std::string::npos)
      << out;
}

// An extension found on EMBER_PLUGIN_PATH loads before the CPU backend (from the default
// directory) and registers its CPU kernels on the core's built-in cpu type; the backend taking
// that type over keeps them (host kernels do not depend on whose allocator made the memory).
TEST(ExtensionOps, ExtensionLoadedBeforeTheCpuBackendKeepsItsKernels) {
  const std::string out = cli_ops(EMBER_EXAMPLE_PLUGIN);
  EXPECT_NE(out.find("myext::fused_bias_gelu cpu [float32, float64]"), std::string::npos) << out;
}

}  // namespace
}  // namespace ember
