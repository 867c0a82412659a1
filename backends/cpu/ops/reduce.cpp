// CPU reduction kernels: sum, prod, amax, amin, all, any over trailing dims; argmax, argmin,
// max_dim, min_dim along one trailing dim; cumsum and cumprod along the last dim. The layout
// contract is documented in core/ops/reduce.cpp: reduced dims come last (any strides), the output
// holds the kept dims and is contiguous.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "backends/cpu/loops.h"
#include "backends/cpu/ops/ops.h"
#include "ember/plugin_sdk_sort.hpp"

namespace ember::cpu {
namespace {

using sdk::BFloat16;
using sdk::Compute;
using sdk::Half;

// ---- geometry ---------------------------------------------------------------------------------

/** Coalesced dims, innermost first; strides in elements (xs: input, ys: output). */
struct Dims {
  int n = 0;
  int64_t size[EMBER_MAX_DIMS];
  int64_t xs[EMBER_MAX_DIMS];
  int64_t ys[EMBER_MAX_DIMS];

  void push(int64_t s, int64_t x_stride, int64_t y_stride) {
    if (s == 1) return;
    if (n > 0 && x_stride == xs[n - 1] * size[n - 1] && y_stride == ys[n - 1] * size[n - 1]) {
      size[n - 1] *= s;
      return;
    }
    size[n] = s;
    xs[n] = x_stride;
    ys[n] = y_stride;
    ++n;
  }
  /** Gives an empty list one dim of size 1 so loops need no special case. */
  void finish() {
    if (n == 0) {
      size[0] = 1;
      xs[0] = 1;
      ys[0] = 1;
      n = 1;
    }
  }
  int64_t numel() const {
    int64_t p = 1;
    for (int d = 0; d < n; ++d) p *= size[d];
    return p;
  }
};

/** A position in a Dims space that advances one step along dim 0 (or one row, from dim 1). */
struct Cursor {
  int64_t idx[EMBER_MAX_DIMS];  // entries [0, d.n) are set
  int64_t ox = 0, oy = 0;

  /** Positions at linear index `lin` counted over dims [first, n). */
  Cursor(const Dims& d, int first, int64_t lin) {
    for (int k = 0; k < first && k < d.n; ++k) idx[k] = 0;
    for (int k = first; k < d.n; ++k) {
      idx[k] = lin % d.size[k];
      lin /= d.size[k];
      ox += idx[k] * d.xs[k];
      oy += idx[k] * d.ys[k];
    }
  }
  /** Advances by one over dims [first, n) with carries. */
  void next(const Dims& d, int first) {
    for (int k = first; k < d.n; ++k) {
      ox += d.xs[k];
      oy += d.ys[k];
      if (++idx[k] < d.size[k]) return;
      ox -= d.xs[k] * d.size[k];
      oy -= d.ys[k] * d.size[k];
      idx[k] = 0;
    }
  }
};

/** The kept (outer) and reduced (inner) dims of a reduction call, coalesced. */
struct Geometry {
  Dims outer, inner;
  int64_t n_out = 1, n_red = 1;
};

Geometry make_geometry(const ember_tensor& x, const ember_tensor& y, int64_t k) {
  Geometry g;
  const int nd = x.ndim;
  for (int d = nd - 1; d >= nd - k; --d) {
    g.n_red *= x.sizes[d];
    g.inner.push(x.sizes[d], x.strides[d], 0);
  }
  for (int d = nd - static_cast<int>(k) - 1; d >= 0; --d) {
    g.n_out *= x.sizes[d];
    g.outer.push(x.sizes[d], x.strides[d], y.strides[d]);
  }
  g.inner.finish();
  g.outer.finish();
  return g;
}

bool run_serial(int64_t work) {
  return work < kGrainSize || omp_get_max_threads() == 1 || omp_in_parallel();
}

// ---- reducers ---------------------------------------------------------------------------------
// Note [Reduction accuracy]
// Floating sums reduce each contiguous (or strided) row pairwise in the compute type (float for
// float32 and the half types, double for float64): leaves of kLeaf elements spread over kLanes
// independent accumulators, which the compiler turns into SIMD adds, then halves added
// recursively, so the error grows like log(n) rather than n. Row results, per-thread partials
// and the column accumulators of the vertical path are combined in double. Products accumulate
// in double (integers in int64, wrapping like PyTorch).

constexpr int64_t kLanes = 8;
constexpr int64_t kLeaf = 128;

template <typename C, typename T, bool kUnit>
C pairwise_sum(const T* p, int64_t stride, int64_t n) {
  if (n <= kLeaf) {
    C acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) {
        acc[l] += static_cast<C>(p[kUnit ? i + l : (i + l) * stride]);
      }
    }
    C tail = 0;
    for (; i < n; ++i) tail += static_cast<C>(p[kUnit ? i : i * stride]);
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
  }
  const int64_t half = (n / 2 + kLanes - 1) / kLanes * kLanes;
  return pairwise_sum<C, T, kUnit>(p, stride, half) +
         pairwise_sum<C, T, kUnit>(p + (kUnit ? half : half * stride), stride, n - half);
}

template <typename T>
struct SumOp {
  static constexpr bool kFloat = sdk::kIsFloating<T>;
  using Acc = std::conditional_t<kFloat, double, int64_t>;
  using Out = T;
  static Acc identity() { return 0; }
  static Acc lift(T v) { return static_cast<Acc>(static_cast<Compute<T>>(v)); }
  static Acc combine(Acc a, Acc b) {
    if constexpr (kFloat) {
      return a + b;
    } else {
      return static_cast<Acc>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    }
  }
  static Acc row(const T* p, int64_t stride, int64_t n) {
    if constexpr (kFloat) {
      using C = Compute<T>;
      return stride == 1 ? pairwise_sum<C, T, true>(p, 1, n)
                         : pairwise_sum<C, T, false>(p, stride, n);
    } else {
      uint64_t acc = 0;
      if (stride == 1) {
        for (int64_t i = 0; i < n; ++i) acc += static_cast<uint64_t>(static_cast<int64_t>(p[i]));
      } else {
        for (int64_t i = 0; i < n; ++i) {
          acc += static_cast<uint64_t>(static_cast<int64_t>(p[i * stride]));
        }
      }
      return static_cast<Acc>(acc);
    }
  }
  static Out finish(Acc a) { return store<T>(a); }
};

template <typename T>
struct ProdOp {
  static constexpr bool kFloat = sdk::kIsFloating<T>;
  using Acc = std::conditional_t<kFloat, double, int64_t>;
  using Out = T;
  static Acc identity() { return 1; }
  static Acc lift(T v) { return static_cast<Acc>(static_cast<Compute<T>>(v)); }
  static Acc combine(Acc a, Acc b) {
    if constexpr (kFloat) {
      return a * b;
    } else {
      return static_cast<Acc>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    }
  }
  static Acc row(const T* p, int64_t stride, int64_t n) {
    Acc acc = 1;
    for (int64_t i = 0; i < n; ++i) acc = combine(acc, lift(p[i * stride]));
    return acc;
  }
  static Out finish(Acc a) { return store<T>(a); }
};

/** amax (kMax) or amin; NaN propagates. */
template <typename T, bool kMax>
struct ExtremumOp {
  using Acc = Compute<T>;
  using Out = T;
  static constexpr bool kFloat = std::is_floating_point_v<Acc>;
  static Acc identity() {
    if constexpr (kFloat) {
      return kMax ? -std::numeric_limits<Acc>::infinity() : std::numeric_limits<Acc>::infinity();
    } else {
      return kMax ? std::numeric_limits<Acc>::lowest() : std::numeric_limits<Acc>::max();
    }
  }
  static Acc lift(T v) { return static_cast<Acc>(v); }
  /** A NaN in `b` replaces `a`; a NaN in `a` stays (no comparison with it holds). Branch-free
   *  so the vertical path vectorizes. */
  static Acc combine(Acc a, Acc b) {
    if constexpr (kMax) {
      return (b != b || b > a) ? b : a;
    } else {
      return (b != b || b < a) ? b : a;
    }
  }
  static Acc row(const T* p, int64_t stride, int64_t n) {
    // Independent lanes of branch-free combines vectorize (compare, or, blend).
    Acc m[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) m[l] = identity();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) m[l] = combine(m[l], lift(p[(i + l) * stride]));
    }
    Acc r = identity();
    for (; i < n; ++i) r = combine(r, lift(p[i * stride]));
    for (int64_t l = 0; l < kLanes; ++l) r = combine(r, m[l]);
    return r;
  }
  static Out finish(Acc a) { return T(a); }
};

/** all (kAll) or any: bool output, any input dtype. */
template <typename T, bool kAll>
struct LogicalOp {
  using Acc = bool;
  using Out = bool;
  static bool identity() { return kAll; }
  static bool lift(T v) { return static_cast<Compute<T>>(v) != Compute<T>(0); }
  static bool combine(bool a, bool b) { return kAll ? (a && b) : (a || b); }
  static bool row(const T* p, int64_t stride, int64_t n) {
    for (int64_t b = 0; b < n; b += kLeaf) {
      const int64_t e = std::min(n, b + kLeaf);
      bool acc = kAll;
      for (int64_t i = b; i < e; ++i) acc = combine(acc, lift(p[i * stride]));
      if (acc != kAll) return acc;  // decided
    }
    return kAll;
  }
  static bool finish(bool a) { return a; }
};

// ---- the driver -------------------------------------------------------------------------------

/** Reduces elements [begin, end) of the inner space (row-major order) starting at `base`. */
template <typename R, typename T>
typename R::Acc reduce_range(const T* base, const Dims& in, int64_t begin, int64_t end) {
  typename R::Acc acc = R::identity();
  const int64_t row = in.size[0];
  Cursor c(in, 1, begin / row);
  int64_t col = begin % row;
  for (int64_t pos = begin; pos < end;) {
    const int64_t n = std::min(row - col, end - pos);
    acc = R::combine(acc, R::row(base + c.ox + col * in.xs[0], in.xs[0], n));
    pos += n;
    col = 0;
    c.next(in, 1);
  }
  return acc;
}

/** Outputs [begin, end): one reduction each. */
template <typename R, typename T>
void reduce_outputs(const T* x, typename R::Out* y, const Geometry& g, int64_t begin, int64_t end) {
  Cursor c(g.outer, 0, begin);
  for (int64_t o = begin; o < end; ++o) {
    y[c.oy] = R::finish(reduce_range<R>(x + c.ox, g.inner, 0, g.n_red));
    c.next(g.outer, 0);
  }
}

// Note [Vertical reductions]
// When the reduced dims are strided and the innermost kept dim is contiguous in the input
// (sum over dim 0 of a row-major matrix), reducing one output at a time walks memory with a
// large stride. Instead a block of up to kMaxBlock adjacent outputs keeps its accumulators in an
// array and every reduced position adds one contiguous run of inputs into it, which
// vectorizes and streams through memory once.
constexpr int64_t kMaxBlock = 2048;

template <typename R, typename T>
void reduce_vertical_block(const T* x, typename R::Out* y, const Geometry& g, int64_t task,
                           int64_t blocks, int64_t width) {
  const int64_t m0 = g.outer.size[0];
  const int64_t j0 = (task % blocks) * width;
  const int64_t m = std::min(width, m0 - j0);
  const Cursor oc(g.outer, 1, task / blocks);
  const T* base = x + oc.ox + j0;  // outer.xs[0] == 1
  typename R::Acc acc[kMaxBlock];
  for (int64_t j = 0; j < m; ++j) acc[j] = R::identity();
  const Dims& in = g.inner;
  Cursor c(in, 0, 0);
  for (int64_t r = 0; r < g.n_red; ++r) {
    const T* p = base + c.ox;
    for (int64_t j = 0; j < m; ++j) acc[j] = R::combine(acc[j], R::lift(p[j]));
    c.next(in, 0);
  }
  typename R::Out* out = y + oc.oy + j0 * g.outer.ys[0];
  for (int64_t j = 0; j < m; ++j) out[j * g.outer.ys[0]] = R::finish(acc[j]);
}

/** Reduces the trailing `k` dims of the call's input into its output. */
template <typename R, typename T>
void reduce_driver(const ember_kernel_call* call, int64_t k) {
  const ember_tensor& xd = call->inputs[0];
  const ember_tensor& yd = call->outputs[0];
  const Geometry g = make_geometry(xd, yd, k);
  const T* x = static_cast<const T*>(xd.data);
  auto* y = static_cast<typename R::Out*>(yd.data);
  if (g.n_out == 0) return;
  if (g.n_red == 0) {
    Cursor c(g.outer, 0, 0);
    for (int64_t o = 0; o < g.n_out; ++o, c.next(g.outer, 0)) y[c.oy] = R::finish(R::identity());
    return;
  }
  const int64_t work = g.n_out * g.n_red;
  const bool serial = run_serial(work);
  const int nt = serial ? 1 : omp_get_max_threads();

  // Few outputs, much work: split each reduction over the threads (partials combined in
  // thread order, so results do not depend on scheduling). The partials are a plain array, one
  // element per thread: a std::vector<bool> (all, any) packs them into shared words, and the
  // threads' concurrent writes lost each other's bits (all() of a long true tensor came out
  // false now and then on a 16-core machine).
  if (!serial && g.n_out < nt && g.n_red >= kGrainSize) {
    const std::unique_ptr<typename R::Acc[]> part(new typename R::Acc[static_cast<size_t>(nt)]);
    Cursor c(g.outer, 0, 0);
    for (int64_t o = 0; o < g.n_out; ++o, c.next(g.outer, 0)) {
      const T* base = x + c.ox;
#pragma omp parallel num_threads(nt)
      {
        const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
        const int64_t b = g.n_red * t / n, e = g.n_red * (t + 1) / n;
        part[static_cast<size_t>(t)] = reduce_range<R>(base, g.inner, b, e);
        if (t == 0) {
          for (int64_t u = n; u < nt; ++u) part[static_cast<size_t>(u)] = R::identity();
        }
      }
      typename R::Acc acc = R::identity();
      for (int u = 0; u < nt; ++u) acc = R::combine(acc, part[static_cast<size_t>(u)]);
      y[c.oy] = R::finish(acc);
    }
    return;
  }

  // See Note [Vertical reductions].
  const bool vertical =
      g.outer.xs[0] == 1 && g.inner.xs[0] != 1 && g.outer.size[0] >= 8 && g.n_red > 1;
  if (vertical) {
    // Wide blocks read long contiguous runs; narrower ones only to give every thread work.
    const int64_t m0 = g.outer.size[0], rows = g.n_out / m0;
    const int64_t per_thread = (m0 * rows + nt - 1) / nt;
    const int64_t width = std::clamp<int64_t>(per_thread, 64, kMaxBlock);
    const int64_t blocks = (m0 + width - 1) / width;
    const int64_t tasks = blocks * rows;
    if (serial || tasks == 1) {
      for (int64_t t = 0; t < tasks; ++t) reduce_vertical_block<R>(x, y, g, t, blocks, width);
    } else {
#pragma omp parallel for schedule(static)
      for (int64_t t = 0; t < tasks; ++t) reduce_vertical_block<R>(x, y, g, t, blocks, width);
    }
    return;
  }

  if (serial) {
    reduce_outputs<R>(x, y, g, 0, g.n_out);
    return;
  }
#pragma omp parallel
  {
    const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    const int64_t b = g.n_out * t / n, e = g.n_out * (t + 1) / n;
    if (b < e) reduce_outputs<R>(x, y, g, b, e);
  }
}

/** The reduction of op A (attributes A, ops.def's name) dispatched on the input dtype;
 *  `supported(tag)` is a bool_constant: is T handled? */
template <typename A, template <typename> class Op, typename Pred>
int32_t reduce(const ember_kernel_call* call, Pred supported) {
  const char* name = ops::kInfo[A::kOp].name;
  if (call->num_inputs != 1 || call->num_outputs != 1) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: expects 1 input and 1 output", name);
  }
  int32_t status = EMBER_OK;
  const bool known = sdk::visit_dtype(call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (decltype(supported(tag))::value) {
      reduce_driver<Op<T>, T>(call, sdk::attrs<A>(call).reduced_dims);
    } else {
      status = sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: dtype not supported", name);
    }
  });
  return known ? status : sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: unknown dtype", name);
}

template <typename T>
using AmaxOp = ExtremumOp<T, true>;
template <typename T>
using AminOp = ExtremumOp<T, false>;
template <typename T>
using AllOp = LogicalOp<T, true>;
template <typename T>
using AnyOp = LogicalOp<T, false>;

constexpr auto kNotBool = [](auto tag) {
  return std::bool_constant<!std::is_same_v<typename decltype(tag)::type, bool>>{};
};
constexpr auto kEvery = [](auto) { return std::true_type{}; };

// ---- arg reductions ---------------------------------------------------------------------------

/** Index of the first largest (kMax) or smallest element of a strided row; NaN wins. */
template <typename T, bool kMax>
int64_t arg_row(const T* p, int64_t stride, int64_t n, Compute<T>* value) {
  using C = Compute<T>;
  C best = static_cast<C>(p[0]);
  int64_t bi = 0;
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(best)) {
      *value = best;
      return 0;
    }
  }
  for (int64_t i = 1; i < n; ++i) {
    const C v = static_cast<C>(p[i * stride]);
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(v)) {
        *value = v;
        return i;
      }
    }
    if (kMax ? v > best : v < best) {
      best = v;
      bi = i;
    }
  }
  *value = best;
  return bi;
}

/** argmax/argmin (outputs {indices}) or max_dim/min_dim (outputs {values, indices}): op A. */
template <typename A, bool kMax, bool kValues>
int32_t arg_reduce(const ember_kernel_call* call) {
  if (const int32_t st = sdk::check_arg_reduce<A, kValues>(call); st != EMBER_OK) return st;
  const char* name = ops::kInfo[A::kOp].name;
  const ember_tensor& xd = call->inputs[0];
  const ember_tensor& id = call->outputs[kValues ? 1 : 0];
  const Geometry g = make_geometry(xd, id, 1);
  if (g.n_out == 0) return EMBER_OK;
  if (g.n_red == 0) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: cannot reduce over a zero-size dim", name);
  }
  const int64_t n = xd.sizes[xd.ndim - 1];
  const int64_t s = xd.strides[xd.ndim - 1];
  int64_t* idx = static_cast<int64_t*>(id.data);
  const bool known = sdk::visit_dtype(xd.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(xd.data);
    T* vals = kValues ? static_cast<T*>(call->outputs[0].data) : nullptr;
    auto run = [&](int64_t b, int64_t e) {
      Cursor c(g.outer, 0, b);
      for (int64_t o = b; o < e; ++o) {
        Compute<T> v;
        idx[c.oy] = arg_row<T, kMax>(x + c.ox, s, n, &v);
        // Values share the indices' contiguous layout.
        if constexpr (kValues) vals[c.oy] = T(v);
        c.next(g.outer, 0);
      }
    };
    if (run_serial(g.n_out * n)) {
      run(0, g.n_out);
    } else {
#pragma omp parallel
      {
        const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t b = g.n_out * t / nt, e = g.n_out * (t + 1) / nt;
        if (b < e) run(b, e);
      }
    }
  });
  return known ? EMBER_OK : sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: unknown dtype", name);
}

// ---- cumsum, cumprod -------------------------------------------------------------------------

// The running sum (kProduct false) or product along the last dim: a double accumulator for
// floating dtypes rounded at every output, wrapping int64 for integers.
template <typename T, bool kProduct>
void cumulative_typed(const ember_tensor& xd, const ember_tensor& yd) {
  using Acc = std::conditional_t<sdk::kIsFloating<T>, double, int64_t>;
  const int nd = xd.ndim;
  const int64_t n = nd == 0 ? 1 : xd.sizes[nd - 1];
  const int64_t xs = nd == 0 ? 1 : xd.strides[nd - 1];
  const int64_t ys = nd == 0 ? 1 : yd.strides[nd - 1];
  Dims outer;
  int64_t rows = 1;
  for (int d = nd - 2; d >= 0; --d) {
    rows *= xd.sizes[d];
    outer.push(xd.sizes[d], xd.strides[d], yd.strides[d]);
  }
  outer.finish();
  if (rows == 0 || n == 0) return;
  const T* x = static_cast<const T*>(xd.data);
  T* y = static_cast<T*>(yd.data);
  auto run = [&](int64_t b, int64_t e) {
    Cursor c(outer, 0, b);
    for (int64_t r = b; r < e; ++r) {
      const T* p = x + c.ox;
      T* q = y + c.oy;
      Acc acc = kProduct ? 1 : 0;
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (sdk::kIsFloating<T>) {
          const double v = static_cast<double>(static_cast<Compute<T>>(p[i * xs]));
          acc = kProduct ? acc * v : acc + v;
          if constexpr (sdk::kIsHalf<T>) {
            q[i * ys] = T(static_cast<float>(acc));
          } else {
            q[i * ys] = static_cast<T>(acc);
          }
        } else {
          const auto v = static_cast<uint64_t>(static_cast<int64_t>(p[i * xs]));
          acc = static_cast<Acc>(kProduct ? static_cast<uint64_t>(acc) * v
                                          : static_cast<uint64_t>(acc) + v);
          q[i * ys] = static_cast<T>(acc);
        }
      }
      c.next(outer, 0);
    }
  };
  if (run_serial(rows * n)) {
    run(0, rows);
    return;
  }
#pragma omp parallel
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t b = rows * t / nt, e = rows * (t + 1) / nt;
    if (b < e) run(b, e);
  }
}

}  // namespace

EMBER_KERNEL(sum) {
  return reduce<attrs::sum, SumOp>(call, kNotBool);
}
EMBER_KERNEL(prod) {
  return reduce<attrs::prod, ProdOp>(call, kNotBool);
}
EMBER_KERNEL(amax) {
  return reduce<attrs::amax, AmaxOp>(call, kEvery);
}
EMBER_KERNEL(amin) {
  return reduce<attrs::amin, AminOp>(call, kEvery);
}
EMBER_KERNEL(all) {
  return reduce<attrs::all, AllOp>(call, kEvery);
}
EMBER_KERNEL(any) {
  return reduce<attrs::any, AnyOp>(call, kEvery);
}
EMBER_KERNEL(argmax) {
  return arg_reduce<attrs::argmax, true, false>(call);
}
EMBER_KERNEL(argmin) {
  return arg_reduce<attrs::argmin, false, false>(call);
}
EMBER_KERNEL(max_dim) {
  return arg_reduce<attrs::max_dim, true, true>(call);
}
EMBER_KERNEL(min_dim) {
  return arg_reduce<attrs::min_dim, false, true>(call);
}

namespace {
template <bool kProduct>
int32_t cumulative(const ember_kernel_call* call, const char* name) {
  if (call->num_inputs != 1 || call->num_outputs != 1) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: expects 1 input and 1 output", name);
  }
  int32_t status = EMBER_OK;
  const bool known = sdk::visit_dtype(call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      cumulative_typed<T, kProduct>(call->inputs[0], call->outputs[0]);
    } else {
      status = sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: bool input (convert first)", name);
    }
  });
  return known ? status : sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: unknown dtype", name);
}
}  // namespace

EMBER_KERNEL(cumsum) {
  return cumulative<false>(call, "cumsum");
}
EMBER_KERNEL(cumprod) {
  return cumulative<true>(call, "cumprod");
}

}  // namespace ember::cpu
