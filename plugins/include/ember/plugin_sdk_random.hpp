// Philox4x32-10 and the mapping of its words to Ember's random values, shared by the core's host
// path and every backend's "random" kernel, so one seed gives the same tensor on every device
// (Note [Random numbers on every device], core/ops/factory.cpp). Header-only; compiles as host
// code and, under nvcc, as host and device code.
#pragma once

#include <cmath>
#include <cstdint>

#include "ember/plugin_sdk.hpp"

namespace ember::sdk {

/** Four 32-bit words of one Philox block. */
struct PhiloxBlock {
  uint32_t w[4];
};

/** Philox4x32 with 10 rounds (Salmon et al., SC 2011) of counter c under key k: Random123's
 *  philox4x32_10, known-answer-tested against its kat_vectors. */
EMBER_SDK_HOST_DEVICE inline PhiloxBlock philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2,
                                                       uint32_t c3, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  return {{c0, c1, c2, c3}};
}

/** Kinds of the "random" op (its ints[0]). */
enum RandomKind : int64_t {
  kRandomUniform = 0,      // uniform in [0, 1) with as many random bits as the dtype holds
  kRandomNormal = 1,       // standard normal (Box-Muller)
  kRandomDropoutMask = 2,  // 0 with probability floats[0], else floats[1]
};

/** Elements per Philox block: 4 for float32 and the half types, 2 for float64. */
EMBER_SDK_HOST_DEVICE inline int random_per_block(bool f64) {
  return f64 ? 2 : 4;
}

/** Philox blocks that `n` elements use. */
EMBER_SDK_HOST_DEVICE inline uint64_t random_blocks(int64_t n, bool f64) {
  const uint64_t per = static_cast<uint64_t>(random_per_block(f64));
  return (static_cast<uint64_t>(n) + per - 1) / per;
}

/** Block `j` of a draw that starts at counter `offset` under `seed`: counter offset + j (64
 *  bits, low word first) followed by two zero words; key the seed's two words. */
EMBER_SDK_HOST_DEVICE inline PhiloxBlock random_block(uint64_t seed, uint64_t offset, uint64_t j) {
  const uint64_t c = offset + j;
  return philox4x32_10(static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), 0u, 0u,
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

/** Significand bits of a floating dtype (EMBER_F32 ...): a uniform draw with that many random
 *  bits is exact in the dtype, so it never rounds up to 1. */
EMBER_SDK_HOST_DEVICE inline int random_bits(int32_t dtype) {
  return dtype == 1 /* F64 */ ? 53 : dtype == 2 /* F16 */ ? 11 : dtype == 3 /* BF16 */ ? 8 : 24;
}

/** 53 random bits of two words as a double in [0, 1). */
EMBER_SDK_HOST_DEVICE inline double random_unit53(uint32_t hi, uint32_t lo) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 21) | (lo >> 11);
  return static_cast<double>(bits) * 0x1p-53;
}

/** The two standard normal values of pair `pair` of block `b` (Box-Muller): float64 has one pair
 *  per block (words 0-1 and 2-3 as two 53-bit uniforms), the narrower dtypes two (words 2 * pair
 *  and 2 * pair + 1). u1 lies in (0, 1], so log(u1) is finite; the pair's first element takes
 *  the cosine, the second the sine. */
struct NormalPair {
  double first, second;
};
EMBER_SDK_HOST_DEVICE inline NormalPair random_normal_pair(const PhiloxBlock& b, int pair,
                                                           bool f64) {
  double u1, u2;
  if (f64) {
    u1 = 1.0 - random_unit53(b.w[0], b.w[1]);
    u2 = random_unit53(b.w[2], b.w[3]);
  } else {
    u1 = (static_cast<double>(b.w[2 * pair]) + 1.0) * 0x1p-32;
    u2 = static_cast<double>(b.w[2 * pair + 1]) * 0x1p-32;
  }
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double angle = 6.283185307179586477 * u2;
  return {r * std::cos(angle), r * std::sin(angle)};
}

/** Element k (0 <= k < random_per_block) of block `b`, as a double, for a dtype with `bits`
 *  significand bits (random_bits) and the op's kind and floats (p, scale). For normal values,
 *  callers filling whole pairs call random_normal_pair once per pair instead (same values). */
EMBER_SDK_HOST_DEVICE inline double random_value(const PhiloxBlock& b, int k, int bits,
                                                 int64_t kind, double p, double scale) {
  const bool f64 = bits > 24;
  if (kind == kRandomNormal) {
    const NormalPair z = random_normal_pair(b, k / 2, f64);
    return k % 2 == 0 ? z.first : z.second;
  }
  // Dropout masks decide with 24 bits (53 for float64) whatever the dtype's precision.
  const int used = kind == kRandomDropoutMask ? (f64 ? 53 : 24) : bits;
  // float64 has k < 2; the mask only tells the compiler so (it sees k up to 3 where a caller
  // unrolls a float32 block).
  const double u = f64 ? random_unit53(b.w[(2 * k) & 3], b.w[(2 * k + 1) & 3])
                       : static_cast<double>(b.w[k] >> (32 - used)) * (1.0 / (1u << used));
  if (kind == kRandomDropoutMask) return u < p ? 0.0 : scale;
  return u;
}

}  // namespace ember::sdk
