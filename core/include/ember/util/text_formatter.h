// fmt's core API for the public headers, and the one base of Ember's formatters (TextFormatter).
#pragma once

#include <string_view>

#include <fmt/core.h>

#include "ember/util/export.h"

// Note [fmt's core in the public headers]
// Every public header reaches fmt through this one, and this one includes <fmt/core.h>, not
// <fmt/format.h>: format.h takes about three times as long to parse, and every translation unit
// that includes Ember (a user's included) would pay it. core.h has what the headers use:
// fmt::format and fmt::print (whose work is done inside libfmt) and the formatter of strings.
// What core.h only declares is fmt's formatting of a string with a spec (width, fill,
// alignment); TextFormatter::format_text holds the one instance of it, compiled in the core, so
// an Ember type formats with core.h alone and honours the same specs as a string ("{:>12}").
// A file that uses the rest of fmt (fmt::join, memory buffers) includes <fmt/format.h> itself.

namespace ember {

/** The base of the formatters of Ember's types: formats a value through its text, with a
 *  string's format specs (Note [fmt's core in the public headers]). */
struct TextFormatter : fmt::formatter<fmt::string_view> {
  /** Writes `text` to ctx's output, padded and aligned as the parsed specs say. */
  EMBER_API fmt::format_context::iterator format_text(std::string_view text,
                                                      fmt::format_context& ctx) const;
};

}  // namespace ember
