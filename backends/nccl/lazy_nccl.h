// NCCL loaded on first use (Note [Lazy NCCL] in lazy_nccl.cpp): the plugin does not link libnccl;
// the entry points it calls are resolved with dlsym into a table by the first create. nccl.h is
// still included for its types and constants.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>

#include "ember/plugin_abi.h"

namespace ember::nccl_backend {

/** The NCCL entry points the plugin calls, resolved from libnccl at run time. */
struct NcclApi {
  decltype(&::ncclGetErrorString) get_error_string;
  decltype(&::ncclGetLastError) get_last_error;
  decltype(&::ncclGetUniqueId) get_unique_id;
  decltype(&::ncclCommInitRankConfig) comm_init_rank_config;
  decltype(&::ncclCommGetAsyncError) comm_get_async_error;
  decltype(&::ncclCommFinalize) comm_finalize;
  decltype(&::ncclCommDestroy) comm_destroy;
  decltype(&::ncclCommAbort) comm_abort;
  decltype(&::ncclAllReduce) all_reduce;
  decltype(&::ncclBroadcast) broadcast;
  decltype(&::ncclAllGather) all_gather;
  decltype(&::ncclReduceScatter) reduce_scatter;
  decltype(&::ncclSend) send;
  decltype(&::ncclRecv) recv;
  decltype(&::ncclGroupStart) group_start;
  decltype(&::ncclGroupEnd) group_end;
};

/** The library dlopen'ed: the soname of the NCCL the build found ("libnccl.so.2"). */
const char* nccl_library_name();

/** Where the build found that library (symlinks resolved): tried when the loader's search fails. */
const char* nccl_library_dir();

/** Loads NCCL once (thread-safe) and sets `*out`; on failure EMBER_ERR_PEER with "[nccl] cannot
 *  open libnccl.so.2: <dlerror> (...)" in `error`, and `*out` untouched. */
int32_t nccl_api(const NcclApi** out, char* error, size_t cap);

/** The table if NCCL was loaded successfully, else nullptr; never loads it. */
const NcclApi* nccl_api_if_loaded();

/** Opens `soname` through the loader's search, else `dir`/`soname` (no fallback if `dir` is empty),
 *  and resolves every entry point into `*api`; uncached. nccl_api runs it once with the build's
 *  library; tests run it with names that do not exist. */
int32_t nccl_load(const char* soname, const char* dir, NcclApi* api, char* error, size_t cap);

}  // namespace ember::nccl_backend
