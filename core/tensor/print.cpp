// The printed form of a tensor, in PyTorch's style:
//   tensor([[1.0000, 2.5000],
//           [3.0000, 4.0000]], dtype=float64)
#include <cmath>
#include <vector>

#include "core/ops/factory.h"
#include "core/tensor/tensor.h"

namespace ember {
namespace {

constexpr int64_t kSummarizeAbove = 1000;  // PyTorch's threshold
constexpr int64_t kEdgeItems = 3;

struct Style {
  bool floating = false;
  bool integral_values = true;  // every float is a whole number: print "1."
  bool scientific = false;
  int width = 1;
};

std::string format_value(double v, const Style& st, DType dtype) {
  if (dtype == DType::Bool) return v != 0 ? "True" : "False";
  if (!st.floating) return fmt::format("{}", static_cast<int64_t>(v));
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (st.scientific) return fmt::format("{:.4e}", v);
  if (st.integral_values) return fmt::format("{:.0f}.", v);
  return fmt::format("{:.4f}", v);
}

void render(const std::vector<double>& vals, const Shape& sizes, size_t dim, int64_t offset,
            const Shape& strides, bool summarize, const Style& st, DType dtype, int indent,
            std::string& out) {
  if (sizes.empty()) {
    out += format_value(vals[offset], st, dtype);
    return;
  }
  out += '[';
  const int64_t n = sizes[dim];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
      out += dim + 1 == sizes.size() ? "..., " : fmt::format("...,\n{:{}}", "", indent + 1);
      i = n - kEdgeItems;
    }
    if (dim + 1 == sizes.size()) {
      std::string s = format_value(vals[offset + i * strides[dim]], st, dtype);
      out += fmt::format("{:>{}}", s, st.width);
      if (i + 1 < n) out += ", ";
    } else {
      render(vals, sizes, dim + 1, offset + i * strides[dim], strides, summarize, st, dtype,
             indent + 1, out);
      if (i + 1 < n) {
        out += ',';
        out += std::string(sizes.size() - dim - 1, '\n');
        out += std::string(indent + 1, ' ');
      }
    }
  }
  out += ']';
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  const Tensor host = to(Device::cpu()).contiguous();
  std::vector<double> vals(static_cast<size_t>(numel()));
  visit_dtype(dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(host.data_ptr());
    for (size_t i = 0; i < vals.size(); ++i) {
      vals[i] = static_cast<double>(static_cast<sdk::Compute<T>>(p[i]));
    }
  });
  Style st;
  st.floating = is_floating(dtype());
  double max_abs = 0, min_abs = INFINITY;
  for (double v : vals) {
    if (!std::isfinite(v)) continue;
    if (v != std::floor(v)) st.integral_values = false;
    max_abs = std::max(max_abs, std::fabs(v));
    if (v != 0) min_abs = std::min(min_abs, std::fabs(v));
  }
  if (st.floating && (max_abs >= 1e8 || (min_abs < 1e-4 && !st.integral_values) ||
                      (max_abs / std::max(min_abs, 1e-300) > 1000 && !st.integral_values))) {
    st.scientific = true;
  }
  for (double v : vals) st.width = std::max<int>(st.width, format_value(v, st, dtype()).size());
  std::string out = "tensor(";
  if (numel() == 0) {
    out += "[]";
    if (dim() > 1) out += fmt::format(", size={}", shape_str(sizes()));
  } else {
    render(vals, sizes(), 0, 0, host.strides(), numel() > kSummarizeAbove, st, dtype(), 7, out);
  }
  const bool default_dtype = dtype() == kDefaultFloat || dtype() == DType::Int64 ||
                             dtype() == DType::Bool;
  if (device() != Device::cpu()) out += fmt::format(", device='{}'", device().str());
  if (!default_dtype) out += fmt::format(", dtype={}", dtype());
  out += ')';
  return out;
}

}  // namespace ember
