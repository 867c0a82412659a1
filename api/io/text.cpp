#include "api/io/text.h"

#include <cstdint>
#include <string>

namespace ember::io::detail {

size_t invalid_utf8_at(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    uint32_t cp = 0, min = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      len = 2, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return i;
    }
    if (i + len > s.size()) return i;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += len;
  }
  return std::string::npos;
}

std::string printable_utf8(std::string_view s) {
  std::string out;
  for (size_t bad = invalid_utf8_at(s); bad != std::string::npos; bad = invalid_utf8_at(s)) {
    out.append(s.substr(0, bad));
    static constexpr char kHex[] = "0123456789abcdef";
    const auto c = static_cast<unsigned char>(s[bad]);
    out += {'\\', 'x', kHex[c >> 4], kHex[c & 0xf]};
    s.remove_prefix(bad + 1);
  }
  out.append(s);
  return out;
}

}  // namespace ember::io::detail
