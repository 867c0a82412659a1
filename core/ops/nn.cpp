// Layers' ops that are not convolutions, pooling or norms. All are composites of public ops,
// except that linear and fused_linear run the optional kernel "fused_linear" where the device
// has it.
//
// linear:      y = x W^T + b for x [..., in], W [out, in], b [out]. Forward: the device's
//              fused_linear kernel (activation 0) on x viewed as [rows, in], the bias added
//              inside the product; without it, one matmul with the transposed view of W and the
//              bias added in place into that result.
//              backward: dx = dy W, dW = dy^T x, db = sum of dy over all but the last dim
//              (two matmuls and one sum, all public ops, so differentiable again).
// fused_linear: act(linear(x, W, b)) (Note [Fused linear layers]).
// dropout:     y = x * m with m = 0 (probability p) or 1 / (1 - p), a Philox draw of the
//              generator (the device's default) in x's dtype on x's device; one mul kernel.
//              backward: dy * m
//              (the mul's own). p = 0 or training = false: x itself; p = 1: x * 0.
// embedding:   y[..., :] = W[i[...], :]: one index_select of the flattened indices.
//              backward: dW = zeros scatter_add'ed with dy at the indexed rows (repeats
//              accumulate); rows at padding_idx get nothing (their dy is zeroed first).
// embedding_bag: y[b, :] = the sum, mean or max of W's rows that bag b looks up (Note
//              [embedding_bag through one gather and one reduction]).
// pad:         constant: fill, then one copy of the overlapping window; backward: pad of dy
//              with the negated pads (a crop, zero-filled where the forward cropped).
//              reflect/replicate/circular: one index_select per padded dim with a source index
//              per output position (their backward is index_select's scatter_add).
// interpolate: nearest: one index_select per spatial dim, source = floor(dst * in / out).
//              bilinear: separable, per spatial dim y = x[i0] * (1 - l) + x[i1] * l with
//              PyTorch's source coordinate (align_corners: dst * (in - 1) / (out - 1); else
//              (dst + 0.5) * in / out - 0.5 clamped at 0). Both differentiable through their ops.
//
// Kernel contract ("fused_linear", optional): inputs {x [M, K], w [N, K], optional b [N]} of one
// floating dtype, x and w with any strides, b contiguous; output {y [M, N]} contiguous, of that
// dtype: y = act(x w^T + b), the bias added before the activation. Attribute activation: 0 none,
// 1 relu (a NaN may become 0, as with conv2d_relu), 2 gelu x Phi(x), 3 gelu's tanh form. The
// kernel sees M, N, K > 0.
#include "ember/ops/nn.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/dispatch/call.h"
#include "core/dispatch/capture.h"
#include "core/ops/size_math.h"
#include "ember/amp/autocast.h"
#include "ember/autograd/grad_mode.h"
#include "ember/autograd/record.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/linalg.h"
#include "ember/ops/reduce.h"

namespace ember {
namespace {

using autograd::LambdaNode;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

// A host-made int64 index tensor on `device`.
Tensor index_tensor(const std::vector<int64_t>& v, Device device) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, {DType::Int64, Device::cpu()});
  std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
  return t.to(device);
}

// A host-made 1-d tensor of `dtype` on `device` holding `v`.
Tensor value_tensor(const std::vector<double>& v, DType dtype, Device device) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, {dtype, Device::cpu()});
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t.data_ptr());
    for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<T>(static_cast<sdk::Compute<T>>(v[i]));
  });
  return t.to(device);
}

// ---- linear -----------------------------------------------------------------------------------

/** The rows of x viewed as a matrix [rows, features]: the product of all sizes but the last,
 *  counted (reshape's -1 would be ambiguous with 0 features). */
int64_t matrix_rows(const Tensor& x) {
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  return rows;
}

// Note [Fused linear layers]
// A linear layer's output used to be written by the matmul, then read and written again by the
// bias add and again by the activation after it. The optional kernel "fused_linear" does all
// three in one pass: the CPU backend gives oneDNN's matmul the bias as its bias argument and the
// activation as an eltwise post-op, so each output element is finished while it is in
// registers (PyTorch's addmm fuses the bias the same way; its mkldnn-fused linear the
// activation). linear() always uses it, without activation, when the device has it: the
// forward's output is all its backward needs from it. An activation is fused only when nothing
// is recorded for autograd (its backward would need the pre-activation values): otherwise
// fused_linear is the composite act(linear(...)), differentiable and available everywhere.
// nn::Linear runs it when nn::fuse_for_inference merged the ReLU or GELU after it
// (api/nn/fuse.cpp), and so does a Transformer layer's feed-forward block.

// The activation of fused_linear as the composite applies it.
Tensor activate(const Tensor& y, Activation act) {
  switch (act) {
    case Activation::ReLU:
      return relu(y);
    case Activation::GELU:
      return gelu(y);
    case Activation::GELUTanh:
      return gelu(y, "tanh");
    case Activation::None:
      break;
  }
  return y;
}

Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, DType dtype,
                      Activation act) {
  const int64_t in = w.size(1), out = w.size(0), rows = matrix_rows(x);
  const Tensor x2 = x.dim() == 2 ? x : x.reshape({rows, in});
  Tensor y;
  if (rows > 0 && in > 0 && out > 0 &&
      has_kernel(core_op(attrs::fused_linear::kOp), x.device(), dtype)) {
    const Tensor xd = x2.to(dtype), wd = w.to(dtype);
    const Tensor bd = b.defined() ? b.to(dtype).contiguous() : Tensor();
    y = empty({rows, out}, {dtype, x.device()});
    const attrs::fused_linear a{.activation = static_cast<int64_t>(act)};
    if (bd.defined()) {
      run_kernel(a, dtype, {&xd, &wd, &bd}, {&y});
    } else {
      run_kernel(a, dtype, {&xd, &wd}, {&y});
    }
  } else {
    y = matmul(x2.to(dtype), w.to(dtype).t());
    if (b.defined()) add_(y, b.to(dtype));
    y = activate(y, act);
  }
  Shape sizes = x.sizes();
  sizes[sizes.size() - 1] = out;
  return x.dim() == 2 ? y : y.view(sizes);
}

// ---- pad --------------------------------------------------------------------------------------

// Source position along a dim of size n for output position o of a dim padded by `left`, or
// -1 when none exists (the caller checked the sizes, so this does not happen). o - left is
// taken in 128 bits: a replicate padding may be near INT64_MIN when the other side makes up
// for it (Note [Output sizes in 128 bits]).
int64_t pad_source(int64_t o, int64_t left, int64_t n, std::string_view mode) {
  WideInt s = WideInt(o) - left;
  if (mode == "reflect") {
    if (s < 0) s = -s;
    if (s >= n) s = 2 * WideInt(n - 1) - s;
  } else if (mode == "replicate") {
    s = std::clamp<WideInt>(s, 0, n - 1);
  } else {  // circular
    s = ((s % n) + n) % n;
  }
  return static_cast<int64_t>(s);
}

Tensor pad_constant(const Tensor& x, const Shape& pads, double value) {
  const int64_t nd = x.dim();
  Shape sizes = x.sizes();
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    const int64_t d = nd - 1 - static_cast<int64_t>(i);
    // Overflow-checked: pads are user values and may be anywhere in int64.
    const bool overflow = __builtin_add_overflow(sizes[d], pads[2 * i], &sizes[d]) ||
                          __builtin_add_overflow(sizes[d], pads[2 * i + 1], &sizes[d]);
    EMBER_CHECK(!overflow, "[pad] padding ({}, {}) of dim {} of size {} overflows int64",
                pads[2 * i], pads[2 * i + 1], d, x.size(d));
    EMBER_CHECK(sizes[d] >= 0,
                "[pad] padding ({}, {}) of dim {} of size {} gives a negative size {} (cropping "
                "cannot remove more than the dim holds)",
                pads[2 * i], pads[2 * i + 1], d, x.size(d), sizes[d]);
  }
  Tensor out = full(sizes, value, {x.dtype(), x.device()});
  Tensor dst = out, src = x;
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    const int64_t d = nd - 1 - static_cast<int64_t>(i);
    const int64_t l = pads[2 * i], r = pads[2 * i + 1], n = x.size(d);
    // The window of x that survives and where it lands in out.
    // Written so that no term overflows for any l and r the size check let through.
    const int64_t src_begin = l >= 0 ? 0 : l < -n ? n : -l, src_end = r >= 0 ? n : n + r;
    const int64_t len = std::max<int64_t>(0, src_end - src_begin);
    src = src.narrow(d, std::min(src_begin, n), len);
    dst = dst.narrow(d, std::min(std::max<int64_t>(0, l), sizes[d]), len);
  }
  if (dst.numel() > 0) dst.copy_(src);
  return out;
}

Tensor pad_indexed(const Tensor& x, const Shape& pads, std::string_view mode) {
  Tensor y = x;
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    const int64_t d = x.dim() - 1 - static_cast<int64_t>(i);
    const int64_t l = pads[2 * i], r = pads[2 * i + 1], n = x.size(d);
    if (l == 0 && r == 0) continue;
    int64_t m = 0;
    EMBER_CHECK(!__builtin_add_overflow(n, l, &m) && !__builtin_add_overflow(m, r, &m),
                "[pad] padding ({}, {}) of dim {} of size {} overflows int64", l, r, d, n);
    EMBER_CHECK(m >= 0,
                "[pad] padding ({}, {}) of dim {} of size {} gives a negative size {} (cropping "
                "cannot remove more than the dim holds)",
                l, r, d, n, m);
    EMBER_CHECK(n > 0, "[pad] {} padding of dim {} needs a non-empty dim: got size 0", mode, d);
    if (mode == "reflect") {
      EMBER_CHECK(l < n && r < n,
                  "[pad] reflect padding ({}, {}) of dim {} must be smaller than its size {}", l, r,
                  d, n);
    } else if (mode == "circular") {
      EMBER_CHECK(l <= n && r <= n,
                  "[pad] circular padding ({}, {}) of dim {} must not exceed its size {}", l, r, d,
                  n);
    }
    // The indices live in a tensor: a huge m is a clear out-of-memory error, not length_error.
    Tensor idx = empty({m}, {DType::Int64, Device::cpu()});
    int64_t* src = idx.data_ptr<int64_t>();
    for (int64_t o = 0; o < m; ++o) src[o] = pad_source(o, l, n, mode);
    y = index_select(y, d, idx.to(x.device()));
  }
  return y;
}

// ---- interpolate ------------------------------------------------------------------------------

// Note [interpolate as taps]
// Every mode resizes one spatial dim at a time (they are all separable), and output position o
// of a dim is a weighted sum of a few input positions: its taps. So a mode is a table of
// (index, weight) pairs per output position — nearest one tap of weight 1, linear two, cubic
// four, area and the antialiased filters as many as their widest window — and the resize is one
// index_select per tap, scaled and summed. Autograd, every dtype the ops take and every backend
// come from those ops. The coordinates are PyTorch's: the scale of a dim resized from `in` to
// `out` is in / out, or 1 / scale_factor when the caller gave one (unless
// recompute_scale_factor); with align_corners the corner pixels map onto each other:
// src = o (in - 1) / (out - 1); else pixel centres: src = (o + 0.5) scale - 0.5, clamped at 0
// for linear (not for cubic, whose taps are clamped instead). nearest takes
// floor(o scale), nearest-exact floor((o + 0.5) scale). area averages [floor(o in / out),
// ceil((o + 1) in / out)), as adaptive average pooling. antialias widens the linear and cubic
// filters by the scale when shrinking, normalized, as PIL and PyTorch's antialiased kernels do
// (cubic with a = -0.5 then, -0.75 otherwise).
struct Taps {
  int64_t count = 0;                        // taps per output position
  std::vector<std::vector<int64_t>> index;  // [tap][o]
  std::vector<std::vector<double>> weight;  // [tap][o]
};

double cubic1(double x, double a) {
  return ((a + 2) * x - (a + 3)) * x * x + 1;
}
double cubic2(double x, double a) {
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

/** The taps of output position o, as (index, weight) pairs (any number of them). */
using TapList = std::vector<std::pair<int64_t, double>>;

TapList taps_at(std::string_view mode, int64_t o, int64_t in, int64_t out, double scale,
                bool align_corners, bool antialias) {
  const double od = static_cast<double>(o);
  auto clamp_index = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  if (mode == "nearest" || mode == "nearest-exact") {
    const double src = mode == "nearest" ? od * scale : (od + 0.5) * scale;
    return {{std::min(static_cast<int64_t>(std::floor(src)), in - 1), 1.0}};
  }
  if (mode == "area") {
    const int64_t lo = (o * in) / out, hi = ((o + 1) * in + out - 1) / out;
    TapList t;
    for (int64_t j = lo; j < hi; ++j) t.emplace_back(j, 1.0 / static_cast<double>(hi - lo));
    return t;
  }
  const bool cubic = mode == "bicubic";
  const double s =
      align_corners ? (out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0)
                    : scale;
  if (antialias) {
    const double a = -0.5, size = cubic ? 4.0 : 2.0;
    auto filter = [&](double x) {
      x = std::abs(x);
      if (!cubic) return x < 1 ? 1 - x : 0.0;
      return x < 1 ? cubic1(x, a) : x < 2 ? cubic2(x, a) : 0.0;
    };
    const double center = s * (od + 0.5);
    const double support = s >= 1.0 ? size * 0.5 * s : size * 0.5;
    const double inv = s >= 1.0 ? 1.0 / s : 1.0;
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in);
    TapList t;
    double total = 0;
    for (int64_t j = lo; j < hi; ++j) {
      t.emplace_back(j, filter((static_cast<double>(j) - center + 0.5) * inv));
      total += t.back().second;
    }
    for (auto& [j, w] : t) w = total != 0 ? w / total : 0.0;
    return t;
  }
  double src = align_corners ? od * s : (od + 0.5) * s - 0.5;
  if (!cubic) {
    src = std::max(0.0, src);
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
    const double l = src - static_cast<double>(i0);
    return {{i0, 1 - l}, {std::min(i0 + 1, in - 1), l}};
  }
  const double a = -0.75;
  const auto i0 = static_cast<int64_t>(std::floor(src));
  const double t = src - static_cast<double>(i0);
  return {{clamp_index(i0 - 1), cubic2(t + 1, a)},
          {clamp_index(i0), cubic1(t, a)},
          {clamp_index(i0 + 1), cubic1(1 - t, a)},
          {clamp_index(i0 + 2), cubic2(2 - t, a)}};
}

Taps make_taps(std::string_view mode, int64_t in, int64_t out, double scale, bool align_corners,
               bool antialias) {
  std::vector<TapList> per(static_cast<size_t>(out));
  Taps taps;
  for (int64_t o = 0; o < out; ++o) {
    per[static_cast<size_t>(o)] = taps_at(mode, o, in, out, scale, align_corners, antialias);
    taps.count = std::max<int64_t>(taps.count, static_cast<int64_t>(per[o].size()));
  }
  taps.index.assign(static_cast<size_t>(taps.count), std::vector<int64_t>(out, 0));
  taps.weight.assign(static_cast<size_t>(taps.count), std::vector<double>(out, 0.0));
  for (int64_t o = 0; o < out; ++o) {
    const TapList& t = per[static_cast<size_t>(o)];
    for (size_t k = 0; k < t.size(); ++k) {
      taps.index[k][static_cast<size_t>(o)] = t[k].first;
      taps.weight[k][static_cast<size_t>(o)] = t[k].second;
    }
  }
  return taps;
}

Tensor resize_dim(const Tensor& x, int64_t d, int64_t out, double scale, std::string_view mode,
                  bool align_corners, bool antialias) {
  const Taps taps = make_taps(mode, x.size(d), out, scale, align_corners, antialias);
  if (mode == "nearest" || mode == "nearest-exact") {
    return index_select(x, d, index_tensor(taps.index[0], x.device()));
  }
  Shape wsizes(static_cast<size_t>(x.dim()), 1);
  wsizes[d] = out;
  Tensor y;
  for (int64_t k = 0; k < taps.count; ++k) {
    const Tensor w = value_tensor(taps.weight[k], x.dtype(), x.device()).view(wsizes);
    const Tensor term = mul(index_select(x, d, index_tensor(taps.index[k], x.device())), w);
    y = y.defined() ? add(y, term) : term;
  }
  return y;
}

/** The spatial rank each interpolating mode takes ("linear" 1, "bilinear" and "bicubic" 2,
 *  "trilinear" 3); 0 for the modes that take any. */
int64_t mode_rank(std::string_view mode) {
  if (mode == "linear") return 1;
  if (mode == "bilinear" || mode == "bicubic") return 2;
  if (mode == "trilinear") return 3;
  return 0;
}

/** One value per spatial dim from `v` (one for all, or exactly one each). */
template <class T>
std::vector<T> per_dim(const std::vector<T>& v, int64_t rank, const char* what) {
  EMBER_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == rank,
              "[interpolate] {} must hold one value or one per spatial dim ({}): got {}", what,
              rank, v.size());
  return v.size() == 1 ? std::vector<T>(static_cast<size_t>(rank), v[0]) : v;
}

}  // namespace

Tensor interpolate(const Tensor& x, const InterpolateOptions& o) {
  EMBER_CHECK_TYPE(x.defined(), "[interpolate] undefined tensor argument");
  const std::string_view mode = o.mode;
  EMBER_CHECK(mode == "nearest" || mode == "nearest-exact" || mode == "area" || mode_rank(mode),
              "[interpolate] unknown mode '{}' (expected 'nearest', 'nearest-exact', 'linear', "
              "'bilinear', 'bicubic', 'trilinear' or 'area')",
              mode);
  EMBER_CHECK(x.dim() >= 3 && x.dim() <= 5,
              "[interpolate] expected a 3-d, 4-d or 5-d input [N, C, *spatial]: got {}-d shape "
              "{} (unsqueeze an unbatched input)",
              x.dim(), shape_str(x.sizes()));
  const int64_t rank = x.dim() - 2;
  EMBER_CHECK(mode_rank(mode) == 0 || mode_rank(mode) == rank,
              "[interpolate] mode '{}' needs a {}-d input: got {}-d shape {}", mode,
              mode_rank(mode) + 2, x.dim(), shape_str(x.sizes()));
  EMBER_CHECK(!o.align_corners || mode_rank(mode),
              "[interpolate] align_corners only applies to the interpolating modes (linear, "
              "bilinear, bicubic, trilinear): got mode '{}'",
              mode);
  EMBER_CHECK(!o.antialias || mode == "bilinear" || mode == "bicubic",
              "[interpolate] antialias applies to modes 'bilinear' and 'bicubic' only: got '{}'",
              mode);
  EMBER_CHECK(o.size.empty() != o.scale_factor.empty(),
              "[interpolate] give exactly one of size and scale_factor");
  EMBER_CHECK_TYPE(x.dtype() != DType::Bool, "[interpolate] not defined for bool tensors");
  if (mode != "nearest" && mode != "nearest-exact") {
    EMBER_CHECK_TYPE(is_floating(x.dtype()),
                     "[interpolate] mode '{}' needs a floating tensor: got {} (convert with "
                     ".to(ember::f32))",
                     mode, x.dtype());
  }
  for (int64_t d = 0; d < rank; ++d) {
    EMBER_CHECK(x.size(d + 2) > 0,
                "[interpolate] input spatial sizes must be positive: got shape {}",
                shape_str(x.sizes()));
  }
  Shape out(static_cast<size_t>(rank));
  std::vector<double> scale(static_cast<size_t>(rank));
  if (!o.size.empty()) {
    const std::vector<int64_t> size = per_dim(o.size, rank, "size");
    for (int64_t d = 0; d < rank; ++d) {
      EMBER_CHECK(size[d] > 0, "[interpolate] size must be positive: got {}", shape_str(size));
      out[d] = size[d];
      scale[d] = static_cast<double>(x.size(d + 2)) / static_cast<double>(size[d]);
    }
  } else {
    const std::vector<double> factor = per_dim(o.scale_factor, rank, "scale_factor");
    for (int64_t d = 0; d < rank; ++d) {
      EMBER_CHECK(factor[d] > 0 && std::isfinite(factor[d]),
                  "[interpolate] scale_factor must be positive and finite: got {}", factor[d]);
      out[d] = static_cast<int64_t>(std::floor(static_cast<double>(x.size(d + 2)) * factor[d]));
      EMBER_CHECK(out[d] > 0,
                  "[interpolate] scale_factor {} turns spatial size {} into {}; the output must "
                  "not be empty",
                  factor[d], x.size(d + 2), out[d]);
      scale[d] = o.recompute_scale_factor
                     ? static_cast<double>(x.size(d + 2)) / static_cast<double>(out[d])
                     : 1.0 / factor[d];
    }
  }
  // The host-side tap tables grow with the output: the output is allocated first (and handed
  // back at once), so an impossible size is an [empty]/[allocate] error, not std::bad_alloc.
  Shape out_sizes{x.size(0), x.size(1)};
  for (int64_t s : out) out_sizes.push_back(s);
  if (shape_numel(out_sizes, "interpolate") == 0) return empty(out_sizes, {x.dtype(), x.device()});
  empty(out_sizes, {x.dtype(), x.device()});
  Tensor y = x;
  for (int64_t d = 0; d < rank; ++d) {
    y = resize_dim(y, d + 2, out[d], scale[d], mode, o.align_corners, o.antialias);
  }
  return y;
}

Tensor interpolate(const Tensor& x, IntList size, std::string_view mode, bool align_corners) {
  InterpolateOptions o;
  o.size.assign(size.begin(), size.end());
  EMBER_CHECK(!o.size.empty(), "[interpolate] size must not be empty");
  o.mode = mode;
  o.align_corners = align_corners;
  return interpolate(x, o);
}

namespace {
// linear, or fused_linear with `act` (named kOp in errors): the checks, then the op.
Tensor linear_checked(const char* kOp, const Tensor& x, const Tensor& weight, const Tensor& bias,
                      Activation act) {
  EMBER_CHECK_TYPE(x.defined() && weight.defined(), "[{}] undefined tensor argument", kOp);
  EMBER_CHECK(weight.dim() == 2, "[{}] weight must be 2-d [out, in]: got shape {}", kOp,
              shape_str(weight.sizes()));
  EMBER_CHECK(x.dim() >= 1, "[{}] input must have at least 1 dimension: got a 0-d tensor", kOp);
  EMBER_CHECK(x.size(-1) == weight.size(1),
              "[{}] input size(-1)={} does not match weight size(1)={} (input shape {}, "
              "weight shape {})",
              kOp, x.size(-1), weight.size(1), shape_str(x.sizes()), shape_str(weight.sizes()));
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)),
              "[{}] bias must be 1-d of size {} (weight size(0)): got shape {}", kOp,
              weight.size(0), bias.defined() ? shape_str(bias.sizes()) : std::string("[]"));
  EMBER_CHECK_TYPE(x.dtype() != DType::Bool && weight.dtype() != DType::Bool &&
                       (!bias.defined() || bias.dtype() != DType::Bool),
                   "[{}] not defined for bool tensors (convert with .to(ember::f32))", kOp);
  common_device({&x, &weight, &bias}, kOp);
  // No promotion (Note [Ops that take one dtype]): a float32 layer refuses float64 input.
  const DType dtype = common_dtype({&x, &weight, &bias}, kOp);
  const bool recorded =
      autograd::is_grad_enabled() &&
      (x.requires_grad() || weight.requires_grad() || (bias.defined() && bias.requires_grad()));
  if (act != Activation::None && recorded) {
    // The composite (Note [Fused linear layers]).
    return activate(linear_checked("linear", x, weight, bias, Activation::None), act);
  }
  return autograd::differentiable(
      "LinearBackward", kOp, {&x, &weight, &bias},
      [&] { return linear_forward(x, weight, bias, dtype, act); },
      [&] {
        return [sx = SavedTensor(x), sw = SavedTensor(weight), rx = x.requires_grad(),
                rw = weight.requires_grad(), rb = bias.defined() && bias.requires_grad(),
                bdtype = bias.defined() ? bias.dtype() : dtype,
                dtype](const Grads& g, const LambdaNode& self) {
          const Tensor x = self.unpack(sx), w = self.unpack(sw);
          const int64_t in = w.size(1), out = w.size(0);
          const int64_t rows = matrix_rows(x);
          const Tensor g2 = g[0].reshape({rows, out});
          Tensor gx, gw, gb;
          if (rx) gx = matmul(g2, w.to(dtype)).reshape(x.sizes()).to(x.dtype());
          if (rw) gw = matmul(g2.t(), x.reshape({rows, in}).to(dtype)).to(w.dtype());
          if (rb) gb = sum(g2, {0}).to(bdtype);
          return Grads{gx, gw, gb};
        };
      });
}
}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  EMBER_AUTOCAST(Lower, linear, x, x, weight, bias);
  return linear_checked("linear", x, weight, bias, Activation::None);
}

Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight, const Tensor& bias) {
  const char* name = "bilinear";
  EMBER_CHECK_TYPE(x1.defined() && x2.defined() && weight.defined(),
                   "[bilinear] undefined tensor argument");
  EMBER_CHECK(weight.dim() == 3, "[bilinear] expected a 3-d weight [out, in1, in2]: got shape {}",
              shape_str(weight.sizes()));
  const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  bool fits = x1.dim() >= 1 && x2.dim() == x1.dim() && x1.size(-1) == in1 && x2.size(-1) == in2;
  for (int64_t d = 0; fits && d + 1 < x1.dim(); ++d) fits = x1.size(d) == x2.size(d);
  EMBER_CHECK(fits,
              "[{}] expected input1 [..., {}] and input2 [..., {}] with the same leading dims: "
              "got shapes {} and {}",
              name, in1, in2, shape_str(x1.sizes()), shape_str(x2.sizes()));
  EMBER_CHECK(!bias.defined() || bias.sizes() == Shape{out},
              "[bilinear] bias should have shape [{}]: got shape {}", out,
              bias.defined() ? shape_str(bias.sizes()) : std::string());
  // y[b, o] = sum_i x1[b, i] (sum_j W[o, i, j] x2[b, j]): one product with W viewed as
  // [in1, out in2], then a multiply and a sum over j.
  const Tensor a = x1.reshape({-1, in1}), b = x2.reshape({-1, 1, in2});
  const Tensor t = matmul(a, weight.permute({1, 0, 2}).reshape({in1, out * in2}));
  Tensor y = sum(mul(t.reshape({-1, out, in2}), b), {2});
  if (bias.defined()) y = add(y, bias);
  Shape sizes = x1.sizes();
  sizes.back() = out;
  return y.reshape(sizes);
}

Tensor fused_linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
                    Activation activation) {
  EMBER_AUTOCAST(Lower, fused_linear, x, x, weight, bias, activation);
  EMBER_CHECK(activation >= Activation::None && activation <= Activation::GELUTanh,
              "[fused_linear] unknown activation {} (expected an ember::Activation)",
              static_cast<int>(activation));
  return linear_checked("fused_linear", x, weight, bias, activation);
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  EMBER_CHECK_TYPE(x.defined(), "[dropout] undefined tensor argument");
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "[dropout] probability p must be in [0, 1]: got {}", p);
  EMBER_CHECK_TYPE(is_floating(x.dtype()),
                   "[dropout] needs a floating tensor: got {} (convert with .to(ember::f32))",
                   x.dtype());
  if (!training || p == 0.0) return x;
  if (p == 1.0) return mul(x, 0.0);
  // The mask holds the kept elements' scale directly, so the forward is one mul and the
  // backward (mul's own) reuses it. It is drawn as rand() is (Note [Random numbers on every
  // device]): by the device's "random" kernel where it has one, else on the host, with the same
  // values either way.
  const Tensor mask =
      detail::dropout_mask(x.sizes(), {x.dtype(), x.device()}, p, 1.0 / (1.0 - p), gen);
  return mul(x, mask);
}

Tensor feature_dropout(const Tensor& x, double p, int64_t spatial_dims, bool training,
                       Generator* gen) {
  EMBER_CHECK(spatial_dims >= 1 && spatial_dims <= 3,
              "[dropout{}d] spatial_dims must be 1, 2 or 3: got {}", spatial_dims, spatial_dims);
  EMBER_CHECK_TYPE(x.defined(), "[dropout{}d] undefined tensor argument", spatial_dims);
  EMBER_CHECK(x.dim() == spatial_dims + 1 || x.dim() == spatial_dims + 2,
              "[dropout{}d] expected a {}-d (unbatched) or {}-d (batched) input: got shape {}",
              spatial_dims, spatial_dims + 1, spatial_dims + 2, shape_str(x.sizes()));
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "[dropout{}d] probability p must be in [0, 1]: got {}",
              spatial_dims, p);
  EMBER_CHECK_TYPE(is_floating(x.dtype()), "[dropout{}d] needs a floating tensor: got {}",
                   spatial_dims, x.dtype());
  if (!training || p == 0.0) return x;
  if (p == 1.0) return mul(x, 0.0);
  // One draw per (sample, channel), broadcast over the spatial dims.
  Shape mask_sizes(x.sizes());
  for (int64_t d = x.dim() - spatial_dims; d < x.dim(); ++d) mask_sizes[d] = 1;
  const Tensor mask =
      detail::dropout_mask(mask_sizes, {x.dtype(), x.device()}, p, 1.0 / (1.0 - p), gen);
  return mul(x, mask);
}

namespace {

// As PyTorch's embedding_renorm_: outside autograd, the rows of weight that idx (flat int64)
// looks up and whose norm_type-norm exceeds max_norm are scaled by max_norm / (norm + 1e-7), in
// the weight itself. The rows are written back with one scatter over the whole table (a repeated
// index writes the same row twice).
void embedding_renorm(const char* op, const Tensor& weight, const Tensor& idx, double max_norm,
                      double norm_type) {
  EMBER_CHECK(max_norm > 0, "[{}] max_norm must be positive: got {}", op, max_norm);
  if (idx.numel() == 0) return;
  autograd::NoGradGuard no_grad;
  const Tensor rows = index_select(weight, 0, idx);
  const int64_t dims[1] = {1};
  const Tensor norms = norm(rows, norm_type, IntList(dims, 1), /*keepdim=*/true);
  const Tensor scale =
      where(gt(norms, max_norm), div(full_like(norms, max_norm), add(norms, 1e-7)), 1.0);
  const int64_t n = idx.numel();
  Tensor& w = const_cast<Tensor&>(weight);
  w.copy_(scatter(w, 0, idx.view({n, 1}).expand({n, weight.size(1)}), mul(rows, scale)));
}

// The checks embedding and embedding_bag share: weight 2-d, integer indices on its device, and
// padding_idx within [-rows, rows) (returned as a row).
std::optional<int64_t> check_lookup(const char* op, const Tensor& weight, const Tensor& indices,
                                    std::optional<int64_t> padding_idx) {
  EMBER_CHECK_TYPE(weight.defined() && indices.defined(), "[{}] undefined tensor argument", op);
  EMBER_CHECK(weight.dim() == 2, "[{}] weight must be 2-d [num, dim]: got shape {}", op,
              shape_str(weight.sizes()));
  EMBER_CHECK_TYPE(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32,
                   "[{}] indices must be an int64 or int32 tensor: got {}", op, indices.dtype());
  common_device({&weight, &indices}, op);
  const int64_t num = weight.size(0);
  if (!padding_idx) return std::nullopt;
  EMBER_CHECK_INDEX(*padding_idx >= -num && *padding_idx < num,
                    "[{}] padding_idx={} is out of range for {} rows", op, *padding_idx, num);
  return *padding_idx < 0 ? *padding_idx + num : *padding_idx;
}

// Every index of `host` (contiguous int64 on the CPU) is a row of a table of `num` rows.
void check_rows(const char* op, const Tensor& host, int64_t num) {
  const int64_t* p = host.data_ptr<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i) {
    EMBER_CHECK_INDEX(p[i] >= 0 && p[i] < num,
                      "[{}] index {} is out of range for a weight of {} rows (indices must be "
                      "in [0, {}))",
                      op, p[i], num, num);
  }
}

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx,
                 std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq) {
  const std::optional<int64_t> pad = check_lookup("embedding", weight, indices, padding_idx);
  const int64_t num = weight.size(0), dim = weight.size(1);
  const Tensor idx = indices.to(DType::Int64).reshape({-1});
  {
    // index_select range-checks every row itself: this read only words the error as embedding's
    // (Note [Host reads in a capture]).
    capture::Suppress check_only;
    check_rows("embedding", idx.to(Device::cpu()).contiguous(), num);
  }
  Shape sizes = indices.sizes();
  sizes.push_back(dim);
  shape_numel(sizes, "embedding");  // an empty index shape with a huge embedding dim
  if (max_norm) embedding_renorm("embedding", weight, idx, *max_norm, norm_type);
  return autograd::differentiable(
      "EmbeddingBackward", "embedding", {&weight},
      [&] { return index_select(weight, 0, idx).view(sizes); },
      [&] {
        return [idx, pad, num, dim, scale_grad_by_freq](const Grads& g, const LambdaNode&) {
          const int64_t n = idx.numel();
          Tensor g2 = g[0].reshape({n, dim});
          if (pad) g2 = where(ne(idx, *pad).view({n, 1}), g2, 0.0);
          if (scale_grad_by_freq && n > 0) {
            // Each lookup's gradient divided by how often its row was looked up in this call.
            const Tensor counts = scatter_add(zeros({num}, {g2.dtype(), g2.device()}), 0, idx,
                                              ones({n}, {g2.dtype(), g2.device()}));
            g2 = div(g2, index_select(counts, 0, idx).view({n, 1}));
          }
          const Tensor z = zeros({num, dim}, {g2.dtype(), g2.device()});
          return Grads{scatter_add(z, 0, idx.view({n, 1}).expand({n, dim}), g2)};
        };
      });
}

// Note [embedding_bag through one gather and one reduction]
// Bag b of embedding_bag reduces the rows its indices look up. The bags are laid out on the host
// from the offsets (they are small integer tensors, and every index is range-checked there as
// embedding does): the kept entries (not padding_idx) with their bag numbers. On the device one
// index_select gathers the kept rows, scaled by per_sample_weights for "sum", and one reduction
// into [bags, dim] zeros combines them: index_add for "sum" and "mean" (then divided by each
// bag's count of kept entries), scatter_reduce "amax" (include_self false) for "max". An empty
// bag stays 0, as in PyTorch. Gradients reach the weight (and per_sample_weights) through those
// ops, on every backend, differentiable again.
Tensor embedding_bag(const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                     std::string_view mode, const Tensor& per_sample_weights,
                     bool include_last_offset, std::optional<int64_t> padding_idx,
                     std::optional<double> max_norm, double norm_type) {
  constexpr const char* kOp = "embedding_bag";
  const std::optional<int64_t> pad = check_lookup(kOp, weight, indices, padding_idx);
  EMBER_CHECK(mode == "sum" || mode == "mean" || mode == "max",
              "[embedding_bag] mode has to be one of sum, mean or max: got '{}'", mode);
  EMBER_CHECK(indices.dim() == 1 || indices.dim() == 2,
              "[embedding_bag] input has to be 1-d or 2-d: got shape {}",
              shape_str(indices.sizes()));
  if (indices.dim() == 2) {
    EMBER_CHECK(!offsets.defined(),
                "[embedding_bag] if input is 2-d, then offsets has to be None, as input is "
                "treated as a mini-batch of fixed length sequences: got offsets of shape {}",
                shape_str(offsets.sizes()));
  } else {
    EMBER_CHECK(offsets.defined(),
                "[embedding_bag] offsets has to be a 1-d tensor when input is 1-d: got None");
    EMBER_CHECK(offsets.dim() == 1, "[embedding_bag] offsets has to be a 1-d tensor: got shape {}",
                shape_str(offsets.sizes()));
    EMBER_CHECK_TYPE(offsets.dtype() == DType::Int64 || offsets.dtype() == DType::Int32,
                     "[embedding_bag] offsets must be an int64 or int32 tensor: got {}",
                     offsets.dtype());
    common_device({&weight, &offsets}, kOp);
  }
  if (per_sample_weights.defined()) {
    EMBER_CHECK_NOT_IMPLEMENTED(
        mode == "sum",
        "[embedding_bag] per_sample_weights is only supported for mode='sum' (got mode='{}')",
        mode);
    EMBER_CHECK_TYPE(per_sample_weights.dtype() == weight.dtype(),
                     "[embedding_bag] per_sample_weights and weight dtypes differ: {} and {}",
                     per_sample_weights.dtype(), weight.dtype());
    EMBER_CHECK(per_sample_weights.sizes() == indices.sizes(),
                "[embedding_bag] per_sample_weights must have the input's shape {}: got {}",
                shape_str(indices.sizes()), shape_str(per_sample_weights.sizes()));
    common_device({&weight, &per_sample_weights}, kOp);
  }
  const int64_t num = weight.size(0), dim = weight.size(1), n = indices.numel();
  const Tensor idx = indices.to(DType::Int64).reshape({-1});
  const Tensor host = idx.to(Device::cpu()).contiguous();
  check_rows(kOp, host, num);
  // Bag b holds entries [starts[b], starts[b + 1]).
  std::vector<int64_t> starts;
  if (indices.dim() == 2) {
    const int64_t bags = indices.size(0), len = indices.size(1);
    for (int64_t b = 0; b <= bags; ++b) starts.push_back(b * len);
  } else {
    const Tensor off = offsets.to(DType::Int64).to(Device::cpu()).contiguous();
    const int64_t* o = off.data_ptr<int64_t>();
    const int64_t count = off.numel();
    EMBER_CHECK(!include_last_offset || count >= 1,
                "[embedding_bag] include_last_offset needs at least one offset: got none");
    EMBER_CHECK(count == 0 || o[0] == 0,
                "[embedding_bag] offsets[0] has to be 0, i.e., the first sequence in the "
                "mini-batch has to start from position 0: got {}",
                count ? o[0] : 0);
    for (int64_t i = 0; i < count; ++i) {
      EMBER_CHECK((i == 0 || o[i] >= o[i - 1]) && o[i] <= n,
                  "[embedding_bag] offsets must be non-decreasing and at most the input's length "
                  "{}: got offsets[{}] = {}",
                  n, i, o[i]);
      starts.push_back(o[i]);
    }
    if (!include_last_offset) starts.push_back(n);
  }
  const int64_t bags = std::max<int64_t>(static_cast<int64_t>(starts.size()) - 1, 0);
  // The kept entries (not padding_idx), their bag numbers and each bag's count.
  const int64_t* p = host.data_ptr<int64_t>();
  std::vector<int64_t> kept, bag_of;
  std::vector<double> count(static_cast<size_t>(bags), 0.0);
  for (int64_t b = 0; b < bags; ++b) {
    for (int64_t i = starts[static_cast<size_t>(b)]; i < starts[static_cast<size_t>(b) + 1]; ++i) {
      if (pad && p[i] == *pad) continue;
      kept.push_back(i);
      bag_of.push_back(b);
      count[static_cast<size_t>(b)] += 1;
    }
  }
  const auto to_device = [&](const std::vector<int64_t>& v) {
    return from_vector(v, {static_cast<int64_t>(v.size())}, {DType::Int64, weight.device()});
  };
  const Tensor kept_entries = to_device(kept);
  const Tensor kept_rows = index_select(idx, 0, kept_entries);
  if (max_norm) embedding_renorm(kOp, weight, kept_rows, *max_norm, norm_type);
  Tensor rows = index_select(weight, 0, kept_rows);  // [kept, dim]
  if (per_sample_weights.defined()) {
    rows = mul(rows, index_select(per_sample_weights.reshape({-1}), 0, kept_entries).unsqueeze(1));
  }
  const Tensor bag = to_device(bag_of);
  const Tensor z = zeros({bags, dim}, {weight.dtype(), weight.device()});
  if (mode == "max") {
    const int64_t k = rows.size(0);
    return scatter_reduce(z, 0, bag.view({k, 1}).expand({k, dim}), rows, "amax",
                          /*include_self=*/false);
  }
  Tensor out = index_add(z, 0, bag, rows);
  if (mode == "mean") {
    for (double& c : count) c = std::max(c, 1.0);
    out = div(out, from_vector(count, {bags, 1}, {weight.dtype(), weight.device()}));
  }
  return out;
}

Tensor pad(const Tensor& x, IntList pads, std::string_view mode, double value) {
  EMBER_CHECK_TYPE(x.defined(), "[pad] undefined tensor argument");
  EMBER_CHECK(pads.size() % 2 == 0,
              "[pad] the padding list must have an even length (pairs per dim): got {} values",
              pads.size());
  EMBER_CHECK(static_cast<int64_t>(pads.size()) <= 2 * x.dim(),
              "[pad] a padding list of {} values pads {} dims but the input has only {} (shape "
              "{})",
              pads.size(), pads.size() / 2, x.dim(), shape_str(x.sizes()));
  EMBER_CHECK(mode == "constant" || mode == "reflect" || mode == "replicate" || mode == "circular",
              "[pad] unknown mode '{}' (expected 'constant', 'reflect', 'replicate' or "
              "'circular')",
              mode);
  const Shape p(pads);
  if (mode != "constant") return pad_indexed(x, p, mode);
  return autograd::differentiable(
      "PadBackward", "pad", {&x}, [&] { return pad_constant(x, p, value); },
      [&] {
        return [p](const Grads& g, const LambdaNode&) {
          Shape neg_p(p.size());
          for (size_t i = 0; i < p.size(); ++i) neg_p[i] = -p[i];
          return Grads{pad(g[0], neg_p, "constant", 0.0)};
        };
      });
}

// Note [cosine_similarity clamps each norm without a gradient]
// PyTorch divides each operand by its own norm before the product (which keeps the result in
// [-1, 1]) and clamps the norms at eps under no_grad, so the gradient is that of the unclamped
// norm. n + (max(n, eps) - n).detach() is that: max(n, eps) forward, n's gradient backward.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  EMBER_CHECK_TYPE(x1.defined() && x2.defined(), "[cosine_similarity] undefined tensor argument");
  const DType common = promote_types(x1.dtype(), x2.dtype());
  EMBER_CHECK_TYPE(is_floating(common),
                   "[cosine_similarity] expects a floating common dtype, got {} and {}", x1.dtype(),
                   x2.dtype());
  const Shape shape = broadcast_shapes(x1.sizes(), x2.sizes(), "cosine_similarity");
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(shape.size()), "cosine_similarity");
  const auto unit = [&](const Tensor& x) {
    const Tensor e = x.to(common).expand(shape);
    const Tensor n = norm(e, 2.0, {d}, /*keepdim=*/true);
    return div(e, add(n, sub(clamp(n, Scalar(eps), std::nullopt), n).detach()));
  };
  return sum(mul(unit(x1), unit(x2)), {d});
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  EMBER_CHECK_TYPE(x1.defined() && x2.defined(), "[pairwise_distance] undefined tensor argument");
  broadcast_shapes(x1.sizes(), x2.sizes(), "pairwise_distance");
  const int64_t d = std::max(x1.dim(), x2.dim());
  const Tensor diff = add(sub(x1, x2), Scalar(eps));
  if (d == 0) return norm(diff, p, {}, keepdim);
  return norm(diff, p, {d - 1}, keepdim);
}

Tensor normalize(const Tensor& x, double p, int64_t dim, double eps) {
  EMBER_CHECK_TYPE(x.defined(), "[normalize] undefined tensor argument");
  const Tensor n = norm(x, p, {dim}, /*keepdim=*/true);
  return div(x, clamp(n, Scalar(eps), std::nullopt).expand_as(x));
}

namespace {

// Note [Pixel shuffle as a view and one copy]
// [*, C r r, H, W] viewed as [*, C, r, r, H, W], permuted to [*, C, H, r, W, r] and reshaped (one
// copy) is the shuffle; the unshuffle is the same read backwards. Autograd comes from the view
// ops, so every backend has both with their gradients.
Tensor shuffle_pixels(const char* op, const Tensor& x, int64_t r, bool up) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", op);
  EMBER_CHECK(x.dim() >= 3,
              "[{}] expects input to have at least 3 dimensions, but got input with {} "
              "dimension(s)",
              op, x.dim());
  EMBER_CHECK(r > 0, "[{}] expects a positive {}, but got {}", op,
              up ? "upscale_factor" : "downscale_factor", r);
  const int64_t d = x.dim(), c = x.size(d - 3), h = x.size(d - 2), w = x.size(d - 1);
  Shape batch;
  for (int64_t i = 0; i < d - 3; ++i) batch.push_back(x.size(i));
  const auto with_batch = [&](std::initializer_list<int64_t> tail) {
    Shape s = batch;
    for (int64_t v : tail) s.push_back(v);
    return s;
  };
  Shape perm;
  for (int64_t i = 0; i < static_cast<int64_t>(batch.size()); ++i) perm.push_back(i);
  const int64_t b = static_cast<int64_t>(batch.size());
  if (up) {
    EMBER_CHECK(c % (r * r) == 0,
                "[{}] expects its input's 'channel' dimension to be divisible by the square of "
                "upscale_factor, but input.size(-3)={} is not divisible by {}",
                op, c, r * r);
    const int64_t oc = c / (r * r);
    for (int64_t i : {0, 3, 1, 4, 2}) perm.push_back(b + i);
    return x.reshape(with_batch({oc, r, r, h, w}))
        .permute(perm)
        .reshape(with_batch({oc, h * r, w * r}));
  }
  EMBER_CHECK(h % r == 0 && w % r == 0,
              "[{}] expects height and width to be divisible by downscale_factor, but got "
              "input.size(-2)={}, input.size(-1)={} and downscale_factor={}",
              op, h, w, r);
  const int64_t oh = h / r, ow = w / r;
  for (int64_t i : {0, 2, 4, 1, 3}) perm.push_back(b + i);
  return x.reshape(with_batch({c, oh, r, ow, r}))
      .permute(perm)
      .reshape(with_batch({c * r * r, oh, ow}));
}

}  // namespace

Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor) {
  return shuffle_pixels("pixel_shuffle", x, upscale_factor, true);
}

Tensor channel_shuffle(const Tensor& x, int64_t groups) {
  EMBER_CHECK_TYPE(x.defined(), "[channel_shuffle] undefined tensor argument");
  EMBER_CHECK(x.dim() >= 3,
              "[channel_shuffle] expected an input [N, C, ...] of at least 3 dims: "
              "got shape {}",
              shape_str(x.sizes()));
  const int64_t c = x.size(1);
  EMBER_CHECK(groups > 0 && c % groups == 0,
              "[channel_shuffle] groups must be positive and divide the {} channels: got {}", c,
              groups);
  Shape split = x.sizes();
  split[1] = c / groups;
  split.insert(1, groups);
  return x.reshape(split).transpose(1, 2).reshape(x.sizes());
}

Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor) {
  return shuffle_pixels("pixel_unshuffle", x, downscale_factor, false);
}

}  // namespace ember
