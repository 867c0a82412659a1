// Everything the CUDA backend implements: one line per kernel, the dtypes it covers, and where
// the work is done. Attribute layouts are documented with each op in core/ops/.
#include "backends/cuda/kernels.h"

#include "backends/cuda/ops/ops.h"
#include "ember/plugin_sdk.hpp"

namespace ember::cuda {

using namespace ember::sdk;  // dtype masks

namespace {
constexpr uint32_t kF = kFloatingMask;
constexpr uint32_t kA = kAllMask;
constexpr uint32_t kF32F64 = dtype_bit(EMBER_F32) | dtype_bit(EMBER_F64);
}  // namespace

void register_kernels(const ember_registrar_v1* reg, int32_t cuda) {
  auto k = [&](const char* op, uint32_t dtypes, ember_kernel_fn fn) {
    reg->kernel(reg->ctx, op, cuda, dtypes, /*priority=*/100, fn);
  };
  // Copies and fills (ops/elementwise.cu): strided, any dtype to any dtype.
  k("copy", kA, copy);
  k("fill", kA, fill);
  // Binary arithmetic with broadcasting (ops/elementwise.cu), computed in float for f16/bf16.
  k("add", kF, add);
  k("sub", kF, sub);
  k("mul", kF, mul);
  k("div", kF, div);
  // Unary math (ops/elementwise.cu).
  k("neg", kF, neg);
  k("exp", kF, exp);
  k("relu", kF, relu);
  // Matrix products (ops/matmul.cpp): cuBLAS strided-batched GEMM, TF32 off.
  k("matmul", kF32F64, matmul);
}

}  // namespace ember::cuda
