// The pinned (page-locked) host memory cache (Note [Pinned host memory] in plugin_abi.h, Note
// [Caching pinned host memory] in host_allocator.cpp), written against the same SegmentSource
// as the device allocator so its logic runs in CPU-only unit tests. No CUDA headers here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/allocator.h"

namespace ember::cuda {

/** Page-locked host blocks, cached on free and reused once the copies using them are done. */
class HostAllocator {
 public:
  /** An allocator drawing blocks from `source` (not owned; must outlive it). */
  explicit HostAllocator(SegmentSource* source);
  /** Returns every cached block to the source; blocks still in use are leaked. */
  ~HostAllocator();
  HostAllocator(const HostAllocator&) = delete;
  HostAllocator& operator=(const HostAllocator&) = delete;

  /** A block of at least `bytes` (rounded to a power of two); nullptr with `error` set when the
   * source refuses even after the cache was emptied. */
  void* allocate(size_t bytes, std::string* error = nullptr);
  /** Returns a block from allocate(); it is reused only after the work recorded on it
   * (record_use) has completed. False for pointers this allocator did not hand out. */
  bool free(void* ptr);
  /** If `ptr` lies inside a live block, marks the work queued on `stream` so far as using it
   * (an event) and returns true; false for memory this allocator does not own. */
  bool record_use(const void* ptr, void* stream);
  /** True if `ptr` lies inside a block handed out by allocate() and not yet freed. */
  bool contains(const void* ptr) const;
  /** Returns every free block whose uses completed to the source. */
  void empty_cache();
  /** allocated/reserved/peak/num_allocs/num_os_allocs, in bytes of rounded blocks. */
  ember_memory_stats stats() const;
  /** Number of freed blocks still waiting for copies that use them. */
  size_t num_pending_frees() const;

  /** Size of the block a request of `bytes` gets. */
  static size_t round_size(size_t bytes);

 private:
  struct Block {
    size_t size = 0;
    bool allocated = false;
    std::vector<void*> events;  // uses not yet known to be complete
  };

  void process_pending_locked();
  void release_free_locked();

  SegmentSource* source_;
  mutable std::mutex mu_;
  std::map<const char*, Block> blocks_;      // every block held, by address
  std::multimap<size_t, const char*> free_;  // free blocks with no pending use, by size
  std::vector<const char*> pending_;         // freed, waiting for their events
  ember_memory_stats stats_{};
};

}  // namespace ember::cuda
