// Extension plugins for the tests of ops defined by plugins, one per FIXTURE_* define:
//   FIXTURE_MULTI          fixture_multi::exp_and_square(x) -> (exp(x), x * x), with a backward
//                          that takes a saved input and a saved output (float64)
//   FIXTURE_CORE_NAME      defines fixture_core::identity, then an op named "relu": init fails
//   FIXTURE_BAD_BACKWARD   names a backward op it never defines: init fails
//   FIXTURE_DUP            redefines myext::fused_bias_gelu (kernel writes 42) next to its own
//                          fixture_dup::identity: loads, the redefinition is rejected
#include <cmath>

#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_entry.hpp"

namespace {

namespace sdk = ember::sdk;

int32_t like_input0(const ember_infer_call* call) {
  for (int32_t j = 0; j < call->num_outputs; ++j) sdk::output_like_input(call, j, 0);
  return EMBER_OK;
}

int32_t like_input1(const ember_infer_call* call) {
  sdk::output_like_input(call, 0, 2);  // (g1, g2, x, e) -> grad_x like x
  return EMBER_OK;
}

int32_t identity(const ember_kernel_call* call) {
  const int64_t n = sdk::numel(call->outputs[0]);
  const size_t bytes = static_cast<size_t>(n) * sdk::itemsize(call->outputs[0].dtype);
  std::memcpy(call->outputs[0].data, call->inputs[0].data, bytes);
  return EMBER_OK;
}

int32_t fill_42(const ember_kernel_call* call) {
  double* out = sdk::data<double>(call->outputs[0]);
  for (int64_t i = 0; i < sdk::numel(call->outputs[0]); ++i) out[i] = 42;
  return EMBER_OK;
}

int32_t exp_and_square(const ember_kernel_call* call) {
  const double* x = sdk::data<double>(call->inputs[0]);
  double* e = sdk::data<double>(call->outputs[0]);
  double* s = sdk::data<double>(call->outputs[1]);
  for (int64_t i = 0; i < sdk::numel(call->inputs[0]); ++i) {
    e[i] = std::exp(x[i]);
    s[i] = x[i] * x[i];
  }
  return EMBER_OK;
}

// (g1, g2, x, e = exp(x)) -> g1 * e + g2 * 2x
int32_t exp_and_square_backward(const ember_kernel_call* call) {
  const double* g1 = sdk::data<double>(call->inputs[0]);
  const double* g2 = sdk::data<double>(call->inputs[1]);
  const double* x = sdk::data<double>(call->inputs[2]);
  const double* e = sdk::data<double>(call->inputs[3]);
  double* gx = sdk::data<double>(call->outputs[0]);
  for (int64_t i = 0; i < sdk::numel(call->inputs[2]); ++i) gx[i] = g1[i] * e[i] + g2[i] * 2 * x[i];
  return EMBER_OK;
}

int32_t init(const ember_host_v1*, const ember_registrar_v1* reg, char* error, size_t cap) {
  const int32_t cpu = reg->find_device_type(reg->ctx, "cpu");
  const uint32_t f64 = sdk::dtype_bit(EMBER_F64);
  int32_t s = EMBER_OK;
#if defined(FIXTURE_MULTI)
  ember_op_schema_v1 fw = sdk::op_schema("fixture_multi::exp_and_square", 1, 2, like_input0);
  fw.flags = EMBER_OP_CONTIGUOUS_INPUTS;
  fw.backward_op = "fixture_multi::exp_and_square_backward";
  fw.differentiable_inputs = sdk::mask({0});
  fw.saved_inputs = sdk::mask({0});
  fw.saved_outputs = sdk::mask({0});
  ember_op_schema_v1 bw =
      sdk::op_schema("fixture_multi::exp_and_square_backward", 4, 1, like_input1);
  bw.flags = EMBER_OP_CONTIGUOUS_INPUTS;
  if ((s = sdk::register_op(reg, fw, error, cap)) != EMBER_OK) return s;
  if ((s = sdk::register_op(reg, bw, error, cap)) != EMBER_OK) return s;
  reg->kernel(reg->ctx, fw.name, cpu, f64, 0, exp_and_square);
  reg->kernel(reg->ctx, bw.name, cpu, f64, 0, exp_and_square_backward);
#elif defined(FIXTURE_CORE_NAME)
  ember_op_schema_v1 ok = sdk::op_schema("fixture_core::identity", 1, 1, like_input0);
  if ((s = sdk::register_op(reg, ok, error, cap)) != EMBER_OK) return s;
  reg->kernel(reg->ctx, ok.name, cpu, f64, 0, identity);
  ember_op_schema_v1 bad = sdk::op_schema("relu", 1, 1, like_input0);
  if ((s = sdk::register_op(reg, bad, error, cap)) != EMBER_OK) return s;
#elif defined(FIXTURE_BAD_BACKWARD)
  ember_op_schema_v1 fw = sdk::op_schema("fixture_bw::op", 1, 1, like_input0);
  fw.backward_op = "fixture_bw::missing_backward";
  fw.differentiable_inputs = 1;
  if ((s = sdk::register_op(reg, fw, error, cap)) != EMBER_OK) return s;
  reg->kernel(reg->ctx, fw.name, cpu, f64, 0, identity);
#elif defined(FIXTURE_DUP)
  ember_op_schema_v1 dup = sdk::op_schema("myext::fused_bias_gelu", 2, 1, like_input0);
  if ((s = sdk::register_op(reg, dup, error, cap)) != EMBER_OK) return s;
  reg->kernel(reg->ctx, dup.name, cpu, f64, /*priority=*/100, fill_42);
  ember_op_schema_v1 own = sdk::op_schema("fixture_dup::identity", 1, 1, like_input0);
  own.flags = EMBER_OP_CONTIGUOUS_INPUTS;
  if ((s = sdk::register_op(reg, own, error, cap)) != EMBER_OK) return s;
  reg->kernel(reg->ctx, own.name, cpu, f64, 0, identity);
#endif
  (void)fill_42;
  (void)identity;
  (void)exp_and_square;
  (void)exp_and_square_backward;
  (void)like_input1;
  return s;
}

const ember_plugin_v1 kDescriptor =
    sdk::plugin_descriptor(1, "ext-" FIXTURE_NAME, "0.0.1", "test fixture", init);

}  // namespace

EMBER_PLUGIN_DEFINE_ENTRY(kDescriptor)
