// cuBLAS loaded on first use (Note [Lazy cuBLAS]): the plugin does not link libcublas; the
// few entry points it calls are resolved with dlsym into a table the first time a cuBLAS
// handle is needed.
#pragma once

#include <cublas_v2.h>

#include "backends/cuda/check.h"

namespace ember::cuda {

/** The cuBLAS entry points the plugin calls, resolved from libcublas at run time. */
struct CublasApi {
  decltype(&::cublasCreate_v2) create;
  decltype(&::cublasSetStream_v2) set_stream;
  decltype(&::cublasSetMathMode) set_math_mode;
  decltype(&::cublasGetStatusName) status_name;
  decltype(&::cublasGetStatusString) status_string;
  /** cublasGemmStridedBatchedEx with a cublasComputeType_t (the exported overload). */
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                            int, int, int, const void*, const void*, cudaDataType,
                                            int, long long int, const void*, cudaDataType, int,
                                            long long int, const void*, void*, cudaDataType, int,
                                            long long int, int, cublasComputeType_t,
                                            cublasGemmAlgo_t);
};

/** The library file dlopen'ed: the soname of the toolkit's cuBLAS major ("libcublas.so.13"). */
const char* cublas_library_name();

/** Loads cuBLAS once (thread-safe) and sets `*out`; on failure a Status
 * "[<op>] cuBLAS unavailable: <dlerror> (install ...)" and `*out` stays untouched. */
Status cublas_api(const char* op, const CublasApi** out);

/** The table if cuBLAS was already loaded successfully, else nullptr; never loads it. */
const CublasApi* cublas_api_if_loaded();

}  // namespace ember::cuda
