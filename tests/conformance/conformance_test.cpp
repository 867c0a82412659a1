// Every op on every loaded backend, compared with the reference backend: values (per-dtype
// tolerances) and gradients (backward on both devices, .grad() compared), by the runner of
// `ember conformance` (tools/ember/conformance.cpp). The test list is
// Conformance/Case.Matches/<device>_<case>, one per available device type other than
// `reference` (a device type with 0 devices is absent, not skipped).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "tools/ember/conformance.h"

namespace ember::conformance {
namespace {

struct Param {
  std::string device;
  const Case* op;
};

void PrintTo(const Param& p, std::ostream* os) {
  *os << p.device << "_" << p.op->name;
}

class OpCase : public ::testing::TestWithParam<Param> {};

TEST_P(OpCase, Matches) {
  const std::string& device = GetParam().device;
  const Case& c = *GetParam().op;
  const CaseResult r = run_case(c, device);
  // A backend Ember builds must implement every core op: a kernel missing on it is a failure
  // (`ember conformance` checks an outside backend on the cases it claims instead).
  for (const std::string& k : r.missing) {
    ADD_FAILURE() << "backend '" << device << "' has no kernel for op '" << k << "'";
  }
  for (const std::string& u : r.unclaimed_dtypes) {
    ADD_FAILURE() << "backend '" << device << "' cannot run the case for " << u;
  }
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
  if (r.claimed()) {
    EXPECT_GT(r.checked, 0) << c.name << ": no dtype of '" << c.kernels[0] << "' ran on " << device;
  }
}

std::vector<Param> params() {
  std::vector<Param> out;
  for (const std::string& device : devices_under_test()) {
    for (const Case& c : all_cases()) out.push_back({device, &c});
  }
  return out;
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return info.param.device + "_" + info.param.op->name;
}

INSTANTIATE_TEST_SUITE_P(Conformance, OpCase, ::testing::ValuesIn(params()), param_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpCase);

/** Per device type: its ops and dtypes, from the core's kernel registry. */
std::set<std::pair<std::string, DType>> kernels_of(const std::string& device) {
  std::set<std::pair<std::string, DType>> out;
  for (const OpInfo& op : list_ops()) {
    for (const auto& [type, dtypes] : op.kernels) {
      if (type != device) continue;
      for (DType d : dtypes) out.insert({op.name, d});
    }
  }
  return out;
}

TEST(ConformanceRegistry, ReferenceIsLoaded) {
  init();
  ASSERT_GE(find_device_type(kReference), 0) << "the reference backend plugin did not load";
  EXPECT_EQ(device_type(find_device_type(kReference)).count, 1);
  // Its priority is below the CPU's: the best device never becomes the reference.
  EXPECT_NE(best_device().type_name(), kReference);
}

TEST(ConformanceRegistry, ReferenceCoversEveryCpuKernel) {
  const auto cpu = kernels_of("cpu");
  const auto ref = kernels_of(kReference);
  ASSERT_FALSE(cpu.empty());
  for (const auto& [op, dtype] : cpu) {
    // An optional op (a fused kernel) is compared with the core's composite on the reference.
    if (find_op_schema(op) && find_op_schema(op)->optional) continue;
    EXPECT_TRUE(ref.count({op, dtype})) << "reference lacks " << op << " for " << dtype_name(dtype);
  }
}

// Every backend Ember builds has a kernel for every op of ember/ops.def but the optional ones.
TEST(ConformanceRegistry, EveryBackendHasEveryMandatoryOp) {
  for (const std::string& device : {std::string("cpu"), std::string(kReference)}) {
    const auto have = kernels_of(device);
    for (int32_t i = 0; i < ops::kCount; ++i) {
      if (ops::is_optional(static_cast<ops::Id>(i))) continue;
      const bool any = std::any_of(have.begin(), have.end(),
                                   [&](const auto& k) { return k.first == ops::kInfo[i].name; });
      EXPECT_TRUE(any) << device << " lacks " << ops::kInfo[i].name;
    }
  }
}

TEST(ConformanceRegistry, EveryReferenceKernelHasACase) {
  std::set<std::string> covered;
  for (const Case& c : all_cases()) covered.insert(c.kernels.begin(), c.kernels.end());
  for (const auto& [op, dtype] : kernels_of(kReference)) {
    EXPECT_TRUE(covered.count(op)) << "no conformance case runs op '" << op << "'";
  }
}

}  // namespace
}  // namespace ember::conformance
