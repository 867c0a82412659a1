#include "backends/cuda/device.h"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "backends/cuda/stream.h"

namespace ember::cuda {
namespace {

const ember_host_v1* g_host = nullptr;

// Segments straight from the driver for one device.
class CudaSegmentSource final : public SegmentSource {
 public:
  explicit CudaSegmentSource(int index) : index_(index) {}
  void* allocate(size_t bytes) override {
    if (!set_device(index_).ok()) return nullptr;
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();  // clear the (non-sticky) allocation error
      return nullptr;
    }
    return p;
  }
  void release(void* ptr, size_t) override {
    if (set_device(index_).ok()) cudaFree(ptr);  // synchronizes the device first
  }
  int64_t free_bytes() override {
    size_t free = 0, total = 0;
    if (!set_device(index_).ok() || cudaMemGetInfo(&free, &total) != cudaSuccess) return -1;
    return static_cast<int64_t>(free);
  }

 private:
  int index_;
};

// Note [Per-device state is never destroyed]
// Allocators, sources and cuBLAS handles are created on first use and deliberately leaked:
// tensors may be freed by static destructors after the CUDA runtime began tearing itself
// down, and a cudaFree or cublasDestroy then fails or crashes.
struct DeviceState {
  std::once_flag once;
  CudaSegmentSource* source = nullptr;
  CachingAllocator* allocator = nullptr;
  std::mutex blas_mu;
  cublasHandle_t blas = nullptr;
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

CachingAllocator& device_allocator(int index) {
  DeviceState& d = g_devices[index];
  std::call_once(d.once, [&] {
    d.source = new CudaSegmentSource(index);
    d.allocator = new CachingAllocator(d.source, index);
  });
  return *d.allocator;
}

Status cublas_handle(int index, cublasHandle_t* out, std::unique_lock<std::mutex>* lock) {
  if (index < 0 || index >= kMaxDevices) {
    return status_error(EMBER_ERR_INVALID, "[cuda] device index %d out of range", index);
  }
  DeviceState& d = g_devices[index];
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(current_stream(index, &stream));
  *lock = std::unique_lock(d.blas_mu);  // one handle per device: calls on it take turns
  if (!d.blas) {
    EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
    cublasHandle_t h = nullptr;
    EMBER_CUBLAS_CHECK(cublasCreate(&h));
    // Note [TF32 is off by default]
    // float32 matmul must give float32 results (the CPU plugin's and PyTorch's default), so the
    // handle uses pedantic-free default math; EMBER_CUDA_ALLOW_TF32=1 opts into TF32 tensor cores.
    const char* tf32 = std::getenv("EMBER_CUDA_ALLOW_TF32");
    const bool allow_tf32 = tf32 && std::strcmp(tf32, "1") == 0;
    EMBER_CUBLAS_CHECK(
        cublasSetMathMode(h, allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    d.blas = h;
  }
  EMBER_CUBLAS_CHECK(cublasSetStream(d.blas, stream));
  *out = d.blas;
  return {};
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) device_allocator(index_).free(ptr_);
}

Status DeviceBuffer::allocate(int index, size_t bytes) {
  index_ = index;
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(current_stream(index, &stream));
  CachingAllocator& a = device_allocator(index);
  ptr_ = a.allocate(bytes, stream);
  if (!ptr_ && bytes > 0)
    return status_error(EMBER_ERR_OUT_OF_MEMORY, "[cuda] %s", a.last_error().c_str());
  return {};
}

}  // namespace ember::cuda
