// The pinned host memory cache's logic (Note [Caching pinned host memory]), run on the CPU
// against a fake source whose events complete only when told.
#include "backends/cuda/host_allocator.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/backends/cuda/fake_source.h"

namespace ember::cuda {
namespace {

void* const kStream = reinterpret_cast<void*>(0x10);

TEST(CudaHostAllocator, RoundsToPowersOfTwoOfAtLeastOnePage) {
  EXPECT_EQ(HostAllocator::round_size(1), 4096u);
  EXPECT_EQ(HostAllocator::round_size(4096), 4096u);
  EXPECT_EQ(HostAllocator::round_size(4097), 8192u);
  EXPECT_EQ(HostAllocator::round_size(3u << 20), 4u << 20);
}

TEST(CudaHostAllocator, ReusesAFreedBlockOfTheSameSizeWithoutTheSource) {
  FakeSource src;
  HostAllocator a(&src);
  void* p = a.allocate(5000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(src.allocs, 1);
  EXPECT_TRUE(a.free(p));
  void* q = a.allocate(8000);  // rounds to the same 8 KiB block
  EXPECT_EQ(q, p);
  EXPECT_EQ(src.allocs, 1);
  void* r = a.allocate(9000);  // 16 KiB: a new block
  EXPECT_NE(r, p);
  EXPECT_EQ(src.allocs, 2);
  const ember_memory_stats s = a.stats();
  EXPECT_EQ(s.allocated, 8192u + 16384u);
  EXPECT_EQ(s.reserved, 8192u + 16384u);
  EXPECT_EQ(s.num_allocs, 3u);
  EXPECT_EQ(s.num_os_allocs, 2u);
  a.free(q);
  a.free(r);
  EXPECT_EQ(a.stats().allocated, 0u);
  EXPECT_EQ(a.stats().peak_allocated, 8192u + 16384u);
}

TEST(CudaHostAllocator, ABlockInUseByACopyIsNotReusedUntilTheCopyIsDone) {
  FakeSource src;
  HostAllocator a(&src);
  char* p = static_cast<char*>(a.allocate(4096));
  ASSERT_NE(p, nullptr);
  // A view's pointer inside the block is found too.
  EXPECT_TRUE(a.record_use(p + 100, kStream));
  ASSERT_EQ(src.event_streams.size(), 1u);
  EXPECT_EQ(src.event_streams[0], kStream);
  EXPECT_TRUE(a.free(p));
  EXPECT_EQ(a.num_pending_frees(), 1u);
  void* q = a.allocate(4096);  // the copy may still read p: another block
  EXPECT_NE(q, p);
  EXPECT_EQ(src.allocs, 2);
  src.complete_events();
  void* r = a.allocate(4096);  // now p is free again
  EXPECT_EQ(r, p);
  EXPECT_EQ(a.num_pending_frees(), 0u);
  EXPECT_EQ(src.events_destroyed, 1);
  a.free(q);
  a.free(r);
}

TEST(CudaHostAllocator, RepeatedCopiesKeepOnlyPendingEvents) {
  FakeSource src;
  HostAllocator a(&src);
  void* p = a.allocate(4096);
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(a.record_use(p, kStream));
    src.complete_events();  // each copy finished before the next is queued
  }
  EXPECT_EQ(src.events_destroyed, 9);  // all but the last were dropped when the next came
  EXPECT_EQ(src.outstanding.size(), 1u);
  a.free(p);
  EXPECT_EQ(a.num_pending_frees(), 1u);  // its events are polled at the next allocate
  void* q = a.allocate(4096);
  EXPECT_EQ(q, p);
  EXPECT_EQ(src.outstanding.size(), 0u);
  a.free(q);
}

TEST(CudaHostAllocator, UnknownPointersAreNotTracked) {
  FakeSource src;
  HostAllocator a(&src);
  int local = 0;
  EXPECT_FALSE(a.contains(&local));
  EXPECT_FALSE(a.record_use(&local, kStream));
  EXPECT_FALSE(a.free(&local));
  EXPECT_TRUE(src.event_streams.empty());
  char* p = static_cast<char*>(a.allocate(4096));
  EXPECT_TRUE(a.contains(p + 4095));
  EXPECT_FALSE(a.contains(p + 4096));  // one past the block
  a.free(p);
  EXPECT_FALSE(a.contains(p));  // freed blocks are not live
  EXPECT_FALSE(a.record_use(p, kStream));
}

TEST(CudaHostAllocator, EmptiesTheCacheAndRetriesWhenTheSourceRefuses) {
  FakeSource src;
  src.capacity = 3 * 4096;
  HostAllocator a(&src);
  void* p = a.allocate(8192);
  a.free(p);  // cached: 8 KiB of the 12 KiB capacity
  EXPECT_EQ(src.held, 8192u);
  void* q = a.allocate(8192 + 1);  // 16 KiB does not fit beside the cached block, nor alone
  EXPECT_EQ(q, nullptr);
  EXPECT_EQ(src.releases, 1);  // the cache was emptied before giving up
  std::string why;
  void* r = a.allocate(3 * 4096 + 1, &why);
  EXPECT_EQ(r, nullptr);
  EXPECT_NE(why.find("out of pinned host memory"), std::string::npos) << why;
  EXPECT_NE(why.find("12289 bytes"), std::string::npos) << why;
  void* s = a.allocate(8192);  // fits once the cache is gone
  EXPECT_NE(s, nullptr);
  a.free(s);
  a.empty_cache();
  EXPECT_EQ(src.held, 0u);
  EXPECT_EQ(a.stats().reserved, 0u);
}

}  // namespace
}  // namespace ember::cuda
