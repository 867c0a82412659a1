// Reference normalisation kernels (contract in core/ops/norm.cpp); dense inputs, statistics in
// double with two passes (the mean, then the squared deviations), variance biased.
//  batch_norm           x [N, C, S]; attributes training, eps.
//                       training: inputs {x, w, b}, outputs {y, mean, var} (batch statistics);
//                       eval: inputs {x, w, b, running_mean, running_var}, outputs {y}.
//  batch_norm_backward  inputs {dy, x, w, mean, var}, outputs {dx, dw, db}; training, eps.
//  layer_norm / group_norm  x as rows [R, K * S]; attributes groups (G), group_size (K),
//                       spatial (S), eps; row r uses
//                       weight and bias entries (r % G) * K + k for its k-th group of S
//                       elements; outputs {y, mean[R], rstd[R]}.
//  *_backward           inputs {dy, x, w, mean, rstd}, outputs {dx, dw[G*K], db[G*K]}.
#include <cmath>
#include <vector>

#include "backends/reference/ops/ops.h"
#include "backends/reference/walk.h"
#include "ember/plugin_sdk_norm.hpp"

namespace ember::reference {
namespace {

int32_t bad(const ember_kernel_call* call, const char* name) {
  return sdk::fail(call, EMBER_ERR_INVALID, "%s: bad arguments (%d inputs, %d outputs, %d ints)",
                   name, call->num_inputs, call->num_outputs, call->num_ints);
}

/** Element i of a dense input / output as double. */
template <typename T>
double in(const ember_kernel_call* call, int i, int64_t e) {
  return to_double(sdk::data<const T>(call->inputs[i])[e]);
}
template <typename T>
void out(const ember_kernel_call* call, int i, int64_t e, double v) {
  sdk::data<T>(call->outputs[i])[e] = from_double<T>(v);
}

template <typename T>
void bn_forward(const ember_kernel_call* call, int64_t N, int64_t C, int64_t S, bool training,
                double eps) {
  const double m = static_cast<double>(N * S);
  for (int64_t c = 0; c < C; ++c) {
    auto x_at = [&](int64_t n, int64_t s) { return (n * C + c) * S + s; };
    double mu, var;
    if (training) {
      double sum = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t s = 0; s < S; ++s) sum += in<T>(call, 0, x_at(n, s));
      mu = sum / m;
      double sq = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t s = 0; s < S; ++s) sq += std::pow(in<T>(call, 0, x_at(n, s)) - mu, 2);
      var = sq / m;
      out<T>(call, 1, c, mu);
      out<T>(call, 2, c, var);
    } else {
      mu = in<T>(call, 3, c);
      var = in<T>(call, 4, c);
    }
    const double invstd = 1.0 / std::sqrt(var + eps);
    const double w = in<T>(call, 1, c), b = in<T>(call, 2, c);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s) {
        out<T>(call, 0, x_at(n, s), (in<T>(call, 0, x_at(n, s)) - mu) * invstd * w + b);
      }
  }
}

// xhat = (x - mean) * invstd; dw = sum(dy * xhat), db = sum(dy);
// training: dx = w * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)); eval: dx = w * invstd * dy.
template <typename T>
void bn_backward(const ember_kernel_call* call, int64_t N, int64_t C, int64_t S, bool training,
                 double eps) {
  const double m = static_cast<double>(N * S);
  for (int64_t c = 0; c < C; ++c) {
    auto at_ = [&](int64_t n, int64_t s) { return (n * C + c) * S + s; };
    const double mu = in<T>(call, 3, c);
    const double invstd = 1.0 / std::sqrt(in<T>(call, 4, c) + eps);
    const double w = in<T>(call, 2, c);
    double s_dy = 0, s_dy_xhat = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s) {
        const double dy = in<T>(call, 0, at_(n, s));
        s_dy += dy;
        s_dy_xhat += dy * (in<T>(call, 1, at_(n, s)) - mu) * invstd;
      }
    out<T>(call, 1, c, s_dy_xhat);
    out<T>(call, 2, c, s_dy);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s) {
        const double dy = in<T>(call, 0, at_(n, s));
        const double xhat = (in<T>(call, 1, at_(n, s)) - mu) * invstd;
        const double dx =
            training ? w * invstd * (dy - s_dy / m - xhat * s_dy_xhat / m) : w * invstd * dy;
        out<T>(call, 0, at_(n, s), dx);
      }
  }
}

template <typename T>
void rows_forward(const ember_kernel_call* call, int64_t R, int64_t G, int64_t K, int64_t S,
                  double eps) {
  const int64_t D = K * S;
  for (int64_t r = 0; r < R; ++r) {
    double sum = 0;
    for (int64_t e = 0; e < D; ++e) sum += in<T>(call, 0, r * D + e);
    const double mu = sum / static_cast<double>(D);
    double sq = 0;
    for (int64_t e = 0; e < D; ++e) sq += std::pow(in<T>(call, 0, r * D + e) - mu, 2);
    const double invstd = 1.0 / std::sqrt(sq / static_cast<double>(D) + eps);
    out<T>(call, 1, r, mu);
    out<T>(call, 2, r, invstd);
    for (int64_t k = 0; k < K; ++k) {
      const int64_t p = (r % G) * K + k;
      const double w = in<T>(call, 1, p), b = in<T>(call, 2, p);
      for (int64_t s = 0; s < S; ++s) {
        const int64_t e = r * D + k * S + s;
        out<T>(call, 0, e, (in<T>(call, 0, e) - mu) * invstd * w + b);
      }
    }
  }
}

// g = dy * w, xhat = (x - mean) * rstd; dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) per
// row; dw[p] = sum(dy * xhat), db[p] = sum(dy) over every row and element using entry p.
template <typename T>
void rows_backward(const ember_kernel_call* call, int64_t R, int64_t G, int64_t K, int64_t S) {
  const int64_t D = K * S, P = G * K;
  std::vector<double> dw(static_cast<size_t>(P), 0.0), db(static_cast<size_t>(P), 0.0);
  for (int64_t r = 0; r < R; ++r) {
    const double mu = in<T>(call, 3, r), rstd = in<T>(call, 4, r);
    auto xhat = [&](int64_t e) { return (in<T>(call, 1, e) - mu) * rstd; };
    auto g = [&](int64_t e, int64_t p) { return in<T>(call, 0, e) * in<T>(call, 2, p); };
    double s_g = 0, s_g_xhat = 0;
    for (int64_t k = 0; k < K; ++k) {
      const int64_t p = (r % G) * K + k;
      for (int64_t s = 0; s < S; ++s) {
        const int64_t e = r * D + k * S + s;
        s_g += g(e, p);
        s_g_xhat += g(e, p) * xhat(e);
        dw[static_cast<size_t>(p)] += in<T>(call, 0, e) * xhat(e);
        db[static_cast<size_t>(p)] += in<T>(call, 0, e);
      }
    }
    const double mean_g = s_g / static_cast<double>(D),
                 mean_g_xhat = s_g_xhat / static_cast<double>(D);
    for (int64_t k = 0; k < K; ++k) {
      const int64_t p = (r % G) * K + k;
      for (int64_t s = 0; s < S; ++s) {
        const int64_t e = r * D + k * S + s;
        out<T>(call, 0, e, rstd * (g(e, p) - mean_g - xhat(e) * mean_g_xhat));
      }
    }
  }
  for (int64_t p = 0; p < P; ++p) {
    out<T>(call, 1, p, dw[static_cast<size_t>(p)]);
    out<T>(call, 2, p, db[static_cast<size_t>(p)]);
  }
}

template <typename A, bool kBackward>
int32_t batch_norm_kernel(const ember_kernel_call* call) {
  const char* name = ops::kInfo[A::kOp].name;
  if (call->num_inputs < 3 || !sdk::all_dense(call)) return bad(call, name);
  const auto a = sdk::attrs<A>(call);
  const bool training = a.training != 0;
  const ember_tensor& x = call->inputs[kBackward ? 1 : 0];
  if (!sdk::batch_norm_arity_ok(call, kBackward, training)) return bad(call, name);
  return visit_floating(call, x.dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kBackward) {
      bn_backward<T>(call, x.sizes[0], x.sizes[1], x.sizes[2], training, a.eps);
    } else {
      bn_forward<T>(call, x.sizes[0], x.sizes[1], x.sizes[2], training, a.eps);
    }
  });
}

template <typename A, bool kBackward>
int32_t rows_kernel(const ember_kernel_call* call) {
  const char* name = ops::kInfo[A::kOp].name;
  const auto a = sdk::attrs<A>(call);
  const int64_t G = a.groups, K = a.group_size, S = a.spatial;
  const int64_t R = sdk::norm_rows(call, kBackward, G, K, S);
  if (R < 0) return bad(call, name);
  const ember_tensor& x = call->inputs[kBackward ? 1 : 0];
  return visit_floating(call, x.dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kBackward) {
      rows_backward<T>(call, R, G, K, S);
    } else {
      rows_forward<T>(call, R, G, K, S, a.eps);
    }
  });
}

}  // namespace

int32_t batch_norm(const ember_kernel_call* call) {
  return batch_norm_kernel<attrs::batch_norm, false>(call);
}
int32_t batch_norm_backward(const ember_kernel_call* call) {
  return batch_norm_kernel<attrs::batch_norm_backward, true>(call);
}
int32_t layer_norm(const ember_kernel_call* call) {
  return rows_kernel<attrs::layer_norm, false>(call);
}
int32_t layer_norm_backward(const ember_kernel_call* call) {
  return rows_kernel<attrs::layer_norm_backward, true>(call);
}
int32_t group_norm(const ember_kernel_call* call) {
  return rows_kernel<attrs::group_norm, false>(call);
}
int32_t group_norm_backward(const ember_kernel_call* call) {
  return rows_kernel<attrs::group_norm_backward, true>(call);
}

}  // namespace ember::reference
