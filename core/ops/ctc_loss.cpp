// ctc_loss: the connectionist temporal classification loss (Graves et al., 2006), a composite of
// public ops (no kernel of its own; Note [ctc_loss as the alpha recursion]).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/dispatch/call.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/loss.h"
#include "ember/ops/reduce.h"

namespace ember {
namespace {

// Note [ctc_loss as the alpha recursion]
// For one batch entry with target l (length S) the extended target l' puts a blank before, between
// and after the labels (length 2S + 1), and alpha_t(s) is the log-probability of all alignments
// of the first t + 1 frames that end at l'(s): alpha_0(0) = lp_0(blank), alpha_0(1) = lp_0(l(0)),
// alpha_t(s) = logsumexp(alpha_{t-1}(s), alpha_{t-1}(s - 1), alpha_{t-1}(s - 2) where
// l'(s) != l'(s - 2)) + lp_t(l'(s)); the loss is -logsumexp(alpha_{T-1}(2S), alpha_{T-1}(2S - 1))
// with T the entry's input length. The batch runs together over the longest extended target:
// each frame is one step of [N, 2 S_max + 1] ops on the frame's log-probabilities gathered at
// l' (one index_select for all frames, unbound into steps), an entry past its input length
// keeps its alpha (where), and positions past an entry's 2S are computed but never read (alpha
// only flows to larger s). Unreachable states are -inf: the log-sum-exps go through
// log_add_exp, whose rows of -inf give -inf with a zero gradient (a bare logsumexp's gradient
// there is exp(-inf - -inf) = NaN, which would poison every gradient it meets). The gradient is
// autograd's, the exact derivative in log_probs (PyTorch's kernel returns it plus exp(log_probs)
// on the frames in range, the gradient as seen through a log_softmax, where both agree). As in
// PyTorch: an entry with input length 0 costs 0 with an empty target, else inf; an entry whose
// target cannot fit costs inf, with a zero gradient (one longer than its input is settled on the
// host, without states, so the states never outgrow 2 T + 1), and zero_infinity turns inf into 0;
// Mean divides each loss by its target length (at least 1), then averages over the batch.

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/** logsumexp of x over dim, -inf with a zero gradient where the whole row is -inf. */
Tensor log_add_exp(const Tensor& x, int64_t dim) {
  const Tensor dead = eq(amax(x.detach(), {dim}, /*keepdim=*/true), Scalar(kNegInf));
  const Tensor safe = where(dead, zeros_like(x), x);
  return where(logical_not(dead.squeeze(dim)), logsumexp(safe, {dim}), Scalar(kNegInf));
}

/** A host-made tensor of `dtype` on `device` holding `v`, of shape `sizes`. */
template <class T>
Tensor host_tensor(const std::vector<T>& v, Shape sizes, DType dtype, Device device) {
  Tensor t = empty(sizes, {dtype, Device::cpu()});
  std::copy(v.begin(), v.end(), static_cast<T*>(t.data_ptr()));
  return t.to(device);
}

/** The entries of an integer tensor of lengths, read on the host. */
std::vector<int64_t> host_lengths(const Tensor& t, const char* what) {
  EMBER_CHECK_TYPE(t.defined(), "[ctc_loss] undefined tensor argument ({})", what);
  EMBER_CHECK_TYPE(is_integral(t.dtype()),
                   "[ctc_loss] {} must be an integer tensor: got {} (convert with "
                   ".to(ember::i64))",
                   what, t.dtype());
  EMBER_CHECK(t.dim() <= 1, "[ctc_loss] {} must be 0-d or 1-d: got shape {}", what,
              shape_str(t.sizes()));
  const Tensor h = t.to(Device::cpu()).to(DType::Int64).contiguous();
  const int64_t* p = h.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + h.numel());
}

}  // namespace

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, IntList input_lengths,
                IntList target_lengths, int64_t blank, Reduction reduction, bool zero_infinity) {
  EMBER_CHECK_TYPE(log_probs.defined() && targets.defined(),
                   "[ctc_loss] undefined tensor argument");
  EMBER_CHECK(reduction != Reduction::BatchMean,
              "[ctc_loss] reduction BatchMean is kl_div's only (use Mean, Sum or None)");
  EMBER_CHECK(log_probs.dim() == 2 || log_probs.dim() == 3,
              "[ctc_loss] log_probs must be [T, N, C] or unbatched [T, C]: got {}-d shape {}",
              log_probs.dim(), shape_str(log_probs.sizes()));
  EMBER_CHECK_TYPE(is_floating(log_probs.dtype()),
                   "[ctc_loss] log_probs must be a floating tensor: got {} (convert with "
                   ".to(ember::f32))",
                   log_probs.dtype());
  EMBER_CHECK_TYPE(is_integral(targets.dtype()),
                   "[ctc_loss] targets must be an integer tensor: got {} (convert with "
                   ".to(ember::i64))",
                   targets.dtype());
  const bool batched = log_probs.dim() == 3;
  const Tensor lp = batched ? log_probs : log_probs.unsqueeze(1);
  EMBER_CHECK(batched ? targets.dim() <= 2 : targets.dim() == 1,
              "[ctc_loss] targets must be {}: got {}-d shape {}",
              batched ? "padded [N, S] or concatenated 1-d" : "1-d [S] for unbatched log_probs",
              targets.dim(), shape_str(targets.sizes()));
  const Tensor tg = batched ? targets : targets.unsqueeze(0);
  const int64_t frames = lp.size(0), n = lp.size(1), classes = lp.size(2);
  EMBER_CHECK(blank >= 0 && blank < classes,
              "[ctc_loss] blank must be a class in [0, {}): got {} (log_probs shape {})", classes,
              blank, shape_str(log_probs.sizes()));
  EMBER_CHECK(static_cast<int64_t>(input_lengths.size()) == n,
              "[ctc_loss] input_lengths must hold one length per batch entry ({}): got {}", n,
              input_lengths.size());
  EMBER_CHECK(static_cast<int64_t>(target_lengths.size()) == n,
              "[ctc_loss] target_lengths must hold one length per batch entry ({}): got {}", n,
              target_lengths.size());
  // A target longer than its input has no alignment: its entry costs inf without states of its
  // own, so the state tables grow with T at most, whatever the target lengths.
  int64_t max_target = 0, max_fit = 0, total_target = 0, max_input = 0;
  for (int64_t b = 0; b < n; ++b) {
    EMBER_CHECK(input_lengths[b] >= 0 && input_lengths[b] <= frames,
                "[ctc_loss] input_lengths must be in [0, T] with T = {} (log_probs shape {}): "
                "got {} for batch entry {}",
                frames, shape_str(log_probs.sizes()), input_lengths[b], b);
    EMBER_CHECK(target_lengths[b] >= 0,
                "[ctc_loss] target_lengths must not be negative: got {} for batch entry {}",
                target_lengths[b], b);
    max_target = std::max(max_target, target_lengths[b]);
    if (target_lengths[b] <= input_lengths[b]) max_fit = std::max(max_fit, target_lengths[b]);
    max_input = std::max(max_input, input_lengths[b]);
    EMBER_CHECK(!__builtin_add_overflow(total_target, target_lengths[b], &total_target),
                "[ctc_loss] target_lengths sum past int64: got {}", shape_str(target_lengths));
  }
  // The labels each entry uses, read on the host, and where each entry's start in them.
  std::vector<int64_t> start(static_cast<size_t>(n));
  Tensor used;
  if (tg.dim() == 2) {
    EMBER_CHECK(tg.size(0) == n && tg.size(1) >= max_target,
                "[ctc_loss] padded targets must be [N, S] with N = {} and S at least the longest "
                "target length {}: got shape {}",
                n, max_target, shape_str(targets.sizes()));
    used = tg.narrow(1, 0, max_fit);
    for (int64_t b = 0; b < n; ++b) start[b] = b * max_fit;
  } else {
    EMBER_CHECK(tg.size(0) >= total_target,
                "[ctc_loss] concatenated targets hold {} labels but target_lengths sum to {}",
                tg.size(0), total_target);
    used = tg.narrow(0, 0, total_target);
    for (int64_t b = 0, at = 0; b < n; at += target_lengths[b], ++b) start[b] = at;
  }
  const Tensor labels_host = used.to(Device::cpu()).to(DType::Int64).contiguous();
  const int64_t* labels = labels_host.data_ptr<int64_t>();
  // The tables live in tensors: a huge target length is a clear size or memory error.
  EMBER_CHECK(max_fit < std::numeric_limits<int64_t>::max() / 2,
              "[ctc_loss] target length {} overflows int64 in the extended target (2 S + 1)",
              max_fit);
  const int64_t ext = max_fit * 2 + 1;
  shape_numel({n, ext}, "ctc_loss");
  const TensorOptions host_bool{DType::Bool, Device::cpu()};
  // The extended targets as columns of lp viewed [T, N * C]; which states may skip a blank;
  // where each entry starts and ends.
  Tensor column = empty({n * ext}, {DType::Int64, Device::cpu()});
  Tensor skip = empty({n, ext}, host_bool), first = empty({n, ext}, host_bool),
         last = empty({n, ext}, host_bool);
  int64_t* col = column.data_ptr<int64_t>();
  bool *skip_p = skip.data_ptr<bool>(), *first_p = first.data_ptr<bool>(),
       *last_p = last.data_ptr<bool>();
  for (int64_t b = 0; b < n; ++b) {
    const int64_t len = target_lengths[b] <= input_lengths[b] ? target_lengths[b] : 0;
    auto prime = [&](int64_t s) {
      if (s % 2 == 0 || s / 2 >= len) return blank;
      const int64_t label = labels[start[b] + s / 2];
      EMBER_CHECK_INDEX(label >= 0 && label < classes,
                        "[ctc_loss] target label {} of batch entry {} is out of range for {} "
                        "classes",
                        label, b, classes);
      return label;
    };
    for (int64_t s = 0; s < ext; ++s) {
      const int64_t i = b * ext + s;
      col[i] = b * classes + prime(s);
      skip_p[i] = s > 1 && prime(s) != prime(s - 2);
      first_p[i] = s == 0 || (s == 1 && len > 0);
      last_p[i] = s == 2 * len || (s == 2 * len - 1 && len > 0);
    }
  }
  const Device device = log_probs.device();
  const DType dtype = log_probs.dtype();
  const TensorOptions opts{dtype, device};
  Tensor loss;
  if (max_input > 0) {
    const Tensor cols = column.to(device), skip_ok = skip.to(device);
    const Tensor gathered = index_select(lp.reshape({frames, n * classes}), 1, cols);
    const std::vector<Tensor> steps =
        unbind(gathered.narrow(0, 0, max_input).view({max_input, n, ext}), 0);
    Tensor alpha = where(first.to(device), steps[0], Scalar(kNegInf));
    const Tensor lengths =
        host_tensor(std::vector<int64_t>(input_lengths.begin(), input_lengths.end()), {n, 1},
                    DType::Int64, device);
    const Tensor pad1 = full({n, 1}, kNegInf, opts), pad2 = full({n, 2}, kNegInf, opts);
    const int64_t min_input = *std::min_element(input_lengths.begin(), input_lengths.end());
    for (int64_t t = 1; t < max_input; ++t) {
      std::vector<Tensor> from{alpha};
      if (ext > 1) from.push_back(cat({pad1, alpha.narrow(1, 0, ext - 1)}, 1));
      if (ext > 2) {
        from.push_back(
            where(skip_ok, cat({pad2, alpha.narrow(1, 0, ext - 2)}, 1), Scalar(kNegInf)));
      }
      const Tensor next = add(log_add_exp(stack(from, -1), -1), steps[t]);
      // Entries whose input has ended keep their alpha.
      alpha = t < min_input ? next : where(gt(lengths, Scalar(t)), next, alpha);
    }
    const Tensor ends = last.to(device);
    loss = neg(log_add_exp(where(ends, alpha, Scalar(kNegInf)), 1));
  }
  // Entries with input length 0 cost 0 for an empty target; those whose target is longer than
  // their input inf.
  std::vector<uint8_t> settled(static_cast<size_t>(n));
  std::vector<double> settled_loss(static_cast<size_t>(n));
  bool any_settled = false;
  for (int64_t b = 0; b < n; ++b) {
    settled[b] = input_lengths[b] == 0 || target_lengths[b] > input_lengths[b];
    settled_loss[b] = target_lengths[b] == 0 ? 0.0 : std::numeric_limits<double>::infinity();
    any_settled = any_settled || settled[b];
  }
  if (any_settled) {
    const Tensor fixed = host_tensor(settled_loss, {n}, DType::Float64, Device::cpu()).to(dtype);
    loss = loss.defined()
               ? where(host_tensor(settled, {n}, DType::Bool, device), fixed.to(device), loss)
               : fixed.to(device);
  } else if (!loss.defined()) {
    loss = zeros({n}, opts);  // no entries
  }
  if (zero_infinity) {
    loss = where(ne(loss, Scalar(std::numeric_limits<double>::infinity())), loss, Scalar(0));
  }
  switch (reduction) {
    case Reduction::Mean: {
      std::vector<double> divisor(static_cast<size_t>(n));
      for (int64_t b = 0; b < n; ++b) {
        divisor[b] = static_cast<double>(std::max<int64_t>(target_lengths[b], 1));
      }
      Tensor d = empty({n}, {DType::Float64, Device::cpu()});
      std::copy(divisor.begin(), divisor.end(), d.data_ptr<double>());
      return mean(div(loss, d.to(dtype).to(device)));
    }
    case Reduction::Sum:
      return sum(loss);
    default:
      return batched ? loss : loss.squeeze(0);
  }
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, Reduction reduction,
                bool zero_infinity) {
  const std::vector<int64_t> il = host_lengths(input_lengths, "input_lengths");
  const std::vector<int64_t> tl = host_lengths(target_lengths, "target_lengths");
  return ctc_loss(log_probs, targets, IntList(il), IntList(tl), blank, reduction, zero_infinity);
}

}  // namespace ember
