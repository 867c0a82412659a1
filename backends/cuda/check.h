// Status values and the EMBER_CUDA_CHECK / EMBER_CUBLAS_CHECK / EMBER_CUDNN_CHECK macros: a
// failing vendor call becomes a Status naming the call, the vendor's message and file:line,
// and the enclosing function returns it. Nothing throws; the ABI edge turns a Status into a
// status code plus message (write_status).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdio>
#include <string>

#include "ember/plugin_abi.h"

namespace ember::cuda {

/** The outcome of a plugin-internal call: an ember_status code and, on failure, a message. */
struct Status {
  int32_t code = EMBER_OK;
  std::string message;
  /** True on success. */
  bool ok() const { return code == EMBER_OK; }
};

/** A failed Status with a printf-formatted message. */
Status status_error(int32_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/** The Status of a failed CUDA runtime call `expr` at file:line. */
Status cuda_failure(cudaError_t err, const char* expr, const char* file, int line);
/** The Status of a failed cuBLAS call `expr` at file:line. */
Status cublas_failure(cublasStatus_t err, const char* expr, const char* file, int line);
/** The Status of a failed cuDNN call `expr` at file:line, with cuDNN's message for it:
 * EMBER_ERR_UNSUPPORTED when cuDNN declines the case (declined_by_cudnn), out of memory for a
 * failed device allocation, EMBER_ERR_DEVICE otherwise. */
Status cudnn_failure(cudnnStatus_t err, const char* expr, const char* file, int line);
/** True for cuDNN's "not this case" answers: NOT_SUPPORTED and its sub-codes that describe the
 * case (shape, data type, layout, padding, ...), not those of a broken installation (Note
 * [Which cuDNN answers decline] in check.cpp). */
bool declined_by_cudnn(cudnnStatus_t status);

/** Copies a Status' message into a caller buffer and returns its code. */
int32_t write_status(const Status& s, char* buf, size_t cap);
/** Same for a kernel call's error buffer. */
inline int32_t write_status(const Status& s, const ember_kernel_call* call) {
  return write_status(s, call->error, call->error_capacity);
}

}  // namespace ember::cuda

/** Returns a Status from the enclosing function if a CUDA runtime call fails. */
#define EMBER_CUDA_CHECK(expr)                                                        \
  do {                                                                                \
    const cudaError_t ember_cuda_err_ = (expr);                                       \
    if (ember_cuda_err_ != cudaSuccess) {                                             \
      return ::ember::cuda::cuda_failure(ember_cuda_err_, #expr, __FILE__, __LINE__); \
    }                                                                                 \
  } while (0)

/** Returns a Status from the enclosing function if a cuBLAS call fails. */
#define EMBER_CUBLAS_CHECK(expr)                                                          \
  do {                                                                                    \
    const cublasStatus_t ember_cublas_err_ = (expr);                                      \
    if (ember_cublas_err_ != CUBLAS_STATUS_SUCCESS) {                                     \
      return ::ember::cuda::cublas_failure(ember_cublas_err_, #expr, __FILE__, __LINE__); \
    }                                                                                     \
  } while (0)

/** Returns a Status from the enclosing function if a cuDNN call fails. */
#define EMBER_CUDNN_CHECK(expr)                                                         \
  do {                                                                                  \
    const cudnnStatus_t ember_cudnn_err_ = (expr);                                      \
    if (ember_cudnn_err_ != CUDNN_STATUS_SUCCESS) {                                     \
      return ::ember::cuda::cudnn_failure(ember_cudnn_err_, #expr, __FILE__, __LINE__); \
    }                                                                                   \
  } while (0)

/** Returns from the enclosing function if a Status-returning call fails. */
#define EMBER_CUDA_RETURN_IF_ERROR(expr)           \
  do {                                             \
    ::ember::cuda::Status ember_status_ = (expr);  \
    if (!ember_status_.ok()) return ember_status_; \
  } while (0)
