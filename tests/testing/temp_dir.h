// A temporary directory for the tests that write files.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace ember::testing {

/** The bytes of the file at `path` ("" if it cannot be read). */
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/** A fresh directory under the system temp dir, removed with everything in it (even where a
 *  test took away its permissions). */
class TempDir {
 public:
  /** Makes `<temp>/<prefix>XXXXXX`. */
  explicit TempDir(const std::string& prefix = "ember_test_") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
    EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /** The directory. */
  const std::filesystem::path& path() const { return path_; }
  /** The path of `name` inside it. */
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  /** Names of the entries in the directory, sorted. */
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_)) {
      out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace ember::testing
