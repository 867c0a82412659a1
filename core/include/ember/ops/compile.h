// compile(): a function of tensors captured once per input signature as the kernel calls it
// makes, then replayed from a static memory plan without running the function again.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/tensor/tensor.h"
#include "ember/util/export.h"

namespace ember {

/** A function of tensors to tensors, as compile() takes it. */
using TensorFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/** What a compiled function has done so far. */
struct CompileReport {
  /** Captures made: one per input signature, again when a guard failed or a watched tensor
   *  was replaced. */
  int64_t captures = 0;
  /** Calls answered by a replay. */
  int64_t replays = 0;
  /** Calls the function itself answered (a capture is one), when no replay could. */
  int64_t eager_calls = 0;
  /** Kernel calls in the newest capture. */
  int64_t steps = 0;
  /** Host reads in the newest capture, each checked by its replays (Note [Host reads in a
   *  capture] in core/dispatch/capture.cpp). */
  int64_t guards = 0;
  /** Bytes of the newest capture's intermediates as planned (buffers reused by lifetime). */
  uint64_t planned_bytes = 0;
  /** The same intermediates with a buffer each, as the function itself allocates them. */
  uint64_t intermediate_bytes = 0;
  /** Why the last call that was not a replay could not be one (empty when every call was). */
  std::string eager_reason;
};

/** A function replayed from its captures (Note [Compiled functions] in core/ops/compile.cpp).
 *  Calls are serialized; copies share the captures. */
class EMBER_API CompiledFunction {
 public:
  /** Compiles `fn`; a change in any tensor of `watched` (a module's parameters: replaced by
   *  another storage, shape or dtype) makes the next call capture again. */
  explicit CompiledFunction(TensorFn fn, std::vector<Tensor> watched = {});
  /** fn(inputs): a replay when a capture for these inputs' sizes, strides, dtypes and devices
   *  holds, else the function itself (capturing it). Results are fresh tensors. */
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);
  /** What it has done so far. */
  CompileReport report() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

/** compile(fn): a CompiledFunction, captured at once for `example_inputs` when given. */
EMBER_API CompiledFunction compile(TensorFn fn, const std::vector<Tensor>& example_inputs = {},
                                   std::vector<Tensor> watched = {});

}  // namespace ember
