#include "core/ops/pool.h"

namespace ember {}  // namespace ember
