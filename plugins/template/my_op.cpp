// A minimal extension plugin: one new op with a CPU kernel. Copy this folder to start your own
// (see README.md). It includes only the plugin SDK and never links the core.
//
//   my_ext::scaled_add(x, y; floats = {alpha}) = x + alpha * y   (same shapes, float32/float64)
#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_entry.hpp"
#include "ember/plugin_sdk_ops.hpp"

namespace {

namespace sdk = ember::sdk;

constexpr const char* kOp = "my_ext::scaled_add";

// Shape inference: runs before every call; rejects bad inputs with a message (the core adds
// "[my_ext::scaled_add] " in front) and describes each output.
int32_t infer(const ember_infer_call* call) {
  const ember_tensor &x = call->inputs[0], &y = call->inputs[1];
  if (!sdk::same_sizes(x, y) || x.dtype != y.dtype) {
    return sdk::infer_fail(call, "expected x and y of one shape and dtype, got %s %s and %s %s",
                           sdk::dtype_name(x.dtype), sdk::sizes_str(x).c_str(),
                           sdk::dtype_name(y.dtype), sdk::sizes_str(y).c_str());
  }
  sdk::output_like_input(call, 0, 0);  // the output has x's shape and dtype
  return EMBER_OK;
}

// The kernel: inputs are contiguous (EMBER_OP_CONTIGUOUS_INPUTS), the output is allocated.
template <typename T>
void scaled_add(const ember_kernel_call* call) {
  const T* x = sdk::data<T>(call->inputs[0]);
  const T* y = sdk::data<T>(call->inputs[1]);
  T* out = sdk::data<T>(call->outputs[0]);
  const T alpha = static_cast<T>(call->floats[0]);
  const int64_t n = sdk::numel(call->outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] + alpha * y[i];
}

int32_t scaled_add_cpu(const ember_kernel_call* call) {
  switch (call->inputs[0].dtype) {
    case EMBER_F32:
      scaled_add<float>(call);
      return EMBER_OK;
    case EMBER_F64:
      scaled_add<double>(call);
      return EMBER_OK;
    default:
      return sdk::fail(call, EMBER_ERR_UNSUPPORTED, "no kernel for %s",
                       sdk::dtype_name(call->inputs[0].dtype));
  }
}

int32_t init_impl(const ember_registrar_v1* reg, char* error, size_t cap) {
  // 2 inputs, 1 output, exactly 1 floating attribute (alpha).
  ember_op_schema_v1 schema =
      sdk::op_schema(kOp, 2, 1, &sdk::guarded_infer<&infer>, "(x, y; alpha) -> x + alpha * y");
  schema.num_floats = 1;
  schema.flags = EMBER_OP_CONTIGUOUS_INPUTS;
  // To make it differentiable, name a backward op here (see examples/custom_op).
  if (int32_t s = sdk::register_op(reg, schema, error, cap); s != EMBER_OK) return s;

  const int32_t cpu = reg->find_device_type(reg->ctx, "cpu");
  if (cpu >= 0) {
    reg->kernel(reg->ctx, kOp, cpu, sdk::dtype_bit(EMBER_F32) | sdk::dtype_bit(EMBER_F64),
                /*priority=*/0, &sdk::guarded<&scaled_add_cpu>);
  }
  return EMBER_OK;
}

// init, the kernel and the infer callback run behind the SDK's boundary (Note [One boundary
// for every plugin entry point]): an exception becomes a status with its message.
int32_t init(const ember_host_v1*, const ember_registrar_v1* reg, char* error, size_t cap) {
  return sdk::guard(error, cap, [&] { return init_impl(reg, error, cap); });
}

// op schemas need ABI 1.1
const ember_plugin_v1 kDescriptor =
    sdk::plugin_descriptor(1, "my_ext", "0.1.0", "template extension, " __VERSION__, init);

}  // namespace

EMBER_PLUGIN_DEFINE_ENTRY(kDescriptor)
