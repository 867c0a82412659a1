// What the files of core/plugin/ share: the loader's state and the steps that loading one plugin
// is made of. loader.cpp runs discovery and the pipeline of one file (trust, open, entry point,
// ABI version, stage, commit); each other file does one job: trust.cpp (who could have written
// the file), dlopen_diagnosis.cpp (why dlopen failed), staging.cpp (the registrar init writes
// to), commit.cpp (a staged plugin into the registries), search.cpp (the controls and where to
// look), report.cpp (outcomes, log lines, JSON).
#pragma once

#include <boost/dll/shared_library.hpp>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ember/dispatch/extension_ops.h"
#include "ember/plugin/loader.h"
#include "ember/plugin_abi.h"

namespace ember::loading {

/** Why loading a file stopped before the plugin loaded: its outcome in the report, and why. */
struct Stop {
  PluginOutcome outcome;
  std::string reason;
};
/** What a step of the pipeline returns: the reason it stopped, or nothing to go on. */
using Step = std::optional<Stop>;

// Staging registrar (staging.cpp): what a plugin registers during init is kept aside and
// committed only if init returns EMBER_OK (ARCHITECTURE.md, "The plugin seam and the ABI").

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

/** The registrar a plugin's init receives, staging everything into `s`. */
ember_registrar_v1 registrar(Staging& s);

// The loader state (loader.cpp).

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

/** The process's loader state (never destroyed: plugins and their kernels outlive exit). */
Loader& loader();

// Controls and the search path (search.cpp).

/** The non-empty items of `s` split at `sep`; none for null. */
std::vector<std::string> split(const char* s, char sep);
/** True if any of the globs matches `name`. */
bool matches_any(const std::vector<std::string>& globs, const std::string& name);
/** The explicit files to load, in order; the directories go into the report's search path. */
struct SearchPlan {
  std::vector<std::string> files;
};
/** Reads the controls into L.report (Note [Plugin options: API over environment]) and plans the
 *  search. */
SearchPlan plan_search(Loader& L);
/** The files of `dir` named like plugins (libember*.so*), sorted. */
std::vector<std::string> candidates_in(const std::string& dir);

// Trust (trust.cpp).

/** `p` with symlinks resolved, or `p` if it does not resolve. */
std::string real_path(const std::string& p);
/** Why `path` (a plugin file) could be replaced by someone else; empty if it could not. */
std::string write_access_problem(const std::string& path);

// dlopen failures (dlopen_diagnosis.cpp).

/** The outcome and reason of a failed dlopen of `path`: a missing dependency, an undefined
 *  symbol, the wrong architecture, or not a plugin. */
Stop diagnose_dlopen_failure(const std::string& path);

// Commit (commit.cpp).

/** Commits what `plugin`'s init staged: its op schemas (all or none), device types, kernels and
 *  communication backends; sets rec's outcome to Loaded or Unusable, or stops (a schema
 *  conflict). Caller holds the loader mutex. */
Step commit(Loader& L, PluginRecord& rec, LoadedPlugin& plugin, const ember_plugin_v1* desc,
            Staging& staging);

// The report (report.cpp).

/** True for the outcomes that count as failures (not loaded, shadowed, disabled or unusable). */
bool is_failure(PluginOutcome o);
/** The file name of a record's file. */
std::string file_label(const PluginRecord& p);
/** The one-line summary of discovery for the log. */
std::string summary(const PluginReport& r);
/** "[plugin] <file> not loaded: <reason>". */
std::string not_loaded_line(const PluginRecord& p);
/** "[plugin] <file> warning: <warning>". */
std::string warning_line(const PluginRecord& p);
/** The fatal message of strict mode or a required device, or "". */
std::string strict_and_required(const PluginReport& r);

}  // namespace ember::loading
