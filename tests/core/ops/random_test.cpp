// Philox random numbers (plugin_sdk_random.hpp, Note [Random numbers on every device]): the
// generator against Random123's known answers, rand/randn/dropout against the documented
// mapping, the same tensor on every device, and per-device default generators.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <ember/ember.h>

#include "ember/plugin_sdk_random.hpp"
#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

std::vector<double> values(const Tensor& t) {
  const Tensor h = t.to(Device::cpu()).to(DType::Float64).contiguous();
  return std::vector<double>(h.data_ptr<double>(), h.data_ptr<double>() + h.numel());
}

TEST(Philox, MatchesRandom123KnownAnswers) {
  struct Kat {
    uint32_t c[4], k[2], want[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& t : kats) {
    const sdk::PhiloxBlock b = sdk::philox4x32_10(t.c[0], t.c[1], t.c[2], t.c[3], t.k[0], t.k[1]);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(b.w[i], t.want[i]) << "word " << i;
  }
}

TEST(Philox, RandIsTheDocumentedMappingOfTheGeneratorsBlocks) {
  const uint64_t seed = 0x123456789abcdefull;
  Generator g(seed);
  const std::vector<double> first = values(rand({10}, DType::Float32, &g));
  const std::vector<double> second = values(rand({3}, DType::Float32, &g));
  for (int64_t i = 0; i < 10; ++i) {
    const sdk::PhiloxBlock b = sdk::random_block(seed, 0, static_cast<uint64_t>(i / 4));
    EXPECT_EQ(first[i], static_cast<double>(b.w[i % 4] >> 8) * 0x1p-24) << i;
  }
  // 10 elements used 3 blocks: the next draw starts at counter 3.
  const sdk::PhiloxBlock b3 = sdk::random_block(seed, 3, 0);
  EXPECT_EQ(second[0], static_cast<double>(b3.w[0] >> 8) * 0x1p-24);
  EXPECT_EQ(g.philox_reserve(0), 4u);
  // float64 takes 53 bits from a pair of words, two elements per block.
  Generator h(seed);
  const std::vector<double> d = values(rand({3}, DType::Float64, &h));
  const sdk::PhiloxBlock b0 = sdk::random_block(seed, 0, 0), b1 = sdk::random_block(seed, 0, 1);
  EXPECT_EQ(d[0], sdk::random_unit53(b0.w[0], b0.w[1]));
  EXPECT_EQ(d[1], sdk::random_unit53(b0.w[2], b0.w[3]));
  EXPECT_EQ(d[2], sdk::random_unit53(b1.w[0], b1.w[1]));
  EXPECT_EQ(h.philox_reserve(0), 2u);
}

TEST(Philox, RandnIsBoxMullerOnPairsOfWords) {
  const uint64_t seed = 99;
  Generator g(seed);
  const std::vector<double> z = values(randn({4}, DType::Float64, &g));
  const sdk::PhiloxBlock b = sdk::random_block(seed, 0, 0);
  const double u1 = 1.0 - sdk::random_unit53(b.w[0], b.w[1]);
  const double u2 = sdk::random_unit53(b.w[2], b.w[3]);
  const double r = std::sqrt(-2.0 * std::log(u1));
  EXPECT_DOUBLE_EQ(z[0], r * std::cos(2 * M_PI * u2));
  EXPECT_DOUBLE_EQ(z[1], r * std::sin(2 * M_PI * u2));
  // A zero word gives u1 = 2^-32, not log(0).
  sdk::PhiloxBlock zero{{0, 0, 0, 0}};
  EXPECT_TRUE(std::isfinite(sdk::random_value(zero, 0, 24, sdk::kRandomNormal, 0, 0)));
}

TEST(Philox, TheSameSeedGivesTheSameTensorOnEveryDevice) {
  init();
  const int16_t ref = find_device_type("reference");
  ASSERT_GE(ref, 0) << "the reference backend is not loaded";
  // The CPU's kernel draws float32 and float64 in chunks over its threads (random.cpp): sizes
  // of one chunk and of several, ending inside a block; the reference draws on the host.
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    for (int64_t n : {1001, 300001}) {
      Generator a(5), b(5);
      EXPECT_EQ(values(rand({n}, {d, Device::cpu()}, &a)),
                values(rand({n}, {d, Device(ref, 0)}, &b)));
      EXPECT_EQ(values(randn({n / 30}, {d, Device::cpu()}, &a)),
                values(randn({n / 30}, {d, Device(ref, 0)}, &b)));
      EXPECT_EQ(values(randn({n}, {d, Device::cpu()}, &a)),
                values(randn({n}, {d, Device(ref, 0)}, &b)));
      const Tensor x = ones({n / 2}, d);
      EXPECT_EQ(values(dropout(x, 0.25, true, &a)),
                values(dropout(x.to(Device(ref, 0)), 0.25, true, &b)));
    }
  }
}

TEST(Philox, EachDeviceHasItsOwnDefaultGeneratorAndManualSeedSeedsAll) {
  init();
  const Device ref(find_device_type("reference"), 0);
  manual_seed(42);
  const std::vector<double> cpu_first = values(rand({8}));
  const std::vector<double> ref_first = values(rand({8}, {DType::Float32, ref}));
  EXPECT_EQ(cpu_first, ref_first);  // same seed, same counter, another generator
  manual_seed(42);
  (void)rand({1000}, {DType::Float32, ref});  // moves the reference's generator only
  EXPECT_EQ(values(rand({8})), cpu_first);
  EXPECT_NE(&default_generator(ref), &default_generator());
  EXPECT_EQ(&default_generator(Device::cpu()), &default_generator());
  EXPECT_EQ(default_generator(ref).seed(), 42u);
}

TEST(Philox, DropoutMaskDecidesWith24BitsWhateverTheDtype) {
  // bfloat16 keeps 8 bits of a uniform, but its dropout mask still keeps 1 - p of the elements.
  Generator g(11);
  const std::vector<double> v = values(dropout(ones({200000}, DType::BFloat16), 0.3, true, &g));
  double zeros = 0;
  for (double x : v) zeros += x == 0.0;
  EXPECT_NEAR(zeros / static_cast<double>(v.size()), 0.3, 0.006);
}

// Note [Generator states]: a state restores every draw that follows: Philox tensors, host draws
// and the normal value a distribution keeps between calls.
TEST(GeneratorState, RestoresEveryDrawThatFollows) {
  using testing::expect_error;
  Generator g(123);
  (void)rand({5}, {}, &g);
  (void)g.normal();  // leaves the second value of a pair cached
  const Tensor state = g.get_state();
  EXPECT_EQ(state.dtype(), DType::UInt8);
  const Tensor a = randn({7}, TensorOptions(DType::Float64), &g);
  const double h1 = g.normal(), h2 = g.uniform();
  const uint64_t n1 = g.next();
  Generator other(9);
  other.set_state(state);
  EXPECT_EQ(other.seed(), 123u);
  EXPECT_EQ(values(randn({7}, TensorOptions(DType::Float64), &other)), values(a));
  EXPECT_EQ(other.normal(), h1);
  EXPECT_EQ(other.uniform(), h2);
  EXPECT_EQ(other.next(), n1);
  expect_error([&] { other.set_state(zeros({4})); }, {"[Generator.set_state]", "uint8"});
  expect_error([&] { other.set_state(zeros({4}, TensorOptions(DType::UInt8))); },
               {"[Generator.set_state]", "not a generator state"});
  const Tensor cut = state.narrow(0, 0, state.numel() - 20).clone();
  expect_error([&] { other.set_state(cut); }, {"not a generator state"});
}

/** How often each of `k` categories occurs in `draws` (any shape). */
std::vector<double> counts(const Tensor& draws, int64_t k) {
  std::vector<double> c(static_cast<size_t>(k), 0.0);
  for (double v : values(draws)) c.at(static_cast<size_t>(v)) += 1;
  return c;
}

// Pearson's chi-square of observed counts against expected ones.
double chi_square(const std::vector<double>& seen, const std::vector<double>& expected) {
  double x = 0;
  for (size_t i = 0; i < seen.size(); ++i) {
    if (expected[i] > 0) x += (seen[i] - expected[i]) * (seen[i] - expected[i]) / expected[i];
  }
  return x;
}

TEST(Multinomial, WithReplacementDrawsInProportionToUnnormalisedWeights) {
  init();
  Generator g(11);
  const Tensor w = from_vector(std::vector<float>{1, 0, 2, 3, 4}, {5}, TensorOptions());
  const int64_t n = 40000;
  const Tensor d = multinomial(w, n, /*replacement=*/true, &g);
  EXPECT_EQ(d.dtype(), DType::Int64);
  EXPECT_EQ(d.sizes(), (std::vector<int64_t>{n}));
  const std::vector<double> c = counts(d, 5);
  EXPECT_EQ(c[1], 0) << "a zero weight is never drawn";
  // 3 degrees of freedom: P(chi2 > 25) < 2e-5.
  EXPECT_LT(chi_square(c, {n * 0.1, 0, n * 0.2, n * 0.3, n * 0.4}), 25.0);
}

TEST(Multinomial, WithoutReplacementFollowsSuccessiveDrawsAndNeverRepeats) {
  init();
  Generator g(12);
  // Every row the same weights: row r's two draws (i, j) have probability
  // w_i / W * w_j / (W - w_i).
  const int64_t rows = 30000;
  const Tensor w = from_vector(std::vector<double>{1, 2, 3}, {1, 3}, TensorOptions(DType::Float64))
                       .expand({rows, 3})
                       .contiguous();
  const Tensor d = multinomial(w, 2, false, &g);
  ASSERT_EQ(d.sizes(), (std::vector<int64_t>{rows, 2}));
  const std::vector<double> v = values(d);
  std::vector<double> pairs(9, 0.0), expected(9, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const auto i = static_cast<size_t>(v[2 * r]), j = static_cast<size_t>(v[2 * r + 1]);
    ASSERT_NE(i, j) << "row " << r << " drew a category twice";
    pairs[3 * i + j] += 1;
  }
  const double wt[3] = {1, 2, 3};
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = 0; j < 3; ++j) {
      if (i != j) expected[3 * i + j] = rows * wt[i] / 6 * wt[j] / (6 - wt[i]);
    }
  }
  // 5 degrees of freedom: P(chi2 > 30) < 2e-5.
  EXPECT_LT(chi_square(pairs, expected), 30.0);
  // All categories without replacement: a permutation of the categories of positive weight.
  const Tensor all =
      multinomial(from_vector(std::vector<float>{5, 1, 1, 2}, {4}, {}), 4, false, &g);
  std::vector<double> sorted = values(all);
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<double>{0, 1, 2, 3}));
}

TEST(Multinomial, TheSameGeneratorStateGivesTheSameDrawsOnEveryDevice) {
  init();
  const int16_t ref = find_device_type("reference");
  ASSERT_GE(ref, 0) << "the reference backend is not loaded";
  const Tensor w = rand({4, 50});
  Generator a(3), b(3);
  EXPECT_EQ(values(multinomial(w, 7, true, &a)),
            values(multinomial(w.to(Device(ref, 0)), 7, true, &b)));
  EXPECT_EQ(values(multinomial(w, 7, false, &a)),
            values(multinomial(w.to(Device(ref, 0)), 7, false, &b)));
}

TEST(Multinomial, RefusesWhatIsNotADistribution) {
  using testing::expect_error;
  init();
  const auto f = [](std::vector<float> v) {
    return from_vector(v, {static_cast<int64_t>(v.size())}, TensorOptions());
  };
  expect_error([&] { multinomial(f({1, -1, 2}), 1); }, {"[multinomial]", "non-negative"});
  expect_error([&] { multinomial(f({1, NAN}), 1); }, {"[multinomial]", "finite"});
  expect_error([&] { multinomial(f({1, INFINITY}), 1); }, {"[multinomial]", "finite"});
  expect_error([&] { multinomial(zeros({2, 3}), 1); }, {"[multinomial]", "sums to 0"});
  expect_error([&] { multinomial(f({1, 0, 2}), 3); }, {"[multinomial]", "only 2"});
  expect_error([&] { multinomial(f({1, 2}), 3); }, {"[multinomial]", "3 samples", "2 categories"});
  expect_error([&] { multinomial(f({1, 2}), 0); }, {"[multinomial]", "positive"});
  expect_error([&] { multinomial(ones({2, 2, 2}), 1); }, {"[multinomial]", "1-D or 2-D"});
  expect_error([&] { multinomial(ones({3}, TensorOptions(DType::Int64)), 1); },
               {"[multinomial]", "floating"});
  expect_error([&] { multinomial(ones({2, 0}), 1); }, {"[multinomial]", "at least one"});
}

// Parameters outside their domain are errors, as in PyTorch, not draws of a wrong distribution.
TEST(Random, NormalAndBernoulliRefuseParametersOutsideTheirDomain) {
  testing::expect_error([] { normal(0, -1, {2}); }, {"[normal]", "std >= 0.0", "-1"});
  testing::expect_error([] { bernoulli(zeros({2}), 2.0); }, {"[bernoulli]", "[0, 1]", "p=2"});
  testing::expect_error([] { bernoulli(tensor({0.5, NAN})); }, {"[bernoulli]", "[0, 1]"});
  testing::expect_error([] { bernoulli(tensor({0.5, -0.25})); }, {"[bernoulli]", "-0.25"});
  EXPECT_EQ(testing::values(bernoulli(tensor({0.0, 1.0, 1.0}))), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(testing::values(bernoulli(zeros({3}), 1.0)), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(testing::values(normal(2.5, 0.0, {2})), (std::vector<double>{2.5, 2.5}));
  const std::vector<double> v = testing::values(normal(10.0, 2.0, {4000}, DType::Float64));
  double mean = 0, sq = 0;
  for (double x : v) mean += x / v.size();
  for (double x : v) sq += (x - mean) * (x - mean) / v.size();
  EXPECT_NEAR(mean, 10.0, 0.15);
  EXPECT_NEAR(std::sqrt(sq), 2.0, 0.15);
}

// torch.normal with tensors: mean and std broadcast, each sample drawn with its own pair.
TEST(Random, NormalWithTensorsBroadcastsMeanAndStd) {
  const Tensor mean = tensor({0.0, 100.0}).to(DType::Float64);
  const Tensor std = zeros({3, 1}, DType::Float64);
  const Tensor z = normal(mean, std);
  EXPECT_EQ(z.sizes(), (Shape{3, 2}));
  EXPECT_EQ(testing::values(z), (std::vector<double>{0, 100, 0, 100, 0, 100}));
  const std::vector<double> v =
      testing::values(normal(full({4000}, 5.0, DType::Float64), 0.5).to(DType::Float64));
  double m = 0;
  for (double x : v) m += x / v.size();
  EXPECT_NEAR(m, 5.0, 0.05);
  EXPECT_EQ(testing::values(normal(7.0, zeros({2}))), (std::vector<double>{7, 7}));
  testing::expect_error(
      [] {
        normal(zeros({2}), tensor({1.0, -1.0}));
      },
      {"[normal]", "std >= 0.0", "-1"});
  testing::expect_error([] { normal(zeros({2}, DType::Int64), 1.0); }, {"[normal]", "floating"});
  testing::expect_error([] { normal(zeros({2}), ones({3})); }, {"cannot be broadcast"});
  // No gradient flows into torch.normal's parameters.
  const Tensor mu = zeros({2}).requires_grad_(true);
  EXPECT_FALSE(normal(mu, 1.0).requires_grad());
}

// PyTorch's out=: one rule for every op (Note [out= arguments]).
TEST(WriteOut, CopiesCastsAndResizesAsPyTorchDoes) {
  Tensor out = empty({0});
  bool resized = true;
  Tensor& r = write_out(out, tensor({1.0, 2.0, 3.0}), "op", &resized);
  EXPECT_EQ(&r, &out);
  EXPECT_FALSE(resized);  // an empty out takes the shape without a word
  EXPECT_EQ(testing::values(out), (std::vector<double>{1, 2, 3}));
  Tensor d = zeros({3}, DType::Float64);
  const void* storage = d.data_ptr();
  write_out(d, tensor({4.0, 5.0, 6.0}), "op", &resized);
  EXPECT_EQ(d.data_ptr(), storage);  // the same memory, written in place
  EXPECT_EQ(d.dtype(), DType::Float64);
  EXPECT_EQ(testing::values(d), (std::vector<double>{4, 5, 6}));
  Tensor big = zeros({5});
  write_out(big, ones({2, 2}), "op", &resized);
  EXPECT_TRUE(resized);
  EXPECT_EQ(big.sizes(), (Shape{2, 2}));
  Tensor ints = zeros({2}, DType::Int64);
  testing::expect_error([&] { write_out(ints, ones({2}), "add"); },
                        {"[add]", "float32 can't be cast", "int64"});
  write_out(ints, ones({2}, DType::Int32), "add");  // integers widen
  EXPECT_EQ(testing::values(ints), (std::vector<double>{1, 1}));
  Tensor f = zeros({2});
  testing::expect_error([&] { write_out(f, ones({2}).requires_grad_(true), "mul"); },
                        {"[mul]", "automatic differentiation"});
  EXPECT_TRUE(can_cast(DType::Bool, DType::Float32));
  EXPECT_TRUE(can_cast(DType::Int64, DType::Float16));
  EXPECT_FALSE(can_cast(DType::Float64, DType::Int64));
  EXPECT_FALSE(can_cast(DType::UInt8, DType::Bool));
}

TEST(InPlaceDraws, FollowTheirDistributions) {
  init();
  Generator gen(7);
  const int64_t n = 40000;
  const auto mean_of = [](const Tensor& t) { return mean(t.to(DType::Float64)).item(); };
  Tensor e = empty({n}, DType::Float64);
  exponential_(e, 2.0, &gen);
  EXPECT_NEAR(mean_of(e), 0.5, 0.02);
  EXPECT_GE(min(e).item(), 0.0);
  Tensor g = empty({n}, DType::Float32);
  geometric_(g, 0.25, &gen);
  EXPECT_NEAR(mean_of(g), 4.0, 0.1);  // 1 / p
  EXPECT_GE(min(g).item(), 1.0);
  EXPECT_EQ(values(sub(g, floor(g))), std::vector<double>(n, 0.0));
  Tensor l = empty({n}, DType::Float64);
  log_normal_(l, 0.5, 0.25, &gen);
  EXPECT_NEAR(mean_of(log(l)), 0.5, 0.01);
  Tensor c = empty({n}, DType::Float64);
  cauchy_(c, 1.0, 2.0, &gen);
  EXPECT_NEAR(mean_of(lt(c, 1.0)), 0.5, 0.02);                 // the median
  EXPECT_NEAR(mean_of(lt(abs(sub(c, 1.0)), 2.0)), 0.5, 0.02);  // the quartiles at median +- sigma
  Tensor r = empty({n}, DType::Int64);
  random_(r, 3, 7, &gen);
  EXPECT_EQ(min(r).item<int64_t>(), 3);
  EXPECT_EQ(max(r).item<int64_t>(), 6);
  Tensor u8 = empty({n}, DType::UInt8);
  random_(u8, 0, std::nullopt, &gen);
  EXPECT_EQ(max(u8.to(DType::Int64)).item<int64_t>(), 255);
  Tensor b = empty({64}, DType::Bool);
  random_(b, 0, std::nullopt, &gen);
  EXPECT_GT(sum(b).item<int64_t>(), 0);
  // The same generator state gives the same draws.
  Generator g1(3), g2(3);
  Tensor a1 = empty({5}), a2 = empty({5});
  EXPECT_EQ(values(exponential_(a1, 1.0, &g1)), values(exponential_(a2, 1.0, &g2)));
  testing::expect_error([&] { exponential_(e, 0.0); }, {"[exponential_] expects lambd > 0"});
  testing::expect_error([&] { geometric_(e, 1.0); }, {"[geometric_] expects p in (0, 1)"});
  testing::expect_error([&] { random_(r, 5, 5); },
                        {"[random_] expects 'from' to be less than 'to'"});
  testing::expect_error([&] { exponential_(r); }, {"[exponential_] not implemented for int64"});
}

}  // namespace
}  // namespace ember
