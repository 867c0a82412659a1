// Everything the reference backend implements: the same ops and dtypes as the CPU backend
// (backends/cpu/kernels.cpp), each as a plain single-threaded loop. Attribute layouts are
// documented with each op in core/ops/.
#include "backends/reference/kernels.h"

#include <exception>
#include <new>

#include "backends/reference/ops/ops.h"
#include "ember/plugin_sdk.hpp"

namespace ember::reference {

using namespace ember::sdk;  // dtype masks

namespace {
constexpr uint32_t kF = kFloatingMask;
constexpr uint32_t kN = kNumericMask;
constexpr uint32_t kA = kAllMask;

// Note [Nothing throws across the boundary]
// The kernels use std::vector and std::stable_sort, which may throw std::bad_alloc. Every
// kernel is registered through safe<>, which turns an escaping exception into a status, so
// the C ABI promise (no exception crosses it) holds without a try block in every kernel.
template <ember_kernel_fn Fn>
int32_t safe(const ember_kernel_call* call) noexcept {
  try {
    return Fn(call);
  } catch (const std::bad_alloc&) {
    return fail(call, EMBER_ERR_OUT_OF_MEMORY, "reference: out of host memory");
  } catch (const std::exception& e) {
    return fail(call, EMBER_ERR_INTERNAL, "reference: %s", e.what());
  } catch (...) {
    return fail(call, EMBER_ERR_INTERNAL, "reference: unknown exception");
  }
}
}  // namespace

void register_kernels(const ember_registrar_v1* reg, int32_t device) {
  auto k = [&](const char* op, uint32_t dtypes, ember_kernel_fn fn) {
    reg->kernel(reg->ctx, op, device, dtypes, /*priority=*/100, fn);
  };
  // Copies and fills.
  k("copy", kA, safe<copy>);
  k("fill", kA, safe<fill>);
  // Binary arithmetic (inputs arrive expanded to the output shape).
  k("add", kA, safe<add>);
  k("sub", kN, safe<sub>);
  k("mul", kA, safe<mul>);
  k("div", kF, safe<div>);
  k("pow", kN, safe<pow>);
  k("maximum", kA, safe<maximum>);
  k("minimum", kA, safe<minimum>);
  // Comparison and logic, bool results.
  k("eq", kA, safe<eq>);
  k("ne", kA, safe<ne>);
  k("lt", kA, safe<lt>);
  k("le", kA, safe<le>);
  k("gt", kA, safe<gt>);
  k("ge", kA, safe<ge>);
  k("logical_and", kA, safe<logical_and>);
  k("logical_or", kA, safe<logical_or>);
  k("logical_not", kA, safe<logical_not>);
  k("where", kA, safe<where>);
  // Unary math.
  k("neg", kN, safe<neg>);
  k("abs", kN, safe<abs>);
  k("sign", kN, safe<sign>);
  k("relu", kN, safe<relu>);
  k("relu_backward", kN, safe<relu_backward>);
  k("clamp", kN, safe<clamp>);
  k("exp", kF, safe<exp>);
  k("log", kF, safe<log>);
  k("log1p", kF, safe<log1p>);
  k("sqrt", kF, safe<sqrt>);
  k("rsqrt", kF, safe<rsqrt>);
  k("sin", kF, safe<sin>);
  k("cos", kF, safe<cos>);
  k("tanh", kF, safe<tanh>);
  k("sigmoid", kF, safe<sigmoid>);
  k("gelu", kF, safe<gelu>);
  k("silu", kF, safe<silu>);
  k("floor", kF, safe<floor>);
  k("ceil", kF, safe<ceil>);
  k("round", kF, safe<round>);
  k("erf", kF, safe<erf>);
  // Reductions over trailing dims (reduce.cpp), accumulating in double / int64.
  k("sum", kN, safe<sum>);
  k("prod", kN, safe<prod>);
  k("amax", kA, safe<amax>);
  k("amin", kA, safe<amin>);
  k("all", kA, safe<all>);
  k("any", kA, safe<any>);
  k("argmax", kA, safe<argmax>);
  k("argmin", kA, safe<argmin>);
  k("max_dim", kA, safe<max_dim>);
  k("min_dim", kA, safe<min_dim>);
  k("cumsum", kN, safe<cumsum>);
  // Matrix products and softmax (linalg.cpp): dot products and exp-sums in double.
  k("matmul", kN, safe<matmul>);
  k("softmax", kF, safe<softmax>);
  k("log_softmax", kF, safe<log_softmax>);
  // Indexing and ordering (index.cpp).
  k("index_select", kA, safe<index_select>);
  k("gather", kA, safe<gather>);
  k("scatter", kA, safe<scatter>);
  k("scatter_add", kA, safe<scatter_add>);
  k("count_nonzero", kA, safe<count_nonzero>);
  k("nonzero", kA, safe<nonzero>);
  k("sort", kA, safe<sort>);  // std::stable_sort per row
  k("topk", kA, safe<topk>);  // the first k of a stable sort
  // Convolutions (conv.cpp): the defining sums, in double.
  k("conv2d", kF, safe<conv2d>);
  k("conv2d_backward_input", kF, safe<conv2d_backward_input>);
  k("conv2d_backward_weight", kF, safe<conv2d_backward_weight>);
  // Pooling (pool.cpp).
  k("max_pool2d", kN, safe<max_pool2d>);                    // values and flat h * W + w indices
  k("max_pool2d_backward", kF, safe<max_pool2d_backward>);  // each gradient added at its index
  k("avg_pool2d", kF, safe<avg_pool2d>);
  k("avg_pool2d_backward", kF, safe<avg_pool2d_backward>);
  k("adaptive_avg_pool2d", kF, safe<adaptive_avg_pool2d>);
  k("adaptive_avg_pool2d_backward", kF, safe<adaptive_avg_pool2d_backward>);
  // Normalisation (norm.cpp): two-pass statistics in double.
  k("batch_norm", kF, safe<batch_norm>);
  k("batch_norm_backward", kF, safe<batch_norm_backward>);
  k("layer_norm", kF, safe<layer_norm>);
  k("layer_norm_backward", kF, safe<layer_norm_backward>);
  k("group_norm", kF, safe<group_norm>);
  k("group_norm_backward", kF, safe<group_norm_backward>);
}

}  // namespace ember::reference
