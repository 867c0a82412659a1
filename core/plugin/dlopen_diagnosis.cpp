// Why dlopen refused a plugin file: the dependency it could not find (and, from the ELF scan,
// every other missing one), an undefined symbol, the wrong architecture, or not a plugin.
#include <dlfcn.h>

#include <filesystem>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/plugin/elf_check.h"
#include "core/plugin/loading.h"

namespace fs = std::filesystem;

namespace ember::loading {
namespace {

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

}  // namespace

Stop diagnose_dlopen_failure(const std::string& path) {
  const std::string why = dlopen_reason(path);
  const std::string base = fs::path(path).filename().string();
  auto pos = why.find(": cannot open shared object file");
  if (pos != std::string::npos) {
    std::string dep = why.substr(0, pos);
    if (auto slash = dep.rfind('/'); slash != std::string::npos) dep = dep.substr(slash + 1);
    if (dep != base) {
      Stop stop{PluginOutcome::MissingDependency, fmt::format("missing dependency {}", dep)};
      // dlopen names the first library it could not find; the scan names them all.
      std::vector<std::string> others;
      for (const std::string& m : scan_dependencies(path).missing) {
        if (m.rfind(dep + " ", 0) != 0) others.push_back(m);
      }
      if (!others.empty())
        stop.reason += fmt::format(" (also missing: {})", fmt::join(others, ", "));
      return stop;
    }
  }
  if (why.find("undefined symbol") != std::string::npos) {
    return Stop{PluginOutcome::UndefinedSymbol, why.substr(why.find("undefined symbol"))};
  }
  if (why.find("wrong ELF class") != std::string::npos ||
      why.find("ELF machine") != std::string::npos) {
    return Stop{PluginOutcome::WrongArch, why};
  }
  return Stop{PluginOutcome::NotAPlugin, fmt::format("dlopen failed: {}", why)};
}

}  // namespace ember::loading
