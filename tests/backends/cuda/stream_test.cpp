// The stream helpers' error reporting (backends/cuda/stream.h, Note [Asynchronous errors name
// the last launch]): a failed wait names what waited, the device and the last op launched
// there. Needs the CUDA runtime library; with a GPU the wait succeeds, without one it fails
// with the driver's error and the message is checked.
#include "backends/cuda/stream.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>

namespace ember::cuda {
namespace {

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

}  // namespace
}  // namespace ember::cuda
