// Convolutions over NCL sequences, NCHW images and NCDHW volumes: conv1d, conv2d, conv3d and
// conv_transpose2d; the sliding blocks of an image as columns and back (unfold and fold, im2col
// and col2im).
#pragma once

#include <utility>

#include "ember/tensor/tensor.h"

namespace ember {

/** PyTorch's named paddings of a convolution: 'valid' (none) or 'same' (the output as large as
 *  the input; stride 1 only). */
enum class ConvPadding { Valid, Same };

/** The zeros before and after each spatial dim that padding='same' adds for a kernel of spatial
 *  sizes `kernel` (stride and dilation: one value or one per dim); where a dim's dilated span is
 *  odd the extra zero goes after (Note [Padding 'same'] in core/ops/conv.cpp). */
EMBER_API std::pair<Shape, Shape> same_padding(IntList kernel, IntList stride, IntList dilation,
                                               const char* op = "conv");

/** 1-d convolution of x [N, C, L] (or [C, L]) with weight [O, C/groups, K] and an optional
 *  bias [O] (PyTorch's conv1d). */
EMBER_API Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                        int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1,
                        int64_t groups = 1);

/** conv1d with a named padding (PyTorch's padding='same' or 'valid'). */
EMBER_API Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
                        ConvPadding padding, int64_t dilation = 1, int64_t groups = 1);

/** 2-d convolution of x [N, C, H, W] (or [C, H, W]) with weight [O, C/groups, kH, kW] and an
 *  optional bias [O]; stride, padding and dilation are one value or one per spatial dim. */
EMBER_API Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                        IntList stride = {1, 1}, IntList padding = {0, 0},
                        IntList dilation = {1, 1}, int64_t groups = 1);

/** conv2d with a named padding (PyTorch's padding='same' or 'valid'). */
EMBER_API Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride,
                        ConvPadding padding, IntList dilation = {1, 1}, int64_t groups = 1);

/** 3-d convolution of x [N, C, D, H, W] (or [C, D, H, W]) with weight [O, C/groups, kD, kH, kW]
 *  and an optional bias [O]; stride, padding and dilation are one value or one per spatial dim
 *  (Note [conv3d as one conv2d] in core/ops/conv.cpp). */
EMBER_API Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                        IntList stride = {1, 1, 1}, IntList padding = {0, 0, 0},
                        IntList dilation = {1, 1, 1}, int64_t groups = 1);

/** conv3d with a named padding (PyTorch's padding='same' or 'valid'). */
EMBER_API Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride,
                        ConvPadding padding, IntList dilation = {1, 1, 1}, int64_t groups = 1);

/** relu(conv2d(x, weight, bias, ...)), in one kernel where nothing is recorded for autograd
 *  and the device has it (Note [Fused convolution and ReLU] in core/ops/conv.cpp). */
EMBER_API Tensor conv2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                             IntList stride = {1, 1}, IntList padding = {0, 0},
                             IntList dilation = {1, 1}, int64_t groups = 1);

/** relu(conv2d(x, weight, bias, ...) + residual), residual of the convolution's output shape
 *  (a residual block's end), in one kernel where nothing is recorded for autograd and the device
 *  has it (Note [Convolution, residual add and ReLU] in core/ops/conv.cpp). */
EMBER_API Tensor conv2d_add_relu(const Tensor& x, const Tensor& weight, const Tensor& residual,
                                 const Tensor& bias = {}, IntList stride = {1, 1},
                                 IntList padding = {0, 0}, IntList dilation = {1, 1},
                                 int64_t groups = 1);

/** Transposed 2-d convolution (the gradient of conv2d with respect to its input) of x
 *  [N, C, H, W] with weight [C, O/groups, kH, kW] and an optional bias [O]. */
EMBER_API Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                                  IntList stride = {1, 1}, IntList padding = {0, 0},
                                  IntList output_padding = {0, 0}, int64_t groups = 1,
                                  IntList dilation = {1, 1});

/** Transposed 1-d convolution of x [N, C, L] (or [C, L]) with weight [C, O/groups, K] and an
 *  optional bias [O]: conv_transpose2d over inputs of height 1. */
EMBER_API Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                                  int64_t stride = 1, int64_t padding = 0,
                                  int64_t output_padding = 0, int64_t groups = 1,
                                  int64_t dilation = 1);

/** Transposed 3-d convolution of x [N, C, D, H, W] (or [C, D, H, W]) with weight
 *  [C, O/groups, kD, kH, kW] and an optional bias [O]; sizes one value or one per dim (Note
 *  [conv_transpose3d as depth taps of conv_transpose2d] in core/ops/conv.cpp). */
EMBER_API Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                                  IntList stride = {1}, IntList padding = {0},
                                  IntList output_padding = {0}, int64_t groups = 1,
                                  IntList dilation = {1});

/** The output_padding that makes a transposed convolution of x (its trailing spatial dims, one
 *  per entry of kernel_size) produce `output_size` (the spatial sizes, or with x's leading
 *  dims), as PyTorch's ConvTranspose forward(input, output_size) picks it; an error for a size
 *  outside the stride's range. */
EMBER_API Shape conv_transpose_output_padding(const Tensor& x, IntList output_size,
                                              IntList kernel_size, IntList stride, IntList padding,
                                              IntList dilation);

/** The sliding kernel_size blocks of x [N, C, H, W] (or [C, H, W]) as columns (PyTorch's
 *  F.unfold, im2col): [N, C kH kW, L], L the number of blocks; each size is one value or one per
 *  spatial dim. Taps in the zero padding read 0. */
EMBER_API Tensor unfold(const Tensor& x, IntList kernel_size, IntList dilation = {1},
                        IntList padding = {0}, IntList stride = {1});

/** The adjoint of unfold (PyTorch's F.fold, col2im): columns [N, C kH kW, L] (or [C kH kW, L])
 *  summed back into images [N, C, output_size...]; taps in the padding are dropped. */
EMBER_API Tensor fold(const Tensor& cols, IntList output_size, IntList kernel_size,
                      IntList dilation = {1}, IntList padding = {0}, IntList stride = {1});

}  // namespace ember
