#include "core/plugin/loader.h"

#include <dlfcn.h>
#include <fnmatch.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "core/dispatch/device_registry.h"
#include "core/dispatch/op.h"
#include "core/plugin/elf_check.h"
#include "core/util/error.h"
#include "core/util/log.h"

#ifndef EMBER_INSTALL_PLUGIN_DIR
#define EMBER_INSTALL_PLUGIN_DIR ""
#endif
#ifndef EMBER_VERSION
#define EMBER_VERSION "0.1.0"
#endif

namespace fs = std::filesystem;

namespace ember {

std::atomic<bool> detail::g_plugins_loaded{false};

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
  }
  return "unknown";
}

namespace {

// ---------------------------------------------------------------------------------------------
// Host services for plugins.

void host_log(int32_t level, const char* message) {
  log_message(static_cast<LogLevel>(std::clamp(level, 0, 3)), "{}", message ? message : "");
}
void* host_scratch_alloc(size_t bytes) {
  return std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64));
}
void host_scratch_free(void* p, size_t) {
  std::free(p);
}

const ember_host_v1 kHost = {sizeof(ember_host_v1), EMBER_ABI_MAJOR, EMBER_ABI_MINOR,
                             EMBER_VERSION,         host_log,        host_scratch_alloc,
                             host_scratch_free};

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
// init returns EMBER_OK (DESIGN §4).

struct StagedKernel {
  std::string op;
  int32_t device_type;  // real id, or kStagedBase + index into staged device types
  uint32_t dtype_mask;
  int32_t priority;
  ember_kernel_fn fn;
};

constexpr int32_t kStagedBase = 1 << 20;

struct Staging {
  std::vector<ember_device_type_v1> device_types;
  std::vector<std::string> device_names;  // owned copies of the names
  std::vector<StagedKernel> kernels;
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

int32_t stage_find_device_type(void* ctx, const char* name) {
  auto* s = static_cast<Staging*>(ctx);
  if (!name) return -1;
  for (size_t i = 0; i < s->device_names.size(); ++i) {
    if (s->device_names[i] == name) return kStagedBase + static_cast<int32_t>(i);
  }
  return find_device_type(name);
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

struct Loader {
  std::mutex mu;
  PluginReport report;
  std::vector<LoadedPlugin*> loaded;  // never freed: plugins are not unloaded
  std::vector<std::string> disabled, only;
};

Loader& loader() {
  static Loader l;
  return l;
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

  // 2. Validate the file before dlopen sees it.
  ElfCheck elf = check_elf_file(path);
  if (!elf.ok) {
    rec.outcome = elf.outcome;
    rec.reason = elf.reason;
    return rec;
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
    L.loaded.push_back(lp);  // keep the library mapped: never dlclose (DESIGN §4)
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

  // 5. ABI check before any plugin code beyond the entry getter runs.
  if (desc->abi_major != EMBER_ABI_MAJOR || desc->abi_minor_min > EMBER_ABI_MINOR) {
    lp->real.clear();
    rec.outcome = PluginOutcome::RejectedAbi;
    rec.reason =
        fmt::format("built for ABI {}.{}, this core provides {}.{} (rebuild it)", desc->abi_major,
                    desc->abi_minor_min, EMBER_ABI_MAJOR, EMBER_ABI_MINOR);
    return rec;
  }

  // 6. Controls and duplicates by name.
  if (rec.name.empty() || !desc->init) {
    lp->real.clear();
    rec.outcome = PluginOutcome::RejectedAbi;
    rec.reason = "descriptor lacks a name or an init callback";
    return rec;
  }
  if (matches_any(L.disabled, rec.name) || (!L.only.empty() && !matches_any(L.only, rec.name))) {
    lp->real.clear();
    rec.outcome = PluginOutcome::Disabled;
    rec.reason = matches_any(L.disabled, rec.name) ? "disabled by EMBER_PLUGINS_DISABLE"
                                                   : "not in EMBER_PLUGINS_ONLY";
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
  ember_registrar_v1 reg{sizeof(ember_registrar_v1), &staging, stage_device_type, stage_kernel,
                         stage_find_device_type};
  char err[1024] = {0};
  int32_t status = EMBER_ERR_INTERNAL;
  try {
    status = desc->init(&kHost, &reg, err, sizeof(err));
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
  lp->name = rec.name;
  lp->desc = desc;
  const int16_t plugin_index = static_cast<int16_t>(report.plugins.size() - 1);

  std::vector<int16_t> ids;
  int usable = 0;
  std::string unusable_reason;
  for (size_t i = 0; i < staging.device_types.size(); ++i) {
    staging.device_types[i].name = staging.device_names[i].c_str();
    std::string conflict;
    const int16_t id = detail::register_device_type(staging.device_types[i], rec.name, &conflict);
    if (!conflict.empty()) report.conflicts.push_back(conflict);
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
  for (const StagedKernel& k : staging.kernels) {
    int32_t dt = k.device_type;
    if (dt >= kStagedBase) {
      const size_t idx = static_cast<size_t>(dt - kStagedBase);
      dt = idx < ids.size() ? ids[idx] : -1;
    }
    if (dt < 0 || dt >= kMaxDeviceTypes) continue;
    Op& op = op_handle(k.op);
    op_names.insert(k.op);
    for (int d = 0; d < kNumDTypes; ++d) {
      if (!(k.dtype_mask & (1u << d))) continue;
      KernelEntry& slot = op.kernels().slot(static_cast<int16_t>(dt), static_cast<DType>(d));
      if (slot.fn && slot.priority >= k.priority) {
        if (slot.plugin != plugin_index) {
          report.conflicts.push_back(
              fmt::format("kernel {} on {} for {}: kept {} (priority {}) over {} (priority {})",
                          k.op, device_type(static_cast<int16_t>(dt)).name, static_cast<DType>(d),
                          slot.plugin >= 0 ? report.plugins[slot.plugin].name : "?", slot.priority,
                          rec.name, k.priority));
        }
        continue;
      }
      if (slot.fn && slot.plugin != plugin_index) {
        report.conflicts.push_back(fmt::format(
            "kernel {} on {} for {}: {} (priority {}) replaces {} (priority {})", k.op,
            device_type(static_cast<int16_t>(dt)).name, static_cast<DType>(d), rec.name, k.priority,
            slot.plugin >= 0 ? report.plugins[slot.plugin].name : "?", slot.priority));
      }
      slot = KernelEntry{k.fn, k.priority, plugin_index};
    }
  }
  rec.ops.assign(op_names.begin(), op_names.end());
  if (!staging.device_types.empty() && usable == 0) {
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

std::string core_library_dir() {
  std::error_code ec;
  fs::path p = boost::dll::this_line_location(ec);
  if (ec) return {};
  return fs::weakly_canonical(p, ec).parent_path().string();
}

void discover(Loader& L) {
  PluginReport& report = L.report;
  report.autoload = env_flag("EMBER_PLUGIN_AUTOLOAD", true);
  report.strict = env_flag("EMBER_PLUGINS_STRICT", false);
  L.disabled = split(std::getenv("EMBER_PLUGINS_DISABLE"), ',');
  L.only = split(std::getenv("EMBER_PLUGINS_ONLY"), ',');

  std::vector<std::string> files;  // explicit files from EMBER_PLUGIN_PATH
  for (const std::string& entry : split(std::getenv("EMBER_PLUGIN_PATH"), ':')) {
    std::error_code ec;
    if (fs::is_directory(entry, ec)) {
      report.search_path.push_back({fs::absolute(entry, ec).string(), "EMBER_PLUGIN_PATH"});
    } else {
      files.push_back(entry);
    }
  }
  const std::string core_dir = core_library_dir();
  if (!core_dir.empty())
    report.search_path.push_back({core_dir + "/ember-plugins", "core library dir"});
  const std::string install_dir = EMBER_INSTALL_PLUGIN_DIR;
  if (!install_dir.empty() && install_dir != core_dir + "/ember-plugins") {
    report.search_path.push_back({install_dir, "install dir"});
  }
  if (!report.autoload) {
    for (const std::string& f : files) load_one(L, f);
    return;
  }
  for (const std::string& f : files) load_one(L, f);
  for (const SearchDir& d : report.search_path) {
    for (const std::string& f : candidates_in(d.dir)) load_one(L, f);
  }
}

bool is_failure(PluginOutcome o) {
  return o != PluginOutcome::Loaded && o != PluginOutcome::Shadowed &&
         o != PluginOutcome::Disabled && o != PluginOutcome::Unusable;
}

std::string summary(const PluginReport& r) {
  std::vector<std::string> loaded, failed;
  for (const PluginRecord& p : r.plugins) {
    const std::string label = p.name.empty() ? fs::path(p.file).filename().string() : p.name;
    if (p.outcome == PluginOutcome::Loaded)
      loaded.push_back(label);
    else if (p.outcome == PluginOutcome::Unusable)
      loaded.push_back(label + " (unusable)");
    else if (is_failure(p.outcome))
      failed.push_back(fmt::format("{}: {}", label, outcome_name(p.outcome)));
  }
  return fmt::format("[plugin] {} loaded ({}), {} failed{}{}", loaded.size(),
                     fmt::join(loaded, ", "), failed.size(), failed.empty() ? "" : ": ",
                     fmt::join(failed, "; "));
}

void check_strict_and_required(const PluginReport& r) {
  if (r.strict) {
    for (const PluginRecord& p : r.plugins) {
      EMBER_CHECK(!is_failure(p.outcome),
                  "[plugin] strict mode (EMBER_PLUGINS_STRICT=1): {} {}: {}\n{}", p.file,
                  outcome_name(p.outcome), p.reason, plugin_report_json(r));
    }
  }
  if (const char* req = std::getenv("EMBER_REQUIRE_DEVICE"); req && *req) {
    const int16_t id = find_device_type(req);
    EMBER_CHECK(id >= 0 && device_type(id).count > 0,
                "[plugin] EMBER_REQUIRE_DEVICE={} but {} (see `ember plugins`)", req,
                id < 0 ? std::string("no plugin provides it")
                       : "it has 0 devices: " + device_type(id).unusable_reason);
  }
}

}  // namespace

const ember_host_v1* detail::host_table() {
  return &kHost;
}

void detail::load_plugins_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    Loader& L = loader();
    {
      std::lock_guard lock(L.mu);
      discover(L);
      const bool bad = std::any_of(L.report.plugins.begin(), L.report.plugins.end(),
                                   [](const PluginRecord& p) { return is_failure(p.outcome); });
      log_message(bad ? LogLevel::Warning : LogLevel::Info, "{}", summary(L.report));
    }
    g_plugins_loaded.store(true, std::memory_order_release);
  });
  static std::once_flag checked;
  std::call_once(checked, [] { check_strict_and_required(loader().report); });
}

void init() {
  ensure_plugins_loaded();
}

PluginReport plugin_report() {
  ensure_plugins_loaded();
  Loader& L = loader();
  std::lock_guard lock(L.mu);
  return L.report;
}

PluginRecord load_plugin(const std::string& path) {
  ensure_plugins_loaded();
  Loader& L = loader();
  std::lock_guard lock(L.mu);
  PluginRecord rec = load_one(L, path);
  log_message(is_failure(rec.outcome) ? LogLevel::Warning : LogLevel::Info, "[plugin] {} {}{}{}",
              rec.file, outcome_name(rec.outcome), rec.reason.empty() ? "" : ": ", rec.reason);
  EMBER_CHECK(!(L.report.strict && is_failure(rec.outcome)),
              "[plugin] strict mode (EMBER_PLUGINS_STRICT=1): {} {}: {}", rec.file,
              outcome_name(rec.outcome), rec.reason);
  return rec;
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
                                          {"outcome", outcome_name(p.outcome)},
                                          {"reason", p.reason},
                                          {"devices", p.devices},
                                          {"ops", p.ops}});
  }
  j["conflicts"] = r.conflicts;
  j["autoload"] = r.autoload;
  j["strict"] = r.strict;
  return j.dump(2);
}

}  // namespace ember
