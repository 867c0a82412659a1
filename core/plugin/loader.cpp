// Plugin discovery and loading. Loading one file is a short pipeline, each step returning the
// reason it stopped (a Stop: the outcome and why) or nothing to go on:
//   trust -> open -> entry point -> ABI version -> name -> stage -> commit
// The steps' helpers each live in a file of their own (core/plugin/loading.h lists them).
#include "ember/plugin/loader.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/plugin/elf_check.h"
#include "core/plugin/loading.h"
#include "core/util/log.h"
#include "ember/dispatch/device_registry.h"
#include "ember/dispatch/runtime.h"
#include "ember/util/error.h"
#include "ember/version.h"

namespace fs = std::filesystem;

namespace ember {
namespace loading {

// Note [Version compatibility]
// Three versions meet at run time (ARCHITECTURE.md, "Install layout, packages and versions"):
// - Ember's: the SONAMEs carry the major; a program built against X.y runs with any X.z >= y.
// - The plugin ABI: a plugin loads when its major is the core's and the minor it needs is at most
//   the core's (tables only grow at their end); otherwise it is refused before any of its code
//   but the entry getter runs ("needs ABI 1.5 ... (update Ember)", "built for ABI 2.0 ...").
// - A plugin's own version is reported (`ember --version`, `ember plugins`), never compared.

Loader& loader() {
  static Loader* l = new Loader();  // never destroyed: plugins and their kernels outlive exit
  return *l;
}

namespace {

/** One file on its way through the pipeline. */
struct Candidate {
  std::string path;                       // absolute
  std::string real;                       // symlinks resolved
  LoadedPlugin* plugin = nullptr;         // once opened: kept mapped for the life of the process
  const ember_plugin_v1* desc = nullptr;  // once its entry point answered
  Staging staging;                        // what its init registered
};

// Trust: the same file loaded already, a plugin disabled by its file name (skipped before
// dlopen, so a disabled plugin costs nothing: loading the CUDA plugin maps the CUDA libraries,
// ~0.1 s), a file that is no loadable ELF object, or one someone else could have written (Note
// [Who may write a plugin]: refused in strict mode, a warning otherwise).
Step check_trust(const Loader& L, const Candidate& c, PluginRecord& rec) {
  for (const LoadedPlugin* p : L.loaded) {
    if (p->real == c.real) {
      rec.name = p->name;
      return Stop{PluginOutcome::Shadowed, fmt::format("same file as {}, already loaded", p->file)};
    }
  }
  std::string stem = fs::path(c.path).filename().string();
  if (stem.rfind("libember-", 0) == 0 && stem.find(".so") != std::string::npos) {
    stem = stem.substr(9, stem.find(".so") - 9);
    if (matches_any(L.report.disabled, stem)) {
      rec.name = stem;
      return Stop{PluginOutcome::Disabled,
                  "disabled by " + L.disabled_by + " (file name, not loaded)"};
    }
  }
  if (ElfCheck elf = check_elf_file(c.path); !elf.ok) return Stop{elf.outcome, elf.reason};
  if (std::string problem = write_access_problem(c.path); !problem.empty()) {
    if (L.report.strict) return Stop{PluginOutcome::Insecure, "refused: " + problem};
    rec.warning = problem;
  }
  return std::nullopt;
}

// Open: dlopen with immediate binding, local symbols, absolute path. An opened library is never
// closed, whatever happens next.
Step open_library(Loader& L, Candidate& c) {
  auto* lp = new LoadedPlugin{"", c.path, c.real, {}, nullptr};
  try {
    lp->lib.load(c.path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception&) {
    delete lp;
    return diagnose_dlopen_failure(c.path);
  }
  L.loaded.push_back(lp);
  c.plugin = lp;
  return std::nullopt;
}

// Entry point: the descriptor the entry symbol returns, which names the plugin in the report.
Step find_entry(Candidate& c, PluginRecord& rec) {
  if (!c.plugin->lib.has(EMBER_PLUGIN_ENTRY)) {
    return Stop{PluginOutcome::NotAPlugin,
                fmt::format("not an Ember plugin: no symbol {}", EMBER_PLUGIN_ENTRY)};
  }
  try {
    c.desc = c.plugin->lib.get<const ember_plugin_v1*()>(EMBER_PLUGIN_ENTRY)();
  } catch (...) {
    c.desc = nullptr;
  }
  const ember_plugin_v1* d = c.desc;
  if (!d || d->struct_size < offsetof(ember_plugin_v1, init) + sizeof(void*)) {
    return Stop{PluginOutcome::RejectedAbi, "entry symbol returned no usable descriptor"};
  }
  rec.name = d->name ? d->name : "";
  rec.version = d->version ? d->version : "";
  rec.build_info = d->build_info ? d->build_info : "";
  rec.abi = fmt::format("{}.{}", d->abi_major, d->abi_minor_min);
  return std::nullopt;
}

// ABI version, checked before any plugin code beyond the entry getter runs (Note [Version
// compatibility]).
Step check_abi(const Candidate& c) {
  const ember_plugin_v1* d = c.desc;
  if (d->abi_major == EMBER_ABI_MAJOR && d->abi_minor_min <= EMBER_ABI_MINOR) return std::nullopt;
  const bool major = d->abi_major != EMBER_ABI_MAJOR;
  return Stop{
      PluginOutcome::RejectedAbi,
      fmt::format("{} ABI {}.{}, this core provides {}.{} ({})", major ? "built for" : "needs",
                  d->abi_major, d->abi_minor_min, EMBER_ABI_MAJOR, EMBER_ABI_MINOR,
                  major ? "rebuild it against this Ember" : "update Ember")};
}

// Name: the descriptor's name against the controls and the plugins loaded already.
Step check_name(const Loader& L, const Candidate& c, const PluginRecord& rec) {
  if (rec.name.empty() || !c.desc->init) {
    return Stop{PluginOutcome::RejectedAbi, "descriptor lacks a name or an init callback"};
  }
  const std::vector<std::string>& disabled = L.report.disabled;
  const std::vector<std::string>& only = L.report.only;
  if (matches_any(disabled, rec.name)) {
    return Stop{PluginOutcome::Disabled, "disabled by " + L.disabled_by};
  }
  if (!only.empty() && !matches_any(only, rec.name)) {
    return Stop{PluginOutcome::Disabled, "not in " + L.only_by};
  }
  for (const LoadedPlugin* p : L.loaded) {
    if (p != c.plugin && p->desc && p->name == rec.name) {
      return Stop{PluginOutcome::Shadowed,
                  fmt::format("plugin '{}' already loaded from {}", rec.name, p->file)};
    }
  }
  return std::nullopt;
}

// Stage: init runs against the staging registrar; nothing it registered is visible yet.
Step stage(Candidate& c) {
  ember_registrar_v1 reg = registrar(c.staging);
  char err[1024] = {0};
  int32_t status = EMBER_ERR_INTERNAL;
  try {
    status = c.desc->init(detail::host_table(), &reg, err, sizeof(err));
  } catch (const std::exception& e) {
    std::snprintf(err, sizeof(err), "init threw: %s", e.what());
  } catch (...) {
    std::snprintf(err, sizeof(err), "init threw a non-standard exception");
  }
  if (status == EMBER_OK && !c.staging.error.empty()) {
    status = EMBER_ERR_INVALID;
    std::snprintf(err, sizeof(err), "%s", c.staging.error.c_str());
  }
  if (status == EMBER_OK) return std::nullopt;
  return Stop{PluginOutcome::InitFailed,
              fmt::format("init failed: {}", err[0] ? err : "no reason given")};
}

// Loads one file; appends its record. Caller holds the loader mutex.
PluginRecord& load_one(Loader& L, const std::string& path_in) {
  PluginRecord& rec = L.report.plugins.emplace_back();
  Candidate c;
  std::error_code ec;
  c.path = fs::absolute(path_in, ec).lexically_normal().string();
  c.real = real_path(c.path);
  rec.file = c.path;
  Step stop = check_trust(L, c, rec);
  if (!stop) stop = open_library(L, c);
  if (!stop) stop = find_entry(c, rec);
  if (!stop) stop = check_abi(c);
  if (!stop) stop = check_name(L, c, rec);
  if (!stop) stop = stage(c);
  if (!stop) stop = commit(L, rec, *c.plugin, c.desc, c.staging);
  if (stop) {
    rec.outcome = stop->outcome;
    rec.reason = std::move(stop->reason);
    // A library that stopped after opening stays mapped but no longer counts as this file
    // loaded, so a later attempt at the same file reports why again.
    if (c.plugin) c.plugin->real.clear();
  }
  return rec;
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

}  // namespace
}  // namespace loading

using loading::candidates_in;
using loading::discover;
using loading::file_label;
using loading::is_failure;
using loading::load_one;
using loading::Loader;
using loading::loader;
using loading::not_loaded_line;
using loading::plan_search;
using loading::SearchPlan;
using loading::StagedKernel;
using loading::strict_and_required;
using loading::summary;
using loading::warning_line;

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

}  // namespace ember
