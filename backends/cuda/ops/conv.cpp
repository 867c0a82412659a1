// CUDA conv2d, conv2d_relu and the two backward passes through cuDNN's convolution API (forward,
// fused forward, backward data, backward filter) on the core's contract (core/ops/conv.cpp: dense
// NCHW tensors of one floating dtype, or all three channels-last for the dtypes registered so, Note
// [Channels-last convolutions through cuDNN]; attributes stride_h, stride_w, pad_h, pad_w, dil_h,
// dil_w, groups; taps outside the input read 0, and the input may be larger than the output needs).
// Algorithms are ranked by cuDNN's heuristics (cudnnGet*Algorithm_v7) or, with the option
// cudnn.benchmark, by timing them (cudnnFind*AlgorithmEx, Note [cuDNN benchmark mode]), the ranking
// cached per shape and walked until one algorithm's workspace fits (Note [Walking cuDNN's algorithm
// ranking] in cudnn_plan.cpp); workspaces from the caching allocator. Batches whose tensors exceed
// cuDNN's 32-bit descriptors run in chunks (Note [Convolutions in batch chunks]). The bias gradient
// is a sum in the core.
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "backends/cuda/device.h"
#include "backends/cuda/ops/cudnn_plan.h"
#include "backends/cuda/ops/ops.h"
#include "backends/cuda/options.h"
#include "backends/cuda/stream.h"
#include "ember/plugin_sdk.hpp"

namespace ember::cuda {
namespace {

enum class Dir { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 };

using FilterDesc = UniqueHandle<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvDesc = UniqueHandle<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;

// Note [Channels-last convolutions through cuDNN]
// The float32 and half-type convolutions are registered with EMBER_KERNEL_CHANNELS_LAST, so the
// core hands them x, w and y (dx, dw, dy) either all row-major or all channels-last (plugin_abi.h,
// Note [Channels-last kernels]). Channels-last operands get NHWC tensor descriptors and an NHWC
// filter descriptor (cuDNN's KRSC: [O][KH][KW][C/G], which is what a channels-last weight is),
// and cuDNN runs its NHWC kernels on them with no reorder; the layout is part of the algorithm
// cache's key. The dims stay [N, C, H, W] in both layouts, and a sample is still C*H*W
// consecutive elements, so batch chunks (Note [Convolutions in batch chunks]) need nothing new;
// the cropped output block (Note [Outputs smaller than the input allows]) is viewed with the
// layout's strides. float64 stays row-major: the core reorders it (cuDNN's NHWC algorithms are
// for float and the half types).
// Sizes and attributes of one convolution: x [N, C, H, W], w [O, C/G, KH, KW], y [N, O, OH, OW];
// fh, fw: the output size cuDNN derives from the input (>= OH, OW); nhwc: the operands are
// channels-last.
struct Geom {
  int64_t n, c, h, w, o, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, g, fh, fw;
  bool nhwc;
};

// The three ops have the same attributes (ops.def's EMBER_CONV_ATTRS), read as conv2d's.
Status read_geom(const ember_kernel_call* call, Dir dir, const char* name, Geom* gm) {
  if (call->num_inputs < 2 || call->num_outputs < 1) {
    return status_error(EMBER_ERR_INVALID, "[cuda] %s: expects 2 inputs, 1 output", name);
  }
  const auto a = sdk::attrs<attrs::conv2d>(call);
  const ember_tensor *x, *w, *y;
  if (dir == Dir::kForward) {
    x = &call->inputs[0], w = &call->inputs[1], y = &call->outputs[0];
  } else if (dir == Dir::kBackwardData) {
    y = &call->inputs[0], w = &call->inputs[1], x = &call->outputs[0];
  } else {
    x = &call->inputs[0], y = &call->inputs[1], w = &call->outputs[0];
  }
  if (x->ndim != 4 || w->ndim != 4 || y->ndim != 4 || x->dtype != w->dtype ||
      y->dtype != x->dtype) {
    return status_error(EMBER_ERR_INVALID, "[cuda] %s: expects rank-4 tensors of one dtype", name);
  }
  // Note [Channels-last convolutions through cuDNN]: all row-major, or else all channels-last
  // (a tensor whose shape makes both layouts the same memory counts as either).
  const bool rows = sdk::is_contiguous(*x) && sdk::is_contiguous(*w) && sdk::is_contiguous(*y);
  const bool nhwc =
      !rows && sdk::is_channels_last(*x) && sdk::is_channels_last(*w) && sdk::is_channels_last(*y);
  if (!rows && !nhwc) {
    return status_error(EMBER_ERR_INVALID,
                        "[cuda] %s: expects x, w and y all row-major or all channels-last", name);
  }
  *gm = {x->sizes[0], x->sizes[1], x->sizes[2], x->sizes[3], w->sizes[0], y->sizes[2], y->sizes[3],
         w->sizes[2], w->sizes[3], a.stride_h,  a.stride_w,  a.pad_h,     a.pad_w,     a.dil_h,
         a.dil_w,     a.groups,    0,           0,           nhwc};
  const bool ok = gm->g >= 1 && gm->sh >= 1 && gm->sw >= 1 && gm->dh >= 1 && gm->dw >= 1 &&
                  gm->ph >= 0 && gm->pw >= 0 && gm->c % gm->g == 0 && gm->o % gm->g == 0 &&
                  w->sizes[1] == gm->c / gm->g && y->sizes[0] == gm->n && y->sizes[1] == gm->o;
  if (!ok) return status_error(EMBER_ERR_INVALID, "[cuda] %s: inconsistent shapes", name);
  gm->fh = (gm->h + 2 * gm->ph - gm->dh * (gm->kh - 1) - 1) / gm->sh + 1;
  gm->fw = (gm->w + 2 * gm->pw - gm->dw * (gm->kw - 1) - 1) / gm->sw + 1;
  if (gm->fh < gm->oh || gm->fw < gm->ow) {
    return status_error(EMBER_ERR_UNSUPPORTED,
                        "[cuda] %s: output %lldx%lld larger than the input allows (%lldx%lld)",
                        name, static_cast<long long>(gm->oh), static_cast<long long>(gm->ow),
                        static_cast<long long>(gm->fh), static_cast<long long>(gm->fw));
  }
  // The batch size is not limited: it is split (plan_conv_batch_split, which also checks the
  // per-sample and filter sizes); the attributes must fit cuDNN's int parameters.
  for (int64_t s : {gm->kh, gm->kw, gm->ph, gm->pw, gm->sh, gm->sw, gm->dh, gm->dw, gm->g}) {
    if (s > INT_MAX) {
      return status_error(EMBER_ERR_UNSUPPORTED,
                          "[%s] attributes beyond cuDNN's 32-bit parameters: kernel %lldx%lld, "
                          "padding %lldx%lld, stride %lldx%lld, dilation %lldx%lld, groups %lld",
                          name, static_cast<long long>(gm->kh), static_cast<long long>(gm->kw),
                          static_cast<long long>(gm->ph), static_cast<long long>(gm->pw),
                          static_cast<long long>(gm->sh), static_cast<long long>(gm->sw),
                          static_cast<long long>(gm->dh), static_cast<long long>(gm->dw),
                          static_cast<long long>(gm->g));
    }
  }
  return {};
}

// Note [TF32 in cuDNN convolutions]
// cuDNN's default math mode allows TF32 tensor cores for float32 on Ampere and newer, which
// would make float32 convolutions differ from the CPU's in the 3rd digit. float32 therefore
// only takes algorithms whose math type is plain FMA (EMBER_CUDA_ALLOW_TF32=1 lifts that, as
// for matmul, and so does the option cudnn.allow_tf32); float64 has no tensor-op path; the half
// types may use tensor cores (they accumulate in float).
bool allow_tf32() {
  return options().cudnn_allow_tf32.load(std::memory_order_relaxed);
}

struct Descriptors {
  TensorDesc x, y;  // y: the full [N, O, fh, fw] output
  FilterDesc w;
  ConvDesc conv;
};

Status make_descriptors(const Geom& gm, cudnnDataType_t data, cudnnDataType_t compute,
                        Descriptors* d) {
  const cudnnTensorFormat_t format = gm.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  EMBER_CUDA_RETURN_IF_ERROR(make_tensor_desc(data, gm.n, gm.c, gm.h, gm.w, &d->x, format));
  EMBER_CUDA_RETURN_IF_ERROR(make_tensor_desc(data, gm.n, gm.o, gm.fh, gm.fw, &d->y, format));
  cudnnFilterDescriptor_t f = nullptr;
  EMBER_CUDNN_CHECK(cudnnCreateFilterDescriptor(&f));
  d->w = FilterDesc(f);
  EMBER_CUDNN_CHECK(cudnnSetFilter4dDescriptor(f, data, format, static_cast<int>(gm.o),
                                               static_cast<int>(gm.c / gm.g),
                                               static_cast<int>(gm.kh), static_cast<int>(gm.kw)));
  cudnnConvolutionDescriptor_t c = nullptr;
  EMBER_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&c));
  d->conv = ConvDesc(c);
  EMBER_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      c, static_cast<int>(gm.ph), static_cast<int>(gm.pw), static_cast<int>(gm.sh),
      static_cast<int>(gm.sw), static_cast<int>(gm.dh), static_cast<int>(gm.dw),
      CUDNN_CROSS_CORRELATION, compute));
  EMBER_CUDNN_CHECK(cudnnSetConvolutionGroupCount(c, static_cast<int>(gm.g)));
  return {};
}

using Key = std::array<int64_t, 22>;

std::mutex g_cache_mu;
// The acceptable algorithms per (direction, dtype, device, geometry, options), best first.
std::map<Key, std::vector<ConvAlgo>> g_cache;  // Note [Per-device state is never destroyed]

// cuDNN's heuristic ranking for `dir`, its acceptable algorithms only.
Status rank_by_heuristics(cudnnHandle_t h, Dir dir, int32_t dtype, bool tf32, const Descriptors& d,
                          std::vector<ConvAlgo>* out) {
  int n = 0;
  if (dir == Dir::kForward) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    EMBER_CUDNN_CHECK(
        cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf));
    *out = acceptable_conv_algos(perf, n, dtype, tf32);
  } else if (dir == Dir::kBackwardData) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        h, d.w.get(), d.y.get(), d.conv.get(), d.x.get(), CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n,
        perf));
    *out = acceptable_conv_algos(perf, n, dtype, tf32);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        h, d.x.get(), d.y.get(), d.conv.get(), d.w.get(), CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
        &n, perf));
    *out = acceptable_conv_algos(perf, n, dtype, tf32);
  }
  return {};
}

// Note [cuDNN benchmark mode]
// With cudnn.benchmark on (PyTorch's torch.backends.cudnn.benchmark), the first call of each
// shape runs every algorithm cuDNN offers on the call's own buffers (cudnnFind*AlgorithmEx
// writes only the output, which the real call then overwrites) and keeps the acceptable ones
// (Note [TF32 in cuDNN convolutions]), fastest first, as the ranking the call walks (Note
// [Walking cuDNN's algorithm ranking]). The workspace offered is the largest any algorithm asks
// for, halved until the caching allocator can give it, so an algorithm that needs more than
// fits is not ranked. The cost is paid once per shape, in the first iteration.
struct Buffers {
  const void* x;  // read by forward and backward filter
  const void* w;  // read by forward and backward data
  const void* y;  // dy, read by the backward passes
  void* out;      // written: y, dx or dw
};

// The largest workspace any algorithm of `dir` needs (failures count as 0).
size_t max_workspace(cudnnHandle_t h, Dir dir, const Descriptors& d) {
  size_t most = 0, bytes = 0;
  if (dir == Dir::kForward) {
    for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
      if (cudnnGetConvolutionForwardWorkspaceSize(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
                                                  static_cast<cudnnConvolutionFwdAlgo_t>(a),
                                                  &bytes) == CUDNN_STATUS_SUCCESS)
        most = std::max(most, bytes);
    }
  } else if (dir == Dir::kBackwardData) {
    for (int a = 0; a < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT; ++a) {
      if (cudnnGetConvolutionBackwardDataWorkspaceSize(
              h, d.w.get(), d.y.get(), d.conv.get(), d.x.get(),
              static_cast<cudnnConvolutionBwdDataAlgo_t>(a), &bytes) == CUDNN_STATUS_SUCCESS)
        most = std::max(most, bytes);
    }
  } else {
    for (int a = 0; a < CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT; ++a) {
      if (cudnnGetConvolutionBackwardFilterWorkspaceSize(
              h, d.x.get(), d.y.get(), d.conv.get(), d.w.get(),
              static_cast<cudnnConvolutionBwdFilterAlgo_t>(a), &bytes) == CUDNN_STATUS_SUCCESS)
        most = std::max(most, bytes);
    }
  }
  return most;
}

// Times cuDNN's algorithms for `dir` on the call's buffers: the acceptable ones, fastest first.
Status rank_by_time(cudnnHandle_t h, int index, cudaStream_t stream, Dir dir, int32_t dtype,
                    bool tf32, const Descriptors& d, const Buffers& b, std::vector<ConvAlgo>* out) {
  DeviceBuffer ws;
  size_t ws_bytes = max_workspace(h, dir, d);
  while (ws_bytes > 0 && !ws.allocate(index, ws_bytes, stream).ok()) ws_bytes /= 2;
  if (ws_bytes > 0 && !ws.get()) ws_bytes = 0;
  int n = 0;
  note_launch("conv2d (cudnn.benchmark search)");
  if (dir == Dir::kForward) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    EMBER_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
        h, d.x.get(), b.x, d.w.get(), b.w, d.conv.get(), d.y.get(), b.out,
        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf, ws.get(), ws_bytes));
    *out = acceptable_conv_algos(perf, n, dtype, tf32);
  } else if (dir == Dir::kBackwardData) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    EMBER_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
        h, d.w.get(), b.w, d.y.get(), b.y, d.conv.get(), d.x.get(), b.out,
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf, ws.get(), ws_bytes));
    *out = acceptable_conv_algos(perf, n, dtype, tf32);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    EMBER_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
        h, d.x.get(), b.x, d.y.get(), b.y, d.conv.get(), d.w.get(), b.out,
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf, ws.get(), ws_bytes));
    *out = acceptable_conv_algos(perf, n, dtype, tf32);
  }
  return {};
}

// The [n, ch, rows, cols] top-left block of a dense [n, ch, full_rows, full_cols] array at
// `data`, row-major or (nhwc) channels-last, with `like`'s dtype and device (for strided copies).
ember_tensor view4(void* data, const ember_tensor& like, int64_t* sizes, int64_t* strides,
                   int64_t n, int64_t ch, int64_t rows, int64_t cols, int64_t full_rows,
                   int64_t full_cols, bool nhwc) {
  sizes[0] = n, sizes[1] = ch, sizes[2] = rows, sizes[3] = cols;
  if (nhwc) {
    strides[1] = 1, strides[3] = ch, strides[2] = full_cols * ch;
  } else {
    strides[3] = 1, strides[2] = full_cols, strides[1] = full_rows * full_cols;
  }
  strides[0] = ch * full_rows * full_cols;
  return ember_tensor{data, like.dtype, 4, sizes, strides, like.device_type, like.device_index};
}

size_t item_size(int32_t dtype) {
  return dtype == EMBER_F64 ? 8 : dtype == EMBER_F32 ? 4 : 2;
}

// Note [Convolutions in batch chunks]
// cuDNN's tensor descriptors hold int sizes and strides, so one call describes at most INT_MAX
// elements per tensor (kCudnnMaxElements); a larger tensor used to fail with
// "cudnnSetTensor4dDescriptor failed". As PyTorch does (split_batch_dim_to_32bit_out), the batch
// is cut into the fewest, evenly sized chunks whose input and output each fit
// (plan_conv_batch_split), and each chunk is one cuDNN call on its slice of x and y. Samples are
// independent, so the forward pass and the input gradient are the unsplit results (up to the
// algorithm cuDNN ranks first for the chunk's size). The weight gradient sums over the batch: the
// first chunk writes it (beta 0) and every later one adds to it (beta 1); for float16 and
// bfloat16 that rounds the running sum to the storage type once per chunk (PyTorch sums the
// chunks in a float32 buffer instead; with up to 2^31 elements per chunk there are few chunks,
// and the extra rounding is a few ulps of the half type). A single sample, or the filter, that is
// too large cannot be split: that is an error naming the shape. At most two chunk sizes occur
// (the full chunk and the rest); both are planned and ranked before the first chunk runs, so a
// cudnn.benchmark search, which writes its output, never overwrites a weight gradient that is
// already accumulating. The option testing.conv_max_elements lowers the limit, so the GPU tests
// run the split on small tensors.
struct ChunkPlan {
  Geom gm;                      // the geometry with n = the chunk's samples
  Descriptors d;                // its descriptors
  std::vector<ConvAlgo> algos;  // its ranking, best first
};

/** An owned cuDNN activation descriptor. */
using ActivationDesc = UniqueHandle<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor>;

// Note [Convolution and ReLU through cuDNN]
// conv2d_relu (Note [Fused convolution and ReLU] in core/ops/conv.cpp) runs as one
// cudnnConvolutionBiasActivationForward per chunk: y = relu(conv(x, w) + 0 * z + bias), z being y
// itself (alpha2 = 0, so it is never read for its value) and the bias a zeroed buffer when the op
// has none, as PyTorch's cudnn_convolution_relu calls it. cuDNN supports that call for fewer
// configurations than the plain forward (dtype, layout, algorithm); where it answers
// NOT_SUPPORTED or BAD_PARAM for the algorithm at hand, that chunk runs the plain forward, the
// bias add and cudnnActivationForward in place instead, with the same result.
struct ReluPlan {
  ActivationDesc act;
  TensorDesc bias_desc;
  DeviceBuffer zero_bias;  // when the op has no bias
  const void* bias = nullptr;
};

Status make_relu_plan(const ember_kernel_call* call, const Geom& gm, cudnnDataType_t data,
                      size_t item, cudaStream_t stream, ReluPlan* plan) {
  cudnnActivationDescriptor_t act = nullptr;
  EMBER_CUDNN_CHECK(cudnnCreateActivationDescriptor(&act));
  plan->act = ActivationDesc(act);
  EMBER_CUDNN_CHECK(
      cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  EMBER_CUDA_RETURN_IF_ERROR(make_tensor_desc(data, 1, gm.o, 1, 1, &plan->bias_desc,
                                              gm.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW));
  if (call->num_inputs >= 3 && call->inputs[2].data != nullptr) {
    plan->bias = call->inputs[2].data;
  } else {
    const size_t bytes = static_cast<size_t>(gm.o) * item;
    EMBER_CUDA_RETURN_IF_ERROR(
        plan->zero_bias.allocate(call->outputs[0].device_index, bytes, stream));
    EMBER_CUDA_CHECK(cudaMemsetAsync(plan->zero_bias.get(), 0, bytes, stream));
    plan->bias = plan->zero_bias.get();
  }
  return {};
}

Status conv_impl(const ember_kernel_call* call, Dir dir, const char* name, bool rectify = false) {
  Geom gm{};
  EMBER_CUDA_RETURN_IF_ERROR(read_geom(call, dir, name, &gm));
  const ember_tensor& out = call->outputs[0];
  const int32_t dtype = out.dtype;
  const int index = out.device_index;
  cudnnDataType_t data = CUDNN_DATA_FLOAT, compute = CUDNN_DATA_FLOAT;
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_types(dtype, name, &data, &compute));
  EMBER_CUDA_RETURN_IF_ERROR(set_device(index));  // restored by the kernel's device guard
  cudaStream_t stream = nullptr;
  EMBER_CUDA_RETURN_IF_ERROR(kernel_stream(call, index, &stream));
  const size_t item = item_size(dtype);

  const int64_t x_shape[4] = {gm.n, gm.c, gm.h, gm.w};
  const int64_t y_shape[4] = {gm.n, gm.o, gm.fh, gm.fw};
  const int64_t w_shape[4] = {gm.o, gm.c / gm.g, gm.kh, gm.kw};
  ConvBatchSplit split;
  EMBER_CUDA_RETURN_IF_ERROR(
      plan_conv_batch_split(name, x_shape, y_shape, w_shape,
                            options().conv_max_elements.load(std::memory_order_relaxed), &split));
  if (split.chunks == 0) {  // the core handles empty tensors; stay safe anyway
    if (dir == Dir::kBackwardFilter) {
      EMBER_CUDA_CHECK(
          cudaMemsetAsync(out.data, 0, static_cast<size_t>(sdk::numel(out)) * item, stream));
    }
    return {};
  }

  cudnnHandle_t h = nullptr;
  std::unique_lock<std::mutex> lock;
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_handle(index, stream, &h, &lock));
  const bool benchmark = options().cudnn_benchmark.load(std::memory_order_relaxed);
  const bool tf32 = allow_tf32();
  // Note [TF32 in cuDNN convolutions]: cuDNN's default math permits TF32 on this hardware, so
  // float32 asks for FMA math (heuristics then rank only algorithms that honour it).
  const bool fma_only = dtype == EMBER_F32 && !tf32;
  const cudnnMathType_t ranking_math = fma_only ? CUDNN_FMA_MATH
                                       : (dtype == EMBER_F16 || dtype == EMBER_BF16)
                                           ? CUDNN_TENSOR_OP_MATH
                                           : CUDNN_DEFAULT_MATH;

  // Note [Outputs smaller than the input allows]
  // cuDNN's y is always the full [N, O, fh, fw]. When the op's y is smaller (the contract
  // allows it), the forward pass writes a scratch full-size y and copies the top-left block
  // out; the backward passes read a scratch full-size dy, zero outside the op's block: the
  // extra outputs do not exist, so they contribute nothing to dx or dw.
  const bool full = gm.fh == gm.oh && gm.fw == gm.ow;
  DeviceBuffer scratch;
  int64_t vs[4], vst[4], fs[4], fst[4];
  void* y = nullptr;  // cuDNN's full-size y or dy, the whole batch
  const ember_tensor& op_y = dir == Dir::kForward        ? call->outputs[0]
                             : dir == Dir::kBackwardData ? call->inputs[0]
                                                         : call->inputs[1];
  if (full) {
    y = op_y.data;
  } else {
    const size_t bytes = static_cast<size_t>(gm.n * gm.o * gm.fh * gm.fw) * item;
    EMBER_CUDA_RETURN_IF_ERROR(scratch.allocate(index, bytes, stream));
    y = scratch.get();
    if (dir != Dir::kForward) {
      EMBER_CUDA_CHECK(cudaMemsetAsync(y, 0, bytes, stream));
      const ember_tensor block =
          view4(y, op_y, vs, vst, gm.n, gm.o, gm.oh, gm.ow, gm.fh, gm.fw, gm.nhwc);
      const ember_tensor src =
          view4(op_y.data, op_y, fs, fst, gm.n, gm.o, gm.oh, gm.ow, gm.oh, gm.ow, gm.nhwc);
      EMBER_CUDA_RETURN_IF_ERROR(launch_copy(block, src, stream));
    }
  }
  // x, or dx for the backward data pass, and y per sample, in bytes.
  void* const x = dir == Dir::kBackwardData ? call->outputs[0].data : call->inputs[0].data;
  const size_t x_sample = static_cast<size_t>(gm.c * gm.h * gm.w) * item;
  const size_t y_sample = static_cast<size_t>(gm.o * gm.fh * gm.fw) * item;
  const void* const w = dir == Dir::kBackwardFilter ? nullptr : call->inputs[1].data;

  // Note [Convolutions in batch chunks]: both chunk sizes planned and ranked before any runs.
  const int64_t last = gm.n - (split.chunks - 1) * split.chunk;
  ChunkPlan plans[2];
  const int num_plans = last == split.chunk ? 1 : 2;
  for (int p = 0; p < num_plans; ++p) {
    ChunkPlan& cp = plans[p];
    cp.gm = gm;
    cp.gm.n = p == 0 ? split.chunk : last;
    EMBER_CUDA_RETURN_IF_ERROR(make_descriptors(cp.gm, data, compute, &cp.d));
    const Key key = {static_cast<int64_t>(dir),
                     dtype,
                     index,
                     cp.gm.n,
                     gm.c,
                     gm.h,
                     gm.w,
                     gm.o,
                     gm.kh,
                     gm.kw,
                     gm.fh,
                     gm.fw,
                     gm.sh,
                     gm.sw,
                     gm.ph,
                     gm.pw,
                     gm.dh,
                     gm.dw,
                     gm.g,
                     tf32 ? 1 : 0,
                     benchmark ? 1 : 0,
                     gm.nhwc ? 1 : 0};
    bool cached = false;
    {
      std::lock_guard<std::mutex> guard(g_cache_mu);
      const auto it = g_cache.find(key);
      if (it != g_cache.end()) cp.algos = it->second, cached = true;
    }
    if (cached) continue;
    EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(cp.d.conv.get(), ranking_math));
    if (benchmark) {
      // The first chunk's buffers: a smaller last chunk fits in them too.
      const Buffers bufs = dir == Dir::kForward        ? Buffers{x, w, nullptr, y}
                           : dir == Dir::kBackwardData ? Buffers{nullptr, w, y, x}
                                                       : Buffers{x, nullptr, y, out.data};
      EMBER_CUDA_RETURN_IF_ERROR(
          rank_by_time(h, index, stream, dir, dtype, tf32, cp.d, bufs, &cp.algos));
    } else {
      EMBER_CUDA_RETURN_IF_ERROR(rank_by_heuristics(h, dir, dtype, tf32, cp.d, &cp.algos));
    }
    std::lock_guard<std::mutex> guard(g_cache_mu);
    g_cache.emplace(key, cp.algos);
  }

  const Blend blend = blend_for(dtype);
  ReluPlan relu;
  if (rectify) EMBER_CUDA_RETURN_IF_ERROR(make_relu_plan(call, gm, data, item, stream, &relu));
  for (int64_t i = 0; i < split.chunks; ++i) {
    const ChunkPlan& cp = plans[i == split.chunks - 1 ? num_plans - 1 : 0];
    const Descriptors& d = cp.d;
    const int64_t first = i * split.chunk;
    void* const xc = static_cast<char*>(x) + static_cast<size_t>(first) * x_sample;
    void* const yc = static_cast<char*>(y) + static_cast<size_t>(first) * y_sample;
    // Note [Convolutions in batch chunks]: later chunks add to the weight gradient.
    const void* const beta = dir == Dir::kBackwardFilter && i > 0 ? blend.one : blend.zero;
    // Note [Walking cuDNN's algorithm ranking]: the candidate's workspace, then the call.
    bool fused = false;  // Note [Convolution and ReLU through cuDNN]: this chunk is finished
    const auto run = [&](const ConvAlgo& a) -> Status {
      EMBER_CUDNN_CHECK(
          cudnnSetConvolutionMathType(d.conv.get(), fma_only ? CUDNN_FMA_MATH : a.math));
      size_t ws_bytes = 0;
      if (dir == Dir::kForward) {
        EMBER_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
            h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
            static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), &ws_bytes));
      } else if (dir == Dir::kBackwardData) {
        EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, d.w.get(), d.y.get(), d.conv.get(), d.x.get(),
            static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo), &ws_bytes));
      } else {
        EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
            h, d.x.get(), d.y.get(), d.conv.get(), d.w.get(),
            static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo), &ws_bytes));
      }
      DeviceBuffer workspace;
      EMBER_CUDA_RETURN_IF_ERROR(workspace.allocate(index, ws_bytes, stream));
      note_launch(name);
      if (dir == Dir::kForward && rectify) {
        const cudnnStatus_t st = cudnnConvolutionBiasActivationForward(
            h, blend.one, d.x.get(), xc, d.w.get(), w, d.conv.get(),
            static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), workspace.get(), ws_bytes, blend.zero,
            d.y.get(), yc, relu.bias_desc.get(), relu.bias, relu.act.get(), d.y.get(), yc);
        if (st == CUDNN_STATUS_SUCCESS) {
          fused = true;
          return {};
        }
        if (st != CUDNN_STATUS_NOT_SUPPORTED && st != CUDNN_STATUS_BAD_PARAM) {
          EMBER_CUDNN_CHECK(st);
        }
      }
      if (dir == Dir::kForward) {
        EMBER_CUDNN_CHECK(cudnnConvolutionForward(h, blend.one, d.x.get(), xc, d.w.get(), w,
                                                  d.conv.get(),
                                                  static_cast<cudnnConvolutionFwdAlgo_t>(a.algo),
                                                  workspace.get(), ws_bytes, beta, d.y.get(), yc));
      } else if (dir == Dir::kBackwardData) {
        EMBER_CUDNN_CHECK(
            cudnnConvolutionBackwardData(h, blend.one, d.w.get(), w, d.y.get(), yc, d.conv.get(),
                                         static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo),
                                         workspace.get(), ws_bytes, beta, d.x.get(), xc));
      } else {
        EMBER_CUDNN_CHECK(
            cudnnConvolutionBackwardFilter(h, blend.one, d.x.get(), xc, d.y.get(), yc, d.conv.get(),
                                           static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo),
                                           workspace.get(), ws_bytes, beta, d.w.get(), out.data));
      }
      return {};
    };
    size_t chosen = 0;
    EMBER_CUDA_RETURN_IF_ERROR(run_first_working_algo(name, cp.algos, run, &chosen));
    if (!fused && dir == Dir::kForward && call->num_inputs >= 3 && call->inputs[2].data &&
        call->inputs[2].ndim == 1) {
      TensorDesc bias;
      EMBER_CUDA_RETURN_IF_ERROR(make_tensor_desc(data, 1, gm.o, 1, 1, &bias,
                                                  gm.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW));
      EMBER_CUDNN_CHECK(
          cudnnAddTensor(h, blend.one, bias.get(), call->inputs[2].data, blend.one, d.y.get(), yc));
    }
    if (rectify && !fused) {
      EMBER_CUDNN_CHECK(cudnnActivationForward(h, relu.act.get(), blend.one, d.y.get(), yc,
                                               blend.zero, d.y.get(), yc));
    }
  }
  if (dir == Dir::kForward && !full) {
    const ember_tensor block =
        view4(y, op_y, vs, vst, gm.n, gm.o, gm.oh, gm.ow, gm.fh, gm.fw, gm.nhwc);
    const ember_tensor dst =
        view4(op_y.data, op_y, fs, fst, gm.n, gm.o, gm.oh, gm.ow, gm.oh, gm.ow, gm.nhwc);
    EMBER_CUDA_RETURN_IF_ERROR(launch_copy(dst, block, stream));
  }
  return {};
}

}  // namespace

int32_t conv2d(const ember_kernel_call* call) {
  return write_status(conv_impl(call, Dir::kForward, "conv2d"), call);
}
int32_t conv2d_relu(const ember_kernel_call* call) {
  return write_status(conv_impl(call, Dir::kForward, "conv2d_relu", /*rectify=*/true), call);
}
int32_t conv2d_backward_input(const ember_kernel_call* call) {
  return write_status(conv_impl(call, Dir::kBackwardData, "conv2d_backward_input"), call);
}
int32_t conv2d_backward_weight(const ember_kernel_call* call) {
  return write_status(conv_impl(call, Dir::kBackwardFilter, "conv2d_backward_weight"), call);
}

}  // namespace ember::cuda
