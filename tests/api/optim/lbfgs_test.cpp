// L-BFGS: the iterates, losses and evaluation counts PyTorch's torch.optim.LBFGS gives on the
// Rosenbrock function over two parameters (with and without the strong-Wolfe line search, with a
// full and a short history), convergence, its state in checkpoints, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <ember/ember.h>
#include <ember/optim.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::optim {
namespace {

using ember::testing::expect_error;
using ember::testing::values;

struct Problem {
  Tensor a = tensor({-1.5, 0.5}).to(DType::Float64).requires_grad_(true);
  Tensor b = tensor({2.0, -0.5}).to(DType::Float64).reshape({2, 1}).requires_grad_(true);

  /** The 4-d Rosenbrock function of cat(a, b), its gradient set by backward. */
  Tensor loss() const {
    const Tensor x = cat({a, b.reshape({-1})});
    Tensor total = zeros({}, DType::Float64);
    for (int64_t i = 0; i < 3; ++i) {
      const Tensor xi = x.narrow(0, i, 1), next = x.narrow(0, i + 1, 1);
      total = add(total, sum(add(mul(square(sub(next, square(xi))), 100.0), square(sub(xi, 1.0)))));
    }
    return total;
  }
};

struct Expected {
  double loss;
  std::vector<double> x;
  double func_evals;
  int64_t n_iter;
};

// Computed once with PyTorch 2.15's torch.optim.LBFGS on the same problem in float64.
void expect_pytorchs_iterates(LBFGSOptions options, const std::vector<Expected>& expected) {
  Problem p;
  LBFGS opt({p.a, p.b}, options);
  for (const Expected& e : expected) {
    const Tensor loss = opt.step([&] {
      opt.zero_grad();
      Tensor l = p.loss();
      l.backward();
      return l;
    });
    EXPECT_NEAR(loss.item(), e.loss, 1e-9 * std::abs(e.loss));
    std::vector<double> x = values(p.a);
    for (double v : values(p.b)) x.push_back(v);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], e.x[i], 1e-9) << "coordinate " << i;
    const StateDict s = opt.state_dict();
    EXPECT_EQ(s.at("state.0.func_evals").item(), e.func_evals);
    EXPECT_EQ(s.at("state.0.step").item(), static_cast<double>(e.n_iter));
  }
}

TEST(LBFGS, MatchesPyTorchsIteratesWithAFixedStep) {
  expect_pytorchs_iterates(
      {.max_iter = 5},
      {{2645.0,
        {-0.9308259858262647, 0.8272346676559362, 0.546310517764528, 0.1746496538097969},
        5,
        5},
       {7.554818587607735,
        {-0.8417055518218578, 0.7194058543822065, 0.5229877109413812, 0.2739732080830977},
        10,
        10},
       {3.7130997244407045,
        {-0.8363092702887726, 0.7097941369414155, 0.510988939607762, 0.2588725537657625},
        15,
        15}});
  // A history of 3 pairs, lr 0.5.
  expect_pytorchs_iterates(
      {.lr = 0.5, .history_size = 3},
      {{2645.0,
        {-0.88451453625162, 0.7928264841171206, 0.6343580593251151, 0.40357717479872196},
        20,
        20},
       {3.7424340998056116,
        {-0.7772548924311271, 0.6155274578037069, 0.38506562414067347, 0.1482957211113467},
        40,
        40}});
}

TEST(LBFGS, MatchesPyTorchsIteratesWithTheStrongWolfeLineSearch) {
  expect_pytorchs_iterates(
      {.max_iter = 10, .line_search_fn = "strong_wolfe"},
      {{2645.0,
        {-0.8417055518218578, 0.7194058543822065, 0.5229877109413812, 0.2739732080830977},
        11,
        10},
       {3.7130997244407045,
        {-0.790093614538243, 0.6355543295319436, 0.40964752044523717, 0.16798080929817014},
        22,
        20},
       {3.7018280142194606,
        {-0.7756591853553702, 0.6130931766398817, 0.3820631080030892, 0.1459714394698158},
        31,
        28}});
  expect_pytorchs_iterates(
      {.history_size = 3, .line_search_fn = "strong_wolfe"},
      {{2645.0,
        {-0.7826261881974261, 0.6234662075801133, 0.39469366222525754, 0.1554250947985587},
        25,
        20},
       {3.701540236037571,
        {-0.7756602510551956, 0.613095704652245, 0.3820669534973693, 0.1459761970314533},
        33,
        26}});
}

TEST(LBFGS, ConvergesAndResumesFromItsStateDict) {
  // f(x) = sum(i * x_i^2 / 2 - x_i), i = 1..5: the minimum is x_i = 1 / i; with exact line
  // searches L-BFGS finds a quadratic's minimum in as many iterations as dimensions (here it
  // stops once the loss changes by less than tolerance_change).
  Tensor x = zeros({5}, DType::Float64).requires_grad_(true);
  const Tensor scale = arange(1, 6).to(DType::Float64);
  LBFGS opt({x}, {.max_iter = 20, .tolerance_grad = 1e-12, .line_search_fn = "strong_wolfe"});
  opt.step([&] {
    opt.zero_grad();
    Tensor l = sum(sub(mul(mul(scale, square(x)), 0.5), x));
    l.backward();
    return l;
  });
  const std::vector<double> got = values(x);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(got[static_cast<size_t>(i)], 1.0 / (i + 1), 1e-6);

  // The state (direction, history, step count) survives a checkpoint: two optimizers, one
  // restored from the other's state_dict, take the same next step.
  Problem q, r;
  LBFGS first({q.a, q.b}, {.max_iter = 3}), second({r.a, r.b}, {.max_iter = 3});
  const auto closure_of = [](LBFGS& o, Problem& pr) {
    return [&] {
      o.zero_grad();
      Tensor l = pr.loss();
      l.backward();
      return l;
    };
  };
  first.step(closure_of(first, q));
  second.step(closure_of(second, r));
  LBFGS restored({r.a, r.b}, {.max_iter = 3});
  restored.load_state_dict(first.state_dict());
  first.step(closure_of(first, q));
  restored.step(closure_of(restored, r));
  EXPECT_EQ(values(q.a), values(r.a));
  EXPECT_EQ(values(q.b), values(r.b));
}

TEST(LBFGS, BadArgumentsAreClearErrors) {
  Problem p;
  expect_error([&] { LBFGS({p.a}, {.line_search_fn = "armijo"}); },
               {"[optim.LBFGS] line_search_fn must be None or 'strong_wolfe'", "armijo"});
  expect_error([&] { LBFGS({p.a}, {.lr = -1}); }, {"invalid learning rate: -1"});
  expect_error([&] { LBFGS({p.a}, {.history_size = 0}); }, {"must be at least 1"});
  expect_error(
      [&] {
        LBFGS(std::vector<ParamGroup>{{{p.a}}, {{p.b}}});
      },
      {"doesn't support per-parameter options"});
  LBFGS opt({p.a});
  expect_error([&] { opt.step(); }, {"step() needs a closure"});
  expect_error([&] { opt.step([] { return zeros({2}); }); },
               {"the closure must return the loss (one number)", "[2]"});
}

}  // namespace
}  // namespace ember::optim
