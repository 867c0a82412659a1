// What a path can name besides a regular file, for the tests of the writers (Note [Writing files]
// in core/util/file_writer.cpp): FIFOs with a reader, device nodes, sockets.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

namespace ember::testing {

/** Reads a FIFO in the background from now on, without blocking the writer or itself: everything
 *  written until the writer closes it, or what came within `seconds` (a writer that never
 *  comes, e.g. because the FIFO was replaced, leaves it empty). */
class FifoReader {
 public:
  explicit FifoReader(const std::string& path, double seconds = 20.0) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) return;
    thread_ = std::thread([this, seconds] { run(seconds); });
  }
  FifoReader(const FifoReader&) = delete;
  FifoReader& operator=(const FifoReader&) = delete;
  ~FifoReader() { (void)bytes(); }

  /** What was read (waits for the reader to finish). */
  const std::string& bytes() {
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_), fd_ = -1;
    return data_;
  }

 private:
  void run(double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    char buf[65536];
    while (std::chrono::steady_clock::now() < deadline) {
      const ssize_t n = ::read(fd_, buf, sizeof(buf));
      if (n > 0) {
        data_.append(buf, static_cast<size_t>(n));
      } else if (n == 0 && !data_.empty()) {
        return;  // the writer closed it
      } else {   // no writer yet (0) or no data yet (EAGAIN)
        pollfd p{fd_, POLLIN, 0};
        (void)::poll(&p, 1, 5);
        if (n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
  }

  int fd_ = -1;
  std::thread thread_;
  std::string data_;
};

/** A character device like /dev/null at `path` (mknod; as root), or /dev/null itself for other
 *  users, who cannot replace it whatever a writer does; "" when neither is safe (root without
 *  the right to make device nodes). */
inline std::string null_device(const std::string& path) {
  if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) return path;
  return ::geteuid() != 0 ? std::string("/dev/null") : std::string();
}

/** A listening Unix socket bound at `path`; its descriptor (-1 on failure), to close. */
inline int bound_socket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd < 0 || path.size() >= sizeof(addr.sun_path)) return -1;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace ember::testing
