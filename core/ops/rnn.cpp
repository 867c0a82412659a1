// lstm_layer(gates_x, w_hh, h0, c0, reverse): one LSTM layer in one direction, PyTorch's
// equations and gate order. At each step t, in walking order (L - 1 down to 0 when reverse),
// with h_prev, c_prev the state the step before left (h0 and c0 first):
//   [i, f, g, o] = gates_x[t] + h_prev w_hh^T;  i, f, o through sigmoid, g through tanh
//   c[t] = f * c_prev + i * g,   h[t] = o * tanh(c[t])
//
// Kernel contract ("lstm_layer", optional): inputs {gates_x [L, N, 4H], w_hh [4H, H], h0 [N, H],
// c0 [N, H]}, contiguous, of one dtype; outputs {h [L, N, H], c [L, N, H], gates [L, N, 4H]},
// contiguous, gates[t] holding the activated i, f, g, o of step t; ints {reverse}. L, N, H > 0.
// "lstm_layer_backward" (optional): inputs {dh [L, N, H], dc [L, N, H], w_hh, h0, c0, h, c,
// gates}: the gradients of the two outputs and the forward's tensors, contiguous; outputs
// {dgates_x [L, N, 4H], dh0 [N, H], dc0 [N, H]}. Walking the steps backwards, with dh_next and
// dc_next what flows back from the step after (0 after the last):
//   dh_t = dh[t] + dh_next,   dc_t = dc[t] + dc_next + dh_t o (1 - tanh(c[t])^2)
//   dgates_x[t] = [dc_t g i (1 - i), dc_t c_prev f (1 - f), dc_t i (1 - g^2),
//                  dh_t tanh(c[t]) o (1 - o)]
//   dh_next = dgates_x[t] w_hh,   dc_next = dc_t f
// and dh0, dc0 the last dh_next and dc_next. The core adds dw_hh = sum_t dgates_x[t]^T h_prev,
// one matmul over all steps.
#include "ember/ops/rnn.h"

#include <vector>

#include "core/dispatch/call.h"
#include "ember/amp/autocast.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/linalg.h"

namespace ember {
namespace {

using autograd::LambdaNode;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

constexpr const char* kName = "lstm_layer";

/** The state each step starts from: `all` [L, N, H] shifted one step in walking order, with
 *  `first` [N, H] in front. */
Tensor previous(const Tensor& all, const Tensor& first, bool reverse) {
  const int64_t L = all.size(0);
  const Tensor f = first.unsqueeze(0);
  if (L == 1) return f;
  return reverse ? cat({all.narrow(0, 1, L - 1), f}, 0) : cat({f, all.narrow(0, 0, L - 1)}, 0);
}

/** dw_hh = sum over steps of dgates[t]^T h_prev[t]: one matmul over all L * N rows. */
Tensor recurrent_weight_grad(const Tensor& dgates, const Tensor& hs, const Tensor& h0,
                             bool reverse) {
  const int64_t rows = dgates.size(0) * dgates.size(1);
  return matmul(dgates.reshape({rows, dgates.size(2)}).t(),
                previous(hs, h0, reverse).reshape({rows, hs.size(2)}));
}

Tensor one_minus(const Tensor& x) {
  return add(neg(x), 1.0);
}

/** The recurrence as public ops, a step at a time: any device and dtype, differentiable. */
std::tuple<Tensor, Tensor> composite(const Tensor& gx, const Tensor& w_hh, const Tensor& h0,
                                     const Tensor& c0, bool reverse) {
  const int64_t L = gx.size(0);
  const std::vector<Tensor> steps = unbind(gx, 0);
  const Tensor w_t = w_hh.t();
  Tensor h = h0, c = c0;
  std::vector<Tensor> hs(static_cast<size_t>(L)), cs(static_cast<size_t>(L));
  for (int64_t k = 0; k < L; ++k) {
    const auto t = static_cast<size_t>(reverse ? L - 1 - k : k);
    const std::vector<Tensor> g = chunk(add(steps[t], matmul(h, w_t)), 4, 1);
    c = add(mul(sigmoid(g[1]), c), mul(sigmoid(g[0]), tanh(g[2])));
    h = mul(sigmoid(g[3]), tanh(c));
    hs[t] = h;
    cs[t] = c;
  }
  return {stack(hs, 0), stack(cs, 0)};
}

/** {dgates_x, dw_hh, dh0, dc0} from public ops, so that they are differentiable again: the
 *  gates recomputed from gates_x and the saved states, then the contract's recurrence. */
Grads backward_formula(const Tensor& dh_all, const Tensor& dc_all, const Tensor& gx,
                       const Tensor& w_hh, const Tensor& h0, const Tensor& c0, const Tensor& hs,
                       const Tensor& cs, bool reverse) {
  const int64_t L = gx.size(0);
  const Tensor hprev = previous(hs, h0, reverse), cprev = previous(cs, c0, reverse);
  const std::vector<Tensor> pre = chunk(add(gx, matmul(hprev, w_hh.t())), 4, 2);
  const std::vector<Tensor> I = unbind(sigmoid(pre[0])), F = unbind(sigmoid(pre[1])),
                            G = unbind(tanh(pre[2])), O = unbind(sigmoid(pre[3])),
                            TC = unbind(tanh(cs)), CP = unbind(cprev), DH = unbind(dh_all),
                            DC = unbind(dc_all);
  Tensor dh_next, dc_next;
  std::vector<Tensor> dgx(static_cast<size_t>(L));
  for (int64_t k = 0; k < L; ++k) {
    const auto t = static_cast<size_t>(reverse ? k : L - 1 - k);
    const Tensor dh = dh_next.defined() ? add(DH[t], dh_next) : DH[t];
    Tensor dc = add(DC[t], mul(mul(dh, O[t]), one_minus(square(TC[t]))));
    if (dc_next.defined()) dc = add(dc, dc_next);
    dgx[t] = cat({mul(mul(dc, G[t]), mul(I[t], one_minus(I[t]))),
                  mul(mul(dc, CP[t]), mul(F[t], one_minus(F[t]))),
                  mul(mul(dc, I[t]), one_minus(square(G[t]))),
                  mul(mul(dh, TC[t]), mul(O[t], one_minus(O[t])))},
                 1);
    dh_next = matmul(dgx[t], w_hh);
    dc_next = mul(dc, F[t]);
  }
  const Tensor dgates = stack(dgx, 0);
  return {dgates, recurrent_weight_grad(dgates, hs, h0, reverse), dh_next, dc_next};
}

// Note [The LSTM recurrence as one op]
// As public ops each step of an LSTM is a dozen small ops forward and twice that backward, each
// with its dispatch, allocation and autograd node: at PyTorch's sizes for a character model
// (N = 16, H = 128) that overhead, not the arithmetic, made Ember's LSTM 2.1-2.5 times PyTorch's
// (which runs oneDNN's fused LSTM). A backend may instead provide the whole recurrence as one
// kernel, forward and backward (the CPU backend does, for float32 and float64). The forward
// also returns the activated gates of every step, so the backward needs no transcendental
// but tanh(c); the recurrent weight's gradient is one matmul over all steps afterwards. Backends
// without the kernel (and the half types) run the composite; a backward that must itself be
// differentiable (create_graph) runs backward_formula. oneDNN's own LSTM primitive is not used:
// its workspace has an implementation-defined size, which the core could not allocate as an
// output, and the per-step product it would run is the same sgemm.
std::tuple<Tensor, Tensor> fused(const Tensor& gx, const Tensor& w_hh, const Tensor& h0,
                                 const Tensor& c0, bool reverse) {
  const int64_t L = gx.size(0), N = gx.size(1), H = w_hh.size(1);
  const DType dt = gx.dtype();
  const Device dev = gx.device();
  const attrs::lstm_layer a{.reverse = reverse ? 1 : 0};
  Tensor h, c, gates;
  {
    autograd::NoGradGuard below_autograd;
    const Tensor x = gx.contiguous(), w = w_hh.contiguous(), h0c = h0.contiguous(),
                 c0c = c0.contiguous();
    h = empty({L, N, H}, {dt, dev});
    c = empty({L, N, H}, {dt, dev});
    gates = empty({L, N, 4 * H}, {dt, dev});
    run_kernel(a, dt, {&x, &w, &h0c, &c0c}, {&h, &c, &gates});
  }
  if (!autograd::any_requires_grad({&gx, &w_hh, &h0, &c0})) return {h, c};
  auto node = autograd::record(
      "LstmLayerBackward", kName, {&gx, &w_hh, &h0, &c0}, {&h, &c},
      [sx = SavedTensor(gx), sw = SavedTensor(w_hh), sh0 = SavedTensor(h0), sc0 = SavedTensor(c0),
       gates, reverse, L, N, H](const Grads& g, const LambdaNode& self) {
        const Tensor x = self.unpack(sx), w = self.unpack(sw), h0 = self.unpack(sh0),
                     c0 = self.unpack(sc0);
        const Tensor hs = self.saved_output(0), cs = self.saved_output(1);
        if (autograd::is_grad_enabled() ||
            !has_kernel(core_op(ops::lstm_layer_backward), x.device(), x.dtype())) {
          return backward_formula(g[0], g[1], x, w, h0, c0, hs, cs, reverse);
        }
        const DType dt = x.dtype();
        const Device dev = x.device();
        const Tensor dh = g[0].contiguous(), dc = g[1].contiguous(), wc = w.contiguous(),
                     h0c = h0.contiguous(), c0c = c0.contiguous();
        Tensor dgx = empty({L, N, 4 * H}, {dt, dev}), dh0 = empty({N, H}, {dt, dev}),
               dc0 = empty({N, H}, {dt, dev});
        run_kernel(attrs::lstm_layer_backward{.reverse = reverse ? 1 : 0}, dt,
                   {&dh, &dc, &wc, &h0c, &c0c, &hs, &cs, &gates}, {&dgx, &dh0, &dc0});
        return Grads{dgx, recurrent_weight_grad(dgx, hs, h0c, reverse), dh0, dc0};
      });
  node->save_output(h);
  node->save_output(c);
  return {h, c};
}

}  // namespace

std::tuple<Tensor, Tensor> lstm_layer(const Tensor& gates_x, const Tensor& w_hh, const Tensor& h0,
                                      const Tensor& c0, bool reverse) {
  // Under autocast, in the lower type, as PyTorch runs its LSTM (an input projection that
  // autocast lowered would otherwise meet float32 weights).
  if (gates_x.defined()) EMBER_AUTOCAST(Lower, lstm_layer, gates_x, gates_x, w_hh, h0, c0, reverse);
  EMBER_CHECK_TYPE(gates_x.defined() && w_hh.defined() && h0.defined() && c0.defined(),
                   "[{}] undefined tensor argument: gates_x, w_hh, h0 and c0 are required", kName);
  EMBER_CHECK_TYPE(is_floating(gates_x.dtype()),
                   "[{}] gates_x must be floating: got dtype {} (convert with .to(ember::f32))",
                   kName, gates_x.dtype());
  EMBER_CHECK_TYPE(w_hh.dtype() == gates_x.dtype() && h0.dtype() == gates_x.dtype() &&
                       c0.dtype() == gates_x.dtype(),
                   "[{}] gates_x, w_hh, h0 and c0 must have one dtype: got {}, {}, {} and {}",
                   kName, gates_x.dtype(), w_hh.dtype(), h0.dtype(), c0.dtype());
  common_device({&gates_x, &w_hh, &h0, &c0}, kName);
  EMBER_CHECK(w_hh.dim() == 2, "[{}] w_hh must be [4 * hidden, hidden]: got shape {}", kName,
              shape_str(w_hh.sizes()));
  const int64_t H = w_hh.size(1);
  EMBER_CHECK(w_hh.size(0) == 4 * H, "[{}] w_hh must be [4 * hidden, hidden]: got shape {}", kName,
              shape_str(w_hh.sizes()));
  EMBER_CHECK(gates_x.dim() == 3 && gates_x.size(2) == 4 * H,
              "[{}] gates_x must be [steps, batch, 4 * hidden] = [L, N, {}]: got shape {}", kName,
              4 * H, shape_str(gates_x.sizes()));
  const int64_t L = gates_x.size(0), N = gates_x.size(1);
  const Shape state = {N, H};
  EMBER_CHECK(h0.sizes() == state && c0.sizes() == state,
              "[{}] h0 and c0 must be [batch, hidden] = {}: got {} and {}", kName, shape_str(state),
              shape_str(h0.sizes()), shape_str(c0.sizes()));
  if (L == 0) {
    const TensorOptions o{gates_x.dtype(), gates_x.device()};
    return {empty({0, N, H}, o), empty({0, N, H}, o)};
  }
  if (N > 0 && H > 0 && has_kernel(core_op(ops::lstm_layer), gates_x.device(), gates_x.dtype())) {
    return fused(gates_x, w_hh, h0, c0, reverse);
  }
  return composite(gates_x, w_hh, h0, c0, reverse);
}

}  // namespace ember
