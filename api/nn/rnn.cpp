// LSTM, GRU and RNN: every layer and direction is one ember::rnn_layer, which a backend may run
// whole (cuDNN's RNN on the GPU) and the core otherwise composes from one input projection and
// the recurrence (Note [Whole recurrent layers in a backend] in core/ops/rnn.cpp). The cells
// (RNNCell, LSTMCell, GRUCell) are the same op over one step.
#include "ember/nn/rnn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <utility>

#include <ember/ember.h>

#include "ember/nn/init.h"

namespace ember::nn {
namespace {

/** The gates per hidden unit of `mode`'s cell, as PyTorch stacks them in weight_ih. */
int64_t gates_of(RnnMode mode) {
  return mode == RnnMode::LSTM ? 4 : mode == RnnMode::GRU ? 3 : 1;
}

/** The Elman mode PyTorch's nonlinearity names ("tanh" or "relu"); `who` names the module. */
RnnMode elman_mode(const std::string& nonlinearity, const char* who) {
  EMBER_CHECK(nonlinearity == "tanh" || nonlinearity == "relu",
              "[nn.{}] unknown nonlinearity: got '{}' (expected 'tanh' or 'relu')", who,
              nonlinearity);
  return nonlinearity == "tanh" ? RnnMode::RNN_TANH : RnnMode::RNN_RELU;
}

/** Every parameter in `w` drawn from U(-1/sqrt(hidden), 1/sqrt(hidden)), PyTorch's default. */
void init_recurrent(const std::vector<Tensor*>& w, int64_t hidden) {
  const double k = 1.0 / std::sqrt(static_cast<double>(hidden));
  for (Tensor* t : w) {
    if (t->defined()) init::uniform_(*t, -k, k);
  }
}

// Note [LSTM projections as steps]
// With proj_size P, PyTorch's LSTM carries h = (o * tanh(c)) W_hr^T, P features, into the next
// step and layer. No backend's whole-layer kernel takes W_hr, so such a layer runs as its steps
// of core ops (one input projection for all steps, then per step one matmul, the gates and the
// projection): on every device, differentiable, at the speed of a composed recurrence.
std::tuple<Tensor, Tensor, Tensor> projected_lstm_layer(const Tensor& x, const Tensor& w_ih,
                                                        const Tensor& w_hh, const Tensor& b_ih,
                                                        const Tensor& b_hh, const Tensor& w_hr,
                                                        const Tensor& h0, const Tensor& c0,
                                                        bool reverse) {
  Tensor gates_x = matmul(x, w_ih.t());  // [L, N, 4H]
  if (b_ih.defined()) gates_x = add(gates_x, add(b_ih, b_hh));
  const int64_t steps = x.size(0);
  Tensor h = h0, c = c0;
  std::vector<Tensor> outs(static_cast<size_t>(steps));
  for (int64_t k = 0; k < steps; ++k) {
    const int64_t t = reverse ? steps - 1 - k : k;
    const std::vector<Tensor> g = chunk(add(gates_x.select(0, t), matmul(h, w_hh.t())), 4, 1);
    c = add(mul(sigmoid(g[1]), c), mul(sigmoid(g[0]), tanh(g[2])));
    h = matmul(mul(sigmoid(g[3]), tanh(c)), w_hr.t());
    outs[static_cast<size_t>(t)] = h;
  }
  return {stack(outs, 0), h, c};
}

/** `v` as an int64 tensor [v.size()] on `device`. */
Tensor int64_tensor(const std::vector<int64_t>& v, Device device) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, TensorOptions(DType::Int64));
  if (!v.empty()) std::memcpy(t.data_ptr(), v.data(), v.size() * sizeof(int64_t));
  return device == t.device() ? t : t.to(device);
}

/** The values of an integer tensor, read on the host. */
std::vector<int64_t> int64_values(const Tensor& t) {
  const Tensor c = t.to(Device("cpu")).to(DType::Int64).contiguous();
  const auto* p = static_cast<const int64_t*>(c.data_ptr());
  return std::vector<int64_t>(p, p + c.numel());
}

// Note [Packed sequences as one index]
// A packed batch holds, for t = 0, 1, ... and each sorted place b with lengths[b] > t, step t of
// sequence sorted[b]: row t N + sorted[b] of the padded batch seen as [T N, *]. Packing is one
// index_select of those rows and unpacking one index_select from the packed rows plus one row of
// padding_value (where a step is past its sequence's end), so both are differentiable, run on any
// device, and are each other's inverse on the steps that exist.

/** The padded rows (t N + n of [T N, *]) that the packed rows hold, in packed order, for
 *  `lengths` in the batch's order and `sorted` its longest-first order. */
std::vector<int64_t> packed_rows(const std::vector<int64_t>& lengths,
                                 const std::vector<int64_t>& sorted) {
  const int64_t n = static_cast<int64_t>(lengths.size());
  const int64_t longest = n == 0 ? 0 : lengths[static_cast<size_t>(sorted[0])];
  std::vector<int64_t> rows;
  for (int64_t t = 0; t < longest; ++t)
    for (int64_t b : sorted) {
      if (lengths[static_cast<size_t>(b)] <= t) break;
      rows.push_back(t * n + b);
    }
  return rows;
}

/** Packs [T, N, *] (time-major, the batch's order) with `lengths` and the sorted order. */
PackedSequence pack_sorted(const Tensor& padded, const std::vector<int64_t>& lengths,
                           const std::vector<int64_t>& sorted, bool was_sorted) {
  const int64_t n = static_cast<int64_t>(lengths.size());
  const std::vector<int64_t> rows = packed_rows(lengths, sorted);
  const int64_t longest = lengths[static_cast<size_t>(sorted[0])];
  std::vector<int64_t> batch_sizes(static_cast<size_t>(longest), 0), unsorted(sorted.size());
  for (int64_t len : lengths)
    for (int64_t t = 0; t < len; ++t) ++batch_sizes[static_cast<size_t>(t)];
  for (size_t b = 0; b < sorted.size(); ++b) unsorted[static_cast<size_t>(sorted[b])] = b;
  Shape flat{padded.size(0) * n};
  for (int64_t d = 2; d < padded.dim(); ++d) flat.push_back(padded.size(d));
  PackedSequence p;
  p.data = index_select(padded.reshape(flat), 0, int64_tensor(rows, padded.device()));
  p.batch_sizes = int64_tensor(batch_sizes, Device("cpu"));
  if (!was_sorted) {
    p.sorted_indices = int64_tensor(sorted, padded.device());
    p.unsorted_indices = int64_tensor(unsorted, padded.device());
  }
  return p;
}

/** The lengths and sorted order of a packed batch, from its batch_sizes and sorted_indices. */
std::pair<std::vector<int64_t>, std::vector<int64_t>> packed_layout(const PackedSequence& p) {
  EMBER_CHECK_TYPE(p.data.defined() && p.batch_sizes.defined(),
                   "[nn.utils.rnn] a PackedSequence needs data and batch_sizes");
  const std::vector<int64_t> sizes = int64_values(p.batch_sizes);
  EMBER_CHECK(!sizes.empty() && sizes[0] >= 1,
              "[nn.utils.rnn] batch_sizes must start with the batch size (>= 1): got {}",
              shape_str(sizes));
  int64_t total = 0;
  for (size_t t = 0; t < sizes.size(); ++t) {
    EMBER_CHECK(sizes[t] >= 1 && (t == 0 || sizes[t] <= sizes[t - 1]),
                "[nn.utils.rnn] batch_sizes must be positive and never grow: got {}",
                shape_str(sizes));
    total += sizes[t];
  }
  EMBER_CHECK(p.data.dim() >= 1 && p.data.size(0) == total,
              "[nn.utils.rnn] data must have sum(batch_sizes) = {} rows: got shape {}", total,
              shape_str(p.data.sizes()));
  const int64_t n = sizes[0];
  std::vector<int64_t> sorted(static_cast<size_t>(n));
  std::iota(sorted.begin(), sorted.end(), 0);
  if (p.sorted_indices.defined()) {
    sorted = int64_values(p.sorted_indices);
    std::vector<int64_t> seen = sorted;
    std::sort(seen.begin(), seen.end());
    bool perm = static_cast<int64_t>(seen.size()) == n;
    for (int64_t i = 0; perm && i < n; ++i) perm = seen[static_cast<size_t>(i)] == i;
    EMBER_CHECK(perm, "[nn.utils.rnn] sorted_indices must be a permutation of 0..{}: got {}", n - 1,
                shape_str(sorted));
  }
  std::vector<int64_t> lengths(static_cast<size_t>(n), 0);
  for (int64_t size : sizes)
    for (int64_t b = 0; b < size; ++b) ++lengths[static_cast<size_t>(sorted[b])];
  return {lengths, sorted};
}

/** The packed rows of `p` (with its lengths and sorted order, from packed_layout) as a padded
 *  batch [steps, N, *] in the batch's order, padding_value past each sequence's end. */
Tensor unpack_padded(const PackedSequence& p, const std::vector<int64_t>& lengths,
                     const std::vector<int64_t>& sorted, int64_t steps, double padding_value) {
  const int64_t n = static_cast<int64_t>(lengths.size());
  // Note [Packed sequences as one index]: row t N + b of the result is packed row k, or the
  // padding row (the last) where step t is past sequence b's end.
  const Tensor& data = p.data;
  const int64_t packed = data.size(0);
  std::vector<int64_t> source(static_cast<size_t>(steps * n), packed);
  const std::vector<int64_t> rows = packed_rows(lengths, sorted);
  for (size_t k = 0; k < rows.size(); ++k) source[static_cast<size_t>(rows[k])] = k;
  Shape row = data.sizes();
  row[0] = 1;
  const Tensor rows_and_pad =
      cat({data, full(row, padding_value, TensorOptions(data.dtype(), data.device()))}, 0);
  Shape out{steps, n};
  for (int64_t d = 1; d < data.dim(); ++d) out.push_back(data.size(d));
  return index_select(rows_and_pad, 0, int64_tensor(source, data.device())).reshape(out);
}

}  // namespace

PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths, bool batch_first,
                                    bool enforce_sorted) {
  EMBER_CHECK_TYPE(input.defined() && lengths.defined(),
                   "[nn.utils.rnn.pack_padded_sequence] undefined input or lengths");
  EMBER_CHECK_TYPE(!is_floating(lengths.dtype()) && lengths.dtype() != DType::Bool,
                   "[nn.utils.rnn.pack_padded_sequence] lengths must be integers: got {}",
                   dtype_name(lengths.dtype()));
  EMBER_CHECK(input.dim() >= 2,
              "[nn.utils.rnn.pack_padded_sequence] input must be [L, N, *] or [N, L, *]: got "
              "shape {}",
              shape_str(input.sizes()));
  const Tensor x = batch_first ? input.transpose(0, 1) : input;
  const std::vector<int64_t> len = int64_values(lengths);
  EMBER_CHECK(lengths.dim() == 1 && static_cast<int64_t>(len.size()) == x.size(1),
              "[nn.utils.rnn.pack_padded_sequence] expected {} lengths (one per sequence): got "
              "shape {}",
              x.size(1), shape_str(lengths.sizes()));
  for (int64_t l : len)
    EMBER_CHECK(l >= 1 && l <= x.size(0),
                "[nn.utils.rnn.pack_padded_sequence] every length must be in [1, {}] (the "
                "padded length): got {}",
                x.size(0), shape_str(len));
  std::vector<int64_t> sorted(len.size());
  std::iota(sorted.begin(), sorted.end(), 0);
  if (enforce_sorted) {
    EMBER_CHECK(std::is_sorted(len.rbegin(), len.rend()),
                "[nn.utils.rnn.pack_padded_sequence] lengths must not increase with "
                "enforce_sorted=True: got {} (pass enforce_sorted=False)",
                shape_str(len));
  } else {
    std::stable_sort(sorted.begin(), sorted.end(), [&](int64_t a, int64_t b) {
      return len[static_cast<size_t>(a)] > len[static_cast<size_t>(b)];
    });
  }
  return pack_sorted(x, len, sorted, enforce_sorted);
}

std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first,
                                               double padding_value,
                                               std::optional<int64_t> total_length) {
  const auto [lengths, sorted] = packed_layout(sequence);
  const int64_t longest = sequence.batch_sizes.size(0);
  const int64_t steps = total_length.value_or(longest);
  EMBER_CHECK(steps >= longest,
              "[nn.utils.rnn.pad_packed_sequence] total_length must be at least the longest "
              "length {}: got {}",
              longest, steps);
  Tensor padded = unpack_padded(sequence, lengths, sorted, steps, padding_value);
  if (batch_first) padded = padded.transpose(0, 1);
  return {padded, int64_tensor(lengths, Device("cpu"))};
}

PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted) {
  EMBER_CHECK(!sequences.empty(), "[nn.utils.rnn.pack_sequence] needs at least one sequence");
  std::vector<int64_t> lengths;
  for (const Tensor& s : sequences) {
    EMBER_CHECK_TYPE(s.defined() && s.dim() >= 1,
                     "[nn.utils.rnn.pack_sequence] every sequence must be a tensor [L, *]");
    lengths.push_back(s.size(0));
  }
  return pack_padded_sequence(pad_sequence(sequences), int64_tensor(lengths, Device("cpu")), false,
                              enforce_sorted);
}

// PyTorch's parameter names and layouts (weight_ih_l{k}[_reverse] [gates * H, in],
// weight_hh_l{k} [gates * H, H], bias_ih_l{k}, bias_hh_l{k}, registered layer by layer, forward
// before reverse) make state_dicts move unchanged.

RNNBase::RNNBase(std::string type_name, RnnMode mode, int64_t input, int64_t hidden, RNNOptions o)
    : Module(std::move(type_name)),
      input_size(input),
      hidden_size(hidden),
      options(o),
      mode_(mode) {
  const int64_t gates = gates_of(mode);
  EMBER_CHECK(input > 0 && hidden > 0 && o.num_layers > 0,
              "[nn.{}] input_size, hidden_size and num_layers must be positive: got {}, {}, {}",
              this->type_name(), input, hidden, o.num_layers);
  EMBER_CHECK(o.dropout >= 0 && o.dropout <= 1, "[nn.{}] dropout must be in [0, 1]: got {}",
              this->type_name(), o.dropout);
  EMBER_CHECK(
      o.proj_size == 0 || (mode == RnnMode::LSTM && o.proj_size > 0 && o.proj_size < hidden),
      "[nn.{}] proj_size must be 0, or (LSTM only) positive and smaller than "
      "hidden_size {}: got {}",
      this->type_name(), hidden, o.proj_size);
  const int64_t dirs = o.bidirectional ? 2 : 1;
  const int64_t out = o.proj_size > 0 ? o.proj_size : hidden;  // h's features
  for (int64_t layer = 0; layer < o.num_layers; ++layer) {
    const int64_t in = layer == 0 ? input : out * dirs;
    for (int64_t d = 0; d < dirs; ++d) {
      const std::string suffix = fmt::format("_l{}{}", layer, d == 1 ? "_reverse" : "");
      std::vector<Tensor*> w;
      w.push_back(&register_parameter("weight_ih" + suffix, empty({gates * hidden, in})));
      w.push_back(&register_parameter("weight_hh" + suffix, empty({gates * hidden, out})));
      w.push_back(o.bias ? &register_parameter("bias_ih" + suffix, empty({gates * hidden}))
                         : &no_bias_);
      w.push_back(o.bias ? &register_parameter("bias_hh" + suffix, empty({gates * hidden}))
                         : &no_bias_);
      if (o.proj_size > 0)
        w.push_back(&register_parameter("weight_hr" + suffix, empty({o.proj_size, hidden})));
      weights_.push_back(std::move(w));
    }
  }
  reset_parameters();
}

void RNNBase::reset_parameters() {
  for (const auto& w : weights_) init_recurrent(w, hidden_size);
}

std::string RNNBase::extra_repr() const {
  std::string s = fmt::format("{}, {}", input_size, hidden_size);
  if (options.proj_size != 0) s += fmt::format(", proj_size={}", options.proj_size);
  if (options.num_layers != 1) s += fmt::format(", num_layers={}", options.num_layers);
  if (!options.bias) s += ", bias=False";
  if (options.batch_first) s += ", batch_first=True";
  if (options.dropout != 0) s += fmt::format(", dropout={}", options.dropout);
  if (options.bidirectional) s += ", bidirectional=True";
  return s;
}

std::tuple<Tensor, Tensor, Tensor> RNNBase::run(const Tensor& input, const Tensor& h0,
                                                const Tensor& c0) {
  const std::string name = "nn." + type_name();
  const bool has_cell = mode_ == RnnMode::LSTM;
  EMBER_CHECK_TYPE(input.defined(), "[{}] undefined input", name);
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3,
              "[{}] expected a 2-d (unbatched) or 3-d input: got shape {}", name,
              shape_str(input.sizes()));
  EMBER_CHECK(input.size(input.dim() - 1) == input_size,
              "[{}] expected {} input features (the last dim): got shape {}", name, input_size,
              shape_str(input.sizes()));
  const bool batched = input.dim() == 3;
  // [L, N, I] from here on.
  Tensor x = batched ? (options.batch_first ? input.transpose(0, 1) : input) : input.unsqueeze(1);
  const int64_t batch = x.size(1), dirs = options.bidirectional ? 2 : 1;
  const int64_t proj = options.proj_size;
  const auto state = [&](const Tensor& s, const char* what) {
    const int64_t features = proj > 0 && what[0] == 'h' ? proj : hidden_size;
    const Shape state_shape = {options.num_layers * dirs, batch, features};
    if (!s.defined()) return zeros(state_shape, {x.dtype(), x.device()});
    const Tensor b = batched ? s : s.unsqueeze(1);
    EMBER_CHECK(b.sizes() == state_shape, "[{}] expected {} of shape {}: got {}", name, what,
                shape_str(batched ? state_shape : Shape{state_shape[0], state_shape[2]}),
                shape_str(s.sizes()));
    return b;
  };
  const Tensor h_init = state(h0, "h0"), c_init = has_cell ? state(c0, "c0") : Tensor();
  std::vector<Tensor> h_n, c_n;
  for (int64_t layer = 0; layer < options.num_layers; ++layer) {
    std::vector<Tensor> outputs;
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t at = layer * dirs + d;
      const std::vector<Tensor*>& w = weights_[static_cast<size_t>(at)];
      const Tensor hs = h_init.select(0, at), cs = has_cell ? c_init.select(0, at) : Tensor();
      auto [out, h, c] =
          proj > 0 ? projected_lstm_layer(x, *w[0], *w[1], *w[2], *w[3], *w[4], hs, cs, d == 1)
                   : rnn_layer(mode_, x, *w[0], *w[1], *w[2], *w[3], hs, cs, d == 1);
      outputs.push_back(out);
      h_n.push_back(h);
      if (has_cell) c_n.push_back(c);
    }
    x = dirs == 2 ? cat(outputs, 2) : outputs[0];
    if (options.dropout > 0 && is_training() && layer + 1 < options.num_layers) {
      x = dropout(x, options.dropout, true);
    }
  }
  Tensor output = batched ? (options.batch_first ? x.transpose(0, 1) : x) : x.squeeze(1);
  Tensor hn = stack(h_n, 0), cn = has_cell ? stack(c_n, 0) : Tensor();
  if (!batched) {
    hn = hn.squeeze(1);
    if (has_cell) cn = cn.squeeze(1);
  }
  return {output, hn, cn};
}

// Note [Packed sequences through whole layers]
// Each layer and direction runs whole (rnn_layer), over every step of its input, so a sequence
// shorter than the batch would run on through its padding: its last state would be the padding's,
// and its reverse direction would start in the padding. So the batch is split by length: the
// sequences of each length run the whole stack over exactly their steps (reverse directions then
// start at their own last step), and the outputs, zero-padded to the longest, and the states go
// back to their places. That is one run per distinct length; every op is differentiable.
std::tuple<PackedSequence, Tensor, Tensor> RNNBase::run(const PackedSequence& input,
                                                        const Tensor& h0, const Tensor& c0) {
  const auto [lengths, sorted] = packed_layout(input);
  // [T, N, I], the batch's order.
  const Tensor padded =
      unpack_padded(input, lengths, sorted, input.batch_sizes.size(0), /*padding_value=*/0.0);
  const int64_t batch = padded.size(1);
  for (const Tensor* s : {&h0, &c0})
    EMBER_CHECK(!s->defined() || (s->dim() == 3 && s->size(1) == batch),
                "[nn.{}] the initial state of packed sequences must be [layers * directions, "
                "{}, hidden] (the batch's order): got shape {}",
                type_name(), batch, shape_str(s->sizes()));
  const int64_t steps = padded.size(0);
  std::map<int64_t, std::vector<int64_t>, std::greater<>> by_length;
  for (size_t b = 0; b < lengths.size(); ++b) by_length[lengths[b]].push_back(b);
  std::vector<Tensor> outs, hs, cs;
  std::vector<int64_t> order;
  for (const auto& [length, members] : by_length) {
    const Tensor index = int64_tensor(members, padded.device());
    Tensor x = index_select(padded.slice(0, 0, length), 1, index);
    if (options.batch_first) x = x.transpose(0, 1);
    auto [out, h, c] = run(x, h0.defined() ? index_select(h0, 1, index) : Tensor(),
                           c0.defined() ? index_select(c0, 1, index) : Tensor());
    if (options.batch_first) out = out.transpose(0, 1);
    const int64_t after[] = {0, 0, 0, 0, 0, steps - length};  // zeros after the last step
    outs.push_back(length < steps ? pad(out, IntList(after, 6)) : out);
    hs.push_back(h);
    if (c.defined()) cs.push_back(c);
    order.insert(order.end(), members.begin(), members.end());
  }
  std::vector<int64_t> place(order.size());
  for (size_t k = 0; k < order.size(); ++k) place[static_cast<size_t>(order[k])] = k;
  const Tensor back = int64_tensor(place, padded.device());
  const Tensor out = index_select(cat(outs, 1), 1, back);
  const Tensor hn = index_select(cat(hs, 1), 1, back);
  const Tensor cn = cs.empty() ? Tensor() : index_select(cat(cs, 1), 1, back);
  return {pack_sorted(out, lengths, sorted, !input.sorted_indices.defined()), hn, cn};
}

LSTM::LSTM(int64_t input, int64_t hidden, RNNOptions o)
    : RNNBase("LSTM", RnnMode::LSTM, input, hidden, o) {}

std::tuple<Tensor, Tensor, Tensor> LSTM::forward(const Tensor& input, const Tensor& h0,
                                                 const Tensor& c0) {
  return run(input, h0, c0);
}

std::tuple<PackedSequence, Tensor, Tensor> LSTM::forward(const PackedSequence& input,
                                                         const Tensor& h0, const Tensor& c0) {
  return run(input, h0, c0);
}

Tensor LSTM::forward(const Tensor& input) {
  return std::get<0>(forward(input, Tensor(), Tensor()));
}

GRU::GRU(int64_t input, int64_t hidden, RNNOptions o)
    : RNNBase("GRU", RnnMode::GRU, input, hidden, o) {}

std::tuple<Tensor, Tensor> GRU::forward(const Tensor& input, const Tensor& h0) {
  const auto r = run(input, h0, Tensor());
  return {std::get<0>(r), std::get<1>(r)};
}

std::tuple<PackedSequence, Tensor> GRU::forward(const PackedSequence& input, const Tensor& h0) {
  const auto r = run(input, h0, Tensor());
  return {std::get<0>(r), std::get<1>(r)};
}

Tensor GRU::forward(const Tensor& input) {
  return std::get<0>(forward(input, Tensor()));
}

RNN::RNN(int64_t input, int64_t hidden, RNNOptions o, const std::string& nonlinearity)
    : RNNBase("RNN", elman_mode(nonlinearity, "RNN"), input, hidden, o),
      nonlinearity(nonlinearity) {}

std::tuple<Tensor, Tensor> RNN::forward(const Tensor& input, const Tensor& h0) {
  const auto r = run(input, h0, Tensor());
  return {std::get<0>(r), std::get<1>(r)};
}

std::tuple<PackedSequence, Tensor> RNN::forward(const PackedSequence& input, const Tensor& h0) {
  const auto r = run(input, h0, Tensor());
  return {std::get<0>(r), std::get<1>(r)};
}

Tensor RNN::forward(const Tensor& input) {
  return std::get<0>(forward(input, Tensor()));
}

// The cells register PyTorch's four parameters under its names (weight_ih, weight_hh, bias_ih,
// bias_hh; the biases as empty slots without bias, as PyTorch registers None), so state_dicts
// move unchanged, and run one step of rnn_layer: the recurrent layers' checks, kernels, fused
// LSTM recurrence and derivatives, with no second copy of the gate equations.

RNNCellBase::RNNCellBase(std::string type_name, RnnMode mode, int64_t input, int64_t hidden,
                         bool with_bias)
    : Module(std::move(type_name)),
      input_size(input),
      hidden_size(hidden),
      bias(with_bias),
      mode_(mode) {
  EMBER_CHECK(input > 0 && hidden > 0,
              "[nn.{}] input_size and hidden_size must be positive: got {} and {}",
              this->type_name(), input, hidden);
  const int64_t gates = gates_of(mode);
  weight_ih_ = &register_parameter("weight_ih", empty({gates * hidden, input}));
  weight_hh_ = &register_parameter("weight_hh", empty({gates * hidden, hidden}));
  bias_ih_ = &register_parameter("bias_ih", with_bias ? empty({gates * hidden}) : Tensor());
  bias_hh_ = &register_parameter("bias_hh", with_bias ? empty({gates * hidden}) : Tensor());
  reset_parameters();
}

void RNNCellBase::reset_parameters() {
  init_recurrent({weight_ih_, weight_hh_, bias_ih_, bias_hh_}, hidden_size);
}

std::string RNNCellBase::extra_repr() const {
  return fmt::format("{}, {}{}", input_size, hidden_size, bias ? "" : ", bias=False");
}

std::tuple<Tensor, Tensor> RNNCellBase::step(const Tensor& input, const Tensor& hx,
                                             const Tensor& cx) {
  const std::string name = "nn." + type_name();
  const bool lstm = mode_ == RnnMode::LSTM;
  EMBER_CHECK_TYPE(input.defined(), "[{}] undefined input", name);
  EMBER_CHECK(input.dim() == 1 || input.dim() == 2,
              "[{}] expected a 1-d (unbatched) or 2-d input: got shape {}", name,
              shape_str(input.sizes()));
  EMBER_CHECK(input.size(input.dim() - 1) == input_size,
              "[{}] expected {} input features (the last dim): got shape {}", name, input_size,
              shape_str(input.sizes()));
  const bool batched = input.dim() == 2;
  const Tensor x = batched ? input : input.unsqueeze(0);  // [N, I]
  const Shape state_shape = {x.size(0), hidden_size};
  const auto state = [&](const Tensor& s, const char* what) {
    if (!s.defined()) return zeros(state_shape, {x.dtype(), x.device()});
    EMBER_CHECK(s.sizes() == (batched ? state_shape : Shape{hidden_size}),
                "[{}] expected {} of shape {}: got {}", name, what,
                shape_str(batched ? state_shape : Shape{hidden_size}), shape_str(s.sizes()));
    return batched ? s : s.unsqueeze(0);
  };
  const Tensor h0 = state(hx, lstm ? "hx[0]" : "hx");
  const Tensor c0 = lstm ? state(cx, "hx[1]") : Tensor();
  auto [y, h, c] =
      rnn_layer(mode_, x.unsqueeze(0), *weight_ih_, *weight_hh_, *bias_ih_, *bias_hh_, h0, c0);
  if (!batched) {
    h = h.squeeze(0);
    if (lstm) c = c.squeeze(0);
  }
  return {h, c};
}

RNNCell::RNNCell(int64_t input, int64_t hidden, bool with_bias, const std::string& nonlinearity)
    : RNNCellBase("RNNCell", elman_mode(nonlinearity, "RNNCell"), input, hidden, with_bias),
      nonlinearity(nonlinearity) {}

Tensor RNNCell::forward(const Tensor& input, const Tensor& hx) {
  return std::get<0>(step(input, hx, Tensor()));
}

Tensor RNNCell::forward(const Tensor& input) {
  return forward(input, Tensor());
}

std::string RNNCell::extra_repr() const {
  std::string s = RNNCellBase::extra_repr();
  if (nonlinearity != "tanh") s += fmt::format(", nonlinearity={}", nonlinearity);
  return s;
}

LSTMCell::LSTMCell(int64_t input, int64_t hidden, bool with_bias)
    : RNNCellBase("LSTMCell", RnnMode::LSTM, input, hidden, with_bias) {}

std::tuple<Tensor, Tensor> LSTMCell::forward(const Tensor& input, const Tensor& hx,
                                             const Tensor& cx) {
  return step(input, hx, cx);
}

Tensor LSTMCell::forward(const Tensor& input) {
  return std::get<0>(step(input, Tensor(), Tensor()));
}

GRUCell::GRUCell(int64_t input, int64_t hidden, bool with_bias)
    : RNNCellBase("GRUCell", RnnMode::GRU, input, hidden, with_bias) {}

Tensor GRUCell::forward(const Tensor& input, const Tensor& hx) {
  return std::get<0>(step(input, hx, Tensor()));
}

Tensor GRUCell::forward(const Tensor& input) {
  return forward(input, Tensor());
}

}  // namespace ember::nn
