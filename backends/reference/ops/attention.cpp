// Reference scaled_dot_product_attention and its backward (contract in core/ops/attention.cpp):
// the textbook formulas in double, one query row at a time with that row's scores held whole.
//  forward   inputs {q [B, L, E], k [B, S, E], v [B, S, Ev]} (+ {mask [B, L, S]}, any strides),
//            outputs {out [B, L, Ev], lse [B, L]}; attributes is_causal, scale.
//  backward  inputs {dout, q, k, v, out, lse} (+ {mask}), outputs {dq, dk, dv}.
#include <cmath>
#include <limits>
#include <vector>

#include "backends/reference/ops/ops.h"
#include "backends/reference/walk.h"

namespace ember::reference {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Sizes {
  int64_t B, L, S, E, Ev;
};

/** Input i's element at (b, r, c) of a [B, R, C] tensor, read through its strides. */
template <typename T>
double at(const ember_kernel_call* call, int i, int64_t b, int64_t r, int64_t c) {
  const ember_tensor& t = call->inputs[i];
  return to_double(sdk::data<const T>(
      t)[b * t.strides[0] + r * t.strides[1] + (t.ndim == 3 ? c * t.strides[2] : 0)]);
}

/** The scores of query row (b, i): scale * q_i . k_j + mask, -inf past the causal diagonal. */
template <typename T>
std::vector<double> scores(const ember_kernel_call* call, const Sizes& n, int first, int mask_in,
                           double scale, bool causal, int64_t b, int64_t i) {
  std::vector<double> s(static_cast<size_t>(n.S));
  for (int64_t j = 0; j < n.S; ++j) {
    double dot = 0;
    for (int64_t e = 0; e < n.E; ++e) {
      dot += at<T>(call, first, b, i, e) * at<T>(call, first + 1, b, j, e);
    }
    double x = dot * scale;
    if (call->num_inputs > mask_in) x += at<T>(call, mask_in, b, i, j);
    if (causal && j > i) x = kNegInf;
    s[static_cast<size_t>(j)] = x;
  }
  return s;
}

template <typename T>
void forward(const ember_kernel_call* call, const Sizes& n, double scale, bool causal) {
  T* out = sdk::data<T>(call->outputs[0]);
  T* lse = sdk::data<T>(call->outputs[1]);
  for (int64_t b = 0; b < n.B; ++b) {
    for (int64_t i = 0; i < n.L; ++i) {
      std::vector<double> s = scores<T>(call, n, 0, 3, scale, causal, b, i);
      double m = kNegInf;
      for (double x : s) m = std::max(m, x);
      double z = 0;
      if (m != kNegInf) {
        for (double& x : s) z += (x = std::exp(x - m));
      }
      for (int64_t c = 0; c < n.Ev; ++c) {
        double o = 0;
        if (z > 0) {
          for (int64_t j = 0; j < n.S; ++j)
            o += s[static_cast<size_t>(j)] * at<T>(call, 2, b, j, c);
          o /= z;
        }
        out[(b * n.L + i) * n.Ev + c] = from_double<T>(o);
      }
      lse[b * n.L + i] = from_double<T>(z > 0 ? m + std::log(z) : kNegInf);
    }
  }
}

template <typename T>
void backward(const ember_kernel_call* call, const Sizes& n, double scale, bool causal) {
  std::vector<double> dq(static_cast<size_t>(n.B * n.L * n.E), 0.0);
  std::vector<double> dk(static_cast<size_t>(n.B * n.S * n.E), 0.0);
  std::vector<double> dv(static_cast<size_t>(n.B * n.S * n.Ev), 0.0);
  for (int64_t b = 0; b < n.B; ++b) {
    for (int64_t i = 0; i < n.L; ++i) {
      const double lse = at<T>(call, 5, b, i, 0);
      if (lse == kNegInf) continue;  // no key: out is 0 whatever the inputs
      std::vector<double> p = scores<T>(call, n, 1, 6, scale, causal, b, i);
      double d = 0;
      for (int64_t c = 0; c < n.Ev; ++c) d += at<T>(call, 0, b, i, c) * at<T>(call, 4, b, i, c);
      for (int64_t j = 0; j < n.S; ++j) {
        const double w = std::exp(p[static_cast<size_t>(j)] - lse);
        double dp = 0;
        for (int64_t c = 0; c < n.Ev; ++c) {
          dp += at<T>(call, 0, b, i, c) * at<T>(call, 3, b, j, c);
          dv[static_cast<size_t>((b * n.S + j) * n.Ev + c)] += w * at<T>(call, 0, b, i, c);
        }
        const double ds = w * (dp - d) * scale;
        for (int64_t e = 0; e < n.E; ++e) {
          dq[static_cast<size_t>((b * n.L + i) * n.E + e)] += ds * at<T>(call, 2, b, j, e);
          dk[static_cast<size_t>((b * n.S + j) * n.E + e)] += ds * at<T>(call, 1, b, i, e);
        }
      }
    }
  }
  auto store = [&](int o, const std::vector<double>& g) {
    for (size_t e = 0; e < g.size(); ++e) sdk::data<T>(call->outputs[o])[e] = from_double<T>(g[e]);
  };
  store(0, dq);
  store(1, dk);
  store(2, dv);
}

/** Sizes from q, k, v at inputs first.. if every tensor has the contract's shape and is dense
 *  (the mask excepted); false otherwise. */
bool read_sizes(const ember_kernel_call* call, int first, int mask_in, Sizes* n) {
  const ember_tensor &q = call->inputs[first], &k = call->inputs[first + 1],
                     &v = call->inputs[first + 2];
  if (q.ndim != 3 || k.ndim != 3 || v.ndim != 3) return false;
  *n = {q.sizes[0], q.sizes[1], k.sizes[1], q.sizes[2], v.sizes[2]};
  if (k.sizes[0] != n->B || v.sizes[0] != n->B || k.sizes[2] != n->E || v.sizes[1] != n->S) {
    return false;
  }
  if (call->num_inputs > mask_in) {
    const ember_tensor& m = call->inputs[mask_in];
    if (m.ndim != 3 || m.sizes[0] != n->B || m.sizes[1] != n->L || m.sizes[2] != n->S) {
      return false;
    }
  }
  for (int i = 0; i < call->num_inputs; ++i) {
    if (call->inputs[i].dtype != q.dtype) return false;
    if (i != mask_in && !sdk::is_contiguous(call->inputs[i])) return false;
  }
  for (int i = 0; i < call->num_outputs; ++i) {
    if (!sdk::is_contiguous(call->outputs[i]) || call->outputs[i].dtype != q.dtype) return false;
  }
  return true;
}

}  // namespace

int32_t scaled_dot_product_attention(const ember_kernel_call* call) {
  const char* name = "scaled_dot_product_attention";
  Sizes n{};
  if (call->num_outputs != 2 || !read_sizes(call, 0, 3, &n)) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: bad arguments", name);
  }
  const auto a = sdk::attrs<attrs::scaled_dot_product_attention>(call);
  return visit_floating(call, call->inputs[0].dtype, name, [&](auto tag) {
    forward<typename decltype(tag)::type>(call, n, a.scale, a.is_causal != 0);
  });
}

int32_t scaled_dot_product_attention_backward(const ember_kernel_call* call) {
  const char* name = "scaled_dot_product_attention_backward";
  Sizes n{};
  if (call->num_outputs != 3 || !read_sizes(call, 1, 6, &n)) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: bad arguments", name);
  }
  const auto a = sdk::attrs<attrs::scaled_dot_product_attention_backward>(call);
  return visit_floating(call, call->inputs[1].dtype, name, [&](auto tag) {
    backward<typename decltype(tag)::type>(call, n, a.scale, a.is_causal != 0);
  });
}

}  // namespace ember::reference
