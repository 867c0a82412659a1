#include "backends/cpu/ops/ops.h"
