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

Status cudnn_failure(cudnnStatus_t err, const char* expr, const char* file, int line) {
  return status_error(EMBER_ERR_DEVICE, "[cuda] %s failed: %s (%s:%d)", call_name(expr).c_str(),
                      cudnnGetErrorString(err), base_name(file), line);
}

int32_t write_status(const Status& s, char* buf, size_t cap) {
  if (!s.ok() && buf && cap > 0) std::snprintf(buf, cap, "%s", s.message.c_str());
  return s.code;
}

}  // namespace ember::cuda
