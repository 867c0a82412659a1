// The toy backend's kernels: one plain loop per op over the strided views the core hands over.
// Each op's contract (which input is which, what call->ints / call->floats hold, what the core
// has already done) is stated in Ember's core/ops/<family>.cpp and restated in the reference
// backend's loops, which these follow:
//   - elementwise inputs arrive broadcast to the output's shape (stride 0 where broadcast) and
//     in one dtype, so a kernel is one walk over the output's indices;
//   - reductions get the reduced dims moved last (ints[0] of them) and an output of the kept
//     dims; matmul gets its batch dims broadcast to the output's;
//   - any view may be non-contiguous (transposed, sliced, expanded) or hold zero elements.
// copy and fill move values of every dtype; the arithmetic takes the floating dtypes.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_binary_ops.hpp"
#include "ember/plugin_sdk_ops.hpp"
#include "kernels.h"

namespace toy {
namespace {

namespace sdk = ember::sdk;

// Note [float16 and bfloat16 too]
// float32 and float64 would do for the demo, but Ember's conformance case "copy" differentiates
// x.to(float16), so checking its gradient multiplies and sums float16 values on the device
// (without them `ember conformance` lists that dtype of the case as not claimed). The half types
// cost nothing here: like the reference backend, the loops compute them in float
// (sdk::Compute<T>) and accumulate sums and dot products in double.
/** The dtypes the arithmetic kernels take: float32, float64, float16, bfloat16. */
constexpr uint32_t kFloat = sdk::kFloatingMask;

/** Calls fn(idx) for every multi-index of `sizes` in row-major order (once for 0 dims, never
 *  when a size is 0). */
template <typename Fn>
void for_each_index(int32_t ndim, const int64_t* sizes, Fn&& fn) {
  for (int32_t d = 0; d < ndim; ++d) {
    if (sizes[d] == 0) return;
  }
  std::vector<int64_t> idx(static_cast<size_t>(ndim) + 1, 0);  // + 1: never empty
  while (true) {
    fn(static_cast<const int64_t*>(idx.data()));
    int32_t d = ndim - 1;
    for (; d >= 0 && ++idx[d] == sizes[d]; --d) idx[d] = 0;
    if (d < 0) return;
  }
}

/** The element of `t` at multi-index `idx`, through its strides (in elements). */
template <typename T>
T& at(const ember_tensor& t, const int64_t* idx) {
  int64_t offset = 0;
  for (int32_t d = 0; d < t.ndim; ++d) offset += idx[d] * t.strides[d];
  return static_cast<T*>(t.data)[offset];
}

/** outputs[0][i] = f(inputs[0][i], inputs[1][i], ...) for every index i of the output. */
template <typename Out, typename... In, typename F, size_t... I>
void map_impl(const ember_kernel_call* call, F f, std::index_sequence<I...>) {
  const ember_tensor& y = call->outputs[0];
  for_each_index(y.ndim, y.sizes,
                 [&](const int64_t* idx) { at<Out>(y, idx) = f(at<In>(call->inputs[I], idx)...); });
}
template <typename Out, typename... In, typename F>
void map(const ember_kernel_call* call, F f) {
  map_impl<Out, In...>(call, f, std::index_sequence_for<In...>{});
}

/** Runs fn(TypeTag<T>{}) for a dtype in kFloat; an error status for any other. The core puts the
 *  op's name and the dtype in front of the message. */
template <typename Fn>
int32_t floating(const ember_kernel_call* call, int32_t dtype, Fn&& fn) {
  const bool ok =
      sdk::itemsize(dtype) > 0 && (kFloat >> dtype & 1) && sdk::visit_dtype(dtype, [&](auto tag) {
        if constexpr (sdk::kIsFloating<typename decltype(tag)::type>) fn(tag);
      });
  return ok ? EMBER_OK
            : sdk::fail(call, EMBER_ERR_UNSUPPORTED,
                        "[toy] dtype not supported: got %s (the toy computes in floating "
                        "dtypes only)",
                        sdk::dtype_name(dtype));
}

/** y = f(x) elementwise, computed in sdk::Compute<T>. */
template <typename F>
int32_t unary(const ember_kernel_call* call, F f) {
  return floating(call, call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map<T, T>(call, [&](T x) { return T(f(static_cast<sdk::Compute<T>>(x))); });
  });
}

/** y = Op(a, b) elementwise (the SDK's definitions of add, sub, mul, div and relu_backward). */
template <typename Op>
int32_t binary(const ember_kernel_call* call) {
  return floating(call, call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = sdk::Compute<T>;
    map<T, T, T>(call, [](T a, T b) { return T(Op{}(static_cast<C>(a), static_cast<C>(b))); });
  });
}

/** Calls f(out, visit) for each output element `out` of a reduction of inputs[0] over its last
 *  ints[0] dims (the output holds the kept dims); visit(g) calls g(x) for each x reduced. */
template <typename T, typename F>
void reduce(const ember_kernel_call* call, F f) {
  const ember_tensor &x = call->inputs[0], &y = call->outputs[0];
  const int32_t kept = y.ndim, k = x.ndim - kept;
  std::vector<int64_t> full(static_cast<size_t>(x.ndim) + 1, 0);
  for_each_index(kept, x.sizes, [&](const int64_t* out_idx) {
    for (int32_t d = 0; d < kept; ++d) full[d] = out_idx[d];
    f(at<T>(y, out_idx), [&](auto g) {
      for_each_index(k, x.sizes + kept, [&](const int64_t* red_idx) {
        for (int32_t d = 0; d < k; ++d) full[kept + d] = red_idx[d];
        g(at<T>(x, full.data()));
      });
    });
  });
}

/** A value converted between dtypes as Ember converts scalars: to bool by != 0; floating to
 *  integer by truncation, with NaN, infinities and values outside int64 giving INT64_MIN
 *  (narrower integers keep its low bits); the half types through float. */
template <typename D, typename S>
D convert(S v) {
  using C = sdk::Compute<S>;
  const C x = static_cast<C>(v);
  if constexpr (std::is_same_v<D, bool>) {
    return x != C(0);
  } else if constexpr (sdk::kIsHalf<D>) {
    return D(static_cast<float>(x));
  } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<C>) {
    const bool fits = x >= C(-0x1p63) && x < C(0x1p63);  // false for NaN
    return static_cast<D>(fits ? static_cast<int64_t>(x) : std::numeric_limits<int64_t>::min());
  } else {
    return static_cast<D>(x);
  }
}

// ---- the kernels ------------------------------------------------------------------------------

// copy: inputs {src}, outputs {dst} of src's shape and any dtype: a change of layout, of dtype,
// or both.
int32_t copy(const ember_kernel_call* call) {
  const int32_t to = call->outputs[0].dtype;
  const bool ok = sdk::itemsize(to) > 0 && sdk::visit_dtype(call->inputs[0].dtype, [&](auto s) {
                    using S = typename decltype(s)::type;
                    sdk::visit_dtype(to, [&](auto d) {
                      using D = typename decltype(d)::type;
                      map<D, S>(call, [](S v) { return convert<D>(v); });
                    });
                  });
  return ok ? EMBER_OK
            : sdk::fail(call, EMBER_ERR_UNSUPPORTED, "[toy] unknown dtype: got %d to %d",
                        call->inputs[0].dtype, to);
}

// fill: outputs {dst}; floats[0] is the value for floating dtypes and bool (!= 0), ints[0] for
// integer dtypes.
int32_t fill(const ember_kernel_call* call) {
  const ember_tensor& y = call->outputs[0];
  const bool ok = sdk::visit_dtype(y.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T value = std::is_integral_v<T> && !std::is_same_v<T, bool> ? convert<T>(call->ints[0])
                                                                      : convert<T>(call->floats[0]);
    for_each_index(y.ndim, y.sizes, [&](const int64_t* idx) { at<T>(y, idx) = value; });
  });
  return ok ? EMBER_OK
            : sdk::fail(call, EMBER_ERR_UNSUPPORTED, "[toy] unknown dtype: got %d", y.dtype);
}

// Unary math; sign and relu keep a NaN (the only x with x != x) as it is.
#define TOY_UNARY(name, expr)                                    \
  int32_t name(const ember_kernel_call* c) {                     \
    return unary(c, [](auto x) -> decltype(x) { return expr; }); \
  }
TOY_UNARY(neg, -x)
TOY_UNARY(abs, x < 0 ? -x : x)
TOY_UNARY(sign, x != x ? x : decltype(x)((0 < x) - (x < 0)))
TOY_UNARY(relu, x > 0 || x != x ? x : 0)
TOY_UNARY(exp, std::exp(x))
TOY_UNARY(log, std::log(x))
#undef TOY_UNARY

// eq: inputs {a, b} of one dtype, a bool output.
int32_t eq(const ember_kernel_call* call) {
  return floating(call, call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = sdk::Compute<T>;
    map<bool, T, T>(call, [](T a, T b) { return static_cast<C>(a) == static_cast<C>(b); });
  });
}

// where: inputs {cond (bool), a, b}; keyed by a's dtype.
int32_t where(const ember_kernel_call* call) {
  return floating(call, call->inputs[1].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map<T, bool, T, T>(call, [](bool c, T a, T b) { return c ? a : b; });
  });
}

// sum: in double, rounded once (int64, which the core turns every integer dtype into, wraps).
int32_t sum(const ember_kernel_call* call) {
  if (call->inputs[0].dtype == EMBER_I64) {
    reduce<int64_t>(call, [](int64_t& out, auto visit) {
      uint64_t acc = 0;
      visit([&](int64_t v) { acc += static_cast<uint64_t>(v); });
      out = static_cast<int64_t>(acc);
    });
    return EMBER_OK;
  }
  return floating(call, call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = sdk::Compute<T>;
    reduce<T>(call, [](T& out, auto visit) {
      double acc = 0;
      visit([&](T v) { acc += static_cast<double>(static_cast<C>(v)); });
      out = T(static_cast<C>(acc));
    });
  });
}

// amax: the largest element, or the first NaN met (the core never reduces a zero-size dim).
int32_t amax(const ember_kernel_call* call) {
  return floating(call, call->inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = sdk::Compute<T>;
    reduce<T>(call, [](T& out, auto visit) {
      C best = -std::numeric_limits<C>::infinity();
      visit([&](T t) {
        const C v = static_cast<C>(t);
        if (best == best && (v > best || v != v)) best = v;
      });
      out = T(best);
    });
  });
}

// matmul: C[..., m, n] = sum_k A[..., m, k] B[..., k, n] in double. The core broadcast the batch
// dims, made 1-d operands 2-d and zero-fills C itself when K == 0.
int32_t matmul(const ember_kernel_call* call) {
  const ember_tensor &a = call->inputs[0], &b = call->inputs[1], &c = call->outputs[0];
  const int32_t nd = c.ndim;
  if (nd < 2 || a.ndim != nd || b.ndim != nd || a.dtype != c.dtype || b.dtype != c.dtype) {
    return sdk::fail(call, EMBER_ERR_INVALID,
                     "[toy] matmul operands need one rank >= 2 and one dtype: got %s %s x %s %s "
                     "-> %s %s",
                     sdk::dtype_name(a.dtype), sdk::sizes_str(a).c_str(), sdk::dtype_name(b.dtype),
                     sdk::sizes_str(b).c_str(), sdk::dtype_name(c.dtype),
                     sdk::sizes_str(c).c_str());
  }
  return floating(call, c.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = sdk::Compute<T>;
    std::vector<int64_t> ia(static_cast<size_t>(nd)), ib(static_cast<size_t>(nd));
    for_each_index(nd, c.sizes, [&](const int64_t* ic) {
      ia.assign(ic, ic + nd);  // A at (batch, m, k), B at (batch, k, n)
      ib.assign(ic, ic + nd);
      double acc = 0;
      for (int64_t k = 0; k < a.sizes[nd - 1]; ++k) {
        ia[nd - 1] = ib[nd - 2] = k;
        acc += static_cast<double>(static_cast<C>(at<T>(a, ia.data()))) *
               static_cast<double>(static_cast<C>(at<T>(b, ib.data())));
      }
      at<T>(c, ic) = T(static_cast<C>(acc));
    });
  });
}

}  // namespace

int32_t register_kernels(const ember_registrar_v1* reg, int32_t device) {
  using ember::ops::Id;
  using ember::sdk::register_kernel;
  // Each kernel goes in behind the SDK's boundary (sdk::guarded: an exception, such as a
  // std::bad_alloc from a loop's index vector, becomes a status), for the dtypes it takes.
  const int32_t statuses[] = {
      register_kernel<Id::copy, &copy>(reg, device, 0, sdk::kAllMask),
      register_kernel<Id::fill, &fill>(reg, device, 0, sdk::kAllMask),
      register_kernel<Id::add, &binary<sdk::AddOp>>(reg, device, 0, kFloat),
      register_kernel<Id::sub, &binary<sdk::SubOp>>(reg, device, 0, kFloat),
      register_kernel<Id::mul, &binary<sdk::MulOp>>(reg, device, 0, kFloat),
      register_kernel<Id::div, &binary<sdk::DivOp>>(reg, device, 0, kFloat),
      register_kernel<Id::relu_backward, &binary<sdk::ReluBackwardOp>>(reg, device, 0, kFloat),
      register_kernel<Id::neg, &neg>(reg, device, 0, kFloat),
      register_kernel<Id::abs, &abs>(reg, device, 0, kFloat),
      register_kernel<Id::sign, &sign>(reg, device, 0, kFloat),
      register_kernel<Id::relu, &relu>(reg, device, 0, kFloat),
      register_kernel<Id::exp, &exp>(reg, device, 0, kFloat),
      register_kernel<Id::log, &log>(reg, device, 0, kFloat),
      register_kernel<Id::eq, &eq>(reg, device, 0, kFloat),
      register_kernel<Id::where, &where>(reg, device, 0, kFloat),
      register_kernel<Id::sum, &sum>(reg, device, 0, kFloat | sdk::dtype_bit(EMBER_I64)),
      register_kernel<Id::amax, &amax>(reg, device, 0, kFloat),
      register_kernel<Id::matmul, &matmul>(reg, device, 0, kFloat),
  };
  for (const int32_t status : statuses) {
    if (status != EMBER_OK) return status;
  }
  return EMBER_OK;
}

}  // namespace toy
