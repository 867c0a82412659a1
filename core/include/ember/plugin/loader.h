// Plugin discovery, loading and the report of what happened to every candidate file.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "ember/dispatch/runtime.h"
#include "ember/plugin_abi.h"
#include "ember/util/export.h"

namespace ember {

/** What happened to one candidate plugin file. */
enum class PluginOutcome {
  Loaded,
  NotAPlugin,
  CorruptFile,
  WrongArch,
  MissingDependency,
  UndefinedSymbol,
  RejectedAbi,
  InitFailed,
  Unusable,
  Shadowed,
  Disabled,
  Unreadable,
  Insecure,  // strict mode: the file or its directory is writable by others or owned by
             // another user (Note [Who may write a plugin] in loader.cpp)
  Crashed,   // only `ember plugins doctor` sees this: the candidate killed its child process
};

/** The outcome as the report spells it: "loaded", "missing_dependency", ... */
EMBER_API const char* outcome_name(PluginOutcome o);

/** One directory searched, and why it was searched. */
struct SearchDir {
  std::string dir;
  std::string source;  // "EMBER_PLUGIN_PATH", "core library dir", "API"
  bool exists = false;
  int candidates = 0;  // files named like plugins (libember*.so*) found in it
};

/** One candidate file and its fate. */
struct PluginRecord {
  std::string file;  // absolute path
  std::string name;  // from the descriptor, if it got that far
  std::string version;
  std::string abi;  // "1.0" as declared by the plugin
  std::string build_info;
  PluginOutcome outcome = PluginOutcome::NotAPlugin;
  std::string reason;
  std::string warning;  // set when it loaded despite a problem: "file ... is writable by group"
  std::vector<std::string> devices;        // "cpu (1 device)", "cuda (0 devices: no CUDA device)"
  std::vector<std::string> ops;            // op names it registered kernels for
  std::vector<std::string> kernels;        // "add on cpu: float32, float64 (priority 0)"
  std::vector<std::string> communication;  // "gloo (cpu)", "nccl (unusable: no CUDA device)"
};

/** Everything discovery saw and decided. */
struct PluginReport {
  std::vector<SearchDir> search_path;
  std::vector<PluginRecord> plugins;
  std::vector<std::string> conflicts;
  bool autoload = true;
  bool strict = false;
  std::vector<std::string> disabled;  // globs
  std::vector<std::string> only;      // globs; empty: all allowed
  std::string require_device;
  std::vector<std::string> controls;  // where each control came from: "strict=1 (API)"
};

// Note [Plugin options: API over environment]
// Every control can be given through the environment (EMBER_PLUGIN_PATH, EMBER_PLUGINS_DISABLE,
// EMBER_PLUGINS_ONLY, EMBER_PLUGIN_AUTOLOAD, EMBER_PLUGINS_STRICT, EMBER_REQUIRE_DEVICE) or
// through PluginOptions passed to ember::init(options) before first use. A field set in the
// options wins over the variable; an unset field (nullopt) falls back to the environment.
// Paths are the exception that adds up: options.paths are searched before EMBER_PLUGIN_PATH.
/** Plugin controls given through the API; unset fields fall back to the environment. */
struct PluginOptions {
  std::vector<std::string> paths;                   // files or directories, searched first
  std::optional<std::vector<std::string>> disable;  // overrides EMBER_PLUGINS_DISABLE
  std::optional<std::vector<std::string>> only;     // overrides EMBER_PLUGINS_ONLY
  std::optional<bool> autoload;                     // overrides EMBER_PLUGIN_AUTOLOAD
  std::optional<bool> strict;                       // overrides EMBER_PLUGINS_STRICT
  std::optional<std::string> require_device;        // overrides EMBER_REQUIRE_DEVICE
};

/** Runs discovery once (thread-safe); later calls return at once. Honours EMBER_* controls. */
EMBER_API void init();
/** Runs discovery with `options` (API over environment); throws if discovery already ran. */
EMBER_API void init(const PluginOptions& options);
/** Every file discovery considers (or considered), in search order, with the current controls. */
EMBER_API std::vector<std::string> plugin_candidates();
/** Calls each loaded plugin's shutdown (if its descriptor has one), last loaded first; once. */
EMBER_API void shutdown_plugins();
/** A snapshot of the plugin report (runs discovery first). */
EMBER_API PluginReport plugin_report();
/** The report as JSON: {"search_path":[...],"plugins":[...],"conflicts":[...]}. */
EMBER_API std::string plugin_report_json(const PluginReport& report);
/** Loads one plugin file explicitly; the record says how it went (never throws unless strict). */
EMBER_API PluginRecord load_plugin(const std::string& path);

/** A communication backend a loaded plugin registered (ABI 1.5, plugin_abi.h). */
struct CommBackend {
  std::string name;                       // "gloo"
  std::string plugin;                     // the plugin that registered it
  std::vector<std::string> device_types;  // whose tensors it moves
  ember_comm_backend_v1 table{};          // zero past the plugin's struct_size
  bool usable = false;
  std::string reason;  // why it is not usable
};
/** Every communication backend registered so far, in load order (runs discovery first). */
EMBER_API std::vector<CommBackend> comm_backends();

namespace detail {
/** How many times discovery has run in this process (0 or 1). */
EMBER_API int discovery_runs();
}  // namespace detail

}  // namespace ember
