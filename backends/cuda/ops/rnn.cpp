// CUDA rnn_layer and its backward through cuDNN's RNN API (v8: cudnnRNNForward,
// cudnnRNNBackwardData_v8, cudnnRNNBackwardWeights_v8), on the core's contract
// (core/ops/rnn.cpp): a whole LSTM or GRU layer, steps 0 to L - 1, contiguous tensors of one
// floating dtype. Descriptors are planned by cudnn_plan.cpp (Note [cuDNN's RNN descriptors]);
// PyTorch's weights are copied into cuDNN's weight space on every call (Note [PyTorch's weights
// in cuDNN's weight space]); the backward runs the training forward again for cuDNN's reserve
// space (Note [Whole recurrent layers in a backend] in core/ops/rnn.cpp).
#include <cudnn.h>

#include <cstdint>
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

// Note [PyTorch's weights in cuDNN's weight space]
// cuDNN keeps a layer's parameters in one opaque buffer (the weight space) and tells where each
// "linear layer" lives through cudnnGetRNNWeightParams: ids 0 .. G-1 are the input matrices of
// the gates, G .. 2G-1 the recurrent ones, each [H, I] or [H, H] row-major with its bias [H]
// beside it. cuDNN's gate order is PyTorch's (LSTM i, f, g, o; GRU r, z, n), so gate block k of
// w_ih (rows k H .. (k + 1) H, contiguous) is id k and of w_hh id G + k, and b_ih and b_hh
// likewise. Every call copies the four tensors in (device-to-device, 4G copies) and the
// backward copies the gradients out of a zeroed gradient space the same way: the parameters
// stay PyTorch's tensors, which the optimizers and state_dicts see, as PyTorch's
// flatten_parameters would otherwise have to keep in sync.

/** One stretch of weight space and the part of a parameter it mirrors. */
struct Region {
  size_t offset;  // bytes into the weight space
  int param;      // 0 w_ih, 1 w_hh, 2 b_ih, 3 b_hh: inputs 1-4 of both ops, outputs 1-4 of the
                  // backward
  size_t at;      // bytes into that parameter
  size_t bytes;
};

/** The 4G regions of w_ih, w_hh, b_ih and b_hh in the weight space at `space` (Note [PyTorch's
 *  weights in cuDNN's weight space]). */
Status weight_regions(cudnnHandle_t h, const RnnPlan& plan, size_t space_bytes, void* space,
                      int64_t I, int64_t H, size_t item, std::vector<Region>* out) {
  TensorDesc m, b;
  {
    cudnnTensorDescriptor_t t = nullptr;
    EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&t));
    m = TensorDesc(t);
    EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&t));
    b = TensorDesc(t);
  }
  const int G = plan.gates;
  const auto offset = [&](void* at) {
    return static_cast<size_t>(static_cast<char*>(at) - static_cast<char*>(space));
  };
  for (int id = 0; id < 2 * G; ++id) {
    const bool recurrent = id >= G;
    const auto k = static_cast<size_t>(recurrent ? id - G : id);
    void *m_at = nullptr, *b_at = nullptr;
    EMBER_CUDNN_CHECK(cudnnGetRNNWeightParams(h, plan.rnn.get(), 0, space_bytes, space, id, m.get(),
                                              &m_at, b.get(), &b_at));
    if (!m_at || !b_at) {
      return status_error(EMBER_ERR_INTERNAL,
                          "[cuda] rnn_layer: cuDNN placed no matrix or bias for linear layer %d",
                          id);
    }
    const size_t m_bytes = static_cast<size_t>(H * (recurrent ? H : I)) * item;
    const size_t b_bytes = static_cast<size_t>(H) * item;
    out->push_back({offset(m_at), recurrent ? 1 : 0, k * m_bytes, m_bytes});
    out->push_back({offset(b_at), recurrent ? 3 : 2, k * b_bytes, b_bytes});
  }
  for (const Region& r : *out) {
    if (r.offset + r.bytes > space_bytes) {
      return status_error(EMBER_ERR_INTERNAL,
                          "[cuda] rnn_layer: cuDNN's weight space (%zu bytes) is smaller than "
                          "PyTorch's parameters need",
                          space_bytes);
    }
  }
  return {};
}

/** Everything a call shares: device, stream, handle, plan, weight space and sequence lengths. */
struct Call {
  int32_t dtype = EMBER_F32;
  int index = 0;
  bool lstm = true;
  int64_t L = 0, N = 0, I = 0, H = 0;
  size_t item = 4;
  cudaStream_t stream = nullptr;
  cudnnHandle_t handle = nullptr;
  std::unique_lock<std::mutex> lock;
  RnnPlan plan;
  size_t space_bytes = 0;
  DeviceBuffer space, lengths;
  std::vector<Region> regions;
};

/** Checks the call against the contract and sets up `c`: the plan, the weight space holding
 *  w_ih, w_hh, b_ih, b_hh (inputs 1-4) and the device's copy of the sequence lengths. */
Status prepare(const ember_kernel_call* call, bool backward, const char* name, Call* c) {
  const int64_t mode = backward ? sdk::attrs<attrs::rnn_layer_backward>(call).mode
                                : sdk::attrs<attrs::rnn_layer>(call).mode;
  if (mode != 0 && mode != 1) {
    return status_error(EMBER_ERR_INVALID, "[cuda] %s: mode must be 0 (LSTM) or 1 (GRU): got %lld",
                        name, static_cast<long long>(mode));
  }
  c->lstm = mode == 0;
  const int in = backward ? (c->lstm ? 10 : 8) : (c->lstm ? 7 : 6);
  const int out = backward ? (c->lstm ? 7 : 6) : (c->lstm ? 3 : 2);
  if (call->num_inputs != in || call->num_outputs != out) {
    return status_error(EMBER_ERR_INVALID,
                        "[cuda] %s: expects %d inputs and %d outputs: got %d, %d", name, in, out,
                        call->num_inputs, call->num_outputs);
  }
  const ember_tensor &x = call->inputs[0], &w_hh = call->inputs[2];
  if (x.ndim != 3 || w_hh.ndim != 2) {
    return status_error(EMBER_ERR_INVALID, "[cuda] %s: x must be 3-d and w_hh 2-d", name);
  }
  for (int i = 0; i < in; ++i) {
    if (!sdk::is_contiguous(call->inputs[i]) || call->inputs[i].dtype != x.dtype) {
      return status_error(EMBER_ERR_INVALID,
                          "[cuda] %s: input %d must be contiguous and of x's dtype", name, i);
    }
  }
  for (int i = 0; i < out; ++i) {
    if (!sdk::is_contiguous(call->outputs[i])) {
      return status_error(EMBER_ERR_INVALID, "[cuda] %s: output %d must be contiguous", name, i);
    }
  }
  c->dtype = x.dtype;
  c->index = call->outputs[0].device_index;
  c->L = x.sizes[0], c->N = x.sizes[1], c->I = x.sizes[2], c->H = w_hh.sizes[1];
  c->item = sdk::itemsize(c->dtype);
  const bool tf32 = options().cudnn_allow_tf32.load(std::memory_order_relaxed);
  EMBER_CUDA_RETURN_IF_ERROR(
      plan_rnn(c->dtype, c->lstm, c->L, c->N, c->I, c->H, tf32, name, &c->plan));
  EMBER_CUDA_RETURN_IF_ERROR(set_device(c->index));  // restored by the kernel's device guard
  EMBER_CUDA_RETURN_IF_ERROR(kernel_stream(call, c->index, &c->stream));
  EMBER_CUDA_RETURN_IF_ERROR(cudnn_handle(c->index, c->stream, &c->handle, &c->lock));
  EMBER_CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(c->handle, c->plan.rnn.get(), &c->space_bytes));
  EMBER_CUDA_RETURN_IF_ERROR(c->space.allocate(c->index, c->space_bytes, c->stream));
  EMBER_CUDA_RETURN_IF_ERROR(weight_regions(c->handle, c->plan, c->space_bytes, c->space.get(),
                                            c->I, c->H, c->item, &c->regions));
  // The weight space may hold padding between the regions; zero it, then copy the parameters.
  EMBER_CUDA_CHECK(cudaMemsetAsync(c->space.get(), 0, c->space_bytes, c->stream));
  for (const Region& r : c->regions) {
    EMBER_CUDA_CHECK(
        cudaMemcpyAsync(static_cast<char*>(c->space.get()) + r.offset,
                        static_cast<const char*>(call->inputs[r.param + 1].data) + r.at, r.bytes,
                        cudaMemcpyDeviceToDevice, c->stream));
  }
  // cuDNN reads the lengths on the device, possibly after the call returns: a pageable copy is
  // staged before cudaMemcpyAsync returns, so the plan's vector may go.
  const size_t len_bytes = c->plan.lengths.size() * sizeof(int32_t);
  EMBER_CUDA_RETURN_IF_ERROR(c->lengths.allocate(c->index, len_bytes, c->stream));
  EMBER_CUDA_CHECK(cudaMemcpyAsync(c->lengths.get(), c->plan.lengths.data(), len_bytes,
                                   cudaMemcpyHostToDevice, c->stream));
  return {};
}

/** cuDNN's workspace (and, for training, reserve space) for a pass in `mode`, allocated. */
struct TempSpace {
  DeviceBuffer work, reserve;
  size_t work_bytes = 0, reserve_bytes = 0;
};
Status temp_space(Call& c, cudnnForwardMode_t mode, TempSpace* t) {
  EMBER_CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(c.handle, c.plan.rnn.get(), mode, c.plan.x.get(),
                                              &t->work_bytes, &t->reserve_bytes));
  if (mode == CUDNN_FWD_MODE_INFERENCE) t->reserve_bytes = 0;
  EMBER_CUDA_RETURN_IF_ERROR(t->work.allocate(c.index, t->work_bytes, c.stream));
  return t->reserve.allocate(c.index, t->reserve_bytes, c.stream);
}

/** The forward pass in `mode` into y, hy and cy (cy null for the GRU), with `t` from
 *  temp_space for the same mode. */
Status run_forward(Call& c, cudnnForwardMode_t mode, const TempSpace& t, const void* x,
                   const void* hx, const void* cx, void* y, void* hy, void* cy) {
  note_launch("rnn_layer");
  const cudnnTensorDescriptor_t s = c.plan.state.get();
  EMBER_CUDNN_CHECK(cudnnRNNForward(
      c.handle, c.plan.rnn.get(), mode, static_cast<const int32_t*>(c.lengths.get()),
      c.plan.x.get(), x, c.plan.y.get(), y, s, hx, hy, s, cx, cy, c.space_bytes, c.space.get(),
      t.work_bytes, t.work.get(), t.reserve_bytes, t.reserve.get()));
  return {};
}

Status forward_impl(const ember_kernel_call* call) {
  Call c;
  EMBER_CUDA_RETURN_IF_ERROR(prepare(call, false, "rnn_layer", &c));
  TempSpace t;
  EMBER_CUDA_RETURN_IF_ERROR(temp_space(c, CUDNN_FWD_MODE_INFERENCE, &t));
  const auto in = [&](int i) { return call->inputs[i].data; };
  const auto out = [&](int i) { return call->outputs[i].data; };
  return run_forward(c, CUDNN_FWD_MODE_INFERENCE, t, in(0), in(5), c.lstm ? in(6) : nullptr, out(0),
                     out(1), c.lstm ? out(2) : nullptr);
}

Status backward_impl(const ember_kernel_call* call) {
  const char* name = "rnn_layer_backward";
  Call c;
  EMBER_CUDA_RETURN_IF_ERROR(prepare(call, true, name, &c));
  const auto in = [&](int i) { return call->inputs[i].data; };
  const auto out = [&](int i) { return call->outputs[i].data; };
  const void *x = in(0), *hx = in(5), *dy = in(6), *dhy = in(7);
  const void* cx = c.lstm ? in(8) : nullptr;
  const void* dcy = c.lstm ? in(9) : nullptr;
  // Note [Whole recurrent layers in a backend]: the training forward again, for cuDNN's reserve
  // space; y, hy and cy are scratch (the core has the forward's own). The three calls share one
  // workspace and the reserve.
  const size_t state_bytes = static_cast<size_t>(c.N * c.H) * c.item;
  DeviceBuffer y, hy, cy;
  EMBER_CUDA_RETURN_IF_ERROR(y.allocate(c.index, static_cast<size_t>(c.L) * state_bytes, c.stream));
  EMBER_CUDA_RETURN_IF_ERROR(hy.allocate(c.index, state_bytes, c.stream));
  if (c.lstm) EMBER_CUDA_RETURN_IF_ERROR(cy.allocate(c.index, state_bytes, c.stream));
  TempSpace t;
  EMBER_CUDA_RETURN_IF_ERROR(temp_space(c, CUDNN_FWD_MODE_TRAINING, &t));
  EMBER_CUDA_RETURN_IF_ERROR(
      run_forward(c, CUDNN_FWD_MODE_TRAINING, t, x, hx, cx, y.get(), hy.get(), cy.get()));
  const cudnnTensorDescriptor_t s = c.plan.state.get();
  const auto* lengths = static_cast<const int32_t*>(c.lengths.get());
  note_launch(name);
  EMBER_CUDNN_CHECK(cudnnRNNBackwardData_v8(
      c.handle, c.plan.rnn.get(), lengths, c.plan.y.get(), y.get(), dy, c.plan.x.get(), out(0), s,
      hx, dhy, out(5), s, cx, dcy, c.lstm ? out(6) : nullptr, c.space_bytes, c.space.get(),
      t.work_bytes, t.work.get(), t.reserve_bytes, t.reserve.get()));
  // The weight gradients accumulate (cuDNN's only mode) into a zeroed gradient space, then go
  // out to the op's four gradients through the same regions as the weights came in.
  DeviceBuffer dspace;
  EMBER_CUDA_RETURN_IF_ERROR(dspace.allocate(c.index, c.space_bytes, c.stream));
  EMBER_CUDA_CHECK(cudaMemsetAsync(dspace.get(), 0, c.space_bytes, c.stream));
  EMBER_CUDNN_CHECK(cudnnRNNBackwardWeights_v8(c.handle, c.plan.rnn.get(), CUDNN_WGRAD_MODE_ADD,
                                               lengths, c.plan.x.get(), x, s, hx, c.plan.y.get(),
                                               y.get(), c.space_bytes, dspace.get(), t.work_bytes,
                                               t.work.get(), t.reserve_bytes, t.reserve.get()));
  for (const Region& r : c.regions) {
    EMBER_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(out(r.param + 1)) + r.at,
                                     static_cast<const char*>(dspace.get()) + r.offset, r.bytes,
                                     cudaMemcpyDeviceToDevice, c.stream));
  }
  return {};
}

}  // namespace

int32_t rnn_layer(const ember_kernel_call* call) {
  return write_status(forward_impl(call), call);
}

int32_t rnn_layer_backward(const ember_kernel_call* call) {
  return write_status(backward_impl(call), call);
}

}  // namespace ember::cuda
