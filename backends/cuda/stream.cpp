#include "backends/cuda/stream.h"

#include <cuda.h>

#include <atomic>
#include <mutex>

namespace ember::cuda {
namespace {

// Note [Current stream per device]
// Every device gets a non-blocking default stream of its own, created the first time anything
// runs there, so Ember's work never serializes with the legacy default stream of other
// libraries. Each thread's current stream of a device starts as that default stream and can be
// switched to a pool stream (set_current_stream), as PyTorch's thread-local current stream. The
// pool holds kStreamsPerPool streams per priority, created on the first request and handed out
// round-robin. No stream is ever destroyed: the caching allocator keys cached blocks by stream
// handle, and a destroyed stream's handle could come back for a new stream that then reused
// blocks the old one's pending work still reads; the CUDA runtime may also be gone by the time
// static destructors run.
struct DeviceStreams {
  std::once_flag default_once;
  cudaStream_t default_stream = nullptr;
  cudaError_t default_error = cudaSuccess;
  std::once_flag pool_once[2];
  cudaStream_t pool[2][kStreamsPerPool] = {};
  cudaError_t pool_error[2] = {cudaSuccess, cudaSuccess};
  std::atomic<uint32_t> next[2] = {0, 0};
};

DeviceStreams g_streams[kMaxDevices];
thread_local cudaStream_t t_current[kMaxDevices];  // nullptr: the device's default stream

Status check_index(int index) {
  if (index < 0 || index >= kMaxDevices) {
    return status_error(EMBER_ERR_INVALID, "[cuda] device index %d out of range", index);
  }
  return {};
}

}  // namespace

bool CudaDeviceOps::current(int* index) {
  if (cudaGetDevice(index) == cudaSuccess) return true;
  cudaGetLastError();  // no driver or no device: nothing to restore, and no error left behind
  return false;
}

void CudaDeviceOps::set(int index) {
  if (cudaSetDevice(index) != cudaSuccess) cudaGetLastError();
}

namespace {

// cuDevicePrimaryCtxGetState through the runtime's driver entry points: the plugin links
// libcudart only, never libcuda (Note [No device is not an error] in plugin.cpp).
using PrimaryCtxGetState = CUresult (*)(CUdevice device, unsigned int* flags, int* active);

PrimaryCtxGetState primary_ctx_get_state() {
  static const PrimaryCtxGetState fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    const cudaError_t err = cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &p,
                                                             12000, cudaEnableDefault, &found);
#else
    const cudaError_t err =
        cudaGetDriverEntryPoint("cuDevicePrimaryCtxGetState", &p, cudaEnableDefault, &found);
#endif
    if (err != cudaSuccess || found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return PrimaryCtxGetState{nullptr};
    }
    return reinterpret_cast<PrimaryCtxGetState>(p);
  }();
  return fn;
}

}  // namespace

bool CudaDeviceOps::has_context(int index) {
  const PrimaryCtxGetState get_state = primary_ctx_get_state();
  if (!get_state) return true;  // cannot tell: restore, as the caller would expect
  unsigned int flags = 0;
  int active = 0;
  if (get_state(index, &flags, &active) != CUDA_SUCCESS) return true;
  return active != 0;
}

Status set_device(int index) {
  int cur = -1;
  EMBER_CUDA_CHECK(cudaGetDevice(&cur));
  if (cur != index) EMBER_CUDA_CHECK(cudaSetDevice(index));
  return {};
}

Status default_stream(int index, cudaStream_t* out) {
  EMBER_CUDA_RETURN_IF_ERROR(check_index(index));
  DeviceStreams& d = g_streams[index];
  std::call_once(d.default_once, [&] {
    const DeviceGuard guard;  // Note [Device guards]
    d.default_error = cudaSetDevice(index);
    if (d.default_error == cudaSuccess)
      d.default_error = cudaStreamCreateWithFlags(&d.default_stream, cudaStreamNonBlocking);
    if (d.default_error != cudaSuccess) cudaGetLastError();
  });
  if (d.default_error != cudaSuccess) {
    return status_error(EMBER_ERR_DEVICE,
                        "[cuda] creating the default stream of cuda:%d failed: %s", index,
                        cudaGetErrorString(d.default_error));
  }
  *out = d.default_stream;
  return {};
}

Status current_stream(int index, cudaStream_t* out) {
  EMBER_CUDA_RETURN_IF_ERROR(check_index(index));
  if (cudaStream_t s = t_current[index]) {
    *out = s;
    return {};
  }
  return default_stream(index, out);
}

// Note [The kernel's stream]
// Since ABI 1.4 the core hands every kernel the device's current stream in
// ember_kernel_call::stream. The core has no stream of its own to offer: it asks this plugin's
// stream_get(index, EMBER_STREAM_CURRENT) (core/dispatch/stream.cpp), on the thread that then
// calls the kernel synchronously, and stream_get answers from the same per-thread table that
// current_stream() reads here (the stream the thread set through stream_set_current, else the
// device's default stream). So call->stream and current_stream(index) are one cudaStream_t;
// kernels prefer the call's (the ABI says it is the stream to use, and it saves the lookup)
// and fall back to the lookup when it is NULL: a core before 1.4 leaves it NULL, and so does
// one whose stream_get failed, which the lookup then reports. NULL is never a stream handle of
// this backend (the default stream is a created non-blocking stream, not the legacy stream 0),
// so it cannot be mistaken for one. Everything a kernel queues, and the scratch memory and
// cuBLAS / cuDNN handles it uses (Note [Library handles per stream]), go to that one stream.
Status kernel_stream(const ember_kernel_call* call, int index, cudaStream_t* out) {
  if (call && call->stream) {
    *out = static_cast<cudaStream_t>(call->stream);
    return {};
  }
  return current_stream(index, out);
}

Status set_current_stream(int index, cudaStream_t stream) {
  EMBER_CUDA_RETURN_IF_ERROR(check_index(index));
  cudaStream_t def = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(default_stream(index, &def));
  t_current[index] = stream == def ? nullptr : stream;
  return {};
}

Status pool_stream(int index, bool high_priority, cudaStream_t* out) {
  EMBER_CUDA_RETURN_IF_ERROR(check_index(index));
  DeviceStreams& d = g_streams[index];
  const int p = high_priority ? 1 : 0;
  std::call_once(d.pool_once[p], [&] {
    const DeviceGuard guard;      // Note [Device guards]
    int least = 0, greatest = 0;  // numerically lower is higher priority
    cudaError_t err = cudaSetDevice(index);
    if (err == cudaSuccess) err = cudaDeviceGetStreamPriorityRange(&least, &greatest);
    for (int i = 0; err == cudaSuccess && i < kStreamsPerPool; ++i) {
      err = cudaStreamCreateWithPriority(&d.pool[p][i], cudaStreamNonBlocking,
                                         high_priority ? greatest : least);
    }
    if (err != cudaSuccess) cudaGetLastError();
    d.pool_error[p] = err;
  });
  if (d.pool_error[p] != cudaSuccess) {
    return status_error(EMBER_ERR_DEVICE, "[cuda] creating the stream pool of cuda:%d failed: %s",
                        index, cudaGetErrorString(d.pool_error[p]));
  }
  *out = d.pool[p][d.next[p].fetch_add(1, std::memory_order_relaxed) % kStreamsPerPool];
  return {};
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
