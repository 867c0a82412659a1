#include "ember/optim/sgd.h"

#include "ember/autograd/grad_mode.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/util/error.h"

namespace ember::optim {

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : SGD(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions defaults)
    : Optimizer("optim.SGD", to_map(defaults), {"momentum_buffer"}, /*counts_steps=*/false) {
  init_groups(std::move(groups));
}

Options SGD::to_map(const SGDOptions& o) {
  return {{"lr", o.lr},
          {"momentum", o.momentum},
          {"dampening", o.dampening},
          {"weight_decay", o.weight_decay},
          {"nesterov", o.nesterov ? 1.0 : 0.0}};
}

SGDOptions SGD::options_of(const ParamGroup& g) {
  return {.lr = g.get("lr"),
          .momentum = g.get("momentum"),
          .dampening = g.get("dampening"),
          .weight_decay = g.get("weight_decay"),
          .nesterov = g.get("nesterov") != 0};
}

void SGD::validate(const ParamGroup& group) const {
  const SGDOptions o = options_of(group);
  EMBER_CHECK(o.lr >= 0, "[optim.SGD] invalid learning rate: {} (must be >= 0)", o.lr);
  EMBER_CHECK(o.momentum >= 0, "[optim.SGD] invalid momentum: {} (must be >= 0)", o.momentum);
  EMBER_CHECK(o.weight_decay >= 0, "[optim.SGD] invalid weight_decay: {} (must be >= 0)",
              o.weight_decay);
  EMBER_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
              "[optim.SGD] nesterov momentum requires momentum > 0 and dampening = 0, got "
              "momentum {} and dampening {}",
              o.momentum, o.dampening);
}

namespace {

// One pass over the parameter: p -= lr * d, where d is the (momentum, Nesterov) direction.
template <typename T>
void sgd_loop(T* __restrict p, const T* __restrict g, T* __restrict buf, int64_t n,
              const SGDOptions& o, bool first) {
  const T lr = static_cast<T>(o.lr), wd = static_cast<T>(o.weight_decay);
  const T mom = static_cast<T>(o.momentum), keep = static_cast<T>(1 - o.dampening);
  if (!buf) {
    for (int64_t i = 0; i < n; ++i) p[i] -= lr * (g[i] + wd * p[i]);
  } else if (first) {
    for (int64_t i = 0; i < n; ++i) {
      const T d = g[i] + wd * p[i];
      buf[i] = d;
      p[i] -= lr * (o.nesterov ? d + mom * d : d);
    }
  } else if (o.nesterov) {
    for (int64_t i = 0; i < n; ++i) {
      const T d = g[i] + wd * p[i];
      const T b = mom * buf[i] + keep * d;
      buf[i] = b;
      p[i] -= lr * (d + mom * b);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const T b = mom * buf[i] + keep * (g[i] + wd * p[i]);
      buf[i] = b;
      p[i] -= lr * b;
    }
  }
}

}  // namespace

void SGD::step() {
  autograd::NoGradGuard no_grad;
  for (auto& group : param_groups()) {
    const SGDOptions o = options_of(group);
    for (Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      Tensor* buf = nullptr;
      bool first = false;
      if (o.momentum != 0) {
        ParamState& s = state_for(p);
        buf = &s.buffers[0];
        first = !buf->defined();
        if (first) *buf = empty_like(p);
      }
      if (detail::fusable(p)) {
        const Tensor g = detail::dense_grad(p);
        detail::visit_float(p.dtype(), [&](auto tag) {
          using T = decltype(tag);
          sgd_loop<T>(p.data_ptr<T>(), g.data_ptr<T>(), buf ? buf->data_ptr<T>() : nullptr,
                      p.numel(), o, first);
        });
        p.bump_version();
        if (buf) buf->bump_version();
        continue;
      }
      // Any device or dtype: the same rule with tensor ops.
      Tensor d = p.grad();
      if (o.weight_decay != 0) d = add(d, mul(p, o.weight_decay));
      if (buf) {
        if (first) {
          buf->copy_(d);
        } else {
          mul_(*buf, o.momentum);
          add_(*buf, o.dampening == 0 ? d : mul(d, 1 - o.dampening));
        }
        d = o.nesterov ? add(d, mul(*buf, o.momentum)) : *buf;
      }
      sub_(p, mul(d, o.lr));
    }
  }
}

}  // namespace ember::optim
