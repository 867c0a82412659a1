// Storage: a block of device memory, its deleter and the version counter its views share.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ember/tensor/device.h"
#include "ember/util/export.h"
#include "ember/util/intrusive_ptr.h"

namespace ember {

namespace autograd {
/** True inside an InferenceMode scope on this thread; declared here for StorageImpl, with the
 *  other modes in ember/autograd/grad_mode.h, which the tensor layer below autograd does not
 *  include (ARCHITECTURE.md, "Layers"). */
EMBER_API bool is_inference_mode();
}  // namespace autograd

/** Frees a storage's memory: (context, data, bytes, device). */
using StorageDeleter = void (*)(void* ctx, void* data, size_t bytes, Device device);

/** Owns device memory; freed through its deleter when the last tensor lets go. */
class EMBER_API StorageImpl : public RefCounted {
 public:
  /** Takes ownership of `data`; `deleter(ctx, data, bytes, device)` releases it. `pinned`: host
   *  memory page-locked by a device backend (Note [Pinned host memory] in plugin_abi.h). */
  StorageImpl(void* data, size_t bytes, Device device, StorageDeleter deleter, void* ctx,
              bool pinned = false)
      : data_(data),
        bytes_(bytes),
        device_(device),
        deleter_(deleter),
        ctx_(ctx),
        id_(next_id()),
        pinned_(pinned),
        inference_(autograd::is_inference_mode()) {}
  ~StorageImpl() {
    if (deleter_) deleter_(ctx_, data_, bytes_, device_);
  }

  /** Start of the memory block. */
  void* data() const { return data_; }
  /** Size of the block in bytes. */
  size_t bytes() const { return bytes_; }
  /** Device holding the block. */
  Device device() const { return device_; }
  /** Version counter, bumped by every in-place write through any view (always 0 for an
   *  inference storage, Note [Inference tensors] in core/autograd/grad_mode.cpp). */
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  /** Records an in-place write (nothing for an inference storage). */
  void bump_version() {
    if (!inference_) version_.fetch_add(1, std::memory_order_relaxed);
  }
  /** True if made inside an InferenceMode scope: its tensors are inference tensors. */
  bool inference() const { return inference_; }
  /** Process-wide identity of this storage, never reused (Note [Tensor identities] in
   *  plugin_abi.h): unlike data(), a block recycled by a caching allocator gets a new one. */
  uint64_t id() const { return id_; }
  /** True for page-locked host memory from a device backend's host_alloc. */
  bool pinned() const { return pinned_; }

 private:
  void* data_;
  size_t bytes_;
  Device device_;
  StorageDeleter deleter_;
  void* ctx_;
  std::atomic<uint32_t> version_{0};
  uint64_t id_;
  bool pinned_;
  bool inference_;

  // Only the core makes storages, so this one counter (in libember_core) numbers them all.
  static uint64_t next_id() {
    static std::atomic<uint64_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed) + 1;
  }
};

/** Shared handle to a StorageImpl. */
using Storage = IntrusivePtr<StorageImpl>;

/** Allocates `bytes` on `device` through its registered allocator. */
EMBER_API Storage allocate_storage(size_t bytes, Device device);
/** Allocates `bytes` of page-locked CPU memory from device type `type`'s host_alloc (-1: the
 *  available device type with host_alloc and the highest priority); throws if none offers it. */
EMBER_API Storage allocate_pinned_storage(size_t bytes, int16_t type = -1);

}  // namespace ember
