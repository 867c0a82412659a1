// Every registered gradcheck case again on another device: the inputs move there, and the
// backward formulas (which live in the core) run on that backend's kernels. On the reference
// backend this runs everywhere (and proves gradcheck itself works off the CPU); on cuda:0 it
// skips with the reason where there is no GPU (CI has none, so it proves nothing there).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "ember/autograd/gradcheck.h"
#include "tests/core/autograd/gradcheck_cases.h"

namespace ember::testing {
namespace {

// A case whose function makes tensors of its own must put them on its inputs' device
// (testing::on); one that leaves them on the CPU fails with the core's "one device" error,
// which is reported by name: every case has to run on every device.
bool is_device_mix(const std::string& what) {
  return what.find("expected all tensors on one device") != std::string::npos;
}

// A case of an optional op the device has no kernel for (the factorizations of linalg on CUDA:
// Note [Devices without the factorizations] in core/ops/linalg_decomp.cpp) does not apply there;
// it is listed, not failed. The reference backend has every such kernel, so all its cases run.
bool is_unavailable_there(const std::string& what) {
  return what.find("not available on device") != std::string::npos;
}

// The device of type `name`, or a reason to skip.
std::string find_device(const char* name, Device* out) {
  init();
  const int16_t type = find_device_type(name);
  if (type < 0) return std::string("the ") + name + " plugin is not loaded";
  if (device_type(type).count == 0) return device_type(type).unusable_reason;
  *out = Device(type, 0);
  return "";
}

// Runs every case on `dev`, first order, or second order for the cases of one part (part >= 0,
// Note [Second-order gradchecks in parts]).
void run_all_on(Device dev, bool second_order, int part = -1) {
  int ran = 0, total = 0;
  std::vector<std::string> not_portable, unavailable;
  for (const GradcheckCase& c : gradcheck_cases()) {
    if (second_order && (!c.second_order || gradcheck_part(c.op) != part)) continue;
    ++total;
    std::vector<Tensor> inputs;
    for (const Tensor& t : c.inputs()) {
      inputs.push_back(t.defined() ? t.detach().to(dev).requires_grad_(t.requires_grad()) : t);
    }
    autograd::GradcheckResult r;
    try {
      r = second_order ? autograd::gradgradcheck(c.fn, inputs, c.opts)
                       : autograd::gradcheck(c.fn, inputs, c.opts);
    } catch (const Error& e) {
      if (is_device_mix(e.what())) {
        not_portable.push_back(c.op + " (" + c.label + ")");
        continue;
      }
      if (is_unavailable_there(e.what()) && dev.type != find_device_type("reference")) {
        unavailable.push_back(c.op + " (" + c.label + ")");
        continue;
      }
      r = {false, e.what()};
    }
    ++ran;
    EXPECT_TRUE(r.ok) << c.op << " (" << c.label << ") on " << dev.str() << ": " << r.message;
  }
  EXPECT_GT(total, 0);
  std::printf("[gradcheck on %s] %d of %d cases ran; %zu need kernels it lacks: %s\n",
              dev.str().c_str(), ran, total, unavailable.size(),
              fmt::format("{}", fmt::join(unavailable, ", ")).c_str());
  EXPECT_EQ(ran + static_cast<int>(unavailable.size()), total)
      << "cases that make CPU tensors of their own (use testing::on):\n  "
      << fmt::format("{}", fmt::join(not_portable, "\n  "));
}

TEST(GradcheckOnReference, AllCasesFirstOrder) {
  Device dev;
  const std::string why = find_device("reference", &dev);
  ASSERT_TRUE(why.empty()) << why;  // the reference backend is part of every build
  run_all_on(dev, /*second_order=*/false);
}

/** The second-order checks of one part on the reference backend. */
class GradcheckOnReferenceSecondOrder : public ::testing::TestWithParam<int> {};

TEST_P(GradcheckOnReferenceSecondOrder, Part) {
  Device dev;
  const std::string why = find_device("reference", &dev);
  ASSERT_TRUE(why.empty()) << why;
  run_all_on(dev, /*second_order=*/true, GetParam());
}

INSTANTIATE_TEST_SUITE_P(AllCases, GradcheckOnReferenceSecondOrder,
                         ::testing::Range(0, kGradcheckParts));

TEST(GradcheckCuda, AllCasesFirstOrder) {
  Device dev;
  const std::string why = find_device("cuda", &dev);
  if (!why.empty()) GTEST_SKIP() << why;
  run_all_on(dev, /*second_order=*/false);
}

/** The second-order checks of one part on cuda:0. */
class GradcheckCudaSecondOrder : public ::testing::TestWithParam<int> {};

TEST_P(GradcheckCudaSecondOrder, Part) {
  Device dev;
  const std::string why = find_device("cuda", &dev);
  if (!why.empty()) GTEST_SKIP() << why;
  run_all_on(dev, /*second_order=*/true, GetParam());
}

INSTANTIATE_TEST_SUITE_P(AllCases, GradcheckCudaSecondOrder, ::testing::Range(0, kGradcheckParts));

}  // namespace
}  // namespace ember::testing
