// StateDict: named tensors, the unit that modules and optimizers save and load.
#pragma once

#include <map>
#include <string>

#include "ember/tensor/tensor.h"

namespace ember {

/** Named tensors, ordered by name: a module's parameters and buffers, or an optimizer's state. */
using StateDict = std::map<std::string, Tensor>;

}  // namespace ember
