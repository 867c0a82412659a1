// The conformance runner: one case on one device against the reference backend, and the
// `ember conformance` command around it.
#include "tools/ember/conformance.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ember::conformance {
namespace {

const std::vector<DType> kAllDTypes = {DType::Float32,  DType::Float64, DType::Float16,
                                       DType::BFloat16, DType::Int64,   DType::Int32,
                                       DType::Int8,     DType::UInt8,   DType::Bool};

/** True if `op` has a kernel for (device type, dtype). */
bool has(const std::string& op, const std::string& device, DType dtype) {
  return has_kernel(op_handle(op), Device(device), dtype);
}

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

/** Compares `got` (device under test) with `want` (reference): shape, dtype and values; adds a
 *  line to `failures` per problem (at most 5 elements). */
void compare(const Tensor& got, const Tensor& want, double scale, const std::string& what,
             std::vector<std::string>& failures) {
  if (got.defined() != want.defined()) {
    failures.push_back(what + ": defined on one device only");
    return;
  }
  if (!got.defined()) return;
  if (fmt::format("{}", got.sizes()) != fmt::format("{}", want.sizes())) {
    failures.push_back(fmt::format("{}: shape {}, reference {}", what, got.sizes(), want.sizes()));
    return;
  }
  if (got.dtype() != want.dtype()) {
    failures.push_back(fmt::format("{}: dtype {}, reference {}", what, got.dtype(), want.dtype()));
    return;
  }
  const Tolerance tol = tolerance(got.dtype(), scale);
  const std::vector<double> g = host_values(got), w = host_values(want);
  int reported = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool both_nan = std::isnan(g[i]) && std::isnan(w[i]);
    const bool ok =
        both_nan || g[i] == w[i] || std::abs(g[i] - w[i]) <= tol.atol + tol.rtol * std::abs(w[i]);
    if (!ok && reported++ < 5) {
      failures.push_back(fmt::format("{}: element {} is {}, reference {} (atol {}, rtol {})", what,
                                     i, g[i], w[i], tol.atol, tol.rtol));
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
Outcome run_on(const Case& c, const Variant& v, DType dtype, const std::string& device,
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

}  // namespace

std::vector<std::string> devices_under_test() {
  std::vector<std::string> out;
  for (const DeviceTypeEntry& e : device_types()) {
    if (e.name != kReference && e.count > 0) out.push_back(e.name);
  }
  return out;
}

// Note [What a device claims]
// A device claims a case when it has a kernel for every op the case names, and claims a dtype of
// it when the case and its gradient then run there without meeting an op that has no kernel
// (a case's list names the ops it is about; its composite and the weighted-sum gradient may run
// a few more, such as mul and sum). `ember conformance` compares what is claimed and lists the
// rest, so an outside backend with a few ops is checked on exactly those; Ember's own backends
// must claim everything (tests/conformance counts each unclaimed case or dtype as a failure). An
// optional op a device has no kernel for is not missing unless it is the case's first, whose
// kernels decide the dtypes: the core composes it there, and the case then compares that
// composite with the reference.
CaseResult run_case(const Case& c, const std::string& device, bool grad) {
  CaseResult r;
  for (const std::string& k : c.kernels) {
    const bool any = std::any_of(kAllDTypes.begin(), kAllDTypes.end(),
                                 [&](DType d) { return has(k, device, d); });
    const OpSchema* schema = find_op_schema(k);
    if (!any && !(k != c.kernels[0] && schema && schema->optional)) r.missing.push_back(k);
  }
  if (!r.claimed()) return r;
  for (DType dtype : kAllDTypes) {
    if (!c.dtypes.empty() && std::find(c.dtypes.begin(), c.dtypes.end(), dtype) == c.dtypes.end()) {
      continue;
    }
    if (!has(c.kernels[0], device, dtype)) continue;  // the dtypes this device supports
    // An optional op's kernel may be absent from the reference backend, which then runs the
    // core's composite for it: the very thing the device's kernel is compared with.
    const OpSchema* schema = find_op_schema(c.kernels[0]);
    if (!has(c.kernels[0], kReference, dtype) && !(schema && schema->optional)) {
      r.failures.push_back(
          fmt::format("the reference backend has no {} kernel for op '{}' but '{}' "
                      "has one",
                      dtype_name(dtype), c.kernels[0], device));
      continue;
    }
    const bool with_grad = grad && c.grad && (dtype == DType::Float32 || dtype == DType::Float64);
    uint64_t seed = 1;
    for (const Variant& v : c.variants) {
      const std::string what =
          fmt::format("{} [{}, {}, {}]", c.name, device, dtype_name(dtype), v.label);
      ++seed;
      Outcome got, want;
      try {
        got = run_on(c, v, dtype, device, seed, with_grad);
      } catch (const NotImplementedError& e) {
        // Note [What a device claims]: an op of the case (or of its gradient) has no kernel here.
        r.unclaimed_dtypes.push_back(fmt::format("{}: {}", dtype_name(dtype), e.what()));
        break;
      } catch (const std::exception& e) {
        r.failures.push_back(fmt::format("{}: {}", what, e.what()));
        continue;
      }
      try {
        want = run_on(c, v, dtype, kReference, seed, with_grad);
      } catch (const std::exception& e) {
        r.failures.push_back(fmt::format("{}: {}", what, e.what()));
        continue;
      }
      if (got.outputs.size() != want.outputs.size() || got.grads.size() != want.grads.size()) {
        r.failures.push_back(fmt::format("{}: {} outputs and {} gradients, reference {} and {}",
                                         what, got.outputs.size(), got.grads.size(),
                                         want.outputs.size(), want.grads.size()));
        continue;
      }
      for (size_t i = 0; i < got.outputs.size(); ++i) {
        compare(got.outputs[i], want.outputs[i], c.tol_scale, fmt::format("{} output {}", what, i),
                r.failures);
      }
      for (size_t i = 0; i < got.grads.size(); ++i) {
        // Gradients sum over several outputs and go through more ops: a wider tolerance.
        compare(got.grads[i], want.grads[i], 10 * c.tol_scale,
                fmt::format("{} grad of input {}", what, i), r.failures);
      }
      ++r.checked;
    }
  }
  return r;
}

int run_cli(const Options& options) {
  init();
  const int16_t ref = find_device_type(kReference);
  EMBER_CHECK(ref >= 0 && device_type(ref).count > 0,
              "[conformance] the reference backend is not loaded: it is what every backend is "
              "compared with (install the ember-backend-reference package, or put "
              "libember-reference.so in the plugin directory; see `ember plugins`)");
  const std::vector<std::string> devices =
      options.devices.empty() ? devices_under_test() : options.devices;
  EMBER_CHECK(!devices.empty(),
              "[conformance] no device type to check: only the reference backend has devices "
              "(see `ember devices`)");
  int status = 0;
  for (const std::string& device : devices) {
    const int16_t id = find_device_type(device);
    EMBER_CHECK(id >= 0, "[conformance] no device type '{}' is loaded (see `ember devices`)",
                device);
    EMBER_CHECK(device_type(id).count > 0, "[conformance] device type '{}' has 0 devices: {}",
                device, device_type(id).unusable_reason);
    int claimed = 0, passed = 0, failed = 0, unclaimed = 0;
    fmt::print("conformance of '{}' against '{}'{}\n", device, kReference,
               options.grad ? " (values and gradients)" : " (values)");
    for (const Case& c : all_cases()) {
      if (c.name.find(options.filter) == std::string::npos) continue;
      const CaseResult r = run_case(c, device, options.grad);
      if (!r.claimed()) {
        ++unclaimed;
        if (options.verbose || options.all) {
          fmt::print("  {:<6} {:<28} {}\n", "-", c.name,
                     r.missing.empty()
                         ? "not claimed: " + r.unclaimed_dtypes.front()
                         : fmt::format("no kernel for {}", fmt::join(r.missing, ", ")));
        }
        continue;
      }
      ++claimed;
      if (options.verbose || options.all) {
        for (const std::string& u : r.unclaimed_dtypes) {
          fmt::print("  {:<6} {:<28} not claimed: {}\n", "-", c.name, u);
        }
      }
      if (options.all && !r.unclaimed_dtypes.empty()) ++unclaimed;
      if (r.passed()) {
        ++passed;
        if (options.verbose) fmt::print("  {:<6} {:<28} {} checks\n", "ok", c.name, r.checked);
        continue;
      }
      ++failed;
      fmt::print("  {:<6} {:<28} {}\n", "FAIL", c.name,
                 r.failures.empty() ? std::string("no dtype of the case ran on the device")
                                    : r.failures.front());
      for (size_t i = 1; i < r.failures.size() && i < 10; ++i) {
        fmt::print("  {:<6} {:<28} {}\n", "", "", r.failures[i]);
      }
    }
    fmt::print("{}: {} case(s) claimed, {} passed, {} failed; {} not claimed{}\n", device, claimed,
               passed, failed, unclaimed,
               options.all && unclaimed ? " (--all: each is a failure)" : "");
    if (failed > 0 || claimed == 0 || (options.all && unclaimed > 0)) status = 1;
  }
  return status;
}

}  // namespace ember::conformance
