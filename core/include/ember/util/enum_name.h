// One lookup for the functions that name an enum's values ("loaded", "cpu_op", "Value", ...).
#pragma once

#include <cstddef>
#include <type_traits>

namespace ember {

/** names[value] for an enum whose enumerators run 0, 1, ..., kLast in the order of `names` (one
 *  name per enumerator, checked at compile time); `fallback` for a value outside them. */
template <auto kLast, typename E, std::size_t N>
constexpr const char* enum_name(E value, const char* const (&names)[N], const char* fallback) {
  static_assert(std::is_same_v<decltype(kLast), E>, "kLast must be the enum's last enumerator");
  static_assert(N == static_cast<std::size_t>(kLast) + 1, "one name per enumerator");
  const auto i = static_cast<std::size_t>(static_cast<std::underlying_type_t<E>>(value));
  return i < N ? names[i] : fallback;
}

}  // namespace ember
