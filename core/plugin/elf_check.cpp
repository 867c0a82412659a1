#include "core/plugin/elf_check.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

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
    case EM_X86_64: return "x86_64";
    case EM_AARCH64: return "aarch64";
    case EM_386: return "i386";
    case EM_ARM: return "arm";
    case EM_RISCV: return "riscv";
    case EM_PPC64: return "ppc64";
    case EM_S390: return "s390";
    default: return "an unknown machine";
  }
}

ElfCheck fail(PluginOutcome o, std::string reason) { return {false, o, std::move(reason)}; }

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
    return fail(PluginOutcome::WrongArch,
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
    return fail(PluginOutcome::WrongArch, fmt::format("built for {}, this host is {}",
                                                      machine_name(eh.e_machine),
                                                      machine_name(kHostMachine)));
  }
  if (eh.e_type != ET_DYN) return fail(PluginOutcome::NotAPlugin, "ELF file is not a shared library");
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 4096) {
    return fail(PluginOutcome::CorruptFile, "corrupt: implausible program header table");
  }
  // Everything the headers say is in the file must be in the file.
  uint64_t needed = eh.e_phoff + uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
  if (eh.e_phoff > size || needed > size) {
    return fail(PluginOutcome::CorruptFile, fmt::format("corrupt: {} of {} bytes", size, needed));
  }
  if (eh.e_shnum > 0) {
    const uint64_t sh_end = eh.e_shoff + uint64_t{eh.e_shnum} * eh.e_shentsize;
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
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail(PluginOutcome::NotAPlugin, fmt::format("cannot read: {}", std::strerror(errno)));
  }
  auto read_at = [fd](void* dst, size_t n, uint64_t offset) {
    size_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(fd, static_cast<char*>(dst) + done, n - done,
                                static_cast<off_t>(offset + done));
      if (r <= 0) return false;
      done += static_cast<size_t>(r);
    }
    return true;
  };
  ElfCheck result = check(read_at, static_cast<uint64_t>(st.st_size));
  ::close(fd);
  return result;
}

}  // namespace ember
