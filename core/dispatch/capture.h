// Capture: the kernel calls a function makes, recorded on its thread so that they can be replayed
// without the function (ember::compile, <ember/ops/compile.h>). Only kernel calls are recorded;
// what else the function does is checked instead (Note [What a capture records]).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dispatch/call.h"
#include "ember/dispatch/op.h"
#include "ember/tensor/tensor.h"
#include "ember/util/export.h"

namespace ember::capture {

/** Where a recorded storage comes from, and so what a replay uses for it. */
enum class SlotKind {
  Input,         ///< the storage of input i: a replay reads the new input's
  External,      ///< made before the capture (a weight): a replay reads the same storage
  Intermediate,  ///< made during the capture and first written by a kernel: planned anew
  Constant       ///< made during the capture and filled by host code: kept as captured
};

/** One storage the recorded calls touch. */
struct Slot {
  /** The storage as captured (for Input and Intermediate slots, only its size matters). */
  Storage storage;
  /** Where it comes from. */
  SlotKind kind = SlotKind::External;
  /** For an Input slot, the input's position. */
  int32_t input = -1;
  /** The first and last step that touch it (guards and outputs extend the last). */
  size_t first = 0, last = 0;
};

/** A tensor of a recorded call: a view on a slot. */
struct Operand {
  /** Index in Recording::slots; -1 for an undefined (omitted) tensor. */
  int32_t slot = -1;
  /** The view's offset in elements, sizes, strides and dtype. */
  int64_t offset = 0;
  Shape sizes, strides;
  DType dtype = DType::Float32;
};

/** One kernel call: the op, the dtype its kernel was chosen for, operands and attributes. */
struct Step {
  const Op* op = nullptr;
  DType dtype = DType::Float32;
  std::vector<Operand> inputs, outputs;
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

/** A value host code read during the capture: a replay must see the same bytes there, after the
 *  same number of steps, or the function might have gone another way (Note [Host reads in a
 *  capture]). */
struct Guard {
  /** Steps run before the read. */
  size_t after = 0;
  /** What was read. */
  Operand value;
  /** Its bytes then, row-major. */
  std::vector<uint8_t> bytes;
};

/** What a capture saw. */
struct Recording {
  std::vector<Slot> slots;
  std::vector<Step> steps;
  std::vector<Guard> guards;
  /** The device every step ran on. */
  Device device = Device::cpu();
  /** Why the calls cannot stand for the function (empty: they can). */
  std::string refused;
};

/** Records, while alive, every kernel call this thread makes; `inputs` are the function's
 *  inputs (their storages become Input slots). Captures do not nest. */
class EMBER_API CaptureScope {
 public:
  /** Starts recording on this thread. */
  explicit CaptureScope(const std::vector<Tensor>& inputs);
  /** Stops recording. */
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;

  /** The operand standing for `t` (a tensor the function returns), its slot kept to the end. */
  Operand operand_of(const Tensor& t);
  /** Stops recording and hands over what was recorded. */
  Recording finish();

  struct State;  // what one capture records (core/dispatch/capture.cpp)

 private:
  State* state_;
};

/** True while this thread captures. */
EMBER_API bool capturing();

/** Marks the capture on this thread, if any, as unable to stand for its function, saying why
 *  ("[compile] random numbers were drawn ..."). */
EMBER_API void refuse(std::string_view why);

/** Stops recording on this thread while alive (work the core does for itself: a snapshot). */
class EMBER_API Suppress {
 public:
  Suppress();
  ~Suppress();
  Suppress(const Suppress&) = delete;
  Suppress& operator=(const Suppress&) = delete;

 private:
  void* saved_;
};

namespace detail {
/** Records a kernel call that succeeded (called by run_kernel while a capture is active). */
EMBER_API void on_kernel(const Op& op, DType dtype, std::span<const Tensor* const> inputs,
                         std::span<const Tensor* const> outputs, KernelAttrs attrs);
}  // namespace detail

}  // namespace ember::capture
