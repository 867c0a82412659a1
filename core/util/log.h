// Logging to stderr, filtered by EMBER_LOG_LEVEL (debug, info, warning, error; default warning).
#pragma once

#include <string>

#include <fmt/format.h>

#include "ember/util/export.h"

namespace ember {

/** Severity of a log line. */
enum class LogLevel { Debug = 0, Info = 1, Warning = 2, Error = 3 };

/** True if lines of `level` are printed. */
EMBER_API bool log_enabled(LogLevel level);
/** Prints one line "ember <level>: <message>" if the level is enabled. */
EMBER_API void log_line(LogLevel level, const std::string& message);

/** Formats and logs one line. */
template <typename... Args>
void log_message(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (log_enabled(level)) log_line(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace ember
