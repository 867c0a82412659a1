#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

using testing::expect_error;
using testing::make;
using testing::values;

// ---- helpers ----------------------------------------------------------------------------------

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

// Index into a row-major tensor of `in` for output element `lin` of `out` (NumPy broadcasting).
int64_t bcast_index(const Shape& out, const Shape& in, int64_t lin) {
  int64_t idx = 0, stride = 1;
  const size_t lead = out.size() - in.size();
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t coord = lin % out[d];
    lin /= out[d];
    if (d < lead) continue;
    const int64_t size = in[d - lead];
    idx += (size == 1 ? 0 : coord) * stride;
    stride *= size;
  }
  return idx;
}

struct Tol {
  double atol, rtol;
};

Tol tol_for(DType d) {
  switch (d) {
    case DType::Float64:
      return {1e-12, 1e-12};
    case DType::Float32:
      return {1e-5, 1e-5};
    case DType::Float16:
      return {2e-3, 2e-3};
    case DType::BFloat16:
      return {1e-2, 1e-2};
    default:
      return {0, 0};
  }
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, Tol tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    const double g = got[i], w = want[i];
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= tol.atol + tol.rtol * std::fabs(w))) {
      ADD_FAILURE() << what << " at " << i << ": got " << g << " want " << w;
      ++bad;
    }
  }
}

// Deterministic values in [lo, hi), or multiples of 0.25 when `quarters` (ties for rounding).
std::vector<double> sample(int64_t n, double lo, double hi, uint32_t seed, bool quarters = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = quarters ? std::round(u(rng) * 4) / 4 : u(rng);
  return v;
}

constexpr DType kFloatTypes[] = {f32, f64, f16, bf16};

// An input layout: the logical shape and how its elements are laid out in memory.
enum class Layout { Contiguous, Transposed, Sliced };

// A tensor of logical `sizes` holding `vals` in row-major order, laid out as `layout`.
Tensor with_layout(const std::vector<double>& vals, const Shape& sizes, DType dtype,
                   Layout layout) {
  const size_t nd = sizes.size();
  if (layout == Layout::Sliced && nd > 0) {
    // Every other element of a buffer twice as long along the last dim.
    Shape wide = sizes;
    wide[nd - 1] *= 2;
    std::vector<double> buf(static_cast<size_t>(numel_of(wide)), -777);
    const int64_t last = std::max<int64_t>(sizes[nd - 1], 1);
    for (size_t i = 0; i < vals.size(); ++i) {
      const int64_t row = static_cast<int64_t>(i) / last, col = static_cast<int64_t>(i) % last;
      buf[static_cast<size_t>(row * 2 * last + 2 * col)] = vals[i];
    }
    Tensor t = make(buf, wide, dtype).slice(-1, 0, 2 * sizes[nd - 1], 2);
    EXPECT_EQ(t.sizes(), sizes);
    return t;
  }
  if (layout == Layout::Transposed && nd >= 2) {
    // Store the transpose of the last two dims, then transpose back: a non-contiguous view.
    Shape ts = sizes;
    std::swap(ts[nd - 1], ts[nd - 2]);
    const int64_t r = sizes[nd - 2], c = sizes[nd - 1];
    const int64_t batch = r * c == 0 ? 0 : numel_of(sizes) / (r * c);
    std::vector<double> buf(vals.size());
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < c; ++j) buf[b * r * c + j * r + i] = vals[b * r * c + i * c + j];
    Tensor t = make(buf, ts, dtype).transpose(-1, -2);
    EXPECT_EQ(t.sizes(), sizes);
    return t;
  }
  return make(vals, sizes, dtype);
}

const char* layout_name(Layout l) {
  return l == Layout::Contiguous ? "contiguous" : l == Layout::Transposed ? "transposed" : "sliced";
}

// ---- unary ops --------------------------------------------------------------------------------

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  double lo, hi;
  bool ints;      // also defined on integers, keeping the dtype
  bool quarters;  // sample on a 0.25 grid (rounding ties)
};

double gelu_erf(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}
double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

std::vector<UnaryCase> unary_cases() {
  auto sgn = [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; };
  return {
      {"neg", [](const Tensor& x) { return neg(x); }, [](double x) { return -x; }, -5, 5, true,
       false},
      {"abs", [](const Tensor& x) { return abs(x); }, [](double x) { return std::fabs(x); }, -5, 5,
       true, false},
      {"exp", [](const Tensor& x) { return exp(x); }, [](double x) { return std::exp(x); }, -4, 4,
       false, false},
      {"log", [](const Tensor& x) { return log(x); }, [](double x) { return std::log(x); }, 0.05, 6,
       false, false},
      {"log1p", [](const Tensor& x) { return log1p(x); }, [](double x) { return std::log1p(x); },
       -0.9, 4, false, false},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); }, 0, 9,
       false, false},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); },
       0.1, 9, false, false},
      {"sin", [](const Tensor& x) { return sin(x); }, [](double x) { return std::sin(x); }, -4, 4,
       false, false},
      {"cos", [](const Tensor& x) { return cos(x); }, [](double x) { return std::cos(x); }, -4, 4,
       false, false},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, -4,
       4, false, false},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); },
       [](double x) { return 1 / (1 + std::exp(-x)); }, -8, 8, false, false},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double x) { return x > 0 ? x : 0; }, -3,
       3, true, false},
      {"gelu", [](const Tensor& x) { return gelu(x); }, gelu_erf, -4, 4, false, false},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, gelu_tanh, -4, 4, false,
       false},
      {"silu", [](const Tensor& x) { return silu(x); },
       [](double x) { return x / (1 + std::exp(-x)); }, -6, 6, false, false},
      {"clamp", [](const Tensor& x) { return clamp(x, -1, 2); },
       [](double x) { return std::min(std::max(x, -1.0), 2.0); }, -4, 4, true, true},
      {"clamp_lo", [](const Tensor& x) { return clamp(x, -0.5, std::nullopt); },
       [](double x) { return std::max(x, -0.5); }, -2, 2, false, false},
      {"clamp_hi", [](const Tensor& x) { return clamp(x, std::nullopt, 0.7); },
       [](double x) { return std::min(x, 0.7); }, -2, 2, false, false},
      {"sign", [](const Tensor& x) { return sign(x); }, sgn, -3, 3, true, true},
      {"floor", [](const Tensor& x) { return floor(x); }, [](double x) { return std::floor(x); },
       -4, 4, true, true},
      {"ceil", [](const Tensor& x) { return ceil(x); }, [](double x) { return std::ceil(x); }, -4,
       4, true, true},
      {"round", [](const Tensor& x) { return round(x); },
       [](double x) { return std::nearbyint(x); }, -4, 4, true, true},
      {"square", [](const Tensor& x) { return square(x); }, [](double x) { return x * x; }, -5, 5,
       true, false},
  };
}

void check_unary(const UnaryCase& c, DType dtype, const Shape& sizes, Layout layout,
                 uint32_t seed) {
  const std::string what =
      fmt::format("{} {} {} {}", c.name, dtype, shape_str(sizes), layout_name(layout));
  const bool integral = is_integral(dtype);
  std::vector<double> v = sample(numel_of(sizes), c.lo, c.hi, seed, c.quarters);
  if (integral) {
    for (double& x : v) x = std::round(x);
  }
  Tensor x = with_layout(v, sizes, dtype, layout);
  const std::vector<double> in = values(x);  // inputs as stored (rounded to the dtype)
  Tensor y = c.op(x);
  const DType want_dtype = integral && !c.ints ? f32 : dtype;
  ASSERT_EQ(y.dtype(), want_dtype) << what;
  ASSERT_EQ(y.sizes(), sizes) << what;
  std::vector<double> want(in.size());
  for (size_t i = 0; i < in.size(); ++i) want[i] = c.ref(in[i]);
  expect_close(values(y), want, tol_for(want_dtype), what);
}

TEST(ElementwiseUnary, MatchesReferenceForEveryDtypeAndLayout) {
  const Shape shapes[] = {{3, 5}, {2, 3, 4}, {7}, {}, {0, 4}};
  uint32_t seed = 1;
  for (const UnaryCase& c : unary_cases()) {
    for (DType d : {f32, f64, f16, bf16, i64, i32}) {
      for (const Shape& s : shapes) {
        for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Sliced}) {
          check_unary(c, d, s, l, ++seed);
        }
      }
    }
  }
}

TEST(ElementwiseUnary, LargeTensorsUseEveryThread) {
  // > 100k elements: the kernels split the work over OpenMP (a representative few ops).
  for (const UnaryCase& c : unary_cases()) {
    const std::string name = c.name;
    if (name == "exp" || name == "gelu" || name == "clamp" || name == "neg" || name == "silu" ||
        name == "tanh" || name == "sigmoid") {
      check_unary(c, f32, {400, 300}, Layout::Contiguous, 7);
    }
    if (name == "sigmoid" || name == "round") {
      check_unary(c, f64, {300, 400}, Layout::Transposed, 8);
      check_unary(c, f16, {200, 600}, Layout::Sliced, 9);
    }
    if (name == "abs") check_unary(c, i32, {120001}, Layout::Contiguous, 10);
  }
}

// Note [Vectorized sigmoid, SiLU and tanh]: the float32 loops on their approximations keep
// NaN, give the limits at +-inf and stay within float32 rounding of the float64 functions, in a
// dense row-major and a channels-last tensor; a result below float32's normal range (sigmoid and
// silu near -88, where exp underflows) may be 0.
TEST(ElementwiseUnary, SigmoidSiluAndTanhAtTheEdges) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> edges = {std::nan(""), inf,  -inf,  0.0,   -0.0,   1e-30, -1e-30, 1e-7,
                                     -1e-7,        0.3,  -0.3,  0.625, -0.625, 9.0,   -9.0,   20.0,
                                     -20.0,        88.0, -88.0, 100.0, -100.0, -87.5, 87.5,   3.0};
  const std::vector<std::pair<const char*, double (*)(double)>> refs = {
      {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"silu", [](double x) { return x / (1 + std::exp(-x)); }},
      {"tanh", [](double x) { return std::tanh(x); }}};
  for (const auto& [name, ref] : refs) {
    for (bool channels_last : {false, true}) {
      Tensor x = from_vector(edges, {1, 4, 3, 2}, DType::Float64).to(f32);
      if (channels_last) x = x.contiguous(MemoryFormat::ChannelsLast);
      const std::string op = name;
      const Tensor y = op == "sigmoid" ? sigmoid(x) : op == "silu" ? silu(x) : tanh(x);
      const std::vector<double> in = values(x), got = values(y);
      for (size_t i = 0; i < in.size(); ++i) {
        const double want = ref(in[i]);
        const std::string what = fmt::format("{}({}) channels_last {}", op, in[i], channels_last);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got[i])) << what << " = " << got[i];
        } else if (std::isinf(want)) {
          EXPECT_EQ(got[i], want) << what;
        } else {
          EXPECT_NEAR(got[i], want, 1e-6 * std::abs(want) + 1e-35) << what;
        }
      }
    }
  }
}

TEST(ElementwiseUnary, IntegerClampWithBoundsAtTheTypesLimits) {
  // INT64_MAX is 2^63 as the double the kernel receives: the bound saturates at the type's
  // range instead of an undefined cast (values checked against int64 arithmetic by hand).
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  const Tensor x = arange(-3, 4);  // int64
  const std::vector<int64_t> same = {-3, -2, -1, 0, 1, 2, 3};
  const auto ints = [](const Tensor& t) {
    std::vector<int64_t> out;
    for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.select(0, i).item<int64_t>());
    return out;
  };
  EXPECT_EQ(ints(clamp(x, std::nullopt, kMax)), same);
  EXPECT_EQ(ints(clamp(x, kMin, std::nullopt)), same);
  EXPECT_EQ(ints(clamp(x, kMin, kMax)), same);
  EXPECT_EQ(ints(clamp(x, kMax, std::nullopt)), std::vector<int64_t>(7, kMax));
  EXPECT_EQ(ints(clamp(x, std::nullopt, kMin)), std::vector<int64_t>(7, kMin));
  // An int32 tensor with int64 bounds past its range: clamped at int32's limits.
  const Tensor y = x.to(i32);
  EXPECT_EQ(ints(clamp(y, int64_t{1} << 40, std::nullopt).to(DType::Int64)),
            std::vector<int64_t>(7, std::numeric_limits<int32_t>::max()));
  EXPECT_EQ(ints(clamp(y, -(int64_t{1} << 40), int64_t{1} << 40).to(DType::Int64)), same);
}

TEST(ElementwiseUnary, SpecialValues) {
  Tensor x = make({NAN, INFINITY, -INFINITY, 0.0, -0.0}, {5}, f32);
  auto v = [](const Tensor& t) { return values(t); };
  EXPECT_TRUE(std::isnan(v(relu(x))[0]));
  EXPECT_EQ(v(relu(x))[1], INFINITY);
  EXPECT_EQ(v(relu(x))[2], 0);
  EXPECT_TRUE(std::isnan(v(clamp(x, -1, 1))[0]));
  EXPECT_EQ(v(clamp(x, -1, 1))[1], 1);
  EXPECT_TRUE(std::isnan(v(sign(x))[0]));
  EXPECT_EQ(v(sign(x))[2], -1);
  EXPECT_EQ(v(sigmoid(x))[1], 1);
  EXPECT_EQ(v(sigmoid(x))[2], 0);
  EXPECT_EQ(v(exp(x))[2], 0);
  EXPECT_EQ(v(log(x))[3], -INFINITY);
  EXPECT_EQ(v(tanh(make({-100, 100}, {2}, f32))), (std::vector<double>{-1, 1}));
  EXPECT_EQ(v(sigmoid(make({-1000, 1000}, {2}, f64))), (std::vector<double>{0, 1}));
  const std::vector<double> s = v(silu(make({-1000}, {1}, f32)));
  EXPECT_EQ(s[0], 0);
  // Round half to even, like PyTorch.
  EXPECT_EQ(v(round(make({0.5, 1.5, 2.5, -0.5, -1.5, -2.5}, {6}, f32))),
            (std::vector<double>{0, 2, 2, -0, -2, -2}));
  // lo > hi: every element becomes hi, as in PyTorch.
  EXPECT_EQ(v(clamp(make({-5, 0, 5}, {3}, f32), 2, 1)), (std::vector<double>{1, 1, 1}));
  // Integer clamp with float bounds promotes; with integer bounds keeps the dtype.
  Tensor ci = clamp(make({-5, 0, 5}, {3}, i64), -1.5, 2.5);
  EXPECT_EQ(ci.dtype(), f32);
  EXPECT_EQ(v(ci), (std::vector<double>{-1.5, 0, 2.5}));
  EXPECT_EQ(clamp(make({-5, 0, 5}, {3}, i32), -1, 2).dtype(), i32);
  // Bool: abs and sign are the identity, neg is refused.
  Tensor b = make({1, 0}, {2}, boolean);
  EXPECT_EQ(v(abs(b)), (std::vector<double>{1, 0}));
  EXPECT_EQ(v(logical_not(b)), (std::vector<double>{0, 1}));
  EXPECT_EQ(v(logical_not(make({0, 2.5, -1}, {3}, f32))), (std::vector<double>{1, 0, 0}));
  expect_error([&] { neg(b); }, {"[neg]", "bool"});
  expect_error([&] { -b; }, {"[neg]"});
  expect_error([&] { relu(b); }, {"[relu]", "bool"});
  expect_error([&] { gelu(x, "fast"); }, {"[gelu]", "'fast'"});
  expect_error([&] { clamp(x, std::nullopt, std::nullopt); }, {"[clamp]"});
  expect_error([&] { clamp(b, 0, 1); }, {"[clamp]", "bool"});
}

TEST(ElementwiseUnary, InPlaceFormsWriteThroughViews) {
  Tensor base = make(sample(24, -2, 2, 3), {4, 6}, f32);
  const std::vector<double> before = values(base);
  Tensor view = base.t().slice(0, 1, 6, 2);  // rows 1, 3, 5 of the transpose: base columns
  const uint32_t v0 = base.version();
  relu_(view);
  EXPECT_GT(base.version(), v0);
  const std::vector<double> after = values(base);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 6; ++j) {
      const double b = before[i * 6 + j];
      EXPECT_EQ(after[i * 6 + j], j % 2 == 1 ? std::max(b, 0.0) : b) << i << "," << j;
    }
  }
  Tensor x = make({-1, 4, 9}, {3}, f64);
  EXPECT_EQ(values(sqrt_(abs_(neg_(x)))), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(&sqrt_(x), &x);
  Tensor c = make({-3, 0.5, 3}, {3}, f32);
  clamp_(c, -1, 1);
  EXPECT_EQ(values(c), (std::vector<double>{-1, 0.5, 1}));
  Tensor e = make({0, 1}, {2}, f32);
  exp_(e);
  log_(e);
  expect_close(values(e), {0, 1}, tol_for(f32), "exp_ log_");
  tanh_(e);
  sigmoid_(e);
  expect_close(values(e), {0.5, 1 / (1 + std::exp(-std::tanh(1.0)))}, tol_for(f32),
               "tanh_ sigmoid_");
  Tensor i = make({1, 2}, {2}, i64);
  expect_error([&] { exp_(i); }, {"[exp_]", "can't be cast", "int64"});
  expect_error([&] { sqrt_(i); }, {"[sqrt_]"});
  Tensor z = zeros({0, 3});
  EXPECT_EQ(relu_(z).numel(), 0);
}

// ---- binary ops -------------------------------------------------------------------------------

enum class Out { Same, Bool, Float };  // result dtype: the promoted one, bool, or floating

struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  double alo, ahi, blo, bhi;
  Out out;
  bool ints;      // defined on integer inputs
  bool integers;  // sample whole numbers (ties for comparisons, zeros for logic)
};

std::vector<BinaryCase> binary_cases() {
  return {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, std::plus<>(), -10, 10,
       -10, 10, Out::Same, true, false},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, std::minus<>(), -10, 10,
       -10, 10, Out::Same, true, false},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, std::multiplies<>(), -10,
       10, -10, 10, Out::Same, true, false},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, std::divides<>(), -10, 10,
       0.5, 10, Out::Float, true, false},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); },
       [](double a, double b) { return std::pow(a, b); }, 0.25, 3, -2, 3, Out::Same, false, false},
      {"pow_int", [](const Tensor& a, const Tensor& b) { return pow(a, b); },
       [](double a, double b) { return std::pow(a, b); }, -6, 6, 0, 5, Out::Same, true, true},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
       [](double a, double b) { return std::max(a, b); }, -5, 5, -5, 5, Out::Same, true, true},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
       [](double a, double b) { return std::min(a, b); }, -5, 5, -5, 5, Out::Same, true, false},
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); },
       [](double a, double b) { return double(a == b); }, -2, 2, -2, 2, Out::Bool, true, true},
      {"ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); },
       [](double a, double b) { return double(a != b); }, -2, 2, -2, 2, Out::Bool, true, true},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); },
       [](double a, double b) { return double(a < b); }, -2, 2, -2, 2, Out::Bool, true, true},
      {"le", [](const Tensor& a, const Tensor& b) { return le(a, b); },
       [](double a, double b) { return double(a <= b); }, -2, 2, -2, 2, Out::Bool, true, true},
      {"gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); },
       [](double a, double b) { return double(a > b); }, -2, 2, -2, 2, Out::Bool, true, true},
      {"ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); },
       [](double a, double b) { return double(a >= b); }, -2, 2, -2, 2, Out::Bool, true, true},
      {"lt_frac", [](const Tensor& a, const Tensor& b) { return lt(a, b); },
       [](double a, double b) { return double(a < b); }, -2, 2, -2, 2, Out::Bool, false, false},
      {"logical_and", [](const Tensor& a, const Tensor& b) { return logical_and(a, b); },
       [](double a, double b) { return double(a != 0 && b != 0); }, -1, 2, -1, 2, Out::Bool, true,
       true},
      {"logical_or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b); },
       [](double a, double b) { return double(a != 0 || b != 0); }, -1, 2, -1, 2, Out::Bool, true,
       true},
  };
}

struct BinaryShapes {
  Shape a, b;
};

void check_binary(const BinaryCase& c, DType dtype, const BinaryShapes& s, Layout la, Layout lb,
                  uint32_t seed) {
  const std::string what = fmt::format("{} {} {} x {} {}/{}", c.name, dtype, shape_str(s.a),
                                       shape_str(s.b), layout_name(la), layout_name(lb));
  const bool integral = is_integral(dtype);
  std::vector<double> va = sample(numel_of(s.a), c.alo, c.ahi, seed, false);
  std::vector<double> vb = sample(numel_of(s.b), c.blo, c.bhi, seed + 1000, false);
  if (integral || c.integers) {
    for (double& x : va) x = std::round(x);
    for (double& x : vb) x = std::round(x);
  }
  Tensor a = with_layout(va, s.a, dtype, la), b = with_layout(vb, s.b, dtype, lb);
  const std::vector<double> ina = values(a), inb = values(b);
  Tensor y = c.op(a, b);
  const Shape out = broadcast_shapes(s.a, s.b, "test");
  const DType want_dtype = c.out == Out::Bool                ? boolean
                           : c.out == Out::Float && integral ? f32
                                                             : dtype;
  ASSERT_EQ(y.dtype(), want_dtype) << what;
  ASSERT_EQ(y.sizes(), out) << what;
  const int64_t n = numel_of(out);
  std::vector<double> want(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    want[i] = c.ref(ina[bcast_index(out, s.a, i)], inb[bcast_index(out, s.b, i)]);
  }
  expect_close(values(y), want, tol_for(want_dtype), what);
}

const BinaryShapes kBinaryShapes[] = {
    {{3, 4}, {3, 4}},     // same shape
    {{3, 1}, {1, 4}},     // row against column
    {{2, 3, 4}, {4}},     // leading dims
    {{4}, {2, 3, 4}},     // leading dims on the other side
    {{3, 4}, {}},         // 0-d
    {{}, {3, 4}},         //
    {{}, {}},             // both 0-d
    {{2, 1, 4}, {3, 1}},  // both broadcast
    {{0, 4}, {1, 4}},     // zero-size
    {{0}, {}},            //
    {{3, 0}, {3, 0}},     //
};

TEST(ElementwiseBinary, MatchesReferenceWithBroadcasting) {
  uint32_t seed = 100;
  for (const BinaryCase& c : binary_cases()) {
    for (DType d : {f32, f64, f16, bf16, i64, i32}) {
      if (is_integral(d) && !c.ints) continue;
      for (const BinaryShapes& s : kBinaryShapes)
        check_binary(c, d, s, Layout::Contiguous, Layout::Contiguous, ++seed);
    }
  }
}

TEST(ElementwiseBinary, NonContiguousInputs) {
  uint32_t seed = 5000;
  const BinaryShapes shapes[] = {{{5, 6}, {5, 6}}, {{2, 3, 4}, {3, 4}}, {{4, 1}, {4, 6}}};
  for (const BinaryCase& c : binary_cases()) {
    for (DType d : {f32, f64, f16, bf16, i64, i32}) {
      if (is_integral(d) && !c.ints) continue;
      for (const BinaryShapes& s : shapes) {
        check_binary(c, d, s, Layout::Transposed, Layout::Contiguous, ++seed);
        check_binary(c, d, s, Layout::Contiguous, Layout::Sliced, ++seed);
        check_binary(c, d, s, Layout::Sliced, Layout::Transposed, ++seed);
      }
    }
  }
}

TEST(ElementwiseBinary, LargeTensors) {
  // > 100k output elements: the OpenMP path, including broadcast and strided inputs.
  for (const BinaryCase& c : binary_cases()) {
    const std::string name = c.name;
    if (name == "mul" || name == "div" || name == "pow" || name == "ge") {
      check_binary(c, f32, {{500, 250}, {500, 250}}, Layout::Contiguous, Layout::Contiguous, 1);
    }
    if (name == "add" || name == "minimum" || name == "logical_or") {
      check_binary(c, f32, {{500, 250}, {250}}, Layout::Transposed, Layout::Contiguous, 2);
    }
    if (name == "sub" || name == "lt") {
      check_binary(c, f64, {{300, 1}, {1, 400}}, Layout::Contiguous, Layout::Sliced, 3);
      check_binary(c, bf16, {{2, 300, 200}, {300, 1}}, Layout::Sliced, Layout::Contiguous, 4);
      check_binary(c, i64, {{400, 300}, {400, 300}}, Layout::Sliced, Layout::Transposed, 5);
    }
  }
}

TEST(ElementwiseBinary, MaximumMinimumPropagateNan) {
  Tensor a = make({NAN, 1, 2}, {3}, f32), b = make({0, NAN, 1}, {3}, f32);
  const std::vector<double> mx = values(maximum(a, b)), mn = values(minimum(a, b));
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]));
  EXPECT_TRUE(std::isnan(mn[0]) && std::isnan(mn[1]));
  EXPECT_EQ(mx[2], 2);
  EXPECT_EQ(mn[2], 1);
  EXPECT_EQ(values(eq(a, a)), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(values(ne(a, a)), (std::vector<double>{1, 0, 0}));
}

TEST(ElementwiseBinary, IntegerPowAndDivision) {
  Tensor base = make({2, -3, 1, -1, 0, 5}, {6}, i64);
  EXPECT_EQ(values(pow(base, 3)), (std::vector<double>{8, -27, 1, -1, 0, 125}));
  EXPECT_EQ(pow(base, 3).dtype(), i64);
  EXPECT_EQ(values(pow(base, make({-1, -2, -3, -3, 0, 0}, {6}, i64))),
            (std::vector<double>{0, 0, 1, -1, 1, 1}));
  EXPECT_EQ(values(pow(make({3}, {1}, i64), 39)), (std::vector<double>{4052555153018976267.0}));
  EXPECT_EQ(pow(make({3}, {1}, i64), 39).data_ptr<int64_t>()[0], 4052555153018976267LL);
  Tensor q = div(make({1, -7, 6}, {3}, i32), make({2, 2, 3}, {3}, i32));
  EXPECT_EQ(q.dtype(), f32);
  EXPECT_EQ(values(q), (std::vector<double>{0.5, -3.5, 2}));
  // Division by zero follows IEEE.
  const std::vector<double> dz = values(div(make({1, -1, 0}, {3}, i64), make({0, 0, 0}, {3}, i64)));
  EXPECT_EQ(dz[0], INFINITY);
  EXPECT_EQ(dz[1], -INFINITY);
  EXPECT_TRUE(std::isnan(dz[2]));
  EXPECT_EQ(values(pow(make({4, 9}, {2}, f32), 0.5)), (std::vector<double>{2, 3}));
}

// Note [Integer overflow wraps]: integer arithmetic wraps modulo 2^bits, as in PyTorch.
TEST(ElementwiseBinary, IntegerOverflowWraps) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  Tensor a = make({0, 0, 0}, {3}, i64), b = make({1, 1, 2}, {3}, i64);
  int64_t* pa = a.data_ptr<int64_t>();
  pa[0] = kMax;
  pa[1] = kMin;
  pa[2] = kMax;
  auto ints = [](const Tensor& t) {
    const Tensor c = t.contiguous();
    return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
  };
  EXPECT_EQ(ints(add(a, b)), (std::vector<int64_t>{kMin, kMin + 1, kMin + 1}));
  EXPECT_EQ(ints(sub(b, a)), (std::vector<int64_t>{kMin + 2, kMin + 1, kMin + 3}));
  EXPECT_EQ(ints(sub(a, b)), (std::vector<int64_t>{kMax - 1, kMax, kMax - 2}));
  EXPECT_EQ(ints(mul(a, b)), (std::vector<int64_t>{kMax, kMin, -2}));
  EXPECT_EQ(ints(neg(a)), (std::vector<int64_t>{-kMax, kMin, -kMax}));
  EXPECT_EQ(ints(abs(a)), (std::vector<int64_t>{kMax, kMin, kMax}));
  EXPECT_EQ(ints(add(a, 1)), (std::vector<int64_t>{kMin, kMin + 1, kMin}));
  EXPECT_EQ(ints(pow(a, 2)), (std::vector<int64_t>{1, 0, 1}));
  // int32: 65536 * 65536 is 2^32, which wraps to 0; 46341^2 wraps negative.
  Tensor c = make({65536, 46341, -2147483648.0}, {3}, i32);
  const Tensor sq = mul(c, c), ng = neg(c);
  EXPECT_EQ(sq.data_ptr<int32_t>()[0], 0);
  EXPECT_EQ(sq.data_ptr<int32_t>()[1], static_cast<int32_t>(46341LL * 46341LL - (1LL << 32)));
  EXPECT_EQ(ng.data_ptr<int32_t>()[2], std::numeric_limits<int32_t>::min());
  // int8 promotes before it multiplies, then wraps.
  EXPECT_EQ(values(mul(make({100, -128}, {2}, i8), make({3, -1}, {2}, i8))),
            (std::vector<double>{44, -128}));
}

TEST(ElementwiseBinary, Where) {
  const Shape shapes[][3] = {
      {{3, 4}, {3, 4}, {3, 4}}, {{3, 1}, {1, 4}, {}}, {{4}, {3, 1}, {2, 1, 1}}, {{0, 4}, {4}, {}}};
  uint32_t seed = 77;
  for (DType d : {f32, f64, f16, bf16, i64, i32, boolean}) {
    for (const auto& s : shapes) {
      const std::string what =
          fmt::format("where {} {} {} {}", d, shape_str(s[0]), shape_str(s[1]), shape_str(s[2]));
      std::vector<double> vc = sample(numel_of(s[0]), 0, 1, ++seed);
      for (double& x : vc) x = x < 0.5;
      std::vector<double> va = sample(numel_of(s[1]), -5, 5, ++seed),
                          vb = sample(numel_of(s[2]), -5, 5, ++seed);
      if (d != f32 && d != f64) {
        for (double& x : va) x = std::round(x);
        for (double& x : vb) x = std::round(x);
      }
      Tensor cond = make(vc, s[0], boolean);
      Tensor a = with_layout(va, s[1], d, Layout::Transposed), b = make(vb, s[2], d);
      const std::vector<double> ina = values(a), inb = values(b);
      Tensor y = where(cond, a, b);
      const Shape out = broadcast_shapes(broadcast_shapes(s[0], s[1], "t"), s[2], "t");
      ASSERT_EQ(y.sizes(), out) << what;
      ASSERT_EQ(y.dtype(), d) << what;
      std::vector<double> want(static_cast<size_t>(numel_of(out)));
      for (int64_t i = 0; i < numel_of(out); ++i) {
        want[i] = vc[bcast_index(out, s[0], i)] != 0 ? ina[bcast_index(out, s[1], i)]
                                                     : inb[bcast_index(out, s[2], i)];
      }
      EXPECT_EQ(values(y), want) << what;
    }
  }
  // Mixed dtypes promote; a scalar `other` keeps the tensor's dtype.
  Tensor cond = make({1, 0}, {2}, boolean);
  EXPECT_EQ(where(cond, make({1, 2}, {2}, i64), make({0.5, 0.5}, {2}, f32)).dtype(), f32);
  Tensor ws = where(cond, make({1, 2}, {2}, f16), 7);
  EXPECT_EQ(ws.dtype(), f16);
  EXPECT_EQ(values(ws), (std::vector<double>{1, 7}));
  EXPECT_EQ(where(cond, make({1, 2}, {2}, i64), 2.5).dtype(), f32);
  Tensor big = make(sample(120000, -1, 1, 3), {120000}, f32);
  Tensor wb = where(gt(big, 0.0), big, 0.0);
  expect_close(values(wb), values(relu(big)), {0, 0}, "where large");
  expect_error(
      [&] {
        where(make({1, 0}, {2}, i64), cond, cond);
      },
      {"[where]", "condition must be bool", "int64"});
  expect_error([&] { where(cond, zeros({3}), zeros({2})); }, {"[where]", "cannot be broadcast"});
}

// ---- type promotion ---------------------------------------------------------------------------

TEST(ElementwisePromotion, FollowsPyTorchRules) {
  Tensor i64t = make({1, 2}, {2}, i64), i32t = make({1, 2}, {2}, i32),
         f32t = make({1, 2}, {2}, f32);
  Tensor f16t = make({1, 2}, {2}, f16), bf16t = make({1, 2}, {2}, bf16),
         bt = make({1, 0}, {2}, boolean);
  Tensor u8t = make({1, 2}, {2}, u8), i8t = make({1, 2}, {2}, i8);
  EXPECT_EQ(add(i64t, f32t).dtype(), f32);
  EXPECT_EQ(add(f32t, i64t).dtype(), f32);
  EXPECT_EQ(add(i32t, i64t).dtype(), i64);
  EXPECT_EQ(add(f16t, f32t).dtype(), f32);
  EXPECT_EQ(add(f16t, bf16t).dtype(), f32);
  EXPECT_EQ(add(f16t, i64t).dtype(), f16);
  EXPECT_EQ(add(bt, i32t).dtype(), i32);
  EXPECT_EQ(add(u8t, i8t).dtype(), i32);  // no int16 here: the next signed type up
  EXPECT_EQ(values(add(i64t, f32t)), (std::vector<double>{2, 4}));
  // Python-like scalars.
  Tensor s = add(i64t, 2.5);
  EXPECT_EQ(s.dtype(), f32);
  EXPECT_EQ(values(s), (std::vector<double>{3.5, 4.5}));
  EXPECT_EQ(add(i32t, 2).dtype(), i32);
  EXPECT_EQ(add(u8t, 2).dtype(), u8);
  EXPECT_EQ(add(f16t, 2.5).dtype(), f16);
  EXPECT_EQ(add(bt, 1).dtype(), i64);
  EXPECT_EQ(add(bt, true).dtype(), boolean);
  EXPECT_EQ(mul(bt, 1.5).dtype(), f32);
  // 0-d tensors only raise the category.
  Tensor f64_0d = make({0.5}, {}, f64);
  Tensor r = add(f32t, f64_0d);
  EXPECT_EQ(r.dtype(), f32);
  EXPECT_EQ(values(r), (std::vector<double>{1.5, 2.5}));
  EXPECT_EQ(add(f64_0d, f32t).dtype(), f32);
  EXPECT_EQ(add(i32t, f64_0d).dtype(), f64);  // higher category: the 0-d dtype
  EXPECT_EQ(add(i32t, make({3}, {}, i64)).dtype(), i32);
  EXPECT_EQ(add(make({3}, {}, f32), f64_0d).dtype(), f64);  // both 0-d: plain promotion
  // bool + bool stays bool (logical or); bool * bool is and.
  Tensor b2 = make({1, 1}, {2}, boolean);
  Tensor bb = add(bt, b2);
  EXPECT_EQ(bb.dtype(), boolean);
  EXPECT_EQ(values(bb), (std::vector<double>{1, 1}));
  EXPECT_EQ(values(mul(bt, b2)), (std::vector<double>{1, 0}));
  expect_error([&] { sub(bt, b2); }, {"[sub]", "bool", "logical_not"});
  EXPECT_EQ((1 - bt).dtype(), i64);  // an integer scalar lifts bool to int64 first
  EXPECT_EQ(values(1 - bt), (std::vector<double>{0, 1}));
  expect_error([&] { pow(bt, b2); }, {"[pow]", "bool"});
  // True division of integers gives the default float dtype.
  Tensor q = div(make({1, 2, 3}, {3}, i64), make({2, 2, 2}, {3}, i64));
  EXPECT_EQ(q.dtype(), f32);
  EXPECT_EQ(values(q), (std::vector<double>{0.5, 1, 1.5}));
  EXPECT_EQ(div(bt, bt).dtype(), f32);
  EXPECT_EQ(div(i32t, 2).dtype(), f32);
  EXPECT_EQ(div(f16t, 2).dtype(), f16);
  // Comparisons always give bool, whatever the mix.
  EXPECT_EQ(lt(i64t, f32t).dtype(), boolean);
  EXPECT_EQ(values(lt(i64t, 1.5)), (std::vector<double>{1, 0}));
  EXPECT_EQ(values(eq(i32t, 2)), (std::vector<double>{0, 1}));
  // Transcendentals promote integers and bool to float32.
  EXPECT_EQ(exp(i64t).dtype(), f32);
  EXPECT_EQ(sqrt(bt).dtype(), f32);
  EXPECT_EQ(sigmoid(u8t).dtype(), f32);
  EXPECT_EQ(neg(i8t).dtype(), i8);
}

TEST(ElementwiseScalar, OperatorsWithScalarsOnEitherSide) {
  Tensor x = make({1, 2, 4}, {3}, f32);
  EXPECT_EQ(values(2 - x), (std::vector<double>{1, 0, -2}));
  EXPECT_EQ(values(1 / x), (std::vector<double>{1, 0.5, 0.25}));
  EXPECT_EQ(values(x - 1), (std::vector<double>{0, 1, 3}));
  EXPECT_EQ(values(x / 2), (std::vector<double>{0.5, 1, 2}));
  EXPECT_EQ(values(3 + x), (std::vector<double>{4, 5, 7}));
  EXPECT_EQ(values(x * 0.5), (std::vector<double>{0.5, 1, 2}));
  EXPECT_EQ(values(2 * x), (std::vector<double>{2, 4, 8}));
  EXPECT_EQ(values(-x), (std::vector<double>{-1, -2, -4}));
  EXPECT_EQ(values(x + x * x - x / x), (std::vector<double>{1, 5, 19}));
  Tensor i = make({1, 2, 4}, {3}, i64);
  Tensor r = 1 / i;
  EXPECT_EQ(r.dtype(), f32);
  EXPECT_EQ(values(r), (std::vector<double>{1, 0.5, 0.25}));
  EXPECT_EQ((2 - i).dtype(), i64);
  EXPECT_EQ(values(2 - i), (std::vector<double>{1, 0, -2}));
  EXPECT_EQ((2.5 - i).dtype(), f32);
  EXPECT_EQ((i * 2).dtype(), i64);
  Tensor h = make({1, 2}, {2}, f16);
  EXPECT_EQ((1 / h).dtype(), f16);
  EXPECT_EQ(values(1 / h), (std::vector<double>{1, 0.5}));
  EXPECT_EQ(values(pow(x, 2)), (std::vector<double>{1, 4, 16}));
  EXPECT_EQ(values(maximum(x, make({3}, {}, f32))), (std::vector<double>{3, 3, 4}));
  EXPECT_EQ(values(ge(x, 2)), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(values(ne(x, 2)), (std::vector<double>{1, 0, 1}));
}

// ---- in-place ---------------------------------------------------------------------------------

TEST(ElementwiseInPlace, ComputesIntoTheFirstOperand) {
  Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3}, f32);
  const void* p = a.data_ptr();
  add_(a, make({10, 20, 30}, {3}, f32));
  EXPECT_EQ(a.data_ptr(), p);
  EXPECT_EQ(values(a), (std::vector<double>{11, 22, 33, 14, 25, 36}));
  sub_(a, 1);
  mul_(a, make({2}, {}, f64));  // a 0-d float64 operand does not change a's dtype
  EXPECT_EQ(a.dtype(), f32);
  EXPECT_EQ(values(a), (std::vector<double>{20, 42, 64, 26, 48, 70}));
  div_(a, 2);
  EXPECT_EQ(values(a), (std::vector<double>{10, 21, 32, 13, 24, 35}));
  a += make({1, 1, 1}, {3}, i64);  // int into float is fine
  a -= make({1}, {1}, f32);
  a *= make({2, 3, 4, 5, 6, 7}, {2, 3}, f32).t().contiguous().t();
  a /= make({2}, {1}, f32);
  EXPECT_EQ(values(a), (std::vector<double>{10, 31.5, 64, 32.5, 72, 122.5}));
  // Through a non-contiguous view: only the viewed elements change.
  Tensor base = zeros({3, 4}, f64);
  Tensor col = base.t().select(0, 2);  // column 2
  add_(col, make({1, 2, 3}, {3}, f64));
  EXPECT_EQ(values(base), (std::vector<double>{0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0}));
  Tensor strided = base.slice(1, 0, 4, 2);
  mul_(strided, 0.5);
  add_(strided, 1);
  EXPECT_EQ(values(base), (std::vector<double>{1, 0, 1.5, 0, 1, 0, 2, 0, 1, 0, 2.5, 0}));
  // Integer tensors take integer operands.
  Tensor i = make({1, 2, 3}, {3}, i32);
  add_(i, 5);
  mul_(i, make({2, 2, 2}, {3}, i64));
  EXPECT_EQ(i.dtype(), i32);
  EXPECT_EQ(values(i), (std::vector<double>{12, 14, 16}));
  // Half types.
  Tensor h = make({1, 2}, {2}, bf16);
  add_(h, 0.5);
  EXPECT_EQ(values(h), (std::vector<double>{1.5, 2.5}));
  // Zero-size.
  Tensor z = zeros({0, 3});
  add_(z, make({1, 2, 3}, {3}, f32));
  EXPECT_EQ(z.numel(), 0);
  // Large, over the thread pool.
  Tensor big = make(sample(150000, -1, 1, 9), {300, 500}, f32);
  const std::vector<double> before = values(big);
  mul_(big, 2);
  const std::vector<double> after = values(big);
  for (size_t k = 0; k < before.size(); ++k) ASSERT_EQ(after[k], before[k] * 2);
}

TEST(ElementwiseInPlace, RefusesWhatCannotBeStored) {
  Tensor i = make({1, 2}, {2}, i64);
  expect_error([&] { add_(i, 2.5); }, {"[add_]", "result type float32", "can't be cast", "int64"});
  expect_error([&] { add_(i, make({1, 2}, {2}, f32)); }, {"[add_]", "can't be cast"});
  expect_error([&] { div_(i, 2); }, {"[div_]", "can't be cast"});
  expect_error([&] { i /= make({2, 2}, {2}, i64); }, {"[div_]"});
  Tensor b = make({1, 0}, {2}, boolean);
  expect_error([&] { add_(b, 1); }, {"[add_]", "int64", "bool"});
  expect_error([&] { sub_(b, make({1, 0}, {2}, boolean)); }, {"[sub_]", "bool"});
  expect_error([&] { neg_(b); }, {"[neg_]", "bool"});
  expect_error([&] { clamp_(i, 0.5, 1.5); }, {"[clamp_]", "float32", "int64"});
  clamp_(i, 0, 1);
  EXPECT_EQ(values(i), (std::vector<double>{1, 1}));
  i.copy_(make({1, 2}, {2}, i64));
  EXPECT_EQ(values(i), (std::vector<double>{1, 2}));  // untouched
  Tensor f = zeros({3});
  expect_error(
      [&] {
        add_(f, zeros({2, 3}));
      },
      {"[add_]", "output with shape [3] doesn't match the broadcast shape [2, 3]"});
  expect_error([&] { mul_(f, zeros({4})); }, {"[mul_]", "cannot be broadcast"});
  Tensor m = zeros({2, 1});
  expect_error([&] { m += zeros({2, 3}); }, {"[add_]", "doesn't match the broadcast shape"});
  const uint32_t v = f.version();
  try {
    add_(f, zeros({2, 3}));
  } catch (const Error&) {
  }
  EXPECT_EQ(f.version(), v);  // a refused op writes nothing
}

// ---- errors -----------------------------------------------------------------------------------

TEST(Elementwise, AddBroadcastsRowAgainstColumn) {
  Tensor a = tensor({{1.0}, {2.0}});
  Tensor b = tensor({10.0, 20.0, 30.0});
  Tensor c = add(a, b);
  ASSERT_EQ(c.sizes(), Shape({2, 3}));
  const float expected[] = {11, 21, 31, 12, 22, 32};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c.data_ptr<float>()[i], expected[i]);
}

TEST(Elementwise, MismatchedShapesThrowWithBothShapes) {
  try {
    add(zeros({2, 3}), zeros({4}));
    FAIL() << "expected ember::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[add] shapes [2, 3] and [4] cannot be broadcast"),
              std::string::npos)
        << e.what();
  }
  expect_error([] { mul(zeros({3, 2}), zeros({2, 3})); }, {"[mul]", "[3, 2]", "[2, 3]"});
  expect_error([] { lt(zeros({5}), zeros({0})); }, {"[lt]", "cannot be broadcast"});
  expect_error([] { zeros({2}) + zeros({3}); }, {"[add]"});
  expect_error([] { add(Tensor(), zeros({1})); }, {"[add]", "undefined"});
  expect_error([] { exp(Tensor()); }, {"[exp]", "undefined"});
}

// ---- integer arithmetic is exact, bad numbers are refused
// ----------------------------------------

// The CPU and the reference backend, which must agree on every element semantics.
std::vector<Device> cpu_and_reference() {
  init();  // discovery is lazy: find_device_type alone would not run it
  return {Device::cpu(), Device(find_device_type("reference"), 0)};
}

/** The int64 elements of t, read exactly (values() goes through double). */
std::vector<int64_t> int64s(const Tensor& t) {
  const Tensor c = t.to(Device::cpu()).to(DType::Int64).contiguous();
  const int64_t* p = static_cast<const int64_t*>(c.data_ptr());
  return std::vector<int64_t>(p, p + c.numel());
}

TEST(ElementwiseUnary, AbsClearsTheSignBitOfEveryFloat) {
  // abs(-0.0) is +0.0 and abs(-NaN) a NaN without its sign, as fabs and PyTorch give; a
  // compare-and-negate form keeps both signs.
  for (const Device d : cpu_and_reference()) {
    for (const DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      SCOPED_TRACE(d.str() + " " + std::string(dtype_name(dt)));
      const Tensor x = tensor({-0.0, 0.0, -NAN, -INFINITY, -2.5}, DType::Float64).to(dt).to(d);
      const std::vector<double> got = values(abs(x));
      for (size_t i = 0; i < got.size(); ++i) EXPECT_FALSE(std::signbit(got[i])) << i;
      EXPECT_TRUE(std::isnan(got[2]));
      EXPECT_EQ(got[3], INFINITY);
      EXPECT_EQ(got[4], 2.5);
    }
  }
}

TEST(ElementwiseUnary, PositiveIsTheTensorAndSgnTheSign) {
  const Tensor x = tensor({-2.0, 0.0, 3.0});
  EXPECT_TRUE(positive(x).is_same(x));
  EXPECT_EQ(values(sgn(x)), (std::vector<double>{-1, 0, 1}));
  expect_error([] { positive(tensor({1}, DType::Bool)); }, {"[positive]", "bool"});
}

TEST(IntegerDivision, RoundsTowardMinusInfinityOrZeroExactly) {
  constexpr int64_t kBig = (int64_t{1} << 62) + 1;  // not a double
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  for (const Device d : cpu_and_reference()) {
    SCOPED_TRACE(d.str());
    const Tensor a = tensor({7, -7, 7, -7, 6, kBig, kMin, kMin}, DType::Int64).to(d);
    const Tensor b = tensor({2, 2, -2, -2, 3, 1, -1, 1}, DType::Int64).to(d);
    // Python's //: -7 // 2 == -4; C's /: -7 / 2 == -3; INT64_MIN // -1 wraps as in PyTorch.
    EXPECT_EQ(int64s(floor_divide(a, b)),
              (std::vector<int64_t>{3, -4, -4, 3, 2, kBig, kMin, kMin}));
    EXPECT_EQ(int64s(div(a, b, "trunc")),
              (std::vector<int64_t>{3, -3, -3, 3, 2, kBig, kMin, kMin}));
    EXPECT_EQ(floor_divide(a, b).dtype(), DType::Int64);
    EXPECT_EQ(int64s(floor_divide(tensor({kBig}, DType::Int64).to(d), 1)),
              (std::vector<int64_t>{kBig}));
    // Narrow integers keep their dtype and their values.
    const Tensor i8 = tensor({-128, 127, -5}, DType::Int8).to(d);
    EXPECT_EQ(floor_divide(i8, 2).dtype(), DType::Int8);
    EXPECT_EQ(values(floor_divide(i8, 2)), (std::vector<double>{-64, 63, -3}));
    EXPECT_EQ(values(div(tensor({250, 7}, DType::UInt8).to(d), 3, "trunc")),
              (std::vector<double>{83, 2}));
  }
}

TEST(IntegerDivision, FloatingFloorDivisionIsPythons) {
  for (const Device d : cpu_and_reference()) {
    SCOPED_TRACE(d.str());
    // Python: 1 // 0.1 == 9.0 (floor(1 / 0.1) would be 10), -1 // 0.1 == -10, 7.5 // -2 == -4.
    const Tensor a = tensor({1.0, -1.0, 7.5, -0.0, 5.0}, DType::Float64).to(d);
    const Tensor b = tensor({0.1, 0.1, -2.0, 3.0, 0.0}, DType::Float64).to(d);
    const std::vector<double> f = values(floor_divide(a, b));
    EXPECT_EQ(f[0], 9.0);
    EXPECT_EQ(f[1], -10.0);
    EXPECT_EQ(f[2], -4.0);
    EXPECT_TRUE(f[3] == 0.0 && std::signbit(f[3]));
    EXPECT_TRUE(std::isinf(f[4]));
    EXPECT_EQ(values(div(a, b, "trunc"))[2], -3.0);
    EXPECT_EQ(div(tensor({7}, DType::Int64), 2.0, "floor").dtype(), default_dtype());
  }
}

TEST(IntegerDivision, ByZeroIsAZeroDivisionError) {
  const Tensor a = tensor({5, -7}, DType::Int64);
  const Tensor zero = tensor({0, 1}, DType::Int64);
  for (const auto& fn : std::vector<std::function<Tensor()>>{
           [&] { return floor_divide(a, 0); },
           [&] { return floor_divide(a, zero); },
           [&] { return div(a, zero, "trunc"); },
           [&] { return div(a, 0, "floor"); },
           [&] { return remainder(a, zero); },
           [&] { return fmod(a, 0); },
       }) {
    EXPECT_THROW(fn(), ZeroDivisionError);
  }
  expect_error([&] { floor_divide(a, 0); }, {"[floor_divide]", "integer division by zero"});
  // A ZeroDivisionError is a ValueError, and floating division by zero gives inf or NaN.
  EXPECT_THROW(floor_divide(a, 0), ValueError);
  EXPECT_TRUE(std::isinf(values(floor_divide(a.to(DType::Float32), 0))[0]));
  expect_error([&] { div(a, a, "round"); }, {"[div]", "rounding_mode", "'round'"});
}

TEST(IntegerPow, NegativeIntegerExponentNumberIsRefused) {
  const Tensor a = tensor({2, -1, 1}, DType::Int64);
  expect_error([&] { pow(a, -1); }, {"[pow]", "negative integer powers"});
  // As in PyTorch, an exponent tensor is elementwise: 0 except for the bases 1 and -1.
  EXPECT_EQ(values(pow(a, tensor({-1}, DType::Int64))), (std::vector<double>{0, -1, 1}));
  EXPECT_EQ(values(pow(a, -1.0)), (std::vector<double>{0.5, -1, 1}));
  EXPECT_EQ(int64s(pow(tensor({3}, DType::Int64), 39)),
            (std::vector<int64_t>{4052555153018976267}));
}

TEST(Alpha, ScalesInTheResultDtype) {
  constexpr int64_t kBig = (int64_t{1} << 62) + 1;
  const Tensor one = tensor({1}, DType::Int64);
  EXPECT_EQ(add(one, 3, 2).dtype(), DType::Int64);
  EXPECT_EQ(int64s(add(one, 3, 2)), (std::vector<int64_t>{7}));
  EXPECT_EQ(int64s(sub(tensor({kBig}, DType::Int64), 1, 2)), (std::vector<int64_t>{kBig - 2}));
  EXPECT_EQ(int64s(add(tensor({kBig}, DType::Int64), tensor({1}, DType::Int64), 2)),
            (std::vector<int64_t>{kBig + 2}));
  // int32 + int64 with alpha scales in int64, without an int32 overflow.
  EXPECT_EQ(int64s(add(tensor({0}, DType::Int64), tensor({1 << 30}, DType::Int32), 4)),
            (std::vector<int64_t>{int64_t{1} << 32}));
  EXPECT_EQ(values(add(tensor({1.0}), tensor({2.0}), 0.5)), (std::vector<double>{2.0}));
  Tensor t = tensor({10}, DType::Int64);
  sub_(t, 3, 2);
  EXPECT_EQ(int64s(t), (std::vector<int64_t>{4}));
  add_(t, tensor({1}, DType::Int64), -4);
  EXPECT_EQ(int64s(t), (std::vector<int64_t>{0}));
  expect_error([&] { add(one, one, 0.5); }, {"[add]", "alpha must not be a floating point"});
  expect_error([&] { add(one, one, true); }, {"[add]", "bool alpha"});
}

TEST(Clamp, IntegerBoundsAreExact) {
  constexpr int64_t kBig = (int64_t{1} << 62) + 1;
  for (const Device d : cpu_and_reference()) {
    SCOPED_TRACE(d.str());
    const Tensor x = tensor({kBig, 3, -kBig}, DType::Int64).to(d);
    EXPECT_EQ(int64s(clamp(x, kBig + 2, std::nullopt)),
              (std::vector<int64_t>{kBig + 2, kBig + 2, kBig + 2}));
    EXPECT_EQ(int64s(clamp(x, -kBig + 1, kBig - 2)),
              (std::vector<int64_t>{kBig - 2, 3, -kBig + 1}));
    // Bounds beyond a narrow dtype saturate.
    EXPECT_EQ(values(clamp(tensor({-5, 100}, DType::Int8).to(d), -1000, 1000)),
              (std::vector<double>{-5, 100}));
    EXPECT_EQ(values(clamp(tensor({5, 200}, DType::UInt8).to(d), -1, 300)),
              (std::vector<double>{5, 200}));
  }
}

TEST(ScalarsThatDoNotFit, AreRefusedWhereANumberBecomesAnElement) {
  expect_error([] { full({2}, 300, DType::UInt8); },
               {"[full]", "value 300 cannot be converted to type uint8 without overflow"});
  expect_error([] { zeros({2}, DType::Int64).fill_(std::nan("")); }, {"[fill_]", "nan", "int64"});
  expect_error([] { full({1}, 1e40, DType::Float32); }, {"[full]", "float32"});
  expect_error([] { full({1}, 70000, DType::Float16); }, {"[full]", "float16"});
  expect_error([] { full({1}, std::numeric_limits<double>::infinity(), DType::Int32); },
               {"[full]", "int32"});
  expect_error([] { full({1}, int64_t{1} << 40, DType::Int32); }, {"[full]", "int32"});
  Tensor u8 = zeros({2}, DType::UInt8);
  expect_error([&] { add_(u8, 300); }, {"[add_]", "uint8"});
  expect_error([&] { masked_fill_(u8, ones({2}, DType::Bool), 256); }, {"[masked_fill_]"});
  expect_error([&] { masked_fill(u8, ones({2}, DType::Bool), -256); }, {"[masked_fill]"});
  // What fits: PyTorch's rule, uint8 takes -1 (it wraps to 255), floats take inf and NaN.
  EXPECT_EQ(values(full({1}, -1, DType::UInt8)), (std::vector<double>{255}));
  EXPECT_EQ(values(full({1}, 2.9, DType::Int8)), (std::vector<double>{2}));
  EXPECT_TRUE(std::isinf(values(full({1}, INFINITY, DType::Float16))[0]));
  EXPECT_TRUE(std::isnan(values(full({1}, NAN, DType::Float32))[0]));
  EXPECT_EQ(values(full({1}, 1e300, DType::Bool)), (std::vector<double>{1}));
  EXPECT_EQ(int64s(full({1}, std::numeric_limits<int64_t>::max(), DType::Int64)),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max()}));
  // Out-of-place arithmetic with a number wraps, as in PyTorch.
  EXPECT_EQ(values(add(ones({1}, DType::UInt8), 300)), (std::vector<double>{45}));
  // A floating element read as an integer.
  expect_error([] { full(IntList{}, NAN).item<int64_t>(); }, {"[item]", "nan"});
  EXPECT_EQ(full(IntList{}, -2.5).item<int64_t>(), -2);
}

TEST(AccurateUnary, Expm1Log2Log10Exp2MatchFloat64) {
  for (const Device d : cpu_and_reference()) {
    SCOPED_TRACE(d.str());
    const std::vector<double> xs = {1e-8, -1e-7, 1e-30, 0.5, -3.0};
    const Tensor x = from_vector(xs, {5}, DType::Float64).to(DType::Float32).to(d);
    const std::vector<double> got = values(expm1(x));
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = std::expm1(static_cast<double>(static_cast<float>(xs[i])));
      EXPECT_NEAR(got[i], want, 2e-7 * std::abs(want)) << xs[i];
    }
    // exp(x) - 1 would give 0 here.
    EXPECT_GT(values(expm1(tensor({1e-8f}).to(d)))[0], 0.0);
    const Tensor p = tensor({8.0, 1024.0, 1e-3, 1000.0}, DType::Float32).to(d);
    EXPECT_EQ(values(log2(p))[0], 3.0);
    EXPECT_EQ(values(log2(p))[1], 10.0);
    EXPECT_EQ(values(log10(p))[3], 3.0);
    EXPECT_NEAR(values(log10(p))[2], -3.0, 1e-6);
    EXPECT_EQ(values(exp2(tensor({3.0, 10.0, -1.0}, DType::Float32).to(d))),
              (std::vector<double>{8.0, 1024.0, 0.5}));
    // ELU's negative side is an expm1 too.
    EXPECT_NEAR(values(elu(tensor({-1e-8f}).to(d)))[0], -1e-8, 1e-15);
    EXPECT_EQ(expm1(tensor({1}, DType::Int64)).dtype(), default_dtype());
  }
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

TEST(ApplyInplace, WritesTheResultKeepingDtypeAndShape) {
  Tensor x = testing::make({0.5, -1.0, 2.0}, {3}, DType::Float32);
  const Tensor want = sin(x);
  Tensor& r = apply_inplace(x, "sin_", [](const Tensor& v) { return sin(v); });
  EXPECT_TRUE(r.is_same(x));
  EXPECT_EQ(testing::values(x), testing::values(want));
  Tensor i = testing::make({1, 2, 3}, {3}, DType::Int64);
  testing::expect_error(
      [&] { apply_inplace(i, "sin_", [](const Tensor& v) { return sin(v); }); },
      {"[sin_] result type float32 can't be cast to the desired output type int64"});
  EXPECT_EQ(testing::values(i), (std::vector<double>{1, 2, 3}));
  apply_inplace(i, "eq_", [](const Tensor& v) { return eq(v, Scalar(2)); });
  EXPECT_EQ(testing::values(i), (std::vector<double>{0, 1, 0}));
  testing::expect_error([&] { apply_inplace(x, "sum_", [](const Tensor& v) { return sum(v); }); },
                        {"[sum_] output with shape [3] doesn't match the broadcast shape []"});
}

TEST(ApplyInplace, IsRecordedByAutograd) {
  const Tensor w = testing::make({0.5, 1.0}, {2}, DType::Float64).requires_grad_();
  Tensor leaf = w;
  testing::expect_error(
      [&] { apply_inplace(leaf, "sin_", [](const Tensor& v) { return sin(v); }); },
      {"[sin_] a leaf tensor that requires grad"});
  Tensor h = mul(w, 3.0);
  apply_inplace(h, "sin_", [](const Tensor& v) { return sin(v); });
  sum(h).backward();
  const std::vector<double> g = testing::values(w.grad());
  EXPECT_NEAR(g[0], 3 * std::cos(1.5), 1e-12);
  EXPECT_NEAR(g[1], 3 * std::cos(3.0), 1e-12);
}

// ---- trigonometric, hyperbolic and binary math --------------------------------------------------

constexpr double kInf = std::numeric_limits<double>::infinity();

/** A 1-d float64 tensor of `v`. */
Tensor f64(const std::vector<double>& v) {
  return from_vector(v, {static_cast<int64_t>(v.size())}, DType::Float64);
}

/** Expects got[i] within `ulps` units in the last place of double of want[i] (NaN matches NaN). */
void expect_ulps(const std::vector<double>& got, const std::vector<double>& want, double ulps,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) || std::isinf(want[i])) {
      EXPECT_TRUE(std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i])
          << what << "[" << i << "]: " << got[i] << " vs " << want[i];
      continue;
    }
    const double tol = ulps * std::numeric_limits<double>::epsilon() *
                       std::max(std::abs(want[i]), std::numeric_limits<double>::min());
    EXPECT_NEAR(got[i], want[i], tol) << what << "[" << i << "]";
  }
}

TEST(TrigAndHyperbolic, MatchStdInFloat64AndFloat32) {
  const std::vector<double> xs = {-0.99, -0.5, -1e-9, 0.0, 1e-300, 0.25, 0.7, 0.999};
  const std::vector<double> big = {-20.0, -3.5, -1e-8, 0.3, 1.0, 2.5, 30.0};
  const std::vector<double> ge1 = {1.0, 1.0 + 1e-9, 1.5, 10.0, 1e10};
  struct Fn {
    const char* name;
    Tensor (*op)(const Tensor&);
    double (*ref)(double);
    const std::vector<double>* at;
  };
  const Fn fns[] = {
      {"tan", &tan, [](double x) { return std::tan(x); }, &big},
      {"asin", &asin, [](double x) { return std::asin(x); }, &xs},
      {"acos", &acos, [](double x) { return std::acos(x); }, &xs},
      {"atan", &atan, [](double x) { return std::atan(x); }, &big},
      {"sinh", &sinh, [](double x) { return std::sinh(x); }, &big},
      {"cosh", &cosh, [](double x) { return std::cosh(x); }, &big},
      {"asinh", &asinh, [](double x) { return std::asinh(x); }, &big},
      {"acosh", &acosh, [](double x) { return std::acosh(x); }, &ge1},
      {"atanh", &atanh, [](double x) { return std::atanh(x); }, &xs},
  };
  for (const Device d : cpu_and_reference()) {
    SCOPED_TRACE(d.str());
    for (const Fn& f : fns) {
      std::vector<double> want;
      for (double x : *f.at) want.push_back(f.ref(x));
      const Tensor x64 = f64(*f.at).to(d);
      expect_ulps(values(f.op(x64)), want, 2, f.name);
      // float32: within 2 float ulps of the double result of the rounded input.
      const Tensor x32 = x64.to(DType::Float32);
      const Tensor y32 = f.op(x32);
      EXPECT_EQ(y32.dtype(), DType::Float32);
      const std::vector<double> got = values(y32), rounded = values(x32);
      for (size_t i = 0; i < got.size(); ++i) {
        const double w = f.ref(rounded[i]);
        EXPECT_NEAR(got[i], w, 2.4e-7 * std::abs(w) + 1e-45) << f.name << "(" << rounded[i] << ")";
      }
    }
    // Integer inputs promote to the default float, as sin does.
    const Tensor ints = tensor({0, 1}, DType::Int64).to(d);
    for (const Fn& f : fns) EXPECT_EQ(f.op(ints).dtype(), default_dtype()) << f.name;
    // Domain edges, as PyTorch and NumPy.
    EXPECT_TRUE(std::isnan(values(asin(tensor({2.0}, DType::Float64).to(d)))[0]));
    EXPECT_TRUE(std::isnan(values(acos(tensor({-1.5}, DType::Float64).to(d)))[0]));
    EXPECT_TRUE(std::isnan(values(acosh(tensor({0.5}, DType::Float64).to(d)))[0]));
    EXPECT_EQ(values(atanh(tensor({1.0, -1.0}, DType::Float32).to(d))),
              (std::vector<double>{kInf, -kInf}));
    EXPECT_TRUE(std::isnan(values(atanh(tensor({1.5}, DType::Float64).to(d)))[0]));
    EXPECT_EQ(values(cosh(tensor({1000.0}, DType::Float64).to(d)))[0], kInf);
    // sin / cos rounded twice was not tan: tan(pi/4 in float32) is 1 - 4.4e-8 within 1 ulp.
    EXPECT_NEAR(values(tan(tensor({0.78539816f}).to(d)))[0], std::tan(double(0.78539816f)), 6e-8);
  }
}

TEST(Erfinv, MatchesKnownValuesAndInvertsErf) {
  for (const Device d : cpu_and_reference()) {
    SCOPED_TRACE(d.str());
    // erfinv to 20 digits (computed with arbitrary precision).
    const std::vector<double> xs = {0.5,       -0.9,      0.99,  1e-10, 0.999999,
                                    1 - 1e-10, 1 - 1e-15, -0.25, 0.0};
    const std::vector<double> want = {
        0.47693627620446987338,    -1.1630871536766741628,  1.8213863677184494559,
        8.8622692545275804594e-11, 3.4589107372754987775,   4.5728249585449249378,
        5.6759157397447131788,     -0.22531205501217810473, 0.0};
    expect_ulps(values(erfinv(f64(xs).to(d))), want, 2, "erfinv");
    // erf(erfinv(x)) == x to within an ulp or two, over [-1, 1].
    std::vector<double> sweep;
    for (int i = -999; i <= 999; i += 7) sweep.push_back(i / 1000.0);
    const Tensor s = f64(sweep).to(d);
    expect_ulps(values(erf(erfinv(s))), sweep, 4, "erf(erfinv(x))");
    // float32 is rounded from the double result.
    const std::vector<double> f32 = values(erfinv(s.to(DType::Float32)));
    const std::vector<double> s32 = values(s.to(DType::Float32));
    for (size_t i = 0; i < f32.size(); ++i) {
      const double w = static_cast<float>(values(erfinv(tensor({s32[i]}, DType::Float64)))[0]);
      EXPECT_EQ(f32[i], w) << s32[i];
    }
    // The edges, as PyTorch.
    const std::vector<double> e =
        values(erfinv(tensor({1.0, -1.0, 1.5, -2.0, -0.0}, DType::Float32).to(d)));
    EXPECT_EQ(e[0], kInf);
    EXPECT_EQ(e[1], -kInf);
    EXPECT_TRUE(std::isnan(e[2]));
    EXPECT_TRUE(std::isnan(e[3]));
    EXPECT_TRUE(e[4] == 0.0 && std::signbit(e[4]));
    EXPECT_EQ(erfinv(tensor({0}, DType::Int64)).dtype(), default_dtype());
  }
}

TEST(BinaryMath, Atan2HypotLogaddexpMatchStdAndBroadcast) {
  for (const Device d : cpu_and_reference()) {
    SCOPED_TRACE(d.str());
    // Broadcast [4, 1] x [3], each quadrant and the axes.
    const std::vector<double> av = {1.5, -0.7, 0.0, -0.0}, bv = {2.0, -3.0, 0.0};
    const Tensor a = f64(av).reshape({4, 1}).to(d);
    const Tensor b = f64(bv).to(d);
    std::vector<double> w_atan2, w_hypot, w_lae;
    for (double x : av) {
      for (double y : bv) {
        w_atan2.push_back(std::atan2(x, y));
        w_hypot.push_back(std::hypot(x, y));
        w_lae.push_back(std::max(x, y) + std::log1p(std::exp(-std::abs(x - y))));
      }
    }
    const Tensor t = atan2(a, b);
    EXPECT_EQ(t.sizes(), (Shape{4, 3}));
    const std::vector<double> got = values(t);
    expect_ulps(got, w_atan2, 1, "atan2");
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(std::signbit(got[i]), std::signbit(w_atan2[i])) << "atan2[" << i << "]";
    }
    expect_ulps(values(hypot(a, b)), w_hypot, 1, "hypot");
    expect_ulps(values(logaddexp(a, b)), w_lae, 2, "logaddexp");
    // hypot neither overflows nor underflows in between.
    const std::vector<double> h = values(hypot(tensor({1e300, 3e-300}, DType::Float64).to(d),
                                               tensor({1e300, 4e-300}, DType::Float64).to(d)));
    EXPECT_NEAR(h[0], 1.4142135623730951e300, 1e285);
    EXPECT_NEAR(h[1], 5e-300, 1e-315);
    EXPECT_EQ(values(hypot(tensor({3e-30f}).to(d), tensor({4e-30f}).to(d)))[0],
              static_cast<double>(5e-30f));
    // logaddexp: no overflow, the small term kept, infinities as NumPy.
    const Tensor la = tensor({1000.0f, -1000.0f, 0.0f, 1e-3f}).to(d);
    const Tensor lb = tensor({1000.0f, -1000.0f, -40.0f, 0.0f}).to(d);
    const std::vector<double> l = values(logaddexp(la, lb));
    EXPECT_NEAR(l[0], 1000.0 + std::log(2.0), 1e-4);
    EXPECT_NEAR(l[1], -1000.0 + std::log(2.0), 1e-4);
    EXPECT_NEAR(l[2], std::log1p(std::exp(-40.0)), 1e-24);
    EXPECT_NEAR(l[3], std::log(std::exp(double(1e-3f)) + 1.0), 2e-7);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> li =
        values(logaddexp(tensor({kInf, -kInf, kInf, -kInf, nan, 2.0}, DType::Float64).to(d),
                         tensor({kInf, -kInf, -kInf, 3.0, 1.0, nan}, DType::Float64).to(d)));
    EXPECT_EQ(li[0], kInf);
    EXPECT_EQ(li[1], -kInf);
    EXPECT_EQ(li[2], kInf);
    EXPECT_EQ(li[3], 3.0);
    EXPECT_TRUE(std::isnan(li[4]));
    EXPECT_TRUE(std::isnan(li[5]));
    // Integers promote as division does; mixed dtypes as PyTorch's result_type.
    const Tensor i = tensor({3, 0}, DType::Int64).to(d), j = tensor({4, -1}, DType::Int32).to(d);
    for (const Tensor& r : {atan2(i, j), hypot(i, j), logaddexp(i, j)}) {
      EXPECT_EQ(r.dtype(), default_dtype());
    }
    EXPECT_EQ(values(hypot(i, j)), (std::vector<double>{5.0, 1.0}));
    EXPECT_EQ(atan2(tensor({1.0f}).to(d), tensor({1.0}, DType::Float64).to(d)).dtype(),
              DType::Float64);
    EXPECT_EQ(values(atan2(i, j))[1], static_cast<double>(static_cast<float>(M_PI)));
  }
}

TEST(IntegerBinary, BitwiseOpsShiftsGcdAndLcmFollowPyTorch) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  for (const Device d : cpu_and_reference()) {
    SCOPED_TRACE(d.str());
    const Tensor a = tensor({12, -7, 0, 255, kMin}, DType::Int64).to(d);
    const Tensor b = tensor({10, 3, -1, 15, 0}, DType::Int64).to(d);
    EXPECT_EQ(int64s(bitwise_and(a, b)), (std::vector<int64_t>{8, 1, 0, 15, 0}));
    EXPECT_EQ(int64s(bitwise_or(a, b)), (std::vector<int64_t>{14, -5, -1, 255, kMin}));
    EXPECT_EQ(int64s(bitwise_xor(a, b)), (std::vector<int64_t>{6, -6, -1, 240, kMin}));
    EXPECT_EQ(int64s(bitwise_not(a)),
              (std::vector<int64_t>{-13, 6, -1, -256, std::numeric_limits<int64_t>::max()}));
    // gcd of the absolute values, gcd(0, 0) = 0, -INT64_MIN wraps to itself; lcm wraps.
    EXPECT_EQ(int64s(gcd(a, b)), (std::vector<int64_t>{2, 1, 1, 15, kMin}));
    EXPECT_EQ(int64s(lcm(a, b)), (std::vector<int64_t>{60, 21, 0, 255, 0}));
    EXPECT_EQ(int64s(lcm(tensor({int64_t{1} << 62}, DType::Int64).to(d),
                         tensor({3}, DType::Int64).to(d))),
              (std::vector<int64_t>{int64_t{1} << 62}));
    EXPECT_EQ(int64s(gcd(tensor({0}, DType::Int64).to(d), tensor({0}, DType::Int64).to(d))),
              (std::vector<int64_t>{0}));
    // Shifts: counts outside [0, width) shift everything out; right shifts keep the sign.
    for (const DType dt : {DType::Int8, DType::Int32, DType::Int64}) {
      SCOPED_TRACE(fmt::format("{}", dt));
      const int64_t width = 8 * static_cast<int64_t>(itemsize(dt));
      const Tensor x = tensor({-8, 8, 3, -1, 1, 5}, dt).to(d);
      const Tensor n = tensor({1, 1, width - 2, width, width + 100, -1}, dt).to(d);
      const int64_t top = int64_t{3} << (width - 2);  // wraps to the type's range below
      const int64_t wrapped = width == 64 ? top : (top << (64 - width)) >> (64 - width);
      EXPECT_EQ(int64s(bitwise_left_shift(x, n)),
                (std::vector<int64_t>{-16, 16, wrapped, 0, 0, 0}));
      EXPECT_EQ(int64s(bitwise_right_shift(x, n)), (std::vector<int64_t>{-4, 4, 0, -1, 0, 0}));
      EXPECT_EQ(bitwise_left_shift(x, n).dtype(), dt);
    }
    const Tensor u = tensor({200, 1}, DType::UInt8).to(d);
    EXPECT_EQ(int64s(bitwise_left_shift(u, 1)), (std::vector<int64_t>{144, 2}));
    EXPECT_EQ(int64s(bitwise_right_shift(u, tensor({1, 8}, DType::UInt8).to(d))),
              (std::vector<int64_t>{100, 0}));
    EXPECT_EQ(int64s(bitwise_not(u)), (std::vector<int64_t>{55, 254}));
    // bool: logical and/or/xor/not; a bool and an integer promote to the integer.
    const Tensor t = tensor({1, 1, 0, 0}, DType::Bool).to(d),
                 f = tensor({1, 0, 1, 0}, DType::Bool).to(d);
    EXPECT_EQ(values(bitwise_and(t, f)), (std::vector<double>{1, 0, 0, 0}));
    EXPECT_EQ(values(bitwise_or(t, f)), (std::vector<double>{1, 1, 1, 0}));
    EXPECT_EQ(values(bitwise_xor(t, f)), (std::vector<double>{0, 1, 1, 0}));
    EXPECT_EQ(values(bitwise_not(t)), (std::vector<double>{0, 0, 1, 1}));
    EXPECT_EQ(bitwise_and(t, f).dtype(), DType::Bool);
    EXPECT_EQ(bitwise_and(t, tensor({3, 3, 3, 3}, DType::Int32).to(d)).dtype(), DType::Int32);
    // Promotion and broadcasting as arithmetic: int8 with int64 is int64; a number keeps int8.
    const Tensor i8 = tensor({-1, 6}, DType::Int8).to(d);
    EXPECT_EQ(bitwise_and(i8, tensor({{255}, {3}}, DType::Int64).to(d)).dtype(), DType::Int64);
    EXPECT_EQ(int64s(bitwise_and(i8, tensor({{255}, {3}}, DType::Int64).to(d))),
              (std::vector<int64_t>{255, 6, 3, 2}));
    EXPECT_EQ(bitwise_xor(i8, 1).dtype(), DType::Int8);
    EXPECT_EQ(int64s(bitwise_xor(i8, 1)), (std::vector<int64_t>{-2, 7}));
    // Floating operands, and bool where only integers make sense, are refused by name.
    const Tensor fl = tensor({1.0}, DType::Float32).to(d);
    expect_error([&] { bitwise_and(fl, fl); }, {"[bitwise_and]", "integer or bool", "float32"});
    expect_error([&] { bitwise_and(a, 1.5); }, {"[bitwise_and]", "float32"});
    expect_error([&] { bitwise_not(fl); }, {"[bitwise_not]", "float32"});
    expect_error([&] { bitwise_left_shift(t, t); }, {"[bitwise_left_shift]", "integer", "bool"});
    expect_error([&] { gcd(t, t); }, {"[gcd]", "bool"});
  }
}

TEST(SpecialFunctions, LgammaDigammaPolygammaAndErfcMatchKnownValues) {
  // To 20 digits (closed forms: Euler's gamma, pi^2/6, zeta(3), pi^4/15, sqrt(pi)...).
  struct Row {
    std::function<Tensor(const Tensor&)> op;
    const char* name;
    double x, want;
  };
  const std::vector<Row> rows = {
      {[](const Tensor& x) { return digamma(x); }, "digamma", 1.0, -0.57721566490153286061},
      {[](const Tensor& x) { return digamma(x); }, "digamma", 0.5, -1.9635100260214234794},
      {[](const Tensor& x) { return digamma(x); }, "digamma", 10.0, 2.2517525890667211077},
      {[](const Tensor& x) { return digamma(x); }, "digamma", -2.5, 1.1031566406452431872},
      {[](const Tensor& x) { return digamma(x); }, "digamma", 1e-30, -1e30},
      {[](const Tensor& x) { return polygamma(1, x); }, "trigamma", 1.0, 1.6449340668482264365},
      {[](const Tensor& x) { return polygamma(1, x); }, "trigamma", 0.5, 4.9348022005446793094},
      {[](const Tensor& x) { return polygamma(1, x); }, "trigamma", -1.5, 9.3792466449891237540},
      {[](const Tensor& x) { return polygamma(2, x); }, "polygamma(2)", 1.0,
       -2.4041138063191885708},
      {[](const Tensor& x) { return polygamma(3, x); }, "polygamma(3)", 1.0, 6.4939394022668291491},
      {[](const Tensor& x) { return lgamma(x); }, "lgamma", 0.5, 0.57236494292470008707},
      {[](const Tensor& x) { return lgamma(x); }, "lgamma", -2.5, -0.056243716497674054},
      {[](const Tensor& x) { return lgamma(x); }, "lgamma", 10.0, 12.801827480081469611},
      {[](const Tensor& x) { return lgamma(x); }, "lgamma", 100.0, 359.13420536957539878},
      {[](const Tensor& x) { return erfc(x); }, "erfc", 10.0, 2.0884875837625447570e-45},
      {[](const Tensor& x) { return erfc(x); }, "erfc", -1.0, 1.8427007929497148693},
      {[](const Tensor& x) { return erfc(x); }, "erfc", 0.5, 0.47950012218695346232},
  };
  for (const Device d : cpu_and_reference()) {
    SCOPED_TRACE(d.str());
    for (const Row& r : rows) {
      const double got = values(r.op(tensor({r.x}, DType::Float64).to(d)))[0];
      EXPECT_NEAR(got, r.want, 1e-14 * std::abs(r.want)) << r.name << "(" << r.x << ")";
      const double got32 = values(r.op(tensor({r.x}, DType::Float32).to(d)))[0];
      // float32 within its rounding (and its denormal step, for erfc(10)).
      EXPECT_NEAR(got32, r.want, 3e-7 * std::abs(r.want) + 1.5e-45)
          << r.name << "(float " << r.x << ")";
    }
    // Poles and edges, as PyTorch: digamma is -inf at +0, +inf at -0, NaN at the negative
    // integers; lgamma and the higher polygammas are +inf there.
    const std::vector<double> dg = values(digamma(tensor({0.0, -0.0, -2.0}, DType::Float64).to(d)));
    EXPECT_EQ(dg[0], -kInf);
    EXPECT_EQ(dg[1], kInf);
    EXPECT_TRUE(std::isnan(dg[2]));
    EXPECT_EQ(values(lgamma(tensor({0.0, -3.0, -kInf}, DType::Float64).to(d))),
              (std::vector<double>{kInf, kInf, kInf}));
    EXPECT_EQ(values(polygamma(1, tensor({0.0, -2.0}, DType::Float64).to(d))),
              (std::vector<double>{kInf, kInf}));
    EXPECT_EQ(digamma(tensor({1}, DType::Int64).to(d)).dtype(), default_dtype());
    expect_error([&] { polygamma(-1, tensor({1.0}).to(d)); }, {"[polygamma]", "-1"});
  }
}

TEST(Activations, HardswishAndHardsigmoidAreOnePassWithPyTorchsGradients) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const Device d : cpu_and_reference()) {
    SCOPED_TRACE(d.str());
    const Tensor x =
        tensor({-kInf, -4.0, -3.0, -1.0, 0.0, 1.0, 3.0, 4.0, kInf, nan}, DType::Float64)
            .to(d)
            .requires_grad_(true);
    const std::vector<double> hs = values(hardswish(x).detach());
    const std::vector<double> want_hs = {nan,     0.0, 0.0, -1.0 / 3, 0.0,
                                         2.0 / 3, 3.0, 4.0, kInf,     nan};
    const std::vector<double> hg = values(hardsigmoid(x).detach());
    const std::vector<double> want_hg = {0.0, 0.0, 0.0, 1.0 / 3, 0.5, 2.0 / 3, 1.0, 1.0, 1.0, nan};
    for (size_t i = 0; i < hs.size(); ++i) {
      // -inf * 0 is NaN in PyTorch's formula too.
      if (std::isnan(want_hs[i])) {
        EXPECT_TRUE(std::isnan(hs[i])) << i;
      } else if (std::isinf(want_hs[i])) {
        EXPECT_EQ(hs[i], want_hs[i]) << i;
      } else {
        EXPECT_NEAR(hs[i], want_hs[i], 1e-15) << i;
      }
      if (std::isnan(want_hg[i])) {
        EXPECT_TRUE(std::isnan(hg[i])) << i;
      } else {
        EXPECT_NEAR(hg[i], want_hg[i], 1e-15) << i;
      }
    }
    // Gradients at the kinks, PyTorch's: hardswish' is 0 at -3 and 1 at 3; hardsigmoid' is 0
    // at both.
    const Tensor k = tensor({-3.0, -1.0, 3.0}, DType::Float64).to(d).requires_grad_(true);
    sum(hardswish(k)).backward();
    testing::expect_close(k.grad(), {0.0, 1.0 / 6, 1.0}, 1e-15, "hardswish'");
    const Tensor k2 = tensor({-3.0, -1.0, 3.0}, DType::Float64).to(d).requires_grad_(true);
    sum(hardsigmoid(k2)).backward();
    testing::expect_close(k2.grad(), {0.0, 1.0 / 6, 0.0}, 1e-15, "hardsigmoid'");
    EXPECT_EQ(hardswish(tensor({1.0}, DType::Float16).to(d)).dtype(), DType::Float16);
  }
}

TEST(Frexp, MatchesCsFrexpAtEdges) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> xs{1.0,
                               -3.0,
                               0.75,
                               1024.0,
                               std::nextafter(1.0, 0.0),
                               std::nextafter(2.0, 0.0),
                               std::nextafter(0.5, 1.0),
                               1e300,
                               -1e-300,
                               std::numeric_limits<double>::denorm_min(),
                               -std::numeric_limits<double>::denorm_min() * 3,
                               std::numeric_limits<double>::max(),
                               0.0,
                               -0.0,
                               inf,
                               -inf};
  const Tensor x = make(xs, {static_cast<int64_t>(xs.size())}, DType::Float64);
  auto [m, e] = frexp(x);
  EXPECT_EQ(m.dtype(), DType::Float64);
  EXPECT_EQ(e.dtype(), DType::Int32);
  const std::vector<double> mv = values(m), ev = values(e);
  for (size_t i = 0; i < xs.size(); ++i) {
    int want_e = 0;
    const double want_m = std::frexp(xs[i], &want_e);
    EXPECT_EQ(mv[i], want_m) << xs[i];
    EXPECT_EQ(ev[i], std::isfinite(xs[i]) ? want_e : 0) << xs[i];
  }
  EXPECT_TRUE(std::isnan(values(std::get<0>(frexp(tensor({NAN}))))[0]));
  // float32, subnormals included, computed exactly.
  const std::vector<float> fs{3.5f, std::numeric_limits<float>::denorm_min(),
                              std::nextafter(1.0f, 0.0f), -std::numeric_limits<float>::max()};
  std::vector<double> fd(fs.begin(), fs.end());
  auto [fm, fe] = frexp(make(fd, {4}, DType::Float32));
  EXPECT_EQ(fm.dtype(), DType::Float32);
  for (size_t i = 0; i < fs.size(); ++i) {
    int want_e = 0;
    EXPECT_EQ(values(fm)[i], static_cast<double>(std::frexp(fs[i], &want_e))) << fs[i];
    EXPECT_EQ(values(fe)[i], want_e) << fs[i];
  }
  expect_error([] { frexp(tensor({1.0}, DType::Int64)); }, {"[frexp] expected a floating tensor"});
}

TEST(Mvlgamma, SumsLgammaAtHalfSteps) {
  const std::vector<double> xs{1.5, 2.0, 7.25};
  const Tensor x = make(xs, {3}, DType::Float64);
  for (int64_t p : {1, 2, 3}) {
    const std::vector<double> got = values(mvlgamma(x, p));
    for (size_t i = 0; i < xs.size(); ++i) {
      double want = static_cast<double>(p * (p - 1)) / 4 * std::log(3.14159265358979323846);
      for (int64_t j = 0; j < p; ++j) want += std::lgamma(xs[i] - static_cast<double>(j) / 2);
      EXPECT_NEAR(got[i], want, 1e-12) << p << " " << xs[i];
    }
  }
  expect_error([&] { mvlgamma(x, 4); }, {"[mvlgamma] all elements must be greater than (p-1)/2"});
  expect_error([&] { mvlgamma(x, 0); }, {"[mvlgamma] p has to be greater than or equal to 1"});
  const Tensor leaf = x.clone().requires_grad_(true);
  const autograd::GradcheckResult r =
      autograd::gradcheck([](const std::vector<Tensor>& in) { return mvlgamma(in[0], 3); }, {leaf});
  EXPECT_TRUE(r.ok) << r.message;
}

}  // namespace
}  // namespace ember
