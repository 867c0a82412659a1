// Every reference kernel, one C-ABI function each; kernels.cpp registers them.
#pragma once

#include "ember/plugin_abi.h"

namespace ember::reference {

/** Kernel signature shared by all entries below. */
#define EMBER_REF_KERNEL(name) int32_t name(const ember_kernel_call* call)

// elementwise.cpp
EMBER_REF_KERNEL(copy);
EMBER_REF_KERNEL(fill);
EMBER_REF_KERNEL(add);
EMBER_REF_KERNEL(sub);
EMBER_REF_KERNEL(mul);
EMBER_REF_KERNEL(div);
EMBER_REF_KERNEL(pow);
EMBER_REF_KERNEL(maximum);
EMBER_REF_KERNEL(minimum);
EMBER_REF_KERNEL(relu_backward);
EMBER_REF_KERNEL(eq);
EMBER_REF_KERNEL(ne);
EMBER_REF_KERNEL(lt);
EMBER_REF_KERNEL(le);
EMBER_REF_KERNEL(gt);
EMBER_REF_KERNEL(ge);
EMBER_REF_KERNEL(logical_and);
EMBER_REF_KERNEL(logical_or);
EMBER_REF_KERNEL(logical_not);
EMBER_REF_KERNEL(where);
EMBER_REF_KERNEL(neg);
EMBER_REF_KERNEL(abs);
EMBER_REF_KERNEL(sign);
EMBER_REF_KERNEL(relu);
EMBER_REF_KERNEL(clamp);
EMBER_REF_KERNEL(exp);
EMBER_REF_KERNEL(log);
EMBER_REF_KERNEL(log1p);
EMBER_REF_KERNEL(sqrt);
EMBER_REF_KERNEL(rsqrt);
EMBER_REF_KERNEL(sin);
EMBER_REF_KERNEL(cos);
EMBER_REF_KERNEL(tanh);
EMBER_REF_KERNEL(sigmoid);
EMBER_REF_KERNEL(gelu);
EMBER_REF_KERNEL(silu);
EMBER_REF_KERNEL(floor);
EMBER_REF_KERNEL(ceil);
EMBER_REF_KERNEL(round);
EMBER_REF_KERNEL(erf);

// reduce.cpp
EMBER_REF_KERNEL(sum);
EMBER_REF_KERNEL(prod);
EMBER_REF_KERNEL(amax);
EMBER_REF_KERNEL(amin);
EMBER_REF_KERNEL(all);
EMBER_REF_KERNEL(any);
EMBER_REF_KERNEL(argmax);
EMBER_REF_KERNEL(argmin);
EMBER_REF_KERNEL(max_dim);
EMBER_REF_KERNEL(min_dim);
EMBER_REF_KERNEL(cumsum);

// linalg.cpp
EMBER_REF_KERNEL(matmul);
EMBER_REF_KERNEL(softmax);
EMBER_REF_KERNEL(log_softmax);

// index.cpp
EMBER_REF_KERNEL(index_select);
EMBER_REF_KERNEL(gather);
EMBER_REF_KERNEL(scatter);
EMBER_REF_KERNEL(scatter_add);
EMBER_REF_KERNEL(count_nonzero);
EMBER_REF_KERNEL(nonzero);
EMBER_REF_KERNEL(sort);
EMBER_REF_KERNEL(topk);

// conv.cpp
EMBER_REF_KERNEL(conv2d);
EMBER_REF_KERNEL(conv2d_backward_input);
EMBER_REF_KERNEL(conv2d_backward_weight);

// pool.cpp
EMBER_REF_KERNEL(max_pool2d);
EMBER_REF_KERNEL(max_pool2d_backward);
EMBER_REF_KERNEL(avg_pool2d);
EMBER_REF_KERNEL(avg_pool2d_backward);
EMBER_REF_KERNEL(adaptive_avg_pool2d);
EMBER_REF_KERNEL(adaptive_avg_pool2d_backward);

// norm.cpp
EMBER_REF_KERNEL(batch_norm);
EMBER_REF_KERNEL(batch_norm_backward);
EMBER_REF_KERNEL(layer_norm);
EMBER_REF_KERNEL(layer_norm_backward);
EMBER_REF_KERNEL(group_norm);
EMBER_REF_KERNEL(group_norm_backward);

#undef EMBER_REF_KERNEL

}  // namespace ember::reference
