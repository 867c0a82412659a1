// ABI stability: a plugin built against the frozen 1.0 header runs in this core; the core reads
// nothing past a plugin's declared struct_size; tables only grow at the end; every plugin
// exports exactly one dynamic symbol.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <ember/ember.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/plugin/elf_check.h"
#include "tests/plugin/plugin_test_util.h"

namespace fs = std::filesystem;

namespace ember {
namespace {

TEST(AbiStability, PluginBuiltAgainstV10LoadsAndRunsItsKernel) {
  test::RunResult r = test::run_probe(
      "", std::string("--load ") + EMBER_FIXTURE_DIR +
              "/libember-fixture-abi10.so --run-op fixture_abi10_twice --olddev-stats --shutdown");
  ASSERT_EQ(r.exit_code, 0) << "signal " << r.signal << ": " << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["loads"][0]["outcome"], "loaded");
  EXPECT_EQ(j["loads"][0]["name"], "abi10");
  EXPECT_EQ(j["ops"]["fixture_abi10_twice"], 2.0);
  // olddev's table ends before memory_stats, whose slot holds a function that aborts: the core
  // must treat it as absent. Likewise the descriptor ends before shutdown.
  EXPECT_EQ(j["olddev_stats"], 0);
  EXPECT_EQ(j["shutdown"], true);
}

// The body of `typedef struct <name> { ... } <name>;` without comments and blank space.
std::map<std::string, std::string> struct_bodies(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = std::regex_replace(ss.str(), std::regex(R"(/\*[\s\S]*?\*/)"), "");
  text = std::regex_replace(text, std::regex(R"(//[^\n]*)"), "");
  std::map<std::string, std::string> out;
  const std::regex def(R"(typedef\s+struct\s+(\w+)\s*\{([^}]*)\})");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), def); it != std::sregex_iterator();
       ++it) {
    out[(*it)[1]] = std::regex_replace((*it)[2].str(), std::regex(R"(\s+)"), " ");
  }
  return out;
}

TEST(AbiStability, TablesOnlyGrowAtTheEnd) {
  const auto frozen = struct_bodies(EMBER_FROZEN_ABI_HEADER);
  const auto current = struct_bodies(EMBER_CURRENT_ABI_HEADER);
  ASSERT_GE(frozen.size(), 8u);
  for (const auto& [name, body] : frozen) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(current.count(name)) << name << " was removed";
    EXPECT_EQ(current.at(name).substr(0, body.size()), body) << "fields of 1.0 changed";
  }
}

// Every plugin file built with ember_add_plugin exports exactly one dynamic symbol, the entry.
TEST(AbiStability, EveryPluginExportsExactlyOneSymbol) {
  std::vector<std::string> files;
  for (const char* dir : {EMBER_PLUGIN_DIR, EMBER_FIXTURE_DIR, EMBER_FIXTURE_CRASH_DIR}) {
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (e.is_symlink() || name == "libember-noentry.so" || name == "libember-unreadable.so")
        continue;
      if (!check_elf_file(e.path().string()).ok) continue;  // the broken-file fixtures
      files.push_back(e.path().string());
    }
  }
  ASSERT_GE(files.size(), 10u);
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    test::RunResult r = test::run("", "nm", "-D --defined-only " + f);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> symbols;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) symbols.push_back(line.substr(line.rfind(' ') + 1));
    }
    ASSERT_EQ(symbols.size(), 1u) << r.out;
    EXPECT_EQ(symbols[0], EMBER_PLUGIN_ENTRY);
  }
}

}  // namespace
}  // namespace ember
