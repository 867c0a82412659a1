#include "ember/plugin/loader.h"

#include <dlfcn.h>
#include <fnmatch.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/plugin/elf_check.h"
#include "core/util/log.h"
#include "ember/dispatch/device_registry.h"
#include "ember/dispatch/extension_ops.h"
#include "ember/dispatch/op.h"
#include "ember/util/error.h"
#include "ember/version.h"

namespace fs = std::filesystem;

namespace ember {

const char* outcome_name(PluginOutcome o) {
  switch (o) {
    case PluginOutcome::Loaded:
      return "loaded";
    case PluginOutcome::NotAPlugin:
      return "not_a_plugin";
    case PluginOutcome::CorruptFile:
      return "corrupt_file";
    case PluginOutcome::WrongArch:
      return "wrong_arch";
    case PluginOutcome::MissingDependency:
      return "missing_dependency";
    case PluginOutcome::UndefinedSymbol:
      return "undefined_symbol";
    case PluginOutcome::RejectedAbi:
      return "rejected_abi";
    case PluginOutcome::InitFailed:
      return "init_failed";
    case PluginOutcome::Unusable:
      return "unusable";
    case PluginOutcome::Shadowed:
      return "shadowed";
    case PluginOutcome::Disabled:
      return "disabled";
    case PluginOutcome::Unreadable:
      return "unreadable";
    case PluginOutcome::Insecure:
      return "insecure";
    case PluginOutcome::Crashed:
      return "crashed";
  }
  return "unknown";
}

namespace {

// Note [Version compatibility]
// Three versions meet at run time (ARCHITECTURE.md, "Install layout, packages and versions"):
// - Ember's: the SONAMEs carry the major; a program built against X.y runs with any X.z >= y.
// - The plugin ABI: a plugin loads when its major is the core's and the minor it needs is at most
//   the core's (tables only grow at their end); otherwise it is refused before any of its code
//   but the entry getter runs ("needs ABI 1.5 ... (update Ember)", "built for ABI 2.0 ...").
// - A plugin's own version is reported (`ember --version`, `ember plugins`), never compared.

// ---------------------------------------------------------------------------------------------
// Controls from the environment.

std::vector<std::string> split(const char* s, char sep) {
  std::vector<std::string> out;
  if (!s) return out;
  std::string cur;
  for (const char* p = s;; ++p) {
    if (*p == sep || *p == '\0') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      if (*p == '\0') break;
    } else {
      cur += *p;
    }
  }
  return out;
}

bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return !(std::strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0 || strcasecmp(v, "off") == 0);
}

bool matches_any(const std::vector<std::string>& globs, const std::string& name) {
  return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) {
    return fnmatch(g.c_str(), name.c_str(), 0) == 0;
  });
}

// ---------------------------------------------------------------------------------------------
// Staging registrar: what a plugin registers during init is kept aside and committed only if
// init returns EMBER_OK (ARCHITECTURE.md, "The plugin seam and ABI").

struct StagedKernel {
  std::string op;
  int32_t device_type;  // real id, or kStagedBase + index into staged device types
  uint32_t dtype_mask;
  int32_t priority;
  ember_kernel_fn fn;
  uint32_t flags = 0;  // ABI 1.6: EMBER_KERNEL_*
};

constexpr int32_t kStagedBase = 1 << 20;

struct Staging {
  std::vector<ember_device_type_v1> device_types;
  std::vector<std::string> device_names;  // owned copies of the names
  std::vector<StagedKernel> kernels;
  detail::StagedOpSchemas op_schemas;  // ABI 1.1: ops the plugin defines
  std::vector<CommBackend> comm;       // ABI 1.5: communication backends
  std::string error;
};

int32_t stage_device_type(void* ctx, const ember_device_type_v1* type) {
  auto* s = static_cast<Staging*>(ctx);
  if (!type || type->struct_size < offsetof(ember_device_type_v1, free) + sizeof(void*) ||
      !type->name || !type->alloc || !type->free || !type->copy || !type->device_count) {
    s->error = "device type table is incomplete";
    return -1;
  }
  ember_device_type_v1 copy{};
  std::memcpy(&copy, type, std::min<size_t>(type->struct_size, sizeof(copy)));
  s->device_names.emplace_back(type->name);
  s->device_types.push_back(copy);
  return kStagedBase + static_cast<int32_t>(s->device_types.size() - 1);
}

int32_t stage_kernel(void* ctx, const char* op, int32_t device_type, uint32_t dtype_mask,
                     int32_t priority, ember_kernel_fn fn) {
  auto* s = static_cast<Staging*>(ctx);
  if (!op || !fn) return EMBER_ERR_INVALID;
  s->kernels.push_back({op, device_type, dtype_mask, priority, fn});
  return EMBER_OK;
}

static_assert(offsetof(ember_registrar_v1, kernel_with_flags) == 7 * sizeof(void*),
              "ember_registrar_v1::kernel_with_flags must follow the v1.5 fields");

// ABI 1.6: a kernel with flags; unknown flag bits are refused so a plugin from a newer core
// cannot ask for a layout this core would not honour.
int32_t stage_kernel_with_flags(void* ctx, const char* op, int32_t device_type, uint32_t dtype_mask,
                                int32_t priority, ember_kernel_fn fn, uint32_t flags) {
  if (flags & ~static_cast<uint32_t>(EMBER_KERNEL_CHANNELS_LAST)) return EMBER_ERR_UNSUPPORTED;
  const int32_t status = stage_kernel(ctx, op, device_type, dtype_mask, priority, fn);
  if (status == EMBER_OK) static_cast<Staging*>(ctx)->kernels.back().flags = flags;
  return status;
}

int32_t stage_find_device_type(void* ctx, const char* name) {
  auto* s = static_cast<Staging*>(ctx);
  if (!name) return -1;
  for (size_t i = 0; i < s->device_names.size(); ++i) {
    if (s->device_names[i] == name) return kStagedBase + static_cast<int32_t>(i);
  }
  return find_device_type(name);
}

// ABI 1.1, ops defined by plugins: the schema logic lives in core/dispatch/extension_ops.cpp.
// A malformed schema fails init, like an incomplete device table.
int32_t stage_op_schema(void* ctx, const ember_op_schema_v1* schema, char* error, size_t cap) {
  auto* s = static_cast<Staging*>(ctx);
  const int32_t status = detail::stage_op_schema(s->op_schemas, schema);
  if (status != EMBER_OK) {
    if (s->error.empty()) s->error = s->op_schemas.error;
    if (error && cap > 0) std::snprintf(error, cap, "%s", s->op_schemas.error.c_str());
  }
  return status;
}

// ABI 1.5: a communication backend; an incomplete table fails init.
int32_t stage_comm_backend(void* ctx, const ember_comm_backend_v1* t, char* error, size_t cap) {
  auto* s = static_cast<Staging*>(ctx);
  const size_t complete = offsetof(ember_comm_backend_v1, destroy) + sizeof(void*);
  if (!t || t->struct_size < complete || !t->name || !t->name[0] || !t->create || !t->collective ||
      !t->destroy) {
    s->error = "communication backend table is incomplete (name, create, collective, destroy)";
    if (error && cap > 0) std::snprintf(error, cap, "%s", s->error.c_str());
    return EMBER_ERR_INVALID;
  }
  CommBackend b;
  std::memcpy(&b.table, t, std::min<size_t>(t->struct_size, sizeof(b.table)));
  b.table.struct_size = static_cast<uint32_t>(std::min<size_t>(t->struct_size, sizeof(b.table)));
  b.name = t->name;
  for (std::string_view rest = t->device_types ? t->device_types : "cpu"; !rest.empty();) {
    const size_t comma = rest.find(',');
    if (comma != 0) b.device_types.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
  }
  s->comm.push_back(std::move(b));
  return EMBER_OK;
}

// ---------------------------------------------------------------------------------------------
// The loader state.

struct LoadedPlugin {
  std::string name;
  std::string file;
  std::string real;
  boost::dll::shared_library lib;  // kept open for the life of the process
  const ember_plugin_v1* desc = nullptr;
};

// Note [Kernel lines of the report are made on demand]
// Formatting every kernel's line cost a tenth of start-up; loading keeps the staged kernels.
struct Loader {
  std::mutex mu;
  PluginReport report;
  std::vector<std::vector<StagedKernel>> kernel_notes;  // by plugin, resolved device types
  std::vector<LoadedPlugin*> loaded;                    // never freed: plugins are not unloaded
  std::vector<CommBackend> comm;                        // ABI 1.5, first of a name wins
  std::optional<PluginOptions> options;                 // from init(options), before discovery
  std::string disabled_by = "EMBER_PLUGINS_DISABLE", only_by = "EMBER_PLUGINS_ONLY";
  int discoveries = 0;
  bool shut_down = false;
  std::string fatal;  // strict-mode or required-device failure, rethrown on every use
};

Loader& loader() {
  static Loader* l = new Loader();  // never destroyed: plugins and their kernels outlive exit
  return *l;
}

// Note [Why a second dlopen for the reason]
// Boost.DLL 1.74 resets dlerror() before reporting a failed load, so its exception does not
// say *why* (a missing libcudnn.so.9, an undefined symbol). After Boost reports failure we
// ask dlopen directly for the same path with the same flags: it fails the same way and
// dlerror() is read at once. Nothing is loaded by the failing call.
std::string dlopen_reason(const std::string& path) {
  dlerror();
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h) {
    dlclose(h);
    return "dlopen failed, then succeeded on retry";
  }
  const char* e = dlerror();
  return e ? e : "dlopen failed without a reason";
}

void classify_dlopen_failure(const std::string& path, PluginRecord& rec) {
  const std::string why = dlopen_reason(path);
  const std::string base = fs::path(path).filename().string();
  auto pos = why.find(": cannot open shared object file");
  if (pos != std::string::npos) {
    std::string dep = why.substr(0, pos);
    if (auto slash = dep.rfind('/'); slash != std::string::npos) dep = dep.substr(slash + 1);
    if (dep != base) {
      rec.outcome = PluginOutcome::MissingDependency;
      rec.reason = fmt::format("missing dependency {}", dep);
      // dlopen names the first library it could not find; the scan names them all.
      std::vector<std::string> others;
      for (const std::string& m : scan_dependencies(path).missing) {
        if (m.rfind(dep + " ", 0) != 0) others.push_back(m);
      }
      if (!others.empty())
        rec.reason += fmt::format(" (also missing: {})", fmt::join(others, ", "));
      return;
    }
  }
  if (why.find("undefined symbol") != std::string::npos) {
    rec.outcome = PluginOutcome::UndefinedSymbol;
    rec.reason = why.substr(why.find("undefined symbol"));
    return;
  }
  if (why.find("wrong ELF class") != std::string::npos ||
      why.find("ELF machine") != std::string::npos) {
    rec.outcome = PluginOutcome::WrongArch;
    rec.reason = why;
    return;
  }
  rec.outcome = PluginOutcome::NotAPlugin;
  rec.reason = fmt::format("dlopen failed: {}", why);
}

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

/** Why `path` (a plugin file) could be replaced by someone else; empty if it could not. */
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

// When a plugin took over device type `id` from plugin `loser`, the loser's kernels for the type
// would run on memory they did not allocate: they are removed (the winner registers its own
// right after). The built-in "core" CPU entry is plain host memory and has no kernels.
void drop_kernels_of_replaced_type(PluginReport& report, int16_t id, const std::string& loser) {
  for (size_t owner = 0; owner < report.plugins.size(); ++owner) {
    const PluginRecord& rec = report.plugins[owner];
    if (rec.name != loser) continue;
    for (const std::string& name : rec.ops) {
      Op& op = op_handle(name);
      for (int d = 0; d < kNumDTypes; ++d) {
        KernelEntry& slot = op.kernels().slot(id, static_cast<DType>(d));
        if (!slot.get() || slot.plugin != static_cast<int16_t>(owner)) continue;
        report.conflicts.push_back(fmt::format(
            "kernel {} on {} for {} of plugin {} dropped: its device type was replaced by plugin "
            "{}",
            name, device_type(id).name, static_cast<DType>(d), rec.name, device_type(id).plugin));
        slot.publish(nullptr);
      }
    }
  }
}

// Loads one file; appends its record. Caller holds the loader mutex.
PluginRecord& load_one(Loader& L, const std::string& path_in) {
  PluginReport& report = L.report;
  PluginRecord& rec = report.plugins.emplace_back();
  std::error_code ec;
  const std::string path = fs::absolute(path_in, ec).lexically_normal().string();
  rec.file = path;

  // 1. Same file already loaded (a symlink or the same path twice)?
  const std::string real = real_path(path);
  for (const LoadedPlugin* p : L.loaded) {
    if (p->real == real) {
      rec.name = p->name;
      rec.outcome = PluginOutcome::Shadowed;
      rec.reason = fmt::format("same file as {}, already loaded", p->file);
      return rec;
    }
  }

  // 1b. Disabled by the name in its file name (libember-<name>.so): skipped before dlopen, so a
  // disabled plugin costs nothing (loading the CUDA plugin maps the CUDA libraries, ~0.1 s).
  {
    std::string stem = fs::path(path).filename().string();
    if (stem.rfind("libember-", 0) == 0 && stem.find(".so") != std::string::npos) {
      stem = stem.substr(9, stem.find(".so") - 9);
      if (matches_any(report.disabled, stem)) {
        rec.name = stem;
        rec.outcome = PluginOutcome::Disabled;
        rec.reason = "disabled by " + L.disabled_by + " (file name, not loaded)";
        return rec;
      }
    }
  }

  // 2. Validate the file before dlopen sees it.
  ElfCheck elf = check_elf_file(path);
  if (!elf.ok) {
    rec.outcome = elf.outcome;
    rec.reason = elf.reason;
    return rec;
  }

  // 2b. Who else could have written it (Note [Who may write a plugin]).
  if (std::string problem = write_access_problem(path); !problem.empty()) {
    if (report.strict) {
      rec.outcome = PluginOutcome::Insecure;
      rec.reason = "refused: " + problem;
      return rec;
    }
    rec.warning = problem;
  }

  // 3. dlopen with immediate binding, local symbols, absolute path.
  auto* lp = new LoadedPlugin{"", path, real, {}, nullptr};
  try {
    lp->lib.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception&) {
    delete lp;
    classify_dlopen_failure(path, rec);
    return rec;
  }

  // 4. The entry symbol.
  if (!lp->lib.has(EMBER_PLUGIN_ENTRY)) {
    rec.outcome = PluginOutcome::NotAPlugin;
    rec.reason = fmt::format("not an Ember plugin: no symbol {}", EMBER_PLUGIN_ENTRY);
    L.loaded.push_back(lp);  // keep the library mapped: never dlclose
    lp->real.clear();
    return rec;
  }
  const ember_plugin_v1* desc = nullptr;
  try {
    desc = lp->lib.get<const ember_plugin_v1*()>(EMBER_PLUGIN_ENTRY)();
  } catch (...) {
    desc = nullptr;
  }
  L.loaded.push_back(lp);
  if (!desc || desc->struct_size < offsetof(ember_plugin_v1, init) + sizeof(void*)) {
    lp->real.clear();
    rec.outcome = PluginOutcome::RejectedAbi;
    rec.reason = "entry symbol returned no usable descriptor";
    return rec;
  }
  rec.name = desc->name ? desc->name : "";
  rec.version = desc->version ? desc->version : "";
  rec.build_info = desc->build_info ? desc->build_info : "";
  rec.abi = fmt::format("{}.{}", desc->abi_major, desc->abi_minor_min);

  // 5. ABI check before any plugin code beyond the entry getter runs (Note [Version
  // compatibility]).
  if (desc->abi_major != EMBER_ABI_MAJOR || desc->abi_minor_min > EMBER_ABI_MINOR) {
    lp->real.clear();
    rec.outcome = PluginOutcome::RejectedAbi;
    const bool major = desc->abi_major != EMBER_ABI_MAJOR;
    rec.reason =
        fmt::format("{} ABI {}.{}, this core provides {}.{} ({})", major ? "built for" : "needs",
                    desc->abi_major, desc->abi_minor_min, EMBER_ABI_MAJOR, EMBER_ABI_MINOR,
                    major ? "rebuild it against this Ember" : "update Ember");
    return rec;
  }

  // 6. Controls and duplicates by name.
  if (rec.name.empty() || !desc->init) {
    lp->real.clear();
    rec.outcome = PluginOutcome::RejectedAbi;
    rec.reason = "descriptor lacks a name or an init callback";
    return rec;
  }
  const std::vector<std::string>& disabled = report.disabled;
  const std::vector<std::string>& only = report.only;
  if (matches_any(disabled, rec.name) || (!only.empty() && !matches_any(only, rec.name))) {
    lp->real.clear();
    rec.outcome = PluginOutcome::Disabled;
    rec.reason =
        matches_any(disabled, rec.name) ? "disabled by " + L.disabled_by : "not in " + L.only_by;
    return rec;
  }
  for (const LoadedPlugin* p : L.loaded) {
    if (p != lp && p->desc && p->name == rec.name) {
      lp->real.clear();
      rec.outcome = PluginOutcome::Shadowed;
      rec.reason = fmt::format("plugin '{}' already loaded from {}", rec.name, p->file);
      return rec;
    }
  }

  // 7. init against a staging registrar; commit only on success.
  Staging staging;
  ember_registrar_v1 reg{
      sizeof(ember_registrar_v1), &staging,        stage_device_type,  stage_kernel,
      stage_find_device_type,     stage_op_schema, stage_comm_backend, stage_kernel_with_flags};
  char err[1024] = {0};
  int32_t status = EMBER_ERR_INTERNAL;
  try {
    status = desc->init(detail::host_table(), &reg, err, sizeof(err));
  } catch (const std::exception& e) {
    std::snprintf(err, sizeof(err), "init threw: %s", e.what());
  } catch (...) {
    std::snprintf(err, sizeof(err), "init threw a non-standard exception");
  }
  if (status == EMBER_OK && !staging.error.empty()) {
    status = EMBER_ERR_INVALID;
    std::snprintf(err, sizeof(err), "%s", staging.error.c_str());
  }
  if (status != EMBER_OK) {
    lp->real.clear();
    rec.outcome = PluginOutcome::InitFailed;
    rec.reason = fmt::format("init failed: {}", err[0] ? err : "no reason given");
    return rec;
  }
  // ABI 1.1: commit the plugin's op schemas (all, or none and init counts as failed) before
  // anything else; kernels it staged for an op another plugin defined first are dropped with
  // the rejected schema (Note [Names of ops defined by plugins]).
  {
    detail::CommittedOpSchemas schemas = detail::commit_op_schemas(staging.op_schemas, rec.name);
    if (!schemas.error.empty()) {
      lp->real.clear();
      rec.outcome = PluginOutcome::InitFailed;
      rec.reason = fmt::format("init failed: {}", schemas.error);
      return rec;
    }
    report.conflicts.insert(report.conflicts.end(), schemas.conflicts.begin(),
                            schemas.conflicts.end());
    std::erase_if(staging.kernels,
                  [&](const StagedKernel& k) { return schemas.rejected.count(k.op) > 0; });
  }
  lp->name = rec.name;
  lp->desc = desc;
  const int16_t plugin_index = static_cast<int16_t>(report.plugins.size() - 1);

  std::vector<int16_t> ids;
  int usable = 0;
  std::string unusable_reason;
  for (size_t i = 0; i < staging.device_types.size(); ++i) {
    staging.device_types[i].name = staging.device_names[i].c_str();
    std::string conflict;
    const int16_t before = find_device_type(staging.device_names[i]);
    const std::string old_owner = before >= 0 ? device_type(before).plugin : "";
    const int16_t id = detail::register_device_type(staging.device_types[i], rec.name, &conflict);
    if (!conflict.empty()) report.conflicts.push_back(conflict);
    if (id >= 0 && device_type(id).plugin != rec.name) {
      // Note [A device type that lost its name keeps no kernels]
      // The kernels this plugin staged for its own device type expect its own memory; the
      // winner's memory is not it. They are dropped rather than attached to the winner.
      report.conflicts.push_back(fmt::format(
          "kernels of plugin {} for device type '{}' dropped: that device type belongs to {}",
          rec.name, staging.device_names[i], device_type(id).plugin));
      ids.push_back(-1);
      continue;
    }
    if (id >= 0 && !old_owner.empty() && old_owner != "core" && old_owner != rec.name)
      drop_kernels_of_replaced_type(report, id, old_owner);
    ids.push_back(id);
    if (id < 0) continue;
    const DeviceTypeEntry& e = device_type(id);
    if (e.count > 0)
      ++usable;
    else
      unusable_reason = e.unusable_reason;
    rec.devices.push_back(
        e.count > 0 ? fmt::format("{} ({} device{})", e.name, e.count, e.count == 1 ? "" : "s")
                    : fmt::format("{} (0 devices: {})", e.name, e.unusable_reason));
  }
  std::set<std::string> op_names;
  const int32_t num_types = static_cast<int32_t>(device_types().size());
  for (const StagedKernel& k : staging.kernels) {
    int32_t dt = k.device_type;
    if (dt >= kStagedBase) {
      const size_t idx = static_cast<size_t>(dt - kStagedBase);
      dt = idx < ids.size() ? ids[idx] : -1;
    }
    if (dt < 0 || dt >= kMaxDeviceTypes || dt >= num_types) {
      continue;
    }
    Op& op = op_handle(k.op);
    op_names.insert(k.op);
    L.kernel_notes.resize(report.plugins.size());
    L.kernel_notes[static_cast<size_t>(plugin_index)].push_back(
        {k.op, dt, k.dtype_mask, k.priority, k.fn, k.flags});
    for (int d = 0; d < kNumDTypes; ++d) {
      if (!(k.dtype_mask & (1u << d))) continue;
      KernelEntry& slot = op.kernels().slot(static_cast<int16_t>(dt), static_cast<DType>(d));
      // A plugin's own later registration of a slot at the same priority replaces its earlier
      // one (a backend re-registers some kernels with flags after registering them all).
      const bool own_again = slot.plugin == plugin_index && slot.priority == k.priority;
      if (slot.get() && slot.priority >= k.priority && !own_again) {
        if (slot.plugin != plugin_index) {
          report.conflicts.push_back(
              fmt::format("kernel {} on {} for {}: kept {} (priority {}) over {} (priority {})",
                          k.op, device_type(static_cast<int16_t>(dt)).name, static_cast<DType>(d),
                          slot.plugin >= 0 ? report.plugins[slot.plugin].name : "?", slot.priority,
                          rec.name, k.priority));
        }
        continue;
      }
      if (slot.get() && slot.plugin != plugin_index) {
        report.conflicts.push_back(fmt::format(
            "kernel {} on {} for {}: {} (priority {}) replaces {} (priority {})", k.op,
            device_type(static_cast<int16_t>(dt)).name, static_cast<DType>(d), rec.name, k.priority,
            slot.plugin >= 0 ? report.plugins[slot.plugin].name : "?", slot.priority));
      }
      slot.publish(k.fn, k.priority, plugin_index, k.flags);
    }
  }
  rec.ops.assign(op_names.begin(), op_names.end());
  // ABI 1.5: communication backends; a name already taken stays with its first owner unless the
  // newcomer has a higher priority (as kernels do).
  for (CommBackend& b : staging.comm) {
    char why[512] = {0};
    b.plugin = rec.name;
    b.usable = !b.table.available || b.table.available(b.table.ctx, why, sizeof(why)) != 0;
    if (!b.usable) b.reason = why[0] ? why : "not usable here (no reason given)";
    rec.communication.push_back(
        b.usable ? fmt::format("{} ({})", b.name, fmt::join(b.device_types, ", "))
                 : fmt::format("{} (unusable: {})", b.name, b.reason));
    auto same = std::find_if(L.comm.begin(), L.comm.end(),
                             [&](const CommBackend& o) { return o.name == b.name; });
    if (same == L.comm.end()) {
      L.comm.push_back(b);
    } else if (b.table.priority > same->table.priority) {
      report.conflicts.push_back(
          fmt::format("communication backend {}: {} replaces {}", b.name, rec.name, same->plugin));
      *same = b;
    } else {
      report.conflicts.push_back(
          fmt::format("communication backend {}: kept {} over {}", b.name, same->plugin, rec.name));
    }
    if (b.usable)
      ++usable;
    else
      unusable_reason = b.reason;
  }
  if ((!staging.device_types.empty() || !staging.comm.empty()) && usable == 0) {
    rec.outcome = PluginOutcome::Unusable;
    rec.reason = unusable_reason.empty() ? "no devices" : unusable_reason;
  } else {
    rec.outcome = PluginOutcome::Loaded;
  }
  return rec;
}

bool is_candidate_name(const std::string& name) {
  return name.rfind("libember", 0) == 0 &&
         (name.size() > 3 && (name.ends_with(".so") || name.find(".so.") != std::string::npos));
}

std::vector<std::string> candidates_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (is_candidate_name(name)) out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Note [Plugins live next to the core]
// The only automatic search directory is ember-plugins/ beside the libember_core.so this process
// mapped. No path is compiled in: an installed tree keeps working when moved, a build tree never
// picks up an installed tree's plugins, and one directory decides which backends a machine has.
std::string core_library_dir() {
  std::error_code ec;
  fs::path p = boost::dll::this_line_location(ec);
  if (ec) return {};
  return fs::weakly_canonical(p, ec).parent_path().string();
}

// Reads the controls: PluginOptions fields win over the environment (Note [Plugin options: API
// over environment]); each decision is noted in report.controls.
struct SearchPlan {
  std::vector<std::string> files;  // explicit files, in order
};

SearchPlan plan_search(Loader& L) {
  PluginReport& report = L.report;
  const PluginOptions opts = L.options.value_or(PluginOptions{});
  auto from = [](bool api) { return api ? "API" : "environment"; };
  report.autoload = opts.autoload.value_or(env_flag("EMBER_PLUGIN_AUTOLOAD", true));
  report.strict = opts.strict.value_or(env_flag("EMBER_PLUGINS_STRICT", false));
  report.disabled = opts.disable.value_or(split(std::getenv("EMBER_PLUGINS_DISABLE"), ','));
  report.only = opts.only.value_or(split(std::getenv("EMBER_PLUGINS_ONLY"), ','));
  const char* req = std::getenv("EMBER_REQUIRE_DEVICE");
  report.require_device = opts.require_device.value_or(req ? req : "");
  L.disabled_by = opts.disable ? "PluginOptions::disable" : "EMBER_PLUGINS_DISABLE";
  L.only_by = opts.only ? "PluginOptions::only" : "EMBER_PLUGINS_ONLY";
  report.controls = {
      fmt::format("autoload={} ({})", report.autoload ? 1 : 0, from(opts.autoload.has_value())),
      fmt::format("strict={} ({})", report.strict ? 1 : 0, from(opts.strict.has_value())),
      fmt::format("disable=[{}] ({})", fmt::join(report.disabled, ","),
                  from(opts.disable.has_value())),
      fmt::format("only=[{}] ({})", fmt::join(report.only, ","), from(opts.only.has_value())),
      fmt::format("require_device={} ({})",
                  report.require_device.empty() ? "-" : report.require_device,
                  from(opts.require_device.has_value()))};

  SearchPlan plan;
  auto add_entry = [&](const std::string& entry, const char* source) {
    std::error_code ec;
    if (fs::is_directory(entry, ec)) {
      report.search_path.push_back({fs::absolute(entry, ec).lexically_normal().string(), source});
    } else {
      plan.files.push_back(entry);
    }
  };
  for (const std::string& entry : opts.paths) add_entry(entry, "API");
  for (const std::string& entry : split(std::getenv("EMBER_PLUGIN_PATH"), ':'))
    add_entry(entry, "EMBER_PLUGIN_PATH");
  if (report.autoload) {
    const std::string core_dir = core_library_dir();
    if (!core_dir.empty())
      report.search_path.push_back({core_dir + "/ember-plugins", "core library dir"});
  }
  for (SearchDir& d : report.search_path) {
    std::error_code ec;
    d.exists = fs::is_directory(d.dir, ec);
    d.candidates = static_cast<int>(candidates_in(d.dir).size());
  }
  return plan;
}

// Note [Autoload off]
// EMBER_PLUGIN_AUTOLOAD=0 (or PluginOptions::autoload = false) skips the directory next to the
// core (Note [Plugins live next to the core]); paths named explicitly (the API, EMBER_PLUGIN_PATH,
// load_plugin) still load. With nothing loaded the built-in CPU device still makes and copies
// tensors but no op has a kernel.
void discover(Loader& L) {
  ++L.discoveries;
  const SearchPlan plan = plan_search(L);
  for (const std::string& f : plan.files) load_one(L, f);
  for (const SearchDir& d : L.report.search_path) {
    for (const std::string& f : candidates_in(d.dir)) load_one(L, f);
  }
}

bool is_failure(PluginOutcome o) {
  return o != PluginOutcome::Loaded && o != PluginOutcome::Shadowed &&
         o != PluginOutcome::Disabled && o != PluginOutcome::Unusable;
}

std::string file_label(const PluginRecord& p) {
  return fs::path(p.file).filename().string();
}

std::string summary(const PluginReport& r) {
  std::vector<std::string> loaded, failed;
  int shadowed = 0, disabled = 0;
  for (const PluginRecord& p : r.plugins) {
    const std::string label = p.name.empty() ? file_label(p) : p.name;
    if (p.outcome == PluginOutcome::Loaded)
      loaded.push_back(label);
    else if (p.outcome == PluginOutcome::Unusable)
      loaded.push_back(label + " (0 devices)");
    else if (p.outcome == PluginOutcome::Shadowed)
      ++shadowed;
    else if (p.outcome == PluginOutcome::Disabled)
      ++disabled;
    else
      failed.push_back(fmt::format("{}: {}", file_label(p), outcome_name(p.outcome)));
  }
  return fmt::format(
      "[plugin] {} loaded ({}), {} failed{}{}, {} shadowed, {} disabled "
      "(`ember plugins` for details)",
      loaded.size(), fmt::join(loaded, ", "), failed.size(), failed.empty() ? "" : ": ",
      fmt::join(failed, "; "), shadowed, disabled);
}

std::string not_loaded_line(const PluginRecord& p) {
  return fmt::format("[plugin] {} not loaded: {}", file_label(p), p.reason);
}

std::string warning_line(const PluginRecord& p) {
  return fmt::format("[plugin] {} warning: {}", file_label(p), p.warning);
}

// Strict mode and a required device; returns the fatal message, or "".
std::string strict_and_required(const PluginReport& r) {
  if (r.strict) {
    for (const PluginRecord& p : r.plugins) {
      if (is_failure(p.outcome)) {
        return fmt::format("{} (fatal: strict mode, EMBER_PLUGINS_STRICT=1; file {})",
                           not_loaded_line(p), p.file);
      }
    }
  }
  if (!r.require_device.empty()) {
    const int16_t id = find_device_type(r.require_device);
    if (id < 0 || device_type(id).count == 0) {
      return fmt::format("[plugin] EMBER_REQUIRE_DEVICE={} but {} (see `ember plugins`)",
                         r.require_device,
                         id < 0 ? std::string("no plugin provides it")
                                : "it has 0 devices: " + device_type(id).unusable_reason);
    }
  }
  return {};
}

}  // namespace

// Note [No backend installed]
// When no plugin registered a kernel (no backend package, or ember-plugins/ left behind), the
// error names what to install and where, not a "no kernel for add" that reads like a missing op.
void detail::explain_no_backend(std::string_view op) {
  const PluginReport r = plugin_report();
  for (const PluginRecord& p : r.plugins) {
    if (!p.ops.empty()) return;  // some backend is there: the usual missing-kernel message
  }
  std::vector<std::string> dirs;
  for (const SearchDir& d : r.search_path) dirs.push_back(d.dir);
  throw NotImplementedError(fmt::format(
      "[{}] no backend is installed: {} plugin file(s) found in [{}]{}, none registered a kernel "
      "(install a backend next to the core library: the ember-backend-cpu or "
      "ember-backend-reference package, or lib/ember-plugins/libember-cpu.so of an Ember "
      "install; or name one in EMBER_PLUGIN_PATH; `ember plugins` shows what was found)",
      op, r.plugins.size(), fmt::join(dirs, ", "),
      r.autoload ? "" : " (autoload is off: EMBER_PLUGIN_AUTOLOAD=0)"));
}

const char* version() {
  return EMBER_VERSION_STRING;
}

int detail::discovery_runs() {
  Loader& L = loader();
  std::lock_guard lock(L.mu);
  return L.discoveries;
}

// Note [Discovery runs once]
// The first caller of ensure_plugins_loaded (any op, allocation, init or report) runs discovery
// under std::call_once; concurrent callers wait for it and see the finished report. A strict-mode
// or required-device failure is remembered and thrown to every later caller as well, so no
// thread runs on a half-trusted set of plugins.
void detail::load_plugins_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    Loader& L = loader();
    {
      std::lock_guard lock(L.mu);
      discover(L);
      for (const PluginRecord& p : L.report.plugins) {
        if (is_failure(p.outcome)) log_message(LogLevel::Warning, "{}", not_loaded_line(p));
        if (!p.warning.empty()) log_message(LogLevel::Warning, "{}", warning_line(p));
      }
      const bool bad = std::any_of(L.report.plugins.begin(), L.report.plugins.end(),
                                   [](const PluginRecord& p) { return is_failure(p.outcome); });
      log_message(bad ? LogLevel::Warning : LogLevel::Info, "{}", summary(L.report));
      L.fatal = strict_and_required(L.report);
    }
    g_plugins_loaded.store(loader().fatal.empty(), std::memory_order_release);
  });
  const std::string& fatal = loader().fatal;
  EMBER_CHECK_PLUGIN(fatal.empty(), "{}", fatal);
}

void init() {
  ensure_plugins_loaded();
}

void init(const PluginOptions& options) {
  Loader& L = loader();
  {
    std::lock_guard lock(L.mu);
    EMBER_CHECK_PLUGIN(
        L.discoveries == 0,
        "[plugin] init(options) called after plugins were loaded: call it before the "
        "first tensor, op or plugin query");
    L.options = options;
  }
  ensure_plugins_loaded();
}

PluginReport plugin_report() {
  ensure_plugins_loaded();
  Loader& L = loader();
  std::lock_guard lock(L.mu);
  PluginReport r = L.report;
  for (size_t i = 0; i < r.plugins.size() && i < L.kernel_notes.size(); ++i) {
    for (const StagedKernel& k : L.kernel_notes[i]) {  // Note [Kernel lines of the report ...]
      std::vector<std::string_view> dtypes;
      for (int d = 0; d < kNumDTypes; ++d) {
        if (k.dtype_mask & (1u << d)) dtypes.push_back(dtype_name(static_cast<DType>(d)));
      }
      r.plugins[i].kernels.push_back(fmt::format(
          "{} on {}: {} (priority {})", k.op, device_type(static_cast<int16_t>(k.device_type)).name,
          fmt::join(dtypes, ", "), k.priority));
    }
  }
  return r;
}

std::vector<CommBackend> comm_backends() {
  ensure_plugins_loaded();
  Loader& L = loader();
  std::lock_guard lock(L.mu);
  return L.comm;
}

std::vector<std::string> plugin_candidates() {
  Loader& L = loader();
  std::lock_guard lock(L.mu);
  // A scratch loader state computes the plan with the same controls without loading anything.
  Loader scratch;
  scratch.options = L.options;
  const SearchPlan plan = plan_search(scratch);
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& f) {
    std::error_code ec;
    const std::string abs = fs::absolute(f, ec).lexically_normal().string();
    if (seen.insert(abs).second) out.push_back(abs);
  };
  for (const std::string& f : plan.files) add(f);
  for (const SearchDir& d : scratch.report.search_path) {
    for (const std::string& f : candidates_in(d.dir)) add(f);
  }
  return out;
}

PluginRecord load_plugin(const std::string& path) {
  ensure_plugins_loaded();
  Loader& L = loader();
  std::lock_guard lock(L.mu);
  PluginRecord rec = load_one(L, path);
  if (!rec.warning.empty()) log_message(LogLevel::Warning, "{}", warning_line(rec));
  if (is_failure(rec.outcome)) {
    log_message(LogLevel::Warning, "{}", not_loaded_line(rec));
  } else {
    log_message(LogLevel::Info, "[plugin] {} {}{}{}", file_label(rec), outcome_name(rec.outcome),
                rec.reason.empty() ? "" : ": ", rec.reason);
  }
  EMBER_CHECK_PLUGIN(!(L.report.strict && is_failure(rec.outcome)),
                     "{} (fatal: strict mode, EMBER_PLUGINS_STRICT=1; file {})",
                     not_loaded_line(rec), rec.file);
  return rec;
}

// Note [Shutdown reads only what the plugin declared]
// `shutdown` sits after `init` in ember_plugin_v1; a plugin whose struct_size ends before it
// (an older, shorter descriptor) has no shutdown to call, whatever bytes follow its table.
void shutdown_plugins() {
  Loader& L = loader();
  std::lock_guard lock(L.mu);
  if (L.shut_down) return;
  L.shut_down = true;
  for (auto it = L.loaded.rbegin(); it != L.loaded.rend(); ++it) {
    const ember_plugin_v1* d = (*it)->desc;
    if (!d || d->struct_size < offsetof(ember_plugin_v1, shutdown) + sizeof(d->shutdown)) continue;
    if (d->shutdown) d->shutdown();
  }
}

std::string plugin_report_json(const PluginReport& r) {
  nlohmann::json j;
  j["search_path"] = nlohmann::json::array();
  for (const SearchDir& d : r.search_path)
    j["search_path"].push_back(nlohmann::json{{"dir", d.dir}, {"source", d.source}});
  j["plugins"] = nlohmann::json::array();
  for (const PluginRecord& p : r.plugins) {
    j["plugins"].push_back(nlohmann::json{{"file", p.file},
                                          {"name", p.name},
                                          {"version", p.version},
                                          {"abi", p.abi},
                                          {"build_info", p.build_info},
                                          {"outcome", outcome_name(p.outcome)},
                                          {"reason", p.reason},
                                          {"warning", p.warning},
                                          {"devices", p.devices},
                                          {"ops", p.ops},
                                          {"kernels", p.kernels},
                                          {"communication", p.communication}});
  }
  for (size_t i = 0; i < r.search_path.size(); ++i) {
    j["search_path"][i]["exists"] = r.search_path[i].exists;
    j["search_path"][i]["candidates"] = r.search_path[i].candidates;
  }
  j["conflicts"] = r.conflicts;
  j["autoload"] = r.autoload;
  j["strict"] = r.strict;
  j["disabled"] = r.disabled;
  j["only"] = r.only;
  j["require_device"] = r.require_device;
  j["controls"] = r.controls;
  return j.dump(2);
}

}  // namespace ember
