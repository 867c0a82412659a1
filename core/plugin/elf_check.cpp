#include "core/plugin/elf_check.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

namespace ember {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#else
constexpr uint16_t kHostMachine = EM_NONE;
#endif

const char* machine_name(uint16_t m) {
  switch (m) {
    case EM_X86_64:
      return "x86_64";
    case EM_AARCH64:
      return "aarch64";
    case EM_386:
      return "i386";
    case EM_ARM:
      return "arm";
    case EM_RISCV:
      return "riscv";
    case EM_PPC64:
      return "ppc64";
    case EM_S390:
      return "s390";
    default:
      return "an unknown machine";
  }
}

ElfCheck fail(PluginOutcome o, std::string reason) {
  return {false, o, std::move(reason)};
}

// Reads `n` bytes at `offset`; returns false if they are not all there.
using ReadAt = std::function<bool(void* dst, size_t n, uint64_t offset)>;

ElfCheck check(const ReadAt& read_at, uint64_t size) {
  if (size == 0) return fail(PluginOutcome::NotAPlugin, "empty file");
  unsigned char ident[EI_NIDENT] = {0};
  if (size < 4 || !read_at(ident, 4, 0) || std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    return fail(PluginOutcome::NotAPlugin, "not an ELF file");
  }
  if (size < EI_NIDENT || !read_at(ident, EI_NIDENT, 0)) {
    return fail(PluginOutcome::CorruptFile,
                fmt::format("corrupt: {} of {} bytes of the ELF identification", size, EI_NIDENT));
  }
  if (ident[EI_CLASS] != ELFCLASS64) {
    return fail(
        PluginOutcome::WrongArch,
        fmt::format("built as {}, this host is 64-bit {}",
                    ident[EI_CLASS] == ELFCLASS32 ? "ELF32 (32-bit)" : "an unknown ELF class",
                    machine_name(kHostMachine)));
  }
  if (ident[EI_DATA] != ELFDATA2LSB) {
    return fail(PluginOutcome::WrongArch, "big-endian ELF file, this host is little-endian");
  }
  Elf64_Ehdr eh;
  if (size < sizeof(eh) || !read_at(&eh, sizeof(eh), 0)) {
    return fail(PluginOutcome::CorruptFile,
                fmt::format("corrupt: {} of {} bytes of the ELF header", size, sizeof(eh)));
  }
  if (eh.e_machine != kHostMachine) {
    return fail(PluginOutcome::WrongArch,
                fmt::format("built for {}, this host is {}", machine_name(eh.e_machine),
                            machine_name(kHostMachine)));
  }
  if (eh.e_type != ET_DYN)
    return fail(PluginOutcome::NotAPlugin, "ELF file is not a shared library");
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 4096) {
    return fail(PluginOutcome::CorruptFile, "corrupt: implausible program header table");
  }
  // Everything the headers say is in the file must be in the file.
  uint64_t needed = eh.e_phoff + uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
  if (eh.e_phoff > size || needed > size) {
    return fail(PluginOutcome::CorruptFile, fmt::format("corrupt: {} of {} bytes", size, needed));
  }
  if (eh.e_shnum > 0) {
    // An offset near 2^64 would wrap the end around to a small number that "fits".
    uint64_t sh_end = 0;
    if (__builtin_add_overflow(eh.e_shoff, uint64_t{eh.e_shnum} * eh.e_shentsize, &sh_end)) {
      return fail(PluginOutcome::CorruptFile, "corrupt: implausible section header table");
    }
    needed = std::max(needed, sh_end);
  }
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!read_at(&ph, sizeof(ph), eh.e_phoff + uint64_t{i} * sizeof(ph))) {
      return fail(PluginOutcome::CorruptFile, fmt::format("corrupt: {} of {} bytes", size, needed));
    }
    if (ph.p_offset > (uint64_t{1} << 40) || ph.p_filesz > (uint64_t{1} << 40)) {
      return fail(PluginOutcome::CorruptFile, "corrupt: implausible segment extents");
    }
    needed = std::max<uint64_t>(needed, ph.p_offset + ph.p_filesz);
  }
  if (needed > size) {
    return fail(PluginOutcome::CorruptFile, fmt::format("corrupt: {} of {} bytes", size, needed));
  }
  return {true, PluginOutcome::Loaded, ""};
}

}  // namespace

ElfCheck check_elf_bytes(const unsigned char* data, size_t size) {
  auto read_at = [&](void* dst, size_t n, uint64_t offset) {
    if (offset > size || n > size - offset) return false;
    std::memcpy(dst, data + offset, n);
    return true;
  };
  return check(read_at, size);
}

ElfCheck check_elf_file(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    return fail(PluginOutcome::NotAPlugin, fmt::format("cannot stat: {}", std::strerror(errno)));
  }
  if (S_ISLNK(st.st_mode) && ::stat(path.c_str(), &st) != 0) {
    return fail(PluginOutcome::NotAPlugin,
                fmt::format("dangling symlink: {}", std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) return fail(PluginOutcome::NotAPlugin, "a directory, not a file");
  if (!S_ISREG(st.st_mode)) return fail(PluginOutcome::NotAPlugin, "not a regular file");
  // Note [Unreadable means the owner may not read]
  // Root reads any file whatever its mode, so open() alone would let a mode-000 file through
  // when tests (or services) run as root. A candidate whose permission bits deny read to its
  // owner is almost always a deliberately disabled or half-installed plugin; it is skipped as
  // unreadable no matter who runs us. Other users still get EACCES from open() below.
  if ((st.st_mode & S_IRUSR) == 0) {
    return fail(
        PluginOutcome::Unreadable,
        fmt::format("unreadable: permission bits deny read (mode {:04o})", st.st_mode & 07777));
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail(PluginOutcome::Unreadable, fmt::format("unreadable: {}", std::strerror(errno)));
  }
  auto read_at = [fd](void* dst, size_t n, uint64_t offset) {
    size_t done = 0;
    while (done < n) {
      const ssize_t r =
          ::pread(fd, static_cast<char*>(dst) + done, n - done, static_cast<off_t>(offset + done));
      if (r <= 0) return false;
      done += static_cast<size_t>(r);
    }
    return true;
  };
  ElfCheck result = check(read_at, static_cast<uint64_t>(st.st_size));
  ::close(fd);
  return result;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Dependency scan (used by `ember plugins doctor` and for the reason of a missing dependency).

namespace fs = std::filesystem;

struct DynInfo {
  bool ok = false;
  std::vector<std::string> needed;
  std::vector<std::string> rpath, runpath;  // already split on ':'
};

bool pread_all(int fd, void* dst, size_t n, uint64_t off) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r =
        ::pread(fd, static_cast<char*>(dst) + done, n - done, static_cast<off_t>(off + done));
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

std::vector<std::string> split_path(const std::string& s, const std::string& origin) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    std::string d = s.substr(start, end - start);
    for (const char* tok : {"$ORIGIN", "${ORIGIN}"}) {
      for (size_t p; (p = d.find(tok)) != std::string::npos;)
        d.replace(p, std::strlen(tok), origin);
    }
    if (!d.empty()) out.push_back(d);
    start = end + 1;
  }
  return out;
}

// Reads DT_NEEDED, DT_RPATH and DT_RUNPATH of a 64-bit ELF file of this host's machine.
DynInfo read_dynamic(const std::string& path) {
  DynInfo info;
  if (!check_elf_file(path).ok) return info;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return info;
  Elf64_Ehdr eh;
  std::vector<Elf64_Phdr> ph;
  if (pread_all(fd, &eh, sizeof(eh), 0)) {
    ph.resize(eh.e_phnum);
    if (!pread_all(fd, ph.data(), ph.size() * sizeof(Elf64_Phdr), eh.e_phoff)) ph.clear();
  }
  auto to_offset = [&](uint64_t vaddr) -> int64_t {
    for (const Elf64_Phdr& p : ph) {
      if (p.p_type == PT_LOAD && vaddr >= p.p_vaddr && vaddr < p.p_vaddr + p.p_filesz)
        return static_cast<int64_t>(vaddr - p.p_vaddr + p.p_offset);
    }
    return -1;
  };
  std::vector<Elf64_Dyn> dyn;
  for (const Elf64_Phdr& p : ph) {
    if (p.p_type != PT_DYNAMIC) continue;
    dyn.resize(p.p_filesz / sizeof(Elf64_Dyn));
    if (!pread_all(fd, dyn.data(), dyn.size() * sizeof(Elf64_Dyn), p.p_offset)) dyn.clear();
  }
  uint64_t strtab = 0, strsz = 0;
  for (const Elf64_Dyn& d : dyn) {
    if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr;
    if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val;
  }
  const int64_t str_off = strtab ? to_offset(strtab) : -1;
  std::string strings(strsz < (64u << 20) ? strsz : 0, '\0');
  if (str_off < 0 || !pread_all(fd, strings.data(), strings.size(), str_off)) {
    ::close(fd);
    return info;
  }
  ::close(fd);
  auto str = [&](uint64_t off) {
    return off < strings.size() ? std::string(strings.c_str() + off) : std::string();
  };
  const std::string origin = fs::path(path).parent_path().string();
  for (const Elf64_Dyn& d : dyn) {
    if (d.d_tag == DT_NEEDED) info.needed.push_back(str(d.d_un.d_val));
    if (d.d_tag == DT_RPATH) info.rpath = split_path(str(d.d_un.d_val), origin);
    if (d.d_tag == DT_RUNPATH) info.runpath = split_path(str(d.d_un.d_val), origin);
  }
  info.ok = true;
  return info;
}

// soname -> path from `ldconfig -p`, 64-bit entries of this host's kind only; read once.
const std::map<std::string, std::string>& ld_cache() {
  static const std::map<std::string, std::string> cache = [] {
    std::map<std::string, std::string> m;
    for (const char* cmd : {"/sbin/ldconfig -p 2>/dev/null", "ldconfig -p 2>/dev/null"}) {
      FILE* p = ::popen(cmd, "r");
      if (!p) continue;
      char line[4096];
      while (std::fgets(line, sizeof(line), p)) {
        std::string l(line);
        const size_t arrow = l.find(" => ");
        const size_t paren = l.find(" (");
        if (arrow == std::string::npos || paren == std::string::npos) continue;
#if defined(__x86_64__)
        if (l.find("x86-64", paren) == std::string::npos) continue;
#elif defined(__aarch64__)
        if (l.find("AArch64", paren) == std::string::npos) continue;
#endif
        const size_t b = l.find_first_not_of(" \t");
        std::string name = l.substr(b, paren - b);
        std::string target = l.substr(arrow + 4);
        while (!target.empty() && (target.back() == '\n' || target.back() == ' '))
          target.pop_back();
        m.emplace(name, target);  // first entry wins, as in the cache's own order
      }
      const int rc = ::pclose(p);
      if (!m.empty() || rc == 0) break;
    }
    return m;
  }();
  return cache;
}

// Base names of the objects already loaded in this process: a DT_NEEDED name matching one is
// satisfied without a search (the loader matches sonames of loaded objects first).
std::set<std::string> loaded_objects() {
  std::set<std::string> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name && *info->dlpi_name) {
          static_cast<std::set<std::string>*>(data)->insert(
              fs::path(info->dlpi_name).filename().string());
        }
        return 0;
      },
      &out);
  return out;
}

bool usable_library(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && check_elf_file(path).ok;
}

}  // namespace

DependencyScan scan_dependencies(const std::string& path) {
  DependencyScan scan;
  const std::set<std::string> loaded = loaded_objects();
  const std::vector<std::string> ld_library_path =
      split_path(std::getenv("LD_LIBRARY_PATH") ? std::getenv("LD_LIBRARY_PATH") : "", ".");
#if defined(__x86_64__)
  const char* multiarch = "x86_64-linux-gnu";
#else
  const char* multiarch = "aarch64-linux-gnu";
#endif
  const std::vector<std::string> defaults = {std::string("/lib/") + multiarch,
                                             std::string("/usr/lib/") + multiarch,
                                             "/lib64",
                                             "/usr/lib64",
                                             "/lib",
                                             "/usr/lib"};
  struct Item {
    std::string file;
    std::vector<std::string> inherited_rpath;  // DT_RPATH of the objects that led here
  };
  std::deque<Item> queue{{path, {}}};
  std::set<std::string> seen_files{path}, seen_missing;
  std::set<std::string> seen_names;
  while (!queue.empty()) {
    Item item = std::move(queue.front());
    queue.pop_front();
    const DynInfo info = read_dynamic(item.file);
    if (!info.ok) continue;
    std::vector<std::string> rpath_chain = info.rpath;
    rpath_chain.insert(rpath_chain.end(), item.inherited_rpath.begin(), item.inherited_rpath.end());
    const std::string who = fs::path(item.file).filename().string();
    for (const std::string& name : info.needed) {
      std::string found;
      if (name.find('/') != std::string::npos) {
        if (usable_library(name)) found = name;
      } else if (loaded.count(name)) {
        found = "(already loaded)";
      } else {
        std::vector<std::string> dirs;
        if (info.runpath.empty()) dirs = rpath_chain;
        dirs.insert(dirs.end(), ld_library_path.begin(), ld_library_path.end());
        dirs.insert(dirs.end(), info.runpath.begin(), info.runpath.end());
        for (const std::string& d : dirs) {
          if (usable_library(d + "/" + name)) {
            found = d + "/" + name;
            break;
          }
        }
        if (found.empty()) {
          auto it = ld_cache().find(name);
          if (it != ld_cache().end() && usable_library(it->second)) found = it->second;
        }
        for (size_t i = 0; found.empty() && i < defaults.size(); ++i) {
          if (usable_library(defaults[i] + "/" + name)) found = defaults[i] + "/" + name;
        }
      }
      if (found.empty()) {
        if (seen_missing.insert(name).second) {
          scan.missing.push_back(fmt::format("{} (needed by {})", name, who));
          scan.missing_names.push_back(name);
        }
        continue;
      }
      if (seen_names.insert(name).second) scan.found.emplace_back(name, found);
      if (found != "(already loaded)" && seen_files.insert(found).second) {
        queue.push_back({found, info.runpath.empty() ? rpath_chain : item.inherited_rpath});
      }
    }
  }
  return scan;
}

}  // namespace ember
