// Ranges named by user code (profiler::record_function), and through ember/dispatch/profiling.h
// the one flag every op reads and the range of a public op. The Profiler itself is in
// <ember/profiler/profiler.h>.
#pragma once

#include <string_view>

#include "ember/dispatch/profiling.h"

namespace ember::profiler {

/** A range named by user code, recorded while a profiler runs (category "user_annotation"), as
 *  torch.profiler.record_function: `profiler::RecordFunction r("load batch");`. When no
 *  profiler runs it costs one flag check. */
class RecordFunction {
 public:
  /** Begins the range `name` if a profiler records. */
  explicit RecordFunction(std::string_view name)
      : event_(is_enabled() ? detail::begin_user_range(name) : nullptr) {}
  /** Ends it. */
  ~RecordFunction() {
    if (event_) detail::end_range(event_);
  }
  RecordFunction(const RecordFunction&) = delete;
  RecordFunction& operator=(const RecordFunction&) = delete;

 private:
  detail::PendingEvent* event_;
};

/** A RecordFunction for `name`, to be kept in a variable: `auto r = record_function("step");`. */
[[nodiscard]] inline RecordFunction record_function(std::string_view name) {
  return RecordFunction(name);
}

}  // namespace ember::profiler
