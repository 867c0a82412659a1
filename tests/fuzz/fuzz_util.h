// Helpers shared by the fuzz targets: an in-memory file for readers that take a path, and the
// one kind of failure a reader may report.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace ember::fuzz {

// Note [Fuzzing readers that take a path]
// The readers open files by name. Each input is written to an anonymous memory file
// (memfd_create) and read back through /proc/self/fd/N: no disk traffic, no leftovers, and the
// reader runs exactly the code path it runs on a real file.
/** The bytes of one input as a file readable by path; closed when it goes out of scope. */
class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size) {
    fd_ = ::memfd_create("ember-fuzz", MFD_CLOEXEC);
    if (fd_ < 0) die("memfd_create failed");
    size_t done = 0;
    while (done < size) {
      const ssize_t w = ::write(fd_, data + done, size - done);
      if (w <= 0) die("write to the memfd failed");
      done += static_cast<size_t>(w);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  ~MemFile() { ::close(fd_); }

  /** A path that opens the bytes. */
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] static void die(const char* what) {
    std::perror(what);
    std::abort();
  }
  int fd_ = -1;
  std::string path_;
};

/** Aborts (a finding) unless a reader's error message starts with its "[op]" prefix. */
inline void expect_prefix(const char* message, std::string_view prefix) {
  if (std::string_view(message).substr(0, prefix.size()) != prefix) {
    std::fprintf(stderr, "error message lacks the '%.*s' prefix: %s\n",
                 static_cast<int>(prefix.size()), prefix.data(), message);
    std::abort();
  }
}

}  // namespace ember::fuzz
