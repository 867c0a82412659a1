// Runs every registered gradcheck case (first and second order) and checks that every op
// declared differentiable has at least one case.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <fmt/format.h>

#include "ember/autograd/gradcheck.h"
#include "tests/core/autograd/gradcheck_cases.h"

namespace ember::testing {

std::vector<GradcheckCase>& gradcheck_cases() {
  static std::vector<GradcheckCase> cases;
  return cases;
}

int gradcheck_part(const std::string& op) {
  // Built on first use, when a test runs: every case has been registered by then.
  static const std::map<std::string, int> parts = [] {
    std::map<std::string, int> m;
    for (const GradcheckCase& c : gradcheck_cases()) {
      m.emplace(c.op, static_cast<int>(m.size() % kGradcheckParts));
    }
    return m;
  }();
  return parts.at(op);
}

namespace {

TEST(Gradcheck, EveryDifferentiableOpHasACase) {
  std::set<std::string> covered;
  for (const GradcheckCase& c : gradcheck_cases()) covered.insert(c.op);
  std::vector<std::string> missing;
  for (const std::string& op : differentiable_ops()) {
    if (!covered.count(op)) missing.push_back(op);
  }
  EXPECT_TRUE(missing.empty()) << "differentiable ops without a gradcheck case: "
                               << fmt::format("{}", fmt::join(missing, ", "));
  EXPECT_GT(covered.size(), 30u);
}

// Runs check (gradcheck or gradgradcheck) on case c and expects it to pass; an ember::Error
// counts as a failure with its message.
template <typename Check>
void expect_case_passes(const GradcheckCase& c, Check check) {
  autograd::GradcheckResult r;
  try {
    r = check(c.fn, c.inputs(), c.opts);
  } catch (const Error& e) {
    r = {false, e.what()};
  }
  EXPECT_TRUE(r.ok) << c.op << " (" << c.label << "): " << r.message;
}

TEST(Gradcheck, AllCasesFirstOrder) {
  for (const GradcheckCase& c : gradcheck_cases()) {
    expect_case_passes(c, [](const auto&... a) { return autograd::gradcheck(a...); });
  }
}

/** The second-order checks of the cases in one part (Note [Second-order gradchecks in parts]). */
class GradcheckSecondOrder : public ::testing::TestWithParam<int> {};

TEST_P(GradcheckSecondOrder, Part) {
  int ran = 0;
  for (const GradcheckCase& c : gradcheck_cases()) {
    if (!c.second_order || gradcheck_part(c.op) != GetParam()) continue;
    expect_case_passes(c, [](const auto&... a) { return autograd::gradgradcheck(a...); });
    ++ran;
  }
  EXPECT_GT(ran, 0);
}

INSTANTIATE_TEST_SUITE_P(AllCases, GradcheckSecondOrder, ::testing::Range(0, kGradcheckParts));

// Note [A graph is freed with its outputs]
// A backward closure that captured one of its own node's outputs as a plain SavedTensor held
// the output, whose grad_fn is the node: a cycle that leaked the whole graph whenever backward
// never ran or threw (linalg.qr/eigh/svd did). Every case's graph must be gone once its result
// and inputs are, with no backward at all.
/** Weak references to every node reachable from `t`'s grad_fn. */
std::vector<std::weak_ptr<autograd::Node>> reachable_nodes(const Tensor& t) {
  std::vector<std::weak_ptr<autograd::Node>> seen;
  std::set<const autograd::Node*> visited;
  std::vector<std::shared_ptr<autograd::Node>> stack;
  if (t.grad_fn()) stack.push_back(t.grad_fn());
  while (!stack.empty()) {
    std::shared_ptr<autograd::Node> n = std::move(stack.back());
    stack.pop_back();
    if (!visited.insert(n.get()).second) continue;
    seen.push_back(n);
    for (const autograd::Edge& e : n->next_edges) {
      if (e.valid()) stack.push_back(e.fn);
    }
  }
  return seen;
}

TEST(Gradcheck, EveryCaseFreesItsGraphWithoutBackward) {
  for (const GradcheckCase& c : gradcheck_cases()) {
    std::vector<std::weak_ptr<autograd::Node>> nodes;
    try {
      std::vector<Tensor> in = c.inputs();
      nodes = reachable_nodes(c.fn(in));
    } catch (const Error& e) {
      ADD_FAILURE() << c.op << " (" << c.label << "): " << e.what();
      continue;
    }
    size_t alive = 0;
    for (const auto& n : nodes) alive += n.expired() ? 0 : 1;
    EXPECT_EQ(alive, 0u) << c.op << " (" << c.label << "): " << alive << " of " << nodes.size()
                         << " nodes outlived the result and the inputs";
  }
}

TEST(Gradcheck, ReportsTheElementThatDisagrees) {
  // A deliberately wrong backward: d/dx of x*x claimed to be 3x.
  auto wrong = [](const std::vector<Tensor>& in) {
    return autograd::differentiable(
        "WrongBackward", "wrong", {&in[0]}, [&] { return mul(in[0], in[0]).detach(); },
        [&] {
          return [x = in[0]](const std::vector<Tensor>& g, const autograd::LambdaNode&) {
            return std::vector<Tensor>{mul(g[0], mul(x, 3.0))};
          };
        });
  };
  autograd::GradcheckResult r = autograd::gradcheck(wrong, {input({3}, 1)});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("Jacobian mismatch for output 0 with respect to input 0"),
            std::string::npos)
      << r.message;
}

}  // namespace
}  // namespace ember::testing
