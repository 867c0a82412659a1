// Per-device state of the plugin: the caching allocator over cudaMalloc/cudaFree and the
// cuBLAS handle, each created on first use and kept for the life of the process.
#pragma once

#include <cublas_v2.h>

#include <mutex>

#include "backends/cuda/allocator.h"
#include "backends/cuda/check.h"
#include "ember/plugin_abi.h"

namespace ember::cuda {

/** Remembers the host services (for logging) handed to init. */
void set_host(const ember_host_v1* host);
/** Logs through the host at `level` (0 debug .. 3 error), if the host offers logging. */
void log(int32_t level, const char* message);

/** The caching allocator of device `index` (0 <= index < kMaxDevices). */
CachingAllocator& device_allocator(int index);
/** The cuBLAS handle of device `index`, bound to its current stream; `lock` holds it for the
 * caller. */
Status cublas_handle(int index, cublasHandle_t* out, std::unique_lock<std::mutex>* lock);

/** Device memory from the caching allocator, returned on destruction (scratch buffers). */
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  /** Allocates `bytes` on device `index` for the current stream; fails with the OOM message. */
  Status allocate(int index, size_t bytes);
  /** The memory, or nullptr. */
  void* get() const { return ptr_; }

 private:
  int index_ = 0;
  void* ptr_ = nullptr;
};

}  // namespace ember::cuda
