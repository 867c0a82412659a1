// Everything the CPU backend implements: one line per kernel, the dtypes it covers, and where
// the work is done. Attribute layouts are documented with each op in core/ops/.
#include "backends/cpu/kernels.h"

#include "backends/cpu/ops/ops.h"
#include "ember/plugin_sdk.hpp"

namespace ember::cpu {

using namespace ember::sdk;  // dtype masks

namespace {
constexpr uint32_t kF = kFloatingMask;
constexpr uint32_t kN = kNumericMask;
constexpr uint32_t kA = kAllMask;
}  // namespace

void register_kernels(const ember_registrar_v1* reg, int32_t cpu) {
  auto k = [&](const char* op, uint32_t dtypes, ember_kernel_fn fn) {
    reg->kernel(reg->ctx, op, cpu, dtypes, /*priority=*/100, fn);
  };
  // Copies and fills (own loops).
  k("copy", kA, copy);
  k("fill", kA, fill);
  // Binary arithmetic with broadcasting (own vectorized loops).
  k("add", kA, add);
  k("sub", kN, sub);
  k("mul", kA, mul);
  k("div", kF, div);
  k("pow", kN, pow);
  k("maximum", kA, maximum);
  k("minimum", kA, minimum);
  // Comparison and logic, bool results.
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
  // Unary math.
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
  // Reductions (reduce.cpp): own pairwise/vectorized loops, OpenMP over outputs or the
  // reduction. sum/prod/cumsum see int64 for integer and bool inputs (the core converts).
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

  // Matrix products and softmax (oneDNN).
  k("matmul", kN, matmul);            // f32 (bf16/f16 where the CPU has them): dnnl::matmul
  k("softmax", kF, softmax);          // f32: oneDNN softmax_forward; others: own loop
  k("log_softmax", kF, log_softmax);  // f32: oneDNN logsoftmax_forward; others: own loop

  // Indexing and ordering (index.cpp, sort.cpp).
  k("index_select", kA, index_select);
  k("gather", kA, gather);
  k("scatter", kA, scatter);
  k("scatter_add", kA, scatter_add);
  k("count_nonzero", kA, count_nonzero);
  k("nonzero", kA, nonzero);
  k("sort", kA, sort);  // std::stable_sort per row
  k("topk", kA, topk);  // std::partial_sort per row

  // Convolutions (conv.cpp): f32 through oneDNN convolution_forward / _backward_data /
  // _backward_weights; f64 and the half types through own direct loops.
  k("conv2d", kF, conv2d);
  k("conv2d_backward_input", kF, conv2d_backward_input);
  k("conv2d_backward_weight", kF, conv2d_backward_weight);

  // Pooling (pool.cpp): own loops over the N * C planes, OpenMP across planes.
  k("max_pool2d", kN, max_pool2d);                    // values and flat h * W + w indices
  k("max_pool2d_backward", kF, max_pool2d_backward);  // the indices' scatter, plane by plane
  k("avg_pool2d", kF, avg_pool2d);
  k("avg_pool2d_backward", kF, avg_pool2d_backward);
  k("adaptive_avg_pool2d", kF, adaptive_avg_pool2d);
  k("adaptive_avg_pool2d_backward", kF, adaptive_avg_pool2d_backward);

  // Normalisation (norm.cpp): own two-pass loops, OpenMP across channels / rows.
  k("batch_norm", kF, batch_norm);
  k("batch_norm_backward", kF, batch_norm_backward);
  k("layer_norm", kF, layer_norm);
  k("layer_norm_backward", kF, layer_norm_backward);
  k("group_norm", kF, group_norm);
  k("group_norm_backward", kF, group_norm_backward);
}

}  // namespace ember::cpu
