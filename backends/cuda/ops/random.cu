// CUDA "random": Philox draws for rand, randn and dropout masks (core/ops/factory.cpp, Note
// [Random numbers on every device]): attributes kind, seed, offset, p, scale; one thread per
// Philox block writes its 4 (float64: 2) elements of the contiguous output, with the SDK's
// mapping, so the values equal the core's host path bit for bit (normal values up to the last
// bit of the device's log/sin/cos).
#include <cstdint>

#include "backends/cuda/ops/common.cuh"
#include "backends/cuda/ops/ops.h"
#include "ember/plugin_sdk_random.hpp"

namespace ember::cuda {
namespace {

using namespace kern;

template <typename T>
__global__ void random_kernel(T* dst, int64_t n, uint64_t seed, uint64_t offset, int bits,
                              int64_t kind, double p, double scale) {
  constexpr bool kF64 = std::is_same_v<T, double>;
  constexpr int kPer = kF64 ? 2 : 4;
  const int64_t blocks = (n + kPer - 1) / kPer;
  EMBER_GRID_STRIDE_LOOP(j, blocks) {
    const sdk::PhiloxBlock b = sdk::random_block(seed, offset, static_cast<uint64_t>(j));
#pragma unroll
    for (int k = 0; k < kPer; k += 2) {
      double v0, v1;
      if (kind == sdk::kRandomNormal) {  // one log and one sincos per pair
        const sdk::NormalPair z = sdk::random_normal_pair(b, k / 2, kF64);
        v0 = z.first, v1 = z.second;
      } else {
        v0 = sdk::random_value(b, k, bits, kind, p, scale);
        v1 = sdk::random_value(b, k + 1, bits, kind, p, scale);
      }
      const int64_t i = j * kPer + k;
      if (i < n) dst[i] = narrow<T>(v0);
      if (i + 1 < n) dst[i + 1] = narrow<T>(v1);
    }
  }
}

}  // namespace

int32_t random(const ember_kernel_call* call) {
  if (call->num_outputs < 1) {
    return write_status(status_error(EMBER_ERR_INVALID, "[cuda] random: expects 1 output"), call);
  }
  const auto a = sdk::attrs<attrs::random>(call);
  const ember_tensor& dst = call->outputs[0];
  int64_t expected = 1;  // the core hands a fresh contiguous tensor
  for (int d = dst.ndim - 1; d >= 0; --d) {
    if (dst.sizes[d] != 1 && dst.strides[d] != expected) {
      return write_status(
          status_error(EMBER_ERR_UNSUPPORTED, "[cuda] random: output is not contiguous"), call);
    }
    expected *= dst.sizes[d];
  }
  const int64_t kind = a.kind;
  const auto seed = static_cast<uint64_t>(a.seed);
  const auto offset = static_cast<uint64_t>(a.offset);
  const double p = a.p, scale = a.scale;
  const int64_t n = numel(dst);
  cudaStream_t stream = nullptr;
  Status s = prepare(call, &stream);
  if (!s.ok()) return write_status(s, call);
  s = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] random: dtype %d is not floating", dst.dtype);
  visit(dst.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kFloating<T>) {
      const int64_t per = std::is_same_v<T, double> ? 2 : 4;
      s = launch("random", (n + per - 1) / per, stream, random_kernel<T>, static_cast<T*>(dst.data),
                 n, seed, offset, sdk::random_bits(dst.dtype), kind, p, scale);
    }
  });
  return write_status(s, call);
}

}  // namespace ember::cuda
