// Checks on text read from files (libember internal).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ember::io::detail {

/** The offset of the first byte of `s` that is not part of valid UTF-8 (no overlong forms, no
 * surrogates, nothing above U+10FFFF), or npos. */
size_t invalid_utf8_at(std::string_view s);

/** `s` with every byte that is not part of valid UTF-8 written as \xNN, for messages that quote
 *  what a parser read (nlohmann's errors quote the last byte read, even one inside a character). */
std::string printable_utf8(std::string_view s);

}  // namespace ember::io::detail
