// Every op on every loaded backend, compared with the reference backend: values (per-dtype
// tolerances) and gradients (backward on both devices, .grad() compared). The test list is
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

#include "core/dispatch/call.h"
#include "tests/conformance/harness.h"

namespace ember::conformance {
namespace {

constexpr const char* kReference = "reference";

/** Device types to check: loaded, with devices, not the reference itself. */
std::vector<std::string> devices_under_test() {
  std::vector<std::string> out;
  for (const DeviceTypeEntry& e : device_types()) {
    if (e.name != kReference && e.count > 0) out.push_back(e.name);
  }
  return out;
}

/** True if `op` has a kernel for (device type, dtype). */
bool has(const std::string& op, const std::string& device, DType dtype) {
  return has_kernel(op_handle(op), Device(device), dtype);
}

const std::vector<DType> kAllDTypes = {DType::Float32,  DType::Float64, DType::Float16,
                                       DType::BFloat16, DType::Int64,   DType::Int32,
                                       DType::Int8,     DType::UInt8,   DType::Bool};

/** Absolute and relative tolerance for results of `dtype`. */
struct Tolerance {
  double atol, rtol;
};
Tolerance tolerance(DType dtype, double scale) {
  switch (dtype) {
    case DType::Float64:
      return {1e-10 * scale, 1e-9 * scale};
    case DType::Float32:
      return {2e-5 * scale, 2e-5 * scale};
    case DType::Float16:
      return {2e-3 * scale, 2e-3 * scale};
    case DType::BFloat16:
      return {1.6e-2 * scale, 1.6e-2 * scale};
    default:
      return {0, 0};  // integers and bool: exact
  }
}

std::vector<double> host_values(const Tensor& t) {
  const Tensor h = t.to(Device::cpu()).to(DType::Float64).contiguous();
  const double* p = h.numel() > 0 ? h.data_ptr<double>() : nullptr;
  return std::vector<double>(p, p + h.numel());
}

/** Expects `got` (device under test) to match `want` (reference): shape, dtype and values. */
void expect_match(const Tensor& got, const Tensor& want, double scale, const std::string& what) {
  ASSERT_EQ(got.defined(), want.defined()) << what << ": defined on one device only";
  if (!got.defined()) return;
  ASSERT_EQ(fmt::format("{}", got.sizes()), fmt::format("{}", want.sizes())) << what << ": shape";
  ASSERT_EQ(got.dtype(), want.dtype()) << what << ": dtype";
  const Tolerance tol = tolerance(got.dtype(), scale);
  const std::vector<double> g = host_values(got), w = host_values(want);
  int reported = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool both_nan = std::isnan(g[i]) && std::isnan(w[i]);
    const bool ok =
        both_nan || g[i] == w[i] || std::abs(g[i] - w[i]) <= tol.atol + tol.rtol * std::abs(w[i]);
    if (!ok && reported++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", reference " << w[i]
                    << " (atol " << tol.atol << ", rtol " << tol.rtol << ")";
    }
  }
}

/** Inputs of one variant on `device`, detached leaves requiring grad where floating and asked. */
std::vector<Tensor> make_inputs(const Variant& v, DType dtype, const std::string& device,
                                uint64_t seed, bool grad) {
  Gen gen(dtype, Device(device), seed);
  std::vector<Tensor> in = v.make(gen);
  if (grad) {
    for (Tensor& t : in) {
      if (is_floating(t.dtype())) t = t.detach().requires_grad_(true);
    }
  }
  return in;
}

/** Runs the case on `device`: outputs, and (if grad) the gradients of every input of a random
 *  weighted sum of the floating outputs (weights drawn from the same seed on every device). */
struct Outcome {
  std::vector<Tensor> outputs, grads;
};
Outcome run_case(const Case& c, const Variant& v, DType dtype, const std::string& device,
                 uint64_t seed, bool grad) {
  Outcome r;
  std::vector<Tensor> in = make_inputs(v, dtype, device, seed, grad);
  r.outputs = c.fn(in);
  if (!grad) return r;
  Gen weights(DType::Float64, Device(device), seed + 7777);
  Tensor loss;
  for (const Tensor& out : r.outputs) {
    if (!out.requires_grad()) continue;
    const Tensor w = weights.as(out.dtype(), out.sizes());
    const Tensor term = sum(mul(out, w)).to(DType::Float64);
    loss = loss.defined() ? add(loss, term) : term;
  }
  if (!loss.defined()) return r;
  loss.backward();
  for (const Tensor& t : in) r.grads.push_back(t.requires_grad() ? t.grad() : Tensor());
  return r;
}

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
  // A backend must implement every core op: a kernel missing on the device is a failure.
  for (const std::string& k : c.kernels) {
    const bool any = std::any_of(kAllDTypes.begin(), kAllDTypes.end(),
                                 [&](DType d) { return has(k, device, d); });
    EXPECT_TRUE(any) << "backend '" << device << "' has no kernel for op '" << k << "'";
  }
  int checked = 0;
  for (DType dtype : kAllDTypes) {
    if (!c.dtypes.empty() && std::find(c.dtypes.begin(), c.dtypes.end(), dtype) == c.dtypes.end()) {
      continue;
    }
    if (!has(c.kernels[0], device, dtype)) continue;  // the dtypes this device supports
    if (!has(c.kernels[0], kReference, dtype)) {
      ADD_FAILURE() << "the reference backend has no " << dtype_name(dtype) << " kernel for op '"
                    << c.kernels[0] << "' but '" << device << "' has one";
      continue;
    }
    const bool grad = c.grad && (dtype == DType::Float32 || dtype == DType::Float64);
    uint64_t seed = 1;
    for (const Variant& v : c.variants) {
      const std::string what =
          fmt::format("{} [{}, {}, {}]", c.name, device, dtype_name(dtype), v.label);
      ++seed;
      Outcome got, want;
      try {
        got = run_case(c, v, dtype, device, seed, grad);
        want = run_case(c, v, dtype, kReference, seed, grad);
      } catch (const std::exception& e) {
        ADD_FAILURE() << what << ": " << e.what();
        continue;
      }
      ASSERT_EQ(got.outputs.size(), want.outputs.size()) << what;
      for (size_t i = 0; i < got.outputs.size(); ++i) {
        expect_match(got.outputs[i], want.outputs[i], c.tol_scale,
                     fmt::format("{} output {}", what, i));
      }
      ASSERT_EQ(got.grads.size(), want.grads.size()) << what << ": gradients";
      for (size_t i = 0; i < got.grads.size(); ++i) {
        // Gradients sum over several outputs and go through more ops: a wider tolerance.
        expect_match(got.grads[i], want.grads[i], 10 * c.tol_scale,
                     fmt::format("{} grad of input {}", what, i));
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 0) << c.name << ": no dtype of '" << c.kernels[0] << "' ran on " << device;
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
  for (const OpInfo& op : ops()) {
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
  // Its priority is below the CPU's: the default device never becomes the reference.
  EXPECT_NE(default_device().type_name(), kReference);
}

TEST(ConformanceRegistry, ReferenceCoversEveryCpuKernel) {
  const auto cpu = kernels_of("cpu");
  const auto ref = kernels_of(kReference);
  ASSERT_FALSE(cpu.empty());
  for (const auto& [op, dtype] : cpu) {
    EXPECT_TRUE(ref.count({op, dtype})) << "reference lacks " << op << " for " << dtype_name(dtype);
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
