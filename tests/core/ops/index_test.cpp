#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <ember/ember.h>

namespace ember {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Elements of t in row-major order, as double.
std::vector<double> values(const Tensor& t) {
  const Tensor c = t.to(DType::Float64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// Elements of an int64 tensor in row-major order.
std::vector<int64_t> ints(const Tensor& t) {
  const Tensor c = t.contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

Tensor i64(std::vector<int64_t> v, IntList sizes) {
  return from_vector(v, sizes, TensorOptions(DType::Int64));
}
Tensor i64(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return from_vector(v, {n}, TensorOptions(DType::Int64));
}

// Values (37 i + 11) mod 101: small enough to be exact in every dtype, repeating every 101.
Tensor pattern(IntList sizes, DType dtype = DType::Float32) {
  const int64_t n = shape_numel(sizes);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * 37 + 11) % 101);
  return from_vector(v, sizes, TensorOptions(DType::Float64)).to(dtype);
}

// Values of (37 i + 11) mod 101 mod `mod` (many ties), as `dtype`.
Tensor ties(IntList sizes, int64_t mod, DType dtype = DType::Float32) {
  const int64_t n = shape_numel(sizes);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * 37 + 11) % 101 % mod);
  return from_vector(v, sizes, TensorOptions(DType::Float64)).to(dtype);
}

const std::vector<DType> kAllDTypes = {DType::Float32,  DType::Float64, DType::Float16,
                                       DType::BFloat16, DType::Int64,   DType::Int32,
                                       DType::Int8,     DType::UInt8,   DType::Bool};

// Asserts fn throws ember::Error whose message contains every piece.
void expect_error(const std::function<void()>& fn, std::vector<std::string> pieces) {
  try {
    fn();
    ADD_FAILURE() << "expected ember::Error containing " << pieces[0];
  } catch (const Error& e) {
    for (const std::string& p : pieces) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "'" << p << "' not in: " << e.what();
    }
  }
}

// Row-major flat index of coordinates in sizes.
int64_t flat(IntList sizes, const std::vector<int64_t>& c) {
  int64_t f = 0;
  for (size_t d = 0; d < sizes.size(); ++d) f = f * sizes[d] + c[d];
  return f;
}

// Calls fn(coords) for every position of sizes in row-major order.
void for_each(IntList sizes, const std::function<void(const std::vector<int64_t>&)>& fn) {
  const int64_t n = shape_numel(sizes);
  std::vector<int64_t> c(sizes.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    fn(c);
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
      if (++c[d] < sizes[d]) break;
      c[d] = 0;
    }
  }
}

// ---- index_select -----------------------------------------------------------------------------

// Reference: y[..., i, ...] = x[..., index[i], ...] along dim.
std::vector<double> index_select_ref(const Tensor& x, int64_t dim,
                                     const std::vector<int64_t>& idx) {
  const std::vector<double> xv = values(x);
  Shape ys = x.sizes();
  ys[dim] = static_cast<int64_t>(idx.size());
  std::vector<double> out;
  for_each(ys, [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> src = c;
    src[dim] = idx[c[dim]];
    out.push_back(xv[flat(x.sizes(), src)]);
  });
  return out;
}

TEST(Index, IndexSelectHandComputed) {
  Tensor x = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  Tensor rows = index_select(x, 0, i64({1, 0, 1}));
  ASSERT_EQ(rows.sizes(), Shape({3, 3}));
  EXPECT_EQ(values(rows), (std::vector<double>{4, 5, 6, 1, 2, 3, 4, 5, 6}));
  Tensor cols = index_select(x, 1, i64({2, 0}));
  ASSERT_EQ(cols.sizes(), Shape({2, 2}));
  EXPECT_EQ(values(cols), (std::vector<double>{3, 1, 6, 4}));
  Tensor neg = index_select(x, -1, i64({1}));
  EXPECT_EQ(neg.sizes(), Shape({2, 1}));
  EXPECT_EQ(values(neg), (std::vector<double>{2, 5}));
  EXPECT_EQ(rows.dtype(), DType::Float32);
}

TEST(Index, IndexSelectMatchesReferenceAcrossDimsAndDtypes) {
  for (DType dt : kAllDTypes) {
    const Tensor x = pattern({4, 3, 5}, dt);
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      std::vector<int64_t> idx = {3, 0, 3, 2, 1, 1, 4};
      for (int64_t& v : idx) v %= x.size(d);
      const Tensor y = index_select(x, dim, i64(idx));
      EXPECT_EQ(y.dtype(), dt);
      EXPECT_EQ(values(y), index_select_ref(x, d, idx)) << dtype_name(dt) << " dim " << dim;
    }
  }
}

TEST(Index, IndexSelectNonContiguousAndEmpty) {
  const Tensor x = pattern({5, 6}).transpose(0, 1);              // [6, 5], strides [1, 6]
  const Tensor idx = i64({4, 0, 1, 1, 2, 2}).slice(0, 0, 6, 2);  // {4, 1, 2}: non-contiguous
  EXPECT_FALSE(idx.is_contiguous());
  const Tensor y1 = index_select(x, 1, idx);
  EXPECT_EQ(values(y1), index_select_ref(x, 1, {4, 1, 2}));
  const Tensor y0 = index_select(x.slice(1, 0, 5, 2), 0, i64({5, 0, 3}));
  EXPECT_EQ(values(y0), index_select_ref(x.slice(1, 0, 5, 2), 0, {5, 0, 3}));
  // Zero-size inputs and indices.
  EXPECT_EQ(index_select(x, 0, i64({})).sizes(), Shape({0, 5}));
  EXPECT_EQ(index_select(zeros({0, 3}), 1, i64({2, 0})).sizes(), Shape({0, 2}));
  // A 0-d index selects one slice but keeps the dim.
  const Tensor y2 = index_select(x, 0, tensor(int64_t{2}));
  EXPECT_EQ(y2.sizes(), Shape({1, 5}));
  EXPECT_EQ(values(y2), index_select_ref(x, 0, {2}));
}

TEST(Index, IndexSelectErrors) {
  const Tensor x = pattern({2, 3});
  expect_error(
      [&] {
        index_select(x, 1, i64({0, 3}));
      },
      {"[index_select]", "index 3 is out of range", "size 3"});
  expect_error([&] { index_select(x, 0, i64({-1})); },
               {"[index_select]", "index -1 is out of range", "size 2"});
  expect_error([&] { index_select(x, 0, i64({0}).to(DType::Int32)); },
               {"[index_select] index must be an int64 tensor: got int32"});
  expect_error(
      [&] {
        index_select(x, 0, i64({0, 1}, {1, 2}));
      },
      {"[index_select] index must be a 1-d tensor: got 2 dims"});
  expect_error([&] { index_select(x, 2, i64({0})); }, {"[index_select]"});
  // Out-of-range indices are caught even when the output is empty.
  expect_error(
      [&] {
        index_select(zeros({0, 3}), 1, i64({7}));
      },
      {"[index_select]", "index 7 is out of range"});
}

// ---- gather / scatter -------------------------------------------------------------------------

TEST(Index, GatherHandComputed) {
  const Tensor x = tensor({{1.0, 2.0}, {3.0, 4.0}});
  EXPECT_EQ(values(gather(x, 1, i64({0, 0, 1, 0}, {2, 2}))), (std::vector<double>{1, 1, 4, 3}));
  EXPECT_EQ(values(gather(x, 0, i64({1, 0, 0, 0}, {2, 2}))), (std::vector<double>{3, 2, 1, 2}));
  // The index may be smaller than x outside dim and larger along dim.
  const Tensor y = gather(x, -1, i64({1, 1, 0}, {1, 3}));
  EXPECT_EQ(y.sizes(), Shape({1, 3}));
  EXPECT_EQ(values(y), (std::vector<double>{2, 2, 1}));
}

// Index of `sizes` with values in [0, limit), varying along every dim.
Tensor index_pattern(IntList sizes, int64_t limit) {
  std::vector<int64_t> v;
  for_each(sizes, [&](const std::vector<int64_t>& c) {
    int64_t s = 0;
    for (size_t d = 0; d < c.size(); ++d) s += c[d] * static_cast<int64_t>(2 * d + 1);
    v.push_back(s % limit);
  });
  return i64(v, sizes);
}

TEST(Index, GatherMatchesReference3d) {
  for (DType dt : {DType::Float32, DType::Float16, DType::Int64, DType::Int8, DType::Bool}) {
    for (bool transposed : {false, true}) {
      const Tensor base = pattern({5, 4, 3}, dt);
      const Tensor x = transposed ? base.transpose(0, 2) : base.permute({2, 1, 0}).contiguous();
      for (int64_t dim : {0, 1, 2, -1}) {
        const int64_t d = dim < 0 ? dim + 3 : dim;
        const Shape isz = {2, 3, 4};  // along dim it may exceed x's size; elsewhere it must not
        Shape sz = isz;
        for (int64_t i = 0; i < 3; ++i) sz[i] = i == d ? 6 : std::min(isz[i], x.size(i));
        const Tensor index = index_pattern(sz, x.size(d));
        const Tensor y = gather(x, dim, index);
        ASSERT_EQ(y.sizes(), sz);
        const std::vector<double> xv = values(x);
        const std::vector<int64_t> iv = ints(index);
        std::vector<double> ref;
        for_each(sz, [&](const std::vector<int64_t>& c) {
          std::vector<int64_t> src = c;
          src[d] = iv[flat(sz, c)];
          ref.push_back(xv[flat(x.sizes(), src)]);
        });
        EXPECT_EQ(values(y), ref) << dtype_name(dt) << " dim " << dim;
      }
    }
  }
}

TEST(Index, GatherErrors) {
  const Tensor x = pattern({2, 2});
  expect_error(
      [&] {
        gather(x, 1, i64({0, 2}, {1, 2}));
      },
      {"[gather]", "index 2 is out of range for dim 1 of size 2"});
  expect_error(
      [&] {
        gather(x, 1, i64({0, 1}));
      },
      {"[gather] index must have the input's number of dims 2: got 1"});
  expect_error(
      [&] {
        gather(x, 0, i64({0, 1}, {1, 2}).to(DType::Int32));
      },
      {"[gather] index must be an int64 tensor"});
  expect_error([&] { gather(x, 0, i64({0, 0, 0}, {1, 3})); }, {"[gather] index size 3 exceeds"});
}

TEST(Index, ScatterHandComputed) {
  // PyTorch's documentation example.
  const Tensor src = arange(1, 11).reshape({2, 5});
  const Tensor x = zeros({3, 5}, DType::Int64);
  const Tensor y = scatter(x, 0, i64({0, 1, 2, 0}, {1, 4}), src);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{1, 0, 0, 4, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0}));
  EXPECT_EQ(ints(x), std::vector<int64_t>(15, 0));  // out of place
  const Tensor y1 = scatter(x, 1, i64({0, 1, 2, 0, 3, 4}, {2, 3}), src);
  EXPECT_EQ(ints(y1), (std::vector<int64_t>{1, 2, 3, 0, 0, 6, 0, 0, 7, 8, 0, 0, 0, 0, 0}));
  // Repeated indices accumulate in scatter_add.
  const Tensor acc = scatter_add(zeros({5}), 0, i64({0, 1, 0, 4, 0}), ones({5}));
  EXPECT_EQ(values(acc), (std::vector<double>{3, 1, 0, 0, 1}));
}

// Reference scatter: y = x; y[c with c[d] = index[c]] = src[c] (or +=).
std::vector<double> scatter_ref(const Tensor& x, int64_t d, const Tensor& index, const Tensor& src,
                                bool add) {
  std::vector<double> y = values(x);
  const std::vector<double> sv = values(src);
  const std::vector<int64_t> iv = ints(index);
  for_each(index.sizes(), [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> dst = c;
    dst[d] = iv[flat(index.sizes(), c)];
    double& t = y[flat(x.sizes(), dst)];
    const double v = sv[flat(src.sizes(), c)];
    t = add ? t + v : v;
  });
  return y;
}

TEST(Index, ScatterAndScatterAddMatchReference) {
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::Int64, DType::Int32}) {
    // 2-d and 3-d, transposed src.
    for (const Shape& xs : {Shape{4, 6}, Shape{3, 4, 5}}) {
      const int64_t nd = static_cast<int64_t>(xs.size());
      for (int64_t d = 0; d < nd; ++d) {
        const Tensor x = pattern(xs, dt);
        Shape ss = xs;
        std::reverse(ss.begin(), ss.end());
        const Tensor src = pattern(ss, dt).permute(nd == 2 ? Shape{1, 0} : Shape{2, 1, 0});
        // scatter: a rotation along dim, so every target is written once.
        Shape is = xs;
        for (int64_t i = 0; i < nd; ++i) is[i] = i == d ? xs[i] : xs[i] - 1;
        std::vector<int64_t> rot;
        for_each(is, [&](const std::vector<int64_t>& c) {
          int64_t s = 0;
          for (int64_t v : c) s += v;
          rot.push_back(s % xs[d]);
        });
        const Tensor perm = i64(rot, is);
        EXPECT_EQ(values(scatter(x, d, perm, src)), scatter_ref(x, d, perm, src, false))
            << dtype_name(dt) << " dim " << d;
        // scatter_add: more indices than targets along dim, so many repeat.
        Shape ai = is;
        ai[d] = xs[d] + 3;
        Shape bigger = xs;
        bigger[d] = ai[d];
        const Tensor src2 = pattern(bigger, dt);
        const Tensor rep = index_pattern(ai, 2);
        EXPECT_EQ(values(scatter_add(x, d, rep, src2)), scatter_ref(x, d, rep, src2, true))
            << dtype_name(dt) << " dim " << d;
      }
    }
  }
}

TEST(Index, ScatterAddLargeParallelMatchesReference) {
  const Tensor x = zeros({64, 600});
  const Tensor index = index_pattern({64, 1200}, 600);
  const Tensor src = pattern({64, 1200});
  EXPECT_EQ(values(scatter_add(x, 1, index, src)), scatter_ref(x, 1, index, src, true));
  const Tensor index0 = index_pattern({128, 600}, 64);
  const Tensor src0 = pattern({128, 600});
  EXPECT_EQ(values(scatter_add(x, 0, index0, src0)), scatter_ref(x, 0, index0, src0, true));
}

TEST(Index, ScatterErrors) {
  const Tensor x = zeros({2, 3});
  expect_error([&] { scatter(x, 0, i64({0, 3}, {1, 2}), ones({1, 2})); }, {"[scatter]"});
  expect_error(
      [&] {
        scatter(x, 1, i64({0, 3}, {1, 2}), ones({1, 2}));
      },
      {"[scatter]", "index 3 is out of range for dim 1 of size 3"});
  expect_error(
      [&] {
        scatter_add(x, 1, i64({0, 1}, {1, 2}), ones({1, 2}, DType::Float64));
      },
      {"[scatter_add] src must have the dtype of the input float32: got float64"});
  expect_error(
      [&] {
        scatter_add(x, 1, i64({0, 1}, {1, 2}).to(DType::Int32), ones({1, 2}));
      },
      {"[scatter_add] index must be an int64 tensor"});
  expect_error(
      [&] {
        scatter(x, 1, i64({0, 1, 2}, {1, 3}), ones({1, 2}));
      },
      {"[scatter] index sizes [1, 3] must not exceed src sizes [1, 2]"});
}

TEST(Index, ScatterAndGatherCountA0dTensorAs1dAsPyTorchDoes) {
  // zeros(5).scatter_(0, tensor(3), value=1): a 0-d index and source write one value.
  const Tensor one_hot = scatter(zeros({5}), 0, i64({3}, {}), full({}, 1.0));
  EXPECT_EQ(one_hot.sizes(), (Shape{5}));
  EXPECT_EQ(values(one_hot), (std::vector<double>{0, 0, 0, 1, 0}));
  EXPECT_EQ(values(scatter_add(ones({4}), 0, i64({1}, {}), full({}, 2.0))),
            (std::vector<double>{1, 3, 1, 1}));
  const Tensor into_0d = scatter(zeros({}), 0, i64({0}, {1}), full({1}, 7.0));
  EXPECT_EQ(into_0d.sizes(), Shape{});
  EXPECT_EQ(values(into_0d), std::vector<double>{7});
  const Tensor picked = gather(arange(5).to(DType::Float32), 0, i64({3}, {}));
  EXPECT_EQ(picked.sizes(), Shape{});
  EXPECT_EQ(values(picked), std::vector<double>{3});
  // The gradient reaches the 0-d source.
  const Tensor src = full({}, 2.0).requires_grad_(true);
  sum(scatter(zeros({3}), 0, i64({2}, {}), src)).backward();
  EXPECT_EQ(values(src.grad()), std::vector<double>{1});
  // Beyond 1-d, the dims must match.
  expect_error(
      [] {
        scatter(zeros({2, 3}), 1, i64({1}, {}), full({}, 1.0));
      },
      {"[scatter] index and src must have the input's number of dims 2"});
}

// ---- masked_fill / nonzero --------------------------------------------------------------------

TEST(Index, MaskedFillBroadcastsMask) {
  const Tensor x = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  const Tensor row = masked_fill(x, tensor({true, false, true}), -1.0);
  EXPECT_EQ(values(row), (std::vector<double>{-1, 2, -1, -1, 5, -1}));
  const Tensor col = masked_fill(x, tensor({{true}, {false}}), 0);
  EXPECT_EQ(values(col), (std::vector<double>{0, 0, 0, 4, 5, 6}));
  EXPECT_EQ(values(x), (std::vector<double>{1, 2, 3, 4, 5, 6}));  // out of place
  // The result keeps x's dtype; the value is converted like PyTorch does.
  const Tensor xi = tensor({{1, 2}, {3, 4}});
  const Tensor yi = masked_fill(xi, tensor({{false, true}, {true, false}}), 2.5);
  EXPECT_EQ(yi.dtype(), DType::Int64);
  EXPECT_EQ(ints(yi), (std::vector<int64_t>{1, 2, 2, 4}));
  // A larger mask broadcasts x, and non-contiguous x works.
  const Tensor big = masked_fill(tensor({1.0, 2.0}), tensor({{true, false}, {false, false}}), 9);
  EXPECT_EQ(big.sizes(), Shape({2, 2}));
  EXPECT_EQ(values(big), (std::vector<double>{9, 2, 1, 2}));
  const Tensor xt = masked_fill(x.t(), tensor({false, true}), 0);
  EXPECT_EQ(values(xt), (std::vector<double>{1, 0, 2, 0, 3, 0}));
}

TEST(Index, MaskedFillErrors) {
  expect_error([&] { masked_fill(zeros({2}), ones({2}), 1); },
               {"[masked_fill] mask must be bool: got float32"});
  expect_error(
      [&] {
        masked_fill(zeros({2}), tensor({true, false, true}), 1);
      },
      {"[masked_fill]", "cannot be broadcast"});
}

TEST(Index, NonzeroHandComputed) {
  const Tensor a = nonzero(tensor({0.0, 1.0, 0.0, 2.0, 3.0}));
  ASSERT_EQ(a.sizes(), Shape({3, 1}));
  EXPECT_EQ(a.dtype(), DType::Int64);
  EXPECT_EQ(ints(a), (std::vector<int64_t>{1, 3, 4}));
  const Tensor b = nonzero(tensor({{1, 0}, {0, 2}, {3, 0}}));
  ASSERT_EQ(b.sizes(), Shape({3, 2}));
  EXPECT_EQ(ints(b), (std::vector<int64_t>{0, 0, 1, 1, 2, 0}));
  // Row-major order of the logical layout, not of memory.
  const Tensor c = nonzero(tensor({{1, 0}, {0, 2}, {3, 0}}).t());
  EXPECT_EQ(ints(c), (std::vector<int64_t>{0, 0, 0, 2, 1, 1}));
  EXPECT_EQ(nonzero(zeros({3, 4})).sizes(), Shape({0, 2}));
  EXPECT_EQ(nonzero(zeros({0, 4})).sizes(), Shape({0, 2}));
  EXPECT_EQ(nonzero(tensor(5.0).reshape({})).sizes(), Shape({1, 0}));
  // NaN is non-zero; -0.0 is zero.
  EXPECT_EQ(ints(nonzero(tensor({-0.0, kNaN, 0.0}))), (std::vector<int64_t>{1}));
  EXPECT_EQ(ints(nonzero(tensor({false, true, true}))), (std::vector<int64_t>{1, 2}));
}

TEST(Index, NonzeroLargeMatchesReference) {
  for (DType dt : {DType::Float32, DType::Int8, DType::Float16}) {
    const Tensor x = pattern({40, 30, 50}, dt).transpose(0, 2);  // 60000 elements
    const std::vector<double> xv = values(x);
    std::vector<int64_t> ref;
    for_each(x.sizes(), [&](const std::vector<int64_t>& c) {
      if (xv[flat(x.sizes(), c)] != 0) ref.insert(ref.end(), c.begin(), c.end());
    });
    const Tensor y = nonzero(x);
    ASSERT_EQ(y.sizes(), Shape({static_cast<int64_t>(ref.size() / 3), 3}));
    EXPECT_EQ(ints(y), ref) << dtype_name(dt);
  }
}

// ---- cat / stack / split / chunk --------------------------------------------------------------

// Reference cat: concatenation of the inputs' values along d.
std::vector<double> cat_ref(const std::vector<Tensor>& ts, int64_t d) {
  Shape out = ts[0].sizes();
  out[d] = 0;
  for (const Tensor& t : ts) out[d] += t.size(d);
  std::vector<double> ref;
  for_each(out, [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> src = c;
    for (const Tensor& t : ts) {
      if (src[d] < t.size(d)) {
        ref.push_back(values(t)[flat(t.sizes(), src)]);
        return;
      }
      src[d] -= t.size(d);
    }
  });
  return ref;
}

TEST(Join, CatAlongEachDim) {
  const Tensor a = pattern({2, 3}), b = pattern({4, 3}) + 100.0, c = pattern({2, 2}) - 100.0;
  const Tensor r0 = cat({a, b}, 0);
  ASSERT_EQ(r0.sizes(), Shape({6, 3}));
  EXPECT_EQ(values(r0), cat_ref({a, b}, 0));
  const Tensor r1 = cat({a, c, a}, 1);
  ASSERT_EQ(r1.sizes(), Shape({2, 8}));
  EXPECT_EQ(values(r1), cat_ref({a, c, a}, 1));
  const Tensor rm = cat({c, a}, -1);
  EXPECT_EQ(values(rm), cat_ref({c, a}, 1));
  EXPECT_EQ(values(cat({tensor({1.0, 2.0}), tensor({3.0})})), (std::vector<double>{1, 2, 3}));
  // 3-d along the middle dim.
  const Tensor p = pattern({2, 3, 4}), q = pattern({2, 1, 4}) * 2.0;
  EXPECT_EQ(values(cat({p, q, p}, 1)), cat_ref({p, q, p}, 1));
  // A single tensor is copied, not aliased.
  const Tensor one = cat({a});
  EXPECT_FALSE(one.is_same_storage(a));
  EXPECT_EQ(values(one), values(a));
}

TEST(Join, CatPromotesMixedDtypes) {
  const Tensor r = cat({tensor({1, 2}), tensor({0.5})});
  EXPECT_EQ(r.dtype(), DType::Float32);
  EXPECT_EQ(values(r), (std::vector<double>{1, 2, 0.5}));
  const Tensor bi = cat({tensor({true, false}), tensor({7}, DType::Int32)});
  EXPECT_EQ(bi.dtype(), DType::Int32);
  EXPECT_EQ(values(bi), (std::vector<double>{1, 0, 7}));
  const Tensor hf = cat({tensor({1.5}, DType::Float16), tensor({2.25}, DType::Float64)});
  EXPECT_EQ(hf.dtype(), DType::Float64);
  EXPECT_EQ(values(hf), (std::vector<double>{1.5, 2.25}));
  const Tensor u8 = cat({tensor({200}, DType::UInt8), tensor({-3}, DType::Int8)});
  EXPECT_EQ(u8.dtype(), promote_types(DType::UInt8, DType::Int8));
}

TEST(Join, CatNonContiguousAndEmptyInputs) {
  const Tensor a = pattern({3, 2}).t();                      // [2, 3], transposed
  const Tensor b = pattern({2, 6}).slice(1, 0, 6, 2) + 1.0;  // [2, 3], strided
  EXPECT_FALSE(a.is_contiguous());
  EXPECT_EQ(values(cat({a, b}, 0)), cat_ref({a, b}, 0));
  EXPECT_EQ(values(cat({a, b}, 1)), cat_ref({a, b}, 1));
  // Empty 1-d tensors are skipped whatever the others' shapes (but join dtype promotion).
  const Tensor e = cat({zeros({0}, DType::Int64), a, zeros({0})}, 1);
  EXPECT_EQ(e.sizes(), Shape({2, 3}));
  EXPECT_EQ(values(e), values(a));
  EXPECT_EQ(cat({zeros({0}, DType::Int64), zeros({0}, DType::Int64)}).sizes(), Shape({0}));
  EXPECT_EQ(cat({zeros({0}, DType::Int32), tensor({1.0, 2.0}, DType::Float64)}).dtype(),
            DType::Float64);
  // Zero-size along the joined dim.
  const Tensor z = cat({zeros({2, 0}), a}, 1);
  EXPECT_EQ(values(z), values(a));
}

TEST(Join, CatErrors) {
  expect_error(
      [&] {
        cat({zeros({2, 3}), zeros({2, 4})}, 0);
      },
      {"[cat] sizes of tensors must match except in dimension 0: expected size 3 but "
       "got size 4 for tensor number 1 in the list"});
  expect_error(
      [&] {
        cat({zeros({2, 3}), zeros({3})}, 0);
      },
      {"[cat] tensors must have the same number of dims: got 2 and 1"});
  expect_error([&] { cat({}, 0); }, {"[cat] expected a non-empty list of tensors"});
  expect_error(
      [&] {
        cat({zeros({}), zeros({})}, 0);
      },
      {"[cat] zero-dimensional tensor (number 0) cannot be concatenated"});
  expect_error([&] { cat({zeros({2}), zeros({2})}, 1); }, {"[cat]"});
}

TEST(Join, StackAlongNewDims) {
  const Tensor a = pattern({2, 3}), b = pattern({2, 3}) + 100.0;
  for (int64_t dim : {0, 1, 2, -1, -3}) {
    const int64_t d = dim < 0 ? dim + 3 : dim;
    const Tensor s = stack({a, b, a.t().t()}, dim);
    Shape expected = {2, 3};
    expected.insert(static_cast<size_t>(d), 3);
    ASSERT_EQ(s.sizes(), expected) << dim;
    const std::vector<double> av = values(a), bv = values(b);
    std::vector<double> ref;
    for_each(expected, [&](const std::vector<int64_t>& c) {
      std::vector<int64_t> rest = c;
      rest.erase(rest.begin() + d);
      ref.push_back((c[d] == 1 ? bv : av)[flat({2, 3}, rest)]);
    });
    EXPECT_EQ(values(s), ref) << dim;
  }
  // Non-contiguous inputs and mixed dtypes.
  const Tensor m = stack({pattern({3, 2}).t(), tensor({{1, 2, 3}, {4, 5, 6}})}, 0);
  EXPECT_EQ(m.dtype(), DType::Float32);
  EXPECT_EQ(m.sizes(), Shape({2, 2, 3}));
  EXPECT_EQ(values(stack({tensor(1.0).reshape({}), tensor(2.0).reshape({})})),
            (std::vector<double>{1, 2}));
}

TEST(Join, StackErrors) {
  expect_error(
      [&] {
        stack({zeros({2, 3}), zeros({3, 2})});
      },
      {"[stack] expects each tensor to be equal size, but got [2, 3] at entry 0 and "
       "[3, 2] at entry 1"});
  expect_error([&] { stack({}); }, {"[stack] expected a non-empty list"});
  expect_error([&] { stack({zeros({2})}, 2); }, {"[stack]"});
}

std::vector<int64_t> sizes_along(const std::vector<Tensor>& parts, int64_t d) {
  std::vector<int64_t> s;
  for (const Tensor& p : parts) s.push_back(p.size(d));
  return s;
}

TEST(Join, SplitBySizeSharesStorage) {
  Tensor x = arange(10);
  std::vector<Tensor> parts = split(x, 3);
  EXPECT_EQ(sizes_along(parts, 0), (std::vector<int64_t>{3, 3, 3, 1}));
  for (const Tensor& p : parts) EXPECT_TRUE(p.is_same_storage(x));
  EXPECT_EQ(ints(parts[3]), (std::vector<int64_t>{9}));
  parts[1].fill_(-1);
  EXPECT_EQ(ints(x), (std::vector<int64_t>{0, 1, 2, -1, -1, -1, 6, 7, 8, 9}));
  // Along dim 1 of a 2-d tensor, size larger than the dim.
  const Tensor y = pattern({3, 5});
  std::vector<Tensor> cols = split(y, 2, 1);
  EXPECT_EQ(sizes_along(cols, 1), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(values(cols[2]), values(y.narrow(1, 4, 1)));
  EXPECT_EQ(split(y, 7, -1).size(), 1u);
  EXPECT_EQ(split(zeros({0, 2}), 3).size(), 1u);
  expect_error([&] { split(y, 0, 1); }, {"[split] split size can only be 0"});
}

TEST(Join, SplitBySizesAndChunk) {
  const Tensor x = pattern({10, 2});
  std::vector<Tensor> parts = split(x, {2, 5, 0, 3}, 0);
  EXPECT_EQ(sizes_along(parts, 0), (std::vector<int64_t>{2, 5, 0, 3}));
  EXPECT_EQ(values(parts[1]), values(x.narrow(0, 2, 5)));
  EXPECT_EQ(parts[3].storage_offset(), 14);
  expect_error(
      [&] {
        split(x, {2, 5}, 0);
      },
      {"[split] split sizes [2, 5] must sum to the size 10 of dim 0"});
  EXPECT_EQ(sizes_along(chunk(x, 3), 0), (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(sizes_along(chunk(x, 5), 0), (std::vector<int64_t>{2, 2, 2, 2, 2}));
  EXPECT_EQ(sizes_along(chunk(x, 4), 0), (std::vector<int64_t>{3, 3, 3, 1}));
  EXPECT_EQ(sizes_along(chunk(pattern({5}), 4), 0), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(sizes_along(chunk(x, 20), 0), std::vector<int64_t>(10, 1));
  EXPECT_EQ(sizes_along(chunk(x, 2, -1), 1), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(sizes_along(chunk(zeros({0}), 3), 0), (std::vector<int64_t>{0, 0, 0}));
  for (const Tensor& c : chunk(x, 3)) EXPECT_TRUE(c.is_same_storage(x));
  expect_error([&] { chunk(x, 0); }, {"[chunk] number of chunks must be positive: got 0"});
  // A dim near 2^63 (in an empty tensor): the last piece's end would overflow int64.
  constexpr int64_t kN = std::numeric_limits<int64_t>::max(), kHalf = int64_t{1} << 62;
  EXPECT_EQ(sizes_along(chunk(empty({0, kN}), 2, 1), 1), (std::vector<int64_t>{kHalf, kHalf - 1}));
}

TEST(Join, UnbindGivesViewsAndOneBackwardNode) {
  const Tensor x = pattern({3, 4}).to(DType::Float64);
  const std::vector<Tensor> rows = unbind(x);
  ASSERT_EQ(rows.size(), 3u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_TRUE(rows[i].is_same_storage(x));
    EXPECT_EQ(values(rows[i]), values(x.select(0, static_cast<int64_t>(i))));
  }
  const std::vector<Tensor> cols = unbind(x, -1);
  ASSERT_EQ(cols.size(), 4u);
  EXPECT_EQ(values(cols[2]), values(x.select(1, 2)));
  EXPECT_TRUE(unbind(zeros({0, 2})).empty());
  // Gradients: slices that are used get theirs, the others zeros, through one node.
  const Tensor w = x.clone().requires_grad_(true);
  const std::vector<Tensor> s = unbind(w, 1);
  EXPECT_EQ(s[0].grad_fn(), s[3].grad_fn());
  sum(add(mul(s[1], 2.0), s[3])).backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{0, 2, 0, 1, 0, 2, 0, 1, 0, 2, 0, 1}));
  // Writing into a slice in place rebases it on its base, as for any view.
  const Tensor leaf = ones({2, 3}, DType::Float64).requires_grad_(true);
  const Tensor base = mul(leaf, 1.0);
  std::vector<Tensor> parts = unbind(base);
  mul_(parts[0], 3.0);
  EXPECT_EQ(values(base), (std::vector<double>{3, 3, 3, 1, 1, 1}));
  sum(base).backward();
  EXPECT_EQ(values(leaf.grad()), (std::vector<double>{3, 3, 3, 1, 1, 1}));
  expect_error([] { unbind(zeros({})); }, {"[unbind]", "0-d", "no dims"});
  expect_error([&] { unbind(x, 2); }, {"[unbind]", "dim"});
}

// ---- sort / topk ------------------------------------------------------------------------------

bool nan_less(double a, double b) {
  return !std::isnan(a) && (std::isnan(b) || a < b);
}

// Reference: along d, the first k of a stable sort (NaN largest), as flat row-major values and
// indices in x's shape with size(d) = k.
std::pair<std::vector<double>, std::vector<int64_t>> sort_ref(const Tensor& x, int64_t d,
                                                              bool descending, int64_t k = -1) {
  const std::vector<double> xv = values(x);
  const int64_t n = x.size(d);
  if (k < 0) k = n;
  Shape out = x.sizes();
  out[d] = k;
  std::vector<double> vals(static_cast<size_t>(shape_numel(out)));
  std::vector<int64_t> idx(vals.size());
  Shape rows = x.sizes();
  rows[d] = 1;
  for_each(rows, [&](const std::vector<int64_t>& c) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::vector<int64_t> p = c;
    const auto at = [&](int64_t j) {
      p[d] = j;
      return xv[flat(x.sizes(), p)];
    };
    std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
      return descending ? nan_less(at(j), at(i)) : nan_less(at(i), at(j));
    });
    for (int64_t j = 0; j < k; ++j) {
      p[d] = j;
      const int64_t o = flat(out, p);
      idx[o] = order[j];
      vals[o] = at(order[j]);
    }
  });
  return {vals, idx};
}

// Values equal, NaN matching NaN.
void expect_same(const std::vector<double>& got, const std::vector<double>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
    } else {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
    }
  }
}

TEST(Sort, StableWithTies) {
  const Tensor x = tensor({3.0, 1.0, 2.0, 1.0, 3.0});
  auto [v, i] = sort(x);
  EXPECT_EQ(values(v), (std::vector<double>{1, 1, 2, 3, 3}));
  EXPECT_EQ(ints(i), (std::vector<int64_t>{1, 3, 2, 0, 4}));
  auto [vd, id] = sort(x, 0, /*descending=*/true);
  EXPECT_EQ(values(vd), (std::vector<double>{3, 3, 2, 1, 1}));
  EXPECT_EQ(ints(id), (std::vector<int64_t>{0, 4, 2, 1, 3}));
  EXPECT_EQ(v.dtype(), DType::Float32);
  EXPECT_EQ(i.dtype(), DType::Int64);
}

TEST(Sort, NaNSortsAsLargest) {
  const Tensor x = tensor({2.0, kNaN, -1.0, kNaN, 5.0});
  auto [v, i] = sort(x);
  expect_same(values(v), {-1, 2, 5, kNaN, kNaN}, "ascending");
  EXPECT_EQ(ints(i), (std::vector<int64_t>{2, 0, 4, 1, 3}));
  auto [vd, id] = sort(x, -1, /*descending=*/true);
  expect_same(values(vd), {kNaN, kNaN, 5, 2, -1}, "descending");
  EXPECT_EQ(ints(id), (std::vector<int64_t>{1, 3, 4, 0, 2}));
  auto [vh, ih] = sort(x.to(DType::Float16), 0, true);
  expect_same(values(vh), {kNaN, kNaN, 5, 2, -1}, "float16");
  EXPECT_EQ(ints(ih), (std::vector<int64_t>{1, 3, 4, 0, 2}));
}

TEST(Sort, MatchesReferenceAcrossDimsAndDtypes) {
  for (DType dt : kAllDTypes) {
    // Values mod 7 give many ties, which checks stability too.
    const Tensor x = ties({4, 5, 6}, 7, dt).transpose(0, 2);
    for (int64_t dim : {0, 1, 2, -1}) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      for (bool desc : {false, true}) {
        auto [v, i] = sort(x, dim, desc);
        ASSERT_EQ(v.sizes(), x.sizes());
        auto [rv, ri] = sort_ref(x, d, desc);
        const std::string what = fmt::format("{} dim {} desc {}", dtype_name(dt), dim, desc);
        EXPECT_EQ(values(v), rv) << what;
        EXPECT_EQ(ints(i), ri) << what;
      }
    }
  }
}

TEST(Sort, LargeParallelWithTiesAndNaN) {
  Generator gen(7);
  Tensor x = round(mul(randn({96, 700}, {}, &gen), 4.0));  // ties
  x = masked_fill(x, lt(x, -7.0), kNaN);                   // and NaNs
  for (int64_t d : {0, 1}) {
    for (bool desc : {false, true}) {
      auto [v, i] = sort(x, d, desc);
      auto [rv, ri] = sort_ref(x, d, desc);
      expect_same(values(v), rv, fmt::format("dim {} desc {}", d, desc));
      EXPECT_EQ(ints(i), ri) << d << " " << desc;
    }
    auto [tv, ti] = topk(x, 50, d);
    auto [rv, ri] = sort_ref(x, d, true, 50);
    expect_same(values(tv), rv, fmt::format("topk dim {}", d));
    EXPECT_EQ(ints(ti), ri) << d;
  }
}

TEST(Sort, EdgeCases) {
  auto [v0, i0] = sort(tensor(4.0));
  EXPECT_EQ(v0.dim(), 0);
  EXPECT_EQ(v0.item(), 4.0);
  EXPECT_EQ(i0.item(), 0.0);
  auto [ve, ie] = sort(zeros({0, 3}), 0);
  EXPECT_EQ(ve.sizes(), Shape({0, 3}));
  EXPECT_EQ(ie.sizes(), Shape({0, 3}));
  auto [vs, is] = sort(zeros({3, 0}), 1, true);
  EXPECT_EQ(vs.sizes(), Shape({3, 0}));
  // Results are laid out like the input after sorting along a leading dim.
  auto [v, i] = sort(tensor({{3.0, 1.0}, {2.0, 5.0}, {1.0, 0.0}}), 0);
  EXPECT_EQ(v.sizes(), Shape({3, 2}));
  EXPECT_EQ(values(v), (std::vector<double>{1, 0, 2, 1, 3, 5}));
  EXPECT_EQ(ints(i), (std::vector<int64_t>{2, 2, 1, 0, 0, 1}));
  expect_error([&] { sort(zeros({2, 2}), 2); }, {"[sort]"});
}

TEST(Sort, TopkEveryKMatchesReference) {
  for (DType dt : {DType::Float32, DType::Float64, DType::BFloat16, DType::Int32, DType::UInt8}) {
    const Tensor x = ties({6, 7}, 4, dt).t();  // [7, 6], non-contiguous, with ties
    for (int64_t d : {0, 1}) {
      for (bool largest : {true, false}) {
        for (int64_t k = 0; k <= x.size(d); ++k) {
          auto [v, i] = topk(x, k, d, largest);
          Shape expected = x.sizes();
          expected[d] = k;
          ASSERT_EQ(v.sizes(), expected);
          ASSERT_EQ(i.sizes(), expected);
          auto [rv, ri] = sort_ref(x, d, largest, k);
          const std::string what =
              fmt::format("{} dim {} largest {} k {}", dtype_name(dt), d, largest, k);
          EXPECT_EQ(values(v), rv) << what;
          EXPECT_EQ(ints(i), ri) << what;
          if (k > 0) {
            EXPECT_EQ(values(gather(x, d, i)), values(v)) << what;
          }
        }
      }
    }
  }
}

TEST(Sort, TopkHandComputedUnsortedAndNaN) {
  const Tensor x = tensor({1.0, 5.0, 3.0, 5.0, 2.0});
  auto [v, i] = topk(x, 3);
  EXPECT_EQ(values(v), (std::vector<double>{5, 5, 3}));
  EXPECT_EQ(ints(i), (std::vector<int64_t>{1, 3, 2}));
  auto [vs, is] = topk(x, 2, 0, /*largest=*/false);
  EXPECT_EQ(values(vs), (std::vector<double>{1, 2}));
  EXPECT_EQ(ints(is), (std::vector<int64_t>{0, 4}));
  // sorted=false: the same elements, in some order.
  auto [vu, iu] = topk(x, 3, 0, true, /*sorted=*/false);
  std::vector<int64_t> got = ints(iu);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(values(gather(x, 0, iu)), values(vu));
  // NaN counts as the largest value.
  const Tensor n = tensor({1.0, kNaN, 3.0});
  auto [vn, in] = topk(n, 1);
  EXPECT_TRUE(std::isnan(vn.item()));
  EXPECT_EQ(ints(in), (std::vector<int64_t>{1}));
  auto [vm, im] = topk(n, 2, -1, false);
  EXPECT_EQ(values(vm), (std::vector<double>{1, 3}));
  EXPECT_EQ(ints(im), (std::vector<int64_t>{0, 2}));
}

TEST(Sort, TopkErrors) {
  expect_error([&] { topk(zeros({5}), 6); }, {"[topk] k (6) is out of range for dim 0 of size 5"});
  expect_error([&] { topk(zeros({2, 3}), -1, 0); }, {"[topk] k (-1) is out of range"});
  expect_error([&] { topk(zeros({2, 3}), 4, 1); }, {"[topk] k (4) is out of range for dim 1"});
  expect_error([&] { topk(zeros({2, 3}), 1, 2); }, {"[topk]"});
}

// Note [flip and roll as one gather per dim]: by hand on [[0, 1, 2], [3, 4, 5]], gradients
// through the gathers, a 0-d tensor onto itself, and the checks.
TEST(FlipRollRepeat, HandComputedAndGradients) {
  const Tensor x = from_vector<double>({0, 1, 2, 3, 4, 5}, {2, 3}, TensorOptions(DType::Float64));
  EXPECT_EQ(values(flip(x, {1})), (std::vector<double>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(values(flip(x, {0, -1})), (std::vector<double>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(values(roll(x, {1}, {1})), (std::vector<double>{2, 0, 1, 5, 3, 4}));
  EXPECT_EQ(values(roll(x, {-1, 4}, {0, 1})), (std::vector<double>{5, 3, 4, 2, 0, 1}));
  EXPECT_EQ(values(roll(x, {2})), (std::vector<double>{4, 5, 0, 1, 2, 3}));  // flattened
  EXPECT_EQ(roll(x, {2}).sizes(), x.sizes());
  EXPECT_EQ(values(repeat(x.select(0, 0), {2, 2})),
            (std::vector<double>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(repeat(x, {1, 2, 1}).sizes(), (Shape{1, 4, 3}));
  const Tensor scalar = full({}, 7.0, TensorOptions(DType::Float64));
  EXPECT_EQ(values(flip(scalar, {0})), std::vector<double>{7});
  EXPECT_FALSE(flip(x, {}).is_same(x));  // always a new tensor
  const Tensor g =
      from_vector<double>({0.5, -1, 2, 3, 1, -2}, {2, 3}, TensorOptions(DType::Float64))
          .requires_grad_(true);
  for (const auto& fn : std::vector<std::function<Tensor(const std::vector<Tensor>&)>>{
           [](const std::vector<Tensor>& in) {
             return flip(in[0], {0, 1});
           },
           [](const std::vector<Tensor>& in) {
             return roll(in[0], {1, -2}, {0, 1});
           },
           [](const std::vector<Tensor>& in) {
             return repeat(in[0], {2, 1, 2});
           }}) {
    const autograd::GradcheckResult r = autograd::gradcheck(fn, {g});
    EXPECT_TRUE(r.ok) << r.message;
  }
  EXPECT_THROW(flip(x, {1, -1}), ValueError);  // dim 1 twice
  EXPECT_THROW(roll(x, {1, 2}), ValueError);   // two shifts, no dims
  EXPECT_THROW(roll(x, {1}, {0, 1}), ValueError);
  EXPECT_THROW(repeat(x, {2}), ValueError);  // fewer repeats than dims
  EXPECT_THROW(flip(x, {2}), IndexError);
}

TEST(OneHot, ClassesOutsideTheRangeAreIndexErrors) {
  const Tensor t = tensor({0, 2, 1}, DType::Int64);
  const Tensor oh = one_hot(t, 4);
  EXPECT_EQ(oh.dtype(), DType::Int64);
  EXPECT_EQ(oh.sizes(), (Shape{3, 4}));
  EXPECT_EQ(one_hot(t).sizes(), (Shape{3, 3}));
  EXPECT_EQ(sum(one_hot(t).to(DType::Float64)).item(), 3.0);
  EXPECT_THROW(one_hot(t, 2), IndexError);  // was an all-zero row for the class 2
  EXPECT_THROW(one_hot(tensor({-1, 0}, DType::Int64), 3), IndexError);
  EXPECT_THROW(one_hot(zeros({0}, DType::Int64)), ValueError);
  EXPECT_EQ(one_hot(zeros({0}, DType::Int64), 3).sizes(), (Shape{0, 3}));
  EXPECT_THROW(one_hot(tensor({0.0})), TypeError);
}

TEST(Take, ReadsRowMajorElementsAndWrapsNegativeIndices) {
  const Tensor x = arange(0, 6, 1, DType::Int64).reshape({2, 3});
  EXPECT_EQ(ints(take(x, i64({0, -1, 4, -6}, {2, 2}))), (std::vector<int64_t>{0, 5, 4, 0}));
  EXPECT_EQ(take(x, i64({0, -1, 4, -6}, {2, 2})).sizes(), (Shape{2, 2}));
  // A transposed input is read in its own row-major order, as PyTorch's take.
  EXPECT_EQ(ints(take(x.t(), i64({1, 2}))), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(take(x, zeros({0}, DType::Int64)).numel(), 0);
  expect_error([&] { take(x, i64({6})); }, {"[take]", "6", "6 elements"});
  expect_error([&] { take(x, i64({-7})); }, {"[take]", "-7"});
  EXPECT_THROW(take(x, tensor({0.0})), TypeError);
}

TEST(TakeAlongDim, GathersWithBroadcastingAndFlattensWithoutADim) {
  const Tensor x = arange(0, 12, 1, DType::Int64).reshape({3, 4});
  // The argmax of each row, as torch.take_along_dim(x, x.argmax(1, keepdim=True), 1).
  EXPECT_EQ(ints(take_along_dim(x, i64({3, 3, 3}, {3, 1}), 1)), (std::vector<int64_t>{3, 7, 11}));
  // indices [1, 2] broadcast over the three rows.
  EXPECT_EQ(ints(take_along_dim(x, i64({2, 0}, {1, 2}), 1)),
            (std::vector<int64_t>{2, 0, 6, 4, 10, 8}));
  EXPECT_EQ(take_along_dim(x, i64({2, 0}, {1, 2}), 1).sizes(), (Shape{3, 2}));
  EXPECT_EQ(ints(take_along_dim(x, i64({11, 0, 5}))), (std::vector<int64_t>{11, 0, 5}));
  expect_error([&] { take_along_dim(x, i64({0}), 0); }, {"[take_along_dim]", "2 and 1"});
}

TEST(Unfold, WindowsAreAViewWithANewLastDim) {
  const Tensor x = arange(0, 7, 1, DType::Int64);
  const Tensor w = x.unfold(0, 3, 2);
  EXPECT_EQ(w.sizes(), (Shape{3, 3}));
  EXPECT_EQ(ints(w), (std::vector<int64_t>{0, 1, 2, 2, 3, 4, 4, 5, 6}));
  EXPECT_EQ(w.data_ptr(), x.data_ptr());  // a view, as PyTorch's
  // Along a middle dim of a 3-d tensor: [2, 5, 2] -> [2, 2, 2, 2].
  const Tensor y = arange(0, 20, 1, DType::Int64).reshape({2, 5, 2});
  const Tensor u = y.unfold(1, 2, 3);
  EXPECT_EQ(u.sizes(), (Shape{2, 2, 2, 2}));
  EXPECT_EQ(ints(u.select(0, 1).select(0, 1)), (std::vector<int64_t>{16, 18, 17, 19}));
  EXPECT_EQ(x.unfold(0, 0, 1).sizes(), (Shape{8, 0}));
  EXPECT_EQ(tensor(5.0).unfold(0, 1, 1).sizes(), (Shape{1}));
  expect_error([&] { x.unfold(0, 8, 1); }, {"[unfold]", "size 8", "7"});
  expect_error([&] { x.unfold(0, 2, 0); }, {"[unfold]", "step"});
}

TEST(ScatterIntoView, SliceSelectAndDiagonalReplaceTheirPartAndDifferentiate) {
  const Tensor x = arange(12).to(DType::Float64).reshape({3, 4});
  // Columns 0 and 2.
  const Tensor cols = tensor({{-1.0, -2.0}, {-3.0, -4.0}, {-5.0, -6.0}}, DType::Float64);
  EXPECT_EQ(values(slice_scatter(x, cols, 1, 0, std::nullopt, 2)),
            std::vector<double>({-1, 1, -2, 3, -3, 5, -4, 7, -5, 9, -6, 11}));
  // Rows 1.. with no start or end given: every row but the first.
  EXPECT_EQ(values(slice_scatter(x, zeros({2, 4}, DType::Float64), 0, 1)),
            std::vector<double>({0, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(values(select_scatter(x, tensor({9.0, 9.0, 9.0, 9.0}, DType::Float64), 0, -1)),
            std::vector<double>({0, 1, 2, 3, 4, 5, 6, 7, 9, 9, 9, 9}));
  EXPECT_EQ(values(diagonal_scatter(x, tensor({-1.0, -2.0, -3.0}, DType::Float64), 1)),
            std::vector<double>({0, -1, 2, 3, 4, 5, -2, 7, 8, 9, 10, -3}));
  EXPECT_EQ(values(x), values(arange(12).to(DType::Float64)));  // x itself is unchanged
  // src converts to x's dtype, as in copy_.
  EXPECT_EQ(select_scatter(x, ones({3}, DType::Float32), 1, 0).dtype(), DType::Float64);
  expect_error([&] { slice_scatter(x, cols, 1, 0, 2, 2); },
               {"[slice_scatter] src must have the shape of the part", "part [3, 1]"});
  expect_error([&] { select_scatter(x, ones({3}, DType::Float64), 0, 0); },
               {"[select_scatter]", "part [4]"});
  expect_error([&] { diagonal_scatter(x, ones({3}, DType::Float64), 2); }, {"[diagonal_scatter]"});
  expect_error([&] { select_scatter(x, ones({4}, DType::Float64), 0, 3); }, {"[select]"});
  expect_error([&] { slice_scatter(x, cols, 1, 0, 4, 0); }, {"[slice_scatter] step"});
  // x's gradient is g outside the part, src's is g's part.
  const Tensor xl = x.clone().requires_grad_(true);
  const Tensor sl = cols.clone().requires_grad_(true);
  for (const autograd::TensorFn& fn : {autograd::TensorFn([](const std::vector<Tensor>& in) {
                                         return slice_scatter(in[0], in[1], 1, 0, std::nullopt, 2);
                                       }),
                                       autograd::TensorFn([](const std::vector<Tensor>& in) {
                                         return select_scatter(in[0], in[1].select(1, 0), 1, 2);
                                       }),
                                       autograd::TensorFn([](const std::vector<Tensor>& in) {
                                         return diagonal_scatter(in[0], in[1].select(1, 1), -1, 1,
                                                                 0);
                                       })}) {
    const autograd::GradcheckResult r = autograd::gradcheck(fn, {xl, sl});
    EXPECT_TRUE(r.ok) << r.message;
  }
}

TEST(Combinations, RowsInLexicographicOrderOfPositions) {
  const Tensor x = tensor({10.0, 20.0, 30.0, 40.0}, DType::Int64);
  const Tensor pairs = combinations(x);
  EXPECT_EQ(pairs.sizes(), Shape({6, 2}));
  EXPECT_EQ(ints(pairs), std::vector<int64_t>({10, 20, 10, 30, 10, 40, 20, 30, 20, 40, 30, 40}));
  const Tensor repeated = combinations(x.slice(0, 0, 3), 2, true);
  EXPECT_EQ(ints(repeated), std::vector<int64_t>({10, 10, 10, 20, 10, 30, 20, 20, 20, 30, 30, 30}));
  const Tensor triples = combinations(x, 3);
  EXPECT_EQ(ints(triples), std::vector<int64_t>({10, 20, 30, 10, 20, 40, 10, 30, 40, 20, 30, 40}));
  EXPECT_EQ(combinations(x, 1).sizes(), Shape({4, 1}));
  EXPECT_EQ(combinations(x, 0).sizes(), Shape({0}));
  EXPECT_EQ(combinations(x, 5).sizes(), Shape({0, 5}));  // more than there are
  expect_error([&] { combinations(x.reshape({2, 2})); }, {"[combinations] expects a 1-d tensor"});
  expect_error([&] { combinations(x, -1); }, {"[combinations] r must be non-negative"});
  const Tensor leaf = tensor({0.5, -1.0, 2.0}, DType::Float64).requires_grad_(true);
  const autograd::GradcheckResult r = autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return combinations(in[0], 2, true); }, {leaf});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(Put, FlatPositionsFromEitherEndAndAccumulate) {
  const Tensor x = arange(6).to(DType::Float64).view({2, 3});
  EXPECT_EQ(values(put(x, i64({0, -1}), tensor({10.0, 20.0}, DType::Float64))),
            std::vector<double>({10, 1, 2, 3, 4, 20}));
  // Repeated positions add up; index and source need only as many elements.
  const Tensor acc = put(x, i64({1, 1, 4}, {3, 1}), tensor({1.0, 2.0, 3.0}, DType::Float64), true);
  EXPECT_EQ(acc.sizes(), Shape({2, 3}));
  EXPECT_EQ(values(acc), std::vector<double>({0, 4, 2, 3, 7, 5}));
  EXPECT_EQ(values(x), std::vector<double>({0, 1, 2, 3, 4, 5}));  // a copy
  Tensor y = x.clone();
  put_(y, i64({2}), tensor({-1.0}, DType::Float64), true);
  EXPECT_EQ(values(y), std::vector<double>({0, 1, 1, 3, 4, 5}));
  expect_error([&] { put(x, i64({6}), tensor({1.0})); },
               {"[put] index 6 is out of range for a tensor of 6 elements"});
  expect_error(
      [&] {
        put(x, i64({0, 1}), tensor({1.0}));
      },
      {"[put] source and index need as many elements: got 1 and 2"});
  const Tensor xl = x.clone().requires_grad_(true);
  const Tensor sl = tensor({0.5, -1.5, 2.0}, DType::Float64).requires_grad_(true);
  for (bool accumulate : {false, true}) {
    const autograd::GradcheckResult r = autograd::gradcheck(
        [accumulate](const std::vector<Tensor>& in) {
          return put(in[0], i64({5, 0, 3}), in[1], accumulate);
        },
        {xl, sl});
    EXPECT_TRUE(r.ok) << r.message;
  }
}

TEST(IndexPut, AccumulateAddsRepeatsAsALoopDoes) {
  // x[i0, :, i2] += v with repeated (i0, i2) pairs: the advanced dims, split by a slice, come
  // first, so v is [7, 5] and element (k, j) goes to (i0[k], j, i2[k]).
  const Tensor x = pattern({4, 5, 6}, DType::Float64);
  const std::vector<int64_t> i0{0, 3, 0, 1, 3, -1, 2}, i2{5, 0, 5, 2, 0, 0, -6};
  const Tensor v = pattern({7, 5}, DType::Float64);
  const Tensor got = index_put(x, {i64(i0), Tensor(), i64(i2)}, v, true);
  std::vector<double> want = values(x);
  const std::vector<double> vs = values(v);
  for (size_t k = 0; k < i0.size(); ++k) {
    const int64_t a = (i0[k] + 4) % 4, c = (i2[k] + 6) % 6;
    for (int64_t j = 0; j < 5; ++j) want[(a * 5 + j) * 6 + c] += vs[k * 5 + j];
  }
  EXPECT_EQ(values(got), want);
  // A mask and a broadcast number; in place.
  Tensor y = zeros({2, 3}, DType::Float64);
  index_put_(y, {gt(pattern({2, 3}, DType::Float64), 50.0)}, tensor({1.5}, DType::Float64), true);
  const std::vector<double> p = values(pattern({2, 3}, DType::Float64));
  for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(values(y)[i], p[i] > 50 ? 1.5 : 0.0) << i;
  // Without accumulate: a plain assignment.
  const Tensor set =
      index_put(zeros({3}, DType::Float64), {i64({2})}, tensor({7.0}, DType::Float64));
  EXPECT_EQ(values(set), std::vector<double>({0, 0, 7}));
  expect_error(
      [&] {
        index_put(zeros({3}), {i64({0}), i64({0})}, tensor({1.0}), true);
      },
      {"[index_put] too many indices for a tensor of 1 dims: got 2"});
  expect_error(
      [&] {
        index_put(zeros({3}), {i64({0, 1})}, tensor({1.0, 2.0, 3.0}), true);
      },
      {"[index_put] shapes [3] and [2] cannot be broadcast"});
  expect_error(
      [&] {
        index_put(zeros({3}), {i64({0, 1})}, ones({2, 2}), true);
      },
      {"[index_put] values of shape [2, 2] do not broadcast to the indexed shape [2]"});
  const Tensor xl = pattern({3, 4}, DType::Float64).requires_grad_(true);
  const Tensor vl = pattern({3}, DType::Float64).requires_grad_(true);
  const autograd::GradcheckResult r = autograd::gradcheck(
      [](const std::vector<Tensor>& in) {
        return index_put(in[0], {i64({0, 2, 0}), i64({1, 1, 1})}, in[1], true);
      },
      {xl, vl});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(FillDiagonal, MatricesTallWithWrapAndCubes) {
  Tensor m = zeros({3, 4}, DType::Float64);
  fill_diagonal_(m, 5.0);
  EXPECT_EQ(values(m), std::vector<double>({5, 0, 0, 0, 0, 5, 0, 0, 0, 0, 5, 0}));
  Tensor tall = zeros({7, 3}, DType::Float64);
  fill_diagonal_(tall, 1.0, true);
  std::vector<double> want(21, 0.0);
  for (int64_t k : {0, 4, 8, 12, 16, 20}) want[k] = 1;  // rows 0-2, then again from row 4
  EXPECT_EQ(values(tall), want);
  Tensor unwrapped = zeros({7, 3}, DType::Float64);
  fill_diagonal_(unwrapped, 1.0);
  EXPECT_EQ(sum(unwrapped).item(), 3.0);
  Tensor cube = zeros({3, 3, 3}, DType::Int64);
  fill_diagonal_(cube, 2);
  EXPECT_EQ(ints(cube)[0], 2);
  EXPECT_EQ(ints(cube)[13], 2);
  EXPECT_EQ(ints(cube)[26], 2);
  EXPECT_EQ(sum(cube).item<int64_t>(), 6);
  Tensor slab = cube.narrow(2, 0, 2);
  expect_error([&] { fill_diagonal_(slab, 1); },
               {"[fill_diagonal_] all dimensions of input must be of equal length"});
  Tensor v = zeros({3});
  expect_error([&] { fill_diagonal_(v, 1); },
               {"[fill_diagonal_] dimensions must be larger than 1"});
}

TEST(IndexReduce, MatchesALoopForEachReduction) {
  const Tensor x = add(pattern({4, 3}, DType::Float64), 1.0);
  const Tensor src = add(pattern({5, 3}, DType::Float64), 2.0);
  const std::vector<int64_t> idx{0, 2, 0, 3, 2};
  const std::vector<double> xv = values(x), sv = values(src);
  for (const char* reduce : {"prod", "mean", "amax", "amin"}) {
    for (bool include_self : {true, false}) {
      std::vector<double> want = xv;
      for (int64_t r = 0; r < 4; ++r) {
        for (int64_t c = 0; c < 3; ++c) {
          std::vector<double> vals;
          if (include_self) vals.push_back(xv[r * 3 + c]);
          for (size_t k = 0; k < idx.size(); ++k) {
            if (idx[k] == r) vals.push_back(sv[k * 3 + c]);
          }
          if (vals.empty()) continue;  // no source slice there, and x's own left out
          const std::string op = reduce;
          double v = op == "prod" ? 1 : op == "mean" ? 0 : vals[0];
          for (double e : vals) {
            if (op == "prod") v *= e;
            if (op == "mean") v += e / static_cast<double>(vals.size());
            if (op == "amax") v = std::max(v, e);
            if (op == "amin") v = std::min(v, e);
          }
          want[r * 3 + c] = v;
        }
      }
      const std::vector<double> got =
          values(index_reduce(x, 0, i64(idx), src, reduce, include_self));
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_NEAR(got[i], want[i], 1e-9 * std::abs(want[i])) << reduce << include_self << i;
      }
    }
  }
  Tensor y = x.clone();
  index_reduce_(y, 1, i64({2, 2}), ones({4, 2}, DType::Float64), "amin");
  EXPECT_EQ(values(y)[2], 1.0);
  expect_error([&] { index_reduce(x, 0, i64(idx), src, "sum"); },
               {"[index_reduce] reduce must be one of 'prod', 'mean', 'amax' or 'amin'"});
  expect_error([&] { index_reduce(x, 0, i64({0}), src, "prod"); },
               {"[index_reduce] source needs one slice per index along dim 0: got 5 slices and 1"});
  expect_error(
      [&] {
        index_reduce(x, 0, i64(idx), ones({5, 2}, DType::Float64), "prod");
      },
      {"[index_reduce] source must have input's size in dims other than 0"});
}

}  // namespace
}  // namespace ember
