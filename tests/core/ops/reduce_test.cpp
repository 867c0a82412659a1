#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <ember/ember.h>

namespace ember {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");

/** Every element of `t` as a double, in row-major order. */
std::vector<double> values(const Tensor& t) {
  const Tensor c = t.to(DType::Float64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

/** The elements each output of a reduction over `dims` combines, in row-major order. */
struct Groups {
  Shape out_sizes;                      // kept dims
  Shape keep_sizes;                     // reduced dims set to 1
  std::vector<std::vector<double>> of;  // one list per output
};

Groups group(const Tensor& x, std::vector<int64_t> dims) {
  const int64_t nd = x.dim();
  std::vector<bool> red(static_cast<size_t>(nd), dims.empty());
  for (int64_t d : dims) red[static_cast<size_t>(d < 0 ? d + nd : d)] = true;
  Groups g;
  int64_t n_out = 1;
  for (int64_t d = 0; d < nd; ++d) {
    g.keep_sizes.push_back(red[d] ? 1 : x.size(d));
    if (!red[d]) {
      g.out_sizes.push_back(x.size(d));
      n_out *= x.size(d);
    }
  }
  g.of.resize(static_cast<size_t>(n_out));
  const std::vector<double> v = values(x);
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  for (size_t lin = 0; lin < v.size(); ++lin) {
    int64_t o = 0;
    for (int64_t d = 0; d < nd; ++d) {
      if (!red[d]) o = o * x.size(d) + idx[d];
    }
    g.of[static_cast<size_t>(o)].push_back(v[lin]);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < x.size(d)) break;
      idx[d] = 0;
    }
  }
  return g;
}

using RefFn = std::function<double(const std::vector<double>&)>;

double ref_sum(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e;
  return s;
}
double ref_prod(const std::vector<double>& v) {
  double s = 1;
  for (double e : v) s *= e;
  return s;
}
double ref_max(const std::vector<double>& v) {
  double m = -kInf;
  for (double e : v) {
    if (std::isnan(e)) return e;
    m = std::max(m, e);
  }
  return m;
}
double ref_min(const std::vector<double>& v) {
  double m = kInf;
  for (double e : v) {
    if (std::isnan(e)) return e;
    m = std::min(m, e);
  }
  return m;
}
double ref_mean(const std::vector<double>& v) {
  return ref_sum(v) / static_cast<double>(v.size());
}
double ref_var(const std::vector<double>& v, int64_t correction) {
  const double m = ref_mean(v);
  double s = 0;
  for (double e : v) s += (e - m) * (e - m);
  return s / std::max(0.0, static_cast<double>(static_cast<int64_t>(v.size()) - correction));
}
double ref_argmax(const std::vector<double>& v) {
  size_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<double>(i);
    if (v[i] > v[best]) best = i;
  }
  return static_cast<double>(best);
}
double ref_argmin(const std::vector<double>& v) {
  size_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<double>(i);
    if (v[i] < v[best]) best = i;
  }
  return static_cast<double>(best);
}
double ref_all(const std::vector<double>& v) {
  for (double e : v) {
    if (e == 0) return 0;
  }
  return 1;
}
double ref_any(const std::vector<double>& v) {
  for (double e : v) {
    if (e != 0) return 1;
  }
  return 0;
}
double ref_norm(const std::vector<double>& v, double p) {
  if (std::isinf(p)) {
    double m = p > 0 ? 0 : kInf;
    for (double e : v) m = p > 0 ? std::max(m, std::abs(e)) : std::min(m, std::abs(e));
    return m;
  }
  double s = 0;
  for (double e : v) s += p == 0 ? (e != 0) : std::pow(std::abs(e), p);
  return p == 0 ? s : std::pow(s, 1.0 / p);
}
double ref_logsumexp(const std::vector<double>& v) {
  double m = -kInf;
  for (double e : v) m = std::max(m, e);
  if (std::isinf(m)) m = 0;
  double s = 0;
  for (double e : v) s += std::exp(e - m);
  return std::log(s) + m;
}

/** Checks shape and values against a reference, within rtol/atol (nan matches nan). */
void expect_close(const Tensor& got, const Shape& sizes, const std::vector<double>& ref,
                  double rtol, double atol, const std::string& what) {
  ASSERT_EQ(got.sizes(), sizes) << what;
  const std::vector<double> v = values(got);
  ASSERT_EQ(v.size(), ref.size()) << what;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(ref[i])) {
      EXPECT_TRUE(std::isnan(v[i])) << what << " at " << i << ": got " << v[i];
    } else if (std::isinf(ref[i])) {
      EXPECT_EQ(v[i], ref[i]) << what << " at " << i;
    } else {
      EXPECT_NEAR(v[i], ref[i], atol + rtol * std::abs(ref[i])) << what << " at " << i;
    }
  }
}

/** Applies `fn` to each group of a reduction over `dims`. */
std::vector<double> reference(const Groups& g, const RefFn& fn) {
  std::vector<double> r;
  for (const auto& v : g.of) r.push_back(fn(v));
  return r;
}

std::string dims_str(const std::vector<int64_t>& dims, bool keepdim) {
  return "dims " + shape_str(dims) + (keepdim ? " keepdim" : "");
}

/** Dim sets exercised on 3-d inputs: single, negative, multiple, unordered, all, empty. */
const std::vector<std::vector<int64_t>> kDimSets = {
    {0}, {1}, {2}, {-1}, {0, 2}, {2, 0}, {-1, -3}, {1, 2}, {0, 1}, {0, 1, 2}, {}};

/** Inputs: contiguous, transposed, sliced (step 2) views of random data of `dtype`. */
std::vector<std::pair<std::string, Tensor>> inputs(DType dtype) {
  manual_seed(7);
  Tensor base = randn({3, 4, 5}, DType::Float64);
  if (!is_floating(dtype)) base = round(mul(base, 3.0));
  if (dtype == DType::Bool) base = gt(base, 0.0);
  base = base.to(dtype);
  Tensor big = randn({6, 5, 8}, DType::Float64);
  if (!is_floating(dtype)) big = round(mul(big, 3.0));
  if (dtype == DType::Bool) big = gt(big, 0.0);
  big = big.to(dtype);
  return {{"contiguous", base},
          {"transposed", base.transpose(0, 2)},
          {"permuted", base.permute({1, 2, 0})},
          {"sliced", big.slice(0, 0, 6, 2).slice(2, 1, 8, 2)}};
}

/** Runs `op` over every dim set, keepdim on/off and every input layout of `dtype`. */
void check_reduction(DType dtype, const std::function<Tensor(const Tensor&, IntList, bool)>& op,
                     const RefFn& ref, DType out_dtype, double rtol, double atol) {
  for (const auto& [layout, x] : inputs(dtype)) {
    for (const auto& dims : kDimSets) {
      for (bool keepdim : {false, true}) {
        const std::string what =
            layout + " " + std::string(dtype_name(dtype)) + " " + dims_str(dims, keepdim);
        const Tensor y = op(x, dims, keepdim);
        EXPECT_EQ(y.dtype(), out_dtype) << what;
        const Groups g = group(x, dims);
        expect_close(y, keepdim ? g.keep_sizes : g.out_sizes, reference(g, ref), rtol, atol, what);
      }
    }
  }
}

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

/** check_reduction of sum or prod over every dtype: floating inputs keep their dtype (float32
 *  within rtol 1e-5 and `f32_atol`), integer and bool ones give int64, exactly. */
void check_sum_or_prod(const std::function<Tensor(const Tensor&, IntList, bool)>& op,
                       const RefFn& ref, double f32_atol) {
  check_reduction(DType::Float32, op, ref, DType::Float32, 1e-5, f32_atol);
  check_reduction(DType::Float64, op, ref, DType::Float64, 1e-12, 1e-12);
  check_reduction(DType::Int64, op, ref, DType::Int64, 0, 0);
  check_reduction(DType::Int32, op, ref, DType::Int64, 0, 0);
  check_reduction(DType::Bool, op, ref, DType::Int64, 0, 0);
}

#define EXPECT_ERROR(expr, text)                                          \
  do {                                                                    \
    const std::string msg_ = error_of([&] { (void)(expr); });             \
    EXPECT_NE(msg_.find(text), std::string::npos) << "message: " << msg_; \
  } while (0)

// ---- sum, prod, mean --------------------------------------------------------------------------

TEST(ReduceSum, MatchesFloat64LoopsAcrossDimsLayoutsAndDtypes) {
  check_sum_or_prod([](const Tensor& x, IntList d, bool k) { return sum(x, d, k); }, ref_sum, 1e-5);
}

// all() and any() of one long row split over many threads (the few-outputs path of the CPU
// reduction): each thread's partial is its own byte. They once shared the words of a
// std::vector<bool> and lost each other's writes, which a 16-core machine showed and this
// 2-core one did not; 16 threads over many repeats give the race its chances anywhere.
TEST(ReduceLogical, AllAndAnyOfALongRowOverManyThreads) {
  const int before = get_num_threads();
  set_num_threads(16);
  const Tensor t = ones({1 << 18}, DType::Bool), f = zeros({1 << 18}, DType::Bool);
  int wrong = 0;
  for (int i = 0; i < 300; ++i) {
    wrong += all(t).item() != 1.0;
    wrong += any(f).item() != 0.0;
    wrong += any(t).item() != 1.0;
  }
  set_num_threads(before);
  EXPECT_EQ(wrong, 0);
}

TEST(ReduceSum, HandCheckedSmallCases) {
  const Tensor x = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(values(sum(x)), std::vector<double>({21}));
  EXPECT_EQ(values(sum(x, {0})), std::vector<double>({5, 7, 9}));
  EXPECT_EQ(values(sum(x, {1})), std::vector<double>({6, 15}));
  EXPECT_EQ(sum(x, {1}, /*keepdim=*/true).sizes(), Shape({2, 1}));
  EXPECT_EQ(sum(x).dim(), 0);
  EXPECT_EQ(sum(x, {}, /*keepdim=*/true).sizes(), Shape({1, 1}));
  // A 0-d tensor reduces to itself.
  const Tensor s = full({}, 3.5);
  EXPECT_EQ(sum(s).item(), 3.5);
  EXPECT_EQ(sum(s, {0}).item(), 3.5);
  EXPECT_EQ(sum(s, {-1}, /*keepdim=*/true).dim(), 0);
}

TEST(ReduceSum, LargeInputsUseEveryPathAccurately) {
  manual_seed(11);
  // Full reduction of 2^20 + 3 elements (split over threads), rows (contiguous inner
  // runs), columns (vertical path) and a strided full reduction.
  const Tensor a = add(rand({(1 << 20) + 3}), 1.0);  // values in [1, 2): no cancellation
  expect_close(sum(a), {}, {ref_sum(values(a))}, 1e-6, 0, "full");
  const Tensor m = randn({1500, 300});
  for (const auto& dims : std::vector<std::vector<int64_t>>{{0}, {1}, {}}) {
    const Groups g = group(m, dims);
    expect_close(sum(m, dims), g.out_sizes, reference(g, ref_sum), 1e-5, 1e-3,
                 "matrix " + dims_str(dims, false));
    const Tensor mt = m.t();
    const Groups gt = group(mt, dims);
    expect_close(sum(mt, dims), gt.out_sizes, reference(gt, ref_sum), 1e-5, 1e-3,
                 "transposed matrix " + dims_str(dims, false));
  }
  const Tensor d = randn({64, 40, 70}, DType::Float64);
  for (const auto& dims : std::vector<std::vector<int64_t>>{{0, 2}, {1}, {0, 1}}) {
    const Groups g = group(d, dims);
    expect_close(sum(d, dims), g.out_sizes, reference(g, ref_sum), 1e-12, 1e-10,
                 "3-d " + dims_str(dims, false));
  }
}

TEST(ReduceSum, Float32AccumulatesAccurately) {
  // 2^24 + a little: a naive float accumulator would stop growing at 2^24.
  const int64_t n = (1 << 24) + 1000;
  EXPECT_EQ(sum(ones({n})).item(), static_cast<double>(n));
  EXPECT_EQ(sum(ones({n / 1000, 1000}), {0}).numel(), 1000);
  EXPECT_EQ(values(sum(ones({n / 1000, 1000}), {0}))[999], static_cast<double>(n / 1000));
}

TEST(ReduceSum, HalfTypesSumInFloat) {
  const Tensor x = full({3000}, 1.0, DType::Float16);
  // 3000 is exact in float16 (multiple of 2); a float16 accumulator would stall at 2048.
  EXPECT_EQ(sum(x).item(), 3000.0);
  EXPECT_EQ(sum(x).dtype(), DType::Float16);
  EXPECT_EQ(sum(full({300}, 1.0, DType::BFloat16)).item(), 300.0);
}

TEST(ReduceSum, ZeroSizeGivesZero) {
  const Tensor x = zeros({0, 3});
  expect_close(sum(x, {0}), {3}, {0, 0, 0}, 0, 0, "sum dim 0");
  EXPECT_EQ(sum(x, {1}).sizes(), Shape({0}));
  EXPECT_EQ(sum(x).item(), 0.0);
  EXPECT_EQ(sum(zeros({0}, DType::Int32)).dtype(), DType::Int64);
}

TEST(ReduceProd, MatchesFloat64LoopsAcrossDimsLayoutsAndDtypes) {
  check_sum_or_prod([](const Tensor& x, IntList d, bool k) { return prod(x, d, k); }, ref_prod,
                    1e-6);
}

TEST(ReduceProd, ZeroSizeGivesOne) {
  expect_close(prod(zeros({0, 2}), {0}), {2}, {1, 1}, 0, 0, "prod");
  EXPECT_EQ(prod(zeros({0}, DType::Int64)).item(), 1.0);
}

TEST(ReduceMean, MatchesFloat64Loops) {
  auto op = [](const Tensor& x, IntList d, bool k) { return mean(x, d, k); };
  check_reduction(DType::Float32, op, ref_mean, DType::Float32, 1e-5, 1e-6);
  check_reduction(DType::Float64, op, ref_mean, DType::Float64, 1e-12, 1e-13);
}

TEST(ReduceMean, HalfAndEmpty) {
  const Tensor h = full({2049}, 2.0, DType::Float16);
  EXPECT_EQ(mean(h).dtype(), DType::Float16);
  EXPECT_EQ(mean(h).item(), 2.0);
  EXPECT_TRUE(std::isnan(mean(zeros({0})).item()));
  const Tensor e = mean(zeros({0, 2}), {0});
  EXPECT_EQ(e.sizes(), Shape({2}));
  EXPECT_TRUE(std::isnan(values(e)[1]));
}

TEST(ReduceMean, IntegerInputIsAnError) {
  EXPECT_ERROR(mean(zeros({2}, DType::Int64)), "[mean] could not infer output dtype");
  EXPECT_ERROR(mean(zeros({2}, DType::Bool)), "got bool");
}

// ---- amax, amin, max, min ---------------------------------------------------------------------

TEST(ReduceAmax, MatchesFloat64LoopsAcrossDimsLayoutsAndDtypes) {
  auto mx = [](const Tensor& x, IntList d, bool k) { return amax(x, d, k); };
  auto mn = [](const Tensor& x, IntList d, bool k) { return amin(x, d, k); };
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::Bool}) {
    check_reduction(dt, mx, ref_max, dt, 0, 0);
    check_reduction(dt, mn, ref_min, dt, 0, 0);
  }
}

TEST(ReduceAmax, NanPropagatesAndInfinitiesWork) {
  const Tensor x = tensor({{1.0, kNaN, 3.0}, {-kInf, -kInf, -kInf}, {2.0, kInf, 0.0}});
  expect_close(amax(x, {1}), {3}, {kNaN, -kInf, kInf}, 0, 0, "amax");
  expect_close(amin(x, {1}), {3}, {kNaN, -kInf, 0.0}, 0, 0, "amin");
  EXPECT_TRUE(std::isnan(max(x).item()));
  // NaN in a long contiguous row (vectorized lanes) and in a column (vertical path).
  Tensor row = zeros({1000});
  row.narrow(0, 537, 1).fill_(kNaN);
  EXPECT_TRUE(std::isnan(amax(row).item()));
  EXPECT_TRUE(std::isnan(amin(row).item()));
  Tensor col = zeros({100, 64});
  col.select(0, 71).narrow(0, 5, 1).fill_(kNaN);
  const std::vector<double> c = values(amax(col, {0}));
  for (int j = 0; j < 64; ++j) EXPECT_EQ(std::isnan(c[j]), j == 5) << j;
}

TEST(ReduceAmax, ZeroSizeDimIsAnError) {
  EXPECT_ERROR(amax(zeros({0, 3}), {0}), "[amax] cannot reduce over a zero-size dim");
  EXPECT_ERROR(amin(zeros({2, 0}), {}), "[amin] cannot reduce over a zero-size dim");
  // A named dim of size 0 is an IndexError, as in PyTorch; no dim at all asks for one.
  EXPECT_THROW(amax(zeros({0, 3}), {0}), IndexError);
  EXPECT_THROW(amin(zeros({2, 0}), {1}), IndexError);
  EXPECT_THROW(amin(zeros({2, 0}), {-1, 0}), IndexError);
  EXPECT_THROW(amax(zeros({2, 0}), {}), ValueError);
  // Reducing a non-empty dim of an empty tensor is fine.
  EXPECT_EQ(amax(zeros({0, 3}), {1}).sizes(), Shape({0}));
  EXPECT_ERROR(max(zeros({0})), "[max] cannot reduce over a zero-size dim");
  EXPECT_ERROR(min(zeros({2, 0})), "[min] cannot reduce over a zero-size dim");
}

TEST(ReduceMax, AllElementsAndAlongDimWithIndices) {
  const Tensor x = tensor({{3.0, 7.0, 7.0}, {-1.0, -5.0, -5.0}});
  EXPECT_EQ(max(x).item(), 7.0);
  EXPECT_EQ(min(x).item(), -5.0);
  EXPECT_EQ(max(x).dim(), 0);
  auto [v, i] = max(x, 1);
  EXPECT_EQ(values(v), std::vector<double>({7, -1}));
  EXPECT_EQ(values(i), std::vector<double>({1, 0}));  // first index wins ties
  EXPECT_EQ(i.dtype(), DType::Int64);
  auto [v2, i2] = min(x, -1, /*keepdim=*/true);
  EXPECT_EQ(v2.sizes(), Shape({2, 1}));
  EXPECT_EQ(values(v2), std::vector<double>({3, -5}));
  EXPECT_EQ(values(i2), std::vector<double>({0, 1}));
}

TEST(ReduceMax, WithIndicesMatchesLoopsOnEveryLayout) {
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::Bool}) {
    for (const auto& [layout, x] : inputs(dt)) {
      for (int64_t d : {0, 1, 2, -1}) {
        for (bool keepdim : {false, true}) {
          const std::string what = layout + " " + std::string(dtype_name(dt)) + " dim " +
                                   std::to_string(d) + (keepdim ? " keepdim" : "");
          const Groups g = group(x, {d});
          const Shape& sz = keepdim ? g.keep_sizes : g.out_sizes;
          auto [v, i] = max(x, d, keepdim);
          EXPECT_EQ(v.dtype(), dt) << what;
          expect_close(v, sz, reference(g, ref_max), 0, 0, "max " + what);
          expect_close(i, sz, reference(g, ref_argmax), 0, 0, "max idx " + what);
          auto [v2, i2] = min(x, d, keepdim);
          expect_close(v2, sz, reference(g, ref_min), 0, 0, "min " + what);
          expect_close(i2, sz, reference(g, ref_argmin), 0, 0, "min idx " + what);
        }
      }
    }
  }
}

TEST(ReduceMax, ZeroSizeDimIsAnError) {
  EXPECT_ERROR(max(zeros({2, 0}), 1), "[max] cannot reduce over a zero-size dim");
  EXPECT_ERROR(min(zeros({0}), 0), "[min] cannot reduce over a zero-size dim");
  EXPECT_ERROR(max(zeros({2, 0}), 1), "expected reduction dim 1 to have non-zero size");
  EXPECT_THROW(max(zeros({2, 0}), 1), IndexError);
  EXPECT_THROW(min(zeros({0}), 0), IndexError);
  EXPECT_THROW(max(zeros({0})), ValueError);
  auto [v, i] = max(zeros({0, 3}), 1);
  EXPECT_EQ(v.sizes(), Shape({0}));
  EXPECT_EQ(i.sizes(), Shape({0}));
}

// ---- argmax, argmin ---------------------------------------------------------------------------

TEST(ReduceArgmax, MatchesLoopsAlongEachDimAndFlattened) {
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Int32}) {
    for (const auto& [layout, x] : inputs(dt)) {
      const std::string what = layout + " " + std::string(dtype_name(dt));
      for (int64_t d : {0, 1, 2, -2}) {
        for (bool keepdim : {false, true}) {
          const Groups g = group(x, {d});
          const Shape& sz = keepdim ? g.keep_sizes : g.out_sizes;
          expect_close(argmax(x, d, keepdim), sz, reference(g, ref_argmax), 0, 0, "argmax " + what);
          expect_close(argmin(x, d, keepdim), sz, reference(g, ref_argmin), 0, 0, "argmin " + what);
        }
      }
      // No dim: index into the flattened (row-major) tensor.
      const std::vector<double> v = values(x);
      expect_close(argmax(x), {}, {ref_argmax(v)}, 0, 0, "argmax flat " + what);
      expect_close(argmin(x), {}, {ref_argmin(v)}, 0, 0, "argmin flat " + what);
      EXPECT_EQ(argmax(x, std::nullopt, /*keepdim=*/true).sizes(), Shape({1, 1, 1}));
    }
  }
}

TEST(ReduceArgmax, TiesNanAndScalars) {
  const Tensor x = tensor({{2.0, 5.0, 5.0, 1.0}, {1.0, kNaN, 9.0, kNaN}});
  EXPECT_EQ(values(argmax(x, 1)), std::vector<double>({1, 1}));
  EXPECT_EQ(values(argmin(x, 1)), std::vector<double>({3, 1}));
  EXPECT_EQ(argmax(x).item(), 5.0);
  EXPECT_EQ(argmax(x).dtype(), DType::Int64);
  EXPECT_EQ(argmax(full({}, 4.0)).item(), 0.0);
  EXPECT_EQ(argmax(full({}, 4.0), 0).dim(), 0);
}

TEST(ReduceArgmax, EmptyIsAnError) {
  EXPECT_ERROR(argmax(zeros({0})), "[argmax] cannot reduce over a zero-size dim");
  EXPECT_ERROR(argmin(zeros({3, 0}), 1), "[argmin] cannot reduce over a zero-size dim");
  EXPECT_ERROR(argmax(zeros({3, 2}), 2), "[argmax] dim 2 out of range");
  EXPECT_THROW(argmin(zeros({3, 0}), 1), IndexError);
  EXPECT_THROW(argmax(zeros({0, 3}), 0, /*keepdim=*/true), IndexError);
  EXPECT_THROW(argmax(zeros({0})), ValueError);
  EXPECT_EQ(argmax(zeros({0, 3}), 1).sizes(), Shape({0}));
}

// ---- var, std, norm ---------------------------------------------------------------------------

TEST(ReduceVar, MatchesFloat64LoopsWithCorrections) {
  for (int64_t corr : {0, 1, 2}) {
    auto v = [corr](const Tensor& x, IntList d, bool k) { return var(x, d, corr, k); };
    auto s = [corr](const Tensor& x, IntList d, bool k) { return ember::std(x, d, corr, k); };
    auto rv = [corr](const std::vector<double>& e) { return ref_var(e, corr); };
    auto rs = [corr](const std::vector<double>& e) { return std::sqrt(ref_var(e, corr)); };
    check_reduction(DType::Float32, v, rv, DType::Float32, 1e-4, 1e-6);
    check_reduction(DType::Float64, v, rv, DType::Float64, 1e-11, 1e-12);
    check_reduction(DType::Float32, s, rs, DType::Float32, 1e-4, 1e-6);
    check_reduction(DType::Float64, s, rs, DType::Float64, 1e-11, 1e-12);
  }
}

TEST(ReduceVar, StableForLargeMeanAndDegenerateCounts) {
  // Values 1e6 + {0, 1, 2}: the one-pass formula would lose everything in float32.
  const Tensor x = add(tensor({0.0, 1.0, 2.0}), 1e6);
  EXPECT_NEAR(var(x).item(), 1.0, 1e-6);
  EXPECT_NEAR(ember::std(x, {}, 0).item(), std::sqrt(2.0 / 3.0), 1e-6);
  EXPECT_TRUE(std::isnan(var(tensor({3.0})).item()));  // 0 / 0
  EXPECT_TRUE(std::isinf(var(tensor({1.0, 2.0}), {}, 2).item()));
  // n - correction is taken in double, so extreme corrections neither wrap nor flip sign.
  const double huge = var(tensor({1.0, 3.0}), {}, std::numeric_limits<int64_t>::min()).item();
  EXPECT_NEAR(huge * (2.0 + 9223372036854775808.0), 2.0, 1e-9);
  EXPECT_TRUE(std::isinf(var(tensor({1.0, 3.0}), {}, std::numeric_limits<int64_t>::max()).item()));
  EXPECT_ERROR(var(zeros({2}, DType::Int64)), "[var] std and var only support floating point");
  EXPECT_ERROR(ember::std(zeros({2}, DType::Int32)), "[std]");
}

TEST(ReduceNorm, MatchesFloat64LoopsForEveryOrder) {
  for (double p : {2.0, 1.0, kInf, -kInf, 0.0, 3.0, 0.5}) {
    auto op = [p](const Tensor& x, IntList d, bool k) { return norm(x, p, d, k); };
    auto ref = [p](const std::vector<double>& v) { return ref_norm(v, p); };
    check_reduction(DType::Float32, op, ref, DType::Float32, 1e-5, 1e-6);
    check_reduction(DType::Float64, op, ref, DType::Float64, 1e-12, 1e-12);
  }
}

TEST(ReduceNorm, HandCheckedAndErrors) {
  const Tensor x = tensor({3.0, -4.0, 0.0});
  EXPECT_NEAR(norm(x).item(), 5.0, 1e-6);
  EXPECT_NEAR(norm(x, 1).item(), 7.0, 1e-6);
  EXPECT_NEAR(norm(x, kInf).item(), 4.0, 1e-6);
  EXPECT_NEAR(norm(x, -kInf).item(), 0.0, 1e-6);
  EXPECT_NEAR(norm(x, 0).item(), 2.0, 1e-6);
  EXPECT_EQ(norm(zeros({0})).item(), 0.0);
  EXPECT_ERROR(norm(zeros({0}), kInf), "[norm] cannot compute the inf norm");
  EXPECT_ERROR(norm(zeros({2}, DType::Int64)), "[norm] expected a floating point tensor");
}

// ---- all, any ---------------------------------------------------------------------------------

TEST(ReduceAll, MatchesLoopsForEveryDtype) {
  auto a = [](const Tensor& x, IntList d, bool k) { return all(x, d, k); };
  auto o = [](const Tensor& x, IntList d, bool k) { return any(x, d, k); };
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::Bool}) {
    check_reduction(dt, a, ref_all, DType::Bool, 0, 0);
    check_reduction(dt, o, ref_any, DType::Bool, 0, 0);
  }
}

TEST(ReduceAll, SparseTruthAndEmpty) {
  Tensor x = zeros({50, 70}, DType::Int32);
  x.select(0, 33).narrow(0, 9, 1).fill_(5);
  EXPECT_EQ(any(x).item(), 1.0);
  EXPECT_EQ(all(x).item(), 0.0);
  EXPECT_EQ(values(any(x, {0}))[9], 1.0);
  EXPECT_EQ(values(any(x, {0}))[8], 0.0);
  EXPECT_EQ(all(zeros({0})).item(), 1.0);
  EXPECT_EQ(any(zeros({0})).item(), 0.0);
  expect_close(all(zeros({0, 2}), {0}), {2}, {1, 1}, 0, 0, "all empty");
  EXPECT_EQ(any(tensor({0.0, kNaN})).item(), 1.0);  // NaN is truthy
}

// ---- logsumexp --------------------------------------------------------------------------------

TEST(ReduceLogsumexp, MatchesFloat64Loops) {
  auto op = [](const Tensor& x, IntList d, bool k) { return logsumexp(x, d, k); };
  check_reduction(DType::Float32, op, ref_logsumexp, DType::Float32, 1e-5, 1e-5);
  check_reduction(DType::Float64, op, ref_logsumexp, DType::Float64, 1e-12, 1e-12);
  check_reduction(DType::Int64, op, ref_logsumexp, DType::Float32, 1e-5, 1e-5);
}

TEST(ReduceLogsumexp, StableForLargeAndInfiniteInputs) {
  const Tensor x = tensor({{1000.0, 1000.0}, {-kInf, -kInf}, {kInf, 1.0}, {-1000.0, -kInf}});
  expect_close(logsumexp(x, {1}), {4}, {1000.0 + std::log(2.0), -kInf, kInf, -1000.0}, 1e-6, 0,
               "rows");
  expect_close(logsumexp(zeros({0, 2}), {0}), {2}, {-kInf, -kInf}, 0, 0, "empty");
  EXPECT_EQ(logsumexp(zeros({0, 2}), {0}, /*keepdim=*/true).sizes(), Shape({1, 2}));
}

// ---- cumsum -----------------------------------------------------------------------------------

std::vector<double> ref_cumsum(const Tensor& x, int64_t dim) {
  const int64_t nd = x.dim();
  const int64_t d = dim < 0 ? dim + nd : dim;
  std::vector<double> v = values(x);
  int64_t inner = 1;
  for (int64_t k = d + 1; k < nd; ++k) inner *= x.size(k);
  const int64_t n = x.size(d), outer = x.numel() / std::max<int64_t>(1, n * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      for (int64_t j = 0; j < n; ++j) {
        double& e = v[static_cast<size_t>((o * n + j) * inner + i)];
        acc += e;
        e = acc;
      }
    }
  }
  return v;
}

TEST(ReduceCumsum, MatchesFloat64LoopsAlongEveryDim) {
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::Bool}) {
    const DType out = is_floating(dt) ? dt : DType::Int64;
    const double tol = dt == DType::Float32 ? 1e-5 : 1e-12;
    for (const auto& [layout, x] : inputs(dt)) {
      for (int64_t d : {0, 1, 2, -1}) {
        const std::string what =
            layout + " " + std::string(dtype_name(dt)) + " dim " + std::to_string(d);
        const Tensor y = cumsum(x, d);
        EXPECT_EQ(y.dtype(), out) << what;
        expect_close(y, x.sizes(), ref_cumsum(x, d), tol, tol, what);
      }
    }
  }
}

TEST(ReduceCumsum, LargeScalarAndEmpty) {
  manual_seed(3);
  const Tensor x = randn({300, 200});
  expect_close(cumsum(x, 0), x.sizes(), ref_cumsum(x, 0), 1e-5, 1e-4, "dim 0");
  expect_close(cumsum(x, 1), x.sizes(), ref_cumsum(x, 1), 1e-5, 1e-4, "dim 1");
  EXPECT_EQ(cumsum(full({}, 2.0), 0).item(), 2.0);
  EXPECT_EQ(cumsum(zeros({0, 3}), 0).sizes(), Shape({0, 3}));
  EXPECT_ERROR(cumsum(zeros({2, 3}), 2), "[cumsum] dim 2 out of range");
}

// ---- argument errors --------------------------------------------------------------------------

TEST(ReduceErrors, BadAndRepeatedDims) {
  const Tensor x = zeros({2, 3, 4});
  EXPECT_ERROR(sum(x, {3}), "[sum] dim 3 out of range");
  EXPECT_ERROR(sum(x, {-4}), "[sum] dim -4 out of range");
  EXPECT_ERROR(sum(x, {0, 0}), "[sum] dim 0 appears multiple times");
  EXPECT_ERROR(prod(x, {1, -2}), "[prod] dim 1 appears multiple times");
  EXPECT_ERROR(mean(x, {2, 5}), "[mean] dim 5 out of range");
  EXPECT_ERROR(amax(x, {-1, 2}), "[amax] dim 2 appears multiple times");
  EXPECT_ERROR(all(x, {7}), "[all] dim 7 out of range");
  EXPECT_ERROR(var(x, {1, 1}), "[var] dim 1 appears multiple times");
  EXPECT_ERROR(ember::std(x, {-5}), "[std] dim -5 out of range");
  EXPECT_ERROR(norm(x, 2, {9}), "[norm] dim 9 out of range");
  EXPECT_ERROR(logsumexp(x, {0, -3}), "[logsumexp] dim 0 appears multiple times");
  EXPECT_ERROR(max(x, 3), "[max] dim 3 out of range");
}

// ---- trapezoid, cov, corrcoef ------------------------------------------------------------------

TEST(Trapezoid, MatchesFloat64LoopsAtSpacingAndAtPoints) {
  const std::vector<double> pts{0.0, 0.5, 1.5, 3.0, 3.25};
  Tensor y = empty({3, 5}, DType::Float64);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 5; ++j) y.data_ptr<double>()[i * 5 + j] = std::sin(1.0 + i * 5 + j) * 3;
  }
  const Tensor x = tensor({0.0, 0.5, 1.5, 3.0, 3.25}, DType::Float64);
  const std::vector<double> v = values(y);
  for (const bool at_points : {false, true}) {
    const Tensor got = at_points ? trapezoid(y, x) : trapezoid(y, 0.5);
    const Tensor running = at_points ? cumulative_trapezoid(y, x) : cumulative_trapezoid(y, 0.5);
    ASSERT_EQ(got.sizes(), Shape({3}));
    ASSERT_EQ(running.sizes(), Shape({3, 4}));
    const std::vector<double> g = values(got), r = values(running);
    for (int64_t i = 0; i < 3; ++i) {
      double total = 0;
      for (int64_t j = 0; j + 1 < 5; ++j) {
        const double h = at_points ? pts[j + 1] - pts[j] : 0.5;
        total += h * (v[i * 5 + j] + v[i * 5 + j + 1]) / 2;
        EXPECT_NEAR(r[i * 4 + j], total, 1e-13) << at_points << " " << i << " " << j;
      }
      EXPECT_NEAR(g[i], total, 1e-13) << at_points << " " << i;
    }
  }
  // Along dim 0, x of y's shape (aligned as is) and of fewer dims (aligned at the last dims).
  const Tensor xs = tensor({0.0, 1.0, 3.0}, DType::Float64).reshape({3, 1}).expand({3, 5});
  const Tensor along0 = trapezoid(y, xs, 0);
  const std::vector<double> a0 = values(along0);
  for (int64_t j = 0; j < 5; ++j) {
    const double want = 1.0 * (v[j] + v[5 + j]) / 2 + 2.0 * (v[5 + j] + v[10 + j]) / 2;
    EXPECT_NEAR(a0[j], want, 1e-13) << j;
  }
  EXPECT_EQ(values(trapezoid(y, x.reshape({1, 5}))), values(trapezoid(y, x)));
  // Integers promote as y * 0.5 does; no samples integrate to zeros of y's dtype.
  const Tensor ints = trapezoid(tensor({1.0, 2.0, 3.0}, DType::Int64));
  EXPECT_EQ(ints.dtype(), DType::Float32);
  EXPECT_EQ(ints.item(), 4.0);
  const Tensor none = trapezoid(zeros({2, 0}));
  EXPECT_EQ(none.sizes(), Shape({2}));
  EXPECT_EQ(values(none), std::vector<double>({0, 0}));
  EXPECT_ERROR(trapezoid(tensor({1.0, 0.0}, DType::Bool)), "[trapezoid] a bool y is not supported");
  EXPECT_ERROR(trapezoid(y, tensor({0.0, 1.0})), "[trapezoid] a 1-d x needs one point per element");
  EXPECT_ERROR(cumulative_trapezoid(y, x, 3), "[cumulative_trapezoid]");
  // Gradients of y and of the points.
  const Tensor yl = y.clone().requires_grad_(true), xl = x.clone().requires_grad_(true);
  for (const autograd::TensorFn& fn :
       {autograd::TensorFn([](const std::vector<Tensor>& in) { return trapezoid(in[0], in[1]); }),
        autograd::TensorFn(
            [](const std::vector<Tensor>& in) { return cumulative_trapezoid(in[0], in[1]); })}) {
    const autograd::GradcheckResult r = autograd::gradcheck(fn, {yl, xl});
    EXPECT_TRUE(r.ok) << r.message;
  }
}

// cov's definition with weights, as numpy.cov and torch.cov state it, in float64 loops.
std::vector<double> cov_reference(const std::vector<double>& x, int64_t vars, int64_t obs,
                                  int64_t correction, const std::vector<double>& f,
                                  const std::vector<double>& a) {
  std::vector<double> w(obs, 1.0);
  for (int64_t j = 0; j < obs; ++j) {
    if (!f.empty()) w[j] *= f[j];
    if (!a.empty()) w[j] *= a[j];
  }
  double w_sum = 0, wa_sum = 0;
  for (int64_t j = 0; j < obs; ++j) {
    w_sum += w[j];
    wa_sum += w[j] * (a.empty() ? 1.0 : a[j]);
  }
  const double norm = w_sum - correction * (a.empty() ? 1.0 : wa_sum / w_sum);
  std::vector<double> mean(vars, 0.0), out(vars * vars, 0.0);
  for (int64_t i = 0; i < vars; ++i) {
    for (int64_t j = 0; j < obs; ++j) mean[i] += w[j] * x[i * obs + j] / w_sum;
  }
  for (int64_t i = 0; i < vars; ++i) {
    for (int64_t k = 0; k < vars; ++k) {
      for (int64_t j = 0; j < obs; ++j) {
        out[i * vars + k] += w[j] * (x[i * obs + j] - mean[i]) * (x[k * obs + j] - mean[k]) / norm;
      }
    }
  }
  return out;
}

TEST(Cov, MatchesFloat64LoopsWithWeightsAndCorrections) {
  const int64_t vars = 3, obs = 6;
  Tensor x = empty({vars, obs}, DType::Float64);
  for (int64_t i = 0; i < vars * obs; ++i) x.data_ptr<double>()[i] = std::cos(0.7 * i) + 0.1 * i;
  const std::vector<double> xv = values(x), f{1, 2, 1, 3, 1, 2}, a{0.5, 1, 2, 1, 0.25, 1};
  const Tensor fw = tensor({1.0, 2.0, 1.0, 3.0, 1.0, 2.0}, DType::Int64);
  const Tensor aw = tensor({0.5, 1.0, 2.0, 1.0, 0.25, 1.0}, DType::Float64);
  struct Case {
    int64_t correction;
    bool with_f, with_a;
  };
  for (const Case c :
       {Case{1, false, false}, Case{0, false, false}, Case{2, false, false}, Case{1, true, false},
        Case{1, false, true}, Case{1, true, true}, Case{0, true, true}}) {
    const Tensor got = cov(x, c.correction, c.with_f ? fw : Tensor(), c.with_a ? aw : Tensor());
    ASSERT_EQ(got.sizes(), Shape({vars, vars}));
    const std::vector<double> want =
        cov_reference(xv, vars, obs, c.correction, c.with_f ? f : std::vector<double>{},
                      c.with_a ? a : std::vector<double>{});
    const std::vector<double> g = values(got);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(g[i], want[i], 1e-12) << c.correction << c.with_f << c.with_a << " " << i;
    }
  }
  // A 1-d input is one variable: its variance, 0-d; integers compute in the default dtype.
  const Tensor var1 = cov(tensor({1.0, 2.0, 4.0}, DType::Int64));
  EXPECT_EQ(var1.dim(), 0);
  EXPECT_EQ(var1.dtype(), DType::Float32);
  EXPECT_NEAR(var1.item(), 7.0 / 3.0, 1e-6);
  // No degrees of freedom left: the normaliser is clamped at 0, as in PyTorch.
  EXPECT_TRUE(std::isinf(cov(tensor({1.0, 2.0}), 2).item()));
  // corrcoef: cov over the products of the standard deviations, 1 on the diagonal.
  const std::vector<double> c = cov_reference(xv, vars, obs, 1, {}, {});
  const std::vector<double> r = values(corrcoef(x));
  for (int64_t i = 0; i < vars; ++i) {
    for (int64_t k = 0; k < vars; ++k) {
      const double want = c[i * vars + k] / std::sqrt(c[i * vars + i] * c[k * vars + k]);
      EXPECT_NEAR(r[i * vars + k], want, 1e-12) << i << " " << k;
    }
  }
  EXPECT_EQ(corrcoef(tensor({1.0, 2.0, 5.0})).item(), 1.0);
  EXPECT_ERROR(cov(zeros({2, 2, 2})), "[cov] expects at most 2 dims");
  EXPECT_ERROR(cov(x, 1, aw), "[cov] fweights must be integers");
  EXPECT_ERROR(cov(x, 1, Tensor(), fw), "[cov] aweights must be floating-point");
  EXPECT_ERROR(cov(x, 1, tensor({1.0, 2.0}, DType::Int64)), "[cov] fweights needs one weight");
  EXPECT_ERROR(cov(x, 1, tensor({1.0, 2.0, 1.0, -3.0, 1.0, 2.0}, DType::Int64)),
               "[cov] fweights must be non-negative");
  const Tensor leaf = x.clone().requires_grad_(true);
  const autograd::GradcheckResult g = autograd::gradcheck(
      [&](const std::vector<Tensor>& in) { return cov(in[0], 1, fw, aw); }, {leaf});
  EXPECT_TRUE(g.ok) << g.message;
  const autograd::GradcheckResult gc =
      autograd::gradcheck([](const std::vector<Tensor>& in) { return corrcoef(in[0]); }, {leaf});
  EXPECT_TRUE(gc.ok) << gc.message;
}

// ---- gradient, sum_to_size ----------------------------------------------------------------------

/** NumPy's gradient of samples f at coordinates x (1-d), edge_order 1 or 2, in float64. */
std::vector<double> gradient_loop(const std::vector<double>& f, const std::vector<double>& x,
                                  int edge_order) {
  const size_t n = f.size();
  std::vector<double> g(n);
  for (size_t i = 1; i + 1 < n; ++i) {
    const double l = x[i] - x[i - 1], r = x[i + 1] - x[i];
    g[i] = -r / (l * (l + r)) * f[i - 1] + (r - l) / (l * r) * f[i] + l / (r * (l + r)) * f[i + 1];
  }
  if (edge_order == 1) {
    g[0] = (f[1] - f[0]) / (x[1] - x[0]);
    g[n - 1] = (f[n - 1] - f[n - 2]) / (x[n - 1] - x[n - 2]);
  } else {
    double a = x[1] - x[0], b = x[2] - x[1];
    g[0] =
        -(2 * a + b) / (a * (a + b)) * f[0] + (a + b) / (a * b) * f[1] - a / (b * (a + b)) * f[2];
    a = x[n - 2] - x[n - 3];
    b = x[n - 1] - x[n - 2];
    g[n - 1] = b / (a * (a + b)) * f[n - 3] - (a + b) / (a * b) * f[n - 2] +
               (2 * b + a) / (b * (a + b)) * f[n - 1];
  }
  return g;
}

TEST(Gradient, MatchesNumPysFormulasAtSpacingsAndCoordinates) {
  const std::vector<double> xs{0.0, 0.3, 1.0, 1.2, 2.5, 4.0};
  std::vector<double> f(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) f[i] = std::sin(xs[i]) * 3 + xs[i] * xs[i];
  const Tensor y = tensor({f[0], f[1], f[2], f[3], f[4], f[5]}, DType::Float64);
  const Tensor x = tensor({xs[0], xs[1], xs[2], xs[3], xs[4], xs[5]}, DType::Float64);
  std::vector<double> uniform(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) uniform[i] = 0.5 * static_cast<double>(i);
  for (int order : {1, 2}) {
    const std::vector<double> at_x = values(gradient(y, std::vector<Tensor>{x}, {}, order)[0]);
    const std::vector<double> at_h = values(gradient(y, std::vector<double>{0.5}, {}, order)[0]);
    const std::vector<double> want_x = gradient_loop(f, xs, order);
    const std::vector<double> want_h = gradient_loop(f, uniform, order);
    for (size_t i = 0; i < xs.size(); ++i) {
      EXPECT_NEAR(at_x[i], want_x[i], 1e-12) << order << " " << i;
      EXPECT_NEAR(at_h[i], want_h[i], 1e-12) << order << " " << i;
    }
  }
  // Every dim of a 2-d y, one spacing each; one dim; integers give the default dtype.
  const Tensor y2 =
      mul(arange(12).to(DType::Float64).view({3, 4}), arange(12).to(DType::Float64).view({3, 4}));
  const std::vector<Tensor> both = gradient(y2, std::vector<double>{2.0, 1.0});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(values(both[1]).front(), 1.0);  // (1 - 0) / 1
  EXPECT_EQ(values(both[0]).front(), (16.0 - 0.0) / 2.0);
  EXPECT_EQ(gradient(y2, std::vector<double>{1.0}, {-1}).size(), 1u);
  EXPECT_EQ(gradient(arange(4), std::vector<double>{1.0})[0].dtype(), default_dtype());
  EXPECT_ERROR(gradient(y, std::vector<double>{1.0}, {}, 3), "[gradient] only edge_order 1 and 2");
  EXPECT_ERROR(gradient(ones({2}), std::vector<double>{1.0}, {}, 2),
               "[gradient] each dimension size must be at least edge_order+1");
  EXPECT_ERROR(gradient(y2, std::vector<double>{1.0, 2.0, 3.0}),
               "[gradient] expected spacing to be a number or to have one entry per dim");
  EXPECT_ERROR(gradient(y, std::vector<Tensor>{ones({4}, DType::Float64)}),
               "[gradient] the coordinates of dim 0 must be 1-d with 6 points");
  const Tensor leaf = y.clone().requires_grad_(true);
  const autograd::GradcheckResult r = autograd::gradcheck(
      [&x](const std::vector<Tensor>& in) {
        return gradient(in[0], std::vector<Tensor>{x}, {}, 2)[0];
      },
      {leaf});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(SumToSize, SumsTheBroadcastDims) {
  const Tensor x = arange(24).to(DType::Float64).view({2, 3, 4});
  EXPECT_EQ(values(sum_to_size(x, {3, 1})), values(sum(x, {0, 2}).view({3, 1})));
  EXPECT_EQ(sum_to_size(x, {1, 1, 1}).sizes(), Shape({1, 1, 1}));
  EXPECT_EQ(values(sum_to_size(x, {2, 3, 4})), values(x));
  EXPECT_ERROR(sum_to_size(x, {2, 4}),
               "[sum_to_size] size [2, 4] is not expandable to size [2, 3, 4]");
}

}  // namespace
}  // namespace ember
