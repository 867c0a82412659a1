#include "core/ops/norm.h"

namespace ember {}  // namespace ember
