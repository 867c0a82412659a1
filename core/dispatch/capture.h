// Capture: the kernel calls a function makes, recorded on its thread so that they can be replayed
// without the function (ember::compile, <ember/ops/compile.h>). Only kernel calls are recorded;
// what else the function does is checked instead (Note [What a capture records]).
#pragma once

#include <cstdint>
#include <initializer_list>
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

/** A composite op's kernel calls: a core op with no kernel of its own, run as other ops (the
 *  Elman RNN's layer, scatter_reduce's prod), whose identity and attributes a consumer that knows
 *  the op as a whole can use instead of its steps (Note [Composite ops in a capture]). */
struct Region {
  /** The op's name ("rnn_layer"). */
  std::string op;
  /** Its tensors as it was called, and those it returned (an undefined one: slot -1). */
  std::vector<Operand> inputs, outputs;
  /** Its attributes. */
  std::vector<int64_t> ints;
  std::vector<double> floats;
  /** Its kernel calls: steps [begin, end). */
  size_t begin = 0, end = 0;
  /** The region it lies in, or -1. */
  int32_t parent = -1;
  /** Whether it returned (one left by an exception has no outputs). */
  bool complete = false;
};

/** Why a capture cannot stand for its function, and the innermost region then open (-1: none). */
struct Refusal {
  std::string why;
  int32_t region = -1;
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
  /** The innermost region open at the read, or -1. */
  int32_t region = -1;
};

/** What a capture saw. */
struct Recording {
  std::vector<Slot> slots;
  std::vector<Step> steps;
  std::vector<Guard> guards;
  /** The device every step ran on. */
  Device device = Device::cpu();
  /** Why the calls cannot stand for the function (empty: they can): the first refusal's. */
  std::string refused;
  /** Every refusal, at most one in a row for one region. */
  std::vector<Refusal> refusals;
  /** The composite ops called, in the order they were called (a region before those inside it). */
  std::vector<Region> regions;
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

/** Marks, while alive, the kernel calls this thread makes as those of one composite op (Note
 *  [Composite ops in a capture]); records nothing when the thread does not capture. */
class EMBER_API Composite {
 public:
  /** Opens the region of op `op` called on `inputs` (null or undefined: omitted) with its
   *  attributes. */
  Composite(std::string_view op, std::initializer_list<const Tensor*> inputs,
            std::vector<int64_t> ints = {}, std::vector<double> floats = {});
  /** Closes the region: the op returned `outputs`. */
  void finish(std::initializer_list<const Tensor*> outputs);
  /** Closes the region; without finish() it stays incomplete (the op threw). */
  ~Composite();
  Composite(const Composite&) = delete;
  Composite& operator=(const Composite&) = delete;

 private:
  void* state_ = nullptr;
  int32_t index_ = -1;
};

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
