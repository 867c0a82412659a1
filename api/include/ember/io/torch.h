// PyTorch's torch.save files (.pt, .pth): the tensors of a state_dict or checkpoint, read without
// Python and without running any of the file's code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/io/safetensors.h"
#include "ember/state_dict.h"

namespace ember::io {

/** What a torch.save file holds, flattened to dotted names ("model.fc.weight", "epoch"). */
struct TorchFile {
  /** Every tensor, on the CPU, by dotted name. */
  StateDict tensors;
  /** Every other leaf (int, float, bool, str, None) as Python's str() prints it. */
  Metadata values;
};

/** Reads a torch.save file (the zip format of PyTorch 1.6 and later) with a restricted unpickler
 *  that only rebuilds tensors and plain containers (Note [A restricted unpickler]); anything else
 *  is an IoError naming it. */
TorchFile load_torch(const std::string& path);

/** One value of a torch.save file as the restricted reader rebuilt it: a tensor, a plain value
 *  or a container of values, nested as the file has it (torch.load's result). */
struct TorchValue {
  /** What the value is. */
  enum class Kind { None, Bool, Int, Float, Str, Tuple, List, Dict, Tensor };
  /** What the value is. */
  Kind kind = Kind::None;
  /** Bool. */
  bool b = false;
  /** Int. */
  int64_t i = 0;
  /** Float. */
  double f = 0;
  /** Str. */
  std::string s;
  /** Tensor (on the CPU). */
  Tensor tensor;
  /** Tuple and List: the elements; Dict: key, value, key, value, ... in the file's order. */
  std::vector<TorchValue> items;
};

/** Reads a torch.save file as load_torch does, keeping the saved object's structure instead of
 *  flattening it: what torch.load(path, weights_only=True) returns. A value the file refers to
 *  from several places is copied to each (a tensor stays one tensor); a container that holds
 *  itself, or nesting deeper than 64 levels, is an IoError. */
TorchValue load_torch_object(const std::string& path);

/** True if `head` (a file's first bytes) starts a torch.save file: a zip archive or the legacy
 *  pickle format of PyTorch before 1.6. */
bool is_torch_file(const void* head, size_t size);

}  // namespace ember::io
