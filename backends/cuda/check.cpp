#include "backends/cuda/check.h"

#include "backends/cuda/lazy_cublas.h"

#include <cstdarg>
#include <cstring>

namespace ember::cuda {
namespace {

// "cudaMemcpyAsync(dst, src, ...)" -> "cudaMemcpyAsync"; "/a/b/copy.cu" -> "copy.cu".
std::string call_name(const char* expr) {
  const char* paren = std::strchr(expr, '(');
  return paren ? std::string(expr, paren) : std::string(expr);
}
const char* base_name(const char* file) {
  const char* slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}

}  // namespace

Status status_error(int32_t code, const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  return {code, buf};
}

Status cuda_failure(cudaError_t err, const char* expr, const char* file, int line) {
  const int32_t code =
      err == cudaErrorMemoryAllocation ? EMBER_ERR_OUT_OF_MEMORY : EMBER_ERR_DEVICE;
  return status_error(code, "[cuda] %s failed: %s (%s) (%s:%d)", call_name(expr).c_str(),
                      cudaGetErrorString(err), cudaGetErrorName(err), base_name(file), line);
}

Status cublas_failure(cublasStatus_t err, const char* expr, const char* file, int line) {
  const int32_t code =
      err == CUBLAS_STATUS_ALLOC_FAILED ? EMBER_ERR_OUT_OF_MEMORY : EMBER_ERR_DEVICE;
  // A cuBLAS status can only come from a loaded cuBLAS (Note [Lazy cuBLAS]); the numeric
  // fallback keeps this safe anyway.
  const CublasApi* api = cublas_api_if_loaded();
  char number[32];
  std::snprintf(number, sizeof(number), "cublasStatus_t %d", static_cast<int>(err));
  return status_error(code, "[cuda] %s failed: %s (%s) (%s:%d)", call_name(expr).c_str(),
                      api ? api->status_string(err) : "cuBLAS error",
                      api ? api->status_name(err) : number, base_name(file), line);
}

// Note [Which cuDNN answers decline]
// A cuDNN path declines to the own kernel (Note [cuDNN where own kernels exist too]) only when
// cuDNN says it does not support this case: CUDNN_STATUS_NOT_SUPPORTED, and those of its 3xxx
// sub-codes that describe the case (graph pattern, shape, data type, layout, shared memory,
// padding, launch parameters, CUDA graphs, dynamic shapes, a feature this GPU lacks). Every
// other answer is an error carrying cuDNN's own message (cudnn_failure): a BAD_PARAM (2xxx)
// means Ember described the call wrongly, and the 3xxx sub-codes of a broken installation
// (INCOMPATIBLE_CUDA_DRIVER, INCOMPATIBLE_CUDART, RUNTIME_PREREQUISITE_MISSING,
// SUBLIBRARY_UNAVAILABLE) would otherwise turn a missing library into silent fallbacks on every
// call. Shapes cuDNN cannot describe at all (sizes beyond its int descriptors, empty tensors,
// windows it rejects) are therefore checked by the plans (ops/cudnn_plan.cpp) before cuDNN is
// asked, and declined with a reason of their own; convolutions split the batch instead
// (plan_conv_batch_split).
bool declined_by_cudnn(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_NOT_SUPPORTED:
    case CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN:
    case CUDNN_STATUS_NOT_SUPPORTED_SHAPE:
    case CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE:
    case CUDNN_STATUS_NOT_SUPPORTED_LAYOUT:
    case CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH:
    case CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT:
    case CUDNN_STATUS_NOT_SUPPORTED_PADDING:
    case CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM:
    case CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API:
    case CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE:
      return true;
    default:
      return false;
  }
}

Status cudnn_failure(cudnnStatus_t err, const char* expr, const char* file, int line) {
  // cuDNN 9 keeps a message per thread on what the last failing call disliked, often the only
  // clue for a BAD_PARAM or an installation problem (Note [Which cuDNN answers decline]).
  char detail[256] = {0};
#if CUDNN_MAJOR >= 9
  cudnnGetLastErrorString(detail, sizeof(detail));
#endif
  int32_t code = EMBER_ERR_DEVICE;
  if (err == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    code = EMBER_ERR_OUT_OF_MEMORY;
  } else if (declined_by_cudnn(err)) {
    code = EMBER_ERR_UNSUPPORTED;
  }
  return status_error(code, "[cuda] %s failed: %s%s%s (%s:%d)", call_name(expr).c_str(),
                      cudnnGetErrorString(err), detail[0] ? "; cuDNN: " : "", detail,
                      base_name(file), line);
}

int32_t write_status(const Status& s, char* buf, size_t cap) {
  if (!s.ok() && buf && cap > 0) std::snprintf(buf, cap, "%s", s.message.c_str());
  return s.code;
}

}  // namespace ember::cuda
