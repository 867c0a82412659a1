// The kernel call's checks that hold for every op and backend (core/dispatch/call.cpp), here the
// overlap of outputs with themselves, each other and the inputs (Note [Overlapping operands]).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <ember/ember.h>

#include "core/dispatch/call.h"
#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

using testing::expect_error;
using testing::make;
using testing::values;

constexpr const char* kSelfOverlap =
    "more than one element of the written-to tensor refers to a single memory location";
constexpr const char* kPartialOverlap =
    "some elements of the input tensor and the written-to tensor refer to a single memory "
    "location";

// The CPU backend and the reference backend: the check is the dispatcher's, not a kernel's.
class KernelCallOverlap : public ::testing::TestWithParam<const char*> {
 protected:
  Device device() const { return Device(find_device_type(GetParam()), 0); }
  Tensor on(const Tensor& t) const { return t.to(device()); }
  Tensor iota(int64_t n) const {
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i);
    return on(make(v, {n}, f32));
  }
  static std::vector<double> host(const Tensor& t) { return values(t.to(Device::cpu())); }
};

TEST_P(KernelCallOverlap, PartialOverlapOfAnInputIsRefusedAndWritesNothing) {
  Tensor x = iota(6);
  Tensor tail = x.narrow(0, 1, 5);
  // Without the check the kernel read what it had just written: 0 1 3 6 10 15.
  expect_error([&] { add_(tail, x.narrow(0, 0, 5)); }, {"[add_]", kPartialOverlap, "clone()"});
  EXPECT_EQ(host(x), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  try {
    sub_(tail, x.narrow(0, 0, 5));
    ADD_FAILURE() << "no error";
  } catch (const NotImplementedError&) {  // PyTorch's RuntimeError; Python's NotImplementedError
  }
  // A scalar view of the output broadcast over it overlaps it too (PyTorch refuses it as well).
  expect_error([&] { add_(x, x.select(0, 0)); }, {"[add_]", kPartialOverlap});
  // An out-of-place op into a fresh output is unaffected.
  EXPECT_EQ(host(add(tail, x.narrow(0, 0, 5))), (std::vector<double>{1, 3, 5, 7, 9}));
}

TEST_P(KernelCallOverlap, AnOutputWithInternalOverlapIsRefused) {
  Tensor e = on(zeros({1})).expand({4});
  // Without the check each add landed on the one element: 4.
  expect_error([&] { add_(e, 1.0); }, {"[add_]", kSelfOverlap, "strides [0]", "clone() it"});
  expect_error([&] { e.fill_(2.0); }, {"[fill]", kSelfOverlap});
  expect_error([&] { e.zero_(); }, {"[fill]", kSelfOverlap});
  expect_error([&] { e.copy_(iota(4)); }, {"[copy]", kSelfOverlap});
  expect_error([&] { relu_(e); }, {"[relu_]", kSelfOverlap});
  EXPECT_EQ(host(e), (std::vector<double>{0, 0, 0, 0}));
  // A size-1 dim of stride 0 holds one element: fine.
  Tensor one = on(zeros({1})).expand({1});
  add_(one, 3.0);
  EXPECT_EQ(host(one), (std::vector<double>{3}));
}

TEST_P(KernelCallOverlap, AnInputOverTheOutputsMemoryInAnotherOrderIsReadFromACopy) {
  Tensor a = iota(4).view({2, 2});
  a.copy_(a.t());  // without the copy: [[0, 2], [2, 3]]
  EXPECT_EQ(host(a), (std::vector<double>{0, 2, 1, 3}));
  Tensor b = iota(9).view({3, 3});
  add_(b, b.t());  // b + b^T, symmetric
  EXPECT_EQ(host(b), (std::vector<double>{0, 4, 8, 4, 8, 12, 8, 12, 16}));
  // A weight replaced by its own transpose and updated in place (w.data = w.data.t()).
  Tensor w = iota(6).view({2, 3});
  Tensor wt = w.t();
  mul_(wt, 2.0);
  add_(wt, wt);
  EXPECT_EQ(host(w), (std::vector<double>{0, 4, 8, 12, 16, 20}));
}

TEST_P(KernelCallOverlap, ExactAliasesAndDisjointViewsRunInPlace) {
  Tensor x = iota(4);
  add_(x, x);  // the output is the first input, and the second
  EXPECT_EQ(host(x), (std::vector<double>{0, 2, 4, 6}));
  // Columns of one matrix interleave in memory but share no element.
  Tensor m = iota(9).view({3, 3});
  m.select(1, 0).copy_(m.select(1, 1));
  EXPECT_EQ(host(m), (std::vector<double>{1, 1, 2, 4, 4, 5, 7, 7, 8}));
  // The two halves of a chunk (a GLU's a * b in place).
  Tensor g = iota(8).view({2, 4});
  std::vector<Tensor> halves = chunk(g, 2, 1);
  mul_(halves[0], halves[1]);
  EXPECT_EQ(host(g), (std::vector<double>{0, 3, 2, 3, 24, 35, 6, 7}));
  // Even and odd elements.
  Tensor v = iota(6);
  Tensor even = v.slice(0, 0, 6, 2);
  add_(even, v.slice(0, 1, 6, 2));
  EXPECT_EQ(host(v), (std::vector<double>{1, 1, 5, 3, 9, 5}));
}

TEST_P(KernelCallOverlap, OutputsOfOneCallMustNotShareMemory) {
  // max_dim writes values and indices; int64 input, so one tensor could be passed as both.
  const Tensor x = on(make({3, 1, 2, 5, 4, 0}, {2, 3}, i64));
  Tensor both = on(zeros({2}, i64));
  expect_error(
      [&] {
        run_kernel(attrs::max_dim{.reduced_dims = 1}, i64, {&x}, {&both, &both});
      },
      {"[max_dim]", "outputs 0 and 1 refer to a single memory location"});
  Tensor vals = on(zeros({2}, i64)), idx = on(zeros({2}, i64));
  run_kernel(attrs::max_dim{.reduced_dims = 1}, i64, {&x}, {&vals, &idx});
  EXPECT_EQ(host(vals), (std::vector<double>{3, 5}));
  EXPECT_EQ(host(idx), (std::vector<double>{0, 0}));
}

INSTANTIATE_TEST_SUITE_P(Backends, KernelCallOverlap, ::testing::Values("cpu", "reference"),
                         [](const auto& info) { return std::string(info.param); });

TEST(KernelCallOverlapCpu, TwoStoragesOverOneBlockAreCompared) {
  std::vector<float> buf = {0, 1, 2, 3, 4, 5};
  Tensor whole = from_blob(buf.data(), {6}, f32);
  Tensor tail = from_blob(buf.data() + 1, {5}, f32);
  expect_error([&] { add_(tail, whole.narrow(0, 0, 5)); }, {"[add_]", kPartialOverlap});
  EXPECT_EQ(buf, (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

TEST(KernelCallOverlapCpu, AnAwkwardLayoutThatIsNotDecidedIsReadFromACopy) {
  // Two as_strided views of one buffer whose overlap the search does not settle within its
  // budget (found by a search over random layouts): the input is read through a copy, so the
  // in-place result is the out-of-place one.
  Tensor base = arange(0, 2048, 1, TensorOptions(f32));
  Tensor out = base.as_strided({4, 7, 12}, {64, 113, 43}, 0);
  const Tensor in = base.as_strided({4, 7, 12}, {97, 70, 86}, 55);
  ASSERT_EQ(internal_overlap(out), InternalOverlap::No);
  ASSERT_EQ(mem_overlap(out, in), MemOverlap::TooHard);
  const std::vector<double> expected = values(add(out, in));
  add_(out, in);
  EXPECT_EQ(values(out), expected);
}

}  // namespace
}  // namespace ember
