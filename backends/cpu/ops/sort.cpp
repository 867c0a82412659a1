// CPU sort kernels.
#include "backends/cpu/ops/ops.h"
