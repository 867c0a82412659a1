// CUDA ordering and counting kernels (contracts in core/ops/index.cpp), computing as the CPU
// plugin's (backends/cpu/ops/sort.cpp, index.cpp):
//  - sort: stable along the last dim (the core passes a transposed view), NaN sorts as the
//    largest value (Note [NaN sorts as the largest value] in plugin_sdk_sort.hpp);
//  - topk: the first k of that stable order (ties to the earlier position); unsorted results
//    in position order;
//  - count_nonzero, and nonzero in two passes (the core sizes the output from count_nonzero;
//    here a prefix sum over the flags gives each non-zero element its output row).
//
// Note [Sorting through Thrust]
// Every row is sorted at once by one Thrust stable merge sort of flat positions p = row * n + j
// with a comparator ordering by row, then by value (NaN last, or first when descending);
// stability keeps equal values in position order, which is the CPU's std::stable_sort. x is
// packed contiguous first when its last dim is strided. Thrust's temporary memory comes from
// the caching allocator on the kernel's stream (ThrustAlloc) and the calls use par_nosync:
// nothing here waits for the device. Thrust reports failures by exceptions, which are caught
// here and returned as a Status that says what failed (device memory, with the allocator's
// message, or the device); the SDK's boundary around every kernel catches anything else.
#include <thrust/execution_policy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include <cstdint>
#include <exception>
#include <new>
#include <type_traits>

#include "backends/cuda/device.h"
#include "backends/cuda/ops/common.cuh"
#include "backends/cuda/ops/ops.h"
#include "ember/plugin_sdk.hpp"

namespace ember::cuda {
namespace {

using namespace kern;  // NOLINT: the shared kernel helpers

constexpr int kMaxDims = 16;  // Note [Coalesced geometry] in elementwise.cu
static_assert(kMaxDims <= EMBER_MAX_DIMS);

// Thrust's temporary storage from the device's caching allocator, on `stream`.
struct ThrustAlloc {
  using value_type = char;
  int index;
  cudaStream_t stream;
  char* allocate(std::ptrdiff_t n) {
    void* p = device_allocator(index).allocate(static_cast<size_t>(n), stream);
    if (!p && n > 0) throw std::bad_alloc();
    return static_cast<char*>(p);
  }
  void deallocate(char* p, size_t) { device_allocator(index).free(p); }
};

template <typename A>
__host__ __device__ __forceinline__ bool nan_of(A v) {
  if constexpr (std::is_floating_point_v<A>)
    return v != v;
  else
    return false;
}

// The CPU's less / greater with NaN as the largest value.
template <typename A>
__host__ __device__ __forceinline__ bool less_nan(A a, A b) {
  return !nan_of(a) && (nan_of(b) || a < b);
}

template <typename T>
struct RowValueLess {
  const T* v;
  int64_t n;
  bool descending;
  __host__ __device__ bool operator()(int64_t a, int64_t b) const {
    const int64_t ra = a / n, rb = b / n;
    if (ra != rb) return ra < rb;
    const auto va = widen(v[a]), vb = widen(v[b]);
    return descending ? less_nan(vb, va) : less_nan(va, vb);
  }
};

// Note [One sort for every dtype]
// thrust's merge sort is a large template: instantiated per element type, it made this file the
// slowest of the whole build (minutes per dtype). The comparator below reads the element type
// at run time instead, so stable_sort is instantiated once; the switch is the same for every
// thread of a launch and costs nothing next to the memory traffic of the sort.
// f.template as<T>(args...) for the element type T of `dtype`, on the host or the device.
template <typename F, typename... Args>
__host__ __device__ __forceinline__ auto by_dtype(int32_t dtype, const F& f, Args... args) {
  switch (dtype) {
    case EMBER_F32:
      return f.template as<float>(args...);
    case EMBER_F64:
      return f.template as<double>(args...);
    case EMBER_F16:
      return f.template as<__half>(args...);
    case EMBER_BF16:
      return f.template as<__nv_bfloat16>(args...);
    case EMBER_I64:
      return f.template as<int64_t>(args...);
    case EMBER_I32:
      return f.template as<int32_t>(args...);
    case EMBER_I8:
      return f.template as<int8_t>(args...);
    case EMBER_U8:
      return f.template as<uint8_t>(args...);
    default:
      return f.template as<bool>(args...);
  }
}

struct AnyRowValueLess {
  const void* v;
  int32_t dtype;
  int64_t n;
  bool descending;
  template <typename T>
  __host__ __device__ bool as(int64_t a, int64_t b) const {
    return RowValueLess<T>{static_cast<const T*>(v), n, descending}(a, b);
  }
  __host__ __device__ bool operator()(int64_t a, int64_t b) const {
    return by_dtype(dtype, *this, a, b);
  }
};

// values[o] = packed[p], indices[o] = p - row * n for p = sel[row * sel_stride + t],
// o = row * m + t.
template <typename T>
__global__ void ordering_write_kernel(const T* packed, const int64_t* sel, int64_t sel_stride,
                                      int64_t rows, int64_t n, int64_t m, T* values,
                                      int64_t* indices) {
  EMBER_GRID_STRIDE_LOOP(o, rows * m) {
    const int64_t r = o / m, t = o % m;
    const int64_t p = sel[r * sel_stride + t];
    values[o] = packed[p];
    indices[o] = p - r * n;
  }
}

// Positions r * n + t of the first k entries of each sorted row, for a position-order pass.
__global__ void take_first_kernel(const int64_t* pos, int64_t rows, int64_t n, int64_t k,
                                  int64_t* out) {
  EMBER_GRID_STRIDE_LOOP(o, rows * k) {
    out[o] = pos[(o / k) * n + o % k];
  }
}

size_t item_size(int32_t dtype) {
  size_t s = 0;
  visit(dtype, [&](auto tag) { s = sizeof(typename decltype(tag)::type); });
  return s;
}

// The order sort and topk ask for.
struct Order {
  bool topk;            // only the first k of each sorted row (sort: all of it)
  int64_t k;            // topk's k
  bool descending;      // sort's descending, topk's largest
  bool position_order;  // topk with sorted false: the k in position order
};

// sort and topk.
Status ordering_impl(const ember_kernel_call* call, const Order& order, const char* name) {
  if (call->num_inputs != 1 || call->num_outputs != 2) {
    return status_error(EMBER_ERR_INVALID, "[cuda] %s: bad arguments", name);
  }
  const ember_tensor &x = call->inputs[0], &values = call->outputs[0], &indices = call->outputs[1];
  if (x.ndim < 1 || x.ndim > EMBER_MAX_DIMS || values.ndim != x.ndim || indices.ndim != x.ndim) {
    return status_error(EMBER_ERR_INVALID,
                        "[cuda] %s: expected inputs and outputs of one ndim >= 1", name);
  }
  if (indices.dtype != EMBER_I64 || values.dtype != x.dtype) {
    return status_error(EMBER_ERR_INVALID, "[cuda] %s: indices must be int64", name);
  }
  if (!sdk::is_contiguous(values) || !sdk::is_contiguous(indices)) {
    return status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: outputs must be contiguous", name);
  }
  const int64_t n = x.sizes[x.ndim - 1];
  const int64_t total = numel(x);
  const int64_t rows = n == 0 ? 0 : total / n;
  const int64_t k = order.topk ? order.k : n;
  const bool descending = order.descending, position_order = order.position_order;
  if (k < 0 || k > n) {
    return status_error(EMBER_ERR_INVALID,
                        "[cuda] %s: k %lld is out of range for a dim of size %lld", name,
                        static_cast<long long>(k), static_cast<long long>(n));
  }
  if (rows == 0 || k == 0) return {};
  const size_t item = item_size(x.dtype);
  if (item == 0)
    return status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: unknown dtype %d", name, x.dtype);
  const int index = values.device_index;
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(prepare(call, &stream));

  // x contiguous: packed in the same row-major layout.
  DeviceBuffer packed_buf, pos_buf, sel_buf;
  const void* packed = x.data;
  if (!sdk::is_contiguous(x)) {
    EMBER_CUDA_RETURN_IF_ERROR(
        packed_buf.allocate(index, static_cast<size_t>(total) * item, stream));
    int64_t strides[EMBER_MAX_DIMS];
    int64_t s = 1;
    for (int d = x.ndim - 1; d >= 0; --d) {
      strides[d] = s;
      s *= x.sizes[d];
    }
    ember_tensor dst = x;
    dst.data = packed_buf.get();
    dst.strides = strides;
    EMBER_CUDA_RETURN_IF_ERROR(launch_copy(dst, x, stream));
    packed = packed_buf.get();
  }
  EMBER_CUDA_RETURN_IF_ERROR(pos_buf.allocate(index, static_cast<size_t>(total) * 8, stream));
  int64_t* pos = static_cast<int64_t*>(pos_buf.get());
  Status st = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: unknown dtype %d", name, x.dtype);
  try {
    ThrustAlloc alloc{index, stream};
    auto policy = thrust::cuda::par_nosync(alloc).on(stream);
    thrust::sequence(policy, pos, pos + total);
    visit(x.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      thrust::stable_sort(policy, pos, pos + total,
                          AnyRowValueLess{packed, x.dtype, n, descending});
      st = launch_status(name);
      if (!st.ok()) return;
      const int64_t* sel = pos;
      int64_t sel_stride = n;
      if (position_order) {
        st = sel_buf.allocate(index, static_cast<size_t>(rows * k) * 8, stream);
        if (!st.ok()) return;
        int64_t* first = static_cast<int64_t*>(sel_buf.get());
        st = launch(name, rows * k, stream, take_first_kernel, pos, rows, n, k, first);
        if (!st.ok()) return;
        thrust::sort(policy, first, first + rows * k);  // row-major positions: rows stay apart
        sel = first;
        sel_stride = k;
      }
      st = launch(name, rows * k, stream, ordering_write_kernel<T>, static_cast<const T*>(packed),
                  sel, sel_stride, rows, n, k, static_cast<T*>(values.data),
                  static_cast<int64_t*>(indices.data));
    });
  } catch (const std::bad_alloc&) {
    return status_error(EMBER_ERR_OUT_OF_MEMORY, "[cuda] %s: %s", name,
                        device_allocator(index).last_error().c_str());
  } catch (const std::exception& e) {
    return status_error(EMBER_ERR_DEVICE, "[cuda] %s: %s", name, e.what());
  }
  return st;
}

// ---- count_nonzero, nonzero ---------------------------------------------------------------

struct Layout {
  int32_t ndim;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims];
};

Layout layout_of(const ember_tensor& t) {
  Layout l{};
  l.ndim = t.ndim;
  for (int d = 0; d < t.ndim; ++d) {
    l.sizes[d] = t.sizes[d];
    l.strides[d] = t.strides[d];
  }
  return l;
}

// Element offset of row-major linear index i.
__host__ __device__ __forceinline__ int64_t offset_of(const Layout& l, int64_t i) {
  int64_t off = 0;
  for (int d = l.ndim - 1; d >= 0; --d) {
    off += (i % l.sizes[d]) * l.strides[d];
    i /= l.sizes[d];
  }
  return off;
}

// The CPU's truthy: != 0 in the compute type (NaN counts).
template <typename T>
__host__ __device__ __forceinline__ bool truthy(T v) {
  return widen(v) != Acc<T>(0);
}

template <typename T>
struct NonzeroFlag {
  const T* x;
  Layout l;
  __host__ __device__ int64_t operator()(int64_t i) const {
    return truthy(x[offset_of(l, i)]) ? 1 : 0;
  }
};

// NonzeroFlag of any dtype: one scan instantiation (Note [One sort for every dtype]).
struct AnyNonzeroFlag {
  const void* x;
  int32_t dtype;
  Layout l;
  template <typename T>
  __host__ __device__ int64_t as(int64_t i) const {
    return NonzeroFlag<T>{static_cast<const T*>(x), l}(i);
  }
  __host__ __device__ int64_t operator()(int64_t i) const { return by_dtype(dtype, *this, i); }
};

template <typename T>
__global__ void count_kernel(const T* x, Layout l, int64_t n, unsigned long long* out) {
  unsigned long long c = 0;
  EMBER_GRID_STRIDE_LOOP(i, n) {
    c += truthy(x[offset_of(l, i)]) ? 1 : 0;
  }
  for (int off = 16; off > 0; off >>= 1) c += __shfl_down_sync(0xffffffffu, c, off);
  if ((threadIdx.x & 31) == 0 && c != 0) atomicAdd(out, c);
}

template <typename T>
__global__ void nonzero_write_kernel(const T* x, Layout l, int64_t n, const int64_t* row,
                                     int64_t rows, int64_t* out, int64_t os0, int64_t os1) {
  EMBER_GRID_STRIDE_LOOP(i, n) {
    if (!truthy(x[offset_of(l, i)])) continue;
    const int64_t r = row[i];
    if (r >= rows) continue;  // the output is sized by count_nonzero; never write past it
    int64_t rest = i;
    for (int d = l.ndim - 1; d >= 0; --d) {
      out[r * os0 + d * os1] = rest % l.sizes[d];
      rest /= l.sizes[d];
    }
  }
}

Status count_nonzero_impl(const ember_kernel_call* call) {
  if (call->num_inputs != 1 || call->num_outputs != 1 || call->outputs[0].dtype != EMBER_I64) {
    return status_error(EMBER_ERR_INVALID, "[cuda] count_nonzero: bad arguments");
  }
  const ember_tensor &x = call->inputs[0], &out = call->outputs[0];
  if (x.ndim > kMaxDims) {
    return status_error(EMBER_ERR_UNSUPPORTED, "[cuda] count_nonzero: at most %d dims: got %d",
                        kMaxDims, x.ndim);
  }
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(prepare(call, &stream));
  EMBER_CUDA_CHECK(cudaMemsetAsync(out.data, 0, sizeof(int64_t), stream));
  const int64_t n = numel(x);
  const Layout l = layout_of(x);
  Status st =
      status_error(EMBER_ERR_UNSUPPORTED, "[cuda] count_nonzero: unknown dtype %d", x.dtype);
  visit(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    st = launch("count_nonzero", n, stream, count_kernel<T>, static_cast<const T*>(x.data), l, n,
                static_cast<unsigned long long*>(out.data));
  });
  return st;
}

Status nonzero_impl(const ember_kernel_call* call) {
  if (call->num_inputs != 1 || call->num_outputs != 1 || call->outputs[0].dtype != EMBER_I64 ||
      call->outputs[0].ndim != 2) {
    return status_error(EMBER_ERR_INVALID, "[cuda] nonzero: bad arguments");
  }
  const ember_tensor &x = call->inputs[0], &out = call->outputs[0];
  if (x.ndim > kMaxDims) {
    return status_error(EMBER_ERR_UNSUPPORTED, "[cuda] nonzero: at most %d dims: got %d", kMaxDims,
                        x.ndim);
  }
  const int64_t n = numel(x), rows = out.sizes[0];
  if (n == 0 || rows == 0 || x.ndim == 0) return {};
  const int index = out.device_index;
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(prepare(call, &stream));
  DeviceBuffer row_buf;
  EMBER_CUDA_RETURN_IF_ERROR(row_buf.allocate(index, static_cast<size_t>(n) * 8, stream));
  int64_t* row = static_cast<int64_t*>(row_buf.get());
  const Layout l = layout_of(x);
  Status st = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] nonzero: unknown dtype %d", x.dtype);
  try {
    ThrustAlloc alloc{index, stream};
    auto policy = thrust::cuda::par_nosync(alloc).on(stream);
    visit(x.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = static_cast<const T*>(x.data);
      // Pass 1: each element's output row = the number of non-zero elements before it.
      auto flags = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0),
                                                   AnyNonzeroFlag{px, x.dtype, l});
      thrust::exclusive_scan(policy, flags, flags + n, row, int64_t{0});
      st = launch_status("nonzero");
      if (!st.ok()) return;
      // Pass 2: write the coordinates.
      st = launch("nonzero", n, stream, nonzero_write_kernel<T>, px, l, n, row, rows,
                  static_cast<int64_t*>(out.data), out.strides[0], out.strides[1]);
    });
  } catch (const std::bad_alloc&) {
    return status_error(EMBER_ERR_OUT_OF_MEMORY, "[cuda] nonzero: %s",
                        device_allocator(index).last_error().c_str());
  } catch (const std::exception& e) {
    return status_error(EMBER_ERR_DEVICE, "[cuda] nonzero: %s", e.what());
  }
  return st;
}

}  // namespace

int32_t sort(const ember_kernel_call* call) {
  const auto a = sdk::attrs<attrs::sort>(call);
  return write_status(ordering_impl(call, Order{false, 0, a.descending != 0, false}, "sort"), call);
}
int32_t topk(const ember_kernel_call* call) {
  const auto a = sdk::attrs<attrs::topk>(call);
  // k is range-checked against the dim (an argument, not an index value: EMBER_ERR_INVALID).
  return write_status(ordering_impl(call, Order{true, a.k, a.largest != 0, a.sorted == 0}, "topk"),
                      call);
}
int32_t count_nonzero(const ember_kernel_call* call) {
  return write_status(count_nonzero_impl(call), call);
}
int32_t nonzero(const ember_kernel_call* call) {
  return write_status(nonzero_impl(call), call);
}

}  // namespace ember::cuda
