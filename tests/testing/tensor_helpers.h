// Test helpers shared by the suites: read tensors without the kernels under test, build them
// likewise, and assert on ember::Error messages.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include <ember/ember.h>

namespace ember::testing {

/** Every element of `t` (any layout, any dtype) as double in row-major order, read by walking
 *  the strides directly so a check never depends on the copy kernel it may be testing. */
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numel()));
  if (t.numel() == 0) return out;
  const int64_t nd = t.dim(), numel = t.numel();
  const std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  const std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* base = static_cast<const T*>(t.data_ptr());
    int64_t off = 0;
    for (int64_t n = 0; n < numel; ++n) {
      out.push_back(static_cast<double>(static_cast<sdk::Compute<T>>(base[off])));
      for (int64_t d = nd - 1; d >= 0; --d) {
        off += strides[d];
        if (++idx[d] < sizes[d]) break;
        off -= idx[d] * strides[d];
        idx[d] = 0;
      }
    }
  });
  return out;
}

/** Expects `got` to hold `want` (row-major), each element within tol * (1 + |want|), naming `what`
 *  and the first index that is off. */
inline void expect_close(const Tensor& got, const std::vector<double>& want, double tol,
                         const std::string& what) {
  const std::vector<double> v = values(got);
  ASSERT_EQ(v.size(), want.size()) << what;
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_NEAR(v[i], want[i], tol * (1.0 + std::abs(want[i]))) << what << " at " << i;
  }
}

/** A contiguous tensor of `dtype` holding `vals`, converted by the test, not the library. */
inline Tensor make(const std::vector<double>& vals, IntList sizes, DType dtype) {
  Tensor t = empty(sizes, dtype);
  EXPECT_EQ(static_cast<size_t>(t.numel()), vals.size());
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t.data_ptr());
    for (size_t i = 0; i < vals.size(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = vals[i] != 0;
      } else {
        p[i] = static_cast<T>(static_cast<sdk::Compute<T>>(vals[i]));
      }
    }
  });
  return t;
}

/** Changes weight `w` in each way a training loop may between two calls of a layer, calling
 *  check(what) first and after each change: added to in place, scaled through a view of some
 *  rows, overwritten with copy_ from `fresh` (a tensor of w's shape); the tests of kernels that
 *  keep a weight in their own layout (Note [Reordered weight cache]). */
template <typename Check>
void change_weight_every_way(Tensor& w, const Tensor& fresh, Check&& check) {
  check("first calls");
  check("same weight again");
  add_(w, 0.5);
  check("after add_");
  Tensor rows = w.narrow(0, 2, 5);
  mul_(rows, -2.0);
  check("after mul_ of a view");
  w.copy_(fresh);
  check("after copy_");
}

/** True if `s` contains `part` (for EXPECT_PRED2, which then prints both). */
inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/** The message of the ember::Error (or the narrower kind E) `fn` throws, or "" if it throws
 *  none. */
template <typename E = Error, typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

/** Runs `fn` and expects an ember::Error whose message contains every one of `parts`. */
template <typename Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected ember::Error containing " << *parts.begin();
  } catch (const Error& e) {
    for (const std::string& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message: " << e.what() << "\nmissing: " << p;
    }
  }
}

}  // namespace ember::testing
