// CUDA reduction kernels on the core's layout contract (core/ops/reduce.cpp: reduced dims last,
// any strides; the output holds the kept dims): sum, prod, amax, amin, all, any over trailing
// dims; argmax, argmin, max_dim, min_dim along the last dim; cumsum, cumprod along the last dim.
// Results follow the CPU plugin (backends/cpu/ops/reduce.cpp): NaN propagates through amax/amin and
// wins arg reductions, the first index wins ties, integer sums and products wrap in int64.
#include <cstdint>
#include <type_traits>

#include "backends/cuda/device.h"
#include "backends/cuda/ops/common.cuh"
#include "backends/cuda/ops/ops.h"

namespace ember::cuda {
namespace {

using namespace kern;  // NOLINT: the shared kernel helpers

constexpr int kMaxDims = 12;  // Note [Coalesced geometry] in elementwise.cu
static_assert(kMaxDims <= EMBER_MAX_DIMS);

// Coalesced dims, innermost first; strides in elements (xs: input, ys: output).
struct Dims {
  int n = 0;
  int64_t size[kMaxDims];
  int64_t xs[kMaxDims];
  int64_t ys[kMaxDims];
};

// Adds dim (s, x_stride, y_stride) outside the ones pushed so far; false if too many.
bool push(Dims* d, int64_t s, int64_t x_stride, int64_t y_stride) {
  if (s == 1) return true;
  const int n = d->n;
  if (n > 0 && x_stride == d->xs[n - 1] * d->size[n - 1] &&
      y_stride == d->ys[n - 1] * d->size[n - 1]) {
    d->size[n - 1] *= s;
    return true;
  }
  if (n == kMaxDims) return false;
  d->size[n] = s;
  d->xs[n] = x_stride;
  d->ys[n] = y_stride;
  d->n = n + 1;
  return true;
}

// Note [Reduction grid]
// One group of G threads reduces one output: each thread folds the elements r = lane,
// lane + G, ... in order, then a shared-memory tree combines the G partials (lower lanes
// first, so arg reductions keep the first index). G is 256 for long reductions, 32 for
// medium ones and 1 (one thread per output, no tree) for short ones and for "vertical"
// reductions, where the reduced dims are strided and neighbouring outputs are neighbours in
// memory (sum over dim 0 of a row-major matrix): adjacent threads then read adjacent
// addresses. Every thread of a block runs the same number of outer iterations, so the
// __syncthreads of the tree is reached uniformly.
struct Geometry {
  Dims outer, inner;
  int64_t n_out = 1, n_red = 1;
};

Status make_geometry(const ember_tensor& x, const ember_tensor& y, int64_t k, const char* name,
                     Geometry* g) {
  const int nd = x.ndim;
  if (k < 0 || k > nd || y.ndim < nd - k) {
    return status_error(EMBER_ERR_INVALID, "[cuda] %s: %lld reduced dims of a rank-%d input", name,
                        static_cast<long long>(k), nd);
  }
  bool ok = true;
  for (int d = nd - 1; d >= nd - k; --d) {
    g->n_red *= x.sizes[d];
    ok &= push(&g->inner, x.sizes[d], x.strides[d], 0);
  }
  for (int d = nd - static_cast<int>(k) - 1; d >= 0; --d) {
    g->n_out *= x.sizes[d];
    ok &= push(&g->outer, x.sizes[d], x.strides[d], y.strides[d]);
  }
  if (!ok) {
    return status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: more than %d dims after coalescing",
                        name, kMaxDims);
  }
  return {};
}

__device__ __forceinline__ void outer_offsets(const Dims& d, int64_t i, int64_t* ox, int64_t* oy) {
  int64_t x = 0, y = 0;
  for (int k = 0; k < d.n; ++k) {
    const int64_t idx = i % d.size[k];
    i /= d.size[k];
    x += idx * d.xs[k];
    y += idx * d.ys[k];
  }
  *ox = x;
  *oy = y;
}

__device__ __forceinline__ int64_t inner_offset(const Dims& d, int64_t i) {
  if (d.n == 1) return i * d.xs[0];
  int64_t x = 0;
  for (int k = 0; k < d.n; ++k) {
    x += (i % d.size[k]) * d.xs[k];
    i /= d.size[k];
  }
  return x;
}

// Reduced dims strided, neighbouring outputs neighbours in memory (Note [Reduction grid]).
bool is_vertical(const Geometry& g) {
  return g.outer.n > 0 && g.outer.xs[0] == 1 && g.inner.n > 0 && g.inner.xs[0] != 1 &&
         g.outer.size[0] >= 32;
}

int pick_group(const Geometry& g) {
  if (is_vertical(g) || g.n_red <= 16) return 1;
  return g.n_red >= 2048 ? 256 : 32;
}

int64_t blocks_for(int64_t n_out, int group) {
  const int64_t per_block = kThreads / group;
  return std::min<int64_t>((n_out + per_block - 1) / per_block, kMaxBlocks);
}

// ---- reducers ---------------------------------------------------------------------------------
// Floating sums and products accumulate in double, as the CPU plugin combines its partials
// (the kernels are memory-bound, and double keeps long float32 rows as exact as the CPU's
// pairwise sums); integers in int64 with wrapping (unsigned) arithmetic.

template <typename T>
struct SumOp {
  using Acc = std::conditional_t<kFloating<T>, double, int64_t>;
  using Out = T;
  __device__ static Acc identity() { return 0; }
  __device__ static Acc lift(T v) { return static_cast<Acc>(widen(v)); }
  __device__ static Acc combine(Acc a, Acc b) {
    if constexpr (kFloating<T>)
      return a + b;
    else
      return static_cast<Acc>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
  __device__ static Out finish(Acc a) { return narrow<T>(a); }
};

template <typename T>
struct ProdOp {
  using Acc = std::conditional_t<kFloating<T>, double, int64_t>;
  using Out = T;
  __device__ static Acc identity() { return 1; }
  __device__ static Acc lift(T v) { return static_cast<Acc>(widen(v)); }
  __device__ static Acc combine(Acc a, Acc b) {
    if constexpr (kFloating<T>)
      return a * b;
    else
      return static_cast<Acc>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  }
  __device__ static Out finish(Acc a) { return narrow<T>(a); }
};

// The largest value of a signed integer type (std::numeric_limits is host-only here).
template <typename A>
__device__ __forceinline__ A max_of() {
  return static_cast<A>(static_cast<std::make_unsigned_t<A>>(~std::make_unsigned_t<A>(0)) >> 1);
}

// amax (kMax) or amin; a NaN anywhere wins.
template <typename T, bool kMax>
struct ExtremumOp {
  using Acc = kern::Acc<T>;
  using Out = T;
  __device__ static Acc identity() {
    if constexpr (std::is_floating_point_v<Acc>)
      return kMax ? -INFINITY : INFINITY;
    else if constexpr (std::is_same_v<Acc, bool>)
      return !kMax;
    else if constexpr (std::is_unsigned_v<Acc>)
      return kMax ? Acc(0) : static_cast<Acc>(~Acc(0));
    else  // two's complement: the lowest value is -max - 1
      return kMax ? static_cast<Acc>(-max_of<Acc>() - 1) : max_of<Acc>();
  }
  __device__ static Acc lift(T v) { return widen(v); }
  __device__ static Acc combine(Acc a, Acc b) {
    if (is_nan(a)) return a;
    if constexpr (kMax)
      return (is_nan(b) || b > a) ? b : a;
    else
      return (is_nan(b) || b < a) ? b : a;
  }
  __device__ static Out finish(Acc a) { return narrow<T>(a); }
};

// all (kAll) or any: bool output.
template <typename T, bool kAll>
struct LogicalOp {
  using Acc = bool;
  using Out = bool;
  __device__ static bool identity() { return kAll; }
  __device__ static bool lift(T v) { return widen(v) != kern::Acc<T>(0); }
  __device__ static bool combine(bool a, bool b) { return kAll ? (a && b) : (a || b); }
  __device__ static bool finish(bool a) { return a; }
};

template <typename T>
using AmaxOp = ExtremumOp<T, true>;
template <typename T>
using AminOp = ExtremumOp<T, false>;
template <typename T>
using AllOp = LogicalOp<T, true>;
template <typename T>
using AnyOp = LogicalOp<T, false>;

// See Note [Reduction grid].
template <typename R, typename T, int G>
__global__ void reduce_kernel(Geometry g, const T* x, typename R::Out* y) {
  using Acc = typename R::Acc;
  __shared__ Acc sh[kThreads];
  constexpr int kGroups = kThreads / G;
  const int group = static_cast<int>(threadIdx.x) / G, lane = static_cast<int>(threadIdx.x) % G;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kGroups; base < g.n_out;
       base += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t o = base + group;
    Acc acc = R::identity();
    int64_t ox = 0, oy = 0;
    if (o < g.n_out) {
      outer_offsets(g.outer, o, &ox, &oy);
      for (int64_t r = lane; r < g.n_red; r += G) {
        acc = R::combine(acc, R::lift(x[ox + inner_offset(g.inner, r)]));
      }
    }
    if constexpr (G > 1) {
      sh[threadIdx.x] = acc;
      __syncthreads();
      for (int s = G / 2; s > 0; s >>= 1) {
        if (lane < s) sh[threadIdx.x] = R::combine(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
      }
      acc = sh[threadIdx.x];
      __syncthreads();
    }
    if (lane == 0 && o < g.n_out) y[oy] = R::finish(acc);
  }
}

// Note [Split reductions]
// A group per output leaves the GPU idle when there are few outputs and long reductions (a
// full sum is one block on one SM): sum(y) over a 12.8M-element activation would take as long
// as the convolution that made it. Then each output's range is split into `splits` chunks of
// at least kMinChunk elements, aiming at about kSplitBlocks blocks in all: the first pass
// folds one chunk per block into a partial (in the reducer's accumulator type), the second
// folds each output's partials in chunk order, one thread per output. The split depends only
// on the shape, so results are the same on every run. Vertical reductions (sum over dim 0 of
// [32768, 768], a linear layer's bias gradient) would leave one thread per output walking its
// whole column: they split too, a block covering 32 neighbouring outputs (one warp reads 32
// adjacent elements of a row) by 8 row lanes over a chunk of at least kMinRows rows.
constexpr int64_t kMinChunk = 4096;
constexpr int64_t kMinRows = 256;
constexpr int64_t kSplitBlocks = 2048;
constexpr int kColumns = 32;  // outputs per block of the vertical first pass

// How many chunks each output's reduction is cut into (1: no split).
int64_t pick_splits(const Geometry& g, int group) {
  if (is_vertical(g)) {
    const int64_t tiles = (g.n_out + kColumns - 1) / kColumns;
    if (tiles >= kSplitBlocks / 4) return 1;
    return std::max<int64_t>(1, std::min(kSplitBlocks / tiles, g.n_red / kMinRows));
  }
  if (group != kThreads || g.n_out >= kSplitBlocks / 4) return 1;
  const int64_t by_blocks = kSplitBlocks / g.n_out;
  const int64_t by_length = g.n_red / kMinChunk;
  return std::max<int64_t>(1, std::min(by_blocks, by_length));
}

// The end of chunk `part` of a range of n cut into chunks of `chunk`.
__device__ __forceinline__ int64_t chunk_end(int64_t part, int64_t chunk, int64_t n) {
  return (part + 1) * chunk < n ? (part + 1) * chunk : n;
}

// The vertical first pass: block b covers outputs [tile * 32, tile * 32 + 32) over chunk `part`.
template <typename R, typename T>
__global__ void reduce_column_chunks_kernel(Geometry g, int64_t splits, int64_t chunk, const T* x,
                                            typename R::Acc* partial) {
  using Acc = typename R::Acc;
  constexpr int kLanes = kThreads / kColumns;
  __shared__ Acc sh[kThreads];
  const int tx = static_cast<int>(threadIdx.x) % kColumns;
  const int ty = static_cast<int>(threadIdx.x) / kColumns;
  const int64_t tiles = (g.n_out + kColumns - 1) / kColumns;
  for (int64_t b = blockIdx.x; b < tiles * splits; b += gridDim.x) {
    const int64_t tile = b / splits, part = b % splits;
    const int64_t o = tile * kColumns + tx;
    Acc acc = R::identity();
    if (o < g.n_out) {
      int64_t ox = 0, oy = 0;
      outer_offsets(g.outer, o, &ox, &oy);
      const int64_t end = chunk_end(part, chunk, g.n_red);
      for (int64_t r = part * chunk + ty; r < end; r += kLanes) {
        acc = R::combine(acc, R::lift(x[ox + inner_offset(g.inner, r)]));
      }
    }
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int st = kLanes / 2; st > 0; st >>= 1) {
      if (ty < st) {
        sh[threadIdx.x] = R::combine(sh[threadIdx.x], sh[threadIdx.x + st * kColumns]);
      }
      __syncthreads();
    }
    if (ty == 0 && o < g.n_out) partial[o * splits + part] = sh[tx];
    __syncthreads();
  }
}

template <typename R, typename T>
__global__ void reduce_chunks_kernel(Geometry g, int64_t splits, int64_t chunk, const T* x,
                                     typename R::Acc* partial) {
  using Acc = typename R::Acc;
  __shared__ Acc sh[kThreads];
  const int64_t blocks = g.n_out * splits;
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const int64_t o = b / splits, part = b % splits;
    int64_t ox = 0, oy = 0;
    outer_offsets(g.outer, o, &ox, &oy);
    const int64_t end = chunk_end(part, chunk, g.n_red);
    Acc acc = R::identity();
    for (int64_t r = part * chunk + threadIdx.x; r < end; r += kThreads) {
      acc = R::combine(acc, R::lift(x[ox + inner_offset(g.inner, r)]));
    }
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int st = kThreads / 2; st > 0; st >>= 1) {
      if (static_cast<int>(threadIdx.x) < st) {
        sh[threadIdx.x] = R::combine(sh[threadIdx.x], sh[threadIdx.x + st]);
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) partial[b] = sh[0];
    __syncthreads();
  }
}

template <typename R>
__global__ void reduce_partials_kernel(Geometry g, int64_t splits, const typename R::Acc* partial,
                                       typename R::Out* y) {
  EMBER_GRID_STRIDE_LOOP(o, g.n_out) {
    typename R::Acc acc = R::identity();
    for (int64_t part = 0; part < splits; ++part) acc = R::combine(acc, partial[o * splits + part]);
    int64_t ox = 0, oy = 0;
    outer_offsets(g.outer, o, &ox, &oy);
    y[oy] = R::finish(acc);
  }
}

template <typename R, typename T>
Status run_split(const char* name, const Geometry& g, int64_t splits, const T* x,
                 typename R::Out* y, int device, cudaStream_t stream) {
  DeviceBuffer partial;
  EMBER_CUDA_RETURN_IF_ERROR(partial.allocate(
      device, static_cast<size_t>(g.n_out * splits) * sizeof(typename R::Acc), stream));
  auto* p = static_cast<typename R::Acc*>(partial.get());
  const int64_t chunk = (g.n_red + splits - 1) / splits;
  if (is_vertical(g)) {
    const int64_t tiles = (g.n_out + kColumns - 1) / kColumns;
    const int64_t blocks = std::min<int64_t>(tiles * splits, kMaxBlocks);
    reduce_column_chunks_kernel<R, T>
        <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(g, splits, chunk, x, p);
  } else {
    const int64_t blocks = std::min<int64_t>(g.n_out * splits, kMaxBlocks);
    reduce_chunks_kernel<R, T>
        <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(g, splits, chunk, x, p);
  }
  EMBER_CUDA_RETURN_IF_ERROR(launch_status(name));
  return launch(name, g.n_out, stream, reduce_partials_kernel<R>, g, splits,
                static_cast<const typename R::Acc*>(p), y);
}

template <typename R, typename T>
Status run_reduce(const char* name, const Geometry& g, const T* x, typename R::Out* y, int device,
                  cudaStream_t stream) {
  if (g.n_out == 0) return {};
  const int group = pick_group(g);
  const int64_t splits = g.n_red > 0 ? pick_splits(g, group) : 1;
  if (splits > 1) return run_split<R>(name, g, splits, x, y, device, stream);
  const unsigned blocks = static_cast<unsigned>(blocks_for(g.n_out, group));
  if (group == 1)
    reduce_kernel<R, T, 1><<<blocks, kThreads, 0, stream>>>(g, x, y);
  else if (group == 32)
    reduce_kernel<R, T, 32><<<blocks, kThreads, 0, stream>>>(g, x, y);
  else
    reduce_kernel<R, T, kThreads><<<blocks, kThreads, 0, stream>>>(g, x, y);
  return launch_status(name);
}

enum class Kinds { kAll, kNotBool };

// A reduction over the trailing reduced_dims dims of op A (attrs::sum, attrs::amax, ...).
template <template <typename> class Op, Kinds K, typename A>
int32_t reduce(const ember_kernel_call* call, const char* name) {
  if (call->num_inputs != 1 || call->num_outputs != 1) {
    return write_status(
        status_error(EMBER_ERR_INVALID, "[cuda] %s: expects 1 input and 1 output", name), call);
  }
  const ember_tensor &x = call->inputs[0], &y = call->outputs[0];
  cudaStream_t stream = nullptr;
  Geometry g;
  Status s = make_geometry(x, y, sdk::attrs<A>(call).reduced_dims, name, &g);
  if (s.ok()) s = prepare(call, &stream);
  if (!s.ok()) return write_status(s, call);
  s = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d is not supported", name, x.dtype);
  visit(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (K == Kinds::kAll || !std::is_same_v<T, bool>) {
      using R = Op<T>;
      using Out = typename R::Out;
      const int32_t want = std::is_same_v<Out, bool> ? EMBER_BOOL : x.dtype;
      if (y.dtype != want) {
        s = status_error(EMBER_ERR_INVALID, "[cuda] %s: output dtype %d, expected %d", name,
                         y.dtype, want);
        return;
      }
      s = run_reduce<R>(name, g, static_cast<const T*>(x.data), static_cast<Out*>(y.data),
                        y.device_index, stream);
    }
  });
  return write_status(s, call);
}

// ---- arg reductions ---------------------------------------------------------------------------

// Does (vb, ib) beat (va, ia)? NaN is the extreme; ties and NaN against NaN go to the lower
// index; an index < 0 marks an empty slot, which never wins.
template <bool kMax, typename A>
__device__ __forceinline__ bool arg_better(A va, int64_t ia, A vb, int64_t ib) {
  if (ib < 0) return false;
  if (ia < 0) return true;
  const bool na = is_nan(va), nb = is_nan(vb);
  if (na || nb) return nb && (!na || ib < ia);
  if (kMax ? vb > va : vb < va) return true;
  return vb == va && ib < ia;
}

template <typename T, bool kMax, int G>
__global__ void arg_kernel(Geometry g, int64_t n, int64_t stride, const T* x, int64_t* idx,
                           T* vals) {
  using A = Acc<T>;
  __shared__ A sv[kThreads];
  __shared__ int64_t si[kThreads];
  constexpr int kGroups = kThreads / G;
  const int group = static_cast<int>(threadIdx.x) / G, lane = static_cast<int>(threadIdx.x) % G;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kGroups; base < g.n_out;
       base += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t o = base + group;
    A best{};
    int64_t bi = -1;
    int64_t ox = 0, oy = 0;
    if (o < g.n_out) {
      outer_offsets(g.outer, o, &ox, &oy);
      for (int64_t r = lane; r < n; r += G) {
        const A v = widen(x[ox + r * stride]);
        if (arg_better<kMax>(best, bi, v, r)) {
          best = v;
          bi = r;
        }
      }
    }
    if constexpr (G > 1) {
      sv[threadIdx.x] = best;
      si[threadIdx.x] = bi;
      __syncthreads();
      for (int s = G / 2; s > 0; s >>= 1) {
        if (lane < s) {
          const int t = static_cast<int>(threadIdx.x);
          if (arg_better<kMax>(sv[t], si[t], sv[t + s], si[t + s])) {
            sv[t] = sv[t + s];
            si[t] = si[t + s];
          }
        }
        __syncthreads();
      }
      best = sv[threadIdx.x];
      bi = si[threadIdx.x];
      __syncthreads();
    }
    if (lane == 0 && o < g.n_out) {
      idx[oy] = bi;
      if (vals) vals[oy] = narrow<T>(best);  // values share the indices' layout
    }
  }
}

// argmax, argmin, max_dim, min_dim (op A) over the last dim, which the core moved there.
template <bool kMax, bool kValues, typename A>
int32_t arg_reduce(const ember_kernel_call* call, const char* name) {
  const int nout = kValues ? 2 : 1;
  if (call->num_inputs != 1 || call->num_outputs != nout) {
    return write_status(
        status_error(EMBER_ERR_INVALID, "[cuda] %s: expects 1 input and %d outputs", name, nout),
        call);
  }
  if (sdk::attrs<A>(call).reduced_dims != 1) {
    return write_status(status_error(EMBER_ERR_INVALID,
                                     "[cuda] %s: expects exactly one trailing reduced dim", name),
                        call);
  }
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& id = call->outputs[kValues ? 1 : 0];
  if (id.dtype != EMBER_I64 || (kValues && call->outputs[0].dtype != x.dtype)) {
    return write_status(
        status_error(EMBER_ERR_INVALID, "[cuda] %s: indices must be int64, values x's dtype", name),
        call);
  }
  cudaStream_t stream = nullptr;
  Geometry g;
  Status s = make_geometry(x, id, 1, name, &g);
  if (s.ok()) s = prepare(call, &stream);
  if (!s.ok()) return write_status(s, call);
  if (g.n_out == 0) return EMBER_OK;
  if (g.n_red == 0) {
    return write_status(
        status_error(EMBER_ERR_INVALID, "[cuda] %s: cannot reduce over a zero-size dim", name),
        call);
  }
  const int64_t n = x.sizes[x.ndim - 1], stride = x.strides[x.ndim - 1];
  s = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d is not supported", name, x.dtype);
  visit(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = static_cast<const T*>(x.data);
    int64_t* pi = static_cast<int64_t*>(id.data);
    T* pv = kValues ? static_cast<T*>(call->outputs[0].data) : nullptr;
    const int group = pick_group(g);
    const unsigned blocks = static_cast<unsigned>(blocks_for(g.n_out, group));
    if (group == 1)
      arg_kernel<T, kMax, 1><<<blocks, kThreads, 0, stream>>>(g, n, stride, px, pi, pv);
    else if (group == 32)
      arg_kernel<T, kMax, 32><<<blocks, kThreads, 0, stream>>>(g, n, stride, px, pi, pv);
    else
      arg_kernel<T, kMax, kThreads><<<blocks, kThreads, 0, stream>>>(g, n, stride, px, pi, pv);
    s = launch_status(name);
  });
  return write_status(s, call);
}

// ---- cumsum, cumprod ---------------------------------------------------------------------------

// R is SumOp<T> (cumsum) or ProdOp<T> (cumprod). One thread per row, in order, accumulating as
// the CPU plugin does (double for floating dtypes, rounded at every step; wrapping int64 for
// integers).
template <typename R, typename T>
__global__ void cumulative_kernel(Dims outer, int64_t rows, int64_t n, int64_t xs, int64_t ys,
                                  const T* x, T* y) {
  using A = typename R::Acc;
  EMBER_GRID_STRIDE_LOOP(r, rows) {
    int64_t ox = 0, oy = 0;
    outer_offsets(outer, r, &ox, &oy);
    A acc = R::identity();
    for (int64_t i = 0; i < n; ++i) {
      acc = R::combine(acc, R::lift(x[ox + i * xs]));
      y[oy + i * ys] = R::finish(acc);
    }
  }
}

// Note [Long cumsums]
// (cumprod's too.) One thread per row leaves a few long rows (a cumsum over 16M elements) to a
// few threads. Such
// rows are cut into chunks as in Note [Split reductions]: the first pass sums each chunk (the
// split reduction's chunk kernel), a second turns each row's chunk sums into exclusive offsets
// in order, and the third scans every chunk in tiles of kThreads elements (a shared-memory
// scan per tile, a running carry from the chunk's offset), accumulating as the one-thread
// kernel does (double for floating dtypes, wrapping int64 for integers, rounded per output).
// The sums are regrouped, so floating results may differ from the CPU's in the last bit of
// the double accumulator, which rounding to the dtype almost always hides.
template <typename R>
__global__ void cumulative_offsets_kernel(int64_t rows, int64_t splits, typename R::Acc* partial) {
  EMBER_GRID_STRIDE_LOOP(r, rows) {
    typename R::Acc run = R::identity();
    for (int64_t part = 0; part < splits; ++part) {
      const typename R::Acc v = partial[r * splits + part];
      partial[r * splits + part] = run;
      run = R::combine(run, v);
    }
  }
}

template <typename R, typename T>
__global__ void cumulative_chunks_kernel(Dims outer, int64_t rows, int64_t splits, int64_t chunk,
                                         int64_t n, int64_t xs, int64_t ys, const T* x,
                                         const typename R::Acc* offsets, T* y) {
  using A = typename R::Acc;
  __shared__ A sh[kThreads];
  const int t = static_cast<int>(threadIdx.x);
  for (int64_t b = blockIdx.x; b < rows * splits; b += gridDim.x) {
    const int64_t row = b / splits, part = b % splits;
    int64_t ox = 0, oy = 0;
    outer_offsets(outer, row, &ox, &oy);
    A carry = offsets[b];
    const int64_t end = chunk_end(part, chunk, n);
    for (int64_t base = part * chunk; base < end; base += kThreads) {
      const int64_t i = base + t;
      sh[t] = i < end ? R::lift(x[ox + i * xs]) : R::identity();
      __syncthreads();
      for (int off = 1; off < kThreads; off <<= 1) {  // inclusive scan of the tile
        const A before = t >= off ? sh[t - off] : R::identity();
        __syncthreads();
        sh[t] = R::combine(before, sh[t]);
        __syncthreads();
      }
      if (i < end) y[oy + i * ys] = R::finish(R::combine(carry, sh[t]));
      carry = R::combine(carry, sh[kThreads - 1]);
      __syncthreads();
    }
  }
}

template <typename R, typename T>
Status run_cumulative_split(const char* name, const Dims& outer, int64_t rows, int64_t splits,
                            int64_t n, int64_t xs, int64_t ys, const T* x, T* y, int device,
                            cudaStream_t stream) {
  using A = typename R::Acc;
  DeviceBuffer partial;
  EMBER_CUDA_RETURN_IF_ERROR(
      partial.allocate(device, static_cast<size_t>(rows * splits) * sizeof(A), stream));
  A* p = static_cast<A*>(partial.get());
  Geometry g;
  g.outer = outer;
  push(&g.inner, n, xs, 0);
  g.n_out = rows;
  g.n_red = n;
  const int64_t chunk = (n + splits - 1) / splits;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(rows * splits, kMaxBlocks));
  reduce_chunks_kernel<R, T><<<blocks, kThreads, 0, stream>>>(g, splits, chunk, x, p);
  EMBER_CUDA_RETURN_IF_ERROR(launch_status(name));
  EMBER_CUDA_RETURN_IF_ERROR(
      launch(name, rows, stream, cumulative_offsets_kernel<R>, rows, splits, p));
  cumulative_chunks_kernel<R, T>
      <<<blocks, kThreads, 0, stream>>>(outer, rows, splits, chunk, n, xs, ys, x, p, y);
  return launch_status(name);
}

}  // namespace

int32_t sum(const ember_kernel_call* c) {
  return reduce<SumOp, Kinds::kNotBool, attrs::sum>(c, "sum");
}
int32_t prod(const ember_kernel_call* c) {
  return reduce<ProdOp, Kinds::kNotBool, attrs::prod>(c, "prod");
}
int32_t amax(const ember_kernel_call* c) {
  return reduce<AmaxOp, Kinds::kAll, attrs::amax>(c, "amax");
}
int32_t amin(const ember_kernel_call* c) {
  return reduce<AminOp, Kinds::kAll, attrs::amin>(c, "amin");
}
int32_t all(const ember_kernel_call* c) {
  return reduce<AllOp, Kinds::kAll, attrs::all>(c, "all");
}
int32_t any(const ember_kernel_call* c) {
  return reduce<AnyOp, Kinds::kAll, attrs::any>(c, "any");
}
int32_t argmax(const ember_kernel_call* c) {
  return arg_reduce<true, false, attrs::argmax>(c, "argmax");
}
int32_t argmin(const ember_kernel_call* c) {
  return arg_reduce<false, false, attrs::argmin>(c, "argmin");
}
int32_t max_dim(const ember_kernel_call* c) {
  return arg_reduce<true, true, attrs::max_dim>(c, "max_dim");
}
int32_t min_dim(const ember_kernel_call* c) {
  return arg_reduce<false, true, attrs::min_dim>(c, "min_dim");
}

namespace {
// cumsum (R = SumOp) or cumprod (R = ProdOp) along the last dim.
template <template <typename> class R>
int32_t cumulative(const ember_kernel_call* call, const char* name) {
  if (call->num_inputs != 1 || call->num_outputs != 1) {
    return write_status(
        status_error(EMBER_ERR_INVALID, "[cuda] %s: expects 1 input and 1 output", name), call);
  }
  const ember_tensor &x = call->inputs[0], &y = call->outputs[0];
  const int nd = x.ndim;
  const int64_t n = nd == 0 ? 1 : x.sizes[nd - 1];
  const int64_t xs = nd == 0 ? 1 : x.strides[nd - 1];
  const int64_t ys = nd == 0 ? 1 : y.strides[nd - 1];
  Dims outer;
  int64_t rows = 1;
  bool ok = true;
  for (int d = nd - 2; d >= 0; --d) {
    rows *= x.sizes[d];
    ok &= push(&outer, x.sizes[d], x.strides[d], y.strides[d]);
  }
  cudaStream_t stream = nullptr;
  Status s = ok ? prepare(call, &stream)
                : status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: too many dims", name);
  if (!s.ok()) return write_status(s, call);
  if (rows == 0 || n == 0) return EMBER_OK;
  s = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d is not supported", name, x.dtype);
  visit(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const auto* px = static_cast<const T*>(x.data);
      auto* py = static_cast<T*>(y.data);
      // Note [Long cumsums]: few long rows are split into chunks.
      const int64_t splits =
          rows >= kSplitBlocks / 4 ? 1 : std::min(kSplitBlocks / rows, n / kMinChunk);
      if (splits > 1) {
        s = run_cumulative_split<R<T>, T>(name, outer, rows, splits, n, xs, ys, px, py,
                                          y.device_index, stream);
      } else {
        s = launch(name, rows, stream, cumulative_kernel<R<T>, T>, outer, rows, n, xs, ys, px, py);
      }
    }
  });
  return write_status(s, call);
}
}  // namespace

int32_t cumsum(const ember_kernel_call* call) {
  return cumulative<SumOp>(call, "cumsum");
}
int32_t cumprod(const ember_kernel_call* call) {
  return cumulative<ProdOp>(call, "cumprod");
}

}  // namespace ember::cuda
