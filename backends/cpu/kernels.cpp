// Everything the CPU backend implements: every mandatory core op of ember/ops.def, for the
// dtypes the list gives it, plus the optional ops it has; each kernel behind the SDK's boundary
// (Note [One boundary for every plugin entry point]). Where each family's work is done:
//  - copies, fills, binary arithmetic with broadcasting, comparison and logic, unary math
//    (elementwise.cpp): own vectorized strided loops (loops.h), OpenMP over large ranges;
//  - reductions (reduce.cpp): own pairwise/vectorized loops, OpenMP over outputs or the
//    reduction; sum/prod/cumsum see int64 for integer and bool inputs (the core converts);
//  - matmul (matmul.cpp): f32 (bf16/f16 where the CPU has them) through dnnl::matmul, the rest
//    and whatever oneDNN declines through an own blocked loop;
//  - softmax, log_softmax (softmax.cpp): f32 along the innermost dim through oneDNN's
//    softmax_forward / logsoftmax_forward, everything else through an own loop;
//  - indexing (index.cpp): own loops, indices checked in a first pass; sort (std::stable_sort per
//    row) and topk (std::partial_sort per row) in sort.cpp;
//  - convolutions (conv.cpp): f32 through oneDNN convolution_forward / _backward_data /
//    _backward_weights; f64 and the half types through own direct loops;
//  - pooling (pool.cpp): own loops over the N * C planes, OpenMP across planes; max_pool2d
//    returns values and flat h * W + w indices;
//  - normalisation (norm.cpp): own two-pass loops, OpenMP across channels / rows;
//  - attention (attention.cpp) and the LSTM recurrence (rnn.cpp): oneDNN's sgemm for the
//    products, own vectorized loops for the rest (dense_math.h);
//  - the factorizations of torch.linalg (linalg.cpp): LAPACK (OpenBLAS's, on GNU OpenMP).
// Attribute layouts are documented with each op in core/ops/.
#include "backends/cpu/kernels.h"

#include "backends/cpu/ops/ops.h"
#include "ember/plugin_sdk_ops.hpp"

namespace ember::cpu {

int32_t register_kernels(const ember_registrar_v1* reg, int32_t cpu) {
  constexpr int32_t kPriority = 100;
  // Every mandatory op (a missing kernel is a link error).
#define EMBER_OP(name, ...) EMBER_REGISTER_MANDATORY_KERNEL(reg, cpu, kPriority, name)
#include "ember/ops.def"
#undef EMBER_OP
  // The convolutions also take channels-last operands (conv.cpp, Note [Channels-last kernels] in
  // plugin_abi.h): these registrations replace the ones above.
  constexpr uint32_t kCl = EMBER_KERNEL_CHANNELS_LAST;
  EMBER_REGISTER_KERNEL_FLAGS(reg, cpu, kPriority, conv2d, sdk::kFloatingMask, kCl)
  EMBER_REGISTER_KERNEL_FLAGS(reg, cpu, kPriority, conv2d_backward_input, sdk::kFloatingMask, kCl)
  EMBER_REGISTER_KERNEL_FLAGS(reg, cpu, kPriority, conv2d_backward_weight, sdk::kFloatingMask, kCl)
  // Optional: the convolution with its ReLU as a oneDNN post-op (Note [Fused convolution and
  // ReLU] in core/ops/conv.cpp).
  EMBER_REGISTER_KERNEL_FLAGS(reg, cpu, kPriority, conv2d_relu, sdk::kFloatingMask, kCl)
  // Optional: the residual's sum and the ReLU as post-ops too (Note [Convolution, residual add
  // and ReLU]).
  EMBER_REGISTER_KERNEL_FLAGS(reg, cpu, kPriority, conv2d_add_relu, sdk::kFloatingMask, kCl)
  // Optional: a linear layer's product, bias and activation as one oneDNN matmul (Note [Fused
  // linear layers] in core/ops/nn.cpp; matmul.cpp).
  EMBER_REGISTER_KERNEL(reg, cpu, kPriority, fused_linear)
  // So do the pools (pool.cpp, Note [Channels-last pooling]), for the dtypes ops.def gives them.
#define EMBER_CPU_CHANNELS_LAST(name) \
  EMBER_REGISTER_KERNEL_FLAGS(reg, cpu, kPriority, name, ops::kInfo[ops::name].dtypes, kCl)
  EMBER_CPU_CHANNELS_LAST(max_pool2d)
  EMBER_CPU_CHANNELS_LAST(max_pool2d_backward)
  EMBER_CPU_CHANNELS_LAST(avg_pool2d)
  EMBER_CPU_CHANNELS_LAST(avg_pool2d_backward)
  EMBER_CPU_CHANNELS_LAST(adaptive_avg_pool2d)
  EMBER_CPU_CHANNELS_LAST(adaptive_avg_pool2d_backward)
#undef EMBER_CPU_CHANNELS_LAST
  // Optional ops: the fused ReLU and GELU backwards (elementwise.cpp); the max pooling backward,
  // the indices' scatter plane by plane (pool.cpp), is registered above.
  EMBER_REGISTER_KERNEL(reg, cpu, kPriority, relu_backward)
  EMBER_REGISTER_KERNEL(reg, cpu, kPriority, gelu_backward)
  // The optimizers' fused steps (optim.cpp), float32 and float64: one OpenMP pass per parameter
  // (Note [Optimizer steps through kernels]); half-precision parameters take the tensor ops.
  constexpr uint32_t kF32F64 = sdk::dtype_bit(EMBER_F32) | sdk::dtype_bit(EMBER_F64);
  // rand, randn and dropout masks in parallel (random.cpp); the core draws the half types on
  // the host (Note [Random numbers on every device]).
  EMBER_REGISTER_KERNEL_DTYPES(reg, cpu, kPriority, random, kF32F64)
  EMBER_REGISTER_KERNEL_DTYPES(reg, cpu, kPriority, sgd_step, kF32F64)
  EMBER_REGISTER_KERNEL_DTYPES(reg, cpu, kPriority, adam_step, kF32F64)
  EMBER_REGISTER_KERNEL_DTYPES(reg, cpu, kPriority, rmsprop_step, kF32F64)
  // The LSTM and GRU recurrences, forward and backward (rnn.cpp, Note [The LSTM recurrence as
  // one op]).
  EMBER_REGISTER_KERNEL_DTYPES(reg, cpu, kPriority, lstm_layer, kF32F64)
  EMBER_REGISTER_KERNEL_DTYPES(reg, cpu, kPriority, lstm_layer_backward, kF32F64)
  EMBER_REGISTER_KERNEL_DTYPES(reg, cpu, kPriority, gru_layer, kF32F64)
  EMBER_REGISTER_KERNEL_DTYPES(reg, cpu, kPriority, gru_layer_backward, kF32F64)
  // The factorizations of torch.linalg through LAPACK (linalg.cpp, Note [LAPACK in the CPU
  // backend]).
  EMBER_REGISTER_KERNEL(reg, cpu, kPriority, linalg_lu_factor)
  EMBER_REGISTER_KERNEL(reg, cpu, kPriority, linalg_lu_solve)
  EMBER_REGISTER_KERNEL(reg, cpu, kPriority, linalg_cholesky)
  EMBER_REGISTER_KERNEL(reg, cpu, kPriority, linalg_qr)
  EMBER_REGISTER_KERNEL(reg, cpu, kPriority, linalg_eigh)
  EMBER_REGISTER_KERNEL(reg, cpu, kPriority, linalg_svd)
  return EMBER_OK;
}

}  // namespace ember::cpu
