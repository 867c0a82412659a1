// MPI loaded on first use (Note [Lazy MPI] in lazy_mpi.cpp): the plugin does not link libmpi; the
// functions it calls are resolved with dlsym into a table by the first create, and with Open MPI
// so are the predefined handles (Note [Open MPI's handles are data symbols]). mpi.h is still
// included for its types and constants; include it through this header only.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ember/plugin_abi.h"

namespace ember::mpi_backend {

#if defined(OPEN_MPI)
/** The Open MPI objects behind the handles the plugin uses: the symbol each mpi.h macro takes
 *  the address of (MPI_COMM_WORLD is &ompi_mpi_comm_world). A handle used but missing here is a
 *  compile error ("no member named ..."). */
#define EMBER_OMPI_HANDLES(X) \
  X(ompi_mpi_comm_world)      \
  X(ompi_mpi_comm_null)       \
  X(ompi_request_null)        \
  X(ompi_mpi_errors_return)   \
  X(ompi_mpi_datatype_null)   \
  X(ompi_mpi_byte)            \
  X(ompi_mpi_float)           \
  X(ompi_mpi_double)          \
  X(ompi_mpi_int64_t)         \
  X(ompi_mpi_int32_t)         \
  X(ompi_mpi_int8_t)          \
  X(ompi_mpi_uint8_t)         \
  X(ompi_mpi_c_bool)          \
  X(ompi_mpi_op_null)         \
  X(ompi_mpi_op_sum)          \
  X(ompi_mpi_op_prod)         \
  X(ompi_mpi_op_min)          \
  X(ompi_mpi_op_max)          \
  X(ompi_mpi_op_lor)          \
  X(ompi_mpi_op_land)

/** The addresses of those objects in the loaded libmpi, one member per symbol; null before. */
struct OmpiHandles {
#define EMBER_OMPI_HANDLE_MEMBER(symbol) void* symbol = nullptr;
  EMBER_OMPI_HANDLES(EMBER_OMPI_HANDLE_MEMBER)
#undef EMBER_OMPI_HANDLE_MEMBER
};
#else
// MPICH and its derivatives (Intel MPI, MVAPICH) define every handle as an integer constant, so
// the mpi.h macros need no symbol and no table; an MPI whose handles are neither that nor Open
// MPI's objects needs its own entry here.
static_assert(std::is_integral_v<MPI_Comm> && std::is_integral_v<MPI_Datatype> &&
                  std::is_integral_v<MPI_Op> && std::is_integral_v<MPI_Request>,
              "the mpi backend loads libmpi lazily and knows Open MPI's handles (data symbols) "
              "and MPICH's (integer constants): teach lazy_mpi.h this MPI's");
#endif

/** The MPI functions the plugin calls, resolved from libmpi at run time. */
struct MpiApi {
  decltype(&::MPI_Init_thread) init_thread;
  decltype(&::MPI_Initialized) initialized;
  decltype(&::MPI_Finalized) finalized;
  decltype(&::MPI_Finalize) finalize;
  decltype(&::MPI_Query_thread) query_thread;
  decltype(&::MPI_Error_string) error_string;
  decltype(&::MPI_Comm_set_errhandler) comm_set_errhandler;
  decltype(&::MPI_Comm_rank) comm_rank;
  decltype(&::MPI_Comm_size) comm_size;
  decltype(&::MPI_Comm_idup) comm_idup;
  decltype(&::MPI_Comm_get_attr) comm_get_attr;
  decltype(&::MPI_Comm_free) comm_free;
  decltype(&::MPI_Type_contiguous) type_contiguous;
  decltype(&::MPI_Type_commit) type_commit;
  decltype(&::MPI_Op_create) op_create;
  decltype(&::MPI_Test) test;
  decltype(&::MPI_Cancel) cancel;
  decltype(&::MPI_Get_count) get_count;
  decltype(&::MPI_Iallreduce) iallreduce;
  decltype(&::MPI_Ibcast) ibcast;
  decltype(&::MPI_Iallgather) iallgather;
  decltype(&::MPI_Ireduce_scatter_block) ireduce_scatter_block;
  decltype(&::MPI_Ialltoall) ialltoall;
  decltype(&::MPI_Ibarrier) ibarrier;
  decltype(&::MPI_Isend) isend;
  decltype(&::MPI_Irecv) irecv;
#if defined(OPEN_MPI)
  /** The predefined handles (Note [Open MPI's handles are data symbols]). */
  OmpiHandles handles;
#endif
};

/** The library dlopen'ed: the soname of the MPI the build found ("libmpi.so.40"). */
const char* mpi_library_name();

/** Where the build found that library (symlinks resolved): tried when the loader's search fails. */
const char* mpi_library_dir();

/** Loads MPI once (thread-safe) and sets `*out`; on failure EMBER_ERR_PEER with "[mpi] cannot
 *  open libmpi.so.40: <dlerror> (...)" in `error`, and `*out` untouched. */
int32_t mpi_api(const MpiApi** out, char* error, size_t cap);

/** The table if MPI was loaded successfully, else nullptr; never loads it. */
const MpiApi* mpi_api_if_loaded();

/** Opens `soname` through the loader's search, else `dir`/`soname` (no fallback if `dir` is empty),
 *  RTLD_GLOBAL, and resolves every entry into `*api`; uncached. mpi_api runs it once with the
 *  build's library; tests run it with names that do not exist. */
int32_t mpi_load(const char* soname, const char* dir, MpiApi* api, char* error, size_t cap);

#if defined(OPEN_MPI)
/** The predefined handles of the loaded libmpi; all null before mpi_api succeeded. */
const OmpiHandles& ompi_handles();
#endif

}  // namespace ember::mpi_backend

#if defined(OPEN_MPI)
// Every handle macro of Open MPI's mpi.h (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, ...) expands to
// OMPI_PREDEFINED_GLOBAL(type, symbol); redefined here, it reads the symbol's address from the
// loaded library instead of linking it (Note [Open MPI's handles are data symbols]).
#undef OMPI_PREDEFINED_GLOBAL
#define OMPI_PREDEFINED_GLOBAL(type, global) \
  (static_cast<type>(::ember::mpi_backend::ompi_handles().global))
#endif
