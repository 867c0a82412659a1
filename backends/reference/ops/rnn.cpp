// Reference rnn_layer and its backward (contract in core/ops/rnn.cpp): a whole LSTM (mode 0) or
// GRU (mode 1) layer, steps 0 to L - 1, the textbook equations in double. The backward runs the
// forward again, keeping every step's gates, then walks the steps back (backpropagation through
// time).
//  forward   inputs {x [L, N, I], w_ih [G H, I], w_hh [G H, H], b_ih [G H], b_hh [G H],
//            h0 [N, H], c0 [N, H] (LSTM)}, contiguous; outputs {y [L, N, H], h_n, c_n (LSTM)}.
//  backward  inputs {x, w_ih, w_hh, b_ih, b_hh, h0, dy, dh_n, c0, dc_n (LSTM)};
//            outputs {dx, dw_ih, dw_hh, db_ih, db_hh, dh0, dc0 (LSTM)}.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/reference/ops/ops.h"
#include "backends/reference/walk.h"

namespace ember::reference {
namespace {

using Vec = std::vector<double>;

/** Tensor t's elements widened to double. */
template <typename T>
Vec read(const ember_tensor& t) {
  const T* p = sdk::data<const T>(t);
  Vec out(static_cast<size_t>(sdk::numel(t)));
  for (size_t i = 0; i < out.size(); ++i) out[i] = to_double(p[i]);
  return out;
}

/** Writes v into tensor t, rounded to its dtype. */
template <typename T>
void write(const Vec& v, const ember_tensor& t) {
  T* p = sdk::data<T>(t);
  for (size_t i = 0; i < v.size(); ++i) p[i] = from_double<T>(v[i]);
}

double sigmoid(double a) {
  return 1.0 / (1.0 + std::exp(-a));
}

/** The layer's sizes and weights, in double. */
struct Layer {
  bool lstm;
  int64_t L, N, I, H, G;
  Vec x, w_ih, w_hh, b_ih, b_hh, h0, c0;

  /** out[g] = b[g] + sum_k w[g, k] v[k] for the G H rows of w [G H, K]. */
  void affine(const Vec& w, const Vec& b, const double* v, int64_t K, double* out) const {
    for (int64_t g = 0; g < G * H; ++g) {
      double s = b[static_cast<size_t>(g)];
      for (int64_t k = 0; k < K; ++k) s += w[static_cast<size_t>(g * K + k)] * v[k];
      out[g] = s;
    }
  }
};

/** What one step leaves for the backward: the state it started from, its activated gates (LSTM
 *  i, f, g, o; GRU r, z, n and the recurrent n_h = (w_hh h + b_hh)_n) and the new cell state. */
struct Step {
  Vec h_prev, c_prev, gates, n_h, c;
};

/** Runs the steps; fills y, h_n, c_n and, when `keep`, every step's intermediates. */
void run_forward(const Layer& l, Vec& y, Vec& hn, Vec& cn, std::vector<Step>* keep) {
  const size_t state = static_cast<size_t>(l.N * l.H);
  Vec h = l.h0, c = l.lstm ? l.c0 : Vec(state);
  y.assign(static_cast<size_t>(l.L) * state, 0.0);
  Vec gi(static_cast<size_t>(l.G * l.H)), gh(gi.size());
  for (int64_t t = 0; t < l.L; ++t) {
    Step s{h, c, Vec(static_cast<size_t>(l.N * l.G * l.H)), Vec(state), Vec(state)};
    for (int64_t n = 0; n < l.N; ++n) {
      const auto H = static_cast<size_t>(l.H);
      const size_t row = static_cast<size_t>(n) * H;
      l.affine(l.w_ih, l.b_ih, &l.x[static_cast<size_t>((t * l.N + n) * l.I)], l.I, gi.data());
      l.affine(l.w_hh, l.b_hh, &s.h_prev[row], l.H, gh.data());
      double* gates = &s.gates[static_cast<size_t>(n * l.G * l.H)];
      for (size_t j = 0; j < H; ++j) {
        if (l.lstm) {
          const double i = sigmoid(gi[j] + gh[j]), f = sigmoid(gi[H + j] + gh[H + j]),
                       g = std::tanh(gi[2 * H + j] + gh[2 * H + j]),
                       o = sigmoid(gi[3 * H + j] + gh[3 * H + j]);
          gates[j] = i, gates[H + j] = f, gates[2 * H + j] = g, gates[3 * H + j] = o;
          c[row + j] = f * s.c_prev[row + j] + i * g;
          h[row + j] = o * std::tanh(c[row + j]);
        } else {
          const double r = sigmoid(gi[j] + gh[j]), z = sigmoid(gi[H + j] + gh[H + j]);
          const double nn = std::tanh(gi[2 * H + j] + r * gh[2 * H + j]);
          gates[j] = r, gates[H + j] = z, gates[2 * H + j] = nn;
          s.n_h[row + j] = gh[2 * H + j];
          h[row + j] = (1 - z) * nn + z * s.h_prev[row + j];
        }
      }
    }
    s.c = c;
    std::copy(h.begin(), h.end(), y.begin() + static_cast<std::ptrdiff_t>(t * l.N * l.H));
    if (keep) keep->push_back(std::move(s));
  }
  hn = h;
  cn = c;
}

template <typename T>
Layer read_layer(const ember_kernel_call* call, bool lstm) {
  Layer l{};
  l.lstm = lstm;
  const ember_tensor &x = call->inputs[0], &w_hh = call->inputs[2];
  l.L = x.sizes[0], l.N = x.sizes[1], l.I = x.sizes[2], l.H = w_hh.sizes[1], l.G = lstm ? 4 : 3;
  l.x = read<T>(x);
  l.w_ih = read<T>(call->inputs[1]);
  l.w_hh = read<T>(w_hh);
  l.b_ih = read<T>(call->inputs[3]);
  l.b_hh = read<T>(call->inputs[4]);
  l.h0 = read<T>(call->inputs[5]);
  if (lstm) l.c0 = read<T>(call->inputs[call->num_inputs == 7 ? 6 : 8]);
  return l;
}

template <typename T>
void forward(const ember_kernel_call* call, bool lstm) {
  const Layer l = read_layer<T>(call, lstm);
  Vec y, hn, cn;
  run_forward(l, y, hn, cn, nullptr);
  write<T>(y, call->outputs[0]);
  write<T>(hn, call->outputs[1]);
  if (lstm) write<T>(cn, call->outputs[2]);
}

template <typename T>
void backward(const ember_kernel_call* call, bool lstm) {
  const Layer l = read_layer<T>(call, lstm);
  Vec y, hn, cn;
  std::vector<Step> steps;
  run_forward(l, y, hn, cn, &steps);
  const Vec dy = read<T>(call->inputs[6]);
  Vec dh_next = read<T>(call->inputs[7]);
  Vec dc_next = lstm ? read<T>(call->inputs[9]) : Vec(dh_next.size());
  const auto H = static_cast<size_t>(l.H), G = static_cast<size_t>(l.G);
  Vec dx(l.x.size()), dw_ih(l.w_ih.size()), dw_hh(l.w_hh.size()), db_ih(G * H), db_hh(G * H);
  Vec da_i(G * H), da_h(G * H);  // the pre-activation gradients of the two products
  for (int64_t t = l.L - 1; t >= 0; --t) {
    const Step& s = steps[static_cast<size_t>(t)];
    Vec dh_prev(dh_next.size()), dc_prev(dc_next.size());
    for (int64_t n = 0; n < l.N; ++n) {
      const size_t row = static_cast<size_t>(n) * H;
      const double* gates = &s.gates[static_cast<size_t>(n) * G * H];
      for (size_t j = 0; j < H; ++j) {
        const double dh = dy[static_cast<size_t>(t * l.N) * H + row + j] + dh_next[row + j];
        if (lstm) {
          const double i = gates[j], f = gates[H + j], g = gates[2 * H + j], o = gates[3 * H + j];
          const double tc = std::tanh(s.c[row + j]);
          const double dc = dc_next[row + j] + dh * o * (1 - tc * tc);
          da_i[j] = dc * g * i * (1 - i);
          da_i[H + j] = dc * s.c_prev[row + j] * f * (1 - f);
          da_i[2 * H + j] = dc * i * (1 - g * g);
          da_i[3 * H + j] = dh * tc * o * (1 - o);
          for (size_t k = 0; k < 4; ++k) da_h[k * H + j] = da_i[k * H + j];
          dc_prev[row + j] = dc * f;
        } else {
          const double r = gates[j], z = gates[H + j], nn = gates[2 * H + j];
          const double dn = dh * (1 - z) * (1 - nn * nn);
          da_i[j] = da_h[j] = dn * s.n_h[row + j] * r * (1 - r);
          da_i[H + j] = da_h[H + j] = dh * (s.h_prev[row + j] - nn) * z * (1 - z);
          da_i[2 * H + j] = dn;
          da_h[2 * H + j] = dn * r;
          dh_prev[row + j] = dh * z;
        }
      }
      // The two products' transposes: into x, h_prev and the weights and biases.
      const size_t xrow = static_cast<size_t>((t * l.N + n) * l.I);
      const auto I = static_cast<size_t>(l.I);
      for (size_t g = 0; g < G * H; ++g) {
        db_ih[g] += da_i[g];
        db_hh[g] += da_h[g];
        for (size_t k = 0; k < I; ++k) {
          dx[xrow + k] += l.w_ih[g * I + k] * da_i[g];
          dw_ih[g * I + k] += da_i[g] * l.x[xrow + k];
        }
        for (size_t k = 0; k < H; ++k) {
          dh_prev[row + k] += l.w_hh[g * H + k] * da_h[g];
          dw_hh[g * H + k] += da_h[g] * s.h_prev[row + k];
        }
      }
    }
    dh_next = std::move(dh_prev);
    dc_next = std::move(dc_prev);
  }
  write<T>(dx, call->outputs[0]);
  write<T>(dw_ih, call->outputs[1]);
  write<T>(dw_hh, call->outputs[2]);
  write<T>(db_ih, call->outputs[3]);
  write<T>(db_hh, call->outputs[4]);
  write<T>(dh_next, call->outputs[5]);
  if (lstm) write<T>(dc_next, call->outputs[6]);
}

/** Checks the call against the contract: arity for the mode, contiguous tensors of x's dtype. */
bool valid(const ember_kernel_call* call, bool lstm, bool backward) {
  const int in = backward ? (lstm ? 10 : 8) : (lstm ? 7 : 6);
  const int out = backward ? (lstm ? 7 : 6) : (lstm ? 3 : 2);
  if (call->num_inputs != in || call->num_outputs != out) return false;
  if (call->inputs[0].ndim != 3 || call->inputs[2].ndim != 2) return false;
  for (int i = 0; i < in; ++i) {
    if (!sdk::is_contiguous(call->inputs[i]) || call->inputs[i].dtype != call->inputs[0].dtype) {
      return false;
    }
  }
  for (int i = 0; i < out; ++i) {
    if (!sdk::is_contiguous(call->outputs[i])) return false;
  }
  return true;
}

template <bool kBackward>
int32_t rnn_kernel(const ember_kernel_call* call, const char* name, int64_t mode) {
  const bool lstm = mode == 0;
  if ((mode != 0 && mode != 1) || !valid(call, lstm, kBackward)) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: bad arguments", name);
  }
  return visit_floating(call, call->inputs[0].dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kBackward) {
      backward<T>(call, lstm);
    } else {
      forward<T>(call, lstm);
    }
  });
}

}  // namespace

int32_t rnn_layer(const ember_kernel_call* call) {
  return rnn_kernel<false>(call, "rnn_layer", sdk::attrs<attrs::rnn_layer>(call).mode);
}

int32_t rnn_layer_backward(const ember_kernel_call* call) {
  return rnn_kernel<true>(call, "rnn_layer_backward",
                          sdk::attrs<attrs::rnn_layer_backward>(call).mode);
}

}  // namespace ember::reference
