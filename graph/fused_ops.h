// The graph ops only the optimizer writes: single nodes for what a model spells as several.
#pragma once

#include <vector>

#include <ember/graph/ops.h>

namespace ember::graph::detail {

/** The schemas of fused_conv, fused_linear, attention and layout (added to the op table by
 *  ops.cpp). */
std::vector<OpSchema> fused_op_schemas();

}  // namespace ember::graph::detail
