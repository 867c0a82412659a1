// An extension plugin defining a new op, myext::fused_bias_gelu(x, bias) = gelu(x + bias) with
// bias broadcast over the last dim of x, with CPU kernels (and CUDA kernels when built with
// CUDA) and a backward op. It includes only the plugin SDK and never links the core.
#include <cstdio>

#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_ops.hpp"
#include "kernels.h"

namespace fused_bias_gelu {
namespace {

namespace sdk = ember::sdk;

constexpr const char* kForward = "myext::fused_bias_gelu";
constexpr const char* kBackward = "myext::fused_bias_gelu_backward";

// Checks (x, bias): one floating dtype, bias of shape [n] where n is the last dim of x.
int32_t check_x_bias(const ember_infer_call* call, const ember_tensor& x, const ember_tensor& b) {
  if (x.dtype != b.dtype) {
    return sdk::infer_fail(call, "expected x and bias of one dtype, got %s and %s",
                           sdk::dtype_name(x.dtype), sdk::dtype_name(b.dtype));
  }
  if (x.dtype != EMBER_F32 && x.dtype != EMBER_F64 && x.dtype != EMBER_F16 &&
      x.dtype != EMBER_BF16) {
    return sdk::infer_fail(call, "expected a floating dtype, got %s", sdk::dtype_name(x.dtype));
  }
  if (x.ndim < 1) return sdk::infer_fail(call, "expected x with at least 1 dim, got a scalar");
  if (b.ndim != 1 || b.sizes[0] != x.sizes[x.ndim - 1]) {
    return sdk::infer_fail(call, "expected bias of shape [%lld] (the last dim of x %s), got %s",
                           static_cast<long long>(x.sizes[x.ndim - 1]), sdk::sizes_str(x).c_str(),
                           sdk::sizes_str(b).c_str());
  }
  return EMBER_OK;
}

// (x, bias) -> out, shaped like x.
int32_t infer_forward(const ember_infer_call* call) {
  if (int32_t s = check_x_bias(call, call->inputs[0], call->inputs[1]); s != EMBER_OK) return s;
  sdk::output_like_input(call, 0, 0);
  return EMBER_OK;
}

// (grad, x, bias) -> (grad_x like x, grad_bias like bias).
int32_t infer_backward(const ember_infer_call* call) {
  const ember_tensor &g = call->inputs[0], &x = call->inputs[1], &b = call->inputs[2];
  if (int32_t s = check_x_bias(call, x, b); s != EMBER_OK) return s;
  if (!sdk::same_sizes(g, x) || g.dtype != x.dtype) {
    return sdk::infer_fail(call, "expected grad like x (%s %s), got %s %s",
                           sdk::dtype_name(x.dtype), sdk::sizes_str(x).c_str(),
                           sdk::dtype_name(g.dtype), sdk::sizes_str(g).c_str());
  }
  sdk::output_like_input(call, 0, 1);
  sdk::output_like_input(call, 1, 2);
  return EMBER_OK;
}

int32_t init_impl(const ember_host_v1* host, const ember_registrar_v1* reg, char* error,
                  size_t cap) {
  ember_op_schema_v1 fw = sdk::op_schema(kForward, 2, 1, &sdk::guarded_infer<&infer_forward>,
                                         "(x, bias) -> gelu(x + bias), bias [n] over x [..., n]");
  fw.flags = EMBER_OP_CONTIGUOUS_INPUTS;
  fw.backward_op = kBackward;
  fw.differentiable_inputs = sdk::mask({0, 1});
  fw.saved_inputs = sdk::mask({0, 1});
  ember_op_schema_v1 bw = sdk::op_schema(kBackward, 3, 2, &sdk::guarded_infer<&infer_backward>,
                                         "(grad, x, bias) -> (grad_x, grad_bias)");
  bw.flags = EMBER_OP_CONTIGUOUS_INPUTS;
  for (const ember_op_schema_v1* s : {&fw, &bw}) {
    if (int32_t status = sdk::register_op(reg, *s, error, cap); status != EMBER_OK) return status;
  }

  const uint32_t dtypes = sdk::dtype_bit(EMBER_F32) | sdk::dtype_bit(EMBER_F64);
  const int32_t cpu = reg->find_device_type(reg->ctx, "cpu");
  if (cpu >= 0) {
    reg->kernel(reg->ctx, kForward, cpu, dtypes, 0, &sdk::guarded<&forward_cpu>);
    reg->kernel(reg->ctx, kBackward, cpu, dtypes, 0, &sdk::guarded<&backward_cpu>);
  }
#ifdef FUSED_BIAS_GELU_WITH_CUDA
  // Note [Load extensions after the backends]
  // Kernels are registered for device types that exist when init runs. Loaded with
  // ember::load_plugin after discovery, the CUDA backend (if any) is already there.
  const int32_t cuda = reg->find_device_type(reg->ctx, "cuda");
  if (cuda >= 0) {
    reg->kernel(reg->ctx, kForward, cuda, dtypes, 0, &sdk::guarded<&forward_cuda>);
    reg->kernel(reg->ctx, kBackward, cuda, dtypes, 0, &sdk::guarded<&backward_cuda>);
  } else if (host && host->log) {
    host->log(1, "[fused_bias_gelu] no cuda device type registered yet: CUDA kernels skipped");
  }
#else
  (void)host;
#endif
  return EMBER_OK;
}

// Every entry point runs behind the SDK's boundary (Note [One boundary for every plugin entry
// point] in ember/plugin_sdk_ops.hpp): init here, each kernel and infer callback where it is
// registered.
int32_t init(const ember_host_v1* host, const ember_registrar_v1* reg, char* error, size_t cap) {
  return sdk::guard(error, cap, [&] { return init_impl(host, reg, error, cap); });
}

const ember_plugin_v1 kDescriptor = {
    sizeof(ember_plugin_v1),
    EMBER_ABI_MAJOR,
    1,  // needs ABI 1.1 (op schemas): an older core rejects it up front
    "fused_bias_gelu",
    "0.1.0",
#ifdef FUSED_BIAS_GELU_WITH_CUDA
    "example extension: CPU (OpenMP) and CUDA kernels, " __VERSION__,
#else
    "example extension: CPU (OpenMP) kernels, " __VERSION__,
#endif
    init,
    nullptr,
};

}  // namespace
}  // namespace fused_bias_gelu

extern "C" EMBER_PLUGIN_EXPORT const ember_plugin_v1* ember_plugin_entry_v1(void) {
  return &fused_bias_gelu::kDescriptor;
}
