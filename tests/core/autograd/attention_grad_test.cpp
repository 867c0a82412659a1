// Gradients of scaled_dot_product_attention: gradcheck cases (first order through the fused
// backward kernels, second order through the differentiable formula) for L != S, Ev != E,
// batch broadcasting, causal masks with L > S and L < S, bool and float masks broadcast over
// heads, a float mask that itself requires grad (the composite path), an explicit scale and a
// fully masked row. Also checks the fused backward against the composite one.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "tests/core/autograd/gradcheck_cases.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

using V = std::vector<Tensor>;

/** A bool mask [rows, cols] (as a tensor on `like`'s device) keeping (i, j) where (i + 2 j) % 3
 *  != 0, and always key 1 so that no row is empty. */
Tensor keep_mask(const Tensor& like, int64_t rows, int64_t cols) {
  std::vector<double> m;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) m.push_back(j == 1 || (i + 2 * j) % 3 != 0 ? 1.0 : 0.0);
  }
  return on(like, make(m, {rows, cols}, DType::Bool));
}

EMBER_GRADCHECK_CASE({"scaled_dot_product_attention", "L != S, Ev != E",
                      [](const V& in) { return scaled_dot_product_attention(in[0], in[1], in[2]); },
                      [] {
                        return V{input({2, 3, 4}, 1), input({2, 5, 4}, 2), input({2, 5, 3}, 3)};
                      }});
EMBER_GRADCHECK_CASE(
    {"scaled_dot_product_attention", "batch broadcasting, scale 0.7",
     [](const V& in) {
       return scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, false, 0.7);
     },
     [] {
       return V{input({2, 2, 3, 4}, 4), input({1, 2, 4, 4}, 5), input({2, 4, 2}, 6)};
     }});
EMBER_GRADCHECK_CASE(
    {"scaled_dot_product_attention", "causal, L > S",
     [](const V& in) { return scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true); },
     [] {
       return V{input({1, 2, 5, 3}, 7), input({1, 2, 3, 3}, 8), input({1, 2, 3, 2}, 9)};
     }});
EMBER_GRADCHECK_CASE({"scaled_dot_product_attention", "causal, L < S",
                      [](const V& in) {
                        return scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true);
                      },
                      [] {
                        return V{input({2, 3, 4}, 10), input({2, 6, 4}, 11), input({2, 6, 4}, 12)};
                      }});
EMBER_GRADCHECK_CASE(
    {"scaled_dot_product_attention", "bool mask broadcast over heads",
     [](const V& in) {
       return scaled_dot_product_attention(in[0], in[1], in[2], keep_mask(in[0], 4, 5));
     },
     [] {
       return V{input({2, 2, 4, 3}, 13), input({2, 2, 5, 3}, 14), input({2, 2, 5, 2}, 15)};
     }});
EMBER_GRADCHECK_CASE(
    {"scaled_dot_product_attention", "float mask, constant",
     [](const V& in) {
       Generator gen(16);
       const Tensor mask = on(in[0], rand({2, 1, 3, 4}, DType::Float64, &gen));
       return scaled_dot_product_attention(in[0], in[1], in[2], mask);
     },
     [] {
       return V{input({2, 2, 3, 3}, 17), input({2, 2, 4, 3}, 18), input({2, 2, 4, 3}, 19)};
     }});
EMBER_GRADCHECK_CASE({"scaled_dot_product_attention", "float mask requiring grad",
                      [](const V& in) {
                        return scaled_dot_product_attention(in[0], in[1], in[2], in[3]);
                      },
                      [] {
                        return V{input({2, 3, 2}, 20), input({2, 4, 2}, 21), input({2, 4, 3}, 22),
                                 input({3, 4}, 23)};
                      }});
EMBER_GRADCHECK_CASE({"scaled_dot_product_attention", "a fully masked row gives zeros",
                      [](const V& in) {
                        std::vector<double> m(12, 1.0);
                        for (int j = 0; j < 4; ++j) m[static_cast<size_t>(4 + j)] = 0.0;
                        const Tensor mask = on(in[0], make(m, {3, 4}, DType::Bool));
                        return scaled_dot_product_attention(in[0], in[1], in[2], mask);
                      },
                      [] {
                        return V{input({3, 2}, 24), input({4, 2}, 25), input({4, 2}, 26)};
                      }});

/** out.backward(g) and the three gradients of q, k, v. */
V grads_of(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
           const Tensor& g) {
  Tensor qq = q.detach().requires_grad_(true), kk = k.detach().requires_grad_(true),
         vv = v.detach().requires_grad_(true);
  Tensor out = scaled_dot_product_attention(qq, kk, vv, mask, 0.0, causal);
  out.backward(g);
  return {qq.grad(), kk.grad(), vv.grad()};
}

void expect_close(const Tensor& a, const Tensor& b, double tol) {
  const std::vector<double> x = values(a), y = values(b);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_NEAR(x[i], y[i], tol * (1.0 + std::abs(y[i]))) << "element " << i;
  }
}

TEST(AttentionGrad, FusedBackwardMatchesTheFormulaAcrossBlocks) {
  // 70 queries and 130 keys cross the CPU kernel's 64-row blocks; float32 against the float64
  // composite (a float mask requiring grad takes it), with and without a causal mask.
  Generator gen(31);
  const Tensor q = rand({2, 70, 16}, DType::Float64, &gen),
               k = rand({2, 130, 16}, DType::Float64, &gen),
               v = rand({2, 130, 24}, DType::Float64, &gen),
               g = rand({2, 70, 24}, DType::Float64, &gen);
  // Note [Two backward schedules] in backends/cpu/ops/attention.cpp: one batch row on two
  // threads takes the two-pass schedule, two rows (or one thread) the one-sweep schedule.
  const int threads_before = get_num_threads();
  for (const auto& [threads, rows, causal] : std::vector<std::tuple<int, int64_t, bool>>{
           {2, 2, false}, {2, 2, true}, {2, 1, false}, {2, 1, true}, {1, 2, true}}) {
    SCOPED_TRACE(::testing::Message()
                 << threads << " threads, " << rows << " rows, causal " << causal);
    set_num_threads(threads);
    const auto f32 = [&](const Tensor& t) { return t.narrow(0, 0, rows).to(DType::Float32); };
    const V fused = grads_of(f32(q), f32(k), f32(v), {}, causal, f32(g));
    set_num_threads(threads_before);
    Tensor mask = zeros({70, 130}, DType::Float64);
    if (causal) {
      std::vector<double> m;
      for (int64_t i = 0; i < 70; ++i) {
        for (int64_t j = 0; j < 130; ++j) m.push_back(j > i ? -INFINITY : 0.0);
      }
      mask = make(m, {70, 130}, DType::Float64);
    }
    mask.requires_grad_(true);
    const auto f64 = [&](const Tensor& t) { return t.narrow(0, 0, rows); };
    const V composite = grads_of(f64(q), f64(k), f64(v), mask, false, f64(g));
    for (int i = 0; i < 3; ++i)
      expect_close(fused[static_cast<size_t>(i)], composite[static_cast<size_t>(i)], 2e-4);
  }
}

}  // namespace
}  // namespace ember::testing
