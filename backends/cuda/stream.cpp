#include "backends/cuda/stream.h"

#include <atomic>
#include <mutex>

namespace ember::cuda {
namespace {

// Note [Current stream per device]
// Every device gets one non-blocking stream of its own, created the first time anything runs
// there, so Ember's work never serializes with the legacy default stream of other libraries.
// The created streams live until the process ends (never destroyed: the CUDA runtime may
// already be torn down when static destructors run). set_current_stream swaps in another one.
struct StreamSlot {
  std::atomic<cudaStream_t> current{nullptr};
  bool explicitly_set = false;
};

StreamSlot g_streams[kMaxDevices];
std::mutex g_stream_mu;

}  // namespace

Status set_device(int index) {
  int cur = -1;
  EMBER_CUDA_CHECK(cudaGetDevice(&cur));
  if (cur != index) EMBER_CUDA_CHECK(cudaSetDevice(index));
  return {};
}

Status current_stream(int index, cudaStream_t* out) {
  if (index < 0 || index >= kMaxDevices) {
    return status_error(EMBER_ERR_INVALID, "[cuda] device index %d out of range", index);
  }
  StreamSlot& slot = g_streams[index];
  cudaStream_t s = slot.current.load(std::memory_order_acquire);
  if (s || slot.explicitly_set) {
    *out = s;
    return {};
  }
  std::lock_guard lock(g_stream_mu);
  s = slot.current.load(std::memory_order_acquire);
  if (!s && !slot.explicitly_set) {
    EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
    EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    slot.current.store(s, std::memory_order_release);
  }
  *out = s;
  return {};
}

void set_current_stream(int index, cudaStream_t stream) {
  if (index < 0 || index >= kMaxDevices) return;
  std::lock_guard lock(g_stream_mu);
  g_streams[index].explicitly_set = true;
  g_streams[index].current.store(stream, std::memory_order_release);
}

// Note [Asynchronous errors name the last launch]
// A kernel that faults (an illegal address, a device-side assert) fails asynchronously: the
// launch itself succeeds, and the error appears at the next call that waits for the device,
// typically a D2H copy or synchronize, long after the kernel's op returned. Every launch goes
// through launch_status (ops/common.cuh: cudaGetLastError right after the launch, which
// catches configuration errors at once), and it records the op's name here per device;
// cuBLAS and cuDNN calls record theirs too. wait_stream then reports
// "[cuda] <what> on cuda:N failed: <error>; ... the last op launched on cuda:N was '<op>'",
// which names the culprit whenever the failing work is the last queued, the usual case when
// debugging with EMBER's eager ops.
std::atomic<const char*> g_last_launch[kMaxDevices];

void note_launch(const char* op) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) return;
  g_last_launch[dev].store(op, std::memory_order_relaxed);
}

const char* last_launch(int index) {
  if (index < 0 || index >= kMaxDevices) return "(none)";
  const char* op = g_last_launch[index].load(std::memory_order_relaxed);
  return op ? op : "(none)";
}

Status wait_stream(int index, cudaStream_t stream, const char* what) {
  cudaError_t err = cudaStreamSynchronize(stream);
  if (err == cudaSuccess) err = cudaGetLastError();  // an error not reported yet
  if (err == cudaSuccess) return {};
  cudaGetLastError();  // clear it if it is not sticky
  return status_error(err == cudaErrorMemoryAllocation ? EMBER_ERR_OUT_OF_MEMORY : EMBER_ERR_DEVICE,
                      "[cuda] %s on cuda:%d failed: %s (%s); this may be an asynchronous error "
                      "of earlier work: the last op launched on cuda:%d was '%s'",
                      what, index, cudaGetErrorString(err), cudaGetErrorName(err), index,
                      last_launch(index));
}

Status event_create(CudaEvent* out, bool timing) {
  cudaEvent_t e = nullptr;
  EMBER_CUDA_CHECK(
      cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  *out = CudaEvent(e);
  return {};
}

Status event_record(int index, cudaEvent_t event) {
  cudaStream_t s = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(current_stream(index, &s));
  EMBER_CUDA_CHECK(cudaEventRecord(event, s));
  return {};
}

}  // namespace ember::cuda
