// CUDA matmul: every floating dtype through cuBLAS' strided-batched GEMM (libcublas loaded on
// first use, Note [Lazy cuBLAS]), reading operands in place where their strides allow
// (Note [Row-major matmul on cuBLAS]) and packing them into contiguous scratch memory
// otherwise. TF32 is off unless the option matmul.allow_tf32 (or EMBER_CUDA_ALLOW_TF32=1) is on.
//
// Note [Half matmul accumulates in float32]
// float16 and bfloat16 operands and results use CUBLAS_COMPUTE_32F (float alpha and beta):
// products are summed in float32 and rounded to the half type once, as the CPU plugin does,
// and the handle forbids reduced-precision reductions
// (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION, set in device.cpp), so split-K partial
// sums are not rounded to the half type either.
#include <cublas_v2.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <mutex>

#include "backends/cuda/device.h"
#include "backends/cuda/ops/ops.h"
#include "backends/cuda/options.h"
#include "backends/cuda/stream.h"
#include "ember/plugin_sdk.hpp"

namespace ember::cuda {
namespace {

// Batch dims merged as in the CPU plugin (the SDK's MatmulGeometry).
using Geometry = sdk::MatmulGeometry;
inline Geometry make_geometry(const ember_tensor& a, const ember_tensor& b, const ember_tensor& c) {
  return sdk::matmul_geometry(a, b, c);
}

// Note [Row-major matmul on cuBLAS]
// cuBLAS is column-major. A row-major C [M, N] is the column-major C^T [N, M], and
// C^T = B^T A^T, so cuBLAS computes with B as its first operand and A as its second. A
// row-major operand X [r, c] with strides (sr, sc) is, as cuBLAS sees X^T:
//  - sc == 1, sr >= c: a column-major c x r matrix with ld sr        -> CUBLAS_OP_N;
//  - sr == 1, sc >= r: a column-major r x c matrix with ld sc (X)    -> CUBLAS_OP_T.
// Size-1 dims may have any stride. Anything else (a step in both dims, an expanded matrix) is
// packed into contiguous scratch memory first. Batch dims become one cuBLAS batch stride per
// operand (0 where broadcast); more than one batch dim after merging loops over the outer ones.
// Bytes per element of the floating dtypes matmul takes.
size_t item_size(int32_t dtype) {
  return dtype == EMBER_F64 ? 8 : (dtype == EMBER_F32 ? 4 : 2);
}

// cuBLAS' data type of a floating dtype.
cudaDataType_t data_type(int32_t dtype) {
  switch (dtype) {
    case EMBER_F64:
      return CUDA_R_64F;
    case EMBER_F16:
      return CUDA_R_16F;
    case EMBER_BF16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

struct Operand {
  cublasOperation_t op;
  int64_t ld;
  bool pack = false;
};

Operand describe(int64_t r, int64_t c, int64_t sr, int64_t sc) {
  if ((c == 1 || sc == 1) && (r == 1 || sr >= c))
    return {CUBLAS_OP_N, r == 1 ? std::max<int64_t>(c, 1) : sr};
  if ((r == 1 || sr == 1) && (c == 1 || sc >= r))
    return {CUBLAS_OP_T, c == 1 ? std::max<int64_t>(r, 1) : sc};
  return {CUBLAS_OP_N, c, true};
}

// Packs operand X (batch dims of g with strides bs, then [r, c] with strides sr, sc) into a
// contiguous [batch..., r, c] buffer and rewrites the strides to match.
Status pack(const ember_tensor& x, const Geometry& g, int64_t* bs, int64_t r, int64_t c,
            int64_t* sr, int64_t* sc, cudaStream_t stream, DeviceBuffer* buf, void** data) {
  const int nd = g.nb + 2;
  constexpr int kMaxDims = sdk::MatmulGeometry::kMaxDims;
  int64_t sizes[kMaxDims + 2], src_strides[kMaxDims + 2], dst_strides[kMaxDims + 2];
  for (int d = 0; d < g.nb; ++d) {
    sizes[d] = g.batch[d];
    src_strides[d] = bs[d];
  }
  sizes[g.nb] = r;
  sizes[g.nb + 1] = c;
  src_strides[g.nb] = *sr;
  src_strides[g.nb + 1] = *sc;
  int64_t s = 1;
  for (int d = nd - 1; d >= 0; --d) {
    dst_strides[d] = s;
    s *= sizes[d];
  }
  const size_t item = item_size(x.dtype);
  EMBER_CUDA_RETURN_IF_ERROR(buf->allocate(x.device_index, static_cast<size_t>(s) * item, stream));
  const ember_tensor src{x.data, x.dtype, nd, sizes, src_strides, x.device_type, x.device_index};
  const ember_tensor dst{buf->get(),    x.dtype,       nd, sizes, dst_strides,
                         x.device_type, x.device_index};
  EMBER_CUDA_RETURN_IF_ERROR(launch_copy(dst, src, stream));
  for (int d = 0; d < g.nb; ++d) bs[d] = dst_strides[d];
  *sr = c;
  *sc = 1;
  *data = buf->get();
  return {};
}

Status matmul_impl(const ember_kernel_call* call) {
  const ember_tensor& a = call->inputs[0];
  const ember_tensor& b = call->inputs[1];
  const ember_tensor& c = call->outputs[0];
  if (c.ndim < 2 || c.ndim > sdk::MatmulGeometry::kMaxDims || a.ndim != c.ndim ||
      b.ndim != c.ndim) {
    return status_error(EMBER_ERR_INVALID, "[cuda] matmul: operands of rank %d, %d and %d", a.ndim,
                        b.ndim, c.ndim);
  }
  const bool floating =
      c.dtype == EMBER_F32 || c.dtype == EMBER_F64 || c.dtype == EMBER_F16 || c.dtype == EMBER_BF16;
  if (a.dtype != c.dtype || b.dtype != c.dtype || c.dtype == EMBER_BOOL) {
    return status_error(EMBER_ERR_UNSUPPORTED, "[cuda] matmul: dtypes %d, %d -> %d", a.dtype,
                        b.dtype, c.dtype);
  }
  if (!floating) {  // Note [Integer matmul on the GPU]
    cudaStream_t stream = nullptr;
    EMBER_CUDA_RETURN_IF_ERROR(set_device(c.device_index));
    EMBER_CUDA_RETURN_IF_ERROR(kernel_stream(call, c.device_index, &stream));
    return launch_integer_matmul(a, b, c, stream);
  }
  int64_t numel = 1;
  for (int d = 0; d < c.ndim; ++d) numel *= c.sizes[d];
  if (numel == 0) return {};
  int64_t expected = 1;  // C must be dense row-major
  for (int d = c.ndim - 1; d >= 0; --d) {
    if (c.sizes[d] != 1 && c.strides[d] != expected) {
      return status_error(EMBER_ERR_UNSUPPORTED, "[cuda] matmul: output is not contiguous");
    }
    expected *= c.sizes[d];
  }
  const int index = c.device_index;
  EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(kernel_stream(call, index, &stream));
  Geometry g = make_geometry(a, b, c);
  if (g.k == 0) {  // the core zeroes C itself, but stay correct if called anyway
    EMBER_CUDA_CHECK(
        cudaMemsetAsync(c.data, 0, static_cast<size_t>(numel) * item_size(c.dtype), stream));
    return {};
  }
  if (g.m > INT_MAX || g.n > INT_MAX || g.k > INT_MAX || g.batch_count > INT_MAX) {
    return status_error(EMBER_ERR_UNSUPPORTED, "[cuda] matmul: dims beyond 32-bit cuBLAS sizes");
  }
  Operand oa = describe(g.m, g.k, g.am, g.ak);
  Operand ob = describe(g.k, g.n, g.bk, g.bn);
  void* pa = a.data;
  void* pb = b.data;
  DeviceBuffer bufa, bufb;
  if (oa.pack) {
    EMBER_CUDA_RETURN_IF_ERROR(pack(a, g, g.sa, g.m, g.k, &g.am, &g.ak, stream, &bufa, &pa));
    oa = describe(g.m, g.k, g.am, g.ak);
  }
  if (ob.pack) {
    EMBER_CUDA_RETURN_IF_ERROR(pack(b, g, g.sb, g.k, g.n, &g.bk, &g.bn, stream, &bufb, &pb));
    ob = describe(g.k, g.n, g.bk, g.bn);
  }
  if (oa.ld > INT_MAX || ob.ld > INT_MAX) {
    return status_error(EMBER_ERR_UNSUPPORTED, "[cuda] matmul: leading dimension beyond 32 bits");
  }

  cublasHandle_t handle = nullptr;
  const CublasApi* blas = nullptr;
  std::unique_lock<std::mutex> lock;
  EMBER_CUDA_RETURN_IF_ERROR(cublas_handle(index, stream, "matmul", &blas, &handle, &lock));
  const bool f64 = c.dtype == EMBER_F64;
  const size_t item = item_size(c.dtype);
  const cudaDataType_t type = data_type(c.dtype);  // Note [Half matmul accumulates in float32]
  // Note [TF32 is off by default] (device.cpp)
  const bool tf32 =
      c.dtype == EMBER_F32 && options().matmul_allow_tf32.load(std::memory_order_relaxed);
  const cublasComputeType_t compute = f64    ? CUBLAS_COMPUTE_64F
                                      : tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                             : CUBLAS_COMPUTE_32F;
  const double one64 = 1.0, zero64 = 0.0;
  const float one32 = 1.0f, zero32 = 0.0f;
  const void* alpha = f64 ? static_cast<const void*>(&one64) : &one32;
  const void* beta = f64 ? static_cast<const void*>(&zero64) : &zero32;

  // The innermost batch dim is cuBLAS' batch; outer ones (rare after merging) loop here.
  const int inner = g.nb - 1;
  const int64_t count = g.nb > 0 ? g.batch[inner] : 1;
  const int64_t stride_a = g.nb > 0 ? g.sa[inner] : 0, stride_b = g.nb > 0 ? g.sb[inner] : 0,
                stride_c = g.nb > 0 ? g.sc[inner] : g.m * g.n;
  const int64_t outer = count > 0 ? g.batch_count / count : 0;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t off_a = 0, off_b = 0, off_c = 0, rest = o;
    for (int d = inner - 1; d >= 0; --d) {
      const int64_t i = rest % g.batch[d];
      rest /= g.batch[d];
      off_a += i * g.sa[d];
      off_b += i * g.sb[d];
      off_c += i * g.sc[d];
    }
    const char* A = static_cast<const char*>(pa) + off_a * static_cast<int64_t>(item);
    const char* B = static_cast<const char*>(pb) + off_b * static_cast<int64_t>(item);
    char* C = static_cast<char*>(c.data) + off_c * static_cast<int64_t>(item);
    note_launch("matmul");
    EMBER_CUBLAS_CHECK(blas->gemm_strided_batched_ex(
        handle, ob.op, oa.op, static_cast<int>(g.n), static_cast<int>(g.m), static_cast<int>(g.k),
        alpha, B, type, static_cast<int>(ob.ld), stride_b, A, type, static_cast<int>(oa.ld),
        stride_a, beta, C, type, static_cast<int>(g.n), stride_c, static_cast<int>(count), compute,
        CUBLAS_GEMM_DEFAULT));
  }
  return {};
}

}  // namespace

int32_t matmul(const ember_kernel_call* call) {
  return write_status(matmul_impl(call), call);
}

}  // namespace ember::cuda
