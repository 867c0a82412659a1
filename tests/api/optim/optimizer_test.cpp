// Optimizers against float64 references of PyTorch's update rules, param groups, zero_grad,
// state dicts and hyperparameter checks.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <ember/ember.h>
#include <ember/optim.h>

namespace ember::optim {
namespace {

using Vec = std::vector<double>;

Tensor make(const Vec& v, DType dtype = DType::Float32) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, DType::Float64);
  std::copy(v.begin(), v.end(), t.data_ptr<double>());
  return t.to(dtype);
}

Vec values(const Tensor& t) {
  Tensor c = t.detach().to(Device::cpu()).to(DType::Float64).contiguous();
  return Vec(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// The gradient used at step `k` for a parameter with values `p`: depends on both.
Vec grad_at(const Vec& p, int k) {
  Vec g(p.size());
  for (size_t i = 0; i < p.size(); ++i) g[i] = std::sin(3 * p[i] + k) + 0.1 * (k + 1);
  return g;
}

// A parameter with 12 values: contiguous [12], or a transposed (non-contiguous) [4, 3] view.
Tensor make_param(DType dtype, bool contiguous) {
  Vec v(12);
  for (int i = 0; i < 12; ++i) v[i] = 0.3 * i - 1.7;
  Tensor p = make(v, dtype);
  if (!contiguous) p = p.reshape({3, 4}).t().detach();
  EXPECT_EQ(p.is_contiguous(), contiguous);
  return p.requires_grad_();
}

void set_grad(const Tensor& p, const Vec& g) {
  p.mutable_grad() = make(g, p.dtype()).view(p.sizes());
}

// A reference optimizer: updates p (float64) given g, with its own state.
using RefStep = std::function<void(Vec& p, const Vec& g)>;
using Factory = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;

void expect_matches(const Factory& make_opt, const std::function<RefStep()>& make_ref,
                    const std::string& what) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (bool contiguous : {true, false}) {
      SCOPED_TRACE(fmt::format("{} {} contiguous={}", what, dtype, contiguous));
      Tensor p = make_param(dtype, contiguous);
      Vec ref_p = values(p);
      auto opt = make_opt({p});
      RefStep r = make_ref();  // fresh reference state
      for (int k = 0; k < 6; ++k) {
        Vec cur = values(p);
        Vec pos = ref_p;
        set_grad(p, grad_at(cur, k));
        opt->step();
        r(ref_p, grad_at(pos, k));
        const Vec got = values(p);
        const double tol = dtype == DType::Float32 ? 2e-5 : 1e-12;
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_NEAR(got[i], ref_p[i], tol * (1 + std::abs(ref_p[i])))
              << "step " << k << " i " << i;
        }
      }
      EXPECT_FALSE(p.grad_fn());
      EXPECT_TRUE(p.is_leaf());
    }
  }
}

RefStep ref_sgd(SGDOptions o) {
  auto buf = std::make_shared<Vec>();
  return [o, buf](Vec& p, const Vec& g0) {
    for (size_t i = 0; i < p.size(); ++i) {
      double g = g0[i] + o.weight_decay * p[i];
      if (o.momentum != 0) {
        if (buf->size() < p.size()) buf->resize(p.size(), std::nan(""));
        double& b = (*buf)[i];
        b = std::isnan(b) ? g : o.momentum * b + (1 - o.dampening) * g;
        g = o.nesterov ? g + o.momentum * b : b;
      }
      p[i] -= o.lr * g;
    }
  };
}

RefStep ref_adam(AdamOptions o, bool decoupled) {
  struct S {
    Vec m, v, vmax;
    int t = 0;
  };
  auto s = std::make_shared<S>();
  return [o, s, decoupled](Vec& p, const Vec& g0) {
    if (s->m.empty()) s->m = s->v = s->vmax = Vec(p.size(), 0.0);
    ++s->t;
    const double bc1 = 1 - std::pow(o.beta1, s->t), bc2 = 1 - std::pow(o.beta2, s->t);
    for (size_t i = 0; i < p.size(); ++i) {
      double g = g0[i];
      if (decoupled) {
        p[i] *= 1 - o.lr * o.weight_decay;
      } else {
        g += o.weight_decay * p[i];
      }
      s->m[i] = o.beta1 * s->m[i] + (1 - o.beta1) * g;
      s->v[i] = o.beta2 * s->v[i] + (1 - o.beta2) * g * g;
      double v = s->v[i];
      if (o.amsgrad) v = s->vmax[i] = std::max(s->vmax[i], v);
      const double denom = std::sqrt(v) / std::sqrt(bc2) + o.eps;
      p[i] -= o.lr / bc1 * s->m[i] / denom;
    }
  };
}

RefStep ref_rmsprop(RMSpropOptions o) {
  struct S {
    Vec sq, buf, avg;
  };
  auto s = std::make_shared<S>();
  return [o, s](Vec& p, const Vec& g0) {
    if (s->sq.empty()) s->sq = s->buf = s->avg = Vec(p.size(), 0.0);
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = g0[i] + o.weight_decay * p[i];
      s->sq[i] = o.alpha * s->sq[i] + (1 - o.alpha) * g * g;
      double avg;
      if (o.centered) {
        s->avg[i] = o.alpha * s->avg[i] + (1 - o.alpha) * g;
        avg = std::sqrt(s->sq[i] - s->avg[i] * s->avg[i]) + o.eps;
      } else {
        avg = std::sqrt(s->sq[i]) + o.eps;
      }
      if (o.momentum > 0) {
        s->buf[i] = o.momentum * s->buf[i] + g / avg;
        p[i] -= o.lr * s->buf[i];
      } else {
        p[i] -= o.lr * g / avg;
      }
    }
  };
}

RefStep ref_adadelta(AdadeltaOptions o) {
  struct S {
    Vec sq, acc;
  };
  auto s = std::make_shared<S>();
  return [o, s](Vec& p, const Vec& g0) {
    if (s->sq.empty()) s->sq = s->acc = Vec(p.size(), 0.0);
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = g0[i] + o.weight_decay * p[i];
      s->sq[i] = o.rho * s->sq[i] + (1 - o.rho) * g * g;
      const double delta = std::sqrt(s->acc[i] + o.eps) / std::sqrt(s->sq[i] + o.eps) * g;
      s->acc[i] = o.rho * s->acc[i] + (1 - o.rho) * delta * delta;
      p[i] -= o.lr * delta;
    }
  };
}

RefStep ref_adagrad(AdagradOptions o) {
  struct S {
    Vec sum;
    int t = 0;
  };
  auto s = std::make_shared<S>();
  return [o, s](Vec& p, const Vec& g0) {
    if (s->sum.empty()) s->sum = Vec(p.size(), o.initial_accumulator_value);
    ++s->t;
    const double clr = o.lr / (1 + (s->t - 1) * o.lr_decay);
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = g0[i] + o.weight_decay * p[i];
      s->sum[i] += g * g;
      p[i] -= clr * g / (std::sqrt(s->sum[i]) + o.eps);
    }
  };
}

TEST(OptimSGD, MatchesReference) {
  const std::vector<std::pair<std::string, SGDOptions>> cases = {
      {"plain", {.lr = 0.1}},
      {"weight_decay", {.lr = 0.1, .weight_decay = 0.05}},
      {"momentum", {.lr = 0.05, .momentum = 0.9}},
      {"dampening", {.lr = 0.05, .momentum = 0.8, .dampening = 0.3, .weight_decay = 0.01}},
      {"nesterov", {.lr = 0.05, .momentum = 0.9, .nesterov = true}},
      {"nesterov_wd", {.lr = 0.05, .momentum = 0.5, .weight_decay = 0.1, .nesterov = true}},
  };
  for (const auto& [name, o] : cases) {
    expect_matches([o](std::vector<Tensor> ps) { return std::make_unique<SGD>(ps, o); },
                   [o] { return ref_sgd(o); }, "SGD " + name);
  }
}

TEST(OptimAdam, MatchesReference) {
  const std::vector<std::pair<std::string, AdamOptions>> cases = {
      {"default", {}},
      {"lr", {.lr = 0.05, .beta1 = 0.8, .beta2 = 0.95, .eps = 1e-6}},
      {"weight_decay", {.lr = 0.01, .weight_decay = 0.1}},
      {"amsgrad", {.lr = 0.02, .amsgrad = true}},
      {"amsgrad_wd", {.lr = 0.02, .beta2 = 0.9, .weight_decay = 0.05, .amsgrad = true}},
  };
  for (const auto& [name, o] : cases) {
    expect_matches([o](std::vector<Tensor> ps) { return std::make_unique<Adam>(ps, o); },
                   [o] { return ref_adam(o, false); }, "Adam " + name);
  }
}

TEST(OptimAdamW, MatchesReference) {
  const std::vector<std::pair<std::string, AdamWOptions>> cases = {
      {"default", {}},
      {"strong_decay", {.lr = 0.05, .weight_decay = 0.3}},
      {"amsgrad", {.lr = 0.02, .beta1 = 0.5, .weight_decay = 0.1, .amsgrad = true}},
  };
  for (const auto& [name, o] : cases) {
    const AdamOptions a{.lr = o.lr,
                        .beta1 = o.beta1,
                        .beta2 = o.beta2,
                        .eps = o.eps,
                        .weight_decay = o.weight_decay,
                        .amsgrad = o.amsgrad};
    expect_matches([o](std::vector<Tensor> ps) { return std::make_unique<AdamW>(ps, o); },
                   [a] { return ref_adam(a, true); }, "AdamW " + name);
  }
}

TEST(OptimAdadelta, MatchesReference) {
  const std::vector<std::pair<std::string, AdadeltaOptions>> cases = {
      {"default", {}},
      {"lr_rho", {.lr = 0.5, .rho = 0.7, .eps = 1e-4}},
      {"weight_decay", {.lr = 2.0, .weight_decay = 0.1}},
  };
  for (const auto& [name, o] : cases) {
    expect_matches([o](std::vector<Tensor> ps) { return std::make_unique<Adadelta>(ps, o); },
                   [o] { return ref_adadelta(o); }, "Adadelta " + name);
  }
}

TEST(OptimAdagrad, MatchesReference) {
  const std::vector<std::pair<std::string, AdagradOptions>> cases = {
      {"default", {}},
      {"lr_decay", {.lr = 0.1, .lr_decay = 0.05}},
      {"accumulator_wd", {.lr = 0.05, .weight_decay = 0.1, .initial_accumulator_value = 0.5}},
  };
  for (const auto& [name, o] : cases) {
    expect_matches([o](std::vector<Tensor> ps) { return std::make_unique<Adagrad>(ps, o); },
                   [o] { return ref_adagrad(o); }, "Adagrad " + name);
  }
}

TEST(OptimAdadelta, RefusesBadHyperparameters) {
  const Tensor p = zeros({2}).requires_grad_();
  EXPECT_THROW(Adadelta({p}, {.rho = 1.5}), ValueError);
  EXPECT_THROW(Adadelta({p}, {.lr = -1}), ValueError);
  EXPECT_THROW(Adagrad({p}, {.lr_decay = -0.1}), ValueError);
  EXPECT_THROW(Adagrad({p}, {.initial_accumulator_value = -1}), ValueError);
}

TEST(OptimAdamVariants, RefuseBadHyperparametersAndNameTheirState) {
  Tensor p = make({1.0, 2.0}).requires_grad_();
  EXPECT_THROW(Adamax({p}, {.beta1 = 1.0}), ValueError);
  EXPECT_THROW(NAdam({p}, {.momentum_decay = -1}), ValueError);
  EXPECT_THROW(RAdam({p}, {.lr = -0.1}), ValueError);
  EXPECT_THROW(Rprop({p}, {.etaminus = 1.5}), ValueError);
  EXPECT_THROW(Rprop({p}, {.step_size_min = 2, .step_size_max = 1}), ValueError);
  NAdam opt({p});
  EXPECT_EQ(opt.buffer_names(), (std::vector<std::string>{"exp_avg", "exp_avg_sq", "mu_product"}));
  set_grad(p, {1.0, -1.0});
  opt.step();
  StateDict sd = opt.state_dict();
  EXPECT_EQ(sd.at("state.0.mu_product").dim(), 0);
  // A mu_product of the wrong size is refused on load, naming the entry.
  sd["state.0.mu_product"] = make({1.0, 2.0});
  EXPECT_THROW(opt.load_state_dict(sd), ValueError);
}

TEST(OptimRMSprop, MatchesReference) {
  const std::vector<std::pair<std::string, RMSpropOptions>> cases = {
      {"default", {}},
      {"centered", {.lr = 0.01, .alpha = 0.9, .centered = true}},
      {"momentum", {.lr = 0.005, .momentum = 0.9}},
      {"all",
       {.lr = 0.005,
        .alpha = 0.95,
        .eps = 1e-6,
        .weight_decay = 0.1,
        .momentum = 0.5,
        .centered = true}},
  };
  for (const auto& [name, o] : cases) {
    expect_matches([o](std::vector<Tensor> ps) { return std::make_unique<RMSprop>(ps, o); },
                   [o] { return ref_rmsprop(o); }, "RMSprop " + name);
  }
}

// Note [Optimizer steps through kernels]: a contiguous CPU parameter takes the backend's fused
// step kernel, the same parameter on the reference backend (which has none) the tensor-op rule;
// in float64 they agree to the last bits, for every variant of every rule.
TEST(OptimFused, KernelAndTensorOpsAgree) {
  for (ops::Id op : {ops::sgd_step, ops::adam_step, ops::rmsprop_step}) {
    EXPECT_TRUE(has_kernel(core_op(op), Device::cpu(), DType::Float64)) << ops::kInfo[op].name;
    EXPECT_FALSE(has_kernel(core_op(op), Device("reference"), DType::Float64));
    EXPECT_FALSE(has_kernel(core_op(op), Device::cpu(), DType::Float16));  // tensor ops there
  }
  const std::vector<std::pair<std::string, Factory>> cases = {
      {"sgd", [](auto ps) { return std::make_unique<SGD>(ps, SGDOptions{.lr = 0.1}); }},
      {"sgd momentum",
       [](auto ps) {
         return std::make_unique<SGD>(
             ps, SGDOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.2, .weight_decay = 0.01});
       }},
      {"sgd nesterov",
       [](auto ps) {
         return std::make_unique<SGD>(ps, SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true});
       }},
      {"adam",
       [](auto ps) {
         return std::make_unique<Adam>(ps, AdamOptions{.lr = 0.01, .weight_decay = 0.1});
       }},
      {"adam amsgrad",
       [](auto ps) {
         return std::make_unique<Adam>(ps, AdamOptions{.lr = 0.01, .amsgrad = true});
       }},
      {"adamw", [](auto ps) { return std::make_unique<AdamW>(ps, AdamWOptions{.lr = 0.01}); }},
      {"rmsprop",
       [](auto ps) { return std::make_unique<RMSprop>(ps, RMSpropOptions{.lr = 0.01}); }},
      {"rmsprop centered momentum",
       [](auto ps) {
         return std::make_unique<RMSprop>(
             ps,
             RMSpropOptions{.lr = 0.01, .weight_decay = 0.1, .momentum = 0.5, .centered = true});
       }},
  };
  for (const auto& [what, factory] : cases) {
    SCOPED_TRACE(what);
    std::vector<Vec> results;
    for (const Device device : {Device::cpu(), Device("reference")}) {
      Tensor p = make_param(DType::Float64, true).detach().to(device).requires_grad_();
      auto opt = factory({p});
      for (int k = 0; k < 5; ++k) {
        p.mutable_grad() = make(grad_at(values(p), k), DType::Float64).to(device);
        opt->step();
      }
      results.push_back(values(p));
    }
    for (size_t i = 0; i < results[0].size(); ++i) {
      EXPECT_NEAR(results[0][i], results[1][i], 1e-13 * (1 + std::abs(results[1][i]))) << i;
    }
  }
}

TEST(OptimDefaults, MatchPyTorch) {
  Tensor p = zeros({2}).requires_grad_();
  const Options sgd = SGD({p}).defaults();
  EXPECT_EQ(sgd.at("lr"), 1e-3);
  EXPECT_EQ(sgd.at("momentum"), 0);
  const Options adam = Adam({p}).defaults();
  EXPECT_EQ(adam.at("lr"), 1e-3);
  EXPECT_EQ(adam.at("beta1"), 0.9);
  EXPECT_EQ(adam.at("beta2"), 0.999);
  EXPECT_EQ(adam.at("eps"), 1e-8);
  EXPECT_EQ(adam.at("weight_decay"), 0);
  EXPECT_EQ(AdamW({p}).defaults().at("weight_decay"), 1e-2);
  const Options rms = RMSprop({p}).defaults();
  EXPECT_EQ(rms.at("lr"), 1e-2);
  EXPECT_EQ(rms.at("alpha"), 0.99);
}

// min_w mean((A w - b)^2) for a well-conditioned A: every optimizer reaches x_true.
TEST(OptimConvergence, LeastSquares) {
  Generator gen(7);
  const Tensor a = randn({32, 4}, {}, &gen);
  const Tensor x_true = make({1.0, -2.0, 0.5, 3.0}).reshape({4, 1});
  const Tensor b = matmul(a, x_true);
  const std::vector<std::pair<std::string, std::function<std::unique_ptr<Optimizer>(Tensor)>>>
      cases = {
          {"SGD",
           [](Tensor w) { return std::make_unique<SGD>(std::vector{w}, SGDOptions{.lr = 0.1}); }},
          {"SGD nesterov",
           [](Tensor w) {
             return std::make_unique<SGD>(
                 std::vector{w}, SGDOptions{.lr = 0.05, .momentum = 0.9, .nesterov = true});
           }},
          {"Adam",
           [](Tensor w) {
             return std::make_unique<Adam>(std::vector{w}, AdamOptions{.lr = 0.05});
           }},
          {"AdamW",
           [](Tensor w) {
             return std::make_unique<AdamW>(std::vector{w},
                                            AdamWOptions{.lr = 0.05, .weight_decay = 0});
           }},
          {"RMSprop",
           [](Tensor w) {
             return std::make_unique<RMSprop>(std::vector{w}, RMSpropOptions{.lr = 0.01});
           }},
      };
  for (const auto& [name, make_opt] : cases) {
    SCOPED_TRACE(name);
    Tensor w = zeros({4, 1}).requires_grad_();
    auto opt = make_opt(w);
    double first = 0, last = 0;
    for (int it = 0; it < 600; ++it) {
      opt->zero_grad();
      Tensor r = sub(matmul(a, w), b);
      Tensor loss = mean(mul(r, r));
      loss.backward();
      opt->step();
      (it == 0 ? first : last) = loss.item();
    }
    EXPECT_LT(last, 1e-3 * first);
    const Vec got = values(w);
    const Vec want = values(x_true);
    for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 2e-2);
  }
}

TEST(OptimParamGroups, EachGroupHasItsOwnOptions) {
  Tensor p1 = make({1.0, 2.0}).requires_grad_();
  Tensor p2 = make({3.0}).requires_grad_();
  SGD opt(std::vector<ParamGroup>{{.params = {p1}}, {.params = {p2}, .options = {{"lr", 0.5}}}},
          {.lr = 0.1, .momentum = 0.9});
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.param_groups()[0].lr(), 0.1);
  EXPECT_EQ(opt.param_groups()[1].lr(), 0.5);
  EXPECT_EQ(opt.param_groups()[1].get("momentum"), 0.9);  // the default fills the rest
  set_grad(p1, {1.0, 1.0});
  set_grad(p2, {1.0});
  opt.step();
  EXPECT_NEAR(values(p1)[0], 0.9, 1e-6);
  EXPECT_NEAR(values(p2)[0], 2.5, 1e-6);
  // A new lr applies at the next step (momentum buffer is 1: d = 0.9 * 1 + 1).
  opt.param_groups()[1].set_lr(0.1);
  opt.step();
  EXPECT_NEAR(values(p2)[0], 2.5 - 0.1 * 1.9, 1e-6);
  // add_param_group
  Tensor p3 = make({0.0}).requires_grad_();
  opt.add_param_group({.params = {p3}, .options = {{"momentum", 0.0}}});
  set_grad(p3, {2.0});
  opt.step();
  EXPECT_NEAR(values(p3)[0], -0.2, 1e-6);
}

TEST(OptimParamGroups, RejectsBadGroups) {
  Tensor p = make({1.0}).requires_grad_();
  auto throws = [](auto&& fn, const std::string& msg) {
    try {
      fn();
      ADD_FAILURE() << "no error, expected: " << msg;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
    }
  };
  throws(
      [&] {
        SGD(std::vector<ParamGroup>{{.params = {p}, .options = {{"betas", 0.1}}}});
      },
      "[optim.SGD] param group 0 has an unknown hyperparameter 'betas'");
  throws(
      [&] {
        SGD(std::vector<ParamGroup>{{.params = {p}}, {.params = {p}}});
      },
      "[optim.SGD] a parameter appears in more than one param group");
  throws([&] { SGD(std::vector<Tensor>{}); }, "[optim.SGD] got an empty parameter list");
  throws([&] { Adam({zeros({2}, DType::Int64)}); }, "only floating tensors can be optimized");
  throws(
      [&] {
        SGD(std::vector<ParamGroup>{{.params = {p}, .options = {{"lr", -1.0}}}});
      },
      "[optim.SGD] invalid learning rate: -1");
}

TEST(OptimZeroGrad, SetToNoneOrZeros) {
  Tensor p = make({1.0, 2.0}).requires_grad_();
  Tensor q = make({3.0}).requires_grad_();
  SGD opt({p, q}, {.lr = 0.1});
  set_grad(p, {5.0, 6.0});
  opt.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(p.grad().defined());
  EXPECT_EQ(values(p.grad()), (Vec{0.0, 0.0}));
  EXPECT_FALSE(q.grad().defined());
  opt.zero_grad();
  EXPECT_FALSE(p.grad().defined());
  // Parameters without gradient are skipped and get no state.
  set_grad(p, {1.0, 1.0});
  Adam adam({p, q});
  adam.step();
  EXPECT_EQ(values(q), (Vec{3.0}));
  EXPECT_NE(adam.state(p), nullptr);
  EXPECT_EQ(adam.state(q), nullptr);
}

TEST(OptimZeroGrad, BackwardAfterZeroGradAccumulatesAfresh) {
  Tensor w = make({2.0}).requires_grad_();
  SGD opt({w}, {.lr = 0.1});
  sum(mul(w, 3.0)).backward();
  opt.zero_grad(/*set_to_none=*/false);
  sum(mul(w, 3.0)).backward();
  EXPECT_EQ(values(w.grad()), (Vec{3.0}));
}

// Train n steps with deterministic gradients.
void train(Optimizer& opt, const std::vector<Tensor>& ps, int from, int n) {
  for (int k = from; k < from + n; ++k) {
    for (const auto& p : ps) set_grad(p, grad_at(values(p), k));
    opt.step();
  }
}

TEST(OptimStateDict, ResumingGivesTheSameParameters) {
  const std::vector<
      std::pair<std::string, std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>>>
      cases = {
          {"SGD",
           [](auto ps) {
             return std::make_unique<SGD>(ps, SGDOptions{.lr = 0.1, .momentum = 0.9});
           }},
          {"Adam",
           [](auto ps) {
             return std::make_unique<Adam>(ps, AdamOptions{.lr = 0.01, .amsgrad = true});
           }},
          {"AdamW", [](auto ps) { return std::make_unique<AdamW>(ps, AdamWOptions{.lr = 0.01}); }},
          {"RMSprop",
           [](auto ps) {
             return std::make_unique<RMSprop>(
                 ps, RMSpropOptions{.lr = 0.01, .momentum = 0.5, .centered = true});
           }},
          {"Adamax", [](auto ps) { return std::make_unique<Adamax>(ps, AdamaxOptions{}); }},
          {"NAdam", [](auto ps) { return std::make_unique<NAdam>(ps, NAdamOptions{.lr = 0.01}); }},
          {"RAdam",
           [](auto ps) {
             return std::make_unique<RAdam>(ps, RAdamOptions{.lr = 0.01, .beta2 = 0.9});
           }},
          {"Rprop", [](auto ps) { return std::make_unique<Rprop>(ps, RpropOptions{}); }},
      };
  for (const auto& [name, make_opt] : cases) {
    SCOPED_TRACE(name);
    std::vector<Tensor> a = {make_param(DType::Float32, true), make({0.5, -0.5}).requires_grad_()};
    auto opt_a = make_opt(a);
    train(*opt_a, a, 0, 3);
    opt_a->param_groups()[0].set_lr(0.02);
    const StateDict sd = opt_a->state_dict();
    std::map<std::string, Vec> before;
    for (const auto& [key, t] : sd) before[key] = values(t);
    std::vector<Tensor> b = {a[0].detach().clone().requires_grad_(),
                             a[1].detach().clone().requires_grad_()};
    auto opt_b = make_opt(b);
    opt_b->load_state_dict(sd);
    EXPECT_EQ(opt_b->param_groups()[0].lr(), 0.02);
    train(*opt_a, a, 3, 4);
    train(*opt_b, b, 3, 4);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(values(a[i]), values(b[i]));
    // The dict holds copies: training on did not change them.
    for (const auto& [key, t] : sd) EXPECT_EQ(values(t), before.at(key)) << key;
  }
}

TEST(OptimStateDict, FlatLayout) {
  Tensor p = make({1.0, 2.0}).requires_grad_();
  Tensor q = make({3.0}).requires_grad_();
  Adam opt(std::vector<ParamGroup>{{.params = {p}}, {.params = {q}, .options = {{"lr", 0.5}}}});
  set_grad(q, {1.0});
  opt.step();
  opt.step();
  const StateDict sd = opt.state_dict();
  EXPECT_EQ(sd.count("state.0.exp_avg"), 0u);  // p has never been updated
  ASSERT_EQ(sd.count("state.1.exp_avg"), 1u);
  EXPECT_EQ(sd.count("state.1.max_exp_avg_sq"), 0u);
  EXPECT_EQ(sd.at("state.1.exp_avg").sizes(), q.sizes());
  EXPECT_EQ(sd.at("state.1.step").item(), 2.0);
  EXPECT_EQ(sd.at("state.1.step").dtype(), DType::Float64);
  const Tensor& lr = sd.at("param_groups.1.lr");
  EXPECT_EQ(lr.dim(), 0);
  EXPECT_EQ(lr.dtype(), DType::Float64);
  EXPECT_EQ(lr.item(), 0.5);
  EXPECT_EQ(sd.at("param_groups.0.beta2").item(), 0.999);
  EXPECT_EQ(values(sd.at("param_groups.1.params")), (Vec{1.0}));
  EXPECT_EQ(SGD({p}, {.lr = 0.1}).state_dict().count("state.0.step"), 0u);
}

TEST(OptimStateDict, LoadChecksWhatItLoads) {
  Tensor p = make({1.0, 2.0}).requires_grad_();
  Tensor q = make({3.0}).requires_grad_();
  auto throws = [](auto&& fn, const std::string& msg) {
    try {
      fn();
      ADD_FAILURE() << "no error, expected: " << msg;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
    }
  };
  SGD two_groups(std::vector<ParamGroup>{{.params = {p}}, {.params = {q}}}, {.momentum = 0.9});
  SGD one_group({p, q}, {.momentum = 0.9});
  SGD one_param({p}, {.momentum = 0.9});
  throws([&] { one_group.load_state_dict(two_groups.state_dict()); },
         "[optim.SGD] load_state_dict: the state has 2 param groups but the optimizer has 1");
  throws([&] { one_param.load_state_dict(one_group.state_dict()); },
         "[optim.SGD] load_state_dict: param group 0 has 2 parameters in the state but 1 in the "
         "optimizer");
  StateDict sd = one_group.state_dict();
  sd["state.0.momentum_buffer"] = zeros({3});
  throws([&] { one_group.load_state_dict(sd); },
         "[optim.SGD] load_state_dict: entry 'state.0.momentum_buffer' has shape [3] but "
         "parameter 0 has shape [2]");
  sd = one_group.state_dict();
  sd["state.5.momentum_buffer"] = zeros({1});
  throws([&] { one_group.load_state_dict(sd); }, "names parameter 5 but the optimizer has 2");
  Adam adam({p, q});
  set_grad(p, {1.0, 1.0});
  adam.step();
  throws([&] { one_group.load_state_dict(adam.state_dict()); },
         "[optim.SGD] load_state_dict: entry 'param_groups.0.amsgrad' names an unknown "
         "hyperparameter 'amsgrad'");
  sd = one_group.state_dict();
  sd["param_groups.0.lr"] = full({}, -1.0, DType::Float64);
  throws([&] { one_group.load_state_dict(sd); }, "[optim.SGD] invalid learning rate: -1");
  sd = one_group.state_dict();
  sd["something"] = zeros({1});
  throws([&] { one_group.load_state_dict(sd); }, "unexpected entry 'something'");
  // Nothing was changed by the failed loads.
  EXPECT_EQ(one_group.param_groups()[0].lr(), 1e-3);
}

TEST(OptimHyperparameters, BadValuesThrow) {
  Tensor p = make({1.0}).requires_grad_();
  auto throws = [](auto&& fn, const std::string& msg) {
    try {
      fn();
      ADD_FAILURE() << "no error, expected: " << msg;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
    }
  };
  throws([&] { SGD({p}, {.lr = -0.1}); }, "[optim.SGD] invalid learning rate: -0.1 (must be >= 0)");
  throws([&] { SGD({p}, {.momentum = -1}); }, "[optim.SGD] invalid momentum: -1");
  throws([&] { SGD({p}, {.weight_decay = -1}); }, "[optim.SGD] invalid weight_decay: -1");
  throws([&] { SGD({p}, {.nesterov = true}); },
         "[optim.SGD] nesterov momentum requires momentum > 0 and dampening = 0");
  throws([&] { SGD({p}, {.momentum = 0.9, .dampening = 0.1, .nesterov = true}); },
         "requires momentum > 0 and dampening = 0, got momentum 0.9 and dampening 0.1");
  throws([&] { Adam({p}, {.beta1 = 1.5}); }, "[optim.Adam] invalid beta1: 1.5 (must be in [0, 1))");
  throws([&] { Adam({p}, {.beta2 = 1.0}); }, "[optim.Adam] invalid beta2: 1 (must be in [0, 1))");
  throws([&] { Adam({p}, {.beta1 = -0.1}); }, "[optim.Adam] invalid beta1: -0.1");
  throws([&] { Adam({p}, {.eps = -1e-8}); }, "[optim.Adam] invalid eps: -1e-08");
  throws([&] { Adam({p}, {.lr = -1}); }, "[optim.Adam] invalid learning rate: -1");
  throws([&] { AdamW({p}, {.weight_decay = -0.1}); }, "[optim.AdamW] invalid weight_decay: -0.1");
  throws([&] { AdamW({p}, {.beta2 = 2}); }, "[optim.AdamW] invalid beta2: 2");
  throws([&] { RMSprop({p}, {.alpha = -0.5}); }, "[optim.RMSprop] invalid alpha: -0.5");
  throws([&] { RMSprop({p}, {.momentum = -0.5}); }, "[optim.RMSprop] invalid momentum: -0.5");
  throws([&] { RMSprop({p}, {.eps = -1}); }, "[optim.RMSprop] invalid eps: -1");
  throws([&] { RMSprop({p}, {.lr = -1}); }, "[optim.RMSprop] invalid learning rate: -1");
}

// Note [The default device]: the state optimizers and schedulers keep as host bookkeeping (step
// counts, group indices, L-BFGS's scalars and ro, a scheduler's epoch and rates) is made on the
// CPU whatever the factories' default, as PyTorch keeps a step count on the CPU.
TEST(OptimizerState, HostBookkeepingStaysOnTheCpuWhateverTheDefaultDevice) {
  ember::init();
  const int16_t id = find_device_type("reference");
  ASSERT_GE(id, 0) << "the reference backend is not loaded";
  set_default_device(Device(id, 0));
  struct Reset {
    ~Reset() { reset_default_device(); }
  } reset;
  const TensorOptions cpu(DType::Float64, Device::cpu());
  Tensor w = ones({2}, cpu).requires_grad_(true);
  Adam adam({w});
  sum(mul(w, w)).backward();
  adam.step();
  StepLR sched(adam, 1);
  sched.step();
  Tensor v = full({2}, 0.5, cpu).requires_grad_(true);
  LBFGS lbfgs({v}, LBFGSOptions{.max_iter = 3});
  lbfgs.step([&] {
    lbfgs.zero_grad();
    Tensor l = sum(mul(sub(v, 2.0), sub(v, 2.0)));
    l.backward();
    return l;
  });
  for (const StateDict& dict : {adam.state_dict(), sched.state_dict(), lbfgs.state_dict()}) {
    ASSERT_FALSE(dict.empty());
    for (const auto& [key, t] : dict) {
      if (t.defined()) {
        EXPECT_EQ(t.device(), Device::cpu()) << key;
      }
    }
  }
  EXPECT_EQ(lbfgs.state_dict().count("state.0.ro"), 1u);
}

}  // namespace
}  // namespace ember::optim
