// The reordered weight cache shared by the convolutions and the linear layers (Note [Reordered
// weight cache]).
#include <atomic>
#include <cstddef>
#include <new>

#include "backends/cpu/ops/ops.h"

namespace ember::cpu {
namespace {

// Note [Reordered weight cache]
// Forward and backward-data convolutions, and linear layers in oneDNN's packed layout (Note
// [Packed linear weights] in matmul.cpp), read the weight in a layout of oneDNN's choosing; in
// training it changes once per step while the layer may run several times in between (forward,
// backward data, and any evaluation), in inference never. So each cached primitive keeps the
// last reordered weights (up to its slot count, as layers of one geometry share a primitive)
// keyed by the weight's identity: (storage id, data address, version) from the call (Note
// [Tensor identities] in plugin_abi.h). The data address alone is not an identity (a caching
// allocator hands a freed weight's block to the next tensor of that size) but the storage id is
// never reused, and the version moves on every in-place write (optimizer steps, add_, copy_), so
// a hit always holds the current contents. A slot is replaced on a version mismatch; buffers are
// immutable once published and shared_ptr-owned, so a thread still reading one that another
// replaces keeps it alive. Calls without identities (a core older than ABI 1.2, storage id 0)
// reorder every time, as does everything past kWeightCacheBytes in all.
// A weight is kept only on its second sight: the first reorder of a (tensor, version) goes to
// scratch (or the linear layer runs on the plain weight) and the slot merely remembers the
// identity. In training every version is seen once per direction (forward and backward data are
// separate entries), so the cache holds no memory there; a buffer kept per weight per direction
// would have added ~120 MB of stale copies to the ResNet-18 step (518 -> 638 MB peak RSS).
// Inference and evaluation hit from the second batch.
constexpr size_t kWeightCacheBytes = size_t{512} << 20;
std::atomic<size_t> g_weight_cache_bytes{0};

// 64-byte aligned memory owned by a shared_ptr, counted in g_weight_cache_bytes; null when the
// budget is spent or there is no memory.
std::shared_ptr<void> weight_buffer(size_t bytes) {
  if (g_weight_cache_bytes.fetch_add(bytes) + bytes > kWeightCacheBytes) {
    g_weight_cache_bytes.fetch_sub(bytes);
    return nullptr;
  }
  void* p = ::operator new (bytes, std::align_val_t{64}, std::nothrow);
  if (!p) {
    g_weight_cache_bytes.fetch_sub(bytes);
    return nullptr;
  }
  return std::shared_ptr<void>(p, [bytes](void* q) {
    ::operator delete (q, std::align_val_t{64});
    g_weight_cache_bytes.fetch_sub(bytes);
  });
}

}  // namespace

const ember_tensor_identity* input_identity(const ember_kernel_call* call, int i) {
  const bool has =
      call->struct_size >= offsetof(ember_kernel_call, input_ids) + sizeof(call->input_ids) &&
      call->input_ids != nullptr;
  return has && call->input_ids[i].storage_id != 0 ? &call->input_ids[i] : nullptr;
}

std::shared_ptr<void> WeightCache::get(const ember_tensor_identity& id, const void* data,
                                       size_t bytes, const std::function<void(void*)>& fill) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Slot* slot = find(id, data);
    if (slot == nullptr || slot->version != id.version) {  // first sight: remember it
      put(id, data, nullptr);
      return nullptr;
    }
    slot->last_use = ++tick_;
    if (slot->buf) return slot->buf;
  }
  // Second sight: reorder outside the lock, then publish.
  std::shared_ptr<void> buf = weight_buffer(bytes);
  if (!buf) return nullptr;
  fill(buf.get());
  std::lock_guard<std::mutex> lock(mutex_);
  put(id, data, buf);
  return buf;
}

WeightCache::Slot* WeightCache::find(const ember_tensor_identity& id, const void* data) {
  for (Slot& s : slots_)
    if (s.storage_id == id.storage_id && s.data == data) return &s;
  return nullptr;
}

void WeightCache::put(const ember_tensor_identity& id, const void* data,
                      std::shared_ptr<void> buf) {
  Slot* victim = find(id, data);
  if (victim == nullptr) {
    victim = &slots_[0];
    for (Slot& s : slots_)
      if (s.storage_id == 0 || s.last_use < victim->last_use) victim = &s;
  }
  *victim = {id.storage_id, id.version, data, ++tick_, std::move(buf)};
}

}  // namespace ember::cpu
