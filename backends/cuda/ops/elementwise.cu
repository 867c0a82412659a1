// CUDA elementwise kernels: copy/convert, fill, binary arithmetic and comparison with
// broadcasting, where, unary math. One grid-stride loop per arity serves them all: the host
// coalesces the operands' dims (Note [Coalesced geometry]); when every operand is dense and
// 16-byte aligned a vectorized kernel reads and writes whole 16-byte packs
// (Note [Vectorized dense path]), otherwise a strided kernel computes offsets per element. The
// scalar semantics are the CPU plugin's (plugin_sdk_binary_ops.hpp, backends/cpu/ops).
#include <cuda/std/limits>
#include <cuda/std/type_traits>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/ops/common.cuh"
#include "backends/cuda/ops/ops.h"
#include "ember/plugin_sdk_binary_ops.hpp"

namespace ember::cuda {
namespace {

using namespace kern;  // NOLINT: the shared kernel helpers

// ---- geometry ---------------------------------------------------------------------------------

constexpr int kMaxDims = 12;
static_assert(kMaxDims <= EMBER_MAX_DIMS);

// Note [Coalesced geometry]
// Operand 0 is the output; all operands have its shape (inputs come expanded, stride 0 where
// broadcast). Size-1 dims are dropped and a dim merges into the one inside it when, for every
// operand, stride[outer] == stride[inner] * size[inner]. A dense tensor becomes one dim of
// stride 1 (the `dense` fast path); a broadcast row keeps two dims, one of stride 0. The
// geometry travels by value as a launch parameter, so it holds kMaxDims coalesced dims rather
// than EMBER_MAX_DIMS (the host side takes every tensor the core makes); an operand with more
// dims that do not merge is refused with EMBER_ERR_UNSUPPORTED, never computed wrong. The
// reduction and index kernels keep the same bound.
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
  int64_t sizes[EMBER_MAX_DIMS], strides[N][EMBER_MAX_DIMS];
  if (out.ndim > EMBER_MAX_DIMS)
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
  if (g.ndim == 1) {  // one dim: no division (a strided or broadcast row)
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = i * g.strides[k][0];
    return;
  }
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

// Note [Vectorized dense path]
// When the geometry is dense, every pointer is aligned to its pack and the op has V > 1
// elements per 16 bytes of its widest operand, each thread moves Pack<T, V> values (one
// 128-bit load per operand of that widest type, narrower ones load less) and a grid-stride
// tail finishes the last n % V elements. V is chosen on the host (vec_width), so a kernel is
// instantiated per (op, dtypes, V) and the branch is not taken per element.
template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// Elements per 16 bytes of the widest of the given types.
template <typename... T>
constexpr int kVec = static_cast<int>(16 / std::max({sizeof(T)...}));

template <int V, typename... T>
bool aligned(const T*... p) {
  return ((reinterpret_cast<uintptr_t>(p) % (sizeof(T) * V) == 0) && ...);
}

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

template <int V, typename D, typename S, typename F>
__global__ void unary_vec_kernel(int64_t n, D* out, const S* in, F f) {
  const int64_t nv = n / V;
  EMBER_GRID_STRIDE_LOOP(i, nv) {
    const Pack<S, V> x = reinterpret_cast<const Pack<S, V>*>(in)[i];
    Pack<D, V> y;
#pragma unroll
    for (int k = 0; k < V; ++k) y.v[k] = f(x.v[k]);
    reinterpret_cast<Pack<D, V>*>(out)[i] = y;
  }
  EMBER_GRID_STRIDE_LOOP(j, n - nv * V) {
    const int64_t i = nv * V + j;
    out[i] = f(in[i]);
  }
}

template <typename D, typename A, typename B, typename F>
__global__ void binary_kernel(Geometry<3> g, D* out, const A* a, const B* b, F f) {
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

// The pack of `p` at pack index i, or its one element repeated when `one` (a broadcast scalar).
template <int V, typename T>
__device__ __forceinline__ Pack<T, V> load_pack(const T* p, int64_t i, bool one) {
  if (!one) return reinterpret_cast<const Pack<T, V>*>(p)[i];
  Pack<T, V> r;
  const T x = p[0];
#pragma unroll
  for (int k = 0; k < V; ++k) r.v[k] = x;
  return r;
}

// Note [Vectorized dense path] for two inputs; `one_a` / `one_b`: that input is a single element
// broadcast over the output (x * 1.5), read once per pack instead of through offsets().
template <int V, typename D, typename A, typename B, typename F>
__global__ void binary_vec_kernel(int64_t n, D* out, const A* a, const B* b, bool one_a, bool one_b,
                                  F f) {
  const int64_t nv = n / V;
  EMBER_GRID_STRIDE_LOOP(i, nv) {
    const Pack<A, V> x = load_pack<V>(a, i, one_a);
    const Pack<B, V> y = load_pack<V>(b, i, one_b);
    Pack<D, V> z;
#pragma unroll
    for (int k = 0; k < V; ++k) z.v[k] = f(x.v[k], y.v[k]);
    reinterpret_cast<Pack<D, V>*>(out)[i] = z;
  }
  EMBER_GRID_STRIDE_LOOP(j, n - nv * V) {
    const int64_t i = nv * V + j;
    out[i] = f(a[one_a ? 0 : i], b[one_b ? 0 : i]);
  }
}

template <typename D, typename C, typename A, typename B, typename F>
__global__ void ternary_kernel(Geometry<4> g, D* out, const C* c, const A* a, const B* b, F f) {
  EMBER_GRID_STRIDE_LOOP(i, g.n) {
    if (g.dense) {
      out[i] = f(c[i], a[i], b[i]);
    } else {
      int64_t o[4];
      offsets(g, i, o);
      out[o[0]] = f(c[o[1]], a[o[2]], b[o[3]]);
    }
  }
}

// out = f(in) over the call's output and input 0, vectorized where dense and aligned.
template <typename D, typename S, typename F>
Status run_unary(const char* name, const ember_tensor& out, const ember_tensor& in,
                 cudaStream_t stream, F f) {
  Geometry<2> g;
  const ember_tensor* const ops[2] = {&out, &in};
  EMBER_CUDA_RETURN_IF_ERROR(make_geometry(ops, &g));
  D* po = static_cast<D*>(out.data);
  const S* pi = static_cast<const S*>(in.data);
  constexpr int V = kVec<D, S>;
  if constexpr (V > 1) {
    if (g.dense && g.n >= V && aligned<V>(static_cast<const D*>(po), pi)) {
      return launch(name, g.n / V, stream, unary_vec_kernel<V, D, S, F>, g.n, po, pi, f);
    }
  }
  return launch(name, g.n, stream, unary_kernel<D, S, F>, g, po, pi, f);
}

// out = f(a, b) with broadcasting, vectorized where dense and aligned.
template <typename D, typename A, typename B, typename F>
Status run_binary(const char* name, const ember_kernel_call* call, cudaStream_t stream, F f) {
  const ember_tensor &out = call->outputs[0], &a = call->inputs[0], &b = call->inputs[1];
  Geometry<3> g;
  const ember_tensor* const ops[3] = {&out, &a, &b};
  EMBER_CUDA_RETURN_IF_ERROR(make_geometry(ops, &g));
  D* po = static_cast<D*>(out.data);
  const A* pa = static_cast<const A*>(a.data);
  const B* pb = static_cast<const B*>(b.data);
  constexpr int V = kVec<D, A, B>;
  if constexpr (V > 1) {
    // Dense, or one dim where the output and each input step by 1 or an input stays at 0.
    const bool row = g.ndim == 1 && g.strides[0][0] == 1;
    const bool one_a = row && g.strides[1][0] == 0, one_b = row && g.strides[2][0] == 0;
    const bool packed =
        g.dense || (row && (one_a || g.strides[1][0] == 1) && (one_b || g.strides[2][0] == 1));
    if (packed && g.n >= V && aligned<V>(static_cast<const D*>(po)) && (one_a || aligned<V>(pa)) &&
        (one_b || aligned<V>(pb))) {
      return launch(name, g.n / V, stream, binary_vec_kernel<V, D, A, B, F>, g.n, po, pa, pb, one_a,
                    one_b, f);
    }
  }
  return launch(name, g.n, stream, binary_kernel<D, A, B, F>, g, po, pa, pb, f);
}

Status dtype_error(const char* name, int32_t dtype) {
  return status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d is not supported", name, dtype);
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

// Binary ops on the compute type A (plugin_sdk_binary_ops.hpp, Note [Binary op semantics]).
struct AddOp {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    if constexpr (std::is_same_v<A, bool>)
      return a || b;
    else
      return sdk::wrap_add(a, b);
  }
};
struct SubOp {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return sdk::wrap_sub(a, b);
  }
};
struct MulOp {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    if constexpr (std::is_same_v<A, bool>)
      return a && b;
    else
      return sdk::wrap_mul(a, b);
  }
};
struct DivOp {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return a / b;
  }
};
struct PowOp {
  __device__ float operator()(float a, float b) const { return powf(a, b); }
  __device__ double operator()(double a, double b) const { return ::pow(a, b); }
  template <typename A>
  __device__ A operator()(A a, A b) const {  // integers: wrap, negative exponents as PyTorch
    if constexpr (std::is_signed_v<A>) {
      if (b < 0) return a == 1 ? A(1) : (a == -1 ? ((b & 1) ? A(-1) : A(1)) : A(0));
    }
    A r = 1, x = a;
    for (A e = b; e > 0; e >>= 1) {
      if (e & 1) r = sdk::wrap_mul(r, x);
      if (e > 1) x = sdk::wrap_mul(x, x);
    }
    return r;
  }
};
struct ReluBackwardOp {  // inputs {g, y}: g where y > 0 (NaN y passes g, as PyTorch)
  template <typename A>
  __device__ A operator()(A g, A y) const {
    return y <= A(0) ? A(0) : g;
  }
};
// GELU's gradient, inputs {g, x}, in each form (sdk::GeluBackwardOp / GeluTanhBackwardOp's
// formulas; Note [Fused GELU backward]).
struct GeluBackwardOp {
  template <typename A>
  __device__ A operator()(A g, A x) const {
    if constexpr (std::is_same_v<A, double>) {
      const double cdf = 0.5 * (1.0 + ::erf(x * 0.7071067811865476));
      return g * (cdf + x * ::exp(-0.5 * x * x) * 0.3989422804014327);
    } else {
      const float cdf = 0.5f * (1.0f + erff(x * 0.7071067811865476f));
      return g * (cdf + x * expf(-0.5f * x * x) * 0.3989422804014327f);
    }
  }
};
struct GeluTanhBackwardOp {
  template <typename A>
  __device__ A operator()(A g, A x) const {
    const A k = A(0.7978845608028654), c = A(0.044715);
    A t;
    if constexpr (std::is_same_v<A, double>) {
      t = ::tanh(k * (x + c * x * x * x));
    } else {
      t = tanhf(k * (x + c * x * x * x));
    }
    const A du = k * (A(1) + A(3) * c * x * x);
    return g * (A(0.5) * (A(1) + t) + A(0.5) * x * (A(1) - t * t) * du);
  }
};
// The remainders and the rounded divisions are the SDK's host-and-device definitions
// (plugin_sdk_binary_ops.hpp).
using sdk::DivFloorOp;
using sdk::DivTruncOp;
using sdk::FmodOp;
using sdk::RemainderOp;
// atan2, hypot and logaddexp too (Note [Binary math ops]).
using sdk::Atan2Op;
using sdk::HypotOp;
using sdk::LogaddexpOp;
struct MaximumOp {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    if (is_nan(a) || is_nan(b)) return a + b;
    return a > b ? a : b;
  }
};
struct MinimumOp {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    if (is_nan(a) || is_nan(b)) return a + b;
    return a < b ? a : b;
  }
};

// Comparisons and logic: bool results.
struct EqOp {
  template <typename A>
  __device__ bool operator()(A a, A b) const {
    return a == b;
  }
};
struct NeOp {
  template <typename A>
  __device__ bool operator()(A a, A b) const {
    return a != b;
  }
};
struct LtOp {
  template <typename A>
  __device__ bool operator()(A a, A b) const {
    return a < b;
  }
};
struct LeOp {
  template <typename A>
  __device__ bool operator()(A a, A b) const {
    return a <= b;
  }
};
struct GtOp {
  template <typename A>
  __device__ bool operator()(A a, A b) const {
    return a > b;
  }
};
struct GeOp {
  template <typename A>
  __device__ bool operator()(A a, A b) const {
    return a >= b;
  }
};
struct AndOp {
  template <typename A>
  __device__ bool operator()(A a, A b) const {
    return a != A(0) && b != A(0);
  }
};
struct OrOp {
  template <typename A>
  __device__ bool operator()(A a, A b) const {
    return a != A(0) || b != A(0);
  }
};

// Unary math on float / double (the half types compute in float).
#define EMBER_CUDA_FLOAT_OP(Name, fexpr, dexpr)                    \
  struct Name {                                                    \
    __device__ float operator()(float x) const { return fexpr; }   \
    __device__ double operator()(double x) const { return dexpr; } \
  }
EMBER_CUDA_FLOAT_OP(ExpOp, expf(x), ::exp(x));
EMBER_CUDA_FLOAT_OP(LogOp, logf(x), ::log(x));
EMBER_CUDA_FLOAT_OP(Log1pOp, log1pf(x), ::log1p(x));
EMBER_CUDA_FLOAT_OP(Expm1Op, expm1f(x), ::expm1(x));
EMBER_CUDA_FLOAT_OP(Log2Op, log2f(x), ::log2(x));
EMBER_CUDA_FLOAT_OP(Log10Op, log10f(x), ::log10(x));
EMBER_CUDA_FLOAT_OP(Exp2Op, exp2f(x), ::exp2(x));
EMBER_CUDA_FLOAT_OP(SqrtOp, sqrtf(x), ::sqrt(x));
EMBER_CUDA_FLOAT_OP(RsqrtOp, 1.0f / sqrtf(x), 1.0 / ::sqrt(x));
EMBER_CUDA_FLOAT_OP(SinOp, sinf(x), ::sin(x));
EMBER_CUDA_FLOAT_OP(CosOp, cosf(x), ::cos(x));
EMBER_CUDA_FLOAT_OP(TanOp, tanf(x), ::tan(x));
EMBER_CUDA_FLOAT_OP(AsinOp, asinf(x), ::asin(x));
EMBER_CUDA_FLOAT_OP(AcosOp, acosf(x), ::acos(x));
EMBER_CUDA_FLOAT_OP(AtanOp, atanf(x), ::atan(x));
EMBER_CUDA_FLOAT_OP(SinhOp, sinhf(x), ::sinh(x));
EMBER_CUDA_FLOAT_OP(CoshOp, coshf(x), ::cosh(x));
EMBER_CUDA_FLOAT_OP(AsinhOp, asinhf(x), ::asinh(x));
EMBER_CUDA_FLOAT_OP(AcoshOp, acoshf(x), ::acosh(x));
EMBER_CUDA_FLOAT_OP(AtanhOp, atanhf(x), ::atanh(x));
EMBER_CUDA_FLOAT_OP(TanhOp, tanhf(x), ::tanh(x));
EMBER_CUDA_FLOAT_OP(SigmoidOp, 1.0f / (1.0f + expf(-x)), 1.0 / (1.0 + ::exp(-x)));
EMBER_CUDA_FLOAT_OP(SiluOp, x / (1.0f + expf(-x)), x / (1.0 + ::exp(-x)));
EMBER_CUDA_FLOAT_OP(FloorOp, floorf(x), ::floor(x));
EMBER_CUDA_FLOAT_OP(CeilOp, ceilf(x), ::ceil(x));
EMBER_CUDA_FLOAT_OP(RoundOp, rintf(x), ::rint(x));  // half to even, as std::nearbyint
EMBER_CUDA_FLOAT_OP(ErfOp, erff(x), ::erf(x));
// The SDK's (Note [erfinv]), so every backend gives the same digits.
EMBER_CUDA_FLOAT_OP(ErfinvOp, sdk::erfinv(x), sdk::erfinv(x));
EMBER_CUDA_FLOAT_OP(ErfcOp, erfcf(x), ::erfc(x));
EMBER_CUDA_FLOAT_OP(LgammaOp, sdk::lgamma(x), sdk::lgamma(x));
EMBER_CUDA_FLOAT_OP(HardsigmoidOp, sdk::hardsigmoid(x), sdk::hardsigmoid(x));
EMBER_CUDA_FLOAT_OP(HardswishOp, sdk::hardswish(x), sdk::hardswish(x));
EMBER_CUDA_FLOAT_OP(GeluErfOp, 0.5f * x * (1.0f + erff(x * 0.7071067811865476f)),
                    0.5 * x * (1.0 + ::erf(x * 0.7071067811865476)));
EMBER_CUDA_FLOAT_OP(GeluTanhOp,
                    0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x))),
                    0.5 * x * (1.0 + ::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))));
EMBER_CUDA_FLOAT_OP(LogsigmoidOp, fminf(x, 0.0f) - log1pf(expf(-fabsf(x))),
                    ::fmin(x, 0.0) - ::log1p(::exp(-::fabs(x))));
EMBER_CUDA_FLOAT_OP(MishOp, x* tanhf(x > 20.0f ? x : log1pf(expf(x))),
                    x* ::tanh(x > 20.0 ? x : ::log1p(::exp(x))));
#undef EMBER_CUDA_FLOAT_OP
// x where x > 0, else negative_slope * x.
struct LeakyReluOp {
  double slope;
  __device__ float operator()(float x) const {
    return x > 0.0f ? x : static_cast<float>(slope) * x;
  }
  __device__ double operator()(double x) const { return x > 0.0 ? x : slope * x; }
};
// The n-th derivative of digamma (Note [Polygamma]).
struct PolygammaOp {
  int64_t n;
  template <typename A>
  __device__ A operator()(A x) const {
    return sdk::polygamma(n, x);
  }
};
// ~x (bool: not x).
struct BitNotOp {
  template <typename A>
  __device__ A operator()(A x) const {
    return sdk::bitwise_not(x);
  }
};
// scale * x where x > 0, else scale * alpha * (exp(input_scale * x) - 1).
struct EluOp {
  double alpha, scale, input_scale;
  __device__ float operator()(float x) const {
    const float s = static_cast<float>(scale);
    return x > 0.0f ? s * x
                    : s * static_cast<float>(alpha) * expm1f(static_cast<float>(input_scale) * x);
  }
  __device__ double operator()(double x) const {
    return x > 0.0 ? scale * x : scale * alpha * ::expm1(input_scale * x);
  }
};
// log1p(exp(beta x)) / beta, x itself where beta x > threshold.
struct SoftplusOp {
  double beta, threshold;
  __device__ float operator()(float x) const {
    const float bx = static_cast<float>(beta) * x;
    return bx > static_cast<float>(threshold) ? x : log1pf(expf(bx)) / static_cast<float>(beta);
  }
  __device__ double operator()(double x) const {
    const double bx = beta * x;
    return bx > threshold ? x : ::log1p(::exp(bx)) / beta;
  }
};

// Unary ops on every numeric compute type.
struct NegOp {
  template <typename A>
  __device__ A operator()(A x) const {
    return sdk::wrap_neg(x);
  }
};
struct AbsOp {
  template <typename A>
  __device__ A operator()(A x) const {
    return sdk::wrap_abs(x);
  }
};
struct SignOp {
  template <typename A>
  __device__ A operator()(A x) const {
    if constexpr (std::is_unsigned_v<A>) {
      return x > A(0) ? A(1) : A(0);
    } else {
      if (is_nan(x)) return x;
      return static_cast<A>((A(0) < x) - (x < A(0)));
    }
  }
};
struct ReluOp {
  template <typename A>
  __device__ A operator()(A x) const {
    if (is_nan(x)) return x;  // NaN stays
    return x > A(0) ? x : A(0);
  }
};
// A bound as A, saturating at an integer A's range, as sdk::saturating_bound on the host (a
// plain cast of an out-of-range double is undefined); NaN bounds are dropped by the caller.
template <typename A>
__device__ A clamp_bound(double v) {
  if constexpr (::cuda::std::is_integral_v<A>) {
    if (v <= static_cast<double>(::cuda::std::numeric_limits<A>::min())) {
      return ::cuda::std::numeric_limits<A>::min();
    }
    if (v >= static_cast<double>(::cuda::std::numeric_limits<A>::max())) {
      return ::cuda::std::numeric_limits<A>::max();
    }
  }
  return static_cast<A>(v);
}

struct ClampOp {
  bool has_lo, has_hi;
  double lo, hi;
  int64_t ilo, ihi;  // the bounds of integer tensors, exact
  template <typename A>
  __device__ A operator()(A x) const {
    if (is_nan(x)) return x;
    if constexpr (::cuda::std::is_integral_v<A>) {
      if (has_lo && x < sdk::saturating_int_bound<A>(ilo)) x = sdk::saturating_int_bound<A>(ilo);
      if (has_hi && x > sdk::saturating_int_bound<A>(ihi)) x = sdk::saturating_int_bound<A>(ihi);
    } else {
      if (has_lo && x < clamp_bound<A>(lo)) x = clamp_bound<A>(lo);
      if (has_hi && x > clamp_bound<A>(hi)) x = clamp_bound<A>(hi);
    }
    return x;
  }
};

// Applies a compute-type functor to T values: widen, compute, round once.
template <typename T, typename F>
struct Widened {
  F f;
  __device__ T operator()(T a, T b) const { return narrow<T>(f(widen(a), widen(b))); }
  __device__ T operator()(T x) const { return narrow<T>(f(widen(x))); }
};
// Same for a functor with a bool result.
template <typename T, typename F>
struct WidenedPredicate {
  F f;
  __device__ bool operator()(T a, T b) const { return f(widen(a), widen(b)); }
  __device__ bool operator()(T x) const { return f(widen(x)); }
};

struct NotOp {
  template <typename A>
  __device__ bool operator()(A x) const {
    return x == A(0);
  }
};

template <typename T>
struct WhereOp {
  __device__ T operator()(bool c, T a, T b) const { return c ? a : b; }
};

// Which storage dtypes an op takes, as the CPU plugin's registrations: kIntegral is the
// integers and bool; kOwn, those the functor's `supports<T>` names (the SDK's functors).
enum class Kinds { kAll, kNumeric, kFloating, kIntegral, kOwn };

template <typename T>
constexpr bool admits(Kinds k) {
  return k == Kinds::kAll || (k == Kinds::kNumeric && !std::is_same_v<T, bool>) ||
         (k == Kinds::kFloating && kFloating<T>) || (k == Kinds::kIntegral && !kFloating<T>);
}
/** Whether functor F of kinds K takes storage dtype T. */
template <Kinds K, typename F, typename T>
constexpr bool takes() {
  if constexpr (K == Kinds::kOwn)
    return F::template supports<T>;
  else
    return admits<T>(K);
}

// Checks that every operand of `call` has `dtype` (output: `out_dtype`).
Status check_dtypes(const ember_kernel_call* call, const char* name, int32_t dtype,
                    int32_t out_dtype, int first_input = 0) {
  for (int i = first_input; i < call->num_inputs; ++i) {
    if (call->inputs[i].dtype != dtype) {
      return status_error(EMBER_ERR_INVALID, "[cuda] %s: input %d has dtype %d, expected %d", name,
                          i, call->inputs[i].dtype, dtype);
    }
  }
  if (call->outputs[0].dtype != out_dtype) {
    return status_error(EMBER_ERR_INVALID, "[cuda] %s: output dtype %d, expected %d", name,
                        call->outputs[0].dtype, out_dtype);
  }
  return {};
}

// A binary op whose result has the input dtype.
template <Kinds K, typename F>
int32_t binary_same(const ember_kernel_call* call, const char* name) {
  const int32_t dtype = call->inputs[0].dtype;
  cudaStream_t stream = nullptr;
  Status s = check_dtypes(call, name, dtype, dtype);
  if (s.ok()) s = prepare(call, &stream);
  if (!s.ok()) return write_status(s, call);
  s = dtype_error(name, dtype);
  visit(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (takes<K, F, T>()) {
      s = run_binary<T, T, T>(name, call, stream, Widened<T, F>{F{}});
    }
  });
  return write_status(s, call);
}

// A binary op with a bool result (comparisons, logic).
template <typename F>
int32_t binary_predicate(const ember_kernel_call* call, const char* name) {
  const int32_t dtype = call->inputs[0].dtype;
  cudaStream_t stream = nullptr;
  Status s = check_dtypes(call, name, dtype, EMBER_BOOL);
  if (s.ok()) s = prepare(call, &stream);
  if (!s.ok()) return write_status(s, call);
  s = dtype_error(name, dtype);
  visit(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    s = run_binary<bool, T, T>(name, call, stream, WidenedPredicate<T, F>{F{}});
  });
  return write_status(s, call);
}

// A unary op whose result has the input dtype.
template <Kinds K, typename F>
int32_t unary_same(const ember_kernel_call* call, const char* name, F f = F{}) {
  const int32_t dtype = call->inputs[0].dtype;
  cudaStream_t stream = nullptr;
  Status s = check_dtypes(call, name, dtype, dtype);
  if (s.ok()) s = prepare(call, &stream);
  if (!s.ok()) return write_status(s, call);
  s = dtype_error(name, dtype);
  visit(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (admits<T>(K)) {
      s = run_unary<T, T>(name, call->outputs[0], call->inputs[0], stream, Widened<T, F>{f});
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
      s = run_unary<D, S>("copy", dst, src, stream, ConvertOp<S, D>{});
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
  const auto a = sdk::attrs<attrs::fill>(call);
  const double fv = a.value;
  const int64_t iv = a.int_value;
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

int32_t where(const ember_kernel_call* call) {
  const ember_tensor &out = call->outputs[0], &c = call->inputs[0], &a = call->inputs[1],
                     &b = call->inputs[2];
  cudaStream_t stream = nullptr;
  Status s = c.dtype == EMBER_BOOL
                 ? check_dtypes(call, "where", a.dtype, a.dtype, /*first_input=*/1)
                 : status_error(EMBER_ERR_INVALID, "[cuda] where: condition dtype %d", c.dtype);
  if (s.ok()) s = prepare(call, &stream);
  Geometry<4> g;
  const ember_tensor* const ops[4] = {&out, &c, &a, &b};
  if (s.ok()) s = make_geometry(ops, &g);
  if (!s.ok()) return write_status(s, call);
  s = dtype_error("where", a.dtype);
  visit(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    s = launch("where", g.n, stream, ternary_kernel<T, bool, T, T, WhereOp<T>>, g,
               static_cast<T*>(out.data), static_cast<const bool*>(c.data),
               static_cast<const T*>(a.data), static_cast<const T*>(b.data), WhereOp<T>{});
  });
  return write_status(s, call);
}

int32_t logical_not(const ember_kernel_call* call) {
  const int32_t dtype = call->inputs[0].dtype;
  cudaStream_t stream = nullptr;
  Status s = check_dtypes(call, "logical_not", dtype, EMBER_BOOL);
  if (s.ok()) s = prepare(call, &stream);
  if (!s.ok()) return write_status(s, call);
  s = dtype_error("logical_not", dtype);
  visit(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    s = run_unary<bool, T>("logical_not", call->outputs[0], call->inputs[0], stream,
                           WidenedPredicate<T, NotOp>{NotOp{}});
  });
  return write_status(s, call);
}

int32_t gelu(const ember_kernel_call* call) {
  return sdk::attrs<attrs::gelu>(call).tanh_form == 1
             ? unary_same<Kinds::kFloating, GeluTanhOp>(call, "gelu")
             : unary_same<Kinds::kFloating, GeluErfOp>(call, "gelu");
}

int32_t softplus(const ember_kernel_call* call) {
  const auto a = sdk::attrs<attrs::softplus>(call);
  return unary_same<Kinds::kFloating, SoftplusOp>(call, "softplus",
                                                  SoftplusOp{a.beta, a.threshold});
}

int32_t leaky_relu(const ember_kernel_call* call) {
  const auto a = sdk::attrs<attrs::leaky_relu>(call);
  return unary_same<Kinds::kFloating, LeakyReluOp>(call, "leaky_relu",
                                                   LeakyReluOp{a.negative_slope});
}

int32_t elu(const ember_kernel_call* call) {
  const auto a = sdk::attrs<attrs::elu>(call);
  return unary_same<Kinds::kFloating, EluOp>(call, "elu", EluOp{a.alpha, a.scale, a.input_scale});
}

int32_t clamp(const ember_kernel_call* call) {
  const auto a = sdk::attrs<attrs::clamp>(call);
  // A NaN bound clamps nothing (every comparison with it is false), as on the CPU.
  const ClampOp op{a.has_lo != 0 && !std::isnan(a.lo),
                   a.has_hi != 0 && !std::isnan(a.hi),
                   a.lo,
                   a.hi,
                   a.int_lo,
                   a.int_hi};
  return unary_same<Kinds::kNumeric, ClampOp>(call, "clamp", op);
}

#define EMBER_CUDA_BINARY(name, kinds, Op)      \
  int32_t name(const ember_kernel_call* call) { \
    return binary_same<kinds, Op>(call, #name); \
  }
EMBER_CUDA_BINARY(add, Kinds::kAll, AddOp)
EMBER_CUDA_BINARY(sub, Kinds::kNumeric, SubOp)
EMBER_CUDA_BINARY(mul, Kinds::kAll, MulOp)
EMBER_CUDA_BINARY(div, Kinds::kFloating, DivOp)
EMBER_CUDA_BINARY(pow, Kinds::kNumeric, PowOp)
EMBER_CUDA_BINARY(maximum, Kinds::kAll, MaximumOp)
EMBER_CUDA_BINARY(minimum, Kinds::kAll, MinimumOp)
EMBER_CUDA_BINARY(relu_backward, Kinds::kNumeric, ReluBackwardOp)
int32_t gelu_backward(const ember_kernel_call* call) {
  return sdk::attrs<attrs::gelu_backward>(call).tanh_form == 1
             ? binary_same<Kinds::kFloating, GeluTanhBackwardOp>(call, "gelu_backward")
             : binary_same<Kinds::kFloating, GeluBackwardOp>(call, "gelu_backward");
}
EMBER_CUDA_BINARY(remainder, Kinds::kNumeric, RemainderOp)
EMBER_CUDA_BINARY(fmod, Kinds::kNumeric, FmodOp)
EMBER_CUDA_BINARY(atan2, Kinds::kFloating, Atan2Op)
EMBER_CUDA_BINARY(hypot, Kinds::kFloating, HypotOp)
EMBER_CUDA_BINARY(logaddexp, Kinds::kFloating, LogaddexpOp)
EMBER_CUDA_BINARY(div_floor, Kinds::kNumeric, DivFloorOp)
EMBER_CUDA_BINARY(div_trunc, Kinds::kNumeric, DivTruncOp)
#undef EMBER_CUDA_BINARY

// Note [Integer binary ops] (plugin_sdk_binary_ops.hpp) says what each kind is.
int32_t integer_binary(const ember_kernel_call* call) {
  return sdk::run_integer_binary(call, sdk::attrs<attrs::integer_binary>(call).kind, [&](auto op) {
    return binary_same<Kinds::kOwn, decltype(op)>(call, "integer_binary");
  });
}

int32_t polygamma(const ember_kernel_call* call) {
  const auto a = sdk::attrs<attrs::polygamma>(call);
  return unary_same<Kinds::kFloating, PolygammaOp>(call, "polygamma", PolygammaOp{a.n});
}

#define EMBER_CUDA_PREDICATE(name, Op)          \
  int32_t name(const ember_kernel_call* call) { \
    return binary_predicate<Op>(call, #name);   \
  }
EMBER_CUDA_PREDICATE(eq, EqOp)
EMBER_CUDA_PREDICATE(ne, NeOp)
EMBER_CUDA_PREDICATE(lt, LtOp)
EMBER_CUDA_PREDICATE(le, LeOp)
EMBER_CUDA_PREDICATE(gt, GtOp)
EMBER_CUDA_PREDICATE(ge, GeOp)
EMBER_CUDA_PREDICATE(logical_and, AndOp)
EMBER_CUDA_PREDICATE(logical_or, OrOp)
#undef EMBER_CUDA_PREDICATE

#define EMBER_CUDA_UNARY(name, kinds, Op)       \
  int32_t name(const ember_kernel_call* call) { \
    return unary_same<kinds, Op>(call, #name);  \
  }
EMBER_CUDA_UNARY(neg, Kinds::kNumeric, NegOp)
EMBER_CUDA_UNARY(abs, Kinds::kNumeric, AbsOp)
EMBER_CUDA_UNARY(sign, Kinds::kNumeric, SignOp)
EMBER_CUDA_UNARY(relu, Kinds::kNumeric, ReluOp)
EMBER_CUDA_UNARY(exp, Kinds::kFloating, ExpOp)
EMBER_CUDA_UNARY(log, Kinds::kFloating, LogOp)
EMBER_CUDA_UNARY(log1p, Kinds::kFloating, Log1pOp)
EMBER_CUDA_UNARY(expm1, Kinds::kFloating, Expm1Op)
EMBER_CUDA_UNARY(log2, Kinds::kFloating, Log2Op)
EMBER_CUDA_UNARY(log10, Kinds::kFloating, Log10Op)
EMBER_CUDA_UNARY(exp2, Kinds::kFloating, Exp2Op)
EMBER_CUDA_UNARY(sqrt, Kinds::kFloating, SqrtOp)
EMBER_CUDA_UNARY(rsqrt, Kinds::kFloating, RsqrtOp)
EMBER_CUDA_UNARY(sin, Kinds::kFloating, SinOp)
EMBER_CUDA_UNARY(cos, Kinds::kFloating, CosOp)
EMBER_CUDA_UNARY(tan, Kinds::kFloating, TanOp)
EMBER_CUDA_UNARY(asin, Kinds::kFloating, AsinOp)
EMBER_CUDA_UNARY(acos, Kinds::kFloating, AcosOp)
EMBER_CUDA_UNARY(atan, Kinds::kFloating, AtanOp)
EMBER_CUDA_UNARY(sinh, Kinds::kFloating, SinhOp)
EMBER_CUDA_UNARY(cosh, Kinds::kFloating, CoshOp)
EMBER_CUDA_UNARY(asinh, Kinds::kFloating, AsinhOp)
EMBER_CUDA_UNARY(acosh, Kinds::kFloating, AcoshOp)
EMBER_CUDA_UNARY(atanh, Kinds::kFloating, AtanhOp)
EMBER_CUDA_UNARY(tanh, Kinds::kFloating, TanhOp)
EMBER_CUDA_UNARY(sigmoid, Kinds::kFloating, SigmoidOp)
EMBER_CUDA_UNARY(silu, Kinds::kFloating, SiluOp)
EMBER_CUDA_UNARY(floor, Kinds::kFloating, FloorOp)
EMBER_CUDA_UNARY(ceil, Kinds::kFloating, CeilOp)
EMBER_CUDA_UNARY(round, Kinds::kFloating, RoundOp)
EMBER_CUDA_UNARY(erf, Kinds::kFloating, ErfOp)
EMBER_CUDA_UNARY(erfinv, Kinds::kFloating, ErfinvOp)
EMBER_CUDA_UNARY(erfc, Kinds::kFloating, ErfcOp)
EMBER_CUDA_UNARY(lgamma, Kinds::kFloating, LgammaOp)
EMBER_CUDA_UNARY(hardsigmoid, Kinds::kFloating, HardsigmoidOp)
EMBER_CUDA_UNARY(hardswish, Kinds::kFloating, HardswishOp)
EMBER_CUDA_UNARY(bitwise_not, Kinds::kIntegral, BitNotOp)
EMBER_CUDA_UNARY(logsigmoid, Kinds::kFloating, LogsigmoidOp)
EMBER_CUDA_UNARY(mish, Kinds::kFloating, MishOp)
#undef EMBER_CUDA_UNARY

}  // namespace ember::cuda
