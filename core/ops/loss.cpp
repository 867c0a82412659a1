#include "core/ops/loss.h"

namespace ember {}  // namespace ember
