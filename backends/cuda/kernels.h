// Registration of the CUDA backend's kernels.
#pragma once

#include "ember/plugin_abi.h"

namespace ember::cuda {

/** Registers every CUDA kernel for device type id `cuda`; the status of the first registration
 *  the core refuses, else EMBER_OK. */
int32_t register_kernels(const ember_registrar_v1* reg, int32_t cuda);

}  // namespace ember::cuda
