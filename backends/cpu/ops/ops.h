// Every CPU kernel, one C-ABI function each; kernels.cpp registers them.
#pragma once

#include "ember/plugin_abi.h"

namespace ember::cpu {

/** Kernel signature shared by all entries below. */
#define EMBER_CPU_KERNEL(name) int32_t name(const ember_kernel_call* call)

// elementwise.cpp
EMBER_CPU_KERNEL(copy);
EMBER_CPU_KERNEL(fill);
EMBER_CPU_KERNEL(add);
EMBER_CPU_KERNEL(sub);
EMBER_CPU_KERNEL(mul);
EMBER_CPU_KERNEL(div);
EMBER_CPU_KERNEL(pow);
EMBER_CPU_KERNEL(maximum);
EMBER_CPU_KERNEL(minimum);
EMBER_CPU_KERNEL(eq);
EMBER_CPU_KERNEL(ne);
EMBER_CPU_KERNEL(lt);
EMBER_CPU_KERNEL(le);
EMBER_CPU_KERNEL(gt);
EMBER_CPU_KERNEL(ge);
EMBER_CPU_KERNEL(logical_and);
EMBER_CPU_KERNEL(logical_or);
EMBER_CPU_KERNEL(logical_not);
EMBER_CPU_KERNEL(where);
EMBER_CPU_KERNEL(neg);
EMBER_CPU_KERNEL(abs);
EMBER_CPU_KERNEL(exp);
EMBER_CPU_KERNEL(log);
EMBER_CPU_KERNEL(log1p);
EMBER_CPU_KERNEL(sqrt);
EMBER_CPU_KERNEL(rsqrt);
EMBER_CPU_KERNEL(sin);
EMBER_CPU_KERNEL(cos);
EMBER_CPU_KERNEL(tanh);
EMBER_CPU_KERNEL(sigmoid);
EMBER_CPU_KERNEL(relu);
EMBER_CPU_KERNEL(gelu);
EMBER_CPU_KERNEL(silu);
EMBER_CPU_KERNEL(clamp);
EMBER_CPU_KERNEL(sign);
EMBER_CPU_KERNEL(floor);
EMBER_CPU_KERNEL(ceil);
EMBER_CPU_KERNEL(round);

// reduce.cpp

// matmul.cpp, softmax.cpp (oneDNN)

// index.cpp, sort.cpp

}  // namespace ember::cpu
