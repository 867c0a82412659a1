// Pooling over NCHW images: max, average and adaptive average.
#pragma once

#include <optional>
#include <tuple>

#include "ember/tensor/tensor.h"

namespace ember {

/** Max pooling of x [N, C, H, W] (or [C, H, W]); an empty stride means stride = kernel_size.
 *  Returns the output and the flat index (h * W + w) of each maximum within its plane. */
EMBER_API std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, IntList kernel_size,
                                                             IntList stride = {},
                                                             IntList padding = {0, 0},
                                                             IntList dilation = {1, 1},
                                                             bool ceil_mode = false);
/** Max pooling of x [N, C, H, W] (or [C, H, W]); an empty stride means stride = kernel_size. */
EMBER_API Tensor max_pool2d(const Tensor& x, IntList kernel_size, IntList stride = {},
                            IntList padding = {0, 0}, IntList dilation = {1, 1},
                            bool ceil_mode = false);
/** Average pooling of x [N, C, H, W] (or [C, H, W]); an empty stride means stride = kernel_size;
 *  divisor_override, when given, divides every window's sum instead of its size. */
EMBER_API Tensor avg_pool2d(const Tensor& x, IntList kernel_size, IntList stride = {},
                            IntList padding = {0, 0}, bool ceil_mode = false,
                            bool count_include_pad = true,
                            std::optional<int64_t> divisor_override = std::nullopt);
/** Average pooling of x [N, C, H, W] (or [C, H, W]) to the given output size [oH, oW]. */
EMBER_API Tensor adaptive_avg_pool2d(const Tensor& x, IntList output_size);

}  // namespace ember
