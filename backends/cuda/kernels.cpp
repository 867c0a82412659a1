// Everything the CUDA backend implements: one line per kernel, the dtypes it covers, and where
// the work is done. Attribute layouts are documented with each op in core/ops/.
#include "backends/cuda/kernels.h"

#include "backends/cuda/ops/ops.h"
#include "ember/plugin_sdk.hpp"

namespace ember::cuda {

using namespace ember::sdk;  // dtype masks

namespace {
constexpr uint32_t kF = kFloatingMask;
constexpr uint32_t kN = kNumericMask;
constexpr uint32_t kA = kAllMask;
}  // namespace

void register_kernels(const ember_registrar_v1* reg, int32_t cuda) {
  auto k = [&](const char* op, uint32_t dtypes, ember_kernel_fn fn) {
    reg->kernel(reg->ctx, op, cuda, dtypes, /*priority=*/100, fn);
  };
  // Copies and fills (ops/elementwise.cu): strided, any dtype to any dtype.
  k("copy", kA, copy);
  k("fill", kA, fill);
  // Binary arithmetic with broadcasting (ops/elementwise.cu), computed in float for f16/bf16;
  // integer and bool arithmetic as the CPU plugin's (plugin_sdk_binary_ops.hpp).
  k("add", kA, add);
  k("sub", kN, sub);
  k("mul", kA, mul);
  k("div", kF, div);
  k("pow", kN, pow);
  k("maximum", kA, maximum);
  k("minimum", kA, minimum);
  // Comparison and logic, bool results (ops/elementwise.cu).
  k("eq", kA, eq);
  k("ne", kA, ne);
  k("lt", kA, lt);
  k("le", kA, le);
  k("gt", kA, gt);
  k("ge", kA, ge);
  k("logical_and", kA, logical_and);
  k("logical_or", kA, logical_or);
  k("logical_not", kA, logical_not);
  k("where", kA, where);
  // Unary math (ops/elementwise.cu).
  k("neg", kN, neg);
  k("abs", kN, abs);
  k("sign", kN, sign);
  k("relu", kN, relu);
  k("relu_backward", kN, relu_backward);
  k("clamp", kN, clamp);
  k("exp", kF, exp);
  k("log", kF, log);
  k("log1p", kF, log1p);
  k("sqrt", kF, sqrt);
  k("rsqrt", kF, rsqrt);
  k("sin", kF, sin);
  k("cos", kF, cos);
  k("tanh", kF, tanh);
  k("sigmoid", kF, sigmoid);
  k("gelu", kF, gelu);
  k("silu", kF, silu);
  k("floor", kF, floor);
  k("ceil", kF, ceil);
  k("round", kF, round);
  k("erf", kF, erf);
  // Reductions (ops/reduce.cu): a group of 1, 32 or 256 threads per output, double
  // accumulation for floating sums/products. sum/prod/cumsum see int64 for integer and bool
  // inputs (the core converts).
  k("sum", kN, sum);
  k("prod", kN, prod);
  k("amax", kA, amax);
  k("amin", kA, amin);
  k("all", kA, all);
  k("any", kA, any);
  k("argmax", kA, argmax);
  k("argmin", kA, argmin);
  k("max_dim", kA, max_dim);
  k("min_dim", kA, min_dim);
  k("cumsum", kN, cumsum);
  // Softmax along one dim (ops/softmax.cu): cuDNN for dense inputs, else (or with cudnn.enabled
  // off) an own kernel, compute type float (double for f64) (ops/cudnn_ops.cpp, Note [cuDNN
  // where own kernels exist too]).
  k("softmax", kF, softmax);
  k("log_softmax", kF, log_softmax);
  // Indexing (ops/index.cu): indices range-checked on the device before anything is written.
  k("index_select", kA, index_select);
  k("gather", kA, gather);
  k("scatter", kA, scatter);
  k("scatter_add", kA, scatter_add);
  // Ordering and counting (ops/sort.cu): one Thrust stable sort of every row, NaN last;
  // nonzero in two passes (a prefix sum of the flags, then the coordinates).
  k("count_nonzero", kA, count_nonzero);
  k("nonzero", kA, nonzero);
  k("sort", kA, sort);
  k("topk", kA, topk);
  // Convolutions (ops/conv.cpp): cuDNN forward / backward data / backward filter, groups,
  // stride, padding, dilation; heuristic algorithm cached per shape, no TF32 for float32.
  k("conv2d", kF, conv2d);
  k("conv2d_backward_input", kF, conv2d_backward_input);
  k("conv2d_backward_weight", kF, conv2d_backward_weight);
  // Pooling (ops/pool.cu): average pooling through cuDNN for floor-mode and evenly divided
  // adaptive windows; own kernels otherwise, one thread per output (forward) or per input
  // (backward); max pooling always own, for the CPU plugin's flat h * W + w indices.
  k("max_pool2d", kN, max_pool2d);
  k("max_pool2d_backward", kF, max_pool2d_backward);  // a gather: one thread per input element
  k("avg_pool2d", kF, avg_pool2d);
  k("avg_pool2d_backward", kF, avg_pool2d_backward);
  k("adaptive_avg_pool2d", kF, adaptive_avg_pool2d);
  k("adaptive_avg_pool2d_backward", kF, adaptive_avg_pool2d_backward);
  // Normalisation (ops/norm.cu): batch_norm through cuDNN (Note [Batch norm through cuDNN])
  // except the eval-mode backward; own kernels, a block per channel / row, two-pass statistics
  // in double, for the rest and for layer_norm / group_norm.
  k("batch_norm", kF, batch_norm);
  k("batch_norm_backward", kF, batch_norm_backward);
  k("layer_norm", kF, layer_norm);
  k("layer_norm_backward", kF, layer_norm_backward);
  k("group_norm", kF, group_norm);
  k("group_norm_backward", kF, group_norm_backward);
  // Random numbers (ops/random.cu): Philox blocks, one thread each, the SDK's mapping, so the
  // values equal the core's host path (Note [Random numbers on every device]).
  k("random", kF, random);
  // Matrix products (ops/matmul.cpp): cuBLAS strided-batched GEMM (libcublas loaded on first
  // use, Note [Lazy cuBLAS]), TF32 off; f16/bf16 accumulate in float32; integers through an own
  // tiled kernel that wraps as the CPU's (ops/matmul_int.cu).
  k("matmul", kN, matmul);
}

}  // namespace ember::cuda
