// Runs every registered gradcheck case (first and second order) and checks that every op
// declared differentiable has at least one case.
#include <gtest/gtest.h>

#include <set>

#include "ember/autograd/gradcheck.h"
#include "tests/core/autograd/gradcheck_cases.h"

namespace ember::testing {

std::vector<GradcheckCase>& gradcheck_cases() {
  static std::vector<GradcheckCase> cases;
  return cases;
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

TEST(Gradcheck, AllCasesFirstOrder) {
  for (const GradcheckCase& c : gradcheck_cases()) {
    autograd::GradcheckResult r;
    try {
      r = autograd::gradcheck(c.fn, c.inputs(), c.opts);
    } catch (const Error& e) {
      r = {false, e.what()};
    }
    EXPECT_TRUE(r.ok) << c.op << " (" << c.label << "): " << r.message;
  }
}

TEST(Gradcheck, AllCasesSecondOrder) {
  for (const GradcheckCase& c : gradcheck_cases()) {
    if (!c.second_order) continue;
    autograd::GradcheckResult r;
    try {
      r = autograd::gradgradcheck(c.fn, c.inputs(), c.opts);
    } catch (const Error& e) {
      r = {false, e.what()};
    }
    EXPECT_TRUE(r.ok) << c.op << " (" << c.label << "): " << r.message;
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
