// Every CPU kernel, one C-ABI function each; kernels.cpp registers them.
#pragma once

#include "ember/plugin_abi.h"

namespace ember::cpu {

/** Kernel signature shared by all entries below. */
#define EMBER_CPU_KERNEL(name) int32_t name(const ember_kernel_call* call)

// elementwise.cpp
EMBER_CPU_KERNEL(copy);
EMBER_CPU_KERNEL(fill);
EMBER_CPU_KERNEL(add);
EMBER_CPU_KERNEL(sub);
EMBER_CPU_KERNEL(mul);
EMBER_CPU_KERNEL(div);
EMBER_CPU_KERNEL(pow);
EMBER_CPU_KERNEL(maximum);
EMBER_CPU_KERNEL(minimum);
EMBER_CPU_KERNEL(eq);
EMBER_CPU_KERNEL(ne);
EMBER_CPU_KERNEL(lt);
EMBER_CPU_KERNEL(le);
EMBER_CPU_KERNEL(gt);
EMBER_CPU_KERNEL(ge);
EMBER_CPU_KERNEL(logical_and);
EMBER_CPU_KERNEL(logical_or);
EMBER_CPU_KERNEL(logical_not);
EMBER_CPU_KERNEL(where);
EMBER_CPU_KERNEL(neg);
EMBER_CPU_KERNEL(abs);
EMBER_CPU_KERNEL(exp);
EMBER_CPU_KERNEL(log);
EMBER_CPU_KERNEL(log1p);
EMBER_CPU_KERNEL(sqrt);
EMBER_CPU_KERNEL(rsqrt);
EMBER_CPU_KERNEL(sin);
EMBER_CPU_KERNEL(cos);
EMBER_CPU_KERNEL(tanh);
EMBER_CPU_KERNEL(sigmoid);
EMBER_CPU_KERNEL(relu);
EMBER_CPU_KERNEL(gelu);
EMBER_CPU_KERNEL(silu);
EMBER_CPU_KERNEL(clamp);
EMBER_CPU_KERNEL(sign);
EMBER_CPU_KERNEL(floor);
EMBER_CPU_KERNEL(ceil);
EMBER_CPU_KERNEL(round);
EMBER_CPU_KERNEL(erf);

// reduce.cpp
EMBER_CPU_KERNEL(sum);
EMBER_CPU_KERNEL(prod);
EMBER_CPU_KERNEL(amax);
EMBER_CPU_KERNEL(amin);
EMBER_CPU_KERNEL(all);
EMBER_CPU_KERNEL(any);
EMBER_CPU_KERNEL(argmax);
EMBER_CPU_KERNEL(argmin);
EMBER_CPU_KERNEL(max_dim);
EMBER_CPU_KERNEL(min_dim);
EMBER_CPU_KERNEL(cumsum);

// matmul.cpp, softmax.cpp (oneDNN)
EMBER_CPU_KERNEL(matmul);
EMBER_CPU_KERNEL(softmax);
EMBER_CPU_KERNEL(log_softmax);
// Shared oneDNN state, declared for the files that include <oneapi/dnnl/dnnl.hpp> first.
#ifdef ONEAPI_DNNL_DNNL_HPP
/** The plugin's one oneDNN engine (CPU, index 0), created on first use; may throw dnnl::error. */
dnnl::engine& dnnl_engine();
/** The plugin's one oneDNN stream on dnnl_engine(), created on first use. */
dnnl::stream& dnnl_stream();
/** Looks `key` up in the primitive cache (Note [oneDNN primitive cache]); true on a hit. */
bool dnnl_cache_find(const int64_t* key, int32_t n, dnnl::primitive* out);
/** Stores a primitive (an empty handle records "no oneDNN implementation") under `key`. */
void dnnl_cache_put(const int64_t* key, int32_t n, const dnnl::primitive& prim);
#endif

// index.cpp, sort.cpp
EMBER_CPU_KERNEL(index_select);
EMBER_CPU_KERNEL(gather);
EMBER_CPU_KERNEL(scatter);
EMBER_CPU_KERNEL(scatter_add);
EMBER_CPU_KERNEL(count_nonzero);
EMBER_CPU_KERNEL(nonzero);
EMBER_CPU_KERNEL(sort);
EMBER_CPU_KERNEL(topk);

// conv.cpp (oneDNN convolution for float32, own loops otherwise)
EMBER_CPU_KERNEL(conv2d);
EMBER_CPU_KERNEL(conv2d_backward_input);
EMBER_CPU_KERNEL(conv2d_backward_weight);

// pool.cpp: max, average and adaptive average pooling (own loops)
EMBER_CPU_KERNEL(max_pool2d);
EMBER_CPU_KERNEL(avg_pool2d);
EMBER_CPU_KERNEL(avg_pool2d_backward);
EMBER_CPU_KERNEL(adaptive_avg_pool2d);
EMBER_CPU_KERNEL(adaptive_avg_pool2d_backward);

// norm.cpp: batch, layer and group normalisation (own loops)
EMBER_CPU_KERNEL(batch_norm);
EMBER_CPU_KERNEL(batch_norm_backward);
EMBER_CPU_KERNEL(layer_norm);
EMBER_CPU_KERNEL(layer_norm_backward);
EMBER_CPU_KERNEL(group_norm);
EMBER_CPU_KERNEL(group_norm_backward);

}  // namespace ember::cpu
