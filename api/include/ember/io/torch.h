// PyTorch's torch.save files (.pt, .pth): the tensors of a state_dict or checkpoint, read without
// Python and without running any of the file's code.
#pragma once

#include <string>

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

/** True if `head` (a file's first bytes) starts a torch.save file: a zip archive or the legacy
 *  pickle format of PyTorch before 1.6. */
bool is_torch_file(const void* head, size_t size);

}  // namespace ember::io
