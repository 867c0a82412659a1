// Writing files: every file Ember writes (checkpoints, traces, charts) goes through FileWriter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ember/util/export.h"

namespace ember::detail {

/** Writes one file at a path (Note [Writing files]): a regular file (or a new one) atomically,
 *  through a temporary beside it renamed over it; a symlink's target, keeping the link; a FIFO or
 *  device by writing through it; a directory or socket is refused. Errors are IoErrors naming
 *  the operation `op` and the path. Not committed, nothing replaces the old file. */
class EMBER_API FileWriter {
 public:
  /** Opens `path` for writing on behalf of `op` ("io.save"); throws IoError if it cannot. */
  FileWriter(std::string path, const char* op);
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;
  /** Removes the temporary unless committed. */
  ~FileWriter();

  /** Appends `bytes` bytes at `data`; throws IoError (the old file is left as it was). */
  void write(const void* data, size_t bytes);
  /** Makes the written bytes the file: flushed to disk and renamed over it (a regular file), or
   *  closed (written through). */
  void commit();
  /** The file written: the path with the symlinks of its last component resolved. */
  const std::string& target() const { return target_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err) const;

  std::string path_, op_, target_, dir_, temp_;  // temp_ empty: written through
  int fd_ = -1;
  int64_t written_ = 0;
  bool committed_ = false;
};

/** Writes `text` as the whole file at `path` through a FileWriter. */
EMBER_API void write_file(const std::string& path, std::string_view text, const char* op);

namespace testing {
/** Makes every FileWriter fail with ENOSPC after `bytes` more bytes of each file; nullopt turns
 *  it off. */
EMBER_API void fail_writes_after(std::optional<int64_t> bytes);
}  // namespace testing

}  // namespace ember::detail
