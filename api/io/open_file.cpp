#include "api/io/open_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ember/util/error.h"

namespace ember::io::detail {
namespace {

/** What a file of mode `mode` is, for an error message. */
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "something other than a regular file";
}

}  // namespace

// Note [Refusing what is not a file]
// Opening a FIFO for reading blocks until a writer appears, and reading a device such as
// /dev/zero never ends, so a loader handed either would hang. The path is opened with O_NONBLOCK
// (which makes opening a FIFO return at once) and checked with fstat on the descriptor itself, so
// a file swapped for a FIFO between a check and the open cannot slip through; only then is the
// descriptor made blocking again for ordinary reads.
int open_regular_file(const std::string& path, const char* op) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  EMBER_CHECK_IO(fd >= 0, "[{}] {}: cannot open: {}", op, path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    EMBER_CHECK_IO(false, "[{}] {}: cannot stat: {}", op, path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    EMBER_CHECK_IO(false, "[{}] {}: not a regular file: it is {} (pass a file)", op, path,
                   file_kind(st.st_mode));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    EMBER_CHECK_IO(false, "[{}] {}: cannot make the descriptor blocking: {}", op, path,
                   std::strerror(err));
  }
  return fd;
}

}  // namespace ember::io::detail
