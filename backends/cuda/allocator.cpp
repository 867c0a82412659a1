#include "backends/cuda/allocator.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <vector>

namespace ember::cuda {

// Note [CUDA caching allocator]
// cudaMalloc and cudaFree synchronize the device and cost tens of microseconds, so, as in
// PyTorch's CUDACachingAllocator, memory is taken from the driver in segments and handed out
// as blocks that are cached on free:
//  - every request rounds up to a multiple of 512 B (kMinBlockSize);
//  - requests <= 1 MiB come from the small pool, whose segments are 2 MiB; larger ones from
//    the large pool, whose segments are 20 MiB for requests under 10 MiB and the request
//    rounded up to 2 MiB otherwise;
//  - a request takes the best-fitting free block of its pool (smallest size that fits, then
//    lowest address) and splits off the rest when the rest is >= 512 B (small pool) or
//    > 1 MiB (large pool); a freed block merges with free neighbours of its segment;
//  - blocks are reused only by the stream they were allocated on: a block freed by the host
//    may still be in use by queued work on its stream, and work queued later on the same
//    stream runs after it, so reuse on that stream is safe without an event;
//  - when the source refuses, every fully free cached segment is returned and the request is
//    retried once; if that fails too, the request fails with a message giving the request,
//    the memory held by tensors, the memory reserved and the device's free memory.
// In steady state (the same sizes requested again) no call reaches the source.
//
// Note [Blocks used on other streams]
// A block read or written by work on a stream other than its own (PyTorch's record_stream)
// must not be reused by its stream as soon as the host frees it: that other stream's work may
// still be queued. record_stream() adds the stream to the block's uses; free() then records
// one event per such stream (SegmentSource::record_event) and parks the block in pending_
// instead of the pool. Each allocate(), empty_cache() and out-of-memory retry first polls the
// parked blocks (event_done, never blocking) and returns those whose events have all
// completed to the pool. A parked block still counts as allocated.
struct CachingAllocator::Block {
  char* ptr;
  size_t size;
  void* stream;
  bool small;
  bool allocated = false;
  Block* prev = nullptr;  // neighbours within the same segment
  Block* next = nullptr;
  std::vector<void*> stream_uses;  // other streams that used the block (record_stream)
};

bool CachingAllocator::BlockLess::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream)
    return reinterpret_cast<uintptr_t>(a->stream) < reinterpret_cast<uintptr_t>(b->stream);
  if (a->size != b->size) return a->size < b->size;
  return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
}

namespace {

std::string format_bytes(uint64_t bytes) {
  char buf[64];
  if (bytes < (uint64_t{1} << 20))
    std::snprintf(buf, sizeof(buf), "%.2f KiB", bytes / 1024.0);
  else if (bytes < (uint64_t{1} << 30))
    std::snprintf(buf, sizeof(buf), "%.2f MiB", bytes / 1048576.0);
  else
    std::snprintf(buf, sizeof(buf), "%.2f GiB", bytes / 1073741824.0);
  return buf;
}

}  // namespace

CachingAllocator::CachingAllocator(SegmentSource* source, int device_index)
    : source_(source), device_index_(device_index) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard lock(mu_);
  for (Pending& p : pending_) {  // the owner is going away: nothing waits on these any more
    for (void* e : p.events) source_->destroy_event(e);
  }
  pending_.clear();
  release_cached_locked();
  for (auto& [base, head] : segments_) {
    for (Block* b = head; b;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
  }
}

size_t CachingAllocator::round_size(size_t bytes) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

size_t CachingAllocator::segment_size(size_t bytes) {
  if (bytes <= kSmallSize) return kSmallBuffer;
  if (bytes < kMinLargeAlloc) return kLargeBuffer;
  return (bytes + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

CachingAllocator::Block* CachingAllocator::find_free(Pool& pool, void* stream, size_t size) {
  Block key{nullptr, size, stream, false};
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  pool.erase(it);
  return b;
}

void* CachingAllocator::allocate(size_t bytes, void* stream, std::string* error) {
  if (bytes == 0) return nullptr;
  const size_t size = round_size(bytes);
  const bool small = size <= kSmallSize;
  std::lock_guard lock(mu_);
  ++stats_.num_allocs;
  process_pending_locked();
  Pool& pool = small ? small_ : large_;
  Block* b = find_free(pool, stream, size);
  if (!b) {
    const size_t seg = segment_size(size);
    void* p = source_->allocate(seg);
    if (!p) {
      process_pending_locked();
      release_cached_locked();
      p = source_->allocate(seg);
    }
    if (!p) {
      const int64_t free_dev = source_->free_bytes();
      last_error_ =
          "out of memory on cuda:" + std::to_string(device_index_) + ": tried to allocate " +
          format_bytes(bytes) + " (" + std::to_string(bytes) + " bytes, segment of " +
          format_bytes(seg) + "); " + format_bytes(stats_.allocated) + " allocated by tensors, " +
          format_bytes(stats_.reserved) + " reserved by the allocator, " +
          (free_dev >= 0 ? format_bytes(static_cast<uint64_t>(free_dev)) : std::string("unknown")) +
          " free on the device (free tensors or use smaller batches)";
      if (error) *error = last_error_;
      return nullptr;
    }
    ++stats_.num_os_allocs;
    stats_.reserved += seg;
    b = new Block{static_cast<char*>(p), seg, stream, small};
    segments_[p] = b;
  }
  const size_t rest = b->size - size;
  if (small ? rest >= kMinBlockSize : rest > kSmallSize) {
    Block* r = new Block{b->ptr + size, rest, stream, small, false, b, b->next};
    if (b->next) b->next->prev = r;
    b->next = r;
    b->size = size;
    pool.insert(r);
  }
  b->allocated = true;
  live_[b->ptr] = b;
  stats_.allocated += b->size;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  return b->ptr;
}

bool CachingAllocator::free(void* ptr) {
  if (!ptr) return false;
  std::lock_guard lock(mu_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return false;
  Block* b = it->second;
  live_.erase(it);
  if (!b->stream_uses.empty()) {  // Note [Blocks used on other streams]
    Pending p{b, {}};
    for (void* s : b->stream_uses) {
      if (void* e = source_->record_event(s)) p.events.push_back(e);
    }
    b->stream_uses.clear();
    if (!p.events.empty()) {
      pending_.push_back(std::move(p));
      return true;
    }
  }
  free_block_locked(b);
  return true;
}

bool CachingAllocator::record_stream(void* ptr, void* stream) {
  std::lock_guard lock(mu_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return false;
  Block* b = it->second;
  if (stream != b->stream &&
      std::find(b->stream_uses.begin(), b->stream_uses.end(), stream) == b->stream_uses.end()) {
    b->stream_uses.push_back(stream);
  }
  return true;
}

size_t CachingAllocator::num_pending_frees() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

void CachingAllocator::process_pending_locked() {
  for (size_t i = 0; i < pending_.size();) {
    Pending& p = pending_[i];
    bool done = true;
    for (void* e : p.events) done = done && source_->event_done(e);
    if (!done) {
      ++i;
      continue;
    }
    for (void* e : p.events) source_->destroy_event(e);
    Block* b = p.block;
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    free_block_locked(b);
  }
}

void CachingAllocator::free_block_locked(Block* b) {
  stats_.allocated -= b->size;
  b->allocated = false;
  Pool& pool = b->small ? small_ : large_;
  if (Block* p = b->prev; p && !p->allocated) {  // merge into the free block before
    pool.erase(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next) b->next->prev = p;
    delete b;
    b = p;
  }
  if (Block* n = b->next; n && !n->allocated) {  // absorb the free block after
    pool.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    delete n;
  }
  pool.insert(b);
}

void CachingAllocator::release_cached_locked() {
  for (Pool* pool : {&small_, &large_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (b->prev || b->next) {  // part of a segment still in use
        ++it;
        continue;
      }
      source_->release(b->ptr, b->size);
      stats_.reserved -= b->size;
      segments_.erase(b->ptr);
      it = pool->erase(it);
      delete b;
    }
  }
}

ember_memory_stats CachingAllocator::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mu_);
  process_pending_locked();
  release_cached_locked();
}

std::string CachingAllocator::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

size_t CachingAllocator::num_segments() const {
  std::lock_guard lock(mu_);
  return segments_.size();
}

}  // namespace ember::cuda
