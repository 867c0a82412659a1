// A SegmentSource for the CUDA allocators' CPU-only tests: host memory as "segments", counted
// calls, refusals on request, and events that complete only when told.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <vector>

#include "backends/cuda/allocator.h"

namespace ember::cuda {

// Hands out host memory as "segments", counts calls and can be told to refuse.
class FakeSource final : public SegmentSource {
 public:
  ~FakeSource() override {
    for (auto& [p, n] : live) std::free(p);
  }
  void* allocate(size_t bytes) override {
    ++allocs;
    if (refuse_all || (refuse_next > 0 && refuse_next--) || held + bytes > capacity) return nullptr;
    void* p = std::aligned_alloc(512, bytes);
    live[p] = bytes;
    held += bytes;
    return p;
  }
  void release(void* ptr, size_t bytes) override {
    ++releases;
    EXPECT_EQ(live.at(ptr), bytes);
    live.erase(ptr);
    held -= bytes;
    std::free(ptr);
  }
  int64_t free_bytes() override { return static_cast<int64_t>(capacity - held); }
  // Events: each one stays incomplete until complete_events(); `with_events = false` behaves
  // like a source without events (the base class).
  void* record_event(void* stream) override {
    if (!with_events) return SegmentSource::record_event(stream);
    event_streams.push_back(stream);
    void* e = reinterpret_cast<void*>(static_cast<uintptr_t>(++next_event) << 4);
    incomplete.insert(e);
    outstanding.insert(e);
    return e;
  }
  bool event_done(void* event) override { return incomplete.count(event) == 0; }
  void destroy_event(void* event) override {
    EXPECT_EQ(outstanding.erase(event), 1u) << "destroyed twice or unknown";
    EXPECT_EQ(incomplete.count(event), 0u) << "destroyed before completing";
    ++events_destroyed;
  }
  void complete_events() { incomplete.clear(); }

  int allocs = 0, releases = 0, refuse_next = 0;
  bool refuse_all = false;
  size_t held = 0, capacity = size_t{1} << 30;
  std::map<void*, size_t> live;
  bool with_events = true;
  uintptr_t next_event = 0;
  int events_destroyed = 0;
  std::vector<void*> event_streams;
  std::set<void*> incomplete, outstanding;
};

}  // namespace ember::cuda
