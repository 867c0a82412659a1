// How tensors print (Tensor::str): PyTorch's print options, process-wide.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "ember/util/export.h"

namespace ember {

/** The options of Tensor::str, as torch.set_printoptions sets them (its "default" profile). */
struct PrintOptions {
  /** Digits after the point of a float. */
  int64_t precision = 4;
  /** A tensor of more elements than this is summarised. */
  int64_t threshold = 1000;
  /** The entries a summarised dim shows at each end. */
  int64_t edgeitems = 3;
  /** The characters of a line before it wraps. */
  int64_t linewidth = 80;
  /** Floats in scientific notation (true) or not (false); unset: chosen per tensor. */
  std::optional<bool> sci_mode;
};

/** The options every Tensor::str call uses now. */
EMBER_API PrintOptions print_options();
/** Sets them for the whole process; a negative number, or a line width under 1, is a ValueError. */
EMBER_API void set_print_options(const PrintOptions& options);
/** PyTorch's named profiles: "default", "short" (precision 2, 2 edge items) and "full" (never
 *  summarised); any other name is a ValueError. */
EMBER_API PrintOptions print_profile(std::string_view name);

}  // namespace ember
