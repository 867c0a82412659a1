// Everything the CUDA backend implements: every mandatory op of the op list (ember/ops.def) for
// the dtypes it lists, the optional ops it has, and where the work is done. Attribute layouts
// are documented with each op in core/ops/ and read by name (ember::attrs).
#include "backends/cuda/kernels.h"

#include "backends/cuda/device_guard.h"
#include "backends/cuda/ops/ops.h"
#include "ember/plugin_sdk_ops.hpp"

namespace ember::cuda {
namespace {

/** Kernel `fn` with the caller's current device restored on exit (Note [Device guards]): every
 * kernel switches to its output's device (prepare, set_device). */
template <ember_kernel_fn fn>
int32_t on_callers_device(const ember_kernel_call* call) {
  const DeviceGuard guard;
  return fn(call);
}

}  // namespace

/** Registers kernel `name` of core op `name` for `dtypes` with EMBER_KERNEL_* `flags` behind the
 * SDK's boundary and a device guard; returns a refused registration's status
 * (EMBER_REGISTER_KERNEL_FLAGS with the guard). */
#define EMBER_CUDA_REGISTER_FLAGS(name, dtypes, flags)                           \
  if (const int32_t ember_status_ =                                              \
          sdk::register_kernel_with_flags<ops::name, &on_callers_device<&name>>( \
              reg, cuda, kPriority, dtypes, flags);                              \
      ember_status_ != EMBER_OK) {                                               \
    return ember_status_;                                                        \
  }
/** The same without flags. */
#define EMBER_CUDA_REGISTER_DTYPES(name, dtypes) EMBER_CUDA_REGISTER_FLAGS(name, dtypes, 0)
/** The same for the op's dtypes. */
#define EMBER_CUDA_REGISTER(name) EMBER_CUDA_REGISTER_DTYPES(name, ops::kInfo[ops::name].dtypes)

int32_t register_kernels(const ember_registrar_v1* reg, int32_t cuda) {
  constexpr int32_t kPriority = 100;
  // Every mandatory op, behind the SDK's boundary (Note [Kernels of a backend]) and a device
  // guard (Note [Device guards]). Where the work is done:
  //  - copies and fills (ops/elementwise.cu): strided, any dtype to any dtype;
  //  - binary arithmetic with broadcasting (ops/elementwise.cu), computed in float for
  //    f16/bf16; integer and bool arithmetic as the CPU plugin's (plugin_sdk_binary_ops.hpp);
  //  - comparison and logic, bool results, and unary math (ops/elementwise.cu);
  //  - reductions (ops/reduce.cu): a group of 1, 32 or 256 threads per output, double
  //    accumulation for floating sums/products. sum/prod/cumsum see int64 for integer and bool
  //    inputs (the core converts);
  //  - softmax along one dim (ops/softmax.cu): cuDNN for dense inputs, else (or with
  //    cudnn.enabled off) an own kernel, compute type float (double for f64)
  //    (ops/cudnn_ops.cpp, Note [cuDNN where own kernels exist too]);
  //  - indexing (ops/index.cu): indices range-checked on the device as they are used; a bad
  //    one is recorded there and reported as EMBER_ERR_INDEX at the next synchronization (Note
  //    [Index errors reported at the next synchronization]);
  //  - ordering and counting (ops/sort.cu): one Thrust stable sort of every row, NaN last;
  //    nonzero in two passes (a prefix sum of the flags, then the coordinates);
  //  - convolutions (ops/conv.cpp): cuDNN forward / backward data / backward filter, groups,
  //    stride, padding, dilation; heuristic algorithm cached per shape, no TF32 for float32;
  //    NHWC for channels-last operands (registered below);
  //  - pooling (ops/pool.cu): average pooling through cuDNN for floor-mode and evenly divided
  //    adaptive windows; own kernels otherwise, one thread per output (forward) or per input
  //    (backward); max pooling always own, for the CPU plugin's flat h * W + w indices;
  //  - normalisation (ops/norm.cu): batch_norm through cuDNN (Note [Batch norm through cuDNN])
  //    except the eval-mode backward; own kernels, a block per channel / row, two-pass
  //    statistics in double, for the rest and for layer_norm / group_norm;
  //  - matrix products (ops/matmul.cpp): cuBLAS strided-batched GEMM (libcublas loaded on
  //    first use, Note [Lazy cuBLAS]), TF32 off; f16/bf16 accumulate in float32; integers
  //    through an own tiled kernel that wraps as the CPU's (ops/matmul_int.cu).
#define EMBER_OP(name, ...)                     \
  if constexpr (!ops::is_optional(ops::name)) { \
    EMBER_CUDA_REGISTER(name)                   \
  }
#include "ember/ops.def"
#undef EMBER_OP

  // The optional ops this backend has (without them the core composes the same result).
  // ops/elementwise.cu: ReLU's and GELU's gradients in one pass (Note [Fused ReLU backward],
  // Note [Fused GELU backward]).
  EMBER_CUDA_REGISTER(relu_backward)
  EMBER_CUDA_REGISTER(gelu_backward)
  // ops/pool.cu, a gather: one thread per input element (Note [Max pooling backward as a
  // gather]).
  EMBER_CUDA_REGISTER(max_pool2d_backward)
  // ops/random.cu: Philox blocks, one thread each, the SDK's mapping, so the values equal the
  // core's host path (Note [Random numbers on every device]).
  EMBER_CUDA_REGISTER(random)
  // The optimizers' fused steps (ops/optim.cu), float32 and float64: one launch per parameter
  // instead of about a dozen ops (Note [Optimizer steps through kernels]).
  constexpr uint32_t kF32F64 = sdk::dtype_bit(EMBER_F32) | sdk::dtype_bit(EMBER_F64);
  EMBER_CUDA_REGISTER_DTYPES(sgd_step, kF32F64)
  EMBER_CUDA_REGISTER_DTYPES(adam_step, kF32F64)
  EMBER_CUDA_REGISTER_DTYPES(rmsprop_step, kF32F64)
  // A whole LSTM or GRU layer through cuDNN's RNN (ops/rnn.cpp, Note [Whole recurrent layers
  // in a backend] in core/ops/rnn.cpp), as PyTorch runs nn.LSTM and nn.GRU; bfloat16 takes the
  // core's composite.
  constexpr uint32_t kRnn = kF32F64 | sdk::dtype_bit(EMBER_F16);
  EMBER_CUDA_REGISTER_DTYPES(rnn_layer, kRnn)
  EMBER_CUDA_REGISTER_DTYPES(rnn_layer_backward, kRnn)
  // The convolutions take channels-last operands in float32 and the half types, through cuDNN's
  // NHWC descriptors (ops/conv.cpp, Note [Channels-last convolutions through cuDNN]); these
  // registrations replace the ones above for those dtypes.
  constexpr uint32_t kNhwc =
      sdk::dtype_bit(EMBER_F32) | sdk::dtype_bit(EMBER_F16) | sdk::dtype_bit(EMBER_BF16);
  constexpr uint32_t kCl = EMBER_KERNEL_CHANNELS_LAST;
  EMBER_CUDA_REGISTER_FLAGS(conv2d, kNhwc, kCl)
  EMBER_CUDA_REGISTER_FLAGS(conv2d_backward_input, kNhwc, kCl)
  EMBER_CUDA_REGISTER_FLAGS(conv2d_backward_weight, kNhwc, kCl)
  // Optional: the convolution with its ReLU (and bias) as one cuDNN call (ops/conv.cpp, Note
  // [Convolution and ReLU through cuDNN]), every floating dtype, channels-last as conv2d.
  EMBER_CUDA_REGISTER(conv2d_relu)
  EMBER_CUDA_REGISTER_FLAGS(conv2d_relu, kNhwc, kCl)
  return EMBER_OK;
}

#undef EMBER_CUDA_REGISTER
#undef EMBER_CUDA_REGISTER_DTYPES
#undef EMBER_CUDA_REGISTER_FLAGS

}  // namespace ember::cuda
