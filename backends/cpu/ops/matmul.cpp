// CPU matmul kernels.
#include "backends/cpu/ops/ops.h"
