// Errors: EMBER_CHECK for bad user input (throws ember::Error), EMBER_ASSERT for our bugs.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "core/util/export.h"

namespace ember {

/** The one exception type Ember throws for bad input and failed operations. */
class EMBER_API Error : public std::runtime_error {
 public:
  /** Wraps a message formatted as `[op] what is wrong: observed values (hint)`. */
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
/** Throws the internal-error form of ember::Error. */
[[noreturn]] EMBER_API void assert_fail(const char* cond, const char* file, int line);
}  // namespace detail

}  // namespace ember

/** Throws ember::Error with a fmt-formatted message unless `cond` holds. */
#define EMBER_CHECK(cond, ...)                                   \
  do {                                                           \
    if (__builtin_expect(!(cond), 0)) {                          \
      throw ::ember::Error(::fmt::format(__VA_ARGS__));          \
    }                                                            \
  } while (0)

/** Reports an Ember bug (not a user error) unless `cond` holds. */
#define EMBER_ASSERT(cond)                                                     \
  do {                                                                         \
    if (__builtin_expect(!(cond), 0)) {                                        \
      ::ember::detail::assert_fail(#cond, __FILE__, __LINE__);                 \
    }                                                                          \
  } while (0)
