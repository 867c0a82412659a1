// Every CPU kernel, one C-ABI function each; kernels.cpp registers them.
#pragma once

#include <cstddef>

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
EMBER_CPU_KERNEL(relu_backward);
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
#include <unordered_map>
/** The plugin's one oneDNN engine (CPU, index 0), created on first use; may throw dnnl::error. */
dnnl::engine& dnnl_engine();
/** This thread's oneDNN stream on dnnl_engine() (Note [oneDNN from many threads]). */
dnnl::stream& dnnl_stream();
/** Attributes every cached primitive is made with: a user-managed scratchpad. */
dnnl::primitive_attr dnnl_attr();
/** Runs `prim` on this thread's stream with a scratchpad of its own, and waits. */
void dnnl_execute(const ember_kernel_call* call, const dnnl::primitive& prim,
                  std::unordered_map<int, dnnl::memory> args);
/** Looks `key` up in the primitive cache (Note [oneDNN primitive cache]); true on a hit. */
bool dnnl_cache_find(const int64_t* key, int32_t n, dnnl::primitive* out);
/** Stores a primitive (an empty handle records "no oneDNN implementation") under `key`. */
void dnnl_cache_put(const int64_t* key, int32_t n, const dnnl::primitive& prim);
#endif

/** Scratch memory for a kernel: the host's when the call carries its services, else the
 * plugin's caching allocator. */
void* scratch_alloc(const ember_kernel_call* call, size_t bytes);
/** Returns memory from scratch_alloc(). */
void scratch_free(const ember_kernel_call* call, void* ptr, size_t bytes);

/** One scratch buffer, freed when the guard goes (also when oneDNN throws). */
struct ScratchGuard {
  const ember_kernel_call* call;
  void* ptr = nullptr;
  size_t bytes = 0;
  /** Allocates `n` bytes; false when there is no memory. */
  bool alloc(size_t n) {
    bytes = n;
    ptr = scratch_alloc(call, n);
    return ptr != nullptr;
  }
  ~ScratchGuard() {
    if (ptr) scratch_free(call, ptr, bytes);
  }
};

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
EMBER_CPU_KERNEL(max_pool2d_backward);
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
