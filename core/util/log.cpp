#include "core/util/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ember {
namespace {

LogLevel threshold() {
  static const LogLevel level = [] {
    const char* v = std::getenv("EMBER_LOG_LEVEL");
    if (!v) return LogLevel::Warning;
    if (!std::strcmp(v, "debug")) return LogLevel::Debug;
    if (!std::strcmp(v, "info")) return LogLevel::Info;
    if (!std::strcmp(v, "error")) return LogLevel::Error;
    return LogLevel::Warning;
  }();
  return level;
}

}  // namespace

bool log_enabled(LogLevel level) { return level >= threshold(); }

void log_line(LogLevel level, const std::string& message) {
  static const char* names[] = {"debug", "info", "warning", "error"};
  std::fprintf(stderr, "ember %s: %s\n", names[static_cast<int>(level)], message.c_str());
}

}  // namespace ember
