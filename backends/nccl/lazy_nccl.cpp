#include "backends/nccl/lazy_nccl.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

#include "backends/lazy_library.h"
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

// The library, loaded by the first communicator (Note [Lazy vendor libraries]).
constinit backends::LazyLibrary<NcclApi> g_nccl(kSoname, kDir, nccl_load);

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
  void* lib = backends::open_library(soname, dir, RTLD_NOW | RTLD_LOCAL, &why);
  if (!lib)
    return sdk::fail_into(error, cap, EMBER_ERR_PEER,
                          "[nccl] cannot open %s: %s (install NCCL %d: NVIDIA's libnccl2 or pip's "
                          "nvidia-nccl-cu13, or add its directory to LD_LIBRARY_PATH)",
                          soname, why.c_str(), NCCL_MAJOR);
  NcclApi a{};
  const bool ok =
      backends::resolve(lib, "ncclGetErrorString", &a.get_error_string, &why) &&
      backends::resolve(lib, "ncclGetLastError", &a.get_last_error, &why) &&
      backends::resolve(lib, "ncclGetUniqueId", &a.get_unique_id, &why) &&
      backends::resolve(lib, "ncclCommInitRankConfig", &a.comm_init_rank_config, &why) &&
      backends::resolve(lib, "ncclCommGetAsyncError", &a.comm_get_async_error, &why) &&
      backends::resolve(lib, "ncclCommFinalize", &a.comm_finalize, &why) &&
      backends::resolve(lib, "ncclCommDestroy", &a.comm_destroy, &why) &&
      backends::resolve(lib, "ncclCommAbort", &a.comm_abort, &why) &&
      backends::resolve(lib, "ncclAllReduce", &a.all_reduce, &why) &&
      backends::resolve(lib, "ncclBroadcast", &a.broadcast, &why) &&
      backends::resolve(lib, "ncclAllGather", &a.all_gather, &why) &&
      backends::resolve(lib, "ncclReduceScatter", &a.reduce_scatter, &why) &&
      backends::resolve(lib, "ncclSend", &a.send, &why) &&
      backends::resolve(lib, "ncclRecv", &a.recv, &why) &&
      backends::resolve(lib, "ncclGroupStart", &a.group_start, &why) &&
      backends::resolve(lib, "ncclGroupEnd", &a.group_end, &why);
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
  return g_nccl.get(out, error, cap);
}

const NcclApi* nccl_api_if_loaded() {
  return g_nccl.if_loaded();
}

}  // namespace ember::nccl_backend
