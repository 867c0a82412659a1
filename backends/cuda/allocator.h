// The CUDA caching allocator (Note [CUDA caching allocator] in allocator.cpp), written against a
// SegmentSource so the same logic runs on a GPU (cudaMalloc/cudaFree) and in CPU-only unit
// tests (a fake source that counts calls and can refuse). No CUDA headers here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/plugin_abi.h"

namespace ember::cuda {

/** Where the allocator's segments come from: the driver, or a fake in tests. */
class SegmentSource {
 public:
  virtual ~SegmentSource() = default;
  /** Returns `bytes` of fresh memory, or nullptr when there is none left. */
  virtual void* allocate(size_t bytes) = 0;
  /** Gives a segment obtained from allocate() back. */
  virtual void release(void* ptr, size_t bytes) = 0;
  /** Free bytes as the device reports them, or -1 if unknown (for out-of-memory messages). */
  virtual int64_t free_bytes() { return -1; }
  /** An event marking the work queued on `stream` so far, or nullptr once that work is known
   * to be complete (a source without events, or one that waited instead). */
  virtual void* record_event(void* stream) {
    (void)stream;
    return nullptr;
  }
  /** True once the work before `event` (from record_event) has completed; never blocks. */
  virtual bool event_done(void* event) {
    (void)event;
    return true;
  }
  /** Destroys an event from record_event. */
  virtual void destroy_event(void* event) { (void)event; }
};

/** Allocation granularity: every block size is a multiple of this. */
inline constexpr size_t kMinBlockSize = 512;
/** Requests up to this size come from the small pool. */
inline constexpr size_t kSmallSize = size_t{1} << 20;
/** Segment size of the small pool. */
inline constexpr size_t kSmallBuffer = size_t{2} << 20;
/** Segment size for large requests below kMinLargeAlloc. */
inline constexpr size_t kLargeBuffer = size_t{20} << 20;
/** Large requests from this size get a segment of their own, rounded to kRoundLarge. */
inline constexpr size_t kMinLargeAlloc = size_t{10} << 20;
/** Rounding of big segments. */
inline constexpr size_t kRoundLarge = size_t{2} << 20;

/** A caching allocator for one device: blocks split from segments, reused per stream. */
class CachingAllocator {
 public:
  /** An allocator drawing segments from `source` (not owned; must outlive it). */
  explicit CachingAllocator(SegmentSource* source, int device_index = 0);
  /** Returns cached segments to the source; blocks still in use are leaked. */
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /** Memory for `bytes` usable on `stream`; nullptr when out of memory, with the reason in
   * `error` (if given) and last_error(). */
  void* allocate(size_t bytes, void* stream, std::string* error = nullptr);
  /** Returns a block from allocate() to the cache; unknown pointers are ignored (false). A
   * block used on other streams (record_stream) is reused only once their work is done. */
  bool free(void* ptr);
  /** Marks the live block at `ptr` as used by `stream` too (PyTorch's record_stream); false
   * for unknown pointers. Recording the block's own stream does nothing. */
  bool record_stream(void* ptr, void* stream);
  /** Number of freed blocks still waiting for work on other streams. */
  size_t num_pending_frees() const;
  /** allocated/reserved/peak/num_allocs/num_os_allocs. */
  ember_memory_stats stats() const;
  /** Returns every segment with no block in use to the source. */
  void empty_cache();
  /** Message of the last failed allocate() ("" if none failed). */
  std::string last_error() const;
  /** Number of segments currently held. */
  size_t num_segments() const;

  /** A request rounded to the block granularity. */
  static size_t round_size(size_t bytes);
  /** Size of the segment a (rounded) request of `bytes` would get. */
  static size_t segment_size(size_t bytes);

 private:
  struct Block;
  struct BlockLess {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BlockLess>;

  Block* find_free(Pool& pool, void* stream, size_t size);
  void release_cached_locked();
  void* finish_alloc_locked(Block* block, Pool& pool, size_t size);
  void free_block_locked(Block* block);
  void process_pending_locked();

  struct Pending {
    Block* block;
    std::vector<void*> events;
  };

  SegmentSource* source_;
  int device_index_;
  mutable std::mutex mu_;
  Pool small_, large_;                      // free blocks, ordered (stream, size, address)
  std::unordered_map<void*, Block*> live_;  // blocks in use, by address
  std::map<void*, Block*> segments_;        // first block of each segment
  std::vector<Pending> pending_;            // freed, waiting for other streams' work
  ember_memory_stats stats_{};
  std::string last_error_;
};

}  // namespace ember::cuda
