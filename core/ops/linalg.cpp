// Matrix products: matmul (NumPy semantics), mm, bmm, and einsum through bmm.
// Kernel contract ("matmul"): inputs {A [..., M, K], B [..., K, N]} of one dtype (the promoted
// dtype of the operands; bool never reaches a kernel), with equal rank >= 2 and batch dims
// already broadcast to the same sizes (expanded views: stride 0 where broadcast; any strides
// in the last two dims too); outputs {C [..., M, N]} contiguous, of the same dtype. No
// attributes. The kernel sees M, N > 0 but may see K == 0 (then C is all zeros). 1-d operands
// never reach a kernel: the core makes them [1, K] / [K, 1] and squeezes the result.
// backward (C = A B): dA = dC B^T, dB = A^T dC, summed over broadcast batch dims.
#include "ember/ops/linalg.h"

#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dispatch/call.h"
#include "ember/amp/autocast.h"
#include "ember/autograd/record.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/reduce.h"

namespace ember {
namespace {

// Shared body of matmul, mm and bmm: `name` prefixes every error message.
Tensor product(const char* name, const Tensor& a, const Tensor& b) {
  EMBER_CHECK_TYPE(a.defined() && b.defined(), "[{}] undefined tensor argument", name);
  EMBER_CHECK(a.dim() >= 1 && b.dim() >= 1,
              "[{}] both arguments need at least 1 dimension: got {}-d and {}-d", name, a.dim(),
              b.dim());
  EMBER_CHECK_TYPE(a.dtype() != DType::Bool && b.dtype() != DType::Bool,
                   "[{}] not defined for bool tensors: got {} and {} (convert with .to())", name,
                   a.dtype(), b.dtype());
  const Device device = common_device({&a, &b}, name);
  // No promotion (Note [Ops that take one dtype]).
  const DType dtype = common_dtype({&a, &b}, name);

  // Note [1-d operands of matmul]
  // As in NumPy, a 1-d left operand is a row vector [1, K] and a 1-d right operand a column
  // vector [K, 1]; the added dim is removed from the result, so vector x vector is a 0-d dot
  // product and matrix x vector is a vector.
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  const int64_t m = a2.size(-2), k = a2.size(-1), n = b2.size(-1);
  EMBER_CHECK(k == b2.size(-2),
              "[{}] shapes {} and {} cannot be multiplied: size(-1)={} but size(-2)={}", name,
              shape_str(a.sizes()), shape_str(b.sizes()), k, b2.size(-2));

  const IntList a_batch(a2.sizes().data(), a2.sizes().size() - 2);
  const IntList b_batch(b2.sizes().data(), b2.sizes().size() - 2);
  for (size_t i = 1; i <= std::min(a_batch.size(), b_batch.size()); ++i) {
    const int64_t da = a_batch[a_batch.size() - i], db = b_batch[b_batch.size() - i];
    EMBER_CHECK(da == db || da == 1 || db == 1,
                "[{}] shapes {} and {} cannot be multiplied: batch dims {} and {} do not broadcast",
                name, shape_str(a.sizes()), shape_str(b.sizes()), shape_str(a_batch),
                shape_str(b_batch));
  }
  Shape shape = broadcast_shapes(a_batch, b_batch, name);
  Shape a_shape = shape, b_shape = shape;
  a_shape.push_back(m);
  a_shape.push_back(k);
  b_shape.push_back(k);
  b_shape.push_back(n);
  shape.push_back(m);
  shape.push_back(n);
  Tensor out = empty(shape, {dtype, device});
  if (out.numel() > 0) {
    if (k == 0) {
      out.zero_();
    } else {
      const Tensor ax = a2.to(dtype).expand(a_shape), bx = b2.to(dtype).expand(b_shape);
      run_kernel(core_op(ops::matmul), dtype, {&ax, &bx}, {&out});
    }
  }
  if (a.dim() > 1 && b.dim() > 1) return out;
  Shape result;
  for (size_t i = 0; i + 2 < shape.size(); ++i) result.push_back(shape[i]);
  if (a.dim() > 1) result.push_back(m);
  if (b.dim() > 1) result.push_back(n);
  return out.view(result);
}

// Note [Backward of matmul]
// With 1-d operands viewed as [1, K] / [K, 1] (Note [1-d operands of matmul]) and the output
// gradient viewed back to [..., M, N], the gradients are dA = dC B^T and dB = A^T dC, written
// with the public matmul and transpose so they are differentiable again. Their batch dims are
// the broadcast ones; reduce_grad sums them back to each operand's own batch dims and casts to
// its own dtype (a float32 operand of a float64 product gets a float32 gradient). mm and bmm
// are special cases and share this formula.
Tensor differentiable_product(const char* name, const char* node, const Tensor& a,
                              const Tensor& b) {
  return autograd::differentiable(
      node, name, {&a, &b}, [&] { return product(name, a, b); },
      [&] {
        return [sa = autograd::SavedTensor(a), sb = autograd::SavedTensor(b),
                ra = a.requires_grad(), rb = b.requires_grad()](const std::vector<Tensor>& g,
                                                                const autograd::LambdaNode& self) {
          const Tensor a = self.unpack(sa), b = self.unpack(sb);
          const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
          const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
          // dC without the dims of 1-d operands: its leading dims are the batch dims.
          const int64_t batch = g[0].dim() - (a.dim() > 1) - (b.dim() > 1);
          Shape full;
          for (int64_t i = 0; i < batch; ++i) full.push_back(g[0].size(i));
          full.push_back(a2.size(-2));
          full.push_back(b2.size(-1));
          const Tensor g2 = g[0].reshape(full);
          Tensor ga, gb;
          if (ra) {
            ga = autograd::reduce_grad(matmul(g2, b2.transpose(-1, -2)), a2).reshape(a.sizes());
          }
          if (rb) {
            gb = autograd::reduce_grad(matmul(a2.transpose(-1, -2), g2), b2).reshape(b.sizes());
          }
          return std::vector<Tensor>{ga, gb};
        };
      });
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  EMBER_AUTOCAST(Lower, matmul, a, a, b);
  return differentiable_product("matmul", "MatmulBackward", a, b);
}

Tensor mm(const Tensor& a, const Tensor& b) {
  EMBER_AUTOCAST(Lower, mm, a, a, b);
  EMBER_CHECK_TYPE(a.defined() && b.defined(), "[mm] undefined tensor argument");
  EMBER_CHECK(a.dim() == 2 && b.dim() == 2, "[mm] expected 2-d tensors: got shapes {} and {}",
              shape_str(a.sizes()), shape_str(b.sizes()));
  return differentiable_product("mm", "MmBackward", a, b);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  EMBER_AUTOCAST(Lower, bmm, a, a, b);
  EMBER_CHECK_TYPE(a.defined() && b.defined(), "[bmm] undefined tensor argument");
  EMBER_CHECK(a.dim() == 3 && b.dim() == 3, "[bmm] expected 3-d tensors: got shapes {} and {}",
              shape_str(a.sizes()), shape_str(b.sizes()));
  EMBER_CHECK(a.size(0) == b.size(0),
              "[bmm] batch sizes differ: shapes {} and {} (bmm does not broadcast; use matmul)",
              shape_str(a.sizes()), shape_str(b.sizes()));
  return differentiable_product("bmm", "BmmBackward", a, b);
}

}  // namespace ember

// ---- einsum -----------------------------------------------------------------------------------

namespace ember {
namespace {

// Note [einsum through bmm]
// Each operand first takes the diagonal of repeated labels (index_select) and sums the
// labels no other operand and not the output has. Operands then contract left to right: the
// labels both sides have and that are still needed (by the output or a later operand) are
// batch dims, the other shared ones are contracted, the rest belong to one side; both sides
// are permuted and reshaped to [batch, rows, k] and [batch, k, cols] for one bmm, so the heavy
// work is the matmul kernels' and the gradient is bmm's. Size-1 dims broadcast against any
// size (the ellipsis dims right-aligned across operands), as in PyTorch. Labels are ints:
// 'A'..'Z' 0..25, 'a'..'z' 26..51, the ellipsis dims 52 on.
constexpr int kEllipsisLabel = 52;

/** One operand during the contraction: a tensor and the label of each of its dims. */
struct Labeled {
  Tensor t;
  std::vector<int> labels;
};

int letter_label(char c, std::string_view eq) {
  EMBER_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'),
              "[einsum] invalid character '{}' in equation \"{}\" (labels are letters a-z, A-Z; "
              "'...' is the ellipsis)",
              c, eq);
  return c >= 'a' ? 26 + (c - 'a') : c - 'A';  // ASCII order, as PyTorch sorts them
}

char label_char(int l) {
  return l < 26 ? static_cast<char>('A' + l) : l < 52 ? static_cast<char>('a' + l - 26) : '.';
}

// The labels of one term ("ab...c"); the ellipsis stands for `ell` dims right-aligned among
// `max_ell` (its labels kEllipsisLabel + max_ell - ell ...).
std::vector<int> parse_term(std::string_view term, std::string_view eq, int64_t ell,
                            int64_t max_ell, bool* has_ellipsis) {
  std::vector<int> out;
  *has_ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term[i] == '.') {
      EMBER_CHECK(!*has_ellipsis && term.substr(i, 3) == "...",
                  "[einsum] malformed ellipsis in term \"{}\" of \"{}\" (one '...' per term)", term,
                  eq);
      *has_ellipsis = true;
      for (int64_t e = max_ell - ell; e < max_ell; ++e) {
        out.push_back(kEllipsisLabel + static_cast<int>(e));
      }
      i += 2;
      continue;
    }
    out.push_back(letter_label(term[i], eq));
  }
  return out;
}

int64_t letters_in(std::string_view term) {
  int64_t n = 0;
  for (char c : term) n += c != '.';
  return n;
}

// Takes the diagonal of repeated labels, one pair of dims at a time: the second dim is moved
// next to the first, the two are merged, and index_select keeps the n positions i * (n + 1).
// (A strided view would do it without a copy, but index_select's gradient has a gradient.)
Labeled take_diagonals(const Tensor& t, const std::vector<int>& labels, std::string_view eq) {
  Labeled r{t, labels};
  for (;;) {
    size_t i = 0, j = 0;
    for (size_t a = 0; a < r.labels.size() && j == 0; ++a) {
      for (size_t b = a + 1; b < r.labels.size(); ++b) {
        if (r.labels[a] == r.labels[b]) {
          i = a, j = b;
          break;
        }
      }
    }
    if (j == 0) return r;
    const int64_t n = r.t.size(static_cast<int64_t>(i));
    EMBER_CHECK(r.t.size(static_cast<int64_t>(j)) == n,
                "[einsum] a label repeated in one operand needs equal sizes: {} and {} in \"{}\"",
                n, r.t.size(static_cast<int64_t>(j)), eq);
    std::vector<int64_t> perm;
    Shape merged;
    for (size_t d = 0; d < r.labels.size(); ++d) {
      if (d == j) continue;
      perm.push_back(static_cast<int64_t>(d));
      merged.push_back(r.t.size(static_cast<int64_t>(d)));
      if (d == i) {
        perm.push_back(static_cast<int64_t>(j));
        merged.back() = n * n;
      }
    }
    const Tensor flat = r.t.permute(perm).reshape(merged);
    const Tensor at = mul(arange(n, TensorOptions{DType::Int64, t.device()}), n + 1);
    r.t = index_select(flat, static_cast<int64_t>(i), at);
    r.labels.erase(r.labels.begin() + static_cast<std::ptrdiff_t>(j));
  }
}

// Sums the dims of `x` whose labels `keep` rejects.
void sum_unneeded(Labeled* x, const std::function<bool(int)>& keep) {
  std::vector<int64_t> dims;
  std::vector<int> kept;
  for (size_t i = 0; i < x->labels.size(); ++i) {
    if (keep(x->labels[i])) {
      kept.push_back(x->labels[i]);
    } else {
      dims.push_back(static_cast<int64_t>(i));
    }
  }
  if (dims.empty()) return;
  x->t = sum(x->t, dims);
  x->labels = kept;
}

int64_t label_size(const Labeled& x, int label) {
  for (size_t i = 0; i < x.labels.size(); ++i) {
    if (x.labels[i] == label) return x.t.size(static_cast<int64_t>(i));
  }
  return 1;
}

// x permuted to the label order `order` (each of x's labels once; missing ones as size-1
// dims), expanded to `sizes`, and reshaped to the products of the groups in `groups`.
Tensor arrange(const Labeled& x, const std::vector<int>& order, const std::vector<int64_t>& sizes,
               const std::vector<int64_t>& groups) {
  std::vector<int64_t> perm;
  Tensor t = x.t;
  std::vector<int> labels = x.labels;
  for (int l : order) {
    if (std::find(labels.begin(), labels.end(), l) == labels.end()) {
      t = t.unsqueeze(t.dim());
      labels.push_back(l);
    }
  }
  for (int l : order) {
    perm.push_back(std::find(labels.begin(), labels.end(), l) - labels.begin());
  }
  return t.permute(perm).expand(sizes).reshape(groups);
}

// Contracts a and b, keeping the labels `needed` accepts.
Labeled contract(const Labeled& a, const Labeled& b, const std::function<bool(int)>& needed,
                 std::string_view eq) {
  std::vector<int> batch, left, right, inner;
  const auto in = [](const Labeled& x, int l) {
    return std::find(x.labels.begin(), x.labels.end(), l) != x.labels.end();
  };
  for (int l : a.labels) {
    if (in(b, l)) {
      (needed(l) ? batch : inner).push_back(l);
    } else {
      left.push_back(l);
    }
  }
  for (int l : b.labels) {
    if (!in(a, l)) right.push_back(l);
  }
  const auto size_of = [&](int l) {
    const int64_t sa = label_size(a, l), sb = label_size(b, l);
    EMBER_CHECK(sa == sb || sa == 1 || sb == 1,
                "[einsum] a label has sizes {} and {} in two operands of \"{}\" (they must "
                "match or be 1)",
                sa, sb, eq);
    return std::max(sa, sb);
  };
  int64_t nb = 1, nl = 1, nr = 1, nk = 1;
  std::vector<int64_t> bs, ls, rs, ks;
  for (int l : batch) bs.push_back(size_of(l)), nb *= bs.back();
  for (int l : left) ls.push_back(size_of(l)), nl *= ls.back();
  for (int l : right) rs.push_back(size_of(l)), nr *= rs.back();
  for (int l : inner) ks.push_back(size_of(l)), nk *= ks.back();
  const auto join = [](std::vector<int64_t> x, const std::vector<int64_t>& y,
                       const std::vector<int64_t>& z) {
    x.insert(x.end(), y.begin(), y.end());
    x.insert(x.end(), z.begin(), z.end());
    return x;
  };
  const auto join_labels = [](std::vector<int> x, const std::vector<int>& y,
                              const std::vector<int>& z) {
    x.insert(x.end(), y.begin(), y.end());
    x.insert(x.end(), z.begin(), z.end());
    return x;
  };
  const Tensor lhs = arrange(a, join_labels(batch, left, inner), join(bs, ls, ks), {nb, nl, nk});
  const Tensor rhs = arrange(b, join_labels(batch, inner, right), join(bs, ks, rs), {nb, nk, nr});
  Labeled r;
  r.t = bmm(lhs, rhs).reshape(join(bs, ls, rs));
  r.labels = join_labels(batch, left, right);
  return r;
}

}  // namespace

Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands) {
  std::string eq;
  for (char c : equation) {
    if (c != ' ') eq.push_back(c);
  }
  EMBER_CHECK(!operands.empty(), "[einsum] needs at least one operand: equation \"{}\"", eq);
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string_view> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(std::string_view(lhs).substr(
        start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  EMBER_CHECK(terms.size() == operands.size(),
              "[einsum] equation \"{}\" has {} operand terms but {} tensors were given", eq,
              terms.size(), operands.size());
  int64_t max_ell = 0;
  std::vector<int64_t> ells(terms.size(), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    EMBER_CHECK_TYPE(operands[i].defined(), "[einsum] operand {} is undefined", i);
    for (char c : terms[i]) {
      if (c != '.') letter_label(c, eq);  // every character is a label or the ellipsis
    }
    const int64_t letters = letters_in(terms[i]);
    const bool has_ell = terms[i].find('.') != std::string_view::npos;
    EMBER_CHECK(has_ell ? operands[i].dim() >= letters : operands[i].dim() == letters,
                "[einsum] term \"{}\" names {} dims but operand {} has shape {}", terms[i], letters,
                i, shape_str(operands[i].sizes()));
    if (has_ell) ells[i] = operands[i].dim() - letters;
    max_ell = std::max(max_ell, ells[i]);
  }
  std::vector<Labeled> xs;
  std::vector<int> count(static_cast<size_t>(kEllipsisLabel + max_ell), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    bool has_ell = false;
    const std::vector<int> labels = parse_term(terms[i], eq, ells[i], max_ell, &has_ell);
    xs.push_back(take_diagonals(operands[i], labels, eq));
    for (int l : labels) ++count[static_cast<size_t>(l)];  // "ii" counts i twice
  }
  // The output: given after "->", or the ellipsis then the labels used once, alphabetically.
  std::vector<int> out;
  if (arrow != std::string::npos) {
    // An output without the ellipsis sums the dims it covers, as every unlisted label.
    bool has_ell = false;
    out = parse_term(std::string_view(eq).substr(arrow + 2), eq, max_ell, max_ell, &has_ell);
    for (size_t i = 0; i < out.size(); ++i) {
      EMBER_CHECK(out[i] >= kEllipsisLabel || count[static_cast<size_t>(out[i])] > 0,
                  "[einsum] output label '{}' of \"{}\" is in no operand", label_char(out[i]), eq);
      EMBER_CHECK(std::count(out.begin(), out.end(), out[i]) == 1,
                  "[einsum] output label '{}' of \"{}\" appears twice", label_char(out[i]), eq);
    }
  } else {
    for (int64_t e = 0; e < max_ell; ++e) out.push_back(kEllipsisLabel + static_cast<int>(e));
    // Upper case sorts before lower case in PyTorch's implicit output, as their labels do here.
    for (int l = 0; l < kEllipsisLabel; ++l) {
      if (count[static_cast<size_t>(l)] == 1) out.push_back(l);
    }
  }
  const auto in_output = [&](int l) { return std::find(out.begin(), out.end(), l) != out.end(); };
  // Labels still needed after operand i: in the output or in a later operand.
  const auto needed_after = [&](size_t i) {
    return [&, i](int l) {
      if (in_output(l)) return true;
      for (size_t j = i + 1; j < xs.size(); ++j) {
        if (std::find(xs[j].labels.begin(), xs[j].labels.end(), l) != xs[j].labels.end()) {
          return true;
        }
      }
      return false;
    };
  };
  Labeled acc = xs[0];
  sum_unneeded(&acc, needed_after(0));
  for (size_t i = 1; i < xs.size(); ++i) {
    Labeled next = xs[i];
    // A label only this operand has, and nobody needs, is summed before the product.
    sum_unneeded(&next, [&](int l) {
      return needed_after(i)(l) ||
             std::find(acc.labels.begin(), acc.labels.end(), l) != acc.labels.end();
    });
    acc = contract(acc, next, needed_after(i), eq);
  }
  sum_unneeded(&acc, in_output);
  // Output labels no operand contributed (an ellipsis dim all operands lack) are size 1.
  std::vector<int64_t> sizes;
  for (int l : out) sizes.push_back(label_size(acc, l));
  return arrange(acc, out, sizes, sizes);
}

// ---- the add*-products ------------------------------------------------------------------------

// Note [beta and alpha of the add*-products]
// addmm, baddbmm, addbmm, addmv and addr are beta * input + alpha * product with BLAS's meaning
// of a zero scale, which PyTorch keeps: beta == 0 means input is not read, so NaN or inf in it
// never reaches the result (0 * NaN would be NaN), and alpha == 0 drops the product likewise. A
// dropped term still takes part in the shape checks and gets a zero gradient, through a where()
// that never picks it. input must broadcast to the product's shape (not the other way round),
// and all three tensors must have one dtype, as PyTorch requires.
namespace {

Tensor scaled_term(const Tensor& x, const Scalar& s) {
  if (s.to_double() == 1.0) return x;
  if (s.to_double() == 0.0) {
    return where(zeros(Shape{}, TensorOptions(DType::Bool, x.device())), x, Scalar(0));
  }
  return mul(x, s);
}

void check_add_product(const char* op, const Tensor& input, const Tensor& a, const Tensor& b) {
  EMBER_CHECK_TYPE(input.defined() && a.defined() && b.defined(), "[{}] undefined tensor argument",
                   op);
  EMBER_CHECK_TYPE(input.dtype() == a.dtype() && a.dtype() == b.dtype(),
                   "[{}] expects input and both operands to have the same dtype, got {}, {} and {}",
                   op, input.dtype(), a.dtype(), b.dtype());
}

Tensor add_product(const char* op, const Tensor& input, const Tensor& product, const Scalar& beta,
                   const Scalar& alpha) {
  const Shape& out = product.sizes();
  bool fits = input.dim() <= static_cast<int64_t>(out.size());
  for (int64_t i = 1; fits && i <= input.dim(); ++i) {
    const int64_t s = input.size(input.dim() - i);
    fits = s == 1 || s == out[out.size() - i];
  }
  EMBER_CHECK(fits, "[{}] input of shape {} cannot be broadcast to the product's shape {}", op,
              shape_str(input.sizes()), shape_str(out));
  return add(scaled_term(input, beta), scaled_term(product, alpha));
}

void check_batches(const char* op, const Tensor& b1, const Tensor& b2) {
  EMBER_CHECK(b1.dim() == 3 && b2.dim() == 3,
              "[{}] expects 3-d batch1 and batch2, got shapes {} and {}", op, shape_str(b1.sizes()),
              shape_str(b2.sizes()));
  EMBER_CHECK(b1.size(0) == b2.size(0) && b1.size(2) == b2.size(1),
              "[{}] batch1 of shape {} and batch2 of shape {} cannot be multiplied: batch2 must "
              "be [{}, {}, m]",
              op, shape_str(b1.sizes()), shape_str(b2.sizes()), b1.size(0), b1.size(2));
}

}  // namespace

Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, Scalar beta,
             Scalar alpha) {
  check_add_product("addmm", input, mat1, mat2);
  EMBER_CHECK(mat1.dim() == 2 && mat2.dim() == 2 && mat1.size(1) == mat2.size(0),
              "[addmm] mat1 and mat2 must be matrices that can be multiplied, got shapes {} and {}",
              shape_str(mat1.sizes()), shape_str(mat2.sizes()));
  return add_product("addmm", input, mm(mat1, mat2), beta, alpha);
}

Tensor baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, Scalar beta,
               Scalar alpha) {
  check_add_product("baddbmm", input, batch1, batch2);
  check_batches("baddbmm", batch1, batch2);
  return add_product("baddbmm", input, bmm(batch1, batch2), beta, alpha);
}

Tensor addbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, Scalar beta,
              Scalar alpha) {
  check_add_product("addbmm", input, batch1, batch2);
  check_batches("addbmm", batch1, batch2);
  return add_product("addbmm", input, sum(bmm(batch1, batch2), {0}), beta, alpha);
}

Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta, Scalar alpha) {
  check_add_product("addmv", input, mat, vec);
  EMBER_CHECK(mat.dim() == 2 && vec.dim() == 1 && mat.size(1) == vec.size(0),
              "[addmv] expects a matrix and a vector it can multiply, got shapes {} and {}",
              shape_str(mat.sizes()), shape_str(vec.sizes()));
  return add_product("addmv", input, matmul(mat, vec), beta, alpha);
}

Tensor addr(const Tensor& input, const Tensor& vec1, const Tensor& vec2, Scalar beta,
            Scalar alpha) {
  check_add_product("addr", input, vec1, vec2);
  EMBER_CHECK(vec1.dim() == 1 && vec2.dim() == 1,
              "[addr] expects 1-d vec1 and vec2, got shapes {} and {}", shape_str(vec1.sizes()),
              shape_str(vec2.sizes()));
  return add_product("addr", input, mul(vec1.unsqueeze(1), vec2.unsqueeze(0)), beta, alpha);
}

Tensor& addmm_(Tensor& input, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  return apply_inplace(input, "addmm_",
                       [&](const Tensor& v) { return addmm(v, a, b, beta, alpha); });
}

Tensor& baddbmm_(Tensor& input, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  return apply_inplace(input, "baddbmm_",
                       [&](const Tensor& v) { return baddbmm(v, a, b, beta, alpha); });
}

Tensor& addbmm_(Tensor& input, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  return apply_inplace(input, "addbmm_",
                       [&](const Tensor& v) { return addbmm(v, a, b, beta, alpha); });
}

Tensor& addmv_(Tensor& input, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  return apply_inplace(input, "addmv_",
                       [&](const Tensor& v) { return addmv(v, a, b, beta, alpha); });
}

Tensor& addr_(Tensor& input, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  return apply_inplace(input, "addr_", [&](const Tensor& v) { return addr(v, a, b, beta, alpha); });
}

// cdist: norm() of the broadcast differences over the last dim. Computing every difference is
// exact where PyTorch's matmul form for p = 2 (|a|^2 + |b|^2 - 2ab) loses digits to
// cancellation; the gradient is norm's (0 where a distance is 0).
Tensor cdist(const Tensor& x1, const Tensor& x2, double p) {
  EMBER_CHECK_TYPE(x1.defined() && x2.defined(), "[cdist] undefined tensor argument");
  EMBER_CHECK(x1.dim() >= 2 && x2.dim() >= 2,
              "[cdist] only supports at least 2-d tensors: got shapes {} and {}",
              shape_str(x1.sizes()), shape_str(x2.sizes()));
  EMBER_CHECK(x1.size(-1) == x2.size(-1),
              "[cdist] x1 and x2 must have the same number of columns: got {} and {}", x1.size(-1),
              x2.size(-1));
  EMBER_CHECK_TYPE(is_floating(x1.dtype()) && x1.dtype() == x2.dtype(),
                   "[cdist] expects floating inputs of one dtype: got {} and {}", x1.dtype(),
                   x2.dtype());
  EMBER_CHECK(p >= 0, "[cdist] only supports non-negative p values: got {}", p);
  const Tensor diff = sub(x1.unsqueeze(-2), x2.unsqueeze(-3));
  if (x1.size(-1) == 0) return sum(diff, {-1});  // no columns: every distance is 0
  return norm(diff, p, {-1});
}

Tensor dot(const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.dim() == 1 && b.dim() == 1, "[dot] 1-d tensors expected, got {}-d and {}-d",
              a.dim(), b.dim());
  return matmul(a, b);
}

Tensor vdot(const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.dim() == 1 && b.dim() == 1, "[vdot] 1-d tensors expected, got {}-d and {}-d",
              a.dim(), b.dim());
  return matmul(a, b);
}

Tensor adjoint(const Tensor& a) {
  EMBER_CHECK_TYPE(a.defined(), "[adjoint] undefined tensor argument");
  EMBER_CHECK(a.dim() >= 2,
              "[adjoint] expects a matrix or a batch of matrices: got shape {} (use .t() or "
              ".mT for other dims)",
              shape_str(a.sizes()));
  return a.transpose(-2, -1);
}

// As PyTorch computes it: one norm per slice along dim (over every other dim), and a factor of
// maxnorm / (norm + 1e-7) where the norm exceeds maxnorm; the gradient goes through both.
// As PyTorch builds it: ones, then the running products of x (so integer x stays exact), in the
// promotion of x's dtype with int64, flipped unless increasing.
Tensor vander(const Tensor& x, std::optional<int64_t> n, bool increasing) {
  EMBER_CHECK_TYPE(x.defined(), "[vander] undefined tensor argument");
  EMBER_CHECK(x.dim() == 1, "[vander] x must be a one-dimensional tensor: got shape {}",
              shape_str(x.sizes()));
  const int64_t cols = n.value_or(x.size(0));
  EMBER_CHECK(cols >= 0, "[vander] N must be non-negative: got {}", cols);
  const Tensor v = x.to(promote_types(x.dtype(), DType::Int64));
  const int64_t m = x.size(0);
  Tensor out = ones({m, std::min<int64_t>(cols, 1)}, {v.dtype(), v.device()});
  if (cols > 1) out = cat({out, cumprod(v.unsqueeze(1).expand({m, cols - 1}), 1)}, 1);
  return increasing ? out : flip(out, {1});
}

Tensor renorm(const Tensor& x, double p, int64_t dim, double maxnorm) {
  EMBER_CHECK_TYPE(x.defined(), "[renorm] undefined tensor argument");
  EMBER_CHECK_TYPE(is_floating(x.dtype()), "[renorm] needs a floating tensor: got {}", x.dtype());
  EMBER_CHECK(x.dim() >= 2, "[renorm] needs at least 2 dims: got shape {}", shape_str(x.sizes()));
  EMBER_CHECK(p > 0, "[renorm] the norm's order p must be positive: got {}", p);
  EMBER_CHECK(maxnorm >= 0, "[renorm] maxnorm must be non-negative: got {}", maxnorm);
  const int64_t d = wrap_dim(dim, x.dim(), "renorm");
  std::vector<int64_t> others;
  for (int64_t i = 0; i < x.dim(); ++i) {
    if (i != d) others.push_back(i);
  }
  const Tensor norm = linalg::vector_norm(x, p, others, /*keepdim=*/true);
  const Tensor scaled =
      div(detail::scalar_tensor(maxnorm, norm.dtype(), norm.device()), add(norm, 1e-7));
  const Tensor factor = where(gt(norm, maxnorm), scaled, 1.0);
  return mul(x, factor);
}

Tensor outer(const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.dim() == 1 && b.dim() == 1, "[outer] 1-d tensors expected, got {}-d and {}-d",
              a.dim(), b.dim());
  return mul(a.unsqueeze(1), b.unsqueeze(0));
}

Tensor mv(const Tensor& mat, const Tensor& vec) {
  EMBER_CHECK(mat.dim() == 2 && vec.dim() == 1,
              "[mv] a 2-d matrix and a 1-d vector expected, got {}-d and {}-d", mat.dim(),
              vec.dim());
  return matmul(mat, vec);
}

Tensor trace(const Tensor& x) {
  EMBER_CHECK(x.dim() == 2, "[trace] expected a 2-d tensor, got {}-d", x.dim());
  return sum(diagonal(x, 0, 0, 1));
}

}  // namespace ember
