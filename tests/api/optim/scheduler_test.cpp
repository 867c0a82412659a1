// LR schedulers against hand-computed values, and gradient clipping.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include <ember/ember.h>
#include <ember/optim.h>

namespace ember::optim {
namespace {

using Vec = std::vector<double>;

Tensor make(const Vec& v) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, DType::Float64);
  std::copy(v.begin(), v.end(), t.data_ptr<double>());
  return t.to(DType::Float32);
}

Vec values(const Tensor& t) {
  Tensor c = t.detach().to(DType::Float64).contiguous();
  return Vec(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

template <typename Fn>
void expect_error(Fn&& fn, const std::string& msg) {
  try {
    fn();
    ADD_FAILURE() << "no error, expected: " << msg;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
  }
}

TEST(OptimStepLR, DecaysEveryStepSize) {
  Tensor p = make({1.0}).requires_grad_();
  SGD opt({p}, {.lr = 1.0});
  StepLR sched(opt, /*step_size=*/2, /*gamma=*/0.5);
  const Vec want = {1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.125};
  for (size_t e = 0; e < want.size(); ++e) {
    EXPECT_EQ(sched.last_epoch(), static_cast<int64_t>(e));
    EXPECT_DOUBLE_EQ(sched.get_last_lr()[0], want[e]) << "epoch " << e;
    EXPECT_DOUBLE_EQ(opt.param_groups()[0].lr(), want[e]);
    opt.step();
    sched.step();
  }
  expect_error([&] { StepLR(opt, 0); }, "[optim.StepLR] invalid step_size: 0 (must be > 0)");
}

TEST(OptimStepLR, ActsOnEveryGroupAndOnTheUpdate) {
  Tensor p = make({0.0}).requires_grad_();
  Tensor q = make({0.0}).requires_grad_();
  SGD opt(std::vector<ParamGroup>{{.params = {p}}, {.params = {q}, .options = {{"lr", 0.2}}}},
          {.lr = 1.0});
  StepLR sched(opt, 1, 0.1);
  sched.step();
  EXPECT_DOUBLE_EQ(sched.get_last_lr()[0], 0.1);
  EXPECT_DOUBLE_EQ(sched.get_last_lr()[1], 0.02);
  p.mutable_grad() = make({1.0});
  opt.step();
  EXPECT_NEAR(values(p)[0], -0.1, 1e-7);
}

TEST(OptimCosineAnnealingLR, ClosedForm) {
  Tensor p = make({1.0}).requires_grad_();
  SGD opt({p}, {.lr = 1.0});
  CosineAnnealingLR sched(opt, /*T_max=*/10, /*eta_min=*/0.1);
  EXPECT_DOUBLE_EQ(sched.get_last_lr()[0], 1.0);
  for (int e = 1; e <= 10; ++e) {
    sched.step();
    const double want = 0.1 + 0.9 * (1 + std::cos(std::numbers::pi * e / 10)) / 2;
    EXPECT_NEAR(sched.get_last_lr()[0], want, 1e-12) << "epoch " << e;
    if (e == 5) {
      EXPECT_NEAR(sched.get_last_lr()[0], 0.55, 1e-12);
    }
  }
  EXPECT_NEAR(opt.param_groups()[0].lr(), 0.1, 1e-12);
  expect_error([&] { CosineAnnealingLR(opt, 0); }, "[optim.CosineAnnealingLR] invalid T_max: 0");
}

TEST(OptimCosineAnnealingLR, FollowsAnLrChangedByHand) {
  // PyTorch's get_lr is recursive: an lr set between steps moves along the cosine from there.
  // Before, the closed form from base_lr overwrote it.
  Tensor p = make({1.0}).requires_grad_();
  SGD opt({p}, {.lr = 1.0});
  CosineAnnealingLR sched(opt, /*T_max=*/10, /*eta_min=*/0.1);
  for (int e = 1; e <= 3; ++e) sched.step();
  opt.param_groups()[0].set_lr(0.5);
  sched.step();  // epoch 4
  const double pi = std::numbers::pi;
  const double ratio4 = (1 + std::cos(pi * 4 / 10)) / (1 + std::cos(pi * 3 / 10));
  EXPECT_NEAR(sched.get_last_lr()[0], 0.1 + ratio4 * (0.5 - 0.1), 1e-15);
  EXPECT_NEAR(opt.param_groups()[0].lr(), 0.1 + ratio4 * 0.4, 1e-15);
  sched.step();  // epoch 5
  const double ratio5 = (1 + std::cos(pi * 5 / 10)) / (1 + std::cos(pi * 4 / 10));
  EXPECT_NEAR(sched.get_last_lr()[0], 0.1 + ratio5 * ratio4 * 0.4, 1e-15);
}

TEST(OptimCosineAnnealingLR, ContinuesPastTMaxAsPyTorch) {
  // Past T_max the lr rises again; the step out of the trough (epoch T_max + 1) uses PyTorch's
  // special case, and left alone the values are the closed form's.
  Tensor p = make({1.0}).requires_grad_();
  SGD opt({p}, {.lr = 1.0});
  CosineAnnealingLR sched(opt, /*T_max=*/2, /*eta_min=*/0.2);
  const Vec want = {1.0, 0.6, 0.2, 0.6, 1.0, 0.6, 0.2, 0.6};
  for (size_t e = 0; e < want.size(); ++e) {
    EXPECT_NEAR(sched.get_last_lr()[0], want[e], 1e-12) << "epoch " << e;
    sched.step();
  }
}

TEST(OptimOneCycleLR, CyclesMomentumByDefault) {
  // PyTorch's default cycle_momentum=True: momentum from max_momentum (0.95) down to
  // base_momentum (0.85) while the lr rises, and back up while it falls.
  Tensor p = make({1.0}).requires_grad_();
  SGD opt({p}, {.lr = 0.1, .momentum = 0.9});
  OneCycleLR sched(opt, /*max_lr=*/1.0, /*total_steps=*/10);
  auto cos_anneal = [](double start, double end, double pct) {
    return end + (start - end) / 2 * (std::cos(std::numbers::pi * pct) + 1);
  };
  Vec momentum;
  momentum.push_back(opt.param_groups()[0].get("momentum"));
  for (int s = 1; s < 10; ++s) {
    sched.step();
    momentum.push_back(opt.param_groups()[0].get("momentum"));
  }
  EXPECT_NEAR(momentum[0], 0.95, 1e-15);
  EXPECT_NEAR(momentum[1], 0.90, 1e-12);  // halfway down phase one (ends at step 2)
  EXPECT_NEAR(momentum[2], 0.85, 1e-12);
  for (int s = 3; s < 10; ++s) {
    EXPECT_NEAR(momentum[s], cos_anneal(0.85, 0.95, (s - 2) / 7.0), 1e-12) << "step " << s;
  }
  // Adam's beta1 is its momentum; per-group bounds; cycle_momentum=false leaves it.
  Tensor q = make({1.0}).requires_grad_();
  Adam adam(std::vector<ParamGroup>{{.params = {p}}, {.params = {q}}});
  OneCycleLR linear(adam, 1.0, 5,
                    {.anneal_strategy = AnnealStrategy::Linear,
                     .base_momentum = {0.8, 0.5},
                     .max_momentum = {0.9, 0.7}});
  EXPECT_NEAR(adam.param_groups()[0].get("beta1"), 0.9, 1e-15);
  EXPECT_NEAR(adam.param_groups()[1].get("beta1"), 0.7, 1e-15);
  linear.step();  // phase one ends at 0.3 * 5 - 1 = 0.5: step 1 is 1/7 of phase two
  EXPECT_NEAR(adam.param_groups()[0].get("beta1"), 0.8 + (0.9 - 0.8) * (0.5 / 3.5), 1e-12);
  EXPECT_NEAR(adam.param_groups()[1].get("beta2"), 0.999, 1e-15);
  SGD plain({p}, {.lr = 0.1, .momentum = 0.3});
  OneCycleLR off(plain, 1.0, 5, {.cycle_momentum = false});
  off.step();
  EXPECT_EQ(plain.param_groups()[0].get("momentum"), 0.3);
  expect_error(
      [&] {
        OneCycleLR(opt, 1.0, 5, {.base_momentum = {0.8, 0.7}});
      },
      "[optim.OneCycleLR] got 2 base_momentum values for 1 param groups");
}

TEST(OptimOneCycleLR, ThreePhases) {
  // Phases end at 0.3 * 10 - 1 = 2 (up to max_lr), 2 * 0.3 * 10 - 2 = 4 (back to initial_lr)
  // and 9 (down to min_lr); the momentum mirrors the first two and stays at max in the third.
  Tensor p = make({1.0}).requires_grad_();
  SGD opt({p}, {.lr = 0.1, .momentum = 0.9});
  OneCycleLR sched(opt, 1.0, 10, {.anneal_strategy = AnnealStrategy::Linear, .three_phase = true});
  const double initial = 0.04, min_lr = 4e-6;
  Vec lr{sched.get_last_lr()[0]}, m{opt.param_groups()[0].get("momentum")};
  for (int s = 1; s < 10; ++s) {
    sched.step();
    lr.push_back(sched.get_last_lr()[0]);
    m.push_back(opt.param_groups()[0].get("momentum"));
  }
  const Vec want_lr = {initial, 0.52, 1.0, 0.52, initial};
  for (int s = 0; s < 5; ++s) EXPECT_NEAR(lr[s], want_lr[s], 1e-12) << "step " << s;
  for (int s = 5; s < 10; ++s) {
    EXPECT_NEAR(lr[s], initial + (min_lr - initial) * (s - 4) / 5.0, 1e-12) << "step " << s;
    EXPECT_NEAR(m[s], 0.95, 1e-12);
  }
  EXPECT_NEAR(m[2], 0.85, 1e-12);
  EXPECT_NEAR(m[3], 0.90, 1e-12);
}

TEST(OptimOneCycleLR, TwoPhasesByHand) {
  Tensor p = make({1.0}).requires_grad_();
  Adam opt({p});
  OneCycleLR sched(opt, /*max_lr=*/1.0, /*total_steps=*/10);
  // initial = 1 / 25 = 0.04, min = 0.04 / 1e4; phase one ends at step 0.3 * 10 - 1 = 2,
  // phase two at step 9.
  const double initial = 0.04, min_lr = 4e-6;
  auto cos_anneal = [](double start, double end, double pct) {
    return end + (start - end) / 2 * (std::cos(std::numbers::pi * pct) + 1);
  };
  std::vector<double> got;
  got.push_back(sched.get_last_lr()[0]);
  for (int s = 1; s < 10; ++s) {
    sched.step();
    got.push_back(sched.get_last_lr()[0]);
  }
  EXPECT_NEAR(got[0], initial, 1e-15);
  EXPECT_NEAR(got[1], 0.52, 1e-12);  // halfway up: 1 + (0.04 - 1) / 2
  EXPECT_NEAR(got[2], 1.0, 1e-12);
  for (int s = 3; s < 10; ++s) {
    EXPECT_NEAR(got[s], cos_anneal(1.0, min_lr, (s - 2) / 7.0), 1e-12) << "step " << s;
  }
  EXPECT_NEAR(got[9], min_lr, 1e-15);
  sched.step();  // step 10 is still allowed, as in PyTorch
  expect_error([&] { sched.step(); },
               "[optim.OneCycleLR] tried to step 11 times; the schedule has total_steps = 10");
}

TEST(OptimOneCycleLR, LinearAndPerGroup) {
  Tensor p = make({1.0}).requires_grad_();
  Tensor q = make({1.0}).requires_grad_();
  SGD opt(std::vector<ParamGroup>{{.params = {p}}, {.params = {q}}});
  OneCycleLR sched(opt, Vec{1.0, 2.0}, 5,
                   {.pct_start = 0.4,
                    .anneal_strategy = AnnealStrategy::Linear,
                    .div_factor = 10,
                    .final_div_factor = 100});
  // Phase one ends at step 1: lrs 0.1 -> 1 (and 0.2 -> 2); then linear to 0.001 (0.002) at 4.
  EXPECT_NEAR(sched.get_last_lr()[0], 0.1, 1e-12);
  EXPECT_NEAR(sched.get_last_lr()[1], 0.2, 1e-12);
  sched.step();
  EXPECT_NEAR(sched.get_last_lr()[0], 1.0, 1e-12);
  sched.step();
  EXPECT_NEAR(sched.get_last_lr()[0], 1.0 + (0.001 - 1.0) / 3, 1e-12);
  sched.step();
  sched.step();
  EXPECT_NEAR(sched.get_last_lr()[0], 0.001, 1e-12);
  EXPECT_NEAR(sched.get_last_lr()[1], 0.002, 1e-12);
  expect_error([&] { OneCycleLR(opt, Vec{1.0}, 5); },
               "[optim.OneCycleLR] got 1 max_lr values for 2 param groups");
  expect_error([&] { OneCycleLR(opt, 1.0, 0); }, "[optim.OneCycleLR] invalid total_steps: 0");
}

TEST(OptimReduceLROnPlateau, MinModeWithPatienceAndCooldown) {
  Tensor p = make({1.0}).requires_grad_();
  SGD opt({p}, {.lr = 1.0});
  ReduceLROnPlateau sched(opt, {.factor = 0.5, .patience = 2, .cooldown = 1, .min_lr = 0.2});
  // 10 then 9 improve; three 9s in a row exceed patience 2 -> lr 0.5.
  const Vec metrics = {10, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
  const Vec want = {1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.2, 0.2};
  for (size_t e = 0; e < metrics.size(); ++e) {
    sched.step(metrics[e]);
    EXPECT_DOUBLE_EQ(sched.get_last_lr()[0], want[e]) << "epoch " << e;
  }
  EXPECT_EQ(sched.best(), 9);
  // An improvement smaller than the relative threshold (1e-4) is not one.
  sched.step(9 * (1 - 0.5e-4));
  EXPECT_EQ(sched.best(), 9);
  sched.step(8);
  EXPECT_EQ(sched.best(), 8);
  EXPECT_EQ(sched.num_bad_epochs(), 0);
}

TEST(OptimReduceLROnPlateau, MaxModeAbsThreshold) {
  Tensor p = make({1.0}).requires_grad_();
  SGD opt({p}, {.lr = 0.1});
  ReduceLROnPlateau sched(opt, {.mode = PlateauMode::Max,
                                .patience = 0,
                                .threshold = 0.05,
                                .threshold_mode = ThresholdMode::Abs});
  sched.step(0.5);
  EXPECT_DOUBLE_EQ(sched.get_last_lr()[0], 0.1);
  sched.step(0.6);  // better by 0.1 > 0.05
  EXPECT_DOUBLE_EQ(sched.get_last_lr()[0], 0.1);
  sched.step(0.62);  // not better by 0.05: one bad epoch > patience 0
  EXPECT_NEAR(sched.get_last_lr()[0], 0.01, 1e-15);
  expect_error([&] { ReduceLROnPlateau(opt, {.factor = 1.0}); },
               "[optim.ReduceLROnPlateau] invalid factor: 1 (must be in [0, 1))");
}

TEST(OptimClipGradNorm, ScalesToMaxNorm) {
  Tensor a = make({3.0, 4.0}).requires_grad_();
  Tensor b = make({12.0}).requires_grad_();
  Tensor c = make({100.0}).requires_grad_();  // no gradient: ignored
  auto reset = [&] {
    a.mutable_grad() = make({3.0, -4.0});
    b.mutable_grad() = make({12.0});
  };
  reset();
  EXPECT_NEAR(clip_grad_norm_({a, b, c}, 6.5), 13.0, 1e-5);
  const double k = 6.5 / (13.0 + 1e-6);
  EXPECT_NEAR(values(a.grad())[0], 3 * k, 1e-6);
  EXPECT_NEAR(values(a.grad())[1], -4 * k, 1e-6);
  EXPECT_NEAR(values(b.grad())[0], 12 * k, 1e-5);
  EXPECT_FALSE(c.grad().defined());
  // Below max_norm: unchanged.
  reset();
  EXPECT_NEAR(clip_grad_norm_({a, b}, 100.0), 13.0, 1e-5);
  EXPECT_EQ(values(a.grad()), (Vec{3.0, -4.0}));
  // Other norms.
  reset();
  EXPECT_NEAR(clip_grad_norm_({a, b}, 100.0, 1.0), 19.0, 1e-5);
  EXPECT_NEAR(clip_grad_norm_({a, b}, 6.0, std::numeric_limits<double>::infinity()), 12.0, 1e-6);
  EXPECT_NEAR(values(b.grad())[0], 12.0 * 6.0 / (12.0 + 1e-6), 1e-5);
  reset();
  EXPECT_NEAR(clip_grad_norm_({a, b}, 100.0, 3.0), std::cbrt(27.0 + 64.0 + 1728.0), 1e-4);
  EXPECT_EQ(clip_grad_norm_({c}, 1.0), 0.0);
  // Non-finite norms.
  a.mutable_grad() = make({std::numeric_limits<double>::infinity(), 1.0});
  expect_error([&] { clip_grad_norm_({a}, 1.0, 2.0, /*error_if_nonfinite=*/true); },
               "[optim.clip_grad_norm_] the total norm of order 2 of the gradients is inf");
  expect_error([&] { clip_grad_norm_({a}, 1.0, -1.0); },
               "[optim.clip_grad_norm_] invalid norm_type: -1");
}

TEST(OptimClipGradValue, ClampsEachElement) {
  Tensor a = make({3.0, -4.0, 0.5}).requires_grad_();
  a.mutable_grad() = make({3.0, -4.0, 0.5});
  clip_grad_value_({a}, 1.0);
  EXPECT_EQ(values(a.grad()), (Vec{1.0, -1.0, 0.5}));
  expect_error([&] { clip_grad_value_({a}, -1.0); }, "[optim.clip_grad_value_] invalid clip_value");
}

// Note [Scheduler states]: a scheduler rebuilt with the same hyperparameters and loaded from a
// state_dict continues the schedule where the first one was.
TEST(OptimLRScheduler, StateDictContinuesTheSchedule) {
  Tensor p = make({1.0}).requires_grad_();
  SGD opt({p}, {.lr = 1.0});
  CosineAnnealingLR sched(opt, 10, 0.01);
  for (int i = 0; i < 4; ++i) sched.step();
  const StateDict state = sched.state_dict();
  const StateDict opt_state = opt.state_dict();
  Tensor q = make({1.0}).requires_grad_();
  SGD opt2({q}, {.lr = 1.0});
  CosineAnnealingLR sched2(opt2, 10, 0.01);
  opt2.load_state_dict(opt_state);
  sched2.load_state_dict(state);
  EXPECT_EQ(sched2.last_epoch(), 4);
  EXPECT_EQ(sched2.get_last_lr(), sched.get_last_lr());
  for (int i = 0; i < 3; ++i) {
    sched.step();
    sched2.step();
    EXPECT_EQ(sched2.get_last_lr()[0], sched.get_last_lr()[0]) << i;
    EXPECT_EQ(opt2.param_groups()[0].lr(), opt.param_groups()[0].lr());
  }
  // A state of another number of groups is refused.
  SGD two(std::vector<ParamGroup>{{.params = {make({0.0}).requires_grad_()}},
                                  {.params = {make({0.0}).requires_grad_()}}},
          {.lr = 1.0});
  StepLR other(two, 1);
  expect_error([&] { other.load_state_dict(state); }, "but the optimizer has 2 param groups");
  // ReduceLROnPlateau: its counters and best value.
  ReduceLROnPlateau plateau(opt, {.patience = 1});
  for (double m : {1.0, 0.5, 0.6}) plateau.step(m);
  ReduceLROnPlateau plateau2(opt2, {.patience = 1});
  plateau2.load_state_dict(plateau.state_dict());
  EXPECT_EQ(plateau2.best(), 0.5);
  EXPECT_EQ(plateau2.num_bad_epochs(), 1);
  plateau.step(0.7);
  plateau2.step(0.7);
  EXPECT_EQ(plateau2.get_last_lr(), plateau.get_last_lr());
}

// The groups of an optimizer that is not a C++ Optimizer (as Python's are): plain maps the test
// reads and writes between steps. The schedulers must keep no copy of them.
class MapGroups final : public HyperparameterGroups {
 public:
  explicit MapGroups(std::vector<Options> groups) : groups_(std::move(groups)) {}
  size_t num_groups() const override { return groups_.size(); }
  double hyperparameter(size_t i, const std::string& name) const override {
    auto it = groups_.at(i).find(name);
    EMBER_CHECK(it != groups_.at(i).end(), "[test] no '{}'", name);
    return it->second;
  }
  void set_hyperparameter(size_t i, const std::string& name, double value) override {
    groups_.at(i)[name] = value;
  }
  bool has_hyperparameter(const std::string& name) const override {
    return std::all_of(groups_.begin(), groups_.end(),
                       [&](const Options& g) { return g.count(name) != 0; });
  }
  bool group_has(size_t i, const std::string& name) const override {
    return groups_.at(i).count(name) != 0;
  }
  std::string optimizer_name() const override { return "optim.Maps"; }
  std::vector<Options> groups_;
};

double lr(const MapGroups& g, size_t i = 0) {
  return g.hyperparameter(i, "lr");
}

/** The lrs of `steps` + 1 epochs of `s` (epoch 0 first). */
template <class S>
Vec run(S& s, const MapGroups& g, int steps) {
  Vec out = {lr(g)};
  for (int i = 0; i < steps; ++i) {
    s.step();
    out.push_back(lr(g));
  }
  return out;
}

void expect_near(const Vec& got, const Vec& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "epoch " << i;
}

TEST(OptimSchedulers, RecursiveOnesFollowTheirClosedFormsAndAnLrSetByHand) {
  MapGroups g({{{"lr", 0.1}}});
  MultiStepLR multi(g, {5, 2, 5}, 0.1);
  expect_near(run(multi, g, 6), {0.1, 0.1, 0.01, 0.01, 0.01, 1e-4, 1e-4});
  g = MapGroups({{{"lr", 0.1}}});
  ExponentialLR exp(g, 0.8);
  Vec want;
  for (int e = 0; e <= 4; ++e) want.push_back(0.1 * std::pow(0.8, e));
  expect_near(run(exp, g, 4), want);
  g.groups_[0]["lr"] = 1.0;  // by hand: the schedule carries on from it
  exp.step();
  EXPECT_NEAR(lr(g), 0.8, 1e-15);
  g = MapGroups({{{"lr", 0.1}}});
  LinearLR linear(g, 0.25, 0.75, 4);
  expect_near(run(linear, g, 6), {0.025, 0.0375, 0.05, 0.0625, 0.075, 0.075, 0.075});
  g = MapGroups({{{"lr", 0.1}}});
  ConstantLR constant(g, 0.5, 3);
  expect_near(run(constant, g, 4), {0.05, 0.05, 0.05, 0.1, 0.1});
  g = MapGroups({{{"lr", 0.1}}});
  PolynomialLR poly(g, 4, 2.0);
  want.clear();
  for (int e = 0; e <= 6; ++e) want.push_back(0.1 * std::pow(1 - std::min(e, 4) / 4.0, 2));
  expect_near(run(poly, g, 6), want, 1e-15);
  expect_error([&] { LinearLR(g, 0.0); }, "[optim.LinearLR] start_factor must be in (0, 1]: got 0");
  expect_error([&] { PolynomialLR(g, 0); }, "[optim.PolynomialLR] total_iters must be > 0");
}

TEST(OptimSchedulers, LambdaAndMultiplicativePerGroup) {
  MapGroups g({{{"lr", 1.0}}, {{"lr", 0.5}}});
  LambdaLR lambda(g, {[](int64_t e) { return 1.0 / (1 + e); }, [](int64_t e) { return 0.5 * e; }});
  EXPECT_EQ(lambda.get_last_lr(), (Vec{1.0, 0.0}));
  lambda.step();
  lambda.step();
  EXPECT_EQ(lambda.get_last_lr(), (Vec{1.0 / 3, 0.5}));
  MapGroups h({{{"lr", 1.0}}, {{"lr", 0.5}}});
  MultiplicativeLR mult(h, {[](int64_t) { return 0.9; }});
  mult.step();
  mult.step();
  EXPECT_NEAR(lr(h, 0), 0.81, 1e-15);
  EXPECT_NEAR(lr(h, 1), 0.405, 1e-15);
  expect_error(
      [&] {
        LambdaLR(g, {LrLambda{}, LrLambda{}, LrLambda{}});
      },
      "[optim.LambdaLR] expected 2 lr_lambdas (one per param group), got 3");
}

TEST(OptimSchedulers, WarmRestartsByStepAndByEpoch) {
  MapGroups g({{{"lr", 0.1}}});
  CosineAnnealingWarmRestarts s(g, 2, 2, 0.01);
  // Cycles of 2, 4, 8 epochs: epoch t sits at T_cur of its cycle.
  const std::vector<std::pair<int, int>> cur = {{0, 2}, {1, 2}, {0, 4}, {1, 4}, {2, 4},
                                                {3, 4}, {0, 8}, {1, 8}, {2, 8}};
  Vec want;
  for (auto [c, t] : cur) {
    want.push_back(0.01 + 0.09 * (1 + std::cos(std::numbers::pi * c / t)) / 2);
  }
  expect_near(run(s, g, 8), want);
  s.step(5.5);  // T_cur = 5.5 - 2 within the 4-epoch cycle
  EXPECT_NEAR(lr(g), 0.01 + 0.09 * (1 + std::cos(std::numbers::pi * 3.5 / 4)) / 2, 1e-15);
  EXPECT_EQ(s.last_epoch(), 5);
  EXPECT_EQ(s.T_i(), 4);
  MapGroups h({{{"lr", 0.1}}});
  CosineAnnealingWarmRestarts resumed(h, 2, 2, 0.01);
  resumed.load_state_dict(s.state_dict());
  s.step();
  resumed.step();
  EXPECT_EQ(lr(h), lr(g));
  expect_error([&] { s.step(-1.0); }, "expected a non-negative epoch: got -1");
}

TEST(OptimSchedulers, CyclicCyclesLrAndMomentum) {
  MapGroups g({{{"lr", 0.1}, {"momentum", 0.0}}});
  CyclicLR s(g, {0.01}, {0.05}, {.step_size_up = 2, .step_size_down = 4});
  expect_near(run(s, g, 8), {0.01, 0.03, 0.05, 0.04, 0.03, 0.02, 0.01, 0.03, 0.05});
  EXPECT_NEAR(g.hyperparameter(0, "momentum"), 0.8, 1e-15);  // lowest at the peak lr
  MapGroups h({{{"lr", 0.1}}});
  CyclicLR tri2(h, {0.01}, {0.05},
                {.step_size_up = 1, .mode = CyclicMode::Triangular2, .cycle_momentum = false});
  expect_near(run(tri2, h, 6), {0.01, 0.05, 0.01, 0.03, 0.01, 0.02, 0.01});
  expect_error([&] { CyclicLR(h, {0.01}, {0.05}); },
               "[optim.CyclicLR] optim.Maps has no momentum or beta1 to cycle");
}

TEST(OptimSchedulers, SequentialRestartsEachAtItsMilestoneAndChainedComposes) {
  MapGroups g({{{"lr", 0.1}}});
  LinearLR warm(g, 0.1, 1.0, 3);
  CosineAnnealingLR cos(g, 5);
  ExponentialLR exp(g, 0.5);
  SequentialLR seq(g, {&warm, &cos, &exp}, {3, 8});
  Vec want;
  for (int e = 0; e < 3; ++e) want.push_back(0.1 * (0.1 + 0.9 * e / 3));
  for (int e = 0; e < 5; ++e) want.push_back(0.05 * (1 + std::cos(std::numbers::pi * e / 5)));
  for (int e = 0; e < 3; ++e) want.push_back(0.1 * std::pow(0.5, e));
  expect_near(run(seq, g, 10), want, 1e-15);
  EXPECT_EQ(seq.get_last_lr(), Vec{lr(g)});
  MapGroups other({{{"lr", 0.1}}});
  ExponentialLR elsewhere(other, 0.5);
  expect_error(
      [&] {
        SequentialLR(g, {&warm, &elsewhere}, {2});
      },
      "[optim.SequentialLR] scheduler 1 schedules another optimizer");
  expect_error([&] { SequentialLR(g, {&warm, &cos}, {}); }, "expects 1 milestones for 2");

  MapGroups h({{{"lr", 0.1}}});
  ExponentialLR a(h, 0.5);
  PolynomialLR b(h, 2);
  ChainedScheduler chained(h, {&a, &b});
  expect_near(run(chained, h, 3), {0.1, 0.1 * 0.5 * 0.5, 0.0, 0.0}, 1e-15);
}

TEST(OptimSchedulers, ResumeFromInitialLrAndAFunctionSchedule) {
  MapGroups g({{{"lr", 0.05}, {"initial_lr", 0.1}}});
  StepLR resumed(g, 2, 0.5, /*last_epoch=*/3);  // continues after epoch 3: epoch 4 decays
  EXPECT_EQ(resumed.last_epoch(), 4);
  EXPECT_EQ(resumed.base_lrs(), Vec{0.1});
  EXPECT_NEAR(lr(g), 0.025, 1e-15);
  MapGroups h({{{"lr", 0.1}}});
  expect_error([&] { ExponentialLR(h, 0.5, 3); }, "needs 'initial_lr' in param group 0");
  int calls = 0;
  FunctionLR fn(h, [&](const FunctionLR& s) {
    ++calls;
    return Vec{s.base_lrs()[0] / (1.0 + static_cast<double>(s.last_epoch()))};
  });
  EXPECT_EQ(calls, 0);  // not stepped until its owner steps it
  fn.step();
  fn.step();
  EXPECT_EQ(calls, 2);
  EXPECT_NEAR(lr(h), 0.05, 1e-15);
}

}  // namespace
}  // namespace ember::optim
