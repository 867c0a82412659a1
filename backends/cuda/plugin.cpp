// The CUDA backend plugin: the entry symbol, the descriptor and the device table.
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "backends/cuda/device.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/stream.h"

namespace ember::cuda {
namespace {

// Note [No device is not an error]
// On a host with the CUDA libraries but no GPU or no driver, cudaGetDeviceCount fails fast
// (cudaErrorNoDevice, cudaErrorInsufficientDriver); the plugin then loads with 0 devices and
// this reason, and the CPU keeps working. Nothing here may abort or wait on a missing driver.
int32_t device_count(void*, char* reason, size_t cap) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    const char* hint = "";
    if (err == cudaErrorInsufficientDriver) {
      void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
      if (h)
        dlclose(h);
      else
        hint = "; the NVIDIA driver (libcuda.so.1) is not installed";
    }
    std::snprintf(reason, cap, "no CUDA device: %s (%s)%s", cudaGetErrorString(err),
                  cudaGetErrorName(err), hint);
    return 0;
  }
  if (n == 0) std::snprintf(reason, cap, "no CUDA device: the driver reports 0 devices");
  return n > kMaxDevices ? kMaxDevices : n;
}

int32_t device_props(void*, int32_t index, ember_device_props* out) {
  std::memset(out, 0, sizeof(*out));
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, index) != cudaSuccess) {
    cudaGetLastError();
    return EMBER_ERR_DEVICE;
  }
  std::snprintf(out->name, sizeof(out->name), "%.127s", p.name);
  out->total_memory = p.totalGlobalMem;
  out->compute_major = p.major;
  out->compute_minor = p.minor;
  out->num_cores = p.multiProcessorCount;
  return EMBER_OK;
}

void* alloc(void*, int32_t index, size_t bytes) {
  if (bytes == 0) return nullptr;
  cudaStream_t stream = nullptr;
  const Status s = current_stream(index, &stream);
  if (!s.ok()) {
    log(3, s.message.c_str());
    return nullptr;
  }
  CachingAllocator& a = device_allocator(index);
  void* p = a.allocate(bytes, stream);
  if (!p) log(3, ("[cuda] " + a.last_error()).c_str());  // the ABI's alloc has no message slot
  return p;
}

void free_block(void*, int32_t index, void* ptr, size_t) {
  if (ptr) device_allocator(index).free(ptr);
}

Status copy_impl(int32_t index, void* dst, const void* src, size_t bytes, int32_t kind) {
  if (bytes == 0) return {};
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(current_stream(index, &stream));
  EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
  switch (kind) {
    case EMBER_COPY_H2D:
      // From pageable host memory the call returns once the source has been staged, so the
      // caller may reuse it at once; the kernels that read dst run later on the same stream.
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
      return {};
    case EMBER_COPY_D2H:
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
      // The host reads dst next. Note [Asynchronous errors name the last launch]
      return wait_stream(index, stream, "copy to the host");
    case EMBER_COPY_D2D:
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
      return {};
    default:
      return status_error(EMBER_ERR_INVALID, "[cuda] unknown copy kind %d", kind);
  }
}

int32_t copy_bytes(void*, int32_t index, void* dst, const void* src, size_t bytes, int32_t kind,
                   char* error, size_t cap) {
  return write_status(copy_impl(index, dst, src, bytes, kind), error, cap);
}

Status synchronize_impl(int32_t index) {
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(current_stream(index, &stream));
  EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
  // Note [Asynchronous errors name the last launch]
  EMBER_CUDA_RETURN_IF_ERROR(wait_stream(index, stream, "synchronize"));
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    cudaGetLastError();
    return status_error(EMBER_ERR_DEVICE,
                        "[cuda] synchronize on cuda:%d failed: %s (%s); the last op launched on "
                        "cuda:%d was '%s'",
                        index, cudaGetErrorString(err), cudaGetErrorName(err), index,
                        last_launch(index));
  }
  return {};
}

int32_t synchronize(void*, int32_t index, char* error, size_t cap) {
  return write_status(synchronize_impl(index), error, cap);
}

int32_t memory_stats(void*, int32_t index, ember_memory_stats* out) {
  *out = device_allocator(index).stats();
  return EMBER_OK;
}

void empty_cache(void*, int32_t index) {
  if (set_device(index).ok()) device_allocator(index).empty_cache();
}

int32_t init(const ember_host_v1* host, const ember_registrar_v1* reg, char* error, size_t cap) {
  if (!host || host->abi_major != EMBER_ABI_MAJOR) {
    std::snprintf(error, cap, "unexpected host ABI");
    return EMBER_ERR_INVALID;
  }
  set_host(host);
  static const ember_device_type_v1 table = [] {
    ember_device_type_v1 t{};
    t.struct_size = sizeof(t);
    t.name = "cuda";
    t.priority = 200;
    t.host_accessible = 0;
    t.device_count = device_count;
    t.device_props = device_props;
    t.alloc = alloc;
    t.free = free_block;
    t.copy = copy_bytes;
    t.synchronize = synchronize;
    t.memory_stats = memory_stats;
    t.empty_cache = empty_cache;
    return t;
  }();
  const int32_t id = reg->device_type(reg->ctx, &table);
  if (id < 0) {
    std::snprintf(error, cap, "could not register device type cuda");
    return EMBER_ERR_INTERNAL;
  }
  register_kernels(reg, id);
  return EMBER_OK;
}

#define EMBER_STR2(x) #x
#define EMBER_STR(x) EMBER_STR2(x)

const ember_plugin_v1 kDescriptor = {
    sizeof(ember_plugin_v1),
    EMBER_ABI_MAJOR,
    0,
    "cuda",
    "0.1.0",
    "CUDA runtime " EMBER_STR(CUDART_VERSION) ", cuDNN " EMBER_STR(CUDNN_MAJOR) "." EMBER_STR(
        CUDNN_MINOR) ", sm_90 + PTX, " __VERSION__,
    init,
    nullptr,
};

}  // namespace
}  // namespace ember::cuda

extern "C" EMBER_PLUGIN_EXPORT const ember_plugin_v1* ember_plugin_entry_v1(void) {
  return &ember::cuda::kDescriptor;
}
