// Spatial transformers: affine_grid and grid_sample, composites of public ops (no kernel of
// their own), so every backend runs them and autograd differentiates them.
//
// affine_grid: grid[n, ..., :] = theta[n] (x, y[, z], 1) over the normalized output coordinates
//              (linspace(-1, 1) per spatial dim, scaled by (S - 1) / S without align_corners);
//              one batched matmul of the base grid with theta^T. backward: the matmul's.
// grid_sample: Note [grid_sample as gathers].
#include <cmath>
#include <string>
#include <vector>

#include "core/dispatch/call.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/linalg.h"
#include "ember/ops/nn.h"
#include "ember/ops/reduce.h"

namespace ember {
namespace {

/** The normalized coordinates of `steps` output positions along a dim (PyTorch's
 *  linspace_from_neg_one): -1 .. 1, scaled by (steps - 1) / steps without align_corners. */
Tensor base_coordinates(int64_t steps, bool align_corners, TensorOptions opts) {
  if (steps <= 1) return zeros({steps}, opts);
  const Tensor r = linspace(-1.0, 1.0, steps, opts);
  if (align_corners) return r;
  return mul(r, Scalar(static_cast<double>(steps - 1) / static_cast<double>(steps)));
}

}  // namespace

Tensor affine_grid(const Tensor& theta, IntList size, bool align_corners) {
  EMBER_CHECK_TYPE(theta.defined(), "[affine_grid] undefined tensor argument");
  EMBER_CHECK_TYPE(is_floating(theta.dtype()),
                   "[affine_grid] theta must be a floating tensor: got {} (convert with "
                   ".to(ember::f32))",
                   theta.dtype());
  EMBER_CHECK_NOT_IMPLEMENTED(size.size() == 4 || size.size() == 5,
                              "[affine_grid] size must have 4 (N, C, H, W) or 5 (N, C, D, H, W) "
                              "entries, for 2-d and 3-d affine transforms: got {}",
                              shape_str(size));
  const int64_t rank = static_cast<int64_t>(size.size()) - 2;
  EMBER_CHECK(theta.dim() == 3 && theta.size(1) == rank && theta.size(2) == rank + 1,
              "[affine_grid] theta must be a batch of {}-d affine matrices of shape [N, {}, {}] "
              "for size {}: got shape {}",
              rank, rank, rank + 1, shape_str(size), shape_str(theta.sizes()));
  for (int64_t s : size) {
    EMBER_CHECK(s > 0, "[affine_grid] size must be positive: got {}", shape_str(size));
  }
  EMBER_CHECK(theta.size(0) == size[0],
              "[affine_grid] theta holds {} matrices but size asks for a batch of {} (theta "
              "shape {}, size {})",
              theta.size(0), size[0], shape_str(theta.sizes()), shape_str(size));
  Shape out{size[0]};
  for (size_t d = 2; d < size.size(); ++d) out.push_back(size[d]);
  out.push_back(rank);
  // The output is allocated first (and handed back at once): an impossible size is an
  // [affine_grid] or [allocate] error before any of the base grid is made.
  shape_numel(out, "affine_grid");
  const TensorOptions opts{theta.dtype(), theta.device()};
  empty(out, opts);
  // The base grid [*spatial, rank + 1]: component k is the coordinate along spatial dim
  // rank - 1 - k (x runs along the last dim), then a column of ones.
  Shape spatial;
  for (size_t d = 2; d < size.size(); ++d) spatial.push_back(size[d]);
  std::vector<Tensor> parts;
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t d = rank - 1 - k;
    Shape view(static_cast<size_t>(rank), 1);
    view[d] = spatial[d];
    parts.push_back(base_coordinates(spatial[d], align_corners, opts).view(view).expand(spatial));
  }
  parts.push_back(ones(spatial, opts));
  int64_t points = 1;
  for (int64_t s : spatial) points *= s;
  const Tensor base =
      stack(parts, -1).reshape({1, points, rank + 1}).expand({size[0], points, rank + 1});
  return matmul(base, theta.transpose(1, 2)).view(out);
}

namespace {

// Note [grid_sample as gathers]
// grid_sample reads input [N, C, *S] (S: D, H, W or H, W) at the points of grid [N, *P, r], whose
// last dim holds (x, y[, z]) in [-1, 1], x along the last spatial dim. Each point is a weighted sum
// of a few input pixels, its taps, as in PyTorch's grid_sampler kernels: per spatial dim a point
// has a source coordinate (unnormalized: (c + 1) (S - 1) / 2 with align_corners, else ((c + 1) S -
// 1) / 2), and nearest takes 1 tap there (rounded half to even), bilinear 2 (floor and floor + 1,
// weights 1 - t and t for t = coordinate - floor), bicubic 4 (floor - 1 .. floor + 2, the cubic
// convolution weights of t with A = -0.75); a point's taps are the product of its dims' taps and
// their weights the product of the weights. The input is moved to rows [N * prod(S), C], each dim's
// taps are stacked [K, N, P], and the taps of all dims but the first are combined by broadcasting;
// then each tap of the first dim is one index_select of the rows for all of them, scaled by the
// weights and summed (so a handful of ops, whatever the mode, and the rows read at once stay at
// most 4 times the output). A tap outside the input reads 0 (where() picks 0, so a NaN coordinate
// reads 0 too, as in PyTorch). padding_mode moves the coordinate itself: 'border' clamps it to [0,
// S - 1], 'reflection' reflects it about the borders (the pixel edges -0.5 and S - 0.5 without
// align_corners, then clamps) — for nearest and bilinear before the taps, for bicubic each tap's
// integer coordinate. The indices are computed from detached coordinates and the weights from the
// live ones, so autograd gives the input gradient (index_select's scatter-add) and the grid
// gradient (through the weights and the coordinate transforms) as PyTorch's backward kernels do;
// nearest's output does not depend on the grid, whose gradient is zero. Every step is a device op:
// no host sync, every backend.

/** The source coordinate of normalized c along a dim of size s. */
Tensor unnormalize(const Tensor& c, int64_t s, bool align_corners) {
  const double sd = static_cast<double>(s);
  return align_corners ? add(mul(c, Scalar((sd - 1) / 2)), Scalar((sd - 1) / 2))
                       : add(mul(c, Scalar(sd / 2)), Scalar((sd - 1) / 2));
}

/** x reflected into [twice_low / 2, twice_high / 2] (PyTorch's reflect_coordinates). */
Tensor reflect(const Tensor& x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return zeros_like(x);
  const double lo = static_cast<double>(twice_low) / 2;
  const double span = static_cast<double>(twice_high - twice_low) / 2;
  const Tensor a = abs(sub(x, Scalar(lo)));
  const Tensor flips = floor(div(a.detach(), Scalar(span)));
  const Tensor extra = sub(a, mul(flips, Scalar(span)));
  const Tensor even = eq(remainder(flips, Scalar(2)), Scalar(0));
  return where(even, add(extra, Scalar(lo)), add(neg(extra), Scalar(span + lo)));
}

/** x moved by padding_mode: clamped ('border'), reflected then clamped ('reflection'). */
Tensor pad_coordinate(const Tensor& x, int64_t s, std::string_view padding, bool align_corners) {
  if (padding == "zeros") return x;
  Tensor y = x;
  if (padding == "reflection") {
    y = align_corners ? reflect(y, 0, 2 * (s - 1)) : reflect(y, -1, 2 * s - 1);
  }
  return clamp(y, Scalar(0), Scalar(static_cast<double>(s - 1)));
}

/** The taps of one spatial dim, stacked [K, N, P]: where they read (detached coordinates) and
 *  their weights (undefined for nearest: 1). */
struct DimTaps {
  Tensor at;
  Tensor weight;
};

/** at + (first, first + 1, ..., first + count - 1) along a new leading dim. */
Tensor offsets(const Tensor& at, int64_t first, int64_t count) {
  const Tensor k = arange(Scalar(first), Scalar(first + count), Scalar(1),
                          TensorOptions{at.dtype(), at.device()});
  return add(at.unsqueeze(0), k.view({count, 1, 1}));
}

/** ((A + 2) t - (A + 3)) t^2 + 1, for |t| <= 1. */
Tensor cubic_near(const Tensor& t, double a) {
  return add(mul(mul(sub(mul(t, Scalar(a + 2)), Scalar(a + 3)), t), t), Scalar(1));
}
/** ((A t - 5 A) t + 8 A) t - 4 A, for 1 < |t| < 2. */
Tensor cubic_far(const Tensor& t, double a) {
  return sub(mul(add(mul(sub(mul(t, Scalar(a)), Scalar(5 * a)), t), Scalar(8 * a)), t),
             Scalar(4 * a));
}

/** The taps of one spatial dim of size s at normalized coordinates c [N, P]. */
DimTaps dim_taps(const Tensor& c, int64_t s, std::string_view mode, std::string_view padding,
                 bool align_corners) {
  const Tensor x = unnormalize(c, s, align_corners);
  if (mode == "bicubic") {
    const Tensor fl = floor(x.detach());
    const Tensor t = sub(x, fl);
    const double a = -0.75;
    const Tensor w =
        stack({cubic_far(add(t, Scalar(1)), a), cubic_near(t, a),
               cubic_near(add(neg(t), Scalar(1)), a), cubic_far(add(neg(t), Scalar(2)), a)});
    return {pad_coordinate(offsets(fl, -1, 4), s, padding, align_corners), w};
  }
  const Tensor p = pad_coordinate(x, s, padding, align_corners);
  if (mode == "nearest") return {round(p.detach()).unsqueeze(0), Tensor()};
  const Tensor fl = floor(p.detach());
  const Tensor t = sub(p, fl);
  return {offsets(fl, 0, 2), stack({add(neg(t), Scalar(1)), t})};
}

}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, std::string_view mode,
                   std::string_view padding_mode, bool align_corners) {
  EMBER_CHECK_TYPE(input.defined() && grid.defined(), "[grid_sample] undefined tensor argument");
  EMBER_CHECK(mode == "bilinear" || mode == "nearest" || mode == "bicubic",
              "[grid_sample] unknown mode '{}' (expected 'bilinear', 'nearest' or 'bicubic')",
              mode);
  EMBER_CHECK(padding_mode == "zeros" || padding_mode == "border" || padding_mode == "reflection",
              "[grid_sample] unknown padding_mode '{}' (expected 'zeros', 'border' or "
              "'reflection')",
              padding_mode);
  EMBER_CHECK(input.dim() == 4 || input.dim() == 5,
              "[grid_sample] expected a 4-d [N, C, H, W] or 5-d [N, C, D, H, W] input: got {}-d "
              "shape {}",
              input.dim(), shape_str(input.sizes()));
  const int64_t rank = input.dim() - 2;
  EMBER_CHECK(grid.dim() == input.dim() && grid.size(-1) == rank,
              "[grid_sample] grid must be [N, {}{}] for a {}-d input: got shape {} (input shape "
              "{})",
              rank == 2 ? "H_out, W_out, " : "D_out, H_out, W_out, ", rank, input.dim(),
              shape_str(grid.sizes()), shape_str(input.sizes()));
  EMBER_CHECK(grid.size(0) == input.size(0),
              "[grid_sample] grid and input must have the same batch size: got {} and {}",
              grid.size(0), input.size(0));
  EMBER_CHECK_NOT_IMPLEMENTED(mode != "bicubic" || rank == 2,
                              "[grid_sample] mode 'bicubic' needs a 4-d input: got {}-d shape {}",
                              input.dim(), shape_str(input.sizes()));
  EMBER_CHECK_TYPE(is_floating(input.dtype()),
                   "[grid_sample] input must be a floating tensor: got {} (convert with "
                   ".to(ember::f32))",
                   input.dtype());
  EMBER_CHECK_TYPE(grid.dtype() == input.dtype(),
                   "[grid_sample] input and grid must have the same dtype: got {} and {}",
                   input.dtype(), grid.dtype());
  common_device({&input, &grid}, "grid_sample");
  const int64_t n = input.size(0), channels = input.size(1);
  Shape spatial;
  for (int64_t d = 2; d < input.dim(); ++d) spatial.push_back(input.size(d));
  int64_t rows = 1;
  for (int64_t s : spatial) {
    EMBER_CHECK(s > 0, "[grid_sample] input spatial sizes must be positive: got shape {}",
                shape_str(input.sizes()));
    rows *= s;
  }
  Shape out_sizes{n, channels};
  int64_t points = 1;
  for (int64_t d = 1; d <= rank; ++d) {
    out_sizes.push_back(grid.size(d));
    points *= grid.size(d);
  }
  const TensorOptions opts{input.dtype(), input.device()};
  if (shape_numel(out_sizes, "grid_sample") == 0) return zeros(out_sizes, opts);

  // The input as rows [N * prod(S), C] and the grid as [N, P, r].
  Shape to_rows{0};
  for (int64_t d = 2; d < input.dim(); ++d) to_rows.push_back(d);
  to_rows.push_back(1);
  const Tensor src = input.permute(to_rows).reshape({n * rows, channels});
  const Tensor g = grid.reshape({n, points, rank});
  // Per spatial dim d (grid component rank - 1 - d), its taps [K_d, N, P]: which are inside,
  // the row offset they read (stride_d times the index; 0 outside) and their weights.
  std::vector<Tensor> ok(rank), index(rank), weight(rank);
  int64_t stride = rows;
  for (int64_t d = 0; d < rank; ++d) {
    const DimTaps t =
        dim_taps(g.select(2, rank - 1 - d), spatial[d], mode, padding_mode, align_corners);
    stride /= spatial[d];
    ok[d] = logical_and(ge(t.at, Scalar(0)), le(t.at, Scalar(static_cast<double>(spatial[d] - 1))));
    // Out-of-range and NaN coordinates read offset 0; where() below drops them.
    index[d] = mul(where(ok[d], t.at, Scalar(0)).to(DType::Int64), Scalar(stride));
    weight[d] = t.weight;
  }
  // The taps of dims 1.. combined by broadcasting into [K_1, ..., K_{r-1}, N, P]; dim 0's taps
  // are added one at a time, so the gathered rows stay at most prod(K_1..) times the output.
  Tensor inner_ok, inner_row, inner_w;
  int64_t inner = 1;
  for (int64_t d = 1; d < rank; ++d) {
    Shape v(static_cast<size_t>(rank - 1), 1);
    v[d - 1] = index[d].size(0);
    v.push_back(n);
    v.push_back(points);
    inner *= index[d].size(0);
    const Tensor o = ok[d].view(v), r = index[d].view(v);
    inner_ok = inner_ok.defined() ? logical_and(inner_ok, o) : o;
    inner_row = inner_row.defined() ? add(inner_row, r) : r;
    if (weight[d].defined()) {
      const Tensor w = weight[d].view(v);
      inner_w = inner_w.defined() ? mul(inner_w, w) : w;
    }
  }
  inner_row = add(inner_row,
                  mul(arange(Scalar(n), TensorOptions{DType::Int64, input.device()}), Scalar(rows))
                      .view({n, 1}));
  Tensor out;
  for (int64_t k = 0; k < index[0].size(0); ++k) {
    const Tensor valid = logical_and(inner_ok, ok[0].select(0, k));
    const Tensor row = add(inner_row, index[0].select(0, k)).reshape({inner * n * points});
    // nearest's weight is 1, linked to the grid with a zero gradient, so the grid gets its (zero)
    // gradient as in PyTorch.
    const Tensor w =
        weight[0].defined()
            ? where(valid, mul(inner_w, weight[0].select(0, k)), Scalar(0))
            : where(valid, where(zeros_like(valid), g.select(2, 0), Scalar(1)), Scalar(0));
    const Tensor rows_read = index_select(src, 0, row).view({inner, n * points, channels});
    const Tensor term = sum(mul(rows_read, w.reshape({inner, n * points, 1})), {0});
    out = out.defined() ? add(out, term) : term;
  }
  Shape view{n};
  for (int64_t d = 1; d <= rank; ++d) view.push_back(grid.size(d));
  view.push_back(channels);
  Shape to_channels_first{0, rank + 1};
  for (int64_t d = 1; d <= rank; ++d) to_channels_first.push_back(d);
  return out.view(view).permute(to_channels_first).contiguous();
}

}  // namespace ember
