// ember::io: saving and loading named tensors (safetensors files).
#pragma once

#include "ember/io/safetensors.h"
