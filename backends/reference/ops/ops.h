// Every reference kernel, one C-ABI function per core op, declared from the op list
// (Note [Kernels of a backend] in ember/plugin_sdk_ops.hpp); ops/*.cpp define them and
// kernels.cpp registers them. The optional ops the reference leaves out (random) are declared
// too and never defined: nothing refers to them.
#pragma once

#include "ember/plugin_abi.h"
#include "ember/plugin_sdk_ops.hpp"

namespace ember::reference {

#define EMBER_OP(name, ...) EMBER_KERNEL(name);
#include "ember/ops.def"
#undef EMBER_OP

}  // namespace ember::reference
