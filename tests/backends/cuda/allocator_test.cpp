// The CUDA caching allocator's logic, run on the CPU against a fake segment source.
#include "backends/cuda/allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/backends/cuda/fake_source.h"

namespace ember::cuda {
namespace {

constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;
void* const kStream0 = nullptr;
void* const kStream1 = reinterpret_cast<void*>(0x1);

TEST(CudaAllocator, RoundsRequestsTo512Bytes) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::round_size(1000 * kKiB + 1), 1000 * kKiB + 512);
}

TEST(CudaAllocator, SegmentSizesFollowThePoolRules) {
  EXPECT_EQ(CachingAllocator::segment_size(512), 2 * kMiB);       // small pool
  EXPECT_EQ(CachingAllocator::segment_size(1 * kMiB), 2 * kMiB);  // still small
  EXPECT_EQ(CachingAllocator::segment_size(1 * kMiB + 512), 20 * kMiB);
  EXPECT_EQ(CachingAllocator::segment_size(9 * kMiB), 20 * kMiB);
  EXPECT_EQ(CachingAllocator::segment_size(10 * kMiB), 10 * kMiB);  // own segment, 2 MiB multiple
  EXPECT_EQ(CachingAllocator::segment_size(11 * kMiB + 1), 12 * kMiB);
}

TEST(CudaAllocator, SmallRequestsShareOneTwoMiBSegment) {
  FakeSource src;
  CachingAllocator a(&src);
  char* p = static_cast<char*>(a.allocate(100, kStream0));
  char* q = static_cast<char*>(a.allocate(1000, kStream0));
  ASSERT_NE(p, nullptr);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(src.allocs, 1);
  EXPECT_EQ(src.live.begin()->second, 2 * kMiB);
  EXPECT_EQ(q, p + 512);  // split from the same segment, right after p's 512-byte block
  const ember_memory_stats s = a.stats();
  EXPECT_EQ(s.allocated, 512u + 1024u);
  EXPECT_EQ(s.reserved, 2 * kMiB);
  EXPECT_EQ(s.num_allocs, 2u);
  EXPECT_EQ(s.num_os_allocs, 1u);
  a.free(p);
  a.free(q);
}

TEST(CudaAllocator, LargeRequestsUseTheLargePool) {
  FakeSource src;
  CachingAllocator a(&src);
  void* small = a.allocate(4 * kKiB, kStream0);
  void* mid = a.allocate(3 * kMiB, kStream0);   // 20 MiB segment, split (rest 17 MiB > 1 MiB)
  void* mid2 = a.allocate(5 * kMiB, kStream0);  // from the rest of that segment
  void* big = a.allocate(33 * kMiB, kStream0);  // its own 34 MiB segment
  EXPECT_EQ(src.allocs, 3);
  EXPECT_EQ(static_cast<char*>(mid2), static_cast<char*>(mid) + 3 * kMiB);
  EXPECT_EQ(a.stats().reserved, 2 * kMiB + 20 * kMiB + 34 * kMiB);
  for (void* p : {small, mid, mid2, big}) EXPECT_TRUE(a.free(p));
  EXPECT_EQ(a.stats().allocated, 0u);
}

TEST(CudaAllocator, LargeBlockIsNotSplitForASmallRemainder) {
  FakeSource src;
  CachingAllocator a(&src);
  // 19.5 MiB gets a 20 MiB segment; the 0.5 MiB rest is too small to split off in the large
  // pool, so the whole segment is one block and counts as allocated.
  void* p = a.allocate(19 * kMiB + 512 * kKiB, kStream0);
  EXPECT_EQ(a.stats().allocated, 20 * kMiB);
  a.free(p);
  void* q = a.allocate(19 * kMiB, kStream0);  // reuses it whole (rest 1 MiB, not > 1 MiB)
  EXPECT_EQ(q, p);
  EXPECT_EQ(a.stats().allocated, 20 * kMiB);
  EXPECT_EQ(src.allocs, 1);
  a.free(q);
}

TEST(CudaAllocator, BestFitPicksTheSmallestFreeBlock) {
  FakeSource src;
  CachingAllocator a(&src);
  void* b1 = a.allocate(4 * kKiB, kStream0);
  void* s1 = a.allocate(512, kStream0);  // separators keep the freed blocks apart
  void* b2 = a.allocate(2 * kKiB, kStream0);
  void* s2 = a.allocate(512, kStream0);
  a.free(b1);
  a.free(b2);
  EXPECT_EQ(a.allocate(2 * kKiB, kStream0), b2);  // exact fit beats the bigger block
  EXPECT_EQ(a.allocate(1 * kKiB, kStream0), b1);  // then the 4 KiB block, split
  EXPECT_EQ(src.allocs, 1);
  (void)s1;
  (void)s2;
}

TEST(CudaAllocator, FreedNeighboursMergeBackIntoOneBlock) {
  FakeSource src;
  CachingAllocator a(&src);
  void* p = a.allocate(512 * kKiB, kStream0);
  void* q = a.allocate(512 * kKiB, kStream0);
  void* r = a.allocate(512 * kKiB, kStream0);
  EXPECT_EQ(src.allocs, 1);
  a.free(p);
  a.free(r);  // merges with the free tail of the segment
  a.free(q);  // merges with both neighbours: the segment is one free block again
  // ... which a request for the whole segment can now take without a new segment.
  void* whole = a.allocate(1 * kMiB, kStream0);
  EXPECT_EQ(whole, p);
  EXPECT_EQ(src.allocs, 1);
  a.free(whole);
  a.empty_cache();  // and only a fully merged segment can be released
  EXPECT_EQ(src.releases, 1);
  EXPECT_EQ(a.num_segments(), 0u);
}

TEST(CudaAllocator, SteadyStateNeedsNoNewSegments) {
  FakeSource src;
  CachingAllocator a(&src);
  const size_t sizes[] = {512, 3000, 64 * kKiB, 1 * kMiB, 4 * kMiB, 12 * kMiB, 40 * kMiB};
  for (int iter = 0; iter < 5; ++iter) {
    std::vector<void*> ptrs;
    for (size_t s : sizes) ptrs.push_back(a.allocate(s, kStream0));
    for (void* p : ptrs) ASSERT_NE(p, nullptr);
    for (void* p : ptrs) a.free(p);
    if (iter == 0) src.refuse_all = true;  // any further segment request would fail the test
  }
  const ember_memory_stats s = a.stats();
  EXPECT_EQ(s.num_allocs, 5u * std::size(sizes));
  EXPECT_EQ(s.num_os_allocs, static_cast<uint64_t>(src.live.size()));
  EXPECT_EQ(s.allocated, 0u);
  EXPECT_EQ(src.releases, 0);
}

TEST(CudaAllocator, BlocksAreReusedOnlyOnTheirStream) {
  FakeSource src;
  CachingAllocator a(&src);
  void* p = a.allocate(4 * kKiB, kStream0);
  a.free(p);
  void* q = a.allocate(4 * kKiB, kStream1);  // another stream: a segment of its own
  EXPECT_NE(q, p);
  EXPECT_EQ(src.allocs, 2);
  void* r = a.allocate(4 * kKiB, kStream0);  // back on stream 0: the cached block
  EXPECT_EQ(r, p);
  EXPECT_EQ(src.allocs, 2);
  a.free(q);
  a.free(r);
}

TEST(CudaAllocator, OutOfMemoryFreesTheCacheAndRetriesOnce) {
  FakeSource src;
  src.capacity = 40 * kMiB;
  CachingAllocator a(&src);
  void* p = a.allocate(30 * kMiB, kStream0);  // a 30 MiB segment
  ASSERT_NE(p, nullptr);
  a.free(p);  // cached, still reserved
  EXPECT_EQ(a.stats().reserved, 30 * kMiB);
  // 32 MiB does not fit the cached block and 30 + 32 MiB exceed the capacity: the cache is
  // released and the retry succeeds.
  void* q = a.allocate(32 * kMiB, kStream0);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(src.releases, 1);
  EXPECT_EQ(a.stats().reserved, 32 * kMiB);
  EXPECT_EQ(a.last_error(), "");
  a.free(q);
}

TEST(CudaAllocator, OutOfMemoryMessageGivesTheNumbers) {
  FakeSource src;
  src.capacity = 24 * kMiB;
  CachingAllocator a(&src, /*device_index=*/1);
  void* held = a.allocate(3 * kMiB, kStream0);  // 20 MiB segment, 3 MiB allocated
  ASSERT_NE(held, nullptr);
  const int before = src.allocs;
  EXPECT_EQ(a.allocate(50 * kMiB, kStream0), nullptr);
  EXPECT_EQ(src.allocs, before + 2);  // first try, then the retry after freeing the cache
  const std::string msg = a.last_error();
  EXPECT_NE(msg.find("out of memory on cuda:1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tried to allocate 50.00 MiB"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3.00 MiB allocated"), std::string::npos) << msg;
  EXPECT_NE(msg.find("20.00 MiB reserved"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4.00 MiB free"), std::string::npos) << msg;
  EXPECT_EQ(a.stats().allocated, 3 * kMiB);  // a failed request changes nothing
  a.free(held);
}

TEST(CudaAllocator, StatsTrackPeakAndEmptyCacheReleasesOnlyFreeSegments) {
  FakeSource src;
  CachingAllocator a(&src);
  void* p = a.allocate(600 * kKiB, kStream0);
  void* q = a.allocate(12 * kMiB, kStream0);
  void* r = a.allocate(512, kStream0);
  EXPECT_EQ(a.stats().peak_allocated, 600 * kKiB + 12 * kMiB + 512);
  a.free(q);
  a.free(r);
  ember_memory_stats s = a.stats();
  EXPECT_EQ(s.allocated, 600 * kKiB);
  EXPECT_EQ(s.peak_allocated, 600 * kKiB + 12 * kMiB + 512);
  EXPECT_EQ(s.reserved, 2 * kMiB + 12 * kMiB);
  a.empty_cache();  // the 12 MiB segment goes; the small one still holds p
  s = a.stats();
  EXPECT_EQ(s.reserved, 2 * kMiB);
  EXPECT_EQ(src.releases, 1);
  a.free(p);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, 0u);
  EXPECT_EQ(src.live.size(), 0u);
}

TEST(CudaAllocator, ZeroBytesAndUnknownPointers) {
  FakeSource src;
  CachingAllocator a(&src);
  EXPECT_EQ(a.allocate(0, kStream0), nullptr);
  EXPECT_EQ(src.allocs, 0);
  int x = 0;
  EXPECT_FALSE(a.free(&x));
  EXPECT_FALSE(a.free(nullptr));
}

// Note [Blocks used on other streams]
TEST(CudaAllocator, BlockUsedOnAnotherStreamWaitsForItsWorkBeforeReuse) {
  FakeSource src;
  CachingAllocator a(&src);
  void* p = a.allocate(4 * kKiB, kStream0);
  EXPECT_TRUE(a.record_stream(p, kStream1));
  EXPECT_TRUE(a.record_stream(p, kStream1));  // recorded once
  EXPECT_TRUE(a.free(p));
  EXPECT_FALSE(a.free(p));  // no longer live
  ASSERT_EQ(src.event_streams.size(), 1u);
  EXPECT_EQ(src.event_streams[0], kStream1);
  EXPECT_EQ(a.num_pending_frees(), 1u);
  EXPECT_EQ(a.stats().allocated, 4 * kKiB);  // still in use by stream 1's work

  void* q = a.allocate(4 * kKiB, kStream0);  // the event is not done: p is not handed out
  EXPECT_NE(q, p);
  EXPECT_EQ(a.num_pending_frees(), 1u);

  src.complete_events();
  void* r = a.allocate(4 * kKiB, kStream0);  // polled: p is back in the pool, the best fit
  EXPECT_EQ(r, p);
  EXPECT_EQ(a.num_pending_frees(), 0u);
  EXPECT_EQ(src.events_destroyed, 1);
  EXPECT_EQ(a.stats().allocated, 8 * kKiB);
  a.free(q);
  a.free(r);
  EXPECT_EQ(src.allocs, 1);  // everything came from the one small segment
}

TEST(CudaAllocator, RecordingTheOwnStreamOrUnknownMemoryDefersNothing) {
  FakeSource src;
  CachingAllocator a(&src);
  void* p = a.allocate(kKiB, kStream1);
  EXPECT_TRUE(a.record_stream(p, kStream1));  // its own stream
  int dummy = 0;
  EXPECT_FALSE(a.record_stream(&dummy, kStream0));
  EXPECT_FALSE(a.record_stream(nullptr, kStream0));
  EXPECT_TRUE(a.free(p));
  EXPECT_TRUE(src.event_streams.empty());
  EXPECT_EQ(a.num_pending_frees(), 0u);
  EXPECT_EQ(a.allocate(kKiB, kStream1), p);
}

TEST(CudaAllocator, SourceWithoutEventsReusesAtOnce) {
  FakeSource src;
  src.with_events = false;
  CachingAllocator a(&src);
  void* p = a.allocate(kKiB, kStream0);
  a.record_stream(p, kStream1);
  a.free(p);
  EXPECT_EQ(a.num_pending_frees(), 0u);
  EXPECT_EQ(a.stats().allocated, 0u);
  EXPECT_EQ(a.allocate(kKiB, kStream0), p);
}

TEST(CudaAllocator, EmptyCacheKeepsSegmentsWithPendingBlocksUntilTheirWorkIsDone) {
  FakeSource src;
  CachingAllocator a(&src);
  void* p = a.allocate(kKiB, kStream0);
  void* q = a.allocate(kKiB, kStream0);
  a.record_stream(p, kStream1);
  a.record_stream(q, reinterpret_cast<void*>(0x2));
  a.free(p);
  a.free(q);
  EXPECT_EQ(src.event_streams.size(), 2u);
  a.empty_cache();
  EXPECT_EQ(a.num_segments(), 1u);  // both blocks still wait
  EXPECT_EQ(src.releases, 0);
  src.complete_events();
  a.empty_cache();
  EXPECT_EQ(a.num_segments(), 0u);
  EXPECT_EQ(src.releases, 1);
  EXPECT_EQ(src.events_destroyed, 2);
  EXPECT_EQ(a.stats().allocated, 0u);
  EXPECT_EQ(a.stats().reserved, 0u);
}

TEST(CudaAllocator, OutOfMemoryRetryReclaimsFinishedPendingBlocks) {
  FakeSource src;
  src.capacity = 20 * kMiB;
  CachingAllocator a(&src);
  void* p = a.allocate(8 * kMiB, kStream0);  // the whole 20 MiB capacity as one segment
  a.record_stream(p, kStream1);
  a.free(p);
  src.complete_events();
  // A request for another stream needs a new segment: the retry polls the finished block,
  // returns the now free segment and succeeds.
  EXPECT_NE(a.allocate(8 * kMiB, kStream1), nullptr);
  EXPECT_EQ(src.releases, 1);
}

}  // namespace
}  // namespace ember::cuda
