// The device error record (backends/cuda/device_error.h), on the CPU: its layout, the message of
// a recorded error, and the whole protocol of Note [Index errors reported at the next
// synchronization] run on host memory (report_index_error is the kernels' own function, compiled
// for the host here): the first report wins, the host takes it once, and later launches can
// report again. The device side runs in cuda_gpu_tests (CudaRuntime.IndexErrors*).
#include "backends/cuda/device_error.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "backends/cuda/stream.h"

namespace ember::cuda {
namespace {

TEST(CudaDeviceError, TheRecordIs32BytesWithFixedOffsets) {
  EXPECT_EQ(sizeof(DeviceErrorRecord), 32u);
  EXPECT_EQ(offsetof(DeviceErrorRecord, state), 0u);
  EXPECT_EQ(offsetof(DeviceErrorRecord, op), 4u);
  EXPECT_EQ(offsetof(DeviceErrorRecord, index), 8u);
  EXPECT_EQ(offsetof(DeviceErrorRecord, dim), 16u);
  EXPECT_EQ(offsetof(DeviceErrorRecord, bound), 24u);
}

TEST(CudaDeviceError, TheMessageNamesTheOpTheIndexTheDimAndTheSize) {
  const DeviceErrorRecord r{1, static_cast<int32_t>(DeviceErrorOp::kIndexSelect), 7, 0, 5};
  EXPECT_EQ(format_device_error(r, 0),
            "[index_select] index 7 is out of bounds for dimension 0 with size 5 (reported by "
            "cuda:0 at the next synchronization; the output of that index_select is not valid)");
  const DeviceErrorRecord g{3, static_cast<int32_t>(DeviceErrorOp::kScatterAdd), -1, 2, 9};
  EXPECT_NE(format_device_error(g, 3).find("[scatter_add] index -1 is out of bounds for dimension "
                                           "2 with size 9 (reported by cuda:3"),
            std::string::npos);
  EXPECT_STREQ(device_error_op_name(static_cast<int32_t>(DeviceErrorOp::kGather)), "gather");
  EXPECT_STREQ(device_error_op_name(static_cast<int32_t>(DeviceErrorOp::kScatter)), "scatter");
  EXPECT_STREQ(device_error_op_name(0), "unknown op");
  EXPECT_STREQ(device_error_op_name(1234), "unknown op");
}

// The device's claim word and the mapped record, both plain host memory here.
struct HostLog {
  uint32_t claim = 0;
  DeviceErrorRecord record{};
  DeviceErrorLog log{&claim, &record, &record};
};

TEST(CudaDeviceError, TheFirstReportWinsAndIsTakenOnce) {
  HostLog h;
  EXPECT_TRUE(h.log.take(0).ok()) << "nothing recorded yet";
  const DeviceErrorSlot slot = h.log.slot(DeviceErrorOp::kGather);
  EXPECT_EQ(slot.generation, 0u);
  report_index_error(slot, 9, 1, 4);
  report_index_error(slot, 11, 1, 4);  // the same launch, a later bad index: dropped
  const Status first = h.log.take(2);
  EXPECT_EQ(first.code, EMBER_ERR_INDEX);
  EXPECT_NE(first.message.find("[gather] index 9 is out of bounds for dimension 1 with size 4 "
                               "(reported by cuda:2"),
            std::string::npos)
      << first.message;
  EXPECT_TRUE(h.log.take(2).ok()) << "an error is reported once";
  // A kernel launched before the error was taken keeps the old generation: its report is
  // dropped (the claim is still held).
  report_index_error(slot, 12, 1, 4);
  EXPECT_TRUE(h.log.take(2).ok());
  // Launches after the take report again, with no device work in between.
  const DeviceErrorSlot next = h.log.slot(DeviceErrorOp::kScatter);
  EXPECT_EQ(next.generation, 1u);
  report_index_error(next, -3, 0, 6);
  const Status second = h.log.take(2);
  EXPECT_EQ(second.code, EMBER_ERR_INDEX);
  EXPECT_NE(second.message.find("[scatter] index -3 is out of bounds for dimension 0 with size 6"),
            std::string::npos)
      << second.message;
  EXPECT_TRUE(h.log.take(2).ok());
}

TEST(CudaDeviceError, ConcurrentReportsNeverMixTheirFields) {
  HostLog h;
  const DeviceErrorSlot slot = h.log.slot(DeviceErrorOp::kIndexSelect);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i)
        report_index_error(slot, 1000 * t + i, t, 100000 + 1000 * t + i);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(h.claim, 1u);
  EXPECT_EQ(h.record.state, 1u);
  EXPECT_EQ(h.record.bound - h.record.index, 100000) << "fields of two reports mixed";
  EXPECT_EQ(h.record.dim, h.record.index / 1000);
  EXPECT_EQ(h.log.take(0).code, EMBER_ERR_INDEX);
}

TEST(CudaDeviceError, DevicesWithoutALogHaveNothingToReport) {
  EXPECT_TRUE(take_device_error(0).ok());
  EXPECT_TRUE(take_device_error(-1).ok());
  EXPECT_TRUE(take_device_error(kMaxDevices).ok());
}

}  // namespace
}  // namespace ember::cuda
