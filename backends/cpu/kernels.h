// Registration of the CPU backend's kernels.
#pragma once

#include "ember/plugin_abi.h"

namespace ember::cpu {

/** Registers every CPU kernel for device type id `cpu`; the status of the first registration the
 *  core refuses, else EMBER_OK. */
int32_t register_kernels(const ember_registrar_v1* reg, int32_t cpu);

}  // namespace ember::cpu
