#include "core/ops/nn.h"

namespace ember {}  // namespace ember
