// Reference matmul, fused_linear and softmax. matmul: C[..., m, n] = sum_k A[..., m, k]
// B[..., k, n] with the batch dims already broadcast to C's by the core; every dot product is
// accumulated in double (int64 for integers, wrapping). fused_linear: y[m, n] = act(sum_k x[m, k]
// w[n, k] + b[n]), all in double, rounded once. softmax/log_softmax along `dim`: max-subtracted,
// the exponential sum in double.
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/reference/ops/ops.h"
#include "backends/reference/walk.h"

namespace ember::reference {

int32_t matmul(const ember_kernel_call* call) {
  const ember_tensor& a = call->inputs[0];
  const ember_tensor& b = call->inputs[1];
  const ember_tensor& c = call->outputs[0];
  if (c.ndim < 2 || a.ndim != c.ndim || b.ndim != c.ndim) {
    return sdk::fail(call, EMBER_ERR_INVALID, "matmul: operands of rank %d, %d and %d", a.ndim,
                     b.ndim, c.ndim);
  }
  if (a.dtype != c.dtype || b.dtype != c.dtype) {
    return sdk::fail(call, EMBER_ERR_INVALID, "matmul: mixed dtypes %d, %d -> %d", a.dtype, b.dtype,
                     c.dtype);
  }
  const int32_t nd = c.ndim;
  const int64_t k_size = a.sizes[nd - 1];
  return visit_numeric(call, c.dtype, "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<int64_t> ia(static_cast<size_t>(nd)), ib(static_cast<size_t>(nd));
    for_each_index(nd, c.sizes, [&](const int64_t* ic) {
      // A at (batch, m, k) and B at (batch, k, n), k walking the shared dim.
      for (int32_t d = 0; d < nd; ++d)
        ia[static_cast<size_t>(d)] = ib[static_cast<size_t>(d)] = ic[d];
      double facc = 0;
      int64_t iacc = 0;
      for (int64_t k = 0; k < k_size; ++k) {
        ia[static_cast<size_t>(nd - 1)] = k;
        ib[static_cast<size_t>(nd - 2)] = k;
        const T av = at<T>(a, ia.data()), bv = at<T>(b, ib.data());
        if constexpr (sdk::kIsFloating<T>) {
          facc += to_double(av) * to_double(bv);
        } else {
          iacc = static_cast<int64_t>(static_cast<uint64_t>(iacc) +
                                      static_cast<uint64_t>(static_cast<int64_t>(av)) *
                                          static_cast<uint64_t>(static_cast<int64_t>(bv)));
        }
      }
      if constexpr (sdk::kIsFloating<T>) {
        at<T>(c, ic) = from_double<T>(facc);
      } else {
        at<T>(c, ic) = static_cast<T>(iacc);
      }
    });
  });
}

int32_t fused_linear(const ember_kernel_call* call) {
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& w = call->inputs[1];
  const ember_tensor& y = call->outputs[0];
  const ember_tensor* b = call->num_inputs > 2 ? &call->inputs[2] : nullptr;
  const int64_t act = sdk::attrs<attrs::fused_linear>(call).activation;
  if (x.ndim != 2 || w.ndim != 2 || y.ndim != 2 || x.sizes[1] != w.sizes[1] ||
      y.sizes[0] != x.sizes[0] || y.sizes[1] != w.sizes[0] ||
      (b != nullptr && (b->ndim != 1 || b->sizes[0] != w.sizes[0])) || act < 0 || act > 3) {
    return sdk::fail(call, EMBER_ERR_INVALID, "fused_linear: bad operands or activation");
  }
  if (x.dtype != y.dtype || w.dtype != y.dtype || (b != nullptr && b->dtype != y.dtype)) {
    return sdk::fail(call, EMBER_ERR_INVALID, "fused_linear: mixed dtypes");
  }
  return visit_floating(call, y.dtype, "fused_linear", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t m = 0; m < y.sizes[0]; ++m) {
      for (int64_t n = 0; n < y.sizes[1]; ++n) {
        double v = b != nullptr ? to_double(at<T>(*b, &n)) : 0.0;
        for (int64_t k = 0; k < x.sizes[1]; ++k) {
          const int64_t ix[2] = {m, k}, iw[2] = {n, k};
          v += to_double(at<T>(x, ix)) * to_double(at<T>(w, iw));
        }
        if (act == 1) {
          v = v < 0.0 ? 0.0 : v;  // a NaN stays NaN
        } else if (act == 2) {
          v = 0.5 * v * (1.0 + std::erf(v * M_SQRT1_2));
        } else if (act == 3) {
          v = 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        }
        const int64_t iy[2] = {m, n};
        at<T>(y, iy) = from_double<T>(v);
      }
    }
  });
}

namespace {

/** softmax (kLog false) or log_softmax of x along `dim` into y (same shape). A NaN in a slice
 *  makes the whole slice NaN. */
template <typename A, bool kLog>
int32_t softmax_kernel(const ember_kernel_call* call) {
  const char* name = ops::kInfo[A::kOp].name;
  const int64_t dim = sdk::attrs<A>(call).dim;
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& y = call->outputs[0];
  if (x.ndim < 1 || dim < 0 || dim >= x.ndim || y.ndim != x.ndim || y.dtype != x.dtype) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: bad arguments (rank %d, dim %lld)", name, x.ndim,
                     static_cast<long long>(dim));
  }
  return visit_floating(call, x.dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t len = x.sizes[dim];
    // Walk every slice: all dims but `dim` (whose size is set to 1 for the walk).
    std::vector<int64_t> outer(x.sizes, x.sizes + x.ndim);
    outer[static_cast<size_t>(dim)] = 1;
    std::vector<int64_t> idx(static_cast<size_t>(x.ndim));
    for_each_index(x.ndim, outer.data(), [&](const int64_t* pos) {
      idx.assign(pos, pos + x.ndim);
      auto value = [&](int64_t l) {
        idx[static_cast<size_t>(dim)] = l;
        return to_double(at<T>(x, idx.data()));
      };
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t l = 0; l < len; ++l) {
        const double v = value(l);
        if (v > m || v != v) m = v;
      }
      double sum = 0;
      for (int64_t l = 0; l < len; ++l) sum += std::exp(value(l) - m);
      for (int64_t l = 0; l < len; ++l) {
        const double r = kLog ? value(l) - m - std::log(sum) : std::exp(value(l) - m) / sum;
        at<T>(y, idx.data()) = from_double<T>(r);  // idx[dim] == l after value(l)
      }
    });
  });
}

}  // namespace

int32_t softmax(const ember_kernel_call* call) {
  return softmax_kernel<attrs::softmax, false>(call);
}
int32_t log_softmax(const ember_kernel_call* call) {
  return softmax_kernel<attrs::log_softmax, true>(call);
}

}  // namespace ember::reference
