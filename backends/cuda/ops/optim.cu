// The optimizers' fused steps on the GPU (ember/ops.def: sgd_step, adam_step, rmsprop_step):
// one launch per parameter instead of about a dozen ops, each element's update computed as the
// optimizer's tensor-op rule computes it, product by product and sum by sum in the same order
// (Note [Optimizer steps through kernels] in api/optim/fused_step.h). Float32 and float64,
// dense tensors (the optimizers pass only those), one thread per element.
#include <cstdint>

#include "backends/cuda/ops/common.cuh"
#include "backends/cuda/ops/ops.h"

namespace ember::cuda {
namespace {

using namespace kern;

template <typename T>
__global__ void sgd_kernel(T* p, const T* g, T* buf, int64_t n, bool first, bool nesterov,
                           bool decay, T lr, T wd, T mom, T keep) {
  EMBER_GRID_STRIDE_LOOP(i, n) {
    const T d = decay ? g[i] + wd * p[i] : g[i];
    if (buf == nullptr) {
      p[i] -= lr * d;
      continue;
    }
    const T m = first ? d : mom * buf[i] + keep * d;
    buf[i] = m;
    p[i] -= lr * (nesterov ? d + mom * m : m);
  }
}

template <typename T>
__global__ void adam_kernel(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, T b1, T b2, T one_b1,
                            T one_b2, T l2, T shrink, T step, T bc2, T eps) {
  EMBER_GRID_STRIDE_LOOP(i, n) {
    const T gi = l2 != T(0) ? g[i] + l2 * p[i] : g[i];
    const T pi = p[i] * shrink;
    const T mi = b1 * m[i] + one_b1 * gi;
    T vi = b2 * v[i] + one_b2 * (gi * gi);
    m[i] = mi;
    v[i] = vi;
    if (vmax != nullptr) {  // maximum(): NaN wins, as in the tensor-op rule
      vi = vmax[i] != vmax[i] || vi < vmax[i] ? vmax[i] : vi;  // x != x: NaN
      vmax[i] = vi;
    }
    p[i] = pi - (mi / (::sqrt(vi) / bc2 + eps)) * step;
  }
}

template <typename T>
__global__ void rmsprop_kernel(T* p, const T* g, T* sq, T* buf, T* avg, int64_t n, T alpha, T one_a,
                               T wd, T eps, T lr, T mom) {
  EMBER_GRID_STRIDE_LOOP(i, n) {
    const T gi = wd != T(0) ? g[i] + wd * p[i] : g[i];
    const T si = alpha * sq[i] + one_a * (gi * gi);
    sq[i] = si;
    T d;
    if (avg != nullptr) {
      const T ai = alpha * avg[i] + one_a * gi;
      avg[i] = ai;
      d = ::sqrt(si - ai * ai) + eps;
    } else {
      d = ::sqrt(si) + eps;
    }
    if (buf != nullptr) {
      const T bi = mom * buf[i] + gi / d;
      buf[i] = bi;
      p[i] -= bi * lr;
    } else {
      p[i] -= (gi / d) * lr;
    }
  }
}

/** The i-th output as T*, or null past the last one. */
template <typename T>
T* out(const ember_kernel_call* call, int32_t i) {
  return i < call->num_outputs ? static_cast<T*>(call->outputs[i].data) : nullptr;
}

/** Runs fn(T{}) for a float32 or float64 call on its stream; refuses other dtypes. */
template <typename Fn>
int32_t run(const ember_kernel_call* call, const char* name, Fn&& fn) {
  cudaStream_t stream = nullptr;
  Status s = prepare(call, &stream);
  if (!s.ok()) return write_status(s, call);
  const int32_t dtype = call->outputs[0].dtype;
  if (dtype == EMBER_F32) {
    s = fn(float{}, stream);
  } else if (dtype == EMBER_F64) {
    s = fn(double{}, stream);
  } else {
    s = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] %s: dtype %d (float32 and float64 only)", name,
                     dtype);
  }
  return write_status(s, call);
}

}  // namespace

EMBER_KERNEL(sgd_step) {
  const auto a = sdk::attrs<attrs::sgd_step>(call);
  return run(call, "sgd_step", [&](auto tag, cudaStream_t stream) {
    using T = decltype(tag);
    const int64_t n = numel(call->outputs[0]);
    return launch("sgd_step", n, stream, sgd_kernel<T>, out<T>(call, 0),
                  static_cast<const T*>(call->inputs[0].data), out<T>(call, 1), n, a.first != 0,
                  a.nesterov != 0, a.weight_decay != 0, static_cast<T>(a.lr),
                  static_cast<T>(a.weight_decay), static_cast<T>(a.momentum),
                  static_cast<T>(1 - a.dampening));
  });
}

EMBER_KERNEL(adam_step) {
  const auto a = sdk::attrs<attrs::adam_step>(call);
  return run(call, "adam_step", [&](auto tag, cudaStream_t stream) {
    using T = decltype(tag);
    const bool decoupled = a.decoupled != 0;
    const int64_t n = numel(call->outputs[0]);
    return launch("adam_step", n, stream, adam_kernel<T>, out<T>(call, 0),
                  static_cast<const T*>(call->inputs[0].data), out<T>(call, 1), out<T>(call, 2),
                  out<T>(call, 3), n, static_cast<T>(a.beta1), static_cast<T>(a.beta2),
                  static_cast<T>(1 - a.beta1), static_cast<T>(1 - a.beta2),
                  static_cast<T>(decoupled ? 0.0 : a.weight_decay),
                  static_cast<T>(decoupled ? 1 - a.lr * a.weight_decay : 1.0),
                  static_cast<T>(a.step_size), static_cast<T>(a.bias_correction2_sqrt),
                  static_cast<T>(a.eps));
  });
}

EMBER_KERNEL(rmsprop_step) {
  const auto a = sdk::attrs<attrs::rmsprop_step>(call);
  return run(call, "rmsprop_step", [&](auto tag, cudaStream_t stream) {
    using T = decltype(tag);
    int32_t next = 2;
    T* buf = a.has_momentum ? out<T>(call, next++) : nullptr;
    T* avg = a.centered ? out<T>(call, next++) : nullptr;
    const int64_t n = numel(call->outputs[0]);
    return launch("rmsprop_step", n, stream, rmsprop_kernel<T>, out<T>(call, 0),
                  static_cast<const T*>(call->inputs[0].data), out<T>(call, 1), buf, avg, n,
                  static_cast<T>(a.alpha), static_cast<T>(1 - a.alpha),
                  static_cast<T>(a.weight_decay), static_cast<T>(a.eps), static_cast<T>(a.lr),
                  static_cast<T>(a.momentum));
  });
}

}  // namespace ember::cuda
