// Every CPU kernel, one C-ABI function each, and the helpers the kernel files share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ember/plugin_abi.h"
#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_ops.hpp"

namespace ember::cpu {

// One kernel function per core op, declared from the op list (Note [Kernels of a backend] in
// ember/plugin_sdk_ops.hpp); kernels.cpp registers them. Defined in elementwise.cpp (copies,
// fills, arithmetic, comparison, unary math), reduce.cpp, matmul.cpp and softmax.cpp (oneDNN),
// index.cpp and sort.cpp, conv.cpp (oneDNN for float32, own loops otherwise), pool.cpp,
// norm.cpp and optim.cpp (own loops), attention.cpp and rnn.cpp (sgemm or oneDNN's matmul, and own
// loops), random.cpp (Philox draws).
#define EMBER_OP(name, ...) EMBER_KERNEL(name);
#include "ember/ops.def"
#undef EMBER_OP

// Shared oneDNN state, declared for the files that include <oneapi/dnnl/dnnl.hpp> first.
#ifdef ONEAPI_DNNL_DNNL_HPP
/** The plugin's one oneDNN engine (CPU, index 0), created on first use; may throw dnnl::error. */
dnnl::engine& dnnl_engine();
/** This thread's oneDNN stream on dnnl_engine() (Note [oneDNN from many threads]). */
dnnl::stream& dnnl_stream();
/** Attributes every cached primitive is made with: a user-managed scratchpad. */
dnnl::primitive_attr dnnl_attr();
/** A oneDNN memory of layout `md` in new scratch memory that `buf` owns (Note [CPU scratch
 *  memory]); none when `md` is null or empty. Throws std::bad_alloc without memory. */
struct ScratchGuard;
std::optional<dnnl::memory> dnnl_scratch_memory(const_dnnl_memory_desc_t md, ScratchGuard& buf);
/** Runs `prim` on this thread's stream with a scratchpad of its own, and waits. */
void dnnl_execute(const ember_kernel_call* call, const dnnl::primitive& prim,
                  std::unordered_map<int, dnnl::memory> args);
/** The OpenMP threads a primitive made on this thread runs on, part of every cached primitive's
 *  key (Note [Primitives are made for a thread count] in matmul.cpp). */
int32_t dnnl_threads();
/** Looks `key` up in the primitive cache (Note [oneDNN primitive cache]); true on a hit. */
bool dnnl_cache_find(const int64_t* key, int32_t n, dnnl::primitive* out);
/** Stores a primitive (an empty handle records "no oneDNN implementation") under `key`. */
void dnnl_cache_put(const int64_t* key, int32_t n, const dnnl::primitive& prim);
#endif

/** The identity of input `i` of `call`, or null when the core passes none (older than ABI 1.2,
 *  or storage id 0). */
const ember_tensor_identity* input_identity(const ember_kernel_call* call, int i);

/** Reordered copies of the weights one cached primitive reads, in its layout (Note [Reordered
 *  weight cache] in weight_cache.cpp); thread-safe. */
class WeightCache {
 public:
  /** A cache of `slots` weights. */
  explicit WeightCache(size_t slots) : slots_(slots) {}
  /** Weight `id` at `data` in the primitive's layout (`bytes`): the kept copy; on the weight's
   *  second sight a new copy that `fill` writes, now kept; null on a first sight (now
   *  remembered) or when the cache's memory budget is spent. */
  std::shared_ptr<void> get(const ember_tensor_identity& id, const void* data, size_t bytes,
                            const std::function<void(void*)>& fill);

 private:
  /** One weight: its identity, when it was last used, and its copy (null: seen once). */
  struct Slot {
    uint64_t storage_id = 0, version = 0;
    const void* data = nullptr;
    uint64_t last_use = 0;
    std::shared_ptr<void> buf;
  };
  Slot* find(const ember_tensor_identity& id, const void* data);
  void put(const ember_tensor_identity& id, const void* data, std::shared_ptr<void> buf);

  std::mutex mutex_;
  std::vector<Slot> slots_;
  uint64_t tick_ = 0;
};

/** Scratch memory for a kernel, from the plugin's caching allocator (Note [CPU scratch memory]);
 *  null when there is none. */
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

/** Calls fn(T{}) with T = float or double after the call's first output's dtype; refuses any
 *  other dtype with EMBER_ERR_UNSUPPORTED (the kernels registered for float32 and float64). */
template <typename Fn>
int32_t visit_f32_f64(const ember_kernel_call* call, const char* name, Fn&& fn) {
  const int32_t dtype = call->outputs[0].dtype;
  if (dtype == EMBER_F32) {
    fn(float{});
  } else if (dtype == EMBER_F64) {
    fn(double{});
  } else {
    return sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: dtype %s (float32 and float64 only)", name,
                     sdk::dtype_name(dtype));
  }
  return EMBER_OK;
}

}  // namespace ember::cpu
