#include "backends/mpi/lazy_mpi.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

#include "backends/lazy_library.h"
#include "ember/plugin_sdk_ops.hpp"

// Set by backends/mpi/CMakeLists.txt from the library find_package(MPI) found.
#ifndef EMBER_MPI_SONAME
#error "EMBER_MPI_SONAME (the soname of the MPI the build found) is not defined"
#endif
#ifndef EMBER_MPI_LIBRARY_DIR
#error "EMBER_MPI_LIBRARY_DIR (the directory the build found MPI in) is not defined"
#endif

namespace ember::mpi_backend {
namespace {

// Note [Lazy MPI]
// Every Ember process loads this plugin at discovery, under mpirun or not. Linking libmpi made
// the loader map Open MPI right then (libmpi, libopen-rte, libopen-pal, hwloc, libevent: about
// 1.5 ms and 1.6 MiB RSS here), in every process, though only processes that create an mpi
// process group ever call it. So libmpi is not DT_NEEDED. The first call that needs MPI
// (ensure_mpi in plugin.cpp: a create, or world when the launcher does not give the size)
// dlopens the soname of the MPI the build found, through the loader's usual search (an MPI
// already in the process, such as the application's, is reused by its soname; then
// LD_LIBRARY_PATH, the loader cache), else the same name in the directory the build found it in,
// and resolves MpiApi with dlsym, once (std::call_once). RTLD_GLOBAL: Open MPI dlopens its own
// components (mca_*.so), which are not linked against libmpi, libopen-rte or libopen-pal
// (readelf -d mca_pml_ob1.so names libc only) and take their symbols from the global scope
// (Debian's Open MPI 4.1 happens to cope with RTLD_LOCAL too, the mpirun tests pass either way;
// Open MPI does not promise it). Discovery, init and `available` never open it, so the plugin
// loads and reports itself where MPI is missing; a create there fails with the library's name and
// dlerror(). The library is never dlclose'd (MPI cannot be initialized twice in a process, and
// MPI_Finalize may run at exit).

// Note [Open MPI's handles are data symbols]
// Open MPI's handles are not constants: MPI_COMM_WORLD is the address of the object
// ompi_mpi_comm_world in libmpi, MPI_FLOAT of ompi_mpi_float, MPI_SUM of ompi_mpi_op_sum (every
// handle macro of its mpi.h expands to OMPI_PREDEFINED_GLOBAL(type, symbol)). Used as they are,
// each is a data relocation against libmpi that the loader must resolve when it maps the plugin,
// which needs libmpi linked (and -z defs refuses to link the plugin without it). So lazy_mpi.h
// redefines OMPI_PREDEFINED_GLOBAL to read the symbol's address from OmpiHandles, which mpi_load
// fills (EMBER_OMPI_HANDLES lists the symbols; a handle missing there does not compile). The
// plugin's code keeps writing MPI_COMM_WORLD and MPI_FLOAT; they are valid once mpi_api succeeded
// and null before, so nothing may evaluate one earlier (Global's members start as {}).
// The address is looked up in the global scope (RTLD_DEFAULT), not in libmpi's handle: an
// executable that names these objects itself (an application using MPI directly) and was linked
// with copy relocations, the default for PIE on x86-64, holds copies of them, and libmpi's own
// references bind to those copies, not to libmpi's originals. The global scope finds the
// executable's copy first, as libmpi's references do, and otherwise libmpi's object (opened
// RTLD_GLOBAL). mpi_lazy_tests is such an executable and checks every handle.
// MPICH and its derivatives define their handles as integer constants (MPI_COMM_WORLD is
// ((MPI_Comm)0x44000000)): nothing to resolve, and the soname (libmpi.so.12) comes from the
// library CMake found; lazy_mpi.h checks that the handles are integers. That port is neither
// built nor tested here (Debian ships Open MPI, and so do the tests).
constexpr const char* kSoname = EMBER_MPI_SONAME;
constexpr const char* kDir = EMBER_MPI_LIBRARY_DIR;

// The library, loaded by the first communicator (Note [Lazy vendor libraries]).
constinit backends::LazyLibrary<MpiApi> g_mpi(kSoname, kDir, mpi_load);

#if defined(OPEN_MPI)
const OmpiHandles kNoHandles{};  // what ompi_handles() gives before MPI is loaded
#endif

/** Resolves the object `name` as libmpi's own references see it (Note [Open MPI's handles are
 *  data symbols]): the global scope first, where an executable's copy wins; false with dlerror().
 */
bool resolve_object(void* lib, const char* name, void** out, std::string* why) {
  dlerror();
  void* sym = dlsym(RTLD_DEFAULT, name);
  if (!sym) sym = dlsym(lib, name);
  if (!sym) {
    *why = backends::last_dl_error(std::string(name) + ": symbol not found");
    return false;
  }
  *out = sym;
  return true;
}

}  // namespace

const char* mpi_library_name() {
  return kSoname;
}

const char* mpi_library_dir() {
  return kDir;
}

int32_t mpi_load(const char* soname, const char* dir, MpiApi* api, char* error, size_t cap) {
  // The ABI has no status for "this backend cannot run here"; EMBER_ERR_PEER is the one the core
  // raises as a DistributedError, the kind it uses for a backend that is not usable.
  std::string why;
  // RTLD_GLOBAL: Note [Lazy MPI].
  void* lib = backends::open_library(soname, dir, RTLD_NOW | RTLD_GLOBAL, &why);
  if (!lib)
    return sdk::fail_into(error, cap, EMBER_ERR_PEER,
                          "[mpi] cannot open %s: %s (install the MPI this plugin was built "
                          "with, Debian: libopenmpi3, or add its directory to LD_LIBRARY_PATH)",
                          soname, why.c_str());
  MpiApi a{};
  bool ok = backends::resolve(lib, "MPI_Init_thread", &a.init_thread, &why) &&
            backends::resolve(lib, "MPI_Initialized", &a.initialized, &why) &&
            backends::resolve(lib, "MPI_Finalized", &a.finalized, &why) &&
            backends::resolve(lib, "MPI_Finalize", &a.finalize, &why) &&
            backends::resolve(lib, "MPI_Query_thread", &a.query_thread, &why) &&
            backends::resolve(lib, "MPI_Error_string", &a.error_string, &why) &&
            backends::resolve(lib, "MPI_Comm_set_errhandler", &a.comm_set_errhandler, &why) &&
            backends::resolve(lib, "MPI_Comm_rank", &a.comm_rank, &why) &&
            backends::resolve(lib, "MPI_Comm_size", &a.comm_size, &why) &&
            backends::resolve(lib, "MPI_Comm_idup", &a.comm_idup, &why) &&
            backends::resolve(lib, "MPI_Comm_get_attr", &a.comm_get_attr, &why) &&
            backends::resolve(lib, "MPI_Comm_free", &a.comm_free, &why) &&
            backends::resolve(lib, "MPI_Type_contiguous", &a.type_contiguous, &why) &&
            backends::resolve(lib, "MPI_Type_commit", &a.type_commit, &why) &&
            backends::resolve(lib, "MPI_Op_create", &a.op_create, &why) &&
            backends::resolve(lib, "MPI_Test", &a.test, &why) &&
            backends::resolve(lib, "MPI_Cancel", &a.cancel, &why) &&
            backends::resolve(lib, "MPI_Get_count", &a.get_count, &why) &&
            backends::resolve(lib, "MPI_Iallreduce", &a.iallreduce, &why) &&
            backends::resolve(lib, "MPI_Ibcast", &a.ibcast, &why) &&
            backends::resolve(lib, "MPI_Iallgather", &a.iallgather, &why) &&
            backends::resolve(lib, "MPI_Ireduce_scatter_block", &a.ireduce_scatter_block, &why) &&
            backends::resolve(lib, "MPI_Ialltoall", &a.ialltoall, &why) &&
            backends::resolve(lib, "MPI_Ibarrier", &a.ibarrier, &why) &&
            backends::resolve(lib, "MPI_Isend", &a.isend, &why) &&
            backends::resolve(lib, "MPI_Irecv", &a.irecv, &why);
#if defined(OPEN_MPI)
#define EMBER_OMPI_RESOLVE(symbol) ok = ok && resolve_object(lib, #symbol, &a.handles.symbol, &why);
  EMBER_OMPI_HANDLES(EMBER_OMPI_RESOLVE)
#undef EMBER_OMPI_RESOLVE
#endif
  if (!ok) {
    dlclose(lib);
    return sdk::fail_into(error, cap, EMBER_ERR_PEER,
                          "[mpi] %s is not the MPI this plugin was built with: %s (build the "
                          "plugin against the MPI installed here)",
                          soname, why.c_str());
  }
  *api = a;
  return EMBER_OK;
}

int32_t mpi_api(const MpiApi** out, char* error, size_t cap) {
  return g_mpi.get(out, error, cap);
}

const MpiApi* mpi_api_if_loaded() {
  return g_mpi.if_loaded();
}

#if defined(OPEN_MPI)
const OmpiHandles& ompi_handles() {
  const MpiApi* api = mpi_api_if_loaded();
  return api ? api->handles : kNoHandles;
}
#endif

}  // namespace ember::mpi_backend
