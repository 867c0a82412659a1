// CPU reduce kernels.
#include "backends/cpu/ops/ops.h"
