// A test seam of the losses (core internal; tests include it by its path).
#pragma once

#include <optional>

#include "ember/util/export.h"

namespace ember::detail {

/** Forces nll_loss and cross_entropy to read class targets on the host (true) or to keep them on
 * the device (false) whatever the device; nullopt restores the default, by the device (Note
 * [Class targets stay on the device] in loss.cpp). */
EMBER_API void set_class_targets_on_host(std::optional<bool> force);

}  // namespace ember::detail
