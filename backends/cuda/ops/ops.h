// Every CUDA kernel, one C-ABI function each; kernels.cpp registers them. Kernels run on the
// current stream of the output's device and report launch errors through their status.
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/check.h"
#include "ember/plugin_abi.h"

namespace ember::cuda {

/** Kernel signature shared by all entries below. */
#define EMBER_CUDA_KERNEL(name) int32_t name(const ember_kernel_call* call)

// elementwise.cu
EMBER_CUDA_KERNEL(copy);
EMBER_CUDA_KERNEL(fill);
EMBER_CUDA_KERNEL(add);
EMBER_CUDA_KERNEL(sub);
EMBER_CUDA_KERNEL(mul);
EMBER_CUDA_KERNEL(div);
EMBER_CUDA_KERNEL(neg);
EMBER_CUDA_KERNEL(exp);
EMBER_CUDA_KERNEL(relu);

// matmul.cpp (cuBLAS)
EMBER_CUDA_KERNEL(matmul);

/** Enqueues dst = src (any strides, dtype conversion) on `stream`; used to pack operands. */
Status launch_copy(const ember_tensor& dst, const ember_tensor& src, cudaStream_t stream);

}  // namespace ember::cuda
