// nn::Module: named parameters, buffers and submodules.
#pragma once

#include "ember/state_dict.h"

namespace ember::nn {}  // namespace ember::nn
