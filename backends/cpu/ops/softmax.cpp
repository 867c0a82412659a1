// CPU softmax kernels.
#include "backends/cpu/ops/ops.h"
