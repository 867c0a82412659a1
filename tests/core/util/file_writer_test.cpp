// FileWriter: what a path names is written, never replaced (Note [Writing files]).
#include "core/util/file_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ember/ember.h>

#include "tests/testing/special_files.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

namespace fs = std::filesystem;
using detail::FileWriter;
using detail::write_file;
using ember::testing::contains;
using ember::testing::error_of;
using ember::testing::read_file;
using ember::testing::TempDir;

TEST(FileWriter, ReplacesARegularFileAtomically) {
  TempDir dir;
  const std::string path = dir.file("f.txt");
  write_file(path, "old", "test.write");
  {
    FileWriter w(path, "test.write");
    w.write("new contents", 12);
    EXPECT_EQ(read_file(path), "old");  // nothing changes before commit
    w.commit();
  }
  EXPECT_EQ(read_file(path), "new contents");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"f.txt"});
  {
    FileWriter w(path, "test.write");
    w.write("lost", 4);
  }  // never committed: the old file stays, the temporary goes
  EXPECT_EQ(read_file(path), "new contents");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"f.txt"});
}

TEST(FileWriter, WritesTheFileASymlinkPointsAtAndKeepsTheLink) {
  TempDir dir;
  fs::create_directory(dir.file("real"));
  write_file(dir.file("real/weights"), "v1", "test.write");
  fs::create_symlink("real/weights", dir.file("link"));     // relative, as `ln -s` makes them
  fs::create_symlink(dir.file("link"), dir.file("link2"));  // a chain, absolute
  write_file(dir.file("link2"), "v2", "test.write");
  EXPECT_TRUE(fs::is_symlink(dir.file("link")));
  EXPECT_TRUE(fs::is_symlink(dir.file("link2")));
  EXPECT_EQ(read_file(dir.file("real/weights")), "v2");
  EXPECT_EQ(FileWriter(dir.file("link2"), "test.write").target(), dir.file("real/weights"));
  // A dangling link makes the file it names.
  fs::create_symlink("real/later", dir.file("dangling"));
  write_file(dir.file("dangling"), "v3", "test.write");
  EXPECT_TRUE(fs::is_symlink(dir.file("dangling")));
  EXPECT_EQ(read_file(dir.file("real/later")), "v3");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"dangling", "link", "link2", "real"}));
  // A loop is an error, not a hang.
  fs::create_symlink("loop_b", dir.file("loop_a"));
  fs::create_symlink("loop_a", dir.file("loop_b"));
  EXPECT_TRUE(
      contains(error_of<IoError>([&] { write_file(dir.file("loop_a"), "x", "test.write"); }),
               "[test.write] " + dir.file("loop_a") + ": Too many levels of symbolic links"));
}

TEST(FileWriter, WritesThroughAFifoAndLeavesIt) {
  TempDir dir;
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string text(200'000, 'x');  // more than a pipe holds
  testing::FifoReader reader(fifo);
  write_file(fifo, text, "test.write");
  EXPECT_EQ(reader.bytes().size(), text.size());
  EXPECT_EQ(reader.bytes(), text);
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"pipe"});
}

TEST(FileWriter, WritesThroughADeviceAndLeavesIt) {
  TempDir dir;
  const std::string null = testing::null_device(dir.file("null"));
  if (null.empty()) GTEST_SKIP() << "root without the right to make a device node";
  write_file(null, "discarded", "test.write");
  struct stat st {};
  ASSERT_EQ(::stat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  // Through a symlink too.
  fs::create_symlink(null, dir.file("to_null"));
  write_file(dir.file("to_null"), "discarded", "test.write");
  ASSERT_EQ(::stat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_TRUE(fs::is_symlink(dir.file("to_null")));
}

TEST(FileWriter, RefusesADirectoryAndASocketAndLeavesThem) {
  TempDir dir;
  fs::create_directory(dir.file("d"));
  write_file(dir.file("d/inside"), "keep", "test.write");
  EXPECT_EQ(error_of<IoError>([&] { write_file(dir.file("d"), "x", "test.write"); }),
            "[test.write] " + dir.file("d") + ": is a directory, not a file (give a file path)");
  EXPECT_EQ(read_file(dir.file("d/inside")), "keep");
  fs::create_symlink("d", dir.file("to_d"));
  EXPECT_EQ(error_of<IoError>([&] { write_file(dir.file("to_d"), "x", "test.write"); }),
            "[test.write] " + dir.file("to_d") + ": the link's target " + dir.file("d") +
                " is a directory, not a file (give a file path)");
  const int sock = testing::bound_socket(dir.file("s"));
  ASSERT_GE(sock, 0);
  EXPECT_TRUE(contains(error_of<IoError>([&] { write_file(dir.file("s"), "x", "test.write"); }),
                       "is a socket, not a file"));
  EXPECT_TRUE(fs::is_socket(dir.file("s")));
  ::close(sock);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"d", "s", "to_d"}));
}

TEST(FileWriter, FailuresNameTheOperationAndThePath) {
  TempDir dir;
  EXPECT_TRUE(
      contains(error_of<IoError>([&] { write_file(dir.file("no/such/f"), "x", "test.write"); }),
               "[test.write] " + dir.file("no/such/f") + ": cannot create a temporary file in " +
                   dir.file("no/such") + ": No such file or directory"));
  detail::testing::fail_writes_after(3);
  const std::string error =
      error_of<IoError>([&] { write_file(dir.file("f"), "abcdef", "test.write"); });
  detail::testing::fail_writes_after(std::nullopt);
  EXPECT_TRUE(contains(error, "failed after 3 bytes: No space left on device")) << error;
  EXPECT_TRUE(dir.entries().empty());
}

}  // namespace
}  // namespace ember
