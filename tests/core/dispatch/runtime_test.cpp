// The backends' runtime controls (core/dispatch/runtime.cpp): memory statistics, the cache and
// the thread count, forwarded through the device-type tables.
#include "ember/dispatch/runtime.h"

#include <gtest/gtest.h>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

TEST(Runtime, MemoryStatsCountWhatADeviceHolds) {
  init();
  const int16_t id = find_device_type("reference");
  ASSERT_GE(id, 0) << "the reference backend is not loaded";
  const Device ref(id, 0);
  const uint64_t before = memory_stats(ref).allocated;
  {
    const Tensor t = empty({1 << 18}, {DType::Float32, ref});  // 1 MiB
    EXPECT_GE(memory_stats(ref).allocated, before + (1u << 20));
    EXPECT_GE(memory_stats(ref).peak_allocated, before + (1u << 20));
  }
  EXPECT_EQ(memory_stats(ref).allocated, before);
  empty_cache(ref);
  EXPECT_EQ(memory_stats(ref).allocated, before);
}

TEST(Runtime, ThreadCountIsSetOnEveryBackendAndChecked) {
  init();
  const int before = get_num_threads();
  EXPECT_GE(before, 1);
  set_num_threads(1);
  EXPECT_EQ(get_num_threads(), 1);
  set_num_threads(before);
  EXPECT_EQ(get_num_threads(), before);
  testing::expect_error([] { set_num_threads(0); },
                        {"[set_num_threads] expected at least 1 thread: got 0"});
}

}  // namespace
}  // namespace ember
