// CUDA matmul for the integer dtypes, which cuBLAS does not offer (int8 GEMM aside, which
// accumulates in int32 and saturates nothing the CPU plugin would): a tiled kernel with the CPU
// plugin's semantics.
//
// Note [Integer matmul on the GPU]
// Every product and sum is taken in uint64 arithmetic of the operands widened to int64, so it
// wraps modulo 2^64 like the CPU plugin's blocked loop and the reference's, and the result is
// truncated to the dtype once (Note [Integer overflow wraps]). Each 16 x 16 block of threads
// owns a 16 x 16 tile of C and walks K in steps of 16 through shared memory; tiles and batch
// entries are visited by grid-stride loops, so any sizes fit the grid's limits. Operands are
// read through their strides (the SDK's MatmulGeometry), so no packing is needed.
#include <cstdint>

#include "backends/cuda/ops/common.cuh"
#include "backends/cuda/ops/ops.h"
#include "ember/plugin_sdk.hpp"

namespace ember::cuda {
namespace {

constexpr int kTile = 16;

template <typename T>
__global__ void integer_matmul_kernel(const sdk::MatmulGeometry g, const T* a, const T* b, T* c) {
  __shared__ uint64_t as[kTile][kTile];
  __shared__ uint64_t bs[kTile][kTile + 1];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int64_t mtiles = (g.m + kTile - 1) / kTile, ntiles = (g.n + kTile - 1) / kTile;
  for (int64_t bi = blockIdx.z; bi < g.batch_count; bi += gridDim.z) {
    int64_t oa, ob, oc;
    sdk::batch_offsets(g, bi, &oa, &ob, &oc);
    for (int64_t tm = blockIdx.y; tm < mtiles; tm += gridDim.y) {
      for (int64_t tn = blockIdx.x; tn < ntiles; tn += gridDim.x) {
        const int64_t row = tm * kTile + ty, col = tn * kTile + tx;
        uint64_t acc = 0;
        for (int64_t k0 = 0; k0 < g.k; k0 += kTile) {
          const int64_t ka = k0 + tx, kb = k0 + ty;
          as[ty][tx] =
              (row < g.m && ka < g.k)
                  ? static_cast<uint64_t>(static_cast<int64_t>(a[oa + row * g.am + ka * g.ak]))
                  : 0;
          bs[ty][tx] =
              (kb < g.k && col < g.n)
                  ? static_cast<uint64_t>(static_cast<int64_t>(b[ob + kb * g.bk + col * g.bn]))
                  : 0;
          __syncthreads();
#pragma unroll
          for (int p = 0; p < kTile; ++p) acc += as[ty][p] * bs[p][tx];
          __syncthreads();
        }
        if (row < g.m && col < g.n) {
          c[oc + row * g.cm + col * g.cn] = static_cast<T>(static_cast<int64_t>(acc));
        }
      }
    }
  }
}

}  // namespace

Status launch_integer_matmul(const ember_tensor& a, const ember_tensor& b, const ember_tensor& c,
                             cudaStream_t stream) {
  const sdk::MatmulGeometry g = sdk::matmul_geometry(a, b, c);
  if (g.m == 0 || g.n == 0 || g.batch_count == 0) return {};
  const int64_t mtiles = (g.m + kTile - 1) / kTile, ntiles = (g.n + kTile - 1) / kTile;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(ntiles, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(mtiles, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(g.batch_count, 65535)));
  const dim3 block(kTile, kTile);
  Status s = status_error(EMBER_ERR_UNSUPPORTED, "[cuda] matmul: dtype %d is not an integer type",
                          c.dtype);
  kern::visit(c.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      integer_matmul_kernel<T><<<grid, block, 0, stream>>>(
          g, static_cast<const T*>(a.data), static_cast<const T*>(b.data), static_cast<T*>(c.data));
      s = kern::launch_status("matmul");
    }
  });
  return s;
}

}  // namespace ember::cuda
