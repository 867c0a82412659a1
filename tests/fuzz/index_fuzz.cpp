// Indexing fuzzer: decodes the input bytes into a tensor of random shape, dtype and view and an
// index of up to six items (None, Ellipsis, bools, integers from small to extreme, slices with
// any ends and steps, integer index tensors, bool and byte masks), then reads x[index] and
// assigns to it. Each call must return or throw ember::Error with an "[op]" prefix; a read of only
// basic items must be a view of x's storage; after x[index] = v succeeds, x[index] reads v
// everywhere. Anything else (another exception, a crash, a sanitizer report) is a finding.
#include <cstdint>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "tests/fuzz/fuzz_tensors.h"

namespace ember::fuzz {
namespace {

using indexing::TensorIndex;

std::optional<int64_t> slice_end(Bytes& in) {
  if (in.u8() % 3 == 0) return std::nullopt;
  return in.arg();
}

/** One index item; `basic` is cleared by an index tensor. */
TensorIndex item(Bytes& in, bool& basic) {
  switch (in.u8() % 9) {
    case 0:
      return indexing::None;
    case 1:
      return indexing::Ellipsis;
    case 2:
      return static_cast<bool>(in.u8() & 1);
    case 3:
    case 4: {
      const std::optional<int64_t> start = slice_end(in), stop = slice_end(in);
      const uint8_t s = in.u8();
      const int64_t step = s < 240 ? 1 + s % 3 : in.arg();  // sometimes 0 or negative
      return indexing::Slice(start, stop, step);
    }
    case 5:
      basic = false;
      return index_operand(in);
    case 6:
      basic = false;
      return operand(in, 3).to(in.u8() & 1 ? DType::Bool : DType::UInt8);
    default:
      return in.arg();
  }
}

bool same_storage(const Tensor& a, const Tensor& b) {
  return a.impl()->storage().get() == b.impl()->storage().get();
}

/** Decoding itself may throw (an operand's view out of range): that input ends there. */
void run(Bytes& in) {
  Tensor x;
  std::vector<TensorIndex> items;
  bool basic = true;
  bool decoded = false;
  expect_clean([&] {
    x = operand(in);
    for (int n = in.u8() % 7; n > 0; --n) items.push_back(item(in, basic));
    decoded = true;
  });
  if (!decoded) return;
  expect_clean([&] {
    const Tensor r = index(x, items);
    if (basic && !same_storage(r, x)) finding("index", "basic indexing did not return a view");
    touch(r);
  });
  const int64_t v = in.u8() & 1;
  expect_clean([&] {
    if (in.u8() & 1) {
      index_put_(x, items, Scalar(v));
    } else {
      index_put_(x, items, operand(in, 2).fill_(v));
    }
    const Tensor back = index(x, items);
    if (back.numel() > 0 && !all(eq(back, Scalar(v))).item<bool>()) {
      finding("index_put_", "x[index] = " + std::to_string(v) + " does not read back");
    }
  });
}

}  // namespace
}  // namespace ember::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ember::fuzz::Bytes in(data, size);
  ember::fuzz::run(in);
  return 0;
}
