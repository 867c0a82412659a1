// Streams and events: one RAII wrapper for every foreign handle, each device's default stream
// (non-blocking, created on first use), a pool of further streams, and the calling thread's
// current stream per device.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "backends/cuda/check.h"
#include "backends/cuda/device_guard.h"

namespace ember::cuda {

/** A move-only owner of a vendor handle, destroyed with `Destroy`. */
template <typename Handle, auto Destroy>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  /** Takes ownership of `h`. */
  explicit UniqueHandle(Handle h) : h_(h) {}
  ~UniqueHandle() { reset(); }
  UniqueHandle(UniqueHandle&& o) noexcept : h_(std::exchange(o.h_, Handle{})) {}
  UniqueHandle& operator=(UniqueHandle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, Handle{});
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  /** The handle, still owned. */
  Handle get() const { return h_; }
  /** Gives up ownership. */
  Handle release() { return std::exchange(h_, Handle{}); }
  /** Destroys the handle, if any. */
  void reset() {
    if (h_) Destroy(h_);
    h_ = Handle{};
  }
  explicit operator bool() const { return h_ != Handle{}; }

 private:
  Handle h_{};
};

/** An owned CUDA stream. */
using CudaStream = UniqueHandle<cudaStream_t, cudaStreamDestroy>;
/** An owned CUDA event. */
using CudaEvent = UniqueHandle<cudaEvent_t, cudaEventDestroy>;

/** Most devices one process handles. */
inline constexpr int kMaxDevices = 64;

/** Streams per priority in each device's pool (PyTorch's kStreamsPerPool). */
inline constexpr int kStreamsPerPool = 32;

/** Makes `index` the calling thread's CUDA device (a no-op if it already is). Only under a
 * DeviceGuard, which gives the caller's device back (Note [Device guards]). */
Status set_device(int index);
/** The default stream of device `index` (non-blocking, shared by all threads), created on first
 * use (Note [Current stream per device]). */
Status default_stream(int index, cudaStream_t* out);
/** The calling thread's current stream of device `index`: the last one it set, else the
 * device's default stream. */
Status current_stream(int index, cudaStream_t* out);
/** The stream a kernel call runs everything on (launches, library handles, scratch memory):
 * call->stream when the core set it, else the calling thread's current stream of device
 * `index` (Note [The kernel's stream]). */
Status kernel_stream(const ember_kernel_call* call, int index, cudaStream_t* out);
/** Makes `stream` the calling thread's current stream of device `index`; nullptr goes back to
 * the device's default stream. */
Status set_current_stream(int index, cudaStream_t stream);
/** A stream of device `index`'s pool, handed out round-robin (created on first use, never
 * destroyed); of the highest priority the device offers when `high_priority`. */
Status pool_stream(int index, bool high_priority, cudaStream_t* out);
/** Remembers `op` (a string with static storage) as the last work launched on the calling
 * thread's current device (Note [Asynchronous errors name the last launch]). */
void note_launch(const char* op);
/** The op last launched on device `index`, or "(none)". */
const char* last_launch(int index);
/** Waits for `stream` of device `index`, then collects any error not yet reported
 * (cudaGetLastError); a failure names `what` and the last launch on the device. */
Status wait_stream(int index, cudaStream_t stream, const char* what);
/** A new event (timing disabled unless asked). */
Status event_create(CudaEvent* out, bool timing = false);
/** Records `event` on the current stream of `index`. */
Status event_record(int index, cudaEvent_t event);

}  // namespace ember::cuda
