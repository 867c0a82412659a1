// Per-device state of the plugin: the caching allocator over cudaMalloc/cudaFree, the pinned
// host memory cache, and the cuBLAS and cuDNN handles of each stream (libcublas itself loaded
// lazily, Note [Lazy cuBLAS]), each created on first use and kept for the life of the process.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <mutex>

#include "backends/cuda/allocator.h"
#include "backends/cuda/check.h"
#include "backends/cuda/host_allocator.h"
#include "backends/cuda/lazy_cublas.h"
#include "ember/plugin_abi.h"

namespace ember::cuda {

/** Remembers the host services (for logging) handed to init. */
void set_host(const ember_host_v1* host);
/** Logs through the host at `level` (0 debug .. 3 error), if the host offers logging. */
void log(int32_t level, const char* message);

/** The process's cache of pinned host memory (cudaHostAlloc). */
HostAllocator& host_allocator();
/** The caching allocator of device `index` (0 <= index < kMaxDevices). */
CachingAllocator& device_allocator(int index);
/** Marks memory from device `index`'s allocator as used by `stream` as well, so its block is
 * reused only after the work queued there so far (Note [Blocks used on other streams]);
 * false for memory the allocator does not know. */
bool record_stream(int index, void* ptr, cudaStream_t stream);
/** The cuBLAS handle of `stream` (a stream of device `index`, Note [Library handles per
 * stream]), and the cuBLAS entry points (loading libcublas on first use; `op` names the failing
 * op if it is missing); `lock` holds the handle for the caller. */
Status cublas_handle(int index, cudaStream_t stream, const char* op, const CublasApi** api,
                     cublasHandle_t* out, std::unique_lock<std::mutex>* lock);

/** The cuDNN handle of `stream` (a stream of device `index`, Note [Library handles per
 * stream]); `lock` holds it for the caller. */
Status cudnn_handle(int index, cudaStream_t stream, cudnnHandle_t* out,
                    std::unique_lock<std::mutex>* lock);

/** Device memory from the caching allocator, returned on destruction (scratch buffers). */
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  /** Allocates `bytes` on device `index` for use on `stream` (the kernel's, Note [The
   * kernel's stream]); fails with the OOM message. */
  Status allocate(int index, size_t bytes, cudaStream_t stream);
  /** The memory, or nullptr. */
  void* get() const { return ptr_; }

 private:
  int index_ = 0;
  void* ptr_ = nullptr;
};

}  // namespace ember::cuda
