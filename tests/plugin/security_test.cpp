// Plugin-directory security: the default search path holds no directory an attacker picks (the
// working directory, the executable's directory), and a plugin file or directory that others
// can write is refused in strict mode and loaded with a warning otherwise.
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <ember/ember.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/plugin/plugin_test_util.h"

namespace ember {
namespace {

namespace fs = std::filesystem;
using test::has;
using test::run_probe;

const std::string kGood = std::string(EMBER_FIXTURE_DIR) + "/libember-fixture-good.so";
const std::string kGoodName = "libember-fixture-good.so";

/** A fresh directory (mode 0755), removed with everything in it. */
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ember-security-XXXXXX";
    path_ = ::mkdtemp(tmpl);
    ::chmod(path_.c_str(), 0755);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/** Copies the good fixture plugin into `dir` with `mode`; returns its path. */
std::string install_good(const std::string& dir, mode_t mode) {
  const std::string dst = dir + "/" + kGoodName;
  fs::copy_file(kGood, dst, fs::copy_options::overwrite_existing);
  ::chmod(dst.c_str(), mode);
  return dst;
}

/** Gives `path` a group that is not its owner's private group (root picks an unused gid);
 * false where this user belongs to no such group. */
bool give_shared_group(const std::string& path) {
  if (::geteuid() == 0) return ::chown(path.c_str(), static_cast<uid_t>(-1), 12345) == 0;
  std::vector<gid_t> groups(static_cast<size_t>(std::max(::getgroups(0, nullptr), 0)));
  groups.resize(static_cast<size_t>(
      std::max(::getgroups(static_cast<int>(groups.size()), groups.data()), 0)));
  for (gid_t g : groups) {
    if (g != ::getegid() && ::chown(path.c_str(), static_cast<uid_t>(-1), g) == 0) return true;
  }
  return false;
}

/** Whether this user's primary group is a user private group (its name, no other members). */
bool primary_group_is_private() {
  const passwd* pw = ::getpwuid(::geteuid());
  const group* gr = pw ? ::getgrgid(pw->pw_gid) : nullptr;
  if (!gr || std::string(gr->gr_name) != pw->pw_name) return false;
  for (char** m = gr->gr_mem; m && *m; ++m) {
    if (std::string(*m) != pw->pw_name) return false;
  }
  return true;
}

// Skips where this user belongs to no group that would count as shared.
#define REQUIRE_SHARED_GROUP(path) \
  if (!give_shared_group(path)) GTEST_SKIP() << "no shared group to test with"

/** Writes a file that discovery would report if it ever looked in its directory. */
void plant_decoy(const std::string& dir) {
  std::ofstream(dir + "/libember-decoy.so") << "not a plugin\n";
}

nlohmann::json probe_ok(const std::string& env, const std::string& args) {
  test::RunResult r = run_probe(env, args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

nlohmann::json record(const nlohmann::json& j, const std::string& file) {
  auto records = test::by_file(j["report"]);
  auto it = records.find(file);
  EXPECT_NE(it, records.end()) << file << " not in " << j["report"].dump();
  return it == records.end() ? nlohmann::json::object() : it->second;
}

// Every directory discovery looked in, and every file it considered, lies outside `dir`.
void expect_never_looked_in(const nlohmann::json& report, const std::string& dir) {
  const fs::path d = fs::canonical(dir);
  for (const auto& s : report["search_path"]) {
    const fs::path p = s["dir"].get<std::string>();
    EXPECT_TRUE(p.is_absolute()) << p;
    std::error_code ec;
    EXPECT_FALSE(fs::equivalent(p, d, ec)) << "searched " << p << " (" << s["source"] << ")";
  }
  for (const auto& p : report["plugins"]) {
    EXPECT_NE(fs::path(p["file"].get<std::string>()).parent_path(), d) << p.dump();
  }
}

TEST(PluginSecurity, DefaultSearchPathIsOnlyTheCoreDir) {
  const PluginReport r = plugin_report();
  const fs::path cwd = fs::current_path();
  const fs::path exe_dir = fs::canonical("/proc/self/exe").parent_path();
  for (const SearchDir& d : r.search_path) {
    EXPECT_TRUE(d.source == "core library dir" || d.source == "EMBER_PLUGIN_PATH") << d.source;
    EXPECT_TRUE(fs::path(d.dir).is_absolute()) << d.dir;
    std::error_code ec;
    EXPECT_FALSE(fs::equivalent(d.dir, cwd, ec)) << d.dir << " is the working directory";
    EXPECT_FALSE(fs::equivalent(d.dir, exe_dir, ec)) << d.dir << " is the executable's dir";
  }
}

TEST(PluginSecurity, NeverSearchesTheWorkingDirectory) {
  TempDir cwd;
  plant_decoy(cwd.path());
  install_good(cwd.path(), 0755);
  test::RunResult r = test::run("", "sh", "-c 'cd " + cwd.path() + " && exec " + EMBER_PROBE + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_never_looked_in(nlohmann::json::parse(r.out)["report"], cwd.path());
}

TEST(PluginSecurity, NeverSearchesTheExecutablesDirectory) {
  TempDir bin;
  plant_decoy(bin.path());
  install_good(bin.path(), 0755);
  const std::string probe = bin.file("plugin_probe");
  fs::copy_file(EMBER_PROBE, probe);
  const std::string lib_dir = fs::path(EMBER_PLUGIN_DIR).parent_path().string();
  test::RunResult r = test::run("LD_LIBRARY_PATH=" + lib_dir, probe, "");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_never_looked_in(nlohmann::json::parse(r.out)["report"], bin.path());
}

TEST(PluginSecurity, PrivateFileInPrivateDirectoryLoadsWithoutWarning) {
  TempDir dir;
  install_good(dir.path(), 0755);
  auto j = probe_ok("EMBER_PLUGIN_PATH=" + dir.path(), "");
  EXPECT_EQ(record(j, kGoodName)["outcome"], "loaded");
  EXPECT_EQ(record(j, kGoodName)["warning"], "");
}

TEST(PluginSecurity, WritableFileLoadsWithAWarning) {
  TempDir dir;
  const std::string file = install_good(dir.path(), 0666);
  REQUIRE_SHARED_GROUP(file);
  test::RunResult r = run_probe("EMBER_PLUGIN_PATH=" + dir.path(), "");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json rec = record(nlohmann::json::parse(r.out), kGoodName);
  EXPECT_EQ(rec["outcome"], "loaded");
  const std::string warning = rec["warning"];
  EXPECT_TRUE(has(warning, "file " + file + " is writable by group and other (mode 0666)"))
      << warning;
  EXPECT_TRUE(has(warning, "another user could replace it")) << warning;
  EXPECT_TRUE(has(r.err, "[plugin] " + kGoodName + " warning: file " + file)) << r.err;
}

// Note [User private groups] in loader.cpp: with umask 002 every file is group-writable, but by
// a group holding only its owner, which is no hole.
TEST(PluginSecurity, GroupWriteForTheOwnersPrivateGroupIsNoHole) {
  TempDir dir;
  const std::string file = install_good(dir.path(), 0664);
  ::chmod(dir.path().c_str(), 0775);
  auto j = probe_ok("EMBER_PLUGIN_PATH=" + dir.path(), "");
  const std::string warning = record(j, kGoodName)["warning"];
  if (primary_group_is_private()) {
    EXPECT_EQ(warning, "");
  } else {
    EXPECT_TRUE(has(warning, "file " + file + " is writable by group (mode 0664)")) << warning;
  }
}

TEST(PluginSecurity, WritableFileIsRefusedInStrictMode) {
  TempDir dir;
  const std::string file = install_good(dir.path(), 0664);
  REQUIRE_SHARED_GROUP(file);
  for (const auto& [env, args] :
       {std::pair<std::string, std::string>{"EMBER_PLUGINS_STRICT=1", ""}, {"", "--strict 1"}}) {
    SCOPED_TRACE(env + args);
    test::RunResult r = run_probe(env + " EMBER_PLUGIN_PATH=" + dir.path(), args);
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_TRUE(has(r.err, "[plugin] " + kGoodName + " not loaded: refused: file " + file +
                               " is writable by group (mode 0664)"))
        << r.err;
    EXPECT_TRUE(has(r.err, "strict mode")) << r.err;
  }
  // Explicitly, through load_plugin: the record says why and strict mode throws.
  test::RunResult r = run_probe("", "--strict 1 --autoload 0 --load " + file);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(has(r.err, "refused: file " + file + " is writable by group")) << r.err;
}

TEST(PluginSecurity, WritableDirectoryCountsLikeAWritableFile) {
  TempDir dir;
  install_good(dir.path(), 0755);
  ::chmod(dir.path().c_str(), 0777);
  REQUIRE_SHARED_GROUP(dir.path());
  auto j = probe_ok("EMBER_PLUGIN_PATH=" + dir.path(), "");
  const std::string warning = record(j, kGoodName)["warning"];
  EXPECT_TRUE(
      has(warning, "directory " + dir.path() + " is writable by group and other (mode 0777)"))
      << warning;
  ::chmod(dir.path().c_str(), 0702);
  test::RunResult r = run_probe("EMBER_PLUGINS_STRICT=1 EMBER_PLUGIN_PATH=" + dir.path(), "");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(has(r.err, "refused: directory " + dir.path() + " is writable by other (mode 0702)"))
      << r.err;
}

TEST(PluginSecurity, SymlinkIsJudgedByWhatItPointsTo) {
  TempDir dir, target_dir;
  const std::string target = install_good(target_dir.path(), 0755);
  ::chmod(target_dir.path().c_str(), 0775);
  REQUIRE_SHARED_GROUP(target_dir.path());
  fs::create_symlink(target, dir.file(kGoodName));
  auto j = probe_ok("EMBER_PLUGIN_PATH=" + dir.path(), "");
  const std::string warning = record(j, kGoodName)["warning"];
  EXPECT_TRUE(has(warning, "directory " + fs::canonical(target_dir.path()).string() +
                               " is writable by group (mode 0775)"))
      << warning;
}

TEST(PluginSecurity, FileOwnedByAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file away";
  TempDir dir;
  const std::string file = install_good(dir.path(), 0755);
  ASSERT_EQ(::chown(file.c_str(), 12345, 12345), 0);
  auto j = probe_ok("EMBER_PLUGIN_PATH=" + dir.path(), "");
  EXPECT_EQ(record(j, kGoodName)["outcome"], "loaded");
  const std::string warning = record(j, kGoodName)["warning"];
  EXPECT_TRUE(has(warning, "file " + file + " is owned by uid 12345, not by this user (uid 0)"))
      << warning;
  test::RunResult r = run_probe("EMBER_PLUGINS_STRICT=1 EMBER_PLUGIN_PATH=" + dir.path(), "");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(has(r.err, "refused: file " + file + " is owned by uid 12345")) << r.err;
}

TEST(PluginSecurity, CliReportShowsPathAndWarning) {
  TempDir dir;
  const std::string file = install_good(dir.path(), 0666);
  REQUIRE_SHARED_GROUP(file);
  test::RunResult r = test::run_cli("EMBER_PLUGIN_PATH=" + dir.path(), "plugins");
  EXPECT_TRUE(has(r.out, file)) << r.out;
  EXPECT_TRUE(has(r.out, "warning: file " + file + " is writable by group and other")) << r.out;
  r = test::run_cli("EMBER_PLUGIN_PATH=" + dir.path(), "plugins --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json rec = test::by_file(nlohmann::json::parse(r.out)).at(kGoodName);
  EXPECT_EQ(rec["file"], file);
  EXPECT_TRUE(has(rec["warning"].get<std::string>(), "is writable by group and other")) << rec;
}

}  // namespace
}  // namespace ember
