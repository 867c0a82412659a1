// CPU index kernels: index_select, gather, scatter, scatter_add, count_nonzero, nonzero.
// Contracts are documented in core/ops/index.cpp. Indices are validated in a first pass, so a
// bad index fails the call before anything is written.
#include <omp.h>

#include <atomic>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backends/cpu/loops.h"
#include "backends/cpu/ops/ops.h"

namespace ember::cpu {
namespace {

using sdk::Compute;
using sdk::TypeTag;

using sdk::itemsize;

// A descriptor with its own sizes and strides, for restrided views made inside a kernel.
struct OwnedDesc {
  int64_t sizes[EMBER_MAX_DIMS];
  int64_t strides[EMBER_MAX_DIMS];
  ember_tensor t;
  OwnedDesc(const ember_tensor& like, void* data, int32_t dtype) : t(like) {
    t.data = data;
    t.dtype = dtype;
    t.sizes = sizes;
    t.strides = strides;
  }
};

// Calls fn(TypeTag<U>{}) with an unsigned integer type of `bytes` bytes: index kernels that
// only move elements do not care what the bits mean.
template <typename Fn>
void visit_size(size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 1:
      fn(TypeTag<uint8_t>{});
      break;
    case 2:
      fn(TypeTag<uint16_t>{});
      break;
    case 4:
      fn(TypeTag<uint32_t>{});
      break;
    default:
      fn(TypeTag<uint64_t>{});
      break;
  }
}

// Runs fn(chunk_begin, chunk_end) over [0, n) in fixed chunks, in parallel when large; the
// chunk boundaries depend only on n and the thread count, so results are deterministic.
int64_t num_chunks(int64_t n) {
  if (n < kGrainSize || omp_in_parallel()) return 1;
  return std::max(1, omp_get_max_threads());
}

template <typename Fn>
void for_chunks(int64_t n, int64_t chunks, Fn&& fn) {
  if (chunks == 1) {
    fn(int64_t{0}, int64_t{0}, n);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) fn(c, n * c / chunks, n * (c + 1) / chunks);
}

// Checks every element of an int64 index tensor lies in [0, limit): EMBER_ERR_INDEX names the
// first bad value found (the core raises IndexError), EMBER_ERR_INVALID a wrong dtype.
int32_t check_indices(const ember_kernel_call* call, const ember_tensor& index, int64_t limit,
                      int64_t dim) {
  if (index.dtype != EMBER_I64) {
    return sdk::fail(call, EMBER_ERR_INVALID, "index must be int64: got dtype %d", index.dtype);
  }
  if (index.ndim > EMBER_MAX_DIMS) {
    return sdk::fail(call, EMBER_ERR_UNSUPPORTED, "at most %d dims: got %d", EMBER_MAX_DIMS,
                     index.ndim);
  }
  const ember_tensor* ops[1] = {&index};
  StridedIter<1> it(ops);
  std::atomic<bool> found{false};
  int64_t bad = 0;
  it.run([&found, &bad, limit](const std::array<char*, 1>& p, const std::array<int64_t, 1>& s,
                               int64_t n) {
    for (int64_t k = 0; k < n; ++k) {
      const int64_t v = *reinterpret_cast<const int64_t*>(p[0] + k * s[0]);
      if (v < 0 || v >= limit) {
        bool expected = false;
        if (found.compare_exchange_strong(expected, true)) bad = v;
        return;
      }
    }
  });
  if (found.load()) {
    return sdk::fail(call, EMBER_ERR_INDEX, "index %lld is out of range for dim %lld of size %lld",
                     static_cast<long long>(bad), static_cast<long long>(dim),
                     static_cast<long long>(limit));
  }
  return EMBER_OK;
}

// y[...] = x_base[index[...] * step] over y's shape: the shared loop of index_select and gather.
// `xv` is x restrided to y's shape with stride 0 along dim, `iv` the index over y's shape.
void gather_loop(const ember_tensor& y, const ember_tensor& xv, const ember_tensor& iv,
                 int64_t step_bytes) {
  const ember_tensor* ops[3] = {&y, &xv, &iv};
  StridedIter<3> it(ops);
  visit_size(itemsize(y.dtype), [&](auto tag) {
    using U = typename decltype(tag)::type;
    it.run([step_bytes](const std::array<char*, 3>& p, const std::array<int64_t, 3>& s, int64_t n) {
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = *reinterpret_cast<const int64_t*>(p[2] + k * s[2]);
        U v;
        std::memcpy(&v, p[1] + k * s[1] + i * step_bytes, sizeof(U));
        std::memcpy(p[0] + k * s[0], &v, sizeof(U));
      }
    });
  });
}

// Offset (in elements) of row `row` of `t` when iterating all dims but `skip` in row-major order.
int64_t row_offset(const ember_tensor& t, const int64_t* sizes, int32_t ndim, int32_t skip,
                   int64_t row) {
  int64_t off = 0;
  for (int32_t d = ndim - 1; d >= 0; --d) {
    if (d == skip) continue;
    off += (row % sizes[d]) * t.strides[d];
    row /= sizes[d];
  }
  return off;
}

// scatter (kAdd false) and scatter_add along dim `d`.
template <bool kAdd>
int32_t scatter_kernel(const ember_kernel_call* call, int32_t d) {
  const ember_tensor& index = call->inputs[0];
  const ember_tensor& src = call->inputs[1];
  const ember_tensor& y = call->outputs[0];
  if (const int32_t st = check_indices(call, index, y.sizes[d], d); st != EMBER_OK) return st;
  const int64_t len = index.sizes[d];
  const int64_t total = sdk::numel(index);
  if (total == 0) return EMBER_OK;
  const int64_t rows = total / len;
  // Note [Scatter rows never collide]: a row is one position of every dim but `dim`; two
  // rows write to y elements that differ outside `dim`, so rows run in parallel without races,
  // while repeated indices inside one row accumulate in order on one thread.
  const int64_t chunks = std::min(num_chunks(total), rows);
  bool ok = sdk::visit_dtype(y.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* yp = sdk::data<T>(y);
    const T* sp = sdk::data<const T>(src);
    const int64_t* ip = sdk::data<const int64_t>(index);
    const int64_t ys = y.strides[d], ss = src.strides[d], is = index.strides[d];
    for_chunks(rows, chunks, [&](int64_t, int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        T* yr = yp + row_offset(y, index.sizes, index.ndim, d, r);
        const T* sr = sp + row_offset(src, index.sizes, index.ndim, d, r);
        const int64_t* ir = ip + row_offset(index, index.sizes, index.ndim, d, r);
        for (int64_t j = 0; j < len; ++j) {
          T& dst = yr[ir[j * is] * ys];
          const T v = sr[j * ss];
          if constexpr (!kAdd) {
            dst = v;
          } else if constexpr (std::is_same_v<T, bool>) {
            dst = dst || v;
          } else {
            using C = Compute<T>;
            dst = T(static_cast<C>(static_cast<C>(dst) + static_cast<C>(v)));
          }
        }
      }
    });
  });
  return ok ? EMBER_OK : sdk::fail(call, EMBER_ERR_UNSUPPORTED, "unknown dtype %d", y.dtype);
}

template <typename T>
bool truthy(T v) {
  return static_cast<Compute<T>>(v) != Compute<T>(0);
}

// Walks elements [b, e) of t in row-major order, calling fn(offset, coords).
template <typename Fn>
void walk(const ember_tensor& t, int64_t b, int64_t e, Fn&& fn) {
  const int32_t nd = t.ndim;
  int64_t coord[EMBER_MAX_DIMS] = {0};
  int64_t off = 0, rem = b;
  for (int32_t d = nd - 1; d >= 0; --d) {
    coord[d] = rem % t.sizes[d];
    rem /= t.sizes[d];
    off += coord[d] * t.strides[d];
  }
  for (int64_t i = b; i < e; ++i) {
    fn(off, coord);
    for (int32_t d = nd - 1; d >= 0; --d) {
      off += t.strides[d];
      if (++coord[d] < t.sizes[d]) break;
      off -= coord[d] * t.strides[d];
      coord[d] = 0;
    }
  }
}

}  // namespace

EMBER_KERNEL(index_select) {
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& index = call->inputs[1];
  const ember_tensor& y = call->outputs[0];
  const auto d = static_cast<int32_t>(sdk::attrs<attrs::index_select>(call).dim);
  if (y.ndim > EMBER_MAX_DIMS) {
    return sdk::fail(call, EMBER_ERR_UNSUPPORTED, "at most %d dims: got %d", EMBER_MAX_DIMS,
                     y.ndim);
  }
  if (index.ndim != 1) {
    return sdk::fail(call, EMBER_ERR_INVALID, "index must be 1-d: got %d dims", index.ndim);
  }
  if (const int32_t st = check_indices(call, index, x.sizes[d], d); st != EMBER_OK) return st;
  if (sdk::numel(y) == 0) return EMBER_OK;
  OwnedDesc xv(y, x.data, x.dtype), iv(y, index.data, EMBER_I64);
  for (int32_t i = 0; i < y.ndim; ++i) {
    xv.sizes[i] = iv.sizes[i] = y.sizes[i];
    xv.strides[i] = i == d ? 0 : x.strides[i];
    iv.strides[i] = i == d ? index.strides[0] : 0;
  }
  gather_loop(y, xv.t, iv.t, x.strides[d] * static_cast<int64_t>(itemsize(x.dtype)));
  return EMBER_OK;
}

EMBER_KERNEL(gather) {
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& index = call->inputs[1];
  const ember_tensor& y = call->outputs[0];
  const auto d = static_cast<int32_t>(sdk::attrs<attrs::gather>(call).dim);
  if (y.ndim > EMBER_MAX_DIMS) {
    return sdk::fail(call, EMBER_ERR_UNSUPPORTED, "at most %d dims: got %d", EMBER_MAX_DIMS,
                     y.ndim);
  }
  if (const int32_t st = check_indices(call, index, x.sizes[d], d); st != EMBER_OK) return st;
  if (sdk::numel(y) == 0) return EMBER_OK;
  OwnedDesc xv(y, x.data, x.dtype);
  for (int32_t i = 0; i < y.ndim; ++i) {
    xv.sizes[i] = y.sizes[i];
    xv.strides[i] = i == d ? 0 : x.strides[i];
  }
  gather_loop(y, xv.t, index, x.strides[d] * static_cast<int64_t>(itemsize(x.dtype)));
  return EMBER_OK;
}

EMBER_KERNEL(scatter) {
  return scatter_kernel<false>(call, static_cast<int32_t>(sdk::attrs<attrs::scatter>(call).dim));
}

EMBER_KERNEL(scatter_add) {
  return scatter_kernel<true>(call, static_cast<int32_t>(sdk::attrs<attrs::scatter_add>(call).dim));
}

EMBER_KERNEL(count_nonzero) {
  const ember_tensor& x = call->inputs[0];
  if (x.ndim > EMBER_MAX_DIMS) {
    return sdk::fail(call, EMBER_ERR_UNSUPPORTED, "at most %d dims: got %d", EMBER_MAX_DIMS,
                     x.ndim);
  }
  const ember_tensor* ops[1] = {&x};
  StridedIter<1> it(ops);
  const int64_t n = it.numel();
  std::atomic<int64_t> total{0};
  bool ok = sdk::visit_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_chunks(n, num_chunks(n), [&](int64_t, int64_t b, int64_t e) {
      int64_t count = 0;
      auto inner = [&count](const std::array<char*, 1>& p, const std::array<int64_t, 1>& s,
                            int64_t m) {
        for (int64_t k = 0; k < m; ++k) {
          count += truthy(*reinterpret_cast<const T*>(p[0] + k * s[0])) ? 1 : 0;
        }
      };
      it.run_range(b, e, inner);
      total += count;
    });
  });
  if (!ok) return sdk::fail(call, EMBER_ERR_UNSUPPORTED, "unknown dtype %d", x.dtype);
  *sdk::data<int64_t>(call->outputs[0]) = total.load();
  return EMBER_OK;
}

EMBER_KERNEL(nonzero) {
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& out = call->outputs[0];
  if (x.ndim > EMBER_MAX_DIMS) {
    return sdk::fail(call, EMBER_ERR_UNSUPPORTED, "at most %d dims: got %d", EMBER_MAX_DIMS,
                     x.ndim);
  }
  const int64_t n = sdk::numel(x);
  const int64_t chunks = num_chunks(n);
  // Two passes over fixed chunks: count per chunk, then each chunk writes its rows starting at
  // the prefix sum of the counts before it, which keeps row-major order.
  std::vector<int64_t> start(static_cast<size_t>(chunks) + 1, 0);
  int64_t* out_p = sdk::data<int64_t>(out);
  const int64_t os0 = out.strides[0], os1 = out.strides[1];
  bool ok = sdk::visit_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = sdk::data<const T>(x);
    for_chunks(n, chunks, [&](int64_t c, int64_t b, int64_t e) {
      int64_t count = 0;
      walk(x, b, e, [&](int64_t off, const int64_t*) { count += truthy(xp[off]) ? 1 : 0; });
      start[static_cast<size_t>(c) + 1] = count;
    });
    for (int64_t c = 0; c < chunks; ++c) start[c + 1] += start[c];
    if (start[chunks] != out.sizes[0]) return;
    for_chunks(n, chunks, [&](int64_t c, int64_t b, int64_t e) {
      int64_t row = start[c];
      walk(x, b, e, [&](int64_t off, const int64_t* coord) {
        if (!truthy(xp[off])) return;
        for (int32_t d = 0; d < x.ndim; ++d) out_p[row * os0 + d * os1] = coord[d];
        ++row;
      });
    });
  });
  if (!ok) return sdk::fail(call, EMBER_ERR_UNSUPPORTED, "unknown dtype %d", x.dtype);
  if (start[chunks] != out.sizes[0]) {
    return sdk::fail(call, EMBER_ERR_INVALID,
                     "output has %lld rows but the input has %lld non-zero elements",
                     static_cast<long long>(out.sizes[0]), static_cast<long long>(start[chunks]));
  }
  return EMBER_OK;
}

}  // namespace ember::cpu
