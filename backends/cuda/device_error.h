// Errors found by kernels on the device (an index out of range), recorded there without a host
// synchronization and reported at the backend's next synchronization point (Note [Index errors
// reported at the next synchronization] in device_error.cpp). The record's layout, the device's
// reporting function and the host's side are plain code, unit-tested without a GPU
// (tests/backends/cuda/device_error_test.cpp); device_error_log allocates the per-device storage.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "backends/cuda/check.h"

/** __host__ __device__ under nvcc, nothing for the host compiler (the unit tests). */
#if defined(__CUDACC__)
#define EMBER_CUDA_HOST_DEVICE __host__ __device__
#else
#define EMBER_CUDA_HOST_DEVICE
#endif

namespace ember::cuda {

/** The ops whose kernels report through a device error record (the record's `op`). */
enum class DeviceErrorOp : int32_t {
  kNone = 0,
  kIndexSelect = 1,
  kGather = 2,
  kScatter = 3,
  kScatterAdd = 4,
};

/** The core's name of op id `op` ("index_select"), or "unknown op" for an id not listed. */
const char* device_error_op_name(int32_t op);

/** One error recorded by a kernel, in mapped pinned host memory: the device writes the fields,
 * then `state`, and the host reads `state` first. */
struct DeviceErrorRecord {
  uint32_t state;  // 0 before the first error; else the claim number of the last one recorded
  int32_t op;      // DeviceErrorOp of the op whose kernel found the error
  int64_t index;   // the index value out of range
  int64_t dim;     // the dimension it indexes
  int64_t bound;   // that dimension's size
};
static_assert(sizeof(DeviceErrorRecord) == 32, "one 32-byte record, the same on host and device");
static_assert(offsetof(DeviceErrorRecord, state) == 0 && offsetof(DeviceErrorRecord, op) == 4 &&
                  offsetof(DeviceErrorRecord, index) == 8 &&
                  offsetof(DeviceErrorRecord, dim) == 16 &&
                  offsetof(DeviceErrorRecord, bound) == 24,
              "the record's layout is shared by the host and device compilers");

/** What one kernel launch needs to report an error, passed by value. */
struct DeviceErrorSlot {
  uint32_t* claim;            // device memory: how many errors were claimed so far
  DeviceErrorRecord* record;  // the record, at its device address
  uint32_t generation;        // the claims the host had taken when the kernel was launched
  int32_t op;                 // DeviceErrorOp of the launching op
};

/** Records index `index` out of range for dimension `dim` of size `bound`, unless an error was
 * recorded since the host last took one: the first report wins, later ones are dropped. Runs
 * on the device in the kernels, and on the host in the unit tests. */
EMBER_CUDA_HOST_DEVICE inline void report_index_error(const DeviceErrorSlot& slot, int64_t index,
                                                      int64_t dim, int64_t bound) {
  const uint32_t expected = slot.generation;
#if defined(__CUDA_ARCH__)
  if (atomicCAS(slot.claim, expected, expected + 1) != expected) return;
  slot.record->op = slot.op;
  slot.record->index = index;
  slot.record->dim = dim;
  slot.record->bound = bound;
  __threadfence_system();  // the fields reach the host before the state that publishes them
  *static_cast<volatile uint32_t*>(&slot.record->state) = expected + 1;
#else
  uint32_t seen = expected;
  if (!std::atomic_ref<uint32_t>(*slot.claim).compare_exchange_strong(seen, expected + 1)) return;
  slot.record->op = slot.op;
  slot.record->index = index;
  slot.record->dim = dim;
  slot.record->bound = bound;
  std::atomic_ref<uint32_t>(slot.record->state).store(expected + 1, std::memory_order_release);
#endif
}

/** The message of a recorded error found on device `device`, in the house format:
 * "[index_select] index 7 is out of bounds for dimension 0 with size 5 (reported by cuda:0 at
 * the next synchronization ...)". */
std::string format_device_error(const DeviceErrorRecord& record, int device);

/** The host's side of one device's record: the generation kernels are launched with, and the
 * taking of a newly recorded error. Thread-safe; taking is one atomic load when nothing is new. */
class DeviceErrorLog {
 public:
  /** Over a claim word in device memory, and the record at its host and device addresses. */
  DeviceErrorLog(uint32_t* claim, DeviceErrorRecord* host_record, DeviceErrorRecord* device_record)
      : claim_(claim), host_(host_record), device_(device_record) {}
  /** The slot a kernel of `op` launched now reports into. */
  DeviceErrorSlot slot(DeviceErrorOp op) const {
    return {claim_, device_, taken_.load(std::memory_order_acquire), static_cast<int32_t>(op)};
  }
  /** EMBER_ERR_INDEX with the message of an error recorded since the last one taken (which is
   * taken now, so it is reported once), or OK. */
  Status take(int device);

 private:
  uint32_t* claim_;
  DeviceErrorRecord* host_;
  DeviceErrorRecord* device_;
  std::mutex mu_;                   // one taker at a time
  std::atomic<uint32_t> taken_{0};  // the claim number of the last error taken
};

/** The error log of device `index`, created on first use (`stream`: the caller's, on which the
 * claim word is zeroed once); never destroyed (Note [Per-device state is never destroyed]). */
Status device_error_log(int index, cudaStream_t stream, DeviceErrorLog** out);

/** Takes an error recorded on device `index` (OK when none, or when no kernel there ever asked
 * for a log): called after every completed wait (Note [Index errors reported at the next
 * synchronization]). */
Status take_device_error(int index);

}  // namespace ember::cuda
