#include "backends/cuda/host_allocator.h"

#include <algorithm>
#include <bit>

namespace ember::cuda {

// Note [Caching pinned host memory]
// cudaHostAlloc and cudaFreeHost cost milliseconds (pages are locked and mapped for the GPU) and
// cudaFreeHost synchronizes the device, so, as PyTorch's CachingHostAllocator does, freed blocks
// are cached and handed out again:
//  - every request rounds up to a power of two (at least 4 KiB), and a request takes a free
//    block of exactly that size, so blocks are never split and a block's address range is the
//    unit that copies are tracked by;
//  - an asynchronous copy reading or writing a block records an event on its stream
//    (record_use); a freed block with uses still pending waits in pending_ and joins the free
//    list only once all its events completed (polled, never waited for, at each allocate);
//  - when the source refuses, the free blocks are returned to it and the request retried once.
// A view's data pointer may lie anywhere inside its block, so lookups find the block whose range
// contains the address (blocks_ is ordered by address).

namespace {
constexpr size_t kMinHostBlock = 4096;
}  // namespace

HostAllocator::HostAllocator(SegmentSource* source) : source_(source) {}

HostAllocator::~HostAllocator() {
  std::lock_guard lock(mu_);
  for (auto& [ptr, b] : blocks_) {
    for (void* e : b.events) source_->destroy_event(e);
    b.events.clear();
  }
  pending_.clear();
  release_free_locked();
}

size_t HostAllocator::round_size(size_t bytes) {
  if (bytes <= kMinHostBlock) return kMinHostBlock;
  if (bytes > (size_t{1} << 62)) return bytes;  // no power of two above; the source refuses
  return std::bit_ceil(bytes);
}

void* HostAllocator::allocate(size_t bytes, std::string* error) {
  if (bytes == 0) return nullptr;
  const size_t size = round_size(bytes);
  std::lock_guard lock(mu_);
  ++stats_.num_allocs;
  process_pending_locked();
  const char* p = nullptr;
  if (auto it = free_.find(size); it != free_.end()) {
    p = it->second;
    free_.erase(it);
  } else {
    void* fresh = source_->allocate(size);
    if (!fresh) {
      release_free_locked();
      fresh = source_->allocate(size);
    }
    if (!fresh) {
      if (error) {
        *error = "out of pinned host memory: could not page-lock " + std::to_string(bytes) +
                 " bytes (block of " + std::to_string(size) + "); " +
                 std::to_string(stats_.allocated) + " bytes in use, " +
                 std::to_string(stats_.reserved) + " reserved";
      }
      return nullptr;
    }
    ++stats_.num_os_allocs;
    stats_.reserved += size;
    p = static_cast<const char*>(fresh);
    blocks_[p].size = size;
  }
  blocks_[p].allocated = true;
  stats_.allocated += size;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  return const_cast<char*>(p);
}

bool HostAllocator::free(void* ptr) {
  if (!ptr) return false;
  std::lock_guard lock(mu_);
  auto it = blocks_.find(static_cast<const char*>(ptr));
  if (it == blocks_.end() || !it->second.allocated) return false;
  Block& b = it->second;
  b.allocated = false;
  stats_.allocated -= b.size;
  if (b.events.empty()) {
    free_.emplace(b.size, it->first);
  } else {
    pending_.push_back(it->first);
  }
  return true;
}

bool HostAllocator::record_use(const void* ptr, void* stream) {
  const char* p = static_cast<const char*>(ptr);
  std::lock_guard lock(mu_);
  auto it = blocks_.upper_bound(p);
  if (it == blocks_.begin()) return false;
  --it;
  Block& b = it->second;
  if (!b.allocated || p >= it->first + b.size) return false;
  // A buffer copied from again and again keeps only the uses that may still be pending.
  std::erase_if(b.events, [&](void* e) {
    if (!source_->event_done(e)) return false;
    source_->destroy_event(e);
    return true;
  });
  if (void* e = source_->record_event(stream)) b.events.push_back(e);
  return true;
}

bool HostAllocator::contains(const void* ptr) const {
  const char* p = static_cast<const char*>(ptr);
  std::lock_guard lock(mu_);
  auto it = blocks_.upper_bound(p);
  if (it == blocks_.begin()) return false;
  --it;
  return it->second.allocated && p < it->first + it->second.size;
}

void HostAllocator::process_pending_locked() {
  for (size_t i = 0; i < pending_.size();) {
    Block& b = blocks_.at(pending_[i]);
    bool done = true;
    for (void* e : b.events) done = done && source_->event_done(e);
    if (!done) {
      ++i;
      continue;
    }
    for (void* e : b.events) source_->destroy_event(e);
    b.events.clear();
    free_.emplace(b.size, pending_[i]);
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void HostAllocator::release_free_locked() {
  for (const auto& [size, ptr] : free_) {
    source_->release(const_cast<char*>(ptr), size);
    stats_.reserved -= size;
    blocks_.erase(ptr);
  }
  free_.clear();
}

void HostAllocator::empty_cache() {
  std::lock_guard lock(mu_);
  process_pending_locked();
  release_free_locked();
}

ember_memory_stats HostAllocator::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

size_t HostAllocator::num_pending_frees() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

}  // namespace ember::cuda
