// A plugin loaded while other threads compute (Concurrency.LoadingAPluginWhileOpsRun): it
// registers a float32 "add" kernel on the cpu above the CPU backend's priority, so loading it
// rewrites the very kernel slot the running threads read. Its kernel computes what the CPU
// backend's does (any strides, inputs already broadcast), so the threads' results do not change.
#include "ember/plugin_abi.h"
#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_entry.hpp"
#include "ember/plugin_sdk_ops.hpp"

namespace {

namespace sdk = ember::sdk;

int32_t add_f32(const ember_kernel_call* call) {
  const ember_tensor &a = call->inputs[0], &b = call->inputs[1], &y = call->outputs[0];
  int64_t idx[EMBER_MAX_DIMS] = {0};
  const int64_t n = sdk::numel(y);
  for (int64_t k = 0; k < n; ++k) {
    int64_t oa = 0, ob = 0, oy = 0;
    for (int32_t d = 0; d < y.ndim; ++d) {
      oa += idx[d] * a.strides[d], ob += idx[d] * b.strides[d], oy += idx[d] * y.strides[d];
    }
    sdk::data<float>(y)[oy] = sdk::data<float>(a)[oa] + sdk::data<float>(b)[ob];
    for (int32_t d = y.ndim - 1; d >= 0 && ++idx[d] == y.sizes[d]; --d) idx[d] = 0;
  }
  return EMBER_OK;
}

int32_t init(const ember_host_v1*, const ember_registrar_v1* reg, char* error, size_t cap) {
  return sdk::guard(error, cap, [&]() -> int32_t {
    const int32_t cpu = reg->find_device_type(reg->ctx, "cpu");
    if (cpu < 0) return sdk::fail_into(error, cap, EMBER_ERR_INVALID, "no cpu device type");
    return reg->kernel(reg->ctx, "add", cpu, sdk::dtype_bit(EMBER_F32), /*priority=*/1000,
                       &sdk::guarded<ember::ops::add, &add_f32>);
  });
}

const ember_plugin_v1 kDescriptor =
    sdk::plugin_descriptor(0, "fixture-hot", "0.0.1", "test fixture", init);

}  // namespace

EMBER_PLUGIN_DEFINE_ENTRY(kDescriptor)
