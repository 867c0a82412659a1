// Output-size arithmetic for ops whose result shape comes from user arguments.
#pragma once

#include <cstdint>
#include <limits>

#include "ember/util/error.h"

namespace ember {

// Note [Output sizes in 128 bits]
// Convolution and pooling output sizes come from arguments users pass as int64 (padding,
// dilation, stride, groups), and a formula such as in + 2p - d(k - 1) - 1 overflows int64 long
// before any tensor could be that large. Each operand is below 2^63, so products of two and
// sums of a few fit __int128 exactly; the formulas are evaluated there, the "too small" checks
// see the true value, and only then must the size fit int64 (fit_int64) or the op throws a
// ValueError naming it, rather than wrapping to a plausible-looking shape.

/** A signed integer wide enough for the output-size formulas of int64 arguments. */
using WideInt = __int128;

/** v as int64, or a ValueError "[op] what overflows int64: v" if it does not fit. */
inline int64_t fit_int64(WideInt v, const char* op, const char* what) {
  EMBER_CHECK(v >= std::numeric_limits<int64_t>::min() && v <= std::numeric_limits<int64_t>::max(),
              "[{}] {} overflows int64: {} (check the size arguments)", op, what, v);
  return static_cast<int64_t>(v);
}

}  // namespace ember
