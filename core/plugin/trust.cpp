// Trust: who could have written a plugin file (Note [Who may write a plugin]), checked before
// dlopen runs any of its code.
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/plugin/loading.h"

namespace fs = std::filesystem;

namespace ember::loading {

std::string real_path(const std::string& p) {
  std::error_code ec;
  fs::path r = fs::canonical(p, ec);
  return ec ? p : r.string();
}

// Note [Who may write a plugin]
// Loading a plugin runs its code in this process, so whoever can replace the file, or add a file
// next to it, can run code as us. A plugin file or its directory that is writable by group or
// other (mode & 022), or owned by a user other than us and root, is such a hole. The check covers
// the path as named and, through symlinks, the file it resolves to and that file's directory.
// Strict mode refuses the file (outcome "insecure", fatal like every strict failure); otherwise
// it loads with a warning in its report entry and in the log, so a group-writable build tree
// keeps working. Only the immediate directory is checked: ancestors are the system's business.
// Note [User private groups]
// Debian gives each user a group of their own name (the user private group) and many set umask
// 002, so every file they make is group-writable by a group with only them in it. Group write
// is a hole only when the group is not the owner's private group: its name differs from the
// owner's, or it has other listed members.
namespace {

/** Whether `gid` is the private group of user `uid` (named as the user, no other members). */
bool is_private_group(uid_t uid, gid_t gid) {
  std::vector<char> buf(16384);
  struct passwd pw {};
  struct passwd* pwp = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &pwp) != 0 || !pwp) return false;
  if (pw.pw_gid != gid) return false;
  const std::string user = pw.pw_name;
  struct group gr {};
  struct group* grp = nullptr;
  if (::getgrgid_r(gid, &gr, buf.data(), buf.size(), &grp) != 0 || !grp) return false;
  if (user != gr.gr_name) return false;
  for (char** m = gr.gr_mem; m && *m; ++m) {
    if (user != *m) return false;
  }
  return true;
}

}  // namespace

std::string write_access_problem(const std::string& path) {
  std::vector<std::pair<std::string, const char*>> checks;  // path, what it is
  auto add = [&](const fs::path& p, const char* what) {
    const std::string s = p.empty() ? std::string(".") : p.string();
    for (const auto& c : checks) {
      if (c.first == s) return;
    }
    checks.emplace_back(s, what);
  };
  const fs::path named(path);
  add(named, "file");
  add(named.parent_path(), "directory");
  const fs::path real(real_path(path));
  add(real, "file");
  add(real.parent_path(), "directory");
  const uid_t me = ::geteuid();
  std::vector<std::string> problems;
  for (const auto& [p, what] : checks) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) continue;  // the ELF check reports a missing file
    const bool group = (st.st_mode & 020) != 0 && !is_private_group(st.st_uid, st.st_gid);
    const bool other = (st.st_mode & 002) != 0;
    if (group || other) {
      problems.push_back(fmt::format("{} {} is writable by {} (mode {:04o})", what, p,
                                     group && other ? "group and other"
                                     : group        ? "group"
                                                    : "other",
                                     st.st_mode & 07777));
    }
    if (st.st_uid != 0 && st.st_uid != me) {
      problems.push_back(fmt::format("{} {} is owned by uid {}, not by this user (uid {}) or root",
                                     what, p, static_cast<unsigned>(st.st_uid),
                                     static_cast<unsigned>(me)));
    }
  }
  if (problems.empty()) return {};
  return fmt::format("{}: another user could replace it and run code in this process",
                     fmt::join(problems, "; "));
}

}  // namespace ember::loading
