#include "ember/nn/reparam.h"

#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "ember/autograd/grad_mode.h"
#include "ember/ops/factory.h"
#include "ember/ops/linalg.h"
#include "ember/ops/nn.h"
#include "ember/ops/reduce.h"
#include "ember/tensor/tensor.h"
#include "ember/util/error.h"

namespace ember::nn {

// Note [Weight reparametrizations as pre-hooks]
// As PyTorch's torch.nn.utils.weight_norm and spectral_norm: the layer's parameter becomes a
// derived tensor (Note [Derived tensors] in module.h) whose slot the layer keeps reading, the
// tensors it is computed from become the parameters (and buffers) PyTorch names, and a forward
// pre-hook writes the recomputed value into the slot before every forward, with its autograd
// history, so the gradient reaches the new parameters. The hook is a C++ ForwardPreHook, so it
// runs however the module is called (Module::operator(), a C++ container, Python's __call__).
// The state dict therefore has PyTorch's keys (weight_g / weight_v, weight_orig / weight_u /
// weight_v), and a checkpoint of a PyTorch model with these norms loads as it is. Removing one
// finds its hook by type and name among the module's pre-hooks.

namespace {

/** The forward pre-hook of weight_norm. */
struct WeightNormHook {
  std::string name;
  std::optional<int64_t> dim;          // none: one norm over the whole tensor
  std::shared_ptr<HookHandle> handle;  // its registration, for remove_weight_norm

  /** ||v|| over every dim but `dim` (keeping them, so it broadcasts against v). */
  Tensor norm_except_dim(const Tensor& v) const {
    if (!dim) return norm(v, 2.0);
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < v.dim(); ++d) {
      if (d != *dim) dims.push_back(d);
    }
    return norm(v, 2.0, dims, /*keepdim=*/true);
  }
  /** g * v / ||v|| from the module's current parameters. */
  Tensor compute(Module& m) const {
    const Tensor* g = m.find_parameter(name + "_g");
    const Tensor* v = m.find_parameter(name + "_v");
    EMBER_CHECK(g && v && g->defined() && v->defined(),
                "[nn.weight_norm] {}: parameters '{}_g' and '{}_v' are gone (removed or "
                "replaced; call remove_weight_norm instead)",
                m.type_name(), name, name);
    return mul(*v, div(*g, norm_except_dim(*v)));
  }
  Tensor operator()(Module& m, const Tensor&) const {
    Tensor* slot = m.find_derived(name);
    EMBER_CHECK(slot != nullptr, "[nn.weight_norm] {}: '{}' is no longer a derived tensor",
                m.type_name(), name);
    *slot = compute(m);
    return Tensor();
  }
};

/** The forward pre-hook of spectral_norm. */
struct SpectralNormHook {
  std::string name;
  int64_t n_power_iterations;
  double eps;
  int64_t dim;
  std::shared_ptr<HookHandle> handle;  // its registration, for remove_spectral_norm

  /** The weight as a matrix with dim `dim` as its rows. */
  Tensor as_matrix(const Tensor& w) const {
    Tensor m = w;
    if (dim != 0) {
      std::vector<int64_t> order{dim};
      for (int64_t d = 0; d < w.dim(); ++d) {
        if (d != dim) order.push_back(d);
      }
      m = w.permute(order);
    }
    return m.reshape({m.size(0), -1});
  }
  /** weight_orig / sigma, after `n_power_iterations` steps updating u and v in place when
   *  `iterate`. */
  Tensor compute(Module& m, bool iterate) const {
    const Tensor* w = m.find_parameter(name + "_orig");
    Tensor* u = m.find_buffer(name + "_u");
    Tensor* v = m.find_buffer(name + "_v");
    EMBER_CHECK(w && u && v && w->defined() && u->defined() && v->defined(),
                "[nn.spectral_norm] {}: '{}_orig', '{}_u' or '{}_v' is gone (removed or "
                "replaced; call remove_spectral_norm instead)",
                m.type_name(), name, name, name);
    const Tensor mat = as_matrix(*w);
    if (iterate && n_power_iterations > 0) {
      autograd::NoGradGuard no_grad;
      const Tensor mat_t = mat.detach().t();
      for (int64_t i = 0; i < n_power_iterations; ++i) {
        v->copy_(normalize(matmul(mat_t, *u), 2, 0, eps));
        u->copy_(normalize(matmul(mat.detach(), *v), 2, 0, eps));
      }
    }
    // u and v as they are now, apart from the buffers the next iteration overwrites.
    const Tensor uc = u->clone(), vc = v->clone();
    const Tensor sigma = sum(mul(uc, matmul(mat, vc)));
    return div(*w, sigma);
  }
  Tensor operator()(Module& m, const Tensor&) const {
    Tensor* slot = m.find_derived(name);
    EMBER_CHECK(slot != nullptr, "[nn.spectral_norm] {}: '{}' is no longer a derived tensor",
                m.type_name(), name);
    *slot = compute(m, m.is_training());
    return Tensor();
  }
};

/** A copy of the pre-hook of type Hook for `name` on m, if it has one. */
template <class Hook>
std::optional<Hook> find_hook(Module& m, const std::string& name) {
  for (const ForwardPreHook& h : m.forward_pre_hooks()) {
    if (const Hook* p = h.target<Hook>(); p && p->name == name) return *p;
  }
  return std::nullopt;
}

/** Parameter `name` of m, checked to exist and to carry no reparametrization yet. */
Tensor parameter_to_reparametrize(Module& m, const std::string& name, const char* op) {
  const Tensor* p = m.find_parameter(name);
  EMBER_CHECK_KEY(p != nullptr && p->defined(), "[nn.{}] {} has no parameter '{}'", op,
                  m.type_name(), name);
  EMBER_CHECK(!find_hook<WeightNormHook>(m, name) && !find_hook<SpectralNormHook>(m, name),
              "[nn.{}] {}: '{}' already has a weight_norm or spectral_norm", op, m.type_name(),
              name);
  return *p;
}

/** dim of `weight` (parameter `name`) made non-negative; an IndexError out of range. */
int64_t wrap_weight_dim(const char* op, const std::string& name, const Tensor& weight,
                        int64_t dim) {
  EMBER_CHECK_INDEX(dim >= -weight.dim() && dim < weight.dim(),
                    "[nn.{}] dim {} is out of range for '{}' of {} dims", op, dim, name,
                    weight.dim());
  return dim < 0 ? dim + weight.dim() : dim;
}

/** Undoes a reparametrization: the parameters and buffers name + `suffixes` removed, `name` a
 *  parameter again holding `weight` (detached), in the slot the layer reads. */
Module& restore(Module& m, const std::string& name, const Tensor& weight,
                std::initializer_list<const char*> suffixes) {
  for (const char* suffix : suffixes) m.remove(name + suffix);
  m.make_parameter(name, weight.detach());
  return m;
}

/** Registers `hook` on m, keeping its handle in the hook so that removal can find it. */
template <class Hook>
void install(Module& m, Hook hook) {
  auto handle = std::make_shared<HookHandle>();
  hook.handle = handle;
  *handle = m.register_forward_pre_hook(std::move(hook));
}

/** Removes m's hook of type Hook for `name` (an error if it has none) and returns it. */
template <class Hook>
Hook uninstall(Module& m, const std::string& name, const char* op) {
  std::optional<Hook> hook = find_hook<Hook>(m, name);
  EMBER_CHECK(hook.has_value(), "[nn.remove_{}] {} has no {} on '{}'", op, m.type_name(), op, name);
  hook->handle->remove();
  return *hook;
}

}  // namespace

Module& weight_norm(Module& module, const std::string& name, std::optional<int64_t> dim) {
  const Tensor weight = parameter_to_reparametrize(module, name, "weight_norm");
  // PyTorch reads dim=-1 as "no dim" (one norm over the whole tensor), other negatives as usual.
  if (dim && *dim == -1) dim.reset();
  if (dim) dim = wrap_weight_dim("weight_norm", name, weight, *dim);
  WeightNormHook hook{name, dim, nullptr};
  Tensor g, v;
  {
    autograd::NoGradGuard no_grad;
    g = hook.norm_except_dim(weight).clone();
    v = weight.detach().clone();
  }
  module.make_derived(name);
  module.register_parameter(name + "_g", g);
  module.register_parameter(name + "_v", v);
  *module.find_derived(name) = hook.compute(module);
  install(module, std::move(hook));
  return module;
}

Module& remove_weight_norm(Module& module, const std::string& name) {
  const WeightNormHook hook = uninstall<WeightNormHook>(module, name, "weight_norm");
  autograd::NoGradGuard no_grad;
  return restore(module, name, hook.compute(module), {"_g", "_v"});
}

Module& spectral_norm(Module& module, const std::string& name, int64_t n_power_iterations,
                      double eps, std::optional<int64_t> dim) {
  const Tensor weight = parameter_to_reparametrize(module, name, "spectral_norm");
  EMBER_CHECK(n_power_iterations > 0,
              "[nn.spectral_norm] n_power_iterations must be positive: got {}", n_power_iterations);
  EMBER_CHECK(eps > 0, "[nn.spectral_norm] eps must be positive: got {}", eps);
  // PyTorch's default: the output features, which the transposed convolutions keep in dim 1.
  const bool transposed = module.type_name().rfind("ConvTranspose", 0) == 0;
  int64_t d = dim.value_or(transposed ? 1 : 0);
  d = wrap_weight_dim("spectral_norm", name, weight, d);
  SpectralNormHook hook{name, n_power_iterations, eps, d, nullptr};
  Tensor u, v;
  {
    autograd::NoGradGuard no_grad;
    const Tensor mat = hook.as_matrix(weight);
    const TensorOptions opts(weight.dtype(), weight.device());
    u = normalize(normal(0.0, 1.0, {mat.size(0)}, opts), 2, 0, eps);
    v = normalize(normal(0.0, 1.0, {mat.size(1)}, opts), 2, 0, eps);
  }
  module.make_derived(name);
  module.register_parameter(name + "_orig", weight);
  module.register_buffer(name + "_u", u);
  module.register_buffer(name + "_v", v);
  // As PyTorch: the weight itself until the first forward divides it by sigma.
  *module.find_derived(name) = weight.detach();
  install(module, std::move(hook));
  return module;
}

Module& remove_spectral_norm(Module& module, const std::string& name) {
  const SpectralNormHook hook = uninstall<SpectralNormHook>(module, name, "spectral_norm");
  autograd::NoGradGuard no_grad;
  return restore(module, name, hook.compute(module, /*iterate=*/false), {"_orig", "_u", "_v"});
}

}  // namespace ember::nn
