// The printed form of a tensor, in PyTorch's style:
//   tensor([[1.0000, 2.5000],
//           [3.0000, 4.0000]], dtype=float64)
//
// Note [Printing follows torch/_tensor_str.py]
// The rules are PyTorch's, with its print options (PrintOptions: by default precision 4,
// threshold 1000, edge items 3, line width 80; shown below with those numbers):
// - One format for the whole tensor, chosen from the elements that are printed (the edges
//   when summarising) and, for floats, only from the finite non-zero ones: "1." when all are
//   whole numbers, "1.0000" otherwise, "1.0000e+00" when max/min > 1000, max > 1e8, or (not
//   whole) min < 1e-4. Every element is right-aligned to the widest formatted one.
// - Rows wrap at 80 columns; above 1000 elements each dim longer than 6 shows its first and
//   last 3 entries around "...".
// - A sci_mode set in the options overrides the choice of notation but not the width, which
//   comes from the chosen notation, as in PyTorch.
// - Suffixes: device if not the CPU, then for empty tensors size=(..) unless 1-d and dtype
//   unless float32; for others dtype unless float32, int64 or bool. Dtypes print by their
//   Ember names ("float64", not "torch.float64").
// The options are one process-wide value under a mutex; each str() call reads a copy once.
#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/ops/factory.h"
#include "ember/ops/print.h"
#include "ember/tensor/tensor.h"

namespace ember {
namespace {

std::mutex print_options_mutex;
PrintOptions current_print_options;

// True at entry i of a dim of n entries where a summary leaves out the middle: entries
// [edge, n - edge) are not printed (edge: the entries kept at each end; -1, not summarised).
bool gap_at(int64_t i, int64_t n, int64_t edge) {
  return edge >= 0 && n > 2 * edge && i == edge;
}

// Visits the flat indices of the elements that get printed, in order.
template <typename Fn>
void for_each_printed(const Shape& sizes, const Shape& strides, size_t dim, int64_t offset,
                      int64_t edge, Fn&& fn) {
  if (dim == sizes.size()) {
    fn(offset);
    return;
  }
  const int64_t n = sizes[dim];
  for (int64_t i = 0; i < n; ++i) {
    if (gap_at(i, n, edge)) {
      i = n - edge;
      if (i == n) break;  // no edge items: nothing of this dim is printed
    }
    for_each_printed(sizes, strides, dim + 1, offset + i * strides[dim], edge, fn);
  }
}

/** One element: its value as a double (floating dtypes) and as an int64 (integers and bool, read
 *  exactly: a double rounds int64 values above 2^53). */
struct Elem {
  double d;
  int64_t i;
};

class Formatter {
 public:
  Formatter(DType dtype, const std::vector<Elem>& printed, const PrintOptions& o)
      : dtype_(dtype), precision_(static_cast<int>(o.precision)) {
    floating_ = is_floating(dtype);
    if (!floating_) {
      for (const Elem& e : printed) width_ = std::max(width_, raw(e).size());
      return;
    }
    double lo = INFINITY, hi = 0;
    bool any = false;
    for (const Elem& e : printed) {
      const double v = e.d;
      if (!std::isfinite(v) || v == 0) continue;
      any = true;
      lo = std::min(lo, std::fabs(v));
      hi = std::max(hi, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    if (any) {
      sci_ = hi / lo > 1000.0 || hi > 1.0e8 || (!int_mode_ && lo < 1.0e-4);
      for (const Elem& e : printed) {
        if (std::isfinite(e.d) && e.d != 0) width_ = std::max(width_, raw(e).size());
      }
    }
    if (o.sci_mode) sci_ = *o.sci_mode;
  }

  size_t width() const { return width_; }

  /** The element right-aligned to the common width. */
  std::string format(const Elem& e) const {
    std::string s = raw(e);
    if (s.size() < width_) s.insert(0, width_ - s.size(), ' ');
    return s;
  }

 private:
  std::string raw(const Elem& e) const {
    if (dtype_ == DType::Bool) return e.i != 0 ? "True" : "False";
    if (!floating_) return fmt::format("{}", e.i);
    const double v = e.d;
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (sci_) return fmt::format("{:.{}e}", v, precision_);
    if (int_mode_) return fmt::format("{:.0f}.", v);
    return fmt::format("{:.{}f}", v, precision_);
  }

  DType dtype_;
  int precision_;
  bool floating_ = false;
  bool int_mode_ = true;
  bool sci_ = false;
  size_t width_ = 1;
};

struct Printer {
  const std::vector<Elem>& vals;
  const Shape& sizes;
  const Shape& strides;
  int64_t edge;  // entries kept at each end of a summarised dim; -1: not summarised
  int64_t line_width;
  const Formatter& formatter;

  std::string vector_str(int64_t offset, int64_t indent) const {
    const int64_t n = sizes.back(), stride = strides.back();
    const int64_t element_length = static_cast<int64_t>(formatter.width()) + 2;
    const int64_t per_line = std::max<int64_t>(1, (line_width - indent) / element_length);
    std::vector<std::string> items;
    for (int64_t i = 0; i < n; ++i) {
      if (gap_at(i, n, edge)) {
        items.emplace_back(" ...");
        i = n - edge;
        if (i == n) break;  // no edge items: only the ellipsis
      }
      items.push_back(formatter.format(vals[offset + i * stride]));
    }
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) {
        out += i % per_line == 0 ? fmt::format(",\n{:{}}", "", indent + 1) : ", ";
      }
      out += items[i];
    }
    return out + "]";
  }

  std::string tensor_str(size_t dim, int64_t offset, int64_t indent) const {
    if (dim + 1 == sizes.size()) return vector_str(offset, indent);
    const int64_t n = sizes[dim];
    const std::string sep =
        "," + std::string(sizes.size() - dim - 1, '\n') + std::string(indent + 1, ' ');
    std::string out = "[";
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0) out += sep;
      if (gap_at(i, n, edge)) {
        if (edge == 0) {
          out += "...";
          break;
        }
        out += "..." + sep;
        i = n - edge;
      }
      out += tensor_str(dim + 1, offset + i * strides[dim], indent + 1);
    }
    return out + "]";
  }
};

}  // namespace

PrintOptions print_options() {
  std::lock_guard lock(print_options_mutex);
  return current_print_options;
}

void set_print_options(const PrintOptions& options) {
  EMBER_CHECK(options.precision >= 0 && options.threshold >= 0 && options.edgeitems >= 0 &&
                  options.linewidth >= 1,
              "[set_printoptions] a negative number, or a line width under 1: precision={}, "
              "threshold={}, edgeitems={}, linewidth={}",
              options.precision, options.threshold, options.edgeitems, options.linewidth);
  // fmt takes a precision up to INT_MAX; more digits than a double has are noise anyway.
  EMBER_CHECK(options.precision <= 1000,
              "[set_printoptions] precision={} is more digits than can print (at most 1000)",
              options.precision);
  std::lock_guard lock(print_options_mutex);
  current_print_options = options;
}

PrintOptions print_profile(std::string_view name) {
  PrintOptions o;
  if (name == "short") {
    o.precision = 2;
    o.edgeitems = 2;
  } else if (name == "full") {
    o.threshold = std::numeric_limits<int64_t>::max();
  } else {
    EMBER_CHECK(name == "default",
                "[set_printoptions] unknown profile '{}' (one of 'default', 'short', 'full')",
                name);
  }
  return o;
}

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  const PrintOptions opts = print_options();
  const Tensor host = to(Device::cpu()).contiguous();
  std::vector<Elem> vals(static_cast<size_t>(numel()));
  visit_dtype(dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(host.data_ptr());
    for (size_t i = 0; i < vals.size(); ++i) {
      if constexpr (std::is_integral_v<T>) {
        vals[i] = {0.0, static_cast<int64_t>(p[i])};
      } else {
        vals[i] = {static_cast<double>(static_cast<sdk::Compute<T>>(p[i])), 0};
      }
    }
  });
  const std::string prefix = "tensor(";
  std::string out = prefix;
  std::vector<std::string> suffixes;
  if (device() != Device::cpu()) suffixes.push_back(fmt::format("device='{}'", device().str()));
  if (numel() == 0) {
    out += "[]";
    if (dim() != 1) {
      // Python's tuple form: (0, 3)
      const std::string s = shape_str(sizes());
      suffixes.push_back(fmt::format("size=({})", s.substr(1, s.size() - 2)));
    }
    if (dtype() != default_dtype()) suffixes.push_back(fmt::format("dtype={}", dtype()));
  } else {
    const int64_t edge = numel() > opts.threshold ? opts.edgeitems : -1;
    std::vector<Elem> printed;
    for_each_printed(sizes(), host.strides(), 0, 0, edge,
                     [&](int64_t i) { printed.push_back(vals[static_cast<size_t>(i)]); });
    const Formatter formatter(dtype(), printed, opts);
    if (dim() == 0) {
      out += formatter.format(vals[0]);
    } else {
      const Printer p{vals, sizes(), host.strides(), edge, opts.linewidth, formatter};
      out += p.tensor_str(0, 0, static_cast<int64_t>(prefix.size()));
    }
    if (dtype() != default_dtype() && dtype() != DType::Int64 && dtype() != DType::Bool) {
      suffixes.push_back(fmt::format("dtype={}", dtype()));
    }
  }
  for (const std::string& s : suffixes) out += ", " + s;
  return out + ")";
}

}  // namespace ember
