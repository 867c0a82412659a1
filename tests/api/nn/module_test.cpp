// nn::Module: registration, naming, modes, moving, state dicts and hooks.
#include <gtest/gtest.h>

#include <cmath>

#include <ember/ember.h>
#include <ember/nn.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::nn {
namespace {

using ember::testing::expect_error;
using ember::testing::values;

// A model as users write one: layers as members, registered by name.
class TwoLayer : public Module {
 public:
  TwoLayer() : Module("TwoLayer") {
    fc1 = register_module("fc1", std::make_shared<Linear>(4, 3));
    fc2 = register_module("fc2", std::make_shared<Linear>(3, 2, /*bias=*/false));
    register_buffer("steps", zeros({}, DType::Int64));
  }
  Tensor forward(const Tensor& x) override { return (*fc2)(relu((*fc1)(x))); }
  std::shared_ptr<Linear> fc1, fc2;
};

TEST(Module, NamesParametersAndBuffersWithDottedPaths) {
  TwoLayer m;
  std::vector<std::string> names;
  for (const auto& [name, t] : m.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight"}));
  EXPECT_EQ(m.parameters().size(), 3u);
  EXPECT_EQ(m.parameters(/*recurse=*/false).size(), 0u);
  ASSERT_EQ(m.named_buffers().size(), 1u);
  EXPECT_EQ(m.named_buffers()[0].first, "steps");
  EXPECT_EQ(m.num_parameters(), 4 * 3 + 3 + 3 * 2);
  for (const Tensor& p : m.parameters()) EXPECT_TRUE(p.requires_grad());
  std::vector<std::string> mods;
  for (const auto& [name, mod] : m.named_modules()) mods.push_back(name);
  EXPECT_EQ(mods, (std::vector<std::string>{"", "fc1", "fc2"}));
}

TEST(Module, RejectsDuplicateAndDottedNames) {
  Module m;
  m.register_parameter("w", zeros({2}));
  expect_error([&] { m.register_parameter("w", zeros({2})); }, {"[nn.Module]", "'w'", "already"});
  expect_error([&] { m.register_buffer("a.b", zeros({2})); }, {"[nn.Module]", "'a.b'"});
  expect_error([&] { m.forward(zeros({1})); }, {"[nn.Module]", "forward"});
}

TEST(Module, RegisteringATakenNameIsAKeyError) {
  Module m;
  m.register_parameter("w", zeros({2}));
  m.register_buffer("b", zeros({2}));
  m.register_module("c", std::make_shared<ReLU>());
  EXPECT_THROW(m.register_buffer("w", zeros({2})), KeyError);
  EXPECT_THROW(m.register_parameter("b", zeros({2})), KeyError);
  EXPECT_THROW(m.register_module("w", std::make_shared<ReLU>()), KeyError);
  EXPECT_THROW(m.register_buffer("c", zeros({2})), KeyError);
  EXPECT_THROW(m.set_parameter("c", zeros({2})), KeyError);
  EXPECT_THROW(m.register_buffer("", zeros({2})), KeyError);
  EXPECT_THROW(m.register_module("x.y", std::make_shared<ReLU>()), KeyError);
  expect_error([&] { m.register_buffer("w", zeros({2})); },
               {"[nn.Module]", "attribute 'w' already exists", "parameter"});
}

TEST(Module, ATreeCannotContainItself) {
  auto outer = std::make_shared<Sequential>();
  auto inner = std::make_shared<Sequential>();
  outer->push_back(inner);
  expect_error([&] { inner->register_module("outer", outer); },
               {"[nn.Sequential]", "'outer'", "contains this module"});
  expect_error([&] { outer->set_child("0", outer); }, {"'0'", "is this module"});
  expect_error([&] { inner->push_back(outer); }, {"contains this module"});
  // The refused calls changed nothing, and every walk still ends.
  EXPECT_EQ(outer->named_modules().size(), 2u);
  EXPECT_EQ(inner->named_children().size(), 0u);
  // The same module twice in a tree is not a cycle.
  auto shared = std::make_shared<Linear>(2, 2);
  outer->push_back(shared);
  EXPECT_NO_THROW(inner->push_back(shared));
  EXPECT_FALSE(outer->parameters().empty());
}

TEST(Module, TrainAndEvalReachEverySubmodule) {
  TwoLayer m;
  EXPECT_TRUE(m.fc1->is_training());
  m.eval();
  EXPECT_FALSE(m.is_training());
  EXPECT_FALSE(m.fc1->is_training());
  EXPECT_FALSE(m.fc2->is_training());
  m.train();
  EXPECT_TRUE(m.fc2->is_training());
}

TEST(Module, ForwardMatchesAFloat64Reference) {
  TwoLayer m;
  const Tensor x = randn({5, 4});
  const std::vector<double> y = values(m(x));
  const auto w1 = values(m.fc1->weight), b1 = values(m.fc1->bias), w2 = values(m.fc2->weight);
  const auto xv = values(x);
  for (int n = 0; n < 5; ++n) {
    double h[3];
    for (int j = 0; j < 3; ++j) {
      double s = b1[j];
      for (int i = 0; i < 4; ++i) s += xv[n * 4 + i] * w1[j * 4 + i];
      h[j] = std::max(s, 0.0);
    }
    for (int k = 0; k < 2; ++k) {
      double s = 0;
      for (int j = 0; j < 3; ++j) s += h[j] * w2[k * 3 + j];
      EXPECT_NEAR(y[n * 2 + k], s, 1e-5);
    }
  }
}

TEST(Module, ZeroGradClearsOrZeroesGradients) {
  TwoLayer m;
  sum(m(randn({2, 4}))).backward();
  for (const Tensor& p : m.parameters()) ASSERT_TRUE(p.grad().defined());
  m.zero_grad(/*set_to_none=*/false);
  for (const Tensor& p : m.parameters()) {
    ASSERT_TRUE(p.grad().defined());
    for (double v : values(p.grad())) EXPECT_EQ(v, 0.0);
  }
  m.zero_grad();
  for (const Tensor& p : m.parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(Module, StateDictRoundTripsIntoAFreshModelInPlace) {
  TwoLayer a, b;
  const Tensor x = randn({3, 4});
  const Tensor before = b.fc1->weight;  // an optimizer would hold this handle
  b.load_state_dict(a.state_dict());
  EXPECT_TRUE(before.is_same(b.fc1->weight)) << "loading must write into the live parameters";
  EXPECT_EQ(values(a(x)), values(b(x)));
  const StateDict sd = a.state_dict();
  EXPECT_EQ(sd.size(), 4u);
  EXPECT_TRUE(sd.count("steps"));
  EXPECT_FALSE(sd.at("fc1.weight").requires_grad());
}

TEST(Module, LoadStateDictReportsMissingUnexpectedAndMismatchedKeys) {
  TwoLayer m;
  StateDict sd = m.state_dict();
  const std::vector<double> w = values(m.fc1->weight);

  StateDict missing = sd;
  missing.erase("fc2.weight");
  expect_error([&] { m.load_state_dict(missing); }, {"[nn.TwoLayer]", "missing keys [fc2.weight]"});

  StateDict extra = sd;
  extra["fc3.weight"] = zeros({1});
  expect_error([&] { m.load_state_dict(extra); }, {"unexpected keys [fc3.weight]"});
  m.load_state_dict(extra, /*strict=*/false);

  StateDict wrong = sd;
  wrong["fc1.weight"] = zeros({4, 3});
  wrong["fc1.bias"] = ones({3});
  expect_error([&] { m.load_state_dict(wrong); },
               {"size mismatch", "fc1.weight", "[4, 3]", "[3, 4]"});
  // A failed load changes nothing.
  EXPECT_EQ(values(m.fc1->weight), w);
}

TEST(Module, ToDtypeConvertsFloatingTensorsAndKeepsLeaves) {
  TwoLayer m;
  m.to(DType::Float64);
  for (const auto& [name, p] : m.named_parameters()) {
    EXPECT_EQ(p.dtype(), DType::Float64) << name;
    EXPECT_TRUE(p.requires_grad() && p.is_leaf()) << name;
  }
  EXPECT_EQ(m.named_buffers()[0].second.dtype(), DType::Int64);
  EXPECT_EQ(m(randn({1, 4}, DType::Float64)).dtype(), DType::Float64);
  expect_error([&] { m.to(DType::Int32); }, {"[nn.TwoLayer]", "floating"});
}

// A model with a buffer that follows conversions (BatchNorm's running statistics).
class Regressor : public Module {
 public:
  Regressor() : Module("Regressor") {
    fc1 = register_module("fc1", std::make_shared<Linear>(3, 8));
    bn = register_module("bn", std::make_shared<BatchNorm1d>(8));
    fc2 = register_module("fc2", std::make_shared<Linear>(8, 1));
  }
  Tensor forward(const Tensor& x) override { return (*fc2)(relu((*bn)((*fc1)(x)))); }
  std::shared_ptr<Linear> fc1, fc2;
  std::shared_ptr<BatchNorm1d> bn;
};

// Trains `model` on y = x0 - 2 x1 + 0.5 x2 in `dtype` for `steps` steps; the first and last loss.
std::pair<double, double> train(Module& model, optim::Optimizer& opt, DType dtype, int steps) {
  manual_seed(7);
  const Tensor x = randn({32, 3}, dtype);
  const Tensor w = tensor({1.0, -2.0, 0.5}, dtype).view({3, 1});
  const Tensor y = matmul(x, w);
  double first = 0, last = 0;
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    Tensor loss = mse_loss(model(x), y);
    EXPECT_EQ(loss.dtype(), dtype);
    loss.backward();
    opt.step();
    (i == 0 ? first : last) = loss.item();
  }
  return {first, last};
}

TEST(Module, AnOptimizerMadeBeforeAConversionStillTrainsTheModel) {
  // Before: to(Float64) made new parameter tensors, so the optimizer stepped tensors the model
  // no longer used and the loss stayed where it was.
  for (const char* name : {"SGD", "Adam"}) {
    Regressor m;
    const std::vector<Tensor> before = m.parameters();
    std::unique_ptr<optim::Optimizer> opt;
    if (std::string(name) == "SGD") {
      opt = std::make_unique<optim::SGD>(m.parameters(),
                                         optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
    } else {
      opt = std::make_unique<optim::Adam>(m.parameters(), optim::AdamOptions{.lr = 0.01});
    }
    train(m, *opt, DType::Float32, 2);  // state (momentum, Adam's moments) made in float32
    m.to(DType::Float64);
    const std::vector<Tensor> after = m.parameters();
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < after.size(); ++i) {
      EXPECT_TRUE(after[i].is_same(before[i])) << name << " parameter " << i;
      EXPECT_TRUE(opt->param_groups()[0].params[i].is_same(after[i]));
      EXPECT_EQ(before[i].dtype(), DType::Float64);
      EXPECT_TRUE(before[i].requires_grad() && before[i].is_leaf());
      EXPECT_EQ(before[i].grad().dtype(), DType::Float64);  // .grad converted with it
    }
    for (const auto& [buffer, t] : m.named_buffers()) {
      if (is_floating(t.dtype())) {
        EXPECT_EQ(t.dtype(), DType::Float64) << buffer;
      }
    }
    const std::vector<double> w0 = values(m.fc1->weight);
    const auto [first, last] = train(m, *opt, DType::Float64, 60);
    EXPECT_LT(last, 0.5 * first) << name;
    EXPECT_NE(values(m.fc1->weight), w0) << name;
    for (const Tensor& p : m.parameters()) EXPECT_EQ(p.grad().dtype(), DType::Float64);
    EXPECT_EQ(m.bn->running_mean.dtype(), DType::Float64);
  }
}

TEST(Module, ConversionsKeepEveryHandleOfAParameter) {
  Regressor m;
  const Tensor w = m.fc1->weight;  // a handle taken before
  for (DType d : {DType::Float16, DType::BFloat16, DType::Float64, DType::Float32}) {
    m.to(d);
    EXPECT_TRUE(m.fc1->weight.is_same(w));
    EXPECT_EQ(w.dtype(), d);
    EXPECT_EQ(m.bn->running_var.dtype(), d);
    EXPECT_EQ(m.bn->num_batches_tracked.dtype(), DType::Int64);
  }
  m.to(Device::cpu());
  EXPECT_TRUE(m.fc1->weight.is_same(w));
}

TEST(Module, ForwardHookResultReplacesTheOutput) {
  Linear fc(2, 2);
  HookHandle h = fc.register_forward_hook(
      [](Module&, const Tensor&, const Tensor& out) { return mul(out, 0.0); });
  int seen = 0;
  HookHandle watch = fc.register_forward_hook([&](Module&, const Tensor&, const Tensor& out) {
    seen += static_cast<int>(values(out)[0] == 0.0);  // sees the replaced output
  });
  const Tensor y = fc(ones({1, 2}));
  EXPECT_EQ(values(y), (std::vector<double>{0.0, 0.0}));
  EXPECT_EQ(seen, 1);
  h.remove();
  EXPECT_NE(values(fc(ones({1, 2}))), (std::vector<double>{0.0, 0.0}));
}

TEST(Module, ForwardHooksSeeInputAndOutputAndCanBeRemoved) {
  Linear fc(2, 2);
  int calls = 0;
  HookHandle h = fc.register_forward_hook([&](Module& m, const Tensor& in, const Tensor& out) {
    EXPECT_EQ(m.type_name(), "Linear");
    EXPECT_EQ(in.size(0), 3);
    EXPECT_EQ(out.size(1), 2);
    ++calls;
  });
  HookHandle pre = fc.register_forward_pre_hook([](Module&, const Tensor& in) { return in * 0.0; });
  const Tensor y = fc(ones({3, 2}));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(values(y)[0], values(fc.bias)[0]);  // the pre-hook zeroed the input
  h.remove();
  pre.remove();
  h.remove();  // twice is harmless
  fc(ones({3, 2}));
  EXPECT_EQ(calls, 1);
}

TEST(Module, PrintsLikePyTorch) {
  Sequential s{std::make_shared<Linear>(4, 3), std::make_shared<ReLU>(),
               std::make_shared<Linear>(3, 2, false)};
  EXPECT_EQ(s.repr(),
            "Sequential(\n"
            "  (0): Linear(in_features=4, out_features=3, bias=true)\n"
            "  (1): ReLU()\n"
            "  (2): Linear(in_features=3, out_features=2, bias=false)\n"
            ")");
  // A module with arguments and submodules (or arguments on several lines) puts each on a line
  // of its own, as PyTorch's Module.__repr__ does.
  struct Block : Module {
    Block() : Module("Block") { register_module("fc", std::make_shared<Linear>(2, 2)); }
    std::string extra_repr() const override { return "width=2\nmode=fast"; }
  };
  EXPECT_EQ(Block().repr(),
            "Block(\n"
            "  width=2\n"
            "  mode=fast\n"
            "  (fc): Linear(in_features=2, out_features=2, bias=true)\n"
            ")");
  struct Plain : Module {
    Plain() : Module("Plain") {}
    std::string extra_repr() const override { return "a=1\nb=2"; }
  };
  EXPECT_EQ(Plain().repr(), "Plain(\n  a=1\n  b=2\n)");
}

TEST(Sequential, ChainsModulesAndIndexes) {
  auto fc = std::make_shared<Linear>(4, 4);
  Sequential s{fc, std::make_shared<Tanh>()};
  const Tensor x = randn({2, 4});
  EXPECT_EQ(values(s(x)), values(tanh((*fc)(x))));
  EXPECT_EQ(s[0].get(), fc.get());
  EXPECT_EQ(s[-1]->type_name(), "Tanh");
  expect_error([&] { s[2]; }, {"[nn.Sequential]", "index 2", "2 modules"});
  EXPECT_EQ(s.named_parameters()[0].first, "0.weight");
}

TEST(ModuleList, RegistersItsModules) {
  ModuleList list{std::make_shared<Linear>(2, 2), std::make_shared<Linear>(2, 2)};
  EXPECT_EQ(list.parameters().size(), 4u);
  EXPECT_EQ(list.named_parameters()[2].first, "1.weight");
  int n = 0;
  for (const auto& m : list) n += m->type_name() == "Linear";
  EXPECT_EQ(n, 2);
}

// nn::checkpoint_sequential: the same gradients as running the Sequential plainly (dropout
// replayed), for every number of segments.
TEST(Sequential, CheckpointSequentialGivesThePlainGradients) {
  manual_seed(4);
  Sequential s{std::make_shared<Linear>(6, 8), std::make_shared<ReLU>(),
               std::make_shared<Dropout>(0.3), std::make_shared<Linear>(8, 8),
               std::make_shared<Tanh>(),       std::make_shared<Linear>(8, 2)};
  const Tensor x0 = randn({5, 6});
  auto grads = [&](int64_t segments) {
    s.zero_grad();
    manual_seed(9);
    Tensor x = x0.clone().requires_grad_(true);
    const Tensor y = segments == 0 ? s(x) : checkpoint_sequential(s, segments, x);
    sum(mul(y, y)).backward();
    std::vector<std::vector<double>> out = {values(x.grad())};
    for (const Tensor& p : s.parameters()) out.push_back(values(p.grad()));
    return out;
  };
  const auto plain = grads(0);
  for (int64_t segments : {1, 2, 3, 6}) EXPECT_EQ(grads(segments), plain) << segments;
  expect_error([&] { checkpoint_sequential(s, 7, x0); },
               {"[nn.checkpoint_sequential]", "segments must be in [1, 6]", "got 7"});
}

}  // namespace
}  // namespace ember::nn
