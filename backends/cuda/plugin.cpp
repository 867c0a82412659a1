// The CUDA backend plugin: the entry symbol, the descriptor and the device table.
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "backends/cuda/device.h"
#include "backends/cuda/device_error.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/options.h"
#include "backends/cuda/stream.h"
#include "ember/plugin_sdk_entry.hpp"
#include "ember/plugin_sdk_ops.hpp"

namespace ember::cuda {
namespace {

// Note [Every slot behind the boundary]
// The core calls this plugin through init, the kernels and every function pointer of the device
// table, so each of them runs its body through the SDK's guard (Note [One boundary for every
// plugin entry point] in plugin_sdk_ops.hpp): kernels at registration (sdk::register_kernel),
// init and each slot below themselves, even those that only return a status and cannot throw
// today, so a later change cannot make one the exception that escapes. A slot with an error
// buffer gets the exception's message there; one without (alloc, free, props, stats, ...) logs
// it at error level and returns its failure value (a status, NULL).

/** A Status-returning body behind the boundary: its code, and its message or the exception's in
 * `error`. */
template <typename Body>
int32_t guard_status(char* error, size_t cap, Body&& body) noexcept {
  return sdk::guard(error, cap, [&] { return write_status(body(), error, cap); });
}

/** A slot without an error buffer behind the boundary: `body` returns the slot's status (or
 * EMBER_OK), an exception is logged, naming `slot`, and returns its status. */
template <typename Body>
int32_t guard_logged(const char* slot, Body&& body) noexcept {
  char message[256] = {0};
  const int32_t status = sdk::guard(message, sizeof(message), body);
  if (message[0] != '\0') {
    char line[320];
    std::snprintf(line, sizeof(line), "[cuda] %s: %s", slot, message);
    log(3, line);
  }
  return status;
}

// Note [No device is not an error]
// On a host with the CUDA libraries but no GPU or no driver, cudaGetDeviceCount fails fast
// (cudaErrorNoDevice, cudaErrorInsufficientDriver); the plugin then loads with 0 devices and
// this reason, and the CPU keeps working. Nothing here may abort or wait on a missing driver.
int32_t device_count_impl(char* reason, size_t cap) {
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

int32_t device_count(void*, char* reason, size_t cap) {
  return sdk::guard_value(reason, cap, 0, [&] { return device_count_impl(reason, cap); });
}

int32_t device_props_impl(int32_t index, ember_device_props* out) {
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

int32_t device_props(void*, int32_t index, ember_device_props* out) {
  return guard_logged("device_props", [&] { return device_props_impl(index, out); });
}

void* alloc_impl(int32_t index, size_t bytes, std::string* why) {
  if (bytes == 0) return nullptr;
  cudaStream_t stream = nullptr;
  const Status s = current_stream(index, &stream);
  if (!s.ok()) {
    if (why) *why = s.message;
    return nullptr;
  }
  return device_allocator(index).allocate(bytes, stream, why);
}

void* alloc(void*, int32_t index, size_t bytes) {
  void* p = nullptr;
  guard_logged("alloc", [&] {
    p = alloc_impl(index, bytes, nullptr);
    return EMBER_OK;
  });
  return p;
}

void* alloc_checked(void*, int32_t index, size_t bytes, char* error, size_t cap) {
  return sdk::guard_value(error, cap, nullptr, [&] {
    std::string why;
    void* p = alloc_impl(index, bytes, &why);
    if (!p && bytes > 0) std::snprintf(error, cap, "%s", why.c_str());
    return p;
  });
}

void free_block(void*, int32_t index, void* ptr, size_t) {
  guard_logged("free", [&] {
    if (ptr) device_allocator(index).free(ptr);
    return EMBER_OK;
  });
}

void* host_alloc(void*, size_t bytes, char* error, size_t cap) {
  return sdk::guard_value(error, cap, nullptr, [&] {
    std::string why;
    void* p = host_allocator().allocate(bytes, &why);
    if (!p && bytes > 0) std::snprintf(error, cap, "[cuda] %s", why.c_str());
    return p;
  });
}

void host_free(void*, void* ptr, size_t) {
  guard_logged("host_free", [&] {
    host_allocator().free(ptr);
    return EMBER_OK;
  });
}

// A completed wait for the device is where errors its kernels recorded surface (Note [Index
// errors reported at the next synchronization] in device_error.cpp); a failed wait reports its
// own failure first.
Status after_wait(int32_t index, Status waited) {
  if (!waited.ok()) return waited;
  return take_device_error(index);
}

// Note [Pinned host memory] (plugin_abi.h): from or into pinned memory, cudaMemcpyAsync returns
// before the copy engine touched the host bytes. A blocking copy then waits for the stream; an
// asynchronous one records the use on the pinned block instead, so the block is not handed out
// again before the copy is done.
Status copy_impl(int32_t index, void* dst, const void* src, size_t bytes, int32_t kind,
                 bool async) {
  if (bytes == 0) return {};
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(current_stream(index, &stream));
  const DeviceGuard guard;  // Note [Device guards]
  EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
  switch (kind) {
    case EMBER_COPY_H2D:
      // From pageable host memory the call returns once the source has been staged, so the
      // caller may reuse it at once; the kernels that read dst run later on the same stream.
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
      if (async && host_allocator().record_use(src, stream)) return {};
      if (host_allocator().contains(src)) {
        return after_wait(index, wait_stream(index, stream, "copy from the host"));
      }
      return {};
    case EMBER_COPY_D2H:
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
      if (async && host_allocator().record_use(dst, stream)) return {};
      // The host reads dst next. Note [Asynchronous errors name the last launch]
      return after_wait(index, wait_stream(index, stream, "copy to the host"));
    case EMBER_COPY_D2D:
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
      return {};
    default:
      return status_error(EMBER_ERR_INVALID, "[cuda] unknown copy kind %d", kind);
  }
}

int32_t copy_bytes(void*, int32_t index, void* dst, const void* src, size_t bytes, int32_t kind,
                   char* error, size_t cap) {
  return guard_status(error, cap,
                      [&] { return copy_impl(index, dst, src, bytes, kind, /*async=*/false); });
}

int32_t copy_async(void*, int32_t index, void* dst, const void* src, size_t bytes, int32_t kind,
                   char* error, size_t cap) {
  return guard_status(error, cap,
                      [&] { return copy_impl(index, dst, src, bytes, kind, /*async=*/true); });
}

Status synchronize_impl(int32_t index) {
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(current_stream(index, &stream));
  const DeviceGuard guard;  // Note [Device guards]
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
  return take_device_error(index);
}

int32_t synchronize(void*, int32_t index, char* error, size_t cap) {
  return guard_status(error, cap, [&] { return synchronize_impl(index); });
}

int32_t memory_stats(void*, int32_t index, ember_memory_stats* out) {
  return guard_logged("memory_stats", [&] {
    *out = device_allocator(index).stats();
    return EMBER_OK;
  });
}

void empty_cache(void*, int32_t index) {
  guard_logged("empty_cache", [&] {
    const DeviceGuard guard;  // Note [Device guards]
    if (set_device(index).ok()) device_allocator(index).empty_cache();
    return EMBER_OK;
  });
}

// ---- Streams and events (Note [Streams and events through the ABI]) -------------------------

// A null handle names the device's default stream.
Status resolve_stream(int32_t index, void* handle, cudaStream_t* out) {
  if (handle) {
    *out = static_cast<cudaStream_t>(handle);
    return {};
  }
  return default_stream(index, out);
}

void* stream_get(void*, int32_t index, int32_t which) {
  cudaStream_t s = nullptr;
  guard_logged("stream_get", [&] {
    const Status st =
        which == EMBER_STREAM_DEFAULT ? default_stream(index, &s) : current_stream(index, &s);
    if (!st.ok()) s = nullptr;
    return EMBER_OK;
  });
  return s;
}

int32_t stream_from_pool(void*, int32_t index, int32_t high_priority, void** out, char* error,
                         size_t cap) {
  return guard_status(error, cap, [&] {
    cudaStream_t s = nullptr;
    Status st = pool_stream(index, high_priority != 0, &s);
    if (st.ok()) *out = s;
    return st;
  });
}

int32_t stream_set_current(void*, int32_t index, void* stream, char* error, size_t cap) {
  return guard_status(error, cap,
                      [&] { return set_current_stream(index, static_cast<cudaStream_t>(stream)); });
}

Status stream_synchronize_impl(int32_t index, void* handle) {
  cudaStream_t s = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(resolve_stream(index, handle, &s));
  const DeviceGuard guard;  // Note [Device guards]
  EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
  return after_wait(index, wait_stream(index, s, "stream synchronize"));
}

int32_t stream_synchronize(void*, int32_t index, void* stream, char* error, size_t cap) {
  return guard_status(error, cap, [&] { return stream_synchronize_impl(index, stream); });
}

// cudaStreamQuery / cudaEventQuery: done, pending (not an error), or a failure naming `what`.
Status query_result(int32_t index, cudaError_t err, const char* what, int32_t* done) {
  if (err == cudaSuccess) {
    *done = 1;
    return {};
  }
  cudaGetLastError();
  if (err == cudaErrorNotReady) {
    *done = 0;
    return {};
  }
  return status_error(
      EMBER_ERR_DEVICE, "[cuda] %s on cuda:%d failed: %s (%s); the last op launched there was '%s'",
      what, index, cudaGetErrorString(err), cudaGetErrorName(err), last_launch(index));
}

Status stream_query_impl(int32_t index, void* handle, int32_t* done) {
  cudaStream_t s = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(resolve_stream(index, handle, &s));
  return query_result(index, cudaStreamQuery(s), "stream query", done);
}

int32_t stream_query(void*, int32_t index, void* stream, int32_t* done, char* error, size_t cap) {
  return guard_status(error, cap, [&] { return stream_query_impl(index, stream, done); });
}

Status stream_wait_event_impl(int32_t index, void* handle, void* event) {
  cudaStream_t s = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(resolve_stream(index, handle, &s));
  const DeviceGuard guard;  // Note [Device guards]
  EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
  EMBER_CUDA_CHECK(cudaStreamWaitEvent(s, static_cast<cudaEvent_t>(event), 0));
  return {};
}

int32_t stream_wait_event(void*, int32_t index, void* stream, void* event, char* error,
                          size_t cap) {
  return guard_status(error, cap, [&] { return stream_wait_event_impl(index, stream, event); });
}

Status event_create_impl(int32_t index, int32_t flags, void** out) {
  const DeviceGuard guard;  // Note [Device guards]
  EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
  cudaEvent_t e = nullptr;
  EMBER_CUDA_CHECK(cudaEventCreateWithFlags(
      &e, (flags & EMBER_EVENT_TIMING) ? cudaEventDefault : cudaEventDisableTiming));
  *out = e;
  return {};
}

int32_t event_create(void*, int32_t index, int32_t flags, void** out, char* error, size_t cap) {
  return guard_status(error, cap, [&] { return event_create_impl(index, flags, out); });
}

void event_destroy(void*, int32_t, void* event) {
  guard_logged("event_destroy", [&] {
    cudaEventDestroy(static_cast<cudaEvent_t>(event));
    return EMBER_OK;
  });
}

Status event_record_impl(int32_t index, void* event, void* handle) {
  cudaStream_t s = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(resolve_stream(index, handle, &s));
  const DeviceGuard guard;  // Note [Device guards]
  EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
  EMBER_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), s));
  return {};
}

int32_t event_record(void*, int32_t index, void* event, void* stream, char* error, size_t cap) {
  return guard_status(error, cap, [&] { return event_record_impl(index, event, stream); });
}

Status event_synchronize_impl(int32_t index, void* event) {
  const cudaError_t err = cudaEventSynchronize(static_cast<cudaEvent_t>(event));
  if (err == cudaSuccess) return take_device_error(index);
  cudaGetLastError();
  return status_error(EMBER_ERR_DEVICE,
                      "[cuda] event synchronize on cuda:%d failed: %s (%s); this may be an "
                      "asynchronous error of earlier work: the last op launched on cuda:%d was "
                      "'%s'",
                      index, cudaGetErrorString(err), cudaGetErrorName(err), index,
                      last_launch(index));
}

int32_t event_synchronize(void*, int32_t index, void* event, char* error, size_t cap) {
  return guard_status(error, cap, [&] { return event_synchronize_impl(index, event); });
}

int32_t event_query(void*, int32_t index, void* event, int32_t* done, char* error, size_t cap) {
  return guard_status(error, cap, [&] {
    return query_result(index, cudaEventQuery(static_cast<cudaEvent_t>(event)), "event query",
                        done);
  });
}

Status event_elapsed_impl(void* start, void* end, double* ms) {
  float f = 0;
  EMBER_CUDA_CHECK(
      cudaEventElapsedTime(&f, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end)));
  *ms = f;
  return {};
}

int32_t event_elapsed_ms(void*, int32_t, void* start, void* end, double* ms, char* error,
                         size_t cap) {
  return guard_status(error, cap, [&] { return event_elapsed_impl(start, end, ms); });
}

Status record_stream_impl(int32_t index, void* ptr, void* handle) {
  cudaStream_t s = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(resolve_stream(index, handle, &s));
  record_stream(index, ptr, s);  // memory the allocator does not own needs no tracking
  return {};
}

int32_t record_stream_fn(void*, int32_t index, void* ptr, void* stream, char* error, size_t cap) {
  return guard_status(error, cap, [&] { return record_stream_impl(index, ptr, stream); });
}

// Options (options.cpp).
int32_t set_option_fn(void* ctx, const char* key, const char* value, char* error, size_t cap) {
  return sdk::guard(error, cap, [&] { return set_option(ctx, key, value, error, cap); });
}

int32_t get_option_fn(void* ctx, const char* key, char* value, size_t cap) {
  return guard_logged("get_option", [&] { return get_option(ctx, key, value, cap); });
}

int32_t init_impl(const ember_host_v1* host, const ember_registrar_v1* reg, char* error,
                  size_t cap) {
  if (host) set_host(host);
  static const ember_device_type_v1 table = [] {
    ember_device_type_v1 t = sdk::device_type("cuda", 200, /*host_accessible=*/false, device_count,
                                              alloc, free_block, copy_bytes, synchronize);
    t.device_props = device_props;
    t.memory_stats = memory_stats;
    t.empty_cache = empty_cache;
    t.alloc_checked = alloc_checked;
    t.host_alloc = host_alloc;
    t.host_free = host_free;
    t.copy_async = copy_async;
    t.stream_get = stream_get;
    t.stream_from_pool = stream_from_pool;
    t.stream_set_current = stream_set_current;
    t.stream_synchronize = stream_synchronize;
    t.stream_query = stream_query;
    t.stream_wait_event = stream_wait_event;
    t.event_create = event_create;
    t.event_destroy = event_destroy;
    t.event_record = event_record;
    t.event_synchronize = event_synchronize;
    t.event_query = event_query;
    t.event_elapsed_ms = event_elapsed_ms;
    t.record_stream = record_stream_fn;
    t.set_option = set_option_fn;
    t.get_option = get_option_fn;
    return t;
  }();
  return sdk::init_backend(host, reg, table, register_kernels, error, cap);
}

int32_t init(const ember_host_v1* host, const ember_registrar_v1* reg, char* error, size_t cap) {
  return sdk::guard(error, cap, [&] { return init_impl(host, reg, error, cap); });
}

#define EMBER_STR2(x) #x
#define EMBER_STR(x) EMBER_STR2(x)

const ember_plugin_v1 kDescriptor = sdk::plugin_descriptor(
    0, "cuda", "0.1.0",
    "CUDA runtime " EMBER_STR(CUDART_VERSION) ", cuDNN " EMBER_STR(CUDNN_MAJOR) "." EMBER_STR(
        CUDNN_MINOR) ", CUDA architectures " EMBER_CUDA_ARCHS ", " __VERSION__,
    init);

}  // namespace
}  // namespace ember::cuda

EMBER_PLUGIN_DEFINE_ENTRY(ember::cuda::kDescriptor)
