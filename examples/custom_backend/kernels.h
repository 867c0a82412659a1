// The toy backend's kernels (kernels.cpp), registered by the plugin's init (plugin.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ember/plugin_abi.h"

namespace toy {

/** Registers every toy kernel for device type id `device`; returns the registrar's status. */
int32_t register_kernels(const ember_registrar_v1* reg, int32_t device);

}  // namespace toy
