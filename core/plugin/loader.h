// Plugin discovery, loading and the report of what happened to every candidate file.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "core/util/export.h"
#include "ember/plugin_abi.h"

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
};

/** The outcome as the report spells it: "loaded", "missing_dependency", ... */
EMBER_API const char* outcome_name(PluginOutcome o);

/** One directory searched, and why it was searched. */
struct SearchDir {
  std::string dir;
  std::string source;  // "EMBER_PLUGIN_PATH", "core library dir", "install dir"
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
  std::vector<std::string> devices;  // "cpu (1 device)", "cuda (0 devices: no CUDA device)"
  std::vector<std::string> ops;      // op names it registered kernels for
};

/** Everything discovery saw and decided. */
struct PluginReport {
  std::vector<SearchDir> search_path;
  std::vector<PluginRecord> plugins;
  std::vector<std::string> conflicts;
  bool autoload = true;
  bool strict = false;
};

/** Runs discovery once (thread-safe); later calls return at once. Honours EMBER_* controls. */
EMBER_API void init();
/** A snapshot of the plugin report (runs discovery first). */
EMBER_API PluginReport plugin_report();
/** The report as JSON: {"search_path":[...],"plugins":[...],"conflicts":[...]}. */
EMBER_API std::string plugin_report_json(const PluginReport& report);
/** Loads one plugin file explicitly; the record says how it went (never throws unless strict). */
EMBER_API PluginRecord load_plugin(const std::string& path);

namespace detail {
EMBER_API extern std::atomic<bool> g_plugins_loaded;
/** Slow path of ensure_plugins_loaded. */
EMBER_API void load_plugins_once();
/** The host services table handed to plugins and kernels. */
EMBER_API const ember_host_v1* host_table();
}  // namespace detail

/** Makes sure discovery has run; one relaxed load on the hot path. */
inline void ensure_plugins_loaded() {
  if (__builtin_expect(!detail::g_plugins_loaded.load(std::memory_order_acquire), 0)) {
    detail::load_plugins_once();
  }
}

}  // namespace ember
