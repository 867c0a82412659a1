// What a profile becomes once stopped: per-name totals and the Chrome trace (core/profiler/).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ember/profiler/profiler.h"

namespace ember::profiler::detail {

/** Per-name (and input shapes) totals of `events`; `memory`: the profile counted bytes. */
KeyAverages make_key_averages(const std::vector<EventRecord>& events, bool group_by_input_shapes,
                              bool memory);

/** `events` in the Chrome Trace Event Format: complete events ("ph": "X") with times in
 *  microseconds, device intervals on rows of their own, flows from kernel to device interval. */
std::string make_chrome_trace(const std::vector<EventRecord>& events);

}  // namespace ember::profiler::detail
