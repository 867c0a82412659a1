// The controls (API over environment) and where discovery looks: the explicit files and
// directories, then ember-plugins/ next to the core (Note [Plugins live next to the core]).
#include <fnmatch.h>
#include <strings.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/plugin/loading.h"

namespace fs = std::filesystem;

namespace ember::loading {

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

namespace {

bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return !(std::strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0 || strcasecmp(v, "off") == 0);
}

}  // namespace

bool matches_any(const std::vector<std::string>& globs, const std::string& name) {
  return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) {
    return fnmatch(g.c_str(), name.c_str(), 0) == 0;
  });
}

namespace {

bool is_candidate_name(const std::string& name) {
  return name.rfind("libember", 0) == 0 &&
         (name.size() > 3 && (name.ends_with(".so") || name.find(".so.") != std::string::npos));
}

}  // namespace

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

namespace {

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

}  // namespace

// Reads the controls: PluginOptions fields win over the environment (Note [Plugin options: API
// over environment]); each decision is noted in report.controls.
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

}  // namespace ember::loading
