// Kernel calls at process exit (Note [Kernels at exit] in core/dispatch/call.cpp).
#pragma once

#include <chrono>

#include "ember/util/export.h"

namespace ember {

/** Closes the kernel gate for the process's exit: from now on a kernel call from any thread but
 *  this one parks that thread for good; waits (at most `limit`) for the calls already running.
 *  Ember's atexit handler does this; an embedding interpreter calls it where its own exit starts
 *  (Python's atexit), before the libraries' static destructors can run. */
EMBER_API void close_kernels_for_exit(std::chrono::milliseconds limit = std::chrono::seconds(5));

}  // namespace ember
