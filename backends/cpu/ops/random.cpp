// The "random" op (rand, randn, dropout masks: Note [Random numbers on every device] in
// core/ops/factory.cpp): the Philox blocks of a draw with the SDK's mapping
// (plugin_sdk_random.hpp), as the CUDA kernel and the core's host path compute them, so the
// values are theirs bit for bit; OpenMP over chunks of blocks, which cannot change a value.
// Float32 and float64; the core's host path draws the half types.
#include <algorithm>
#include <type_traits>

#include "backends/cpu/loops.h"
#include "backends/cpu/ops/ops.h"
#include "ember/plugin_sdk_random.hpp"

namespace ember::cpu {

EMBER_KERNEL(random) {
  const auto a = sdk::attrs<attrs::random>(call);
  if (call->num_outputs < 1 || !sdk::is_contiguous(call->outputs[0])) {
    return sdk::fail(call, EMBER_ERR_UNSUPPORTED, "random: expects one contiguous output");
  }
  return visit_f32_f64(call, "random", [&](auto tag) {
    using T = decltype(tag);
    constexpr bool kF64 = std::is_same_v<T, double>;
    constexpr int kPer = kF64 ? 2 : 4;  // elements of one block (sdk::random_per_block)
    const ember_tensor& out = call->outputs[0];
    T* dst = sdk::data<T>(out);
    const int64_t n = sdk::numel(out);
    const int bits = sdk::random_bits(out.dtype);
    const auto seed = static_cast<uint64_t>(a.seed), offset = static_cast<uint64_t>(a.offset);
    for_each_chunk((n + kPer - 1) / kPer, 1 << 14, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) {
        const sdk::PhiloxBlock b = sdk::random_block(seed, offset, static_cast<uint64_t>(j));
        double v[kPer];
        for (int k = 0; k < kPer; k += 2) {
          if (a.kind == sdk::kRandomNormal) {  // one log and one sine and cosine a pair
            const sdk::NormalPair z = sdk::random_normal_pair(b, k / 2, kF64);
            v[k] = z.first, v[k + 1] = z.second;
          } else {
            v[k] = sdk::random_value(b, k, bits, a.kind, a.p, a.scale);
            v[k + 1] = sdk::random_value(b, k + 1, bits, a.kind, a.p, a.scale);
          }
        }
        const int64_t i = j * kPer;
        const int64_t m = std::min<int64_t>(kPer, n - i);
        for (int64_t k = 0; k < m; ++k) dst[i + k] = static_cast<T>(v[k]);
      }
    });
  });
}

}  // namespace ember::cpu
