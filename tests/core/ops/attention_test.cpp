// scaled_dot_product_attention: values against float64 loops written here (sizes crossing the
// CPU kernel's blocks, both mask kinds, causal with L < S and L > S), against PyTorch's values
// and gradients (tests/fixtures/attention/sdpa.safetensors, made by make_fixtures.py there),
// fully masked rows, the half types, dropout, the bad-input errors and the CPU kernel's memory,
// which must not grow as L x S.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember::testing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/** Attention over [B, L, E] rows in plain double loops, the mask additive [B, L, S] or empty. */
std::vector<double> naive(const std::vector<double>& q, const std::vector<double>& k,
                          const std::vector<double>& v, const std::vector<double>& mask, int64_t B,
                          int64_t L, int64_t S, int64_t E, int64_t Ev, bool causal, double scale) {
  std::vector<double> out(static_cast<size_t>(B * L * Ev), 0.0);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> s(static_cast<size_t>(S));
      double m = -kInf;
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < E; ++e) {
          dot += q[static_cast<size_t>((b * L + i) * E + e)] *
                 k[static_cast<size_t>((b * S + j) * E + e)];
        }
        double x = dot * scale;
        if (!mask.empty()) x += mask[static_cast<size_t>((b * L + i) * S + j)];
        if (causal && j > i) x = -kInf;
        s[static_cast<size_t>(j)] = x;
        m = std::max(m, x);
      }
      if (m == -kInf) continue;
      double z = 0;
      for (double& x : s) z += (x = std::exp(x - m));
      for (int64_t j = 0; j < S; ++j) {
        for (int64_t c = 0; c < Ev; ++c) {
          out[static_cast<size_t>((b * L + i) * Ev + c)] +=
              s[static_cast<size_t>(j)] / z * v[static_cast<size_t>((b * S + j) * Ev + c)];
        }
      }
    }
  }
  return out;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::abs(want[i]))) << what << " element " << i;
  }
}

TEST(Attention, MatchesFloat64LoopsAcrossBlocks) {
  // 70 queries, 150 keys: two query blocks and three key blocks of the CPU kernel, a partial
  // one at each end.
  const int64_t B = 3, L = 70, S = 150, E = 12, Ev = 20;
  Generator gen(5);
  const Tensor q = rand({B, L, E}, DType::Float64, &gen), k = rand({B, S, E}, DType::Float64, &gen),
               v = rand({B, S, Ev}, DType::Float64, &gen);
  const Tensor fmask = mul(rand({L, S}, DType::Float64, &gen), 4.0);
  const Tensor bmask = gt(rand({B, 1, S}, DType::Float64, &gen), 0.3);
  std::vector<double> fm, bm;
  const std::vector<double> fv = values(fmask), bv = values(bmask);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < L; ++i) {
      for (int64_t j = 0; j < S; ++j) {
        fm.push_back(fv[static_cast<size_t>(i * S + j)]);
        bm.push_back(bv[static_cast<size_t>(b * S + j)] != 0 ? 0.0 : -kInf);
      }
    }
  }
  const double sc = 1.0 / std::sqrt(static_cast<double>(E));
  for (DType dt : {DType::Float64, DType::Float32}) {
    const double tol = dt == DType::Float64 ? 1e-12 : 2e-5;
    const Tensor qq = q.to(dt), kk = k.to(dt), vv = v.to(dt);
    expect_near_all(values(scaled_dot_product_attention(qq, kk, vv)),
                    naive(values(q), values(k), values(v), {}, B, L, S, E, Ev, false, sc), tol,
                    "plain");
    expect_near_all(values(scaled_dot_product_attention(qq, kk, vv, {}, 0.0, true, 0.5)),
                    naive(values(q), values(k), values(v), {}, B, L, S, E, Ev, true, 0.5), tol,
                    "causal");
    expect_near_all(values(scaled_dot_product_attention(qq, kk, vv, fmask.to(dt))),
                    naive(values(q), values(k), values(v), fm, B, L, S, E, Ev, false, sc), tol,
                    "float mask");
    expect_near_all(values(scaled_dot_product_attention(qq, kk, vv, bmask)),
                    naive(values(q), values(k), values(v), bm, B, L, S, E, Ev, false, sc), tol,
                    "bool mask");
    // L > S with the causal pattern: the last queries see every key.
    const Tensor q2 = q.slice(1, 0, 70), k2 = k.slice(1, 0, 40), v2 = v.slice(1, 0, 40);
    expect_near_all(
        values(scaled_dot_product_attention(q2.to(dt), k2.to(dt), v2.to(dt), {}, 0.0, true)),
        naive(values(q2), values(k2), values(v2), {}, B, 70, 40, E, Ev, true, sc), tol,
        "causal, L > S");
  }
}

// ---- PyTorch's values ---------------------------------------------------------------------

std::string fixture(const char* name) {
  return std::string(EMBER_ATTENTION_FIXTURES) + "/" + name;
}

TEST(Attention, MatchesPyTorchValuesAndGradients) {
  const StateDict t = io::load(fixture("sdpa.safetensors"));
  for (const char* name : {"plain", "causal", "causal_l_gt_s", "bool_mask", "float_mask", "scale",
                           "broadcast", "masked_row"}) {
    SCOPED_TRACE(name);
    const std::string n = name;
    auto get = [&](const char* what) { return t.at(n + "." + what); };
    Tensor q = get("q").clone().requires_grad_(true), k = get("k").clone().requires_grad_(true),
           v = get("v").clone().requires_grad_(true);
    const Tensor mask = t.count(n + ".mask") ? get("mask") : Tensor();
    const Tensor out =
        scaled_dot_product_attention(q, k, v, mask, 0.0, n.rfind("causal", 0) == 0,
                                     n == "scale" ? std::optional<double>(0.3) : std::nullopt);
    expect_near_all(values(out), values(get("out")), 1e-10, "out");
    out.backward(get("grad"));
    expect_near_all(values(q.grad()), values(get("dq")), 1e-10, "dq");
    expect_near_all(values(k.grad()), values(get("dk")), 1e-10, "dk");
    expect_near_all(values(v.grad()), values(get("dv")), 1e-10, "dv");
  }
}

// ---- edge cases ---------------------------------------------------------------------------

TEST(Attention, FullyMaskedRowsGiveZerosAndFiniteGradients) {
  Generator gen(9);
  for (DType dt : {DType::Float32, DType::Float64}) {
    Tensor q = rand({2, 3, 4}, dt, &gen).requires_grad_(true);
    Tensor k = rand({2, 5, 4}, dt, &gen).requires_grad_(true);
    Tensor v = rand({2, 5, 3}, dt, &gen).requires_grad_(true);
    std::vector<double> m(15, 1.0);
    for (int j = 0; j < 5; ++j) m[static_cast<size_t>(5 + j)] = 0.0;  // query 1 sees nothing
    const Tensor out = scaled_dot_product_attention(q, k, v, make(m, {3, 5}, DType::Bool));
    const std::vector<double> o = values(out);
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(o[static_cast<size_t>((b * 3 + 1) * 3 + c)], 0.0);
    }
    sum(out).backward();
    for (const Tensor& g : {q.grad(), k.grad(), v.grad()}) {
      for (double x : values(g)) ASSERT_TRUE(std::isfinite(x));
    }
    for (int64_t e = 0; e < 4; ++e) EXPECT_EQ(values(q.grad())[static_cast<size_t>(4 + e)], 0.0);
  }
}

TEST(Attention, HalfTypesComputeInFloat32) {
  Generator gen(11);
  const Tensor q = rand({2, 6, 8}, DType::Float32, &gen), k = rand({2, 9, 8}, DType::Float32, &gen),
               v = rand({2, 9, 4}, DType::Float32, &gen);
  const Tensor want = scaled_dot_product_attention(q, k, v, {}, 0.0, true);
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    const Tensor got = scaled_dot_product_attention(q.to(dt), k.to(dt), v.to(dt), {}, 0.0, true);
    EXPECT_EQ(got.dtype(), dt);
    expect_near_all(values(got), values(want), dt == DType::Float16 ? 5e-3 : 3e-2, "half output");
  }
}

TEST(Attention, DropoutUsesTheGenerator) {
  Generator g1(3), g2(3), g3(4);
  const Tensor q = rand({2, 5, 4}, DType::Float64, &g1), k = rand({2, 6, 4}, DType::Float64, &g1),
               v = rand({2, 6, 3}, DType::Float64, &g1);
  const Tensor a = scaled_dot_product_attention(q, k, v, {}, 0.5, false, std::nullopt, &g2);
  Generator g2b(3);
  const Tensor b = scaled_dot_product_attention(q, k, v, {}, 0.5, false, std::nullopt, &g2b);
  const Tensor c = scaled_dot_product_attention(q, k, v, {}, 0.5, false, std::nullopt, &g3);
  EXPECT_EQ(values(a), values(b));
  EXPECT_NE(values(a), values(c));
  EXPECT_NE(values(a), values(scaled_dot_product_attention(q, k, v)));
  for (double x : values(scaled_dot_product_attention(q, k, v, {}, 1.0))) EXPECT_EQ(x, 0.0);
}

TEST(Attention, EmptySizes) {
  const Tensor q = ones({2, 3, 4}), k = zeros({2, 0, 4}), v = zeros({2, 0, 5});
  const Tensor out = scaled_dot_product_attention(q, k, v);
  EXPECT_EQ(out.sizes(), Shape({2, 3, 5}));
  for (double x : values(out)) EXPECT_EQ(x, 0.0);
  EXPECT_EQ(
      scaled_dot_product_attention(zeros({2, 0, 4}), ones({2, 3, 4}), ones({2, 3, 5})).sizes(),
      Shape({2, 0, 5}));
}

TEST(Attention, BadInputIsAClearError) {
  const Tensor q = ones({2, 3, 4}), k = ones({2, 5, 4}), v = ones({2, 5, 6});
  auto call = [](auto... args) { return [=] { scaled_dot_product_attention(args...); }; };
  EXPECT_THROW(call(q, ones({2, 5, 3}), v)(), ValueError);
  expect_error(call(q, ones({2, 5, 3}), v),
               {"[scaled_dot_product_attention] query and key must have the same embedding size",
                "E=4", "E=3"});
  expect_error(call(q, k, ones({2, 4, 6})), {"same sequence length", "S=5", "S=4"});
  EXPECT_THROW(call(q, k, ones({2, 4, 6}))(), ValueError);
  expect_error(call(q, k.to(DType::Float64), v), {"must have one dtype", "float32", "float64"});
  EXPECT_THROW(call(q, k.to(DType::Float64), v)(), TypeError);
  EXPECT_THROW(call(q.to(DType::Int64), k.to(DType::Int64), v.to(DType::Int64))(), TypeError);
  expect_error(call(ones({4}), k, v), {"at least 2 dims", "[4]"});
  expect_error(call(ones({3, 3, 4}), k, v), {"cannot be broadcast"});
  expect_error(call(q, k, v, ones({3, 5}, DType::Bool), 0.0, true),
               {"attn_mask and is_causal cannot both be set"});
  expect_error(call(q, k, v, ones({3, 4}, DType::Bool)),
               {"attn_mask of shape [3, 4] does not broadcast to the scores' shape [2, 3, 5]"});
  expect_error(call(q, k, v, ones({3, 5}, DType::Int64)), {"attn_mask must be bool or"});
  EXPECT_THROW(call(q, k, v, ones({3, 5}, DType::Int64))(), TypeError);
  expect_error(call(q, k, v, Tensor(), 1.5), {"dropout_p must be in [0, 1]", "1.5"});
  expect_error(call(Tensor(), k, v), {"undefined tensor argument"});
}

// ---- memory -------------------------------------------------------------------------------

/** Growth of the CPU allocator's reserved bytes (tensors and kernel scratch, cached blocks
 *  included) over a forward and backward of attention at L = S = 4096, E = 64. */
uint64_t reserved_growth(double dropout_p) {
  const int64_t L = 4096, E = 64;
  Generator gen(1);
  Tensor q = rand({1, L, E}, DType::Float32, &gen).requires_grad_(true);
  Tensor k = rand({1, L, E}, DType::Float32, &gen).requires_grad_(true);
  Tensor v = rand({1, L, E}, DType::Float32, &gen).requires_grad_(true);
  const Tensor g = rand({1, L, E}, DType::Float32, &gen);
  empty_cache();
  const uint64_t before = memory_stats().reserved;
  Tensor out = scaled_dot_product_attention(q, k, v, {}, dropout_p, true);
  out.backward(g);
  const uint64_t after = memory_stats().reserved;
  return after > before ? after - before : 0;
}

TEST(Attention, CpuKernelMemoryDoesNotGrowAsLTimesS) {
  // One 4096 x 4096 float32 score matrix is 64 MiB; the fused kernels' inputs, outputs, their
  // gradients and scratch come to a few MiB. The composite path (taken with dropout) holds
  // several L x S matrices: that the measure sees them shows it would catch a regression.
  constexpr uint64_t kScores = uint64_t{4096} * 4096 * 4;
  const uint64_t fused = reserved_growth(0.0);
  EXPECT_LT(fused, kScores / 4) << "fused attention reserved " << fused << " bytes";
  const uint64_t composite = reserved_growth(1e-6);
  EXPECT_GT(composite, kScores) << "composite attention reserved " << composite << " bytes";
}

}  // namespace
}  // namespace ember::testing
