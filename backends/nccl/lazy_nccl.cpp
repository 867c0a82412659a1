#include "backends/nccl/lazy_nccl.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

#include "ember/plugin_sdk_ops.hpp"

// Set by backends/nccl/CMakeLists.txt from the library find_library found.
#ifndef EMBER_NCCL_SONAME
#error "EMBER_NCCL_SONAME (the soname of the NCCL the build found) is not defined"
#endif
#ifndef EMBER_NCCL_LIBRARY_DIR
#error "EMBER_NCCL_LIBRARY_DIR (the directory the build found NCCL in) is not defined"
#endif

namespace ember::nccl_backend {
namespace {

// Note [Lazy NCCL]
// Every Ember process loads this plugin at discovery. Linking libnccl made the loader map
// libnccl.so.2 (a 218 MB file; about 1.7 ms and 2.4 MiB RSS here) right then, in every process,
// whether it ever ran a collective or not; worse, the first libnccl.so.2 in a process owns the
// soname, so a later `import torch` bound libtorch_cuda to the toolkit's older NCCL and failed
// ("undefined symbol: ncclCommResume"). So libnccl is not DT_NEEDED. The first create dlopens the
// soname of the NCCL the build found, through the loader's usual search (an NCCL already in the
// process, such as PyTorch's, is reused by its soname; then LD_LIBRARY_PATH, the plugin's RUNPATH,
// the loader cache), else the same name in the directory the build found it in, and resolves the
// entry points of NcclApi with dlsym, once (std::call_once). RTLD_LOCAL: nothing else needs NCCL's
// symbols. Discovery and `available` never open it, so the plugin loads and reports itself where
// NCCL is missing; a create there fails with the library's name and dlerror(). The CUDA runtime
// stays DT_NEEDED (cheap, and shared with PyTorch without trouble). The library is never
// dlclose'd: communicators and the core's process groups may live until exit.
constexpr const char* kSoname = EMBER_NCCL_SONAME;
constexpr const char* kDir = EMBER_NCCL_LIBRARY_DIR;

struct Loaded {
  std::once_flag once;
  NcclApi api{};
  int32_t status = EMBER_ERR_INTERNAL;
  char error[1024] = {0};  // the message of a failed load
};

Loaded g_loaded;
std::atomic<const NcclApi*> g_ready{nullptr};  // set once the table is complete

/** dlerror() after a failed dlopen/dlsym, or `fallback` if it has none. */
std::string last_dl_error(const std::string& fallback) {
  const char* e = dlerror();
  return e ? e : fallback;
}

/** dlopen of `soname` by the loader's search, else of `dir`/`soname`; nullptr with every
 *  attempt's dlerror() in `why`. */
void* open_library(const char* soname, const char* dir, std::string* why) {
  void* lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (lib) return lib;
  *why = last_dl_error(std::string(soname) + ": cannot open shared object file");
  if (!dir || !*dir) return nullptr;
  const std::string path = std::string(dir) + "/" + soname;
  lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib) return lib;
  *why += "; " + last_dl_error(path + ": cannot open shared object file");
  return nullptr;
}

/** Resolves `name` into `*out`; false with dlerror() in `why`. */
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

void load_once() {
  g_loaded.status = nccl_load(kSoname, kDir, &g_loaded.api, g_loaded.error, sizeof(g_loaded.error));
  if (g_loaded.status == EMBER_OK) g_ready.store(&g_loaded.api, std::memory_order_release);
}

}  // namespace

const char* nccl_library_name() {
  return kSoname;
}

const char* nccl_library_dir() {
  return kDir;
}

int32_t nccl_load(const char* soname, const char* dir, NcclApi* api, char* error, size_t cap) {
  // The ABI has no status for "this backend cannot run here"; EMBER_ERR_PEER is the one the core
  // raises as a DistributedError, the kind it uses for a backend that is not usable.
  std::string why;
  void* lib = open_library(soname, dir, &why);
  if (!lib)
    return sdk::fail_into(error, cap, EMBER_ERR_PEER,
                          "[nccl] cannot open %s: %s (install NCCL %d: NVIDIA's libnccl2 or pip's "
                          "nvidia-nccl-cu13, or add its directory to LD_LIBRARY_PATH)",
                          soname, why.c_str(), NCCL_MAJOR);
  NcclApi a{};
  const bool ok = resolve(lib, "ncclGetErrorString", &a.get_error_string, &why) &&
                  resolve(lib, "ncclGetLastError", &a.get_last_error, &why) &&
                  resolve(lib, "ncclGetUniqueId", &a.get_unique_id, &why) &&
                  resolve(lib, "ncclCommInitRankConfig", &a.comm_init_rank_config, &why) &&
                  resolve(lib, "ncclCommGetAsyncError", &a.comm_get_async_error, &why) &&
                  resolve(lib, "ncclCommFinalize", &a.comm_finalize, &why) &&
                  resolve(lib, "ncclCommDestroy", &a.comm_destroy, &why) &&
                  resolve(lib, "ncclCommAbort", &a.comm_abort, &why) &&
                  resolve(lib, "ncclAllReduce", &a.all_reduce, &why) &&
                  resolve(lib, "ncclBroadcast", &a.broadcast, &why) &&
                  resolve(lib, "ncclAllGather", &a.all_gather, &why) &&
                  resolve(lib, "ncclReduceScatter", &a.reduce_scatter, &why) &&
                  resolve(lib, "ncclSend", &a.send, &why) &&
                  resolve(lib, "ncclRecv", &a.recv, &why) &&
                  resolve(lib, "ncclGroupStart", &a.group_start, &why) &&
                  resolve(lib, "ncclGroupEnd", &a.group_end, &why);
  if (!ok) {
    dlclose(lib);
    return sdk::fail_into(error, cap, EMBER_ERR_PEER,
                          "[nccl] %s is not a usable NCCL: %s (the nccl backend needs NCCL 2.14 "
                          "or newer)",
                          soname, why.c_str());
  }
  *api = a;
  return EMBER_OK;
}

int32_t nccl_api(const NcclApi** out, char* error, size_t cap) {
  std::call_once(g_loaded.once, load_once);
  if (g_loaded.status != EMBER_OK)
    return sdk::fail_into(error, cap, g_loaded.status, "%s", g_loaded.error);
  *out = &g_loaded.api;
  return EMBER_OK;
}

const NcclApi* nccl_api_if_loaded() {
  return g_ready.load(std::memory_order_acquire);
}

}  // namespace ember::nccl_backend
