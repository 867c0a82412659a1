#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

using testing::expect_error;
using testing::values;

struct Ref {
  Shape sizes;
  std::vector<double> data;
};

// NumPy matmul in float64 triple loops: 1-d operands, broadcast batch dims.
Ref reference_matmul(const Tensor& a_in, const Tensor& b_in) {
  Shape as = a_in.sizes(), bs = b_in.sizes();
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(0, 1);
  if (b_vec) bs.push_back(1);
  const std::vector<double> a = values(a_in), b = values(b_in);
  const int64_t m = as[as.size() - 2], k = as[as.size() - 1], n = bs[bs.size() - 1];
  const size_t nb = std::max(as.size(), bs.size()) - 2;
  Shape batch(nb, 1);
  Shape ab(nb, 1), bb(nb, 1);  // operand batch sizes aligned to the right
  for (size_t i = 0; i < as.size() - 2; ++i) ab[nb - (as.size() - 2) + i] = as[i];
  for (size_t i = 0; i < bs.size() - 2; ++i) bb[nb - (bs.size() - 2) + i] = bs[i];
  int64_t count = 1;
  for (size_t i = 0; i < nb; ++i) {
    batch[i] = std::max(ab[i], bb[i]);
    count *= batch[i];
  }
  Ref r;
  r.data.assign(static_cast<size_t>(count * m * n), 0.0);
  for (int64_t bi = 0; bi < count; ++bi) {
    int64_t rem = bi, oa = 0, ob = 0, sa = 1, sb = 1;
    for (size_t d = nb; d-- > 0;) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      oa += (ab[d] == 1 ? 0 : idx) * sa;
      ob += (bb[d] == 1 ? 0 : idx) * sb;
      sa *= ab[d];
      sb *= bb[d];
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += a[oa * m * k + i * k + p] * b[ob * k * n + p * n + j];
        r.data[bi * m * n + i * n + j] = s;
      }
    }
  }
  r.sizes = batch;
  if (!a_vec) r.sizes.push_back(m);
  if (!b_vec) r.sizes.push_back(n);
  return r;
}

void expect_matches(const Tensor& got, const Ref& ref, double rtol, const std::string& what) {
  ASSERT_EQ(got.sizes(), ref.sizes) << what;
  const std::vector<double> v = values(got);
  ASSERT_EQ(v.size(), ref.data.size()) << what;
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_NEAR(v[i], ref.data[i], rtol * (1.0 + std::abs(ref.data[i]))) << what << " at " << i;
  }
}

double tolerance(DType d) {
  return d == f64 ? 1e-12 : d == f32 ? 2e-5 : d == bf16 ? 4e-2 : d == f16 ? 4e-3 : 0.0;
}

Tensor random(IntList sizes, DType d) {
  if (is_floating(d)) return randn(sizes).to(d);
  return randint(-5, 6, sizes, TensorOptions(d));
}

void check(const Tensor& a, const Tensor& b, const std::string& what) {
  const Tensor c = matmul(a, b);
  EXPECT_EQ(c.dtype(), promote_types(a.dtype(), b.dtype())) << what;
  EXPECT_TRUE(c.is_contiguous() || c.numel() <= 1) << what;
  expect_matches(c, reference_matmul(a, b), tolerance(c.dtype()), what);
}

class MatmulDTypes : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulDTypes, VectorAndMatrixShapes) {
  const DType d = GetParam();
  check(random({7}, d), random({7}, d), "1-d x 1-d");
  check(random({3}, d), random({3, 4}, d), "1-d x 2-d");
  check(random({2, 3}, d), random({3}, d), "2-d x 1-d");
  check(random({5, 7}, d), random({7, 6}, d), "2-d x 2-d");
  check(random({1, 1}, d), random({1, 1}, d), "1x1");
  check(random({4}, d), random({2, 4, 3}, d), "1-d x 3-d");
  check(random({2, 3, 4}, d), random({4}, d), "3-d x 1-d");
}

TEST_P(MatmulDTypes, BroadcastsBatchDims) {
  const DType d = GetParam();
  check(random({2, 1, 3, 4}, d), random({5, 4, 2}, d), "[2,1,3,4] x [5,4,2]");
  check(random({3, 4}, d), random({2, 4, 5}, d), "2-d x 3-d");
  check(random({2, 3, 3, 4}, d), random({4, 5}, d), "4-d x 2-d");
  check(random({2, 3, 4}, d), random({2, 4, 5}, d), "equal batch");
  check(random({1, 3, 4}, d).expand({6, 3, 4}), random({1, 4, 2}, d).expand({6, 4, 2}),
        "batch broadcast in both operands");
}

TEST_P(MatmulDTypes, NonContiguousOperands) {
  const DType d = GetParam();
  check(random({4, 3}, d).t(), random({5, 4}, d).t(), "both transposed");
  check(random({3, 4}, d), random({5, 4}, d).t(), "B transposed");
  check(random({2, 4, 3}, d).transpose(1, 2), random({2, 5, 4}, d).transpose(1, 2),
        "batched transposed");
  check(random({6, 8}, d).slice(0, 0, 6, 2).slice(1, 0, 8, 2),
        random({8, 10}, d).slice(0, 0, 8, 2).slice(1, 1, 10, 3), "stepped slices");
  check(random({1, 4}, d).expand({3, 4}), random({4, 1}, d).expand({4, 5}), "expanded matrices");
  check(random({4, 2, 3}, d).permute({1, 0, 2}), random({3, 2, 5}, d).permute({1, 0, 2}),
        "permuted batch");
  check(random({3, 5, 4}, d).select(1, 2), random({4, 5}, d).select(1, 1), "strided vectors");
}

TEST_P(MatmulDTypes, LargerThanOneBlock) {
  const DType d = GetParam();
  check(random({37, 150}, d), random({150, 140}, d), "37x150x140");
  check(random({3, 20, 70}, d), random({70, 130}, d).t().contiguous().t(), "batched, B col-major");
}

TEST_P(MatmulDTypes, ZeroSizes) {
  const DType d = GetParam();
  const Tensor k0 = matmul(random({3, 0}, d), random({0, 4}, d));
  ASSERT_EQ(k0.sizes(), Shape({3, 4}));
  for (double v : values(k0)) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(matmul(random({0}, d), random({0}, d)).item(), 0.0);
  EXPECT_EQ(matmul(random({0, 3}, d), random({3, 4}, d)).sizes(), Shape({0, 4}));
  EXPECT_EQ(matmul(random({3, 2}, d), random({2, 0}, d)).sizes(), Shape({3, 0}));
  EXPECT_EQ(matmul(random({0, 3, 2}, d), random({2, 4}, d)).sizes(), Shape({0, 3, 4}));
}

INSTANTIATE_TEST_SUITE_P(Matmul, MatmulDTypes,
                         ::testing::Values(f32, f64, DType::Int64, DType::Int32, bf16, f16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Matmul, IntegerResultsAreExact) {
  const Tensor a = tensor({{1, 2, 3}, {4, 5, 6}});
  const Tensor b = tensor({{7, 8}, {9, 10}, {11, 12}});
  const Tensor c = matmul(a, b);
  ASSERT_EQ(c.dtype(), DType::Int64);
  const std::vector<double> v = values(c);
  EXPECT_EQ(v, (std::vector<double>{58, 64, 139, 154}));
  const Tensor big = full({2, 2}, int64_t{1} << 40, TensorOptions(DType::Int64));
  EXPECT_EQ(matmul(big, full({2, 1}, 3, TensorOptions(DType::Int64))).select(0, 0).item<int64_t>(),
            int64_t{6} << 40);
}

// PyTorch's products take one dtype ("expected m1 and m2 to have the same dtype"): promoting
// silently changed the precision and the result's dtype (Note [Ops that take one dtype]).
TEST(Matmul, RefusesMixedDtypes) {
  const Tensor a = tensor({{1, 2}, {3, 4}});
  const Tensor b = tensor({{0.5, 0.0}, {0.0, 0.25}});
  try {
    matmul(a, b);
    ADD_FAILURE() << "matmul of int64 and float32 did not throw";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("[matmul] expected all tensors of one dtype"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(matmul(b.to(f64), b), TypeError);
  EXPECT_THROW(mm(b, b.to(f64)), TypeError);
  EXPECT_THROW(bmm(b.unsqueeze(0), b.to(f64).unsqueeze(0)), TypeError);
  EXPECT_THROW(linear(b.to(f64), b), TypeError);
  EXPECT_THROW(linear(b, b, tensor({1.0, 2.0}, DType::Float64)), TypeError);
  const Tensor c = matmul(a.to(f32), b);
  EXPECT_EQ(c.dtype(), f32);
  EXPECT_EQ(values(c), (std::vector<double>{0.5, 0.5, 1.5, 1.0}));
}

TEST(Matmul, RepeatedShapesReuseAndStayCorrect) {
  // The second call of each shape runs a cached primitive; strides are part of the key.
  for (int rep = 0; rep < 3; ++rep) {
    const Tensor a = randn({9, 11}), b = randn({11, 13});
    expect_matches(matmul(a, b), reference_matmul(a, b), 2e-5, "plain");
    const Tensor at = randn({11, 9}).t();
    expect_matches(matmul(at, b), reference_matmul(at, b), 2e-5, "transposed");
  }
}

// Note [Power-of-two leading dimensions]: a row-major B or a transposed A whose stored rows are
// a multiple of 2 KiB is copied to a padded leading dimension first; results must not change.
TEST(Matmul, PowerOfTwoRowsArePaddedAndStayCorrect) {
  for (int rep = 0; rep < 2; ++rep) {  // the second pass runs the cached primitives
    const Tensor a = randn({32, 64}), b = randn({64, 512});
    expect_matches(matmul(a, b), reference_matmul(a, b), 1e-4, "f32, ld 512");
    const Tensor at = randn({64, 32}).t();  // transposed A with a padded B
    expect_matches(matmul(at, b), reference_matmul(at, b), 1e-4, "f32, A^T, ld 512");
    const Tensor gt = randn({64, 512}).t();  // a transposed A with 2 KiB stored rows
    expect_matches(matmul(gt, b), reference_matmul(gt, b), 1e-4, "f32, A^T and B padded");
    const Tensor wide = randn({64, 1024}).narrow(1, 8, 1000);  // ld 1024, 1000 columns
    expect_matches(matmul(a, wide), reference_matmul(a, wide), 1e-4, "f32, narrowed, ld 1024");
    const Tensor a64 = randn({20, 48}, TensorOptions(DType::Float64)),
                 b64 = randn({48, 256}, TensorOptions(DType::Float64));  // 2 KiB rows
    expect_matches(matmul(a64, b64), reference_matmul(a64, b64), 1e-12, "f64, ld 256");
  }
}

TEST(Matmul, ShapeMismatchNamesBothShapes) {
  expect_error(
      [] {
        matmul(zeros({2, 3}), zeros({4, 5}));
      },
      {"[matmul] shapes [2, 3] and [4, 5] cannot be multiplied: size(-1)=3 but size(-2)=4"});
  EXPECT_THROW(matmul(zeros({3}), zeros({4})), Error);
  EXPECT_THROW(matmul(zeros({2, 3, 4}), zeros({3, 4, 5})), Error);  // batch 2 vs 3
}

TEST(Matmul, RejectsBoolAndScalars) {
  expect_error(
      [] {
        matmul(ones({2, 2}).to(DType::Bool), ones({2, 2}));
      },
      {"[matmul] not defined for bool"});
  expect_error([] { matmul(zeros({}), zeros({3})); },
               {"[matmul] both arguments need at least 1 dimension"});
}

TEST(Matmul, MmAndBmmCheckRanks) {
  const Tensor a = randn({3, 4}), b = randn({4, 5});
  expect_matches(mm(a, b), reference_matmul(a, b), 2e-5, "mm");
  const Tensor x = randn({2, 3, 4}), y = randn({2, 4, 5});
  expect_matches(bmm(x, y), reference_matmul(x, y), 2e-5, "bmm");
  expect_error([&] { mm(randn({4}), b); },
               {"[mm] expected 2-d tensors: got shapes [4] and [4, 5]"});
  expect_error([&] { mm(x, b); }, {"[mm] expected 2-d tensors"});
  expect_error(
      [&] {
        mm(a, randn({5, 5}));
      },
      {"[mm] shapes [3, 4] and [5, 5] cannot be multiplied"});
  expect_error([&] { bmm(a, b); }, {"[bmm] expected 3-d tensors: got shapes [3, 4] and [4, 5]"});
  expect_error([&] { bmm(x, randn({1, 4, 5})); }, {"[bmm] batch sizes differ"});
  expect_error([&] { bmm(x, randn({2, 3, 5})); }, {"[bmm] shapes [2, 3, 4] and [2, 3, 5]"});
}

TEST(Logdet, IsLogOfTheDeterminantNaNForANegativeOne) {
  const Tensor a = tensor({{2.0, 1.0}, {1.0, 3.0}}, DType::Float64);  // det 5
  EXPECT_NEAR(logdet(a).item(), std::log(5.0), 1e-14);
  EXPECT_TRUE(std::isnan(logdet(tensor({{0.0, 1.0}, {1.0, 0.0}}, DType::Float64)).item()));
  EXPECT_EQ(logdet(zeros({2, 2}, DType::Float64)).item(), -INFINITY);
  // d log det A / dA = A^-T.
  const Tensor leaf = a.clone().requires_grad_(true);
  logdet(leaf).backward();
  const std::vector<double> g = values(leaf.grad()), want{0.6, -0.2, -0.2, 0.4};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-14) << i;
  EXPECT_EQ(vdot(tensor({1.0, 2.0}), tensor({3.0, 4.0})).item(), 11);
  expect_error([] { vdot(ones({2, 2}), ones({2})); }, {"[vdot]", "1-d"});
}

TEST(Adjoint, SwapsTheLastTwoDimsOfMatricesOnly) {
  const Tensor a = arange(24).to(DType::Float64).reshape({2, 3, 4});
  const Tensor t = adjoint(a);
  EXPECT_EQ(t.sizes(), Shape({2, 4, 3}));
  EXPECT_EQ(values(t.contiguous()), values(a.transpose(1, 2).contiguous()));
  EXPECT_EQ(t.data_ptr<double>(), a.data_ptr<double>());  // a view
  expect_error([] { adjoint(ones({3})); }, {"[adjoint] expects a matrix", "[3]"});
}

TEST(Renorm, ScalesSlicesAbovePToMaxnorm) {
  // Rows (slices along dim 0) of 2-norms 5, 0.5 and 13.
  const Tensor x = tensor({{3.0, 4.0}, {0.3, 0.4}, {5.0, -12.0}}, DType::Float64);
  const std::vector<double> got = values(renorm(x, 2, 0, 1.0));
  const std::vector<double> want{3 / (5 + 1e-7),  4 / (5 + 1e-7),   0.3, 0.4,
                                 5 / (13 + 1e-7), -12 / (13 + 1e-7)};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-15) << i;
  // Columns by the 1-norm: 3.3 + 5 + 0.3 ... each column over the rows.
  const std::vector<double> cols = values(renorm(x, 1, 1, 8.0));
  const double c0 = 3 + 0.3 + 5, c1 = 4 + 0.4 + 12;
  EXPECT_NEAR(cols[0], 3.0 * 8 / (c0 + 1e-7), 1e-14);
  EXPECT_NEAR(cols[1], 4.0 * 8 / (c1 + 1e-7), 1e-14);
  expect_error([&] { renorm(x, 0, 0, 1); }, {"[renorm] the norm's order p must be positive"});
  expect_error([&] { renorm(x, 2, 0, -1); }, {"[renorm] maxnorm must be non-negative"});
  expect_error([&] { renorm(ones({3}), 2, 0, 1); }, {"[renorm] needs at least 2 dims"});
  expect_error([&] { renorm(ones({2, 2}, DType::Int64), 2, 0, 1); }, {"[renorm] needs a floating"});
  const Tensor leaf = x.clone().requires_grad_(true);
  const autograd::GradcheckResult r = autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return renorm(in[0], 2, 0, 1.0); }, {leaf});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(Rsub, IsSubWithItsOperandsSwapped) {
  const Tensor x = tensor({1.0, 2.0}, DType::Float64);
  EXPECT_EQ(values(rsub(x, tensor({10.0, 20.0}, DType::Float64), 2)), std::vector<double>({8, 16}));
  EXPECT_EQ(values(rsub(x, 5)), std::vector<double>({4, 3}));
  const Tensor ints = rsub(tensor({1.0, 2.0}, DType::Int64), 0.5);
  EXPECT_EQ(ints.dtype(), DType::Float32);
  EXPECT_EQ(values(ints), std::vector<double>({-0.5, -1.5}));
}

TEST(Ldexp, MultipliesByPowersOfTwo) {
  const Tensor got = ldexp(tensor({1.5, -2.0, 3.0}), tensor({3.0, -1.0, 0.0}, DType::Int64));
  EXPECT_EQ(got.dtype(), DType::Float32);
  EXPECT_EQ(values(got), std::vector<double>({12, -1, 3}));
  EXPECT_EQ(ldexp(tensor({1.0}, DType::Int64), tensor({2.0}, DType::Int64)).dtype(),
            DType::Float32);
  EXPECT_EQ(ldexp(tensor({1.0}, DType::Float64), tensor({1.0}, DType::Int64)).dtype(),
            DType::Float64);
}

TEST(Vander, PowersAsPyTorchLaysThemOut) {
  const Tensor x = tensor({2.0, 3.0, -1.0}, DType::Int64);
  const Tensor v = vander(x);
  EXPECT_EQ(v.dtype(), DType::Int64);
  EXPECT_EQ(values(v), std::vector<double>({4, 2, 1, 9, 3, 1, 1, -1, 1}));
  EXPECT_EQ(values(vander(x, 4, true)),
            std::vector<double>({1, 2, 4, 8, 1, 3, 9, 27, 1, -1, 1, -1}));
  EXPECT_EQ(vander(tensor({0.5, 2.0}), 0).sizes(), Shape({2, 0}));
  EXPECT_EQ(vander(tensor({0.5, 2.0})).dtype(), DType::Float32);
  EXPECT_EQ(values(vander(tensor({0.5}, DType::Float64), 3)), std::vector<double>({0.25, 0.5, 1}));
  const Tensor leaf = tensor({0.5, -1.5, 2.0}, DType::Float64).requires_grad_(true);
  const autograd::GradcheckResult r =
      autograd::gradcheck([](const std::vector<Tensor>& in) { return vander(in[0], 4); }, {leaf});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(Angle, ZeroOrPiAndRealParts) {
  const Tensor x = tensor({-2.0, 0.0, 3.0, std::nan("")}, DType::Float64);
  const std::vector<double> a = values(angle(x));
  EXPECT_EQ(a[0], std::numbers::pi);
  EXPECT_EQ(a[1], 0.0);
  EXPECT_EQ(a[2], 0.0);
  EXPECT_TRUE(std::isnan(a[3]));
  EXPECT_EQ(angle(tensor({-1.0}, DType::Int64)).dtype(), default_dtype());
  EXPECT_TRUE(real(x).is_same(x));
  try {
    imag(x);
    ADD_FAILURE() << "expected an error";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("[imag] is not implemented for tensors with non-complex"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace ember
