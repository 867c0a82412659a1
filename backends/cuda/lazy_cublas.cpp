#include "backends/cuda/lazy_cublas.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>
#include <type_traits>

namespace ember::cuda {
namespace {

#define EMBER_CUBLAS_STR2(x) #x
#define EMBER_CUBLAS_STR(x) EMBER_CUBLAS_STR2(x)

// Note [Lazy cuBLAS]
// Linking libcublas makes the loader map libcublas.so.13 and libcublasLt.so.13 whenever the
// plugin loads: measured ~120 ms and ~150 MiB RSS, against ~2 ms for libcudnn.so.9 and
// ~0.5 ms for libcudart. On a host without a GPU, `ember plugins` took 160 ms / 221 MiB with
// the CUDA plugin present instead of ~5 ms / 9 MiB, and every CPU-only process paid the same.
// So libcublas is not DT_NEEDED: the first matmul on a device dlopens the soname of the
// toolkit's cuBLAS major (found through the plugin's RUNPATH, LD_LIBRARY_PATH or the loader
// cache) and resolves the handful of functions below. cudart and cuDNN stay DT_NEEDED: they
// are cheap, and a missing libcudnn keeps its clean "missing dependency" report at load time.
// The library is never dlclose'd (Note [Per-device state is never destroyed]).
constexpr const char* kLibrary = "libcublas.so." EMBER_CUBLAS_STR(CUBLAS_VER_MAJOR);

// The exported overload of cublasGemmStridedBatchedEx (the header adds an inline one taking a
// cudaDataType compute type); the static_cast fails to compile if the header's differs.
using GemmFn = decltype(CublasApi::gemm_strided_batched_ex);
// Unevaluated (decltype), so no reference to the symbol reaches the object file.
static_assert(std::is_same_v<decltype(static_cast<GemmFn>(&::cublasGemmStridedBatchedEx)), GemmFn>);

struct Loaded {
  std::once_flag once;
  CublasApi api{};
  bool ok = false;
  std::string error;  // dlerror() of the failed dlopen/dlsym
};

Loaded g_loaded;
std::atomic<const CublasApi*> g_ready{nullptr};  // set once the table is complete

template <typename Fn>
bool resolve(void* lib, const char* name, Fn* out, std::string* error) {
  dlerror();
  void* sym = dlsym(lib, name);
  if (!sym) {
    const char* e = dlerror();
    *error = e ? e : std::string(name) + ": symbol not found";
    return false;
  }
  *out = reinterpret_cast<Fn>(sym);
  return true;
}

void load() {
  void* lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    g_loaded.error = e ? e : std::string(kLibrary) + ": cannot open shared object file";
    return;
  }
  CublasApi& a = g_loaded.api;
  std::string& err = g_loaded.error;
  g_loaded.ok = resolve(lib, "cublasCreate_v2", &a.create, &err) &&
                resolve(lib, "cublasSetStream_v2", &a.set_stream, &err) &&
                resolve(lib, "cublasSetMathMode", &a.set_math_mode, &err) &&
                resolve(lib, "cublasGetStatusName", &a.status_name, &err) &&
                resolve(lib, "cublasGetStatusString", &a.status_string, &err) &&
                resolve(lib, "cublasGemmStridedBatchedEx", &a.gemm_strided_batched_ex, &err);
  if (g_loaded.ok) g_ready.store(&a, std::memory_order_release);
}

}  // namespace

const char* cublas_library_name() {
  return kLibrary;
}

Status cublas_api(const char* op, const CublasApi** out) {
  std::call_once(g_loaded.once, load);
  if (!g_loaded.ok) {
    return status_error(EMBER_ERR_UNSUPPORTED,
                        "[%s] cuBLAS unavailable: %s (install libcublas from CUDA %d, which "
                        "provides %s, or add its directory to LD_LIBRARY_PATH)",
                        op, g_loaded.error.c_str(), CUBLAS_VER_MAJOR, kLibrary);
  }
  *out = &g_loaded.api;
  return {};
}

const CublasApi* cublas_api_if_loaded() {
  return g_ready.load(std::memory_order_acquire);
}

}  // namespace ember::cuda
