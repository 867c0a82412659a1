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
//
// gru_layer(gates_x, w_hh, b_hh, h0, reverse): one GRU layer in one direction, PyTorch's
// equations and gate order. At each step t, in walking order, with h_prev the state before:
//   [r_h, z_h, n_h] = h_prev w_hh^T + b_hh,   [r_x, z_x, n_x] = gates_x[t]
//   r = sigmoid(r_x + r_h),  z = sigmoid(z_x + z_h),  n = tanh(n_x + r * n_h)
//   h[t] = (1 - z) * n + z * h_prev
// Kernel contract ("gru_layer", optional): inputs {gates_x [L, N, 3H], w_hh [3H, H], b_hh [3H],
// h0 [N, H]}, contiguous, of one dtype (no bias: zeros); outputs {h [L, N, H], gates
// [L, N, 4H]}, contiguous, gates[t] holding r, z, n and n_h of step t; ints {reverse}.
// L, N, H > 0. "gru_layer_backward" (optional): inputs {dh [L, N, H], w_hh, h0, h, gates};
// outputs {dgates_x [L, N, 3H], dgates_h [L, N, 3H], dh0 [N, H]}. Walking the steps backwards,
// with dh_next what flows back from the step after (0 after the last):
//   dh_t = dh[t] + dh_next,   a_n = dh_t (1 - z) (1 - n^2),   a_r = a_n n_h r (1 - r),
//   a_z = dh_t (h_prev - n) z (1 - z)
//   dgates_x[t] = [a_r, a_z, a_n],   dgates_h[t] = [a_r, a_z, a_n r]
//   dh_next = dh_t z + dgates_h[t] w_hh
// and dh0 the last dh_next. The core adds dw_hh = sum_t dgates_h[t]^T h_prev (one matmul) and
// db_hh, the sum of dgates_h over steps and rows.
//
// rnn_layer(mode, x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse): a whole layer, PyTorch's nn.LSTM
// (mode 0, lstm_layer's equations with gates_x = x w_ih^T + b_ih + b_hh), nn.GRU (mode 1,
// gru_layer's with gates_x = x w_ih^T + b_ih) or nn.RNN (mode 2 tanh, 3 relu: one gate,
//   h[t] = act(gates_x[t] + h_prev w_hh^T),   gates_x = x w_ih^T + b_ih + b_hh).
// The Elman modes are always composed (elman_steps): the kernels below see modes 0 and 1 only.
// Kernel contract ("rnn_layer", optional): inputs {x [L, N, I], w_ih [G H, I], w_hh [G H, H],
// b_ih [G H], b_hh [G H], h0 [N, H], c0 [N, H] (LSTM only)}, contiguous, of one dtype (a layer
// without bias gets zeros); outputs {y [L, N, H], h_n [N, H], c_n [N, H] (LSTM only)},
// contiguous; ints {mode}. The steps run from 0 to L - 1: for the reverse direction the core
// hands the kernel x with its time axis flipped and flips y back. L, N, H, I > 0.
// "rnn_layer_backward" (optional): inputs {x, w_ih, w_hh, b_ih, b_hh, h0, dy [L, N, H],
// dh_n [N, H], c0, dc_n [N, H] (the last two LSTM only)}, the forward's inputs and the
// gradients of its outputs, contiguous; outputs {dx, dw_ih, dw_hh, db_ih, db_hh, dh0, dc0 (LSTM
// only)}, each written whole. Nothing of the forward is kept for it (Note [Whole recurrent
// layers in a backend]): a kernel that needs the forward's intermediates recomputes them.
#include "ember/ops/rnn.h"

#include <functional>
#include <vector>

#include "core/dispatch/call.h"
#include "core/dispatch/capture.h"
#include "ember/amp/autocast.h"
#include "ember/autograd/engine.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/linalg.h"
#include "ember/ops/nn.h"
#include "ember/ops/reduce.h"

namespace ember {
namespace {

using autograd::LambdaNode;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

constexpr const char* kLstmName = "lstm_layer";

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
// output, and the per-step product it would run is the same matmul (Note [Recurrent products on
// a weight packed once] in backends/cpu/ops/rnn.cpp).
// The GRU's recurrence is the same kind of op, gru_layer: the CPU backend has its kernels too
// (one product onto b_hh and one pass over the gates per step), the forward keeps r, z, n and the
// recurrent n part for the backward, and the core adds dw_hh and db_hh after it. Its
// differentiable backward (create_graph) differentiates the composite (composite_vjp).
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
      "LstmLayerBackward", kLstmName, {&gx, &w_hh, &h0, &c0}, {&h, &c},
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

// Note [Whole recurrent layers in a backend]
// A backend may run a whole LSTM or GRU layer, input projection included, as one kernel: cuDNN's
// RNN does (backends/cuda/ops/rnn.cpp), as PyTorch runs nn.LSTM and nn.GRU on the GPU, and the
// reference backend has it as plain loops, so the path is exercised and gradchecked everywhere
// (gradcheck_device_test). Without the kernel the layer is composed: one matmul projects every
// step's input, then lstm_layer (fused where the backend has it) or the GRU's steps as public
// ops. The Elman RNN (nn.RNN) is always composed: one matmul and one activation a step leave
// nothing for a fused kernel to save but dispatch, and the kernels stay LSTM and GRU only.
//  - Reverse: cuDNN's unidirectional RNN walks forward only, so the core flips the time axis of
//    x (and of dy) before the kernel and of y (and dx) after it: two copies of a sequence,
//    cheap beside the recurrence.
//  - Nothing of the forward is saved for the backward. cuDNN's training forward leaves a
//    "reserve space" whose size only cuDNN knows, which the core cannot allocate as an output of
//    a fixed shape; so the forward runs in inference mode (no reserve, faster) and the backward
//    kernel runs the training forward again before its two backward calls. This costs one
//    forward more per backward than PyTorch's cuDNN path; a kernel-sized saved buffer in the
//    plugin ABI would remove it.
//  - A backward that must itself be differentiable (create_graph) differentiates the composite
//    instead, with autograd::grad; PyTorch has no double backward through cuDNN's RNN at all.

/** The bias `b` contiguous, or `n` zeros for a layer without one (the kernels' contract). */
Tensor bias_or_zeros(const Tensor& b, int64_t n, const TensorOptions& o) {
  return b.defined() ? b.contiguous() : zeros({n}, o);
}

/** The GRU's recurrence as public ops, a step at a time: any device and dtype, differentiable. */
Tensor gru_steps(const Tensor& gx, const Tensor& w_hh, const Tensor& b_hh, const Tensor& h0,
                 bool reverse) {
  const std::vector<Tensor> steps = unbind(gx, 0);  // L x [N, 3H]
  const auto L = static_cast<int64_t>(steps.size());
  Tensor h = h0;
  std::vector<Tensor> out(steps.size());
  for (int64_t k = 0; k < L; ++k) {
    const auto t = static_cast<size_t>(reverse ? L - 1 - k : k);
    const std::vector<Tensor> gi = chunk(steps[t], 3, 1);
    const std::vector<Tensor> gh = chunk(linear(h, w_hh, b_hh), 3, 1);
    const Tensor r = sigmoid(add(gi[0], gh[0])), z = sigmoid(add(gi[1], gh[1]));
    const Tensor n = tanh(add(gi[2], mul(r, gh[2])));
    h = add(n, mul(z, sub(h, n)));  // (1 - z) n + z h
    out[t] = h;
  }
  return stack(out, 0);
}

/** The Elman RNN's recurrence as public ops, a step at a time (gates_x holds both biases):
 *  differentiable, one matmul and one activation per step. */
Tensor elman_steps(const Tensor& gx, const Tensor& w_hh, const Tensor& h0, bool relu_act,
                   bool reverse) {
  const std::vector<Tensor> steps = unbind(gx, 0);  // L x [N, H]
  const auto L = static_cast<int64_t>(steps.size());
  const Tensor w_t = w_hh.t();
  Tensor h = h0;
  std::vector<Tensor> out(steps.size());
  for (int64_t k = 0; k < L; ++k) {
    const auto t = static_cast<size_t>(reverse ? L - 1 - k : k);
    const Tensor pre = add(steps[t], matmul(h, w_t));
    h = relu_act ? relu(pre) : tanh(pre);
    out[t] = h;
  }
  return stack(out, 0);
}

/** The gradients of `inputs` (undefined where one needs none) given `grads`, those of the
 *  outputs `composite` recomputes from the inputs with public ops, by differentiating it with
 *  autograd; with create_graph (grad mode on in the backward) they are differentiable again.
 *  For a fused op's backward where no backward kernel applies. */
Grads composite_vjp(const std::function<std::vector<Tensor>()>& composite,
                    const std::vector<Tensor>& inputs, const Grads& grads) {
  const bool create_graph = autograd::is_grad_enabled();
  const autograd::AutoGradMode record_composite(true);  // recorded whatever the grad mode
  std::vector<Tensor> wrt;
  std::vector<size_t> at;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].requires_grad()) wrt.push_back(inputs[i]), at.push_back(i);
  }
  const std::vector<Tensor> outs = composite();
  const std::vector<Tensor> d =
      autograd::grad(outs, wrt, Grads(grads.begin(), grads.begin() + outs.size()),
                     /*retain_graph=*/create_graph, create_graph, /*allow_unused=*/true);
  Grads r(inputs.size());
  for (size_t k = 0; k < at.size(); ++k) r[at[k]] = d[k];
  return r;
}

/** gru_layer through the backend's kernels (as Note [The LSTM recurrence as one op] says of
 *  lstm_layer); the forward's gates are kept for the backward kernel. */
Tensor gru_fused(const Tensor& gx, const Tensor& w_hh, const Tensor& b_hh, const Tensor& h0,
                 bool reverse) {
  const int64_t L = gx.size(0), N = gx.size(1), H = w_hh.size(1);
  const DType dt = gx.dtype();
  const TensorOptions o{dt, gx.device()};
  Tensor h, gates;
  {
    autograd::NoGradGuard below_autograd;
    const Tensor x = gx.contiguous(), w = w_hh.contiguous(), h0c = h0.contiguous();
    const Tensor b = bias_or_zeros(b_hh, 3 * H, o);
    h = empty({L, N, H}, o);
    gates = empty({L, N, 4 * H}, o);
    run_kernel(attrs::gru_layer{.reverse = reverse ? 1 : 0}, dt, {&x, &w, &b, &h0c}, {&h, &gates});
  }
  if (!autograd::any_requires_grad({&gx, &w_hh, &b_hh, &h0})) return h;
  auto node = autograd::record(
      "GruLayerBackward", "gru_layer", {&gx, &w_hh, &b_hh, &h0}, {&h},
      [sx = SavedTensor(gx), sw = SavedTensor(w_hh), sb = SavedTensor(b_hh), sh0 = SavedTensor(h0),
       gates, reverse, L, N, H](const Grads& g, const LambdaNode& self) {
        const Tensor x = self.unpack(sx), w = self.unpack(sw), b = self.unpack(sb),
                     h0 = self.unpack(sh0);
        if (autograd::is_grad_enabled() ||
            !has_kernel(core_op(ops::gru_layer_backward), x.device(), x.dtype())) {
          return composite_vjp([&] { return Grads{gru_steps(x, w, b, h0, reverse)}; },
                               {x, w, b, h0}, g);
        }
        const TensorOptions o{x.dtype(), x.device()};
        const Tensor hs = self.saved_output(0), dh = g[0].contiguous(), wc = w.contiguous(),
                     h0c = h0.contiguous();
        Tensor dgx = empty({L, N, 3 * H}, o), dgh = empty({L, N, 3 * H}, o), dh0 = empty({N, H}, o);
        run_kernel(attrs::gru_layer_backward{.reverse = reverse ? 1 : 0}, x.dtype(),
                   {&dh, &wc, &h0c, &hs, &gates}, {&dgx, &dgh, &dh0});
        return Grads{dgx, recurrent_weight_grad(dgh, hs, h0c, reverse),
                     b.defined() ? sum(dgh, {0, 1}) : Tensor(), dh0};
      });
  node->save_output(h);
  return h;
}

/** The layer from public ops (Note [Whole recurrent layers in a backend]); differentiable. */
std::tuple<Tensor, Tensor, Tensor> layer_composite(RnnMode mode, const Tensor& x,
                                                   const Tensor& w_ih, const Tensor& w_hh,
                                                   const Tensor& b_ih, const Tensor& b_hh,
                                                   const Tensor& h0, const Tensor& c0,
                                                   bool reverse) {
  const int64_t last = reverse ? 0 : x.size(0) - 1;
  if (mode == RnnMode::GRU) {
    const Tensor h = gru_layer(linear(x, w_ih, b_ih), w_hh, b_hh, h0, reverse);
    return {h, h.select(0, last), Tensor()};
  }
  // Both biases go into the input projection: one [G H] add, no per-step one.
  const Tensor bias = b_ih.defined() ? add(b_ih, b_hh) : Tensor();
  if (mode != RnnMode::LSTM) {
    const Tensor h =
        elman_steps(linear(x, w_ih, bias), w_hh, h0, mode == RnnMode::RNN_RELU, reverse);
    return {h, h.select(0, last), Tensor()};
  }
  auto [h, c] = lstm_layer(linear(x, w_ih, bias), w_hh, h0, c0, reverse);
  return {h, h.select(0, last), c.select(0, last)};
}

/** x with its first (time) axis reversed, contiguous. */
Tensor flip_time(const Tensor& x) {
  const int64_t L = x.size(0);
  return index_select(x, 0, arange(L - 1, -1, -1, TensorOptions{DType::Int64, x.device()}));
}

/** The layer through the backend's rnn_layer kernel, with its backward through
 *  rnn_layer_backward (Note [Whole recurrent layers in a backend]). */
std::tuple<Tensor, Tensor, Tensor> layer_fused(RnnMode mode, const Tensor& x, const Tensor& w_ih,
                                               const Tensor& w_hh, const Tensor& b_ih,
                                               const Tensor& b_hh, const Tensor& h0,
                                               const Tensor& c0, bool reverse) {
  const bool lstm = mode == RnnMode::LSTM;
  const int64_t L = x.size(0), N = x.size(1), H = w_hh.size(1), GH = w_hh.size(0);
  const DType dt = x.dtype();
  const Device dev = x.device();
  const TensorOptions o{dt, dev};
  const attrs::rnn_layer a{.mode = static_cast<int64_t>(mode)};
  Tensor y, hn, cn;
  {
    autograd::NoGradGuard below_autograd;
    const Tensor xs = reverse ? flip_time(x) : x.contiguous();
    const Tensor wi = w_ih.contiguous(), wh = w_hh.contiguous(), h0c = h0.contiguous();
    const Tensor bi = bias_or_zeros(b_ih, GH, o), bh = bias_or_zeros(b_hh, GH, o);
    const Tensor c0c = lstm ? c0.contiguous() : Tensor();
    y = empty({L, N, H}, o);
    hn = empty({N, H}, o);
    if (lstm) {
      cn = empty({N, H}, o);
      run_kernel(a, dt, {&xs, &wi, &wh, &bi, &bh, &h0c, &c0c}, {&y, &hn, &cn});
    } else {
      run_kernel(a, dt, {&xs, &wi, &wh, &bi, &bh, &h0c}, {&y, &hn});
    }
    if (reverse) y = flip_time(y);
  }
  if (!autograd::any_requires_grad({&x, &w_ih, &w_hh, &b_ih, &b_hh, &h0, &c0})) return {y, hn, cn};
  std::vector<Tensor*> outs = {&y, &hn};
  if (lstm) outs.push_back(&cn);
  autograd::record(
      "RnnLayerBackward", "rnn_layer", {x, w_ih, w_hh, b_ih, b_hh, h0, c0}, outs,
      [sx = SavedTensor(x), swi = SavedTensor(w_ih), swh = SavedTensor(w_hh),
       sbi = SavedTensor(b_ih), sbh = SavedTensor(b_hh), sh0 = SavedTensor(h0),
       sc0 = SavedTensor(c0), mode, reverse, GH](const Grads& g, const LambdaNode& self) {
        const bool lstm = mode == RnnMode::LSTM;
        const Tensor x = self.unpack(sx), wi = self.unpack(swi), wh = self.unpack(swh),
                     bi = self.unpack(sbi), bh = self.unpack(sbh), h0 = self.unpack(sh0),
                     c0 = self.unpack(sc0);
        const std::vector<Tensor> in = {x, wi, wh, bi, bh, h0, c0};
        if (autograd::is_grad_enabled() ||
            !has_kernel(core_op(ops::rnn_layer_backward), x.device(), x.dtype())) {
          // Note [Whole recurrent layers in a backend]: the composite's own derivative.
          return composite_vjp(
              [&] {
                const auto [y, hn, cn] = layer_composite(mode, x, wi, wh, bi, bh, h0, c0, reverse);
                return lstm ? Grads{y, hn, cn} : Grads{y, hn};
              },
              in, g);
        }
        const DType dt = x.dtype();
        const TensorOptions o{dt, x.device()};
        const Tensor xs = reverse ? flip_time(x) : x.contiguous();
        const Tensor dy = reverse ? flip_time(g[0]) : g[0].contiguous();
        const Tensor wic = wi.contiguous(), whc = wh.contiguous(), h0c = h0.contiguous(),
                     dhn = g[1].contiguous();
        const Tensor bic = bias_or_zeros(bi, GH, o), bhc = bias_or_zeros(bh, GH, o);
        Tensor dx = empty_like(xs), dwi = empty_like(wic), dwh = empty_like(whc),
               dbi = empty({GH}, o), dbh = empty({GH}, o), dh0 = empty_like(h0c), dc0;
        const attrs::rnn_layer_backward a{.mode = static_cast<int64_t>(mode)};
        if (lstm) {
          const Tensor c0c = c0.contiguous(), dcn = g[2].contiguous();
          dc0 = empty_like(c0c);
          run_kernel(a, dt, {&xs, &wic, &whc, &bic, &bhc, &h0c, &dy, &dhn, &c0c, &dcn},
                     {&dx, &dwi, &dwh, &dbi, &dbh, &dh0, &dc0});
        } else {
          run_kernel(a, dt, {&xs, &wic, &whc, &bic, &bhc, &h0c, &dy, &dhn},
                     {&dx, &dwi, &dwh, &dbi, &dbh, &dh0});
        }
        if (reverse) dx = flip_time(dx);
        return Grads{dx,  dwi, dwh, bi.defined() ? dbi : Tensor(), bh.defined() ? dbh : Tensor(),
                     dh0, dc0};
      });
  return {y, hn, cn};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> rnn_layer(RnnMode mode, const Tensor& x, const Tensor& w_ih,
                                             const Tensor& w_hh, const Tensor& b_ih,
                                             const Tensor& b_hh, const Tensor& h0, const Tensor& c0,
                                             bool reverse) {
  constexpr const char* op = "rnn_layer";
  if (x.defined())
    EMBER_AUTOCAST(Lower, rnn_layer, x, mode, x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse);
  EMBER_CHECK(mode == RnnMode::LSTM || mode == RnnMode::GRU || mode == RnnMode::RNN_TANH ||
                  mode == RnnMode::RNN_RELU,
              "[{}] mode must be RnnMode::LSTM, GRU, RNN_TANH or RNN_RELU: got {}", op,
              static_cast<int64_t>(mode));
  const bool lstm = mode == RnnMode::LSTM, gru = mode == RnnMode::GRU;
  const char* cell = lstm ? "an LSTM" : gru ? "a GRU" : "an Elman RNN";
  const int64_t G = lstm ? 4 : gru ? 3 : 1;
  EMBER_CHECK_TYPE(x.defined() && w_ih.defined() && w_hh.defined() && h0.defined(),
                   "[{}] undefined tensor argument: x, w_ih, w_hh and h0 are required", op);
  EMBER_CHECK_TYPE(c0.defined() == lstm, "[{}] c0 is for the LSTM only: got {} c0 for {}", op,
                   c0.defined() ? "a" : "no", cell);
  EMBER_CHECK_TYPE(b_ih.defined() == b_hh.defined(),
                   "[{}] b_ih and b_hh come together: got only {} (pass both, or neither for a "
                   "layer without bias)",
                   op, b_ih.defined() ? "b_ih" : "b_hh");
  EMBER_CHECK_TYPE(is_floating(x.dtype()),
                   "[{}] x must be floating: got dtype {} (convert with .to(ember::f32))", op,
                   x.dtype());
  for (const Tensor* t : {&w_ih, &w_hh, &b_ih, &b_hh, &h0, &c0}) {
    EMBER_CHECK_TYPE(!t->defined() || t->dtype() == x.dtype(),
                     "[{}] every tensor must have x's dtype {}: got {}", op, x.dtype(), t->dtype());
  }
  common_device({&x, &w_ih, &w_hh, &b_ih, &b_hh, &h0, &c0}, op);
  EMBER_CHECK(w_hh.dim() == 2 && w_hh.size(0) == G * w_hh.size(1),
              "[{}] w_hh must be [{} * hidden, hidden] for {}: got shape {}", op, G, cell,
              shape_str(w_hh.sizes()));
  const int64_t H = w_hh.size(1);
  EMBER_CHECK(x.dim() == 3, "[{}] x must be [steps, batch, input]: got shape {}", op,
              shape_str(x.sizes()));
  const int64_t L = x.size(0), N = x.size(1), I = x.size(2);
  EMBER_CHECK(w_ih.dim() == 2 && w_ih.size(0) == G * H && w_ih.size(1) == I,
              "[{}] w_ih must be [{} * hidden, input] = [{}, {}]: got shape {}", op, G, G * H, I,
              shape_str(w_ih.sizes()));
  for (const Tensor* b : {&b_ih, &b_hh}) {
    EMBER_CHECK(!b->defined() || b->sizes() == Shape{G * H},
                "[{}] b_ih and b_hh must be [{} * hidden] = [{}]: got shape {}", op, G, G * H,
                shape_str(b->sizes()));
  }
  const Shape state = {N, H};
  EMBER_CHECK(h0.sizes() == state && (!lstm || c0.sizes() == state),
              "[{}] h0{} must be [batch, hidden] = {}: got {}{}", op, lstm ? " and c0" : "",
              shape_str(state), shape_str(h0.sizes()),
              lstm ? " and " + shape_str(c0.sizes()) : std::string());
  if (L == 0) return {empty({0, N, H}, {x.dtype(), x.device()}), h0, c0};
  // The layer whole, whichever way it runs (a capture's consumer writes it as one recurrent
  // node: Note [Composite ops in a capture]).
  capture::Composite region(op, {&x, &w_ih, &w_hh, &b_ih, &b_hh, &h0, &c0},
                            {static_cast<int64_t>(mode), reverse ? 1 : 0});
  std::tuple<Tensor, Tensor, Tensor> out =
      (lstm || gru) && N > 0 && H > 0 && I > 0 &&
              has_kernel(core_op(ops::rnn_layer), x.device(), x.dtype())
          ? layer_fused(mode, x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse)
          : layer_composite(mode, x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse);
  region.finish({&std::get<0>(out), &std::get<1>(out), &std::get<2>(out)});
  return out;
}

Tensor gru_layer(const Tensor& gates_x, const Tensor& w_hh, const Tensor& b_hh, const Tensor& h0,
                 bool reverse) {
  constexpr const char* op = "gru_layer";
  if (gates_x.defined())
    EMBER_AUTOCAST(Lower, gru_layer, gates_x, gates_x, w_hh, b_hh, h0, reverse);
  EMBER_CHECK_TYPE(gates_x.defined() && w_hh.defined() && h0.defined(),
                   "[{}] undefined tensor argument: gates_x, w_hh and h0 are required", op);
  EMBER_CHECK_TYPE(is_floating(gates_x.dtype()),
                   "[{}] gates_x must be floating: got dtype {} (convert with .to(ember::f32))", op,
                   gates_x.dtype());
  for (const Tensor* t : {&w_hh, &b_hh, &h0}) {
    EMBER_CHECK_TYPE(!t->defined() || t->dtype() == gates_x.dtype(),
                     "[{}] every tensor must have gates_x's dtype {}: got {}", op, gates_x.dtype(),
                     t->dtype());
  }
  common_device({&gates_x, &w_hh, &b_hh, &h0}, op);
  EMBER_CHECK(w_hh.dim() == 2 && w_hh.size(0) == 3 * w_hh.size(1),
              "[{}] w_hh must be [3 * hidden, hidden]: got shape {}", op, shape_str(w_hh.sizes()));
  const int64_t H = w_hh.size(1);
  EMBER_CHECK(gates_x.dim() == 3 && gates_x.size(2) == 3 * H,
              "[{}] gates_x must be [steps, batch, 3 * hidden] = [L, N, {}]: got shape {}", op,
              3 * H, shape_str(gates_x.sizes()));
  EMBER_CHECK(!b_hh.defined() || b_hh.sizes() == Shape{3 * H},
              "[{}] b_hh must be [3 * hidden] = [{}]: got shape {}", op, 3 * H,
              shape_str(b_hh.sizes()));
  const int64_t L = gates_x.size(0), N = gates_x.size(1);
  EMBER_CHECK(h0.sizes() == Shape({N, H}), "[{}] h0 must be [batch, hidden] = [{}, {}]: got {}", op,
              N, H, shape_str(h0.sizes()));
  if (L == 0) return empty({0, N, H}, {gates_x.dtype(), gates_x.device()});
  if (N > 0 && H > 0 && has_kernel(core_op(ops::gru_layer), gates_x.device(), gates_x.dtype())) {
    return gru_fused(gates_x, w_hh, b_hh, h0, reverse);
  }
  return gru_steps(gates_x, w_hh, b_hh, h0, reverse);
}

std::tuple<Tensor, Tensor> lstm_layer(const Tensor& gates_x, const Tensor& w_hh, const Tensor& h0,
                                      const Tensor& c0, bool reverse) {
  // Under autocast, in the lower type, as PyTorch runs its LSTM (an input projection that
  // autocast lowered would otherwise meet float32 weights).
  if (gates_x.defined()) EMBER_AUTOCAST(Lower, lstm_layer, gates_x, gates_x, w_hh, h0, c0, reverse);
  EMBER_CHECK_TYPE(gates_x.defined() && w_hh.defined() && h0.defined() && c0.defined(),
                   "[{}] undefined tensor argument: gates_x, w_hh, h0 and c0 are required",
                   kLstmName);
  EMBER_CHECK_TYPE(is_floating(gates_x.dtype()),
                   "[{}] gates_x must be floating: got dtype {} (convert with .to(ember::f32))",
                   kLstmName, gates_x.dtype());
  EMBER_CHECK_TYPE(w_hh.dtype() == gates_x.dtype() && h0.dtype() == gates_x.dtype() &&
                       c0.dtype() == gates_x.dtype(),
                   "[{}] gates_x, w_hh, h0 and c0 must have one dtype: got {}, {}, {} and {}",
                   kLstmName, gates_x.dtype(), w_hh.dtype(), h0.dtype(), c0.dtype());
  common_device({&gates_x, &w_hh, &h0, &c0}, kLstmName);
  EMBER_CHECK(w_hh.dim() == 2, "[{}] w_hh must be [4 * hidden, hidden]: got shape {}", kLstmName,
              shape_str(w_hh.sizes()));
  const int64_t H = w_hh.size(1);
  EMBER_CHECK(w_hh.size(0) == 4 * H, "[{}] w_hh must be [4 * hidden, hidden]: got shape {}",
              kLstmName, shape_str(w_hh.sizes()));
  EMBER_CHECK(gates_x.dim() == 3 && gates_x.size(2) == 4 * H,
              "[{}] gates_x must be [steps, batch, 4 * hidden] = [L, N, {}]: got shape {}",
              kLstmName, 4 * H, shape_str(gates_x.sizes()));
  const int64_t L = gates_x.size(0), N = gates_x.size(1);
  const Shape state = {N, H};
  EMBER_CHECK(h0.sizes() == state && c0.sizes() == state,
              "[{}] h0 and c0 must be [batch, hidden] = {}: got {} and {}", kLstmName,
              shape_str(state), shape_str(h0.sizes()), shape_str(c0.sizes()));
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
