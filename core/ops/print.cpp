// The printed form of a tensor, in PyTorch's style:
//   tensor([[1.0000, 2.5000],
//           [3.0000, 4.0000]], dtype=float64)
//
// Note [Printing follows torch/_tensor_str.py]
// The rules are PyTorch's (precision 4, threshold 1000, edge items 3, line width 80):
// - One format for the whole tensor, chosen from the elements that are printed (the edges
//   when summarising) and, for floats, only from the finite non-zero ones: "1." when all are
//   whole numbers, "1.0000" otherwise, "1.0000e+00" when max/min > 1000, max > 1e8, or (not
//   whole) min < 1e-4. Every element is right-aligned to the widest formatted one.
// - Rows wrap at 80 columns; above 1000 elements each dim longer than 6 shows its first and
//   last 3 entries around "...".
// - Suffixes: device if not the CPU, then for empty tensors size=(..) unless 1-d and dtype
//   unless float32; for others dtype unless float32, int64 or bool. Dtypes print by their
//   Ember names ("float64", not "torch.float64").
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/ops/factory.h"
#include "ember/tensor/tensor.h"

namespace ember {
namespace {

constexpr int64_t kSummarizeAbove = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int64_t kLineWidth = 80;

// Visits the flat indices of the elements that get printed, in order.
template <typename Fn>
void for_each_printed(const Shape& sizes, const Shape& strides, size_t dim, int64_t offset,
                      bool summarize, Fn&& fn) {
  if (dim == sizes.size()) {
    fn(offset);
    return;
  }
  const int64_t n = sizes[dim];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    for_each_printed(sizes, strides, dim + 1, offset + i * strides[dim], summarize, fn);
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
  Formatter(DType dtype, const std::vector<Elem>& printed) : dtype_(dtype) {
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
    if (!any) return;
    sci_ = hi / lo > 1000.0 || hi > 1.0e8 || (!int_mode_ && lo < 1.0e-4);
    for (const Elem& e : printed) {
      if (std::isfinite(e.d) && e.d != 0) width_ = std::max(width_, raw(e).size());
    }
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
    if (sci_) return fmt::format("{:.4e}", v);
    if (int_mode_) return fmt::format("{:.0f}.", v);
    return fmt::format("{:.4f}", v);
  }

  DType dtype_;
  bool floating_ = false;
  bool int_mode_ = true;
  bool sci_ = false;
  size_t width_ = 1;
};

struct Printer {
  const std::vector<Elem>& vals;
  const Shape& sizes;
  const Shape& strides;
  bool summarize;
  const Formatter& formatter;

  std::string vector_str(int64_t offset, int64_t indent) const {
    const int64_t n = sizes.back(), stride = strides.back();
    const int64_t element_length = static_cast<int64_t>(formatter.width()) + 2;
    const int64_t per_line = std::max<int64_t>(1, (kLineWidth - indent) / element_length);
    std::vector<std::string> items;
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
        items.emplace_back(" ...");
        i = n - kEdgeItems;
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
      if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
        out += "..." + sep;
        i = n - kEdgeItems;
      }
      out += tensor_str(dim + 1, offset + i * strides[dim], indent + 1);
    }
    return out + "]";
  }
};

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
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
    const bool summarize = numel() > kSummarizeAbove;
    std::vector<Elem> printed;
    for_each_printed(sizes(), host.strides(), 0, 0, summarize,
                     [&](int64_t i) { printed.push_back(vals[static_cast<size_t>(i)]); });
    const Formatter formatter(dtype(), printed);
    if (dim() == 0) {
      out += formatter.format(vals[0]);
    } else {
      const Printer p{vals, sizes(), host.strides(), summarize, formatter};
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
