// A vendor library a communication backend opens on its first use instead of linking it (Note
// [Lazy vendor libraries]): the dlopen search, symbol resolution and the load-once table shared
// by the mpi and nccl plugins.
#pragma once

#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "ember/plugin_sdk_ops.hpp"

namespace ember::backends {

// Note [Lazy vendor libraries]
// Every Ember process loads every plugin at discovery, so a plugin that linked its vendor library
// (libmpi, libnccl) would map it in every process, ran a collective or not, and would own the
// library's soname before any other user of it in the process (PyTorch's NCCL). The mpi and nccl
// plugins therefore name the soname and directory the build found, and open the library on their
// first communicator: by the loader's usual search (a copy already in the process is reused),
// else in that directory; every entry point is resolved with dlsym into a table of function
// pointers, once, under std::call_once. A failed load is kept (its status and message) and
// reported by every later call; a loaded library is never closed, since communicators may live
// until exit. Each plugin's Note says why its flags (RTLD_LOCAL or RTLD_GLOBAL) are what they are.

/** dlerror() after a failed dlopen/dlsym, or `fallback` if it has none. */
inline std::string last_dl_error(const std::string& fallback) {
  const char* e = dlerror();
  return e ? e : fallback;
}

/** dlopen(mode) of `soname` by the loader's search, else of `dir`/`soname`; nullptr with every
 *  attempt's dlerror() in `why`. */
inline void* open_library(const char* soname, const char* dir, int mode, std::string* why) {
  void* lib = dlopen(soname, mode);
  if (lib) return lib;
  *why = last_dl_error(std::string(soname) + ": cannot open shared object file");
  if (!dir || !*dir) return nullptr;
  const std::string path = std::string(dir) + "/" + soname;
  lib = dlopen(path.c_str(), mode);
  if (lib) return lib;
  *why += "; " + last_dl_error(path + ": cannot open shared object file");
  return nullptr;
}

/** Resolves the function `name` of `lib` into `*out`; false with dlerror() in `why`. */
template <typename Fn>
bool resolve(void* lib, const char* name, Fn* out, std::string* why) {
  dlerror();
  void* sym = dlsym(lib, name);
  if (!sym) {
    *why = last_dl_error(std::string(name) + ": symbol not found");
    return false;
  }
  *out = reinterpret_cast<Fn>(sym);
  return true;
}

/** The table of entry points `Api` of a library loaded on first use by `Load` (which fills the
 *  table or returns a status and message); constant-initialised, so a global one is ready
 *  before any static constructor runs. */
template <typename Api>
class LazyLibrary {
 public:
  /** Loads `soname` (else `dir`/`soname`) into an Api, or fails with a status and message. */
  using Load = int32_t (*)(const char* soname, const char* dir, Api* api, char* error, size_t cap);

  /** The library `soname` found in `dir` at build time, loaded by `load`. */
  constexpr LazyLibrary(const char* soname, const char* dir, Load load)
      : soname_(soname), dir_(dir), load_(load) {}

  /** The table, loading the library on the first call; the load's failure on every call. */
  int32_t get(const Api** out, char* error, size_t cap) {
    std::call_once(once_, [this] {
      status_ = load_(soname_, dir_, &api_, error_, sizeof(error_));
      if (status_ == EMBER_OK) ready_.store(&api_, std::memory_order_release);
    });
    if (status_ != EMBER_OK) return sdk::fail_into(error, cap, status_, "%s", error_);
    *out = &api_;
    return EMBER_OK;
  }

  /** The table if a call to get() loaded it, else nullptr (never loads). */
  const Api* if_loaded() const { return ready_.load(std::memory_order_acquire); }

 private:
  const char* soname_;
  const char* dir_;
  Load load_;
  std::once_flag once_;
  Api api_{};
  int32_t status_ = EMBER_ERR_INTERNAL;
  char error_[1024] = {0};  // the message of a failed load
  std::atomic<const Api*> ready_{nullptr};
};

}  // namespace ember::backends
