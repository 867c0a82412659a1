// ember::io: saving and loading named tensors (safetensors files; torch.save files are read).
#pragma once

#include "ember/io/safetensors.h"
#include "ember/io/torch.h"
