// CUDA elementwise kernels: copy/convert, fill, binary arithmetic with broadcasting and unary
// math. One grid-stride loop per arity serves them all: the host coalesces the operands' dims
// (Note [Coalesced geometry]) and a warp-uniform flag picks the unit-stride path when every
// operand is dense, so each (op, dtype) instantiates a single kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/ops/ops.h"
#include "backends/cuda/stream.h"

namespace ember::cuda {
namespace {

// ---- element types ----------------------------------------------------------------------------

template <typename T>
struct Tag {
  using type = T;
};

// Calls fn(Tag<T>{}) with the device element type of `dtype`; false if unknown.
template <typename Fn>
bool visit(int32_t dtype, Fn&& fn) {
  switch (dtype) {
    case EMBER_F32:
      fn(Tag<float>{});
      return true;
    case EMBER_F64:
      fn(Tag<double>{});
      return true;
    case EMBER_F16:
      fn(Tag<__half>{});
      return true;
    case EMBER_BF16:
      fn(Tag<__nv_bfloat16>{});
      return true;
    case EMBER_I64:
      fn(Tag<int64_t>{});
      return true;
    case EMBER_I32:
      fn(Tag<int32_t>{});
      return true;
    case EMBER_I8:
      fn(Tag<int8_t>{});
      return true;
    case EMBER_U8:
      fn(Tag<uint8_t>{});
      return true;
    case EMBER_BOOL:
      fn(Tag<bool>{});
      return true;
    default:
      return false;
  }
}

template <typename T>
constexpr bool kHalf = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <typename T>
constexpr bool kFloating = kHalf<T> || std::is_floating_point_v<T>;

// The type arithmetic on T happens in: float for the half types, T otherwise.
template <typename T>
using Acc = std::conditional_t<kHalf<T>, float, T>;

template <typename T>
__host__ __device__ __forceinline__ Acc<T> widen(T v) {
  if constexpr (std::is_same_v<T, __half>)
    return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat162float(v);
  else
    return v;
}

// Converts a widened value to D as the CPU plugin does: != 0 for bool, through float for the
// half types (rounding to nearest even), a C++ conversion otherwise.
template <typename D, typename A>
__host__ __device__ __forceinline__ D narrow(A v) {
  if constexpr (std::is_same_v<D, bool>)
    return v != A(0);
  else if constexpr (std::is_same_v<D, __half>)
    return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<D, __nv_bfloat16>)
    return __float2bfloat16_rn(static_cast<float>(v));
  else
    return static_cast<D>(v);
}

// ---- geometry ---------------------------------------------------------------------------------

constexpr int kMaxDims = 12;

// Note [Coalesced geometry]
// Operand 0 is the output; all operands have its shape (inputs come expanded, stride 0 where
// broadcast). Size-1 dims are dropped and a dim merges into the one inside it when, for every
// operand, stride[outer] == stride[inner] * size[inner]. A dense tensor becomes one dim of
// stride 1 (the `dense` fast path); a broadcast row keeps two dims, one of stride 0.
template <int N>
struct Geometry {
  int ndim = 0;
  bool dense = true;
  int64_t n = 1;
  int64_t sizes[kMaxDims];
  int64_t strides[N][kMaxDims];  // elements
};

template <int N>
Status make_geometry(const ember_tensor* const (&ops)[N], Geometry<N>* g) {
  const ember_tensor& out = *ops[0];
  int nd = 0;
  int64_t sizes[64], strides[N][64];
  if (out.ndim > 64)
    return status_error(EMBER_ERR_UNSUPPORTED, "[cuda] rank %d is too high", out.ndim);
  for (int d = 0; d < out.ndim; ++d) {
    const int64_t s = out.sizes[d];
    g->n *= s;
    if (s == 1) continue;
    if (nd > 0) {
      bool merge = true;
      for (int k = 0; k < N; ++k) merge &= strides[k][nd - 1] == ops[k]->strides[d] * s;
      if (merge) {
        sizes[nd - 1] *= s;
        for (int k = 0; k < N; ++k) strides[k][nd - 1] = ops[k]->strides[d];
        continue;
      }
    }
    sizes[nd] = s;
    for (int k = 0; k < N; ++k) strides[k][nd] = ops[k]->strides[d];
    ++nd;
  }
  if (nd > kMaxDims) {
    return status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %d dims after coalescing, at most %d", nd,
                        kMaxDims);
  }
  g->ndim = nd;
  for (int d = 0; d < nd; ++d) {
    g->sizes[d] = sizes[d];
    for (int k = 0; k < N; ++k) g->strides[k][d] = strides[k][d];
  }
  g->dense = nd == 0 || nd == 1;
  for (int k = 0; k < N && nd == 1; ++k) g->dense &= strides[k][0] == 1;
  return {};
}

template <int N>
__device__ __forceinline__ void offsets(const Geometry<N>& g, int64_t i, int64_t (&off)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = g.ndim - 1; d >= 0; --d) {
    const int64_t size = g.sizes[d];
    const int64_t idx = i % size;
    i /= size;
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += idx * g.strides[k][d];
  }
}

// ---- kernels ----------------------------------------------------------------------------------

#define EMBER_GRID_STRIDE_LOOP(i, n)                                                     \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

template <typename D, typename F>
__global__ void nullary_kernel(Geometry<1> g, D* out, F f) {
  EMBER_GRID_STRIDE_LOOP(i, g.n) {
    if (g.dense) {
      out[i] = f();
    } else {
      int64_t o[1];
      offsets(g, i, o);
      out[o[0]] = f();
    }
  }
}

template <typename D, typename S, typename F>
__global__ void unary_kernel(Geometry<2> g, D* out, const S* in, F f) {
  EMBER_GRID_STRIDE_LOOP(i, g.n) {
    if (g.dense) {
      out[i] = f(in[i]);
    } else {
      int64_t o[2];
      offsets(g, i, o);
      out[o[0]] = f(in[o[1]]);
    }
  }
}

template <typename T, typename F>
__global__ void binary_kernel(Geometry<3> g, T* out, const T* a, const T* b, F f) {
  EMBER_GRID_STRIDE_LOOP(i, g.n) {
    if (g.dense) {
      out[i] = f(a[i], b[i]);
    } else {
      int64_t o[3];
      offsets(g, i, o);
      out[o[0]] = f(a[o[1]], b[o[2]]);
    }
  }
}

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 16;

template <typename Kernel, typename... Args>
Status launch(const char* name, int64_t n, cudaStream_t stream, Kernel kernel, Args... args) {
  if (n == 0) return {};
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks);
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args...);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return status_error(EMBER_ERR_DEVICE, "[cuda] %s kernel launch failed: %s (%s)", name,
                        cudaGetErrorString(err), cudaGetErrorName(err));
  }
  return {};
}

// The stream of the call's output device, made current.
Status prepare(const ember_kernel_call* call, cudaStream_t* stream) {
  const int index = call->num_outputs > 0 ? call->outputs[0].device_index : 0;
  EMBER_CUDA_RETURN_IF_ERROR(set_device(index));
  return current_stream(index, stream);
}

// ---- functors ---------------------------------------------------------------------------------

template <typename S, typename D>
struct ConvertOp {
  __device__ D operator()(S v) const { return narrow<D>(widen(v)); }
};

template <typename T>
struct FillOp {
  T value;
  __device__ T operator()() const { return value; }
};

struct AddOp {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return a + b;
  }
};
struct SubOp {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return a - b;
  }
};
struct MulOp {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return a * b;
  }
};
struct DivOp {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return a / b;
  }
};
struct NegOp {
  template <typename A>
  __device__ A operator()(A x) const {
    return -x;
  }
};
struct ExpOp {
  __device__ float operator()(float x) const { return expf(x); }
  __device__ double operator()(double x) const { return ::exp(x); }
};
struct ReluOp {
  template <typename A>
  __device__ A operator()(A x) const {
    return x != x ? x : (x > A(0) ? x : A(0));
  }  // NaN stays
};

// Applies an Acc-typed functor to T values: widen, compute, round once.
template <typename T, typename F>
struct Widened {
  F f;
  __device__ T operator()(T a, T b) const { return narrow<T>(f(widen(a), widen(b))); }
  __device__ T operator()(T x) const { return narrow<T>(f(widen(x))); }
};

template <typename F>
int32_t binary_float(const ember_kernel_call* call, const char* name) {
  const ember_tensor &out = call->outputs[0], &a = call->inputs[0], &b = call->inputs[1];
  if (a.dtype != out.dtype || b.dtype != out.dtype) {
    return write_status(status_error(EMBER_ERR_INVALID, "[cuda] %s: mixed dtypes %d, %d -> %d",
                                     name, a.dtype, b.dtype, out.dtype),
                        call);
  }
  Status s;
  cudaStream_t stream = nullptr;
  s = prepare(call, &stream);
  Geometry<3> g;
  const ember_tensor* const ops[3] = {&out, &a, &b};
  if (s.ok()) s = make_geometry(ops, &g);
  if (!s.ok()) return write_status(s, call);
  visit(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kFloating<T>) {
      s = launch(name, g.n, stream, binary_kernel<T, Widened<T, F>>, g, static_cast<T*>(out.data),
                 static_cast<const T*>(a.data), static_cast<const T*>(b.data), Widened<T, F>{F{}});
    } else {
      s = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d is not supported", name,
                       out.dtype);
    }
  });
  return write_status(s, call);
}

template <typename F>
int32_t unary_float(const ember_kernel_call* call, const char* name) {
  const ember_tensor &out = call->outputs[0], &x = call->inputs[0];
  if (x.dtype != out.dtype) {
    return write_status(
        status_error(EMBER_ERR_INVALID, "[cuda] %s: dtype %d -> %d", name, x.dtype, out.dtype),
        call);
  }
  Status s;
  cudaStream_t stream = nullptr;
  s = prepare(call, &stream);
  Geometry<2> g;
  const ember_tensor* const ops[2] = {&out, &x};
  if (s.ok()) s = make_geometry(ops, &g);
  if (!s.ok()) return write_status(s, call);
  visit(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kFloating<T>) {
      s = launch(name, g.n, stream, unary_kernel<T, T, Widened<T, F>>, g, static_cast<T*>(out.data),
                 static_cast<const T*>(x.data), Widened<T, F>{F{}});
    } else {
      s = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d is not supported", name,
                       out.dtype);
    }
  });
  return write_status(s, call);
}

}  // namespace

Status launch_copy(const ember_tensor& dst, const ember_tensor& src, cudaStream_t stream) {
  Geometry<2> g;
  const ember_tensor* const ops[2] = {&dst, &src};
  EMBER_CUDA_RETURN_IF_ERROR(make_geometry(ops, &g));
  if (dst.dtype == src.dtype && g.dense) {
    size_t item = 0;
    visit(dst.dtype, [&](auto tag) { item = sizeof(typename decltype(tag)::type); });
    if (g.n > 0) {
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, static_cast<size_t>(g.n) * item,
                                       cudaMemcpyDeviceToDevice, stream));
    }
    return {};
  }
  Status s = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] copy: unknown dtype %d -> %d", src.dtype,
                          dst.dtype);
  visit(src.dtype, [&](auto st) {
    using S = typename decltype(st)::type;
    visit(dst.dtype, [&](auto dt) {
      using D = typename decltype(dt)::type;
      s = launch("copy", g.n, stream, unary_kernel<D, S, ConvertOp<S, D>>, g,
                 static_cast<D*>(dst.data), static_cast<const S*>(src.data), ConvertOp<S, D>{});
    });
  });
  return s;
}

int32_t copy(const ember_kernel_call* call) {
  cudaStream_t stream = nullptr;
  Status s = prepare(call, &stream);
  if (s.ok()) s = launch_copy(call->outputs[0], call->inputs[0], stream);
  return write_status(s, call);
}

int32_t fill(const ember_kernel_call* call) {
  const ember_tensor& dst = call->outputs[0];
  const double fv = call->num_floats > 0 ? call->floats[0] : 0.0;
  const int64_t iv = call->num_ints > 0 ? call->ints[0] : 0;
  cudaStream_t stream = nullptr;
  Status s = prepare(call, &stream);
  Geometry<1> g;
  const ember_tensor* const ops[1] = {&dst};
  if (s.ok()) s = make_geometry(ops, &g);
  if (!s.ok()) return write_status(s, call);
  s = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] fill: unknown dtype %d", dst.dtype);
  visit(dst.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T value;
    if constexpr (std::is_same_v<T, bool>)
      value = fv != 0;
    else if constexpr (std::is_integral_v<T>)
      value = static_cast<T>(iv);
    else
      value = narrow<T>(fv);
    s = launch("fill", g.n, stream, nullary_kernel<T, FillOp<T>>, g, static_cast<T*>(dst.data),
               FillOp<T>{value});
  });
  return write_status(s, call);
}

int32_t add(const ember_kernel_call* call) {
  return binary_float<AddOp>(call, "add");
}
int32_t sub(const ember_kernel_call* call) {
  return binary_float<SubOp>(call, "sub");
}
int32_t mul(const ember_kernel_call* call) {
  return binary_float<MulOp>(call, "mul");
}
int32_t div(const ember_kernel_call* call) {
  return binary_float<DivOp>(call, "div");
}
int32_t neg(const ember_kernel_call* call) {
  return unary_float<NegOp>(call, "neg");
}
int32_t exp(const ember_kernel_call* call) {
  return unary_float<ExpOp>(call, "exp");
}
int32_t relu(const ember_kernel_call* call) {
  return unary_float<ReluOp>(call, "relu");
}

}  // namespace ember::cuda
