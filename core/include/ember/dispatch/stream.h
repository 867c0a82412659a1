// Streams and events: device-agnostic handles on a backend's queues of work (Note [Streams and
// events through the ABI] in plugin_abi.h). The core never looks inside a handle.
#pragma once

#include <cstdint>

#include "ember/tensor/device.h"
#include "ember/util/export.h"

namespace ember {

class Event;

/** A queue of work on one device: the backend's stream handle and its device; cheap to copy.
 *  A device type without streams (the CPU) has one stream, with a null handle, always idle. */
class EMBER_API Stream {
 public:
  /** The CPU's stream. */
  Stream() = default;
  /** The stream `handle` of `device`, as a backend handed it out. */
  Stream(Device device, void* handle) : device_(device), handle_(handle) {}
  /** The device whose work this stream queues. */
  Device device() const { return device_; }
  /** The backend's handle (a cudaStream_t for "cuda"), or null for a device without streams. */
  void* handle() const { return handle_; }
  /** Waits until all work queued here has completed. */
  void synchronize() const;
  /** True if all work queued here has completed; never blocks. */
  bool query() const;
  /** Makes work queued here from now on wait for `event` (the host does not wait). */
  void wait(const Event& event) const;
  /** Makes work queued here from now on wait for the work queued on `other` so far. */
  void wait(const Stream& other) const;
  /** Same device and handle. */
  bool operator==(const Stream&) const = default;

 private:
  Device device_;
  void* handle_ = nullptr;
};

/** The calling thread's current stream of `device` (its default stream unless one was set). */
EMBER_API Stream current_stream(Device device);
/** The default stream of `device`, shared by all threads. */
EMBER_API Stream default_stream(Device device);
/** A stream from `device`'s pool (never destroyed, handed out round-robin, as PyTorch's
 *  getStreamFromPool); throws for a device type without streams. */
EMBER_API Stream stream_from_pool(Device device, bool high_priority = false);
/** Makes `stream` the calling thread's current stream of its device. */
EMBER_API void set_current_stream(const Stream& stream);

/** Makes a stream current for the calling thread until the guard goes out of scope. */
class EMBER_API StreamGuard {
 public:
  /** Makes `stream` current, remembering the stream it replaces. */
  explicit StreamGuard(const Stream& stream);
  /** Restores the stream that was current before. */
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

/** A point in a stream's work: recorded, waited for, timed. Move-only; owns the backend event. */
class EMBER_API Event {
 public:
  /** A new event of `device`; throws for a device type without events. */
  explicit Event(Device device, bool enable_timing = false);
  /** Destroys the backend's event (work it marks may still be pending). */
  ~Event();
  /** Takes over `other`'s event. */
  Event(Event&& other) noexcept;
  /** Takes over `other`'s event, destroying this one's. */
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  /** Marks the work queued so far on the current stream of the event's device. */
  void record();
  /** Marks the work queued so far on `stream` (which must be on the event's device). */
  void record(const Stream& stream);
  /** True once the marked work has completed (or if never recorded); never blocks. */
  bool query() const;
  /** Waits until the marked work has completed. */
  void synchronize() const;
  /** Milliseconds from this event to `end`, both recorded with timing and completed. */
  double elapsed_ms(const Event& end) const;
  /** The event's device. */
  Device device() const { return device_; }
  /** The backend's handle. */
  void* handle() const { return handle_; }

 private:
  Device device_;
  void* handle_ = nullptr;
  bool timing_ = false;
};

}  // namespace ember
