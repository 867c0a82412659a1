// Registration of the reference backend's kernels.
#pragma once

#include "ember/plugin_abi.h"

namespace ember::reference {

/** Registers every reference kernel for device type id `device`; the status of the first
 *  registration the core refuses, else EMBER_OK. */
int32_t register_kernels(const ember_registrar_v1* reg, int32_t device);

}  // namespace ember::reference
