// Pooling over NCHW images (max, average, adaptive average and max, power-average, unpooling),
// and over NCL sequences and NCDHW volumes through the same kernels (Note [1-d pooling is 2-d
// pooling of height 1], Note [3-d pooling as two passes] in core/ops/pool.cpp).
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

/** Adaptive max pooling of x [N, C, H, W] (or [C, H, W]) to [oH, oW]: window i spans
 *  [floor(i in / out), ceil((i + 1) in / out)), as PyTorch's. */
EMBER_API Tensor adaptive_max_pool2d(const Tensor& x, IntList output_size);
/** adaptive_max_pool2d with the flat index (h * W + w) of each maximum within its plane: the
 *  first maximum of its window in row-major order, as PyTorch's return_indices. */
EMBER_API std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& x,
                                                                      IntList output_size);

/** Max pooling of x [N, C, L] (or [C, L]) with the flat index of each maximum along L; no
 *  stride means stride = kernel_size. */
EMBER_API std::tuple<Tensor, Tensor> max_pool1d_with_indices(
    const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride = std::nullopt,
    int64_t padding = 0, int64_t dilation = 1, bool ceil_mode = false);
/** Max pooling of x [N, C, L] (or [C, L]); no stride means stride = kernel_size. */
EMBER_API Tensor max_pool1d(const Tensor& x, int64_t kernel_size,
                            std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                            int64_t dilation = 1, bool ceil_mode = false);
/** Average pooling of x [N, C, L] (or [C, L]); no stride means stride = kernel_size. */
EMBER_API Tensor avg_pool1d(const Tensor& x, int64_t kernel_size,
                            std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                            bool ceil_mode = false, bool count_include_pad = true);
/** Average pooling of x [N, C, L] (or [C, L]) to `output_size` along L. */
EMBER_API Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size);
/** Adaptive max pooling of x [N, C, L] (or [C, L]) to `output_size` along L. */
EMBER_API Tensor adaptive_max_pool1d(const Tensor& x, int64_t output_size);
/** adaptive_max_pool1d with the index along L of each maximum (the first of its window). */
EMBER_API std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& x,
                                                                      int64_t output_size);

/** Max pooling of x [N, C, D, H, W] (or [C, D, H, W]); sizes are one value or three, an empty
 *  stride means stride = kernel_size. Returns the output and the flat index (d * H * W + h * W +
 *  w) of each maximum within its volume. */
EMBER_API std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& x, IntList kernel_size,
                                                             IntList stride = {},
                                                             IntList padding = {0},
                                                             IntList dilation = {1},
                                                             bool ceil_mode = false);
/** Max pooling of x [N, C, D, H, W] (or [C, D, H, W]); an empty stride means stride = kernel. */
EMBER_API Tensor max_pool3d(const Tensor& x, IntList kernel_size, IntList stride = {},
                            IntList padding = {0}, IntList dilation = {1}, bool ceil_mode = false);
/** Average pooling of x [N, C, D, H, W] (or [C, D, H, W]), as avg_pool2d per volume. */
EMBER_API Tensor avg_pool3d(const Tensor& x, IntList kernel_size, IntList stride = {},
                            IntList padding = {0}, bool ceil_mode = false,
                            bool count_include_pad = true,
                            std::optional<int64_t> divisor_override = std::nullopt);
/** Average pooling of x [N, C, D, H, W] (or [C, D, H, W]) to [oD, oH, oW]. */
EMBER_API Tensor adaptive_avg_pool3d(const Tensor& x, IntList output_size);
/** Adaptive max pooling of x [N, C, D, H, W] (or [C, D, H, W]) to [oD, oH, oW]. */
EMBER_API Tensor adaptive_max_pool3d(const Tensor& x, IntList output_size);
/** adaptive_max_pool3d with the flat index (d * H * W + h * W + w) of each maximum within its
 *  volume (the first of its window in (d, h, w) order). */
EMBER_API std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& x,
                                                                      IntList output_size);

/** Max unpooling of x [N, C, L] (or [C, L]): each value at its index (as max_pool1d returns it)
 *  in a zero output of length `output_size` ([L], or with the leading dims), by default (in - 1)
 *  stride - 2 padding + kernel_size (Note [Max unpooling as one scatter] in core/ops/pool.cpp). */
EMBER_API Tensor max_unpool1d(const Tensor& x, const Tensor& indices, int64_t kernel_size,
                              std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                              IntList output_size = {});
/** Max unpooling of x [N, C, H, W] (or [C, H, W]) at its flat per-plane indices; sizes one value
 *  or one per dim, an empty stride meaning kernel_size. */
EMBER_API Tensor max_unpool2d(const Tensor& x, const Tensor& indices, IntList kernel_size,
                              IntList stride = {}, IntList padding = {0}, IntList output_size = {});
/** Max unpooling of x [N, C, D, H, W] (or [C, D, H, W]) at its flat per-volume indices. */
EMBER_API Tensor max_unpool3d(const Tensor& x, const Tensor& indices, IntList kernel_size,
                              IntList stride = {}, IntList padding = {0}, IntList output_size = {});

/** Power-average pooling of x [N, C, L]: (sum of x^p over each window)^(1/p). */
EMBER_API Tensor lp_pool1d(const Tensor& x, double norm_type, int64_t kernel_size,
                           std::optional<int64_t> stride = std::nullopt, bool ceil_mode = false);
/** Power-average pooling of x [N, C, H, W]; an empty stride means kernel_size. */
EMBER_API Tensor lp_pool2d(const Tensor& x, double norm_type, IntList kernel_size,
                           IntList stride = {}, bool ceil_mode = false);
/** Power-average pooling of x [N, C, D, H, W]; an empty stride means kernel_size. */
EMBER_API Tensor lp_pool3d(const Tensor& x, double norm_type, IntList kernel_size,
                           IntList stride = {}, bool ceil_mode = false);

}  // namespace ember
