// The pre-dlopen ELF check on bytes and files, and the dependency scan the doctor uses.
#include <elf.h>

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/plugin/elf_check.h"
#include "tests/plugin/plugin_test_util.h"

namespace ember {
namespace {

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(ElfCheck, RealPluginPasses) {
  auto bytes = read_bytes(EMBER_CPU_PLUGIN);
  EXPECT_TRUE(check_elf_bytes(bytes.data(), bytes.size()).ok);
  EXPECT_TRUE(check_elf_file(EMBER_CPU_PLUGIN).ok);
}

TEST(ElfCheck, TruncatedFileIsCorruptWithByteCounts) {
  auto bytes = read_bytes(EMBER_CPU_PLUGIN);
  ElfCheck c = check_elf_bytes(bytes.data(), 10000);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.outcome, PluginOutcome::CorruptFile);
  EXPECT_NE(c.reason.find("corrupt: 10000 of "), std::string::npos) << c.reason;
}

TEST(ElfCheck, ForeignMachineIsWrongArch) {
  auto bytes = read_bytes(EMBER_CPU_PLUGIN);
  auto* eh = reinterpret_cast<Elf64_Ehdr*>(bytes.data());
  eh->e_machine = EM_AARCH64;
  ElfCheck c = check_elf_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(c.outcome, PluginOutcome::WrongArch);
  EXPECT_EQ(c.reason, "built for aarch64, this host is x86_64");
}

TEST(ElfCheck, Elf32IsWrongArch) {
  auto bytes = read_bytes(EMBER_CPU_PLUGIN);
  bytes[EI_CLASS] = ELFCLASS32;
  ElfCheck c = check_elf_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(c.outcome, PluginOutcome::WrongArch);
  EXPECT_NE(c.reason.find("ELF32"), std::string::npos);
}

TEST(ElfCheck, GarbageIsNotAPlugin) {
  const unsigned char text[] = "hello world, not an ELF";
  EXPECT_EQ(check_elf_bytes(text, sizeof(text)).outcome, PluginOutcome::NotAPlugin);
  EXPECT_EQ(check_elf_bytes(text, 0).reason, "empty file");
}

TEST(ElfCheck, OwnerUnreadableFileIsUnreadableEvenForRoot) {
  ElfCheck c = check_elf_file(std::string(EMBER_FIXTURE_DIR) + "/libember-unreadable.so");
  EXPECT_EQ(c.outcome, PluginOutcome::Unreadable);
  EXPECT_EQ(c.reason, "unreadable: permission bits deny read (mode 0200)");
}

TEST(DependencyScan, ListsEveryMissingLibrary) {
  DependencyScan s =
      scan_dependencies(std::string(EMBER_FIXTURE_DIR) + "/libember-fixture-needsdep.so");
  ASSERT_EQ(s.missing_names.size(), 2u);
  EXPECT_EQ(s.missing[0], "libember_phantom_dep.so (needed by libember-fixture-needsdep.so)");
  EXPECT_EQ(s.missing_names[1], "libember_phantom_dep2.so");
}

TEST(DependencyScan, LdLibraryPathResolvesThem) {
  const std::string deps = std::string(EMBER_FIXTURE_DIR) + "/../deps";
  const char* old = std::getenv("LD_LIBRARY_PATH");
  const std::string saved = old ? old : "";
  setenv("LD_LIBRARY_PATH", deps.c_str(), 1);
  DependencyScan s =
      scan_dependencies(std::string(EMBER_FIXTURE_DIR) + "/libember-fixture-needsdep.so");
  if (old)
    setenv("LD_LIBRARY_PATH", saved.c_str(), 1);
  else
    unsetenv("LD_LIBRARY_PATH");
  EXPECT_TRUE(s.missing.empty());
}

TEST(DependencyScan, RealPluginHasNoMissingLibrary) {
  DependencyScan s = scan_dependencies(EMBER_CPU_PLUGIN);
  EXPECT_TRUE(s.missing.empty());
  bool found_dnnl = false;
  for (const auto& [name, path] : s.found) found_dnnl = found_dnnl || name.starts_with("libdnnl");
  EXPECT_TRUE(found_dnnl);
}

}  // namespace
}  // namespace ember
