// CUDA index kernels on the core's contracts (core/ops/index.cpp): index_select, gather,
// scatter, scatter_add, any dtype, arbitrary strides, int64 indices. Every index is range-checked
// on the device as it is used, without a host synchronization: the first bad one is recorded
// with the op, the value and the size, and reported as EMBER_ERR_INDEX (an IndexError in the
// core) at the backend's next synchronization point (Note [Index errors reported at the next
// synchronization] in device_error.cpp).
#include <cstdint>
#include <type_traits>

#include "backends/cuda/device.h"
#include "backends/cuda/device_error.h"
#include "backends/cuda/ops/common.cuh"
#include "backends/cuda/ops/ops.h"

namespace ember::cuda {
namespace {

using namespace kern;  // NOLINT: the shared kernel helpers

constexpr int kMaxDims = 12;  // Note [Coalesced geometry] in elementwise.cu
static_assert(kMaxDims <= EMBER_MAX_DIMS);

// A shape with up to three operands' strides over it (elements).
struct Shape3 {
  int ndim = 0;
  int64_t n = 1;
  int64_t sizes[kMaxDims];
  int64_t s[3][kMaxDims];
};

// ---- index checks ------------------------------------------------------------------------------

// Note [Index errors reported at the next synchronization] (device_error.cpp): every kernel below
// checks each index it uses; a bad one is recorded in the device's error log and its element is
// skipped, and the host learns of it at its next wait for the device.

// The index tensor's metadata, checked on the host (values are checked on the device).
Status check_index_tensor(const ember_tensor& index, const char* name) {
  if (index.dtype != EMBER_I64) {
    return status_error(EMBER_ERR_INVALID, "[%s] index must be int64: got dtype %d", name,
                        index.dtype);
  }
  if (index.ndim > kMaxDims) {
    return status_error(EMBER_ERR_UNSUPPORTED, "[%s] at most %d dims: got %d", name, kMaxDims,
                        index.ndim);
  }
  return {};
}

// The slot the op's kernel reports a bad index into.
Status error_slot(int device, cudaStream_t stream, DeviceErrorOp op, DeviceErrorSlot* out) {
  DeviceErrorLog* log = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(device_error_log(device, stream, &log));
  *out = log->slot(op);
  return {};
}

// Calls fn(Tag<U>{}) with an unsigned type of `bytes` bytes (moves only, any dtype).
template <typename Fn>
bool visit_size(size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 1:
      fn(Tag<uint8_t>{});
      return true;
    case 2:
      fn(Tag<uint16_t>{});
      return true;
    case 4:
      fn(Tag<uint32_t>{});
      return true;
    case 8:
      fn(Tag<uint64_t>{});
      return true;
    default:
      return false;
  }
}

// ---- index_select / gather --------------------------------------------------------------------

// Over y's shape: i = index[coords . s[2]]; y[coords . s[0]] = x[coords . s[1] (dim excluded)
// + i * x_dim_stride], or 0 where i is outside [0, limit) (reported through `err`).
template <typename U>
__global__ void gather_kernel(Shape3 g, int dim, int64_t x_dim_stride, int64_t limit, U* y,
                              const U* x, const int64_t* index, DeviceErrorSlot err) {
  EMBER_GRID_STRIDE_LOOP(i, g.n) {
    int64_t rem = i, oy = 0, ox = 0, oi = 0;
    for (int d = g.ndim - 1; d >= 0; --d) {
      const int64_t c = rem % g.sizes[d];
      rem /= g.sizes[d];
      oy += c * g.s[0][d];
      if (d != dim) ox += c * g.s[1][d];
      oi += c * g.s[2][d];
    }
    const int64_t v = index[oi];
    if (v < 0 || v >= limit) {
      report_index_error(err, v, dim, limit);
      y[oy] = U(0);
      continue;
    }
    y[oy] = x[ox + v * x_dim_stride];
  }
}

// index_select (`select`) or gather along `dim`.
Status gather_impl(const ember_kernel_call* call, int64_t dim, bool select, const char* name,
                   DeviceErrorOp op) {
  const ember_tensor &x = call->inputs[0], &index = call->inputs[1], &y = call->outputs[0];
  if (dim < 0 || dim >= x.ndim || y.ndim != x.ndim || x.ndim > kMaxDims || y.dtype != x.dtype ||
      (select ? index.ndim != 1 : index.ndim != x.ndim)) {
    return status_error(EMBER_ERR_INVALID, "[cuda] %s: bad arguments (rank %d, dim %lld)", name,
                        x.ndim, static_cast<long long>(dim));
  }
  EMBER_CUDA_RETURN_IF_ERROR(check_index_tensor(index, name));
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(prepare(call, &stream));
  Shape3 g;
  g.ndim = y.ndim;
  for (int d = 0; d < y.ndim; ++d) {
    g.sizes[d] = y.sizes[d];
    g.n *= y.sizes[d];
    g.s[0][d] = y.strides[d];
    g.s[1][d] = x.strides[d];
    g.s[2][d] = select ? (d == dim ? index.strides[0] : 0) : index.strides[d];
  }
  if (g.n == 0) return {};
  DeviceErrorSlot err{};
  EMBER_CUDA_RETURN_IF_ERROR(error_slot(y.device_index, stream, op, &err));
  Status s = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d", name, x.dtype);
  visit_size(sdk::itemsize(x.dtype), [&](auto tag) {
    using U = typename decltype(tag)::type;
    s = launch(name, g.n, stream, gather_kernel<U>, g, static_cast<int>(dim), x.strides[dim],
               x.sizes[dim], static_cast<U*>(y.data), static_cast<const U*>(x.data),
               static_cast<const int64_t*>(index.data), err);
  });
  return s;
}

// ---- scatter / scatter_add --------------------------------------------------------------------

// Note [Scatter rows never collide] (as in the CPU plugin): a row is one position of every dim
// but `dim`; two rows write to y elements that differ outside `dim`, so one thread per row
// runs without atomics, and repeated indices inside a row are applied in order by that thread,
// exactly as on the CPU.
// An index outside [0, limit) is reported through `err` and its element skipped.
template <typename T, bool kAdd>
__global__ void scatter_kernel(Shape3 g, int dim, int64_t rows, int64_t limit, T* y, const T* src,
                               const int64_t* index, DeviceErrorSlot err) {
  const int64_t len = g.sizes[dim];
  EMBER_GRID_STRIDE_LOOP(r, rows) {
    int64_t rem = r, oy = 0, os = 0, oi = 0;
    for (int d = g.ndim - 1; d >= 0; --d) {
      if (d == dim) continue;
      const int64_t c = rem % g.sizes[d];
      rem /= g.sizes[d];
      oy += c * g.s[0][d];
      os += c * g.s[1][d];
      oi += c * g.s[2][d];
    }
    for (int64_t j = 0; j < len; ++j) {
      const int64_t at = index[oi + j * g.s[2][dim]];
      if (at < 0 || at >= limit) {
        report_index_error(err, at, dim, limit);
        continue;
      }
      T& dst = y[oy + at * g.s[0][dim]];
      const T v = src[os + j * g.s[1][dim]];
      if constexpr (!kAdd)
        dst = v;
      else if constexpr (std::is_same_v<T, bool>)
        dst = dst || v;
      else
        dst = narrow<T>(widen(dst) + widen(v));
    }
  }
}

// scatter or scatter_add (`kAdd`) along `dim`.
template <bool kAdd>
Status scatter_impl(const ember_kernel_call* call, int64_t dim, const char* name,
                    DeviceErrorOp op) {
  const ember_tensor &index = call->inputs[0], &src = call->inputs[1], &y = call->outputs[0];
  if (dim < 0 || dim >= y.ndim || index.ndim != y.ndim || src.ndim != y.ndim || y.ndim > kMaxDims ||
      src.dtype != y.dtype) {
    return status_error(EMBER_ERR_INVALID, "[cuda] %s: bad arguments (rank %d, dim %lld)", name,
                        y.ndim, static_cast<long long>(dim));
  }
  EMBER_CUDA_RETURN_IF_ERROR(check_index_tensor(index, name));
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(prepare(call, &stream));
  Shape3 g;
  g.ndim = index.ndim;
  for (int d = 0; d < index.ndim; ++d) {
    g.sizes[d] = index.sizes[d];
    g.n *= index.sizes[d];
    g.s[0][d] = y.strides[d];
    g.s[1][d] = src.strides[d];
    g.s[2][d] = index.strides[d];
  }
  if (g.n == 0) return {};
  const int64_t rows = g.n / index.sizes[dim];
  DeviceErrorSlot err{};
  EMBER_CUDA_RETURN_IF_ERROR(error_slot(y.device_index, stream, op, &err));
  Status s = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d", name, y.dtype);
  visit(y.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    s = launch(name, rows, stream, scatter_kernel<T, kAdd>, g, static_cast<int>(dim), rows,
               y.sizes[dim], static_cast<T*>(y.data), static_cast<const T*>(src.data),
               static_cast<const int64_t*>(index.data), err);
  });
  return s;
}

}  // namespace

int32_t index_select(const ember_kernel_call* call) {
  return write_status(gather_impl(call, sdk::attrs<attrs::index_select>(call).dim,
                                  /*select=*/true, "index_select", DeviceErrorOp::kIndexSelect),
                      call);
}
int32_t gather(const ember_kernel_call* call) {
  return write_status(gather_impl(call, sdk::attrs<attrs::gather>(call).dim, /*select=*/false,
                                  "gather", DeviceErrorOp::kGather),
                      call);
}
int32_t scatter(const ember_kernel_call* call) {
  return write_status(scatter_impl<false>(call, sdk::attrs<attrs::scatter>(call).dim, "scatter",
                                          DeviceErrorOp::kScatter),
                      call);
}
int32_t scatter_add(const ember_kernel_call* call) {
  return write_status(scatter_impl<true>(call, sdk::attrs<attrs::scatter_add>(call).dim,
                                         "scatter_add", DeviceErrorOp::kScatterAdd),
                      call);
}

}  // namespace ember::cuda
