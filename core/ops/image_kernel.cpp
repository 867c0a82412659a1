// run_image_kernel (core/dispatch/call.h): an image op's kernel on operands made dense in the
// kernel's memory format. It makes tensors and copies them, so it is an op, above the dispatcher.
#include <array>

#include "core/dispatch/call.h"
#include "ember/ops/factory.h"
#include "ember/tensor/overlap.h"
#include "ember/util/error.h"

namespace ember {

void run_image_kernel(const Op& op, DType dtype, MemoryFormat format,
                      std::span<const Tensor* const> inputs, std::span<const Tensor* const> outputs,
                      KernelAttrs attrs) {
  EMBER_CHECK_AS(InternalError,
                 inputs.size() <= size_t{kMaxKernelArgs} &&
                     outputs.size() <= size_t{kMaxKernelArgs} && !outputs.empty(),
                 "[{}] image kernel call with {} inputs and {} outputs", op.name(), inputs.size(),
                 outputs.size());
  const Device device = outputs[0]->device();
  const MemoryFormat layout = format == MemoryFormat::ChannelsLast &&
                                      kernel_has_flag(op, device, dtype, EMBER_KERNEL_CHANNELS_LAST)
                                  ? MemoryFormat::ChannelsLast
                                  : MemoryFormat::Contiguous;
  const auto in_layout = [&](const Tensor& t) {
    return t.defined() && t.dim() == 4 ? layout : MemoryFormat::Contiguous;
  };
  std::array<Tensor, kMaxKernelArgs> in, out;
  std::array<const Tensor*, kMaxKernelArgs> in_ptrs{}, out_ptrs{};
  for (size_t i = 0; i < inputs.size(); ++i) {
    in[i] = inputs[i]->defined() ? inputs[i]->contiguous(in_layout(*inputs[i])) : *inputs[i];
    in_ptrs[i] = &in[i];
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& o = *outputs[i];
    // An output not in the kernel's layout receives a copy of the result, which run_kernel would
    // refuse under the copy's name (Note [Overlapping operands]).
    if (o.numel() > 1 && !o.is_contiguous() && internal_overlap(o) == InternalOverlap::Yes) {
      detail::refuse_internal_overlap(op.name(), o);
    }
    out[i] =
        o.is_contiguous(in_layout(o)) ? o : empty(o.sizes(), {o.dtype(), o.device()}, in_layout(o));
    out_ptrs[i] = &out[i];
  }
  run_kernel(op, dtype, {in_ptrs.data(), inputs.size()}, {out_ptrs.data(), outputs.size()}, attrs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!out[i].is_same(*outputs[i]) && out[i].numel() > 0) {
      run_kernel(core_op(ops::copy), out[i].dtype(), {&out[i]}, {outputs[i]});
    }
  }
}

}  // namespace ember
