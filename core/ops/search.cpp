// Searching and counting, made of public ops (sort, cumsum, scatter): no kernel of their own, so
// every backend runs them, and a binary search is replaced by one stable sort of both operands.
#include "ember/ops/search.h"

#include <algorithm>
#include <cmath>

#include "ember/autograd/grad_mode.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/reduce.h"

namespace ember {

// Note [searchsorted through one sort]
// The index of value v in a sorted row s is the count of elements of s below v (left) or not
// above it (right). Sorting the row [v..., s...] (left) or [s..., v...] (right) stably puts every
// value after the elements of s it passes and before those it does not (equal ones included or
// not by the order of the concatenation); the running count of elements of s before each value's
// sorted place is its index, scattered back to the value's own place. O((N + M) log(N + M)) per
// row on any backend, where a comparison of every value with every element would be O(N M).
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32, bool right,
                    std::optional<std::string_view> side, const Tensor& sorter) {
  EMBER_CHECK_TYPE(sorted_sequence.defined() && values.defined(),
                   "[searchsorted] undefined tensor argument");
  if (side) {
    EMBER_CHECK(*side == "left" || *side == "right",
                "[searchsorted] side can only be 'left' or 'right': got '{}'", *side);
    EMBER_CHECK(!(right && *side == "left"),
                "[searchsorted] side and right can't be set to opposites: got side 'left' and "
                "right true");
    right = *side == "right";
  }
  const Tensor& seq = sorted_sequence;
  EMBER_CHECK(seq.dim() >= 1, "[searchsorted] sorted_sequence must have at least 1 dim: got 0-d");
  bool leading_match = values.dim() == seq.dim();
  for (int64_t i = 0; leading_match && i + 1 < seq.dim(); ++i) {
    leading_match = values.size(i) == seq.size(i);
  }
  EMBER_CHECK(seq.dim() == 1 || leading_match,
              "[searchsorted] sorted_sequence must be 1-d or share all but its last dim with "
              "values: got shapes {} and {}",
              shape_str(seq.sizes()), shape_str(values.sizes()));
  EMBER_CHECK_TYPE(seq.device() == values.device(),
                   "[searchsorted] expected all tensors on one device: got {} and {}", seq.device(),
                   values.device());
  autograd::NoGradGuard no_grad;  // indices: nothing to differentiate
  Tensor s = seq;
  if (sorter.defined()) {
    EMBER_CHECK_TYPE(sorter.dtype() == DType::Int64,
                     "[searchsorted] sorter must be an int64 tensor: got {}", sorter.dtype());
    EMBER_CHECK(sorter.sizes() == seq.sizes(),
                "[searchsorted] sorter must have the shape of sorted_sequence {}: got {}",
                shape_str(seq.sizes()), shape_str(sorter.sizes()));
    s = gather(seq, -1, sorter);
  }
  const DType ct = promote_types(seq.dtype(), values.dtype());
  const DType out_dtype = out_int32 ? DType::Int32 : DType::Int64;
  s = s.to(ct);
  const Tensor v = seq.dim() == 1 ? values.to(ct).reshape({-1}) : values.to(ct);
  if (v.numel() == 0) return empty(values.sizes(), {out_dtype, values.device()});
  const int64_t n = v.size(-1), m = s.size(-1);
  const Tensor merged = right ? cat({s, v}, -1) : cat({v, s}, -1);
  const Tensor perm = std::get<1>(sort(merged, -1));
  const Tensor from_seq = right ? lt(perm, m) : ge(perm, n);
  const Tensor before = sub(cumsum(from_seq, -1), from_seq.to(DType::Int64));
  const Tensor placed = scatter(zeros_like(before), -1, perm, before);
  return placed.narrow(-1, right ? m : 0, n).reshape(values.sizes()).to(out_dtype);
}

Tensor searchsorted(const Tensor& sorted_sequence, Scalar value, bool out_int32, bool right,
                    std::optional<std::string_view> side, const Tensor& sorter) {
  EMBER_CHECK_TYPE(sorted_sequence.defined(), "[searchsorted] undefined tensor argument");
  EMBER_CHECK(sorted_sequence.dim() == 1,
              "[searchsorted] a number as value needs a 1-d sorted_sequence: got shape {}",
              shape_str(sorted_sequence.sizes()));
  const Tensor v = detail::scalar_tensor(value, sorted_sequence.dtype(), sorted_sequence.device());
  return searchsorted(sorted_sequence, v, out_int32, right, side, sorter);
}

Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool out_int32, bool right) {
  EMBER_CHECK_TYPE(x.defined() && boundaries.defined(), "[bucketize] undefined tensor argument");
  EMBER_CHECK(boundaries.dim() == 1, "[bucketize] boundaries must be 1-d: got shape {}",
              shape_str(boundaries.sizes()));
  return searchsorted(boundaries, x, out_int32, right);
}

Tensor histc(const Tensor& x, int64_t bins, double min, double max) {
  EMBER_CHECK_TYPE(x.defined(), "[histc] undefined tensor argument");
  EMBER_CHECK_TYPE(is_floating(x.dtype()),
                   "[histc] expects a floating point input: got {} (convert with .to(float32))",
                   x.dtype());
  EMBER_CHECK(bins > 0, "[histc] bins must be > 0: got {}", bins);
  EMBER_CHECK(!(min > max), "[histc] max must be larger than min: got min {} and max {}", min, max);
  autograd::NoGradGuard no_grad;  // counts: PyTorch defines no gradient
  double lo = min, hi = max;
  if (lo == hi && x.numel() > 0) {
    lo = amin(x).item();
    hi = amax(x).item();
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  EMBER_CHECK(std::isfinite(lo) && std::isfinite(hi), "[histc] range of [{}, {}] is not finite", lo,
              hi);
  const TensorOptions longs{DType::Int64, x.device()};
  const Tensor xd = x.reshape({-1}).to(DType::Float64);
  // PyTorch's bin: (x - min) * bins / (max - min), max itself in the last bin; the elements
  // outside [min, max] (NaN too) go to an extra bin that is dropped.
  const Tensor inside = logical_and(ge(xd, lo), le(xd, hi));
  const Tensor pos =
      minimum(floor(div(mul(sub(xd, lo), static_cast<double>(bins)), hi - lo)),
              full({}, static_cast<double>(bins - 1), DType::Float64).to(x.device()));
  const Tensor bin = where(inside, pos, static_cast<double>(bins)).to(DType::Int64);
  const Tensor counts = scatter_add(zeros({bins + 1}, longs), 0, bin, ones({xd.numel()}, longs));
  return counts.narrow(0, 0, bins).to(x.dtype());
}

namespace {

void check_histogram_args(const Tensor& x, const Tensor& weight) {
  EMBER_CHECK_TYPE(x.defined(), "[histogram] undefined tensor argument");
  EMBER_CHECK_TYPE(is_floating(x.dtype()),
                   "[histogram] expects a floating point input: got {} (convert with .float())",
                   x.dtype());
  if (weight.defined()) {
    EMBER_CHECK(weight.sizes() == x.sizes(),
                "[histogram] weight must have the input's shape: got {} for input {}",
                shape_str(weight.sizes()), shape_str(x.sizes()));
    EMBER_CHECK_TYPE(weight.dtype() == x.dtype() && weight.device() == x.device(),
                     "[histogram] weight must have the input's dtype and device: got {} on {} for "
                     "{} on {}",
                     weight.dtype(), weight.device(), x.dtype(), x.device());
  }
}

// Note [histogram as PyTorch counts]
// An element e in [edges[0], edges[n]] goes to the bin b with edges[b] <= e < edges[b + 1], the
// last bin closed (PyTorch's binary search over the edges, and for equal bins its interpolation
// refined against the same edges, agree on this); others and NaN are not counted. The bin is
// searchsorted(edges, e, right) - 1, clamped below n for e == edges[n]; the weights add up at
// the bins by index_add.
std::tuple<Tensor, Tensor> histogram_over(const Tensor& x, const Tensor& edges,
                                          const Tensor& weight, bool density) {
  const int64_t n = edges.numel() - 1;
  const Tensor xs = x.reshape({-1});
  const Tensor inside = logical_and(ge(xs, edges.select(0, 0)), le(xs, edges.select(0, n)));
  const Tensor bin = clamp(sub(searchsorted(edges, xs, false, true), 1), Scalar(0), Scalar(n - 1));
  const Tensor w = weight.defined() ? weight.reshape({-1}) : ones_like(xs);
  Tensor hist =
      index_add(zeros({n}, {x.dtype(), x.device()}), 0, bin, where(inside, w, zeros_like(w)));
  if (density) {
    const Tensor widths = sub(edges.narrow(0, 1, n), edges.narrow(0, 0, n));
    hist = div(hist, mul(sum(hist), widths));
  }
  return {hist, edges};
}

}  // namespace

std::tuple<Tensor, Tensor> histogram(const Tensor& x, int64_t bins,
                                     std::optional<std::pair<double, double>> range,
                                     const Tensor& weight, bool density) {
  check_histogram_args(x, weight);
  EMBER_CHECK(bins > 0, "[histogram] bins must be > 0: got {}", bins);
  autograd::NoGradGuard no_grad;  // counts: PyTorch defines no gradient
  double lo = 0, hi = 0;
  if (range) {
    std::tie(lo, hi) = *range;
  } else if (x.numel() > 0) {
    lo = amin(x).to(DType::Float64).item();
    hi = amax(x).to(DType::Float64).item();
  }
  EMBER_CHECK(std::isfinite(lo) && std::isfinite(hi),
              "[histogram] range of [{}, {}] is not finite (NaN or inf in the input, or give "
              "range=)",
              lo, hi);
  EMBER_CHECK(lo <= hi, "[histogram] max must be larger than min: got range [{}, {}]", lo, hi);
  if (lo == hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  return histogram_over(x, linspace(lo, hi, bins + 1, {x.dtype(), x.device()}), weight, density);
}

std::tuple<Tensor, Tensor> histogram(const Tensor& x, const Tensor& bins, const Tensor& weight,
                                     bool density) {
  check_histogram_args(x, weight);
  EMBER_CHECK_TYPE(bins.defined(), "[histogram] undefined tensor argument");
  EMBER_CHECK(bins.dim() == 1 && bins.numel() >= 2,
              "[histogram] bins must be a 1-d tensor of at least 2 edges: got shape {}",
              shape_str(bins.sizes()));
  EMBER_CHECK_TYPE(bins.dtype() == x.dtype() && bins.device() == x.device(),
                   "[histogram] bins must have the input's dtype and device: got {} on {} for {} "
                   "on {}",
                   bins.dtype(), bins.device(), x.dtype(), x.device());
  autograd::NoGradGuard no_grad;
  return histogram_over(x, bins.contiguous(), weight, density);
}

namespace {

// (values, inverse, counts) of the rows of `rows` [n, k] taken in the order `perm`, where equal
// rows are next to each other in that order.
std::tuple<Tensor, Tensor, Tensor> runs(const Tensor& rows, const Tensor& perm) {
  const int64_t n = rows.size(0);
  const TensorOptions longs{DType::Int64, rows.device()};
  const Tensor ordered = index_select(rows, 0, perm);
  const Tensor differs = any(ne(ordered.narrow(0, 1, n - 1), ordered.narrow(0, 0, n - 1)), {1});
  const Tensor first = cat({ones({1}, {DType::Bool, rows.device()}), differs});
  const Tensor group = sub(cumsum(first, 0), 1);
  const Tensor starts = nonzero(first).reshape({-1});
  const Tensor values = index_select(ordered, 0, starts);
  const Tensor inverse = scatter(zeros({n}, longs), 0, perm, group);
  const Tensor ends = cat({starts.narrow(0, 1, starts.numel() - 1), full({1}, n, longs)});
  return {values, inverse, sub(ends, starts)};
}

std::tuple<Tensor, Tensor, Tensor> unique_impl(const char* name, const Tensor& x,
                                               std::optional<int64_t> dim, bool sort_rows) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", name);
  autograd::NoGradGuard no_grad;  // PyTorch defines no gradient
  const TensorOptions longs{DType::Int64, x.device()};
  // Rows: the elements (no dim), or the slices along dim flattened.
  const int64_t d = dim ? wrap_dim(*dim, std::max<int64_t>(x.dim(), 1), name) : 0;
  const Tensor moved = !dim ? x.reshape({-1}) : x.dim() == 0 ? x.reshape({1}) : x.transpose(0, d);
  const int64_t n = moved.size(0);
  int64_t k = 1;
  for (int64_t i = 1; i < moved.dim(); ++i) k *= moved.size(i);
  if (n == 0) {
    const Tensor inverse = empty(!dim ? x.sizes() : Shape{0}, longs);
    return {dim ? x.clone() : empty({0}, {x.dtype(), x.device()}), inverse, empty({0}, longs)};
  }
  const Tensor rows = moved.reshape({n, k});
  Tensor perm = arange(n, longs);
  if (sort_rows) {
    // Lexicographic order of the rows: stable sorts by each column, the last first.
    for (int64_t c = k - 1; c >= 0; --c) {
      const Tensor key = index_select(rows.select(1, c), 0, perm);
      perm = index_select(perm, 0, std::get<1>(sort(key)));
    }
  }
  auto [values, inverse, counts] = runs(rows, perm);
  if (!dim) return {values.reshape({-1}), inverse.view(x.sizes()), counts};
  Shape vsizes = moved.sizes();
  vsizes[0] = values.size(0);
  Tensor v = values.reshape(vsizes);
  if (x.dim() > 0) v = v.transpose(0, d).contiguous();
  return {v, inverse, counts};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& x, bool, std::optional<int64_t> dim) {
  // Always sorted: PyTorch leaves the order of sorted=false unspecified.
  return unique_impl("unique", x, dim, /*sort_rows=*/true);
}

std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& x, std::optional<int64_t> dim) {
  return unique_impl("unique_consecutive", x, dim, /*sort_rows=*/false);
}

Tensor isin(const Tensor& elements, const Tensor& test_elements, bool assume_unique, bool invert) {
  static_cast<void>(assume_unique);  // a hint only: the sort below needs no unique elements
  EMBER_CHECK_TYPE(elements.defined() && test_elements.defined(),
                   "[isin] undefined tensor argument");
  EMBER_CHECK(elements.device() == test_elements.device(),
              "[isin] elements and test_elements are on different devices: {} and {}",
              elements.device(), test_elements.device());
  autograd::NoGradGuard no_grad;
  DType common = result_type(elements, test_elements);
  if (common == DType::Bool) common = DType::UInt8;  // sorted and searched as numbers
  const Tensor flat = elements.reshape({-1}).to(common);
  const Tensor test = test_elements.reshape({-1}).to(common);
  Tensor found;
  if (test.numel() == 0 || flat.numel() == 0) {
    found = zeros(elements.sizes(), TensorOptions{DType::Bool, elements.device()});
  } else {
    // Each element's place in the sorted test elements holds it, or it is in none (NaN sorts
    // last and equals nothing, as in PyTorch).
    const Tensor sorted = std::get<0>(sort(test, 0));
    const Tensor at = clamp(searchsorted(sorted, flat), Scalar(0), Scalar(test.numel() - 1));
    found = eq(index_select(sorted, 0, at), flat).reshape(elements.sizes());
  }
  return invert ? logical_not(found) : found;
}

Tensor isin(const Tensor& elements, Scalar test_element, bool assume_unique, bool invert) {
  EMBER_CHECK_TYPE(elements.defined(), "[isin] undefined tensor argument");
  const DType common = result_type(elements, test_element);
  return isin(elements, full({}, test_element, TensorOptions{common, elements.device()}),
              assume_unique, invert);
}

Tensor isin(Scalar element, const Tensor& test_elements, bool assume_unique, bool invert) {
  EMBER_CHECK_TYPE(test_elements.defined(), "[isin] undefined tensor argument");
  const DType common = result_type(element, test_elements);
  return isin(full({}, element, TensorOptions{common, test_elements.device()}), test_elements,
              assume_unique, invert);
}

Tensor bincount(const Tensor& x, const Tensor& weights, int64_t minlength) {
  EMBER_CHECK_TYPE(x.defined(), "[bincount] undefined tensor argument");
  EMBER_CHECK_TYPE(is_integral(x.dtype()), "[bincount] needs an integer input: got {}", x.dtype());
  EMBER_CHECK(x.dim() == 1, "[bincount] needs a 1-d input: got shape {}", shape_str(x.sizes()));
  EMBER_CHECK(minlength >= 0, "[bincount] minlength must be non-negative: got {}", minlength);
  DType out = DType::Int64;
  if (weights.defined()) {
    EMBER_CHECK(weights.dim() == 1 && weights.size(0) == x.size(0),
                "[bincount] weights must be 1-d and as long as the input: got shape {} for an "
                "input of {} elements",
                shape_str(weights.sizes()), x.size(0));
    EMBER_CHECK(weights.device() == x.device(),
                "[bincount] input and weights are on different devices: {} and {}", x.device(),
                weights.device());
    out = weights.dtype() == DType::Float32 ? DType::Float32 : DType::Float64;
  }
  autograd::NoGradGuard no_grad;  // counts: PyTorch defines no gradient
  const TensorOptions opts{out, x.device()};
  if (x.numel() == 0) return zeros({minlength}, opts);
  const Tensor xl = x.to(DType::Int64);
  const int64_t lo = amin(xl).item<int64_t>(), hi = amax(xl).item<int64_t>();
  EMBER_CHECK(lo >= 0, "[bincount] needs non-negative values: got {}", lo);
  const int64_t bins = std::max(hi + 1, minlength);
  const Tensor w = weights.defined() ? weights.to(out) : ones({x.numel()}, opts);
  return scatter_add(zeros({bins}, opts), 0, xl, w);
}

}  // namespace ember
