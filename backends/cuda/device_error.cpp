#include "backends/cuda/device_error.h"

#include <cstdio>
#include <cstring>

#include "backends/cuda/device_guard.h"
#include "backends/cuda/stream.h"

namespace ember::cuda {

// Note [Index errors reported at the next synchronization]
// index_select, gather, scatter and scatter_add read their indices on the device. Checking them
// on the host would need them there, so before this the call waited for a check kernel: one
// host stall per indexing op, which is every training step of a model with an embedding or a
// cross-entropy loss. Instead, as PyTorch's device-side asserts, the kernels check each index as
// they use it, and the first one out of range is recorded in a small per-device record; the host
// looks at the record whenever it has waited for the device anyway, and the error surfaces
// there:
//  - the record (DeviceErrorRecord: state, op id, index, dim, size; 32 bytes) lives in mapped
//    pinned host memory: the kernel writes it over the bus, and the host reads it with no copy,
//    so looking costs one load of `state` at every synchronization point;
//  - "first one wins" is an atomicCAS on a claim word in device memory, from the generation the
//    host passed at launch to the next one. Only the winner writes the record (its fields, a
//    system fence, then `state`), so concurrent reports from many threads, kernels or streams
//    never mix. The host, once it took an error, launches later kernels with the new
//    generation, which frees the claim without any device work; kernels launched before the
//    error was taken keep the old generation and drop theirs (the first error is the one that
//    matters, and the output of the op that found it is wrong anyway);
//  - a kernel that sees a bad index skips that element (gather and index_select write 0 there),
//    so nothing is read or written out of bounds: unlike a device assert, which traps and
//    leaves the CUDA context unusable, the process goes on working after the error;
//  - the synchronization points are those of plugin.cpp where the host has waited for work:
//    synchronize, stream and event synchronize, and copies to the host (and the blocking
//    copies from pinned memory). The error becomes that call's status, EMBER_ERR_INDEX (an
//    IndexError in the core), with the op named: "[index_select] index 7 is out of bounds for
//    dimension 0 with size 5 (reported by cuda:0 at the next synchronization; ...)". An
//    asynchronous copy returns before the work ran, so it reports nothing; the next wait does.
// The cost: the error appears later than the op, possibly at a synchronization on another
// stream or thread, and the outputs of the op that found it hold zeros (or unscattered values)
// where the bad indices were; scatters may have written part of their elements.

const char* device_error_op_name(int32_t op) {
  switch (static_cast<DeviceErrorOp>(op)) {
    case DeviceErrorOp::kIndexSelect:
      return "index_select";
    case DeviceErrorOp::kGather:
      return "gather";
    case DeviceErrorOp::kScatter:
      return "scatter";
    case DeviceErrorOp::kScatterAdd:
      return "scatter_add";
    case DeviceErrorOp::kNone:
      break;
  }
  return "unknown op";
}

std::string format_device_error(const DeviceErrorRecord& record, int device) {
  char buf[384];
  std::snprintf(buf, sizeof(buf),
                "[%s] index %lld is out of bounds for dimension %lld with size %lld (reported by "
                "cuda:%d at the next synchronization; the output of that %s is not valid)",
                device_error_op_name(record.op), static_cast<long long>(record.index),
                static_cast<long long>(record.dim), static_cast<long long>(record.bound), device,
                device_error_op_name(record.op));
  return buf;
}

Status DeviceErrorLog::take(int device) {
  std::atomic_ref<uint32_t> state(host_->state);
  if (state.load(std::memory_order_acquire) == taken_.load(std::memory_order_relaxed)) return {};
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t now = state.load(std::memory_order_acquire);
  if (now == taken_.load(std::memory_order_relaxed)) return {};  // another thread took it
  DeviceErrorRecord copy{};
  copy.state = now;
  copy.op = host_->op;
  copy.index = host_->index;
  copy.dim = host_->dim;
  copy.bound = host_->bound;
  taken_.store(now, std::memory_order_release);  // later launches may claim again
  return status_error(EMBER_ERR_INDEX, "%s", format_device_error(copy, device).c_str());
}

namespace {

struct LogSlot {
  std::once_flag once;
  std::atomic<DeviceErrorLog*> log{nullptr};
  Status error;  // why the log could not be made
};

LogSlot g_logs[kMaxDevices];

Status make_log(int index, cudaStream_t stream, DeviceErrorLog** out) {
  const DeviceGuard guard;  // Note [Device guards]
  EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
  void* host = nullptr;
  EMBER_CUDA_CHECK(
      cudaHostAlloc(&host, sizeof(DeviceErrorRecord), cudaHostAllocMapped | cudaHostAllocPortable));
  std::memset(host, 0, sizeof(DeviceErrorRecord));
  void* device_record = nullptr;
  EMBER_CUDA_CHECK(cudaHostGetDevicePointer(&device_record, host, 0));
  void* claim = nullptr;
  EMBER_CUDA_CHECK(cudaMalloc(&claim, sizeof(uint32_t)));
  // Zeroed before any kernel can claim: the launches that use the log come later in host order,
  // but possibly on other streams, so this one-time setup waits for its memset.
  EMBER_CUDA_CHECK(cudaMemsetAsync(claim, 0, sizeof(uint32_t), stream));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
  // Note [Per-device state is never destroyed]: neither is the memory above.
  *out = new DeviceErrorLog(static_cast<uint32_t*>(claim), static_cast<DeviceErrorRecord*>(host),
                            static_cast<DeviceErrorRecord*>(device_record));
  return {};
}

}  // namespace

Status device_error_log(int index, cudaStream_t stream, DeviceErrorLog** out) {
  if (index < 0 || index >= kMaxDevices) {
    return status_error(EMBER_ERR_INVALID, "[cuda] device index %d out of range", index);
  }
  LogSlot& slot = g_logs[index];
  std::call_once(slot.once, [&] {
    DeviceErrorLog* log = nullptr;
    slot.error = make_log(index, stream, &log);
    if (slot.error.ok()) {
      slot.log.store(log, std::memory_order_release);
    } else {
      slot.error.message = "setting up the device error record failed: " + slot.error.message;
    }
  });
  if (!slot.error.ok()) return slot.error;
  *out = slot.log.load(std::memory_order_acquire);
  return {};
}

Status take_device_error(int index) {
  if (index < 0 || index >= kMaxDevices) return {};
  DeviceErrorLog* log = g_logs[index].log.load(std::memory_order_acquire);
  return log ? log->take(index) : Status{};
}

}  // namespace ember::cuda
