#include "backends/cuda/device.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <map>
#include <mutex>

#include "backends/cuda/stream.h"

namespace ember::cuda {
namespace {

const ember_host_v1* g_host = nullptr;

// The event half of a SegmentSource over CUDA events, shared by device segments and pinned
// host blocks. Note [Blocks used on other streams] (allocator.cpp): when an event cannot be
// recorded the stream is waited for instead, so the block is safe to reuse at once.
class CudaEventSource : public SegmentSource {
 public:
  void* record_event(void* stream) override {
    const auto s = static_cast<cudaStream_t>(stream);
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess ||
        cudaEventRecord(e, s) != cudaSuccess) {
      cudaGetLastError();
      if (e) cudaEventDestroy(e);
      cudaStreamSynchronize(s);
      return nullptr;
    }
    return e;
  }
  bool event_done(void* event) override {
    const cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (err == cudaErrorNotReady) {
      cudaGetLastError();  // not an error: clear it
      return false;
    }
    return true;  // complete, or failed (the failure surfaces at the next synchronize)
  }
  void destroy_event(void* event) override { cudaEventDestroy(static_cast<cudaEvent_t>(event)); }
};

// Segments straight from the driver for one device. Each call switches to that device under a
// guard (Note [Device guards]): the allocator runs inside kernels, and inside the alloc, free and
// empty_cache slots, for whichever device the caller had current.
class CudaSegmentSource final : public CudaEventSource {
 public:
  explicit CudaSegmentSource(int index) : index_(index) {}
  void* allocate(size_t bytes) override {
    const DeviceGuard guard;
    if (!set_device(index_).ok()) return nullptr;
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();  // clear the (non-sticky) allocation error
      return nullptr;
    }
    return p;
  }
  void release(void* ptr, size_t) override {
    const DeviceGuard guard;
    if (set_device(index_).ok()) cudaFree(ptr);  // synchronizes the device first
  }
  int64_t free_bytes() override {
    const DeviceGuard guard;
    size_t free = 0, total = 0;
    if (!set_device(index_).ok() || cudaMemGetInfo(&free, &total) != cudaSuccess) return -1;
    return static_cast<int64_t>(free);
  }
  void* record_event(void* stream) override {
    const DeviceGuard guard;
    if (!set_device(index_).ok()) return nullptr;
    return CudaEventSource::record_event(stream);
  }

 private:
  int index_;
};

// Page-locked host blocks (Note [Caching pinned host memory]). Events are recorded with the
// stream's device current: copy_async makes it current before it records a use.
class PinnedSource final : public CudaEventSource {
 public:
  void* allocate(size_t bytes) override {
    void* p = nullptr;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocDefault) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return p;
  }
  void release(void* ptr, size_t) override { cudaFreeHost(ptr); }
};

// Note [Per-device state is never destroyed]
// Allocators, sources, cuBLAS and cuDNN handles are created on first use and deliberately leaked:
// tensors may be freed by static destructors after the CUDA runtime began tearing itself
// down, and a cudaFree or cublasDestroy then fails or crashes.
//
// Note [Library handles per stream]
// cuBLAS keeps a workspace per handle: two streams sharing one handle could run two GEMMs at
// once over the same workspace. So, as PyTorch does, each stream of a device gets its own
// cuBLAS and cuDNN handles, created on the stream's first use and bound to it. The streams
// are the device's default stream and its pool (never destroyed, Note [Current stream per
// device]), so there are at most 1 + 2 * kStreamsPerPool handles of each kind per device.
// Threads that issue work on one stream share its handles and take turns (a mutex per
// stream); threads on different streams never wait for each other.
struct StreamHandles {
  std::mutex mu;  // held by the caller while it uses the handles
  cublasHandle_t blas = nullptr;
  cudnnHandle_t dnn = nullptr;
};

struct DeviceState {
  std::once_flag once;
  CudaSegmentSource* source = nullptr;
  CachingAllocator* allocator = nullptr;
  std::mutex handles_mu;  // guards `handles`
  std::map<cudaStream_t, StreamHandles*> handles;
};

DeviceState g_devices[kMaxDevices];

}  // namespace

void set_host(const ember_host_v1* host) {
  g_host = host;
}

void log(int32_t level, const char* message) {
  if (g_host && g_host->struct_size >= offsetof(ember_host_v1, log) + sizeof(void*) &&
      g_host->log) {
    g_host->log(level, message);
  }
}

HostAllocator& host_allocator() {
  static HostAllocator* a = new HostAllocator(new PinnedSource());  // never destroyed
  return *a;
}

CachingAllocator& device_allocator(int index) {
  DeviceState& d = g_devices[index];
  std::call_once(d.once, [&] {
    d.source = new CudaSegmentSource(index);
    d.allocator = new CachingAllocator(d.source, index);
  });
  return *d.allocator;
}

bool record_stream(int index, void* ptr, cudaStream_t stream) {
  if (index < 0 || index >= kMaxDevices) return false;
  return device_allocator(index).record_stream(ptr, stream);
}

namespace {

// The handles of `stream` of device `index`, locked for the caller.
Status stream_handles(int index, cudaStream_t stream, StreamHandles** out,
                      std::unique_lock<std::mutex>* lock) {
  if (index < 0 || index >= kMaxDevices) {
    return status_error(EMBER_ERR_INVALID, "[cuda] device index %d out of range", index);
  }
  DeviceState& d = g_devices[index];
  StreamHandles* h = nullptr;
  {
    std::lock_guard<std::mutex> guard(d.handles_mu);
    StreamHandles*& slot = d.handles[stream];
    if (!slot) slot = new StreamHandles();  // Note [Per-device state is never destroyed]
    h = slot;
  }
  *lock = std::unique_lock(h->mu);
  *out = h;
  return {};
}

}  // namespace

Status cublas_handle(int index, cudaStream_t stream, const char* op, const CublasApi** api,
                     cublasHandle_t* out, std::unique_lock<std::mutex>* lock) {
  const CublasApi* blas = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(cublas_api(op, &blas));
  StreamHandles* sh = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(stream_handles(index, stream, &sh, lock));
  if (!sh->blas) {
    EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
    cublasHandle_t h = nullptr;
    EMBER_CUBLAS_CHECK(blas->create(&h));
    // Note [TF32 is off by default]
    // float32 matmul must give float32 results (the CPU plugin's and PyTorch's default), so the
    // handle keeps cuBLAS' default math; the option matmul.allow_tf32 (or EMBER_CUDA_ALLOW_TF32=1)
    // asks for CUBLAS_COMPUTE_32F_FAST_TF32 per call instead (ops/matmul.cpp).
    // Note [Half matmul accumulates in float32] (ops/matmul.cpp): no reduced-precision
    // reductions for the half types either.
    const int mode = static_cast<int>(CUBLAS_DEFAULT_MATH) |
                     static_cast<int>(CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
    EMBER_CUBLAS_CHECK(blas->set_math_mode(h, static_cast<cublasMath_t>(mode)));
    EMBER_CUBLAS_CHECK(blas->set_stream(h, stream));
    sh->blas = h;
  }
  *out = sh->blas;
  *api = blas;
  return {};
}

Status cudnn_handle(int index, cudaStream_t stream, cudnnHandle_t* out,
                    std::unique_lock<std::mutex>* lock) {
  StreamHandles* sh = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(stream_handles(index, stream, &sh, lock));
  if (!sh->dnn) {
    EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
    cudnnHandle_t h = nullptr;
    EMBER_CUDNN_CHECK(cudnnCreate(&h));
    EMBER_CUDNN_CHECK(cudnnSetStream(h, stream));
    sh->dnn = h;
  }
  *out = sh->dnn;
  return {};
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) device_allocator(index_).free(ptr_);
}

Status DeviceBuffer::allocate(int index, size_t bytes, cudaStream_t stream) {
  index_ = index;
  std::string why;
  ptr_ = device_allocator(index).allocate(bytes, stream, &why);
  if (!ptr_ && bytes > 0) return status_error(EMBER_ERR_OUT_OF_MEMORY, "[cuda] %s", why.c_str());
  return {};
}

}  // namespace ember::cuda
