// FileWriter: how Ember writes a file at a path the user gave (Note [Writing files]).
#include "core/util/file_writer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "ember/util/error.h"

namespace ember::detail {
namespace {

namespace fs = std::filesystem;

std::atomic<int64_t> g_fail_writes_after{-1};
std::atomic<uint64_t> g_temp_counter{0};

// Note [Writing files]
// A save must never destroy what its path names. Writing a temporary and renaming it over the
// path replaces the path's node, whatever it is: a symlink became a regular file (the file it
// pointed at kept its old contents), and a FIFO or a device node was replaced by a file (as root,
// saving to /dev/null replaced /dev/null). PyTorch's torch.save opens the path and writes
// through it, so FileWriter does what open(path, "wb") does, keeping the atomic rename where it
// is safe:
//  - a symlink (the path's last component, followed link by link) stands for the file it points
//    at, which is written as below; the link stays;
//  - a regular file, or nothing yet, is written to a temporary beside it that is flushed and
//    renamed over it, so a reader never sees half a file and a failed save leaves the old one
//    (its permissions carry over);
//  - a FIFO or a character or block device is opened and written through (a FIFO waits for a
//    reader, as open() does), never removed;
//  - a directory or a socket is refused, as open() refuses them.
// Files written as they grow (ember train's CSV logs) are streams opened on the path, which write
// through as open() does; what is written whole goes through FileWriter.

/** Up to 40 links are followed, as the kernel does (ELOOP beyond). */
constexpr int kMaxLinks = 40;

/** `path` with the symlinks of its last component followed until a non-link or nothing. */
std::string resolve_links(const std::string& path, const std::string& op) {
  std::string p = path;
  for (int hops = 0; hops <= kMaxLinks; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::error_code ec;
    const fs::path link = fs::read_symlink(p, ec);
    if (ec) {
      throw IoError(
          fmt::format("[{}] {}: cannot read the symbolic link {}: {}", op, path, p, ec.message()));
    }
    p = link.is_absolute() ? link.string() : (fs::path(p).parent_path() / link).string();
  }
  throw IoError(fmt::format("[{}] {}: {}", op, path, std::strerror(ELOOP)));
}

/** What the node at `mode` is, for errors. */
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// Note [Temporary files of killed saves]
// A save writes `.<name>.tmp.<host>.<pid>.<n>` (host: a hash of the host's name) beside `<name>`
// and renames it over the target, so a reader never sees half a file. A process killed before the
// rename (SIGKILL, power loss aside) leaves that temporary behind, as large as the checkpoint, and
// nothing else would ever remove it. Each save of `<name>` therefore first removes the temporaries
// of `<name>` that this host's processes left and that no live process owns: the pid in the name
// has exited. Those of other hosts (a shared file system) and of live processes, this one included,
// are left alone.
/** This host in temporary file names: 8 hex digits of a hash (FNV-1a) of its name, short so
 * that long file names still fit. */
std::string host_tag() {
  char buf[256] = {};
  (void)::gethostname(buf, sizeof(buf) - 1);
  uint32_t h = 2166136261u;
  for (const char* p = buf; *p != '\0'; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 16777619u;
  return fmt::format("{:08x}", h);
}

/** Removes the temporaries of `filename` in `dir` left by this host's exited processes. */
void remove_stale_temporaries(const fs::path& dir, const std::string& filename,
                              const std::string& host) {
  const std::string prefix = fmt::format(".{}.tmp.{}.", filename, host);
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    // What follows the prefix is "<pid>.<n>", both decimal.
    const std::string rest = name.substr(prefix.size());
    const size_t dot = rest.find('.');
    const auto decimal = [](std::string_view v) {
      return !v.empty() && v.size() <= 18 &&
             std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (dot == std::string::npos || !decimal(std::string_view(rest).substr(0, dot)) ||
        !decimal(std::string_view(rest).substr(dot + 1))) {
      continue;
    }
    const long long pid = std::stoll(rest.substr(0, dot));
    if (pid <= 0 || pid > INT32_MAX || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive
    std::error_code type_ec;
    if (!fs::is_regular_file(fs::symlink_status(it->path(), type_ec))) continue;
    (void)::unlink(it->path().c_str());
  }
}

}  // namespace

FileWriter::FileWriter(std::string path, const char* op)
    : path_(std::move(path)), op_(op), target_(resolve_links(path_, op_)) {
  const fs::path t(target_);
  EMBER_CHECK_IO(!t.filename().empty(), "[{}] '{}' names no file (give a file path)", op_, path_);
  struct stat st {};
  const bool exists = ::stat(target_.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    EMBER_CHECK_IO(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode),
                   "[{}] {}: {}is {}, not a file (give a file path)", op_, path_,
                   target_ == path_ ? "" : fmt::format("the link's target {} ", target_),
                   kind_of(st.st_mode));
    // Written through, as open(path, "wb") does (Note [Writing files]).
    do {
      fd_ = ::open(target_.c_str(), O_WRONLY | O_TRUNC | O_NOCTTY | O_CLOEXEC);
    } while (fd_ < 0 && errno == EINTR);
    if (fd_ < 0) fail(fmt::format("cannot open {} for writing", kind_of(st.st_mode)), errno);
    return;
  }
  dir_ = t.parent_path().empty() ? std::string(".") : t.parent_path().string();
  const std::string host = host_tag();
  remove_stale_temporaries(dir_, t.filename().string(), host);
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp_ = (fs::path(dir_) / fmt::format(".{}.tmp.{}.{}.{}", t.filename().string(), host,
                                          ::getpid(), g_temp_counter.fetch_add(1)))
                .string();
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0 || errno != EEXIST) break;
  }
  if (fd_ < 0) {
    const int err = errno;
    temp_.clear();
    fail(fmt::format("cannot create a temporary file in {}", dir_), err);
  }
  // Replacing a file keeps its permissions.
  if (exists) (void)::fchmod(fd_, st.st_mode & 07777);
}

FileWriter::~FileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void FileWriter::fail(const std::string& what, int err) const {
  throw IoError(fmt::format("[{}] {}: {}: {}", op_, path_, what, std::strerror(err)));
}

void FileWriter::write(const void* data, size_t bytes) {
  EMBER_ASSERT(fd_ >= 0 && !committed_);
  const char* p = static_cast<const char*>(data);
  const int64_t limit = g_fail_writes_after.load();
  const auto failed = [&](int err) {
    fail(
        fmt::format("write to {} failed after {} bytes", temp_.empty() ? target_ : temp_, written_),
        err);
  };
  while (bytes > 0) {
    size_t chunk = std::min<size_t>(bytes, size_t{1} << 30);
    if (limit >= 0) {
      const int64_t room = std::max<int64_t>(limit - written_, 0);
      if (room == 0) failed(ENOSPC);
      chunk = std::min<size_t>(chunk, static_cast<size_t>(room));
    }
    const ssize_t w = ::write(fd_, p, chunk);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) failed(errno);
    p += w;
    bytes -= static_cast<size_t>(w);
    written_ += w;
  }
}

void FileWriter::commit() {
  EMBER_ASSERT(fd_ >= 0 && !committed_);
  if (temp_.empty()) {  // written through: nothing to flush or rename
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0 && errno != EINTR) fail(fmt::format("cannot close {}", target_), errno);
    committed_ = true;
    return;
  }
  if (::fsync(fd_) != 0) fail(fmt::format("cannot flush {} to disk", temp_), errno);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail(fmt::format("cannot close {}", temp_), errno);
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    fail(fmt::format("cannot replace {} with {}", target_ == path_ ? "it" : target_, temp_), errno);
  }
  committed_ = true;
  // Make the rename itself durable; a failure here leaves a complete file, so it is ignored.
  const int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    (void)::fsync(dir_fd);
    ::close(dir_fd);
  }
}

void write_file(const std::string& path, std::string_view text, const char* op) {
  FileWriter f(path, op);
  f.write(text.data(), text.size());
  f.commit();
}

namespace testing {
void fail_writes_after(std::optional<int64_t> bytes) {
  g_fail_writes_after = bytes.value_or(-1);
}
}  // namespace testing

}  // namespace ember::detail
