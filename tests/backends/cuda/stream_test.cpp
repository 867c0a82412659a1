// The stream helpers (backends/cuda/stream.h): a failed wait names what waited, the device and
// the last op launched there (Note [Asynchronous errors name the last launch]); a kernel runs
// on the call's stream, else the thread's current one (Note [The kernel's stream]); a device
// guard gives the caller's device back (Note [Device guards], against a fake runtime). Needs
// the CUDA runtime library; with a GPU the wait succeeds, without one it fails with the
// driver's error and the message is checked.
#include "backends/cuda/stream.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

namespace ember::cuda {
namespace {

// A fake runtime for BasicDeviceGuard: one thread's current device, the devices with a primary
// context, and the switches made.
struct FakeDevices {
  static inline int current_device = 0;
  static inline bool readable = true;
  static inline std::set<int> contexts;
  static inline int switches = 0;
  static bool current(int* index) {
    if (readable) *index = current_device;
    return readable;
  }
  static void set(int index) {
    current_device = index;
    ++switches;
  }
  static bool has_context(int index) { return contexts.count(index) > 0; }
  static void reset(int device, std::set<int> with_context) {
    current_device = device;
    readable = true;
    contexts = std::move(with_context);
    switches = 0;
  }
};
using FakeGuard = BasicDeviceGuard<FakeDevices>;

TEST(CudaDeviceGuard, RestoresTheCallersDeviceAfterASwitchInside) {
  FakeDevices::reset(1, {0, 1, 2});
  {
    const FakeGuard guard;
    EXPECT_EQ(guard.original(), 1);
    FakeDevices::set(2);  // what set_device does inside an entry point
    {
      const FakeGuard inner;  // nested guards: the inner one restores its own entry device
      FakeDevices::set(0);
    }
    EXPECT_EQ(FakeDevices::current_device, 2);
  }
  EXPECT_EQ(FakeDevices::current_device, 1);
  EXPECT_EQ(FakeDevices::switches, 4);
}

TEST(CudaDeviceGuard, SwitchesNothingWhenTheDeviceDidNotChange) {
  FakeDevices::reset(3, {3});
  { const FakeGuard guard; }
  EXPECT_EQ(FakeDevices::switches, 0);
}

TEST(CudaDeviceGuard, LeavesADeviceWithoutAPrimaryContextAlone) {
  // Device 0 was never used in the process: restoring it would create a context there.
  FakeDevices::reset(0, {2});
  {
    const FakeGuard guard;
    FakeDevices::set(2);
  }
  EXPECT_EQ(FakeDevices::current_device, 2);
  EXPECT_EQ(FakeDevices::switches, 1);
}

TEST(CudaDeviceGuard, DoesNothingWithoutADriver) {
  FakeDevices::reset(0, {0});
  FakeDevices::readable = false;
  {
    const FakeGuard guard;
    EXPECT_EQ(guard.original(), -1);
  }
  EXPECT_EQ(FakeDevices::switches, 0);
  // The real guard, on whatever this machine has: it never fails, and leaves the device as it
  // found it.
  int before = -1;
  const bool have = CudaDeviceOps::current(&before);
  { const DeviceGuard guard; }
  int after = -1;
  EXPECT_EQ(CudaDeviceOps::current(&after), have);
  EXPECT_EQ(after, before);
  // Without a driver the runtime answers every call, cudaGetLastError included, with its error.
  if (have) {
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the guard left a runtime error behind";
  }
}

bool have_device() {
  int n = 0;
  const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  cudaGetLastError();
  return ok;
}

TEST(CudaStream, LastLaunchIsNoneUntilAnOpIsLaunched) {
  EXPECT_EQ(std::string(last_launch(0)), "(none)");
  EXPECT_EQ(std::string(last_launch(-1)), "(none)");
  EXPECT_EQ(std::string(last_launch(kMaxDevices)), "(none)");
  note_launch("sort");
  // Recorded for the calling thread's current device, which needs a driver to be known.
  EXPECT_EQ(std::string(last_launch(0)), have_device() ? "sort" : "(none)");
}

TEST(CudaStream, FailedWaitNamesTheWaiterTheDeviceAndTheLastLaunch) {
  const Status s = wait_stream(0, nullptr, "copy to the host");
  if (have_device()) {
    EXPECT_TRUE(s.ok()) << s.message;
    return;
  }
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code, EMBER_ERR_DEVICE);
  EXPECT_NE(s.message.find("[cuda] copy to the host on cuda:0 failed: "), std::string::npos)
      << s.message;
  EXPECT_NE(s.message.find("the last op launched on cuda:0 was '(none)'"), std::string::npos)
      << s.message;
}

TEST(CudaStream, AKernelRunsOnTheCallsStreamElseTheCurrentOne) {
  ember_kernel_call call{};
  call.struct_size = sizeof(call);
  // Set by the core (ABI 1.4): taken as it is, without asking the runtime.
  int fake_stream = 0;
  call.stream = &fake_stream;
  cudaStream_t s = nullptr;
  ASSERT_TRUE(kernel_stream(&call, 0, &s).ok());
  EXPECT_EQ(static_cast<void*>(s), static_cast<void*>(&fake_stream));
  // NULL (a core before 1.4): the thread's current stream, or the lookup's error.
  call.stream = nullptr;
  cudaStream_t current = nullptr;
  const Status want = current_stream(0, &current);
  s = nullptr;
  const Status got = kernel_stream(&call, 0, &s);
  EXPECT_EQ(got.code, want.code) << got.message;
  EXPECT_EQ(got.message, want.message);
  if (want.ok()) {
    EXPECT_EQ(s, current);
  }
}

}  // namespace
}  // namespace ember::cuda
