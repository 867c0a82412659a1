// CPU index kernels.
#include "backends/cpu/ops/ops.h"
