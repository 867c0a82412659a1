// ExitGate: keeps threads out of a region while the process exits (Note [Kernels at exit]).
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "ember/util/export.h"

namespace ember {

// Note [Exit gates]
// A thread that the process does not wait for (a detached C++ thread, a Python daemon thread)
// may be inside a region when another thread exits, and exit then destroys what the region
// uses. An ExitGate keeps such threads out: a thread announces itself (enter), then reads the
// gate; the exiting thread closes the gate, then waits until no announced thread is left. Both
// steps are sequentially consistent, so no thread passes the gate unseen. A thread that finds the
// gate closed parks for good (the process ends around it); the thread that closed it passes
// freely. A forked child starts with only the forking thread, so it reopens the gate (reset).
/** A gate threads pass to enter a region that must be empty while the process exits. */
class EMBER_API ExitGate {
 public:
  /** Enters the region; parks the calling thread for good once the gate is closed, unless it is
   *  the thread that closed it. */
  void enter() noexcept;
  /** Leaves the region entered by enter(). */
  void leave() noexcept { inside_.fetch_sub(1); }
  /** Closes the gate; the calling thread keeps passing it. False if it was closed already. */
  bool close() noexcept;
  /** Waits until no thread is inside, or `limit` has passed; true if the region emptied. */
  bool wait_empty(std::chrono::milliseconds limit) const noexcept;
  /** True once closed, on a thread other than the one that closed it. */
  bool parks_here() const noexcept {
    return closed_.load() && std::this_thread::get_id() != closer_.load();
  }
  /** Opens the gate with nobody inside (a forked child: only the forking thread is left). */
  void reset() noexcept;

 private:
  std::atomic<int> inside_{0};
  std::atomic<bool> closed_{false};
  std::atomic<std::thread::id> closer_{};
};

/** Parks the calling thread for good (the process is exiting around it), after the park hook. */
[[noreturn]] EMBER_API void park_for_exit() noexcept;

/** Sets what a thread runs just before it parks for good (null: nothing); an interpreter lets go
 *  of its lock there, so that the exiting thread never waits for a parked one. */
EMBER_API void set_park_hook(void (*hook)() noexcept) noexcept;

}  // namespace ember
