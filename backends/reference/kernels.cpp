// Everything the reference backend implements: every mandatory op of ember/ops.def for the
// dtypes it lists, plus the optional relu_backward, gelu_backward, max_pool2d_backward,
// conv2d_relu, conv2d_add_relu, fused_linear, the whole recurrent layer (rnn_layer and its
// backward) and the factorizations of torch.linalg, each as a plain single-threaded loop.
// Attribute meanings are documented with each op in core/ops/.
#include "backends/reference/kernels.h"

#include "backends/reference/ops/ops.h"
#include "ember/plugin_sdk_ops.hpp"

namespace ember::reference {

int32_t register_kernels(const ember_registrar_v1* reg, int32_t device) {
  constexpr int32_t kPriority = 100;
  // Registration wraps every kernel in sdk::guarded (Note [One boundary for every plugin entry
  // point]): the kernels use std::vector and std::stable_sort, which may throw std::bad_alloc.
  // Where each family's kernels live:
  //   copy, fill, binary arithmetic (inputs arrive expanded to the output shape), comparison
  //     and logic (bool results), where, unary math            ops/elementwise.cpp
  //   reductions over trailing dims, cumsum: double / int64    ops/reduce.cpp
  //   matmul, softmax: dot products and exp-sums in double     ops/linalg.cpp
  //   indexing (indices checked first), sort and topk (stable) ops/index.cpp
  //   conv2d and its backward ops: the defining sums, double   ops/conv.cpp
  //   max, average and adaptive pooling and their backward     ops/pool.cpp
  //   batch, layer and group norm: two-pass stats in double    ops/norm.cpp
#define EMBER_OP(name, ...) EMBER_REGISTER_MANDATORY_KERNEL(reg, device, kPriority, name)
#include "ember/ops.def"
#undef EMBER_OP
  // The optional ops the reference has (it leaves out random: the core then draws on the host).
  EMBER_REGISTER_KERNEL(reg, device, kPriority, relu_backward)
  EMBER_REGISTER_KERNEL(reg, device, kPriority, gelu_backward)
  EMBER_REGISTER_KERNEL(reg, device, kPriority, max_pool2d_backward)
  EMBER_REGISTER_KERNEL(reg, device, kPriority, conv2d_relu)
  EMBER_REGISTER_KERNEL(reg, device, kPriority, conv2d_add_relu)
  //   fused_linear: dot products in double, then bias and activation  ops/linalg.cpp
  EMBER_REGISTER_KERNEL(reg, device, kPriority, fused_linear)
  //   a whole LSTM or GRU layer, forward and backward through time, in double  ops/rnn.cpp
  EMBER_REGISTER_KERNEL(reg, device, kPriority, rnn_layer)
  EMBER_REGISTER_KERNEL(reg, device, kPriority, rnn_layer_backward)
  //   the factorizations: LU, Cholesky, Householder QR, Jacobi eigh and SVD  ops/linalg_decomp.cpp
  EMBER_REGISTER_KERNEL(reg, device, kPriority, linalg_lu_factor)
  EMBER_REGISTER_KERNEL(reg, device, kPriority, linalg_lu_solve)
  EMBER_REGISTER_KERNEL(reg, device, kPriority, linalg_cholesky)
  EMBER_REGISTER_KERNEL(reg, device, kPriority, linalg_qr)
  EMBER_REGISTER_KERNEL(reg, device, kPriority, linalg_eigh)
  EMBER_REGISTER_KERNEL(reg, device, kPriority, linalg_svd)
  return EMBER_OK;
}

}  // namespace ember::reference
