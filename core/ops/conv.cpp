#include "core/ops/conv.h"

namespace ember {}  // namespace ember
