// Opening files for reading without blocking on what is not a file (libember internal).
#pragma once

#include <string>

namespace ember::io::detail {

/** A read-only descriptor (close-on-exec) of the regular file at `path`; a FIFO, device, socket
 * or directory is refused with an IoError naming `op` and what the path is, without blocking. */
int open_regular_file(const std::string& path, const char* op);

}  // namespace ember::io::detail
