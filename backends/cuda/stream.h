// Streams and events: one RAII wrapper for every foreign handle, and the current stream of
// each device (a non-blocking stream created on first use).
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "backends/cuda/check.h"

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

/** Makes `index` the calling thread's CUDA device (a no-op if it already is). */
Status set_device(int index);
/** The current stream of device `index`, creating it (non-blocking) on first use. */
Status current_stream(int index, cudaStream_t* out);
/** Makes `stream` (owned by the caller, or nullptr for the legacy default stream) current. */
void set_current_stream(int index, cudaStream_t stream);
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
