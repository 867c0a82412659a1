// The optimizers' fused steps (ember/ops.def: sgd_step, adam_step, rmsprop_step): one pass over
// a parameter, its gradient and its state, in place, in the order the optimizers' tensor-op rule
// computes (Note [Optimizer steps through kernels] in api/optim/fused_step.h). Float32 and
// float64, dense tensors (the optimizers pass only those); OpenMP over chunks of large ones.
#include <algorithm>
#include <cmath>

#include "backends/cpu/loops.h"
#include "backends/cpu/ops/ops.h"

namespace ember::cpu {
namespace {

constexpr int64_t kChunk = 1 << 15;  // elements per OpenMP task (for_each_chunk in loops.h)

template <typename T>
T* out(const ember_kernel_call* call, int32_t i) {
  return i < call->num_outputs ? sdk::data<T>(call->outputs[i]) : nullptr;
}

}  // namespace

// Each step computes what the optimizer's tensor-op rule computes, product by product and sum by
// sum in the same order, so the two paths round alike (a weight decay of 0 adds nothing, as
// there, which matters for an infinite parameter).

// p -= lr * d, d the (momentum, Nesterov) direction of g + weight_decay * p.
EMBER_KERNEL(sgd_step) {
  const auto a = sdk::attrs<attrs::sgd_step>(call);
  return visit_f32_f64(call, "sgd_step", [&](auto tag) {
    using T = decltype(tag);
    const T* g = sdk::data<const T>(call->inputs[0]);
    T* p = out<T>(call, 0);
    T* buf = out<T>(call, 1);
    const T lr = static_cast<T>(a.lr), wd = static_cast<T>(a.weight_decay);
    const T mom = static_cast<T>(a.momentum), keep = static_cast<T>(1 - a.dampening);
    const bool first = a.first != 0, nesterov = a.nesterov != 0;
    for_each_chunk(sdk::numel(call->outputs[0]), kChunk, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T d = a.weight_decay != 0 ? g[i] + wd * p[i] : g[i];
        if (!buf) {
          p[i] -= lr * d;
          continue;
        }
        const T m = first ? d : mom * buf[i] + keep * d;
        buf[i] = m;
        p[i] -= lr * (nesterov ? d + mom * m : m);
      }
    });
  });
}

// Adam (and AdamW: decoupled weight decay), with AMSGrad when a fourth output is given.
EMBER_KERNEL(adam_step) {
  const auto a = sdk::attrs<attrs::adam_step>(call);
  return visit_f32_f64(call, "adam_step", [&](auto tag) {
    using T = decltype(tag);
    const T* g = sdk::data<const T>(call->inputs[0]);
    T *p = out<T>(call, 0), *m = out<T>(call, 1), *v = out<T>(call, 2), *vmax = out<T>(call, 3);
    const bool decoupled = a.decoupled != 0;
    const T b1 = static_cast<T>(a.beta1), b2 = static_cast<T>(a.beta2);
    const T one_b1 = static_cast<T>(1 - a.beta1), one_b2 = static_cast<T>(1 - a.beta2);
    const T l2 = static_cast<T>(decoupled ? 0.0 : a.weight_decay);
    const T shrink = static_cast<T>(decoupled ? 1 - a.lr * a.weight_decay : 1.0);
    const T step = static_cast<T>(a.step_size);
    const T bc2 = static_cast<T>(a.bias_correction2_sqrt), eps = static_cast<T>(a.eps);
    for_each_chunk(sdk::numel(call->outputs[0]), kChunk, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T gi = l2 != 0 ? g[i] + l2 * p[i] : g[i];
        const T pi = p[i] * shrink;
        const T mi = b1 * m[i] + one_b1 * gi;
        T vi = b2 * v[i] + one_b2 * (gi * gi);
        m[i] = mi;
        v[i] = vi;
        if (vmax) {  // maximum(): NaN wins, as in the tensor-op rule
          vi = std::isnan(vmax[i]) || vi < vmax[i] ? vmax[i] : vi;
          vmax[i] = vi;
        }
        p[i] = pi - (mi / (std::sqrt(vi) / bc2 + eps)) * step;
      }
    });
  });
}

// RMSprop: the running average of g^2 (and of g when centered), the optional momentum buffer.
EMBER_KERNEL(rmsprop_step) {
  const auto a = sdk::attrs<attrs::rmsprop_step>(call);
  return visit_f32_f64(call, "rmsprop_step", [&](auto tag) {
    using T = decltype(tag);
    const T* g = sdk::data<const T>(call->inputs[0]);
    T *p = out<T>(call, 0), *sq = out<T>(call, 1);
    int32_t next = 2;
    T* buf = a.has_momentum ? out<T>(call, next++) : nullptr;
    T* avg = a.centered ? out<T>(call, next++) : nullptr;
    const T al = static_cast<T>(a.alpha), one_a = static_cast<T>(1 - a.alpha);
    const T wd = static_cast<T>(a.weight_decay), eps = static_cast<T>(a.eps);
    const T lr = static_cast<T>(a.lr), mom = static_cast<T>(a.momentum);
    for_each_chunk(sdk::numel(call->outputs[0]), kChunk, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T gi = wd != 0 ? g[i] + wd * p[i] : g[i];
        const T si = al * sq[i] + one_a * (gi * gi);
        sq[i] = si;
        T d;
        if (avg) {
          const T ai = al * avg[i] + one_a * gi;
          avg[i] = ai;
          d = std::sqrt(si - ai * ai) + eps;
        } else {
          d = std::sqrt(si) + eps;
        }
        if (buf) {
          const T bi = mom * buf[i] + gi / d;
          buf[i] = bi;
          p[i] -= bi * lr;
        } else {
          p[i] -= (gi / d) * lr;
        }
      }
    });
  });
}

}  // namespace ember::cpu
