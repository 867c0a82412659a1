// The device guard: every entry point of the plugin that may switch the calling thread's CUDA
// device (kernels, device-table slots, allocator segments, lazily created streams) leaves the
// caller's device current on exit (Note [Device guards]).
#pragma once

namespace ember::cuda {

// Note [Device guards]
// The CUDA runtime keeps one current device per host thread, shared by every library the thread
// calls. Ember's entry points make the device of their call current (set_device) so that
// launches, allocations and library handles land on it; without a guard the thread then stays
// on that device, and the caller's next CUDA call (its own code, another library, a second Ember
// device) silently runs on the wrong GPU. So each entry point that may switch holds a
// DeviceGuard for its whole body: it remembers the caller's device on entry and, on exit, makes
// it current again if anything inside switched away, however deep the switch happened (a
// kernel's prepare, the allocator's cudaMalloc, a cuDNN handle created on first use). Guards
// nest; only the outermost one ever restores something in practice.
//
// One exception, as in PyTorch (c10::cuda::MaybeSetDevice): when the caller's device has no
// primary context yet, it is not restored. Since CUDA 12, cudaSetDevice creates the primary
// context at once, so restoring device 0 to a thread that only ever used cuda:3 would allocate
// a context (hundreds of MiB) on GPU 0 in every process of a multi-GPU job. A device without a
// primary context was never used by anyone in this process, and a caller who had chosen it with
// cudaSetDevice would have created that context, so nothing the caller relies on is lost.
// Without a driver (no GPU) the guard reads no device and restores nothing.

/** Restores the caller's current device on scope exit (Note [Device guards]). `Ops` supplies
 *  `static bool current(int*)`, `static void set(int)` and `static bool has_context(int)`:
 *  CudaDeviceOps in the plugin, a fake in the unit tests. */
template <typename Ops>
class BasicDeviceGuard {
 public:
  /** Remembers the calling thread's current device. */
  BasicDeviceGuard() { saved_ = Ops::current(&original_); }
  /** Makes the remembered device current again if it changed and has a primary context. */
  ~BasicDeviceGuard() {
    if (!saved_) return;
    int now = -1;
    if (Ops::current(&now) && now != original_ && Ops::has_context(original_)) {
      Ops::set(original_);
    }
  }
  BasicDeviceGuard(const BasicDeviceGuard&) = delete;
  BasicDeviceGuard& operator=(const BasicDeviceGuard&) = delete;
  /** The device current on entry, or -1 when none could be read. */
  int original() const { return saved_ ? original_ : -1; }

 private:
  int original_ = -1;
  bool saved_ = false;
};

/** The CUDA runtime's side of a device guard (stream.cpp). */
struct CudaDeviceOps {
  /** cudaGetDevice; false (and the runtime's error cleared) when it fails. */
  static bool current(int* index);
  /** cudaSetDevice, errors cleared: a guard's destructor has nobody to report them to. */
  static void set(int index);
  /** Whether device `index` has an active primary context (true when that cannot be told). */
  static bool has_context(int index);
};

/** The plugin's device guard. */
using DeviceGuard = BasicDeviceGuard<CudaDeviceOps>;

}  // namespace ember::cuda
