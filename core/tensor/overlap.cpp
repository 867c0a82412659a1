#include "ember/tensor/overlap.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "ember/util/small_vec.h"

namespace ember {
namespace {

// Note [Deciding overlap]
// An element of a tensor lies at data + itemsize * sum_k i_k * stride_k (0 <= i_k < size_k).
// Two elements of one tensor share a location when sum_k d_k * stride_k = 0 for some nonzero d
// with |d_k| < size_k; an element of a and one of b do when sum_k i_k a_k - sum_k j_k b_k equals
// the distance between their data pointers in items. Both are bounded integer equations
// sum_k c_k x_k = target, lo_k <= x_k <= hi_k, decided here in three steps, cheapest first:
//   1. the common layouts need no search: a contiguous tensor is one-to-one; a stride 0 over a
//      size > 1 (expand) or two dims of one stride are not; sorted by stride, dims whose strides
//      each exceed the reach of all smaller ones (every view made by slicing, transposing,
//      permuting or narrowing) are one-to-one; byte ranges that do not meet share nothing;
//   2. otherwise a depth-first search over the terms, largest coefficient first, where each
//      level only tries the x_k that leave the target within the reach of the smaller terms and
//      divisible by their gcd (columns of one matrix: a stride of 3 never reaches an odd
//      distance of 1);
//   3. the search stops after kBudget candidates and answers TooHard. The equations are NP-hard
//      in general (subset sum), but views made by Ember's ops decide in a few steps; only
//      as_strided layouts built to be awkward reach the budget.
// The dispatcher allows a TooHard output (as PyTorch does) and reads a TooHard input from a copy
// (Note [Overlapping operands] in core/dispatch/call.cpp).
constexpr int kBudget = 4096;

struct Term {
  int64_t c;       // coefficient, > 0
  int64_t lo, hi;  // range of its unknown
};

using Terms = SmallVec<Term, 8>;
using i128 = __int128;

i128 floor_div(i128 a, i128 b) {  // b > 0
  const i128 q = a / b;
  return q - ((a % b != 0) && (a < 0));
}
i128 ceil_div(i128 a, i128 b) {
  return -floor_div(-a, b);
}

class Search {
 public:
  // `terms` sorted by decreasing coefficient.
  Search(const Terms& terms, bool need_nonzero) : t_(terms), need_nonzero_(need_nonzero) {
    const size_t n = t_.size();
    rlo_.resize(n + 1, 0);
    rhi_.resize(n + 1, 0);
    g_.resize(n + 1, 0);
    for (size_t k = n; k-- > 0;) {
      rlo_[k] = rlo_[k + 1] + static_cast<i128>(t_[k].c) * t_[k].lo;
      rhi_[k] = rhi_[k + 1] + static_cast<i128>(t_[k].c) * t_[k].hi;
      g_[k] = std::gcd(g_[k + 1], t_[k].c);
    }
  }

  // 1: a solution exists, 0: none does, -1: the budget ran out.
  int run(i128 target) { return dfs(0, target, false); }

 private:
  int dfs(size_t k, i128 target, bool nonzero) {
    if (k == t_.size()) return target == 0 && (nonzero || !need_nonzero_) ? 1 : 0;
    if (target < rlo_[k] || target > rhi_[k] || target % g_[k] != 0) return 0;
    const Term& t = t_[k];
    const i128 lo = std::max<i128>(t.lo, ceil_div(target - rhi_[k + 1], t.c));
    const i128 hi = std::min<i128>(t.hi, floor_div(target - rlo_[k + 1], t.c));
    for (i128 x = lo; x <= hi; ++x) {
      if (--budget_ < 0) return -1;
      const int r = dfs(k + 1, target - x * t.c, nonzero || x != 0);
      if (r != 0) return r;
    }
    return 0;
  }

  const Terms& t_;
  bool need_nonzero_;
  SmallVec<i128, 9> rlo_, rhi_;
  SmallVec<int64_t, 9> g_;
  int budget_ = kBudget;
};

void sort_decreasing(Terms& terms) {
  std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) { return a.c > b.c; });
}

// Adds the unknowns of t's dims to `terms`, negated for the second tensor of a pair; merges
// terms of one coefficient (their unknowns' sum takes every value between its bounds).
void add_terms(const TensorImpl& t, bool negate, Terms& terms) {
  for (size_t d = 0; d < t.sizes().size(); ++d) {
    const int64_t n = t.sizes()[d], s = t.strides()[d];
    if (n <= 1 || s == 0) continue;
    int64_t lo = 0, hi = n - 1;
    if ((s < 0) != negate) {
      lo = -(n - 1);
      hi = 0;
    }
    const int64_t c = s < 0 ? -s : s;
    auto same = std::find_if(terms.begin(), terms.end(), [c](const Term& e) { return e.c == c; });
    if (same != terms.end()) {
      same->lo += lo;
      same->hi += hi;
    } else {
      terms.push_back({c, lo, hi});
    }
  }
}

// [first, last) byte addresses of t's elements.
struct ByteRange {
  i128 lo, hi;
};
ByteRange byte_range(const TensorImpl& t) {
  const i128 w = static_cast<i128>(itemsize(t.dtype()));
  i128 lo = reinterpret_cast<uintptr_t>(t.data()), hi = lo + w;
  for (size_t d = 0; d < t.sizes().size(); ++d) {
    const i128 reach = static_cast<i128>(t.sizes()[d] - 1) * t.strides()[d] * w;
    (reach < 0 ? lo : hi) += reach;
  }
  return {lo, hi};
}

InternalOverlap internal_overlap_impl(const TensorImpl& t) {
  if (t.numel() <= 1 || t.is_contiguous()) return InternalOverlap::No;
  Terms terms;
  for (size_t d = 0; d < t.sizes().size(); ++d) {
    const int64_t n = t.sizes()[d], s = t.strides()[d];
    if (n <= 1) continue;
    if (s == 0) return InternalOverlap::Yes;
    terms.push_back({s < 0 ? -s : s, -(n - 1), n - 1});
  }
  sort_decreasing(terms);
  for (size_t k = 1; k < terms.size(); ++k) {
    if (terms[k].c == terms[k - 1].c) return InternalOverlap::Yes;
  }
  // Nested strides: each exceeds the furthest the smaller ones reach.
  bool nested = true;
  i128 reach = 0;
  for (size_t k = terms.size(); k-- > 0;) {
    if (terms[k].c <= reach) {
      nested = false;
      break;
    }
    reach += static_cast<i128>(terms[k].c) * terms[k].hi;
  }
  if (nested) return InternalOverlap::No;
  switch (Search(terms, /*need_nonzero=*/true).run(0)) {
    case 1:
      return InternalOverlap::Yes;
    case 0:
      return InternalOverlap::No;
    default:
      return InternalOverlap::TooHard;
  }
}

// One-to-one and without holes between its first and last byte.
bool dense(const TensorImpl& t, const ByteRange& r) {
  return r.hi - r.lo == static_cast<i128>(t.numel()) * static_cast<i128>(itemsize(t.dtype())) &&
         internal_overlap_impl(t) == InternalOverlap::No;
}

bool same_geometry(const TensorImpl& a, const TensorImpl& b) {
  if (a.data() != b.data() || itemsize(a.dtype()) != itemsize(b.dtype()) ||
      !(a.sizes() == b.sizes())) {
    return false;
  }
  for (size_t d = 0; d < a.sizes().size(); ++d) {
    if (a.sizes()[d] > 1 && a.strides()[d] != b.strides()[d]) return false;
  }
  return true;
}

}  // namespace

InternalOverlap internal_overlap(const Tensor& t) {
  return t.defined() ? internal_overlap_impl(*t.impl()) : InternalOverlap::No;
}

MemOverlap mem_overlap(const Tensor& a_t, const Tensor& b_t) {
  if (!a_t.defined() || !b_t.defined() || a_t.numel() == 0 || b_t.numel() == 0) {
    return MemOverlap::None;
  }
  const TensorImpl& a = *a_t.impl();
  const TensorImpl& b = *b_t.impl();
  const StorageImpl* sa = a.storage().get();
  const StorageImpl* sb = b.storage().get();
  if (sa != sb) {
    // Two storages may still wrap one block (from_blob, DLPack, NumPy arrays).
    if (!sa || !sb) return MemOverlap::None;
    const auto a0 = reinterpret_cast<uintptr_t>(sa->data());
    const auto b0 = reinterpret_cast<uintptr_t>(sb->data());
    if (!(a0 < b0 + sb->bytes() && b0 < a0 + sa->bytes())) return MemOverlap::None;
  }
  if (same_geometry(a, b)) return MemOverlap::Full;
  const ByteRange ra = byte_range(a), rb = byte_range(b);
  if (ra.hi <= rb.lo || rb.hi <= ra.lo) return MemOverlap::None;
  const auto w = static_cast<i128>(itemsize(a.dtype()));
  if (w == static_cast<i128>(itemsize(b.dtype())) && ra.lo == rb.lo && ra.hi == rb.hi &&
      dense(a, ra) && dense(b, rb)) {
    return MemOverlap::Permuted;
  }
  const i128 distance = static_cast<i128>(reinterpret_cast<uintptr_t>(b.data())) -
                        static_cast<i128>(reinterpret_cast<uintptr_t>(a.data()));
  // Elements of different widths, or not aligned to each other: only bytes could tell.
  if (w != static_cast<i128>(itemsize(b.dtype())) || distance % w != 0) return MemOverlap::TooHard;
  Terms terms;
  add_terms(a, /*negate=*/false, terms);
  add_terms(b, /*negate=*/true, terms);
  sort_decreasing(terms);
  switch (Search(terms, /*need_nonzero=*/false).run(distance / w)) {
    case 1:
      return MemOverlap::Partial;
    case 0:
      return MemOverlap::None;
    default:
      return MemOverlap::TooHard;
  }
}

}  // namespace ember
