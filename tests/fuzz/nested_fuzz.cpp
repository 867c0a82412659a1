// Nested-data fuzzer: decodes the input bytes into a tree of sequences (any lengths, any depth,
// ragged or not) and numbers (bools, integers from small to extreme, floats with NaN and
// infinities) and feeds it to NestedData, the conversion behind ember.tensor([...]), with or
// without a target dtype. Each input must either build a tensor or throw ember::Error with an
// "[op]" prefix; a tensor built must have the shape of the tree and hold its numbers in order,
// in the dtype asked for or the natural one. Anything else is a finding.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "tests/fuzz/fuzz_tensors.h"

namespace ember::fuzz {
namespace {

/** What the decoder fed, to check the result against. */
struct Fed {
  std::vector<Scalar> numbers;
  Scalar::Kind kind = Scalar::Kind::Bool;
};

Scalar number(Bytes& in) {
  const uint8_t b = in.u8();
  switch (b % 4) {
    case 0:
      return Scalar(static_cast<bool>(b & 4));
    case 1:
      return Scalar(in.arg() * (b & 8 ? 1 : 37));
    case 2:
      return Scalar(in.real());
    default:
      return Scalar(static_cast<int64_t>(in.u8()) - 100);
  }
}

/** Decodes one node: a number, or a sequence of nodes. The decoder's own recursion is bounded
 *  (past 80 levels every node is a number) so that deep inputs test the converter's limit. */
void node(Bytes& in, NestedData& out, Fed& fed, int depth) {
  const uint8_t b = in.u8();
  if (b % 4 == 0 || depth > 80) {
    const Scalar v = number(in);
    out.value(v);
    fed.numbers.push_back(v);
    if (v.kind() > fed.kind) fed.kind = v.kind();
    return;
  }
  const int64_t n = b < 200 ? (b >> 2) % 4 : 0;
  out.begin_sequence(n);
  for (int64_t i = 0; i < n; ++i) node(in, out, fed, depth + 1);
  out.end_sequence();
}

void run(Bytes& in) {
  NestedData data;
  Fed fed;
  const uint8_t pick = in.u8();
  const std::optional<DType> dtype =
      pick < 128 ? std::nullopt : std::optional<DType>(kDTypes[pick % 9]);
  node(in, data, fed, 0);
  const Tensor t = data.finish(dtype);
  if (static_cast<size_t>(t.numel()) != fed.numbers.size()) {
    finding("tensor", "numel " + std::to_string(t.numel()) + " for " +
                          std::to_string(fed.numbers.size()) + " numbers");
  }
  const DType natural = fed.numbers.empty() || fed.kind == Scalar::Kind::Float ? default_dtype()
                        : fed.kind == Scalar::Kind::Int                        ? DType::Int64
                                                                               : DType::Bool;
  if (t.dtype() != dtype.value_or(natural)) finding("tensor", "unexpected dtype");
  // Every number reads back as it converts to the result's dtype on its own.
  const Tensor flat = t.reshape({-1});
  for (size_t i = 0; i < fed.numbers.size(); ++i) {
    const Scalar s = fed.numbers[i];
    const Scalar got = flat.select(0, static_cast<int64_t>(i)).item_scalar();
    const Tensor alone = full({}, fed.kind == Scalar::Kind::Float ? Scalar(s.to_double()) : s,
                              TensorOptions(t.dtype()));
    const Scalar want = alone.item_scalar();
    const bool same = got.is_floating()
                          ? (std::isnan(got.to_double()) && std::isnan(want.to_double())) ||
                                got.to_double() == want.to_double()
                          : got.to_int() == want.to_int();
    if (!same) finding("tensor", "number " + std::to_string(i) + " reads back changed");
  }
  touch(t);
}

}  // namespace
}  // namespace ember::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ember::fuzz::Bytes in(data, size);
  ember::fuzz::expect_clean([&] { ember::fuzz::run(in); });
  return 0;
}
