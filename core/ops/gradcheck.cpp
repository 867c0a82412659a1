#include "ember/autograd/gradcheck.h"

#include <cmath>

#include "ember/autograd/engine.h"
#include "ember/autograd/grad_mode.h"
#include "ember/dispatch/device_registry.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"

namespace ember::autograd {
namespace {

// Writes element `i` of a contiguous float64 tensor in place, without recording; on a device
// the host cannot address, through an 8-byte copy.
void set(const Tensor& t, int64_t i, double v) {
  double* p = static_cast<double*>(t.data_ptr()) + i;
  if (device_type(t.device().type).table.host_accessible) {
    *p = v;
  } else {
    device_copy(t.device(), p, &v, sizeof(v), EMBER_COPY_H2D);
  }
  t.bump_version();
}

// fn's output as a flat float64 tensor on the CPU.
Tensor flat_output(const TensorFn& fn, const std::vector<Tensor>& inputs) {
  NoGradGuard no_grad;
  return fn(inputs).to(DType::Float64).to(Device::cpu()).contiguous().reshape({-1}).clone();
}

}  // namespace

GradcheckResult gradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs_in,
                          GradcheckOptions opts) {
  // Work on contiguous float64 copies whose elements we can perturb.
  std::vector<Tensor> inputs;
  for (const Tensor& t : inputs_in) {
    if (!t.defined() || !t.requires_grad()) {
      inputs.push_back(t);
      continue;
    }
    EMBER_CHECK_TYPE(t.dtype() == DType::Float64,
                     "[gradcheck] inputs that require grad must be float64: got {}", t.dtype());
    inputs.push_back(t);
  }
  Tensor out = fn(inputs);
  const int64_t n_out = out.numel();

  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& x = inputs[k];
    if (!x.defined() || !x.requires_grad()) continue;
    EMBER_CHECK(x.is_contiguous(),
                "[gradcheck] input {} must be contiguous (pass a view through "
                "fn instead)",
                k);
    const int64_t n_in = x.numel();
    const Tensor host_x = x.detach().to(Device::cpu()).contiguous();  // the unperturbed values
    // Numerical Jacobian column by column.
    std::vector<double> numeric(static_cast<size_t>(n_in * n_out));
    for (int64_t j = 0; j < n_in; ++j) {
      const double orig = host_x.data_ptr<double>()[j];
      set(x, j, orig + opts.eps);
      Tensor plus = flat_output(fn, inputs);
      set(x, j, orig - opts.eps);
      Tensor minus = flat_output(fn, inputs);
      set(x, j, orig);
      for (int64_t i = 0; i < n_out; ++i) {
        numeric[j * n_out + i] =
            (plus.data_ptr<double>()[i] - minus.data_ptr<double>()[i]) / (2 * opts.eps);
      }
    }
    // Analytical Jacobian row by row: grad of out[i] w.r.t. x.
    for (int64_t i = 0; i < n_out; ++i) {
      Tensor v = zeros(out.sizes(), {out.dtype(), out.device()});
      {
        NoGradGuard no_grad;
        v.reshape({-1}).narrow(0, i, 1).fill_(1.0);
      }
      Tensor fresh = fn(inputs);
      // An output with no graph (a piecewise-constant function's gradient) has a zero Jacobian.
      std::vector<Tensor> g = fresh.requires_grad()
                                  ? grad({fresh}, {x}, {v}, /*retain_graph=*/false,
                                         /*create_graph=*/false, /*allow_unused=*/true)
                                  : std::vector<Tensor>{Tensor()};
      Tensor gd;
      if (g[0].defined()) {
        NoGradGuard no_grad;
        gd = g[0].to(DType::Float64).to(Device::cpu()).contiguous();
      }
      for (int64_t j = 0; j < n_in; ++j) {
        const double a = gd.defined() ? gd.data_ptr<double>()[j] : 0.0;
        const double nv = numeric[j * n_out + i];
        if (!(std::fabs(a - nv) <= opts.atol + opts.rtol * std::fabs(nv))) {
          return {false, fmt::format("Jacobian mismatch for output {} with respect to input {}, "
                                     "element {}: analytical {:.8g} vs numerical {:.8g}",
                                     i, k, j, a, nv)};
        }
      }
    }
  }
  return {};
}

GradcheckResult gradgradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs,
                              GradcheckOptions opts) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = fn(inputs);
  }
  Generator gen(1234);
  Tensor v = randn(out.sizes(), {DType::Float64, out.device()}, &gen).requires_grad_(true);
  std::vector<Tensor> all = inputs;
  all.push_back(v);
  std::vector<size_t> diff;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].defined() && inputs[k].requires_grad()) diff.push_back(k);
  }
  // The function checked: (inputs, v) -> the vector-Jacobian products <v, d fn / d x_k>,
  // flattened and concatenated; its own backward exercises the double-backward formulas.
  auto vjp = [&fn, diff, n = inputs.size()](const std::vector<Tensor>& args) {
    // gradcheck evaluates fn under NoGradGuard for finite differences; the inner grad() needs
    // the graph of fn all the same.
    AutoGradMode on(true);
    std::vector<Tensor> xs(args.begin(), args.begin() + static_cast<int64_t>(n));
    Tensor y = fn(xs);
    std::vector<Tensor> wrt;
    for (size_t k : diff) wrt.push_back(xs[k]);
    std::vector<Tensor> g = grad({y}, wrt, {args[n]}, /*retain_graph=*/true,
                                 /*create_graph=*/true, /*allow_unused=*/true);
    std::vector<Tensor> flats;
    for (size_t i = 0; i < g.size(); ++i) {
      flats.push_back((g[i].defined() ? g[i] : zeros_like(wrt[i])).reshape({-1}));
    }
    return cat(flats, 0);
  };
  return gradcheck(vjp, all, opts);
}

}  // namespace ember::autograd
